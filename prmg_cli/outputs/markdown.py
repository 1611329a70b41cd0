"""The Markdown report: a heading, the run's header as a list, a GitHub table, a Failures section with
each diagnosis in a code block, and the summary line last."""

from __future__ import annotations

from tabulate import tabulate

from ..results import CaseResult, RunInfo, summary_line, visible
from .labels import diagnosis_lines, header_fields
from .table import cells

_HEADINGS = ("case", "op", "dtypes", "shape", "cos", "mode", "slice", "standard", "metric", "verdict",
             "kernel time")


def md_cell(text: str) -> str:
    """``text`` safe inside a Markdown table cell: control characters escaped, ``|`` escaped."""
    return visible(text).replace("|", "\\|")


def render(results: list[CaseResult], info: RunInfo) -> str:
    """The Markdown document of the run (module docstring)."""
    lines = ["# prmg report", ""]
    lines += [f"- **{name}**: {md_cell(value)}" for name, value in header_fields(info, results)]
    rows = [[md_cell(cells(r)[h]) for h in _HEADINGS] for r in results]
    lines += ["", tabulate(rows, headers=_HEADINGS, tablefmt="github", disable_numparse=True)]
    explained = [r for r in results if not r.info.ok or r.warnings]
    if explained:
        lines += ["", "## Failures and warnings"]
        for result in explained:
            lines += ["", f"### {md_cell(result.status.upper())} `{visible(result.name)}`", "",
                      "```", *[line.replace("```", "'''") for line in diagnosis_lines(result)], "```"]
    lines += ["", summary_line(results)]
    return "\n".join(lines)
