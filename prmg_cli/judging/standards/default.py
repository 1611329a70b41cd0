"""The ``default`` standard: an error budget per element.

Each output element is ``dx = c*g ± s'*g'`` (the forward: ``y = c*x ∓ s*x'``), two products that may cancel. A kernel
that computes in float32 rounds three times (both products and their sum), each time by at most ``u = 2^-24`` of the
value rounded, so before its final rounding it is within ``E = (2u + u^2)*m`` of the exact result, where
``m = |c*g| + |s'*g'|`` is the sum of the products' magnitudes -- not ``|dx|``, which cancellation can make
arbitrarily small. The final round-to-nearest to dy's dtype moves that value by at most half the dtype's spacing at
it, and it lies within ``|golden| + E`` of zero. Hence, per element::

    budget = budget_scale * (E + ulp_dy(|golden| + E) / 2) + min(4 * 2^-126, m) + 2^-147

where ``golden`` is the float64 result (products of float32/float16/bfloat16 numbers are exact in
float64, the sum is rounded once at 2^-53) and ``ulp_dy(x)`` the spacing of dy's dtype at ``x``
(``2^(floor(log2 x) - p + 1)``, never below the dtype's smallest subnormal). The bound is tight: a
conversion that truncates instead of rounding to nearest errs by up to a whole ulp and is caught. The
two last terms are for float32's subnormal range, where the relative bound ``u`` does not hold:
gradual underflow errs by at most half of 2^-149 in each of the three operations (< 2^-147
together), and a kernel that flushes subnormal inputs, products, sums or bfloat16 outputs to zero errs
by less than ``4 * 2^-126`` (for ``|c|, |s| <= 1``) and never by more than about ``m`` (a flush
replaces a value by 0, and every value involved is at most ``m``) -- so flushing is allowed, yet a
kernel that does nothing still fails on subnormal data. An element is wrong when
``|actual - golden| > budget``. A non-finite element is right only where a float32 evaluation of that
element (products then sum, or either fused multiply-add) produces it, with the same sign, NaN only where
such an evaluation gives NaN (``nonfinite.py`` states the rule and its proof).
This passes a correct float32 kernel on any data -- tiny, subnormal, huge, near the dtype's maximum,
cancelling -- by construction rather than by tuning. It still catches bugs: a wrong sign, partner,
lane, row or table entry moves an element by the order of ``m``, about 2^23 times the computational
part of the budget; computing in bfloat16 (or rounding a float32 cos/sin to a narrower dy dtype first)
errs by about ``2^-9*m`` per rounding, far over the budget wherever the two products cancel enough
that the output's ulp is small against ``m`` -- which ordinary data gives in a good share of elements,
even for a bfloat16 dy; truncating to a float16/bfloat16 dy errs by more than half an ulp in about half
of the elements. What it cannot see are errors within float32 rounding plus half an ulp of the output:
such a kernel is as good as a correct one. Metrics: ``max_err_ratio`` (largest
``|actual - golden| / budget``; a correct kernel stays below 1), ``bad`` (elements over budget),
``max_abs_err``, and three in the units a kernel developer reads (``rounding_margins``): ``max_err_ulp``,
the largest error in ulps of dy's dtype at the golden (``|actual - golden| / ulp_dy(|golden|)``: a correctly
rounded result is within 0.5 ulp), and ``beyond_rounding``, the largest share of an element's budget beyond
the output's rounding that its error beyond that rounding takes::

    beyond_rounding = max((|actual - golden| - ulp_dy(|golden|)/2)+ / max(budget - ulp_dy(|golden|)/2, 2^-147))

0 when every element is correctly rounded (a correct bfloat16 or float16 kernel, whose ``max_err_ratio`` is
near 1 all the same, as half an ulp is nearly all of its budget); above 1 exactly where an element is over
budget (for ``budget_scale >= 1``). With the error in ulps goes its bound in the same unit, ``bound_ulp``:
the budget in ulps, ``budget / ulp_dy(|golden|)``, of the element the largest error in ulps is at (the first
in C order; 0 when every error is 0). The table shows these three
(``err 0.50 ulp ≤ bound 0.51 ulp, 0% beyond rounding``; a failure as ``err 1.26e7 ulp > bound 3.65 ulp (x3.45e6)``,
with ``max_err_ratio``),
``prmg compare`` watches ``beyond_rounding`` for a precision drift, and the HTML report ranks the passing
cases closest to their limit by it.
"""

