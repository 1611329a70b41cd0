"""The HTML report: one self-contained page to look at a run instead of reading it.

The page holds, top to bottom: the run's header (injected faults and the emulator named in a banner),
the count of every status, a verdict matrix (dtype pair x rotary mode x broadcast pattern, one per
operator when there are several; each cell coloured by the worst verdict of its cases, a combination
without a case left blank), the run's plots (a histogram of every case's key margin, error / limit;
kernel time against bytes moved when kernel times exist), one card per case that is not fine (failed,
errored, xpassed, not run) with its localisation sentence, the contract lines ("the bytes": guard
zones, cos/sin or dy changed, changes outside the slice), a heatmap of its ``error_map`` and its worst
elements, and last a table of every case, which the counts and matrix cells filter when clicked.

Self-contained: styles and the small script are inline, pictures are PNG ``data:`` URIs, and a Content
Security Policy forbids the page any other source, so it reads the same offline and as a CI artifact.
Every piece of text that comes from a file goes through ``esc`` (``results.visible_html``: ``results.visible``,
then ``html.escape``); prmg's own labels (already visible) through ``html.escape`` alone.

Plots come from matplotlib (``plots.py``), an optional dependency (``pip install 'prmg[html]'``):
``require`` says how to install it, and ``outputs.parse_targets`` calls it before a run starts.
Heatmaps are drawn for the first ``MAX_HEATMAPS`` cases with an error map; the page says when more were
left without one.
"""

from __future__ import annotations

import html
import importlib.util
import math
import re
from collections import Counter, defaultdict

import numpy as np

from ... import dtypes
from ...cases.coverage import run_line
from ...errors import PrmgError, raised_stop, stop_exception
from ...judging.verdict_metrics import key_margin
from ...results import (STATUSES, WORST_FIRST, CaseResult, RunInfo, plural, run_warnings, summary_counts, summary_line,
                        visible, visible_html as esc)        # esc: file-derived text for the page

from ...vocab import BROADCASTS, MODE_NAMES, broadcast_pattern, mode_name
from .labels import (EMULATOR_NOTE, bytes_moved as launch_bytes, device_line, dtype_label, fault_field, header_fields,
                     metric_label, shape_label)
from .table import cells

MAX_HEATMAPS = 100
MIN_PLOTTED_MS = 1e-9           # kernel times below a picosecond (or not finite) are no times: left out of the plot
INSTALL = "pip install 'prmg[html]'"

UNKNOWN_COLOURS = ("#999999", "#ffffff")      # (background, text) of a status prmg does not know
EXPLAINED = tuple(status for status, info in STATUSES.items() if not info.ok)     # the statuses that get a card

# Problems of the device-side contract and of the untouched part of dy: shown as "the bytes".
_CONTRACT = re.compile(r"guard zone|\b(?:dy|x|cos|sin|workspace) changed\b|^outside the slice")
# An index of more than 18 digits is no index of a tensor (int64): such a line is shown as text.
_WORST = re.compile(r"^worst at \(b, s, n, d\)=\((\d{1,18}), (\d{1,18}), (\d{1,18}), (\d{1,18})\): "
                    r"expected (\S+), got (\S+), error (\S+)(?:, (\S+) (\S+))?$")


def available() -> bool:
    """Whether matplotlib, which draws the report's pictures, is installed (found, not imported: cheap)."""
    try:
        return importlib.util.find_spec("matplotlib") is not None
    except (ImportError, ValueError):          # ValueError: a module set to None in sys.modules
        return False


def require() -> None:
    """Raise ``PrmgError`` (one line, exit 2) when matplotlib is missing, saying how to install it."""
    if not available():
        raise PrmgError(f"the html report needs matplotlib, which is not installed: {INSTALL}",
                        field="--report")


def _h(text) -> str:
    """prmg's own (already visible) text for the page: markup escaped."""
    return html.escape(str(text), quote=True)


# ---------------------------------------------------------------------------------------------------
# What the page shows of a result


def closeness(metrics: dict, margin: float) -> float:
    """How close a case runs to its limit (> 1 fails), as the page's margins histogram plots it and its "closest
    to their limit" list ranks the passing cases: under ``default`` the share of its budget beyond the output's
    rounding that its error takes (``beyond_rounding``: 0 for a correctly rounded result, whose err/budget is
    near 1 all the same), else its key ``margin``."""
    beyond = metrics.get("beyond_rounding")
    return float(beyond) if isinstance(beyond, (int, float)) else margin


