"""Every limit of every precision standard, pinned: a result just inside passes, just outside fails, per dtype, each
against numbers computed here by hand from the rule the standard's module states (TTK's, for ``mixed``,
``single_bm`` and ``double_benchmark``); the NaN and infinity rules under every standard; the ``default`` standard's
edge (an error equal to its budget passes) and its budget on every path that computes it (the whole-array judge, the
numpy block pass, the compiled pass), bit for bit, through the magnitudes where its subnormal terms matter.

Most cases are one row judged whole (interleave, ``sin = 0``): the golden is then ``cos * dy`` exactly, so a float32
``cos`` just below 1 with ``dy = 1`` puts the golden anywhere near 1 in steps of 2^-24, whatever dy's dtype, and a
result of 1 errs by exactly ``1 - cos``.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from prmg_cli import native
from prmg_cli.device.acl import Outcome
from prmg_cli.dtypes import FLOAT_FORMATS, OPERATOR_DTYPES as DTYPES, bits, rounded
from prmg_cli.errors import PrmgError
from prmg_cli.inputs.seeded import Inputs
from prmg_cli.judging import default_pass
from prmg_cli.judging.judge import judge
from prmg_cli.judging.standards import STANDARDS, default as default_standard, standard_parameters
from prmg_cli.ops import GRAD
from test_judge import NUMPY, make_case

pytestmark = pytest.mark.verdict

U = 2.0 ** -24


def exact(values, dtype: str) -> np.ndarray:
    """``values`` in ``dtype``, each exactly representable there (asserted)."""
    values = np.asarray(values, np.float64)
    with np.errstate(over="ignore"):
        out = rounded(values, NUMPY[dtype])
    wide = out.astype(np.float64)
    assert ((wide == values) | (np.isnan(wide) & np.isnan(values))).all(), (values, wide)
    return out


def row(dtype: str, dy, cos=1.0, sin=0.0, cos_dtype: str = "float32"):
    """A case of one row ``dy`` (dy's dtype ``dtype``), judged whole, interleave, with cos and sin rows (or values
    broadcast over the row) in ``cos_dtype``."""
    dy = np.atleast_1d(np.asarray(dy, np.float64))
    case = make_case((1, 1, 1, dy.size), (0, dy.size), dtype=dtype, cos_dtype=cos_dtype)
    table = lambda values: exact(np.broadcast_to(np.asarray(values, np.float64), dy.shape), cos_dtype).reshape(
        case.cos_shape)
    return case, Inputs(dy=exact(dy, dtype).reshape(case.shape), cos=table(cos), sin=table(sin))


def verdict(case, inputs, actual, standard: str, tolerance=None):
    """The verdict on the result ``actual`` (values exact in dy's dtype, broadcast over the row)."""
    values = np.broadcast_to(np.asarray(actual, np.float64), (case.shape[-1],))
    result = exact(values, case.dtype).reshape(case.shape)
    return judge(case, inputs, Outcome(status=0, dy=result), standard, tolerance)


def status(case, inputs, actual, standard: str, tolerance=None) -> str:
    return verdict(case, inputs, actual, standard, tolerance).status


def up(value: float, dtype: str, steps: int = 1) -> float:
    """The value ``steps`` representable values of ``dtype`` above the positive ``value`` (exact there)."""
    pattern = bits(exact([value], dtype))
    return float((pattern + pattern.dtype.type(steps)).view(NUMPY[dtype]).astype(np.float64)[0])


def below_one(count: int) -> float:
    """The float32 number ``count`` steps of 2^-24 below 1."""
    return 1.0 - count * U


def edge(fits, low: int, high: int) -> int:
    """The largest ``k`` in ``[low, high)`` with ``fits(k)``, where ``fits`` holds up to a point and not beyond
    (bisection; ``fits(low)`` and not ``fits(high)`` are asserted)."""
    assert fits(low) and not fits(high)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low


# --- mixed (TTK's mix_tolerance) ----------------------------------------------------------------------------------

MIXED = {"float16": (2.0 ** -9, 2.0 ** -9, 0.1), "bfloat16": (2.0 ** -6, 2.0 ** -6, 1.0),
         "float32": (2.0 ** -10, 2.0 ** -16, 0.01)}          # (rtol, atol, max_abs_error_limit): TTK's table


@pytest.mark.parametrize("dtype", DTYPES)
def test_mixed_defaults_are_ttks_table(dtype):
    """TTK's table, the limit left unset (0): TTK's dynamic max(floor, 32 ulp of the golden's magnitude)."""
    rtol, atol, cap = MIXED[dtype]
    assert standard_parameters("mixed", dtype) == {"rtol": rtol, "atol": atol, "required_matched_ratio": 0.99,
                                                   "max_abs_error_limit": 0.0, "max_abs_error_floor": cap}


def test_mixed_limit_is_32_ulp_of_the_goldens_magnitude_unless_a_case_sets_it():
    """TTK's own examples (test_mix_tolerance.py, the version with max_abs_error_floor): a float16 golden near 60005
    (60000 in float16, whose spacing there is 32) against a result of 60000 errs by about 5, within 32 * 32 = 1024
    (the fixed 0.1 failed this correct result); a case's own limit of 0.01 replaces the dynamic one whole and fails
    it; a small golden keeps the floor 0.1; at the largest finite float16 value the binade's spacing (32) counts, not
    infinity."""
    case, inputs = row("float16", [60000.0, 60000.0], cos=[float(np.float32(60005.0 / 60000.0)), 1.0])
    passed = verdict(case, inputs, [60000.0, 60000.0], "mixed")
    assert passed.status == "passed" and passed.metrics["abs_err_limit"] == 1024.0
    assert 4.9 < passed.metrics["max_abs_err"] < 5.1
    replaced = verdict(case, inputs, [60000.0, 60000.0], "mixed", {"max_abs_error_limit": 0.01})
    assert replaced.status == "failed" and replaced.metrics["abs_err_limit"] == 0.01
    case, inputs = row("float16", [2.0 ** -10, 2.0 ** -10], cos=[1.5, 1.0])
    small = verdict(case, inputs, [2.0 ** -10, 2.0 ** -10], "mixed")
    assert small.status == "passed" and small.metrics["abs_err_limit"] == 0.1
    case, inputs = row("float16", [65472.0, 65504.0])
    assert verdict(case, inputs, [65472.0, 65504.0], "mixed").metrics["abs_err_limit"] == 32.0 * 32.0


@pytest.mark.parametrize("dtype", DTYPES)
def test_mixed_element_rule_is_atol_plus_rtol_times_the_golden(dtype):
    """TTK's hand examples: at golden 0 an error of atol matches and 2 atol does not; at golden 1 the edge is
    atol + rtol exactly (every value here is exact in the dtype)."""
    rtol, atol, _ = MIXED[dtype]
    case, inputs = row(dtype, [0.0, 0.0])
    assert status(case, inputs, atol, "mixed") == "passed"
    failed = verdict(case, inputs, 2 * atol, "mixed")
    assert failed.status == "failed" and failed.metrics["matched_ratio"] == 0.0
    case, inputs = row(dtype, [1.0, 1.0])
    assert status(case, inputs, 1 + atol + rtol, "mixed") == "passed"
    assert status(case, inputs, up(1 + atol + rtol, dtype), "mixed") == "failed"


@pytest.mark.parametrize("dtype", DTYPES)
def test_mixed_needs_99_percent_of_elements_matched(dtype):
    """100 elements of golden 1: one unmatched (within the cap) is a matched ratio of exactly 0.99, which passes
    (>=); two fail."""
    _, _, cap = MIXED[dtype]
    off = {"float16": 2.0 ** -5, "bfloat16": 2.0 ** -3, "float32": 2.0 ** -8}[dtype]   # > atol + rtol, < the cap
    case, inputs = row(dtype, np.ones(100))
    for unmatched, expected in ((1, "passed"), (2, "failed")):
        actual = np.ones(100)
        actual[:unmatched] += off
        judged = verdict(case, inputs, actual, "mixed")
        assert judged.status == expected and judged.metrics["matched_ratio"] == (100 - unmatched) / 100
        assert judged.metrics["unmatched"] == unmatched and judged.metrics["max_abs_err"] == off < cap
    assert status(case, inputs, np.ones(100) + (np.arange(100) == 7) * off, "mixed",
                  {"required_matched_ratio": 1.0}) == "failed"


def test_mixed_counts_the_slice_not_the_whole_row():
    """TTK compares the whole output, whose elements outside the slice (dx = dy) count as matched; prmg judges the
    slice alone (the rest bit for bit, apart), so 2 of a 100-element slice unmatched in a 200-element row fail here
    (0.98) where TTK's share would be 198/200 = 0.99 (docs/standards.md, where prmg differs from TTK)."""
    case = make_case((1, 1, 1, 200), (0, 100), dtype="float32", cos_dtype="float32")
    inputs = Inputs(dy=np.ones(case.shape, np.float32), cos=np.ones(case.cos_shape, np.float32),
                    sin=np.zeros(case.cos_shape, np.float32))
    result = np.ones(case.shape, np.float32)
    result[..., :2] += 2.0 ** -8
    judged = judge(case, inputs, Outcome(status=0, dy=result), "mixed")
    assert judged.status == "failed" and judged.metrics["matched_ratio"] == 0.98


@pytest.mark.parametrize("dtype, golden, inside, outside", [
    ("float16", 64.0, 64.0625, 64.125),      # atol + rtol*64 = 0.127 > the cap 0.1
    ("bfloat16", 128.0, 129.0, 130.0),       # 2.02 > 1: an error of exactly the cap passes (<=)
    ("float32", 16.0, None, None),           # 0.0156 > 0.01: the float32 numbers either side of 16.01
])
def test_mixed_caps_the_largest_error(dtype, golden, inside, outside):
    """A limit a case sets (TTK's explicit max_abs_error_limit, here its floor): an error of the limit passes, the
    next one fails, and counts as unmatched though within atol + rtol*|g| (TTK: no 100% shown for a failure)."""
    rtol, atol, cap = MIXED[dtype]
    assert atol + rtol * golden > cap
    if inside is None:
        candidate = float(np.float32(golden + cap))
        while candidate - golden > cap:
            candidate = float(np.nextafter(np.float32(candidate), np.float32(0)))
        inside, outside = candidate, float(np.nextafter(np.float32(candidate), np.float32(np.inf)))
    assert inside - golden <= cap < outside - golden
    case, inputs = row(dtype, [golden, golden])
    limit = {"max_abs_error_limit": cap}
    passed = verdict(case, inputs, [inside, golden], "mixed", limit)
    assert passed.status == "passed" and passed.metrics["max_abs_err"] == inside - golden
    failed = verdict(case, inputs, [outside, golden], "mixed", limit)
    assert failed.status == "failed" and failed.metrics["unmatched"] == 1 and "max abs error" in failed.message


# --- single_bm (TTK's stat_rel_err) ---------------------------------------------------------------------------------

SINGLE_T = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -13}
STEP = {"float16": 2.0 ** -11, "bfloat16": 2.0 ** -8, "float32": U}     # each dtype's spacing just below 1


