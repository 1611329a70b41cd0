"""InplacePartialRotaryMul, the forward: its entry points, constraints and golden.

In place on the slice ``[start, end)`` of xRef's last axis: ``x = x*cos + rotate(x)*sin``, per pair
of the mode ``y[p'] = c[p']*x[p] - s[p']*x[q]``, ``y[q'] = c[q']*x[q] + s[q']*x[p]`` (``pair_blocks``).

The constraints mirror upstream's code (ops-transformer ``posembedding/inplace_partial_rotary_mul``:
its aclnn layer only wraps the generated one, the op definition declares the dtypes, ND and
AutoContiguous, the 950's tiling ``inplace_rope_regbase_tiling_base.cpp`` checks the rest), where it
differs from the operator's docs (which promise 161002 for mode, slice and shape errors, refuse
non-contiguous tensors and allow four layouts on the 950); ``runners/emulator/README.md`` has the
details. In checking order, the first broken rule gives the status:

1. xRef, cos or sin is a null pointer -> 161001 ACLNN_ERR_PARAM_NULLPTR
2. -> 161002 ACLNN_ERR_PARAM_INVALID (the op definition): a (x, cos) dtype pair other than (fp32, fp32),
   (fp16, fp16), (bf16, bf16), (fp16, fp32), (bf16, fp32); sin's dtype != cos's; a format outside the
   ND class (ND, NCHW, NHWC: nnopbase takes those for an ND op)
3. xRef has no elements (a dim of 0): nnopbase skips the tiling and the kernel; success (0-byte
   workspace), whatever else the case breaks.
4. -> 561002 ACLNN_ERR_INNER_TILING_ERROR (tiling): rotary_mode, read as int32, not implemented; a tensor
   not 4-D or cos shape != sin shape; start < 0, end > D or start > end; then an empty slice (L = 0) is a
   no-op that skips every later rule; L != cos's last axis; L odd (quarter: not a multiple of 4); D >
   1024; D odd (quarter: not a multiple of 4); a dim <= 0; a cos/sin B, S or N neither 1 nor xRef's
   (every broadcast layout is accepted).

A non-contiguous xRef, cos or sin is made contiguous (AutoContiguous): it is not an error. The slice list
is the grad's (``ops/grad.py`` rules 2 and 5b): a NULL ``partialSlice`` is the op definition's default ``{0, 0}``
(a no-op: the docs' "NULL rotates the whole D" is not what the code does), a list of no value is nnopbase's
561103 (in a graph, where no nnopbase sees it, the 950 tiling reads it as ``[0, D)``), a longer one acts as its
first two values, a list of one value v is read past its end as [v, 2**32) (``grad.PAST_THE_LIST``).

On the A2/A3 chips (ascend910b, ascend910_93: ``targets.MEMBASE_SOCS``) the op definition's membase tiling
(``inplace_partial_rotary_mul_tiling.cpp`` ``CheckInput``) decides instead, each failure 561002, in its order:
x, cos, sin 4-D and cos shape == sin shape; rotary_mode read as **int64** and not implemented (2**32 + 1 is
refused); a slice list of a length other than 2; an empty slice returns here (before any range check: a no-op);
L < 0; D > 1024; D odd; L odd; start < 0; end > D; L != cos D; cos B != x's B; cos N != 1; cos S neither 1 nor
x's (no layout of ``InitSplitTilingData`` takes it).
"""

from __future__ import annotations

from dataclasses import replace

from ..case import Case
from ..dtypes import OPERATOR_DTYPES, bit_width
from ..status import PARAM_INVALID, TILING_ERROR
from ..vocab import BROADCASTS, INTERLEAVE_HALF, MODE_NAMES, mode_label, mode_list
from .grad import (CHIP_REASONS, GRAPH_REFUSALS, GRAPH_TILING, MAX_D, RULE_REASONS as GRAD_RULES, SUPPORTED_FORMATS,
                   as_int32, chip_rules, empty, mode_rules, null_rules, pair_blocks as grad_pair_blocks,
                   slice_list_rules)
from .reference import PairBlock, Rotation
from .spec import GraphIR, GraphReading, OperatorSpec, Violation
from .targets import MEMBASE_SOCS, REFERENCE_SOC

