"""Issue 13 end to end: run-to-run comparison, provenance, failure artifacts, golden-free checks."""

from __future__ import annotations

import json
import re
import textwrap
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from conftest import prmg, prmg_forked, prmg_here, twin
from prmg_cli.device import provenance
from prmg_cli.reports import compare
from prmg_cli.results import CaseResult

CASES = """
- {name: a_fp32, shape: [1, 2, 2, 32], partial_slice: [4, 20]}
- {name: b_bf16, shape: [2, 1, 2, 16], dtype: bfloat16}
- {name: c_fp16, shape: [1, 1, 1, 64], partial_slice: [0, 64], dtype: float16}
"""


def write(tmp_path: Path, text: str = CASES) -> Path:
    path = tmp_path / "cases.yaml"
    path.write_text(text)
    return path


def results_file(tmp_path: Path, name: str, records: list[CaseResult]) -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r.to_dict()) + "\n" for r in records))
    return path


def result(name, status="passed", ratio=0.4, samples=(), **extra) -> CaseResult:
    """A result judged by ``default`` whose share of the budget beyond the output's rounding is ``ratio`` (or with
    the ``metrics`` given)."""
    extra.setdefault("metrics", {"max_err_ratio": 0.99996, "beyond_rounding": ratio})
    return CaseResult(name=name, status=status, kernel_samples=list(samples), **extra)


# --- prmg compare ---------------------------------------------------------------------------------------

def test_a_failure_of_a_case_the_baseline_never_ran_is_a_new_failure(tmp_path):
    """A baseline whose run was stopped (SIGTERM, a job's timeout: its cases not_run) against a build failing them
    compared 'status changed', exit 0: a case A never judged is as new to B as one only in B. A case not run in both,
    or run in B alone and passing there, is no regression; a failure in A failing again is none either."""
    a = {name: result(name, "not_run", metrics={}) for name in ("x", "y", "z", "w")}
    a["known"] = result("known", "failed")
    b = {"x": result("x", "failed", message="dy wrong"), "y": result("y", "error"), "z": result("z"),
         "w": result("w", "not_run", metrics={}), "known": result("known", "failed")}
    comparison = compare.compare(a, b)
    assert [(c.category, c.name) for c in comparison.changes] == [("new failure", "x"), ("new failure", "y"),
                                                                 ("fixed", "z")]
    assert comparison.changes[0].detail == "not judged in A: dy wrong" and len(comparison.regressions) == 2
    output, code = compare.compare_files(results_file(tmp_path, "a.jsonl", list(a.values())),
                                         results_file(tmp_path, "b.jsonl", list(b.values())))
    assert code == 1 and "new failure" in output


def test_compare_orders_new_failures_first_and_exits_1(tmp_path):
    a = results_file(tmp_path, "a.jsonl", [result("x"), result("y", "failed"), result("z"), result("gone"),
                                           result("drift", ratio=0.2)])
    b = results_file(tmp_path, "b.jsonl", [result("x", "failed"), result("y"), result("z"), result("new"),
                                           result("drift", ratio=0.9)])
    out = prmg_here("compare", a, b, "--report", "json")
    assert out.returncode == 1, out.stderr
    document = json.loads(out.stdout)
    assert [(c["category"], c["name"]) for c in document["changes"]] == [
        ("new failure", "x"), ("precision drift", "drift"), ("only in A", "gone"), ("fixed", "y"), ("only in B", "new")]
    assert document["summary"]["regressions"] == 3
    table = prmg_here("compare", a, b)
    assert table.stdout.rstrip().splitlines()[-1].startswith("3 regressions (1 new failure, 1 precision drift")
    assert "# prmg compare" in prmg_here("compare", a, b, "--report", "markdown").stdout


def test_compare_of_equal_runs_is_clean(tmp_path):
    a = results_file(tmp_path, "a.jsonl", [result("x"), result("y", ratio=0.5, samples=(1.0, 1.01, 0.99))])
    b = results_file(tmp_path, "b.jsonl", [result("x", ratio=0.55), result("y", ratio=0.5, samples=(1.02, 1.0, 0.98))])
    out = prmg_here("compare", a, b)
    assert out.returncode == 0 and out.stdout.startswith("no changes")


@pytest.mark.verdict
def test_precision_drift_of_a_correctly_rounded_kind_is_seen_beyond_the_rounding():
    """A bfloat16 result's err/budget stays near 1 whatever the kernel does within budget; what it takes beyond
    the output's rounding (``beyond_rounding``, the default standard's drift metric) is what moves."""
    drifted = compare.compare({"x": result("x", ratio=0.0)}, {"x": result("x", ratio=0.3)})
    assert [(c.category, c.before, c.after) for c in drifted.changes] == [("precision drift", "0", "0.3")]
    assert "beyond_rounding rose" in drifted.changes[0].detail
    assert not compare.compare({"x": result("x", ratio=0.0)}, {"x": result("x", ratio=0.04)}).changes