def relative(cos: float) -> float:
    """The relative error of a result 1 against the golden ``cos`` (dy 1): ``|1 - cos| / (|cos| + 1e-7)``."""
    return abs(1.0 - cos) / (abs(cos) + 1e-7)


def below_one_in(dtype: str, count: int) -> float:
    """The number ``count`` steps of ``dtype``'s spacing below 1: a golden exact in dy's dtype (and in float32), so
    that the golden rounded to dy's dtype, which ``single_bm`` and ``double_thousandth`` compare with, is itself."""
    return 1.0 - count * STEP[dtype]


def first_steps_to(limit: float, dtype: str) -> tuple[int, int]:
    """(k, k + 1): the last step count below 1 whose relative error is under ``limit``, and the first not."""
    guess = max(2, int(limit / STEP[dtype]))
    k = edge(lambda k: relative(below_one_in(dtype, k)) < limit, 0, guess * 2)
    return k, k + 1


@pytest.mark.parametrize("dtype", DTYPES)
def test_single_bm_mere_must_stay_below_t(dtype):
    """Both elements err alike, so MERE = MARE = the relative error: under T passes, T or more fails."""
    threshold = SINGLE_T[dtype]
    assert standard_parameters("single_bm", dtype) == {"threshold": threshold}
    inside, outside = first_steps_to(threshold, dtype)
    for steps, expected in ((inside, "passed"), (outside, "failed")):
        case, inputs = row(dtype, [1.0, 1.0], cos=below_one_in(dtype, steps))
        judged = verdict(case, inputs, 1.0, "single_bm")
        assert judged.status == expected and judged.metrics["MERE"] == relative(below_one_in(dtype, steps))
    case, inputs = row(dtype, [1.0, 1.0], cos=below_one_in(dtype, inside))
    exactly = relative(below_one_in(dtype, inside))              # T equal to MERE: not below it
    assert status(case, inputs, 1.0, "single_bm", {"threshold": exactly}) == "failed"
    assert status(case, inputs, 1.0, "single_bm", {"threshold": math.nextafter(exactly, 1)}) == "passed"


