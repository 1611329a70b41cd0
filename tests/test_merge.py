"""`prmg report`: one report from many results files (shards, earlier runs), in case order."""

from __future__ import annotations

import itertools
import json
import os
import re
import time
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import ROOT, prmg_forked, prmg_here, twin
from prmg_cli.cases.fields import MAX_ARRAY_ELEMENTS
from prmg_cli.cases.loader import Case, definition_fingerprint
from prmg_cli.errors import PrmgError
from prmg_cli.reports.merge import MISSING, merge
from prmg_cli.reports.outputs import OUTPUTS
from prmg_cli.reports.store import Stored, _parse as parse, read
from prmg_cli.results import MAX_SECONDS, CaseResult

SMOKE = ROOT / "cases" / "smoke.yaml"


def record(name: str, status: str = "passed", **fields) -> CaseResult:
    return CaseResult(name=name, status=status, source="s.yaml", dtype="float32", shape=[1, 1, 1, 8],
                      partial_slice=[0, 8], rotary_mode="interleave", **fields)


def write(path: Path, *records: CaseResult, tail: str = "") -> Path:
    path.write_text("".join(json.dumps(r.to_dict()) + "\n" for r in records) + tail)
    return path


def case(name: str) -> Case:
    return Case(name=name, source="s.yaml", shape=(1, 1, 1, 8), cos_shape=(1, 1, 1, 8), sin_shape=(1, 1, 1, 8),
                partial_slice=(0, 8))


def normalised_junit(text: str) -> str:
    """The JUnit document without what depends on when and where it ran: times and the run's properties
    (results files record no runner, devices, host or start time)."""
    root = ET.fromstring(text)
    for element in root.iter():
        element.attrib.pop("time", None)
    for suite in root.iter("testsuite"):
        for properties in suite.findall("properties"):
            suite.remove(properties)
    return ET.tostring(root, encoding="unicode")


def test_two_shards_merge_into_the_junit_of_one_run(tmp_path):
    shards = []
    for index in (1, 2):
        shard = tmp_path / f"shard{index}.jsonl"
        result = prmg_forked("run", SMOKE, "--runner", "emulator", "--shard", f"{index}/2", "--results", shard,
                             "--devices", "0")
        assert result.returncode == 0, result.stderr
        shards.append(shard)
    assert all(read(shard).results for shard in shards)         # both shards hold cases
    one = tmp_path / "one.xml"
    assert prmg_forked("run", SMOKE, "--runner", "emulator", "--report", f"junit:{one}").returncode == 0
    merged = tmp_path / "merged.xml"
    result = prmg_here("report", *shards, "--cases", SMOKE, "--report", f"junit:{merged}", "--report", "table")
    assert result.returncode == 0, result.stderr
    assert normalised_junit(merged.read_text()) == normalised_junit(one.read_text())
    assert result.stdout.splitlines()[-2:] == ["36 passed, 0 failed", f"wrote {merged}"]      # under the table
    assert result.stdout.startswith("merged: 2 results files:")          # (wrapped: long paths)
    assert result.stderr == ""                                        # no duplicates, nothing missing


def test_shards_judged_under_different_settings_are_no_one_verdict_unless_allowed(tmp_path):
    """Issue 32: shards judged under different standards merged into one green report (a warning on stderr). Now
    the merge names the setting and the files and exits 1, its JSON says so, unless --allow-mixed says it is
    intended. Session 17: a shard run with --strict and one without differ in strict, unless report --strict holds
    every record as --strict does (a record's warning still fails it)."""
    shards = [tmp_path / "strict.jsonl", tmp_path / "loose.jsonl"]
    prmg_forked("run", SMOKE, "--runner", "emulator", "--shard", "1/2", "--results", shards[0], "--strict")
    prmg_forked("run", SMOKE, "--runner", "emulator", "--shard", "2/2", "--results", shards[1], "--standard",
                "allclose")
    result = prmg_here("report", *shards, "--report", f"json:{tmp_path / 'r.json'}", "--report", "table")
    assert re.fullmatch(r"\d+ passed, 0 failed; exit 1: MIXED SETTINGS", result.stdout.splitlines()[-2])
    differ, strict = (f"{key}: {shards[0]}: {a}; {shards[1]}: {b}" for key, a, b in (("standard", "none", "allclose"),
                                                                                      ("strict", "true", "false")))
    assert result.returncode == 1 and (f"prmg: the runs were judged under different settings, which no one verdict "
                                       f"covers: {differ} (--allow-mixed standard if that is intended)\n"
                                       ) in result.stderr
    summary = json.loads((tmp_path / "r.json").read_text())["summary"]
    assert (summary["exit_code"], summary["ok"], summary["mixed"]) == (1, False, [differ, strict])
    # JUnit, whose counts a CI page shows, is not green either: one error testcase names the settings
    prmg_here("report", *shards, "--report", f"junit:{tmp_path / 'r.xml'}")
    suite = ET.parse(tmp_path / "r.xml").getroot().find("testsuite")
    errors = [case for case in suite.iter("testcase") if case.find("error") is not None]
    assert suite.get("errors") == "1" and [case.get("classname") for case in errors] == ["prmg.report"]
    assert differ in errors[0].find("error").text
    assert [line for key, line in summary["notes"] if key == "settings differ"] == [differ, strict]
    result = prmg_here("report", *shards, "--allow-mixed", "standard", "--report", "json", "-o", tmp_path / "r.json")
    assert result.returncode == 1 and "(--allow-mixed strict if that is intended)" in result.stderr
    result = prmg_here("report", *shards, "--allow-mixed", "standard", "--strict", "--report", "json", "-o",
                       tmp_path / "r.json")
    assert result.returncode == 0 and result.stderr == f"prmg: warning: the runs were judged under different " \
                                                       f"settings (--allow-mixed standard): {differ}\n"
    summary = json.loads((tmp_path / "r.json").read_text())["summary"]
    assert (summary["exit_code"], summary["mixed"]) == (0, []) and [strict] == [
        line for key, line in summary["notes"] if key == "settings differ" and line.startswith("strict")]
    lines = shards[1].read_text().splitlines()          # a pass with a warning in the run without --strict
    last = json.loads(lines[-1])
    shards[1].write_text("\n".join(lines[:-1] + [json.dumps({**last, "warnings": ["device memory: grew"]})]) + "\n")
    result = prmg_here("report", *shards, "--allow-mixed", "standard", "--strict", "--report", "json")
    assert result.returncode == 1 and json.loads(result.stdout)["summary"]["exit_code"] == 1, result.stderr
    assert prmg_here("report", *shards, "--allow-mixed", "standard", "--allow-mixed", "strict").returncode == 0
    result = prmg_here("report", *shards, "--allow-mixed", "standrad")
    assert result.returncode == 2 and "--allow-mixed standrad: no run of these files records such a setting" in \
        result.stderr


@pytest.mark.verdict
def test_a_setting_only_a_later_shard_states_makes_the_merge_mixed(tmp_path):
    """Session 11: a shard of an older prmg states no judging code (``judging_code``, ``limits``), a later one does:
    the two were judged by judges no record tells alike, so the merge is mixed whichever file comes first."""
    from prmg_cli.judging import judge_fingerprint
    from prmg_cli.reports import store
    from prmg_cli.reports.merge import mixed_settings

    def shard(path: Path, run_id: str, settings: dict, name: str) -> Path:
        key = store.settings_key(settings)
        path.write_bytes(store.encode(store.RunRecord(run_id, "", [name], settings, {})) + store.encode(
            replace(record(name), run_id=run_id, judged_under=key)))
        return path

    older = shard(tmp_path / "older.jsonl", "a" * 32, {"standard": None}, "x")
    newer = shard(tmp_path / "newer.jsonl", "b" * 32, {"standard": None, "judging_code": judge_fingerprint.code()}, "y")
    for files in ((older, newer), (newer, older)):
        stores = [read(str(path)) for path in files]
        mixed, _ = mixed_settings(stores, [result for stored in stores for result in stored.results])
        assert [key for key, _ in mixed] == ["judging_code"], mixed


def test_an_emulator_shard_and_a_toolkit_shard_are_no_one_report(tmp_path):
    """Issue 32: one shard run on the emulator (a correct kernel) and one on a toolkit merged green. The runner, its
    libraries and toolkit are named; the merge exits 1 until every one is allowed."""
    from test_fail_safe import stand_in

    cases = tmp_path / "c.yaml"
    cases.write_text("".join(f"- {{name: c{index}, shape: [1, 2, 1, 8], partial_slice: [0, 8]}}\n"
                             for index in range(4)))
    shards = [tmp_path / "emulator.jsonl", tmp_path / "toolkit.jsonl"]
    assert prmg_forked("run", cases, "--runner", "emulator", "--shard", "1/2", "--results", shards[0]).returncode == 0
    toolkit = prmg_forked("run", cases, "--runner", "aclnn", "--shard", "2/2", "--results", shards[1],
                          env={"ASCEND_HOME_PATH": str(stand_in(tmp_path / "standin"))})
    assert toolkit.returncode == 0, toolkit.stderr
    result = prmg_here("report", *shards)
    named = re.findall(r"no one verdict covers: (\w+): ", result.stderr)
    assert result.returncode == 1 and {"runner", "libraries", "toolkit_version"} <= set(named)
    assert "MIXED SETTINGS: " in " ".join(result.stdout.split())
    allowed = [argument for key in named for argument in ("--allow-mixed", key)]
    assert prmg_here("report", *shards, *allowed).returncode == 0
    auto = tmp_path / "auto.jsonl"          # session 18: --runner auto fell back to the emulator (no toolkit mounted)
    assert prmg_forked("run", cases, "--shard", "2/2", "--results", auto).returncode == 0
    warning = (f"prmg: warning: the runs of 1 results file ({auto}) ran on the host emulator, not an NPU, without "
               f"naming it (--runner auto picked it: no CANN toolkit found); a gate names --runner aclnn, and --runner "
               f"emulator says the emulator is meant")          # --runner emulator's shard says it is meant
    for strict in ((), ("--strict",)):     # a report --strict of them was green; one without is the emulator's user's
        fell = prmg_here("report", shards[0], auto, *strict, "--report", "json")
        assert fell.returncode == len(strict) and (warning in fell.stderr.splitlines()) == bool(strict), fell.stderr
        assert json.loads(fell.stdout)["summary"]["warned"] == [warning.removeprefix("prmg: warning: ")] * len(strict)


def test_a_missing_shard_and_a_killed_run_are_not_run_without_cases(tmp_path):
    """Each shard's run record names the whole selection: a merge of some shards only, or of a run killed
    half-way, lists what is missing as not_run and fails, even without --cases."""
    shards = [tmp_path / f"s{i}.jsonl" for i in (1, 2, 3)]
    for index, shard in enumerate(shards, start=1):
        prmg_forked("run", SMOKE, "--runner", "emulator", "--shard", f"{index}/3", "--results", shard)
    assert prmg_here("report", *shards).returncode == 0
    result = prmg_here("report", shards[0], shards[2], "--report", "json")
    assert result.returncode == 1
    report = json.loads(result.stdout)
    lost = [c for c in report["cases"] if c["status"] == "not_run"]
    assert report["summary"]["total"] == 36 and lost and len(lost) == len(read(shards[1]).latest())
    assert {c["message"] for c in lost} == {"not run: shard 2/3 is in no results file given"}
    assert "selected by the runs but in no results file" in result.stderr
    killed = tmp_path / "killed.jsonl"
    lines = shards[1].read_text().splitlines(keepends=True)
    killed.write_text("".join(lines[:3]))                     # the run record and two results: then killed
    result = prmg_here("report", shards[0], killed, shards[2], "--report", "json")
    report = json.loads(result.stdout)
    lost = [c for c in report["cases"] if c["status"] == "not_run"]
    assert result.returncode == 1 and len(lost) == len(lines) - 3
    assert "selected it but recorded no result (stopped or killed before it?)" in lost[0]["message"]


