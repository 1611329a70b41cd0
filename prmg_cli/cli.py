"""The ``prmg`` command line: parses options, calls one function per command, maps outcomes to exit codes.

Exit codes (``results.ExitCode``): 0 nothing failed; 1 a case failed, errored, xpassed or did not run;
2 a usage or case-file error (one line naming file, case and field); 3 a bug in prmg; 5 no case
selected; 130 interrupted (Ctrl-C); 143 terminated (SIGTERM).
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from pathlib import Path
from typing import List, Optional

import typer
import typer.core

from . import __version__
from .errors import STOP_SIGNALS, PrmgError, Terminated, drop_held_signals, on_sigterm
from .results import ExitCode, visible
from .vocab import MAX_REPEAT


class _Command(typer.core.TyperCommand):
    """A command whose usage line names its arguments plainly (``PATH...``, ``FILE.csv``)."""

    def collect_usage_pieces(self, ctx) -> list[str]:
        """``[OPTIONS]`` then each argument's metavar (or name), ``...`` when it takes several."""
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                name = param.metavar or param.name.upper()
                pieces.append(name if name.endswith("...") or param.nargs == 1 else f"{name}...")
        return pieces


class _Stopped(BaseException):
    """Ctrl-C or SIGTERM (``stop``: the ``KeyboardInterrupt`` or ``errors.Terminated``) inside a command, carried
    past typer, which would turn it into a silent exit 130."""

    def __init__(self, stop: KeyboardInterrupt):
        super().__init__(stop)
        self.stop = stop


class _Group(typer.core.TyperGroup):
    """prmg's commands: a Ctrl-C or SIGTERM inside one comes out of the app as ``_Stopped``."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as stop:
            raise _Stopped(stop) from None


app = typer.Typer(
    name="prmg",
    cls=_Group,
    help="Prove that Ascend 950's aclnnInplacePartialRotaryMulGrad is right: YAML cases, a numpy golden "
         "for all four rotary modes, the operator called through ctypes-loaded aclnn libraries (or the "
         "host emulator when no toolkit is installed), dtype-aware precision standards and reports.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
command = app.command

PATHS = typer.Argument(..., metavar="PATH...", help="Case files or folders (every *.yaml / *.yml below a "
                       "folder, sorted).")
SUPPORTED_MODES = typer.Option(
    None, "--supported-modes", metavar="LIST",
    help="Rotary modes the target implements, e.g. 0,1,2,3 or half,interleave (default: interleave, "
         "like today's kernel). Pass cases of other modes are skipped with a reason; cases that expect "
         "an error always run. With the emulator this also switches those modes on.")
RUNNER = typer.Option("auto", "--runner", metavar="NAME", help="auto (a CANN toolkit when one is found, "
                      "else the emulator), aclnn (a toolkit, never the emulator) or emulator.")
OP_LIB = typer.Option(None, "--op-lib", metavar="PATH",
                      help="Load the operators from this library instead of the documented search order.")
KEYWORD = typer.Option(None, "-k", metavar="SUBSTRING", help="Only cases whose name contains SUBSTRING.")

EPILOG_RUN = """\b
Examples:
  prmg run cases/
  prmg run cases/smoke.yaml --runner aclnn --report junit:smoke.xml --report json:smoke.json
  prmg run cases/ -k bf16 --tag broadcast --standard allclose
  prmg run cases/ --supported-modes 0,1,2,3 --exclude-tag mode-unsupported
  prmg run cases/ --devices 0,1,2,3 --shard 2/8 --results shard2.jsonl
