"""The classic double threshold (``double_thousandth``): an element is wrong when ``|a - e| > atol + rel*|e|``;
the case fails when more than ``share`` of the elements are wrong, or (``cap > 0``) any relative error exceeds ``cap``.
The upstream TTK thresholds keep ``atol``, TTK's additive absolute floor. ``e`` is the golden rounded to dy's dtype,
as TTK's ``close`` compares (it promotes no golden: ``needs_promote_golden``).
"""

from __future__ import annotations

import numpy as np

from ...results import plural
from .base import Judgement, SliceView, Standard, against, joined, largest, margin, number, over


def _describe(m: dict) -> str:
    """``wrong 0.04% ≤ 0.1%, max rel err 0.05 ≤ 0.1``: the share of wrong elements against ``share`` (in percent),
    the largest relative error against ``cap`` (without a cap: its value alone), the one over its limit first, with
    how far (``against``)."""
    share = against("wrong", 100 * number(m, "rel_err_share"), 100 * number(m, "share_limit"), "%")
    if not m.get("cap"):
        return joined(share, (f"max rel err {margin(m['max_rel_err'])}", False))
    return joined(share, against("max rel err", m["max_rel_err"], number(m, "cap")))


def _margin(m: dict) -> float:
    """The worse of ``rel_err_share / share_limit`` and (with a cap) ``max_rel_err / cap``."""
    parts = [over(m, "rel_err_share", number(m, "share_limit"))]
    if m.get("cap"):
        parts.append(over(m, "max_rel_err", number(m, "cap")))
    return max(parts)

def judge(view: SliceView) -> Judgement:
    """``double_thousandth``: an element is wrong when ``(|a - e| - atol) / |e| > rel``; the case fails when more
    than ``share`` of the elements are wrong or (``cap > 0``) the largest relative error exceeds ``cap``."""
    p = view.params
    expected = view.nearest()
    # An element is wrong when |a - e| > atol + rel*|e| (the absolute floor adds, as in TTK's
    # absolute_precision); its relative error is what remains after the floor, over |e|.
    excess = np.abs(view.actual - expected) - p["atol"]
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.where(excess > 0, excess / np.abs(expected), 0.0)
    relative[np.isnan(relative)] = np.inf                  # a finite result where e rounds to an infinity
    wrong = relative > p["rel"]
    share = float(wrong.mean()) if wrong.size else 0.0
    max_relative = largest(relative)
    over_cap = p["cap"] > 0 and max_relative > p["cap"]
    reason = (f"{int(wrong.sum())} of {plural(wrong.size, 'element')} ({share:.3g}) have relative error "
              f"over {p['rel']:g}")
    if share <= p["share"]:
        reason = f"max relative error {max_relative:.3g} over the cap {p['cap']:g}"
    metrics = {"rel_err_share": share, "share_limit": p["share"], "max_rel_err": max_relative, "cap": p["cap"]}
    return Judgement(share > p["share"] or over_cap, reason, metrics, wrong, relative, expected)


STANDARD = Standard(
    name="double_thousandth", defaults={
        "float16": {"rel": 1e-3, "share": 1e-3, "cap": 0.1, "atol": 0.0},
        "bfloat16": {"rel": 4e-3, "share": 4e-3, "cap": 0.1, "atol": 0.0},
        "float32": {"rel": 1e-4, "share": 1e-4, "cap": 0.01, "atol": 0.0},
    }, judge=judge, key_metric="rel_err_share", fractions=("share",),
    describe=_describe, drift_metric="rel_err_share",
    help="CANN's classic UT/ST double threshold: wrong when |a-e| > atol + rel*|e|; fails when the share of wrong "
         "elements exceeds share, or any relative error exceeds cap (0: no cap)",
    key_margin=_margin)