def bytes_moved(result: CaseResult) -> int | None:
    """The bytes one launch of the result's case moves (``labels.bytes_moved``: Python integers, of any size);
    None when its shapes, slice or dtypes describe no launch: a shape or cos shape missing, a dtype unknown, a
    slice that is not ``0 <= start <= end <= D`` (an expect-error case's)."""
    try:
        for name in (result.dtype, result.cos_dtype or result.dtype):
            dtypes.lookup(name)
    except KeyError:
        return None
    if not (result.shape and result.cos_shape and len(result.partial_slice) == 2):
        return None
    start, end = result.partial_slice
    return launch_bytes(result) if 0 <= start <= end <= result.shape[-1] else None


def _group(status: str) -> str:
    """A plot's colour group: ``ok`` (passed), ``bad`` (a status that is not ok), ``other``."""
    return "ok" if status == "passed" else "other" if STATUSES[status].ok else "bad"


def _worst_rows(details: list) -> list[tuple]:
    """The ``worst at`` lines of ``details`` as (index, expected, got, error, limit name, limit)."""
    rows = []
    for line in details:
        match = _WORST.match(str(line))
        if match:
            b, s, n, d, expected, got, error, limit_name, limit = match.groups()
            rows.append(((int(b), int(s), int(n), int(d)), expected, got, error, limit_name or "", limit or ""))
    return rows


def _worst_cell(result: CaseResult, worst: list[tuple]) -> tuple[int, int] | None:
    """(flat row, d) of the first worst element, for the heatmap's cross; None when unknown."""
    if not worst or len(result.shape) != 4:
        return None
    b, s, n, d = worst[0][0]
    try:
        return int(np.ravel_multi_index((b, s, n), tuple(int(v) for v in result.shape[:3]))), d
    except ValueError:
        return None


def _problems(result: CaseResult) -> tuple[list[str], list[str]]:
    """The message's parts split into (contract lines, "the bytes"; the other sentences)."""
    parts = [part.strip() for part in str(result.message).split("; ") if part.strip()]
    contract = [part for part in parts if _CONTRACT.search(part)]
    return contract, [part for part in parts if part not in contract]


# ---------------------------------------------------------------------------------------------------
# Page sections


def _colours(status: str) -> tuple[str, str]:
    """(background, text colour) of ``status`` (``StatusInfo.colours``)."""
    return STATUSES[status].colours if status in STATUSES else UNKNOWN_COLOURS


def _badge(status: str, text: str | None = None) -> str:
    background, colour = _colours(status)
    word = STATUSES[status].word if status in STATUSES else visible(status).upper()
    return (f'<span class="badge" style="background:{background};color:{colour}">'
            f'{_h(text if text is not None else word)}</span>')


def _header(results: list[CaseResult], info: RunInfo, cases=()) -> str:
    counts = summary_counts(results)
    ok = not any(not r.info.ok for r in results)
    parts = [f'<header><h1>prmg report</h1><p class="line {"ok" if ok else "bad"}" id="summary-line">'
             f'{_h(summary_line(results))}</p>']
    coverage = run_line(results, cases)
    if coverage:
        parts.append(f'<p class="coverage" id="coverage-line">{esc(coverage)}</p>')
    parts += [f'<p class="coverage run-warning">warning: {esc(warning)}</p>' for warning in run_warnings(results)]
    faults = fault_field(info, results)
    if faults:
        parts.append(f'<div class="banner fault">{_h(faults[0])}: {_h(faults[1])}</div>')
    concentrated = device_line(results)
    if concentrated:
        parts.append(f'<div class="banner fault" id="device-line">failures by device: {_h(concentrated)}</div>')
    if info.runner == "emulator":
        parts.append(f'<div class="banner emulator">{_h(EMULATOR_NOTE)}</div>')
    fields = "".join(f"<dt>{_h(name)}</dt><dd>{_h(value)}</dd>" for name, value in header_fields(info, results)
                     if (name, value) != faults)
    parts.append(f'<details class="run"><summary>run</summary><dl>{fields}</dl></details></header>')
    chips = []
    for status in STATUSES:
        background, colour = _colours(status)
        count = counts[status]
        chips.append(f'<button class="chip{" zero" if not count else ""}" data-filter-status="{status}" '
                     f'style="--c:{background};--t:{colour}" title="show the {status} cases">'
                     f'<b>{count}</b><span>{_h(STATUSES[status].word.lower())}</span></button>')
    chips.append(f'<div class="chip total"><b>{counts["total"]}</b><span>cases</span></div>')
    if counts["warnings"]:
        chips.append(f'<div class="chip warn"><b>{counts["warnings"]}</b><span>with warnings</span></div>')
    return "\n".join(parts) + f'<section id="summary"><h2>Summary</h2><div class="chips">{"".join(chips)}</div>'


