"""Judging an outcome: precision standards, exactness checks and failure diagnosis.

``judge(case, inputs, outcome, standard, tolerance)`` checks, in this order:

1. the status: success when the case expects it, else exactly the expected error (or any error for
   ``error: any``); after an expected error dy must be bit-identical to the input;
2. the device-side contract (guard zones intact, cos and sin unchanged: ``outcome.contract_violations``);
3. outside the slice ``[start, end)`` the result is bit-identical to the input dy;
4. inside the slice: a NaN or an infinity where the golden is finite fails (matching infinities and
   NaN-for-NaN are equal); everything else is judged by the chosen standard (``STANDARDS``).

A failure says what is wrong: the worst elements with their ``(b, s, n, d)`` index (``d`` counted in
dy's last axis), expected and actual values, errors; and where the wrong elements are ("errors only on
odd lanes" of the slice, "only the last (b, s, n) row", "all rows sharing cos row (s=0) are right, the
others wrong", "outside the slice at d=96", ...).

The ``default`` standard: an error budget per element
------------------------------------------------------
Each output element is ``dx = c*g ± s'*g'``, two products that may cancel. A kernel that computes in
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
``|actual - golden| > budget``; an infinity is accepted where ``|golden| + budget`` reaches dy's
overflow threshold (the float32 sum may round up to it), any non-finite value where ``m`` reaches
float32's overflow (a product overflowed in float32).
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
dtype are in ``_DEFAULTS``, the parameters a case may set in ``STANDARD_PARAMS``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np

from . import reference
from .dtypes import bits, from_numpy
from .errors import PrmgError
from .status import describe

STANDARDS = ("default", "double_thousandth", "single_bm", "double_benchmark", "allclose", "exact")


@dataclass
class Verdict:
    """The judgement of one case.

    status: "passed" | "failed" | "error" | "skipped".
    message: one line saying why (empty when passed).
    metrics: the standard's key numbers, e.g. {"max_err_ratio": 0.4, "bad_share": 0.0}.
    details: diagnosis lines (worst elements with (b, s, n, d) index, localisation summary).
    """

    status: str
    message: str = ""
    metrics: dict = field(default_factory=dict)
    details: list = field(default_factory=list)

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
_DEFAULTS: dict[str, dict[str, dict[str, float]]] = {
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
FP32_OVERFLOW = 2.0 ** 128       # a product this large overflows in float32
_RELATIVE_EPS = 1e-7             # denominator guard of MERE/MARE: |a - g| / (|g| + 1e-7)
_WORST = 5                       # worst elements listed on failure
_PATTERN_MINIMUM = 10            # wrong elements needed before naming a lane pattern (chance 2^-10)


@dataclass(frozen=True)
class _Format:
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


_FORMATS = {"float32": _Format(24, -126, 127), "float16": _Format(11, -14, 15), "bfloat16": _Format(8, -126, 127)}


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
    table = _DEFAULTS[standard]
    params = dict(table.get(dtype, table.get("*", {})))
    params.update({key: float(value) for key, value in dict(tolerance or {}).items()})
    return params


@dataclass
class _Slice:
    """What the standards judge: the slice of one case, its golden and the inputs behind it.

    ``actual`` and ``golden`` are float64 ``(B, S, N, L)``; where either is not finite both hold 0
    (those elements are judged apart, see ``_non_finite``).
    """

    inputs: object
    result: np.ndarray                 # the device's dy, whole
    mode: int
    start: int
    end: int
    dtype: str
    params: dict
    actual: np.ndarray
    golden: np.ndarray
    non_finite: np.ndarray             # flat indices (into the slice) neutralised in actual/golden
    special_magnitude: np.ndarray | None = None    # m at the neutralised elements
    _magnitude: np.ndarray | None = None
    _rounded: np.ndarray | None = None

    @property
    def format(self) -> _Format:
        """dy's floating-point format."""
        return _FORMATS[self.dtype]

    def magnitude(self) -> np.ndarray:
        """``m = |c*g| + |s'*g'|`` per element (``reference.rotary_grad_magnitude``), 0 where neutralised."""
        if self._magnitude is None:
            magnitude = reference.rotary_grad_magnitude(
                self.inputs.dy, self.inputs.cos, self.inputs.sin, self.mode, (self.start, self.end))
            self.special_magnitude = magnitude.flat[self.non_finite]
            self._magnitude = self.neutral(magnitude)
        return self._magnitude

    def rounded(self) -> np.ndarray:
        """The golden rounded to dy's dtype, as dy's dtype (``reference.inplace_partial_rotary_mul_grad``)."""
        if self._rounded is None:
            self._rounded = reference.inplace_partial_rotary_mul_grad(
                self.inputs.dy, self.inputs.cos, self.inputs.sin, self.mode,
                (self.start, self.end))[..., self.start:self.end]
        return self._rounded

    def neutral(self, values: np.ndarray) -> np.ndarray:
        """``values`` with the neutralised elements set to 0 (in place)."""
        values.flat[self.non_finite] = 0
        return values