SOCS = ("ascend910b", "ascend910_93", "ascend950", "ascend960dt", "ascend350")    # the op definition's chips
def whole_last_axis(case: Case) -> Case:
    """``case`` as the forward's tilings read a ``partial_slice`` of no value (the 950's ``GetShapeAttrsInfo`` and the
    A2/A3 membase tiling, ops-transformer 577814407: size 0 -> [0, D)): its slice all of dy's last axis."""
    return replace(case, partial_slice=(0, case.shape[-1]), slice_list=None)


# Graph mode as the grad's, but for a list of no value: the 950 tiling (GetShapeAttrsInfo) reads a partial_slice of
# size 0 as [0, D), where the grad's reads two values past its end (``grad.PAST_THE_LIST``).
FORWARD_GRAPH_REFUSALS = {**GRAPH_REFUSALS, "slice list empty": GraphReading(
    "in a graph the list is the partial_slice attribute, which no nnopbase check sees, and the 950 tiling reads a list "
    "of none as [0, D): the whole last axis rotated, not the refusal an aclnn call gets", whole_last_axis)}
DTYPE_PAIRS = (("float32", "float32"), ("float16", "float16"), ("bfloat16", "bfloat16"), ("float16", "float32"),
               ("bfloat16", "float32"))


# Every rule ``rules`` may break, in the forward's checking order, and why the stack refuses a case breaking it
# (the grad's words where the rule is the grad's).
RULE_REASONS = {
    **{name: GRAD_RULES[name] for name in ("null pointer", "slice list empty", "dtype", "sin dtype != cos dtype",
                                           "format", "mode not 0..3", "mode not implemented",
                                           "slice list of 1 value")},
    "not 4-D": "a tensor of another rank (CheckParam, before the slice)",
    "cos shape != sin shape": "cos and sin of different shapes (CheckParam, before the slice)",
    "slice outside [0, D]": "JudgeSliceInfo's one range check: start < 0, end > D or start > end",
    "L != cos D": "a slice length other than cos's last axis",
    "L odd": "an odd slice length in a pair mode",
    "L not a multiple of 4": "quarter: a slice length not a multiple of 4",
    "D > 1024": "D past the tiling's limit (CheckRotaryModeShapeRelation)",
    "D odd": "an odd D in a pair mode",
    "D not a multiple of 4": "quarter: D not a multiple of 4",
    "dim <= 0": "a dimension <= 0 (CheckShapeAllPositive)",
    "cos B, S or N": "a cos/sin axis neither 1 nor x's: no layout template (JudgeLayoutByShape)",
}
# The membase tiling's rules on the A2/A3 chips (module docstring), in its order.
MEMBASE_REASONS = {
    "A2/A3: mode not 1": "A2/A3: rotary_mode, read as int64, not an implemented mode (2**32 + 1 is refused)",
    "A2/A3: slice list not 2": "A2/A3: a partialSlice list of a length other than 2",
    "A2/A3: L < 0": "A2/A3: a slice end before its start",
    "A2/A3: D > 1024": "A2/A3: D past the tiling's limit",
    "A2/A3: D odd": "A2/A3: an odd D",
    "A2/A3: L odd": "A2/A3: an odd slice length",
    "A2/A3: slice outside [0, D]": "A2/A3: start < 0 or end > D (checked after the empty-slice no-op)",
    "A2/A3: L != cos D": "A2/A3: a slice length other than cos's last axis",
    "A2/A3: cos B != B": "A2/A3: cos's B other than x's B",
    "A2/A3: cos N != 1": "A2/A3: cos's N other than 1",
    "A2/A3: cos S": "A2/A3: cos's S neither 1 nor x's S (no layout of InitSplitTilingData)",
}


