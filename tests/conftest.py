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


@pytest.fixture(scope="session", autouse=True)
def emulator_home(tmp_path_factory) -> Path:
    """Every test (and every prmg it starts) shares one emulator build, outside the user's cache."""
    home = os.environ.get("PRMG_TEST_EMULATOR_HOME") or str(tmp_path_factory.getbasetemp().parent / "emulator")
    os.environ["PRMG_EMULATOR_HOME"] = home
    for name in [k for k in os.environ if k.startswith(("ASCEND_", "PRMG_EMU_"))]:
        del os.environ[name]                   # tests choose their runner explicitly
    os.environ.pop("COLUMNS", None)            # pytest-xdist's workers get COLUMNS=80: tests choose their width
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
