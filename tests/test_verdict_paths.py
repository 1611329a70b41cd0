"""Issue 20: every verdict path, not only the golden launch, is unable to end green while the kernel is wrong.

Each test builds a wrong kernel -- the emulator's fault switch, a stand-in toolkit (the emulator's libraries
in a folder prmg did not build, so nothing of prmg's own emulator settings applies), or a numpy kernel model
-- and shows the red verdict; and the same path stays green on a correct kernel.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace

import pytest

from conftest import prmg
from prmg_cli import checks
from prmg_cli.acl import GET_WORKSPACE, LAUNCH, SYNCHRONIZE, Outcome
from prmg_cli.cases import Case, Expect, KnownDefect
from prmg_cli.execute import known_defect_status
from prmg_cli.judge import judge
from prmg_cli.results import CaseResult
from prmg_cli.runs import compare

EMU = ("--runner", "emulator")


def write(tmp_path, text: str, name: str = "cases.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def run_json(*args, env=None, timeout=300):
    """``prmg run ARGS --report json`` and its exit code and cases by name."""
    out = prmg("run", *args, "--report", "json", env=env, timeout=timeout)
    assert out.stdout, out.stderr
    document = json.loads(out.stdout)
    return out.returncode, {case["name"]: case for case in document["cases"]}, document["summary"], out.stderr


@pytest.fixture
def stand_in(emulator, tmp_path):
    """A toolkit prmg did not build: the emulator's libraries without the marker file (kind ``aclnn``), so the
    process environment (``PRMG_EMU_MODES``, ``PRMG_EMU_FAULT``) configures it as a vendor's library would be."""
    root = tmp_path / "cann"
    shutil.copytree(emulator.root, root, symlinks=True)
    (root / "PRMG_EMULATOR").unlink()
    return {"ASCEND_HOME_PATH": str(root), "ASCEND_OPP_PATH": str(root / "opp")}


# --- golden-free checks -----------------------------------------------------------------------------------

ODD_D = """
- {name: odd_d, shape: [1, 2, 2, 33], partial_slice: [0, 32], golden: false, checks: [adjoint, determinism]}
"""


@pytest.mark.parametrize("fault", ["", "sign"])
def test_a_case_no_check_of_correctness_judged_is_an_error_not_a_pass(tmp_path, fault):
    """The forward refuses D = 33 (odd), so adjoint cannot run: determinism alone must not pass a wrong-sign
    grad -- nor a right one, which nothing judged either."""
    code, cases, _, _ = run_json(write(tmp_path, ODD_D), *EMU, env={"PRMG_EMU_FAULT": fault})
    assert code == 1
    assert cases["odd_d"]["status"] == "error"
    assert "not judged: without the golden no check of correctness ran (adjoint not run:" in cases["odd_d"]["message"]


def test_determinism_alone_is_refused_unless_the_case_says_why(tmp_path):
    path = write(tmp_path, "- {name: d, shape: [1, 1, 2, 16], golden: false, checks: [determinism]}\n")
    out = prmg("validate", path)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.count("\n") == 1
    assert f"{path}: case 'd': field 'checks': golden: false with checks ['determinism'] judges nothing about " \
           "correctness" in out.stderr
    plain = write(tmp_path, "- {name: d, shape: [1, 1, 2, 16]}\n", "plain.yaml")
    out = prmg("run", plain, *EMU, "--no-golden", "--check", "determinism")
    assert out.returncode == 2 and "case 'd': field 'checks': without the golden this case is judged by " \
                                   "determinism" in out.stderr
    said = write(tmp_path, "- {name: d, shape: [1, 1, 2, 16], golden: false, checks: [determinism],\n"
                           "   correctness_unchecked: only determinism fits at this size}\n", "said.yaml")
    code, cases, _, _ = run_json(said, *EMU)
    assert code == 0 and cases["d"]["status"] == "passed"
    assert cases["d"]["warnings"] == ["correctness not checked: only determinism fits at this size (determinism: "
                                      + checks.CHECKS["determinism"].description + ")"]
    code, cases, _, _ = run_json(said, *EMU, "--strict")
    assert code == 1 and cases["d"]["status"] == "failed"


