"""Toolkit discovery (documented precedence, stub refusal, env fallbacks) and the emulator's build on first use."""

from __future__ import annotations

import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from prmg_cli.device import elf, linkage, runners, toolkit as tk
from prmg_cli.errors import PrmgError

OP_SOURCE = """
int aclnnInplacePartialRotaryMulGradGetWorkspaceSize(void) { return 0; }
int aclnnInplacePartialRotaryMulGrad(void) { return 0; }
"""
OTHER_SOURCE = """
extern int aclnnInplacePartialRotaryMulGradGetWorkspaceSize(void);  /* referenced, not defined */
int aclnnSomethingElse(void) { return aclnnInplacePartialRotaryMulGradGetWorkspaceSize(); }
"""


@pytest.fixture(scope="module")
def libs(tmp_path_factory) -> dict[str, Path]:
    """Two tiny shared libraries: one defines the operator's entry points, one only references them."""
    folder = tmp_path_factory.mktemp("libs")
    built = {}
    for name, source in (("with_op", OP_SOURCE), ("without_op", OTHER_SOURCE)):
        (folder / f"{name}.c").write_text(source)
        subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(folder / f"{name}.so"), str(folder / f"{name}.c")],
                       check=True)
        built[name] = folder / f"{name}.so"
    return built


@pytest.fixture(autouse=True)
def no_default_roots(tmp_path, monkeypatch):
    """Keep a toolkit installed on this machine out of the tests."""
    monkeypatch.setattr(tk, "DEFAULT_ROOTS", (str(tmp_path / "none-latest"), str(tmp_path / "none-cann")))
    monkeypatch.setattr(tk, "INSTALL_BASES", (str(tmp_path / "none-base"),))


def place(library: Path, destination: Path) -> Path:
    destination.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(library, destination)
    return destination


def make_root(folder: Path, libs, runtime: str = "libascendcl.so", **lib64) -> Path:
    """A fake toolkit root: runtime + nnopbase (content irrelevant to discovery) and named op libraries."""
    place(libs["without_op"], folder / "lib64" / runtime)
    place(libs["without_op"], folder / "lib64" / "libnnopbase.so")
    for name, kind in lib64.items():
        place(libs[kind], folder / "lib64" / f"{name}.so")
    return folder


def test_exports_symbol_reads_defined_dynamic_symbols_only(libs):
    assert elf.exports_symbol(libs["with_op"], tk.OP_SYMBOL)
    assert not elf.exports_symbol(libs["without_op"], tk.OP_SYMBOL)      # undefined reference only
    assert elf.exports_symbol(libs["without_op"], "aclnnSomethingElse")
    assert not elf.exports_symbol(libs["with_op"].with_suffix(".c"), tk.OP_SYMBOL)   # not ELF


def test_transformer_library_beats_monolithic_opapi(tmp_path, libs):
    root = make_root(tmp_path / "cann", libs, libopapi_transformer="with_op", libopapi="with_op")
    found = tk.find_toolkit({"ASCEND_HOME_PATH": str(root)})
    assert found.kind == "aclnn"
    assert found.root == root
    assert found.runtime_lib == root / "lib64" / "libascendcl.so"
    assert found.nnopbase_lib == root / "lib64" / "libnnopbase.so"
    assert found.op_lib == root / "lib64" / "libopapi_transformer.so"
    assert found.op_lib_source == "libopapi_transformer.so"


def test_library_without_the_operator_is_skipped(tmp_path, libs):
    root = make_root(tmp_path / "cann", libs, libopapi_transformer="without_op", libopapi="with_op")
    found = tk.find_toolkit({"ASCEND_HOME_PATH": str(root)})
    assert (found.op_lib, found.op_lib_source) == (root / "lib64" / "libopapi.so", "libopapi.so")
    log = "\n".join(tk.explain_search({"ASCEND_HOME_PATH": str(root)}))
    assert f"libopapi_transformer.so (libopapi_transformer.so): does not export {tk.OP_SYMBOL}" in log


def test_no_operator_anywhere_means_no_toolkit(tmp_path, libs):
    root = make_root(tmp_path / "cann", libs, libopapi="without_op")
    assert tk.find_toolkit({"ASCEND_HOME_PATH": str(root)}) is None


def test_custom_opp_path_entries_come_first_in_order(tmp_path, libs):
    root = make_root(tmp_path / "cann", libs, libopapi_transformer="with_op")
    first, second = tmp_path / "vendor_a", tmp_path / "vendor_b"
    place(libs["without_op"], first / "op_api" / "lib" / "libcust_opapi.so")   # a custom package of other ops
    place(libs["with_op"], second / "op_api" / "lib" / "libcust_opapi.so")
    (root / "opp" / "vendors").mkdir(parents=True)
    place(libs["with_op"], root / "opp" / "vendors" / "customize" / "op_api" / "lib" / "libcust_opapi.so")
    (root / "opp" / "vendors" / "config.ini").write_text("load_priority=customize\n")
    env = {"ASCEND_HOME_PATH": str(root), "ASCEND_CUSTOM_OPP_PATH": f"{first}::{second}"}
    found = tk.find_toolkit(env)
    assert found.op_lib == second / "op_api" / "lib" / "libcust_opapi.so"
    assert found.op_lib_source == "ASCEND_CUSTOM_OPP_PATH"


def test_a_custom_opp_entry_starting_with_tilde_is_read_as_written_as_the_toolkit_reads_it(tmp_path, libs, capsys,
                                                                                         monkeypatch):
    """nnopbase (opbase's ``OpKernelLib::GetCustomImplPath``: ``RealPath(entry + suffix)``) and GE (metadef's
    ``PluginManager::GetPluginPathFromCustomOppPath``: ``mmIsDir(entry + "/" + sub)``) read ASCEND_CUSTOM_OPP_PATH's
    entries as written, a leading ~ not expanded (a CI file's env: is expanded by no shell): prmg's search does
    the same, so a package under $HOME that the toolkit would not load is not the library tested, and a run on a
    toolkit and doctor say so in one line; a folder named ~ under the current one is what both take."""
    from types import SimpleNamespace

    from prmg_cli.commands.suite import settings_for
    from prmg_cli.device.execute import RunSettings

    root = make_root(tmp_path / "cann", libs, libopapi_transformer="with_op")
    home, work = tmp_path / "home", tmp_path / "work"
    place(libs["with_op"], home / "cust" / "op_api" / "lib" / "libcust_opapi.so")
    work.mkdir()
    monkeypatch.chdir(work)
    env = {"ASCEND_HOME_PATH": str(root), "ASCEND_CUSTOM_OPP_PATH": "~/cust:/nowhere", "HOME": str(home)}
    monkeypatch.setenv("HOME", str(home))
    found = tk.find_toolkit(env)
    assert found.op_lib == root / "lib64" / "libopapi_transformer.so"
    assert tk.custom_opp_note(env) == (
        f"prmg: note: ASCEND_CUSTOM_OPP_PATH entry ~/cust is read as written, as nnopbase and GE read it (neither "
        f"expands ~): {work}/~/cust, not {home}/cust; write the whole path")
    monkeypatch.setenv("ASCEND_CUSTOM_OPP_PATH", env["ASCEND_CUSTOM_OPP_PATH"])
    settings_for(SimpleNamespace(runner="auto"), toolkit=found, settings=RunSettings(toolkit=None))
    assert capsys.readouterr().err == tk.custom_opp_note(env) + "\n"
    place(libs["with_op"], work / "~" / "cust" / "op_api" / "lib" / "libcust_opapi.so")
    assert tk.find_toolkit(env).op_lib == Path("~/cust/op_api/lib/libcust_opapi.so")
    assert tk.custom_opp_note({"ASCEND_CUSTOM_OPP_PATH": f"{home}/cust::/x~"}) == ""


def test_config_ini_vendors_in_load_priority_order(tmp_path, libs):
    root = make_root(tmp_path / "cann", libs, libopapi_transformer="with_op")
    opp = tmp_path / "elsewhere" / "opp"
    vendors = opp / "vendors"
    place(libs["without_op"], vendors / "mdc" / "op_api" / "lib" / "libcust_opapi.so")
    place(libs["with_op"], vendors / "customize" / "op_api" / "lib" / "libcust_opapi.so")
    place(libs["with_op"], vendors / "unlisted" / "op_api" / "lib" / "libcust_opapi.so")
    (vendors / "config.ini").write_text("# vendors\nload_priority = mdc, customize\n")
    found = tk.find_toolkit({"ASCEND_HOME_PATH": str(root), "ASCEND_OPP_PATH": str(opp)})
    assert found.op_lib == vendors / "customize" / "op_api" / "lib" / "libcust_opapi.so"
    assert found.op_lib_source == "vendors/config.ini load_priority (vendor customize)"
    # without ASCEND_OPP_PATH the vendors are looked for under root/opp, where there are none
    assert tk.find_toolkit({"ASCEND_HOME_PATH": str(root)}).op_lib_source == "libopapi_transformer.so"


