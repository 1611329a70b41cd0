"""Property-based fuzzing of the front door: mutated shipped case files, and generated results files (for
``prmg report``, ``prmg compare`` and ``--resume``: see the section below), never crash, hang or blow up.

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

import contextlib
import csv
import dataclasses
import io
import json
import math
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import tracemalloc
import unicodedata
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT, prmg, prmg_here, twin
from prmg_cli import dtypes
from prmg_cli.case import element_count
from prmg_cli.cases import gencase
from prmg_cli.cases.fields import MAX_ARRAY_ELEMENTS
from prmg_cli.cases.loader import CASE_KEYS, case_to_dict, check_files, fingerprint, load_cases, validate
from prmg_cli.commands import run, suite
from prmg_cli.device.execute import STAGES
from prmg_cli.errors import PrmgError
from prmg_cli.inputs.seeded import make_inputs
from prmg_cli.judging import diagnosis
from prmg_cli.judging.checks import CHECKS
from prmg_cli.judging.standards import STANDARDS
from prmg_cli.ops import OPERATORS
from prmg_cli.reports import compare, merge, outputs, run_record, store
from prmg_cli.reports.consistency import contradiction
from prmg_cli.reports.outputs import html
from prmg_cli.results import MAX_SECONDS, MS_PER_SECOND, RECORD_FIELDS, STATUSES, CaseResult, RunInfo
from prmg_cli.vocab import BROADCASTS, GENERATORS, MODE_NAMES, broadcast_shape

CASE_FILES = sorted((ROOT / "cases").rglob("*.yaml"))
LINES = {path: path.read_text(encoding="utf-8").splitlines(keepends=True) for path in CASE_FILES}
# libyaml's loader when PyYAML has it (the same values, a sixth of the second each xdist worker spent collecting)
DOCUMENTS = {path: yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
             for path in CASE_FILES}
MODES = frozenset({1})
TIME_LIMIT_S = 30.0            # a bound on pathological slowness, wide enough for a loaded 2-core machine
MEMORY_LIMIT_BYTES = 256 << 20

CHARACTERS = ["\x00", "\x01", "\x08", "\x0b", "\x0c", "\x1b", "\x7f", "\x85", "\x9b", "\ufffe", "\uffff", "\ufdd0",
              "\u202e", "\u2066", "\u2028", "\u2029", "\ufeff", "\t", "\r", "\r\n", "\n", "é", "中", "😀", "\U0010fffd"]
SNIPPETS = [": ", ":", "- ", "-", "[", "]", "{", "}", ",", "&a ", "*a", "*nowhere", "&a [*a]", "!!int ", "!!float ",
            "!!bool ", "!!timestamp ", "!!binary ", "!!set ", "!!str ", "!!python/object/apply:os.system ",
            "!local ", "|", ">", "#", "'", '"', "%YAML 1.1\n", "---\n", "...\n", "<<: ", "? ", "@", "`", "\\",
            '"\\x1b[2J"', '"\\0"', '"\\q"', "{index:{dtype}}", "{index:0400000000d}", "{dtype.__class__}", "{dtype!r}",
            "{shape[0]}", "{}", "1e999", "-1", "0x" + "f" * 300, "9" * 5000, "2024-02-30", "12:30:00", ".", "..",
            "null", "~", "[[1]]", "{a: 1}", "[]", "{}", ".nan", "-.inf", "yes", "on", "1e308",
            "-1.7976931348623157e308", "[-1e308, 1e308]", "[0, 1e308]"]
KEYS = list(CASE_KEYS) + ["sweep", "defaults", "cases", "dtpye", "", "null", "<<"]
SCALARS = (st.none() | st.booleans() | st.integers(min_value=-2**80, max_value=2**80)
           | st.floats(allow_nan=True, allow_infinity=True)
           | st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
           | st.sampled_from(["float32", "bf16", "fp8", "1S1D", "BSND", "interleave", "half", "pass", "any",
                              "ND", "cos", "sin", "dy", "allclose", "x_{index}", "x_{dtype}", "values",
                              "SUCCESS", "wrong", "odd_lanes", "base", "partial_slice", 4294967296]))
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


def _status_bytes(field: str) -> int:
    """This process's ``VmRSS`` or ``VmHWM`` (its peak resident set since the last reset) in bytes."""
    return int(re.search(rf"^{field}:\s+(\d+) kB", Path("/proc/self/status").read_text(), re.M).group(1)) << 10


def _resident_peak_starts() -> int:
    """The peak resident set reset to the resident set (``/proc/self/clear_refs``: 5), which is returned."""
    Path("/proc/self/clear_refs").write_text("5")
    return _status_bytes("VmRSS")


