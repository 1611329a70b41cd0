"""The fast paths give what the straightforward ones give, bit for bit.

- Judging under ``default``: the one-pass judgement (compiled ``native`` scan, and the numpy block scan
  ``reference.SliceTerms`` + ``standards.default_budget_into``) against the whole-array reference path
  (``default_pass.fast_default`` switched off), on a seeded sweep over modes, dtype pairs, broadcasts, scales
  from subnormal to near the dtype maximum, NaN/Inf in the data and faulty results: same status, message,
  metrics (floats compared exactly: the budget ratio, the error in ulps and its bound there (the first element of
  the largest, whatever order the blocks run in), and beyond the output's rounding, each seen both zero and not),
  details, warnings and error map.
- Inputs: ``make_inputs`` (compiled helper or numpy, threads, any chunk size) against the straightforward draws
  of each generator, rounded by ``dtypes.rounded``: for ``philox4x32`` and ``philox`` the README's recipes written
  out plainly (``test_inputs.RECIPES``), for ``pcg64`` ``Generator.uniform``/``normal`` of the whole tensor.
- The pieces: the block budget, the bfloat16 widening, the compiled rounding (= ``dtypes.bfloat16_bits``), the
  compiled Philox draws of any element range against numpy's ``Philox`` and the Philox4x32-10 recipe.
"""

from __future__ import annotations

import ctypes
import dataclasses

import ml_dtypes
import numpy as np
import pytest

from kernels import FAULTS, correct_kernel, faulty_kernel
from prmg_cli import dtypes, native
from prmg_cli.cases.loader import Case, InputSpec
from prmg_cli.device.acl import Outcome
from prmg_cli.dtypes import FLOAT_FORMATS, bits
from prmg_cli.inputs import seeded as inputs_module
from prmg_cli.inputs.seeded import Inputs, make_inputs, tensor_generator
from prmg_cli.judging import default_pass
from prmg_cli.judging.judge import SIGN_HIDDEN_WARNING, judge
from prmg_cli.judging.standards import default as default_standard
from prmg_cli.ops import FORWARD, GRAD, reference
from prmg_cli.vocab import GENERATORS
from test_dtypes import interesting_values
from test_inputs import RECIPES
from test_judge import NUMPY, make_case, random_case
from test_judge import make_inputs as model_inputs

pytestmark = pytest.mark.verdict       # make test-verdict (and make mutate) run these first

BF16 = np.dtype(ml_dtypes.bfloat16)
PATHS = ("native", "numpy")


def reference_judge(case, inputs, outcome, standard="default", tolerance=None):
    """The whole-array judgement: what ``judge`` did before the one-pass path existed."""
    saved = default_pass.fast_default
    default_pass.fast_default = lambda *args: None
    try:
        return judge(case, inputs, outcome, standard, tolerance)
    finally:
        default_pass.fast_default = saved


_REFERENCE: dict = {}


def reference_verdict(key, case, inputs, outcome, standard="default", tolerance=None):
    """``reference_judge`` once per ``key`` in a process: the whole-array path is the same whichever fast path a test
    patches in (``fast_path`` touches the one pass alone), so both of its params hold their verdicts against one
    (the verdict subset's second on the sweeps)."""
    if key not in _REFERENCE:
        _REFERENCE[key] = reference_judge(case, inputs, outcome, standard, tolerance)
    return _REFERENCE[key]


@pytest.fixture(params=PATHS)
def fast_path(request, monkeypatch):
    """Run a test through the compiled scan, or through the numpy block scan (small blocks, two threads)."""
    monkeypatch.setattr(default_pass, "FAST_MIN_ELEMENTS", 0)              # small cases too
    if request.param == "native":
        if not native.available():
            pytest.skip("the compiled helper cannot be built here")
        monkeypatch.setattr(default_pass, "_NATIVE_SPLIT", 64)            # split rows over the threads
    else:
        monkeypatch.setattr(default_pass, "_native_scans", lambda *args: None)
        monkeypatch.setattr(reference, "JUDGE_BLOCK_ELEMENTS", 96)        # many blocks, tails, both threads
        monkeypatch.setattr(native, "MIN_BLOCKS_PER_THREAD", 1)
    return request.param


