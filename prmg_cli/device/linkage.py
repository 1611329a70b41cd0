"""A worker's dynamic linkage: what the process really mapped and bound to, read back after the toolkit's
libraries are loaded.

- **Preloaded libraries** (``preloaded``): the files each source of ``SOURCES`` names (``LD_PRELOAD`` and
  ``LD_AUDIT`` as the process started with them: ``/proc/self/environ``; ``/etc/ld.so.preload``) that the process
  mapped. The dynamic linker puts a preloaded library first in the global scope, so every call between libraries
  (the operator library's own calls into the runtime, nnopbase, its tiling) goes to a preloaded definition of the
  same name; an rtld-audit library (``LD_AUDIT``) sees every binding and may bind it elsewhere (``la_symbind64``)
  or load another file for a library searched (``la_objsearch``): either can run something else than the toolkit's
  code while every header names the toolkit.
- **Interposers** (``interposers``): each preloaded library with what it takes of the toolkit's calls, as its
  source's ``takes`` says: for a preload, the symbols it defines that a library of the toolkit (a mapped file under
  its root, its operator library, its graph library) also defines, leaving out those a system library defines too
  (``malloc`` of a preloaded allocator, libstdc++'s ``operator new``); for an audit library, the rebinding hooks it
  defines (``AUDIT_HOOKS``); nothing of a library from the system's folders (the distribution's ``libgomp``,
  ``libjemalloc``). A run records every preloaded library in its header and an interposer among its settings;
  ``--strict`` refuses an interposer (``refuse_interposers``), and without it the run goes on, saying so (a tracer
  or sanitizer hooking the runtime).
- **Another toolkit's files** (``foreign_libraries``): a library mapped from another toolkit's ``lib64`` in place of
  this toolkit's file of that name, however it came in; refused (``refuse_foreign``).
- **Resolution** (``resolved_outside``): where ``dladdr`` says each function prmg calls lies; one outside the
  toolkit's folders (a thin ``libascendcl.so`` whose implementation came from another toolkit's folder through a
  RUNPATH or ``LD_LIBRARY_PATH``) is refused by the caller (``acl``).
"""

from __future__ import annotations

import bisect
import ctypes
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Mapping, NamedTuple

from ..errors import PrmgError
from .elf import STB_GLOBAL, bound_by_name, defined_symbols
from .toolkit import NNOPBASE_NAME, RUNTIME_NAMES, Toolkit, opp_path, opp_variable

PRELOAD_FILE = "/etc/ld.so.preload"
# The rtld-audit hooks that change where a call goes (``man 7 rtld-audit``): a symbol's binding (``la_symbind*``, a
# PLT entry's ``la_<arch>_gnu_pltenter``) or the file loaded for a library searched (``la_objsearch``).
AUDIT_HOOK = re.compile(r"la_symbind(32|64)|la_objsearch|la_\w+_gnu_pltenter")


def _defines_the_toolkits(defined: frozenset, toolkits: frozenset) -> frozenset:
    """What a preload takes: the toolkit's symbols it defines (first in the global scope, its definitions win)."""
    return defined & toolkits


def _audit_hooks(defined: frozenset, toolkits: frozenset) -> frozenset:
    """What an audit library takes: its ``AUDIT_HOOK`` functions (any binding may go where they say)."""
    return frozenset(name for name in defined if AUDIT_HOOK.fullmatch(name))


@dataclass(frozen=True)
class Source:
    """Where the dynamic linker takes libraries from ahead of the toolkit's: ``name``, a variable of the environment
    the process started with or (``file``) a file listing them, and what such a library ``takes`` of the toolkit's
    calls (the symbols it defines, the toolkit's symbols -> the names through which it takes them), and whether it
    takes a call only where a library of the toolkit binds that name through the dynamic linker (``by_name``: a
    preload's definitions) or whatever the toolkit binds (an audit library's hooks see every binding)."""

    name: str
    takes: Callable[[frozenset, frozenset], frozenset]
    file: bool = False
    by_name: bool = True


SOURCES = (Source("LD_PRELOAD", _defines_the_toolkits), Source(PRELOAD_FILE, _defines_the_toolkits, file=True),
           Source("LD_AUDIT", _audit_hooks, by_name=False))
# The system's library folders (the dynamic linker's trusted ones, their multiarch folders inside): a library preloaded
# from there is the distribution's (an allocator, libgomp, a sanitizer's runtime), recorded but never an interposer,
# though it may define what a toolkit's library exports too (OpenMP linked in statically, say).
SYSTEM_FOLDERS = ("/lib", "/lib64", "/usr/lib", "/usr/lib64")
MAX_NAMED = 5                       # symbols named per interposer in a message or header


