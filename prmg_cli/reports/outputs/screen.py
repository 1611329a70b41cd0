"""How wide the text prmg prints for people may be, and how a line too long for it is made to fit.

Text reports fit the terminal's width when standard output is a terminal, or ``COLUMNS`` when that variable
holds a number, else ``WIDTH`` columns (a pipe, a file, CI), never fewer than ``MIN_WIDTH`` (``width()``). A
``label: value`` line too long for it is wrapped at spaces, its later lines indented under the value (``wrap``);
a text that must stay on one line is cut at a space with an ellipsis (``shorten``). A word longer than a line (a
long path) is never broken: it alone may pass the width.
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
    try:
        terminal = sys.stdout.isatty()
    except (AttributeError, ValueError):          # replaced or closed stdout
        terminal = False
    told = os.environ.get("COLUMNS", "").strip()
    number = decimal(told)              # ASCII digits only (COLUMNS=² is a digit to str.isdigit, not to int)
    columns = shutil.get_terminal_size((WIDTH, 24)).columns if terminal or number else WIDTH
    return max(MIN_WIDTH, columns)


def wrap(line: str, columns: int) -> list[str]:
    """``line`` as lines of at most ``columns`` characters, broken at spaces; the later lines are indented
    under the value of a ``label: value`` line (4 columns when the label is long or there is none)."""
    if len(line) <= columns:
        return [line]
    label = line.find(": ")
    indent = label + 2 if 0 < label < _MAX_LABEL_INDENT - 1 else 4
    return textwrap.wrap(line, columns, subsequent_indent=" " * indent, break_long_words=False,
                         break_on_hyphens=False) or [line]


def shorten(text: str, columns: int) -> str:
    """``text`` cut at a space (or, without one, anywhere) to at most ``columns`` characters ending with
    ``…``, when longer."""
    if len(text) <= columns:
        return text
    head = text[:columns]
    cut = head.rsplit(" ", 1)[0].rstrip(" ,;:(") if " " in head else ""
    return (cut or head[:columns - len(ELLIPSIS)]) + ELLIPSIS