def test_config_ini_comments_are_ignored(tmp_path, libs):
    root = make_root(tmp_path / "cann", libs, libopapi_transformer="with_op")
    vendors = root / "opp" / "vendors"
    place(libs["with_op"], vendors / "customize" / "op_api" / "lib" / "libcust_opapi.so")
    (vendors / "config.ini").write_text("# load_priority=nobody\nload_priority=customize  # the team's build\n")
    found = tk.find_toolkit({"ASCEND_HOME_PATH": str(root)})
    assert found.op_lib_source == "vendors/config.ini load_priority (vendor customize)"


def test_a_non_root_install_under_home_is_found(tmp_path, libs):
    home = tmp_path / "user"
    cann = make_root(home / "Ascend" / "cann", libs, libopapi_transformer="with_op")
    assert tk.find_toolkit({"HOME": str(home)}).root == cann
    latest = make_root(home / "Ascend" / "ascend-toolkit" / "latest", libs, libopapi_transformer="with_op")
    assert tk.find_toolkit({"HOME": str(home)}).root == latest             # 8.x layout first, as /usr/local


def test_unknown_emulator_faults_are_named():
    assert {"sign", "noop", "crash", "hang"} <= set(tk.emulator_fault_names())
    tk.check_emulator_env({"PRMG_EMU_FAULT": "sign,noop"})
    with pytest.raises(PrmgError, match="unknown emulator fault 'sing'"):
        tk.check_emulator_env({"PRMG_EMU_FAULT": "sing"})
    # an empty name between commas, which the emulator refuses at every call (every case failed with 561000, and the
    # mode probe's refusal read as 'the toolkit refuses interleave'), is refused here; it ignores a last comma
    tk.check_emulator_env({"PRMG_EMU_FAULT": "sign,"})
    for faults in (",", ",sign", "sign,,noop"):
        with pytest.raises(PrmgError, match="unknown emulator fault ''"):
            tk.check_emulator_env({"PRMG_EMU_FAULT": faults})


def test_root_fallbacks_and_acl_rt_runtime(tmp_path, libs, monkeypatch):
    broken = tmp_path / "broken"
    (broken / "lib64").mkdir(parents=True)
    place(libs["without_op"], broken / "lib64" / "libascendcl.so")          # no libnnopbase.so
    toolkit_home = make_root(tmp_path / "home", libs, runtime="libacl_rt.so", libopapi="with_op")
    found = tk.find_toolkit({"ASCEND_TOOLKIT_HOME": str(toolkit_home)})
    assert found.root == toolkit_home
    assert found.runtime_lib == toolkit_home / "lib64" / "libacl_rt.so"
    env = {"ASCEND_HOME_PATH": str(broken), "ASCEND_TOOLKIT_HOME": str(toolkit_home)}
    assert tk.find_toolkit(env) is None                   # the root a variable names is the one meant, or none
    assert any("lib64/libnnopbase.so missing" in line for line in tk.explain_search(env))
    assert "search stopped: ASCEND_HOME_PATH names the toolkit" in tk.explain_search(env)[-2]

    latest = make_root(tmp_path / "latest", libs, libopapi="with_op")
    monkeypatch.setattr(tk, "DEFAULT_ROOTS", (str(latest), str(tmp_path / "cann")))
    assert tk.find_toolkit({}).root == latest


def test_nothing_found_is_explained(tmp_path):
    assert tk.find_toolkit({}) is None
    lines = tk.explain_search({"ASCEND_TOOLKIT_HOME": str(tmp_path / "gone")})
    assert lines[0] == "ASCEND_HOME_PATH: not set"
    assert f"ASCEND_TOOLKIT_HOME={tmp_path / 'gone'}: rejected: no such folder" in lines
    assert lines[-1] == "no CANN toolkit found"


def test_stub_libraries_are_never_used(tmp_path, libs):
    stub_op = place(libs["with_op"], tmp_path / "cann" / "lib64" / "stub" / "libopapi.so")
    with pytest.raises(PrmgError, match="stub"):
        tk.find_toolkit({}, op_lib=str(stub_op))
    # a toolkit whose lib64 links into devlib
    devlib_root = tmp_path / "devroot"
    make_root(devlib_root / "devlib", libs, libopapi="with_op")
    devlib_root.joinpath("x").mkdir()
    (devlib_root / "x" / "lib64").symlink_to(devlib_root / "devlib" / "lib64")
    env = {"ASCEND_HOME_PATH": str(devlib_root / "x")}
    assert tk.find_toolkit(env) is None
    assert any("refused stub" in line for line in tk.explain_search(env))
    # a custom vendor folder under stub/ is skipped, the next candidate is used
    root = make_root(tmp_path / "good", libs, libopapi="with_op")
    place(libs["with_op"], tmp_path / "stub" / "v" / "op_api" / "lib" / "libcust_opapi.so")
    env = {"ASCEND_HOME_PATH": str(root), "ASCEND_CUSTOM_OPP_PATH": str(tmp_path / "stub" / "v")}
    assert tk.find_toolkit(env).op_lib_source == "libopapi.so"
    assert tk.is_stub_path(tmp_path / "stub" / "x.so") and not tk.is_stub_path(tmp_path / "stubborn" / "x.so")


def test_op_lib_override(tmp_path, libs):
    root = make_root(tmp_path / "cann", libs, libopapi_transformer="with_op")
    mine = place(libs["with_op"], tmp_path / "mine" / "libmine.so")
    found = tk.find_toolkit({"ASCEND_HOME_PATH": str(root)}, op_lib=str(mine))
    assert (found.op_lib, found.op_lib_source) == (mine, "--op-lib")
    with pytest.raises(PrmgError, match="does not export"):
        tk.find_toolkit({"ASCEND_HOME_PATH": str(root)}, op_lib=str(libs["without_op"]))
    with pytest.raises(PrmgError, match="no such file"):
        tk.find_toolkit({"ASCEND_HOME_PATH": str(root)}, op_lib=str(tmp_path / "missing.so"))


def test_select_runner(tmp_path, libs):
    root = make_root(tmp_path / "cann", libs, libopapi="with_op")
    assert tk.select_runner("aclnn", None, {"ASCEND_HOME_PATH": str(root)}).root == root
    assert tk.select_runner("auto", None, {"ASCEND_HOME_PATH": str(root)}).kind == "aclnn"
    with pytest.raises(PrmgError, match=r"no CANN toolkit found \(looked in ASCEND_HOME_PATH: not set"):
        tk.select_runner("aclnn", None, {})
    with pytest.raises(PrmgError, match=r"--runner 'npu': choose one of auto, aclnn, emulator, geir, aclnn\+geir, "
                                        r"emulator-geir, emulator\+geir$"):
        runners.select("npu", None, {})          # the one check of --runner (runners.check_runner), every caller's
    with pytest.raises(PrmgError, match="--op-lib"):
        tk.select_runner("emulator", str(libs["with_op"]), {})