from __future__ import annotations

import numpy as np

from ... import error_balance
from ...dtypes import DTYPES, FLOAT_FORMATS, Format, rounded
from ...ops.regimes import core_counts, share_bounds, splits
from ...results import plural
from .base import (FTZ_FLOOR, U32, UNDERFLOW_FLOOR, Judgement, SliceView, Standard, largest, margin, over, short_number,
                   times, within)


def default_budget(golden_magnitude: np.ndarray, magnitude: np.ndarray, fmt: Format,
                   scale: float = 1.0) -> np.ndarray:
    """``budget = scale * (E + ulp_dy(|golden| + E) / 2) + min(4 * 2^-126, m) + 2^-147`` with
    ``E = (2u + u^2) * m``, ``u = 2^-24`` (module docstring)."""
    computation = magnitude * (2 * U32 + U32 * U32)
    budget = 0.5 * fmt.ulp(golden_magnitude + computation)
    budget += computation
    budget *= scale
    budget += np.minimum(magnitude, FTZ_FLOOR)
    budget += UNDERFLOW_FLOOR
    return budget


_EXPONENT_BITS = np.uint64(0x7FF0000000000000)      # a float64's exponent field


def _half_ulp_into(values: np.ndarray, fmt: Format, floor: bool = True) -> np.ndarray:
    """``ulp_dy(x) / 2 = 2^(max(floor(log2 x), emin) - p)`` of each ``x >= 0`` in ``values`` (float64, contiguous),
    in place: the power of two ``2^floor(log2 x)`` is ``x`` with its significand bits cleared (0 for a float64
    subnormal or zero), scaled by ``2^-p`` (exact), never below ``2^(emin - p)``, half the smallest subnormal --
    what ``Format.ulp`` gives through ``frexp``, for every finite ``x >= 0``. Without ``floor`` that last step
    is skipped (the caller knows every ``x >= 2^emin``)."""
    power = values.view(np.uint64)
    np.bitwise_and(power, _EXPONENT_BITS, out=power)                  # 2^floor(log2 x)
    np.multiply(values, 2.0 ** -fmt.precision, out=values)
    if floor:
        np.maximum(values, fmt.smallest / 2, out=values)
    return values


def rounding_margins(error: np.ndarray, golden: np.ndarray, budget: np.ndarray, fmt: Format,
                     half: np.ndarray | None = None, work: np.ndarray | None = None,
                     left_out: np.ndarray | None = None, with_place: bool = False) -> tuple:
    """``(max_err_ulp, beyond_rounding, bound_ulp)`` (module docstring) of the elements with errors ``error``
    against ``golden`` and budgets ``budget`` (float64, one shape): the largest ``error / ulp_dy(|golden|)``, the
    largest ``max(error - ulp_dy(|golden|)/2, 0) / max(budget - ulp_dy(|golden|)/2, 2^-147)``, and
    ``budget / ulp_dy(|golden|)`` at the first element of the largest error in ulps when that is above 0; 0 for
    none; ``with_place`` adds that element's flat index (0 for none). ``half`` and ``work`` (that shape,
    optional) are work space; the elements of the mask ``left_out`` count 0. The compiled pass (``native.c``)
    computes the same, operation for operation."""
    half = _half_ulp_into(np.abs(golden, out=half), fmt)
    work = np.add(half, half, out=work)                                  # ulp_dy(|golden|)
    np.divide(error, work, out=work)
    if left_out is not None:
        work[left_out] = 0.0
    in_ulps = largest(work)
    bound, worst = 0.0, 0
    if in_ulps > 0:
        worst = int(np.argmax(work))                                     # the first of the largest
        bound = float(budget.flat[worst]) / (float(half.flat[worst]) + float(half.flat[worst]))
    np.subtract(error, half, out=work)
    np.maximum(work, 0.0, out=work)                                      # the error beyond the rounding
    np.subtract(budget, half, out=half)
    np.maximum(half, UNDERFLOW_FLOOR, out=half)                          # the budget beyond it
    np.divide(work, half, out=work)
    if left_out is not None:
        work[left_out] = 0.0
    return (in_ulps, largest(work), bound, worst) if with_place else (in_ulps, largest(work), bound)