@pytest.mark.parametrize("dtype", DTYPES)
def test_single_bm_mare_must_stay_below_ten_t(dtype):
    """One element of 16 errs (MERE = MARE / 16 < T): MARE under 10T passes, 10T or more fails."""
    threshold = SINGLE_T[dtype]
    inside, outside = first_steps_to(10 * threshold, dtype)
    for steps, expected in ((inside, "passed"), (outside, "failed")):
        cos = np.ones(16)
        cos[5] = below_one_in(dtype, steps)
        case, inputs = row(dtype, np.ones(16), cos=cos)
        judged = verdict(case, inputs, 1.0, "single_bm")
        assert judged.status == expected and judged.metrics["MARE"] == relative(cos[5]), judged.metrics
        assert judged.metrics["MERE"] < threshold
    for steps in range(inside, inside + 64):                      # a MARE of exactly 10 T': not below 10 T'
        mare = relative(below_one_in(dtype, steps))
        if 10 * (mare / 10) == mare:
            break
    else:
        pytest.fail("no MARE near 10 T is 10 x a float64 number")
    above = mare / 10
    while not 10 * above > mare:
        above = math.nextafter(above, 1)
    cos = np.ones(16)
    cos[5] = below_one_in(dtype, steps)
    case, inputs = row(dtype, np.ones(16), cos=cos)
    assert status(case, inputs, 1.0, "single_bm", {"threshold": mare / 10}) == "failed"
    assert status(case, inputs, 1.0, "single_bm", {"threshold": above}) == "passed"


def test_single_bm_averages_over_the_finite_elements_only():
    """Two NaN lanes (golden NaN, result NaN: right) and four erring alike: MERE is their error, not 4/6 of it."""
    cos = below_one(3000)
    case, inputs = row("float32", [np.nan, np.nan, 1, 1, 1, 1], cos=cos)
    judged = verdict(case, inputs, [np.nan, np.nan, 1, 1, 1, 1], "single_bm", {"threshold": 0.8 * relative(cos)})
    assert judged.metrics["MERE"] == relative(cos) and judged.status == "failed"


# --- double_thousandth ------------------------------------------------------------------------------------------------

THOUSANDTH = {"float16": (1e-3, 1e-3, 0.1), "bfloat16": (4e-3, 4e-3, 0.1), "float32": (1e-4, 1e-4, 0.01)}


def thousandth(cos: float) -> float:
    """double_thousandth's relative error of a result 1 against the golden ``cos``: ``(|1 - cos| - 0) / |cos|``."""
    return (1.0 - cos) / cos


@pytest.mark.parametrize("dtype", DTYPES)
def test_double_thousandth_rel_share_and_cap(dtype):
    rel, share, cap = THOUSANDTH[dtype]
    assert standard_parameters("double_thousandth", dtype) == {"rel": rel, "share": share, "cap": cap, "atol": 0.0}
    # rel: one element of two, just within (not wrong) or just over (wrong: a share of 0.5)
    guess = max(2, int(rel / STEP[dtype]))
    inside = edge(lambda k: thousandth(below_one_in(dtype, k)) <= rel, 0, guess * 2)
    for steps, expected in ((inside, "passed"), (inside + 1, "failed")):
        case, inputs = row(dtype, [1.0, 1.0], cos=[below_one_in(dtype, steps), 1.0])
        judged = verdict(case, inputs, 1.0, "double_thousandth")
        assert judged.status == expected and judged.metrics["max_rel_err"] == thousandth(below_one_in(dtype, steps))
    # share: 1 / n wrong elements is exactly the limit (passes), 2 / n fails
    n = round(1 / share)
    for wrong, expected in ((1, "passed"), (2, "failed")):
        cos = np.ones(n)
        cos[:wrong] = below_one_in(dtype, inside + 1)
        case, inputs = row(dtype, np.ones(n), cos=cos)
        judged = verdict(case, inputs, 1.0, "double_thousandth")
        assert judged.status == expected and judged.metrics["rel_err_share"] == wrong / n
    # cap (shares allowed): just within passes, just over fails; cap 0 is no cap
    guess = max(2, int(cap / STEP[dtype]))
    inside = edge(lambda k: thousandth(below_one_in(dtype, k)) <= cap, 0, guess * 2)
    for steps, expected in ((inside, "passed"), (inside + 1, "failed")):
        case, inputs = row(dtype, [1.0, 1.0], cos=[below_one_in(dtype, steps), 1.0])
        assert status(case, inputs, 1.0, "double_thousandth", {"share": 1.0}) == expected
    assert status(case, inputs, 1.0, "double_thousandth", {"share": 1.0, "cap": 0.0}) == "passed"


@pytest.mark.parametrize("dtype", DTYPES)
def test_double_thousandth_atol_is_subtracted_first(dtype):
    """With rel 0 an element is wrong exactly when its error exceeds atol: an error of atol is not."""
    error = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -23}[dtype]
    case, inputs = row(dtype, [1.0, 1.0])
    assert status(case, inputs, 1 + error, "double_thousandth", {"rel": 0.0, "atol": error}) == "passed"
    assert status(case, inputs, 1 + error, "double_thousandth",
                  {"rel": 0.0, "atol": math.nextafter(error, 0)}) == "failed"


def test_single_bm_and_double_thousandth_compare_with_the_golden_in_dys_dtype():
    """TTK's stat_rel_err and close promote no golden (its needs_promote_golden): they compare with what the golden
    function returns, in the output's dtype. A float16 golden of 2^-30, below float16's smallest subnormal, is 0
    there, so a result of 0 passes both; against the float64 golden its relative error, 2^-30 / (2^-30 + 1e-7),
    was nine times single_bm's T, and double_thousandth's 1. A result one subnormal step off still fails."""
    case, inputs = row("float16", [1.0, 1.0], cos=2.0 ** -30)
    assert status(case, inputs, 0.0, "single_bm") == "passed"
    assert status(case, inputs, 0.0, "double_thousandth") == "passed"
    judged = verdict(case, inputs, 2.0 ** -24, "single_bm")
    assert judged.status == "failed" and judged.metrics["MERE"] == 2.0 ** -24 / 1e-7


# --- allclose ---------------------------------------------------------------------------------------------------------

TORCH = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5)}


@pytest.mark.parametrize("dtype", DTYPES)
def test_allclose_edges(dtype):
    rtol, atol = TORCH[dtype]
    assert standard_parameters("allclose", dtype) == {"rtol": rtol, "atol": atol}
    case, inputs = row(dtype, [1.0, 1.0])
    steps = edge(lambda k: up(1.0, dtype, k) - 1 <= atol + rtol, 0, 4096)
    assert status(case, inputs, up(1.0, dtype, steps), "allclose") == "passed"
    assert status(case, inputs, up(1.0, dtype, steps + 1), "allclose") == "failed"
    spacing = up(1.0, dtype) - 1                                 # exact edges: atol alone, rtol alone
    for tolerance in ({"atol": spacing, "rtol": 0.0}, {"atol": 0.0, "rtol": spacing}):
        assert status(case, inputs, 1 + spacing, "allclose", tolerance) == "passed"
        assert status(case, inputs, 1 + 2 * spacing, "allclose", tolerance) == "failed"
    case, inputs = row(dtype, [2.0, 2.0])                        # rtol scales with |expected|
    assert status(case, inputs, 2 + 2 * spacing, "allclose", {"atol": 0.0, "rtol": spacing}) == "passed"
    assert status(case, inputs, 2 + 4 * spacing, "allclose", {"atol": 0.0, "rtol": spacing}) == "failed"


