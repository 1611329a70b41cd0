"""``mixed``, ops-test-kit's (TTK's) default standard ``mix_tolerance`` (``--compare mixed``), against the float64
golden: an element matches when ``|a - g| <= atol + rtol*|g|`` and ``|a - g| <= limit``; the case passes when at least
``required_matched_ratio`` of the elements match and the largest absolute error is at most the limit::

    matched_ratio = #{ |a - g| <= atol + rtol*|g|  and  |a - g| <= limit } / n >= required_matched_ratio
    max |a - g| <= limit
    limit = max_abs_error_limit                                       when a case sets it (> 0)
          = max(max_abs_error_floor, 32 * ulp(max |e|))               otherwise

with ``e`` the golden rounded to dy's dtype over its finite elements and ``ulp(x)`` dy's dtype's spacing at ``x``
(``2^(max(floor(log2 x), emin) - p + 1)``: at the largest finite value its binade's spacing). TTK's table
(``resolve.MIX_TOLERANCE``): rtol = atol = 2^-9 (float16), 2^-6 (bfloat16); float32 rtol 2^-10, atol 2^-16;
``required_matched_ratio`` 0.99; the limit "1e-1 / 1e0 / 1e-2 or 32 ULP", which TTK's mix_tolerance (its
tests, ``tests/core_modules/comparison/test_mix_tolerance.py`` of the stored version with ``max_abs_error_floor``)
resolves when no spec sets it to the dynamic form above, the floors 0.1, 1.0 and 0.01 anchored to 32 ULP of the
golden's magnitude (float16 golden 60000: 32 * 32 = 1024), and an explicit limit replacing it whole. A non-finite
element matches only the same non-finite value (``judge``: the golden rounded to dy's dtype, NaN for NaN, the same
infinity); one that does not fails the case, as TTK's unbounded error does.
"""

from __future__ import annotations

import numpy as np

from ...results import plural
from .base import Judgement, SliceView, Standard, against, joined, largest, number, over

_FLOORS = {"float16": 1e-1, "bfloat16": 1e0, "float32": 1e-2}     # TTK's "1e-X" of max_abs_error_limit
_TOLERANCES = {"float16": (2.0 ** -9, 2.0 ** -9), "bfloat16": (2.0 ** -6, 2.0 ** -6),
               "float32": (2.0 ** -10, 2.0 ** -16)}            # (rtol, atol)
REQUIRED_MATCHED_RATIO = 0.99
ULP_MULTIPLE = 32                                               # TTK's "or 32 ULP"


def abs_error_limit(view: SliceView) -> float:
    """The largest absolute error allowed: the case's ``max_abs_error_limit`` when it sets one (> 0), else TTK's
    dynamic ``max(max_abs_error_floor, 32 * ulp(max |e|))``, ``e`` the golden rounded to dy's dtype over its finite
    elements (module docstring)."""
    p = view.params
    if p["max_abs_error_limit"] > 0:
        return p["max_abs_error_limit"]
    with np.errstate(invalid="ignore"):
        rounded = np.abs(view.nearest())
    anchor = largest(rounded[np.isfinite(rounded)])
    return max(p["max_abs_error_floor"], ULP_MULTIPLE * float(view.format.ulp(np.array([anchor]))[0]))


def judge(view: SliceView) -> Judgement:
    """``mixed``: a match is ``|a - g| <= atol + rtol*|g|`` within the limit; passes when the share of matches is at
    least ``required_matched_ratio`` and ``max |a - g|`` is within the limit (module docstring)."""
    p = view.params
    error = np.abs(view.actual - view.golden)
    tolerance = p["atol"] + p["rtol"] * np.abs(view.golden)
    worst, limit = largest(error), abs_error_limit(view)
    bad = ~(error <= tolerance) | (error > limit)
    count = int(bad.sum())
    matched = (bad.size - count) / bad.size if bad.size else 1.0
    metrics = {"matched_ratio": matched, "required_ratio": p["required_matched_ratio"], "unmatched": count,
               "max_abs_err": worst, "abs_err_limit": limit, "cap_ratio": worst / limit if limit else float("inf")}
    reasons = [text for text, broken in (
        (f"{count} of {plural(bad.size, 'element')} not within atol {p['atol']:g} + rtol {p['rtol']:g} * |golden| "
         f"and {limit:g}: "
         f"matched {matched:.4g} < {p['required_matched_ratio']:g}", matched < p["required_matched_ratio"]),
        (f"max abs error {worst:.3g} > {limit:g}", worst > limit),
    ) if broken]
    with np.errstate(divide="ignore", invalid="ignore"):
        score = np.nan_to_num(error / tolerance, nan=np.inf)
    return Judgement(bool(reasons), "; ".join(reasons), metrics, bad, score, view.golden, tolerance, "tol")


def _describe(m: dict) -> str:
    """``unmatched 0.4% ≤ 1%, max err 0.003 ≤ 0.01``: the share of elements beyond atol + rtol*|g| against the share
    allowed (1 - required_matched_ratio), the largest error against the cap, the one over its limit first, with how
    far (``against``)."""
    allowed = 100 * (1 - number(m, "required_ratio"))
    return joined(against("unmatched", 100 * (1 - number(m, "matched_ratio")), allowed, "%"),
                  against("max err", m["max_abs_err"], number(m, "abs_err_limit")))


def _margin(m: dict) -> float:
    """The worse of the unmatched share over the share allowed, ``(1 - matched) / (1 - required)``, and the largest
    error over its limit (> 1 fails)."""
    unmatched = 1.0 - number(m, "matched_ratio")
    allowed = 1.0 - number(m, "required_ratio")
    return max(unmatched / allowed if allowed > 0 else (float("inf") if unmatched > 0 else 0.0), over(m, "cap_ratio"))


STANDARD = Standard(
    name="mixed",
    defaults={dtype: {"rtol": rtol, "atol": atol, "required_matched_ratio": REQUIRED_MATCHED_RATIO,
                      "max_abs_error_limit": 0.0, "max_abs_error_floor": _FLOORS[dtype]}
              for dtype, (rtol, atol) in _TOLERANCES.items()},
    judge=judge, key_metric="matched_ratio", describe=_describe, drift_metric="cap_ratio",
    fractions=("required_matched_ratio",),
    help="TTK's default mix_tolerance: >= 99% of elements within atol + rtol*|g| of the float64 golden and the "
         "largest error <= max(floor, 32 ulp of the largest |golden|), or max_abs_error_limit when set (fp16 "
         "2^-9/2^-9/0.1, bf16 2^-6/2^-6/1, fp32 2^-10/2^-16/0.01)",
    key_margin=_margin)
