"""Golden-free checks on the device: one entry per check in ``CHECKS``, each judging device results alone.

A case asks for them with ``checks: [adjoint, roundtrip, determinism]`` (or ``prmg run --check``);
``golden: false`` judges a case by its checks (and the in-place contract) alone, for shapes too large
for a host golden and as an oracle independent of the golden's reading of the docs. Each check launches
what it needs on the device, reports its own metric (``<name>_ratio`` or ``<name>_mismatches``, <= 1 or 0
when it holds) and a message when it fails.

**A golden-free element bound.** An operator's output element is ``out = c*x + sign*s*x'`` (its
``lane_terms``); a correct float32 kernel is within ``E = (2u + u^2)*m`` of the exact value before its final
rounding (``m = |c*x| + |s*x'|``, ``u = 2^-24``, as for the ``default`` standard), and the exact value lies
within ``m`` of zero, so after rounding to the output dtype::

    b = E + ulp_dtype(m + E)/2 + min(4*2^-126, m) + 2^-147

bounds ``|device - exact|`` without any golden (``ulp(m + E) >= ulp(|exact| + E)``).

**adjoint.** The grad is the exact transpose of the forward on every (b, s, n) row of the slice, so with
``y = F x`` (the forward on a probe ``x``) and ``dx = B dy`` (the grad on ``dy``), both from the device,
``S1 = <y, dy>`` and ``S2 = <x, dx>`` over a row are equal up to the devices' errors and float64
summation: ``|S1 - S2| <= sum_j bF_j*|dy_j| + sum_j |x_j|*bB_j + g_(L+1)*(sum_j |y_j*dy_j| + sum_j |x_j*dx_j|)``,
``g_n = n*2^-53 / (1 - n*2^-53)`` (products of two float32/16 numbers are exact in float64; only the sums
round). Each row is judged by its own bound (metric: the largest ``|S1 - S2| / bound``). The forward on
950 takes fewer cos/sin layouts and dtypes than the grad, so for it cos/sin are expanded to BSND and
converted exactly to float32 where needed (the same numbers, so the same operator).

**roundtrip.** With a RoPE table (each pair's partners share one angle, ``c^2 + s^2 = 1`` up to the
table's rounding) the grad undoes the forward: ``z = B(F x)`` returns ``x``. With ``y = F x + e1``
(``|e1| <= bF``) and ``z = B y + e2`` (``|e2| <= bB`` of y's magnitudes), per element
``|z - x| <= |(B F x) - x| + |c|*bF[kept] + |s|*bF[partner] + bB``, where ``(B F x) - x`` (the tables'
rounding) is evaluated in float64 with a relative slack of ``2^-50``. The case's tables are used when they
are RoPE tables, else RoPE tables (base 10000) of the same shape and dtype.

**determinism.** ``--repeat K`` launches (default 2) of the same inputs give bit-identical outputs and
the same status; a kernel that differs by one ulp between launches fails even where each launch is
within tolerance. It says nothing about correctness (a kernel that does nothing is deterministic), so it is
not an *oracle*: a ``golden: false`` case needs an oracle check (``ORACLES``), or ``correctness_unchecked``.

**sample.** The host reference on up to ``SAMPLE_ROWS`` (b, s, n) rows of the result (``sampled_rows``: the
first, the last, the rows on either side of 2^16 and seeded draws), judged by the ``default`` standard exactly
as the golden judges the whole tensor. It costs a few rows of golden whatever the shape, and unlike adjoint
and roundtrip it does not accept a grad and a forward that are wrong in the same way (both negating sin).

**Where a check is not defined** (``Check.applies``) it is skipped with the reason (a no-op call: an empty slice, tensor or table; NaN,
infinities or values whose results overflow the dtype, for adjoint, whose inner products would not be
numbers). **Every launch a check makes** gets the in-place contract checks of the main launch
(``judge.launch_problems``: guard zones, workspace, cos and sin, the tensor outside the slice); a breach
fails the case like one on the main launch.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .dtypes import bits, from_numpy
from .inputs import Inputs, rope_angles, tensor_generator
from .ops import FORWARD, GRAD, OPERATORS
from .standards import FORMATS, FTZ_FLOOR, U32, UNDERFLOW_FLOOR
from .vocab import broadcast_shape

U64 = 2.0 ** -53


@dataclass
class CheckResult:
    """What one check found: whether it holds, its metrics, why not, details; ``note`` when it could not
    run (e.g. the forward refuses the case's D), reported as a warning; ``skipped`` why it is not defined for
    the case (``Check.applies``); ``contract`` the in-place contract breaches of its launches."""

    name: str
    passed: bool = True
    metrics: dict = field(default_factory=dict)
    message: str = ""
    details: list = field(default_factory=list)
    note: str = ""
    skipped: str = ""
    contract: list = field(default_factory=list)

    @property
    def judged(self) -> bool:
        """True when the check ran to a verdict (neither skipped nor unable to run)."""
        return not (self.note or self.skipped)


@dataclass
class CheckContext:
    """What a check may use: the case, its inputs, the main launch's outcome, a way to launch any case of
    any operator on the device (``launch(case, inputs) -> Outcome``), and ``repeat`` for determinism."""

    case: object
    inputs: Inputs
    outcome: object
    launch: Callable
    repeat: int = 2


@dataclass(frozen=True)
class Check:
    """One golden-free check: its description, ``run(context) -> CheckResult``, whether it is an oracle (it
    can find a wrong result, not only an inconsistent one), and ``applies(context) -> reason`` ("" when the
    check is defined for the case, else why not)."""

    description: str
    run: Callable[[CheckContext], CheckResult]
    oracle: bool = True
    applies: Callable[[CheckContext], str] = lambda context: _no_op(context.case)


def _no_op(case) -> str:
    """Why a check of the slice is not defined for ``case``: its operator's call is a no-op (an empty slice,
    in-place tensor or table: ``OperatorSpec.no_op``), or ""."""
    return "the call is a no-op here (an empty slice, tensor or table)" if OPERATORS[case.op].no_op(case) else ""


def element_bound(op, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, mode: int, piece) -> np.ndarray:
    """The golden-free bound ``b`` of every output element of ``op``'s slice (module docstring)."""
    magnitude = op.magnitude(x, cos, sin, mode, piece)
    fmt = FORMATS[from_numpy(x.dtype).name]
    computation = magnitude * (2 * U32 + U32 * U32)
    bound = 0.5 * fmt.ulp(magnitude + computation)
    bound += computation + np.minimum(magnitude, FTZ_FLOOR) + UNDERFLOW_FLOOR
    return bound


