"""``prmg doctor``: what was found and where, which runner ``auto`` would pick and why, and whether graph mode
(``--runner geir``, ``aclnn+geir``, ``emulator-geir``, ``emulator+geir``) is available and why not."""

from __future__ import annotations

import os
import re

from ..device import provenance
from ..device.toolkit import OPP_LATEST, custom_opp_note, opp_path, opp_variable
from ..errors import PrmgError
from ..ops import OPERATORS
from ..results import visible

# the entry points a toolkit must export: those of the operators under test (``OperatorSpec.required``)
REQUIRED = tuple(name for spec in OPERATORS.values() if spec.required for name in (spec.get_workspace, spec.launch))


def loaded_lines(paths: list[str]) -> list[str]:
    """The libraries loaded, one ``loaded from FOLDER: NAME, NAME`` line per folder in load order, wrapped to the
    width: a line per path (``loaded: /root/.cache/prmg/emulator-.../lib64/libopapi_transformer.so``) passed 80
    columns; each folder stays whole, as any path does."""
    from ..reports.outputs.screen import width, wrap

    folders: dict[str, list[str]] = {}
    for path in paths:
        folder, name = os.path.split(path)
        folders.setdefault(folder, []).append(name)
    return [part for folder, names in folders.items()
            for part in wrap(f"  loaded from {folder}: {', '.join(names)}", width())]


def _probe_lines(toolkit) -> tuple[list[str], bool]:
    from ..device.toolkit import NO_DEVICE, chips_not_shown
    from .suite import probe_in_child

    info = probe_in_child(toolkit)
    count = info.get("device_count")
    if isinstance(count, int) and (hidden := chips_not_shown(count)):     # 0 too: ASCEND_RT_VISIBLE_DEVICES=-1
        info.setdefault("errors", []).append(f"{hidden} (--devices all, smoke.sh's gate, refuses it)")
    elif count == 0 and not info.get("errors") and "error" not in info:    # exit 1 said why
        info["errors"] = [NO_DEVICE]
    lines = loaded_lines(info.get("loaded", []))
    lines += [f"  symbol {name}: {'resolves' if found else 'MISSING'}"
              + ("" if found or name in REQUIRED else " (optional: its cases error)")
              for name, found in info.get("symbols", {}).items()]
    lines.append(f"  devices: {info.get('device_count')}")
    lines.append(f"  soc: {info.get('soc') or '(aclrtGetSocName gives nothing)'}")
    lines.append(f"  toolkit version: {provenance.toolkit_version(toolkit.root) or '(no version file found)'}")
    errors = info.get("errors", []) + ([info["error"]] if "error" in info else [])
    lines += [f"  error: {error}" for error in errors]
    symbols = info.get("symbols", {})
    required = [symbols.get(name, False) for name in REQUIRED]
    usable = not errors and all(required) and (info.get("device_count") or 0) > 0
    return lines, usable


def opp_path_lines(toolkit) -> list[str]:
    """What nnopbase will see for ``ASCEND_OPP_PATH`` (read at every call): the variable when set (and whether it is
    a folder; the folder the runner hands over when it starts with ``~``), else the ``<root>/opp`` the runner sets
    before ``aclInit``, and the ``opp_latest`` it takes first when there is one (``toolkit.opp_path``); wrapped to
    the width."""
    from ..reports.outputs.labels import kernels_text
    from ..reports.outputs.screen import width, wrap

    value, opp = os.environ.get("ASCEND_OPP_PATH"), opp_variable(toolkit)
    state = "a folder" if os.path.isdir(opp) else "NOT a folder: operator calls will fail (561107)"
    if value:
        text = f"ASCEND_OPP_PATH={value} ({f'the runner sets {opp} before aclInit: ' if str(opp) != value else ''}" \
               f"{state})"
    else:
        text = f"ASCEND_OPP_PATH unset: the runner sets {opp} before aclInit ({state})"
    taken = opp_path(toolkit)
    if taken != opp:
        text += f"; nnopbase takes the kernels and tiling from {taken} first ($ASCEND_HOME_PATH/{OPP_LATEST})"
    places = provenance.kernel_places(taken, os.environ.get("ASCEND_CUSTOM_OPP_PATH", ""),
                                      [spec.title for spec in OPERATORS.values()])
    text += f"; the operator's {kernels_text(places)}" if places else ""
    return ["  " + line for line in wrap(text, width() - 2)]


