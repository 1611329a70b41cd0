"""Running a suite, for ``prmg run`` and ``prmg validate`` (their options: ``commands/run.py``, ``validate.py``): load
and select cases, build the settings once (``settings_for``), pick the runner, execute, report.

A run fails safe: an unwritable report or results file is refused before the first case; a selection
of no case exits 5; a run stopped by ``-x``, a stop signal or wedged devices lists every case it did
not run as ``not_run``; emulator faults are named in every report's header, which says which cases they
acted on (the table printed before the first case says it at its end).
"""

from __future__ import annotations

import math
import os
import re
import signal
import sys
import uuid
from dataclasses import replace
from typing import Sequence

from ..case import Case
from ..cases import vacuity
from .. import files
from ..cases.fields import show
from ..cases.loader import (checked_cases, file_inputs, fingerprint_or_empty, input_files, load_cases, read_as_case,
                            select, unjudged, validate)
from ..device import execute
from ..device.provenance import host_name
from ..device.toolkit import NO_DEVICE, chips_not_shown
from ..errors import (STOP_SIGNALS, STOPS, PrmgError, drop_held_signals, outcome_final, stop_exception, stop_signal,
                      take_lost_stop)
from ..files import write_text
from ..judging.standards import check_standard
from ..ops import constraints
from ..reports import outputs, run_record
from ..reports.outputs import listing
from ..reports.outputs.labels import first_names
from ..reports.outputs.screen import folded, say, width, wrap
from ..reports.progress import Progress
from ..results import MAX_SECONDS, CaseResult, ExitCode, RunInfo, exit_code, plural, stopped_exit_code, visible
from ..vocab import decimal, mode_list, number, parse_modes
from ..writes import same_file, write_stdout


def target_modes(text: str | None) -> frozenset:
    """The rotary modes the target supports: ``--supported-modes`` (an empty one is refused: an unset variable, not
    today's kernel) or today's kernel (interleave)."""
    return parse_modes(text) if text is not None else constraints.DEFAULT_SUPPORTED_MODES


def load_selected(paths: Sequence[str], modes: frozenset, keyword: str | None = None, tags: Sequence[str] = (),
                  exclude_tags: Sequence[str] = ()) -> list[Case]:
    """Load and validate every case under ``paths``, then keep those matching ``-k`` and ``--tag`` and
    carrying none of ``--exclude-tag``."""
    cases = load_cases(paths)
    validate(cases, modes)
    excluded = set(exclude_tags)
    return [case for case in select(cases, keyword, tags) if not excluded.intersection(case.tags)]


def validate_paths(paths: Sequence[str], supported_modes: str | None) -> str:
    """``prmg validate``: the summary of valid files (wrapped to the screen's width) and a warning line per case (on
    a terminal wrapped too, ``screen.folded``; the cases of a file warned alike share one, naming them)
    whose expectation the constraint model disagrees with; raises every mistake in ``paths``
    (``loader.check_files``) as one PrmgError carrying the others, printed one line each."""
    modes = target_modes(supported_modes)
    cases, mistakes = checked_cases(paths, modes)
    if mistakes:
        raise PrmgError.all_of(mistakes)
    files = len({case.source for case in cases})
    errors = sum(1 for case in cases if not case.expect.success)
    skipped = sum(1 for case in cases if constraints.skip_reason(case, modes))
    alike: dict[tuple[str, str], list[str]] = {}        # cases of a file warned alike: one line (RoPE tables' partners)
    for case in cases:
        for text in (constraints.expectation_warning(case, modes), case.known_defect and case.known_defect.unjudged(),
                     vacuity.weak_warning(case)):
            if text:
                alike.setdefault((case.source, text), []).append(case.name)
    warnings = [f"warning: {visible(source)}: " + (f"case '{visible(names[0])}'" if len(names) == 1 else
                                                   f"{len(names)} cases ({first_names(names)})")
                + f": {text}" for (source, text), names in alike.items()]
    verb = "is" if len(cases) == 1 else "are"
    npy = len(file_inputs(cases))
    summary = (f"{plural(len(cases), 'case')} in {plural(files, 'file')} {verb} valid ({len(cases) - errors} expecting "
               f"success, {errors} expecting an error; {skipped} would be skipped on a target supporting "
               f"{mode_list(modes)}" + (f"; {plural(npy, '.npy file')} read by file: inputs, each from inside its "
                                        f"case file's folder" if npy else "") + ")")
    return "\n".join(folded(warnings) + wrap(summary, width()))