@pytest.mark.verdict
def test_compare_summary_counts_in_plural_words():
    before = {name: result(name) for name in ("x", "y", "z")}
    after = {"x": result("x", "failed"), "y": result("y", "failed"), "z": result("z", "skipped")}
    summary = compare.render(compare.compare(before, after)).splitlines()[-1]
    assert summary == "3 regressions (2 new failures, 1 verdict lost); 0 fixed; 3 cases in A, 3 in B"
    one = compare.render(compare.compare({"x": result("x")}, {"x": result("x", "failed")})).splitlines()[-1]
    assert one == "1 regression (1 new failure); 0 fixed; 1 case in A, 1 in B"
    many = compare.compare({name: result(name) for name in "xyz"},
                           {"x": result("x", "failed"), "y": result("y", "skipped"), "w": result("w", "failed")})
    lines = compare.render(many, width=80).splitlines()       # a summary longer than the screen is wrapped
    assert max(map(len, lines)) <= 80 and lines[-2].startswith("4 regressions (2 new failures, 1 verdict lost, ")
    # A and B kept (some cases only in B): the detail gives way below MIN_SQUEEZED to names that say which case
    # (the rows were 82 columns, the names 9: 'smoke…s1-31')
    names = [f"smoke.interleave_{dtype}_2x3x4x24_{pattern}_s{index}-18" for index, (dtype, pattern) in
             enumerate((dtype, pattern) for dtype in ("fp32", "fp16", "bf16") for pattern in ("BSND", "111D", "1S1D"))]
    detail = "2048 of 4096 elements over budget: err 1.3e7 ulp > bound 3.65 ulp"
    mixed = compare.compare({name: result(name) for name in names[:5]},
                            {**{name: result(name, "failed", message=detail) for name in names[1:]},
                             names[0]: result(names[0], "skipped")})
    lines = compare.render(mixed, width=80).splitlines()
    rows = [line.split() for line in lines if line.startswith("new failure")]
    assert max(map(len, lines)) <= 80 and len(rows) == 8 and all(
        re.search(r"fp32|fp16|bf16", row[2]) and row[4] == "failed" for row in rows), lines
    narrow = compare.render(mixed, width=60).splitlines()       # never below SMALLEST_NAME for the names' sake
    details = [line.partition(" failed ")[2].strip() for line in narrow if line.startswith("new failure")]
    assert max(map(len, narrow)) <= 60 and all(text.startswith(("only in B", "2048 of")) for text in details), narrow


@pytest.mark.verdict
def test_kernel_time_drift_needs_repeated_timings_beyond_noise():
    assert compare.time_drift([1.0, 1.0], [2.5, 2.5], 0.05) == ""           # two timings: not judged below 3x
    assert compare.time_drift([1.0, 1.02, 0.98], [1.05, 1.03, 1.07], 0.05) == ""
    assert "median kernel time 1 -> 1.5 ms" in compare.time_drift([1.0, 1.02, 0.98], [1.5, 1.52, 1.48], 0.05)
    assert compare.time_drift([1.0, 1.5, 0.5], [1.6, 2.0, 1.2], 0.05) == ""   # a noisy baseline hides it


@pytest.mark.verdict
def test_one_timing_per_case_shows_a_slow_path_past_a_wide_bound():
    """Issue 32: an ordinary run times each case once, and a slow path of 25 ms against 0.05 ms (500x) passed
    unreported as "not judged for time". With fewer than 3 timings a rise past 3x *and* 1 ms is a drift."""
    assert "kernel time 0.05 -> 25 ms (500x, past 3x and 1 ms" in compare.time_drift([0.05], [25.0], 0.05)
    assert compare.time_drift([0.2], [1.0], 0.05) == ""                       # 5x, but 0.8 ms: noise of one timing
    assert "kernel time 0.5 -> 2 ms (4x" in compare.time_drift([0.5], [2.0], 0.05)   # past both: 4x and 1.5 ms
    assert compare.time_drift([2.0], [5.9], 0.05) == ""                       # 3.9 ms more, but under 3x
    slow = compare.compare({"x": result("x", kernel_ms=0.05, runner="aclnn")},
                        {"x": result("x", kernel_ms=25.0, runner="aclnn")})
    assert [change.category for change in slow.regressions] == ["time drift"]
    assert not compare.compare({"x": result("x", kernel_ms=0.05, runner="emulator")},
                            {"x": result("x", kernel_ms=25.0, runner="emulator")}).changes    # host timings


def judged_file(path: Path, settings: dict, *records: CaseResult) -> Path:
    """A results file of one run judged under ``settings`` (its run record's, whose key its ``records`` hold)."""
    from prmg_cli.reports import store

    run, key = store.RunRecord("r" * 32, "", [record.name for record in records], settings, {}), \
        store.settings_key(settings)
    path.write_bytes(b"".join(store.encode(item) for item in (run, *(replace(r, run_id="r" * 32, judged_under=key)
                                                                    for r in records))))
    return path


@pytest.mark.verdict
def test_compare_refuses_to_hold_a_changed_case_or_other_judging_against_the_first_run(tmp_path):
    """Issue 32: 0 regressions, exit 0 when B weakened a case, was judged under a looser standard, or failed a case A
    never ran. Now the first two are not comparable (a regression unless --allow-changed) and the third a new
    failure."""
    over = {"max_err_ratio": 3.0, "beyond_rounding": 2.0}
    a = judged_file(tmp_path / "a.jsonl", {"standard": None, "strict": False},
                    result("weakened", fingerprint="f1", definition={"inputs": {}}),
                    result("loosened", "failed", standard="default", fingerprint="f2", metrics=over),
                    result("same", standard="default", fingerprint="f3"))
    b = judged_file(tmp_path / "b.jsonl", {"standard": "allclose", "strict": False},
                    result("weakened", standard="allclose", fingerprint="f1b",
                           definition={"inputs": {"sin": {"uniform": [0, 0]}}}),
                    result("loosened", standard="allclose", fingerprint="f2", metrics={"max_tol_ratio": 0.5}),
                    result("only_b", "failed", standard="allclose", metrics={"max_tol_ratio": 9.0}))
    text, code = compare.compare_files(str(a), str(b), "json")
    changes = {change["name"]: change for change in json.loads(text)["changes"]}
    assert code == 1 and {name: change["category"] for name, change in changes.items()} == {
        "weakened": "not comparable", "loosened": "not comparable", "only_b": "new failure", "same": "only in A"}
    assert changes["weakened"]["detail"] == "its definition changed (inputs)"
    assert changes["loosened"]["detail"] == ("judged under other settings: standard default -> allclose; --standard "
                                             "none -> allclose")
    text, code = compare.compare_files(str(a), str(b), "json", allow_changed=True)
    document = json.loads(text)
    assert [(c["category"], c["name"]) for c in document["changes"]][:4] == [
        ("new failure", "only_b"), ("not comparable", "loosened"), ("not comparable", "weakened"),
        ("only in A", "same")]
    assert document["summary"]["regressions"] == 2 and ("fixed", "loosened") in [
        (c["category"], c["name"]) for c in document["changes"]]


