"""The Markdown report: a heading, the run's header as a list, a GitHub table, a Failures section with
each diagnosis in a code block, and the summary line last.

Text from files (names, runner, dtypes, messages, details) is shown as text, never acted on: made visible
(``results.visible``), then escaped for Markdown (``md_escape``) in cells, list items and headings; the
diagnosis lines sit in a fenced code block that no line of theirs can close."""

from __future__ import annotations

import html
import re

from tabulate import tabulate

from ...results import CaseResult, RunInfo, run_warnings, summary_line, visible
from .labels import device_line, diagnosis_lines, header_fields
from .table import cells

# What Markdown acts on in a line: backslash escapes, code, emphasis, links and images, a heading's closing
# #s, strikethrough, table cell borders; and an underscore that is not between two letters or digits.
_ACTIVE = re.compile(r"[\\`*\[\]#!|~]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")


def md_escape(text: str) -> str:
    """``text`` (already ``visible``: one line, no control character) as Markdown that shows it as it is:
    ``& < >`` as HTML entities (no raw HTML), and a backslash before each character of ``_ACTIVE``."""
    return _ACTIVE.sub(lambda match: "\\" + match.group(), html.escape(text, quote=False))


def render(results: list[CaseResult], info: RunInfo) -> str:
    """The Markdown document of the run (module docstring)."""
    lines = ["# prmg report", ""]
    lines += [f"- **{md_escape(name)}**: {md_escape(value)}" for name, value in header_fields(info, results)]
    rows = [{heading: md_escape(text) for heading, text in cells(result).items()} for result in results]
    lines += ["", tabulate(rows, headers="keys", tablefmt="github", disable_numparse=True)]
    explained = [r for r in results if not r.info.ok or r.warnings]
    if explained:
        lines += ["", "## Failures and warnings"]
        for result in explained:
            lines += ["", f"### {md_escape(result.status.upper())} {md_escape(visible(result.name))}", "",
                      "```", *[line.replace("```", "'''") for line in diagnosis_lines(result)], "```"]
    lines += [f"\n**warning**: {md_escape(warning)}" for warning in run_warnings(results)]
    concentrated = device_line(results)
    lines += (["", f"**failures by device**: {md_escape(concentrated)}"] if concentrated else []) + \
        ["", summary_line(results)]
    return "\n".join(lines)
