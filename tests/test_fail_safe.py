"""Issue 10 end to end: a green that cannot lie, and CI signals that fail safe (through the real CLI).

Expected errors always run; known defects are strict xfails; a selection of nothing exits 5; outputs
are checked before the first case; several reports in one run; a stopped run lists what did not run;
SIGTERM is handled like Ctrl-C; wedged devices stop being waited on; injected faults are visible;
command-line numbers are checked; no worker outlives its parent.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import ROOT, prmg, prmg_forked, prmg_here
from prmg_cli.errors import STOPS

CASES = """
- {name: ok_a, shape: [1, 2, 2, 16], partial_slice: [4, 12]}
- {name: ok_b, shape: [1, 2, 2, 16], partial_slice: [0, 16], dtype: bfloat16}
- {name: ok_c, shape: [2, 1, 2, 8], partial_slice: [2, 6], dtype: float16, tags: [late]}
"""


def write(tmp_path: Path, text: str, name: str = "cases.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def run_json(*args, env=None, timeout=120):
    result = prmg_forked("run", *args, "--runner", "emulator", "--report", "json", env=env, timeout=timeout)
    assert "Traceback" not in result.stderr, result.stderr
    return result, (json.loads(result.stdout) if result.stdout.lstrip().startswith("{") else None)


def by_name(report) -> dict:
    return {case["name"]: case for case in report["cases"]}


# --- verdict holes ------------------------------------------------------------------------------------

def test_an_expected_error_the_operator_does_not_return_runs_and_fails(tmp_path):
    path = write(tmp_path, "- {name: tiny, shape: [1, 1, 1, 2], expect: {error: ACLNN_ERR_INNER_TILING_ERROR}}\n")
    result, report = run_json(path)
    assert result.returncode == 1
    case = report["cases"][0]
    assert case["status"] == "failed"
    assert case["message"].startswith("expected 561002 ACLNN_ERR_INNER_TILING_ERROR, got 0 SUCCESS")
    checked = prmg_here("validate", path)
    assert checked.returncode == 0
    assert "warning:" in checked.stdout and "tiny" in checked.stdout and "predicts success" in checked.stdout


def test_mode_refused_today_cases_run_and_fail_on_a_target_with_every_mode(tmp_path):
    path = write(tmp_path, "- {name: half_refused, shape: [1, 1, 1, 8], rotary_mode: half, "
                           "expect: {error: 561002}}\n")
    result, report = run_json(path, "--supported-modes", "0,1,2,3")
    assert result.returncode == 1 and report["cases"][0]["status"] == "failed"
    result, report = run_json(path)
    assert result.returncode == 0 and report["cases"][0]["status"] == "passed"


def test_known_defects_are_strict_xfails_in_every_report(tmp_path):
    path = write(tmp_path, """
- {name: int32_mode, shape: [1, 1, 2, 8], rotary_mode: 4294967297, expect: {error: 561002},
   known_defect: {reason: "the tiling reads rotary_mode as int32", status: SUCCESS, behaves_as: {rotary_mode: 1}}}
- {name: defect_gone, shape: [1, 1, 2, 8], rotary_mode: 7, expect: {error: 561002},
   known_defect: {reason: "fixed since", status: SUCCESS}}
