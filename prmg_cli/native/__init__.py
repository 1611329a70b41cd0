"""A small compiled helper for the per-element passes numpy cannot make cheap: judging a slice under the
``default`` standard, rounding float64 values (and draws) to the tensor's dtype, and drawing uniform inputs from
Philox4x32-10 and Philox4x64-10.

Each is an exact replica of numpy code that stays the reference (``default_pass._SliceScan`` with
``reference.SliceTerms`` and ``standards.default.default_budget_into``; ``seeded._round_into``'s numpy path with
``dtypes.bfloat16_bits``; numpy's ``Philox`` bit generator with ``seeded._philox_words``, and
``seeded.philox4x32_10`` with ``seeded._philox4x32_words``, with ``seeded._round_into``),
written in C so that one pass over cache-sized chunks does what takes numpy some thirty passes over the same data:
at dy (4, 1024, 32, 128) bfloat16 the numpy block pass costs about 25 ns per slice element on the 2-vCPU
host, this one a few (``prmg bench --host`` prints both). Compiled with ``-ffp-contract=off`` and no
fast-math: every float64 operation rounds once, in the order the numpy code rounds, so the results agree
bit for bit (``tests/test_perf_equivalence.py`` checks it).

The C source, ``native.c`` beside this module, is built with gcc on first use into the emulator's cache folder
(``files.emulator_cache_base()``, ``native-<source hash>``); ``available()`` is False when that fails or
``PRMG_NATIVE=0`` -- callers then take the numpy path. ctypes releases the GIL during the calls, so
threads share the work.
"""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import os
import subprocess
from ctypes import POINTER, c_double, c_int32, c_int64, c_uint32, c_uint64, c_void_p
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

if TYPE_CHECKING:             # imported where threads start (a small run starts none): it loads logging
    from concurrent.futures import ThreadPoolExecutor

SOURCE = (Path(__file__).with_name("native.c")).read_text(encoding="utf-8")     # the C, shipped beside this module

# Threads the host passes and draws split over (a second one cut the golden's and the draws' time by about a
# quarter on the 2-vCPU host when the other vCPU was free).
HOST_THREADS = min(2, os.cpu_count() or 1)
# The fewest blocks of a large input worth giving a thread (the block passes of reference and default_pass).
MIN_BLOCKS_PER_THREAD = 4
# Every float64 operation rounds on its own (no contraction into fused multiply-adds, no fast-math).
FLAGS = ("-O3", "-std=c11", "-D_POSIX_C_SOURCE=200809L", "-ffp-contract=off", "-fno-fast-math", "-fPIC", "-shared")
DTYPE_CODES = {"float32": 0, "float16": 1, "bfloat16": 2}
ROUNDED_CODES = {"float32": 0, "bfloat16": 2, "float64": 3}     # outputs of affine_round and uniform
UNIFORM_GENERATORS = {"philox": 0, "philox4x32": 1}            # generators whose uniform draws ``uniform`` makes
# Arrays from this size are rounded by the helper (smaller: numpy): it is faster from one element on (bfloat16: about
# 9 us a call against 35-45 us for numpy's ``dtypes.bfloat16_bits`` at 1 to 1024 elements; a small case rounds some).
ROUNDING_MIN_ELEMENTS = 1
SPECIAL_CAPACITY = 1 << 16              # non-finite elements listed per thread before the numpy path takes over


class JudgeArgs(ctypes.Structure):
    _fields_ = [("x", c_void_p), ("result", c_void_p), ("cos", c_void_p), ("sin", c_void_p),
                ("x_type", c_int32), ("cos_type", c_int32), ("half_table", c_void_p),
                ("rows_s", c_int64), ("rows_n", c_int64), ("depth", c_int64), ("start", c_int64),
                ("length", c_int64), ("cos_b", c_int64), ("cos_s", c_int64), ("cos_n", c_int64),
                ("kept", c_void_p), ("partner", c_void_p), ("cos_lane", c_void_p), ("sin_lane", c_void_p),
                ("sign", c_void_p), ("computation", c_double), ("half_ulp_scale", c_double),
                ("half_smallest", c_double), ("scale", c_double), ("ftz_floor", c_double),
                ("underflow_floor", c_double), ("capacity", c_int64), ("stop", POINTER(c_int32)),
                ("balance_threshold", c_double), ("row_sides", c_void_p), ("overflow", c_double)]


