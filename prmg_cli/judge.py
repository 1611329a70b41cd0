"""Judging one launch: status, the in-place contract, the slice by its precision standard, warnings.

``judge(case, inputs, outcome, standard, tolerance)`` checks, in this order:

1. the status: success when the case expects it, else exactly the expected error (or any error for
   ``error: any``) from the phase the case names, never a device fault (``status_mismatch``);
2. the in-place contract, whatever the status: after a refused call the in-place tensor must be
   bit-identical to its input (``outcome.dy_changed``, compared on the device storage itself); the guard
   zones of every buffer and of the workspace intact, cos and sin unchanged (``outcome.contract_violations``);
3. after an expected success, outside the slice ``[start, end)`` the result is bit-identical to the input;
4. inside the slice the case's standard decides (``standards.py``); non-finite elements are judged
   apart: under ``default`` by ``nonfinite.py`` (only what a float32 evaluation produces), under the
   other standards equal to the golden rounded to the tensor's dtype (NaN for NaN, the same infinity).

Under ``default`` a large result is first judged in one pass over cache-sized chunks of rows
(``_fast_default``: the compiled ``native`` scan, else numpy blocks), which computes exactly what points 3
and 4 compute and stops at the first wrong element; only then do the whole-array checks run, and they
explain the failure. ``tests/test_perf_equivalence.py`` holds the two to the same verdicts.

Each problem has a kind (``PROBLEM_KINDS``), so that a known defect can say which one it expects.
A passing case whose input already passes (a kernel that does nothing would pass too, e.g. an all-NaN
dy or cos = 1, sin = 0) gets a warning. A failure says what is wrong: the worst elements with their
``(b, s, n, d)`` index, expected and actual values and errors, where the wrong elements are
(``diagnosis.localise``), and a coarse error map for pictures.
"""

from __future__ import annotations

import ctypes
import functools
import math
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from . import diagnosis, native, nonfinite, reference
from .dtypes import bits, from_numpy
from .ops import OPERATORS
from .dtypes import FLOAT_FORMATS, Format
from .standards import DEFAULT_STANDARD, FTZ_FLOOR, STANDARDS, U32, UNDERFLOW_FLOOR, Judgement, SliceView, check_standard, standard_parameters
from .standards.default import STANDARD as _DEFAULT, default_budget_into, rounding_margins
from .status import describe
from .vocab import PHASES, WORKSPACE_POISON

ONE_PASS = _DEFAULT.name    # the standard a large result is judged by in one pass (``_fast_default``)


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
    "unjudged": "without the golden, no check of correctness judged the slice",
}


def judge(case, inputs, outcome, standard: str = DEFAULT_STANDARD, tolerance: Mapping[str, float] | None = None, *,
          golden: bool = True, timings: dict | None = None) -> Verdict:
    """Judge one launch's ``outcome`` of ``case`` run on ``inputs`` (module docstring for the order).

    ``standard`` and ``tolerance`` are the case's, already resolved by the caller; an unknown standard
    or parameter raises ``PrmgError``. Without ``golden`` the slice is not compared with a golden (the
    case's golden-free checks judge it; the contract checks still run). ``timings``, when given, gets
    ``"golden"``: the milliseconds spent computing the golden (see ``_fast_default``).
    """
    timings = {} if timings is None else timings
    timings["golden"] = 0.0
    tolerance = dict(tolerance or {})
    check_standard(standard, tolerance, file=case.source, case=case.name)
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
            _judge_result(case, inputs, outcome.dy, standard, tolerance, verdict, golden, timings)
    return verdict


def judge_result(case, inputs, result: np.ndarray, standard: str = DEFAULT_STANDARD, tolerance=None) -> Verdict:
    """The verdict on ``result``, the in-place tensor after a successful launch of ``case`` on ``inputs``:
    outside the slice bit-identical, inside it by ``standard`` against the golden (what ``judge`` checks after
    the status and the device-side contract)."""
    verdict = Verdict("passed")
    with np.errstate(all="ignore"):
        _judge_result(case, inputs, result, standard, dict(tolerance or {}), verdict)
    return verdict


