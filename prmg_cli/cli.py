"""The ``prmg`` command line: parses options, calls one function per command, maps outcomes to exit codes.

Exit codes: 0 nothing failed; 1 a case failed or errored; 2 a usage or case-file error; 130 interrupted.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

import typer

from . import __version__
from .errors import PrmgError

EPILOG_RUN = """
Examples:

```
prmg run cases/
prmg run cases/smoke.yaml --runner aclnn --report junit -o smoke.xml
prmg run cases/ -k bf16 --tag broadcast --standard double_thousandth
prmg run cases/ --supported-modes 0,1,2,3
prmg run cases/ --devices 0,1,2,3 --shard 2/8 --results run.jsonl
```
"""

app = typer.Typer(
    name="prmg",
    help="Prove that Ascend 950's aclnnInplacePartialRotaryMulGrad is right: YAML cases, a numpy golden "
         "for all four rotary modes, the operator called through ctypes-loaded aclnn libraries (or the "
         "host emulator when no toolkit is installed), dtype-aware precision standards and reports.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
    context_settings={"help_option_names": ["-h", "--help"]},
)

PATHS = typer.Argument(..., help="Case files or folders (every *.yaml / *.yml below a folder, sorted).")
SUPPORTED_MODES = typer.Option(
    None, "--supported-modes", metavar="LIST",
    help="Rotary modes the target implements, e.g. 0,1,2,3 or half,interleave (default: interleave, "
         "like today's kernel). Cases of other modes that expect success are skipped with a reason; "
         "with the emulator this also switches those modes on.")
RUNNER = typer.Option("auto", "--runner", help="auto (a CANN toolkit when one is found, else the "
                      "emulator), aclnn (a toolkit, never the emulator) or emulator.")
OP_LIB = typer.Option(None, "--op-lib", metavar="PATH",
                      help="Load the operator from this library instead of the documented search order.")


@app.callback(invoke_without_command=True)
def _main(version: bool = typer.Option(False, "--version", help="Print the version and exit.")) -> None:
    if version:
        typer.echo(f"prmg {__version__}")
        raise typer.Exit(0)


@app.command(epilog=EPILOG_RUN)
def run(
    paths: List[Path] = PATHS,
    runner: str = RUNNER,
    op_lib: Optional[str] = OP_LIB,
    supported_modes: Optional[str] = SUPPORTED_MODES,
    device: int = typer.Option(0, "--device", help="The device to run on (one worker)."),
    devices: Optional[str] = typer.Option(
        None, "--devices", metavar="LIST", help="One worker per device: 0,1,2,3 or 'all'. Results are "
        "identical to a serial run and reported in case order."),
    standard: Optional[str] = typer.Option(
        None, "--standard", help="Judge every case by this standard (default, double_thousandth, "
        "single_bm, double_benchmark, allclose, exact), overriding the case files."),
    report: str = typer.Option("table", "--report", help="table, json, junit, csv or markdown."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="Write the report to FILE "
                                          "(stdout when omitted)."),
    keyword: Optional[str] = typer.Option(None, "-k", help="Only cases whose name contains SUBSTRING."),
    tags: List[str] = typer.Option([], "--tag", help="Only cases with this tag (repeatable: any of them)."),
    fail_fast: bool = typer.Option(False, "--fail-fast", "-x", help="Stop at the first failure or error."),
    list_only: bool = typer.Option(False, "--list", help="Print the cases that would run, run nothing."),
    timeout: float = typer.Option(300.0, "--timeout", metavar="SECONDS",
                                  help="Per case; a case past it is an error and its worker is replaced. "
                                       "0 = no limit."),
    results: Optional[Path] = typer.Option(None, "--results", metavar="FILE",
                                           help="Append each result to this JSON-lines file as it finishes."),
    resume: Optional[Path] = typer.Option(None, "--resume", metavar="FILE",
                                          help="Skip cases already recorded in this results file; new "
                                               "results are appended to it (or to --results FILE)."),
    shard: Optional[str] = typer.Option(None, "--shard", metavar="I/N",
                                        help="Run the deterministic part I of N of the selected cases."),
    max_memory: Optional[str] = typer.Option(
        None, "--max-memory", metavar="SIZE", help="Refuse cases whose estimated host or device memory "
        "need exceeds SIZE (e.g. 8G, 512M; default: half of this machine's RAM)."),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="Also print skip reasons and details."),
) -> None:
    """Run case files against the operator and judge every result.

    The report's last line is `N passed, N failed` (then skipped / errors when non-zero).
    Exit code 0 when nothing failed or errored, 1 otherwise, 2 for usage or case-file errors,
    130 when interrupted (the partial report is printed and the results file keeps what finished).
    """
    from .suite import RunRequest, run_suite

    request = RunRequest(
        paths=[str(p) for p in paths], runner=runner, op_lib=op_lib, supported_modes=supported_modes,
        devices=devices if devices is not None else str(device), standard=standard, report=report,
        output=str(output) if output else None, keyword=keyword, tags=tuple(tags), fail_fast=fail_fast,
        list_only=list_only, timeout=timeout or None, results=str(results) if results else None,
        resume=str(resume) if resume else None, shard=shard, max_memory=max_memory, verbose=verbose)
    raise typer.Exit(run_suite(request))


@app.command()
def validate(paths: List[Path] = PATHS, supported_modes: Optional[str] = SUPPORTED_MODES) -> None:
    """Check case files: syntax, keys, types, values and the operator's documented constraints.

    Prints a summary; exit 0 when every file is valid, 2 otherwise (one line naming file, case, field).

    Example: `prmg validate cases/ --supported-modes 0,1,2,3`
    """
    from .suite import validate_paths

    typer.echo(validate_paths([str(p) for p in paths], supported_modes))


@app.command()
def dump(
    paths: List[Path] = PATHS,
    out: Path = typer.Option(..., "--out", metavar="DIR", help="Folder to write DIR/<case>/ into."),
    keyword: Optional[str] = typer.Option(None, "-k", help="Only cases whose name contains SUBSTRING."),
) -> None:
    """Write each case's inputs and golden as .npy files for other tools.

    DIR/<case>/ gets dy.npy, cos.npy, sin.npy, golden.npy (the expected dx, dy's dtype; absent for cases
    that expect an error) and meta.json (dtypes, shapes, mode, slice, seed). bfloat16 arrays are stored
    as their 16-bit patterns (uint16) and meta.json names the dtype.

    Example: `prmg dump cases/smoke.yaml --out /tmp/golden -k worked`
    """
    from .dump import dump_cases

    typer.echo(dump_cases([str(p) for p in paths], str(out), keyword))


@app.command("gen-case")
def gen_case(
    shape: Optional[str] = typer.Option(None, "--shape", metavar="B,S,N,D", help="dy's shape."),
    cos_shape: Optional[str] = typer.Option(None, "--cos-shape", metavar="B,S,N,L", help="cos/sin shape."),
    broadcast: Optional[str] = typer.Option(
        None, "--broadcast", help="Instead of --cos-shape: BSND, 111D, 1S1D, 1SND, B1ND, BS1D, 11ND, B11D."),
    partial_slice: Optional[str] = typer.Option(None, "--slice", metavar="START,END",
                                                help="[start, end) of the last axis (default 0,D)."),
    dtype: str = typer.Option("float32", "--dtype", help="dy's dtype: float32, float16, bfloat16."),
    cos_dtype: Optional[str] = typer.Option(None, "--cos-dtype", help="cos/sin dtype (default: --dtype)."),
    mode: str = typer.Option("interleave", "--mode", help="half, interleave, quarter, interleave-half "
                                                          "or 0..3."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Input seed (default: derived from the name)."),
    name: Optional[str] = typer.Option(None, "--name", help="Case name (default: derived from the options)."),
    inputs: Optional[str] = typer.Option(
        None, "--inputs", metavar="SPEC", help="e.g. dy=uniform:-1:1,cos=rope:10000,sin=rope:10000 "
        "or dy=normal:0:2"),
    expect: str = typer.Option("pass", "--expect", help="pass, error, or a status code/name."),
    standard: Optional[str] = typer.Option(None, "--standard", help="Precision standard for the case."),
    preset: Optional[str] = typer.Option(
        None, "--preset", help="Write a whole suite: smoke, full, edge, negative, perf, future_modes."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="Write to FILE (stdout otherwise)."),
    append: bool = typer.Option(False, "--append", help="Add the case to FILE's cases instead of "
                                                        "overwriting it."),
) -> None:
    """Generate a case from flags, or a whole suite with --preset. Output is deterministic.

    Invalid combinations are refused with the constraint they break, unless --expect asks for an error.

    Examples:

    ```
    prmg gen-case --shape 2,16,4,128 --broadcast 1S1D --slice 32,96 --dtype bfloat16 --cos-dtype float32
    prmg gen-case --shape 1,1,1,2048 --slice 0,64 --expect ACLNN_ERR_INNER_TILING_ERROR -o neg.yaml --append
    prmg gen-case --preset smoke -o cases/smoke.yaml
    ```
    """
    from .gencase_cli import generate

    typer.echo(generate(
        shape=shape, cos_shape=cos_shape, broadcast=broadcast, partial_slice=partial_slice, dtype=dtype,
        cos_dtype=cos_dtype, mode=mode, seed=seed, name=name, inputs=inputs, expect=expect,
        standard=standard, preset=preset, output=str(output) if output else None, append=append), nl=False)


@app.command("import-ttk")
def import_ttk(
    csv_file: Path = typer.Argument(..., metavar="FILE.csv", help="A TTK operator test list."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="YAML file to write (stdout otherwise)."),
) -> None:
    """Convert a TTK case list (CSV) into prmg YAML cases.

    Disabled rows are skipped with a note; rows that are not this operator or cannot be mapped are
    reported by row number (on stderr). precision_tolerances/absolute_precision become a
    double_thousandth standard with the same thresholds.

    Example: `prmg import-ttk ttk_kernel_inplace_partial_rotary_mul_grad.csv -o cases/ttk.yaml`
    """
    from .gencase_cli import import_ttk_file

    text, notes = import_ttk_file(str(csv_file), str(output) if output else None)
    for note in notes:
        typer.echo(note, err=True)
    if text:
        typer.echo(text, nl=False)


@app.command()
def doctor(runner: str = RUNNER, op_lib: Optional[str] = OP_LIB) -> None:
    """Say what was found and where: toolkit, libraries, operator symbols, devices, ASCEND_* variables.

    Exit 0 when a runner is usable, 1 otherwise.
    """
    from .doctor import diagnose

    text, usable = diagnose(runner, op_lib)
    typer.echo(text)
    raise typer.Exit(0 if usable else 1)


@app.command()
def bench(
    paths: List[Path] = typer.Argument(None, help="Case files or folders to time on the device."),
    host: bool = typer.Option(False, "--host", help="Time the host golden against dy.copy() and a naive "
                                                    "version, side by side."),
    runner: str = RUNNER,
    op_lib: Optional[str] = OP_LIB,
    supported_modes: Optional[str] = SUPPORTED_MODES,
    device: int = typer.Option(0, "--device", help="The device to time on."),
    warmup: int = typer.Option(3, "--warmup", help="Untimed launches before measuring."),
    repeat: int = typer.Option(10, "--repeat", help="Timed launches per case."),
    peak_gbps: Optional[float] = typer.Option(None, "--peak-gbps", help="Peak memory bandwidth of the "
                                              "device (GB/s); default: the --soc entry of the table."),
    soc: str = typer.Option("Ascend950PR", "--soc", help="Device kind for the peak bandwidth table "
                            "(Ascend950PR 1600 GB/s, Ascend950DT 4000 GB/s)."),
    timeout: float = typer.Option(600.0, "--timeout", metavar="SECONDS",
                                  help="Limit for the whole measurement (0 = none)."),
    keyword: Optional[str] = typer.Option(None, "-k", help="Only cases whose name contains SUBSTRING."),
    report: str = typer.Option("table", "--report", help="table or json."),
) -> None:
    """Time the kernel with ACL events (min/median, bytes moved, GB/s, share of peak), or the host golden.

    Examples: `prmg bench --host`, `prmg bench cases/smoke.yaml --repeat 20 --report json`
    """
    from .bench import bench_command

    typer.echo(bench_command(
        paths=[str(p) for p in paths or []], host=host, runner=runner, op_lib=op_lib,
        supported_modes=supported_modes, device=device, warmup=warmup, repeat=repeat,
        peak_gbps=peak_gbps, soc=soc, timeout=timeout or None, keyword=keyword, report_format=report))


def main() -> None:
    """Entry point: user errors become one line on stderr and exit code 2, never a traceback."""
    try:
        code = app(standalone_mode=False)
    except PrmgError as exc:
        typer.echo(f"prmg: error: {exc}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        typer.echo("prmg: interrupted", err=True)
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.exit(130)
    except Exception as exc:  # usage errors (click's, vendored or not, under typer) show themselves
        if callable(getattr(exc, "show", None)) and isinstance(getattr(exc, "exit_code", None), int):
            exc.show()
            sys.exit(exc.exit_code)
        raise
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