def test_auto_never_runs_the_emulator_where_a_toolkit_is_named_or_installed(tmp_path, libs, monkeypatch):
    """Issue 32: a toolkit named but wrong, or installed without the operator, ran the emulator (a correct kernel)
    under --runner auto. Now each is a usage error naming what suggests the toolkit and what is missing where: a
    variable, a default place, a folder of LD_LIBRARY_PATH holding a CANN runtime, an NPU's device node."""
    def refused(env: dict, *reasons: str) -> None:
        with pytest.raises(PrmgError) as caught:
            tk.select_runner("auto", None, env)
        assert str(caught.value).startswith("--runner auto: a CANN toolkit is meant here ("), caught.value
        assert all(reason in str(caught.value) for reason in reasons), caught.value

    refused({"ASCEND_HOME_PATH": "/opt/Ascend-typo"}, "ASCEND_HOME_PATH=/opt/Ascend-typo: rejected: no such folder",
            "--runner emulator")
    without = make_root(tmp_path / "cann", libs, libopapi="without_op")
    refused({"ASCEND_HOME_PATH": str(without)}, f"libopapi.so (libopapi.so): does not export {tk.OP_SYMBOL}")
    refused({"ASCEND_CUSTOM_OPP_PATH": str(tmp_path / "vendor")}, "ASCEND_CUSTOM_OPP_PATH=")    # any toolkit variable
    refused({"ASCEND_HOME_PATH": ""}, "(ASCEND_HOME_PATH=)",           # export ASCEND_HOME_PATH=$TYPO: set, empty
            "looked in ASCEND_HOME_PATH: set but empty;")                # (it said 'not set' beside 'meant here')
    refused({"ASCEND_HOME": "/usr/local/Ascend"}, "(ASCEND_HOME=/usr/local/Ascend)")  # any ASCEND_* holding a path
    assert tk.toolkit_suggested({"ASCEND_RT_VISIBLE_DEVICES": "0", "ASCEND_GLOBAL_LOG_LEVEL": "3"}) == []
    monkeypatch.setattr(tk, "INSTALL_BASES", (str(tmp_path),))         # /usr/local/Ascend: a driver, no toolkit
    refused({}, f"({tmp_path})")
    monkeypatch.setattr(tk, "INSTALL_BASES", ())
    refused({"LD_LIBRARY_PATH": f"/nowhere:{without / 'lib64'}"}, f"(LD_LIBRARY_PATH's {without / 'lib64'})")  # by hand
    assert tk.toolkit_suggested({"LD_LIBRARY_PATH": f"{tmp_path}:/nowhere"}) == []       # no runtime there
    monkeypatch.setattr(tk, "NPU_NODES", (str(tmp_path),))            # an NPU host's /dev/davinci_manager
    refused({}, f"({tmp_path})")
    monkeypatch.setattr(tk, "NPU_NODES", ())
    good = make_root(tmp_path / "good", libs, libopapi="with_op")
    refused({"ASCEND_HOME_PATH": str(tmp_path / "typo"), "ASCEND_TOOLKIT_HOME": str(good)}, "search stopped")
    monkeypatch.setattr(tk, "DEFAULT_ROOTS", (str(without),))                  # installed, not named
    refused({}, f"({without})", "does not export")
    monkeypatch.setattr(tk, "DEFAULT_ROOTS", (str(tmp_path / "none"), str(good)))
    assert tk.select_runner("auto", None, {}).root == good                     # the first default root that serves


# ---------------------------------------------------------------------------------------------------------
# The emulator, built on first use

def test_emulator_is_built_once_even_by_concurrent_callers(tmp_path):
    env = {"PRMG_EMULATOR_HOME": str(tmp_path / "cache")}
    with ThreadPoolExecutor(3) as pool:
        built = list(pool.map(lambda _: tk.emulator_toolkit(env=env), range(3)))
    assert len(set(built)) == 1
    emulator = built[0]
    assert emulator.kind == "emulator"
    assert emulator.root == tmp_path / "cache" / f"emulator-{tk.sources_hash(tk.emulator_sources(), tk.geir_sources())}"
    for library in (emulator.runtime_lib, emulator.nnopbase_lib, emulator.op_lib):
        assert library.is_file() and library.parent == emulator.root / "lib64"
    assert elf.exports_symbol(emulator.op_lib, tk.OP_SYMBOL)
    stamp = emulator.op_lib.stat().st_mtime_ns
    assert tk.emulator_toolkit(env=env) == emulator
    assert emulator.op_lib.stat().st_mtime_ns == stamp                  # not rebuilt
    # pointed at by ASCEND_HOME_PATH, our own build is still recognised as the emulator
    assert tk.find_toolkit({"ASCEND_HOME_PATH": str(emulator.root)}).kind == "emulator"


def test_emulator_modes_and_auto_fallback(emulator_home):
    env = {"PRMG_EMULATOR_HOME": str(emulator_home)}                     # the session's build (building: below)
    assert tk.emulator_toolkit([3, 0, 1], env).env == (("PRMG_EMU_MODES", "0,1,3"),)
    assert tk.emulator_toolkit(None, env).env == ()
    chosen = tk.select_runner("auto", None, env, modes=[0, 1, 2, 3])
    assert chosen.kind == "emulator" and chosen.env == (("PRMG_EMU_MODES", "0,1,2,3"),)
    assert tk.select_runner("emulator", None, env).root == chosen.root
    # the opp folder an emulator session sets in ASCEND_OPP_PATH names no CANN toolkit
    assert tk.toolkit_suggested({"ASCEND_OPP_PATH": str(chosen.root / "opp")}) == []


def test_failed_build_shows_the_compiler_output(tmp_path, monkeypatch):
    broken = tmp_path / "src"
    shutil.copytree(tk.emulator_sources(), broken)
    with open(broken / "kernel.c", "a") as source:
        source.write("\nthis is not C;\n")
    monkeypatch.setattr(tk, "emulator_sources", lambda: broken)
    with pytest.raises(PrmgError, match=r"(?s)building the host emulator failed \(make exit \d+\):.*error"):
        tk.emulator_toolkit(env={"PRMG_EMULATOR_HOME": str(tmp_path / "cache")})


def test_cache_location():
    assert tk.emulator_cache_base({"PRMG_EMULATOR_HOME": "/a", "XDG_CACHE_HOME": "/b"}) == Path("/a")
    assert tk.emulator_cache_base({"XDG_CACHE_HOME": "/b"}) == Path("/b/prmg")
    assert tk.emulator_cache_base({}) == Path.home() / ".cache" / "prmg"
    assert tk.emulator_cache_base({"XDG_CACHE_HOME": "rel/cache"}) == Path.home() / ".cache" / "prmg"  # XDG: ignored


def test_a_relative_emulator_home_builds_under_the_current_folder(tmp_path, monkeypatch):
    """A relative PRMG_EMULATOR_HOME is taken from the current folder and made absolute; a name make cannot take
    (``emu,1``) builds through a link to it. Its link was relative to the links' folder: make's 'mkdir: cannot
    create directory ...: File exists', exit 2, and a run record naming a relative folder. The build is faked
    (make stands in), so the test costs no compile."""
    monkeypatch.chdir(tmp_path)
    assert tk.emulator_cache_base({"PRMG_EMULATOR_HOME": "emu,1"}) == tmp_path / "emu,1"
    seen = {}

    def make(command, **_):
        out = command[3].split("=", 1)[1]
        seen["out"] = os.path.realpath(out)
        (Path(out) / "lib64").mkdir(parents=True)
        for name in tk.EMULATOR_LIBS:
            (Path(out) / "lib64" / name).write_bytes(b"")
        return subprocess.CompletedProcess(command, 0, "", None)

    monkeypatch.setattr(tk.subprocess, "run", make)
    built = tk.emulator_toolkit(env={"PRMG_EMULATOR_HOME": "emu,1"})
    assert built.root.is_absolute() and built.root.parent == tmp_path / "emu,1"
    assert seen["out"] == str(built.root) and (built.root / "lib64" / tk.EMULATOR_LIBS[0]).is_file()


def test_unwritable_cache_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(PrmgError, match="cannot build the host emulator in .*PRMG_EMULATOR_HOME"):
        tk.emulator_toolkit(env={"PRMG_EMULATOR_HOME": str(blocker / "cache")})
    with pytest.raises(PrmgError, match=f"{blocker}: is a regular file, not a folder \\(set PRMG_EMULATOR_HOME"):
        tk.emulator_toolkit(env={"PRMG_EMULATOR_HOME": str(blocker)})          # it said 'file exists'


@pytest.mark.verdict
def test_a_library_mapped_from_another_toolkits_lib64_is_foreign(tmp_path, monkeypatch):
    """``foreign_libraries`` on a process's maps (a file here): a library mapped from a folder that holds a runtime,
    where the toolkit's lib64 has a file of that name, is foreign however it came in (LD_LIBRARY_PATH, a RUNPATH or
    RPATH, LD_PRELOAD: no LD_LIBRARY_PATH names it here); the toolkit's own, one from a folder holding no runtime, or
    one not ``among`` those loading the toolkit mapped (a forked worker's parent's) is not. ``refuse_foreign``
    refuses a process with any (exit 2), naming it and how it came."""
    a, b, plain = (tmp_path / name / "lib64" for name in ("a", "b", "plain"))
    for folder in (a, b, plain):
        folder.mkdir(parents=True)
        (folder / "libdep.so").write_text("")
    for folder in (a, b):
        (folder / tk.RUNTIME_NAMES[0]).write_text("")
    maps = tmp_path / "maps"
    maps.write_text("".join(f"7f00-7f01 r-xp 00000000 08:01 1 {folder}/libdep.so\n" for folder in (b, plain)))
    assert linkage.foreign_libraries(a.parent, str(maps)) == [(f"{b}/libdep.so", f"{a}/libdep.so")]
    assert linkage.foreign_libraries(a.parent, str(maps), [f"{plain}/libdep.so"]) == []
    monkeypatch.setattr(linkage, "foreign_libraries", lambda root, among: [(f"{b}/libdep.so", f"{a}/libdep.so")])
    with pytest.raises(PrmgError, match=f"the toolkit at {a.parent} is mixed with another one: {b}/libdep.so in .*"
                                        f"RPATH or RUNPATH, LD_PRELOAD"):
        linkage.refuse_foreign(a.parent, [])


