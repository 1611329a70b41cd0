"""Files people hand to prmg: read only regular files, never more than a limit, never echo their bytes.

Every reader here refuses, as one ``PrmgError`` naming the path, what would otherwise hang, exhaust
memory or crash: a FIFO or a device (``/dev/urandom`` never ends, ``/dev/zero`` fills memory, a FIFO
blocks until someone writes), a directory, a symlink loop, a file over the caller's size limit. Files
are opened with ``O_NONBLOCK`` and checked again after opening, so a file swapped for a FIFO between
the check and the open cannot block either. Messages say what is wrong with the file, not what is in it.

Writers replace a regular file atomically (a temporary file in the same folder, then a rename), so a
full disk never leaves half a file where a good one was; a device or a pipe is written in place
without blocking on a pipe that has no reader.

And prmg's own files: the C sources it ships (``emulator_sources``, ``geir_sources``: package data, or ``runners/``
in a checkout) and the cache it builds them into (``emulator_cache_base``).
"""

from __future__ import annotations

import errno
import importlib.resources
import os
import stat
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from .errors import PrmgError
from .results import plural

MiB = 1 << 20
GiB = 1 << 30
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)


def os_reason(error: OSError) -> str:
    """A short reason for an ``OSError`` in plain words (no file contents, no Python names)."""
    reasons = {errno.ENOENT: "no such file", errno.ENOTDIR: "a part of the path is not a folder",
               errno.ELOOP: "too many levels of symbolic links (a symlink loop?)",
               errno.EACCES: "permission denied", errno.EPERM: "permission denied",
               errno.EISDIR: "is a directory", errno.ENAMETOOLONG: "the path is too long",
               errno.ENOSPC: "no space left on device", errno.EDQUOT: "disk quota exceeded",
               errno.EROFS: "read-only file system", errno.ENXIO: "a pipe or device with no reader",
               errno.EPIPE: "the reader closed the pipe", errno.EFBIG: "the file is too large",
               errno.EIO: "input/output error"}
    return reasons.get(error.errno) or (error.strerror or type(error).__name__).lower()


# Byte order marks of the encodings an editor may save a text file in instead of UTF-8 (longest first).
_BYTE_ORDER_MARKS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"), (b"\xff\xfe", "UTF-16"),
                     (b"\xfe\xff", "UTF-16"))


def not_utf8(data: bytes, error: UnicodeDecodeError) -> str:
    """Why ``data`` failed to decode as UTF-8 (``error``), in words: the encoding its byte order mark names (a
    "Unicode" file a Windows editor or a spreadsheet saved), else the first bad byte and its offset."""
    for mark, name in _BYTE_ORDER_MARKS:
        if data.startswith(mark):
            return f"not UTF-8 text (it starts with {name}'s byte order mark {mark.hex(' ').upper()}): save it as UTF-8"
    return f"not UTF-8 text (byte 0x{data[error.start]:02x} at offset {error.start}): save it as UTF-8"


