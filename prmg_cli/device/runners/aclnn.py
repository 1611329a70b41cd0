"""The aclnn runners (auto, aclnn, emulator): the operator called through its two aclnn phases (``acl.AclSession``)
on the libraries ``toolkit.select_runner`` finds."""

from __future__ import annotations


def resolve_auto(op_lib, env, modes):
    """A CANN toolkit when the search finds one, else the emulator where nothing names or installs one, else a usage
    error (``toolkit.select_runner``)."""
    from ..toolkit import select_runner

    return select_runner("auto", op_lib, env, modes)


def resolve_toolkit(op_lib, env, modes):
    """A CANN toolkit, or a PrmgError naming where the search looked."""
    from ..toolkit import select_runner

    return select_runner("aclnn", op_lib, env, modes)


def resolve_emulator(op_lib, env, modes):
    """The host emulator (built on first use), ``modes`` switched on."""
    from ..toolkit import select_runner

    return select_runner("emulator", op_lib, env, modes)


def session(toolkit, device: int):
    """An ``acl.AclSession`` on ``device``."""
    from ..acl import AclSession

    return AclSession(toolkit, device)
