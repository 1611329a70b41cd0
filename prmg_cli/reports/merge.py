"""``prmg report RESULTS.jsonl...``: one report from one or more results files (shards run on several
hosts, or a run finished earlier), in any format of ``outputs.OUTPUTS``.

- **Reading.** Each file is read by ``store.read`` (the one reader: bounded, every record type-checked, torn
  lines left out). Within one file the last record of a case on each chip wins: results files are appended to, so
  it is the newest (``chips.Chips.current``: per-chip jobs appending to one file are each chip's records).
- **What should be there.** Every run record names the cases its run was asked to run, before sharding,
  and its shard ``I/N``. So a case that some run selected and no file reports is ``not_run``: either its
  shard is in no file given (``not run: shard I/N is in no results file given``) or its run recorded no
  result for it (killed before it got there). Such a report is never green; nor is one merging a file that holds
  no run record and no result with files that do (``unstarted``: a run that stopped before it began).
- **Order.** With ``--cases PATH``: the cases' order, as ``prmg run`` reports them; a case that no file
  holds is ``not_run`` (``not run: no results file holds it``), and records of cases that are not among
  them are left out when ok (one line on stderr names them), and reported after them when not (failed, error,
  xpassed, not_run: a failure the files hold is never hidden by a narrower --cases); a case whose
  ``fingerprint`` differs from its record's (edited since it ran) is ``not_run`` too, so a stale verdict never
  stands for today's case. Without
  ``--cases``: the order the runs selected them in, then any other record in order of first appearance.
- **Duplicates.** A case held by several files is named on stderr, one line per case, with each file's
  status. ``--duplicates worst`` (the default) reports the worst verdict (``results.StatusInfo.severity``),
  a record that says something of the kernel beating one that does not (``StatusInfo.evidence``: skipped, not
  run), so that a failure is never hidden by the order of the arguments; ties go to the later file.
  ``--duplicates last`` reports the record of the last file given (a re-run that supersedes a shard). Records of
  a case from runs on several chips are no duplicates: one record holds each chip's status (``chips.combine``),
  and ``--chips`` names the chips each case must have run on (a chip no file holds it of: ``not_run`` there), on
  each host that ran it, or on each host it names (``--chips a:0-7,b:0-7``).
- **Provenance.** The report's header carries every run's provenance (file, shard, host, runner, SoC, toolkit,
  operator library, the fingerprint of the operator's kernel and tiling files, start), the faults injected into
  any of them, the emulator notice when any record came from the emulator, and names each setting that differs
  between the runs (``run_record.recorded_settings``) with the files.
- **Like with like.** One report is one verdict only when the runs it merges (those whose records it reports or
  weighed for them: ``contributing``) were judged under the same settings: a setting that differs between them
  (another standard, ``--strict``, runner, toolkit, SoC, driver, operator library or kernel files, faults...) is named
  on stderr with the files and makes the exit code 1 (the header says ``MIXED SETTINGS``, the JSON summary's
  ``exit_code`` 1), unless ``--allow-mixed SETTING`` says it is intended. Where each run ran may differ (``WHERE``:
  the host, the toolkit's folder and so the operator library's, compared by its path in its toolkit, the chips:
  ``--each-device`` jobs on chips 0-3 and 4-7 are one record of 8 chips, and a run on one chip puts every case on
  it as ``--each-device`` does), and the stamps of libraries and kernel files are compared as two hosts installing
  the same package have them (``_like``: size and mtime).
- **Strict** (``--strict``, a gate's): a record's warning fails its case as ``prmg run --strict`` fails it
  (``strictly``), and each warning of the merge about its runs (``shard_warnings``: a run on the host emulator that
  did not name it among them) fails the report: ``STRICT`` in
  the header, ``warned`` in the JSON summary, an ``error`` test in JUnit. A difference ``--allow-mixed`` names is
  intended, no warning; so is ``--strict`` differing between the runs (each record is held as ``--strict`` holds it).
- **Exit codes** as ``prmg run``: 0 when every reported case is ok, 1 otherwise (``not_run`` included, runs
  judged under settings that differ, and under ``--strict`` a warning), 2 for unreadable files and usage errors, 5
  when there is nothing to report or every case was skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Sequence

from . import outputs, store
from .. import __version__
from ..device.provenance import portable_stamp
from ..errors import PrmgError
from ..judging.standards import standard_of
from ..results import (STATUSES, CaseResult, ExitCode, RunInfo, chip_ids, chip_ranges, exit_code, plural,
                       report_exit_code, visible)
from ..writes import Output, check_outputs, same_file
from .outputs.labels import EMULATOR_NOTE, NO_KERNEL_FILES, first_names, host_text
from .chips import Chips, chip_order, chips_of, chips_text, combine, missing_lines, prefixed, unprefixed
from .outputs.screen import say, width, wrap

DUPLICATE_RULES = ("worst", "last")
DUPLICATE_RULE_SAYS = {"worst": "the worst verdict of each", "last": "each one's record in the last file"}
DUPLICATES_NAMED = 3            # more cases in several files than this: one line per set of files (unless -v)
MISSING = "not run: no results file holds it"
CHANGED = "not run: the case changed since its record was made (its fingerprint differs)"


@dataclass
class Merged:
    """The merged results in report order, and what the merge has to say about them."""

    results: list = field(default_factory=list)
    duplicates: list = field(default_factory=list)    # one line per case held by several files
    repeated: dict = field(default_factory=dict)      # the files holding a case (in order) -> [(case, alike)]
    left_out: list = field(default_factory=list)      # names of records not among --cases (ok ones: left out)
    outside: list = field(default_factory=list)       # those not ok (failed, error...): reported after --cases's
    missing: int = 0                                  # --cases cases no file holds
    sources: set = field(default_factory=set)         # the runs of the records weighed (``_weighed``)
    chipped: int = 0                                  # cases holding records of several chips (``chips.combine``)
    chips_missing: dict = field(default_factory=dict)  # (chip, why) -> how many cases no record of it holds
    chips: list = field(default_factory=list)         # the chips the records name (``Chips.label``), in order
    narrower: list = field(default_factory=list)      # a warning per chip or host whose runs selected fewer cases,
                                                      # per host --chips HOST:0-7 names none of, per host label
                                                      # of several machines (``Chips``)
    changed: int = 0                                  # --cases cases changed since their record was made
    unreported: int = 0                               # cases a run selected that no file reports


def _rank(record: CaseResult) -> tuple[bool, int]:
    """How bad a record is among a case's records: one with evidence of what the kernel did first, then by its
    severity."""
    info = STATUSES[record.status]
    return info.evidence > 0, info.severity


def _pick(held: list[tuple[str, CaseResult]], rule: str) -> tuple[str, CaseResult]:
    """The (file, record) to report among one case's records from several files."""
    if rule == "last":
        return held[-1]
    return max(enumerate(held), key=lambda item: (_rank(item[1][1]), item[0]))[1]