def _probe(case, tensor: str, shape, dtype, salt: int) -> np.ndarray:
    """A seeded uniform(-1, 1) probe tensor (the case's seed, ``salt`` apart from its own inputs)."""
    generator = tensor_generator(case.seed ^ (salt << 32), tensor)
    return generator.uniform(-1.0, 1.0, shape).astype(dtype)


def _as_operator(case, inputs: Inputs, op, x: np.ndarray) -> tuple[object, Inputs]:
    """``case`` re-aimed at ``op`` with in-place tensor ``x`` (contiguous, as the probes are): cos/sin expanded
    to BSND and converted exactly to float32 where ``op`` refuses the case's layout or dtype pair (the same
    numbers, the same operator)."""
    cos, sin = inputs.cos, inputs.sin
    shape = tuple(case.cos_shape)
    if shape not in {broadcast_shape(layout, case.shape, case.cos_shape[-1]) for layout in op.layouts}:
        shape = broadcast_shape("BSND", case.shape, case.cos_shape[-1])
        cos, sin = np.ascontiguousarray(np.broadcast_to(cos, shape)), np.ascontiguousarray(np.broadcast_to(sin, shape))
    cos_dtype = case.cos_dtype
    if (case.dtype, cos_dtype) not in op.dtype_pairs:
        cos_dtype = "float32"
        cos, sin = cos.astype(np.float32), sin.astype(np.float32)
    aimed = dataclasses.replace(case, op=op.name, cos_shape=shape, sin_shape=shape, cos_dtype=cos_dtype,
                                sin_dtype=cos_dtype, dy_strides=None, checks=(), golden=True, known_defect=None,
                                correctness_unchecked=None)
    return aimed, Inputs(x, cos, sin)


