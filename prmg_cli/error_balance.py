"""Error balance: a result whose errors lean one way beyond chance is biased, though each element is within budget.

No Ascend acceptance standard has this rule (msprobe computes an error balance without gating on it). A kernel that
rounds to nearest errs above and below the exact value alike: a float32 grad rounding every element toward +inf
errs by less than an ulp, inside the ``default`` budget, but always upward. So the ``default`` standard counts, over
the elements of a result's slice that are finite in the result and the golden, those above the golden (``up``) and
below it (``down``; equal ones count neither) -- only where the output's ulp at the golden is at least ``2^24``
times the flush-to-zero term of the budget (``4 * 2^-126``, ``standards.default.balance_threshold``), so that a
kernel flushing subnormals, which the budget allows, cannot lean the count -- and records them as the metrics
``balance_up`` and ``balance_down`` (the compiled one-pass judge counts exactly the same elements).

**The rule: a sign test.** With no bias each counted error is up or down with chance 1/2 (a kernel rounding to
nearest), so ``up`` is binomial(n, 1/2), n = up + down, and by Hoeffding's inequality a split at least as one-sided
as the one seen has a chance of at most ``p = 2 * exp(-(up - down)^2 / (2n))``. A result with ``p < FALSE_ALARM``
(1e-6 per case) is biased: a warning with the measured bias ``(up - down) / n`` (+1: every error up), which
``--strict`` fails. A case of fewer than ``ALONE`` counted errors cannot reach that rate alone (even all one way:
``2 * exp(-n/2) >= 1e-6`` for n < 30); such cases of a run are pooled per operator and dy dtype (``pooled``), each
pool tested at the same rate: a run-level warning, which ``--strict`` fails too.

**Repeated computations count once.** The rule's chance holds for independent errors, and an element computed again
(a table broadcast along B or N over rows of equal dy, a constant dy) errs again the same way: a correct kernel on
dy of ones with a ``111D`` table repeats each row's 64 errors in every row, and its raw counts lean far beyond
chance. So where the raw counts decide (they lean beyond chance, or are too few to stand alone and pool), the judge
counts each distinct ``(golden, result)`` pair once (``DISTINCT``, ``standards.default.distinct_balance_counts``)
and the rule reads those counts: a kernel rounding every error up leans in the distinct pairs too, a correct one no
longer does. (A large result whose raw counts do not lean is not recounted: the rule cannot warn of it, so its
false-alarm rate is still at most the distinct counts'.)

**The trials are departures from the correct rounding.** Rounding to nearest errs up or down by chance only on
inputs of many bits: on inputs of few (odd integers times 1/2 and 1/4, as a hand-written test has them) the side of
the golden's correct rounding ``RN(golden)`` follows the inputs' pattern, and a correct float16 kernel leaned 203 to
72, a warning ``--strict`` failed. So the recount takes a side relative to ``RN(golden)``, not the golden, and counts
only the pairs whose result is not ``RN(golden)``: a kernel rounding to nearest departs from it only by its own
computation's noise (float32 products; a half-precision result near a tie), either way, while one rounding toward
+inf departs upward wherever ``RN`` rounds down, about half of its errors. The price: a case has about half as many
trials (``round_up`` red on 139 cases of ``cases/``, 150 before; a constant dy's 20 departures pool). And the raw
counts are no screen for departures (a cast rounding ties away from zero turned a correct float16 kernel's 0 up, 275
down into 98 up, 177 down, within chance, its 98 departures all up): a result of up to ``RECOUNTED`` slice
elements is always recounted, a larger one where its raw counts lean.

**What it cannot see:** a bias of a few errors in a case (under ``ALONE``), one that only a few cases of a run share
with many unbiased ones, or one hidden where the budget is mostly the computation's (float32 cancellation) and the
errors' signs are those of the products' roundings; results judged by the other standards are not counted.
"""

from __future__ import annotations

import math
from typing import Sequence

