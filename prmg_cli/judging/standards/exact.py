"""``exact``: bit-identical to the golden rounded to dy's dtype (NaN matches NaN).
"""

from __future__ import annotations

import numpy as np

from ...dtypes import bits
from ...results import plural
from .base import Judgement, SliceView, Standard, largest

def judge(view: SliceView) -> Judgement:
    """``exact``: an element is wrong when its bits differ from the golden rounded to dy's dtype (NaN matches NaN)."""
    expected = view.rounded()
    actual = view.result[..., view.start:view.end]
    both_nan = np.isnan(actual.astype(np.float32)) & np.isnan(expected.astype(np.float32))
    mismatch = (bits(actual) != bits(expected)) & ~both_nan
    count = int(mismatch.sum())
    expected64 = view.neutral(expected.astype(np.float64))
    with np.errstate(invalid="ignore"):
        error = np.abs(view.actual - expected64)
    metrics = {"mismatches": count, "max_abs_err": largest(error)}
    reason = f"{count} of {plural(mismatch.size, 'element')} differ from the golden rounded to {view.dtype}"
    return Judgement(count > 0, reason, metrics, mismatch, np.where(mismatch, error + 1, 0), expected64)


STANDARD = Standard(
    name="exact", defaults={"*": {}}, judge=judge, key_metric="mismatches",
    describe=lambda m: f"{plural(m['mismatches'], 'element')} not bit-exact" if m["mismatches"] else "bit-exact",
    drift_metric="mismatches",
    help="bit-identical to the golden rounded to dy's dtype", key_margin=lambda m: None,    # a count: no ratio
    sampled=True)
