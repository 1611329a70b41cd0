"""Shared fixtures: one emulator build per test session, and a way to run the real `prmg` command."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# A pytest session the tests start (the plugin's, make test's options): without the cache folder, and without
# hypothesis's plugin, which imports all of hypothesis at every session's end (its terminal summary: about a second of
# CPU per session, 30 of them in make test) and does nothing else in a session that runs no hypothesis test.
PYTEST = (sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:hypothesispytest")
# A make test started in the background of a shell without job control (`make test &`, some CI agents) inherits SIGINT
# ignored, and so would every prmg the tests start: the tests that press Ctrl-C then waited 60 s for an exit that an
# ignored signal never brings. The test process takes Ctrl-C again, so that what it starts does (exec resets it).
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


_BUILDS: list[subprocess.Popen] = []
# The builds, in a process of their own: the compiled helper on a thread of its own there (its -O3 build alone is about
# 6 s of CPU), the emulator meanwhile. Not threads of the test process: a worker a test forks meanwhile would inherit
# a build's lock or pipe (a flock held by the forked child's own copy of the descriptor: it waited for itself).
_BUILD_AHEAD = """
import threading
from prmg_cli import native
from prmg_cli.device.toolkit import emulator_toolkit
helper = threading.Thread(target=native.prebuild)
helper.start()
try:
    emulator_toolkit()
finally:
    helper.join()
