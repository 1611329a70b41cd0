"""The package's map, read from its source (``ast``, no import of the modules for the graph): the names its
docstrings and comments point to exist, the import graph has no cycle, and the model floor needs no numpy."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "prmg_cli"


def module_name(path: Path) -> str:
    """``prmg_cli.outputs.html`` for ``prmg_cli/outputs/html.py``, ``prmg_cli.outputs`` for its ``__init__.py``."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


# --- names the comments point to ---------------------------------------------------------------------------

# ``module.name`` (a double-backticked dotted name starting with a module of the package) and ``file.py``: the
# docstrings' and comments' way of pointing to code (a message or value never holds double backticks).
_DOTTED = re.compile(r"``([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?:\(\))?``")
_FILE_SUFFIXES = ("py", "c", "md", "yaml", "h")
# Words that are modules and also a case's keys or the usual name of a variable: ``case.dy_strides`` is a field of
# a case, ``inputs.dy.values`` a key of a case file.
_NOT_MODULES = ("case", "inputs")


def _resolves(dotted: str) -> bool:
    """Whether ``dotted`` (``store.settings_key``, ``results.StatusInfo.evidence``) names something that exists:
    the longest module prefix imported, the rest looked up as attributes or dataclass fields; True for a name that
    does not start with a module of the package (``Case.expect``: not checked)."""
    parts = dotted.removeprefix("prmg_cli.").split(".")
    if parts[0] in _NOT_MODULES:
        return True
    for count in range(len(parts), 0, -1):
        if "prmg_cli." + ".".join(parts[:count]) in MODULES:
            break
    else:
        return True
    found = importlib.import_module("prmg_cli." + ".".join(parts[:count]))
    for attribute in parts[count:]:
        if not hasattr(found, attribute) and attribute not in getattr(found, "__dataclass_fields__", {}):
            return False
        found = getattr(found, attribute, None)
    return True


def test_every_module_name_a_docstring_or_comment_points_to_exists():
    """``module.name`` and ``file.py`` in docstrings and comments name what is there (a rename leaves no pointer
    to a name that no longer exists). One line at a time: a pointer is never split over two lines."""
    files = {path.name for top in ("prmg_cli", "runners", "docs", "cases", "tests") for path in (ROOT / top).rglob("*")}
    files |= {path.name for path in ROOT.iterdir()}
    wrong = []
    for path in MODULES.values():
        for line, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for dotted in _DOTTED.findall(text):
                if dotted.rsplit(".", 1)[-1] in _FILE_SUFFIXES:
                    found = Path(dotted).name in files
                else:
                    found = _resolves(dotted)
                if not found:
                    wrong.append(f"{path.relative_to(ROOT)}:{line}: ``{dotted}``")
    assert not wrong, "\n".join(wrong)