def mapped_libraries(maps: str = "/proc/self/maps") -> list[str]:
    """The shared libraries (``.so`` in the name) mapped in the process whose maps ``maps`` is, each once, in order;
    [] where it cannot be read (not Linux)."""
    seen: dict[str, None] = {}
    for _, _, path in _mapped_files(maps):
        if ".so" in os.path.basename(path):
            seen.setdefault(path, None)
    return list(seen)


def _mapped_files(maps: str) -> list[tuple[int, int, str]]:
    """(start, end, file) of each mapping of a file in the process whose maps ``maps`` is, in its order, each path
    as ``os.fsdecode`` gives it (bytes that are not UTF-8 as surrogates, as ``Path`` and ``os.path.realpath`` name
    the same file: a replacement character would name another file); [] where it cannot be read (not Linux)."""
    try:
        text = os.fsdecode(Path(maps).read_bytes())
    except OSError:
        return []
    found = []
    for fields in (line.split(None, 5) for line in text.splitlines()):
        if len(fields) == 6 and fields[5].startswith("/"):
            start, _, end = fields[0].partition("-")
            found.append((int(start, 16), int(end, 16), fields[5]))
    return found


def preload_entries(environ: str = "/proc/self/environ", preload_file: str = PRELOAD_FILE
                    ) -> list[tuple[str, Source]]:
    """(entry, its source) of each ``SOURCES`` entry: the variables in the environment the process started with
    (``environ``; this process's ``os.environ`` where it cannot be read), the file read at ``preload_file``, split on
    spaces and colons as the dynamic linker splits them."""
    try:
        start = {os.fsdecode(key): os.fsdecode(value) for key, value in
                 (item.split(b"=", 1) for item in Path(environ).read_bytes().split(b"\0") if b"=" in item)}
    except OSError:
        start = dict(os.environ)
    entries = []
    for source in SOURCES:
        try:
            text = os.fsdecode(Path(preload_file).read_bytes()) if source.file else start.get(source.name, "")
        except OSError:
            text = ""
        entries += [(entry, source) for entry in re.split(r"[\s:]+", text) if entry]
    return entries


def preloaded(maps: str = "/proc/self/maps", environ: str = "/proc/self/environ",
              preload_file: str = PRELOAD_FILE) -> dict[str, Source]:
    """The mapped libraries that ``preload_entries`` brought in, each with its source (the first that names it): an
    entry with a ``/`` is that file (links resolved), one without it a library of that file name."""
    entries = preload_entries(environ, preload_file)
    found: dict[str, Source] = {}
    for path in mapped_libraries(maps) if entries else ():
        source = next((source for entry, source in entries if os.path.basename(path) == entry
                       or "/" in entry and os.path.realpath(path) == os.path.realpath(entry)), None)
        if source is not None:
            found[path] = source
    return found


def _inside(path: str, folders: Iterable[str]) -> bool:
    real = os.path.realpath(path)
    return any(real == folder or real.startswith(folder.rstrip(os.sep) + os.sep) for folder in folders)


def toolkit_places(toolkit: Toolkit) -> list[str]:
    """The folders and files (links resolved) a library of ``toolkit`` lies in: its root, the folders of its runtime
    and nnopbase (a ``lib64`` linked to elsewhere), its opp folders (its tiling and kernels: ``opp_path`` and
    ``$ASCEND_OPP_PATH``), its operator library, its graph-mode library."""
    folders = [os.path.dirname(os.path.realpath(path)) for path in (toolkit.runtime_lib, toolkit.nnopbase_lib)]
    return [os.path.realpath(path) for path in (toolkit.root, opp_path(toolkit), opp_variable(toolkit), toolkit.op_lib,
                                                toolkit.geir_lib) if path] + folders


class Taken(NamedTuple):
    """A library ahead of the toolkit's (``taking``) and what it takes of it: ``symbols``, the toolkit's symbols it
    defines (an audit library: its rebinding hooks), sorted, and ``called``, those through which the calls of the
    toolkit's libraries mapped go to it now: the names they bind through the dynamic linker
    (``elf.bound_by_name``; a name each binds for itself when it is linked, its own functions under
    ``-Bsymbolic-functions``, takes no call of theirs), every hook of an audit library."""

    path: str
    symbols: tuple[str, ...]
    called: tuple[str, ...]