def default_budget_into(golden: np.ndarray, magnitude: np.ndarray, fmt: Format, scale: float, out: np.ndarray,
                        scratch: np.ndarray) -> np.ndarray:
    """``default_budget(|golden|, magnitude, fmt, scale)`` bit for bit, written into ``out`` (float64, the
    shape of ``golden``) with ``scratch`` (the same) as work space, for judging block by block.

    Half of ``ulp_dy(x)`` is computed as ``_half_ulp_into`` does. Two steps are skipped where they provably
    change no bit: the floor ``2^(emin - p)`` when every ``x >= 2^emin``, and the two subnormal terms when every
    ``v = scale*(E + ulp/2) >= 2^-69`` (then both terms are below half an ulp of ``v``: ``v + t = v``).
    Elements whose golden or magnitude is not finite get a meaningless budget (the judge sets such
    elements apart, as ``SliceView`` neutralises them).
    """
    np.multiply(magnitude, 2 * U32 + U32 * U32, out=scratch)          # E
    np.abs(golden, out=out)
    np.add(out, scratch, out=out)                                     # x = |golden| + E
    smallest_x = float(out.min()) if out.size else 0.0                # NaN when some x is NaN: no skips
    _half_ulp_into(out, fmt, floor=not smallest_x >= 2.0 ** fmt.min_exponent)    # ulp_dy(x) / 2
    np.add(out, scratch, out=out)
    if scale != 1.0:
        np.multiply(out, scale, out=out)
    # v >= scale * 2^floor(log2 x) * 2^-p > scale * x * 2^(-p-1)
    if not scale * smallest_x * 2.0 ** (-fmt.precision - 1) >= _NO_SUBNORMAL_TERMS:
        np.minimum(magnitude, FTZ_FLOOR, out=scratch)
        np.add(out, scratch, out=out)
        np.add(out, UNDERFLOW_FLOOR, out=out)
    return out


# From 2^-69 up, half an ulp (>= 2^-122) exceeds FTZ_FLOOR and UNDERFLOW_FLOOR: adding them changes nothing.
_NO_SUBNORMAL_TERMS = 2.0 ** -69


def balance_threshold(fmt: Format) -> float:
    """The smallest ``|golden|`` whose element error balance counts (``error_balance.py``): where
    ``ulp_dy(|golden|)`` is at least ``2^24 * 4 * 2^-126 = 2^-100``, i.e. half of it at least ``2^-101`` --
    ``|golden| >= 2^(p - 101)``, or every element when the dtype's smallest half ulp is already that large
    (float16)."""
    return 0.0 if fmt.smallest / 2 >= _BALANCE_HALF_ULP else 2.0 ** (fmt.precision - 101)


_BALANCE_HALF_ULP = 2.0 ** -101


def balance_counts(actual: np.ndarray, golden: np.ndarray, threshold: float, left_out=None) -> tuple[int, ...]:
    """(elements above the golden, below it, nearer zero than it, the other errors) among those with ``|golden| >=
    threshold`` (``balance_threshold``), the mask ``left_out`` (non-finite ones) left out: the error balance's counts
    (``error_balance.py``). The last is ``up + down - toward``: away from zero, or of the golden's magnitude with the
    other sign."""
    with np.errstate(invalid="ignore"):
        counted = np.abs(golden) >= threshold
        if left_out is not None:
            counted &= ~left_out
        up, down, toward = (int(np.count_nonzero(counted & side))
                            for side in (actual > golden, actual < golden, np.abs(actual) < np.abs(golden)))
        return up, down, toward, up + down - toward


