"""Host benchmark of the golden (issue 7): ``dy.copy()`` vs the golden vs a naive gather version.

All three run side by side in one process on the same float32 dy of shape (4, 1024, 32, 128) with a
96-wide slice [16, 112) and cos/sin of shape (1, 1024, 1, 96) (interleave). ``dy.copy()`` is the
memory-bound floor; the naive version is what a user writes first (fancy-index gathers with
``np.arange(0, L, 2)`` on float32 copies). The golden should take at most 3x the copy and at most
half the naive time. The golden also runs on one thread, to show what its threads add on this machine.
"""

from __future__ import annotations

import os
import platform
import time
import tracemalloc

import ml_dtypes
import numpy as np
from tabulate import tabulate

from prmg_cli.reference import INTERLEAVE, inplace_partial_rotary_mul_grad

SHAPE = (4, 1024, 32, 128)
TABLE_SHAPE = (1, 1024, 1, 96)
PARTIAL_SLICE = (16, 112)
GOLDEN = "golden (interleave)"
# upper bounds for the golden's row; its peak allocation includes the output (1 x dy), so 3 = 2 x dy extra
TARGETS = {"vs_copy": 3.0, "vs_naive": 0.5, "peak_mem_x_dy": 3.0}


def naive_interleave_grad(dy: np.ndarray, cos: np.ndarray, sin: np.ndarray, partial_slice) -> np.ndarray:
    """Interleave ``dx[2k] = c[2k]*g[2k] + s[2k+1]*g[2k+1]``, ``dx[2k+1] = c[2k+1]*g[2k+1] - s[2k]*g[2k]``
    the way one first writes it: float32 copies and fancy-index gathers."""
    start, end = partial_slice
    length = end - start
    dx = dy.copy()
    g = dy[..., start:end].astype(np.float32)
    c = cos.astype(np.float32)
    s = sin.astype(np.float32)
    even = np.arange(0, length, 2)
    odd = even + 1
    result = np.empty(dy.shape[:3] + (length,), np.float32)
    result[..., even] = c[..., even] * g[..., even] + s[..., odd] * g[..., odd]
    result[..., odd] = c[..., odd] * g[..., odd] - s[..., even] * g[..., even]
    dx[..., start:end] = result
    return dx


def _peak_allocation(function) -> int:
    """Peak bytes numpy allocates while ``function`` runs (numpy reports to tracemalloc)."""
    tracemalloc.start()
    try:
        function()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def run_host_bench(repeat: int = 9) -> list[dict]:
    """Median/min wall times (ms) of copy, golden (default threads and one) and naive, measured in turn
    ``repeat`` times.

    Each row: ``name``, ``median_ms``, ``min_ms``, ``vs_copy`` and ``vs_naive`` (ratios of medians),
    ``peak_mem_x_dy`` (peak allocation during one call / dy's bytes).
    """
    rng = np.random.Generator(np.random.PCG64(7))
    dy = rng.uniform(-1.0, 1.0, SHAPE).astype(np.float32)
    cos = rng.uniform(-1.0, 1.0, TABLE_SHAPE).astype(np.float32)
    sin = rng.uniform(-1.0, 1.0, TABLE_SHAPE).astype(np.float32)
    contenders = {
        "dy.copy()": lambda: dy.copy(),
        GOLDEN: lambda: inplace_partial_rotary_mul_grad(dy, cos, sin, INTERLEAVE, PARTIAL_SLICE),
        "golden, 1 thread": lambda: inplace_partial_rotary_mul_grad(dy, cos, sin, INTERLEAVE, PARTIAL_SLICE,
                                                                    workers=1),
        "naive gather": lambda: naive_interleave_grad(dy, cos, sin, PARTIAL_SLICE),
    }
    times = {name: [] for name in contenders}
    for function in contenders.values():
        function()                                   # warm-up: page in code and allocator pools
    for _ in range(max(1, repeat)):
        for name, function in contenders.items():
            began = time.perf_counter()
            function()
            times[name].append(time.perf_counter() - began)
    medians = {name: float(np.median(values)) for name, values in times.items()}
    rows = []
    for name, function in contenders.items():
        rows.append({
            "name": name,
            "median_ms": medians[name] * 1e3,
            "min_ms": min(times[name]) * 1e3,
            "vs_copy": medians[name] / medians["dy.copy()"],
            "vs_naive": medians[name] / medians["naive gather"],
            "peak_mem_x_dy": _peak_allocation(function) / dy.nbytes,
        })
    return rows


def machine_info() -> str:
    """One line naming the machine the numbers come from."""
    return (f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
            f"python {platform.python_version()}, numpy {np.__version__}, ml_dtypes {ml_dtypes.__version__}")


def target_verdicts(rows: list[dict]) -> list[str]:
    """One line per target of the golden: its measured value, the bound and whether it was met."""
    golden = next(row for row in rows if row["name"] == GOLDEN)
    labels = {"vs_copy": "x copy", "vs_naive": "x naive", "peak_mem_x_dy": "peak mem x dy"}
    return [f"{GOLDEN}: {golden[key]:.2f} {labels[key]} <= {bound:.2f}: "
            f"{'met' if golden[key] <= bound else 'NOT met'}" for key, bound in TARGETS.items()]


def format_host_bench(rows: list[dict]) -> str:
    """The rows as a table under a header naming the shape and the machine, then the targets' verdicts."""
    header = (f"host golden benchmark: float32 dy {SHAPE}, slice {list(PARTIAL_SLICE)}, cos/sin {TABLE_SHAPE}\n"
              f"machine: {machine_info()}")
    table = tabulate([[r["name"], r["median_ms"], r["min_ms"], r["vs_copy"], r["vs_naive"], r["peak_mem_x_dy"]]
                      for r in rows],
                     headers=["", "median ms", "min ms", "x copy", "x naive", "peak mem x dy"],
                     floatfmt=".2f")
    verdicts = "\n".join(target_verdicts(rows))
    return (f"{header}\n{table}\ntargets (ratios of medians; peak mem includes the 1 x dy output):\n{verdicts}")
