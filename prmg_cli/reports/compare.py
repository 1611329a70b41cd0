"""``prmg compare A.jsonl B.jsonl``: what changed between two runs (two CANN versions, two kernel builds).

For every case of either results file, in this order of importance (``CATEGORIES``; ``ORDER`` says it in
words for the help and the docs):

- **new failures**: ok in A (passed, skipped, xfailed), not ok in B (failed, error, xpassed, not_run); and a case
  only in B, or not run in A (a run stopped or killed before it: no verdict), that B judged not ok (failed, error,
  xpassed): a failure is a failure, whether A knew the case or not;
- **not comparable**: a case whose definition changed from A to B (its ``fingerprint``: inputs, shapes, slice,
  tolerance...) or that was judged under other settings (``judging``: its standard, ``--standard``, ``--strict``,
  the checks and their options, ``--no-golden``, ``--each-device`` and its chips), or by the host emulator in one
  run and a toolkit in the other: B's verdict says nothing of the kernel against A's. A regression, unless
  ``allow_changed`` (``--allow-changed``) says the change is intended; then the case is also compared as any other;
- **verdicts lost**: a case whose status now says less about the kernel (``results.StatusInfo.evidence``: a
  verdict, then an xfail, then nothing) than it did, and is no new failure: passed or failed -> skipped or
  xfailed, failed or error -> not_run, xfailed -> skipped; a pass that became a skip or an xfail hides whatever
  the kernel now does;
- **precision drift**: the standard's drift metric (``verdict_metrics.drift_metrics``: ``beyond_rounding`` for
  ``default``, ...) rising from A to B by more than ``drift`` relative *and* ``floor`` absolute, in a case that
  passed in both;
- **kernel-time drift**: the median kernel time rising by more than the measured noise: with repeated
  timings (``kernel_samples``, or bench rows' ``times_ms``) ``noise = 3 * (MAD_A + MAD_B) +
  time_floor * median_A``; with fewer than 3 timings in either run (an ordinary run times each case once) only a
  rise past a wide bound: B's median over ``SINGLE_RATIO`` (3) times A's *and* ``SINGLE_FLOOR_MS`` (1 ms) above it
  (a slow path of 25 ms against 0.05 ms); the emulator's host timings are not judged (they move by tens of percent
  between runs);
- **only in A**: a verdict lost too, counted as a regression;
- **fixes**: not ok in A, passed in B on the same device (a failure that became a skip or an xfail is a verdict
  lost, not a fix); a pass on another device than A's failure, in runs sharing the cases among the chips, says
  nothing of the chip that failed: a status change naming both devices (``other_chip``);
- **status changed**: any other change of status; **only in B**: new cases.
A new failure on another device than A's pass names both too (a chip that computes wrong, not the kernel, may be why).

A regression (new failure, not comparable, verdict lost, drift, a case only in A) makes the exit code 1;
otherwise 0. The
module imports nothing heavy at its top (``prmg --help`` reads ``ORDER`` through the compare command).
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field

from .. import files
from ..errors import PrmgError
from ..results import CaseResult, plural, visible

CATEGORIES = ("new failure", "not comparable", "verdict lost", "precision drift", "time drift", "only in A", "fixed",
              "status changed", "only in B")
REGRESSIONS = frozenset({"new failure", "not comparable", "verdict lost", "precision drift", "time drift", "only in A"})
# Each category as a list of what compare reports names it, and the order in words.
IN_WORDS = {"new failure": "new failures", "not comparable": "cases not comparable",
            "verdict lost": "verdicts lost", "precision drift": "precision drift", "time drift": "kernel-time drift",
            "only in A": "cases only in A", "fixed": "fixes", "status changed": "other status changes",
            "only in B": "cases only in B"}
ORDER = ", ".join(IN_WORDS[category] for category in CATEGORIES)
# A category's noun for many changes, where it is not the category itself (``results.plural``).
PLURALS = {"new failure": "new failures", "not comparable": "not comparable", "verdict lost": "verdicts lost",
           "precision drift": "precision drifts", "time drift": "time drifts"}
# Fewer than 3 kernel timings of a case in either run (one per case in an ordinary run): a rise is a drift only past
# both bounds, B's median over SINGLE_RATIO times A's and SINGLE_FLOOR_MS above it; one timing moves by tens of
# percent, a slow path by orders of magnitude.
SINGLE_RATIO = 3.0
SINGLE_FLOOR_MS = 1.0


@dataclass
class Change:
    """One case's change between two runs."""

    category: str
    name: str
    before: str = ""
    after: str = ""
    detail: str = ""


