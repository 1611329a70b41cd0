"""The ``determinism`` check. ``--repeat K`` launches (default 2) of the same inputs give bit-identical outputs and
the same status; a kernel that differs by one ulp between launches fails even where each launch is
within tolerance. Then the reuse: one launch of other tables of the same shapes (sin negated), and one more of the
same inputs on the workspace as that launch left it (not poisoned: a caching allocator hands the same block back
with what it held), bit-identical to the first too -- a kernel keeping state in its workspace from one launch to the
next (tables staged there and taken again when their sizes match: the emulator's ``workspace_table_cache``) is right
on every poisoned workspace and wrong on reuse. It says nothing about correctness (a kernel that does nothing is
deterministic), so it is not an *oracle*: a ``golden: false`` case needs a check anchored to the formula
(``ANCHORED``), or ``correctness_unchecked``.
"""

from __future__ import annotations

import dataclasses

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
    what = f"{launches} launches of the same inputs differ"
    if not mismatches:
        context.launch(context.case, dataclasses.replace(context.inputs, sin=-context.inputs.sin))
        again = context.launch(context.case, context.inputs, kept_workspace=True)
        if again.status != first.status or again.dy is None:
            return CheckResult("determinism", False, {"determinism_mismatches": None},
                               f"determinism: a launch on the workspace another launch left returned status "
                               f"{again.status}, the first {first.status}")
        differ = np.flatnonzero(bits(again.dy).reshape(-1) != reference_bits)
        mismatches, worst_index = int(differ.size), int(differ[0]) if differ.size else None
        what = "a launch on the workspace another launch left (other tables) differs from the first"
    result = CheckResult("determinism", metrics={"determinism_mismatches": mismatches})
    if mismatches:
        index = tuple(int(i) for i in np.unravel_index(worst_index, first.dy.shape))
        result.passed = False
        result.message = f"determinism: {what} in {plural(mismatches, 'element')} (first at {index})"
    return result


CHECK = Check("determinism", "repeated launches, and one on the workspace another launch left, give "
              "bit-identical outputs (not an oracle: says nothing of correctness)", determinism,
              "determinism_mismatches",
              _describe, lambda m: None, oracle=False,
              applies=lambda context: "", first=True,
              options={"repeat": CheckOption(2, 2, MAX_REPEAT, "K", f"Launches of the determinism check, 2 to "
                                                                   f"{MAX_REPEAT} (then one on a reused "
                                                                   f"workspace).")})
