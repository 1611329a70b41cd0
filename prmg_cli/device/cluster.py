"""``prmg run --cluster ADDRESS``: the cases on the NPUs of a Ray cluster, one worker actor per NPU.

The cluster executor is another executor next to the local one (``execute.Executor``), with the same
interface (a context manager with ``run(cases, on_result, fail_fast)`` and ``soc``). It shares what the
cases go through: each actor holds one ``execute.CaseWorker`` (one ``AclSession``, ``run_case`` per case,
``fit`` after each case), the results are the same ``CaseResult`` records, and ``execute.Schedule`` keeps
the run's book (case order, prechecks, fail-fast, ``not_run``). Only where the worker lives changes: in a
Ray actor that holds one ``NPU`` resource (Ray sets ``ASCEND_RT_VISIBLE_DEVICES`` to that NPU, so the
actor opens its device 0) instead of a forked process.

- **Starting.** ``connect`` makes one actor per ``NPU`` of the cluster's live nodes; each finds its node's
  toolkit (``runners.select`` with the run's ``--runner``, ``--op-lib`` and ``--supported-modes``,
  building its own emulator there when the run uses the emulator), and the first to answer gives the
  run's header its toolkit. The executor then sends each actor the run's settings (pickled) to open its
  session. An actor whose node gives another kind of toolkit than the first (``--runner auto`` finding
  the emulator where the first found a CANN toolkit, or the reverse) fails to start with the reason: a
  node never falls back to the emulator silently.
- **Streaming, in case order.** Each actor has up to ``PIPELINE`` cases queued (one running, the next
  already there, so that Ray's round trip does not idle the NPU; one under ``--fail-fast``), handed out
  breadth first (every idle actor gets a case before any gets a second). Results come back through
  ``ray.wait`` as they finish and go to ``on_result`` at once; ``run`` returns them in case order. At
  the run's tail a case may wait behind a slow one while another actor idles: at most one case per
  actor, and never moved, since Ray's ``cancel`` does not stop an actor task already queued there (the
  case would run twice, and a second copy of a hang would go unwatched).
- **Isolation.** A case whose actor dies (a segfault, an abort, the OOM killer) is an ``error``
  (``worker crashed: ...``); a case over ``--timeout`` is an ``error`` (``timed out after N s``) and its
  actor is killed. Its time runs from its start report (``NpuWorker.begin``, sent just before it, answered as
  the actor reaches it), not from its sending: Ray's dispatch to a loaded node is not the case's time; an actor
  that does not report the start within ``START_TIMEOUT`` costs the case all the same. Either way a fresh
  actor takes the dead one's place, and the cases queued behind the lost one go back to the queue: they never
  started. An actor that dies with two cases in flight may take
  the first one's finished result with it (its reply lost with the process) while the second crashed it:
  both then go back as *suspects*, each run alone on an actor, and only a case that crashes its actor
  alone is the error (a crash costs its own case only). ``--max-timeouts`` timeouts in a row on one NPU
  (node and NPU id) mark it wedged: it gets no more cases, and a fresh actor that Ray places there is
  kept idle (so that nothing else of the run lands there) while another is asked for.
- **Nodes leaving.** A node that leaves the cluster costs the cases running on it (``error``, ``worker
  lost: node ... left the cluster``); its queued cases go to the other actors, and its actors are not
  replaced. When no actor is left, the cases still waiting are ``not_run`` with the reasons. NPUs that
  join during a run are not used: a run sizes itself when it starts.
- **The toolkit, explicitly.** Nothing reaches an actor through a shared file system or the raylet's
  environment by accident: the driver connects with a job ``runtime_env`` whose ``env_vars`` carry
  ``ASCEND_*`` (except ``ASCEND_RT_VISIBLE_DEVICES``, which Ray sets per actor), ``PRMG_EMU_*``,
  ``PRMG_EMULATOR_HOME`` and the variables named in ``$PRMG_CLUSTER_ENV`` (e.g. ``LD_LIBRARY_PATH``);
  ``PRMG_EMU_*`` variables the driver does not have are removed in the actor, so a node's stale fault
  injection never reaches a run. Case files' ``file:`` inputs are read where the case runs: they must
  exist at the same path on every node.
- **Output.** Ray's driver prints cluster errors on standard output; they go to standard error here, so
  that a report on standard output stays the report alone.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import socket
import sys
import threading
import time
import traceback
import warnings
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Callable, Iterator, Mapping, Sequence

from . import execute, provenance
from .. import __version__
from ..case import Case
from ..errors import STOP_SIGNALS, PrmgError
from ..judging import judge_fingerprint
from ..results import CaseResult, visible
from ..vocab import decimal

RAY_MISSING = "--cluster needs Ray, which is not installed: pip install 'prmg[ray]'"
ACTOR_CPUS = 0.1              # an actor's CPU share: the NPU is what it holds
PIPELINE = 2                  # cases queued on an actor: one running, the next one waiting there
START_TIMEOUT = 120.0         # seconds an actor may take to be placed and to open its session
CONNECT_TIMEOUT = 10.0        # seconds to reach ADDRESS, and for it to answer, before Ray's own (long) retries
WAIT_SLICE = 0.5              # ray.wait blocks in C++: wait in slices so that stop signals get through
FORWARDED_PREFIXES = ("ASCEND_", "PRMG_EMU_")
FORWARDED_NAMES = ("PRMG_EMULATOR_HOME",)
NEVER_FORWARDED = ("ASCEND_RT_VISIBLE_DEVICES",)      # Ray sets it in each actor, to the NPU it holds
EXTRA_ENV = "PRMG_CLUSTER_ENV"                          # more variables to forward, comma-separated


def import_ray():
    """The ``ray`` module; PrmgError saying how to install it when it is missing."""
    try:
        import ray
    except ImportError:
        raise PrmgError(RAY_MISSING) from None
    return ray


def forwarded_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables the actors get from the driver (module docstring): ``ASCEND_*`` but
    ``ASCEND_RT_VISIBLE_DEVICES``, ``PRMG_EMU_*``, ``PRMG_EMULATOR_HOME`` and those named in
    ``$PRMG_CLUSTER_ENV``."""
    extra = {name.strip() for name in environ.get(EXTRA_ENV, "").split(",") if name.strip()}
    return {name: value for name, value in environ.items() if name not in NEVER_FORWARDED
            and (name.startswith(FORWARDED_PREFIXES) or name in FORWARDED_NAMES or name in extra)}