def _expected(stores: Sequence[store.Stored]) -> dict[str, str]:
    """The cases the runs of ``stores`` selected, in selection order, each with why it would be missing: its
    shard is in no file given, or the run of its shard recorded no result for it."""
    from ..device.execute import parse_shard, shard_of

    def stopped(path: str, run: store.RunRecord) -> str:
        return (f"not run: the run of {visible(path)} ({run.shard or 'every case'}, started "
                f"{run.info.get('started') or '?'}) selected it but recorded no result (stopped or killed before it?)")

    runs = [(stored.path, run) for stored in stores for run in stored.runs]
    by_shard = {parse_shard(run.shard): (path, run) for path, run in runs if run.shard}
    expected: dict[str, str] = {}
    for path, run in runs:
        count = parse_shard(run.shard)[1] if run.shard else 0
        whys: dict[int, str] = {}           # one text per shard, shared by its cases (200,000 a run)
        for name in run.selection:
            if name in expected:
                continue
            index = shard_of(run.together.get(name, name), count) if count else 0
            if index not in whys:
                owner = by_shard.get((index, count)) if count else (path, run)
                whys[index] = (stopped(*owner) if owner
                               else f"not run: shard {index}/{count} is in no results file given")
            expected[name] = whys[index]
    return expected


def merge(stores: Sequence[store.Stored], cases: Sequence | None = None, rule: str = "worst",
          chips: Sequence[int] = (), strict: bool = False) -> Merged:
    """Merge the records of ``stores`` (in argument order), each held as ``--strict`` holds it when ``strict``
    (``strictly``): per file the last record of a case on each chip, across
    files by ``rule`` (a case's records of several chips: one record of every chip, ``chips.combine``, each chip
    expected by ``--chips`` ``chips`` that holds none of them ``not_run`` there); in the order of ``cases`` when given
    (those no file holds become ``not_run``), else in the order the runs selected them, the cases they selected and no
    file reports ``not_run`` (module docstring)."""
    if rule not in DUPLICATE_RULES:
        raise PrmgError(f"--duplicates must be one of {', '.join(DUPLICATE_RULES)}, got {rule!r}")
    labels = Chips.of(stores, chips)
    held: dict[str, list[tuple[str, CaseResult]]] = {}
    for stored in stores:
        for name, records in labels.current(stored).items():
            held.setdefault(name, []).extend((stored.path, strictly(record) if strict else record)
                                             for record in records)
    merged = Merged(chips=sorted({chip for entries in held.values() for _, record in entries
                                  for chip in chip_ids(record)}, key=chip_order),
                    narrower=labels.narrower() + labels.narrower_hosts(stores) + labels.unnamed() + labels.clashes())
    picked, weighed, asked = {}, {}, chips_text(labels.expected)
    for name, entries in held.items():
        together = combine(entries, lambda items: _pick(items, rule), rule, labels.expected_of(name, entries),
                           asked)
        if together:
            picked[name] = together.record
            weighed[name] = {record.run_id for _, record in together.weighed}
            merged.chipped += 1
            for missing in together.missing.items():
                merged.chips_missing[missing] = merged.chips_missing.get(missing, 0) + 1
            entries = entries if together.repeated else []     # several records of one chip: duplicates
            source, record = "its records of each chip", together.record
        else:
            source, record = _pick(entries, rule)
            picked[name] = record
            weighed[name] = {r.run_id for _, r in (entries if rule == "worst" else [(source, record)])}
        if len(entries) > 1:
            listing = ", ".join(f"{visible(path)} ({entry.status})" for path, entry in entries)
            merged.repeated.setdefault(tuple(path for path, _ in entries), []).append(
                (name, len({entry.status for _, entry in entries}) == 1))
            merged.duplicates.append(f"duplicate: case '{visible(name)}' is in {listing}; reporting "
                                     f"{record.status} from {visible(source)} (--duplicates {rule})")
    if cases is None:
        expected = _expected(stores)
        for name, why in expected.items():
            if name not in picked:
                merged.unreported += 1
                picked[name] = CaseResult(name=name, status="not_run", message=why)
        order = {name: index for index, name in enumerate(expected)}
        merged.results = sorted(picked.values(), key=lambda record: order.get(record.name, len(order)))
        merged.results += unstarted(stores)
        return _weighed(merged, picked, weighed)
    from ..cases.loader import fingerprint_or_empty
    from ..device.execute import case_result

    names = set()
    for case in cases:
        names.add(case.name)
        record = picked.get(case.name)
        if record is None:
            merged.missing += 1
            record = case_result(case, "not_run", message=MISSING, standard=standard_of(case.standard))
        elif record.fingerprint and record.fingerprint != fingerprint_or_empty(case):
            merged.changed += 1
            record = case_result(case, "not_run", message=CHANGED, standard=standard_of(case.standard))
        merged.results.append(record)
    outside = [name for name in picked if name not in names]         # never a failure of the files left out
    merged.left_out = [name for name in outside if picked[name].info.ok]
    merged.outside = [name for name in outside if not picked[name].info.ok]
    merged.results += [picked[name] for name in merged.outside]
    merged.results += unstarted(stores)
    return _weighed(merged, picked, weighed)


