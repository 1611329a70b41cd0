"""The terminal report: a table that fits the screen (``screen.width()``), one line per failure, the summary.

Layout: the run's header (unless the caller printed it already), a line naming what every case shares
(a column whose value is the same in every row is dropped from the table and named there), the table (the
verdict and the case first, the metric last), then one line per case that failed (deduplicated: the
localisation sentence once), with its diagnosis lines under ``verbose`` (at most ``max_details`` each), one line
per reason for the cases skipped, xfailed or not run (``grouped_lines``; one each under ``verbose``), the
coverage of the cases that ran (``coverage.run_line``), then the summary line last, ending with what besides the
cases makes the exit code 1 (``labels.exit_note``: MIXED SETTINGS, STRICT), or with that note on the line above
when the two do not fit the width together. The header, the ``all cases:`` line, the grouped lines and the coverage
line are wrapped to the width (``screen.wrap``); a failure's line and its diagnosis lines only on a terminal
(``screen.folded``: one line each in a pipe or a file, for grep).

To fit the width (``fit``) the table takes the steps of ``FIT_ORDER`` one by one: it drops the kernel time, the
standard, the cos layout, the slice and the shape, cuts the metric to its essentials, then shortens case names
(``short_names.short_names``: whole words, those that tell a name from the others and its mode and dtype words first)
and drops the op, the dtypes and the mode only while the names would be shorter than ``MIN_NAME``. ``wide``
keeps every column and whole names.
"""

from __future__ import annotations

from ...cases.coverage import run_line
from ...ops import DEFAULT_OP
from ...results import CaseResult, RunInfo, plural, run_warnings, summary_line, visible
from ...vocab import ROTARY_MODES, broadcast_pattern, mode_label, mode_name
from .labels import (device_lines, diagnosis_lines, dtype_label, exit_note, fault_lines, first_names, format_header,
                     metric_label, ms_label, shape_label, slice_label, verdict_word)
from .screen import folded, shorten, width as screen_width, wrap
from .short_names import DTYPE_WORDS, MODE_WORDS, short_names

MIN_NAME = 30
SHORTEN = "shorten names"            # a step of a table's fitting order: shorten case names (``short_names``)
ESSENTIALS = "metric essentials"     # a step: the metric keeps what precedes its first ", " (``essentials``)
# What the results table gives up, in this order, until it fits the width (unless --wide): columns (by heading)
# and the two steps above. From the step SHORTEN on, names are shortened to the room left, never below
# MIN_NAME while a step remains.
FIT_ORDER = ("kernel time", "standard", "cos", "slice", "shape", ESSENTIALS, SHORTEN, "op", "dtypes", "mode")
SQUEEZE = "squeeze the last column"  # a step: the last column's texts are cut to the room left, not below MIN_SQUEEZED
MIN_SQUEEZED = 40
SMALLEST_NAME = 12                   # the room names are shortened to when every step is taken and still too little
# ...unless a squeezed last column can give them room: it goes below MIN_SQUEEZED (not below SMALLEST_NAME) for names
# of up to SQUEEZED_NAME columns (compare's table at 80 columns with A and B kept: names of 9 and a row of 82 before)
SQUEEZED_NAME = 24
_SHORT_MODES = {"interleave-half": "ilv-half"}
_GAP = "  "                         # between two columns


def _cos_label(result: CaseResult) -> str:
    """cos's layout against dy: its broadcast pattern (``1S1D``) or its shape."""
    return broadcast_pattern(result.shape, result.cos_shape) or shape_label(result.cos_shape)


def cells(result: CaseResult) -> dict[str, str]:
    """Every column's text for one result, by column heading, in the table's order: the verdict and the case
    first, the metric last."""
    mode = mode_name(result.rotary_mode) or "-"
    return {"verdict": verdict_word(result), "case": visible(result.name), "op": visible(result.op),
            "mode": _SHORT_MODES.get(mode, visible(mode)),
            "dtypes": dtype_label(result.dtype, result.cos_dtype, result.sin_dtype),
            "shape": shape_label(result.shape), "cos": _cos_label(result), "slice": slice_label(result.partial_slice),
            "standard": visible(result.standard or "-"), "kernel time": ms_label(result.kernel_ms),
            "metric": metric_label(result)}


def essentials(metric: str) -> str:
    """What a narrow table keeps of a metric's text: what precedes its first ``, `` (``verdict_metrics.key_metric``
    puts first what matters most: a limit that was broken, how far)."""
    return metric.split(", ", 1)[0]


def _column_widths(rows: list[dict[str, str]], headings: list[str]) -> dict[str, int]:
    """Each column's width: its longest cell or heading."""
    return {h: max([len(h)] + [len(row[h]) for row in rows]) for h in headings}


