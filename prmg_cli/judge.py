"""Judging one launch: status, the in-place contract, the slice by its precision standard, warnings.

``judge(case, inputs, outcome, standard, tolerance)`` checks, in this order:

1. the status: success when the case expects it, else exactly the expected error (or any error for
   ``error: any``); after a refused call the in-place tensor must be bit-identical to its input
   (``outcome.dy_changed``, compared on the device storage itself);
2. the device-side contract (guard zones of every buffer and of the workspace intact, cos and sin
   unchanged: ``outcome.contract_violations``);
3. outside the slice ``[start, end)`` the result is bit-identical to the input;
4. inside the slice the case's standard decides (``standards.py``); non-finite elements are judged
   apart: under ``default`` by ``nonfinite.py`` (only what a float32 evaluation produces), under the
   other standards equal to the golden rounded to the tensor's dtype (NaN for NaN, the same infinity).

A passing case whose input already passes (a kernel that does nothing would pass too, e.g. an all-NaN
dy or cos = 1, sin = 0) gets a warning. A failure says what is wrong: the worst elements with their
``(b, s, n, d)`` index, expected and actual values and errors, where the wrong elements are
(``diagnosis.localise``), and a coarse error map for pictures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from . import diagnosis, nonfinite
from .dtypes import bits, from_numpy
from .ops import OPERATORS
from .standards import FORMATS, JUDGES, Judgement, SliceView, check_standard, standard_parameters
from .status import describe

WORKSPACE_POISON = 0xFF     # the byte the runner fills the workspace with: NaN in every float dtype


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


def judge(case, inputs, outcome, standard: str = "default", tolerance: Mapping[str, float] | None = None, *,
          golden: bool = True) -> Verdict:
    """Judge one launch's ``outcome`` of ``case`` run on ``inputs`` (module docstring for the order).

    ``standard`` and ``tolerance`` are the case's, already resolved by the caller; an unknown standard
    or parameter raises ``PrmgError``. Without ``golden`` the slice is not compared with a golden (the
    case's golden-free checks judge it; the contract checks still run).
    """
    tolerance = dict(tolerance or {})
    check_standard(standard, tolerance, file=case.source, case=case.name)
    expected_status = case.expect.error
    if not _status_matches(expected_status, outcome.status):
        return Verdict("failed", _status_message(expected_status, outcome), metrics={"status": int(outcome.status)},
                       details=[f"failed call: {outcome.failed_call}"] if outcome.failed_call else [])
    verdict = Verdict("passed")
    problems: list[str] = []
    if expected_status is not None:
        verdict.metrics["status"] = int(outcome.status)
        if _changed(inputs.dy, outcome):
            problems.append(f"{_tensor_name(case)} changed although the call failed")
    problems.extend(outcome.contract_violations)
    if expected_status is None:
        with np.errstate(all="ignore"):                       # non-finite values are judged explicitly
            _judge_result(case, inputs, outcome.dy, standard, tolerance, problems, verdict, golden)
    if problems:
        verdict.status, verdict.message = "failed", "; ".join(problems)
    return verdict


def _changed(before: np.ndarray, outcome) -> bool:
    """Whether the in-place tensor changed: the runner's storage comparison, else (hand-made outcomes)
    ``outcome.dy`` against ``before`` bit for bit (False when nothing comparable was read back)."""
    if outcome.dy_changed is not None:
        return outcome.dy_changed
    after = outcome.dy
    if after is None or before.dtype.itemsize != after.dtype.itemsize or before.size != after.size:
        return False
    return not np.array_equal(bits(before).ravel(), bits(after).ravel())


def _tensor_name(case) -> str:
    """How messages name the in-place tensor: ``dy`` for the grad, ``x`` for the forward."""
    return "dy" if case.op == "grad" else "x"


def add_checks(verdict: Verdict, results) -> Verdict:
    """``verdict`` with the golden-free checks' ``results`` (``checks.CheckResult``) folded in: their metrics,
    a failed check's message and details, and a check that could not run as a warning."""
    for result in results:
        verdict.metrics.update(result.metrics)
        verdict.details.extend(result.details)
        if result.note:
            verdict.warnings.append(f"{result.name} not run: {result.note}")
        if not result.passed:
            verdict.message = "; ".join(filter(None, [verdict.message, result.message]))
            verdict.status = "failed"
    return verdict


def _status_matches(expected, status: int) -> bool:
    """True when ``status`` is what ``expected`` asks: 0 for None (success), any non-zero status for "any",
    else exactly ``expected``."""
    if expected is None:
        return status == 0
    if expected == "any":
        return status != 0
    return status == expected


def _status_message(expected, outcome) -> str:
    """``expected X, got Y`` (with the operator's message after a failed call) for a status mismatch."""
    wanted = "success" if expected is None else "an error" if expected == "any" else describe(expected)
    got = describe(outcome.status)
    if outcome.status != 0 and outcome.error_message:
        got += f": {outcome.error_message}"
    return f"expected {wanted}, got {got}"


def _judge_result(case, inputs, result, standard, tolerance, problems: list, verdict: Verdict,
                  golden: bool = True) -> None:
    """The checks of a successful call: shape, outside the slice, inside the slice."""
    name = _tensor_name(case)
    if result is None:
        problems.append(f"no {name} was read back after the call")
        return
    if result.shape != inputs.dy.shape or result.dtype != inputs.dy.dtype:
        problems.append(f"{name} read back as {result.dtype} {result.shape}, expected {inputs.dy.dtype} "
                        f"{inputs.dy.shape}")
        return
    start, end = (int(v) for v in case.partial_slice)
    outside = diagnosis.outside_changes(inputs.dy, result, start, end)
    changed_outside = None
    if outside:
        summary, lines, count, changed_outside = outside
        problems.append(summary)
        verdict.details.extend(lines)
        verdict.metrics["outside_changed"] = count
    if end > start and golden:
        _judge_slice(case, inputs, result, standard, tolerance, problems, verdict, changed_outside)
    elif changed_outside is not None:
        verdict.error_map = diagnosis.error_map(np.zeros(result.shape[:-1] + (0,)), start, result.shape[-1],
                                                changed_outside)


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
    judgement = JUDGES[standard](view)
    right = _non_finite_right(view, standard, *specials)
    return _Evaluation(view, judgement, non_finite[~right], specials[0][~right], specials[1][~right])


def _judge_slice(case, inputs, result, standard, tolerance, problems: list, verdict: Verdict,
                 changed_outside) -> None:
    """Judge the slice of ``result`` against the golden by ``standard`` (fills ``problems`` and ``verdict``)."""
    dtype = from_numpy(inputs.dy.dtype).name
    if dtype not in FORMATS:
        problems.append(f"{_tensor_name(case)} dtype {dtype} cannot be judged (float32, float16, bfloat16 only)")
        return
    op = OPERATORS[case.op]
    start, end = (int(v) for v in case.partial_slice)
    try:
        golden = op.golden_slice(inputs.dy, inputs.cos, inputs.sin, case.rotary_mode, (start, end))
    except ValueError as error:
        problems.append(f"the call succeeded, but there is no golden for these inputs: {error}")
        return
    params = standard_parameters(standard, dtype, tolerance)
    evaluation = _evaluate(case, inputs, result, golden, standard, params, dtype)
    judgement, view, special_wrong = evaluation.judgement, evaluation.view, evaluation.special_wrong
    verdict.metrics.update({key: _plain(value) for key, value in judgement.metrics.items()})
    if len(special_wrong):
        verdict.metrics["non_finite"] = len(special_wrong)
    if not evaluation.failed:
        if not _evaluate(case, inputs, inputs.dy, golden, standard, params, dtype).failed:
            verdict.warnings.append(
                f"vacuous: the unchanged input already passes ({standard}): this case cannot tell a working "
                f"kernel from one that does nothing in the slice")
        return
    wrong = judgement.bad
    wrong.flat[special_wrong] = True
    candidates = np.setdiff1d(np.flatnonzero(judgement.bad), special_wrong)
    special_lines = _special_lines(view, result, evaluation)
    where = diagnosis.localise(wrong, start, inputs.cos.shape)
    worst = _worst(view, judgement, candidates if len(candidates) or not judgement.failed else None)
    count = len(special_wrong)
    reasons = ([f"{count} non-finite mismatch{'es' * (count > 1)}"] if count else []) \
        + ([judgement.reason] if judgement.failed else [])
    problems.append("; ".join(reasons + where + (special_lines + worst)[:1]))
    verdict.details.extend(special_lines + [f"localisation: {text}" for text in where] + worst)
    score = np.where(wrong, np.maximum(np.nan_to_num(judgement.score, nan=np.inf), 1.0 + 1e-9), judgement.score)
    verdict.error_map = diagnosis.error_map(score, start, result.shape[-1], changed_outside)
    verdict.error_map["metric"] = judgement.limit_name and f"error/{judgement.limit_name}" or "score"
    verdict.arrays = {"golden": golden, "score": score}


def _non_finite_right(view: SliceView, standard: str, actual: np.ndarray, golden: np.ndarray) -> np.ndarray:
    """Per neutralised element: whether its non-finite value is right (module docstring, point 4)."""
    if not len(view.non_finite):
        return np.zeros(0, bool)
    with np.errstate(over="ignore", invalid="ignore"):
        if standard == "default":
            return nonfinite.allowed(actual, _possible_results(view))
        rounded = golden.astype(view.x.dtype).astype(np.float64)
        return (np.isnan(actual) & np.isnan(rounded)) | (np.isinf(rounded) & (actual == rounded))


def _possible_results(view: SliceView) -> np.ndarray:
    """``nonfinite.possible_results`` at the neutralised elements: their operands gathered from the inputs
    by the operator's ``lane_terms`` (cos/sin broadcast over B, S, N)."""
    kept, partner, sign, cos_lane, sin_lane = view.op.lane_terms(view.mode, view.end - view.start)
    b, s, n, lane = np.unravel_index(view.non_finite, view.actual.shape)
    rows = tuple(np.where(np.asarray(view.cos.shape[axis]) == 1, 0, index) for axis, index in enumerate((b, s, n)))
    x = view.x[..., view.start:view.end]
    return nonfinite.possible_results(view.cos[rows + (cos_lane[lane],)], x[b, s, n, kept[lane]],
                                      view.sin[rows + (sin_lane[lane],)], x[b, s, n, partner[lane]], sign[lane],
                                      view.x.dtype)


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
# The key metric of a verdict, for a table column


def margin(value, limit: float = 1.0) -> str:
    """``value`` with 3 significant digits, more when 3 would print it as ``limit`` although it is not
    (a margin of 0.99997 against 1 reads ``0.99997``, not ``1``); ``inf`` for None."""
    if value is None:
        return "inf"
    text = f"{value:.3g}"
    for digits in range(4, 10):
        if value == limit or float(text) != limit:
            break
        text = f"{value:.{digits}g}"
    return text


def _key_default(m: dict) -> str:
    return f"err/budget {margin(m['max_err_ratio'])}"


def _key_double_thousandth(m: dict) -> str:
    text = f"wrong {margin(m['rel_err_share'], m['share_limit'])}/{m['share_limit']:g}"
    cap = f"/{m['cap']:g}" if m.get("cap") else ""
    return f"{text}, max rel {margin(m['max_rel_err'], m.get('cap') or 1.0)}{cap}"


def _key_single_bm(m: dict) -> str:
    return f"MERE {margin(m['MERE'], m['T'])}/{m['T']:.2g} MARE {margin(m['MARE'], 10 * m['T'])}/{10 * m['T']:.2g}"


def _key_double_benchmark(m: dict) -> str:
    return " ".join(f"{label} x{margin(m[key], m[limit])}/{m[limit]:g}" for label, key, limit in (
        ("MARE", "mare_ratio", "mare_limit"), ("MERE", "mere_ratio", "mere_limit"), ("RMSE", "rmse_ratio", "rmse_limit")))


# (the metric that marks a standard, its text): the first present wins
_KEY_METRICS = (
    ("max_err_ratio", _key_default),
    ("rel_err_share", _key_double_thousandth),
    ("MERE", _key_single_bm),
    ("mare_ratio", _key_double_benchmark),
    ("max_tol_ratio", lambda m: f"err/tol {margin(m['max_tol_ratio'])}"),
    ("mismatches", lambda m: f"mismatches {m['mismatches']}"),
    ("adjoint_ratio", lambda m: f"adjoint {margin(m['adjoint_ratio'])}"),
    ("roundtrip_ratio", lambda m: f"roundtrip {margin(m['roundtrip_ratio'])}"),
    ("determinism_mismatches", lambda m: f"repeat mismatches {m['determinism_mismatches']}"),
    ("status", lambda m: f"status {m['status']}"),
)


def key_metric(verdict: Verdict) -> str:
    """A short text of the verdict's key number(s) and their limits for a table column (``_KEY_METRICS``),
    e.g. ``err/budget 0.41``, led by ``outside changed N`` when elements outside the slice changed."""
    metrics = verdict.metrics
    text = next((shown(metrics) for key, shown in _KEY_METRICS if key in metrics), "")
    if metrics.get("outside_changed"):
        text = f"outside changed {metrics['outside_changed']}" + (f", {text}" if text else "")
    return text