MAX_SIZE = 2 ** 63


def parse_size(text: str) -> int:
    """``"512M"``, ``"8G"``, ``"1T"`` or a byte count under ``MAX_SIZE`` -> bytes: a number as ``vocab.number`` reads
    the other options' (``--timeout 1_0``: ASCII, so ``٣``, an Arabic-Indic 3, is no 3 bytes), then a unit."""
    match = re.fullmatch(r"\s*(.*?)\s*([KMGT]?)(?:i?B)?\s*", text, re.IGNORECASE | re.ASCII)
    size = None
    for kind in (int, float):               # 5000 digits: int() refuses them, float() is infinity (refused below)
        try:
            size = number(match.group(1), kind)
            break
        except ValueError:
            continue
    if size is None or not size >= 0:       # not a number, negative, NaN
        raise PrmgError(f"--max-memory must look like 512M, 8G or a byte count, got {show(text)}")
    size *= {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}[match.group(2).upper()]
    if not size < MAX_SIZE:                 # 400 digits and a point are float infinity: int() of it was a traceback
        raise PrmgError(f"--max-memory must be under 2**63 bytes (8 EiB), got {show(text)}")
    return math.ceil(size)                  # 0.4 is a byte, not 0 (no limit)


def check_timeout(timeout: float | None, option: str = "--timeout", zero: str = "no limit") -> float | None:
    """``timeout`` seconds as a limit: a finite number >= 0 (0: none, returned as None; ``zero`` says what 0 means)."""
    if timeout is None:
        return None
    if not math.isfinite(timeout) or timeout < 0 or timeout > MAX_SECONDS:
        raise PrmgError(f"{option} must be a finite number of seconds >= 0 (0: {zero}), got {timeout!r}")
    return timeout or None


def probe_in_child(toolkit) -> dict:
    """``acl.probe(toolkit)`` in a short-lived child, so this process never loads the libraries."""
    from ..device.acl import PROBE_TIMEOUT, probe

    try:
        return execute.call_in_child(probe, toolkit, timeout=PROBE_TIMEOUT)
    except PrmgError as exc:
        return {"errors": [str(exc)]}


MAX_DEVICE_ID = 2**31 - 1
MAX_RANGE = 4096                # ids a range of --devices or --chips may span (a host has tens of chips)


def device_request(text: str, option: str = "--devices") -> tuple[int, ...] | None:
    """The ids of ``"0,1,3"`` or ``"0-3,6"`` (a range ``A-B`` from A up to B, of at most ``MAX_RANGE`` ids; None for
    ``all``): distinct, in the digits 0-9, each from 0 to ``MAX_DEVICE_ID``; PrmgError otherwise, naming a range that
    goes down or is too long (``7-0`` and ``0-4096`` were only 'must be a list of ids or ranges (0-7)'). Checked
    before anything touches the toolkit (``parse_devices`` then asks the runtime)."""
    if text.strip() == "all":
        return None
    ids: tuple = ()
    for part in text.split(","):
        low, dash, high = part.strip().partition("-")
        first, last = decimal(low), decimal(high if dash else low)
        if first is None or last is None or (dash and option == "--device"):
            takes = "a device id" if option == "--device" else "a comma-separated list of device ids or ranges (0-7)"
            raise PrmgError(f"{option} must be {takes} (digits 0-9){' or all' if option.endswith('devices') else ''}"
                            f", got {text!r}")
        if last < first:
            raise PrmgError(f"{option} {text}: the range {part.strip()} goes down; write it {high}-{low}")
        if last - first >= MAX_RANGE:
            raise PrmgError(f"{option} {text}: the range {part.strip()} spans more than {MAX_RANGE} ids")
        ids += tuple(range(first, last + 1))
    if any(not 0 <= i <= MAX_DEVICE_ID for i in ids) or len(set(ids)) != len(ids):
        raise PrmgError(f"{option} {text}: ids must be distinct and 0 <= id <= {MAX_DEVICE_ID} (int32)")
    return ids


