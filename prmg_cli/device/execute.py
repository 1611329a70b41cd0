"""Running many cases: worker processes that outlive cases, crash isolation, timeouts, wedged devices.

One worker process per device holds the loaded libraries and one ``AclSession``; the parent sends it
cases and gets ``CaseResult`` records back (``run_case`` is the whole per-case pipeline). A worker that
dies (segfault, abort) or overruns the timeout costs only the case it was running: that case is
reported as ``error`` and a fresh worker takes the next one. After ``max_timeouts`` timeouts in a row a
device is considered wedged and gets no more cases; when no device is left, the cases still waiting are
reported ``not_run`` with the reason. A worker dies with its parent (``PR_SET_PDEATHSIG``, and it checks
its parent between cases), so no worker outlives a killed run.

The parent streams results to ``on_result`` as they finish; ``Executor.run`` returns them in case order.
What a worker does (``CaseWorker``) and the run's bookkeeping (``Schedule``: case order, prechecks,
fail-fast, ``not_run``) are shared with the Ray executor (``cluster.py``); only where the worker lives
differs.
"""

from __future__ import annotations

import bisect
import contextlib
import ctypes
import faulthandler
import hashlib
import multiprocessing
import os
import signal
import sys
import time
import traceback
from dataclasses import dataclass, field, replace
from multiprocessing.connection import wait
from typing import Callable, Iterable, Iterator, Sequence

from . import linkage, provenance
from .toolkit import runner_kind
from .. import dtypes
from ..case import Case, element_count, storage_elements
from ..cases.loader import case_record
from ..dtypes import lookup
from ..errors import STOP_SIGNALS, PrmgError
from ..files import MiB, describe_size
from ..judging.checks import CheckContext, fold_checks, run_checks
from ..judging.judge import judge, phase_of, slice_arrays as judge_slice_arrays
from ..judging.standards import standard_of
from ..judging.verdict_metrics import key_metric
from ..ops import OPERATORS, constraints
from ..ops.targets import Target
from ..results import STATUSES, CaseResult, chip_ranges, plural
from ..vocab import (DATA_ALIGN, DEFAULT_OP, DEFAULT_SUPPORTED_MODES, GRAPH_REFUSING, GUARD_BYTES, MODE_NAMES, PHASES,
                     shard_numbers)

WORKSPACE_BYTES = 16 << 20          # what the operator asks for (the 950 tiling's 16 MiB workspace)
# Device memory a case may leave taken beyond prmg's own buffers (a runtime's caches, a kernel binary loaded once)
# before its result carries a warning (``leak_warning``): a kernel leaking on every launch passes it at once.
LEAK_BOUND = 64 * MiB
# the per-stage milliseconds every result's ``timings`` holds (0 for a stage a case did not reach)
STAGES = ("inputs", "upload", "kernel", "download", "golden", "judge")
PR_SET_PDEATHSIG = 1
MAX_TIMEOUTS = 3                    # --max-timeouts: timeouts in a row after which a device is wedged (Wedging)


@dataclass(frozen=True)
class RunSettings:
    """Everything a worker needs to turn a case into a result, fixed for the whole run."""

    toolkit: object                           # toolkit.Toolkit (None until suite.settings_for picks it)
    supported_modes: frozenset = DEFAULT_SUPPORTED_MODES
    standard: str | None = None               # --standard: overrides every case's standard and tolerance
    timeout: float | None = None              # seconds per case; None = no limit
    max_memory: int | None = None             # bytes; None = no limit
    strict: bool = False                      # --strict: a warning fails its case
    max_timeouts: int = MAX_TIMEOUTS          # timeouts in a row after which a device is wedged
    checks: tuple = ()                        # --check: golden-free checks run on every pass case
    golden: bool = True                       # --no-golden: judge by the checks alone
    check_options: dict = field(default_factory=dict)    # the checks' options (--repeat ...): name -> value
    save_failures: str | None = None          # --save-failures DIR: artifacts of every failed case
    bfloat16: bool = True                     # a case uses bfloat16: workers load ml_dtypes before any case
    each_device: bool = False                 # --each-device: every case runs on every device (``EachDevice``)
    device: str = ""                          # the worker's device, as its results name it (``CaseWorker.label``)


def expect_label(case: Case) -> str:
    """A case's expectation as text: ``pass``, ``error any`` or ``error 561002``."""
    return "pass" if case.expect.success else f"error {case.expect.error}"


def case_result(case: Case, status: str, **fields) -> CaseResult:
    """A CaseResult for ``case`` carrying everything that reproduces it: op, dtypes, shapes, slice, mode,
    seed and generator, expectation (``fields`` may say it as a call path must answer it), and the case-file mapping
    with its generator (``definition``, ``loader.case_record``)."""
    fields.setdefault("expect", expect_label(case))
    return CaseResult(
        name=case.name, status=status, source=case.source, op=case.op, dtype=case.dtype,
        cos_dtype=case.cos_dtype, sin_dtype=case.sin_dtype, shape=list(case.shape), cos_shape=list(case.cos_shape),
        sin_shape=list(case.sin_shape), rotary_mode=MODE_NAMES.get(case.rotary_mode, str(case.rotary_mode)),
        partial_slice=list(case.partial_slice), seed=case.seed, generator=case.generator,
        known_defect=case.known_defect.describe() if case.known_defect else "",
        checks=list(case.checks), golden=case.golden, tags=list(case.tags),
        definition=case_record(case), **fields)


def judging(case: Case, settings: RunSettings) -> tuple[str, dict]:
    """The standard and tolerance a case is judged by (``standards.standard_of``): under ``--standard`` that
    standard's own defaults (the case's tolerance dropped), else the case's tolerance."""
    return standard_of(case.standard, settings.standard), {} if settings.standard else dict(case.tolerance)


