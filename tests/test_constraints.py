"""The operator's documented constraints: one test per row of operator.md's table, plus ordering."""

from __future__ import annotations

import dataclasses

import pytest

from prmg_cli.cases.loader import Case, Expect, KnownDefect
from prmg_cli.errors import PrmgError
from prmg_cli.ops.constraints import (DEFAULT_SUPPORTED_MODES, expectation_warning, expected_status, skip_reason,
                                      violation_details, violations)
from prmg_cli.vocab import parse_modes

NULLPTR, INVALID, TILING, INNER = 161001, 161002, 561002, 561000
TODAY = frozenset({1})
ALL_MODES = frozenset({0, 1, 2, 3})

# A valid interleave case: dy (2, 4, 8, 64), cos/sin 1S1D over the slice [8, 40).
VALID = Case(name="valid", source="test", shape=(2, 4, 8, 64), cos_shape=(1, 4, 1, 32),
             sin_shape=(1, 4, 1, 32), partial_slice=(8, 40))


def make(**changes) -> Case:
    if "cos_shape" in changes and "sin_shape" not in changes:
        changes["sin_shape"] = changes["cos_shape"]
    return dataclasses.replace(VALID, **changes)


def codes(case: Case, modes=TODAY) -> list[int]:
    return [code for code, _ in violations(case, modes)]


def test_a_valid_case_breaks_nothing():
    assert violations(VALID, TODAY) == []
    assert expected_status(VALID, TODAY) == 0
    assert skip_reason(VALID, TODAY) is None


@pytest.mark.parametrize("tensor", ["dy", "cos", "sin"])
def test_null_pointer_gives_161001(tensor):
    case = make(null=(tensor,), dtype="int8")     # the null check comes before the dtype check
    assert expected_status(case, TODAY) == NULLPTR
    assert violations(case, TODAY)[0] == (NULLPTR, f"{tensor} is a null pointer")


@pytest.mark.parametrize("changes", [
    {"dtype": "int8"}, {"dtype": "float64"},
    {"dtype": "bool"}, {"dtype": "uint8", "cos_dtype": "float16", "sin_dtype": "float16"},
    {"cos_dtype": "float16", "sin_dtype": "float32"},          # sin dtype != cos dtype
    {"format": "NC1HWC0"}, {"format": "FRACTAL_NZ"},
])
def test_dtype_and_format_rules_give_161002(changes):
    assert codes(make(**changes)) == [INVALID]


@pytest.mark.parametrize("changes", [
    {"format": "NCHW"}, {"format": "NHWC"},
    {"dtype": "bfloat16", "cos_dtype": "float32", "sin_dtype": "float32"},   # dy and cos may differ
    {"dtype": "float16", "cos_dtype": "bfloat16", "sin_dtype": "bfloat16"},
])
def test_supported_formats_and_mixed_dy_cos_dtypes_are_fine(changes):
    assert violations(make(**changes), TODAY) == []


def test_every_refused_dtype_is_listed():
    found = violations(make(cos_dtype="int32", sin_dtype="int32"), TODAY)
    assert found == [(INVALID, "cos dtype int32 is not one of float32, float16, bfloat16"),
                     (INVALID, "sin dtype int32 is not one of float32, float16, bfloat16")]


def test_non_contiguous_strides_are_refused_at_launch_with_561000():
    assert codes(make(dy_strides=(2048, 512, 64, 2))) == [INNER]            # every other element
    assert codes(make(dy_strides=(4096, 1024, 128, 1))) == [INNER]          # padded rows
    assert violation_details(make(dy_strides=(4096, 1024, 128, 1)), TODAY)[0].at_launch
    # phase one's checks come first: a tiling error wins over the launch-time refusal
    assert codes(make(dy_strides=(4096, 1024, 128, 1), partial_slice=(8, 39))) == [TILING, TILING, INNER]
    assert expected_status(make(dy_strides=(4096, 1024, 128, 1), dtype="int8"), TODAY) == INVALID
    assert violations(make(dy_strides=(2048, 512, 64, 1)), TODAY) == []     # exactly C order
    # an axis of length 1 may carry any stride
    assert violations(make(shape=(1, 4, 8, 64), dy_strides=(7, 512, 64, 1)), TODAY) == []
    # an empty tensor may carry any strides: nnopbase skips the tiling and the kernel for an empty dy
    assert codes(make(shape=(2, 0, 8, 64), dy_strides=(5, 3, 7, 9))) == []