@dataclass
class _Judgement:
    """A standard's answer: pass/fail, why, its metrics, and per element what the diagnosis needs."""

    failed: bool
    reason: str
    metrics: dict
    bad: np.ndarray                    # bool (B, S, N, L): elements the standard holds wrong
    score: np.ndarray                  # how wrong each element is (worst first in the diagnosis)
    expected: np.ndarray               # the value each element was compared with
    limit: np.ndarray | None = None    # the allowed error per element, when the standard has one
    limit_name: str = ""


def default_budget(golden_magnitude: np.ndarray, magnitude: np.ndarray, fmt: _Format,
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


def _default(view: _Slice) -> _Judgement:
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
    return _Judgement(count > 0, reason, metrics, bad, ratio, view.golden, budget, "budget")


def _double_thousandth(view: _Slice) -> _Judgement:
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
    metrics = {"rel_err_share": share, "max_rel_err": max_relative}
    return _Judgement(share > p["share"] or over_cap, reason, metrics, wrong, relative, view.golden)


def _single_bm(view: _Slice) -> _Judgement:
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
    metrics = {"MERE": mere, "MARE": mare, "small_errors": count}
    reasons = [text for text, broken in (
        (f"MERE {mere:.3g} >= T {threshold:.3g}", mere >= threshold),
        (f"MARE {mare:.3g} >= 10T {10 * threshold:.3g}", mare >= 10 * threshold),
        (f"{count} small values (|golden| < {small_threshold:g}) off by more than {small_limit:g}", count > 0),
    ) if broken]
    score = np.where(small, error / small_limit, relative / threshold)
    return _Judgement(bool(reasons), "; ".join(reasons), metrics, (relative > threshold) | small_errors,
                      score, view.golden)


def _double_benchmark(view: _Slice) -> _Judgement:
    """``double_benchmark``: the device's MARE, MERE, RMSE and small-value error count, each divided by the same
    figure of a CPU computation in dy's own dtype, must stay within its ratio parameter."""
    p, fmt = view.params, view.format
    dy_dtype = view.inputs.dy.dtype
    same_precision = reference.rotary_grad_slice(view.inputs.dy, view.inputs.cos, view.inputs.sin, view.mode,
                                                 (view.start, view.end), compute_dtype=dy_dtype)
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
    return _Judgement(bool(reasons), "; ".join(reasons), metrics, device_error > allowed,
                      device_error / allowed, view.golden, allowed, "allowed")


def _allclose(view: _Slice) -> _Judgement:
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
    return _Judgement(count > 0, reason, metrics, bad, np.nan_to_num(ratio, nan=np.inf), expected,
                      tolerance, "tol")


def _exact(view: _Slice) -> _Judgement:
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
    return _Judgement(count > 0, reason, metrics, mismatch, np.where(mismatch, error + 1, 0), expected64)


_JUDGES: dict[str, Callable[[_Slice], _Judgement]] = {
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


def judge(case, inputs, outcome, standard: str = "default",
          tolerance: Mapping[str, float] | None = None) -> Verdict:
    """Judge one launch's ``outcome`` of ``case`` run on ``inputs`` (see the module docstring for the order).

    ``standard`` and ``tolerance`` are the case's, already resolved by the caller; an unknown standard
    or parameter raises ``PrmgError``. Returns a ``Verdict`` with status "passed" or "failed".
    """
    tolerance = dict(tolerance or {})
    check_standard(standard, tolerance, file=case.source, case=case.name)
    expected_status = case.expect.error
    if _status_matches(expected_status, outcome.status) is False:
        return Verdict("failed", _status_message(expected_status, outcome),
                       metrics={"status": int(outcome.status)},
                       details=[f"failed call: {outcome.failed_call}"] if outcome.failed_call else [])
    problems: list[str] = []
    details: list[str] = []
    metrics: dict = {}
    if expected_status is not None:
        metrics["status"] = int(outcome.status)
        if _changed(inputs.dy, outcome.dy):
            problems.append("dy changed although the call failed")
    for violation in outcome.contract_violations:
        problems.append(violation)
    if expected_status is None:
        with np.errstate(all="ignore"):                       # non-finite values are judged explicitly
            _judge_result(case, inputs, outcome.dy, standard, tolerance, problems, details, metrics)
    if not problems:
        return Verdict("passed", "", metrics, details)
    return Verdict("failed", "; ".join(problems), metrics, details)


# The key numbers of a verdict for a table column: (the metric that marks a standard, the text shown);
# the first metric present wins. A metric of None (not finite) shows as inf.
_KEY_METRICS = (
    ("max_err_ratio", "err/budget {max_err_ratio:.2g}"),
    ("rel_err_share", "wrong {rel_err_share:.2g}, max rel {max_rel_err:.2g}"),
    ("MERE", "MERE {MERE:.2g} MARE {MARE:.2g}"),
    ("mare_ratio", "MARE x{mare_ratio:.2g} MERE x{mere_ratio:.2g} RMSE x{rmse_ratio:.2g}"),
    ("max_tol_ratio", "err/tol {max_tol_ratio:.2g}"),
    ("mismatches", "mismatches {mismatches}"),
    ("status", "status {status}"),
)


def key_metric(verdict: Verdict) -> str:
    """A short string of the verdict's key number(s) for a table column (``_KEY_METRICS``), e.g.
    ``err/budget 0.41``, led by ``outside changed N`` when elements outside the slice changed."""
    numbers = {key: math.inf if value is None else value for key, value in verdict.metrics.items()}
    text = next((shown.format_map(numbers) for key, shown in _KEY_METRICS if key in numbers), "")
    if numbers.get("outside_changed"):
        text = f"outside changed {numbers['outside_changed']}" + (f", {text}" if text else "")
    return text


def _status_matches(expected, status: int) -> bool:
    """True when ``status`` is what ``expected`` asks: 0 for None (success), any non-zero status for "any", else
    exactly ``expected``."""
    if expected is None:
        return status == 0
    if expected == "any":
        return status != 0
    return status == expected


def _status_message(expected, outcome) -> str:
    """``expected X, got Y`` (with the operator's message after a failed call) for a status mismatch."""
    wanted = "success" if expected is None else "an error" if expected == "any" else describe(expected)
    got = describe(outcome.status)
    if outcome.status != 0 and outcome.error_message:
        got += f": {outcome.error_message}"
    return f"expected {wanted}, got {got}"


def _changed(before: np.ndarray, after: np.ndarray | None) -> bool:
    """True when dy read back differs bit for bit from the input (False when there is nothing comparable:
    no read-back, or a buffer of another size, e.g. a strided negative case's storage)."""
    if after is None or before.dtype.itemsize != after.dtype.itemsize or before.size != after.size:
        return False
    return not np.array_equal(bits(before).ravel(), bits(after).ravel())


def _judge_result(case, inputs, result, standard, tolerance, problems, details, metrics) -> None:
    """The checks of a successful call: shape, outside the slice, inside the slice (appends to the lists)."""
    if result is None:
        problems.append("no dy was read back after the call")
        return
    if result.shape != inputs.dy.shape or result.dtype != inputs.dy.dtype:
        problems.append(f"dy read back as {result.dtype} {result.shape}, "
                        f"expected {inputs.dy.dtype} {inputs.dy.shape}")
        return
    start, end = (int(v) for v in case.partial_slice)
    outside = _outside_changes(inputs.dy, result, start, end)
    if outside:
        problems.append(outside[0])
        details.extend(outside[1])
        metrics["outside_changed"] = outside[2]
    if end > start:
        _judge_slice(case, inputs, result, standard, tolerance, start, end, problems, details, metrics)


def _judge_slice(case, inputs, result, standard, tolerance, start, end, problems, details, metrics) -> None:
    """Judge the slice ``[start, end)`` of ``result`` against the golden by ``standard``: failure reasons go to
    ``problems``, diagnosis lines to ``details``, the standard's numbers to ``metrics``."""
    dtype = from_numpy(inputs.dy.dtype).name
    if dtype not in _FORMATS:
        problems.append(f"dy dtype {dtype} cannot be judged (the operator takes float32, float16, bfloat16)")
        return
    try:
        golden = reference.rotary_grad_slice(inputs.dy, inputs.cos, inputs.sin, case.rotary_mode, (start, end))
    except ValueError as error:
        problems.append(f"the call succeeded, but there is no golden for these inputs: {error}")
        return
    actual = result[..., start:end].astype(np.float64)
    finite = np.isfinite(actual)
    finite &= np.isfinite(golden)
    non_finite = np.flatnonzero(~finite)
    specials = actual.flat[non_finite], golden.flat[non_finite]
    actual.flat[non_finite] = 0
    golden.flat[non_finite] = 0
    view = _Slice(inputs, result, case.rotary_mode, start, end, dtype,
                  standard_parameters(standard, dtype, tolerance), actual, golden, non_finite)
    judgement = _JUDGES[standard](view)
    metrics.update({key: _plain(value) for key, value in judgement.metrics.items()})
    special_lines, special_bad = _non_finite(view, standard, *specials)
    if len(special_bad):
        metrics["non_finite"] = len(special_bad)
    if not judgement.failed and not len(special_bad):
        return
    candidates = np.setdiff1d(np.flatnonzero(judgement.bad), special_bad)
    wrong = judgement.bad
    wrong.flat[special_bad] = True
    where = _localise(wrong, start, inputs.cos.shape)
    worst = _worst(view, judgement, candidates if len(candidates) or not judgement.failed else None)
    reasons = ([f"{len(special_bad)} non-finite mismatch{'es' * (len(special_bad) > 1)}"] if len(special_bad)
               else []) + ([judgement.reason] if judgement.failed else [])
    problems.append("; ".join(reasons + where + (special_lines + worst)[:1]))
    details.extend(special_lines + [f"localisation: {text}" for text in where] + worst)


def _non_finite(view: _Slice, standard: str, actual: np.ndarray, golden: np.ndarray):
    """Judge the elements where the result or the golden is NaN/Inf: equal when both are NaN or both the
    same infinity (of the golden rounded to dy's dtype); under ``default`` an infinity is also right
    where ``|golden| + budget`` reaches dy's overflow, and any non-finite value where ``m`` reaches
    float32's overflow. Returns (diagnosis lines, flat indices of the wrong elements)."""
    if not len(view.non_finite):
        return [], view.non_finite
    fmt = view.format
    with np.errstate(over="ignore", invalid="ignore"):
        rounded = golden.astype(view.inputs.dy.dtype).astype(np.float64)
        right = (np.isnan(actual) & np.isnan(rounded)) | (np.isinf(rounded) & (actual == rounded))
        if standard == "default":
            view.magnitude()
            magnitude = view.special_magnitude
            budget = default_budget(np.abs(golden), np.nan_to_num(magnitude), fmt, view.params["budget_scale"])
            overflowed = np.isinf(actual) & np.isfinite(golden) & (np.sign(actual) == np.sign(golden)) \
                & (np.abs(golden) + budget >= fmt.overflow)
            right |= overflowed | (~np.isfinite(actual) & (magnitude >= FP32_OVERFLOW))
    wrong = np.flatnonzero(~right)
    lines = [f"{_number(actual[i])} at {_index(view, view.non_finite[i])} where the golden is {_number(golden[i])}"
             for i in wrong[:_WORST]]
    if len(wrong) > _WORST:
        lines.append(f"... and {len(wrong) - _WORST} more non-finite mismatches")
    return lines, view.non_finite[wrong]


def _worst(view: _Slice, judgement: _Judgement, candidates: np.ndarray | None) -> list[str]:
    """Lines for the (at most 5) elements with the highest score among ``candidates`` (None: all)."""
    score = judgement.score.ravel()
    if candidates is None:
        candidates = np.arange(score.size)
    if len(candidates) > _WORST:
        candidates = candidates[np.argpartition(-score[candidates], _WORST)[:_WORST]]
    candidates = candidates[np.argsort(-score[candidates], kind="stable")]
    lines = []
    for flat in candidates:
        expected, actual = judgement.expected.flat[flat], view.actual.flat[flat]
        line = (f"worst at {_index(view, flat)}: expected {_number(expected)}, got {_number(actual)}, "
                f"error {abs(actual - expected):.3g}")
        if judgement.limit is not None:
            line += f", {judgement.limit_name} {judgement.limit.flat[flat]:.3g}"
        lines.append(line)
    return lines


# ---------------------------------------------------------------------------------------------------
# Diagnosis: where the wrong elements are


def _outside_changes(before: np.ndarray, after: np.ndarray, start: int, end: int):
    """None when dy outside ``[start, end)`` is bit-identical; else (summary, detail lines, count)."""
    changed = bits(after) != bits(before)
    changed[..., start:end] = False
    count = int(changed.sum())
    if not count:
        return None
    depth = before.shape[-1]
    columns = np.flatnonzero(changed.reshape(-1, depth).any(axis=0))
    rows = np.flatnonzero(changed.reshape(-1, depth).any(axis=1))
    summary = (f"outside the slice at d={_ranges(columns)} "
               f"({count} element{'s' * (count > 1)}, {_rows_text(rows, before.shape[:3])})")
    lines = [f"outside the slice at {tuple(int(i) for i in index)}: was {_number(before[index])}, "
             f"now {_number(after[index])}" for index in zip(*np.nonzero(changed))][:_WORST]
    return summary, lines, count


def _localise(bad: np.ndarray, start: int, cos_shape: tuple[int, ...]) -> list[str]:
    """Statements that hold for the set of wrong elements ``bad`` (bool ``(B, S, N, L)``)."""
    count, length = int(bad.sum()), bad.shape[-1]
    if count == bad.size:
        return ["every element wrong"]
    if count == 0:
        return []
    notes = []
    lanes = np.arange(length)
    columns = bad.reshape(-1, length).any(axis=0)
    if count >= _PATTERN_MINIMUM and length >= 2:
        for text, member in (("on odd lanes", lanes % 2 == 1), ("on even lanes", lanes % 2 == 0),
                             ("in the first half of the slice", lanes < length // 2),
                             ("in the second half of the slice", lanes >= length // 2)):
            if not columns[~member].any():
                notes.append(f"errors only {text}")
        used = np.flatnonzero(columns)
        low, high = int(used[0]), int(used[-1]) + 1
        if high - low <= length // 2 and not (notes and high - low == length // 2):
            notes.append(f"errors only at d in [{start + low}, {start + high})")
    rows_shape = bad.shape[:3]
    rows = bad.reshape(-1, length).any(axis=1)
    if rows.all():
        return notes
    bad_rows = np.flatnonzero(rows)
    if len(bad_rows) == 1 and bad_rows[0] == rows.size - 1:
        notes.append(f"errors only in the last (b, s, n) row {_row(bad_rows[0], rows_shape)}")
        return notes
    table_note = _table_rows_note(rows, rows_shape, cos_shape)
    if table_note:
        notes.append(table_note)
    elif len(bad_rows) * 2 <= rows.size:
        notes.append(f"errors only in {_rows_text(bad_rows, rows_shape)}")
    else:
        notes.append(f"errors in every row except {_rows_text(np.flatnonzero(~rows), rows_shape)}")
    return notes


def _table_rows_note(rows: np.ndarray, rows_shape: tuple[int, ...], cos_shape: tuple[int, ...]) -> str:
    """When cos/sin broadcast and every group of rows sharing one cos row is all right or all wrong:
    "all rows sharing cos row (s=0) are right, the others wrong" (or the reverse); else ""."""
    table_axes = [axis for axis in range(3) if cos_shape[axis] > 1]
    table_rows = int(np.prod([cos_shape[axis] for axis in table_axes], dtype=np.int64))
    if not 1 < table_rows < rows.size:
        return ""
    index = np.indices(rows_shape).reshape(3, -1)
    table_of_row = np.ravel_multi_index(tuple(index[axis] for axis in table_axes),
                                        tuple(cos_shape[axis] for axis in table_axes))
    wrong_rows = np.bincount(table_of_row, weights=rows, minlength=table_rows)
    all_rows = np.bincount(table_of_row, minlength=table_rows)
    if not np.all((wrong_rows == 0) | (wrong_rows == all_rows)):
        return ""
    right = np.flatnonzero(wrong_rows == 0)
    wrong = np.flatnonzero(wrong_rows > 0)
    names = "bsn"

    def label(groups):
        """``cos rows (b=0, s=1), ... and K more``: the first three cos rows of ``groups`` and the count left."""
        coordinates = np.unravel_index(groups, tuple(cos_shape[axis] for axis in table_axes))
        shown = [", ".join(f"{names[axis]}={int(c[i])}" for axis, c in zip(table_axes, coordinates))
                 for i in range(min(3, len(groups)))]
        more = f" and {len(groups) - 3} more" if len(groups) > 3 else ""
        return f"cos row{'s' * (len(groups) > 1)} " + ", ".join(f"({text})" for text in shown) + more

    if len(right) <= len(wrong):
        return f"all rows sharing {label(right)} are right, the others wrong"
    return f"all rows sharing {label(wrong)} are wrong, the others right"


def _row(flat: int, rows_shape: tuple[int, ...]) -> str:
    """Flat row number ``flat`` as its ``(b, s, n)`` tuple in ``rows_shape``."""
    return str(tuple(int(i) for i in np.unravel_index(flat, rows_shape)))


def _rows_text(rows: np.ndarray, rows_shape: tuple[int, ...]) -> str:
    """e.g. "row (0, 1, 0)", "rows (0, 0, 0), (0, 1, 0), (0, 2, 0), ... (5 of 24 rows)", "every row"."""
    total = int(np.prod(rows_shape, dtype=np.int64))
    if len(rows) == total:
        return "every row"
    if len(rows) == 1:
        return f"row {_row(rows[0], rows_shape)}"
    shown = ", ".join(_row(r, rows_shape) for r in rows[:3])
    return f"rows {shown}{', ...' if len(rows) > 3 else ''} ({len(rows)} of {total} rows)"


def _ranges(values: np.ndarray) -> str:
    """Sorted ints as ranges: [1, 2, 3, 7] -> "1-3, 7" (at most four ranges shown)."""
    breaks = np.flatnonzero(np.diff(values) != 1)
    firsts, lasts = np.r_[values[0], values[breaks + 1]], np.r_[values[breaks], values[-1]]
    parts = [f"{a}" if a == b else f"{a}-{b}" for a, b in zip(firsts.tolist(), lasts.tolist())]
    return ", ".join(parts[:4]) + (", ..." if len(parts) > 4 else "")


def _index(view: _Slice, flat: int) -> str:
    """``(b, s, n, d)=(...)`` of flat slice element ``flat``, ``d`` counted in dy's last axis."""
    b, s, n, lane = np.unravel_index(int(flat), view.actual.shape)
    return f"(b, s, n, d)=({b}, {s}, {n}, {view.start + lane})"


def _number(value) -> str:
    """``value`` with 8 significant digits."""
    return f"{float(value):.8g}"


def _plain(value):
    """A JSON-safe metric: int or finite float; None for an infinite or NaN float."""
    if isinstance(value, (int, np.integer)):
        return int(value)
    value = float(value)
    return value if math.isfinite(value) else None