def taken(entry) -> Taken:
    """``entry`` as a ``Taken``: one, or its fields as a worker's ``describe`` sends them (lists); an entry of two
    fields (a library and its symbols) takes calls through every one of them."""
    path, symbols, *called = entry
    return Taken(path, tuple(symbols), tuple(called[0]) if called else tuple(symbols))


def _called(toolkit: Toolkit, maps: str) -> frozenset:
    """The names the libraries of ``toolkit`` this process mapped (``toolkit_places``) bind through the dynamic
    linker (``elf.bound_by_name``): a definition first in the global scope takes their calls of those."""
    places = toolkit_places(toolkit)
    return frozenset().union(*(bound_by_name(path) for path in mapped_libraries(maps) if _inside(path, places)))


def interposers(toolkit: Toolkit, maps: str = "/proc/self/maps", environ: str = "/proc/self/environ",
                preload_file: str = PRELOAD_FILE) -> list[Taken]:
    """A ``Taken`` for every ``preloaded`` library, by its source's ``takes``: the symbols a mapped library of
    ``toolkit`` (``toolkit_places``) defines, or an audit library's rebinding hooks, less what another mapped library
    (the system's) defines too; a preloaded library of the toolkit itself, or of ``SYSTEM_FOLDERS``, takes nothing.
    Of a preload's, those the toolkit's libraries bind by name are ``called`` (``_called``)."""
    places = toolkit_places(toolkit)
    first = preloaded(maps, environ, preload_file)
    if not first:
        return []
    libraries = mapped_libraries(maps)
    own = frozenset().union(*(defined_symbols(path) for path in libraries if _inside(path, places)))
    found = {path: frozenset() if _inside(path, (*places, *SYSTEM_FOLDERS)) else
             source.takes(defined_symbols(path), own) for path, source in first.items()}
    candidates = frozenset().union(*found.values())
    system = frozenset().union(*(defined_symbols(path) & candidates for path in libraries if candidates
                                 and path not in found and not _inside(path, places)))
    called = _called(toolkit, maps) if candidates else frozenset()
    return [Taken(path, tuple(sorted(symbols - system)), tuple(sorted(symbols - system if not first[path].by_name
                                                                     else (symbols - system) & called)))
            for path, symbols in found.items()]


def _names(symbols: tuple[str, ...]) -> str:
    return f"{', '.join(symbols[:MAX_NAMED])}{', ...' if len(symbols) > MAX_NAMED else ''}"


def preload_labels(found: Iterable) -> list[str]:
    """Each library of ``found`` (``taken``) as a header states it: its path, and what it takes
    (``/x/libhook.so (defines 2 of the toolkit's symbols: aclrtMemcpy, aclrtSynchronizeStream)``,
    ``/x/libaudit.so (an audit library: rebinds calls through la_symbind64)``), or the toolkit's symbols it defines
    and how many of them the toolkit's libraries bind by name (``(defines 1 of the toolkit's symbols, which no
    library of the toolkit loaded binds by name: prmg_emu_device_usable)``)."""
    def takes(entry: Taken) -> str:
        symbols, called = entry.symbols, entry.called
        if all(AUDIT_HOOK.fullmatch(name) for name in symbols):
            return f" (an audit library: rebinds calls through {_names(symbols)})"
        defines = f"defines {len(symbols)} of the toolkit's symbols"
        if len(called) == len(symbols):
            return f" ({defines}: {_names(symbols)})"
        if not called:
            return f" ({defines}, which no library of the toolkit loaded binds by name: {_names(symbols)})"
        return f" ({defines}: {_names(symbols)}; its libraries bind {len(called)} of them by name: {_names(called)})"

    return [entry.path + (takes(entry) if entry.symbols else "") for entry in map(taken, found)]


def _taking(found: Iterable) -> tuple[list[str], list[str]]:
    """(the labels of the libraries of ``found`` that take calls of the toolkit's libraries, those that only define
    some of its symbols, which no library of it loaded binds by name)."""
    entries = [taken(entry) for entry in found]
    labels = preload_labels(entries)
    return ([label for label, entry in zip(labels, entries) if entry.called],
            [label for label, entry in zip(labels, entries) if entry.symbols and not entry.called])


def interposer_warning(found: Iterable) -> str:
    """The warning a run without ``--strict`` gives of the libraries of ``found`` that take the toolkit's calls, or
    define its symbols where no library of it loaded binds them by name ("" when none does)."""
    calls, defines = _taking(found)
    said = ([f"a preloaded library takes calls meant for the toolkit: {'; '.join(calls)}: the cases may not run the "
             f"toolkit's code"] if calls else []) + \
        ([f"a preloaded library defines symbols of the toolkit: {'; '.join(defines)}: no call of the toolkit's "
          f"libraries loaded reaches it, but one they look up by name, or a library the toolkit loads later (its "
          f"tiling), would"] if defines else [])
    return f"{'; '.join(said)} (--strict refuses this)" if said else ""


