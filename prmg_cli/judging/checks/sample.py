"""The ``sample`` check: the host reference on sampled (b, s, n) rows of the result, judged by the ``default`` standard
exactly as the golden judges the whole tensor, and by the case's own standard too when that one judges each element
alone and passes only what ``default`` passes (``Standard.sampled``: ``exact``, whose cases pin the cast's tie rule).
It is the check anchored to the formula: unlike adjoint and roundtrip it does not accept a grad and a forward that are
wrong in the same way (both negating sin).

**Which rows** (``sampled_rows``). Up to ``n = min(R, max(SAMPLE_ROWS, SAMPLE_ELEMENTS // L))`` of the ``R = B*S*N``
rows (a slice of ``L`` lanes): every row when they fit (``SAMPLE_ELEMENTS`` lanes, about as many as a 4 MiB float32
tensor: a few tens of milliseconds of host reference), else first the rows of every class the kernel tiles by
(``class_rows``: first the rows it always takes, ``first_rows``: the first, middle and last row; the rows on either
side of 2^8, 2^12 and 2^16, where 8-, 12- and 16-bit counters wrap; for each core count rows are split over, the
emulator's and the 950's of upstream's tiling test (``regimes.core_counts``), the first and last row of each core's
share under each way a kernel splits them (``tiling_rows``: floor, ceil as upstream's 950 tilings, one more on the
first cores; of rows, (b, s) units and b units; upstream's B x S grid, its B x N and B x S*N grids of the BNSD and
1SND layouts, and its split of the heads), and every row of the tail past the last full floor share; then the rows on
either side of each core's first and last seam between two UB passes (``ub_seams``); one row for each index along each
axis of B, S, N that cos/sin do not broadcast; then every other seam's rows), at most three quarters of ``n`` but
never fewer than the first rows (``n`` then grows to keep a quarter for draws), then ``m`` seeded draws among the
``R'`` rows left.

**What it can miss.** Every wrong row of a class above is seen. Of ``k`` wrong rows placed at random among the
``R'`` others, the check sees at least one with probability ``1 - C(R' - m, k) / C(R', k)`` (at least
``1 - (1 - m/R')^k``); the metric ``sample_detect`` is that probability for ``k = 1`` (1.0 when every row is sampled).

**Error balance.** The sampled rows' ``default`` judgement counts its errors above and below the golden like the
golden's (``error_balance.py``): a passing sample whose errors lean one way beyond chance, as a whole or within a
group of its rows or lanes, is a warning, said when no golden judges the case (``--no-golden``, ``golden: false``),
which ``--strict`` fails; a kernel rounding toward +inf is then not green without the golden either. Its counts are
not pooled over the run's small cases.
"""

from __future__ import annotations

import math
import re

import numpy as np

from ... import dtypes
from ...case import Case
from ...inputs.seeded import Inputs
from ...ops.regimes import COUNTER_BITS, core_counts, share_bounds, ub_pass_rows
from ..judge import judge_result, rows_case
from ..standards import STANDARDS, over, within
from .base import Check, CheckContext, CheckResult

SAMPLE_ROWS = 64                # the fewest rows sampled (when the case has them)
SAMPLE_ELEMENTS = 1 << 20       # the slice lanes sampled at most, beyond the class rows' three quarters


def ub_seams(case: Case, rows: int) -> list[list[int]]:
    """For each core of each core count (``regimes.core_counts``), the last core of each count first: the rows on
    either side of each seam between two UB passes of its share of ``rows`` (``regimes.ub_pass_rows`` rows a pass),
    in order, ``[last row of pass 1, first row of pass 2, ...]``; empty for a share that one pass holds."""
    per_pass = ub_pass_rows(case.cos_shape[-1], dtypes.lookup(case.dtype).numpy.itemsize,
                            dtypes.lookup(case.cos_dtype).numpy.itemsize)
    found = []
    for cores in core_counts():
        share = rows // cores
        starts = np.arange(per_pass, share, per_pass)
        found += [[int(row) for start in core * share + starts for row in (start - 1, start)]
                  for core in range(cores - 1, -1, -1)] if len(starts) else []
    return found