def _drop_unforwarded(forwarded: Sequence[str]) -> None:
    """Remove the ``PRMG_EMU_*`` variables the driver did not send (a node's stale fault injection must not
    reach a run that did not ask for it)."""
    for name in [name for name in os.environ if name.startswith("PRMG_EMU_") and name not in forwarded]:
        del os.environ[name]


# ---------------------------------------------------------------------------------------------------------
# The actor side

@dataclass(frozen=True)
class RunnerChoice:
    """The run's runner choice, for each actor to repeat on its own node: ``--runner`` (``auto`` pinned to
    the kind the first actor found, once it did), ``--op-lib``, ``--supported-modes``, and the names of the
    variables the driver forwarded."""

    runner: str
    op_lib: str | None
    modes: frozenset
    forwarded: tuple = ()


def _assigned_device(ray) -> tuple[int, str]:
    """(device id to open, the NPU id Ray assigned) in this actor: device 0 when Ray narrowed
    ``ASCEND_RT_VISIBLE_DEVICES`` to the NPU, its place in that list otherwise."""
    ids = [str(i) for i in (ray.get_runtime_context().get_accelerator_ids().get("NPU") or [])]
    npu = ids[0] if ids else "0"
    visible_ids = os.environ.get("ASCEND_RT_VISIBLE_DEVICES")
    if visible_ids is not None:
        listed = [part.strip() for part in visible_ids.split(",")]
        return (listed.index(npu) if npu in listed else 0), npu
    return (decimal(npu) or 0), npu


def _why(exc: Exception) -> str:
    return str(exc) if isinstance(exc, PrmgError) else f"{type(exc).__name__}: {exc}"


class NpuWorker:
    """A Ray actor holding one NPU: the same worker as a local device worker (``execute.CaseWorker``).

    Made, it finds its node's toolkit (``runners.select`` with the run's choice); ``start(settings)`` opens
    its session. It never raises (``ready`` and ``start`` say what went wrong), and once its session is
    unfit it refuses cases (``run`` returns None) until the driver replaces it.
    """

    def __init__(self, choice: RunnerChoice, settings: execute.RunSettings | None = None):
        import ray

        from .runners import select

        self.worker: execute.CaseWorker | None = None
        self.toolkit = None
        self.device = 0
        context = ray.get_runtime_context()
        self.info = {"node_id": context.get_node_id(), "ip": ray.util.get_node_ip_address(), "npu": "?",
                     "pid": os.getpid(), "version": __version__, "judging_code": judge_fingerprint.code(),
                     "toolkit": None,
                     "soc": "", "accepted_modes": None,
                     "error": "", "max_memory": execute.default_max_memory()}
        try:
            _drop_unforwarded(choice.forwarded)
            self.device, self.info["npu"] = _assigned_device(ray)
            self.toolkit = self.info["toolkit"] = select(choice.runner, choice.op_lib, os.environ, choice.modes)
        except Exception as exc:
            self.info["error"] = _why(exc)
        if settings is not None:
            self.start(settings)

    def ready(self) -> dict:
        """Where the actor lives (node id and address, NPU id, pid), its prmg version, its node's toolkit,
        its SoC once started, and what went wrong ("" when nothing did)."""
        return self.info

    def start(self, settings: execute.RunSettings) -> dict:
        """Open the session with ``settings`` (their toolkit replaced by this node's); ``ready``'s answer."""
        if self.worker is None and not self.info["error"]:
            try:
                self.worker = execute.CaseWorker(replace(settings, toolkit=self.toolkit), self.device,
                                                 f"{self.info['ip']}/NPU{self.info['npu']}")
                self.info.update(self.worker.describe(), **provenance.operator_files(self.toolkit),
                                 stamp=provenance.toolkit_stamp(self.toolkit),
                                 libraries=provenance.portable_stamps(self.toolkit))
            except Exception as exc:
                self.info["error"] = _why(exc)
                if self.toolkit.kind == "emulator" and "DEVICEID" in self.info["error"]:
                    self.info["error"] += (f" (Ray gave this actor NPU {self.info['npu']}; the emulator has "
                                           f"PRMG_EMU_DEVICES devices, default 1: set it on the driver to the "
                                           f"nodes' NPU count)")
        return self.info

    def begin(self) -> None:
        """Nothing: the driver sends it just before each case, and the actor, which runs its tasks one after the other,
        answers it as it reaches that case: the case's start report (its ``--timeout`` runs from there)."""

    def stamp(self) -> dict:
        """``provenance.toolkit_stamp`` of this node's toolkit now."""
        return provenance.toolkit_stamp(self.toolkit)

    def run(self, case: Case) -> tuple[dict | None, bool]:
        """(the case's result record, session still fit); (None, False) without running it once the
        session is unfit or was never opened."""
        if self.worker is None or not self.worker.fit:
            return None, False
        try:
            result, fit = self.worker.run(case)
        except Exception:                         # a bug in prmg: the driver ends the run (exit code 3)
            return {"internal": f"case '{case.name}':\n{traceback.format_exc()}"}, False
        return result.to_dict(), fit

    def close(self) -> None:
        """Close the session (best effort)."""
        if self.worker is not None:
            self.worker.close()
            self.worker = None