def test_sample_catches_a_grad_and_forward_wrong_in_the_same_way():
    """Both operators negate sin: adjoint, roundtrip and determinism accept the pair; sample does not."""
    from test_checks import ModelSession, context, make_case

    case = make_case("grad", rope=True)
    session = ModelSession(grad_fault="negate_sin", forward_fault="negate_sin")
    ctx, _, _ = context(case, session)
    found = {result.name: result for result in checks.run_checks(tuple(checks.CHECKS), ctx)}
    assert all(found[name].passed for name in ("adjoint", "roundtrip", "determinism")), found
    assert not found["sample"].passed and found["sample"].message.startswith("sample: the host reference disagrees")
    correct, _, _ = context(case, ModelSession())
    assert all(result.passed and result.judged for result in checks.run_checks(tuple(checks.CHECKS), correct))


def test_checks_skip_where_they_are_not_defined_and_stay_green_on_the_shipped_edge_cases(tmp_path):
    """Over the shipped special values (NaN, Inf, overflow) and empty slices every check passes or says why it
    is not defined: no false alarm on a correct kernel. Every record the run writes (expect-error cases with
    reversed and negative slices among them) is read back by the results store's checks."""
    from prmg_cli import store

    results = tmp_path / "r.jsonl"
    out = prmg("run", "cases/special.yaml", "cases/edge.yaml", "cases/checks.yaml", "cases/cover.yaml", *EMU, "--check",
               "adjoint,roundtrip,determinism,sample", "--report", "json", "--results", results)
    document = json.loads(out.stdout)
    assert out.returncode == 0, [(c["name"], c["message"]) for c in document["cases"] if c["status"] != "passed"]
    assert sorted(r.name for r in store.read(results).results) == sorted(c["name"] for c in document["cases"])
    details = [d for c in document["cases"] for d in c["details"]]
    assert "adjoint skipped: the inputs hold NaN or infinities, so <F x, dy> is not a number" in details
    assert "roundtrip skipped: the call is a no-op here (an empty slice, tensor or table)" in details


def test_an_internal_error_in_a_check_ends_the_run_with_exit_code_3(tmp_path, emulator, monkeypatch):
    """A bug in a check is not a case error: the run stops (exit 3) with the worker's traceback. (Adding a check
    is one entry of ``checks.CHECKS``: here a toy entry that fails.)"""
    from prmg_cli import execute, suite
    from prmg_cli.commands import run

    def broken(context):
        raise ZeroDivisionError("a bug in a check")

    monkeypatch.setitem(checks.CHECKS, "toy", checks.Check("toy", "a toy check", broken, "toy_ratio", str))
    path = write(tmp_path, "- {name: t, shape: [1, 1, 2, 16], checks: [adjoint]}\n")
    with pytest.raises(execute.InternalError, match="(?s)case 't':.*ZeroDivisionError: a bug in a check"):
        suite.run_suite(run.Request(paths=(str(path),), runner="emulator", check="toy", report=("json:" + str(
            tmp_path / "r.json"),)))


def test_every_launch_of_a_check_is_held_to_the_contract():
    """A forward that writes past its tensor only when a check launches it: the case fails on that launch."""
    from test_checks import ModelSession, context, make_case

    class GuardBreaking(ModelSession):
        def launch(self, case, inputs):
            outcome = super().launch(case, inputs)
            if case.op == "forward":
                outcome.contract_violations = ("guard zone after x changed at byte +0",)
            return outcome

    case = make_case("grad")
    ctx, inputs, outcome = context(case, GuardBreaking())
    verdict = checks.fold_checks(judge(case, inputs, outcome), checks.run_checks(("adjoint",), ctx), case, True)
    assert verdict.status == "failed" and verdict.kinds == {"contract"}
    assert verdict.message == ("adjoint: launch of InplacePartialRotaryMul: guard zone after x changed at byte +0")


# --- known defects, expected errors, skips ------------------------------------------------------------------

DEFECT_CASE = "-k", "neg.mode_2pow32_plus_1", "cases/negative.yaml"


