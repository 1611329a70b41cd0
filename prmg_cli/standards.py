"""The precision standards: how the slice of a result is judged against the golden.

The ``default`` standard: an error budget per element
------------------------------------------------------
Each output element is ``dx = c*g ± s'*g'`` (the forward: ``y = c*x ∓ s*x'``), two products that may cancel. A kernel that computes in
float32 rounds three times (both products and their sum), each time by at most ``u = 2^-24`` of the
value rounded, so before its final rounding it is within ``E = (2u + u^2)*m`` of the exact result,
where ``m = |c*g| + |s'*g'|`` is the sum of the products' magnitudes -- not ``|dx|``, which
cancellation can make arbitrarily small. The final round-to-nearest to dy's dtype moves that value by
at most half the dtype's spacing at it, and it lies within ``|golden| + E`` of zero. Hence, per
element::

    budget = budget_scale * (E + ulp_dy(|golden| + E) / 2) + min(4 * 2^-126, m) + 2^-147

where ``golden`` is the float64 result (products of float32/float16/bfloat16 numbers are exact in
float64, the sum is rounded once at 2^-53) and ``ulp_dy(x)`` the spacing of dy's dtype at ``x``
(``2^(floor(log2 x) - p + 1)``, never below the dtype's smallest subnormal). The bound is tight: a
conversion that truncates instead of rounding to nearest errs by up to a whole ulp and is caught. The
two last terms are for float32's subnormal range, where the relative bound ``u`` does not hold:
gradual underflow errs by at most half of 2^-149 in each of the three operations (< 2^-147
together), and a kernel that flushes subnormal inputs, products, sums or bfloat16 outputs to zero errs
by less than ``4 * 2^-126`` (for ``|c|, |s| <= 1``) and never by more than about ``m`` (a flush
replaces a value by 0, and every value involved is at most ``m``) -- so flushing is allowed, yet a
kernel that does nothing still fails on subnormal data. An element is wrong when
``|actual - golden| > budget``. A non-finite element is right only where a float32 evaluation of that
element (products then sum, or either fused multiply-add) produces it, with the same sign, NaN only where
such an evaluation gives NaN (``nonfinite.py`` states the rule and its proof).
This passes a correct float32 kernel on any data -- tiny, subnormal, huge, near the dtype's maximum,
cancelling -- by construction rather than by tuning. It still catches bugs: a wrong sign, partner,
lane, row or table entry moves an element by the order of ``m``, about 2^23 times the computational
part of the budget; computing in bfloat16 (or rounding a float32 cos/sin to a narrower dy dtype first)
errs by about ``2^-9*m`` per rounding, far over the budget wherever the two products cancel enough
that the output's ulp is small against ``m`` -- which ordinary data gives in a good share of elements,
even for a bfloat16 dy; truncating to a float16/bfloat16 dy errs by more than half an ulp in about half
of the elements. What it cannot see are errors within float32 rounding plus half an ulp of the output:
such a kernel is as good as a correct one. Metrics: ``max_err_ratio`` (largest
``|actual - golden| / budget``; a correct kernel stays below 1), ``bad`` (elements over budget),
``max_abs_err``.

The other standards are the ones in use around Ascend (``shared/docs/precision.md``); their defaults per
dtype are in ``DEFAULTS``, the parameters a case may set in ``STANDARD_PARAMS``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from .dtypes import bits
from .errors import PrmgError

STANDARDS = ("default", "double_thousandth", "single_bm", "double_benchmark", "allclose", "exact")

# The parameters each standard accepts in a case's ``tolerance`` mapping (all numbers).
STANDARD_PARAMS: dict[str, tuple[str, ...]] = {
    "default": ("budget_scale",),                            # multiplies every element's error budget
    "double_thousandth": ("rel", "share", "cap", "atol"),    # cap 0 disables the per-element cap
    "single_bm": ("threshold",),                             # T; MARE limit is 10*T
    "double_benchmark": ("mare_ratio", "mere_ratio", "rmse_ratio", "small_ratio"),
    "allclose": ("rtol", "atol"),
    "exact": (),
}

# Default parameters per dy dtype ("*": every dtype).
DEFAULTS: dict[str, dict[str, dict[str, float]]] = {
    "default": {"*": {"budget_scale": 1.0}},
    "double_thousandth": {
        "float16": {"rel": 1e-3, "share": 1e-3, "cap": 0.1, "atol": 0.0},
        "bfloat16": {"rel": 4e-3, "share": 4e-3, "cap": 0.1, "atol": 0.0},
        "float32": {"rel": 1e-4, "share": 1e-4, "cap": 0.01, "atol": 0.0},
    },
    "single_bm": {"float16": {"threshold": 2.0 ** -10}, "bfloat16": {"threshold": 2.0 ** -7},
                  "float32": {"threshold": 2.0 ** -13}},
    "double_benchmark": {"*": {"mare_ratio": 10.0, "mere_ratio": 2.0, "rmse_ratio": 2.0, "small_ratio": 2.0}},
    "allclose": {"float16": {"rtol": 1e-3, "atol": 1e-5}, "bfloat16": {"rtol": 1.6e-2, "atol": 1e-5},
                 "float32": {"rtol": 1.3e-6, "atol": 1e-5}},
    "exact": {"*": {}},
}

# Small-value rule (single_bm, double_benchmark): where |golden| < threshold an element is judged by
# its absolute error, wrong above the limit. dtype: (threshold, absolute error limit).
SMALL_VALUES: dict[str, tuple[float, float]] = {
    "float16": (2.0 ** -11, 2.0 ** -16), "bfloat16": (2.0 ** -8, 2.0 ** -16), "float32": (2.0 ** -14, 2.0 ** -30),
}

U32 = 2.0 ** -24                 # float32 unit roundoff
FTZ_FLOOR = 4 * 2.0 ** -126      # a float32 kernel flushing subnormal inputs, products or sums to zero
UNDERFLOW_FLOOR = 2.0 ** -147    # gradual underflow: half of 2^-149 in each of three float32 operations
_RELATIVE_EPS = 1e-7             # denominator guard of MERE/MARE: |a - g| / (|g| + 1e-7)


@dataclass(frozen=True)
class Format:
    """A binary floating-point format: ``precision`` significand bits (with the implicit one), the
    exponents of its smallest and largest normal numbers."""

    precision: int
    min_exponent: int
    max_exponent: int

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


FORMATS = {"float32": Format(24, -126, 127), "float16": Format(11, -14, 15), "bfloat16": Format(8, -126, 127)}


# ---------------------------------------------------------------------------------------------------
# Standards and their parameters


def check_standard(standard: str, tolerance: Mapping[str, float] | None = None, *,
                   file: str | None = None, case: str | None = None) -> None:
    """Raise ``PrmgError`` unless ``standard`` is known and ``tolerance`` only sets its parameters
    (``STANDARD_PARAMS``) to finite numbers >= 0. The one check of standards and tolerances: the case
    loader calls it too. The error's field is ``standard`` or ``tolerance.KEY``."""
    if not isinstance(standard, str) or standard not in STANDARD_PARAMS:
        raise PrmgError(f"unknown standard {standard!r} (valid: {', '.join(STANDARDS)})",
                        file=file, case=case, field="standard")
    accepted = STANDARD_PARAMS[standard]
    for key, value in dict(tolerance or {}).items():
        if key not in accepted:
            takes = f"valid: {', '.join(accepted)}" if accepted else "it takes none"
            raise PrmgError(f"standard {standard!r} has no parameter {key!r} ({takes})",
                            file=file, case=case, field=f"tolerance.{key}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or value < 0:
            raise PrmgError(f"{key} must be a finite number >= 0, got {value!r}",
                            file=file, case=case, field=f"tolerance.{key}")


def standard_parameters(standard: str, dtype: str, tolerance: Mapping[str, float] | None = None) -> dict:
    """The parameters ``standard`` uses for a dy of ``dtype``: its defaults updated by ``tolerance``."""
    table = DEFAULTS[standard]
    params = dict(table.get(dtype, table.get("*", {})))
    params.update({key: float(value) for key, value in dict(tolerance or {}).items()})
    return params


@dataclass
class SliceView:
    """What the standards judge: the slice of one case's result, its golden and the inputs behind it.

    ``op`` is the operator's ``OperatorSpec`` (its golden functions); ``x`` the in-place input (dy for
    the grad, x for the forward). ``actual`` and ``golden`` are float64 ``(B, S, N, L)``; where either is
    not finite both hold 0 (those elements are judged apart, by ``nonfinite``).
    """

    op: object
    x: np.ndarray
    cos: np.ndarray
    sin: np.ndarray
    result: np.ndarray                 # the device's in-place tensor, whole
    mode: int
    start: int
    end: int
    dtype: str
    params: dict
    actual: np.ndarray
    golden: np.ndarray
    non_finite: np.ndarray             # flat indices (into the slice) neutralised in actual/golden
    _magnitude: np.ndarray | None = None
    _rounded: np.ndarray | None = None

    @property
    def format(self) -> Format:
        """The in-place tensor's floating-point format."""
        return FORMATS[self.dtype]

    @property
    def piece(self) -> tuple[int, int]:
        """The slice ``(start, end)``."""
        return self.start, self.end

    def magnitude(self) -> np.ndarray:
        """``m = |c*x| + |s'*x'|`` per element (the operator's ``magnitude``), 0 where neutralised."""
        if self._magnitude is None:
            self._magnitude = self.neutral(self.op.magnitude(self.x, self.cos, self.sin, self.mode, self.piece))
        return self._magnitude

    def rounded(self) -> np.ndarray:
        """The golden rounded to the tensor's dtype, in that dtype (the operator's ``golden``)."""
        if self._rounded is None:
            self._rounded = self.op.golden(self.x, self.cos, self.sin, self.mode, self.piece)[..., self.start:self.end]
        return self._rounded

    def neutral(self, values: np.ndarray) -> np.ndarray:
        """``values`` with the neutralised elements set to 0 (in place)."""
        values.flat[self.non_finite] = 0
        return values


@dataclass
class Judgement:
    """A standard's answer: pass/fail, why, its metrics, and per element what the diagnosis needs."""

    failed: bool
    reason: str
    metrics: dict
    bad: np.ndarray                    # bool (B, S, N, L): elements the standard holds wrong
    score: np.ndarray                  # how wrong each element is (worst first in the diagnosis)
    expected: np.ndarray               # the value each element was compared with
    limit: np.ndarray | None = None    # the allowed error per element, when the standard has one
    limit_name: str = ""


def default_budget(golden_magnitude: np.ndarray, magnitude: np.ndarray, fmt: Format,
                   scale: float = 1.0) -> np.ndarray:
    """``budget = scale * (E + ulp_dy(|golden| + E) / 2) + min(4 * 2^-126, m) + 2^-147`` with
    ``E = (2u + u^2) * m``, ``u = 2^-24`` (module docstring)."""
    computation = magnitude * (2 * U32 + U32 * U32)
    budget = 0.5 * fmt.ulp(golden_magnitude + computation)
    budget += computation
    budget *= scale
    budget += np.minimum(magnitude, FTZ_FLOOR)
    budget += UNDERFLOW_FLOOR
    return budget


_EXPONENT_BITS = np.uint64(0x7FF0000000000000)      # a float64's exponent field


def default_budget_into(golden: np.ndarray, magnitude: np.ndarray, fmt: Format, scale: float, out: np.ndarray,
                        scratch: np.ndarray) -> np.ndarray:
    """``default_budget(|golden|, magnitude, fmt, scale)`` bit for bit, written into ``out`` (float64, the
    shape of ``golden``) with ``scratch`` (the same) as work space, for judging block by block.

    Half of ``ulp_dy(x)`` is ``2^(max(floor(log2 x), emin) - p)``: the power of two ``2^floor(log2 x)`` is
    ``x`` with its significand bits cleared (0 for a float64 subnormal or zero), scaled by ``2^-p``
    (exact), and never below ``2^(emin - p)``, half the smallest subnormal -- what ``Format.ulp`` gives
    through ``frexp``, for every finite ``x >= 0``. Two steps are skipped where they provably change no
    bit: the floor ``2^(emin - p)`` when every ``x >= 2^emin``, and the two subnormal terms when every
    ``v = scale*(E + ulp/2) >= 2^-69`` (then both terms are below half an ulp of ``v``: ``v + t = v``).
    Elements whose golden or magnitude is not finite get a meaningless budget (the judge sets such
    elements apart, as ``SliceView`` neutralises them).
    """
    np.multiply(magnitude, 2 * U32 + U32 * U32, out=scratch)          # E
    np.abs(golden, out=out)
    np.add(out, scratch, out=out)                                     # x = |golden| + E
    smallest_x = float(out.min()) if out.size else 0.0                # NaN when some x is NaN: no skips
    power = out.view(np.uint64)
    np.bitwise_and(power, _EXPONENT_BITS, out=power)                  # 2^floor(log2 x)
    np.multiply(out, 2.0 ** -fmt.precision, out=out)
    if not smallest_x >= 2.0 ** fmt.min_exponent:
        np.maximum(out, fmt.smallest / 2, out=out)                    # ulp_dy(x) / 2
    np.add(out, scratch, out=out)
    if scale != 1.0:
        np.multiply(out, scale, out=out)
    # v >= scale * 2^floor(log2 x) * 2^-p > scale * x * 2^(-p-1)
    if not scale * smallest_x * 2.0 ** (-fmt.precision - 1) >= _NO_SUBNORMAL_TERMS:
        np.minimum(magnitude, FTZ_FLOOR, out=scratch)
        np.add(out, scratch, out=out)
        np.add(out, UNDERFLOW_FLOOR, out=out)
    return out


# From 2^-69 up, half an ulp (>= 2^-122) exceeds FTZ_FLOOR and UNDERFLOW_FLOOR: adding them changes nothing.
_NO_SUBNORMAL_TERMS = 2.0 ** -69


def _default(view: SliceView) -> Judgement:
    """The ``default`` standard: an element is wrong when ``|actual - golden| > budget`` (``default_budget``)."""
    budget = default_budget(np.abs(view.golden), view.magnitude(), view.format,
                            view.params["budget_scale"])
    error = np.abs(view.actual - view.golden)
    ratio = error / budget
    bad = error > budget
    count = int(bad.sum())
    metrics = {"max_err_ratio": _max(ratio), "bad": count, "max_abs_err": _max(error)}
    reason = (f"{count} of {bad.size} elements over budget "
              f"(max err/budget {metrics['max_err_ratio']:.3g})")
    return Judgement(count > 0, reason, metrics, bad, ratio, view.golden, budget, "budget")


def _double_thousandth(view: SliceView) -> Judgement:
    """``double_thousandth``: an element is wrong when ``(|a - e| - atol) / |e| > rel``; the case fails when more
    than ``share`` of the elements are wrong or (``cap > 0``) the largest relative error exceeds ``cap``."""
    p = view.params
    # An element is wrong when |a - e| > atol + rel*|e| (the absolute floor adds, as in TTK's
    # absolute_precision); its relative error is what remains after the floor, over |e|.
    excess = np.abs(view.actual - view.golden) - p["atol"]
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.where(excess > 0, excess / np.abs(view.golden), 0.0)
    wrong = relative > p["rel"]
    share = float(wrong.mean()) if wrong.size else 0.0
    max_relative = _max(relative)
    over_cap = p["cap"] > 0 and max_relative > p["cap"]
    reason = f"{int(wrong.sum())} of {wrong.size} elements ({share:.3g}) have relative error over {p['rel']:g}"
    if share <= p["share"]:
        reason = f"max relative error {max_relative:.3g} over the cap {p['cap']:g}"
    metrics = {"rel_err_share": share, "share_limit": p["share"], "max_rel_err": max_relative, "cap": p["cap"]}
    return Judgement(share > p["share"] or over_cap, reason, metrics, wrong, relative, view.golden)


def _single_bm(view: SliceView) -> Judgement:
    """``single_bm``: ``MERE`` (mean) and ``MARE`` (max) of ``|a - g| / (|g| + 1e-7)`` over the non-small values
    must stay below ``T`` and ``10*T``; small values (``SMALL_VALUES``) within their absolute limit."""
    threshold = view.params["threshold"]
    small_threshold, small_limit = SMALL_VALUES[view.dtype]
    error = np.abs(view.actual - view.golden)
    small = np.abs(view.golden) < small_threshold
    relative = _relative(error, view.golden, small)
    judged = int(small.size - small.sum())
    mere = float(relative.sum() / judged) if judged else 0.0
    mare = _max(relative)
    small_errors = small & (error > small_limit)
    count = int(small_errors.sum())
    metrics = {"MERE": mere, "MARE": mare, "T": threshold, "small_errors": count}
    reasons = [text for text, broken in (
        (f"MERE {mere:.3g} >= T {threshold:.3g}", mere >= threshold),
        (f"MARE {mare:.3g} >= 10T {10 * threshold:.3g}", mare >= 10 * threshold),
        (f"{count} small values (|golden| < {small_threshold:g}) off by more than {small_limit:g}", count > 0),
    ) if broken]
    score = np.where(small, error / small_limit, relative / threshold)
    return Judgement(bool(reasons), "; ".join(reasons), metrics, (relative > threshold) | small_errors,
                      score, view.golden)


def _double_benchmark(view: SliceView) -> Judgement:
    """``double_benchmark``: the device's MARE, MERE, RMSE and small-value error count, each divided by the same
    figure of a CPU computation in dy's own dtype, must stay within its ratio parameter."""
    p, fmt = view.params, view.format
    dy_dtype = view.x.dtype
    same_precision = view.op.golden_slice(view.x, view.cos, view.sin, view.mode, view.piece, compute_dtype=dy_dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        reference_error = np.abs(view.neutral(same_precision.astype(dy_dtype).astype(np.float64)) - view.golden)
    reference_error[np.isnan(reference_error)] = np.inf
    device_error = np.abs(view.actual - view.golden)
    small_threshold, small_limit = SMALL_VALUES[view.dtype]
    small = np.abs(view.golden) < small_threshold
    judged = max(1, int(small.size - small.sum()))
    rms_floor = max(fmt.unit_roundoff * float(np.sqrt(np.mean(np.square(view.golden)))), fmt.smallest)

    def statistics(error):
        """(MARE, MERE, RMSE, small-value error count) of the absolute errors ``error``."""
        relative = _relative(error, view.golden, small)
        return (_max(relative), float(relative.sum() / judged), float(np.sqrt(np.mean(np.square(error)))),
                int((small & (error > small_limit)).sum()))

    device, ref = statistics(device_error), statistics(reference_error)
    ratios = [_ratio(device[i], ref[i], floor)
              for i, floor in enumerate((fmt.unit_roundoff, fmt.unit_roundoff, rms_floor))]
    metrics = {"mare_ratio": ratios[0], "mere_ratio": ratios[1], "rmse_ratio": ratios[2],
               "mare_limit": p["mare_ratio"], "mere_limit": p["mere_ratio"], "rmse_limit": p["rmse_ratio"],
               "small_errors": device[3], "reference_small_errors": ref[3],
               "MARE": device[0], "reference_MARE": ref[0]}
    reasons = [text for text, broken in (
        (f"MARE ratio {ratios[0]:.3g} > {p['mare_ratio']:g}", ratios[0] > p["mare_ratio"]),
        (f"MERE ratio {ratios[1]:.3g} > {p['mere_ratio']:g}", ratios[1] > p["mere_ratio"]),
        (f"RMSE ratio {ratios[2]:.3g} > {p['rmse_ratio']:g}", ratios[2] > p["rmse_ratio"]),
        (f"{device[3]} small-value errors > {p['small_ratio']:g} x the reference's {ref[3]}",
         device[3] > p["small_ratio"] * ref[3]),
    ) if broken]
    # for the diagnosis: elements the device gets worse than the same-precision CPU by over one ulp
    allowed = fmt.ulp(np.abs(view.golden))
    allowed += 2 * np.minimum(reference_error, np.finfo(np.float64).max)
    return Judgement(bool(reasons), "; ".join(reasons), metrics, device_error > allowed,
                      device_error / allowed, view.golden, allowed, "allowed")


def _allclose(view: SliceView) -> Judgement:
    """``allclose``: an element is wrong when ``|a - e| > atol + rtol*|e|``, ``e`` the golden rounded to dy's dtype
    (or ``e`` is infinite)."""
    p = view.params
    expected = view.neutral(view.rounded().astype(np.float64))
    tolerance = p["atol"] + p["rtol"] * np.abs(expected)
    with np.errstate(invalid="ignore"):
        error = np.abs(view.actual - expected)
        bad = ~(error <= tolerance) | np.isinf(expected)         # a finite result where the rounded golden is inf
        ratio = error / tolerance
    count = int(bad.sum())
    metrics = {"max_tol_ratio": _max(ratio), "bad": count, "max_abs_err": _max(error)}
    reason = (f"{count} of {bad.size} elements not within atol {p['atol']:g} + rtol {p['rtol']:g} * |expected| "
              f"(max err/tol {metrics['max_tol_ratio']:.3g})")
    return Judgement(count > 0, reason, metrics, bad, np.nan_to_num(ratio, nan=np.inf), expected,
                      tolerance, "tol")


def _exact(view: SliceView) -> Judgement:
    """``exact``: an element is wrong when its bits differ from the golden rounded to dy's dtype (NaN matches NaN)."""
    expected = view.rounded()
    actual = view.result[..., view.start:view.end]
    both_nan = np.isnan(actual.astype(np.float32)) & np.isnan(expected.astype(np.float32))
    mismatch = (bits(actual) != bits(expected)) & ~both_nan
    count = int(mismatch.sum())
    expected64 = view.neutral(expected.astype(np.float64))
    with np.errstate(invalid="ignore"):
        error = np.abs(view.actual - expected64)
    metrics = {"mismatches": count, "max_abs_err": _max(error)}
    reason = f"{count} of {mismatch.size} elements differ from the golden rounded to {view.dtype}"
    return Judgement(count > 0, reason, metrics, mismatch, np.where(mismatch, error + 1, 0), expected64)


JUDGES: dict[str, Callable[[SliceView], Judgement]] = {
    "default": _default, "double_thousandth": _double_thousandth, "single_bm": _single_bm,
    "double_benchmark": _double_benchmark, "allclose": _allclose, "exact": _exact,
}


def _relative(error: np.ndarray, golden: np.ndarray, small: np.ndarray) -> np.ndarray:
    """``|a - g| / (|g| + 1e-7)``, 0 on the small values (judged by absolute error instead)."""
    relative = error / (np.abs(golden) + _RELATIVE_EPS)
    relative[small] = 0
    return relative


def _ratio(device: float, reference_value: float, floor: float) -> float:
    """``device / reference`` for the double benchmark; a reference of 0 counts as ``floor`` (1 when both are 0)."""
    if reference_value > 0:
        return device / reference_value
    return 1.0 if device == 0 else device / floor


def _max(values: np.ndarray) -> float:
    """The largest of ``values`` as a float, 0.0 for an empty array."""
    return float(values.max()) if values.size else 0.0


# ---------------------------------------------------------------------------------------------------
# The judgement

