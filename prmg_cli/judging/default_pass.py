"""The default standard judged block by block: one pass over cache-sized chunks of rows (the compiled
``native`` scan on threads, else numpy blocks) that proves a large result right -- bit-identical outside the slice,
every element within its budget, every non-finite element one a float32 evaluation gives -- or hands it to the
whole-array checks of ``judge``, which explain the failure. It computes exactly what those checks compute
(``tests/test_perf_equivalence.py`` holds the two to the same verdicts) and stops at the first wrong element.
"""

from __future__ import annotations

import ctypes
import functools
import math
import time
from dataclasses import dataclass

import numpy as np

from . import nonfinite
from .. import error_balance, native
from ..case import Case
from ..dtypes import FLOAT_FORMATS, Format, from_numpy
from ..ops import OPERATORS, reference
from .standards import FTZ_FLOOR, U32, UNDERFLOW_FLOOR, standard_parameters
from .standards.default import (STANDARD as _DEFAULT, balance_counts, balance_threshold, default_budget_into,
                                rounding_margins)

ONE_PASS = _DEFAULT.name    # the standard a result is judged by in one pass first (``fast_default``)
# Without the compiled helper, smaller tensors are judged by the whole-array checks directly (numpy's block pass
# saves nothing there); the compiled pass judges every size (a 256-element case in less time than numpy's checks).
FAST_MIN_ELEMENTS = 1 << 12


def one_pass_first(elements: int) -> bool:
    """Whether a result of ``elements`` elements is judged by ``fast_default`` first: from ``FAST_MIN_ELEMENTS`` on,
    and at any size when the compiled helper is there (``native.available``)."""
    return elements >= FAST_MIN_ELEMENTS or native.available()


@dataclass
class _Passed:
    """What ``fast_default`` found on a result it proved right: the default standard's metrics, whether the
    unchanged input passes as well, and what the compiled pass found besides (``_native_extras``; numpy's pass finds
    neither): ``flip_fails``, True when a kernel flipping the sign of sin fails the case (False: not known),
    ``distinct``, the error balance's distinct counts (``distinct_balance_counts``; None: not counted), and ``sides``,
    the departures' sides per row and per lane of a result too large to recount (``departure_sides``; None: not
    counted)."""

    metrics: dict
    vacuous: bool
    flip_fails: bool = False
    distinct: tuple[int, ...] | None = None
    sides: tuple[np.ndarray, np.ndarray] | None = None


class _Shared:
    """Flags the threads of one pass share: ``stop`` (something is wrong: the result fails) and
    ``input_fails`` (some element of the unchanged input is over budget: the case is not vacuous)."""

    def __init__(self) -> None:
        self.stop = False
        self.input_fails = False