def same_verdict(fast, slow) -> None:
    assert (fast.status, fast.message) == (slow.status, slow.message)
    assert fast.metrics == slow.metrics and list(map(type, fast.metrics.values())) == \
        list(map(type, slow.metrics.values()))
    assert (fast.details, fast.warnings, fast.error_map) == (slow.details, slow.warnings, slow.error_map)


def specials(inputs: Inputs, rng: np.random.Generator, case: Case) -> Inputs:
    """``inputs`` with NaN, +-Inf, dtype maxima and subnormals planted in dy (inside and outside the slice)
    and now and then in cos."""
    dy = inputs.dy.astype(np.float64)
    big = float(ml_dtypes.finfo(inputs.dy.dtype).max)
    values = np.array([np.nan, np.inf, -np.inf, big, -big, 1e-40, -0.0, 0.0])
    where = rng.integers(0, dy.size, max(1, dy.size // 20))
    dy.reshape(-1)[where] = rng.choice(values, where.size)
    cos = inputs.cos
    if rng.random() < 0.3:
        cos = cos.astype(np.float64)
        cos.reshape(-1)[rng.integers(0, cos.size)] = rng.choice([np.nan, np.inf, 0.0])
        cos = cos.astype(inputs.cos.dtype)
    with np.errstate(all="ignore"):
        return Inputs(dy.astype(inputs.dy.dtype), cos, inputs.sin)


def sweep(seed: int):
    """A seeded case (mode, dtype pair, broadcast, shape, slice), its inputs at a random scale and a result:
    a correct kernel, a faulty one, the golden itself, or the unchanged input."""
    rng = np.random.default_rng(seed)
    case, scale = random_case(rng, seed, f"eq{seed}", most_pairs=24, most_rows=5)
    mode = case.rotary_mode
    with np.errstate(all="ignore"):
        inputs = model_inputs(case, rng, scale=scale, dist=str(rng.choice(["uniform", "normal", "cancel"])),
                              table=str(rng.choice(["random", "rope"])),
                              table_scale=float(rng.choice([1.0, 1e-3, 4.0])) if scale < 1e30 else 1.0)
        if rng.random() < 0.25:
            inputs = specials(inputs, rng, case)
        kind = rng.choice(["correct", "correct", "fault", "golden", "input", "flush"])
        if kind == "correct":
            result = correct_kernel(inputs.dy, inputs.cos, inputs.sin, mode, case.partial_slice)
        elif kind == "flush":
            result = correct_kernel(inputs.dy, inputs.cos, inputs.sin, mode, case.partial_slice, flush=True)
        elif kind == "fault":
            result = faulty_kernel(str(rng.choice(FAULTS)), inputs.dy, inputs.cos, inputs.sin, mode,
                                   case.partial_slice)
        elif kind == "golden":
            result = GRAD.golden(inputs.dy, inputs.cos, inputs.sin, mode,
                                                               case.partial_slice)
        else:
            result = inputs.dy.copy()
    return case, inputs, result, kind


@pytest.mark.parametrize("chunk", range(6))
def test_fast_default_gives_the_reference_verdict_on_a_sweep(fast_path, chunk):
    kinds, beyond = {}, {False: 0, True: 0}
    for seed in range(chunk * 60, chunk * 60 + 60):
        case, inputs, result, kind = sweep(seed)
        outcome = Outcome(status=0, dy=result)
        for tolerance in ({}, {"budget_scale": 0.5}):
            with np.errstate(all="ignore"):
                fast = judge(case, inputs, outcome, "default", tolerance)
                slow = reference_verdict(("sweep", seed, bool(tolerance)), case, inputs, outcome, "default",
                                         tolerance)
            same_verdict(fast, slow)
            kinds[(kind, slow.status)] = kinds.get((kind, slow.status), 0) + 1
            if slow.status == "passed" and not tolerance:       # the ulp metrics in both regimes were compared
                beyond[slow.metrics["beyond_rounding"] > 0] += slow.metrics["max_err_ulp"] > 0
                # the bound in ulps is that of the element of the largest error in ulps: a passing one holds it
                assert slow.metrics["bound_ulp"] >= slow.metrics["max_err_ulp"], slow.metrics
                assert (slow.metrics["bound_ulp"] > 0) == (slow.metrics["max_err_ulp"] > 0), slow.metrics
    assert kinds.get(("correct", "passed"), 0) > 10 and kinds.get(("fault", "failed"), 0) > 3
    assert min(beyond.values()) > 3, beyond


def test_the_forward_operator_is_judged_alike(fast_path):
    rng = np.random.default_rng(5)
    for seed in range(40):
        mode, dtype = seed % 4, dtypes.OPERATOR_DTYPES[seed % 3]
        case = dataclasses.replace(make_case((2, 3, 2, 40), (4, 36), mode=mode, dtype=dtype, cos_dtype=dtype,
                                             broadcast=("BSND", "111D", "B11D", "B1ND")[seed % 4]), op="forward")
        inputs = model_inputs(case, rng, scale=float(rng.choice([1e-40, 1.0, 1e30])))
        with np.errstate(all="ignore"):
            golden = FORWARD.golden(inputs.dy, inputs.cos, inputs.sin, mode, (4, 36))
            wrong = golden.copy()
            wrong.reshape(-1)[rng.integers(golden.size)] = 7
            for index, result in enumerate((golden, wrong, inputs.dy.copy())):
                outcome = Outcome(status=0, dy=result)
                same_verdict(judge(case, inputs, outcome), reference_verdict(("forward", seed, index), case, inputs,
                                                                             outcome))


# Slice lengths per mode: one pair (or quarter block), an odd and an even number of them, a longer one.
LAYOUT_LENGTHS = {0: (2, 6, 8, 30), 1: (2, 6, 8, 30), 2: (4, 12, 8, 40), 3: (2, 6, 8, 30)}


def one_pass(case, inputs, result, native_on: bool):
    """``default_pass.fast_default`` through the compiled scan (two threads) or the numpy block scan: what it
    proved (its metrics and whether the case is vacuous), or None when it found something wrong."""
    saved = default_pass._native_scans, default_pass._NATIVE_SPLIT
    if not native_on:
        default_pass._native_scans = lambda *args: None
    default_pass._NATIVE_SPLIT = 64
    try:
        with np.errstate(all="ignore"):
            passed = default_pass.fast_default(case, inputs, result, None, {})
    finally:
        default_pass._native_scans, default_pass._NATIVE_SPLIT = saved
    return None if passed is None else (passed.metrics, passed.vacuous)


@pytest.mark.parametrize("op", [GRAD, FORWARD], ids=lambda op: op.name)
@pytest.mark.parametrize("mode", range(4))
def test_every_lane_layout_is_judged_alike_across_chunks(op, mode):
    """The compiled pass reads the kept and partner lanes in place for interleave (a swap of neighbours) and for
    half/quarter (contiguous shifts), and gathers them otherwise (interleave-half); it forms a chunk (4096
    elements) in parts and forms one again whole when something in it is unusual. Every mode of both operators,
    slices of one, an odd and an even number of pairs, over several chunks: the golden, the golden one ulp off
    here and there, with a NaN late in the slice, with a bit flipped outside it late, and (grad) a correct
    kernel's result. The compiled pass proves what the numpy block pass proves (a wrong element in either would
    otherwise only hand the case to the whole-array checks), and the verdicts are the whole-array ones."""
    if not native.available():
        pytest.skip("the compiled helper cannot be built here")
    rng = np.random.default_rng(40 + mode)
    proved = 0
    for length in LAYOUT_LENGTHS[mode]:
        rows = 5 * (4096 // length) + 7                     # five chunks and a ragged end, over both threads
        shape = (1, -(-rows // 3), 3, length + 3)
        case = dataclasses.replace(make_case(shape, (1, 1 + length), mode=mode, dtype="bfloat16",
                                             cos_dtype="float32", broadcast="1S1D"), op=op.name)
        inputs = model_inputs(case, rng)
        golden = op.golden(inputs.dy, inputs.cos, inputs.sin, mode, case.partial_slice)
        nudged, nan, outside = golden.copy(), golden.copy(), golden.copy()
        lanes = nudged[..., 1:1 + length].reshape(-1)
        lanes[::17] = np.nextafter(lanes[::17].astype(np.float32), np.float32(np.inf)).astype(BF16)
        nudged[..., 1:1 + length] = lanes.reshape(nudged[..., 1:1 + length].shape)
        nan[0, -1, 1, length // 2 + 1] = np.nan
        outside.view(np.uint16)[0, -2, 2, -1] ^= 1
        results = [golden, nudged, nan, outside]
        if op is GRAD:
            results.append(correct_kernel(inputs.dy, inputs.cos, inputs.sin, mode, case.partial_slice))
        for result in results:
            compiled = one_pass(case, inputs, result, native_on=True)
            assert compiled == one_pass(case, inputs, result, native_on=False)
            proved += compiled is not None
            outcome = Outcome(status=0, dy=result)
            with np.errstate(all="ignore"):
                same_verdict(judge(case, inputs, outcome), reference_judge(case, inputs, outcome))
    assert proved >= len(LAYOUT_LENGTHS[mode])                # the golden at least passed in one pass


def test_every_non_finite_case_of_the_special_suite_is_judged_alike(fast_path):
    """All-NaN and all-Inf inputs (vacuous cases), NaN only in the result, overflow everywhere."""
    case = make_case((3, 4, 2, 24), (4, 20), dtype="bfloat16", cos_dtype="float32", broadcast="1S1D")
    rng = np.random.default_rng(2)
    base = model_inputs(case, rng)
    big = float(ml_dtypes.finfo(BF16).max)
    variants = [Inputs(np.full(case.shape, np.nan, BF16), base.cos, base.sin),
                Inputs(np.full(case.shape, np.inf, BF16), base.cos, base.sin),
                Inputs(np.full(case.shape, big, BF16), base.cos, base.sin),
                Inputs(base.dy, np.zeros_like(base.cos), np.zeros_like(base.sin)),
                Inputs(base.dy, np.ones_like(base.cos), np.zeros_like(base.sin))]
    for inputs in variants:
        with np.errstate(all="ignore"):
            good = correct_kernel(inputs.dy, inputs.cos, inputs.sin, 1, (4, 20))
            nan = good.copy()
            nan[..., 5] = np.nan
            for result in (good, nan, inputs.dy.copy()):
                outcome = Outcome(status=0, dy=result)
                same_verdict(judge(case, inputs, outcome), reference_judge(case, inputs, outcome))


def test_more_non_finite_elements_than_the_compiled_scan_lists_fall_back(monkeypatch):
    if not native.available():
        pytest.skip("the compiled helper cannot be built here")
    monkeypatch.setattr(native, "SPECIAL_CAPACITY", 3)
    monkeypatch.setattr(default_pass, "FAST_MIN_ELEMENTS", 0)
    case = make_case((2, 4, 2, 16), (0, 16), dtype="float32", broadcast="111D")
    inputs = model_inputs(case, np.random.default_rng(1))
    inputs = Inputs(np.where(np.arange(inputs.dy.size).reshape(case.shape) % 3 == 0, np.nan, inputs.dy)
                    .astype(np.float32), inputs.cos, inputs.sin)
    outcome = Outcome(status=0, dy=correct_kernel(inputs.dy, inputs.cos, inputs.sin, 1, (0, 16)))
    calls = []
    monkeypatch.setattr(default_pass, "_SliceScan", lambda *args, _real=default_pass._SliceScan: calls.append(1)
                        or _real(*args))
    same_verdict(judge(case, inputs, outcome), reference_judge(case, inputs, outcome))
    assert calls                                           # the numpy scan took over


def test_a_large_case_is_judged_alike_on_both_paths(fast_path):
    case = make_case((2, 64, 8, 128), (32, 128), dtype="bfloat16", cos_dtype="bfloat16", broadcast="1S1D")
    inputs = make_inputs(dataclasses.replace(case, seed=3))
    result = correct_kernel(inputs.dy, inputs.cos, inputs.sin, 1, (32, 128))
    outcome = Outcome(status=0, dy=result)
    timings = {}
    fast = judge(case, inputs, outcome, timings=timings)
    same_verdict(fast, reference_judge(case, inputs, outcome))
    assert fast.status == "passed" and 0 < timings["golden"]


def test_the_compiled_extras_are_the_recount_and_the_flip_check():
    """What the compiled pass finds besides the verdict (``default_pass._native_extras``) on results it proves right:
    the distinct departures' counts are ``distinct_balance_counts``' on the whole-array golden (rows repeated along a
    broadcast table count once, far fewer than the raw counts), a kernel flipping the sign of sin fails on ordinary
    tables (so ``sign_hidden`` need not be asked), and with sin too small to show its sign the flip is not found
    failing, so the weak-case check still asks numpy and warns."""
    if not native.available():
        pytest.skip("the compiled helper cannot be built here")
    rng = np.random.default_rng(8)
    for dtype in FLOAT_FORMATS:
        case = make_case((2, 3, 4, 40), (4, 36), mode=int(rng.integers(4)), dtype=dtype, cos_dtype=dtype,
                         broadcast="111D")
        inputs = model_inputs(case, rng)
        repeated = Inputs(np.broadcast_to(inputs.dy[:1, :1, :1], case.shape).copy(), inputs.cos, inputs.sin)
        for given in (inputs, repeated):
            result = correct_kernel(given.dy, given.cos, given.sin, case.rotary_mode, case.partial_slice)
            passed = default_pass.fast_default(case, given, result, None, {})
            golden = GRAD.golden_slice(given.dy, given.cos, given.sin, case.rotary_mode, case.partial_slice)
            assert passed.flip_fails and passed.distinct == default_standard.distinct_balance_counts(
                result[..., 4:36].astype(np.float64), golden, FLOAT_FORMATS[dtype])
        raw = sum(passed.metrics[key] for key in ("balance_up", "balance_down"))
        assert sum(passed.distinct[:2]) * 4 <= raw                      # each of 24 rows repeats one row's errors
        assert dtype != "float32" or sum(passed.distinct[:2]) > 0      # float32 products' roundings depart
        weak = Inputs(inputs.dy, inputs.cos, (inputs.sin.astype(np.float64) * 1e-30).astype(inputs.sin.dtype))
        result = correct_kernel(weak.dy, weak.cos, weak.sin, case.rotary_mode, case.partial_slice)
        assert not default_pass.fast_default(case, weak, result, None, {}).flip_fails
        assert judge(case, weak, Outcome(status=0, dy=result)).warnings == [SIGN_HIDDEN_WARNING]


@pytest.mark.parametrize("dtype", dtypes.OPERATOR_DTYPES)
def test_the_compiled_nearest_value_is_numpys_rounding(dtype):
    """The helper's rounding of a float64 to a dtype's nearest value (``prmg_nearest``, what the recount and the flip
    take) is ``dtypes.rounded``: on the dtype's values, the ties between neighbours and the float64 numbers on either
    side of them, subnormals, the overflow edge and random float64 numbers, of both signs."""
    if not native.available():
        pytest.skip("the compiled helper cannot be built here")
    fmt, rng, numpy_dtype = FLOAT_FORMATS[dtype], np.random.default_rng(9), NUMPY[dtype]
    words = np.uint32 if dtype == "float32" else np.uint16
    top = (1 << fmt.exponent_bits) - 1 << fmt.fraction_bits                  # the pattern of +inf
    patterns = np.concatenate([np.arange(1 << 15), top - 1 - np.arange(1 << 12),  # subnormals up, the top down
                               rng.integers(0, top - 1, 1 << 15)])
    patterns = patterns[patterns < top].astype(words)                       # finite
    values, above = (np.asarray(p, words).view(numpy_dtype).astype(np.float64) for p in (patterns, patterns + 1))
    ties = (values + above) / 2                                              # exact in float64
    edges = np.array([fmt.overflow, np.nextafter(fmt.overflow, 0), fmt.smallest / 2, 5e-324])
    values = np.concatenate([values, ties, np.nextafter(ties, 0), np.nextafter(ties, np.inf), edges,
                             rng.standard_normal(1 << 12) * 2.0 ** rng.integers(-160, 140, 1 << 12)])
    values = np.concatenate([values, -values])
    args = native.JudgeArgs(half_ulp_scale=2.0 ** -fmt.precision, half_smallest=fmt.smallest / 2)
    out = np.empty_like(values)
    native.library().prmg_nearest(ctypes.byref(args), fmt.overflow, values.ctypes.data, values.size, out.ctypes.data)
    with np.errstate(over="ignore"):
        expected = dtypes.rounded(values, NUMPY[dtype]).astype(np.float64)
    assert np.array_equal(out.view(np.uint64), expected.view(np.uint64))


# --- the pieces ------------------------------------------------------------------------------------------

def test_block_budget_equals_the_whole_array_budget_bit_for_bit():
    rng = np.random.default_rng(0)
    for fmt in FLOAT_FORMATS.values():
        for scale in (1.0, 0.5, 0.0, 3.0, 1e-30):
            for exponent in (-160, -140, -126, -100, -70, -69, -68, -30, 0, 30, 127, 200):
                golden = rng.standard_normal(500) * 2.0 ** exponent
                golden[:10], golden[10:20] = 0.0, 5e-324
                magnitude = np.abs(golden) * rng.uniform(1, 3, golden.size)
                magnitude[:5] = 0
                magnitude[30:40] = 2.0 ** rng.integers(-1074, 250, 10)
                expected = default_standard.default_budget(np.abs(golden), magnitude, fmt, scale)
                got = default_standard.default_budget_into(golden, magnitude, fmt, scale, np.empty(500), np.empty(500))
                assert np.array_equal(expected.view(np.uint64), got.view(np.uint64))


@pytest.mark.parametrize("dtype", dtypes.OPERATOR_DTYPES)
def test_widening_equals_numpy_casts(dtype):
    patterns = np.arange(1 << 16, dtype=np.uint16)
    if dtype == "float32":
        values = np.random.default_rng(0).integers(0, 1 << 32, 1 << 16, dtype=np.uint32).view(np.float32)
    else:
        values = patterns.view(NUMPY[dtype])
    values = values.reshape(256, 256)[:, 3:200]             # strided, as a slice of rows
    out = np.empty(values.shape)
    with np.errstate(invalid="ignore"):                     # signalling NaNs
        reference.Widener(values.size)(values, out)
        expected = values.astype(np.float64)
    both_nan = np.isnan(out) & np.isnan(expected)
    assert np.array_equal(out[~both_nan].view(np.uint64), expected[~both_nan].view(np.uint64))
    assert np.array_equal(np.isnan(out), np.isnan(expected))


def test_compiled_rounding_equals_the_numpy_rounding():
    """``native.round_bfloat16`` and ``affine_round`` give ``dtypes.bfloat16_bits`` (itself checked against exact
    arithmetic in test_dtypes.py) and numpy's float32 cast, on the interesting float64 patterns and random bits."""
    if not native.available():
        pytest.skip("the compiled helper cannot be built here")
    rng = np.random.default_rng(4)
    random_bits = rng.integers(0, 1 << 64, 1 << 18, dtype=np.uint64).view(np.float64)
    values = np.concatenate([interesting_values(), random_bits])
    out = np.empty(values.size, np.uint16)
    assert native.round_bfloat16(values, out)
    assert np.array_equal(out, dtypes.bfloat16_bits(values))
    for scale, offset in ((1.0, 0.0), (2.0, -1.0), (1e-3, 3.7)):
        with np.errstate(all="ignore"):
            exact = np.add(np.multiply(values, scale), offset)
        assert native.affine_round(values, scale, offset, "bfloat16", out)
        assert np.array_equal(out, dtypes.bfloat16_bits(exact))
        out32 = np.empty(values.size, np.float32)
        assert native.affine_round(values, scale, offset, "float32", out32)
        with np.errstate(all="ignore"):
            assert np.array_equal(out32.view(np.uint32), exact.astype(np.float32).view(np.uint32))


def straightforward_draw(case: Case, tensor: str) -> np.ndarray:
    """The inputs the plain way: the whole tensor in float64 (``philox4x32``, ``philox``: the README's recipes;
    ``pcg64``: ``Generator.uniform``/``normal``, as prmg drew them before), rounded by ``dtypes.rounded`` (checked
    against exact arithmetic in test_dtypes.py)."""
    spec = case.input_spec(tensor)
    shape = {"dy": case.shape, "cos": case.cos_shape, "sin": case.sin_shape}[tensor]
    dtype = np.dtype(NUMPY.get({"dy": case.dtype, "cos": case.cos_dtype, "sin": case.sin_dtype}[tensor], "float64"))
    params, count = (float(spec.args[0]), float(spec.args[1])), int(np.prod(shape))
    if case.generator in RECIPES:
        with np.errstate(all="ignore"):
            draws = RECIPES[case.generator](case.seed, inputs_module.TENSOR_INDEX[tensor], spec.kind, params, count)
    else:
        draws = getattr(tensor_generator(case.seed, tensor), spec.kind)(*params, count)
    with np.errstate(all="ignore"):
        return dtypes.rounded(draws, dtype).reshape(shape)


@pytest.mark.parametrize("generator", GENERATORS)
@pytest.mark.parametrize("native_on", [True, False])
def test_draws_equal_the_straightforward_ones(monkeypatch, native_on, generator):
    if not native_on:
        monkeypatch.setenv("PRMG_NATIVE", "0")
    monkeypatch.setattr(inputs_module, "THREADED_DRAWS", 1000)
    monkeypatch.setattr(inputs_module, "CHUNK_ELEMENTS", 333)
    monkeypatch.setattr(native, "ROUNDING_MIN_ELEMENTS", 0)
    rng = np.random.default_rng(9)
    specs = [("uniform", (-1.0, 1.0)), ("uniform", (-3.7, 11.3)), ("uniform", (1e-40, 3e-38)),
             ("normal", (0.0, 1.0)), ("normal", (1e30, 1e38)), ("uniform", (3.38e38, 3.3895e38)),
             ("uniform", (0.0, 0.0)), ("uniform", (-7e4, 7e4)), ("normal", (0.0, 1e-44))]
    for dtype in dtypes.OPERATOR_DTYPES:
        for kind, args in specs:
            case = Case(name="d", source="t", shape=(2, 5, 3, 70), cos_shape=(1, 5, 1, 8), sin_shape=(1, 5, 1, 8),
                        partial_slice=(0, 8), dtype=dtype, cos_dtype=dtype, sin_dtype=dtype, generator=generator,
                        seed=int(rng.integers(1 << 64, dtype=np.uint64)), dy_input=InputSpec(kind, args),
                        cos_input=InputSpec(kind, args))
            with np.errstate(all="ignore"):
                made = make_inputs(case, chunk_elements=int(rng.integers(1, 5000)))
            for tensor in ("dy", "cos"):
                got, expected = getattr(made, tensor), straightforward_draw(case, tensor)
                assert got.dtype == expected.dtype and got.tobytes() == expected.tobytes(), (dtype, kind, args)


@pytest.mark.parametrize("generator", ["philox4x32", "philox"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64"])
def test_compiled_philox_draws_equal_the_recipes_for_any_range(dtype, generator):
    """Element ranges starting and ending anywhere in a block, inside a stream chunk or across chunks, in
    pieces or at once: the compiled draws and rounding equal the numpy words (numpy's Philox; the vectorised
    Philox4x32-10), cast by numpy, and those equal the recipe."""
    if not native.available():
        pytest.skip("the compiled helper cannot be built here")
    chunk, numpy_dtype = inputs_module.STREAM_CHUNK, np.dtype(BF16 if dtype == "bfloat16" else dtype)
    key = (2**64 - 3, 2)
    size = 3 * chunk + 40 if generator == "philox" else 300      # the plain Python recipe of philox4x32 is slow
    recipe = RECIPES[generator](key[0], key[1], "uniform", (0.0, 1.0), size)      # = U itself
    for begin, count in ((0, 1), (7, 9), (1, 8), (29, 35), (chunk - 5, 13), (2 * chunk - 3, chunk + 7),
                         (0, 3 * chunk + 40)):
        words = inputs_module._WORDS[generator](key, begin, count)
        if begin + count <= size:
            assert np.array_equal(words * 2.0 ** -32, recipe[begin:begin + count])
        out = np.empty(count, numpy_dtype)
        assert native.uniform(generator, key, chunk, begin, 4.0, -1.5, dtype, out)
        expected = dtypes.rounded(-1.5 + 4.0 * (words * 2.0 ** -32), numpy_dtype)
        assert np.array_equal(bits(out), bits(expected)), (begin, count)


@pytest.mark.parametrize("path", list(native.PHILOX4X32_PATHS))
def test_every_code_path_of_the_compiled_philox4x32_rounds_equals_numpys(path):
    """The scalar rounds (what a host without AVX2, an aarch64 one, runs), the AVX2 and the AVX-512 ones: the same
    blocks as ``seeded.philox4x32_10``, in groups that do not fill a vector, across block 2**32 (the counter's
    carry into its second word) and with a key of both words."""
    if not native.available():
        pytest.skip("the compiled helper cannot be built here")
    for first, blocks, stream, key in ((0, 1, 0, (0, 0)), (5, 37, 2, (0xFFFFFFFF, 0x12345678)),
                                       (2**32 - 19, 45, 1, (12, 2**32 - 1)), (2**40 + 3, 16, 7, (99, 1))):
        got = native.philox4x32_blocks(first, blocks, stream, key, path)
        if got is None:
            pytest.skip(f"this CPU has no {path} path")
        numbers = np.arange(first, first + blocks, dtype=np.uint64)
        counters = np.stack([numbers & 0xFFFFFFFF, numbers >> 32, np.full_like(numbers, stream),
                             np.zeros_like(numbers)], axis=1)
        assert np.array_equal(got, inputs_module.philox4x32_10(counters, key)), (path, first, blocks)


def test_draws_keep_numpys_argument_errors():
    case = Case(name="d", source="t", shape=(1, 1, 1, 4), cos_shape=(1, 1, 1, 4), sin_shape=(1, 1, 1, 4),
                partial_slice=(0, 4), dy_input=InputSpec("uniform", (1.0, -1.0)))
    with pytest.raises(ValueError, match="high - low"):
        make_inputs(case)
