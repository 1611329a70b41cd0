"""The one error type for mistakes a user can make (bad case files, bad options), the closest word its messages
suggest (``suggest``), and how a stop signal (``STOP_SIGNALS``: Ctrl-C, SIGTERM, SIGHUP) becomes an exception
(``stop_exception``: ``KeyboardInterrupt`` or ``Terminated``), raised by ``on_stop``, what each is called
(``STOPS``), and what becomes of one raised where Python ignores exceptions (``keep_lost_stops``)."""

from __future__ import annotations

import signal
import sys

# Each stop signal: what prmg says of a command it stopped, and how a run's reports name the signal. Its exit code is
# 128 + the signal's number (``results.ExitCode``: 130, 143, 129), as a shell reports a process the signal killed.
STOPS = {signal.SIGINT: ("interrupted", "Ctrl-C"), signal.SIGTERM: ("terminated", "SIGTERM"),
         signal.SIGHUP: ("hung up", "SIGHUP")}
STOP_SIGNALS = frozenset(STOPS)


class PrmgError(Exception):
    """A user error, printed by the CLI as one line and mapped to exit code 2.

    The message names where the mistake is: ``file: case 'name': field 'key': what is wrong``.
    Any of ``file``, ``case`` and ``field`` may be omitted when it does not apply. ``others`` are
    further mistakes found in the same pass (``validate`` reports every broken case): one line each.
    """

    def __init__(self, message: str, *, file: str | None = None, case: str | None = None,
                 field: str | None = None, others: tuple["PrmgError", ...] = ()):
        self.reason = message
        self.file = file
        self.case = case
        self.field = field
        self.others = tuple(others)
        super().__init__(message)

    @classmethod
    def all_of(cls, errors: "list[PrmgError]") -> "PrmgError":
        """The first of ``errors`` carrying the rest as ``others``, to raise them all at once."""
        first = errors[0]
        first.others = tuple(errors[1:])
        return first

    def lines(self) -> list[str]:
        """This mistake and every one in ``others``, one line each."""
        return [str(self)] + [str(other) for other in self.others]

    def __str__(self) -> str:
        where = []
        if self.file:
            where.append(str(self.file))
        if self.case:
            where.append(f"case '{self.case}'")
        if self.field:
            where.append(f"field '{self.field}'")
        return ": ".join(where + [self.reason])


def suggest(word, choices) -> str:
    """' (did you mean 'x'?)' for the one of ``choices`` that ``closest`` finds for ``word``, or ''."""
    meant = closest(word, choices)
    return f" (did you mean '{meant}'?)" if meant is not None else ""


def closest(word, choices) -> str | None:
    """The one of ``choices`` that is ``word`` in other case (``Shape`` finds ``shape``, not ``cos_shape``), else the
    first that has ``word`` as one of its ``_``-separated words (``mode`` finds ``rotary_mode``, not the closer
    spelling ``golden``), else the one that begins with it when one does (3 letters at least: ``tol`` finds
    ``tolerance``), else the closest of them (difflib's ratio >= 0.6, letters compared in lower case: ``1s1d`` finds
    ``1S1D``), or None."""
    if not isinstance(word, str) or len(word) > 100:
        return None
    import difflib                               # here: a run that makes no mistake never loads it

    lowered = {str(choice).lower(): str(choice) for choice in reversed(list(choices))}    # the first of alike ones
    begun = [choice for choice in lowered if len(word) >= 3 and choice.startswith(word.lower())]
    close = [word.lower()] * (word.lower() in lowered) \
        or [choice for choice in reversed(list(lowered)) if word.lower() in choice.split("_")[1:]] \
        or begun[:len(begun) == 1] or difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[close[0]] if close else None


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP (``signum``: a closed terminal, an SSH session gone), raised in the main thread
    (``on_stop``) so that it stops prmg as Ctrl-C does (exit 143 or 129)."""

    def __init__(self, signum: int = signal.SIGTERM):
        super().__init__()
        self.signum = signum


def stop_exception(signum: int) -> KeyboardInterrupt:
    """The exception stop signal ``signum`` raises: ``KeyboardInterrupt`` for Ctrl-C, else ``Terminated``."""
    return KeyboardInterrupt() if signum == signal.SIGINT else Terminated(signum)


def stop_signal(stop: BaseException) -> int:
    """The stop signal that raised ``stop`` (``stop_exception``): a plain ``KeyboardInterrupt`` is Ctrl-C."""
    return getattr(stop, "signum", signal.SIGINT)


class _Stops:
    """What ``on_stop`` has done and may do: the stop signal it raised last (0: none), and whether the command's
    outcome is final (``outcome_final``), when it raises nothing."""

    raised = 0
    final = False
    lost = 0


def on_stop(signum, frame) -> None:
    """The entry point's handler of the stop signals: raise ``stop_exception(signum)`` (and remember which:
    ``raised_stop``), or nothing once the command's outcome is final (``outcome_final``)."""
    if not _Stops.final:
        _Stops.raised = signum
        raise stop_exception(signum)


def outcome_final(final: bool = True) -> None:
    """Say that the command's outcome is final (``prmg run`` wrote its reports, which state its exit code): from
    now on ``on_stop`` drops a stop signal, so the process exits with that code. ``final=False`` starts over."""
    _Stops.final = final
    if not final:
        _Stops.raised = 0


def raised_stop() -> int:
    """The stop signal ``on_stop`` raised last (0: none since ``outcome_final(False)``)."""
    return _Stops.raised


def drop_held_signals() -> None:
    """Discard the stop signals that arrived while they were held (blocked): they are never delivered."""
    while signal.sigtimedwait(STOP_SIGNALS, 0) is not None:
        pass


def keep_lost_stops(unraisable) -> None:
    """``sys.unraisablehook`` while prmg runs: a stop a signal handler raised inside a finalizer (a ``__del__``,
    where Python ignores exceptions and would print a traceback) is kept quietly for ``take_lost_stop``; anything
    else goes to Python's own hook."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        _Stops.lost = stop_signal(unraisable.exc_value)
    else:
        sys.__unraisablehook__(unraisable)


def take_lost_stop() -> int:
    """The stop signal whose exception a finalizer swallowed since the last call (0: none), so that the command
    can stop at its next safe point."""
    lost, _Stops.lost = _Stops.lost, 0
    return lost