class _SliceScan:
    """One thread's part of ``fast_default``: per block of rows, the golden and magnitude
    (``reference.TermsEvaluator``), the budget (``standards.default.default_budget_into``), the result's and the
    input's errors against it (and the result's in ulps: ``rounding_margins``), and the bits outside the slice
    -- all in buffers that stay in cache."""

    _BUDGET, _SCRATCH, _ACTUAL, _ERROR, _HALF = range(5)

    def __init__(self, terms: reference.SliceTerms, result: np.ndarray, fmt: Format, scale: float,
                 shared: _Shared):
        self.terms, self.result, self.fmt, self.scale, self.shared = terms, result, fmt, scale, shared
        self.evaluator = terms.evaluator()
        self.buffers = reference._huge_page_buffers(5, terms.block_size)
        self.flags = np.empty(terms.block_size, bool)
        self.widen = reference.Widener(terms.block_size)
        self.failed = False
        self.max_ratio = 0.0
        self.max_error = 0.0
        self.max_ulps = 0.0
        self.bound_ulps = 0.0                           # bound_ulp at the first element of max_ulps,
        self.ulps_at = 0                                # its flat index in the slice
        self.max_beyond = 0.0
        self.balance = [0, 0, 0, 0]                     # the error balance's counts (``balance_counts``)
        self.threshold = balance_threshold(fmt)
        self.specials: list[np.ndarray] = []            # flat slice indices of non-finite elements
        self.special_values: list[np.ndarray] = []      # the result there
        self.input_specials: list[np.ndarray] = []      # the same for the unchanged input
        self.input_values: list[np.ndarray] = []
        self.seconds = 0.0

    @property
    def golden_seconds(self) -> float:
        return self.evaluator.golden_seconds

    def _real(self, role: int, shape: tuple[int, ...]) -> np.ndarray:
        return self.buffers[role][:math.prod(shape)].reshape(shape)

    def run(self, blocks) -> None:
        began = time.perf_counter()
        with np.errstate(all="ignore"):          # numpy's error state is per thread
            for index, first_row in blocks:
                if self.shared.stop:
                    break
                if not self._block(index, first_row):
                    self.failed = self.shared.stop = True
        self.seconds += time.perf_counter() - began

    def _block(self, index: tuple[slice, ...], first_row: int) -> bool:
        """Judge one block; False when something in it is wrong."""
        terms = self.terms
        start, end, length = terms.start, terms.end, terms.length
        after = self.result[index]
        if not _outside_same(terms.x[index], after, start, end):
            return False
        x, golden, magnitude = self.evaluator.evaluate(index)
        shape = golden.shape
        budget = default_budget_into(golden, magnitude, self.fmt, self.scale, self._real(self._BUDGET, shape),
                                     self._real(self._SCRATCH, shape))
        actual = self.widen(after[..., start:end], self._real(self._ACTUAL, shape))
        error, work = self._real(self._ERROR, shape), self._real(self._SCRATCH, shape)
        flags = self.flags[:error.size].reshape(shape)
        np.subtract(actual, golden, out=error)
        np.abs(error, out=error)
        np.divide(error, budget, out=work)
        largest = float(work.max())
        special = None
        if not math.isfinite(largest):                 # a non-finite actual or golden (budget > 0 elsewhere)
            special = _set_apart(actual, golden, error)
            work[special] = 0.0
            largest = float(work.max())
        # error > budget implies error / budget >= 1 (division rounds monotonically): below 1, none is over
        if largest >= 1.0:
            np.greater(error, budget, out=flags)
            if special is not None:
                flags[special] = False
            if flags.any():
                return False
        if special is not None:
            local = np.flatnonzero(special)
            self.specials.append(first_row * length + local)
            self.special_values.append(actual.reshape(-1)[local])
        for side, count in enumerate(balance_counts(actual, golden, self.threshold, special)):
            self.balance[side] += count
        self.max_ratio = max(self.max_ratio, largest)
        self.max_error = max(self.max_error, float(error.max()))
        in_ulps, beyond, bound, at = rounding_margins(error, golden, budget, self.fmt,
                                                      self._real(self._HALF, shape), work, special, with_place=True)
        at += first_row * terms.length                  # a block is a run of whole rows, in any order
        if in_ulps > self.max_ulps or (in_ulps == self.max_ulps > 0 and at < self.ulps_at):
            self.max_ulps, self.bound_ulps, self.ulps_at = in_ulps, bound, at
        self.max_beyond = max(self.max_beyond, beyond)
        if not self.shared.input_fails:
            self._input_block(x, golden, budget, work, flags, first_row)
        return True

    def _input_block(self, x, golden, budget, work, flags, first_row: int) -> None:
        """The vacuous check on one block: is the unchanged input ``x`` within budget of the golden?"""
        np.subtract(x, golden, out=work)
        np.abs(work, out=work)
        special = None if math.isfinite(work.max()) else _set_apart(x, golden, work)
        np.greater(work, budget, out=flags)
        if special is not None:
            flags[special] = False
        if flags.any():
            self.shared.input_fails = True
        elif special is not None:
            local = np.flatnonzero(special)
            self.input_specials.append(first_row * self.terms.length + local)
            self.input_values.append(x.reshape(-1)[local])


# Slice elements from which the compiled scan is split over ``native.HOST_THREADS`` threads.
_NATIVE_SPLIT = 1 << 17