# ---------------------------------------------------------------------------------------------------------
# The driver side: connecting

def _wait(ray, refs: list, timeout: float) -> list:
    """The refs of ``refs`` done within ``timeout`` s (``ray.wait`` for the first one). An exception that
    the SIGTERM or SIGHUP handler raises meanwhile (``errors.Terminated``) comes out as itself: Ray would turn it into
    a plain KeyboardInterrupt, and the run would be reported as Ctrl-C."""
    raised: list[BaseException] = []
    handlers = {}
    if threading.current_thread() is threading.main_thread():
        handlers = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS - {signal.SIGINT}}
        handlers = {signum: handler for signum, handler in handlers.items() if callable(handler)}
    for signum, handler in handlers.items():
        def record(signum, frame, handler=handler):
            try:
                handler(signum, frame)
            except BaseException as exc:
                raised.append(exc)
                raise
        signal.signal(signum, record)
    try:
        return ray.wait(refs, num_returns=1, timeout=timeout)[0]
    except KeyboardInterrupt:
        if raised:
            raise raised[0] from None
        raise
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)


def _keep_stdout_for_reports(ray) -> None:
    """Ray's driver prints the cluster's error messages on standard output, where prmg's reports go: send
    them to standard error instead, one visible line each, leaving out worker deaths (each one is already
    the result of the case it cost)."""
    module = getattr(getattr(ray, "_private", None), "worker", None)
    original = getattr(module, "print_to_stdstream", None)
    if original is None or getattr(original, "prmg_redirect", False):
        return

    def to_stderr(data, *args, **kwargs) -> None:
        for text in data.get("lines", []):
            line = str(text).strip().splitlines()[0] if str(text).strip() else ""
            if line and "worker died or was killed" not in line:
                sys.stderr.write(f"prmg: ray: {visible(line)[:300]}\n")

    to_stderr.prmg_redirect = True
    module.print_to_stdstream = to_stderr


# What --cluster takes besides auto and local: HOST:PORT (a cluster's GCS) or ray://HOST[:PORT] (Ray Client).
_ADDRESS = re.compile(r"(?P<client>ray://)?\[?(?P<host>[^\[\]/\s]+?)\]?(?::(?P<port>\d{1,5}))?/?")
RAY_CLIENT_PORT = 10001       # Ray Client's port when ray://HOST names none


def _endpoint(address: str) -> tuple[str, int] | None:
    """The (host, port) ``address`` names, None for ``auto`` and ``local``; PrmgError for anything else
    (an empty address included), before Ray is asked."""
    text = address.strip()
    if text in ("auto", "local"):
        return None
    match = _ADDRESS.fullmatch(text)
    port = int(match["port"] or RAY_CLIENT_PORT) if match and (match["port"] or match["client"]) else 0
    if not 0 < port < 65536:
        raise PrmgError(f"--cluster {visible(repr(address))}: expected auto, local, HOST:PORT or "
                        f"ray://HOST[:PORT] (port {RAY_CLIENT_PORT} when not given)")
    return match["host"], port


# What a gRPC client sends first (HTTP/2's connection preface and an empty SETTINGS frame), and the type of the
# frame a gRPC server answers with (RFC 9113 3.4: a SETTINGS frame, 9 bytes of header first).
HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
HTTP2_SETTINGS = 0x04