def test_161002_comes_before_561002():
    case = make(dtype="int8", shape=(2, 4, 8, 2048))
    assert codes(case) == [INVALID, TILING]
    assert expected_status(case, TODAY) == INVALID


@pytest.mark.parametrize("mode", [0, 2, 3])
def test_mode_unsupported_by_target_gives_561002_and_a_skip(mode):
    case = make(rotary_mode=mode)
    assert codes(case) == [TILING]
    assert skip_reason(case, TODAY) is not None
    assert expected_status(case, ALL_MODES) == 0 and skip_reason(case, ALL_MODES) is None


@pytest.mark.verdict
def test_skip_reason_wording_and_when_it_applies():
    half = make(rotary_mode=0)
    assert skip_reason(half, TODAY) == "rotary_mode half (0) not supported by the target (supported: interleave)"
    assert skip_reason(dataclasses.replace(half, expect=Expect(561002)), TODAY) is None   # runs: must fail
    assert skip_reason(make(rotary_mode=0, partial_slice=(8, 39)), TODAY) is None       # also a bad slice


def test_a_case_expecting_an_error_is_never_skipped():
    refused_today = make(rotary_mode=0, expect=Expect(TILING))
    for modes in (TODAY, ALL_MODES):
        assert skip_reason(refused_today, modes) is None
    assert expectation_warning(refused_today, TODAY) is None
    assert "predicts success" in expectation_warning(refused_today, ALL_MODES)
    tiny = make(shape=(1, 1, 1, 2), cos_shape=(1, 1, 1, 2), partial_slice=(0, 2), expect=Expect(TILING))
    assert skip_reason(tiny, TODAY) is None and "predicts success" in expectation_warning(tiny, TODAY)
    assert "predicts 161002" in expectation_warning(make(dtype="int8", expect=Expect(TILING)), TODAY)
    defected = dataclasses.replace(tiny, known_defect=KnownDefect("upstream accepts it", 0))
    assert expectation_warning(defected, TODAY) is None


@pytest.mark.parametrize("mode", [-1, 4, 7, 2**32 + 7, -2**32 - 1])
def test_mode_outside_0_to_3_gives_561002_on_every_target(mode):
    case = make(rotary_mode=mode, expect=Expect("any"))
    assert expected_status(case, ALL_MODES) == TILING
    assert skip_reason(make(rotary_mode=mode), ALL_MODES) is None


@pytest.mark.parametrize("mode, read_as", [(2**32 + 1, 1), (2**40, 0), (2**33 + 3, 3), (-2**32 + 1, 1)])
def test_rotary_mode_is_read_as_int32_like_upstreams_tiling(mode, read_as):
    case = make(rotary_mode=mode, expect=Expect(TILING))
    assert expected_status(case, frozenset({read_as})) == 0                 # accepted: an upstream defect
    assert codes(case, frozenset(MODE for MODE in ALL_MODES if MODE != read_as)) == [TILING]


@pytest.mark.parametrize("changes", [
    {"shape": (4, 8, 64)},                                        # dy 3-D
    {"cos_shape": (4, 32), "partial_slice": (0, 32)},             # cos and sin 2-D
    {"shape": (1, 2, 4, 8, 64)},                                  # dy 5-D
])
def test_tensor_not_4d_gives_561002(changes):
    case = make(**changes)
    assert expected_status(case, TODAY) == TILING
    assert any("not 4-D" in message for _, message in violations(case, TODAY))


