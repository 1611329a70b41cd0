"""The terminal report: a tabulate table that fits ``WIDTH`` columns, one line per failure, the summary.

Layout: the run's header (unless the caller printed it already), a line naming what every case shares
(a column whose value is the same in every row is dropped from the table and named there), the table,
then one line per case that did not pass (deduplicated: the localisation sentence once), with its
diagnosis lines under ``verbose`` (at most ``max_details`` each), the coverage of the cases that ran
(``coverage.run_line``: ``coverage: covers 97 of 321 classes ...``), then the summary line last.

To fit ``WIDTH`` the table drops, in this order, the kernel time, the standard, the cos layout and the
operator, then shortens case names in the middle (``full.bcast…BSND_s0-16``). ``wide`` keeps every
column and whole names.
"""

from __future__ import annotations

from tabulate import tabulate

from ..coverage import run_line
from ..ops import DEFAULT_OP
from ..results import CaseResult, RunInfo, summary_line, visible
from .labels import (diagnosis_lines, dtype_label, fault_lines, format_header, metric_label, ms_label,
                     shape_label, slice_label, verdict_word)
from ..vocab import broadcast_pattern, mode_name

WIDTH = 100
MIN_NAME = 24
# Optional columns, dropped in this order until the table fits WIDTH (unless --wide); after the
# first three, case names are shortened before more columns go.
_DROP_ORDER = ("kernel time", "standard", "cos", "op", "mode")
_SHORTEN_AFTER = 3
_SHORT_MODES = {"interleave-half": "ilv-half"}


def _cos_label(result: CaseResult) -> str:
    """cos's layout against dy: its broadcast pattern (``1S1D``) or its shape."""
    return broadcast_pattern(result.shape, result.cos_shape) or shape_label(result.cos_shape)


def cells(result: CaseResult) -> dict[str, str]:
    """Every column's text for one result, by column heading."""
    mode = mode_name(result.rotary_mode) or "-"
    return {"case": visible(result.name), "op": visible(result.op), "dtypes": dtype_label(
                result.dtype, result.cos_dtype, result.sin_dtype),
            "shape": shape_label(result.shape), "cos": _cos_label(result),
            "mode": _SHORT_MODES.get(mode, visible(mode)), "slice": slice_label(result.partial_slice),
            "standard": visible(result.standard or "-"), "metric": metric_label(result),
            "verdict": verdict_word(result), "kernel time": ms_label(result.kernel_ms)}


def _shorten(name: str, width: int) -> str:
    """``name`` cut in the middle to ``width`` characters with an ellipsis, when longer."""
    if len(name) <= width:
        return name
    keep = width - 1
    return name[:(keep + 1) // 2] + "…" + name[len(name) - keep // 2:]


def _width(rows: list[dict[str, str]], headings: list[str]) -> int:
    """The width tabulate's ``simple`` format gives these columns: each at least its heading plus 2, two
    spaces between columns."""
    return sum(max([len(h) + 2] + [len(row[h]) for row in rows]) for h in headings) + 2 * (len(headings) - 1)


def fit(rows: list[dict[str, str]], *, wide: bool = False, shared_candidates: tuple = (),
        drop_order: tuple = _DROP_ORDER) -> list[str]:
    """``rows`` (one mapping of heading -> text per row, every row with the same headings) as a table of
    at most ``WIDTH`` columns: an empty column and (for ``shared_candidates``) a column with one value in
    every row are named on an ``all cases:`` line instead; then the first ``drop_order`` columns go, then
    case names are shortened in the middle (to ``MIN_NAME`` at least), then the other ``drop_order``
    columns go. ``wide`` keeps everything."""
    if not rows:
        return []
    headings = list(rows[0])
    shared = []
    if not wide:
        for heading in list(headings):
            values = {row[heading] for row in rows}
            if values == {"-"} and heading != "case":
                headings.remove(heading)
            elif heading in shared_candidates and len(values) == 1 and (len(rows) > 1 or values == {DEFAULT_OP}):
                shared.append(f"{heading} {values.pop()}")
                headings.remove(heading)
        for position, heading in enumerate(drop_order):
            if position == _SHORTEN_AFTER:
                rows = _shorten_names(rows, headings)
            if _width(rows, headings) <= WIDTH:
                break
            if heading in headings:
                headings.remove(heading)
        rows = _shorten_names(rows, headings)
    lines = [f"all cases: {', '.join(shared)}"] if shared else []
    table = tabulate([[row[h] for h in headings] for row in rows], headers=headings, tablefmt="simple",
                     disable_numparse=True)
    return lines + table.splitlines()


def _shorten_names(rows: list[dict[str, str]], headings: list[str]) -> list[dict[str, str]]:
    """``rows`` with case names shortened so that the table fits ``WIDTH``, but not below ``MIN_NAME``."""
    room = WIDTH - _width(rows, [h for h in headings if h != "case"]) - 2
    return [{**row, "case": _shorten(row["case"], max(MIN_NAME, room))} for row in rows]


def table_lines(results: list[CaseResult], *, wide: bool = False) -> list[str]:
    """The results table (``fit`` of ``cells``), with the ``all cases:`` line when columns were merged."""
    return fit([cells(result) for result in results], wide=wide,
               shared_candidates=("op", "mode", "standard", "cos", "dtypes", "shape", "slice"))


def failure_lines(results: list[CaseResult], *, verbose: bool = False, max_details: int | None = None) -> list[str]:
    """One line per case that is not ok (and, with ``verbose``, per skipped case and per case with a
    warning), then under ``verbose`` its diagnosis lines, at most ``max_details`` each (None: all)."""
    lines = []
    not_run: dict[str, list[str]] = {}
    for result in results:
        explained = not result.info.ok or result.warnings or (verbose and result.status != "passed")
        if not explained:
            continue
        if result.status == "not_run" and not verbose:
            not_run.setdefault(result.message, []).append(visible(result.name))
            continue
        entry = diagnosis_lines(result, details=verbose)
        if max_details is not None and len(entry) > 1 + max_details:
            hidden = len(entry) - 1 - max_details
            entry = entry[:1 + max_details] + [f"    ... {hidden} more line{'s' * (hidden > 1)} (--max-details)"]
        lines += entry
    for message, names in not_run.items():
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        lines.append(f"NOT RUN {len(names)} case{'s' * (len(names) > 1)} ({shown}): {visible(message)}")
    return lines


def render(results: list[CaseResult], info: RunInfo, *, verbose: bool = False, wide: bool = False,
           max_details: int | None = None, header: bool = True) -> str:
    """Header (when ``header``), the table, the failures, a blank line and the summary line last. Without
    the header (printed before the first case, when only the faults' names were known) the line saying
    where the emulator's faults acted comes before the summary line."""
    lines = [format_header(info, results), ""] if header else []
    lines += table_lines(results, wide=wide)
    failures = failure_lines(results, verbose=verbose, max_details=max_details)
    if failures:
        lines += [""] + failures
    coverage = run_line(results)
    if coverage:
        lines += ["", coverage]
    lines += [""] + ([] if header else fault_lines(info, results)) + [summary_line(results)]
    return "\n".join(lines)
