"""The ``sample`` check. The host reference on up to ``SAMPLE_ROWS`` (b, s, n) rows of the result (``sampled_rows``: the
first, the last, the rows on either side of 2^16 and seeded draws), judged by the ``default`` standard exactly
as the golden judges the whole tensor. It costs a few rows of golden whatever the shape, and unlike adjoint
and roundtrip it does not accept a grad and a forward that are wrong in the same way (both negating sin).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..case import CONTIGUOUS_STORAGE
from ..inputs import Inputs
from ..standards import over, within
from .base import Check, CheckContext, CheckResult

SAMPLE_ROWS = 64
U16_WRAP = 1 << 16          # a 16-bit row counter wraps here


def sampledrows(rows: int, seed: int, count: int = SAMPLE_ROWS) -> np.ndarray:
    """Up to ``count`` distinct row indices of ``rows`` rows, sorted: the first, the last, the rows on either side
    of 2^16 (where a 16-bit row counter wraps), and the rest drawn without repeats with ``seed``."""
    if rows <= count:
        return np.arange(rows)
    chosen = {0, rows - 1, rows // 2} | {row for row in (U16_WRAP - 1, U16_WRAP) if row < rows}
    generator = np.random.Generator(np.random.PCG64(seed))
    while len(chosen) < count:
        chosen.update(int(row) for row in generator.integers(0, rows, count - len(chosen)))
    return np.array(sorted(chosen)[:count])


def sample(context: CheckContext) -> CheckResult:
    """The sample check (module docstring): the ``default`` standard on sampled rows of the result."""
    from ..judge import judge_result

    case, inputs, result = context.case, context.inputs, context.outcome.dy
    depth, length = case.shape[-1], case.cos_shape[-1]
    rows = sampledrows(int(np.prod(case.shape[:3])), case.seed ^ 0x5A4D)
    index = np.unravel_index(rows, case.shape[:3])
    tables = np.ravel_multi_index(tuple(np.where(np.array(case.cos_shape[:3])[:, None] == 1, 0, index)),
                                  case.cos_shape[:3])
    picked = (len(rows), 1, 1)
    sub_case = dataclasses.replace(case, shape=picked + (depth,), cos_shape=picked + (length,),
                                   sin_shape=picked + (length,), **CONTIGUOUS_STORAGE, checks=(), golden=True,
                                   known_defect=None, correctness_unchecked=None)
    sub_inputs = Inputs(*(array.reshape(-1, array.shape[-1])[which].reshape(picked + (array.shape[-1],))
                          for array, which in ((inputs.dy, rows), (inputs.cos, tables), (inputs.sin, tables))))
    verdict = judge_result(sub_case, sub_inputs, result.reshape(-1, depth)[rows].reshape(picked + (depth,)))
    ratio = verdict.metrics.get("max_err_ratio")
    checked = CheckResult("sample", metrics={"sample_ratio": ratio, "sample_rows": len(rows)})
    if verdict.status != "passed":
        score = verdict.arrays.get("score")
        wrong = rows[np.flatnonzero((score > 1).reshape(len(rows), -1).any(axis=1))] if score is not None else rows[:0]
        where = ", ".join(str(tuple(int(i) for i in np.unravel_index(row, case.shape[:3]))) for row in wrong[:3])
        checked.passed = False
        checked.message = (f"sample: the host reference disagrees on {len(wrong) or 'some'} of {len(rows)} sampled "
                           f"rows" + (f" ((b, s, n) = {where}{', ...' if len(wrong) > 3 else ''})" if where else "")
                           + f": {verdict.message}")
    return checked


CHECK = Check("sample", f"the host reference on up to {SAMPLE_ROWS} sampled rows, by the default standard", sample,
              "sample_ratio", lambda m: within("sample err", m["sample_ratio"], "bound")[0],
              lambda m: over(m, "sample_ratio"))
