"""Running many cases: worker processes that outlive cases, crash isolation, timeouts, devices, shards.

One worker process per device holds the loaded libraries and one ``AclSession``; the parent sends it
cases and gets ``CaseResult`` records back. A worker that dies (segfault, abort) or overruns the
timeout costs only the case it was running: that case is reported as ``error`` and a fresh worker
takes the next one. Results are streamed to a JSON-lines file as they finish, so an interrupted run
loses nothing that finished.
"""

from __future__ import annotations

import faulthandler
import hashlib
import json
import multiprocessing
import os
import signal
import time
from dataclasses import dataclass
from multiprocessing.connection import wait
from pathlib import Path
from typing import Callable, Sequence

from . import compare, constraints
from .cases import Case
from .vocab import MODE_NAMES
from .dtypes import lookup
from .errors import PrmgError
from .results import STATUSES, CaseResult
from .resultsfile import ResultsFile, read_results  # noqa: F401  (moved there; suite.py uses them from here)

WORKSPACE_BYTES = 16 << 20          # what the operator asks for (operator.md)
GUARD_BYTES = 2 * 1024              # guard zones and 512-byte rounding around dy, generously


@dataclass(frozen=True)
class RunSettings:
    """Everything a worker needs to turn a case into a result, fixed for the whole run."""

    toolkit: object                           # toolkit.Toolkit
    supported_modes: frozenset = frozenset({1})
    standard: str | None = None               # --standard: overrides every case's standard
    timeout: float | None = None              # seconds per case; None = no limit
    max_memory: int | None = None             # bytes; None = no limit


def case_result(case: Case, status: str, **fields) -> CaseResult:
    """A CaseResult for ``case`` carrying the case's description (dtypes, shapes, mode, slice)."""
    return CaseResult(
        name=case.name, status=status, source=case.source, dtype=case.dtype, cos_dtype=case.cos_dtype,
        shape=list(case.shape), cos_shape=list(case.cos_shape),
        rotary_mode=MODE_NAMES.get(case.rotary_mode, str(case.rotary_mode)),
        partial_slice=list(case.partial_slice), tags=list(case.tags), **fields)


def standard_for(case: Case, settings: RunSettings) -> str:
    """The standard a case is judged by: --standard, else the case's own, else ``default``."""
    return settings.standard or case.standard or "default"


def element_count(shape: Sequence[int]) -> int:
    """The number of elements of a tensor of ``shape`` (negative dims count as 0)."""
    count = 1
    for dim in shape:
        count *= max(int(dim), 0)
    return count


def memory_need(case: Case) -> tuple[int, int]:
    """Estimated (host, device) bytes for ``case``.

    host: the three inputs, dy read back, the golden in dy's dtype, and ~6 float64 arrays over the
    slice (golden, magnitude, actual, error, budget, mask); device: dy with guards, cos, sin and the
    16 MiB workspace.
    """
    dy_items = element_count(case.shape)
    cos_items = element_count(case.cos_shape) + element_count(case.sin_shape)
    start, end = case.partial_slice
    width = max(end - start, 0)
    rows = dy_items // max(int(case.shape[-1]), 1) if case.shape else 0
    dy_bytes = dy_items * lookup(case.dtype).numpy.itemsize
    cos_bytes = cos_items * lookup(case.cos_dtype).numpy.itemsize
    host = 3 * dy_bytes + cos_bytes + 6 * 8 * rows * width
    device = dy_bytes + GUARD_BYTES + cos_bytes + WORKSPACE_BYTES
    return host, device


