"""InplacePartialRotaryMulGrad: its entry points, constraints and golden (ops-transformer's
``posembedding/inplace_partial_rotary_mul_grad/docs/aclnnInplacePartialRotaryMulGrad.md``).

Constraints, in the order the real stack checks them (the generated aclnn layer, nnopbase, then the 950
tiling ``op_host/inplace_partial_rotary_mul_grad_tiling_base_arch35.cpp``: ``CheckAttr``, ``CheckShape``,
``CheckShapeAllPositive``, ``JudgeLayoutByShape``); the first broken rule gives a case's status:

1. dy, cos or sin is a null pointer -> 161001 ACLNN_ERR_PARAM_NULLPTR
2. a dtype outside {float32, float16, bfloat16}; sin dtype != cos dtype; a format other than ND,
   NCHW, NHWC -> 161002 ACLNN_ERR_PARAM_INVALID
3. dy has no elements (a dim of 0): nnopbase skips the tiling and the kernel; success (0-byte workspace),
   whatever else the case breaks.
4. -> 561002 ACLNN_ERR_INNER_TILING_ERROR (tiling), in this order:
   a. rotary_mode, read as int32 (the tiling reads the int64 attribute's low 32 bits: 2**32 + 1 is read
      as 1), outside 0..3 or not implemented by the target;
   b. start < 0, start > end, end > D (checked even for an empty slice);
   c. then the slice is empty (L = 0) or cos or sin has no elements: a no-op, which skips d and f;
   d. L != cos D; D > 1024; L odd (modes 0, 1, 3) or not a multiple of 4 (mode 2);
   e. a tensor not 4-D; cos shape != sin shape; cos D > dy D (checked for a no-op too);
   f. a dim <= 0; a cos B, S or N that is neither 1 nor dy's.
5. a non-contiguous tensor -> ``...GetWorkspaceSize`` succeeds and the **launch** returns 561000
   ACLNN_ERR_INNER: the op declares neither AutoContiguous nor IgnoreContiguous, so nnopbase refuses
   the recorded non-contiguous input before the kernel runs (dy untouched).

Here ``D`` is dy's axis 3 (the tiling's ``GetDim(3)``: dy's last axis when dy is 4-D; a dy of fewer axes
has none, so every slice is out of range), ``[start, end)`` the partial slice and ``L = end - start``.
Strides are contiguous when every axis of length > 1 has the C-order stride (axes of length 1 may have
any, and an empty tensor any strides), as CANN's ``op::IsContiguous`` decides.
"""

from __future__ import annotations

import itertools

from ..case import Case
from ..dtypes import OPERATOR_DTYPES
from ..reference import PairBlock, Rotation
from ..status import (GE_DATATYPE_INVALID, GE_FAILED, GE_FORMAT_INVALID, GE_PARAM_INVALID, INNER, PARAM_INVALID,
                      PARAM_NULLPTR, TILING_ERROR)
from ..vocab import BROADCASTS, HALF, INTERLEAVE, INTERLEAVE_HALF, MODE_NAMES, QUARTER, mode_label, mode_list
from .spec import GraphIR, GraphRefusal, OperatorSpec, Violation

SUPPORTED_FORMATS = ("ND", "NCHW", "NHWC")
MAX_D = 1024