def guarded(size: float) -> int:
    """The device bytes a buffer of ``size`` bytes takes with its guard zones: ``GUARD_BYTES`` before, the data
    rounded up to ``DATA_ALIGN``, ``GUARD_BYTES`` after (``acl``)."""
    return 2 * GUARD_BYTES + -(-int(size) // DATA_ALIGN) * DATA_ALIGN


def _storage_bytes(case: Case, tensor: str) -> tuple[int, int]:
    """(bytes, elements) of ``tensor``'s storage (``storage_elements``) in its dtype."""
    elements, dtype = storage_elements(case, tensor), case.dtype if tensor == "dy" else getattr(case, f"{tensor}_dtype")
    return elements * lookup(dtype).numpy.itemsize, elements


def memory_need(case: Case) -> tuple[int, int]:
    """Estimated (host, device) bytes for ``case``.

    host: the inputs; each tensor's storage three times (its array, the image uploaded, the one read back: ``acl``)
    and, for a view at an offset or strided, three bytes per storage element (the masks of ``acl._outside_view``);
    the golden in dy's dtype, and ~6 float64 arrays over the slice (golden, magnitude, actual, error, budget, mask);
    device: each storage and the 16 MiB workspace, each with its guard zones (``guarded``). As measured: dy at an
    offset of 2**26 float32 elements (256 MiB of storage) peaked at 1.20 GiB in the emulator's worker, which holds
    both (``precheck``).
    """
    start, end = case.partial_slice
    width = max(end - start, 0)
    dy_items = element_count(case.shape)
    rows = dy_items // max(int(case.shape[-1]), 1) if case.shape else 0
    storages = {tensor: _storage_bytes(case, tensor) for tensor in ("dy", "cos", "sin")}
    host = 2 * dy_items * lookup(case.dtype).numpy.itemsize + 6 * 8 * rows * width + sum(
        3 * size + (3 * elements if case.offset_of(tensor) or case.strides_of(tensor) is not None else 0)
        for tensor, (size, elements) in storages.items())
    device = sum(guarded(size) for size, _ in storages.values()) + guarded(WORKSPACE_BYTES)
    return host, device


def default_max_memory() -> int:
    """Half of this machine's physical memory: the default ``--max-memory``."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def precheck(case: Case, settings: RunSettings, accepted: Sequence[int] | None = None) -> CaseResult | None:
    """The result of a case that must not run (a pass case of a mode the target lacks and the toolkit does not accept
    either, a case over the memory limit), else None. ``accepted``: the modes the toolkit's first phase accepts
    (``AclSession.accepted_modes``; None when it cannot be asked): a toolkit that accepts a mode claims to implement
    it, so the pass cases of that mode run and are judged, whatever ``--supported-modes`` says."""
    standard, _ = judging(case, settings)
    reason = constraints.skip_reason(case, settings.supported_modes | frozenset(accepted or ()))
    if reason:
        return case_result(case, "skipped", message=reason, standard=standard)
    if settings.max_memory is not None:
        host, device = memory_need(case)
        shared = runner_kind(settings.toolkit) == "emulator"      # its device memory is the host's
        if (host + device if shared else max(host, device)) > settings.max_memory:
            return case_result(case, "error", standard=standard, message=(
                f"needs about {describe_size(host)} of host and {describe_size(device)} of device "
                f"memory{' (one memory: the emulator)' if shared else ''}, over --max-memory "
                f"{describe_size(settings.max_memory)}; not attempted"))
    return None


def known_defect_status(case: Case, result: CaseResult, kinds=frozenset(), status: int | None = None) -> CaseResult:
    """A known-defect case's result as strict xfail: ``xfailed`` (the run stays green) only when what went wrong
    is the defect the case names -- the call returned the defect's status and nothing else was wrong (``kinds``
    is exactly ``{"status"}`` and ``status`` the defect's), or, for a wrong result, the slice's values failed within
    the defect's bounds (``defects.beyond``), the checks that judge values perhaps too. Anything else (a crash, a
    timeout, a guard zone or input damaged, another status, a check failing where the result is right:
    ``unexplained``) stays ``failed`` or ``error`` with a note; a pass is ``xpassed`` (the run fails, so that the
    marker gets removed)."""
    defect = case.known_defect
    if not defect:
        return result
    if result.status == "passed":
        return replace(result, status="xpassed", message=f"passed although marked as a known defect "
                       f"({defect.describe()}): the defect is gone; remove known_defect from the case")
    if result.status not in ("failed", "error"):
        return result
    met = (kinds == {"status"} and status == defect.status) if defect.status is not None \
        else "result" in kinds and kinds <= {"result", "check"}
    if met and result.status == "failed":
        return replace(result, status="xfailed", message=f"known defect ({defect.describe()}): {result.message}")
    return replace(result, message=f"{result.message} (not the known defect: {defect.describe()})")


def build_dependent(case: Case, result: CaseResult, kinds, target: Target, outcome=None,
                    supported_modes=DEFAULT_SUPPORTED_MODES) -> CaseResult:
    """A case whose expectation holds for some upstream builds only (``case.builds``), run on a toolkit whose build
    is unknown or not among them (``targets.Target.build``), that failed only by its status: ``xfailed``, saying
    that the expectation depends on the toolkit build (targets module docstring); any other result as it is. An
    aclnn ``outcome`` must be what some build returns (``constraints.build_outcomes``: the status and its phase):
    a status no build gives (the no-op refused at the launch) is the toolkit's failure, not its build's. Graph
    mode's outcome (``outcome.path`` geir) is held to graph mode's table: each build's answer in GE's status and
    phase (``constraints.build_outcomes`` with ``graph``), so a failure of GE's run phase is never a build's."""
    if not case.builds or result.status != "failed" or set(kinds) != {"status"} or target.build in case.builds:
        return result
    if outcome is not None:
        graph = outcome.path == "geir"
        phase = (outcome.phase if graph else phase_of(case, outcome.failed_call)) if outcome.status else None
        outcomes = constraints.build_outcomes(case, supported_modes, target.soc, graph=graph)
        if not constraints.explains((outcome.status, phase), outcomes, GRAPH_REFUSING if graph else tuple(PHASES)):
            return result
    return replace(result, status="xfailed", message=f"expectation depends on the toolkit build: it holds for builds "
                   f"{', '.join(case.builds)}; this toolkit states {target.describe_build()}: {result.message}")


def strict_status(result: CaseResult, settings: RunSettings) -> CaseResult:
    """Under ``--strict`` a passing (or known-defect) result with warnings fails, its first warning as the message."""
    if settings.strict and result.status in ("passed", "xfailed") and result.warnings:
        return replace(result, status="failed", message=f"--strict: {result.warnings[0]}")
    return result


# What may go wrong with the runner or the machine while a case runs: the case is an ``error``, the run goes on.
# Any other exception is a bug in prmg: it ends the run with exit code 3 and its traceback (``InternalError``).
RUNNER_FAILURES = (PrmgError, OSError, MemoryError)


class InternalError(Exception):
    """A bug in prmg met while running a case (in a worker): its traceback text, for exit code 3."""


def run_case(session, case: Case, settings: RunSettings, target: Target = Target()) -> tuple[CaseResult, bool]:
    """Make the inputs, launch the operator, judge the outcome: one case, in this process, on ``target`` (its chip
    and toolkit build: the case is judged as its chip's rules say, ``constraints.on_chip``, a status that only
    another build gives is ``build_dependent``; an operator the chip lacks is an ``error`` naming it).

    Returns the result and whether the session is still fit for more cases (not after a runner
    failure or a device fault, in any of the case's launches: the worker is then replaced). Timings (ms)
    per stage are in the result; so are the emulator faults that acted on any of its launches (None when
    the toolkit cannot say or a launch did not come back). A runner failure (``acl.AclError``,
    ``RUNNER_FAILURES``) makes the case an ``error``; any other exception is a bug in prmg and propagates.
    A runner of several call paths (``session.paths``: ``runners.pair``) runs the case through each on the same
    inputs, each judged as ``run_path`` judges a path alone (its failures' artifacts in a folder of its own), and
    ``differential.combine`` makes the one result.
    """
    from ..inputs.seeded import make_inputs

    started = time.perf_counter()
    try:
        constraints.check_chip([case], target.soc_name)
    except PrmgError as error:
        return case_result(case, "error", message=str(error), standard=judging(case, settings)[0]), True
    try:
        inputs = make_inputs(case)
    except RUNNER_FAILURES as exc:
        user = isinstance(exc, PrmgError)
        result = case_result(case, "error", message=str(exc) if user else f"{type(exc).__name__}: {exc}",
                             standard=judging(case, settings)[0], faults=[] if user else None,
                             duration_s=time.perf_counter() - started, path=getattr(session, "path", ""))
        return known_defect_status(case, result), user and not session.device_faulted
    timings = {"inputs": (time.perf_counter() - started) * 1e3}
    paths = getattr(session, "paths", None)
    if not paths:
        result, fit, _ = run_path(session, case, settings, inputs, started, timings, target)
        return result, fit
    from .differential import combine

    runs = [(name, *run_path(path, case, _within(settings, name), inputs, started, dict(timings), target))
            for name, path in paths]
    return (combine(case, inputs, [(name, result, outcome) for name, result, _, outcome in runs]),
            all(fit for _, _, fit, _ in runs))


def _within(settings: RunSettings, path: str) -> RunSettings:
    """``settings`` of one of several call paths: its failures' artifacts under ``--save-failures``/<path>."""
    if not settings.save_failures:
        return settings
    return replace(settings, save_failures=os.path.join(settings.save_failures, path))


def run_path(session, case: Case, settings: RunSettings, inputs, started: float, timings: dict,
             target: Target = Target()) -> tuple[CaseResult, bool, object]:
    """One call path's launch of ``case`` on ``inputs`` (made at ``started``, ``timings`` so far), judged:
    (the result, whether the session is still fit, the ``acl.Outcome`` or None when there is none).

    The case is judged as its chip's rules say (``constraints.on_chip``, a note in its details) and as the path
    must answer it (``session.judged_case``: graph mode's expectation, say); when that is a text, the path has no
    form of the case, which is skipped here with that reason. A status that only another build than ``target``'s
    gives is ``build_dependent``. The result records the case as written and the path (``session.path``)."""
    from .acl import AclError

    standard, tolerance = judging(case, settings)
    path = getattr(session, "path", "")
    judged, chip_note = constraints.on_chip(case, settings.supported_modes, target.soc)
    judged = session.judged_case(judged, settings.supported_modes, target.soc) if hasattr(session, "judged_case") \
        else judged
    if isinstance(judged, str):
        return case_result(case, "skipped", message=judged, standard=standard, path=path,
                           duration_s=time.perf_counter() - started), True, None
    acted: list = []                              # each launch's Outcome.faults
    memory = session.memory_mark() if hasattr(session, "memory_mark") else None

    try:
        outcome = session.launch(judged, inputs)
        acted.append(outcome.faults)
        timings.update(outcome.timings)
        began = time.perf_counter()
        golden = case.golden and settings.golden
        verdict = judge(judged, inputs, outcome, standard, tolerance, golden=golden, timings=timings)
        timings["judge"] = (time.perf_counter() - began) * 1e3 - timings["golden"]    # golden split out
        names = tuple(dict.fromkeys(case.checks + settings.checks))
        samples = [outcome.kernel_ms] if outcome.kernel_ms is not None else []

        def launch(launched_case, launched_inputs, **how):
            """A launch for a check (``how``: the session's launch options); the kernel times of the case's own
            repeats (its inputs, its launch as the main one's) are kept."""
            repeated = session.launch(launched_case, launched_inputs, **how)
            acted.append(repeated.faults)
            if launched_case is judged and launched_inputs is inputs and not how and repeated.kernel_ms is not None:
                samples.append(repeated.kernel_ms)
            return repeated

        if names and case.expect.success and outcome.status == 0 and outcome.dy is not None:
            checked = time.perf_counter()
            context = CheckContext(judged, inputs, outcome, launch, settings.check_options, target.soc)
            verdict = fold_checks(verdict, run_checks(names, context), context, golden)
            timings["checks"] = (time.perf_counter() - checked) * 1e3
    except (AclError, *RUNNER_FAILURES) as exc:
        user = isinstance(exc, PrmgError)
        result = case_result(case, "error", message=str(exc) if user else f"{type(exc).__name__}: {exc}",
                             standard=standard, faults=faults_acted(acted) if user else None,
                             duration_s=time.perf_counter() - started, timings=timings, path=path,
                             expect=expect_label(judged))
        return known_defect_status(judged, result), user and not session.device_faulted, None
    leaked = leak_warning(memory, session.memory_mark(), len(acted)) if memory is not None else ""
    result = case_result(case, verdict.status, message=verdict.message, metrics=verdict.metrics,
                         key_metric=key_metric(verdict.metrics),
                         details=[chip_note] * bool(chip_note) + verdict.details,
                         warnings=list(verdict.warnings) + [leaked] * bool(leaked), error_map=verdict.error_map,
                         error_code=outcome.status,
                         standard=standard, kernel_ms=outcome.kernel_ms, kernel_samples=samples,
                         runner=runner_kind(settings.toolkit), faults=faults_acted(acted),
                         duration_s=time.perf_counter() - started, path=path, expect=expect_label(judged),
                         timings={key: round(value, 3) for key, value in {**dict.fromkeys(STAGES, 0.0),
                                                                          **timings}.items()})
    result = strict_status(result, settings)
    if result.status == "failed" and settings.save_failures:
        from .artifacts import save_failure

        result.device = settings.device                     # meta.json names the chip that computed it
        arrays = verdict.arrays or (judge_slice_arrays(case, inputs, outcome.dy, standard, tolerance)
                                    if golden and outcome.status == 0 else {})      # a contract breach
        result.artifacts = save_failure(settings.save_failures, case, result, inputs, outcome.dy, arrays)
    kinds = verdict.kinds | ({"warning"} if result.status == "failed" and verdict.status == "passed" else set())
    if chip_note and result.status == "failed":
        result.message = f"{chip_note}; {result.message}"
    result = build_dependent(case, result, kinds, target, outcome, settings.supported_modes)
    return (strict_status(known_defect_status(judged, result, kinds, outcome.status), settings),
            not session.device_faulted, outcome)


def leak_warning(before: tuple[int, int] | None, after: tuple[int, int] | None, launches: int) -> str:
    """A warning when the device bytes lost between two ``memory_mark``s of a session, (free, held by the session's
    own buffers or caches) before and after a case, ``lost = (free before - free after) - (held after - held
    before)``, exceed ``LEAK_BOUND``, naming ``lost / launches`` per launch ("" otherwise, or when either mark is
    None); ``--strict`` fails it, as any warning. Every session's marks (aclnn's, graph mode's) come here."""
    if before is None or after is None:
        return ""
    lost = (before[0] - after[0]) - (after[1] - before[1])
    if lost <= LEAK_BOUND:
        return ""
    return (f"device memory: {lost / MiB:.0f} MiB fewer free after the case than before it, beyond prmg's own buffers: "
            f"{lost / max(launches, 1) / MiB:.0f} MiB per launch over {plural(launches, 'launch', 'launches')} "
            f"(a case may leave {LEAK_BOUND // MiB} MiB): the kernel or the runtime leaks device memory")


def faults_acted(launches: list) -> list[str] | None:
    """The emulator faults that acted on any of a case's launches (each an ``Outcome.faults``), in order of
    first appearance; None when some launch cannot say (a toolkit without the hook)."""
    if any(faults is None for faults in launches):
        return None
    return list(dict.fromkeys(name for faults in launches for name in faults))


@contextlib.contextmanager
def signals_held():
    """Hold the stop signals (Ctrl-C, SIGTERM, SIGHUP) for the block (``pthread_sigmask``): one that arrives
    meanwhile is delivered when the block ends, so that what the block does (fork a worker, record a result in the
    results file and in the report) is done whole or not at all."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def leave_stops_to_parent() -> None:
    """In a forked child: Ctrl-C ignored (the parent owns it: a terminal sends it to the whole process group), the other
    stop signals (SIGTERM, SIGHUP) killing it as by default, instead of the parent's handler it inherited, but for a
    SIGHUP the parent ignores (``nohup prmg run``: a closed terminal must not kill the workers either); unblocked, as
    it was forked while the parent held them."""
    for signum in STOP_SIGNALS:
        if signum == signal.SIGINT:
            signal.signal(signum, signal.SIG_IGN)
        elif signum != signal.SIGHUP or signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


def die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent dies (``prctl(PR_SET_PDEATHSIG)``), and die now
    if the parent is already gone; elsewhere this does nothing and the parent checks are the fallback."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


class CaseWorker:
    """The worker loop's state and step, wherever the worker lives (a forked process here, a Ray actor in
    ``cluster.py``): one session of the run's runner on one device (``runners.open_session``: an ``AclSession``,
    a ``GeirSession``, or both), and each case through ``run_case``.

    ``fit`` turns False after a case that left the session unfit (a runner failure, a device fault); the
    owner then replaces the worker instead of sending it more cases. Under ``--each-device`` each worker keeps its
    failures' artifacts in ``--save-failures``/device-N (every device runs every case: one folder would mix chips).
    """

    def __init__(self, settings: RunSettings, device: int, label: str | None = None):
        from .. import native
        from .runners import open_session

        faulthandler.disable()                         # a crash is reported as the case's result
        native.available()          # build (first use: seconds of gcc) now, not inside the first case's --timeout
        if settings.bfloat16:
            dtypes.bfloat16()       # 1-2 s of import, likewise (a no-op when inherited from the parent)
        self.device = device
        self.label = str(device) if label is None else label      # what each result's ``device`` says
        if settings.each_device and settings.save_failures:     # every device runs every case: a folder each
            settings = replace(settings, save_failures=os.path.join(settings.save_failures, f"device-{device}"))
        self.settings = replace(settings, device=self.label)
        self.session = open_session(settings.toolkit, device)
        self.preloaded = linkage.taking(settings.toolkit)     # the toolkit's libraries are mapped by now
        if settings.strict:
            try:
                linkage.refuse_interposers(self.preloaded, settings.toolkit.root)
            except PrmgError:
                self.close()
                raise
        self.target = Target(self.session.soc_name(), provenance.toolkit_version(settings.toolkit.root))
        self.fit = True

    def describe(self) -> dict:
        """What the worker found on its device: ``soc`` (aclrtGetSocName(), "" when the runtime cannot say),
        ``accepted_modes`` (the rotary modes the first phase of the grad, or of the first operator the chip has,
        accepts, ``AclSession.accepted_modes``; None when the toolkit cannot be asked), ``driver_version`` (of the
        driver the runtime loaded into this process, ``provenance.driver_version``), ``toolkit_version`` and
        ``preloaded`` (``linkage.taking``: each preloaded library, and each loaded ahead of the toolkit, with what it
        takes)."""
        chip = self.target.soc
        probed = next((name for name, spec in OPERATORS.items() if chip is None or chip in spec.socs), DEFAULT_OP)
        accepted = self.session.accepted_modes() if probed == DEFAULT_OP else self.session.accepted_modes(probed)
        return {"soc": self.target.soc_name, "accepted_modes": accepted, "driver_version": provenance.driver_version(),
                "toolkit_version": self.target.version,
                "preloaded": [[entry.path, list(entry.symbols), list(entry.called)] for entry in self.preloaded]}

    def run(self, case: Case) -> tuple[CaseResult, bool]:
        """``run_case`` on this worker's session: the result (naming the device: ``label``) and whether the session is
        still fit."""
        result, self.fit = run_case(self.session, case, self.settings, self.target)
        result.device = self.label
        return result, self.fit

    def close(self) -> None:
        """Close the session and finalise ACL, best effort (the device may have faulted)."""
        from .acl import finalize_all

        try:
            self.session.close()
            finalize_all()
        except Exception:
            pass


def _worker_main(conn, settings: RunSettings, device: int, parent: int, known: Sequence[Case] = ()) -> None:
    """A worker's life: open a session on ``device``, then run each case the parent sends (a case, or its
    position in ``known``, the cases the worker was forked with), until told to stop, until its session is no
    longer fit (it then exits and the parent starts a fresh one), or until its parent is gone."""
    die_with_parent()
    if os.getppid() != parent:
        os._exit(0)
    leave_stops_to_parent()
    worker = None
    try:
        worker = CaseWorker(settings, device)
        found = worker.describe()                      # probes the device: it may fail as the session's opening
    except Exception as exc:
        if worker is not None:
            worker.close()
        why = str(exc) if isinstance(exc, PrmgError) else f"{type(exc).__name__}: {exc}"      # a user error: its line
        conn.send(("init-failed", f"device {device}: {why}", False))
        return
    conn.send(("ready", found, True))
    try:
        while worker.fit:
            while not conn.poll(1.0):
                if os.getppid() != parent:             # orphaned: nobody will read the result
                    os._exit(0)
            case = conn.recv()
            if case is None:
                break
            if isinstance(case, int):
                case = known[case]
            try:
                result, fit = worker.run(case)
            except Exception:                          # a bug in prmg: the parent ends the run (exit code 3)
                conn.send(("internal", f"case '{case.name}':\n{traceback.format_exc()}", False))
                break
            conn.send(("result", result.to_dict(), fit))
    except (EOFError, OSError):
        pass                                           # the parent closed the pipe: leave quietly
    finally:
        worker.close()


def tiling_key(case: Case) -> tuple:
    """What a cache of tilings or executors keyed by the tensors alone sees of ``case``: its operator and its tensors'
    shapes and dtypes, not its ``rotary_mode`` or ``partialSlice`` (the emulator's ``tiling_cache`` fault)."""
    return case.op, case.shape, case.cos_shape, case.sin_shape, case.dtype, case.cos_dtype, case.sin_dtype


def tiling_attributes(case: Case) -> tuple:
    """What such a cache misses of ``case``: its rotary_mode and the partialSlice it passes."""
    return case.rotary_mode, case.slice_argument()


def sibling_groups(cases: Sequence[Case], indices: Iterable[int]) -> list[list[int]]:
    """The tiling siblings among ``cases[i]`` for ``i`` in ``indices``: per ``tiling_key`` whose cases there have
    several ``tiling_attributes``, their indices in the order given (a tiling cache keyed by the tensors alone hands
    each of them another's tiling). The schedule keeps each group on one worker, ``--shard`` in one shard."""
    keys: dict[tuple, list[int]] = {}
    for index in indices:
        keys.setdefault(tiling_key(cases[index]), []).append(index)
    return [group for group in keys.values() if len({tiling_attributes(cases[index]) for index in group}) > 1]


class _Siblings:
    """The waiting cases of one ``tiling_key`` that has several ``tiling_attributes``: per attributes their indices in
    case order, and the first index of each (``heads``, in order), so that the first waiting sibling of another kind
    than a case's is one of the first two heads, whatever the number of kinds."""

    def __init__(self, kinds: dict[int, tuple]):
        self._kind = kinds                             # case index -> its tiling_attributes (the run's, shared)
        self._kinds: dict[tuple, list[int]] = {}
        self._heads: list[int] = []

    def __len__(self) -> int:
        return len(self._kinds)

    def add(self, index: int) -> None:
        """Case ``index`` is waiting (again)."""
        indices = self._kinds.setdefault(self._kind[index], [])
        if indices and index < indices[0]:
            self._heads.remove(indices[0])
        if not indices or index < indices[0]:
            bisect.insort(self._heads, index)
        bisect.insort(indices, index)

    def remove(self, index: int) -> None:
        """Case ``index`` is no longer waiting (taken or held)."""
        indices = self._kinds[self._kind[index]]
        if indices[0] == index:
            self._heads.remove(index)
            if len(indices) > 1:
                bisect.insort(self._heads, indices[1])
        indices.remove(index)

    def other_than(self, index: int) -> int | None:
        """The first waiting case of another kind than case ``index``'s, None when none waits."""
        return next((head for head in self._heads[:2] if self._kind[head] != self._kind[index]), None)


class Schedule:
    """One run's bookkeeping, the same for every executor (local workers here, Ray actors in ``cluster.py``).

    Results are kept in case order; the cases waiting are handed out in case order (a case given back,
    because the worker it was queued on went away before starting it, goes back to its place); cases that
    need no worker (``precheck``) are finished at once; with ``fail_fast`` nothing more is handed out after
    the first result that is not ok; ``not_run`` ends the cases still waiting when no worker is left.

    Siblings stay together: a device taking a case that has siblings waiting (cases of its ``tiling_key`` with other
    ``tiling_attributes``) gets the first of them as its next case, held for it alone, so that a cache keyed without
    the attributes meets two calls it confuses in one process however many workers share the run (with the cases
    handed out in order, three siblings went to three workers and such a bug passed). A device whose worker goes
    away (``give_back``, ``drop``, ``release``) gives its held sibling back.
    """

    def __init__(self, cases: Sequence[Case], settings: RunSettings,
                 on_result: Callable[[int, CaseResult], None] | None = None, fail_fast: bool = False,
                 accepted: Sequence[int] | None = None):
        self.cases = cases
        self.settings = settings
        self.results: list[CaseResult | None] = [None] * len(cases)
        self.stopped = False
        self._on_result = on_result
        self._fail_fast = fail_fast
        self._waiting: list[int] = []                  # case indices, in case order
        for index, case in enumerate(cases):
            early = precheck(case, settings, accepted)
            if early is None:
                self._waiting.append(index)
            else:
                self.finish(index, early)
        self._held: dict = {}                          # device -> the sibling it takes next
        kinds = {index: tiling_attributes(cases[index]) for index in self._waiting}
        self._siblings: dict[int, _Siblings] = {}      # case index -> the waiting cases of its key, of several kinds
        for indices in sibling_groups(cases, self._waiting):
            group = _Siblings(kinds)
            for index in indices:
                group.add(index)
                self._siblings[index] = group

    @property
    def waiting(self) -> bool:
        """True while a case waits for a worker and the run has not stopped."""
        return bool(self._waiting or self._held) and not self.stopped

    def waiting_for(self, device) -> bool:
        """True while a case waits for the worker of ``device``: any case but another device's held sibling."""
        return bool(self._waiting or device in self._held) and not self.stopped

    @property
    def next(self) -> int | None:
        """The index of the case ``take`` would give a device holding no sibling, None when none waits."""
        return self._waiting[0] if self._waiting else None

    def upcoming(self, device) -> int | None:
        """The index of the case ``take(device)`` would give, None when none waits for it."""
        return self._held[device] if device in self._held else self.next

    def take(self, device=None) -> int:
        """The index of the next case to start on ``device`` (call only while ``waiting_for`` it): its held sibling,
        else the first waiting case, holding that case's first waiting sibling for ``device``."""
        if device in self._held:
            return self._held.pop(device)
        index = self._waiting.pop(0)
        group = self._siblings.get(index)
        if group:
            group.remove(index)
            sibling = group.other_than(index)
            if sibling is not None:
                group.remove(sibling)
                del self._waiting[bisect.bisect_left(self._waiting, sibling)]
                self._held[device] = sibling
        return index

    def give_back(self, index: int, device=None) -> None:
        """Put case ``index`` (taken, never started on ``device``) back at its place among the waiting ones, and the
        sibling ``device`` holds."""
        self._return(index)
        self.release(device)

    def _return(self, index: int) -> None:
        bisect.insort(self._waiting, index)
        group = self._siblings.get(index)
        if group is not None:
            group.add(index)

    def release(self, device) -> None:
        """``device`` gives back the sibling it holds (its worker went away)."""
        if device in self._held:
            self._return(self._held.pop(device))

    def drop(self, device, why: str) -> None:
        """``device`` gets no more cases (wedged): here the other devices take them, its held sibling too."""
        self.release(device)

    def finish(self, index: int, result: CaseResult, device=None) -> None:
        """Record case ``index``'s result (naming the run's call path when it does not: a case no path ran), tell
        ``on_result``, and stop the run under fail-fast when it is not ok."""
        result.path = result.path or getattr(self.settings.toolkit, "calls", "")
        self.results[index] = result
        if self._on_result:
            self._on_result(index, result)
        if self._fail_fast and not result.info.ok:
            self.stopped = True

    def not_run(self, reason: str) -> None:
        """Finish every case still waiting (held siblings too) as ``not_run`` (``not run: <reason>``)."""
        waiting = sorted([*self._waiting, *self._held.values()])
        self._waiting, self._held, self._siblings = [], {}, {}
        for index in waiting:
            self.finish(index, self.never_ran(index, reason))

    def never_ran(self, index: int, reason: str, device: str = "") -> CaseResult:
        """The ``not_run`` result of case ``index`` (``not run: <reason>``)."""
        case = self.cases[index]
        return case_result(case, "not_run", message=f"not run: {reason}", standard=judging(case, self.settings)[0],
                           device=device)


class EachDevice(Schedule):
    """``--each-device``: every case runs on every device of ``devices`` (a lane of waiting cases each, in case order),
    so that a chip failing only some cases fails them wherever the cases would have gone; a case's result is told
    once every device has given its own, as one record (``combined``). A device that is dropped (wedged) finishes
    its lane as ``not_run``: no other device takes its cases, as they ran there already."""

    def __init__(self, cases: Sequence[Case], settings: RunSettings, devices: Sequence,
                 on_result: Callable[[int, CaseResult], None] | None = None, fail_fast: bool = False,
                 accepted: Sequence[int] | None = None):
        super().__init__(cases, settings, on_result, fail_fast, accepted)
        self._lanes = {device: list(self._waiting) for device in devices}
        self._waiting, self._siblings = [], {}       # every device runs every case, siblings one after the other
        self._parts: dict[int, dict] = {}

    @property
    def waiting(self) -> bool:
        return any(self._lanes.values()) and not self.stopped

    @property
    def next(self) -> int | None:
        return min((lane[0] for lane in self._lanes.values() if lane), default=None)

    def waiting_for(self, device) -> bool:
        return bool(self._lanes.get(device)) and not self.stopped

    def take(self, device=None) -> int:
        return self._lanes[device].pop(0)

    def give_back(self, index: int, device=None) -> None:
        bisect.insort(self._lanes[device], index)

    def drop(self, device, why: str) -> None:
        waiting, self._lanes[device] = self._lanes[device], []
        for index in waiting:
            self.finish(index, self.never_ran(index, f"device {device}: {why}", str(device)), device)

    def not_run(self, reason: str) -> None:
        for device in self._lanes:
            self.drop(device, reason)

    def finish(self, index: int, result: CaseResult, device=None) -> None:
        if device is None:                          # a precheck's result: no device runs the case
            return super().finish(index, result)
        parts = self._parts.setdefault(index, {})
        parts[device] = result
        if len(parts) == len(self._lanes):
            super().finish(index, combined([parts[device] for device in self._lanes]))
            del self._parts[index]


def combined(results: Sequence[CaseResult]) -> CaseResult:
    """One record of a case that ran on several devices (``EachDevice``; ``results`` in the devices' order): the worst
    one (``StatusInfo.severity``; the first of equals), with ``device_statuses`` mapping each device to its status,
    ``device`` naming the devices of that status (``1,3``), and, when the devices differ, its message saying where
    each status came from, before the rest (``[failed on device 3; passed on devices 0, 1, 2] ...``); its warnings
    every device's (each once), and ``device_warnings`` each device that warned -> its own, so that ``prmg report
    --strict`` fails the chip that warned alone (the first device's pass stood for a leak on device 1: no warning);
    its ``faults`` those that acted on any device (None when none is known to have, and a device could not say): a
    fault acting on device 1 alone was "named but never injected"."""
    worst = max(results, key=lambda result: result.info.severity)
    statuses = {result.device: result.status for result in results}
    worst.device_warnings = {result.device: result.warnings for result in results if result.warnings}
    worst.warnings = list(dict.fromkeys(warning for result in results for warning in result.warnings))
    known = [result.faults for result in results if result.faults is not None]
    worst.faults = list(dict.fromkeys(fault for faults in known for fault in faults)) or (
        None if len(known) < len(results) else [])
    worst.device = ",".join(device for device, status in statuses.items() if status == worst.status)
    worst.device_statuses = statuses
    where = where_prefix(statuses)
    worst.message = f"{where} {worst.message}" if where and worst.message else where or worst.message   # first: a
    return worst                                                                    # table cut to the terminal keeps it


def where_prefix(statuses: dict[str, str]) -> str:
    """``[failed on device 3; passed on devices 0-2]`` for the device -> status map of a case run on several
    devices whose statuses differ (the worst first; ``chip_ranges``), "" when they are one."""
    by_status: dict[str, list[str]] = {}
    for device, status in statuses.items():
        by_status.setdefault(status, []).append(device)
    if len(by_status) < 2:
        return ""
    ordered = sorted(by_status.items(), key=lambda item: -STATUSES[item[0]].severity)
    return "[" + "; ".join(f"{status} on {'device' if len(devices) == 1 else 'devices'} {chip_ranges(devices)}"
                           for status, devices in ordered) + "]"


class _Worker:
    """One worker process pinned to one device, the case it is running, and the cases sent after it."""

    def __init__(self, context, settings: RunSettings, device: int, known: Sequence[Case] = ()):
        self.device = device
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_worker_main, args=(child, settings, device, os.getpid(), known),
                                       daemon=True)
        self._positions = {id(case): position for position, case in enumerate(known)}
        with signals_held():                          # a stop signal now reaches the parent after the fork
            self.process.start()
        child.close()
        self.case: Case | None = None
        self.index = -1
        self.deadline: float | None = None
        self.unsent: set[int] = set()                 # the cases ``start`` could not send: the worker had exited
        self.queued: list[tuple[int, Case]] = []      # (index, case) sent after ``case``, not started yet
        self.released = False
        self.target: dict = {}                      # CaseWorker.describe() of the device

    def wait_ready(self, timeout: float = 120.0) -> None:
        """Wait for the worker's session to open; PrmgError (worker reaped) when it could not."""
        try:
            kind, message, _ = self.conn.recv() if self.conn.poll(timeout) else ("init-failed", "start timed out", 0)
        except (EOFError, OSError):
            self.process.join(5)
            kind, message = "init-failed", f"device {self.device}: {death_message(self.process.exitcode)}"
        if kind != "ready":
            self.kill()
            raise PrmgError(f"cannot open the runner: {message}")
        self.target = message

    @property
    def load(self) -> int:
        """The cases sent to the worker and not finished: the running one and those queued after it."""
        return (self.case is not None) + len(self.queued)

    def start(self, index: int, case: Case, timeout: float | None) -> None:
        """Send ``case`` (number ``index`` of the run) to the worker. An idle worker starts it now, and its
        deadline starts now; else it is queued and starts when the cases before it have finished. A case the
        worker was forked with goes as its position (no pickling on either side). A worker gone already (it crashed
        on the case it runs, or left after its last result: its end of the pipe is closed) takes it as sent:
        ``Executor._collect`` then reads what it left and gives its unstarted cases back (``unsent``: an idle one's
        too). The failed send was a BrokenPipeError out of the run, which typer turns into exit 1, nothing said."""
        try:
            self.conn.send(self._positions.get(id(case), case))
        except OSError:                               # EPIPE, ECONNRESET: the worker has exited
            self.unsent.add(index)
        if self.case is None:
            self.index, self.case = index, case
            self.deadline = time.monotonic() + timeout if timeout else None
        else:
            self.queued.append((index, case))

    def finished(self, timeout: float | None) -> None:
        """The running case has finished: the first queued case runs now (its deadline starts when its
        predecessor's result is read, a little after the worker started it)."""
        self.case, self.index, self.deadline = None, -1, None
        if self.queued:
            self.index, self.case = self.queued.pop(0)
            self.deadline = time.monotonic() + timeout if timeout else None

    def stop(self) -> None:
        """Ask the worker to finish, kill it when it does not within 2 s, and release it."""
        if self.released:
            return
        if self.process.is_alive() and self.case is None:
            try:
                self.conn.send(None)
            except (OSError, ValueError):
                pass
            self.process.join(2)
        self.kill()

    def kill(self) -> None:
        """End the worker at once (if it still runs) and release its pipe and process handle."""
        if self.released:
            return
        self.released = True
        if self.process.is_alive():
            self.process.kill()
        self.process.join()
        self.conn.close()
        self.process.close()


