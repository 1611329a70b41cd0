"""The commercial double benchmark (``double_benchmark``), as ops-test-kit's (TTK's) ``cross_check``: the result and a
third-party result -- here a CPU computation of the same formula in dy's own dtype -- are both measured against the
float64 golden, and the device's figures are divided by the third party's.

The elements where the result, the golden and the reference are all finite split at ``small_value``:

- **large** (``|g| >= small_value``): ``MARE`` (max) and ``MERE`` (mean) of ``|x - g| / (|g| + 1e-7)`` and
  ``RMSE`` of ``x - g``, for ``x`` the device and the reference; each ratio is
  ``device / max(reference, small_value)`` (1 when both are 0) and must be at most its limit. TTK's levels
  (``level``: 0, 1, 2) set the three limits: L0 10/2/2, L1 5/1.5/1.5 (the default), L2 2/1.2/1.2;
- **small** (``|g| < small_value``): an element is an error when ``|x - g| > small_value_atol``; the device's count
  over ``max(the reference's count, 1)`` must be at most ``small_ratio`` (2: TTK's fixed rule).

``small_value``/``small_value_atol``: fp16 2^-11/2^-16, bf16 2^-8/2^-16, fp32 2^-14/2^-30 (TTK's ``SMALL_VALUE``).

**Where it differs from TTK** (its non-finite rule): a non-finite result must equal the golden rounded to dy's dtype
(``judge``), as under every standard but ``default``. TTK passes a non-finite result that matches the third party's
even where the golden is finite, and fails every finite result where only the third party is not finite (it
overflowed on the way); prmg fails the first, and holds the second to the ``default`` budget -- what a kernel
computing in float32 can give -- out of the ratios: a kernel better than its reference is not wrong.
"""

from __future__ import annotations

import numpy as np

from .base import Judgement, SliceView, Standard, against, joined, largest, number, over, relative_errors
from .default import default_budget

_RATIOS = (("MARE", "mare_ratio", "mare_limit"), ("MERE", "mere_ratio", "mere_limit"),
           ("RMSE", "rmse_ratio", "rmse_limit"))          # (label, ratio metric, its limit's metric)
LEVELS = {0: {"mare_ratio": 10.0, "mere_ratio": 2.0, "rmse_ratio": 2.0},      # TTK's cross_check LEVEL_PRESETS
          1: {"mare_ratio": 5.0, "mere_ratio": 1.5, "rmse_ratio": 1.5},
          2: {"mare_ratio": 2.0, "mere_ratio": 1.2, "rmse_ratio": 1.2}}
DEFAULT_LEVEL = 1
SMALL_VALUES = {"float16": (2.0 ** -11, 2.0 ** -16), "bfloat16": (2.0 ** -8, 2.0 ** -16),
                "float32": (2.0 ** -14, 2.0 ** -30)}      # dtype: (small_value, small_value_atol)


def _describe(m: dict) -> str:
    """``MARE/ref 1.2 ≤ 10, MERE/ref 0.9 ≤ 2, RMSE/ref 1.1 ≤ 2``: each figure over the same-precision reference's
    against its limit, those over it first, with how far (``against``)."""
    return joined(*(against(f"{label}/ref", m[key], number(m, limit)) for label, key, limit in _RATIOS))


def _margin(m: dict) -> float:
    """The worst of the MARE, MERE and RMSE ratios over their limits."""
    return max(over(m, key, number(m, limit)) for _, key, limit in _RATIOS)


def ratio(device: float, reference_value: float, floor: float) -> float:
    """TTK's ``safe_div``: ``device / max(reference, floor)``, 1 when both are 0."""
    if device == 0 and reference_value == 0:
        return 1.0
    return device / max(reference_value, floor)


def _figures(error: np.ndarray, golden: np.ndarray, large: np.ndarray, small: np.ndarray, atol: float) -> tuple:
    """(MARE, MERE, RMSE) over the ``large`` elements and the count of ``small`` elements with ``error > atol``."""
    count = int((small & (error > atol)).sum())
    relative = relative_errors(error[large], golden[large])
    if relative.size == 0:
        return 0.0, 0.0, 0.0, count
    return largest(relative), float(relative.mean()), float(np.sqrt(np.mean(np.square(error[large])))), count