@pytest.mark.verdict
def test_a_verdict_of_every_chip_is_not_comparable_with_one_of_fewer_chips(tmp_path):
    """Issue 32 (session 5): A ran with --each-device (chip 3 failed), B on one chip or on fewer chips: B's pass
    was a fix, exit 0, though it never ran on chip 3. Now it is not comparable, naming the flag or the chips, while
    two --each-device runs over the same chips compare."""
    every = {"0": "passed", "1": "passed", "2": "passed", "3": "failed"}
    a = judged_file(tmp_path / "a.jsonl", {"each_device": True},
                    result("x", "failed", device="3", device_statuses=every, metrics={"max_err_ratio": 3.0}))
    shared = judged_file(tmp_path / "shared.jsonl", {}, result("x", device="0"))
    fewer = judged_file(tmp_path / "fewer.jsonl", {"each_device": True},
                        result("x", device="0,1", device_statuses={"0": "passed", "1": "passed"}))
    same = judged_file(tmp_path / "same.jsonl", {"each_device": True},
                       result("x", device="0,1,2,3", device_statuses=dict.fromkeys(every, "passed")))
    details = {}
    for b in (shared, fewer, same):
        text, code = compare.compare_files(str(a), str(b), "json")
        (change,) = json.loads(text)["changes"]
        details[b.stem] = (code, change["category"], change["detail"])
    assert details == {
        "shared": (1, "not comparable", "judged under other settings: --each-device true -> false"),
        "fewer": (1, "not comparable", "judged under other settings: chips [0, 1, 2, 3] -> [0, 1]"),
        "same": (0, "fixed", "")}


@pytest.mark.verdict
def test_a_pass_on_another_chip_is_no_fix_and_a_failure_names_both_chips():
    """Issue 32 (fifth look): runs sharing the cases among the chips put a case on whichever chip was free. A failed
    on chip 1 (computing wrong) and B passed on chip 0: compare called it fixed, though B never ran it on chip 1.
    It is a status change naming both chips; a new failure on another chip than A's pass names both too; a fix on
    the same chip stays a fix."""
    failed = result("x", "failed", device="1", metrics={"max_err_ratio": 3.0})
    changes = compare.compare({"x": failed}, {"x": result("x", device="0")}).changes
    assert [(change.category, change.detail) for change in changes] == [
        ("status changed", "failed on device 1 in A, passed on device 0 in B: another chip, not a fix")]
    failed.message = "64 of 64 elements over budget"
    changes = compare.compare({"x": result("x", device="0")}, {"x": failed}).regressions
    assert [(change.category, change.detail) for change in changes] == [
        ("new failure", "passed on device 0 in A, failed on device 1 in B: 64 of 64 elements over budget")]
    assert [change.category for change in compare.compare({"x": failed}, {"x": result("x", device="1")}).changes] \
        == ["fixed"]


@pytest.mark.verdict
def test_a_verdict_of_the_emulator_is_not_comparable_with_one_of_a_toolkit():
    """Issue 32 (audit): A on the NPU, B on the host emulator (a correct kernel) was 0 regressions, exit 0, though
    B's kernel never ran; now the case is not comparable either way, while two toolkits' runs compare."""
    for before, after in (("aclnn", "emulator"), ("emulator", "aclnn")):
        moved = compare.compare({"x": result("x", runner=before)}, {"x": result("x", runner=after)})
        assert [(change.category, change.detail) for change in moved.regressions] == [(
            "not comparable", f"the host emulator gave one verdict, a toolkit the other (runner {before} -> {after})")]
    assert not compare.compare({"x": result("x", runner="aclnn")}, {"x": result("x", runner="aclnn")}).changes


def test_a_weakened_case_is_not_comparable_end_to_end(tmp_path, emulator, monkeypatch):
    """The issue's own example through real runs: a sign-wrong kernel fails the case in A; B sets sin to 0, where no
    sign can be wrong, and passes. That was a fix, exit 0; now the case is not comparable."""
    from prmg_cli.commands.run import Request
    from prmg_cli.commands.suite import run_suite

    case = "- {name: w, shape: [1, 2, 2, 16], partial_slice: [0, 16]}\n"
    weakened = case.replace("}\n", ", inputs: {sin: {uniform: [0, 0]}}}\n")
    monkeypatch.setenv("PRMG_EMU_FAULT", "sign")
    for name, text in (("a", case), ("b", weakened)):
        (tmp_path / f"{name}.yaml").write_text(text)
        run_suite(Request(paths=(str(tmp_path / f"{name}.yaml"),), runner="emulator",
                          results=str(tmp_path / f"{name}.jsonl"), report=("json:/dev/null",)))
    text, code = compare.compare_files(str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "json")
    (change,) = json.loads(text)["changes"]
    assert code == 1 and (change["category"], change["before"], change["after"]) == ("not comparable", "failed",
                                                                                      "passed")
    assert change["detail"] == "its definition changed (inputs)"


