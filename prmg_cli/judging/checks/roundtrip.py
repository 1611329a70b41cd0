"""The ``roundtrip`` check. With a RoPE table (each pair's partners share one angle, ``c^2 + s^2 = 1`` up to the
table's rounding) the grad undoes the forward: ``z = B(F x)`` returns ``x``. With ``y = F x + e1``
(``|e1| <= bF``) and ``z = B y + e2`` (``|e2| <= bB`` of y's magnitudes), per element
``|z - x| <= |(B F x) - x| + |c|*bF[kept] + |s|*bF[partner] + bB``, where ``(B F x) - x`` (the tables'
rounding) is evaluated in float64 with a relative slack of ``2^-50``. The case's tables are used when they
are RoPE tables, else RoPE tables (base 10000) of the same shape and dtype.
"""

from __future__ import annotations

import numpy as np

from ...case import Case
from ...dtypes import rounded
from ...inputs.seeded import Inputs, rope_angles
from ...results import plural
from ..standards import over, within
from .base import Check, CheckContext, CheckResult, as_operator, element_bound, forward_and_backward, launched, probe


def _rope_inputs(case: Case, inputs: Inputs) -> Inputs:
    """``inputs`` with RoPE cos/sin tables: the case's own when they are RoPE tables, else base 10000."""
    if case.cos_input.kind == "rope" and case.sin_input.kind == "rope":
        return inputs
    angles = rope_angles(tuple(case.cos_shape), case.rotary_mode, 10000.0)
    dtype = inputs.cos.dtype
    return Inputs(inputs.dy, rounded(np.cos(angles), dtype), rounded(np.sin(angles), dtype))


def roundtrip(context: CheckContext) -> CheckResult:
    """The roundtrip check (module docstring): the grad of the forward of ``x`` returns ``x``."""
    case = context.case
    start, end = case.partial_slice
    piece = (start, end)
    forward_op, backward_op = forward_and_backward(case.op)
    tables = _rope_inputs(case, context.inputs)
    x = probe(case, "dy", context.inputs.dy.shape, context.inputs.dy.dtype, 2)
    forward_case, forward_inputs = as_operator(case, tables, forward_op, x)
    forward, why = launched(context, forward_case, forward_inputs, "roundtrip")
    if forward is None:
        return CheckResult("roundtrip", **why)
    grad_case, grad_inputs = as_operator(case, tables, backward_op, forward.dy)
    back, why = launched(context, grad_case, grad_inputs, "roundtrip")
    if back is None:
        return CheckResult("roundtrip", **why)
    kept, partner, sign, cos_lane, sin_lane = backward_op.lane_terms(case.rotary_mode, end - start)
    with np.errstate(all="ignore"):
        exact_y = forward_op.golden_slice(x, forward_inputs.cos, forward_inputs.sin, case.rotary_mode, piece)
        y_full = x.astype(np.float64)
        y_full[..., start:end] = exact_y
        identity = backward_op.golden_slice(y_full, grad_inputs.cos, grad_inputs.sin, case.rotary_mode, piece)
        x_slice = x[..., start:end].astype(np.float64)
        defect = np.abs(identity - x_slice) + 2.0 ** -50 * np.abs(x_slice)
        bound_forward = element_bound(forward_op, x, forward_inputs.cos, forward_inputs.sin, case.rotary_mode, piece)
        bound_grad = element_bound(backward_op, forward.dy, grad_inputs.cos, grad_inputs.sin, case.rotary_mode, piece)
        cos = np.abs(np.broadcast_to(grad_inputs.cos.astype(np.float64), exact_y.shape))
        sin = np.abs(np.broadcast_to(grad_inputs.sin.astype(np.float64), exact_y.shape))
        bound = defect + cos[..., cos_lane] * bound_forward[..., kept] \
            + sin[..., sin_lane] * bound_forward[..., partner] + bound_grad
        error = np.abs(back.dy[..., start:end].astype(np.float64) - x_slice)
        ratio = np.where(np.isfinite(error), error / bound, np.inf)
    value = float(ratio.max()) if ratio.size else 0.0
    result = CheckResult("roundtrip", metrics={"roundtrip_ratio": value if np.isfinite(value) else None})
    bad = np.flatnonzero(~(ratio <= 1))
    if bad.size:
        worst = int(np.argmax(ratio))
        b, s, n, lane = (int(i) for i in np.unravel_index(worst, ratio.shape))
        result.passed = False
        result.message = (f"roundtrip: grad(forward(x)) is off x beyond float32 rounding at {bad.size} of "
                          f"{plural(ratio.size, 'element')} (worst {value:.3g} x its bound, at (b, s, n, d)="
                          f"({b}, {s}, {n}, "
                          f"{start + lane}))")
    return result


CHECK = Check("roundtrip", "with a RoPE table, grad(forward(x)) returns x within float32 rounding (not anchored to "
              "the formula: a grad and a forward wrong the same way undo each other)", roundtrip,
              "roundtrip_ratio", lambda m: within("roundtrip err", m["roundtrip_ratio"], "bound")[0],
              lambda m: over(m, "roundtrip_ratio"))
