"""The community single benchmark (``single_bm``), as ops-test-kit's (TTK's) ``stat_rel_err``: over the elements
where the result and the golden are both finite, ``MERE = mean(|a - e| / (|e| + 1e-7))`` and ``MARE`` (the max of
the same) must stay below ``T`` and ``10*T`` (T = 2^-10 fp16, 2^-7 bf16, 2^-13 fp32), ``e`` the golden rounded to
dy's dtype: TTK promotes no golden for stat_rel_err (its ``needs_promote_golden``), so it compares with what the
golden function returns, the output's dtype. There is no small-value rule: near zero the ``1e-7`` in the
denominator is all that tempers the relative error. A non-finite element must equal the golden rounded to dy's
dtype (``judge``); one that does not fails the case, as TTK's NaN/Inf mismatch does.
"""

from __future__ import annotations

import numpy as np

from .base import Judgement, SliceView, Standard, against, joined, largest, number, over, relative_errors

MARE_TIMES = 10                 # MARE < MARE_TIMES * T


def _describe(m: dict) -> str:
    """``MERE 0.0001 ≤ 0.00098, MARE 0.002 ≤ 0.0098`` (relative errors against T and 10*T), the one over its limit
    first, with how far (``against``)."""
    limit = number(m, "T")
    return joined(against("MERE", m["MERE"], limit), against("MARE", m["MARE"], MARE_TIMES * limit))


def judge(view: SliceView) -> Judgement:
    """``single_bm``: ``MERE`` (mean) and ``MARE`` (max) of ``|a - e| / (|e| + 1e-7)`` over the finite elements must
    stay below ``T`` and ``10*T`` (module docstring)."""
    threshold = view.params["threshold"]
    expected = view.nearest()
    with np.errstate(invalid="ignore"):
        relative = relative_errors(np.abs(view.actual - expected), expected)
    relative[np.isnan(relative)] = np.inf                  # a finite result where e rounds to an infinity
    finite = relative.size - len(view.non_finite)          # the neutralised elements hold 0: left out of the mean
    mere = float(relative.sum() / finite) if finite else 0.0
    mare = largest(relative)
    metrics = {"MERE": mere, "MARE": mare, "T": threshold}
    reasons = [text for text, broken in (
        (f"MERE {mere:.3g} >= T {threshold:.3g}", not mere < threshold),
        (f"MARE {mare:.3g} >= {MARE_TIMES}T {MARE_TIMES * threshold:.3g}", not mare < MARE_TIMES * threshold),
    ) if broken]
    return Judgement(bool(reasons), "; ".join(reasons), metrics, relative > threshold, relative / threshold,
                     expected)


STANDARD = Standard(
    name="single_bm", defaults={"float16": {"threshold": 2.0 ** -10}, "bfloat16": {"threshold": 2.0 ** -7},
                                "float32": {"threshold": 2.0 ** -13}}, judge=judge, key_metric="MERE",
    describe=_describe, drift_metric="MARE",
    help="TTK's stat_rel_err: MERE < T and MARE < 10*T of |a-e|/(|e|+1e-7) over the finite elements, against the "
         "golden rounded to dy's dtype (T = 2^-10 fp16, 2^-7 bf16, 2^-13 fp32); no small-value rule",
    key_margin=lambda m: max(over(m, "MERE", number(m, "T")), over(m, "MARE", MARE_TIMES * number(m, "T"))))
