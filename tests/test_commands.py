"""Commands own their options (issue 22): each command is one module of ``prmg_cli.commands`` and one entry of
``COMMANDS``; ``prmg run``'s options make its request, the settings (built once) and the pytest plugin's
``--prmg-*`` options; a check's own option (``--repeat``) is declared by the check alone."""

from __future__ import annotations

import argparse
import importlib
import re
import sys
import types

import pytest

from prmg_cli import commands
from prmg_cli.commands import run
from prmg_cli.commands.options import Option, add_plugin_options, request_type
from prmg_cli.errors import PrmgError
from prmg_cli.judging import checks
from prmg_cli.judging.checks import CheckOption
from test_cli_commands import run_in_process


def test_a_command_is_one_module_and_one_entry(capsys, monkeypatch):
    """A toy command: a module with OPTIONS, Request, EPILOG and main, and one line in COMMANDS."""
    toy = types.ModuleType("prmg_cli.commands.toy")
    toy.OPTIONS = (Option("word", ("--word",), "hi", "A word to say.", "WORD"),
                   Option("times", ("-n", "--times"), 1, "How often.", "N", int))
    toy.Request = request_type("ToyRequest", toy.OPTIONS, "The toy's options.")
    toy.EPILOG = "\b\nExample:\n  prmg toy --word yo\n"

    def main(request) -> int:
        """Say a word, then exit 3."""
        print(" ".join([request.word] * request.times))
        return 3

    toy.main = main
    monkeypatch.setitem(sys.modules, toy.__name__, toy)
    monkeypatch.setitem(commands.COMMANDS, "toy", "toy")
    assert run_in_process(capsys, monkeypatch, "toy", "--word", "yo", "-n", "2")[:2] == (3, "yo yo\n")
    code, out, _ = run_in_process(capsys, monkeypatch, "--help")
    assert code == 0 and "toy" in out and "Say a word, then exit 3." in out
    code, out, _ = run_in_process(capsys, monkeypatch, "toy", "--help")
    assert code == 0 and "--word WORD" in out and "prmg toy --word yo" in out
    # a mistake click finds is prmg's one line too, naming the command (also when click's own message does not)
    for args, said in [(("-n", "x"), "Invalid value for '-n' / '--times': 'x' is not a valid int"),
                       (("--times",), "Option '--times' requires an argument"),
                       (("--bogus",), "No such option: --bogus"),
                       (("--time", "2"), "No such option: --time (did you mean --times?)")]:
        code, _, err = run_in_process(capsys, monkeypatch, "toy", *args)
        assert (code, err) == (2, f"prmg: error: prmg toy: {said} (see prmg toy -h)\n"), err
    # prmg's rule finds the option meant (click's difflib, dashes and all, took --seed for --shard), and a new
    # user's --workers is sent to --devices
    for args, said in ((("--seed", "1"), "--seed (see"), (("--workers", "2"), "--workers (prmg runs one worker per "
                                                                              "device: --devices all")):
        code, _, err = run_in_process(capsys, monkeypatch, "run", "x.yaml", *args)
        assert code == 2 and f"No such option: {said}" in err, err
    code, _, err = run_in_process(capsys, monkeypatch)
    assert code == 2 and err.startswith("Usage: ") and "Commands:" in err      # a bare prmg: its help, as before


def test_a_request_types_each_field_as_its_option():
    """The request's fields carry the options' types: text for a path, a tuple of text for a repeatable option."""
    import dataclasses
    from typing import Optional

    types_of = {field.name: field.type for field in dataclasses.fields(run.Request)}
    assert (types_of["paths"], types_of["device"], types_of["timeout"], types_of["strict"]) == \
        (tuple[str, ...], int, float, bool)
    assert types_of["results"] == Optional[str] and types_of["standard"] == Optional[str]


def test_the_top_level_help_gives_each_command_its_whole_first_sentence(capsys, monkeypatch):
    code, out, _ = run_in_process(capsys, monkeypatch, "--help")
    text = " ".join(out.split())
    assert code == 0 and "forward" in text and "..." not in text.split("Commands:")[1]
    assert "validate Check case files: syntax, keys, types, values and the operators' documented constraints." in text
    for name in commands.COMMANDS:
        assert f" {name} " in text


def _examples(text: str) -> list[str]:
    """The commands of a help text's examples (its lines after ``Examples:``), each continued line joined as the shell
    reads it."""
    commands, pending = [], ""
    found = re.search(r"\n  Examples[^\n]*:\n(.*?)(\n\n|$)", text, re.S)
    for line in found.group(1).splitlines() if found else []:
        if pending or line.strip().startswith("prmg "):
            pending += " " + line.strip().removesuffix("\\")
            if not line.endswith(" \\"):
                commands.append(" ".join(pending.split()))
                pending = ""
    return commands