def _refusal(op, case) -> str:
    """Why ``op`` would refuse ``case`` (its first broken rule), or ""."""
    from .constraints import violation_details

    found = [v for v in violation_details(case, frozenset({case.rotary_mode})) if not v.skippable]
    return f"the {op.title} operator refuses it: {found[0].message}" if found else ""


def _launched(context: CheckContext, case, inputs: Inputs, what: str):
    """``inputs`` through ``case`` on the device; (outcome, "") or (None, why it could not run)."""
    refused = _refusal(OPERATORS[case.op], case)
    if refused:
        return None, f"{what}: {refused}"
    outcome = context.launch(case, inputs)
    if outcome.status != 0 or outcome.dy is None:
        return None, f"{what}: the {OPERATORS[case.op].title} launch returned {outcome.status} {outcome.error_message}"
    return outcome, ""


def _rows(array: np.ndarray) -> np.ndarray:
    """``array`` (B, S, N, L) as float64 rows (B*S*N, L)."""
    return array.reshape(-1, array.shape[-1]).astype(np.float64)


def adjoint(context: CheckContext) -> CheckResult:
    """The adjoint check (module docstring): ``<F x, dy>`` against ``<x, B dy>`` row by row."""
    case, inputs = context.case, context.inputs
    start, end = case.partial_slice
    other = FORWARD if case.op == GRAD.name else GRAD
    probe = _probe(case, "dy", inputs.dy.shape, inputs.dy.dtype, 1)
    other_case, other_inputs = _as_operator(case, inputs, other, probe)
    outcome, why = _launched(context, other_case, other_inputs, "adjoint")
    if outcome is None:
        return CheckResult("adjoint", note=why)
    if case.op == GRAD.name:         # main: dx = B dy; probe x through the forward: y = F x
        x, y, x_inputs = probe, outcome.dy, other_inputs
        dy, dx, dy_inputs = inputs.dy, context.outcome.dy, inputs
    else:                            # main: y = F x; probe dy through the grad: dx = B dy
        x, y, x_inputs = inputs.dy, context.outcome.dy, inputs
        dy, dx, dy_inputs = probe, outcome.dy, other_inputs
    piece = (start, end)
    bound_forward = element_bound(FORWARD, x, x_inputs.cos, x_inputs.sin, case.rotary_mode, piece)
    bound_grad = element_bound(GRAD, dy, dy_inputs.cos, dy_inputs.sin, case.rotary_mode, piece)
    x, y, dy, dx = (_rows(a[..., start:end]) for a in (x, y, dy, dx))
    bound_forward, bound_grad = _rows(bound_forward), _rows(bound_grad)
    with np.errstate(all="ignore"):
        left, right = (y * dy).sum(axis=1), (x * dx).sum(axis=1)
        terms = np.abs(y * dy).sum(axis=1) + np.abs(x * dx).sum(axis=1)
        gamma = (end - start + 1) * U64 / (1 - (end - start + 1) * U64)
        bound = (bound_forward * np.abs(dy)).sum(axis=1) + (np.abs(x) * bound_grad).sum(axis=1) + gamma * terms
        ratio = np.abs(left - right) / bound
    ratio = np.where(np.isfinite(left) & np.isfinite(right), ratio, np.inf)
    worst = int(np.argmax(ratio)) if ratio.size else 0
    value = float(ratio[worst]) if ratio.size else 0.0
    result = CheckResult("adjoint", metrics={"adjoint_ratio": value if np.isfinite(value) else None})
    bad = np.flatnonzero(~(ratio <= 1))
    if bad.size:
        index = tuple(int(i) for i in np.unravel_index(worst, case.shape[:3]))
        result.passed = False
        result.message = (f"adjoint: <F x, dy> and <x, B dy> differ beyond float32 rounding in {bad.size} of "
                          f"{ratio.size} rows (worst {value:.3g} x its bound, row (b, s, n)={index})")
        result.details = [f"adjoint: row {index}: <F x, dy> = {left[worst]:.9g}, <x, B dy> = {right[worst]:.9g}, "
                          f"bound {bound[worst]:.3g}"]
    return result


