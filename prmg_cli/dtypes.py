"""Dtype names <-> numpy dtypes (bfloat16 through ml_dtypes) <-> aclDataType codes.

The operator accepts float32, float16 and bfloat16 (``OPERATOR_DTYPES``). The other names exist only
so that negative cases can build tensors of a dtype the operator must refuse.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Callable

import numpy as np


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
    """The DType whose numpy dtype is ``dtype``."""
    dtype = np.dtype(dtype)
    name = dtype.name
    for entry in _TABLE:
        if entry.name == name and entry.numpy == dtype:             # by name first: bfloat16 stays unloaded
            return entry
    raise KeyError(str(dtype))


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


def storable(array: np.ndarray) -> np.ndarray:
    """``array`` in a form any .npy reader understands: bfloat16 becomes its uint16 bit patterns."""
    if array.dtype == DTYPES["bfloat16"].numpy:
        return bits(array)
    return array
