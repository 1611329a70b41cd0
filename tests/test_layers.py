"""The package's map, read from its source (``ast``, no import of the modules for the graph): the names its
docstrings and comments point to exist, the import graph has no cycle, the model floor needs no numpy, and the stages
(docs/developing.md) stack up: no module imports one of a higher stage, and the top level stays small."""

from __future__ import annotations

import ast
import importlib
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "prmg_cli"


def module_name(path: Path) -> str:
    """``prmg_cli.reports.outputs.html`` for ``prmg_cli/reports/outputs/html.py``, ``prmg_cli.reports.outputs`` for
    its ``__init__.py``."""
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


def named_modules(dotted: str) -> list[str]:
    """The modules of the package a short dotted name can mean: ``judge`` -> ``prmg_cli.judging.judge``,
    ``outputs.html`` -> ``prmg_cli.reports.outputs.html`` (every module whose name ends with it; a pointer names a
    module by its last parts, as its neighbours do)."""
    dotted = dotted.removeprefix("prmg_cli.")
    return [name for name in MODULES if name == f"prmg_cli.{dotted}" or name.endswith(f".{dotted}")]


def _resolves(dotted: str) -> bool:
    """Whether ``dotted`` (``store.settings_key``, ``results.StatusInfo.evidence``) names something that exists:
    the longest module prefix imported (in any package: ``named_modules``), the rest looked up as attributes or
    dataclass fields, in any of the modules that prefix can mean; True for a name that does not start with a module
    of the package (``Case.expect``: not checked)."""
    parts = dotted.removeprefix("prmg_cli.").split(".")
    if parts[0] in _NOT_MODULES or parts[0] in sys.stdlib_module_names:       # ``html.escape``: the standard library's
        return True
    for count in range(len(parts), 0, -1):
        if named_modules(".".join(parts[:count])):
            break
    else:
        return True
    for module in named_modules(".".join(parts[:count])):
        found = importlib.import_module(module)
        for attribute in parts[count:]:
            if not hasattr(found, attribute) and attribute not in getattr(found, "__dataclass_fields__", {}):
                break
            found = getattr(found, attribute, None)
        else:
            return True
    return False


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


def test_every_path_of_the_package_the_code_and_the_tests_name_exists():
    """A path into the package (``prmg_cli/judging/checks/``, ``prmg_cli/native/native.c``) written anywhere in the
    package's or the tests' text names what is there: a module moved or renamed leaves none behind (a test's
    docstring still named the checks' module file after ``checks`` became a package)."""
    paths = re.compile(r"\bprmg_cli/[\w/]*(?:\.py|\.c|/)")
    wrong = [f"{path.relative_to(ROOT)}:{line}: {named}"
             for path in [*MODULES.values(), *sorted((ROOT / "tests").glob("*.py"))]
             for line, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             for named in paths.findall(text) if not (ROOT / named).exists()]
    assert not wrong, "\n".join(wrong)


# --- the import graph -------------------------------------------------------------------------------------

# The model floor: the values every other floor speaks in (``Case``, statuses and records, vocabulary, errors,
# status codes, the error balance rule of a run). It imports nothing above it, and no numpy: a report, a merge or a
# case listing can load it alone.
MODEL_FLOOR = ("prmg_cli.case", "prmg_cli.results", "prmg_cli.vocab", "prmg_cli.errors", "prmg_cli.status",
               "prmg_cli.error_balance")


def _imports(name: str, source: str | None = None) -> tuple[set[str], set[str]]:
    """(modules of the package, other top-level modules) that module ``name`` (its text ``source``, by default its
    file's) imports, at its top or inside its functions. Importing ``a.b.c`` runs the packages ``a.b`` and ``a``
    first: each counts as imported too, unless it contains the importing module (a package's own ``__init__`` runs
    before its modules anyway)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    inside, outside = set(), set()
    source = path.read_text(encoding="utf-8") if source is None else source
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
        else:
            continue
        for target in targets:
            if not target.startswith("prmg_cli"):
                outside.add(target.split(".")[0])
                continue
            while target not in MODULES:
                target = target.rpartition(".")[0]
            parts = target.split(".")
            for count in range(1, len(parts) + 1):
                enclosing = ".".join(parts[:count])
                if enclosing != name and not name.startswith(enclosing + "."):
                    inside.add(enclosing)
    return inside, outside


GRAPH = {name: _imports(name) for name in MODULES}


def _cycles() -> list[list[str]]:
    """The import cycles: every strongly connected set of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(name: str) -> None:
        index[name] = low[name] = len(index)
        stack.append(name)
        for other in GRAPH[name][0]:
            if other not in index:
                visit(other)
                low[name] = min(low[name], low[other])
            elif other in stack:
                low[name] = min(low[name], index[other])
        if low[name] == index[name]:
            group = [stack.pop()]
            while group[-1] != name:
                group.append(stack.pop())
            if len(group) > 1:
                found.append(sorted(group))

    for name in MODULES:
        if name not in index:
            visit(name)
    return found