def test_a_verdict_of_other_limits_under_the_same_standard_name_is_not_comparable(tmp_path, emulator, monkeypatch):
    """Issue 32 (session 10): records named only their standard, and prmg's version number (0.1.0) tells no build from
    another. A sign-wrong kernel failed in A; B, judged by a prmg whose ``default`` table scales its budget up (an older
    or edited build: the same name, other limits), passed: a fix, exit 0, and ``--resume`` would take A's verdicts
    under the new table. Now the run record states each standard's limits and the judging code's fingerprint: the case
    is not comparable naming the limits, and a resume runs it again."""
    from prmg_cli.commands.run import Request
    from prmg_cli.commands.suite import run_suite
    from prmg_cli.judging.standards import STANDARDS

    (tmp_path / "w.yaml").write_text("- {name: w, shape: [1, 2, 2, 16], partial_slice: [0, 16]}\n")
    monkeypatch.setenv("PRMG_EMU_FAULT", "sign")

    def run(name: str, **options) -> None:
        run_suite(Request(paths=(str(tmp_path / "w.yaml"),), runner="emulator", results=str(tmp_path / name),
                          report=("json:/dev/null",), **options))

    run("a.jsonl")
    looser = replace(STANDARDS["default"], defaults={"*": {"budget_scale": 1e12}})
    with monkeypatch.context() as patched:
        patched.setitem(STANDARDS, "default", looser)
        run("b.jsonl")
        run("a.jsonl", resume=str(tmp_path / "a.jsonl"))        # A's failure is not taken under the looser table
    b, resumed = (compare.read_run(str(tmp_path / name)).records["w"] for name in ("b.jsonl", "a.jsonl"))
    assert b.status == resumed.status == "passed"
    text, code = compare.compare_files(str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "json")
    assert code == 0                                          # A's last record is now the resumed run's
    run("c.jsonl")
    text, code = compare.compare_files(str(tmp_path / "c.jsonl"), str(tmp_path / "b.jsonl"), "json")
    (change,) = json.loads(text)["changes"]
    assert code == 1 and (change["category"], change["before"], change["after"]) == ("not comparable", "failed",
                                                                                      "passed")
    assert change["detail"].startswith("judged under other settings: limits of default ")
    text, code = compare.compare_files(str(tmp_path / "c.jsonl"), str(tmp_path / "b.jsonl"), "json",
                                       allow_changed=True)
    assert code == 0 and [c["category"] for c in json.loads(text)["changes"]] == ["not comparable", "fixed"]


def test_a_verdict_of_other_judging_code_is_not_comparable_and_older_runs_compare_as_before(tmp_path):
    """The judging code's fingerprint (``judge_fingerprint.code``) of the two runs differs: not comparable; a run
    record of an older prmg states neither fingerprint, and is held against any as before."""
    from prmg_cli.judging import judge_fingerprint
    from prmg_cli.judging.standards import STANDARDS

    settings = {"standard": None, "strict": False, "limits": judge_fingerprint.all_limits(),
                "judging_code": judge_fingerprint.code()}
    a = judged_file(tmp_path / "a.jsonl", settings, result("x", standard="default"))
    b = judged_file(tmp_path / "b.jsonl", {**settings, "judging_code": "0" * 16}, result("x", standard="default"))
    old = judged_file(tmp_path / "old.jsonl", {"standard": None, "strict": False}, result("x", standard="default"))
    text, code = compare.compare_files(str(a), str(b), "json")
    (change,) = json.loads(text)["changes"]
    assert code == 1 and change["detail"] == ("judged under other settings: judging code "
                                              f"{judge_fingerprint.code()} -> {'0' * 16}")
    assert compare.compare_files(str(old), str(a), "json")[1] == 0
    default = STANDARDS["default"]
    scaled = replace(default, defaults={"*": {"budget_scale": 2.0}})
    assert judge_fingerprint.limits(default) != judge_fingerprint.limits(scaled)


@pytest.mark.verdict
def test_the_judges_fingerprints_change_with_any_limit_preset_or_byte_of_the_judging_code(tmp_path):
    """Session 11: ``judge_fingerprint`` is what tells one judge from another (compare, --resume, report). A limit of
    a standard's defaults, a value of one of its presets (double_benchmark's levels), and any byte of a judging source
    -- the compiled judge's C included -- each make another fingerprint; the judge's files are the judging, ops and
    native packages, Python and C."""
    import shutil

    from prmg_cli.judging import judge_fingerprint
    from prmg_cli.judging.standards import STANDARDS

    default, bench = STANDARDS["default"], STANDARDS["double_benchmark"]
    scaled = replace(default, defaults={"*": {"budget_scale": 2.0}})
    assert judge_fingerprint.limits(default) != judge_fingerprint.limits(scaled)
    (key, presets), = bench.presets.items()
    level, values = next(iter(presets.items()))
    looser = {**presets, level: {**values, "mare_ratio": 2 * values["mare_ratio"]}}
    assert judge_fingerprint.limits(bench) != judge_fingerprint.limits(replace(bench, presets={key: looser}))
    package = Path(judge_fingerprint.__file__).resolve().parent.parent
    names = {path.relative_to(package).as_posix() for path in judge_fingerprint.judging_files(package)}
    assert {"native/native.c", "judging/judge.py", "judging/standards/default.py", "ops/grad.py",
            "judging/checks/sample.py"} <= names
    copy = tmp_path / "prmg_cli"
    for name in names:
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(package / name, copy / name)
    assert judge_fingerprint.code_of(copy) == judge_fingerprint.code() == judge_fingerprint.code_of(package)
    native = copy / "native" / "native.c"
    native.write_text(native.read_text() + "/* an edit */\n")
    assert judge_fingerprint.code_of(copy) != judge_fingerprint.code()


