"""The terminal report: a table that fits the screen (``screen.width()``), one line per failure, the summary.

Layout: the run's header (unless the caller printed it already), a line naming what every case shares
(a column whose value is the same in every row is dropped from the table and named there), the table,
then one line per case that did not pass (deduplicated: the localisation sentence once), with its
diagnosis lines under ``verbose`` (at most ``max_details`` each), the coverage of the cases that ran
(``coverage.run_line``: ``coverage: covers 97 of 321 classes ...``), then the summary line last. The header,
the ``all cases:`` line and the coverage line are wrapped to the width (``screen.wrap``); a failure stays on
one line.

To fit the width the table drops, in this order, the kernel time, the standard and the cos layout; then it
shortens case names (``short_names``: ``cover.g…4095x1x1x4_B11D_s0-4``, never two to the same text) and drops
the mode, the shape, the slice and the dtypes only while the names cannot be shortened to
``MIN_NAME`` characters or more without two of them reading the same. The op column stays when the
operators mix (one op is named on the ``all cases:`` line). ``wide`` keeps every column and whole names.
"""

from __future__ import annotations

from collections import Counter

from ..coverage import run_line
from ..ops import DEFAULT_OP
from ..results import CaseResult, RunInfo, plural, run_warnings, summary_line, visible
from .labels import (diagnosis_lines, dtype_label, fault_lines, format_header, metric_label, ms_label,
                     shape_label, slice_label, verdict_word)
from .screen import ELLIPSIS, width as screen_width, wrap
from ..vocab import broadcast_pattern, mode_name

MIN_NAME = 24
# Optional columns, dropped in this order until the table fits (unless --wide); after the first three, case
# names are shortened before more columns go.
_DROP_ORDER = ("kernel time", "standard", "cos", "mode", "shape", "slice", "dtypes")
_SHORTEN_AFTER = 3
_SHORT_MODES = {"interleave-half": "ilv-half"}
_GAP = "  "                         # between two columns


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


def short_names(names: list[str], columns: int) -> tuple[dict[str, str], bool]:
    """Each of ``names`` -> its text in ``columns`` characters, and whether every one fits: a name that fits
    is shown whole; a longer one as its head, ``…`` and as much of its end as fits -- the head its first part
    (to the first ``.`` or ``_``: ``cover.…``), grown one character at a time for every name whose text another
    name's text equals (so ``cover.grad.x…`` and ``cover.forward.x…`` become ``cover.g…`` and ``cover.f…``) --
    never two names to one text. A name no head makes unique is shown whole (the second value is then False)."""
    whole = {name: name for name in names if len(name) <= columns}
    heads = {}
    for name in dict.fromkeys(names):
        if name not in whole:
            first = next((i + 1 for i, char in enumerate(name) if char in "._"), 1)
            heads[name] = min(first, columns // 3)
    shown, complete = dict(whole), True
    while heads:
        texts = {name: name[:head] + ELLIPSIS + name[head + len(name) - columns + len(ELLIPSIS):]
                 for name, head in heads.items()}
        count = Counter([*texts.values(), *whole.values()])
        shown.update((name, text) for name, text in texts.items() if count[text] == 1)
        heads = {name: heads[name] + 1 for name, text in texts.items() if count[text] > 1}
        for name in [name for name, head in heads.items() if head > columns - 1 - len(ELLIPSIS)]:
            shown[name], complete = name, False
            del heads[name]
    return shown, complete


def _column_widths(rows: list[dict[str, str]], headings: list[str]) -> dict[str, int]:
    """Each column's width: its longest cell or heading."""
    return {h: max([len(h)] + [len(row[h]) for row in rows]) for h in headings}


def fit(rows: list[dict[str, str]], *, wide: bool = False, shared_candidates: tuple = (),
        drop_order: tuple = _DROP_ORDER, width: int | None = None) -> list[str]:
    """``rows`` (one mapping of heading -> text per row, every row with the same headings, ``case`` first) as
    a table of at most ``width`` columns (default ``screen.width()``): an empty column and (for
    ``shared_candidates``) a column with one value in every row are named on an ``all cases:`` line instead
    (wrapped to the width); then the first ``_SHORTEN_AFTER`` of ``drop_order`` go while the table is too
    wide; then case names are shortened (``short_names``) to the room the other columns leave, and the
    other ``drop_order`` columns go while that room is below ``MIN_NAME`` or leaves two names reading the
    same. ``wide`` keeps everything."""
    if not rows:
        return []
    width = width or screen_width()
    headings = list(rows[0])
    shared = []
    names = [row["case"] for row in rows]
    shown = {name: name for name in names}
    if not wide:
        for heading in list(headings):
            values = {row[heading] for row in rows}
            if values == {"-"} and heading != "case":
                headings.remove(heading)
            elif heading in shared_candidates and len(values) == 1 and (len(rows) > 1 or values == {DEFAULT_OP}):
                shared.append(f"{heading} {values.pop()}")
                headings.remove(heading)
        for position in range(len(drop_order) + 1):
            widths = _column_widths(rows, [h for h in headings if h != "case"])
            room = width - sum(widths.values()) - len(_GAP) * len(widths)
            if max(map(len, names)) <= room:
                break
            if position >= _SHORTEN_AFTER or position == len(drop_order):
                shown, unique = short_names(names, max(room, MIN_NAME))
                if (room >= MIN_NAME and unique) or position == len(drop_order):
                    break
            if drop_order[position] in headings:
                headings.remove(drop_order[position])
    table = [{**row, "case": shown[row["case"]]} for row in rows]
    widths = _column_widths(table, headings)
    lines = [_GAP.join(f"{h:<{widths[h]}}" for h in headings).rstrip(),
             _GAP.join("-" * widths[h] for h in headings)]
    lines += [_GAP.join(f"{row[h]:<{widths[h]}}" for h in headings).rstrip() for row in table]
    return (wrap(f"all cases: {', '.join(shared)}", width) if shared else []) + lines


def table_lines(results: list[CaseResult], *, wide: bool = False, width: int | None = None) -> list[str]:
    """The results table (``fit`` of ``cells``), with the ``all cases:`` line when columns were merged."""
    return fit([cells(result) for result in results], wide=wide, width=width,
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
            entry = entry[:1 + max_details] + [f"    ... {plural(hidden, 'more line')} (--max-details)"]
        lines += entry
    for message, names in not_run.items():
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        lines.append(f"NOT RUN {plural(len(names), 'case')} ({shown}): {visible(message)}")
    return lines


def render(results: list[CaseResult], info: RunInfo, *, verbose: bool = False, wide: bool = False,
           max_details: int | None = None, header: bool = True, width: int | None = None) -> str:
    """Header (when ``header``), the table, the failures, a blank line and the summary line last, in ``width``
    columns (default ``screen.width()``). Without the header (printed before the first case, when only the
    faults' names were known) the line saying where the emulator's faults acted comes before the summary line."""
    width = width or screen_width()
    lines = [format_header(info, results, width), ""] if header else []
    lines += table_lines(results, wide=wide, width=width)
    failures = failure_lines(results, verbose=verbose, max_details=max_details)
    if failures:
        lines += [""] + failures
    coverage = run_line(results)
    if coverage:
        lines += [""] + wrap(coverage, width)
    for warning in run_warnings(results):
        lines += [""] + wrap(f"warning: {warning}", width)
    ends = [] if header else [part for line in fault_lines(info, results) for part in wrap(line, width)]
    lines += [""] + ends + [summary_line(results)]
    return "\n".join(lines)
