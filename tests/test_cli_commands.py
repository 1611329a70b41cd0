"""The other commands end to end: validate on broken files, gen-case, import-ttk, doctor, bench, help."""

from __future__ import annotations

import gc
import json
import signal
import subprocess
import sys

import numpy as np
import pytest
import yaml

from conftest import ROOT, prmg_forked, prmg_here
from prmg_cli import cli

BROKEN = sorted((ROOT / "tests" / "data" / "broken").glob("*.yaml"))
TTK_CSV = ROOT / "tests" / "data" / "ttk_kernel_inplace_partial_rotary_mul_grad.csv"   # upstream copy


def run_in_process(capsys, monkeypatch, *args: str) -> tuple[int, str, str]:
    """`prmg ARGS` through the real entry point (cli.main), in this process: fast for many files."""
    monkeypatch.setattr(sys, "argv", ["prmg", *map(str, args)])
    handler, mask = signal.getsignal(signal.SIGTERM), signal.pthread_sigmask(signal.SIG_BLOCK, [])
    with pytest.raises(SystemExit) as stopped:
        cli.main(restore=True)
    captured = capsys.readouterr()
    # main(restore=True) leaves this process's signals as it found them (their mask is inherited by every later child),
    # and its garbage collector on (only a process of its own loads with it off: cli.command_starts)
    assert signal.getsignal(signal.SIGTERM) == handler and signal.pthread_sigmask(signal.SIG_BLOCK, []) == mask
    assert gc.isenabled() and not cli._PAUSED[0]
    return stopped.value.code, captured.out, captured.err


def test_a_pipe_of_prmg_closing_under_a_command_is_a_bug_said_as_one(tmp_path):
    """A BrokenPipeError out of a command (standard output and error take their closed pipes quietly, so it is a pipe
    of prmg's own: a worker's) is exit 3 with its traceback; click ended it as exit 1, nothing said (how session 15's
    lost worker hid, a red run without a report or a word)."""
    from unittest import mock

    from prmg_cli.commands import load

    with mock.patch.object(load("validate"), "main", side_effect=BrokenPipeError(32, "Broken pipe")):
        result = prmg_here("validate", ROOT / "cases")
    assert result.returncode == 3 and "internal error" in result.stderr, result
    assert "a pipe inside prmg closed: [Errno 32] Broken pipe" in result.stderr, result.stderr


def test_an_in_process_run_leaves_the_stop_handler_raising(capsys, monkeypatch):
    """After a ``prmg run`` in this process, whose outcome became final (its reports written: from then on a stop
    signal changes nothing), ``cli.main(restore=True)`` leaves ``on_stop`` raising again for its caller: before,
    a later test of the same process that relied on it (test_cluster's SIGTERM during a Ray wait) failed."""
    from prmg_cli.errors import Terminated, on_stop

    code, out, _ = run_in_process(capsys, monkeypatch, "run", ROOT / "cases" / "worked_example.yaml", "--runner",
                                  "emulator")
    assert code == 0 and out.rstrip().endswith("1 passed, 0 failed"), out
    with pytest.raises(Terminated):
        on_stop(signal.SIGTERM, None)


def test_the_collector_runs_again_once_the_command_starts():
    """``cli.main`` turns the garbage collector off while the command line loads; ``command_starts`` moves what
    loading made to the permanent generation and turns it back on, once."""
    gc.disable()
    cli._PAUSED[0] = True
    frozen = gc.get_freeze_count()
    try:
        cli.command_starts()
        assert gc.isenabled() and gc.get_freeze_count() > frozen and not cli._PAUSED[0]
        gc.disable()
        cli.command_starts()                              # nothing paused: left alone
        assert not gc.isenabled()
    finally:
        gc.unfreeze()
        gc.enable()
    # in a process of its own, main pauses it and the command's start (commands.app's STARTING hook) ends the pause
    script = ("import gc, sys\nfrom prmg_cli import cli\nsys.argv = ['prmg', 'validate', sys.argv[1]]\ntry:\n"
              "    cli.main()\nexcept SystemExit:\n    pass\nprint(gc.isenabled(), cli._PAUSED[0])")
    result = subprocess.run([sys.executable, "-c", script, str(ROOT / "cases" / "worked_example.yaml")],
                            capture_output=True, text=True, timeout=120)
    assert result.stdout.split()[-2:] == ["True", "False"], result.stdout + result.stderr


