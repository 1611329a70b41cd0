"""``prmg coverage``: which regime classes the cases cover (``coverage.coverage_command``)."""

from __future__ import annotations

from pathlib import Path

from ..ops import OPERATORS
from ..options import Option, request_type
from .common import PATHS, WIDE

OPTIONS = (
    PATHS,
    Option("report", ("--report",), "table", "table, json, markdown or html.", "FORMAT"),
    Option("output", ("-o", "--output"), None, "Write the report to FILE (standard output gets its summary line).",
           "FILE", Path),
    Option("fail_under", ("--fail-under",), None, "Exit 1 when fewer than PERCENT of the classes are covered.",
           "PERCENT", float),
    Option("op", ("--op",), (), f"Only this operator's cases and classes ({', '.join(OPERATORS)}; repeatable).",
           "NAME", list),
    Option("wide", WIDE.flags, False, "Whole case names and reasons in the table.", kind=bool),
)

Request = request_type("CoverageRequest", OPTIONS, "The options of ``prmg coverage``.")

EPILOG = """\b
Examples:
  prmg coverage cases/
  prmg coverage cases/smoke.yaml --op grad --fail-under 30
  prmg coverage cases/ --report json -o coverage.json
"""


def main(request) -> int:
    """Show which regime classes the cases in PATH cover, per operator, and which none does.

    A class is a regime where a kernel's code changes behaviour (a dtype pair, a layout, a count past 8, 12 or
    16 bits, the core split, 32-byte alignment, a special value inside or outside the slice, each rule of
    the constraint model...), with a one-line reason. Each is covered by N cases (one named) or MISSING. Exit
    0, or 1 when --fail-under is not met, 2 for unreadable cases.
    """
    from ..coverage import coverage_command
    from ..outputs.screen import width
    from ..writes import write_stdout

    text, code = coverage_command(list(request.paths), request.report, request.output, request.fail_under,
                                  request.op, None if request.wide else width())
    write_stdout(text)
    return code
