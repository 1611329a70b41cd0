"""The comparator: standards, always-on checks, diagnosis -- against a numpy model of the kernel."""

from __future__ import annotations

import json
import re

import ml_dtypes
import numpy as np
import pytest

from kernels import FAULTS, correct_kernel, faulty_kernel, lane_map
from prmg_cli.cases.loader import Case, Expect
from prmg_cli.device.acl import Outcome
from prmg_cli.dtypes import FLOAT_FORMATS, OPERATOR_DTYPES as DTYPES, to_numpy
from prmg_cli.errors import PrmgError
from prmg_cli.inputs.seeded import Inputs
from prmg_cli.judging.judge import judge
from prmg_cli.judging.standards import STANDARDS, check_standard, margin
from prmg_cli.judging.verdict_metrics import key_metric
from prmg_cli.ops import GRAD
from prmg_cli.reports.outputs.table import essentials
from prmg_cli.status import STATUS_CODES
from prmg_cli.vocab import BROADCASTS

pytestmark = pytest.mark.verdict       # make test-verdict (and make mutate) run these first

PAIRS = [(dy, table) for dy in DTYPES for table in DTYPES]
NUMPY = {name: to_numpy(name) for name in DTYPES}


def make_case(shape, partial_slice, *, mode=1, dtype="float32", cos_dtype="float32", broadcast="BSND",
              expect=None, name="t"):
    length = partial_slice[1] - partial_slice[0]
    cos_shape = tuple(size if letter != "1" else 1 for size, letter in zip(shape[:3], broadcast)) + (length,)
    return Case(name=name, source="t", shape=tuple(shape), cos_shape=cos_shape, sin_shape=cos_shape,
                partial_slice=tuple(partial_slice), rotary_mode=mode, dtype=dtype, cos_dtype=cos_dtype,
                sin_dtype=cos_dtype, expect=Expect(*expect) if isinstance(expect, tuple) else Expect(expect))