def emulator_lines(env) -> list[str]:
    """The emulator's ``PRMG_EMU_*`` variables (wrapped, with the value ``env`` gives each) and its faults, one
    line each, in ``faults.c``'s order: what they do, in the words of the emulator's README."""
    from ..reports.outputs.screen import shorten, width, wrap
    from ..device.toolkit import emulator_fault_effects, emulator_fault_names, emulator_variables

    columns = width()
    lines = ["emulator variables (runners/emulator/README.md, Environment):"]
    for name, meaning in emulator_variables().items():
        value = f" Now {name}={env[name]}." if name in env else ""
        lines += ["  " + line for line in wrap(f"{name}: {meaning}.{value}", columns - 2)]
    effects = emulator_fault_effects()
    names = emulator_fault_names()
    column = max(map(len, names)) + 2
    lines += wrap("emulator faults, to test prmg itself (PRMG_EMU_FAULT=NAME[,NAME...]; runners/emulator/README.md, "
                  "Faults, says each in full):", columns)
    for name in names:
        first_sentence = re.split(r"\.\s+(?=[A-Z])", effects.get(name, "(not described)"))[0]
        lines.append(f"  {name:<{column}}{shorten(first_sentence, columns - column - 2)}")
    return lines


def graph_mode_lines(toolkit, runner: str, op_lib: str | None) -> tuple[list[str], bool]:
    """Whether graph mode is available: on the toolkit found (what its shim build takes, ``runners.shim.plan``) or,
    without one, the emulator's twin; for a graph-mode runner (``runners.graph_runners``) its library is made (the
    shim built on first use) and a session opened on device 0 in a child. Returns the lines and whether that
    session opened (True for another runner)."""
    from ..device.execute import call_in_child
    from ..device.geir import probe
    from ..device.runners import graph_runners, select
    from ..device.runners.shim import plan

    from ..device.toolkit import toolkit_suggested

    lines = [f"graph mode (--runner {', '.join(graph_runners())}):"]   # every graph runner (emulator-geir was left out)
    if toolkit is None and toolkit_suggested(os.environ):
        lines.append("  a toolkit is named here but none was found: graph mode, as auto, does not run the emulator")
    elif toolkit is None or toolkit.kind == "emulator":
        lines.append("  on the emulator: its twin of the GE shim (runners/emulator/geir.c)")
    else:
        try:
            lines.append(f"  available on the toolkit at {toolkit.root}: {plan(toolkit.root, os.environ).describe()}")
        except PrmgError as exc:
            return lines + [f"  NOT available: {exc}"], runner not in graph_runners()
    if runner not in graph_runners():
        return lines, True
    try:
        chosen = select(runner, op_lib, os.environ)
        info = call_in_child(probe, chosen, timeout=300)
    except PrmgError as exc:
        return lines + [f"  runner {runner}: {exc}"], False
    lines.append(f"  runner {runner}: {info['library']} ({info['build']})")
    lines += [f"  error: {error}" for error in info["errors"]]
    return lines, not info["errors"]