def _rope_inputs(case, inputs: Inputs) -> Inputs:
    """``inputs`` with RoPE cos/sin tables: the case's own when they are RoPE tables, else base 10000."""
    if case.cos_input.kind == "rope" and case.sin_input.kind == "rope":
        return inputs
    angles = rope_angles(tuple(case.cos_shape), case.rotary_mode, 10000.0)
    dtype = inputs.cos.dtype
    return Inputs(inputs.dy, np.cos(angles).astype(dtype), np.sin(angles).astype(dtype))


def roundtrip(context: CheckContext) -> CheckResult:
    """The roundtrip check (module docstring): the grad of the forward of ``x`` returns ``x``."""
    case = context.case
    start, end = case.partial_slice
    piece = (start, end)
    tables = _rope_inputs(case, context.inputs)
    x = _probe(case, "dy", context.inputs.dy.shape, context.inputs.dy.dtype, 2)
    forward_case, forward_inputs = _as_operator(case, tables, FORWARD, x)
    forward, why = _launched(context, forward_case, forward_inputs, "roundtrip")
    if forward is None:
        return CheckResult("roundtrip", note=why)
    grad_case, grad_inputs = _as_operator(case, tables, GRAD, forward.dy)
    back, why = _launched(context, grad_case, grad_inputs, "roundtrip")
    if back is None:
        return CheckResult("roundtrip", note=why)
    kept, partner, sign, cos_lane, sin_lane = GRAD.lane_terms(case.rotary_mode, end - start)
    with np.errstate(all="ignore"):
        exact_y = FORWARD.golden_slice(x, forward_inputs.cos, forward_inputs.sin, case.rotary_mode, piece)
        y_full = x.astype(np.float64)
        y_full[..., start:end] = exact_y
        identity = GRAD.golden_slice(y_full, grad_inputs.cos, grad_inputs.sin, case.rotary_mode, piece)
        x_slice = x[..., start:end].astype(np.float64)
        defect = np.abs(identity - x_slice) + 2.0 ** -50 * np.abs(x_slice)
        bound_forward = element_bound(FORWARD, x, forward_inputs.cos, forward_inputs.sin, case.rotary_mode, piece)
        bound_grad = element_bound(GRAD, forward.dy, grad_inputs.cos, grad_inputs.sin, case.rotary_mode, piece)
        cos = np.abs(np.broadcast_to(grad_inputs.cos.astype(np.float64), exact_y.shape))
        sin = np.abs(np.broadcast_to(grad_inputs.sin.astype(np.float64), exact_y.shape))
        bound = defect + cos[..., cos_lane] * bound_forward[..., kept] + sin[..., sin_lane] * bound_forward[..., partner] \
            + bound_grad
        error = np.abs(back.dy[..., start:end].astype(np.float64) - x_slice)
        ratio = np.where(np.isfinite(error), error / bound, np.inf)
    value = float(ratio.max()) if ratio.size else 0.0
    result = CheckResult("roundtrip", metrics={"roundtrip_ratio": value if np.isfinite(value) else None})
    bad = np.flatnonzero(~(ratio <= 1))
    if bad.size:
        worst = int(np.argmax(ratio))
        b, s, n, lane = (int(i) for i in np.unravel_index(worst, ratio.shape))
        result.passed = False
        result.message = (f"roundtrip: grad(forward(x)) is off x beyond float32 rounding at {bad.size} of "
                          f"{ratio.size} elements (worst {value:.3g} x its bound, at (b, s, n, d)=({b}, {s}, {n}, "
                          f"{start + lane}))")
    return result