def test_allclose_fails_a_finite_result_where_the_rounded_golden_is_infinite():
    """65520 rounds to +inf in float16: its largest finite number, 16 away (0.02 %), is no match for allclose,
    whose expected value is the rounded golden; +inf is."""
    case, inputs = row("float16", [65520 / 1.25, 0.0], cos=1.25)
    assert GRAD.golden_slice(inputs.dy, inputs.cos, inputs.sin, 1, (0, 2))[0, 0, 0, 0] == 65520.0
    assert status(case, inputs, [np.inf, 0.0], "allclose") == "passed"
    failed = verdict(case, inputs, [65504.0, 0.0], "allclose", {"rtol": 1.0, "atol": 1e30})
    assert failed.status == "failed"


# --- exact -----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_exact_is_bit_identity_but_for_nan_payloads(dtype):
    case, inputs = row(dtype, [1.0, 0.0, np.nan, np.nan])
    golden = GRAD.golden(inputs.dy, inputs.cos, inputs.sin, 1, (0, 4))
    assert judge(case, inputs, Outcome(status=0, dy=golden), "exact").status == "passed"
    payload = golden.copy()
    bits(payload)[..., 2] ^= 1                                   # another NaN
    assert np.isnan(payload[..., 2].astype(np.float32)).all()
    assert judge(case, inputs, Outcome(status=0, dy=payload), "exact").status == "passed"
    for lane in (0, 1):                                          # one ulp; -0.0 for +0.0
        changed = golden.copy()
        bits(changed)[..., lane] ^= 1 if lane == 0 else 1 << (8 * changed.itemsize - 1)
        judged = judge(case, inputs, Outcome(status=0, dy=changed), "exact")
        assert judged.status == "failed" and judged.metrics["mismatches"] == 1



TIE_FAULTS = ("cast_odd", "cast_ties_split", "cast_away")         # ties to odd, up/down by position, away from zero


@pytest.mark.verdict
def test_the_exact_cases_hold_the_cast_to_ties_to_even(emulator, monkeypatch):
    """edge.exact_*: every result exact in float32 (the float64 golden is a float32 value), none zero (whose sign the
    order of the operations may choose) nor below the dtype's normals (where flushing is legitimate), 70 or more of
    512 ties of dy's dtype; a correct kernel is bit-exact on each, and each cast sending ties elsewhere than to even
    fails each, though the default standard and its error balance pass ties to odd and ties split by position; the
    sample check judges these cases bit for bit too (without the golden, ties to odd passed them under --strict)."""
    from prmg_cli import error_balance
    from prmg_cli.cases.loader import load_cases
    from prmg_cli.device.acl import AclSession
    from prmg_cli.judging.checks import CheckContext
    from prmg_cli.judging.checks.sample import sample
    from prmg_cli.inputs.seeded import make_inputs
    from prmg_cli.ops import OPERATORS

    cases = [case for case in load_cases(["cases/edge.yaml"]) if case.name.startswith("edge.exact_")]
    assert len(cases) == 8 and {(case.op, case.dtype, case.cos_dtype) for case in cases} == {
        (op, dtype, cos) for op in ("grad", "forward") for dtype in ("float16", "bfloat16")
        for cos in (dtype, "float32")}
    with AclSession(emulator, 0) as session:
        for case in cases:
            assert case.standard == "exact"
            inputs = make_inputs(case)
            golden = OPERATORS[case.op].golden_slice(inputs.dy, inputs.cos, inputs.sin, case.rotary_mode,
                                                    case.partial_slice)
            assert (golden.astype(np.float32) == golden).all()
            assert (np.abs(golden) >= 2.0 ** FLOAT_FORMATS[case.dtype].min_exponent).all()
            dtype = ml_dtypes.bfloat16 if case.dtype == "bfloat16" else np.float16
            near = golden.astype(dtype)
            other = np.where(near.astype(np.float64) < golden, np.nextafter(near, dtype(np.inf)),
                             np.nextafter(near, dtype(-np.inf))).astype(np.float64)
            ties = (near != golden) & (np.abs(golden - near.astype(np.float64)) == np.abs(other - golden))
            assert ties.sum() >= 70, case.name
            for fault in ("", *TIE_FAULTS):
                monkeypatch.setenv("PRMG_EMU_FAULT", fault)
                outcome = session.launch(case, inputs)
                assert judge(case, inputs, outcome, "exact").status == ("failed" if fault else "passed"), \
                    (case.name, fault)
                checked = sample(CheckContext(case, inputs, outcome, session.launch))
                assert checked.passed != bool(fault) and (checked.metrics["sample_ratio"] is None) == bool(fault), \
                    (case.name, fault, checked)
                if fault in TIE_FAULTS[:2]:                  # unbiased, each error half an ulp: inside the budget
                    by_default = judge(case, inputs, outcome, "default")
                    assert by_default.status == "passed" and not error_balance.case_warning(by_default.metrics)

# --- double_benchmark (TTK's cross_check) -----------------------------------------------------------------------------

SMALL = {"float16": (2.0 ** -11, 2.0 ** -16), "bfloat16": (2.0 ** -8, 2.0 ** -16), "float32": (2.0 ** -14, 2.0 ** -30)}
LIMITS = ("mare_ratio", "mere_ratio", "rmse_ratio")


@pytest.mark.parametrize("dtype", DTYPES)
def test_double_benchmark_defaults_and_levels_are_ttks(dtype):
    small_value, atol = SMALL[dtype]
    base = {"small_ratio": 2.0, "small_value": small_value, "small_value_atol": atol}
    assert standard_parameters("double_benchmark", dtype) == {"level": 1.0, "mare_ratio": 5.0, "mere_ratio": 1.5,
                                                              "rmse_ratio": 1.5, **base}
    for level, limits in ((0, (10.0, 2.0, 2.0)), (1, (5.0, 1.5, 1.5)), (2, (2.0, 1.2, 1.2))):
        params = standard_parameters("double_benchmark", dtype, {"level": level})
        assert tuple(params[key] for key in LIMITS) == limits
    params = standard_parameters("double_benchmark", dtype, {"level": 2, "mere_ratio": 3.0})
    assert tuple(params[key] for key in LIMITS) == (2.0, 3.0, 1.2)        # a limit set beside a level wins


def test_double_benchmark_takes_ttks_level_names_in_a_case_file():
    """A case may name a level as TTK's spec does (``level: L2``): the same preset as ``level: 2``; a name TTK does
    not have is one line naming the field and the levels."""
    from prmg_cli.cases.loader import parse_document
    from conftest import ROOT

    def tolerance(level):
        mapping = {"name": "c", "shape": [1, 1, 1, 4], "standard": "double_benchmark", "tolerance": {"level": level}}
        return dict(parse_document([mapping], "t.yaml", ROOT)[0].tolerance)

    assert tolerance("L2") == tolerance(2) == {"level": 2.0}
    assert tuple(standard_parameters("double_benchmark", "float16", tolerance("L0"))[key] for key in LIMITS) == \
        (10.0, 2.0, 2.0)
    with pytest.raises(PrmgError) as caught:
        tolerance("L3")
    assert caught.value.field == "tolerance.level" and "one of 0 (L0), 1 (L1), 2 (L2), got 'L3'" in str(caught.value)


