"""The aclnn+geir runner: each case through the aclnn API and through graph mode on the same inputs, each judged
as alone, then held against each other (``differential.combine``): a case whose two results differ in any byte,
or whose two refusals differ in kind, fails, naming the path that disagrees with the golden."""

from __future__ import annotations

from . import geir

BY_NAME = "emulator+geir"         # the runner of both calls on the host emulator by name


def resolve(op_lib, env, modes):
    """The libraries of the geir runner (the aclnn ones and graph mode's)."""
    from ..toolkit import select_runner

    return geir.with_graph_mode(select_runner("aclnn+geir", op_lib, env, modes, BY_NAME), env, "aclnn+geir")


def resolve_emulator(op_lib, env, modes):
    """The libraries of the emulator-geir runner (the emulator ``--runner emulator`` names, and graph mode's), both
    paths run on them: the differential on the emulator where a toolkit is installed or named, which ``aclnn+geir``
    would take instead (or refuse, when it is the emulator installed as one)."""
    return geir.resolve_emulator(op_lib, env, modes, calls="aclnn+geir")


def session(toolkit, device: int):
    """A ``differential.PairSession``: an ``acl.AclSession`` and a ``geir.GeirSession`` on ``device``."""
    from ..differential import PairSession

    return PairSession(toolkit, device)
