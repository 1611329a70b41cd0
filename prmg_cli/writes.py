"""Writing report files and standard output so that no write can end in a traceback or lose a verdict.

``check_writable`` runs before the first case, so an unwritable ``-o`` is exit 2 at once, not after
hours (the reports themselves are written with ``files.write_text``); ``write_stdout`` turns every OSError
(``/dev/full``) into one ``PrmgError``, but a pipe closed by its reader (``| head``) ends standard output
quietly.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from .errors import PrmgError
from .files import os_reason, write_all


def check_writable(path: str, what: str = "report") -> None:
    """Raise PrmgError unless ``path`` can be written as a file: an existing regular file or character
    device (``/dev/null``) we may write, or a new file in a folder that exists (or can be made) and that
    we may write in. A folder, a pipe or a socket is refused."""
    target = Path(path)
    try:
        info = target.stat()
    except FileNotFoundError:
        info = None
    except OSError as error:
        raise PrmgError(f"cannot write the {what}: {error.strerror}", file=path) from None
    if info is not None:
        if stat.S_ISDIR(info.st_mode):
            raise PrmgError(f"cannot write the {what}: is a directory", file=path)
        if not (stat.S_ISREG(info.st_mode) or stat.S_ISCHR(info.st_mode)):
            raise PrmgError(f"cannot write the {what}: not a regular file (a pipe or socket)", file=path)
        if not os.access(target, os.W_OK):
            raise PrmgError(f"cannot write the {what}: permission denied", file=path)
        _try_opening(path, what, create=False)
        return
    folder = target.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise PrmgError(f"cannot write the {what}: {folder} is not a folder", file=path)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise PrmgError(f"cannot write the {what}: cannot create files in {folder} (permission denied)", file=path)
    if folder == target.parent:
        _try_opening(path, what, create=True)


def _try_opening(path: str, what: str, create: bool) -> None:
    """Open ``path`` for writing as the report will, and close it again, changing nothing: an existing file without
    truncating it, a new one created and removed (``create``). What permissions cannot tell (root in ``/proc``, a
    read-only mount) is then a PrmgError now, not after the run."""
    flags = os.O_WRONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) \
        | ((os.O_CREAT | os.O_EXCL) if create else 0)
    try:
        os.close(os.open(path, flags, 0o666))
    except OSError as error:
        raise PrmgError(f"cannot write the {what}: {os_reason(error)}", file=path) from None
    if create:
        try:
            os.unlink(path)
        except OSError:
            pass


def check_spares(paths: "list[str]", protected: "dict[str, str]", what: str = "report") -> None:
    """Raise PrmgError when a file of ``paths`` (the reports to write) is one of ``protected`` (path ->
    what it is: "a case file", "the results file") or another of ``paths``: writing it would destroy
    what the run reads or writes. Files are compared as what they resolve to (symlinks, ``./``, hard
    links); devices such as ``/dev/null`` may be named any number of times."""
    seen: dict[tuple, str] = {}

    def identity(path: str) -> tuple:
        try:
            info = os.stat(path)
        except OSError:
            return ("path", os.path.realpath(path))
        return ("device",) if stat.S_ISCHR(info.st_mode) else ("inode", info.st_dev, info.st_ino)

    for path, role in protected.items():
        seen.setdefault(identity(path), role)
    for path in paths:
        key = identity(path)
        if key == ("device",):
            continue
        if key in seen:
            raise PrmgError(f"cannot write the {what}: it is {seen[key]}", file=path)
        seen[key] = f"another {what}"


def write_stdout(text: str) -> None:
    """``text`` (and a final newline) to standard output, whole; PrmgError when that fails (``/dev/full``).

    The bytes go to the file descriptor with ``files.write_all`` (after whatever ``sys.stdout`` holds), which
    finishes a write a signal cut short: Python's buffered writer loses the rest of one. A closed pipe
    (``prmg run ... | head -1``) is no error: standard output is dropped from then on, quietly, as other Unix
    tools do, and the command goes on (a run still writes its results file and its other reports)."""
    global _stdout_closed
    if _stdout_closed:
        return
    text = text if text.endswith("\n") else text + "\n"
    try:
        sys.stdout.flush()
        fd = _descriptor(sys.stdout)
        if fd is None:
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            write_all(fd, text.encode(sys.stdout.encoding or "utf-8", sys.stdout.errors or "strict"))
    except BrokenPipeError:
        _stdout_closed = True
        _drop_stdout()
    except OSError as error:
        raise PrmgError(f"cannot write to standard output: {error.strerror or error}") from None


_stdout_closed = False                  # standard output was a pipe its reader closed


def _descriptor(stream) -> int | None:
    """The file descriptor under ``stream``, None when it has none (a test's capture)."""
    try:
        return stream.fileno()
    except (AttributeError, ValueError, OSError):
        return None


def _drop_stdout() -> None:
    """Send whatever is still written to standard output to ``/dev/null``: the interpreter's last flush and
    any later write must not fail on the closed pipe."""
    fd = _descriptor(sys.stdout)
    if fd is None:
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, fd)
    finally:
        os.close(null)
