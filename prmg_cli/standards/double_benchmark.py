"""The commercial double benchmark (``double_benchmark``): the device's MARE, MERE, RMSE and small-value error count,
each divided by the same figure of a CPU computation in dy's own dtype, must stay within its ratio parameter.
"""

from __future__ import annotations

import numpy as np

from .base import (SMALL_VALUES, Judgement, SliceView, Standard, against, joined, largest, number, over, ratio,
                   relative_errors)


_RATIOS = (("MARE", "mare_ratio", "mare_limit"), ("MERE", "mere_ratio", "mere_limit"),
           ("RMSE", "rmse_ratio", "rmse_limit"))          # (label, ratio metric, its limit's metric)


def _describe(m: dict) -> str:
    """``MARE/ref 1.2 ≤ 10, MERE/ref 0.9 ≤ 2, RMSE/ref 1.1 ≤ 2``: each figure over the same-precision reference's
    against its limit, those over it first, with how far (``against``)."""
    return joined(*(against(f"{label}/ref", m[key], number(m, limit)) for label, key, limit in _RATIOS))


def _margin(m: dict) -> float:
    """The worst of the MARE, MERE and RMSE ratios over their limits."""
    return max(over(m, key, number(m, limit)) for _, key, limit in _RATIOS)

def judge(view: SliceView) -> Judgement:
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
        relative = relative_errors(error, view.golden, small)
        return (largest(relative), float(relative.sum() / judged), float(np.sqrt(np.mean(np.square(error)))),
                int((small & (error > small_limit)).sum()))

    device, ref = statistics(device_error), statistics(reference_error)
    ratios = [ratio(device[i], ref[i], floor)
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


STANDARD = Standard(
    name="double_benchmark", defaults={"*": {"mare_ratio": 10.0, "mere_ratio": 2.0, "rmse_ratio": 2.0, "small_ratio": 2.0}}, judge=judge, key_metric="mare_ratio",
    describe=_describe, drift_metric="mare_ratio",
    help="MARE, MERE and RMSE ratios to a same-precision CPU computation <= 10, 2, 2; small-value errors <= 2 x the reference's",
    key_margin=_margin)
