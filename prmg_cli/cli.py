"""The ``prmg`` command line: builds the one command it runs from its module in ``commands/`` (its options, its
``main``), and maps outcomes to exit codes.

Exit codes (``results.ExitCode``): 0 nothing failed; 1 a case failed, errored, xpassed or did not run;
2 a usage or case-file error (one line naming file, case and field); 3 a bug in prmg; 5 no case
selected, or every case skipped; 130 interrupted (Ctrl-C); 143 terminated (SIGTERM).
"""

from __future__ import annotations

import os
import signal
import sys
import traceback

import typer
import typer.core

from . import __version__
from .errors import STOP_SIGNALS, PrmgError, Terminated, drop_held_signals, on_sigterm
from .commands import COMMANDS, load
from .options import request_values, typer_signature
from .results import ExitCode, visible


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
    """prmg's commands (``commands.COMMANDS``), each built from its module only when asked for: a command imports
    its own module, not the others'. A Ctrl-C or SIGTERM inside one comes out of the app as ``_Stopped``."""

    def list_commands(self, ctx) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx, name: str):
        return _build(name) if name in COMMANDS else None

    def format_commands(self, ctx, formatter) -> None:
        """Each command with the first sentence of its help, whole (click would cut it at 45 columns)."""
        rows = []
        for name in COMMANDS:
            paragraph = " ".join(load(name).main.__doc__.strip().split("\n\n")[0].split())
            rows.append((name, paragraph.split(". ")[0].rstrip(".") + "."))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as stop:
            raise _Stopped(stop) from None


def _build(name: str):
    """The click command of ``name``: its module's ``OPTIONS`` as parameters, ``main``'s docstring as its help,
    calling ``main(Request(...))`` and exiting with the code it returns."""
    module = load(name)

    def command(**given) -> None:
        raise typer.Exit(module.main(module.Request(**request_values(module.OPTIONS, given))) or 0)

    command.__signature__ = typer_signature(module.OPTIONS)
    command.__annotations__ = {option.name: option.annotation for option in module.OPTIONS}
    command.__doc__ = module.main.__doc__
    one = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)
    one.command(name, cls=_Command, epilog=module.EPILOG)(command)
    return typer.main.get_command(one)


app = typer.Typer(
    name="prmg",
    cls=_Group,
    help="Prove that Ascend 950's InplacePartialRotaryMulGrad (and its forward, InplacePartialRotaryMul) is right: "
         "YAML cases, a numpy golden for all four rotary modes, the operator called through ctypes-loaded aclnn "
         "libraries (or the host emulator when no toolkit is installed), dtype-aware precision standards and "
         "reports.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)


@app.callback(invoke_without_command=True)
def _main(version: bool = typer.Option(False, "--version", help="Print the version and exit.")) -> None:
    if version:
        typer.echo(f"prmg {__version__}")
        raise typer.Exit(0)


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