def test_a_verdict_of_another_judging_code_runs_again_on_resume_and_is_not_comparable(tmp_path, emulator, monkeypatch,
                                                                                       capsys):
    """Session 11: each run records the judging code's fingerprint (``run_record.recorded_settings``): a verdict of
    another build's judge (the same version number) is run again by --resume, and compare calls it not comparable."""
    from prmg_cli.commands.run import Request
    from prmg_cli.commands.suite import run_suite
    from prmg_cli.judging import judge_fingerprint

    (tmp_path / "w.yaml").write_text("- {name: w, shape: [1, 2, 2, 16], partial_slice: [0, 16]}\n")

    def run(name: str, **options) -> None:
        run_suite(Request(paths=(str(tmp_path / "w.yaml"),), runner="emulator", results=str(tmp_path / name),
                          report=("json:/dev/null",), **options))

    run("a.jsonl")
    run("a.jsonl", resume=str(tmp_path / "a.jsonl"))
    assert "--resume: 1 result of" in capsys.readouterr().err       # the same judge: taken
    with monkeypatch.context() as patched:
        patched.setattr(judge_fingerprint, "code", lambda: "f" * 16)
        run("b.jsonl")
        run("a.jsonl", resume=str(tmp_path / "a.jsonl"))
    err = capsys.readouterr().err                                   # another judge: run again
    assert "--resume: 0 results of" in err and "1 recorded verdict of a case changed since or judged under" in err
    text, code = compare.compare_files(str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "json")
    assert code == 0                                      # A's last record is the resumed run's, of the other judge
    run("c.jsonl")
    text, code = compare.compare_files(str(tmp_path / "c.jsonl"), str(tmp_path / "b.jsonl"), "json")
    (change,) = json.loads(text)["changes"]
    assert code == 1 and change["detail"] == "judged under other settings: judging code " \
                                             f"{judge_fingerprint.code()} -> {'f' * 16}"


def test_compare_refuses_a_file_that_is_not_results(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"schema": "prmg.result/3", "name": "x", "status": "passed"}\nnot json\n')
    out = prmg_here("compare", bad, twin(bad))
    assert out.returncode == 2 and "bad.jsonl: line 2: not a JSON record; not a results file" in out.stderr
    zeros = tmp_path / "zeros.jsonl"
    zeros.write_bytes(b"0" * 4096)                          # garbage is never taken for a torn record
    out = prmg_here("compare", zeros, twin(zeros))
    assert out.returncode == 2 and "zeros.jsonl: line 1: not a JSON record" in out.stderr
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    out = prmg_here("compare", empty, twin(empty))
    assert out.returncode == 2 and "holds no result record: nothing to compare" in out.stderr


def test_compare_refuses_one_file_given_twice_but_compares_identical_copies(tmp_path):
    a = tmp_path / "a.jsonl"
    a.write_text(json.dumps({"schema": "prmg.result/3", "name": "x", "status": "passed"}) + "\n")
    (tmp_path / "link.jsonl").symlink_to(a)
    for other in (a, tmp_path / "link.jsonl", tmp_path / "." / "a.jsonl"):     # given twice, however it is spelled
        out = prmg_here("compare", a, other, "--report", f"json:{tmp_path / 'c.json'}")
        assert (out.returncode, out.stdout) == (2, "") and out.stderr.count("\n") == 1, out.stderr
        assert out.stderr.startswith(f"prmg: error: {other}: run B's results file is run A's results file")
        assert "the same file, nothing to compare" in out.stderr and not (tmp_path / "c.json").exists()
    out = prmg_here("compare", a, twin(a))                  # a run repeated with the same verdicts: no changes
    assert out.returncode == 0 and "no changes" in out.stdout, out.stdout + out.stderr


def test_compare_two_real_runs(tmp_path):
    path = write(tmp_path)
    prmg_forked("run", path, "--runner", "emulator", "--results", tmp_path / "a.jsonl")
    prmg_forked("run", path, "--runner", "emulator", "--results", tmp_path / "b.jsonl",
                env={"PRMG_EMU_FAULT": "sign", "PRMG_EMU_FAULT_SHAPE": "2,1,2,16"})
    out = prmg_here("compare", tmp_path / "a.jsonl", tmp_path / "b.jsonl")
    assert out.returncode == 1 and "new failure  b_bf16" in out.stdout


# --- provenance -----------------------------------------------------------------------------------------

def test_reports_carry_provenance_and_results_reproduce_cases(tmp_path):
    out = prmg_forked("run", write(tmp_path), "--runner", "emulator", "--report", "json")
    document = json.loads(out.stdout)
    summary = document["summary"]
    for key in ("runner", "devices", "version", "host", "started", "soc", "toolkit_version", "driver_version"):
        assert key in summary
    assert summary["host"] and summary["started"][:2] == "20"
    case = document["cases"][1]
    assert case["op"] == "grad" and case["seed"] is not None and case["expect"] == "pass"
    assert case["sin_shape"] == case["cos_shape"] and case["sin_dtype"] == "bfloat16"
    assert case["definition"]["name"] == "b_bf16" and case["definition"]["dtype"] == "bfloat16"
    replay = tmp_path / "replay.yaml"
    replay.write_text(json.dumps([c["definition"] for c in document["cases"]]))
    again = json.loads(prmg_forked("run", replay, "--runner", "emulator", "--report", "json").stdout)
    assert [c["metrics"] for c in again["cases"]] == [c["metrics"] for c in document["cases"]]