def _check_reachable(address: str, environ: Mapping[str, str]) -> None:
    """PrmgError, before Ray is imported, when ``address`` is not one ``ray.init`` takes (``_endpoint``), when
    its host and port refuse a TCP connection within ``CONNECT_TIMEOUT``, or when what listens there does not
    answer gRPC's greeting within it: a Ray cluster's GCS (``HOST:PORT``) and its Ray Client server
    (``ray://``) both speak gRPC, HTTP/2 underneath, and answer ``HTTP2_PREFACE`` with a SETTINGS frame; a web
    server or anything else does not (Ray itself would retry for half a minute or more, logging). Under
    ``RAY_USE_TLS`` gRPC is wrapped in TLS: the TCP connection alone is checked."""
    endpoint = _endpoint(address)
    if endpoint is None:
        return
    host, port = endpoint
    try:
        with socket.create_connection(endpoint, timeout=CONNECT_TIMEOUT) as connection:
            if environ.get("RAY_USE_TLS", "0").lower() in ("1", "true"):
                return
            connection.sendall(HTTP2_PREFACE)
            answer = b""
            while len(answer) < 9 and (chunk := connection.recv(9 - len(answer))):
                answer += chunk
    except socket.timeout:
        answer = None
    except OSError as error:
        raise PrmgError(f"--cluster {address}: cannot reach the Ray cluster ({error.strerror or error})") \
            from None
    if answer is None or len(answer) < 9 or answer[3] != HTTP2_SETTINGS:
        said = f"no answer to gRPC's greeting within {CONNECT_TIMEOUT:g} s" if answer is None else \
            "what listens there does not speak gRPC (HTTP/2)"
        raise PrmgError(f"--cluster {address}: {visible(host)}:{port} is not a Ray cluster: {said}")


@dataclass
class Cluster:
    """A driver's connection to a Ray cluster (started by prmg for ``local``), the NPUs it offers, the
    worker actors made for them (not started yet), and the toolkit the run uses (as the first actor's node
    gives it)."""

    ray: object
    address: str
    choice: RunnerChoice
    actor_class: object = None
    actors: list = field(default_factory=list)
    toolkit: object = None                # toolkit.Toolkit
    devices: tuple = ()                   # one label per NPU: "ADDRESS/NPU<k>"
    max_memory: int | None = None         # the default --max-memory: half of the first worker's node's RAM
    closed: bool = field(default=False, repr=False)

    def executor(self, settings: execute.RunSettings) -> "ClusterExecutor":
        """A cluster executor for ``settings`` (it closes this connection when it closes)."""
        return ClusterExecutor(self, settings)

    def close(self) -> None:
        """Disconnect (the job's actors end with it; for ``local``, the Ray instance prmg started too)."""
        if not self.closed:
            self.closed = True
            self.ray.shutdown()


def _npu_labels(ray) -> tuple[str, ...]:
    """One label per NPU of the cluster's live nodes, e.g. ``10.0.0.5/NPU3``."""
    nodes = sorted((node for node in ray.nodes() if node.get("Alive")),
                   key=lambda node: (str(node.get("NodeManagerAddress")), str(node.get("NodeID"))))
    addresses = [str(node.get("NodeManagerAddress", "?")) for node in nodes]
    labels = []
    for node, address in zip(nodes, addresses):
        if addresses.count(address) > 1:             # several nodes on one host (a test cluster)
            address += f"~{str(node.get('NodeID', ''))[:6]}"
        labels += [f"{address}/NPU{k}" for k in range(int(node.get("Resources", {}).get("NPU", 0)))]
    return tuple(labels)