def determinism(context: CheckContext) -> CheckResult:
    """The determinism check (module docstring): ``repeat`` launches, bit-identical outputs."""
    first = context.outcome
    reference_bits = bits(first.dy).reshape(-1)
    mismatches, launches = 0, max(2, context.repeat)
    worst_index = None
    for _ in range(launches - 1):
        again = context.launch(context.case, context.inputs)
        if again.status != first.status or again.dy is None:
            return CheckResult("determinism", False, {"determinism_mismatches": None},
                               f"determinism: a repeated launch returned status {again.status}, the first {first.status}")
        differ = np.flatnonzero(bits(again.dy).reshape(-1) != reference_bits)
        if differ.size > mismatches:
            mismatches, worst_index = int(differ.size), int(differ[0])
    result = CheckResult("determinism", metrics={"determinism_mismatches": mismatches})
    if mismatches:
        index = tuple(int(i) for i in np.unravel_index(worst_index, first.dy.shape))
        result.passed = False
        result.message = (f"determinism: {launches} launches of the same inputs differ in {mismatches} elements "
                          f"(first at {index})")
    return result


def _adjoint_applies(context: CheckContext) -> str:
    """Why the adjoint identity is not defined for the case: an empty slice, inputs that are not all finite, or
    results that may overflow the dtype (the inner products would not be numbers), else ""."""
    case, inputs = context.case, context.inputs
    empty = _no_op(case)
    if empty:
        return empty
    start, end = case.partial_slice
    x = inputs.dy[..., start:end]
    with np.errstate(all="ignore"):
        if not (np.isfinite(x).all() and np.isfinite(inputs.cos).all() and np.isfinite(inputs.sin).all()):
            return "the inputs hold NaN or infinities, so <F x, dy> is not a number"
        overflow = FORMATS[from_numpy(x.dtype).name].overflow
        magnitude = OPERATORS[case.op].magnitude(inputs.dy, inputs.cos, inputs.sin, case.rotary_mode, (start, end))
        tables = np.abs(inputs.cos.astype(np.float64)) + np.abs(inputs.sin.astype(np.float64))
        if magnitude.max(initial=0.0) >= overflow or tables.max(initial=0.0) >= overflow:
            return "results may overflow the dtype, so <F x, dy> is not a number"
    return ""


SAMPLE_ROWS = 64
U16_WRAP = 1 << 16          # a 16-bit row counter wraps here