@pytest.mark.parametrize("path", BROKEN, ids=[p.stem for p in BROKEN])
def test_every_broken_file_is_one_line_naming_the_file_and_exit_2(path, capsys, monkeypatch):
    code, out, err = run_in_process(capsys, monkeypatch, "validate", path)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("prmg: error: ")
    assert path.name in lines[0]
    assert "Traceback" not in err and out == ""


def test_validate_names_every_broken_file_and_case_in_one_pass(capsys, monkeypatch, tmp_path):
    from prmg_cli.cases.loader import check_files
    from prmg_cli.ops.constraints import DEFAULT_SUPPORTED_MODES

    two = tmp_path / "two.yaml"
    two.write_text("- {name: ok, shape: [1, 1, 1, 8]}\n- {name: bad_dtype, shape: [1, 1, 1, 8], dtype: fp8}\n"
                   "- {name: bad_slice, shape: [1, 1, 1, 8], partial_slice: [0, 9]}\n")
    broken = [path for path in BROKEN if path.name != "run_cap.yaml"]     # that one ends the reading
    code, out, err = run_in_process(capsys, monkeypatch, "validate", *broken, two)
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and "Traceback" not in err
    assert len(lines) == len(check_files([*broken, two], DEFAULT_SUPPORTED_MODES)) >= len(broken) + 2
    assert all(line.startswith("prmg: error: ") for line in lines)
    for path in broken:
        assert any(path.name in line for line in lines), path.name
    assert [name for name in ("bad_dtype", "bad_slice") if any(f"'{name}'" in line for line in lines)] \
        == ["bad_dtype", "bad_slice"]


def test_broken_files_through_run_and_dump_too(capsys, monkeypatch, tmp_path):
    for command in (["run", "--list"], ["dump", "--out", str(tmp_path)]):
        code, _, err = run_in_process(capsys, monkeypatch, command[0], BROKEN[0], *command[1:])
        assert code == 2 and err.startswith("prmg: error: ") and BROKEN[0].name in err


def test_dump_refuses_a_pass_case_breaking_a_rule_as_run_does(capsys, monkeypatch, tmp_path):
    """A pass case whose slice or cos breaks the operator's rules has no golden: dump refused it only by a traceback
    from the golden (exit 3), where run and validate give one line naming the field. A mode the target lacks is no
    reason to refuse: dump serves any target."""
    for key, field in [("partial_slice: [0, 9]", "partial_slice"), ("cos_shape: [1, 2, 1, 4]", "cos_shape")]:
        path = tmp_path / "c.yaml"
        path.write_text(f"- name: c\n  shape: [1, 2, 2, 8]\n  {key}\n")
        code, _, err = run_in_process(capsys, monkeypatch, "dump", path, "--out", tmp_path / "out")
        assert code == 2 and err.startswith(f"prmg: error: {path}: case 'c': field '{field}': expect: pass"), err
        assert len(err.splitlines()) == 1 and not (tmp_path / "out").exists()
    path.write_text("- {name: c, shape: [1, 2, 2, 8], rotary_mode: half}\n")
    assert run_in_process(capsys, monkeypatch, "dump", path, "--out", tmp_path / "out")[0] == 0


