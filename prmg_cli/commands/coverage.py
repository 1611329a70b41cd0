"""``prmg coverage``: which regime classes the cases cover (``coverage.evaluate``, pages by ``coverage_pages``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from ..errors import PrmgError, suggest
from ..ops import OPERATORS
from ..results import ExitCode
from ..vocab import COVERAGE_FORMATS
from .shared_options import PATHS, WIDE
from .options import Option, request_type

OPTIONS = (
    PATHS,
    Option("report", ("--report",), COVERAGE_FORMATS[0], f"{', '.join(COVERAGE_FORMATS)}.", "FORMAT"),
    Option("output", ("-o", "--output"), None, "Write the report to FILE (standard output gets its summary line; - or "
           "/dev/stdout: the report to standard output).", "FILE", path=True, output=True),
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
    0, or 1 when --fail-under is not met, 2 for unreadable cases, 5 when no case is selected.
    """

    from ..reports.outputs.screen import say, width
    from ..writes import write_stdout

    text, code = coverage_command(list(request.paths), request.report, request.output, request.fail_under,
                                  request.op, None if request.wide else width())
    if code == ExitCode.NO_CASES:
        say("no cases selected (check --op)")
    else:
        write_stdout(text, document=request.report != COVERAGE_FORMATS[0] and request.output is None)
    return code


def coverage_command(paths: Sequence[str], report: str = COVERAGE_FORMATS[0], output: str | None = None,
                     fail_under: float | None = None, ops: Sequence[str] = (), columns: int | None = None
                     ) -> tuple[str, int]:
    """``prmg coverage``: (text for standard output, exit code). The report goes to ``output`` when given;
    exit 1 when ``fail_under`` is given and the covered share (of the operators reported) is below it."""
    from ..cases.loader import input_files, load_cases, read_as_case
    from ..cases.coverage import evaluate, percent, summary
    from .coverage_pages import render
    from ..files import write_text
    from ..writes import Output, check_outputs, wrote

    if report not in COVERAGE_FORMATS:
        raise PrmgError(f"--report: unknown format {report!r}{suggest(report, COVERAGE_FORMATS)} (valid: "
                        f"{', '.join(COVERAGE_FORMATS)})")
    if fail_under is not None and not (math.isfinite(fail_under) and 0 <= fail_under <= 100):
        raise PrmgError(f"--fail-under must be a percentage from 0 to 100, got {fail_under!r}")
    unknown = [op for op in ops if op not in OPERATORS]
    if unknown:
        raise PrmgError(f"--op: unknown operator {unknown[0]!r}{suggest(unknown[0], OPERATORS)} (valid: "
                        f"{', '.join(OPERATORS)})")
    loaded = load_cases(paths)
    if output is not None:
        check_outputs([Output(output)], input_files(paths, loaded), read_as_case(paths))
    cases = [case for case in loaded if not ops or case.op in ops]
    if not cases:
        return "", int(ExitCode.NO_CASES)
    coverages = evaluate(cases)
    text = render(coverages, report, columns)
    share = percent(coverages)
    code = ExitCode.FAILED if fail_under is not None and share < fail_under else ExitCode.OK
    if output is not None:
        write_text(output, text)
        text = wrote([output], summary(coverages)) + "\n"
    if code:
        text += f"coverage {share:.1f}% is under --fail-under {fail_under:g}%\n"
    return text, int(code)
