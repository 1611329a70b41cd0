"""`prmg run --cluster`: the cases on a Ray cluster's NPUs, end to end through the emulator.

One Ray cluster per test module (per xdist worker): a head without NPUs and two nodes with one `NPU` each
(`ray.cluster_utils.Cluster`, in a helper process the tests talk to over stdin), so that actors live on
different nodes and a node can leave. The helper's environment carries `PRMG_EMU_FAULT=noop`, a stale
fault on the nodes that must never reach a run: every passing run below proves the actors get their
emulator settings from the driver (the job's runtime_env) and nothing else. Each `prmg` connects as its own
driver, as a user would.
"""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import ROOT, prmg, prmg_here
from prmg_cli.errors import PrmgError

pytestmark = pytest.mark.xdist_group("ray")     # with --dist loadgroup all of them share one cluster

RAY_ENV = {"RAY_AUTH_MODE": "disabled"}          # the helper's cluster runs without token authentication

SUITE = """
defaults: {dtype: float16, cos_shape: [1, 1, 1, 16], partial_slice: [8, 24]}
cases:
  - {name: c0, shape: [1, 2, 2, 32]}
  - {name: c1, shape: [1, 2, 3, 32]}
  - {name: c2, shape: [1, 2, 4, 32]}
  - {name: c3, shape: [1, 2, 5, 32], dtype: bfloat16}
  - {name: c4, shape: [1, 2, 6, 32], dtype: float32}
  - {name: neg, shape: [1, 2, 2, 2048], cos_shape: [1, 1, 1, 64], partial_slice: [0, 64],
     expect: {error: ACLNN_ERR_INNER_TILING_ERROR}}
  - {name: half_mode, shape: [1, 2, 2, 32], rotary_mode: half}
  - {name: c5, shape: [1, 2, 7, 32]}
"""
NAMES = ["c0", "c1", "c2", "c3", "c4", "neg", "half_mode", "c5"]

# The cluster: run as `python -c HELPER`; prints its address, then obeys one command a line on stdin:
# "remove-hung" removes the node whose worker sits in pause() (the emulator's hang), "add" adds a node.
HELPER = r"""
import logging, os, sys
logging.getLogger("ray._private.accelerators.npu").setLevel(logging.CRITICAL)
from ray.cluster_utils import Cluster

FAST_HEALTH_CHECKS = {"health_check_initial_delay_ms": 0, "health_check_period_ms": 200,
                      "health_check_timeout_ms": 200, "health_check_failure_threshold": 3}
cluster = Cluster(initialize_head=True, head_node_args={
    "num_cpus": 0, "include_dashboard": False, "object_store_memory": 100 << 20,
    "_system_config": FAST_HEALTH_CHECKS})
nodes = []

def add():
    nodes.append(cluster.add_node(num_cpus=1, resources={"NPU": 1}, object_store_memory=100 << 20))
    cluster.wait_for_nodes()

def parent(pid):
    with open(f"/proc/{pid}/stat") as handle:
        return int(handle.read().rsplit(")", 1)[1].split()[1])

def paused():
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/wchan") as handle:
                    if "pause" in handle.read():
                        yield int(pid)
                        break
        except OSError:
            pass

add()
add()
print(cluster.address, flush=True)
for line in sys.stdin:
    if line.strip() == "add":
        add()
        print("added", flush=True)
    elif line.strip() == "remove-hung":
        raylets = {node.all_processes["raylet"][0].process.pid: node for node in nodes}
        hung = None
        for pid in paused():
            try:
                while pid > 1 and pid not in raylets:
                    pid = parent(pid)
            except OSError:
                continue
            hung = raylets.get(pid)
            if hung:
                break
        if hung:
            cluster.remove_node(hung, allow_graceful=False)
            nodes.remove(hung)
        print("removed" if hung else "none", flush=True)
cluster.shutdown()
"""


class Helper:
    """The helper process holding the module's cluster."""

    def __init__(self, process: subprocess.Popen, address: str):
        self.process, self.address = process, address

    def tell(self, command: str, timeout: float = 60) -> str:
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return _read_line(self.process, timeout)


def _read_line(process: subprocess.Popen, timeout: float) -> str:
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    assert ready, "the Ray helper did not answer in time"
    return process.stdout.readline().strip()