# Every rule ``rules`` may break, in the stack's checking order, and why the stack refuses a case breaking it.
RULE_REASONS = {
    "null pointer": "a null tensor: 161001 before anything else is read",
    "dtype": "a dtype the op definition lacks: nnopbase's 161002",
    "sin dtype != cos dtype": "sin's dtype differs from cos's: 161002",
    "format": "a format outside the ND class: 161002",
    "mode not 0..3": "rotary_mode, read as int32, outside 0..3: the tiling refuses it",
    "mode not implemented": "a valid mode the kernel lacks (interleave only today): the tiling refuses it",
    "start < 0": "a negative start: the tiling's slice range, checked even for an empty slice",
    "start > end": "a start after the end: the slice range",
    "end > D": "an end past D (or a dy with no axis 3): the slice range",
    "L != cos D": "a slice length other than cos's last axis",
    "D > 1024": "D past the tiling's limit",
    "L odd": "an odd slice length in a pair mode",
    "L not a multiple of 4": "quarter: a slice length not a multiple of 4",
    "not 4-D": "a tensor of another rank (checked for a no-op call too)",
    "cos shape != sin shape": "cos and sin of different shapes (checked for a no-op call too)",
    "cos D > D": "cos's last axis longer than dy's (checked for a no-op call too)",
    "dim <= 0": "a dimension <= 0 (CheckShapeAllPositive)",
    "cos B, S or N": "a cos/sin axis neither 1 nor dy's: no layout template (JudgeLayoutByShape)",
    "dy not contiguous": "a non-contiguous dy: nnopbase refuses it at the launch (561000), dy untouched",
}


# Graph mode (runners/emulator/README.md, "Graph mode"): every refusal comes when the graph compiles -- GE's check of
# its links (a required input left unlinked: prmg's null tensor), the op proto and kernel selection (dtypes,
# formats), then the static shape's tiling (every other rule); a strided dy has no graph form (GE's tensors are dense).
GRAPH_REFUSALS = {
    "null pointer": GraphRefusal("compile", GE_PARAM_INVALID),
    "dtype": GraphRefusal("compile", GE_DATATYPE_INVALID),
    "sin dtype != cos dtype": GraphRefusal("compile", GE_DATATYPE_INVALID),
    "format": GraphRefusal("compile", GE_FORMAT_INVALID),
    "dy not contiguous": None,
}
GRAPH_TILING = GraphRefusal("compile", GE_FAILED)


def as_int32(value: int) -> int:
    """``value``'s low 32 bits as a signed int32 (what a tiling reading an int64 attribute as int32 sees)."""
    return (int(value) + 2**31) % 2**32 - 2**31


def pointer_and_type_rules(case: Case, dtypes_allowed=OPERATOR_DTYPES) -> list[Violation]:
    """Rules 1 and 2: null pointers (161001), then dtypes, sin dtype == cos dtype, formats (161002)."""
    found = [Violation(PARAM_NULLPTR, f"{tensor} is a null pointer", "null", "null pointer") for tensor in case.null]
    for tensor, dtype in (("dy", case.dtype), ("cos", case.cos_dtype), ("sin", case.sin_dtype)):
        if dtype not in dtypes_allowed:
            found.append(Violation(PARAM_INVALID, f"{tensor} dtype {dtype} is not one of "
                                   f"{', '.join(dtypes_allowed)}", "dtype" if tensor == "dy" else f"{tensor}_dtype", "dtype"))
    if case.sin_dtype != case.cos_dtype:
        found.append(Violation(PARAM_INVALID, f"sin dtype {case.sin_dtype} differs from cos dtype "
                               f"{case.cos_dtype}", "sin_dtype", "sin dtype != cos dtype"))
    if case.format not in SUPPORTED_FORMATS:
        found.append(Violation(PARAM_INVALID, f"format {case.format} is not one of "
                               f"{', '.join(SUPPORTED_FORMATS)}", "format", "format"))
    return found


def contiguity_rules(case: Case, code: int = INNER) -> list[Violation]:
    """Rule 5: dy's strides not contiguous -> ``code`` at the launch (nnopbase refuses the input)."""
    if case.dy_strides is not None and not contiguous(case.shape, case.dy_strides):
        return [Violation(code, f"dy strides {list(case.dy_strides)} are not contiguous for shape "
                          f"{list(case.shape)} (refused at launch)", "dy_strides", "dy not contiguous", at_launch=True)]
    return []


