"""The ``run`` and ``validate`` commands: load and select cases, pick the runner, execute, report."""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from . import __version__, compare, constraints, execute, outputs
from .outputs import listing
from .progress import Progress
from .results import RunInfo, summary_line
from .cases import Case, load_cases, select, validate
from .vocab import MODE_NAMES, parse_modes
from .errors import PrmgError


@dataclass(frozen=True)
class RunRequest:
    """The options of ``prmg run`` as plain values."""

    paths: Sequence[str]
    runner: str = "auto"
    op_lib: str | None = None
    supported_modes: str | None = None
    devices: str = "0"
    standard: str | None = None
    report: str = "table"
    output: str | None = None
    keyword: str | None = None
    tags: tuple = ()
    fail_fast: bool = False
    list_only: bool = False
    timeout: float | None = 300.0
    results: str | None = None
    resume: str | None = None
    shard: str | None = None
    max_memory: str | None = None
    verbose: bool = False


def target_modes(text: str | None) -> frozenset:
    """The rotary modes the target supports: ``--supported-modes`` or today's kernel (interleave)."""
    return parse_modes(text) if text else constraints.DEFAULT_SUPPORTED_MODES


def load_selected(paths: Sequence[str], modes: frozenset, keyword: str | None = None,
                  tags: Sequence[str] = ()) -> list[Case]:
    """Load and validate every case under ``paths``, then keep those matching ``-k`` and ``--tag``."""
    cases = load_cases(paths)
    validate(cases, modes)
    return select(cases, keyword, tags)


def validate_paths(paths: Sequence[str], supported_modes: str | None) -> str:
    """``prmg validate``: the summary of valid files; raises PrmgError on the first invalid one."""
    modes = target_modes(supported_modes)
    cases = load_selected(paths, modes)
    files = len({case.source for case in cases})
    errors = sum(1 for case in cases if not case.expect.success)
    skipped = sum(1 for case in cases if constraints.skip_reason(case, modes))
    names = ", ".join(MODE_NAMES[mode] for mode in sorted(modes))
    return (f"{len(cases)} cases in {files} files are valid ({len(cases) - errors} expect success, "
            f"{errors} expect an error; {skipped} would be skipped on a target supporting {names})")


def parse_size(text: str) -> int:
    """``"512M"``, ``"8G"``, ``"1T"`` or a byte count -> bytes."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*", text, re.IGNORECASE)
    if not match:
        raise PrmgError(f"--max-memory must look like 512M, 8G or a byte count, got {text!r}")
    scale = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[match.group(2).upper()]
    return int(float(match.group(1)) * scale)


def probe_in_child(toolkit) -> dict:
    """``acl.probe(toolkit)`` in a short-lived child, so this process never loads the libraries."""
    from .acl import probe

    try:
        return execute.call_in_child(probe, toolkit, timeout=120)
    except PrmgError as exc:
        return {"errors": [str(exc)]}


def parse_devices(text: str, toolkit) -> tuple[int, ...]:
    """``"0,1,3"`` or ``"all"`` -> device ids (``all`` asks the runtime for its device count)."""
    if text.strip() == "all":
        info = probe_in_child(toolkit)
        count = info.get("device_count") or 0
        if count < 1:
            why = "; ".join(info.get("errors", [])) or "the runtime reports no device"
            raise PrmgError(f"--devices all: {why}")
        return tuple(range(count))
    try:
        ids = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise PrmgError(f"--devices must be a comma-separated list of device ids or 'all', got {text!r}") \
            from None
    if any(i < 0 for i in ids) or len(set(ids)) != len(ids):
        raise PrmgError(f"--devices {text}: ids must be distinct and non-negative")
    return ids


def runner_settings(runner: str, op_lib: str | None, modes: frozenset, standard: str | None = None,
                    timeout: float | None = None, max_memory: int | None = None):
    """Pick the toolkit (real or emulator) and fix the settings every worker shares."""
    from .toolkit import select_runner

    if standard is not None:
        try:
            compare.check_standard(standard)
        except PrmgError as exc:
            raise PrmgError(f"--standard: {exc.reason}") from None
    toolkit = select_runner(runner, op_lib, os.environ, modes)
    return execute.RunSettings(toolkit=toolkit, supported_modes=modes, standard=standard, timeout=timeout,
                               max_memory=max_memory)


def run_info(settings, devices: Sequence[int]) -> RunInfo:
    toolkit = settings.toolkit
    return RunInfo(runner=toolkit.kind, location=str(toolkit.root), op_library=str(toolkit.op_lib or ""),
                          supported_modes=tuple(sorted(settings.supported_modes)), devices=tuple(devices),
                          standard=settings.standard or "per case (default: default)", version=__version__)


def write_file(path: str, text: str) -> None:
    """Write ``text`` to the file ``path`` (its folder made when missing); PrmgError when it cannot."""
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise PrmgError(f"cannot write: {exc.strerror}", file=path) from None


def _write(text: str, output: str | None) -> None:
    """The report to the file ``output``, or to stdout."""
    if output:
        write_file(output, text)
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")


def run_suite(request: RunRequest) -> int:
    """``prmg run``: returns the exit code (0 green, 1 a failure or error, 130 interrupted)."""
    if request.timeout is not None and request.timeout < 0:
        raise PrmgError(f"--timeout must be >= 0 seconds (0: no limit), got {request.timeout:g}")
    if request.report not in outputs.REPORT_FORMATS:
        raise PrmgError(f"--report must be one of {', '.join(outputs.REPORT_FORMATS)}, got {request.report!r}")
    modes = target_modes(request.supported_modes)
    cases = load_selected(request.paths, modes, request.keyword, request.tags)
    if request.shard:
        cases = execute.shard(cases, *execute.parse_shard(request.shard))
    if request.list_only:
        _write(listing.render(cases), request.output)
        return 0
    max_memory = parse_size(request.max_memory) if request.max_memory else execute.default_max_memory()
    settings = runner_settings(request.runner, request.op_lib, modes, request.standard, request.timeout,
                               max_memory)
    devices = parse_devices(request.devices, settings.toolkit)

    recorded = execute.read_results(request.resume) if request.resume else {}
    todo = [case for case in cases if case.name not in recorded]
    results_path = request.results or request.resume
    results_file = execute.ResultsFile(results_path) if results_path else None
    progress = Progress(len(todo))

    finished = dict(recorded)

    def on_result(_index: int, result) -> None:
        finished[result.name] = result
        if results_file:
            results_file.append(result)
        progress.update(result)

    interrupted = False
    try:
        if todo:
            with execute.Executor(settings, devices) as executor:
                executor.run(todo, on_result, request.fail_fast)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        progress.close()
        if results_file:
            results_file.close()
    ordered = [finished[case.name] for case in cases if case.name in finished]
    _write(outputs.render(request.report, ordered, run_info(settings, devices), outputs.RenderOptions(verbose=request.verbose)),
           request.output)
    if request.output and request.report != "table":
        sys.stdout.write(summary_line(ordered) + "\n")
    if interrupted:
        sys.stderr.write("prmg: interrupted: the report above holds the cases that finished\n")
        return 130
    return 1 if any(r.status in ("failed", "error") for r in ordered) else 0