class Wedging:
    """The wedge policy (``--max-timeouts``): a device whose last ``limit`` cases timed out one after the other is
    wedged and gets no more cases (``wedged``: device -> why). Any other end of a case ends its run of timeouts.
    Devices are any keys: ids of this host, a cluster's (node, NPU) keys."""

    def __init__(self, limit: int, wedged: dict):
        self.limit = limit
        self.wedged = wedged
        self._in_a_row: dict = {}

    def ended(self, device) -> None:
        """A case on ``device`` ended otherwise than by a timeout."""
        self._in_a_row[device] = 0

    def timed_out(self, device) -> None:
        """A case on ``device`` timed out: at ``limit`` in a row the device is wedged."""
        count = self._in_a_row[device] = self._in_a_row.get(device, 0) + 1
        if count >= self.limit:
            self.wedged[device] = (f"{plural(count, 'timeout')} in a row: the device is considered wedged "
                                   f"(--max-timeouts)")


def death_message(exitcode: int | None) -> str:
    """How a worker died, e.g. ``worker crashed: signal 11 (SIGSEGV)``."""
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = "unknown"
        return f"worker crashed: signal {-exitcode} ({name})"
    return f"worker crashed: exit code {exitcode}"


_DONE = object()


def idle_step(idle: Iterator | None) -> Iterator | None:
    """One step of ``idle``, work an executor does while its workers run (``Executor.run``); None once it is done."""
    return idle if idle is not None and next(idle, _DONE) is not _DONE else None


