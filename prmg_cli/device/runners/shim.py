"""Graph mode on a CANN toolkit: the shim (``runners/geir/prmg_geir.cpp``) compiled for it on first use.

What the build takes from the toolkit at ``root`` (``plan``):
  headers    every folder of ``$PRMG_GE_INCLUDE`` (colon-separated), then each of root/include, root/compiler/include
             and root/<arch>-linux/include that exists; one of them must hold ``ge/ge_api.h``;
  libraries  ``libge_runner.so`` and ``libgraph.so`` (needed), ``libgraph_base.so``, ``libregister.so`` and
             ``libascendcl.so`` (linked when the toolkit has them), each the first found in root/lib64,
             root/compiler/lib64 and root/<arch>-linux/lib64 (stub libraries never), run-path set to their folders;
  compiler   ``$CXX``, else the first of g++, c++, clang++ on PATH (C++17).
The shim is built once per shim source, compiler and library set (the size and time of each library) into
``<cache>/geir-<hash>/libprmg_geir.so`` (the cache of ``files.emulator_cache_base``), with a BUILD file saying
how; concurrent builders wait for each other. The shim passes GE no ``std::string`` (only ``AscendString``, C
strings and containers of them), so the library's C++ string ABI does not matter.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import platform
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from ...errors import PrmgError

SOURCE = "prmg_geir.cpp"
HEADER = "prmg_geir.h"
LIBRARY = "libprmg_geir.so"
NEEDED = ("ge_runner", "graph")
OPTIONAL = ("graph_base", "register", "ascendcl")
COMPILERS = ("g++", "c++", "clang++")
BUILD_NOTE = "BUILD"
TIMEOUT = 600


def _toolkit_folders(root: Path, leaf: str) -> list[Path]:
    """root/<leaf>, root/compiler/<leaf>, root/<arch>-linux/<leaf>: where toolkits keep headers and libraries."""
    return [root / leaf, root / "compiler" / leaf, root / f"{platform.machine()}-linux" / leaf]


def include_folders(root: Path | None, env: Mapping[str, str]) -> list[Path]:
    """The header folders of a build: ``$PRMG_GE_INCLUDE``'s, then the toolkit's that exist (module docstring)."""
    given = [Path(part) for part in env.get("PRMG_GE_INCLUDE", "").split(os.pathsep) if part]
    found = [folder for folder in _toolkit_folders(root, "include") if os.path.isdir(folder)] if root else []
    return list(dict.fromkeys(given + found))


def _libraries(root: Path) -> tuple[list[Path], list[str]]:
    """(the libraries found, in NEEDED + OPTIONAL order; the NEEDED names not found)."""
    from ..toolkit import is_stub_path

    found, missing = [], []
    for name in NEEDED + OPTIONAL:
        paths = [folder / f"lib{name}.so" for folder in _toolkit_folders(root, "lib64")]
        path = next((path for path in paths if os.path.isfile(path) and not is_stub_path(path)), None)
        if path is not None:
            found.append(path)
        elif name in NEEDED:
            missing.append(f"lib{name}.so")
    return found, missing


def find_compiler(env: Mapping[str, str]) -> str | None:
    """``$CXX`` (as a path or a command on PATH), else the first of ``COMPILERS`` on PATH; None when none is."""
    named = env.get("CXX", "").strip()
    if named:
        return shutil.which(named, path=env.get("PATH")) or (named if os.path.isfile(named) else None)
    return next((found for name in COMPILERS if (found := shutil.which(name, path=env.get("PATH")))), None)


@dataclass(frozen=True)
class Plan:
    """How to compile the shim: the compiler (and its version line), header folders and libraries."""

    compiler: str
    version: str
    includes: tuple[Path, ...]
    libraries: tuple[Path, ...] = ()

    def command(self, output: Path | None, syntax_only: bool = False) -> list[str]:
        """The compiler's command line: the shared library ``output``, or (``syntax_only``) a syntax check."""
        from ...files import geir_sources

        sources = geir_sources()
        head = [self.compiler, "-std=c++17", "-Wall", "-Wextra", f"-I{sources}",
                *(f"-I{folder}" for folder in self.includes)]
        if syntax_only:
            return [*head, "-fsyntax-only", str(sources / SOURCE)]
        folders = list(dict.fromkeys(path.parent for path in self.libraries))
        return [*head, "-O2", "-fPIC", "-shared", "-fvisibility=hidden", str(sources / SOURCE), "-o", str(output),
                *(f"-Wl,-rpath,{folder}" for folder in folders), *(str(path) for path in self.libraries)]

    def describe(self) -> str:
        """Which compiler, headers and libraries the build uses, in one line."""
        return (f"runners/geir/{SOURCE} compiled by {self.compiler} ({self.version}) with headers from "
                f"{', '.join(map(str, self.includes))} and linked with {', '.join(map(str, self.libraries))}")


