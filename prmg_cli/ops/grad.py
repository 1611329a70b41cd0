"""InplacePartialRotaryMulGrad: its entry points, constraints and golden (ops-transformer's
``posembedding/inplace_partial_rotary_mul_grad/docs/aclnnInplacePartialRotaryMulGrad.md``).

Constraints, in the order the real stack checks them (the generated aclnn layer, nnopbase, then the 950
tiling ``op_host/inplace_partial_rotary_mul_grad_tiling_base_arch35.cpp``: ``CheckAttr``, ``CheckShape``,
``CheckShapeAllPositive``, ``JudgeLayoutByShape``); the first broken rule gives a case's status:

1. dy, cos or sin is a null pointer -> 161001 ACLNN_ERR_PARAM_NULLPTR
2. a ``partialSlice`` list of no value -> 561103 ACLNN_ERR_INNER_NULLPTR: the generated layer hands it to
   nnopbase's ``NnopbaseAddIntArrayAttr``, whose ``NnopbaseExecutorAddAttr`` refuses the NULL data of an
   empty ``aclIntArray``. A NULL ``partialSlice`` is not an error: the generated layer passes the op
   definition's default ``{0, 0}`` (an empty slice). On a chip the op definition lacks (``SOCS``), nnopbase
   then finds no kernel: 561003 ACLNN_ERR_INNER_FIND_KERNEL_ERROR, and nothing else is checked.
3. a dtype outside {float32, float16, bfloat16}; sin dtype != cos dtype; a format other than ND,
   NCHW, NHWC -> 161002 ACLNN_ERR_PARAM_INVALID
4. dy has no elements (a dim of 0): nnopbase skips the tiling and the kernel; success (0-byte workspace),
   whatever else the case breaks but rule 6, which the launch checks before it skips the kernel.
5. -> 561002 ACLNN_ERR_INNER_TILING_ERROR (tiling), in this order:
   a. rotary_mode, read as int32 (the tiling reads the int64 attribute's low 32 bits: 2**32 + 1 is read
      as 1), outside 0..3 or not implemented by the target;
   b. the slice list: the tiling reads ``GetData()[0]`` and ``[1]`` without looking at its length, so a
      longer list acts as its first two values and a list of one value v is read past its end, where nnopbase
      lays the ref output's AnchorInstanceInfo (``PAST_THE_LIST``): it reads [v, 2**32), judged by the rules
      below, so the slice range refuses it on every build but for e9f0541c's no-op of an empty cos or sin;
   c. start < 0, start > end, end > D (checked even for an empty slice);
   d. then the slice is empty (L = 0) or cos or sin has no elements: a no-op, which skips e and g;
   e. L != cos D; D > 1024; L odd (modes 0, 1, 3) or not a multiple of 4 (mode 2);
   f. a tensor not 4-D; cos shape != sin shape; cos D > dy D (checked for a no-op too);
   g. a dim <= 0; a cos B, S or N that is neither 1 nor dy's.
6. a non-contiguous dy, cos or sin -> ``...GetWorkspaceSize`` succeeds and the **launch** returns 561000
   ACLNN_ERR_INNER: the op declares neither AutoContiguous nor IgnoreContiguous, so nnopbase refuses
   the recorded non-contiguous input before the kernel runs (dy untouched). A contiguous view at a storage
   offset is contiguous (opbase's ``IsContiguous`` reads view shape and strides only); a transposed view
   (``g.transpose(1, 2)``, dense but permuted) and an expanded one (a stride of 0 on an axis of length > 1,
   torch's ``expand``) are not.

Here ``D`` is dy's axis 3 (the tiling's ``GetDim(3)``: dy's last axis when dy is 4-D; a dy of fewer axes
has none, so every slice is out of range), ``[start, end)`` the partial slice and ``L = end - start``.
Strides are contiguous when every axis of length > 1 has the C-order stride (axes of length 1 may have
any, and an empty tensor any strides), as CANN's ``op::IsContiguous`` decides.

Builds (``targets.BUILDS``): rules c and d are 2b888cdb's order; e9f0541c made the no-op (d) and checked it
before the slice range (c). Before e9f0541c (``base``: 4007a71b, the operator's first commit) nothing returns
early: an empty slice skips only the two slice-length rules of e (both guarded by L != 0), meets every other rule,
including D <= 1024 and g, and then succeeds without work (the kernel's empty tiling key); cos or sin without
elements breaks g. The op definition lists the ascend950 and ascend960dt chips only (``SOCS``).
"""

from __future__ import annotations

import itertools
from dataclasses import replace

from ..case import Case
from ..dtypes import OPERATOR_DTYPES
from ..status import (FIND_KERNEL, GE_COMPILE_REFUSED, INNER, INNER_NULLPTR, PARAM_INVALID, PARAM_NULLPTR,
                      TILING_ERROR)
