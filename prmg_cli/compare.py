"""Judging an outcome: precision standards, exactness checks and failure diagnosis."""

from __future__ import annotations

from dataclasses import dataclass, field

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