def test_cos_shape_differs_from_sin_shape_gives_561002():
    case = make(sin_shape=(1, 1, 1, 32))
    assert codes(case) == [TILING]
    assert "differs from sin shape" in violations(case, TODAY)[0][1]


def test_an_empty_dy_succeeds_whatever_else_it_breaks():
    """nnopbase runs no tiling for an output without elements: only the null and dtype rules come first."""
    assert violations(make(shape=(2, 0, 8, 64)), TODAY) == []
    broken = make(shape=(2, 0, 8, 2048), partial_slice=(-2, 4000), rotary_mode=7, cos_shape=(3, 1, 1, 5),
                  sin_shape=(1, 1, 1, 6))
    assert violations(broken, TODAY) == [] and skip_reason(make(shape=(0, 4, 8, 64), rotary_mode=0), TODAY) is None
    assert violations(make(shape=(4, 0), partial_slice=(0, 0)), TODAY) == []                # not even 4-D
    assert codes(make(shape=(2, 0, 8, 64), dtype="int8")) == [INVALID]
    assert expected_status(make(shape=(2, 0, 8, 64), null=("cos",)), TODAY) == NULLPTR


@pytest.mark.parametrize("changes", [
    {"cos_shape": (1, 4, 0, 32)}, {"cos_shape": (0, 4, 1, 32)}, {"cos_shape": (1, 4, 1, 0)},
])
def test_empty_cos_and_sin_are_a_no_op(changes):
    """CheckAttr returns early when cos or sin has no elements: L, D, dims and layout are not checked."""
    assert violations(make(**changes), TODAY) == []
    assert violations(make(**changes, shape=(2, 4, 8, 2048)), TODAY) == []                  # D > 1024 too


def test_a_negative_dim_gives_561002():
    assert expected_status(make(shape=(2, -1, 8, 64)), TODAY) == TILING                    # not empty: checked
    assert violations(make(cos_shape=(1, -4, 1, 32)), TODAY)[0] == \
        (TILING, "cos shape [1, -4, 1, 32] has a dimension <= 0")


def test_d_over_1024_gives_561002():
    assert violations(make(shape=(2, 4, 8, 2048)), TODAY) == [(TILING, "D = 2048 exceeds 1024")]
    assert violations(make(shape=(2, 4, 8, 1024)), TODAY) == []


@pytest.mark.parametrize("piece, message", [
    ((-2, 30), "slice start -2 is negative"),
    ((40, 72), "slice end 72 exceeds D = 64"),
    ((40, 8), "slice start 40 is after its end 8"),
])
def test_slice_out_of_range_gives_561002(piece, message):
    found = violations(make(partial_slice=piece), TODAY)
    assert (TILING, message) in found


def test_slice_length_must_match_cos_last_axis():
    assert violations(make(partial_slice=(8, 24)), TODAY) == \
        [(TILING, "slice length L = 16 differs from cos's last axis 32")]


def test_cos_last_axis_longer_than_d_gives_561002():
    # an empty slice skips the L check, so only cos D > dy D is left
    case = make(partial_slice=(5, 5), cos_shape=(1, 4, 1, 128))
    assert violations(case, TODAY) == [(TILING, "cos's last axis 128 exceeds dy's D = 64")]


@pytest.mark.parametrize("changes, broken", [
    ({"partial_slice": (70, 70)}, "slice end 70 exceeds D = 64"),                            # range: always
    ({"partial_slice": (-3, -3)}, "slice start -3 is negative"),
    ({"partial_slice": (9, 9), "sin_shape": (1, 4, 1, 16)}, "cos shape [1, 4, 1, 32] differs from sin shape"),
    ({"partial_slice": (9, 9), "cos_shape": (4, 32)}, "cos is 2-D, not 4-D"),
    ({"cos_shape": (0, 4, 1, 32), "sin_shape": (1, 4, 1, 32)}, "differs from sin shape"),   # empty cos too
])
def test_an_empty_slice_still_checks_range_4d_and_cos_like_sin(changes, broken):
    found = violations(make(**changes), TODAY)
    assert {code for code, _ in found} == {TILING} and broken in found[0][1]