def launch_problems(case, inputs, outcome, outside: bool = True) -> list[str]:
    """The in-place contract of one launch of ``case`` on ``inputs``: the in-place tensor unchanged after a
    refusal, what the runner saw on the device (guard zones, workspace, cos and sin:
    ``outcome.contract_violations``) and, with ``outside``, the tensor bit-identical outside ``[start, end)``
    after a success (the main launch's judge checks that itself, with the slice, in one pass)."""
    problems = []
    if outcome.status != 0 and _changed(inputs.dy, outcome):
        problems.append(f"{OPERATORS[case.op].tensor} changed although the call failed")
    problems.extend(outcome.contract_violations)
    if outcome.status == 0 and outside and outcome.dy is not None and outcome.dy.shape == inputs.dy.shape and outcome.dy.dtype == inputs.dy.dtype:
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


def status_mismatch(case, outcome) -> str:
    """Why ``outcome``'s status is not what ``case`` expects, or "" when it is.

    Success is expected as status 0. An expected error must be returned by the operator itself, in the
    phase the case names (``Expect.phase``: ``...GetWorkspaceSize`` or the launch, either for ``any``): a
    device fault reported at ``aclrtSynchronizeStream`` means the kernel ran, and is never a refusal.
    ``error: any`` takes any non-zero status, else exactly the expected one.
    """
    expect, status = case.expect, outcome.status
    if expect.success:
        return "" if status == 0 else f"expected success, got {_got(outcome)}"
    wanted = "an error" if expect.error == "any" else describe(expect.error)
    if status == 0:
        return f"expected {wanted}, got {_got(outcome)}"
    phase = phase_of(case, outcome.failed_call)
    if phase is None:
        return (f"expected {wanted}, got {_got(outcome)} from {outcome.failed_call or 'the runtime'}: a device "
                f"fault after the kernel ran, not a refusal by the operator")
    if expect.error != "any" and status != expect.error:
        return f"expected {wanted}, got {_got(outcome)}"
    if expect.phase not in ("any", phase):
        return (f"expected {wanted} from {PHASES[expect.phase]}, got it from {PHASES[phase]} "
                f"({outcome.failed_call})")
    return ""


def phase_of(case, failed_call: str) -> str | None:
    """The phase (a key of ``vocab.PHASES``) whose call ``failed_call`` is for ``case``'s operator, or None when
    it is neither of the operator's two calls (e.g. ``aclrtSynchronizeStream``: a device fault)."""
    op = OPERATORS[case.op]
    return {op.get_workspace: "workspace", op.launch: "launch"}.get(failed_call)


def _got(outcome) -> str:
    """The status ``outcome`` got, with the operator's message after a failed call."""
    got = describe(outcome.status)
    if outcome.status != 0 and outcome.error_message:
        got += f": {outcome.error_message}"
    return got


def _judge_result(case, inputs, result, standard, tolerance, verdict: Verdict, golden: bool = True,
                  timings: dict | None = None) -> None:
    """The checks of a successful call: shape, outside the slice, inside the slice (none when the operator's
    call is a no-op: then nothing may change).

    Under ``default`` a result is first judged by ``_fast_default``; only when that finds something wrong
    (or cannot judge the case) do the whole-array checks below run, which also explain the failure.
    """
    timings = {} if timings is None else timings
    name = OPERATORS[case.op].tensor
    if result is None:
        verdict.fail("contract", f"no {name} was read back after the call")
        return
    if result.shape != inputs.dy.shape or result.dtype != inputs.dy.dtype:
        verdict.fail("contract", f"{name} read back as {result.dtype} {result.shape}, expected "
                     f"{inputs.dy.dtype} {inputs.dy.shape}")
        return
    start, end = (0, 0) if OPERATORS[case.op].no_op(case) else (int(v) for v in case.partial_slice)
    if end > start and golden and standard == ONE_PASS and result.size >= _FAST_MIN_ELEMENTS:
        passed = _fast_default(case, inputs, result, tolerance, timings)
        if passed is not None:
            verdict.metrics.update(passed.metrics)
            if passed.vacuous:
                verdict.warnings.append(_vacuous_warning(standard))
            return
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
        return
    if end > start and np.array_equal(bits(result[..., start:end]), bits(inputs.dy[..., start:end])):
        verdict.warnings.append(UNCHANGED_WARNING)
    if changed_outside is not None:
        verdict.error_map = diagnosis.error_map(np.zeros(result.shape[:-1] + (0,)), start, result.shape[-1],
                                                changed_outside)