def strictly(record: CaseResult) -> CaseResult:
    """``record`` as ``prmg run --strict`` would have reported it (``execute.strict_status``: a pass or known defect
    with a warning, a device memory leak's say, fails); of several chips, each chip as its own warnings hold it
    (``chips.chip_warnings``: a leak on chip 1 fails chip 1 alone), the record's status then the worst of them."""
    from ..device.execute import RunSettings, strict_status

    settings = RunSettings(toolkit=None, strict=True)
    if not record.device_statuses:
        return strict_status(record, settings)
    views = {chip: strict_status(view, settings) for chip, view in chips_of(record).items()}
    statuses = {chip: view.status for chip, view in views.items()}
    if statuses == record.device_statuses:
        return record
    worst = max(statuses.values(), key=lambda status: STATUSES[status].severity)
    message = unprefixed(record) if worst == record.status else \
        next(view.message for view in views.values() if view.status == worst)
    return replace(record, status=worst, device=",".join(chip for chip, status in statuses.items() if status == worst),
                   device_statuses=statuses, message=prefixed(statuses, message))


def shard_warnings(stores: Sequence[store.Stored], merged: Merged, strict: bool = False) -> list[str]:
    """The warnings of a merge about the runs it merges, each a line that ``prmg report --strict`` fails it on: the
    chips whose runs selected fewer cases than their host's other chips (``Chips.narrower``) or hosts than the
    others (``Chips.narrower_hosts``), the hosts that ran
    cases and ``--chips HOST:0-7`` names none of (``Chips.unnamed``), the host labels of several machines
    (``Chips.clashes``), each run the
    report weighs (``contributing``) that found a library preloaded ahead of the toolkit taking its calls, which
    ``prmg run --strict`` refuses (``linkage.interposer_warning``), and under ``strict`` (a gate's report) the runs
    that ran on the host emulator without naming it (``unasked_emulator``; without ``--strict`` a report of them is
    one of the emulator as its header says, the report of a user without a toolkit whose every run said so)."""
    lines = [line.removeprefix("warning: ") for line in merged.narrower]
    runs = contributing(stores, merged.results, merged.sources)
    for path, run in runs:
        if run.info.get("preloaded"):
            lines.append(f"the run of {visible(path)} ({run.shard or 'every case'}, started "
                         f"{visible(run.info.get('started') or '?')}) ran with a library preloaded ahead of the "
                         f"toolkit taking its calls: {'; '.join(map(visible, run.info['preloaded']))} (prmg run "
                         f"--strict refuses it)")
    return lines + unasked_emulator(runs) * strict