@pytest.mark.parametrize("changes", [
    {"partial_slice": (9, 9), "shape": (2, 4, 8, 2048)},                                      # D > 1024
    {"partial_slice": (9, 9), "cos_shape": (3, 4, 1, 32)},                                    # layout
    {"partial_slice": (9, 9), "cos_shape": (1, 4, 1, 7)},                                     # L != cos D, odd
    {"partial_slice": (0, 0), "cos_shape": (1, -1, 1, 8)},                                    # a dim <= 0
])
def test_an_empty_slice_skips_d_layout_length_and_dims(changes):
    assert violations(make(**changes), TODAY) == []


def test_d_is_the_tilings_axis_3():
    """The tiling reads D with GetDim(3): a dy of fewer axes has none, so every slice is out of range."""
    found = violations(make(shape=(4, 64), partial_slice=(0, 0)), TODAY)
    assert found[0] == (TILING, "dy is 2-D: it has no axis 3 for the tiling's D, so every slice is out of range")
    assert codes(make(shape=(2, 4, 8, 64, 1), partial_slice=(0, 0))) == [TILING]              # 5-D: D = 64


@pytest.mark.parametrize("mode", [0, 1, 3])
def test_odd_slice_length_gives_561002_for_pair_modes(mode):
    odd = make(rotary_mode=mode, partial_slice=(8, 39), cos_shape=(1, 4, 1, 31))
    assert codes(odd, ALL_MODES) == [TILING]
    even = make(rotary_mode=mode, partial_slice=(8, 38), cos_shape=(1, 4, 1, 30))
    assert violations(even, ALL_MODES) == []


def test_quarter_needs_a_multiple_of_4():
    assert codes(make(rotary_mode=2, partial_slice=(8, 38), cos_shape=(1, 4, 1, 30)), ALL_MODES) == [TILING]
    assert violations(make(rotary_mode=2, partial_slice=(8, 36), cos_shape=(1, 4, 1, 28)), ALL_MODES) == []


@pytest.mark.parametrize("cos_shape, message", [
    ((3, 4, 1, 32), "cos's B = 3 is neither 1 nor dy's B = 2"),
    ((1, 2, 1, 32), "cos's S = 2 is neither 1 nor dy's S = 4"),
    ((1, 4, 4, 32), "cos's N = 4 is neither 1 nor dy's N = 8"),
])
def test_broadcast_axis_neither_1_nor_dys_gives_561002(cos_shape, message):
    assert violations(make(cos_shape=cos_shape), TODAY) == [(TILING, message)]


@pytest.mark.parametrize("cos_shape", [
    (2, 4, 8, 32), (1, 1, 1, 32), (1, 4, 1, 32), (1, 4, 8, 32),
    (2, 1, 8, 32), (2, 4, 1, 32), (1, 1, 8, 32), (2, 1, 1, 32),
])
def test_every_documented_broadcast_pattern_is_fine(cos_shape):
    assert violations(make(cos_shape=cos_shape), TODAY) == []


def test_empty_slice_is_success():
    assert expected_status(make(partial_slice=(9, 9)), TODAY) == 0
    assert expected_status(make(partial_slice=(0, 0), cos_shape=(1, 1, 1, 1)), TODAY) == 0


