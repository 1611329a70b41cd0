"""The ``adjoint`` check. The grad is the exact transpose of the forward on every (b, s, n) row of the slice, so with
``y = F x`` (the forward on a probe ``x``) and ``dx = B dy`` (the grad on ``dy``), both from the device,
``S1 = <y, dy>`` and ``S2 = <x, dx>`` over a row are equal up to the devices' errors and float64
summation: ``|S1 - S2| <= sum_j bF_j*|dy_j| + sum_j |x_j|*bB_j + g_(L+1)*(sum_j |y_j*dy_j| + sum_j |x_j*dx_j|)``,
``g_n = n*2^-53 / (1 - n*2^-53)`` (products of two float32/16 numbers are exact in float64; only the sums
round). Each row is judged by its own bound (metric: the largest ``|S1 - S2| / bound``). The forward on
950 takes fewer cos/sin layouts and dtypes than the grad, so for it cos/sin are expanded to BSND and
converted exactly to float32 where needed (the same numbers, so the same operator).
"""

from __future__ import annotations

import numpy as np

from ...dtypes import FLOAT_FORMATS, from_numpy
from ...ops import OPERATORS
from ...results import plural
from ..standards import over, within
from .base import (U64, Check, CheckContext, CheckResult, as_operator, element_bound, forward_and_backward, launched,
                   no_op, probe, rows)


def adjoint(context: CheckContext) -> CheckResult:
    """The adjoint check (module docstring): ``<F x, dy>`` against ``<x, B dy>`` row by row."""
    case, inputs = context.case, context.inputs
    start, end = case.partial_slice
    forward, backward = forward_and_backward(case.op)
    other = forward if case.op == backward.name else backward
    probed = probe(case, "dy", inputs.dy.shape, inputs.dy.dtype, 1)
    other_case, other_inputs = as_operator(case, inputs, other, probed)
    outcome, why = launched(context, other_case, other_inputs, "adjoint")
    if outcome is None:
        return CheckResult("adjoint", **why)
    if other is forward:             # main: dx = B dy; probe x through the forward: y = F x
        x, y, x_inputs = probed, outcome.dy, other_inputs
        dy, dx, dy_inputs = inputs.dy, context.outcome.dy, inputs
    else:                            # main: y = F x; probe dy through its transpose: dx = B dy
        x, y, x_inputs = inputs.dy, context.outcome.dy, inputs
        dy, dx, dy_inputs = probed, outcome.dy, other_inputs
    piece = (start, end)
    bound_forward = element_bound(forward, x, x_inputs.cos, x_inputs.sin, case.rotary_mode, piece)
    bound_grad = element_bound(backward, dy, dy_inputs.cos, dy_inputs.sin, case.rotary_mode, piece)
    x, y, dy, dx = (rows(a[..., start:end]) for a in (x, y, dy, dx))
    bound_forward, bound_grad = rows(bound_forward), rows(bound_grad)
    with np.errstate(all="ignore"):
        left, right = (y * dy).sum(axis=1), (x * dx).sum(axis=1)
        terms = np.abs(y * dy).sum(axis=1) + np.abs(x * dx).sum(axis=1)
        gamma = (end - start + 1) * U64 / (1 - (end - start + 1) * U64)
        bound = (bound_forward * np.abs(dy)).sum(axis=1) + (np.abs(x) * bound_grad).sum(axis=1) + gamma * terms
        ratio = np.abs(left - right) / bound
    ratio = np.where(np.isfinite(left) & np.isfinite(right), ratio, np.inf)
    worst = int(np.argmax(ratio)) if ratio.size else 0
    value = float(ratio[worst]) if ratio.size else 0.0
    result = CheckResult("adjoint", metrics={"adjoint_ratio": value if np.isfinite(value) else None})
    bad = np.flatnonzero(~(ratio <= 1))
    if bad.size:
        index = tuple(int(i) for i in np.unravel_index(worst, case.shape[:3]))
        result.passed, result.rows = False, bad
        result.message = (f"adjoint: <F x, dy> and <x, B dy> differ beyond float32 rounding in {bad.size} of "
                          f"{plural(ratio.size, 'row')} (worst {value:.3g} x its bound, row (b, s, n)={index})")
        result.details = [f"adjoint: row {index}: <F x, dy> = {left[worst]:.9g}, <x, B dy> = {right[worst]:.9g}, "
                          f"bound {bound[worst]:.3g}"]
    return result


def _adjoint_applies(context: CheckContext) -> str:
    """Why the adjoint identity is not defined for the case: an empty slice, inputs that are not all finite, or
    results that may overflow the dtype (the inner products would not be numbers), else ""."""
    case, inputs = context.case, context.inputs
    empty = no_op(case)
    if empty:
        return empty
    start, end = case.partial_slice
    x = inputs.dy[..., start:end]
    with np.errstate(all="ignore"):
        if not (np.isfinite(x).all() and np.isfinite(inputs.cos).all() and np.isfinite(inputs.sin).all()):
            return "the inputs hold NaN or infinities, so <F x, dy> is not a number"
        overflow = FLOAT_FORMATS[from_numpy(x.dtype).name].overflow
        magnitude = OPERATORS[case.op].magnitude(inputs.dy, inputs.cos, inputs.sin, case.rotary_mode, (start, end))
        tables = np.abs(inputs.cos.astype(np.float64)) + np.abs(inputs.sin.astype(np.float64))
        if magnitude.max(initial=0.0) >= overflow or tables.max(initial=0.0) >= overflow:
            return "results may overflow the dtype, so <F x, dy> is not a number"
    return ""


CHECK = Check("adjoint", "forward and grad on the device agree: <F x, dy> = <x, B dy> within float32 rounding (not "
              "anchored to the formula: a grad and a forward wrong the same way agree)",
              adjoint, "adjoint_ratio", lambda m: within("adjoint err", m["adjoint_ratio"], "bound")[0],
              lambda m: over(m, "adjoint_ratio"), applies=_adjoint_applies)
