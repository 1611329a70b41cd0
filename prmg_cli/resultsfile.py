"""The results file: one JSON line per finished case (``--results``), read back by ``--resume``.

Writing (``ResultsFile``): the file is opened when the object is made, so a path that cannot be
written is a user error before anything runs. Each record is written whole with one ``write`` call and
synced to disk (for a regular file), so a crash tears at most the last line; when an existing file does
not end in a newline (its last record was torn), a newline is written first, so the next record
starts on its own line and no finished record is lost. ``/dev/null`` and a pipe with a reader work; a
FIFO without a reader, a directory, or a failed write (``/dev/full``, a full disk) is one PrmgError
naming the path.

Reading (``read_results``): the file must be a regular file (or not exist yet). Every non-empty line
must be a result record of ``results.SCHEMA`` (``CaseResult.to_dict()``); a torn line (the start of
a record, cut by a crash) is dropped, anything else (binary data, text, another JSON, another schema)
is one PrmgError naming the line. Of the last record per case name, only those worth trusting are
returned: not ``error`` or ``not_run`` (a timeout, a crash or a case that never ran is run again),
and, when the current cases are given, only for a case of the run whose ``cases.fingerprint`` equals
the record's (a case that changed since is run again). ``--resume`` also keeps only the records judged
under the run's ``suite.settings_key`` (another toolkit, emulator faults, ``--standard``, checks: run
again).
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from . import files
from .errors import PrmgError
from .fields import show
from .results import SCHEMA, STATUSES, CaseResult

MAX_RECORD_BYTES = 16 * files.MiB     # a line longer than this is not a record
UNTRUSTED = ("error", "not_run")      # statuses that are run again on resume
_RECORD_START = '{"schema": "prmg.result'     # how every record line begins, whatever its schema version
_APPEND_FLAGS = (os.O_APPEND | os.O_CREAT | getattr(os, "O_NONBLOCK", 0)
                 | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0))


class ResultsFile:
    """Results appended as JSON lines as they finish; ``--resume`` reads them back (``read_results``).

    Opened (for appending) when made, so that a path that cannot be written is a user error before
    anything runs.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._fd: int | None = None
        try:
            info = os.stat(self.path)
        except FileNotFoundError:
            info = None
        except (OSError, ValueError) as error:
            raise self._error("cannot open the results file", error) from None
        if info is not None and stat.S_ISDIR(info.st_mode):
            raise PrmgError("the results file is a directory", file=str(path))
        try:
            if info is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            regular = info is None or stat.S_ISREG(info.st_mode)    # read too: its last byte is checked
            self._fd = os.open(self.path, _APPEND_FLAGS | (os.O_RDWR if regular else os.O_WRONLY), 0o666)
            files.set_blocking(self._fd)
            mode = os.fstat(self._fd).st_mode
            self._regular = stat.S_ISREG(mode)
            if self._regular and not _ends_in_newline(self._fd):
                files.write_all(self._fd, b"\n")      # a torn last line stays alone on its line
        except OSError as error:
            self.close()
            if error.errno == errno.ENXIO:
                raise PrmgError("cannot write the results file: it is a FIFO with no reader",
                                file=str(path)) from None
            raise self._error("cannot write the results file", error) from None

    def _error(self, what: str, error: Exception) -> PrmgError:
        """A PrmgError naming the path: ``what: reason``."""
        reason = files.os_reason(error) if isinstance(error, OSError) else "not a valid path"
        return PrmgError(f"{what}: {reason}", file=str(self.path))

    def append(self, result: CaseResult) -> None:
        """Write ``result`` as one JSON line (one write) and sync it to disk; PrmgError naming the path
        when it cannot be written (a full disk, ``/dev/full``, a closed pipe)."""
        if self._fd is None:
            raise PrmgError("cannot write the results file: it is closed", file=str(self.path))
        line = (json.dumps(result.to_dict(), default=str) + "\n").encode("ascii")
        try:
            files.write_all(self._fd, line)
            if self._regular:
                os.fsync(self._fd)
        except OSError as error:
            raise self._error(f"cannot write the result of case '{result.name}' to the results file",
                              error) from None

    def close(self) -> None:
        """Close the file (again: nothing)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                os.close(fd)
            except OSError:
                pass

    def __enter__(self) -> "ResultsFile":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def _ends_in_newline(fd: int) -> bool:
    """True when the regular file ``fd`` is empty or its last byte is a newline."""
    size = os.fstat(fd).st_size
    return size == 0 or os.pread(fd, 1, size - 1) == b"\n"


def read_records(path: str | Path) -> dict[str, CaseResult]:
    """The last result recorded per case name in the results file ``path`` ({} when it does not exist);
    a torn line is dropped, any other line that is not a record of ``SCHEMA`` is a PrmgError naming it."""
    source = str(path)
    try:
        fd = files.open_regular(path)
    except PrmgError as error:
        if not os.path.lexists(path) and error.reason == "no such file":
            return {}
        raise PrmgError(f"cannot read the results file: {error.reason}", file=source) from None
    recorded: dict[str, CaseResult] = {}
    with os.fdopen(fd, "rb") as stream:
        number = 0
        while True:
            try:
                line = stream.readline(MAX_RECORD_BYTES + 1)
            except OSError as error:
                raise PrmgError(f"cannot read the results file: {files.os_reason(error)}", file=source) from None
            if not line:
                return recorded
            number += 1
            if len(line) > MAX_RECORD_BYTES:
                raise PrmgError(f"line {number}: longer than {files.describe_size(MAX_RECORD_BYTES)}; "
                                f"not a results file?", file=source)
            result = _record(line, number, source)
            if result is not None:
                recorded.pop(result.name, None)               # keep the order of the last records
                recorded[result.name] = result


def _record(line: bytes, number: int, source: str) -> CaseResult | None:
    """The CaseResult on one line (None for a blank or torn line); PrmgError for anything else."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        raise PrmgError(f"line {number}: not UTF-8 text; not a results file (written by prmg run --results)?",
                        file=source) from None
    text = text.strip()
    if not text:
        return None
    try:
        record = json.loads(text)
    except (ValueError, RecursionError):
        if text.startswith(_RECORD_START) or _RECORD_START.startswith(text):
            return None                                       # a record cut short by a crash
        raise PrmgError(f"line {number}: not a JSON result record; not a results file "
                        f"(written by prmg run --results)?", file=source) from None
    if not isinstance(record, dict):
        raise PrmgError(f"line {number}: expected a JSON result record, got {show(record)}", file=source)
    if record.get("schema") != SCHEMA:
        raise PrmgError(f"line {number}: a record of schema {show(record.get('schema'))}, not {SCHEMA} "
                        f"(written by another version of prmg?)", file=source)
    name, status = record.get("name"), record.get("status")
    if not isinstance(name, str) or not name or status not in STATUSES:
        raise PrmgError(f"line {number}: not a result record (its name or status is missing or unknown)",
                        file=source)
    try:
        return CaseResult.from_dict(record)
    except (TypeError, ValueError):
        raise PrmgError(f"line {number}: not a result record", file=source) from None


def read_results(path: str | Path, cases: Sequence | None = None) -> dict[str, CaseResult]:
    """The recorded results worth trusting on resume, by case name (see the module docstring).

    ``cases``: the run's cases; a record is trusted only when its case is among them and its
    ``fingerprint`` equals ``cases.fingerprint(case)``. Without ``cases`` (None) fingerprints are not
    compared. ``error`` and ``not_run`` records are never trusted; the caller compares ``judged_under``."""
    from .cases import fingerprint_or_empty

    kept = {name: result for name, result in read_records(path).items() if result.status not in UNTRUSTED}
    if cases is None:
        return kept
    by_name = {case.name: case for case in cases}
    return {name: result for name, result in kept.items()
            if name in by_name and result.fingerprint and result.fingerprint == fingerprint_or_empty(by_name[name])}