def default_max_memory() -> int:
    """Half of this machine's physical memory: the default ``--max-memory``."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def precheck(case: Case, settings: RunSettings) -> CaseResult | None:
    """The result of a case that must not run (skipped mode, over the memory limit), else None."""
    reason = constraints.skip_reason(case, settings.supported_modes)
    if reason:
        return case_result(case, "skipped", message=reason, standard=standard_for(case, settings))
    if settings.max_memory is not None:
        host, device = memory_need(case)
        if max(host, device) > settings.max_memory:
            return case_result(case, "error", standard=standard_for(case, settings), message=(
                f"needs about {host / 2**30:.2f} GiB of host and {device / 2**30:.2f} GiB of device "
                f"memory, over --max-memory {settings.max_memory / 2**30:.2f} GiB; not attempted"))
    return None


def run_case(session, case: Case, settings: RunSettings) -> tuple[CaseResult, bool]:
    """Make the inputs, launch the operator, judge the outcome: one case, in this process.

    Returns the result and whether the session is still fit for more cases (not after a runner
    failure or a device fault: the worker is then replaced).
    """
    from .acl import SYNCHRONIZE
    from .inputs import make_inputs

    standard = standard_for(case, settings)
    started = time.perf_counter()
    try:
        inputs = make_inputs(case)
        outcome = session.launch(case, inputs)
        verdict = compare.judge(case, inputs, outcome, standard, dict(case.tolerance))
    except PrmgError as exc:
        return case_result(case, "error", message=str(exc), standard=standard,
                        duration_s=time.perf_counter() - started), True
    except Exception as exc:  # a runner failure (AclError, ...) costs this case only
        return case_result(case, "error", message=f"{type(exc).__name__}: {exc}", standard=standard,
                        duration_s=time.perf_counter() - started), False
    result = case_result(case, verdict.status, message=verdict.message, metrics=verdict.metrics,
                      key_metric=compare.key_metric(verdict), details=list(verdict.details),
                      error_code=outcome.status, standard=standard, kernel_ms=outcome.kernel_ms,
                      duration_s=time.perf_counter() - started)
    return result, outcome.failed_call != SYNCHRONIZE


def _worker_main(conn, settings: RunSettings, device: int) -> None:
    """A worker's life: open a session on ``device``, then run each case the parent sends, until told
    to stop or until its session is no longer fit (it then exits and the parent starts a fresh one)."""
    from .acl import AclSession, finalize_all

    signal.signal(signal.SIGINT, signal.SIG_IGN)      # the parent owns Ctrl-C
    faulthandler.disable()                             # a crash is reported as the case's result
    try:
        session = AclSession(settings.toolkit, device)
    except Exception as exc:
        conn.send(("init-failed", f"device {device}: {type(exc).__name__}: {exc}", False))
        return
    conn.send(("ready", None, True))
    try:
        fit = True
        while fit:
            case = conn.recv()
            if case is None:
                break
            result, fit = run_case(session, case, settings)
            conn.send(("result", result.to_dict(), fit))
    finally:
        try:                                           # best effort: the device may have faulted
            session.close()
            finalize_all()
        except Exception:
            pass


class _Worker:
    """One worker process pinned to one device, and the case it is running."""

    def __init__(self, context, settings: RunSettings, device: int):
        self.device = device
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_worker_main, args=(child, settings, device), daemon=True)
        self.process.start()
        child.close()
        self.case: Case | None = None
        self.index = -1
        self.deadline: float | None = None
        self.released = False

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

    def start(self, index: int, case: Case, timeout: float | None) -> None:
        """Send ``case`` (number ``index`` of the run) to the worker; its deadline starts now."""
        self.index, self.case = index, case
        self.deadline = time.monotonic() + timeout if timeout else None
        self.conn.send(case)

    def stop(self) -> None:
        """Ask the worker to finish, kill it when it does not within 2 s, and release it."""
        if self.released:
            return
        if self.process.is_alive():
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


def death_message(exitcode: int | None) -> str:
    """How a worker died, e.g. ``worker crashed: signal 11 (SIGSEGV)``."""
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = "unknown"
        return f"worker crashed: signal {-exitcode} ({name})"
    return f"worker crashed: exit code {exitcode}"


class Executor:
    """A pool of worker processes, one per device, that runs cases and keeps going after crashes."""

    def __init__(self, settings: RunSettings, devices: Sequence[int] = (0,)):
        self.settings = settings
        self.devices = tuple(devices)
        self._context = multiprocessing.get_context("fork")
        self._workers: list[_Worker] = [_Worker(self._context, settings, d) for d in self.devices]
        try:
            for worker in self._workers:                 # all start together, then each must be ready
                worker.wait_ready()
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stop every worker."""
        for worker in self._workers:
            worker.stop()
        self._workers = []

    def _replace(self, worker: _Worker) -> None:
        """Release ``worker`` and put a fresh, ready one on its device in its place."""
        worker.kill()
        fresh = _Worker(self._context, self.settings, worker.device)
        self._workers[self._workers.index(worker)] = fresh
        fresh.wait_ready()

    def run(self, cases: Sequence[Case], on_result: Callable[[int, CaseResult], None] | None = None,
            fail_fast: bool = False) -> list[CaseResult | None]:
        """Run ``cases``; return their results in case order (None for cases never started).

        ``on_result(index, result)`` is called as each case finishes, in finishing order.
        """
        results: list[CaseResult | None] = [None] * len(cases)
        pending = list(range(len(cases)))[::-1]
        stop = False

        def finish(index: int, result: CaseResult) -> None:
            nonlocal stop
            results[index] = result
            if on_result:
                on_result(index, result)
            if fail_fast and result.status in ("failed", "error"):
                stop = True

        for index in list(pending):                     # cases that need no worker
            early = precheck(cases[index], self.settings)
            if early is not None:
                pending.remove(index)
                finish(index, early)
        while True:
            for worker in self._workers:
                if worker.case is None and pending and not stop:
                    index = pending.pop()
                    worker.start(index, cases[index], self.settings.timeout)
            busy = [w for w in self._workers if w.case is not None]
            if not busy:
                return results
            deadlines = [w.deadline for w in busy if w.deadline is not None]
            wait_for = max(0.0, min(deadlines) - time.monotonic()) if deadlines else None
            wait([w.conn for w in busy] + [w.process.sentinel for w in busy], wait_for)
            for worker in busy:
                self._collect(worker, finish)

    def _collect(self, worker: _Worker, finish: Callable[[int, CaseResult], None]) -> None:
        """Take the worker's result if it has one; else report its crash or timeout and replace it."""
        case, index = worker.case, worker.index
        if worker.conn.poll():
            try:
                kind, payload, fit = worker.conn.recv()
            except (EOFError, OSError):
                kind, payload, fit = "died", None, False
            if kind == "result":
                worker.case = None
                finish(index, CaseResult.from_dict(payload))
                if not fit:                             # the worker is leaving: its session is unfit
                    self._replace(worker)
                return
            worker.process.join(5)                      # its pipe closed: the worker is exiting
        if not worker.process.is_alive():
            worker.process.join()
            message = death_message(worker.process.exitcode)
        elif worker.deadline is not None and time.monotonic() >= worker.deadline:
            message = f"timed out after {self.settings.timeout:g} s"
        else:
            return
        worker.case = None
        finish(index, case_result(case, "error", message=message, standard=standard_for(case, self.settings)))
        self._replace(worker)


def _child_main(conn, function, args) -> None:
    from .acl import finalize_all

    signal.signal(signal.SIGINT, signal.SIG_IGN)
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
    """The deterministic part ``index`` (1-based) of ``count`` of ``cases``, chosen by name hash.

    A case belongs to shard ``1 + sha256(name) mod count``, so shards stay stable as cases are added
    or removed elsewhere, and the union of all shards is every case exactly once.
    """
    def bucket(name: str) -> int:
        return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big") % count
    return [case for case in cases if bucket(case.name) == index - 1]


def parse_shard(text: str) -> tuple[int, int]:
    """``"I/N"`` -> (I, N) with 1 <= I <= N; PrmgError otherwise."""
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise PrmgError(f"--shard must look like I/N (e.g. 2/8), got {text!r}") from None
    if not 1 <= index <= count:
        raise PrmgError(f"--shard {text}: need 1 <= I <= N")
    return index, count

