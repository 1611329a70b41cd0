"""``prmg bench``: time the kernel on the device, or with ``--host`` prmg's host side
(``bench_kernel.bench_command``)."""

from __future__ import annotations

from dataclasses import replace

from ..device.runners import runners_help, timed_runners
from ..judging.checks.determinism import MAX_REPEAT
from .shared_options import KEYWORD, OP_LIB, RUNNER, SUPPORTED_MODES
from .options import Option, request_type

OPTIONS = (
    Option("paths", (), None, "Case files or folders to time on the device.", "[PATH]...", list, argument=True,
           path=True),
    Option("host", ("--host",), False, "Time the host golden against dy.copy() and a naive version, side by side, "
           "whole prmg run processes, and a large case's pipeline with the inputs of each generator "
           "(philox4x32, philox, pcg64).", kind=bool),
    replace(RUNNER, help=runners_help(timed_runners()) + " Graph mode gives no kernel time of its own."),
    OP_LIB, SUPPORTED_MODES,
    Option("device", ("--device",), 0, "The device to time on.", "N", int),
    Option("warmup", ("--warmup",), 3, f"Untimed launches before measuring, 0 to {MAX_REPEAT}.", "N", int),
    Option("repeat", ("--repeat",), 10, f"Timed launches per case, 1 to {MAX_REPEAT}.", "N", int),
    Option("peak_gbps", ("--peak-gbps",), None, "Peak memory bandwidth of the device (GB/s, > 0); default: the "
           "--soc entry.", "GBPS", float),
    Option("soc", ("--soc",), None, "Device kind for the peak bandwidth table (Ascend950PR 1600 GB/s, Ascend950DT "
           "4000 GB/s; default: what aclrtGetSocName says).", "NAME"),
    Option("baseline", ("--baseline",), None, "A bench JSON report to compare with: exit 1 when a case got slower "
           "beyond its noise.", "FILE", path=True),
    Option("timeout", ("--timeout",), 600.0, "Limit for the whole measurement (0 = none).", "SECONDS", float),
    KEYWORD,
    Option("report", ("--report",), "table", "table or json.", "FORMAT"),
)

Request = request_type("BenchRequest", OPTIONS, "The options of ``prmg bench``.")

EPILOG = """\b
Examples:
  prmg bench --host
  prmg bench cases/smoke.yaml --repeat 20 --report json > base.json
  prmg bench cases/smoke.yaml --repeat 20 --baseline base.json
"""


def main(request) -> int:
    """Time the kernel with ACL events (min/median, bytes moved, GB/s, share of peak), or with --host prmg's host side.

    --host times the golden against dy.copy() and a naive version, each stage of a case's pipeline (inputs,
    upload, kernel, download, golden, judge) and whole prmg run processes. Exit 1 when --baseline shows a slowdown,
    5 when no case is selected to time.
    """
    from .bench_kernel import bench_command
    from ..errors import PrmgError
    from ..writes import write_stdout

    given = ["case files" if option.argument else option.flags[0] for option in OPTIONS if option.name not in
             ("host", "report") and getattr(request, option.name) not in (None, (), option.default)]
    if request.host and given:              # it ignored them: --host ... cases.yaml timed no case of the file
        raise PrmgError(f"--host times prmg's own host workloads: it takes no {', '.join(given)}")
    text, code = bench_command(request)
    if text:
        write_stdout(text)
    return code
