"""The operator's documented constraints (operator.md, "Constraints and what the operator returns").

Each rule says which status the operator returns for a case that breaks it; the rules are listed in
the order the operator checks them, so the first broken rule gives the case's expected status:

1. dy, cos or sin is a null pointer -> 161001 ACLNN_ERR_PARAM_NULLPTR
2. a dtype outside {float32, float16, bfloat16}; sin dtype != cos dtype; a format other than ND,
   NCHW, NHWC; dy's strides not contiguous -> 161002 ACLNN_ERR_PARAM_INVALID
3. -> 561002 ACLNN_ERR_INNER_TILING_ERROR: rotary_mode not supported by the target (a value outside
   0..3 on every target); a tensor not 4-D; cos shape != sin shape; a dim <= 0; D > 1024; start < 0;
   end > D; start > end; L != 0 and L != cos D; cos D > dy D; L odd (modes 0, 1, 3) or not a multiple
   of 4 (mode 2); a cos/sin B, S or N that is neither 1 nor dy's.

Here ``D`` is dy's last axis, ``[start, end)`` the partial slice and ``L = end - start``. Strides are
contiguous when every axis of length > 1 has the C-order stride (axes of length 1 may have any, and an
empty tensor any strides).
"""

from __future__ import annotations

from typing import NamedTuple

from prmg_cli.dtypes import OPERATOR_DTYPES
from prmg_cli.status import PARAM_INVALID, PARAM_NULLPTR, TILING_ERROR
from prmg_cli.vocab import MODE_NAMES, mode_label

DEFAULT_SUPPORTED_MODES = frozenset({1})   # today's kernel implements interleave only
SUPPORTED_FORMATS = ("ND", "NCHW", "NHWC")
MAX_D = 1024


class Violation(NamedTuple):
    """One broken constraint: the status it earns, a message, the case field to blame, and whether
    it is only the target's missing support for a valid mode (a case to skip, not a bad case)."""

    code: int
    message: str
    field: str
    skippable: bool = False


def violations(case, supported_modes: set[int] | frozenset[int]) -> list[tuple[int, str]]:
    """Every constraint ``case`` breaks on a target supporting ``supported_modes``, as (status, message),
    in the operator's checking order."""
    return [(v.code, v.message) for v in violation_details(case, supported_modes)]


def expected_status(case, supported_modes: set[int] | frozenset[int]) -> int:
    """The status the operator returns for ``case``: 0 when no constraint is broken, else the first one's."""
    found = violation_details(case, supported_modes)
    return found[0].code if found else 0


def skip_reason(case, supported_modes: set[int] | frozenset[int]) -> str | None:
    """Why a case must be skipped on this target, or None when it runs.

    An ``expect: pass`` case is skipped when its (valid) mode is unsupported and nothing else is wrong.
    A case expecting an error is skipped when the only error it can earn is its mode being refused and
    this target supports that mode (e.g. a "half is refused today" case on a target with every mode).
    """
    found = violation_details(case, supported_modes)
    if case.expect.success:
        return found[0].message if found and all(v.skippable for v in found) else None
    refused_anywhere = violation_details(case, frozenset())
    if not found and refused_anywhere and all(v.skippable for v in refused_anywhere):
        return (f"expects rotary_mode {mode_label(case.rotary_mode)} to be refused, but the target "
                f"supports it")
    return None


def violation_details(case, supported_modes: set[int] | frozenset[int]) -> list[Violation]:
    """Every constraint ``case`` breaks, as Violations, in the operator's checking order."""
    return [*_pointer_and_type_rules(case), *_tiling_rules(case, supported_modes)]


