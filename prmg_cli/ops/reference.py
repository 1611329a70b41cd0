"""The golden engine of the InplacePartialRotaryMul family: an operator's ``Rotation`` evaluated in float64.

An operator of the family (``ops/<op>.py``) rotates the slice ``x[..., start:end]`` of length ``L`` pair by pair:
per rotary mode its ``Rotation.pairs`` lists families of pairs ``(p, q)``, read at ``(p, q)`` and written at
``(p', q')`` (``PairBlock``), and each pair's two results are::

    out[p'] = c[i]*x[p] + first_sign * s[j]*x[q]
    out[q'] = c[i']*x[q] + second_sign * s[j']*x[p]

where the cos/sin lanes are those of the elements multiplied, ``(i, j) = (p, q)`` and ``(i', j') = (q, p)``
(``tables_at == "input"``, the grad), or the output lane's own, ``(i, j) = (p', p')`` and ``(i', j') = (q', q')``
(``"output"``, the forward). ``c = cos``, ``s = sin`` have length ``L`` and broadcast over B, S and N.

Outside the slice the result equals the input bit for bit. The goldens compute in float64 (products of
float32, float16 or bfloat16 numbers are exact there), then round once to the tensor's dtype. Every function
here takes the operator's rotation as its first argument; ``ops.spec.OperatorSpec`` binds it.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import math
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np

from ..dtypes import round_into
from ..native import in_threads, threads_for

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

# Row blocks of about this many elements of dy (whole rows): large enough that numpy's per-call cost
# (about 30 us a block) is small next to the work, small enough that each thread's four float64 work
# buffers stay in cache (2^16..2^18 measured on the 2-vCPU EPYC VM: 2^18 best, by a little, with 2 threads).
_BLOCK_ELEMENTS = 1 << 18
# x86-64 huge page size, and the allocation size from which numpy madvises huge pages
_HUGE_PAGE = 2 << 20
_HUGE_PAGE_ALLOCATION = 4 << 20


@dataclass(frozen=True)
class PairBlock:
    """One family of pairs along the slice axis, each field a ``slice`` of the slice-local last axis.

    ``first``/``second`` select ``p``/``q`` in ``x``; ``first_out``/``second_out`` select ``p'``/``q'`` in the
    result.
    """

    first: slice
    second: slice
    first_out: slice
    second_out: slice


@dataclass(frozen=True)
class Rotation:
    """How an operator rotates its slice (module docstring): ``pairs(mode, L) -> (PairBlock, ...)`` (raising
    ``ValueError`` for a mode it lacks), ``tables_at`` (``"input"`` or ``"output"``: whose lanes of cos and
    sin each product takes) and the signs (+1 or -1) of the partner's term at ``p'`` and at ``q'``."""

    pairs: Callable[[int, int], tuple[PairBlock, ...]]
    tables_at: str
    first_sign: int
    second_sign: int

    def lanes(self, block: PairBlock) -> tuple[slice, slice, slice, slice]:
        """The lanes ``(i, j, i', j')`` of cos and sin in ``out[p'] = c[i]*x[p] + first_sign * s[j]*x[q]`` and
        ``out[q'] = c[i']*x[q] + second_sign * s[j']*x[p]``."""
        if self.tables_at == "input":
            return block.first, block.second, block.second, block.first
        return block.first_out, block.first_out, block.second_out, block.second_out

    def fill_tables(self, pairs, cos: np.ndarray, sin: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
        """Write the complex tables ``a[k] = c[i] - i*first_sign*s[j]`` and ``b[k] = c[i'] + i*second_sign*s[j']``
        (float64) for the ``pairs`` (``(PairBlock, slice of k)``) of the cos/sin tables ``cos``, ``sin``: with
        ``z = x[p] + i*x[q]``, ``Re(z*a) = out[p']`` and ``Im(z*b) = out[q']``."""
        for pair, ks in pairs:
            i, j, i2, j2 = self.lanes(pair)
            np.copyto(a.real[..., ks], cos[..., i], casting="unsafe")
            _signed(-self.first_sign, sin[..., j], a.imag[..., ks])
            np.copyto(b.real[..., ks], cos[..., i2], casting="unsafe")
            _signed(self.second_sign, sin[..., j2], b.imag[..., ks])


@functools.lru_cache(maxsize=64)
def sin_partners(rotation: Rotation, rotary_mode: int, length: int) -> tuple[np.ndarray, np.ndarray]:
    """Per pair of the slice, the sin lanes ``j`` and ``j'`` its two results take (``Rotation.lanes``). A kernel that
    swaps them (each element its own sin where its partner's belongs, or the reverse) computes exactly the same
    result wherever ``s[j] == s[j']``: on tables alike at every pair, such a bug is invisible."""
    lanes = np.arange(length)
    first, second = [], []
    for block in rotation.pairs(rotary_mode, length) if length else ():
        _, j, _, j2 = rotation.lanes(block)
        first.append(lanes[j])
        second.append(lanes[j2])
    return _read_only(*((np.concatenate(first), np.concatenate(second)) if first else (lanes[:0], lanes[:0])))


def _read_only(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """``arrays``, each made read-only: what a cache hands every caller."""
    for array in arrays:
        array.flags.writeable = False
    return arrays


def partners_alike(rotation: Rotation, sin: np.ndarray, rotary_mode: int) -> bool:
    """Whether ``sin`` (..., L) holds the same bits at both sin lanes of every pair (``sin_partners``) in every row:
    a partner swap is then invisible."""
    first, second = sin_partners(rotation, rotary_mode, sin.shape[-1])
    if not first.size:
        return False
    as_bits = sin.view(f"u{sin.dtype.itemsize}")
    return bool(np.array_equal(as_bits[..., first], as_bits[..., second]))


def _signed(sign: int, values: np.ndarray, out: np.ndarray) -> None:
    """``out[...] = sign * values`` in float64 (exact: a copy or a negation)."""
    if sign > 0:
        np.copyto(out, values, casting="unsafe")
    else:
        np.negative(values, out=out, dtype=np.float64, casting="unsafe")


def _combine(sign: int):
    """``np.add`` for +1, ``np.subtract`` for -1: ``a + sign*b`` rounded once."""
    return np.add if sign > 0 else np.subtract


LaneTerms = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


@functools.lru_cache(maxsize=64)
def lane_terms(rotation: Rotation, rotary_mode: int, length: int) -> LaneTerms:
    """Per output lane ``j`` of the slice: ``(kept, partner, sign, cos_lane, sin_lane)`` with
    ``out[j] = c[cos_lane]*x[kept] + sign * s[sin_lane]*x[partner]`` -- at ``p'`` kept ``p``, partner ``q``,
    ``first_sign``; at ``q'`` kept ``q``, partner ``p``, ``second_sign``; cos and sin of the kept and partner
    lanes (``tables_at == "input"``) or of ``j`` itself (``"output"``). Read-only arrays, made once per rotation,
    mode and length."""
    kept, partner, sign = (np.zeros(length, np.int64) for _ in range(3))
    lanes = np.arange(length)
    for block in rotation.pairs(rotary_mode, length) if length else ():
        first, second = lanes[block.first], lanes[block.second]
        kept[block.first_out], partner[block.first_out], sign[block.first_out] = first, second, rotation.first_sign
        kept[block.second_out], partner[block.second_out], sign[block.second_out] = second, first, rotation.second_sign
    if rotation.tables_at == "input":
        return _read_only(kept, partner, sign, kept.copy(), partner.copy())
    return _read_only(kept, partner, sign, lanes.copy(), lanes.copy())


def check_arguments(rotation: Rotation, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, rotary_mode: int,
           partial_slice) -> tuple[int, int]:
    """Validate the arguments of a golden; returns ``(start, end)``."""
    start, end = (int(v) for v in partial_slice)
    if x.ndim != 4 or cos.ndim != 4 or sin.ndim != 4:
        raise ValueError(f"x, cos and sin must be 4-D, got {x.shape}, {cos.shape}, {sin.shape}")
    if cos.shape != sin.shape:
        raise ValueError(f"cos shape {cos.shape} != sin shape {sin.shape}")
    if not 0 <= start <= end <= x.shape[-1]:
        raise ValueError(f"partial_slice [{start}, {end}) outside D = {x.shape[-1]}")
    length = end - start
    if length == 0:
        return start, end
    if cos.shape[-1] != length:
        raise ValueError(f"cos last axis {cos.shape[-1]} != slice length {length}")
    for axis in range(3):
        if cos.shape[axis] not in (1, x.shape[axis]):
            raise ValueError(f"cos axis {axis} = {cos.shape[axis]} is neither 1 nor {x.shape[axis]}")
    if not _splits_into_pairs(rotation, rotary_mode, length):
        raise ValueError(f"slice length {length} does not split into the pairs of mode {rotary_mode}")
    return start, end


@functools.lru_cache(maxsize=64)
def _splits_into_pairs(rotation: Rotation, rotary_mode: int, length: int) -> bool:
    """Whether the pairs of ``rotary_mode`` cover each lane of a slice of ``length`` once, as equal halves."""
    blocks = rotation.pairs(rotary_mode, length)
    firsts = [range(*block.first.indices(length)) for block in blocks]
    seconds = [range(*block.second.indices(length)) for block in blocks]
    paired = sorted(index for lanes in firsts + seconds for index in lanes)
    return paired == list(range(length)) and all(len(a) == len(b) for a, b in zip(firsts, seconds))


def rotated_slice(rotation: Rotation, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, rotary_mode: int,
                  partial_slice, *, compute_dtype=np.float64) -> np.ndarray:
    """The result over the slice only, shape ``(B, S, N, L)``, computed entirely in ``compute_dtype``.

    ``x``, ``c`` and ``s`` are cast to ``compute_dtype``; each product ``c[i]*x[p]``, ``s[j]*x[q]`` and the
    sum (difference) of the pair are rounded in it (module docstring). With float64 this is the
    high-precision golden before its final rounding; with the tensor's own dtype it is the same-precision
    CPU computation that the double-benchmark standard compares the device against.
    """
    start, end = check_arguments(rotation, x, cos, sin, rotary_mode, partial_slice)
    compute_dtype = np.dtype(compute_dtype)
    length = end - start
    z = x[..., start:end].astype(compute_dtype)
    c = cos.astype(compute_dtype)
    s = sin.astype(compute_dtype)
    out = np.empty(x.shape[:3] + (length,), compute_dtype)
    first, second = _combine(rotation.first_sign), _combine(rotation.second_sign)
    for block in rotation.pairs(rotary_mode, length) if length else ():
        p, q = block.first, block.second
        i, j, i2, j2 = rotation.lanes(block)
        out[..., block.first_out] = first(c[..., i] * z[..., p], s[..., j] * z[..., q])
        out[..., block.second_out] = second(c[..., i2] * z[..., q], s[..., j2] * z[..., p])
    return out


def rotated_magnitude(rotation: Rotation, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, rotary_mode: int,
                      partial_slice) -> np.ndarray:
    """Per output element of the slice, the sum of its two products' magnitudes, float64 ``(B, S, N, L)``::

        m[p'] = |c[i]*x[p]| + |s[j]*x[q]|,    m[q'] = |c[i']*x[q]| + |s[j']*x[p]|

    e.g. the grad's interleave ``m[2k] = |c[2k]*g[2k]| + |s[2k+1]*g[2k+1]|``. Rounding errors of a correct
    kernel scale with ``m``, not with ``|out|`` (the two products may cancel).
    """
    start, end = check_arguments(rotation, x, cos, sin, rotary_mode, partial_slice)
    length = end - start
    z = np.abs(x[..., start:end].astype(np.float64))
    c = np.abs(cos.astype(np.float64))
    s = np.abs(sin.astype(np.float64))
    magnitude = np.empty(x.shape[:3] + (length,), np.float64)
    for block in rotation.pairs(rotary_mode, length) if length else ():
        p, q = block.first, block.second
        i, j, i2, j2 = rotation.lanes(block)
        magnitude[..., block.first_out] = c[..., i] * z[..., p] + s[..., j] * z[..., q]
        magnitude[..., block.second_out] = c[..., i2] * z[..., q] + s[..., j2] * z[..., p]
    return magnitude


def _block_indices(rows_shape: tuple[int, ...], row_elements: int,
                   broadcast_axes: tuple[int, ...], block_elements: int | None = None) -> list[tuple[slice, ...]]:
    """Index tuples (slices only, so every axis is kept) that cut the leading axes ``rows_shape``
    (B, S, N) into blocks of about ``block_elements / row_elements`` rows (``_BLOCK_ELEMENTS`` by default).
    Each block is one contiguous run of rows in C order.

    Axes before the split axis go one index at a time, the split axis in steps, later axes whole.
    Blocks are ordered so that the axes in ``broadcast_axes`` (where cos/sin have size 1) vary fastest:
    consecutive blocks then read the same part of the cos/sin tables.
    """
    block_elements = _BLOCK_ELEMENTS if block_elements is None else block_elements
    target_rows = max(1, block_elements // max(1, row_elements))
    split_axis, inner_rows = len(rows_shape) - 1, 1
    for axis in range(len(rows_shape)):
        inner = int(np.prod(rows_shape[axis + 1:], dtype=np.int64))
        if inner <= target_rows:
            split_axis, inner_rows = axis, inner
            break
    step = max(1, target_rows // inner_rows)
    parts = []
    for axis, size in enumerate(rows_shape):
        if axis < split_axis:
            parts.append([slice(i, i + 1) for i in range(size)])
        elif axis == split_axis:
            parts.append([slice(lo, min(lo + step, size)) for lo in range(0, size, step)])
        else:
            parts.append([slice(None)])
    order = sorted(range(len(rows_shape)), key=lambda axis: axis in broadcast_axes)
    blocks = []
    for combination in itertools.product(*(parts[axis] for axis in order)):
        index = [slice(None)] * len(rows_shape)
        for axis, part in zip(order, combination):
            index[axis] = part
        blocks.append(tuple(index))
    return blocks


def _numbered_pairs(pairs: tuple[PairBlock, ...], length: int) -> list[tuple[PairBlock, slice]]:
    """Each pair family with the slice of pair numbers ``k`` it covers (families numbered in order)."""
    numbered = []
    for pair in pairs:
        first = numbered[-1][1].stop if numbered else 0
        numbered.append((pair, slice(first, first + len(range(*pair.first.indices(length))))))
    return numbered


def _huge_page_buffers(count: int, size: int) -> np.ndarray:
    """``count`` float64 work buffers of ``size`` elements (rows of one array), on transparent huge pages
    when they are large.

    Fresh buffers are first touched every call; in 4 KiB pages that is thousands of page faults (about
    3 us each on the 2-vCPU VM: ~4 ms a thread for the benchmark's 6 MiB). numpy asks the kernel for huge
    pages for allocations of 4 MiB and more; the buffers start at a 2 MiB boundary so that all of them lie
    in whole huge pages.
    """
    elements = count * size
    if 8 * elements < _HUGE_PAGE_ALLOCATION:
        return np.empty((count, size), np.float64)
    raw = np.empty(elements + _HUGE_PAGE // 8, np.float64)
    skip = (-raw.ctypes.data % _HUGE_PAGE) // 8
    return raw[skip:skip + elements].reshape(count, size)


class _BlockEvaluator:
    """Evaluates the slice of ``out`` block by block in reused float64 buffers (one evaluator per thread).

    Pair ``k`` of a block becomes the complex number ``z[k] = x[p] + i*x[q]`` (for interleave this is
    just x widened to float64 and viewed as complex128). With the rotation's tables (``Rotation.fill_tables``)
    ``a[k] = c[i] - i*first_sign*s[j]`` and ``b[k] = c[i'] + i*second_sign*s[j']``, the two results of the
    pair are parts of complex products::

        Re(z*a) = c[i]*x[p] + first_sign*s[j]*x[q] = out[p'],   Im(z*b) = c[i']*x[q] + second_sign*s[j']*x[p] = out[q']

    Each is two products exact in float64 and one rounded sum, so this equals the plain formula bit for
    bit, while numpy does both products and the sum in one pass. Per block of ``out`` (already a copy of x):
    gather ``z`` from its slice, multiply by ``a`` and ``b``, then round ``Re(z*a)``, ``Im(z*b)`` back
    into it.

    ``whole_tables`` are ``a``, ``b`` for all of cos/sin when they are small (broadcast, built once and
    shared read-only by all evaluators), else None and the tables are built per block. A block over
    which they broadcast gets them expanded to its shape, reused by the next blocks.
    """

    def __init__(self, cos, sin, out, start: int, end: int, pairs, block_rows: int, whole_tables, fill_tables):
        self.cos, self.sin, self.out = cos, sin, out
        self.fill_tables = fill_tables
        self.start, self.end = start, end
        length = end - start
        self.pairs = pairs
        even, odd = slice(0, length, 2), slice(1, length, 2)
        self.adjacent_in = len(pairs) == 1 and (pairs[0][0].first, pairs[0][0].second) == (even, odd)
        self.adjacent_out = len(pairs) == 1 and (pairs[0][0].first_out, pairs[0][0].second_out) == (even, odd)
        self.buffers = _huge_page_buffers(4, block_rows * length)
        self.views = {}
        self.table_key = None
        self.whole_tables = whole_tables

    def _work_views(self, pair_shape: tuple[int, ...]):
        """``z``, ``zb`` (complex128 buffers of ``pair_shape``) and the expanded-table buffers ``a``, ``b``;
        cached per shape, as a run of blocks has at most a few (the full one and the tails)."""
        views = self.views.get(pair_shape)
        if views is None:
            size = math.prod(pair_shape)
            views = tuple(buffer[:2 * size].view(np.complex128).reshape(pair_shape) for buffer in self.buffers)
            self.views[pair_shape] = views
        return views

    def _tables(self, index: tuple[slice, ...], pair_shape: tuple[int, ...], a: np.ndarray, b: np.ndarray):
        """The complex tables ``a``, ``b`` for a block of ``pair_shape`` pairs: a view of the whole tables
        when that has the block's shape, else expanded into the buffers ``a``, ``b``."""
        table_index = tuple(slice(None) if size == 1 else part for part, size in zip(index, self.cos.shape))
        if self.whole_tables is not None:
            a_part, b_part = (table[table_index] for table in self.whole_tables)
            if a_part.shape == pair_shape:
                return a_part, b_part
        key = (table_index, pair_shape)
        if key != self.table_key:
            self.table_key = key
            if self.whole_tables is None:
                compact_shape = self.cos[table_index].shape[:-1] + pair_shape[-1:]
                a_part, b_part = ((a, b) if compact_shape == pair_shape
                                  else (np.empty(compact_shape, np.complex128) for _ in "ab"))
                self.fill_tables(self.pairs, self.cos[table_index], self.sin[table_index], a_part, b_part)
            if a_part is not a:
                np.copyto(a, a_part)
                np.copyto(b, b_part)
        return a, b

    def run(self, blocks: list[tuple[slice, ...]]) -> None:
        with np.errstate(all="ignore"):          # NaN/inf inputs give NaN/inf results, as the formula says
            for index in blocks:
                self._run_block(index)

    def _run_block(self, index: tuple[slice, ...]) -> None:
        g = self.out[index][..., self.start:self.end]
        pair_shape = g.shape[:-1] + (g.shape[-1] // 2,)
        z, zb, a, b = self._work_views(pair_shape)
        a, b = self._tables(index, pair_shape, a, b)
        if self.adjacent_in:
            np.copyto(z.view(np.float64), g, casting="unsafe")
        else:
            for pair, ks in self.pairs:
                np.copyto(z.real[..., ks], g[..., pair.first], casting="unsafe")
                np.copyto(z.imag[..., ks], g[..., pair.second], casting="unsafe")
        np.multiply(z, b, out=zb)
        np.multiply(z, a, out=z)
        if self.adjacent_out:
            np.copyto(z.imag, zb.imag)
            round_into(z.view(np.float64), g)
        else:
            for pair, ks in self.pairs:
                round_into(z.real[..., ks], g[..., pair.first_out])
                round_into(zb.imag[..., ks], g[..., pair.second_out])


def rotated(rotation: Rotation, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, rotary_mode: int, partial_slice,
            *, workers: int | None = None) -> np.ndarray:
    """The result as a new array in x's dtype (``x`` itself is not modified): over the slice ``out[p'] =
    c[i]*x[p] + first_sign * s[j]*x[q]``, ``out[q'] = c[i']*x[q] + second_sign * s[j']*x[p]`` (module
    docstring), each product and the sum in float64 (products of float32/float16/bfloat16 numbers are exact),
    rounded once to x's dtype; outside the slice a bit-exact copy of ``x`` (NaN payloads included). An empty
    slice returns a copy of ``x``.

    Evaluated near memory speed in two phases: the result is first a plain copy of ``x`` (one large copy
    per thread: as fast as ``x.copy()``, where copies of cache-sized blocks are not), then its slice is
    rewritten in cache-sized blocks of rows (see ``_BlockEvaluator``). Inputs of at least
    ``native.MIN_BLOCKS_PER_THREAD`` blocks per thread are split over ``workers`` threads (default
    ``native.HOST_THREADS``: 2, or 1 on a single CPU) in both phases; numpy releases the GIL inside its loops. Every
    block is computed the same way, so the result does not depend on the split.
    """
    start, end = check_arguments(rotation, x, cos, sin, rotary_mode, partial_slice)
    out = np.empty(x.shape, x.dtype)
    if start == end or out.size == 0:
        np.copyto(out, x)
        return out
    length = end - start
    pairs = _numbered_pairs(rotation.pairs(rotary_mode, length), length)
    broadcast_axes = tuple(axis for axis in range(3) if cos.shape[axis] == 1 and x.shape[axis] > 1)
    blocks = _block_indices(x.shape[:3], x.shape[-1], broadcast_axes)
    # the first block is the largest: later ones only differ by a shorter tail along the split axis
    block_rows = math.prod(len(range(*part.indices(size))) for part, size in zip(blocks[0], x.shape[:3]))
    whole_tables = None
    if 16 * cos.size <= x.nbytes // 2:
        table_shape = cos.shape[:-1] + (length // 2,)
        whole_tables = (np.empty(table_shape, np.complex128), np.empty(table_shape, np.complex128))
        rotation.fill_tables(pairs, cos, sin, *whole_tables)
    workers = threads_for(len(blocks), workers)
    shares = [blocks[len(blocks) * i // workers:len(blocks) * (i + 1) // workers] for i in range(workers)]
    evaluators = [_BlockEvaluator(cos, sin, out, start, end, pairs, block_rows, whole_tables, rotation.fill_tables)
                  for _ in shares]
    copies = [functools.partial(np.copyto, out[part], x[part]) for part in _leading_parts(x.shape, workers)]
    runs = [functools.partial(evaluator.run, share) for evaluator, share in zip(evaluators, shares)]
    from concurrent.futures import ThreadPoolExecutor      # here: a small run never starts threads

    with ThreadPoolExecutor(workers - 1) if workers > 1 else contextlib.nullcontext() as pool:
        _run_together(pool, copies)
        _run_together(pool, runs)
    return out


def _leading_parts(shape: tuple[int, ...], parts: int) -> list[tuple[slice, ...]]:
    """Index tuples that cut an array of ``shape`` into ``parts`` nearly equal pieces along its first axis
    of at least ``parts`` indices (for two parts the axes before it have size 1, so each piece of a
    C-ordered array is one contiguous range)."""
    axis = next(axis for axis, size in enumerate(shape) if size >= parts)
    size = shape[axis]
    return [(slice(None),) * axis + (slice(size * i // parts, size * (i + 1) // parts),) for i in range(parts)]


def _run_together(pool: ThreadPoolExecutor | None, tasks: list) -> None:
    """Call every one of ``tasks``: the first on this thread, the others on ``pool`` (None when there are
    no others); return when all are done, re-raising the first error."""
    in_threads(tasks, pool)


# ---------------------------------------------------------------------------------------------------
# The slice's golden and magnitude block by block (for judging: default_pass.py fuses them with the comparison)

_HIGH_HALF = 1 if sys.byteorder == "little" else 0      # index of a 32-bit word's upper 16 bits
# Slice elements per judging block: a judging thread's dozen float64 work buffers of this size (128 KiB
# each) stay in its core's L2 cache; larger blocks measured slower on the 2-vCPU host, smaller ones pay
# numpy's per-call cost (about 1 us per operation, some 40 operations a block).
JUDGE_BLOCK_ELEMENTS = 1 << 14


class Widener:
    """Exact conversion of float32, float16 or bfloat16 arrays (any strides) to float64, with reused staging.

    A bfloat16 number is the float32 whose upper 16 bits are its bit pattern, so bfloat16 goes through
    its bits: they are copied into the upper halves of 32-bit words whose lower halves stay zero, and the
    words are widened as float32 -- exact, and several times faster than ml_dtypes' element-wise cast.
    """

    def __init__(self, size: int):
        self._size = size
        self._words: np.ndarray | None = None

    def __call__(self, values: np.ndarray, out: np.ndarray) -> np.ndarray:
        """``values`` converted exactly into the float64 array ``out`` (same shape, at most ``size``
        elements); returns ``out``."""
        if values.dtype.name == "bfloat16":
            if self._words is None:
                self._words = np.zeros(self._size, np.uint32)
            words = self._words[:out.size].reshape(out.shape)
            np.copyto(words.view(np.uint16)[..., _HIGH_HALF::2], values.view(np.uint16))
            np.copyto(out, words.view(np.float32))
        else:
            np.copyto(out, values, casting="unsafe")
        return out


def _magnitude_tables(a: np.ndarray, b: np.ndarray, ma: np.ndarray, mb: np.ndarray) -> None:
    """The magnitude tables of the complex tables ``a``, ``b``: ``ma = |Re a| - i|Im a|``,
    ``mb = |Re b| + i|Im b|`` (see ``SliceTerms``)."""
    np.abs(a.real, out=ma.real)
    np.abs(a.imag, out=ma.imag)
    np.negative(ma.imag, out=ma.imag)
    np.abs(b.real, out=mb.real)
    np.abs(b.imag, out=mb.imag)


class SliceTerms:
    """The golden of an operator's slice and its magnitude, evaluated block by block in float64.

    Per output element the golden is ``c*x + sign*s*x'`` (``rotated_slice``) and the magnitude
    ``|c*x| + |s*x'|`` (``rotated_magnitude``), bit for bit. With pairs ``z = x[p] + i*x[q]`` and the complex tables
    ``a``, ``b`` of the golden (``_BlockEvaluator``), the golden is ``Re(z*a)`` at ``p'`` and ``Im(z*b)`` at
    ``q'``. The magnitudes are parts of products too: with ``|z| = |x[p]| + i|x[q]|``,
    ``ma = |Re a| - i|Im a|`` and ``mb = |Re b| + i|Im b|``::

        Re(|z|*ma) = |x[p]|*|Re a| + |x[q]|*|Im a|,      Im(|z|*mb) = |x[p]|*|Im b| + |x[q]|*|Re b|

    (for the grad ``|c[p]*g[p]| + |s[q]*g[q]|`` and ``|s[p]*g[p]| + |c[q]*g[q]|``): two products exact in
    float64 and one rounded sum, as in the plain formulas.

    ``blocks`` are ``(index, first_row)``: the index tuple of a block of whole rows of the in-place
    tensor (a contiguous run of rows, ordered so that blocks sharing cos/sin rows follow each other)
    and the flat number of its first row. One ``TermsEvaluator`` per thread evaluates them.
    """

    def __init__(self, rotation: Rotation, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, rotary_mode: int,
                 partial_slice, block_elements: int | None = None):
        self.start, self.end = check_arguments(rotation, x, cos, sin, rotary_mode, partial_slice)
        self.length = self.end - self.start
        if self.length == 0 or x.size == 0:
            raise ValueError("an empty slice has no terms")
        self.x, self.cos, self.sin = x, cos, sin
        self.fill_tables = rotation.fill_tables
        self.pairs = _numbered_pairs(rotation.pairs(rotary_mode, self.length), self.length)
        even, odd = slice(0, self.length, 2), slice(1, self.length, 2)
        single = self.pairs[0][0] if len(self.pairs) == 1 else None
        self.adjacent_in = single is not None and (single.first, single.second) == (even, odd)
        self.adjacent_out = single is not None and (single.first_out, single.second_out) == (even, odd)
        rows_shape = x.shape[:3]
        broadcast_axes = tuple(axis for axis in range(3) if cos.shape[axis] == 1 and x.shape[axis] > 1)
        indices = _block_indices(rows_shape, self.length, broadcast_axes,
                                 JUDGE_BLOCK_ELEMENTS if block_elements is None else block_elements)
        self.blocks = [(index, int(np.ravel_multi_index(tuple(part.start or 0 for part in index), rows_shape)))
                       for index in indices]
        self.block_rows = math.prod(len(range(*part.indices(size))) for part, size in zip(indices[0], rows_shape))
        self.block_size = self.block_rows * self.length
        self.whole_tables = None
        if 2 * cos.size <= math.prod(rows_shape) * self.length:        # small (broadcast) tables: once
            table_shape = cos.shape[:-1] + (self.length // 2,)
            a, b, ma, mb = (np.empty(table_shape, np.complex128) for _ in range(4))
            with np.errstate(all="ignore"):
                rotation.fill_tables(self.pairs, cos.astype(np.float64), sin.astype(np.float64), a, b)
                _magnitude_tables(a, b, ma, mb)
            self.whole_tables = (a, b, ma, mb)

    def evaluator(self) -> "TermsEvaluator":
        """A new evaluator (work buffers of its own: one per thread)."""
        return TermsEvaluator(self)


class TermsEvaluator:
    """Evaluates blocks of a ``SliceTerms`` in reused float64 buffers (see there).

    ``golden_seconds`` adds up the time spent widening the input and forming the golden.
    """

    # buffer roles: the widened input, three complex work buffers, gathered pairs, scattered golden and
    # magnitude, four expanded tables, widened cos and sin parts
    _INPUT, _ONE, _TWO, _THREE, _PAIRS, _GOLDEN, _MAGNITUDE, _TABLES, _COS = 0, 1, 2, 3, 4, 5, 6, 7, 11

    def __init__(self, terms: SliceTerms):
        self.terms = terms
        self.buffers = _huge_page_buffers(13, terms.block_size)
        self.widen = Widener(terms.block_size)
        self.table_key = None
        self.golden_seconds = 0.0

    def _real(self, role: int, shape: tuple[int, ...]) -> np.ndarray:
        return self.buffers[role][:math.prod(shape)].reshape(shape)

    def _complex(self, role: int, pair_shape: tuple[int, ...]) -> np.ndarray:
        return self.buffers[role][:2 * math.prod(pair_shape)].view(np.complex128).reshape(pair_shape)

    def _tables(self, index: tuple[slice, ...], pair_shape: tuple[int, ...]) -> list[np.ndarray]:
        """``a, b, ma, mb`` for a block of ``pair_shape`` pairs: views of the whole tables when they have the
        block's shape, else expanded (or built) into buffers, reused by the next block of the same rows."""
        terms = self.terms
        table_index = tuple(slice(None) if size == 1 else part for part, size in zip(index, terms.cos.shape))
        parts = None
        if terms.whole_tables is not None:
            parts = [table[table_index] for table in terms.whole_tables]
            if parts[0].shape == pair_shape:
                return parts
        views = [self._complex(self._TABLES + i, pair_shape) for i in range(4)]
        key = (table_index, pair_shape)
        if key != self.table_key:
            self.table_key = key
            if parts is None:
                cos_part, sin_part = terms.cos[table_index], terms.sin[table_index]
                cos64 = self.widen(cos_part, self._real(self._COS, cos_part.shape))
                sin64 = self.widen(sin_part, self._real(self._COS + 1, sin_part.shape))
                compact_shape = cos_part.shape[:-1] + pair_shape[-1:]
                parts = views if compact_shape == pair_shape else [np.empty(compact_shape, np.complex128)
                                                                   for _ in range(4)]
                terms.fill_tables(terms.pairs, cos64, sin64, parts[0], parts[1])
                _magnitude_tables(*parts)
            if parts is not views:
                for view, part in zip(views, parts):
                    np.copyto(view, part)
        return views

    def evaluate(self, index: tuple[slice, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(x, golden, magnitude)`` of the block ``index``: the input's slice widened to float64 (in lane
        order) and the golden and magnitude of each output lane, all ``(rows..., L)`` float64 views of
        the buffers, valid until the next call."""
        began = time.perf_counter()
        terms = self.terms
        source = terms.x[index][..., terms.start:terms.end]
        shape = source.shape
        pair_shape = shape[:-1] + (terms.length // 2,)
        x = self.widen(source, self._real(self._INPUT, shape))
        a, b, ma, mb = self._tables(index, pair_shape)
        one, two, three = (self._complex(role, pair_shape) for role in (self._ONE, self._TWO, self._THREE))
        if terms.adjacent_in:
            z = x.view(np.complex128)
        else:
            z = self._complex(self._PAIRS, pair_shape)
            for pair, ks in terms.pairs:
                np.copyto(z.real[..., ks], x[..., pair.first])
                np.copyto(z.imag[..., ks], x[..., pair.second])
        np.multiply(z, a, out=one)
        np.multiply(z, b, out=two)
        golden = self._parts(one, two, self._GOLDEN, shape)
        self.golden_seconds += time.perf_counter() - began
        np.abs(z.view(np.float64), out=three.view(np.float64))
        np.multiply(three, mb, out=two)
        np.multiply(three, ma, out=three)
        magnitude = self._parts(three, two, self._MAGNITUDE, shape)
        return x, golden, magnitude

    def _parts(self, first: np.ndarray, second: np.ndarray, role: int, shape: tuple[int, ...]) -> np.ndarray:
        """The real array of output lanes holding ``Re(first)`` at each ``p'`` and ``Im(second)`` at each
        ``q'``: ``first``'s own buffer when the lanes are adjacent, else buffer ``role``."""
        terms = self.terms
        if terms.adjacent_out:
            np.copyto(first.imag, second.imag)
            return first.view(np.float64)
        out = self._real(role, shape)
        for pair, ks in terms.pairs:
            np.copyto(out[..., pair.first_out], first.real[..., ks])
            np.copyto(out[..., pair.second_out], second.imag[..., ks])
        return out