@pytest.mark.parametrize("columns, limit", [(60, 60), (80, 80), (200, 100)])
def test_every_help_fits_the_terminal_down_to_80_columns(capsys, monkeypatch, columns, limit):
    """Every ``--help`` fits an 80-column terminal, its examples too (a long one continues on the next line after a
    backslash: tests/test_readme.py runs each as the shell reads it), and no more than 100 columns of a wider one.
    At 60 columns the examples written for 80 are broken again (they ran past it), the shell reading the same
    commands; only a word wider than the line (a long path) passes it."""
    monkeypatch.setenv("COLUMNS", str(columns))
    examples = []
    for name in ["", *commands.COMMANDS]:
        code, out, _ = run_in_process(capsys, monkeypatch, *name.split(), "--help")
        examples += _examples(out)
        wide = [line for line in out.splitlines() if len(line) > limit and " " in line.strip().removesuffix(" \\")]
        assert code == 0 and not wide, (name, wide)
        monkeypatch.setenv("COLUMNS", "200")
        assert _examples(out) == _examples(run_in_process(capsys, monkeypatch, *name.split(), "--help")[1])
        monkeypatch.setenv("COLUMNS", str(columns))
    assert len(examples) > 20


@pytest.fixture
def toy_check_option(monkeypatch):
    """A toy check owning an option ``--toy-level`` (1 to 5, default 3); ``commands.run`` rebuilt to see it, and
    rebuilt again without it afterwards."""
    toy = checks.Check("toy", "a toy check", lambda context: None, "toy_ratio", str, lambda m: None,
                       options={"toy_level": CheckOption(3, 1, 5, "L", "Levels of the toy check, 1 to 5.")})
    monkeypatch.setitem(checks.CHECKS, "toy", toy)
    monkeypatch.setitem(checks.OPTIONS, "toy_level", (toy, toy.options["toy_level"]))
    yield importlib.reload(run)
    monkeypatch.undo()
    importlib.reload(run)


def test_a_checks_option_is_a_run_flag_a_setting_and_a_plugin_flag(toy_check_option, capsys, monkeypatch):
    """The check declares its option once: ``prmg run --toy-level``, the request's default, its bounds when the
    settings are built, and ``--prmg-toy-level`` of the pytest plugin all come from that declaration."""
    from prmg_cli.commands.suite import settings_for

    module = toy_check_option
    assert module.Request(paths=()).toy_level == 3
    settings = settings_for(module.Request(paths=(), runner="emulator", toy_level=5))
    assert settings.check_options == {"repeat": 2, "toy_level": 5}
    with pytest.raises(PrmgError, match=r"--toy-level must be from 1 to 5 \(toy check\), got 9"):
        settings_for(module.Request(paths=(), runner="emulator", toy_level=9))
    added = {}

    class Group:
        def addoption(self, flag, **kwargs):
            added[flag] = kwargs

    add_plugin_options(Group(), module.OPTIONS)
    assert added["--prmg-toy-level"]["default"] == 3 and added["--prmg-repeat"]["default"] == 2
    for flag, given, value in (("--prmg-toy-level", "4", 4), ("--prmg-timeout", "1.5", 1.5)):
        assert added[flag]["type"](given) == value     # numbers in digits 0-9 alone, as `prmg run` and case files
        with pytest.raises(ValueError):
            added[flag]["type"](given + "\u0663")
        parser = argparse.ArgumentParser()          # as pytest parses it: its error names the option's type
        parser.add_argument(flag, type=added[flag]["type"])
        with pytest.raises(SystemExit):
            parser.parse_args([flag, "\u0663"])
        assert f"invalid {type(value).__name__} value: '\u0663'" in capsys.readouterr().err
    assert {"--prmg-runner", "--prmg-check", "--prmg-strict", "--prmg-devices"} <= set(added)
    monkeypatch.setitem(sys.modules, "prmg_cli.commands.run", module)
    code, out, _ = run_in_process(capsys, monkeypatch, "run", "--help")
    assert code == 0 and "--toy-level L" in out and "Levels of the toy check, 1 to 5." in out
    assert "sample, toy, or all of them" in " ".join(out.split())      # --check's list is the registry's