def test_a_merged_report_carries_every_runs_provenance(tmp_path):
    shards = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    prmg_forked("run", SMOKE, "--runner", "emulator", "--shard", "1/2", "--results", shards[0],
                env={"PRMG_EMU_FAULT": "nan"})
    prmg_forked("run", SMOKE, "--runner", "emulator", "--shard", "2/2", "--results", shards[1], "--devices", "0,1",
                "--standard", "allclose", env={"PRMG_EMU_DEVICES": "2"})
    result = prmg_here("report", *shards)
    header = " ".join(result.stdout.split("\n\n")[0].split())            # its long lines wrapped
    assert "FAULTS INJECTED: nan (PRMG_EMU_FAULT: acted on " in header and "not an NPU" in header
    assert f"run: {shards[0]}: 1/2, run " in header and "SoC Ascend950PR_9589" in header
    assert ", device 0, runner emulator, standard per case (default: default), SoC " in header
    assert ", devices 0,1, runner emulator, standard allclose, SoC " in header and "devices: 0, 1 " in header
    assert ", operator library /" in header and ", kernel files no file of the operator's kernels or tiling" in header
    assert "e3b0c442" not in header               # the emulator's opp holds none: not the digest of nothing
    assert f"settings differ: faults: {shards[0]}: {{faults: [nan], shape: ''}}; {shards[1]}: {{}} " in header
    assert result.returncode == 1 and "MIXED SETTINGS: faults: " in header
    junit = tmp_path / "r.xml"
    prmg_here("report", *shards, "--report", f"junit:{junit}")
    pairs = [(p.get("name"), p.get("value")) for p in ET.parse(junit).getroot().iter("property")]
    properties = dict(pairs)
    assert "nan" in properties.get("FAULTS INJECTED", "") and properties.get("soc") == "Ascend950PR_9589"
    assert [value.split(":")[0] for name, value in pairs if name == "run"] == [str(shard) for shard in shards]
    assert [value.split(":")[0] for name, value in pairs if name == "settings differ"] == ["faults", "standard"]
    assert properties["devices"] == "0,1"
    shaped = tmp_path / "shaped.jsonl"
    prmg_forked("run", SMOKE, "--runner", "emulator", "--shard", "1/2", "--results", shaped,
                env={"PRMG_EMU_FAULT": "nan", "PRMG_EMU_FAULT_SHAPE": "9,9,9,9"})
    result = prmg_here("report", shaped, shards[1])
    assert "FAULTS NAMED BUT NEVER INJECTED: nan (PRMG_EMU_FAULT_SHAPE=9,9,9,9 matched no case)" in result.stdout


@pytest.mark.verdict
def test_a_record_of_a_case_edited_since_is_not_run_never_its_old_verdict():
    from prmg_cli.cases.loader import fingerprint
    from prmg_cli.reports.merge import CHANGED

    today = [case("same"), case("edited"), case("unprinted")]
    records = [record("same", fingerprint=fingerprint(today[0])), record("edited", fingerprint="0" * 64),
               record("unprinted")]                                 # an older prmg's record: nothing to compare
    merged = merge([Stored("r.jsonl", records)], today)
    assert [r.status for r in merged.results] == ["passed", "not_run", "passed"]
    assert merged.results[1].message == CHANGED and merged.changed == 1 and merged.missing == 0


def test_cases_no_file_holds_are_not_run_and_fail_the_report(tmp_path):
    shard = tmp_path / "one-shard.jsonl"
    prmg_forked("run", SMOKE, "--runner", "emulator", "--shard", "1/2", "--results", shard)
    held = len(read(shard).latest())
    result = prmg_here("report", shard, "--cases", SMOKE, "--report", "json")
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["summary"]["total"] == 36 and report["summary"]["not_run"] == 36 - held
    assert {c["message"] for c in report["cases"] if c["status"] == "not_run"} == {MISSING}
    assert f"{36 - held} cases of --cases in no results file" in result.stderr


def test_merge_orders_by_cases_or_by_first_appearance():
    a = Stored("a.jsonl", [record("y"), record("x")])
    b = Stored("b.jsonl", [record("z"), record("w")])
    assert [r.name for r in merge([a, b]).results] == ["y", "x", "z", "w"]
    merged = merge([a, b], [case("w"), case("x"), case("v"), case("y")])
    assert [(r.name, r.status) for r in merged.results] == [("w", "passed"), ("x", "passed"), ("v", "not_run"),
                                                           ("y", "passed")]
    assert merged.results[2].message == MISSING and merged.missing == 1
    assert merged.left_out == ["z"]


def test_a_failure_of_a_case_not_in_cases_is_reported_never_left_out(tmp_path):
    """Issue 32 (round 4): shards that ran more cases than the merge's ``--cases`` names (``PRMG_CASES`` of the shard
    jobs holding the operator repository's own cases, the merge job prmg's) had the records of the others left out,
    a failure too: the merged report was green, exit 0, with a kernel failing a case the files hold. A record of a
    case not in --cases that is not ok is reported after the suite's cases (a passed one is still left out)."""
    cases, extra = tmp_path / "suite.yaml", tmp_path / "extra.yaml"
    cases.write_text("- {name: suite.one, shape: [1, 1, 2, 8], partial_slice: [0, 8]}\n")
    extra.write_text("- {name: extra.wrong, shape: [1, 1, 2, 16], partial_slice: [0, 16]}\n"
                     "- {name: extra.right, shape: [1, 1, 2, 32], partial_slice: [0, 32]}\n")
    shard = tmp_path / "shard.jsonl"
    run = prmg_forked("run", cases, extra, "--runner", "emulator", "--results", shard,
                      env={"PRMG_EMU_FAULT": "sign", "PRMG_EMU_FAULT_SHAPE": "1,1,2,16"})
    assert run.returncode == 1, run.stdout + run.stderr
    result = prmg_here("report", shard, "--cases", cases, "--report", "json")
    report = json.loads(result.stdout)
    assert result.returncode == 1 and report["summary"]["exit_code"] == 1, result.stderr
    assert [(case["name"], case["status"]) for case in report["cases"]] == [("suite.one", "passed"),
                                                                           ("extra.wrong", "failed")]
    assert "1 result of cases not in --cases left out: extra.right" in result.stderr
    assert "1 result of cases not in --cases not ok, reported after them: extra.wrong (failed)" in result.stderr
    merged = merge([Stored("a.jsonl", [record("x"), record("z", "error"), record("y")])], [case("x")])
    assert [(r.name, r.status) for r in merged.results] == [("x", "passed"), ("z", "error")]
    assert (merged.left_out, merged.outside) == (["y"], ["z"])


def test_within_a_file_the_newest_record_of_a_case_wins():
    merged = merge([Stored("a.jsonl", [record("x", "failed"), record("y"), record("x", "passed")])])
    assert [(r.name, r.status) for r in merged.results] == [("y", "passed"), ("x", "passed")]
    assert merged.duplicates == []


@pytest.mark.verdict
def test_duplicates_across_files_are_named_and_the_worst_verdict_is_kept():
    a = Stored("a.jsonl", [record("x", "failed", message="bad"), record("y", "not_run"), record("z", "skipped")])
    b = Stored("b.jsonl", [record("x", "passed"), record("y", "passed"), record("z", "passed", message="later")])
    merged = merge([a, b])
    assert [(r.name, r.status) for r in merged.results] == [("x", "failed"), ("y", "passed"), ("z", "passed")]
    assert merged.duplicates[0] == ("duplicate: case 'x' is in a.jsonl (failed), b.jsonl (passed); reporting "
                                    "failed from a.jsonl (--duplicates worst)")
    assert len(merged.duplicates) == 3
    tie = merge([Stored("a.jsonl", [record("x", message="first")]), Stored("b.jsonl", [record("x", message="second")])])
    assert tie.results[0].message == "second"                # equal verdicts: the later file
    last = merge([a, b], rule="last")
    assert [r.status for r in last.results] == ["passed", "passed", "passed"]
    held = merge([Stored("a.jsonl", [record("x", "xfailed")]), Stored("b.jsonl", [record("x", "not_run")])])
    assert held.results[0].status == "xfailed"               # a record with evidence beats one without
    with pytest.raises(PrmgError, match="--duplicates"):
        merge([a], rule="best")


def test_reading_tolerates_torn_lines_but_not_garbage(tmp_path):
    torn = json.dumps(record("y").to_dict())[:30]
    path = write(tmp_path / "r.jsonl", record("x"), tail=torn + "\n" + json.dumps(record("z").to_dict()) + "\n" + torn)
    assert [r.name for r in read(path).results] == ["x", "z"] and read(path).torn == 2
    path.write_text('{"schema": "prmg.run/1", "runner": "emulator"}\n' + json.dumps(record("x").to_dict()) + "\n")
    with pytest.raises(PrmgError, match=r"r.jsonl: line 1: field 'run_id': missing"):
        read(path)
    path.write_text(json.dumps(record("x").to_dict()) + "\nnot json\n" + json.dumps(record("y").to_dict()) + "\n")
    with pytest.raises(PrmgError, match=r"r.jsonl: line 2: not a JSON record"):
        read(path)
    path.write_text(json.dumps({**record("x").to_dict(), "status": "sideways"}) + "\n")
    with pytest.raises(PrmgError, match="line 1"):
        read(path)
    whole = json.dumps(record("x").to_dict())
    for last, why in ((whole[:40] + "\x00garbage", "not a JSON record"), (whole[:-1] + "]", "not a JSON record"),
                      ("\x00" * 64, "not a JSON record"), (whole.replace('"shape": [1', '"shape": [' + "9" * 5000),
                                                           "a number too long to read"),
                      (whole.replace('"shape": [1', f'"shape": [{2**64}'),
                       "field 'shape': dimension 0 .* does not fit")):
        path.write_text(whole + "\n" + last)             # only a strict prefix of a record is a torn line
        with pytest.raises(PrmgError, match=f"r.jsonl: line 2: {why}"):
            read(path)


HEAD = '{"schema": "prmg.result/3", "name": "x", "status": "passed", "message": "", "error_code": '
# Lines that are not a strict prefix of any line prmg writes: refused, not taken for a line a crash tore.
NOT_TORN = {
    "another schema": '{"schema": "prmg.evil/9", "name": "x"',
    "a wrong type": '{"schema": "prmg.result/3", "name": "x", "status": [], "sh',
    "an unknown key": '{"schema": "prmg.result/3", "name": "x", "zzz": 1',
    "keys out of order": '{"schema": "prmg.result/3", "status": "passed", "name"',
    "a space too many": '{"schema":  "prmg.result/3"',
    "a space before the key": '{"schema": "prmg.result/3",  "name"',
    "a space missing in a value": HEAD + 'null, "metrics": {"a":1',
    "a comma without its space": HEAD + "[1,2",
    "a number with two dots": HEAD + "1.5.",
    "a dot after an exponent": HEAD + "1e5.",
    "garbage after a value": HEAD + "1x",
    "a bracket closed twice": HEAD + 'null, "metrics": {"a": [1]]',
    "an escape JSON has not": '{"schema": "prmg.result/3", "name": "\\q',
    "a control character": '{"schema": "prmg.result/3", "name": "a\x00',
    "not ASCII": '{"schema": "prmg.result/3", "name": "\u00e9',
    "a value after the last field": json.dumps(record("x").to_dict())[:-1] + ', "more": 1',
}