- {name: fine, shape: [1, 1, 2, 8]}
""")
    result, report = run_json(path)
    statuses = {name: case["status"] for name, case in by_name(report).items()}
    assert statuses == {"int32_mode": "xfailed", "defect_gone": "xpassed", "fine": "passed"}
    assert result.returncode == 1                           # the xpass fails the run: remove the marker
    assert report["summary"]["xfailed"] == 1 and report["summary"]["xpassed"] == 1
    assert report["summary"]["line"] == "1 passed, 0 failed, 1 xfailed, 1 xpassed"
    junit = tmp_path / "r.xml"
    csv_file, markdown = tmp_path / "r.csv", tmp_path / "r.md"
    result = prmg_forked("run", path, "--runner", "emulator", "--report", f"junit:{junit}", "--report",
                         f"csv:{csv_file}", "--report", f"markdown:{markdown}")
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("failures") == "1" and suite.get("skipped") == "1"
    assert suite.find("testcase[@name='int32_mode']/skipped") is not None
    assert suite.find("testcase[@name='defect_gone']/failure").get("type") == "xpassed"
    assert ",xfailed," in csv_file.read_text() and ",xpassed," in csv_file.read_text()
    assert "XPASSED" in markdown.read_text().upper()
    assert result.stdout.rstrip().splitlines()[-1] == f"wrote {junit}, {csv_file}, {markdown}: 1 passed, 0 failed, " \
        "1 xfailed, 1 xpassed"                                        # the files said as compare says its file


def test_strict_turns_a_vacuous_pass_into_a_failure(tmp_path):
    path = write(tmp_path, "- {name: identity, shape: [1, 1, 2, 8], inputs: {cos: {values: [1, 1, 1, 1, 1, 1, 1, 1]},"
                           " sin: {values: [0, 0, 0, 0, 0, 0, 0, 0]}}}\n")
    result, report = run_json(path)
    assert result.returncode == 0
    case = report["cases"][0]
    assert case["status"] == "passed" and "vacuous" in case["warnings"][0]
    assert report["summary"]["warnings"] == 1 and report["summary"]["line"].endswith("1 warning")
    table = prmg_forked("run", path, "--runner", "emulator")
    assert "warning: vacuous" in table.stdout
    # its metric reads as the others do (no element off the golden: a bound of 0 ulp), not 'max_err_ratio=0 bad=0'
    assert case["key_metric"] == "err 0 ulp, exact" and "err 0 ulp, exact" in table.stdout.split("\nPASS ")[1]
    result, report = run_json(path, "--strict")
    assert result.returncode == 1 and report["cases"][0]["status"] == "failed"
    assert report["cases"][0]["message"].startswith("--strict: vacuous")


def test_standard_overrides_the_case_tolerance_too():
    result, report = run_json(ROOT / "cases" / "ttk_upstream.yaml", "--standard", "default")
    assert result.returncode == 0, report["summary"]
    assert {case["standard"] for case in report["cases"]} == {"default"}


# --- CI signals ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("selection", [["-k", "no_such_case"], ["--tag", "nope"],
                                       ["--exclude-tag", "late", "-k", "ok_c"]])
def test_a_run_that_selects_nothing_exits_5(tmp_path, selection):
    result = prmg_forked("run", write(tmp_path, CASES), "--runner", "emulator", *selection)
    assert result.returncode == 5
    assert result.stderr.strip() == "prmg: no cases selected (check -k, --tag, --exclude-tag and --shard)"


def test_an_empty_shard_exits_5(tmp_path):
    from prmg_cli.cases.loader import load_cases
    from prmg_cli.device.execute import shard

    path = write(tmp_path, "- {name: only, shape: [1, 1, 2, 8]}\n")
    holding = next(i for i in range(1, 9) if shard(load_cases([path]), i, 8))
    empty = holding % 8 + 1
    codes = [prmg_forked("run", path, "--runner", "emulator", "--shard", f"{i}/8").returncode for i in (holding, empty)]
    assert codes == [0, 5]


def test_a_run_of_skips_only_says_so(tmp_path):
    """Nothing was judged: exit 5 (as for no case selected), 1 under --strict."""
    path = write(tmp_path, "- {name: half_only, shape: [1, 1, 2, 8], rotary_mode: half}\n")
    assert prmg_forked("run", path, "--runner", "emulator", "--strict").returncode == 1
    result = prmg_forked("run", path, "--runner", "emulator")
    assert result.returncode == 5
    assert result.stdout.rstrip().splitlines()[-1] == "0 passed, 0 failed, 1 skipped (every case was skipped)"


def test_unwritable_outputs_are_refused_before_the_first_case(tmp_path):
    path = write(tmp_path, CASES)
    results = tmp_path / "results.jsonl"
    for bad in (tmp_path, "/proc/version/x.xml", "/dev/full/x"):
        result = prmg_here("run", path, "--runner", "emulator", "--report", f"junit:{bad}", "--results", results)
        assert result.returncode == 2, (bad, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1 and "cannot write the report" in result.stderr
        assert not results.exists() or results.read_text() == ""


def stand_in(root: Path, wedged: bool = False) -> Path:
    """``root`` made a minimal toolkit of test_acl's stand-in libraries (float32, interleave, 2 devices); ``wedged``:
    its aclInit never returns, as on a device that no longer answers."""
    from test_acl import STAND_IN

    lib64 = root / "lib64"
    lib64.mkdir(parents=True)
    for library, source in STAND_IN.items():
        if wedged and library == "libascendcl.so":
            source = source.replace("int aclInit(const char *config) { (void)config; return 0; }",
                                    "#include <unistd.h>\nint aclInit(const char *config) { (void)config; "
                                    "for (;;) pause(); }")
        (root / f"{library}.c").write_text(source)
        subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib64 / library), str(root / f"{library}.c")], check=True)
    return root


def test_output_and_option_errors_come_before_anything_touches_the_toolkit(tmp_path):
    """Issue 32: with a wedged device (a stand-in toolkit whose aclInit never returns) a results file that cannot
    be written or read, a report the check of permissions passes but no open can (root in /proc), or a device list
    that is no list each end at once with exit 2: none waits for the toolkit's probe (its timeout is 120 s)."""
    wedged = stand_in(tmp_path / "wedged", wedged=True)
    cases, garbage = write(tmp_path, CASES), write(tmp_path, "not a results file\n", "garbage.jsonl")
    for args, said in ((["--results", "/proc/nope.jsonl"], "cannot write the results file"),
                       (["--resume", garbage], "not a results file"),
                       (["--report", "json:/proc/nope.json"], "cannot write the report"),
                       (["--report", "json:/proc/new/r.json"], "cannot write the report"),      # a folder made first
                       (["--save-failures", "/proc/nope"], "cannot write the failure artifacts"),
                       (["--devices", "all,x"], "--devices must be")):
        devices = [] if "--devices" in args else ["--devices", "all"]          # an option is given once
        result = prmg_forked("run", cases, "--runner", "aclnn", *devices, *args, timeout=30,
                             env={"ASCEND_HOME_PATH": str(wedged)})
        assert result.returncode == 2 and said in result.stderr, (args, result.stderr)