from ..vocab import BROADCASTS, HALF, INTERLEAVE, INTERLEAVE_HALF, MODE_NAMES, QUARTER, TENSORS, mode_label, mode_list
from .reference import PairBlock, Rotation
from .spec import GraphIR, GraphReading, GraphRefusal, OperatorSpec, Violation
from .targets import BUILDS, LATEST_BUILD, REFERENCE_SOC

SUPPORTED_FORMATS = ("ND", "NCHW", "NHWC")
MAX_D = 1024
SOCS = ("ascend950", "ascend960dt")          # the op definition's AddConfig chips


# Every rule ``rules`` may break, in the stack's checking order, and why the stack refuses a case breaking it.
RULE_REASONS = {
    "null pointer": "a null tensor: 161001 before anything else is read",
    "slice list empty": "a partialSlice of no value: nnopbase refuses the empty aclIntArray's NULL data (561103)",
    "dtype": "a dtype the op definition lacks: nnopbase's 161002",
    "sin dtype != cos dtype": "sin's dtype differs from cos's: 161002",
    "format": "a format outside the ND class: 161002",
    "mode not 0..3": "rotary_mode, read as int32, outside 0..3: the tiling refuses it",
    "mode not implemented": "a valid mode the kernel lacks (interleave only today): the tiling refuses it",
    "slice list of 1 value": "a partialSlice of one value v: the tiling reads its second past its end, [v, 2^32)",
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
    "cos not contiguous": "a non-contiguous cos: nnopbase refuses it at the launch (561000), dy untouched",
    "sin not contiguous": "a non-contiguous sin: nnopbase refuses it at the launch (561000), dy untouched",
}


# Graph mode (runners/emulator/README.md, "Graph mode"): every refusal comes when the graph compiles -- GE's check of
# its links (a required input left unlinked: prmg's null tensor), the op proto and kernel selection (dtypes,
# formats), then the static shape's tiling (every other rule). A rule whose graph form has no answer to expect maps
# to why: a strided tensor (GE's tensors are dense). A partialSlice list of no value is read by the tiling in a
# graph (the list is the partial_slice attribute, which no nnopbase sees; GE takes an attribute set to a list of none
# as set, not its IR default: metadef's GetAllIrAttrs): the grad's reads GetData()[0] and [1] on past its end, into
# what GE's ComputeNodeInfo holds after the attributes (``PAST_THE_LIST``). A list of one value both paths read so.
DENSE = "GE's tensors are dense: a graph has no strided tensor"
# GE lays a node's runtime attributes out without padding (metadef attrs_to_buffer.h CreateAttrBuffer; a ListInt a
# ContinuousVector holding its values only), partial_slice, the IR's last, at their end, followed by the
# AnchorInstanceInfo of each IR output (bg_kernel_context_extend.cc CreateComputeNodeInfoImpl, compute_node_info.h
# GetOutputInstanceInfo): the ref output's {uint32 instance_start 0, uint32 instantiation_num 1, 40 reserved bytes
# zeroed (a value-initialised buffer)}. Read as int64 values past the list: 1 << 32, then 0. nnopbase's tiling context
# is laid out alike (opbase indv_compute_node_info.cpp NnopbaseComputeNodeAttrsUpdt: each attribute's data end to end,
# a ListInt a ContinuousVector; NnopbaseComputeNodeInfoUpdt: the output AnchorInstanceInfos at attrStart + attrSize,
# right after the last, set to {0, 1} for the ref output before the tiling runs), so on the aclnn path too the value
# past a one-value list is 1 << 32 (a list of none nnopbase refuses before: rule 2).
PAST_THE_LIST = (1 << 32, 0)
SHORT_SLICE = ("in a graph the list is the partial_slice attribute, which no nnopbase check sees: the tiling reads "
               "values[0] and values[1] on past the end of a list of {}, into the ref output's AnchorInstanceInfo that "
               "GE's ComputeNodeInfo holds after the attributes (hicann/ge 56f8e1bb9), so it reads partial_slice as "
               "{}: judged from there")


def read_past_the_list(case: Case) -> Case:
    """``case`` as the 950's tilings read a ``partial_slice`` of fewer than two values (``PAST_THE_LIST``): a list
    of none (in a graph) as ``[2**32, 0)``, one of ``v`` (either path) as ``[v, 2**32)``."""
    return replace(case, partial_slice=(tuple(case.slice_argument()) + PAST_THE_LIST)[:2], slice_list=None)


