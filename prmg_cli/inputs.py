"""Seeded, reproducible inputs for a case: uniform, normal, explicit values, .npy files, RoPE tables.

Every tensor gets its own generator, ``PCG64(SeedSequence([case.seed, tensor index]))`` with the
index 0 for dy, 1 for cos, 2 for sin, so the same case gives the same bits on every machine. Values
are drawn in float64 and rounded once to the tensor's dtype (a bfloat16 draw is a legitimate bfloat16
number): ``uniform(lo, hi)`` is ``lo + (hi - lo) * U`` and ``normal(mean, std)`` is ``mean + std * Z``, with
``U`` the generator's ``random()`` and ``Z`` its ``standard_normal()`` streams -- exactly what numpy's
``Generator.uniform`` / ``normal`` compute, each operation rounded on its own (never fused), so the bits do
not depend on the machine's numpy build. Large tensors are generated in cache-sized chunks straight into
the output, with the same result as generating them at once; a large uniform tensor is split over two
threads, the second starting its stream where the first one's part ends (``PCG64.advance``: one 64-bit
output per float64 draw).
"""

from __future__ import annotations

import hashlib
import math
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from prmg_cli import dtypes, native, npyfile
from prmg_cli.errors import PrmgError

TENSOR_INDEX = {"dy": 0, "cos": 1, "sin": 2}
CHUNK_ELEMENTS = 1 << 16            # float64 draws per chunk: 512 KiB, in cache while they are rounded
DRAW_THREADS = min(2, os.cpu_count() or 1)
THREADED_DRAWS = 1 << 20            # uniform tensors from this size are split over DRAW_THREADS threads
NATIVE_ROUNDING = 1 << 12           # tensors from this size are rounded by the compiled helper
RECYCLE_MIN_BYTES = 1 << 22         # arrays from this size are recycled (``recycled_empty``)
_RECYCLED: dict = {}


def recycled_empty(key, shape: tuple[int, ...], dtype, pool: dict = _RECYCLED) -> np.ndarray:
    """``np.empty(shape, dtype)``, or for a large array the one ``key`` got last time when nothing holds it
    any more (no array, view or Inputs refers to it): its pages are mapped already, so the fresh array's
    page faults and zeroing (about a copy's worth of time) are saved. The pool keeps one array per key."""
    dtype = np.dtype(dtype)
    if math.prod(shape) * dtype.itemsize < RECYCLE_MIN_BYTES:
        return np.empty(shape, dtype)
    if key in pool:
        if pool[key].shape == tuple(shape) and pool[key].dtype == dtype and sys.getrefcount(pool[key]) == 2:
            return pool[key]                  # referenced by the pool alone (and getrefcount's argument)
        del pool[key]                          # in use, or another shape: let it go
    pool[key] = np.empty(shape, dtype)
    return pool[key]
_HALF, _INTERLEAVE, _QUARTER, _INTERLEAVE_HALF = 0, 1, 2, 3


@dataclass(frozen=True)
class Inputs:
    """The three input tensors of one case, each in its own dtype (dy's shape, cos/sin shapes)."""

    dy: np.ndarray
    cos: np.ndarray
    sin: np.ndarray


def default_seed(name: str) -> int:
    """A seed derived stably from a case name: the first 8 bytes of its SHA-256, masked to 63 bits."""
    digest = hashlib.sha256(name.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)


