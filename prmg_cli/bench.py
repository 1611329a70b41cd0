"""``prmg bench``: kernel timing with ACL events on the device, or the host-side benchmark.

Bytes moved by one launch (the memory traffic the kernel cannot avoid):
``2 * B*S*N*L * itemsize(dy)`` (the dy slice read and written) ``+ 2 * numel(cos) * itemsize(cos)``
(cos and sin read once per distinct row). Achieved GB/s = bytes / median time.
"""

from __future__ import annotations

import json
import multiprocessing
import statistics
import time
from typing import Sequence

from . import __version__, execute, report
from .cases import Case
from .dtypes import lookup
from .errors import PrmgError

# Peak memory bandwidth per device kind (GB/s); extend as devices appear, or pass --peak-gbps.
PEAK_GBPS = {
    "Ascend950PR": 1600.0,
    "Ascend950DT": 4000.0,
}
DEFAULT_SOC = "Ascend950PR"


def bytes_moved(case: Case) -> int:
    """``2*rows*L*itemsize(dy) + 2*numel(cos)*itemsize(cos)`` for one launch of ``case``."""
    start, end = case.partial_slice
    rows = execute.element_count(case.shape[:-1])
    cos_items = execute.element_count(case.cos_shape)
    return (2 * rows * (end - start) * lookup(case.dtype).numpy.itemsize
            + 2 * cos_items * lookup(case.cos_dtype).numpy.itemsize)


def time_case(session, case: Case, warmup: int, repeat: int) -> list[float]:
    """Kernel times (ms, from ACL events) of ``repeat`` launches after ``warmup`` untimed ones."""
    from .inputs import make_inputs

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


def _bench_worker(settings, device, cases, warmup, repeat, queue) -> None:
    from .acl import AclSession

    rows = []
    try:
        with AclSession(settings.toolkit, device) as session:
            for case in cases:
                times = time_case(session, case, warmup, repeat)
                rows.append((case.name, times))
        queue.put(("ok", rows))
    except Exception as exc:
        queue.put(("error", str(exc)))


def bench_cases(cases: Sequence[Case], settings, device: int, warmup: int, repeat: int,
                peak_gbps: float | None) -> list[dict]:
    """Time every case in a child process (the libraries never load into this one); one row per case."""
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_bench_worker, args=(settings, device, list(cases), warmup, repeat, queue))
    child.start()
    kind, payload = queue.get()
    child.join()
    if kind != "ok":
        raise PrmgError(f"bench failed: {payload}")
    rows = []
    for case, (_name, times) in zip(cases, payload):
        moved = bytes_moved(case)
        median = statistics.median(times) if times else None
        gbps = moved / (median * 1e-3) / 1e9 if median else None
        rows.append({"name": case.name, "shape": list(case.shape), "dtype": case.dtype,
                     "cos_dtype": case.cos_dtype, "min_ms": min(times) if times else None,
                     "median_ms": median, "bytes": moved, "gbps": gbps,
                     "peak_share": gbps / peak_gbps if gbps and peak_gbps else None})
    return rows


def pipeline_cost(count: int = 300) -> dict:
    """Average wall time per small case of ``count`` cases through the emulator pipeline, start-up included."""
    from .cases import Case
    from .suite import runner_settings

    started = time.perf_counter()
    settings = runner_settings("emulator", None, frozenset({1}))
    cases = [Case(name=f"pipe{i}", source="bench", shape=(1, 2, 2, 64), cos_shape=(1, 1, 1, 32),
                  sin_shape=(1, 1, 1, 32), partial_slice=(8, 40), seed=i) for i in range(count)]
    with execute.Executor(settings, (0,)) as executor:
        results = executor.run(cases)
    elapsed = time.perf_counter() - started
    failed = sum(1 for r in results if r is None or r.status != "passed")
    return {"cases": count, "total_s": elapsed, "per_case_ms": elapsed / count * 1e3, "not_passed": failed}


def bench_command(*, paths, host, runner, op_lib, supported_modes, device, warmup, repeat, peak_gbps,
                  keyword, report_format: str) -> str:
    """``prmg bench``: the text to print."""
    if report_format not in ("table", "json"):
        raise PrmgError(f"--report must be table or json for bench, got {report_format!r}")
    if host:
        from .hostbench import format_host_bench, run_host_bench

        rows = run_host_bench()
        pipeline = pipeline_cost()
        if report_format == "json":
            return json.dumps({"host": rows, "pipeline": pipeline}, indent=2)
        return (format_host_bench(rows) + f"\npipeline: {pipeline['cases']} small cases through the emulator "
                f"in {pipeline['total_s']:.2f} s = {pipeline['per_case_ms']:.1f} ms per case "
                f"(start-up included; {pipeline['not_passed']} not passed)")
    if not paths:
        raise PrmgError("give case files to time, or --host")
    from .suite import load_selected, run_info, runner_settings, target_modes

    if warmup < 0 or repeat < 1:
        raise PrmgError("--warmup must be >= 0 and --repeat >= 1")
    modes = target_modes(supported_modes)
    cases = [c for c in load_selected(paths, modes, keyword) if c.expect.success
             and c.rotary_mode in modes]
    settings = runner_settings(runner, op_lib, modes)
    peak = peak_gbps if peak_gbps else (PEAK_GBPS[DEFAULT_SOC] if settings.toolkit.kind == "aclnn" else None)
    rows = bench_cases(cases, settings, device, warmup, repeat, peak)
    if report_format == "json":
        return json.dumps({"runner": settings.toolkit.kind, "peak_gbps": peak, "version": __version__,
                           "cases": rows}, indent=2)
    return report.format_bench(rows, run_info(settings, (device,)))