def ttk_ratio(device: float, reference: float, floor: float) -> float:
    """TTK's safe_div: 1 when both are 0, else ``device / max(reference, floor)``."""
    return 1.0 if device == reference == 0 else device / max(reference, floor)


def cross_check_figures(error: np.ndarray, golden: np.ndarray, small_value: float, atol: float):
    """(MARE, MERE, RMSE) over ``|golden| >= small_value`` and the count of the others with ``error > atol``."""
    large = np.abs(golden) >= small_value
    relative = error[large] / (np.abs(golden[large]) + 1e-7)
    return (relative.max(), relative.mean(), np.sqrt(np.mean(np.square(error[large]))),
            int((~large & (error > atol)).sum()))


@pytest.mark.parametrize("dtype", DTYPES)
def test_double_benchmark_ratios_are_ttks(dtype):
    """Seeded large and small values, cos in dy's dtype (so the reference rounds each product), a result a few
    ulps off here and there: each ratio is TTK's, computed here, and each limit holds at it exactly (a limit
    equal to the ratio passes, the next number below fails)."""
    small_value, atol = SMALL[dtype]
    rng = np.random.default_rng(5)
    g = rng.uniform(0.5, 2.0, 24)
    g[16:] *= small_value / 4                                   # small goldens
    dy, cos = exact(rounded(g, NUMPY[dtype]), dtype), exact(rounded(rng.uniform(0.5, 1.0, 24), NUMPY[dtype]), dtype)
    case, inputs = row(dtype, dy.astype(np.float64), cos=cos.astype(np.float64), cos_dtype=dtype)
    golden = dy.astype(np.float64) * cos.astype(np.float64)
    reference = (dy * cos).astype(np.float64)                   # the product rounded in dy's dtype
    actual = reference.copy()
    for lane, steps in ((1, 3), (4, 1), (9, 2)):                # large values a few ulps off
        actual[lane] = up(actual[lane], dtype, steps)
    for lane, off in ((17, 1.5 * atol), (20, 3 * atol), (22, 0.5 * atol)):      # small ones: two errors
        actual[lane] = float(rounded([golden[lane] + off], NUMPY[dtype]).astype(np.float64)[0])
    device = cross_check_figures(np.abs(actual - golden), golden, small_value, atol)
    ref = cross_check_figures(np.abs(reference - golden), golden, small_value, atol)
    expected = {key: ttk_ratio(device[i], ref[i], small_value) for i, key in enumerate(LIMITS)}
    lax = {"mare_ratio": 1e30, "mere_ratio": 1e30, "rmse_ratio": 1e30, "small_ratio": 1e30}
    judged = verdict(case, inputs, actual, "double_benchmark", lax)
    assert {key: judged.metrics[key] for key in LIMITS} == expected
    assert (judged.metrics["small_errors"], judged.metrics["reference_small_errors"]) == (device[3], ref[3]) == (2, 0)
    expected["small_ratio"] = device[3] / max(ref[3], 1)
    for key, value in expected.items():
        assert status(case, inputs, actual, "double_benchmark", {**lax, key: value}) == "passed"
        assert status(case, inputs, actual, "double_benchmark", {**lax, key: math.nextafter(value, 0)}) == "failed"
    as_reference = verdict(case, inputs, reference, "double_benchmark")          # the reference itself: ratios <= 1
    assert as_reference.status == "passed"
    assert [as_reference.metrics[key] for key in LIMITS] == [ttk_ratio(r, r, small_value) for r in ref[:3]]


@pytest.mark.parametrize("dtype", DTYPES)
def test_double_benchmark_small_values_are_below_small_value(dtype):
    """A golden of exactly small_value is a large value (|g| < small_value is small): an error there of 16 x
    small_value relative fails by the MARE ratio; counted as a small value it would be one error, which passes."""
    small_value, atol = SMALL[dtype]
    off = small_value * 2.0 ** -4
    case, inputs = row(dtype, [small_value, small_value])
    judged = verdict(case, inputs, [small_value + off, small_value], "double_benchmark")
    assert judged.status == "failed" and judged.metrics["small_errors"] == 0 and "MARE" in judged.message
    assert off > atol


@pytest.mark.parametrize("dtype", DTYPES)
def test_double_benchmark_small_value_errors(dtype):
    """Small goldens: an error of exactly small_value_atol is no error; the device's count over max(the reference's,
    1) may be 2. The reference errs where ``cos * dy`` falls between two numbers of the dtype (cos just below 1,
    dy just above): with a tiny small_value_atol each such element is a reference error."""
    small_value, atol = SMALL[dtype]
    scale = small_value / 2
    spacing = up(scale, dtype) - scale
    case, inputs = row(dtype, np.full(6, scale))
    assert status(case, inputs, [scale + atol] * 3 + [scale] * 3, "double_benchmark") == "passed"
    assert status(case, inputs, [up(scale + atol, dtype)] * 3 + [scale] * 3, "double_benchmark") == "failed"
    precision = FLOAT_FORMATS[dtype].precision
    tiny = {"small_value_atol": 2.0 ** -100}
    for rounded_lanes in (0, 1, 2):
        dy = np.full(16, scale)
        dy[:rounded_lanes] = scale * (1 + 2.0 ** (1 - precision))
        cos = np.ones(16)
        cos[:rounded_lanes] = 1 - 2.0 ** -precision
        case, inputs = row(dtype, dy, cos=cos, cos_dtype=dtype)
        reference = (inputs.dy * inputs.cos).astype(np.float64).reshape(-1)
        allowed = 2 * max(rounded_lanes, 1)
        for errors, expected in ((allowed, "passed"), (allowed + 1, "failed")):
            actual = reference.copy()
            extra = errors - rounded_lanes
            actual[8:8 + extra] += spacing                      # clean lanes one ulp off
            judged = verdict(case, inputs, actual, "double_benchmark", tiny)
            assert judged.metrics["reference_small_errors"] == rounded_lanes
            assert judged.status == expected and judged.metrics["small_errors"] == errors, judged.metrics