class _NativeScan:
    """One thread's part of the compiled ``fast_default`` (``native.SOURCE``, ``prmg_judge_rows``): the same
    judgement as ``_SliceScan``'s over a range of rows, with the same findings as attributes."""

    def __init__(self, lib, args, shared_stop, rows: tuple[int, int], capacity: int = native.SPECIAL_CAPACITY,
                 lanes: int = 0):
        self.lib, self.args, self.rows, self.shared_stop = lib, args, rows, shared_stop
        self.arrays = [np.empty(capacity, np.int64), np.empty(capacity, np.int64), np.empty(capacity),
                       np.empty(capacity)]
        self.lane_sides = np.zeros((lanes, 3), np.int64)           # the screen's lanes, when args has row_sides
        self.out = native.JudgeOut(special_index=self.arrays[0].ctypes.data,
                                   input_special_index=self.arrays[1].ctypes.data,
                                   special_value=self.arrays[2].ctypes.data,
                                   input_special_value=self.arrays[3].ctypes.data,
                                   lane_sides=self.lane_sides.ctypes.data)
        self.seconds = 0.0

    def run(self) -> None:
        """The compiled scan of the rows, then its findings (``JudgeOut``) as ``_SliceScan``'s attributes."""
        began = time.perf_counter()
        out = self.out
        self.lib.prmg_judge_rows(ctypes.byref(self.args), self.rows[0], self.rows[1], ctypes.byref(out))
        self.failed, self.overflow, self.input_fails = bool(out.failed), bool(out.overflow), bool(out.input_fails)
        self.max_ratio, self.max_error, self.max_beyond = out.max_ratio, out.max_error, out.max_beyond
        self.max_ulps, self.bound_ulps, self.ulps_at = out.max_ulps, out.bound_ulps, out.ulps_at
        self.balance = [out.balance_up, out.balance_down, out.balance_toward,
                        out.balance_up + out.balance_down - out.balance_toward]
        self.golden_seconds = out.golden_seconds
        self.specials, self.special_values = [self.arrays[0][:out.specials]], [self.arrays[2][:out.specials]]
        self.input_specials = [self.arrays[1][:out.input_specials]]
        self.input_values = [self.arrays[3][:out.input_specials]]
        self.seconds = time.perf_counter() - began


@functools.lru_cache(maxsize=64)
def _native_terms(rotation: reference.Rotation, rotary_mode: int, length: int) -> tuple[tuple, dict]:
    """``reference.lane_terms`` as the compiled scan takes them (int64; ``sign`` float64) with ``native.half_table()``,
    and their addresses as ``JudgeArgs`` fields: made once per rotation, mode and length, as the terms are (reading an
    array's address costs 1.6-3.6 us: six of them a small case's two scans paid again and again). The arrays are
    kept here, so the addresses stay valid."""
    kept, partner, sign, cos_lane, sin_lane = (np.ascontiguousarray(term, np.int64)
                                               for term in reference.lane_terms(rotation, rotary_mode, length))
    arrays = {"kept": kept, "partner": partner, "sign": np.ascontiguousarray(sign, np.float64), "cos_lane": cos_lane,
              "sin_lane": sin_lane, "half_table": native.half_table()}
    return tuple(arrays.values()), {name: array.ctypes.data for name, array in arrays.items()}