def check_in_process(name: str, data: bytes, traced: bool = True) -> None:
    """The in-process properties of one mutated file (see the module docstring). Its memory: with ``traced``,
    tracemalloc's peak of what Python and numpy allocated (exact, but every allocation is traced: 11 s of CPU for the
    17 shipped files against 2.6 s without it), which the mutated examples keep, where a blow-up is looked for;
    otherwise how far the process's peak resident set rose over its resident set at the start, for the shipped files:
    fixed inputs, whose memory only a change of the loader moves, and a blow-up past the limit touches new pages."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(data)
        resident = None if traced else _resident_peak_starts()
        if traced:
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
                for case in [case for case in cases if element_count(case.shape) <= 1024][:1]:
                    with warnings.catch_warnings():              # its inputs are drawn, no overflow on the way
                        warnings.simplefilter("error")
                        make_inputs(case)
                back = path.with_name("back.yaml")
                back.write_text(gencase.dump_yaml({"cases": [case_to_dict(case) for case in cases[:20]]}))
                again = load_cases([back])
                assert again == [dataclasses.replace(case, source=str(back)) for case in cases[:20]]
            _append_to(path.with_name(f"appended{path.suffix}"), data)
            elapsed = time.monotonic() - started
            peak = tracemalloc.get_traced_memory()[1] if traced else _status_bytes("VmHWM") - resident
        finally:
            tracemalloc.stop()
        assert elapsed < TIME_LIMIT_S, f"{elapsed:.1f} s"
        assert peak < MEMORY_LIMIT_BYTES, f"{peak / 2**20:.0f} MiB"


def _append_to(path: Path, data: bytes) -> None:
    """gen-case --append onto a file of ``data``: the case added (the file then loads with it) or one line, the file
    left as it was (a document of `null` alone was an AttributeError: exit 3)."""
    path.write_bytes(data)
    try:
        gencase.append_cases(path, [{"name": "appended_by_the_fuzz", "shape": [1, 1, 1, 8]}])
    except PrmgError as error:
        assert "\n" not in str(error) and str(path) in str(error), str(error)
        assert path.read_bytes() == data
        return
    assert "appended_by_the_fuzz" in {case.name for case in load_cases([path])}


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
    check_in_process(seed_file.name, seed_file.read_bytes(), traced=False)


def test_the_shipped_files_memory_measure_sees_a_blow_up(monkeypatch):
    """The resident measure of the shipped files (``traced=False``) fails a load that takes the limit and more."""
    loaded = load_cases

    def bloated(paths):
        ballast = np.ones(MEMORY_LIMIT_BYTES // 8 + (2 << 20))      # 16 MiB past the limit, every page touched
        return loaded(paths) if ballast.all() else []

    monkeypatch.setattr(sys.modules[__name__], "load_cases", bloated)
    with pytest.raises(AssertionError, match=r"^\d+ MiB"):
        check_in_process("smoke.yaml", (ROOT / "cases" / "smoke.yaml").read_bytes(), traced=False)


# ----------------------------------------------------------------------------------------------
# Results files: prmg report, prmg compare and --resume over generated JSON lines
#
# A file is a few lines (one file in twelve: a run record and 20 to 80 records), each drawn as one of: a
# plausible result record (every field of ``RECORD_FIELDS`` as a run writes it: real dtypes, operators,
# standards, statuses and modes, shapes with a broadcast pattern's cos shape, slices within D, kernel times,
# samples and stage timings, a standard's or check's metrics, a failed case's details and an error map made by
# ``diagnosis.error_map``), a plausible record given edge values (``EDGES``: negative and huge dimensions,
# reversed and negative slices, times past the longest, NaN and infinities, huge integers: some readable, some
# not), a record of any valid field values (``VALID``), a run record, a mutated record (a field given a wrong
# type, a lone surrogate, NaN or an infinity, a huge or over-long integer, nesting deeper than allowed, a field
# removed or added, another schema), a torn line (a prefix of any of those, cut anywhere), garbage (bytes no
# crash can leave: a NUL, invalid UTF-8, zeros, text after a whole record, JSON that is not a record), a blank
# line, or a line over the reader's limit (a long run record or message). The properties:
#
# - ``store.read`` returns the records or raises one ``PrmgError`` of one line naming the file; a file of
#   valid, torn and blank lines only is read whole (every valid record, each torn line left out); a file
#   with garbage or an over-long line is refused;
# - whatever it returns, every command that uses it works: ``merge.report_files`` in every format of
#   ``outputs.OUTPUTS`` but HTML (the JSON report strict JSON, the JUnit report well-formed XML),
#   ``compare.compare_files`` both ways in every format, and ``--resume``'s path (``store.trusted``, the reports
#   of a run that took those records); only ``PrmgError`` may come out, always one line;
# - the HTML report, which costs half a second a page (its plots), has its own test over fewer, larger files
#   the reader takes whole (``readable_files``: plausible records, edge values the reader takes, records of any
#   valid values): a whole page, with the margin histogram and the timing plot wherever a record calls for them;
# - through the real command line: ``prmg report``, ``prmg compare`` and ``prmg run --resume`` exit 0, 1,
#   2 or 5, never with a traceback, on 2 with one ``prmg: error:`` line naming the file.

HOSTILE_TEXTS = ["<script>alert(1)</script>", "<b>bold</b>", "<img src=x onerror=alert(1)>", "| a | b |", "# h",
                 "```", "[x](javascript:alert(1))", "![i](http://example.com/i.png)", "*a* _b_ `c`", "\\|", "&amp;",
                 "\x1b[2J", "\u202e", "\x00", "line\nbreak", "emulator", "aclnn", "float16", "bfloat16", "interleave",
                 "max_err_ratio", "adjoint_ratio", "not_run", "1/2", "0/0", "2/1", "a/b", "+1/+2", "²/3", "١/٣",
                 "1_0/2_0", "=cmd|' /c calc'!A1", "@SUM(A1:A9)", "+1+1", "-2+3", "-1", "\x01", "\x1b]0;t\x07", "\x9b2J",
                 "1/" + "9" * 5000]                   # int() refuses over 4,300 digits: a shard of them was exit 3
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12) | st.sampled_from(HOSTILE_TEXTS)
NAME = TEXT.filter(bool)
INT = st.integers(min_value=store.INT_RANGE[0], max_value=store.INT_RANGE[1] - 1) \
    | st.sampled_from([0, 1, -1, 2**63 - 1, 2**63, store.INT_RANGE[0], store.INT_RANGE[1] - 1])
NUMBER = INT | st.floats(allow_nan=True, allow_infinity=True)
SCALAR = st.none() | st.booleans() | NUMBER | TEXT
JSON = st.recursive(SCALAR, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
                    max_leaves=8)
INT64 = st.integers(min_value=-2**63 + 1, max_value=2**63 - 1)     # fields.parse_slice: |v| <= INT64_MAX
SEED = st.integers(min_value=0, max_value=2**64 - 1)
DIMS = st.lists(st.integers(min_value=0, max_value=64), max_size=5) \
    | st.lists(st.integers(min_value=0, max_value=MAX_ARRAY_ELEMENTS), max_size=2).filter(
        lambda dims: math.prod(d for d in dims if d) <= MAX_ARRAY_ELEMENTS)
SECONDS = st.floats(min_value=0, max_value=MAX_SECONDS) | st.integers(min_value=0, max_value=MAX_SECONDS)
MS = st.floats(min_value=0, max_value=MAX_SECONDS * MS_PER_SECOND) \
    | st.sampled_from([0, 1, MAX_SECONDS * MS_PER_SECOND])
METRIC = SCALAR | st.lists(SCALAR, max_size=3) | st.dictionaries(TEXT, SCALAR, max_size=3)   # 2 levels at most


@st.composite
def error_maps(draw) -> dict:
    """A grid whose edges rise from 0 to its rows and depth, as ``diagnosis.error_map`` makes one."""
    def edges(extent: int, most: int) -> list[int]:
        inner = draw(st.lists(st.integers(min_value=1, max_value=max(1, extent - 1)), max_size=most - 1, unique=True))
        return [0] + sorted(edge for edge in inner if edge < extent) + [extent] if extent else [0]
    rows = draw(st.integers(min_value=0, max_value=2**63 - 1) | st.integers(min_value=0, max_value=40))
    depth = draw(st.integers(min_value=0, max_value=2**63 - 1) | st.integers(min_value=0, max_value=200))
    row_edges, column_edges = edges(rows, 5), edges(depth, 8)
    start = draw(st.integers(min_value=0, max_value=depth))
    score = st.none() | st.floats(min_value=0) | st.sampled_from([0.0, 1.0, 1e9])
    return {"rows": rows, "depth": depth, "slice": [start, draw(st.integers(min_value=start, max_value=depth))],
            "row_edges": row_edges, "column_edges": column_edges, "metric": draw(TEXT),
            "values": [draw(st.lists(score, min_size=len(column_edges) - 1, max_size=len(column_edges) - 1))
                       for _ in row_edges[1:]]}


def _optional(strategy):
    return st.none() | strategy


@st.composite
def shards(draw) -> str:
    count = draw(st.integers(min_value=1, max_value=10**6))
    return draw(st.just("") | st.just(f"{draw(st.integers(min_value=1, max_value=count))}/{count}"))


# A valid value of every kind of field the store checks (``RECORD_FIELDS``, ``RUN_FIELDS``, ``RUN_INFO_FIELDS``).
VALID = {"name": NAME, "status": st.sampled_from(list(STATUSES)), "text": TEXT, "texts": st.lists(TEXT, max_size=3),
         "texts?": _optional(st.lists(TEXT, max_size=3)), "int": INT, "int?": _optional(INT),
         "ints": st.lists(INT, max_size=5), "devices": st.lists(INT | TEXT.filter(str.isprintable), max_size=5),
         "ints?": _optional(st.lists(INT, max_size=4)), "names": st.lists(NAME, max_size=6),
         "selection": st.lists(NAME, max_size=6), "bool": st.booleans(),
         "metrics": st.dictionaries(TEXT, METRIC, max_size=4), "timings": st.dictionaries(TEXT, MS, max_size=4),
         "dims": DIMS, "slice": st.lists(INT64, min_size=2, max_size=2), "seed?": _optional(SEED), "seconds": SECONDS,
         "ms?": _optional(MS), "ms list": st.lists(MS, max_size=5),
         "json": JSON, "error_map": st.just({}) | error_maps(), "notes": st.lists(st.tuples(TEXT, TEXT), max_size=2),
         "shard": shards(), "mapping": st.dictionaries(TEXT, JSON, max_size=4),
         "together": st.dictionaries(NAME, NAME, max_size=3),
         "definition": st.dictionaries(TEXT.filter(lambda key: key != "sweep"), JSON, max_size=4)}
VALID["run_info"] = st.fixed_dictionaries({}, optional={key: VALID[kind]
                                                         for key, kind in store.RUN_INFO_FIELDS.items()})
# Values no record may hold, as JSON text: any JSON value (most of the wrong type somewhere), text with a lone
# surrogate, NaN and infinities, integers too long for Python's parser, nesting past the limit.
RAW_HOSTILE = ['"\\ud800"', '"x\\udfff"', '["\\udc00"]', '{"\\ud83d": 1}', "NaN", "-Infinity", "1e999", "-0",
               str(store.INT_RANGE[1]), str(store.INT_RANGE[0] - 1), "[18446744073709551616]", "9" * 5000,
               "-" + "9" * 4400, "1" + "0" * 400, "[" * 40 + "]" * 40, "[" * 5000 + "]" * 5000,
               '{"a": ' * 40 + "1" + "}" * 40, "[]", "{}", '""', "null", "true", "0", "1.5", '"passed"']


SEEDED = st.builds(random.Random, st.integers(min_value=0, max_value=2**32))     # a seeded random.Random


def believable(result: CaseResult) -> CaseResult:
    """``result``, its status made ``failed`` when the rest of it contradicts it (``consistency.contradiction``: a
    record no run writes, which the reader refuses) and its devices' statuses dropped (a --each-device record's status
    is its devices' worst)."""
    return dataclasses.replace(result, status="failed", device_statuses={}) if contradiction(result) else result