"""


@app.callback(invoke_without_command=True)
def _main(version: bool = typer.Option(False, "--version", help="Print the version and exit.")) -> None:
    if version:
        typer.echo(f"prmg {__version__}")
        raise typer.Exit(0)


@command(cls=_Command, epilog=EPILOG_RUN)
def run(
    paths: List[Path] = PATHS,
    runner: str = RUNNER,
    op_lib: Optional[str] = OP_LIB,
    supported_modes: Optional[str] = SUPPORTED_MODES,
    device: int = typer.Option(0, "--device", metavar="N", help="The device to run on (one worker)."),
    devices: Optional[str] = typer.Option(
        None, "--devices", metavar="LIST", help="One worker per device: 0,1,2,3 or 'all' (ids the runtime does "
        "not have are refused first). Results are identical to a serial run and reported in case order."),
    standard: Optional[str] = typer.Option(
        None, "--standard", metavar="NAME", help="Judge every case by this standard (default, "
        "double_thousandth, single_bm, double_benchmark, allclose, exact) with its default parameters, "
        "overriding the case files' standards and tolerances."),
    report: List[str] = typer.Option(
        [], "--report", metavar="FORMAT[:FILE]", help="table, json, junit, csv, markdown or html (pip install "
        "'prmg[html]'), to FILE or standard output; repeatable, e.g. --report junit:smoke.xml --report html:run.html."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", metavar="FILE", help="The file of the one "
                                          "--report given without one."),
    keyword: Optional[str] = KEYWORD,
    tags: List[str] = typer.Option([], "--tag", metavar="WORD", help="Only cases with this tag "
                                   "(repeatable: any of them)."),
    exclude_tags: List[str] = typer.Option([], "--exclude-tag", metavar="WORD", help="Leave out cases with "
                                           "this tag (repeatable)."),
    fail_fast: bool = typer.Option(False, "--fail-fast", "-x", help="Stop at the first failure, error or "
                                   "xpass; the cases not run are reported as not_run."),
    list_only: bool = typer.Option(False, "--list", help="Print the cases that would run, run nothing."),
    timeout: float = typer.Option(300.0, "--timeout", metavar="SECONDS",
                                  help="Per case, a finite number >= 0; a case past it is an error and its "
                                       "worker is replaced. 0 = no limit."),
    max_timeouts: int = typer.Option(3, "--max-timeouts", metavar="K", help="After K timeouts in a row a "
                                     "device is considered wedged; its remaining cases are reported not_run."),
    results: Optional[Path] = typer.Option(None, "--results", metavar="FILE",
                                           help="Append each result to this JSON-lines file as it finishes."),
    resume: Optional[Path] = typer.Option(None, "--resume", metavar="FILE",
                                          help="Skip cases already recorded (passed, failed, skipped) in this "
                                               "results file, unchanged since and judged under the same settings "
                                               "(toolkit, faults, --standard, ...); new results are appended to "
                                               "it (or to --results)."),
    shard: Optional[str] = typer.Option(None, "--shard", metavar="I/N",
                                        help="Run the deterministic part I of N of the selected cases."),
    max_memory: Optional[str] = typer.Option(
        None, "--max-memory", metavar="SIZE", help="Refuse cases whose estimated host or device memory "
        "need exceeds SIZE (e.g. 8G, 512M; default: half of this machine's RAM)."),
    strict: bool = typer.Option(False, "--strict", help="Warnings (e.g. a vacuous case whose input already "
                                "passes) fail their cases."),
    check: Optional[str] = typer.Option(None, "--check", metavar="LIST", help="Golden-free checks on the device "
                                        "for every pass case: adjoint, roundtrip, determinism (comma-separated)."),
    no_golden: bool = typer.Option(False, "--no-golden", help="Judge cases by their checks alone (for shapes too "
                                   "large for a host golden); needs --check."),
    repeat: int = typer.Option(2, "--repeat", metavar="K", help=f"Launches the determinism check compares (2 to "
                               f"{MAX_REPEAT})."),
    save_failures: Optional[Path] = typer.Option(None, "--save-failures", metavar="DIR", help="For each failed "
                                                 "case write DIR/CASE/ with its inputs, output, float64 golden, "
                                                 "error map and meta.json (numpy alone reads them); a symlink "
                                                 "inside DIR is never followed."),
    cluster: Optional[str] = typer.Option(
        None, "--cluster", metavar="ADDRESS", help="Run on the NPUs of a Ray cluster, one worker per NPU: "
        "ADDRESS as ray.init takes it (auto, HOST:PORT, ray://HOST[:PORT], port 10001 by default), or local to "
        "start one here with this host's devices. Needs pip install 'prmg[ray]'."),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="Also print diagnosis lines and skip reasons."),
    max_details: Optional[int] = typer.Option(None, "--max-details", metavar="N",
                                              help="With -v, at most N diagnosis lines per case."),
    wide: bool = typer.Option(False, "--wide", help="Show every table column and whole case names."),
    progress_interval: float = typer.Option(30.0, "--progress-interval", metavar="SECONDS",
                                            help="When stderr is not a terminal, a progress line every "
                                                 "SECONDS (0: none)."),
) -> None:
    """Run case files against the operator and judge every result.

    The report's last line is the summary, e.g. `441 passed, 0 failed, 48 skipped`. Exit code 0 when
    nothing failed, 1 when a case failed, errored, xpassed or did not run, 2 for usage or case-file
    errors, 5 when no case is selected, 130/143 when interrupted or terminated (the partial report is
    printed and the results file keeps what finished).
    """
    from .suite import RunRequest, check_timeout, run_suite

    if max_details is not None and max_details < 0:
        raise PrmgError(f"--max-details must be >= 0, got {max_details}")
    if cluster is not None and (devices is not None or device != 0):
        raise PrmgError("--cluster runs one worker per NPU of the cluster; --device and --devices are for "
                        "local runs")
    request = RunRequest(
        paths=[str(p) for p in paths], runner=runner, op_lib=op_lib, supported_modes=supported_modes,
        devices=devices if devices is not None else str(device), standard=standard, reports=tuple(report),
        output=str(output) if output else None, keyword=keyword, tags=tuple(tags),
        exclude_tags=tuple(exclude_tags), fail_fast=fail_fast, list_only=list_only, timeout=timeout,
        results=str(results) if results else None, resume=str(resume) if resume else None, shard=shard,
        max_memory=max_memory, verbose=verbose, wide=wide, max_details=max_details, strict=strict,
        max_timeouts=max_timeouts, progress_interval=check_timeout(progress_interval, "--progress-interval") or 0,
        checks=check, golden=not no_golden, repeat=repeat, save_failures=str(save_failures) if save_failures else None,
        cluster=cluster)
    raise typer.Exit(run_suite(request))


@command(cls=_Command)
def validate(paths: List[Path] = PATHS, supported_modes: Optional[str] = SUPPORTED_MODES) -> None:
    """Check case files: syntax, keys, types, values and the operators' documented constraints.

    Prints a warning per case whose expected error the constraint model disagrees with, then a summary;
    exit 0 when every file is valid, 2 otherwise (one line per broken case, naming file, case, field).

    \b
    Example:
      prmg validate cases/ --supported-modes 0,1,2,3
    """
    from .suite import validate_paths
    from .writes import write_stdout

    write_stdout(validate_paths([str(p) for p in paths], supported_modes))


@command(cls=_Command)
def dump(
    paths: List[Path] = PATHS,
    out: Path = typer.Option(..., "--out", metavar="DIR", help="Folder to write DIR/CASE/ into."),
    keyword: Optional[str] = KEYWORD,
) -> None:
    """Write each case's inputs and golden as .npy files for other tools.

    DIR/CASE/ gets dy.npy, cos.npy, sin.npy, golden.npy (the expected result in dy's dtype; absent for
    cases that expect an error) and meta.json (dtypes, shapes, mode, slice, seed). bfloat16 arrays are
    stored as their 16-bit patterns (uint16) and meta.json names the dtype.

    \b
    Example:
      prmg dump cases/smoke.yaml --out /tmp/golden -k worked
    """
    from .dump import dump_cases
    from .writes import write_stdout

    write_stdout(dump_cases([str(p) for p in paths], str(out), keyword))


@command("gen-case", cls=_Command)
def gen_case(
    shape: Optional[str] = typer.Option(None, "--shape", metavar="B,S,N,D", help="dy's shape."),
    cos_shape: Optional[str] = typer.Option(None, "--cos-shape", metavar="B,S,N,L", help="cos/sin shape."),
    broadcast: Optional[str] = typer.Option(
        None, "--broadcast", metavar="PATTERN", help="Instead of --cos-shape: BSND, 111D, 1S1D, 1SND, B1ND, "
        "BS1D, 11ND, B11D (default: cos shape [1, 1, 1, L], as in a case file)."),
    partial_slice: Optional[str] = typer.Option(None, "--slice", metavar="START,END",
                                                help="[start, end) of the last axis (default 0,D)."),
    dtype: str = typer.Option("float32", "--dtype", metavar="DTYPE", help="dy's dtype: float32, float16, "
                              "bfloat16."),
    cos_dtype: Optional[str] = typer.Option(None, "--cos-dtype", metavar="DTYPE",
                                            help="cos/sin dtype (default: --dtype)."),
    mode: str = typer.Option("interleave", "--mode", metavar="MODE", help="half, interleave, quarter, "
                             "interleave-half or 0..3."),
    seed: Optional[int] = typer.Option(None, "--seed", metavar="N", help="Input seed (default: derived from "
                                       "the name)."),
    name: Optional[str] = typer.Option(None, "--name", metavar="NAME", help="Case name (default: derived from "
                                       "the options)."),
    inputs: Optional[str] = typer.Option(
        None, "--inputs", metavar="SPEC", help="TENSOR=KIND[:ARGS] items separated by commas, e.g. "
        "dy=uniform:-1:1,cos=rope:10000,sin=rope:10000 or dy=normal:0:2."),
    expect: str = typer.Option("pass", "--expect", metavar="WHAT", help="pass, error, or a status "
                               "code/name."),
    standard: Optional[str] = typer.Option(None, "--standard", metavar="NAME", help="Precision standard for "
                                           "the case."),
    preset: Optional[str] = typer.Option(
        None, "--preset", metavar="NAME", help="Write a whole suite: smoke, full, edge, negative, special, "
        "forward, checks, perf, future_modes, cover (every regime class of prmg coverage), models (real models' "
        "shapes)."),
    tags: List[str] = typer.Option([], "--tag", metavar="WORD", help="With --preset: only its cases with this "
                                   "tag (repeatable: any of them)."),
    exclude_tags: List[str] = typer.Option([], "--exclude-tag", metavar="WORD", help="With --preset: leave out "
                                           "its cases with this tag (repeatable)."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", metavar="FILE",
                                          help="Write to FILE (stdout otherwise); a case that would not load "
                                               "from FILE (a file: input outside its folder) is refused."),
    append: bool = typer.Option(False, "--append", help="Add the case to FILE's cases instead of "
                                                        "overwriting it."),
) -> None:
    """Generate a case from flags, or a whole suite with --preset. Output is deterministic.

    Invalid combinations are refused with the constraint they break, unless --expect asks for an error.

    \b
    Examples:
      prmg gen-case --shape 2,16,4,128 --broadcast 1S1D --slice 32,96 --dtype bfloat16 --cos-dtype float32
      prmg gen-case --shape 1,1,1,2048 --slice 0,64 --expect ACLNN_ERR_INNER_TILING_ERROR -o neg.yaml --append
      prmg gen-case --shape 1,2,2,64 --inputs dy=uniform:-1:1,cos=rope:10000,sin=rope:10000
      prmg gen-case --preset smoke -o cases/smoke.yaml
      prmg gen-case --preset cover -o cases/cover.yaml
      prmg gen-case --preset models --tag long -o models-long.yaml
    """
    from .gencase_cli import generate

    typer.echo(generate(
        shape=shape, cos_shape=cos_shape, broadcast=broadcast, partial_slice=partial_slice, dtype=dtype,
        cos_dtype=cos_dtype, mode=mode, seed=seed, name=name, inputs=inputs, expect=expect,
        standard=standard, preset=preset, output=str(output) if output else None, append=append,
        tags=tuple(tags), exclude_tags=tuple(exclude_tags)), nl=False)


@command("coverage", cls=_Command)
def coverage_report(
    paths: List[Path] = PATHS,
    report: str = typer.Option("table", "--report", metavar="FORMAT", help="table, json, markdown or html."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", metavar="FILE", help="Write the report to FILE "
                                          "(standard output gets its summary line)."),
    fail_under: Optional[float] = typer.Option(None, "--fail-under", metavar="PERCENT", help="Exit 1 when fewer "
                                               "than PERCENT of the classes are covered."),
    op: List[str] = typer.Option([], "--op", metavar="NAME", help="Only this operator's cases and classes "
                                 "(grad, forward; repeatable)."),
    wide: bool = typer.Option(False, "--wide", help="Whole case names and reasons in the table."),
) -> None:
    """Show which regime classes the cases in PATH cover, per operator, and which none does.

    A class is a regime where a kernel's code changes behaviour (a dtype pair, a layout, a count past 8, 12 or
    16 bits, the core split, 32-byte alignment, a special value inside or outside the slice, each rule of
    the constraint model...), with a one-line reason. Each is covered by N cases (one named) or MISSING. Exit
    0, or 1 when --fail-under is not met, 2 for unreadable cases.

    \b
    Examples:
      prmg coverage cases/
      prmg coverage cases/smoke.yaml --op grad --fail-under 30
      prmg coverage cases/ --report json -o coverage.json
    """
    from .coverage import coverage_command
    from .writes import write_stdout

    text, code = coverage_command([str(p) for p in paths], report, str(output) if output else None, fail_under,
                                  tuple(op), wide)
    write_stdout(text)
    raise typer.Exit(code)


@command("import-ttk", cls=_Command)
def import_ttk(
    csv_file: Path = typer.Argument(..., metavar="FILE.csv", help="A TTK operator test list."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", metavar="FILE",
                                          help="YAML file to write (stdout otherwise; never the CSV itself)."),
) -> None:
    """Convert a TTK case list (CSV) into prmg YAML cases.

    Disabled rows are skipped with a note; rows that are not this operator or cannot be mapped are
    reported by row number (on stderr). precision_tolerances/absolute_precision become a
    double_thousandth standard with the same thresholds.

    \b
    Example:
      prmg import-ttk tests/data/ttk_kernel_inplace_partial_rotary_mul_grad.csv -o cases/ttk_upstream.yaml
    """
    from .gencase_cli import import_ttk_file

    text, notes = import_ttk_file(str(csv_file), str(output) if output else None)
    for note in notes:
        typer.echo(visible(note), err=True)
    if text:
        typer.echo(text, nl=False)


@command(cls=_Command)
def doctor(runner: str = RUNNER, op_lib: Optional[str] = OP_LIB) -> None:
    """Say what was found and where: toolkit, libraries, operator symbols, devices, ASCEND_* variables.

    Exit 0 when a runner is usable, 1 otherwise.
    """
    from .doctor import diagnose
    from .writes import write_stdout

    text, usable = diagnose(runner, op_lib)
    write_stdout(text)
    raise typer.Exit(0 if usable else 1)


@command(cls=_Command)
def bench(
    paths: List[Path] = typer.Argument(None, metavar="[PATH]...", help="Case files or folders to time on the "
                                       "device."),
    host: bool = typer.Option(False, "--host", help="Time the host golden against dy.copy() and a naive "
                                                    "version, side by side."),
    runner: str = RUNNER,
    op_lib: Optional[str] = OP_LIB,
    supported_modes: Optional[str] = SUPPORTED_MODES,
    device: int = typer.Option(0, "--device", metavar="N", help="The device to time on."),
    warmup: int = typer.Option(3, "--warmup", metavar="N", help="Untimed launches before measuring."),
    repeat: int = typer.Option(10, "--repeat", metavar="N", help="Timed launches per case."),
    peak_gbps: Optional[float] = typer.Option(None, "--peak-gbps", metavar="GBPS", help="Peak memory "
                                              "bandwidth of the device (GB/s, > 0); default: the --soc entry."),
    soc: Optional[str] = typer.Option(None, "--soc", metavar="NAME", help="Device kind for the peak bandwidth "
                                      "table (Ascend950PR 1600 GB/s, Ascend950DT 4000 GB/s; default: what "
                                      "aclrtGetSocName says)."),
    baseline: Optional[Path] = typer.Option(None, "--baseline", metavar="FILE", help="A bench JSON report to "
                                            "compare with: exit 1 when a case got slower beyond its noise."),
    timeout: float = typer.Option(600.0, "--timeout", metavar="SECONDS",
                                  help="Limit for the whole measurement (0 = none)."),
    keyword: Optional[str] = KEYWORD,
    report: str = typer.Option("table", "--report", metavar="FORMAT", help="table or json."),
) -> None:
    """Time the kernel with ACL events (min/median, bytes moved, GB/s, share of peak), or the host golden.

    \b
    Examples:
      prmg bench --host
      prmg bench cases/smoke.yaml --repeat 20 --report json > base.json
      prmg bench cases/smoke.yaml --repeat 20 --baseline base.json
    """
    import math

    from .bench import bench_command
    from .suite import check_timeout
    from .writes import write_stdout

    if peak_gbps is not None and not (math.isfinite(peak_gbps) and peak_gbps > 0):
        raise PrmgError(f"--peak-gbps must be a finite number > 0, got {peak_gbps!r}")
    text, code = bench_command(
        paths=[str(p) for p in paths or []], host=host, runner=runner, op_lib=op_lib,
        supported_modes=supported_modes, device=device, warmup=warmup, repeat=repeat,
        peak_gbps=peak_gbps, soc=soc, timeout=check_timeout(timeout), keyword=keyword, report_format=report,
        baseline=str(baseline) if baseline else None)
    write_stdout(text)
    raise typer.Exit(code)


@command("compare", cls=_Command)
def compare_runs(
    run_a: Path = typer.Argument(..., metavar="A.jsonl", help="The results file of the first run (--results)."),
    run_b: Path = typer.Argument(..., metavar="B.jsonl", help="The results file of the second run."),
    report: str = typer.Option("table", "--report", metavar="FORMAT", help="table, json or markdown."),
    drift: float = typer.Option(0.25, "--drift", metavar="FRACTION", help="Precision drift: the key metric "
                                "rising by more than this fraction (and --floor) is a regression."),
    floor: float = typer.Option(0.05, "--floor", metavar="VALUE", help="The absolute part of the drift limit."),
    time_floor: float = typer.Option(0.05, "--time-floor", metavar="FRACTION", help="Kernel time: a rise beyond "
                                     "3 x the measured spread plus this fraction of the median is a regression."),
) -> None:
    """Compare two runs: new failures first, then precision drift, kernel-time drift beyond the measured
    noise, cases only in one run, fixes. Exit 1 on any regression, 0 otherwise.

    \b
    Example:
      prmg compare before.jsonl after.jsonl --report markdown
    """
    import math

    from .runs import compare_files
    from .writes import write_stdout

    for name, value in (("--drift", drift), ("--floor", floor), ("--time-floor", time_floor)):
        if not (math.isfinite(value) and value >= 0):
            raise PrmgError(f"{name} must be a finite number >= 0, got {value!r}")
    text, code = compare_files(str(run_a), str(run_b), report, drift=drift, floor=floor, time_floor=time_floor)
    write_stdout(text)
    raise typer.Exit(code)


@command("report", cls=_Command)
def report_results(
    results: List[Path] = typer.Argument(..., metavar="RESULTS.jsonl...", help="Results files of prmg run "
                                         "--results (shards of one suite, or an earlier run)."),
    cases: List[Path] = typer.Option([], "--cases", metavar="PATH", help="The suite's case files or folders "
                                     "(repeatable): report in their order, and list the cases no file holds, or "
                                     "edited since their record was made, as not_run (exit 1)."),
    report: List[str] = typer.Option([], "--report", metavar="FORMAT[:FILE]", help="As prmg run's: table, json, "
                                     "junit, csv, markdown..., to FILE or standard output; repeatable."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", metavar="FILE", help="The file of the one "
                                          "--report given without one."),
    duplicates: str = typer.Option("worst", "--duplicates", metavar="RULE", help="A case in several files: "
                                   "worst (the worst verdict, a verdict beating none: error > failed > xpassed > "
                                   "xfailed > passed > not_run > skipped) or last (the last file's record)."),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="Also print diagnosis lines and skip reasons."),
    wide: bool = typer.Option(False, "--wide", help="Show every table column and whole case names."),
) -> None:
    """Re-render one report from one or more results files, merged in case order.

    Each case held by several files is named on stderr. Each run's record names the cases it selected
    and its shard, so a case of a shard no file holds, or of a run stopped before it, is not_run: a report
    of some shards only is never green. The header carries every run's provenance and names the settings
    that differ between them. Exit codes as prmg run: 0 when every case is ok, 1 when one failed, errored,
    xpassed or was not run (also: a --cases case no file holds), 2 for unreadable files, 5 when there is
    nothing to report.

    \b
    Examples (two shards, say on two hosts, then one report):
      prmg run cases/smoke.yaml --shard 1/2 --results smoke-1.jsonl
      prmg run cases/smoke.yaml --shard 2/2 --results smoke-2.jsonl
      prmg report smoke-1.jsonl smoke-2.jsonl --cases cases/smoke.yaml --report junit:smoke.xml --report markdown:smoke.md
      prmg report smoke-1.jsonl smoke-2.jsonl --report json -o smoke.json
    """
    from .merge import report_files

    raise typer.Exit(report_files([str(path) for path in results], [str(path) for path in cases], tuple(report),
                                  str(output) if output else None, duplicates, verbose, wide))


def _error_line(text: str, *, keep_newlines: bool = False) -> None:
    """``text`` on stderr (control characters escaped: one line unless ``keep_newlines``), ignoring a
    stderr that cannot be written."""
    try:
        sys.stderr.write(visible(text, keep_newlines=keep_newlines) + "\n")
        sys.stderr.flush()
    except OSError:
        pass


def main() -> None:
    """Entry point: user errors become one line on stderr and exit code 2, never a traceback; a bug in
    prmg is exit code 3 with its traceback. Ctrl-C and SIGTERM stop any command (130, 143; ``prmg run``
    handles them itself), unblocked even when the parent blocked them; once the command is over a signal
    changes nothing, and this process's signal handling is left as it was found."""
    previous = signal.getsignal(signal.SIGTERM)
    if previous is not signal.SIG_IGN:                                # SIGTERM stops any command as Ctrl-C does
        signal.signal(signal.SIGTERM, on_sigterm)
    mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)   # even when the parent blocked them
    try:
        code = app(standalone_mode=False)
    except PrmgError as exc:
        for line in exc.lines():
            _error_line(f"prmg: error: {line}")
        code = ExitCode.USAGE
    except (_Stopped, KeyboardInterrupt) as stopped:
        terminated = isinstance(getattr(stopped, "stop", stopped), Terminated)
        _error_line("prmg: terminated" if terminated else "prmg: interrupted")
        code = ExitCode.TERMINATED if terminated else ExitCode.INTERRUPTED
    except typer.Exit as exc:
        code = exc.exit_code
    except typer.Abort:
        code = ExitCode.INTERRUPTED
    except Exception as exc:  # usage errors (click's, vendored or not, under typer) show themselves
        if callable(getattr(exc, "show", None)) and isinstance(getattr(exc, "exit_code", None), int):
            try:
                exc.show()
            except OSError:
                pass
            code = exc.exit_code
        else:
            _error_line("prmg: internal error (a bug in prmg; please report it with this traceback):\n"
                        + "".join(traceback.format_exception(exc)), keep_newlines=True)
            code = ExitCode.INTERNAL
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)   # the command is over: a signal now changes nothing
    try:
        sys.stdout.flush()
    except OSError as error:                       # e.g. stdout is /dev/full or a closed pipe
        _error_line(f"prmg: error: cannot write to standard output: {error.strerror or error}")
        os._exit(ExitCode.USAGE)                   # the interpreter's own flush at exit would fail again
    drop_held_signals()
    signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)   # as it was (for a caller here)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    sys.exit(int(code) if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