def _pointer_and_type_rules(case) -> list[Violation]:
    """Rules checked before tiling: null pointers (161001), then dtypes, format, strides (161002)."""
    found = [Violation(PARAM_NULLPTR, f"{tensor} is a null pointer", "null") for tensor in case.null]
    for tensor, dtype in (("dy", case.dtype), ("cos", case.cos_dtype), ("sin", case.sin_dtype)):
        if dtype not in OPERATOR_DTYPES:
            found.append(Violation(PARAM_INVALID, f"{tensor} dtype {dtype} is not one of "
                                   f"{', '.join(OPERATOR_DTYPES)}", "dtype" if tensor == "dy" else f"{tensor}_dtype"))
    if case.sin_dtype != case.cos_dtype:
        found.append(Violation(PARAM_INVALID, f"sin dtype {case.sin_dtype} differs from cos dtype "
                               f"{case.cos_dtype}", "sin_dtype"))
    if case.format not in SUPPORTED_FORMATS:
        found.append(Violation(PARAM_INVALID, f"format {case.format} is not one of "
                               f"{', '.join(SUPPORTED_FORMATS)}", "format"))
    if case.dy_strides is not None and not _contiguous(case.shape, case.dy_strides):
        found.append(Violation(PARAM_INVALID, f"dy strides {list(case.dy_strides)} are not contiguous for "
                               f"shape {list(case.shape)}", "dy_strides"))
    return found


def _tiling_rules(case, supported_modes: set[int] | frozenset[int]) -> list[Violation]:
    """Rules checked by tiling (561002): mode, ranks, shapes, D, the slice, L, broadcast."""
    found = []

    def broken(message: str, field: str, skippable: bool = False) -> None:
        """Record one broken tiling rule (status 561002) blaming ``field``."""
        found.append(Violation(TILING_ERROR, message, field, skippable))

    mode = case.rotary_mode
    if mode not in MODE_NAMES:
        broken(f"rotary_mode {mode} is not one of 0..3", "rotary_mode")
    elif mode not in supported_modes:
        supported = ", ".join(MODE_NAMES[m] for m in sorted(supported_modes)) or "none"
        broken(f"rotary_mode {mode_label(mode)} not supported by the target (supported: {supported})",
               "rotary_mode", skippable=True)
    shapes = {"dy": (case.shape, "shape"), "cos": (case.cos_shape, "cos_shape"),
              "sin": (case.sin_shape, "sin_shape")}
    for tensor, (shape, field) in shapes.items():
        if len(shape) != 4:
            broken(f"{tensor} is {len(shape)}-D, not 4-D", field)
    if case.cos_shape != case.sin_shape:
        broken(f"cos shape {list(case.cos_shape)} differs from sin shape {list(case.sin_shape)}", "sin_shape")
    for tensor, (shape, field) in shapes.items():
        if any(dim <= 0 for dim in shape):
            broken(f"{tensor} shape {list(shape)} has a dimension <= 0", field)
    start, end = case.partial_slice
    length = end - start
    dy_d = case.shape[-1] if case.shape else None
    cos_d = case.cos_shape[-1] if case.cos_shape else None
    if dy_d is not None and dy_d > MAX_D:
        broken(f"D = {dy_d} exceeds {MAX_D}", "shape")
    if start < 0:
        broken(f"slice start {start} is negative", "partial_slice")
    if dy_d is not None and end > dy_d:
        broken(f"slice end {end} exceeds D = {dy_d}", "partial_slice")
    if start > end:
        broken(f"slice start {start} is after its end {end}", "partial_slice")
    if length != 0 and cos_d is not None and length != cos_d:
        broken(f"slice length L = {length} differs from cos's last axis {cos_d}", "cos_shape")
    if cos_d is not None and dy_d is not None and cos_d > dy_d:
        broken(f"cos's last axis {cos_d} exceeds dy's D = {dy_d}", "cos_shape")
    if mode in (0, 1, 3) and length % 2:
        broken(f"slice length L = {length} is odd ({MODE_NAMES[mode]} works on pairs)", "partial_slice")
    if mode == 2 and length % 4:
        broken(f"slice length L = {length} is not a multiple of 4 (quarter)", "partial_slice")
    if len(case.shape) == 4:
        tables = [("cos", case.cos_shape, "cos_shape")]
        if case.sin_shape != case.cos_shape:
            tables.append(("sin", case.sin_shape, "sin_shape"))
        for tensor, shape, field in tables:
            if len(shape) != 4:
                continue
            for axis, (dim, dy_dim) in zip("BSN", zip(shape[:3], case.shape[:3])):
                if dim not in (1, dy_dim):
                    broken(f"{tensor}'s {axis} = {dim} is neither 1 nor dy's {axis} = {dy_dim}", field)
    return found


def _contiguous(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
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
