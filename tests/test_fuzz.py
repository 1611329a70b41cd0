"""Property-based fuzzing of the front door: mutated shipped case files never crash, hang or blow up.

Examples are the files under ``cases/``, cut to a window and mutated at the text level (characters,
YAML syntax, tags, templates, truncation, repetition, indentation, invalid bytes) or at the structure
level (keys renamed, added or removed, values replaced by any YAML value, nesting, sizes). Properties:

- in process: ``load_cases`` + ``validate`` either accept the file or raise one ``PrmgError`` of one
  line naming the file; ``check_files`` agrees (no errors exactly when that accepts), each of its
  errors one line naming the file; accepted cases have fingerprints and round-trip through
  ``case_to_dict``; each example stays within a time and memory budget;
- through the real command line (``python -m prmg_cli.cli validate FILE``): exit 0, 1 or 2 only; on
  exit 2 only ``prmg: error:`` lines naming the file, one (or one per broken case); never a traceback.

Hypothesis runs derandomized without a database, so CI sees the same examples every time.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT
from prmg_cli import gencase
from prmg_cli.cases import CASE_KEYS, case_to_dict, check_files, fingerprint, load_cases, validate
from prmg_cli.errors import PrmgError

CASE_FILES = sorted((ROOT / "cases").rglob("*.yaml"))
LINES = {path: path.read_text(encoding="utf-8").splitlines(keepends=True) for path in CASE_FILES}
DOCUMENTS = {path: yaml.safe_load(path.read_text(encoding="utf-8")) for path in CASE_FILES}
MODES = frozenset({1})
TIME_LIMIT_S = 10.0
MEMORY_LIMIT_BYTES = 256 << 20

CHARACTERS = ["\x00", "\x01", "\x08", "\x0b", "\x0c", "\x1b", "\x7f", "\x85", "\x9b", "\ufffe", "\uffff", "\ufdd0",
              "\u202e", "\u2066", "\u2028", "\u2029", "\ufeff", "\t", "\r", "\r\n", "\n", "é", "中", "😀", "\U0010fffd"]
SNIPPETS = [": ", ":", "- ", "-", "[", "]", "{", "}", ",", "&a ", "*a", "*nowhere", "&a [*a]", "!!int ", "!!float ",
            "!!bool ", "!!timestamp ", "!!binary ", "!!set ", "!!str ", "!!python/object/apply:os.system ",
            "!local ", "|", ">", "#", "'", '"', "%YAML 1.1\n", "---\n", "...\n", "<<: ", "? ", "@", "`", "\\",
            '"\\x1b[2J"', '"\\0"', '"\\q"', "{index:{dtype}}", "{index:0400000000d}", "{dtype.__class__}", "{dtype!r}",
            "{shape[0]}", "{}", "1e999", "-1", "0x" + "f" * 300, "9" * 5000, "2024-02-30", "12:30:00", ".", "..",
            "null", "~", "[[1]]", "{a: 1}", "[]", "{}", ".nan", "-.inf", "yes", "on"]
KEYS = list(CASE_KEYS) + ["sweep", "defaults", "cases", "dtpye", "", "null", "<<"]
SCALARS = (st.none() | st.booleans() | st.integers(min_value=-2**80, max_value=2**80)
           | st.floats(allow_nan=True, allow_infinity=True)
           | st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
           | st.sampled_from(["float32", "bf16", "fp8", "1S1D", "BSND", "interleave", "half", "pass", "any",
                              "ND", "cos", "sin", "dy", "allclose", "x_{index}", "x_{dtype}", "values"]))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=6)
                      | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6), inner, max_size=4),
                      max_leaves=24)
EXAMPLES = settings(max_examples=200, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
CLI_EXAMPLES = settings(EXAMPLES, max_examples=8)


# ----------------------------------------------------------------------------------------------
# Mutations


@st.composite
def text_mutations(draw) -> tuple[str, bytes]:
    """(file name, bytes): a window of a shipped file with a few text-level mutations."""
    path = draw(st.sampled_from(CASE_FILES))
    lines = LINES[path]
    text = "".join(lines[:draw(st.integers(min_value=min(len(lines), 8), max_value=min(len(lines), 60)))])
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        at = draw(st.integers(min_value=0, max_value=len(text)))
        operation = draw(st.sampled_from(["character", "snippet", "delete", "truncate", "repeat", "indent",
                                          "value", "key"]))
        if operation == "character":
            text = text[:at] + draw(st.sampled_from(CHARACTERS)) + text[at:]
        elif operation == "snippet":
            text = text[:at] + draw(st.sampled_from(SNIPPETS)) + text[at:]
        elif operation == "delete":
            text = text[:at] + text[at + draw(st.integers(min_value=1, max_value=40)):]
        elif operation == "truncate":
            text = text[:at]
        elif operation == "repeat":                     # a line (a case, a list) many times over
            start = text.rfind("\n", 0, at) + 1
            end = text.find("\n", at)
            line = text[start:end + 1 if end >= 0 else len(text)]
            text = text[:start] + line * draw(st.integers(min_value=2, max_value=300)) + text[start:]
        elif operation == "indent":
            start = text.rfind("\n", 0, at) + 1
            text = text[:start] + " " * draw(st.integers(min_value=1, max_value=5)) + text[start:]
        elif operation == "value":                      # the value after the next ': '
            colon = text.find(": ", at)
            if colon >= 0:
                end = text.find("\n", colon)
                end = len(text) if end < 0 else end
                text = text[:colon + 2] + draw(st.sampled_from(SNIPPETS)) + text[end:]
        else:                                           # the key before the next ':'
            colon = text.find(":", at)
            if colon >= 0:
                start = max(text.rfind(" ", 0, colon), text.rfind("\n", 0, colon), text.rfind("{", 0, colon)) + 1
                text = text[:start] + draw(st.sampled_from(KEYS)) + text[colon:]
    data = text.encode("utf-8")
    if draw(st.integers(min_value=0, max_value=9)) == 0:  # now and then, bytes that are not UTF-8
        at = draw(st.integers(min_value=0, max_value=len(data)))
        data = data[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xef\xbb\xbf"])) + data[at:]
    return path.name, data


def _places(node, trail=()):
    """Every (container, key) slot of a parsed document, depth first."""
    if isinstance(node, dict):
        for key in list(node):
            yield node, key
            yield from _places(node[key], trail + (key,))
    elif isinstance(node, list):
        for index in range(len(node)):
            yield node, index
            yield from _places(node[index], trail + (index,))


@st.composite
def structure_mutations(draw) -> tuple[str, bytes]:
    """(file name, bytes): a few cases of a shipped file with keys and values mutated, dumped as YAML."""
    path = draw(st.sampled_from(CASE_FILES))
    document = DOCUMENTS[path]
    cases = document["cases"] if isinstance(document, dict) else document
    start = draw(st.integers(min_value=0, max_value=len(cases) - 1))
    picked = [dict(case) for case in cases[start:start + draw(st.integers(min_value=1, max_value=4))]]
    doc = {"defaults": dict(document.get("defaults") or {}), "cases": picked} if isinstance(document, dict) \
        else picked
    doc = yaml.safe_load(yaml.safe_dump(doc))                     # a deep copy of plain values
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        places = list(_places(doc))
        if not places:
            break
        container, key = draw(st.sampled_from(places))
        operation = draw(st.sampled_from(["replace", "delete", "add", "rename", "nest", "grow"]))
        if operation == "replace":
            container[key] = draw(VALUES)
        elif operation == "delete":
            del container[key]
        elif operation == "add" and isinstance(container, dict):
            container[draw(st.sampled_from(KEYS))] = draw(VALUES)
        elif operation == "rename" and isinstance(container, dict):
            container[draw(st.sampled_from(KEYS) | st.text(max_size=8))] = container.pop(key)
        elif operation == "nest":
            for _ in range(draw(st.integers(min_value=1, max_value=120))):
                container[key] = [container[key]]
        elif operation == "grow":                                 # sizes: a long list, a big sweep
            container[key] = [container[key]] * draw(st.integers(min_value=2, max_value=2000))
    text = yaml.safe_dump(doc, allow_unicode=draw(st.booleans()), default_flow_style=draw(st.booleans()),
                          sort_keys=False, width=draw(st.sampled_from([80, 10**6])))
    return path.name, text.encode("utf-8")


MUTATIONS = text_mutations() | structure_mutations()


# ----------------------------------------------------------------------------------------------
# Properties


def _one_line_naming(error: PrmgError, path: Path) -> None:
    message = str(error)
    assert "\n" not in message and "\r" not in message, message
    assert error.file == str(path) and message.startswith(f"{path}: "), message


def check_in_process(name: str, data: bytes) -> None:
    """The in-process properties of one mutated file (see the module docstring)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(data)
        tracemalloc.start()
        started = time.monotonic()
        try:
            accepted = True
            try:
                cases = load_cases([path])
                validate(cases, MODES)
            except PrmgError as error:
                accepted = False
                _one_line_naming(error, path)
            errors = check_files([path], MODES)
            assert (errors == []) == accepted, [str(e) for e in errors]
            for error in errors:
                _one_line_naming(error, path)
            if accepted:
                for case in cases[:5]:
                    assert len(fingerprint(case)) == 64
                back = path.with_name("back.yaml")
                back.write_text(gencase.dump_yaml({"cases": [case_to_dict(case) for case in cases[:20]]}))
                again = load_cases([back])
                assert again == [dataclasses.replace(case, source=str(back)) for case in cases[:20]]
            elapsed = time.monotonic() - started
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert elapsed < TIME_LIMIT_S, f"{elapsed:.1f} s"
        assert peak < MEMORY_LIMIT_BYTES, f"{peak / 2**20:.0f} MiB"