class Executor:
    """A pool of worker processes, one per device, that runs cases and keeps going after crashes.

    Each worker has the next case in its pipe while it runs one (``QUEUED``), so that it never waits for
    this process to read a result and send more: a case a worker could not start (it crashed, hung or
    left) goes back to the schedule. Under fail-fast a worker gets one case at a time, so that nothing
    starts after the first failure. ``known``, the cases ``run`` will be given (a run's), are forked with every
    worker, which then gets each of them as its position (a small run pickled each case twice otherwise).
    """

    QUEUED = 1                                         # cases sent to a worker beyond the one it runs

    def __init__(self, settings: RunSettings, devices: Sequence[int] = (0,), known: Sequence[Case] = ()):
        self.settings = settings
        self.devices = tuple(devices)
        self._known = tuple(known)                       # forked with every worker, then sent by position
        self._context = multiprocessing.get_context("fork")
        if settings.bfloat16:
            dtypes.bfloat16()                            # once here, inherited by every worker
        self._workers: list[_Worker] = []
        self.wedged: dict[int, str] = {}                                # device -> why it gets no more cases
        self._wedging = Wedging(settings.max_timeouts, self.wedged)
        try:
            for device in self.devices:                  # all start together, then each must be ready
                self._workers.append(_Worker(self._context, settings, device, self._known))
            for worker in self._workers:
                worker.wait_ready()
        except BaseException:
            self.close()
            raise
        self.target = self._workers[0].target if self._workers else {}      # CaseWorker.describe()

    def toolkit_changes(self, recorded: dict) -> list[str]:
        """What of the toolkit's files differs now from the run's ``recorded`` settings (``provenance.toolkit_changes``:
        the workers load them from this host)."""
        return provenance.toolkit_changes(recorded, self.settings.toolkit)

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stop every worker."""
        for worker in self._workers:
            worker.stop()
        self._workers = []

    def _replace(self, worker: _Worker, schedule: Schedule) -> None:
        """Release ``worker`` (its queued cases back to ``schedule``) and, unless its device is wedged, put a
        fresh, ready one in its place. A device whose fresh worker cannot open the runner (the chip went down with
        the case that crashed its worker, say) is wedged too, saying so on stderr: the other devices go on (its
        cases are theirs, or under ``--each-device`` its lane is ``not_run`` naming it) and the reports are written,
        as the cluster's executor does with an actor that cannot start."""
        for index, _ in worker.queued:
            schedule.give_back(index, worker.device)
        schedule.release(worker.device)             # a fresh worker does not share the process that took its sibling
        worker.queued = []
        worker.kill()
        if worker.device not in self.wedged:
            fresh = _Worker(self._context, self.settings, worker.device, self._known)
            self._workers[self._workers.index(worker)] = worker = fresh
            try:
                fresh.wait_ready()
                return
            except PrmgError as error:
                sys.stderr.write(f"prmg: device {worker.device}: a fresh worker {error.reason}: it gets no more "
                                 f"cases\n")
                self.wedged[worker.device] = f"a fresh worker {error.reason}"
        self._workers.remove(worker)
        schedule.drop(worker.device, self.wedged[worker.device])

    def running(self) -> list[tuple[int, Case]]:
        """The (index, case) pairs the workers are running now."""
        return [(worker.index, worker.case) for worker in self._workers if worker.case is not None]

    def run(self, cases: Sequence[Case], on_result: Callable[[int, CaseResult], None] | None = None,
            fail_fast: bool = False, idle: Iterator | None = None) -> list[CaseResult | None]:
        """Run ``cases``; return their results in case order (None for cases never started).

        ``on_result(index, result)`` is called as each case finishes, in finishing order. With
        ``fail_fast`` no case starts after the first failure, error or xpass. When every device is
        wedged, the cases still waiting get ``not_run`` results naming the wedged devices. ``idle``, work for
        this process while the workers run (each step short: ``idle_step``), takes a step whenever no result
        is waiting to be read and no case is past its deadline.
        """
        accepted = self.target.get("accepted_modes")
        schedule = EachDevice(cases, self.settings, self.devices, on_result, fail_fast, accepted) \
            if self.settings.each_device else Schedule(cases, self.settings, on_result, fail_fast, accepted)
        while True:
            for load in range(1 + (0 if fail_fast else self.QUEUED)):        # every worker one case first
                for worker in self._workers:
                    if worker.load <= load and schedule.waiting_for(worker.device):
                        index = schedule.take(worker.device)
                        worker.start(index, cases[index], self.settings.timeout)
            busy = [w for w in self._workers if w.case is not None]
            if not busy:
                if schedule.waiting and not self._workers:
                    schedule.not_run("; ".join(f"device {d}: {why}" for d, why in sorted(self.wedged.items())))
                return schedule.results
            deadlines = [w.deadline for w in busy if w.deadline is not None]
            while idle is not None and not any(w.conn.poll() for w in busy) \
                    and not (deadlines and time.monotonic() >= min(deadlines)):
                idle = idle_step(idle)
            wait_for = max(0.0, min(deadlines) - time.monotonic()) if deadlines else None
            wait([w.conn for w in busy] + [w.process.sentinel for w in busy], wait_for)
            for worker in busy:
                self._collect(worker, schedule)

    def _collect(self, worker: _Worker, schedule: Schedule) -> None:
        """Take the worker's results if it has some; else report its crash or timeout and replace it."""
        while worker.case is not None and worker.conn.poll():
            try:
                kind, payload, fit = worker.conn.recv()
            except (EOFError, OSError):
                kind, payload, fit = "died", None, False
            if kind == "internal":
                raise InternalError(payload)
            if kind != "result":
                worker.process.join(5)                  # its pipe closed: the worker is exiting
                break
            index = worker.index
            self._wedging.ended(worker.device)
            if not fit:                                 # the worker is leaving (its session is unfit), and
                worker.case = None                      # the cases queued after this one never start
                schedule.finish(index, CaseResult.from_dict(payload), worker.device)
                self._replace(worker, schedule)
                return
            worker.finished(self.settings.timeout)
            schedule.finish(index, CaseResult.from_dict(payload), worker.device)
        case, index = worker.case, worker.index
        if case is None:
            return
        if not worker.process.is_alive():
            worker.process.join()
            if index in worker.unsent:                  # it died idle: the case it was given never reached it
                worker.case = None
                schedule.give_back(index, worker.device)
                self._replace(worker, schedule)
                return
            message = death_message(worker.process.exitcode)
            self._wedging.ended(worker.device)
        elif worker.deadline is not None and time.monotonic() >= worker.deadline:
            message = f"timed out after {self.settings.timeout:g} s"
            self._wedging.timed_out(worker.device)
        else:
            return
        worker.case = None
        result = case_result(case, "error", message=message, standard=judging(case, self.settings)[0],
                             faults=None, device=str(worker.device))   # the worker could not say which faults acted
        schedule.finish(index, known_defect_status(case, result), worker.device)
        self._replace(worker, schedule)