def judge(view: SliceView) -> Judgement:
    """``double_benchmark``: the device's MARE, MERE and RMSE over the large values, each over the same figure of a
    CPU computation in dy's own dtype, within their limits; its small-value error count within ``small_ratio`` x
    the reference's (module docstring)."""
    p = view.params
    dy_dtype = view.x.dtype
    same_precision = view.op.golden_slice(view.x, view.cos, view.sin, view.mode, view.piece, compute_dtype=dy_dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        reference = view.neutral(same_precision.astype(dy_dtype).astype(np.float64))
        reference_error = np.abs(reference - view.golden)
    device_error = np.abs(view.actual - view.golden)
    counted = np.isfinite(reference_error)                 # the neutralised elements hold 0 (judged apart)
    counted.flat[view.non_finite] = False
    small = counted & (np.abs(view.golden) < p["small_value"])
    large = counted & ~small
    unreferenced = ~np.isfinite(reference_error)       # only the reference is not finite: the default budget
    beyond = unreferenced & (device_error > default_budget(np.abs(view.golden), view.magnitude(), view.format))
    device = _figures(device_error, view.golden, large, small, p["small_value_atol"])
    ref = _figures(reference_error, view.golden, large, small, p["small_value_atol"])
    ratios = [ratio(device[i], ref[i], p["small_value"]) for i in range(3)]
    small_ratio = device[3] / max(ref[3], 1)
    metrics = {"mare_ratio": ratios[0], "mere_ratio": ratios[1], "rmse_ratio": ratios[2],
               "mare_limit": p["mare_ratio"], "mere_limit": p["mere_ratio"], "rmse_limit": p["rmse_ratio"],
               "small_errors": device[3], "reference_small_errors": ref[3], "MARE": device[0],
               "reference_MARE": ref[0]}
    reasons = [text for text, broken in (
        (f"MARE ratio {ratios[0]:.3g} > {p['mare_ratio']:g}", ratios[0] > p["mare_ratio"]),
        (f"MERE ratio {ratios[1]:.3g} > {p['mere_ratio']:g}", ratios[1] > p["mere_ratio"]),
        (f"RMSE ratio {ratios[2]:.3g} > {p['rmse_ratio']:g}", ratios[2] > p["rmse_ratio"]),
        (f"{device[3]} small-value errors > {p['small_ratio']:g} x max(the reference's {ref[3]}, 1)",
         small_ratio > p["small_ratio"]),
        (f"{int(beyond.sum())} results over the default budget where the same-precision reference is not finite",
         bool(beyond.any())),
    ) if broken]
    # for the diagnosis: elements the device gets worse than the same-precision CPU by over one ulp
    allowed = view.format.ulp(np.abs(view.golden))
    allowed += 2 * np.minimum(np.nan_to_num(reference_error, nan=np.inf), np.finfo(np.float64).max)
    return Judgement(bool(reasons), "; ".join(reasons), metrics, (counted & (device_error > allowed)) | beyond,
                     device_error / allowed, view.golden, allowed, "allowed")


STANDARD = Standard(
    name="double_benchmark",
    defaults={dtype: {"level": float(DEFAULT_LEVEL), **LEVELS[DEFAULT_LEVEL], "small_ratio": 2.0,
                      "small_value": small_value, "small_value_atol": atol}
              for dtype, (small_value, atol) in SMALL_VALUES.items()},
    judge=judge, key_metric="mare_ratio", describe=_describe, drift_metric="mare_ratio",
    help="TTK's cross_check: MARE, MERE and RMSE ratios to a same-precision CPU computation over |g| >= small_value "
         "<= level 1's 5, 1.5, 1.5 (level 0: 10/2/2, level 2: 2/1.2/1.2); small-value errors <= 2 x max(the "
         "reference's, 1); unlike TTK, non-finite results by the rounded golden and, where only the reference is not "
         "finite, results by the default budget",
    key_margin=_margin, presets={"level": LEVELS})