"""


def _use_emulator_home(home: str) -> None:
    """Builds in ``home`` for this process and every prmg it starts; no toolkit choice inherited from the shell."""
    os.environ["PRMG_EMULATOR_HOME"] = home
    for name in [k for k in os.environ if k.startswith(("ASCEND_", "PRMG_EMU_"))]:
        del os.environ[name]                   # tests choose their runner explicitly
    os.environ.pop("COLUMNS", None)            # pytest-xdist's workers get COLUMNS=80: tests choose their width


def _build_ahead() -> None:
    """Unless the compiled helper is built, start building it and the emulator (``_BUILD_AHEAD``) while this process
    collects or runs tests, on the other core; whatever needs one first waits for it (each build's lock), and a build
    that failed fails again there, with its error."""
    import prmg_cli
    from prmg_cli import native

    if _BUILDS or native.built():
        return
    _BUILDS.append(subprocess.Popen([sys.executable, "-c", _BUILD_AHEAD], cwd=Path(prmg_cli.__file__).parents[1],
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))


def pytest_sessionstart(session):
    """Under ``PRMG_TEST_EMULATOR_HOME`` (make test-verdict, make mutate) the builds start before collection."""
    if os.environ.get("PRMG_TEST_EMULATOR_HOME"):
        _use_emulator_home(os.environ["PRMG_TEST_EMULATOR_HOME"])
        _build_ahead()


def pytest_sessionfinish(session):
    """A session shorter than the builds waits for them (gcc left running would leave a half-written file)."""
    for build in _BUILDS:
        build.wait()


@pytest.fixture(scope="session", autouse=True)
def emulator_home(tmp_path_factory) -> Path:
    """Every test (and every prmg it starts) shares one emulator build, outside the user's cache."""
    home = os.environ.get("PRMG_TEST_EMULATOR_HOME") or str(tmp_path_factory.getbasetemp().parent / "emulator")
    _use_emulator_home(home)
    _build_ahead()
    return Path(home)


@pytest.fixture(autouse=True)
def toolkit_environment_restored():
    """Each test leaves the ``ASCEND_*`` and ``PRMG_EMU_*`` variables as it found them: an in-process session sets
    its toolkit's (``PRMG_EMU_MODES`` of a toolkit made with modes, ``ASCEND_OPP_PATH``), which would otherwise
    change the emulator under later tests of the same worker (a mode-refused case then succeeds)."""
    prefixes = ("ASCEND_", "PRMG_EMU_")
    before = {name: value for name, value in os.environ.items() if name.startswith(prefixes)}
    yield
    for name in [name for name in os.environ if name.startswith(prefixes) and name not in before]:
        del os.environ[name]
    os.environ.update(before)


@pytest.fixture(autouse=True)
def stop_signals_raise_again():
    """Each test leaves stop signals raising: an in-process prmg run ends by making its outcome final
    (``errors.outcome_final``), after which ``errors.on_stop`` raises nothing until the entry point starts over, so a
    later test of the same worker relying on ``on_stop`` (test_cluster's SIGTERM during a Ray wait) failed by order."""
    yield
    from prmg_cli.errors import outcome_final

    outcome_final(False)


@pytest.fixture(scope="session")
def emulator(emulator_home):
    """The built emulator toolkit (kind "emulator")."""
    from prmg_cli.device.toolkit import emulator_toolkit

    return emulator_toolkit()


def prmg(*args: str, env: dict | None = None, timeout: float = 300, cwd: str | Path | None = None,
         input_text: str | None = None) -> subprocess.CompletedProcess:
    """Run the `prmg` command line in a child process, as a user would, and capture its output."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "prmg_cli.cli", *map(str, args)], capture_output=True,
                          text=True, env=full_env, timeout=timeout, cwd=cwd or ROOT, input=input_text)


def prmg_here(*args: str, env: dict | None = None, cwd: str | Path | None = None) -> subprocess.CompletedProcess:
    """`prmg ARGS` through the real entry point (``cli.main``) in this process (no interpreter to start: 0.3 s of CPU
    less per command line), in ``cwd`` (default: this process's), with ``env`` set meanwhile and its output captured;
    ``cli.main(restore=True)`` leaves this process's signal handling as it found it; Python's warnings are filtered
    and printed to its stderr as in a new process (not recorded by pytest). Not for what a process of its own shows:
    signals, output encodings (a StringIO takes any text), the emulator's state (read at aclInit, and a worker forked
    from here inherits whatever this process loaded), a hang (no timeout)."""
    import contextlib
    import io
    import warnings
    from unittest import mock

    from prmg_cli import cli

    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    os.chdir(cwd or here)
    try:
        with mock.patch.object(sys, "argv", ["prmg", *map(str, args)]), mock.patch.dict(os.environ, env or {}), \
                contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings(), \
                pytest.raises(SystemExit) as stopped:
            _new_process_warnings(warnings)
            cli.main(restore=True)
    finally:
        os.chdir(here)
    return subprocess.CompletedProcess(["prmg", *map(str, args)], stopped.value.code, out.getvalue(), err.getvalue())


# The server of ``prmg_forked``: a clean Python that imports what a ``prmg run`` imports (about 0.25 s of CPU) and
# never loads a toolkit, and reads the shipped case files once: ``yamlfile.parse_yaml`` kept by text (the same text
# gives a fresh copy of the same plain values; a refusal is never kept), so that a child reads ``cases/`` without
# composing its 37,000 YAML nodes again (about 0.25 s of CPU less for each of some 150 forked runs of ``cases/``; the
# parser is tested in process and by the ``prmg`` tests). Then it forks one child per command line: the child takes
# the command's folder, environment, standard streams and arguments, and runs the entry point as
# ``python -m prmg_cli.cli`` would (``cli.main`` then exit; a pytest session as ``python -m pytest`` would,
# PYTHONPATH's folders put where a new interpreter puts them), its pid sent first (for a timeout's kill), its exit
# code after.
_FORK_SERVER = r"""
import json, os, sys
import pytest, typer
import prmg_cli.cli, prmg_cli.commands.app, prmg_cli.commands.run, prmg_cli.commands.suite, prmg_cli.device.execute
import prmg_cli.cases.loader, prmg_cli.reports.outputs.jsonreport, prmg_cli.reports.outputs.table
with open("/proc/self/maps") as maps:
    assert "libascendcl" not in maps.read(), "the fork server loaded a toolkit: its children would share its state"
import glob, marshal
from prmg_cli.cases import yamlfile
_parse, _parsed = yamlfile.parse_yaml, {}
def parse_once(text, source, parser=None):
    if (text, parser) not in _parsed:
        document = _parse(text, source, parser)            # a refusal raises (naming source) and is never kept
        try:
            _parsed[text, parser] = marshal.dumps(document)
        except ValueError:
            return document
    return marshal.loads(_parsed[text, parser])            # a copy of its own for each reader
yamlfile.parse_yaml = parse_once
for path in sorted(glob.glob("cases/**/*.yaml", recursive=True)):
    yamlfile.read_yaml(path)
for line in sys.stdin:
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            os.chdir(request["cwd"])
            os.environ.clear()
            os.environ.update(request["env"])
            for fd, path, flags in ((0, request["stdin"], os.O_RDONLY), (1, request["stdout"], os.O_WRONLY),
                                    (2, request["stderr"], os.O_WRONLY)):
                os.dup2(os.open(path, flags), fd)
            if request["entry"] == "pytest":
                sys.path[1:1] = [folder for folder in os.environ.get("PYTHONPATH", "").split(os.pathsep) if folder]
                sys.argv = [pytest.__file__, *request["argv"]]
                raise SystemExit(pytest.console_main())
            sys.argv = [prmg_cli.cli.__file__, *request["argv"]]
            prmg_cli.cli.main()
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else 0 if stop.code is None else 1
        except BaseException:
            import traceback
            traceback.print_exc()
            code = 1
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except Exception:
                    pass
            os._exit(code)
    print(pid, flush=True)
    print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
"""
_SERVER: list = []                  # (the server, the environment it started with)
# What acts as a process starts, not while it runs: a command line that sets one of them needs ``prmg``.
_AT_START = ("LD_", "PYTHON", "LANG", "LC_", "OPENBLAS_", "OMP_", "MKL_")


def twin(path: Path) -> Path:
    """A copy of the file ``path`` beside it (``twin-NAME``), for ``prmg compare``, which refuses one file given
    twice: two files with the same verdicts."""
    copy = path.with_name(f"twin-{path.name}")
    copy.write_bytes(path.read_bytes())
    return copy


def prmg_forked(*args: str, env: dict | None = None, timeout: float = 300,
                cwd: str | Path | None = None) -> subprocess.CompletedProcess:
    """`prmg ARGS` as ``prmg`` runs it (a process of its own, its output captured), forked from a server that has
    imported prmg already (``_FORK_SERVER``, one per test process): 0.25 s of CPU less per command line, for the
    tests that run ``prmg run`` many times and read only its output and exit code (the faults against cases/).
    The child starts from a Python that never loaded a toolkit, so the emulator reads its faults afresh, and every
    worker it forks is as a ``prmg``'s. Not for what acts at a process's start (``_AT_START``: preloaded libraries,
    the interpreter's options and encodings: refused here), signals, or standard input."""
    return _forked("prmg", args, env, timeout, cwd)


def forked_pytest(*args: str, env: dict | None = None, timeout: float = 300,
                  cwd: str | Path | None = None) -> subprocess.CompletedProcess:
    """``python -m pytest ARGS`` (``PYTEST``'s options first) in ``cwd``, forked as ``prmg_forked`` forks a prmg
    (about 0.8 s of CPU less per session): for the tests of the plugin's sessions, their output and exit code.
    ``env`` may set PYTHONPATH (the child puts its folders where a new interpreter would), nothing else that acts
    at a process's start."""
    return _forked("pytest", (*PYTEST[3:], *args), env, timeout, cwd, settable=("PYTHONPATH",))


def _forked(entry: str, args, env, timeout: float, cwd, settable: tuple = ()) -> subprocess.CompletedProcess:
    """``entry`` (prmg or pytest) with ``args``, forked from this test process's ``_FORK_SERVER``; of the variables
    that act at a process's start (``_AT_START``), ``env`` may change only those ``settable``."""
    import atexit
    import json
    import tempfile
    import threading

    full_env = {**os.environ, **(env or {})}
    if not _SERVER or _SERVER[0][0].poll() is not None:
        server = subprocess.Popen([sys.executable, "-c", _FORK_SERVER], cwd=ROOT, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        _SERVER[:] = [(server, dict(os.environ))]
        atexit.register(lambda: (server.stdin.close(), server.wait()))      # its CPU counted as this process's
    server, started_with = _SERVER[0]
    changed = sorted(name for name in full_env.keys() | started_with.keys()
                     if name.startswith(_AT_START) and name not in settable
                     and full_env.get(name) != started_with.get(name))
    assert not changed, f"a forked {entry} cannot set {changed} (they act as a process starts): start a process"
    argv = [entry, *map(str, args)]
    with tempfile.TemporaryDirectory(prefix="prmg-forked-") as folder:
        out, err = Path(folder) / "stdout", Path(folder) / "stderr"
        out.touch()
        err.touch()
        request = {"entry": entry, "argv": argv[1:], "env": full_env, "cwd": str(cwd or ROOT), "stdin": os.devnull,
                   "stdout": str(out), "stderr": str(err)}
        server.stdin.write(json.dumps(request) + "\n")
        server.stdin.flush()
        pid = int(server.stdout.readline())
        killed = threading.Event()
        timer = threading.Timer(timeout, lambda: (killed.set(), os.kill(pid, 9)))
        timer.start()
        try:
            code = int(server.stdout.readline())
        finally:
            timer.cancel()
        if killed.is_set():
            raise subprocess.TimeoutExpired(argv, timeout, out.read_text(), err.read_text())
        return subprocess.CompletedProcess(argv, code, out.read_text(), err.read_text())


def _new_process_warnings(warnings) -> None:
    """Python's warning filters of a new process (``warnings.filters`` without -W options), each shown on stderr."""
    warnings.resetwarnings()
    for category in (ResourceWarning, ImportWarning, PendingDeprecationWarning, DeprecationWarning):
        warnings.filterwarnings("ignore", category=category)
    warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")
    warnings.showwarning = lambda message, category, filename, lineno, file=None, line=None: sys.stderr.write(
        warnings.formatwarning(message, category, filename, lineno, line))


@pytest.fixture
def run_prmg():
    return prmg
