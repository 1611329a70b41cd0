"""Where the libraries come from: CANN toolkit discovery, the operator library search, and the host emulator.

A toolkit is three shared libraries: the runtime (``lib64/libascendcl.so`` or ``libacl_rt.so``), the tensor
library (``lib64/libnnopbase.so``) and an operator library that exports
``aclnnInplacePartialRotaryMulGrad[GetWorkspaceSize]``. Discovery follows ``acl-abi.md``:

  root      = $ASCEND_HOME_PATH, else $ASCEND_TOOLKIT_HOME (a root a variable names is the one used: when it
              cannot serve, the search stops there), else the first of /usr/local/Ascend/ascend-toolkit/latest,
              /usr/local/Ascend/cann (and the same under $HOME) holding the runtime, nnopbase and the operator.
  op library = --op-lib PATH, else the first that exports the operator among
              each $ASCEND_CUSTOM_OPP_PATH entry + /op_api/lib/libcust_opapi.so,
              each load_priority vendor of $ASCEND_OPP_PATH/vendors/config.ini (default opp = root/opp),
              root/lib64/libopapi_transformer.so, root/lib64/libopapi.so.

The operators' kernels and tiling come from the opp folder (``opp_path``): ``$ASCEND_HOME_PATH/opp_latest`` where it
exists, nnopbase's first choice, else ``$ASCEND_OPP_PATH``, else root/opp.

Stub libraries (a path with a ``stub`` or ``devlib`` component) exist only for linking and are never used, and a
process that got a library from another toolkit's folder is refused (``linkage.foreign_libraries``).

``--runner auto`` (``select_runner``) picks the emulator only when nothing suggests a toolkit
(``toolkit_suggested``: no ``ASCEND_*`` variable names one, no default root or install base exists); then it says so
on stderr in one line. A toolkit that is named or found but cannot serve the operator is a usage error naming what
is missing and where it looked, and so is one that is the emulator installed as a toolkit (``copied_emulator``: a copy,
not prmg's own build, which only the emulator's ``set_env.sh`` names): ``--runner emulator`` runs it by name.

The emulator is built from the C sources shipped as package data (``prmg_cli.emulator_src``, mapped to
``runners/emulator/``, and the graph-mode shim's ABI header, ``prmg_cli.geir_src`` = ``runners/geir/``) with gcc +
make, once per source version, into a cache folder (``emulator-<source hash>``).
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterable, Mapping

from .. import files
from ..errors import PrmgError, suggest
from ..files import emulator_cache_base, emulator_sources, geir_sources
from ..ops.targets import BUILDS, LATEST_BUILD
from ..results import plural, read_visible, visible
from ..vocab import TENSORS
from .elf import exports_symbol

OP_SYMBOL = "aclnnInplacePartialRotaryMulGradGetWorkspaceSize"
DEFAULT_ROOTS = ("/usr/local/Ascend/ascend-toolkit/latest", "/usr/local/Ascend/cann")
HOME_ROOTS = ("Ascend/ascend-toolkit/latest", "Ascend/cann")     # non-root installs, under $HOME
RUNTIME_NAMES = ("libascendcl.so", "libacl_rt.so")
NNOPBASE_NAME = "libnnopbase.so"           # in a toolkit's lib64
STUB_COMPONENTS = ("stub", "devlib")
EMULATOR_MARKER = "PRMG_EMULATOR"          # file in the root of an emulator we built (holds the source hash)
EMULATOR_HOOK = "prmg_emu_applied_faults"  # the emulator's operator library's test hook: no CANN library exports it
# What only the emulator's libraries define (no CANN library has a prmg_emu_ symbol): its operator library's test hook
# and its runtime's state, looked for in each library a toolkit loads (``emulator_evidence``).
EMULATOR_SYMBOLS = (EMULATOR_HOOK, "prmg_emu_initialized")
EMULATOR_LIBS = ("libascendcl.so", NNOPBASE_NAME, "libopapi_transformer.so", "libprmg_geir.so")
# The variables that name a toolkit (a set_env.sh sets them, or a user points at a build): any of them set means a
# toolkit is meant, and ``--runner auto`` never runs the emulator instead.
TOOLKIT_VARIABLES = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_OPP_PATH", "ASCEND_CUSTOM_OPP_PATH",
                     "ASCEND_AICPU_PATH")
# Where CANN installs (the driver's /usr/local/Ascend/driver, a toolkit, nnae...) and its non-root form under $HOME:
# either existing says an NPU host, where a toolkit is meant even when no default root holds one.
INSTALL_BASES = ("/usr/local/Ascend",)
HOME_BASE = "Ascend"
NPU_NODES = ("/dev/davinci_manager",)      # the NPU driver's device node: this host has NPUs (its driver loaded)
# nnopbase's first choice of the opp folder, under $ASCEND_HOME_PATH, before $ASCEND_OPP_PATH: where an opp kernel
# package upgraded on its own is installed (acl-abi.md)
OPP_LATEST = "opp_latest"


@dataclass(frozen=True)
class Toolkit:
    """The libraries one runner loads.

    kind: "aclnn" (a toolkit we did not build) or "emulator" (built by prmg from runners/emulator).
    op_lib_source: which rule of the search found ``op_lib``, e.g. "ASCEND_CUSTOM_OPP_PATH",
      "vendors/config.ini load_priority (vendor customize)", "libopapi_transformer.so", "--op-lib".
    env: environment settings a session applies before loading the libraries (the emulator's modes).
    calls: the runner (a key of ``runners.RUNNERS``) whose session runs the cases on these libraries: "aclnn"
      (the aclnn API), "geir" (graph mode), "aclnn+geir" (both, held against each other).
    geir_lib: graph mode's library (``runners/geir/prmg_geir.h``: the shim built for this toolkit, or the
      emulator's twin), None when the runner does not use graph mode; geir_build: how it was made.
    """

    kind: str
    root: Path
    runtime_lib: Path
    nnopbase_lib: Path
    op_lib: Path
    op_lib_source: str
    env: tuple[tuple[str, str], ...] = ()
    calls: str = "aclnn"
    geir_lib: Path | None = None
    geir_build: str = ""


def is_stub_path(path: Path | str) -> bool:
    """True when ``path`` (as given or with links resolved) has a ``stub`` or ``devlib`` component."""
    given = Path(path)
    for candidate in (given, Path(os.path.realpath(given))):     # never raises: a symlink loop stays as it is
        if any(part in STUB_COMPONENTS for part in candidate.parts):
            return True
    return False


def refuse_stub(path: Path | str, what: str = "library") -> None:
    """Raise PrmgError when ``path`` is a stub library (they only exist for linking and crash when called)."""
    if is_stub_path(path):
        raise PrmgError(f"refusing to load the stub {what} {path}: stub/devlib libraries exist only for "
                        f"linking; point at the toolkit's lib64 (source its set_env.sh)")


# ---------------------------------------------------------------------------------------------------------
# Discovery

def _root_candidates(env: Mapping[str, str]) -> list[tuple[str, str | None]]:
    """(where the candidate comes from, path or None when that variable is unset), in precedence order."""
    home = env.get("HOME")
    return [("ASCEND_HOME_PATH", env.get("ASCEND_HOME_PATH") or None),
            ("ASCEND_TOOLKIT_HOME", env.get("ASCEND_TOOLKIT_HOME") or None),
            *[("default", path) for path in DEFAULT_ROOTS],
            *[("default", str(Path(home) / path)) for path in HOME_ROOTS if home]]


def _runtime_in(root: Path) -> Path | None:
    for name in RUNTIME_NAMES:
        if os.path.isfile(root / "lib64" / name):
            return root / "lib64" / name
    return None


def config_vendors(opp: Path) -> list[str]:
    """The vendor names of ``load_priority=a,b,c`` in ``opp/vendors/config.ini``, in order (``#`` starts
    a comment, on its own line or after the value)."""
    try:
        text = (opp / "vendors" / "config.ini").read_text(errors="replace")
    except OSError:
        return []
    for line in text.splitlines():
        key, sep, value = line.split("#", 1)[0].partition("=")
        if sep and key.strip() == "load_priority":
            return [vendor.strip() for vendor in value.split(",") if vendor.strip()]
    return []


CUSTOM_OPP = "ASCEND_CUSTOM_OPP_PATH"


def custom_opp_entries(custom: str) -> list[str]:
    """The folders a value of ``ASCEND_CUSTOM_OPP_PATH`` names, in order, empty entries left out, each as written:
    nnopbase (opbase ``OpKernelLib::GetCustomImplPath``, ``GetCustomVendorName``) and GE (metadef
    ``PluginManager::GetPluginPathFromCustomOppPath``) split the value at ``:`` and read each entry as a path, a
    leading ``~`` not expanded (``~/x`` is a folder named ``~`` under the current one), and so does prmg."""
    return [entry for entry in custom.split(":") if entry]


def custom_opp_note(env: Mapping[str, str]) -> str:
    """One line when an ``ASCEND_CUSTOM_OPP_PATH`` entry starts with ``~`` (a CI file's ``env:`` is expanded by no
    shell): it is read as written, as the toolkit reads it (``custom_opp_entries``), not as the home folder's; ""
    otherwise."""
    tilde = [entry for entry in custom_opp_entries(env.get(CUSTOM_OPP) or "") if entry.startswith("~")]
    if not tilde:
        return ""
    return (f"prmg: note: {CUSTOM_OPP} entry {tilde[0]}{f' (and {len(tilde) - 1} more)' if len(tilde) > 1 else ''} "
            f"is read as written, as nnopbase and GE read it (neither expands ~): {os.path.abspath(tilde[0])}, not "
            f"{os.path.expanduser(tilde[0])}; write the whole path")


def _op_lib_candidates(root: Path, env: Mapping[str, str]) -> list[tuple[str, Path]]:
    """(rule, path) for every place the operator may live, in the documented precedence."""
    candidates = [(CUSTOM_OPP, Path(entry) / "op_api" / "lib" / "libcust_opapi.so")
                  for entry in custom_opp_entries(env.get(CUSTOM_OPP) or "")]
    opp = _opp_folder(root, env)
    for vendor in config_vendors(opp):
        candidates.append((f"vendors/config.ini load_priority (vendor {vendor})",
                           opp / "vendors" / vendor / "op_api" / "lib" / "libcust_opapi.so"))
    candidates.append(("libopapi_transformer.so", root / "lib64" / "libopapi_transformer.so"))
    candidates.append(("libopapi.so", root / "lib64" / "libopapi.so"))
    return candidates


def _library_rejection(path: Path) -> str | None:
    """Why ``path`` cannot serve as the operator library, or None when it can."""
    if not os.path.exists(path):
        return "missing"
    if is_stub_path(path):
        return "refused: stub library"
    if not exports_symbol(path, OP_SYMBOL):
        return f"does not export {OP_SYMBOL}"
    return None


def _find_op_lib(root: Path, env: Mapping[str, str], log: list[str]) -> tuple[str, Path] | None:
    for rule, path in _op_lib_candidates(root, env):
        reason = _library_rejection(path)
        if reason is None:
            log.append(f"  operator library {path} ({rule}): ok")
            return rule, path
        log.append(f"  operator library {path} ({rule}): {reason}")
    return None


def op_lib_file(op_lib: str) -> Path:
    """The file ``--op-lib`` names (``~`` expanded); PrmgError saying why when it is no regular file."""
    path = Path(op_lib).expanduser()
    if not os.path.isfile(path):
        raise PrmgError(f"--op-lib {op_lib}: {files.not_a_file(path)}")
    return path


def _override_op_lib(op_lib: str) -> Path:
    path = Path(op_lib).expanduser()
    refuse_stub(path, "operator library")
    op_lib_file(op_lib)
    if not exports_symbol(path, OP_SYMBOL):
        raise PrmgError(f"--op-lib {op_lib}: does not export {OP_SYMBOL}")
    return path


def _search(env: Mapping[str, str], op_lib: str | None) -> tuple[Toolkit | None, list[str]]:
    """The toolkit the documented search finds (or None), and a line per place looked at."""
    log: list[str] = []
    override = _override_op_lib(op_lib) if op_lib else None
    for origin, value in _root_candidates(env):
        if value is None:                  # set but empty names no folder, yet suggests a toolkit (toolkit_suggested)
            log.append(f"{origin}: {'set but empty' if env.get(origin) == '' else 'not set'}")
            continue
        root = Path(value).expanduser()
        label = f"{origin}={value}" if origin != "default" else value
        toolkit = _serving(root, label, env, override, log)
        if toolkit is not None:
            return toolkit, log
        if origin != "default":                 # a named root is the one meant: never another in its place
            log.append(f"search stopped: {origin} names the toolkit (unset it to search the default locations)")
            break
    return None, log


def _serving(root: Path, label: str, env: Mapping[str, str], override: Path | None, log: list[str]) -> Toolkit | None:
    """The toolkit at ``root`` when it holds the runtime, nnopbase and (``override`` or the search's) operator
    library, else None; a line per finding goes to ``log``."""
    if not os.path.isdir(root):                      # os.path: never raises (a symlink loop, a name too long)
        why = files.stat_problem(root) or "not a folder"
        log.append(f"{label}: rejected: {'no such folder' if why == 'no such file' else why}")
        return None
    runtime, nnopbase = _runtime_in(root), root / "lib64" / NNOPBASE_NAME
    if runtime is None or not os.path.isfile(nnopbase):
        missing = [name for name, ok in (("lib64/libascendcl.so (or libacl_rt.so)", runtime),
                                         (f"lib64/{NNOPBASE_NAME}", os.path.isfile(nnopbase))) if not ok]
        log.append(f"{label}: rejected: {' and '.join(missing)} missing")
        return None
    if is_stub_path(runtime) or is_stub_path(nnopbase):
        log.append(f"{label}: rejected: refused stub libraries")
        return None
    log.append(f"{label}: runtime {runtime}, {nnopbase}")
    if override:
        log.append(f"  operator library {override} (--op-lib): ok")
    found = ("--op-lib", override) if override else _find_op_lib(root, env, log)
    if found is None:
        log.append(f"{label}: rejected: no library exports {OP_SYMBOL}")
        return None
    kind = "emulator" if os.path.isfile(root / EMULATOR_MARKER) else "aclnn"
    return Toolkit(kind, root, runtime, nnopbase, found[1], found[0])


@functools.lru_cache(maxsize=None)
def _emulator_symbol(library: Path) -> str:
    """The first of ``EMULATOR_SYMBOLS`` the library at ``library`` defines, "" for none."""
    return next((name for name in EMULATOR_SYMBOLS if exports_symbol(library, name)), "")


def emulator_evidence(toolkit: Toolkit) -> str:
    """Why the libraries of ``toolkit`` are prmg's host emulator, "" when nothing says so: the marker file of an
    emulator build in its root, else the first of its runtime, nnopbase and operator library that defines one of
    ``EMULATOR_SYMBOLS`` (``lib64/libascendcl.so defines prmg_emu_initialized``): a copy of an emulator build
    without its marker, or the emulator's runtime or operator library linked or copied into a toolkit's folder."""
    root = getattr(toolkit, "root", None)
    if getattr(toolkit, "kind", "") == "emulator" or root and os.path.isfile(Path(root) / EMULATOR_MARKER):
        return f"{EMULATOR_MARKER} in {root} marks an emulator build"
    for role in ("runtime_lib", "nnopbase_lib", "op_lib"):                 # (a test's stand-in may have none)
        library = getattr(toolkit, role, None)
        symbol = _emulator_symbol(Path(library)) if library else ""
        if symbol:
            return f"{library} defines {symbol}, which only the host emulator does"
    return ""


def own_build(root: Path, env: Mapping[str, str]) -> bool:
    """Whether ``root`` is an emulator prmg built, where it built it (marked, in ``emulator_cache_base``): what the
    emulator's own ``set_env.sh`` names, never a toolkit's place."""
    return os.path.isfile(root / EMULATOR_MARKER) and \
        os.path.realpath(root.parent) == os.path.realpath(emulator_cache_base(env))


def copied_emulator(toolkit: Toolkit, env: Mapping[str, str]) -> str:
    """``emulator_evidence`` of ``toolkit`` unless it is prmg's own build in its cache (``own_build``): why the
    toolkit the search found, where a variable names a toolkit or at a default root, is the emulator installed as a
    toolkit (a copy, its marker file copied along or not, or its runtime or operator library linked into a toolkit's
    folder); "" for a CANN toolkit and for prmg's own build."""
    return "" if own_build(toolkit.root, env) else emulator_evidence(toolkit)


def stale_emulator(toolkit: Toolkit, own: Toolkit) -> str:
    """Why the emulator installed as ``toolkit`` (``copied_emulator``) is not ``own``, prmg's build of this version
    of its emulator sources (``emulator_toolkit``): "" when its runtime, nnopbase and operator library are ``own``'s
    byte for byte, or its marker file names this version of the sources (built by another compiler); else the first
    library that differs, and the sources its marker names, if any. A copy made before prmg was upgraded runs the
    emulator code of then, unlike what doctor, its README and the fault checks of this prmg describe."""
    differs = next((getattr(toolkit, role) for role in ("runtime_lib", "nnopbase_lib", "op_lib")
                    if not _same_bytes(getattr(toolkit, role), own.root / "lib64" / getattr(own, role).name)), None)
    built = _marked_sources(toolkit.root) if differs is not None else ""
    current = own.root.name.removeprefix("emulator-")                # emulator_toolkit's folder: the source hash
    if differs is None or built == current:
        return ""
    named = f"its {EMULATOR_MARKER} names sources {built}" if built else f"no {EMULATOR_MARKER} file names its sources"
    return f"{differs} is not {own.root / 'lib64' / differs.name} ({named}; this prmg's are {current})"


def stale_copy(toolkit: Toolkit, env: Mapping[str, str]) -> str:
    """What a run of the emulator by name (``--runner emulator``, ``emulator-geir``, ``emulator+geir``) says of
    ``toolkit`` when it is a copy of the emulator installed as a toolkit (``copied_emulator``) that is not this prmg's
    build of its emulator sources (``stale_emulator``); "" for any other toolkit."""
    if not copied_emulator(toolkit, env):
        return ""
    own = emulator_toolkit(None, env)
    stale = stale_emulator(toolkit, own)
    return stale and (f"the emulator installed as a toolkit at {toolkit.root} is not this prmg's build of its "
                      f"emulator sources: {stale}: the cases run its own code (copy {own.root} over it, or source "
                      f"{own.root / 'set_env.sh'} to run prmg's own build)")


def _marked_sources(root: Path) -> str:
    """The source hash the marker file of the emulator build at ``root`` holds, "" when it has none to read."""
    try:
        return files.read_regular(root / EMULATOR_MARKER, 256).decode(errors="replace").strip()
    except PrmgError:
        return ""


def _same_bytes(first: Path, second: Path) -> bool:
    """Whether the files at ``first`` and ``second`` hold the same bytes (False when either cannot be read)."""
    try:
        return os.path.getsize(first) == os.path.getsize(second) and first.read_bytes() == second.read_bytes()
    except OSError:
        return False


def runner_kind(toolkit: Toolkit) -> str:
    """What runs the cases, as reports and records name it: the toolkit's ``kind``, but ``emulator`` for one that
    ``emulator_evidence`` finds to be the emulator: a copy of an emulator build without its marker, installed where a
    toolkit belongs, or a toolkit whose runtime or operator library is the emulator's, runs on the host, never on an
    NPU."""
    kind = getattr(toolkit, "kind", "")
    return "emulator" if kind == "emulator" or emulator_evidence(toolkit) else kind


def toolkit_suggested(env: Mapping[str, str]) -> list[str]:
    """What suggests that a CANN toolkit is meant here, as ``NAME=value`` or the folder: each variable of
    ``TOOLKIT_VARIABLES`` that is set (even empty: ``ASCEND_HOME_PATH=$TYPO``), each other ``ASCEND_*`` variable
    holding a path (``ASCEND_HOME=/usr/local/Ascend``; not ``ASCEND_RT_VISIBLE_DEVICES=0``), each ``LD_LIBRARY_PATH``
    folder holding a CANN runtime (``RUNTIME_NAMES``: a toolkit's ``lib64`` set by hand, a container's ``ENV``), but
    none naming a folder of an emulator build (the ``opp`` a session of the emulator sets); each default root and
    install base (``INSTALL_BASES``, ``$HOME/Ascend``) and NPU device node (``NPU_NODES``) that exists. [] when
    nothing does (the emulator may stand in)."""
    others = sorted(name for name in env if name.startswith("ASCEND_") and name not in TOOLKIT_VARIABLES
                    and "/" in env[name])
    named = [f"{name}={env[name]}" for name in (*TOOLKIT_VARIABLES, *others)
             if name in env and not (env[name] and _in_emulator(env[name]))]
    searched = [f"LD_LIBRARY_PATH's {entry}" for entry in dict.fromkeys(env.get("LD_LIBRARY_PATH", "").split(":"))
                if entry and not _in_emulator(entry)
                and any(os.path.isfile(os.path.join(entry, name)) for name in RUNTIME_NAMES)]
    home = env.get("HOME")
    places = [path for origin, path in _root_candidates(env) if origin == "default" and path] + \
        [*INSTALL_BASES, *([str(Path(home) / HOME_BASE)] if home else []), *NPU_NODES]
    return named + searched + [path for path in places if os.path.exists(path)]


def _in_emulator(path: str) -> bool:
    """Whether ``path`` is an emulator build's root or a folder right under it (its ``opp``)."""
    folder = Path(path).expanduser()
    return any(os.path.isfile(place / EMULATOR_MARKER) for place in (folder, folder.parent))


def toolkit_variable(name: str, env: Mapping[str, str]) -> str:
    """The variable ``name`` of ``env`` with a leading ``~`` expanded, as the root is (``_search``); "" when unset or
    empty. What prmg reads a toolkit's folders from and hands the toolkit before ``aclInit``
    (``acl.prepare_environment``): a CI file's ``env:`` value is expanded by no shell, and nnopbase would read
    ``~/opp`` as a folder named ``~`` in the current one. ``~nobody`` (no such user) stays as it is."""
    value = env.get(name) or ""
    return os.path.expanduser(value) if value else ""


VISIBLE = "ASCEND_RT_VISIBLE_DEVICES"
NO_DEVICE = "the runtime reports no device"


def chips_not_shown(count: int, env: Mapping[str, str] = os.environ) -> str | None:
    """Why ``$ASCEND_RT_VISIBLE_DEVICES`` names more chips (its entries, comma-separated) than the runtime shows,
    ``count``, or holds text the runtime never reads (``results.read_visible``: ``0-3``, ``0 1 2 3`` and ``1;2`` show
    one chip), or None: the runtime reads the list up to its first id the host lacks (a chip the driver no longer
    enumerates), repeated or not a number (``-1``: none), and shows only the chips before it, so ``--devices all``
    would skip the others without a word (a job given chips 0 and 7 tested chip 0; one given 0-3 tested chip 0). A
    list the runtime shows whole, or none, passes. The one rule: ``--devices all`` refuses it (``suite.parse_devices``),
    a device it hides is named with it (``--devices 1``; a session that cannot open its device: ``acl.AclSession``),
    ``prmg doctor`` says it (exit 1)."""
    value = env.get(VISIBLE, "")
    named = [entry for entry in value.split(",") if entry.strip()]
    chips, unread = read_visible(value)
    if len(named) > count:
        return (f"{VISIBLE}={visible(value)} names {plural(len(named), 'chip')}, the runtime shows {count}: a chip "
                f"it names is missing (the driver no longer enumerates it, or this host has no such chip) or an entry "
                f"is repeated or no id, and the runtime reads the list only up to there; fix {VISIBLE}")
    if unread:
        return (f"{VISIBLE}={visible(value)}: the runtime reads it as {plural(len(chips), 'chip')} "
                f"({', '.join(chips) or 'none'}) and never reads {visible(unread)!r}: the list is chip ids separated "
                f"by commas, each once (0,1,2,3: no ranges, no other separator); fix {VISIBLE}")
    return None


def _opp_folder(root: Path, env: Mapping[str, str]) -> Path:
    """``$ASCEND_OPP_PATH`` (``toolkit_variable``), else ``root/opp``."""
    return Path(toolkit_variable("ASCEND_OPP_PATH", env) or root / "opp")


def opp_variable(toolkit: Toolkit, env: Mapping[str, str] | None = None) -> Path:
    """``$ASCEND_OPP_PATH``, else ``<root>/opp`` (``_opp_folder``: ``~`` expanded): what the runner sets the variable
    to before ``aclInit`` (``acl.prepare_environment``), and the folder of the vendors the operator library's search
    reads."""
    return _opp_folder(toolkit.root, os.environ if env is None else env)


def opp_path(toolkit: Toolkit, env: Mapping[str, str] | None = None) -> Path:
    """The opp folder nnopbase reads the operators' kernels and tiling from (acl-abi.md): ``$ASCEND_HOME_PATH/``
    ``OPP_LATEST`` when that is a folder (an opp kernel package upgraded on its own lands there, and is preferred),
    else ``opp_variable``; both variables read by ``toolkit_variable``, as the runner hands them to the toolkit."""
    env = os.environ if env is None else env
    home = toolkit_variable("ASCEND_HOME_PATH", env)
    latest = os.path.join(home, OPP_LATEST) if home else ""
    return Path(latest) if latest and os.path.isdir(latest) else opp_variable(toolkit, env)


def find_toolkit(env: Mapping[str, str] | None = None, op_lib: str | None = None) -> Toolkit | None:
    """The installed toolkit (root and operator library by the documented precedence), or None.

    Raises PrmgError when ``op_lib`` is given but is missing, a stub, or lacks the operator.
    """
    return _search(os.environ if env is None else env, op_lib)[0]


def explain_search(env: Mapping[str, str] | None = None, op_lib: str | None = None) -> list[str]:
    """One line per place the search looked at and what it found there (for ``prmg doctor``)."""
    try:
        toolkit, log = _search(os.environ if env is None else env, op_lib)
    except PrmgError as error:
        return [str(error)]
    if toolkit is None:
        log.append("no CANN toolkit found")
    return log


# ---------------------------------------------------------------------------------------------------------
# The emulator: built on first use from the shipped C sources

SOURCE_SUFFIXES = (".c", ".h", ".cpp")
SOURCE_NAMES = ("Makefile",)


def _source_files(folder: Path) -> list[Path]:
    return sorted(path for path in folder.rglob("*") if path.is_file()
                  and (path.suffix in SOURCE_SUFFIXES or path.name in SOURCE_NAMES))


def sources_hash(*folders: Path) -> str:
    """A short sha256 over the relative names and contents of the sources in ``folders`` (the emulator's, and the
    graph-mode header its twin compiles against)."""
    digest = hashlib.sha256()
    for folder in folders:
        for path in _source_files(folder):
            digest.update(str(path.relative_to(folder)).encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _emulator_complete(root: Path) -> bool:
    return os.path.isfile(root / EMULATOR_MARKER) and all(os.path.isfile(root / "lib64" / name)
                                                          for name in EMULATOR_LIBS)


# What make surely takes in a path: a space, a colon, '$', '%', '#', '=', ',' a quote or a control character breaks a
# Makefile's targets, variables or function calls (a checkout under "~/My Projects" could not build the emulator).
_MAKE_SAFE = re.compile(r"[A-Za-z0-9_./-]+")


def _make_safe_temp() -> str:
    """A folder for the build's links whose path make takes: the system's temporary folder, else /tmp."""
    folder = tempfile.gettempdir()
    return folder if _MAKE_SAFE.fullmatch(folder) else "/tmp"


def _make_names(links: str, paths: Mapping[str, Path]) -> dict[str, str]:
    """Each of ``paths`` as make may name it: itself when make takes it (``_MAKE_SAFE``), else a symlink to it in
    ``links`` (make's ``abspath`` keeps a link's name; the libraries find each other by ``$ORIGIN``)."""
    named = {}
    for key, path in paths.items():
        named[key] = str(path)
        if not _MAKE_SAFE.fullmatch(named[key]):
            named[key] = os.path.join(links, key)
            os.symlink(os.path.abspath(path), named[key])       # a relative path would name one inside links
    return named


def _name_the_target(target: Path, link: str) -> None:
    """The toolkit files that name the folder they were built into (``set_env.sh``, the install info) made to name
    ``target``, not the ``link`` make built through (in ``set_env.sh``'s double quotes, with ``\\ $ ` "`` escaped)."""
    for path in [target / "set_env.sh", *target.glob("*-linux/ascend_toolkit_install.info")]:
        if path.is_file():
            quoted = path.name == "set_env.sh"
            name = re.sub(r'([\\$`"])', r"\\\1", str(target)) if quoted else str(target)
            text = path.read_text(encoding="utf-8", errors="surrogateescape").replace(link, name)
            path.write_text(text, encoding="utf-8", errors="surrogateescape")


def _build_emulator(sources: Path, target: Path, source_hash: str) -> None:
    """``make -f sources/Makefile OUT=target GEIR=<geir_sources()>`` under an exclusive lock, each folder named
    through a symlink of a make-safe name when its own is not (``_make_names``); the marker file is written last.

    Concurrent builders wait for each other, and the second finds the work done.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f"{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _emulator_complete(target):
            return
        target.mkdir(exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="prmg-emulator-", dir=_make_safe_temp()) as links:
            named = _make_names(links, {"src": sources, "geir": geir_sources(), "out": target})
            try:
                result = subprocess.run(["make", "-f", f"{named['src']}/Makefile", f"OUT={named['out']}",
                                         f"GEIR={named['geir']}"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True, errors="replace", timeout=600)
            except FileNotFoundError:
                raise PrmgError("building the host emulator needs make and gcc, and make was not found") from None
            except subprocess.TimeoutExpired:
                raise PrmgError("building the host emulator took longer than 10 minutes") from None
            if named["out"] != str(target):
                _name_the_target(target, named["out"])
        if result.returncode != 0:
            tail = "\n".join(result.stdout.strip().splitlines()[-20:])
            raise PrmgError(f"building the host emulator failed (make exit {result.returncode}):\n{tail}")
        missing = [name for name in EMULATOR_LIBS if not os.path.isfile(target / "lib64" / name)]
        if missing:
            raise PrmgError(f"building the host emulator produced no {', '.join(missing)} in {target}/lib64")
        marker = target / f"{EMULATOR_MARKER}.tmp"
        marker.write_text(source_hash + "\n")
        os.replace(marker, target / EMULATOR_MARKER)


def emulator_toolkit(modes: Iterable[int] | None = None, env: Mapping[str, str] | None = None) -> Toolkit:
    """The host emulator, built first when this version of its sources has not been built yet.

    modes: rotary modes to switch on (sets PRMG_EMU_MODES for the sessions); None keeps the emulator's
    default (interleave only) or whatever PRMG_EMU_MODES the process already has.
    """
    sources = emulator_sources()
    source_hash = sources_hash(sources, geir_sources())
    root = emulator_cache_base(env) / f"emulator-{source_hash}"
    if not _emulator_complete(root):
        try:
            _build_emulator(sources, root, source_hash)
        except OSError as error:
            problem = files.not_a_folder(root.parent)            # a symlink loop, a file: not "file exists"
            why = f"{root.parent}: {problem}" if problem else files.os_reason(error)
            raise PrmgError(f"cannot build the host emulator in {root}: {why} "
                            f"(set PRMG_EMULATOR_HOME to a writable folder)") from None
    lib64 = root / "lib64"
    return Toolkit("emulator", root, lib64 / "libascendcl.so", lib64 / NNOPBASE_NAME,
                   lib64 / "libopapi_transformer.so", "libopapi_transformer.so", _modes_env(modes))


def emulator_fault_names() -> tuple[str, ...]:
    """The fault names the emulator knows: the ``{"name", FAULT_...}`` entries of its ``faults.c`` table."""
    text = (emulator_sources() / "faults.c").read_text(encoding="utf-8")
    return tuple(re.findall(r'\{"([a-z0-9_]+)",\s*FAULT_[A-Z0-9_]+\}', text))


def _readme_table(section: str) -> list[list[str]]:
    """The body rows (cells stripped) of the first table under ``## section`` of the emulator's README, the one
    home of what its faults and variables do."""
    text = (emulator_sources() / "README.md").read_text(encoding="utf-8")
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    rows = [[cell.strip() for cell in line.strip().strip("|").split(" | ")]
            for line in body.splitlines() if line.startswith("| ")]
    return rows[1:]                                   # after the header row


def emulator_fault_effects() -> dict[str, str]:
    """Each fault the emulator's README describes -> its effect (the README's words, without markup)."""
    effects = {}
    for names, effect in _readme_table("Faults (for prmg's own tests)"):
        for name in re.findall(r"`([a-z0-9_]+)`", names):
            effects[name] = effect.replace("`", "")
    return effects


def emulator_variables() -> dict[str, str]:
    """Each ``PRMG_EMU_*`` variable of the emulator's README -> what it does and when the emulator reads it."""
    return {name.strip("`"): f"{meaning.replace('`', '')} (read: {read.replace('`', '')})"
            for name, read, meaning in _readme_table("Environment") if name.startswith("`PRMG_EMU_")}


def _runtime_constant(name: str) -> int:
    """The number the emulator's ``runtime.c`` defines as ``name``."""
    text = (emulator_sources() / "runtime.c").read_text(encoding="utf-8")
    return int(re.search(rf"#define {name} (\d+)", text)[1])


def emulator_max_devices() -> int:
    """The most physical devices the emulator has: its ``runtime.c``'s ``MAX_DEVICES``."""
    return _runtime_constant("MAX_DEVICES")


def emulator_soc_name_size() -> int:
    """The bytes of the emulator's SoC name buffer, its final NUL included: its ``runtime.c``'s ``SOC_NAME_SIZE``."""
    return _runtime_constant("SOC_NAME_SIZE")


def check_emulator_env(env: Mapping[str, str]) -> None:
    """Raise PrmgError, before any case runs, for what the emulator would refuse at every call, ignore or misread:
    an unknown fault of ``PRMG_EMU_FAULT`` (a comma list; each named, an empty one too); a
    ``PRMG_EMU_FAULT_SHAPE`` that is not ``B,S,N,D`` in the digits 0-9 (at most 18 each: strtoll reads more as
    INT64_MAX); a ``PRMG_EMU_DEVICES`` that is not a count from 0 to ``emulator_max_devices`` (the emulator reads
    ``2x`` as 1 and clamps more); a ``PRMG_EMU_MODES`` that is not a comma list of 0..3; a ``PRMG_EMU_FAULT_DEVICE``
    that is no device id; a ``PRMG_EMU_DEVICE_MEMORY`` that is no byte count (with a K, M or G suffix), which the
    emulator would take as its default; a ``PRMG_EMU_BEYOND_GUARD`` that is not ``TENSOR:BYTES``, which the emulator's
    ``write_beyond_guard`` would meet with a device fault; a ``PRMG_EMU_BUILD`` that names no build of
    ``targets.BUILDS`` (the emulator refuses every call with 561000, which read as the toolkit refusing the cases'
    mode); a ``PRMG_EMU_SOC`` that is not printable ASCII within the emulator's ``SOC_NAME_SIZE`` (it cuts a longer
    name and the header named none)."""
    faults = env.get("PRMG_EMU_FAULT", "")
    known = emulator_fault_names()
    unknown = [name for name in faults.removesuffix(",").split(",") if name not in known] if faults else []
    if unknown:                 # an empty one too (',,', a leading ','), which the emulator refuses at every call
        raise PrmgError(f"PRMG_EMU_FAULT: unknown emulator fault {', '.join(map(repr, unknown))}"
                        f"{suggest(unknown[0], known)} (known: {', '.join(known)})")
    shape, devices, modes, device, memory = (env.get(name, "") for name in (
        "PRMG_EMU_FAULT_SHAPE", "PRMG_EMU_DEVICES", "PRMG_EMU_MODES", "PRMG_EMU_FAULT_DEVICE",
        "PRMG_EMU_DEVICE_MEMORY"))
    if shape and not re.fullmatch(r"[0-9]{1,18}(,[0-9]{1,18}){3}", shape):        # strtoll: at most INT64_MAX
        raise PrmgError(f"PRMG_EMU_FAULT_SHAPE must be B,S,N,D (four integers >= 0), got {shape!r}")
    most = emulator_max_devices()
    if devices and not (re.fullmatch(r"[0-9]{1,6}", devices) and int(devices) <= most):
        raise PrmgError(f"PRMG_EMU_DEVICES must be a device count from 0 to {most}, got {devices!r}")
    if modes and not re.fullmatch(r"[0-3](,[0-3])*", modes):
        raise PrmgError(f"PRMG_EMU_MODES must be a comma list of the modes 0..3 (e.g. 0,1), got {modes!r}")
    if device and not re.fullmatch(r"[0-9]{1,9}", device):
        raise PrmgError(f"PRMG_EMU_FAULT_DEVICE must be a device id (digits 0-9), got {device!r}")
    size = re.fullmatch(r"([0-9]{1,20})([KMG]?)", memory)
    if memory and not (size and int(size[1]) << {"": 0, "K": 10, "M": 20, "G": 30}[size[2]] < 2**64):
        raise PrmgError(f"PRMG_EMU_DEVICE_MEMORY must be a byte count, or one with a K, M or G suffix (e.g. 64G), "
                        f"got {memory!r}")
    build, soc = env.get("PRMG_EMU_BUILD", ""), env.get("PRMG_EMU_SOC", "")
    if build and build not in BUILDS:
        raise PrmgError(f"PRMG_EMU_BUILD must be {', '.join(list(BUILDS)[:-1])} or {LATEST_BUILD} (the upstream "
                        f"build the emulator follows), got {build!r}{suggest(build, BUILDS)}")
    if soc and not (soc.isascii() and soc.isprintable() and len(soc) < emulator_soc_name_size()):
        raise PrmgError(f"PRMG_EMU_SOC must be a chip's name of at most {emulator_soc_name_size() - 1} printable "
                        f"ASCII characters (e.g. Ascend950PR_9589), got {soc[:80]!r}")
    beyond = env.get("PRMG_EMU_BEYOND_GUARD", "")
    guarded = (*TENSORS, "workspace")
    if beyond and not re.fullmatch(rf"({'|'.join(guarded)}):-?[0-9]{{1,18}}", beyond):
        raise PrmgError(f"PRMG_EMU_BEYOND_GUARD must be TENSOR:BYTES, TENSOR {', '.join(guarded[:-1])} or "
                        f"{guarded[-1]} (e.g. cos:4096, or dy:-64 before dy), got {beyond!r}")


def _modes_env(modes: Iterable[int] | None) -> tuple[tuple[str, str], ...]:
    if modes is None:
        return ()
    return (("PRMG_EMU_MODES", ",".join(str(int(mode)) for mode in sorted(set(modes)))),)


# ---------------------------------------------------------------------------------------------------------
# Runner selection

def select_runner(runner: str, op_lib: str | None = None, env: Mapping[str, str] | None = None,
                  modes: Iterable[int] | None = None, by_name: str = "emulator") -> Toolkit:
    """The toolkit of a runner (``runners.RUNNERS``): ``runner`` is auto, aclnn, emulator, geir or aclnn+geir, a name
    ``runners.check_runner`` (the one check of ``--runner``) let through; ``by_name`` the runner making its calls on
    the host emulator by name, which its usage errors suggest (``emulator``; graph mode's ``emulator-geir``,
    ``emulator+geir``).

    auto: the installed toolkit when the search finds one, but a PrmgError when that toolkit is the emulator
    (``emulator_evidence``) installed as a toolkit (``copied_emulator``: a variable names it or it lies at a default
    root, so a toolkit is meant, and auto runs the emulator only where nothing suggests one); else, when something
    suggests a toolkit (``toolkit_suggested``: a variable names one, a default root exists) or ``--op-lib`` is given,
    a PrmgError naming what suggests it and why it cannot serve; else the emulator (``EMULATOR_FALLBACK`` says so on
    stderr: ``suite.settings_for``). aclnn: the installed toolkit, or a PrmgError naming where it looked, or why the
    toolkit found is the emulator installed as one (an NPU gate never runs a copy). geir, aclnn+geir (graph mode's
    runners): as auto, the emulator installed as a toolkit refused alike. emulator (also emulator-geir, emulator+geir):
    the emulator installed as a toolkit where the search finds one (``copied_emulator``: the stand-in asked for by
    name), else prmg's own build (``modes`` switched on).
    """
    env = os.environ if env is None else env
    if runner == "emulator":
        if op_lib:
            raise PrmgError("--op-lib applies to a CANN toolkit, not to --runner emulator")
        toolkit = _search(env, None)[0]
        if toolkit is None or not copied_emulator(toolkit, env):
            return emulator_toolkit(modes, env)
    else:
        toolkit, log = _search(env, op_lib)
    refusing = runner != "emulator"           # every runner but the emulator's (emulator-geir, +geir pass "emulator")
    evidence = copied_emulator(toolkit, env) if toolkit is not None and refusing else ""
    if evidence:
        raise PrmgError(f"--runner {runner} runs a CANN toolkit, never the host emulator installed as one, and the "
                        f"toolkit found at {toolkit.root} is the emulator ({evidence}): point ASCEND_HOME_PATH at "
                        f"the CANN toolkit (source its set_env.sh), or run the emulator with --runner {by_name}")
    if toolkit is not None:
        if toolkit.kind == "emulator" and modes is not None:
            toolkit = replace(toolkit, env=_modes_env(modes))
        return toolkit
    looked = "; ".join(line.strip() for line in log)
    suggested = toolkit_suggested(env)
    if runner == "aclnn" or op_lib:
        raise PrmgError(f"no CANN toolkit found (looked in {looked}); source the toolkit's set_env.sh "
                        f"or set ASCEND_HOME_PATH")
    if suggested:
        raise PrmgError(f"--runner {runner}: a CANN toolkit is meant here ({', '.join(suggested)}) but none can run "
                        f"the operator (looked in {looked}); fix the toolkit (source its set_env.sh), or ask for the "
                        f"host emulator with --runner {by_name}")
    return emulator_toolkit(modes, env)


# The one stderr line of a runner falling back to the emulator (no toolkit found, nothing suggests one), within 80
# columns as it is printed on every such run (``--runner aclnn`` refuses to fall back: docs/runners.md).
EMULATOR_FALLBACK = "prmg: no CANN toolkit named or installed: running the host emulator, not an NPU"
