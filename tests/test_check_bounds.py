"""Every limit of every golden-free check, pinned per dtype: a device result just inside the check's bound passes,
just outside fails. The bounds are computed here from the formulas the checks' modules state (the element bound of
``checks/base.py``, the adjoint's row bound, the roundtrip's element bound), on numpy kernel models whose launches
a test can nudge ulp by ulp; ``sample`` is the ``default`` standard on sampled rows, ``determinism`` bit identity.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from prmg_cli.device.acl import Outcome
from prmg_cli.dtypes import FLOAT_FORMATS, OPERATOR_DTYPES as DTYPES, bits
from prmg_cli.inputs.seeded import make_inputs
from prmg_cli.judging.checks import CheckContext
from prmg_cli.judging.checks.adjoint import adjoint
from prmg_cli.judging.checks.determinism import determinism
from prmg_cli.judging.checks.roundtrip import roundtrip
from prmg_cli.judging.checks.sample import sample
from prmg_cli.ops import OPERATORS
from test_checks import ModelSession
from test_checks import make_case as check_case
from test_standards import below_one, budget, edge, row

pytestmark = pytest.mark.verdict

U = 2.0 ** -24


def element_bound(op, x, cos, sin, mode, piece) -> np.ndarray:
    """``checks/base.py``'s bound, from its formula: ``E + ulp(m + E)/2 + min(m, 4*2^-126) + 2^-147``,
    ``E = (2u + u^2) m``, per output element of ``op``'s slice."""
    magnitude = op.magnitude(x, cos, sin, mode, piece)
    fmt = FLOAT_FORMATS[str(x.dtype)]
    computation = magnitude * (2 * U + U * U)
    _, exponent = np.frexp(magnitude + computation)
    exponent = np.where(magnitude + computation == 0, fmt.min_exponent, exponent - 1)
    ulp = np.ldexp(1.0, np.maximum(exponent, fmt.min_exponent) - fmt.precision + 1)
    return 0.5 * ulp + computation + np.minimum(magnitude, 4 * 2.0 ** -126) + 2.0 ** -147


def nudged(values: np.ndarray, flat: int, steps: int) -> np.ndarray:
    """``values`` with element ``flat`` moved ``steps`` representable numbers away from zero."""
    out = values.copy()
    bits(out).reshape(-1)[flat] += steps
    return out


class Recorder(ModelSession):
    """The numpy kernel models, recording every launch's case, inputs and outcome, with an optional change to
    the outcome of the launch of ``changed_op``."""

    def __init__(self, changed_op=None, change=None):
        super().__init__()
        self.changed_op, self.change, self.launched = changed_op, change, []

    def launch(self, case, inputs, **how):
        outcome = super().launch(case, inputs, **how)
        if case.op == self.changed_op and self.change is not None:
            outcome = Outcome(status=0, dy=self.change(outcome.dy), dy_changed=False)
        self.launched.append((case, inputs, outcome))
        return outcome


# --- adjoint ---------------------------------------------------------------------------------------------------------

def adjoint_ratio(x, y, dy, dx, bound_forward, bound_grad, length) -> float:
    """The adjoint check's ratio on one row, from its module's formula."""
    gamma = (length + 1) * 2.0 ** -53 / (1 - (length + 1) * 2.0 ** -53)
    rows = lambda a: a.reshape(-1, length).astype(np.float64)
    x, y, dy, dx, bound_forward, bound_grad = map(rows, (x, y, dy, dx, bound_forward, bound_grad))
    left, right = (y * dy).sum(axis=1), (x * dx).sum(axis=1)
    terms = np.abs(y * dy).sum(axis=1) + np.abs(x * dx).sum(axis=1)
    bound = (bound_forward * np.abs(dy)).sum(axis=1) + (np.abs(x) * bound_grad).sum(axis=1) + gamma * terms
    return float((np.abs(left - right) / bound).max())


