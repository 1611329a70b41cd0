"""Writing report files and standard output so that no write can end in a traceback or lose a verdict.

``check_writable`` runs before the first case, so an unwritable ``-o`` is exit 2 at once, not after
hours (the reports themselves are written with ``files.write_text``); ``write_stdout`` turns every OSError
(a closed pipe, ``/dev/full``) into one ``PrmgError``.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from .errors import PrmgError


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
        return
    folder = target.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise PrmgError(f"cannot write the {what}: {folder} is not a folder", file=path)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise PrmgError(f"cannot write the {what}: cannot create files in {folder} (permission denied)", file=path)


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
    """``text`` (and a final newline) to standard output, flushed; PrmgError when that fails (a closed
    pipe, ``/dev/full``)."""
    try:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()
    except OSError as error:
        raise PrmgError(f"cannot write to standard output: {error.strerror or error}") from None
