"""Which non-finite results a correct float32 kernel can produce: the ``default`` standard's rule for NaN/Inf.

Every output element is ``out = c_a*x_a + sign * s_b*x_p`` (``lane_terms`` of the operator: kept lane
``a``, partner ``p``, sin lane ``b``, sign +-1), its inputs converted exactly to float32. A kernel that
computes in float32 and rounds to nearest may evaluate it in any of three ways:

    E1  fl32(fl32(c_a*x_a) + sign*fl32(s_b*x_p))     both products rounded, then the sum
    E2  fl32(c_a*x_a + sign*fl32(s_b*x_p))           the kept product fused into the sum (FMA)
    E3  fl32(fl32(c_a*x_a) + sign*s_b*x_p)           the partner product fused into the sum (FMA)

and then narrows the float32 result ``r`` to the tensor's dtype: ``v = fl_dy(r)``. **Rule:** a non-finite
element of the result is right iff one of the three ``v`` has the same class (NaN, +Inf or -Inf; a NaN's
sign and payload do not count); a finite element where every ``v`` is non-finite is wrong exactly when the
float64 golden is non-finite (then no evaluation is finite); every other finite element is judged by the
error budget.

**Proof that ``possible_results`` computes the three ``v`` exactly.** IEEE 754 arithmetic (numpy's float32
and float64 operations on x86/ARM, prmg's bfloat16 rounding) rounds each operation correctly to nearest,
ties to even, and propagates NaN and infinities by fixed rules (``inf - inf = NaN``, ``inf * 0 = NaN``,
``x + inf = inf`` for finite ``x``). Then:

1. A product of two float32 numbers ``P = c*x`` is exact in float64: the significands have 24 bits, so
   ``P`` has at most 48; its exponent lies in ``[-298, 256]``, inside float64's normal range. So
   ``fl32(P)`` computed as ``float32(float64 product)`` is a single correct rounding of the exact product,
   overflowing to +-Inf exactly when ``|P| >= T = 2^128 - 2^103`` (the midpoint between float32's largest
   number and 2^128); infinite and NaN inputs give the IEEE results in float64 as in float32.
2. E1's sum is numpy's float32 addition of two float32 numbers: correctly rounded by IEEE 754.
3. E2 and E3 add a float64-exact product and a float32 number: ``S = fl64(P + q)`` with the exact error
   ``e = (P + q) - S`` from TwoSum (Knuth; exact for finite operands without overflow in float64, which
   holds since ``|P|, |q| < 2^257``). Rounding ``S`` to float32 rounds the exact sum ``P + q`` correctly
   unless ``S`` is a midpoint of two adjacent float32 numbers (or float32's overflow midpoint ``T``) while
   ``e != 0``: rounding is monotonic and float32 numbers and midpoints are float64 numbers, so only a tie
   in ``S`` can hide on which side of it ``P + q`` lies. There the sign of ``e`` decides: away from the
   tie's even choice when ``e`` points away from it. Non-finite operands give the IEEE result directly.
4. Narrowing a float32 ``r`` to float16/bfloat16 is one correct rounding (``dtypes.rounded``: numpy's cast,
   prmg's bfloat16 rounding), overflowing to +-Inf by the same rule.

So each ``v`` is computed exactly, and its class is the class a correct float32 kernel produces with that
evaluation order. A kernel that returns +Inf where every evaluation gives -Inf or a finite number (a wrong
sign), or NaN where none gives NaN, or squashes a NaN to a number, is wrong; one that overflows where some
evaluation order overflows is right.
"""

from __future__ import annotations

import numpy as np

from ..dtypes import rounded

OVERFLOW_MIDPOINT = 2.0 ** 128 - 2.0 ** 103     # T: fl32(x) = +-Inf iff |x| >= T
_F32_MAX = float(np.finfo(np.float32).max)


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(s, e)`` with ``s = fl64(a + b)`` and ``a + b = s + e`` exactly (0 where ``s`` is not finite)."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    e[~np.isfinite(s) | ~np.isfinite(e)] = 0.0
    return s, e