@dataclass
class Comparison:
    """Every change, worst first, how many cases each run held, and the emulator faults that acted on each run's
    cases (fault -> case names, ``outputs.labels.fault_cases``)."""

    changes: list = field(default_factory=list)
    cases_a: int = 0
    cases_b: int = 0
    faults_a: dict = field(default_factory=dict)
    faults_b: dict = field(default_factory=dict)
    allow_changed: bool = False          # --allow-changed: a case not comparable is no regression

    def regressive(self, category: str) -> bool:
        """Whether a change of ``category`` is a regression (``REGRESSIONS``; not comparable unless
        ``allow_changed``)."""
        return category in REGRESSIONS and not (self.allow_changed and category == "not comparable")

    @property
    def regressions(self) -> list:
        return [change for change in self.changes if self.regressive(change.category)]

    def fault_lines(self) -> list[str]:
        """One line per run whose cases emulator faults acted on: ``run B had emulator faults injected ...``."""
        from .outputs.labels import first_names

        lines = []
        for run, faults in (("A", self.faults_a), ("B", self.faults_b)):
            if faults:
                acted = "; ".join(f"{visible(fault)} on {plural(len(cases), 'case')} ({first_names(cases, 3)})"
                                  for fault, cases in faults.items())
                lines.append(f"run {run} had emulator faults injected (PRMG_EMU_FAULT): {acted}: its changes on those "
                             f"cases test prmg, not the operator")
        return lines


@dataclass
class Run:
    """One results file as compare reads it: each case's last record, and what each was judged under (``judging``)."""

    records: dict
    judged: dict


def read_run(path: str) -> Run:
    """Every case's last record in the results file ``path`` (``store.read``), by name, with what it was judged under
    (``judging`` with its run record's settings); PrmgError when it holds no result record (nothing to compare)."""
    from .store import read

    stored = read(path)
    records = stored.current()
    if not records:
        raise PrmgError("holds no result record: nothing to compare", file=path)
    settings = {run.run_id: run.settings for run in stored.runs}
    return Run(records, {name: judging(record, settings.get(record.run_id)) for name, record in records.items()})


def judging(record: CaseResult, settings: dict | None = None) -> dict:
    """What ``record``'s verdict was judged under besides its case and its kernel: its standard and, from its run's
    settings (``run_record.recorded_settings``; left out without a run record), ``--standard`` (which drops the case's
    tolerance), ``--strict``, ``--check`` and the checks' options, ``--no-golden``, ``--each-device`` (a verdict of
    every chip against one of a single chip: a pass on one says nothing of the others), the chips an
    ``--each-device`` record holds (``device_statuses``: a pass on chips 0-3 against one on chips 0-7), and the judge
    where the run record states it (``judging.judge_fingerprint``): the limits of the record's standard (``limits of
    default``: a build whose table of the same name differs) and prmg's judging code; a run of an older prmg, which
    states neither, is held against any."""
    flags = (("--standard", "standard", None), ("--strict", "strict", False), ("--check", "checks", []),
             ("check options", "check_options", {}), ("--no-golden", "golden", True),
             ("--each-device", "each_device", False))
    known = {} if settings is None else {flag: settings.get(key, default) for flag, key, default in flags}
    chips = {"chips": sorted(record.device_statuses, key=str)} if record.device_statuses else {}
    table = (settings or {}).get("limits")
    limits = {f"limits of {visible(record.standard)}": table.get(record.standard)} \
        if isinstance(table, dict) and record.standard else {}
    code = {"judging code": settings["judging_code"]} if settings and "judging_code" in settings else {}
    return {"standard": record.standard or None, **known, **chips, **limits, **code}