@st.composite
def valid_results(draw) -> CaseResult:
    fields = {key: draw(VALID[kind]) for key, kind in RECORD_FIELDS.items()
              if key in ("name", "status") or not draw(st.integers(min_value=0, max_value=3))}
    fields.pop("run_id", None)            # a record naming a run no run record of its file states is refused
    return believable(CaseResult(**fields))


@st.composite
def valid_runs(draw) -> store.RunRecord:
    return store.RunRecord(**{key: draw(VALID[kind]) for key, kind in store.RUN_FIELDS.items()})


@st.composite
def mutated_lines(draw) -> bytes:
    """A valid record (of any valid values, or plausible) with a few fields (or fields of its run info, error
    map, metrics) given hostile values, removed or added, written as JSON (now and then with raw non-ASCII, a
    surrogate as invalid UTF-8)."""
    data = draw(valid_results() | valid_runs() | SEEDED.map(plausible_result)).to_dict()
    raw: dict[str, str] = {}
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        container = data
        nested = [key for key in ("info", "error_map", "metrics", "timings", "settings", "definition")
                  if isinstance(data.get(key), dict) and data[key]]
        if nested and draw(st.booleans()):
            container = data[draw(st.sampled_from(nested))]
        operation = draw(st.sampled_from(["replace", "replace", "raw", "delete", "add"]))
        key = draw(st.sampled_from(sorted(container)) | TEXT) if operation != "add" else draw(TEXT)
        if operation == "delete":
            container.pop(key, None)
        elif operation == "raw":
            marker = f"\x00raw{len(raw)}"
            raw[json.dumps(marker)] = draw(st.sampled_from(RAW_HOSTILE))
            container[key] = marker
        else:
            container[key] = draw(JSON | st.text(max_size=4))      # st.text: lone surrogates too
    text = json.dumps(data, default=str, ensure_ascii=draw(st.booleans()))
    for marker, value in raw.items():
        text = text.replace(marker, value)
    return text.encode("utf-8", errors="surrogatepass")


# Records as runs write them: every field of the table its plausible value (real dtypes, operators, standards,
# statuses and modes; shapes, cos shapes of a broadcast pattern, slices within D; kernel times, samples and stage
# timings; the metrics of a standard or check; a failed case's details and its error map made by
# diagnosis.error_map itself), drawn with a seeded random.Random so that a file of a hundred costs little.
METRIC_SETS = (("max_err_ratio", "bad", "max_abs_err", "max_err_ulp", "beyond_rounding"),
               ("rel_err_share", "share_limit", "cap", "max_rel_err"), ("MERE", "MARE", "T"),
               ("mare_ratio", "mare_limit", "mere_ratio", "mere_limit", "rmse_ratio", "rmse_limit"),
               ("max_tol_ratio",), ("adjoint_ratio",), ("roundtrip_ratio",), ("determinism_mismatches",),
               ("status",), ())
METRIC_VALUES = (0.0, 0.5, 1.0, 1.0 + 1e-9, 3.0, 1e3, 4e8, float("inf"), float("nan"), 0, 7, -1.0)


def plausible_result(rng: random.Random, index: int = 0, maps: float = 0.8) -> CaseResult:
    """A result record as a run writes one (above); a case that is not fine has an error map with probability
    ``maps`` (heatmaps are what an HTML report spends its time on)."""
    b, s, n, d = rng.choice((1, 2, 3)), rng.choice((1, 2, 4)), rng.choice((1, 2, 3)), rng.choice((2, 8, 16, 64, 128))
    start = rng.randrange(d + 1)
    end = rng.randrange(start, d + 1)
    pattern = rng.choice(BROADCASTS)
    cos_shape = list(broadcast_shape(pattern, (b, s, n, d), end - start))
    status = rng.choice(list(STATUSES))
    failed = not STATUSES[status].ok
    error_map, details = {}, []
    if failed and end > start and rng.random() < maps:
        score = np.random.default_rng(rng.randrange(2**32)).lognormal(0, 3, (b, s, n, end - start))
        error_map = {**diagnosis.error_map(score, start, d), "metric": "error/budget"}
        details = ["localisation: errors only on odd lanes", f"worst at (b, s, n, d)=({rng.randrange(b)}, "
                   f"{rng.randrange(s)}, {rng.randrange(n)}, {rng.randrange(start, end)}): expected 0.5, got -0.5, "
                   f"error 1, budget 3.3e-08"]
    metrics = {key: rng.choice(METRIC_VALUES) for key in rng.choice(METRIC_SETS)}
    dtype, cos_dtype = rng.choice(dtypes.OPERATOR_DTYPES), rng.choice(dtypes.OPERATOR_DTYPES)
    hexes = [f"{rng.getrandbits(256):064x}" for _ in range(2)]
    return believable(CaseResult(
        name=f"p{index}.{rng.choice(('grad', 'fwd'))}_{dtype}_{pattern}_s{start}-{end}", status=status,
        message=rng.choice(("", "192 of 384 elements over budget", "worker crashed: signal 11 (SIGSEGV)")),
        error_code=rng.choice((None, 0, 161002, 561002)), metrics=metrics, details=details,
        warnings=rng.choice(([], ["the golden equals the input"])),
        kernel_ms=rng.choice((None, 0.0, 1e-10, rng.uniform(1e-4, 50), MAX_SECONDS * MS_PER_SECOND)),
        kernel_samples=[rng.uniform(1e-3, 5) for _ in range(rng.randrange(6))],
        runner=rng.choice(("aclnn", "emulator", "")), duration_s=rng.choice((0, rng.uniform(0, 30))),
        timings={stage: round(rng.uniform(0, 20), 3) for stage in STAGES}, source="cases/smoke.yaml",
        op=rng.choice(list(OPERATORS)), dtype=dtype, cos_dtype=cos_dtype, sin_dtype=cos_dtype, shape=[b, s, n, d],
        cos_shape=cos_shape, sin_shape=cos_shape, rotary_mode=rng.choice(list(MODE_NAMES.values())),
        partial_slice=[start, end], seed=rng.randrange(2**64), generator=rng.choice(GENERATORS),
        expect=rng.choice(("pass", "pass", "ACLNN_ERR_PARAM_INVALID")), known_defect=rng.choice(("", "issue 7")),
        standard=rng.choice(list(STANDARDS)), checks=rng.sample(list(CHECKS), rng.randrange(3)),
        golden=rng.random() < 0.9, tags=["smoke"], key_metric=rng.choice(("", "err/budget 0.41")),
        error_map=error_map, definition={"name": "c", "shape": [b, s, n, d], "partial_slice": [start, end]},
        fingerprint=hexes[0], judged_under=hexes[1], faults=rng.choice(([], None, ["sign"]))))


def plausible_run(rng: random.Random, names: list[str]) -> store.RunRecord:
    """A run record as a run writes one: its selection ``names``, settings, provenance."""
    count = rng.randrange(1, 5)
    info = RunInfo(runner=rng.choice(("aclnn", "emulator")), location="/opt/cann", devices=tuple(range(count)),
                   soc="Ascend950PR_9372", host="ci-7", started="2026-01-02T03:04:05+00:00",
                   faults=rng.choice(((), ("sign",))), resumed=rng.randrange(3))
    return store.RunRecord(f"{rng.getrandbits(128):032x}", rng.choice(("", f"1/{count}")), names,
                           {"runner": info.runner, "standard": None, "repeat": 2}, info.to_dict())