@pytest.mark.parametrize("fault, status, words", [
    ("", "xfailed", "known defect (upstream's tiling reads"),
    ("modify_cos", "failed", "(not the known defect: "),
    ("crash", "error", "worker crashed: signal 11 (SIGSEGV) (not the known defect"),
    ("write_past_end", "failed", "guard zone after dy changed"),
])
def test_a_known_defect_is_xfail_only_when_that_defect_is_what_went_wrong(fault, status, words):
    code, cases, _, _ = run_json(*DEFECT_CASE, *EMU, env={"PRMG_EMU_FAULT": fault})
    result = cases["neg.mode_2pow32_plus_1"]
    assert (result["status"], code) == (status, 0 if status == "xfailed" else 1)
    assert words in result["message"]


def test_a_known_defect_that_hangs_is_an_error():
    code, cases, _, _ = run_json(*DEFECT_CASE, *EMU, "--timeout", "2", env={"PRMG_EMU_FAULT": "hang"})
    assert code == 1 and cases["neg.mode_2pow32_plus_1"]["status"] == "error"


def test_known_defect_status_rules():
    wrong = Case("w", "t", (1, 1, 1, 4), (1, 1, 1, 4), (1, 1, 1, 4), (0, 4), known_defect=KnownDefect("why"))
    status = replace(wrong, known_defect=KnownDefect("why", 0), expect=Expect(561002))
    failed = CaseResult("w", "failed", message="m")
    assert known_defect_status(wrong, failed, {"result"}, 0).status == "xfailed"
    assert known_defect_status(wrong, failed, {"result", "check"}, 0).status == "xfailed"
    assert known_defect_status(wrong, failed, {"result", "contract"}, 0).status == "failed"
    assert known_defect_status(status, failed, {"status"}, 0).status == "xfailed"
    assert known_defect_status(status, failed, {"status"}, 161002).status == "failed"
    assert known_defect_status(status, CaseResult("w", "error", message="timed out"), set()).status == "error"
    assert known_defect_status(status, CaseResult("w", "passed"), set(), 561002).status == "xpassed"


@pytest.mark.parametrize("text, field, words", [
    ("- {name: k, shape: [1, 1, 1, 4], known_defect: it fails}\n", "known_defect", "expected {reason: TEXT, status"),
    ("- {name: k, shape: [1, 1, 1, 4], known_defect: {reason: x}}\n", "known_defect", "name exactly one of"),
    ("defaults: {known_defect: {reason: x, result: wrong}}\ncases:\n- {name: k, shape: [1, 1, 1, 4]}\n",
     "defaults.known_defect", "'known_defect' belongs to each case, not to defaults"),
])
def test_a_known_defect_must_name_its_defect_on_each_case(tmp_path, text, field, words):
    out = prmg("validate", write(tmp_path, text))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert f"field '{field}'" in out.stderr and words in out.stderr


def test_a_device_fault_is_never_an_expected_refusal():
    case = Case("a", "t", (1, 1, 1, 4), (1, 1, 1, 4), (1, 1, 1, 4), (0, 4), expect=Expect("any"))
    from prmg_cli.inputs import make_inputs

    inputs = make_inputs(case)
    faulted = judge(case, inputs, Outcome(status=507015, failed_call=SYNCHRONIZE))
    assert faulted.status == "failed" and "a device fault after the kernel ran, not a refusal" in faulted.message
    assert judge(case, inputs, Outcome(status=561002, failed_call=GET_WORKSPACE, dy=inputs.dy.copy(),
                                       dy_changed=False)).status == "passed"


def test_the_phase_of_an_expected_error_is_checked():
    from prmg_cli.inputs import make_inputs

    case = Case("p", "t", (1, 1, 1, 4), (1, 1, 1, 4), (1, 1, 1, 4), (0, 4), expect=Expect(561000, "launch"))
    inputs = make_inputs(case)
    early = judge(case, inputs, Outcome(status=561000, failed_call=GET_WORKSPACE, dy_changed=False))
    assert early.status == "failed" and early.kinds == {"status"}
    assert "expected 561000 ACLNN_ERR_INNER from the launch (the second phase), got it from ...GetWorkspaceSize" \
        in early.message
    assert judge(case, inputs, Outcome(status=561000, failed_call=LAUNCH, dy_changed=False)).status == "passed"