def _dtype_order(label: str) -> tuple:
    order = {"fp32": 0, "fp16": 1, "bf16": 2}
    return tuple(order.get(part, 9) for part in label.split("/")), label


def _mode_order(mode: str) -> tuple:
    codes = {name: code for code, name in MODE_NAMES.items()}
    return (codes.get(mode, 99), mode)


def _pattern_order(pattern: str) -> tuple:
    return (BROADCASTS.index(pattern) if pattern in BROADCASTS else len(BROADCASTS), pattern)


def matrix_keys(result: CaseResult) -> tuple[str, str, str, str]:
    """The matrix cell of a result: (op, dtype pair, rotary mode, broadcast pattern), each as shown."""
    pattern = broadcast_pattern(result.shape, result.cos_shape) or (
        shape_label(result.cos_shape) if result.cos_shape else "-")
    return (visible(result.op), dtype_label(result.dtype, result.cos_dtype, result.sin_dtype),
            visible(mode_name(result.rotary_mode) or "-"), pattern)


def _matrix_cell(results: list[CaseResult], members: list[int] | None, label: str, number: int) -> str:
    """One matrix cell: blank for a combination without a case, else coloured by its worst verdict."""
    if not members:
        return f'<td class="gap" title="{_h(label)}: no case">&middot;</td>'
    statuses = Counter(results[i].status for i in members)
    worst = next(status for status in WORST_FIRST if statuses.get(status))
    background, colour = _colours(worst)
    bad = sum(count for status, count in statuses.items() if not STATUSES[status].ok)
    text = f"{bad}/{len(members)}" if bad and bad < len(members) else str(len(members))
    tally = ", ".join(f"{statuses[status]} {status.replace('_', ' ')}" for status in WORST_FIRST
                      if statuses.get(status))
    return (f'<td class="cell" data-cell="{number}" data-status="{worst}" style="background:{background};'
            f'color:{colour}" title="{_h(f"{label}: {tally}")}">{_h(text)}</td>')


def _matrix(results: list[CaseResult], cell_of: dict[int, int]) -> str:
    """The verdict matrices (module docstring): per operator, one panel per rotary mode of dtype pairs
    (rows) x broadcast patterns (columns), every panel with the same rows and columns so that a gap
    shows; fills ``cell_of`` (result index -> cell number, for the case table's filter)."""
    if not results:
        return '<p class="note">no cases</p></section>'
    cells_by_key: dict[tuple, list[int]] = defaultdict(list)
    for index, result in enumerate(results):
        cells_by_key[matrix_keys(result)].append(index)
    ops = sorted({key[0] for key in cells_by_key})
    legend = "".join(_badge(status, STATUSES[status].word) for status in WORST_FIRST) + \
        '<span class="badge gap-badge">no case</span>'
    parts = ['<h3>Verdicts by dtypes (dy/cos) &times; rotary mode &times; cos/sin broadcast'
             + (' &times; operator' if len(ops) > 1 else '') + '</h3>',
             f'<p class="legend">each cell: the worst verdict of its cases, and their number (not fine / all '
             f'when only some are not fine); click a cell to list its cases. {legend}</p>']
    number = 0
    for op in ops:
        keys = [key for key in cells_by_key if key[0] == op]
        pairs = sorted({key[1] for key in keys}, key=_dtype_order)
        modes = sorted({key[2] for key in keys}, key=_mode_order)
        patterns = sorted({key[3] for key in keys}, key=_pattern_order)
        head = "".join(f'<th class="pattern">{_h(pattern)}</th>' for pattern in patterns)
        panels = []
        for mode in modes:
            rows = []
            for pair in pairs:
                tds = []
                for pattern in patterns:
                    members = cells_by_key.get((op, pair, mode, pattern))
                    label = f"{op} · {pair} · {mode} · {pattern}" if len(ops) > 1 else f"{pair} · {mode} · {pattern}"
                    tds.append(_matrix_cell(results, members, label, number))
                    if members:
                        for i in members:
                            cell_of[i] = number
                        number += 1
                rows.append(f'<tr><th class="pair">{_h(pair)}</th>{"".join(tds)}</tr>')
            title = f"{_h(op)} &middot; {_h(mode)}" if len(ops) > 1 else f"mode {_h(mode)}"
            panels.append(f'<table class="matrix" data-op="{_h(op)}" data-mode="{_h(mode)}"><caption>{title}'
                          f'</caption><thead><tr><th class="corner">dtypes</th>{head}</tr></thead>'
                          f'<tbody>{"".join(rows)}</tbody></table>')
        parts.append(f'<div class="panels">{"".join(panels)}</div>')
    return "\n".join(parts) + "</section>"