def test_a_report_never_overwrites_a_case_file_the_results_file_or_another_report(tmp_path):
    path = write(tmp_path, CASES)
    before = path.read_bytes()
    results = tmp_path / "r.jsonl"
    (tmp_path / "link.yaml").symlink_to(path)
    for reports, fragment in (([f"json:{tmp_path}/./{path.name}"], "it is a case file"),
                              ([f"junit:{tmp_path / 'link.yaml'}"], "it is a case file"),
                              ([f"json:{results}"], "the results file"),
                              ([f"json:{tmp_path}/a.json", f"csv:{tmp_path}/./a.json"], "another report")):
        args = [arg for report in reports for arg in ("--report", report)]
        result = prmg_here("run", path, "--runner", "emulator", "--results", results, *args)
        (line,) = result.stderr.strip().splitlines()
        assert result.returncode == 2 and fragment in line, result.stderr
    result = prmg_here("run", path, "--runner", "emulator", "--results", path)
    assert result.returncode == 2 and "cannot write the results file: it is a case file" in result.stderr
    assert path.read_bytes() == before and not (tmp_path / "a.json").exists()
    assert not results.exists() or results.read_text() == ""
    result = prmg_here("report", results, "--report", f"json:{results}")
    assert result.returncode == 2 and "a results file to merge" in result.stderr
    both = prmg_forked("run", path, "--runner", "emulator", "--report", "json:/dev/null", "--report", "csv:/dev/null")
    assert both.returncode != 2, both.stderr                           # a device may take several


def test_several_reports_in_one_run_and_the_console_still_shows_failures(tmp_path):
    path = write(tmp_path, CASES)
    junit, report = tmp_path / "smoke.xml", tmp_path / "smoke.json"
    result = prmg_forked("run", path, "--runner", "emulator", "--report", f"junit:{junit}", "--report",
                         f"json:{report}", env={"PRMG_EMU_FAULT": "sign"})
    assert result.returncode == 1
    assert ET.parse(junit).getroot().find("testsuite").get("failures") == "3"
    assert json.loads(report.read_text())["summary"]["failed"] == 3
    lines = result.stdout.rstrip().splitlines()
    assert lines[-1] == f"wrote {junit}, {report}: 0 passed, 3 failed" and sum(line.startswith("FAIL ") for line in
                                                                                  lines) == 3
    plain = prmg_forked("run", path, "--runner", "emulator", "--report", "json", "-o", tmp_path / "plain.json")
    assert plain.returncode == 0 and json.loads((tmp_path / "plain.json").read_text())["summary"]["passed"] == 3


