"""The inputs the real stack takes and real callers pass (issue 33): views at a storage offset, strided cos/sin,
partialSlice lists of other lengths, the chips and builds expectations depend on, and tables whose pairs hide a
partner swap. The case format, the constraint model and the runner's storage layout, in process; the emulator
runs them in ``test_emulator_c.py`` and the shipped suite catches its faults in ``test_run_e2e.py``."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from conftest import ROOT
from prmg_cli.case import CONTIGUOUS_STORAGE
from prmg_cli.cases.coverage import facts
from prmg_cli.cases.loader import Case, Expect, case_to_dict, load_cases, parse_document
from prmg_cli.device import acl
from prmg_cli.device.acl import AclSession
from prmg_cli.errors import PrmgError
from prmg_cli.inputs.seeded import make_inputs
from prmg_cli.judging.judge import PARTNERS_ALIKE_WARNING, judge
from prmg_cli.ops.constraints import expected_phase, expected_status, holding_builds, violation_details
from prmg_cli.status import GE_COMPILE_REFUSED

TODAY = frozenset({1})
BASE = {"shape": [2, 3, 2, 16], "broadcast": "1S1D", "partial_slice": [4, 12]}


def case_of(**keys) -> Case:
    """One case read from a mapping, as from a case file (a key given None is left out)."""
    mapping = {key: value for key, value in {"name": "c", **BASE, **keys}.items() if value is not None}
    return parse_document([mapping], "t.yaml", ROOT)[0]


def test_the_new_keys_load_and_write_back_the_same_case():
    written = {"dy_offset": 5, "cos_offset": 3, "sin_offset": 1, "cos_strides": [48, 16, 16, 1],
               "sin_strides": [24, 8, 8, 1], "builds": ["2b888cdb", "e9f0541c"], "note": "pins a thing",
               "partners_alike": "on purpose", "op": "forward"}
    case = case_of(**written)
    assert case.offsets == (5, 3, 1) and case.offset_of("cos") == 3 and case.strides_of("sin") == (24, 8, 8, 1)
    assert case.builds == ("e9f0541c", "2b888cdb")                       # in the table's order
    for variant in (case, case_of(partial_slice=[4, 12, 99]), case_of(null=["partial_slice"], partial_slice=None),
                    case_of(partial_slice=[]), case_of(partial_slice=[4])):
        again = parse_document([case_to_dict(variant)], "t.yaml", ROOT)[0]
        assert dataclasses.replace(again, source="t.yaml") == dataclasses.replace(variant, source="t.yaml")


def test_a_stored_definition_names_the_layout_the_table_shows():
    """A decode table [4, 1, 1, D] of dy [4, 1, 8, D] is both B11D and BS1D (S = 1): the definition a results file
    keeps says B11D, as the table and the case file do (it said BS1D, the first pattern deriving the shape)."""
    for written, stored in (("B11D", "B11D"), ("BS1D", "B11D"), ("1S1D", None), ("BSND", "B1ND")):
        case = case_of(shape=[4, 1, 8, 16], broadcast=written, partial_slice=None)
        assert case_to_dict(case).get("broadcast") == stored, written         # 1S1D: the default cos shape
        again = parse_document([case_to_dict(case)], "t.yaml", ROOT)[0]
        assert again.cos_shape == case.cos_shape


def test_slice_lists_are_passed_as_written_and_act_as_the_tiling_reads_them():
    longer, empty, one = case_of(partial_slice=[4, 12, 99]), case_of(partial_slice=[]), case_of(partial_slice=[4])
    null = parse_document([{"name": "n", "shape": [2, 3, 2, 16], "null": ["partial_slice"]}], "t.yaml", ROOT)[0]
    assert (longer.partial_slice, longer.slice_argument()) == ((4, 12), (4, 12, 99))
    assert (null.partial_slice, null.slice_argument()) == ((0, 0), None)
    assert (empty.slice_argument(), one.slice_argument()) == ((), (4,))
    assert case_of().slice_argument() == (4, 12)


@pytest.mark.parametrize("keys, field, fragment", [
    ({"dy_offset": -1}, "dy_offset", "expected an integer 0 <= offset"),
    ({"cos_offset": 2**40}, "cos_offset", "expected an integer 0 <= offset"),
    ({"cos_strides": [1, 2]}, "cos_strides", "expected 4 strides (one per axis of its shape)"),
    ({"sin_strides": "x"}, "sin_strides", "expected a list of non-negative int64 integers"),
    ({"cos_strides": [24, 4, 8, 1]}, "cos_strides", "put two elements of the [1, 3, 1, 8] view on one storage"),
    ({"dy_strides": [96, 32, 16, 2]}, "dy_strides", "put two elements of the [2, 3, 2, 16] view on one storage"),
    ({"dy_strides": [0, 16, 16, 1]}, "dy_strides", "dy is written in place"),
    ({"cos_strides": [0, 8, 8, 2]}, "cos_strides", "a stride of 0, torch's expand, is the one overlap taken"),
    ({"partial_slice": list(range(17))}, "partial_slice", "a list of 0 to 16 integers"),
    ({"null": ["partial_slice"]}, "partial_slice", "holds no values: drop one of them"),
    ({"builds": ["abc"]}, "builds", "unknown build 'abc'"),
    ({"builds": []}, "builds", "expected a list of builds"),
    ({"note": "two\nlines"}, "note", "one-line reason"),
])
def test_a_bad_value_of_a_new_key_is_one_line_naming_the_field(keys, field, fragment):
    with pytest.raises(PrmgError) as caught:
        case_of(**keys)
    assert caught.value.field == field and fragment in str(caught.value) and "\n" not in str(caught.value)


def test_a_suite_without_chip_or_build_sensitive_cases_shows_their_classes_missing():
    """The forward's A2/A3 rules and the grad's builds are classes: a forward case whose cos N is x's covers
    'chip: A2/A3: cos N != 1' (an A2/A3 run refuses it), an empty cos 'build: another status on base', an empty
    slice past D 'build: another status on e9f0541c'; a suite of plain cases lacks them, which its coverage shows.
    A plain empty slice is no class of build: it succeeds on every build (base's kernel takes its empty key)."""
    from prmg_cli.cases.coverage import evaluate

    def covered(cases) -> set[str]:
        return {item.regime.key for report in evaluate(cases) for item in report.classes if item.count
                and item.regime.axis in ("chip", "build")}

    plain = [case_of(), case_of(op="forward", broadcast="B11D")]
    assert covered(plain) == set()
    assert covered([case_of(partial_slice=[4, 4])]) == set()
    sensitive = [case_of(op="forward", broadcast="BSND"), case_of(broadcast=None, cos_shape=[0, 1, 1, 8]),
                 case_of(partial_slice=[20, 20], expect={"error": 561002})]
    assert covered(sensitive) == {"chip: A2/A3: cos N != 1", "build: another status on base",
                                  "build: another status on e9f0541c"}
    missing = {item.regime.key for report in evaluate(plain) for item in report.classes if not item.count}
    assert {"chip: A2/A3: L < 0", "chip: A2/A3: cos S", "build: another status on base"} <= missing


@pytest.mark.verdict
def test_a_one_value_slice_list_is_read_as_nnopbase_lays_out_what_follows_it(emulator, emulated):
    """A partialSlice of one value v: the 950's tilings read values[1] past the list's end, where nnopbase lays the ref
    output's AnchorInstanceInfo {0, 1} (opbase indv_compute_node_info.cpp), so as [v, 2^32): the slice range's 561002
    on every build, but e9f0541c's no-op of an empty cos comes first (a success), in the model and the emulator alike.
    The shipped cases pin 561002, which covers the rule's phase class; ``error: any`` covers it no more (main kept the
    rule undefined: any error expected, the emulator refusing every one-value list, e9f0541c's no-op included)."""
    one = case_of(partial_slice=[4], expect={"error": 561002})
    found = violation_details(one, TODAY)[0]
    assert (found.code, found.rule) == (561002, "slice list of 1 value")
    assert "4294967296 exceeds D = 16" in found.message
    assert facts(one).first_rules == ("slice list of 1 value",)
    assert facts(dataclasses.replace(one, expect=Expect("any"))).first_rules == ()
    empty_cos = case_of(partial_slice=[4], cos_shape=[1, 2, 1, 0], broadcast=None)
    zero = case_of(partial_slice=[0])                   # [0, 2^32): refused, not the empty slice [0, 0) (a no-op)
    builds = {"base": 561002, "e9f0541c": 0, "2b888cdb": 561002}
    assert {build: expected_status(empty_cos, TODAY, build=build) for build in builds} == builds
    for build, status in builds.items():
        emulated("", build)
        with AclSession(emulator, 0) as session:
            assert session.launch(empty_cos, make_inputs(empty_cos)).status == status, build
            assert session.launch(zero, make_inputs(zero)).status == expected_status(zero, TODAY) == 561002, build
    files = [ROOT / "cases" / name for name in ("negative.yaml", "forward.yaml", "cover.yaml")]
    shipped = [case for case in load_cases(files) if case.slice_argument() is not None
               and len(case.slice_argument()) == 1]
    assert len(shipped) == 4 and all(case.expect == Expect(561002) for case in shipped)


def test_an_empty_dy_beside_a_strided_table_is_refused_at_the_launch(emulator):
    """nnopbase's launch maps the inputs (``NnopbaseExecutorUpdateAddr``, which refuses a non-contiguous input of an op
    without AutoContiguous) before it skips an empty output's kernel (``NnopbaseSkipKernelLaunch``): an empty dy beside
    a strided cos is 561000 at the launch, as the emulator answers; the model said success (an empty dy ended its
    checks). The forward copies the table (AutoContiguous) and succeeds."""
    case = case_of(shape=[2, 0, 2, 16], broadcast=None, cos_shape=[1, 3, 1, 8], cos_strides=[48, 16, 16, 1],
                   expect={"error": 561000, "phase": "launch"})
    forward = dataclasses.replace(case, op="forward", expect=Expect())
    assert (expected_status(case, TODAY), expected_phase(case, TODAY)) == (561000, "launch")
    assert expected_status(forward, TODAY) == 0
    with AclSession(emulator, 0) as session:
        refused = session.launch(case, make_inputs(case))
        assert refused.status == 561000 and not refused.failed_call.endswith("GetWorkspaceSize"), refused
        assert session.launch(forward, make_inputs(forward)).status == 0


def test_strides_keep_the_elements_apart_or_are_refused():
    """An overlap is found however the axes are ordered; an interleaving that keeps them apart is taken."""
    from prmg_cli.cases.fields import overlapping

    assert not overlapping((3, 2), (2, 3)) and overlapping((3, 2), (2, 2))      # offsets 0 3 2 5 4 7; 0 2 2 4 4 6
    assert overlapping((4,), (0,)) and not overlapping((1, 4), (0, 1)) and not overlapping((0, 4), (0, 0))
    assert not overlapping((1, 1, 4, 8), (32, 32, 1, 4)) and overlapping((1, 2, 1, 8), (16, 8, 8, 2))
    assert case_of(op="forward", sin_strides=[48, 16, 16, 2]).strides_of("sin") == (48, 16, 16, 2)


@pytest.mark.parametrize("op", ["grad", "forward"])
def test_slice_lists_on_each_chip(op):
    """NULL: the op definition's default {0, 0} (a no-op) everywhere; no value: nnopbase's 561103 first; one value:
    read past its end on the 950 (refused by the model), refused on A2/A3; three values: the first two on the 950,
    refused on A2/A3 (the forward's membase tiling: a list of 2 values only)."""
    cases = {"null": case_of(op=op, null=["partial_slice"], partial_slice=None),
             "empty": case_of(op=op, partial_slice=[]), "one": case_of(op=op, partial_slice=[4]),
             "three": case_of(op=op, partial_slice=[4, 12, 7])}
    assert {name: expected_status(case, TODAY) for name, case in cases.items()} == \
        {"null": 0, "empty": 561103, "one": 561002, "three": 0}
    assert expected_status(dataclasses.replace(cases["empty"], dtype="int8"), TODAY) == 561103   # before the dtypes
    if op == "forward":
        assert {name: expected_status(case, TODAY, "ascend910b") for name, case in cases.items()} == \
            {"null": 0, "empty": 561103, "one": 561002, "three": 561002}


def test_strided_tables_are_refused_at_the_grads_launch_and_taken_by_the_forward():
    for tensor in ("cos", "sin"):
        strided = case_of(**{f"{tensor}_strides": [48, 16, 16, 1]})
        assert (expected_status(strided, TODAY), expected_phase(strided, TODAY)) == (561000, "launch")
        assert violation_details(strided, TODAY)[0].rule == f"{tensor} not contiguous"
        assert expected_status(dataclasses.replace(strided, op="forward"), TODAY) == 0
    at_offset = case_of(dy_offset=7, cos_offset=3, sin_offset=1)        # contiguous views: ordinary inputs
    assert expected_status(at_offset, TODAY) == 0
    assert facts(at_offset).offsets == {"dy", "cos", "sin"}


def test_the_forward_on_a2_a3_follows_its_membase_tiling():
    rules = lambda case: [v.rule for v in violation_details(case, TODAY, "ascend910_93")]  # noqa: E731
    assert rules(case_of(op="forward", broadcast="B11D")) == []
    assert rules(case_of(op="forward")) == ["A2/A3: cos B != B"]                      # 1S1D: cos B 1, x's B 2
    assert rules(case_of(op="forward", broadcast="BSND")) == ["A2/A3: cos N != 1"]
    assert rules(case_of(op="forward", broadcast="B11D", rotary_mode=2**32 + 1, expect={"error": "any"})) == \
        ["A2/A3: mode not 1"]                                                           # read as int64: refused
    assert expected_status(case_of(op="forward", rotary_mode=2**32 + 1, expect={"error": "any"}), TODAY) == 0
    past_d = case_of(op="forward", partial_slice=[20, 20], cos_shape=[2, 1, 1, 2], broadcast=None,
                     expect={"error": "any"})
    assert (expected_status(past_d, TODAY), expected_status(past_d, TODAY, "ascend910b")) == (561002, 0)


def test_builds_follow_the_grads_no_op_history():
    """Base (4007a71b, read in upstream's tiling): an empty slice skips only the slice-length rules (L == cos D, L
    even), meets the rest, then succeeds; e9f0541c returns before the range and the later rules; 2b888cdb checks
    the range first."""
    past_d = case_of(partial_slice=[20, 20], broadcast=None, cos_shape=[1, 1, 1, 2], expect={"error": 561002})
    cos_empty = case_of(broadcast=None, cos_shape=[0, 1, 1, 8])
    builds = ("base", "e9f0541c", "2b888cdb")
    assert [expected_status(past_d, TODAY, build=b) for b in builds] == [561002, 0, 561002]
    assert [expected_status(case_of(partial_slice=[4, 4]), TODAY, build=b) for b in builds] == [0, 0, 0]
    wide = case_of(shape=[1, 1, 2, 2048], partial_slice=[0, 0], broadcast=None, cos_shape=[1, 1, 1, 2])
    bad_layout = case_of(shape=[2, 2, 2, 16], partial_slice=[7, 7], broadcast=None, cos_shape=[3, 1, 1, 2])
    for later_rule in (wide, bad_layout):                            # D <= 1024 and the layout: base checks both
        assert [expected_status(later_rule, TODAY, build=b) for b in builds] == [561002, 0, 0]
    assert holding_builds(past_d, TODAY) == ("base", "2b888cdb")
    assert holding_builds(cos_empty, TODAY) == ("e9f0541c", "2b888cdb")
    shipped = {case.name: case.builds for case in load_cases([ROOT / "cases" / "negative.yaml"])}
    assert shipped["neg.empty_slice_past_D"] == ("base", "2b888cdb")
    assert shipped["neg.empty_slice_D_2048_ok"] == shipped["neg.cos_empty_ok"] == ("e9f0541c", "2b888cdb")


def test_every_shipped_case_names_the_builds_its_expectation_holds_for():
    """Every shipped case whose expectation the model holds for some builds only names them (a plain failure on an
    older toolkit otherwise), and no other case does: an empty slice that meets every other rule succeeds on every
    build (base's kernel takes its empty tiling key), an empty cos or a slice past D does not."""
    from prmg_cli.cases.gencase import case_from_options
    from prmg_cli.ops.targets import BUILDS

    shipped = load_cases([ROOT / "cases"])
    wrong = [f"{case.name}: builds {list(case.builds)}, the model holds {list(holding)}" for case in shipped
             for holding in [holding_builds(case, TODAY)] if holding and (case.builds or tuple(BUILDS)) != holding]
    assert not wrong
    named = {case.name for case in shipped if case.builds}
    assert {"neg.cos_empty_ok", "neg.empty_slice_past_D", "neg.empty_slice_D_2048_ok"} <= named
    assert not {"smoke.empty_slice", "edge.empty_slice_at_D", "e2e_iprmb_noop_default_slice"} & named
    assert "builds" not in case_from_options(shape=[1, 1, 2, 8], partial_slice=[4, 8])


def test_the_runner_lays_a_view_at_its_offset_and_watches_the_storage_before_it():
    case = case_of(dy_offset=5, cos_offset=3, sin_strides=[48, 16, 8, 1])
    dy = acl._layout(case, "dy")
    assert (dy.offset, dy.storage_elements, dy.plain) == (5, 5 + 192, False)
    assert acl._layout(case, "sin").storage_elements == 1 + 2 * 16 + 7 and not acl._layout(case, "cos").plain
    values = np.arange(192, dtype=np.float32).reshape(2, 3, 2, 16)
    storage = acl._to_storage(values, dy)
    assert (storage[:5].view(np.uint32) == 0xA5A5A5A5).all() and (storage[5:] == values.ravel()).all()
    assert np.array_equal(acl._from_storage(storage, dy), values)
    after = storage.copy()
    after[2] = 0
    assert acl._outside_view("dy", storage, after, dy) == \
        ["dy storage changed before its offset (5 elements) at element 2, first of 1"]
    assert acl._outside_view("dy", storage, storage, dy) == []


def test_a_stride_on_an_axis_of_one_element_may_be_any(emulator):
    """An axis of one element never steps, so its stride may be any the format takes: a run with cos_strides
    [2**62, 1, 1, 1] (cos [1, 1, 1, L]) ended in exit 3 and a traceback (numpy's view took 2**62 times the item's
    bytes, past int64: fuzzing the run's case fields, session 9); it is laid out as the contiguous table it is, in
    the forward (which takes strided views) too, and judged."""
    from prmg_cli.device.execute import RunSettings, run_case

    far = 2 ** 62
    cases = [case_of(cos_strides=[far, 8, 8, 1]),
             case_of(op="forward", shape=[1, 3, 2, 16], dy_strides=[far, 32, 16, 1])]
    layout = acl._layout(cases[1], "dy")
    values = np.arange(96, dtype=np.float32).reshape(layout.view_dims)
    assert np.array_equal(acl._from_storage(acl._to_storage(values, layout), layout), values)
    with AclSession(emulator, 0) as session:
        for case in cases:
            result = run_case(session, case, RunSettings(toolkit=emulator))[0]
            assert result.status == "passed", result.message


@pytest.mark.verdict
def test_a_kernel_writing_only_before_the_offset_breaks_the_contract(emulator, monkeypatch):
    """A kernel computing the view right that also writes the 4 bytes before it (the storage's element 4 of the 5
    before dy's offset: write_beyond_guard at dy:-4) fails by the contract alone; the same write with the view at
    offset 0 lands in the guard zone, and a correct kernel passes."""
    from prmg_cli.device.execute import RunSettings, run_case

    monkeypatch.setenv("PRMG_EMU_BEYOND_GUARD", "dy:-4")
    settings = RunSettings(toolkit=emulator)
    runs = [(5, "write_beyond_guard", "dy storage changed before its offset (5 elements) at element 4, first of 1"),
            (0, "write_beyond_guard", "guard zone before dy changed at byte -4"), (5, "", "")]
    with AclSession(emulator, 0) as session:
        for offset, fault, said in runs:
            monkeypatch.setenv("PRMG_EMU_FAULT", fault)
            result = run_case(session, case_of(dy_offset=offset), settings)[0]
            assert (result.status, said in result.message) == ("failed" if fault else "passed", True), result.message


def test_a_check_launches_every_tensor_contiguous_at_offset_0():
    case = dataclasses.replace(case_of(dy_offset=5, cos_strides=[48, 16, 16, 1]), **CONTIGUOUS_STORAGE)
    assert all(acl._layout(case, tensor).plain for tensor in ("dy", "cos", "sin"))


@pytest.mark.verdict
def test_a_partner_swap_hidden_by_the_tables_is_a_warning(emulator):
    """Sin alike at both lanes of every pair (a RoPE table, or explicit values alike) passes with the warning, which
    --strict fails, down to a slice of one pair; tables that differ between partners, or a case that says why it
    needs them alike, do not."""
    rope = {"cos": {"rope": {"base": 10000}}, "sin": {"rope": {"base": 10000}}}
    cases = {"rope": case_of(inputs=rope), "drawn": case_of(),
             "said": case_of(inputs=rope, partners_alike="a real table on purpose"),
             "one_pair": case_of(inputs=rope, partial_slice=[4, 6])}
    from prmg_cli.device.execute import RunSettings, run_case

    with AclSession(emulator, 0) as session:
        warnings = {}
        for name, case in cases.items():
            inputs = make_inputs(case)
            verdict = judge(case, inputs, session.launch(case, inputs))
            assert verdict.status == "passed"
            warnings[name] = verdict.warnings
        strict = run_case(session, cases["rope"], RunSettings(toolkit=emulator, strict=True))[0]
    assert warnings == {"rope": [PARTNERS_ALIKE_WARNING], "drawn": [], "said": [], "one_pair": [PARTNERS_ALIKE_WARNING]}
    assert strict.status == "failed" and strict.message == f"--strict: {PARTNERS_ALIKE_WARNING}"
    assert [facts(case).partners_differ for case in cases.values()] == [False, True, False, False]


@pytest.fixture
def emulated(monkeypatch):
    """Set the chip and the build the emulator plays (it reads them at every call) for one test."""
    def play(soc: str = "", build: str = "") -> None:
        monkeypatch.setenv("PRMG_EMU_SOC", soc)
        monkeypatch.setenv("PRMG_EMU_BUILD", build)
    return play


@pytest.mark.parametrize("soc, build", [("Ascend950PR_9589", "2b888cdb"), ("Ascend910B2", "2b888cdb"),
                                        ("Ascend910_9391", ""), ("Ascend910_9599", "e9f0541c"),
                                        ("Ascend960DT_0001", "base"), ("Ascend910B", "")])
def test_the_emulator_and_the_model_agree_on_every_chip_and_build(emulator, emulated, soc, build):
    """Every shipped negative case and forward case, and the slice lists, launched on the emulator playing ``soc``
    and ``build``: the first phase returns what the constraint model predicts there (561003 for an operator the
    chip lacks)."""
    from prmg_cli.ops.targets import soc_family

    emulated(soc, build)
    cases = load_cases([ROOT / "cases" / "negative.yaml", ROOT / "cases" / "forward.yaml"])
    with AclSession(emulator, 0) as session:
        for case in cases:
            predicted = expected_status(case, TODAY, soc_family(soc), build or None)
            outcome = session.launch(case, make_inputs(case))
            assert outcome.status == predicted, (case.name, outcome.error_message)


@pytest.mark.verdict
def test_a_case_is_judged_by_its_chips_rules_and_an_operator_the_chip_lacks_is_an_error(emulator, emulated):
    from prmg_cli.device.execute import RunSettings, run_case
    from prmg_cli.ops.targets import Target

    settings = RunSettings(toolkit=emulator)
    forward, grad = case_of(op="forward"), case_of()                 # 1S1D: cos B 1 where x's is 2
    emulated("Ascend910_9391")
    with AclSession(emulator, 0) as session:
        a3 = Target("Ascend910_9391")
        result, fit = run_case(session, forward, settings, a3)
        assert (result.status, result.expect, fit) == ("passed", "error 561002", True)
        assert result.details[0].startswith("on ascend910_93 the operator's rules give 561002")
        assert "expect" not in result.definition                      # the case as written: expect pass
        result, _ = run_case(session, grad, settings, a3)
        assert result.status == "error" and "the device is an Ascend910_9391 (ascend910_93)" in result.message
        emulated("Ascend950PR_9589")                                  # the chip claimed is not the one played
        result, _ = run_case(session, forward, settings, a3)
        assert result.status == "failed" and result.message.startswith("on ascend910_93 the operator's rules")


def test_a_build_dependent_expectation_is_reported_as_such(emulator, emulated, monkeypatch):
    """On a toolkit of unknown build (every real one today), a case refused or accepted as another build does is
    xfailed, saying that its expectation depends on the build; once the version maps to a build the case holds
    for (a ``targets.RELEASES`` entry), the same is a plain failure."""
    from prmg_cli.ops import targets
    from prmg_cli.device.execute import RunSettings, run_case

    case = next(case for case in load_cases([ROOT / "cases" / "negative.yaml"])
                if case.name == "neg.empty_slice_past_D")
    emulated(build="e9f0541c")                                        # the no-op before the range check
    settings = RunSettings(toolkit=emulator)
    with AclSession(emulator, 0) as session:
        unknown = targets.Target("Ascend950PR_9589", "8.5.0-emulator")
        result, _ = run_case(session, case, settings, unknown)
        assert result.status == "xfailed" and result.message.startswith(
            "expectation depends on the toolkit build: it holds for builds base, 2b888cdb; this toolkit states "
            "version 8.5.0-emulator (build unknown): expected 561002")
        monkeypatch.setitem(targets.RELEASES, "8.5.0-emulator", "2b888cdb")
        result, _ = run_case(session, case, settings, unknown)
        assert result.status == "failed" and result.message.startswith("expected 561002")
        emulated()                                                     # the build the case holds for
        assert run_case(session, case, settings, unknown)[0].status == "passed"


@pytest.mark.verdict
def test_a_chip_whose_rules_differ_judges_the_case_without_the_950s_known_defect():
    """On an A3 the forward's 1S1D case is refused (561002) where the 950 runs it: the A3 judges it by its own rules,
    and a known defect of the 950's tiling no longer turns its failure into an xfail; on the 950 the case is as
    written."""
    from prmg_cli.cases.loader import KnownDefect
    from prmg_cli.ops.constraints import on_chip

    case = dataclasses.replace(case_of(op="forward"), known_defect=KnownDefect("950 tiling", bounds=(("elements", 1),)))
    judged, note = on_chip(case, TODAY, "ascend910_93")
    assert (judged.expect, judged.known_defect) == (Expect(561002, "workspace"), None)
    assert note.startswith("on ascend910_93 the operator's rules give 561002")
    assert on_chip(case, TODAY, "ascend950") == (case, "")


@pytest.mark.verdict
def test_only_a_status_failure_on_a_build_the_case_does_not_hold_for_is_build_dependent(monkeypatch):
    """A case whose expectation holds for some builds: on a toolkit of unknown build, a failure by its status alone is
    an xfail saying so; one by its status and anything else (a contract breach), or on a build the case names, stays
    a failure."""
    from prmg_cli.device.execute import build_dependent
    from prmg_cli.ops import targets
    from prmg_cli.ops.targets import Target
    from prmg_cli.results import CaseResult

    case = dataclasses.replace(case_of(), builds=("base", "2b888cdb"))
    failed = CaseResult("c", "failed", message="expected 561002")
    monkeypatch.setitem(targets.RELEASES, "9.0.0", "2b888cdb")
    unknown, named = Target("Ascend950PR_9589", "8.5.0-emulator"), Target("Ascend950PR_9589", "9.0.0")
    assert build_dependent(case, failed, {"status"}, unknown).status == "xfailed"
    assert build_dependent(case, failed, {"status", "contract"}, unknown).status == "failed"
    assert build_dependent(case, failed, {"status"}, named).status == "failed"
    assert build_dependent(dataclasses.replace(case, builds=()), failed, {"status"}, unknown).status == "failed"
    # the outcome must be one some build returns, its status and its phase: base refuses an empty cos in the first
    # phase (neg.cos_empty_ok holds for e9f0541c and 2b888cdb, which run it as a no-op); no build refuses it later
    from prmg_cli.cases.loader import load_cases
    from prmg_cli.device.acl import Outcome
    from prmg_cli.ops import GRAD

    empty = next(case for case in load_cases([ROOT / "cases" / "negative.yaml"]) if case.name == "neg.cos_empty_ok")
    for call, status in ((GRAD.get_workspace, "xfailed"), (GRAD.launch, "failed")):
        outcome = Outcome(status=561002, failed_call=call)
        assert build_dependent(empty, failed, {"status"}, unknown, outcome).status == status, call


@pytest.mark.verdict
def test_graph_mode_holds_a_build_dependent_case_to_graph_modes_own_table():
    """Graph mode's answer to a case whose expectation holds for some builds is explained by a build only when it is
    what graph mode gives on that build, in GE's status and phase: the e9f0541c build's no-op (success) and the base
    build's compile-time refusal are; a refusal of GE's run phase (GE or the device failed), an aclnn status or
    another GE status at compile is no build's and stays a failure (main judged each of them a build's xfail)."""
    from prmg_cli.device.acl import Outcome
    from prmg_cli.device.execute import build_dependent
    from prmg_cli.ops.constraints import build_outcomes
    from prmg_cli.ops.targets import Target
    from prmg_cli.results import CaseResult
    from prmg_cli.status import GE_FAILED, TILING_ERROR

    case = next(case for case in load_cases([ROOT / "cases" / "negative.yaml"])
                if case.name == "neg.empty_slice_past_D")
    assert build_outcomes(case, TODAY, graph=True) == {(0, None), (GE_COMPILE_REFUSED, "compile")}
    assert build_outcomes(case, TODAY) == {(0, None), (TILING_ERROR, "workspace")}
    failed, unknown = CaseResult(case.name, "failed", message="expected"), Target("Ascend950PR_9589", "8.5.0-emulator")

    def judged(status, phase=""):
        return build_dependent(case, failed, {"status"}, unknown, Outcome(status, path="geir", phase=phase), TODAY)

    assert [judged(*got).status for got in [(0,), (GE_COMPILE_REFUSED, "compile")]] == ["xfailed"] * 2
    assert [judged(*got).status for got in [(GE_COMPILE_REFUSED, "run"), (GE_COMPILE_REFUSED, "build"),
                                            (TILING_ERROR, "compile"), (GE_FAILED, "compile")]] == ["failed"] * 4
    aclnn = build_dependent(case, failed, {"status"}, unknown, Outcome(GE_FAILED, "aclnnInplacePartialRotaryMulGrad"
                                                                        "GetWorkspaceSize"), TODAY)
    assert aclnn.status == "failed"


def test_chips_are_filed_as_opbase_files_their_kernels():
    """opbase's ``OpKernelLib::GetSocPath``: the whole name "Ascend910B" is an A1 chip (ascend910/), which neither op
    definition lists, not an A2 Ascend910B1..B4 (a forward run there stopped nowhere and was judged by the A2 rules);
    "Ascend910_95..." is the 950 under its other name (it stopped as no chip prmg knew). The emulator agrees above."""
    from prmg_cli.ops.constraints import check_chip
    from prmg_cli.ops.targets import soc_family

    names = ("Ascend910B", "Ascend910B2", "Ascend910B4-1", "Ascend910_9599", "Ascend910_9391", "Ascend910ProB")
    assert [soc_family(name) for name in names] == ["ascend910", "ascend910b", "ascend910b", "ascend950",
                                                    "ascend910_93", None]
    with pytest.raises(PrmgError, match=r"^the device is an Ascend910B \(ascend910\): InplacePartialRotaryMul's op"):
        check_chip([case_of(op="forward")], "Ascend910B")
    check_chip([case_of(), case_of(op="forward")], "Ascend910_9599")


def test_a_run_on_a_chip_without_the_grad_stops_in_one_line():
    from conftest import prmg_forked

    result = prmg_forked("run", str(ROOT / "cases" / "worked_example.yaml"), "--runner", "emulator",
                         env={"PRMG_EMU_SOC": "Ascend910B2"})
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == ("prmg: error: the device is an Ascend910B2 (ascend910b): InplacePartialRotaryMulGrad's "
                             "op definition lists ascend950, ascend960dt only, so its 1 case cannot run here (run them "
                             "on one of those chips, or select other operators' cases)\n")


@pytest.mark.parametrize("fault, caught", [
    ("own_sin", {"hd192_bf16", "partial_rotary_glm_bf16_fp32", "partial_rotary_phi_fp16_fp32",
                 "inplace_offset_view_bf16", "dsv4_q_rope_tail_bf16",
                 "dsv4_kv_rope_tail_bf16", "hf_decode_q_transposed_s1_bf16"}),   # the tables that differ between
                                                                                      # partners, and only they
    ("ignore_offset", {"inplace_offset_view_bf16", "inplace_offset_view_decode_fp16"}),
])
def test_users_cases_catch_the_failure_classes_they_stand_for(emulator, monkeypatch, fault, caught):
    """A grad using each element's own sin passes every RoPE-table case of users.yaml (a partner swap hides there:
    the bug of the report) and fails each case whose tables differ between partners; a kernel ignoring the
    storage offset fails the in-place cases on offset views."""
    from prmg_cli.device.execute import RunSettings, run_case

    monkeypatch.setenv("PRMG_EMU_FAULT", fault)
    settings = RunSettings(toolkit=emulator)
    with AclSession(emulator, 0) as session:
        failed = {case.name.split(".", 1)[1] for case in load_cases([ROOT / "cases" / "users.yaml"])
                  if run_case(session, case, settings)[0].status == "failed"}
    assert failed == caught


def test_the_a2_decode_kernel_is_chosen_by_the_slice_length_not_d(emulator, emulated, monkeypatch):
    """The A2/A3 membase tiling's decode kernel takes a call by its slice's length L (577814407's CheckInput:
    ``xdim3_ = headDim_;``, end - start; CalTilingData: ``!isAlign_`` when L is not whole 32-byte blocks and
    ``xdim3_ > REPEAT_FP32``): a rope tail of D = 128 or 512 takes it, a slice of 8 float16 lanes of a D of 16 does
    not (prmg read x's D for both before), and the emulator's fwd_membase_repeat_u8 acts exactly there."""
    from prmg_cli.device.execute import RunSettings, run_case
    from prmg_cli.ops.forward import membase_decode_heads
    from prmg_cli.ops.targets import Target

    tail = case_of(op="forward", shape=[2, 1, 257, 512], broadcast="B11D", partial_slice=[480, 512], dtype="bfloat16",
                   cos_dtype="bfloat16")
    assert membase_decode_heads(tail) == 257 and membase_decode_heads(dataclasses.replace(tail, cos_dtype="float32",
                                                                                         sin_dtype="float32")) == 0
    dsv4 = next(case for case in load_cases([ROOT / "cases" / "users.yaml"])
                if case.name == "users.dsv4_q_rope_tail_bf16")
    assert membase_decode_heads(dataclasses.replace(dsv4, op="forward")) == 8    # 8 heads, L = 64 of D = 512
    narrow = case_of(op="forward", shape=[2, 1, 257, 16], broadcast="B11D", partial_slice=[4, 12], dtype="float16",
                     cos_dtype="float16")
    assert membase_decode_heads(narrow) == 0
    assert membase_decode_heads(dataclasses.replace(narrow, dtype="float32", cos_dtype="float32",
                                                    sin_dtype="float32")) == 257           # 8 float32 lanes: 32 bytes
    assert membase_decode_heads(case_of(op="forward", shape=[2, 1, 257, 128], broadcast="B11D",
                                        partial_slice=[0, 80], dtype="float16",
                                        cos_dtype="float16")) == 0                          # L > 64
    shipped = next(case for case in load_cases([ROOT / "cases" / "forward.yaml"])
                   if case.name == "fwd.decode_257_heads_fp16")
    assert shipped.shape[-1] > 64 and membase_decode_heads(shipped) == 257
    emulated("Ascend910B2")
    monkeypatch.setenv("PRMG_EMU_FAULT", "fwd_membase_repeat_u8")
    with AclSession(emulator, 0) as session:
        for case, acts in ((shipped, True), (narrow, False)):
            result = run_case(session, case, RunSettings(toolkit=emulator), Target("Ascend910B2"))[0]
            assert result.status == ("failed" if acts else "passed"), (case.name, result.message)


@pytest.mark.parametrize("op, keys, rule", [
    ("grad", {"shape": [2, 0, 2, 16], "partial_slice": [-2, 6]}, "start < 0"),
    ("forward", {"shape": [2, 0, 2, 16]}, "dim <= 0"),
    ("grad", {"shape": [2, 0, 2, 16]}, None),                      # the tiling's no-op: GE or not, a success
    ("forward", {"shape": [2, 0, 2, 16], "partial_slice": [4, 4]}, None),
])
def test_graph_mode_has_no_certain_answer_where_the_tiling_refuses_an_empty_in_place_tensor(op, keys, rule):
    """nnopbase runs no tiling for an in-place tensor without elements, so the aclnn path succeeds; upstream's tiling
    refuses such a call when it runs (its 2b888cdb test: a [-1, 0) slice on a dy of B = 0; the forward's dims > 0),
    and whether GE runs it for a graph is unknown here: such a pass case has no graph answer to expect, and says
    which rule; where the tiling takes it too (its no-op), graph mode expects the success."""
    from prmg_cli.ops.constraints import graph_case, violation_details

    case = case_of(op=op, broadcast=None, cos_shape=[1, 1, 1, 8], **keys)
    assert case.expect.success and not violation_details(case, TODAY)       # the aclnn path: a success
    answer = graph_case(case, TODAY)
    if rule is None:
        assert answer.expect.success
    else:
        assert "no certain answer" in answer and f"'{rule}'" in answer and "only a real GE can tell" in answer


@pytest.mark.parametrize("cos_d, expect", [(16, Expect()), (8, Expect(GE_COMPILE_REFUSED, "compile"))])
def test_graph_mode_reads_an_empty_slice_list_as_each_tiling_does(cos_d, expect):
    """No nnopbase check sees a graph's partial_slice attribute, so graph mode answers a list of none (561103 on the
    aclnn path) as the tiling reads it (ops-transformer 577814407): the grad's reads values[0] and [1] on past the
    list's end into what GE's ComputeNodeInfo holds after the attributes, the ref output's AnchorInstanceInfo
    (hicann/ge 56f8e1bb9), [2^32, 0), refused by the slice range (start > end) at compile; the forward's
    (GetShapeAttrsInfo, and the A2/A3 membase tiling) reads it as [0, D), judged from there: a success rotating all of
    D when cos's D is D, else the tiling's refusal of L != cos D. The list passed stays empty; a list of one value v
    is read as [v, 2^32) by both operators on both paths (nnopbase lays out the same AnchorInstanceInfo after the
    attributes), refused by the range (end > D) at compile, and held to the aclnn path's answer. The paths differ by
    design for a list of none only (``graph_reads_otherwise``)."""
    from prmg_cli.ops.constraints import graph_case, graph_reads_otherwise

    written = dict(partial_slice=[], cos_shape=[1, 3, 1, cos_d], broadcast=None, expect={"error": 561103})
    grad, forward = (graph_case(case_of(op=op, **written), TODAY) for op in ("grad", "forward"))
    assert (grad.expect, grad.partial_slice, grad.slice_argument()) == \
        (Expect(GE_COMPILE_REFUSED, "compile"), (1 << 32, 0), ())
    assert "past the end of a list of none" in grad.note and "[2^32, 0)" in grad.note
    assert (forward.expect, forward.partial_slice, forward.slice_argument()) == (expect, (0, 16), ())
    assert "[0, D)" in forward.note
    for op in ("grad", "forward"):
        one = case_of(op=op, partial_slice=[4], expect={"error": 561002})
        assert (graph_case(one, TODAY).expect, graph_case(one, TODAY).slice_argument()) == \
            (Expect(GE_COMPILE_REFUSED, "compile"), (4,))
        assert graph_reads_otherwise(case_of(op=op, **written)) and not graph_reads_otherwise(case_of(op=op))
        assert not graph_reads_otherwise(one)


@pytest.mark.parametrize("build, answer", [("2b888cdb", (GE_COMPILE_REFUSED, "compile")), ("e9f0541c", (0, None))])
def test_a_grad_graph_reads_a_short_list_as_ge_lays_it_out_judged_by_each_builds_rules(tmp_path, build, answer):
    """A grad graph whose partial_slice holds no value, with an empty cos and sin: its tiling reads [2^32, 0) (the
    ref output's AnchorInstanceInfo after the attributes), which 2b888cdb's slice range refuses first and e9f0541c's
    no-op (an empty cos) returns before: the model expects each build's answer (``build_outcomes``), and the twin,
    playing that build, gives it (it refused every list of none at compile whatever the build)."""
    from conftest import prmg_here
    from prmg_cli.ops.constraints import build_outcomes

    written = dict(partial_slice=[], cos_shape=[1, 2, 1, 0], broadcast=None, expect={"error": 561103})
    assert build_outcomes(case_of(**written), TODAY, graph=True) == {(GE_COMPILE_REFUSED, "compile"), (0, None)}
    path = tmp_path / "short.yaml"
    path.write_text("- {name: none, shape: [1, 2, 2, 8], cos_shape: [1, 2, 1, 0], partial_slice: [], "
                    "expect: {error: ACLNN_ERR_INNER_NULLPTR}}\n")
    result = prmg_here("run", path, "--runner", "emulator-geir", "--report", "json", env={"PRMG_EMU_BUILD": build})
    case = json.loads(result.stdout)["cases"][0]
    assert (case["error_code"], case["status"]) == (answer[0], "passed" if build == "2b888cdb" else "failed"), case
    assert (case["status"] == "passed") == (result.returncode == 0)


# Transposed and expanded views (issue 33, a ninth look): what real callers pass besides sliced rows. A BNSD caller
# hands the operator q.transpose(1, 2), a BSND view at permuted strides, and tables made with torch's expand (stride 0).
TRANSPOSED = [48, 8, 24, 1]                 # [2, 3, 2, 8] viewed from BNSD storage [2, 2, 3, 8]
VIEWS = {"shape": [2, 3, 2, 8], "partial_slice": [0, 8], "broadcast": None}


def test_expanded_tables_are_read_and_repeat_their_row_along_the_axis():
    """A stride of 0 on an axis of length > 1 is torch's expand: taken for cos and sin (each index along it reads one
    storage row, so the made inputs repeat index 0 there, and the storage holds that row once), refused for dy."""
    from prmg_cli.case import expanded_axes, storage_elements, transposed

    case = case_of(**VIEWS, op="forward", cos_shape=[2, 3, 1, 8], cos_strides=[0, 8, 8, 1], sin_strides=[0, 8, 0, 1])
    assert case.expanded_axes("cos") == (0,) and case.expanded_axes("sin") == (0,) and case.expanded_axes("dy") == ()
    assert storage_elements(case, "cos") == 24                  # one [3, 8] row per position, shared by both b
    inputs = make_inputs(case)
    for table in (inputs.cos, inputs.sin):
        assert np.array_equal(table[0], table[1]) and not np.array_equal(table[0, 0], table[0, 1])
    assert np.array_equal(make_inputs(case_of(**VIEWS, op="forward", cos_shape=[2, 3, 1, 8])).cos[0], inputs.cos[0])
    assert expanded_axes((2, 1, 4), (0, 0, 1)) == (0,) and expanded_axes((0, 2), (0, 0)) == ()
    assert transposed((2, 3, 2, 8), TRANSPOSED) and not transposed((2, 3, 2, 8), (64, 16, 8, 1))
    assert not transposed((1, 3, 1, 8), (1, 8, 99, 1)) and not transposed((2, 3, 1, 8), (0, 8, 8, 1))


@pytest.mark.verdict
def test_transposed_and_expanded_views_are_refused_at_the_grads_launch_and_taken_by_the_forward():
    """nnopbase's IsContiguousShape: a permuted view and a stride-0 axis of length > 1 are not contiguous, so the grad
    (no AutoContiguous) is refused at the launch (561000) and the forward (AutoContiguous) takes both."""
    views = {"dy": case_of(**VIEWS, cos_shape=[1, 3, 1, 8], dy_strides=TRANSPOSED),
             "cos": case_of(**VIEWS, cos_shape=[2, 3, 1, 8], cos_strides=[0, 8, 8, 1], sin_strides=[0, 8, 8, 1])}
    for tensor, case in views.items():
        assert (expected_status(case, TODAY), expected_phase(case, TODAY)) == (561000, "launch")
        assert violation_details(case, TODAY)[0].rule == f"{tensor} not contiguous"
        assert expected_status(dataclasses.replace(case, op="forward"), TODAY) == 0


@pytest.mark.verdict
def test_transposed_and_expanded_views_are_classes_of_the_forward():
    """Each is a storage class of the forward (whose AutoContiguous copies must walk the view's axes and repeat an
    expanded row); an expanded axis is no axis along which the tables vary."""
    from prmg_cli.ops.regimes import regimes

    transposed = facts(case_of(**VIEWS, op="forward", cos_shape=[1, 3, 1, 8], dy_strides=TRANSPOSED))
    expanded = facts(case_of(**VIEWS, op="forward", cos_shape=[2, 3, 1, 8], cos_strides=[0, 8, 8, 1]))
    assert (transposed.transposed, transposed.expanded, expanded.transposed, expanded.expanded) == \
        ({"dy"}, set(), set(), {"cos"})
    assert "B" not in expanded.varies and "B" in facts(case_of(**VIEWS, op="forward", cos_shape=[2, 3, 1, 8])).varies
    classes = {op: {regime.key: regime for regime in regimes(op)} for op in ("grad", "forward")}
    assert classes["forward"]["storage: x transposed"].test(transposed)
    assert not classes["forward"]["storage: x transposed"].test(expanded)
    assert classes["forward"]["storage: cos/sin expanded"].test(expanded)
    assert not classes["forward"]["storage: cos/sin expanded"].test(transposed)
    assert not {"storage: x transposed", "storage: cos/sin expanded"} & set(classes["grad"])



def test_the_decode_kernel_and_odd_d_classes_hold_exactly_the_calls_that_reach_them():
    """Session 17: the A2/A3 decode kernel's class (``forward.membase_decode_heads``, the emulator's ``wrapped_head``
    in Python) and the grad's odd-D class held more cases than reach them, unseen: a suite with no real decode call
    of 256+ heads (or no slice to an odd D's end) was called complete. Each condition at its edge."""
    from prmg_cli.ops.forward import membase_decode_heads
    from prmg_cli.ops.regimes import regimes

    decode = {"op": "forward", "shape": [2, 1, 257, 8], "broadcast": "B11D", "partial_slice": [0, 8]}
    heads = lambda **keys: membase_decode_heads(case_of(**{**decode, **keys}))
    assert heads() == 257 and heads(shape=[2, 257, 1, 8]) == 257 and heads(shape=[1, 1, 1228, 8]) == 1228
    assert heads(shape=[2, 2, 257, 8]) == 0                       # S and N both > 1
    assert heads(shape=[2, 1, 3, 64], partial_slice=[0, 64]) == 3
    assert heads(shape=[2, 1, 3, 512], partial_slice=[448, 512]) == 3     # a rope tail: its L decides, not D
    assert heads(shape=[2, 1, 3, 72], partial_slice=[0, 72]) == 0     # L > 64
    assert heads(shape=[2, 1, 3, 6], partial_slice=[0, 6]) == 0       # L of 24 bytes: no whole 32-byte blocks
    assert heads(dtype="float16", cos_dtype="float16") == 0
    assert heads(rotary_mode="half") == 0 and heads(broadcast="BSND") == 0 and heads(cos_dtype="float16") == 0
    assert heads(shape=[1, 1, 1229, 8]) == 0                      # ubFactor 0: the heads overflow the buffer
    odd = next(regime for regime in regimes("grad") if regime.key == "D: odd, the slice ending at D")
    assert odd.test(facts(case_of(shape=[1, 2, 2, 255], partial_slice=[1, 255], broadcast="1S1D")))
    assert not odd.test(facts(case_of(shape=[1, 2, 2, 255], partial_slice=[1, 253], broadcast="1S1D")))
    assert not any(regime.key.startswith("D: odd") for regime in regimes("forward"))      # the forward refuses it


# Every class issues 33 and 35 added is SEEN: a fault (or a stand-in) breaking exactly that class turns a shipped case
# of it red. A coverage class (op, key) names the cases covering it; the others (a label) name their cases by file and
# how they are judged (--standard mixed, graph mode through the aclnn+geir pair).
A2 = "Ascend910B2"
STANDIN = "9.9.9-standin"      # a toolkit version the test maps to build 2b888cdb (targets.RELEASES has none yet)
SLICE_LISTS = ("slice list: NULL", "slice list: 3+ values", "phase: slice list empty", "phase: slice list of 1 value")
A2_RULES = ("mode not 1", "slice list not 2", "L < 0", "D > 1024", "D odd", "L odd", "slice outside [0, D]",
            "L != cos D", "cos B != B", "cos N != 1", "cos S")
SEEN = [  # (classes, emulator environment, Target(chip, version), file, how the cases are run)
    ([("grad", f"storage: {t} at an offset") for t in ("dy", "cos", "sin")], {"PRMG_EMU_FAULT": "ignore_offset"},
     ("", ""), None, "aclnn"),
    ([("forward", f"storage: {t} at an offset") for t in ("dy", "cos", "sin")]
     + [("forward", "storage: cos/sin broadcast, at an offset")], {"PRMG_EMU_FAULT": "fwd_ignore_offset"}, ("", ""),
     None, "aclnn"),
    ([(op, "storage: an offset off the 32-byte block") for op in ("grad", "forward")],
     {"PRMG_EMU_FAULT": "offset_block_aligned"}, ("", ""), None, "aclnn"),
    ([("grad", "storage: cos/sin broadcast, at an offset")], {"PRMG_EMU_FAULT": "table_offset_ignored"}, ("", ""),
     None, "aclnn"),
    ([("grad", "phase: cos not contiguous"), ("grad", "phase: sin not contiguous")],
     {"PRMG_EMU_FAULT": "contiguous_tables"}, ("", ""), None, "aclnn"),
    ([("grad", "storage: a length-1 axis at another stride")], {"PRMG_EMU_FAULT": "length_one_strides"}, ("", ""),
     None, "aclnn"),
    ([("forward", "storage: cos/sin not contiguous")], {"PRMG_EMU_FAULT": "fwd_contiguous_tables"}, ("", ""), None,
     "aclnn"),
    ([("forward", "storage: x not contiguous, at an offset"),
      ("forward", "storage: cos/sin not contiguous, at an offset")], {"PRMG_EMU_FAULT": "fwd_staged_offset"}, ("", ""),
     None, "aclnn"),
    ([("forward", "storage: x not contiguous")], {"PRMG_EMU_FAULT": "fwd_gap_write"}, ("", ""), None, "aclnn"),
    ([("forward", "storage: x transposed")], {"PRMG_EMU_FAULT": "fwd_dense_in_place"}, ("", ""), None, "aclnn"),
    ([("forward", "storage: cos/sin not contiguous, unlike")], {"PRMG_EMU_FAULT": "fwd_tables_one_plan"}, ("", ""),
     None, "aclnn"),
    ([("grad", "partners: sin differs within pairs")], {"PRMG_EMU_FAULT": "own_sin"}, ("", ""), None, "aclnn"),
    ([("forward", "partners: sin differs within pairs")], {"PRMG_EMU_FAULT": "fwd_partner_sin"}, ("", ""), None,
     "aclnn"),
    ([("forward", "storage: cos/sin expanded")], {"PRMG_EMU_FAULT": "fwd_expand_once"}, ("", ""), None, "aclnn"),
    ([(op, key) for op in ("grad", "forward") for key in SLICE_LISTS], {"PRMG_EMU_FAULT": "slice_list_read"},
     ("", ""), None, "aclnn"),
    ([(op, "phase: slice list of 1 value") for op in ("grad", "forward")], {"PRMG_EMU_FAULT": "slice_of_1_as_end"},
     ("", ""), None, "aclnn"),
    ([("forward", f"chip: A2/A3: {rule}") for rule in A2_RULES],
     {"PRMG_EMU_FAULT": "fwd_membase_late", "PRMG_EMU_SOC": A2}, (A2, ""), None, "aclnn"),
    ([("forward", "A2/A3 decode kernel: 256+ heads")], {"PRMG_EMU_FAULT": "fwd_membase_repeat_u8", "PRMG_EMU_SOC": A2},
     (A2, ""), None, "aclnn"),
    ([(op, "storage: dy at an offset, dtypes mixed") for op in ("grad", "forward")],
     {"PRMG_EMU_FAULT": "offset_cos_size"}, ("", ""), None, "aclnn"),
    ([("grad", "build: another status on base")], {"PRMG_EMU_FAULT": "noop_launch_refused"}, ("", ""), None, "aclnn"),
    # stand-ins: a toolkit stating build 2b888cdb that returns another build's statuses
    ([("grad", "build: another status on base")], {"PRMG_EMU_BUILD": "base"}, ("", STANDIN), None, "aclnn"),
    ([("grad", "build: another status on e9f0541c")], {"PRMG_EMU_BUILD": "e9f0541c"}, ("", STANDIN), None, "aclnn"),
    ([("mixed standard", "")], {"PRMG_EMU_FAULT": "bf16_compute"}, ("", ""), "ttk_upstream.yaml", "mixed"),
    ([("e2e-imported", "no-op rows")], {"PRMG_EMU_FAULT": "noop_launch_refused"}, ("", ""),
     "ttk_upstream_e2e.yaml", "aclnn"),
    ([("e2e-imported", "rotated rows")], {"PRMG_EMU_FAULT": "own_sin"}, ("", ""), "ttk_upstream_e2e.yaml", "aclnn"),
    ([("graph mode", "")], {"PRMG_EMU_FAULT": "geir_slice_dropped"}, ("", ""), "cover.yaml", "aclnn+geir"),
    ([("graph mode", "a slice list of none")], {"PRMG_EMU_FAULT": "geir_empty_list_unset"}, ("", ""),
     "cover.yaml", "aclnn+geir"),
]


# The axes of the classes issues 33 and 35 added (every class of each), and their phase classes (the rules they added).
ISSUE_AXES = ("storage", "slice list", "chip", "build", "partners", "A2/A3 decode kernel")
ISSUE_PHASES = ("phase: slice list empty", "phase: slice list of 1 value", "phase: cos not contiguous",
                "phase: sin not contiguous")


def test_every_class_of_the_issues_axes_has_a_fault_that_sees_it():
    """Each class ``prmg coverage`` counts on the axes issues 33 and 35 added (a view's storage, slice lists, chips,
    builds, partner tables) is in SEEN, so that a class modelled later without a fault failing its cases fails here
    (before session 12, forward's 'storage: x not contiguous' and both operators' 'partners: sin differs within
    pairs' were counted without one)."""
    from prmg_cli.ops.regimes import regimes

    seen = {entry for classes, *_ in SEEN for entry in classes}
    claimed = {(op, regime.key) for op in ("grad", "forward") for regime in regimes(op)
               if regime.axis in ISSUE_AXES or regime.key in ISSUE_PHASES}
    assert len(claimed) >= 37 and claimed - seen == set()


@pytest.fixture(scope="module")
def shipped():
    """Every shipped case that runs on today's target (the modes it implements)."""
    from prmg_cli.ops.constraints import skip_reason

    return [case for case in load_cases([ROOT / "cases"]) if not skip_reason(case, TODAY)]


def covering(cases, op: str, key: str) -> list:
    """The cases of ``cases`` in coverage class ``key`` of ``op``."""
    from prmg_cli.cases.coverage import case_classes
    from prmg_cli.ops.regimes import regimes

    index = [regime.key for regime in regimes(op)].index(key)
    return [case for case in cases if case.op == op and not case.known_defect and index in case_classes(case)]


@pytest.mark.parametrize("classes, env, target, file, how", SEEN,
                         ids=[f"{entry[0][0][1] or entry[0][0][0]}-{'-'.join(entry[1].values())}" for entry in SEEN])
def test_every_class_of_the_issues_is_seen_by_a_shipped_case(emulator, monkeypatch, shipped, classes, env, target,
                                                             file, how):
    """Under the fault (or the stand-in), some shipped case of each class fails, the fault acting on it: the shipped
    suite sees each class, not only covers it."""
    from prmg_cli.device.differential import PairSession
    from prmg_cli.device.execute import RunSettings, run_case
    from prmg_cli.device.runners.geir import with_graph_mode
    from prmg_cli.ops import targets

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setitem(targets.RELEASES, STANDIN, targets.LATEST_BUILD)
    toolkit = with_graph_mode(emulator, {}, how) if how == "aclnn+geir" else emulator
    settings = RunSettings(toolkit=toolkit, standard="mixed" if how == "mixed" else None)
    fault = env.get("PRMG_EMU_FAULT")
    for op, key in classes:
        cases = [case for case in shipped if case.source.endswith(file)] if file else covering(shipped, op, key)
        assert cases, (op, key)
        with (PairSession if how == "aclnn+geir" else AclSession)(toolkit, 0) as session:
            red = next((result for case in cases if (result := run_case(session, case, settings,
                                                                        targets.Target(*target))[0]).status
                        in ("failed", "error")), None)
        assert red is not None, f"no shipped case of {op}: {key} fails under {env}"
        assert fault in red.faults if fault else "expectation depends" not in red.message, red
        if how == "aclnn+geir":                       # graph mode's bug, named as graph mode's
            assert red.paths["aclnn"].startswith("passed") and "geir" in red.message, red
