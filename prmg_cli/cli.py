"""The ``prmg`` command line's entry point: runs the Typer application (``app``) and maps outcomes to exit codes.

Exit codes (``results.ExitCode``): 0 nothing failed; 1 a case failed, errored, xpassed or did not run;
2 a usage or case-file error (one line naming file, case and field); 3 a bug in prmg; 5 no case
selected, or every case skipped; 130 interrupted (Ctrl-C); 143 terminated (SIGTERM); 129 hung up (SIGHUP).

A stop signal (Ctrl-C, SIGTERM, SIGHUP: ``errors.STOPS``) is the same exit at any moment from the first line of
prmg's code, the first tenth of a second included: this module imports nothing but ``errors`` (signal), and ``main``
holds (blocks) the stop signals before it imports typer and the commands, then lets a held one through where it
handles it (its exit code, one line, never a traceback). Before this module, the interpreter starts and runs ``site``
(30-40 ms on a loaded 2-core machine): a signal there is the interpreter's default (docs/scale.md, Stopping).
Once the command is over (or, for ``prmg run``, once its reports state its exit code: ``errors.outcome_final``) a
signal changes nothing: the stop signals stay held, then ignored, until the process has exited, so none can kill it
with the raw signal while the interpreter shuts down (whose finalization sets a Python handler back to SIG_DFL, in
every thread).
"""

from __future__ import annotations

import errno
import gc
import io
import os
import signal
import sys

from .errors import (STOP_SIGNALS, STOPS, PrmgError, drop_held_signals, keep_lost_stops, on_stop, outcome_final,
                     raised_stop, stop_signal)


OUT_OF_MEMORY = ("out of memory: the command needs more memory than this process may use (a results file of too many "
                 "cases, or cases too large for this machine?)")


def _error_line(text: str, *, keep_newlines: bool = False) -> None:
    """``text`` on stderr (control characters escaped: one line unless ``keep_newlines``; on a terminal wrapped
    under its text as prmg's notes are, ``screen.on_stderr``: a 360-column refusal wrapped mid-word), ignoring a
    stderr that cannot be written."""
    from .reports.outputs.screen import on_stderr
    from .results import visible

    try:
        sys.stderr.write((visible(text, keep_newlines=True) if keep_newlines else on_stderr(visible(text))) + "\n")
        sys.stderr.flush()
    except OSError:
        pass


def _printable_streams(errors: tuple | None = None) -> tuple:
    """Make standard output and error write what their encoding lacks as escapes (``backslashreplace``): under
    ``PYTHONIOENCODING=ascii`` (or latin-1) a table's ``≤`` or ``…`` was a UnicodeEncodeError, exit 3 with a
    traceback. Returns the error handlers they had; given them back (``errors``), puts them back."""
    streams = (sys.stdout, sys.stderr)
    before = tuple(getattr(stream, "errors", None) for stream in streams)
    for stream, handler in zip(streams, errors or ("backslashreplace",) * 2):
        if handler is not None and callable(getattr(stream, "reconfigure", None)):
            try:
                stream.reconfigure(errors=handler)
            except (OSError, ValueError):
                pass
    return before


def usage_error_line(error) -> str:
    """A command-line mistake click found (an unknown option, a value of the wrong type, a missing argument) as
    prmg's one line, ``prmg: error: prmg run: Invalid value for '--device': 'abc' is not a valid int (see prmg run
    -h)``, instead of click's usage block of four lines, none of them ``prmg: error:``."""
    from .commands import COMMANDS

    command = " ".join(["prmg"] + [word for word in sys.argv[1:2] if word in COMMANDS])   # (click's may lack it)
    message = _no_such_option(error) if type(error).__name__ == "NoSuchOption" else error.format_message()
    return f"prmg: error: {command}: {message.rstrip('.')} (see {command} -h)"


# What a new user types for parallel runs, which prmg makes one worker per device (``--devices``).
_PARALLEL_WORDS = ("jobs", "j", "workers", "parallel", "processes", "threads", "n", "numprocesses")


