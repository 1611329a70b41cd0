"""The community single benchmark (``single_bm``): ``MERE = mean(|a - g| / (|g| + 1e-7))`` and ``MARE`` (the max)
against the float64 golden must stay below ``T`` and ``10*T``; small values within their absolute limit.
"""

from __future__ import annotations

import numpy as np

from .base import (SMALL_VALUES, Judgement, SliceView, Standard, against, joined, largest, number, over,
                   relative_errors)


def _describe(m: dict) -> str:
    """``MERE 0.0001 ≤ 0.00098, MARE 0.002 ≤ 0.0098`` (relative errors against T and 10*T), the one over its limit
    first, with how far (``against``)."""
    limit = number(m, "T")
    return joined(against("MERE", m["MERE"], limit), against("MARE", m["MARE"], 10 * limit))

def judge(view: SliceView) -> Judgement:
    """``single_bm``: ``MERE`` (mean) and ``MARE`` (max) of ``|a - g| / (|g| + 1e-7)`` over the non-small values
    must stay below ``T`` and ``10*T``; small values (``SMALL_VALUES``) within their absolute limit."""
    threshold = view.params["threshold"]
    small_threshold, small_limit = SMALL_VALUES[view.dtype]
    error = np.abs(view.actual - view.golden)
    small = np.abs(view.golden) < small_threshold
    relative = relative_errors(error, view.golden, small)
    judged = int(small.size - small.sum())
    mere = float(relative.sum() / judged) if judged else 0.0
    mare = largest(relative)
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


STANDARD = Standard(
    name="single_bm", defaults={"float16": {"threshold": 2.0 ** -10}, "bfloat16": {"threshold": 2.0 ** -7},
              "float32": {"threshold": 2.0 ** -13}}, judge=judge, key_metric="MERE",
    describe=_describe, drift_metric="MARE",
    help="MERE < T and MARE < 10*T against the float64 golden (T = 2^-10 fp16, 2^-7 bf16, 2^-13 fp32); small values by absolute error",
    key_margin=lambda m: max(over(m, "MERE", number(m, "T")), over(m, "MARE", 10 * number(m, "T"))))
