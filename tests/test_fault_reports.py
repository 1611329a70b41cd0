"""Emulator faults end to end (through the real CLI): an asynchronous device fault costs its case only,
and every report says which named faults acted on which cases, not merely which were named."""

from __future__ import annotations

import json

from conftest import prmg, prmg_forked

from prmg_cli.reports.outputs.labels import fault_field, format_header
from prmg_cli.results import CaseResult, RunInfo

CASES = """
- {name: before, shape: [1, 2, 2, 16], partial_slice: [4, 12]}
- {name: faulty, shape: [1, 2, 4, 16], partial_slice: [4, 12]}
- {name: after_a, shape: [1, 2, 2, 16], partial_slice: [0, 16], dtype: bfloat16}
- {name: after_b, shape: [2, 1, 2, 8], partial_slice: [2, 6], dtype: float16}
"""
TESTS_PRMG = "this run tests prmg, not the operator"


def run(tmp_path, env, *args, launch=prmg):
    """``prmg run`` of CASES: a process of its own (``prmg``) by default, or forked from the tests' fork server."""
    path = tmp_path / "cases.yaml"
    path.write_text(CASES)
    result = launch("run", path, "--runner", "emulator", *args, env=env)
    assert "Traceback" not in result.stderr, result.stderr
    return result


def test_a_device_fault_costs_its_case_only_and_the_report_names_where_it_acted(tmp_path):
    """device_fault on one shape: that launch returns 0 and its synchronization 507015, after which the
    worker's device is unusable; the worker is replaced, so the later cases on the same device pass."""
    # a process of its own (not prmg_forked): the worker's replacement and the exit code are a real prmg's
    result = run(tmp_path, {"PRMG_EMU_FAULT": "device_fault", "PRMG_EMU_FAULT_SHAPE": "1,2,4,16"}, "--report", "json")
    assert result.returncode == 1 and result.stdout.strip(), result.stderr      # (once, in CI: exit 1, no report)
    report = json.loads(result.stdout)
    cases = {case["name"]: case for case in report["cases"]}
    assert [cases[name]["status"] for name in ("before", "after_a", "after_b")] == ["passed"] * 3
    faulty = cases["faulty"]
    assert faulty["status"] in ("failed", "error") and faulty["error_code"] == 507015
    assert "507015 ACL_ERROR_RT_AICORE_EXCEPTION" in faulty["message"]
    assert "failed call: aclrtSynchronizeStream" in faulty["details"]
    assert [cases[name]["faults"] for name in ("before", "faulty", "after_a")] == [[], ["device_fault"], []]
    summary = report["summary"]
    assert summary["fault_cases"] == {"device_fault": ["faulty"]}
    assert summary["fault_header"] == (f"FAULTS INJECTED: device_fault (PRMG_EMU_FAULT_SHAPE=1,2,4,16: acted on 1 "
                                       f"of 4 cases: faulty): {TESTS_PRMG}")


def test_a_fault_shape_matching_no_case_does_not_claim_an_injection(tmp_path):
    result = run(tmp_path, {"PRMG_EMU_FAULT": "sign", "PRMG_EMU_FAULT_SHAPE": "9,9,9,9"}, launch=prmg_forked)
    assert result.returncode == 0, result.stdout
    lines = result.stdout.splitlines()
    assert (f"FAULTS NAMED: sign (PRMG_EMU_FAULT_SHAPE=9,9,9,9): {TESTS_PRMG}; the end of the report says which "
            f"cases they acted on") in " ".join(result.stdout.split())         # wrapped to 100 columns
    named = next(i for i, line in enumerate(lines) if line.startswith("FAULTS NAMED:"))
    assert named < next(i for i, line in enumerate(lines) if line.startswith("verdict "))   # before the first case
    assert lines[-2:] == ["FAULTS NAMED BUT NEVER INJECTED: sign (PRMG_EMU_FAULT_SHAPE=9,9,9,9 matched no case)",
                          "4 passed, 0 failed"]
    assert "FAULTS INJECTED" not in result.stdout


def test_the_fault_line_says_what_acted_where():
    info = RunInfo(runner="emulator", location="/e", faults=("sign", "fwd_sign"))
    results = [CaseResult(name=f"c{i}", status="failed", shape=[1, 1, 1, 8], faults=["sign"]) for i in range(7)]
    results.append(CaseResult(name="clean", status="passed", shape=[1, 1, 1, 8]))
    assert fault_field(info, results) == ("FAULTS INJECTED", f"sign (PRMG_EMU_FAULT: acted on 7 of 8 cases: c0, c1, "
                                          f"c2, c3, c4 and 2 more; never injected: fwd_sign): {TESTS_PRMG}")
    assert fault_field(info, results[-1:]) == ("FAULTS NAMED BUT NEVER INJECTED",
                                               "sign, fwd_sign (PRMG_EMU_FAULT: no kernel ran with them)")
    crashed = CaseResult(name="boom", status="error", faults=None)
    assert fault_field(info, [crashed]) == ("FAULTS NAMED, NOT SEEN ACTING", (
        f"sign, fwd_sign (PRMG_EMU_FAULT: no case reported them acting; 1 case ended without reporting them (a "
        f"crash or timeout): boom): {TESTS_PRMG}"))
    shaped = RunInfo(runner="emulator", location="/e", faults=("sign",), fault_shape="1,1,1,8")
    assert fault_field(shaped, results[-1:])[1] == "sign (PRMG_EMU_FAULT_SHAPE=1,1,1,8: no kernel ran with them)"
    assert fault_field(RunInfo(runner="aclnn", location="/t"), results) is None
    assert "FAULTS" not in format_header(RunInfo(runner="emulator", location="/e"), results)
