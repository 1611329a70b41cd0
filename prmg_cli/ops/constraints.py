"""Which status a case earns on a target: the operator's rules (``ops.OPERATORS[case.op].rules``) applied.

The rules of each operator are listed in its module (``ops/grad.py``) in the order the real stack checks
them, so the first broken rule gives the case's status. A target is described by the rotary modes it
implements, its chip (``targets``: the forward's A2/A3 rules differ) and the upstream build of its operators;
a pass case whose (valid) mode the target lacks is skipped (unless the toolkit accepts it: ``execute.precheck``),
and that is the only skip: a case that expects an
error always runs. A case's expectation is written for the 950; ``on_chip`` says what it is on another chip,
``check_chip`` refuses a run of an operator its chip lacks.

In graph mode (``runners/geir``) the same rules decide, in the same order; where GE refuses a case (the phase and
GE's status) is each operator's ``OperatorSpec.graph`` (``graph_case``). A case whose status a rule without
a graph-mode form decides (a strided tensor) is skipped there; a partialSlice list of no value, which no
nnopbase sees in a graph, is answered as the tiling reads it (a list of one value both paths read alike).
"""

from __future__ import annotations

from dataclasses import replace

from . import OPERATORS, Violation
from .spec import GraphReading
from ..case import Case, Expect
from ..errors import PrmgError
from ..results import plural
from ..status import describe, graph_status
from ..vocab import DEFAULT_SUPPORTED_MODES, PHASES
from .targets import ASCEND, BUILDS, LATEST_BUILD, REFERENCE_SOC, rules_soc, soc_family

__all__ = ["DEFAULT_SUPPORTED_MODES", "Violation", "violation_details", "violations", "expected_status",
           "expected_phase", "holding_builds", "build_outcomes", "explains", "skip_reason", "expectation_warning",
           "check_chip", "on_chip", "graph_case"]


def violation_details(case: Case, supported_modes: set[int] | frozenset[int], soc: str | None = None,
                      build: str | None = None) -> list[Violation]:
    """Every constraint ``case`` breaks on a target supporting ``supported_modes``, in checking order, on chip
    family ``soc`` (None: the reference chip) for upstream ``build`` (None: the latest; ``targets``)."""
    return OPERATORS[case.op].rules(case, frozenset(supported_modes), rules_soc(soc), build or LATEST_BUILD)


def violations(case: Case, supported_modes: set[int] | frozenset[int]) -> list[tuple[int, str]]:
    """Every constraint ``case`` breaks, as (status, message), in checking order."""
    return [(v.code, v.message) for v in violation_details(case, supported_modes)]


def expected_status(case: Case, supported_modes: set[int] | frozenset[int], soc: str | None = None,
                    build: str | None = None) -> int:
    """The status the operator returns for ``case``: 0 when no constraint is broken, else the first one's."""
    found = violation_details(case, supported_modes, soc, build)
    return found[0].code if found else 0


def expected_phase(case: Case, supported_modes: set[int] | frozenset[int], soc: str | None = None,
                   build: str | None = None) -> str:
    """The phase (a key of ``vocab.PHASES``) whose call returns ``expected_status``: ``launch`` for a rule nnopbase
    checks at the launch (a non-contiguous tensor), else ``workspace``."""
    found = violation_details(case, supported_modes, soc, build)
    return "launch" if found and found[0].at_launch else "workspace"


def holding_builds(case: Case, supported_modes: set[int] | frozenset[int]) -> tuple[str, ...]:
    """The builds (``targets.BUILDS``) on which the model predicts what ``case`` expects (its status, or success);
    a known-defect case's expectation is the defect's business: every build."""
    if case.known_defect:
        return tuple(BUILDS)
    wanted = 0 if case.expect.success else case.expect.error
    return tuple(build for build in BUILDS
                 if (code := expected_status(case, supported_modes, build=build)) == wanted
                 or (wanted == "any" and code != 0))