# Every refusal of a graph's compile is one status at GE's API (``status.GE_COMPILE_REFUSED``): an unlinked input (GE's
# inner ACL_ERROR_GE_PARAM_INVALID), a dtype or format no kernel takes, the tiling's refusal alike.
COMPILE_REFUSED = GraphRefusal("compile", GE_COMPILE_REFUSED)
GRAPH_REFUSALS = {
    "null pointer": COMPILE_REFUSED,
    "dtype": COMPILE_REFUSED,
    "sin dtype != cos dtype": COMPILE_REFUSED,
    "format": COMPILE_REFUSED,
    "dy not contiguous": DENSE,
    "cos not contiguous": DENSE,
    "sin not contiguous": DENSE,
    "slice list empty": GraphReading(SHORT_SLICE.format("none", "[2^32, 0)"), read_past_the_list),
}
GRAPH_TILING = COMPILE_REFUSED


def as_int32(value: int) -> int:
    """``value``'s low 32 bits as a signed int32 (what a tiling reading an int64 attribute as int32 sees)."""
    return (int(value) + 2**31) % 2**32 - 2**31


def null_rules(case: Case) -> list[Violation]:
    """Rules 1 and 2: null tensors (161001), then a ``partialSlice`` list of no value (561103)."""
    found = [Violation(PARAM_NULLPTR, f"{tensor} is a null pointer", "null", "null pointer")
             for tensor in case.null if tensor in TENSORS]
    if case.slice_argument() == ():
        found.append(Violation(INNER_NULLPTR, "partial_slice is a list of no value: the empty aclIntArray's data is "
                               "NULL, which nnopbase refuses when the generated layer adds the attribute",
                               "partial_slice", "slice list empty"))
    return found


def slice_list_rules(case: Case, rules_after) -> list[Violation]:
    """Rule 5b: the rules after it (``rules_after(case)``) as the 950's tilings read ``partialSlice``: a list of one
    value v past its end, as [v, 2**32) (``read_past_the_list``); a refusal of that slice is the rule 'slice list of 1
    value', in the words of the rule it breaks."""
    values = case.slice_argument()
    if values is None or len(values) != 1:
        return rules_after(case)
    found = rules_after(read_past_the_list(case))
    if not found or found[0].field != "partial_slice":
        return found
    return [found[0]._replace(rule="slice list of 1 value", message=(
        f"partial_slice {list(values)} holds one value: upstream's tiling reads values[0] and values[1] unchecked, so "
        f"its second value is read past the list's end, where nnopbase (and GE) lay the ref output's "
        f"AnchorInstanceInfo, as 2^32: {found[0].message}")), *found[1:]]


def chip_rules(soc: str, socs: tuple[str, ...], title: str) -> list[Violation]:
    """nnopbase's kernel lookup: a chip family ``soc`` its op definition (``socs``) lacks -> 561003
    ACLNN_ERR_INNER_FIND_KERNEL_ERROR (``NnopbaseGetSupportInfo``), before the dtypes are matched."""
    if soc in socs:
        return []
    return [Violation(FIND_KERNEL, f"{title}'s op definition has no config for {soc} (it lists {', '.join(socs)})",
                      "op", "chip not in the op definition")]


# Rules only another chip meets (``OperatorSpec.chip_rules``).
CHIP_REASONS = {"chip not in the op definition": "a chip the op definition lacks: nnopbase finds no kernel (561003)"}


def pointer_and_type_rules(case: Case, dtypes_allowed=OPERATOR_DTYPES) -> list[Violation]:
    """Rules 1 to 3: null pointers (161001), an empty slice list (561103), then dtypes, sin dtype == cos dtype,
    formats (161002)."""
    found = null_rules(case)
    for tensor, dtype in (("dy", case.dtype), ("cos", case.cos_dtype), ("sin", case.sin_dtype)):
        if dtype not in dtypes_allowed:
            found.append(Violation(PARAM_INVALID, f"{tensor} dtype {dtype} is not one of "
                                   f"{', '.join(dtypes_allowed)}", "dtype" if tensor == "dy" else f"{tensor}_dtype",
                                   "dtype"))
    if case.sin_dtype != case.cos_dtype:
        found.append(Violation(PARAM_INVALID, f"sin dtype {case.sin_dtype} differs from cos dtype "
                               f"{case.cos_dtype}", "sin_dtype", "sin dtype != cos dtype"))
    if case.format not in SUPPORTED_FORMATS:
        found.append(Violation(PARAM_INVALID, f"format {case.format} is not one of "
                               f"{', '.join(SUPPORTED_FORMATS)}", "format", "format"))
    return found


def contiguity_rules(case: Case, code: int = INNER) -> list[Violation]:
    """Rule 6: dy's, cos's or sin's strides not contiguous -> ``code`` at the launch (nnopbase refuses the input;
    a storage offset does not make a view non-contiguous)."""
    found = []
    for tensor in TENSORS:
        strides, shape = case.strides_of(tensor), case.shape_of(tensor)
        if strides is not None and not contiguous(shape, strides):
            found.append(Violation(code, f"{tensor} strides {list(strides)} are not contiguous for shape {list(shape)} "
                                   f"(refused at launch)", f"{tensor}_strides", f"{tensor} not contiguous",
                                   at_launch=True))
    return found


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


