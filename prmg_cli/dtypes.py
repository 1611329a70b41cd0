"""Dtype names <-> numpy dtypes (bfloat16 through ml_dtypes) <-> aclDataType codes, and rounding to them.

The operator accepts float32, float16 and bfloat16 (``OPERATOR_DTYPES``). The other names exist only
so that negative cases can build tensors of a dtype the operator must refuse.

Every narrowing of float64 values to a tensor's dtype goes through ``round_into`` (or ``rounded``): one
rounding to nearest, ties to even. numpy's casts do that for float32 and float16; for bfloat16 prmg rounds
the float64 bits itself (``bfloat16_bits``) and never uses ml_dtypes' casts from float64, integers or
Python floats, which before ml_dtypes 0.7 round through float32 (twice). ml_dtypes names the dtype and does
bfloat16 arithmetic, widening and casts from float32 (``double_benchmark``'s same-precision computation), which
agree bit for bit between its versions 0.6 and 0.7.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Callable

import numpy as np

from . import native


@cache
def bfloat16() -> np.dtype:
    """ml_dtypes' bfloat16. Importing ml_dtypes takes 1-2 s (it registers every dtype it has), so it is
    imported on the first use of a bfloat16, not when prmg starts (``prmg validate``, ``report``...)."""
    import ml_dtypes

    return np.dtype(ml_dtypes.bfloat16)


@dataclass(frozen=True)
class DType:
    """One dtype as every layer names it."""

    name: str                       # the case-file name, e.g. "bfloat16"; also its numpy dtype's name
    load: Callable[[], np.dtype]    # the numpy dtype holding its values (see ``numpy``)
    acl_code: int                   # aclDataType enum value
    short: str                      # short label for tables, e.g. "bf16"

    @property
    def numpy(self) -> np.dtype:
        """The numpy dtype holding its values."""
        return self.load()


def _plain(kind) -> Callable[[], np.dtype]:
    dtype = np.dtype(kind)
    return lambda: dtype


_TABLE = (
    DType("float32", _plain(np.float32), 0, "fp32"),
    DType("float16", _plain(np.float16), 1, "fp16"),
    DType("bfloat16", bfloat16, 27, "bf16"),
    # only for negative cases: the operator must refuse these
    DType("int8", _plain(np.int8), 2, "i8"),
    DType("int32", _plain(np.int32), 3, "i32"),
    DType("uint8", _plain(np.uint8), 4, "u8"),
    DType("int16", _plain(np.int16), 6, "i16"),
    DType("int64", _plain(np.int64), 9, "i64"),
    DType("float64", _plain(np.float64), 11, "fp64"),
    DType("bool", _plain(np.bool_), 12, "bool"),
)

DTYPES: dict[str, DType] = {d.name: d for d in _TABLE}
OPERATOR_DTYPES: tuple[str, ...] = ("float32", "float16", "bfloat16")
@dataclass(frozen=True)
class Format:
    """A binary floating-point format: ``precision`` significand bits (with the implicit one), the
    exponents of its smallest and largest normal numbers; its bits are sign, exponent, fraction."""

    precision: int
    min_exponent: int
    max_exponent: int

    @property
    def exponent_bits(self) -> int:
        """The width of the exponent field: ``max_exponent`` is its bias."""
        return (self.max_exponent + 1).bit_length()

    @property
    def fraction_bits(self) -> int:
        """The width of the fraction field: ``precision - 1``."""
        return self.precision - 1

    @property
    def overflow(self) -> float:
        """The smallest magnitude that rounds to infinity: ``(2 - 2^-p) * 2^emax``."""
        return (2.0 - 2.0 ** -self.precision) * 2.0 ** self.max_exponent

    @property
    def unit_roundoff(self) -> float:
        """The unit roundoff ``u = 2^-p``."""
        return 2.0 ** -self.precision

    @property
    def smallest(self) -> float:
        """The smallest subnormal."""
        return 2.0 ** (self.min_exponent - self.precision + 1)

    def ulp(self, magnitude: np.ndarray) -> np.ndarray:
        """The spacing of the format at each ``magnitude >= 0``: ``2^(max(floor(log2 x), emin) - p + 1)``."""
        _, exponent = np.frexp(magnitude)            # x = f * 2^exponent, f in [0.5, 1); 0 -> exponent 0
        exponent -= 1
        exponent[magnitude == 0] = self.min_exponent
        np.maximum(exponent, self.min_exponent, out=exponent)
        return np.ldexp(1.0, exponent - (self.precision - 1))



# The float formats of the dtypes the operator takes (IEEE 754 binary32 and binary16; bfloat16 is binary32's
# top 16 bits).
FLOAT_FORMATS: dict[str, Format] = {"float32": Format(24, -126, 127), "float16": Format(11, -14, 15),
                                    "bfloat16": Format(8, -126, 127)}
INT64_MAX = 2**63 - 1                                 # the largest int64: of a dim, a count, an offset, a stride
ALIASES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "half": "float16",
           "float": "float32", "double": "float64"}


def canonical(name: str) -> str:
    """The canonical dtype name for ``name`` or an alias of it; KeyError when unknown."""
    name = ALIASES.get(name, name)
    if name not in DTYPES:
        raise KeyError(name)
    return name


def lookup(name: str) -> DType:
    """The DType called ``name`` (canonical names and aliases)."""
    return DTYPES[canonical(name)]


def to_numpy(name: str) -> np.dtype:
    """The numpy dtype for dtype ``name``."""
    return lookup(name).numpy


def from_numpy(dtype: np.dtype) -> DType:
    """The DType whose numpy dtype is ``dtype`` (remembered per numpy dtype: ``dtype.name`` is slow)."""
    dtype = np.dtype(dtype)
    found = _BY_NUMPY.get(dtype)
    if found is not None:
        return found
    name = dtype.name
    for entry in _TABLE:
        if entry.name == name and entry.numpy == dtype:             # by name first: bfloat16 stays unloaded
            _BY_NUMPY[dtype] = entry
            return entry
    raise KeyError(str(dtype))


_BY_NUMPY: dict[np.dtype, DType] = {}


def bit_width(name: str) -> int:
    """How many bits one value of dtype ``name`` takes (without loading ml_dtypes for bfloat16)."""
    name = canonical(name)
    if name in FLOAT_FORMATS:
        return 1 + FLOAT_FORMATS[name].exponent_bits + FLOAT_FORMATS[name].fraction_bits
    return 8 * lookup(name).numpy.itemsize


def bits(array: np.ndarray) -> np.ndarray:
    """A view of ``array``'s raw bit patterns as unsigned integers of the same width (for bit-exact checks)."""
    array = np.ascontiguousarray(array)
    return array.view(np.dtype(f"u{array.dtype.itemsize}"))