def fit(rows: list[dict[str, str]], *, wide: bool = False, shared_candidates: tuple = (),
        order: tuple = FIT_ORDER, width: int | None = None, protect: dict | None = None) -> list[str]:
    """``rows`` (one mapping of heading -> text per row, every row with the same headings, one of them ``case``)
    as a table of at most ``width`` columns (default ``screen.width()``): an empty column and (for
    ``shared_candidates``) a column with one value in every row are named on an ``all cases:`` line instead
    (wrapped to the width); then the steps of ``order`` are taken one by one until the table fits: a heading
    drops its column, ``ESSENTIALS`` cuts the metric to ``essentials``, a function rewrites every row (row ->
    row: a shorter text of the same cell), ``SQUEEZE`` cuts the texts of the last
    column (``screen.shorten``) to the room whole names leave, not below ``MIN_SQUEEZED``, ``SHORTEN`` starts
    shortening case names
    (``short_names``) to the room the other columns leave, never below ``MIN_NAME`` while a step remains
    (``SMALLEST_NAME`` after the last; a squeezed last column shares its room with names of up to ``SQUEEZED_NAME``),
    keeping the words ``protect`` gives for a column that a step dropped or the table lacks (heading -> words, the
    most important first). ``wide`` keeps everything."""
    if not rows:
        return []
    width = width or screen_width()
    headings = list(rows[0])
    shared = []
    names = [row["case"] for row in rows]
    shown = {name: name for name in names}
    table = [dict(row) for row in rows]
    if not wide:
        for heading in list(headings):
            values = {row[heading] for row in rows}
            if values == {"-"} and heading != "case":
                headings.remove(heading)
            elif heading in shared_candidates and len(values) == 1 and (len(rows) > 1 or values == {DEFAULT_OP}):
                shared.append(f"{heading} {values.pop()}")
                headings.remove(heading)
        shortening, squeezing, dropped = False, False, []
        last = headings[-1]
        for step in (None, *order):
            if step == SHORTEN:
                shortening = True
            elif step == SQUEEZE:
                squeezing = True
            elif step == ESSENTIALS and "metric" in headings:
                table = [{**row, "metric": essentials(row["metric"])} for row in table]
            elif callable(step):
                table = [step(row) for row in table]
            elif step in headings and step != "case":
                headings.remove(step)
                dropped.append(step)
            elif step is not None:
                continue
            widths = _column_widths(table, [h for h in headings if h != "case"])
            if squeezing:
                widths[last] = min(widths[last], max(MIN_SQUEEZED, width - sum(widths.values()) + widths[last]
                                                     - len(_GAP) * len(widths) - max(map(len, names))))
            room = width - sum(widths.values()) - len(_GAP) * len(widths)
            if max(map(len, names)) <= room:
                shown = {name: name for name in names}
                break
            kept = tuple(words for heading, words in (protect or {}).items()
                         if heading in dropped or heading not in rows[0])
            if shortening:
                shown, unique = short_names(names, max(room, MIN_NAME), kept)
                if room >= MIN_NAME and unique:
                    break
        else:
            if squeezing and room < SQUEEZED_NAME:      # the names' room and the last column's, shared (above)
                shared_room = room + widths[last]
                widths[last] = max(SMALLEST_NAME, shared_room - min(SQUEEZED_NAME, max(map(len, names))))
                room = shared_room - widths[last]
            shown, _ = short_names(names, max(room, SMALLEST_NAME), kept)
        if squeezing:
            table = [{**row, last: shorten(row[last], widths[last])} for row in table]
    table = [{**row, "case": shown[row["case"]]} for row in table]
    widths = _column_widths(table, headings)
    lines = [_GAP.join(f"{h:<{widths[h]}}" for h in headings).rstrip(),
             _GAP.join("-" * widths[h] for h in headings)]
    lines += [_GAP.join(f"{row[h]:<{widths[h]}}" for h in headings).rstrip() for row in table]
    return (wrap(f"all cases: {', '.join(shared)}", width) if shared else []) + lines


def table_lines(results: list[CaseResult], *, wide: bool = False, width: int | None = None) -> list[str]:
    """The results table (``fit`` of ``cells``), with the ``all cases:`` line when columns were merged."""
    return fit([cells(result) for result in results], wide=wide, width=width,
               shared_candidates=("op", "mode", "standard", "cos", "dtypes", "shape", "slice"),
               protect={"mode": MODE_WORDS, "dtypes": DTYPE_WORDS})


_MODE = "\0"                         # where a skip reason names the case's rotary mode (``_skip_reason``)


def _skip_reason(result: CaseResult) -> str:
    """A skipped result's message with its rotary mode's label (``half (0)``) as ``_MODE``: skips for modes the
    target lacks share one reason, whichever mode."""
    code = ROTARY_MODES.get(mode_name(result.rotary_mode))
    return result.message.replace(mode_label(code), _MODE) if code is not None else result.message