def _type_rules(case: Case) -> list[Violation]:
    """Rules 1 and 2: null pointers (161001) and an empty slice list (561103), then the op definition's dtypes and
    format (161002)."""
    found = null_rules(case)
    if (case.dtype, case.cos_dtype) not in DTYPE_PAIRS:
        field = "dtype" if case.dtype not in OPERATOR_DTYPES else "cos_dtype"
        found.append(Violation(PARAM_INVALID, f"dtype pair (x {case.dtype}, cos {case.cos_dtype}) is not one of "
                               f"the op definition's", field, "dtype"))
    if case.sin_dtype != case.cos_dtype:
        found.append(Violation(PARAM_INVALID, f"sin dtype {case.sin_dtype} differs from cos dtype {case.cos_dtype}",
                               "sin_dtype", "sin dtype != cos dtype"))
    if case.format not in SUPPORTED_FORMATS:
        found.append(Violation(PARAM_INVALID, f"format {case.format} is not one of {', '.join(SUPPORTED_FORMATS)}",
                               "format", "format"))
    return found


def no_op(case: Case) -> bool:
    """Whether a successful call changes nothing: xRef has no elements (nnopbase runs no tiling or kernel), or
    the tiling's no-op (``tiling_no_op``)."""
    return empty(case.shape) or tiling_no_op(case)


def tiling_no_op(case: Case) -> bool:
    """The 950 tiling's no-op (``JudgeSliceInfo``): an empty slice, or a cos whose last axis is 0 (an xRef without
    elements is none: its dims > 0 rule refuses it when the tiling runs)."""
    start, end = case.partial_slice
    return end == start or (len(case.cos_shape) == 4 and case.cos_shape[-1] == 0)


def _shapes(case: Case) -> dict[str, tuple[tuple[int, ...], str]]:
    """Each tensor's shape and the case field that holds it."""
    return {"x": (case.shape, "shape"), "cos": (case.cos_shape, "cos_shape"), "sin": (case.sin_shape, "sin_shape")}


def _rank_rules(case: Case, prefix: str = "") -> list[Violation]:
    """Both tilings' first rules (561002): x, cos and sin 4-D; cos shape == sin shape (messages after ``prefix``)."""
    found = [Violation(TILING_ERROR, f"{prefix}{tensor} is {len(shape)}-D, not 4-D", field, "not 4-D")
             for tensor, (shape, field) in _shapes(case).items() if len(shape) != 4]
    if case.cos_shape != case.sin_shape:
        found.append(Violation(TILING_ERROR, f"{prefix}cos shape {list(case.cos_shape)} differs from sin shape "
                               f"{list(case.sin_shape)}", "sin_shape", "cos shape != sin shape"))
    return found


def _tiling_rules(case: Case) -> list[Violation]:
    """Rule 4 after the mode: shapes, the slice (an empty one ends the checks), D, dims, layout (561002)."""
    found = _rank_rules(case)
    if found:
        return found

    def broken(rule: str, message: str, field: str) -> None:
        found.append(Violation(TILING_ERROR, message, field, rule))

    shapes = _shapes(case)
    start, end = case.partial_slice
    depth, length, cos_d = case.shape[-1], end - start, case.cos_shape[-1]
    if start < 0 or end > depth or start > end:
        broken("slice outside [0, D]", f"slice [{start}, {end}) is not inside [0, D = {depth}] with start <= end",
               "partial_slice")
        return found
    if tiling_no_op(case):
        return found                                            # the tiling checks nothing more
    mode = as_int32(case.rotary_mode)
    multiple = 4 if mode == 2 else 2
    if length != cos_d:
        broken("L != cos D", f"slice length L = {length} differs from cos's last axis {cos_d}", "cos_shape")
    if length % multiple:
        broken("L odd" if multiple == 2 else "L not a multiple of 4", f"slice length L = {length} is not a "
               f"multiple of {multiple} ({MODE_NAMES.get(mode, mode)})", "partial_slice")
    if depth > MAX_D:
        broken("D > 1024", f"D = {depth} exceeds {MAX_D}", "shape")
    if depth % multiple:
        broken("D odd" if multiple == 2 else "D not a multiple of 4", f"D = {depth} is not a multiple of {multiple}",
               "shape")
    for tensor, (shape, field) in shapes.items():
        if any(dim <= 0 for dim in shape):
            broken("dim <= 0", f"{tensor} shape {list(shape)} has a dimension <= 0", field)
    for axis, (dim, x_dim) in zip("BSN", zip(case.cos_shape[:3], case.shape[:3])):
        if dim not in (1, x_dim):
            broken("cos B, S or N", f"cos's {axis} = {dim} is neither 1 nor x's {axis} = {x_dim}", "cos_shape")
    return found