def test_run_options_are_checked_once_when_the_settings_are_built():
    """``settings_for`` is the one place a run's options become settings: --standard, --repeat, --check,
    --timeout and --max-timeouts are refused there with the option's name (--no-golden is held to the cases'
    checks once they are known: ``suite.check_judged``)."""
    from prmg_cli.commands.suite import settings_for

    for fields, message in [({"standard": "nope"}, "--standard: unknown standard"),
                            ({"repeat": 1}, "--repeat must be from 2 to 1000"),
                            ({"check": "bogus"}, "--check: unknown check 'bogus'"),
                            ({"timeout": -1.0}, "--timeout must be a finite number"),
                            ({"max_timeouts": 0}, "--max-timeouts must be >= 1")]:
        with pytest.raises(PrmgError, match=message):
            settings_for(run.Request(paths=(), runner="emulator", **fields))
    settings = settings_for(run.Request(paths=(), runner="emulator", check="adjoint,determinism", repeat=4,
                                        no_golden=True, standard="exact"))
    assert (settings.checks, settings.golden, settings.check_options, settings.standard) == \
        (("adjoint", "determinism"), False, {"repeat": 4}, "exact")


def test_check_names_are_checked_by_one_validator_from_the_flag_and_from_a_case_file():
    """``--check`` and a case's ``checks`` go through ``checks.check_names``: the same words, the same suggestion."""
    from pathlib import Path

    from prmg_cli.cases.loader import parse_document
    from prmg_cli.commands.suite import settings_for

    said = "unknown check 'ajoint' (did you mean 'adjoint'?) (valid: adjoint, roundtrip, determinism, sample, or all)"
    with pytest.raises(PrmgError) as flag:
        settings_for(run.Request(paths=(), runner="emulator", check="roundtrip,ajoint"))
    assert str(flag.value) == f"--check: {said} (comma-separated)"
    with pytest.raises(PrmgError) as case_file:
        parse_document([{"name": "c", "shape": [1, 1, 2, 16], "checks": ["roundtrip", "ajoint"]}], "c.yaml", Path("."))
    assert str(case_file.value) == f"c.yaml: case 'c': field 'checks': {said}"
    from prmg_cli.judging.checks import CHECKS                 # all: every check, once, from either place
    assert settings_for(run.Request(paths=(), runner="emulator", check="sample,all")).checks == ("sample", *(
        name for name in CHECKS if name != "sample"))
    case, = parse_document([{"name": "c", "shape": [1, 1, 2, 16], "checks": ["all"]}], "c.yaml", Path("."))
    assert case.checks == tuple(CHECKS)


@pytest.mark.parametrize("count, words", [(1, "1 case in 1 file is valid"), (2, "2 cases in 1 file are valid")])
def test_validate_counts_in_agreeing_words(tmp_path, capsys, monkeypatch, count, words):
    path = tmp_path / "c.yaml"
    path.write_text("".join(f"- {{name: c{i}, shape: [1, 1, 2, 16]}}\n" for i in range(count)))
    code, out, _ = run_in_process(capsys, monkeypatch, "validate", path)
    assert code == 0 and out.startswith(f"{words} ({count} expecting success, 0 expecting an error;")
    assert "file:" not in out            # nothing of .npy inputs a newcomer's cases do not have


def test_validate_names_the_npy_files_it_read_only_when_there_are_some(tmp_path, capsys, monkeypatch):
    import numpy as np

    np.save(tmp_path / "dy.npy", np.ones((1, 1, 2, 16), np.float32))
    path = tmp_path / "c.yaml"
    path.write_text("- {name: c0, shape: [1, 1, 2, 16], inputs: {dy: {file: dy.npy}}}\n"
                    "- {name: c1, shape: [1, 1, 2, 16], inputs: {dy: {file: dy.npy}}}\n")
    code, out, _ = run_in_process(capsys, monkeypatch, "validate", path)
    assert code == 0 and "; 1 .npy file read by file: inputs, each from inside its case file's folder)" in \
        " ".join(out.split())


def test_the_docs_name_the_plugins_options_and_no_other():
    """The pytest plugin's options are ``prmg run``'s marked ``plugin``: the plugin's section (docs/runners.md)
    names each, and the README no other."""
    import re

    from conftest import ROOT

    runners = (ROOT / "docs" / "runners.md").read_text()
    section = runners[runners.index("## The pytest plugin"):runners.index("## NPU hosts")]
    named = set(re.findall(r"--prmg-[a-z-]+[a-z]", section + (ROOT / "README.md").read_text()))
    assert named == {option.plugin_flag for option in run.OPTIONS if option.plugin}


def test_run_help_names_every_emulator_fault_and_variable(capsys, monkeypatch):
    """Fault injection is findable from ``prmg run --help`` (and ``prmg doctor``): the names come from the
    emulator's own sources."""
    from prmg_cli.device.toolkit import emulator_fault_names, emulator_variables

    code, out, _ = run_in_process(capsys, monkeypatch, "run", "--help")
    text = " ".join(out.split())
    assert code == 0 and "PRMG_EMU_FAULT=NAME[,NAME...]" in text
    assert all(f" {name}," in text or f" {name} (" in text for name in emulator_fault_names())
    assert all(name in text for name in emulator_variables())