def build_outcomes(case: Case, supported_modes: set[int] | frozenset[int], soc: str | None = None,
                   graph: bool = False) -> frozenset:
    """What the operator returns for ``case`` on chip family ``soc`` on each build (``targets.BUILDS``):
    ``(status, phase)`` pairs (the phase None for a success), the outcomes a toolkit build can explain. With
    ``graph``, as graph mode answers each build's (``graph_case``: GE's status and the graph phase refusing it;
    ``("any", "any")`` where the model leaves GE's refusal open, any refusal of a refusing phase; a build whose
    case has no graph form, ``("any", "any")`` and success)."""
    outcomes = set()
    for build in BUILDS:
        code = expected_status(case, supported_modes, soc, build)
        phase = expected_phase(case, supported_modes, soc, build) if code else None
        if not graph:
            outcomes.add((code, phase))
            continue
        judged = graph_case(replace(case, expect=Expect(code, phase) if code else Expect(), known_defect=None),
                            supported_modes, soc, build)
        if isinstance(judged, str):
            outcomes.update({("any", "any"), (0, None)})
        else:
            outcomes.add((0, None) if judged.expect.success else (judged.expect.error, judged.expect.phase))
    return frozenset(outcomes)


def explains(got: tuple, outcomes: frozenset, refusing: tuple = tuple(PHASES)) -> bool:
    """Whether ``got``, a call's ``(status, phase)`` (phase None for a success), is one of ``outcomes``
    (``build_outcomes``), an ``"any"`` standing for any refusal (status) of any phase of ``refusing``."""
    status, phase = got
    return got in outcomes or (status != 0 and phase in refusing and any(
        code in ("any", status) and want in ("any", phase) for code, want in outcomes if code != 0))


def _read_in_graph(case: Case, reading: GraphReading, supported_modes, soc: str | None = None,
                   build: str | None = None) -> Case | str:
    """``case`` as graph mode answers it when its first broken rule is the aclnn path's alone (``reading``): the case
    as the tiling reads it, judged by the rules it then breaks (its graph form, the list passed as written),
    ``reading.why`` as its note."""
    read = reading.read(case)
    found = violation_details(read, supported_modes, soc, build)
    expect = Expect() if not found else Expect(found[0].code)
    judged = graph_case(replace(read, expect=expect), supported_modes, soc, build)
    return judged if isinstance(judged, str) else replace(judged, slice_list=case.slice_list, note=reading.why)


def graph_reads_otherwise(case: Case, supported_modes=DEFAULT_SUPPORTED_MODES) -> bool:
    """Whether graph mode reads ``case`` otherwise than the aclnn path (its first broken rule a ``GraphReading``:
    a partial_slice of no value, which nnopbase refuses and no graph sees): the paths' answers differ by
    design, each judged against its own expectation and not held to the other's."""
    found = violation_details(case, supported_modes)
    return bool(found) and isinstance(OPERATORS[case.op].graph.refusal(found[0].rule), GraphReading)


def skip_reason(case: Case, supported_modes: set[int] | frozenset[int]) -> str | None:
    """Why a case is skipped on this target, or None when it runs: only an ``expect: pass`` case whose
    every broken rule is the target lacking its (valid) rotary mode is skipped."""
    if not case.expect.success:
        return None
    found = violation_details(case, supported_modes)
    return found[0].message if found and all(v.skippable for v in found) else None


def expectation_warning(case: Case, supported_modes: set[int] | frozenset[int]) -> str | None:
    """For a case expecting an error: why its expectation disagrees with the constraint model on this
    target (it predicts success, or another status), else None. Known-defect cases disagree on purpose."""
    if case.expect.success or case.known_defect:
        return None
    found = violation_details(case, supported_modes)
    predicted = found[0].code if found else 0
    if predicted == 0:
        return (f"expects {describe(case.expect.error) if case.expect.error != 'any' else 'an error'}, but the "
                f"constraint model predicts success on this target: the operator is likely to succeed "
                f"and the case to fail")
    if case.expect.error not in ("any", predicted):
        return f"expects {describe(case.expect.error)}, but the constraint model predicts {describe(predicted)}"
    phase = expected_phase(case, supported_modes)
    if case.expect.phase not in ("any", phase):
        return (f"expects its error from {PHASES[case.expect.phase]}, but the constraint model predicts "
                f"{PHASES[phase]} returns it (write phase: {phase})")
    return None


