"""The geir runner: the operator built as a GE graph from its IR and run in graph mode (``geir.GeirSession``).

Its libraries are those ``--runner auto`` finds, plus graph mode's library: on a CANN toolkit, the shim
(``runners/geir/prmg_geir.cpp``) compiled for it on first use (``runners.shim``); on the emulator, its twin
``lib64/libprmg_geir.so``, built with it (``runners/emulator/geir.c``)."""

from __future__ import annotations

from dataclasses import replace

TWIN = "libprmg_geir.so"
BY_NAME = "emulator-geir"         # the runner of graph mode on the host emulator by name


def with_graph_mode(base, env, calls: str):
    """``base`` (a ``toolkit.Toolkit``) with graph mode's library and how it was made, run by runner ``calls``.
    PrmgError saying why graph mode is not available on a toolkit (``runners.shim``)."""
    if base.kind == "emulator":
        return replace(base, calls=calls, geir_lib=base.root / "lib64" / TWIN,
                       geir_build="the emulator's twin of the GE shim (runners/emulator/geir.c)")
    from .shim import build_shim

    library, build = build_shim(base.root, env)
    return replace(base, calls=calls, geir_lib=library, geir_build=build)


def resolve(op_lib, env, modes):
    """The toolkit ``--runner auto`` would pick (the emulator installed as a toolkit refused alike:
    ``toolkit.select_runner``), with graph mode's library (``with_graph_mode``)."""
    from ..toolkit import select_runner

    return with_graph_mode(select_runner("geir", op_lib, env, modes, BY_NAME), env, "geir")


def resolve_emulator(op_lib, env, modes, calls: str = "geir"):
    """The emulator ``--runner emulator`` names (the emulator installed as a toolkit where the search finds one, its
    shim built against that toolkit's GE; else prmg's own build and its twin), with graph mode's library, run by
    runner ``calls``."""
    from ..toolkit import select_runner

    return with_graph_mode(select_runner("emulator", op_lib, env, modes), env, calls)


def session(toolkit, device: int):
    """A ``geir.GeirSession`` on ``device``."""
    from ..geir import GeirSession

    return GeirSession(toolkit, device)