def test_only_a_strict_prefix_of_a_line_prmg_writes_is_a_torn_line(tmp_path):
    from prmg_cli.reports.store import RunRecord, _torn, encode

    result = record("x", message='q"\\ \u00e9 \x01 \u2028', kernel_ms=1.5e-05, seed=2**64 - 1,
                    metrics={"ratio": 2.5e+20, "nan": float("nan"), "inf": float("-inf"), "list": [1, None, True]})
    run = RunRecord("id", "1/2", ["a", "b"], {"k": [1, {"z": None}]}, {"runner": "emulator", "devices": [0, 1]})
    for line in (encode(result), encode(run)):
        text = line.decode("ascii").rstrip("\n")
        assert [end for end in range(1, len(text)) if not _torn(text[:end])] == []       # every strict prefix
    path = tmp_path / "r.jsonl"
    for why, line in NOT_TORN.items():
        assert not _torn(line), why
        path.write_text(json.dumps(record("x").to_dict()) + "\n" + line)
        with pytest.raises(PrmgError, match="r.jsonl: line 2: not a JSON record"):
            read(path)
    for cut in (HEAD + "1.", HEAD + "-", HEAD + "1e-", HEAD + 'null, "metrics": {"a": -Infin',
                HEAD + 'null, "metrics": {"a": 1, "b', '{"schema": "prmg.result/3", "name": "\\u00', '{"sch'):
        path.write_text(json.dumps(record("x").to_dict()) + "\n" + cut + "\n" + json.dumps(record("y").to_dict()))
        assert read(path).torn == 1 and len(read(path).results) == 2, cut


def test_report_exit_codes_and_every_format(tmp_path, capsys):
    from prmg_cli.reports.merge import report_files

    failing = write(tmp_path / "f.jsonl", record("x"), record("y", "failed", message="wrong sign"))
    for fmt in OUTPUTS:
        out = tmp_path / f"report.{fmt}"
        assert report_files([str(failing)], reports=[f"{fmt}:{out}"]) == 1, fmt
        assert out.read_text().strip(), fmt
        stdout = capsys.readouterr().out
        assert stdout.splitlines()[-1] == f"wrote {out}: 1 passed, 1 failed" and "FAIL y: wrong sign" in stdout
    assert report_files([str(failing)], reports=["json", f"csv:{out}"]) == 1      # a document on stdout: on stderr
    written = capsys.readouterr()
    assert json.loads(written.out)["summary"]["failed"] == 1 and written.err == f"prmg: wrote {out}\n"
    assert report_files([str(failing)], reports=["json"], output=os.devnull) == 1      # a report discarded: no file
    assert capsys.readouterr().out.splitlines()[-1] == "1 passed, 1 failed"
    passing = write(tmp_path / "p.jsonl", record("x"))
    assert report_files([str(passing)]) == 0
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert report_files([str(empty)]) == 5 and "nothing to report" in capsys.readouterr().err
    # issue 32, round 6: the empty file of a per-chip job whose chip could not be opened merged as nothing, exit 0
    assert report_files([str(passing), str(empty)]) == 1
    assert f"NOT RUN 1 case (prmg-run {empty}): not run: {empty} holds no run record and no result" in \
        " ".join(capsys.readouterr().out.split())
    with pytest.raises(PrmgError, match="missing.jsonl: cannot read the results file"):
        report_files([str(tmp_path / "missing.jsonl")])
    with pytest.raises(PrmgError, match="unknown format"):
        report_files([str(passing)], reports=["nope"])
    capsys.readouterr()
    assert report_files([str(passing), str(failing), str(passing)], reports=["json"]) == 1
    captured = capsys.readouterr()
    assert "is given twice: read once" in captured.err and json.loads(captured.out)["summary"]["total"] == 2


def test_an_old_record_without_a_key_metric_reads_as_a_new_one(tmp_path, capsys):
    """Before session 12 a result with no element off the golden (a vacuous case: bound 0 ulp) was written with an
    empty key metric, and every report showed the raw ``max_err_ratio=0 bad=0``: it reads as today's (``err 0 ulp,
    exact``), the record left as written; metrics no judge of today wrote show as they are."""
    from prmg_cli.reports.merge import report_files

    exact = {"max_err_ratio": 0.0, "bad": 0, "max_err_ulp": 0.0, "bound_ulp": 0.0, "beyond_rounding": 0.0}
    path = write(tmp_path / "old.jsonl", record("x", metrics=exact, judged_under="k"),
                 record("y", metrics={"max_err_ratio": 0.5, "beyond_rounding": "?"}))
    assert [r.key_metric for r in read(path).results] == ["", ""]                  # the records as written
    assert report_files([str(path)], reports=["table"]) == 0
    rows = {line.split()[1]: line for line in capsys.readouterr().out.splitlines() if line.startswith("PASS ")}
    assert rows["x"].endswith("err 0 ulp, exact") and rows["y"].endswith("max_err_ratio=0.5 beyond_rounding=?")


def test_report_names_each_duplicate_on_stderr_and_exits_as_run_does(tmp_path):
    a = write(tmp_path / "a.jsonl", record("x", "error", message="worker crashed"), record("y"))
    b = write(tmp_path / "b.jsonl", record("x"), record("z"))
    result = prmg_here("report", a, b, "--report", "csv")
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and re.fullmatch(r"prmg: duplicate: case 'x' is in .*a\.jsonl \(error\), .*b\.jsonl "
                                            r"\(passed\); reporting error from .*a\.jsonl \(--duplicates worst\)",
                                            lines[0])
    assert prmg_here("report", a, b, "--duplicates", "last").returncode == 0
    result = prmg_here("report", tmp_path / "missing.jsonl")
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_the_sharded_ci_example_merges_every_shard_with_prmg_report():
    import yaml

    workflow = yaml.safe_load((ROOT / "runners" / "npu" / "github-actions-shards.yml").read_text())
    shard, report = workflow["jobs"]["shard"], workflow["jobs"]["report"]
    assert len(shard["strategy"]["matrix"]["shard"]) == int(workflow["env"]["SHARDS"])
    assert shard["strategy"]["fail-fast"] is False and report["if"] == "always()" and report["needs"] == "shard"
    commands = "\n".join(step.get("run", "") for step in report["steps"])
    assert "prmg report" in commands and "--cases prmg/cases" in commands
    assert "--shard ${{ matrix.shard }}/${{ env.SHARDS }}" in "\n".join(step.get("run", "") for step in shard["steps"])


def test_the_header_says_what_the_records_say_ran_them():
    """Results files of a prmg that wrote no run records: the runner as the records say."""
    from prmg_cli.reports.merge import _table_header, run_info

    def ran(name, runner):
        return record(name, runner=runner)

    assert run_info([Stored("a")], [record("x")]).runner == "unrecorded"      # records of a prmg without the field
    assert run_info([Stored("a")], [ran("x", "aclnn")]).runner == "aclnn"
    mixed = run_info([Stored("a"), Stored("b")], [ran("x", "aclnn"), ran("y", "emulator")])
    assert mixed.runner == "emulator" and "records from aclnn and emulator" in mixed.location
    assert "not an NPU" in _table_header([Stored("a", [ran("x", "emulator")])], [ran("x", "emulator")])


def test_a_merged_header_joins_every_field_of_the_runs_descriptions():
    """``RunInfo.joined`` reads the fields off ``RunInfo``: texts joined, tuples united, a flag set by any run."""
    from prmg_cli.results import RunInfo

    a = RunInfo("emulator", "/a", soc="950", faults=("sign",), checks=("adjoint",), toolkit_version="8.5")
    b = RunInfo("emulator", "/b", soc="950", faults=("guard",), checks=("adjoint",), strict=True, golden=False)
    joined = RunInfo.joined([a, b])
    assert (joined.location, joined.soc, joined.toolkit_version) == ("/a; /b", "950", "8.5")
    assert (joined.faults, joined.checks) == (("sign", "guard"), ("adjoint",))
    assert (joined.strict, joined.golden) == (True, False)
    assert RunInfo.joined([a, a]).golden and not RunInfo.joined([a, a]).strict
    assert RunInfo.from_dict(b.to_dict()) == b and RunInfo.from_dict({}).runner == "unrecorded"


def test_the_file_an_interrupted_run_and_its_resume_leave_is_read_by_report_and_compare(tmp_path):
    """A run killed mid-write leaves a torn last line; --resume appends after it (on a line of its own), so
    the torn line ends up in the middle: report and compare read the file, leaving that line out."""
    cases = tmp_path / "cases.yaml"
    cases.write_text("- {name: one, shape: [1, 1, 2, 8]}\n- {name: two, shape: [1, 1, 2, 16]}\n")
    results = tmp_path / "r.jsonl"
    assert prmg_forked("run", cases, "--runner", "emulator", "-k", "one", "--results", results).returncode == 0
    whole = results.read_bytes()
    results.write_bytes(whole + whole.splitlines(keepends=True)[-1][:57])     # killed while writing a record
    resumed = prmg_forked("run", cases, "--runner", "emulator", "--resume", results)
    assert resumed.returncode == 0, resumed.stderr
    lines = results.read_bytes().splitlines()
    torn = [index for index, line in enumerate(lines) if not line.endswith(b"}")]
    assert len(torn) == 1 and 0 < torn[0] < len(lines) - 1, lines            # the torn line is in the middle
    assert read(results).torn == 1
    report = prmg_here("report", results, "--report", "json")
    assert report.returncode == 0, report.stderr
    assert [case["status"] for case in json.loads(report.stdout)["cases"]] == ["passed", "passed"]
    compared = prmg_here("compare", results, twin(results))
    assert compared.returncode == 0 and "0 regressions" in compared.stdout, compared.stderr


@pytest.mark.parametrize("command", ["report", "compare"])
def test_report_and_compare_of_a_fifo_or_dev_zero_end_at_once(tmp_path, command):
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/zero")):
        started = time.monotonic()
        result = prmg_forked(command, path, *(["/dev/zero"] if command == "compare" else []), timeout=30)
        assert result.returncode == 2 and time.monotonic() - started < 20, result.stderr
        assert result.stderr.count("\n") == 1 and f"{path}: cannot read the results file: " in result.stderr


# Records issue 21 found crashing every report format, compare and resume (the field, its value as JSON text),
# then values of the right type that no run writes: each refused by the one reader in one line naming the field.
REFUSED = [
    ("status", "[]", "unknown status []"), ("shape", "5", "expected a list of dimensions like"),
    ("duration_s", '"x"', "expected a number, got str"), ("metrics", "[1]", "expected a mapping of metrics, got list"),
    ("details", "5", "expected a list of text, got int"), ("judged_under", "[1]", "expected text, got list"),
    ("kernel_ms", '"\\udc80"', "expected a number, got str"),
    ("shape", "[-1, 2]", "dimension 0 is negative (-1)"),
    ("shape", "[4611686018427387905, 3, 8]", "its non-zero dimensions multiply to 110680464442257309720, over"),
    ("cos_shape", "[1, 1, 1, 9223372036854775808]", "dimension 3 (9223372036854775808) does not fit in int64"),
    ("partial_slice", "[0, 9223372036854775808]", "start and end must fit in int64"),
    ("partial_slice", "[8]", "expected [start, end] (two integers), got [8]"),
    ("kernel_ms", "1e308", "expected a time from 0 to 1e+12 ms, got 1e+308"),
    ("kernel_ms", "-1.0", "expected a time from 0 to 1e+12 ms, got -1.0"),
    ("kernel_samples", "[0.5, NaN]", "item 1: expected a time from 0 to 1e+12 ms, got nan"),
    ("duration_s", "Infinity", "expected a time from 0 to 1e+09 s, got inf"),
    ("timings", '{"kernel": -0.5}', "'kernel': expected a time from 0 to 1e+12 ms, got -0.5"),
    ("seed", "-1", "expected an integer 0 <= seed < 2**64, got the integer -1"),
    ("definition", "[]", "expected a mapping, got list"), ("definition", "true", "expected a mapping, got bool"),
]
TINY_CASES = "- {name: x, shape: [1, 1, 2, 8]}\n"