def unasked_emulator(runs: Sequence[tuple[str, store.RunRecord]]) -> list[str]:
    """One line naming the files of ``runs`` (file, run record) that ran on the host emulator, not an NPU, and did not
    ask for it by name (``runners.emulator_runners``: ``--runner emulator``): ``--runner auto`` (or a graph-mode
    runner) found no toolkit where it ran, and fell back to it with one stderr line in that job's log. A gate's runs
    name their runner (``--runner aclnn`` never falls back); a run of ``--runner emulator`` says the emulator is meant
    (the header names it), so only the others are a warning, which ``prmg report --strict`` fails on."""
    from ..device.runners import emulator_runners

    unasked: dict[str, list[str]] = {}
    for path, run in runs:
        asked = str(run.info.get("runner_asked") or "")
        if run.info.get("runner") == "emulator" and asked not in emulator_runners():
            unasked.setdefault(path, []).append(f"--runner {visible(asked)} picked it: no CANN toolkit found"
                                                if asked else "their run record names no --runner: an older prmg's")
    if not unasked:
        return []
    how = "; ".join(dict.fromkeys(asked for each in unasked.values() for asked in each))
    return [f"the runs of {plural(len(unasked), 'results file')} ({first_names(list(unasked))}) ran on the host "
            f"emulator, not an NPU, without naming it ({how}); a gate names --runner aclnn, and --runner emulator "
            f"says the emulator is meant"]


UNSTARTED = "prmg-run"          # the name of the record that stands for a run that never began (``unstarted``)


def unstarted(stores: Sequence[store.Stored]) -> list[CaseResult]:
    """A ``not_run`` record for each of ``stores`` that holds no run record and no result when another holds one: the
    file of a run that stopped before it began (a per-chip job whose chip could not be opened leaves it empty), merged
    with the others' as nothing, exit 0. A merge of such files alone has nothing to report (exit 5)."""
    if not any(stored.runs or stored.results for stored in stores):
        return []
    return [CaseResult(name=f"{UNSTARTED} {visible(stored.path)}", status="not_run", message=(
        f"not run: {visible(stored.path)} holds no run record and no result: the run writing it stopped before it "
        f"began (its device or toolkit could not be opened? its job's log says)"))
        for stored in stores if not stored.runs and not stored.results]


def _weighed(merged: Merged, picked: dict, weighed: dict) -> Merged:
    """``merged`` with its ``sources``: the run of each record reported, and of each record weighed for one (every
    record of its case under ``--duplicates worst``, the picked one under ``last``, of each chip)."""
    merged.sources = {record.run_id for record in merged.results}
    for record in merged.results:
        if picked.get(record.name) is record:
            merged.sources |= weighed.get(record.name, set())
    return merged