class JudgeOut(ctypes.Structure):
    _fields_ = [("max_ratio", c_double), ("max_error", c_double), ("max_ulps", c_double), ("bound_ulps", c_double),
                ("max_beyond", c_double), ("golden_seconds", c_double),
                ("failed", c_int32), ("input_fails", c_int32), ("overflow", c_int32), ("pad", c_int32),
                ("specials", c_int64), ("input_specials", c_int64), ("ulps_at", c_int64),
                ("special_index", c_void_p), ("input_special_index", c_void_p),
                ("special_value", c_void_p), ("input_special_value", c_void_p),
                ("balance_up", c_int64), ("balance_down", c_int64), ("balance_toward", c_int64),
                ("lane_sides", c_void_p)]


class JudgeExtras(ctypes.Structure):
    _fields_ = [("flip_rows", c_int64), ("recounted_rows", c_int64), ("overflow", c_double),
                ("flip_fails", c_int32), ("recount_failed", c_int32),
                ("distinct_up", c_int64), ("distinct_down", c_int64), ("distinct_toward", c_int64)]


_LIBRARY: ctypes.CDLL | None = None
_TRIED = False
_HALF_TABLE: np.ndarray | None = None


def _build(target: Path) -> None:
    """Compile ``SOURCE`` into ``target`` under an exclusive lock (concurrent builders wait for each other)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.is_file():
            return
        source = target.parent / "prmg_native.c"
        source.write_text(SOURCE)
        partial = target.parent / f"{target.name}.{os.getpid()}.tmp"
        subprocess.run(["gcc", *FLAGS, "-o", str(partial), str(source), "-lm"],
                       check=True, stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
        os.replace(partial, target)


def _target() -> Path:
    """Where this source built with ``FLAGS`` lives: ``native-<hash>/libprmgnative.so`` in the emulator's cache."""
    from ..files import emulator_cache_base

    digest = hashlib.sha256("\0".join((SOURCE, *FLAGS)).encode()).hexdigest()[:16]
    return emulator_cache_base() / f"native-{digest}" / "libprmgnative.so"


def _unwanted() -> bool:
    """Whether ``PRMG_NATIVE=0`` turns the helper off (callers take the numpy path)."""
    return os.environ.get("PRMG_NATIVE", "1") == "0"


def built() -> bool:
    """Whether the helper is built already (or not wanted: ``_unwanted``)."""
    return _unwanted() or _target().is_file()


def prebuild() -> None:
    """Build the helper now when it is missing, without loading it (for a thread started before other work: gcc takes
    seconds, on a core of its own meanwhile). A failure is left for ``library()``, which meets it again and returns
    None; a ``library()`` called meanwhile waits for this build (``_build``'s lock)."""
    try:
        if not built():
            _build(_target())
    except (OSError, subprocess.SubprocessError, ValueError):
        pass


def library() -> ctypes.CDLL | None:
    """The compiled helper (built on first use), or None when it cannot be had or ``PRMG_NATIVE=0``."""
    global _LIBRARY, _TRIED
    if _unwanted():
        return None
    if not _TRIED:
        _TRIED = True
        try:
            target = _target()
            if not target.is_file():
                _build(target)
            loaded = ctypes.CDLL(str(target))
            loaded.prmg_judge_rows.restype = c_int32
            loaded.prmg_judge_rows.argtypes = [POINTER(JudgeArgs), c_int64, c_int64, POINTER(JudgeOut)]
            loaded.prmg_judge_extras.restype = None
            loaded.prmg_judge_extras.argtypes = [POINTER(JudgeArgs), POINTER(JudgeExtras)]
            loaded.prmg_nearest.restype = None
            loaded.prmg_nearest.argtypes = [POINTER(JudgeArgs), c_double, c_void_p, c_int64, c_void_p]
            loaded.prmg_affine_round.restype = None
            loaded.prmg_affine_round.argtypes = [c_void_p, c_int64, c_double, c_double, c_int32, c_void_p]
            loaded.prmg_round_bfloat16.restype = None
            loaded.prmg_round_bfloat16.argtypes = [c_void_p, c_int64, c_void_p]
            loaded.prmg_uniform.restype = None
            loaded.prmg_uniform.argtypes = [c_int32, c_uint64, c_uint64, c_int64, c_int64, c_int64, c_double,
                                            c_double, c_int32, c_void_p]
            loaded.prmg_philox4x32_blocks.restype = c_int32
            loaded.prmg_philox4x32_blocks.argtypes = [c_uint64, c_int64, c_uint32, c_uint32, c_uint32, c_int32,
                                                      c_void_p]
            _LIBRARY = loaded
        except (OSError, subprocess.SubprocessError, ValueError):
            _LIBRARY = None
    return _LIBRARY


def available() -> bool:
    """Whether the compiled helper can be used."""
    return library() is not None


def half_table() -> np.ndarray:
    """float16 bit pattern -> float32 value, all 65536 of them (exact)."""
    global _HALF_TABLE
    if _HALF_TABLE is None:
        _HALF_TABLE = np.arange(1 << 16, dtype=np.uint16).view(np.float16).astype(np.float32)
    return _HALF_TABLE