@pytest.mark.parametrize("field, value, reason", REFUSED, ids=[f"{field}={value}" for field, value, _ in REFUSED])
def test_a_record_no_run_writes_is_one_line_for_report_compare_and_resume(tmp_path, emulator, field, value, reason):
    from prmg_cli.commands.run import Request
    from prmg_cli.reports.merge import report_files
    from prmg_cli.reports.compare import compare_files
    from prmg_cli.commands.suite import run_suite

    path = tmp_path / "r.jsonl"
    bad = json.dumps({**record("y").to_dict(), field: "\x00value"}).replace('"\\u0000value"', value)
    path.write_text(json.dumps(record("x").to_dict()) + "\n" + bad + "\n")
    before = path.read_bytes()
    cases = tmp_path / "cases.yaml"
    cases.write_text(TINY_CASES)
    reports = [f"{fmt}:{tmp_path / fmt}" for fmt in OUTPUTS]
    for command in (lambda: report_files([str(path)], reports=reports), lambda: compare_files(str(path), str(path)),
                    lambda: run_suite(Request(paths=(str(cases),), runner="emulator", resume=str(path),
                                              report=tuple(reports)))):
        with pytest.raises(PrmgError) as caught:
            command()
        assert str(caught.value).startswith(f"{path}: line 2: field '{field}': {reason}"), str(caught.value)
        assert "\n" not in str(caught.value)
    assert path.read_bytes() == before and not any((tmp_path / fmt).exists() for fmt in OUTPUTS)


# Records that contradict themselves (issue 32): a field edited alone, and what the reader says of it.
CONTRADICTING = [
    ({"metrics": {"max_err_ratio": 3.5, "bad": 1}},
     "status passed, but its max_err_ratio is over its limit (margin 3.5 > 1)"),
    ({"metrics": {"max_err_ratio": 1.000001}}, "status passed, but its max_err_ratio is over its limit (margin 1 > 1)"),
    ({"metrics": {"max_err_ratio": 0.5, "bad": 4}}, "status passed, but 4 elements are over their limit (bad)"),
    ({"error_code": 561002}, "status passed, but the operator returned 561002"),
    ({"expect": "error 561002", "error_code": 0}, "status passed expecting error 561002, but the operator returned no "
                                                  "error"),
    ({"metrics": {"outside_changed": 3}}, "status passed, but outside_changed is 3"),
    ({"standard": "exact", "metrics": {"mismatches": 2}}, "status passed under exact, but 2 elements mismatch"),
    ({"status": "skipped", "metrics": {"max_err_ratio": 0.5}}, "status skipped (never launched) but it holds metrics"),
    ({"status": "not_run", "error_code": 0}, "status not_run (never launched) but it holds an operator status"),
    ({"status": "xfailed"}, "status xfailed but the case names no known defect"),
    ({"status": "xfailed", "known_defect": "issue 7", "definition": {"name": "y"}},     # failed, edited to read xfailed
     "status xfailed but the definition of its case names no known defect"),
    ({"definition": {"name": "y", "generator": "philox", "tolerance": {"budget_scale": 1000}},
      "fingerprint": definition_fingerprint({"name": "y", "generator": "philox"})},      # its tolerance widened
     "status passed, but its fingerprint is not that of its case's definition (either edited)"),
    ({"definition": {"name": "y", "generator": "philox", "inputs": {"cos": {"rope": {"base": 500}}}},   # no file input:
      "fingerprint": definition_fingerprint({"name": "y", "generator": "philox"})},      # its own tables given since
     "status passed, but its fingerprint is not that of its case's definition (either edited)"),
    ({"definition": {"name": "y", "generator": "philox"}, "fingerprint": ""},     # cleared: --cases takes it as today's
     "status passed, but its fingerprint is not that of its case's definition (either edited)"),
    ({"device_statuses": {"0": "passed", "1": "failed"}},
     "status passed, but its devices' statuses are passed, failed"),
    ({"device_statuses": {"0": "passed", "1": "fine"}}, "status passed, but its devices' statuses are passed, fine"),
    ({"device": "0,1", "device_statuses": {"x": "passed", "y": "passed"}},     # compare reads them as the chips
     "device '0,1', but its devices' statuses give passed on x, y"),
]


@pytest.mark.verdict
@pytest.mark.parametrize("edit, reason", CONTRADICTING, ids=[reason.split(",")[0].split(" (")[0] + str(i)
                                                             for i, (_, reason) in enumerate(CONTRADICTING)])
def test_a_record_that_contradicts_itself_is_refused_naming_its_line(tmp_path, edit, reason):
    path = write(tmp_path / "r.jsonl", record("x", error_code=0, metrics={"max_err_ratio": 1.0}),   # at its limit
                 replace(record("y", error_code=0), **edit))
    assert refusal(path) == f"{path}: line 2: case 'y': {reason}: {DISBELIEVED}"


@pytest.mark.verdict
def test_a_record_of_a_case_with_a_file_input_is_not_held_to_its_definition_s_fingerprint(tmp_path):
    """A case with a ``file:`` input is fingerprinted with the file's bytes, which its record's definition does not
    hold: its fingerprint is not that of the definition, and the record is read (the edge of the rule above)."""
    definition = {"name": "y", "generator": "philox", "inputs": {"dy": {"file": "dy.npy"}, "cos": {"rope": {}}}}
    path = write(tmp_path / "r.jsonl", replace(record("y", error_code=0), definition=definition, fingerprint="f" * 64))
    assert [result.name for result in read(path).results] == ["y"]


DISBELIEVED = "a record that contradicts itself is not believed (edited by hand?)"


def refusal(path: Path) -> str:
    """The error reading the results file ``path`` raises."""
    with pytest.raises(PrmgError) as caught:
        read(path)
    return str(caught.value)


@pytest.mark.verdict
def test_a_pass_with_a_warning_is_not_believed_of_a_strict_run(tmp_path):
    """Issue 32 (audit): --strict fails a case whose result warns (a vacuous case, a device memory leak), so a passed
    record carrying a warning contradicts its --strict run: an edited status its metrics alone could not show."""
    from prmg_cli.reports import store

    warned = replace(record("x", metrics={"max_err_ratio": 0.5}), run_id="r" * 32, warnings=["device memory: ..."])
    for strict in (False, True):
        run = store.RunRecord("r" * 32, "", ["x"], {"strict": strict}, {})
        warned.judged_under = store.settings_key(run.settings)
        path = tmp_path / f"{strict}.jsonl"
        path.write_bytes(store.encode(run) + store.encode(warned))
        if not strict:
            assert read(path).results == [warned]
            continue
        with pytest.raises(PrmgError) as caught:
            read(path)
        assert str(caught.value) == f"{path}: line 2: case 'x': status passed with a warning in a --strict run, " \
                                    "which fails it: a record that contradicts itself is not believed (edited by hand?)"


@pytest.mark.verdict
def test_a_run_record_whose_settings_were_edited_is_not_believed(tmp_path):
    """Issue 32 (sixth look): a shard judged under allclose whose run record was edited to read as the default
    standard's merged green with shards judged under that (a merge compares the run records' settings). Its results
    still hold the key of the settings they were judged under (``judged_under``), which must now be their run
    record's; a not_run record of a stopped run holds none. What a run record states twice, in its settings and in its
    provenance (which headers and JUnit show), must agree too: an emulator run whose provenance claims the toolkit."""
    from prmg_cli.reports import store

    settings = {"standard": "allclose"}
    judged = replace(record("x", metrics={"max_err_ratio": 0.5}), run_id="r" * 32,
                     judged_under=store.settings_key(settings))
    stopped = replace(record("y", "not_run"), run_id="r" * 32)
    for edited in (False, True):
        run = store.RunRecord("r" * 32, "", ["x", "y"], {"standard": None} if edited else settings, {})
        path = tmp_path / f"{edited}.jsonl"
        path.write_bytes(store.encode(run) + store.encode(judged) + store.encode(stopped))
        if not edited:
            assert [result.name for result in read(path).results] == ["x", "y"]
            continue
        assert refusal(path) == f"{path}: line 2: case 'x': judged under other settings than its run's record " \
                                f"states: {DISBELIEVED}"
    run = store.RunRecord("r" * 32, "", ["x"], {**settings, "runner": "emulator"}, {"runner": "aclnn"})
    path.write_bytes(store.encode(run))
    assert refusal(path) == f"{path}: line 1: run record: its provenance says runner 'aclnn', its settings " \
                            f"'emulator': {DISBELIEVED}"


@pytest.mark.verdict
def test_a_shard_whose_run_record_was_removed_is_no_verdict_a_merge_takes(tmp_path):
    """Issue 32 (round 3): the line of a shard's run record removed (``grep -v prmg.run/1``), or the shard joined after
    another file's lines (``cat``): its records, judged under allclose on a kernel with a fault, merged green with a
    shard of the default standard; no setting was compared, nor named in the header. A record naming a run no run
    record above it states is refused; records naming no run (an older prmg's, or their run_id cleared) merged with
    records of runs make the merge mixed (``settings``) unless allowed. A record run by another runner than its run
    record states (an emulator shard made to read as the toolkit's, keys recomputed) is refused too."""
    from prmg_cli.reports import store

    def shard(run_id: str, settings: dict, name: str) -> tuple[bytes, bytes]:
        judged = replace(record(name, metrics={"max_err_ratio": 0.5}), run_id=run_id,
                         judged_under=store.settings_key(settings))
        return store.encode(store.RunRecord(run_id, "", [name], settings, {})), store.encode(judged)

    default_run, default_record = shard("d" * 32, {"standard": None}, "x")
    loose_run, loose_record = shard("a" * 32, {"standard": "allclose", "faults": {"faults": ["cast_up"]}}, "y")
    default = tmp_path / "default.jsonl"
    default.write_bytes(default_run + default_record)
    headless = tmp_path / "headless.jsonl"
    headless.write_bytes(loose_record)
    assert refusal(headless) == f"{headless}: line 1: case 'y': it names run '{'a' * 32}', which no run record above " \
                                f"it in the file states (its run record removed, or lines of files joined out of " \
                                f"order?): settings no record states: {DISBELIEVED}"
    joined = tmp_path / "joined.jsonl"
    joined.write_bytes(default_run + default_record + loose_record + loose_run)
    assert refusal(joined).startswith(f"{joined}: line 3: case 'y': it names run '{'a' * 32}'")
    joined.write_bytes(default_run + default_record + loose_run + loose_record)         # cat default loose: alike
    assert [result.name for result in read(joined).results] == ["x", "y"]
    assert prmg_here("report", joined).returncode == 1                                    # standard and faults differ
    cleared = tmp_path / "cleared.jsonl"
    cleared.write_bytes(store.encode(replace(record("y", metrics={"max_err_ratio": 0.5}))))
    result = prmg_here("report", default, cleared)
    assert result.returncode == 1 and f"no one verdict covers: settings: {cleared}: not recorded (records of no run " \
                                      f"record: an older prmg's); {default}: recorded (--allow-mixed settings if " \
                                      f"that is intended)" in result.stderr, result.stderr
    assert prmg_here("report", default, cleared, "--allow-mixed", "settings").returncode == 0
    assert prmg_here("report", cleared).returncode == 0              # an older prmg's file alone: as before
    both = tmp_path / "both.jsonl"                                   # one file holding both kinds is mixed too
    both.write_bytes(cleared.read_bytes() + default_run + default_record)
    result = prmg_here("report", both)
    assert result.returncode == 1 and f"settings: {both}: not recorded" in result.stderr, result.stderr
    # an emulator shard whose run record (and so the key each record holds) was edited to read as the toolkit's
    toolkit = {"runner": "aclnn", "standard": None}
    claimed = tmp_path / "claimed.jsonl"
    claimed.write_bytes(store.encode(store.RunRecord("e" * 32, "", ["y"], toolkit, {"runner": "aclnn"})) + store.encode(
        replace(record("y", metrics={"max_err_ratio": 0.5}), runner="emulator", run_id="e" * 32,
                judged_under=store.settings_key(toolkit))))
    assert refusal(claimed) == f"{claimed}: line 2: case 'y': run by the 'emulator' runner, where its run's record " \
                               f"states 'aclnn': {DISBELIEVED}"