def no_op(case: Case, build: str = LATEST_BUILD) -> bool:
    """Whether a successful call changes nothing: dy has no elements (nnopbase runs no tiling or kernel), an empty
    slice (every build: the kernel's TILING_KEY_EMPTY), or, from build e9f0541c, cos or sin without elements (the
    tiling's no-op in ``CheckAttr``)."""
    start, end = case.partial_slice
    empty_tables = build != "base" and (empty(case.cos_shape) or empty(case.sin_shape))
    return end == start or empty_tables or empty(case.shape)


def skips_checks(case: Case, build: str = LATEST_BUILD) -> bool:
    """Whether the tiling returns before rules e and g (a no-op of ``CheckAttr``, from build e9f0541c). The base
    build has no such return: its empty slice skips only the slice-length rules (``L == cos D``, L even, both
    guarded by ``L != 0``), meets every other rule, and only then takes the kernel's empty tiling key."""
    return build != "base" and no_op(case, build)


def shape_rules(case: Case, build: str = LATEST_BUILD) -> list[Violation]:
    """The slice and shape rules of rule 5 (c to g), each broken one -> 561002, in the tiling's order of
    ``build`` (module docstring: e9f0541c's no-op skips the slice range too)."""
    found = []

    def broken(rule: str, message: str, field: str) -> None:
        """Record one broken ``rule`` blaming ``field``."""
        found.append(Violation(TILING_ERROR, message, field, rule))

    mode = as_int32(case.rotary_mode)
    start, end = case.partial_slice
    length = end - start
    dy_d, cos_d = axis_3(case.shape), axis_3(case.cos_shape)
    nothing_to_do = skips_checks(case, build)
    if not (nothing_to_do and build == "e9f0541c"):            # e9f0541c's no-op came before the range check
        if start < 0:
            broken("start < 0", f"slice start {start} is negative", "partial_slice")
        if start > end:
            broken("start > end", f"slice start {start} is after its end {end}", "partial_slice")
        if dy_d is None:
            broken("end > D", f"dy is {len(case.shape)}-D: it has no axis 3 for the tiling's D, so every slice is "
                   f"out of range", "partial_slice")
        elif end > dy_d:
            broken("end > D", f"slice end {end} exceeds D = {dy_d}", "partial_slice")
    if not nothing_to_do:
        if cos_d is not None and length and length != cos_d:        # L = 0 skips it on every build
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


def rules(case: Case, supported_modes, soc: str = REFERENCE_SOC, build: str = LATEST_BUILD) -> list[Violation]:
    """Every constraint ``case`` breaks, as Violations, in the real stack's checking order (module docstring) of
    ``build`` (a key of ``targets.BUILDS``): an empty dy ends the checks after the dtypes (nnopbase runs no
    tiling for an empty output) but for rule 6: nnopbase's launch refuses a non-contiguous cos or sin before it skips
    the kernel of an empty output (opbase ``NnopbaseExecutorRunWithWorkspace``: ``NnopbaseExecutorUpdateAddr``, then
    ``NnopbaseSkipKernelLaunch``). The grad's rules are the same on every chip of its op definition (``soc``)."""
    if build not in BUILDS:
        raise ValueError(f"unknown build {build!r}")
    missing = chip_rules(soc, SOCS, "InplacePartialRotaryMulGrad")
    if missing:
        return [*null_rules(case), *missing]
    found = pointer_and_type_rules(case)
    if empty(case.shape):
        return [*found, *contiguity_rules(case)]
    return [*found, *tiling_rules(case, supported_modes, build), *contiguity_rules(case)]


def tiling_rules(case: Case, supported_modes, build: str = LATEST_BUILD) -> list[Violation]:
    """Rule 5, the 950 tiling's own (561002): the mode, the slice list, the slice and shapes of ``build``. For a dy
    without elements it is what the tiling says when it runs (nnopbase runs none on the aclnn path): a no-op after
    the mode, the slice range and the 4-D, cos = sin and cos D <= D rules (upstream's tiling test at 2b888cdb
    refuses a [-1, 0) slice on a dy of B = 0)."""
    return [*mode_rules(case, supported_modes), *slice_list_rules(case, lambda read: shape_rules(read, build))]


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
    layouts=BROADCASTS, socs=SOCS, chip_rules=CHIP_REASONS, builds=tuple(BUILDS), required=True,
    graph=GraphIR("InplacePartialRotaryMulGrad", ("dy", "cos", "sin"), "dy", GRAPH_REFUSALS, GRAPH_TILING,
                  tiling_rules=tiling_rules))