def _plots(results: list[CaseResult], info: RunInfo, plots) -> str:
    parts = ['<section id="plots"><h2>How close to its limits the kernel runs</h2>']
    margins = [(key_margin(r.metrics), r) for r in results if r.metrics]
    margins = [(closeness(r.metrics, value), r) for value, r in margins if value is not None]
    if margins:
        image = plots.margin_histogram([(value, _group(r.status)) for value, r in margins])
        standards = sorted({visible(r.standard) for _, r in margins if r.standard})
        parts.append(f'<figure><img class="plot" id="margins" alt="histogram of margins" src="{image}">'
                     f'<figcaption>margin of {len(margins)} of the run&rsquo;s {plural(len(results), "case")} '
                     f'(the others have none to plot: an expected error, a skip, a count such as exact&rsquo;s '
                     f'mismatches; so the legend counts fewer than the summary); standards: '
                     f'{_h(", ".join(standards) or "-")}; under default the error beyond the output&rsquo;s '
                     f'rounding over the budget beyond it (0 for a correctly rounded result: the first bin), '
                     f'else error / limit; the kernel fails a case right of 1</figcaption></figure>')
        closest = sorted(((value, r) for value, r in margins if r.status == "passed"), key=lambda p: -p[0])[:5]
        if closest:
            items = "".join(f'<li><code>{esc(r.name)}</code> {esc(metric_label(r))}</li>' for _, r in closest)
            parts.append(f'<p class="note">closest to their limit among the passing cases:</p><ol class="closest">'
                         f'{items}</ol>')
    else:
        parts.append('<p class="note">no case has a margin metric (nothing was compared with a golden)</p>')
    points = []
    for r in results:
        moved = bytes_moved(r)
        if r.kernel_ms is not None and moved and MIN_PLOTTED_MS <= r.kernel_ms < math.inf:
            points.append((float(moved), float(r.kernel_ms), _group(r.status)))
    if points:
        note = "host emulator times: not the NPU's" if info.runner == "emulator" else ""
        image = plots.time_against_bytes(points, note)
        parts.append(f'<figure><img class="plot" id="timing" alt="kernel time against bytes moved" src="{image}">'
                     f'<figcaption>kernel time of {plural(len(points), "case")} against bytes moved '
                     f'(2&middot;rows&middot;L&middot;itemsize(dy) + 2&middot;numel(cos)&middot;itemsize(cos)); '
                     f'dotted lines: equal bandwidth</figcaption></figure>')
    else:
        parts.append('<p class="note">no kernel times were recorded</p>')
    return "\n".join(parts) + "</section>"


def _meta(result: CaseResult) -> str:
    shown = cells(result)
    items = [("op", shown["op"]), ("dtypes", shown["dtypes"]), ("shape", shown["shape"]), ("cos", shown["cos"]),
             ("mode", shown["mode"]), ("slice", shown["slice"]), ("standard", shown["standard"]),
             ("metric", shown["metric"]), ("kernel", shown["kernel time"])]
    text = "".join(f"<span><i>{_h(name)}</i> {_h(value)}</span>" for name, value in items if value not in ("-", ""))
    if result.source:
        text += f"<span><i>file</i> {esc(result.source)}</span>"
    return f'<div class="meta">{text}</div>'