@pytest.mark.verdict
def test_a_run_killed_before_its_cases_does_not_stand_on_an_earlier_runs_verdicts(tmp_path):
    """Issue 32 (sixth look): a results file is appended to (smoke.sh's on a runner that keeps its workspace). A run of
    a new kernel killed (SIGKILL, a job's timeout) after its run record left the file's earlier passes as its
    newest records, and prmg report and compare took them: green, the new kernel never run. A case the file's last
    run selected and did not record is not_run, unless its record was judged under that run's settings (a resume
    keeps such records), or the case is in another shard than that run's."""
    from prmg_cli.reports import store
    from prmg_cli.reports.compare import compare_files

    def run(run_id, settings, shard="", names=("x", "y"), together=None):
        return store.encode(store.RunRecord(run_id, shard, list(names), settings, {"started": run_id}, together or {}))

    def passed(name, run_id, settings):
        return store.encode(replace(record(name, metrics={"max_err_ratio": 0.5}), run_id=run_id,
                                    judged_under=store.settings_key(settings)))

    old, new = {"opp": "old kernel"}, {"opp": "new kernel"}
    earlier = run("a", old) + passed("x", "a", old) + passed("y", "a", old)
    path = tmp_path / "r.jsonl"
    path.write_bytes(earlier + run("b", new) + passed("y", "b", new))            # killed after y
    results = {result.name: result for result in merge([read(path)]).results}
    assert results["y"].status == "passed" and results["x"].status == "not_run"
    assert results["x"].message == (f"not run: the last run of {path} (every case, started b) selected it but recorded "
                                    f"no result (stopped or killed before it?), and the file's record of an earlier "
                                    f"run was judged under other settings") and results["x"].shape == [1, 1, 1, 8]
    result = prmg_here("report", path)
    assert result.returncode == 1 and f"prmg: 1 case of {path}: its last run selected them" in result.stderr
    base = tmp_path / "base.jsonl"
    base.write_bytes(earlier)
    assert compare_files(str(base), str(path))[1] == 1                          # x: passed -> not_run, a new failure
    for later in (run("c", old), run("c", old) + run("d", new, "2/2")):          # a resume; a shard holding neither
        path.write_bytes(earlier + later)
        assert [result.status for result in merge([read(path)]).results] == ["passed", "passed"]
    # y's tiling siblings go by the first sibling's name ("d", in shard 2 of 2, where "x" and "y" are in shard 1)
    path.write_bytes(earlier + run("e", new, "2/2", together={"y": "d"}))
    assert [result.status for result in merge([read(path)]).results] == ["passed", "not_run"]


def test_a_verdict_edited_by_hand_or_given_twice_is_believed_by_no_report_compare_or_resume(tmp_path, emulator,
                                                                                           monkeypatch):
    """Issue 32: a failed record hand-edited to passed, or carrying both (``"status": "failed", "status": "passed"``
    reads as passed to Python's json), made report, compare and --resume green. Now each is exit 2 naming the line."""
    from prmg_cli.commands.run import Request
    from prmg_cli.reports.merge import report_files
    from prmg_cli.reports.compare import compare_files
    from prmg_cli.commands.suite import run_suite

    cases, path = tmp_path / "cases.yaml", tmp_path / "r.jsonl"
    cases.write_text(TINY_CASES)
    monkeypatch.setenv("PRMG_EMU_FAULT", "sign")
    request = Request(paths=(str(cases),), runner="emulator", results=str(path), report=("json:/dev/null",))
    assert run_suite(request) == 1
    monkeypatch.delenv("PRMG_EMU_FAULT")
    failed = path.read_text()
    assert failed.count('"status": "failed"') == 1
    for edited, reason in ((failed.replace('"status": "failed"', '"status": "passed"'), "status passed, but its "),
                           (failed.replace('"status": "failed"', '"status": "failed", "status": "passed"'),
                            "the key 'status' appears twice in one object")):
        path.write_text(edited)
        for command in (lambda: report_files([str(path)]), lambda: compare_files(str(path), str(path)),
                        lambda: run_suite(Request(paths=(str(cases),), runner="emulator", resume=str(path)))):
            with pytest.raises(PrmgError) as caught:
                command()
            assert str(caught.value).startswith(f"{path}: line 2: ") and reason in str(caught.value), caught.value