def mode_rules(case: Case, supported_modes, code: int = TILING_ERROR) -> list[Violation]:
    """Rule 4a: rotary_mode, read as int32, outside 0..3 or not implemented by the target -> ``code``; the latter is
    skippable (a pass case of such a mode is skipped on this target)."""
    mode = as_int32(case.rotary_mode)
    read_as = f" (read as int32: {mode})" if mode != case.rotary_mode else ""
    if mode not in MODE_NAMES:
        return [Violation(code, f"rotary_mode {case.rotary_mode}{read_as} is not one of 0..3", "rotary_mode",
                          "mode not 0..3")]
    if mode not in supported_modes:
        return [Violation(code, f"rotary_mode {mode_label(mode)}{read_as} not supported by the target "
                          f"(supported: {mode_list(supported_modes)})", "rotary_mode", "mode not implemented",
                          skippable=True)]
    return []


def empty(shape) -> bool:
    """Whether a tensor of ``shape`` has no elements (a dim of 0; nnopbase's ``aclTensor::IsEmpty``)."""
    return 0 in shape


def axis_3(shape) -> int | None:
    """The tiling's ``GetDim(3)`` of ``shape``: its axis 3, None when it has fewer axes."""
    return shape[3] if len(shape) > 3 else None


def no_op(case: Case) -> bool:
    """Whether a successful call changes nothing: dy has no elements (nnopbase runs no tiling or kernel), or
    the tiling's no-op (``CheckAttr``): an empty slice, or cos or sin without elements."""
    start, end = case.partial_slice
    return end == start or empty(case.shape) or empty(case.cos_shape) or empty(case.sin_shape)


def shape_rules(case: Case) -> list[Violation]:
    """The slice and shape rules of rule 4 (b to f), each broken one -> 561002, in the tiling's order."""
    found = []

    def broken(rule: str, message: str, field: str) -> None:
        """Record one broken ``rule`` blaming ``field``."""
        found.append(Violation(TILING_ERROR, message, field, rule))

    mode = as_int32(case.rotary_mode)
    start, end = case.partial_slice
    length = end - start
    dy_d, cos_d = axis_3(case.shape), axis_3(case.cos_shape)
    if start < 0:
        broken("start < 0", f"slice start {start} is negative", "partial_slice")
    if start > end:
        broken("start > end", f"slice start {start} is after its end {end}", "partial_slice")
    if dy_d is None:
        broken("end > D", f"dy is {len(case.shape)}-D: it has no axis 3 for the tiling's D, so every slice is out "
               f"of range", "partial_slice")
    elif end > dy_d:
        broken("end > D", f"slice end {end} exceeds D = {dy_d}", "partial_slice")
    nothing_to_do = no_op(case)
    if not nothing_to_do:
        if cos_d is not None and length != cos_d:
            broken("L != cos D", f"slice length L = {length} differs from cos's last axis {cos_d}", "cos_shape")
        if dy_d is not None and dy_d > MAX_D:
            broken("D > 1024", f"D = {dy_d} exceeds {MAX_D}", "shape")
        multiple = 4 if mode == 2 else 2
        if mode in MODE_NAMES and length % multiple:
            kind = "odd" if multiple == 2 else f"not a multiple of {multiple}"
            broken("L odd" if multiple == 2 else "L not a multiple of 4", f"slice length L = {length} is {kind} "
                   f"({MODE_NAMES[mode]} works on {'pairs' if multiple == 2 else 'quarters'})", "partial_slice")
    shapes = {"dy": (case.shape, "shape"), "cos": (case.cos_shape, "cos_shape"), "sin": (case.sin_shape, "sin_shape")}
    for tensor, (shape, field) in shapes.items():
        if len(shape) != 4:
            broken("not 4-D", f"{tensor} is {len(shape)}-D, not 4-D", field)
    four_d = all(len(shape) == 4 for shape, _ in shapes.values())
    if case.cos_shape != case.sin_shape:
        broken("cos shape != sin shape", f"cos shape {list(case.cos_shape)} differs from sin shape "
               f"{list(case.sin_shape)}", "sin_shape")
    if four_d and cos_d > dy_d:
        broken("cos D > D", f"cos's last axis {cos_d} exceeds dy's D = {dy_d}", "cos_shape")
    if nothing_to_do:
        return found
    for tensor, (shape, field) in shapes.items():
        if any(dim <= 0 for dim in shape):
            broken("dim <= 0", f"{tensor} shape {list(shape)} has a dimension <= 0", field)
    if four_d:
        for axis, (dim, dy_dim) in zip("BSN", zip(case.cos_shape[:3], case.shape[:3])):
            if dim not in (1, dy_dim):
                broken("cos B, S or N", f"cos's {axis} = {dim} is neither 1 nor dy's {axis} = {dy_dim}", "cos_shape")
    return found