def _no_such_option(error) -> str:
    """click's NoSuchOption ``error`` with the option meant found by prmg's rule (``errors.closest``, on the names
    without their dashes: click's difflib with them took ``--bogus`` for ``--verbose`` and ``--seed`` for
    ``--shard``), and ``--jobs``/``--workers`` sent to ``--devices``."""
    from .errors import closest

    params = error.ctx.command.params if error.ctx is not None else []
    names = {opt.lstrip("-").replace("-", "_"): opt for param in params for opt in param.opts if opt.startswith("-")}
    said, word = f"No such option: {error.option_name}", str(error.option_name).lstrip("-").replace("-", "_")
    if word.lower() in _PARALLEL_WORDS and "devices" in names:
        return f"{said} (prmg runs one worker per device: --devices all, or a list such as 0-3)"
    meant = closest(word, names)
    return said + (f" (did you mean {names[meant]}?)" if meant else "")


class _ClosedOutput(io.TextIOBase):
    """Standard output that was closed when prmg started (``prmg run ... >&-``): every write fails as a write to a
    closed descriptor does (EBADF), so that it is said as a full disk is (one ``prmg: error:`` line, exit 2)."""

    encoding, errors = "utf-8", "strict"

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, os.strerror(errno.EBADF))


def _open_standard_streams() -> None:
    """Standard input, output or error closed when prmg started (``>&-``, ``2>&-``, ``<&-``; Python then sets
    ``sys.stdout`` and the others to None): its descriptor is opened on ``/dev/null``, so that no file prmg opens
    takes its number (the emulator's C output or a build's make would have written into a results file), and its
    stream is given back: ``/dev/null`` for input and error (nothing can be said there), ``_ClosedOutput`` for
    output. Each was an AttributeError on None: a traceback, or exit 1 with nothing said."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            opened = os.open(os.devnull, os.O_RDWR)
            if opened != fd:
                os.dup2(opened, fd)
                os.close(opened)
    if sys.stdin is None:
        sys.stdin = open(os.devnull, encoding="utf-8")
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")
    if sys.stdout is None:
        sys.stdout = _ClosedOutput()


class _StderrPipe(io.RawIOBase):
    """Standard error's descriptor, each write whole (``files.write_all``); once its reader has gone (EPIPE: ``prmg
    run cases/ 2>&1 | head``) pointed at ``/dev/null``, quietly, as a closed standard output is (``writes``): the
    command goes on and ends with its verdict. The first note written there (the emulator's fallback line) was a
    BrokenPipeError that click ends as exit 1, nothing said, and a run then wrote no results."""

    def __init__(self, stream):
        super().__init__()
        self.stream, self.fd = stream, stream.fileno()    # the stream kept: freed, it would close its descriptor

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.fd

    def isatty(self) -> bool:
        return os.isatty(self.fd)

    def write(self, data) -> int:
        from .files import write_all
        from .writes import drop_stdout

        try:
            write_all(self.fd, bytes(data))
        except BrokenPipeError:
            drop_stdout(self.stream)
        return len(data)


def _quiet_stderr() -> None:
    """``sys.stderr`` written through ``_StderrPipe`` (line by line, as Python's own standard error is)."""
    stream = sys.stderr
    try:
        pipe = _StderrPipe(stream)
    except (AttributeError, ValueError, OSError):       # no descriptor (a caller's capture): left as it is
        return
    sys.stderr = io.TextIOWrapper(io.BufferedWriter(pipe), encoding=stream.encoding, errors=stream.errors,
                                  line_buffering=True, write_through=True)


_PAUSED = [False]          # the garbage collector is off while the command line loads (``main``, ``command_starts``)


def command_starts() -> None:
    """The command line has loaded (typer, the command's modules: ~50k objects that live as long as the process):
    when ``main`` turned the garbage collector off meanwhile, move those objects to its permanent generation
    (``gc.freeze``: no collection looks at them again) and turn it back on. Collecting them as they were made cost
    about 15 ms of CPU in some 70 collections, a twentieth of a small run's."""
    if _PAUSED[0]:
        _PAUSED[0] = False
        gc.freeze()
        gc.enable()


def main(*, restore: bool = False) -> None:
    """Entry point: user errors become one line on stderr and exit code 2, never a traceback; a bug in
    prmg is exit code 3 with its traceback. Ctrl-C, SIGTERM and SIGHUP stop any command (130, 143, 129; ``prmg run``
    handles them itself), from the start (module docstring) and unblocked even when the parent blocked them;
    once the command is over a signal changes nothing: held until the process exits, or, with ``restore`` (prmg
    called inside another Python program), dropped, this process's signal handling then left as it was found.
    The garbage collector is off until the command starts (``command_starts``), unless ``restore``."""
    if not restore and gc.isenabled():
        gc.disable()
        _PAUSED[0] = True
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)     # held while the command line loads
    previous = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    for signum, handler in previous.items():                      # SIGTERM, SIGHUP stop any command as Ctrl-C does
        if handler is not signal.SIG_IGN:                         # ignored (a background job's Ctrl-C): kept so
            signal.signal(signum, on_stop)
    outcome_final(False)
    _open_standard_streams()
    if not restore:
        _quiet_stderr()
    unraisable_hook, sys.unraisablehook = sys.unraisablehook, keep_lost_stops
    stream_errors = _printable_streams()
    import typer

    from .commands.app import STARTING, Stopped, app
    from .results import ExitCode, stopped_exit_code

    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)     # a stop held so far comes out here
        STARTING[:] = [command_starts]
        code = app(standalone_mode=False)
        if raised_stop():                          # typer took it (while parsing): exit 130 without a word
            code = stopped_exit_code(raised_stop())
            _error_line(f"prmg: {STOPS[raised_stop()][0]}")
    except (PrmgError, MemoryError) as exc:        # out of memory: what it held is freed as it unwinds; one line
        error = exc if isinstance(exc, PrmgError) else PrmgError(OUT_OF_MEMORY)
        for line in error.lines():
            _error_line(f"prmg: error: {line}")
        code = ExitCode.USAGE
    except (Stopped, KeyboardInterrupt) as stopped:
        signum = stop_signal(getattr(stopped, "stop", stopped))
        code = stopped_exit_code(signum)
        _error_line(f"prmg: {STOPS[signum][0]}")
    except typer.Exit as exc:
        code = exc.exit_code
    except typer.Abort:
        code = ExitCode.INTERRUPTED
    except Exception as exc:  # usage errors (click's, vendored or not, under typer): one line, exit 2
        if type(exc).__name__ == "NoArgsIsHelpError":         # bare ``prmg``: the help, on stderr, exit 2
            try:
                exc.show()
            except OSError:
                pass
            code = exc.exit_code
        elif callable(getattr(exc, "format_message", None)) and isinstance(getattr(exc, "exit_code", None), int):
            _error_line(usage_error_line(exc))
            code = int(ExitCode.USAGE)
        else:
            import traceback

            _error_line("prmg: internal error (a bug in prmg; please report it with this traceback):\n"
                        + "".join(traceback.format_exception(exc)), keep_newlines=True)
            code = ExitCode.INTERNAL
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)   # the command is over: a signal now changes nothing
    try:
        sys.stdout.flush()
    except OSError as error:                       # e.g. stdout is /dev/full or a closed pipe
        _error_line(f"prmg: error: cannot write to standard output: {error.strerror or error}")
        os._exit(ExitCode.USAGE)                   # the interpreter's own flush at exit would fail again
    if restore:                                    # as it was found (for a caller in this process)
        drop_held_signals()
        outcome_final(False)                       # the caller's stop handler raises again after a final outcome
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        sys.unraisablehook = unraisable_hook
        _printable_streams(stream_errors)
    else:           # the process ends: its ~30k objects tracked by the garbage collector (modules, classes) are
        gc.freeze()  # left to the exit, not collected and freed one by one (about a tenth of a small run's CPU)
        for signum in STOP_SIGNALS:    # and ignored, not only held by this thread: the interpreter's finalization
            signal.signal(signum, signal.SIG_IGN)    # sets a Python handler back to SIG_DFL, and a thread that
                                                     # does not hold them (OpenBLAS's) took one: killed raw
    sys.exit(int(code) if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