def recorded_runners(results: Sequence[CaseResult]) -> list[str]:
    """The runners the records name (``aclnn``, ``emulator``; records of older prmg versions name none)."""
    return sorted({str(result.runner or "") for result in results} - {""})


def setting_text(value) -> str:
    """A recorded setting as a case file would write it (YAML flow style): ``none``, ``allclose``, ``true``,
    ``[sign]``, ``{faults: [sign], shape: ''}``."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key}: {setting_text(item)}" for key, item in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(setting_text(item) for item in value) + "]"
    return str(value) if value != "" else "''"


# The setting ``mixed_settings`` names when records of no run record (``prmg.result/2``, before run records: judged
# under settings nothing states) are merged with records of runs that state theirs.
UNRECORDED = "settings"
# Settings the runs of one report may differ in and still be alike: where each ran (shards run on several hosts), the
# toolkit's folder there, and the chips of a run on each of them (``--each-device``'s ``--devices`` and
# ``ASCEND_RT_VISIBLE_DEVICES``): its records name their chips, which the merge holds apart (``chips``).
WHERE = ("host", "location", "chips", "visible_devices")
TOOLKIT_ROOT = "TOOLKIT_ROOT"     # the run's toolkit folder (``location``), wherever it is installed
EACH_DEVICE = "each_device"     # a run of every case on each of its chips: one of one chip is, with or without it
STRICT = "strict"               # ``--strict``, which ``prmg report --strict`` applies to every record (``strictly``)


def alike_keys(strict: bool = False) -> tuple[str, ...]:
    """The settings the runs of one report may differ in and stay alike: ``WHERE``, and under ``prmg report
    --strict`` (``strict``) ``--strict`` itself, each record being held as ``prmg run --strict`` holds it."""
    return WHERE + (STRICT,) * strict


def _like(key: str, value):
    """``value`` of the recorded setting ``key`` as two hosts that installed the same package have it: the stamps of
    the libraries (``provenance.library_stamp``) as size and mtime, those of the operator's kernel and tiling files
    (``provenance.opp_stamp``) as their count and portable fingerprint, any other setting as it is."""
    if key == "libraries" and isinstance(value, dict):
        return {role: portable_stamp(stamp) for role, stamp in value.items()}
    if key == "opp" and isinstance(value, dict):
        return {"files": value.get("files"), "portable": value.get("portable")}
    return value


def contributing(stores: Sequence[store.Stored], results: Sequence[CaseResult],
                 sources: set | None = None) -> list[tuple[str, store.RunRecord]]:
    """(file, run record) of each run whose records ``results`` report or the merge weighed for them (``sources``, the
    run ids of ``Merged.sources``: under ``--duplicates worst`` every file's record of a case, the verdicts that tie
    with the one reported included) (by ``run_id``; every run of a file whose reported records name none, as older
    prmg wrote them): a run every record of which a later one replaced (``--duplicates last``) says nothing of the
    report."""
    reported = {result.run_id for result in results} if sources is None else sources
    return [(stored.path, run) for stored in stores for run in stored.runs
            if run.run_id in reported or ("" in reported and any(not r.run_id for r in stored.results))]


def _setting(run: store.RunRecord, key: str):
    """``run``'s setting ``key`` as the runs merged are compared by it: a run on one chip as one of ``--each-device``
    (``EACH_DEVICE``); the operator library as its path in its toolkit (``TOOLKIT_ROOT/lib64/...``), one build
    installed in ``/usr/local/Ascend`` on one host and ``/opt/Ascend`` on another being one (its stamps, ``libraries``,
    and ``toolkit_version`` tell builds apart); a library outside its toolkit as its whole path."""
    if key == EACH_DEVICE and len(run.info.get("devices") or ()) == 1:
        return True
    value, root = run.settings.get(key), str(run.settings.get("location") or "").rstrip("/")
    if key == "op_library" and root and isinstance(value, str) and value.startswith(root + "/"):
        return TOOLKIT_ROOT + value[len(root):]
    return value


def differing_settings(runs: Sequence[tuple[str, store.RunRecord]]) -> list[tuple[str, str]]:
    """(setting, line) for each setting (``run_record.recorded_settings``) whose value (``_like``) differs between the
    ``runs`` (file, run record), each value as ``setting_text`` writes it: ``standard: a.jsonl: none; b.jsonl:
    allclose`` (each as ``_setting`` reads it)."""
    keys = sorted({key for _, run in runs for key in run.settings})
    lines = []
    for key in keys:
        values = {}
        for path, run in runs:
            values.setdefault(setting_text(_like(key, _setting(run, key))), []).append(visible(path))
        if len(values) > 1:
            lines.append((key, f"{key}: " + "; ".join(f"{', '.join(dict.fromkeys(paths))}: {visible(value)}"
                                                       for value, paths in values.items())))
    return lines


def mixed_settings(stores: Sequence[store.Stored], results: Sequence[CaseResult], allowed: Sequence[str] = (),
                   sources: set | None = None, strict: bool = False
                   ) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(the settings that differ between the runs ``results`` come from and make the merge unlike, those that differ
    and are ``allowed`` or may: ``alike_keys``, ``--strict`` too under ``prmg report --strict``), each (setting,
    line) as ``differing_settings`` gives it; for files of a prmg that wrote no run records, the runners their
    records name (``runner``); records of no run record merged with records of runs (``UNRECORDED``: what
    the former were judged under, no record states)."""
    runs = contributing(stores, results, sources)
    lines = differing_settings(runs)
    runners = recorded_runners(results)
    if not any(stored.runs for stored in stores) and len(runners) > 1:
        lines.append(("runner", f"runner: records from {' and '.join(map(visible, runners))}"))
    unrecorded = [visible(stored.path) for stored in stores if any(not record.run_id for record in stored.results)]
    if runs and unrecorded:
        recorded = dict.fromkeys(visible(path) for path, _ in runs)
        lines.append((UNRECORDED, f"{UNRECORDED}: {', '.join(unrecorded)}: not recorded (records of no run record: "
                                  f"an older prmg's); {', '.join(recorded)}: recorded"))
    mixed = [(key, line) for key, line in lines if key not in alike_keys(strict) and key not in allowed]
    return mixed, [(key, line) for key, line in lines if (key, line) not in mixed]