# Without the golden (``--no-golden``, ``golden: false``) a kernel that does nothing, with a forward that does
# nothing, passes every check (identity is deterministic, self-adjoint and its own inverse). A correct kernel
# may also leave a slice unchanged (cos = 1 and sin tiny against the data), so this is a warning, not a failure.
UNCHANGED_WARNING = ("unchanged: the slice came back bit for bit as it went in; without the golden the checks "
                     "cannot tell this from a kernel that does nothing (judge with the golden, or --strict)")


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


def _evaluate(case, inputs, candidate: np.ndarray, golden: np.ndarray, standard, params, dtype) -> _Evaluation:
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


def _judge_slice(case, inputs, result, standard, tolerance, verdict: Verdict, changed_outside,
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
        return
    wrong, score = _wrong_and_score(evaluation)
    candidates = np.setdiff1d(np.flatnonzero(judgement.bad), special_wrong)
    special_lines = _special_lines(view, result, evaluation)
    where = diagnosis.localise(wrong, start, inputs.cos.shape)
    worst = _worst(view, judgement, candidates if len(candidates) or not judgement.failed else None)
    count = len(special_wrong)
    reasons = ([f"{count} non-finite mismatch{'es' * (count > 1)}"] if count else []) \
        + ([judgement.reason] if judgement.failed else [])
    verdict.fail("result", "; ".join(reasons + where + (special_lines + worst)[:1]))
    verdict.details.extend(special_lines + [f"localisation: {text}" for text in where] + worst)
    verdict.error_map = diagnosis.error_map(score, start, result.shape[-1], changed_outside)
    verdict.error_map["metric"] = judgement.limit_name and f"error/{judgement.limit_name}" or "score"
    verdict.arrays = {"golden": golden, "score": score}


def _wrong_and_score(evaluation: _Evaluation) -> tuple[np.ndarray, np.ndarray]:
    """Per slice element: whether it is wrong (by the standard or the non-finite rule), and its score, the
    error over what the standard allows (``judgement.score``), at least ``1 + 1e-9`` where it is wrong."""
    judgement = evaluation.judgement
    wrong = judgement.bad.copy()
    wrong.flat[evaluation.special_wrong] = True
    score = np.where(wrong, np.maximum(np.nan_to_num(judgement.score, nan=np.inf), 1.0 + 1e-9), judgement.score)
    return wrong, score


def slice_arrays(case, inputs, result, standard: str, tolerance: Mapping[str, float] | None = None) -> dict:
    """``{"golden": the float64 golden of the slice, "score": per element error/limit}`` of a successful launch
    whose slice passed but whose case failed otherwise (a contract breach: a guard zone, cos changed), for
    ``--save-failures``; ``{}`` where the case has no golden (an expected error, an empty slice, a result of
    the wrong shape, inputs with no golden)."""
    op, dtype = OPERATORS[case.op], from_numpy(inputs.dy.dtype).name
    if (not case.expect.success or op.no_op(case) or result is None or result.shape != inputs.dy.shape
            or result.dtype != inputs.dy.dtype or dtype not in FLOAT_FORMATS):
        return {}
    start, end = (int(v) for v in case.partial_slice)
    with np.errstate(all="ignore"):
        try:
            golden = op.golden_slice(inputs.dy, inputs.cos, inputs.sin, case.rotary_mode, (start, end))
        except ValueError:
            return {}
        evaluation = _evaluate(case, inputs, result, golden, standard,
                               standard_parameters(standard, dtype, dict(tolerance or {})), dtype)
        return {"golden": golden, "score": _wrong_and_score(evaluation)[1]}


def _non_finite_right(view: SliceView, standard: str, actual: np.ndarray, golden: np.ndarray) -> np.ndarray:
    """Per neutralised element: whether its non-finite value is right (module docstring, point 4)."""
    if not len(view.non_finite):
        return np.zeros(0, bool)
    with np.errstate(over="ignore", invalid="ignore"):
        if standard == ONE_PASS:
            return nonfinite.allowed(actual, _possible_results(view))
        rounded = golden.astype(view.x.dtype).astype(np.float64)
        return (np.isnan(actual) & np.isnan(rounded)) | (np.isinf(rounded) & (actual == rounded))


def _possible_results(view: SliceView) -> np.ndarray:
    """``nonfinite.possible_results`` at the neutralised elements (``_possible_results_at``)."""
    return _possible_results_at(view.op, view.x, view.cos, view.sin, view.mode, view.start, view.end,
                                view.non_finite)


def _possible_results_at(op, x, cos, sin, mode: int, start: int, end: int, flat: np.ndarray) -> np.ndarray:
    """``nonfinite.possible_results`` at the slice elements ``flat`` (flat indices into ``(B, S, N, L)``):
    their operands gathered from the inputs by the operator's ``lane_terms`` (cos/sin broadcast over B, S, N)."""
    kept, partner, sign, cos_lane, sin_lane = op.lane_terms(mode, end - start)
    b, s, n, lane = np.unravel_index(flat, x.shape[:3] + (end - start,))
    rows = tuple(np.where(np.asarray(cos.shape[axis]) == 1, 0, index) for axis, index in enumerate((b, s, n)))
    x = x[..., start:end]
    return nonfinite.possible_results(cos[rows + (cos_lane[lane],)], x[b, s, n, kept[lane]],
                                      sin[rows + (sin_lane[lane],)], x[b, s, n, partner[lane]], sign[lane],
                                      x.dtype)


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
        note = (f"{poisoned} of them hold the workspace poison (every byte 0x{WORKSPACE_POISON:02X}): the kernel "
                f"read workspace it never wrote" if poisoned else
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


# ---------------------------------------------------------------------------------------------------
# The default standard block by block: one pass that proves a result right, or hands it to the above

# Threads sharing the blocks of a large slice (numpy releases the GIL in its loops), and the fewest
# blocks worth giving a thread.
_MIN_BLOCKS_PER_WORKER = 4
# Smaller tensors are judged by the whole-array checks directly (the one pass would save nothing there).
_FAST_MIN_ELEMENTS = 1 << 12


@dataclass
class _Passed:
    """What ``_fast_default`` found on a result it proved right: the default standard's metrics, and
    whether the unchanged input passes as well."""

    metrics: dict
    vacuous: bool


class _Shared:
    """Flags the threads of one pass share: ``stop`` (something is wrong: the result fails) and
    ``input_fails`` (some element of the unchanged input is over budget: the case is not vacuous)."""

    def __init__(self) -> None:
        self.stop = False
        self.input_fails = False


class _SliceScan:
    """One thread's part of ``_fast_default``: per block of rows, the golden and magnitude
    (``reference.TermsEvaluator``), the budget (``standards.default_budget_into``), the result's and the
    input's errors against it (and the result's in ulps: ``rounding_margins``), and the bits outside the slice
    -- all in buffers that stay in cache."""

    _BUDGET, _SCRATCH, _ACTUAL, _ERROR, _HALF = range(5)

    def __init__(self, terms: reference.SliceTerms, result: np.ndarray, fmt: Format, scale: float,
                 shared: _Shared):
        self.terms, self.result, self.fmt, self.scale, self.shared = terms, result, fmt, scale, shared
        self.evaluator = terms.evaluator()
        self.buffers = reference._huge_page_buffers(5, terms.block_size)
        self.flags = np.empty(terms.block_size, bool)
        self.widen = reference.Widener(terms.block_size)
        self.failed = False
        self.max_ratio = 0.0
        self.max_error = 0.0
        self.max_ulps = 0.0
        self.max_beyond = 0.0
        self.specials: list[np.ndarray] = []            # flat slice indices of non-finite elements
        self.special_values: list[np.ndarray] = []      # the result there
        self.input_specials: list[np.ndarray] = []      # the same for the unchanged input
        self.input_values: list[np.ndarray] = []
        self.seconds = 0.0

    @property
    def golden_seconds(self) -> float:
        return self.evaluator.golden_seconds

    def _real(self, role: int, shape: tuple[int, ...]) -> np.ndarray:
        return self.buffers[role][:math.prod(shape)].reshape(shape)

    def run(self, blocks) -> None:
        began = time.perf_counter()
        with np.errstate(all="ignore"):          # numpy's error state is per thread
            for index, first_row in blocks:
                if self.shared.stop:
                    break
                if not self._block(index, first_row):
                    self.failed = self.shared.stop = True
        self.seconds += time.perf_counter() - began

    def _block(self, index: tuple[slice, ...], first_row: int) -> bool:
        """Judge one block; False when something in it is wrong."""
        terms = self.terms
        start, end, length = terms.start, terms.end, terms.length
        after = self.result[index]
        if not _outside_same(terms.x[index], after, start, end):
            return False
        x, golden, magnitude = self.evaluator.evaluate(index)
        shape = golden.shape
        budget = default_budget_into(golden, magnitude, self.fmt, self.scale, self._real(self._BUDGET, shape),
                                     self._real(self._SCRATCH, shape))
        actual = self.widen(after[..., start:end], self._real(self._ACTUAL, shape))
        error, work = self._real(self._ERROR, shape), self._real(self._SCRATCH, shape)
        flags = self.flags[:error.size].reshape(shape)
        np.subtract(actual, golden, out=error)
        np.abs(error, out=error)
        np.divide(error, budget, out=work)
        largest = float(work.max())
        special = None
        if not math.isfinite(largest):                 # a non-finite actual or golden (budget > 0 elsewhere)
            special = _set_apart(actual, golden, error)
            work[special] = 0.0
            largest = float(work.max())
        # error > budget implies error / budget >= 1 (division rounds monotonically): below 1, none is over
        if largest >= 1.0:
            np.greater(error, budget, out=flags)
            if special is not None:
                flags[special] = False
            if flags.any():
                return False
        if special is not None:
            local = np.flatnonzero(special)
            self.specials.append(first_row * length + local)
            self.special_values.append(actual.reshape(-1)[local])
        self.max_ratio = max(self.max_ratio, largest)
        self.max_error = max(self.max_error, float(error.max()))
        in_ulps, beyond = rounding_margins(error, golden, budget, self.fmt, self._real(self._HALF, shape), work,
                                           special)
        self.max_ulps, self.max_beyond = max(self.max_ulps, in_ulps), max(self.max_beyond, beyond)
        if not self.shared.input_fails:
            self._input_block(x, golden, budget, work, flags, first_row)
        return True

    def _input_block(self, x, golden, budget, work, flags, first_row: int) -> None:
        """The vacuous check on one block: is the unchanged input ``x`` within budget of the golden?"""
        np.subtract(x, golden, out=work)
        np.abs(work, out=work)
        special = None if math.isfinite(work.max()) else _set_apart(x, golden, work)
        np.greater(work, budget, out=flags)
        if special is not None:
            flags[special] = False
        if flags.any():
            self.shared.input_fails = True
        elif special is not None:
            local = np.flatnonzero(special)
            self.input_specials.append(first_row * self.terms.length + local)
            self.input_values.append(x.reshape(-1)[local])


def _run_scans(tasks: list) -> None:
    """Call every one of ``tasks``, the first on this thread and the others on threads of their own."""
    if len(tasks) == 1:
        tasks[0]()
        return
    with ThreadPoolExecutor(len(tasks) - 1) as pool:
        helpers = [pool.submit(task) for task in tasks[1:]]
        tasks[0]()
        for helper in helpers:
            helper.result()


# Slice elements from which the compiled scan is split over ``native.HOST_THREADS`` threads.
_NATIVE_SPLIT = 1 << 17


class _NativeScan:
    """One thread's part of the compiled ``_fast_default`` (``native.SOURCE``, ``prmg_judge_rows``): the same
    judgement as ``_SliceScan``'s over a range of rows, with the same findings as attributes."""

    def __init__(self, lib, args, shared_stop, rows: tuple[int, int]):
        capacity = native.SPECIAL_CAPACITY
        self.lib, self.args, self.rows, self.shared_stop = lib, args, rows, shared_stop
        self.arrays = [np.empty(capacity, np.int64), np.empty(capacity, np.int64), np.empty(capacity),
                       np.empty(capacity)]
        self.out = native.JudgeOut(special_index=self.arrays[0].ctypes.data,
                                   input_special_index=self.arrays[1].ctypes.data,
                                   special_value=self.arrays[2].ctypes.data,
                                   input_special_value=self.arrays[3].ctypes.data)
        self.seconds = 0.0

    def run(self) -> None:
        began = time.perf_counter()
        self.lib.prmg_judge_rows(ctypes.byref(self.args), self.rows[0], self.rows[1], ctypes.byref(self.out))
        self.seconds = time.perf_counter() - began

    def __getattr__(self, name):
        out = self.__dict__["out"]
        found = {"failed": lambda: bool(out.failed), "overflow": lambda: bool(out.overflow),
                 "max_ratio": lambda: out.max_ratio, "max_error": lambda: out.max_error,
                 "max_ulps": lambda: out.max_ulps, "max_beyond": lambda: out.max_beyond,
                 "golden_seconds": lambda: out.golden_seconds,
                 "specials": lambda: [self.arrays[0][:out.specials]],
                 "special_values": lambda: [self.arrays[2][:out.specials]],
                 "input_specials": lambda: [self.arrays[1][:out.input_specials]],
                 "input_values": lambda: [self.arrays[3][:out.input_specials]]}.get(name)
        if found is None:
            raise AttributeError(name)
        return found()


def _native_scans(op, case, x, result, cos, sin, fmt: Format, scale: float, shared: _Shared):
    """The compiled scans of ``_fast_default``, run; None when the helper is missing or cannot take the
    case (the numpy scans then run), or listed more non-finite elements than it has room for."""
    lib = native.library()
    cos_type = native.DTYPE_CODES.get(from_numpy(cos.dtype).name) if cos.dtype == sin.dtype else None
    x_type = native.DTYPE_CODES[from_numpy(x.dtype).name]
    if lib is None or cos_type is None:
        return None
    start, end = (int(v) for v in case.partial_slice)
    length = end - start
    cos, sin = np.ascontiguousarray(cos), np.ascontiguousarray(sin)
    kept, partner, sign, cos_lane, sin_lane = (np.ascontiguousarray(term, np.int64)
                                               for term in op.lane_terms(case.rotary_mode, length))
    sign = np.ascontiguousarray(sign, np.float64)
    stop = ctypes.c_int32(0)
    keep = (x, result, cos, sin, kept, partner, sign, cos_lane, sin_lane, native.half_table())
    args = native.JudgeArgs(
        x=x.ctypes.data, result=result.ctypes.data, cos=cos.ctypes.data, sin=sin.ctypes.data, x_type=x_type,
        cos_type=cos_type, half_table=keep[-1].ctypes.data, rows_s=x.shape[1], rows_n=x.shape[2],
        depth=x.shape[3], start=start, length=length, cos_b=cos.shape[0], cos_s=cos.shape[1], cos_n=cos.shape[2],
        kept=kept.ctypes.data, partner=partner.ctypes.data, cos_lane=cos_lane.ctypes.data,
        sin_lane=sin_lane.ctypes.data, sign=sign.ctypes.data, computation=2 * U32 + U32 * U32,
        half_ulp_scale=2.0 ** -fmt.precision, half_smallest=fmt.smallest / 2, scale=scale, ftz_floor=FTZ_FLOOR,
        underflow_floor=UNDERFLOW_FLOOR, capacity=native.SPECIAL_CAPACITY, stop=ctypes.pointer(stop))
    rows = x.size // x.shape[-1]
    workers = native.HOST_THREADS if rows * length >= _NATIVE_SPLIT else 1
    scans = [_NativeScan(lib, args, stop, (rows * i // workers, rows * (i + 1) // workers)) for i in range(workers)]
    _run_scans([scan.run for scan in scans])
    del keep
    if any(scan.overflow for scan in scans):
        return None
    shared.stop = bool(stop.value) or any(scan.failed for scan in scans)
    shared.input_fails = any(bool(scan.out.input_fails) for scan in scans)
    return scans


def _set_apart(actual: np.ndarray, golden: np.ndarray, error: np.ndarray) -> np.ndarray:
    """The mask of elements where ``actual`` or ``golden`` is not finite, their ``error`` set to 0: such
    elements are judged by ``nonfinite`` (as ``SliceView`` neutralises them)."""
    special = np.isfinite(actual)
    special &= np.isfinite(golden)
    np.logical_not(special, out=special)
    error[special] = 0.0
    return special


def _outside_same(before: np.ndarray, after: np.ndarray, start: int, end: int) -> bool:
    """Whether the rows ``before`` and ``after`` (C-contiguous, same dtype) hold the same bits outside
    ``[start, end)`` of their last axis, compared in the widest words that fit."""
    itemsize, depth = before.dtype.itemsize, before.shape[-1]
    width = 8
    while width > 1 and (start * itemsize % width or end * itemsize % width or depth * itemsize % width):
        width //= 2
    word = np.dtype(f"u{width}")
    head, tail = start * itemsize // width, end * itemsize // width
    old, new = before.view(np.uint8).view(word), after.view(np.uint8).view(word)
    return ((head == 0 or np.array_equal(old[..., :head], new[..., :head]))
            and (tail == old.shape[-1] or np.array_equal(old[..., tail:], new[..., tail:])))


def _fast_default(case, inputs, result: np.ndarray, tolerance, timings: dict) -> _Passed | None:
    """The ``default`` verdict on a result that passes, in one pass over blocks of rows; None when something
    is wrong, or the case is not one this pass judges (then the whole-array checks decide and explain).

    The pass computes, block by block and split over ``native.HOST_THREADS`` threads, exactly what the whole-array
    checks compute: the bits outside the slice, the float64 golden and magnitude, the budget
    (``default_budget_into``), ``|actual - golden|`` and ``|input - golden|`` against it, with the non-finite
    elements set apart for ``nonfinite``, and the errors in ulps (``rounding_margins``) -- so its metrics are
    theirs, bit for bit. It stops at the first wrong block. ``timings["golden"]`` gets the pass's share spent
    widening the input and forming the golden.
    """
    op = OPERATORS[case.op]
    terms_of = op.slice_terms
    x, cos, sin = inputs.dy, inputs.cos, inputs.sin
    try:
        dtype = from_numpy(x.dtype).name
    except KeyError:
        return None
    if terms_of is None or dtype not in FLOAT_FORMATS or not (x.flags.c_contiguous and result.flags.c_contiguous):
        return None
    start, end = (int(v) for v in case.partial_slice)
    try:
        reference._check(x, cos, sin, case.rotary_mode, (start, end))
    except ValueError:
        return None
    if x.size == 0:
        return None
    began = time.perf_counter()
    shared = _Shared()
    scale = standard_parameters(ONE_PASS, dtype, tolerance)["budget_scale"]
    scans = _native_scans(op, case, x, result, cos, sin, FLOAT_FORMATS[dtype], scale, shared)
    if scans is None:
        shared = _Shared()
        terms = terms_of(x, cos, sin, case.rotary_mode, (start, end))
        blocks = terms.blocks
        workers = max(1, min(native.HOST_THREADS, len(blocks) // _MIN_BLOCKS_PER_WORKER))
        shares = [blocks[len(blocks) * i // workers:len(blocks) * (i + 1) // workers] for i in range(workers)]
        scans = [_SliceScan(terms, result, FLOAT_FORMATS[dtype], scale, shared) for _ in shares]
        _run_scans([functools.partial(scan.run, share) for scan, share in zip(scans, shares)])
    busy = sum(scan.seconds for scan in scans)
    share = sum(scan.golden_seconds for scan in scans) / busy if busy else 0.0
    timings["golden"] = (time.perf_counter() - began) * 1e3 * share
    if shared.stop:
        return None
    with np.errstate(all="ignore"):
        if not _specials_right(op, inputs, case, scans, "specials", "special_values"):
            return None
        vacuous = not shared.input_fails and _specials_right(op, inputs, case, scans, "input_specials",
                                                             "input_values")
    metrics = {"max_err_ratio": max(scan.max_ratio for scan in scans), "bad": 0,
               "max_abs_err": max(scan.max_error for scan in scans),
               "max_err_ulp": max(scan.max_ulps for scan in scans),
               "beyond_rounding": max(scan.max_beyond for scan in scans)}
    return _Passed(metrics, vacuous)


def _specials_right(op, inputs, case, scans, indices: str, values: str) -> bool:
    """Whether every non-finite element the scans set apart (attributes ``indices``, ``values``) is right
    by the ``nonfinite`` rule."""
    flat = [part for scan in scans for part in getattr(scan, indices)]
    if not flat:
        return True
    flat, actual = np.concatenate(flat), np.concatenate([part for scan in scans for part in getattr(scan, values)])
    start, end = (int(v) for v in case.partial_slice)
    possible = _possible_results_at(op, inputs.dy, inputs.cos, inputs.sin, case.rotary_mode, start, end, flat)
    return bool(nonfinite.allowed(actual, possible).all())