def test_double_benchmark_holds_a_result_whose_reference_overflows_to_the_default_budget():
    """Lane 1 is 1.5 * 60000 - 1.5 * 20000 = 60000: float16 products overflow in the same-precision reference, but
    a float32 kernel's 60000 is right (TTK's cross_check fails it); one ulp off (32) is over the budget."""
    case, inputs = row("float16", [20000.0, 60000.0], cos=[0.5, 1.5], sin=[1.5, 0.25], cos_dtype="float16")
    assert GRAD.golden_slice(inputs.dy, inputs.cos, inputs.sin, 1, (0, 2))[0, 0, 0, 1] == 60000.0
    right = GRAD.golden(inputs.dy, inputs.cos, inputs.sin, 1, (0, 2)).astype(np.float64).reshape(-1)
    assert verdict(case, inputs, right, "double_benchmark").status == "passed"
    judged = verdict(case, inputs, [right[0], 60032.0], "double_benchmark")
    assert judged.status == "failed" and "reference is not finite" in judged.message


# --- NaN and infinity under every standard --------------------------------------------------------------------------

def largest(dtype: str) -> float:
    """The dtype's largest finite number."""
    return float(ml_dtypes.finfo(NUMPY[dtype]).max)


def special_row(dtype: str):
    """Lanes 0, 1: golden +inf and -inf (an infinite dy); 2, 3: NaN; 4, 5: finite; 6: a finite golden of about 1.8 x
    the dtype's largest number, which rounds to +inf (7: 0)."""
    big = float(rounded([0.9 * largest(dtype)], NUMPY[dtype]).astype(np.float64)[0])
    case, inputs = row(dtype, [np.inf, 1.0, np.nan, np.nan, 0.5, 0.25, big, 0.0],
                       cos=[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 2.0, 1.0], sin=[1.0, 1.0, 0.0, 0.0, 0.5, 0.5, 0.0, 0.0])
    with np.errstate(all="ignore"):
        golden = GRAD.golden(inputs.dy, inputs.cos, inputs.sin, 1, (0, 8)).astype(np.float64).reshape(-1)
    assert golden[0] == np.inf and golden[1] == -np.inf and np.isnan(golden[2:4]).all() and golden[6] == np.inf
    assert np.isfinite(golden[4:6]).all()
    return case, inputs, golden


WRONG_SPECIALS = [  # (lane, value (None: the dtype's largest number), why it is wrong)
    (0, -np.inf, "a wrong-sign infinity where the golden is infinite"),
    (0, np.nan, "NaN where the golden is infinite"),
    (0, 1.0, "a finite result where the golden is infinite"),
    (6, -np.inf, "a wrong-sign infinity where the golden rounds to infinity"),
    (6, None, "the dtype's largest number where the golden (1.8 x it) rounds to infinity"),
    (2, 1.0, "a finite result where the golden is NaN"),
    (2, np.inf, "an infinity where the golden is NaN"),
    (4, np.nan, "NaN where the golden is finite"),
    (4, np.inf, "an infinity where the golden is finite"),
]


