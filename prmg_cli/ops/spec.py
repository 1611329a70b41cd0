"""The shape of an operator entry (``OperatorSpec``) and of a broken constraint (``Violation``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NamedTuple


class Violation(NamedTuple):
    """One broken constraint: the status it earns, a message, the case field to blame, the rule broken (a key
    of its operator's ``OperatorSpec.rule_reasons``), whether it is only the target's missing support for a
    valid mode (a pass case to skip, not a bad case), and whether the status comes from the launch rather than
    from ``...GetWorkspaceSize``."""

    code: int
    message: str
    field: str
    rule: str
    skippable: bool = False
    at_launch: bool = False


@dataclass(frozen=True)
class OperatorSpec:
    """One operator of the InplacePartialRotaryMul family: everything prmg needs to know about it.

    - ``get_workspace``/``launch``: the two aclnn entry points (the family shares their signatures:
      ``(inplace, cos, sin, int64 rotary_mode, aclIntArray *partialSlice, uint64 *workspaceSize,
      aclOpExecutor **)`` and ``(workspace, workspaceSize, executor, stream)``);
    - ``tensor``: the in-place tensor's name in prmg's messages (``dy``, ``x``; the docs' ``dyRef``, ``xRef``; case
      files call it ``dy`` for every operator);
    - ``direction`` (``forward`` or ``backward``) and ``adjoint``, the name of the operator it is the exact
      transpose of (the golden-free checks launch it);
    - ``rules(case, supported_modes) -> [Violation]``: its constraints, in the real stack's checking order;
    - ``rule_reasons``: every rule a Violation of ``rules`` may name, in checking order, with a one-line reason
      (``coverage`` makes one class of each, so that a suite shows it hits every rule);
    - ``no_op(case) -> bool``: whether a call that succeeds changes nothing (an empty in-place tensor, which
      nnopbase runs no kernel for, or the tiling's no-op: an empty slice, or empty cos/sin);
    - ``golden(x, cos, sin, mode, slice) -> array``: the expected in-place tensor, in its dtype;
    - ``golden_slice(x, cos, sin, mode, slice, compute_dtype=float64)``: the slice computed in
      ``compute_dtype`` (float64: the high-precision golden);
    - ``magnitude(x, cos, sin, mode, slice)``: per output element, the sum of its two products'
      magnitudes ``|c*x| + |s*x'|`` (float64), which the ``default`` budget scales with;
    - ``slice_terms(x, cos, sin, mode, slice) -> reference.SliceTerms``: the block-by-block terms of the golden
      that the judge's one-pass scan uses (None: no scan, the whole-array judge runs);
    - ``lane_terms(mode, L) -> (kept, partner, sign, cos_lane, sin_lane)``: per output lane ``j`` of the
      slice, ``out[j] = c[cos_lane]*x[kept] + sign * s[sin_lane]*x[partner]`` (indices into the slice);
    - ``dtype_pairs``: the (in-place dtype, cos/sin dtype) pairs it accepts; ``layouts``: the cos/sin
      broadcast patterns it accepts;
    - ``required``: a toolkit must export it (the operator under test; the others' cases error without them);
      ``auto_contiguous``: it takes non-contiguous tensors (its generated layer copies them).
    """

    name: str
    title: str
    get_workspace: str
    launch: str
    tensor: str
    direction: str
    adjoint: str
    rules: Callable
    rule_reasons: dict
    no_op: Callable
    golden: Callable
    golden_slice: Callable
    magnitude: Callable
    lane_terms: Callable
    slice_terms: Callable | None
    dtype_pairs: tuple
    layouts: tuple
    required: bool = False
    auto_contiguous: bool = False