def _card(index: int, result: CaseResult, heatmap: str | None, capped: bool) -> str:
    """One case that is not fine: verdict, name, the bytes, its sentences, heatmap and worst elements."""
    background, _ = _colours(result.status)
    contract, sentences = _problems(result)
    worst = _worst_rows(result.details)
    contract_details = [str(d) for d in result.details if _CONTRACT.search(str(d)) and str(d) not in contract]
    other_details = [str(d) for d in result.details if not _WORST.match(str(d)) and str(d) not in contract_details
                     and not str(d).startswith("localisation: ") and str(d) not in result.message]
    parts = [f'<article class="card" id="case-{index}-card" data-status="{_h(result.status)}" '
             f'style="border-left-color:{background}"><h3>{_badge(result.status)} <a href="#case-{index}">'
             f'{esc(result.name)}</a></h3>', _meta(result)]
    if contract:
        lines = "".join(f"<li>{esc(line)}</li>" for line in contract + contract_details)
        parts.append(f'<div class="bytes"><b>the bytes</b><ul>{lines}</ul></div>')
    if sentences:
        parts.append(f'<p class="message">{esc("; ".join(sentences))}</p>')
    elif contract and result.metrics and (key_margin(result.metrics) or 0) <= 1:
        parts.append(f'<p class="note">the values in the slice are within their limit '
                     f'({esc(metric_label(result))}): only the bytes above are wrong</p>')
    elif not contract and result.message:
        parts.append(f'<p class="message">{esc(result.message)}</p>')
    for warning in result.warnings:
        parts.append(f'<p class="warning">warning: {esc(warning)}</p>')
    picture = []
    if heatmap:
        picture.append(f'<img class="heatmap" alt="error map of {esc(result.name)}" src="{heatmap}">')
    elif result.error_map and capped:
        parts.append(f'<p class="note">heatmap not drawn: only the first {MAX_HEATMAPS} cases with an error '
                     f'map get one</p>')
    if worst:
        limit_name = next((row[4] for row in worst if row[4]), "limit")
        rows = "".join(f"<tr><td>{_h(str(idx))}</td><td>{esc(exp)}</td><td>{esc(got)}</td><td>{esc(err)}</td>"
                       f"<td>{esc(lim)}</td></tr>" for idx, exp, got, err, _, lim in worst)
        picture.append(f'<table class="worst"><thead><tr><th>worst at (b, s, n, d)</th><th>expected</th><th>got'
                       f'</th><th>error</th><th>{esc(limit_name)}</th></tr></thead><tbody>{rows}</tbody></table>')
    if picture:
        parts.append(f'<div class="picture">{"".join(picture)}</div>')
    if other_details:
        parts.append('<pre class="details">' + "\n".join(esc(line) for line in other_details) + "</pre>")
    if result.artifacts:
        parts.append(f'<p class="note">arrays saved in <code>{esc(result.artifacts)}</code></p>')
    parts.append("</article>")
    return "".join(parts)


def _cards(results: list[CaseResult], plots, max_heatmaps: int) -> tuple[str, int]:
    """The section of cards; returns it and the number of heatmaps drawn."""
    explained = [(i, r) for i, r in enumerate(results) if r.status in EXPLAINED]
    if not explained:
        return '<section id="failures"><h2>Failures</h2><p class="note">every case is fine</p></section>', 0
    with_map = [i for i, r in explained if r.error_map and r.error_map.get("values")]
    drawn = set(with_map[:max_heatmaps])
    tally = Counter(r.status for _, r in explained)
    breakdown = ", ".join(f"{tally[status]} {status.replace('_', ' ')}" for status in EXPLAINED if tally[status])
    parts = [f'<section id="failures"><h2>Failures ({_h(breakdown)})</h2>']
    if len(with_map) > max_heatmaps:
        parts.append(f'<p class="banner cap">heatmaps are drawn for the first {max_heatmaps} of the '
                     f'{len(with_map)} cases with an error map; the others are listed with their messages</p>')
    if drawn:
        parts.append(f'<div class="legend maplegend"><p>heatmaps: the error map over (row, d) of the whole last axis '
                     f'of dy, each cell the largest error / limit of the elements it covers (one colour scale for '
                     f'every map; blue: within the limit, yellow to dark red: over it).</p>'
                     f'<img alt="colour scale" src="{plots.heatmap_legend()}">'
                     f'<p><span class="swatch slice"></span>the slice [start, end) '
                     f'<span class="swatch hatch"></span>outside the slice, not judged (must stay unchanged) '
                     f'<span class="swatch changed"></span>changed outside the slice '
                     f'<span class="swatch worst">&#x2716;</span>worst element</p></div>')
    heatmaps = plots.Heatmaps()
    not_run: dict[str, list[int]] = defaultdict(list)
    for index, result in explained:
        if result.status == "not_run":
            not_run[str(result.message)].append(index)
            continue
        heatmap = None
        if index in drawn:
            shape = tuple(int(v) for v in result.shape[:3]) if len(result.shape) == 4 else None
            heatmap = heatmaps.draw(result.error_map, shape, _worst_cell(result, _worst_rows(result.details)))
        parts.append(_card(index, result, heatmap, capped=index not in drawn))
    for message, members in not_run.items():
        names = ", ".join(f'<a href="#case-{i}">{esc(results[i].name)}</a>' for i in members[:20])
        more = f" and {len(members) - 20} more" if len(members) > 20 else ""
        parts.append(f'<article class="card" data-status="not_run" style="border-left-color:'
                     f'{_colours("not_run")[0]}"><h3>{_badge("not_run")} '
                     f'{plural(len(members), "case")}</h3><p class="message">{esc(message)}</p>'
                     f'<p class="note">{names}{more}</p></article>')
    return "\n".join(parts) + "</section>", len(drawn)