@pytest.mark.parametrize("standard", STANDARDS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_nan_and_infinity_rules_under_every_standard(standard, dtype):
    case, inputs, golden = special_row(dtype)
    with np.errstate(all="ignore"):
        assert status(case, inputs, golden, standard) == "passed"
        for lane, value, why in WRONG_SPECIALS:
            wrong = golden.copy()
            wrong[lane] = largest(dtype) if value is None else value
            assert status(case, inputs, wrong, standard) == "failed", why


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_finite_result_where_the_golden_rounds_to_infinity_is_infinitely_wrong(dtype):
    """single_bm and double_thousandth compare with the golden rounded to dy's dtype: where it rounds to an infinity,
    the dtype's largest number is infinitely wrong (its relative error inf / inf would be NaN, which a mean, a max or
    a threshold would drop or let through), and the failure says so."""
    case, inputs, golden = special_row(dtype)
    wrong = golden.copy()
    wrong[6] = largest(dtype)
    with np.errstate(all="ignore"):
        single, double = (verdict(case, inputs, wrong, name) for name in ("single_bm", "double_thousandth"))
    assert single.status == double.status == "failed"
    assert single.message.startswith("MERE inf >= T ") and "; MARE inf >= 10T " in single.message
    assert double.metrics["rel_err_share"] == 1 / 8 and double.message.startswith("1 of 8 elements (0.125) have ")

# --- default: its edge and its budget on every path -------------------------------------------------------------------

PATHS = ("whole", "numpy", "native")


@pytest.fixture(params=PATHS)
def path(request, monkeypatch):
    """Judge through the whole-array checks (the one pass takes no case), or first through the one pass: numpy blocks
    or the compiled scan."""
    if request.param == "whole":
        monkeypatch.setattr(default_pass, "_takes", lambda *args: False)
    else:
        monkeypatch.setattr(default_pass, "FAST_MIN_ELEMENTS", 0)
        if request.param == "native" and not native.available():
            pytest.skip("the compiled helper cannot be built here")
        if request.param == "numpy":
            monkeypatch.setattr(default_pass, "_native_scans", lambda *args: None)
    return request.param


def budget(golden: float, magnitude: float, dtype: str, scale: float = 1.0) -> float:
    """The default budget, from its module's formula, in its order of operations:
    ``scale * (ulp_dy(|g| + E)/2 + E) + min(m, 4*2^-126) + 2^-147``, ``E = (2u + u^2) m``."""
    fmt = FLOAT_FORMATS[dtype]
    computation = magnitude * (2 * U + U * U)
    x = abs(golden) + computation
    exponent = math.frexp(x)[1] - 1 if x > 0 else fmt.min_exponent
    half = 0.5 * 2.0 ** (max(exponent, fmt.min_exponent) - fmt.precision + 1)
    return (half + computation) * scale + min(magnitude, 4 * 2.0 ** -126) + 2.0 ** -147


def proved(case, inputs, actual, tolerance=None) -> bool:
    """Whether the one pass proved the result right on its own (the whole-array checks then never run)."""
    result = exact(np.broadcast_to(np.asarray(actual, np.float64), (case.shape[-1],)), case.dtype).reshape(case.shape)
    with np.errstate(all="ignore"):
        return default_pass.fast_default(case, inputs, result, tolerance, {}) is not None


def test_default_passes_an_error_equal_to_its_budget(path):
    """dy [1, 1], cos = sin = 1: lane 1 is 1 - 1 = 0 with m = 2; with budget_scale 0 its budget is 2^-124 + 2^-147,
    a float32 number: a result of exactly that passes on every path, the next float32 number fails."""
    case, inputs = row("float32", [1.0, 1.0], cos=1.0, sin=1.0)
    limit = budget(0.0, 2.0, "float32", 0.0)
    assert limit == 2.0 ** -124 + 2.0 ** -147
    zero = {"budget_scale": 0.0}
    passed = verdict(case, inputs, [2.0, limit], "default", zero)
    assert passed.status == "passed" and passed.metrics["max_err_ratio"] == 1.0
    assert verdict(case, inputs, [2.0, up(limit, "float32")], "default", zero).status == "failed"
    if path != "whole":
        assert proved(case, inputs, [2.0, limit], zero)


@pytest.mark.parametrize("dtype", DTYPES)
def test_default_budget_edge_per_dtype(path, dtype):
    """A result 1 against the golden cos (just below 1): the largest error within the budget passes, the next
    one fails, on every path; the one pass proves the first itself."""
    def within(steps):
        cos = below_one(steps)
        return 1.0 - cos <= budget(cos, cos, dtype)

    guess = int(budget(1.0, 1.0, dtype) / U)
    inside = edge(within, guess // 2, guess * 2)
    for steps, expected in ((inside, "passed"), (inside + 1, "failed")):
        case, inputs = row(dtype, [1.0, 1.0], cos=[below_one(steps), 1.0])
        assert status(case, inputs, 1.0, "default") == expected, steps
    if path != "whole":
        case, inputs = row(dtype, [1.0, 1.0], cos=[below_one(inside), 1.0])
        assert proved(case, inputs, 1.0)


def test_block_budget_through_the_subnormal_terms_bit_for_bit():
    """``default_budget_into`` leaves the two subnormal terms out of a block only where adding them changes no bit:
    blocks of magnitudes 2^-100 .. 2^-30, one binade each (no zeros), so that each decision is the block's own, give
    ``default_budget``'s bits, for each dtype and scale."""
    rng = np.random.default_rng(3)
    for fmt in FLOAT_FORMATS.values():
        for scale in (1.0, 0.5, 3.0):
            for exponent in range(-100, -29):
                golden = rng.uniform(1.0, 2.0, 64) * 2.0 ** exponent * rng.choice([-1.0, 1.0], 64)
                magnitude = np.abs(golden) * rng.uniform(1.0, 1.5, 64)
                expected = default_standard.default_budget(np.abs(golden), magnitude, fmt, scale)
                got = default_standard.default_budget_into(golden, magnitude, fmt, scale, np.empty(64), np.empty(64))
                assert np.array_equal(expected.view(np.uint64), got.view(np.uint64)), (fmt, scale, exponent)


@pytest.mark.parametrize("dtype", DTYPES)
def test_compiled_and_numpy_passes_agree_bit_for_bit_through_the_subnormal_terms(dtype, monkeypatch):
    """Results of a float32 kernel (and one ulp off here and there) on inputs whose products are 2^-90 .. 2^-40 --
    where the budget's subnormal terms decide its last bits -- get the same metrics, to the bit, from the compiled
    pass, the numpy block pass and the whole-array judge."""
    from kernels import correct_kernel
    from test_perf_equivalence import reference_judge, same_verdict

    monkeypatch.setattr(default_pass, "FAST_MIN_ELEMENTS", 0)
    rng = np.random.default_rng(11)
    case = make_case((1, 2, 2, 16), (0, 16), dtype=dtype, cos_dtype="float32")
    for exponent in range(-90, -39, 2):
        dy_scale, table_scale = (1.0, 2.0 ** exponent) if dtype == "float16" else (2.0 ** exponent, 1.0)
        dy = rounded(rng.uniform(1, 2, case.shape) * dy_scale, NUMPY[dtype])
        cos, sin = (rounded(rng.uniform(0.5, 1, case.cos_shape) * table_scale, np.float32) for _ in "cs")
        inputs = Inputs(dy, cos, sin)
        good = correct_kernel(dy, cos, sin, 1, (0, 16))
        nudged = good.copy()
        bits(nudged).reshape(-1)[::7] += 1
        for result in (good, nudged):
            outcome = Outcome(status=0, dy=result)
            slow = reference_judge(case, inputs, outcome)
            compiled = judge(case, inputs, outcome)
            with monkeypatch.context() as numpy_only:
                numpy_only.setattr(default_pass, "_native_scans", lambda *args: None)
                numpy_pass = judge(case, inputs, outcome)
            same_verdict(compiled, slow)
            same_verdict(numpy_pass, slow)


# --- outside the slice: every byte of a row, on every path ------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_every_byte_outside_the_slice_is_compared(path, dtype):
    """The sign bit (the last byte in memory) of the last element of a row, or of the first, flipped outside the
    slice -- in the first, a middle and the last row -- fails on every path: the one pass compares the bytes
    outside the slice itself, and once it passes a result nothing else looks at them."""
    from kernels import correct_kernel

    case = make_case((2, 3, 4, 40), (8, 32), dtype=dtype, broadcast="1S1D")
    rng = np.random.default_rng(7)
    inputs = Inputs(rounded(rng.uniform(-1, 1, case.shape), NUMPY[dtype]),
                    *(rounded(rng.uniform(-1, 1, case.cos_shape), np.float32) for _ in "cs"))
    good = correct_kernel(inputs.dy, inputs.cos, inputs.sin, 1, (8, 32))
    assert judge(case, inputs, Outcome(status=0, dy=good)).status == "passed"
    sign = 1 << (8 * good.itemsize - 1)
    for where in ((0, 0, 0, 39), (1, 1, 2, 39), (1, 2, 3, 39), (0, 0, 0, 0), (1, 2, 3, 7), (1, 2, 3, 32)):
        flipped = good.copy()
        bits(flipped)[where] ^= sign
        judged = judge(case, inputs, Outcome(status=0, dy=flipped))
        assert judged.status == "failed" and "outside the slice" in judged.message, where


@pytest.mark.parametrize("native_on", [True, False], ids=["compiled", "numpy"])
def test_the_emulators_clobber_row_end_fails_a_case_the_one_pass_judges(emulator, monkeypatch, native_on):
    """The emulator's clobber_row_end flips the sign bit of the last element of the last row, after the slice: on a
    case large enough for the one pass, the compiled scan and the numpy blocks each fail it."""
    import dataclasses

    from prmg_cli.device.acl import AclSession
    from prmg_cli.inputs.seeded import make_inputs

    if native_on and not native.available():
        pytest.skip("the compiled helper cannot be built here")
    if not native_on:
        monkeypatch.setattr(default_pass, "_native_scans", lambda *args: None)
    case = dataclasses.replace(make_case((2, 8, 4, 160), (16, 144), dtype="float16", broadcast="1S1D"), seed=5)
    assert case.shape[0] * case.shape[1] * case.shape[2] * case.shape[3] >= default_pass.FAST_MIN_ELEMENTS
    inputs = make_inputs(case)
    with AclSession(emulator, 0) as session:
        assert judge(case, inputs, session.launch(case, inputs)).status == "passed"
        monkeypatch.setenv("PRMG_EMU_FAULT", "clobber_row_end")
        outcome = session.launch(case, inputs)
    assert (bits(outcome.dy) != bits(inputs.dy)).reshape(-1, 160)[-1, 144:].tolist() == [False] * 15 + [True]
    judged = judge(case, inputs, outcome)
    assert judged.status == "failed" and "outside the slice at d=159" in judged.message, judged.message


# --- default: the error balance's counts (issue 34) on every path -----------------------------------------------

def balance_floor(dtype: str) -> float:
    """The smallest |golden| whose error the balance counts, found from its rule: where the dtype's ulp is at least
    2^24 times the budget's flush-to-zero term 4 * 2^-126, i.e. 2^-100 (0: everywhere, when even the ulp at 0 is)."""
    fmt = FLOAT_FORMATS[dtype]
    if fmt.smallest >= 2.0 ** -100:
        return 0.0
    exponent = fmt.min_exponent
    while 2.0 ** (exponent - fmt.precision + 1) < 2.0 ** -100:
        exponent += 1
    return 2.0 ** exponent


@pytest.mark.parametrize("specials", [False, True], ids=["plain", "with-specials"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_error_balance_counts_from_its_floor_on_every_path(path, dtype, specials):
    """Errors above and below the golden, and toward zero or not, counted where |golden| >= the floor (an error at
    exactly the floor counts, one just below does not), an exact element neither way, a right NaN or infinity never
    (with them the compiled pass judges the chunk element by element): the same counts on every path."""
    floor = balance_floor(dtype)
    base = floor or 2.0 ** -20
    tiny = float(FLOAT_FORMATS[dtype].smallest)
    #         at the floor, up   just below it        exact         above 4 base, down   g = 0, up   g = 0, exact
    dy = [base, base, 2 * base, 4 * base, 0.0, 0.0]
    cos = [1.0, 1 - 2.0 ** -24, 1.0, 1 + 2.0 ** -23, 1.0, 1.0]          # the float32 numbers either side of 1
    actual = [up(base, dtype), base, 2 * base, 4 * base, tiny, 0.0]
    if specials:                               # NaN for NaN; an overflow to +inf that float32 gives too
        big = float(rounded([0.9 * largest(dtype)], NUMPY[dtype]).astype(np.float64)[0])
        dy, cos = dy + [np.nan, np.nan, big, 0.0], cos + [1.0, 1.0, 2.0, 1.0]
        actual = actual + [np.nan] * 2 + [np.inf, 0]
    golden, actual_values = np.asarray(dy) * np.asarray(cos), np.asarray(actual)
    counted = (np.abs(golden) >= floor) & np.isfinite(golden) & np.isfinite(actual_values)
    expected = {"balance_up": int((counted & (actual_values > golden)).sum()),
                "balance_down": int((counted & (actual_values < golden)).sum()),
                "balance_toward": int((counted & (np.abs(actual_values) < np.abs(golden))).sum())}
    expected["balance_away"] = expected["balance_up"] + expected["balance_down"] - expected["balance_toward"]
    assert list(expected.values()) == ([1, 1, 1, 1] if floor else [3, 1, 1, 3])       # up, down, toward, away
    case, inputs = row(dtype, dy, cos=cos)
    with np.errstate(all="ignore"):
        judged = verdict(case, inputs, actual, "default", {"budget_scale": 3.0})
        assert judged.status == "passed"
        assert path == "whole" or proved(case, inputs, actual, {"budget_scale": 3.0})
    assert {key: judged.metrics[key] for key in expected} == expected


def directed(golden: np.ndarray, dtype: str, toward: float) -> np.ndarray:
    """``golden`` rounded to ``dtype`` toward ``toward`` (+inf, -inf or 0): of the nearest value and its two
    neighbours, the closest on that side of the golden."""
    nearest = rounded(golden, NUMPY[dtype])
    pattern = bits(nearest)
    candidates = np.stack([nearest.astype(np.float64)] + [(pattern + pattern.dtype.type(1)).view(NUMPY[dtype]).astype(
        np.float64), (pattern - pattern.dtype.type(1)).view(NUMPY[dtype]).astype(np.float64)])
    with np.errstate(invalid="ignore"):
        beyond = np.abs(candidates) > np.abs(golden) if toward == 0 else np.sign(toward) * (candidates - golden) < 0
        wrong_side = np.isnan(candidates) | beyond
    distance = np.where(wrong_side, np.inf, np.abs(candidates - golden))
    return np.take_along_axis(candidates, distance.argmin(axis=0)[None], axis=0)[0].astype(NUMPY[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("toward", [np.inf, -np.inf, 0.0], ids=["up", "down", "zero"])
def test_error_balance_warns_of_errors_all_one_way_on_every_path(path, dtype, toward):
    """A result rounded (float32) or cast (float16, bfloat16: a budget widened 2.5 times, so that only the balance
    can see it) toward +inf, toward -inf or toward zero: every element within budget, every inexact one on one side
    of the golden (toward zero: above it where it is negative, below where positive, an even split the magnitude
    test sees). Rounded to nearest, it gets no warning."""
    case = make_case((1, 1, 2, 64), (0, 64), dtype=dtype, broadcast="BSND")
    rng = np.random.default_rng(12)
    inputs = Inputs(rounded(rng.uniform(-1, 1, case.shape), NUMPY[dtype]),
                    *(rounded(rng.uniform(-1, 1, case.cos_shape), np.float32) for _ in "cs"))
    golden = GRAD.golden_slice(inputs.dy, inputs.cos, inputs.sin, 1, (0, 64))
    tolerance = None if dtype == "float32" else {"budget_scale": 2.5}
    judged = judge(case, inputs, Outcome(status=0, dy=directed(golden, dtype, toward)), tolerance=tolerance)
    away, toward_key = (("balance_away", "balance_toward") if toward == 0 else ("balance_down", "balance_up")
                        if toward > 0 else ("balance_up", "balance_down"))
    assert judged.status == "passed" and judged.metrics[away] == 0 and judged.metrics[toward_key] > 100
    assert any(warning.startswith("biased: ") and ("toward zero" in warning) == (toward == 0)
               for warning in judged.warnings), judged.warnings
    nearest = judge(case, inputs, Outcome(status=0, dy=rounded(golden, NUMPY[dtype])), tolerance=tolerance)
    assert nearest.status == "passed" and not nearest.warnings


def test_error_balance_sign_test_edges():
    """n = 10000 counted errors: a lead of 540 is beyond chance (2 exp(-540^2 / 20000) < 1e-6), 538 is not; a case
    of 29 counted errors is pooled with the run's other small cases, one of 30 is tested alone."""
    from prmg_cli import error_balance
    from prmg_cli.results import CaseResult

    assert 2 * math.exp(-540 ** 2 / 20000) < 1e-6 < 2 * math.exp(-538 ** 2 / 20000)
    assert error_balance.case_warning({"balance_up": 5270, "balance_down": 4730}).startswith("biased: 5270 of 10000 ")
    assert error_balance.case_warning({"balance_up": 5269, "balance_down": 4731}) == ""
    assert error_balance.case_warning({"balance_up": 30, "balance_down": 0}) and not error_balance.case_warning(
        {"balance_up": 29, "balance_down": 0})
    small = lambda name, up: CaseResult(name, "passed", op="grad", dtype="float32",
                                        metrics={"balance_up": up, "balance_down": 0})
    assert error_balance.pooled([small("a", 29), small("b", 29)])[0].startswith("biased (pooled over the 2 small ")
    assert error_balance.pooled([small("a", 29), small("b", 30)]) == []     # b is no small case: a alone is too few