def connect(address: str, runner: str, op_lib: str | None, modes: frozenset,
            environ: Mapping[str, str] | None = None) -> Cluster:
    """Connect to the Ray cluster at ``address`` (what ``ray.init`` takes: ``auto``, ``HOST:PORT``,
    ``ray://HOST:10001``), or start one here for ``local`` with this host's device count as its ``NPU``
    resources; make one worker actor per NPU and take the run's toolkit from the first to answer.
    PrmgError when Ray is missing, the cluster cannot be reached or has no NPU, or no toolkit is found."""
    from .runners import select

    environ = os.environ if environ is None else environ
    _check_reachable(address, environ)
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")      # no gRPC core log lines on stderr (set before its import)
    ray = import_ray()
    env = forwarded_env(environ)
    init = {"runtime_env": {"env_vars": env}, "log_to_driver": False, "logging_level": logging.ERROR,
            "namespace": "prmg"}
    if address.strip() == "local":
        from .acl import PROBE_TIMEOUT, probe

        report = execute.call_in_child(probe, select(runner, op_lib, environ, modes), timeout=PROBE_TIMEOUT)
        count = report.get("device_count") or 0
        if count < 1:
            raise PrmgError(f"--cluster local: {'; '.join(report.get('errors', [])) or 'this host has no device'}")
        init.update(address="local", resources={"NPU": count}, include_dashboard=False,
                    object_store_memory=256 << 20)
        logging.getLogger("ray._private.accelerators.npu").setLevel(logging.CRITICAL)  # no `import acl` noise
    else:
        init.update(address=address.strip())
    _keep_stdout_for_reports(ray)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")                   # Ray Client's timeout warning: the error says it
            ray.init(**init)
    except Exception as error:           # ConnectionError, RuntimeError, Ray's own errors
        text = str(error).strip().splitlines()
        raise PrmgError(f"--cluster {address}: cannot connect to Ray: {type(error).__name__}: "
                        f"{visible(text[0] if text else '')}") from None
    cluster = Cluster(ray, address, RunnerChoice(runner, op_lib, modes, tuple(env)), devices=_npu_labels(ray))
    try:
        if not cluster.devices:
            raise PrmgError(f"--cluster {address}: the cluster has no NPU resource (start each node with "
                            f"`ray start ... --resources '{{\"NPU\": 8}}'`, or on hosts where Ray finds "
                            f"/dev/davinci*)")
        cluster.actor_class = ray.remote(num_cpus=ACTOR_CPUS, resources={"NPU": 1}, max_restarts=0,
                                         max_task_retries=0)(NpuWorker)
        cluster.actors = [cluster.actor_class.remote(cluster.choice) for _ in cluster.devices]
        answers = {actor.ready.remote(): actor for actor in cluster.actors}
        deadline = time.monotonic() + START_TIMEOUT
        done = []
        while not done and time.monotonic() < deadline:
            done = _wait(ray, list(answers), WAIT_SLICE)
        if not done:
            raise PrmgError(f"--cluster {address}: no worker actor was placed within {START_TIMEOUT:g} s "
                            f"(are the cluster's NPUs busy with other jobs?)")
        try:
            info = ray.get(done[0])
        except Exception as error:
            raise PrmgError(f"--cluster {address}: {_start_failure(error)}") from None
        if _version_mismatch(info) or info.get("error"):
            raise PrmgError(f"--cluster {address}: on NPU {info.get('npu')} of {info.get('ip')}: "
                            f"{_version_mismatch(info) or info['error']}")
        cluster.toolkit, cluster.max_memory = info["toolkit"], info.get("max_memory")
        if runner == "auto":                  # replacements look for the kind the run found, nothing else
            cluster.choice = replace(cluster.choice, runner=cluster.toolkit.kind)
    except BaseException:
        cluster.close()
        raise
    return cluster


def _start_failure(error: Exception) -> str:
    """Why an actor died before it could answer (naming the usual cause when prmg cannot be imported there)."""
    hint = (f"; is prmg {__version__} installed on every node, in the Python Ray runs?"
            if "No module named" in str(error) else "")
    return f"the worker actor died while starting ({_ray_reason(error)}{hint})"


# What every actor of one run must find alike (``CaseWorker.describe``, ``provenance.operator_files``), as the run
# records one of each: its SoC, the driver its runtime loaded, its toolkit's stated version, the toolkit's libraries
# (runtime, nnopbase, operator, graph mode: their size and time, ``provenance.portable_stamps``), the operators' kernel
# and tiling files it would load (their portable fingerprint: size and time of each, alike on hosts that installed the
# same packages) and the libraries preloaded ahead of the toolkit.
NODE_ALIKE = {"soc": "SoC", "driver_version": "driver", "toolkit_version": "toolkit version",
              "libraries": "toolkit's libraries (size, mtime)",
              "opp_portable": "operator's kernel and tiling files (fingerprint)", "preloaded": "preloaded libraries"}


def _unlike(info: dict, first: dict) -> str:
    """"" when the actor that found ``info`` is alike the run's first (``first``: {} for the first), else what
    differs: the run records the first's, so nodes that differ are run as shards and merged by ``prmg report``,
    which names the settings they differ in."""
    differ = [f"{label} {info.get(key) or '(none)'}, the run's {first.get(key) or '(none)'}"
              for key, label in NODE_ALIKE.items() if first and info.get(key) != first.get(key)]
    return (f"this node's {'; '.join(differ)}: the NPUs of one run must be alike (give unlike nodes runs of their own "
            f"and merge their results with prmg report, which names what differs)") if differ else ""


def _version_mismatch(info: dict) -> str:
    """"" when the actor's prmg is this one (its version and its judging code, ``judge_fingerprint.code``: a node of
    another checkout judges its cases by its own standards and golden, under this run's name), else what to do."""
    if info.get("version") != __version__:
        return f"prmg {info.get('version')} there, {__version__} here: install the same prmg on every node"
    if info.get("judging_code") != judge_fingerprint.code():
        return (f"prmg's judging code {info.get('judging_code') or '(not stated: an older prmg)'} there, "
                f"{judge_fingerprint.code()} here (another build of prmg {__version__}): "
                "install the same prmg on every node")
    return ""


# ---------------------------------------------------------------------------------------------------------
# The driver side: the executor