def _native_scans(op, case: Case, x, result, cos, sin, fmt: Format, scale: float, shared: _Shared):
    """The compiled scans of ``fast_default``, run, with ``_native_extras`` of a result they passed and, past
    ``RECOUNTED`` slice elements, the error balance's screen the scans count (``_Passed.sides``); None when the
    helper is missing or cannot take the case (the numpy scans then run), or listed more non-finite elements than it
    has room for."""
    lib = native.library()
    cos_type = native.DTYPE_CODES.get(from_numpy(cos.dtype).name) if cos.dtype == sin.dtype else None
    x_type = native.DTYPE_CODES[from_numpy(x.dtype).name]
    if lib is None or cos_type is None:
        return None
    start, end = (int(v) for v in case.partial_slice)
    length = end - start
    cos, sin = np.ascontiguousarray(cos), np.ascontiguousarray(sin)
    stop = ctypes.c_int32(0)
    rows = x.size // x.shape[-1]
    # the error balance's screen of a result too large to recount: each row's departures (and each scan's lanes')
    row_sides = np.zeros((rows if rows * length > error_balance.RECOUNTED else 0, 3), np.int64)
    keep = (x, result, cos, sin, row_sides)
    args = native.JudgeArgs(
        x=x.ctypes.data, result=result.ctypes.data, cos=cos.ctypes.data, sin=sin.ctypes.data, x_type=x_type,
        cos_type=cos_type, rows_s=x.shape[1], rows_n=x.shape[2], depth=x.shape[3], start=start, length=length,
        cos_b=cos.shape[0], cos_s=cos.shape[1], cos_n=cos.shape[2],
        **_native_terms(op.rotation, case.rotary_mode, length)[1], computation=2 * U32 + U32 * U32,
        half_ulp_scale=2.0 ** -fmt.precision, half_smallest=fmt.smallest / 2, scale=scale, ftz_floor=FTZ_FLOOR,
        underflow_floor=UNDERFLOW_FLOOR, capacity=native.SPECIAL_CAPACITY, stop=ctypes.pointer(stop),
        balance_threshold=balance_threshold(fmt), row_sides=row_sides.ctypes.data if len(row_sides) else None,
        overflow=fmt.overflow)
    workers = native.HOST_THREADS if rows * length >= _NATIVE_SPLIT else 1
    capacity = min(native.SPECIAL_CAPACITY, rows * length)     # a small slice cannot list more (no overflow)
    scans = [_NativeScan(lib, args, stop, (rows * i // workers, rows * (i + 1) // workers), capacity,
                         length if len(row_sides) else 0) for i in range(workers)]
    native.in_threads([scan.run for scan in scans])
    if any(scan.overflow for scan in scans):
        return None
    shared.stop = bool(stop.value) or any(scan.failed for scan in scans)
    shared.input_fails = any(scan.input_fails for scan in scans)
    extras = (False, None) if shared.stop else _native_extras(lib, args, rows, length, fmt)
    sides = (row_sides, sum(scan.lane_sides for scan in scans)) if len(row_sides) else None
    del keep
    return scans, (*extras, sides)


def _native_extras(lib, args, rows: int, length: int, fmt: Format) -> tuple[bool, tuple[int, ...] | None]:
    """``_Passed.flip_fails`` and ``_Passed.distinct`` of a result the compiled scans passed, by the helper in one
    more pass over its first rows (``prmg_judge_extras``): every row of a result of at most ``RECOUNTED`` slice
    elements, whose distinct departures it counts, else the rows of about that many, for the flip alone."""
    recounted = rows if rows * length <= error_balance.RECOUNTED else 0
    extras = native.JudgeExtras(flip_rows=recounted or min(rows, -(-error_balance.RECOUNTED // length)),
                                recounted_rows=recounted, overflow=fmt.overflow)
    lib.prmg_judge_extras(ctypes.byref(args), ctypes.byref(extras))
    if not recounted or extras.recount_failed:
        return bool(extras.flip_fails), None
    up, down, toward = extras.distinct_up, extras.distinct_down, extras.distinct_toward
    return bool(extras.flip_fails), (up, down, toward, up + down - toward)


def _set_apart(actual: np.ndarray, golden: np.ndarray, error: np.ndarray) -> np.ndarray:
    """The mask of elements where ``actual`` or ``golden`` is not finite, their ``error`` set to 0: such
    elements are judged by ``nonfinite`` (as ``SliceView`` neutralises them)."""
    special = np.isfinite(actual)
    special &= np.isfinite(golden)
    np.logical_not(special, out=special)
    error[special] = 0.0
    return special


def _outside_same(before: np.ndarray, after: np.ndarray, start: int, end: int) -> bool:
    """Whether the rows ``before`` and ``after`` (C-contiguous, same dtype) hold the same bits outside
    ``[start, end)`` of their last axis, compared in the widest words that fit."""
    itemsize, depth = before.dtype.itemsize, before.shape[-1]
    width = 8
    while width > 1 and (start * itemsize % width or end * itemsize % width or depth * itemsize % width):
        width //= 2
    word = np.dtype(f"u{width}")
    head, tail = start * itemsize // width, end * itemsize // width
    old, new = before.view(np.uint8).view(word), after.view(np.uint8).view(word)
    return ((head == 0 or np.array_equal(old[..., :head], new[..., :head]))
            and (tail == old.shape[-1] or np.array_equal(old[..., tail:], new[..., tail:])))


def fast_default(case: Case, inputs, result: np.ndarray, tolerance, timings: dict) -> _Passed | None:
    """The ``default`` verdict on a result that passes, in one pass over blocks of rows; None when something
    is wrong, or the case is not one this pass judges (then the whole-array checks decide and explain).

    The pass computes, block by block and split over ``native.HOST_THREADS`` threads, exactly what the whole-array
    checks compute: the bits outside the slice, the float64 golden and magnitude, the budget
    (``default_budget_into``), ``|actual - golden|`` and ``|input - golden|`` against it, with the non-finite
    elements set apart for ``nonfinite``, and the errors and bounds in ulps (``rounding_margins``) -- so its
    metrics are theirs, bit for bit. It stops at the first wrong block. ``timings["golden"]`` gets the pass's
    share spent widening the input and forming the golden.
    """
    if not _takes(case, inputs, result):
        return None
    return _one_pass(case, inputs, result, tolerance, timings)


def passes(case: Case, inputs, result: np.ndarray, tolerance) -> bool | None:
    """Whether ``result`` passes the ``default`` standard (the whole-array checks' verdict, found by the one pass:
    ``fast_default``); None when the pass does not take such a case (the whole-array checks must say)."""
    if not _takes(case, inputs, result):
        return None
    return _one_pass(case, inputs, result, tolerance, {}) is not None


def _takes(case: Case, inputs, result: np.ndarray) -> bool:
    """Whether the one pass judges ``result`` of ``case`` on ``inputs``: a float dtype, the input and the result
    C-contiguous, arguments the operator's golden takes, and some elements."""
    x = inputs.dy
    try:
        dtype = from_numpy(x.dtype).name
    except KeyError:
        return False
    if dtype not in FLOAT_FORMATS or not (x.flags.c_contiguous and result.flags.c_contiguous):
        return False
    try:
        OPERATORS[case.op].check(x, inputs.cos, inputs.sin, case.rotary_mode, case.partial_slice)
    except ValueError:
        return False
    return x.size > 0


def _one_pass(case: Case, inputs, result: np.ndarray, tolerance, timings: dict) -> _Passed | None:
    """``fast_default`` of a case it takes (``_takes``)."""
    op = OPERATORS[case.op]
    x, cos, sin = inputs.dy, inputs.cos, inputs.sin
    dtype = from_numpy(x.dtype).name
    start, end = (int(v) for v in case.partial_slice)
    began = time.perf_counter()
    shared = _Shared()
    scale = standard_parameters(ONE_PASS, dtype, tolerance)["budget_scale"]
    native_scans = _native_scans(op, case, x, result, cos, sin, FLOAT_FORMATS[dtype], scale, shared)
    scans, extras = native_scans or (None, (False, None, None))
    if scans is None:
        shared = _Shared()
        terms = op.slice_terms(x, cos, sin, case.rotary_mode, (start, end))
        blocks = terms.blocks
        workers = native.threads_for(len(blocks))
        shares = [blocks[len(blocks) * i // workers:len(blocks) * (i + 1) // workers] for i in range(workers)]
        scans = [_SliceScan(terms, result, FLOAT_FORMATS[dtype], scale, shared) for _ in shares]
        native.in_threads([functools.partial(scan.run, share) for scan, share in zip(scans, shares)])
    busy = sum(scan.seconds for scan in scans)
    share = sum(scan.golden_seconds for scan in scans) / busy if busy else 0.0
    timings["golden"] = (time.perf_counter() - began) * 1e3 * share
    if shared.stop:
        return None
    with np.errstate(all="ignore"):
        if not _specials_right(op, inputs, case, scans, "specials", "special_values"):
            return None
        vacuous = not shared.input_fails and _specials_right(op, inputs, case, scans, "input_specials",
                                                             "input_values")
    metrics = {"max_err_ratio": max(scan.max_ratio for scan in scans), "bad": 0,
               "max_abs_err": max(scan.max_error for scan in scans),
               "max_err_ulp": max(scan.max_ulps for scan in scans), "bound_ulp": _first_bound(scans),
               "beyond_rounding": max(scan.max_beyond for scan in scans),
               **{key: sum(scan.balance[side] for scan in scans) for side, key in enumerate(error_balance.METRICS)}}
    return _Passed(metrics, vacuous, *extras)


def _first_bound(scans) -> float:
    """``bound_ulp`` of the whole slice: that of the first element (smallest slice index) of the largest error in
    ulps among the scans' (0 when that is 0), as ``rounding_margins`` gives it on the whole slice."""
    largest = max(scan.max_ulps for scan in scans)
    return min((scan.ulps_at, scan.bound_ulps) for scan in scans if scan.max_ulps == largest)[1] if largest > 0 else 0.0


def _specials_right(op, inputs, case: Case, scans, indices: str, values: str) -> bool:
    """Whether every non-finite element the scans set apart (attributes ``indices``, ``values``) is right
    by the ``nonfinite`` rule."""
    flat = [part for scan in scans for part in getattr(scan, indices)]
    if not any(part.size for part in flat):
        return True
    flat, actual = np.concatenate(flat), np.concatenate([part for scan in scans for part in getattr(scan, values)])
    start, end = (int(v) for v in case.partial_slice)
    possible = nonfinite.possible_results_at(op, inputs.dy, inputs.cos, inputs.sin, case.rotary_mode, start, end, flat)
    return bool(nonfinite.allowed(actual, possible).all())