def incomparable(old: CaseResult, new: CaseResult, judged_old: dict, judged_new: dict) -> str:
    """"" when B's record of a case can be held against A's, else why not: its definition changed (the fingerprints
    differ: the keys of ``definition`` that changed are named), the host emulator judged it in one run and a toolkit
    in the other (the emulator is a correct kernel: its green says nothing of the NPU's), or it was judged under
    other settings (each that both runs state and that differs; ``judging``)."""
    if old.fingerprint and new.fingerprint and old.fingerprint != new.fingerprint:
        keys = sorted(key for key in {*old.definition, *new.definition}
                      if old.definition.get(key) != new.definition.get(key))
        return f"its definition changed ({', '.join(map(visible, keys)) or 'its input files'})"
    if old.runner and new.runner and old.runner != new.runner and "emulator" in (old.runner, new.runner):
        return f"the host emulator gave one verdict, a toolkit the other (runner {old.runner} -> {new.runner})"
    differ = [f"{key} {_shown(judged_old[key])} -> {_shown(judged_new[key])}" for key in judged_old
              if key in judged_new and judged_old[key] != judged_new[key]]
    return f"judged under other settings: {'; '.join(differ)}" if differ else ""


def other_chip(old: CaseResult, new: CaseResult) -> str:
    """"" when both records name the same device (or either names none, or a record of ``--each-device`` holds each
    chip's status: its chips are among its judging settings), else where each ran: ``failed on device 1 in A, passed
    on device 0 in B``."""
    if not old.device or not new.device or old.device == new.device or old.device_statuses or new.device_statuses:
        return ""
    return f"{old.status} on device {visible(old.device)} in A, {new.status} on device {visible(new.device)} in B"


def _shown(value) -> str:
    """A judging setting as text: ``none``, ``true``, ``[adjoint]``, ``allclose``."""
    from .merge import setting_text

    return visible(setting_text(value))


def _mad(values: list[float]) -> float:
    """The median absolute deviation of ``values``."""
    middle = statistics.median(values)
    return statistics.median(abs(v - middle) for v in values)


def time_drift(before: list[float], after: list[float], floor: float) -> str:
    """"" when the median did not rise beyond the noise, else a sentence with the numbers (module docstring); with
    fewer than 3 timings on either side, only a rise past ``SINGLE_RATIO`` times and ``SINGLE_FLOOR_MS``."""
    if not before or not after:
        return ""
    median_a, median_b = statistics.median(before), statistics.median(after)
    if len(before) < 3 or len(after) < 3:
        if median_b <= SINGLE_RATIO * median_a or median_b - median_a <= SINGLE_FLOOR_MS:
            return ""
        times = f"{median_b / median_a:.3g}x, " if median_a > 0 else ""
        return (f"kernel time {median_a:.4g} -> {median_b:.4g} ms ({times}past {SINGLE_RATIO:g}x and "
                f"{SINGLE_FLOOR_MS:g} ms: with {len(before)} and {len(after)} timings only such a rise is judged)")
    noise = 3 * (_mad(before) + _mad(after)) + floor * median_a
    if median_b - median_a <= noise:
        return ""
    return (f"median kernel time {median_a:.4g} -> {median_b:.4g} ms (+{median_b - median_a:.3g} ms, noise "
            f"{noise:.3g} ms from {len(before)} and {len(after)} timings)")