def _child_main(conn, function, args) -> None:
    from .acl import finalize_all

    die_with_parent()
    leave_stops_to_parent()
    faulthandler.disable()
    try:
        conn.send(("ok", function(*args)))
    except Exception as exc:
        conn.send(("error", f"{type(exc).__name__}: {exc}" if not isinstance(exc, PrmgError) else str(exc)))
    finally:
        try:
            finalize_all()
        except Exception:
            pass


def call_in_child(function: Callable, *args, timeout: float | None = None):
    """``function(*args)`` in a forked child, so this process never loads the ACL libraries.

    Returns its value; raises PrmgError when it raised, crashed or overran ``timeout`` seconds.
    """
    context = multiprocessing.get_context("fork")
    parent, child = context.Pipe()
    process = context.Process(target=_child_main, args=(child, function, args), daemon=True)
    with signals_held():                          # a stop signal now reaches this process after the fork
        process.start()
    child.close()
    try:
        if not wait([parent, process.sentinel], timeout):
            raise PrmgError(f"{function.__name__} timed out after {timeout:g} s")
        try:
            kind, value = parent.recv()
        except (EOFError, OSError):
            process.join(5)
            raise PrmgError(f"{function.__name__}: {death_message(process.exitcode)}") from None
        if kind != "ok":
            raise PrmgError(value)
        return value
    finally:
        if process.is_alive():
            process.kill()
        process.join()
        parent.close()
        process.close()