def parse_devices(text: str, toolkit) -> tuple[int, ...]:
    """``"0,1,3"`` or ``"all"`` -> device ids (``device_request``). ``all`` asks the runtime for its device count,
    and so does a list naming any device but 0 (the default, which costs nothing): an id the runtime does not
    have is refused before any worker starts, with ``$ASCEND_RT_VISIBLE_DEVICES`` when it hides chips
    (``toolkit.chips_not_shown``; device 0 is said so by the worker that cannot open it: ``acl.AclSession``)."""
    ids = device_request(text)
    if ids is None:
        count = _device_count(toolkit, "--devices all")
        _all_shown(count)
        return tuple(range(count))
    if ids != (0,):
        count = _device_count(toolkit, "--devices")
        missing = [str(i) for i in ids if i >= count]
        if missing:
            shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
            hidden = chips_not_shown(count)
            raise PrmgError(f"--devices: the runtime has {plural(count, 'device')} (ids 0 to {count - 1}); "
                            f"no device {shown}" + (f": {hidden}" if hidden else ""))
    return ids


def _all_shown(count: int) -> None:
    """Refuse ``--devices all`` when the runtime does not show every chip ``$ASCEND_RT_VISIBLE_DEVICES`` names
    (``chips_not_shown``)."""
    if why := chips_not_shown(count):
        raise PrmgError(f"--devices all: {why}, or name the devices to run on (--devices)")


def _device_count(toolkit, option: str) -> int:
    """How many devices the runtime has (``probe_in_child``); PrmgError naming ``option`` when none."""
    info = probe_in_child(toolkit)
    count = info.get("device_count") or 0
    if count < 1:
        why = "; ".join(info.get("errors", [])) or chips_not_shown(0) or NO_DEVICE
        raise PrmgError(f"{option}: {why}")
    return count


def parse_checks(text: str | None) -> tuple[str, ...]:
    """The checks of ``--check a,b`` (``checks.check_names``: a text without a name is no check). Whether each case
    is then judged by a check of correctness (``--no-golden``) is ``check_judged``'s, once the cases are known."""
    from ..judging.checks import check_names

    parts = [part.strip() for part in (text or "").split(",") if part.strip()]
    try:
        names = check_names(parts or ([text] if text is not None else []))
    except PrmgError as error:
        raise PrmgError(f"--check: {error.reason} (comma-separated)") from None
    return names


def check_bounds(flag: str, value: int, minimum: int, maximum: int, note: str = "") -> int:
    """``value`` of the integer option ``flag`` when it is from ``minimum`` to ``maximum``, else PrmgError saying
    so (with ``note``, e.g. `` (determinism check)``)."""
    if not minimum <= value <= maximum:
        raise PrmgError(f"{flag} must be from {minimum} to {maximum}{note}, got {value}")
    return value


def check_options(request) -> dict:
    """The checks' options of ``request`` (``checks.OPTIONS``: ``--repeat`` ...) by name, each within its bounds."""
    from ..judging.checks import OPTIONS

    return {name: check_bounds(f"--{name.replace('_', '-')}", getattr(request, name, option.default), option.minimum,
                               option.maximum, f" ({check.name} check)") for name, (check, option) in OPTIONS.items()}


def check_judged(cases: Sequence[Case], checks: tuple = (), golden: bool = True) -> None:
    """Refuse a run in which a pass case without the golden would be judged by no check of correctness
    (``loader.unjudged``, with the run's ``--check`` and ``--no-golden``): PrmgError naming the first such case."""
    for case in cases:
        error = unjudged(case, checks, golden)
        if error is not None:
            raise error