_BFLOAT16_MIN_NORMAL_BITS = 0x3810000000000000       # float64 bits of 2**-126, bfloat16's smallest normal
_FLOAT64_INF_BITS = 0x7FF0000000000000
_BFLOAT16_INF, _BFLOAT16_NAN = 0x7F80, 0x7FC0        # +Inf and the quiet NaN, the sign bit clear
_REBIAS = (1023 - 127) << 7                          # float64 -> bfloat16 exponent bias, above 7 fraction bits


def bfloat16_bits(values) -> np.ndarray:
    """The bfloat16 bit patterns (uint16, ``values``' shape) of float64 ``values`` rounded once to nearest,
    ties to even (float32 and float16 values are widened first, exactly). The rule, on the float64 bits
    ``sign | magnitude``:

    - ``|v| >= 2**-126`` (bfloat16 normal): drop the low 45 of the 52 fraction bits, adding ``2**44 - 1`` plus
      the lowest kept bit first (round to nearest, ties to even; a carry moves into the exponent), and rebias
      the exponent from 1023 to 127; ``|v| >= (2 - 2**-8) * 2**127`` and infinities give Inf;
    - ``|v| < 2**-126`` (bfloat16 subnormal or zero, float64 subnormals too): ``|v| * 2**133`` (exact) rounded
      to the nearest integer, ties to even (128 is the smallest normal, which the encoding gives as is);
    - NaN: the quiet NaN ``0x7FC0`` with the sign kept (payloads are not kept, as ml_dtypes does);
    - the sign bit is kept in every case (-0.0 gives 0x8000)."""
    values = np.asarray(values, dtype=np.float64)
    flat = np.ascontiguousarray(values).reshape(-1)
    word = flat.view(np.uint64)
    magnitude = word & np.uint64(0x7FFFFFFFFFFFFFFF)
    rounded = magnitude + np.uint64((1 << 44) - 1)
    rounded += (magnitude >> np.uint64(45)) & np.uint64(1)
    rounded >>= np.uint64(45)
    rounded -= np.uint64(_REBIAS)                    # wraps around for |v| < 2**-126: replaced below
    np.minimum(rounded, np.uint64(_BFLOAT16_INF), out=rounded)
    tiny = magnitude < np.uint64(_BFLOAT16_MIN_NORMAL_BITS)
    if tiny.any():
        rounded[tiny] = np.rint(np.abs(flat[tiny]) * 2.0 ** 133).astype(np.uint64)
    nan = magnitude > np.uint64(_FLOAT64_INF_BITS)
    if nan.any():
        rounded[nan] = _BFLOAT16_NAN
    rounded |= (word >> np.uint64(48)) & np.uint64(0x8000)
    return rounded.astype(np.uint16).reshape(values.shape)


def round_into(values, out: np.ndarray) -> np.ndarray:
    """``out[...] = values`` rounded once to nearest, ties to even, in ``out``'s dtype (any shape and strides
    that ``values`` broadcasts to): bfloat16 by ``bfloat16_bits`` (large arrays by the compiled helper's copy
    of it, ``native.round_bfloat16``), reading ``values`` as float64 (integers beyond 2**53 round there first);
    other dtypes by numpy's cast (float32 and float16: one correct rounding from float64; integer dtypes, for
    negative cases: numpy's unsafe cast). Returns ``out``."""
    if out.dtype.name != "bfloat16":                  # by name: a uint16 view needs no ml_dtypes
        with np.errstate(over="ignore"):              # beyond the dtype's range: +-inf, its rounding, no warning
            np.copyto(out, values, casting="unsafe")
        return out
    if not out.size:
        return out
    words = out.view(np.uint16)
    values = np.asarray(values, dtype=np.float64)
    if values.shape == out.shape and values.size >= native.ROUNDING_MIN_ELEMENTS and native.available():
        values = np.ascontiguousarray(values)
        target = words if words.flags.c_contiguous else np.empty(words.shape, np.uint16)
        if native.round_bfloat16(values, target):              # the same bits, in one compiled pass
            if target is not words:
                np.copyto(words, target)
            return out
    np.copyto(words, bfloat16_bits(values))
    return out


def rounded(values, dtype) -> np.ndarray:
    """A new array of ``values`` (float64, any shape) rounded once to ``dtype`` (a numpy dtype; see
    ``round_into``)."""
    values = np.asarray(values)
    return round_into(values, np.empty(values.shape, dtype))


def storable(array: np.ndarray) -> np.ndarray:
    """``array`` in a form any .npy reader understands: bfloat16 becomes its uint16 bit patterns."""
    if array.dtype == DTYPES["bfloat16"].numpy:
        return bits(array)
    return array