def test_the_shipped_non_contiguous_case_fails_when_the_first_phase_refuses(stand_in):
    """A stand-in toolkit whose first phase returns 561000 (an unknown PRMG_EMU_FAULT does that in both phases'
    first call): the shipped case expects 561000 from the launch, so it fails."""
    code, cases, _, _ = run_json("cases/negative.yaml", "-k", "not_contiguous", "--runner", "aclnn",
                                 env={**stand_in, "PRMG_EMU_FAULT": "no_such_fault"})
    result = cases["neg.dy_not_contiguous"]
    assert code == 1 and result["status"] == "failed"
    assert "from the launch (the second phase), got it from ...GetWorkspaceSize" in result["message"]
    code, cases, _, _ = run_json("cases/negative.yaml", "-k", "not_contiguous", "--runner", "aclnn", env=stand_in)
    assert code == 0


def test_validate_warns_when_the_phase_disagrees_with_the_model(tmp_path):
    path = write(tmp_path, "- {name: n, shape: [1, 1, 4, 8], dy_strides: [32, 32, 1, 4],\n"
                           "   expect: {error: ACLNN_ERR_INNER}}\n")
    out = prmg("validate", path)
    assert out.returncode == 0
    assert "but the constraint model predicts the launch (the second phase) returns it (write phase: launch)" \
        in out.stdout


def test_a_run_where_every_case_is_skipped_is_not_green(stand_in):
    """And the toolkit is asked which modes it implements: when it accepts more than the target claims, the run
    says so (on stderr and in the header)."""
    env = {**stand_in, "PRMG_EMU_MODES": "0,1,2,3"}
    args = ("cases/future_modes.yaml", "--exclude-tag", "mode-unsupported", "--runner", "aclnn")
    code, cases, summary, stderr = run_json(*args, env=env)
    assert code == 5 and summary["exit_code"] == 5 and summary["skipped"] == len(cases)
    assert "the toolkit accepts half, quarter, interleave-half too: their pass cases are skipped " \
           "(--supported-modes 0,1,2,3 runs them)" in stderr
    assert summary["accepted_modes"] == [0, 1, 2, 3]
    code, _, summary, _ = run_json(*args, "--strict", env=env)
    assert code == 1 and summary["exit_code"] == 1
    out = prmg("run", *args, env=env)
    assert out.returncode == 5 and "(every case was skipped)" in out.stdout


# --- compare, pytest -------------------------------------------------------------------------------------

@pytest.mark.parametrize("before, after, category", [
    ("passed", "skipped", "verdict lost"), ("passed", "xfailed", "verdict lost"),
    ("failed", "skipped", "verdict lost"), ("failed", "xfailed", "verdict lost"),
    ("xfailed", "skipped", "verdict lost"), ("failed", "passed", "fixed"), ("skipped", "passed", "status changed"),
])
def test_compare_counts_a_lost_verdict_as_a_regression(before, after, category):
    comparison = compare({"c": CaseResult("c", before)}, {"c": CaseResult("c", after)})
    assert [change.category for change in comparison.changes] == [category]
    assert bool(comparison.regressions) == (category == "verdict lost")


PLUGIN_CASES = """
- {name: p_defect, shape: [1, 2, 2, 32], known_defect: {reason: the sign is wrong, result: wrong}}
- {name: p_vacuous, shape: [1, 1, 1, 8], inputs: {cos: {values: [1, 1, 1, 1, 1, 1, 1, 1]},
                                                   sin: {values: [0, 0, 0, 0, 0, 0, 0, 0]}}}
"""


def test_pytest_plugin_matches_prmg_under_runxfail_and_surfaces_warnings(tmp_path):
    path = write(tmp_path, PLUGIN_CASES)

    def pytest_run(*args):
        env = dict(os.environ, PRMG_EMU_FAULT="sign")
        return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--prmg", str(path),
                               "--prmg-runner", "emulator", "-q", "-rxX", *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)

    normal = pytest_run()
    assert normal.returncode == 0, normal.stdout
    assert "1 passed, 1 xfailed, 1 warning" in normal.stdout
    assert "PrmgWarning: prmg case p_vacuous: vacuous: the unchanged input already passes" in normal.stdout
    runxfail = pytest_run("--runxfail")
    assert runxfail.returncode == 1 and "1 failed, 1 passed" in runxfail.stdout
    strict = pytest_run("-W", "error::prmg_cli.pytest_plugin.PrmgWarning")
    assert strict.returncode == 1 and "1 failed, 1 xfailed" in strict.stdout


