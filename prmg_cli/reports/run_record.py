"""What a run records of itself (the run record of its results file, ``store.RunRecord``, and its reports' header):
its description (``run_info``: runner, target, provenance, injected faults; completed by what the workers found,
``preloaded`` and ``nodes_files``), the settings its verdicts are judged under (``recorded_settings``, whose key each
result's ``judged_under`` holds), the results of a stored run that ``--resume`` takes (``resumed``), and the one
result a report stands on while the run runs (``unfinished_results``)."""

from __future__ import annotations

import os
from typing import Sequence

from .. import __version__
from ..case import Case
from ..device import provenance
from ..judging import judge_fingerprint
from ..judging.standards import DEFAULT_STANDARD
from ..results import CaseResult, RunInfo, plural, visible
from .outputs.screen import say


def run_info(settings, devices: Sequence[int], soc: str = "", asked: str = "") -> RunInfo:
    """The run's description for the reports' header (runner, target, provenance, injected faults), ``asked`` the
    ``--runner`` it asked for (``prmg report --strict`` holds a run on the emulator that did not name it a warning)."""
    from ..device.toolkit import runner_kind

    toolkit = settings.toolkit
    runner = runner_kind(toolkit)
    faults = tuple(f for f in os.environ.get("PRMG_EMU_FAULT", "").split(",") if f) if runner == "emulator" else ()
    return RunInfo(**provenance.operator_files(toolkit), runner=runner, location=str(toolkit.root),
                   op_library=str(toolkit.op_lib or ""), location_resolved=provenance.resolved(toolkit.root),
                   op_library_resolved=provenance.resolved(toolkit.op_lib),
                   supported_modes=tuple(sorted(settings.supported_modes)), devices=tuple(devices),
                   checks=tuple(settings.checks), golden=settings.golden,
                   standard=settings.standard or f"per case (default: {DEFAULT_STANDARD})", version=__version__,
                   soc=soc,
                   toolkit_version=_toolkit_version(toolkit),
                   driver_version=provenance.driver_version(), host=provenance.host_name(),
                   started=provenance.now(), faults=faults, strict=settings.strict,
                   fault_shape=os.environ.get("PRMG_EMU_FAULT_SHAPE", "") if faults else "",
                   path=toolkit.calls, graph_library=toolkit.geir_build, each_device=settings.each_device,
                   visible_devices=os.environ.get("ASCEND_RT_VISIBLE_DEVICES", ""), runner_asked=asked)


def _toolkit_version(toolkit) -> str:
    """The toolkit's stated version (``provenance.toolkit_version``); for the emulator, with the upstream build it
    plays when ``PRMG_EMU_BUILD`` names one (``8.5.0-emulator (PRMG_EMU_BUILD=base)``): the same library then
    returns other statuses, and the version is what headers, ``--resume`` and ``prmg report`` tell runs apart by."""
    version, build = provenance.toolkit_version(toolkit.root), os.environ.get("PRMG_EMU_BUILD", "")
    return f"{version} (PRMG_EMU_BUILD={build})" if build and toolkit.kind == "emulator" else version


def preloaded(info: RunInfo, found) -> None:
    """Hold in ``info`` the libraries the workers found preloaded ahead of the toolkit (``linkage.interposers``), and
    say on stderr when one takes the toolkit's calls (``--strict`` refused it in the workers already)."""
    from ..device.linkage import interposer_warning, preload_labels

    info.preloaded = tuple(preload_labels(found))
    if interposer_warning(found):
        say(f"warning: {interposer_warning(found)}")


def nodes_files(info: RunInfo, target: dict) -> None:
    """Under ``--cluster``, the operators' kernel and tiling files the nodes load (the first actor's
    ``provenance.operator_files``; every other node's must be alike: ``cluster.NODE_ALIKE``) in place of this host's
    when they differ (this host may have no toolkit, or another build), the fingerprint then the portable one (the
    nodes' files differ in inode, not in what they hold)."""
    if "opp_portable" in target and (target["opp_files"], target["opp_portable"]) != (info.opp_files,
                                                                                        info.opp_portable):
        for name in provenance.OPP_FIELDS:
            setattr(info, name, tuple(target[name]) if name == "opp_kernels" else target[name])
        info.opp_fingerprint = info.opp_portable