def _floors() -> dict[str, int]:
    """Each module's floor: 1 for one that imports no module of the package, else one above the highest it imports."""
    floors: dict[str, int] = {}

    def floor(name: str) -> int:
        if name not in floors:
            floors[name] = 1 + max((floor(other) for other in GRAPH[name][0]), default=0)
        return floors[name]

    for name in MODULES:
        floor(name)
    return floors


def test_the_imports_have_no_cycle_and_the_model_floor_no_numpy():
    """No module imports one that imports it back, even lazily (inside a function, or through a package's
    ``__init__``), so the package stacks up in floors; the model floor imports nothing above it and no numpy."""
    assert _cycles() == []
    below = set(MODEL_FLOOR)
    for name in MODEL_FLOOR:
        above = GRAPH[name][0] - below - {"prmg_cli"}
        assert not above, f"{name} imports {sorted(above)}, above the model floor"
    for name in (*MODEL_FLOOR, "prmg_cli"):
        assert not GRAPH[name][1] & {"numpy", "ml_dtypes"}, f"{name} imports numpy"
    floors = _floors()
    sizes = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in MODULES.items()}
    largest = max(sizes, key=sizes.get)
    print(f"{len(MODULES)} modules on {max(floors.values())} floors; the model floor holds {len(MODEL_FLOOR)}, the "
          f"largest module is {largest} ({sizes[largest]} lines)")


# --- the stages ---------------------------------------------------------------------------------------------

# The stage packages, lowest first (docs/developing.md draws them): a module may import its own stage, a lower one
# and the shared ground (the top-level modules and ``native/``, the compiled helper ``dtypes`` rounds through), never
# a higher stage. The entry points import anything; the ground imports only the ground.
STAGES = ("ops", "inputs", "judging", "cases", "device", "reports", "commands")
GROUND_PACKAGES = ("native",)
ENTRY_POINTS = ("prmg_cli.cli", "prmg_cli.pytest_plugin")
MAX_TOP_MODULES = 12        # top-level modules besides __init__.py: the shared ground and the entry points


def stage(name: str) -> int:
    """0 for the shared ground, 1.. for the stages in ``STAGES``' order, above them all for an entry point."""
    if name in ENTRY_POINTS:
        return len(STAGES) + 1
    parts = name.split(".")
    return STAGES.index(parts[1]) + 1 if len(parts) > 1 and parts[1] in STAGES else 0


def upward_imports(graph: dict[str, tuple[set[str], set[str]]]) -> list[str]:
    """Every import of ``graph`` (``GRAPH``'s shape) from a module to one of a higher stage."""
    return sorted(f"{name} (stage {stage(name)}) imports {other} (stage {stage(other)})"
                  for name, (inside, _) in graph.items() for other in inside if stage(other) > stage(name))


def test_no_module_imports_a_higher_stage_and_the_top_level_stays_small():
    """The stages stack up (``upward_imports`` finds none, lazy imports included), every package at the top is a
    stage or ground, and the top level holds at most ``MAX_TOP_MODULES`` modules: a new module goes into its
    stage's package."""
    assert upward_imports(GRAPH) == []
    packages = {path.name for path in PACKAGE.iterdir() if (path / "__init__.py").is_file()}
    assert packages == set(STAGES) | set(GROUND_PACKAGES), sorted(packages ^ (set(STAGES) | set(GROUND_PACKAGES)))
    top = sorted(path.name for path in PACKAGE.glob("*.py") if path.name != "__init__.py")
    assert len(top) <= MAX_TOP_MODULES, top