@pytest.fixture(scope="module")
def cluster(emulator, tmp_path_factory):
    pytest.importorskip("ray", reason="Ray is not installed: pip install 'prmg[ray]' for the cluster tests")
    env = dict(os.environ, **RAY_ENV, PRMG_EMU_FAULT="noop")
    process = subprocess.Popen([sys.executable, "-c", HELPER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True, env=env, cwd=tmp_path_factory.mktemp("ray"))
    try:
        yield Helper(process, _read_line(process, 180))
    finally:
        process.stdin.close()
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def suite(tmp_path) -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE)
    return path


def run_json(*args, env=None, timeout=180, runner="emulator"):
    """``prmg run ... --runner emulator --report json``: (completed process, report)."""
    result = prmg("run", *args, "--runner", runner, "--report", "json", env={**RAY_ENV, **(env or {})},
                  timeout=timeout)
    assert "Traceback" not in result.stderr, result.stderr
    return result, json.loads(result.stdout)             # stdout is the report alone: no Ray text in it


def statuses(report) -> dict:
    return {case["name"]: case["status"] for case in report["cases"]}


def same(report) -> list:
    """What must not depend on where a case ran: name, status, message, metrics, operator status, in order."""
    return [(c["name"], c["status"], c["message"], c["metrics"], c["error_code"]) for c in report["cases"]]


def test_a_cluster_run_resumes_and_reports_what_a_serial_run_does_in_case_order(cluster, suite, tmp_path):
    _, serial = run_json(suite)
    results = tmp_path / "r.jsonl"
    run_json(suite, "-k", "c1", "--results", results)                    # a partial run, here
    result, spread = run_json(suite, "--cluster", cluster.address, "--resume", results)
    assert result.returncode == 0, result.stderr
    assert [c["name"] for c in spread["cases"]] == NAMES
    assert same(spread) == same(serial)
    assert statuses(spread)["half_mode"] == "skipped" and statuses(spread)["neg"] == "passed"
    assert len(spread["summary"]["devices"]) == 2 and spread["summary"]["runner"] == "emulator"
    names = [record["name"] for line in results.read_text().splitlines() if "name" in (record := json.loads(line))]
    assert sorted(names) == sorted(NAMES)                                  # c1 was not run again
    # issue 32, round 6: prmg report refused the file (its run record's devices, IP/NPU<k>, read as no integers),
    # and --chips 0-1 named chips 0 and 1 missing, no label matching: refused, it can only be red for a cluster run
    assert prmg_here("report", results, "-o", os.devnull).returncode == 0
    for asked in ("0-1", "h:0-1"):                      # session 17: --chips naming the host alike
        chips = prmg_here("report", results, "--chips", asked)
        assert chips.returncode == 2 and chips.stderr.startswith(f"prmg: error: --chips {asked}: {results} holds "
                                                                 f"records of a --cluster run (case "), chips.stderr


def test_both_call_paths_run_on_the_cluster_and_a_graph_bug_is_named(cluster, suite):
    """--runner aclnn+geir on the cluster's actors: every case through both paths (graph mode by the emulator's
    twin on each node), agreeing; with graph mode's slice dropped the cases it changes fail naming graph mode, and
    so does --runner geir alone."""
    result, report = run_json(suite, "--cluster", cluster.address, runner="aclnn+geir")
    assert result.returncode == 0 and {case["path"] for case in report["cases"]} == {"aclnn+geir"}, result.stderr
    dropped = {"PRMG_EMU_FAULT": "geir_slice_dropped"}
    result, report = run_json(suite, "--cluster", cluster.address, "-k", "c1", runner="aclnn+geir", env=dropped)
    assert result.returncode == 1 and "geir (graph mode) disagrees with the golden" in report["cases"][0]["message"]
    result, report = run_json(suite, "--cluster", cluster.address, "-k", "c1", runner="geir", env=dropped)
    assert result.returncode == 1 and [(case["path"], case["faults"]) for case in report["cases"]] == \
        [("geir", ["geir_slice_dropped"])] and "over budget" in report["cases"][0]["message"]