def diagnose(runner: str, op_lib: str | None) -> tuple[str, bool]:
    """The doctor's report and whether the runner asked for (default auto) is usable; PrmgError for a ``--runner``
    that is none of ``runners.RUNNERS`` and an ``--op-lib`` that is no file (usage errors, as in ``prmg run``)."""
    from ..device.runners import check_runner, graph_runners
    from ..reports.outputs.screen import folded
    from ..device.toolkit import copied_emulator, emulator_toolkit, explain_search, find_toolkit, op_lib_file, \
        own_build, select_runner, stale_copy, toolkit_suggested

    check_runner(runner)
    if op_lib:
        op_lib_file(op_lib)

    looked = ", ".join(str(folder / "version.info") for folder in provenance.driver_folders())
    lines = [f"driver version: {provenance.driver_version() or '(none: no ' + looked + ')'}",
             "ASCEND_* variables:"]
    ascend = sorted((k, v) for k, v in os.environ.items() if k.startswith("ASCEND_"))
    lines += [f"  {k}={v}" for k, v in ascend] or ["  (none set)"]
    if note := custom_opp_note(os.environ):
        from ..reports.outputs.screen import width, wrap

        lines += ["  " + line for line in wrap(note.removeprefix("prmg: note: "), width() - 2)]
    lines.append("CANN toolkit search:")
    lines += [f"  {line}" for line in explain_search(os.environ, op_lib)]
    try:
        toolkit = find_toolkit(os.environ, op_lib)
    except PrmgError as exc:
        lines.append(f"  refused: {exc}")
        toolkit = None
    usable = {}
    if toolkit is not None:
        lines += [f"toolkit: {toolkit.root}", f"  runtime: {toolkit.runtime_lib}",
                  f"  nnopbase: {toolkit.nnopbase_lib}",
                  f"  operator: {toolkit.op_lib} (from {toolkit.op_lib_source})", *opp_path_lines(toolkit)]
        probe, usable["aclnn"] = _probe_lines(toolkit)
        stale = stale_copy(toolkit, os.environ)                 # what a run naming the emulator says of it
        lines += probe + ([f"  warning: {stale}"] if stale else [])
    else:
        lines.append("toolkit: none found")
        usable["aclnn"] = False
    if runner in ("auto", "emulator"):
        try:                    # what a run would load: --runner emulator runs a copy installed as a toolkit by name
            emulator = emulator_toolkit() if runner == "auto" else select_runner(runner, None, os.environ)
            copy = f"the copy installed as a toolkit at {emulator.root}"
            if toolkit is not None and emulator.root == toolkit.root:
                lines.append(f"emulator: {copy}, probed above (what --runner emulator runs, not prmg's own build)")
                usable["emulator"] = usable["aclnn"]
            else:
                where = f"host build at {emulator.root}" if own_build(emulator.root, os.environ) else copy
                lines += [f"emulator: {where}", *opp_path_lines(emulator)]
                probe, usable["emulator"] = _probe_lines(emulator)
                lines += probe
        except PrmgError as exc:
            lines.append(f"emulator: cannot build: {exc}")
            usable["emulator"] = False
        lines += emulator_lines(os.environ)
    graph, graph_usable = graph_mode_lines(toolkit, runner, op_lib)
    lines += graph
    if runner in graph_runners():
        usable[runner] = graph_usable and (usable["aclnn"] if toolkit is not None else True)
    if runner == "auto":                       # toolkit.select_runner's rule
        suggested, copy = toolkit_suggested(os.environ), toolkit and copied_emulator(toolkit, os.environ)
        pick = None if copy else "aclnn" if toolkit is not None else None if suggested else "emulator"
        why = (f"the toolkit found is the host emulator installed as one ({copy}): auto never runs it in a toolkit's "
               f"place, --runner emulator does" if copy else
               "a CANN toolkit was found" + ("" if usable.get("aclnn") else ", but it is NOT usable")
               if pick == "aclnn" else
               f"a toolkit is meant here ({', '.join(suggested)}) but none can serve the operator: auto never runs "
               f"the emulator in its place" if suggested else "nothing names or installs a CANN toolkit here")
        shown = toolkit.kind if pick == "aclnn" else pick or "nothing"      # the emulator's folder, if named
        lines.append(f"runner auto would pick: {shown} ({why})")
        ok = bool(pick and usable.get(pick))
    else:
        ok = bool(usable.get(runner))
        lines.append(f"runner {runner}: {'usable' if ok else 'NOT usable'}")
    # each line shown as one (results.visible): a variable's value or a path holding an escape sequence or a newline
    # (ASCEND_HOME_PATH, PRMG_EMU_FAULT) reached the terminal raw and forged lines of the report; then wrapped at
    # spaces on a terminal (screen.folded: 'runner auto would pick: ...' and the toolkit's refusals passed 80 columns)
    return "\n".join(folded([visible(line) for line in lines])), ok