def rope_tables(case):
    """Real RoPE cos/sin for positions s (scaled up to long contexts), laid out for the case's mode:
    both elements of a pair share one angle."""
    length = case.cos_shape[-1]
    own, partner, _ = lane_map(case.rotary_mode, length)
    pair = np.minimum(own, partner) % max(1, length // 2)          # the pair each lane belongs to
    frequency = 10000.0 ** (-2.0 * pair / length)
    positions = np.arange(case.cos_shape[1]).reshape(1, -1, 1, 1) * 997 + 1
    angle = np.broadcast_to(positions * frequency, case.cos_shape)
    return np.cos(angle), np.sin(angle)


def make_inputs(case, rng, *, scale=1.0, dist="uniform", table="random", table_scale=1.0):
    """dy of ``dist`` at ``scale`` and cos/sin tables, each in its case dtype.

    dist "cancel": dy values chosen so that the "+" lanes' two products cancel (up to rounding)."""
    draw = (lambda shape: rng.uniform(-1, 1, shape)) if dist != "normal" else (lambda shape: rng.normal(0, 1, shape))
    dy = draw(case.shape) * scale
    if table == "rope":
        cos, sin = rope_tables(case)
    else:
        cos, sin = draw(case.cos_shape) * table_scale, draw(case.cos_shape) * table_scale
    cos, sin = cos.astype(NUMPY[case.cos_dtype]), sin.astype(NUMPY[case.sin_dtype])
    if dist == "cancel":
        start, end = case.partial_slice
        own, partner, sign = lane_map(case.rotary_mode, end - start)
        plus = sign > 0
        rows = case.shape[:3] + (end - start,)
        c, s = np.broadcast_to(cos.astype(np.float64), rows), np.broadcast_to(sin.astype(np.float64), rows)
        g = dy[..., start:end]
        safe = np.abs(s[..., partner[plus]]) > 0.05
        wanted = -c[..., own[plus]] * g[..., own[plus]] / np.where(safe, s[..., partner[plus]], 1)
        g[..., partner[plus]] = np.where(safe, wanted, g[..., partner[plus]])
    with np.errstate(over="ignore"):                    # a scale beyond the dtype's range is meant to give +-inf
        return Inputs(dy=dy.astype(NUMPY[case.dtype]), cos=cos, sin=sin)


def run(kernel, case, inputs, standard="default", tolerance=None):
    result = kernel(inputs.dy, inputs.cos, inputs.sin, case.rotary_mode, case.partial_slice)
    return judge(case, inputs, Outcome(status=0, dy=result), standard, tolerance)


def text(verdict):
    return (verdict.message + "\n" + "\n".join(verdict.details)).lower()


# --- the default standard passes a correct fp32 kernel on any data --------------------------------

SCALES = {
    "float32": (1e-40, 1e-30, 1e-5, 1.0, 1e4, 1e30, 3e38),
    "bfloat16": (1e-40, 1e-30, 1e-5, 1.0, 1e4, 1e30, 3e38),
    "float16": (1e-7, 1e-4, 1e-2, 1.0, 100.0, 6e4),
}


def random_case(rng, seed: int, name: str, *, most_pairs: int, most_rows: int):
    """A seeded case (dtype pair by ``seed``; mode, slice, shape and broadcast drawn from ``rng``: at most
    ``most_pairs`` rotary groups and ``most_rows`` per B/S/N axis) and the scale of its inputs."""
    dtype, cos_dtype = PAIRS[seed % len(PAIRS)]
    mode = int(rng.integers(4))
    step = 4 if mode == 2 else 2
    length = step * int(rng.integers(1, most_pairs + 1))
    start = int(rng.integers(0, 9))
    depth = start + length + int(rng.integers(0, 6))
    shape = tuple(int(v) for v in rng.integers(1, most_rows + 1, 3)) + (depth,)
    case = make_case(shape, (start, start + length), mode=mode, dtype=dtype, cos_dtype=cos_dtype,
                     broadcast=BROADCASTS[int(rng.integers(len(BROADCASTS)))], name=name)
    return case, float(rng.choice(SCALES[dtype]))


def sweep_case(seed):
    rng = np.random.default_rng(seed)
    case, scale = random_case(rng, seed, f"sweep{seed}", most_pairs=16, most_rows=3)
    dist = str(rng.choice(["uniform", "normal", "cancel"]))
    table = str(rng.choice(["random", "rope"]))
    table_scale = float(rng.choice([1.0, 1.0, 1e-3, 4.0])) if scale < 1e30 else 1.0
    return case, make_inputs(case, rng, scale=scale, dist=dist, table=table, table_scale=table_scale)


def test_correct_kernel_passes_default_on_a_wide_sweep():
    failures, worst = [], 0.0
    for seed in range(216):
        with np.errstate(all="ignore"):                        # near-max data overflows, as it should
            case, inputs = sweep_case(seed)
            verdict = run(correct_kernel, case, inputs)
        worst = max(worst, verdict.metrics["max_err_ratio"])
        if verdict.status != "passed":
            failures.append(f"{case}: {verdict.message}")
    assert not failures, "\n".join(failures[:5])
    assert 0.05 < worst < 1          # the budget is used, not absurdly loose


def test_flush_to_zero_kernel_passes_default_yet_a_noop_fails_on_subnormal_data():
    passed = 0
    for seed in range(216):
        with np.errstate(all="ignore"):
            case, _ = sweep_case(seed)
        if case.dtype == "float16" or seed % 3:
            continue
        for dy_scale, table_scale in ((1e-40, 1.0), (1e-38, 1.0), (1.0, 1e-39), (1e-20, 1e-19)):
            rng = np.random.default_rng(seed)
            tiny = make_inputs(case, rng, scale=dy_scale, table_scale=table_scale)
            verdict = run(lambda *a: correct_kernel(*a, flush=True), case, tiny)
            assert verdict.status == "passed", (case, dy_scale, verdict.message)
            passed += 1
    assert passed > 100
    case = make_case((2, 2, 2, 32), (0, 32), broadcast="BSND")
    inputs = make_inputs(case, np.random.default_rng(0), scale=1e-40)
    assert run(correct_kernel, case, inputs).status == "passed"
    assert run(lambda *a: faulty_kernel("noop", *a), case, inputs).status == "failed"


@pytest.mark.parametrize("dtype,cos_dtype", PAIRS)
def test_correct_kernel_passes_default_on_many_cancelling_elements(dtype, cos_dtype):
    rng = np.random.default_rng(7)
    case = make_case((4, 16, 2, 128), (0, 128), dtype=dtype, cos_dtype=cos_dtype, broadcast="1S1D")
    for dist in ("uniform", "cancel"):
        verdict = run(correct_kernel, case, make_inputs(case, rng, dist=dist))
        assert verdict.status == "passed", verdict.message


@pytest.mark.parametrize("dtype", DTYPES)
def test_default_accepts_overflow_to_infinity_near_the_dtype_maximum(dtype):
    case = make_case((2, 4, 2, 32), (0, 32), dtype=dtype, cos_dtype="float32")
    largest = float(ml_dtypes.finfo(NUMPY[dtype]).max)
    with np.errstate(over="ignore", invalid="ignore"):
        inputs = make_inputs(case, np.random.default_rng(3), scale=largest * 0.999)
        result = correct_kernel(inputs.dy, inputs.cos, inputs.sin, 1, (0, 32))
    assert np.isinf(result.astype(np.float32)).any()
    assert judge(case, inputs, Outcome(status=0, dy=result)).status == "passed"


def test_default_accepts_non_finite_results_where_a_float32_product_overflows():
    case = make_case((2, 4, 2, 32), (0, 32), dtype="float32", cos_dtype="float32")
    with np.errstate(over="ignore", invalid="ignore"):
        inputs = make_inputs(case, np.random.default_rng(3), scale=3e38, table_scale=4.0)
        result = correct_kernel(inputs.dy, inputs.cos, inputs.sin, 1, (0, 32))
    assert np.isnan(result).any()
    assert judge(case, inputs, Outcome(status=0, dy=result)).status == "passed"
    assert judge(case, inputs, Outcome(status=0, dy=result), "allclose").status == "failed"


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
def test_kernel_model_and_golden_agree(mode):
    from kernels import _rotate
    from prmg_cli.ops import GRAD
    case = make_case((2, 3, 2, 40), (8, 40), mode=mode, broadcast="1S1D")
    inputs = make_inputs(case, np.random.default_rng(mode))
    model = _rotate(inputs.dy, inputs.cos, inputs.sin, mode, (8, 40), compute=np.float64)
    np.testing.assert_array_equal(model, GRAD.golden_slice(inputs.dy, inputs.cos, inputs.sin, mode, (8, 40)))


# --- the default standard catches each fault, and says where --------------------------------------

LOCALISED = {
    # fault: (mode, shape, slice, broadcast, text the diagnosis must contain)
    "sign": (1, (2, 3, 2, 40), (8, 40), "1S1D", "errors only on odd lanes"),
    "own_sin": (1, (2, 3, 2, 40), (8, 40), "1S1D", "elements over budget"),
    "half_pairing": (1, (2, 3, 2, 40), (8, 40), "1S1D", "elements over budget"),
    "shift_slice": (1, (2, 3, 2, 48), (8, 40), "1S1D", "outside the slice at d=40-41"),
    "ignore_broadcast": (1, (2, 3, 2, 40), (8, 40), "1S1D",
                         "all rows sharing cos row (s=0) are right, the others wrong"),
    "skip_last_row": (1, (2, 3, 2, 40), (8, 40), "BSND", "errors only in the last (b, s, n) row (1, 2, 1)"),
    "skip_tail": (1, (1, 4, 2, 128), (64, 128), "111D", "errors only at d in [120, 128)"),
    "clobber_passthrough": (1, (2, 3, 2, 48), (8, 40), "1S1D", "outside the slice at d=40 (12 elements, every row)"),
    "bf16_compute": (1, (2, 3, 2, 40), (8, 40), "1S1D", "elements over budget"),
    "noop": (1, (2, 3, 2, 40), (8, 40), "1S1D", "every element wrong"),
    "nan": (1, (2, 3, 2, 40), (8, 40), "1S1D", "nan at (b, s, n, d)=(1, 0, 0, 24)"),
    "cos_cast": (1, (2, 3, 2, 40), (8, 40), "1S1D", "elements over budget"),
    "truncate": (1, (2, 3, 2, 40), (8, 40), "1S1D", "elements over budget"),
    "negate_sin": (1, (2, 3, 2, 40), (8, 40), "1S1D", "elements over budget"),
    "swap_tables": (1, (2, 3, 2, 40), (8, 40), "1S1D", "elements over budget"),
}


@pytest.mark.parametrize("fault", FAULTS)
def test_default_catches_each_fault_with_its_localisation(fault):
    mode, shape, partial_slice, broadcast, expected_text = LOCALISED[fault]
    dtype, cos_dtype = ("bfloat16", "float32") if fault in ("cos_cast", "truncate") else ("float32", "float32")
    case = make_case(shape, partial_slice, mode=mode, dtype=dtype, cos_dtype=cos_dtype, broadcast=broadcast)
    inputs = make_inputs(case, np.random.default_rng(11))
    verdict = run(lambda *args: faulty_kernel(fault, *args), case, inputs)
    assert verdict.status == "failed"
    assert expected_text in text(verdict), text(verdict)


def test_sign_fault_in_half_mode_is_localised_to_the_second_half():
    case = make_case((2, 2, 1, 64), (0, 64), mode=0)
    verdict = run(lambda *a: faulty_kernel("sign", *a), case, make_inputs(case, np.random.default_rng(1)))
    assert "errors only in the second half of the slice" in text(verdict)


@pytest.mark.parametrize("dtype,cos_dtype", PAIRS)
@pytest.mark.parametrize("mode", [0, 1, 2, 3])
def test_bf16_arithmetic_is_caught_for_every_dtype_pair_and_mode(dtype, cos_dtype, mode):
    case = make_case((2, 4, 2, 64), (0, 64), mode=mode, dtype=dtype, cos_dtype=cos_dtype, broadcast="1S1D")
    inputs = make_inputs(case, np.random.default_rng(mode))
    verdict = run(lambda *a: faulty_kernel("bf16_compute", *a), case, inputs)
    assert verdict.status == "failed" and verdict.metrics["bad"] >= 5, verdict.metrics


@pytest.mark.parametrize("dtype,cos_dtype", [("float16", "float32"), ("bfloat16", "float32"),
                                             ("bfloat16", "float16")])
def test_casting_cos_to_a_narrower_dy_dtype_is_caught(dtype, cos_dtype):
    case = make_case((2, 4, 2, 64), (0, 64), dtype=dtype, cos_dtype=cos_dtype, broadcast="1S1D")
    verdict = run(lambda *a: faulty_kernel("cos_cast", *a), case, make_inputs(case, np.random.default_rng(5)))
    assert verdict.status == "failed", verdict.metrics


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fault", ["sign", "own_sin", "half_pairing", "skip_last_row", "noop", "nan"])
def test_formula_faults_are_caught_on_rope_tables_and_every_dtype(dtype, fault):
    if fault == "own_sin":
        pytest.skip("a RoPE table has one sin per pair: own sin == partner's sin")
    case = make_case((2, 8, 2, 64), (0, 64), mode=1, dtype=dtype, cos_dtype="float32", broadcast="1S1D")
    inputs = make_inputs(case, np.random.default_rng(2), table="rope")
    assert run(lambda *a: faulty_kernel(fault, *a), case, inputs).status == "failed"


def test_worst_elements_name_their_index_expected_actual_and_budget():
    case = make_case((1, 2, 1, 8), (2, 6))
    inputs = make_inputs(case, np.random.default_rng(0))
    result = correct_kernel(inputs.dy, inputs.cos, inputs.sin, 1, (2, 6))
    result[0, 1, 0, 3] += 0.5
    verdict = judge(case, inputs, Outcome(status=0, dy=result))
    golden = GRAD.golden(inputs.dy, inputs.cos, inputs.sin, 1, (2, 6))[0, 1, 0, 3]
    worst = [line for line in verdict.details if line.startswith("worst at (b, s, n, d)=(0, 1, 0, 3)")]
    assert len(worst) == 1 and f"expected {float(golden):.6g}"[:15] in worst[0] and "budget" in worst[0]
    assert verdict.metrics["bad"] == 1
    assert "error 0.5" in worst[0]


def test_worked_example_passes():
    case = make_case((1, 1, 1, 8), (2, 6), broadcast="111D")
    inputs = Inputs(dy=np.arange(1, 9, dtype=np.float32).reshape(1, 1, 1, 8),
                    cos=np.array([0.5, 0.6, 0.7, 0.8], np.float32).reshape(1, 1, 1, 4),
                    sin=np.array([0.1, 0.2, 0.3, 0.4], np.float32).reshape(1, 1, 1, 4))
    hand = np.array([1, 2, 2.3, 2.1, 5.9, 3.3, 7, 8], np.float32).reshape(1, 1, 1, 8)
    for standard in set(STANDARDS) - {"exact"}:                # exact: hand decimals are not the rounded golden
        assert judge(case, inputs, Outcome(status=0, dy=hand), standard).status == "passed", standard


# --- the other standards --------------------------------------------------------------------------

def benign(dtype, rng, shape=(2, 4, 2, 64)):
    """Data without cancellation (every standard passes a correct kernel on it)."""
    case = make_case(shape, (0, shape[-1]), dtype=dtype, cos_dtype="float32", broadcast="1S1D")
    return case, Inputs(dy=rng.uniform(0.5, 1, shape).astype(NUMPY[dtype]),
                        cos=rng.uniform(0.5, 1, case.cos_shape).astype(np.float32),
                        sin=rng.uniform(0, 0.05, case.cos_shape).astype(np.float32))


@pytest.mark.parametrize("standard", ["double_thousandth", "single_bm", "double_benchmark", "allclose"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_each_standard_passes_a_correct_kernel_and_fails_a_wrong_one(standard, dtype):
    case, inputs = benign(dtype, np.random.default_rng(4))
    assert run(correct_kernel, case, inputs, standard).status == "passed"
    for fault in ("noop", "sign", "skip_last_row"):
        assert run(lambda *a: faulty_kernel(fault, *a), case, inputs, standard).status == "failed", fault


def test_exact_needs_bit_identity_with_the_rounded_golden():
    case, inputs = benign("float16", np.random.default_rng(4))
    golden = GRAD.golden(inputs.dy, inputs.cos, inputs.sin, 1, case.partial_slice)
    assert judge(case, inputs, Outcome(status=0, dy=golden), "exact").status == "passed"
    off = golden.copy()
    off.view(np.uint16)[1, 2, 0, 7] += 1                      # one ulp
    verdict = judge(case, inputs, Outcome(status=0, dy=off), "exact")
    assert verdict.status == "failed" and verdict.metrics["mismatches"] == 1
    # default allows the float32 computation's error plus half an ulp, not a whole ulp: one ulp off
    # fails wherever the golden is not within that computation error of a rounding midpoint
    exact = GRAD.golden_slice(inputs.dy, inputs.cos, inputs.sin, 1, case.partial_slice)[1, 2, 0, 7]
    spacing = abs(float(np.float16(exact)) - float(np.nextafter(np.float16(exact), np.float16(0))))
    if abs(abs(exact - float(golden[1, 2, 0, 7])) - spacing / 2) > spacing / 8:
        assert judge(case, inputs, Outcome(status=0, dy=off), "default").status == "failed"


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_truncating_instead_of_rounding_is_caught(dtype):
    case = make_case((2, 4, 2, 64), (0, 64), dtype=dtype, cos_dtype="float32", broadcast="1S1D")
    inputs = make_inputs(case, np.random.default_rng(8))
    assert run(correct_kernel, case, inputs).status == "passed"
    verdict = run(lambda *a: faulty_kernel("truncate", *a), case, inputs)
    assert verdict.status == "failed" and verdict.metrics["bad"] > 20, verdict.metrics


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_default_reads_in_ulps_and_beyond_the_output_rounding(dtype):
    """A correctly rounded result is within 0.5 ulp and takes nothing beyond the rounding, though its err/budget
    is near 1 (half an ulp is nearly all of a narrow dtype's budget); a correct float32 computation takes part of
    what the budget allows beyond the rounding; truncating takes more than all of it."""
    case = make_case((2, 4, 2, 64), (0, 64), dtype=dtype, cos_dtype="float32", broadcast="1S1D")
    inputs = make_inputs(case, np.random.default_rng(8))
    golden = GRAD.golden(inputs.dy, inputs.cos, inputs.sin, 1, case.partial_slice)
    rounded = judge(case, inputs, Outcome(status=0, dy=golden)).metrics
    assert rounded["max_err_ratio"] > 0.99 and 0.49 < rounded["max_err_ulp"] <= 0.5 and rounded["beyond_rounding"] == 0
    assert key_metric(rounded) == "err 0.50 ulp ≤ bound 0.50 ulp, 0% beyond rounding"
    assert 0.5 < rounded["bound_ulp"] < 0.501
    truncated = run(lambda *a: faulty_kernel("truncate", *a), case, inputs)
    assert truncated.status == "failed" and truncated.metrics["beyond_rounding"] > 1
    assert 0.5 < truncated.metrics["max_err_ulp"] <= 1
    assert re.fullmatch(r"err (0\.\d\d|1\.00) ulp > bound 0\.5\d ulp \(x1\.\d+\)", key_metric(truncated.metrics))
    assert f"over budget: {key_metric(truncated.metrics)}" in truncated.message
    fp32 = make_case((2, 4, 2, 64), (0, 64), broadcast="1S1D")
    computed = run(correct_kernel, fp32, make_inputs(fp32, np.random.default_rng(8))).metrics
    assert computed["max_err_ulp"] > 0.5 and 0 < computed["beyond_rounding"] <= 1
    assert computed["bound_ulp"] > computed["max_err_ulp"]          # float32's bound in ulps: many, not 0.5


@pytest.mark.parametrize("metrics, shown", [
    ({"max_err_ratio": 0.99996, "max_err_ulp": 0.49998, "bound_ulp": 0.50001, "beyond_rounding": 0.0},
     "err 0.50 ulp ≤ bound 0.50 ulp, 0% beyond rounding"),
    ({"max_err_ratio": 0.6, "max_err_ulp": 41.07, "bound_ulp": 97.2, "beyond_rounding": 0.4224},
     "err 41 ulp ≤ bound 97 ulp, 42.2% beyond rounding"),
    ({"max_err_ratio": 0.9, "max_err_ulp": 1.6e7, "bound_ulp": 1.61e7, "beyond_rounding": 0.9999991},
     "err 1.6e7 ulp ≤ bound 1.61e7 ulp, 99.9999% beyond rounding"),
    # a failure: error against bound and how far over (the largest error/budget of any element)
    ({"max_err_ratio": 3.452e6, "max_err_ulp": 1.26e7, "bound_ulp": 3.65, "beyond_rounding": 3.99e6},
     "err 1.26e7 ulp > bound 3.65 ulp (x3.45e6)"),
    ({"max_err_ratio": 1.00002, "max_err_ulp": 0.75, "bound_ulp": 0.74999, "beyond_rounding": 1.00003},
     "err 0.75 ulp > bound 0.75 ulp (x1.00002)"),
    # the largest error in ulps within its bound, another element over its own
    ({"max_err_ratio": 2.1, "max_err_ulp": 41.07, "bound_ulp": 97.2, "beyond_rounding": 2.2},
     "err > bound (x2.1), largest err 41 ulp (bound 97 there)"),
    ({"max_err_ratio": None, "max_err_ulp": None, "bound_ulp": None, "beyond_rounding": None},
     "err inf ulp > bound inf ulp (xinf)"),
    # at a golden within its own bound of 0 an ulp of it is no unit (a sign fault's golden of 0 in bfloat16 read
    # 'err 1.11e40 ulp > bound 1.34e33 ulp'): the ratio alone, below 2^24 ulp the ulps as before
    ({"max_err_ratio": 8.38e6, "max_err_ulp": 1.11e40, "bound_ulp": 1.34e33, "beyond_rounding": 1e7},
     "err > bound (x8.38e6), largest err at golden ≈ 0"),
    ({"max_err_ratio": 0.41, "max_err_ulp": 3e7, "bound_ulp": 2.0 ** 24, "beyond_rounding": 0.0},
     "err ≤ bound (x0.41), 0% beyond rounding, largest err at golden ≈ 0"),
    ({"max_err_ratio": 0.41, "max_err_ulp": 1e7, "bound_ulp": 2.0 ** 24 - 1, "beyond_rounding": 0.0},
     "err 1e7 ulp ≤ bound 1.68e7 ulp, 0% beyond rounding"),
    ({"max_err_ratio": 0.6, "max_err_ulp": 41.07, "beyond_rounding": 0.4224}, "err 41 ulp, 42.2% beyond rounding"),
    ({"max_err_ratio": 0.41}, "err ≤ budget (x0.41)"),                  # recorded before the ulp metrics
])
def test_default_key_metric_text(metrics, shown):
    assert key_metric(metrics) == shown


def test_double_thousandth_counts_share_and_cap():
    case, inputs = benign("float32", np.random.default_rng(9))
    golden = GRAD.golden(inputs.dy, inputs.cos, inputs.sin, 1, case.partial_slice)
    skewed = golden.copy()
    skewed.reshape(-1)[:2] *= 1 + 5e-4                         # 2 of 1024 wrong: share 2e-3 > 1e-4
    verdict = judge(case, inputs, Outcome(status=0, dy=skewed), "double_thousandth")
    assert verdict.status == "failed" and verdict.metrics["rel_err_share"] == pytest.approx(2 / 1024)
    loose = {"rel": 1e-3}
    assert judge(case, inputs, Outcome(status=0, dy=skewed), "double_thousandth", loose).status == "passed"
    capped = golden.copy()
    capped.reshape(-1)[0] *= 1.02                              # one element, over the 0.01 cap
    verdict = judge(case, inputs, Outcome(status=0, dy=capped), "double_thousandth", {"share": 0.5})
    assert verdict.status == "failed" and "cap" in verdict.message
    no_cap = {"share": 0.5, "cap": 0}
    assert judge(case, inputs, Outcome(status=0, dy=capped), "double_thousandth", no_cap).status == "passed"


def test_single_bm_has_no_small_value_rule():
    """As TTK's stat_rel_err: an error near a zero golden is judged by its relative error, |a - g| / (|g| + 1e-7)."""
    case, inputs = benign("float32", np.random.default_rng(9))
    inputs.dy[0, 0, 0, :2] = 0                                 # golden 0 at d = 0 (pair 0, 1)
    golden = GRAD.golden(inputs.dy, inputs.cos, inputs.sin, 1, case.partial_slice)
    assert judge(case, inputs, Outcome(status=0, dy=golden), "single_bm").status == "passed"
    nudged = golden.copy()
    nudged[0, 0, 0, 0] = 1e-11                                 # relative 1e-4 < 10T: far over any small-value limit
    verdict = judge(case, inputs, Outcome(status=0, dy=nudged), "single_bm")
    assert verdict.status == "passed" and "small_errors" not in verdict.metrics
    nudged[0, 0, 0, 0] = 1e-9                                  # relative 1e-2 > 10T = 1.2e-3
    verdict = judge(case, inputs, Outcome(status=0, dy=nudged), "single_bm")
    assert verdict.status == "failed" and "MARE" in verdict.message


def test_double_benchmark_compares_with_a_same_precision_cpu_result():
    case, inputs = benign("bfloat16", np.random.default_rng(3))
    # computing in bf16 is what the same-precision reference does: not worse than it
    assert run(lambda *a: faulty_kernel("bf16_compute", *a), case, inputs, "double_benchmark").status == "passed"
    case32, inputs32 = benign("float32", np.random.default_rng(3))
    verdict = run(lambda *a: faulty_kernel("bf16_compute", *a), case32, inputs32, "double_benchmark")
    assert verdict.status == "failed" and verdict.metrics["mare_ratio"] > 10


def test_allclose_tolerance_overrides():
    case, inputs = benign("float32", np.random.default_rng(3))
    result = correct_kernel(inputs.dy, inputs.cos, inputs.sin, 1, case.partial_slice) * np.float32(1 + 1e-4)
    outcome = Outcome(status=0, dy=result)
    assert judge(case, inputs, outcome, "allclose").status == "failed"
    assert judge(case, inputs, outcome, "allclose", {"rtol": 1e-3}).status == "passed"


def test_default_budget_scale_tightens():
    case, inputs = benign("float16", np.random.default_rng(3))
    result = correct_kernel(inputs.dy, inputs.cos, inputs.sin, 1, case.partial_slice)
    assert judge(case, inputs, Outcome(status=0, dy=result), "default", {"budget_scale": 0}).status == "failed"


@pytest.mark.parametrize("standard", STANDARDS)
def test_nan_and_inf_where_the_golden_is_finite_always_fail(standard):
    case, inputs = benign("float32", np.random.default_rng(3))
    result = correct_kernel(inputs.dy, inputs.cos, inputs.sin, 1, case.partial_slice)
    for bad_value in (np.nan, np.inf):
        broken = result.copy()
        broken[1, 1, 1, 5] = bad_value
        verdict = judge(case, inputs, Outcome(status=0, dy=broken), standard)
        assert verdict.status == "failed" and "at (b, s, n, d)=(1, 1, 1, 5)" in text(verdict), standard


@pytest.mark.parametrize("standard", STANDARDS)
def test_matching_nan_and_infinity_are_equal(standard):
    case, inputs = benign("float16", np.random.default_rng(3))
    inputs.dy[0, 0, 0, 0] = np.nan                             # golden NaN at d = 0 and 1
    inputs.dy[0, 1, 0, 2] = np.inf                             # golden +-inf or NaN at d = 2, 3
    golden = GRAD.golden(inputs.dy, inputs.cos, inputs.sin, 1, case.partial_slice)
    assert judge(case, inputs, Outcome(status=0, dy=golden), standard).status == "passed", standard
    finite = golden.copy()
    finite[0, 0, 0, 0] = 1.0
    assert judge(case, inputs, Outcome(status=0, dy=finite), standard).status == "failed", standard


# --- always-on checks -----------------------------------------------------------------------------

def correct_run(dtype="float32"):
    case = make_case((2, 3, 2, 48), (8, 40), dtype=dtype, broadcast="1S1D")
    inputs = make_inputs(case, np.random.default_rng(0))
    return case, inputs, correct_kernel(inputs.dy, inputs.cos, inputs.sin, 1, case.partial_slice)


def test_outside_the_slice_must_be_bit_identical():
    case, inputs, result = correct_run()
    result[:, 1, :, 3] = -result[:, 1, :, 3]
    verdict = judge(case, inputs, Outcome(status=0, dy=result), "double_thousandth")
    assert verdict.status == "failed"
    assert "outside the slice at d=3 (4 elements, rows (0, 1, 0), (0, 1, 1), (1, 1, 0), ... (4 of 12 rows))" \
        in verdict.message
    assert verdict.metrics["outside_changed"] == 4
    assert key_metric(verdict.metrics).startswith("4 changed outside the slice, ")
    case, inputs, result = correct_run("float16")
    result[0, 0, 0, 47] = -0.0 if inputs.dy[0, 0, 0, 47] == 0 else 0.0   # even a zero's sign counts
    assert judge(case, inputs, Outcome(status=0, dy=result)).status == "failed"


@pytest.mark.verdict
@pytest.mark.parametrize("standard", ["default", "double_thousandth", "exact"])
def test_a_zero_of_either_sign_is_right_inside_the_slice(standard):
    """dy of zeros (every other one -0) with cos = 1 and sin = 0: upstream's grad (Mul, Muls by -1 on one half's sin
    product, Add; docs/standards.md) gives a zero whose sign depends on its evaluation order, so inside the slice a
    result with every zero's sign flipped passes every standard but ``exact``, which compares bits; outside, the same
    flip fails."""
    case = make_case((1, 1, 2, 16), (4, 12), dtype="bfloat16", broadcast="111D")
    inputs = make_inputs(case, np.random.default_rng(0))
    inputs.dy[...] = np.where(np.arange(16) % 2 == 0, -0.0, 0.0).astype(inputs.dy.dtype)
    inputs.cos[...], inputs.sin[...] = 1.0, 0.0
    result = correct_kernel(inputs.dy, inputs.cos, inputs.sin, 1, case.partial_slice)
    flipped = result.copy()
    flipped[..., 4:12] = -flipped[..., 4:12]
    assert np.signbit(flipped[..., 4:12]).tolist() != np.signbit(result[..., 4:12]).tolist()
    assert judge(case, inputs, Outcome(status=0, dy=flipped), standard).status == \
        ("failed" if standard == "exact" else "passed")
    flipped[..., 3] = -flipped[..., 3]
    assert judge(case, inputs, Outcome(status=0, dy=flipped), standard).status == "failed"


def test_contract_violations_fail_and_are_listed():
    case, inputs, result = correct_run()
    outcome = Outcome(status=0, dy=result,
                      contract_violations=("guard zone after dy changed at byte +0", "cos changed at (0, 1, 0, 3)"))
    verdict = judge(case, inputs, outcome)
    assert verdict.status == "failed"
    assert "guard zone after dy changed at byte +0" in verdict.message and "cos changed" in verdict.message


@pytest.mark.parametrize("expect,status,passes", [
    (None, 0, True), (561002, 561002, True), ("any", 161002, True),
    (STATUS_CODES["ACLNN_ERR_PARAM_NULLPTR"], 161001, True),
    (561002, 0, False), (561002, 161002, False), ("any", 0, False), (None, 561002, False),
])
def test_status_must_match_the_expectation(expect, status, passes):
    case, inputs, result = correct_run()
    case = make_case(case.shape, case.partial_slice, broadcast="1S1D", expect=expect)
    outcome = Outcome(status=status, dy=result if status == 0 else inputs.dy.copy(),
                      error_message="tiling failed" if status else "", failed_call=GRAD.get_workspace if status else "")
    verdict = judge(case, inputs, outcome)
    assert (verdict.status == "passed") == passes, verdict.message


def test_status_messages():
    case, inputs, result = correct_run()
    error_case = make_case(case.shape, case.partial_slice, broadcast="1S1D", expect=561002)
    verdict = judge(error_case, inputs, Outcome(status=0, dy=result))
    assert verdict.message == "expected 561002 ACLNN_ERR_INNER_TILING_ERROR, got 0 SUCCESS"
    verdict = judge(case, inputs, Outcome(status=561002, error_message="D too large", dy=inputs.dy.copy(),
                                          failed_call=GRAD.get_workspace))
    assert verdict.message == "expected success, got 561002 ACLNN_ERR_INNER_TILING_ERROR: D too large"
    assert key_metric(verdict.metrics) == "561002 ACLNN_ERR_INNER_TILING_ERROR"    # the status's name beside its code


def test_dy_must_stay_untouched_after_an_expected_error():
    case, inputs, result = correct_run()
    error_case = make_case(case.shape, case.partial_slice, broadcast="1S1D", expect=561002)
    verdict = judge(error_case, inputs, Outcome(status=561002, dy=result, failed_call=GRAD.get_workspace))
    assert verdict.status == "failed" and verdict.message == "dy changed although the call failed"
    refused = Outcome(status=561002, dy=inputs.dy.copy(), failed_call=GRAD.get_workspace)
    assert judge(error_case, inputs, refused).status == "passed"


def test_empty_slice_only_checks_that_nothing_changed():
    case = make_case((1, 2, 1, 8), (4, 4))
    inputs = make_inputs(case, np.random.default_rng(0))
    assert judge(case, inputs, Outcome(status=0, dy=inputs.dy.copy())).status == "passed"
    changed = inputs.dy.copy()
    changed[0, 0, 0, 4] += 1
    assert "outside the slice at d=4" in judge(case, inputs, Outcome(status=0, dy=changed)).message


def test_unknown_standard_or_parameter_is_a_user_error():
    """Checked once, where they are read (``check_standard``: the case loader and ``--standard``), not per case."""
    with pytest.raises(PrmgError, match="unknown standard 'strict'"):
        check_standard("strict")
    with pytest.raises(PrmgError, match="has no parameter 'rtol'"):
        check_standard("default", {"rtol": 1e-3})
    with pytest.raises(PrmgError, match="finite number"):
        check_standard("allclose", {"rtol": -1})


def test_every_dtype_of_a_standard_sets_the_same_parameters():
    for standard in STANDARDS.values():
        assert {tuple(params) for params in standard.defaults.values()} == {standard.params}, standard.name


def test_a_standard_is_one_entry(monkeypatch, tmp_path, capsys):
    """A toy standard in the registry is a standard everywhere: a case file names it and sets its parameter, the
    loader refuses a parameter it lacks, ``--standard`` picks it, and a run judges by it and shows its key metric."""
    import json

    from prmg_cli.commands import suite
    from prmg_cli.commands import run
    from prmg_cli.judging.standards import Judgement, Standard

    def judge_exactly_zero(view):
        bad = np.abs(view.actual) > view.params["slack"]
        return Judgement(bool(bad.any()), "not zero", {"nonzero": int(bad.sum())}, bad, bad * 1.0, view.golden)

    toy = Standard("zero", {"*": {"slack": 0.0}}, judge_exactly_zero, "nonzero", lambda m: f"nonzero {m['nonzero']}",
                   "nonzero", "every element 0", lambda m: None)
    monkeypatch.setitem(STANDARDS, "zero", toy)
    case, inputs, result = correct_run()
    zeros = inputs.dy.copy()
    zeros[..., case.partial_slice[0]:case.partial_slice[1]] = 0
    assert judge(case, inputs, Outcome(status=0, dy=zeros), "zero").metrics == {"nonzero": 0}

    def ran(text, *options):
        path = tmp_path / "zero.yaml"
        path.write_text(text)
        report = tmp_path / "r.json"
        suite.run_suite(run.Request(paths=(str(path),), runner="emulator", report=(f"json:{report}", "table"),
                                    wide=True, **dict(options)))
        return json.loads(report.read_text())["cases"], capsys.readouterr().out

    named = "- {name: z, shape: [1, 1, 2, 16], standard: zero, tolerance: {slack: 100.0}}\n"
    cases, table = ran(named)
    assert (cases[0]["status"], cases[0]["standard"], cases[0]["metrics"]) == ("passed", "zero", {"nonzero": 0})
    assert "nonzero 0" in table                                   # the table's metric column: the toy's text
    cases, _ = ran("- {name: z, shape: [1, 1, 2, 16]}\n", ("standard", "zero"))
    assert (cases[0]["status"], cases[0]["standard"]) == ("failed", "zero") and cases[0]["metrics"]["nonzero"] > 0
    with pytest.raises(PrmgError, match=r"zero.yaml: case 'z': field 'tolerance.rtol': standard 'zero' has no "
                                        r"parameter 'rtol' \(valid: slack\)"):
        ran(named.replace("slack", "rtol"))


@pytest.mark.parametrize("standard", STANDARDS)
def test_metrics_are_plain_json_and_key_metric_is_short(standard):
    case, inputs, result = correct_run("bfloat16")
    result[0, 0, 0, 8] = np.nan
    for dy in (result, correct_kernel(inputs.dy, inputs.cos, inputs.sin, 1, case.partial_slice)):
        verdict = judge(case, inputs, Outcome(status=0, dy=dy), standard)
        json.dumps(verdict.metrics, allow_nan=False)
        assert all(type(v) in (int, float, type(None)) for v in verdict.metrics.values())
        shown = key_metric(verdict.metrics)
        assert 0 < len(essentials(shown)) <= 45 and len(shown) < 100, shown    # the first part fits an 80-column table


def test_ulp_of_each_format():
    magnitudes = np.array([0.0, 1.0, 1.5, 2.0 ** -130, 65504.0])
    assert FLOAT_FORMATS["float16"].ulp(magnitudes).tolist() == [2.0 ** -24, 2.0 ** -10, 2.0 ** -10,
                                                                    2.0 ** -24, 32.0]
    assert FLOAT_FORMATS["bfloat16"].ulp(magnitudes)[[0, 1, 3]].tolist() == [2.0 ** -133, 2.0 ** -7, 2.0 ** -133]
    assert FLOAT_FORMATS["float32"].overflow == float(np.nextafter(np.float32(np.inf), 0)) + 2.0 ** 103


# --- issue 10: non-finite results are right only where a float32 evaluation gives them ------------

def _values_case(dy, cos, sin, piece=(0, 2), dtype="float32", cos_dtype="float32", mode=1):
    dy = np.asarray(dy, np.float64)
    case = make_case((1, 1, 1, dy.size), piece, dtype=dtype, cos_dtype=cos_dtype, mode=mode)
    return case, Inputs(dy=dy.reshape(case.shape).astype(NUMPY[dtype]),
                        cos=np.asarray(cos, np.float64).reshape(case.cos_shape).astype(NUMPY[cos_dtype]),
                        sin=np.asarray(sin, np.float64).reshape(case.cos_shape).astype(NUMPY[cos_dtype]))


def _with(inputs, values):
    return np.asarray(values, np.float64).reshape(inputs.dy.shape).astype(inputs.dy.dtype)


def test_a_wrong_sign_infinity_where_the_golden_is_zero_fails():
    """dy [3e38, 3e38], cos = sin = 1: dx = [inf (the sum overflows float32), 0]."""
    case, inputs = _values_case([3e38, 3e38], [1, 1], [1, 1])
    right = _with(inputs, [np.inf, 0.0])
    assert judge(case, inputs, Outcome(status=0, dy=right)).status == "passed"
    for wrong in ([np.inf, np.inf], [np.inf, np.nan], [-np.inf, 0.0], [np.nan, 0.0], [3e38, 0.0]):
        verdict = judge(case, inputs, Outcome(status=0, dy=_with(inputs, wrong)))
        assert verdict.status == "failed", wrong


def test_nan_only_where_a_float32_evaluation_gives_nan():
    """c*g = 2^128 (overflows to inf in float32), s*g' = 2^128 too: E1 gives inf - inf = NaN, the fused
    evaluations -inf and +inf; the float64 golden is 0."""
    big = 2.0 ** 127
    case, inputs = _values_case([big, big], [2.0, 2.0], [2.0, 2.0])
    for allowed in ([np.inf, np.nan], [np.inf, -np.inf], [np.inf, np.inf], [np.inf, 0.0]):
        assert judge(case, inputs, Outcome(status=0, dy=_with(inputs, allowed))).status == "passed", allowed
    # the + lane: 2^128 + 2^128 overflows in every evaluation, so only +inf is right there
    for wrong in ([np.nan, 0.0], [-np.inf, 0.0], [big, 0.0]):
        assert judge(case, inputs, Outcome(status=0, dy=_with(inputs, wrong))).status == "failed", wrong


def test_a_fused_multiply_add_overflow_is_accepted_where_only_fusion_overflows():
    """c*g = 24929 * 673*2^103 = 2^127 + 2^103 is a float32 tie that rounds to 2^127 (even); plus
    p2 = 2^127 - 2^104, E1 = fl32(2^127 + p2) is float32's maximum, while the fused E2 = fl32(c*g + p2)
    = fl32(2^128 - 2^103) overflows (a tie rounding to 2^128). +inf is right, NaN is not."""
    from prmg_cli.judging import nonfinite
    g, p2 = 673 * 2.0 ** 103, 2.0 ** 127 - 2.0 ** 104
    case, inputs = _values_case([g, p2], [24929.0, 0.0], [0.0, 1.0])
    results = nonfinite.possible_results(np.array([24929.0]), np.array([g]), np.array([1.0]), np.array([p2]),
                                         np.array([1]), np.float32)
    assert results[0, 0] == np.finfo(np.float32).max and np.isposinf(results[1, 0])
    assert results[2, 0] == np.finfo(np.float32).max
    for right in ([np.inf, 0.0], [float(np.finfo(np.float32).max), 0.0]):
        assert judge(case, inputs, Outcome(status=0, dy=_with(inputs, right))).status == "passed", right
    for wrong in ([np.nan, 0.0], [-np.inf, 0.0]):
        assert judge(case, inputs, Outcome(status=0, dy=_with(inputs, wrong))).status == "failed", wrong


def test_round_to_float32_is_exact_at_ties():
    """TwoSum + the tie rule give fl32 of the exact sum even where float64 rounds onto a float32 midpoint."""
    from prmg_cli.judging import nonfinite
    one = 1.0
    midpoint = one + 2.0 ** -24                              # halfway between 1 and nextafter32(1)
    s, e = nonfinite._two_sum(np.array([midpoint]), np.array([2.0 ** -80]))
    assert s[0] == midpoint and e[0] > 0                       # float64 lost the tiny part
    assert nonfinite._round_to_float32(s, e)[0] == np.nextafter(np.float32(1), np.float32(2))
    s, e = nonfinite._two_sum(np.array([midpoint]), np.array([-2.0 ** -80]))
    assert nonfinite._round_to_float32(s, e)[0] == np.float32(1)
    top = nonfinite.OVERFLOW_MIDPOINT
    assert np.isinf(nonfinite._round_to_float32(np.array([top]), np.array([0.0]))[0])
    assert nonfinite._round_to_float32(np.array([top]), np.array([-1.0]))[0] == np.finfo(np.float32).max


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_kernel_that_squashes_nan_to_zero_fails(dtype):
    case, inputs = _values_case([np.nan, 1.0, 2.0, 3.0], [0.5, 0.5, 0.5, 0.5], [0.25, 0.25, 0.25, 0.25],
                                piece=(0, 4), dtype=dtype, cos_dtype=dtype)
    case = make_case((1, 1, 1, 4), (0, 4), dtype=dtype, cos_dtype=dtype)
    inputs = Inputs(dy=inputs.dy, cos=inputs.cos.reshape(case.cos_shape), sin=inputs.sin.reshape(case.cos_shape))
    result = correct_kernel(inputs.dy, inputs.cos, inputs.sin, 1, (0, 4))
    assert judge(case, inputs, Outcome(status=0, dy=result)).status == "passed"
    squashed = result.copy()
    squashed[np.isnan(squashed.astype(np.float32))] = 0
    verdict = judge(case, inputs, Outcome(status=0, dy=squashed))
    assert verdict.status == "failed" and "non-finite" in verdict.message


# --- issue 10: vacuous cases, the workspace poison, the storage check ---------------------------------

def test_a_case_whose_input_already_passes_is_named_vacuous():
    case = make_case((1, 2, 1, 8), (0, 8), broadcast="BSND")
    rng = np.random.default_rng(1)
    dy = rng.uniform(-1, 1, case.shape).astype(np.float32)
    identity = Inputs(dy=dy, cos=np.ones(case.cos_shape, np.float32), sin=np.zeros(case.cos_shape, np.float32))
    verdict = judge(case, identity, Outcome(status=0, dy=dy.copy()))
    assert verdict.status == "passed" and verdict.warnings and "vacuous" in verdict.warnings[0]
    all_nan = Inputs(dy=np.full(case.shape, np.nan, np.float32), cos=identity.cos, sin=identity.cos)
    verdict = judge(case, all_nan, Outcome(status=0, dy=all_nan.dy.copy()))
    assert verdict.status == "passed" and "vacuous" in verdict.warnings[0]
    ordinary = make_inputs(case, rng)
    result = correct_kernel(ordinary.dy, ordinary.cos, ordinary.sin, 1, (0, 8))
    assert judge(case, ordinary, Outcome(status=0, dy=result)).warnings == []


def test_nan_from_the_workspace_poison_is_named():
    case = make_case((1, 1, 2, 8), (0, 8))
    inputs = make_inputs(case, np.random.default_rng(2))
    result = correct_kernel(inputs.dy, inputs.cos, inputs.sin, 1, (0, 8))
    poisoned = result.copy()
    poisoned.view(np.uint32)[0, 0, 1, 2:4] = 0xFFFFFFFF
    verdict = judge(case, inputs, Outcome(status=0, dy=poisoned))
    assert verdict.status == "failed"
    assert "2 of them hold the workspace poison (every byte 0xFF): the kernel read workspace it never wrote" \
        in "\n".join(verdict.details)
    quiet_nan = result.copy()
    quiet_nan[0, 0, 0, 0] = np.nan
    details = judge(case, inputs, Outcome(status=0, dy=quiet_nan)).details
    assert "reading workspace the kernel never wrote" in "\n".join(details)


def test_a_refused_call_is_judged_on_the_storage_the_runner_compared():
    case = make_case((1, 1, 2, 8), (0, 8), expect=(561000, "launch"))
    inputs = make_inputs(case, np.random.default_rng(2))
    view_differs = inputs.dy.copy()
    view_differs[0, 0, 0, 0] += 1                         # rows sharing storage read back differently
    unchanged = Outcome(status=561000, dy=view_differs, dy_changed=False, failed_call=GRAD.launch)
    assert judge(case, inputs, unchanged).status == "passed"
    verdict = judge(case, inputs, Outcome(status=561000, dy=inputs.dy.copy(), dy_changed=True, failed_call=GRAD.launch))
    assert verdict.status == "failed" and "dy changed although the call failed" in verdict.message


@pytest.mark.parametrize("value, limit, shown", [(0.99997, 1.0, "0.99997"), (0.41, 1.0, "0.41"), (1.0, 1.0, "1"),
                                                 (1.00002, 1.0, "1.00002"), (0.0009996, 0.001, "0.0009996"),
                                                 (None, 1.0, "inf"), (2.5e-07, 1.0, "2.5e-07")])
def test_margin_never_rounds_onto_the_limit(value, limit, shown):
    assert margin(value, limit) == shown


@pytest.mark.parametrize("metrics, shown", [
    ({"max_err_ratio": 0.99997}, "err ≤ budget (x0.99997)"),
    ({"rel_err_share": 0.0004, "share_limit": 0.001, "max_rel_err": 0.05, "cap": 0.1},
     "wrong 0.04% ≤ 0.1%, max rel err 0.05 ≤ 0.1"),
    ({"rel_err_share": 0.032, "share_limit": 0.001, "max_rel_err": 0.05, "cap": 0.1},
     "wrong 3.2% > 0.1% (x32), max rel err 0.05 ≤ 0.1"),
    ({"rel_err_share": 0.0, "share_limit": 0.001, "max_rel_err": 0.5, "cap": 0.1},      # the broken limit first
     "max rel err 0.5 > 0.1 (x5), wrong 0% ≤ 0.1%"),
    ({"rel_err_share": 0.0, "share_limit": 0.001, "max_rel_err": 0.5, "cap": 0}, "wrong 0% ≤ 0.1%, max rel err 0.5"),
    ({"MERE": 1e-4, "MARE": 2e-3, "T": 2.0 ** -10}, "MERE 0.0001 ≤ 0.000977, MARE 0.002 ≤ 0.00977"),
    ({"mare_ratio": 1.2, "mere_ratio": 0.9, "rmse_ratio": 3.0, "mare_limit": 10, "mere_limit": 2, "rmse_limit": 2},
     "RMSE/ref 3 > 2 (x1.5), MARE/ref 1.2 ≤ 10, MERE/ref 0.9 ≤ 2"),
    ({"max_tol_ratio": 3.2}, "err > tol (x3.2)"),
    ({"mismatches": 0}, "bit-exact"), ({"mismatches": 3}, "3 elements not bit-exact"),
    ({"adjoint_ratio": 0.168}, "adjoint err ≤ bound (x0.168)"),
    ({"roundtrip_ratio": None}, "roundtrip err > bound (xinf)"),
    ({"sample_ratio": 0.9, "sample_rows": 3}, "sample err ≤ bound (x0.9)"),
    ({"determinism_mismatches": 0}, "repeats bit-identical"),
    ({"determinism_mismatches": 12}, "repeats differ in 12 elements"),
    ({"status": 161001}, "161001 ACLNN_ERR_PARAM_NULLPTR"),
    ({"max_err_ratio": 2, "max_err_ulp": 3, "bound_ulp": 1, "beyond_rounding": 2, "outside_changed": 3,
      "non_finite": 2}, "3 changed outside the slice, 2 non-finite wrong, err 3.00 ulp > bound 1.00 ulp (x2)"),
    # what failed comes first: a check over its limit before the golden's passing error, a non-finite slice alone
    ({"max_err_ratio": 0.2, "max_err_ulp": 8, "bound_ulp": 39, "beyond_rounding": 0.4, "adjoint_ratio": 0.1,
      "determinism_mismatches": 40}, "repeats differ in 40 elements"),
    ({"adjoint_ratio": 0.1, "sample_ratio": 7.0, "sample_rows": 3}, "sample err > bound (x7)"),
    ({"max_err_ratio": 0.0, "bad": 0, "max_err_ulp": 0.0, "bound_ulp": 0.0, "beyond_rounding": 0.0,
      "non_finite": 4096}, "4096 non-finite wrong"),
    ({"max_err_ratio": 0.0, "bad": 0, "max_err_ulp": 0.0, "bound_ulp": 0.0, "beyond_rounding": 0.0},
     "err 0 ulp, exact"),
])
def test_key_metrics_show_error_against_limit_in_units(metrics, shown):
    """Every standard's and check's key metric says its unit, a value against its limit and, over it, how far; a
    failure shows the metric that failed."""
    assert key_metric(metrics) == shown


def test_sign_hidden_asks_the_whole_tensor_when_the_first_rows_hide_the_sign():
    """The weak-case check (``judge.sign_hidden``) asks whether a kernel flipping the sign of sin passes: on the rows
    of about ``SIGN_ROWS_ELEMENTS`` slice elements at the start, then, only when it passes them, on the whole tensor.
    sin tiny in every row: weak; tiny in those first rows only: not weak (the other rows show the sign); ordinary
    tables: not weak."""
    from prmg_cli.judging.judge import SIGN_ROWS_ELEMENTS, sign_hidden

    case = make_case((1, 128, 2, 64), (0, 64))
    first = SIGN_ROWS_ELEMENTS // 64
    assert 0 < first < 256
    rng = np.random.default_rng(3)
    dy, cos = (rng.uniform(0.5, 1, shape).astype(np.float32) for shape in (case.shape, case.cos_shape))
    sin = rng.uniform(-1, 1, case.cos_shape).astype(np.float32)        # no product of dy and cos near 0
    head_only = sin.copy()
    head_only.reshape(-1, 64)[:first] *= np.float32(1e-12)
    assert sign_hidden(case, Inputs(dy, cos, sin * np.float32(1e-12)), "default")
    assert not sign_hidden(case, Inputs(dy, cos, head_only), "default")
    assert not sign_hidden(case, Inputs(dy, cos, sin), "default")


def test_the_judge_holds_a_wrong_result_defect_to_its_bounds():
    """A known defect ``{result: wrong, elements: 1}``: the judge finds one wrong element within the bound (only the
    result is wrong: an xfail), two beyond it (``defect_bound``: a failure), as ``defects.beyond`` says of each
    bound."""
    from dataclasses import replace

    from prmg_cli.cases.loader import KnownDefect
    from prmg_cli.device.execute import known_defect_status
    from prmg_cli.results import CaseResult

    case = replace(make_case((1, 1, 2, 8), (0, 8)), known_defect=KnownDefect("one lane", bounds=(("elements", 1),)))
    inputs = make_inputs(case, np.random.default_rng(7))
    for wrong, kinds, status in ((1, {"result"}, "xfailed"), (2, {"result", "defect_bound"}, "failed")):
        result = correct_kernel(inputs.dy, inputs.cos, inputs.sin, case.rotary_mode, case.partial_slice)
        result[0, 0, :wrong, 3] = -2 * result[0, 0, :wrong, 3] - 1
        verdict = judge(case, inputs, Outcome(status=0, dy=result))
        assert verdict.kinds == kinds, verdict.message
        judged = known_defect_status(case, CaseResult("t", verdict.status, message=verdict.message), verdict.kinds, 0)
        assert judged.status == status, judged.message