def compare(a: dict[str, CaseResult], b: dict[str, CaseResult], *, drift: float = 0.25, floor: float = 0.05,
            time_floor: float = 0.05, judged: tuple[dict, dict] = ({}, {}), allow_changed: bool = False) -> Comparison:
    """The changes from run ``a`` to run ``b`` (module docstring), worst category first, then by name; ``judged``
    what each run's records were judged under (``judging``; a record missing there, by its record alone)."""
    from ..judging.verdict_metrics import drift_value
    from .outputs.labels import fault_cases

    changes = []
    for name in sorted(set(a) | set(b)):
        if name not in b:
            changes.append(Change("only in A", name, a[name].status))
            continue
        if name not in a:
            new = b[name]
            changes.append(Change("only in B", name, after=new.status) if new.info.ok else
                           Change("new failure", name, "", new.status, f"only in B: {visible(new.message)}"))
            continue
        old, new = a[name], b[name]
        why = incomparable(old, new, judged[0].get(name) or judging(old), judged[1].get(name) or judging(new))
        if why:
            changes.append(Change("not comparable", name, old.status, new.status, why))
            if not allow_changed:
                continue
        chips = other_chip(old, new)
        if old.info.ok and not new.info.ok:
            changes.append(Change("new failure", name, old.status, new.status,
                                  f"{chips}: {visible(new.message)}" if chips else visible(new.message)))
        elif not old.info.ok and not old.info.evidence and not new.info.ok and new.info.evidence:
            changes.append(Change("new failure", name, old.status, new.status,
                                  f"not judged in A: {visible(new.message)}"))
        elif not old.info.ok and new.status == "passed":
            changes.append(Change("status changed", name, old.status, new.status,
                                  f"{chips}: another chip, not a fix") if chips else
                           Change("fixed", name, old.status, new.status))
        elif new.info.evidence < old.info.evidence:
            changes.append(Change("verdict lost", name, old.status, new.status, visible(new.message)))
        elif old.status != new.status:
            changes.append(Change("status changed", name, old.status, new.status))
        if old.status == new.status == "passed":
            before, after = drift_value(old.metrics), drift_value(new.metrics)
            if before and after and before[0] == after[0] and after[1] > before[1] * (1 + drift) + floor:
                changes.append(Change("precision drift", name, f"{before[1]:.4g}", f"{after[1]:.4g}",
                                      f"{before[0]} rose by more than {drift:.0%} + {floor:g}"))
            moved = time_drift(_samples(old), _samples(new), time_floor) \
                if old.runner != "emulator" and new.runner != "emulator" else ""
            if moved:
                changes.append(Change("time drift", name, detail=moved))
    changes.sort(key=lambda change: (CATEGORIES.index(change.category), change.name))
    return Comparison(changes, len(a), len(b), fault_cases(list(a.values())), fault_cases(list(b.values())),
                      allow_changed)


def _samples(result: CaseResult) -> list[float]:
    """A result's kernel timings: its repeated samples, else its one time."""
    samples = [float(v) for v in result.kernel_samples if isinstance(v, (int, float))]
    return samples or ([result.kernel_ms] if result.kernel_ms is not None else [])


def _counts(comparison: Comparison) -> dict[str, int]:
    """How many changes of each category (``CATEGORIES``) ``comparison`` holds."""
    return {category: sum(change.category == category for change in comparison.changes) for category in CATEGORIES}


def summary_line(comparison: Comparison) -> str:
    """The comparison's last line: ``2 regressions (2 new failures); 0 fixed; 36 cases in A, 36 in B``."""
    counts = _counts(comparison)
    regressions = ", ".join(plural(n, c, PLURALS.get(c, c)) for c, n in counts.items()
                            if n and comparison.regressive(c))
    return (f"{plural(len(comparison.regressions), 'regression')} ({regressions or 'none'}); "
            f"{counts['fixed']} fixed; {plural(comparison.cases_a, 'case')} in A, {comparison.cases_b} in B")


def render(comparison: Comparison, fmt: str = "table", width: int | None = None, wide: bool = False) -> str:
    """The comparison as a table fitted to ``width`` columns (``outputs.table.fit``, unless ``wide``: the change and
    the case first; A and B named once when every row shares them; the detail, down to ``MIN_SQUEEZED`` columns,
    then the case names give way: a line under the table says when a detail was cut), one line per run with
    injected faults, then the summary (both wrapped to the width); JSON or Markdown."""
    counts = _counts(comparison)
    summary = summary_line(comparison)
    faults = comparison.fault_lines()
    if fmt == "json":
        return json.dumps({"summary": {"regressions": len(comparison.regressions), **counts, "line": summary,
                                       "cases_a": comparison.cases_a, "cases_b": comparison.cases_b,
                                       "faults_a": comparison.faults_a, "faults_b": comparison.faults_b,
                                       "fault_lines": faults},
                           "changes": [change.__dict__ for change in comparison.changes]}, indent=2)
    rows = [{"change": change.category, "case": visible(change.name), "A": change.before or "-",
             "B": change.after or "-", "detail": visible(change.detail) or "-"} for change in comparison.changes]
    if fmt == "markdown":
        from tabulate import tabulate

        from .outputs.markdown import md_escape

        cells = [[md_escape(text) for text in row.values()] for row in rows]
        table = tabulate(cells, headers=list(rows[0]), tablefmt="github", disable_numparse=True) if rows \
            else "no changes"
        return "\n\n".join(["# prmg compare", *map(md_escape, faults), table, summary])
    if fmt != "table":
        raise PrmgError(f"--report must be table, json or markdown for compare, got {fmt!r}")
    from .outputs.screen import cut_note, width as screen_width, wrap
    from .outputs.short_names import DTYPE_WORDS, MODE_WORDS
    from .outputs.table import SHORTEN, SQUEEZE, fit

    width = width or screen_width()
    table = fit(rows, wide=wide, shared_candidates=("A", "B"), order=(SQUEEZE, SHORTEN), width=width,
                protect={"dtypes": DTYPE_WORDS, "mode": MODE_WORDS}) if rows else ["no changes"]
    cut = any(row["detail"] not in line for row, line in zip(rows, table[len(table) - len(rows):]))
    return "\n".join([*(part for line in faults for part in wrap(line, width)), *([""] if faults else []), *table,
                      *[cut_note("details")] * cut, "", *wrap(summary, width)])