def test_toolkit_and_driver_versions_are_read_from_install_files(tmp_path):
    (tmp_path / "version.cfg").write_text("# toolkit\ntoolkit_installed_version=[8.5.0.1:8.5.RC1]\n")
    assert provenance.toolkit_version(tmp_path) == "8.5.RC1"
    info = tmp_path / "aarch64-linux"
    info.mkdir()
    (info / "ascend_toolkit_install.info").write_text("package_name=Ascend-cann-toolkit\nversion=8.0.RC2\n")
    (tmp_path / "version.cfg").unlink()
    assert provenance.toolkit_version(tmp_path) == "8.0.RC2"
    assert provenance.toolkit_version(tmp_path / "no") == ""


def stand_in_driver(folder: Path, version: str) -> Path:
    """A driver installed in ``folder/driver`` as the NPU driver package lays it out: ``version.info`` and the
    library the runtime loads, ``lib64/driver/libascend_hal.so`` (a stand-in compiled here); its library folder."""
    import subprocess

    library = folder / "driver" / "lib64" / "driver"
    library.mkdir(parents=True)
    (folder / "driver" / "version.info").write_text(f"Version={version}\nInnerversion=V100R001C21\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-x", "c", "-", "-o", library / provenance.HAL_NAME],
                   input="int prmg_stand_in_driver;\n", text=True, check=True)
    return library


def test_the_driver_is_where_the_runtime_loaded_it_from_or_where_cann_recorded_it(tmp_path):
    """Issue 32 (sixth look): the driver's version was read from /usr/local/Ascend/driver alone, so a host whose
    driver is installed elsewhere (--install-path, recorded in /etc/ascend_install.info as CANN's set_env.sh reads
    it) ran with an unknown driver, and two such hosts with different drivers looked alike to --resume, compare and
    report. Now: the driver whose libascend_hal.so the runtime mapped, else the one recorded, else the default."""
    loaded, recorded = stand_in_driver(tmp_path / "loaded", "25.0.rc1"), stand_in_driver(tmp_path / "opt", "24.1.rc2")
    info = tmp_path / "ascend_install.info"
    info.write_text("Driver_Install_Type=full\ndriver_install_path_param=" + str(tmp_path / "opt") + "\n")
    maps = tmp_path / "maps"
    maps.write_text(f"7f0000000000-7f0000001000 r-xp 00000000 08:01 42 {loaded / provenance.HAL_NAME}\n")
    assert provenance.driver_version(str(maps), info) == "25.0.rc1"
    assert provenance.driver_version(str(tmp_path / "no maps"), info) == "24.1.rc2"
    assert provenance.driver_folders(str(tmp_path / "no maps"), tmp_path / "none") == [provenance.DEFAULT_DRIVER]
    # end to end: the emulator's aclInit loads the driver LD_LIBRARY_PATH gives, as the runtime does; a driver changed
    # under a run's results makes --resume run every case again, and the header names the driver
    cases = Path(__file__).resolve().parent.parent / "cases" / "smoke.yaml"
    results, selected = tmp_path / "r.jsonl", ("-k", "worked_example", "--runner", "emulator")
    first = prmg("run", cases, *selected, "--results", results, env={"LD_LIBRARY_PATH": str(recorded)})
    assert first.returncode == 0 and "\ndriver: 24.1.rc2\n" in first.stdout, first.stdout + first.stderr
    again = prmg("run", cases, *selected, "--resume", results, env={"LD_LIBRARY_PATH": str(loaded)})
    assert again.returncode == 0 and "0 results of" in again.stderr and "1 recorded verdict" in again.stderr
    assert [json.loads(line)["info"]["driver_version"] for line in results.read_text().splitlines()
            if '"prmg.run/1"' in line] == ["24.1.rc2", "25.0.rc1"]


# --- failure artifacts ----------------------------------------------------------------------------------

def test_save_failures_writes_everything_numpy_reads(tmp_path):
    import ml_dtypes

    out_dir = tmp_path / "failures"
    result = prmg_forked("run", write(tmp_path), "--runner", "emulator", "--save-failures", out_dir, "--report", "json",
                         env={"PRMG_EMU_FAULT": "sign", "PRMG_EMU_FAULT_SHAPE": "2,1,2,16"})
    cases = {c["name"]: c for c in json.loads(result.stdout)["cases"]}
    folder = Path(cases["b_bf16"]["artifacts"])
    assert folder == out_dir / "b_bf16" and not (out_dir / "a_fp32").exists()
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["files"]["actual.npy"] == "bfloat16" and meta["files"]["golden.npy"] == "float64"
    assert meta["files"]["expected.npy"] == "bfloat16" and meta["schema"] == "prmg.artifacts/1"
    actual = np.load(folder / "actual.npy").view(ml_dtypes.bfloat16)
    golden, score = np.load(folder / "golden.npy"), np.load(folder / "score.npy")
    assert actual.shape == (2, 1, 2, 16) and golden.shape == score.shape == (2, 1, 2, 16)
    assert (score > 1).any() and (score[..., 0::2] <= 1).all()       # the sign fault: odd lanes only
    dy = np.load(folder / "dy.npy").view(ml_dtypes.bfloat16)
    assert dy.shape == actual.shape and meta["case"]["definition"]["name"] == meta["result"]["name"] == "b_bf16"
    dumped = tmp_path / "dumped"                      # prmg dump writes the same files, the same meta.json
    assert prmg_here("dump", write(tmp_path), "--out", dumped, "-k", "b_bf16").returncode == 0
    again = json.loads((dumped / "b_bf16" / "meta.json").read_text())
    assert again["case"] == meta["case"] and again["result"] is None and set(again) == set(meta)
    assert {name: kind for name, kind in meta["files"].items() if name not in ("actual.npy", "score.npy")} \
        == again["files"]
    for name in ("dy.npy", "cos.npy", "sin.npy", "golden.npy", "expected.npy"):
        assert np.array_equal(np.load(folder / name), np.load(dumped / "b_bf16" / name)), name


