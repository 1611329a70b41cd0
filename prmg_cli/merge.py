"""``prmg report RESULTS.jsonl...``: one report from one or more results files (shards run on several
hosts, or a run finished earlier), in any format of ``outputs.OUTPUTS``.

- **Reading.** Each file holds result records, one JSON object a line (``prmg run --results``). A torn
  last line (an interrupted run) is left out; lines of another record kind (a ``schema`` that is not
  ``prmg.result/...``, e.g. a header a later prmg may write) are skipped; any other line that is not a
  result record is an error naming the file and line, so that no verdict is lost silently. Within one
  file the last record of a case wins: results files are appended to, so it is the newest.
- **Order.** With ``--cases PATH``: the cases' order, as ``prmg run`` reports them; a case that no file
  holds is ``not_run`` (``not run: no results file holds it``), and records of cases that are not among
  them are left out (one line on stderr names them); a case whose ``fingerprint`` differs from its record's
  (edited since it ran) is ``not_run`` too, so a stale verdict never stands for today's case. Without
  ``--cases``: the order of first appearance, file by file.
- **Duplicates.** A case held by several files is named on stderr, one line per case, with each file's
  status. ``--duplicates worst`` (the default) reports the worst verdict, so that a failure is never
  hidden by the order of the arguments: ``error`` > ``failed`` > ``xpassed`` > ``xfailed`` > ``passed`` >
  ``skipped`` > ``not_run`` (a record with a verdict beats one without; ties go to the later file).
  ``--duplicates last`` reports the record of the last file given (a re-run that supersedes a shard).
- **Settings.** Each record carries the key of the settings it was judged under (``suite.settings_key``);
  records judged under several (a shard on another toolkit, with faults or a looser ``--standard``) are
  one warning line on stderr.
- **Exit codes** as ``prmg run``: 0 when every reported case is ok, 1 otherwise (``not_run`` included),
  2 for unreadable files and usage errors, 5 when there is nothing to report.

Results files do not record the run's devices or target, so the report's header names the files it
merged; the runner is what the records say (``emulator`` as soon as one record came from the emulator,
so that the report never passes emulator results off as an NPU's).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Sequence

from . import __version__, outputs
from .errors import PrmgError
from .files import write_text
from .outputs.labels import EMULATOR_NOTE
from .results import STATUSES, CaseResult, ExitCode, RunInfo, exit_code, plural, summary_line, visible
from .writes import check_spares, check_writable, write_stdout

RESULT_SCHEMA = "prmg.result/"
# Worst last: a record with a verdict beats one without (skipped, not_run); a failure beats a pass.
SEVERITY = ("not_run", "skipped", "passed", "xfailed", "xpassed", "failed", "error")
DUPLICATE_RULES = ("worst", "last")
MISSING = "not run: no results file holds it"
CHANGED = "not run: the case changed since its record was made (its fingerprint differs)"


def read_records(path: str) -> list[CaseResult]:
    """The result records of one results file, in file order (a case may appear more than once);
    PrmgError naming the file and line of the first line that is neither a result record, another kind
    of prmg record, nor a torn last line."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise PrmgError(f"cannot read the results file: {getattr(error, 'strerror', None) or error}",
                        file=path) from None
    lines = text.splitlines()
    records = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError:
            data = None
        if isinstance(data, dict) and "schema" in data and not str(data["schema"]).startswith(RESULT_SCHEMA):
            continue                                     # another kind of record (a run header, ...)
        result = None
        if isinstance(data, dict) and isinstance(data.get("name"), str) and data.get("status") in STATUSES:
            try:
                result = CaseResult.from_dict(data)
            except TypeError:
                result = None
        if result is None:
            if number == len(lines) and not text.endswith("\n"):
                continue                                 # a torn last line of an interrupted run
            raise PrmgError(f"line {number} is not a prmg result record", file=path)
        records.append(result)
    return records