def test_every_broken_rule_is_listed_in_checking_order():
    case = make(null=("sin",), format="FRACTAL_Z", rotary_mode=9, shape=(2, 4, 8, 2000), partial_slice=(-1, 30))
    assert codes(case) == [NULLPTR, INVALID, TILING, TILING, TILING, TILING]
    assert expected_status(case, TODAY) == NULLPTR
    messages = [message for _, message in violations(make(rotary_mode=9, shape=(2, 4, 8, 2000), partial_slice=(-1, 30),
                                                           cos_shape=(3, 4, 1, 32)), TODAY)]
    assert messages == ["rotary_mode 9 is not one of 0..3", "slice start -1 is negative",
                        "slice length L = 31 differs from cos's last axis 32", "D = 2000 exceeds 1024",
                        "cos's B = 3 is neither 1 nor dy's B = 2"]          # CheckAttr, then JudgeLayoutByShape
    five_d = make(partial_slice=(9, 40), shape=(2, 4, 8, 70, 1), cos_shape=(1, 4, 1, 31))
    assert [message for _, message in violations(five_d, TODAY)] == [
        "slice length L = 31 is odd (interleave works on pairs)", "dy is 5-D, not 4-D"]     # CheckAttr, CheckShape


def test_parse_modes():
    assert DEFAULT_SUPPORTED_MODES == frozenset({1})
    assert parse_modes("0,1,2,3") == ALL_MODES
    assert parse_modes("half, interleave") == frozenset({0, 1})
    assert parse_modes("interleave-half,2") == frozenset({2, 3})
    for junk in ("", "1,,2", "4", "-1", "spiral", "1;2"):
        with pytest.raises(PrmgError, match="--supported-modes"):
            parse_modes(junk)


@pytest.mark.verdict
def test_graph_mode_reads_a_forward_slice_list_of_none_as_the_whole_axis_and_expects_that_axis_s_refusal():
    """The forward's 950 tiling reads a partial_slice of none as [0, D) (``GraphReading``): a case whose [0, D) then
    breaks a rule of the tiling is expected to get that rule's refusal in graph mode (GE's FAILED at compile), not any
    refusal; one whose [0, D) runs is expected to pass; a list of one value v, read past its end as [v, 2^32) by both
    paths (GE's ComputeNodeInfo as nnopbase's), the slice range's refusal (GE's FAILED at compile), held to the aclnn
    path's."""
    from pathlib import Path

    from prmg_cli.cases.loader import load_cases
    from prmg_cli.ops.constraints import graph_case, graph_reads_otherwise

    root = Path(__file__).resolve().parent.parent / "cases"
    cases = {case.name: case for case in load_cases([root / "forward.yaml", root / "cover.yaml"])}
    expected = {"fwd.slice_list_empty": Expect(1343225857, "compile"), "fwd.slice_of_1": Expect(1343225857, "compile"),
                "cover.forward.error.slice_list_empty": Expect()}
    for name, expect in expected.items():
        assert graph_reads_otherwise(cases[name]) == (name != "fwd.slice_of_1"), name
        assert graph_case(cases[name], DEFAULT_SUPPORTED_MODES).expect == expect


def test_a_known_defects_refusal_is_graph_modes_as_ge_returns_it():
    """A known defect's status in GE's terms (``status.graph_status``): a refusal of aclnn's first phase (a null
    input, the definition, the tiling) is a refused compile, ge::PARAM_INVALID as Session::CompileGraph returns every
    one; a launch's refusal (561000), which no compile makes, is ge::FAILED; SUCCESS stays 0."""
    from prmg_cli.ops.constraints import graph_case
    from prmg_cli.status import GE_COMPILE_REFUSED, GE_FAILED, INNER, PARAM_INVALID, PARAM_NULLPTR, TILING_ERROR

    case = Case(name="d", source="t", shape=(1, 1, 1, 8), cos_shape=(1, 1, 1, 8), sin_shape=(1, 1, 1, 8),
                partial_slice=(0, 8))
    for status, graph in ((PARAM_NULLPTR, GE_COMPILE_REFUSED), (PARAM_INVALID, GE_COMPILE_REFUSED),
                          (TILING_ERROR, GE_COMPILE_REFUSED), (INNER, GE_FAILED), (0, 0)):
        defect = KnownDefect(reason="r", status=status)
        assert graph_case(dataclasses.replace(case, known_defect=defect), DEFAULT_SUPPORTED_MODES).known_defect == \
            dataclasses.replace(defect, status=graph), status