@pytest.mark.parametrize("dtype", DTYPES)
def test_adjoint_bound_edge(dtype):
    """A grad case's dx nudged at one element, ulp by ulp, away from the forward's side of <F x, dy> = <x, dx>: the
    last nudge within the row's bound passes, the next one fails."""
    case = check_case("grad", 1, dtype, shape=(1, 1, 1, 64), piece=(0, 64), broadcast="BSND", seed=3)
    inputs = make_inputs(case)
    probe = Recorder()
    dx = probe.launch(case, inputs).dy
    adjoint(CheckContext(case, inputs, Outcome(status=0, dy=dx), probe.launch))
    (_, x_inputs, forward), = [(c, i, o) for c, i, o in probe.launched if c.op == "forward"]
    x, y = x_inputs.dy, forward.dy
    grad, forward_op = OPERATORS["grad"], OPERATORS["forward"]
    bound_forward = element_bound(forward_op, x, x_inputs.cos, x_inputs.sin, 1, (0, 64))
    bound_grad = element_bound(grad, inputs.dy, inputs.cos, inputs.sin, 1, (0, 64))
    left = float((y.astype(np.float64) * inputs.dy.astype(np.float64)).sum())
    right = float((x.astype(np.float64) * dx.astype(np.float64)).sum())
    # the element of largest |x| whose dx, moved away from zero, moves <x, dx> away from <F x, dy>
    widening = (x.astype(np.float64) * dx.astype(np.float64) * (right - left) >= 0).reshape(-1)
    flat = int(np.argmax(np.where(widening, np.abs(x.astype(np.float64)).reshape(-1), -1)))
    assert widening[flat]

    def ratio(steps):
        return adjoint_ratio(x, y, inputs.dy, nudged(dx, flat, steps), bound_forward, bound_grad, 64)

    inside = edge(lambda steps: ratio(steps) <= 1, 0, 1 << 14)
    assert 0.9 < ratio(inside) <= 1 < ratio(inside + 1) < 1.1
    for steps, passes in ((inside, True), (inside + 1, False)):
        result = adjoint(CheckContext(case, inputs, Outcome(status=0, dy=nudged(dx, flat, steps)),
                                      ModelSession().launch))
        assert result.passed == passes and result.metrics["adjoint_ratio"] == ratio(steps), (steps, result.metrics)


# --- roundtrip -------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_roundtrip_bound_edge(dtype):
    """grad(forward(x)) nudged at one element, ulp by ulp away from x: within that element's bound
    (``|(B F x) - x| + 2^-50 |x| + |c| bF[kept] + |s| bF[partner] + bB``) passes, one ulp more fails."""
    case = check_case("grad", 1, dtype, shape=(1, 1, 1, 64), piece=(0, 64), broadcast="BSND", rope=True, seed=4)
    inputs = make_inputs(case)
    probe = Recorder()
    roundtrip(CheckContext(case, inputs, probe.launch(case, inputs), probe.launch))
    (_, forward_inputs, forward), (_, grad_inputs, back) = [(c, i, o) for c, i, o in probe.launched[1:]]
    forward_op, grad = OPERATORS["forward"], OPERATORS["grad"]
    x = forward_inputs.dy
    kept, partner, _, cos_lane, sin_lane = grad.lane_terms(1, 64)
    exact_y = forward_op.golden_slice(x, forward_inputs.cos, forward_inputs.sin, 1, (0, 64))
    identity = grad.golden_slice(exact_y, grad_inputs.cos, grad_inputs.sin, 1, (0, 64))
    x64 = x.astype(np.float64)
    bound_forward = element_bound(forward_op, x, forward_inputs.cos, forward_inputs.sin, 1, (0, 64))
    cos, sin = (np.abs(np.broadcast_to(t.astype(np.float64), exact_y.shape))
                for t in (grad_inputs.cos, grad_inputs.sin))
    bound = (np.abs(identity - x64) + 2.0 ** -50 * np.abs(x64) + cos[..., cos_lane] * bound_forward[..., kept]
             + sin[..., sin_lane] * bound_forward[..., partner]
             + element_bound(grad, forward.dy, grad_inputs.cos, grad_inputs.sin, 1, (0, 64))).reshape(-1)
    z = back.dy.astype(np.float64).reshape(-1)
    flat = int(np.flatnonzero(z * (z - x64.reshape(-1)) >= 0)[0])      # z moved away from zero moves away from x

    def error(steps):
        return abs(float(nudged(back.dy, flat, steps).reshape(-1)[flat]) - float(x64.reshape(-1)[flat]))

    inside = edge(lambda steps: error(steps) <= bound[flat], 0, 1 << 14)
    for steps, passes in ((inside, True), (inside + 1, False)):
        session = Recorder("grad", lambda dy, steps=steps: nudged(dy, flat, steps))
        result = roundtrip(CheckContext(case, inputs, ModelSession().launch(case, inputs), session.launch))
        assert result.passed == passes, (steps, result.metrics)
        assert result.metrics["roundtrip_ratio"] >= error(steps) / bound[flat]