def test_the_store_checks_every_field_of_its_records():
    """One kind per field: a field added to a record is type-checked when read back, or this fails."""
    from prmg_cli import store
    from prmg_cli.results import RECORD_FIELDS, RunInfo

    assert set(RECORD_FIELDS) == set(CaseResult.__dataclass_fields__)
    assert set(store.RUN_INFO_FIELDS) == set(RunInfo.__dataclass_fields__)
    assert set(store.RUN_FIELDS) | {"schema"} == set(store.RunRecord("r", "", [], {}, {}).to_dict())
    assert set(RECORD_FIELDS.values()) | set(store.RUN_FIELDS.values()) | set(store.RUN_INFO_FIELDS.values()) \
        <= set(store._KINDS)


CHECKED = "- {name: g, shape: [1, 2, 2, 16], broadcast: 1S1D, inputs: {cos: {rope: {}}, sin: {rope: {}}}}\n"


def test_a_consistent_wrong_pair_passes_adjoint_and_roundtrip_but_not_sample(tmp_path):
    """Through the emulator: a grad and a forward that both negate sin."""
    path = write(tmp_path, CHECKED)
    pair = {"PRMG_EMU_FAULT": "neg_sin,fwd_neg_sin"}
    code, cases, _, _ = run_json(path, *EMU, "--no-golden", "--check", "adjoint,roundtrip,determinism", env=pair)
    assert code == 0 and cases["g"]["status"] == "passed"               # the hole sample closes
    code, cases, _, _ = run_json(path, *EMU, "--no-golden", "--check", "adjoint,roundtrip,sample", env=pair)
    assert code == 1 and "sample: the host reference disagrees" in cases["g"]["message"]


def test_a_write_past_the_buffer_on_a_checks_launch_fails_the_case(tmp_path):
    """The grad is right; the forward, which only the adjoint check launches, writes past x."""
    path = write(tmp_path, CHECKED)
    code, cases, _, _ = run_json(path, *EMU, "--check", "adjoint", env={"PRMG_EMU_FAULT": "fwd_write_past_end"})
    assert code == 1 and cases["g"]["status"] == "failed"
    assert "adjoint: launch of InplacePartialRotaryMul: guard zone after x changed at byte +0" in cases["g"]["message"]
    assert run_json(path, *EMU, "--check", "adjoint")[0] == 0


def test_an_expected_error_is_not_met_by_a_device_fault(tmp_path):
    path = write(tmp_path, "- {name: e, shape: [1, 1, 2, 16], expect: {error: any}}\n")
    code, cases, _, _ = run_json(path, *EMU, env={"PRMG_EMU_FAULT": "device_fault"})
    assert code == 1 and cases["e"]["status"] == "failed"
    assert "from aclrtSynchronizeStream: a device fault after the kernel ran, not a refusal" in cases["e"]["message"]


def test_an_operator_is_one_entry(emulator, monkeypatch):
    """A toy operator -- the grad's entry points under another name -- is an operator everywhere: case files,
    the constraint model, the runner, the judge, the checks (its adjoint is the forward)."""
    from prmg_cli import ops
    from prmg_cli.acl import AclSession
    from prmg_cli.cases import parse_document, validate
    from prmg_cli.execute import RunSettings, run_case

    monkeypatch.setitem(ops.OPERATORS, "toy", replace(ops.GRAD, name="toy", title="ToyGrad", required=False))
    cases = parse_document([{"name": "t", "op": "toy", "shape": [1, 2, 2, 16], "broadcast": "1S1D",
                             "checks": ["adjoint", "roundtrip", "sample"]},
                            {"name": "t_bad", "op": "toy", "shape": [1, 1, 1, 2048], "partial_slice": [0, 8],
                             "expect": {"error": "ACLNN_ERR_INNER_TILING_ERROR"}}], "toy.yaml", ".")
    validate(cases, frozenset({1}))
    with AclSession(emulator, 0) as session:
        results = [run_case(session, case, RunSettings(toolkit=emulator))[0] for case in cases]
    assert [(r.op, r.status) for r in results] == [("toy", "passed"), ("toy", "passed")], results
    assert results[0].metrics["adjoint_ratio"] < 1 and results[0].metrics["sample_ratio"] < 1