def recorded_settings(info: RunInfo, settings, target: dict | None = None) -> dict:
    """What a verdict depends on besides its case, as the run record stores it (its hash is every result's
    ``judged_under``): the runner and its call path, its toolkit (location and operator library with links resolved:
    ``.../latest`` and the version folder it names are one toolkit, the link pointed at another version another;
    version, and a stamp of each of its libraries, graph mode's too, so that a rebuild at the same path counts), the
    opp folder and the
    stamp of the operator's kernel and tiling files there (``provenance.opp_stamp``) with ``ASCEND_CUSTOM_OPP_PATH``,
    the device's SoC, the driver, the host, the libraries preloaded ahead of the toolkit, the emulator's injected
    faults, the target's modes, under ``--each-device`` the chips (``--devices`` and ``ASCEND_RT_VISIBLE_DEVICES``: a
    verdict of every chip holds for those chips only), ``--standard``, ``--strict``, ``--check``, ``--no-golden``,
    ``--repeat``, prmg's version, and the judge itself (``judge_fingerprint``: each standard's ``limits`` and the
    ``judging_code``; a version number and a standard's name stay the same when they change). Under ``--cluster`` the
    libraries' stamps are the nodes' (``target``, the executor's: ``provenance.portable_stamps`` of its first actor,
    every other node's alike) where they differ from this host's (which may have no toolkit at their paths), as
    ``nodes_files`` does with the kernel files.
    ``--resume`` trusts a record only when it was judged under the same settings, and ``prmg report`` names the
    settings that differ between shards."""
    toolkit = settings.toolkit
    faults = {"faults": list(info.faults), "shape": os.environ.get("PRMG_EMU_FAULT_SHAPE", ""),
              **({"device": os.environ["PRMG_EMU_FAULT_DEVICE"]} if os.environ.get("PRMG_EMU_FAULT_DEVICE") else {})} \
        if info.faults else {}
    libraries, nodes = provenance.library_stamps(toolkit), (target or {}).get("libraries")
    if nodes and nodes != provenance.portable_stamps(toolkit):
        libraries = nodes           # the nodes' build: this host has another, or none at their paths
    path = {**({"path": info.path} if info.path != "aclnn" else {}),    # aclnn runs keep their keys of before,
            **({"each_device": True, "chips": list(info.devices), "visible_devices": info.visible_devices}
               if settings.each_device else {})}                        # and runs without --each-device theirs
    opp = {**provenance.resolved_places(info.opp, os.environ.get("ASCEND_CUSTOM_OPP_PATH", "")),
           "files": info.opp_files, "fingerprint": info.opp_fingerprint, "portable": info.opp_portable}
    path.update({"preloaded": list(info.preloaded)} if info.preloaded else {})   # runs without one keep their keys
    return dict(runner=info.runner, **path, location=info.location_resolved, op_library=info.op_library_resolved,
                libraries=libraries, opp=opp,
                toolkit_version=info.toolkit_version, soc=info.soc, driver_version=info.driver_version,
                host=info.host, faults=faults, modes=list(info.supported_modes), standard=settings.standard,
                strict=settings.strict, checks=list(settings.checks), golden=settings.golden,
                check_options=settings.check_options, version=info.version, limits=judge_fingerprint.all_limits(),
                judging_code=judge_fingerprint.code())


def resumed(stored, cases: Sequence[Case], fingerprints: dict, key: str,
            chips: set[str] | None = None) -> dict[str, CaseResult]:
    """``--resume``: the records of ``stored`` to keep (``store.trusted``; ``chips`` the host's chips this run uses),
    saying on stderr how many are taken and how many run again because their case changed, they were judged under
    other settings or ran on another chip."""
    from .store import UNTRUSTED, trusted

    kept = trusted(stored, fingerprints, key, chips)
    verdicts = {name: result for name, result in stored.latest().items()
                if name in fingerprints and result.status not in UNTRUSTED}
    again = len(verdicts) - len(kept)
    say(f"--resume: {plural(len(kept), 'result')} of {visible(stored.path)} taken, not run "
        f"again" + (f"; {plural(again, 'recorded verdict')} of a case changed since or judged under "
                    f"other settings (runner, toolkit or its libraries, the operator's kernel and "
                    f"tiling files, SoC, driver, host, another chip, faults, modes, --standard, --strict, "
                    f"checks, the standards' limits or prmg's judging code) run again"
                    if again else ""))
    return kept


def unfinished_results(info: RunInfo, run: str = "this run", name: str = "prmg-run") -> list[CaseResult]:
    """The one result of a report standing for ``run`` while it runs: a ``not_run`` saying it has not finished."""
    return [CaseResult(name=name, status="not_run", message=f"not run: {run} (started {info.started}) has not "
                                                            f"finished: killed before it wrote its reports?")]