def check_chip(cases, soc_name: str) -> None:
    """PrmgError, one line naming the chip, when an operator of ``cases`` is not in the op definition of chip
    ``soc_name`` (a run of them there must not pass): an Ascend chip of another family, or of none prmg knows;
    nothing when the runtime names no Ascend chip ("": it cannot say; a runner without a device)."""
    family = soc_family(soc_name)
    if family is None and not soc_name.startswith(ASCEND):
        return
    counts: dict[str, int] = {}
    for case in cases:
        counts[case.op] = counts.get(case.op, 0) + 1
    for op, count in counts.items():
        spec = OPERATORS[op]
        if family not in spec.socs:
            chip = f"{soc_name} ({family})" if family else f"{soc_name} (no op-definition family prmg knows)"
            raise PrmgError(f"the device is an {chip}: {spec.title}'s op definition lists {', '.join(spec.socs)} "
                            f"only, so its {plural(count, 'case')} cannot run here (run them on one of those chips, "
                            f"or select other operators' cases)")


def on_chip(case: Case, supported_modes: set[int] | frozenset[int], soc: str | None) -> tuple[Case, str]:
    """``case`` as judged on chip family ``soc`` (``targets``), and what that changed: the case itself when the
    chip's rules predict the status the reference chip's do (an unknown chip: the reference's), else the case
    expecting the chip's prediction in its phase, its known defect dropped (a defect of the 950's tiling), with a
    note saying so."""
    if soc is None or soc == REFERENCE_SOC:
        return case, ""
    here, there = expected_status(case, supported_modes, soc), expected_status(case, supported_modes)
    phase = expected_phase(case, supported_modes, soc)
    if here == there and (here == 0 or phase == expected_phase(case, supported_modes)):
        return case, ""
    expect = Expect() if here == 0 else Expect(here, phase)
    said = "success" if here == 0 else describe(here)
    return (replace(case, expect=expect, known_defect=None),
            f"on {soc} the operator's rules give {said} where the 950's give "
            f"{'success' if there == 0 else describe(there)}: judged by {soc}'s")


def graph_case(case: Case, supported_modes: set[int] | frozenset[int], soc: str | None = None,
               build: str | None = None) -> Case | str:
    """``case`` as graph mode must answer it, or why it has none (a text), on chip family ``soc`` for ``build``
    (None: the reference chip, the latest build; ``violation_details``).

    A pass case stays one. A case expecting an error expects, in GE's terms, the refusal of the first rule it
    breaks (``OperatorSpec.graph``: the phase and GE's status; ``error: any`` any refusal of a refusing phase),
    or any refusal when the model predicts success (the known defects). A known defect's status becomes GE's
    (``status.graph_status``). The case has no graph form when its first broken rule has none, and the text says
    why (``GraphIR.refusals``: a strided dy, which GE's dense tensors cannot express). A case whose first broken rule is
    the aclnn path's alone is answered as the graph's tiling reads it (``GraphReading``, ``_read_in_graph``: a slice
    list of no value, read past its end as ``grad.PAST_THE_LIST``, or the forward's as [0, D)).
    A pass case whose in-place tensor has no elements has no certain answer either when the tiling refuses it
    (``GraphIR.tiling_rules``): nnopbase runs no tiling for it, GE may."""
    defect = case.known_defect
    if defect is not None and defect.status:
        defect = replace(defect, status=graph_status(defect.status))
    if case.expect.success:
        spec = OPERATORS[case.op]
        refused = [found for found in spec.graph.tiling_rules(case, supported_modes) if not found.skippable] \
            if 0 in case.shape and spec.graph.tiling_rules else []
        if refused:
            return (f"graph mode has no certain answer for this case: {spec.tensor} has no elements, for which the "
                    f"aclnn path's nnopbase runs no tiling, but the tiling refuses the case when it runs "
                    f"('{refused[0].rule}': {spec.rule_reasons[refused[0].rule]}; upstream's own tiling test at "
                    f"2b888cdb refuses a [-1, 0) slice on a dy of B = 0), and whether GE runs it for such a graph "
                    f"only a real GE can tell")
        return replace(case, known_defect=defect)
    found = violation_details(case, supported_modes, soc, build)
    refusal = OPERATORS[case.op].graph.refusal(found[0].rule) if found else None
    if isinstance(refusal, GraphReading):
        return _read_in_graph(case, refusal, supported_modes, soc, build)
    if isinstance(refusal, str):
        return (f"graph mode has no form of this case: its status comes from '{found[0].rule}' "
                f"({OPERATORS[case.op].rule_reasons[found[0].rule]}), and {refusal}")
    expect = Expect("any", "any") if refusal is None or case.expect.error == "any" else \
        Expect(refusal.code, refusal.phase)
    return replace(case, expect=expect, known_defect=defect)