def _case_table(results: list[CaseResult], cell_of: dict[int, int]) -> str:
    headings = ("case", "op", "dtypes", "shape", "cos", "mode", "slice", "standard", "metric", "verdict",
                "kernel time")
    rows = []
    for index, result in enumerate(results):
        shown = cells(result)
        name = _h(shown["case"]).replace("_", "_<wbr>").replace(".", ".<wbr>")      # break long names there
        if result.status in EXPLAINED and result.status != "not_run":
            name = f'<a href="#case-{index}-card">{name}</a>'
        tds = [f'<td class="name">{name}</td>']
        tds += [f"<td>{_h(shown[h])}</td>" for h in headings[1:-2]]
        tds.append(f"<td>{_badge(result.status, shown['verdict'])}</td>")
        tds.append(f'<td class="num">{_h(shown["kernel time"])}</td>')
        warn = ' class="warned"' if result.warnings else ""
        title = f' title="{esc("; ".join(map(str, result.warnings)))}"' if result.warnings else ""
        rows.append(f'<tr id="case-{index}" data-status="{_h(result.status)}" data-cell="{cell_of.get(index, "")}" '
                    f'data-name="{esc(result.name).lower()}"{warn}{title}>{"".join(tds)}</tr>')
    head = "".join(f"<th>{_h(h)}</th>" for h in headings)
    return (f'<section id="cases"><h2>Every case ({len(results)})</h2><div class="filters">'
            f'<input id="search" type="search" placeholder="filter by name" aria-label="filter cases by name">'
            f'<span id="shown">{len(results)} of {plural(len(results), "case")} shown</span>'
            f'<button id="clear" hidden>show every case</button></div><div class="scroll">'
            f'<table class="cases"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
            f'</div></section>')


def render(results: list[CaseResult], info: RunInfo, *, max_heatmaps: int = MAX_HEATMAPS, cases=()) -> str:
    """The HTML page of the run (module docstring)."""
    require()
    try:
        from . import plots
    except ImportError as error:      # found but broken, or a stop signal raised inside an extension's start
        if raised_stop():             # (pybind11's says 'initialization failed'): the stop, not matplotlib's fault
            raise stop_exception(raised_stop()) from None
        raise PrmgError(f"the html report needs a working matplotlib ({error}): {INSTALL}", field="--report")
    cell_of: dict[int, int] = {}
    body = [_header(results, info, cases), _matrix(results, cell_of), _plots(results, info, plots)]
    cards, _ = _cards(results, plots, max_heatmaps)
    body += [cards, _case_table(results, cell_of)]
    title = _h(f"prmg report: {summary_line(results)}")
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; img-src data:; '
            f'style-src \'unsafe-inline\'; script-src \'unsafe-inline\'">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<title>{title}</title><style>{_STYLE}</style></head>\n<body><main>\n'
            + "\n".join(body) + f'\n<footer>prmg {_h(info.version or "")} &middot; {_h(info.started or "")}'
            f'</footer></main><script>{_SCRIPT}</script></body></html>\n')