def run_info(stores: Sequence[store.Stored], results: Sequence[CaseResult], allowed: Sequence[str] = (),
             sources: set | None = None, strict: bool = False) -> RunInfo:
    """The description the reports' header gets: every run's provenance as its run record states it (the
    faults injected into any run, the emulator as soon as one run or record came from it, each run's shard,
    host, runner, SoC, toolkit, operator library, kernel files and start), each setting that differs between the
    runs, and those that make them unlike (``mixed``, unless ``allowed``, or moot under ``strict``:
    ``mixed_settings``): the runs' own descriptions joined (``RunInfo.joined``), with the runner, the target's modes,
    the standard, prmg's version and the notes said here."""
    infos = [(stored.path, run, run.run_info) for stored in stores for run in stored.runs]
    joined = RunInfo.joined([info for _, _, info in infos])
    runners = sorted(set(recorded_runners(results)) | {info.runner for _, _, info in infos})
    runner = "emulator" if "emulator" in runners else (runners[0] if runners else "unrecorded")
    paths = [stored.path for stored in stores]
    location = joined.location or ", ".join(paths)
    if len(runners) > 1:
        location += f" (records from {' and '.join(runners)})"
    notes = [("run", f"{visible(path)}: {run.shard or 'every case'}, run {run.run_id[:8]}, started "
                     f"{info.started or '?'} on {host_text(info) or '?'}, "
                     f"{_devices(info.devices, info.visible_devices)}, "
                     f"runner {info.runner}, standard {info.standard or '?'}{' (--strict)' if info.strict else ''}, "
                     f"SoC {info.soc or '?'}, toolkit {info.toolkit_version or '?'}, operator library "
                     f"{info.op_library or '?'}, kernel files "
                     f"{NO_KERNEL_FILES if info.opp and not info.opp_files else info.opp_portable or '?'}"
                     + (f", faults {', '.join(info.faults)}" if info.faults else ""))
             for path, run, info in infos]
    mixed, alike = mixed_settings(stores, results, allowed, sources, strict)
    notes += [("settings differ", line) for _, line in sorted(mixed + alike)]
    return replace(joined, runner=runner, location=location, supported_modes=tuple(sorted(joined.supported_modes)),
                   standard=joined.standard or "per case (as recorded)", version=__version__,
                   notes=tuple(notes), mixed=tuple(line for _, line in mixed))


