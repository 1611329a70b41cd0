"""``make mutate``'s list (tests/mutants.yaml) still applies to the code: each mutant's original text occurs exactly
once in its file, so that moving or rewriting code cannot silently retire a mutant; the list covers every file of
its table, holds at least 40 mutants, and says why for each. (Running the mutants is ``make mutate``'s, not
``make test``'s.)"""

from __future__ import annotations

from mutate import LIST, load, problems, verdict_files
from conftest import ROOT


def test_every_mutant_still_applies_to_the_code():
    assert problems(load()) == []


def test_the_list_covers_every_file_it_names_and_says_why():
    import yaml

    document = yaml.safe_load(LIST.read_text())
    mutants = load()
    assert document["version"] >= 1 and len(mutants) >= 40
    assert {entry["file"] for entry in document["mutants"]} == set(document["files"])
    assert all(mutant.reason.strip() for mutant in mutants)
    assert sum(1 for mutant in mutants if mutant.equivalent) < len(mutants) // 5
    assert {"tests/test_standards.py", "tests/test_check_bounds.py", "tests/test_judge.py"} <= set(verdict_files(ROOT))


def test_a_mutant_whose_original_moved_is_named(tmp_path):
    """A list whose original is gone (or doubled) from its file names the mutant, the file and the count; a test it
    names that is no longer defined (pytest would run nothing, which once counted as a kill) is named too."""
    (tmp_path / "code.py").write_text("a = 1\nb = 2\nb = 2\n")
    from mutate import Mutant

    (tmp_path / "test_x.py").write_text("def test_here():\n    pass\n")
    found = problems([Mutant("gone", "code.py", "c = 3", "c = 4", "r"),
                      Mutant("twice", "code.py", "b = 2", "b = 3", "r"),
                      Mutant("fine", "code.py", "a = 1", "a = 2", "r", ("test_x.py::test_here[a-b]",),
                             killed_by="test_x.py::test_here"),
                      Mutant("renamed", "code.py", "a = 1", "a = 3", "r", ("test_x.py::test_gone",)),
                      Mutant("stale", "code.py", "a = 1", "a = 4", "r", killed_by="test_x.py::test_old")], tmp_path)
    assert found == ["gone: its original occurs 0 times in code.py (once expected)",
                     "twice: its original occurs 2 times in code.py (once expected)",
                     "renamed: no test test_x.py::test_gone", "stale: no test test_x.py::test_old"]


def test_a_copy_of_the_tree_builds_its_own_emulator_sources(tmp_path):
    """``make mutate`` runs each mutant in a copy of the tree with this checkout's Python, whose editable install
    maps the emulator's and the graph shim's sources (package data) to this checkout's ``runners``: a mutant of the
    emulator was never built (4 of 4 survived the fault tests that fail on them). The ``prmg_cli`` a copy imports
    names its own ``runners`` first."""
    import shutil
    import subprocess
    import sys

    shutil.copytree(ROOT / "prmg_cli", tmp_path / "prmg_cli", ignore=shutil.ignore_patterns("__pycache__"))
    for folder, marker in (("emulator", "Makefile"), ("geir", "prmg_geir.h")):
        (tmp_path / "runners" / folder).mkdir(parents=True)
        shutil.copy2(ROOT / "runners" / folder / marker, tmp_path / "runners" / folder / marker)
    shown = subprocess.run([sys.executable, "-c", "from prmg_cli.files import emulator_sources, geir_sources; "
                            "print(emulator_sources()); print(geir_sources())"], cwd=tmp_path, capture_output=True,
                           text=True, check=True).stdout.split()
    assert shown == [str(tmp_path / "runners" / "emulator"), str(tmp_path / "runners" / "geir")]
