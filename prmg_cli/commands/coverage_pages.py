"""The pages of ``prmg coverage`` (``coverage.evaluate``'s per-operator coverage): a table for the screen, JSON,
Markdown and one self-contained HTML page."""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..cases.coverage import OpCoverage, percent, summary
from ..ops import OPERATORS
from ..reports.outputs.screen import cut_note, wrap
from ..results import visible, visible_html as esc

EXAMPLE_WIDTH = 24                               # characters of an example case name in the table
MIN_EXAMPLE, MIN_REASON = 12, 20                 # ... and the fewest of it and of a class's reason
_ROW_FIXED = 15                                  # a row's indent, count column and gaps


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[:max(width - 1, 0)] + "…"


def render_table(coverages: Sequence[OpCoverage], columns: int | None = None) -> str:
    """Per operator a header line, then per axis its name and one line per class: its name, how many cases cover it
    (``MISSING`` when none), one of them, and its reason, cut to ``columns`` (the command passes the screen's width,
    ``outputs.screen.width()``; None, as under ``--wide``: nothing is cut; the example gives way before the reason,
    down to ``MIN_EXAMPLE``, then the reason to what the width leaves); a line saying so when a reason was cut (the
    whole reasons are what a newcomer reads); the summary line (counting the missing classes, wrapped to ``columns``)
    last."""
    lines, cut = [], False
    for item in coverages:
        lines += [f"{item.op} ({OPERATORS[item.op].title}): {item.covered} of {item.total} classes covered "
                  f"({percent([item]):.1f}%)", ""]
        names = max(len(entry.regime.name) for entry in item.classes)
        examples = max(len(visible(entry.example or "-")) for entry in item.classes)
        if columns is not None:               # the example gives way first, so that a reason keeps MIN_REASON
            examples = max(min(examples, EXAMPLE_WIDTH, columns - names - _ROW_FIXED - MIN_REASON), MIN_EXAMPLE)
        axis = None
        for entry in item.classes:
            if entry.regime.axis != axis:
                axis = entry.regime.axis
                lines.append(axis)
            example = visible(entry.example or "-")
            line = (f"  {entry.regime.name:<{names}}  {entry.count if entry.count else 'MISSING':>7}  "
                    f"{example if columns is None else _fit(example, examples):<{examples}}  ")
            reason = entry.regime.reason if columns is None else _fit(entry.regime.reason,
                                                                       max(columns - len(line), 1))
            cut = cut or reason != entry.regime.reason
            lines.append(line + reason)
        lines.append("")
    last = summary(coverages, shown=0, where="marked MISSING above")
    lines += [cut_note("reasons")] * cut
    lines += [last] if columns is None else wrap(last, columns)
    return "\n".join(lines) + "\n"


def to_dict(coverages: Sequence[OpCoverage]) -> dict:
    """The coverage as plain values: totals, the missing classes, and every class of every operator."""
    return {
        "covered": sum(item.covered for item in coverages), "total": sum(item.total for item in coverages),
        "percent": round(percent(coverages), 2),
        "missing": [f"{item.op} {regime.key}" for item in coverages for regime in item.missing],
        "operators": [{"op": item.op, "title": OPERATORS[item.op].title, "covered": item.covered,
                       "total": item.total, "percent": round(percent([item]), 2),
                       "classes": [{"axis": entry.regime.axis, "class": entry.regime.name,
                                    "reason": entry.regime.reason, "cases": entry.count, "example": entry.example}
                                   for entry in item.classes]} for item in coverages],
    }


def render_markdown(coverages: Sequence[OpCoverage]) -> str:
    """A Markdown page: the summary line, then per operator a table of its classes."""
    def cell(text) -> str:
        return visible(text).replace("|", "\\|")

    lines = ["# Coverage", "", summary(coverages, shown=0), ""]
    for item in coverages:
        lines += [f"## {item.op} ({OPERATORS[item.op].title}): {item.covered} of {item.total} classes", "",
                  "| axis | class | cases | example | reason |", "|---|---|---|---|---|"]
        lines += [f"| {cell(entry.regime.axis)} | {cell(entry.regime.name)} | "
                  f"{entry.count if entry.count else '**missing**'} | {cell(entry.example or '-')} | "
                  f"{cell(entry.regime.reason)} |" for entry in item.classes]
        lines.append("")
    return "\n".join(lines)


_STYLE = ("body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1d1d1d}table{border-collapse:collapse;"
          "margin-bottom:28px}td,th{padding:3px 10px;border-bottom:1px solid #ddd;text-align:left}"
          "tr.missing td{background:#fbe3e4;color:#8a1c23;font-weight:600}td.n{text-align:right}")


def render_html(coverages: Sequence[OpCoverage]) -> str:
    """One self-contained page: the summary line, then per operator a table, missing classes in red."""
    parts = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
             "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'\">"
             f"<title>prmg coverage</title><style>{_STYLE}</style></head><body><h1>prmg coverage</h1>",
             f"<p id='coverage-line'>{esc(summary(coverages))}</p>"]
    for item in coverages:
        parts.append(f"<h2>{esc(item.op)} ({esc(OPERATORS[item.op].title)}): {item.covered} of {item.total} "
                     f"classes</h2><table><tr><th>axis</th><th>class</th><th>cases</th><th>example</th>"
                     f"<th>reason</th></tr>")
        for entry in item.classes:
            parts.append(f"<tr{'' if entry.count else ' class=missing'}><td>{esc(entry.regime.axis)}</td>"
                         f"<td>{esc(entry.regime.name)}</td><td class=n>{entry.count or 'missing'}</td>"
                         f"<td>{esc(entry.example or '-')}</td><td>{esc(entry.regime.reason)}</td></tr>")
        parts.append("</table>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


def render(coverages: Sequence[OpCoverage], report: str, columns: int | None = None) -> str:
    """The coverage report in format ``report`` (one of ``vocab.COVERAGE_FORMATS``)."""
    if report == "json":
        return json.dumps(to_dict(coverages), indent=2) + "\n"
    if report == "markdown":
        return render_markdown(coverages)
    if report == "html":
        return render_html(coverages)
    return render_table(coverages, columns)