@dataclass
class Merged:
    """The merged results in report order, and what the merge has to say about them."""

    results: list = field(default_factory=list)
    duplicates: list = field(default_factory=list)    # one line per case held by several files
    left_out: list = field(default_factory=list)      # names of records not among --cases
    missing: int = 0                                  # --cases cases no file holds
    changed: int = 0                                  # --cases cases changed since their record was made


def _pick(held: list[tuple[str, CaseResult]], rule: str) -> tuple[str, CaseResult]:
    """The (file, record) to report among one case's records from several files."""
    if rule == "last":
        return held[-1]
    rank = {status: position for position, status in enumerate(SEVERITY)}
    return max(enumerate(held), key=lambda item: (rank.get(item[1][1].status, len(SEVERITY)), item[0]))[1]


def merge(files: Sequence[tuple[str, list[CaseResult]]], cases: Sequence | None = None,
          rule: str = "worst") -> Merged:
    """Merge the records of ``files`` ((path, records) pairs, in argument order): per file the last record
    of a case, across files by ``rule``; in the order of ``cases`` when given (those no file holds become
    ``not_run``), else in order of first appearance (module docstring)."""
    if rule not in DUPLICATE_RULES:
        raise PrmgError(f"--duplicates must be one of {', '.join(DUPLICATE_RULES)}, got {rule!r}")
    held: dict[str, list[tuple[str, CaseResult]]] = {}
    for path, records in files:
        newest = {}
        for record in records:
            newest.pop(record.name, None)                # keep first-appearance order of the newest
            newest[record.name] = record
        for name, record in newest.items():
            held.setdefault(name, []).append((path, record))
    merged = Merged()
    picked = {}
    for name, entries in held.items():
        source, record = _pick(entries, rule)
        picked[name] = record
        if len(entries) > 1:
            listing = ", ".join(f"{visible(path)} ({entry.status})" for path, entry in entries)
            merged.duplicates.append(f"duplicate: case '{visible(name)}' is in {listing}; reporting "
                                     f"{record.status} from {visible(source)} (--duplicates {rule})")
    if cases is None:
        merged.results = list(picked.values())
        return merged
    from .cases import fingerprint_or_empty
    from .execute import case_result

    names = set()
    for case in cases:
        names.add(case.name)
        record = picked.get(case.name)
        if record is None:
            merged.missing += 1
            record = case_result(case, "not_run", message=MISSING, standard=case.standard or "default")
        elif record.fingerprint and record.fingerprint != fingerprint_or_empty(case):
            merged.changed += 1
            record = case_result(case, "not_run", message=CHANGED, standard=case.standard or "default")
        merged.results.append(record)
    merged.left_out = [name for name in picked if name not in names]
    return merged


def recorded_runners(results: Sequence[CaseResult]) -> list[str]:
    """The runners the records name (``aclnn``, ``emulator``; records of older prmg versions name none)."""
    return sorted({str(getattr(result, "runner", "") or "") for result in results} - {""})


def run_info(paths: Sequence[str], results: Sequence[CaseResult]) -> RunInfo:
    """The description the reports' header gets: results files record no devices or target, so it names
    the merged files; the runner is what the records say (``emulator`` as soon as one record came from
    the emulator, so that the report says so), and the modes are those of the pass cases that ran."""
    modes = set()
    from .vocab import parse_modes

    for result in results:
        if result.expect == "pass" and result.status not in ("skipped", "not_run") and result.rotary_mode:
            try:
                modes |= set(parse_modes(str(result.rotary_mode)))
            except PrmgError:
                pass
    runners = recorded_runners(results)
    runner = "emulator" if "emulator" in runners else (runners[0] if runners else "unrecorded")
    location = ", ".join(paths) + (f" (records from {' and '.join(runners)})" if len(runners) > 1 else "")
    return RunInfo(runner=runner, location=location, supported_modes=tuple(sorted(modes)),
                   devices=(), standard="per case (as recorded)", version=__version__)