def _trial_elements(actual: np.ndarray, golden: np.ndarray, fmt: Format) -> np.ndarray:
    """Where the error balance may count a departure (bool, the slice's shape): the result and the golden finite,
    ``|golden| >= balance_threshold(fmt)``, and the result not the golden."""
    with np.errstate(invalid="ignore"):
        return (np.abs(golden) >= balance_threshold(fmt)) & (actual != golden) & np.isfinite(actual) \
            & np.isfinite(golden)


def _nearest(values: np.ndarray, fmt: Format) -> np.ndarray:
    """``RN(values)``: ``values`` rounded to nearest (ties to even) in the dtype of ``fmt``, as float64."""
    name = next(name for name, known in FLOAT_FORMATS.items() if known == fmt)
    return rounded(values, DTYPES[name].numpy).astype(np.float64)


def distinct_balance_counts(actual: np.ndarray, golden: np.ndarray, fmt: Format) -> tuple[int, ...]:
    """(distinct ``(golden, actual)`` pairs above the golden's correct rounding ``RN(golden)`` to ``fmt``, below it,
    nearer zero than it, the others) among the finite elements ``balance_counts`` counts
    (``balance_threshold(fmt)``) whose result is not ``RN(golden)``: a computation repeated along a broadcast axis or
    over repeated inputs (the same golden, the same result) counts once, so that the sign test's trials are
    independent errors; and an error that rounding to nearest makes (the side of ``RN(golden)``, which inputs of few
    bits, such as odd integers halved, lean one way on a correct kernel) is no trial: only where the kernel departs
    from it, and a kernel rounding to nearest departs only by its own computation's noise, either way
    (``error_balance.py``)."""
    counted = _trial_elements(actual, golden, fmt)
    golden, actual = golden[counted], actual[counted]
    nearest = _nearest(golden, fmt)
    departs = actual != nearest                         # few on a correct kernel: only those are sorted
    pairs = _distinct(golden[departs] + 1j * actual[departs])
    nearest = _nearest(pairs.real, fmt)
    side = pairs.imag - nearest
    toward = np.abs(pairs.imag) < np.abs(nearest)
    up, down, toward = (int(np.count_nonzero(test)) for test in (side > 0, side < 0, toward))
    return up, down, toward, up + down - toward