def _ceil(count: int, parts: int) -> int:
    return -(-count // max(parts, 1))


def grid_blocks(outer: int, inner: int, cores: int) -> list[tuple[int, int, int, int]]:
    """(first outer, last outer, first inner, last inner) of each core's block of an ``outer`` x ``inner`` grid, split
    each of the two ways upstream's 950 grid tilings try (``ceil`` each): ``outer`` first over the cores, ``inner``
    over the cores left per outer block, or ``inner`` first (the grad's BAB and ABA/BA ``SplitCore``; their shortcut
    for a count divisible by the cores is the same split)."""
    blocks_outer = _ceil(outer, _ceil(outer, cores))
    blocks_inner = _ceil(inner, _ceil(inner, cores))
    found = []
    for factor_outer, factor_inner in ((_ceil(outer, cores), _ceil(inner, min(cores // blocks_outer, inner))),
                                       (_ceil(outer, min(cores // blocks_inner, outer)), _ceil(inner, cores))):
        found += [(o0, min(o0 + factor_outer, outer) - 1, i0, min(i0 + factor_inner, inner) - 1)
                  for o0 in range(0, outer, factor_outer) for i0 in range(0, inner, factor_inner)]
    return found


def tiling_rows(case: Case) -> list[int]:
    """The first and last row of each core's share, for each core count (``regimes.core_counts``) and each way a kernel
    splits a count over its cores (``share_bounds``): of rows, of (b, s) units of N rows and of b units of S*N rows
    (upstream's AB tiling of the SBND layout, cos [B, S, 1, D] or [B, 1, 1, D], whose unit is a b of all its rows
    when cos's S is 1), the N rows of each unit when the units are at most half the cores (AB then splits them too,
    ``ceil`` over ``cores // units`` cores), and the four corners of each core's block of upstream's grids
    (``grid_blocks``): BAB's B x S grid (all N of a block), and where the grad's ``JudgeLayoutByShape`` takes the BNSD
    layout (cos [1 or B, 1, N, D]: its ABA/BA tilings read dy as [b, s, n] blocks over B and N, all S in a block) the
    B x N grid, and for cos [1, S, N, D] (its 1SND: S and N folded into one axis) the B x S*N grid; the emulator's own
    split first."""
    batch, positions, heads = (int(v) for v in case.shape[:3])
    rows = batch * positions * heads
    cos_b, cos_s, cos_n = (int(v) for v in case.cos_shape[:3])
    grids = [(positions, lambda b, s, last: (b * positions + s) * heads + (heads - 1 if last else 0))]
    if cos_s == 1 and cos_n == heads and cos_b in (1, batch):                 # BNSD: B x N blocks, all S inside
        grids.append((heads, lambda b, n, last: (b * positions + (positions - 1 if last else 0)) * heads + n))
    if cos_b == 1 and cos_s == positions and cos_n == heads:                   # 1SND: B x (S*N) blocks
        grids.append((positions * heads, lambda b, f, last: b * positions * heads + f))
    found = []
    for cores in core_counts():
        for unit in (1, heads, positions * heads):                  # rows, (b, s) units, b units
            count = rows // unit
            found += [row for first, last in share_bounds(count, cores)
                      for row in (first * unit, (last + 1) * unit - 1)]
            if unit > 1 and count <= cores // 2:                     # AB splits each unit's rows over cores too
                factor = _ceil(unit, cores // count)
                found += [start + row for start in range(0, rows, unit) for first in range(0, unit, factor)
                          for row in (first, min(first + factor, unit) - 1)]
        for inner, at in grids:
            found += [at(b, i, last) for b0, b1, i0, i1 in grid_blocks(batch, inner, cores)
                      for b, i, last in ((b0, i0, False), (b0, i1, True), (b1, i0, False), (b1, i1, True))]
    return found


def first_rows(case: Case) -> list[int]:
    """The rows ``sample`` always takes, whatever its budget: the first, last and middle row, the rows either side of
    each counter wrap (``regimes.COUNTER_BITS``: rows 2^w - 1 and 2^w) and each core's first and last row
    (``tiling_rows``)."""
    rows = math.prod(case.shape[:3])
    wraps = [row for bits in COUNTER_BITS for row in ((1 << bits) - 1, 1 << bits) if row < rows]
    return [0, rows - 1, rows // 2] + wraps + tiling_rows(case)


def class_rows(case: Case, limit: int, first: list[int] | None = None) -> np.ndarray:
    """The rows of every class the kernel tiles by (module docstring), in order of priority, without repeats, starting
    with ``first`` (``first_rows``, computed when not given); along a table axis longer than ``limit``, ``limit``
    indices spread evenly over it."""
    batch, positions, heads = (int(v) for v in case.shape[:3])
    rows = batch * positions * heads
    found = list(first_rows(case) if first is None else first)
    seams = ub_seams(case, rows)
    found += [row for core in seams for row in (*core[:2], *core[-2:])]     # each core's first and last seam
    for axis, size in enumerate((batch, positions, heads)):
        if size > 1 and case.cos_shape[axis] > 1:                      # a table axis: each index once
            index = np.unique(np.linspace(0, size - 1, min(size, limit)).astype(np.int64))
            coordinates = [index * 7919 % extent if other != axis else index
                           for other, extent in enumerate((batch, positions, heads))]
            found += list(np.ravel_multi_index(coordinates, (batch, positions, heads)))
    found += [row for core in seams for row in core]                   # then every seam
    return np.array(list(dict.fromkeys(int(row) for row in found)), dtype=np.int64)


def sampled_rows(case: Case, seed: int) -> tuple[np.ndarray, float]:
    """(the sampled row indices, sorted; the probability that one wrong row placed at random outside the class rows
    is among them) of ``case`` (module docstring)."""
    rows = math.prod(case.shape[:3])
    count = min(rows, max(SAMPLE_ROWS, SAMPLE_ELEMENTS // max(case.cos_shape[-1], 1)))
    if count >= rows:
        return np.arange(rows), 1.0
    first = first_rows(case)
    chosen = class_rows(case, count, first)
    chosen = chosen[:max(len(set(first)), count - count // 4)]     # every first row, past the budget too
    count = max(count, len(chosen) + count // 4)
    if count >= rows:
        return np.arange(rows), 1.0
    left, draws = rows - len(chosen), count - len(chosen)
    generator = np.random.Generator(np.random.PCG64(seed))
    if 4 * count >= rows:                                   # dense: draw from the rows left
        drawn = generator.choice(np.setdiff1d(np.arange(rows), chosen), draws, replace=False)
        return np.sort(np.concatenate([chosen, drawn])), draws / left
    taken = set(chosen.tolist())
    while len(taken) < count:
        taken.update(int(row) for row in generator.integers(0, rows, count - len(taken)))
    return np.array(sorted(taken)), draws / left


def sample(context: CheckContext) -> CheckResult:
    """The sample check (module docstring): the ``default`` standard on sampled rows of the result, then the case's
    own when it is ``Standard.sampled`` (``exact``: no ratio to a budget beyond it, None when it fails)."""
    case, inputs, result = context.case, context.inputs, context.outcome.dy
    depth = case.shape[-1]
    rows, detect = sampled_rows(case, case.seed ^ 0x5A4D)
    sub_case, sub_inputs = rows_case(case, inputs, rows)
    sub_result = result.reshape(-1, depth)[rows].reshape(sub_case.shape)
    verdict = judge_result(sub_case, sub_inputs, sub_result)
    ratio = verdict.metrics.get("max_err_ratio")
    if verdict.status == "passed" and case.standard and STANDARDS[case.standard].sampled:
        verdict = judge_result(sub_case, sub_inputs, sub_result, case.standard)
        ratio = ratio if verdict.status == "passed" else None
    checked = CheckResult("sample", metrics={"sample_ratio": ratio, "sample_rows": len(rows),
                                             "sample_detect": detect})
    biased = next((in_case_group(text, rows) for text in verdict.warnings if text.startswith("biased")), "")
    if verdict.status == "passed" and biased:
        checked.warnings.append(f"sample: {biased}")
    if verdict.status != "passed":
        score = verdict.arrays.get("score")
        wrong = rows[np.flatnonzero((score > 1).reshape(len(rows), -1).any(axis=1))] if score is not None else rows[:0]
        where = ", ".join(str(tuple(int(i) for i in np.unravel_index(row, case.shape[:3]))) for row in wrong[:3])
        checked.passed = False
        checked.message = (f"sample: the host reference disagrees on {len(wrong) or 'some'} of {len(rows)} sampled "
                           f"rows" + (f" ((b, s, n) = {where}{', ...' if len(wrong) > 3 else ''})" if where else "")
                           + f": {in_case_rows(verdict.message, rows, case.shape[:3])}")
    return checked


def in_case_group(warning: str, rows: np.ndarray) -> str:
    """The sampled rows' error-balance ``warning`` (``error_balance.case_warning``'s, or a group's: ``biased in rows
    A to B``, rows of the sampled layout) said of the case: ``biased in the sampled rows from rows[A] to rows[B]``
    when some rows were left out (a group of the first or last rows of shares: of the sampled rows' own shares), else
    as it is."""
    if len(rows) and rows[-1] == len(rows) - 1:                  # every row sampled: the layout's rows are the case's
        return warning
    warning = re.sub(r"^biased in the (first|last) row of each core's share", r"biased in the \1 row of each core's "
                     r"share of the sampled rows", warning)
    return re.sub(r"^biased in rows (\d+) to (\d+)", lambda match: f"biased in the sampled rows from "
                  f"{rows[int(match[1])]} to {rows[int(match[2])]}", warning)


def in_case_rows(message: str, rows: np.ndarray, shape: tuple[int, ...]) -> str:
    """The sampled rows' verdict ``message`` said of the case: each coordinate ``(i, 0, 0`` of the sampled rows'
    layout (``rows_case``: ``(len(rows), 1, 1, D)``) as row ``rows[i]``'s ``(b, s, n`` in ``shape``, and the notes
    on rows left out (which rows of the layout are wrong, listed before the message with the case's own)."""
    def real(match: re.Match) -> str:
        return "(" + ", ".join(str(int(i)) for i in np.unravel_index(rows[int(match.group(1))], shape))

    kept = [part for part in message.split("; ") if " row" not in part or part.startswith("worst at ")]
    return re.sub(r"\((\d+), 0, 0(?=[,)])", real, "; ".join(kept))


# Without the golden (``--no-golden``, ``golden: false``) a kernel that does nothing, with a forward that does
# nothing, passes adjoint, roundtrip and determinism (identity is deterministic, self-adjoint and its own inverse),
# and one that nudges a single element passes them as well. A correct kernel may also leave a slice unchanged
# (cos = 1 and sin tiny against the data), so this is a warning, not a failure.
UNCHANGED_WARNING = ("unchanged: the slice came back bit for bit as it went in; without the golden the checks "
                     "cannot tell this from a kernel that does nothing (judge with the golden, or --strict)")


def unchanged_warning(case: Case, inputs: Inputs, result: np.ndarray) -> str:
    """Without the golden: the warning for a slice the kernel left (nearly) as it was, else "". A kernel changes the
    slice when it changes at least as many of its elements as the formula moves beyond their ``default`` budget in
    the sampled rows alone (``sampled_rows``: there the unchanged input is judged by the host reference, as
    ``sample`` judges the result) -- every one of those a correct kernel must change, so it never gets the warning
    unless it changed nothing at all (``UNCHANGED_WARNING``)."""
    from ...dtypes import bits

    start, end = (int(v) for v in case.partial_slice)
    changed = int(np.count_nonzero(bits(result[..., start:end]) != bits(inputs.dy[..., start:end])))
    if not changed:
        return UNCHANGED_WARNING
    rows, _ = sampled_rows(case, case.seed ^ 0x5A4D)
    sub_case, sub_inputs = rows_case(case, inputs, rows)
    unmoved = judge_result(sub_case, sub_inputs, sub_inputs.dy).metrics
    must = (unmoved.get("bad") or 0) + (unmoved.get("non_finite") or 0)
    if changed >= must:
        return ""
    return (f"unchanged: the kernel changed {changed} of {(end - start) * math.prod(case.shape[:3])} elements of the "
            f"slice, fewer than the {must} the formula moves beyond their budget in the {len(rows)} sampled rows "
            f"alone; without the golden the checks cannot tell this from a kernel that does (nearly) nothing (judge "
            f"with the golden, or --strict)")


CHECK = Check("sample", "the host reference on sampled rows (every row class the kernel tiles by, then seeded "
              "draws), by the default standard (and an exact case's own)", sample, "sample_ratio",
              lambda m: within("sample err", m["sample_ratio"], "bound")[0], lambda m: over(m, "sample_ratio"),
              anchored=True)
