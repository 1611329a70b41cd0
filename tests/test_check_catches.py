"""What each golden-free check catches alone, measured on the emulator's faults, and the README's table of it.

For every fault the emulator can inject (but those that kill, wedge or drain the process: crash, hang, device_fault,
leak_device_memory, whose verdicts the run-level tests cover), a few small cases that together visit every regime a
fault needs are launched once with the fault on; each is judged by the golden, by the error balance of a result the
golden passes, by the in-place contract of the main launch alone, and by each check alone (its own launches held to
the contract too). The graph-mode faults (``geir_*``) act only in graph mode: they are launched through it (the
emulator's twin of the GE shim), each case as graph mode must answer it. ``docs/checks.md`` states the result, and
this test holds it to the measurement.
"""

from __future__ import annotations

import functools

import pytest

from conftest import ROOT
from prmg_cli import error_balance
from prmg_cli.cases.loader import parse_document
from prmg_cli.device.acl import AclSession
from prmg_cli.device.geir import GeirSession
from prmg_cli.device.runners.geir import with_graph_mode
from prmg_cli.device.toolkit import emulator_fault_names
from prmg_cli.inputs.seeded import make_inputs
from prmg_cli.judging.checks import CHECKS, CheckContext, run_checks
from prmg_cli.judging.judge import judge

CASES = """
- {name: grad_tiles, shape: [2, 3, 41, 134], broadcast: 1S1D, partial_slice: [7, 107]}
- {name: grad_axes, shape: [2, 3, 4, 64], broadcast: BSND, partial_slice: [0, 64], dtype: bfloat16,
   cos_dtype: float32}
- {name: grad_half, shape: [2, 3, 4, 64], broadcast: BSND, partial_slice: [0, 64], dtype: float16}
- {name: grad_rows, shape: [1, 65537, 1, 2], broadcast: 1S1D, partial_slice: [0, 2]}
- {name: grad_specials, shape: [1, 1, 2, 8], partial_slice: [2, 6],
   inputs: {dy: {values: [-0.0, -0.0, .nan, 1.0, 2.0, 3.0, -0.0, -0.0, -0.0, -0.0, 1.0, .nan, 3.0, 4.0, -0.0, -0.0]},
            sin: {values: [0.0, 0.6, -0.3, 0.8]}}}
- {name: fwd_tiles, op: forward, shape: [2, 3, 4, 64], broadcast: 1S1D, partial_slice: [8, 56]}
- {name: fwd_strided, op: forward, shape: [1, 2, 4, 8], cos_shape: [1, 1, 1, 8], dy_strides: [128, 64, 16, 1]}
- {name: grad_half_mode_today, shape: [1, 1, 2, 8], rotary_mode: half, expect: {error: ACLNN_ERR_INNER_TILING_ERROR}}
- {name: grad_offsets, shape: [1, 2, 2, 8], broadcast: 1S1D, partial_slice: [2, 6], dy_offset: 5, cos_offset: 2,
   sin_offset: 3}
- {name: grad_moved, shape: [1, 2, 2, 8], broadcast: 1S1D, partial_slice: [4, 8]}
- {name: grad_strided_cos, shape: [1, 2, 2, 8], cos_shape: [1, 2, 1, 8], cos_strides: [32, 16, 16, 1],
   expect: {error: ACLNN_ERR_INNER, phase: launch}}
- {name: fwd_offsets, op: forward, shape: [1, 2, 2, 8], broadcast: 1S1D, partial_slice: [2, 6], dy_offset: 5,
   cos_offset: 2, sin_offset: 3}
- {name: fwd_strided_tables, op: forward, shape: [1, 2, 2, 8], cos_shape: [1, 2, 1, 8], cos_strides: [32, 16, 16, 1],
   sin_strides: [32, 16, 16, 2]}
- {name: fwd_strided_at_offsets, op: forward, shape: [1, 2, 3, 8], cos_shape: [1, 2, 1, 4], partial_slice: [4, 8],
   dy_strides: [64, 32, 8, 1], dy_offset: 8, cos_strides: [16, 8, 8, 1], sin_strides: [16, 8, 8, 1], sin_offset: 4}
- {name: fwd_transposed_expanded, op: forward, shape: [2, 3, 2, 8], cos_shape: [2, 3, 1, 8], dy_strides: [48, 8, 24, 1],
   cos_strides: [0, 8, 8, 1], sin_strides: [0, 8, 8, 1]}
"""
# They end or poison the process (leak_device_memory: its device memory, until aclFinalize): run-level tests.
PROCESS_FAULTS = ("crash", "hang", "device_fault", "leak_device_memory")
PAIRS = ("neg_sin,fwd_neg_sin",)                         # a grad and a forward wrong in the same way
JUDGES = ("golden", "balance", "contract", *CHECKS)
TABLE = ROOT / "docs" / "checks.md"
# Both tests read one measurement (``measured``: about 12 s of CPU, a minute of wall time on the loaded 2-core
# machine): one xdist worker takes both, so make test measures once (a test on each worker measured twice).
pytestmark = pytest.mark.xdist_group("check_catches")