def test_fail_fast_lists_what_did_not_run(tmp_path):
    result, report = run_json(write(tmp_path, CASES), "-x", env={"PRMG_EMU_FAULT": "sign"})
    assert result.returncode == 1
    statuses = [case["status"] for case in report["cases"]]
    assert statuses == ["failed", "not_run", "not_run"]
    assert report["cases"][1]["message"] == "not run: the run stopped at the first failure (--fail-fast)"
    assert report["summary"]["line"] == "0 passed, 1 failed, 2 not run"
    assert "2 cases not run" in result.stderr


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGHUP, 129)])
def test_sigterm_and_sigint_stop_the_run_with_a_partial_report(tmp_path, signum, code):
    """A stop signal while a case hangs: the partial report, its exit code; SIGHUP (the terminal closed, an SSH
    session dropped) too, which killed the run by the raw signal (129) with no report and the results file cut."""
    path = write(tmp_path, CASES + "- {name: stuck, shape: [1, 1, 1, 16]}\n- {name: after, shape: [1, 1, 2, 8]}\n")
    results = tmp_path / "results.jsonl"
    env = {**os.environ, "PRMG_EMU_FAULT": "hang", "PRMG_EMU_FAULT_SHAPE": "1,1,1,16"}
    process = subprocess.Popen([sys.executable, "-m", "prmg_cli.cli", "run", str(path), "--runner", "emulator",
                                "--report", "json", "--results", str(results), "--timeout", "60"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not results.exists() or results.read_text().count("\n") < 4):
        time.sleep(0.1)
    time.sleep(0.5)
    process.send_signal(signum)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == code, stderr
    assert "Traceback" not in stderr
    report = json.loads(stdout)
    assert [case["status"] for case in report["cases"]] == ["passed"] * 3 + ["not_run", "not_run"]
    assert "not run: the run was" in report["cases"][3]["message"]
    recorded = [json.loads(line) for line in results.read_text().splitlines()]
    assert recorded[0]["schema"] == "prmg.run/1"
    assert [r["status"] for r in recorded[1:]] == ["passed"] * 3 + ["not_run", "not_run"]
    assert report["summary"]["exit_code"] == code
    assert f"prmg: the run was {STOPS[signum][0]} ({STOPS[signum][1]}): 2 cases not run" in stderr


def test_under_nohup_a_hangup_stops_neither_the_run_nor_its_workers(tmp_path):
    """``nohup prmg run`` ignores SIGHUP: a closed terminal (SIGHUP to the whole process group) leaves the run going,
    its workers too (they take every other stop signal's default), so a case ends as it would have (here: its hang
    times out), not as a worker killed by SIGHUP."""
    path = write(tmp_path, "- {name: stuck, shape: [1, 1, 1, 16]}\n- {name: after, shape: [1, 1, 2, 8]}\n")
    process = subprocess.Popen([sys.executable, "-m", "prmg_cli.cli", "run", str(path), "--runner", "emulator",
                                "--timeout", "3", "--report", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, cwd=ROOT, start_new_session=True,
                               env={**os.environ, "PRMG_EMU_FAULT": "hang", "PRMG_EMU_FAULT_SHAPE": "1,1,1,16"},
                               preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not _children(process.pid):
        time.sleep(0.1)
    time.sleep(1.0)
    os.killpg(process.pid, signal.SIGHUP)                  # the terminal closes: the whole process group
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 1, stderr
    cases = {case["name"]: case for case in json.loads(stdout)["cases"]}
    assert cases["after"]["status"] == "passed" and cases["stuck"]["status"] == "error", cases
    assert "SIGHUP" not in cases["stuck"]["message"] and "timed out" in cases["stuck"]["message"], cases["stuck"]


def test_signals_a_parent_blocked_still_stop_a_run(tmp_path):
    """A process inherits its parent's blocked signals (a test runner, a CI agent): prmg unblocks Ctrl-C and
    SIGTERM, so they still stop it."""
    path = write(tmp_path, "- {name: stuck, shape: [1, 1, 1, 16]}\n")
    process = subprocess.Popen([sys.executable, "-m", "prmg_cli.cli", "run", str(path), "--runner", "emulator",
                                "--timeout", "60"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PRMG_EMU_FAULT": "hang"}, cwd=ROOT,
                               preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT,
                                                                                             signal.SIGTERM}))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not _children(process.pid):
        time.sleep(0.1)
    time.sleep(1.0)
    process.send_signal(signal.SIGTERM)
    stderr = process.communicate(timeout=60)[1]
    assert process.returncode == 143 and "the run was terminated (SIGTERM): 1 case not run" in stderr, stderr


# Runs the console script's entry point (pyproject's [project.scripts], argv[1]) as `prmg --version`, sending
# itself signal argv[2] at the moment typer is first imported: a Ctrl-C in the first tenth of a second.
STOPPED_WHILE_LOADING = """
import importlib, os, sys

entry, signum = sys.argv[1], int(sys.argv[2])

class StopWhileLoading:
    def find_spec(self, name, path=None, target=None):
        if name == "typer":
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signum)
        return None

sys.meta_path.insert(0, StopWhileLoading())
module, function = entry.split(":")
sys.argv = ["prmg", "--version"]
getattr(importlib.import_module(module), function)()
"""


@pytest.mark.parametrize("signum, code, said", [(signal.SIGINT, 130, "interrupted"),
                                                (signal.SIGTERM, 143, "terminated"), (signal.SIGHUP, 129, "hung up")])
def test_a_stop_while_the_command_line_loads_is_its_exit_code_quietly(signum, code, said):
    """Ctrl-C or SIGTERM while typer is imported (before any command runs) ends prmg as one at any other moment:
    the entry point holds the stop signals before it imports typer, and takes a held one where it handles it (a
    KeyboardInterrupt traceback, or death by SIGTERM, before)."""
    entry = re.search(r'^prmg = "([\w.:]+)"', (ROOT / "pyproject.toml").read_text(), re.MULTILINE)[1]
    result = subprocess.run([sys.executable, "-c", STOPPED_WHILE_LOADING, entry, str(int(signum))], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stderr, result.stdout) == (code, f"prmg: {said}\n", "")


# Runs the entry point as `prmg --version` and says, once it has returned (the interpreter's finalization still to
# come), whether each stop signal is ignored process-wide.
IGNORED_AFTER = """
import signal, sys
from prmg_cli import cli
sys.argv = ["prmg", "--version"]
try:
    cli.main()
except SystemExit as done:
    print(done.code, [signal.getsignal(signum) == signal.SIG_IGN for signum in sorted(cli.STOP_SIGNALS)])
"""


def test_once_the_command_is_over_the_stop_signals_are_ignored_not_only_held():
    """After the command, the stop signals are ignored process-wide, not only held (blocked) by the main thread:
    the interpreter's finalization sets a Python handler back to SIG_DFL, and a thread that does not hold them
    (OpenBLAS's, started with numpy) took one and the process died of the raw signal (fuzz round 6: 2 of 40 html
    reports stopped near their end, -2 and -15)."""
    result = subprocess.run([sys.executable, "-c", IGNORED_AFTER], cwd=ROOT, capture_output=True, text=True,
                            timeout=60)
    assert result.stdout.splitlines()[-1] == "0 [True, True, True]", result.stdout + result.stderr


def test_a_stop_inside_matplotlibs_import_is_the_stop_not_a_broken_matplotlib(monkeypatch):
    """A stop signal raised while an extension module of matplotlib starts (pybind11 turns it into 'ImportError:
    initialization failed') stops the report as the signal says (exit 129 for SIGHUP), not 'the html report needs
    a working matplotlib' (exit 2)."""
    import builtins

    from prmg_cli import errors
    from prmg_cli.reports.outputs import html
    from prmg_cli.results import RunInfo

    real_import, stop = builtins.__import__, [signal.SIGHUP]

    def broken(name, globals=None, locals=None, fromlist=(), level=0):
        if fromlist and "plots" in fromlist:
            monkeypatch.setattr(errors._Stops, "raised", stop[0])       # on_stop's record of the stop it raised
            raise ImportError("initialization failed")
        return real_import(name, globals, locals, fromlist, level)

    monkeypatch.setattr(builtins, "__import__", broken)
    with pytest.raises(errors.Terminated) as stopped:
        html.render([], RunInfo("emulator", "/x"))
    assert stopped.value.signum == signal.SIGHUP
    stop[0] = 0                                                          # no stop: matplotlib itself is broken
    with pytest.raises(errors.PrmgError, match="needs a working matplotlib"):
        html.render([], RunInfo("emulator", "/x"))


def test_a_wedged_device_is_not_waited_on(tmp_path):
    cases = "".join(f"- {{name: hang{i}, shape: [1, 1, 1, 16]}}\n" for i in range(5))
    result, report = run_json(write(tmp_path, cases), "--timeout", "1", "--max-timeouts", "2",
                              env={"PRMG_EMU_FAULT": "hang"})
    assert result.returncode == 1
    assert [case["status"] for case in report["cases"]] == ["error", "error", "not_run", "not_run", "not_run"]
    assert "2 timeouts in a row: the device is considered wedged (--max-timeouts)" in report["cases"][2]["message"]


def test_injected_faults_are_named_and_unknown_ones_refused(tmp_path):
    path = write(tmp_path, CASES)
    result, report = run_json(path, env={"PRMG_EMU_FAULT": "sign,noop"})
    assert report["summary"]["faults"] == ["sign", "noop"]
    table = prmg_forked("run", path, "--runner", "emulator", env={"PRMG_EMU_FAULT": "sign"})
    text = " ".join(table.stdout.split())              # the table wraps its lines at 100 columns
    assert "FAULTS NAMED: sign (PRMG_EMU_FAULT): this run tests prmg, not the operator" in text
    assert ("FAULTS INJECTED: sign (PRMG_EMU_FAULT: acted on 3 of 3 cases: ok_a, ok_b, ok_c): this run tests prmg, "
            "not the operator") in text
    result = prmg_forked("run", path, "--runner", "emulator", "--results", tmp_path / "r.jsonl",
                         env={"PRMG_EMU_FAULT": "sign,bogus"})
    assert result.returncode == 2 and "unknown emulator fault 'bogus'" in result.stderr
    assert not (tmp_path / "r.jsonl").exists() or (tmp_path / "r.jsonl").read_text() == ""


@pytest.mark.parametrize("args", [["--timeout", "inf"], ["--timeout", "nan"], ["--timeout", "1e300"],
                                  ["--timeout", "-1"], ["--devices", "0,4294967296"], ["--shard", ""],
                                  ["--max-timeouts", "0"], ["--max-details", "-1"], ["--progress-interval", "nan"]])
def test_bad_numbers_on_the_command_line_are_one_line_errors(tmp_path, args):
    result = prmg_here("run", write(tmp_path, CASES), "--runner", "emulator", *args)
    assert result.returncode == 2, (args, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_bench_refuses_a_negative_peak():
    result = prmg_forked("bench", "cases/smoke.yaml", "--peak-gbps", "-1")
    assert result.returncode == 2 and "--peak-gbps must be a finite number > 0" in result.stderr


def test_a_full_disk_under_the_results_file_and_one_report_loses_no_other_report_nor_either_error(tmp_path):
    """The results file and the JSON report on a full disk (/dev/full: ENOSPC): the run stops, says why, and the
    JUnit report after the failing JSON one is still written. Before, the report's error was raised first: the
    line saying the results file failed (and the cases not run) was never printed, and JUnit was never written."""
    junit = tmp_path / "j.xml"
    result = prmg_forked("run", write(tmp_path, CASES), "--runner", "emulator", "--results", "/dev/full",
                         "--report", "json:/dev/full", "--report", f"junit:{junit}")
    lines = [line for line in result.stderr.splitlines() if line.startswith("prmg: error: ")]
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert lines == ["prmg: error: the run stopped: /dev/full: cannot write the run record to the results file: no "
                     "space left on device: 3 cases not run",
                     "prmg: error: /dev/full: cannot write: no space left on device"], result.stderr
    suite = ET.parse(junit).getroot().find("testsuite")
    assert [case.find("error").get("message") for case in suite.iter("testcase")] == [
        "not run: the run stopped: /dev/full: cannot write the run record to the results file: no space left on "
        "device"] * 3


def test_stdout_on_dev_full_is_one_line_not_a_traceback(tmp_path):
    with open("/dev/full", "w") as full:
        result = subprocess.run([sys.executable, "-m", "prmg_cli.cli", "run", str(write(tmp_path, CASES)),
                                 "--runner", "emulator"], stdout=full, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                                timeout=120)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and "cannot write to standard output" in result.stderr


def test_a_case_file_named_in_no_encoding_on_an_ascii_terminal(tmp_path):
    """A case file whose name is not UTF-8 made a results file prmg refused to read back (its records' source held a
    lone surrogate: report, compare and --resume exit 2); an ASCII-only standard output (PYTHONIOENCODING=ascii)
    made the table's '≤' a UnicodeEncodeError, exit 3 with a traceback. Both now go through, escaped."""
    import os

    path, results = write(tmp_path, CASES, os.fsdecode(b"\xff.yaml")), tmp_path / "r.jsonl"
    result = prmg("run", path, "--runner", "emulator", "--results", results, env={"PYTHONIOENCODING": "ascii"})
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert "\\u2264 bound" in result.stdout and "3 passed" in result.stdout
    merged = prmg("report", results, "--report", "json")
    assert merged.returncode == 0, merged.stderr
    assert {case["source"] for case in json.loads(merged.stdout)["cases"]} == {str(tmp_path / "\\udcff.yaml")}


def test_a_closed_stdout_pipe_ends_quietly_and_the_run_finishes(tmp_path):
    """``prmg run ... | head -1``: the reader goes after the first line; the run goes on, writes its results
    file and its other reports, says nothing of the pipe and exits with its verdict."""
    results, junit = tmp_path / "r.jsonl", tmp_path / "run.xml"
    process = subprocess.Popen([sys.executable, "-m", "prmg_cli.cli", "run", str(write(tmp_path, CASES)), "--runner",
                                "emulator", "--results", str(results), "--report", f"junit:{junit}", "--report",
                                "table"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                               env={**os.environ, "PRMG_EMU_FAULT": "sign"})
    assert process.stdout.readline().startswith("runner: emulator")
    process.stdout.close()
    stderr = process.communicate(timeout=120)[1]
    assert process.returncode == 1, stderr                        # the verdict: the fault fails every case
    assert "standard output" not in stderr and "Traceback" not in stderr and "Broken pipe" not in stderr, stderr
    assert len(results.read_text().splitlines()) == 4                 # the run record and 3 results
    assert sum(case.find("failure") is not None for case in ET.parse(junit).getroot().iter("testcase")) == 3


def test_a_closed_stderr_pipe_ends_quietly_and_the_run_finishes(tmp_path):
    """``prmg run cases/ 2>&1 | head`` once the reader has gone: standard error is dropped quietly, as a closed
    standard output is; the run writes its results and exits with its verdict. The emulator's fallback line, the
    first note on stderr, was a BrokenPipeError that click ended as exit 1, nothing said and no result written.
    ``--version`` and ``--help`` into a closed pipe are quiet and exit 0 too (they were exit 1, and 3 with a
    traceback). Standard output, whose reader is there, still gets the report (a closed stderr is dropped)."""
    results = tmp_path / "r.jsonl"
    reader, writer = os.pipe()
    os.close(reader)                                                 # every write to ``writer`` is EPIPE
    try:
        runs = [subprocess.run([sys.executable, "-m", "prmg_cli.cli", *args], stdout=stdout, stderr=writer,
                               cwd=ROOT, timeout=120)
                for args, stdout in ((["run", str(write(tmp_path, CASES)), "--results", str(results)],
                                      subprocess.PIPE), (["--version"], writer), (["run", "--help"], writer))]
    finally:
        os.close(writer)
    assert [run.returncode for run in runs] == [0, 0, 0]            # --help | true was exit 3 (click's echo: EPIPE)
    assert b"3 passed, 0 failed" in runs[0].stdout                 # standard output kept: its own reader is there
    assert len(results.read_text().splitlines()) == 4                 # the run record and 3 results


def _children(pid: int) -> list[int]:
    """The pids whose parent is ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def test_no_worker_outlives_a_killed_run(tmp_path):
    path = write(tmp_path, "- {name: stuck, shape: [1, 1, 1, 16]}\n")
    process = subprocess.Popen([sys.executable, "-m", "prmg_cli.cli", "run", str(path), "--runner", "emulator",
                                "--timeout", "120"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env={**os.environ, "PRMG_EMU_FAULT": "hang"}, cwd=ROOT)
    deadline = time.monotonic() + 60
    workers: list[int] = []
    while time.monotonic() < deadline and not workers:
        workers = _children(process.pid)
        time.sleep(0.2)
    assert workers
    time.sleep(1.0)                                    # the worker is inside the hanging launch
    process.kill()
    process.wait(timeout=10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() and
                                              "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]
                                              for pid in workers if Path(f"/proc/{pid}/stat").exists()):
        time.sleep(0.2)
    alive = [pid for pid in workers if Path(f"/proc/{pid}/stat").exists()
             and Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"]
    assert not alive, f"workers {alive} outlived their parent"


def _stopped_run(path: Path, results: Path, signum: int, when, env: dict, *args: str) -> tuple[int, str, dict, dict]:
    """Start ``prmg run PATH --results RESULTS --report json``, send ``signum`` once ``when(process)`` is true,
    and return (exit code, stderr, {case: status} of the JSON report, {case: status} of the results file)."""
    from prmg_cli.reports import store

    process = subprocess.Popen([sys.executable, "-m", "prmg_cli.cli", "run", str(path), "--runner", "emulator",
                                "--report", "json", "--results", str(results), *args], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env={**os.environ, **env}, cwd=ROOT)
    deadline = time.monotonic() + 60
    while process.poll() is None and time.monotonic() < deadline and not when(process):
        time.sleep(0.01)
    process.send_signal(signum)
    stdout, stderr = process.communicate(timeout=60)
    assert "Traceback" not in stderr, stderr
    report = json.loads(stdout)
    assert report["summary"]["exit_code"] == process.returncode, stderr
    recorded = {name: result.status for name, result in store.read(results).latest().items()}
    return process.returncode, stderr, {case["name"]: case["status"] for case in report["cases"]}, recorded


@pytest.mark.parametrize("signum, code, workers", [(signal.SIGTERM, 143, 4), (signal.SIGTERM, 143, 40),
                                                   (signal.SIGINT, 130, 20), (signal.SIGINT, 130, 63)])
def test_a_signal_while_64_workers_are_forked_ends_the_run(tmp_path, signum, code, workers):
    """Ctrl-C or SIGTERM once ``workers`` of 64 emulated devices' workers exist: the run stops, exit 130/143, no
    traceback, the report and the results file agree (a case the first workers finished meanwhile, under load,
    is passed in both)."""
    path = write(tmp_path, CASES)
    returncode, stderr, reported, recorded = _stopped_run(
        path, tmp_path / "r.jsonl", signum, lambda process: len(_children(process.pid)) >= workers,
        {"PRMG_EMU_DEVICES": "64"}, "--devices", "all")
    assert returncode == code, stderr
    assert reported == recorded and set(reported) == {"ok_a", "ok_b", "ok_c"}
    assert set(reported.values()) <= {"not_run", "passed"}


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_whose_stop_lands_in_a_finalizer_still_stops_the_run(tmp_path, signum, code):
    """A stop signal can arrive while the main thread runs a finalizer (a pipe's ``__del__``, seen under load with 64
    workers), where Python ignores the handler's exception and prints "Exception ignored" with a traceback: the stop
    was lost and the run went on to exit 0. Here an object's ``__del__`` raises the signal as the run starts."""
    path = write(tmp_path, CASES)
    script = (f"import signal, sys\nfrom prmg_cli import cli\nfrom prmg_cli.commands import suite\n"
              f"class Finalized:\n    def __del__(self):\n        signal.raise_signal({int(signum)})\n"
              f"start = suite._Run.start\n"
              f"def start_then_finalize(*args):\n    start(*args)\n    Finalized()\n"
              f"suite._Run.start = start_then_finalize\n"
              f"sys.argv = ['prmg', 'run', {str(path)!r}, '--runner', 'emulator', '--report', 'json']\ncli.main()\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == code and json.loads(result.stdout)["summary"]["exit_code"] == code, result.stderr
    assert "Exception ignored" not in result.stderr and "Traceback" not in result.stderr, result.stderr


def test_the_report_and_the_results_file_agree_under_sigterm_at_any_moment(tmp_path):
    """SIGTERM at random moments of a run (a fixed seed: the same moments every time), while cases run or
    while the JSON report (over a pipe's 64 KiB) is written to a pipe nobody reads yet: whatever finished,
    the report (whole) and the results file say the same of every case, and the exit code is the one the
    report states: 143, or the run's own when the signal came after its last case."""
    import random

    path = write(tmp_path, "".join(f"- {{name: c{i:02d}, shape: [8, 64, 4, 128]}}\n" for i in range(40)))
    moments = random.Random(21).sample([i / 20 for i in range(20)], 3)
    for attempt, delay in enumerate(moments):
        results = tmp_path / f"r{attempt}.jsonl"
        started = []

        def when(process):
            if not started and results.exists() and results.stat().st_size:      # the run record is written
                started.append(time.monotonic())
            return bool(started) and time.monotonic() - started[0] >= delay

        returncode, stderr, reported, recorded = _stopped_run(path, results, signal.SIGTERM, when, {})
        assert reported == recorded, (delay, stderr)
        assert returncode == (143 if "not_run" in reported.values() else returncode) and returncode in (0, 143), \
            (delay, stderr)