def kind_of(mode: int) -> str:
    """What a file of ``st_mode`` ``mode`` is, in words (``a directory``, ``a FIFO (named pipe)`` ...)."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISREG(mode):
        return "a regular file"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def stat_path(path: str | os.PathLike) -> os.stat_result:
    """``os.stat(path)`` (symlinks followed); PrmgError naming ``path`` when it cannot be done."""
    try:
        return os.stat(path)
    except ValueError:                                   # an embedded NUL character
        raise PrmgError("not a valid path (it holds a NUL character)", file=str(path)) from None
    except OSError as error:
        raise PrmgError(os_reason(error), file=str(path)) from None


def stat_problem(path: str | os.PathLike) -> str:
    """Why ``os.stat(path)`` fails, in words (``no such file``, a symlink loop, a path too long); "" when it works."""
    try:
        stat_path(path)
    except PrmgError as error:
        return error.reason
    return ""


def _not_of_kind(path: str | os.PathLike, is_kind, noun: str) -> str:
    """Why ``path`` is not ``noun``, in words: what ``stat`` says (``stat_problem``) or what it is (``is a
    directory, not a regular file``); "" when ``is_kind`` of its mode holds."""
    try:
        info = stat_path(path)
    except PrmgError as error:
        return error.reason
    return "" if is_kind(info.st_mode) else f"is {kind_of(info.st_mode)}, not {noun}"


def not_a_folder(path: str | os.PathLike) -> str:
    """Why ``path`` is not a folder, in words (``_not_of_kind``: ``is a regular file, not a folder``); "" when it is
    one."""
    return _not_of_kind(path, stat.S_ISDIR, "a folder")


def not_a_file(path: str | os.PathLike) -> str:
    """Why ``path`` is not a regular file, in words (``_not_of_kind``: ``is a directory, not a regular file``); ""
    when it is one."""
    return _not_of_kind(path, stat.S_ISREG, "a regular file")


def describe_size(size: int) -> str:
    """``size`` bytes in words: ``12 bytes``, ``3.5 MiB``, ``1.2 GiB``."""
    if size < MiB:
        return plural(size, "byte")
    return f"{size / MiB:.1f} MiB" if size < GiB else f"{size / GiB:.1f} GiB"


def open_regular(path: str | os.PathLike, limit: int | None = None) -> int:
    """A read-only file descriptor of the regular file ``path`` (at most ``limit`` bytes when given).

    PrmgError naming ``path`` for a missing file, a directory ("is a directory"), a FIFO, device or
    socket, a symlink loop, a permission problem or a file over ``limit``. The caller closes the fd.
    """
    info = stat_path(path)
    _check_regular(path, info, limit)
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError as error:
        raise PrmgError(f"cannot read: {os_reason(error)}", file=str(path)) from None
    try:
        _check_regular(path, os.fstat(fd), limit)        # the file may have been swapped meanwhile
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check_regular(path, info: os.stat_result, limit: int | None) -> None:
    """PrmgError unless ``info`` is a regular file of at most ``limit`` bytes."""
    if stat.S_ISDIR(info.st_mode):
        raise PrmgError("is a directory, not a file", file=str(path))
    if not stat.S_ISREG(info.st_mode):
        raise PrmgError(f"is {kind_of(info.st_mode)}, not a regular file", file=str(path))
    if limit is not None and info.st_size > limit:
        raise PrmgError(f"is {describe_size(info.st_size)}, over the limit of {describe_size(limit)}",
                        file=str(path))


def read_at_most(fd: int, count: int) -> bytes:
    """Up to ``count`` bytes read from ``fd`` (fewer only at the end of the file)."""
    chunks, wanted = [], count
    while wanted > 0:
        chunk = os.read(fd, min(wanted, 8 * MiB))
        if not chunk:
            break
        chunks.append(chunk)
        wanted -= len(chunk)
    return b"".join(chunks)


def read_regular(path: str | os.PathLike, limit: int) -> bytes:
    """The bytes of the regular file ``path``, refused (PrmgError naming the path) when it is not a
    regular file or holds more than ``limit`` bytes; at most ``limit + 1`` bytes are ever read."""
    fd = open_regular(path, limit)
    try:
        data = read_at_most(fd, limit + 1)
    except OSError as error:
        raise PrmgError(f"cannot read: {os_reason(error)}", file=str(path)) from None
    finally:
        os.close(fd)
    if len(data) > limit:                                # it grew after the check
        raise PrmgError(f"is over the limit of {describe_size(limit)}", file=str(path))
    return data


def inside(path: str | os.PathLike, folder: str | os.PathLike) -> bool:
    """True when ``path`` is ``folder`` or below it once both have their symlinks resolved."""
    real, root = os.path.realpath(path), os.path.realpath(folder)
    try:
        return os.path.commonpath([real, root]) == root
    except ValueError:                                   # different drives
        return False


def make_folder_within(folder: Path, root: Path) -> None:
    """Make ``folder`` (and its parents); PrmgError when it is not a real folder inside ``root``: a symlink
    that already sits there is never followed."""
    if folder.is_symlink():
        raise PrmgError("is a symlink; not followed, not written", file=str(folder))
    folder.mkdir(parents=True, exist_ok=True)
    if folder.is_symlink() or not inside(folder, root):
        raise PrmgError(f"{folder} is not inside the output folder {root} (a symlink?); not written",
                        file=str(folder))


def create_within(path: Path, root: Path):
    """``path`` opened for writing bytes (created or truncated), refusing a symlink there (``O_NOFOLLOW``)
    and any path that does not resolve inside ``root``."""
    if not inside(path.parent, root):
        raise PrmgError(f"{path} is not inside the output folder {root}; not written", file=str(path))
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise PrmgError("is a symlink; not followed, not written", file=str(path)) from None
        raise
    return os.fdopen(fd, "wb")


def write_text(path: str | os.PathLike, text: str | Iterable[str]) -> None:
    """Write ``text`` (UTF-8; a text, or its pieces, written one at a time) to ``path``; PrmgError naming the path
    when it cannot be written.

    A regular (or missing) file is replaced atomically, keeping its permission bits: the old file stays
    whole if the disk fills up. A device or FIFO is written in place (a FIFO without a reader is an
    error, not a hang).
    """
    write_bytes(path, (piece.encode("utf-8") for piece in ([text] if isinstance(text, str) else text)))


STANDARD_ERROR_FILE = "/dev/stderr"     # an output's file written to standard error as it is, whatever it is


def is_stream(path: str | os.PathLike) -> bool:
    """Whether ``write_bytes`` writes ``path`` in place as a stream: ``STANDARD_ERROR_FILE``, or something that exists
    and is no regular file (a device: ``/dev/null``, a terminal)."""
    return os.fspath(path) == STANDARD_ERROR_FILE or (os.path.exists(path) and not os.path.isfile(path))


def write_bytes(path: str | os.PathLike, data: bytes | Iterable[bytes]) -> None:
    """Write ``data`` (bytes, or their pieces) to ``path`` as ``write_text`` writes text; ``STANDARD_ERROR_FILE`` to
    standard error's descriptor where it stands (a log file is not replaced, a pipe is written)."""
    data = [data] if isinstance(data, bytes) else data
    if os.fspath(path) == STANDARD_ERROR_FILE:
        try:
            sys.stderr.flush()
            for piece in data:
                write_all(2, piece)
        except OSError as error:
            raise PrmgError(f"cannot write: {os_reason(error)}", file=STANDARD_ERROR_FILE) from None
        return
    target = Path(os.path.realpath(path))
    try:
        info = os.stat(target)
    except FileNotFoundError:
        info = None
    except (OSError, ValueError) as error:
        raise PrmgError(f"cannot write: {os_reason(error) if isinstance(error, OSError) else error}",
                        file=str(path)) from None
    try:
        if info is not None and stat.S_ISDIR(info.st_mode):
            raise PrmgError("is a directory, not a file", file=str(path))
        if info is not None and not stat.S_ISREG(info.st_mode):
            _write_in_place(target, data)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            _replace(target, data, stat.S_IMODE(info.st_mode) if info else None)
    except OSError as error:
        raise PrmgError(f"cannot write: {os_reason(error)}", file=str(path)) from None


