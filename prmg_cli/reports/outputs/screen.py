"""How wide the text prmg prints for people may be, and how a line too long for it is made to fit.

Text reports fit the terminal's width when standard output is a terminal, or ``COLUMNS`` when that variable
holds a number, else ``WIDTH`` columns (a pipe, a file, CI), never fewer than ``MIN_WIDTH`` (``width()``). A
``label: value`` line too long for it is wrapped at spaces, its later lines indented under the value (``wrap``);
a text that must stay on one line is cut at a space with an ellipsis (``shorten``). A word longer than a line (a
long path) is never broken: it alone may pass the width, beside its label (``runtime: /...``) or on a line of its
own, indented.

Lines a log is searched by (a failure's line below the table, its diagnosis lines, ``prmg:`` notes and warnings on
standard error) stay whole in a pipe or a file, one line each for grep, and are wrapped only on a terminal
(``folded``, ``say``, ``on_stderr``: a ``prmg: error:`` line too), where a line past the width would wrap mid-word.
"""

from __future__ import annotations

import os
import shutil
import sys
import textwrap

from ...vocab import decimal

WIDTH = 100
MIN_WIDTH = 80                      # the narrowest text reports fit; a narrower terminal wraps their lines
ELLIPSIS = "…"
_MAX_LABEL_INDENT = 24      # a longer label's value continues 4 columns in


def width() -> int:
    """The columns text reports fit, at least ``MIN_WIDTH``: ``COLUMNS`` when it holds a number (as
    ``shutil.get_terminal_size`` reads it), else the terminal's columns when standard output is a terminal, else
    ``WIDTH``."""
    terminal = _terminal(sys.stdout)
    told = os.environ.get("COLUMNS", "").strip()
    number = decimal(told)              # ASCII digits only (COLUMNS=² is a digit to str.isdigit, not to int)
    columns = shutil.get_terminal_size((WIDTH, 24)).columns if terminal or number else WIDTH
    return max(MIN_WIDTH, columns)


def _terminal(stream) -> bool:
    """Whether ``stream`` is a terminal (False for a replaced or closed stream)."""
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def wrap(line: str, columns: int) -> list[str]:
    """``line`` as lines of at most ``columns`` characters, broken at spaces; the later lines are indented
    under the value of a ``label: value`` line (4 columns past the line's own indent when the label is long, there
    is none, or a word would not fit under it)."""
    if len(line) <= columns or " " not in line.strip():     # one word (a path on a line of its own) stays as it is
        return [line]
    label = line.find(": ")
    own = len(line) - len(line.lstrip(" "))
    indent = label + 2 if own < label < _MAX_LABEL_INDENT - 1 else own + 4
    if indent + max(map(len, line.split())) > columns:     # a word (a path) that would pass the width under the label
        indent = own + 4
    lines = textwrap.wrap(line, columns, subsequent_indent=" " * indent,
                          break_long_words=False, break_on_hyphens=False) or [line]
    return [*_keep_labels(lines, columns)]


def _keep_labels(lines: list[str], columns: int):
    """``lines`` (``textwrap``'s) with a line ending in a label (``runtime:``) joined to the next when that one
    starts with a word too long for any line (a long path): that word passes the width wherever it stands, and
    moved below its label it left the label alone on a line."""
    lines = list(lines)
    while lines:
        line = lines.pop(0)
        if lines and line.endswith(":") and len(lines[0]) > columns and " " not in lines[0].strip():
            line = f"{line} {lines.pop(0).strip()}"
        yield line


def folded(lines: list[str], columns: int | None = None) -> list[str]:
    """``lines`` wrapped to ``columns`` (default ``width()``) when standard output is a terminal, else as they are
    (module docstring: whole in a pipe or a file)."""
    if not _terminal(sys.stdout):
        return lines
    columns = columns or width()
    return [part for line in lines for part in wrap(line, columns)]


def on_stderr(line: str) -> str:
    """``line`` as standard error shows it: wrapped under its text to the terminal's width when standard error is a
    terminal (``COLUMNS`` first, as ``width``), else whole on one line (for grep)."""
    if not _terminal(sys.stderr):
        return line
    told = decimal(os.environ.get("COLUMNS", "").strip())
    try:
        columns = told or os.get_terminal_size(sys.stderr.fileno()).columns
    except (OSError, ValueError, AttributeError):
        columns = WIDTH
    return "\n".join(wrap(line, max(MIN_WIDTH, columns)))


def say(text: str) -> None:
    """``prmg: TEXT`` on standard error (``on_stderr``: wrapped under ``TEXT`` on a terminal, else one line); a
    standard error that cannot be written is ignored (the message is not worth a crash)."""
    try:
        sys.stderr.write(on_stderr(f"prmg: {text}") + "\n")
    except OSError:
        pass


def cut_note(what: str) -> str:
    """The line under a table some of whose ``what`` (a column's texts) ``shorten`` cut to the width."""
    return f"{what} cut to the width: --wide shows them whole"


def shorten(text: str, columns: int) -> str:
    """``text`` cut at a space (or, without one, anywhere) to at most ``columns`` characters ending with
    ``…``, when longer."""
    if len(text) <= columns:
        return text
    head = text[:columns]
    cut = head.rsplit(" ", 1)[0].rstrip(" ,;:(") if " " in head else ""
    return (cut or head[:columns - len(ELLIPSIS)]) + ELLIPSIS
