"""The ``determinism`` check. ``--repeat K`` launches (default 2) of the same inputs give bit-identical outputs and
the same status; a kernel that differs by one ulp between launches fails even where each launch is
within tolerance. It says nothing about correctness (a kernel that does nothing is deterministic), so it is
not an *oracle*: a ``golden: false`` case needs a check anchored to the formula (``ANCHORED``), or
``correctness_unchecked``.
"""

from __future__ import annotations

import numpy as np

from ...dtypes import bits
from ...results import plural
from .base import Check, CheckContext, CheckOption, CheckResult

MAX_REPEAT = 1000          # launches of one case: a bound, so that no --repeat spins for hours


def _describe(metrics: dict) -> str:
    """``repeats bit-identical``, ``repeats differ in 12 elements``, or (None) ``a repeat returned another status``."""
    count = metrics["determinism_mismatches"]
    return ("a repeat returned another status" if count is None else
            f"repeats differ in {plural(count, 'element')}" if count else "repeats bit-identical")


def determinism(context: CheckContext) -> CheckResult:
    """The determinism check (module docstring): ``repeat`` launches, bit-identical outputs."""
    first = context.outcome
    reference_bits = bits(first.dy).reshape(-1)
    mismatches, launches = 0, context.option(CHECK, "repeat")
    worst_index = None
    for _ in range(launches - 1):
        again = context.launch(context.case, context.inputs)
        if again.status != first.status or again.dy is None:
            return CheckResult("determinism", False, {"determinism_mismatches": None},
                               f"determinism: a repeated launch returned status {again.status}, the first "
                               f"{first.status}")
        differ = np.flatnonzero(bits(again.dy).reshape(-1) != reference_bits)
        if differ.size > mismatches:
            mismatches, worst_index = int(differ.size), int(differ[0])
    result = CheckResult("determinism", metrics={"determinism_mismatches": mismatches})
    if mismatches:
        index = tuple(int(i) for i in np.unravel_index(worst_index, first.dy.shape))
        result.passed = False
        result.message = (f"determinism: {launches} launches of the same inputs differ in "
                          f"{plural(mismatches, 'element')} "
                          f"(first at {index})")
    return result


CHECK = Check("determinism", "repeated launches give bit-identical outputs (not an oracle: says nothing of "
              "correctness)", determinism, "determinism_mismatches",
              _describe, lambda m: None, oracle=False,
              applies=lambda context: "", first=True,
              options={"repeat": CheckOption(2, 2, MAX_REPEAT, "K", f"Launches of the determinism check, 2 to "
                                                                   f"{MAX_REPEAT}.")})