def shard(cases: Sequence[Case], index: int, count: int) -> list[Case]:
    """The deterministic part ``index`` (1-based) of ``count`` of ``cases``: those whose shard name (``together``: the
    case's own name, or its tiling siblings' first name) hashes to it (``shard_of``).

    Shards stay stable as cases are added or removed elsewhere (only a group of siblings whose first name changes
    moves), the union of all shards is every case exactly once, and siblings share a shard, so that a sharded run
    catches a tiling cache keyed by the tensors alone as a whole run does (``Schedule``).
    """
    first = together(cases)
    return [case for case in cases if shard_of(first.get(case.name, case.name), count) == index]


def together(cases: Sequence[Case]) -> dict[str, str]:
    """The shard name of each case of ``cases`` that has tiling siblings among them (cases of its ``tiling_key`` with
    other ``tiling_attributes``) and is not the first of its key by name: that first name, min(names of the key).
    A sharded run's record holds it (``store.RunRecord.together``), so that a merge finds a missing case's shard."""
    first: dict[str, str] = {}
    for indices in sibling_groups(cases, range(len(cases))):
        names = [cases[index].name for index in indices]
        first.update((name, min(names)) for name in names if name != min(names))
    return first


def shard_of(name: str, count: int) -> int:
    """The shard (1-based, of ``count``) holding the cases whose shard name is ``name``: ``1 + sha256(name) mod
    count``."""
    return 1 + int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big") % count


def parse_shard(text: str) -> tuple[int, int]:
    """``"I/N"`` -> (I, N) with 1 <= I <= N (``vocab.shard_numbers``); PrmgError otherwise."""
    numbers = shard_numbers(text)
    if numbers is None:
        raise PrmgError(f"--shard must be I/N, each of at most 19 digits 0-9, with 1 <= I <= N (e.g. 2/8), "
                        f"got {text!r}")
    return numbers
