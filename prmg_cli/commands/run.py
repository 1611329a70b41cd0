"""``prmg run``: its options (the pytest plugin offers those marked ``plugin`` as ``--prmg-*``), the request they
make, and the command (``suite.run_suite`` runs it). The golden-free checks' own options (``--repeat``) come from
the checks' registry, where each check declares them."""

from __future__ import annotations

from ..device.execute import MAX_TIMEOUTS
from ..judging.checks import CHECKS, OPTIONS as CHECK_OPTIONS
from ..judging.standards import STANDARDS
from .shared_options import (EXCLUDE_TAGS, KEYWORD, OP_LIB, OUTPUT, PATHS, REPORTS, RUNNER, SUPPORTED_MODES, TAGS,
                             VERBOSE, WIDE)
from .options import Option, request_type

OPTIONS = (
    PATHS, RUNNER, OP_LIB, SUPPORTED_MODES,
    Option("device", ("--device",), 0, "The device to run on (one worker).", "N", int),
    Option("devices", ("--devices",), None, "One worker per device: 0,1,2,3, 0-7 or 'all' (ids the runtime does not "
           "have are refused first). Results are identical to a serial run and reported in case order.", "LIST",
           plugin=True),
    Option("each_device", ("--each-device",), False, "Run every case on each device of --devices instead of sharing "
           "the cases among them: a chip failing only some cases fails them wherever it sits. A case's result is its "
           "worst device's, naming where each status came from.", kind=bool, plugin=True),
    Option("standard", ("--standard",), None, f"Judge every case by this standard ({', '.join(STANDARDS)}) with "
           f"its default parameters, overriding the case files' standards and tolerances.", "NAME", plugin=True),
    REPORTS, OUTPUT, KEYWORD, TAGS, EXCLUDE_TAGS,
    Option("fail_fast", ("--fail-fast", "-x"), False, "Stop at the first failure, error or xpass; the cases not "
           "run are reported as not_run.", kind=bool),
    Option("list_only", ("--list",), False, "Print the cases that would run (skip: the target would skip it), run "
           "nothing.", kind=bool),
    Option("timeout", ("--timeout",), 300.0, "Per case, a finite number >= 0; a case past it is an error and its "
           "worker is replaced. 0 = no limit.", "SECONDS", float, plugin=True),
    Option("max_timeouts", ("--max-timeouts",), MAX_TIMEOUTS, "After K timeouts in a row a device is considered "
           "wedged; its remaining cases are reported not_run.", "K", int),
    Option("results", ("--results",), None, "Append each result to this JSON-lines file as it finishes.", "FILE",
           path=True),
    Option("resume", ("--resume",), None, "Skip cases already recorded (passed, failed, skipped) in this results "
           "file, unchanged since and judged under the same settings (toolkit, its libraries and the operator's kernel "
           "and tiling files under the opp path, SoC, faults, --standard, ...); new results are appended to it (or "
           "to --results, which then gets a copy of each result taken).", "FILE", path=True),
    Option("shard", ("--shard",), None, "Run the deterministic part I of N of the selected cases.", "I/N"),
    Option("max_memory", ("--max-memory",), None, "Refuse cases whose estimated host or device memory need exceeds "
           "SIZE (the emulator's: both together; e.g. 8G, 512M; 0 = no limit, as --timeout 0; default: half of this "
           "machine's RAM).", "SIZE"),
    Option("strict", ("--strict",), False, "Warnings (e.g. a vacuous case whose input already passes) fail their "
           "cases.", kind=bool, plugin=True),
    Option("check", ("--check",), None, "Golden-free checks on the device for every pass case (comma-separated): "
           f"{', '.join(CHECKS)}, or all of them.", "LIST", plugin=True),
    Option("no_golden", ("--no-golden",), False, "Judge cases by their checks alone (for shapes too large for a "
           "host golden); every pass case then needs sample, the check anchored to the formula, from --check or "
           "its own checks: (or correctness_unchecked: saying why).", kind=bool, plugin=True),
    *(Option(name, (f"--{name.replace('_', '-')}",), option.default, option.help, option.metavar, int, plugin=True)
      for name, (check, option) in CHECK_OPTIONS.items()),
    Option("save_failures", ("--save-failures",), None, "For each failed case write DIR/CASE/ with its inputs, "
           "output and meta.json, and its golden, expected result and error map where it has a golden (not for "
           "golden: false or an expected error), in prmg dump's layout; numpy alone reads them; a symlink inside "
           "DIR is never followed. Under --each-device, DIR/device-N/CASE/ for each device.", "DIR",
           path=True),
    Option("cluster", ("--cluster",), None, "Run on the NPUs of a Ray cluster, one worker per NPU: ADDRESS as "
           "ray.init takes it (auto, HOST:PORT, ray://HOST[:PORT], port 10001 by default), or local to start one "
           "here with this host's devices. Needs pip install 'prmg[ray]'.", "ADDRESS"),
    VERBOSE,
    Option("max_details", ("--max-details",), None, "With -v, at most N diagnosis lines per case.", "N", int),
    WIDE,
    Option("progress_interval", ("--progress-interval",), 30.0, "When stderr is not a terminal, a progress line "
           "every SECONDS (0: none).", "SECONDS", float),
)

Request = request_type("RunRequest", OPTIONS, "The options of ``prmg run`` as plain values (``OPTIONS``).")

EXAMPLES = """\b
Examples:
  prmg run cases/
  prmg run cases/smoke.yaml --runner aclnn \\
      --report junit:smoke.xml --report json:smoke.json
  prmg run cases/ -k bf16 --tag broadcast --standard allclose
  prmg run cases/ --supported-modes 0,1,2,3 --exclude-tag mode-unsupported
  prmg run cases/smoke.yaml --check adjoint,determinism --repeat 5
  prmg run cases/ --devices 0,1,2,3 --shard 2/8 --results shard2.jsonl
  prmg run cases/smoke.yaml --runner aclnn --devices all --each-device
"""


def _emulator_help() -> str:
    """The emulator's variables and fault names, read from its sources (``prmg doctor`` says what each does)."""
    from ..device.toolkit import emulator_fault_names, emulator_variables

    return (f"The emulator (--runner emulator, or auto where nothing names or installs a toolkit) reads "
            f"{', '.join(emulator_variables())}. PRMG_EMU_FAULT=NAME[,NAME...] injects faults, to test prmg itself: "
            f"{', '.join(emulator_fault_names())} (prmg doctor says what each does).")


def _standards_help() -> str:
    """Each standard's rule in one paragraph (``Standard.help``; docs/standards.md says which upstream rule each
    reproduces)."""
    return "\n\n".join(["Standards (--standard, a case's standard:; docs/standards.md):",
                         *(f"{name}: {standard.help}" for name, standard in STANDARDS.items())])


EPILOG = EXAMPLES + "\n" + _standards_help() + "\n\n" + _emulator_help()


def main(request) -> int:
    """Run case files against the operator and judge every result.

    The report's last line is the summary, e.g. `756 passed, 0 failed, 2 xfailed, 84 skipped`. Exit code 0
    when nothing failed, 1 when a case failed, errored, xpassed or did not run, 2 for usage or case-file
    errors, 5 when no case is selected (or every case was skipped), 130/143/129 when interrupted (Ctrl-C),
    terminated (SIGTERM) or hung up (SIGHUP: the terminal closed; ignored under nohup): the partial report is
    printed and the results file keeps what finished.
    """
    from .suite import run_suite

    return run_suite(request)