def _table_header(paths: Sequence[str], counts: Sequence[int], results: Sequence[CaseResult]) -> str:
    """The table's header: which files were merged, and what ran them as far as the records say (each
    run's own report has its full header)."""
    listing = ", ".join(f"{visible(path)} ({plural(count, 'result')})" for path, count in zip(paths, counts))
    runners = recorded_runners(results)
    if not runners:
        runner = "not recorded in these results files (each run's own report names its toolkit and devices)"
    else:
        runner = " and ".join(visible(name) for name in runners) + " (as the records say)"
        if "emulator" in runners:
            runner += f"; {EMULATOR_NOTE}" if runners == ["emulator"] else "; some results come from the host emulator"
    return f"merged: {plural(len(paths), 'results file')}: {listing}\nrunner: {runner}\nprmg: {__version__}"


def report_files(paths: Sequence[str], case_paths: Sequence[str] = (), reports: Sequence[str] = (),
                 output: str | None = None, rule: str = "worst", verbose: bool = False,
                 wide: bool = False) -> int:
    """``prmg report``: write every report asked for and return the exit code (module docstring)."""
    targets = outputs.parse_targets(list(reports), output)
    if rule not in DUPLICATE_RULES:
        raise PrmgError(f"--duplicates must be one of {', '.join(DUPLICATE_RULES)}, got {rule!r}")
    for target in targets:
        if target.path:
            check_writable(target.path)
    protected = {str(path): "a results file to merge" for path in paths}
    protected.update({str(path): "a case file" for path in case_paths if Path(path).is_file()})
    check_spares([target.path for target in targets if target.path], protected)
    files, seen = [], set()
    for path in map(str, paths):
        if Path(path).resolve() in seen:
            sys.stderr.write(f"prmg: {visible(path)} is given twice: read once\n")
            continue
        seen.add(Path(path).resolve())
        files.append((path, read_records(path)))
    cases = None
    if case_paths:
        from .cases import load_cases

        cases = load_cases([str(path) for path in case_paths])
    merged = merge(files, cases, rule)
    for line in merged.duplicates:
        sys.stderr.write(f"prmg: {line}\n")
    if merged.left_out:
        shown = ", ".join(visible(name) for name in merged.left_out[:5])
        more = f" and {len(merged.left_out) - 5} more" if len(merged.left_out) > 5 else ""
        sys.stderr.write(f"prmg: {plural(len(merged.left_out), 'result')} of cases not in --cases left out: "
                         f"{shown}{more}\n")
    if not merged.results:
        sys.stderr.write("prmg: nothing to report: the results files hold no result"
                         + (" and --cases no case\n" if case_paths else "\n"))
        return ExitCode.NO_CASES
    settings = {result.judged_under for result in merged.results if result.judged_under}
    if len(settings) > 1:
        sys.stderr.write(f"prmg: warning: the records were judged under {len(settings)} different settings "
                         "(runner, toolkit, faults, modes, --standard, --strict, checks): the shards did not "
                         "run alike\n")
    info = run_info([path for path, _ in files], merged.results)
    options = outputs.RenderOptions(verbose=verbose, wide=wide)
    header = _table_header([path for path, _ in files], [len(records) for _, records in files], merged.results)
    for target in targets:
        if target.format == "table":
            text = header + "\n\n" + outputs.render("table", merged.results, info, replace(options, header=False))
        else:
            text = outputs.render(target.format, merged.results, info, options)
        if target.path is None:
            write_stdout(text)
        else:
            write_text(target.path, text)
    if all(target.path is not None for target in targets):
        from .outputs.table import failure_lines

        write_stdout("\n".join(failure_lines(merged.results) + [summary_line(merged.results)]))
    if merged.missing:
        sys.stderr.write(f"prmg: {plural(merged.missing, 'case')} of --cases in no results file: reported not_run\n")
    if merged.changed:
        sys.stderr.write(f"prmg: {plural(merged.changed, 'case')} of --cases changed since their records were "
                         "made: reported not_run\n")
    return exit_code(merged.results)