def tensor_generator(seed: int, tensor: str) -> np.random.Generator:
    """The generator of one tensor of a case: ``PCG64(SeedSequence([seed, tensor index]))``."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([int(seed), TENSOR_INDEX[tensor]])))


def make_inputs(case, *, chunk_elements: int = CHUNK_ELEMENTS) -> Inputs:
    """dy, cos and sin of ``case`` as its ``dy_input``/``cos_input``/``sin_input`` describe them.

    Shapes that a negative case uses (not 4-D, zero-sized) are built as given. Mistakes in the specs
    (wrong argument count, a value list of the wrong length, a missing or mismatched .npy file) raise
    ``PrmgError`` naming the case and the field ``inputs.<tensor>``.
    """
    shapes = {"dy": case.shape, "cos": case.cos_shape, "sin": case.sin_shape}
    dtype_names = {"dy": case.dtype, "cos": case.cos_dtype, "sin": case.sin_dtype}
    made = {}
    for tensor in TENSOR_INDEX:
        try:
            dtype = dtypes.to_numpy(dtype_names[tensor])
        except KeyError:
            field = "dtype" if tensor == "dy" else f"{tensor}_dtype"
            raise PrmgError(f"unknown dtype '{dtype_names[tensor]}'", file=case.source, case=case.name,
                            field=field) from None
        made[tensor] = _make_tensor(case, tensor, tuple(int(n) for n in shapes[tensor]), dtype,
                                    chunk_elements)
    return Inputs(**made)


def _make_tensor(case, tensor: str, shape: tuple[int, ...], dtype: np.dtype,
                 chunk_elements: int) -> np.ndarray:
    spec = case.input_spec(tensor)
    field = f"inputs.{tensor}.{spec.kind}"

    def fail(reason: str) -> PrmgError:
        return PrmgError(reason, file=case.source, case=case.name, field=field)

    args = tuple(spec.args)
    if spec.kind in ("uniform", "normal"):
        numbers = _numbers(args, 2, fail)
        if spec.kind == "normal" and numbers[1] < 0:
            raise fail(f"the standard deviation must be >= 0, got {numbers[1]}")
        return _draw(tensor_generator(case.seed, tensor), spec.kind, numbers, shape, dtype, chunk_elements,
                     tensor)
    if spec.kind == "values":
        return _from_values(args, shape, dtype, fail)
    if spec.kind == "bits":
        return _from_bits(args, shape, dtype, fail)
    if spec.kind == "file":
        if len(args) not in (1, 2) or not all(isinstance(arg, str) for arg in args):
            raise fail("expected a .npy path (and the folder it must stay inside)")
        return _from_file(args[0], shape, dtype, fail, args[1] if len(args) == 2 else None)
    if spec.kind == "rope":
        if tensor == "dy":
            raise fail("a RoPE table is for cos and sin only")
        if len(args) not in (1, 2):
            raise fail(f"expected (base,) or (base, position_offset), got {args!r}")
        base, = _numbers(args[:1], 1, fail)
        offset = args[1] if len(args) == 2 else 0.0
        offset = _numbers(tuple(offset), len(offset), fail) if isinstance(offset, (tuple, list)) \
            else _numbers((offset,), 1, fail)[0]
        if not base > 0:
            raise fail(f"the base must be > 0, got {base}")
        angles = rope_angles(shape, case.rotary_mode, base, offset)
        return _round(np.cos(angles) if tensor == "cos" else np.sin(angles), dtype)
    raise fail(f"unknown input kind '{spec.kind}' (expected uniform, normal, values, file or rope)")


def _numbers(args: tuple, count: int, fail) -> tuple[float, ...]:
    """``args`` as ``count`` finite floats."""
    if len(args) != count:
        raise fail(f"expected {count} numbers, got {args!r}")
    try:
        numbers = tuple(float(a) for a in args)
    except (TypeError, ValueError):
        raise fail(f"expected numbers, got {args!r}") from None
    if not all(np.isfinite(numbers)):
        raise fail(f"expected finite numbers, got {args!r}")
    return numbers


def _round(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """float64 ``values`` rounded once to ``dtype`` (non-float dtypes: cast, for negative cases)."""
    return values.astype(dtype, casting="unsafe")


def _draw(generator: np.random.Generator, kind: str, params: tuple[float, float], shape: tuple[int, ...],
          dtype: np.dtype, chunk_elements: int, tensor: str = "") -> np.ndarray:
    """Draws of ``kind`` (uniform(lo, hi) or normal(mean, std)) in float64, written chunk by chunk into
    a new array of ``dtype`` (``recycled_empty`` of ``tensor``); the stream is consumed in order, so the
    chunk size (and the split over threads) does not matter."""
    out = recycled_empty(("draw", tensor), shape, dtype)
    flat = out.reshape(-1)
    chunk_elements = max(1, int(chunk_elements))
    if kind == "uniform":
        generator.uniform(params[0], params[1], 0)          # numpy's own argument checks and errors
        method, scale, offset = "random", params[1] - params[0], params[0]
    else:
        generator.normal(params[0], params[1], 0)
        method, scale, offset = "standard_normal", params[1], params[0]
    bit_generator = generator.bit_generator
    threads = DRAW_THREADS if method == "random" and flat.size >= THREADED_DRAWS else 1
    if threads == 1 or type(bit_generator) is not np.random.PCG64:
        _fill(generator, method, flat, scale, offset, chunk_elements)
        return out
    edges = [flat.size * i // threads for i in range(threads + 1)]
    parts = []
    for begin, end in zip(edges, edges[1:]):
        part = np.random.PCG64()
        part.state = bit_generator.state
        part.advance(begin)                                  # one 64-bit output per float64 draw
        parts.append((np.random.Generator(part), flat[begin:end]))
    bit_generator.advance(flat.size)                         # as if this generator drew them all
    with ThreadPoolExecutor(threads - 1) as pool:
        helpers = [pool.submit(_fill, part, method, target, scale, offset, chunk_elements)
                   for part, target in parts[1:]]
        _fill(parts[0][0], method, parts[0][1], scale, offset, chunk_elements)
        for helper in helpers:
            helper.result()
    return out


def _fill(generator: np.random.Generator, method: str, flat: np.ndarray, scale: float, offset: float,
          chunk_elements: int) -> None:
    """``flat[:] = offset + scale * draws`` rounded once to flat's dtype, ``draws`` from ``generator``'s
    ``method`` stream (``random`` or ``standard_normal``), one reused float64 chunk at a time."""
    buffer = np.empty(min(chunk_elements, flat.size))
    name = dtypes.from_numpy(flat.dtype).name if flat.size >= NATIVE_ROUNDING else ""
    for begin in range(0, flat.size, chunk_elements):
        count = min(chunk_elements, flat.size - begin)
        draws = buffer[:count]
        getattr(generator, method)(out=draws)
        target = flat[begin:begin + count]
        if not (name and native.affine_round(draws, scale, offset, name, target)):
            np.multiply(draws, scale, out=draws)
            np.add(draws, offset, out=draws)
            np.copyto(target, draws, casting="unsafe")


def _from_values(args: tuple, shape: tuple[int, ...], dtype: np.dtype, fail) -> np.ndarray:
    """A flat C-order list of numbers, exactly as many as the tensor has elements."""
    size = int(np.prod(shape, dtype=np.int64))
    if len(args) != size:
        raise fail(f"{len(args)} values given but the tensor {tuple(shape)} has {size} elements")
    try:
        values = np.array(args, dtype=np.float64)
    except (TypeError, ValueError):
        raise fail("the values must all be numbers") from None
    return _round(values.reshape(shape), dtype)


def _from_bits(args: tuple, shape: tuple[int, ...], dtype: np.dtype, fail) -> np.ndarray:
    """A flat C-order list of bit patterns of ``dtype`` (each ``0 <= pattern < 2**bits``), exactly as many as the
    tensor has elements: every value, NaN payloads and signs included, exactly as given."""
    size = int(np.prod(shape, dtype=np.int64))
    if len(args) != size:
        raise fail(f"{len(args)} bit patterns given but the tensor {tuple(shape)} has {size} elements")
    width = np.dtype(dtype).itemsize
    try:
        patterns = np.array(args, dtype=np.uint64)
    except (TypeError, ValueError, OverflowError):
        raise fail("the bit patterns must all be integers >= 0") from None
    if patterns.size and int(patterns.max()) >> (8 * width):
        raise fail(f"a bit pattern does not fit the tensor's {8 * width} bits")
    return patterns.astype(np.dtype(f"u{width}")).view(dtype).reshape(shape)


def _from_file(path: str, shape: tuple[int, ...], dtype: np.dtype, fail, folder: str | None = None) -> np.ndarray:
    """A .npy file with as many elements as the tensor, read in C order (the case format's rule, which
    the loader checks too); uint16 data for a bfloat16 tensor are its bit patterns, other numeric data
    are rounded to the tensor's dtype.

    The loader's rules hold again here, since the file may have changed since: a regular file (never a
    FIFO or device), inside ``folder`` when given, a bounded header, plain numbers only (no pickles),
    data filling the file exactly (``npyfile.load``)."""
    size = int(np.prod(shape, dtype=np.int64))
    try:
        array = npyfile.load(path, size, folder)
    except npyfile.CountMismatch as error:
        raise fail(f"{path} has shape {error.shape} ({error.count} elements), the tensor {tuple(shape)} "
                   f"needs {size}") from None
    except npyfile.NpyError as error:
        raise fail(f"cannot read the .npy input: {error}") from None
    array = array.reshape(shape)
    if dtype == dtypes.to_numpy("bfloat16") and array.dtype == np.uint16:
        return array.view(dtype).copy()
    return array.astype(dtype, casting="unsafe")


def rope_angles(shape: tuple[int, ...], rotary_mode: int, base: float,
                position_offset: float | tuple[float, ...] = 0.0) -> np.ndarray:
    """The float64 angle table ``theta`` of a real RoPE, laid out for ``rotary_mode``, broadcast to ``shape``.

    Position ``pos = position_offset + s`` with ``s`` the index along the S axis (axis -3; 0 for
    tensors of fewer than 3 axes); a tuple of offsets gives one per index ``b`` of a 4-D table's B axis
    (``pos = position_offset[b] + s``: per-request positions). With ``L = shape[-1]`` and
    ``inv_freq_j = base**(-2j/L)``:
      half, interleave-half: ``cat(theta_0..theta_{L/2-1}, theta_0..theta_{L/2-1})``
      interleave:            ``theta_0, theta_0, theta_1, theta_1, ...``
      quarter:               each half of the slice is a half-layout table of length ``L/2``
                             (frequencies ``base**(-2j/(L/2))``)
    where ``theta_j = pos * inv_freq_j``.
    """
    length = shape[-1] if shape else 0
    lane = np.arange(length)
    if rotary_mode == _INTERLEAVE:
        frequency_index, period = lane // 2, length
    elif rotary_mode == _QUARTER:
        half = (length + 1) // 2
        frequency_index, period = (lane % max(half, 1)) % max((half + 1) // 2, 1), half
    else:
        frequency_index, period = lane % max((length + 1) // 2, 1), length
    inv_freq = float(base) ** (-2.0 * frequency_index / max(period, 1))
    positions_count = shape[-3] if len(shape) >= 3 else 1
    offsets = np.asarray(position_offset, dtype=np.float64)
    if offsets.ndim and len(shape) == 4:
        positions = offsets[:, None] + np.arange(positions_count, dtype=np.float64)     # (B, S)
        return np.broadcast_to(positions[:, :, None, None] * inv_freq, shape)
    positions = offsets.reshape(-1)[0] + np.arange(positions_count, dtype=np.float64)
    angles = positions[:, None] * inv_freq[None, :]
    if len(shape) >= 3:
        angles = angles.reshape((positions_count, 1, length))
    else:
        angles = angles[0]
    return np.broadcast_to(angles, shape)