def checked_settings(request):
    """The settings every worker shares (``execute.RunSettings``) of a ``prmg run`` request (``commands.run.Request``;
    the pytest plugin's and bench's too), each option checked once here: ``--standard``, ``--max-timeouts``,
    ``--check``, the checks' own options, ``--timeout``, ``--supported-modes``, and ``PRMG_HOST``
    (``provenance.host_name``). The toolkit is not chosen yet (``settings_for``)."""
    if request.standard is not None:
        try:
            check_standard(request.standard)
        except PrmgError as exc:
            raise PrmgError(f"--standard: {exc.reason}") from None
    if request.max_timeouts < 1:
        raise PrmgError(f"--max-timeouts must be >= 1, got {request.max_timeouts}")
    host_name()                                 # PRMG_HOST, a usage error before any case or the toolkit
    check_device_options(request.runner, None if getattr(request, "cluster", None) else request.op_lib)  # nodes' path
    golden = not request.no_golden
    checks, options = parse_checks(request.check), check_options(request)
    save_failures = os.path.realpath(request.save_failures) if request.save_failures else None
    return execute.RunSettings(toolkit=None, supported_modes=target_modes(request.supported_modes),
                               standard=request.standard, timeout=check_timeout(request.timeout),
                               strict=request.strict, max_timeouts=request.max_timeouts, checks=checks,
                               golden=golden, check_options=options, save_failures=save_failures,
                               each_device=getattr(request, "each_device", False))


def check_device_options(runner: str, op_lib: str | None) -> None:
    """PrmgError for an unknown ``--runner`` or an ``--op-lib`` that is no regular file, checked with the other options
    before any case is read: a selection of none (exit 5) had left such a mistake unsaid."""
    from ..device.runners import check_runner
    from ..device.toolkit import op_lib_file

    check_runner(runner)
    if op_lib:
        op_lib_file(op_lib)


def settings_for(request, toolkit=None, max_memory: int | None = None, settings=None):
    """``checked_settings(request)`` (or ``settings``, already checked) with the toolkit picked (real or emulator;
    ``toolkit`` when already chosen, e.g. by a cluster's node) and ``max_memory``. An unknown emulator fault in
    ``PRMG_EMU_FAULT``, or another ``PRMG_EMU_*`` variable the emulator would misread, is a usage error here, before
    any case runs (``toolkit.check_emulator_env``); a runner that falls back to the emulator without being asked
    to (``--runner auto``, ``geir``...: no toolkit found) says so on stderr in one line
    (``toolkit.EMULATOR_FALLBACK``), not one that found prmg's own emulator build where a toolkit is named (its
    ``set_env.sh``: ``toolkit.own_build``), nor one that names the emulator (``runners.emulator_runners``). Every
    other runner refuses the emulator installed where a toolkit belongs (``toolkit.select_runner``), so nothing
    else is left to say of one here. A runner naming the emulator that picked a copy of it installed as a toolkit
    which is not this prmg's build of its sources (``toolkit.stale_copy``) says so on stderr; ``--strict`` refuses
    it. On a toolkit, an ``ASCEND_CUSTOM_OPP_PATH`` entry starting with ``~`` is said to be read as written, as the
    toolkit reads it (``toolkit.custom_opp_note``)."""
    from ..device.runners import emulator_runners, select
    from ..device.toolkit import EMULATOR_FALLBACK, check_emulator_env, custom_opp_note, find_toolkit, stale_copy

    settings = settings or checked_settings(request)
    if toolkit is None:
        toolkit = select(request.runner, request.op_lib, os.environ, settings.supported_modes)
        stale = stale_copy(toolkit, os.environ) if request.runner in emulator_runners() else ""
        if stale and settings.strict:
            raise PrmgError(f"--strict: {stale}")
        if stale:
            sys.stderr.write(f"prmg: warning: {stale}\n")
    if toolkit.kind == "emulator":
        check_emulator_env(os.environ)
        if request.runner not in emulator_runners() and find_toolkit(os.environ) is None:
            sys.stderr.write(EMULATOR_FALLBACK + "\n")
    elif note := custom_opp_note(os.environ):
        sys.stderr.write(note + "\n")
    return replace(settings, toolkit=toolkit, max_memory=max_memory)