def departures(actual: np.ndarray, golden: np.ndarray, fmt: Format) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where ``distinct_balance_counts``' trials lie: (``sign``, int8 in the slice's shape: +1 where the result lies
    above the golden's correct rounding ``RN(golden)``, -1 below, 0 where it is no trial; ``toward``, bool: the result
    nearer zero than ``RN(golden)``; ``binade``, int16: the golden's binade ``e``, ``2^(e-1) <= |golden| < 2^e``
    (``np.frexp``), 0 where no trial) over the elements ``distinct_balance_counts`` counts, each distinct ``(golden,
    result)`` pair at its first element (in C order) only, so that the signs sum to its counts."""
    sign, toward = np.zeros(actual.shape, np.int8), np.zeros(actual.shape, bool)
    binade = np.zeros(actual.shape, np.int16)
    counted = _trial_elements(actual, golden, fmt)
    where = np.flatnonzero(counted)
    nearest = _nearest(golden.reshape(-1)[where], fmt)
    result = actual.reshape(-1)[where]
    departs = result != nearest
    where, nearest, result = where[departs], nearest[departs], result[departs]
    order = np.argsort(golden.reshape(-1)[where] + 1j * result, kind="stable")      # repeats: the first one kept
    pairs = (golden.reshape(-1)[where] + 1j * result)[order]
    first = order[np.concatenate(([True], pairs[1:] != pairs[:-1]))] if order.size else order
    sign.reshape(-1)[where[first]] = np.sign(result[first] - nearest[first]).astype(np.int8)
    toward.reshape(-1)[where[first]] = np.abs(result[first]) < np.abs(nearest[first])
    binade.reshape(-1)[where[first]] = np.frexp(golden.reshape(-1)[where[first]])[1]
    return sign, toward, binade


def row_groups(rows: int) -> list[tuple[int, int]]:
    """The row ranges the error balance's groups hold (``group_counts``), ``(first, last)``, inclusive: each core's
    share of the rows and the rows from its first to the last row, under each core count (``regimes.core_counts``)
    and each way a kernel splits rows (``regimes.share_bounds``), the whole result left out (its own test)."""
    found = [(first, end) for cores in core_counts() for first, last in share_bounds(rows, cores)
             for end in (last, rows - 1)]
    return [group for group in dict.fromkeys(found) if group != (0, rows - 1)]


def group_counts(sign: np.ndarray, toward: np.ndarray, binade: np.ndarray | None = None
                 ) -> list[tuple[str, int, int, int, int]]:
    """``(where, up, down, toward, away)`` of the departures (``departures``: ``sign`` +1 above, -1 below, 0 no trial;
    ``toward`` nearer zero; ``binade`` the golden's) within each group of a slice's elements that
    ``error_balance.group_warning`` tests: each row range of ``row_groups`` and, when there are two rows or more, each
    lane of the slice (its last axis); with ``binade``, each binade of the golden holding trials, when they lie in
    two or more (a kernel rounding one way on the magnitudes of one binade alone, which few results reach)."""
    length = sign.shape[-1]
    sign, toward = sign.reshape(-1, length), toward.reshape(-1, length)
    trial = sign != 0
    sides = np.stack([sign > 0, sign < 0, toward & trial, trial & ~toward], -1).astype(np.int64)   # (rows, L, 4)
    found = groups_of(sides.sum(1), sides.sum(0))
    present = np.unique(binade.reshape(trial.shape)[trial]) if binade is not None else ()
    for exponent in present if len(present) > 1 else ():
        counts = sides[binade.reshape(trial.shape) == exponent].sum(0)
        found.append((f"the binade {2.0 ** (exponent - 1):g} <= |golden| < {2.0 ** exponent:g}",
                      *(int(v) for v in counts)))
    return found


def edge_rows(rows: int) -> list[tuple[str, np.ndarray]]:
    """The rows the error balance's groups hold besides ``row_groups``' ranges: ``(where, rows)``, the first rows of
    the cores' shares and their last rows, under each core count (``regimes.core_counts``) and each way a kernel
    splits rows (``regimes.splits``, its tail of one-row shares left out), each set only when it is two rows or more
    and not every row: the rows of a kernel's loop peeled for its prologue or epilogue (a float32 kernel rounding up
    on each core's first row when a core has 8 rows or more, the emulator's ``share_edge_up``, passed ``cases/`` under
    ``--strict`` before)."""
    found: dict[tuple, str] = {}
    for cores in core_counts():
        for split, bounds in splits(rows, cores).items():
            for end, which in ((0, "first"), (1, "last")) if split != "tail" else ():   # tail: one row a share
                picked = tuple(bound[end] for bound in bounds)
                if 1 < len(picked) < rows:
                    found.setdefault(picked, f"the {which} row of each core's share ({cores} cores, {split} split)")
    return [(where, np.array(picked)) for picked, where in found.items()]


def groups_of(rows: np.ndarray, lanes: np.ndarray) -> list[tuple[str, int, int, int, int]]:
    """``group_counts`` from the counts ``(up, down, toward, away)`` of each row (``rows``, shape (rows, 4)) and of each
    lane (``lanes``, (L, 4)): each row range of ``row_groups`` summed, each row set of ``edge_rows``, and each lane
    when there are two rows or more."""
    total = np.concatenate((np.zeros((1, 4), np.int64), np.cumsum(rows, 0)))
    found = [(f"rows {first} to {last}", *(int(v) for v in total[last + 1] - total[first]))
             for first, last in row_groups(len(rows))]
    found += [(where, *(int(v) for v in rows[picked].sum(0))) for where, picked in edge_rows(len(rows))]
    return found + [(f"lane {lane} of the slice", *(int(v) for v in counts))
                    for lane, counts in enumerate(lanes[:len(lanes) if len(rows) > 1 else 0])]


def departure_sides(actual: np.ndarray, golden: np.ndarray, fmt: Format) -> tuple[np.ndarray, np.ndarray]:
    """(per row, per lane) of the slice: ``(up, down, toward)`` of every departure from the golden's correct rounding
    ``RN(golden)`` among the elements ``distinct_balance_counts`` counts, a repeated ``(golden, result)`` pair each
    time (int64, shapes (rows, 3) and (L, 3)): the screen of the error balance's groups on a result too large to
    recount (``error_balance.RECOUNTED``): where some group of these counts leans, the judge tests the groups of its
    ``departures``. The compiled pass counts the same (``native.c``'s ``prmg_judge_extras``)."""
    length = actual.shape[-1]
    actual, golden = actual.reshape(-1, length), golden.reshape(-1, length)
    counted = _trial_elements(actual, golden, fmt)
    nearest = _nearest(np.where(counted, golden, 0.0), fmt)
    sides = np.stack([counted & (actual > nearest), counted & (actual < nearest),          # (a result at RN(golden):
                      counted & (np.abs(actual) < np.abs(nearest))], -1)                  # no side, no departure)
    return sides.sum(1, dtype=np.int64), sides.sum(0, dtype=np.int64)


def screen_groups(sides: tuple[np.ndarray, np.ndarray]) -> list[tuple[str, int, int, int, int]]:
    """``groups_of`` of ``departure_sides`` (its ``away``: up + down - toward)."""
    rows, lanes = (np.concatenate((counts, (counts[:, 0] + counts[:, 1] - counts[:, 2])[:, None]), 1)
                   for counts in sides)
    return groups_of(rows, lanes)


def _distinct(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` of a 1-D array: its distinct values (``-0.0`` and ``0.0`` alike), sorted, found by a sort
    and a comparison of neighbours, without the import of numpy.ma that numpy 2.4's np.unique makes (10 ms in every
    worker)."""
    values = np.sort(values)
    return values[np.concatenate(([True], values[1:] != values[:-1]))] if values.size else values


def judge(view: SliceView) -> Judgement:
    """The ``default`` standard: an element is wrong when ``|actual - golden| > budget`` (``default_budget``); the error
    balance's counts (``balance_counts``) come with the metrics."""
    budget = default_budget(np.abs(view.golden), view.magnitude(), view.format,
                            view.params["budget_scale"])
    error = np.abs(view.actual - view.golden)
    ratio = error / budget
    bad = error > budget
    count = int(bad.sum())
    in_ulps, beyond, bound = rounding_margins(error, view.golden, budget, view.format)
    counts = balance_counts(view.actual, view.golden, balance_threshold(view.format))
    metrics = {"max_err_ratio": largest(ratio), "bad": count, "max_abs_err": largest(error), "max_err_ulp": in_ulps,
               "bound_ulp": bound, "beyond_rounding": beyond, **dict(zip(error_balance.METRICS, counts))}
    reason = f"{count} of {plural(bad.size, 'element')} over budget: {describe(metrics)}"
    return Judgement(count > 0, reason, metrics, bad, ratio, view.golden, budget, "budget")


def _ulps(value: float | None) -> str:
    """A count of ulps for the table: two decimals below 10, whole ulps below 10^6, 3 significant digits above
    (``1.26e7``); ``inf`` for None."""
    return ("inf" if value is None else f"{value:.2f}" if value < 10 else f"{value:.0f}" if value < 1e6
            else short_number(f"{value:.3g}"))


# The bound in ulps of the golden at and above which the golden is within its own budget of 0 for every dtype
# (``budget >= 2^24 ulp_dy(|golden|) >= |golden|``, float32's 24-bit significand the widest): an ulp of such a
# golden is no unit (a golden of 0 made ``err 1.11e40 ulp > bound 1.34e33 ulp``), so the text gives the ratio alone.
NEAR_ZERO_BOUND_ULP = 2.0 ** 24


def describe(metrics: dict) -> str:
    """The table's text of a verdict: the largest error in ulps of dy's dtype against its bound in ulps there
    (``_ulps``). Within the bound, how much of the budget beyond the output's rounding is used
    (``beyond_rounding`` in percent): ``err 0.50 ulp ≤ bound 0.51 ulp, 0% beyond rounding`` for a correctly
    rounded result. Over it, how far, ``max_err_ratio``, the largest error/budget of any element:
    ``err 1.26e7 ulp > bound 3.65 ulp (x3.45e6)``; when the largest error in ulps is within its bound (another
    element is over its own), ``err > bound (x2.1), largest err 41 ulp (bound 97 there)``. A result recorded
    before the bound in ulps existed shows ``err 0.50 ulp, ...``; one recorded before the ulp metrics
    ``err ≤ budget (x0.41)``. Where the largest error in ulps is at a golden within its own budget of 0 (its bound
    at least ``NEAR_ZERO_BOUND_ULP``: cancellation, or a golden of exactly 0), the ulps are left out:
    ``err > bound (x8.38e6), largest err at golden ≈ 0`` (the failure line's worst element gives the values).
    No element off the golden (a bound of 0 ulp: it is taken at the largest error, and there is none) is
    ``err 0 ulp, exact`` (a vacuous case, whose golden is its input, showed the raw ``max_err_ratio=0 bad=0``);
    nothing (``""``) when the slice's wrong non-finite elements are all it has to say (``non_finite``, which the
    key metric puts first: every element of the slice non-finite and wrong left no finite error to show)."""
    ratio = metrics["max_err_ratio"]
    if "beyond_rounding" not in metrics:
        return within("err", ratio, "budget")[0]
    error, bound, known = metrics["max_err_ulp"], metrics.get("bound_ulp"), "bound_ulp" in metrics
    if known and bound == 0 and not metrics.get("bad"):
        return "" if metrics.get("non_finite") else "err 0 ulp, exact"
    near_zero = ", largest err at golden ≈ 0" if bound is not None and bound >= NEAR_ZERO_BOUND_ULP else ""
    if ratio is not None and ratio <= 1:
        beyond = metrics["beyond_rounding"]
        share = short_number(margin(None if beyond is None else 100 * beyond, 100))
        if near_zero:
            return f"{within('err', ratio, 'bound')[0]}, {share}% beyond rounding{near_zero}"
        return f"err {_ulps(error)} ulp{f' ≤ bound {_ulps(bound)} ulp' * known}, {share}% beyond rounding"
    if near_zero:
        return f"{within('err', ratio, 'bound')[0]}{near_zero}"
    if known and (error is None or (bound is not None and error > bound)):
        return f"err {_ulps(error)} ulp > bound {_ulps(bound)} ulp ({times(ratio)})"
    return f"err > bound ({times(ratio)}), largest err {_ulps(error)} ulp{f' (bound {_ulps(bound)} there)' * known}"


STANDARD = Standard(
    name="default", defaults={"*": {"budget_scale": 1.0}}, judge=judge, key_metric="max_err_ratio",
    describe=describe, drift_metric="beyond_rounding",
    help="per-element error budget derived from float32 rounding; never fails a kernel that computes in fp32 "
         "and rounds once (budget_scale multiplies every budget)",
    key_margin=lambda m: over(m, "max_err_ratio"))