_STYLE = """
:root{--fg:#1d2329;--muted:#66707a;--line:#dde2e7;--bg:#f6f7f9}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,
"DejaVu Sans",sans-serif}
main{max-width:1180px;margin:0 auto;padding:18px 22px 40px}
h1{font-size:22px;margin:0 0 2px}h2{font-size:17px;margin:26px 0 10px;border-bottom:1px solid var(--line);
padding-bottom:4px}h3{font-size:14px;margin:6px 0}
code,pre,.bytes,.worst,.meta,td{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace}
.line{font-size:16px;font-weight:600;margin:2px 0 8px}.coverage{color:var(--muted);margin:0 0 8px}\
.line.ok{color:#2c7a4b}.line.bad{color:#b3262f}
.banner{padding:7px 12px;border-radius:6px;margin:6px 0;font-weight:600}
.banner.fault{background:#fff1c2;border:1px solid #e6b400;color:#5c4300}
.banner.emulator{background:#e8eef5;border:1px solid #c4d2e1;color:#34495e;font-weight:500}
.banner.cap{background:#fff6e0;border:1px solid #f0c36d;color:#6b4a00;font-weight:500}
details.run summary{cursor:pointer;color:var(--muted)}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:6px 0 0;font-size:13px}
dt{color:var(--muted)}dd{margin:0;word-break:break-all}
.chips{display:flex;flex-wrap:wrap;gap:8px}
.chip{display:flex;flex-direction:column;align-items:center;min-width:86px;padding:7px 10px;border-radius:8px;
border:0;background:var(--c,#fff);color:var(--t,#1d2329);font:inherit;cursor:pointer}
.chip b{font-size:22px;line-height:1.1}.chip span{font-size:12px}
.chip.zero{opacity:.35}.chip.total,.chip.warn{background:#fff;border:1px solid var(--line);cursor:default}
.chip.warn{border-color:#e6b400}
.chip.active{outline:3px solid #1d2329;outline-offset:1px}
.legend{color:var(--muted);font-size:12.5px}#summary h3{margin-top:18px}
.badge{display:inline-block;padding:1px 7px;border-radius:4px;font-size:11.5px;font-weight:700;
font-family:system-ui,sans-serif;letter-spacing:.02em;margin-right:3px;white-space:nowrap}
.gap-badge{background:#fff;border:1px dashed #9aa3ad;color:var(--muted)}
.scroll{overflow-x:auto}
table{border-collapse:collapse;background:#fff}
.panels{display:flex;flex-wrap:wrap;gap:10px 22px;margin:6px 0 14px}
.matrix{align-self:flex-start}.matrix caption{text-align:left;font-weight:700;padding:2px 0 4px;font-size:13px}
.matrix th,.matrix td{border:1px solid #fff;padding:0;text-align:center;font-size:12px}
.matrix th{background:#eef1f4;padding:3px 5px;font-weight:600;font-size:11.5px}
.matrix th.pattern{max-width:46px;word-break:break-all;font-size:11px}
.matrix th.pair{text-align:right;white-space:nowrap}
.matrix td{min-width:36px;height:26px;font-weight:700;cursor:pointer}
.matrix td.gap{background:#fff;border:1px dashed #c3c8cf;color:#b0b6bd;cursor:default}
.matrix td.active{outline:3px solid #1d2329;outline-offset:-3px}
figure{margin:10px 0;background:#fff;border:1px solid var(--line);border-radius:8px;padding:8px;display:inline-block}
figcaption{color:var(--muted);font-size:12.5px;max-width:672px}
img{max-width:100%;height:auto;display:block}
.closest{margin:2px 0 0;font-size:13px}.note{color:var(--muted);font-size:13px;margin:4px 0}
.card{background:#fff;border:1px solid var(--line);border-left:6px solid;border-radius:6px;padding:8px 14px 10px;
margin:10px 0}
.card h3 a{color:inherit;text-decoration:none;word-break:break-all}
.meta{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12px;color:#3d4650}\
.meta i{color:var(--muted);font-style:normal}
.message{font-weight:600;margin:6px 0}
.warning{color:#7a5a00;margin:4px 0}
.bytes{background:#fff0f0;border:2px solid #c8313a;border-radius:6px;padding:6px 12px;margin:8px 0;color:#7d1016;
font-size:13.5px}.bytes b{font-family:system-ui,sans-serif;text-transform:uppercase;font-size:11.5px;
letter-spacing:.06em}.bytes ul{margin:3px 0 0;padding-left:18px}
.picture{display:flex;flex-wrap:wrap;align-items:flex-start;gap:6px 18px}.heatmap{margin:6px 0;flex:none}
.maplegend{display:flex;flex-wrap:wrap;align-items:center;gap:4px 16px;background:#fff;border:1px solid var(--line);
border-radius:6px;padding:6px 12px}.maplegend p{margin:0;flex:1 1 420px}.maplegend img{flex:none}
.swatch{display:inline-block;width:14px;height:12px;vertical-align:-1px;margin:0 4px 0 10px;border:1px solid #c3c8cf}
.swatch.slice{border:0;border-left:2px solid #111;border-right:2px solid #111;width:12px}
.swatch.hatch{background:repeating-linear-gradient(45deg,#eceef1 0 2px,#c3c8cf 2px 3px)}
.swatch.changed{background:#d01c8b;border-color:#d01c8b}
.swatch.worst{border:0;width:auto;color:#000;font-size:12px}
.worst{font-size:12px;margin:6px 0}.worst th,.worst td{border-bottom:1px solid var(--line);padding:2px 10px;
text-align:right}.worst th{font-family:system-ui,sans-serif;color:var(--muted);font-weight:600}
pre.details{font-size:12px;background:var(--bg);padding:6px 10px;border-radius:4px;white-space:pre-wrap;
word-break:break-all;margin:6px 0}
.filters{display:flex;gap:12px;align-items:center;margin:0 0 8px}
#search{padding:5px 8px;border:1px solid #c3c8cf;border-radius:5px;min-width:260px;font:inherit}
#shown{color:var(--muted);font-size:13px}
#clear{font:inherit;font-size:13px;padding:3px 10px;border:1px solid #c3c8cf;border-radius:5px;background:#fff;
cursor:pointer}
.cases{width:100%;font-size:12px}.cases th{position:sticky;top:0;background:#eef1f4;text-align:left;
padding:4px 8px;font-family:system-ui,sans-serif}
.cases td{border-top:1px solid var(--line);padding:3px 8px;white-space:nowrap}
.cases td.name{white-space:normal;overflow-wrap:anywhere;min-width:220px}.cases td.num{text-align:right}
.cases tr.warned td.name::after{content:" \\26a0";color:#c98a00}
.cases tr:target{background:#fff6cc}.card:target{box-shadow:0 0 0 3px #f0c36d}
footer{margin-top:30px;color:var(--muted);font-size:12px}
"""

