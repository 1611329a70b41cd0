"""Judging one launch: status, the in-place contract, the slice by its precision standard, warnings.

``judge(case, inputs, outcome, standard, tolerance)`` checks, in this order:

1. the status: success when the case expects it, else exactly the expected error (or any refusal for
   ``error: any``) from the phase the case names, never a device fault nor a runtime or device status
   (``status_mismatch``);
2. the in-place contract, whatever the status: after a refused call the in-place tensor must be
   bit-identical to its input (``outcome.dy_changed``, compared on the device storage itself); the guard
   zones of every buffer and of the workspace intact, cos and sin unchanged (``outcome.contract_violations``);
3. after an expected success, outside the slice ``[start, end)`` the result is bit-identical to the input;
4. inside the slice the case's standard decides (``standards.STANDARDS``); non-finite elements are judged
   apart: under ``default`` by ``nonfinite.py`` (only what a float32 evaluation produces), under the
   other standards equal to the golden rounded to the tensor's dtype (NaN for NaN, the same infinity);
5. a call that a known defect made the operator accept (``known_defect: {status: SUCCESS, behaves_as: ...}``)
   is judged by points 3 and 4 as the case it then behaves as (``defect_behaviour``): a wrong result is a
   failure beside the defect's status, so that the case is no xfail; one that says nothing of what the operator
   then computes leaves the result unjudged, a warning (``KnownDefect.unjudged``) that ``--strict`` fails.

Under ``default`` a large result is first judged in one pass over cache-sized chunks of rows
(``default_pass.fast_default``: the compiled ``native`` scan, else numpy blocks), which computes exactly what points 3
and 4 compute and stops at the first wrong element; only then do the whole-array checks run, and they
explain the failure. ``tests/test_perf_equivalence.py`` holds the two to the same verdicts. The compiled scan also
counts the error balance's distinct departures and finds whether a kernel flipping the sign of sin fails (the
weak-case check), with the golden at hand (``default_pass._native_extras``).

Each problem has a kind (``PROBLEM_KINDS``), so that a known defect can say which one it expects.
A passing case whose input already passes (a kernel that does nothing would pass too, e.g. an all-NaN
dy or cos = 1, sin = 0) gets a warning, and so does one whose sin is alike at both lanes of every pair (a
RoPE table: a kernel swapping partners' sin passes it). A failure says what is wrong: the worst elements with
their ``(b, s, n, d)`` index, expected and actual values and errors, where the wrong elements are
(``diagnosis.localise``), and a coarse error map for pictures.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass, field, replace
from typing import Mapping

import numpy as np

from . import default_pass, diagnosis, nonfinite
from .. import error_balance
from ..case import CONTIGUOUS_STORAGE, Case, Expect
from ..dtypes import FLOAT_FORMATS, bits, from_numpy, rounded
from ..inputs.seeded import Inputs
from ..ops import OPERATORS
from ..ops.reference import partners_alike
from ..status import describe, is_refusal
from ..vocab import GRAPH_PHASES, GRAPH_REFUSING, PHASES, WORKSPACE_POISON
from .default_pass import ONE_PASS
from .defects import beyond
from .standards import STANDARDS, Judgement, SliceView, standard_of, standard_parameters
from .standards.default import departure_sides, departures, distinct_balance_counts, group_counts, screen_groups


@dataclass
class Verdict:
    """The judgement of one case.

    status: "passed" | "failed"; message: one line saying why (empty when passed); metrics: the
    standard's key numbers, e.g. {"max_err_ratio": 0.4, "bad": 0}; details: diagnosis lines; warnings:
    what makes a passing case weak; error_map: ``diagnosis.error_map`` of a failed slice ({} otherwise).
    """

    status: str
    message: str = ""
    metrics: dict = field(default_factory=dict)
    details: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    error_map: dict = field(default_factory=dict)
    arrays: dict = field(default_factory=dict, repr=False)   # a failed slice's "golden" (float64) and "score"
    kinds: set = field(default_factory=set)                  # the ``PROBLEM_KINDS`` of what went wrong

    def fail(self, kind: str, text: str) -> None:
        """Record one problem of ``kind`` (a key of ``PROBLEM_KINDS``): the verdict fails, its message grows."""
        self.kinds.add(kind)
        self.status = "failed"
        self.message = "; ".join(filter(None, [self.message, text]))


# What can be wrong with a launch, so that a known defect can name the one it expects (``execute``):
PROBLEM_KINDS = {
    "status": "the operator returned another status than the case expects (or in another phase)",
    "contract": "the in-place contract broke: a guard zone, cos or sin, the tensor outside the slice or "
                "after a refusal, on any launch",
    "result": "the slice is wrong by the case's standard",
    "check": "a golden-free check failed",
    "unexplained": "a golden-free check failed where the golden finds the result right (adjoint in a row the golden "
                   "passes: the other operator wrong there) or judged no value (determinism: launches differ), which "
                   "no wrong-result known defect explains",
    "unjudged": "without the golden, no check of correctness judged the slice",
    "defect_bound": "the slice is wrong beyond what the case's wrong-result known defect bounds",
}


def judge(case: Case, inputs, outcome, standard: str | None = None, tolerance: Mapping[str, float] | None = None, *,
          golden: bool = True, timings: dict | None = None) -> Verdict:
    """Judge one launch's ``outcome`` of ``case`` run on ``inputs`` (module docstring for the order).

    ``standard`` and ``tolerance`` are the case's, already resolved by the caller (``execute.judging``; None:
    ``standards.standard_of``'s default) and already checked where they were read (the case loader, ``--standard``:
    ``standards.check_standard``). Without ``golden`` the slice is not compared with a golden (the
    case's golden-free checks judge it; the contract checks still run). ``timings``, when given, gets
    ``"golden"``: the milliseconds spent computing the golden (see ``default_pass.fast_default``).
    """
    timings = {} if timings is None else timings
    timings["golden"] = 0.0
    standard, tolerance = standard_of(standard), dict(tolerance or {})
    expect = case.expect
    mismatch = status_mismatch(case, outcome)
    verdict = Verdict("passed", details=[f"failed call: {outcome.failed_call}"] if mismatch and outcome.failed_call
                      else [])
    if mismatch or not expect.success:
        verdict.metrics["status"] = int(outcome.status)
    if mismatch:
        verdict.fail("status", mismatch)
    for problem in launch_problems(case, inputs, outcome, outside=False):
        verdict.fail("contract", problem)
    if expect.success and not mismatch:
        with np.errstate(all="ignore"):                       # non-finite values are judged explicitly
            flip_fails = _judge_result(case, inputs, outcome.dy, standard, tolerance, verdict, golden, timings)
        if verdict.status == "passed" and not verdict.warnings and partners_alike_warned(case, inputs):
            verdict.warnings.append(PARTNERS_ALIKE_WARNING)
        own = golden and case.golden                 # the flip by the case's own standard (the one pass's, if it ran)
        if verdict.status == "passed" and not verdict.warnings and not (flip_fails and own) and sign_hidden(
                case, inputs, *((standard, tolerance) if own else (ONE_PASS, {}))):
            verdict.warnings.append(SIGN_HIDDEN_WARNING)
    elif (behaving := defect_behaviour(case, outcome)) is not None:
        _judge_under_defect(behaving, case.known_defect, inputs, outcome, standard, tolerance, verdict, golden,
                            timings)
    elif case.known_defect and outcome.status == 0 and (unjudged := case.known_defect.unjudged()):
        verdict.warnings.append(unjudged)
    return verdict


def defect_behaviour(case: Case, outcome):
    """The case whose golden judges a call that ``case``'s known defect made the operator accept: ``case``
    expecting success, with the fields its ``known_defect.behaves_as`` names; None when the call was not
    accepted (``outcome.status`` is not 0) or the defect names no behaviour."""
    defect = case.known_defect
    if defect is None or defect.behaves_as is None or defect.status != 0 or outcome.status != 0:
        return None
    return replace(case, expect=Expect(), known_defect=None, **dict(defect.behaves_as))


def _judge_under_defect(behaving, defect, inputs, outcome, standard, tolerance, verdict: Verdict, golden: bool,
                        timings: dict) -> None:
    """Judge the result of a call a known defect made the operator accept as ``behaving``'s (``defect_behaviour``):
    what is wrong with it is added to ``verdict`` with its kind, so that the defect is no longer the only thing
    wrong (``execute.known_defect_status``) and the case fails."""
    accepted = Verdict("passed")
    with np.errstate(all="ignore"):
        _judge_result(behaving, inputs, outcome.dy, standard, tolerance, accepted, golden, timings)
    if accepted.kinds:
        verdict.kinds |= accepted.kinds
        verdict.fail(min(accepted.kinds), f"the call the known defect accepts is wrong as {defect.behaviour()} "
                     f"(its behaves_as): {accepted.message}")
    verdict.metrics.update(accepted.metrics)
    verdict.details.extend(accepted.details)
    verdict.warnings.extend(accepted.warnings)
    verdict.error_map, verdict.arrays = accepted.error_map or verdict.error_map, accepted.arrays or verdict.arrays


def judge_result(case: Case, inputs, result: np.ndarray, standard: str | None = None, tolerance=None) -> Verdict:
    """The verdict on ``result``, the in-place tensor after a successful launch of ``case`` on ``inputs``:
    outside the slice bit-identical, inside it by ``standard`` against the golden (what ``judge`` checks after
    the status and the device-side contract)."""
    verdict = Verdict("passed")
    with np.errstate(all="ignore"):
        _judge_result(case, inputs, result, standard_of(standard), dict(tolerance or {}), verdict)
    return verdict


def launch_problems(case: Case, inputs, outcome, outside: bool = True) -> list[str]:
    """The in-place contract of one launch of ``case`` on ``inputs``: the in-place tensor unchanged after a
    refusal, what the runner saw on the device (guard zones, workspace, cos and sin:
    ``outcome.contract_violations``) and, with ``outside``, the tensor bit-identical outside ``[start, end)``
    after a success (the main launch's judge checks that itself, with the slice, in one pass)."""
    problems = []
    if outcome.status != 0 and _changed(inputs.dy, outcome):
        problems.append(f"{OPERATORS[case.op].tensor} changed although the call failed")
    problems.extend(outcome.contract_violations)
    if (outcome.status == 0 and outside and outcome.dy is not None and outcome.dy.shape == inputs.dy.shape
            and outcome.dy.dtype == inputs.dy.dtype):
        outside = diagnosis.outside_changes(inputs.dy, outcome.dy, *(int(v) for v in case.partial_slice))
        if outside:
            problems.append(outside[0])
    return problems


def _changed(before: np.ndarray, outcome) -> bool:
    """Whether the in-place tensor changed: the runner's storage comparison, else (hand-made outcomes)
    ``outcome.dy`` against ``before`` bit for bit (False when nothing comparable was read back)."""
    if outcome.dy_changed is not None:
        return outcome.dy_changed
    after = outcome.dy
    if after is None or before.dtype.itemsize != after.dtype.itemsize or before.size != after.size:
        return False
    return not np.array_equal(bits(before).ravel(), bits(after).ravel())


def status_mismatch(case: Case, outcome) -> str:
    """Why ``outcome``'s status is not what ``case`` expects, or "" when it is.

    Success is expected as status 0. An expected error must be a refusal by the operator itself: returned by
    one of its two calls, in the phase the case names (``Expect.phase``: ``...GetWorkspaceSize`` or the launch,
    either for ``any``), and a status of the refusal families (``status.is_refusal``). A device fault reported
    at ``aclrtSynchronizeStream`` means the kernel ran; a runtime or device status (507015, 507899, 100000...)
    from the operator's own calls means the runtime or the device failed: neither is ever a refusal.
    ``error: any`` takes any refusal, else exactly the expected status. In graph mode (``outcome.path`` "geir",
    the case as ``constraints.graph_case`` makes it) a refusal is any status of a refusing phase
    (``vocab.GRAPH_REFUSING``: GE declined the graph), never one from GE's initialisation or the run.
    """
    expect, status = case.expect, outcome.status
    if expect.success:
        return "" if status == 0 else f"expected success, got {_got(outcome)}"
    wanted = "an error" if expect.error == "any" else describe(expect.error)
    if status == 0:
        return f"expected {wanted}, got {_got(outcome)}"
    if outcome.path == "geir":
        phase, phases = outcome.phase, GRAPH_PHASES
        if phase not in GRAPH_REFUSING:
            return (f"expected {wanted}, got {_got(outcome)} from {outcome.failed_call} "
                    f"({phases.get(phase, 'no phase')}): GE or the device failed, not a refusal of the graph")
    else:
        phase, phases = phase_of(case, outcome.failed_call), PHASES
        if phase is None:
            return (f"expected {wanted}, got {_got(outcome)} from {outcome.failed_call or 'the runtime'}: a device "
                    f"fault after the kernel ran, not a refusal by the operator")
        if not is_refusal(status):
            return (f"expected {wanted}, got {_got(outcome)} from {outcome.failed_call}: a runtime or device "
                    f"status, not a refusal by the operator")
    if expect.error != "any" and status != expect.error:
        return f"expected {wanted}, got {_got(outcome)}"
    if expect.phase not in ("any", phase):
        return (f"expected {wanted} from {phases[expect.phase]}, got it from {phases[phase]} "
                f"({outcome.failed_call})")
    return ""


def phase_of(case: Case, failed_call: str) -> str | None:
    """The phase (a key of ``vocab.PHASES``) whose call ``failed_call`` is for ``case``'s operator, or None when
    it is neither of the operator's two calls (e.g. ``aclrtSynchronizeStream``: a device fault)."""
    op = OPERATORS[case.op]
    return {op.get_workspace: "workspace", op.launch: "launch"}.get(failed_call)


def _got(outcome) -> str:
    """The status ``outcome`` got (in graph mode with its phase), with the operator's message after a failed call."""
    got = describe(outcome.status) + (f" in the {outcome.phase} phase" if outcome.path == "geir" and outcome.phase
                                      else "")
    if outcome.status != 0 and outcome.error_message:
        got += f": {outcome.error_message}"
    return got


def _judge_result(case: Case, inputs, result, standard, tolerance, verdict: Verdict, golden: bool = True,
                  timings: dict | None = None) -> bool:
    """The checks of a successful call: shape, outside the slice, inside the slice (none when the operator's
    call is a no-op: then nothing may change).

    Under ``default`` a result is first judged by ``default_pass.fast_default``; only when that finds something wrong
    (or cannot judge the case) do the whole-array checks below run, which also explain the failure. Returns True when
    that pass found that a kernel flipping the sign of sin fails the case (``_Passed.flip_fails``: ``sign_hidden``
    by this standard and tolerance is then False), else False.
    """
    timings = {} if timings is None else timings
    name = OPERATORS[case.op].tensor
    if result is None:
        verdict.fail("contract", f"no {name} was read back after the call")
        return False
    if result.shape != inputs.dy.shape or result.dtype != inputs.dy.dtype:
        verdict.fail("contract", f"{name} read back as {result.dtype} {result.shape}, expected "
                     f"{inputs.dy.dtype} {inputs.dy.shape}")
        return False
    start, end = (0, 0) if OPERATORS[case.op].no_op(case) else (int(v) for v in case.partial_slice)
    if end > start and golden and standard == ONE_PASS and default_pass.one_pass_first(result.size):
        passed = default_pass.fast_default(case, inputs, result, tolerance, timings)
        if passed is not None:
            verdict.metrics.update(passed.metrics)
            if passed.vacuous:
                verdict.warnings.append(_vacuous_warning(standard))

            @functools.cache                # the balance may ask it twice: its recount, then its groups
            def slice_and_golden():
                return (result[..., start:end].astype(np.float64), OPERATORS[case.op].golden_slice(
                    inputs.dy, inputs.cos, inputs.sin, case.rotary_mode, (start, end)),
                        FLOAT_FORMATS[from_numpy(result.dtype).name])

            _balance_warning(verdict, result[..., start:end].size, (lambda: passed.distinct)
                             if passed.distinct is not None else lambda: distinct_balance_counts(*slice_and_golden()),
                             lambda: departures(*slice_and_golden()), (lambda: passed.sides)
                             if passed.sides is not None else lambda: departure_sides(*slice_and_golden()))
            return passed.flip_fails
        timings["golden"] = 0.0
    outside = diagnosis.outside_changes(inputs.dy, result, start, end)
    changed_outside = None
    if outside:
        summary, lines, count, changed_outside = outside
        verdict.fail("contract", summary)
        verdict.details.extend(lines)
        verdict.metrics["outside_changed"] = count
    if end > start and golden:
        _judge_slice(case, inputs, result, standard, tolerance, verdict, changed_outside, timings)
        return False
    if changed_outside is not None:
        verdict.error_map = diagnosis.error_map(np.zeros(result.shape[:-1] + (0,)), start, result.shape[-1],
                                                changed_outside)
    return False


# A backward whose partner's sin was wrong passed its tests because both sin lanes of each pair were equal (a RoPE
# table): such a case cannot catch it, so it says so (``--strict`` fails it).
PARTNERS_ALIKE_WARNING = ("partners alike: sin is the same at both lanes of every pair (a RoPE table in this mode's "
                          "layout), so a kernel taking each element's own sin where its partner's belongs passes; "
                          "judge such a kernel with tables that differ between partners (uniform draws), or say why "
                          "this case needs them alike (partners_alike: REASON)")


# A case whose own tolerance or values hide the sign of sin (a huge budget_scale or atol, sin tiny against the data)
# passes a kernel that rotates the wrong way: it says so (``--strict`` fails it).
SIGN_HIDDEN_WARNING = ("weak: a kernel with the sign of sin flipped (rotating the wrong way) passes this case: its "
                       "tolerance or its values hide the sign; give it a tighter tolerance or values where sin matters")


# The weak-case check judges the flip on the rows of about this many slice elements at the start first.
SIGN_ROWS_ELEMENTS = 1 << 12


def sign_hidden(case: Case, inputs, standard: str, tolerance: Mapping[str, float] | None = None) -> bool:
    """Whether a kernel flipping the sign of sin passes ``case`` on ``inputs`` by ``standard`` and ``tolerance``: the
    result ``flipped_result`` judged by the standard alone (``_slice_evaluation``, or the one pass's verdict under
    ``default``: ``default_pass.passes``; outside the slice it is the input) on the rows of about
    ``SIGN_ROWS_ELEMENTS`` slice elements at the start (which decide for an ordinary case: the flip fails there),
    then, only when it passes them, by ``judge_result`` on the whole tensor. False for a call that computes nothing
    (an empty slice)."""
    if OPERATORS[case.op].no_op(case):
        return False
    standard = standard_of(standard)
    rows = math.prod(case.shape[:3])
    first = min(rows, max(1, SIGN_ROWS_ELEMENTS // max(case.cos_shape[-1], 1)))
    cut, cut_inputs = (case, inputs) if first == rows else rows_case(case, inputs, np.arange(first))
    flipped = flipped_result(cut, cut_inputs)
    passed = default_pass.passes(cut, cut_inputs, flipped, tolerance) if standard == ONE_PASS else None
    if passed is None:
        judged = _slice_evaluation(cut, cut_inputs, flipped, standard, tolerance)
        passed = judged is not None and not judged[0].failed    # the verdict alone: no diagnosis of a failure
    if not passed:
        return False
    return first == rows or judge_result(case, inputs, flipped_result(case, inputs), standard,
                                         tolerance).status == "passed"


def flipped_result(case: Case, inputs) -> np.ndarray:
    """What a kernel that flips the sign of sin returns: ``inputs.dy`` with the golden of ``-sin`` in the slice, rounded
    once to dy's dtype."""
    start, end = (int(v) for v in case.partial_slice)
    result = inputs.dy.copy()
    with np.errstate(all="ignore"):
        flipped = OPERATORS[case.op].golden_slice(inputs.dy, inputs.cos, -inputs.sin, case.rotary_mode, (start, end))
        result[..., start:end] = rounded(flipped, inputs.dy.dtype)
    return result


def rows_case(case: Case, inputs: Inputs, rows: np.ndarray) -> tuple[Case, Inputs]:
    """``case`` and ``inputs`` cut to the (b, s, n) rows ``rows``, laid out as ``(len(rows), 1, 1, D)`` with the
    cos/sin row each uses (contiguous storage, judged against the golden)."""
    index = np.unravel_index(rows, case.shape[:3])
    tables = np.ravel_multi_index(tuple(np.where(np.array(case.cos_shape[:3])[:, None] == 1, 0, index)),
                                  case.cos_shape[:3])
    picked = (len(rows), 1, 1)
    sub_case = replace(case, shape=picked + (case.shape[-1],), cos_shape=picked + (case.cos_shape[-1],),
                       sin_shape=picked + (case.cos_shape[-1],), **CONTIGUOUS_STORAGE, checks=(), golden=True,
                       known_defect=None, correctness_unchecked=None)
    sub_inputs = Inputs(*(array.reshape(-1, array.shape[-1])[which].reshape(picked + (array.shape[-1],))
                          for array, which in ((inputs.dy, rows), (inputs.cos, tables), (inputs.sin, tables))))
    return sub_case, sub_inputs


def partners_alike_warned(case: Case, inputs) -> bool:
    """Whether ``case`` (a call that computes) runs on a sin alike at both lanes of every pair
    (``reference.partners_alike``), a partner swap then invisible, without saying why (``partners_alike``)."""
    op = OPERATORS[case.op]
    start, end = case.partial_slice
    return (not case.partners_alike and not op.no_op(case) and end - start >= 2
            and partners_alike(op.rotation, np.asarray(inputs.sin), case.rotary_mode))


@dataclass
class _Evaluation:
    """A standard's judgement of one candidate result's slice, with its non-finite elements judged apart."""

    view: SliceView
    judgement: Judgement
    special_wrong: np.ndarray          # flat slice indices of wrong non-finite elements
    special_actual: np.ndarray         # their values (float64)
    special_golden: np.ndarray         # the float64 golden there

    @property
    def failed(self) -> bool:
        """True when the standard or the non-finite rule found a wrong element."""
        return self.judgement.failed or len(self.special_wrong) > 0


def _evaluate(case: Case, inputs, candidate: np.ndarray, golden: np.ndarray, standard, params, dtype) -> _Evaluation:
    """Judge ``candidate`` (the whole in-place tensor) against the float64 ``golden`` slice by ``standard``."""
    start, end = (int(v) for v in case.partial_slice)
    actual = candidate[..., start:end].astype(np.float64)
    golden = golden.copy()
    finite = np.isfinite(actual)
    finite &= np.isfinite(golden)
    non_finite = np.flatnonzero(~finite)
    specials = actual.flat[non_finite], golden.flat[non_finite]
    actual.flat[non_finite] = 0
    golden.flat[non_finite] = 0
    view = SliceView(OPERATORS[case.op], inputs.dy, inputs.cos, inputs.sin, candidate, case.rotary_mode, start,
                     end, dtype, params, actual, golden, non_finite)
    judgement = STANDARDS[standard].judge(view)
    right = _non_finite_right(view, standard, *specials)
    return _Evaluation(view, judgement, non_finite[~right], specials[0][~right], specials[1][~right])


def _vacuous_warning(standard: str) -> str:
    return (f"vacuous: the unchanged input already passes ({standard}): this case cannot tell a working "
            f"kernel from one that does nothing in the slice")


def _balance_warning(verdict: Verdict, elements: int, distinct, departures, sides) -> None:
    """A passing result of ``elements`` slice elements whose errors lean one way beyond chance
    (``error_balance.case_warning``, from the ``default`` standard's counts) gets the warning; where
    ``error_balance.needs_distinct`` says so, ``distinct()`` recounts the distinct (golden, result) pairs first
    (``error_balance.DISTINCT``). A result that does not lean as a whole is held to the same tests within each group
    of its rows and lanes (``error_balance.group_warning`` on ``standards.default.group_counts`` of
    ``departures()``): a recounted one when its distinct counts are enough for a group to lean, a larger one when some
    group of its departures counted with their repeats (``sides()``: ``standards.default.departure_sides``, which the
    compiled pass counts) leans -- a screen, so that a large result pays for its distinct departures only then."""
    if error_balance.needs_distinct(verdict.metrics, elements):
        verdict.metrics.update(zip(error_balance.DISTINCT, distinct()))
    text = error_balance.case_warning(verdict.metrics)
    if not text and elements <= error_balance.RECOUNTED:
        if error_balance.DISTINCT[0] in verdict.metrics and max(
                verdict.metrics[key] for key in error_balance.DISTINCT) >= error_balance.group_floor(1):
            text = error_balance.group_warning(group_counts(*departures()))
    elif not text and error_balance.group_warning(screen_groups(sides())):
        text = error_balance.group_warning(group_counts(*departures()))
    if text:
        verdict.warnings.append(text)


def _judge_slice(case: Case, inputs, result, standard, tolerance, verdict: Verdict, changed_outside,
                 timings: dict | None = None) -> None:
    """Judge the slice of ``result`` against the golden by ``standard`` (fills ``verdict``)."""
    dtype = from_numpy(inputs.dy.dtype).name
    if dtype not in FLOAT_FORMATS:
        verdict.fail("result", f"{OPERATORS[case.op].tensor} dtype {dtype} cannot be judged (float32, float16, "
                     f"bfloat16 only)")
        return
    op = OPERATORS[case.op]
    start, end = (int(v) for v in case.partial_slice)
    began = time.perf_counter()
    try:
        golden = op.golden_slice(inputs.dy, inputs.cos, inputs.sin, case.rotary_mode, (start, end))
    except ValueError as error:
        verdict.fail("result", f"the call succeeded, but there is no golden for these inputs: {error}")
        return
    if timings is not None:
        timings["golden"] = (time.perf_counter() - began) * 1e3
    params = standard_parameters(standard, dtype, tolerance)
    evaluation = _evaluate(case, inputs, result, golden, standard, params, dtype)
    judgement, view, special_wrong = evaluation.judgement, evaluation.view, evaluation.special_wrong
    verdict.metrics.update({key: _plain(value) for key, value in judgement.metrics.items()})
    if len(special_wrong):
        verdict.metrics["non_finite"] = len(special_wrong)
    if not evaluation.failed:
        if not _evaluate(case, inputs, inputs.dy, golden, standard, params, dtype).failed:
            verdict.warnings.append(_vacuous_warning(standard))
        _balance_warning(verdict, view.actual.size, lambda: distinct_balance_counts(view.actual, view.golden,
                                                                                  view.format),
                         lambda: departures(view.actual, view.golden, view.format),
                         lambda: departure_sides(view.actual, view.golden, view.format))
        return
    wrong, score = _wrong_and_score(evaluation)
    outside_special = judgement.bad.copy()             # the bad elements but the non-finite ones, in flat order
    outside_special.flat[special_wrong] = False        # (a mask, not np.setdiff1d: no sort of up to every element)
    candidates = np.flatnonzero(outside_special)
    special_lines = _special_lines(view, result, evaluation)
    where = diagnosis.localise(wrong, start, inputs.cos.shape)
    worst = _worst(view, judgement, candidates if len(candidates) or not judgement.failed else None)
    count = len(special_wrong)
    reasons = ([f"{count} non-finite mismatch{'es' * (count > 1)}"] if count else []) \
        + ([judgement.reason] if judgement.failed else [])
    poison = [line for line in special_lines if WORKSPACE_NOTE in line][:1]      # the one line says it, not -v only
    verdict.fail("result", "; ".join(reasons + poison + where + (special_lines + worst)[:1]))
    defect = case.known_defect
    if defect is not None and defect.status is None:
        broken = beyond(defect.bounds, result[..., start:end].astype(np.float64), golden, wrong, view.format)
        for text in broken:
            verdict.fail("defect_bound", f"beyond the known defect: {text}")
        if not broken:
            _outside_the_pattern(case, inputs, result, golden, standard, tolerance, verdict)
    verdict.details.extend(special_lines + [f"localisation: {text}" for text in where] + worst)
    verdict.error_map = diagnosis.error_map(score, start, result.shape[-1], changed_outside)
    verdict.error_map["metric"] = judgement.limit_name and f"error/{judgement.limit_name}" or "score"
    verdict.arrays = {"golden": golden, "score": score}


def _outside_the_pattern(case: Case, inputs, result, golden, standard, tolerance, verdict: Verdict) -> None:
    """A wrong-result defect bounded by a ``pattern`` (``defects.PATTERNS``: the last row, odd lanes...) says every
    element outside it is right: ``result`` with the pattern's elements set to the golden rounded to dy's dtype (no
    error there) is judged as a passing result is, and its warnings (the error balance: a kernel rounding toward
    +inf outside the pattern; a vacuous case) are the case's, which ``--strict`` fails (its xfail was green)."""
    from .defects import PATTERNS

    start, end = (int(v) for v in case.partial_slice)
    repaired = result.copy()
    piece = repaired[..., start:end]
    for key, value in case.known_defect.bounds:
        if key == "pattern":
            allowed = PATTERNS[value][1](piece.shape)
            piece[allowed] = rounded(golden[allowed], result.dtype)
            outside = Verdict("passed")
            _judge_result(replace(case, known_defect=None), inputs, repaired, standard, tolerance, outside)
            verdict.warnings.extend(f"outside the known defect's pattern {value}: {text}" for text in outside.warnings)


def _wrong_and_score(evaluation: _Evaluation) -> tuple[np.ndarray, np.ndarray]:
    """Per slice element: whether it is wrong (by the standard or the non-finite rule), and its score, the
    error over what the standard allows (``judgement.score``), at least ``1 + 1e-9`` where it is wrong."""
    judgement = evaluation.judgement
    wrong = judgement.bad.copy()
    wrong.flat[evaluation.special_wrong] = True
    score = np.where(wrong, np.maximum(np.nan_to_num(judgement.score, nan=np.inf), 1.0 + 1e-9), judgement.score)
    return wrong, score


def slice_arrays(case: Case, inputs, result, standard: str, tolerance: Mapping[str, float] | None = None) -> dict:
    """``{"golden": the float64 golden of the slice, "score": per element error/limit}`` of a successful launch
    whose slice passed but whose case failed otherwise (a contract breach: a guard zone, cos changed), for
    ``--save-failures``; ``{}`` where the case has no golden (an expected error, an empty slice, a result of
    the wrong shape, inputs with no golden)."""
    if (not case.expect.success or OPERATORS[case.op].no_op(case) or result is None or result.shape != inputs.dy.shape
            or result.dtype != inputs.dy.dtype):
        return {}
    judged = _slice_evaluation(case, inputs, result, standard, tolerance)
    if judged is None:
        return {}
    evaluation, golden = judged
    with np.errstate(all="ignore"):
        return {"golden": golden, "score": _wrong_and_score(evaluation)[1]}


def _slice_evaluation(case: Case, inputs, result, standard: str,
                      tolerance: Mapping[str, float] | None) -> tuple[_Evaluation, np.ndarray] | None:
    """(``_evaluate`` of ``result``'s slice by ``standard``, the float64 golden of the slice), without explaining a
    failure; None where there is no golden (a dtype other than the float formats, inputs with no golden)."""
    op, dtype = OPERATORS[case.op], from_numpy(inputs.dy.dtype).name
    if dtype not in FLOAT_FORMATS:
        return None
    start, end = (int(v) for v in case.partial_slice)
    with np.errstate(all="ignore"):
        try:
            golden = op.golden_slice(inputs.dy, inputs.cos, inputs.sin, case.rotary_mode, (start, end))
        except ValueError:
            return None
        return _evaluate(case, inputs, result, golden, standard,
                         standard_parameters(standard, dtype, dict(tolerance or {})), dtype), golden


def _non_finite_right(view: SliceView, standard: str, actual: np.ndarray, golden: np.ndarray) -> np.ndarray:
    """Per neutralised element: whether its non-finite value is right (module docstring, point 4)."""
    if not len(view.non_finite):
        return np.zeros(0, bool)
    with np.errstate(over="ignore", invalid="ignore"):
        if standard == ONE_PASS:
            return nonfinite.allowed(actual, _possible_results(view))
        narrowed = rounded(golden, view.x.dtype).astype(np.float64)
        return (np.isnan(actual) & np.isnan(narrowed)) | (np.isinf(narrowed) & (actual == narrowed))


def _possible_results(view: SliceView) -> np.ndarray:
    """``nonfinite.possible_results`` at the neutralised elements (``nonfinite.possible_results_at``)."""
    return nonfinite.possible_results_at(view.op, view.x, view.cos, view.sin, view.mode, view.start, view.end,
                                view.non_finite)


WORKSPACE_NOTE = "the kernel read workspace it never wrote"


def _special_lines(view: SliceView, result: np.ndarray, evaluation: _Evaluation) -> list[str]:
    """Lines for the wrong non-finite elements: the first few, and what a NaN where the golden is finite
    says about the workspace (it was filled with NaN bytes before the launch)."""
    wrong, actual, golden = evaluation.special_wrong, evaluation.special_actual, evaluation.special_golden
    if not len(wrong):
        return []
    lines = [f"{diagnosis.number(actual[i])} at {_index(view, wrong[i])} where the golden is "
             f"{diagnosis.number(golden[i])}" for i in range(min(len(wrong), diagnosis.WORST))]
    if len(wrong) > diagnosis.WORST:
        lines.append(f"... and {len(wrong) - diagnosis.WORST} more non-finite mismatches")
    nan_for_finite = np.isnan(actual) & np.isfinite(golden)
    if nan_for_finite.any():
        patterns = bits(np.ascontiguousarray(result[..., view.start:view.end])).reshape(-1)[wrong[nan_for_finite]]
        poisoned = int((patterns == np.iinfo(patterns.dtype).max).sum())          # every byte 0xFF
        note = (f"{poisoned} of them hold the workspace poison (every byte 0x{WORKSPACE_POISON:02X}): "
                f"{WORKSPACE_NOTE}" if poisoned else
                f"the workspace was filled with NaN (bytes 0x{WORKSPACE_POISON:02X}) before the launch: NaN where "
                f"the golden is finite is what reading workspace the kernel never wrote looks like")
        lines.append(f"{int(nan_for_finite.sum())} NaN where the golden is finite; {note}")
    return lines


def _worst(view: SliceView, judgement: Judgement, candidates: np.ndarray | None) -> list[str]:
    """Lines for the (at most ``diagnosis.WORST``) elements with the highest score among ``candidates``
    (None: all)."""
    score = judgement.score.ravel()
    if candidates is None:
        candidates = np.arange(score.size)
    if len(candidates) > diagnosis.WORST:
        candidates = candidates[np.argpartition(-score[candidates], diagnosis.WORST)[:diagnosis.WORST]]
    candidates = candidates[np.argsort(-score[candidates], kind="stable")]
    lines = []
    for flat in candidates:
        expected, actual = judgement.expected.flat[flat], view.actual.flat[flat]
        line = (f"worst at {_index(view, flat)}: expected {diagnosis.number(expected)}, got "
                f"{diagnosis.number(actual)}, error {abs(actual - expected):.3g}")
        if judgement.limit is not None:
            line += f", {judgement.limit_name} {judgement.limit.flat[flat]:.3g}"
        lines.append(line)
    return lines


def _index(view: SliceView, flat: int) -> str:
    """``(b, s, n, d)=(...)`` of flat slice element ``flat``, ``d`` counted in the tensor's last axis."""
    b, s, n, lane = np.unravel_index(int(flat), view.actual.shape)
    return f"(b, s, n, d)=({b}, {s}, {n}, {view.start + lane})"


def _plain(value):
    """A JSON-safe metric: int or finite float; None for an infinite or NaN float."""
    if isinstance(value, (int, np.integer)):
        return int(value)
    value = float(value)
    return value if math.isfinite(value) else None