def test_a_toolkit_changed_on_the_nodes_while_the_run_ran_fails_the_run(cluster, suite, tmp_path):
    """A kernel of the operator installed on the nodes while the cases ran gave a green --cluster run whose record named
    the first build (only a local run compared its toolkit at its end): every actor left is asked for its node's
    toolkit stamp at the end, and a change from when the node's first actor started is exit 2 naming the node."""
    opp = tmp_path / "opp"
    kernel = opp / "built-in/op_impl/ai_core/tbe/kernel/ascend950/inplace_partial_rotary_mul_grad"
    script = ("import pathlib, sys\nfrom prmg_cli import cli\nfrom prmg_cli.device import cluster\n"
              "original = cluster.ClusterExecutor.run\n"
              "def installing(self, *args, **kwargs):\n"
              f"    kernel = pathlib.Path({str(kernel)!r})\n"
              "    kernel.mkdir(parents=True)\n    (kernel / 'InplacePartialRotaryMulGrad_0.o').write_bytes(b'0')\n"
              "    return original(self, *args, **kwargs)\n"
              "cluster.ClusterExecutor.run = installing\nsys.exit(cli.main())\n")
    changed = subprocess.run([sys.executable, "-c", script, "run", suite, "-k", "c0", "--runner", "emulator",
                              "--cluster", cluster.address], cwd=ROOT, capture_output=True, text=True, timeout=180,
                             env={**os.environ, **RAY_ENV, "ASCEND_OPP_PATH": str(opp), "PYTHONPATH": str(ROOT)})
    assert changed.returncode == 2 and "1 passed" in changed.stdout, changed.stdout + changed.stderr
    assert "prmg: error: the toolkit changed while the run ran (node " in changed.stderr, changed.stderr
    assert f": the operator's kernel and tiling files under {opp}): its verdicts are of more than one build" \
        in changed.stderr


def test_a_crash_costs_its_case_only_and_the_actor_is_replaced(cluster, suite):
    result, report = run_json(suite, "--cluster", cluster.address,
                              env={"PRMG_EMU_FAULT": "crash", "PRMG_EMU_FAULT_SHAPE": "1,2,4,32"})
    assert result.returncode == 1
    found = statuses(report)
    assert found.pop("c2") == "error" and found.pop("half_mode") == "skipped"
    assert set(found.values()) == {"passed"}, [(c["name"], c["message"]) for c in report["cases"] if c["name"] != "c2"]
    message = report["cases"][NAMES.index("c2")]["message"]
    assert message.startswith("worker crashed: its Ray actor on NPU ") and "SIGSEGV" in message


def test_a_hang_times_out_and_the_run_goes_on(cluster, suite):
    started = time.monotonic()
    result, report = run_json(suite, "--cluster", cluster.address, "--timeout", "1.5",
                              env={"PRMG_EMU_FAULT": "hang", "PRMG_EMU_FAULT_SHAPE": "1,2,3,32"})
    assert time.monotonic() - started < 90
    found = statuses(report)
    assert found.pop("c1") == "error" and found.pop("half_mode") == "skipped"
    assert set(found.values()) == {"passed"}
    assert report["cases"][1]["message"] == "timed out after 1.5 s"


def test_max_timeouts_counts_per_npu_and_wedged_npus_get_no_more_cases(cluster, suite):
    result, report = run_json(suite, "--cluster", cluster.address, "--timeout", "1", "--max-timeouts", "1",
                              env={"PRMG_EMU_FAULT": "hang"})
    assert result.returncode == 1
    cases = {case["name"]: case for case in report["cases"]}
    timed_out = [name for name, case in cases.items() if case["message"] == "timed out after 1 s"]
    assert len(timed_out) == 2                                # one per NPU, then both are wedged
    waiting = [case for case in cases.values() if case["status"] == "not_run"]
    assert len(waiting) == 5 and all("wedged (--max-timeouts)" in case["message"] for case in waiting)


def _results_in(path: Path) -> int:
    """How many case results the results file ``path`` holds so far (whole lines with a case name)."""
    if not path.exists():
        return 0
    lines = path.read_text().splitlines(keepends=True)
    return sum(1 for line in lines if line.endswith("\n") and "name" in json.loads(line))