def refuse_interposers(found: Iterable, root: Path) -> None:
    """Raise PrmgError naming each preloaded library of ``found`` that takes a call of the toolkit at ``root``, or
    defines its symbols (``interposer_warning``): under ``--strict`` the operator must be the toolkit's code, not a
    preloaded stand-in's."""
    calls, defines = _taking(found)
    if calls or defines:
        sources = ", ".join(source.name for source in SOURCES)
        raise PrmgError(f"--strict: a preloaded library {'takes calls meant for' if calls else 'defines symbols of'} "
                        f"the toolkit at {root}: {'; '.join(calls + defines)} ({sources}, or loaded with RTLD_GLOBAL "
                        f"before it); run without it, or without --strict to run the cases anyway (the reports then "
                        f"name it)")


def foreign_libraries(root: Path, maps: str = "/proc/self/maps", among: Iterable[str] | None = None
                      ) -> list[tuple[str, str]]:
    """(the file loaded, the toolkit's own file of that name) for each shared library this process has mapped (of
    ``among``, when given) from another CANN toolkit's folder (it holds a runtime, ``RUNTIME_NAMES``, or
    ``libnnopbase.so``) where the toolkit at ``root`` has a file of the same name in ``lib64``. However it came in,
    the two are mixed while every report names ``root``: a ``LD_LIBRARY_PATH`` naming the other folder (searched
    before a library's RUNPATH), a library's RPATH or RUNPATH, ``LD_PRELOAD``, the system's library path. [] where
    ``maps`` cannot be read (not Linux)."""
    own_folder = os.path.realpath(root / "lib64")
    considered = set(among) if among is not None else None
    found = []
    for path in sorted(mapped_libraries(maps)):
        folder, name = os.path.split(path)
        own = root / "lib64" / name
        if (considered is None or path in considered) and os.path.realpath(folder) != own_folder \
                and os.path.isfile(own) and _holds_runtime(folder) and os.path.realpath(own) != os.path.realpath(path):
            found.append((path, str(own)))
    return found


def _holds_runtime(folder: str) -> bool:
    """Whether ``folder`` holds a CANN runtime or nnopbase (it is a toolkit's ``lib64``)."""
    return any(os.path.isfile(os.path.join(folder, name)) for name in (*RUNTIME_NAMES, NNOPBASE_NAME))


def refuse_foreign(root: Path, before: Iterable[str]) -> None:
    """Raise PrmgError naming each library ``foreign_libraries`` finds among those this process mapped since
    ``before`` (``mapped_libraries`` before it loaded the toolkit: a forked worker's parent's own are not this
    toolkit's doing) and those it preloaded, saying how it came (a folder of ``LD_LIBRARY_PATH``, else a RUNPATH,
    ``LD_PRELOAD`` or the system's path): a run would test another toolkit's code under ``root``'s name."""
    foreign = foreign_libraries(root, among=set(mapped_libraries()) - set(before) | set(preloaded()))
    if foreign:
        loaded = "; ".join(f"{path} in place of {own}" for path, own in foreign)
        searched = os.environ.get("LD_LIBRARY_PATH", "")
        folders = {os.path.realpath(entry) for entry in searched.split(":") if entry}
        how = (f"LD_LIBRARY_PATH={searched} finds another toolkit's libraries first"
               if any(os.path.realpath(os.path.dirname(path)) in folders for path, _ in foreign) else
               "a library's RPATH or RUNPATH, LD_PRELOAD or the system's library path (ld.so.conf) gave it")
        raise PrmgError(f"the toolkit at {root} is mixed with another one: {loaded} ({how}); source the toolkit's "
                        f"own set_env.sh, or take the other toolkit out of LD_LIBRARY_PATH, LD_PRELOAD and the "
                        f"libraries' search path")


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def _file_of(address: int, dladdr) -> str:
    """The file ``dladdr`` places ``address`` in ("" when it cannot say)."""
    info = _DlInfo()
    if address and dladdr(ctypes.c_void_p(address), ctypes.byref(info)) and info.dli_fname:
        return os.fsdecode(info.dli_fname)
    return ""