def rules(case: Case, supported_modes) -> list[Violation]:
    """Every constraint ``case`` breaks, as Violations, in the real stack's checking order (module docstring):
    an empty dy ends the checks after the dtypes (nnopbase runs no tiling for an empty output)."""
    found = pointer_and_type_rules(case)
    if empty(case.shape):
        return found
    return [*found, *mode_rules(case, supported_modes), *shape_rules(case), *contiguity_rules(case)]


def contiguous(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """True when each axis of length > 1 has stride = product of the lengths after it (C order), or
    the tensor is empty (a length of 0), as CANN's ``op::IsContiguous`` decides."""
    if 0 in shape:
        return True
    expected = 1
    for dim, stride in zip(reversed(shape), reversed(strides)):
        if dim != 1 and stride != expected:
            return False
        expected *= dim
    return True


def pair_blocks(rotary_mode: int, length: int) -> tuple[PairBlock, ...]:
    """The grad's pairs ``(p, q)`` per mode, written at ``(p', q')`` (upstream's formulas of the grad)::

        dx[p'] = c[p]*g[p] + s[q]*g[q]
        dx[q'] = c[q]*g[q] - s[p]*g[p]

      half (0):            p = k,      q = k + L/2,          p' = p,   q' = q       (k < L/2)
      interleave (1):      p = 2k,     q = 2k + 1,           p' = p,   q' = q       (k < L/2)
      quarter (2):         the half rule on each half of the slice
      interleave-half (3): p = k,      q = k + L/2,          p' = 2k,  q' = 2k + 1  (k < L/2)

    with ``g = dy[..., start:end]`` of length ``L`` and each product taking the cos/sin lane of the element it
    multiplies (``ROTATION``)."""
    half = length // 2
    if rotary_mode == HALF:
        return (PairBlock(slice(0, half), slice(half, length), slice(0, half), slice(half, length)),)
    if rotary_mode == INTERLEAVE:
        odd, even = slice(1, length, 2), slice(0, length, 2)
        return (PairBlock(even, odd, even, odd),)
    if rotary_mode == QUARTER:
        quarter = length // 4
        return tuple(PairBlock(slice(lo, lo + quarter), slice(lo + quarter, lo + 2 * quarter),
                               slice(lo, lo + quarter), slice(lo + quarter, lo + 2 * quarter))
                     for lo in (0, half))
    if rotary_mode == INTERLEAVE_HALF:
        return (PairBlock(slice(0, half), slice(half, length),
                          slice(0, length, 2), slice(1, length, 2)),)
    raise ValueError(f"rotary_mode must be 0..3, got {rotary_mode}")


# dx[p'] = c[p]*g[p] + s[q]*g[q], dx[q'] = c[q]*g[q] - s[p]*g[p]
ROTATION = Rotation(pairs=pair_blocks, tables_at="input", first_sign=1, second_sign=-1)

GRAD = OperatorSpec(
    name="grad", title="InplacePartialRotaryMulGrad",
    get_workspace="aclnnInplacePartialRotaryMulGradGetWorkspaceSize", launch="aclnnInplacePartialRotaryMulGrad",
    tensor="dy", direction="backward", adjoint="forward", rules=rules, rule_reasons=RULE_REASONS,
    no_op=no_op, rotation=ROTATION, dtype_pairs=tuple(itertools.product(OPERATOR_DTYPES, repeat=2)),
    layouts=BROADCASTS, required=True,
    graph=GraphIR("InplacePartialRotaryMulGrad", ("dy", "cos", "sin"), "dy", GRAPH_REFUSALS, GRAPH_TILING))