def test_a_node_that_leaves_costs_only_its_in_flight_case(cluster, suite, tmp_path):
    results = tmp_path / "r.jsonl"
    command = [sys.executable, "-m", "prmg_cli.cli", "run", str(suite), "--runner", "emulator", "--report", "json",
               "--cluster", cluster.address, "--results", str(results), "--timeout", "120"]
    env = dict(os.environ, **RAY_ENV, PRMG_EMU_FAULT="hang", PRMG_EMU_FAULT_SHAPE="1,2,7,32")     # c5, the last
    process = subprocess.Popen(command, cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and _results_in(results) < len(NAMES) - 1:    # all but c5 (the file also
            time.sleep(0.1)                                                          # holds the run's record)
        time.sleep(0.3)                                       # c5 is now hanging on one node
        assert cluster.tell("remove-hung") == "removed"
        stdout, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
        assert cluster.tell("add") == "added"                 # two NPUs again for the other tests
    report = json.loads(stdout)
    assert process.returncode == 1, stderr
    found = statuses(report)
    assert found.pop("c5") == "error" and found.pop("half_mode") == "skipped"
    assert set(found.values()) == {"passed"}
    assert "left the cluster while running this case" in report["cases"][-1]["message"]


def test_cluster_local_starts_ray_with_this_hosts_devices_and_fail_fast_leaves_the_rest_not_run(emulator, suite):
    pytest.importorskip("ray", reason="Ray is not installed: pip install 'prmg[ray]' for the cluster tests")
    result, report = run_json(suite, "--cluster", "local", "-x",
                              env={"PRMG_EMU_DEVICES": "2", "PRMG_EMU_FAULT": "crash"})
    assert result.returncode == 1
    assert len(report["summary"]["devices"]) == 2                 # the emulator's two devices, as NPU resources
    found = statuses(report)
    assert found.pop("c0") == "error" and found.pop("half_mode") == "skipped"    # skipped needs no worker
    assert set(found.values()) <= {"error", "not_run"} and "not_run" in found.values()
    assert list(found.values()).count("error") <= 1                # only what had started when c0 crashed
    assert "--fail-fast" in report["cases"][-1]["message"]


def test_without_ray_cluster_says_how_to_install_it(suite, tmp_path):
    shim = tmp_path / "shim" / "ray"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'ray'\", name='ray')\n")
    result = prmg("run", suite, "--runner", "emulator", "--cluster", "local",
                  env={"PYTHONPATH": os.pathsep.join([str(shim.parent), str(ROOT)])})
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == ["prmg: error: --cluster needs Ray, which is not installed: "
                                                  "pip install 'prmg[ray]'"]


def test_cluster_usage_errors_are_one_line(suite):
    result = prmg("run", suite, "--runner", "emulator", "--cluster", "auto", "--devices", "0,1")
    assert result.returncode == 2 and "--device and --devices are for local runs" in result.stderr
    pytest.importorskip("ray", reason="Ray is not installed")
    for address in ("127.0.0.1:1", "ray://127.0.0.1", "ray://[::1]:1"):     # ray://HOST: Ray Client's port 10001
        started = time.monotonic()
        result = prmg("run", suite, "--runner", "emulator", "--cluster", address)
        assert result.returncode == 2 and result.stderr.startswith(f"prmg: error: --cluster {address}: cannot reach "
                                                                    f"the Ray cluster (")
        assert result.stderr.count("\n") == 1 and time.monotonic() - started < 30, result.stderr


@pytest.mark.parametrize("address", ["", " ", "ray://", "ray:///", "host", "host:99999", "http://host:1"])
def test_an_address_ray_cannot_take_is_refused_before_ray_is_asked(address):
    from prmg_cli.device.cluster import _endpoint

    with pytest.raises(PrmgError) as caught:
        _endpoint(address)
    assert str(caught.value).startswith(f"--cluster {address!r}: expected auto, local, HOST:PORT or ray://HOST[:PORT]")
    assert [_endpoint(text) for text in ("auto", " local", "h:1", "ray://h", "ray://10.0.0.1:10002/", "[::1]:6379")] \
        == [None, None, ("h", 1), ("h", 10001), ("10.0.0.1", 10002), ("::1", 6379)]


def _serve(listener: socket.socket, answer: bytes | None) -> None:
    """Accept connections on ``listener`` in a thread: send ``answer`` to each, then close it (None: never answer,
    never close)."""
    def serve():
        while True:
            connection, _ = listener.accept()
            if answer is not None:
                connection.recv(64)
                connection.sendall(answer)
                connection.close()
    threading.Thread(target=serve, daemon=True).start()