def _devices(devices, shown: str = "") -> str:
    """A run's device ids, ``device 0`` or ``devices 0,1`` (``devices ?`` when its record names none), with the chips
    ``ASCEND_RT_VISIBLE_DEVICES`` showed it (``shown``) when it was set."""
    listed = visible(",".join(map(str, devices)))
    named = f"device {listed}" if len(devices) == 1 else f"devices {listed or '?'}"
    return f"{named} of ASCEND_RT_VISIBLE_DEVICES={visible(shown)}" if shown else named


def _table_header(stores: Sequence[store.Stored], results: Sequence[CaseResult]) -> str:
    """The first line of the table: which files were merged; for results files of a prmg that wrote no run
    records, what the records say ran them; wrapped to the screen's width (``screen.wrap``) as the header under it."""
    listing = ", ".join(f"{visible(stored.path)} ({plural(len(stored.latest()), 'result')})" for stored in stores)
    lines = [f"merged: {plural(len(stores), 'results file')}: {listing}"]
    if not any(stored.runs for stored in stores):
        runners = recorded_runners(results)
        if not runners:
            lines.append("runner: not recorded in these results files (each run's own report names its toolkit "
                         "and devices)")
        else:
            runner = " and ".join(visible(name) for name in runners) + " (as the records say)"
            if "emulator" in runners:
                runner += f"; {EMULATOR_NOTE}" if runners == ["emulator"] else \
                    "; some results come from the host emulator"
            lines.append(f"runner: {runner}")
    columns = width()
    return "\n".join(part for line in lines for part in wrap(line, columns))


def duplicate_lines(merged: Merged, rule: str, verbose: bool = False) -> list[str]:
    """What ``prmg report`` says of the cases in several files: a line per case (``merged.duplicates``) when
    ``verbose`` or at most ``DUPLICATES_NAMED`` are, else one per set of files, naming the first cases whose
    verdicts differ there (a run and its rerun merged: one line, not one of 160 columns per case)."""
    if verbose or len(merged.duplicates) <= DUPLICATES_NAMED:
        return merged.duplicates
    lines = []
    for paths, cases in merged.repeated.items():
        differ = [name for name, alike in cases if not alike]
        named = (f"; {len(differ)} of them with verdicts that differ ({first_names(differ, DUPLICATES_NAMED)})"
                 if differ else "; every one with the same verdict in each")
        lines.append(f"duplicate: {plural(len(cases), 'case')} in each of {', '.join(map(visible, paths))}; "
                     f"reporting {DUPLICATE_RULE_SAYS[rule]} (--duplicates {rule}){named} (-v names each)")
    return lines