def device_list(request) -> str:
    """The devices a request names: ``--devices``, else ``--device``; PrmgError when both name them (``--device 1
    --devices 0`` ran on 0 alone without a word) or ``--each-device`` has no ``--devices`` (every case on each of one
    device is a plain run, not the gate over every chip it reads as)."""
    if request.devices is not None and request.device != 0:
        raise PrmgError(f"--device {request.device} and --devices {request.devices} both name the devices: give one")
    if getattr(request, "each_device", False) and request.devices is None:
        raise PrmgError(f"--each-device runs every case on each device of --devices, and none is given: it would run "
                        f"on device {request.device} alone (give --devices all, or a list)")
    return request.devices if request.devices is not None else str(request.device)


def check_run_outputs(request, targets, cases: Sequence[Case]) -> None:
    """``writes.check_outputs`` of a run: its reports, its results file (``--results``, else ``--resume``) and
    ``--save-failures``, sparing its case files, their ``file:`` inputs and a ``--resume`` file it only reads."""
    from ..writes import APPEND, FOLDER, Output, check_outputs

    results = request.results or request.resume
    outputs = [Output(target.path) for target in targets if target.path]
    read = bool(request.resume) and same_file(request.resume, results)      # the reader says what is wrong with it
    outputs += [Output(results, "results file", APPEND, read=read)] if results else []
    if request.save_failures:                 # DIR/CASE/, or DIR/PATH/CASE/ for a runner of several paths (aclnn+geir)
        names = (*(case.name for case in cases), *(request.runner.split("+") if "+" in request.runner else ()))
        outputs.append(Output(request.save_failures, "failure artifacts", FOLDER, names))
    inputs = input_files(request.paths, cases)
    if request.resume and not same_file(request.resume, results):
        inputs[request.resume] = "the results file --resume reads"
    check_outputs(outputs, inputs, read_as_case(request.paths))


def _select(request, modes: frozenset) -> tuple[list[Case], list[Case]]:
    """(the selected cases before sharding, the cases of the run): loaded, validated, selected, sharded."""
    selection = load_selected(request.paths, modes, request.keyword, request.tags, request.exclude_tags)
    if request.shard is None:
        return selection, selection
    return selection, execute.shard(selection, *execute.parse_shard(request.shard))


def _not_run(cases: Sequence[Case], finished: dict, reason: str, settings) -> list[CaseResult]:
    """``not_run`` results for the cases without a result, each saying why the run did not reach it."""
    return [execute.case_result(case, "not_run", message=f"not run: {reason}",
                                standard=execute.judging(case, settings)[0], path=settings.toolkit.calls)
            for case in cases if case.name not in finished]


def _connect(request, modes: frozenset):
    """The Ray cluster of ``--cluster`` (``cluster.connect``), its toolkit found on one of its nodes."""
    from ..device import cluster

    return cluster.connect(request.cluster, request.runner, request.op_lib, modes)


def _coverage_ahead(targets, cases: Sequence[Case]):
    """The work of the coverage line of the reports of ``targets`` that print one (``Output.coverage``), for the run's
    idle moments (``coverage.prepare_classes``); None when no report prints one."""
    from ..cases import coverage

    if not any(outputs.OUTPUTS[target.format].coverage for target in targets) or len(cases) > coverage.RUN_LINE_LIMIT:
        return None
    return coverage.prepare_classes(cases)


