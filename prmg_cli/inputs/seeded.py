"""Seeded, reproducible inputs for a case: uniform, normal, explicit values, .npy files, RoPE tables.

Values are drawn in float64 and rounded once to the tensor's dtype (a bfloat16 draw is a legitimate bfloat16
number): ``uniform(lo, hi)`` is ``lo + (hi - lo) * U`` and ``normal(mean, std)`` is ``mean + std * Z``, each
operation rounded on its own (never fused), so the bits do not depend on the machine's numpy build. The
case's ``generator`` (``vocab.GENERATORS``) says where ``U`` and ``Z`` come from; each tensor has its own
stream, tensor index 0 for dy, 1 for cos, 2 for sin, so the same case gives the same bits on every machine:

``philox4x32`` (the default): ``U`` of the element at C-order position ``e`` is word ``e % 4`` of block ``e // 4``
of Philox4x32-10 (Random123's ``philox4x32``, 10 rounds; ``philox4x32_10``), times ``2**-32``: block ``m`` is the
cipher of the counter ``(m mod 2**32, m // 2**32, tensor index, 0)`` under the key ``(seed mod 2**32, seed //
2**32)``. ``Z`` is drawn as under ``philox``. Any element range can be made on its own, and the compiled helper
runs the rounds of sixteen (AVX-512) or eight (AVX2) blocks side by side (32-bit products), draws and rounds in
one pass (``native.uniform``; the numpy path, ``_philox4x32_words``, stays the reference, bit for bit).

``philox`` (the default before ``philox4x32``; select it to reproduce those results): the tensor's key is
``(case.seed, tensor index)``, and its elements (C order) form chunks of ``STREAM_CHUNK`` = 65536. Chunk ``j`` draws
from numpy's ``Philox(key=key, counter=(0, j, 0, 0))``, whose block ``b`` of four 64-bit words is Philox4x64-10 at
counter ``(b + 1, j, 0, 0)``. The element at position ``k`` of its chunk has ``U`` = the 32-bit half ``k % 2`` (the
low half first) of 64-bit word ``k // 2`` of that stream, times ``2**-32`` (``_philox_words``); ``Z`` is
``Generator(that Philox).standard_normal`` of the chunk's elements, in order.

``pcg64`` (how prmg drew inputs before ``philox``): ``U`` and ``Z`` are the ``random()`` and ``standard_normal()``
streams of ``PCG64(SeedSequence([case.seed, tensor index]))`` -- exactly what numpy's ``Generator.uniform`` /
``normal`` compute. A large uniform tensor is split over two threads, the second starting its stream where the
first one's part ends (``PCG64.advance``: one 64-bit output per float64 draw).

Large tensors are made in cache-sized chunks straight into the output, with the same result as making
them at once.
"""

from __future__ import annotations

import functools
import hashlib
import math
import sys
from dataclasses import dataclass

import numpy as np

from prmg_cli import dtypes, native
from prmg_cli.case import Case
from prmg_cli.errors import PrmgError
from prmg_cli.inputs import npyfile
from prmg_cli.results import plural
from prmg_cli.vocab import GENERATORS, INTERLEAVE, QUARTER

