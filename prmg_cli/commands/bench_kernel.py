"""``prmg bench``: kernel timing with ACL events on the device, or the host-side benchmark.

Achieved GB/s = the bytes one launch moves (``labels.bytes_moved``) / the median time.
"""

from __future__ import annotations

import json
import math
import os
import statistics
from typing import Sequence

from .. import __version__
from ..case import Case
from ..device import execute
from ..errors import PrmgError
from ..reports.outputs.labels import bytes_moved, dtype_label, format_header, shape_label
from ..reports.outputs.screen import say
from ..reports.outputs.table import SHORTEN, fit
from ..results import ExitCode, RunInfo

# Peak memory bandwidth per device kind (GB/s); extend as devices appear, or pass --peak-gbps.
PEAK_GBPS = {
    "Ascend950PR": 1600.0,
    "Ascend950DT": 4000.0,
}
DEFAULT_SOC = "Ascend950PR"


def time_case(session, case: Case, warmup: int, repeat: int) -> list[float]:
    """Kernel times (ms, from ACL events) of ``repeat`` launches after ``warmup`` untimed ones."""
    from ..inputs.seeded import make_inputs

    inputs = make_inputs(case)
    times = []
    for attempt in range(warmup + repeat):
        outcome = session.launch(case, inputs)
        if outcome.status != 0:
            raise PrmgError(f"the operator returned {outcome.status}: {outcome.error_message}",
                            case=case.name)
        if attempt >= warmup and outcome.kernel_ms is not None:
            times.append(outcome.kernel_ms)
    return times


def _time_cases(settings, device: int, cases: Sequence[Case], warmup: int, repeat: int):
    """The SoC name and the kernel times of every case, in one session (run in a child process)."""
    from ..device.acl import AclSession

    with AclSession(settings.toolkit, device) as session:
        return session.soc_name(), [time_case(session, case, warmup, repeat) for case in cases]


def soc_entry(soc: str) -> str | None:
    """The ``PEAK_GBPS`` entry a SoC name (``aclrtGetSocName``, e.g. ``Ascend950PR_9372``) belongs to."""
    return next((name for name in sorted(PEAK_GBPS, key=len, reverse=True) if soc.startswith(name)), None)


def bench_cases(cases: Sequence[Case], settings, device: int, warmup: int, repeat: int,
                peak_gbps: float | None, soc: str | None = None,
                timeout: float | None = None) -> tuple[str, list[dict]]:
    """Time every case in a child process (the libraries never load into this one): the SoC the peak
    bandwidth was taken for and one row per case (``times_ms`` holds every timed launch)."""
    device_soc, timings = execute.call_in_child(_time_cases, settings, device, list(cases), warmup, repeat,
                                                timeout=timeout)
    soc = soc or soc_entry(device_soc) or DEFAULT_SOC
    peak_gbps = peak_for(soc, peak_gbps, settings.toolkit.kind)
    rows = []
    for case, times in zip(cases, timings):
        moved = bytes_moved(case)
        median = statistics.median(times) if times else None
        gbps = moved / (median * 1e-3) / 1e9 if median else None
        rows.append({"name": case.name, "shape": list(case.shape), "dtype": case.dtype,
                     "cos_dtype": case.cos_dtype, "min_ms": min(times) if times else None,
                     "median_ms": median, "bytes": moved, "gbps": gbps, "times_ms": list(times),
                     "peak_share": gbps / peak_gbps if gbps and peak_gbps else None})
    return device_soc, rows


def peak_for(soc: str, peak_gbps: float | None, runner_kind: str) -> float | None:
    """The peak memory bandwidth to judge against: ``--peak-gbps``, else the table's entry for ``--soc``
    (none on the emulator, whose timings are host timings)."""
    if peak_gbps:
        return peak_gbps
    if soc not in PEAK_GBPS:
        raise PrmgError(f"--soc {soc!r} is not in the peak bandwidth table ({', '.join(PEAK_GBPS)}); "
                        f"give --peak-gbps")
    return PEAK_GBPS[soc] if runner_kind == "aclnn" else None


