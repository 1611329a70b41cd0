"""``allclose``, as torch.testing's: an element is wrong when ``|a - e| > atol + rtol*|e|``, ``e`` the golden rounded to
dy's dtype (or ``e`` is infinite). Defaults are torch's.
"""

from __future__ import annotations

import numpy as np

from ...results import plural
from .base import Judgement, SliceView, Standard, largest, over, within

def judge(view: SliceView) -> Judgement:
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
    metrics = {"max_tol_ratio": largest(ratio), "bad": count, "max_abs_err": largest(error)}
    reason = (f"{count} of {plural(bad.size, 'element')} not within atol {p['atol']:g} + rtol {p['rtol']:g} "
              f"* |expected|: largest {within('err', metrics['max_tol_ratio'], 'tol')[0]}")
    return Judgement(count > 0, reason, metrics, bad, np.nan_to_num(ratio, nan=np.inf), expected,
                      tolerance, "tol")


STANDARD = Standard(
    name="allclose", defaults={"float16": {"rtol": 1e-3, "atol": 1e-5}, "bfloat16": {"rtol": 1.6e-2, "atol": 1e-5},
              "float32": {"rtol": 1.3e-6, "atol": 1e-5}}, judge=judge, key_metric="max_tol_ratio",
    describe=lambda m: within("err", m["max_tol_ratio"], "tol")[0], drift_metric="max_tol_ratio",
    help="torch.testing.assert_close: |a-e| <= atol + rtol*|e| against the golden rounded to dy's dtype (torch's "
         "defaults)",
    key_margin=lambda m: over(m, "max_tol_ratio"))
