"""Writing report files and standard output so that no write can end in a traceback or lose a verdict.

``check_outputs`` is every command's one rule for what it writes: run before anything is written (and before the
toolkit is probed), it refuses an output that is a symlink, that cannot be written, or that is one of the command's
inputs or another of its outputs, so an unwritable ``-o`` is exit 2 at once, not after hours, and no output ever
destroys what the command reads (the reports themselves are written with ``files.write_text``); ``write_stdout``
turns every OSError (``/dev/full``) into one ``PrmgError``, but a pipe closed by its reader (``| head``) ends
standard output quietly.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from . import files
from .errors import PrmgError
from .files import write_all
from .results import RESULTS_SCHEMAS, record_schema
from .vocab import CASE_SUFFIXES, FILE_KEYS


# How an output is written: a file replaced whole (``files.write_text``), a file appended to (``store.Writer``), or
# a folder written into, one subfolder per case (``--save-failures``, ``prmg dump --out``).
REPLACE, APPEND, FOLDER = "replace", "append", "folder"
# What an existing file holds (``_held``): cases, which no output replaces (unless it is a case file itself); a run's
# results, which are only appended to (--results); anything else, to which no results are appended.
CASES, RESULTS, OTHER = "cases", "results", "other"
_HEAD_BYTES = 64 << 10
# The first line of a case file: a mapping of ``FILE_KEYS``, or a list whose first item is a mapping (a case).
_CASES_START = re.compile(rf"""(?:\{{\s*)?["']?(?:{'|'.join(FILE_KEYS)})["']?\s*:|-\s+(?:\{{\s*)?["']?\w+["']?\s*:""")
STANDARD_OUTPUT = "-"          # as an output's file (-o -, --report json:-): standard output, as Unix tools read it
STANDARD_OUTPUT_FILE = "/dev/stdout"    # its name in a file system, which CI scripts give for it too


def output_file(given: str | None) -> str | None:
    """The file an output option names, None for standard output: not given, ``STANDARD_OUTPUT`` (a file named ``-``
    was written in the current folder) or ``STANDARD_OUTPUT_FILE`` (``--report json:/dev/stdout | jq``: a symlink to a
    pipe, refused as every symlink is; into a file, ``> out.json``, it would have been opened anew and truncated).
    ``files.STANDARD_ERROR_FILE`` is kept: ``files.write_bytes`` writes it to standard error's descriptor."""
    return None if given in (STANDARD_OUTPUT, STANDARD_OUTPUT_FILE) else given


@dataclass(frozen=True)
class Output:
    """A file or folder a command writes: its ``path`` as given, ``what`` it is in messages (``report``, ``results
    file``, ``case file``...), ``how`` it is written (``REPLACE``, ``APPEND``, ``FOLDER``) and, for a folder, the
    subfolders it may write (``names``: the cases'); ``cases`` when it is a case file itself (gen-case, import-ttk);
    ``read`` when the command reads it first and says what is wrong with it (the results file --resume reads)."""

    path: str
    what: str = "report"
    how: str = REPLACE
    names: tuple = ()
    cases: bool = False
    read: bool = False


def check_outputs(outputs: Sequence[Output], inputs: Mapping[str, str],
                  case_folder: Callable[[str], str | None] | None = None) -> None:
    """The one rule of every command for what it writes, applied before it writes anything (and before the
    toolkit is probed): PrmgError naming the output (``cannot write the WHAT: why``) unless

    - it is none of ``inputs`` (path -> what it is: ``a case file``, ``the dy input of case 'c'``, ``a results file
      to merge``), which writing it would destroy, and no other output: files compared as what they resolve to
      (symlinks, ``./``, hard links: ``_identity``), devices such as ``/dev/null`` named any number of times; and
      none of them lies in a subfolder that a ``FOLDER`` output writes (``_subfolder``); nor a file that
      ``case_folder`` (``loader.read_as_case``) says the command's case folder would read as a case file next time;
    - it is no existing file (not empty) named as a case file is (``CASE_SUFFIXES``) or starting as one does,
      unless it is a case file itself (``Output.cases``): prmg writes no report or results in YAML, so such a file
      is taken for a case file and never replaced or appended to (``prmg report r.jsonl -o smoke.yaml`` replaced a
      suite nothing read; ``-o my_cases.txt`` still did); nor one holding a run's results, unless appended to
      (``--results``): ``prmg report a.jsonl -o b.jsonl`` replaced another run's results (``_held``); nor results
      appended to a file holding anything else (``--results report.json`` made it neither);
    - it is not a symlink: the file a symlink names is never replaced or appended to through it (unless it is a
      character device: ``/dev/stdout`` on a terminal);
    - it can be written as what it is (``_check_writable``): a file (not a path ending in ``/``, a folder, a pipe
      or a socket; a pipe only when appended to) or a folder; one we may write (opened and closed again, changing
      nothing: ``_try_opening``), or a new one in a folder that exists or can be made."""
    for folder in (output for output in outputs if output.how == FOLDER):
        others = [(other.path, f"the {other.what} {other.path}") for other in outputs if other is not folder]
        for path, role in [*inputs.items(), *others]:
            name = _subfolder(path, folder)
            if name is not None:
                raise PrmgError(f"cannot write the {folder.what}: {os.path.join(folder.path, name)} would hold "
                                f"{role}", file=folder.path)
    seen: dict[tuple, str] = {}
    for path, role in inputs.items():
        seen.setdefault(_identity(path), role)
    for output in outputs:
        key = _identity(output.path)                # a folder too: --save-failures naming the report or results file
        if key is None:
            continue
        if key in seen:
            raise PrmgError(f"cannot write the {output.what}: it is {seen[key]}", file=output.path)
        seen[key] = f"another {output.what}" if output.how == REPLACE else f"the {output.what}"
    for output in outputs:
        folder = case_folder(output.path) if case_folder and output.how != FOLDER else None
        if folder is not None:
            raise PrmgError(f"cannot write the {output.what}: it lies in the case folder {folder}, so the next "
                            f"command given {folder} would read it as a case file; write it outside {folder}",
                            file=output.path)
    for output in outputs:
        held = None if output.how == FOLDER else _held(output.path)
        if held == CASES and not output.cases:
            why = f"is named as a case file is ({', '.join(CASE_SUFFIXES)})" \
                if output.path.endswith(CASE_SUFFIXES) else "starts as a case file does"
            raise PrmgError(f"cannot write the {output.what}: the file exists and {why}: prmg writes no "
                            f"{output.what} in YAML, so it is not replaced; name the {output.what} for its format, or "
                            f"remove the file first", file=output.path)
        if held == RESULTS and output.how != APPEND:
            raise PrmgError(f"cannot write the {output.what}: the file exists and holds a run's results (its first "
                            f"line is a prmg record), so it is not replaced; name another file, or remove it first",
                            file=output.path)
        if held == OTHER and output.how == APPEND and not output.read:
            raise PrmgError(f"cannot write the {output.what}: the file exists and holds no run's results (its first "
                            f"line is no prmg record): results are appended only to a results file; name a new "
                            f"file, or remove it first", file=output.path)
        _check_writable(output)


def _check_writable(output: Output) -> None:
    """PrmgError naming ``output`` unless it can be written as ``check_outputs`` says."""
    path, folder = output.path, output.how == FOLDER
    if path == files.STANDARD_ERROR_FILE and not folder:    # written where standard error stands (files.write_bytes)
        return

    def refuse(why: str) -> PrmgError:
        return PrmgError(f"cannot write the {output.what}: {why}", file=path)

    if os.path.islink(path) and not stat.S_ISCHR(_mode(path)):
        raise refuse("it is a symlink; not followed, not written (name the file or folder itself)")
    if not folder and path.endswith(("/", os.sep)):
        raise refuse("the path ends in '/', so it names a folder, not a file")
    try:
        info = os.stat(path)
    except FileNotFoundError:
        info = None
    except (OSError, ValueError) as error:
        raise refuse(files.os_reason(error) if isinstance(error, OSError) else "not a valid path") from None
    if info is None:
        parent = os.path.dirname(os.path.abspath(path))
        while not os.path.lexists(parent) and parent != os.path.dirname(parent):
            parent = os.path.dirname(parent)
        if not os.path.isdir(parent):
            raise refuse(f"{parent} is not a folder")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise refuse(f"cannot create files in {parent} (permission denied)")
        if not folder and parent == os.path.dirname(os.path.abspath(path)):
            _try_opening(path, output, create=True)
        else:                                   # a folder made first: the output's own, or the one a file goes in
            _try_making(os.path.join(parent, f".prmg-{os.getpid()}.probe"), output)
        return
    mode = info.st_mode
    if folder != stat.S_ISDIR(mode):
        raise refuse("is not a folder" if folder else "is a directory")
    if not folder and not (stat.S_ISREG(mode) or stat.S_ISCHR(mode)
                           or (stat.S_ISFIFO(mode) and output.how == APPEND)):
        raise refuse(f"is {files.kind_of(mode)}: give a file (or leave the option out for standard output)")
    if not os.access(path, os.W_OK | (os.X_OK if folder else 0)):
        raise refuse("permission denied")
    if output.how == REPLACE:
        _try_opening(path, output, create=False)
    elif folder:
        _try_opening(os.path.join(path, f".prmg-{os.getpid()}.probe"), output, create=True)


def _try_opening(path: str, output: Output, create: bool) -> None:
    """Open ``path`` (``output``'s file, or a file in its folder) for writing as it will be written, and close it
    again, changing nothing: an existing file without truncating it, a new one created and removed (``create``). What
    permissions cannot tell (root in ``/proc``, a read-only mount) is then a PrmgError naming ``output`` now, not
    after the run."""
    flags = os.O_WRONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) \
        | ((os.O_CREAT | os.O_EXCL) if create else 0)
    try:
        os.close(os.open(path, flags, 0o666))
    except OSError as error:
        raise PrmgError(f"cannot write the {output.what}: {files.os_reason(error)}", file=output.path) from None
    if create:
        try:
            os.unlink(path)
        except OSError:
            pass


def _try_making(folder: str, output: Output) -> None:
    """Make the folder ``folder`` in the first existing folder of ``output``'s path and remove it again, changing
    nothing: what permissions cannot tell (root in ``/proc``, a read-only mount) is a PrmgError naming ``output`` now,
    not after the run (``_try_opening``, for the folders prmg makes on the way)."""
    try:
        os.mkdir(folder)
    except OSError as error:
        raise PrmgError(f"cannot write the {output.what}: {files.os_reason(error)}", file=output.path) from None
    try:
        os.rmdir(folder)
    except OSError:
        pass


def _held(path: str) -> str | None:
    """What the existing file ``path`` holds that prmg commands read: ``CASES`` when it is named as a case file is
    (``CASE_SUFFIXES``) or its first line of YAML (after comments) starts a case file (``_CASES_START``: ``cases:``,
    ``- name: ...``), ``RESULTS`` when its first line is a record of a results file (``results.record_schema``),
    ``OTHER`` for another file that is not empty, None for no file, an empty one or a device. Reads at most
    ``_HEAD_BYTES``."""
    if not _holds_bytes(path):
        return None
    if path.endswith(CASE_SUFFIXES):
        return CASES
    try:
        with open(path, "rb") as stream:
            head = stream.read(_HEAD_BYTES).decode("utf-8", "replace")
    except OSError:                              # unreadable: nothing to tell (writing it is checked after)
        return None
    first = next((line for line in head.splitlines() if line.strip() not in ("", "---")
                  and not line.lstrip().startswith(("#", "%"))), "")     # comments, a directive, a document start
    schema = record_schema(first)
    if schema and schema.startswith(RESULTS_SCHEMAS):
        return RESULTS
    return CASES if _CASES_START.match(first) else OTHER


def _holds_bytes(path: str) -> bool:
    """Whether ``path`` is a regular file (through a symlink too) that is not empty."""
    try:
        return os.path.isfile(path) and os.path.getsize(path) > 0
    except (OSError, ValueError):
        return False


def _mode(path: str) -> int:
    """``st_mode`` of what ``path`` resolves to, 0 when it resolves to nothing (a dangling link, a loop)."""
    try:
        return os.stat(path).st_mode
    except (OSError, ValueError):
        return 0


def _identity(path: str) -> tuple | None:
    """What ``path`` is, to compare files however they are named: (device, inode) of an existing file, its
    resolved path when missing, None for a character device (``/dev/null`` may be named any number of times)."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return ("path", os.path.realpath(path))
    return None if stat.S_ISCHR(info.st_mode) else ("inode", info.st_dev, info.st_ino)


def check_distinct(inputs: Sequence[tuple[str, str]]) -> None:
    """PrmgError naming the file when two of ``inputs`` (path, what it is: ``run A's results file``), which the
    command reads as different things, are one existing file (``same_file``): ``prmg compare A A`` compared nothing
    and said "no changes". Two files with the same bytes are two files (a run repeated)."""
    for index, (path, what) in enumerate(inputs):
        for earlier, role in inputs[:index]:
            if os.path.exists(path) and same_file(path, earlier):
                named = role if earlier == path else f"{role} ({earlier})"
                raise PrmgError(f"{what} is {named}: the same file, nothing to compare; give two different files",
                                file=path)


def same_file(first: str, second: str) -> bool:
    """Whether the paths ``first`` and ``second`` name one file (``_identity``: symlinks, ``./``, hard links)."""
    return _identity(first) == _identity(second) is not None


def _subfolder(path: str, folder: Output) -> str | None:
    """The subfolder of the ``FOLDER`` output ``folder`` (one of its ``names``) that holds ``path`` once both are
    resolved, None when none does."""
    relative = os.path.relpath(os.path.realpath(path), os.path.realpath(folder.path))
    first = relative.split(os.sep, 1)[0]
    return first if first in folder.names else None


def wrote(paths: Sequence[str], summary: str = "") -> str:
    """What a command says of the files it wrote its reports to: ``wrote PATH[, PATH...][: SUMMARY]`` (``prmg run``,
    ``report``, ``compare`` and ``coverage`` say it so; run and report said nothing of an HTML page they wrote), or
    ``SUMMARY`` alone when none is a file (``-o /dev/null`` is no report kept, nor ``/dev/stderr`` into a log file)."""
    from .results import visible

    named = [visible(str(path)) for path in paths if os.path.isfile(path) and path != files.STANDARD_ERROR_FILE]
    return f"wrote {', '.join(named)}" + (f": {summary}" if summary else "") if named else summary


def write_stdout(text: str, *, document: bool = False) -> None:
    """``text`` (and a final newline) to standard output, whole; PrmgError when that fails (``/dev/full``).

    Text for people is encoded as standard output's encoding says (what it lacks as escapes: ``\\u2264`` for ``≤``
    under ``PYTHONIOENCODING=ascii``); a ``document`` (a report in a file format, YAML) always as UTF-8, which its
    format states (an HTML page's charset, JUnit's XML declaration): under a latin-1 or ASCII locale a page was
    mis-encoded and a JUnit, CSV or YAML text had ``\\u2264`` in place of ``≤``.

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
        elif document:
            write_all(fd, text.encode("utf-8", "surrogateescape"))
        else:
            write_all(fd, text.encode(sys.stdout.encoding or "utf-8", sys.stdout.errors or "strict"))
    except BrokenPipeError:
        _stdout_closed = True
        drop_stdout()
    except OSError as error:
        raise PrmgError(f"cannot write to standard output: {error.strerror or error}") from None


_stdout_closed = False                  # standard output was a pipe its reader closed


def _descriptor(stream) -> int | None:
    """The file descriptor under ``stream``, None when it has none (a test's capture)."""
    try:
        return stream.fileno()
    except (AttributeError, ValueError, OSError):
        return None


def drop_stdout(stream=None) -> None:
    """Send whatever is still written to standard output (or ``stream``: standard error, ``cli._StderrPipe``) to
    ``/dev/null``: the interpreter's last flush and any later write must not fail on the closed pipe."""
    fd = _descriptor(sys.stdout if stream is None else stream)
    if fd is None:
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, fd)
    finally:
        os.close(null)