def run_suite(request) -> int:
    """``prmg run``: returns the exit code (``results.ExitCode``)."""
    from ..reports import store

    if request.max_details is not None and request.max_details < 0:
        raise PrmgError(f"--max-details must be >= 0, got {request.max_details}")
    if request.cluster is not None and (request.devices is not None or request.device != 0 or request.each_device):
        raise PrmgError("--cluster runs one worker per NPU of the cluster; --device and --devices are for local "
                        "runs, as is --each-device")
    check_timeout(request.progress_interval, "--progress-interval", "no progress lines")
    unwritten = [flag for flag, value in (("--results", request.results), ("--resume", request.resume),
                                          ("--save-failures", request.save_failures), ("--report", request.report),
                                          ("-o", request.output)) if value]
    if request.list_only and unwritten:
        raise PrmgError(f"--list prints the cases that would run and runs nothing: it writes or reads no "
                        f"{', '.join(unwritten)}")
    if request.cluster is None:
        device_request(device_list(request), "--devices" if request.devices is not None else "--device")
    checked = checked_settings(request)
    targets = outputs.parse_targets(list(request.report), request.output)
    max_memory = parse_size(request.max_memory) if request.max_memory else None
    modes = checked.supported_modes
    selection, cases = _select(request, modes)
    check_judged(cases, checked.checks, checked.golden)
    if not cases:
        say("no cases selected (check -k, --tag, --exclude-tag and --shard)")
        return ExitCode.NO_CASES
    if request.list_only:
        skipped = [execute.case_result(case, "skipped", message=reason) for case in cases
                   if (reason := constraints.skip_reason(case, modes))]
        write_stdout(listing.render(cases, skipped, wide=request.wide))
        return ExitCode.OK
    check_run_outputs(request, targets, cases)
    # every file is read or opened before anything touches the toolkit (a probe of a wedged device takes long)
    stored = store.read(request.resume, missing_ok=True) if request.resume else None
    results_path = request.results or request.resume
    writer = store.Writer(results_path) if results_path else None
    try:
        cluster = _connect(request, modes) if request.cluster is not None else None
        if max_memory is None:                              # half the RAM where the cases run
            max_memory = (cluster and cluster.max_memory) or execute.default_max_memory()
        settings = settings_for(request, cluster and cluster.toolkit, max_memory or None, checked)   # 0: no limit
        settings = replace(settings, bfloat16=any("bfloat16" in (case.dtype, case.cos_dtype, case.sin_dtype)
                                                  for case in cases))
        devices = cluster.devices if cluster else parse_devices(device_list(request), settings.toolkit)
    except BaseException:
        if writer is not None:
            writer.close()
        raise
    run = _Run(cases, writer, request, run_record.run_info(settings, devices, asked=request.runner))
    unwritten: PrmgError | None = None
    handlers = {signum: signal.signal(signum, run.on_signal) for signum in STOP_SIGNALS
                if signal.getsignal(signum) is not signal.SIG_IGN}      # ignored (a background job's Ctrl-C): kept so
    try:
        try:
            with cluster.executor(settings) if cluster else execute.Executor(settings, devices, cases) as executor:
                info = run.info
                info.soc, info.accepted_modes = executor.target.get("soc", ""), executor.target.get("accepted_modes")
                info.driver_version = executor.target.get("driver_version") or info.driver_version    # as loaded
                run_record.preloaded(info, executor.target.get("preloaded") or ())
                run_record.nodes_files(info, executor.target)
                constraints.check_chip(cases, info.soc)          # a chip without an operator of the run: one line
                run.start(stored, run_record.recorded_settings(info, settings, executor.target), selection)
                _unfinished_reports(targets, info, request)
                if run.todo:
                    executor.run(run.todo, run.on_result, request.fail_fast, _coverage_ahead(targets, run.todo))
                changed = executor.toolkit_changes(run.settings)
            if request.fail_fast and len(run.finished) < len(cases):
                run.stopped = "the run stopped at the first failure (--fail-fast)"
            if changed:
                run.stop(f"the toolkit changed while the run ran ({'; '.join(changed)}): its verdicts are of more "
                         f"than one build, and its record names the first", ExitCode.USAGE)
        except PrmgError as error:
            if not run.unrecorded:
                raise
            run.stop(f"the run stopped: {visible(str(error))}", ExitCode.USAGE)
            run.writer.close()
            run.writer = None
        except KeyboardInterrupt as stop:
            run.stop(*_stopped(stop_signal(stop)))
        finally:
            run.ending = True
            run.progress.close()
        late = run.late or take_lost_stop()     # a stop raised in a finalizer is lost: it stops the run here
        if late and not run.stopped:            # after the last case, before the reports: the run was stopped
            run.stop(*_stopped(late))
        ordered, missing = run.finish(settings, selection)
        try:
            _write_reports(targets, ordered, run.info, request, cases)
        except PrmgError as error:              # said after why the run stopped (a results file failing too)
            unwritten = error
    finally:
        with execute.signals_held():            # the run is over: a signal now is dropped, as run.on_signal does
            for signum, handler in handlers.items():
                signal.signal(signum, handler)
            drop_held_signals()
            outcome_final()                     # and by the entry point's handler until the process exits
    if run.stopped:                             # a results file failing is an error (exit 2), a signal is not
        error = "error: " if run.code == ExitCode.USAGE else ""
        missed = f": {plural(len(missing), 'case')} not run" if missing else ""
        sys.stderr.write(f"prmg: {error}{run.stopped}{missed}\n")      # an error: one line, never wrapped
    if unwritten is not None:
        raise unwritten
    return run.code or exit_code(ordered, request.strict)