def sampled_rows(rows: int, seed: int, count: int = SAMPLE_ROWS) -> np.ndarray:
    """Up to ``count`` distinct row indices of ``rows`` rows, sorted: the first, the last, the rows on either side
    of 2^16 (where a 16-bit row counter wraps), and the rest drawn without repeats with ``seed``."""
    if rows <= count:
        return np.arange(rows)
    chosen = {0, rows - 1, rows // 2} | {row for row in (U16_WRAP - 1, U16_WRAP) if row < rows}
    generator = np.random.Generator(np.random.PCG64(seed))
    while len(chosen) < count:
        chosen.update(int(row) for row in generator.integers(0, rows, count - len(chosen)))
    return np.array(sorted(chosen)[:count])


def sample(context: CheckContext) -> CheckResult:
    """The sample check (module docstring): the ``default`` standard on sampled rows of the result."""
    from .judge import judge_result

    case, inputs, result = context.case, context.inputs, context.outcome.dy
    depth, length = case.shape[-1], case.cos_shape[-1]
    rows = sampled_rows(int(np.prod(case.shape[:3])), case.seed ^ 0x5A4D)
    index = np.unravel_index(rows, case.shape[:3])
    tables = np.ravel_multi_index(tuple(np.where(np.array(case.cos_shape[:3])[:, None] == 1, 0, index)),
                                  case.cos_shape[:3])
    picked = (len(rows), 1, 1)
    sub_case = dataclasses.replace(case, shape=picked + (depth,), cos_shape=picked + (length,),
                                   sin_shape=picked + (length,), dy_strides=None, checks=(), golden=True,
                                   known_defect=None, correctness_unchecked=None)
    sub_inputs = Inputs(*(array.reshape(-1, array.shape[-1])[which].reshape(picked + (array.shape[-1],))
                          for array, which in ((inputs.dy, rows), (inputs.cos, tables), (inputs.sin, tables))))
    verdict = judge_result(sub_case, sub_inputs, result.reshape(-1, depth)[rows].reshape(picked + (depth,)))
    ratio = verdict.metrics.get("max_err_ratio")
    checked = CheckResult("sample", metrics={"sample_ratio": ratio, "sample_rows": len(rows)})
    if verdict.status != "passed":
        score = verdict.arrays.get("score")
        wrong = rows[np.flatnonzero((score > 1).reshape(len(rows), -1).any(axis=1))] if score is not None else rows[:0]
        where = ", ".join(str(tuple(int(i) for i in np.unravel_index(row, case.shape[:3]))) for row in wrong[:3])
        checked.passed = False
        checked.message = (f"sample: the host reference disagrees on {len(wrong) or 'some'} of {len(rows)} sampled "
                           f"rows" + (f" ((b, s, n) = {where}{', ...' if len(wrong) > 3 else ''})" if where else "")
                           + f": {verdict.message}")
    return checked


CHECKS: dict[str, Check] = {
    "adjoint": Check("forward and grad on the device agree: <F x, dy> = <x, B dy> within float32 rounding", adjoint,
                     applies=_adjoint_applies),
    "roundtrip": Check("with a RoPE table, grad(forward(x)) returns x within float32 rounding", roundtrip),
    "determinism": Check("repeated launches give bit-identical outputs (not an oracle: says nothing of "
                         "correctness)", determinism, oracle=False, applies=lambda context: ""),
    "sample": Check(f"the host reference on up to {SAMPLE_ROWS} sampled rows, by the default standard", sample),
}
ORACLES = tuple(name for name, check in CHECKS.items() if check.oracle)


def weak_checks_text(names) -> str:
    """Why ``names`` judge nothing about correctness: ``determinism proves only ...`` for each non-oracle."""
    return "; ".join(f"{name}: {CHECKS[name].description}" for name in names if not CHECKS[name].oracle) \
        or "no check named"


def run_checks(names, context: CheckContext) -> list[CheckResult]:
    """Every check of ``names`` on ``context``; determinism first, so that its repeats follow the main
    launch directly (nothing else runs on the device between the launches it compares). A check not defined
    for the case is skipped with its reason; every launch a check makes is held to the in-place contract
    (``judge.launch_problems``), its breaches kept in the result's ``contract``."""
    from .judge import launch_problems

    results = []
    for name in sorted(names, key=lambda name: name != "determinism"):
        check = CHECKS[name]
        reason = check.applies(context)
        if reason:
            results.append(CheckResult(name, skipped=reason))
            continue
        breaches: list[str] = []

        def launch(case, inputs, breaches=breaches):
            outcome = context.launch(case, inputs)
            breaches.extend(f"{name}: launch of {OPERATORS[case.op].title}: {problem}"
                            for problem in launch_problems(case, inputs, outcome))
            return outcome

        result = check.run(dataclasses.replace(context, launch=launch))
        result.contract = breaches
        results.append(result)
    return results


def fold_checks(verdict, results: list[CheckResult], case, golden: bool):
    """``verdict`` (a ``judge.Verdict``) with the checks' ``results`` folded in: their metrics and details, their
    launches' contract breaches and failures (each fails the case), a check that could not run as a warning and
    one not defined for the case as a detail. Without the ``golden``, a case with a slice that no oracle check
    judged (all skipped or unable to run) is an ``error`` -- nothing judged its result -- unless it says why
    with ``correctness_unchecked`` (then a warning)."""
    for result in results:
        verdict.metrics.update(result.metrics)
        verdict.details.extend(result.details)
        for breach in result.contract:
            verdict.fail("contract", breach)
        if result.skipped:
            verdict.details.append(f"{result.name} skipped: {result.skipped}")
        elif result.note:
            verdict.warnings.append(f"{result.name} not run: {result.note}")
        elif not result.passed:
            verdict.fail("check", result.message)
    if golden or _no_op(case) or any(result.judged and CHECKS[result.name].oracle for result in results):
        return verdict
    why = "; ".join(f"{r.name} {'skipped' if r.skipped else 'not run'}: {r.skipped or r.note}"
                    for r in results if not r.judged) or weak_checks_text([r.name for r in results])
    if case.correctness_unchecked:
        verdict.warnings.append(f"correctness not checked: {case.correctness_unchecked} ({why})")
        return verdict
    verdict.fail("unjudged", f"not judged: without the golden no check of correctness ran ({why})")
    if verdict.kinds == {"unjudged"}:
        verdict.status = "error"
    return verdict