@pytest.mark.parametrize("low, added, high", [
    ("prmg_cli.ops.spec", "\n\ndef later():\n    from ..reports import store\n", "prmg_cli.reports.store"),  # lazy
    ("prmg_cli.ops.spec", "\nimport prmg_cli.reports.store\n", "prmg_cli.reports.store"),
    ("prmg_cli.dtypes", "\nfrom .judging.judge import judge\n", "prmg_cli.judging.judge"),            # the ground
    ("prmg_cli.cases.loader", "\n\ndef later():\n    from ..commands import suite\n", "prmg_cli.commands.suite"),
], ids=["lazy", "at the top", "from the ground", "lazy, cases to commands"])
def test_an_upward_import_is_found(low, added, high):
    """The check above fails when a module's own text gains an import from a lower stage to a higher one, or from
    the ground to a stage, at its top or lazily inside a function (the module's source read as the check reads it,
    with the import added)."""
    source = MODULES[low].read_text(encoding="utf-8") + added
    graph = {**GRAPH, low: _imports(low, source)}
    assert f"{low} (stage {stage(low)}) imports {high} (stage {stage(high)})" in upward_imports(graph)
    assert upward_imports({**GRAPH, low: _imports(low)}) == []


def test_each_stage_says_what_it_takes_and_gives_and_the_map_draws_the_stages_in_order():
    """Issue 38's map, literally: each stage's ``__init__.py`` opens with ``Stage N, NAME: ... in ... out`` (N its
    place in ``STAGES``), and docs/developing.md's drawing and the package's own docstring list the stages in that
    order."""
    drawing = (ROOT / "docs" / "developing.md").read_text().split("```\n")[1]
    drawn = re.findall(r"^(\d) (\w+)/ ", drawing, flags=re.M)
    assert [(int(number), name) for number, name in drawn] == sorted(
        ((index, name) for index, name in enumerate(STAGES, 1)), reverse=True), drawn
    for index, name in enumerate(STAGES, 1):
        text = ast.get_docstring(ast.parse((PACKAGE / name / "__init__.py").read_text())) or ""
        first = text.split("\n\n")[0]
        assert first.startswith(f"Stage {index}, ") and " in" in first and " out" in first, (name, first)
    top = " ".join((ast.get_docstring(ast.parse((PACKAGE / "__init__.py").read_text())) or "").split())
    assert ", ".join(f"``{name}`` ({index})" for index, name in enumerate(STAGES, 1)) in top    # the package's own


def test_each_stage_names_every_module_in_it_but_its_registry_entries():
    """A module added to a stage (``device/linkage.py`` in session 8) is named in the stage's ``__init__`` docstring,
    which says what each does: only a command's module (named like the command) and an operator's (named like it in
    ``OPERATORS``) speak for themselves; registries (``judging/standards/``...) are folders of their own."""
    from prmg_cli.commands import COMMANDS
    from prmg_cli.ops import OPERATORS

    entries = {name.replace("-", "_") for name in COMMANDS} | set(OPERATORS)
    for name in STAGES:
        text = ast.get_docstring(ast.parse((PACKAGE / name / "__init__.py").read_text())) or ""
        inside = [path.stem for path in (PACKAGE / name).glob("*.py") if path.stem != "__init__"]
        inside += [path.name for path in (PACKAGE / name).iterdir() if (path / "__init__.py").exists()]
        unnamed = [module for module in inside if module not in entries and f"``{module}" not in text]
        assert not unnamed, (name, unnamed)


# --- line length -------------------------------------------------------------------------------------------

MAX_COLUMNS = 120
CODE_SUFFIXES = (".py", ".c", ".h", ".cpp")


def long_lines(*folders: Path) -> list[str]:
    """``path:line: N columns`` for each line of the code (``CODE_SUFFIXES``) under ``folders`` longer than
    ``MAX_COLUMNS`` characters."""
    return [f"{path.relative_to(folder.parent)}:{number}: {len(line)} columns"
            for folder in folders for path in sorted(folder.rglob("*")) if path.suffix in CODE_SUFFIXES
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
            if len(line) > MAX_COLUMNS]


def test_no_line_of_the_code_is_longer_than_120_columns():
    """The package, the runners' C and C++, and the tests (their data's C headers too)."""
    assert long_lines(PACKAGE, ROOT / "runners", ROOT / "tests") == []


def test_a_long_line_is_found(tmp_path):
    (tmp_path / "a.c").write_text("int x;\n" + "/*" + "x" * (MAX_COLUMNS - 4) + "*/\n")
    (tmp_path / "b.py").write_text("x = 1\n" + "#" * (MAX_COLUMNS + 1) + "\n")
    (tmp_path / "c.md").write_text("#" * (MAX_COLUMNS + 1) + "\n")
    assert long_lines(tmp_path) == [f"{tmp_path.name}/b.py:2: {MAX_COLUMNS + 1} columns"]