def compare_runs(path_a: str, path_b: str, fmt: str = "table", **limits) -> Comparison:
    """The comparison of the results files ``path_a`` and ``path_b`` (``limits``: ``compare``'s drift, floor,
    time_floor and allow_changed), once ``fmt`` is known to be one compare renders."""
    if fmt not in ("table", "json", "markdown"):
        raise PrmgError(f"--report must be table, json or markdown for compare, got {fmt!r}")
    run_a, run_b = read_run(path_a), read_run(path_b)
    return compare(run_a.records, run_b.records, judged=(run_a.judged, run_b.judged), **limits)


def compare_files(path_a: str, path_b: str, fmt: str = "table", wide: bool = False, **limits) -> tuple[str, int]:
    """``prmg compare``: the report and the exit code (1 on any regression); ``wide``: the table unfitted;
    ``limits``: as ``compare_runs``."""
    comparison = compare_runs(path_a, path_b, fmt, **limits)
    return render(comparison, fmt, wide=wide), 1 if comparison.regressions else 0


MAX_BENCH_BYTES = 64 * files.MiB          # a bench JSON report: thousands of cases, each with its timings
BENCH_ROW = {"name": "name", "times_ms": "ms list"}      # what --baseline reads of each case (store kinds)


def read_bench(path: str) -> list[dict]:
    """The case rows of the bench JSON report ``path`` (``prmg bench --report json``): a regular file of at most
    ``MAX_BENCH_BYTES`` (``files.read_regular``), parsed as the results store parses (``store.parse_json``: no
    nesting can crash it), each row naming its case and its ``times_ms`` (``BENCH_ROW``); PrmgError naming the
    file and what is wrong."""
    from . import store

    def refuse(what: str) -> PrmgError:
        return PrmgError(f"not a prmg bench JSON file: {what}", file=path)

    data = files.read_regular(path, MAX_BENCH_BYTES)
    try:
        document = store.parse_json(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise refuse("not UTF-8 text") from None
    except json.JSONDecodeError:
        raise refuse("not JSON") from None
    except ValueError as error:
        raise refuse(str(error)) from None
    rows = document.get("cases") if isinstance(document, dict) else None
    if not isinstance(rows, list):
        raise refuse("no list of cases")
    for index, row in enumerate(rows):
        why = store.problem(row, BENCH_ROW, required=("name",))
        if why:
            raise refuse(f"case {index}: {why}")
    return rows


def compare_bench(baseline_path: str, baseline_rows: list[dict], rows: list[dict], time_floor: float = 0.05,
                  judged: bool = True) -> tuple[list[str], int]:
    """``prmg bench --baseline FILE``: lines saying which cases got slower than the baseline bench JSON (its rows,
    ``read_bench``) beyond its noise (``time_drift`` of their ``times_ms``), and 1 when any did -- unless not
    ``judged`` (host timings of the emulator, which move by tens of percent from run to run: shown, exit 0)."""
    baseline = {row["name"]: row for row in baseline_rows}
    lines = []
    for row in rows:
        old = baseline.get(row["name"])
        if old is None:
            lines.append(f"{row['name']}: not in the baseline")
            continue
        moved = time_drift(list(old.get("times_ms") or []), list(row.get("times_ms") or []), time_floor)
        if moved:
            lines.append(f"SLOWER {row['name']}: {moved}")
    slower = sum(line.startswith("SLOWER") for line in lines)
    lines.append(f"{plural(slower, 'case')} slower than the baseline {baseline_path}"
                 + ("" if judged else " (host timings of the emulator: shown, not judged)"))
    return lines, 1 if slower and judged else 0