@EXAMPLES
@given(MUTATIONS)
def test_mutated_case_files_are_accepted_or_refused_in_one_line(mutation):
    check_in_process(*mutation)


def _limit_memory() -> None:
    """In the child: at most 4 GiB of address space, so a blow-up fails instead of swapping."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


@CLI_EXAMPLES
@given(MUTATIONS)
def test_mutated_case_files_through_the_command_line(mutation):
    name, data = mutation
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(data)
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
        result = subprocess.run([sys.executable, "-m", "prmg_cli.cli", "validate", str(path)], cwd=ROOT, env=env,
                                capture_output=True, text=True, timeout=60, preexec_fn=_limit_memory,
                                errors="replace")
        assert result.returncode in (0, 1, 2), result.stderr
        assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
        if result.returncode == 2:
            lines = result.stderr.splitlines()
            assert lines and all(line.startswith("prmg: error: ") and str(path) in line for line in lines), \
                result.stderr
            # `validate` reports every broken case (check_files), one line each
            assert len(lines) == max(1, len(check_files([path], MODES))), result.stderr
        elif result.returncode == 0:
            assert "valid" in result.stdout


@pytest.mark.parametrize("seed_file", CASE_FILES, ids=lambda p: p.name)
def test_every_shipped_file_passes_the_properties_unmutated(seed_file):
    check_in_process(seed_file.name, seed_file.read_bytes())