# Values at and past the limits of each kind of field (``store._KINDS``), for ``edge_lines``.
NAN, INF = float("nan"), float("inf")
EDGES = {
    "dims": ([-1, 2], [0, MAX_ARRAY_ELEMENTS // 8, 1, 8], [MAX_ARRAY_ELEMENTS // 8, 1, 1, 9], [2**63],
             [4611686018427387905, 3, 8], [], [0, 0, 0, 0], [1] * 9, [2**64]),
    "slice": ([8, 0], [-2, 6], [0, 2**63], [0, 2**63 - 1], [-(2**63) + 1, 0], [5], [], [0, 1, 2]),
    "ms?": (-1.0, -0.0, 0.0, 1e-12, MAX_SECONDS * MS_PER_SECOND, MAX_SECONDS * MS_PER_SECOND * 1.01, 1e308, NAN,
            INF, None, "x", True),
    "ms list": ([-1.0], [NAN], [1e308], [0.5] * 3, [], [True]),
    "seconds": (-1, 0, MAX_SECONDS, MAX_SECONDS + 1, INF, NAN, "x"),
    "timings": ({"kernel": -0.5}, {"kernel": INF}, {"": 0}, {"k" * 100: 1e12}),
    "seed?": (-1, 0, 2**64 - 1, 2**64, None, 1.5),
    "int?": (2**63, -(2**63), 2**64 - 1, 2**64, -(2**63) - 1, None),
    "status": tuple(STATUSES) + ("sideways", None),
    "metrics": ({"max_err_ratio": -INF}, {"max_err_ratio": 2**64 - 1}, {"MERE": 1.0, "T": 0}, {"MERE": NAN, "T": -1},
                {"rel_err_share": 1, "share_limit": 0, "cap": 1e-300, "max_rel_err": 1e308}, {"": [[[[1]]]]}),
    "definition": ({"name": "s_{index}", "shape": [1, 1, 1, 8], "sweep": {"seed": list(range(440)),    # 193,600 cases
                                                                          "partial_slice": [[0, 8]] * 440}},
                   {"name": "x", "sweep": {"seed": [1, 2]}}, {"sweep": {}}, {}, {"name": "x", "shape": [1, 1, 1, 8]}),
    "texts": ([f"worst at (b, s, n, d)=({'9' * 30}, 0, 0, 0): expected 1, got 2, error 3"],
              ["worst at (b, s, n, d)=(999, 999, 999, 999): expected nan, got inf, error inf, budget 0"]),
}


def edge_line(rng: random.Random, index: int) -> bytes:
    """A plausible record with one to three fields given values at or past their limits (``EDGES``), among
    them reversed and negative slices, shapes around numpy's largest array, times beyond the longest, NaN and
    infinities: some valid, some not."""
    data = plausible_result(rng, index).to_dict()
    for key in rng.sample([key for key, kind in RECORD_FIELDS.items() if kind in EDGES], rng.randrange(1, 4)):
        data[key] = rng.choice(EDGES[RECORD_FIELDS[key]])
    return json.dumps(data).encode()


@st.composite
def many_lines(draw) -> list[tuple[str, bytes]]:
    """A run record and 20 to 80 plausible records (few with error maps), now and then with edge values, torn or
    blank lines among them, from one seed."""
    rng = draw(SEEDED)
    results = [plausible_result(rng, index, maps=0.1) for index in range(rng.randrange(20, 80))]
    lines = [("run", store.encode(plausible_run(rng, [r.name for r in results])).rstrip(b"\n"))]
    for index, result in enumerate(results):
        roll = rng.random()
        if roll < 0.03:
            lines.append(("edge", edge_line(rng, index)))
        elif roll < 0.05:
            whole = store.encode(result).rstrip(b"\n")
            lines.append(("torn", whole[:rng.randrange(1, len(whole))]))
        else:
            lines.append(("plausible", store.encode(result).rstrip(b"\n")))
        if rng.random() < 0.02:
            lines.append(("blank", b" " * rng.randrange(3)))
    return lines


GARBAGE = st.sampled_from([b"\x00" * 64, b"\x00", b"\xff\xfe", b"not json", b"[]", b"5", b'"text"', b"null",
                           b'{"schema": "prmg.result/3"}}', b'{"schema": "prmg.result/3", "name": "x"\x00',
                           b'{"schema": "prmg.result/9", "name": "x", "status": "passed"}', b"{}",
                           b'{"schema": "prmg.run/1", "run_id": "r", "shard": "", "selection": []}',
                           b'{"schema": "prmg.result/3", "name": "x", "status": "passed"} trailing',
                           b'{"schema": "prmg.result/3", "name": "x", "status": "passed", "shape": [1, 2}',
                           b'{"schema": "prmg.result/3", "name": "x", "status": tru}', b"\xed\xa0\x80",
                           b'{"schema": "prmg.result/3", "name": "\\q'])


@st.composite
def results_lines(draw) -> tuple[str, bytes]:
    """(kind, line without its newline): the kind says what the reader must make of it."""
    kind = draw(st.sampled_from(["plausible", "plausible", "plausible", "edge", "edge", "result", "run", "mutated",
                                 "mutated", "torn", "garbage", "blank", "huge"]))
    if kind == "plausible":
        return kind, store.encode(plausible_result(draw(SEEDED))).rstrip(b"\n")
    if kind == "edge":
        return kind, edge_line(draw(SEEDED), 0)
    if kind == "result":
        return kind, store.encode(draw(valid_results())).rstrip(b"\n")
    if kind == "run":
        return kind, store.encode(draw(valid_runs())).rstrip(b"\n")
    if kind == "mutated":
        return kind, draw(mutated_lines())
    if kind == "torn":
        record = draw(valid_results() | valid_runs() | SEEDED.map(plausible_result))
        whole = store.encode(record).rstrip(b"\n")
        return kind, whole[:draw(st.integers(min_value=1, max_value=len(whole) - 1))]
    if kind == "garbage":
        line = draw(GARBAGE)
        if draw(st.booleans()):             # garbage after the start of a record: no crash leaves that either
            whole = store.encode(draw(valid_results())).rstrip(b"\n")
            line = whole[:draw(st.integers(min_value=1, max_value=len(whole) - 1))] + b"\x00" + line
        return kind, line
    if kind == "blank":
        return kind, draw(st.sampled_from([b"", b" ", b"\t", b"\r"]))
    rng = draw(SEEDED)                      # a line just over the reader's limit: a long run record or result
    names = [f"case_{index:06d}" for index in range(LINE_LIMIT // 12)]
    huge = rng.choice((plausible_run(rng, names), dataclasses.replace(plausible_result(rng), message="m" * LINE_LIMIT)))
    return kind, store.encode(huge).rstrip(b"\n")


LINE_LIMIT = 16_000                 # store.MAX_LINE_BYTES in process: a huge line need not be 64 MiB


@st.composite
def results_files(draw, most: int = 5) -> tuple[list[str], bytes]:
    """(the kind of each line, the file's bytes): at most ``most`` lines."""
    many = most > 3 and draw(st.integers(min_value=0, max_value=11)) == 0          # one file in 12: many records
    lines = draw(many_lines() if many else st.lists(results_lines(), max_size=most))
    ending = draw(st.sampled_from([b"\n", b"\r\n"]))
    data = b"".join(line + ending for _, line in lines)
    sizes = [len(line) + len(ending) for _, line in lines]     # what the reader holds of each line, its ending too
    if lines and lines[-1][0] == "torn" and draw(st.booleans()):
        data, sizes[-1] = data[:-len(ending)], len(lines[-1][1])   # a torn last line has no newline
    # a line of any kind a run writes that is longer than the reader's limit is one to refuse (hostile texts of
    # 5,002 characters in several fields of one valid record: over LINE_LIMIT, no longer a line prmg writes whole)
    return ["huge" if kind in VALID_KINDS and size > LINE_LIMIT else kind
            for (kind, _), size in zip(lines, sizes)], data


def _one_line(error: PrmgError, *paths: Path) -> None:
    message = str(error)
    assert "\n" not in message and "\r" not in message, message
    assert any(message.startswith(f"{path}: ") for path in paths) or not paths, message


VALID_KINDS = {"result", "plausible", "run", "torn", "blank"}        # lines a results file prmg wrote may hold


def check_results_file(kinds: list[str], data: bytes, other: bytes, folder: Path) -> None:
    """The in-process properties of one generated results file (see above); ``other`` is the second run
    of ``prmg compare``."""
    path, second = folder / "run.jsonl", folder / "other.jsonl"
    path.write_bytes(data)
    second.write_bytes(other)
    started = time.monotonic()
    with mock.patch.object(store, "MAX_LINE_BYTES", LINE_LIMIT), contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()):
        try:
            stored = store.read(path)
        except PrmgError as error:
            _one_line(error, path)
            assert set(kinds) - VALID_KINDS, f"a valid file refused: {error}"
            stored = None
        if stored is not None:
            assert not {"garbage", "huge"} & set(kinds), "garbage or an over-long line taken"
            if not set(kinds) - VALID_KINDS:
                assert stored.records == kinds.count("result") + kinds.count("plausible")
                assert [r.name for r in stored.results] == list(dict.fromkeys(
                    r.name for r in stored.results))                  # the newest of each case, once
                assert len(stored.runs) == kinds.count("run") and stored.torn == kinds.count("torn")
            _report_every_format(stored, path, folder)
            _resume(stored, folder)
        for a, b in ((path, second), (second, path), (path, path)):
            for fmt in ("table", "json", "markdown"):
                try:
                    text, code = compare.compare_files(str(a), str(b), fmt)
                except PrmgError as error:
                    _one_line(error, a, b)
                    continue
                assert code in (0, 1) and text
                if fmt == "json":
                    json.loads(text, parse_constant=_no_constant)
    assert time.monotonic() - started < TIME_LIMIT_S


def _no_constant(name: str):
    raise AssertionError(f"{name} in a JSON report")


# The formats the broad test writes; HTML has a test of its own (a page costs half a second whatever it holds).
CHEAP_FORMATS = [fmt for fmt in outputs.OUTPUTS if fmt != "html"]


def _report_every_format(stored: store.Stored, path: Path, folder: Path, formats=CHEAP_FORMATS) -> int:
    """``prmg report`` of ``path`` in ``formats`` (its exit code): JSON strict, JUnit well-formed, and an HTML page
    with the margin histogram when a record has a margin metric, the timing plot when one has a kernel time and
    a launch's shapes (``html.key_margin``, ``html.bytes_moved``)."""
    targets = {fmt: folder / f"report.{fmt}" for fmt in formats}
    try:
        code = merge.report_files([str(path)], reports=[f"{fmt}:{target}" for fmt, target in targets.items()],
                                  verbose=True)
    except PrmgError as error:
        _one_line(error)
        raise AssertionError(f"a results file read whole is not reported: {error}") from None
    assert code in (0, 1, 5)
    if code != 5 and "json" in targets:
        json.loads(targets["json"].read_text(), parse_constant=_no_constant)
        ET.fromstring(targets["junit"].read_text())
        _no_raw_controls({fmt: targets[fmt].read_text() for fmt in ("table", "markdown", "csv")})
        _no_formulas(targets["csv"].read_text())
    if code != 5 and "html" in targets:
        page, latest = targets["html"].read_text(), stored.latest().values()
        assert page.rstrip().endswith("</html>")
        if any(html.key_margin(r.metrics) is not None for r in latest if r.metrics):
            assert 'id="margins"' in page
        if any(html.bytes_moved(r) and r.kernel_ms is not None and html.MIN_PLOTTED_MS <= r.kernel_ms < math.inf
               for r in latest):
            assert 'id="timing"' in page
    return code


def _no_raw_controls(texts: dict[str, str]) -> None:
    """No text report carries a control character but its line ends (an escape sequence, a C1 CSI, \\x01 from a
    file would reach a terminal or a spreadsheet): the CSV's device and call path columns did."""
    for fmt, text in texts.items():
        raw = {char for char in text if unicodedata.category(char) == "Cc" and char != "\n"}
        assert not raw, f"{fmt}: raw {sorted(raw)!r}"


def _no_formulas(text: str) -> None:
    """No CSV cell a spreadsheet would run as a formula (one starting with = + - @ that is not a number)."""
    for row in csv.reader(io.StringIO(text)):
        for cell in row:
            assert not cell.startswith(("=", "+", "-", "@")) or _is_number(cell), f"formula cell {cell!r}"


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _resume(stored: store.Stored, folder: Path) -> None:
    """What ``--resume`` does with the records: trust some (each fingerprint and settings key matching its
    own) and report them with the run's other results (``CHEAP_FORMATS``)."""
    latest = stored.latest()
    fingerprints = {name: result.fingerprint for name, result in latest.items()}
    key = next((result.judged_under for result in latest.values()), "")
    kept = run_record.resumed(stored, [], fingerprints, key)
    assert all(result.status not in store.UNTRUSTED for result in kept.values())
    results = list(latest.values())
    info = suite.RunInfo(runner="emulator", location="here", resumed=len(kept))
    request = run.Request(paths=(), verbose=True)
    targets = [outputs.ReportTarget(fmt, str(folder / f"resumed.{fmt}")) for fmt in CHEAP_FORMATS]
    suite._write_reports(targets, results, info, request)
    suite.exit_code(results)


@EXAMPLES
@given(results_files(), results_files(most=3))
def test_generated_results_files_are_read_reported_compared_and_resumed_or_refused_in_one_line(first, second):
    with tempfile.TemporaryDirectory() as folder:
        check_results_file(*first, second[1], Path(folder))


@st.composite
def readable_files(draw) -> tuple[int, bytes]:
    """(how many result records, a results file the reader takes whole): a run record and 10 to 40 records of
    every kind it reads -- plausible ones (some with error maps), ones given edge values, ones of any valid
    value (hostile texts, error maps of huge extents) -- each line the reader refuses left out."""
    rng = draw(SEEDED)
    lines = [store.encode(plausible_run(rng, ["a", "b"]))]
    for index in range(rng.randrange(10, 40)):
        roll = rng.random()
        line = edge_line(rng, index) if roll < 0.3 else store.encode(draw(valid_results())) if roll < 0.4 else \
            store.encode(plausible_result(rng, index, maps=0.3))
        try:
            if store._parse(line, 1, "generated") is not None:
                lines.append(line.rstrip(b"\n") + b"\n")
        except PrmgError:
            pass
    return len(lines) - 1, b"".join(lines)


@settings(EXAMPLES, max_examples=5)
@given(readable_files())
def test_generated_results_files_draw_their_html_report(readable):
    """The HTML report of files the reader takes (the page's plots, heatmaps and cards of plausible records and
    of records at their fields' limits), through ``prmg report``: a well-formed page with the plots its records
    call for."""
    count, data = readable
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "run.jsonl"
        path.write_bytes(data)
        stored = store.read(path)
        assert stored.records == count
        _report_every_format(stored, path, Path(folder), formats=["html"])


# A run and its rerun as runs write them today: each run record's settings hold every key
# ``run_record.recorded_settings`` writes (the call path, the libraries' stamps, the opp folder's, the standards'
# limits and the judging code, the chips of --each-device), its results are judged under them (``judged_under``: the
# settings' key, so the reader attributes them to the run and compare, report and --resume read those settings) and
# carry graph mode's and --each-device's fields (``path``, ``paths``, ``device``, ``device_statuses``); the rerun
# changes some settings (``RERUN_CHANGES``). The generated files above hold results of no run of theirs, and a run's
# settings of three keys: none of this was read by a fuzz test.
# The settings whose change makes a case not comparable (``compare.judging``; the limits only where both runs state
# them: a run of an older prmg states none)
JUDGED_BY = ("standard", "strict", "checks", "check_options", "golden", "judging_code", "each_device", "chips")
STAMP = [35944, 1796621811272274491, 1796621811272293540, 16040005]
RERUN_CHANGES = {
    "path": ("geir", "aclnn+geir", None), "standard": tuple(STANDARDS), "strict": (True,), "checks": (["sample"],),
    "golden": (False,), "judging_code": ("0123456789abcdef",), "limits": ("another table", None),
    "libraries": ("rebuilt",), "opp": ("upgraded",), "each_device": (True,), "toolkit_version": ("8.5.1",),
    "soc": ("Ascend950PR_9589", "Ascend910B"), "faults": ({"faults": ["sign"], "shape": ""},),
}


def plausible_settings(rng: random.Random) -> dict:
    """A run record's settings as ``run_record.recorded_settings`` writes them (keys and kinds of value)."""
    path = rng.choice(("aclnn", "geir", "aclnn+geir"))
    return {"runner": "emulator", **({"path": path} if path != "aclnn" else {}), "location": "/opt/emu",
            "op_library": "/opt/emu/lib64/libopapi_transformer.so",
            "libraries": {name: list(STAMP) for name in ("runtime", "nnopbase", "op", "geir")},
            "opp": {"path": "/opt/emu/opp", "custom": "", "files": rng.randrange(3), "fingerprint": "e3b0c44298fc1c14",
                    "portable": "e3b0c44298fc1c14"}, "toolkit_version": "8.5.0-emulator", "soc": "Ascend950PR_9372",
            "driver_version": "", "host": "ci-7", "faults": {}, "modes": [1], "standard": None, "strict": False,
            "checks": [], "golden": True, "check_options": {"repeat": 2}, "version": "0.1.0",
            "limits": {name: f"{index:016x}" for index, name in enumerate(STANDARDS)},
            "judging_code": "f5ccc79fd5760c4f"}


def _rerun_settings(rng: random.Random, settings: dict) -> tuple[dict, list[str]]:
    """``settings`` with one to three of ``RERUN_CHANGES`` made (or none, a rerun under the same settings)."""
    settings = json.loads(json.dumps(settings))
    changed = rng.sample(sorted(RERUN_CHANGES), rng.choice((0, 1, 1, 2, 3)))
    for key in changed:
        value = rng.choice(RERUN_CHANGES[key])
        if key == "path":
            settings.pop("path", None) if value is None else settings.update(path=value)
        elif key == "limits":
            settings["limits"] = {name: "ffff" for name in settings["limits"]} if value else None
            if value is None:
                settings.pop("limits")
        elif key in ("libraries", "opp"):
            target = settings[key]["op"] if key == "libraries" else settings[key]
            target.__setitem__(*((3, 99) if key == "libraries" else ("fingerprint", "0" * 16)))
        elif key == "each_device":
            settings.update(each_device=True, chips=[0, 1], visible_devices="")
        else:
            settings[key] = value
    return settings, changed


def judged_run(rng: random.Random, results: list[CaseResult], settings: dict) -> bytes:
    """A results file: a run record of ``settings`` (its provenance stating what its settings state) and
    ``results`` judged under them, with the fields a graph-mode or --each-device run gives its records."""
    info = RunInfo(runner=settings["runner"], location=settings["location"], op_library=settings["op_library"],
                   devices=tuple(settings.get("chips", (0,))), soc=settings["soc"], host=settings["host"],
                   toolkit_version=settings["toolkit_version"], strict=settings["strict"], version=settings["version"],
                   path=settings.get("path", "aclnn"), opp=settings["opp"]["path"], opp_files=settings["opp"]["files"],
                   opp_fingerprint=settings["opp"]["fingerprint"], opp_portable=settings["opp"]["portable"],
                   each_device=bool(settings.get("each_device")), started="2026-12-07T06:00:00+00:00",
                   standard=settings["standard"] or "per case (default: default)", checks=tuple(settings["checks"]),
                   golden=settings["golden"])
    record = store.RunRecord(f"{rng.getrandbits(128):032x}", "", [result.name for result in results], settings,
                             info.to_dict())
    key = store.settings_key(settings)
    lines = [store.encode(record)]
    for result in results:
        path = settings.get("path", "aclnn")
        statuses = {str(chip): rng.choice(("passed", result.status)) for chip in settings.get("chips", ())}
        if statuses:
            statuses["0"] = result.status                                # the worst of them is the record's status
        worst = ",".join(chip for chip, status in statuses.items() if status == result.status)
        judged = dataclasses.replace(result, run_id=record.run_id, judged_under=key, path=path,
                                     runner=result.runner and settings["runner"],       # a launch names its runner
                                     paths={name: result.status for name in path.split("+")} if "+" in path else {},
                                     device=worst or rng.choice(("0", "1")), device_statuses=statuses,
                                     warnings=[] if settings["strict"] else result.warnings)   # --strict fails them
        lines.append(store.encode(believable(judged)))
    return b"".join(lines)


@st.composite
def reruns(draw) -> tuple[bytes, bytes, list[str]]:
    """(a run's results file, its rerun's, the settings the rerun changed): the same cases, each with its own
    plausible verdict in each run."""
    rng = draw(SEEDED)
    results = [plausible_result(rng, index, maps=0.2) for index in range(rng.randrange(3, 25))]
    settings = plausible_settings(rng)
    again, changed = _rerun_settings(rng, settings)
    rerun = [dataclasses.replace(plausible_result(rng, index, maps=0.2), name=result.name, runner=result.runner,
                                 fingerprint=result.fingerprint, definition=result.definition, standard=result.standard)
             for index, result in enumerate(results)]            # the same case, by the same standard and runner
    return judged_run(rng, results, settings), judged_run(rng, rerun, again), changed


@settings(EXAMPLES, max_examples=100)
@given(reruns(), st.lists(st.sampled_from(sorted(RERUN_CHANGES) + ["libraries", "bogus"]), max_size=3))
def test_a_run_and_its_rerun_under_todays_settings_are_read_compared_merged_and_resumed(pair, allowed):
    """Files as runs write them today (above) are read whole; compare calls every case of both not comparable when
    the rerun changed how verdicts are judged and says so in one line otherwise; report merges them (naming the
    settings that differ, exit 1 unless --allow-mixed names each) or refuses an --allow-mixed name in one line;
    --resume takes a record of the first under the rerun's settings only when they are the same."""
    first, second, changed = pair
    with tempfile.TemporaryDirectory() as folder, contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()):
        a, b = Path(folder) / "a.jsonl", Path(folder) / "b.jsonl"
        a.write_bytes(first)
        b.write_bytes(second)
        stored_a, stored_b = store.read(a), store.read(b)              # a file a run writes is never refused
        assert stored_a.records == stored_b.records == len(stored_a.runs[0].selection)
        for fmt in ("table", "json", "markdown"):
            text, code = compare.compare_files(str(a), str(b), fmt)
            assert code in (0, 1) and text
            if fmt == "json":
                summary = json.loads(text, parse_constant=_no_constant)["summary"]
        settings_a, settings_b = stored_a.runs[0].settings, stored_b.runs[0].settings
        differ = any(settings_a.get(key) != settings_b.get(key) for key in JUDGED_BY) or \
            isinstance(settings_b.get("limits"), dict) and settings_b["limits"] != settings_a["limits"]
        assert summary["not comparable"] == stored_a.records * differ, (changed, summary)
        try:
            code = merge.report_files([str(a), str(b)], reports=[f"json:{Path(folder) / 'merged.json'}"],
                                      allow_mixed=allowed)
        except PrmgError as error:
            _one_line(error)
            assert "bogus" in allowed or not set(allowed) <= set(stored_a.runs[0].settings) | {"runner"}, error
        else:
            assert code in (0, 1)
            json.loads((Path(folder) / "merged.json").read_text(), parse_constant=_no_constant)
        fingerprints = {name: result.fingerprint for name, result in stored_a.latest().items()}
        same = store.settings_key(settings_a) == store.settings_key(settings_b)
        kept = run_record.resumed(stored_a, [], fingerprints, store.settings_key(settings_b))
        assert len(kept) == same * sum(result.status not in store.UNTRUSTED for result in stored_a.latest().values())


# TTK lists (``import-ttk``): upstream's e2e list and kernel list with cells replaced by values at and past what a
# row may hold, the e2e list's view columns (storage offsets, strides, storage shapes) among them.
TTK_LISTS = {name: (ROOT / "tests" / "data" / f"ttk_{name}.csv").read_text(encoding="utf-8")
             for name in ("e2e_inplace_partial_rotary_mul_backward", "kernel_inplace_partial_rotary_mul_grad")}
VIEW_COLUMNS = ("tensor_view_offsets", "tensor_view_strides", "tensor_storage_shapes")
TTK_CELLS = ["", "()", "((2, 4, 8, 128), (1, 1, 1, 128), (1, 1, 1, 128))",
             "((0, 4, 8, 128), (1, 1, 1, 128), (1, 1, 1, 128))", "((2, 4, 8, -128), (1, 1, 1, 128), (1, 1, 1, 128))",
             "((2**40, 4, 8, 128), (1, 1, 1, 128), (1, 1, 1, 128))", "(0, 0, 0)", "(0, 7, 2**32)", "(5, 0, 0)",
             "(-1, 0, 0)", "(1e300, 0, 0)", "('a', 0, 0)",
             "((8192, 1024, 128, 1), (128, 128, 128, 1), (128, 128, 128, 1))", "((1, 1, 1, 1), None, None)",
             "((0, 0, 0, 1), (0, 0, 0, 1), (0, 0, 0, 1))", "((2**63, 1, 1, 1), None, None)",
             "((4, 4, 8, 256), (1, 1, 1, 128), (1, 1, 1, 128))", "((1,), (1,), (1,))",
             "{'rotary_mode': 'half', 'partial_slice': [0, 64]}", "{'rotary_mode': 'bogus'}",
             "{'partial_slice': [64, 0]}", "{'rotary_mode': 'interleave', 'partial_slice': [0, 2**70]}", "{",
             "{'rotary_mode': 3}", "('int32', 'float32', 'float32')", "('bfloat16',)", "\x1b[2J", "a\nb", "x" * 3000,
             "(" * 200 + ")" * 200, "1e999", "NaN", "((-1, 1), (-1e308, 1e308), (0, 0))", "((0.001, 0.001),)", "True",
             "False", "-Ascend950", "1 / 0"]


@st.composite
def ttk_lists(draw) -> str:
    """An upstream TTK list (CSV text), the e2e one now and then given the view columns, with one to four cells
    replaced (``TTK_CELLS``) and now and then its rows repeated."""
    rows = list(csv.reader(io.StringIO(TTK_LISTS[draw(st.sampled_from(sorted(TTK_LISTS)))])))
    header = rows[0]
    if "api_name" in header:
        for column in VIEW_COLUMNS:
            if draw(st.booleans()):
                header.append(column)
    for row in rows[1:]:
        row += [""] * (len(header) - len(row))
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        row = draw(st.integers(min_value=1, max_value=len(rows) - 1))
        rows[row][draw(st.integers(min_value=0, max_value=len(header) - 1))] = draw(st.sampled_from(TTK_CELLS))
    if draw(st.integers(min_value=0, max_value=15)) == 0:
        rows = rows[:1] + rows[1:] * 8
    out = io.StringIO()
    csv.writer(out).writerows(rows)
    return out.getvalue()


@settings(EXAMPLES, max_examples=25)
@given(ttk_lists())
def test_mutated_ttk_lists_import_to_cases_that_load_or_name_each_row_left_out(text):
    """``import-ttk`` of a mutated TTK list: one PrmgError of one line naming the file, or cases that load and
    validate (what import-ttk writes is a case file prmg runs: a row's name with a newline in it does not break its
    comments) with one note naming the row per row left out or renamed, within the time budget."""
    from prmg_cli.cases import ttk

    started = time.monotonic()
    with tempfile.TemporaryDirectory() as folder:
        source, written = Path(folder) / "list.csv", Path(folder) / "list.yaml"
        source.write_text(text, encoding="utf-8")
        try:
            document, notes = ttk.import_ttk(str(source))
        except PrmgError as error:
            _one_line(error, source)
            return
        assert all(note.startswith("row ") for note in notes), notes      # (a name's newline: escaped when shown)
        written.write_text(gencase.dump_yaml(document), encoding="utf-8")
        if document["cases"]:
            validate(load_cases([str(written)]), frozenset({0, 1, 2, 3}))
    assert time.monotonic() - started < TIME_LIMIT_S


def _exits_cleanly(result: subprocess.CompletedProcess, *paths: Path) -> None:
    """Exit 0, 1, 2 or 5, no traceback; on 2 one ``prmg: error:`` line naming one of ``paths``."""
    assert result.returncode in (0, 1, 2, 5), result.stderr
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    if result.returncode == 2:
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("prmg: error: "), result.stderr
        assert any(f"{path}: " in lines[0] for path in paths), result.stderr


@settings(EXAMPLES, max_examples=3)
@given(results_files(), results_files(most=3))
def test_generated_results_files_through_the_command_line(first, second):
    with tempfile.TemporaryDirectory() as folder:
        a, b, cases = Path(folder) / "a.jsonl", Path(folder) / "b.jsonl", Path(folder) / "cases.yaml"
        a.write_bytes(first[1])
        b.write_bytes(second[1])
        cases.write_text("- {name: tiny, shape: [1, 1, 2, 8]}\n")
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
        for args, paths in ((["report", a, "--report", "markdown"], (a,)), (["compare", a, b], (a, b)),
                            (["run", cases, "--runner", "emulator", "--resume", a], (a,))):
            result = subprocess.run([sys.executable, "-m", "prmg_cli.cli", *map(str, args)], cwd=ROOT, env=env,
                                    capture_output=True, text=True, timeout=120, preexec_fn=_limit_memory,
                                    errors="replace")
            _exits_cleanly(result, *paths)


# ----------------------------------------------------------------------------------------------
# Paths: every path a command takes -- its arguments, its options, its report files, the toolkit's variables --
# given each kind of hostile path (issue 36)
#
# A symlink loop, a name over 255 bytes (last or inside), a dangling symlink, a FIFO, a folder, a path ending in
# '/', an empty path (an unset variable: it read as the current folder, or as not given); for a path the command
# writes also a symlink to a file it must not touch and the command's own input, named directly, through a symlink
# or through a hard link. Each slot below is a command line with ``{P}`` where
# the hostile path goes (or a variable it goes in), the input its ``input`` kinds name, and whether it writes a
# folder. Properties: exit 2 with one ``prmg: error:`` line, no traceback, within seconds; every input and the
# victim file as they were, byte for byte, and nothing made where a symlink points.

HOSTILE_PATHS = ("loop", "long", "long_inside", "dangling", "fifo", "folder", "slash", "empty")
HOSTILE_OUTPUTS = HOSTILE_PATHS + ("victim_link", "input", "input_link", "input_hardlink")
EMULATOR = ("--runner", "emulator")
PATH_SLOTS = {      # id: (arguments, the input its `input` kinds name (None: it reads the path), how it writes)
    "run PATH": (["run", "{P}", *EMULATOR], None, None),
    "run --op-lib": (["run", "{case}", "--runner", "aclnn", "--op-lib", "{P}"], None, None),
    "run --report FMT:FILE": (["run", "{case}", *EMULATOR, "--report", "json:{P}"], "case", "file"),
    "run -o": (["run", "{case}", *EMULATOR, "--report", "junit", "-o", "{P}"], "npy", "file"),
    "run --results": (["run", "{case}", *EMULATOR, "--results", "{P}"], "case", "file"),
    "run --resume": (["run", "{case}", *EMULATOR, "--resume", "{P}"], "npy", "file"),
    "run --save-failures": (["run", "{case}", *EMULATOR, "--save-failures", "{P}"], "case", "folder"),
    "validate PATH": (["validate", "{P}"], None, None),
    "report RESULTS": (["report", "{P}"], None, None),
    "report --cases": (["report", "{results}", "--cases", "{P}"], None, None),
    "report -o": (["report", "{results}", "--report", "json", "-o", "{P}"], "results", "file"),
    "report --report FMT:FILE": (["report", "{results}", "--cases", "{case}", "--report", "csv:{P}"], "case", "file"),
    "compare B": (["compare", "{results}", "{P}"], None, None),
    "coverage PATH": (["coverage", "{P}"], None, None),
    "coverage -o": (["coverage", "{case}", "-o", "{P}"], "case", "file"),
    "gen-case -o": (["gen-case", "--shape", "1,1,1,8", "--inputs", "dy=file:dy.npy", "-o", "{P}"], "npy", "file"),
    "gen-case -o --append": (["gen-case", "--shape", "1,1,1,8", "--inputs", "dy=file:dy.npy", "-o", "{P}", "--append"],
                             "npy", "file"),
    "import-ttk CSV": (["import-ttk", "{P}"], None, None),
    "import-ttk -o": (["import-ttk", "{csv}", "-o", "{P}"], "csv", "file"),
    "dump PATH": (["dump", "{P}", "--out", "{out}"], None, None),
    "dump --out": (["dump", "{case}", "--out", "{P}"], "case", "folder"),
    "bench --baseline": (["bench", "{case}", *EMULATOR, "--baseline", "{P}"], None, None),
    "doctor --op-lib": (["doctor", "--runner", "aclnn", "--op-lib", "{P}"], None, None),
    "ASCEND_HOME_PATH": (["run", "{case}", "--runner", "aclnn"], None, "ASCEND_HOME_PATH"),
    "PRMG_EMULATOR_HOME": (["run", "{case}", *EMULATOR], None, "PRMG_EMULATOR_HOME"),
}


def _hostile(kind: str, folder: Path, inputs: dict[str, Path]) -> str:
    """A path of ``kind`` (``HOSTILE_OUTPUTS``) made in ``folder``; ``inputs``: the command's own input files."""
    made = folder / f"hostile_{kind}"
    if kind == "loop":
        made.symlink_to(folder / "hostile_loop_back")
        (folder / "hostile_loop_back").symlink_to(made)
    elif kind == "long":
        return str(folder / ("n" * 300))
    elif kind == "long_inside":
        return str(folder / ("n" * 300) / "x")
    elif kind == "dangling":
        made.symlink_to(folder / "nowhere" / "made_through_a_link")
    elif kind == "fifo":
        os.mkfifo(made)
    elif kind == "folder":
        made.mkdir()
    elif kind == "slash":
        return f"{folder / 'missing'}/"
    elif kind == "empty":
        return ""
    elif kind == "victim_link":
        made.symlink_to(folder / "victim.txt")
    elif kind == "input_link":
        made.symlink_to(inputs["input"])
    elif kind == "input_hardlink":
        os.link(inputs["input"], made)
    else:                                                   # the input itself, as a relative path with ./
        return os.path.join(os.path.relpath(inputs["input"].parent), ".", inputs["input"].name)
    return str(made)


@pytest.mark.parametrize("slot", PATH_SLOTS)
def test_every_path_option_refuses_every_hostile_path_in_one_line_and_touches_nothing(slot, tmp_path):
    arguments, input_name, writes = PATH_SLOTS[slot]
    folder = tmp_path / "w"
    folder.mkdir()
    np.save(folder / "dy.npy", np.ones((1, 1, 1, 8), np.float32))
    files = {"case": folder / "c.yaml", "npy": folder / "dy.npy", "results": folder / "r.jsonl",
             "csv": folder / "ttk.csv", "victim": folder / "victim.txt"}
    files["case"].write_text("- {name: c, shape: [1, 1, 1, 8], inputs: {dy: {file: dy.npy}}}\n")
    files["csv"].write_bytes((ROOT / "tests" / "data" / "ttk_kernel_inplace_partial_rotary_mul_grad.csv").read_bytes())
    files["victim"].write_text("the user's file\n")
    with store.Writer(files["results"]) as writer:
        writer.append(store.RunRecord("r1", "", ["c"], {}, {}))
        writer.append(CaseResult(name="c", status="passed"))
    before = {name: path.read_bytes() for name, path in files.items()}
    kinds = HOSTILE_PATHS if writes != "file" and writes != "folder" else HOSTILE_OUTPUTS
    if writes == "folder":
        kinds = tuple(kind for kind in kinds if kind not in ("folder", "slash"))   # a folder output may be those
    if writes in ("ASCEND_HOME_PATH", "PRMG_EMULATOR_HOME"):
        kinds = ("loop", "long", "long_inside", "dangling", "fifo") + (("folder", "slash") if writes[0] == "A" else ())
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        for kind in kinds:
            path = _hostile(kind, folder, {"input": files.get(input_name or "case")})
            values = {"P": path, **{name: str(file) for name, file in files.items()}, "out": str(tmp_path / "out")}
            args = [argument.format(**values) for argument in arguments]
            env = {writes: path} if writes and writes.isupper() else {}
            started = time.monotonic()
            result = prmg_here(*args, env=env)
            assert time.monotonic() - started < TIME_LIMIT_S, (kind, args)
            lines = result.stderr.splitlines()
            assert result.returncode == 2 and "Traceback" not in result.stderr, (kind, args, result.stderr)
            assert len(lines) == 1 and lines[0].startswith("prmg: error: "), (kind, args, result.stderr)
            assert {name: file.read_bytes() for name, file in files.items()} == before, (kind, args)
            assert not (folder / "nowhere").exists() and not (tmp_path / "out").exists(), (kind, args)
            for made in folder.glob("hostile_*"):
                if made.is_symlink() or made.is_fifo() or os.path.isdir(made):
                    made.unlink() if not os.path.isdir(made) or made.is_symlink() else made.rmdir()
                else:
                    made.unlink()
    finally:
        os.chdir(cwd)


@pytest.mark.parametrize("variable", ["ASCEND_OPP_PATH", "ASCEND_CUSTOM_OPP_PATH"])
def test_the_opp_variables_given_a_hostile_path_are_stamped_never_a_crash(variable, tmp_path):
    """The opp folders the run's provenance stamps (``provenance.opp_stamp``) given a symlink loop, a name over 255
    bytes (``Path.is_dir`` raises ENAMETOOLONG: exit 3 before), a dangling link or a FIFO: the run goes on, as the
    toolkit would (the emulator refuses a missing opp folder as nnopbase does: exit 1 and its warning)."""
    case = tmp_path / "c.yaml"
    case.write_text("- {name: c, shape: [1, 1, 1, 8]}\n")
    for kind in ("loop", "long", "long_inside", "dangling", "fifo"):
        result = prmg_here("run", case, *EMULATOR, env={variable: _hostile(kind, tmp_path, {})})
        assert result.returncode in (0, 1) and "Traceback" not in result.stderr, (kind, result.stderr)
        assert all(line.startswith("prmg: ") for line in result.stderr.splitlines()), (kind, result.stderr)


FORGED = "\x1b[2J\x1b]0;title\x07\x01\x9b1m\nforged: line"      # escape sequences and a line of its own


@pytest.mark.parametrize("variables", [
    ("ASCEND_HOME_PATH", "ASCEND_OPP_PATH", "ASCEND_CUSTOM_OPP_PATH"),
    ("PRMG_EMU_FAULT", "PRMG_EMU_FAULT_SHAPE", "PRMG_EMU_DEVICES", "PRMG_EMU_MODES")])
def test_doctor_shows_hostile_variables_as_escapes_never_raw(variables):
    """``prmg doctor`` echoes the ASCEND_* and PRMG_EMU_* variables and the paths they name: a value holding an
    escape sequence or a newline reached the terminal raw (a cleared screen, a forged line of the report)."""
    result = prmg("doctor", env={name: "/x" + FORGED for name in variables})
    shown = result.stdout + result.stderr
    assert result.returncode in (0, 1) and "Traceback" not in shown, shown
    assert not {char for char in shown if unicodedata.category(char) == "Cc" and char != "\n"}, shown
    assert not any(line.startswith("forged") for line in shown.splitlines()), shown


# ----------------------------------------------------------------------------------------------
# Flags: every numeric option of every command given any number text (issue 36: --device 4294967296 wrapped to 0)
#
# Each command line reads a tiny case file and selects nothing to run (-k) where it can, so a value it takes ends
# the command at once (exit 5, or the command's own small output). Property: exit 0, 1, 2 or 5; on 2 one
# `prmg: error:` line naming the option; never a traceback.

NUMBER_TEXTS = ("-1", "0", "1", "2147483648", "4294967296", "18446744073709551617", "1e308", "-1e308", "nan", "inf",
                "0x10", "1_0", "²", "١", " 1", "", "9" * 5000)


def _numeric_options() -> list[tuple[str, str]]:
    """(command, flag) of every int or float option of every command (``commands.COMMANDS``)."""
    from prmg_cli.commands import COMMANDS, load

    return [(name, option.flags[0]) for name in COMMANDS for option in load(name).OPTIONS
            if option.kind in (int, float) and option.flags]


NUMBER_COMMANDS = {     # a command line of each command that ends at once once its options are taken
    "run": ["run", "{case}", *EMULATOR, "-k", "nothing"], "bench": ["bench", "{case}", *EMULATOR, "-k", "nothing"],
    "compare": ["compare", "{results}", "{copy}"], "coverage": ["coverage", "{case}"],
    "gen-case": ["gen-case", "--shape", "1,1,1,8"],
}


@pytest.mark.parametrize("command, flag", _numeric_options(), ids=[" ".join(pair) for pair in _numeric_options()])
def test_every_numeric_flag_takes_any_number_text_in_one_line(command, flag, tmp_path):
    case = tmp_path / "c.yaml"
    case.write_text("- {name: c, shape: [1, 1, 1, 8]}\n")
    results = tmp_path / "r.jsonl"
    results.write_bytes(store.encode(store.RunRecord("r1", "", ["c"], {}, {}))
                        + store.encode(CaseResult("c", "passed")))
    copy = twin(results)                                  # compare refuses one file given twice
    base = [argument.format(case=case, results=results, copy=copy) for argument in NUMBER_COMMANDS[command]]
    for text in NUMBER_TEXTS:
        result = prmg_here(*base, flag, text)
        assert result.returncode in (0, 1, 2, 5) and "Traceback" not in result.stderr, (flag, text, result.stderr)
        if result.returncode == 2:
            lines = result.stderr.splitlines()
            assert len(lines) == 1 and lines[0].startswith("prmg: error: ") and flag.lstrip("-") in lines[0], \
                (flag, text, result.stderr)                # click's type errors too (its usage block before)
        if not text.isascii():                            # '²', '١': refused as a case file refuses them
            assert result.returncode == 2 and "digits 0-9 only" in result.stderr, (flag, text, result.stderr)
        if flag == "--device" and text in ("-1", "2147483648", "4294967296", "18446744073709551617"):
            assert result.returncode == 2, (command, text, result.stderr)         # not wrapped to device 0