# Records of cases the case format holds, at its limits: an expect-error case's slice (reversed, negative), the
# largest shapes, the longest and shortest times. Each is reported in every format, compared and resumed.
AT_THE_LIMITS = {
    "reversed_slice": {"partial_slice": [8, 0]},
    "negative_start": {"partial_slice": [-2, 6]},
    "largest_rows": {"shape": [MAX_ARRAY_ELEMENTS // 8, 1, 1, 8], "cos_shape": [MAX_ARRAY_ELEMENTS // 8, 1, 1, 8]},
    "zero_next_to_huge": {"shape": [0, MAX_ARRAY_ELEMENTS // 8, 1, 8]},
    "slowest": {"kernel_ms": MAX_SECONDS * 1000.0, "kernel_samples": [MAX_SECONDS * 1000.0] * 3,
                "duration_s": MAX_SECONDS, "timings": {"kernel": MAX_SECONDS * 1000.0}},
    "fastest": {"kernel_ms": 0.0, "kernel_samples": [0.0], "duration_s": 0, "timings": {"kernel": 0.0}},
    "huge_seed": {"seed": 2**64 - 1},
    "worst_index_no_tensor_has": {"details": [f"worst at (b, s, n, d)=({'9' * 5000}, 0, 0, 0): expected 1, got 2, "
                                              f"error 3"]},
}


def test_records_at_the_limits_of_the_case_format_are_reported_compared_and_resumed(tmp_path, emulator):
    from prmg_cli.commands.run import Request
    from prmg_cli.reports.merge import report_files
    from prmg_cli.reports.compare import compare_files
    from prmg_cli.commands.suite import run_suite

    cases, path = tmp_path / "cases.yaml", tmp_path / "r.jsonl"
    cases.write_text("".join(f"- {{name: {name}, shape: [1, 1, 2, 8]}}\n" for name in AT_THE_LIMITS))
    assert run_suite(Request(paths=(str(cases),), runner="emulator", results=str(path))) == 0
    lines = []
    for line in path.read_text().splitlines():       # each case's record given its values, its verdict kept
        data = json.loads(line)
        lines.append(json.dumps({**data, **AT_THE_LIMITS.get(data.get("name"), {}), "status": "failed"}
                                if data["schema"] == read(path).results[0].to_dict()["schema"] else data))
    path.write_text("\n".join(lines) + "\n")
    assert [r.partial_slice for r in read(path).results][:2] == [[8, 0], [-2, 6]]
    reports = [f"{fmt}:{tmp_path / ('report.' + fmt)}" for fmt in OUTPUTS]
    assert report_files([str(path)], reports=reports) == 1
    assert 'id="timing"' in (tmp_path / "report.html").read_text()       # kernel time against bytes is drawn
    assert compare_files(str(path), str(path))[1] == 0
    resumed = [f"{fmt}:{tmp_path / ('resumed.' + fmt)}" for fmt in OUTPUTS]
    assert run_suite(Request(paths=(str(cases),), runner="emulator", resume=str(path), report=tuple(resumed))) == 1
    report = json.loads((tmp_path / "resumed.json").read_text())
    assert report["summary"]["resumed"] == len(AT_THE_LIMITS)
    assert 'id="timing"' in (tmp_path / "resumed.html").read_text()


def test_a_results_file_over_the_size_limit_is_refused_at_once_and_blank_lines_cost_only_their_bytes(tmp_path,
                                                                                                        emulator):
    """Sparse files (no disk, no time to make) just over store.MAX_FILE_BYTES and of 1 GB: one line at once for
    report, compare and resume, nothing read. 20 million blank lines read in a blink (they took 14 s, one
    readline each), counted into the line numbers."""
    from prmg_cli.commands.run import Request
    from prmg_cli.files import describe_size
    from prmg_cli.reports.merge import report_files
    from prmg_cli.reports.compare import compare_files
    from prmg_cli.reports.store import MAX_FILE_BYTES
    from prmg_cli.commands.suite import run_suite

    path, cases = tmp_path / "r.jsonl", tmp_path / "cases.yaml"
    cases.write_text(TINY_CASES)
    for size in (MAX_FILE_BYTES + 1, 10**9):
        with open(path, "wb") as sparse:
            sparse.truncate(size)
        for command in (lambda: report_files([str(path)]), lambda: compare_files(str(path), str(path)),
                        lambda: run_suite(Request(paths=(str(cases),), runner="emulator", resume=str(path)))):
            started = time.process_time()            # CPU, not wall time: a loaded machine never grows it
            with pytest.raises(PrmgError) as caught:
                command()
            assert str(caught.value) == f"{path}: cannot read the results file: is {describe_size(size)}, over the " \
                                        f"limit of {describe_size(MAX_FILE_BYTES)}"
            assert time.process_time() - started < 2
    path.write_bytes(b"\n" * 20_000_000 + json.dumps(record("x").to_dict()).encode() + b"\n \r\n\t\ngarbage\n")
    started = time.process_time()
    with pytest.raises(PrmgError, match="r.jsonl: line 20000004: not a JSON record"):
        read(path)
    assert time.process_time() - started < 3


def test_a_run_never_writes_a_results_file_past_the_size_limit_it_reads(tmp_path):
    """The writer refuses a record that would take a regular results file past store.MAX_FILE_BYTES: every file
    a run writes stays readable by report, compare and --resume. The record just under the limit is written."""
    from prmg_cli.reports.store import MAX_FILE_BYTES, Writer, encode

    path, line = tmp_path / "r.jsonl", encode(record("x"))
    with open(path, "wb") as sparse:
        sparse.truncate(MAX_FILE_BYTES - len(line) - 1)
        sparse.seek(0, 2)
        sparse.write(b"\n")
    with Writer(path) as writer:
        writer.append(record("x"))
        assert path.stat().st_size == MAX_FILE_BYTES
        with pytest.raises(PrmgError, match="cannot write the result of case 'y' to the results file: it would grow "
                                            "past the limit of 512.0 MiB that prmg reads"):
            writer.append(record("y"))
    assert path.stat().st_size == MAX_FILE_BYTES


def test_a_stopped_run_writes_its_cases_not_run_with_one_sync(tmp_path, monkeypatch):
    """After a Ctrl-C the cases not run are written together, synced once: one fsync each took 2.6-4.8 s from the
    signal to the exit for cases/ (800 not run) on a loaded 2-core machine, 0.17-0.27 s so. In order, every line
    read back; a batch crossing the size limit stops at the record that would cross it, naming it."""
    from prmg_cli.reports import store

    syncs = []
    monkeypatch.setattr(store.os, "fsync", syncs.append)
    path, names = tmp_path / "r.jsonl", [f"c{index}" for index in range(300)]
    with store.Writer(path) as writer:
        writer.append_all([record(name, "not_run") for name in names])
        writer.append_all([])
    assert len(syncs) == 1 and [result.name for result in read(path).results] == names
    monkeypatch.setattr(store, "MAX_FILE_BYTES", path.stat().st_size + 2 * len(store.encode(record("c300", "not_run"))))
    with store.Writer(path) as writer, pytest.raises(PrmgError, match="the result of case 'c302'"):
        writer.append_all([record(f"c{index}", "not_run") for index in range(300, 310)])
    assert len(read(path).results) == 302


@pytest.mark.verdict
def test_runs_judged_under_different_settings_fail_the_report_unless_allowed_in_process():
    """The like-with-like rule at its edges, in process: where the runs ran (host, the toolkit's folder) and the inode
    of the same library on two hosts never make a merge mixed; another standard does (exit 1) unless allowed; a run
    every record of which a later run replaced says nothing of the report; --each-device runs on other chips are
    alike (round 6), one sharing the cases among its chips is not."""
    from prmg_cli.reports.merge import mixed_settings, run_info
    from prmg_cli.reports.store import RunRecord
    from prmg_cli.results import ExitCode, report_exit_code

    def run(run_id: str, inode: int, standard=None) -> RunRecord:
        return RunRecord(run_id, "", ["x", "y"], {"standard": standard, "host": run_id, "location": f"/opt/{run_id}",
                                                  "libraries": {"aclnn": [4096, 1.5, inode]}}, {})

    def verdict(stores, allowed=()):
        results = merge(stores).results
        mixed, alike = mixed_settings(stores, results, allowed)
        return [key for key, _ in mixed], [key for key, _ in alike], report_exit_code(results, run_info(stores, results,
                                                                                                          allowed))

    x, y = replace(record("x"), run_id="a"), replace(record("y"), run_id="b")
    replaced = [replace(y, run_id="c"), y]                              # run c's record of y, then run b's
    alike = [Stored("a.jsonl", [x], [run("a", 1)]), Stored("b.jsonl", replaced, [run("c", 3, "allclose"), run("b", 2)])]
    assert verdict(alike) == ([], ["host", "location"], ExitCode.OK)
    unlike = [alike[0], Stored("b.jsonl", [y], [run("b", 2, "allclose")])]
    assert verdict(unlike) == (["standard"], ["host", "location"], ExitCode.FAILED)
    assert verdict(unlike, ("standard",)) == ([], ["host", "location", "standard"], ExitCode.OK)
    each = {"each_device": True, "chips": [0, 1], "visible_devices": ""}     # --each-device on chips 0-1, then 2-3
    chips = [Stored("a.jsonl", [x], [RunRecord("a", "", ["x", "y"], each, {"devices": [0, 1]})]),
             Stored("b.jsonl", [y], [RunRecord("b", "", ["x", "y"], {**each, "chips": [2, 3]}, {"devices": [2, 3]})])]
    assert verdict(chips)[::2] == ([], ExitCode.OK)
    shared = Stored("b.jsonl", [y], [RunRecord("b", "", ["x", "y"], {}, {"devices": [2, 3]})])   # each case on one
    assert verdict([chips[0], shared])[::2] == (["each_device"], ExitCode.FAILED)
    from prmg_cli.reports.merge import shard_warnings           # session 17: a hooked run, which run --strict refuses
    hooked = [alike[0], Stored("b.jsonl", [y], [RunRecord("b", "2/2", ["x", "y"], {}, {"preloaded": ["/x/h.so"]})])]
    assert shard_warnings(hooked, merge(hooked)) == [
        "the run of b.jsonl (2/2, started ?) ran with a library preloaded ahead of the toolkit taking its calls: "
        "/x/h.so (prmg run --strict refuses it)"]
    assert shard_warnings(hooked[:1], merge(hooked[:1])) == []


def test_per_chip_jobs_merge_into_one_record_of_every_chip_and_chips_names_a_missing_one(tmp_path):
    """Issue 32, round 5: a CI matrix of one job per chip, each running the suite on its chip (one pinned by
    ASCEND_RT_VISIBLE_DEVICES, so its run says device 0), merged by prmg report. On main the merge kept one chip's
    record per case (the last file's) while the header listed every device, and a merge of 2 jobs of 3 was green:
    no record says how many chips were meant. Each case now holds each chip's status, the pinned job's as its chip
    2, and --chips 0-2 makes a chip no file holds not_run there, named on stderr in one line; a chip's job killed
    half-way (its run record names the cases it was to run) is not_run there for the cases it never ran, which
    another chip's record stood for; and --resume takes a verdict of another chip for none (chip 2's job resuming
    from chip 0's file ran nothing, exit 0, its header naming chip 2). Round 6: a chip whose job selected fewer
    cases than the others ran (a -k typo on one chip) is named in a warning, without --chips too, and chips whose
    records are of other definitions of a case (jobs of two checkouts, one weakened: green) ran no one case."""
    env = {"PRMG_EMU_DEVICES": "3", "PRMG_EMU_FAULT": "sign", "PRMG_EMU_FAULT_DEVICE": "1",    # chip 1 computes wrong
           "PRMG_HOST": "ci-1"}                         # session 17: the host a CI job in a container names
    jobs = {chip: tmp_path / f"chip{chip}.jsonl" for chip in range(3)}
    for chip, path in jobs.items():
        pinned = {"ASCEND_RT_VISIBLE_DEVICES": "2"} if chip == 2 else {}
        prmg_forked("run", SMOKE, "-k", "same_table_ends", "--runner", "emulator", "--devices",
                    "0" if pinned else str(chip), "--results", path, "-o", os.devnull, env={**env, **pinned})
    every = prmg_here("report", *jobs.values(), "--report", "json", "--chips", "0-2")
    report = json.loads(every.stdout)
    assert every.returncode == 1 and report["summary"]["devices"] == ["0", "1", "2"], every.stderr
    assert [(c["status"], c["device"], c["device_statuses"]) for c in report["cases"]] == \
        [("failed", "1", {"0": "passed", "1": "failed", "2": "passed"})] * 2
    assert "--chips" not in every.stderr.replace("--chips LIST", "")
    appended = tmp_path / "appended.jsonl"              # session 16: chip 1's job, then chip 0's, into one file
    appended.write_text(jobs[1].read_text() + jobs[0].read_text())
    one = prmg_here("report", appended, "--report", "json")
    assert one.returncode == 1 and [c["device_statuses"] for c in json.loads(one.stdout)["cases"]] == \
        [{"0": "passed", "1": "failed"}] * 2, one.stdout
    narrow = tmp_path / "narrow0.jsonl"                 # round 6: chip 0's job with a narrower -k, without --chips
    prmg_forked("run", SMOKE, "-k", "same_table_ends_at_4", "--runner", "emulator", "--devices", "0", "--results",
                narrow, "-o", os.devnull, env=env)
    warning = "the runs on chip 0 selected 1 of the 2 cases run on the host's chips (never selected there: " \
        "smoke.same_table_ends_at_5: a narrower -k or case list, or a shard's job lost?); --chips {} reports each " \
        "not_run there"
    for others, asked in (((jobs[1], jobs[2]), "0-2"), ((jobs[2],), "0,2")):         # two chips too
        narrowed = prmg_here("report", *others, narrow, "-o", os.devnull)
        assert f"prmg: warning: {warning.format(asked)}" in narrowed.stderr.splitlines()
    assert narrowed.returncode == 0                     # session 17: report --strict fails it, named in each report
    strict = prmg_here("report", jobs[2], narrow, "--strict", "--report", "json", "--report", f"junit:{tmp_path}/j.xml")
    assert strict.returncode == 1 and json.loads(strict.stdout)["summary"]["warned"] == [warning.format("0,2")]
    assert "prmg: --strict: 1 warning of the runs merged: exit 1" in strict.stderr.splitlines()
    table = prmg_here("report", jobs[2], narrow, "--strict").stdout         # the summary line says why exit 1
    assert 'errors="1"' in (tmp_path / "j.xml").read_text() and "STRICT: the runs on chip 0" in table
    assert table.splitlines()[-1] == "2 passed, 0 failed; exit 1: STRICT"
    weak = tmp_path / "weak.yaml"                       # chip 1's job of another checkout: sin 0 hides its sign fault
    weak.write_text("cases:\n  - {name: smoke.same_table_ends_at_4, shape: [3, 2, 2, 16], cos_shape: [3, 2, 1, 8], "
                    "partial_slice: [0, 8], dtype: float32, inputs: {sin: {uniform: [0, 0]}}}\n")
    weak1 = tmp_path / "weak1.jsonl"
    assert prmg_forked("run", weak, "--runner", "emulator", "--devices", "1", "--results", weak1, "-o", os.devnull,
                       env=env).returncode == 0
    unlike = prmg_here("report", jobs[0], weak1, "--report", "json")
    assert unlike.returncode == 1 and json.loads(unlike.stdout)["cases"][0]["device_statuses"] == \
        {"0": "not_run", "1": "not_run"}, unlike.stdout
    two = prmg_here("report", jobs[0], jobs[2], "--report", "json")
    report = json.loads(two.stdout)
    assert two.returncode == 0 and report["summary"]["devices"] == ["0", "2"], two.stderr
    missing = prmg_here("report", jobs[0], jobs[2], "--chips", "0-2")
    assert missing.returncode == 1
    assert "prmg: chip 1 of --chips 0-2: no results file holds a result of it (2 cases reported not_run there)" \
        in missing.stderr.splitlines()
    assert "[not_run on device 1; passed on devices 0, 2] not run on chip 1" in " ".join(missing.stdout.split())
    assert prmg_here("report", jobs[0], "--chips", "all").stderr.startswith("prmg: error: --chips all: ")
    assert prmg_here("report", jobs[0], jobs[2], "--chips", "CI-1:0,2", "-o", os.devnull).returncode == 0   # no case
    run, *results = jobs[2].read_text().splitlines(keepends=True)    # session 18: PRMG_HOST=ci-1 on a second machine
    run = json.loads(run)
    run["info"].update(boot_id="b" * 36, machine="box-b")
    (tmp_path / "box-b.jsonl").write_text(json.dumps(run) + "\n" + "".join(results))
    clash = prmg_here("report", jobs[0], tmp_path / "box-b.jsonl", "--chips", "0,2", "--strict", "-o", os.devnull)
    assert clash.returncode == 1 and re.search(r"prmg: warning: host ci-1 names the runs of 2 machines \(their "
                                               r"kernels' boot ids differ; host names .+, box-b\), whose chips merge "
                                               r"as one host's", clash.stderr), clash.stderr
    assert "on ci-1 (machine box-b)," in " ".join(prmg_here("report", tmp_path / "box-b.jsonl").stdout.split())
    lost = prmg_here("report", jobs[0], jobs[2], "--chips", "ci-1:0,2,ci-2:0-7")       # a whole host's jobs lost
    assert lost.returncode == 1 and "prmg: chips ci-2/0-7 of --chips ci-1:0,2,ci-2:0-7: no results file holds a " \
        "result of them (2 cases reported not_run on each)" in lost.stderr.splitlines(), lost.stderr
    other = prmg_here("report", jobs[0], jobs[2], "--chips", "ci-2:0,2", "--strict", "-o", os.devnull)
    assert other.returncode == 1 and "prmg: warning: host ci-1 ran cases and --chips ci-2:0,2 names no chip of it" \
        in other.stderr, other.stderr
    assert prmg_here("run", SMOKE, env={"PRMG_HOST": "ci/1"}).stderr == \
        "prmg: error: PRMG_HOST: 'ci/1' is no host label (ASCII letters, digits, '_', '.', '-'; not only dots; at " \
        "most 200 characters)\n"
    killed = tmp_path / "killed0.jsonl"                 # chip 0's job killed after its first case: without --chips
    killed.write_text("".join(jobs[0].read_text().splitlines(keepends=True)[:2]))     # its run record says so
    stopped = prmg_here("report", killed, jobs[2])
    assert stopped.returncode == 1 and f"prmg: chip 0: the run of {killed} there selected 1 case and recorded no " \
        f"result of them (stopped or killed before them?): reported not_run there" in stopped.stderr.splitlines()
    assert prmg_here("report", killed, jobs[0], "-o", os.devnull).returncode == 0       # chip 0's rerun holds it
    resumed = tmp_path / "resumed2.jsonl"               # chip 2's job resuming from chip 0's file (a shared CI cache)
    again = prmg_forked("run", SMOKE, "-k", "same_table_ends", "--runner", "emulator", "--devices", "2", "--resume",
                        jobs[0], "--results", resumed, "-o", os.devnull, env=env)
    assert again.returncode == 0 and "--resume: 0 results of " in again.stderr, again.stderr     # ran on chip 2
    assert {r.device for r in read(resumed).results} == {"2"}
    pinned = prmg_forked("run", SMOKE, "-k", "same_table_ends", "--runner", "emulator", "--devices", "0", "--resume",
                         resumed, "-o", os.devnull, env={**env, "ASCEND_RT_VISIBLE_DEVICES": "2"})
    assert f"--resume: 2 results of {resumed} taken" in pinned.stderr                   # chip 2 again: taken


def test_each_device_jobs_on_other_chips_merge_as_one_record_of_every_chip_and_a_real_mix_stays_red(tmp_path):
    """Issue 32, round 6: two --each-device jobs of one host, on chips 0-1 and (pinned by ASCEND_RT_VISIBLE_DEVICES)
    2-3, merged: MIXED SETTINGS (chips, visible_devices), exit 1, a false red that --allow-mixed had to silence. The
    chips a run ran on are where it ran, held apart by the merge, not how it was judged: one record of chips 0-3,
    exit 0 under --chips 0-3. A job on one chip without --each-device puts every case on it as well; one judged under
    another standard is still named, alone."""
    def job(name: str, *args: str, pinned: dict = {}) -> Path:
        path = tmp_path / f"{name}.jsonl"
        result = prmg_forked("run", SMOKE, "-k", "same_table_ends", "--runner", "emulator", *args, "--results", path,
                             "-o", os.devnull, env={"PRMG_EMU_DEVICES": "4", **pinned})
        assert result.returncode == 0, result.stderr
        return path

    low = job("low", "--devices", "0,1", "--each-device")
    high = job("high", "--devices", "all", "--each-device", pinned={"ASCEND_RT_VISIBLE_DEVICES": "2,3"})
    merged = prmg_here("report", low, high, "--chips", "0-3", "--report", "json")
    assert merged.returncode == 0 and "no one verdict" not in merged.stderr, merged.stderr
    assert json.loads(merged.stdout)["summary"]["devices"] == ["0", "1", "2", "3"]
    mixed = prmg_here("report", low, job("loose", "--devices", "3", "--standard", "allclose"), "-o", os.devnull)
    assert mixed.returncode == 1 and re.findall(r"no one verdict covers: (\w+)", mixed.stderr) == ["standard"], \
        mixed.stderr
    # session 18: chip 1 of an --each-device run leaks (a warning): its record stood on chip 0's pass, no warning, so
    # report --strict was green and the fault "named but never injected"; a leak on chip 0 failed chip 1 with it
    leaked = job("leak", "--devices", "0,1", "--each-device", pinned={
        "PRMG_EMU_FAULT": "leak_device_memory", "PRMG_EMU_DEVICE_MEMORY": "2G", "PRMG_EMU_FAULT_DEVICE": "1"})
    strict = prmg_here("report", leaked, "--strict", "--report", "json")
    assert strict.returncode == 1 and [(c["device_statuses"], c["message"][:54]) for c in json.loads(strict.stdout)[
        "cases"]] == [({"0": "passed", "1": "failed"}, "[failed on device 1; passed on device 0] --strict: dev")] * 2
    assert "acted on 2 of 2 cases" in prmg_here("report", leaked).stdout
    from prmg_cli.reports.merge import strictly
    warned = record("x", device="0,1", device_statuses={"0": "passed", "1": "passed"}, warnings=["w"])
    for chips, statuses in (({"0": ["w"]}, {"0": "failed", "1": "passed"}), ({}, {"0": "failed", "1": "failed"})):
        assert strictly(replace(warned, device_warnings=chips)).device_statuses == statuses    # {}: an older record


def test_verdicts_that_tie_still_bring_their_runs_settings_into_the_merge(tmp_path):
    """Issue 32, round 5: under --duplicates worst the file a tied verdict was not taken from counted as replaced, its
    run's settings never compared: a chip judged under allclose merged with one judged under the default standard,
    every case passing on both, exit 0 with no word. Every record weighed now counts (--duplicates last: the one
    taken), per chip as well."""
    from prmg_cli.reports import store

    def job(run_id: str, standard, device: str) -> Path:
        settings, path = {"standard": standard}, tmp_path / f"{run_id}{device}.jsonl"
        path.write_bytes(store.encode(store.RunRecord(run_id * 32, "", ["x"], settings, {"host": "h"})) + store.encode(
            replace(record("x"), run_id=run_id * 32, device=device, judged_under=store.settings_key(settings))))
        return path

    for device in ("0", "1"):                       # the same chip twice, and two chips
        files = [job("a", "allclose", device), job("b", None, "0")]
        for rule, mixed in (("worst", True), ("last", device == "1")):
            result = prmg_here("report", *files, "--duplicates", rule, "-o", os.devnull)
            assert result.returncode == mixed and ("no one verdict covers: standard: " in result.stderr) == mixed, \
                (device, rule, result.stderr)


def test_chips_and_devices_take_ranges():
    """--chips 0-7 as a CI matrix names its chips (and --devices alike); a range backwards, past MAX_RANGE ids, one
    overlapping another, or in the one id --device takes is refused."""
    from prmg_cli.commands.suite import MAX_RANGE, device_request

    assert device_request("0-3, 6,8-8", "--chips") == (0, 1, 2, 3, 6, 8)
    for text in ("3-1", f"0-{MAX_RANGE}", "0-2,2", "1-", "-1", "0--1"):
        with pytest.raises(PrmgError, match="--chips"):
            device_request(text, "--chips")
    with pytest.raises(PrmgError, match="--device must be a device id"):
        device_request("0-1", "--device")
    for text, why in (("0-2,7-3", "the range 7-3 goes down; write it 3-7"),      # said only 'must be ... (0-7)'
                      (f"0-{10 ** 40}", f"the range 0-{10 ** 40} spans more than {MAX_RANGE} ids")):
        with pytest.raises(PrmgError, match=f"^--chips {text}: {why}$"):
            device_request(text, "--chips")
    with pytest.raises(PrmgError, match=r"\(digits 0-9\), got 'a'$"):                # report's --chips takes no 'all'
        device_request("a", "--chips")
    from prmg_cli.commands.report import chips_request          # session 17: the hosts named, ids after each its own

    assert chips_request("ci-1:0-1,3,ci-2:2") == ("ci-1/0", "ci-1/1", "ci-1/3", "ci-2/2")
    assert chips_request("0-1") == (0, 1) and chips_request(None) == ()
    word = r"is no host label \(ASCII letters, digits, '_', '\.', '-'; not only dots; at most 200 characters\)$"
    for text, why in (("0,a:1", "^--chips 0,a:1: 0 names no host while a:1 does: name the host of every list"),
                      (":0", f"^--chips :0: '' {word}"), ("a b:0", f"^--chips a b:0: 'a b' {word}"),
                      ("a:b:0", f"^--chips a:b:0: 'a:b' {word}"), ("a:all", "^--chips a:all: a report cannot ask"),
                      ("a:0,a:0", "^--chips a: 0,0: ids must be distinct"), ("a:", r"^--chips a: must be .*got ''$")):
        with pytest.raises(PrmgError, match=why):
            chips_request(text)


def test_chips_missing_are_named_as_ranges_once_per_reason():
    """--chips 0-4095 over three chips' files named the 4093 others one by one: a stderr line each and the whole list
    in every case's message (and a list of the chips per chip of it, quadratic: 20 s for 19 cases). The chips are
    ranges now, a line per reason, and a host's chips are not run together with another's."""
    from prmg_cli.reports.chips import WHY_CHIPS, combine, missing_lines
    from prmg_cli.results import chip_ranges

    assert chip_ranges(["0", "1", "2", "4", "²", "5", "a/6", "a/7", "a/8", "b/9", "10", "9", "11"]) == \
        "0-2, 4, ², 5, a/6-8, b/9, 10, 9, 11"
    assert chip_ranges(["0", "1", "3"]) == "0, 1, 3" and chip_ranges(["3", "4", "5"], ",") == "3-5"
    entries = [(f"chip{chip}.jsonl", record("x", device=str(chip))) for chip in range(3)]
    expected = dict.fromkeys(map(str, range(4096)), WHY_CHIPS)
    combined = combine(entries, lambda items: items[-1], "worst", expected)
    assert combined.record.message == "[not_run on devices 3-4095; passed on devices 0-2] not run on chips 3-4095: " \
        "no results file holds a record of it there (--chips 0-4095)"
    missing = {**{(str(chip), WHY_CHIPS): 19 for chip in range(3, 4096)}, ("9000", "c.jsonl"): 2}
    assert missing_lines(missing, 19, [str(chip) for chip in range(4096)]) == [
        "chips 3-4095 of --chips 0-4095: no results file holds a result of them (19 cases reported not_run on each)",
        "chip 9000: the run of c.jsonl there selected 2 cases and recorded no result of them (stopped or killed "
        "before them?): reported not_run there"]


def test_a_device_id_not_in_ascii_digits_is_no_index_into_the_visible_chips(tmp_path, capsys):
    """A record's ``device`` of ``²`` in a run pinned by ASCEND_RT_VISIBLE_DEVICES passed ``str.isdigit`` and failed
    ``int``: ``prmg report`` of it was a traceback, exit 3 (issue 36's shard ``²/3`` again, in the chips' labels).
    Such an id, or ``١`` (Arabic-Indic 1, which ``int`` reads: chip 5 of ``3,5``), names no chip the variable shows:
    it is kept as written, and device 0 is still chip 3."""
    from prmg_cli.reports import store
    from prmg_cli.reports.merge import report_files

    paths = []
    for index, device in enumerate(("0", "²", "١", "9" * 5000)):
        run_id = f"{index}" * 32
        path = tmp_path / f"chip{index}.jsonl"
        path.write_bytes(store.encode(store.RunRecord(run_id, "", ["c"], {}, {"visible_devices": "3,5",
                                                                                 "devices": [0]}))
                         + store.encode(replace(record("c"), run_id=run_id, device=device,
                                                judged_under=store.settings_key({}))))
        paths.append(str(path))
    assert report_files(paths, reports=["json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert set(shown["cases"][0]["device_statuses"]) == {"3", "²", "١", "9" * 5000}, shown["cases"][0]


def test_a_pass_naming_no_device_ran_on_none_of_the_chips_asked_for(tmp_path, capsys):
    """Session 16: a passed record naming no device (no run writes one: a skip, or a case refused before any chip
    ran it, is held to none) was held to no chip, so ``--chips 0-7`` of such a file was green, exit 0, with
    no evidence any chip ran it; each chip asked for is not_run there. Beside a record of chip 0 the case is whole."""
    from prmg_cli.reports import store
    from prmg_cli.reports.merge import report_files

    def job(name: str, device: str) -> str:
        path, run_id = tmp_path / name, name[0] * 32
        path.write_bytes(store.encode(store.RunRecord(run_id, "", ["c", "s"], {}, {"devices": [0]}))
                         + store.encode(replace(record("c"), run_id=run_id, device=device,
                                                judged_under=store.settings_key({})))
                         + store.encode(replace(record("s", "skipped"), run_id=run_id,
                                                judged_under=store.settings_key({}))))
        return str(path)

    nowhere, chip0 = job("a.jsonl", ""), job("c.jsonl", "0")
    for paths, status in (([nowhere], "not_run"), ([nowhere, chip0], "passed"), ([chip0], "passed")):
        assert report_files(paths, reports=["json"], chips=[0]) == (status != "passed"), paths
        shown = {case["name"]: case["status"] for case in json.loads(capsys.readouterr().out)["cases"]}
        assert shown == {"c": status, "s": "skipped"}, (paths, shown)
    errored = tmp_path / "e.jsonl"          # a case refused before any chip ran it names none: its error stands
    errored.write_bytes(store.encode(store.RunRecord("e" * 32, "", ["e"], {}, {"devices": [0]}))
                        + store.encode(replace(record("e", "error"), run_id="e" * 32, message="refused: no chip",
                                               judged_under=store.settings_key({}))))
    assert report_files([str(errored)], reports=["json"], chips=[0])
    shown = json.loads(capsys.readouterr().out)["cases"]
    assert [(case["status"], case["message"]) for case in shown] == [("error", "refused: no chip")], shown


def test_chips_of_hosts_shards_and_stopped_runs_at_their_edges():
    """The chips of a merge where session 14's tests left them unpinned (mutants chips-*, combine-*): device 0 of two
    hosts is two chips (a failure on one is never a duplicate of the other's pass); a run sharing its cases among its
    chips, or a per-chip job of one shard, is held to none of the cases it did not run (no false not_run); a chip's
    job stopped half-way is not_run there under --chips too, for a chip --chips leaves out as well; an --each-device
    record covers each of its chips; a record of no chip is never dropped beside a chip's; under --duplicates worst
    every record of a chip holding several is weighed (its run's settings compared), under last the one taken. Chips
    that ran a shard each are warned of no narrower selection, a chip whose job of one shard was lost is (and not
    under --chips, which reports its cases not_run), and a record of no fingerprint (an older file) is of no other
    definition of the case."""
    from prmg_cli.device.execute import shard_of
    from prmg_cli.reports.store import RunRecord

    def job(path: str, results: dict, selection, devices, host="h", shard="", **fields) -> Stored:
        run = RunRecord(path[0] * 32, shard, list(selection), {}, {"host": host, "devices": devices})
        return Stored(path, [replace(record(name, status), run_id=run.run_id, **{"device": str(devices[0]), **fields})
                             for name, status in results.items()], [run])

    def merged(*stores: Stored, chips=()) -> dict:
        return {r.name: (r.status, r.device_statuses) for r in merge(stores, chips=chips).results}

    assert merged(job("a", {"x": "failed"}, "x", [0], host="ci-1"), job("b", {"x": "passed"}, "x", [0], host="ci-2")) \
        == {"x": ("failed", {"ci-1/0": "failed", "ci-2/0": "passed"})}
    chip2 = job("c", {"x": "passed", "y": "passed"}, "xy", [2])
    assert merged(job("s", {"x": "passed"}, "xy", [0, 1]), chip2) == \
        {"x": ("passed", {"0": "passed", "2": "passed"}), "y": ("passed", {})}
    names = [f"case{index}" for index in range(8)]
    first = [name for name in names if shard_of(name, 2) == 1]
    assert 0 < len(first) < len(names)
    everything = job("e", dict.fromkeys(names, "passed"), names, [1])
    assert {name: status for name, (status, _) in merged(
        job("f", dict.fromkeys(first, "passed"), names, [0], shard="1/2"), everything).items()} == \
        dict.fromkeys(names, "passed")
    assert merged(chip2, job("k", {"x": "passed"}, "xy", [5]), chips=[2])["y"] == \
        ("not_run", {"2": "passed", "5": "not_run"})
    each = job("m", {"x": "passed"}, "x", [0, 1], device="0,1", device_statuses={"0": "passed", "1": "passed"})
    assert merged(each, chips=[0, 1]) == {"x": ("passed", {"0": "passed", "1": "passed"})}
    assert merged(job("n", {"x": "error"}, "x", [0], device=""), job("o", {"x": "passed"}, "x", [0]))["x"][0] == "error"
    second = [name for name in names if name not in first]       # session 16: narrower's edges (mutants s16-*)
    shards = [job("g", dict.fromkeys(first, "passed"), names, [0], shard="1/2"),
              job("h", dict.fromkeys(second, "passed"), names, [1], shard="2/2")]
    assert merge(shards).narrower == []                             # a shard on each chip: no case on two
    lost = [*shards, job("i", dict.fromkeys(first, "passed"), names, [1], shard="1/2")]     # chip 0's 2/2 lost
    assert [line.split(" selected ")[0] for line in merge(lost).narrower] == ["warning: the runs on chip 0"]
    assert merge(lost, chips=[0, 1]).narrower == []                 # --chips: each not_run there instead
    hosts = [job("v", {"x": "passed", "y": "passed"}, "xy", [0], host="h1"), job("w", {"x": "passed"}, "x", [0],
                                                                                    host="h2")]   # h2's -k narrower
    for chips in ((), [0]):                         # session 17: green under --chips 0 too (y held to h1 alone)
        assert [line.split(" (")[0] for line in merge(hosts, chips=chips).narrower] == \
            ["the runs on host h2 selected 1 of the 2 cases run on the hosts merged"]
    assert merge(hosts, chips=["h1/0", "h2/0"]).narrower == []      # named: y not_run on h2/0 instead
    assert merge([job("g", dict.fromkeys(first, "passed"), names, [0], host="h1", shard="1/2"),
                  job("h", dict.fromkeys(second, "passed"), names, [0], host="h2", shard="2/2")]).narrower == []
    assert merged(job("j", {"x": "passed"}, "x", [0], fingerprint=""), job("l", {"x": "passed"}, "x", [1],
                                                                           fingerprint="f" * 64))["x"][0] == "passed"
    several = [job(path, {"x": "passed"}, "x", [chip]) for path, chip in (("p", 0), ("q", 0), ("r", 1))]
    for rule, weighed in (("worst", "pqr"), ("last", "qr")):
        assert merge(several, rule=rule).sources == {letter * 32 for letter in weighed}, rule


def test_session_17s_merge_rules_at_their_edges(tmp_path):
    """Session 18's mutants of session 17's merge (s18-*): report --strict fails each chip of an --each-device record
    that warned (its chips said passed, so --chips 0,1 merged it green); --chips HOST:IDS holds a case no chip ran
    (skipped) to none of its chips; an error naming no chip (refused before any chip ran it) stands beside a chip's
    run stopped before the case; report --strict fails the run's own warnings (small cases' pooled error balance) and
    a merge of skips, as run --strict does; in a file of no run records (an older prmg's) a case's later record on a
    chip replaces its earlier one there, and a record of another chip none."""
    from prmg_cli.reports import store
    from prmg_cli.reports.store import RunRecord

    def job(path: str, results: list, selection, devices, host="h") -> Stored:
        run = RunRecord(path[0] * 32, "", list(selection), {}, {"host": host, "devices": devices})
        return Stored(path, [replace(result, run_id=run.run_id) for result in results], [run])

    leaked = record("x", device="0,1", device_statuses={"0": "passed", "1": "passed"}, warnings=["device memory: +4"])
    for chips in ((), [0, 1]):
        merged = merge([job("e", [leaked], "x", [0, 1])], chips=chips, strict=True).results
        assert [(r.status, r.device_statuses) for r in merged] == [("failed", {"0": "failed", "1": "failed"})], chips
    skipped = job("s", [record("x", device="0"), record("y", "skipped")], "xy", [0], host="ci-1")
    assert {r.name: r.status for r in merge([skipped], chips=["ci-1/0"]).results} == {"x": "passed", "y": "skipped"}
    refused = job("r", [record("e", "error", message="refused: no chip")], "e", [0])
    stopped = job("k", [], "e", [1])                    # chip 1's job, killed before case e
    assert [(r.status, r.message) for r in merge([refused, stopped]).results] == [("error", "refused: no chip")]
    from prmg_cli.error_balance import METRICS
    from prmg_cli.reports.merge import report_files

    leaning = {**dict.fromkeys(METRICS, 0), METRICS[0]: 20}     # 20 up, 0 down: too few alone, biased pooled
    pooled = tmp_path / "pooled.jsonl"                  # report --strict fails the run's own warnings as run --strict
    pooled.write_bytes(b"".join(store.encode(record(name, metrics=leaning)) for name in "ab"))
    skipped = tmp_path / "skipped.jsonl"                # and a merge of skipped cases alone
    skipped.write_bytes(store.encode(record("s", "skipped")))
    for path, lenient in ((pooled, 0), (skipped, 5)):
        assert [report_files([str(path)], reports=["json"], strict=strict) for strict in (False, True)] == \
            [lenient, 1], path
    older = tmp_path / "old.jsonl"                      # no run record: an older prmg's file, rerun after a fix,
    for chips, status in (("00", "passed"), ("01", "failed")):      # or appended to by another chip's job
        older.write_bytes(b"".join(store.encode(record("x", verdict, device=chip))
                                   for verdict, chip in zip(("failed", "passed"), chips)))
        assert [r.status for r in merge([read(older)]).results] == [status], chips


def test_per_chip_jobs_appending_to_one_file_are_each_chips_records_and_a_rerun_still_replaces(tmp_path):
    """Session 16: per-chip jobs run one after another into one results file (``for d in 1 0; do prmg run --devices
    $d --results r.jsonl``): the file's last record of a case was taken as a rerun of every earlier one, so chip 0's
    pass hid chip 1's sign-wrong kernel (report exit 0). A file now holds each chip's newest record; a later run on a
    chip (or sharing its cases among chips it names) still replaces an earlier record there, as a rerun does; a chip's
    job stopped before a case is not_run there beside another chip's record of it in the file."""
    from prmg_cli.reports.store import RunRecord, settings_key

    def run(letter: str, devices: list, results: dict, selection=(), **info) -> str:
        header = RunRecord(letter * 32, "", sorted(selection or results), {}, {"host": "h", "devices": devices, **info})
        return json.dumps(header.to_dict()) + "\n" + "".join(json.dumps(replace(
            record(name, status), run_id=letter * 32, judged_under=settings_key({}), device=device).to_dict()) + "\n"
            for name, (status, device) in results.items())

    def merged(*runs: str, kept=None) -> dict:
        """The merge of ``runs`` written as one file, the same with ``store.read``'s choice left out (every record
        handed to ``Chips.current``: each of the two applies the rule alone), and ``kept``, the (case, run) of each
        record ``read`` keeps (session 17: a mutant of either was hidden by the other)."""
        path = tmp_path / "r.jsonl"
        path.write_text("".join(runs))
        stored, every = read(path), read(path)
        lines = path.read_bytes().splitlines()
        every.results = [r for r in map(parse, lines, itertools.count(1), itertools.repeat(""))
                         if isinstance(r, CaseResult)]
        if kept is not None:
            assert [(r.name, r.run_id[0]) for r in stored.results] == kept
        shown = [{r.name: (r.status, r.device_statuses) for r in merge([whole]).results} for whole in (stored, every)]
        assert shown[0] == shown[1]
        return shown[0]

    chip1 = run("a", [1], {"x": ("failed", "1"), "y": ("passed", "1")})
    assert merged(chip1, run("b", [0], {"x": ("passed", "0"), "y": ("passed", "0")})) == {
        "x": ("failed", {"0": "passed", "1": "failed"}), "y": ("passed", {"0": "passed", "1": "passed"})}
    assert merged(chip1, run("c", [1], {"x": ("passed", "1")}), kept=[("y", "a"), ("x", "c")]) == {
        "x": ("passed", {}), "y": ("passed", {})}
    killed = run("k", [1], {"x": ("passed", "1")}, selection="xy")   # chip 1's job killed before y, chip 0's after
    assert merged(killed, run("b", [0], {"x": ("passed", "0"), "y": ("passed", "0")}))["y"] == (
        "not_run", {"0": "passed", "1": "not_run"})
    shared = run("d", [0, 1], {"x": ("failed", "1")})               # a run sharing x and y among chips 0 and 1
    rerun = run("e", [0, 1], {"x": ("passed", "0")})
    assert merged(shared, rerun, kept=[("x", "e")])["x"] == ("passed", {})
    assert merged(shared, rerun, run("g", [2], {"x": ("passed", "2")}))["x"] == ("passed", {"0": "passed",
                                                                                          "2": "passed"})
    pinned = run("f", [0], {"x": ("passed", "0")}, visible_devices="1")     # chip 1 again, as device 0 of 1
    assert merged(chip1, pinned, kept=[("y", "a"), ("x", "f")])["x"] == ("passed", {})


def test_the_operator_library_is_one_in_two_toolkit_folders_only_when_it_lies_in_each():
    """Session 16 compares the operator library by its path in its toolkit (``TOOLKIT_ROOT/lib64/...``): one build in
    /usr/local/Ascend on one host and /opt/Ascend on another is one. A library beside its toolkit's folder, not in it
    (/a/tk-old beside /a/tk: a folder name the toolkit's begins), is compared by its whole path (session 17: a prefix
    test took /a/tk-old and /b/tk-old for one library, two builds merged unwarned)."""
    from prmg_cli.reports.merge import differing_settings
    from prmg_cli.reports.store import RunRecord

    def runs(*places: tuple[str, str]) -> list:
        return [(f"{index}.jsonl", RunRecord(str(index) * 32, "", [], {"location": location, "op_library": library},
                                             {})) for index, (location, library) in enumerate(places)]

    library = "lib64/libopapi_transformer.so"
    assert [key for key, _ in differing_settings(runs(("/usr/local/Ascend", f"/usr/local/Ascend/{library}"),
                                                      ("/opt/Ascend", f"/opt/Ascend/{library}")))] == ["location"]
    assert [key for key, _ in differing_settings(runs(("/a/tk", f"/a/tk-old/{library}"),
                                                      ("/b/tk", f"/b/tk-old/{library}")))] == ["location", "op_library"]