def _membase_rules(case: Case, supported_modes) -> list[Violation]:
    """The A2/A3 membase tiling's rules (module docstring), each broken one -> 561002, in its order."""
    found = _rank_rules(case, "on A2/A3, ")
    if found:
        return found

    def broken(rule: str, message: str, field: str, skippable: bool = False) -> None:
        found.append(Violation(TILING_ERROR, f"on A2/A3, {message}", field, rule, skippable))

    if case.rotary_mode not in supported_modes:
        broken("A2/A3: mode not 1", f"rotary_mode {mode_label(case.rotary_mode)} (read as int64) is not one the "
               f"kernel implements ({mode_list(supported_modes)})", "rotary_mode", case.rotary_mode in MODE_NAMES)
        return found
    values = case.slice_argument()
    if values is not None and len(values) != 2:
        broken("A2/A3: slice list not 2", f"partial_slice holds {len(values)} values, not 2", "partial_slice")
        return found
    start, end = case.partial_slice
    depth, length = case.shape[-1], end - start
    if length == 0:
        return found                                            # an empty slice: a no-op before any other rule
    rules = (("A2/A3: L < 0", length < 0, f"slice [{start}, {end}) ends before it starts", "partial_slice"),
             ("A2/A3: D > 1024", depth > MAX_D, f"D = {depth} exceeds {MAX_D}", "shape"),
             ("A2/A3: D odd", depth % 2, f"D = {depth} is odd", "shape"),
             ("A2/A3: L odd", length % 2, f"slice length L = {length} is odd", "partial_slice"),
             ("A2/A3: slice outside [0, D]", start < 0 or end < 0 or end > depth,
              f"slice [{start}, {end}) is not inside [0, D = {depth}]", "partial_slice"),
             ("A2/A3: L != cos D", length != case.cos_shape[-1],
              f"slice length L = {length} differs from cos's last axis {case.cos_shape[-1]}", "cos_shape"),
             ("A2/A3: cos B != B", case.cos_shape[0] != case.shape[0],
              f"cos's B = {case.cos_shape[0]} is not x's B = {case.shape[0]}", "cos_shape"),
             ("A2/A3: cos N != 1", case.cos_shape[2] != 1, f"cos's N = {case.cos_shape[2]} is not 1", "cos_shape"),
             ("A2/A3: cos S", case.cos_shape[1] not in (1, case.shape[1]),
              f"cos's S = {case.cos_shape[1]} is neither 1 nor x's S = {case.shape[1]}", "cos_shape"))
    for rule, breaks, message, field in rules:
        if breaks:
            broken(rule, message, field)
            return found                                         # each check returns on its failure
    return found


# The A2/A3 membase tiling's decode kernel (CalTilingData, InplacePartialRotaryMulABA): a vector core's unified buffer
# in bytes there (192 KiB), the longest slice it takes (REPEAT_FP32) and the bytes the slice must be a whole number of
# (oneBlockSize_: ALIGN_16 = 16 16-bit lanes, ALIGN_32 = 8 float32 lanes).
MEMBASE_UB_BYTES = 196608
DECODE_MAX_L = 64
DECODE_ALIGN_BYTES = 32