TENSOR_INDEX = {"dy": 0, "cos": 1, "sin": 2}
STREAM_CHUNK = 1 << 16              # elements per Philox stream: part of the inputs' definition, never tuned
CHUNK_ELEMENTS = 1 << 16            # float64 draws per chunk: 512 KiB, in cache while they are rounded
THREADED_DRAWS = 1 << 20            # tensors from this size are split over native.HOST_THREADS threads
# Philox4x32-10 (Random123): the round multipliers and the key's Weyl increments, part of the inputs' definition
PHILOX4X32_MULTIPLIERS = (np.uint64(0xD2511F53), np.uint64(0xCD9E8D57))
PHILOX4X32_WEYL = (0x9E3779B9, 0xBB67AE85)
WORD = (1 << 32) - 1
_ARGUMENTS = np.random.Generator(np.random.Philox(0))     # numpy's argument checks of uniform / normal (size 0)
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
    """The ``pcg64`` generator of one tensor of a case: ``PCG64(SeedSequence([seed, tensor index]))``."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([int(seed), TENSOR_INDEX[tensor]])))


def philox_key(seed: int, tensor: str) -> tuple[int, int]:
    """The ``philox`` key of one tensor of a case: ``(seed, tensor index)``."""
    return int(seed), TENSOR_INDEX[tensor]


def philox_stream(key: tuple[int, int], chunk: int, block: int = 0) -> np.random.Philox:
    """numpy's Philox of chunk ``chunk`` of the tensor keyed ``key``, about to make its block ``block``
    (counter ``(block, chunk, 0, 0)``: numpy adds 1 before each block)."""
    return np.random.Philox(key=np.array(key, np.uint64), counter=np.array([block, chunk, 0, 0], np.uint64))


def make_inputs(case: Case, *, chunk_elements: int = CHUNK_ELEMENTS) -> Inputs:
    """dy, cos and sin of ``case`` as its ``dy_input``/``cos_input``/``sin_input`` describe them.

    Shapes that a negative case uses (not 4-D, zero-sized) are built as given. A cos or sin expanded along an axis
    (stride 0) repeats along it the values made at its index 0 (``_repeated``). Mistakes in the specs
    (wrong argument count, a value list of the wrong length, a missing or mismatched .npy file) raise
    ``PrmgError`` naming the case and the field ``inputs.<tensor>``.
    """
    shapes = {"dy": case.shape, "cos": case.cos_shape, "sin": case.sin_shape}
    made = {}
    for tensor in TENSOR_INDEX:
        try:
            dtype = dtypes.to_numpy(case.dtype_of(tensor))
        except KeyError:
            field = "dtype" if tensor == "dy" else f"{tensor}_dtype"
            raise PrmgError(f"unknown dtype '{case.dtype_of(tensor)}'", file=case.source, case=case.name,
                            field=field) from None
        made[tensor] = _repeated(_make_tensor(case, tensor, tuple(int(n) for n in shapes[tensor]), dtype,
                                              chunk_elements), case.expanded_axes(tensor))
    return Inputs(**made)


def _repeated(values: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """``values`` with each index along ``axes`` (an expanded view's stride-0 axes, ``case.expanded_axes``) holding
    what index 0 holds: the one storage row every index of such an axis reads (``values`` itself when none)."""
    if not axes:
        return values
    first = values[tuple(slice(0, 1) if axis in axes else slice(None) for axis in range(values.ndim))]
    return np.ascontiguousarray(np.broadcast_to(first, values.shape))


def _make_tensor(case: Case, tensor: str, shape: tuple[int, ...], dtype: np.dtype,
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
        return _draw(case.generator, case.seed, tensor, spec.kind, numbers, shape, dtype, chunk_elements)
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
        return dtypes.rounded(np.cos(angles) if tensor == "cos" else np.sin(angles), dtype)
    raise fail(f"unknown input kind '{spec.kind}' (expected uniform, normal, values, file or rope)")


def _numbers(args: tuple, count: int, fail) -> tuple[float, ...]:
    """``args`` as ``count`` finite floats."""
    if len(args) != count:
        raise fail(f"expected {plural(count, 'number')}, got {args!r}")
    try:
        numbers = tuple(float(a) for a in args)
    except (TypeError, ValueError):
        raise fail(f"expected numbers, got {args!r}") from None
    if not all(np.isfinite(numbers)):
        raise fail(f"expected finite numbers, got {args!r}")
    return numbers


@functools.lru_cache(maxsize=256)
def _check_arguments(kind: str, first: float, second: float) -> None:
    """numpy's own argument checks and errors of a draw of ``kind`` (uniform(first, second) or normal(first, second)):
    a draw of size 0, 4 us, made once per arguments (an error is not kept: it is raised again each time)."""
    getattr(_ARGUMENTS, kind)(first, second, 0)


def _draw(generator: str, seed: int, tensor: str, kind: str, params: tuple[float, float], shape: tuple[int, ...],
          dtype: np.dtype, chunk_elements: int) -> np.ndarray:
    """Draws of ``kind`` (uniform(lo, hi) or normal(mean, std)) from ``generator``'s stream of ``tensor``, in
    float64, rounded into a new array of ``dtype`` (``recycled_empty`` of ``tensor``) ``chunk_elements`` at a
    time (which does not change them)."""
    _check_arguments(kind, params[0], params[1])
    scale, offset = (params[1] - params[0], params[0]) if kind == "uniform" else (params[1], params[0])
    out = recycled_empty(("draw", tensor), shape, dtype)
    _DRAWS[generator](seed, tensor, kind, out.reshape(-1), scale, offset, max(1, int(chunk_elements)))
    return out


def drawn_prefix(case: Case, tensor: str, count: int) -> np.ndarray:
    """The float64 draws ``offset + scale * U`` (or ``Z``) of the first ``count`` elements (C order) of ``tensor`` of
    ``case``, a ``uniform`` or ``normal`` draw, before their one rounding: the same ``_draw`` of the case's
    generator as ``make_inputs`` (drawing fewer elements changes none of the first ones: a ``philox`` element
    depends on its position only, ``pcg64``'s stream is read in order). Rounded to the tensor's dtype
    (``dtypes.rounded``) they are its first elements (``prmg coverage`` reads them so, with no bfloat16 array
    and no ml_dtypes import)."""
    spec = case.input_spec(tensor)
    return _draw(case.generator, case.seed, tensor, spec.kind, tuple(float(a) for a in spec.args), (int(count),),
                 np.dtype(np.float64), CHUNK_ELEMENTS)


def _in_threads(parts: list, fill) -> None:
    """``fill(part)`` for every part, the first on this thread, the others on threads of their own."""
    native.in_threads([lambda part=part: fill(part) for part in parts])


def _split(count: int, threads: int) -> list[tuple[int, int]]:
    """``[0, count)`` as ``threads`` consecutive (begin, end) ranges."""
    edges = [count * i // threads for i in range(threads + 1)]
    return list(zip(edges, edges[1:]))


def _draw_philox(seed: int, tensor: str, kind: str, flat: np.ndarray, scale: float, offset: float,
                 chunk_elements: int, generator: str = "philox") -> None:
    """``flat[:] = offset + scale * U`` (or ``* Z``), rounded once, from the ``philox`` streams of ``tensor`` (U from
    ``generator``'s, ``philox`` or ``philox4x32``: module docstring); uniform draws ``chunk_elements`` at a time,
    normal ones a stream chunk at a time."""
    key = philox_key(seed, tensor)
    threads = native.HOST_THREADS if flat.size >= THREADED_DRAWS else 1
    if kind == "uniform":
        def fill(part: tuple[int, int]) -> None:
            buffer = np.empty(min(chunk_elements, part[1] - part[0]))
            for begin in range(part[0], part[1], chunk_elements):
                _uniform(generator, key, begin, flat[begin:min(begin + chunk_elements, part[1])], scale, offset,
                         buffer)
        _in_threads(_split(flat.size, threads), fill)
        return

    def fill_normal(part: tuple[int, int]) -> None:
        buffer = np.empty(min(STREAM_CHUNK, flat.size))
        for chunk in range(*part):
            target = flat[chunk * STREAM_CHUNK:(chunk + 1) * STREAM_CHUNK]
            draws = buffer[:target.size]
            np.random.Generator(philox_stream(key, chunk)).standard_normal(out=draws)
            _round_into(draws, scale, offset, target)
    _in_threads(_split(-(-flat.size // STREAM_CHUNK), threads), fill_normal)


def _draw_philox4x32(seed: int, tensor: str, kind: str, flat: np.ndarray, scale: float, offset: float,
                     chunk_elements: int) -> None:
    """``_draw_philox`` with ``U`` from Philox4x32-10 (``Z`` is ``philox``'s)."""
    _draw_philox(seed, tensor, kind, flat, scale, offset, chunk_elements, "philox4x32")


def _uniform(generator: str, key: tuple[int, int], begin: int, target: np.ndarray, scale: float, offset: float,
             buffer: np.ndarray) -> None:
    """``target[:] = offset + scale * U`` for the elements from ``begin`` on of ``generator``'s uniform stream keyed
    ``key``, rounded once: the compiled helper draws and rounds in one pass (float32 and bfloat16 straight into
    ``target``, other dtypes through a float64 ``buffer``), else numpy (``_WORDS``, ``_round_into``)."""
    name = dtypes.from_numpy(target.dtype).name
    if name in native.ROUNDED_CODES and native.uniform(generator, key, STREAM_CHUNK, begin, scale, offset, name,
                                                       target):
        return
    draws = buffer[:target.size]
    if native.uniform(generator, key, STREAM_CHUNK, begin, scale, offset, "float64", draws):
        dtypes.round_into(draws, target)
        return
    np.multiply(_WORDS[generator](key, begin, target.size), 2.0 ** -32, out=draws)
    _round_into(draws, scale, offset, target)


def _philox_words(key: tuple[int, int], begin: int, count: int) -> np.ndarray:
    """The 32-bit draws (uint32) of the elements ``begin .. begin + count`` of the uniform ``philox`` stream keyed
    ``key``: for the element at ``k`` of chunk ``j``, half ``k % 2`` (the low half first) of 64-bit word
    ``k // 2`` of numpy's ``Philox(key=key, counter=(0, j, 0, 0))``."""
    out = np.empty(count, np.uint32)
    done = 0
    while done < count:
        chunk, k = divmod(begin + done, STREAM_CHUNK)
        size = min(count - done, STREAM_CHUNK - k)
        first = k // 8                                          # the block holding element k
        words = philox_stream(key, chunk, first).random_raw(4 * (-(-(k + size) // 8) - first))
        halves = np.empty(2 * words.size, np.uint32)
        halves[0::2] = words & 0xFFFFFFFF
        halves[1::2] = words >> 32
        out[done:done + size] = halves[k - 8 * first:k - 8 * first + size]
        done += size
    return out


def philox4x32_10(counters: np.ndarray, key: tuple[int, int]) -> np.ndarray:
    """Philox4x32-10 (Random123's ``philox4x32``, 10 rounds) of each row ``(c0, c1, c2, c3)`` of ``counters``
    (integers < 2**32) under the key ``(k0, k1)``: each round maps ``(v0, v1, v2, v3)`` to ``(hi(M1 v2) ^ v1 ^ k0,
    lo(M1 v2), hi(M0 v0) ^ v3 ^ k1, lo(M0 v0))`` (``hi``/``lo``: the upper and lower 32 bits of the 64-bit
    product; ``M0, M1 = PHILOX4X32_MULTIPLIERS``), then adds ``PHILOX4X32_WEYL`` to the key (mod 2**32). Returns
    the blocks as uint32 rows of four words."""
    v0, v1, v2, v3 = (np.asarray(counters, np.uint64)[:, i] for i in range(4))
    k0, k1 = (int(word) & WORD for word in key)
    m0, m1 = PHILOX4X32_MULTIPLIERS
    for _ in range(10):
        p0, p1 = m0 * v0, m1 * v2                          # exact: products of 32-bit values
        v0, v1, v2, v3 = (p1 >> 32) ^ v1 ^ np.uint64(k0), p1 & WORD, (p0 >> 32) ^ v3 ^ np.uint64(k1), p0 & WORD
        k0, k1 = (k0 + PHILOX4X32_WEYL[0]) & WORD, (k1 + PHILOX4X32_WEYL[1]) & WORD
    return np.stack([v0, v1, v2, v3], axis=1).astype(np.uint32)


def _philox4x32_words(key: tuple[int, int], begin: int, count: int) -> np.ndarray:
    """The 32-bit draws (uint32) of the elements ``begin .. begin + count`` of the uniform ``philox4x32`` stream of
    ``key = (seed, tensor index)``: element ``e`` takes word ``e % 4`` of the block at counter ``(m mod 2**32,
    m // 2**32, tensor index, 0)``, ``m = e // 4``, under the key ``(seed mod 2**32, seed // 2**32)``."""
    seed, index = int(key[0]), int(key[1])
    blocks = np.arange(begin // 4, -(-(begin + count) // 4), dtype=np.uint64)
    counters = np.stack([blocks & WORD, blocks >> 32, np.full_like(blocks, index), np.zeros_like(blocks)], axis=1)
    words = philox4x32_10(counters, (seed & WORD, seed >> 32)).reshape(-1)
    return words[begin % 4:begin % 4 + count]


_WORDS = {"philox4x32": _philox4x32_words, "philox": _philox_words}     # the 32-bit uniform draws of each


def _draw_pcg64(seed: int, tensor: str, kind: str, flat: np.ndarray, scale: float, offset: float,
                chunk_elements: int) -> None:
    """``flat[:] = offset + scale * U`` (or ``* Z``), rounded once, from the ``pcg64`` generator of ``tensor``;
    its stream is consumed in order, so the chunk size (and the split over threads) does not matter."""
    generator = tensor_generator(seed, tensor)
    method = "random" if kind == "uniform" else "standard_normal"
    bit_generator = generator.bit_generator
    threads = native.HOST_THREADS if method == "random" and flat.size >= THREADED_DRAWS else 1
    parts = [(generator, flat)]
    if threads > 1:
        parts = []
        for begin, end in _split(flat.size, threads):
            part = np.random.PCG64()
            part.state = bit_generator.state
            part.advance(begin)                              # one 64-bit output per float64 draw
            parts.append((np.random.Generator(part), flat[begin:end]))
    _in_threads(parts, lambda part: _fill(part[0], method, part[1], scale, offset, chunk_elements))


def _fill(generator: np.random.Generator, method: str, flat: np.ndarray, scale: float, offset: float,
          chunk_elements: int) -> None:
    """``flat[:] = offset + scale * draws`` rounded once to flat's dtype, ``draws`` from ``generator``'s
    ``method`` stream (``random`` or ``standard_normal``), one reused float64 chunk at a time."""
    buffer = np.empty(min(chunk_elements, flat.size))
    for begin in range(0, flat.size, chunk_elements):
        count = min(chunk_elements, flat.size - begin)
        draws = buffer[:count]
        getattr(generator, method)(out=draws)
        _round_into(draws, scale, offset, flat[begin:begin + count])


def _round_into(draws: np.ndarray, scale: float, offset: float, target: np.ndarray) -> None:
    """``target[:] = offset + scale * draws``, each operation rounded on its own, the sum rounded once to
    target's dtype (``dtypes.round_into``): the compiled helper for large float32, bfloat16 or float64 targets, numpy
    otherwise (``draws`` is overwritten)."""
    name = dtypes.from_numpy(target.dtype).name if target.size >= native.ROUNDING_MIN_ELEMENTS else ""
    if not (name and native.affine_round(draws, scale, offset, name, target)):
        np.multiply(draws, scale, out=draws)
        np.add(draws, offset, out=draws)
        dtypes.round_into(draws, target)


_DRAWS = {"philox4x32": _draw_philox4x32, "philox": _draw_philox, "pcg64": _draw_pcg64}
assert tuple(_DRAWS) == GENERATORS


def _from_values(args: tuple, shape: tuple[int, ...], dtype: np.dtype, fail) -> np.ndarray:
    """A flat C-order list of numbers, exactly as many as the tensor has elements."""
    size = int(np.prod(shape, dtype=np.int64))
    if len(args) != size:
        raise fail(f"{plural(len(args), 'value')} given but the tensor {tuple(shape)} has {plural(size, 'element')}")
    try:
        values = np.array(args, dtype=np.float64)
    except (TypeError, ValueError):
        raise fail("the values must all be numbers") from None
    return dtypes.rounded(values.reshape(shape), dtype)


def _from_bits(args: tuple, shape: tuple[int, ...], dtype: np.dtype, fail) -> np.ndarray:
    """A flat C-order list of bit patterns of ``dtype`` (each ``0 <= pattern < 2**bits``), exactly as many as the
    tensor has elements: every value, NaN payloads and signs included, exactly as given."""
    size = int(np.prod(shape, dtype=np.int64))
    if len(args) != size:
        raise fail(f"{plural(len(args), 'bit pattern')} given but the tensor {tuple(shape)} has "
                   f"{plural(size, 'element')}")
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
        raise fail(f"{path} has shape {error.shape} ({plural(error.count, 'element')}), the tensor {tuple(shape)} "
                   f"needs {size}") from None
    except npyfile.NpyError as error:
        raise fail(f"cannot read the .npy input: {error}") from None
    array = array.reshape(shape)
    if dtype == dtypes.to_numpy("bfloat16") and array.dtype == np.uint16:
        return array.view(dtype).copy()
    return dtypes.rounded(array, dtype)


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
    if rotary_mode == INTERLEAVE:
        frequency_index, period = lane // 2, length
    elif rotary_mode == QUARTER:
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