@functools.lru_cache(maxsize=1)
def written_cases() -> tuple:
    """``CASES`` as the loader reads them, once (parsed again for each of some 95 faults: a second of CPU)."""
    return tuple(parse_document(__import__("yaml").safe_load(CASES), "catches.yaml", ROOT))


def catches(session, fault: str) -> set[str]:
    """The judges (``JUDGES``) that fail at least one case of ``CASES`` under ``fault``."""
    found = set()
    for written in written_cases():
        case = session.judged_case(written, {1}) if hasattr(session, "judged_case") else written
        if isinstance(case, str):                   # no form of the case on this path
            continue
        inputs = make_inputs(case)
        outcome = session.launch(case, inputs)
        verdict = judge(case, inputs, outcome)
        if verdict.status != "passed":
            found.add("golden")
        if error_balance.case_warning(verdict.metrics):    # alone, whatever the budget says: a warning --strict fails
            found.add("balance")
        if judge(case, inputs, outcome, golden=False).kinds & {"contract", "status"}:
            found.add("contract")
        if case.expect.success and outcome.status == 0 and outcome.dy is not None:     # as run_case runs them
            context = CheckContext(case, inputs, outcome, session.launch)
            found |= {result.name for result in run_checks(tuple(CHECKS), context)
                      if result.contract or not result.passed}
    return found


def documented() -> dict[str, set[str]]:
    """The table of ``docs/checks.md``: fault -> the judges that catch it."""
    text = TABLE.read_text()
    block = text[text.index("| fault | golden | balance | contract |"):]
    rows = {}
    for line in block.splitlines()[2:]:
        if not line.startswith("| `"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows[cells[0].strip("`")] = {judge for judge, cell in zip(JUDGES, cells[1:]) if cell == "x"}
    return rows


@pytest.fixture(scope="module")
def measured(emulator):
    import os

    with AclSession(emulator, 0) as session, GeirSession(with_graph_mode(emulator, {}, "geir"), 0) as graph:
        table = {}
        try:
            for fault in (*emulator_fault_names(), *PAIRS):
                if fault in PROCESS_FAULTS:
                    continue
                os.environ["PRMG_EMU_FAULT"] = fault
                table[fault] = catches(graph if fault.startswith("geir_") else session, fault)
        finally:
            os.environ.pop("PRMG_EMU_FAULT", None)
        assert catches(session, "") == set() and catches(graph, "") == set()     # correct: no judge complains
    return table


def test_the_docs_state_what_each_check_catches(measured):
    shown = "\n".join(f"| `{fault}` | " + " | ".join("x" if judge in found else "" for judge in JUDGES) + " |"
                      for fault, found in measured.items())
    assert documented() == measured, "the measured table:\n" + shown
    assert "docs/checks.md" in (ROOT / "README.md").read_text()


def test_only_sample_among_the_checks_sees_a_consistent_pair(measured):
    assert measured["neg_sin,fwd_neg_sin"] == {"golden", "sample"}
    assert "adjoint" in measured["neg_sin"] and "adjoint" in measured["fwd_neg_sin"]     # alone: inconsistent