@dataclass
class _Slot:
    """One worker actor and what it is doing: starting (``ready_ref``), or running the first of ``queue``
    (``(case index, result ref, start report ref)``, oldest first), watched from ``sent`` (its sending, or its
    predecessor's end) and, once its start report is in, from ``began``."""

    actor: object
    ready_ref: object | None
    created: float
    info: dict = field(default_factory=dict)
    queue: deque = field(default_factory=deque)
    sent: float = 0.0
    began: float | None = None

    @property
    def awaited(self) -> object:
        """What of the first queued case comes next: its start report, then its result."""
        return self.queue[0][2 if self.began is None else 1]

    def deadline(self, timeout: float | None) -> float | None:
        """When the first queued case is over its time (None without ``--timeout``): ``timeout`` after its start
        report, and ``START_TIMEOUT`` after ``sent`` while that report is not in (an actor that never reaches it)."""
        if not timeout or not self.queue:
            return None
        return self.sent + START_TIMEOUT if self.began is None else self.began + timeout

    @property
    def key(self) -> tuple[str, str]:
        """The NPU the actor holds: (node id, NPU id)."""
        return self.info.get("node_id", "?"), str(self.info.get("npu", "?"))

    @property
    def label(self) -> str:
        """The NPU for people: ``NPU 3 of 10.0.0.5``."""
        return f"NPU {self.info.get('npu', '?')} of {self.info.get('ip', '?')}"


def _ray_reason(error: Exception) -> str:
    """A short reason from a Ray error: the worker's exit detail when Ray gives one, else its first line."""
    text = str(error)
    detail = re.search(r"Worker exit detail: (.*?)(?: Some common causes|\n|$)", text)
    if detail and "connection error code 2" in detail.group(1):      # the process vanished: a signal
        return "its process ended abruptly: a signal such as SIGSEGV or SIGABRT, or the OOM killer"
    if detail:
        return detail.group(1).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__


