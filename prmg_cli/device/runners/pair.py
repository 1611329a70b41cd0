"""The aclnn+geir runner: each case through the aclnn API and through graph mode on the same inputs, each judged
as alone, then held against each other (``differential.combine``): a case whose two results differ in any byte,
or whose two refusals differ in kind, fails, naming the path that disagrees with the golden."""

from __future__ import annotations

from . import geir


def resolve(op_lib, env, modes):
    """The libraries of the geir runner (the aclnn ones and graph mode's)."""
    from ..toolkit import select_runner

    return geir.with_graph_mode(select_runner("aclnn+geir", op_lib, env, modes), env, "aclnn+geir")


def session(toolkit, device: int):
    """A ``differential.PairSession``: an ``acl.AclSession`` and a ``geir.GeirSession`` on ``device``."""
    from ..differential import PairSession

    return PairSession(toolkit, device)
