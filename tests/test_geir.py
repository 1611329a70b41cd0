"""Graph mode (issue 35): the runner table, the GE shim's build and syntax, the emulator's twin of its C ABI, the
geir and aclnn+geir runners, the constraint model's graph expectations, and the differential."""

from __future__ import annotations

import ctypes
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, prmg_here
from kernels import correct_kernel
from prmg_cli.case import Expect
from prmg_cli.cases.loader import load_cases, parse_document
from prmg_cli.device import execute, runners
from prmg_cli.device.acl import Outcome
from prmg_cli.device.differential import PairSession, combine, disagreement
from prmg_cli.device.geir import GeirError, GeirSession
from prmg_cli.device.runners import shim
from prmg_cli.device.runners.geir import with_graph_mode
from prmg_cli.errors import PrmgError
from prmg_cli.files import emulator_cache_base
from prmg_cli.inputs.seeded import make_inputs
from prmg_cli.ops import OPERATORS
from prmg_cli.ops.constraints import graph_case
from prmg_cli.status import GE_COMPILE_REFUSED, GE_EXEC_NOT_INIT, GE_FAILED, GRAPH_INVALID_IR_DEF
from test_cli_commands import run_in_process

SMALL = """
- {name: fp32, shape: [1, 2, 2, 16], broadcast: 1S1D, partial_slice: [2, 14]}
- {name: bf16, shape: [1, 1, 2, 8], partial_slice: [0, 8], dtype: bfloat16, cos_dtype: float32}
- {name: null_sin, shape: [1, 1, 2, 8], partial_slice: [0, 8], null: [sin], expect: {error: ACLNN_ERR_PARAM_NULLPTR}}
"""


@pytest.fixture(scope="module")
def graph(emulator):
    """The emulator with graph mode's library (its twin), run by the geir runner."""
    return with_graph_mode(emulator, os.environ, "geir")


def small_cases(tmp_path) -> Path:
    path = tmp_path / "small.yaml"
    path.write_text(SMALL)
    return path


# --- the runner table -------------------------------------------------------------------------------------

class HostSession:
    """A toy runner's session: the numpy model of a correct kernel (tests/kernels.py), no device at all."""

    path = "host"
    device_faulted = False

    def __init__(self, toolkit, device):
        self.toolkit = toolkit

    def launch(self, case, inputs, **how):
        result = correct_kernel(inputs.dy, inputs.cos, inputs.sin, case.rotary_mode, case.partial_slice)
        return Outcome(0, dy=result, dy_changed=False, faults=())

    def soc_name(self):
        return "numpy"

    def accepted_modes(self):
        return None

    def close(self):
        pass


def test_a_runner_is_one_module_and_one_entry(tmp_path, emulator, capsys, monkeypatch):
    """A toy runner (``HostSession``, standing for its module) and one entry of ``runners.RUNNERS``: ``prmg run
    --runner host`` finds it, its workers open its session and every result names its path."""
    toy = runners.Runner("host", "numpy on the host", lambda op_lib, env, modes: replace(emulator, calls="host"),
                         HostSession)
    monkeypatch.setitem(runners.RUNNERS, "host", toy)
    path = small_cases(tmp_path)
    code, out, _ = run_in_process(capsys, monkeypatch, "run", path, "-k", "fp32", "--runner", "host",
                                  "--report", "json")
    report = json.loads(out)
    assert code == 0 and [(c["name"], c["status"], c["path"]) for c in report["cases"]] == [("fp32", "passed", "host")]
    code, _, err = run_in_process(capsys, monkeypatch, "run", path, "--runner", "hots")
    assert code == 2 and err.strip() == ("prmg: error: --runner 'hots' (did you mean 'host'?): choose one of auto, "
                                         "aclnn, emulator, geir, aclnn+geir, emulator-geir, emulator+geir, host")


# --- the shim ------------------------------------------------------------------------------------------------

def ge_include_folders() -> list[Path]:
    """GE's public headers on this machine: ``$PRMG_GE_INCLUDE``'s folders, else an installed toolkit's."""
    from prmg_cli.device.toolkit import find_toolkit

    toolkit = find_toolkit({k: v for k, v in os.environ.items() if k != "PRMG_EMULATOR_HOME"})
    folders = shim.include_folders(toolkit.root if toolkit and toolkit.kind == "aclnn" else None, os.environ)
    return [folder for folder in folders if folder.is_dir()]