FALSE_ALARM = 1e-6          # the chance of a warning on an unbiased result, per case (and per pool)
METRICS = ("balance_up", "balance_down")                      # every counted error
DISTINCT = ("balance_distinct_up", "balance_distinct_down")    # each distinct (golden, result) pair once
KEYS = METRICS + DISTINCT
# Results of up to this many slice elements are recounted whatever their raw counts: those are no screen for the
# departures from the correct rounding (module docstring); beyond it the raw counts screen, for speed.
RECOUNTED = 2 ** 16
# The fewest counted errors whose split can be biased at FALSE_ALARM: 2 * exp(-n / 2) < FALSE_ALARM.
ALONE = math.floor(2 * math.log(2 / FALSE_ALARM)) + 1


def chance(up: int, down: int) -> float:
    """Hoeffding's bound on the chance of a split of ``up`` and ``down`` errors at least this one-sided with no bias:
    ``2 * exp(-(up - down)^2 / (2n))`` (1 for n = 0, never above 1)."""
    count = up + down
    return min(1.0, 2 * math.exp(-(up - down) ** 2 / (2 * count))) if count else 1.0


def _counts(metrics: dict, keys: tuple[str, str] | None = None) -> tuple[int, int] | None:
    """The counts the rule reads: the distinct pairs' when the judge recounted them (``DISTINCT``), else ``METRICS``;
    None when they are not two counts."""
    keys = keys or (DISTINCT if DISTINCT[0] in metrics else METRICS)
    up, down = (metrics.get(key) for key in keys)
    valid = all(isinstance(value, int) and not isinstance(value, bool) and value >= 0 for value in (up, down))
    return (up, down) if valid else None


def _text(up: int, down: int, where: str = "") -> str:
    count = up + down
    exponent = (math.log(2) - (up - down) ** 2 / (2 * count)) / math.log(10)       # log10 of chance(up, down)
    odds = f"{chance(up, down):.1e}" if exponent > -300 else f"1e{math.ceil(exponent)}"
    return (f"biased{where}: {up} of {count} errors above the golden, {down} below (bias {(up - down) / count:+.2f}); "
            f"rounding to nearest splits them evenly, and a split this one-sided has a chance <= {odds} (sign test, "
            f"limit {FALSE_ALARM:g})")


def needs_distinct(metrics: dict, elements: int) -> bool:
    """Whether the judge recounts the distinct pairs (``DISTINCT``) of a result of ``elements`` slice elements: always
    up to ``RECOUNTED`` of them, else where the raw counts (``METRICS``) decide: they lean beyond chance, or are too
    few to stand alone (the run pools them)."""
    counts = _counts(metrics, METRICS)
    return counts is not None and sum(counts) > 0 and (
        elements <= RECOUNTED or sum(counts) < ALONE or chance(*counts) < FALSE_ALARM)


def case_warning(metrics: dict) -> str:
    """The warning of a result whose counted errors (``DISTINCT`` when recounted, else ``METRICS``) lean one way
    beyond chance, else ""."""
    counts = _counts(metrics)
    if counts is None or sum(counts) < ALONE or chance(*counts) >= FALSE_ALARM:
        return ""
    return _text(*counts)


def pooled(results: Sequence) -> list[str]:
    """The run's warnings for the passed results too small to be tested alone (fewer than ``ALONE`` counted errors),
    pooled per operator and dy dtype, each pool whose summed counts lean one way beyond chance (``case_warning``'s
    rule), in order of first appearance."""
    pools: dict[tuple, list[int]] = {}
    for result in results:
        counts = _counts(result.metrics) if result.status == "passed" else None
        if counts is not None and sum(counts) < ALONE:
            pool = pools.setdefault((result.op, result.dtype), [0, 0, 0])
            pool[0], pool[1], pool[2] = pool[0] + counts[0], pool[1] + counts[1], pool[2] + 1
    return [_text(up, down, f" (pooled over the {cases} small {op} {dtype} cases)")
            for (op, dtype), (up, down, cases) in pools.items()
            if cases > 1 and up + down >= ALONE and chance(up, down) < FALSE_ALARM]
