"""The shape of an operator entry (``OperatorSpec``), of a broken constraint (``Violation``) and of an operator in
graph mode (``GraphIR``, ``GraphRefusal``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, NamedTuple

import numpy as np

from . import reference
from .reference import Rotation


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


class GraphRefusal(NamedTuple):
    """Where graph mode refuses a case breaking a rule: the phase (``vocab.GRAPH_REFUSING``) and GE's status."""

    phase: str
    code: int


class GraphReading(NamedTuple):
    """A rule only the aclnn path applies (nnopbase's, which no attribute of a graph meets), and how the graph's
    tiling reads such a case instead: ``read(case)``, the case as the tiling reads it (judged from there by the
    operator's other rules: a success, or the refusal of the rule it breaks; a list the tiling reads past its end is
    read as what GE holds there, ``grad.PAST_THE_LIST``). ``why``: one line saying so. The two paths answer such a
    case differently by design (``constraints.graph_reads_otherwise``)."""

    why: str
    read: Callable


@dataclass(frozen=True)
class GraphIR:
    """An operator in graph mode, as its IR (upstream's ``op_graph/<op>_proto.h``) names it: the IR type, its three
    inputs and its ref output, and the attributes prmg sets by name (the IR declares ``rotary_mode`` Int, default 0,
    and ``partial_slice`` ListInt, default {0, 0}).

    ``refusals``: rule (of ``OperatorSpec.rule_reasons``) -> where GE refuses a case whose first broken rule it is,
    how the graph's tiling reads it instead when the rule is the aclnn path's alone (``GraphReading``), or, when
    graph mode has no answer to expect for it, why (a strided dy: GE's tensors are dense); a rule not listed
    is the tiling's, refused with ``tiling`` (the static shape's tiling runs when the graph compiles).
    ``tiling_rules(case, supported_modes) -> [Violation]``: the tiling's own rules, which for an in-place tensor
    without elements say what it refuses when it runs (nnopbase runs no tiling for one on the aclnn path)."""

    op_type: str
    inputs: tuple[str, str, str]
    output: str
    refusals: Mapping[str, GraphRefusal | GraphReading | str] = field(default_factory=dict)
    tiling: GraphRefusal | None = None
    tiling_rules: Callable | None = None
    mode_attr: str = "rotary_mode"
    slice_attr: str = "partial_slice"

    def refusal(self, rule: str) -> GraphRefusal | GraphReading | str | None:
        """Where GE refuses a case whose first broken rule is ``rule``, how the graph's tiling reads the case instead
        (``GraphReading``), or why graph mode has no answer to expect (a text); None when neither the rule nor the
        tiling is listed."""
        return self.refusals[rule] if rule in self.refusals else self.tiling


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
    - ``rules(case, supported_modes, soc, build) -> [Violation]``: its constraints, in the real stack's checking
      order on op-definition chip family ``soc`` (``targets``) for upstream build ``build`` (``targets.BUILDS``);
    - ``rule_reasons``: every rule a Violation of ``rules`` may name on the reference chip, in checking order, with
      a one-line reason (``coverage`` makes one class of each, so that a suite shows it hits every rule);
      ``chip_rules``: those only another chip's tiling has (the forward's A2/A3 rules); ``builds``: the upstream
      builds (``targets.BUILDS``, oldest first) its rules tell apart (the grad's empty-slice history; none: its
      rules have no build history);
    - ``socs``: the chip families its op definition lists (``constraints.check_chip``);
    - ``no_op(case) -> bool``: whether a call that succeeds changes nothing (an empty in-place tensor, which
      nnopbase runs no kernel for, or the tiling's no-op: an empty slice, or empty cos/sin);
    - ``rotation``: its ``reference.Rotation`` (pairs per mode, cos/sin lanes, signs), from which the methods
      derive its goldens: ``golden`` (the expected in-place tensor), ``golden_slice`` (the slice in a compute
      dtype), ``magnitude`` (per output element ``|c*x| + |s*x'|``, which the ``default`` budget scales
      with), ``slice_terms`` (the block-by-block terms the judge's one-pass scan uses) and ``lane_terms``;
    - ``dtype_pairs``: the (in-place dtype, cos/sin dtype) pairs it accepts; ``layouts``: the cos/sin
      broadcast patterns it accepts;
    - ``required``: a toolkit must export it (the operator under test; the others' cases error without them);
      ``auto_contiguous``: it takes non-contiguous tensors (its generated layer copies them);
    - ``graph``: the operator in graph mode (``GraphIR``: its IR's names, where GE refuses each rule).
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
    rotation: Rotation
    dtype_pairs: tuple
    layouts: tuple
    socs: tuple
    chip_rules: dict = field(default_factory=dict)
    builds: tuple = ()
    required: bool = False
    auto_contiguous: bool = False
    graph: GraphIR | None = None

    def golden(self, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, rotary_mode: int, partial_slice, *,
               workers: int | None = None) -> np.ndarray:
        """The expected in-place tensor, a new array in x's dtype (``reference.rotated``)."""
        return reference.rotated(self.rotation, x, cos, sin, rotary_mode, partial_slice, workers=workers)

    def golden_slice(self, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, rotary_mode: int, partial_slice, *,
                     compute_dtype=np.float64) -> np.ndarray:
        """The slice computed in ``compute_dtype`` (float64: the high-precision golden; ``reference.rotated_slice``)."""
        return reference.rotated_slice(self.rotation, x, cos, sin, rotary_mode, partial_slice,
                                       compute_dtype=compute_dtype)

    def magnitude(self, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, rotary_mode: int,
                  partial_slice) -> np.ndarray:
        """Per output element of the slice ``|c*x| + |s*x'|`` in float64 (``reference.rotated_magnitude``)."""
        return reference.rotated_magnitude(self.rotation, x, cos, sin, rotary_mode, partial_slice)

    def slice_terms(self, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, rotary_mode: int, partial_slice,
                    block_elements: int | None = None) -> reference.SliceTerms:
        """The slice's golden and magnitude block by block (``reference.SliceTerms``)."""
        return reference.SliceTerms(self.rotation, x, cos, sin, rotary_mode, partial_slice, block_elements)

    def lane_terms(self, rotary_mode: int, length: int) -> reference.LaneTerms:
        """Per output lane ``j``: ``(kept, partner, sign, cos_lane, sin_lane)`` with
        ``out[j] = c[cos_lane]*x[kept] + sign * s[sin_lane]*x[partner]`` (``reference.lane_terms``)."""
        return reference.lane_terms(self.rotation, rotary_mode, length)

    def check(self, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, rotary_mode: int,
              partial_slice) -> tuple[int, int]:
        """``(start, end)`` when the goldens are defined for these arguments, else ``ValueError``."""
        return reference.check_arguments(self.rotation, x, cos, sin, rotary_mode, partial_slice)