def _version(compiler: str) -> str:
    """The first line of ``compiler --version`` ("" when it says nothing)."""
    try:
        result = subprocess.run([compiler, "--version"], capture_output=True, text=True, errors="replace", timeout=60,
                                stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return (result.stdout.strip().splitlines() or [""])[0]


def plan(root: Path, env: Mapping[str, str]) -> Plan:
    """The build of the shim for the toolkit at ``root``; PrmgError naming everything it lacks (module docstring)."""
    includes = include_folders(root, env)
    libraries, missing = _libraries(root)
    compiler = find_compiler(env)
    lacks = []
    if not any(os.path.isfile(folder / "ge" / "ge_api.h") for folder in includes):     # os.path: never raises
        looked = [*includes] or _toolkit_folders(root, "include")
        lacks.append(f"GE's headers (no ge/ge_api.h in {', '.join(map(str, looked))})")
    if missing:
        lacks.append(f"GE's libraries ({' and '.join(missing)} in none of "
                     f"{', '.join(map(str, _toolkit_folders(root, 'lib64')))})")
    if compiler is None:
        lacks.append(f"a C++ compiler ($CXX, or one of {', '.join(COMPILERS)} on PATH)")
    if lacks:
        raise PrmgError(f"graph mode is not available on the toolkit at {root}: it needs {'; '.join(lacks)}")
    return Plan(compiler, _version(compiler), tuple(includes), tuple(libraries))


def _key(build: Plan) -> str:
    """A short sha256 of the shim's sources, the compiler command and each library's size and time."""
    from ...files import geir_sources

    digest = hashlib.sha256()
    for name in (SOURCE, HEADER):
        digest.update((geir_sources() / name).read_bytes() + b"\0")
    digest.update("\0".join(build.command(Path(LIBRARY))).encode() + build.version.encode())
    for path in build.libraries:
        stat = path.stat()
        digest.update(f"{path}:{stat.st_size}:{stat.st_mtime_ns}\0".encode())
    return digest.hexdigest()[:16]


def build_shim(root: Path, env: Mapping[str, str]) -> tuple[Path, str]:
    """The shim built for the toolkit at ``root`` (built now unless this build is cached) and how it was built.
    PrmgError when graph mode is not available (``plan``) or the compiler fails (its last lines)."""
    from ...files import emulator_cache_base

    build = plan(root, env)
    folder = emulator_cache_base(env) / f"geir-{_key(build)}"
    library, how = folder / LIBRARY, build.describe()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder.parent / f"{folder.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not library.is_file():
                _compile(build, library)
                (folder / BUILD_NOTE).write_text(f"{how}\n{shlex.join(build.command(library))}\n")
    except OSError as error:
        raise PrmgError(f"cannot build graph mode's shim in {folder}: {error} (set PRMG_EMULATOR_HOME to a "
                        f"writable folder)") from None
    return library, how


def _compile(build: Plan, library: Path) -> None:
    """Run the compiler into a temporary file renamed into place; PrmgError with its last lines when it fails."""
    partial = library.with_name(f"{library.name}.{os.getpid()}.tmp")
    try:
        result = subprocess.run(build.command(partial), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, errors="replace", timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        raise PrmgError(f"building graph mode's shim took longer than {TIMEOUT // 60} minutes") from None
    if result.returncode != 0:
        partial.unlink(missing_ok=True)
        tail = "\n".join(result.stdout.strip().splitlines()[-20:])
        raise PrmgError(f"building graph mode's shim failed ({build.describe()}; exit {result.returncode}):\n{tail}")
    os.replace(partial, library)