def test_a_listener_that_is_not_ray_is_refused_in_one_line_before_ray_is_imported(suite, monkeypatch):
    """A web server, or a listener that never answers, at the address: one line at once, before Ray is imported
    (Ray had taken 31 s for ray://, and hung past 120 s logging for HOST:PORT). Ray's GCS and its Ray Client
    server speak gRPC, HTTP/2 underneath: what answers HTTP/2's greeting with a SETTINGS frame passes."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from prmg_cli.device import cluster

    web = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    silent, grpc = socket.create_server(("127.0.0.1", 0)), socket.create_server(("127.0.0.1", 0))
    _serve(silent, None)
    _serve(grpc, b"\x00\x00\x06\x04\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x64")   # SETTINGS: 100 streams
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT", 0.5)
    ports = {name: server.getsockname()[1]
             for name, server in (("web", web.socket), ("silent", silent), ("grpc", grpc))}
    not_grpc, no_answer = "what listens there does not speak gRPC (HTTP/2)", "no answer to gRPC's greeting within 0.5 s"
    for address, why in ((f"127.0.0.1:{ports['web']}", not_grpc), (f"ray://127.0.0.1:{ports['web']}", not_grpc),
                         (f"127.0.0.1:{ports['silent']}", no_answer)):
        with pytest.raises(PrmgError) as caught:
            cluster.connect(address, "emulator", None, frozenset({1}), environ={})
        assert str(caught.value) == f"--cluster {address}: {address.split('//')[-1]} is not a Ray cluster: {why}"
    cluster._check_reachable(f"ray://127.0.0.1:{ports['grpc']}", {})
    cluster._check_reachable(f"127.0.0.1:{ports['silent']}", {"RAY_USE_TLS": "1"})     # TLS: the connection alone
    started = time.monotonic()
    result = prmg("run", suite, "--runner", "emulator", "--cluster", f"127.0.0.1:{ports['web']}")
    assert result.returncode == 2 and time.monotonic() - started < 20
    assert result.stderr.count("\n") == 1 and "is not a Ray cluster: what listens there does not speak gRPC" \
        in result.stderr, result.stderr


def test_an_empty_cluster_address_is_an_error_not_a_local_run(suite):
    result = prmg("run", suite, "--runner", "emulator", "--cluster", "")
    assert result.returncode == 2 and result.stderr == "prmg: error: --cluster '': expected auto, local, HOST:PORT " \
        "or ray://HOST[:PORT] (port 10001 when not given)\n"


def test_the_actors_get_the_toolkit_choice_from_the_driver_only():
    from prmg_cli.device.cluster import forwarded_env

    env = {"ASCEND_HOME_PATH": "/opt/cann", "ASCEND_RT_VISIBLE_DEVICES": "3", "PRMG_EMU_FAULT": "crash",
           "PRMG_EMULATOR_HOME": "/cache", "LD_LIBRARY_PATH": "/lib", "HOME": "/root",
           "PRMG_CLUSTER_ENV": "LD_LIBRARY_PATH"}
    assert forwarded_env(env) == {"ASCEND_HOME_PATH": "/opt/cann", "PRMG_EMU_FAULT": "crash",
                                  "PRMG_EMULATOR_HOME": "/cache", "LD_LIBRARY_PATH": "/lib"}
    del env["PRMG_CLUSTER_ENV"]
    assert "LD_LIBRARY_PATH" not in forwarded_env(env)


def test_a_case_given_back_returns_to_its_place_in_case_order():
    from prmg_cli.cases.loader import Case
    from prmg_cli.device.execute import RunSettings, Schedule

    cases = [Case(name=f"x{i}", source="t", shape=(1, 1, 2, 8), cos_shape=(1, 1, 1, 8), sin_shape=(1, 1, 1, 8),
                  partial_slice=(0, 8)) for i in range(4)]
    schedule = Schedule(cases, RunSettings(toolkit=None))
    taken = [schedule.take(), schedule.take(), schedule.take()]
    schedule.give_back(taken[1])
    assert [schedule.take(), schedule.take()] == [1, 3] and not schedule.waiting


def test_a_case_whose_result_is_in_is_not_timed_out():
    """The cluster executor takes one result a wait; a case past its deadline whose result came in meanwhile (a
    loaded driver, or two actors ending together) was failed as timed out: it is taken at the next wait, and only a
    case still running past its deadline is an error."""
    from collections import deque

    from prmg_cli.case import Case
    from prmg_cli.device.cluster import ClusterExecutor, _Slot
    from prmg_cli.device.execute import RunSettings, Schedule, Wedging

    class RayLike:
        def wait(self, refs, num_returns, timeout):
            return [ref for ref in refs if ref == "done"], [ref for ref in refs if ref != "done"]

    cases = [Case(name=name, source="t", shape=(1, 1, 1, 8), cos_shape=(1, 1, 1, 8), sin_shape=(1, 1, 1, 8),
                  partial_slice=(0, 8)) for name in ("in", "running")]
    executor = object.__new__(ClusterExecutor)
    executor.ray, executor.settings, executor.wedged = RayLike(), RunSettings(toolkit=None, timeout=1.0), {}
    executor._wedging = Wedging(3, executor.wedged)
    executor._slots = [_Slot(f"actor {ref}", None, 0.0, queue=deque([(index, ref, "begun")]), began=0.0)
                       for index, ref in enumerate(("done", "running"))]
    retired = []
    executor._retire = lambda slot, schedule, replace_it, why="": retired.append(slot.actor)
    schedule = Schedule(cases, executor.settings)
    assert [schedule.take(), schedule.take()] == [0, 1]
    executor._expire(schedule)
    assert retired == ["actor running"] and executor._slots[0].queue
    assert schedule.results[0] is None and schedule.results[1].message == "timed out after 1 s"


def test_a_case_times_out_from_its_start_report_or_from_an_actor_that_never_sends_it():
    """--timeout runs from the case's start report (``NpuWorker.begin``), not from its sending: a case sent 2 s ago on
    a loaded node whose start report is not in has not overrun a 1 s --timeout (it was failed as timed out on a loaded
    node when the deadline started at the sending); one whose actor sent no start report in START_TIMEOUT is an
    error saying so, and its NPU counts a timeout."""
    import time
    from collections import deque

    from prmg_cli.case import Case
    from prmg_cli.device.cluster import START_TIMEOUT, ClusterExecutor, _Slot
    from prmg_cli.device.execute import RunSettings, Schedule, Wedging

    class RayLike:
        def wait(self, refs, num_returns, timeout):
            return [], list(refs)

    cases = [Case(name=name, source="t", shape=(1, 1, 1, 8), cos_shape=(1, 1, 1, 8), sin_shape=(1, 1, 1, 8),
                  partial_slice=(0, 8)) for name in ("dispatched", "never")]
    executor = object.__new__(ClusterExecutor)
    executor.ray, executor.settings, executor.wedged = RayLike(), RunSettings(toolkit=None, timeout=1.0), {}
    executor._wedging = Wedging(1, executor.wedged)
    now = time.monotonic()
    executor._slots = [_Slot(f"actor {index}", None, 0.0, queue=deque([(index, f"result {index}", f"begun {index}")]),
                             sent=sent, info={"node_id": f"n{index}", "npu": "0", "ip": "10.0.0.9"})
                       for index, sent in enumerate((now - 2.0, now - START_TIMEOUT - 1.0))]
    assert [slot.awaited for slot in executor._slots] == ["begun 0", "begun 1"]
    retired = []
    executor._retire = lambda slot, schedule, replace_it, why="": retired.append(slot.actor)
    schedule = Schedule(cases, executor.settings)
    assert [schedule.take(), schedule.take()] == [0, 1]
    executor._expire(schedule)
    assert retired == ["actor 1"] and schedule.results[0] is None
    assert schedule.results[1].message == "timed out: its actor on NPU 0 of 10.0.0.9 did not start it within 120 s"
    assert executor.wedged == {("n1", "0"): "1 timeout in a row: the device is considered wedged (--max-timeouts)"}
    executor._slots[0].began = now - 1.5                               # its start report came in 1.5 s ago
    assert executor._slots[0].awaited == "result 0" and executor._slots[0].deadline(1.0) == now - 0.5
    executor._expire(schedule)
    assert schedule.results[0].message == "timed out after 1 s"


def test_sigterm_during_a_ray_wait_stays_a_termination():
    """Ray turns whatever a signal handler raises inside ray.wait into KeyboardInterrupt; the cluster
    executor's wait gives back suite's Terminated, so that SIGTERM is reported as such (exit 143)."""
    import signal

    from prmg_cli.device.cluster import _wait
    from prmg_cli.errors import Terminated, on_stop

    class RayLike:
        def wait(self, refs, num_returns, timeout):
            try:
                signal.getsignal(signal.SIGTERM)(signal.SIGTERM, None)
            except BaseException:
                raise KeyboardInterrupt from None
            return refs, []

    previous = signal.signal(signal.SIGTERM, on_stop)
    try:
        with pytest.raises(Terminated):
            _wait(RayLike(), ["ref"], 0.1)
        assert signal.getsignal(signal.SIGTERM) is on_stop
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        with pytest.raises(KeyboardInterrupt) as caught:
            _wait(RayLike(), ["ref"], 0.1)
        assert type(caught.value) is KeyboardInterrupt
    finally:
        signal.signal(signal.SIGTERM, previous)