def test_a_bad_progress_interval_says_what_0_means_for_it(capsys, monkeypatch, tmp_path):
    """0 turns the progress lines off: the refusal says so (it said '0: no limit', --timeout's words)."""
    path = tmp_path / "c.yaml"
    path.write_text("- {name: c, shape: [1, 1, 1, 8]}\n")
    code, _, err = run_in_process(capsys, monkeypatch, "run", path, "--progress-interval", "-1")
    assert (code, err) == (2, "prmg: error: --progress-interval must be a finite number of seconds >= 0 "
                              "(0: no progress lines), got -1.0\n")


def test_python_tags_are_never_executed(capsys, monkeypatch, tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.yaml"
    path.write_text(f"- !!python/object/apply:os.system ['touch {marker}']\n")
    code, _, err = run_in_process(capsys, monkeypatch, "validate", path)
    assert code == 2 and not marker.exists()


def test_missing_path_and_unknown_command_are_usage_errors(capsys, monkeypatch):
    code, _, err = run_in_process(capsys, monkeypatch, "validate", "/nonexistent/cases.yaml")
    assert code == 2 and "nonexistent" in err
    code, _, err = run_in_process(capsys, monkeypatch, "frobnicate")
    assert code == 2
    code, _, err = run_in_process(capsys, monkeypatch, "valdate", "cases/")      # a typo gets the nearest command
    assert code == 2 and err == ("prmg: error: prmg: No such command 'valdate' (did you mean 'validate'?) "
                                 "(see prmg -h)\n")


EXAMPLE = str(ROOT / "cases" / "worked_example.yaml")


@pytest.mark.parametrize("env, args, meant", [
    ({}, ("run", EXAMPLE, "--runner", "emulatr"), "emulator"),
    ({}, ("doctor", "--runner", "aclnn+gier"), "aclnn+geir"),
    ({}, ("run", EXAMPLE, "--report", "jsn"), "json"),
    ({}, ("run", EXAMPLE, "--standard", "defualt"), "default"),
    ({}, ("run", EXAMPLE, "--supported-modes", "1,halff"), "half"),
    ({}, ("coverage", EXAMPLE, "--op", "grd"), "grad"),
    ({}, ("coverage", EXAMPLE, "--report", "htm"), "html"),
    ({}, ("gen-case", "--preset", "modles"), "models"),
    ({}, ("gen-case", "--shape", "1,1,2,8", "--broadcast", "1s1d"), "1S1D"),
    ({}, ("gen-case", "--shape", "1,1,2,8", "--mode", "halff"), "half"),
    ({}, ("gen-case", "--shape", "1,1,2,8", "--dtype", "flaot16"), "float16"),
    ({}, ("gen-case", "--shape", "1,1,2,8", "--inputs", "dy=unifrom:0:1"), "uniform"),
    ({"PRMG_EMU_FAULT": "sigm"}, ("run", EXAMPLE, "--runner", "emulator"), "sign"),
    ({"PRMG_EMU_BUILD": "e9f0541"}, ("run", EXAMPLE, "--runner", "emulator"), "e9f0541c"),
])
def test_a_misspelt_value_of_any_option_or_variable_gets_the_nearest_one(capsys, monkeypatch, env, args, meant):
    """Did-you-mean beyond commands, options, case keys and checks: every option and emulator variable choosing from
    a list names the nearest choice, letters compared in any case (fuzzing found --runner, --report, --standard,
    gen-case's and coverage's choices and PRMG_EMU_FAULT/BUILD listing the choices only)."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    code, _, err = run_in_process(capsys, monkeypatch, *args)
    assert code == 2 and err.count("\n") == 1 and f"(did you mean '{meant}'?)" in err, err


@pytest.mark.parametrize("args, said", [
    (("--each-device",), "--each-device runs every case on each device of --devices, and none is given: it would "
                         "run on device 0 alone (give --devices all, or a list)"),
    (("--device", "1", "--devices", "0"), "--device 1 and --devices 0 both name the devices: give one"),
    (("--device", "-1"), "--device must be a device id (digits 0-9), got '-1'"),
])
def test_device_options_that_contradict_or_do_nothing_are_refused(capsys, monkeypatch, args, said):
    """Fuzzing the session-5 devices: --each-device without --devices ran on device 0 alone, read as the gate over
    every chip; --device beside --devices was dropped without a word; --device -1 was told to be a list or 'all'."""
    code, out, err = run_in_process(capsys, monkeypatch, "run", EXAMPLE, "--runner", "emulator", *args)
    assert code == 2 and err == f"prmg: error: {said}\n" and not out


def test_an_empty_path_is_refused_by_every_option_naming_files(capsys, monkeypatch, tmp_path):
    """An empty path (``--results "$OUT"`` with OUT unset) was read as the current folder (``prmg run ''`` ran every
    case file there, ``dump --out ''`` wrote into it, ``-o ''`` said 'is a directory') or as not given
    (``--results ''``, ``--save-failures ''``: no results, no artifacts, exit 0). Each option of each command that
    names files or folders (its metavar says so) refuses it in one line, before anything runs."""
    from prmg_cli.commands import COMMANDS, load

    monkeypatch.chdir(tmp_path)
    checked = 0
    for command in COMMANDS:
        options = load(command).OPTIONS
        for option in options:
            named = option.metavar and any(word in option.metavar for word in ("PATH", "FILE", "DIR", ".jsonl"))
            assert bool(named) == option.path or option.metavar == "FORMAT[:FILE]", (command, option.name)
            if not option.path:
                continue
            args = [command]
            for other in options:                # the other required ones given, so the empty one is what is wrong
                if other.required and other is not option:
                    args += ["x"] if other.argument else [other.flags[-1], "x"]
            args += [""] if option.argument else [option.flags[-1], ""]
            code, out, err = run_in_process(capsys, monkeypatch, *args)
            assert code == 2 and err.splitlines()[-1].endswith("an empty path (an unset shell variable?), which "
                                                                  "would read as the current folder or as not given")
            checked += 1
    assert checked == 23 and list(tmp_path.iterdir()) == []


def test_help_texts_have_examples(capsys, monkeypatch):
    for command in ("run", "validate", "dump", "gen-case", "import-ttk", "doctor", "bench"):
        code, out, _ = run_in_process(capsys, monkeypatch, command, "--help")
        assert code == 0 and "Usage" in out, command
    code, out, _ = run_in_process(capsys, monkeypatch, "run", "--help")
    assert "prmg run cases/" in out and "--supported-modes" in out


def test_bench_offers_only_the_runners_it_can_time_and_refuses_another_before_reading_cases(capsys, monkeypatch,
                                                                                          tmp_path):
    """``bench --help`` lists the runners it times (aclnn launches between ACL events), not graph mode's, which it
    refuses (and ``doctor --help`` says what doctor does with a runner, not what a run does); a runner it refuses or
    does not know is named before any case is read (exit 2, not 5 for a case file whose cases it would not time)."""
    from prmg_cli.device.runners import RUNNERS, timed_runners

    assert timed_runners() == ["auto", "aclnn", "emulator"] and set(RUNNERS) - set(timed_runners()) == {
        "geir", "aclnn+geir", "emulator-geir", "emulator+geir"}
    code, out, _ = run_in_process(capsys, monkeypatch, "bench", "--help")
    runner_help = " ".join(out.split("--runner NAME", 1)[1].split("--op-lib", 1)[0].split())
    assert code == 0 and "emulator (the host emulator)" in runner_help and "geir" not in runner_help
    code, out, _ = run_in_process(capsys, monkeypatch, "doctor", "--help")         # not run's 'is exit 2': doctor's 1
    runner_help = " ".join(out.split("--runner NAME", 1)[1].split("--op-lib", 1)[0].split())
    assert code == 0 and "exit 2" not in runner_help and "exit 1 when it is not usable" in runner_help
    skipped = tmp_path / "half.yaml"
    skipped.write_text("- {name: h, shape: [1, 2, 1, 4], rotary_mode: half}\n")
    for runner, says in (("geir", "--runner geir: prmg bench times the aclnn launch between ACL events; graph mode "
                                  "gives no kernel time of its own (use auto, aclnn, emulator)"),
                         ("geri", "--runner 'geri' (did you mean 'geir'?)")):
        code, _, err = run_in_process(capsys, monkeypatch, "bench", skipped, "--runner", runner)
        assert code == 2 and err.startswith(f"prmg: error: {says}") and err.count("\n") == 1, err


def test_gen_case_from_flags_runs_green(tmp_path):
    out = tmp_path / "gen.yaml"
    result = prmg_here("gen-case", "--shape", "2,16,4,128", "--broadcast", "1S1D", "--slice", "33,97",
                       "--dtype", "bfloat16", "--cos-dtype", "float32", "--inputs", "cos=rope:10000,sin=rope:10000",
                       "-o", out)
    assert result.returncode == 0, result.stderr
    case = yaml.safe_load(out.read_text())["cases"][0]
    assert case["shape"] == [2, 16, 4, 128] and case["cos_shape"] == [1, 16, 1, 64]
    result = prmg_here("gen-case", "--shape", "1,1,1,2048", "--slice", "0,64", "--expect",
                       "ACLNN_ERR_INNER_TILING_ERROR", "--name", "too_wide", "-o", out, "--append")
    assert result.returncode == 0, result.stderr
    result = prmg_forked("run", out, "--runner", "emulator")
    assert result.returncode == 0, result.stdout + result.stderr
    # a RoPE sin is written saying why its partners are alike (as the presets' are), so the run does not warn
    from prmg_cli.cases.gencase import ROPE_PARTNERS
    assert case["partners_alike"] == ROPE_PARTNERS and len(f"  partners_alike: {case['partners_alike']}") <= 80
    assert result.stdout.rstrip().splitlines()[-1] == "2 passed, 0 failed"
    assert "partners alike" not in result.stdout + result.stderr


def test_gen_case_refuses_a_broken_constraint_unless_an_error_is_expected():
    result = prmg_here("gen-case", "--shape", "1,1,1,2048", "--slice", "0,64")
    assert result.returncode == 2
    assert "D = 2048 exceeds 1024" in result.stderr and "Traceback" not in result.stderr
    result = prmg_here("gen-case", "--shape", "1,1,1,2048", "--slice", "0,64", "--expect", "error")
    assert result.returncode == 0 and "error" in result.stdout


def test_gen_case_presets_are_deterministic_and_valid(tmp_path):
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    for target in (first, second):
        assert prmg_here("gen-case", "--preset", "negative", "-o", target).returncode == 0
    assert first.read_bytes() == second.read_bytes()
    result = prmg_here("validate", first)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("args, starts", [
    (["run", EXAMPLE, "--runner", "emulator", "--report", "json:-"], "{"),
    (["run", EXAMPLE, "--runner", "emulator", "--report", "csv", "-o", "-"], "name,status,"),
    (["coverage", EXAMPLE, "-o", "-"], "grad (InplacePartialRotaryMulGrad): "),
    (["gen-case", "--shape", "1,2,2,8", "-o", "-"], "# Generated by prmg gen-case"),
    (["import-ttk", TTK_CSV, "-o", "-"], "# Imported by `prmg import-ttk"),
], ids=["run-report", "run-o", "coverage", "gen-case", "import-ttk"])
def test_an_output_named_dash_is_standard_output_never_a_file_named_dash(args, starts, tmp_path):
    """``-o -`` and ``--report FORMAT:-`` write to standard output, as Unix tools read ``-``: each wrote a file named
    ``-`` in the current folder (every option whose ``Option.output`` says it names what the command writes)."""
    from prmg_cli.commands import COMMANDS, load

    result = prmg_here(*args, cwd=tmp_path)
    assert result.returncode == 0 and result.stdout.startswith(starts), result.stderr
    assert list(tmp_path.iterdir()) == []
    writers = {command for command in COMMANDS for option in load(command).OPTIONS if option.output}
    assert writers == {"run", "report", "coverage", "gen-case", "import-ttk"}


def test_import_ttk_and_run_its_cases(tmp_path):
    out = tmp_path / "ttk.yaml"
    result = prmg_here("import-ttk", TTK_CSV, "-o", out)
    assert result.returncode == 0, result.stderr
    result = prmg_forked("run", out, "--runner", "emulator", "--report", "json")
    report = json.loads(result.stdout)
    assert result.returncode == 0
    assert report["summary"]["passed"] == 14 and report["summary"]["total"] == 14
    assert {case["standard"] for case in report["cases"]} == {"double_thousandth"}


def test_import_ttk_reports_rows_it_cannot_map(tmp_path):
    rows = TTK_CSV.read_text().splitlines()
    broken = [rows[0], rows[1], rows[2].replace("inplace_partial_rotary_mul_grad", "rotary_mul", 1),
              rows[3].replace(",True,", ",False,")]
    path = tmp_path / "mixed.csv"
    path.write_text("\n".join(broken) + "\n")
    result = prmg_here("import-ttk", path)
    assert result.returncode == 0
    assert "row 2" in result.stderr and "row 3" in result.stderr
    assert len(yaml.safe_load(result.stdout)["cases"]) == 1


def test_doctor_says_what_it_found(emulator):
    result = prmg_forked("doctor")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "runner auto would pick: emulator" in result.stdout
    assert "aclnnInplacePartialRotaryMulGradGetWorkspaceSize: resolves" in result.stdout
    assert "  PRMG_EMU_FAULT_SHAPE: B,S,N,D: the fault acts only when dy" in result.stdout
    assert "  neg_sin                sin negated in every lane: dx = c[a]*g[a] -/+ s[p]*g[p]\n" in result.stdout
    result = prmg_forked("doctor", env={"ASCEND_HOME_PATH": str(emulator.root)})
    assert result.returncode == 0 and str(emulator.root) in result.stdout
    result = prmg_forked("doctor", "--runner", "aclnn", env={"ASCEND_HOME_PATH": "/nonexistent"})
    assert result.returncode == 1 and "NOT usable" in result.stdout


def test_doctor_lists_every_emulator_fault_and_variable_from_the_emulators_readme():
    from prmg_cli.commands import doctor_findings
    from prmg_cli.device import toolkit

    names = toolkit.emulator_fault_names()                       # faults.c's table
    assert set(toolkit.emulator_fault_effects()) == set(names)   # the README describes each, and no other
    lines = doctor_findings.emulator_lines({"PRMG_EMU_FAULT": "sign"})
    listed = [line.split()[0] for line in lines if line.startswith("  ") and not line.startswith("   ")
              and ":" not in line.split()[0]]
    assert listed == list(names)
    assert not any("(not described)" in line for line in lines) and all(len(line) <= 100 for line in lines)
    variables = [line.split(":")[0].strip() for line in lines if line.startswith("  PRMG_EMU_")]
    assert variables == ["PRMG_EMU_DEVICES", "PRMG_EMU_SOC", "PRMG_EMU_BUILD", "PRMG_EMU_MODES", "PRMG_EMU_FAULT",
                         "PRMG_EMU_FAULT_SHAPE", "PRMG_EMU_BEYOND_GUARD", "PRMG_EMU_FAULT_DEVICE",
                         "PRMG_EMU_DEVICE_MEMORY"]
    assert "Now PRMG_EMU_FAULT=sign." in " ".join(" ".join(lines).split())


def test_bench_times_cases_with_events_and_labels_host_timings(tmp_path):
    path = tmp_path / "b.yaml"
    path.write_text("- {name: b1, shape: [2, 64, 4, 128], cos_shape: [1, 64, 1, 64], partial_slice: [32, 96]}\n"
                    "- {name: neg, shape: [1, 1, 1, 8], cos_shape: [1, 1, 1, 3], partial_slice: [0, 3], "
                    "expect: {error: any}}\n")
    result = prmg_forked("bench", path, "--runner", "emulator", "--warmup", "1", "--repeat", "3")
    assert result.returncode == 0, result.stderr
    assert "b1" in result.stdout and "host timings (emulator), not NPU" in result.stdout
    result = prmg_forked("bench", path, "--runner", "emulator", "--repeat", "2", "--report", "json",
                         "--peak-gbps", "100")
    rows = json.loads(result.stdout)["cases"]
    assert [row["name"] for row in rows] == ["b1"]
    assert rows[0]["bytes"] == 2 * (2 * 64 * 4 * 64 * 4) + 2 * 64 * 64 * 4
    assert rows[0]["median_ms"] > 0 and rows[0]["peak_share"] == pytest.approx(rows[0]["gbps"] / 100)


def test_bench_host_refuses_the_options_of_timing_cases(capsys, monkeypatch):
    """``prmg bench --host cases.yaml --repeat 3`` timed prmg's own workloads and dropped the file and the flags
    without a word (as --preset with one case's options, issue 36): refused in one line naming them."""
    code, _, err = run_in_process(capsys, monkeypatch, "bench", "--host", "cases/smoke.yaml", "--repeat", "3",
                                  "-k", "x")
    assert code == 2 and err == "prmg: error: --host times prmg's own host workloads: it takes no case files, " \
                                "--repeat, -k\n"


def test_the_whole_process_bench_times_real_prmg_runs_and_judges_the_targets(monkeypatch):
    """``prmg bench --host``'s small-case measure runs ``prmg run`` processes on its generated files (here of
    2 and 1 cases, once after a warm-up; the verdicts are test_reference's)."""
    from prmg_cli.commands import bench_host

    monkeypatch.setattr(bench_host, "SMALL_RUNS", (2, 1))
    found = bench_host.run_whole_process_bench(repeat=1, counts=bench_host.SMALL_RUNS, imports=False)
    runs = found["runs"]
    assert [run["exit_codes"] for run in runs.values()] == [[0], [0]]
    assert 0 < runs["1"]["wall_s"] and runs["2"]["per_case_ms"] == pytest.approx(runs["2"]["wall_s"] / 2 * 1e3)
    assert "   2 cases:" in bench_host.format_whole_process_bench(found)
    assert bench_host.pipeline_verdicts([], found)[0].startswith("whole process, 2 small cases: ")


def test_dump_golden_matches_an_independent_float64_computation(tmp_path):
    """Every dumped golden, element by element, against a plain float64 loop over the operator's formulas."""
    path = tmp_path / "d.yaml"
    path.write_text("""
- name: d_{rotary_mode}_{dtype}
  shape: [1, 2, 3, 16]
  cos_shape: [1, 2, 1, 8]
  partial_slice: [5, 13]
  sweep: {rotary_mode: [half, interleave, quarter, interleave-half], dtype: [float32, float16, bfloat16]}
""")
    result = prmg_here("dump", path, "--out", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    import ml_dtypes
    for folder in sorted((tmp_path / "out").iterdir()):
        meta = json.loads((folder / "meta.json").read_text())["case"]
        dtype = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}[meta["dtype"]]
        load = lambda name: np.load(folder / f"{name}.npy").view(dtype).astype(np.float64)
        dy, cos, sin, rounded = load("dy"), load("cos"), load("sin"), load("expected")
        golden = np.load(folder / "golden.npy")                   # the exact result, float64
        start, end = meta["partial_slice"]
        expected = dy.copy()
        for index in np.ndindex(*dy.shape[:3]):
            c, s = cos[0, index[1], 0], sin[0, index[1], 0]
            g = dy[index][start:end]
            expected[index][start:end] = plain_backward(g, c, s, meta["rotary_mode"])
        want = expected.astype(dtype).astype(np.float64)
        assert np.array_equal(rounded, want) and np.allclose(golden, expected, rtol=1e-12, atol=0), folder.name


def plain_backward(g, c, s, mode):
    """operator.md's formulas, one element at a time."""
    length = len(g)
    dx = [0.0] * length
    if mode in (0, 2):
        for base, width in ([(0, length)] if mode == 0 else [(0, length // 2), (length // 2, length // 2)]):
            half = width // 2
            for k in range(half):
                i, j = base + k, base + half + k
                dx[i] = c[i] * g[i] + s[j] * g[j]
                dx[j] = c[j] * g[j] - s[i] * g[i]
    elif mode == 1:
        for k in range(0, length, 2):
            dx[k] = c[k] * g[k] + s[k + 1] * g[k + 1]
            dx[k + 1] = c[k + 1] * g[k + 1] - s[k] * g[k]
    else:
        half = length // 2
        for k in range(half):
            dx[2 * k] = c[k] * g[k] + s[half + k] * g[half + k]
            dx[2 * k + 1] = c[half + k] * g[half + k] - s[k] * g[k]
    return dx


def test_dump_refuses_a_case_too_big_for_this_machine(capsys, monkeypatch, tmp_path):
    path = tmp_path / "huge.yaml"
    path.write_text("- {name: huge, shape: [1024, 1024, 256, 1024], cos_shape: [1, 1024, 1, 1024], "
                    "partial_slice: [0, 1024]}\n")
    code, _, err = run_in_process(capsys, monkeypatch, "dump", path, "--out", tmp_path / "out")
    assert code == 2 and "case 'huge'" in err and "GiB" in err


def test_the_readme_example_case_file_runs_green(tmp_path):
    """The case file the README shows first ("your own case") is valid and passes without a warning on a target of
    its mode, and today's target skips it saying why, so the docs stay true."""
    readme = (ROOT / "README.md").read_text()
    example = readme.split("```yaml\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "example.yaml"
    path.write_text(example)
    result = prmg_forked("run", path, "--runner", "emulator", "--supported-modes", "0,1,2,3")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.rstrip().splitlines()[-1] == "2 passed, 0 failed"
    today = prmg_forked("run", path, "--runner", "emulator")
    assert today.returncode == 5 and "SKIP 2 cases: rotary_mode half not supported by the target (supported: " \
                                     "interleave)" in today.stdout
    assert "`SKIP 2 cases: rotary_mode half not supported by the target (supported: interleave)`" \
        in " ".join(readme.split())


def test_validate_and_coverage_fit_80_columns(tmp_path, capsys, monkeypatch):
    """At COLUMNS=80 the summary of ``prmg validate`` and every line of ``prmg coverage``'s table fit 80 columns (the
    example case name gives way before a class's reason, then the reason: the forward's class names, such as 'A2/A3:
    slice outside [0, D]', left a reason kept at 20 characters 83 columns); a wider screen keeps the 24-character
    examples."""
    path = tmp_path / "c.yaml"
    path.write_text("- {name: a_rather_long_case_name_of_the_half_mode, shape: [1, 2, 2, 16], rotary_mode: half}\n"
                    "- {name: forward_half, op: forward, shape: [1, 2, 2, 16], rotary_mode: half}\n")
    monkeypatch.setenv("COLUMNS", "80")
    for command in ("validate", "coverage"):
        code, out, _ = run_in_process(capsys, monkeypatch, command, path)
        assert code == 0 and max(map(len, out.splitlines())) <= 80, out
    monkeypatch.setenv("COLUMNS", "150")
    code, out, _ = run_in_process(capsys, monkeypatch, "coverage", path)
    assert code == 0 and " a_rather_long_case_name… " in out
