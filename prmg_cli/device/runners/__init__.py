"""The runners ``--runner`` picks from: one module and one entry of ``RUNNERS`` each.

A runner says how it finds its libraries (``resolve(op_lib, env, modes)`` -> a ``toolkit.Toolkit`` whose ``calls``
names the runner) and what a worker opens on a device (``session(toolkit, device)``). A session has
``launch(case, inputs) -> acl.Outcome``, ``device_faulted``, ``soc_name()``, ``accepted_modes()``, ``close()`` and
``path`` (the call path its results name); it may also have ``judged_case(case, modes, soc)`` (the case as this path
must answer it on chip family ``soc``, or why it has no form here: ``constraints.graph_case``) and ``paths`` ((path,
session) pairs: the case runs through each on the same inputs and ``differential.combine`` holds them against each
other). Everything after the call (inputs, golden, standards, checks, reports) is shared.

| runner | libraries | calls |
|---|---|---|
| auto | a CANN toolkit when the search finds one, else the emulator | aclnn |
| aclnn | a CANN toolkit, never a fallback to the emulator | aclnn |
| emulator | the host emulator | aclnn |
| geir | as auto, with graph mode's library (the shim built for the toolkit, or the emulator's twin) | GE graph mode |
| aclnn+geir | as geir | both, on the same inputs, compared byte for byte |
| emulator-geir | as emulator, with graph mode's library | GE graph mode |
| emulator+geir | as emulator-geir | both, as aclnn+geir |
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

from . import aclnn, geir, pair
from ...errors import PrmgError, suggest


@dataclass(frozen=True)
class Runner:
    """One ``--runner``: its name, a few words for ``--help``, how it finds its libraries and the session a worker
    opens with them (module docstring)."""

    name: str
    help: str
    resolve: Callable
    session: Callable


RUNNERS: dict[str, Runner] = {runner.name: runner for runner in (
    Runner("auto", "a CANN toolkit when one is found; the emulator only when no ASCEND_* variable names a toolkit and "
           "none is installed, said on stderr; a toolkit named or installed that cannot serve the operator is exit 2",
           aclnn.resolve_auto, aclnn.session),
    Runner("aclnn", "a toolkit, never a fallback to the emulator: what an NPU gate runs", aclnn.resolve_toolkit,
           aclnn.session),
    Runner("emulator", "the host emulator", aclnn.resolve_emulator, aclnn.session),
    Runner("geir", "graph mode: the operator built as a GE graph from its IR, on what auto picks",
           geir.resolve, geir.session),
    Runner("aclnn+geir", "both calls on the same inputs, failing a case whose results differ in any byte",
           pair.resolve, pair.session),
    Runner(geir.BY_NAME, "graph mode on the host emulator by name, as emulator picks it",
           geir.resolve_emulator, geir.session),
    Runner(pair.BY_NAME, "aclnn+geir on the host emulator by name, as emulator picks it", pair.resolve_emulator,
           pair.session),
)}


def runners_help(names=None) -> str:
    """``--runner``'s help: each runner (of ``names``; default all) and what it does."""
    return "; ".join(f"{runner.name} ({runner.help})" for runner in RUNNERS.values()
                     if names is None or runner.name in names) + "."


def timed_runners() -> list[str]:
    """The runners ``prmg bench`` can time: those launching through aclnn (``aclnn.session``), between ACL events."""
    return [name for name, runner in RUNNERS.items() if runner.session is aclnn.session]


def graph_runners() -> list[str]:
    """The runners that call graph mode (all but ``timed_runners``)."""
    return [name for name in RUNNERS if name not in timed_runners()]


def emulator_runners() -> list[str]:
    """The runners that name the host emulator (``--runner emulator``'s pick: ``toolkit.select_runner``)."""
    return [name for name, runner in RUNNERS.items() if runner.resolve in (aclnn.resolve_emulator,
                                                                             geir.resolve_emulator,
                                                                             pair.resolve_emulator)]


def select(runner: str, op_lib: str | None = None, env: Mapping[str, str] | None = None,
           modes: Iterable[int] | None = None):
    """The libraries ``--runner`` asks for (``Runner.resolve``); PrmgError for an unknown runner, or naming what
    the runner could not find."""
    check_runner(runner)
    return RUNNERS[runner].resolve(op_lib, os.environ if env is None else env, modes)


def check_runner(runner: str) -> None:
    """PrmgError unless ``runner`` is one of ``RUNNERS``."""
    if runner not in RUNNERS:
        raise PrmgError(f"--runner {runner!r}{suggest(runner, RUNNERS)}: choose one of {', '.join(RUNNERS)}")


def open_session(toolkit, device: int):
    """The session of the toolkit's runner (its ``calls``) on ``device``."""
    return RUNNERS[toolkit.calls].session(toolkit, device)