def readme_artifact_snippet() -> str:
    """The ``python`` block of the README (or of a page of ``docs/`` it links) that reads ``--save-failures``
    folders, with the folder it names as the placeholder ``FOLDER``."""
    from conftest import ROOT

    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for block in page.read_text().split("```python\n")[1:]:
            code = textwrap.dedent(block.split("```", 1)[0])
            if "meta.json" in code:
                return code.replace('"failures/my_case"', "FOLDER")
    raise AssertionError("no python block reading meta.json in README.md or docs/")


def test_the_readme_snippet_reads_every_saved_failure_bytes_only_ones_included(tmp_path, capsys):
    """A contract breach with a right slice (the emulator's ``modify_cos``: cos changed after the computation)
    still saves the golden and the score (each element within its limit); a case without a golden
    (``golden: false``) saves none, and the README's snippet reads both folders, and a ``prmg dump`` folder of
    each, without an error."""
    cases = write(tmp_path, CASES.splitlines()[1] + "\n- {name: d_checks, shape: [1, 2, 1, 16], golden: false, "
                                                    "checks: [sample]}\n")
    out_dir = tmp_path / "failures"
    result = prmg_forked("run", cases, "--runner", "emulator", "--save-failures", out_dir,
                         env={"PRMG_EMU_FAULT": "modify_cos"})
    assert result.returncode == 1 and "0 passed, 2 failed" in result.stdout, result.stdout + result.stderr
    bytes_only, no_golden = out_dir / "a_fp32", out_dir / "d_checks"
    golden, score = np.load(bytes_only / "golden.npy"), np.load(bytes_only / "score.npy")
    assert golden.shape == score.shape == (1, 2, 2, 32) and (score <= 1).all()
    assert not (no_golden / "golden.npy").exists() and (no_golden / "actual.npy").exists()
    dumped = tmp_path / "dumped"
    assert prmg_here("dump", cases, "--out", dumped).returncode == 0
    snippet = readme_artifact_snippet()
    for folder in (bytes_only, no_golden, dumped / "a_fp32", dumped / "d_checks"):
        exec(snippet, {"FOLDER": str(folder)})
    printed = capsys.readouterr().out
    assert printed.count("failed") == 2 and "cos changed" in printed


def test_save_failures_of_each_device_keeps_each_chips_arrays_apart(tmp_path):
    """Issue 32 (fourth look): under --each-device every device's worker wrote a failed case into the one folder
    DIR/CASE/ (two failing chips' arrays mixed, and no word of which chip computed them); each device now has its
    own, DIR/device-N/CASE/, and the record's artifacts are those of the device whose status it keeps. (Fifth look:
    meta.json's record names its device, under --each-device and in a shared run.)"""
    out_dir = tmp_path / "failures"
    result = prmg_forked("run", write(tmp_path), "-k", "a_fp32", "--runner", "emulator", "--devices", "0,1",
                         "--each-device", "--save-failures", out_dir, "--report", "json",
                         env={"PRMG_EMU_DEVICES": "2", "PRMG_EMU_FAULT": "sign", "PRMG_EMU_FAULT_DEVICE": "1"})
    (case,) = json.loads(result.stdout)["cases"]
    assert result.returncode == 1 and case["status"] == "failed" and case["device"] == "1", result.stderr
    assert Path(case["artifacts"]) == out_dir / "device-1" / "a_fp32" and (out_dir / "device-1" / "a_fp32").is_dir()
    assert sorted(path.name for path in out_dir.iterdir()) == ["device-1"]      # device 0 passed: nothing saved
    # meta.json's record names the chip that computed the arrays (its device was "", in a shared run too)
    assert json.loads((out_dir / "device-1" / "a_fp32" / "meta.json").read_text())["result"]["device"] == "1"
    result = prmg_forked("run", write(tmp_path), "-k", "a_fp32", "--runner", "emulator", "--devices", "1",
                         "--save-failures", tmp_path / "shared",
                         env={"PRMG_EMU_DEVICES": "2", "PRMG_EMU_FAULT": "sign"})
    assert result.returncode == 1, result.stderr
    assert json.loads((tmp_path / "shared" / "a_fp32" / "meta.json").read_text())["result"]["device"] == "1"


