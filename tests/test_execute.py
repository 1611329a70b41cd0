"""Robust at scale, end to end: crashes, hangs, shards, devices, resume, memory refusal, Ctrl-C."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, prmg_forked, prmg_here
from prmg_cli.cases.loader import Case, load_cases
from prmg_cli.device.execute import Wedging, memory_need, shard
from prmg_cli.errors import PrmgError
from prmg_cli.files import MiB

MANY = """
defaults: {dtype: float16, cos_shape: [1, 1, 1, 16], partial_slice: [8, 24]}
cases:
  - {name: c0, shape: [1, 2, 2, 32]}
  - {name: c1, shape: [1, 2, 3, 32]}
  - {name: c2, shape: [1, 2, 4, 32]}
  - {name: c3, shape: [1, 2, 5, 32]}
  - {name: c4, shape: [1, 2, 6, 32]}
  - {name: c5, shape: [1, 2, 7, 32]}
"""


@pytest.fixture
def many(tmp_path) -> Path:
    path = tmp_path / "many.yaml"
    path.write_text(MANY)
    return path


def run_json(*args, env=None, timeout=300):
    result = prmg_forked("run", *args, "--runner", "emulator", "--report", "json", env=env, timeout=timeout)
    assert "Traceback" not in result.stderr, result.stderr
    assert result.stdout.startswith("{"), (result.returncode, result.stderr)    # (once, at a load of 5: no report)
    return result, json.loads(result.stdout)


def by_name(report):
    return {case["name"]: case for case in report["cases"]}


def test_a_crashing_case_is_an_error_and_the_others_still_run(many):
    result, report = run_json(many, env={"PRMG_EMU_FAULT": "crash", "PRMG_EMU_FAULT_SHAPE": "1,2,4,32"})
    assert result.returncode == 1
    cases = by_name(report)
    assert cases["c2"]["status"] == "error"
    assert cases["c2"]["message"].startswith("worker crashed: signal 11")
    assert [cases[f"c{i}"]["status"] for i in (0, 1, 3, 4, 5)] == ["passed"] * 5


def test_every_case_crashing_still_completes_the_report(many):
    result, report = run_json(many, env={"PRMG_EMU_FAULT": "crash"})
    assert result.returncode == 1
    assert [c["status"] for c in report["cases"]] == ["error"] * 6
    assert report["summary"]["error"] == 6


def test_hangs_time_out_within_bounds_and_the_run_goes_on(many):
    started = time.monotonic()
    result, report = run_json(many, "--timeout", "1.5",
                              env={"PRMG_EMU_FAULT": "hang", "PRMG_EMU_FAULT_SHAPE": "1,2,3,32"})
    elapsed = time.monotonic() - started
    cases = by_name(report)
    assert cases["c1"]["status"] == "error" and "timed out after 1.5 s" in cases["c1"]["message"]
    assert sum(c["status"] == "passed" for c in report["cases"]) == 5
    assert elapsed < 60


def test_shards_partition_the_cases_exactly_once(many):
    names = []
    for index in (1, 2, 3):
        result = prmg_forked("run", many, "--list", "--shard", f"{index}/3")
        assert result.returncode == 0
        names += [n for n in (f"c{i}" for i in range(6)) if f"{n} " in result.stdout]
    assert sorted(names) == [f"c{i}" for i in range(6)]
    cases = load_cases([str(many)])
    parts = [shard(cases, i, 4) for i in (1, 2, 3, 4)]
    assert sorted(c.name for part in parts for c in part) == sorted(c.name for c in cases)
    # adding a case elsewhere never moves an existing one to another shard
    more = cases + [Case(name="new", source="x", shape=(1, 1, 1, 8), cos_shape=(1, 1, 1, 8),
                         sin_shape=(1, 1, 1, 8), partial_slice=(0, 8))]
    assert [[c.name for c in shard(more, i, 4) if c.name != "new"] for i in (1, 2, 3, 4)] == \
        [[c.name for c in part] for part in parts]


def test_two_devices_agree_with_one(many):
    env = {"PRMG_EMU_DEVICES": "2"}
    _, serial = run_json(many, env=env)
    result, parallel = run_json(many, "--devices", "0,1", env=env)
    assert result.returncode == 0
    assert parallel["summary"]["devices"] == [0, 1]
    strip = lambda report: [(c["name"], c["status"], c["metrics"]) for c in report["cases"]]
    assert strip(serial) == strip(parallel)
    result, every = run_json(many, "--devices", "all", env=env)
    assert every["summary"]["devices"] == [0, 1]
    result = prmg_forked("run", many, "--runner", "emulator", "--device", "5", env=env)
    assert result.returncode == 2 and "Traceback" not in result.stderr


def test_device_ids_the_runtime_lacks_are_refused_before_any_worker_starts(many):
    """A thousand ids, two of which exist: one line at once (the runtime asked for its count), no worker."""
    started = time.monotonic()
    result = prmg_forked("run", many, "--runner", "emulator", "--devices", ",".join(map(str, range(1000))),
                         env={"PRMG_EMU_DEVICES": "2"})
    assert result.returncode == 2 and time.monotonic() - started < 30
    assert result.stderr == "prmg: error: --devices: the runtime has 2 devices (ids 0 to 1); no device 2, 3, 4, 5, 6 " \
                            "and 993 more\n"


def test_results_file_and_resume(many, tmp_path):
    results = tmp_path / "r.jsonl"
    result, report = run_json(many, "-k", "c1", "--results", results, "--max-memory", "0")     # 0: no limit (it was
    assert report["cases"][0]["status"] == "passed", report["cases"][0]["message"]              # over 0 bytes, error)
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    assert [line["schema"] for line in lines] == ["prmg.run/1", "prmg.result/3"] and lines[1]["name"] == "c1"
    assert lines[0]["selection"] == ["c1"] and lines[1]["run_id"] == lines[0]["run_id"]
    result, report = run_json(many, "--resume", results)
    assert result.returncode == 0 and len(report["cases"]) == 6 and report["summary"]["resumed"] == 1
    assert "prmg: --resume: 1 result of " in result.stderr
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    assert sorted(line["name"] for line in lines if "name" in line) == [f"c{i}" for i in range(6)]   # c1 once


def test_resume_reruns_a_case_whose_definition_changed(many, tmp_path):
    results = tmp_path / "r.jsonl"
    result, _ = run_json(many, "--results", results)
    assert result.returncode == 0
    many.write_text(MANY.replace("{name: c2, shape: [1, 2, 4, 32]}", "{name: c2, shape: [1, 2, 4, 32], seed: 7}")
                    .replace("{name: c3, shape: [1, 2, 5, 32]}", "{name: c3, shape: [1, 2, 5, 32], generator: pcg64}"))
    result, report = run_json(many, "--resume", results)
    assert result.returncode == 0 and len(report["cases"]) == 6
    records = [json.loads(line) for line in results.read_text().splitlines()]
    records = [record for record in records if "name" in record]
    assert sorted(record["name"] for record in records) == ["c0", "c1", "c2", "c2", "c3", "c3", "c4", "c5"]
    assert [record["generator"] for record in records if record["name"] == "c3"] == ["philox4x32", "pcg64"]
    assert {case["name"]: case["generator"] for case in report["cases"]}["c3"] == "pcg64"    # other inputs: run again


def test_resume_never_trusts_a_verdict_judged_under_other_settings(many, tmp_path):
    results = tmp_path / "r.jsonl"
    assert run_json(many, "--results", results)[0].returncode == 0
    faulty = dict(os.environ, PRMG_EMU_FAULT="sign")           # another kernel: the greens above prove nothing
    result, report = run_json(many, "--resume", results, env=faulty)
    assert result.returncode == 1 and {case["status"] for case in report["cases"]} == {"failed"}
    again = "6 recorded verdicts of a case changed since or judged under other settings"
    assert "prmg: --resume: 0 results of" in result.stderr and again in result.stderr
    result, report = run_json(many, "--resume", results, "--standard", "allclose")
    assert result.returncode == 0 and again in result.stderr
    result, report = run_json(many, "--resume", results, "--standard", "allclose")   # now recorded: trusted
    assert "other settings" not in result.stderr and report["summary"]["resumed"] == 6
    assert len(results.read_text().splitlines()) == 4 + 3 * 6                 # a run record per run


def test_resume_of_an_each_device_run_trusts_a_verdict_only_on_the_same_chips(many, tmp_path):
    """Issue 32 (session 5): every case of a --each-device run on chips 0 and 1 was taken by a --resume on chips
    0 to 3 ("6 passed", exit 0), though chips 2 and 3 never ran a case. The chips are now among the settings a
    verdict was judged under: another set runs every case again; the same set resumes."""
    results, chips = tmp_path / "r.jsonl", dict(os.environ, PRMG_EMU_DEVICES="4")
    assert run_json(many, "--devices", "0,1", "--each-device", "--results", results, env=chips)[0].returncode == 0
    result, report = run_json(many, "--devices", "0,1,2,3", "--each-device", "--resume", results, env=chips)
    assert result.returncode == 0 and report["summary"]["resumed"] == 0
    assert "6 recorded verdicts of a case changed since or judged under other settings" in result.stderr
    assert {case["device"] for case in report["cases"]} == {"0,1,2,3"}
    result, report = run_json(many, "--devices", "0,1,2,3", "--each-device", "--resume", results, env=chips)
    assert report["summary"]["resumed"] == 6


def test_resume_runs_again_a_verdict_of_another_emulated_build(many, tmp_path):
    """PRMG_EMU_BUILD=base makes the same emulator library return the base build's statuses, yet its verdicts were
    taken by a resume on the latest build (and merged with its shards as alike): the build is in the emulator's
    stated version, so headers name it and --resume runs such cases again."""
    results = tmp_path / "r.jsonl"
    result, report = run_json(many, "-k", "c1", "--results", results, env={"PRMG_EMU_BUILD": "base"})
    assert result.returncode == 0 and report["summary"]["toolkit_version"].endswith(" (PRMG_EMU_BUILD=base)")
    result, report = run_json(many, "-k", "c1", "--resume", results)
    assert result.returncode == 0 and report["summary"]["resumed"] == 0, result.stderr
    assert "(PRMG_EMU_BUILD" not in report["summary"]["toolkit_version"]


def kernel_tree(opp: Path) -> dict[str, Path]:
    """A toolkit's opp folder as CANN lays it out: the grad's kernel binary and config, another operator's kernel, and
    the tiling library, built in and in a vendor's package; each file's text its version."""
    tbe = ("op_impl", "ai_core", "tbe")
    files = {"kernel": opp.joinpath("built-in", *tbe, "kernel", "ascend950", "inplace_partial_rotary_mul_grad", "k.o"),
             "config": opp.joinpath("built-in", *tbe, "kernel", "config", "ascend950",
                                    "inplace_partial_rotary_mul_grad.json"),
             "other": opp.joinpath("built-in", *tbe, "kernel", "ascend950", "add", "add.o"),
             "tiling": opp.joinpath("built-in", *tbe, "op_tiling", "lib", "linux", "x86_64", "liboptiling.so"),
             "vendor": opp.joinpath("vendors", "customize", *tbe, "op_host", "libcust_opmaster_rt2.0.so"),
             "custom": opp.parent.joinpath("mine", *tbe, "kernel", "ascend950", "InplacePartialRotaryMul", "f.o"),
             "readme": opp.joinpath("built-in", "README")}
    for path in files.values():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("1")
    return files


def test_the_opp_stamp_changes_with_the_operators_kernel_and_tiling_files_only(tmp_path):
    """Issue 32: what --resume keys on includes every file the toolkit loads for the operator under the opp path,
    in built-in, vendors and ASCEND_CUSTOM_OPP_PATH, and nothing else there."""
    from prmg_cli.device.provenance import opp_stamp

    opp = tmp_path / "opp"
    files = kernel_tree(opp)
    custom, titles = str(tmp_path / "mine"), ("InplacePartialRotaryMulGrad", "InplacePartialRotaryMul")
    first = opp_stamp(opp, custom, titles)
    assert first["files"] == 5 and opp_stamp(opp, "", titles)["files"] == 4
    for name, path in files.items():
        path.write_text("22")
        changed = opp_stamp(opp, custom, titles)
        assert (changed["fingerprint"] != first["fingerprint"]) == (name not in ("other", "readme")), name
        assert (changed["portable"] != first["portable"]) == (name not in ("other", "readme")), name
        first = changed


def test_the_opp_stamp_changes_with_a_binary_written_over_in_place_and_with_the_vendors_order(tmp_path):
    """Issue 32 (fifth look): a kernel binary written over in place (its inode kept) with its size and time kept (``cp
    -p`` of a reproducible build, ``touch -r``) left the stamp as it was, and so did another order of the vendors in
    ``vendors/config.ini``, which changes whose kernel the toolkit takes: --resume took the verdicts of the kernel
    before. The stamp holds each file's ctime (which nothing but the kernel sets) and the vendors' order."""
    from prmg_cli.device.provenance import KERNEL_FOLDER, opp_stamp

    opp, titles = tmp_path / "opp", ("InplacePartialRotaryMulGrad",)
    kernel = kernel_tree(opp)["kernel"]
    before, first = kernel.stat(), opp_stamp(opp, "", titles)
    while kernel.stat().st_ctime_ns == before.st_ctime_ns:         # the clock of ctime may tick coarsely
        with open(kernel, "r+b") as handle:
            handle.write(b"2")                                        # another binary of the same size, same inode
        os.utime(kernel, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = kernel.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    second = opp_stamp(opp, "", titles)
    assert second["fingerprint"] != first["fingerprint"] and second["portable"] == first["portable"]
    vendor = opp.joinpath("vendors", "b", *KERNEL_FOLDER, "ascend950", "inplace_partial_rotary_mul_grad", "k.o")
    vendor.parent.mkdir(parents=True)
    vendor.write_text("vendor b's build")
    stamps = []
    for order in ("customize,b", "b,customize"):          # the same files, another vendor's kernel taken
        (opp / "vendors" / "config.ini").write_text(f"load_priority={order}\n")
        stamps.append(opp_stamp(opp, "", titles))
    assert stamps[0]["files"] == stamps[1]["files"] == second["files"] + 1
    assert stamps[0]["fingerprint"] != stamps[1]["fingerprint"] and stamps[0]["portable"] != stamps[1]["portable"]


def test_the_opp_stamp_follows_folder_links_to_the_operators_kernel_and_tiling_files(tmp_path):
    """Issue 32 (round 3): a kernel's folder holding a link to a build's output folder (``bin -> ~/build/out``), or the
    tiling library's folder a link to a build (``op_tiling/lib/linux/x86_64 -> ~/build/tiling``): the stamp did not
    follow folder links, so a rebuilt kernel or tiling library there left the fingerprint as it was and --resume took
    the verdicts of the kernel before. Folder links are followed, each folder once (a link back to a folder above
    ends there: no loop)."""
    from prmg_cli.device.provenance import KERNEL_FOLDER, LIBRARY_FOLDERS, opp_stamp

    opp, titles = tmp_path / "opp", ("InplacePartialRotaryMulGrad",)
    built_in = opp / "built-in"
    kernel = built_in.joinpath(*KERNEL_FOLDER, "ascend950", "inplace_partial_rotary_mul_grad")
    tiling = built_in.joinpath(*LIBRARY_FOLDERS[0], "lib", "linux")
    for folder in (kernel, tiling, tmp_path / "build" / "out", tmp_path / "build" / "tiling"):
        folder.mkdir(parents=True)
    (kernel / "bin").symlink_to(tmp_path / "build" / "out")
    (tiling / "x86_64").symlink_to(tmp_path / "build" / "tiling")
    (kernel / "loop").symlink_to(kernel)                                 # a link back to itself: walked once
    binary, library = tmp_path / "build" / "out" / "k.o", tmp_path / "build" / "tiling" / "libopmaster_rt2.0.so"
    binary.write_text("1")
    library.write_text("1")
    first = opp_stamp(opp, "", titles)
    assert first["files"] == 2
    for rebuilt in (binary, library):
        rebuilt.write_text("22")
        changed = opp_stamp(opp, "", titles)
        assert changed["fingerprint"] != first["fingerprint"] and changed["portable"] != first["portable"], rebuilt
        first = changed


def test_resume_reruns_a_case_whose_kernel_binary_changed(many, tmp_path):
    """Issue 32: a rebuilt kernel binary under ASCEND_OPP_PATH (the op library unchanged) is another kernel: the
    verdicts recorded before it run again; a file of another operator changes nothing."""
    results, opp = tmp_path / "r.jsonl", tmp_path / "opp"
    files = kernel_tree(opp)
    env = {"ASCEND_OPP_PATH": str(opp)}
    assert run_json(many, "-k", "c1", "--results", results, env=env)[0].returncode == 0
    files["other"].write_text("another build of another operator")
    result, report = run_json(many, "-k", "c1", "--resume", results, env=env)
    assert "prmg: --resume: 1 result of" in result.stderr and report["summary"]["resumed"] == 1
    assert report["summary"]["opp"] == str(opp) and report["summary"]["opp_files"] == 4
    files["kernel"].write_text("a rebuilt kernel")
    result, report = run_json(many, "-k", "c1", "--resume", results, env=env)
    assert "prmg: --resume: 0 results of" in result.stderr and "the operator's kernel and tiling files" in result.stderr
    assert report["summary"]["resumed"] == 0 and report["cases"][0]["status"] == "passed"
    recorded = [json.loads(line)["settings"]["opp"] for line in results.read_text().splitlines()
                if '"prmg.run/1"' in line]
    assert [entry["path"] for entry in recorded] == [str(opp)] * 3 and recorded[1] != recorded[2]


def test_resume_takes_the_verdicts_of_the_same_kernel_files_reached_through_a_link_and_no_others(many, tmp_path):
    """Issue 32 (round 4, session 12's Left): the opp folder named through a link (``ASCEND_OPP_PATH=.../latest/opp``
    one day, the folder it names the next; a custom package's entry likewise) ran every case again under --resume:
    the stamp and the settings held the path as written. They hold the files as resolved now: the same files are the
    same verdicts, and the link pointed at another build's opp runs the cases again (not weaker)."""
    results, opp, other = tmp_path / "r.jsonl", tmp_path / "opp", tmp_path / "other" / "opp"
    files, others = kernel_tree(opp), kernel_tree(other)
    others["kernel"].write_text("another build of the kernel")
    link, custom = tmp_path / "latest", tmp_path / "custom-link"
    link.symlink_to(opp)
    custom.symlink_to(tmp_path / "mine")
    env = {"ASCEND_OPP_PATH": str(opp), "ASCEND_CUSTOM_OPP_PATH": str(tmp_path / "mine")}
    assert run_json(many, "-k", "c1", "--results", results, env=env)[0].returncode == 0
    for linked in ({"ASCEND_OPP_PATH": str(link)}, {"ASCEND_CUSTOM_OPP_PATH": str(custom)}):
        result, report = run_json(many, "-k", "c1", "--resume", results, env={**env, **linked})
        assert report["summary"]["resumed"] == 1, (linked, result.stderr)
        assert report["summary"]["opp"] == linked.get("ASCEND_OPP_PATH", str(opp))       # the header: as named
    files["custom"].write_text("a rebuilt custom kernel")                         # reached through the custom link
    result, report = run_json(many, "-k", "c1", "--resume", results, env={**env, "ASCEND_CUSTOM_OPP_PATH": str(custom)})
    assert report["summary"]["resumed"] == 0, result.stderr
    link.unlink()
    link.symlink_to(other)                                                  # the link now names another build's opp
    result, report = run_json(many, "-k", "c1", "--resume", results, env={**env, "ASCEND_OPP_PATH": str(link)})
    assert report["summary"]["resumed"] == 0 and "the operator's kernel and tiling files" in result.stderr


def test_resume_and_merge_take_a_toolkit_named_through_latest_and_its_version_folder_as_one(many, tmp_path, emulator):
    """Issue 32 (session 13): the toolkit named through ``ascend-toolkit/latest`` (a link to ``8.0.RC2``, CANN's
    layout) one day and through ``8.0.RC2`` the next ran every case again under --resume, and shards run each way were
    MIXED SETTINGS (op_library), exit 1: the settings held its folder and library as named. They hold them with links
    resolved (the header still as named); ``latest`` pointed at another version (``8.0.RC3``, the same library files
    hard-linked: only the folder differs) still runs them again; its library rebuilt is no
    merge (session 16: as ``libraries``, not ``op_library``, compared by its path in its toolkit: one build in two
    folders is one). A results file of an earlier prmg (settings as named, no resolved fields) is read: merged, and
    resumed by running its cases again."""
    import shutil

    from prmg_cli.reports.store import settings_key

    kit = tmp_path / "ascend-toolkit"
    shutil.copytree(emulator.root, kit / "8.0.RC2")
    shutil.copytree(kit / "8.0.RC2", kit / "8.0.RC3", copy_function=os.link)
    (kit / "latest").symlink_to("8.0.RC2")
    latest, version = ({"ASCEND_HOME_PATH": str(kit / name)} for name in ("latest", "8.0.RC2"))
    first, second, results = tmp_path / "1.jsonl", tmp_path / "2.jsonl", tmp_path / "r.jsonl"
    assert run_json(many, "--results", results, env=latest)[0].returncode == 0
    result, report = run_json(many, "--resume", results, env=version)
    assert report["summary"]["resumed"] == 6, result.stderr
    assert report["summary"]["location"] == str(kit / "8.0.RC2")                       # the header: as named
    for env, shard, path in ((latest, "1/2", first), (version, "2/2", second)):
        assert run_json(many, "--shard", shard, "--results", path, env=env)[0].returncode == 0
    merged = prmg_here("report", first, second)
    assert merged.returncode == 0 and "MIXED" not in merged.stdout, merged.stdout + merged.stderr
    (kit / "latest").unlink()
    (kit / "latest").symlink_to("8.0.RC3")                                # latest now names another version
    result, report = run_json(many, "--resume", results, env=latest)
    assert report["summary"]["resumed"] == 0 and "run again" in result.stderr, result.stderr
    library = kit / "8.0.RC3" / os.path.relpath(emulator.op_lib, emulator.root)      # RC3's library rebuilt:
    shutil.copyfile(library, library.with_suffix(".new"))                       # the same path in its toolkit,
    os.replace(library.with_suffix(".new"), library)                            # another build
    os.utime(library, (1, 1))
    assert run_json(many, "--shard", "2/2", "--results", second, env=latest)[0].returncode == 0
    merged = prmg_here("report", first, second)
    assert merged.returncode == 1 and "MIXED SETTINGS: " in merged.stdout, merged.stdout + merged.stderr
    named = __import__("re").findall(r"no one verdict covers: (\w+): ", merged.stderr)      # session 16: the build
    assert "libraries" in named and "op_library" not in named, merged.stderr
    records = [json.loads(line) for line in first.read_text().splitlines()]     # as an earlier prmg wrote it
    for record in records:
        if "settings" in record:
            for key in ("location", "op_library"):
                record["settings"][key] = record["info"].pop(f"{key}_resolved") and record["info"][key]
            key = settings_key(record["settings"])
        else:
            record["judged_under"] = key
    first.write_text("".join(json.dumps(record) + "\n" for record in records))
    merged = prmg_here("report", first)                                   # read, not refused (exit 2): shard 2 missing
    assert merged.returncode == 1 and "(a shard missing" in merged.stderr, merged.stderr
    (kit / "latest").unlink()
    (kit / "latest").symlink_to("8.0.RC2")
    result, report = run_json(many, "--shard", "1/2", "--resume", first, env=latest)
    assert (result.returncode, report["summary"]["resumed"]) == (0, 0), result.stderr


def test_an_opp_kernel_package_in_opp_latest_is_the_one_stamped_named_and_resumed_on(many, tmp_path):
    """Issue 32 (session 10): nnopbase takes the kernels and tiling from ``$ASCEND_HOME_PATH/opp_latest`` before
    ``$ASCEND_OPP_PATH`` (acl-abi.md: an opp kernel package upgraded on its own lands there), but prmg stamped, named
    and resumed on ``$ASCEND_OPP_PATH`` alone: the kernel upgraded in opp_latest left the fingerprint as it was and
    --resume took the verdicts of the kernel before. Now opp_latest, where it exists, is the opp folder of the stamp,
    the header and doctor."""
    results, home = tmp_path / "r.jsonl", tmp_path / "home"
    opp, latest = kernel_tree(home / "opp"), kernel_tree(home / "opp_latest")
    env = {"ASCEND_OPP_PATH": str(home / "opp"), "ASCEND_HOME_PATH": str(home)}
    result, report = run_json(many, "-k", "c1", "--results", results, env=env)
    assert result.returncode == 0 and report["summary"]["opp"] == str(home / "opp_latest")
    opp["kernel"].write_text("the build opp_latest overrides")             # not the kernel nnopbase takes
    result, report = run_json(many, "-k", "c1", "--resume", results, env=env)
    assert report["summary"]["resumed"] == 1, result.stderr
    latest["kernel"].write_text("the opp kernel package upgraded")
    result, report = run_json(many, "-k", "c1", "--resume", results, env=env)
    assert "the operator's kernel and tiling files" in result.stderr and report["summary"]["resumed"] == 0
    from prmg_cli.commands.doctor_findings import opp_path_lines
    from prmg_cli.device.toolkit import emulator_toolkit

    with pytest.MonkeyPatch.context() as patched:
        for name, value in env.items():
            patched.setenv(name, value)
        said = " ".join(" ".join(opp_path_lines(emulator_toolkit())).split())
    assert f"nnopbase takes the kernels and tiling from {home / 'opp_latest'} first ($ASCEND_HOME_PATH/opp_latest)" \
        in said


def test_the_header_says_where_the_operators_kernels_come_from(many, tmp_path):
    """A stale vendor package (vendors/customize, in load_priority) holding the operator's kernel is taken before the
    built-in build under test, and every header said only the opp folder and a fingerprint. ``kernel_places`` lists
    where the kernels are in the toolkit's order (ASCEND_CUSTOM_OPP_PATH, load_priority's vendors, built-in); so do
    the header and the JSON summary."""
    from prmg_cli.device.provenance import kernel_places
    from prmg_cli.reports.outputs.labels import header_fields
    from prmg_cli.results import RunInfo

    opp, custom = tmp_path / "opp", str(tmp_path / "mine")
    titles = ("InplacePartialRotaryMulGrad", "InplacePartialRotaryMul")
    kernel_tree(opp)
    assert kernel_places(opp, "", titles) == ["built-in"] and kernel_places(opp, custom, titles) == [custom, "built-in"]
    stale = opp.joinpath("vendors", "customize", "op_impl", "ai_core", "tbe", "kernel", "ascend950",
                         "inplace_partial_rotary_mul_grad", "k.o")
    stale.parent.mkdir(parents=True)
    stale.write_text("an older build")
    assert kernel_places(opp, "", titles) == ["built-in"]              # a vendor load_priority does not name: unused
    (opp / "vendors" / "config.ini").write_text("load_priority=customize\n")
    assert kernel_places(opp, "", titles) == ["vendors/customize", "built-in"]
    result, report = run_json(many, "-k", "c1", env={"ASCEND_OPP_PATH": str(opp)})
    assert result.returncode == 0 and report["summary"]["opp_kernels"] == ["vendors/customize", "built-in"]
    info = RunInfo(runner="aclnn", location="/t", opp=str(opp), opp_files=5, opp_kernels=("vendors/customize",
                                                                                           "built-in"))
    assert dict(header_fields(info))["opp"].endswith("; kernels from vendors/customize, before built-in)")


def test_a_kernel_leaking_device_memory_is_named_and_its_allocation_failure_carries_no_stale_message(tmp_path):
    """Issue 32: a kernel leaking 256 MiB of device memory on every launch showed only as later ACL_ERROR_BAD_ALLOC
    errors carrying the message of an unrelated earlier call (here: the worker's probe of the rotary modes, whose
    refusals nobody reads). Free device memory is read around each case: the leak is a warning naming the bytes
    per launch (--strict fails it), and every call starts with aclGetRecentErrMsg emptied."""
    path = tmp_path / "leak.yaml"
    # dy of another size each (1, 2 and 3 KiB): its device buffer is allocated anew, not kept from the case before
    path.write_text("".join(f"- {{name: c{n}, shape: [1, 2, {n}, 128], partial_slice: [0, 8]}}\n" for n in (1, 2, 3)))
    env = {"PRMG_EMU_FAULT": "leak_device_memory", "PRMG_EMU_DEVICE_MEMORY": "500M"}
    for strict in ((), ("--strict",)):
        result, report = run_json(path, *strict, env=env)
        first, _, third = report["cases"]
        assert first["status"] == ("failed" if strict else "passed") and first["warnings"] == [
            "device memory: 256 MiB fewer free after the case than before it, beyond prmg's own buffers: 256 MiB per "
            "launch over 1 launch (a case may leave 64 MiB): the kernel or the runtime leaks device memory"]
        assert (third["status"], third["message"]) == ("error", "AclError: aclrtMalloc failed: 200000 "
                                                                 "ACL_ERROR_BAD_ALLOC")
        assert result.returncode == 1        # a kernel that does not leak warns of nothing: test_run_e2e's green run


def test_a_device_too_small_to_probe_is_one_line_not_a_workers_traceback(many):
    """A device whose memory cannot hold the worker's first allocation (the probe of the rotary modes, made before
    any case) refused the run with the child's traceback on stderr above the error line: the probe belongs to the
    session's opening, whose failure is one line."""
    result = prmg_forked("run", many, "--runner", "emulator", env={"PRMG_EMU_DEVICE_MEMORY": "1024"})
    assert result.returncode == 2 and result.stderr == (
        "prmg: error: cannot open the runner: device 0: AclError: aclrtMalloc failed: 200000 ACL_ERROR_BAD_ALLOC\n")


def test_a_results_file_that_fails_mid_run_stops_it_and_keeps_the_reports(many, tmp_path):
    """... in exit 2's one ``prmg: error:`` line, the table on standard output keeping its header (which names the
    runner: it was lost with the run record that could not be written)."""
    report = tmp_path / "r.json"
    result = prmg_forked("run", many, "--runner", "emulator", "--results", "/dev/full", "--report", f"json:{report}",
                         "--report", "table")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("prmg: error: the run stopped: /dev/full: ") and "no space left" in line
    assert line.endswith("6 cases not run") and result.stdout.startswith("runner: emulator (host build at ")
    statuses = [case["status"] for case in json.loads(report.read_text())["cases"]]
    assert statuses == ["not_run"] * 6                           # the run record could not be written


def test_ctrl_c_keeps_what_finished_and_exits_130(many, tmp_path):
    """... and while the cases run, each report file is one of a run not finished (issue 32, sixth look): a run killed
    (SIGKILL: out of memory, a CI job's timeout) writes no report, and an earlier run's green JUnit stood for it."""
    results, junit = tmp_path / "r.jsonl", tmp_path / "j.xml"
    junit.write_text('<testsuites><testsuite name="yesterday" tests="6" failures="0" errors="0"/></testsuites>')
    env = dict(os.environ, PRMG_EMU_FAULT="hang", PRMG_EMU_FAULT_SHAPE="1,2,3,32")
    process = subprocess.Popen([sys.executable, "-m", "prmg_cli.cli", "run", str(many), "--runner", "emulator",
                                "--results", str(results), "--report", f"junit:{junit}", "--report", "table"],
                               cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (results.exists() and results.read_text().count("\n") >= 2):
        time.sleep(0.1)
    time.sleep(0.5)
    suite = ET.fromstring(junit.read_text()).find("testsuite")           # what a SIGKILL now would leave
    assert (suite.get("tests"), suite.get("errors")) == ("1", "1") and "has not finished" in junit.read_text()
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert "c0" in stdout and "1 passed" in stdout.splitlines()[-2] and stdout.splitlines()[-1] == f"wrote {junit}"
    assert json.loads(results.read_text().splitlines()[1])["name"] == "c0"
    assert ET.fromstring(junit.read_text()).find("testsuite").get("tests") == "6"       # the run's own report


def test_a_one_tebibyte_case_is_refused_fast(tmp_path):
    path = tmp_path / "huge.yaml"
    path.write_text("- {name: huge, shape: [1024, 1024, 256, 1024], cos_shape: [1, 1024, 1, 1024], "
                    "partial_slice: [0, 1024]}\n")
    case = load_cases([str(path)])[0]
    host, device = memory_need(case)
    assert device >= 1 << 40
    started = time.monotonic()
    result, report = run_json(path)
    assert time.monotonic() - started < 30          # start-up included; the refusal itself is arithmetic
    assert result.returncode == 1
    assert report["cases"][0]["status"] == "error"
    assert "--max-memory" in report["cases"][0]["message"]
    assert "not attempted" in report["cases"][0]["message"]


def test_the_memory_limit_counts_what_a_view_at_an_offset_holds(tmp_path):
    """A 96-element view at an offset of 2**24 float32 elements (64 MiB of storage): the run holds each storage three
    times (its array, the image uploaded, the read-back) and the outside-view check's masks, and the emulator's device
    memory is the same host's; the estimate counted the storage twice and compared host and device apart (a worker
    peaked at 4.7 times the storage, 1.2 GiB at an offset of 2**26, where the limit saw 0.5 GiB: an offset just under
    half the machine's memory asked for more than all of it). Refused under --max-memory 200M, not attempted."""
    path = tmp_path / "offset.yaml"
    path.write_text("- {name: far, op: forward, shape: [2, 3, 2, 8], dy_offset: 16777216}\n")
    host, device = memory_need(load_cases([str(path)])[0])
    assert host >= 3 * 64 * MiB + 3 * 16 * MiB and device >= 64 * MiB
    result, report = run_json(path, "--max-memory", "200M")
    assert result.returncode == 1 and report["cases"][0]["status"] == "error"
    assert "(one memory: the emulator), over --max-memory 200.0 MiB; not attempted" in report["cases"][0]["message"]


def test_max_memory_sizes_are_ascii_and_0_is_no_limit():
    """--max-memory 0 refused every case (each an error, 'over --max-memory 0 bytes') where --timeout 0 and
    --progress-interval 0 mean none: 0 is no limit now, as --help says (test_results_file_and_resume runs a case under
    it); a fraction of a byte is one byte, not 0. '٣' (an Arabic-Indic 3) was 3 bytes (regex \\d), and 5000 digits a
    traceback (int() refuses over 4300). A number is read as every option's (vocab.number): 1_0G was refused where
    --timeout 1_0 was 10 s."""
    from prmg_cli.commands.suite import parse_size

    assert (parse_size("0"), parse_size("0.4"), parse_size("1.5K"), parse_size(" 8 GiB ")) == (0, 1, 1536, 8 << 30)
    assert (parse_size("1_0G"), parse_size("1e3")) == (10 << 30, 1000)
    for text in ("٣", "1٣M", "9" * 5000, "1__0", "-1", "nan", "K"):
        with pytest.raises(PrmgError, match="--max-memory must"):
            parse_size(text)


def _settings():
    from prmg_cli.commands.run import Request
    from prmg_cli.commands.suite import settings_for
    return settings_for(Request(paths=(), runner="emulator", timeout=30.0))


def _cases(count):
    return [Case(name=f"x{i}", source="t", shape=(1, 1, 2, 8), cos_shape=(1, 1, 1, 8), sin_shape=(1, 1, 1, 8),
                 partial_slice=(0, 8)) for i in range(count)]


def test_a_worker_that_dies_while_starting_is_a_clear_error(monkeypatch):
    from prmg_cli.device import acl
    from prmg_cli.errors import PrmgError
    from prmg_cli.device.execute import Executor

    def crash(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGSEGV)
    monkeypatch.setattr(acl.AclSession, "__init__", crash)           # inherited by the forked workers
    with pytest.raises(PrmgError, match=r"device 0: worker crashed: signal 11"):
        Executor(_settings(), (0,))


def test_a_worker_whose_runner_failed_is_replaced_and_the_run_goes_on(monkeypatch):
    from prmg_cli.device import acl
    from prmg_cli.device.execute import Executor

    def failing_launch(self, case, inputs):
        raise acl.AclError("aclrtMalloc", 207001, "device out of memory")
    monkeypatch.setattr(acl.AclSession, "launch", failing_launch)
    with Executor(_settings(), (0,)) as executor:
        first_worker = executor._workers[0].process.pid
        results = executor.run(_cases(3))
        assert executor._workers[0].process.pid != first_worker
    assert [r.status for r in results] == ["error"] * 3
    assert results[0].message == "AclError: aclrtMalloc failed: 207001 ACL_ERROR_RT_MEMORY_ALLOCATION: " \
                                 "device out of memory"


def test_a_case_queued_on_a_worker_that_leaves_goes_back_and_runs_once(monkeypatch, tmp_path):
    """A worker gets the next case while it runs one: x2 is sent while x1 runs (slowly); the worker leaves
    after x1 (its session unfit) without starting x2, which goes back and runs once, on the fresh worker. The
    cases the workers were forked with (``known``: x0 to x2) reach them as the very objects they hold (sent by
    position), the fresh worker's too; x3 is pickled."""
    from prmg_cli.device import execute

    log = tmp_path / "ran.txt"
    real_run_case = execute.run_case
    cases = _cases(4)

    def logged(session, case, settings, target):
        if case.name == "x1":
            time.sleep(0.5)                           # x0's result is read and x2 sent meanwhile
        with open(log, "a") as ran:
            ran.write(f"{case.name} {os.getpid()} {any(case is known for known in cases)}\n")
        result, fit = real_run_case(session, case, settings, target)
        return result, fit and case.name != "x1"
    monkeypatch.setattr(execute, "run_case", logged)
    steps = []
    with execute.Executor(_settings(), (0,), cases[:3]) as executor:
        results = executor.run(cases, idle=(steps.append(step) for step in range(5)))     # done while x1 sleeps
    assert [r.status for r in results] == ["passed"] * 4 and steps == list(range(5))
    ran = [line.split() for line in log.read_text().splitlines()]
    assert [(name, held) for name, _, held in ran] == [("x0", "True"), ("x1", "True"), ("x2", "True"),
                                                        ("x3", "False")]
    assert ran[0][1] == ran[1][1] != ran[2][1] == ran[3][1]


def test_a_case_sent_to_a_worker_that_has_exited_goes_back_or_names_the_crash(monkeypatch):
    """A worker may exit before the parent sends it a case (its end of the pipe closed: the send is EPIPE): x1 sent
    while x0 crashes its worker goes back and runs on a fresh one (x0 is the crash); a case given to a worker that
    died idle goes back unblamed. The failed send was a BrokenPipeError out of the run: ``prmg run`` ended 1 with
    no report and nothing said (typer's exit on EPIPE), once in some 60 runs of a crashing suite at a load of 5-9."""
    from prmg_cli.device import execute

    real_run_case, real_start = execute.run_case, execute._Worker.start

    def crash_on_x0(session, case, settings, target):
        if case.name == "x0":
            os.kill(os.getpid(), signal.SIGSEGV)
        return real_run_case(session, case, settings, target)

    def start_after_the_crash(worker, index, case, timeout):
        if case.name == "x1" and worker.case is not None:
            worker.process.join(60)                   # x0 crashed the worker before x1 is sent
        real_start(worker, index, case, timeout)
    monkeypatch.setattr(execute, "run_case", crash_on_x0)
    monkeypatch.setattr(execute._Worker, "start", start_after_the_crash)
    with execute.Executor(_settings(), (0,)) as executor:
        results = executor.run(_cases(3))
        assert [r.status for r in results] == ["error", "passed", "passed"]
        assert results[0].message.startswith("worker crashed: signal 11")
        idle = executor._workers[0].process
        idle.kill()
        idle.join()                                   # died idle: both cases given to it go back
        again = executor.run(_cases(4)[1:])
    assert [r.status for r in again] == ["passed"] * 3


def test_call_in_child_reports_crashes_and_timeouts():
    from prmg_cli.errors import PrmgError
    from prmg_cli.device.execute import call_in_child

    assert call_in_child(sum, [1, 2, 3]) == 6
    with pytest.raises(PrmgError, match="signal 11"):
        call_in_child(_segfault)
    with pytest.raises(PrmgError, match="timed out after 0.5 s"):
        call_in_child(time.sleep, 30, timeout=0.5)


def _segfault():
    os.kill(os.getpid(), signal.SIGSEGV)


def test_bad_timeout_and_unwritable_results_file_are_usage_errors(many, tmp_path):
    result = prmg_here("run", many, "--runner", "emulator", "--timeout", "-1")
    assert result.returncode == 2 and "--timeout" in result.stderr
    blocked = tmp_path / "file"
    blocked.write_text("")
    result = prmg_here("run", many, "--runner", "emulator", "--results", blocked / "r.jsonl")
    assert result.returncode == 2 and "results file" in result.stderr and "Traceback" not in result.stderr


def test_a_record_names_its_inputs_generator_and_one_naming_none_reads_as_pcg64():
    """The generator is the inputs' version: every record's definition names it (the default too), so a
    definition replays the inputs it was made with (one of the default before, philox, replays philox's); a record
    naming it nowhere is older than philox."""
    from prmg_cli.cases.loader import case_to_dict, fingerprint, parse_document
    from prmg_cli.device.execute import case_result
    from prmg_cli.results import CaseResult

    case = Case(name="v", source="t", shape=(1, 1, 1, 4), cos_shape=(1, 1, 1, 4), sin_shape=(1, 1, 1, 4),
                partial_slice=(0, 4))
    record = CaseResult.from_dict(json.loads(json.dumps(case_result(case, "passed").to_dict())))
    assert case.generator == "philox4x32" and record.definition["generator"] == "philox4x32"
    replayed, = parse_document([record.recorded_definition()], "t", Path("."))
    assert replayed.generator == "philox4x32" and fingerprint(replayed) == fingerprint(case)
    older = CaseResult("v", "passed", definition=case_to_dict(case))            # before the generator field
    assert "generator" not in older.definition and older.recorded_definition()["generator"] == "pcg64"
    assert parse_document([older.recorded_definition()], "t", Path("."))[0].generator == "pcg64"
    since_philox = CaseResult("v", "passed", definition=case_to_dict(case), generator="philox")
    assert since_philox.recorded_definition()["generator"] == "philox"
    replayed, = parse_document([since_philox.recorded_definition()], "t", Path("."))
    assert replayed.generator == "philox" and fingerprint(replayed) != fingerprint(case)


def test_a_device_is_wedged_after_max_timeouts_in_a_row_only():
    """The one wedge policy of the local and the cluster executors (``execute.Wedging``)."""
    wedged = {}
    policy = Wedging(2, wedged)
    policy.timed_out(0)
    policy.ended(0)                                   # a result in between: the count starts again
    policy.timed_out(0)
    policy.timed_out(("node", 1))
    assert wedged == {}
    policy.timed_out(0)
    assert wedged == {0: "2 timeouts in a row: the device is considered wedged (--max-timeouts)"}


@pytest.mark.verdict
def test_each_device_runs_every_case_on_every_device_and_keeps_the_worst():
    """--each-device (``execute.EachDevice``): each device has every case in its lane; a case's record is told once
    every device gave its own, the worst (a chip failing one case of many fails it, whichever device took it
    before), naming where each status came from; a dropped (wedged) device ends its lane as not_run, never
    handing its cases to another device; reports count each device of a record (``failures_by_device``)."""
    from prmg_cli.device.execute import EachDevice, RunSettings
    from prmg_cli.reports.outputs.labels import device_line, failures_by_device
    from prmg_cli.results import CaseResult

    cases = [Case(name=f"c{k}", source="t", shape=(1, 1, 1, 8), cos_shape=(1, 1, 1, 8), sin_shape=(1, 1, 1, 8),
                  partial_slice=(0, 8)) for k in range(3)]
    told = []
    schedule = EachDevice(cases, RunSettings(toolkit=None), (0, 1, 2), lambda index, result: told.append(result))
    assert all(schedule.waiting_for(device) for device in (0, 1, 2)) and not schedule.waiting_for(3)
    for device in (0, 1, 2):
        assert schedule.take(device) == 0
    schedule.give_back(0, 2)                            # a worker that went away: back in its own lane only
    assert schedule.take(2) == 0 and schedule.take(1) == 1
    for device, status in ((0, "passed"), (1, "failed"), (2, "passed")):
        schedule.finish(0, CaseResult("c0", status, message="m" if status == "failed" else "", device=str(device)),
                        device)
        assert len(told) == (device == 2)
    first = told[0]
    assert first.status == "failed" and first.device == "1"
    assert first.device_statuses == {"0": "passed", "1": "failed", "2": "passed"}
    assert first.message == "[failed on device 1; passed on devices 0, 2] m"
    schedule.drop(2, "3 timeouts in a row")             # wedged: c1 and c2 are not run there, not moved
    assert not schedule.waiting_for(2) and schedule.take(0) == 1 and schedule.take(0) == 2
    for index in (1, 2):
        for device in (0, 1):
            schedule.finish(index, CaseResult(f"c{index}", "passed", device=str(device)), device)
    assert [result.status for result in schedule.results] == ["failed", "not_run", "not_run"]
    assert schedule.results[1].device == "2" and "device 2: 3 timeouts in a row" in schedule.results[1].message
    counts = failures_by_device(schedule.results)
    assert counts == {"0": {"cases": 3, "failures": 0}, "1": {"cases": 3, "failures": 1},
                      "2": {"cases": 3, "failures": 0}}
    same = EachDevice(cases[:1], RunSettings(toolkit=None), (0, 1))
    for device in (0, 1):
        same.finish(0, CaseResult("c0", "failed", message="m", device=str(device)), device)
    assert same.results[0].device == "0,1" and same.results[0].message == "m"   # a kernel bug: no chip to suspect
    assert device_line([same.results[0]] * 5) == ""


def test_the_header_says_when_the_runtime_was_shown_only_some_chips(many):
    """ASCEND_RT_VISIBLE_DEVICES left in a CI runner's environment narrows --devices all to the chips it names, with
    the runtime's ids from 0: the header said 'devices: 0' of a host of 2 chips, as of a host of one."""
    from prmg_cli.reports.outputs.labels import header_fields
    from prmg_cli.results import RunInfo

    result, report = run_json(many, "-k", "c1", "--devices", "all",
                              env={"PRMG_EMU_DEVICES": "2", "ASCEND_RT_VISIBLE_DEVICES": "1"})
    assert result.returncode == 0 and report["summary"]["devices"] == [0]
    assert report["summary"]["visible_devices"] == "1"
    fields = dict(header_fields(RunInfo(runner="aclnn", location="/t", devices=(0, 1), visible_devices="2,5",
                                        each_device=True)))
    assert fields["devices"] == \
        "0, 1 of the chips ASCEND_RT_VISIBLE_DEVICES=2,5 shows (--each-device: every case on each)"


@pytest.mark.parametrize("visible", ["0,7", "0,0,1", "-1,x"])
def test_devices_all_refuses_a_chip_the_visible_list_names_and_the_runtime_does_not_show(many, visible):
    """Issue 32 (round 4): a job given chips 0 and 7 (``ASCEND_RT_VISIBLE_DEVICES=0,7``, a scheduler's) on a host whose
    chip 7 the driver no longer enumerates: the runtime reads the list up to its first id it lacks (or one repeated,
    or not a number) and showed chip 0 alone, and ``--devices all --each-device --strict`` (smoke.sh's gate) ran the
    cases on it, exit 0, the chip named to the job never tested. A list naming more chips than the runtime shows is
    exit 2 before any case runs, naming both counts (none shown too: '-1,x' said only 'the runtime reports no
    device')."""
    result = prmg_forked("run", many, "-k", "c1", "--runner", "emulator", "--devices", "all", "--each-device",
                         "--strict", env={"PRMG_EMU_DEVICES": "2", "ASCEND_RT_VISIBLE_DEVICES": visible})
    named, shown = len(visible.split(",")), int(not visible.startswith("-"))
    assert (result.returncode, result.stdout) == (2, ""), result.stdout + result.stderr
    assert result.stderr.startswith(f"prmg: error: --devices all: ASCEND_RT_VISIBLE_DEVICES={visible} names {named} "
                                    f"chips, the runtime shows {shown}: "), result.stderr
    for fine in ("1,0", "1") if visible == "0,7" else ():     # the chips it names, all shown: as many as it names
        assert prmg_forked("run", many, "-k", "c1", "--runner", "emulator", "--devices", "all",
                           env={"PRMG_EMU_DEVICES": "2", "ASCEND_RT_VISIBLE_DEVICES": fine}).returncode == 0, fine


def test_doctor_says_a_chip_the_visible_list_names_and_the_runtime_does_not_show(many):
    """Issue 32 (session 13): ``prmg doctor`` (smoke.sh's first check) said ``devices: 1`` and 'usable', exit 0, for
    ``ASCEND_RT_VISIBLE_DEVICES=0,7`` on a host whose chip 7 the driver no longer enumerates, which ``--devices all``
    refuses. It says so in the words of that refusal (one rule: ``toolkit.chips_not_shown``), the runner NOT usable,
    exit 1, as for a missing symbol; a list the runtime shows whole stays usable."""
    env = {"PRMG_EMU_DEVICES": "2", "ASCEND_RT_VISIBLE_DEVICES": "0,7"}
    result = prmg_forked("doctor", "--runner", "emulator", env=env)
    refusal = prmg_forked("run", many, "-k", "c1", "--runner", "emulator", "--devices", "all", env=env).stderr
    why = refusal.removeprefix("prmg: error: --devices all: ").split(", or name the devices")[0]
    assert why.startswith("ASCEND_RT_VISIBLE_DEVICES=0,7 names 2 chips, the runtime shows 1: "), refusal
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"  error: {why} (--devices all, smoke.sh's gate, refuses it)" in result.stdout
    assert "runner emulator: NOT usable" in result.stdout
    result = prmg_forked("doctor", "--runner", "emulator", env={**env, "ASCEND_RT_VISIBLE_DEVICES": "1,0"})
    assert result.returncode == 0 and "ASCEND_RT_VISIBLE_DEVICES=1,0 names" not in result.stdout
    result = prmg_forked("doctor", "--runner", "emulator", env={**env, "ASCEND_RT_VISIBLE_DEVICES": "-1"})  # none:
    assert result.returncode == 1 and "  error: ASCEND_RT_VISIBLE_DEVICES=-1 names 1 chip, the runtime shows 0: " \
        in result.stdout, result.stdout                            # 'devices: 0', exit 1, and no line saying why
    # round 6: a plain run (device 0, no probe) said only 'invalid device id 0', and --devices 1 'no device 1'
    for visible, devices, said in (("-1", "0", "cannot open the runner: device 0: "), ("0,7", "1", "no device 1: ")):
        result = prmg_forked("run", many, "-k", "c1", "--runner", "emulator", "--devices", devices,
                             env={**env, "ASCEND_RT_VISIBLE_DEVICES": visible})
        assert result.returncode == 2 and said in result.stderr and f"ASCEND_RT_VISIBLE_DEVICES={visible} names " \
            in result.stderr, result.stderr


def test_a_visible_list_the_runtime_reads_in_part_is_said_and_its_chips_are_what_the_runtime_shows():
    """ASCEND_RT_VISIBLE_DEVICES=0-3 (a range, as --devices takes), '1 2' or '1;2': the runtime reads its first id
    and stops, showing one chip of the four meant; as many chips shown as entries named, so --devices all ran chip 0
    alone and doctor said 'devices: 1', exit 0, without a word; and a run's chip was labelled '0-3'. The text never
    read is said now (the one rule: chips_not_shown), and the chips are those the runtime shows (read_visible)."""
    from prmg_cli.device.toolkit import chips_not_shown
    from prmg_cli.results import physical, read_visible, shown_chips

    assert [read_visible(text) for text in ("0-3", "1 2", "1;2", "0x1", " 1 ", "+2,-0", "007,1,", "5,5", "-1")] == [
        (["0"], "-3"), (["1"], "2"), (["1"], ";2"), (["0"], "x1"), (["1"], ""), (["2", "0"], ""), (["7", "1"], ""),
        (["5"], "5"), ([], "-1")]
    assert physical("0", shown_chips("0-3")) == "0" and physical("1", shown_chips("3, 5")) == "5"
    assert chips_not_shown(1, {"ASCEND_RT_VISIBLE_DEVICES": "0-3"}) == (
        "ASCEND_RT_VISIBLE_DEVICES=0-3: the runtime reads it as 1 chip (0) and never reads '-3': the list is chip ids "
        "separated by commas, each once (0,1,2,3: no ranges, no other separator); fix ASCEND_RT_VISIBLE_DEVICES")
    assert chips_not_shown(0, {"ASCEND_RT_VISIBLE_DEVICES": "-1"}).startswith("ASCEND_RT_VISIBLE_DEVICES=-1 names 1 "
                                                                             "chip, the runtime shows 0: ")
    shown_whole = ("1,0", " 3, 5 ", "", "2,")
    assert [chips_not_shown(2, {"ASCEND_RT_VISIBLE_DEVICES": text}) for text in shown_whole] == [None] * 4


# Device 1 of 2 faults on a case, and its fresh worker's start is then refused (standing for aclrtSetDevice failing on
# a chip gone down): the executor's results, shared and --each-device, as JSON. In a process of its own: the emulator
# reads PRMG_EMU_DEVICES at aclInit, which an earlier test of this process (inherited by the workers) has made.
CHIP_DOWN = """
import json, sys
from prmg_cli.case import Case
from prmg_cli.device import execute
from prmg_cli.device.toolkit import emulator_toolkit
from prmg_cli.errors import PrmgError

opened, ready = [], execute._Worker.wait_ready

def wait_ready(worker, timeout=120.0):
    opened.append(worker.device)
    if worker.device == 1 and opened.count(1) > 1:
        worker.kill()
        raise PrmgError("cannot open the runner: device 1: AclError: aclrtSetDevice failed: 507033")
    ready(worker, timeout)

execute._Worker.wait_ready = wait_ready
cases = [Case(name=f"c{k}", source="t", shape=(1, 1, 2, 8), cos_shape=(1, 1, 1, 8), sin_shape=(1, 1, 1, 8),
              partial_slice=(0, 8)) for k in range(4)]
runs = []
for each in (False, True):
    opened.clear()
    settings = execute.RunSettings(toolkit=emulator_toolkit(), each_device=each, bfloat16=False)
    with execute.Executor(settings, (0, 1), cases) as executor:
        results = executor.run(cases)
    runs.append([executor.wedged, [(result.status, result.device, result.message) for result in results]])
print(json.dumps(runs))
"""


def test_a_chip_that_cannot_be_opened_again_after_a_fault_is_dropped_and_the_run_goes_on(emulator):
    """Issue 32 (fifth look): device 1 faults on a case and then cannot be opened again (the chip went down). The run
    ended at once, exit 2, with no report of the cases the other chip ran; now the device is dropped, saying so:
    shared cases go to the other devices, and under --each-device its lane is not_run naming it, so the run is red
    and every report is written."""
    env = {**os.environ, "PRMG_EMU_DEVICES": "2", "PRMG_EMU_FAULT": "device_fault", "PRMG_EMU_FAULT_DEVICE": "1",
           "PYTHONPATH": str(ROOT)}           # the emulator fixture built it where PRMG_EMULATOR_HOME says
    result = subprocess.run([sys.executable, "-c", CHIP_DOWN], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    gone = "a fresh worker cannot open the runner: device 1: AclError: aclrtSetDevice failed: 507033"
    assert result.stderr.count(f"prmg: device 1: {gone}: it gets no more cases") == 2, result.stderr
    (shared_wedged, shared), (each_wedged, each) = json.loads(result.stdout.splitlines()[-1])
    assert shared_wedged == each_wedged == {"1": gone}
    # shared: device 1's case failed (the fault), device 0 took the rest
    assert sorted(status[:2] for status in shared) == [["failed", "1"], ["passed", "0"], ["passed", "0"],
                                                       ["passed", "0"]]
    # every case on both chips: device 1's first one faulted, the rest not run there, naming why
    assert [status[:2] for status in each] == [["failed", "1"], ["not_run", "1"], ["not_run", "1"], ["not_run", "1"]]
    assert each[1][2] == f"[not_run on device 1; passed on device 0] not run: device 1: {gone}"


@pytest.mark.verdict
def test_siblings_of_a_tiling_key_go_to_one_device_however_many_take_cases():
    """Three cases alike but for the slice, and one other: three devices taking one case each in turn (as the
    executor's first round does) leave two siblings on the first device; a device whose worker goes away gives its
    held sibling back, and ``not_run`` ends held siblings too. A case whose next sibling is of its own kind (the same
    slice again) gets the first of another kind."""
    from prmg_cli.device.execute import RunSettings, Schedule

    def one(name, start, shape=(1, 2, 2, 16)):
        return Case(name=name, source="t", shape=shape, cos_shape=(1, 1, 1, 8), sin_shape=(1, 1, 1, 8),
                    partial_slice=(start, start + 8))

    cases = [one("a", 0), one("b", 8), one("other", 0, (1, 3, 2, 16)), one("c", 4), one("a_again", 0)]
    schedule = Schedule(cases, RunSettings(toolkit=None))
    assert [schedule.take(device) for device in (0, 1, 2)] == [0, 2, 3]      # 1, b, is held for device 0
    assert not schedule.waiting_for(1) and schedule.waiting_for(0) and schedule.upcoming(0) == 1
    assert schedule.take(0) == 1
    schedule = Schedule(cases, RunSettings(toolkit=None))
    assert schedule.take(0) == 0 and schedule.upcoming(0) == 1
    schedule.give_back(0, 0)                                              # device 0's worker went away
    assert 0 not in schedule._held and [schedule.take(1), schedule.take(1)] == [0, 1]
    schedule.drop(1, "wedged")
    assert schedule.take(2) == 2 and schedule.take(2) == 3 and schedule.upcoming(2) == 4
    schedule.not_run("no worker")
    assert not schedule.waiting and schedule.results[4].status == "not_run"
    schedule = Schedule([one("a", 0), one("a_again", 0), one("b", 8)], RunSettings(toolkit=None))
    assert schedule.take(0) == 0 and schedule.upcoming(0) == 2 and schedule.take(1) == 1 and schedule.take(0) == 2


def test_every_count_of_shards_keeps_the_tiling_siblings_together_and_catches_the_tiling_cache(tmp_path):
    """tiling_cache lives in one process: a sharded run caught it only when one shard held two of the three
    edge.same_shapes_slice_* siblings, which shards by name hash did for 2, 3, 4, 8 and 11 of 2 to 16 shards (5 shards:
    each alone, every shard green). A shard now goes by the first name of its case's siblings (execute.together), so
    every count keeps them together, and a merge missing their shard names it for each of them."""
    from prmg_cli.device.execute import together

    edge = ROOT / "cases" / "edge.yaml"
    cases = load_cases([edge])
    names = {case.name for case in cases if "same_shapes_slice" in case.name}
    assert len(names) == 3 and len(set(together(cases)) & names) == 2
    for count in range(2, 17):
        held = [names & {case.name for case in shard(cases, index, count)} for index in range(1, count + 1)]
        assert [part for part in held if part] == [names], count
    codes = {index: prmg_here("run", edge, "-k", "same_shapes", "--runner", "emulator", "--shard", f"{index}/5",
                              "--results", tmp_path / f"{index}.jsonl", env={"PRMG_EMU_FAULT": "tiling_cache"}
                              ).returncode for index in range(1, 6)}
    holding = next(index for index, code in codes.items() if code == 1)       # the others are green or empty (5)
    assert sorted(codes.values()) == [0, 1, 5, 5, 5], codes
    given = [tmp_path / f"{index}.jsonl" for index, code in codes.items() if code == 0]
    result = prmg_here("report", *given, "--report", "json", "-o", tmp_path / "merged.json")
    reasons = {case["name"]: case["message"] for case in json.loads((tmp_path / "merged.json").read_text())["cases"]}
    assert result.returncode == 1 and {reasons[name] for name in names} == \
        {f"not run: shard {holding}/5 is in no results file given"}, reasons


def test_a_cluster_node_with_other_kernel_files_or_preloads_refuses_to_start_and_the_run_records_the_nodes():
    """Issue 32 (seventh look): --cluster nodes were compared on SoC, driver and toolkit version alone, so a node with
    another kernel binary of the operator (same toolkit version, a rebuilt or vendor kernel) or a library preloaded
    ahead of its toolkit ran cases under the first's name; and the run recorded the kernel files of the host it was
    started on (perhaps none there), which --resume and prmg report then compared. An actor whose node's kernel and
    tiling files (their portable fingerprint) or preloaded libraries differ refuses to start naming them, and a run
    whose nodes' files differ from this host's records the nodes' (``run_record.nodes_files``)."""
    from types import SimpleNamespace

    from prmg_cli import __version__
    from prmg_cli.reports.run_record import nodes_files
    from prmg_cli.device.cluster import ClusterExecutor
    from prmg_cli.judging import judge_fingerprint
    from prmg_cli.results import RunInfo

    files = {"opp": "/opt/cann/opp", "opp_files": 3, "opp_fingerprint": "local1", "opp_portable": "aaaa",
             "opp_kernels": ["built-in"]}
    found = {"version": __version__, "judging_code": judge_fingerprint.code(), "error": "", "toolkit": None,
             "soc": "Ascend950PR_9589", "accepted_modes": [1], "driver_version": "25.0.rc1", "toolkit_version": "8.5.0",
             "preloaded": [], **files}
    killed: list = []
    executor = SimpleNamespace(ray=SimpleNamespace(get=dict), cluster=SimpleNamespace(toolkit=SimpleNamespace(
        kind="aclnn")), target={}, _kill=killed.append, _stamps={})
    assert ClusterExecutor._started(executor, SimpleNamespace(ready_ref=found, actor="first", info=None)) == ""
    rebuilt = SimpleNamespace(ready_ref={**found, "opp_fingerprint": "local2", "opp_portable": "bbbb"}, actor="rebuilt",
                              info=None)
    assert ClusterExecutor._started(executor, rebuilt).startswith(
        "this node's operator's kernel and tiling files (fingerprint) bbbb, the run's aaaa: the NPUs of one run must")
    hooked = SimpleNamespace(ready_ref={**found, "preloaded": [["/x/libhook.so", ["aclInit"]]]}, actor="hooked",
                             info=None)
    assert "this node's preloaded libraries [['/x/libhook.so', ['aclInit']]], the run's (none)" in \
        ClusterExecutor._started(executor, hooked) and killed == ["rebuilt", "hooked"]
    here = RunInfo("aclnn", "/opt/cann", opp="/opt/cann/opp", opp_files=0, opp_fingerprint="e3b0", opp_portable="e3b0")
    nodes_files(here, executor.target)
    assert (here.opp, here.opp_files, here.opp_fingerprint, here.opp_portable, here.opp_kernels) == \
        ("/opt/cann/opp", 3, "aaaa", "aaaa", ("built-in",))
    alike = RunInfo("aclnn", "/opt/cann", opp_files=3, opp_fingerprint="local0", opp_portable="aaaa")
    nodes_files(alike, executor.target)
    assert alike.opp_fingerprint == "local0"                  # this host's files are the nodes': its stamp stands


def test_a_cluster_node_with_other_toolkit_libraries_refuses_to_start_and_the_run_records_the_nodes():
    """Issue 32 (session 10, a carried item): --cluster nodes were compared on their toolkit's stated version, not on
    its libraries, so a node whose operator library was another build (same version: a rebuilt or copied
    libopapi_transformer.so) ran cases under the first node's name; and the run recorded this host's stamps of the
    libraries (``missing`` where it has no toolkit at the nodes' paths), so --resume took the verdicts of a node's
    library before its rebuild. An actor whose libraries differ in size or mtime refuses to start naming them, and the
    run records the nodes' stamps."""
    from types import SimpleNamespace

    from prmg_cli import __version__
    from prmg_cli.device.cluster import ClusterExecutor
    from prmg_cli.judging import judge_fingerprint
    from prmg_cli.reports.run_record import recorded_settings
    from prmg_cli.results import RunInfo

    libraries = {"runtime": [10, 1], "nnopbase": [20, 2], "op": [30, 3]}
    found = {"version": __version__, "judging_code": judge_fingerprint.code(), "error": "", "toolkit": None,
             "soc": "Ascend950PR_9589", "accepted_modes": [1], "driver_version": "25.0.rc1", "toolkit_version": "8.5.0",
             "libraries": libraries}
    killed: list = []
    executor = SimpleNamespace(ray=SimpleNamespace(get=dict), cluster=SimpleNamespace(toolkit=SimpleNamespace(
        kind="aclnn")), target={}, _kill=killed.append, _stamps={})
    assert ClusterExecutor._started(executor, SimpleNamespace(ready_ref=found, actor="first", info=None)) == ""
    rebuilt = {**libraries, "op": [31, 4]}
    other = SimpleNamespace(ready_ref={**found, "libraries": rebuilt}, actor="rebuilt", info=None)
    assert ClusterExecutor._started(executor, other).startswith(
        f"this node's toolkit's libraries (size, mtime) {rebuilt}, the run's {libraries}: the NPUs of one run must")
    assert killed == ["rebuilt"]
    toolkit = SimpleNamespace(runtime_lib="/nowhere/libascendcl.so", nnopbase_lib="/nowhere/libnnopbase.so",
                              op_lib="/nowhere/libopapi.so", geir_lib=None, root="/nowhere")
    settings = SimpleNamespace(toolkit=toolkit, each_device=False, standard=None, strict=True, checks=(), golden=True,
                               check_options={})
    info = RunInfo("aclnn", "/nowhere")
    assert recorded_settings(info, settings, executor.target)["libraries"] == libraries    # the nodes', not "missing"
    assert recorded_settings(info, settings)["libraries"] == {role: ["missing"] for role in libraries}


def test_a_cluster_node_unlike_the_first_refuses_to_start():
    """Issue 32 (sixth look): each actor of a --cluster run found its node's SoC, driver and toolkit, but the run
    recorded the first actor's alone and ran cases on every other whatever it had, so a node with another driver or
    toolkit build passed under the first's name. An actor whose node differs now refuses to start (the run then
    stops in one line, as for a node with another kind of toolkit), naming what differs."""
    from types import SimpleNamespace

    from prmg_cli import __version__
    from prmg_cli.device.cluster import ClusterExecutor
    from prmg_cli.judging import judge_fingerprint

    found = {"version": __version__, "judging_code": judge_fingerprint.code(), "error": "", "toolkit": None,
             "soc": "Ascend950PR_9589", "accepted_modes": [1], "driver_version": "25.0.rc1", "toolkit_version": "8.5.0"}
    killed: list = []
    executor = SimpleNamespace(ray=SimpleNamespace(get=dict), cluster=SimpleNamespace(toolkit=SimpleNamespace(
        kind="aclnn")), target={}, _kill=killed.append, _stamps={})
    assert ClusterExecutor._started(executor, SimpleNamespace(ready_ref=found, actor="first", info=None)) == ""
    assert {key: executor.target[key] for key in ("accepted_modes", "soc", "driver_version", "toolkit_version")} == {
        "accepted_modes": [1], "soc": "Ascend950PR_9589", "driver_version": "25.0.rc1", "toolkit_version": "8.5.0"}
    assert ClusterExecutor._started(executor, SimpleNamespace(ready_ref=found, actor="alike", info=None)) == ""
    unlike = SimpleNamespace(ready_ref={**found, "driver_version": "24.1.rc2", "toolkit_version": ""}, actor="other",
                             info=None)
    assert ClusterExecutor._started(executor, unlike) == (
        "this node's driver 24.1.rc2, the run's 25.0.rc1; toolkit version (none), the run's 8.5.0: the NPUs of one run "
        "must be alike (give unlike nodes runs of their own and merge their results with prmg report, which names "
        "what differs)") and killed == ["other"]
    for judge, said in (("0" * 16, "0" * 16), (None, "(not stated: an older prmg)")):   # another checkout of prmg
        other = SimpleNamespace(ready_ref={**found, "judging_code": judge}, actor="checkout", info=None)
        assert ClusterExecutor._started(executor, other) == (
            f"prmg's judging code {said} there, {judge_fingerprint.code()} here (another build of prmg {__version__}): "
            f"install the same prmg on every node")