def test_a_toolkit_mixed_with_another_through_ld_library_path_is_refused(tmp_path, emulator):
    """LD_LIBRARY_PATH naming another toolkit's lib64 first gives the toolkit's runtime that toolkit's dependencies
    (the dynamic linker looks there before a library's RUNPATH): the run was green, every header naming the toolkit
    of ASCEND_HOME_PATH. A stand-in toolkit whose runtime needs libprmg_dep.so (no RUNPATH: its set_env.sh's
    LD_LIBRARY_PATH finds it, as a CANN toolkit's) runs with its own LD_LIBRARY_PATH, and is refused with another
    toolkit's first: exit 2, naming the library loaded and the toolkit's own."""
    from conftest import ROOT, prmg

    kits = {name: tmp_path / name for name in "AB"}
    for value, kit in enumerate(kits.values()):
        shutil.copytree(emulator.root, kit, ignore=shutil.ignore_patterns(tk.EMULATOR_MARKER))
        (tmp_path / "dep.c").write_text(f"int prmg_dep(void) {{ return {value}; }}\n")
        subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libprmg_dep.so", "-o", kit / "lib64/libprmg_dep.so",
                        tmp_path / "dep.c"], check=True)
    a, b = kits["A"], kits["B"]
    subprocess.run(["gcc", "-std=gnu11", "-fPIC", "-fvisibility=hidden", "-pthread", "-shared",
                    "-Wl,-soname,libascendcl.so", "-o", a / "lib64/libascendcl.so", ROOT / "runners/emulator/runtime.c",
                    "-Wl,--no-as-needed", f"-L{a}/lib64", "-lprmg_dep"], check=True)
    cases = tmp_path / "one.yaml"
    cases.write_text("- {name: one, shape: [1, 1, 2, 8], partial_slice: [0, 8]}\n")
    run = ("run", cases, "--runner", "emulator")        # the emulator's libraries as a toolkit: run by that name
    own = prmg(*run, env={"ASCEND_HOME_PATH": str(a), "LD_LIBRARY_PATH": f"{a}/lib64"})
    assert own.returncode == 0, own.stdout + own.stderr
    mixed = prmg(*run, env={"ASCEND_HOME_PATH": str(a), "LD_LIBRARY_PATH": f"{b}/lib64:{a}/lib64"})
    assert mixed.returncode == 2 and "Traceback" not in mixed.stderr, mixed.stdout + mixed.stderr
    assert f"the toolkit at {a} is mixed with another one: {b}/lib64/libprmg_dep.so in place of " \
           f"{a}/lib64/libprmg_dep.so (LD_LIBRARY_PATH={b}/lib64:{a}/lib64 finds" in mixed.stderr, mixed.stderr
    preloaded = prmg(*run, env={"ASCEND_HOME_PATH": str(a), "LD_LIBRARY_PATH": f"{a}/lib64",     # was green
                                "LD_PRELOAD": f"{b}/lib64/libprmg_dep.so"})
    assert preloaded.returncode == 2, preloaded.stdout + preloaded.stderr
    assert f"mixed with another one: {b}/lib64/libprmg_dep.so in place of {a}/lib64/libprmg_dep.so (a library's " \
           f"RPATH or RUNPATH, LD_PRELOAD" in preloaded.stderr, preloaded.stderr
    assert linkage.foreign_libraries(a, str(tmp_path / "no-maps")) == []   # no /proc


def _library(source: Path, out: Path, *flags) -> Path:
    """``source`` compiled into the shared library ``out`` (gcc)."""
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", out, source, *flags], check=True)
    return out


@pytest.mark.verdict
def test_a_preloaded_library_is_found_and_what_it_takes_from_the_toolkit_named(tmp_path):
    """``linkage.interposers`` on a process's maps and start environment (files here): a library of LD_PRELOAD (by
    path) or of /etc/ld.so.preload (by name) that the process mapped is preloaded; the symbols it defines that the
    toolkit's mapped libraries define are named, but not one a system library defines too (libc's ``strlen``: an
    allocator or libstdc++ preloaded takes nothing of the toolkit's)."""
    source = tmp_path / "lib.c"
    source.write_text("int aclInit(const char *c) { return c != 0; }\nint aclFinalize(void) { return 0; }\n"
                      "int prmg_test_init_b13(void) { return aclInit(0); }\n"           # aclInit bound by name
                      "unsigned long strlen(const char *s) { unsigned long n = 0; while (s[n]) n++; return n; }\n")
    (tmp_path / "kit" / "lib64").mkdir(parents=True)
    runtime = _library(source, tmp_path / "kit" / "lib64" / "libascendcl.so")
    hook = _library(source, tmp_path / "libhook.so")
    plain = _library(source, tmp_path / "libplain.so", "-DaclInit=plain_init", "-Dstrlen=plain_strlen",
                     "-DaclFinalize=plain_fini", "-Dprmg_test_init_b13=plain_call")
    libc = next(path for path in linkage.mapped_libraries() if Path(path).name.startswith("libc.so"))
    maps = tmp_path / "maps"
    maps.write_text("".join(f"7f00-7f01 r-xp 00000000 08:01 1 {path}\n" for path in (hook, plain, runtime, libc)))
    environ, preload_file = tmp_path / "environ", tmp_path / "ld.so.preload"
    environ.write_bytes(f"HOME=/root\0LD_PRELOAD={hook}\0".encode())
    kit = tk.Toolkit("aclnn", tmp_path / "kit", runtime, runtime, runtime, "test")
    found = linkage.interposers(kit, str(maps), str(environ), str(preload_file))
    defined = ("aclFinalize", "aclInit", "prmg_test_init_b13")
    assert found == [(str(hook), defined, ("aclInit",))]
    assert linkage.preload_labels(found) == [f"{hook} (defines 3 of the toolkit's symbols: {', '.join(defined)}; its "
                                             f"libraries bind 1 of them by name: aclInit)"]
    with pytest.raises(PrmgError, match=f"--strict: a preloaded library takes calls meant for the toolkit at "
                                        f"{tmp_path / 'kit'}: {hook} \\(defines 3 .*aclInit\\)"):
        linkage.refuse_interposers(found, kit.root)
    # a toolkit library that binds its own functions when it is linked (the emulator's -Bsymbolic-functions) binds
    # none by name: the hook takes no call of it, and is said to define its symbols, still refused under --strict
    _library(source, runtime, "-Wl,-Bsymbolic-functions")
    (shadow,) = linkage.interposers(kit, str(maps), str(environ), str(preload_file))
    assert shadow == (str(hook), defined, ()) and "aclInit" not in elf.bound_by_name(runtime)
    label = f"{hook} (defines 3 of the toolkit's symbols, which no library of the toolkit loaded binds by name: " \
            f"{', '.join(defined)})"
    assert linkage.preload_labels([shadow]) == [label]
    assert linkage.interposer_warning([shadow]).startswith(f"a preloaded library defines symbols of the toolkit: "
                                                           f"{label}: no call of the toolkit's libraries loaded")
    with pytest.raises(PrmgError, match="--strict: a preloaded library defines symbols of the toolkit at "):
        linkage.refuse_interposers([shadow], kit.root)
    environ.write_bytes(b"HOME=/root\0")
    preload_file.write_text("# none\nlibplain.so\n")
    assert list(linkage.preloaded(str(maps), str(environ), str(preload_file))) == [str(plain)]
    assert linkage.interposers(kit, str(maps), str(environ), str(preload_file)) == [(str(plain), (), ())]
    linkage.refuse_interposers([(str(plain), ())], kit.root)          # takes nothing: recorded, never refused
    environ.write_bytes(f"LD_PRELOAD={libc}\0".encode())                # the system's own: never an interposer
    maps.write_text("".join(f"7f00-7f01 r-xp 00000000 08:01 1 {path}\n" for path in (runtime, libc)))
    assert linkage.interposers(kit, str(maps), str(environ), str(tmp_path / "none")) == [(libc, (), ())]
    audit_source = tmp_path / "audit.c"                  # LD_AUDIT: what it takes is its rebinding hooks, not symbols
    audit_source.write_text(AUDIT_SOURCE)
    audit = _library(audit_source, tmp_path / "libaudit.so")
    maps.write_text("".join(f"7f00-7f01 r-xp 00000000 08:01 1 {path}\n" for path in (audit, runtime, libc)))
    environ.write_bytes(f"LD_AUDIT={audit}\0".encode())
    found = linkage.interposers(kit, str(maps), str(environ), str(tmp_path / "none"))
    assert found == [(str(audit), ("la_symbind64",), ("la_symbind64",))]
    with pytest.raises(PrmgError, match=f"{audit} \\(an audit library: rebinds calls through la_symbind64\\)"):
        linkage.refuse_interposers(found, kit.root)