def _round_to_float32(s: np.ndarray, e: np.ndarray) -> np.ndarray:
    """``fl32(s + e)`` exactly, for float64 ``s`` and its exact error ``e`` (proof, point 3)."""
    with np.errstate(over="ignore"):
        rounded = s.astype(np.float32)
    wide = rounded.astype(np.float64)
    direction = np.where(s > wide, np.float32(np.inf), np.float32(-np.inf))
    neighbour = np.nextafter(rounded, direction)
    finite = np.isfinite(wide) & np.isfinite(neighbour.astype(np.float64))
    midpoint = finite & (s != wide) & (s == (wide + neighbour.astype(np.float64)) * 0.5)
    beyond = midpoint & (e != 0) & (np.sign(e) == np.sign(s - wide))
    rounded[beyond] = neighbour[beyond]
    # the overflow midpoint: S = +-T rounds to +-Inf, but an exact sum just below T is float32's maximum
    below_overflow = (np.abs(s) == OVERFLOW_MIDPOINT) & (e != 0) & (np.sign(e) != np.sign(s))
    rounded[below_overflow] = np.copysign(_F32_MAX, s[below_overflow]).astype(np.float32)
    return rounded


def possible_results(c: np.ndarray, x: np.ndarray, s: np.ndarray, x_partner: np.ndarray, sign: np.ndarray,
                     dtype) -> np.ndarray:
    """The results E1, E2, E3 (module docstring) narrowed to ``dtype``, widened to float64, shape (3, n).

    ``c, x`` are the kept term's cos and value, ``s, x_partner`` the partner term's sin and value (any
    float dtype, converted exactly to float32), ``sign`` +-1 per element."""
    with np.errstate(all="ignore"):
        c, x, s, x_partner = (np.asarray(v).astype(np.float32).astype(np.float64) for v in (c, x, s, x_partner))
        sign = np.asarray(sign, np.float64)
        kept, partner = c * x, sign * (s * x_partner)                # exact in float64 (point 1)
        kept32, partner32 = kept.astype(np.float32), partner.astype(np.float32)
        first = kept32 + partner32                                   # E1, float32 arithmetic (point 2)
        second = _round_to_float32(*_two_sum(kept, partner32.astype(np.float64)))   # E2 (point 3)
        third = _round_to_float32(*_two_sum(kept32.astype(np.float64), partner))    # E3
        return np.stack([rounded(r, dtype).astype(np.float64) for r in (first, second, third)])


def allowed(actual: np.ndarray, results: np.ndarray) -> np.ndarray:
    """Per element: True when the non-finite ``actual`` has the class (NaN, +Inf, -Inf) of one of the
    ``results`` (shape (3, n)); False for a finite ``actual`` (judged elsewhere)."""
    nan = np.isnan(actual) & np.isnan(results).any(axis=0)
    inf = np.isinf(actual) & (results == actual).any(axis=0)
    return nan | inf


def possible_results_at(op, x, cos, sin, mode: int, start: int, end: int, flat: np.ndarray) -> np.ndarray:
    """``nonfinite.possible_results`` at the slice elements ``flat`` (flat indices into ``(B, S, N, L)``):
    their operands gathered from the inputs by the operator's ``lane_terms`` (cos/sin broadcast over B, S, N)."""
    kept, partner, sign, cos_lane, sin_lane = op.lane_terms(mode, end - start)
    b, s, n, lane = np.unravel_index(flat, x.shape[:3] + (end - start,))
    rows = tuple(np.where(np.asarray(cos.shape[axis]) == 1, 0, index) for axis, index in enumerate((b, s, n)))
    x = x[..., start:end]
    return possible_results(cos[rows + (cos_lane[lane],)], x[b, s, n, kept[lane]],
                                      sin[rows + (sin_lane[lane],)], x[b, s, n, partner[lane]], sign[lane],
                                      x.dtype)