def bench_command(request) -> tuple[str, int]:
    """``prmg bench`` (``commands.bench.Request``): the text to print and the exit code (1 when ``--baseline``
    shows a slowdown)."""
    import math

    from .run import Request as run_request
    from ..judging.checks.determinism import MAX_REPEAT
    from .suite import (MAX_DEVICE_ID, check_bounds, check_device_options, check_timeout, load_selected, settings_for,
                        target_modes)
    from ..reports.run_record import run_info
    from ..device.runners import timed_runners

    paths, report_format, peak_gbps, soc = list(request.paths), request.report, request.peak_gbps, request.soc
    warmup, repeat, device, baseline = request.warmup, request.repeat, request.device, request.baseline
    timeout = check_timeout(request.timeout)
    if report_format not in ("table", "json"):
        raise PrmgError(f"--report must be table or json for bench, got {report_format!r}")
    if peak_gbps is not None and not (math.isfinite(peak_gbps) and peak_gbps > 0):
        raise PrmgError(f"--peak-gbps must be a finite number > 0, got {peak_gbps!r}")
    if request.host:
        from .bench_host import (format_host_bench, format_judge_paths, format_pipeline_bench,
                                 format_whole_process_bench, run_host_bench, run_judge_paths_bench, run_pipeline_bench,
                                 run_whole_process_bench)

        rows = run_host_bench()
        large = run_pipeline_bench()
        judge_paths = run_judge_paths_bench()
        small = run_whole_process_bench()
        if report_format == "json":
            return json.dumps({"host": rows, "whole_process": small, "large_pipeline": large,
                               "judge_paths": judge_paths}, indent=2), 0
        return (format_host_bench(rows) + "\n\n" + format_whole_process_bench(small) + "\n\n"
                + format_pipeline_bench(large, small) + "\n\n" + format_judge_paths(judge_paths)), 0
    if not paths:
        raise PrmgError("give case files to time, or --host")
    check_bounds("--warmup", warmup, 0, MAX_REPEAT)
    check_bounds("--repeat", repeat, 1, MAX_REPEAT)
    check_bounds("--device", device, 0, MAX_DEVICE_ID)
    check_device_options(request.runner, request.op_lib)            # before the cases are read
    if request.runner not in timed_runners():
        raise PrmgError(f"--runner {request.runner}: prmg bench times the aclnn launch between ACL events; graph "
                        f"mode gives no kernel time of its own (use {', '.join(timed_runners())})")
    if soc is not None and soc not in PEAK_GBPS and not peak_gbps:
        raise PrmgError(f"--soc {soc!r} is not in the peak bandwidth table ({', '.join(PEAK_GBPS)}); give --peak-gbps")
    from ..reports.compare import compare_bench, read_bench

    baseline_rows = read_bench(baseline) if baseline else None          # refused before any case is read
    modes = target_modes(request.supported_modes)
    cases = [c for c in load_selected(paths, modes, request.keyword) if c.expect.success
             and c.rotary_mode in modes]
    if not cases:
        say("no cases selected to time (check -k; cases that expect an error or a mode the target "
            "lacks are not timed)")
        return "", ExitCode.NO_CASES
    from ..device.runners import select

    toolkit = select(request.runner, request.op_lib, os.environ, modes)
    settings = settings_for(run_request(paths=(), runner=request.runner, op_lib=request.op_lib,
                                        supported_modes=request.supported_modes), toolkit=toolkit)
    device_soc, rows = bench_cases(cases, settings, device, warmup, repeat, peak_gbps, soc, timeout)
    verdict, code = [], 0
    if baseline:
        verdict, code = compare_bench(baseline, baseline_rows, rows, judged=settings.toolkit.kind == "aclnn")
    if report_format == "json":
        return json.dumps({"runner": settings.toolkit.kind, "soc": device_soc, "version": __version__,
                           "cases": rows, "baseline": verdict}, indent=2), code
    return "\n".join([format_bench(rows, run_info(settings, (device,), device_soc))] + verdict), code


BENCH_EMULATOR_NOTE = "host timings (emulator), not NPU"


def _fixed(value, digits: int, scale: float = 1.0) -> str:
    """``value * scale`` with ``digits`` decimals, ``-`` for a missing or non-finite value."""
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value * scale:.{digits}f}"


# What the bench table gives up, in this order, until it fits the width (``table.fit``): columns by heading, then
# the case names are shortened.
BENCH_FIT_ORDER = ("% of peak", "bytes moved (MB)", "shape", "min ms", SHORTEN, "dtypes")


def format_bench(rows: list[dict], info: RunInfo, width: int | None = None) -> str:
    """The ``prmg bench`` table: per case min and median kernel time, bytes moved (MB = 1e6 bytes),
    achieved GB/s and ``peak_share`` (a fraction of the device's peak bandwidth) as a percentage, the numbers
    right-aligned, fitted to ``width`` columns (default ``screen.width()``) by ``BENCH_FIT_ORDER``.
    Emulator runs are labelled as host timings."""
    cells = [{"case": row["name"], "shape": shape_label(row.get("shape")),
              "dtypes": dtype_label(row.get("dtype", ""), row.get("cos_dtype", "")),
              "min ms": _fixed(row.get("min_ms"), 3), "median ms": _fixed(row.get("median_ms"), 3),
              "bytes moved (MB)": _fixed(row.get("bytes"), 2, 1e-6), "GB/s": _fixed(row.get("gbps"), 2),
              "% of peak": _fixed(row.get("peak_share"), 1, 100.0)} for row in rows]
    numbers = ("min ms", "median ms", "bytes moved (MB)", "GB/s", "% of peak")
    sizes = {heading: max([len(heading)] + [len(row[heading]) for row in cells]) for heading in numbers}
    cells = [{**row, **{heading: row[heading].rjust(sizes[heading]) for heading in numbers}} for row in cells]
    table = "\n".join(fit(cells, order=BENCH_FIT_ORDER, width=width))
    lines = [format_header(info, width=width), "", table]
    if info.runner == "emulator":
        lines += ["", BENCH_EMULATOR_NOTE]
    return "\n".join(lines)