# A tracer's hook of the emulator's ``prmg_emu_device_usable``, forwarding the call: a name the toolkit's libraries
# export, which prmg names as defined, not as taking their calls (the emulator's own libraries bind it among
# themselves, contract.c: no library of it binds the name through the dynamic linker).
BOUND_AMONG = "which no library of the toolkit loaded binds by name"
HOOK_SOURCE = ("#define _GNU_SOURCE\n#include <dlfcn.h>\nint prmg_emu_device_usable(const char *function) {\n"
               "  int (*next)(const char *) = (int (*)(const char *))\n"
               "      dlsym(RTLD_NEXT, \"prmg_emu_device_usable\");\n"
               "  return next ? next(function) : 0;\n}\n")


def test_a_preloaded_hook_of_the_toolkit_is_recorded_and_refused_under_strict(tmp_path, emulator):
    """A preloaded library that takes a call the toolkit's libraries make (a tracer's hook of the emulator's
    ``prmg_emu_device_usable``, forwarding it) ran green and unrecorded, though it could hand the operator anything:
    without --strict the run says so on stderr, its header names the library and what it takes, and its run record
    holds it among the settings (a resume or merge with a run without it sees other conditions); --strict refuses
    it, exit 2, before any case."""
    from conftest import prmg
    from prmg_cli.reports import store

    hook = tmp_path / "hook.c"
    hook.write_text(HOOK_SOURCE)
    library = _library(hook, tmp_path / "libhook.so", "-ldl")
    cases = tmp_path / "one.yaml"
    cases.write_text("- {name: one, shape: [1, 1, 2, 8], partial_slice: [0, 8]}\n")
    label = f"{library} (defines 1 of the toolkit's symbols, {BOUND_AMONG}: prmg_emu_device_usable)"
    run = prmg("run", cases, "--runner", "emulator", "--results", tmp_path / "r.jsonl",
               env={"LD_PRELOAD": str(library)})
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"prmg: warning: a preloaded library defines symbols of the toolkit: {label}" in run.stderr
    assert f"preloaded: {label} prmg version:" in " ".join(run.stdout.split())          # the header's line (wrapped)
    assert store.read(tmp_path / "r.jsonl").runs[-1].settings["preloaded"] == [label]
    strict = prmg("run", cases, "--runner", "emulator", "--strict", env={"LD_PRELOAD": str(library)})
    assert strict.returncode == 2 and "Traceback" not in strict.stderr, strict.stdout + strict.stderr
    assert f"--strict: a preloaded library defines symbols of the toolkit at {emulator.root}: {label}" \
           in strict.stderr


AUDIT_SOURCE = """#define _GNU_SOURCE
#include <link.h>
#include <stdint.h>
unsigned int la_version(unsigned int version) { return version; }
unsigned int la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie) {
  (void)map; (void)lmid; (void)cookie; return LA_FLG_BINDTO | LA_FLG_BINDFROM; }
uintptr_t la_symbind64(Elf64_Sym *sym, unsigned int ndx, uintptr_t *refcook, uintptr_t *defcook,
                       unsigned int *flags, const char *symname) {
  (void)ndx; (void)refcook; (void)defcook; (void)flags; (void)symname; return sym->st_value; }
"""


def test_an_audit_library_is_recorded_and_refused_under_strict_as_a_preload_is(tmp_path, emulator):
    """An rtld-audit library (``LD_AUDIT``) sees every binding of the toolkit's calls and may bind each elsewhere
    (``la_symbind64``): it passed ``--strict`` green and unrecorded (only LD_PRELOAD and /etc/ld.so.preload were
    read). It is one more source of ``linkage.SOURCES``: the run names it in its header and settings and warns,
    ``--strict`` refuses it, exit 2, before any case; an audit library without a rebinding hook takes nothing."""
    from conftest import prmg
    from prmg_cli.reports import store

    source = tmp_path / "audit.c"
    source.write_text(AUDIT_SOURCE)
    library = _library(source, tmp_path / "libaudit.so")
    cases = tmp_path / "one.yaml"
    cases.write_text("- {name: one, shape: [1, 1, 2, 8], partial_slice: [0, 8]}\n")
    label = f"{library} (an audit library: rebinds calls through la_symbind64)"
    run = prmg("run", cases, "--runner", "emulator", "--results", tmp_path / "r.jsonl", env={"LD_AUDIT": str(library)})
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"prmg: warning: a preloaded library takes calls meant for the toolkit: {label}" in run.stderr
    assert store.read(tmp_path / "r.jsonl").runs[-1].settings["preloaded"] == [label]
    strict = prmg("run", cases, "--runner", "emulator", "--strict", env={"LD_AUDIT": str(library)})
    assert strict.returncode == 2 and "Traceback" not in strict.stderr, strict.stdout + strict.stderr
    assert f"--strict: a preloaded library takes calls meant for the toolkit at {emulator.root}: {label} " \
           f"(LD_PRELOAD, /etc/ld.so.preload, LD_AUDIT, or loaded with RTLD_GLOBAL before it)" in strict.stderr
    watcher = _library(source, tmp_path / "libwatch.so", "-Dla_symbind64=la_watch")      # sees, binds nothing
    quiet = prmg("run", cases, "--runner", "emulator", "--strict", env={"LD_AUDIT": str(watcher)})
    assert quiet.returncode == 0 and f"preloaded: {watcher} prmg version:" in " ".join(quiet.stdout.split()), \
        quiet.stderr