# --- sample ----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_sample_holds_sampled_rows_to_the_default_budget(dtype):
    """One row whose golden is cos (just below 1) and whose result is 1: the largest error within the default
    budget passes the sample check, the next one fails."""
    guess = int(budget(1.0, 1.0, dtype) / U)
    inside = edge(lambda steps: 1 - below_one(steps) <= budget(below_one(steps), below_one(steps), dtype),
                  guess // 2, guess * 2)
    for steps, passes in ((inside, True), (inside + 1, False)):
        case, inputs = row(dtype, [1.0, 1.0], cos=[below_one(steps), 1.0])
        result = sample(CheckContext(case, inputs, Outcome(status=0, dy=inputs.dy.copy()), None))
        assert result.passed == passes and (result.metrics["sample_ratio"] <= 1) == passes


def test_sample_always_takes_the_first_and_the_last_row():
    """Of 4096 rows (64 sampled), a wrong first or last row is always among those judged (a random draw would
    take it 1.5 % of the time)."""
    from kernels import correct_kernel

    case = check_case("grad", 1, "float32", shape=(1, 4096, 1, 2), piece=(0, 2), broadcast="BSND", seed=6)
    inputs = make_inputs(case)
    good = correct_kernel(inputs.dy, inputs.cos, inputs.sin, 1, (0, 2))
    assert sample(CheckContext(case, inputs, Outcome(status=0, dy=good), None)).passed
    for wrong_row in (0, 4095):
        bad = good.copy()
        bad[0, wrong_row, 0, 1] = -bad[0, wrong_row, 0, 1] + 1
        assert not sample(CheckContext(case, inputs, Outcome(status=0, dy=bad), None)).passed, wrong_row


# --- determinism -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_determinism_allows_no_bit_of_difference(dtype):
    """Launches alike pass; one launch of three with one bit of one element flipped fails, with 1 mismatch."""
    case = check_case("grad", 1, dtype, shape=(1, 2, 2, 16), piece=(0, 16), seed=8)
    inputs = make_inputs(case)
    first = ModelSession().launch(case, inputs)
    assert determinism(CheckContext(case, inputs, first, ModelSession().launch, {"repeat": 3})).passed
    calls = []

    def sometimes_flipped(case, inputs, **how):
        outcome = ModelSession().launch(case, inputs)
        calls.append(1)
        return Outcome(status=0, dy=nudged(outcome.dy, 5, 1) if len(calls) == 2 else outcome.dy, dy_changed=False)

    result = determinism(CheckContext(case, inputs, first, sometimes_flipped, {"repeat": 3}))
    assert not result.passed and result.metrics["determinism_mismatches"] == 1


# --- without the golden: 'unchanged' (issue 34) -----------------------------------------------------------------

def test_unchanged_means_fewer_changed_elements_than_the_formula_moves_in_the_sampled_rows():
    """Four rows, all sampled, two at RoPE position 0 (cos 1, sin 0): the formula moves ``must`` elements of the input
    beyond their default budget; a result changing exactly ``must`` elements is a change, one changing ``must - 1``
    is unchanged (a warning)."""
    from prmg_cli.judging.checks.sample import unchanged_warning
    from test_standards import budget as default_budget

    case = check_case("grad", 1, "float32", shape=(1, 2, 2, 16), piece=(0, 16), broadcast="BSND", rope=True, seed=9)
    inputs = make_inputs(case)
    grad = OPERATORS["grad"]
    golden = grad.golden_slice(inputs.dy, inputs.cos, inputs.sin, 1, (0, 16)).reshape(-1)
    magnitude = grad.magnitude(inputs.dy, inputs.cos, inputs.sin, 1, (0, 16)).reshape(-1)
    moved = [abs(x - g) > default_budget(g, m, "float32")
             for x, g, m in zip(inputs.dy.astype(np.float64).reshape(-1), golden, magnitude)]
    must = sum(moved)
    assert 1 < must < len(moved)
    for changed, warned in ((must, False), (must - 1, True)):
        result = inputs.dy.copy()
        bits(result).reshape(-1)[:changed] ^= 1
        assert bool(unchanged_warning(case, inputs, result)) == warned, changed


# --- a wrong-result known defect's bounds (issue 34) ------------------------------------------------------------

def test_a_wrong_result_defect_holds_up_to_each_bound():
    """Two wrong elements, 2 ulps and 1 ulp off, on odd lanes of rows 0 and 1 of two: max_error_ulp 2 and elements 2
    hold (a bound is an allowed maximum), anything less does not; odd_lanes holds, even_lanes and last_row do not. A
    NaN or infinity where the golden is finite is beyond every max_error_ulp."""
    from prmg_cli.judging.defects import beyond

    fmt = FLOAT_FORMATS["float32"]
    golden = np.ones((1, 1, 2, 4))
    actual = golden.copy()
    actual[0, 0, 0, 1], actual[0, 0, 1, 3] = 1 + 2 * 2.0 ** -23, 1 + 2.0 ** -23
    wrong = actual != golden
    for bound, holds in ((("max_error_ulp", 2.0), True), (("max_error_ulp", math.nextafter(2.0, 0)), False),
                         (("elements", 2), True), (("elements", 1), False), (("pattern", "odd_lanes"), True),
                         (("pattern", "even_lanes"), False), (("pattern", "last_row"), False)):
        assert (beyond([bound], actual, golden, wrong, fmt) == []) == holds, bound
    # every bound a defect names holds, not its first alone; last_row allows the last row, not the first
    assert beyond([("max_error_ulp", 2.0), ("elements", 1)], actual, golden, wrong, fmt) == [
        "2 elements wrong > elements 1"]
    for row, holds in ((1, True), (0, False)):
        alone = golden.copy()
        alone[0, 0, row, 2] = 3.0
        assert (beyond([("pattern", "last_row")], alone, golden, alone != golden, fmt) == []) == holds, row
    # the halves meet between lanes L/2 - 1 and L/2 (here 1 and 2): a wrong element there is in one half alone
    for lane, half in ((1, "first_half"), (2, "second_half")):
        edge = golden.copy()
        edge[0, 0, 0, lane] = 2.0
        for pattern in ("first_half", "second_half"):
            assert (beyond([("pattern", pattern)], edge, golden, edge != golden, fmt) == []) == (pattern == half)
    # a NaN or an infinity where the golden is finite errs by infinitely many ulps: beyond any max_error_ulp
    for value in (np.nan, np.inf, -np.inf):
        actual[0, 0, 1, 3] = value
        assert beyond([("max_error_ulp", 1e300)], actual, golden, actual != golden, fmt) == [
            "a wrong element errs by inf ulp > max_error_ulp 1e+300"], value
    # the ulps are the golden's: 2^10 where the golden is 2^-10 errs by 2^43 of its ulps (2^23 of the result's own)
    small, huge = np.full((1, 1, 1, 2), 2.0 ** -10), np.full((1, 1, 1, 2), 2.0 ** 10)
    assert beyond([("max_error_ulp", 1e9)], huge, small, huge != small, fmt) == [
        "a wrong element errs by 8.8e+12 ulp > max_error_ulp 1e+09"]


def test_unchanged_counts_the_elements_the_formula_moves_to_or_from_infinity():
    """An infinite dy element where cos is 0: the formula gives NaN there and -inf at its partner, elements that are
    non-finite mismatches of the unchanged input, not over budget; they count among those a kernel must change, so
    changing every other moved element is still (nearly) unchanged."""
    from prmg_cli.cases.loader import Case
    from prmg_cli.inputs.seeded import Inputs
    from prmg_cli.judging.checks.sample import unchanged_warning
    from prmg_cli.judging.judge import judge_result

    case = Case("n", "t", (1, 1, 2, 8), (1, 1, 2, 8), (1, 1, 2, 8), (0, 8))
    rng = np.random.default_rng(3)
    dy, cos, sin = (rng.uniform(-1, 1, case.shape).astype(np.float32) for _ in range(3))
    dy[0, 0, 0, 0], cos[0, 0, 0, 0] = np.inf, 0
    inputs = Inputs(dy=dy, cos=cos, sin=sin)
    unmoved = judge_result(case, inputs, dy.copy()).metrics
    assert (unmoved["bad"], unmoved["non_finite"]) == (14, 2)
    for changed, warned in ((16, False), (15, True)):
        result = dy.copy()
        bits(result).reshape(-1)[:changed] ^= 1
        assert bool(unchanged_warning(case, inputs, result)) == warned, changed


def test_a_slice_returned_bit_for_bit_is_unchanged_even_where_the_formula_moves_nothing():
    """cos 1 and sin 0: the formula moves no element beyond its budget, so only a result changing nothing at all is
    unchanged (the warning); one changed bit is a change."""
    from prmg_cli.cases.loader import Case
    from prmg_cli.inputs.seeded import Inputs
    from prmg_cli.judging.checks.sample import UNCHANGED_WARNING, unchanged_warning

    case = Case("p0", "t", (1, 1, 1, 8), (1, 1, 1, 8), (1, 1, 1, 8), (0, 8))
    dy = np.random.default_rng(5).uniform(-1, 1, case.shape).astype(np.float32)
    inputs = Inputs(dy=dy, cos=np.ones(case.cos_shape, np.float32), sin=np.zeros(case.cos_shape, np.float32))
    assert unchanged_warning(case, inputs, dy.copy()) == UNCHANGED_WARNING
    nudged = dy.copy()
    bits(nudged)[0, 0, 0, 3] ^= 1
    assert unchanged_warning(case, inputs, nudged) == ""