def _stopped(signum: int) -> tuple[str, ExitCode]:
    """What a run the stop signal ``signum`` ended says of why it stopped (``the run was hung up (SIGHUP)``), and its
    exit code."""
    said, name = STOPS[signum]
    return f"the run was {said} ({name})", stopped_exit_code(signum)


class _Run:
    """One run's bookkeeping: the results finished (resumed or run), the results file and its run record, the
    progress line, and why and how the run stopped early (``stopped``, ``code``)."""

    def __init__(self, cases: Sequence[Case], writer, request, info: RunInfo):
        self.cases, self.writer, self.request, self.info = cases, writer, request, info
        self.finished: dict[str, CaseResult] = {}
        self.todo: list[Case] = []
        self.fingerprints: dict[str, str] = {}
        self.key, self.settings = "", {}          # the run's recorded settings (``recorded_settings``) and their key
        self.run_id = uuid.uuid4().hex
        self.recorded = False                     # the run record is in the results file
        self.progress = Progress(0, interval=request.progress_interval or 0)
        self.stopped, self.code = "", ExitCode.OK
        self.unrecorded: list[PrmgError] = []     # the results file failed: the run stops, reports still go out
        self.ending = False                       # the cases are over (or stopped): a signal now is recorded
        self.late = 0                             # the first stop signal recorded while ending

    def on_signal(self, signum, frame) -> None:
        """The run's handler of the stop signals. While cases run, the first one stops the run: it raises
        ``KeyboardInterrupt`` or ``Terminated`` in the main thread (never while a result is being recorded:
        ``execute.signals_held``). After that, or once the cases are over, a signal is recorded in ``late``:
        the run ends whole, its reports and results file say the same, and the process exits with the code
        the reports state (a signal that arrives before they are written makes it the signal's code)."""
        if self.ending:
            self.late = self.late or signum
            return
        self.ending = True
        raise stop_exception(signum)

    def start(self, stored, settings: dict, selection: Sequence[Case]) -> None:
        """Once the workers are up (the SoC known): the settings key, the results ``--resume`` takes, the run
        record (and, when ``--results`` names another file than ``--resume``, a copy of each result taken, so that
        file holds the whole run), the header of a table on standard output, and the cases left to run."""
        from ..reports import store

        self.key, self.settings = store.settings_key(settings), settings
        if self.writer is not None or stored is not None:
            self.fingerprints = {case.name: fingerprint_or_empty(case) for case in self.cases}
        if stored is not None:
            from ..reports.chips import run_chips

            chips = None if self.request.cluster else run_chips(self.info.devices, self.info.visible_devices)
            self.finished = run_record.resumed(stored, self.cases, self.fingerprints, self.key, chips)
        self.info.resumed = len(self.finished)
        if any(t.format == "table" and t.path is None for t in outputs.parse_targets(list(self.request.report),
                                                                                     self.request.output)):
            write_stdout(outputs.labels.format_header(self.info, judged=self.cases) + "\n")   # a results file
        note = outputs.labels.modes_note(self.info)                          # failing now still has it above
        if note:
            say(f"warning: {note[2:]}")
        self._record(settings, selection)
        if self.writer is not None and stored is not None and not same_file(stored.path, str(self.writer.path)):
            self._append(*[replace(self.finished[case.name], run_id=self.run_id)   # --resume A --results B:
                           for case in self.cases if case.name in self.finished])    # B holds the whole run, each
            # record taken as this run's (judged under its settings: trusted), synced once (Writer.append_all)
        self.todo = [case for case in self.cases if case.name not in self.finished]
        self.progress = Progress(len(self.todo), interval=self.request.progress_interval or 0)

    def _record(self, settings: dict, selection: Sequence[Case]) -> None:
        """Write the run record (``store.RunRecord``) unless it is written."""
        from ..reports.store import RunRecord

        if self.writer is not None and not self.recorded:
            self.recorded = True
            self._append(RunRecord(self.run_id, self.request.shard or "", [case.name for case in selection],
                                   settings, self.info.to_dict(),
                                   execute.together(selection) if self.request.shard else {}))

    def _append(self, *records) -> None:
        """Append ``records`` to the results file; when that fails, the run stops (its reports still go out)."""
        try:
            self.writer.append_all(records)
        except PrmgError as error:
            self.unrecorded.append(error)
            raise

    def on_result(self, index: int, result: CaseResult) -> None:
        """Record one finished case: in the results file and among the finished, both or neither (signals are
        held meanwhile), then on the progress line."""
        lost = take_lost_stop()                  # raised inside a finalizer, which swallowed it: raise it again here
        if lost:
            raise stop_exception(lost)
        result.fingerprint = self.fingerprints.get(result.name, "")
        result.judged_under, result.run_id = self.key, self.run_id
        with execute.signals_held():
            if self.writer is not None:
                self._append(result)
            self.finished[result.name] = result
        self.progress.update(result)

    def stop(self, why: str, code: int) -> None:
        self.stopped, self.code = why, code
        self.info.stopped_code = int(code)

    def finish(self, settings, selection) -> tuple[list[CaseResult], list[CaseResult]]:
        """The results in case order, the cases never reached as ``not_run`` (also written to the results file,
        after the run record when the run stopped before writing it)."""
        missing = _not_run(self.cases, self.finished, self.stopped or "no result was recorded", settings)
        if self.writer is not None:
            self._record(self.settings or run_record.recorded_settings(self.info, settings), selection)
            for result in missing:
                result.run_id = self.run_id
            self.writer.append_all(missing)
            self.writer.close()
        position = {case.name: index for index, case in enumerate(self.cases)}
        ordered = sorted([*self.finished.values(), *missing], key=lambda result: position[result.name])
        return ordered, missing