class ClusterExecutor:
    """One worker actor per NPU of a Ray cluster, running cases like ``execute.Executor`` (module docstring)."""

    def __init__(self, cluster: Cluster, settings: execute.RunSettings):
        self.cluster = cluster
        self.ray = cluster.ray
        self.settings = settings
        self.target: dict = {}              # the first actor's CaseWorker.describe()
        self.wedged: dict[tuple, str] = {}          # NPU key -> why it gets no more cases
        self.lost: list[str] = []                   # "NPU label: why" of each actor gone for good
        self._wedging = execute.Wedging(settings.max_timeouts, self.wedged)
        self._suspects: set[int] = set()            # cases in flight on an actor that died with two: run alone
        self._holds: list = []                      # actors kept idle on wedged NPUs
        self._slots: list[_Slot] = []
        self._stamps: dict[str, dict] = {}          # node id -> its toolkit's stamp as its first actor started
        try:
            now = time.monotonic()
            self._slots = [_Slot(actor, actor.start.remote(settings), now) for actor in cluster.actors]
            cluster.actors = []
            self._await_start()
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> "ClusterExecutor":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- actors ---------------------------------------------------------------------------------------

    def _new_slot(self) -> _Slot:
        """A fresh actor, made and started at once (it answers ``ready`` when its session is open)."""
        actor = self.cluster.actor_class.remote(self.cluster.choice, self.settings)
        return _Slot(actor, actor.ready.remote(), time.monotonic())

    def _started(self, slot: _Slot) -> str:
        """Take a starting slot's answer: "" when it is ready for cases, else why it is not (its actor is
        then killed)."""
        ref, slot.ready_ref = slot.ready_ref, None
        try:
            slot.info = self.ray.get(ref)
        except Exception as error:
            self._kill(slot.actor)
            return _start_failure(error)
        toolkit, kind = slot.info.get("toolkit"), self.cluster.toolkit.kind
        why = _version_mismatch(slot.info) or slot.info.get("error") or (
            f"this node gives the {toolkit.kind} at {toolkit.root}, but the run uses the {kind}; install the "
            f"same toolkit on every node, or give --runner" if toolkit is not None and toolkit.kind != kind else "") \
            or _unlike(slot.info, self.target)
        if why:
            self._kill(slot.actor)
            return why
        self.target = self.target or {key: slot.info.get(key) for key in ("accepted_modes", *NODE_ALIKE,
                                                                            *provenance.OPP_FIELDS)}
        self._stamps.setdefault(slot.info.get("node_id"), slot.info.get("stamp") or {})
        return ""

    def _await_start(self) -> None:
        """Wait for the first actors: PrmgError when one cannot open its runner (as a local worker that
        cannot), or when none is placed within ``START_TIMEOUT``; actors still waiting for an NPU (busy with
        other jobs) join the run when Ray places them."""
        deadline = time.monotonic() + START_TIMEOUT
        starting = {slot.ready_ref: slot for slot in self._slots}
        while starting:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            done = _wait(self.ray, list(starting), min(left, WAIT_SLICE))
            if not done:
                continue
            slot = starting.pop(done[0])
            why = self._started(slot)
            if why:
                raise PrmgError(f"cannot open the runner on {slot.label}: {why}")
        if all(slot.ready_ref is not None for slot in self._slots):
            raise PrmgError(f"--cluster {self.cluster.address}: no worker actor was placed within "
                            f"{START_TIMEOUT:g} s (are the cluster's NPUs busy with other jobs?)")
        for slot in self._slots:                      # the late ones get another START_TIMEOUT
            slot.created = time.monotonic()

    def toolkit_changes(self, recorded: dict) -> list[str]:
        """What of each node's toolkit differs now from what it was when the node's first actor started
        (``provenance.toolkit_stamp``, asked of every actor left: a replacement started after the change finds the
        new build), each named with its node (``recorded``, this host's files, is not where the cases ran)."""
        started = [slot for slot in self._slots if slot.ready_ref is None and not slot.queue]
        asked = {slot.actor.stamp.remote(): slot for slot in started}
        changed: dict[str, None] = {}
        done = self.ray.wait(list(asked), num_returns=len(asked), timeout=START_TIMEOUT)[0] if asked else []
        for ref in done:
            slot = asked[ref]
            try:
                now = self.ray.get(ref)
            except Exception:                 # an actor lost meanwhile (its cases say so): the others still count
                continue
            for change in provenance.differences(self._stamps.get(slot.info.get("node_id"), {}), now,
                                                 slot.info["toolkit"]):
                changed.setdefault(f"node {slot.info.get('ip', '?')}: {change}")
        return list(changed)

    def _kill(self, actor) -> None:
        try:
            self.ray.kill(actor, no_restart=True)
        except Exception:
            pass

    def _retire(self, slot: _Slot, schedule: execute.Schedule, replace_it: bool, why: str = "") -> None:
        """Kill ``slot``'s actor, give its queued cases (never started) back, and put a fresh actor in its
        place (``replace_it``) or record ``why`` it is gone."""
        self._kill(slot.actor)
        for index, *_ in slot.queue:
            schedule.give_back(index, id(slot))
        schedule.release(id(slot))
        slot.queue.clear()
        position = self._slots.index(slot)
        if replace_it:
            self._slots[position] = self._new_slot()
        else:
            del self._slots[position]
            self.lost.append(f"{slot.label}: {why}")

    def close(self) -> None:
        """Close every actor's session (2 s at most), kill the actors, and disconnect from the cluster."""
        idle = [slot.actor for slot in self._slots if slot.ready_ref is None and not slot.queue]
        try:
            closing = [actor.close.remote() for actor in idle]
            if closing:
                self.ray.wait(closing, num_returns=len(closing), timeout=2.0)
        except Exception:
            pass
        for actor in [slot.actor for slot in self._slots] + self._holds:
            self._kill(actor)
        self._slots, self._holds = [], []
        self.cluster.close()

    # -- running --------------------------------------------------------------------------------------

    def run(self, cases: Sequence[Case], on_result: Callable[[int, CaseResult], None] | None = None,
            fail_fast: bool = False, idle: Iterator | None = None) -> list[CaseResult | None]:
        """Run ``cases`` on the cluster; their results in case order (None for cases never started).

        As ``execute.Executor.run``: ``on_result(index, result)`` as each case finishes; with
        ``fail_fast`` no case starts after the first failure, error or xpass; when no worker is left
        (every NPU wedged, lost or unplaceable), the cases still waiting are ``not_run`` with the reasons;
        ``idle`` takes a step (``execute.idle_step``) before each wait.
        """
        schedule = execute.Schedule(cases, self.settings, on_result, fail_fast, self.target.get("accepted_modes"))
        depth = 1 if fail_fast else PIPELINE
        while True:
            now = time.monotonic()
            for level in range(1, depth + 1):             # breadth first: every idle actor gets a case first
                for slot in self._slots:
                    if slot.ready_ref is None and len(slot.queue) < level and schedule.waiting_for(id(slot)) \
                            and not (slot.queue and self._suspects & {slot.queue[0][0], schedule.upcoming(id(slot))}):
                        self._submit(slot, schedule.take(id(slot)), cases, now)
            busy = [slot for slot in self._slots if slot.queue]
            starting = [slot for slot in self._slots if slot.ready_ref is not None]
            if not busy:
                if not schedule.waiting:
                    return schedule.results
                if not starting:
                    schedule.not_run(self._why_no_worker())
                    return schedule.results
            refs = {slot.awaited: slot for slot in busy}
            refs.update({slot.ready_ref: slot for slot in starting})
            limits = [limit for slot in busy if (limit := slot.deadline(self.settings.timeout)) is not None]
            limits += [slot.created + START_TIMEOUT for slot in starting]
            timeout = max(0.0, min(limits) - time.monotonic()) if limits else WAIT_SLICE
            idle = execute.idle_step(idle)
            done = _wait(self.ray, list(refs), min(timeout, WAIT_SLICE))
            for ref in done:
                slot = refs[ref]
                if slot.ready_ref is not None and ref == slot.ready_ref:
                    self._on_ready(slot, schedule)
                elif slot.began is None:
                    slot.began = time.monotonic()
                else:
                    self._on_result(slot, schedule)
            self._expire(schedule)

    def _submit(self, slot: _Slot, index: int, cases: Sequence[Case], now: float) -> None:
        """Send case ``index`` to ``slot``'s actor, its start report (``NpuWorker.begin``) first."""
        begun = slot.actor.begin.remote()
        slot.queue.append((index, slot.actor.run.remote(cases[index]), begun))
        if len(slot.queue) == 1:
            slot.sent, slot.began = now, None

    def _on_ready(self, slot: _Slot, schedule: execute.Schedule) -> None:
        """A fresh actor answered: it takes cases, or keeps a wedged NPU idle, or is gone with its reason."""
        why = self._started(slot)
        if why:
            sys.stderr.write(f"prmg: cluster: a worker actor could not start: {visible(why)}\n")
            self._retire(slot, schedule, replace_it=False, why=why)
        elif slot.key in self.wedged:               # keep that NPU busy and idle; ask for another one
            self._holds.append(slot.actor)
            self._slots[self._slots.index(slot)] = self._new_slot()

    def _on_result(self, slot: _Slot, schedule: execute.Schedule) -> None:
        """The first queued case of ``slot`` ended: its result, or its actor's death (``error``)."""
        ray = self.ray
        index, ref, _ = slot.queue.popleft()
        case = schedule.cases[index]
        slot.sent, slot.began = time.monotonic(), None
        try:
            payload, fit = ray.get(ref)
        except ray.exceptions.RayActorError as error:
            self._wedging.ended(slot.key)
            gone = not self._node_alive(slot.info.get("node_id")) or "node has died" in str(error) \
                or "node died" in str(error)
            ip = slot.info.get("ip", "?")
            if not gone and slot.queue:                 # which of the cases in flight crashed it is not known
                self._suspects.update([index, *(queued for queued, *_ in slot.queue)])
                schedule.give_back(index, id(slot))
                self._retire(slot, schedule, replace_it=True)
                return
            message = (f"worker lost: node {ip} left the cluster while running this case" if gone else
                       f"worker crashed: its Ray actor on {slot.label} died ({_ray_reason(error)})")
            self._fail(schedule, index, case, message)
            self._retire(slot, schedule, replace_it=not gone, why=f"node {ip} left the cluster")
            return
        except ray.exceptions.RayTaskError as error:
            self._fail(schedule, index, case, f"worker failed: {_ray_reason(error)}")
            self._retire(slot, schedule, replace_it=True)
            return
        except ray.exceptions.RayError as error:      # e.g. Ray's memory monitor killed the worker
            self._wedging.ended(slot.key)
            self._fail(schedule, index, case, f"worker crashed: {_ray_reason(error)}")
            self._retire(slot, schedule, replace_it=True)
            return
        if payload is None:                           # refused: the session was unfit; it never ran
            schedule.give_back(index, id(slot))
            self._retire(slot, schedule, replace_it=True)
            return
        if "internal" in payload:
            raise execute.InternalError(payload["internal"])
        self._wedging.ended(slot.key)
        schedule.finish(index, CaseResult.from_dict(payload))
        if not fit:                                   # the session is unfit: a fresh actor takes over
            self._retire(slot, schedule, replace_it=True)

    def _expire(self, schedule: execute.Schedule) -> None:
        """Cases past ``--timeout`` are errors (their actors are killed and replaced, unless the NPU is now
        wedged), but for one whose result is in (``run`` takes one result a wait: another that came in meanwhile,
        or while a loaded driver waited for the CPU, is taken next, as the local executor takes a worker's result
        before it looks at the clock); actors not placed within ``START_TIMEOUT`` are given up."""
        now = time.monotonic()
        for slot in list(self._slots):
            deadline = slot.deadline(self.settings.timeout)
            if deadline is not None and now >= deadline:
                if self.ray.wait([slot.awaited], num_returns=1, timeout=0)[0]:
                    continue
                index, *_ = slot.queue.popleft()
                key = slot.key
                self._wedging.timed_out(key)
                self._fail(schedule, index, schedule.cases[index], f"timed out after {self.settings.timeout:g} s"
                           if slot.began is not None else f"timed out: its actor on {slot.label} did not start it "
                           f"within {START_TIMEOUT:g} s")
                self._retire(slot, schedule, replace_it=key not in self.wedged,
                             why=self.wedged.get(key, ""))
            elif slot.ready_ref is not None and now >= slot.created + START_TIMEOUT:
                self._retire(slot, schedule, replace_it=False,
                             why=f"no NPU could be had for a fresh worker within {START_TIMEOUT:g} s")

    def _fail(self, schedule: execute.Schedule, index: int, case: Case, message: str) -> None:
        result = execute.case_result(case, "error", message=message, standard=execute.judging(case, self.settings)[0],
                                     faults=None)        # the worker could not say which faults acted
        schedule.finish(index, execute.known_defect_status(case, result))

    def _node_alive(self, node_id: str | None) -> bool:
        """Whether the cluster still counts ``node_id`` among its live nodes (True when it cannot say)."""
        try:
            for node in self.ray.nodes():
                if node.get("NodeID") == node_id:
                    return bool(node.get("Alive"))
        except Exception:
            return True
        return False

    def _why_no_worker(self) -> str:
        """Why no worker is left: each lost or wedged NPU and its reason."""
        return "; ".join(self.lost) or "no worker actor is left"
