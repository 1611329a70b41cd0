"""prmg's own float64 -> bfloat16 rounding (``dtypes.bfloat16_bits``, ``round_into``) against an exact reference,
and the places that narrow to a tensor's dtype using it (ml_dtypes before 0.7, the pinned one, rounds float64
through float32: twice)."""

from __future__ import annotations

import dataclasses
import math
import struct
from fractions import Fraction

import numpy as np
import pytest

from prmg_cli import dtypes, native
from prmg_cli.cases.loader import Case, InputSpec
from prmg_cli.inputs.seeded import make_inputs
from prmg_cli.ops import GRAD

BF16 = dtypes.to_numpy("bfloat16")
# 1 + 2^-8 + 2^-30 lies above the tie of 1 and 1 + 2^-7, but rounds to that tie in float32 (ties to even: 1)
DOUBLE_ROUNDING_TRAP, ITS_BFLOAT16 = 1 + 2.0 ** -8 + 2.0 ** -30, 0x3F81


def exact_bfloat16(value: float) -> int:
    """The bfloat16 bits of ``value`` from exact rational arithmetic: the multiple of the spacing
    ``2^(max(floor(log2 |v|), -126) - 7)`` nearest to ``|v|`` (``round`` of a Fraction: ties to even), Inf
    from 2^128 up, the quiet NaN 0x7FC0; the sign kept."""
    sign = 0x8000 if math.copysign(1.0, value) < 0 else 0
    if math.isnan(value):
        return sign | 0x7FC0
    if math.isinf(value) or value == 0:
        return sign | (0x7F80 if value else 0)
    exponent = max(math.frexp(abs(value))[1] - 1, -126)
    count = round(Fraction(abs(value)) / Fraction(2) ** (exponent - 7))
    if count == 256:
        exponent, count = exponent + 1, 128
    if exponent > 127:
        return sign | 0x7F80
    return sign | (count if count < 128 else (exponent + 127) << 7 | (count - 128))


def bfloat16_value(pattern: int) -> float:
    """The number a positive bfloat16 pattern stands for (0x7F80 as 2^128, the next one after the largest)."""
    field, fraction = pattern >> 7, pattern & 0x7F
    return fraction * 2.0 ** -133 if field == 0 else (1 + fraction / 128) * 2.0 ** (field - 127)


def interesting_values() -> np.ndarray:
    """For each bfloat16 exponent (subnormals too) and even and odd fractions: the number, the midpoint to the
    next one (a tie), the float64 neighbours of the tie, and the tie moved by 2^-30 of it (float32 would round
    those onto the tie); every bfloat16 subnormal likewise; float64 subnormals, the overflow edge, infinities,
    NaNs with payloads and signs, zeros; all of them with both signs."""
    fractions = (0, 1, 2, 0x3F, 0x40, 0x7E, 0x7F)
    patterns = [field << 7 | fraction for field in range(255) for fraction in fractions] + list(range(128))
    values = [5e-324, 2.0 ** -1074 * 3, 2.0 ** -1022, 2.0 ** -134, math.nextafter(2.0 ** -134, 1), 2.0 ** -135,
              2.0 ** -126 - 2.0 ** -134, math.nextafter(2.0 ** -126, 0), 1.5 * 2.0 ** -133, 2.5 * 2.0 ** -133,
              (2 - 2.0 ** -8) * 2.0 ** 127, 1.7976931348623157e308, math.inf, 0.0, DOUBLE_ROUNDING_TRAP]
    for pattern in patterns:
        low, high = bfloat16_value(pattern), bfloat16_value(pattern + 1)
        tie = (low + high) / 2
        values += [low, tie, math.nextafter(tie, 0), math.nextafter(tie, math.inf), tie * (1 - 2.0 ** -30),
                   tie * (1 + 2.0 ** -30)]
    nans = [struct.unpack("<d", struct.pack("<Q", word))[0]
            for word in (0x7FF8000000000000, 0x7FF0000000000001, 0x7FF4000000000000, 0x7FFFFFFFFFFFFFFF,
                         0x7FF0002000000000, 0x7FF7E00000000000)]
    values = np.array(values + nans)
    return np.concatenate([values, -values])


def test_bfloat16_rounding_is_correct_bit_for_bit():
    values = interesting_values()
    expected = np.array([exact_bfloat16(float(v)) for v in values], np.uint16)
    assert np.array_equal(dtypes.bfloat16_bits(values), expected)
    assert dtypes.bfloat16_bits(np.array([DOUBLE_ROUNDING_TRAP, -0.0])).tolist() == [ITS_BFLOAT16, 0x8000]
    strided = values.reshape(2, -1)[:, ::3]                            # any shape and strides
    assert np.array_equal(dtypes.bfloat16_bits(strided), expected.reshape(2, -1)[:, ::3])


@pytest.mark.parametrize("native_on", [True, False])
def test_round_into_narrows_once_into_any_layout(monkeypatch, native_on):
    """Large and small arrays (the compiled helper and numpy), strided targets, float32 sources, other dtypes."""
    if native_on and not native.available():
        pytest.skip("the compiled helper cannot be built here")
    if not native_on:
        monkeypatch.setenv("PRMG_NATIVE", "0")
    monkeypatch.setattr(native, "ROUNDING_MIN_ELEMENTS", 64)
    values = interesting_values()
    expected = np.array([exact_bfloat16(float(v)) for v in values], np.uint16)
    target = np.zeros((2, values.size), BF16)
    dtypes.round_into(values, target[:, ::1][1])
    dtypes.round_into(values[:40], target[0, :80:2])
    assert np.array_equal(target[1].view(np.uint16), expected)
    assert np.array_equal(target[0, :80:2].view(np.uint16), expected[:40])
    assert np.array_equal(target[0, 1:80:2].view(np.uint16), np.zeros(40, np.uint16))
    single = np.float32(DOUBLE_ROUNDING_TRAP)                            # float32 sources: widened exactly first
    assert dtypes.rounded(np.array([single]), BF16).view(np.uint16)[0] == exact_bfloat16(float(single))
    with np.errstate(over="ignore"):
        assert dtypes.rounded(values, np.dtype(np.float16)).tobytes() == values.astype(np.float16).tobytes()


def test_inputs_and_the_golden_round_bfloat16_once():
    """A ``values`` input and a golden that land on the double-rounding trap get its correct bfloat16."""
    case = Case(name="trap", source="t", shape=(1, 1, 1, 4), cos_shape=(1, 1, 1, 2), sin_shape=(1, 1, 1, 2),
                partial_slice=(0, 2), dtype="bfloat16", cos_dtype="float32", sin_dtype="float32",
                dy_input=InputSpec("values", (DOUBLE_ROUNDING_TRAP, 1.0, 1.0, 1.0)))
    assert make_inputs(case).dy.view(np.uint16).ravel().tolist() == [ITS_BFLOAT16, 0x3F80, 0x3F80, 0x3F80]
    # half mode, L = 2: dx[0] = c[0]*g[0] + s[1]*g[1] = (1 + 2^-8) + 2^-30, dx[1] = c[1]*g[1] - s[0]*g[0] = 1
    made = make_inputs(dataclasses.replace(case, dy_input=InputSpec("values", (1.0,) * 4),
                                           cos_input=InputSpec("values", (1 + 2.0 ** -8, 1.0)),
                                           sin_input=InputSpec("values", (0.0, 2.0 ** -30))))
    golden = GRAD.golden(made.dy, made.cos, made.sin, 0, (0, 2))
    assert golden.view(np.uint16).ravel().tolist() == [ITS_BFLOAT16, 0x3F80, 0x3F80, 0x3F80]