def test_the_shim_compiles_against_ges_public_headers():
    """``g++ -std=c++17 -fsyntax-only`` of runners/geir/prmg_geir.cpp, as prmg builds it, against GE's headers
    (hicann/ge and hicann/metadef, or a CANN toolkit's): skipped where none are on the machine."""
    folders = ge_include_folders()
    if not any((folder / "ge" / "ge_api.h").is_file() for folder in folders):
        pytest.skip("GE's public headers are not on this machine (CI cannot reach GitHub): set PRMG_GE_INCLUDE to "
                    "the include folders of hicann/ge and hicann/metadef (docs/runners.md), or install a CANN toolkit; "
                    "`make geir-syntax GE_INCLUDE=...` runs the same check")
    compiler = shim.find_compiler(os.environ)
    command = shim.Plan(compiler, "", tuple(folders)).command(None, syntax_only=True)
    result = subprocess.run(command + ["-Werror"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr


def fake_toolkit(root: Path, headers: bool = True) -> Path:
    """A CANN-shaped folder with GE's file names (empty files: nothing is loaded or linked for real)."""
    for name in ("lib64/libascendcl.so", "lib64/libnnopbase.so", "compiler/lib64/libge_runner.so",
                 "compiler/lib64/libgraph.so", "compiler/lib64/stub/libgraph_base.so"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(b"")
    if headers:
        (root / "compiler/include/ge").mkdir(parents=True)
        (root / "compiler/include/ge/ge_api.h").write_text("")
    return root


def test_the_shim_is_built_once_saying_which_compiler_headers_and_libraries(tmp_path):
    """On a toolkit the shim is compiled on first use (here by a stand-in compiler that records its command line)
    into the cache, with the toolkit's headers and libraries (never a stub), and said so; then reused."""
    root = fake_toolkit(tmp_path / "cann")
    compiler = tmp_path / "fake-g++"
    compiler.write_text('#!/bin/sh\n[ "$1" = --version ] && { echo "fake-g++ 1.0"; exit 0; }\n'
                        f'echo "$@" >> {tmp_path}/calls\n'
                        'while [ $# -gt 0 ]; do [ "$1" = -o ] && : > "$2"; shift; done\n')
    compiler.chmod(0o755)
    env = {"CXX": str(compiler), "PRMG_EMULATOR_HOME": str(tmp_path / "cache"), "PATH": os.environ["PATH"]}
    library, how = shim.build_shim(root, env)
    again, _ = shim.build_shim(root, env)
    calls = (tmp_path / "calls").read_text().splitlines()
    assert again == library and library.is_file() and len(calls) == 1
    assert f"-I{root}/compiler/include" in calls[0] and f"{root}/compiler/lib64/libge_runner.so" in calls[0]
    assert "stub" not in calls[0] and "-std=c++17" in calls[0] and f"-Wl,-rpath,{root}/compiler/lib64" in calls[0]
    assert how.startswith(f"runners/geir/prmg_geir.cpp compiled by {compiler} (fake-g++ 1.0) with headers from")
    assert (library.parent / "BUILD").read_text().startswith(how)


STANDIN = ROOT / "tests" / "data" / "standin_ge"


def standin_toolkit(root: Path, emulator) -> Path:
    """A CANN toolkit at ``root`` whose GE is the stand-in of tests/data/standin_ge: the emulator's libraries
    (unmarked: a toolkit prmg did not build), each GE header the shim includes, and libge_runner.so and libgraph.so
    built from the stand-in by the host's g++."""
    shutil.copytree(emulator.root, root, ignore=shutil.ignore_patterns("PRMG_EMULATOR"))
    include, lib64 = root / "compiler" / "include", root / "compiler" / "lib64"
    for header in re.findall(r'#include "((?:ge|graph)/[^"]+)"', (ROOT / "runners/geir/prmg_geir.cpp").read_text()):
        (include / header).parent.mkdir(parents=True, exist_ok=True)
        (include / header).write_text('#include "standin_ge.h"\n')
    shutil.copy(STANDIN / "standin_ge.h", include)
    lib64.mkdir(parents=True)
    subprocess.run(["g++", "-std=c++17", "-fPIC", "-shared", f"-I{include}", str(STANDIN / "standin_ge.cpp"), "-o",
                    str(lib64 / "libge_runner.so")], check=True, timeout=300)
    shutil.copy(lib64 / "libge_runner.so", lib64 / "libgraph.so")
    return root


def test_on_a_toolkit_the_real_shim_is_compiled_on_first_use_said_so_and_run(tmp_path, emulator, monkeypatch):
    """On a host with a toolkit (GE here a stand-in built in the test, over the emulator's libraries: run by name,
    ``--runner emulator-geir``), ``prmg doctor`` says graph mode is available and how the shim would be built; the
    first run compiles runners/geir/prmg_geir.cpp with the
    host's C++ compiler against the toolkit's headers and libraries, loads it and judges its results (the
    operator's output, a refusal with GE's code from the compile phase), its report naming compiler, headers and
    libraries; the next run reuses the build. An IR declaring rotary_mode with another type than the int64 prmg
    sets, or no output of the name prmg gives, is refused while building the graph, saying so."""
    if shutil.which("g++") is None:
        pytest.skip("no g++ on this host to build the stand-in GE and the shim with")
    monkeypatch.delenv("PRMG_GE_INCLUDE", raising=False)    # GE's real headers, set for the syntax test, come first
    root = standin_toolkit(tmp_path / "cann", emulator)
    compiler = tmp_path / "cxx"                                  # the host's g++, each compile counted
    compiler.write_text(f'#!/bin/sh\n[ "$1" = --version ] || echo "$@" >> {tmp_path}/calls\n'
                        f'exec {shutil.which("g++")} "$@"\n')
    compiler.chmod(0o755)
    env = {"ASCEND_HOME_PATH": str(root), "CXX": str(compiler)}       # the tests' cache (its judge is built there)
    how = f"runners/geir/prmg_geir.cpp compiled by {compiler} ("
    doctor = prmg_here("doctor", "--runner", "emulator-geir", env=env)  # (auto and geir refuse the copy)
    assert doctor.returncode == 0 and f"  available on the toolkit at {root}: {how}" in doctor.stdout
    cases = tmp_path / "two.yaml"
    cases.write_text("".join(line + "\n" for line in SMALL.splitlines() if "bf16" not in line))
    for run in range(2):
        result = prmg_here("run", cases, "--runner", "emulator-geir", "--report", "json", env=env)
        assert result.returncode == 0, result.stdout + result.stderr
        report = json.loads(result.stdout)
        assert [(c["name"], c["status"], c["path"], c["error_code"]) for c in report["cases"]] == \
            [("fp32", "passed", "geir", 0), ("null_sin", "passed", "geir", GE_COMPILE_REFUSED)]
        assert report["summary"]["graph_library"].startswith(how) and \
            f"with headers from {root}/compiler/include and linked with {root}/compiler/lib64/libge_runner.so, " \
            f"{root}/compiler/lib64/libgraph.so" in report["summary"]["graph_library"]

    def refused_in_the_build(text, **variables):
        result = prmg_here("run", cases, "--runner", "emulator-geir", "--report", "json", env={**env, **variables})
        fp32 = json.loads(result.stdout)["cases"][0]
        assert result.returncode == 1 and (fp32["status"], fp32["error_code"]) == ("failed", GRAPH_INVALID_IR_DEF)
        assert f"the IR of InplacePartialRotaryMulGrad declares {text}" in fp32["message"], fp32["message"]

    refused_in_the_build("attribute rotary_mode as VT_STRING, not VT_INT", STANDIN_GE_MODE_TYPE="VT_STRING")
    # GE's AddGraph says FAILED whatever went wrong, a session GE could not make included (its constructor reports
    # nothing): reported in the compile phase, it was the refusal a case expecting GE's FAILED (the tiling's) or any
    # refusal waited for, and such cases passed though GE never compiled a graph (issue 32/35, fifth look)
    negative = tmp_path / "negative.yaml"
    negative.write_text("".join(f"- {{name: {name}, shape: [1, 1, 2, 16], cos_shape: [1, 1, 1, 7], partial_slice: "
                                f"[0, 7], expect: {{error: {error}}}}}\n"
                                for name, error in (("tiling", "ACLNN_ERR_INNER_TILING_ERROR"), ("any", "any"))))
    result = prmg_here("run", negative, "--runner", "emulator-geir", "--report", "json",
                       env={**env, "STANDIN_GE_FAIL": "add"})
    assert result.returncode == 1, result.stdout + result.stderr
    for case in json.loads(result.stdout)["cases"]:
        assert case["status"] == "failed" and "from ge::Session::AddGraph (GE's initialisation, its session and " \
            "Session::AddGraph): GE or the device failed, not a refusal of the graph" in case["message"], case
    grad = OPERATORS["grad"]
    monkeypatch.setitem(OPERATORS, "grad", replace(grad, graph=replace(grad.graph, output="y")))
    refused_in_the_build("no output y")
    built = [note for note in emulator_cache_base().glob(f"geir-*/{shim.BUILD_NOTE}") if str(root) in note.read_text()]
    assert len(built) == 1 and built[0].read_text().startswith(how) and (built[0].parent / shim.LIBRARY).is_file()
    assert len((tmp_path / "calls").read_text().splitlines()) == 1       # compiled once, on first use
    shutil.rmtree(built[0].parent)                                      # a build for this test's toolkit only
    built[0].parent.with_name(f"{built[0].parent.name}.lock").unlink()


# One process's life of GE through the real shim (the stand-in's $STANDIN_GE_FAIL picks the failing step): printed as
# JSON, [what each step returned, $STANDIN_GE_LOG's lines so far].
LIFE = """
import atexit, json, os, sys
atexit.register(lambda: open(os.environ["STANDIN_GE_LOG"], "a").write("python exit" + chr(10)))   # runs last
from prmg_cli.cases.loader import parse_document
from prmg_cli.device.geir import GeirError, GeirSession
from prmg_cli.device.runners.geir import with_graph_mode
from prmg_cli.device.toolkit import find_toolkit
from prmg_cli.inputs.seeded import make_inputs

toolkit = with_graph_mode(find_toolkit(os.environ), os.environ, "geir")
case = parse_document([{"name": "fp32", "shape": [1, 2, 2, 16], "broadcast": "1S1D", "partial_slice": [2, 14]}],
                      "c.yaml", ".")[0]
log = os.environ["STANDIN_GE_LOG"]
steps = []

def step(fail, what):
    os.environ["STANDIN_GE_FAIL"] = fail
    try:
        steps.append(what())
    except GeirError as error:
        steps.append(str(error))
    steps.append(open(log).read().split(chr(10))[:-1])
    open(log, "w").close()

def one_case(fail):
    with GeirSession(toolkit, 0) as session:
        os.environ["STANDIN_GE_FAIL"] = fail
        outcome = session.launch(case, make_inputs(case))
        return [outcome.status, outcome.phase, outcome.failed_call, outcome.error_message]

for fail in ("initialize", "session", "session_unmade", "", "add", "compile", "run"):
    step(fail, lambda: one_case(fail))
kept = GeirSession(toolkit, 0)          # left open: prmg ends GE at exit (geir._finalize_open)
step("", lambda: GeirSession(toolkit, 1))
print(json.dumps(steps))
sys.stdout.flush()
"""
# A caller of the shim that never finalises (not prmg): the shim's own exit handler ends GE.
UNFINISHED = """
import ctypes, sys
from prmg_cli.device.geir import _Report
assert ctypes.CDLL(sys.argv[1], ctypes.RTLD_GLOBAL).prmg_geir_initialize(0, ctypes.byref(_Report())) == 0
"""


def test_the_shim_ends_ge_on_every_failure_path_and_at_exit(tmp_path, emulator, monkeypatch):
    """The real shim's life of GE in one process, on a stand-in GE failing each step in turn: a GEInitialize that
    fails (having started GE's core, as GE's does when its session manager fails), a session whose constructor
    throws or one GE did not make (its constructor returning as if it had: the shim's probe finds no inner session) is
    reported in the init phase and GE finalised, so that the next session of the process starts afresh;
    AddGraph failing, CompileGraph throwing (reported in the compile phase, not as a crash of the process) and RunGraph
    failing leave no graph behind; each closed session is destroyed before GEFinalize; a process that exits with GE
    still initialised finalises it (the session first: prmg at interpreter exit, the shim's own exit handler for a
    caller that never finalises); another device in the same process is refused."""
    if shutil.which("g++") is None:
        pytest.skip("no g++ on this host to build the stand-in GE and the shim with")
    monkeypatch.delenv("PRMG_GE_INCLUDE", raising=False)
    root = standin_toolkit(tmp_path / "cann", emulator)
    log = tmp_path / "ge.log"
    log.write_text("")
    env = {**os.environ, "ASCEND_HOME_PATH": str(root), "STANDIN_GE_LOG": str(log), "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-c", LIFE], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    steps = json.loads(result.stdout.splitlines()[-1])
    ends = ["~Session", "GEFinalize"]
    assert steps[0] == "prmg_geir_initialize failed: 4294967295 ge::FAILED: stand-in GE: the session manager failed " \
                       "to start" and steps[1] == ["GEInitialize", "GEFinalize"]
    assert steps[2] == "prmg_geir_initialize failed: 4294967295 ge::FAILED: C++ exception: stand-in GE: the session " \
                       "could not be made" and steps[3] == ["GEInitialize", "GEFinalize"]
    assert steps[4] == "prmg_geir_initialize failed: 4294967295 ge::FAILED: GE made no session (its constructor " \
                       "says so only in GE's messages; a RunGraph of no graph found no inner session): stand-in GE: " \
                       "Construct session failed, error code:1343225857" \
        and steps[5] == ["GEInitialize", "Session unmade", *ends]
    steps = steps[:4] + steps[6:]       # the steps after: each session made, its probe leaving no graph behind
    assert steps[4] == [0, "", "", ""] and steps[5] == ["GEInitialize", "Session", "AddGraph 1", "RemoveGraph 1", *ends]
    assert steps[6][:3] == [GE_FAILED, "init", "ge::Session::AddGraph"] and "AddGraph failed" in steps[6][3]
    assert steps[7] == ["GEInitialize", "Session", *ends]
    assert steps[8] == [GE_FAILED, "compile", "ge::Session::CompileGraph",
                        "C++ exception: stand-in GE: CompileGraph threw"]
    assert steps[9] == ["GEInitialize", "Session", "AddGraph 3", "RemoveGraph 3", *ends]
    assert steps[10][:3] == [GE_FAILED, "run", "ge::Session::RunGraph"]
    assert steps[11] == ["GEInitialize", "Session", "AddGraph 4", "RemoveGraph 4", *ends]
    assert steps[12] == "prmg_geir_initialize failed: 145000 ACL_ERROR_GE_PARAM_INVALID: GE is initialised for " \
                        "device 0 in this process, not 1" and steps[13] == ["GEInitialize", "Session"]
    assert log.read_text().splitlines() == [*ends, "python exit"]     # at exit, by prmg: the session, then GE
    log.write_text("")
    library, _ = shim.build_shim(root, env)
    result = subprocess.run([sys.executable, "-c", UNFINISHED, str(library)], env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0 and log.read_text().splitlines() == ["GEInitialize", "Session", *ends], result.stderr
    shutil.rmtree(library.parent)                                      # a build for this test's toolkit only
    library.parent.with_name(f"{library.parent.name}.lock").unlink()


def test_without_ges_headers_graph_mode_is_refused_in_one_line_and_doctor_says_why(tmp_path, emulator, capsys,
                                                                                     monkeypatch):
    """A toolkit without GE (here the emulator's libraries, unmarked: a toolkit prmg did not build), run by name
    (``--runner emulator-geir``), is exit 2 in one line saying what graph mode needs, and ``prmg doctor`` says graph
    mode is not available and why. ``--runner geir`` and ``aclnn+geir`` refuse such a copy as auto does (issue 32,
    item 1: they ran it, exit 0 with a stderr line), whatever GE it has."""
    root = tmp_path / "cann"
    shutil.copytree(emulator.root, root, ignore=shutil.ignore_patterns("PRMG_EMULATOR"))
    monkeypatch.setenv("ASCEND_HOME_PATH", str(root))
    for runner, by_name in (("geir", "emulator-geir"), ("aclnn+geir", "emulator+geir")):  # each suggests its own
        code, _, err = run_in_process(capsys, monkeypatch, "run", small_cases(tmp_path), "--runner", runner)
        assert code == 2 and err.count("\n") == 1 and err.endswith(f"--runner {by_name}\n") and err.startswith(
            f"prmg: error: --runner {runner} runs a CANN toolkit, never the host emulator installed as one, and the "
            f"toolkit found at {root} is the emulator ({root}/lib64/libascendcl.so defines prmg_emu_"), err
    for runner in ("emulator-geir", "emulator+geir"):                          # graph mode's runners by name
        code, _, err = run_in_process(capsys, monkeypatch, "run", small_cases(tmp_path), "--runner", runner)
        assert code == 2 and err.count("\n") == 1
        assert err.startswith(f"prmg: error: graph mode is not available on the toolkit at {root}: it needs GE's "
                              f"headers (no ge/ge_api.h in {root}/include, {root}/compiler/include")
    code, out, _ = run_in_process(capsys, monkeypatch, "doctor", "--runner", "geir")
    assert code == 1 and "graph mode (--runner geir, aclnn+geir, emulator-geir, emulator+geir):\n  NOT available: " \
        "graph mode is not available" in out                    # the header names every graph runner
    code, out, _ = run_in_process(capsys, monkeypatch, "doctor")     # graph mode is said, not needed; auto refuses
    assert code == 1 and "NOT available" in out and "auto never runs it in a toolkit's place" in out  # the copy
    monkeypatch.delenv("ASCEND_HOME_PATH")
    code, _, err = run_in_process(capsys, monkeypatch, "bench", small_cases(tmp_path), "--runner", "geir")
    assert code == 2 and "prmg bench times the aclnn launch" in err  # graph mode has no kernel time of its own


# --- the twin and the runners -------------------------------------------------------------------------------

def test_the_twin_lives_as_the_shim_in_one_process(graph):
    """The emulator's twin gives GE the shim's life: a device the runtime refuses fails the init phase leaving nothing
    held (device 0 then opens), another device than the open session's is refused, a closed session leaves the
    device as it found it and the process opens a fresh one that runs a case, a run with none open is
    ACL_ERROR_GE_EXEC_NOT_INIT in the init phase, and finalising twice does nothing."""
    from prmg_cli.device.geir import PHASES, _Call, _Report

    current = ctypes.CDLL(str(graph.runtime_lib)).prmg_emu_current_device
    before = current()                  # -1 in a fresh process; another test's aclnn session may have set one
    with pytest.raises(GeirError, match=r"prmg_geir_initialize failed: \d+ \w+: ge.exec.deviceId 99: aclrtSetDevice: "
                                        r"invalid device id 99"):
        GeirSession(graph, 99)
    case = parse_document([{"name": "c", "shape": [1, 1, 2, 16], "partial_slice": [0, 16]}], "c.yaml", ROOT)[0]
    for _ in range(2):
        with GeirSession(graph, 0) as session:
            assert current() == 0
            with pytest.raises(GeirError, match="GE is initialised for device 0 in this process, not 1"):
                GeirSession(graph, 1)
            assert session.launch(case, make_inputs(case)).status == 0
        assert current() == before
    report = _Report()
    assert session._library.prmg_geir_run(ctypes.byref(_Call()), ctypes.byref(report)) == GE_EXEC_NOT_INIT
    assert PHASES[report.phase] == "init" and session._library.prmg_geir_finalize(ctypes.byref(report)) == 0


def test_the_twin_refuses_an_ir_it_does_not_declare_in_the_build_phase(graph):
    """The forward's IR once named its mode attribute ``mode``: set by that name, GE would add an unknown attribute and
    run the IR's default; the shim (and the twin) refuse it while building the graph."""
    case = parse_document([{"name": "f", "op": "forward", "shape": [1, 1, 2, 8]}], "f.yaml", ROOT)[0]
    old = replace(OPERATORS["forward"].graph, mode_attr="mode")
    with GeirSession(graph, 0) as session:
        ok = session.launch(case, make_inputs(case))
        specs = dict(OPERATORS)
        try:
            OPERATORS["forward"] = replace(OPERATORS["forward"], graph=old)
            refused = session.launch(case, make_inputs(case))
        finally:
            OPERATORS.update(specs)
    assert ok.status == 0 and ok.path == "geir" and not ok.contract_violations
    assert (refused.status, refused.phase, refused.failed_call) == \
        (GRAPH_INVALID_IR_DEF, "build", "ge::Operator::GetAllIrAttrNamesAndTypes")
    assert "declares no attribute mode" in refused.error_message


def test_the_twin_refuses_an_attribute_set_as_another_type_than_its_ir_declares(graph):
    """The grad's attributes set under each other's name (rotary_mode's int64 as partial_slice, the list as
    rotary_mode): the shim refuses each name whose IR type (VT_LIST_INT, VT_INT) is not what it sets, as the stand-in
    GE's test shows for an IR declaring rotary_mode as another type; the twin did not look at which of the two names
    each value went to, and ran the case."""
    case = parse_document([{"name": "g", "shape": [1, 1, 2, 8]}], "g.yaml", ROOT)[0]
    swapped = replace(OPERATORS["grad"].graph, mode_attr="partial_slice", slice_attr="rotary_mode")
    specs = dict(OPERATORS)
    with GeirSession(graph, 0) as session:
        try:
            OPERATORS["grad"] = replace(OPERATORS["grad"], graph=swapped)
            refused = session.launch(case, make_inputs(case))
        finally:
            OPERATORS.update(specs)
    assert (refused.status, refused.phase, refused.failed_call) == \
        (GRAPH_INVALID_IR_DEF, "build", "ge::Operator::GetAllIrAttrNamesAndTypes")
    assert "declares attribute partial_slice as VT_LIST_INT, not VT_INT" in refused.error_message


class SliceRecorder:
    """Graph mode's library, recording the partial_slice each call hands it (None: a NULL pointer)."""

    def __init__(self, library):
        self.library, self.slices = library, []

    def __getattr__(self, name):
        return getattr(self.library, name)

    def prmg_geir_run(self, call, report):
        fields = call._obj
        self.slices.append(list(fields.partial_slice[:fields.slice_count]) if fields.partial_slice else None)
        return self.library.prmg_geir_run(call, report)


def test_the_graph_gets_the_slice_list_as_written_and_a_null_one_leaves_the_attribute_unset(graph):
    """The partial_slice attribute is the list the aclnn path passes as partialSlice: three values as three, and a
    null partialSlice leaves the attribute unset, so that the IR's default {0, 0} applies (as the generated aclnn
    layer applies the op definition's), which the twin does; both paths agree on each."""
    cases = parse_document([
        {"name": "three", "shape": [2, 2, 2, 16], "cos_shape": [1, 2, 1, 8], "partial_slice": [4, 12, 99]},
        {"name": "null", "shape": [2, 2, 2, 16], "cos_shape": [1, 2, 1, 1], "null": ["partial_slice"]},
        {"name": "two", "shape": [1, 1, 2, 8], "partial_slice": [2, 6]}], "s.yaml", ROOT)
    settings = execute.RunSettings(toolkit=replace(graph, calls="aclnn+geir"))
    with PairSession(settings.toolkit, 0) as both:
        both.geir._library = recorder = SliceRecorder(both.geir._library)
        results = [execute.run_case(both, case, settings)[0] for case in cases]
    assert recorder.slices == [[4, 12, 99], None, [2, 6]]
    agreed = ("passed", {"aclnn": "passed", "geir": "passed"})
    assert [(result.status, result.paths) for result in results] == [agreed] * 3


def test_negative_cases_meet_their_graph_expectations_and_both_paths_agree(graph):
    """Every shipped negative case through graph mode (the twin) as the constraint model says GE answers it (its
    phase and GE's code), and through both paths, which must agree; a slice list of no or one value, which graph
    mode's tiling reads on past its end into GE's ComputeNodeInfo ([2^32, 0), [v, 2^32)), is the slice range's
    refusal at compile (the paths differ by design for a list of none; one value both read alike); a strided tensor
    has no graph form, nor a dy without elements whose tiling refuses it, each skipped saying why."""
    cases = load_cases([ROOT / "cases" / "negative.yaml"])
    settings = execute.RunSettings(toolkit=graph)
    pair = replace(graph, calls="aclnn+geir")
    with GeirSession(graph, 0) as alone, PairSession(pair, 0) as both:
        for case in cases:
            expected = graph_case(case, settings.supported_modes)
            single, _ = execute.run_case(alone, case, settings)
            combined, _ = execute.run_case(both, case, replace(settings, toolkit=pair))
            assert single.status in ("passed", "xfailed", "skipped"), (case.name, single.message)
            assert combined.status in ("passed", "xfailed"), (case.name, combined.message)
            assert single.path == "geir" and combined.path == "aclnn+geir" and set(combined.paths) == {"aclnn", "geir"}
            if isinstance(expected, str):                 # why: the rule's own reason (a strided tensor, a short list)
                strided = any(case.strides_of(tensor) is not None for tensor in ("dy", "cos", "sin"))
                why, wrong = ("GE's tensors are dense", "list") if strided else ("no certain answer", "dense")
                assert single.status == "skipped" and why in single.message and wrong not in single.message
            elif not case.known_defect and not case.expect.success:
                assert expected.expect.phase == "compile" and single.error_code == expected.expect.error
    codes = {graph_case(case, settings.supported_modes).expect.error for case in cases
             if not isinstance(graph_case(case, settings.supported_modes), str)}
    short = [graph_case(case, settings.supported_modes) for case in cases if case.slice_list in ((), (4,))]
    assert [(judged.expect, judged.partial_slice) for judged in short] == \
        [(Expect(GE_COMPILE_REFUSED, "compile"), (1 << 32, 0)), (Expect(GE_COMPILE_REFUSED, "compile"), (0, 0))]
    assert codes - {None, "any"} == {GE_COMPILE_REFUSED}       # GE's CompileGraph: one status for every refusal


def test_graph_mode_judges_a_case_by_its_chips_rules(graph, monkeypatch):
    """On an A2 the forward's graph reads a partial_slice of none as [0, D) and then meets the membase tiling's rules
    (cos's B must be x's): cover.forward.error.slice_list_empty, read so, is refused where the 950's graph rotates
    it. Graph mode's expectation is the chip's (``graph_case`` with the chip): main expected the 950's success on
    every chip, and the twin playing an A2 failed the case (GE's refusal judged wrong). A list of one value the
    membase tiling refuses for its length, in a graph as on the aclnn path: {2^32}, which the 950 reads as the empty
    [2^32, 2^32), main's model and twin read so on an A2 too (a no-op, passed) and the two paths were not compared."""
    from prmg_cli.ops.targets import Target

    cases = [next(case for case in load_cases([ROOT / "cases" / "cover.yaml"])
                  if case.name == "cover.forward.error.slice_list_empty"),
             parse_document([{"name": "one", "op": "forward", "shape": [1, 2, 2, 8], "partial_slice": [1 << 32],
                              "expect": {"error": 561002}}], "t.yaml", ROOT)[0]]
    today = frozenset({1})
    on_a2 = graph_case(cases[0], today, "ascend910b").expect
    assert graph_case(cases[0], today).expect.success and (on_a2.error, on_a2.phase) == (GE_COMPILE_REFUSED, "compile")
    assert graph_case(cases[1], today, "ascend910b").expect == Expect(GE_COMPILE_REFUSED, "compile")
    monkeypatch.setenv("PRMG_EMU_SOC", "Ascend910B2")
    settings = execute.RunSettings(toolkit=graph)
    with GeirSession(graph, 0) as session:
        results = [execute.run_case(session, case, settings, Target(session.soc_name()))[0] for case in cases]
    assert [(result.status, result.error_code) for result in results] == [("passed", GE_COMPILE_REFUSED)] * 2


def test_graph_mode_reads_device_memory_around_each_case_and_strict_fails_a_leak(tmp_path):
    """Issue 32's device-memory check in graph mode (one rule, ``execute.leak_warning``, fed by both sessions): a
    kernel leaking 256 MiB per launch (the emulator's leak_device_memory, acting through the twin's launch) is a
    warning of every case under --runner geir, named by its path under aclnn+geir, and --strict fails it; a correct
    run warns of nothing (GE's cache of the graphs' tensors is counted as held, not lost)."""
    path = tmp_path / "two.yaml"
    path.write_text("".join(f"- {{name: c{n}, shape: [1, 2, {n}, 8], partial_slice: [0, 8]}}\n" for n in (1, 2)))
    leak = ("device memory: 256 MiB fewer free after the case than before it, beyond prmg's own buffers: 256 MiB per "
            "launch over 1 launch (a case may leave 64 MiB): the kernel or the runtime leaks device memory")
    env = {"PRMG_EMU_FAULT": "leak_device_memory", "PRMG_EMU_DEVICE_MEMORY": "2G"}

    def run(runner, *options, fault=env):
        result = prmg_here("run", path, "--runner", runner, "--report", "json", *options, env=fault)
        return result.returncode, json.loads(result.stdout)["cases"]

    code, cases = run("geir", "--results", tmp_path / "leak.jsonl")
    assert code == 0 and [(case["status"], case["warnings"]) for case in cases] == [("passed", [leak])] * 2
    for strict in ((), ("--strict",)):                  # session 17: prmg report --strict fails it as run's does
        merged = prmg_here("report", tmp_path / "leak.jsonl", *strict, "--report", "json")
        assert merged.returncode == len(strict) and [case["message"] for case in json.loads(merged.stdout)[
            "cases"]] == [f"--strict: {leak}" if strict else ""] * 2, merged.stderr
    code, cases = run("geir", "--strict")
    assert code == 1 and [case["message"] for case in cases] == [f"--strict: {leak}"] * 2
    code, cases = run("aclnn+geir", "--strict")
    assert code == 1 and {case["status"] for case in cases} == {"failed"}
    assert cases[0]["warnings"] == [f"aclnn: {leak}", f"geir: {leak}"]
    for runner in ("geir", "aclnn+geir"):
        code, cases = run(runner, "--strict", fault={"PRMG_EMU_DEVICE_MEMORY": "2G"})
        assert code == 0 and [case["warnings"] for case in cases] == [[], []]
    mib = 2 ** 20                 # GE's cache grown to fit a graph (held 0 -> 300 MiB) is no leak, the rest is
    assert execute.leak_warning((4096 * mib, 0), (3796 * mib, 300 * mib), 1) == ""
    assert "100 MiB per launch" in execute.leak_warning((4096 * mib, 0), (3696 * mib, 300 * mib), 1)


@pytest.mark.verdict
def test_the_leak_rule_lets_a_case_leave_exactly_its_bound():
    """``execute.leak_warning``: device memory lost beyond prmg's own buffers warns (so --strict fails it) past
    ``LEAK_BOUND``, not at it; GE's or prmg's own growth (held) is not lost."""
    bound = execute.LEAK_BOUND
    assert execute.leak_warning((10 * bound, 0), (9 * bound, 0), 1) == ""
    assert "per launch" in execute.leak_warning((10 * bound, 0), (9 * bound - 1, 0), 1)
    assert execute.leak_warning((10 * bound, 0), (8 * bound, bound), 2) == ""
    assert execute.leak_warning(None, (0, 0), 1) == execute.leak_warning((0, 0), None, 1) == ""


def outcome(status=0, dy=None, **fields):
    return Outcome(status, "call" if status else "", "why" if status else "", dy, **fields)


@pytest.mark.verdict
def test_the_differential_fails_any_byte_and_any_refusal_of_another_kind():
    case = parse_document([{"name": "c", "shape": [1, 1, 1, 4], "partial_slice": [0, 4]}], "c.yaml", ROOT)[0]
    inputs = make_inputs(case)
    result = execute.case_result(case, "passed", standard="default")
    same = OPERATORS["grad"].golden(inputs.dy, inputs.cos, inputs.sin, case.rotary_mode, case.partial_slice)
    other = same.copy()
    other[0, 0, 0, 3] = np.nextafter(other[0, 0, 0, 3], np.float32(9))
    first = ("aclnn", result, outcome(dy=same))
    assert disagreement(case, inputs, first, ("geir", result, outcome(dy=same.copy()))) == ""
    text = disagreement(case, inputs, first, ("geir", result, outcome(dy=other)))
    bits = [f"{float(v[0, 0, 0, 3]):.9g} (0x{int(v.view(np.uint32)[0, 0, 0, 3]):08x})" for v in (same, other)]
    assert text == (f"aclnn and geir results differ in 1 element of 4 (first at (0, 0, 0, 3): aclnn {bits[0]}, geir "
                    f"{bits[1]}, the golden {bits[0]}); both are within the default standard of the golden; aclnn "
                    f"is nearer the golden at 1 of them, geir at 0")     # within the standard, one is still nearer
    swapped = disagreement(case, inputs, ("aclnn", result, outcome(dy=other)), ("geir", result, outcome(dy=same)))
    assert swapped.endswith("; geir is nearer the golden at 1 of them, aclnn at 0")
    refusals = [("aclnn", result, outcome(161002)), ("geir", result, outcome(GE_FAILED, path="geir"))]
    text = disagreement(case, inputs, *refusals)
    assert text == ("aclnn and geir refused the case for different reasons: aclnn 161002 ACLNN_ERR_PARAM_INVALID "
                    "(the operator's definition), geir 4294967295 ge::FAILED (the tiling)")
    failed = combine(case, inputs, refusals)
    assert failed.status == "failed" and failed.path == "aclnn+geir" and failed.message == text
    # GE's CompileGraph refuses in one status whatever refused (status.GE_COMPILE_REFUSED): it agrees with any refusal
    # of the aclnn first phase, not with the launch's
    compiled = ("geir", result, outcome(GE_COMPILE_REFUSED, path="geir"))
    agreed = [disagreement(case, inputs, ("aclnn", result, outcome(code)), compiled)
              for code in (161001, 161002, 561002)]
    assert agreed == [""] * 3
    assert "(the launch), geir 1343225857 ge::PARAM_INVALID (the graph's compile)" in \
        disagreement(case, inputs, ("aclnn", result, outcome(561000)), compiled)
    skipped = execute.case_result(case, "skipped", message="no graph form")
    kept = combine(case, inputs, [first, ("geir", skipped, None)])
    assert kept.status == "passed" and kept.paths == {"aclnn": "passed", "geir": "skipped: no graph form"}


def test_the_graph_output_must_have_dys_shape_dtype_and_size():
    """The ref output's contract on the host (InferShape: dy's shape, dtype and size), whatever GE returned."""
    from prmg_cli.device.geir import _HostBuffer, _Report

    case = parse_document([{"name": "c", "shape": [1, 1, 2, 4], "partial_slice": [0, 4]}], "c.yaml", ROOT)[0]
    output = _HostBuffer("graph output dy", None, 32)
    report = _Report(output_bytes=32, output_data_type=0, output_dim_count=4)
    report.output_dims[:4] = (1, 1, 2, 4)
    assert GeirSession._output_problems(case, report, output) == []
    report.output_dims[:4], report.output_data_type, report.output_bytes = (1, 2, 1, 4), 1, 16
    assert GeirSession._output_problems(case, report, output) == [
        "graph output dy has shape [1, 2, 1, 4] and dtype 1, not dy's [1, 1, 2, 4] and 0 (InferShape)",
        "graph output dy is 16 bytes, not dy's 32"]


def test_the_kernels_own_bugs_are_judged_on_graph_modes_host_tensors(graph, monkeypatch):
    """The twin launches the aclnn path's kernel: its write outside the slice is seen in the ref output graph mode
    hands back (the outside-slice contract on the host tensors), and a correct kernel passes."""
    from prmg_cli.judging.judge import judge

    case = parse_document([{"name": "c", "shape": [1, 2, 2, 16], "partial_slice": [2, 14]}], "c.yaml", ROOT)[0]
    inputs = make_inputs(case)
    with GeirSession(graph, 0) as session:
        assert judge(case, inputs, session.launch(case, inputs)).status == "passed"
        monkeypatch.setenv("PRMG_EMU_FAULT", "clobber_passthrough")
        outcome = session.launch(case, inputs)
    verdict = judge(case, inputs, outcome)
    assert outcome.path == "geir" and outcome.faults == ("clobber_passthrough",)
    assert verdict.status == "failed" and verdict.message.startswith("outside the slice at d=")


def test_an_aclnn_only_bug_is_named_as_the_aclnn_paths(tmp_path):
    """The mirror of the dropped slice: a bug only the aclnn path has (the kernel ignoring the storage offsets of
    views, which graph mode's dense host tensors never have: the emulator's ignore_offset) fails the case under
    aclnn+geir naming the aclnn path as the one that disagrees with the golden, graph mode's verdict passed."""
    path = tmp_path / "offsets.yaml"
    path.write_text("- {name: views, shape: [1, 1, 2, 8], partial_slice: [2, 6], dy_offset: 5, cos_offset: 3}\n")
    result = prmg_here("run", path, "--runner", "aclnn+geir", "--report", "json",
                       env={"PRMG_EMU_FAULT": "ignore_offset"})
    case = json.loads(result.stdout)["cases"][0]
    assert result.returncode == 1 and case["status"] == "failed" and case["paths"]["geir"] == "passed"
    assert "; aclnn disagrees with the golden: " in case["message"] and "geir (graph mode) disagrees" not in \
        case["message"] and case["paths"]["aclnn"].startswith("failed")


def test_done_when_smoke_and_every_shipped_case_through_graph_mode(tmp_path):
    """Issue 35's "Done when", as written: cases/smoke.yaml green through --runner geir and aclnn+geir, every case of
    cases/ green through aclnn+geir (each path judged alone, then both compared), and with graph mode's slice dropped
    smoke.yaml's aclnn+geir run exits 1 naming graph mode, --save-failures keeping its failures under geir/ only."""
    smoke = ROOT / "cases" / "smoke.yaml"
    for path, runner in ((smoke, "geir"), (smoke, "aclnn+geir"), (ROOT / "cases", "aclnn+geir")):
        result = prmg_here("run", path, "--runner", runner, "--report", "json")
        summary = json.loads(result.stdout)["summary"]
        assert result.returncode == 0 and summary["passed"] + summary["skipped"] + summary["xfailed"] == \
            summary["total"] and summary["passed"] >= 34, (runner, path, summary)
    saved = tmp_path / "failures"
    result = prmg_here("run", smoke, "--runner", "aclnn+geir", "--save-failures", saved,
                       env={"PRMG_EMU_FAULT": "geir_slice_dropped"})
    assert result.returncode == 1 and "; geir (graph mode) disagrees with the golden: " in result.stdout
    assert (saved / "geir" / "smoke.worked_example" / "actual.npy").is_file() and not (saved / "aclnn").exists()


def test_the_differential_on_the_emulator_by_name_where_a_toolkit_is_named(tmp_path):
    """A CI host whose environment names a toolkit (here one that cannot serve: ASCEND_HOME_PATH at no folder) and
    no NPU: --runner aclnn+geir refuses in one line, suggesting emulator+geir (not emulator, which would drop graph
    mode); --runner emulator+geir runs both paths on the host emulator by name, each result naming both verdicts,
    and a graph-only bug (the twin's dropped slice) exits 1 naming graph mode, as under aclnn+geir."""
    env = {"ASCEND_HOME_PATH": str(tmp_path / "Ascend-typo")}
    path = small_cases(tmp_path)
    refused = prmg_here("run", path, "--runner", "aclnn+geir", env=env)
    assert refused.returncode == 2 and refused.stderr.startswith("prmg: error: --runner aclnn+geir: a CANN toolkit is "
                                                                 "meant here (ASCEND_HOME_PATH=") and \
        refused.stderr.endswith("ask for the host emulator with --runner emulator+geir\n"), refused.stderr
    result = prmg_here("run", path, "--runner", "emulator+geir", "--report", "json", env=env)
    report = json.loads(result.stdout)
    assert result.returncode == 0 and [(c["name"], c["status"], c["path"], sorted(c["paths"])) for c in
                                       report["cases"]] == [(name, "passed", "aclnn+geir", ["aclnn", "geir"])
                                                            for name in ("fp32", "bf16", "null_sin")], result.stderr
    assert report["summary"]["graph_library"].startswith("the emulator's twin of the GE shim")
    faulty = prmg_here("run", path, "--runner", "emulator+geir", env={**env, "PRMG_EMU_FAULT": "geir_slice_dropped"})
    assert faulty.returncode == 1 and "; geir (graph mode) disagrees with the golden: " in faulty.stdout


# What each graph-only fault can change, and so where --runner aclnn+geir must see it: a case graph mode runs to
# success (the output copied past the caller's buffer), one whose result differs from its dy (the slice dropped to the
# IR default {0, 0}, a no-op; the ref output written into the caller's input), one whose tiling runs (the mode dropped
# to the IR default 0, half, which today's target refuses: nnopbase runs no tiling for an empty dy, and the twin none),
# one whose output is not all the kernel's stores (the ref output not aliased with dy: a fresh buffer holding the
# slice's lanes only, so a slice short of D or a no-op).
CHANGES = {
    "geir_output_overrun": lambda case: True,
    "geir_slice_dropped": lambda case: _moves(case),
    "geir_input_written": lambda case: _moves(case),
    "geir_mode_dropped": lambda case: 0 not in case.shape,
    "geir_ref_not_aliased": lambda case: 0 not in case.shape and (not _moves(case) or _short_of_d(case)),
}


def _short_of_d(case) -> bool:
    """Whether ``case``'s slice leaves lanes of dy's last axis outside it."""
    start, end = case.slice_argument()[:2]
    return start > 0 or end < case.shape[-1]


def _moves(case) -> bool:
    """Whether ``case``'s result differs from its dy: a slice of some length, and dy, cos and sin with elements."""
    written = case.slice_argument()
    return bool(written) and written[1] > written[0] and all(0 not in case.shape_of(tensor)
                                                             for tensor in ("dy", "cos", "sin"))


@pytest.mark.parametrize("fault", sorted(CHANGES))
def test_the_differential_catches_each_graph_fault_on_every_class_it_can_change(fault, tmp_path):
    """The cover suite's pass cases (a case for each class) through --runner aclnn+geir with a graph-only fault: every
    one graph mode has a form of, and the fault can change (``CHANGES``), fails; those it cannot change pass, so that
    graph mode's no-ops (an empty slice or tensor) are seen to be where the differential is blind, not a gap."""
    import yaml

    from prmg_cli.cases.loader import case_to_dict

    passing = [case for case in load_cases([ROOT / "cases" / "cover.yaml"]) if case.expect.success]
    cover = tmp_path / "cover_pass.yaml"
    cover.write_text(yaml.safe_dump({"cases": [case_to_dict(case) for case in passing]}, sort_keys=False))
    result = prmg_here("run", cover, "--runner", "aclnn+geir", "--report", "json", env={"PRMG_EMU_FAULT": fault})
    records = {record["name"]: record for record in json.loads(result.stdout)["cases"]}
    reachable = [case for case in passing if case.known_defect is None
                 and not isinstance(graph_case(case, frozenset({1})), str)
                 and records[case.name]["status"] != "skipped"]
    changed = [case.name for case in reachable if CHANGES[fault](case)]
    assert result.returncode == 1 and len(changed) >= (50 if fault == "geir_ref_not_aliased" else 100), \
        (fault, len(changed))       # most cover cases rotate all of D, which an unaliased output holds whole
    assert [name for name in changed if records[name]["status"] not in ("failed", "error")] == [], fault
    unchanged = [case.name for case in reachable if not CHANGES[fault](case)]
    assert all(records[name]["status"] == "passed" for name in unchanged), fault


# The differential held adversarially: twin bugs that change one thing only, each caught and named as graph mode's.
ADVERSARIAL = {
    # the ref output's bytes outside the slice only (its own buffer, the slice's lanes stored right)
    "geir_ref_not_aliased": lambda record: "outside the slice" in record["message"],
    # an expected refusal's phase only (the same GE status, from RunGraph instead of CompileGraph)
    "geir_refusal_at_run": lambda record: record["expect"] != "pass" and "in the run phase" in record["message"],
    # the forward's graphs only (its sin's signs flipped): no grad case fails
    "geir_fwd_sin_negated": lambda record: record["op"] == "forward",
}
NAMED = ("geir (graph mode) disagrees with the golden", "geir: ")   # a result compared, or one read otherwise by design


@pytest.mark.parametrize("fault", sorted(ADVERSARIAL))
def test_the_differential_names_graph_mode_for_a_twin_bug_that_changes_one_thing(fault):
    """cover.yaml through --runner aclnn+geir under a twin bug that changes only the bytes outside the slice, only an
    expected error's phase, or only the forward: exit 1, every failed case failed by graph mode alone (the aclnn
    path's own verdict passed) and for that reason, and the cases the bug cannot reach pass."""
    result = prmg_here("run", ROOT / "cases" / "cover.yaml", "--runner", "aclnn+geir", "--report", "json",
                       env={"PRMG_EMU_FAULT": fault})
    records = json.loads(result.stdout)["cases"]
    failed = [record for record in records if record["status"] in ("failed", "error")]
    assert result.returncode == 1 and len(failed) >= 10, (fault, len(failed))
    assert all(record["paths"]["aclnn"].startswith("passed") and record["paths"]["geir"].startswith("failed")
               and ADVERSARIAL[fault](record) and any(name in record["message"] for name in NAMED)
               for record in failed), [r["message"] for r in failed][:3]
    assert any(record["op"] == "grad" and record["status"] == "passed" for record in records)
    if fault == "geir_refusal_at_run":      # a build-dependent case too: GE's run phase is no build's answer
        assert {r["name"]: r["status"] for r in records}["cover.grad.error.empty_slice_past_D"] == "failed"