def mapped_spans(maps: str = "/proc/self/maps") -> tuple[list[int], list[tuple[int, str]]]:
    """(the start address of each mapping of a file in the process whose maps ``maps`` is, sorted; (its end, the file)
    at the same index): what ``file_at`` looks an address up in. ([], []) where it cannot be read (not Linux)."""
    spans = sorted(_mapped_files(maps))
    return [start for start, _, _ in spans], [(end, file) for _, end, file in spans]


def file_at(address: int, starts: list[int], spans: list[tuple[int, str]]) -> str:
    """The file mapped at ``address`` (``mapped_spans``: a binary search), "" for none. ``dladdr`` says the same but
    searches the symbol table of the object for the nearest symbol at every call: a real operator library of 10^5
    symbols made ``bound_ahead`` quadratic (minutes per worker)."""
    index = bisect.bisect_right(starts, address) - 1
    return spans[index][1] if address and index >= 0 and address < spans[index][0] else ""


def _dladdr():
    """libc's ``dladdr``, declared; None where it is missing (not glibc)."""
    try:
        dladdr = ctypes.CDLL(None).dladdr
    except (OSError, AttributeError):
        return None
    dladdr.argtypes, dladdr.restype = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)], ctypes.c_int
    return dladdr


def resolved_outside(functions: Mapping[str, object], places: Iterable[str]) -> list[tuple[str, str]]:
    """(name, file) of each ctypes function of ``functions`` whose code ``dladdr`` places in a file outside
    ``places`` (folders or files, links resolved); [] where ``dladdr`` is missing (not glibc)."""
    dladdr = _dladdr()
    if dladdr is None:
        return []
    places = list(places)
    files = {name: _file_of(ctypes.cast(function, ctypes.c_void_p).value or 0, dladdr)
             for name, function in functions.items()}
    return [(name, file) for name, file in files.items() if file and not _inside(file, places)]


def bound_ahead(toolkit: Toolkit) -> list[tuple[str, tuple[str, ...]]]:
    """(library, the toolkit's symbols it takes, sorted) for each library of this process that the global scope binds
    a symbol of ``toolkit``'s mapped libraries to (``dlsym(RTLD_DEFAULT)``, then ``file_at``) while it lies outside
    the toolkit and ``SYSTEM_FOLDERS``: a library loaded with ``RTLD_GLOBAL`` before the toolkit (by a
    ``sitecustomize``, a ``.pth`` file, a conftest's import) comes before it in the global scope, as a preload does,
    and takes the calls the toolkit's libraries make to each other. Only the toolkit's strong (``STB_GLOBAL``)
    definitions are asked: a weak one (a C++ inline function or template instance) is bound to its first definition
    in the process by design, a conda environment's libstdc++ say, and is no call of the toolkit's API taken.
    [] where the process's maps cannot be read (not Linux)."""
    starts, spans = mapped_spans()
    if not starts:
        return []
    dlsym = ctypes.CDLL(None).dlsym
    dlsym.argtypes, dlsym.restype = [ctypes.c_void_p, ctypes.c_char_p], ctypes.c_void_p
    places = toolkit_places(toolkit)
    own = frozenset().union(*(defined_symbols(path, (STB_GLOBAL,)) for path in mapped_libraries()
                              if _inside(path, places)))
    executable, foreign = os.path.realpath(sys.executable), {}      # file -> outside the toolkit, asked once each
    taken: dict[str, list[str]] = {}
    for name in sorted(own):
        file = file_at(dlsym(None, name.encode()) or 0, starts, spans)  # RTLD_DEFAULT is the null handle
        if file and file not in foreign:
            foreign[file] = not _inside(file, (*places, *SYSTEM_FOLDERS)) and os.path.realpath(file) != executable
        if file and foreign[file]:
            taken.setdefault(file, []).append(name)
    return [(file, tuple(names)) for file, names in taken.items()]


def taking(toolkit: Toolkit) -> list[Taken]:
    """What of this process takes the toolkit's calls, as runs record it: each ``interposers`` entry (every preloaded
    library, taking something or not), then each other library ``bound_ahead`` finds, its symbols the toolkit's
    libraries bind by name ``called`` (``_called``)."""
    found = interposers(toolkit)
    named = {os.path.realpath(entry.path) for entry in found}
    ahead = [(path, symbols) for path, symbols in bound_ahead(toolkit) if os.path.realpath(path) not in named]
    called = _called(toolkit, "/proc/self/maps") if ahead else frozenset()
    return found + [Taken(path, symbols, tuple(name for name in symbols if name in called)) for path, symbols in ahead]