def grouped_lines(results: list[CaseResult]) -> list[str]:
    """One line per reason for the cases skipped, xfailed or not run (without ``-v``, which gives each its own):
    ``SKIP 66 cases: rotary_mode half, quarter, interleave-half not supported by the target (...)``,
    ``XFAIL 1 case (fwd.D_2000_empty_slice): known defect: ...``, ``NOT RUN 3 cases (a, b, c): ...``."""
    groups: dict[tuple[str, str], list[CaseResult]] = {}
    for result in results:
        if result.status in ("skipped", "xfailed", "not_run"):
            reason = (_skip_reason(result) if result.status == "skipped" else
                      f"known defect: {result.known_defect}" if result.status == "xfailed" and result.known_defect
                      else result.message)
            groups.setdefault((result.status, reason), []).append(result)
    lines = []
    for (status, reason), members in groups.items():
        modes = dict.fromkeys(mode_name(member.rotary_mode) for member in members)
        said = visible(reason.replace(_MODE, ", ".join(modes)))
        named = "" if status == "skipped" else f" ({first_names([member.name for member in members], 3)})"
        lines.append(f"{verdict_word(members[0])} {plural(len(members), 'case')}{named}: {said}")
    return lines


# After the skips of an emulator run (the only skip is a pass case of a mode the target lacks): how to run them.
EMULATOR_MODES_NOTE = "note: the emulator has every rotary mode: --supported-modes 0,1,2,3 runs the skipped cases"


def _alike_warnings(results: list[CaseResult]) -> dict[int, list[CaseResult]]:
    """Each passed case with warnings and nothing else to say (no message, no saved arrays), by ``id``, -> the cases
    warned alike (its group, in order): they get one entry (``PASS 6 cases (a, b, c and 3 more):``), not the same
    lines 6 times over (a hand-written file of RoPE tables without ``partners_alike``: five lines a case); a case
    with more to say keeps its own entry."""
    groups: dict[tuple, list[CaseResult]] = {}
    for result in results:
        if result.status == "passed" and result.warnings and not result.message and not result.artifacts:
            groups.setdefault(tuple(result.warnings), []).append(result)
    return {id(member): group for group in groups.values() for member in group}


def failure_lines(results: list[CaseResult], *, verbose: bool = False, max_details: int | None = None,
                  width: int | None = None, info: RunInfo | None = None) -> list[str]:
    """One line per case that is not ok or has a warning (and, with ``verbose``, per skipped or xfailed case),
    then under ``verbose`` its diagnosis lines, at most ``max_details`` each (None: all); without ``verbose`` the
    cases skipped, xfailed or not run get one line per reason (``grouped_lines``), wrapped to ``width`` (default
    ``screen.width()``); when ``info`` says the emulator ran them, ``EMULATOR_MODES_NOTE`` after any skip."""
    width = width or screen_width()
    note = wrap(EMULATOR_MODES_NOTE, width) if info is not None and info.runner == "emulator" and any(
        result.status == "skipped" for result in results) else []
    alike = {} if verbose else _alike_warnings(results)
    lines = []
    for result in results:
        explained = (not result.info.ok and (verbose or result.status != "not_run")) or result.warnings \
            or (verbose and result.status != "passed")
        members = alike.get(id(result), [result])
        if not explained or members[0] is not result:
            continue
        entry = diagnosis_lines(result, details=verbose)
        if len(members) > 1:
            entry[0] = f"{verdict_word(result)} {plural(len(members), 'case')} " \
                       f"({first_names([member.name for member in members], 3)}):"
        if max_details is not None and len(entry) > 1 + max_details:
            hidden = len(entry) - 1 - max_details
            entry = entry[:1 + max_details] + [f"    ... {plural(hidden, 'more line')} (--max-details)"]
        lines += folded(entry, width)
    if verbose:
        return lines + note
    return lines + [part for line in grouped_lines(results) for part in wrap(line, width)] + note


def render(results: list[CaseResult], info: RunInfo, *, verbose: bool = False, wide: bool = False,
           max_details: int | None = None, header: bool = True, width: int | None = None, cases=()) -> str:
    """Header (when ``header``), the table, the failures, a blank line and the summary line last, in ``width``
    columns (default ``screen.width()``). Without the header (printed before the first case, when only the
    faults' names were known) the line saying where the emulator's faults acted comes before the summary line."""
    width = width or screen_width()
    lines = [format_header(info, results, width), ""] if header else []
    lines += table_lines(results, wide=wide, width=width)
    failures = failure_lines(results, verbose=verbose, max_details=max_details, width=width, info=info)
    if failures:
        lines += [""] + failures
    coverage = run_line(results, cases)
    if coverage:
        lines += [""] + wrap(coverage, width)
    for warning in run_warnings(results):
        lines += [""] + wrap(f"warning: {warning}", width)
    for line in device_lines(results):
        lines += [""] + wrap(line, width)
    ends = [] if header else [part for line in fault_lines(info, results) for part in wrap(line, width)]
    summary, note = summary_line(results), exit_note(info)
    ended = f"{summary}; {note}" if note else summary
    last = [ended] if not note or len(ended) <= width else [*wrap(note, width), summary]
    lines += [""] + ends + last
    return "\n".join(lines)
