"""``prmg compare``: two runs' results side by side (``compare.compare_runs``, ``compare.render``)."""

from __future__ import annotations


from ..reports.compare import ORDER
from .options import REQUIRED, Option, request_type
from .shared_options import WIDE

OPTIONS = (
    Option("run_a", (), REQUIRED, "The results file of the first run (--results).", "A.jsonl", argument=True,
           path=True),
    Option("run_b", (), REQUIRED, "The results file of the second run.", "B.jsonl", argument=True, path=True),
    Option("report", ("--report",), "table", "table, json or markdown, to FILE or standard output (no FILE, or "
           "-; standard output then gets the summary line).", "FORMAT[:FILE]"),
    Option("drift", ("--drift",), 0.25, "Precision drift: the standard's drift metric (beyond_rounding under "
           "default; each standard names its own) rising by more than this fraction (and --floor) is a "
           "regression.", "FRACTION", float),
    Option("floor", ("--floor",), 0.05, "The absolute part of the drift limit.", "VALUE", float),
    Option("time_floor", ("--time-floor",), 0.05, "Kernel time: a rise beyond 3 x the measured spread plus this "
           "fraction of the median is a regression (with fewer than 3 timings per case, only a rise past 3x and "
           "1 ms).", "FRACTION", float),
    Option("allow_changed", ("--allow-changed",), False, "A case whose definition (fingerprint) or judging settings "
           "(standard, --standard, --strict, checks, --no-golden, --each-device and its chips, the standard's "
           "limits, prmg's judging code) differ between A and B, or that the emulator judged in one run and a "
           "toolkit in the other, is not comparable, a regression: with this flag it is listed, not counted, and "
           "compared as any other.", kind=bool),
    Option("wide", WIDE.flags, False, "Every column, whole case names and whole details in the table.", kind=bool),
)

Request = request_type("CompareRequest", OPTIONS, "The options of ``prmg compare``.")

EPILOG = """\b
Example:
  prmg compare before.jsonl after.jsonl --report markdown:changes.md
"""


def main(request) -> int:
    """Compare two runs."""
    import math

    from ..errors import PrmgError
    from ..files import write_text
    from ..reports.compare import compare_runs, render, summary_line
    from ..writes import Output, check_distinct, check_outputs, output_file, write_stdout, wrote

    for option in OPTIONS:
        value = getattr(request, option.name)
        if option.kind is float and not (math.isfinite(value) and value >= 0):
            raise PrmgError(f"{option.flags[0]} must be a finite number >= 0, got {value!r}")
    check_distinct([(request.run_a, "run A's results file"), (request.run_b, "run B's results file")])
    fmt, sep, target = request.report.partition(":")      # as run's and report's --report (-: standard output)
    if sep and not target:
        raise PrmgError(f"--report {request.report!r}: no file after ':' (--report {fmt}:FILE, or {fmt}:- for "
                        f"standard output)")
    path = output_file(target) if sep else None
    if path is not None:
        check_outputs([Output(path, "comparison")], {request.run_a: "run A's results file",
                                                     request.run_b: "run B's results file"})
    comparison = compare_runs(request.run_a, request.run_b, fmt, drift=request.drift, floor=request.floor,
                              time_floor=request.time_floor, allow_changed=request.allow_changed)
    text = render(comparison, fmt, wide=request.wide)
    if path is None:
        write_stdout(text, document=fmt != "table")
    else:
        write_text(path, text + "\n")
        write_stdout(wrote([path], summary_line(comparison)))
    return 1 if comparison.regressions else 0


main.__doc__ = f"""Compare two runs: {ORDER}, in that order.

    Exit 1 on any regression (a new failure, a case not comparable, a verdict lost, a precision or kernel-time drift,
    a case only in A), 0 otherwise.
    """