_SCRIPT = """
(function () {
  var rows = Array.prototype.slice.call(document.querySelectorAll('table.cases tbody tr'));
  var state = {status: null, cell: null, text: ''};
  var shown = document.getElementById('shown'), clear = document.getElementById('clear');
  var search = document.getElementById('search');
  function mark(selector, attribute, value) {
    document.querySelectorAll(selector).forEach(function (el) {
      el.classList.toggle('active', value !== null && el.getAttribute(attribute) === value);
    });
  }
  function apply() {
    var count = 0;
    rows.forEach(function (row) {
      var show = (state.status === null || row.dataset.status === state.status) &&
        (state.cell === null || row.dataset.cell === state.cell) &&
        (!state.text || row.dataset.name.indexOf(state.text) >= 0);
      row.hidden = !show;
      if (show) { count += 1; }
    });
    shown.textContent = count + ' of ' + rows.length + (rows.length === 1 ? ' case' : ' cases') + ' shown';
    clear.hidden = state.status === null && state.cell === null && !state.text;
    mark('[data-filter-status]', 'data-filter-status', state.status);
    mark('td[data-cell]', 'data-cell', state.cell);
  }
  function reveal() { document.getElementById('cases').scrollIntoView(); }
  function toggles(selector, attribute, key, other) {   // a click sets state[key] (or clears it), and clears other
    document.querySelectorAll(selector).forEach(function (element) {
      element.addEventListener('click', function () {
        var value = element.getAttribute(attribute);
        state[key] = state[key] === value ? null : value;
        state[other] = null;
        apply();
        if (state[key] !== null) { reveal(); }
      });
    });
  }
  toggles('[data-filter-status]', 'data-filter-status', 'status', 'cell');
  toggles('td[data-cell]', 'data-cell', 'cell', 'status');
  search.addEventListener('input', function () { state.text = search.value.toLowerCase(); apply(); });
  clear.addEventListener('click', function () {
    state = {status: null, cell: null, text: ''};
    search.value = '';
    apply();
  });
  apply();
})();
"""
