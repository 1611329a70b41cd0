"""InplacePartialRotaryMul, the forward: its entry points, constraints and golden (operator.md, "The
sibling forward op", checked against upstream's ``posembedding/inplace_partial_rotary_mul``).

In place on the slice ``[start, end)`` of xRef's last axis: ``x = x*cos + rotate(x)*sin``, per pair
``(i, j)`` of the mode ``y_i = c_i*x_i - s_i*x_j``, ``y_j = c_j*x_j + s_j*x_i`` (``reference``).

Constraints, in checking order (its aclnn layer is hand-written, so mode, slice and shape errors are
161002 from the first phase, not the grad's tiling 561002):

1. xRef, cos or sin is a null pointer -> 161001 ACLNN_ERR_PARAM_NULLPTR
2. -> 161002 ACLNN_ERR_PARAM_INVALID: xRef's dtype outside {float32, float16, bfloat16}; cos's dtype
   neither xRef's nor float32; sin's dtype != cos's; a format other than ND
3. -> 161002: rotary_mode not implemented (today: interleave only; any value outside 0..3 always); a
   tensor not 4-D; cos shape != sin shape; a dim <= 0; D > 1024; D odd; start < 0, end > D, start >
   end; L != cos's last axis; L odd (quarter: not a multiple of 4); a cos/sin layout other than BSND,
   B1ND, B11D, 111D (on 950; B and N each 1 or xRef's, S equal to xRef's unless B and N are 1)
4. a non-contiguous xRef -> refused at the launch with 561000 ACLNN_ERR_INNER, like the grad

``start == end`` is a no-op (success, nothing changes).
"""

from __future__ import annotations

from .. import reference
from ..dtypes import OPERATOR_DTYPES
from ..status import PARAM_INVALID
from ..vocab import BROADCASTS, broadcast_pattern, broadcast_shape
from .grad import MAX_D, contiguity_rules, mode_rules, pointer_and_type_rules, shape_rules
from .spec import OperatorSpec, Violation

LAYOUTS = ("BSND", "B1ND", "B11D", "111D")
DTYPE_PAIRS = tuple((x, table) for x in OPERATOR_DTYPES for table in dict.fromkeys((x, "float32")))


def rules(case, supported_modes) -> list[Violation]:
    """Every constraint ``case`` breaks, in the forward's checking order (module docstring)."""
    found = [violation for violation in pointer_and_type_rules(case) if violation.field != "format"]
    if case.dtype in OPERATOR_DTYPES and case.cos_dtype in OPERATOR_DTYPES and case.cos_dtype not in (case.dtype, "float32"):
        found.append(Violation(PARAM_INVALID, f"cos dtype {case.cos_dtype} is neither x's ({case.dtype}) nor float32",
                               "cos_dtype"))
    if case.format != "ND":
        found.append(Violation(PARAM_INVALID, f"format {case.format} is not ND", "format"))
    found += mode_rules(case, supported_modes, PARAM_INVALID)
    found += shape_rules(case, PARAM_INVALID)
    depth = case.shape[-1] if case.shape else 0
    if 0 < depth <= MAX_D and depth % 2:
        found.append(Violation(PARAM_INVALID, f"D = {depth} is odd", "shape"))
    if len(case.shape) == 4 and len(case.cos_shape) == 4 and case.cos_shape[-1] >= 1:
        pattern = broadcast_pattern(case.shape, case.cos_shape)
        allowed = {broadcast_shape(layout, case.shape, case.cos_shape[-1]) for layout in LAYOUTS}
        if pattern in BROADCASTS and tuple(case.cos_shape) not in allowed:
            found.append(Violation(PARAM_INVALID, f"cos/sin layout {pattern} is not one of {', '.join(LAYOUTS)} "
                                   f"(the forward on 950)", "cos_shape"))
    return found + contiguity_rules(case)


FORWARD = OperatorSpec(
    name="forward", title="InplacePartialRotaryMul",
    get_workspace="aclnnInplacePartialRotaryMulGetWorkspaceSize", launch="aclnnInplacePartialRotaryMul",
    inplace="xRef", rules=rules, golden=reference.inplace_partial_rotary_mul,
    golden_slice=reference.rotary_forward_slice, magnitude=reference.rotary_forward_magnitude,
    lane_terms=reference.forward_lane_terms, dtype_pairs=DTYPE_PAIRS, layouts=LAYOUTS)
