"""gen-case: one case from options, the presets, deterministic YAML, and the shipped suites under cases/."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from prmg_cli.cases import gencase, presets as presets_module
from prmg_cli.cases.loader import load_cases, validate
from prmg_cli.commands import case_writer
from prmg_cli.errors import PrmgError
from prmg_cli.ops import OPERATORS, constraints
from prmg_cli.status import PARAM_INVALID, PARAM_NULLPTR, TILING_ERROR
from prmg_cli.dtypes import OPERATOR_DTYPES as FLOATS
from prmg_cli.vocab import BROADCASTS as PATTERNS, ROTARY_MODES

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "cases"
TODAY = frozenset({1})
EVERY_MODE = frozenset({0, 1, 2, 3})


def write(tmp_path: Path, doc: dict, name: str = "suite.yaml") -> Path:
    path = tmp_path / name
    path.write_text(gencase.dump_yaml(doc), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def presets() -> dict:
    return {name: presets_module.preset(name) for name in presets_module.PRESETS}


@pytest.fixture(scope="module")
def loaded(presets, tmp_path_factory) -> dict:
    """Every preset written to a file and read back by the loader."""
    folder = tmp_path_factory.mktemp("presets")
    return {name: load_cases([write(folder, doc, f"{name}.yaml")]) for name, doc in presets.items()}


@pytest.fixture(scope="module")
def shipped() -> list:
    """Every case shipped under cases/, as the loader reads them."""
    return load_cases([CASES])


# The tests of the three fixtures above, on one xdist worker: the presets are made and every file loaded once (about
# 1.5 s of CPU), not once on each worker.
SHARED_FIXTURES = pytest.mark.xdist_group("gencase_presets")


def pattern_of(case) -> str:
    """The broadcast pattern of a loaded case, read from its shapes (dy axes of size 1 count as broadcast)."""
    letters = "".join("1" if cos == 1 else letter for letter, cos in zip("BSN", case.cos_shape[:3]))
    return letters + "D"


# ----- presets ---------------------------------------------------------------------------------------

@SHARED_FIXTURES
@pytest.mark.parametrize("name", presets_module.PRESETS)
def test_preset_is_deterministic_and_valid(name, presets, loaded):
    assert gencase.dump_yaml(presets_module.preset(name)) == gencase.dump_yaml(presets[name])
    cases = loaded[name]
    assert len(cases) == len(presets[name]["cases"])
    for modes in (TODAY, EVERY_MODE):
        validate(cases, modes)
    tag = {"future_modes": "future"}.get(name, name)
    assert all(tag in case.tags for case in cases)


def test_unknown_preset_is_refused():
    with pytest.raises(PrmgError, match="unknown preset 'smok'"):
        presets_module.preset("smok")


@SHARED_FIXTURES
def test_smoke_covers_dtype_pairs_patterns_odd_starts_and_the_worked_example(loaded):
    cases = loaded["smoke"]
    assert 20 <= len(cases) <= 60
    passing = [case for case in cases if case.expect.success and case.partial_slice[0] != case.partial_slice[1]]
    assert {(c.dtype, c.cos_dtype) for c in passing} == set(itertools.product(FLOATS, FLOATS))
    distinct = [c for c in passing if len(set(c.shape[:3])) == 3]     # B, S, N all different: patterns tell apart
    assert {pattern_of(c) for c in distinct} == set(PATTERNS)
    assert any(c.partial_slice[0] % 2 for c in passing)
    lengths = {c.partial_slice[1] - c.partial_slice[0] for c in passing}
    assert any(length & (length - 1) for length in lengths)            # a non-power-of-two length
    example = next(c for c in cases if "worked_example" in c.name)
    assert example.shape == (1, 1, 1, 8) and example.partial_slice == (2, 6)
    assert example.dy_input.kind == "values" and list(example.dy_input.args) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert list(example.cos_input.args) == [0.5, 0.6, 0.7, 0.8]
    assert list(example.sin_input.args) == [0.1, 0.2, 0.3, 0.4]


@SHARED_FIXTURES
def test_full_covers_patterns_by_dtype_pairs_and_slice_placements(loaded):
    cases = loaded["full"]
    bcast = [c for c in cases if "broadcast" in c.tags]
    assert {(pattern_of(c), c.dtype, c.cos_dtype) for c in bcast} == \
        set(itertools.product(PATTERNS, FLOATS, FLOATS))
    slices = [c for c in cases if "slice" in c.tags]
    placements = {c.partial_slice for c in slices}
    D = 128
    assert {(0, D), (0, 2), (D - 2, D)} <= placements
    assert any(start % 2 and 0 < start and end < D for start, end in placements)       # middle, odd start
    assert any(start > 0 and end == D for start, end in placements)                    # tail
    for piece in placements:
        assert {(c.dtype, c.cos_dtype) for c in slices if c.partial_slice == piece} == \
            set(itertools.product(FLOATS, FLOATS))
    sizes = {c.shape[-1] for c in cases}
    assert max(sizes) == 1024 and min(sizes) == 2


@SHARED_FIXTURES
def test_full_stays_small_enough_for_two_cores(loaded):
    elements = sorted(c.shape[0] * c.shape[1] * c.shape[2] * c.shape[3] for c in loaded["full"])
    assert sum(elements) < 16_000_000
    assert sum(1 for n in elements if n > 100_000) <= 16


@SHARED_FIXTURES
def test_edge_has_empty_slices_huge_tiny_subnormal_and_long_rope(loaded):
    cases = {case.name.split(".", 1)[1]: case for case in loaded["edge"]}
    assert sum(1 for c in cases.values() if c.partial_slice[0] == c.partial_slice[1]) >= 2
    assert any(c.shape[-1] == 1024 for c in cases.values())
    assert any(c.shape == (1, 1, 1, 2) for c in cases.values())
    bounds = {name: max(abs(x) for x in c.dy_input.args) for name, c in cases.items() if c.dy_input.kind == "uniform"}
    assert bounds["huge_fp32"] >= 1e30 and bounds["huge_bf16"] >= 1e30 and bounds["huge_fp16"] >= 3e4
    assert bounds["subnormal_fp32"] < 1.2e-38 and bounds["subnormal_fp16"] < 6e-8 * 2
    for dtype in ("fp32", "bf16"):           # every flush threshold from the budget's term to 2^-96 meets a result
        exponents = np.log2(np.abs(cases[f"small_normals_{dtype}"].dy_input.args))
        assert exponents.min() < -123 and exponents.max() > -97 and np.diff(np.sort(exponents)).max() < 1
    ropes = [c for c in cases.values() if c.cos_input.kind == "rope"]
    assert {c.cos_input.args[0] for c in ropes if max(np.atleast_1d(c.cos_input.args[1])) >= 100000} >= {10000, 500000}
    assert any(c.dtype == "bfloat16" and c.cos_dtype != "bfloat16" for c in cases.values())


@SHARED_FIXTURES
def test_edge_has_tiling_siblings_whose_tables_are_alike_only_at_both_ends(loaded):
    """The emulator's table_block_cache (tables cached by address, the cache checked by each table's first and last 32
    bytes) needs two calls run one after the other at the same addresses whose cos and sin agree there and differ
    between: tiling siblings (one worker runs them in turn), RoPE tables of three requests, the middle one moved."""
    from prmg_cli.device.execute import sibling_groups
    from prmg_cli.inputs.seeded import make_inputs

    pair = [case for case in loaded["edge"] if case.name.startswith("edge.same_table_ends_")]
    assert len(pair) == 2 and sibling_groups(pair, range(2)) == [[0, 1]]
    for table in ("cos", "sin"):
        first, second = (getattr(make_inputs(case), table).view(np.uint8).ravel() for case in pair)
        assert first.size == second.size and (first[:32] == second[:32]).all() and (first[-32:] == second[-32:]).all()
        assert (first != second).any()


@SHARED_FIXTURES
def test_negative_cases_get_the_status_they_expect(loaded):
    cases = loaded["negative"]
    expected = {case.name: case.expect.error for case in cases}
    for case in cases:
        got = constraints.expected_status(case, TODAY)
        if case.known_defect:                      # the real stack disagrees with the expectation on purpose
            assert got == 0 and not case.expect.success, case.name
            continue
        meets = lambda status: status == (case.expect.error or 0) or (case.expect.error == "any" and status)  # noqa
        assert meets(got), case.name
        if "mode-unsupported" in case.tags:        # valid everywhere the mode exists
            assert constraints.expected_status(case, EVERY_MODE) == 0, case.name
        elif not case.expect.success:
            assert meets(constraints.expected_status(case, EVERY_MODE)), case.name
    codes = list(expected.values())
    assert codes.count(PARAM_NULLPTR) == 3
    assert codes.count(PARAM_INVALID) >= 4 and codes.count(TILING_ERROR) >= 15 and codes.count(561000) == 7
    assert codes.count(561103) == 1 and "any" not in codes                     # a slice list of no value
    assert None in codes                                               # the empty-slice success case
    modes = {case.rotary_mode for case in cases if "mode-unsupported" in case.tags}
    assert modes == {0, 2, 3}


@SHARED_FIXTURES
def test_negative_breaks_each_documented_constraint(loaded):
    messages = " | ".join(message for case in loaded["negative"]
                          for _, message in constraints.violations(case, TODAY))
    for fragment in ("dy is a null pointer", "cos is a null pointer", "sin is a null pointer", "dy dtype int32",
                     "cos dtype float64", "differs from cos dtype", "format FRACTAL_NZ", "not contiguous",
                     "rotary_mode 7", "half (0) not supported", "not 4-D", "differs from sin shape",
                     "exceeds 1024", "is negative", "exceeds D", "is after its end",
                     "differs from cos's last axis", "exceeds dy's D", "is odd", "not a multiple of 4",
                     "neither 1 nor dy's"):
        assert fragment in messages, fragment
    # case files cannot hold a negative dim, and a dim of 0 is a no-op (an empty dy skips the tiling, an empty
    # cos or sin is the tiling's no-op): the negative preset pins that order instead
    order = {case.name: case for case in loaded["negative"] if "check-order" in case.tags}
    assert all(case.expect.success for name, case in order.items() if name.endswith("_ok"))
    assert {name for name, case in order.items() if not case.expect.success} == {
        "neg.empty_slice_past_D", "neg.empty_slice_sin_shape_not_cos", "neg.empty_slice_cos_3d",
        "neg.dy_empty_cos_strided"}                 # an empty dy: the launch's contiguity check is not skipped


@SHARED_FIXTURES
def test_future_modes_cover_every_mode_dtype_pair_and_pattern(loaded):
    cases = loaded["future_modes"]
    for mode in (0, 2, 3):
        of_mode = [c for c in cases if c.rotary_mode == mode]
        assert {(c.dtype, c.cos_dtype) for c in of_mode} == set(itertools.product(FLOATS, FLOATS))
        assert {pattern_of(c) for c in of_mode if len(set(c.shape[:3])) == 3} == set(PATTERNS)
        assert all(constraints.skip_reason(c, TODAY) for c in of_mode)
        assert not any(constraints.skip_reason(c, EVERY_MODE) for c in of_mode)


@SHARED_FIXTURES
def test_perf_is_large_and_not_shipped(loaded, shipped):
    assert all(c.shape[0] * c.shape[1] * c.shape[2] * c.shape[3] >= 2**24 for c in loaded["perf"])
    assert not any("perf" in case.tags for case in shipped)


# ----- shipped files ---------------------------------------------------------------------------------

def test_shipped_files_equal_their_generators(tmp_path):
    """What ``python -m prmg_cli.cases.presets`` (``write_shipped``) writes is what ``cases/`` holds, byte for byte."""
    written = presets_module.write_shipped(tmp_path)
    for path in written:
        relative = path.relative_to(tmp_path)
        assert (CASES / relative).is_file(), (f"{relative} is not shipped; regenerate with "
                                                 "python -m prmg_cli.cases.presets")
        assert (CASES / relative).read_bytes() == path.read_bytes(), \
            f"cases/{relative} drifted from prmg_cli/cases/presets.py; regenerate with python -m " \
            "prmg_cli.cases.presets"
    shipped = {str(p.relative_to(CASES)) for p in CASES.rglob("*.yaml")}
    imported = {"ttk_upstream.yaml", "ttk_upstream_e2e.yaml"}                     # prmg import-ttk's
    assert shipped == {str(path.relative_to(tmp_path)) for path in written} | imported


@SHARED_FIXTURES
def test_shipped_suite_loads_with_unique_names_and_validates(shipped):
    cases = shipped
    for modes in (TODAY, EVERY_MODE):
        validate(cases, modes)
    assert len(cases) == len({case.name for case in cases})
    assert 300 <= len(cases) <= 850
    worked = [case for case in cases if case.name == "worked_example"]
    assert len(worked) == 1 and worked[0].partial_slice == (2, 6)


@SHARED_FIXTURES
def test_shipped_suite_has_what_each_emulator_fault_needs(shipped):
    cases = [c for c in shipped if c.expect.success and constraints.skip_reason(c, TODAY) is None]
    rows = lambda c: c.shape[0] * c.shape[1] * c.shape[2]  # noqa: E731
    cos_rows = lambda c: c.cos_shape[0] * c.cos_shape[1] * c.cos_shape[2]  # noqa: E731
    for pattern in PATTERNS:    # ignore_broadcast: every pattern with several distinct cos rows
        assert any(pattern_of(c) == pattern and len(set(c.shape[:3])) == 3 and (cos_rows(c) > 1 or pattern == "111D")
                   for c in cases), pattern
    assert sum(1 for c in cases if 0 < c.partial_slice[0] and c.partial_slice[1] < c.shape[-1]) >= 50  # pass-through
    assert sum(1 for c in cases if rows(c) > 1) >= 100                                   # skip_last_row
    assert any(c.dtype == "float32" and c.cos_input.kind == "values" for c in cases)    # fp32 cancellation
    assert any(c.cos_input.kind == "uniform" for c in cases)                           # own_sin
    unsupported = [c for c in shipped if "mode-unsupported" in c.tags]                 # accept_mode
    assert unsupported and all(c.expect.error == TILING_ERROR for c in unsupported)
    assert any("smoke" in c.tags for c in unsupported)                                 # ... in NPU CI too
    passing = [c for c in shipped if c.expect.success]
    for op in OPERATORS:                                # fwd_fp16_ilv_half: a kernel built per dtype and mode
        assert {(c.dtype, c.rotary_mode) for c in passing if c.op == op} >= {
            (dtype, mode) for dtype in FLOATS for mode in ROTARY_MODES.values()}, op
    for op, mode in itertools.product(OPERATORS, (0, 2, 3)):  # halves (quarters) of an odd length past one pair
        part = 4 if mode == 2 else 2
        assert any(c.op == op and c.rotary_mode == mode and (c.partial_slice[1] - c.partial_slice[0]) // part % 2
                   and c.partial_slice[1] - c.partial_slice[0] > part for c in passing), (op, mode)
    alike = {}                                          # tiling_cache: calls alike but for the slice start or the mode
    for c in passing:
        alike.setdefault((c.op, c.shape, c.cos_shape, c.dtype, c.cos_dtype), []).append(c)
    assert any(len({c.partial_slice for c in group if c.rotary_mode == 1}) > 1 for group in alike.values())
    assert any(len({c.rotary_mode for c in group if c.partial_slice == group[0].partial_slice}) == len(ROTARY_MODES)
               for group in alike.values())


# ----- one case from options -------------------------------------------------------------------------

def test_case_from_options_derives_cos_shape_and_name():
    case = gencase.case_from_options(shape=(2, 16, 4, 128), broadcast="111D", partial_slice=(32, 96),
                                     dtype="bf16", cos_dtype="float32")
    assert case["name"] == "interleave_bf16_fp32_2x16x4x128_111D_s32-96"
    assert case["cos_shape"] == [1, 1, 1, 64]
    assert case["dtype"] == "bfloat16" and case["cos_dtype"] == "float32"
    assert case["expect"] == "pass"
    default = gencase.case_from_options(shape="2,16,4,128")       # the loader's default, [1, 1, 1, L]
    assert default["partial_slice"] == [0, 128] and default["cos_shape"] == [1, 1, 1, 128]
    given = gencase.case_from_options(shape=(2, 16, 4, 128), cos_shape=(1, 16, 1, 64))
    assert given["partial_slice"] == [0, 64]


def test_case_from_options_output_loads_as_written(tmp_path):
    case = gencase.case_from_options(shape=(2, 8, 4, 64), broadcast="B1ND", partial_slice=(7, 39), mode=1, seed=5,
                                     dtype="float16", inputs="dy=normal:0:2,cos=rope:10000:64,sin=rope:10000:64",
                                     standard="allclose", tolerance={"rtol": 0.001, "atol": 1e-5}, tags=("mine",))
    loaded, = load_cases([write(tmp_path, gencase.document([case]))])
    assert loaded.cos_shape == (2, 1, 4, 32) and loaded.seed == 5 and loaded.standard == "allclose"
    assert loaded.dy_input.kind == "normal" and tuple(loaded.dy_input.args) == (0, 2)
    assert loaded.cos_input.kind == "rope" and tuple(loaded.cos_input.args) == (10000, 64)
    assert loaded.tags == ("mine",)


@pytest.mark.parametrize("options, message", [
    (dict(shape=(1, 1, 1, 2048)), "D = 2048 exceeds 1024"),
    (dict(shape=(1, 1, 1, 64), partial_slice=(3, 10)), "L = 7 is odd"),
    (dict(shape=(2, 1, 1, 64), cos_shape=(3, 1, 1, 64)), "B = 3 is neither 1 nor dy's B = 2"),
    (dict(shape=(1, 1, 1, 64), partial_slice=(0, 70)), "slice end 70 exceeds D = 64"),
    (dict(shape=(1, 1, 1, 64), mode="quarter", partial_slice=(0, 6)), "not a multiple of 4"),
    (dict(shape=(1, 1, 1, 64), mode=7), "rotary_mode"),
    (dict(shape=(1, 1, 1, 64), null=("cos",)), "cos is a null pointer"),
])
def test_case_from_options_refuses_what_the_operator_rejects(options, message):
    with pytest.raises(PrmgError, match=message):
        gencase.case_from_options(**options)


def test_case_from_options_keeps_broken_cases_that_expect_an_error():
    case = gencase.case_from_options(shape=(1, 1, 1, 2048), expect="ACLNN_ERR_INNER_TILING_ERROR")
    assert case["expect"] == {"error": "ACLNN_ERR_INNER_TILING_ERROR"}
    assert gencase.case_from_options(shape=(1, 1, 1, 2048), expect="error")["expect"] == {"error": "any"}
    assert gencase.case_from_options(shape=(1, 1, 1, 2048), expect=561002)["expect"] == {"error": 561002}
    # an unsupported mode is fine either way: it passes on a wider target and fails today
    assert gencase.case_from_options(shape=(1, 1, 1, 64), mode="half")["rotary_mode"] == "half"
    assert gencase.case_from_options(shape=(1, 1, 1, 64), mode="half", expect=561002)["rotary_mode"] == "half"


@pytest.mark.parametrize("options, message", [
    (dict(shape=(1, 1, 1, 2048), expect="ACLNN_ERR_PARAM_NULLPTR"), "operator returns 561002"),
    (dict(shape=(1, 1, 1, 64), expect=561002), "operator returns 0 SUCCESS"),
    (dict(shape=(1, 1, 1, 64), expect="error"), "expects an error but the operator returns 0 SUCCESS"),  # any
    (dict(shape=(1, 1, 1, 64), expect="sometimes"), "expect must be"),
    (dict(shape=(1, 1, 1, 64), expect=12345), "not a known error status"),
    (dict(shape=(1, 1, 1, 64), mode="spiral"), "unknown rotary mode 'spiral'"),
    (dict(shape=(1, 1, 1, 64), dtype="float8"), "unknown dtype 'float8'"),
    (dict(shape=(1, 1, 1, 64), broadcast="1S1D", cos_shape=(1, 1, 1, 64)), "not both"),
    (dict(shape=(1, 1, 1, 64), broadcast="S11D"), "unknown broadcast pattern 'S11D'"),
    (dict(shape="1,1,a,64"), "expected integers"),
    (dict(shape=(1, 1, 1, 64), partial_slice=(1, 2, 3)), "slice length L = 1 is odd"),   # the first two values
    (dict(shape=(1, 1, 1, 64), name="bad name!"), "letters, digits"),
])
def test_case_from_options_reports_bad_options(options, message):
    with pytest.raises(PrmgError, match=message):
        gencase.case_from_options(**options)


@pytest.mark.parametrize("pattern", PATTERNS)
def test_broadcast_cos_shape_matches_the_loader(pattern, tmp_path):
    shape, piece = [2, 3, 4, 64], [8, 40]
    doc = {"cases": [{"name": "x", "shape": shape, "partial_slice": piece, "broadcast": pattern}]}
    path = tmp_path / "b.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    loaded, = load_cases([path])
    generated = gencase.case_from_options(shape=shape, broadcast=pattern, partial_slice=piece)
    assert tuple(generated["cos_shape"]) == loaded.cos_shape
    expected = tuple(1 if letter == "1" else size for letter, size in zip(pattern[:3], shape[:3])) + (32,)
    assert loaded.cos_shape == expected
    empty = gencase.case_from_options(shape=shape, broadcast=pattern, partial_slice=[8, 8])
    assert empty["cos_shape"][-1] == 1


@pytest.mark.parametrize("options,message", [
    (dict(shape="1,a,1,64"), "--shape: expected integers, got '1,a,1,64'"),
    (dict(shape="1,1,1,64", cos_shape="1,1,z,8"), "--cos-shape: expected integers, got '1,1,z,8'"),
    (dict(shape="1,1,1,64", partial_slice="1,2,3"), "--slice: expected 2 integers, got 3 ('1,2,3')"),
    (dict(shape="1,1,1,٦٤"), "--shape: expected integers, got '1,1,1,٦٤'"),      # as a case file's shape: [١]
    (dict(shape="1,1,1,64", partial_slice="0,３２"), "--slice: expected integers, got '0,３２'"),
    (dict(shape="1,1,1,64", mode="١"), "--mode: unknown rotary mode '١'; use one of half, interleave, quarter, "
                                           "interleave-half or 0..3"),
])
def test_gen_case_names_the_option_whose_text_is_bad(options, message):
    flags = dict(shape=None, cos_shape=None, broadcast=None, partial_slice=None, dtype="float32",
                 cos_dtype=None, mode="interleave", seed=None, name=None, inputs=None, expect="pass",
                 standard=None, preset=None, output=None, append=False)
    with pytest.raises(PrmgError) as caught:
        case_writer.generate(**{**flags, **options})
    assert str(caught.value) == message


def test_gen_case_reads_shape_and_slice_text():
    flags = dict(cos_shape=None, broadcast="1S1D", dtype="float32", cos_dtype=None, mode="interleave", seed=None,
                 name="t", inputs=None, expect="pass", standard=None, preset=None, output=None, append=False)
    case, = yaml.safe_load(case_writer.generate(shape="2x16x4x128", partial_slice="32, 96", **flags))["cases"]
    assert case["shape"] == [2, 16, 4, 128] and case["partial_slice"] == [32, 96]
    assert case["cos_shape"] == [1, 16, 1, 64]


def test_parse_inputs_option():
    assert gencase.parse_inputs_option("dy=uniform:-1:1,cos=rope:10000,sin=rope:500000:4096") == {
        "dy": {"uniform": [-1, 1]}, "cos": {"rope": {"base": 10000, "offset": 0}},
        "sin": {"rope": {"base": 500000, "offset": 4096}}}
    assert gencase.parse_inputs_option("cos=rope:500000:0;37; 4095") == {     # per-request positions
        "cos": {"rope": {"base": 500000, "offset": [0, 37, 4095]}}}
    assert gencase.parse_inputs_option("all=normal:0:1e-3") == {
        tensor: {"normal": [0, 0.001]} for tensor in ("dy", "cos", "sin")}
    assert gencase.parse_inputs_option("dy=values:1;2.5;-3, sin=file:tables/s.npy") == {
        "dy": {"values": [1, 2.5, -3]}, "sin": {"file": "tables/s.npy"}}
    # an integer is read exactly (through a float, the refusal of an offset past 2**63 - 1 named another number)
    assert gencase.parse_inputs_option("cos=rope:1:99999999999999999999")["cos"]["rope"]["offset"] == 10**20 - 1


@pytest.mark.parametrize("text, message", [
    ("", "empty"), ("dy", "not TENSOR=KIND"), ("dx=uniform:-1:1", "unknown tensor 'dx'"),
    ("dy=uniform:-1", "two numbers"), ("dy=uniform:a:1", "'a' is not a number"),
    ("dy=gauss:0:1", "unknown input kind 'gauss'"), ("dy=rope:10000", "cos and sin only"),
    ("dy=uniform:0:1,dy=normal:0:1", "dy is set twice"), ("cos=rope:1:2:3", "BASE"),
    ("dy=values:", "values takes"), ("sin=file:", "needs a path"), ("cos=rope:٥٠٠", "'٥٠٠' is not a number"),
    ("dy=values:1;²", "'²' is not a number"),
])
def test_parse_inputs_option_rejects_junk(text, message):
    with pytest.raises(PrmgError, match=message):
        gencase.parse_inputs_option(text)


FLAGS = dict(cos_shape=None, broadcast=None, partial_slice=None, dtype="float32", cos_dtype=None, mode="half",
             seed=None, name=None, expect="pass", standard=None, preset=None, output=None, append=False)


@pytest.mark.parametrize("flags, line", [
    ({"shape": "1,2,1"}, "--shape: expected 4 dimensions [B, S, N, D], got 3"),
    ({"seed": -1}, "--seed: expected an integer 0 <= seed < 2**64, got the integer -1"),
    ({"inputs": "dy=uniform:-1e308:1e308"}, "--inputs (inputs.dy.uniform): hi - lo overflows float64"),
    ({"expect": "-1"}, "--expect: -1 is not a known error status"),
    ({"dtype": "float64"}, "--dtype: unknown dtype 'float64'"),
    ({"preset": "smok", "shape": None}, "--preset: unknown preset 'smok' (did you mean 'smoke'?)"),
])
def test_gen_case_errors_name_the_flag_not_a_field_of_a_case_the_user_never_named(flags, line):
    """A flag-built case's mistake names the flag that set the field (``case_writer.FIELD_FLAGS``), not ``case
    'interleave_fp32_fp32_1x2x1_cos1x1x1x1_s0-1': field 'shape'``, a name prmg made up."""
    with pytest.raises(PrmgError) as caught:
        case_writer.generate(**{**FLAGS, "mode": None, "dtype": None, "shape": "1,2,1,4", "inputs": None, **flags})
    assert str(caught.value).startswith(line) and "case '" not in str(caught.value)


def test_gen_case_writes_a_no_op_case_which_fails_a_kernel_writing_anything(tmp_path):
    """An empty slice (or dy) is its own answer on purpose, as upstream's no-op rows: gen-case refused it as a case
    that 'cannot fail', yet a kernel writing past dy or into the pass-through fails it, and the run gives it no
    vacuous warning."""
    from conftest import prmg_here

    path = tmp_path / "noop.yaml"
    flags = {**FLAGS, "mode": None, "dtype": None, "inputs": None}
    assert case_writer.generate(shape="1,2,1,4", **{**flags, "partial_slice": "0,0", "output": str(path)})
    assert "0x2x1x4" in case_writer.generate(shape="0,2,1,4", **flags)
    for fault, code in (("", 0), ("clobber_passthrough", 1)):
        result = prmg_here("run", path, "--runner", "emulator", "--strict", env={"PRMG_EMU_FAULT": fault})
        assert result.returncode == code, result.stdout + result.stderr


def test_gen_case_refuses_a_case_that_cannot_fail_and_warns_of_one_blind_to_broadcast_faults():
    """A decode case at S = 1 with tables at position 0 (cos = 1, sin = 0) is refused, one line with the fix; a
    B11D table with one position for every request gets a warning (a broadcast fault would pass it); one position
    per request is written without a word, and a list that is not one per request is refused."""
    with pytest.raises(PrmgError) as caught:
        case_writer.generate(shape="8,1,4,16", inputs="cos=rope:500000,sin=rope:500000", **FLAGS)
    assert "field 'inputs': this case cannot fail: its unchanged input already passes (cos = 1 and sin = 0 " \
           "everywhere)" in str(caught.value)
    assert '--inputs "cos=rope:BASE:P1;P2;...;P8,sin=rope:BASE:P1;P2;...;P8"' in str(caught.value)  # quoted: shell
    notes = []                                 # two requests: both positions spelt out (it said P1;P2;...;P2)
    case_writer.generate(shape="2,1,4,16", inputs="cos=rope:1e4:37,sin=rope:1e4:37", notes=notes,
                         **{**FLAGS, "broadcast": "B11D"})
    assert notes[0].endswith('; give one position per request: --broadcast B11D --inputs "cos=rope:BASE:P1;P2,'
                             'sin=rope:BASE:P1;P2"')
    notes = []
    case_writer.generate(shape="8,1,4,16", inputs="cos=rope:500000:4096,sin=rope:500000:4096", notes=notes,
                         **{**FLAGS, "broadcast": "B11D"})
    assert len(notes) == 1 and "warning: case" in notes[0]
    assert "cos and sin are the same for every b (B = 8): a kernel reading the first row " \
           "for all of them (a broadcast fault) passes it" in notes[0]
    positions = ";".join(str(7 * b * b) for b in range(8))
    text = case_writer.generate(shape="8,1,4,16", inputs=f"cos=rope:500000:{positions},sin=rope:500000:{positions}",
                                notes=notes, **{**FLAGS, "broadcast": "B11D"})
    assert len(notes) == 1 and "offset: [0, 7, 28, 63, 112, 175, 252, 343]" in text
    # a RoPE sin says why it is alike at both lanes of every pair, as the presets' do: the run gave the README's
    # own gen-case line a 'partners alike' warning, which --strict fails
    from prmg_cli.cases.vacuity import weak_warning

    (value,) = gencase.load_generated(yaml.safe_load(text)["cases"])
    assert value.partners_alike == gencase.ROPE_PARTNERS and weak_warning(value) is None
    with pytest.raises(PrmgError, match=r"^--inputs \(inputs.cos.rope.offset\): a list of offsets has one per "
                                        r"index of the table's first axis \(B = 8\), got 2$"):
        case_writer.generate(shape="8,1,4,16", inputs="cos=rope:1e4:0;1,sin=rope:1e4:0;1",
                             **{**FLAGS, "broadcast": "B11D"})


@pytest.mark.parametrize("flags, warning", [
    ({"shape": "2,1,1,2", "mode": "interleave", "inputs": "sin=uniform:0:0"}, "PARTNERS_ALIKE_WARNING"),
    ({"shape": "1,2,2,16", "mode": "interleave-half", "partial_slice": "0,8",
      "inputs": "cos=rope:0.5:0,sin=rope:0.5:0"}, "SIGN_HIDDEN_WARNING")])
def test_gen_case_warns_as_validate_does_of_the_case_it_writes(tmp_path, flags, warning):
    """gen-case wrote, without a word, cases that prmg validate (and the run) then warned of: a sin alike at both lanes
    of every pair (sin = 0), a sign of sin the values hide (interleave-half at position 0, which permutes and so is
    no no-op, but whose sin is 0): 17 of 200 random gen-case lines (fuzzing, session 9). It says the same warning."""
    from prmg_cli.commands.suite import validate_paths
    from prmg_cli.judging import judge

    notes, path = [], tmp_path / "g.yaml"
    case_writer.generate(notes=notes, **{**FLAGS, **flags, "output": str(path)})
    said = getattr(judge, warning)
    assert notes == [f"warning: case '{yaml.safe_load(path.read_text())['cases'][0]['name']}': {said}"]
    assert said in validate_paths([str(path)], None)


def test_the_models_preset_says_each_models_mode_and_what_todays_target_skips():
    from prmg_cli.cases.models_preset import MODELS
    from prmg_cli.vocab import DEFAULT_SUPPORTED_MODES, ROTARY_MODES

    notes = []
    text = case_writer.generate(shape=None, inputs=None, notes=notes, tags=(), exclude_tags=("long",),
                                **{**FLAGS, "preset": "models"})
    skipped = [model for model in MODELS if ROTARY_MODES[model.mode] not in DEFAULT_SUPPORTED_MODES]
    for model in MODELS:
        assert f"#   {model.name}: {model.mode}{' (skipped today)' * (model in skipped)}\n" in text
    halves = sum(3 for model in skipped if model.mode == "half")
    assert notes == [f"note: today's target (interleave only) skips {3 * len(skipped)} of {3 * len(MODELS)} cases "
                     f"here (half: {halves}, interleave-half: {3 * len(skipped) - halves}); --supported-modes "
                     f"0,1,2,3 runs them (the emulator has every mode)"]
    assert {model.name for model in skipped} == {"llama3.1_8b", "qwen2.5_7b", "phi2", "deepseek_v3"}


def test_the_broadcast_fault_the_warning_names_passes_the_warned_case_and_fails_the_per_request_one(tmp_path):
    """What the warning says, through the emulator: its broadcast_b fault passes the decode case whose requests share
    a position and fails the one whose requests each have their own (and gen-case warns on stderr, exit 0)."""
    from conftest import prmg_forked

    shared = prmg_forked("gen-case", "--shape", "4,1,2,16", "--broadcast", "B11D", "--mode", "half", "--name", "shared",
                         "--inputs", "cos=rope:500000:4096,sin=rope:500000:4096", "-o", tmp_path / "cases.yaml")
    assert shared.returncode == 0 and shared.stderr.startswith("prmg: warning: case 'shared': cos and sin are the "
                                                               "same for every b (B = 4)"), shared.stderr
    own = prmg_forked("gen-case", "--shape", "4,1,2,16", "--broadcast", "B11D", "--mode", "half", "--name", "own",
                      "--inputs", "cos=rope:500000:0;37;4095;9000,sin=rope:500000:0;37;4095;9000", "-o",
                      tmp_path / "cases.yaml", "--append")
    assert own.returncode == 0 and own.stderr == ""
    run = prmg_forked("run", tmp_path / "cases.yaml", "--supported-modes", "0,1", "--report", "json",
                      env={"PRMG_EMU_FAULT": "broadcast_b"})
    statuses = {case["name"]: case["status"] for case in json.loads(run.stdout)["cases"]}
    assert statuses == {"shared": "passed", "own": "failed"}, run.stdout[-500:]


# ----- YAML ------------------------------------------------------------------------------------------

def test_dump_yaml_round_trips_with_header_and_comments():
    case = gencase.case_from_options(shape=(1, 1, 1, 8), name="c1", inputs="dy=uniform:-1e30:1e30")
    doc = gencase.document([case], defaults={"tags": ["x"]}, header=["first line", "second"],
                           comments={"c1": "about c1"})
    text = gencase.dump_yaml(doc)
    assert text.startswith("# first line\n# second\n")
    assert "# about c1\n- name: c1\n" in text
    assert "dy: {uniform: [-1.0e+30, 1.0e+30]}" in text
    data = yaml.safe_load(text)
    assert data == {"defaults": {"tags": ["x"]}, "cases": [case]}


def test_append_cases_adds_and_refuses_duplicates(tmp_path):
    path = tmp_path / "sub" / "mine.yaml"
    first = gencase.case_from_options(shape=(1, 2, 2, 16), name="first")
    second = gencase.case_from_options(shape=(1, 1, 1, 2048), name="second", expect="error")
    gencase.append_cases(path, [first])
    gencase.append_cases(path, [second])
    assert [case.name for case in load_cases([path])] == ["first", "second"]
    before = path.read_text()
    with pytest.raises(PrmgError, match="already in the file") as info:
        gencase.append_cases(path, [first])
    assert info.value.case == "first" and path.read_text() == before
    path.write_text("defaults: {dtype: float16}\ncases:\n- {name: hand, shape: [1, 1, 1, 4]}\n")
    gencase.append_cases(path, [first])
    assert [(c.name, c.dtype) for c in load_cases([path])] == [("hand", "float16"), ("first", "float32")]
    path.write_text("just: text\n")
    with pytest.raises(PrmgError, match="not a case file"):
        gencase.append_cases(path, [first])


def test_preset_tags_choose_its_cases(tmp_path):
    only_long = case_writer.generate(shape=None, cos_shape=None, broadcast=None, partial_slice=None, dtype="float32",
                                     cos_dtype=None, mode="interleave", seed=None, name=None, inputs=None,
                                     expect="pass", standard=None, preset="models", output=None, append=False,
                                     tags=("long",))
    (tmp_path / "long.yaml").write_text(only_long, encoding="utf-8")
    loaded = load_cases([tmp_path / "long.yaml"])
    assert loaded and all("long" in case.tags for case in loaded)
    assert only_long.startswith("# Generated by `prmg gen-case --preset models --tag long`.")
    kept = presets_module.preset("smoke", exclude_tags=("mode-unsupported",))["cases"]
    assert len(kept) == len(presets_module.preset("smoke")["cases"]) - 1
    with pytest.raises(PrmgError, match="no case of preset 'smoke' is left"):
        presets_module.preset("smoke", tags=("nothing-has-this",))
    with pytest.raises(PrmgError, match="--tag and --exclude-tag choose cases of a --preset"):
        case_writer.generate(shape="1,1,1,2", cos_shape=None, broadcast=None, partial_slice=None, dtype="float32",
                             cos_dtype=None, mode="interleave", seed=None, name=None, inputs=None, expect="pass",
                             standard=None, preset=None, output=None, append=False, tags=("long",))


def test_inputs_option_takes_bit_patterns():
    assert gencase.parse_inputs_option("dy=bits:0x7e01;65535") == {"dy": {"bits": [0x7E01, 65535]}}
    with pytest.raises(PrmgError, match="is not a bit pattern"):
        gencase.parse_inputs_option("dy=bits:1.5")