def test_a_library_loaded_globally_ahead_of_the_toolkit_is_recorded_and_refused_under_strict(tmp_path, emulator):
    """A library that the prmg process loaded with RTLD_GLOBAL before the toolkit (a sitecustomize, a .pth file, a
    conftest's import) comes first in the global scope, as a preload does, and takes the calls the toolkit's libraries
    make to each other: a tracer's hook so loaded passed --strict green and unrecorded (only LD_PRELOAD's files were
    looked at). ``linkage.bound_ahead`` asks the global scope where each of the toolkit's symbols binds: the run names
    the library and warns, --strict refuses it, exit 2, before any case."""
    import sys

    from conftest import ROOT

    hook = tmp_path / "hook.c"
    hook.write_text(HOOK_SOURCE)
    library = _library(hook, tmp_path / "libhook.so", "-ldl")
    cases = tmp_path / "one.yaml"
    cases.write_text("- {name: one, shape: [1, 1, 2, 8], partial_slice: [0, 8]}\n")
    script = (f"import ctypes, sys\nctypes.CDLL({str(library)!r}, mode=ctypes.RTLD_GLOBAL)\n"
              "from prmg_cli import cli\nsys.exit(cli.main())\n")
    label = f"{library} (defines 1 of the toolkit's symbols, {BOUND_AMONG}: prmg_emu_device_usable)"

    def run(*extra: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", script, "run", cases, "--runner", "emulator", *extra], cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=300)

    warned = run()
    assert warned.returncode == 0, warned.stdout + warned.stderr
    assert f"prmg: warning: a preloaded library defines symbols of the toolkit: {label}" in warned.stderr
    strict = run("--strict")
    assert strict.returncode == 2 and "Traceback" not in strict.stderr, strict.stdout + strict.stderr
    assert f"--strict: a preloaded library defines symbols of the toolkit at {emulator.root}: {label}" \
           in strict.stderr


def test_another_emulator_copy_ahead_in_the_global_scope_takes_none_of_the_emulators_internal_calls(tmp_path,
                                                                                                      emulator):
    """A process holding another copy of the emulator in its global scope (loaded with RTLD_GLOBAL before: a test
    process's earlier test, the parent a worker is forked from) bound every call of the emulator's libraries to their
    internal contract (``prmg_emu_*``, emu.h) to that copy, libascendcl's own calls too: the run's device was set in
    a runtime the operator never asked (``aclrtSetDevice failed: 100001``, exit 2; the in-process ``prmg doctor`` of
    tests/test_geir.py said graph mode NOT usable after some other tests on its worker). A sibling reaches the
    runtime of its own folder (contract.c), each library binds its own functions (-Bsymbolic-functions): the run
    passes, saying which library is ahead of the toolkit's public names."""
    import sys

    from conftest import ROOT

    ahead = tmp_path / "ahead"
    shutil.copytree(emulator.root, ahead)
    cases = tmp_path / "two.yaml"
    cases.write_text("- {name: one, shape: [1, 1, 2, 8], partial_slice: [0, 8]}\n"
                     "- {name: two, shape: [2, 1, 2, 16], partial_slice: [0, 16]}\n")
    script = ("import ctypes, sys\n"
              f"for name in {tk.EMULATOR_LIBS!r}:\n"
              f"    ctypes.CDLL({str(ahead / 'lib64')!r} + '/' + name, mode=ctypes.RTLD_GLOBAL)\n"
              "from prmg_cli import cli\nsys.exit(cli.main())\n")
    run = subprocess.run([sys.executable, "-c", script, "run", cases, "--runner", "emulator"], cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "2 passed, 0 failed" in run.stdout, run.stdout + run.stderr
    assert "prmg: warning: a preloaded library defines symbols of the toolkit: " in run.stderr and \
        f"{ahead}/lib64/libascendcl.so (defines" in run.stderr


@pytest.mark.verdict
def test_a_weak_definition_of_the_toolkit_bound_to_a_library_ahead_of_it_is_no_call_taken(tmp_path, monkeypatch):
    """C++ libraries export their inline functions and template instances as weak symbols, and the process binds each
    to its first definition: on a host whose conda libstdc++ (outside the system's folders) is in the global scope
    before the operator library, every such symbol bound there, and ``bound_ahead`` named libstdc++ as taking the
    toolkit's calls (--strict refused a correct host). Only the toolkit's strong definitions are asked; a strong one
    defined first elsewhere is still named."""
    import ctypes

    from prmg_cli.device import linkage

    kit, early = tmp_path / "kit", tmp_path / "early"
    kit.mkdir(), early.mkdir()
    # a strong definition first in a system library (libc's abs) or in the Python executable (which exports its
    # _IO_stdin_used) is no call taken either: those come before every library of the process by design
    (tmp_path / "kit.c").write_text("__attribute__((weak)) int prmg_test_inline_b9(void) { return 1; }\n"
                                    "int prmg_test_api_b9(void) { return 2; }\n"
                                    "int abs(int x) { return x < 0 ? -x : x; }\n"
                                    "const int _IO_stdin_used = 0x20001;\n")
    (tmp_path / "early.c").write_text("int prmg_test_inline_b9(void) { return 3; }\n"
                                      "int prmg_test_api_b9(void) { return 4; }\n")
    ahead = _library(tmp_path / "early.c", early / "libprmg_early_b9.so")
    ctypes.CDLL(str(ahead), mode=ctypes.RTLD_GLOBAL)
    ctypes.CDLL(str(_library(tmp_path / "kit.c", kit / "libprmg_kit_b9.so")), mode=ctypes.RTLD_GLOBAL)
    monkeypatch.setattr(linkage, "toolkit_places", lambda toolkit: [os.path.realpath(kit)])
    assert linkage.bound_ahead(None) == [(os.path.realpath(ahead), ("prmg_test_api_b9",))]


def test_a_runtime_whose_code_is_another_folders_is_refused(tmp_path, emulator):
    """A toolkit whose libascendcl.so only forwards (its code in a library its RUNPATH finds elsewhere: another
    toolkit's folder) ran green, every header naming the toolkit: the functions prmg calls resolve (``dladdr``) into
    a file outside the toolkit, exit 2 naming the function and the file. ``linkage.resolved_outside`` names libc's
    ``strlen`` outside the emulator and none of the emulator's own."""
    import ctypes

    from conftest import ROOT, prmg_forked
    kit, elsewhere = tmp_path / "kit", tmp_path / "elsewhere"
    shutil.copytree(emulator.root, kit, ignore=shutil.ignore_patterns(tk.EMULATOR_MARKER))
    elsewhere.mkdir()
    _library(ROOT / "runners/emulator/runtime.c", elsewhere / "libacl_impl.so", "-std=gnu11", "-fvisibility=hidden",
             "-pthread", "-Wl,-soname,libacl_impl.so", "-ldl")
    (tmp_path / "forward.c").write_text("int prmg_forwarding_runtime;\n")
    _library(tmp_path / "forward.c", kit / "lib64/libascendcl.so", "-Wl,-soname,libascendcl.so", "-Wl,--no-as-needed",
             f"-L{elsewhere}", "-l:libacl_impl.so", f"-Wl,-rpath,{elsewhere}")
    cases = tmp_path / "one.yaml"
    cases.write_text("- {name: one, shape: [1, 1, 2, 8], partial_slice: [0, 8]}\n")
    run = prmg_forked("run", cases, "--runner", "emulator", env={"ASCEND_HOME_PATH": str(kit)})     # an emulator copy
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stdout + run.stderr
    assert f"the toolkit at {kit} runs code from outside it: aclInit in {elsewhere}/libacl_impl.so;" in run.stderr
    libc = ctypes.CDLL(None)
    assert linkage.resolved_outside({"strlen": libc.strlen}, [str(emulator.root)])[0][0] == "strlen"
    assert linkage.resolved_outside({"strlen": libc.strlen}, ["/"]) == []


def test_a_toolkit_changed_while_the_run_ran_fails_the_run(tmp_path):
    """A kernel of the operator installed while the cases ran (a shared host's toolkit upgrade, a vendor package)
    gave a green run whose record named the first build alone: the run compares the toolkit's libraries and the
    operator's kernel and tiling files at its end with what it recorded, and a change is exit 2 naming it (a process
    of its own, where the kernel appears as the cases start)."""
    import sys

    from conftest import ROOT

    opp = tmp_path / "opp"
    kernel = opp / "built-in/op_impl/ai_core/tbe/kernel/ascend950/inplace_partial_rotary_mul_grad"
    cases = tmp_path / "one.yaml"
    cases.write_text("- {name: one, shape: [1, 1, 2, 8], partial_slice: [0, 8]}\n")
    script = ("import pathlib, sys\nfrom prmg_cli import cli\nfrom prmg_cli.device import execute\n"
              "original = execute.Executor.run\n"
              "def installing(self, *args, **kwargs):\n"
              f"    kernel = pathlib.Path({str(kernel)!r})\n"
              "    kernel.mkdir(parents=True)\n    (kernel / 'InplacePartialRotaryMulGrad_0.o').write_bytes(b'0')\n"
              "    return original(self, *args, **kwargs)\n"
              "execute.Executor.run = installing\nsys.exit(cli.main())\n")
    changed = subprocess.run([sys.executable, "-c", script, "run", cases, "--runner", "emulator"], cwd=ROOT,
                             env={**os.environ, "ASCEND_OPP_PATH": str(opp), "PYTHONPATH": str(ROOT)},
                             capture_output=True, text=True, timeout=300)
    assert changed.returncode == 2 and "1 passed" in changed.stdout, changed.stdout + changed.stderr
    assert f"prmg: error: the toolkit changed while the run ran (the operator's kernel and tiling files under " \
           f"{opp}): its verdicts are of more than one build" in changed.stderr


def test_auto_refuses_the_emulator_installed_as_a_toolkit_and_runs_it_only_by_name(tmp_path, emulator):
    """Issue 32, item 1: the emulator's build copied where a toolkit belongs (an image made to run without an NPU,
    reused on an NPU host), its marker file left behind or copied along, and named by ASCEND_HOME_PATH or found at a
    default root, ran the default runner's gate green (exit 0 under --strict, only a stderr line and 'emulator' in
    the report saying so): a toolkit is meant there, and auto runs the emulator only where nothing suggests one. It is
    exit 2 before any case runs, --strict or not, naming the file that gives the emulator away; --runner emulator runs
    that copy, its reports and JUnit suite naming the host emulator; prmg's own build, which only the emulator's
    set_env.sh names, still runs under auto without a word."""
    import json

    from conftest import prmg_forked

    kit = tmp_path / "Ascend/ascend-toolkit/latest"                # $HOME/Ascend/ascend-toolkit/latest: a default root
    shutil.copytree(emulator.root, kit, ignore=shutil.ignore_patterns(tk.EMULATOR_MARKER))
    marked = tmp_path / "marked"                                   # its marker file copied along
    shutil.copytree(emulator.root, marked)
    cases = tmp_path / "one.yaml"
    cases.write_text("- {name: one, shape: [1, 1, 2, 8], partial_slice: [0, 8]}\n")
    said = f"{kit}/lib64/libascendcl.so defines prmg_emu_initialized, which only the host emulator does"
    for env, strict, evidence in (({"ASCEND_HOME_PATH": str(kit)}, ["--strict"], said),
                                  ({"ASCEND_HOME_PATH": str(kit)}, [], said),
                                  ({"HOME": str(tmp_path)}, ["--strict"], said),                 # no variable set
                                  ({"ASCEND_HOME_PATH": str(marked)}, ["--strict"],
                                   f"PRMG_EMULATOR in {marked} marks an emulator build")):
        run = prmg_forked("run", cases, *strict, "--report", "json", env=env)
        assert (run.returncode, run.stdout) == (2, ""), run.stdout + run.stderr
        (line,) = run.stderr.splitlines()
        assert line.startswith(f"prmg: error: --runner auto runs a CANN toolkit, never the host emulator installed as "
                               f"one, and the toolkit found at {env.get('ASCEND_HOME_PATH', kit)} is the emulator "
                               f"({evidence})"), line
    # (a process of its own: no other emulator)
    asked = prmg_forked("run", cases, "--runner", "emulator", "--strict", "--report", "json",
                        "--report", f"junit:{tmp_path / 'j.xml'}", env={"ASCEND_HOME_PATH": str(kit)})
    report = json.loads(asked.stdout)
    assert (asked.returncode, asked.stderr, report["summary"]["runner"], report["cases"][0]["runner"]) == \
        (0, f"prmg: wrote {tmp_path / 'j.xml'}\n", "emulator", "emulator"), asked.stderr     # nothing else said
    assert str(kit) in asked.stdout and \
        'testsuite name="prmg (host emulator, not an NPU)"' in (tmp_path / "j.xml").read_text()
    assert tk.runner_kind(tk.find_toolkit({"ASCEND_HOME_PATH": str(kit)})) == "emulator"
    own = prmg_forked("run", cases, env={"ASCEND_HOME_PATH": str(emulator.root)})  # its set_env.sh's: chosen, no word
    assert (own.returncode, own.stderr) == (0, "")
    # a copy made before prmg was upgraded ran as-is, without a word, the emulator code of then under this prmg's name:
    # said on stderr, refused under --strict (exit 2); one built by another compiler from these sources (its marker
    # says so) is this prmg's emulator
    stale = tmp_path / "stale"
    shutil.copytree(emulator.root, stale)
    (stale / tk.EMULATOR_MARKER).write_text("0123456789abcdef\n")
    with open(stale / "lib64" / "libnnopbase.so", "ab") as library:
        library.write(b"\0")
    current = emulator.root.name.removeprefix("emulator-")
    said = (f"the emulator installed as a toolkit at {stale} is not this prmg's build of its emulator sources: "
            f"{stale}/lib64/libnnopbase.so is not {emulator.root}/lib64/libnnopbase.so (its PRMG_EMULATOR names "
            f"sources 0123456789abcdef; this prmg's are {current}): the cases run its own code (copy {emulator.root} "
            f"over it, or source {emulator.root}/set_env.sh to run prmg's own build)\n")
    warned = prmg_forked("run", cases, "--runner", "emulator", env={"ASCEND_HOME_PATH": str(stale)})
    assert (warned.returncode, warned.stderr) == (0, f"prmg: warning: {said}"), warned.stdout + warned.stderr
    refused = prmg_forked("run", cases, "--runner", "emulator", "--strict", env={"ASCEND_HOME_PATH": str(stale)})
    assert (refused.returncode, refused.stdout, refused.stderr) == (2, "", f"prmg: error: --strict: {said}")
    doctor = prmg_forked("doctor", "--runner", "emulator", env={"ASCEND_HOME_PATH": str(stale)})
    assert f"\n  warning: {said}" in doctor.stdout, doctor.stdout                  # under the toolkit's lines
    found = tk.find_toolkit({"ASCEND_HOME_PATH": str(stale)})
    (stale / tk.EMULATOR_MARKER).write_text(current + "\n")
    assert tk.stale_emulator(found, emulator) == "" and tk.stale_emulator(tk.find_toolkit(
        {"ASCEND_HOME_PATH": str(kit)}), emulator) == ""                    # the same bytes: no marker needed
    (stale / tk.EMULATOR_MARKER).unlink()
    assert "(no PRMG_EMULATOR file names its sources;" in tk.stale_emulator(found, emulator)


def test_doctor_probes_the_emulator_a_run_would_load_the_copy_installed_as_a_toolkit(tmp_path, emulator):
    """Issue 32 (round 4): ``prmg doctor --runner emulator`` probed prmg's own build in its cache while ``prmg run
    --runner emulator`` runs the copy installed as a toolkit where the search finds one: a copy that cannot even be
    loaded (its nnopbase another library) had doctor say 'runner emulator: usable', exit 0, and every run of it exit 2.
    Doctor now names and judges the copy a run would load (its probe above, as the toolkit's)."""
    from conftest import prmg_forked

    kit = tmp_path / "kit"
    shutil.copytree(emulator.root, kit)                                  # its marker file copied along
    empty = tmp_path / "empty.c"
    empty.write_text("int prmg_not_nnopbase;\n")
    (kit / "lib64" / tk.NNOPBASE_NAME).unlink()
    _library(empty, kit / "lib64" / tk.NNOPBASE_NAME)
    cases = tmp_path / "one.yaml"
    cases.write_text("- {name: one, shape: [1, 1, 2, 8], partial_slice: [0, 8]}\n")
    env = {"ASCEND_HOME_PATH": str(kit)}
    run = prmg_forked("run", cases, "--runner", "emulator", env=env)
    assert run.returncode == 2, run.stdout + run.stderr
    doctor = prmg_forked("doctor", "--runner", "emulator", env=env)
    said = " ".join(doctor.stdout.split())
    assert (doctor.returncode, "runner emulator: NOT usable") == (1, said[said.rindex("runner emulator"):]), said
    assert f"emulator: the copy installed as a toolkit at {kit}, probed above" in said, said
    assert f"host build at {emulator.root}" not in said
    own = prmg_forked("doctor", "--runner", "emulator")                          # nothing names a toolkit: prmg's own
    assert own.returncode == 0 and f"emulator: host build at {emulator.root}" in " ".join(own.stdout.split())


@pytest.mark.parametrize("disguise", ["copies", "runtime", "op library", "marker"])
def test_the_npu_gates_runner_refuses_the_emulator_however_it_is_installed(tmp_path, emulator, disguise):
    """--runner aclnn is what an NPU gate runs (smoke.sh, the CI examples): a toolkit folder of the emulator's
    libraries (copies without the marker file or with it, or only its runtime linked in beside a stand-in's nnopbase
    and operator library, or only its operator library) ran the cases green (exit 0 under --strict), the header saying
    'emulator' or, for the runtime alone, 'aclnn'. It is exit 2 before any case runs, naming the file that gives the
    emulator away (the operator library was the one sign runner_kind read); prmg's own build in its cache, which only
    the emulator's set_env.sh names, still runs under its name."""
    from conftest import prmg_forked
    from test_fail_safe import stand_in

    kit = tmp_path / "kit"
    if disguise == "copies":
        shutil.copytree(emulator.root, kit, ignore=shutil.ignore_patterns(tk.EMULATOR_MARKER))
    elif disguise == "marker":                                      # its marker file copied along
        shutil.copytree(emulator.root, kit)
    else:
        stand_in(kit)
        name = "libascendcl.so" if disguise == "runtime" else "libopapi_transformer.so"
        (kit / "lib64" / name).unlink()
        (kit / "lib64" / name).symlink_to(emulator.root / "lib64" / name)
    evidence = {"copies": f"{kit}/lib64/libascendcl.so defines prmg_emu_initialized",
                "runtime": f"{kit}/lib64/libascendcl.so defines prmg_emu_initialized",
                "op library": f"{kit}/lib64/libopapi_transformer.so defines prmg_emu_applied_faults",
                "marker": f"PRMG_EMULATOR in {kit} marks an emulator build"}[disguise]
    toolkit = tk.find_toolkit({"ASCEND_HOME_PATH": str(kit)})
    assert tk.runner_kind(toolkit) == "emulator" and evidence in tk.emulator_evidence(toolkit)
    cases = tmp_path / "one.yaml"
    cases.write_text("- {name: one, shape: [1, 1, 2, 8], partial_slice: [0, 8]}\n")
    run = prmg_forked("run", cases, "--runner", "aclnn", "--strict", env={"ASCEND_HOME_PATH": str(kit)})
    assert (run.returncode, run.stdout) == (2, ""), run.stdout + run.stderr
    (line,) = run.stderr.splitlines()
    assert line.startswith(f"prmg: error: --runner aclnn runs a CANN toolkit, never the host emulator installed as "
                           f"one, and the toolkit found at {kit} is the emulator ({evidence}"), run.stderr
    own = prmg_forked("run", cases, "--runner", "aclnn", env={"ASCEND_HOME_PATH": str(emulator.root)})  # set_env.sh's
    assert own.returncode == 0 and "results come from the host emulator, not an NPU" in " ".join(own.stdout.split())


def test_the_file_a_symbol_binds_in_is_read_from_the_maps_as_dladdr_says_it(emulator):
    """``bound_ahead`` asked ``dladdr`` for the file of each of the toolkit's strong symbols, and glibc's ``dladdr``
    searches the object's whole symbol table for the nearest symbol at each call: quadratic, 52 s for one library of
    100,000 symbols (a real operator library's order), in every worker at its start (0.34 s now; docs/performance.md).
    ``linkage.file_at`` looks the address up in the process's mappings (``mapped_spans``, a binary search): the same
    file for every symbol of the emulator's libraries, and none for an address no file is mapped at."""
    import ctypes

    from prmg_cli.device import linkage

    dlsym = ctypes.CDLL(None).dlsym
    dlsym.argtypes, dlsym.restype = [ctypes.c_void_p, ctypes.c_char_p], ctypes.c_void_p
    dladdr = linkage._dladdr()
    for path in (emulator.runtime_lib, emulator.nnopbase_lib, emulator.op_lib):
        ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
    starts, spans = linkage.mapped_spans()
    names = sorted(elf.defined_symbols(emulator.runtime_lib, (elf.STB_GLOBAL,)) | elf.defined_symbols(
        emulator.op_lib, (elf.STB_GLOBAL,)))
    addresses = [dlsym(None, name.encode()) or 0 for name in names]
    assert len(names) > 30 and all(addresses)
    assert [os.path.realpath(linkage.file_at(address, starts, spans)) for address in addresses] == \
        [os.path.realpath(linkage._file_of(address, dladdr)) for address in addresses]
    assert linkage.file_at(0, starts, spans) == linkage.file_at(starts[0] - 1, starts, spans) == ""


def test_a_toolkit_in_a_folder_named_in_bytes_that_are_not_utf8_runs_its_own_code(tmp_path, emulator):
    """The emulator built in a folder whose name is not UTF-8 (PRMG_EMULATOR_HOME=b'...\\xff', a Latin-1 name) ran
    nothing: the check of where its functions' code lies read the paths of ``/proc/self/maps`` and ``dladdr`` with
    replacement characters, which name another folder than the toolkit's (``os.fsdecode``'s surrogates), so the
    toolkit "ran code from outside it" (exit 2). The paths read back name the same bytes, and the run passes."""
    import ctypes

    from conftest import prmg
    home = tmp_path / os.fsdecode(b"emu\xff")
    shutil.copytree(emulator.root, home / emulator.root.name, symlinks=True)
    runtime = home / emulator.root.name / "lib64/libascendcl.so"
    library = ctypes.CDLL(str(runtime))
    assert linkage.resolved_outside({"aclInit": library.aclInit}, [os.path.realpath(home)]) == []
    assert str(runtime) in linkage.mapped_libraries() and linkage.file_at(
        ctypes.cast(library.aclInit, ctypes.c_void_p).value, *linkage.mapped_spans()) == str(runtime)
    environ = tmp_path / "environ"
    environ.write_bytes(b"LD_PRELOAD=/x\xff/libhook.so\0")
    assert linkage.preload_entries(str(environ), str(tmp_path / "none"))[0][0] == os.fsdecode(b"/x\xff/libhook.so")
    cases = tmp_path / "one.yaml"
    cases.write_text("- {name: one, shape: [1, 1, 2, 8], partial_slice: [0, 8]}\n")
    run = prmg("run", cases, "--runner", "emulator", env={"PRMG_EMULATOR_HOME": str(home)})
    assert run.returncode == 0 and run.stdout.rstrip().endswith("1 passed, 0 failed"), run.stdout + run.stderr


def test_each_binding_of_a_library_is_read_once_until_the_file_changes(tmp_path):
    """``linkage.taking`` with a preload read the toolkit's ``.dynsym`` twice (``interposers`` for every binding, then
    ``bound_ahead`` for the strong ones: 10^5 names each time on a real operator library). ``defined_symbols`` reads a
    file's binding once per process, keyed on what tells a rebuilt file, and a library rebuilt at the same path is
    read again."""
    source = tmp_path / "lib.c"
    source.write_text("int prmg_strong_b10(void) { return 1; }\n__attribute__((weak)) int prmg_weak_b10(void) "
                      "{ return 2; }\n")
    library = _library(source, tmp_path / "libonce.so")
    before = elf._binding_names.cache_info().misses
    assert elf.defined_symbols(library) == {"prmg_strong_b10", "prmg_weak_b10"}
    assert elf.defined_symbols(library, (elf.STB_GLOBAL,)) == {"prmg_strong_b10"}
    assert elf.defined_symbols(str(library), (elf.STB_WEAK,)) == {"prmg_weak_b10"}
    assert elf._binding_names.cache_info().misses - before == 2                          # strong, then weak: once each
    source.write_text("int prmg_rebuilt_b10(void) { return 3; }\n")
    _library(source, library)
    assert elf.defined_symbols(library, (elf.STB_GLOBAL,)) == {"prmg_rebuilt_b10"}
    assert elf.defined_symbols(tmp_path / "missing.so") == frozenset()


def test_a_tilde_in_the_toolkits_variables_names_the_same_folders_to_prmg_and_to_the_toolkit(tmp_path, emulator,
                                                                                            monkeypatch):
    """A CI file's env: value is expanded by no shell: ASCEND_OPP_PATH=~/opp was stamped and searched as written (the
    header: 'opp: ~/opp (no file of the operator's kernels or tiling)', its vendors' operator library never found)
    and handed to nnopbase as a folder named '~', while ASCEND_HOME_PATH=~/kit was expanded for the root and its
    opp_latest: the record named kernels the toolkit would not read. Both are read with ~ expanded and handed to the
    toolkit so, before aclInit."""
    from conftest import prmg_forked
    from prmg_cli.device import acl

    home = tmp_path / "home"
    kernel = home / "opp/built-in/op_impl/ai_core/tbe/kernel/ascend950/inplace_partial_rotary_mul_grad"
    kernel.mkdir(parents=True)
    (kernel / "k.o").write_bytes(b"0")
    vendor = home / "opp/vendors/customize/op_api/lib"
    vendor.mkdir(parents=True)
    shutil.copy(emulator.op_lib, vendor / "libcust_opapi.so")
    (home / "opp/vendors/config.ini").write_text("load_priority=customize\n")
    cases = tmp_path / "one.yaml"
    cases.write_text("- {name: one, shape: [1, 1, 2, 8], partial_slice: [0, 8]}\n")
    run = prmg_forked("run", cases, "--runner", "emulator", env={"HOME": str(home), "ASCEND_OPP_PATH": "~/opp"})
    header = " ".join(run.stdout.split())                 # the kernel, and the vendor's library of the aclnn layer
    assert run.returncode == 0 and f"opp: {home}/opp (2 files of the operator's kernels" in header, run.stdout
    monkeypatch.setenv("HOME", str(home))
    found = tk.find_toolkit({"ASCEND_HOME_PATH": str(emulator.root), "ASCEND_OPP_PATH": "~/opp"})
    assert (found.op_lib, found.op_lib_source) == (vendor / "libcust_opapi.so",
                                                   "vendors/config.ini load_priority (vendor customize)")
    (home / "kit/opp_latest").mkdir(parents=True)
    kit = tk.Toolkit("aclnn", home / "kit", found.runtime_lib, found.nnopbase_lib, found.op_lib, "test")
    for name, value in (("ASCEND_HOME_PATH", "~/kit"), ("ASCEND_OPP_PATH", "~/opp")):
        monkeypatch.setenv(name, value)
    assert (tk.opp_path(kit), tk.opp_variable(kit)) == (home / "kit/opp_latest", home / "opp")
    acl.prepare_environment(kit)
    assert (os.environ["ASCEND_HOME_PATH"], os.environ["ASCEND_OPP_PATH"]) == (str(home / "kit"), str(home / "opp"))
    assert tk.opp_path(kit) == home / "kit/opp_latest" and tk.toolkit_variable("ASCEND_CUSTOM_OPP_PATH", {}) == ""