def _write_in_place(target: Path, data: Iterable[bytes]) -> None:
    """``data`` written to the device or FIFO ``target`` (never blocking on a FIFO without a reader)."""
    fd = os.open(target, os.O_WRONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        set_blocking(fd)
        for piece in data:
            write_all(fd, piece)
    finally:
        os.close(fd)


def _replace(target: Path, data: Iterable[bytes], mode: int | None) -> None:
    """``data`` written to a temporary file next to ``target``, synced, then renamed over it."""
    fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        try:
            os.fchmod(fd, mode if mode is not None else 0o666 & ~_umask())
            for piece in data:
                write_all(fd, piece)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def _umask() -> int:
    """The process's umask (read by setting and restoring it)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def set_blocking(fd: int) -> None:
    """Clear ``O_NONBLOCK`` on ``fd`` (after a non-blocking open), so writes wait for a slow reader."""
    os.set_blocking(fd, True)


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd`` (retrying short writes, as a pipe may make)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


# ---------------------------------------------------------------------------------------------------------
# prmg's own files: the shipped C sources and the cache they are built into

def _shipped(package: str, checkout: str, marker: str, what: str) -> Path:
    """The folder of shipped sources: ``runners/<checkout>`` beside the ``prmg_cli`` imported, when it holds
    ``marker`` (a checkout, or a copy of one: ``tests/mutate.py``'s, where an editable install's package data named the
    installed checkout's sources, so that a mutant of the emulator was never built), else package data ``package``;
    PrmgError when ``marker`` is not in it."""
    folder = Path(__file__).resolve().parent.parent / "runners" / checkout
    if not (folder / marker).is_file():
        try:
            folder = Path(str(importlib.resources.files(package)))
        except ModuleNotFoundError:
            pass
    if not (folder / marker).is_file():
        raise PrmgError(f"{what} are missing (no {marker} in {folder}); reinstall prmg")
    return folder


def emulator_sources() -> Path:
    """The folder holding the emulator's C sources (package data, or ``runners/emulator`` in a checkout)."""
    return _shipped("prmg_cli.emulator_src", "emulator", "Makefile", "the emulator's sources")


def geir_sources() -> Path:
    """The folder holding the graph-mode shim and its C ABI header (package data, or ``runners/geir``)."""
    return _shipped("prmg_cli.geir_src", "geir", "prmg_geir.h", "the graph-mode shim's sources")


def emulator_cache_base(env: Mapping[str, str] | None = None) -> Path:
    """Where built emulators live: $PRMG_EMULATOR_HOME, else $XDG_CACHE_HOME/prmg, else ~/.cache/prmg (a relative
    XDG_CACHE_HOME is ignored, as the XDG spec says: it built a cache in every folder prmg ran in). A relative
    PRMG_EMULATOR_HOME is taken from the current folder and made absolute: the build's links pointed into the
    links' own folder (a name make cannot take, such as ``emu,1``, failed to build), and a run record named a
    folder that no later report could find."""
    env = os.environ if env is None else env
    if env.get("PRMG_EMULATOR_HOME"):
        home = Path(env["PRMG_EMULATOR_HOME"]).expanduser()
        try:
            return Path(os.path.abspath(home))
        except OSError:                         # the current folder was removed: the name as given
            return home
    given = env.get("XDG_CACHE_HOME", "")
    cache = given if os.path.isabs(given) else str(Path.home() / ".cache")
    return Path(cache).expanduser() / "prmg"