def _unfinished_reports(targets, info: RunInfo, request) -> None:
    """Each report file of ``targets``, as the cases start, replaced by one of this run not finished (a ``not_run``
    saying so): a run killed (SIGKILL: out of memory, a CI job's timeout) writes no report, and an earlier run's green
    one left in its place (a runner keeping its workspace) stood for it. The run's own reports replace it. Not a
    stream or device (``json:/dev/stderr``: two JSON documents, the first not_run), which keeps no earlier report."""
    unfinished = run_record.unfinished_results(info)
    for target in (target for target in targets if target.path is not None and not files.is_stream(target.path)):
        write_text(target.path, outputs.render_pieces(target.format, unfinished, info,
                                                      outputs.RenderOptions(verbose=request.verbose)))


def _write_reports(targets, results: list[CaseResult], info: RunInfo, request, cases: Sequence[Case] = ()) -> None:
    """Every report of ``targets`` (of ``cases``, the run's); when none goes to standard output, the failures and the
    summary line are printed there, so the console still tells what happened. A report that cannot be written (a
    full disk) does not keep the others from being written: PrmgError for each, once all were tried."""
    options = outputs.RenderOptions(verbose=request.verbose, wide=request.wide, max_details=request.max_details,
                                    cases=tuple(cases))
    from ..reports.outputs.table import failure_lines

    # a table on stdout without its header, printed before the first case
    unwritten = outputs.write_targets(targets, lambda target: outputs.render_pieces(
        target.format, results, info, options if target.path else replace(options, header=False)), results,
        lambda: failure_lines(results, info=info) + outputs.labels.fault_lines(info, results)
        + outputs.labels.device_lines(results))
    if unwritten:
        raise PrmgError.all_of(unwritten)
