"""The pytest plugin (`pytest --prmg`), the NPU smoke script, and installing from a clean tree."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from conftest import PYTEST, ROOT, forked_pytest
from prmg_cli.device.toolkit import EMULATOR_FALLBACK

CASES = """
- {name: p_ok_fp32, shape: [1, 2, 2, 32], cos_shape: [1, 2, 1, 16], partial_slice: [3, 19]}
- {name: p_ok_bf16, shape: [1, 2, 2, 32], cos_shape: [1, 1, 1, 32], partial_slice: [0, 32], dtype: bfloat16}
- {name: p_neg, shape: [1, 1, 1, 16], cos_shape: [1, 1, 1, 7], partial_slice: [0, 7],
   expect: {error: ACLNN_ERR_INNER_TILING_ERROR}}
- {name: p_skip, shape: [1, 1, 1, 16], cos_shape: [1, 1, 1, 16], partial_slice: [0, 16], rotary_mode: quarter}
"""


def pytest_run(tmp_path, *args, env=None):
    """The plugin's session on CASES, forked from the tests' fork server (``forked_pytest``); one that preloads a
    library (``LD_*``, read as a process starts) is a process of its own."""
    cases = tmp_path / "cases.yaml"
    cases.write_text(CASES)
    env = {"PYTHONPATH": str(ROOT), **(env or {})}                        # this tree's plugin (make mutate's copy)
    argv = ("--prmg", str(cases), "--prmg-runner", "emulator", *map(str, args))
    if not any(name.startswith("LD_") for name in env):
        return forked_pytest(*argv, env=env, cwd=tmp_path)
    return subprocess.run([*PYTEST, *argv], cwd=tmp_path, env={**os.environ, **env}, capture_output=True, text=True,
                          timeout=300)


def test_the_plugin_refuses_the_emulator_installed_as_a_toolkit_as_prmg_run_does(tmp_path, emulator):
    """pytest --prmg --prmg-runner aclnn on a copy of the emulator where the toolkit belongs (an image built to run
    without an NPU, reused on an NPU host) was a green session: it ends in prmg run's line, exit 2, before any item;
    under auto (the plugin's default) alike; --prmg-runner emulator runs that copy, the header naming the emulator."""
    kit = tmp_path / "Ascend/ascend-toolkit/latest"
    shutil.copytree(emulator.root, kit, ignore=shutil.ignore_patterns("PRMG_EMULATOR"))
    refused = pytest_run(tmp_path, "-k", "p_ok_fp32", "--prmg-runner", "aclnn", env={"ASCEND_HOME_PATH": str(kit)})
    assert refused.returncode == 2 and "passed" not in refused.stdout, refused.stdout + refused.stderr
    assert f"prmg: error: --prmg-runner aclnn runs a CANN toolkit, never the host emulator installed as one, and the " \
           f"toolkit found at {kit} is the emulator ({kit}/lib64/libascendcl.so defines prmg_emu_initialized" in \
           " ".join((refused.stdout + refused.stderr).split()), refused.stdout + refused.stderr
    auto = pytest_run(tmp_path, "-k", "p_ok_fp32", "--prmg-runner", "auto", env={"ASCEND_HOME_PATH": str(kit)})
    assert auto.returncode == 2 and "passed" not in auto.stdout, auto.stdout + auto.stderr
    assert f"prmg: error: --prmg-runner auto runs a CANN toolkit, never the host emulator installed as one" in \
           " ".join((auto.stdout + auto.stderr).split()), auto.stdout + auto.stderr
    asked = pytest_run(tmp_path, "-k", "p_ok_fp32", "--prmg-runner", "emulator", env={"ASCEND_HOME_PATH": str(kit)})
    assert asked.returncode == 0 and f"prmg runner: emulator (host build at {kit})" in asked.stdout, asked.stdout


def test_the_plugins_header_names_a_preloaded_library_and_what_it_takes_as_prmg_run_does(tmp_path):
    """A pytest --prmg session with a library preloaded that takes the toolkit's calls (a tracer's hook; an rtld-audit
    library) ran green without a word of it (prmg run's header names it and warns): the session's header names each
    preloaded library and what it takes, and warns, as prmg run does."""
    from test_toolkit import AUDIT_SOURCE, BOUND_AMONG, HOOK_SOURCE, _library

    (tmp_path / "hook.c").write_text(HOOK_SOURCE)
    (tmp_path / "audit.c").write_text(AUDIT_SOURCE)
    hook = _library(tmp_path / "hook.c", tmp_path / "libhook.so", "-ldl")
    audit = _library(tmp_path / "audit.c", tmp_path / "libaudit.so")
    result = pytest_run(tmp_path, "-k", "p_ok_fp32", "--junitxml", tmp_path / "j.xml",
                        env={"LD_PRELOAD": str(hook), "LD_AUDIT": str(audit)})
    assert result.returncode == 0, result.stdout + result.stderr
    hook_label = f"{hook} (defines 1 of the toolkit's symbols, {BOUND_AMONG}: prmg_emu_device_usable)"
    audit_label = f"{audit} (an audit library: rebinds calls through la_symbind64)"
    assert f"\nprmg preloaded: {hook_label}\nprmg preloaded: {audit_label}\n" in result.stdout, result.stdout
    assert f"\nprmg warning: a preloaded library takes calls meant for the toolkit: {audit_label}: the cases may " \
           f"not run the toolkit's code; a preloaded library defines symbols of the toolkit: {hook_label}: " \
           in result.stdout
    suite = ET.parse(tmp_path / "j.xml").getroot().find("testsuite")
    assert suite.find("properties/property[@name='prmg preloaded']").get("value") == f"{hook_label}; {audit_label}"


def test_plugin_collects_cases_as_items_with_verdicts(tmp_path):
    """... and the session's header names the runner (no fault line when none is named). While the session runs,
    the --junitxml file holds a session not finished (a conftest here copies it as the items start): pytest writes
    its file at the end only, so a session killed (SIGKILL, a CI timeout) left an earlier green one in its place."""
    (tmp_path / "j.xml").write_text('<testsuites tests="9" failures="0"><testsuite name="stale"/></testsuites>')
    (tmp_path / "conftest.py").write_text("import shutil\n\ndef pytest_collection_finish(session):\n"
                                          "    shutil.copy('j.xml', 'while.xml')\n")
    result = pytest_run(tmp_path, "--junitxml", str(tmp_path / "j.xml"))
    assert result.returncode == 0, result.stdout + result.stderr
    unfinished = ET.parse(tmp_path / "while.xml").getroot().find("testsuite")
    assert unfinished.get("errors") == "1" and "this pytest session (started " in \
        unfinished.find("testcase/error").get("message")
    assert "3 passed, 1 skipped" in result.stdout
    assert "\nprmg runner: emulator (host build at " in result.stdout and "FAULTS" not in result.stdout
    suite = ET.parse(tmp_path / "j.xml").getroot().find("testsuite")
    names = sorted(case.get("name") for case in suite.iter("testcase"))
    assert names == ["p_neg", "p_ok_bf16", "p_ok_fp32", "p_skip"]
    # the JUnit file says the emulator ran them (it said nothing of it): suite name, property, each case's record
    assert suite.get("name") == "prmg (host emulator, not an NPU)"
    assert suite.find("properties/property[@name='prmg runner']").get("value").startswith("emulator (host build at ")
    assert {case.get("name"): json.loads(case.find("properties/property[@name='prmg_result']").get("value"))["runner"]
            for case in suite.iter("testcase")} == {"p_neg": "emulator", "p_ok_bf16": "emulator",
                                                    "p_ok_fp32": "emulator", "p_skip": ""}   # p_skip never ran


def test_plugin_failures_carry_the_diagnosis(tmp_path):
    """... and the session's header names the faults injected into the emulator."""
    result = pytest_run(tmp_path, "-k", "p_ok", env={"PRMG_EMU_FAULT": "write_past_end"})
    assert result.returncode == 1
    assert "\nprmg FAULTS NAMED: write_past_end (PRMG_EMU_FAULT): this run tests prmg" in result.stdout
    assert "2 failed" in result.stdout
    assert "guard zone after dy changed" in result.stdout


def test_plugin_supported_modes_and_xdist(tmp_path):
    """... through both call paths (the aclnn API and graph mode, held against each other: issue 35)."""
    result = pytest_run(tmp_path, "-q", "-n", "2", "--prmg-supported-modes", "0,1,2,3", "--prmg-runner", "aclnn+geir")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 passed" in result.stdout      # session 18: -q shows no header, and said nothing of the emulator
    assert "\nprmg runner: emulator (host build at " in result.stdout and "not an NPU" in result.stdout, result.stdout


def test_plugin_device_lists_are_usage_errors_not_a_failure_per_item(tmp_path):
    """A malformed --prmg-devices (checked before the toolkit, as prmg run's --devices) or an id the runtime lacks
    failed every item with PrmgError's text, exit 1; now the session ends in prmg run's one line, exit 2."""
    for devices, said in (("0,x", "--prmg-devices must be a comma-separated list"), ("7", "no device 7")):
        result = pytest_run(tmp_path, "--prmg-devices", devices)
        assert result.returncode == 2 and "prmg: error: " in result.stdout + result.stderr, result.stdout
        assert said in result.stdout + result.stderr and "failed" not in result.stdout, result.stdout
    # the flags the checks shared with prmg run name are the plugin's; a bad mode list ends the session in that
    # line too (it was a collection error per file naming --supported-modes, a runner's named --runner)
    for option, value, said in (("--prmg-supported-modes", "9", "prmg: error: --prmg-supported-modes: unknown mode"),
                                ("--prmg-runner", "bogus", "prmg: error: --prmg-runner 'bogus': choose one of"),
                                # checked while collecting: pytest's collector took the session's end for a crash
                                ("--prmg-timeout", "-1", "prmg: error: --prmg-timeout must be a finite number"),
                                ("--prmg-op-lib", "", "prmg: error: --prmg-op-lib: an empty path")):
        result = pytest_run(tmp_path, option, value)
        assert result.returncode == 2 and said in result.stdout + result.stderr, result.stdout + result.stderr
        assert "INTERNALERROR" not in result.stdout + result.stderr
    # a device that cannot be opened (issue 32, fifth look): each item started the workers again and failed with a
    # traceback; now the session ends in prmg run's line, exit 2, and under xdist (where ending the session from a
    # worker loses the line: 'worker crashed') each item fails with that line, the device tried once per worker
    said = "prmg: error: cannot open the runner: device 0: AclError: aclrtMalloc failed: 200000 ACL_ERROR_BAD_ALLOC"
    for xdist in ((), ("-n", "2")):
        result = pytest_run(tmp_path, "-k", "p_ok", *xdist, env={"PRMG_EMU_DEVICE_MEMORY": "1024"})
        assert result.returncode == (1 if xdist else 2) and said in result.stdout + result.stderr, result.stdout
        assert "Traceback" not in result.stdout and "crashed" not in result.stdout, result.stdout
        assert ("2 failed" in result.stdout) == bool(xdist), result.stdout


def test_plugin_keeps_tiling_siblings_on_one_xdist_worker_under_loadgroup(tmp_path):
    """tiling_cache lives in one process: with three xdist workers each of the three edge.same_shapes_slice_* items ran
    in a worker of its own and the session was green. The plugin puts tiling siblings in one xdist group, so that
    --dist loadgroup runs them in one worker (the end lines name the cases without xdist's group suffix)."""
    result = forked_pytest("-q", "--prmg", ROOT / "cases" / "edge.yaml", "-k", "same_shapes_slice", "--prmg-runner",
                           "emulator", "-n", "3", "--dist", "loadgroup", cwd=tmp_path,
                           env={"PRMG_EMU_FAULT": "tiling_cache"})
    assert result.returncode == 1 and "2 failed, 1 passed" in result.stdout, result.stdout + result.stderr
    assert "acted on 3 of 3 cases: edge.same_shapes_slice_at_0, edge.same_shapes_slice_at_8, " in result.stdout


RERUN_STAND_IN = """
import pytest
from _pytest.runner import runtestprotocol


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):          # pytest-rerunfailures' --reruns 2, as it reruns an item
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    for attempt in range(3):
        reports = runtestprotocol(item, nextitem=nextitem, log=False)
        if attempt == 2 or not any(report.failed for report in reports):
            break
        for report in reports:
            report.outcome = "rerun" if report.failed else report.outcome
            item.ihook.pytest_runtest_logreport(report=report)
    for report in reports:
        item.ihook.pytest_runtest_logreport(report=report)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True
"""


def test_plugin_fails_a_case_a_rerun_plugin_runs_again(tmp_path):
    """Issue 32 (sixth look): under pytest-rerunfailures' --reruns (or flaky), often in a CI's addopts, a kernel
    leaking 256 MiB of device memory a launch failed its fourth case (no memory left for its buffers, larger than the
    kept ones) and passed its rerun in a fresh worker: green. A case runs once; its rerun fails, saying why (a
    stand-in of the rerun plugin is built here)."""
    (tmp_path / "rerun_stand_in.py").write_text(RERUN_STAND_IN)
    (tmp_path / "cases.yaml").write_text("".join(
        f"- {{name: c{seed}, shape: [1, 1, 1, 8], cos_shape: [1, 1, 1, 8], partial_slice: [0, 8], seed: {seed}}}\n"
        for seed in range(3)) + "- {name: c3, shape: [1, 64, 16, 64], cos_shape: [1, 64, 1, 64], "
                                 "partial_slice: [0, 64]}\n")
    result = forked_pytest("-p", "rerun_stand_in", "-q", "-W", "ignore", "--prmg", "cases.yaml", "--prmg-runner",
                           "emulator", cwd=tmp_path,
                           env={"PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)]),       # this tree's
                                "PRMG_EMU_FAULT": "leak_device_memory", "PRMG_EMU_DEVICE_MEMORY": "600M"})
    assert result.returncode == 1 and "1 failed, 3 passed, 2 rerun" in result.stdout, result.stdout + result.stderr
    assert "rerun: this case ran in this session already (error), and a case runs once" in result.stdout
    assert "acted on 3 of 4 cases: c0, c1, c2; 1 case ended without reporting them" in result.stdout


def test_plugin_runs_each_item_on_every_device_it_names(tmp_path):
    """--prmg-devices 0,1 without xdist ran every item on device 0 alone, green with device 1 computing wrong: fewer
    pytest processes than devices is now a usage error, and --prmg-each-device runs every item on each device."""
    env = {"PRMG_EMU_DEVICES": "2", "PRMG_EMU_FAULT": "neg_sin", "PRMG_EMU_FAULT_DEVICE": "1"}
    result = pytest_run(tmp_path, "--prmg-devices", "0,1", env=env)
    assert result.returncode == 2 and "device 1 would run no case (add -n 2, or --prmg-each-device" in \
        result.stdout + result.stderr and "passed" not in result.stdout, result.stdout + result.stderr
    result = pytest_run(tmp_path, "--prmg-devices", "0,1", "--prmg-each-device", "-q", "-k", "fp32", env=env)
    assert result.returncode == 1 and "1 failed" in result.stdout, result.stdout + result.stderr
    assert "[failed on device 1; passed on device 0]" in result.stdout


def test_plugin_session_names_the_device_failures_concentrate_on(monkeypatch):
    """Issue 32 (audit): under xdist on several devices (``--prmg-devices 0,1``) a chip computing wrong showed only as
    a list of failed items; the session's end names the device, as every report of prmg run does."""
    from types import SimpleNamespace

    from prmg_cli import pytest_plugin
    from prmg_cli.results import RunInfo

    monkeypatch.setattr(pytest_plugin, "_run_info", lambda config: RunInfo(runner="aclnn", location="here"))
    session, lines = pytest_plugin.PrmgSession(None), []
    for index in range(24):
        device = str(index % 2)
        values = {"status": "failed" if device == "1" else "passed", "faults": [], "shape": [1, 1, 1, 8],
                  "op": "grad", "dtype": "float32", "device": device, "metrics": {}}
        report = SimpleNamespace(when="call", outcome=values["status"], nodeid=f"c.yaml::c{index}",
                                 user_properties=[(pytest_plugin._RESULT, json.dumps(values))])
        session.pytest_runtest_logreport(report)
    session.pytest_terminal_summary(SimpleNamespace(write_line=lines.append))
    assert lines == ["prmg failures by device: 12 failures, all on device 1 of 2: suspect the chip"]


def test_smoke_script_runs_the_real_runner_path(tmp_path, emulator):
    """smoke.sh sources set_env.sh of a toolkit (here the emulator's folder) and never falls back."""
    from test_fail_safe import stand_in

    reports = tmp_path / "reports"
    env = dict(os.environ, ASCEND_SET_ENV=str(emulator.root / "set_env.sh"),
               PRMG=f"{sys.executable} -m prmg_cli.cli", PRMG_REPORT_DIR=str(reports))
    result = subprocess.run(["bash", str(ROOT / "runners/npu/smoke.sh")], env=env, cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "prmg doctor" in result.stdout and EMULATOR_FALLBACK not in result.stderr    # a toolkit is named here
    root = ET.parse(reports / "prmg-smoke.xml").getroot()
    assert int(root.find("testsuite").get("tests")) > 10
    assert (reports / "prmg-smoke.jsonl").exists()
    graph = ET.parse(reports / "prmg-smoke-graph.xml").getroot()              # graph mode: the emulator's twin
    assert graph.find("testsuite").get("tests") == root.find("testsuite").get("tests")
    assert "--runner aclnn+geir" in result.stdout and "SKIPPED" not in result.stdout
    records = [json.loads(line) for line in (reports / "prmg-smoke-graph.jsonl").read_text().splitlines()]
    assert {record["path"] for record in records if "status" in record} == {"aclnn+geir"}
    # a host of two chips, the second computing wrong (sin negated) for one case of the suite only, the worked example,
    # which device 0 takes first when the devices share the cases (a green gate before --each-device): smoke.sh runs
    # every case on every device the runtime reports, so it fails, naming device 1 and the device where it passed
    env.update(PRMG_EMU_DEVICES="2", PRMG_EMU_FAULT="neg_sin", PRMG_EMU_FAULT_DEVICE="1",
               PRMG_EMU_FAULT_SHAPE="1,1,1,8")
    result = subprocess.run(["bash", str(ROOT / "runners/npu/smoke.sh")], env=env, cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 1 and "--runner aclnn --devices all --each-device" in result.stdout
    assert "[failed on device 1; passed on device 0]" in result.stdout
    records = [json.loads(line) for line in (reports / "prmg-smoke.jsonl").read_text().splitlines()]
    run = max(index for index, record in enumerate(records) if record["schema"] == "prmg.run/1")  # appended to
    assert records[run]["info"]["devices"] == [0, 1] and records[run]["info"]["each_device"]
    failed = [record for record in records[run + 1:] if record["status"] != "passed"]
    assert [(record["name"], record["device"]) for record in failed] == [("smoke.worked_example", "1")]
    assert {record["device"] for record in records[run + 1:]} == {"1", "0,1"}
    for name in ("PRMG_EMU_DEVICES", "PRMG_EMU_FAULT", "PRMG_EMU_FAULT_DEVICE", "PRMG_EMU_FAULT_SHAPE"):
        env.pop(name)
    # a toolkit without GE, test_acl's stand-in (--runner aclnn refuses a copy of the emulator): graph mode skipped
    toolkit = stand_in(tmp_path / "cann")
    (toolkit / "set_env.sh").write_text(f'export ASCEND_HOME_PATH="{toolkit}"\n'
                                        f'export LD_LIBRARY_PATH="{toolkit}/lib64"\n')
    cases = tmp_path / "one.yaml"
    cases.write_text("- {name: one, shape: [1, 1, 2, 8], partial_slice: [0, 8]}\n")
    result = subprocess.run(["bash", str(ROOT / "runners/npu/smoke.sh")], cwd=ROOT, capture_output=True, text=True,
                            env=dict(env, ASCEND_SET_ENV=str(toolkit / "set_env.sh"), PRMG_CASES=str(cases)),
                            timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    why = f"graph mode is not available on the toolkit at {toolkit}: it needs GE's headers"
    assert f"== graph mode: SKIPPED ({why}" in result.stdout

    def graph_junit():
        """The graph-mode JUnit file's one test: (its kind, its message)."""
        suite = ET.parse(reports / "prmg-smoke-graph.xml").getroot().find("testsuite")
        (outcome,) = suite.find("testcase")
        assert suite.get("tests") == "1" and suite.get(outcome.tag if outcome.tag == "skipped" else "errors") == "1"
        return outcome.tag, outcome.get("message")

    # the skip is one skipped test in the graph-mode JUnit file, in place of the first run's green graph results
    assert graph_junit()[0] == "skipped" and graph_junit()[1].startswith(why)
    # a host set up for graph mode asks for it (PRMG_GRAPH_MODE=yes): without GE or a compiler the gate fails, exit 2,
    # before anything runs, instead of skipping (it was exit 0 with a SKIPPED line on a host whose GE had gone);
    # PRMG_GRAPH_MODE=no skips it
    for mode, code, said in (("yes", 2, "smoke.sh: graph mode is asked for (PRMG_GRAPH_MODE=yes) but not available: "
                              f"{why}"), ("no", 0, "== graph mode: SKIPPED (PRMG_GRAPH_MODE=no)"),
                             ("maybe", 2, "smoke.sh: PRMG_GRAPH_MODE must be auto, yes or no, got 'maybe'")):
        result = subprocess.run(["bash", str(ROOT / "runners/npu/smoke.sh")], cwd=ROOT, capture_output=True, text=True,
                                env=dict(env, ASCEND_SET_ENV=str(toolkit / "set_env.sh"), PRMG_CASES=str(cases),
                                         PRMG_GRAPH_MODE=mode), timeout=300)
        assert result.returncode == code and said in result.stdout + result.stderr, result.stdout + result.stderr
        assert ("prmg doctor --runner aclnn+geir" in result.stdout) == (mode == "yes")
        assert ("== prmg run" in result.stdout) == (mode == "no")        # yes: refused before the aclnn pass
        if mode == "yes":
            assert graph_junit()[0] == "error" and graph_junit()[1].startswith(f"not available: {why}")
    assert graph_junit() == ("skipped", "PRMG_GRAPH_MODE=no")
    env["ASCEND_SET_ENV"] = str(tmp_path / "missing.sh")
    result = subprocess.run(["bash", str(ROOT / "runners/npu/smoke.sh")], env=env, cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "set_env.sh" in result.stderr


def test_the_smoke_gate_runs_the_toolkit_its_set_env_names_never_one_left_in_the_environment(tmp_path):
    """Issue 32 (round 4): smoke.sh sourced ``$ASCEND_SET_ENV`` and ran whatever toolkit prmg then found: a set_env.sh
    that names none (a wrapper that sets only LD_LIBRARY_PATH, a stale file) left ASCEND_HOME_PATH as the host's
    profile had set it, another toolkit (an older build of the operator), and the gate was green on it, exit 0. The
    variables naming a toolkit are cleared before set_env.sh is sourced, and one that names none is exit 2."""
    from test_fail_safe import stand_in

    old, new = stand_in(tmp_path / "old"), tmp_path / "new"
    new.mkdir()
    (new / "set_env.sh").write_text(f'export LD_LIBRARY_PATH="{new}/lib64"\n')
    cases = tmp_path / "one.yaml"
    cases.write_text("- {name: one, shape: [1, 1, 2, 8], partial_slice: [0, 8]}\n")
    env = dict(os.environ, ASCEND_SET_ENV=str(new / "set_env.sh"), PRMG=f"{sys.executable} -m prmg_cli.cli",
               PRMG_REPORT_DIR=str(tmp_path / "reports"), PRMG_CASES=str(cases), PRMG_GRAPH_MODE="no")
    for left in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"):
        result = subprocess.run(["bash", str(ROOT / "runners/npu/smoke.sh")], env={**env, left: str(old)}, cwd=ROOT,
                                capture_output=True, text=True, timeout=300)
        assert (result.returncode, result.stdout) == (2, ""), result.stdout + result.stderr
        assert result.stderr == (f"smoke.sh: {new}/set_env.sh names no toolkit (it sets neither ASCEND_HOME_PATH nor "
                                 f"ASCEND_TOOLKIT_HOME): prmg would search the default locations for one, not take "
                                 f"the toolkit under test\n"), result.stderr
    (new / "set_env.sh").write_text(f'export ASCEND_HOME_PATH="{old}"\n')
    result = subprocess.run(["bash", str(ROOT / "runners/npu/smoke.sh")], env=env, cwd=ROOT, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0 and f"toolkit: {old}" in result.stdout, result.stdout + result.stderr


def test_the_npu_gate_and_its_ci_examples_never_run_the_emulator():
    """Issue 32: smoke.sh asks for --runner aclnn in every prmg command it runs (auto would run the emulator where
    no toolkit is named), and every CI example runs smoke.sh, or prmg run with --runner aclnn, on the NPU host."""
    script = (ROOT / "runners/npu/smoke.sh").read_text()
    commands = re.findall(r"^\$prmg (\w+)((?:.*\\\n)*.*)$", script, re.MULTILINE)
    assert {name for name, _ in commands} == {"doctor", "run"}
    assert all("--runner aclnn" in arguments for _, arguments in commands), commands
    assert all("--strict" in arguments for name, arguments in commands if name == "run"), commands  # the gate's rule
    for example in sorted((ROOT / "runners/npu").glob("*.yml")):
        text = example.read_text()
        assert "runners/npu/smoke.sh" in text, example
        assert all("--runner aclnn" in line for line in re.findall(r".*prmg run .*", text)), example
    # an extra argument is passed to prmg run after the gate's own (prmg took the last of an option given twice, and
    # smoke.sh --runner emulator ran a green gate on the host emulator): it is refused before anything runs, saying why
    for extra, named in ((["--timeout", "5", "--runner", "emulator"], "--runner"),
                         (["--runner=emulator"], "--runner="), (["--devices", "0"], "--devices"),    # chip 0 alone
                         (["-o", "x.xml"], "-o"), (["--results=x.jsonl"], "--results=")):    # a stale JUnit read
        result = subprocess.run(["bash", str(ROOT / "runners/npu/smoke.sh"), *extra], cwd=ROOT, capture_output=True,
                                text=True, timeout=60, env=dict(os.environ, ASCEND_SET_ENV="/nonexistent"))
        assert result.returncode == 2 and result.stderr.startswith(f"smoke.sh: {named}"), result.stderr
        if "smoke.sh" in text and "prmg-smoke.xml" in text.replace("prmg-smoke*.xml", ""):
            raise AssertionError(f"{example} publishes the aclnn pass's JUnit alone, not the graph-mode pass's")
    # the sharded example's merge, the job to gate on, reads the aclnn results only: it was green while a shard's
    # graph-mode pass failed; its last step fails when any shard job did
    import yaml

    report = yaml.safe_load((ROOT / "runners/npu/github-actions-shards.yml").read_text())["jobs"]["report"]
    last = report["steps"][-1]
    assert last["if"] == "always() && needs.shard.result != 'success'" and "exit 1" in last["run"]
    assert [step["run"].count("--strict") for step in report["steps"] if "prmg report" in step.get("run", "")] == [1]


def test_pip_install_from_the_tree_gives_a_working_prmg(tmp_path):
    """A non-editable install of the tracked files (a clean checkout: no build/ left from earlier builds, which
    pip would reuse) carries every package, the native helper's C and the emulator sources, and builds them on
    first use, in folders whose names make cannot take (a space, a colon, '$': the emulator's make failed there);
    each worker builds the compiled judge (seconds of gcc) as it starts, so a short --timeout never turns that build
    into a verdict."""
    tree = tmp_path / "tree"
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    for name in tracked:
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, tree / name)
    target = tmp_path / "my site"
    install = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                              "--target", str(target), str(tree)],
                             capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stderr
    assert (target / "prmg_cli" / "emulator_src" / "kernel.c").exists()
    assert (target / "prmg_cli" / "native" / "native.c").exists()
    packages = {str(path.parent.relative_to(ROOT)).replace("/", ".")
                for path in (ROOT / "prmg_cli").rglob("__init__.py")}
    assert all((target / package.replace(".", "/") / "__init__.py").exists() for package in packages), packages
    cases = tmp_path / "c.yaml"
    cases.write_text("- {name: installed, shape: [1, 8, 8, 128], dtype: float16}\n")       # 8192 elements
    home = tmp_path / "emu: $HOME #1"
    env = dict(os.environ, PYTHONPATH=str(target), PRMG_EMULATOR_HOME=str(home))
    result = subprocess.run([sys.executable, "-m", "prmg_cli.cli", "run", str(cases), "--runner", "aclnn+geir",
                             "--timeout", "1"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.rstrip().splitlines()[-1] == "1 passed, 0 failed"
    assert str(home) in " ".join(result.stdout.split())        # (the header wraps at spaces)
    assert list(home.glob("native-*/libprmgnative.so"))
    faults = subprocess.run([sys.executable, "-c", "from prmg_cli.device import toolkit; print(sorted(toolkit."
                             "emulator_fault_effects()) == sorted(toolkit.emulator_fault_names()))"],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert faults.stdout == "True\n", faults.stderr                 # the README doctor reads is installed


def test_plugin_node_ids_keyword_selection_and_bad_files(tmp_path):
    result = pytest_run(tmp_path, "--collect-only", "-q")
    assert "cases.yaml::p_ok_fp32" in result.stdout and "4 tests collected" in result.stdout
    result = pytest_run(tmp_path, "-k", "bf16", "--prmg-runner", "geir")          # graph mode alone (issue 35)
    assert result.returncode == 0 and "1 passed, 3 deselected" in result.stdout
    assert "; called through graph mode (GE IR), graph mode by the emulator's twin" in result.stdout
    (tmp_path / "cases.yaml").write_text("- {name: bad, shape: [1, 1, 1, 8], seed: -1}\n")
    result = forked_pytest("--prmg", tmp_path / "cases.yaml", "--prmg-runner", "emulator", "-q", cwd=tmp_path,
                           env={"PYTHONPATH": str(ROOT)})
    assert result.returncode != 0
    assert "case 'bad': field 'seed'" in result.stdout and "Traceback" not in result.stdout


def test_plugin_known_defects_are_strict_xfails(tmp_path):
    cases = tmp_path / "defects.yaml"
    cases.write_text("- {name: d_xfail, shape: [1, 1, 2, 8], known_defect: {reason: \"the odd lanes' sign\","
                     " result: wrong, pattern: odd_lanes}}\n"
                     "- {name: d_xpass, shape: [1, 1, 2, 16], rotary_mode: 7, expect: {error: 561002},"
                     " known_defect: {reason: \"fixed since\", status: SUCCESS}}\n")
    result = forked_pytest("-q", "--prmg", cases, "--prmg-runner", "emulator", cwd=tmp_path,
                           env={"PYTHONPATH": str(ROOT), "PRMG_EMU_FAULT": "sign", "PRMG_EMU_FAULT_SHAPE": "1,1,2,8"})
    assert result.returncode == 1, result.stdout
    assert "1 failed" in result.stdout and "1 xfailed" in result.stdout
    assert "[XPASS(strict)]" in result.stdout


def test_plugin_collects_exactly_the_files_prmg_run_reads(tmp_path):
    """Case files under build/, venv/ (a virtualenv) and dot-folders are cases ``prmg run`` runs, so pytest runs them
    too (a failing one there fails the session); a symlinked folder, which ``prmg run`` does not enter, and a second
    path to a file already read, are not collected twice."""
    from prmg_cli.cases.loader import case_files, load_cases
    from prmg_cli.errors import PrmgError

    suite = tmp_path / "suite"
    wrong = "- {name: %s, shape: [1, 1, 1, 8], expect: {error: ACLNN_ERR_INNER_TILING_ERROR}}\n"     # succeeds: fails
    for folder in ("build", "venv", ".hidden", "dist/.deep"):
        (suite / folder).mkdir(parents=True)
        (suite / folder / "c.yaml").write_text(wrong % folder.replace("/", "_").replace(".", "dot"))
    (suite / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (suite / "ok.yml").write_text("- {name: fine, shape: [1, 1, 1, 8]}\n")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "x.yaml").write_text(wrong % "through_a_symlink")
    (suite / "linked").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (suite / "again.yaml").hardlink_to(suite / "ok.yml")
    ran = sorted(case.name for case in load_cases(case_files([suite])))
    assert ran == ["build", "dist_dotdeep", "dothidden", "fine", "venv"]
    result = forked_pytest("-q", "-rA", "--prmg", suite, "--prmg-runner", "emulator", "--prmg-strict", cwd=tmp_path,
                           env={"PYTHONPATH": str(ROOT)})
    assert result.returncode == 1, result.stdout + result.stderr
    assert "4 failed, 1 passed" in result.stdout, result.stdout
    assert sorted(line.rsplit("::", 1)[1].split()[0] for line in result.stdout.splitlines()
                  if line.startswith(("PASSED", "FAILED"))) == ran
    # a dangling symlink, which pytest's walk passes by: prmg run refuses the path, and so does the plugin
    (suite / "gone.yaml").symlink_to(tmp_path / "nowhere.yaml")
    with pytest.raises(PrmgError, match="no such file"):
        load_cases(case_files([suite]))
    refused = forked_pytest("-q", "--collect-only", "--prmg", suite, cwd=tmp_path, env={"PYTHONPATH": str(ROOT)})
    assert refused.returncode == 4 and f"--prmg: {suite / 'gone.yaml'}: no such file" in refused.stderr, refused.stderr