def affine_round(draws: np.ndarray, scale: float, offset: float, dtype_name: str, out: np.ndarray) -> bool:
    """``out[:] = dtype(offset + scale * draws)`` (float64 arithmetic, one rounding each, bfloat16 as
    ``dtypes.bfloat16_bits``; float32, bfloat16 or float64 ``out``, contiguous); False when the helper is missing
    or the dtype is another (the caller then does it with numpy)."""
    lib = library()
    code = ROUNDED_CODES.get(dtype_name)
    if lib is None or code is None:
        return False
    lib.prmg_affine_round(draws.ctypes.data, draws.size, scale, offset, code, out.ctypes.data)
    return True


def round_bfloat16(values: np.ndarray, out: np.ndarray) -> bool:
    """``out[:]`` = the bfloat16 bit patterns of the float64 ``values`` (``dtypes.bfloat16_bits``, the reference;
    both contiguous, ``out`` 16-bit); False when the helper is missing."""
    lib = library()
    if lib is None:
        return False
    lib.prmg_round_bfloat16(values.ctypes.data, values.size, out.ctypes.data)
    return True


def uniform(generator: str, key: tuple[int, int], stream_chunk: int, begin: int, scale: float, offset: float,
            dtype_name: str, out: np.ndarray) -> bool:
    """``out[:] = dtype(offset + scale * u)`` for the elements ``begin, begin + 1, ...`` of the uniform stream keyed
    ``key`` of ``generator`` (``UNIFORM_GENERATORS``; ``seeded._WORDS`` says which 32 bits each element draws,
    ``u`` = those bits ``* 2**-32``; ``philox`` in stream chunks of ``stream_chunk``; float64 arithmetic, one
    rounding each; float32, bfloat16 or float64 ``out``, contiguous); False when the helper is missing or the
    dtype or generator is another (the caller then does it with numpy)."""
    lib = library()
    code = ROUNDED_CODES.get(dtype_name)
    if lib is None or code is None or generator not in UNIFORM_GENERATORS:
        return False
    lib.prmg_uniform(UNIFORM_GENERATORS[generator], key[0], key[1], stream_chunk, begin, out.size, scale, offset,
                     code, out.ctypes.data)
    return True


PHILOX4X32_PATHS = {"fastest": -1, "scalar": 0, "avx2": 1, "avx512": 2}    # the code paths of the helper's rounds


def philox4x32_blocks(first: int, blocks: int, stream: int, key: tuple[int, int], path: str) -> np.ndarray | None:
    """The Philox4x32-10 blocks ``first .. first + blocks - 1`` at counter ``(m mod 2**32, m // 2**32, stream, 0)``
    under ``key`` (uint32 rows of four words, as ``seeded.philox4x32_10``), computed by the helper's code ``path``
    (``PHILOX4X32_PATHS``: each vector width, or the one the draws use here); None when the helper or that path
    is missing here. The tests hold every path to numpy's."""
    lib = library()
    words = np.zeros(4 * (-(-blocks // 16) * 16), np.uint32)        # the vector paths fill whole groups of 16
    if lib is None or not lib.prmg_philox4x32_blocks(first, blocks, stream, key[0], key[1],
                                                     PHILOX4X32_PATHS[path], words.ctypes.data):
        return None
    return words[:4 * blocks].reshape(blocks, 4)


def threads_for(blocks: int, most: int | None = None) -> int:
    """How many threads share ``blocks`` blocks: ``most`` (default ``HOST_THREADS``), but at least
    ``MIN_BLOCKS_PER_THREAD`` blocks each, and at least one thread."""
    return max(1, min(HOST_THREADS if most is None else most, blocks // MIN_BLOCKS_PER_THREAD))


def in_threads(tasks: Sequence[Callable[[], object]], pool: ThreadPoolExecutor | None = None) -> None:
    """Call every one of ``tasks``: the first on this thread, the others on ``pool`` (threads of their own when
    None); return when all are done, re-raising the first error."""
    if len(tasks) > 1 and pool is None:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(len(tasks) - 1) as own:
            in_threads(tasks, own)
        return
    helpers = [pool.submit(task) for task in tasks[1:]]
    tasks[0]()
    for helper in helpers:
        helper.result()


def lint() -> None:
    """Compile ``native.c`` with ``FLAGS`` and ``-Wall -Wextra -Werror`` (``make lint``); exit 1 on a warning."""
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        built = subprocess.run(["gcc", *FLAGS, "-Wall", "-Wextra", "-Werror", "-o", f"{folder}/lint.so",
                                str(Path(__file__).with_name("native.c")), "-lm"], stdin=subprocess.DEVNULL)
    sys.exit(built.returncode)