def test_save_failures_never_follows_a_symlink_inside_its_folder(tmp_path):
    """A symlink planted at DIR/CASE, or at a file inside it, is not followed: nothing is written outside
    DIR, and the case's result says why its arrays are missing (the run goes on)."""
    out_dir, elsewhere = tmp_path / "failures", tmp_path / "elsewhere"
    out_dir.mkdir()
    elsewhere.mkdir()
    (out_dir / "b_bf16").symlink_to(elsewhere)
    (out_dir / "c_fp16").mkdir()
    (out_dir / "c_fp16" / "dy.npy").symlink_to(elsewhere / "planted.npy")
    report = tmp_path / "r.json"
    result = prmg_forked("run", write(tmp_path), "--runner", "emulator", "--save-failures", out_dir, "--report",
                         f"json:{report}", env={"PRMG_EMU_FAULT": "sign"})
    cases = {c["name"]: c for c in json.loads(report.read_text())["cases"]}
    assert list(elsewhere.iterdir()) == [] and result.returncode == 1
    assert cases["b_bf16"]["artifacts"] == f"could not write artifacts: {out_dir / 'b_bf16'}: is a symlink; not " \
                                           f"followed, not written"
    assert cases["c_fp16"]["artifacts"].endswith("dy.npy: is a symlink; not followed, not written")
    assert cases["a_fp32"]["artifacts"] == str(out_dir / "a_fp32")
    said = [line.strip() for line in result.stdout.splitlines() if "--save-failures:" in line]   # the table's too
    assert said == [f"--save-failures: {cases[name]['artifacts']}" for name in ("a_fp32", "b_bf16", "c_fp16")]


def test_an_unwritable_artifact_folder_is_refused_before_the_run(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = prmg_here("run", write(tmp_path), "--runner", "emulator", "--save-failures", blocker / "sub")
    assert result.returncode == 2 and "failure artifacts" in result.stderr


# --- golden-free checks ---------------------------------------------------------------------------------

def test_determinism_holds_on_a_deterministic_kernel(tmp_path):
    out = prmg_forked("run", write(tmp_path), "--runner", "emulator", "--check", "determinism", "--repeat", "3",
                      "--report", "json")
    document = json.loads(out.stdout)
    assert out.returncode == 0, document["summary"]
    for case in document["cases"]:
        assert case["metrics"]["determinism_mismatches"] == 0 and len(case["kernel_samples"]) == 3


@pytest.mark.parametrize("faults", ["noop,fwd_noop", "nudge,fwd_nudge"])
def test_without_the_golden_a_pair_that_does_nearly_nothing_is_red_and_named(tmp_path, faults):
    """Identity passes adjoint, roundtrip and determinism (deterministic, self-adjoint, its own inverse), and so does a
    pair that nudges one element by an ulp: sample, which a golden-free verdict needs, fails both, and the slice left
    (nearly) as it was is said -- changed means changed as much as the formula changes the sampled rows alone; a
    correct pair gets no such warning."""
    args = ("run", write(tmp_path), "--runner", "emulator", "--no-golden", "--check",
            "adjoint,roundtrip,determinism,sample", "--report", "json")
    out = prmg_forked(*args, env={"PRMG_EMU_FAULT": faults})
    document = json.loads(out.stdout)
    assert out.returncode == 1 and document["summary"]["failed"] == 3
    said = "unchanged: the slice came back bit for bit" if "noop" in faults else "unchanged: the kernel changed 1 of "
    for case in document["cases"]:
        assert "sample: the host reference disagrees" in case["message"], case["message"]
        assert case["warnings"][0].startswith(said), case["warnings"]
    correct = json.loads(prmg_forked(*args).stdout)
    assert correct["summary"]["passed"] == 3 and correct["summary"]["warnings"] == 0


def test_a_slice_changed_less_than_the_formula_changes_the_sampled_rows_is_unchanged():
    """The rule alone: one element moved is no change where the formula moves hundreds in the sampled rows; a result
    that changes what the formula changes is one."""
    from prmg_cli.judging.checks.sample import unchanged_warning
    from prmg_cli.inputs.seeded import make_inputs
    from test_checks import make_case
    from kernels import correct_kernel

    case = make_case(shape=(2, 3, 4, 40))
    inputs = make_inputs(case)
    nudged = inputs.dy.copy()
    nudged.view(np.uint32)[0, 0, 0, 4] += 1
    assert unchanged_warning(case, inputs, nudged).startswith("unchanged: the kernel changed 1 of 768 elements of "
                                                              "the slice, fewer than the ")
    assert unchanged_warning(case, inputs, inputs.dy.copy()).startswith("unchanged: the slice came back bit for bit")
    right = correct_kernel(inputs.dy, inputs.cos, inputs.sin, case.rotary_mode, case.partial_slice)
    assert unchanged_warning(case, inputs, right) == ""


def test_the_header_names_the_checks_of_the_run_and_no_golden(tmp_path):
    out = prmg_forked("run", write(tmp_path, CASES.splitlines()[1]), "--runner", "emulator", "--no-golden", "--check",
                      "sample,determinism")
    assert out.returncode == 0, out.stderr
    assert "checks: sample, determinism on every pass case (--check); no golden (--no-golden)" in out.stdout


@pytest.mark.parametrize("args, message", [(["--check", "nope"], "unknown check 'nope'"),
                                           (["--no-golden"], "without the golden (--no-golden) this case is "
                                                             "judged by no check, none anchored to the formula"),
                                           (["--check", "determinism", "--repeat", "1"], "--repeat must be from 2"),
                                           (["--repeat", "1001"], "--repeat must be from 2 to 1000 (determinism "
                                                                  "check), got 1001"),
                                           (["--repeat", str(10**18)], "to 1000 (determinism check), got "
                                                                       "1000000000000000000")])
def test_bad_check_options(tmp_path, args, message):
    out = prmg_here("run", write(tmp_path), "--runner", "emulator", *args)
    assert out.returncode == 2 and message in out.stderr and out.stderr.count("\n") == 1
