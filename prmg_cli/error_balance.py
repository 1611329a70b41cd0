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

**Two sign tests.** The counts are taken twice: above and below the golden, and toward zero (``|result| <
|golden|``: ``toward``) and the rest (``away``: away from zero, or the golden's magnitude with the other sign).
Rounding toward zero errs below a positive golden and above a negative one, so on data of both signs its ``up`` and
``down`` split evenly, and only the second pair leans (the emulator's ``round_zero``, one lane in four rounded toward
zero in float32, passed every float32 case of ``cases/`` under ``--strict`` with the first test alone). Each pair is
held to the rule above at ``FALSE_ALARM``: an unbiased result gets a warning from either with a chance of at most
``2 * FALSE_ALARM`` (union bound), per case and per pool.

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
72, a warning ``--strict`` failed. So the recount takes a side (and a magnitude) relative to ``RN(golden)``, not the
golden, and counts
only the pairs whose result is not ``RN(golden)``: a kernel rounding to nearest departs from it only by its own
computation's noise (float32 products; a half-precision result near a tie), either way, while one rounding toward
+inf departs upward wherever ``RN`` rounds down, about half of its errors. The price: a case has about half as many
trials (``round_up`` red on 141 cases of ``cases/``, 150 before; a constant dy's 20 departures pool). And the raw
counts are no screen for departures (a cast rounding ties away from zero turned a correct float16 kernel's 0 up, 275
down into 98 up, 177 down, within chance, its 98 departures all up): a result of up to ``RECOUNTED`` slice
elements is always recounted, a larger one where its raw counts lean.

**Groups of rows, lanes and binades.** A kernel biased on a few of its rows (its last core's loop, its last UB pass),
lanes (a tail tile) or magnitudes (one binade) leans the whole result by too little to tell when those are few. So a
result that does not lean as a whole is held to the same two tests within each group of its elements
(``group_warning``), a recounted one (up to ``RECOUNTED`` slice elements) always, a larger one where the groups of its
departures counted with their repeats (``standards.default.departure_sides``, per row and lane, which the compiled pass
counts as it recounts) lean: a screen, so that only such a result pays for its distinct departures (a float32 kernel
rounding up the last core's tail rows of a result past ``RECOUNTED``, the emulator's ``tail_rows_up``, passed ``cases/``
under ``--strict`` before the groups went past it). The groups: each core's share of the rows, and the rows from its
first to the last, under each core count and each split ``sample`` takes (``standards.default.row_groups``), the
first rows of those shares and their last rows (``edge_rows``: a loop's peeled prologue or epilogue), each lane,
and each binade of the golden holding departures (``2^(e-1) <= |golden| < 2^e``) when they lie in two or more (the
emulator's ``binade_thin_up``, rounding up where ``4 <= |value| < 8``, passed ``cases/`` under ``--strict`` before);
each group at ``FALSE_ALARM / G`` for ``G`` groups, so that a correct kernel's false alarm over all of them is at most
``2 * FALSE_ALARM`` more (a group then needs some 38 to 44 departures one way, where the whole result needs 30). A
float32 kernel rounding toward +inf on the last eighth of the rows of the seeded ``default`` cases of ``cases/`` was
seen on 13% of those tested alone by the whole-result tests, and on 39% with the groups; on its last core's share (a
40th of the rows), 8% and 20%.

**What it cannot see:** errors whose signs and magnitudes both split evenly (rounded up on half of the data, down on
the other half), a bias of a few errors in a case (under ``ALONE``), one that only a few cases of a run share
with many unbiased ones, or one hidden where the budget is mostly the computation's (float32 cancellation) and the
errors' signs are those of the products' roundings, a bias confined to too few of a group's elements, or, past
``RECOUNTED`` elements, to a group whose departures counted with their repeats do not lean (the screen, which counts
rows and lanes: a binade's bias there is tested only where a row or lane group leans too); results judged by the
other standards are not counted.
"""

from __future__ import annotations

import math
from typing import Sequence

FALSE_ALARM = 1e-6          # the chance of a warning from one of the two tests on an unbiased result, per case (pool)
# The two tests, each of a pair of counts: errors above and below the golden, and errors toward zero and away from it
SIGNED, MAGNITUDE = ("up", "down"), ("toward", "away")
METRICS = tuple(f"balance_{side}" for side in SIGNED + MAGNITUDE)                 # every counted error
DISTINCT = tuple(f"balance_distinct_{side}" for side in SIGNED + MAGNITUDE)       # each distinct pair once
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


def _counts(metrics: dict, keys: tuple[str, ...] | None = None) -> list[tuple[int, int] | None]:
    """The two pairs of counts the rule reads, (up, down) and (toward, away): the distinct pairs' when the judge
    recounted them (``DISTINCT``), else ``METRICS``; a pair is None when it is not two counts (a record written before
    the magnitude test has no ``toward`` and ``away``)."""
    keys = keys or (DISTINCT if DISTINCT[0] in metrics else METRICS)
    pairs = []
    for first in (0, 2):
        pair = tuple(metrics.get(key) for key in keys[first:first + 2])
        valid = all(isinstance(value, int) and not isinstance(value, bool) and value >= 0 for value in pair)
        pairs.append(pair if valid else None)
    return pairs


def _text(pair: tuple[int, int], magnitude: bool, where: str = "", limit: float = FALSE_ALARM) -> str:
    first, second = pair
    count = first + second
    exponent = (math.log(2) - (first - second) ** 2 / (2 * count)) / math.log(10)     # log10 of chance(*pair)
    odds = f"{chance(first, second):.1e}" if exponent > -300 else f"1e{math.ceil(exponent)}"
    sides = ("toward zero", "away from zero") if magnitude else ("above the golden", "below")
    return (f"biased{where}: {first} of {count} errors {sides[0]}, {second} {sides[1]} (bias "
            f"{(first - second) / count:+.2f}); rounding to nearest splits them evenly, and a split this one-sided "
            f"has a chance <= {odds} (sign test, limit {limit:.2g})")


def _leaning(pairs: list[tuple[int, int] | None]) -> list[int]:
    """The indices (0 signed, 1 magnitude) of the pairs that lean one way beyond chance."""
    return [i for i, pair in enumerate(pairs) if pair is not None and chance(*pair) < FALSE_ALARM]


def needs_distinct(metrics: dict, elements: int) -> bool:
    """Whether the judge recounts the distinct pairs (``DISTINCT``) of a result of ``elements`` slice elements: always
    up to ``RECOUNTED`` of them, else where the raw counts (``METRICS``) decide: either pair leans beyond chance, or
    they are too few to stand alone (the run pools them)."""
    pairs = _counts(metrics, METRICS)
    return pairs[0] is not None and sum(pairs[0]) > 0 and (
        elements <= RECOUNTED or sum(pairs[0]) < ALONE or bool(_leaning(pairs)))


def case_warning(metrics: dict) -> str:
    """The warning of a result whose counted errors (``DISTINCT`` when recounted, else ``METRICS``) lean one way beyond
    chance, above or below the golden, or toward or away from zero; else "" (the signed test's text first)."""
    pairs = _counts(metrics)
    if pairs[0] is None or sum(pairs[0]) < ALONE:
        return ""
    leaning = _leaning(pairs)
    return _text(pairs[leaning[0]], leaning[0] == 1) if leaning else ""


def pooled(results: Sequence) -> list[str]:
    """The run's warnings for the passed results too small to be tested alone (fewer than ``ALONE`` counted errors),
    pooled per operator and dy dtype, each pool whose summed counts lean one way beyond chance (``case_warning``'s
    rule), in order of first appearance."""
    pools: dict[tuple, list[int]] = {}
    for result in results:
        pairs = _counts(result.metrics) if result.status == "passed" else [None, None]
        if pairs[0] is not None and sum(pairs[0]) < ALONE:
            pool = pools.setdefault((result.op, result.dtype), [0, 0, 0, 0, 0])
            for i, count in enumerate(pairs[0] + (pairs[1] or (0, 0))):
                pool[i] += count
            pool[4] += 1
    found = []
    for (op, dtype), (*counts, cases) in pools.items():
        pairs = [tuple(counts[:2]), tuple(counts[2:])]
        leaning = _leaning(pairs) if cases > 1 and sum(pairs[0]) >= ALONE else []
        if leaning:
            where = f" (pooled over the {cases} small {op} {dtype} cases)"
            found.append(_text(pairs[leaning[0]], leaning[0] == 1, where))
    return found


def group_floor(groups: int) -> float:
    """The fewest errors one way that a group can lean beyond chance among ``groups`` tested at ``FALSE_ALARM /
    groups`` each: ``2 * exp(-n / 2) < FALSE_ALARM / groups`` (``group_warning``)."""
    return 2 * math.log(2 * groups / FALSE_ALARM)


def group_warning(groups: Sequence[tuple[str, int, int, int, int]]) -> str:
    """The warning of a result whose departures lean one way beyond chance within one of its ``groups`` (``(where,
    up, down, toward, away)``, ``standards.default.group_counts``: each core's share of the rows, each tail of rows
    from a share's start, each lane), "" when none does. A kernel biased on some of its rows alone (a tail core's loop,
    the last UB pass) or some lanes (a tail tile) leans the whole result by too little when those are few: so the same
    two sign tests are held to each group, each at ``FALSE_ALARM / G`` for ``G`` groups, so that an unbiased result is
    warned by some group with a chance of at most ``2 * FALSE_ALARM`` (union bound)."""
    if not groups:
        return ""
    limit, floor = FALSE_ALARM / len(groups), group_floor(len(groups))
    for pair in (0, 1):
        for where, *counts in groups:
            one, other = counts[2 * pair], counts[2 * pair + 1]
            if max(one, other) >= floor and chance(one, other) < limit:
                return _text((one, other), pair == 1, f" in {where}", limit)
    return ""