def report_files(paths: Sequence[str], case_paths: Sequence[str] = (), reports: Sequence[str] = (),
                 output: str | None = None, rule: str = "worst", verbose: bool = False,
                 wide: bool = False, allow_mixed: Sequence[str] = (), chips: Sequence[int] = (),
                 strict: bool = False) -> int:
    """``prmg report``: write every report asked for and return the exit code (module docstring); ``allow_mixed``
    the settings (``--allow-mixed``) that may differ between the runs merged, ``chips`` those each case must have
    run on (``--chips``), ``strict`` (``--strict``) whether each warning of a record or of the merge fails it."""
    targets = outputs.parse_targets(list(reports), output)
    if rule not in DUPLICATE_RULES:
        raise PrmgError(f"--duplicates must be one of {', '.join(DUPLICATE_RULES)}, got {rule!r}")
    cases, case_folder = None, None
    inputs = {str(path): "a results file to merge" for path in paths}
    if case_paths:
        from ..cases.loader import input_files, load_cases, read_as_case

        cases = load_cases([str(path) for path in case_paths])
        inputs.update(input_files(case_paths, cases))
        case_folder = read_as_case(case_paths)
    check_outputs([Output(target.path) for target in targets if target.path], inputs, case_folder)
    stores, seen = [], []
    for path in map(str, paths):
        if any(same_file(path, other) for other in seen):
            say(f"{visible(path)} is given twice: read once")
            continue
        seen.append(path)
        stores.append(store.read(path))
    _check_allowed(allow_mixed, stores)
    merged = merge(stores, cases, rule, chips, strict)
    for line in duplicate_lines(merged, rule, verbose):
        say(line)
    statuses = {result.name: result.status for result in merged.results}
    for names, what in ((merged.left_out, "left out"), (merged.outside, "not ok, reported after them")):
        if names:
            shown = ", ".join(visible(name) + (f" ({statuses[name]})" if name in statuses else "")
                              for name in names[:5])
            more = f" and {len(names) - 5} more" if len(names) > 5 else ""
            say(f"{plural(len(names), 'result')} of cases not in --cases {what}: {shown}{more}")
    if not merged.results:
        say("nothing to report: the results files hold no result" + (" and --cases no case" if case_paths else ""))
        return ExitCode.NO_CASES
    mixed, alike = mixed_settings(stores, merged.results, allow_mixed, merged.sources, strict)
    for key, line in alike:
        if key not in alike_keys(strict):
            say(f"warning: the runs were judged under different settings (--allow-mixed {key}): "
                f"{line}")
    for key, line in mixed:
        say(f"the runs were judged under different settings, which no one verdict covers: {line} "
            f"(--allow-mixed {key} if that is intended)")
    chip_lines = missing_lines(merged.chips_missing, merged.chipped, [str(chip) for chip in chips])
    warned = shard_warnings(stores, merged, strict)
    info = _on_chips(run_info(stores, merged.results, allow_mixed, merged.sources, strict), merged,
                     chip_lines + [line for line in merged.narrower if not strict])      # else the STRICT line's
    if strict:
        info = replace(info, strict=True, warned=tuple(warned))
    options = outputs.RenderOptions(verbose=verbose, wide=wide)
    header = _table_header(stores, merged.results)
    from .outputs.table import failure_lines

    unwritten = outputs.write_targets(targets, lambda target: [header + "\n"] * (target.format == "table") + list(
        outputs.render_pieces(target.format, merged.results, info, options)), merged.results,
        lambda: failure_lines(merged.results, info=info) + outputs.labels.device_lines(merged.results))
    if merged.missing:
        say(f"{plural(merged.missing, 'case')} of --cases in no results file: reported not_run")
    if merged.changed:
        say(f"{plural(merged.changed, 'case')} of --cases changed since their records were "
            "made: reported not_run")
    if merged.chipped and len(merged.chips) > 1:
        say(f"{plural(merged.chipped, 'case')} with records of several chips "
            f"({visible(chip_ranges(merged.chips))}): each reported with its status on each chip"
            + ("" if chips else " (--chips LIST: the chips each case must have run on, a chip missing not_run)"))
    for line in chip_lines:
        say(line)
    for line in warned:
        say(f"warning: {line}")
    if info.warned:
        say(f"--strict: {plural(len(warned), 'warning')} of the runs merged: exit 1")
    if merged.unreported:
        say(f"{plural(merged.unreported, 'case')} selected by the runs but in no results "
            f"file (a shard missing, or a run stopped early): reported not_run")
    for stored in (stored for stored in stores if stored.replaced):
        say(f"{plural(stored.replaced, 'case')} of {visible(stored.path)}: its last run selected "
            f"them and recorded no result, and its records of an earlier run were judged under other "
            f"settings: reported not_run")
    if unwritten:
        raise PrmgError.all_of(unwritten)
    return report_exit_code(merged.results, info)


def _on_chips(info: RunInfo, merged: Merged, chip_lines: Sequence[str]) -> RunInfo:
    """``info`` with the devices the merged records name, as the host's chips (``Chips.label``: no longer counted
    among those ``ASCEND_RT_VISIBLE_DEVICES`` showed), and a note of each line naming a chip expected and missing
    (``chips.missing_lines``)."""
    if not merged.chips:
        return info
    notes = info.notes + tuple(("chips", line) for line in chip_lines)
    return replace(info, devices=tuple(merged.chips), visible_devices="", notes=notes)


def _check_allowed(allowed: Sequence[str], stores: Sequence[store.Stored]) -> None:
    """PrmgError for an ``--allow-mixed`` name that is no setting the runs of ``stores`` record (nor ``runner``)."""
    known = {"runner", UNRECORDED, *(key for stored in stores for run in stored.runs for key in run.settings)}
    unknown = [name for name in allowed if name not in known]
    if unknown:
        raise PrmgError(f"--allow-mixed {visible(unknown[0])}: no run of these files records such a setting "
                        f"(they record: {', '.join(sorted(known))})")