def membase_decode_heads(case: Case) -> int:
    """The heads of each row (x's S*N) that ``case``, a forward call passing the A2/A3 rules, gives the membase
    tiling's decode kernel, or 0 when it takes another (``CalTilingData``, ops-transformer 577814407): x and cos of one
    dtype, cos's S and N 1, x's S or N 1, a non-empty slice of the interleave mode whose length L (not x's D: the
    tiling's ``xdim3_ = headDim_;`` is ``end - start``) is at most ``DECODE_MAX_L`` and a whole number of
    ``DECODE_ALIGN_BYTES`` (``if (xdim3_ % oneBlockSize_ == 0) isAlign_``; ``!isAlign_`` and ``xdim3_ > REPEAT_FP32``
    send the call to the split-S kernels), and ``ubFactor = (UB/4 - H*L) // (4*H*L + 4*L) > 0`` for H = S*N heads.
    So a DeepSeek-style rope tail ([448, 512) of D = 512) takes it and a slice of 8 16-bit lanes does not. The kernel
    multiplies a row's H heads by the broadcast cos (and the swapped x by sin) in one vector instruction each, its
    heads ``headDim / perBlock32`` 32-byte blocks apart (exact: L is whole blocks of float32 lanes as well), whose
    repeat count is 8 bits: until 5889c853 split it into repeats of 128, H >= 256 wrapped (the heads from H mod 256
    on kept no product); at H = 1 its table is not broadcast (the other template)."""
    _, positions, heads_per_position, _ = case.shape
    heads, length = positions * heads_per_position, case.partial_slice[1] - case.partial_slice[0]
    floats = MEMBASE_UB_BYTES // 4
    takes = (case.op == "forward" and case.dtype == case.cos_dtype and case.cos_shape[1:3] == (1, 1)
             and 1 in (positions, heads_per_position) and 0 < length <= DECODE_MAX_L
             and length * bit_width(case.dtype) // 8 % DECODE_ALIGN_BYTES == 0 and case.rotary_mode == 1
             and (floats - heads * length) // (4 * heads * length + 4 * length) > 0)
    return heads if takes else 0


def rules(case: Case, supported_modes, soc: str = REFERENCE_SOC, build: str | None = None) -> list[Violation]:
    """Every constraint ``case`` breaks, in the forward's checking order on chip family ``soc`` (module
    docstring; its rules have no build history): an empty xRef ends the checks after the dtypes (nnopbase runs
    no tiling for an empty output)."""
    missing = chip_rules(soc, SOCS, "InplacePartialRotaryMul")
    if missing:
        return [*null_rules(case), *missing]
    found = _type_rules(case)
    if empty(case.shape):
        return found
    if soc in MEMBASE_SOCS:
        return [*found, *_membase_rules(case, supported_modes)]
    return [*found, *tiling_rules(case, supported_modes)]


def tiling_rules(case: Case, supported_modes) -> list[Violation]:
    """Rule 4, the 950 tiling's own (561002): the mode, the slice list, shapes, slice, D, dims and layout. For an
    xRef without elements it is what the tiling says when it runs (nnopbase runs none on the aclnn path): its dims >
    0 rule refuses every such call but a no-op."""
    return [*mode_rules(case, supported_modes), *slice_list_rules(case, _tiling_rules)]


def pair_blocks(rotary_mode: int, length: int) -> tuple[PairBlock, ...]:
    """The forward's pairs, the exact transpose of the grad's: with x read at ``(p, q)`` and y written at
    ``(p', q')``, each output lane takes its own cos and sin (``ROTATION``)::

        y[p'] = c[p']*x[p] - s[p']*x[q]
        y[q'] = c[q']*x[q] + s[q']*x[p]

    half, interleave, quarter: the grad's pairs; interleave-half: ``p = 2k, q = 2k + 1, p' = k, q' = k + L/2``
    (x read interleaved, y written in half layout)."""
    if rotary_mode == INTERLEAVE_HALF:
        half = length // 2
        return (PairBlock(slice(0, length, 2), slice(1, length, 2), slice(0, half), slice(half, length)),)
    return grad_pair_blocks(rotary_mode, length)


# y[p'] = c[p']*x[p] - s[p']*x[q], y[q'] = c[q']*x[q] + s[q']*x[p]
ROTATION = Rotation(pairs=pair_blocks, tables_at="output", first_sign=-1, second_sign=1)

FORWARD = OperatorSpec(
    name="forward", title="InplacePartialRotaryMul",
    get_workspace="aclnnInplacePartialRotaryMulGetWorkspaceSize", launch="aclnnInplacePartialRotaryMul",
    tensor="x", direction="forward", adjoint="grad", rules=rules, rule_reasons=RULE_REASONS,
    chip_rules={**CHIP_REASONS, **MEMBASE_REASONS},
    no_op=no_op, rotation=ROTATION, dtype_pairs=DTYPE_PAIRS, layouts=BROADCASTS, socs=SOCS, auto_contiguous=True,
    graph=GraphIR("InplacePartialRotaryMul", ("x", "cos", "sin"), "x", FORWARD_GRAPH_REFUSALS,
                  GRAPH_TILING, tiling_rules=tiling_rules))
