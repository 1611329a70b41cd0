"""The front door (issue 11): every kind of bad input prmg reads is one line naming file, case and field.

One test (or one parametrised family) per class of input found by fuzzing; each failed on the code
before the fix (a traceback, a hang, an unbounded allocation, a path escape, or a lost record).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, prmg, prmg_forked, prmg_here, twin
from prmg_cli.cases import gencase, ttk
from prmg_cli.cases.loader import load_cases
from prmg_cli.commands import case_writer
from prmg_cli.errors import PrmgError
from prmg_cli.results import SCHEMA, CaseResult
from prmg_cli.writes import FOLDER, Output, check_outputs

CASE = "- name: c\n  shape: [1, 1, 1, 8]\n"


@contextlib.contextmanager
def within(seconds: float):
    """Fail (instead of hanging the suite) when the block takes longer than ``seconds``."""
    def expire(signum, frame):
        raise TimeoutError(f"took longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def refused(paths, *fragments: str, field: str | None = None, case: str | None = None) -> PrmgError:
    """The PrmgError ``load_cases(paths)`` raises, checked to be one line holding ``fragments``."""
    with within(10), pytest.raises(PrmgError) as caught:
        load_cases([str(p) for p in paths])
    message = str(caught.value)
    assert "\n" not in message and "Traceback" not in message
    for fragment in fragments:
        assert fragment in message
    if field is not None:
        assert caught.value.field == field
    if case is not None:
        assert caught.value.case == case
    return caught.value


def write(folder: Path, name: str, text: str | bytes) -> Path:
    path = folder / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


def read_traced(path: Path):
    """``store.read(path)`` and the memory it held when it returned (tracemalloc's current size)."""
    import tracemalloc

    from prmg_cli.reports import store

    tracemalloc.start()
    try:
        stored = store.read(path)
        return stored, tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()


def one_error_line(result: subprocess.CompletedProcess, *fragments: str) -> str:
    """The one stderr line of a ``prmg`` run that exited 2, checked for ``fragments``."""
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("prmg: error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0]
    return lines[0]


# ----------------------------------------------------------------------------------------------
# Characters


@pytest.mark.parametrize("char, named", [
    ("\x00", "U+0000 (NUL)"), ("\x0b", "U+000B (VT)"), ("\x7f", "U+007F (DEL)"), ("\x1b", "U+001B (ESC)"),
    ("\ufffe", "U+FFFE (a noncharacter)"), ("\x85", "U+0085 (NEL, a C1 control)"),
    ("\u2028", "U+2028 (LINE SEPARATOR)"), ("\ufeff", "U+FEFF (a byte order mark"),
])
def test_a_non_printable_character_anywhere_is_named_with_line_and_column(tmp_path, char, named):
    for text, where in [(f"- name: c\n  shape: [1, 1, 1, 8]  # x{char}\n", "line 2, column 27"),
                        (f"- name: c{char}\n  shape: [1, 1, 1, 8]\n", "line 1, column 10"),
                        (f'- name: c\n  dtype: "float32{char}"\n', "line 2, column 18")]:
        path = write(tmp_path, "c.yaml", text)
        refused([path], str(path), where, named, "is not allowed in a case file")


def test_a_bom_and_crlf_line_ends_keep_working(tmp_path):
    path = write(tmp_path, "c.yaml", b"\xef\xbb\xbf- name: c\r\n  shape: [1, 1, 1, 8]\r\n  dtype: bf16\r\n")
    (case,) = load_cases([path])
    assert case.name == "c" and case.dtype == "bfloat16"
    bad = write(tmp_path, "d.yaml", b"- name: c\r\n  shape: [1, 1, 1, 8\r\n  dtype: bf16\r\n")
    refused([bad], "line 3, column 8:")


def test_bad_utf8_names_the_line(tmp_path):
    path = write(tmp_path, "c.yaml", b"- name: c\n  shape: [1, 1, 1, 8]\n  dtype: \xff\n")
    refused([path], "line 3: not UTF-8 text (byte 0xff")


@pytest.mark.parametrize("encoding, said", [
    ("utf-16", "not UTF-8 text (it starts with UTF-16's byte order mark FF FE)"), ("utf-16-be", None),
    ("utf-32", "not UTF-8 text (it starts with UTF-32's byte order mark FF FE 00 00)")])
def test_a_utf16_or_utf32_file_is_named_so_with_what_to_do(tmp_path, encoding, said):
    """A case file or TTK list an editor or a spreadsheet saved as "Unicode" (UTF-16 with its byte order mark) was
    'not UTF-8 text (byte 0xff at offset 0)': it is named for what it is, and what to do (save it as UTF-8); UTF-16
    without a mark is refused at its first NUL character, as before."""
    path = write(tmp_path, "c.yaml", CASE.encode(encoding))
    table = write(tmp_path, "t.csv", "a,b\n1,2\n".encode(encoding))
    if said is None:
        refused([path], "line 1, column 1: the character U+0000 (NUL) is not allowed")
        return
    refused([path], f"line 1: {said}: save it as UTF-8")
    one_error_line(prmg_here("import-ttk", table), f"not a readable CSV file: {said}: save it as UTF-8")


def test_characters_through_the_command_line(tmp_path):
    path = write(tmp_path, "c.yaml", CASE + "  # \x00\n")
    one_error_line(prmg("validate", path), str(path), "line 3, column 5: the character U+0000 (NUL)")


# ----------------------------------------------------------------------------------------------
# YAML typing


@pytest.mark.parametrize("line, message", [
    ("seed: !!int abc", "line 3, column 9: !!int 'abc' is not an integer"),
    ('seed: !!float ""', "line 3, column 9: !!float '' is not a number"),
    ("golden: !!bool maybe", "line 3, column 11: !!bool 'maybe' is not true or false"),
    ("seed: !!timestamp yesterday", "!!timestamp 'yesterday' is not a date or time"),
    ("seed: 2024-02-30", "'2024-02-30' reads as a date or time but is not a valid one (quote it"),
    ("seed: " + "1" * 5000, "an integer of 5000 characters is too long to read"),
])
def test_a_value_its_tag_cannot_read_is_one_line_at_its_line(tmp_path, line, message):
    refused([write(tmp_path, "c.yaml", CASE + f"  {line}\n")], message)


@pytest.mark.parametrize("line, field, fragment", [
    ("format: [1]", "format", "unknown format [1]"),
    ("format: {a: 1}", "format", "unknown format {'a': 1}"),
    ("broadcast: {a: 1}", "broadcast", "unknown broadcast pattern {'a': 1}"),
    ("null: [[x]]\n  expect: {error: any}", "null", "unknown argument ['x']"),
    ("rotary_mode: [1]", "rotary_mode", "expected a mode name or number"),
    ("op: {a: 1}", "op", "unknown op {'a': 1}"),
    ("checks: [[adjoint]]", "checks", "unknown check ['adjoint']"),
    ("standard: [allclose]", "standard", "unknown standard ['allclose']"),
    ("expect: {error: [1]}", "expect.error", "got a list [1]"),
    ("dtype: {a: 1}", "dtype", "expected a dtype name, got a mapping"),
    ("tolerance: {[1]: 2}", None, "a key cannot be a list or a mapping"),
    ("standard: allclose\n  tolerance: {atol: !!int 0x" + "f" * 400 + "}", "tolerance.atol", "an integer of 1600 bits"),
    ("inputs: {dy: {uniform: [0, !!int 0x" + "f" * 400 + "]}}", "inputs.dy.uniform", "two finite numbers"),
    ("inputs: {dy: {values: [1, 2, 3, 4, 5, 6, 7, !!int 0x" + "f" * 400 + "]}}", "inputs.dy.values",
     "expected numbers"),
    ("inputs: {cos: {rope: {base: !!int 0x" + "f" * 400 + "}}}", "inputs.cos.rope.base", "a finite number > 0"),
    ("inputs: {dy: {bits: [1, 2, 3, 4, 5, 6, 7, 4294967296]}}", "inputs.dy.bits", "does not fit float32's 32 bits"),
    ("inputs: {dy: {bits: [1, 2, 3, 4, 5, 6, 7, 1.0]}}", "inputs.dy.bits", "expected integers, got the number 1.0"),
    ("inputs: {cos: {rope: {offset: [1, 2]}}}", "inputs.cos.rope.offset", "one per index of the table's first axis"),
    ("inputs: {cos: {rope: {offset: [-1]}}}", "inputs.cos.rope.offset", "expected integers 0 <= offset <= 2**63 - 1"),
    ("inputs: {cos: {rope: {offset: 9223372036854775808}}}", "inputs.cos.rope.offset",   # >= 0, but past the limit
     "expected an integer 0 <= offset <= 2**63 - 1 or a list of them, got the integer 9223372036854775808"),
    ("shape: [1, 1, 1, !!int 0x" + "f" * 3000 + "]", "shape", "an integer of 12000 bits"),
])
def test_a_list_or_mapping_or_giant_number_where_a_word_or_number_belongs(tmp_path, line, field, fragment):
    text = CASE.replace("  shape: [1, 1, 1, 8]\n", "") if line.startswith("shape") else CASE
    error = refused([write(tmp_path, "c.yaml", text + f"  {line}\n")], fragment, field=field)
    assert len(str(error)) < 400


def test_a_zero_dimension_next_to_huge_ones_is_refused_by_validate(tmp_path):
    """numpy cannot make an empty array whose other extents overflow ("array is too big"): validate says so,
    one line per case, instead of a crash when the run makes its inputs."""
    path = write(tmp_path, "z.yaml",
                 "- {name: z, shape: [0, 1099511627776, 1099511627776, 8]}\n"
                 "- {name: c, shape: [1, 1, 2, 8], cos_shape: [0, 1099511627776, 1099511627776, 8]}\n")
    result = prmg_here("validate", path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    too_big = "its non-zero dimensions multiply to 9671406556917033397649408, over the 1152921504606846975 elements " \
              "of the largest array numpy can make (even with a dimension of 0)"
    assert result.stderr.splitlines() == [f"prmg: error: {path}: case 'z': field 'shape': {too_big}",
                                          f"prmg: error: {path}: case 'c': field 'cos_shape': {too_big}"]
    assert prmg_here("run", path, "--runner", "emulator").returncode == 2


def test_unhashable_tags_merged_with_the_defaults(tmp_path):
    path = write(tmp_path, "c.yaml", "defaults: {tags: [smoke]}\ncases:\n- name: c\n  shape: [1, 1, 1, 8]\n"
                                     "  tags: [[1]]\n")
    refused([path], "[1] is not a word", field="tags", case="c")


def test_a_key_with_a_newline_cannot_forge_a_second_line(tmp_path):
    path = write(tmp_path, "c.yaml", CASE + '  "dtype\\nprmg: all passed": 1\n')
    error = refused([path], "unknown key 'dtype\\nprmg: all passed'")
    assert error.field == "dtype\\nprmg: all passed"             # quoted once, by the message: field '...'
    invisible = write(tmp_path, "i.yaml", CASE + '  "dt\\u200bype": 1\n')
    refused([invisible], "case 'c': field 'dt\\u200bype': unknown key 'dt\\u200bype' (")


def test_an_error_shows_a_value_as_the_user_typed_it_quoted_once(tmp_path):
    """A backslash reads as typed (repr and the CLI's escaping made ``'C:\\fp16'`` four backslashes), a tab as one
    escape, text in a list alike."""
    path = write(tmp_path, "v.yaml", "- {name: a, shape: [1, 1, 1, 8], dtype: 'C:\\fp16'}\n"
                                     '- {name: b, shape: [1, 1, 1, 8], dtype: "it\'s\\t"}\n'
                                     "- {name: c, shape: [1, 1, 1, 8], dtype: ['C:\\a', 2]}\n")
    result = prmg_here("validate", path)
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        f"prmg: error: {path}: case 'a': field 'dtype': unknown dtype 'C:\\fp16' (valid: float32, float16, bfloat16)",
        f"prmg: error: {path}: case 'b': field 'dtype': unknown dtype \"it's\\t\" (valid: float32, float16, bfloat16)",
        f"prmg: error: {path}: case 'c': field 'dtype': expected a dtype name, got a list ['C:\\a', 2] (valid: "
        "float32, float16, bfloat16)"]


# ----------------------------------------------------------------------------------------------
# Name templates


@pytest.mark.parametrize("template, fragment", [
    ("x{index:{dtype}}", "nested fields are not supported"),
    ("{dtype.__class__}", "no attribute or index access"),
    ("{dtype.__class__.__init__.__globals__}", "no attribute or index access"),
    ("{shape[0]}", "no attribute or index access"),
    ("{0}", "no positional fields"),
    ("{}", "no positional fields"),
    ("{dtype!r}", "conversions are not supported"),
    ("{index:0400000000d}", "widths and precisions are at most 200"),
    ("{dtype:.999999999}", "widths and precisions are at most 200"),
    ("{dtype:>150}{dtype:>150}", "makes a name of more than 200 characters"),
    ("{dtype:d}", "Unknown format code 'd'"),
])
def test_name_templates_that_would_reach_into_objects_or_allocate_are_refused(tmp_path, template, fragment):
    text = f'- name: "{template}"\n  shape: [1, 1, 1, 8]\n  sweep: {{dtype: [float32, float16]}}\n'
    started = time.process_time()              # CPU, not wall time: a loaded machine slows a refusal, never grows it
    refused([write(tmp_path, "c.yaml", text)], fragment, field="name")
    assert time.process_time() - started < 2


def test_a_name_is_at_most_200_characters_and_never_only_dots(tmp_path):
    for name in (".", "..", "...", "x" * 201):
        refused([write(tmp_path, "c.yaml", f"- name: '{name}'\n  shape: [1, 1, 1, 8]\n")], field="name")
    ok = load_cases([write(tmp_path, "c.yaml", "- {name: a., shape: [1, 1, 1, 8]}\n"
                                               f"- {{name: '{'y' * 200}', shape: [1, 1, 1, 8]}}\n"
                                               "- {name: 'n_{index:03d}', shape: [1, 1, 1, 8], sweep: {seed: [1]}}\n")])
    assert [case.name for case in ok] == ["a.", "y" * 200, "n_000"]


# ----------------------------------------------------------------------------------------------
# Size before work


def test_the_run_cap_counts_every_entry_of_every_file_before_expanding(tmp_path):
    from prmg_cli.cases.loader import MAX_RUN_CASES

    assert MAX_RUN_CASES == 200_000
    forty = list(range(40))
    sweep = f"  sweep: {{seed: {forty}, rotary_mode: [1, 1, 1, 1, 1], dtype: [fp32, fp32, fp32, fp32, fp32]}}\n"
    first = write(tmp_path, "a.yaml", "- name: 'a_{index}'\n  shape: [1, 1, 1, 8]\n" + sweep)      # 1000 cases
    # 40 x 5 x 5 x 200 = 200,000 cases: on its own within the limit, after a.yaml's 1000 over it
    many = "- name: 'b_{index}'\n  shape: [1, 1, 1, 8]\n" + sweep.replace("}\n", f", standard: {['default'] * 200}}}\n")
    second = write(tmp_path, "b.yaml", many)
    started = time.process_time()
    refused([first, second], "the sweep makes 200000 cases; with the 1000 before it the run would hold more than "
            "200000", field="sweep", case="b_{index}")
    assert time.process_time() - started < 10


def test_a_million_cases_over_several_files_are_refused_before_any_is_made(tmp_path, monkeypatch):
    """Five files of 200,000 cases each: every file is read and counted first, so the second one is refused
    without making a case of the first (which fits alone); validate (check_files) likewise."""
    from prmg_cli.cases import loader

    def made(*args):
        raise AssertionError("a case was made before the run's size was known")

    monkeypatch.setattr(loader._Run, "expand", made)
    forty = list(range(40))
    sweep = f"  sweep: {{seed: {forty}, rotary_mode: [1, 1, 1, 1, 1], dtype: [fp32, fp32, fp32, fp32, fp32], " \
            f"standard: {['default'] * 200}}}\n"                               # 40 x 5 x 5 x 200 = 200,000
    paths = [write(tmp_path, f"f{i}.yaml", f"- name: 'f{i}_{{index}}'\n  shape: [1, 1, 1, 8]\n" + sweep)
             for i in range(5)]
    refused(paths, "the sweep makes 200000 cases; with the 200000 before it the run would hold more than 200000",
            field="sweep", case="f1_{index}")
    with within(10):
        errors = loader.check_files(paths, frozenset({1}))
    assert [error.case for error in errors] == ["f1_{index}"]


def test_a_40_kb_file_cannot_expand_to_a_million_cases(tmp_path):
    lists = "".join(f"    {key}: [{', '.join(['fp32'] * 10)}]\n" for key in ("dtype", "cos_dtype", "sin_dtype"))
    text = "- name: 'x_{index}'\n  shape: [1, 1, 1, 8]\n  sweep:\n" + lists + \
        f"    seed: {list(range(1000))}\n"                                    # 10 * 10 * 10 * 1000 = 1,000,000
    path = write(tmp_path, "big.yaml", text)
    started = time.process_time()
    refused([path], "the sweep makes 1000000 cases, more than the 200000 a run may hold")
    assert time.process_time() - started < 5


def test_a_case_file_over_16_mib_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "huge.yaml"
    with open(path, "wb") as handle:
        handle.truncate(16 * 2**20 + 1)                 # sparse: nothing to read, only its size
    refused([path], "is 16.0 MiB, over the limit of 16.0 MiB")


def test_a_values_list_over_the_limit_is_refused_while_composing(tmp_path, monkeypatch):
    from prmg_cli.cases import yamlfile

    monkeypatch.setattr(yamlfile, "MAX_LIST_VALUES", 1000)
    monkeypatch.setattr(yamlfile.SafeConstructor, "construct_document",
                        lambda self, node: pytest.fail("a Python value was built"))
    values = ", ".join(["1.5"] * 1001)
    path = write(tmp_path, "v.yaml", f"- name: v\n  shape: [1, 1, 1, 1001]\n  inputs: {{dy: {{values: [{values}]}}}}\n")
    refused([path], "line 3, column 25: a list of more than 1000 values (give a larger tensor as a .npy file)")
    nested = ", ".join([f"[{', '.join(['2'] * 10)}]"] * 101)            # nested lists count in full
    path = write(tmp_path, "n.yaml", f"- name: v\n  shape: [1, 1, 1, 1010]\n  inputs: {{dy: {{values: [{nested}]}}}}\n")
    refused([path], "a list of more than 1000 values")


def test_the_alias_limit_applies_while_composing(tmp_path, monkeypatch):
    from prmg_cli.cases import yamlfile

    monkeypatch.setattr(yamlfile, "MAX_EXPANDED_NODES", 5000)
    bomb = ("- name: bomb\n  shape: [1, 1, 1, 8]\n  tags: &a [&b [&c [&d [x, x, x, x, x, x, x, x, x, x], *d, *d, *d, "
            "*d, *d, *d, *d, *d, *d], *c, *c, *c, *c, *c, *c, *c, *c, *c], *b, *b, *b, *b, *b, *b, *b, *b, *b]\n")
    # a syntax error far below the bomb: composing the whole document first would report it instead
    rest = "".join(f"- {{name: c{n}, shape: [1, 1, 1, 8]}}\n" for n in range(500)) + "- name: [broken\n"
    error = refused([write(tmp_path, "b.yaml", bomb + rest)], "the document expands to more than 5000 nodes once "
                    "its aliases are followed (an alias bomb?)")
    assert str(error).split(": ")[1].startswith("line 3, column")


def test_deep_nesting_is_refused(tmp_path):
    for depth in (200, 5000):                  # past 1000, libyaml's own limit speaks first: same words
        refused([write(tmp_path, "d.yaml", CASE + "  tags: " + "[" * depth + "]" * depth + "\n")],
                "nested deeper than 100 levels")


# ----------------------------------------------------------------------------------------------
# Files


def test_case_files_that_are_not_regular_files_are_refused_without_reading(tmp_path):
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    loop = tmp_path / "loop.yaml"
    loop.symlink_to(loop)
    for path, fragment in [(fifo, "is a FIFO (named pipe), not a regular file"),
                           ("/dev/urandom", "is a character device, not a regular file"),
                           ("/dev/zero", "is a character device, not a regular file"),
                           (loop, "too many levels of symbolic links")]:
        refused([path], str(path), fragment)


def test_a_folder_too_big_to_hold_case_files_is_refused_once_counted(tmp_path, monkeypatch):
    """``prmg run /`` walked the whole disk (46 s under load) before its first word; a folder with more files and
    folders below it than ``MAX_FOLDER_ENTRIES`` is one line naming it, before the folders below it that cannot be
    listed, and a folder within the bound is read as before."""
    from prmg_cli.cases import loader

    monkeypatch.setattr(loader, "MAX_FOLDER_ENTRIES", 6)
    for folder in [*(tmp_path / "big" / f"d{index}" for index in range(4)), tmp_path / "small"]:
        folder.mkdir(parents=True)
        write(folder, "c.yaml", CASE)
    for command in ("run", "validate"):
        one_error_line(prmg_here(command, tmp_path / "big", *(["-k", "nothing"] if command == "run" else [])),
                       f"{tmp_path / 'big'}: more than 6 files and folders below it", "Name the case files")
    assert prmg_here("validate", tmp_path / "small").returncode == 0


def test_a_fifo_named_on_the_command_line_does_not_hang(tmp_path):
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    one_error_line(prmg_forked("validate", fifo, timeout=60), "is a FIFO")


def npy_case(folder: Path, file: str, name: str = "c.yaml") -> Path:
    return write(folder, name, f"- name: c\n  shape: [1, 1, 1, 4]\n  inputs: {{dy: {{file: '{file}'}}}}\n")


def test_file_inputs_must_be_regular_files(tmp_path):
    os.mkfifo(tmp_path / "fifo.npy")
    (tmp_path / "folder.npy").mkdir()
    (tmp_path / "loop.npy").symlink_to(tmp_path / "loop.npy")
    for file, fragment in [("fifo.npy", "is a FIFO (named pipe), not a regular file"),
                           ("folder.npy", "is a directory, not a file"),
                           ("missing.npy", "no such file"),
                           ("loop.npy", "too many levels of symbolic links")]:
        refused([npy_case(tmp_path, file)], fragment, field="inputs.dy.file")


def test_file_inputs_must_stay_inside_the_case_files_folder(tmp_path):
    folder = tmp_path / "cases"
    folder.mkdir()
    np.save(tmp_path / "outside.npy", np.zeros(4, np.float32))
    (folder / "link.npy").symlink_to(tmp_path / "outside.npy")
    (folder / "zero.npy").symlink_to("/dev/zero")
    for file in ("../outside.npy", str(tmp_path / "outside.npy"), "link.npy", "zero.npy", "/etc/passwd"):
        refused([npy_case(folder, file)], "is outside the case file's folder", "(file: inputs must stay inside it)",
                field="inputs.dy.file")
    (folder / "sub").mkdir()
    np.save(folder / "sub" / "inside.npy", np.zeros(4, np.float32))
    (folder / "inside_link.npy").symlink_to(folder / "sub" / "inside.npy")
    for file in ("sub/inside.npy", "inside_link.npy", str(folder / "sub" / "inside.npy")):
        (case,) = load_cases([npy_case(folder, file)])
        assert case.dy_input.args == (str((folder / "sub" / "inside.npy").resolve()), str(folder.resolve()))


def test_errors_never_echo_file_contents(tmp_path):
    write(tmp_path, "secret.npy", b"SECRET-TOKEN-1234 admin:$6$hash:19000:0:99999:7:::\n")
    error = refused([npy_case(tmp_path, "secret.npy")], "is not a .npy file", field="inputs.dy.file")
    assert "SECRET" not in str(error) and "$6$" not in str(error)


def npy_bytes(header: str, data: bytes = b"", version: int = 1, length: int | None = None) -> bytes:
    """A .npy file with ``header`` (padded as numpy pads it) and ``data``."""
    text = header.encode("latin1")
    text += b" " * ((64 - (10 + len(text) + 1) % 64) % 64) + b"\n"
    size = len(text) if length is None else length
    prefix = b"\x93NUMPY" + bytes([version, 0]) + (size.to_bytes(2, "little") if version == 1
                                                    else size.to_bytes(4, "little"))
    return prefix + text + data


@pytest.mark.parametrize("content, fragment", [
    (npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", b"\0" * 8),
     "bytes, shorter than the"),
    (npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1099511627776), }"),
     "element count overflows int64"),
    (npy_bytes("{'descr': '|O', 'fortran_order': False, 'shape': (4,), }", b"\0" * 32),
     "holds Python objects (pickles are refused)"),
    (npy_bytes("{'descr': '<U4', 'fortran_order': False, 'shape': (4,), }", b"\0" * 64), "not numbers"),
    (npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", version=2, length=0xFFFFFFF0),
     "a .npy header of 4294967280 bytes, over 65536"),
    (npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), '__class__': 1}", b"\0" * 16),
     "without exactly descr, fortran_order and shape"),
    (npy_bytes("__import__('os').system('touch /tmp/prmg_npy_pwned')", b""), "not a Python dict literal"),
])
def test_npy_headers_are_checked_from_a_bounded_read(tmp_path, content, fragment):
    write(tmp_path, "t.npy", content)
    refused([npy_case(tmp_path, "t.npy")], fragment, field="inputs.dy.file")
    assert not os.path.exists("/tmp/prmg_npy_pwned")


def test_file_inputs_are_checked_again_when_the_run_reads_them(tmp_path):
    from prmg_cli.inputs.seeded import make_inputs

    np.save(tmp_path / "t.npy", np.arange(4, dtype=np.float32))
    (case,) = load_cases([npy_case(tmp_path, "t.npy")])
    np.testing.assert_array_equal(make_inputs(case).dy.reshape(-1), np.arange(4, dtype=np.float32))
    os.unlink(tmp_path / "t.npy")
    os.mkfifo(tmp_path / "t.npy")                          # swapped for a FIFO after loading
    with within(10), pytest.raises(PrmgError, match="is a FIFO") as caught:
        make_inputs(case)
    assert caught.value.field == "inputs.dy.file"
    os.unlink(tmp_path / "t.npy")
    (tmp_path / "t.npy").symlink_to("/etc/passwd")          # or for a link out of the folder
    with pytest.raises(PrmgError, match="outside the case file's folder"):
        make_inputs(case)
    os.unlink(tmp_path / "t.npy")
    np.save(tmp_path / "t.npy", np.arange(4, dtype=np.float32))
    with open(tmp_path / "t.npy", "r+b") as handle:        # truncated after loading
        handle.truncate(os.path.getsize(tmp_path / "t.npy") - 4)
    with pytest.raises(PrmgError, match="shorter than"):
        make_inputs(case)


def test_fortran_order_npy_files_are_read_in_c_order_of_their_shape(tmp_path):
    from prmg_cli.inputs.seeded import make_inputs

    array = np.asfortranarray(np.arange(8, dtype=np.float64).reshape(2, 4))
    np.save(tmp_path / "f.npy", array)
    path = write(tmp_path, "c.yaml", "- name: c\n  shape: [1, 1, 2, 4]\n  inputs: {dy: {file: f.npy}}\n")
    (case,) = load_cases([path])
    np.testing.assert_array_equal(make_inputs(case).dy.reshape(-1), np.arange(8, dtype=np.float32))


# ----------------------------------------------------------------------------------------------
# Writes: prmg dump


def dump_refused(paths, out, fragment: str) -> None:
    """``prmg dump`` (in process) refuses with one line holding ``fragment``."""
    from prmg_cli.commands.dump_arrays import dump_cases

    with pytest.raises(PrmgError) as caught:
        dump_cases([str(p) for p in paths], str(out))
    assert fragment in str(caught.value) and "\n" not in str(caught.value)


def test_dump_never_writes_outside_out(tmp_path):
    out = tmp_path / "out"
    for name in (".", ".."):
        path = write(tmp_path, "c.yaml", f"- name: '{name}'\n  shape: [1, 1, 1, 8]\n")
        dump_refused([path], out, "not a valid name")
    assert not (tmp_path / "dy.npy").exists() and not (tmp_path / "meta.json").exists()
    out.mkdir(exist_ok=True)
    (tmp_path / "elsewhere").mkdir()
    (out / "c").symlink_to(tmp_path / "elsewhere")
    dump_refused([write(tmp_path, "c.yaml", CASE)], out, "not dumped")
    assert list((tmp_path / "elsewhere").iterdir()) == []
    (out / "c").unlink()
    (out / "c").mkdir()
    (out / "c" / "dy.npy").symlink_to(tmp_path / "elsewhere" / "planted.npy")
    dump_refused([tmp_path / "c.yaml"], out, "is a symlink; not followed")
    assert list((tmp_path / "elsewhere").iterdir()) == []
    dump_refused([tmp_path / "c.yaml"], "/dev/full", "/dev/full: cannot write the dump: is not a folder")


@pytest.mark.parametrize("shape, limit", [("[1, 1, 1, 8]", 64), ("[1, 1, 4, 256]", 3000)])
def test_dump_write_errors_are_one_line(tmp_path, shape, limit):
    """A file size limit (RLIMIT_FSIZE) the first write passes, or not. 3000 bytes under arrays of 4 KiB is an array
    whose write falls short, as on a full disk: numpy's ``tofile`` raised an OSError without an errno ("4096
    requested and 2872 written") and the user read 'cannot write: oserror'; arrays go through the file's own writes,
    and the reason is the system's. A case it could not write whole leaves no folder."""
    case_file = write(tmp_path, "c.yaml", f"- name: c\n  shape: {shape}\n")
    script = ("import resource, signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
              f"resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit})); sys.argv = ['prmg'] + sys.argv[1:]; "
              "from prmg_cli.cli import main; main()")
    result = subprocess.run([sys.executable, "-c", script, "dump", str(case_file), "--out", str(tmp_path / "o")],
                            capture_output=True, text=True, cwd=ROOT, timeout=120)
    one_error_line(result, "o/c: cannot write: the file is too large")
    assert list((tmp_path / "o").iterdir()) == []


@pytest.mark.parametrize("key, value, field", [("shape", "[64, 64, 64, 64]", "shape"),
                                             ("dy_offset", "4294967296", "dy_offset"),
                                             ("cos_strides", "[8, 67108864, 8, 1]", "cos_strides")])
def test_dump_refuses_a_case_too_large_naming_the_field_that_makes_it_so(tmp_path, monkeypatch, key, value, field):
    """dump's memory refusal named 'shape' for a small view at a storage offset of 2**32 (fuzzing the session-5 case
    fields): it names the offset or strides when they, not the shape, make the storage large."""
    from prmg_cli.commands import dump_arrays

    monkeypatch.setattr(dump_arrays, "default_max_memory", lambda: 64 << 20)
    text = f"- {{name: big, op: forward, shape: [2, 3, 2, 8], broadcast: 1S1D, {key}: {value}}}\n".replace(
        "shape: [2, 3, 2, 8], broadcast: 1S1D, shape", "shape")         # the forward takes strided tables
    with pytest.raises(PrmgError) as refused:
        dump_arrays.dump_cases([str(write(tmp_path, "c.yaml", text))], str(tmp_path / "out"))
    assert refused.value.field == field and "not dumped" in refused.value.reason


def test_written_case_files_say_how_many_cases_they_hold(tmp_path):
    """gen-case and import-ttk said 'wrote FILE' (how many cases a preset or a TTK list gave: unsaid), dump
    'wrote N cases to DIR': each says the count now."""
    assert case_writer.generate(**{**FLAGS, "preset": "smoke", "output": str(tmp_path / "s.yaml")}) == \
        f"wrote 36 cases to {tmp_path / 's.yaml'}\n"
    assert case_writer.generate(**{**FLAGS, "shape": "1,1,2,8", "output": str(tmp_path / "o.yaml")}) == \
        f"wrote 1 case to {tmp_path / 'o.yaml'}\n"
    ttk_list = ROOT / "tests" / "data" / "ttk_kernel_inplace_partial_rotary_mul_grad.csv"
    said, _ = case_writer.import_ttk_file(str(ttk_list), str(tmp_path / "t.yaml"))
    assert said == f"wrote {len(load_cases([tmp_path / 't.yaml']))} cases to {tmp_path / 't.yaml'}\n"


def test_a_case_whose_arrays_could_not_all_be_written_leaves_no_folder(tmp_path, monkeypatch):
    """A full disk in the middle of a case's arrays left DIR/CASE/ with some .npy files and no meta.json, under
    prmg dump (exit 2) and --save-failures (the run goes on): a folder a loader reads as that case's arrays. The
    files written are removed again (an old meta.json too, which would describe them), the cases written before
    stay whole and the error counts them."""
    import errno

    from prmg_cli.commands.dump_arrays import dump_cases
    from prmg_cli.device import artifacts

    case_file = write(tmp_path, "c.yaml", CASE + "- {name: d, shape: [1, 1, 1, 8]}\n")
    from prmg_cli.inputs.seeded import make_inputs

    saves, real_save, full_at = [], np.save, [7]      # c's five arrays (and meta.json), then d's second

    def disk_fills(handle, array, **options):
        saves.append(array)
        if len(saves) == full_at[0]:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_save(handle, array, **options)

    monkeypatch.setattr(artifacts.np, "save", disk_fills)
    out = tmp_path / "out"
    (out / "d").mkdir(parents=True)
    (out / "d" / "meta.json").write_text("{}")                     # an earlier dump's
    with pytest.raises(PrmgError, match=r"out/d: cannot write: no space left on device \(1 of 2 cases written "
                                        r"whole\)$"):
        dump_cases([str(case_file)], str(out))
    assert sorted(path.name for path in out.iterdir()) == ["c", "d"] and list((out / "d").iterdir()) == []
    assert len(list((out / "c").iterdir())) == 6
    saves.clear()
    full_at[0] = 2
    (out / "d").rmdir()
    case = load_cases([case_file])[1]
    said = artifacts.save_failure(str(out), case, CaseResult(name="d", status="failed"), make_inputs(case), None, {})
    assert said == f"could not write artifacts under {out}: no space left on device" and not (out / "d").exists()


# ----------------------------------------------------------------------------------------------
# The results file


def record(name: str, status: str = "passed", fingerprint: str = "") -> CaseResult:
    return CaseResult(name=name, status=status, fingerprint=fingerprint)


def test_results_file_on_devices_pipes_and_folders():
    from prmg_cli.reports.store import Writer as ResultsFile

    results = ResultsFile("/dev/full")
    with pytest.raises(PrmgError, match="cannot write the result of case 'a' to the results file: no space left") \
            as caught:
        results.append(record("a"))
    assert caught.value.file == "/dev/full"
    results.close()
    with ResultsFile("/dev/null") as results:
        results.append(record("a"))
    with pytest.raises(PrmgError, match="is a directory"):
        ResultsFile(ROOT)


def test_results_file_on_a_fifo_without_reader_does_not_hang(tmp_path):
    from prmg_cli.reports.store import Writer as ResultsFile

    os.mkfifo(tmp_path / "fifo")
    with within(10), pytest.raises(PrmgError, match="a FIFO with no reader"):
        ResultsFile(tmp_path / "fifo")
    reader = os.open(tmp_path / "fifo", os.O_RDONLY | os.O_NONBLOCK)
    try:
        with within(10), ResultsFile(tmp_path / "fifo") as results:       # a pipe with a reader works
            results.append(record("a"))
        assert json.loads(os.read(reader, 1 << 16))["name"] == "a"
    finally:
        os.close(reader)


def test_a_torn_last_line_is_dropped_and_the_next_record_starts_on_its_own_line(tmp_path):
    from prmg_cli.reports.store import Writer, read

    path = tmp_path / "r.jsonl"
    full = json.dumps(record("a").to_dict())
    path.write_text(full + "\n" + full[:40])                       # the crash tore the second record
    with Writer(path) as results:
        results.append(record("b"))
    assert list(read(path).latest()) == ["a", "b"] and read(path).torn == 1
    assert path.read_text().splitlines()[1] == full[:40]


@pytest.mark.parametrize("content, fragment", [
    (b"\x7fELF\x02\x01\x01\x00\xff\xfe", "line 1: not UTF-8 text"),
    (b"just some notes\n", "line 1: not a JSON record"),
    (b'{"name": "a", "status": "passed"}\n', "line 1: a record of schema None, not " + SCHEMA),
    (b'{"schema": "prmg.result/1", "name": "a", "status": "passed"}\n', "a record of schema 'prmg.result/1'"),
    (b"[1, 2, 3]\n", "line 1: expected a JSON record, got [1, 2, 3]"),
    ((json.dumps(record("a").to_dict()) + "\n").encode() + b'{"schema": "' + SCHEMA.encode()
     + b'", "name": "b", "status": "exploded"}\n', "line 2: field 'status': unknown status 'exploded'"),
])
def test_a_resume_file_that_is_not_a_results_file_is_one_line_naming_the_line(tmp_path, content, fragment):
    from prmg_cli.reports.store import read

    path = write(tmp_path, "r.jsonl", content)
    with pytest.raises(PrmgError) as caught:
        read(path)
    assert fragment in str(caught.value) and "\n" not in str(caught.value)
    assert caught.value.file == str(path)
    with within(10), pytest.raises(PrmgError, match="is a character device"):
        read("/dev/zero")


def test_resume_trusts_only_finished_unchanged_cases(tmp_path):
    from prmg_cli.cases.loader import fingerprint
    from prmg_cli.reports.store import read, trusted

    cases = load_cases([write(tmp_path, "c.yaml", "".join(f"- {{name: {n}, shape: [1, 1, 1, 8]}}\n"
                                                          for n in "abcdefg"))])
    prints = {case.name: fingerprint(case) for case in cases}
    lines = [record("a", "passed", prints["a"]), record("b", "error", prints["b"]),
             record("c", "not_run", prints["c"]), record("d", "failed", "0" * 64),       # changed since
             record("e", "failed", prints["e"]), record("f", "passed", ""),               # no fingerprint
             record("g", "passed", prints["g"]), record("g", "error", prints["g"]),      # the last one counts
             record("gone", "passed", prints["a"])]                                         # not in the run
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r.to_dict()) + "\n" for r in lines))
    assert sorted(trusted(read(path), prints, "")) == ["a", "e"]
    assert sorted(trusted(read(path), prints, "another key")) == []
    assert read(tmp_path / "absent.jsonl", missing_ok=True).latest() == {}


# ----------------------------------------------------------------------------------------------
# Fingerprints


def test_fingerprint_is_stable_follows_the_definition_and_file_bytes_not_paths(tmp_path):
    from prmg_cli.cases.loader import fingerprint

    text = "- name: f\n  shape: [1, 1, 1, 4]\n  inputs: {dy: {file: t.npy}}\n"
    prints = []
    for folder in (tmp_path / "one", tmp_path / "two" / "deeper"):
        folder.mkdir(parents=True)
        np.save(folder / "t.npy", np.arange(4, dtype=np.float32))
        (case,) = load_cases([write(folder, "c.yaml", text)])
        prints.append(fingerprint(case))
    assert prints[0] == prints[1] and len(prints[0]) == 64 and int(prints[0], 16) >= 0
    np.save(tmp_path / "one" / "t.npy", np.arange(1, 5, dtype=np.float32))
    assert fingerprint(case) == prints[1]
    (changed,) = load_cases([tmp_path / "one" / "c.yaml"])
    assert fingerprint(changed) != prints[0]                        # the file's bytes changed
    assert fingerprint(dataclasses.replace(case, seed=case.seed + 1)) != prints[1]
    assert fingerprint(dataclasses.replace(case, generator="pcg64")) != prints[1]
    assert fingerprint(dataclasses.replace(case, source="/elsewhere/c.yaml")) == prints[1]
    (plain,) = load_cases([write(tmp_path, "p.yaml", "- {name: stable, shape: [2, 3, 4, 64], dtype: bf16}\n")])
    (before,) = load_cases([write(tmp_path, "q.yaml", "- {name: stable, shape: [2, 3, 4, 64], dtype: bf16, "
                                                      "generator: philox}\n")])
    # the same on every machine and run: a change here invalidates every results file in use (as the
    # generator key did: records written before it came from pcg64 inputs and must not be trusted; and as the
    # default philox4x32 did for cases naming no generator, whose records of philox's inputs are no longer theirs)
    assert fingerprint(plain) == "44d8a773475e8d08fe1dff47fc479d0d6d1e00c73046a9a392d4ac035839b03a"
    # the print of such a record before philox4x32 (the definition has always named its generator): a case that
    # now says generator: philox resumes from it
    assert fingerprint(before) == "216bea6bdfb99b190a0656d77c26af646cd21a915a0c47d1ff5fd1a3eac5d216"


# ----------------------------------------------------------------------------------------------
# Every broken case, not only the first


def test_check_files_reports_every_broken_case_once(tmp_path):
    from prmg_cli.cases.loader import check_files

    one = write(tmp_path, "one.yaml", """\
- {name: good, shape: [1, 1, 1, 8]}
- {name: bad_dtype, shape: [1, 1, 1, 8], dtype: fp8}
- {shape: [1, 1, 1, 8]}
- {name: wide, shape: [1, 1, 1, 2048]}
- name: "sw_{dtype}"
  shape: [1, 1, 1, 8]
  format: [1]
  sweep: {dtype: [float32, float16, bfloat16]}
- name: "sw2_{dtype}"
  shape: [1, 1, 1, 8]
  sweep: {dtype: [float32, fp99, fp98]}
- {name: good, shape: [1, 1, 1, 8]}
""")
    two = write(tmp_path, "two.yaml", "- name: x\n  shape: [1, 1, 1, 8\n")
    three = write(tmp_path, "three.yaml", "defaults: {dtyp: fp16}\ncases: []\n")
    errors = check_files([one, two, three, tmp_path / "absent.yaml"], frozenset({1}))
    seen = [(e.file, e.case, e.field) for e in errors]
    assert seen == [(str(one), "bad_dtype", "dtype"), (str(one), "#3", "name"), (str(one), "wide", "shape"),
                    (str(one), "sw_float32", "format"), (str(one), "sw2_fp99", "sweep.dtype"),
                    (str(one), "sw2_fp98", "sweep.dtype"), (str(one), "good", "name"),
                    (str(two), None, None), (str(three), None, "defaults.dtyp"),
                    (str(tmp_path / "absent.yaml"), None, None)]
    assert all("\n" not in str(e) for e in errors)
    assert "line 3, column 1: the list '[' opened at line 2, column 10 is not closed" in str(errors[7])
    assert check_files([ROOT / "cases"], frozenset({1})) == []


@pytest.mark.parametrize("text, message", [
    ("- name: x\n  shape: [1, 1, 1, 8]\n  dtype: fp16: x\n", "line 3, column 14: a mapping value is not allowed here "
     "(did you forget a space after ':' or quotes?)"),
    ("- name: x\n  shape [1, 1, 1, 8]\n  dtype: x\n", "line 2, column 3: a key without ':'"),
    ("- name: x\n  partial_slice:[0, 32]\n  dtype: x\n", "line 2, column 3: 'partial_slice:[0, 32]' has no space "
     "after ':' (YAML needs a space after ':' in a mapping, else it reads the line as plain text: write "
     "'partial_slice: [0, 32]')"),
    ("- name: x\n  shape: {a: 1\n", "line 3, column 1: the mapping '{' opened at line 2, column 10 is not closed"),
    ("- name: 'x\n", "line 2, column 1: the quoted text opened at line 1, column 9 is not closed"),
    ('- name: "\\q"\n', "line 1, column 9: the double-quoted text holds an unknown escape"),
    ("- name: x\n\t- y\n", "line 2, column 1: a tab"),
    ("- name: @x\n", "line 1, column 9: '@' cannot start a value (quote the value)"),
    ("- name: *nowhere\n", "line 1, column 9: the alias '*nowhere' names no anchor"),
    ("- a: &x 1\n  b: &x 2\n", "line 2, column 6: the anchor '&x' is defined twice (first at line 1)"),
    ("- a\nb: 1\n", "line 2, column 1: this line does not fit the block opened at line 1, column 1"),
    ("  a: 1\nb: 2\n", "line 2, column 1: this line does not fit the document (check its indentation)"),
    ("- !!python/object/apply:os.system [ls]\n", "line 1, column 3: unsupported YAML tag "
     "'!!python/object/apply:os.system'"),
])
def test_yaml_syntax_errors_are_one_line_in_plain_words_with_either_parser(tmp_path, text, message):
    from prmg_cli.cases import yamlfile

    for parser in yamlfile.LOADERS:                  # libyaml's and PyYAML's own: the same words
        with pytest.raises(PrmgError) as caught:
            yamlfile.parse_yaml(text, "f.yaml", parser)
        assert str(caught.value).startswith(f"f.yaml: {message}"), (parser, str(caught.value))
    refused([write(tmp_path, "s.yaml", text)], message)


# ----------------------------------------------------------------------------------------------
# Round trips: gen-case and import-ttk


@pytest.mark.parametrize("name", ["1e-8", "1E5", "true", "null", "0x1F", "0o17", "1_000", ".inf", ".nan", "-1",
                                  "2024-01-01", "on", "yes", "1.5", "Null"])
def test_generated_names_that_yaml_reads_as_non_text_are_quoted(tmp_path, name):
    case = gencase.case_from_options(shape=(1, 1, 1, 8), name=name)
    path = write(tmp_path, "g.yaml", gencase.dump_yaml(gencase.document([case])))
    (loaded,) = load_cases([path])
    assert loaded.name == name


def test_import_ttk_output_loads_back_whatever_the_remarks_hold(tmp_path):
    from test_ttk import row, write_csv

    remarks = ["line one\n- name: injected\n  shape: [1, 1, 1, 8]", "\x1b[2J all passed \x1b[0m", "tab\tand\rcr",
               "\u2028separator\u2029", "back\\slash"]
    rows = [row(testcase_name=f"r{n}", remark=remark) for n, remark in enumerate(remarks)]
    rows.append(row(testcase_name="..", remark="dots"))
    doc, notes = ttk.import_ttk(write_csv(tmp_path, rows))
    path = write(tmp_path, "t.yaml", gencase.dump_yaml(doc))
    assert [c.name for c in load_cases([path])] == ["r0", "r1", "r2", "r3", "r4", "ttk_row6"]
    text = path.read_text()
    assert all(line.startswith("# ") for line in text.splitlines() if "injected" in line or "passed" in line)
    assert "\\x1b[2J all passed" in text and "\x1b" not in text       # escaped, not raw


def test_import_ttk_with_no_importable_row_is_an_error(tmp_path):
    from test_ttk import row, write_csv

    csv_path = write_csv(tmp_path, [row(op_name="other_op"), row(is_enabled="False")])
    with pytest.raises(PrmgError, match="no row could be imported \\(2 data row\\(s\\); row 1 \\(ok\\): op_name "
                                        "other_op is not"):
        ttk.import_ttk(csv_path)
    with pytest.raises(PrmgError, match="no row could be imported"):
        case_writer.import_ttk_file(str(csv_path), str(tmp_path / "out.yaml"))
    assert not (tmp_path / "out.yaml").exists()


def test_import_ttk_never_writes_over_its_own_input(tmp_path):
    """-o naming the CSV itself, a symlink to it or a hard link of it: refused by inode before anything is
    read or written, the CSV left whole."""
    csv_path = tmp_path / "ttk.csv"
    shutil.copy(ROOT / "tests" / "data" / "ttk_kernel_inplace_partial_rotary_mul_grad.csv", csv_path)
    before = csv_path.read_bytes()
    (tmp_path / "symlink.csv").symlink_to(csv_path)
    os.link(csv_path, tmp_path / "hardlink.csv")
    for output in (csv_path, tmp_path / "symlink.csv", tmp_path / "hardlink.csv", tmp_path / "." / "ttk.csv"):
        with pytest.raises(PrmgError) as caught:
            case_writer.import_ttk_file(str(csv_path), str(output))
        assert str(caught.value) == f"{output}: cannot write the YAML file: it is the TTK list being imported"
    assert csv_path.read_bytes() == before
    result = prmg_forked("import-ttk", csv_path, "-o", tmp_path / "hardlink.csv")
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and csv_path.read_bytes() == before
    # nor over a file it did not write (a user's own case file was replaced by the import, exit 0); its own, again
    mine, imported = write(tmp_path, "mine.yaml", CASE), tmp_path / "imported.yaml"
    with pytest.raises(PrmgError, match="mine.yaml: cannot write the YAML file: it holds text import-ttk did not "):
        case_writer.import_ttk_file(str(csv_path), str(mine))
    for _ in range(2):
        case_writer.import_ttk_file(str(csv_path), str(imported))
    assert mine.read_text() == CASE and len(load_cases([imported])) == 14


def test_gen_case_never_writes_a_case_file_that_does_not_load_back(tmp_path):
    target = tmp_path / "g.yaml"
    with pytest.raises(PrmgError) as caught:
        case_writer.generate(**{**FLAGS, "inputs": "dy=file:/etc/passwd", "output": str(target)})
    assert "field 'inputs.dy.file': /etc/passwd is outside the case file's folder" in str(caught.value)
    assert str(caught.value).startswith(f"{target}: ") and "\n" not in str(caught.value) and not target.exists()
    np.save(tmp_path / "dy.npy", np.ones((1, 1, 1, 8), np.float32))
    case_writer.generate(**{**FLAGS, "inputs": "dy=file:dy.npy", "output": str(target)})     # there: it loads
    assert load_cases([target])[0].input_spec("dy").args[0] == str(tmp_path / "dy.npy")


def test_gen_case_never_writes_over_a_file_input_of_its_case(tmp_path):
    """-o naming the case's own .npy input, a symlink to it or a hard link of it: refused as import-ttk refuses
    its CSV (writes.check_outputs), the input left whole, with or without --append."""
    np.save(tmp_path / "dy.npy", np.ones((1, 1, 1, 8), np.float32))
    before = (tmp_path / "dy.npy").read_bytes()
    (tmp_path / "symlink.npy").symlink_to(tmp_path / "dy.npy")
    os.link(tmp_path / "dy.npy", tmp_path / "hardlink.npy")
    for output in ("dy.npy", "symlink.npy", "hardlink.npy", "./dy.npy"):
        with pytest.raises(PrmgError) as caught:
            case_writer.generate(**{**FLAGS, "inputs": "dy=file:dy.npy", "name": "g", "output": str(tmp_path / output)})
        assert str(caught.value) == f"{tmp_path / output}: cannot write the case file: it is the dy input of case 'g'"
    with pytest.raises(PrmgError, match="dy.npy: "):
        case_writer.generate(**{**FLAGS, "inputs": "all=file:dy.npy", "output": str(tmp_path / "dy.npy"),
                                "append": True})
    assert (tmp_path / "dy.npy").read_bytes() == before
    result = prmg_forked("gen-case", "--shape", "1,1,1,8", "--inputs", "dy=file:dy.npy", "-o", tmp_path / "symlink.npy")
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and (tmp_path / "dy.npy").read_bytes() == before


def test_import_ttk_reads_only_regular_files(tmp_path):
    os.mkfifo(tmp_path / "fifo.csv")
    with within(10), pytest.raises(PrmgError, match="is a FIFO"):
        ttk.import_ttk(tmp_path / "fifo.csv")


FLAGS = dict(shape="1,1,1,8", cos_shape=None, broadcast=None, partial_slice=None, dtype="float32", cos_dtype=None,
             mode="interleave", seed=None, name=None, inputs=None, expect="pass", standard=None, preset=None,
             output=None, append=False)


def test_gen_case_empty_cos_shape_and_append_to_a_non_case_file_are_one_line(tmp_path):
    with pytest.raises(PrmgError) as caught:
        case_writer.generate(**{**FLAGS, "cos_shape": ""})
    assert str(caught.value) == "--cos-shape: expected integers, got ''"
    for content in (b"\x00\x01binary", b"[1, 2, 3]\n", b"name: [unclosed\n", b"- {name: a, shape: [1]}\n",
                    (json.dumps(record("a").to_dict()) + "\n").encode()):
        target = write(tmp_path, "not_cases.yaml", content)
        with pytest.raises(PrmgError) as caught:
            case_writer.generate(**{**FLAGS, "output": str(target), "append": True})
        assert "\n" not in str(caught.value) and str(target) in str(caught.value)
        assert target.read_bytes() == content                           # left as it was
    os.mkfifo(tmp_path / "fifo.yaml")
    with within(10), pytest.raises(PrmgError, match="is a FIFO"):
        case_writer.generate(**{**FLAGS, "output": str(tmp_path / "fifo.yaml"), "append": True})


def test_gen_case_defaults_agree_with_the_loader(tmp_path):
    generated = case_writer.generate(**{**FLAGS, "shape": "2,16,4,128", "partial_slice": "32,96", "name": "g"})
    (from_flags,) = load_cases([write(tmp_path, "g.yaml", generated)])
    (by_hand,) = load_cases([write(tmp_path, "h.yaml",
                                   "- {name: g, shape: [2, 16, 4, 128], partial_slice: [32, 96]}\n")])
    assert from_flags.cos_shape == by_hand.cos_shape == (1, 1, 1, 64)


def test_gen_case_output_to_a_device_or_fifo_is_one_line(tmp_path):
    with pytest.raises(PrmgError, match="cannot write: no space left on device"):
        case_writer.generate(**{**FLAGS, "output": "/dev/full"})
    os.mkfifo(tmp_path / "fifo.yaml")
    with within(10), pytest.raises(PrmgError, match=r"the case file: is a FIFO \(named pipe\): give a file"):
        case_writer.generate(**{**FLAGS, "output": str(tmp_path / "fifo.yaml")})


def test_gen_case_never_replaces_a_file_it_did_not_write(tmp_path):
    """A new user's own case file given to gen-case as -o (meaning --append) was replaced by the one generated case,
    exit 0: a file whose first line is not gen-case's header is refused, kept byte for byte, for one case and a
    preset; one gen-case wrote (or an empty one) is replaced, and --append adds to the user's."""
    mine = write(tmp_path, "mine.yaml", "# my Llama shapes\n" + CASE)
    for flags, instead in ((FLAGS, "add one case to it with --append"),         # a preset takes no --append
                           ({**FLAGS, "shape": None, "preset": "smoke"}, "write the suite to another file")):
        with pytest.raises(PrmgError, match=r"mine.yaml: cannot write the case file: it holds text gen-case did not "
                                            rf"write, which replacing it would lose \({instead}, or remove"):
            case_writer.generate(**{**flags, "output": str(mine)})
        assert mine.read_text() == "# my Llama shapes\n" + CASE
    generated, empty = tmp_path / "generated.yaml", write(tmp_path, "empty.yaml", "")
    for target in (generated, generated, empty):
        case_writer.generate(**{**FLAGS, "output": str(target)})
    assert load_cases([generated])[0].name == load_cases([empty])[0].name
    case_writer.generate(**{**FLAGS, "name": "added", "output": str(mine), "append": True})
    assert mine.read_text().startswith("# my Llama shapes\n" + CASE) and load_cases([mine])[-1].name == "added"
    # gen-case's own file once --append added to it, or changed by hand, another tool's '# Generated by' and another
    # gen-case command's file: each was replaced, exit 0; so was a preset's file --append had added to
    case_writer.generate(**{**FLAGS, "name": "second", "output": str(generated), "append": True})
    edited = write(tmp_path, "edited.yaml", empty.read_text().replace("cases:", "cases:  # mine"))
    theirs = write(tmp_path, "theirs.yaml", "# Generated by make_llama_cases.py\n" + CASE)
    smoke = tmp_path / "smoke.yaml"
    case_writer.generate(**{**FLAGS, "shape": None, "preset": "smoke", "output": str(smoke)})
    case_writer.generate(**{**FLAGS, "name": "mine", "output": str(smoke), "append": True})
    for target, why in ((generated, "it holds 2 cases (--append added to it)"),
                        (smoke, "case 'mine' in it is not the preset's (--append added it)"),
                        (edited, "it was changed since gen-case wrote it"),
                        (theirs, "it holds text gen-case did not write"),
                        (empty, "gen-case wrote it by another command (Generated by prmg gen-case (prmg_cli/")):
        before = target.read_bytes()
        flags = {**FLAGS, "shape": None, "preset": "smoke"} if target in (empty, smoke) else FLAGS
        with pytest.raises(PrmgError, match=re.escape(f"cannot write the case file: {why}")):
            case_writer.generate(**{**flags, "output": str(target)})
        assert target.read_bytes() == before


def test_a_failed_write_leaves_the_old_file_whole(tmp_path):
    kept = "# Generated by `prmg gen-case --preset smoke`.\ncases: []\n"        # an earlier one (none but the preset's)
    target = write(tmp_path, "keep.yaml", kept)
    script = ("import resource, signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
              "resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64)); sys.argv = ['prmg'] + sys.argv[1:]; "
              "from prmg_cli.cli import main; main()")
    result = subprocess.run([sys.executable, "-c", script, "gen-case", "--preset", "smoke", "-o", str(target)],
                            capture_output=True, text=True, cwd=ROOT, timeout=120)
    one_error_line(result, "cannot write: ")
    assert target.read_text() == kept
    assert [p.name for p in tmp_path.iterdir()] == ["keep.yaml"]



def test_bench_baseline_is_read_bounded_and_checked_before_any_case_is_timed(tmp_path, emulator):
    """--baseline goes through files.read_regular and the results store's JSON parse: a FIFO, /dev/zero, a
    100,000-deep list, a row of the wrong types are one line at once, before the cases are timed (the help's
    --baseline example runs the good path: tests/test_readme.py)."""
    from prmg_cli.commands.bench_kernel import bench_command
    from prmg_cli.commands.bench import Request

    cases = write(tmp_path, "b.yaml", "- {name: b1, shape: [1, 1, 2, 8]}\n")
    os.mkfifo(tmp_path / "fifo.json")
    rows = {"deep.json": "[" * 100_000, "names.json": '{"cases": [{"name": ["b1"], "times_ms": [1]}]}',
            "times.json": '{"cases": [{"name": "b1", "times_ms": [1, -2]}]}', "flat.json": '{"cases": 5}'}
    for name, text in rows.items():
        write(tmp_path, name, text)
    for baseline, fragment in ((tmp_path / "fifo.json", "is a FIFO (named pipe), not a regular file"),
                               (Path("/dev/zero"), "is a character device, not a regular file"),
                               (tmp_path / "deep.json", "nested deeper than 32 levels"),
                               (tmp_path / "names.json", "case 0: field 'name': expected text, got list"),
                               (tmp_path / "times.json", "case 0: field 'times_ms': item 1: expected a time from 0"),
                               (tmp_path / "flat.json", "no list of cases")):
        with within(10), pytest.raises(PrmgError) as caught:
            bench_command(Request(paths=(str(cases),), runner="emulator", baseline=str(baseline)))
        assert str(caught.value).startswith(f"{baseline}: ") and fragment in str(caught.value), str(caught.value)


@pytest.mark.parametrize("option, value", [("repeat", 10**9), ("repeat", 1001), ("repeat", 0), ("warmup", 10**9),
                                           ("warmup", -1)])
def test_bench_repeat_and_warmup_are_bounded_as_run_repeat_is(option, value):
    from prmg_cli.commands.bench_kernel import bench_command
    from prmg_cli.judging.checks.determinism import MAX_REPEAT
    from prmg_cli.commands.bench import Request

    low = 1 if option == "repeat" else 0
    with within(10), pytest.raises(PrmgError) as caught:
        bench_command(Request(paths=("cases/smoke.yaml",), runner="emulator", **{option: value}))
    assert str(caught.value) == f"--{option} must be from {low} to {MAX_REPEAT}, got {value}"


# ----------------------------------------------------------------------------------------------
# Round four (issue 36); every path option against every hostile path: tests/test_fuzz.py


def results_file(folder: Path, name: str = "r.jsonl", shard: str = "", cases=("c",)) -> Path:
    """A results file as a run writes it: a run record (``shard``) and a passed record per case, naming the run."""
    from prmg_cli.reports import store

    path = folder / name
    with store.Writer(path) as writer:
        writer.append(store.RunRecord("r1", shard, list(cases), {}, {}))
        for case in cases:
            writer.append(dataclasses.replace(record(case), run_id="r1", judged_under=store.settings_key({})))
    return path


def test_prmg_report_writes_every_report_it_can_and_names_each_it_cannot(tmp_path):
    """``prmg report --report json:/dev/full --report junit:FILE --report csv:/dev/full``: the JUnit report is
    written and each full-disk report named on its own line (before, the first failure ended the command and the
    reports after it were never written). ``run`` writes its reports the same way (``outputs.write_targets``):
    tests/test_fail_safe.py."""
    junit = tmp_path / "j.xml"
    result = prmg_here("report", results_file(tmp_path), "--report", "json:/dev/full", "--report", f"junit:{junit}",
                       "--report", "csv:/dev/full")
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("prmg: error: ")]
    assert errors == ["prmg: error: /dev/full: cannot write: no space left on device"] * 2, result.stderr
    assert [case.get("name") for case in ET.parse(junit).getroot().iter("testcase")] == ["c"]


@pytest.mark.parametrize("fmt", ["junit", "csv", "markdown", "html"])
def test_a_report_on_standard_output_is_utf8_whatever_the_locale(tmp_path, fmt):
    """A report in a file format sent to standard output under a latin-1 locale (``PYTHONIOENCODING=latin-1``, a CI
    shell's LANG): its bytes were the locale's, so an HTML page declaring UTF-8 was mis-encoded (``×`` as byte 0xD7)
    and ``≤`` became the text ``\\u2264`` in JUnit, CSV and Markdown. A document is UTF-8 as its format says; the
    table, for the terminal, keeps the terminal's encoding."""
    from prmg_cli.reports import store

    path = tmp_path / "r.jsonl"
    with store.Writer(path) as writer:
        writer.append(store.RunRecord("r1", "", ["c"], {}, {}))
        writer.append(CaseResult(name="c", status="failed", message="err 2 ulp > bound 1 ulp (×2), é ≤ ≈", run_id="r1",
                                 judged_under=store.settings_key({})))
    result = subprocess.run([sys.executable, "-m", "prmg_cli.cli", "report", str(path), "--report", fmt],
                            capture_output=True, cwd=ROOT, timeout=120,
                            env={**os.environ, "PYTHONIOENCODING": "latin-1"})
    assert result.returncode == 1, result.stderr
    assert "(×2), é ≤ ≈" in result.stdout.decode("utf-8"), result.stdout[-300:]
    table = subprocess.run([sys.executable, "-m", "prmg_cli.cli", "report", str(path)], capture_output=True, cwd=ROOT,
                           timeout=120, env={**os.environ, "PYTHONIOENCODING": "latin-1"}) if fmt == "csv" else None
    assert table is None or "(\xd72), \xe9 \\u2264 \\u2248".encode("latin-1") in table.stdout


HUGE = "9" * 5000           # int() refuses text of over 4,300 digits (ValueError)


@pytest.mark.parametrize("shard", ["²/3", "١/٣", "1_0/2_0", " 1/2", "+1/2", f"1/{HUGE}"], ids=lambda s: s[:8])
def test_a_shard_in_other_digits_is_refused_by_every_reader_in_one_line(tmp_path, shard):
    """int() and str.isdigit take superscripts, other scripts' digits, signs, spaces and underscores, and int()
    raises on 5,000 digits: a shard is I/N in at most 19 of the digits 0-9 (report, compare and --resume read it;
    --shard, --devices and --supported-modes too)."""
    text = results_file(tmp_path).read_text().replace('"shard": ""', json.dumps({"shard": shard})[1:-1], 1)
    path = write(tmp_path, "odd.jsonl", text)
    cases = write(tmp_path, "c.yaml", CASE)
    for args in (["report", path], ["compare", path, twin(path)],
                 ["run", cases, "--runner", "emulator", "--resume", path]):
        line = one_error_line(prmg_here(*args), str(path), "line 1: field 'shard': expected '' or I/N")
        assert "Traceback" not in line
    for option, value in (("--shard", shard), ("--devices", "٠"), ("--supported-modes", "²"), ("--devices", HUGE),
                          ("--supported-modes", HUGE)):
        one_error_line(prmg_here("run", cases, "--runner", "emulator", option, value), option,
                       *["each of at most 19 digits 0-9"] * (option == "--shard"))     # 1/(20 digits): said why


def test_no_command_writes_over_its_input_however_it_is_named(tmp_path):
    """The data loss of `prmg coverage X.yaml -o X.yaml` (exit 0, the case file replaced by its report): every
    command refuses an output that is one of its inputs -- named as it is, through a symlink or a hard link, or a
    file inside a folder given as input -- before it writes anything (writes.check_outputs)."""
    folder = tmp_path / "suite"
    folder.mkdir()
    case = write(folder, "x.yaml", CASE)
    (tmp_path / "link.yaml").symlink_to(case)
    os.link(case, tmp_path / "hard.yaml")
    for given, output in ((case, case), (case, tmp_path / "link.yaml"), (case, tmp_path / "hard.yaml"),
                          (folder, case), (folder, folder / "." / "x.yaml")):
        one_error_line(prmg_here("coverage", given, "-o", output), str(output), "cannot write the report: it is a "
                                                                               "case file")
        one_error_line(prmg_here("run", given, "--runner", "emulator", "--report", f"json:{output}"), "a case file")
    results = results_file(tmp_path)
    one_error_line(prmg_here("report", results, "--cases", folder, "--report", f"csv:{case}"), "it is a case file")
    one_error_line(prmg_here("report", results, "-o", results), "it is a results file to merge")
    assert case.read_text() == CASE and results.read_text().count("\n") == 2


def test_no_command_writes_a_yaml_report_where_its_case_folder_would_read_it(tmp_path):
    """`prmg coverage d -o d/cov.yaml` wrote its report into the case folder it read, and the next `prmg run d` failed
    on that file: a .yaml/.yml output below a case folder given as input is refused (however the folder is named),
    a file of another kind there, or a YAML file outside, is written."""
    folder = tmp_path / "suite"
    (folder / "sub").mkdir(parents=True)
    write(folder / "sub", "x.yaml", CASE)
    (tmp_path / "link").symlink_to(folder)
    for given, output in ((folder, folder / "cov.yaml"), (folder, folder / "sub" / "new.yml"),
                          (tmp_path / "link", folder / "cov.yaml"), (folder, tmp_path / "link" / "cov.yaml")):
        one_error_line(prmg_here("coverage", given, "-o", output), str(output), f"it lies in the case folder {given}",
                       f"write it outside {given}")
    results = results_file(tmp_path)
    one_error_line(prmg_here("report", results, "--cases", folder, "--report", f"csv:{folder / 'r.yml'}"),
                   "lies in the case folder")
    one_error_line(prmg_here("run", folder, "--runner", "emulator", "--report", f"json:{folder / 'r.yaml'}"),
                   "lies in the case folder")
    assert sorted(path.name for path in folder.rglob("*")) == ["sub", "x.yaml"]
    for output in (folder / "cov.md", tmp_path / "suite.yaml"):      # beside suite/, not in it
        assert prmg_here("coverage", folder, "-o", output).returncode == 0 and output.exists()
    # nor over an existing YAML file, which is taken for a case file (prmg writes no report in YAML): `prmg report
    # r.jsonl -o smoke.yaml` replaced a suite the command did not read
    theirs = write(tmp_path, "theirs.yaml", CASE)
    one_error_line(prmg_here("report", results, "-o", theirs), "cannot write the report: the file exists and is "
                   "named as a case file is (.yaml, .yml): prmg writes no report in YAML, so it is not replaced")
    # ... nor one named otherwise that starts as a case file does, nor another run's results (replaced, exit 0)
    named, other = write(tmp_path, "mine.txt", "# mine\n" + CASE), write(tmp_path, "other.jsonl", results.read_text())
    one_error_line(prmg_here("report", results, "-o", named), "the file exists and starts as a case file does")
    one_error_line(prmg_here("run", theirs, "--runner", "emulator", "--results", named), "starts as a case file")
    notes = write(tmp_path, "notes.json", "{}\n")      # results appended to another file made it neither
    one_error_line(prmg_here("run", theirs, "--runner", "emulator", "--results", notes), "holds no run's results")
    for args in (["report", results, "--report", f"json:{other}"], ["gen-case", "--shape", "1,1,1,8", "-o", other]):
        one_error_line(prmg_here(*args), f"{other}: cannot write the ", "the file exists and holds a run's results")
    assert (theirs.read_text(), named.read_text(), other.read_text(), notes.read_text()) == \
        (CASE, "# mine\n" + CASE, results.read_text(), "{}\n")


def test_a_report_to_dev_stderr_is_written_where_standard_error_stands(tmp_path):
    """``--report json:/dev/stderr 2>> job.log``: the report goes where standard error stands, after the log's earlier
    lines (the file /dev/stderr resolves to, replaced, lost them), and no ``wrote /dev/stderr`` is said of it. An
    empty file named as a case file is not one: a report may be written over it."""
    from prmg_cli import files
    from prmg_cli.writes import wrote

    log, saved = tmp_path / "job.log", os.dup(2)
    log.write_text("before\n")
    try:
        with open(log, "a") as appended:
            os.dup2(appended.fileno(), 2)
        files.write_bytes("/dev/stderr", b"report\n")
        said = wrote(["/dev/stderr"], "1 passed, 0 failed")
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    assert (log.read_text(), said) == ("before\nreport\n", "1 passed, 0 failed")
    (tmp_path / "touched.yaml").touch()
    check_outputs([Output(str(tmp_path / "touched.yaml"))], {})


def test_a_folder_output_never_holds_an_input_nor_follows_a_symlink(tmp_path):
    """--save-failures DIR and dump --out DIR write DIR/CASE/: refused when an input lies in such a folder, or when
    DIR is a symlink, before any case runs."""
    folder = tmp_path / "k"
    folder.mkdir()
    case = write(folder, "k.yaml", "- {name: k, shape: [1, 1, 1, 8]}\n")
    one_error_line(prmg_here("dump", case, "--out", tmp_path), f"{tmp_path}/k would hold a case file")
    one_error_line(prmg_here("run", case, "--runner", "emulator", "--save-failures", tmp_path),
                   "cannot write the failure artifacts:", "would hold a case file")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "linked").symlink_to(tmp_path / "elsewhere")
    for args in (["dump", case, "--out", tmp_path / "linked"],
                 ["run", case, "--runner", "emulator", "--save-failures", tmp_path / "linked"]):
        one_error_line(prmg_here(*args), "it is a symlink; not followed, not written")
    assert list((tmp_path / "elsewhere").iterdir()) == [] and case.read_text().startswith("- {name: k")
    # a folder that is another output (a report, the results file) or an input: its failures had been lost, the
    # run said so only on the failures' lines (ENOTDIR) and exited 1
    for other, says in ((["--report", f"json:{tmp_path / 'r.json'}"], "it is another report"),
                        (["--results", tmp_path / "r.json"], "it is the results file")):
        one_error_line(prmg_here("run", case, "--runner", "emulator", *other, "--save-failures", tmp_path / "r.json"),
                       f"{tmp_path / 'r.json'}: cannot write the failure artifacts: {says}")
    one_error_line(prmg_here("dump", case, "--out", case), "cannot write the dump: it is a case file")
    assert not (tmp_path / "r.json").exists()


def test_doctor_refuses_an_unknown_runner_and_an_op_lib_that_is_no_file(tmp_path):
    one_error_line(prmg_here("doctor", "--runner", "bogus"), "--runner 'bogus': choose one of auto, aclnn, emulator")
    one_error_line(prmg_here("doctor", "--op-lib", tmp_path), f"--op-lib {tmp_path}: is a directory")


# Runs `prmg ARGS` (argv[2:]) through the console script's entry point, sending itself signal argv[1] twice: right
# after `prmg run` has written its reports (when it drops the signals it held) and while the interpreter shuts down.
STOPPED_AS_THE_RUN_ENDS = """
import atexit, os, sys

signum = int(sys.argv[1])
from prmg_cli.commands import suite

dropped = suite.drop_held_signals
suite.drop_held_signals = lambda: (dropped(), os.kill(os.getpid(), signum))
atexit.register(lambda: os.kill(os.getpid(), signum))
sys.argv = ["prmg", *sys.argv[2:]]
from prmg_cli.cli import main
main()
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_stop_as_the_run_ends_leaves_the_exit_code_its_reports_state(tmp_path, signum):
    """Ctrl-C or SIGTERM once the reports are written (the JSON report says exit_code 0) or while the interpreter
    shuts down: the process exits 0 as its reports say, never by the raw signal nor with a traceback."""
    report = tmp_path / "r.json"
    result = subprocess.run([sys.executable, "-c", STOPPED_AS_THE_RUN_ENDS, str(int(signum)), "run",
                             str(write(tmp_path, "c.yaml", CASE)), "--runner", "emulator", "--report",
                             f"json:{report}"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert (result.returncode, result.stderr) == (0, ""), result.stderr
    assert json.loads(report.read_text())["summary"]["exit_code"] == 0


@pytest.mark.parametrize("spec, fragment", [
    ("uniform: [-1e308, 1e308]", "inputs.dy.uniform': hi - lo overflows float64"),
    ("uniform: [-1.7976931348623157e308, 0]", None),           # at float64's edge: drawn (-inf in float32)
    ("normal: [0, 1e308]", "inputs.dy.normal': draws mean + std * Z (|Z| < 40) could overflow float64"),
    ("normal: [1.7e308, 1e306]", "could overflow float64"),
])
def test_a_range_whose_draws_overflow_float64_is_refused_where_the_case_is_read(tmp_path, spec, fragment):
    """validate and gen-case took uniform: [-1e308, 1e308] and run, dump and bench then failed on hi - lo; a range
    is checked where the case is read, so every command refuses it in one line (or draws it, finite)."""
    path = write(tmp_path, "c.yaml", CASE + f"  inputs: {{dy: {{{spec}}}}}\n")
    if fragment is None:
        import warnings

        from prmg_cli.inputs.seeded import make_inputs

        (case,) = load_cases([path])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert not np.isnan(make_inputs(case).dy).any()
        return
    refused([path], fragment)
    option = "dy=" + spec.replace(": [", ":").replace(", ", ":").rstrip("]")           # uniform: [a, b] -> uniform:a:b
    for args in (["validate", path], ["dump", path, "--out", tmp_path / "out"], ["bench", path, "--runner", "emulator"],
                 ["gen-case", "--shape", "1,1,1,8", "--inputs", option]):
        one_error_line(prmg_here(*args), "could overflow float64" if "normal" in spec else "overflows float64")


def test_draws_beyond_a_dtype_round_to_infinity_without_numpy_warnings(tmp_path):
    """normal: [0, 1e306] for float32 (or a float16 range past 65504): the draws beyond the dtype's range round to
    +-inf, its IEEE rounding, and numpy prints no overflow warning on the way, nor when prmg dump makes their golden
    (inf - inf is NaN there, as in the judge)."""
    import warnings

    from prmg_cli.inputs.seeded import make_inputs

    path = write(tmp_path, "c.yaml", "- {name: n, shape: [1, 1, 1, 64], inputs: {dy: {normal: [0, 1e306]}}}\n"
                                     "- {name: h, shape: [1, 1, 1, 64], dtype: float16, inputs: {dy: {uniform: "
                                     "[-1e6, 1e6]}}}\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for case in load_cases([path]):
            dy = make_inputs(case).dy
            assert np.isinf(dy).any() and not np.isnan(dy).any()
        result = prmg_here("dump", path, "--out", tmp_path / "out")
    assert (result.returncode, result.stderr) == (0, ""), result.stderr


def test_a_stored_definition_is_one_case_and_a_run_record_names_at_most_a_run_of_cases(tmp_path):
    """A definition holding a sweep was expanded again for a report's coverage line (193,600 cases a record, 150 s
    for a 36 KB file); a run record naming 1,000,000 cases took 7.8 GB to report. Both are refused where the file
    is read, in one line naming the line and the field."""
    from prmg_cli.vocab import MAX_RUN_CASES

    lines = results_file(tmp_path).read_text().splitlines()
    record = json.loads(lines[1])
    record["definition"] = {"name": "s_{index}", "shape": [1, 1, 1, 8], "sweep": {"seed": list(range(440)),
                                                                                  "partial_slice": [[0, 8]] * 440}}
    swept = write(tmp_path, "swept.jsonl", f"{lines[0]}\n{json.dumps(record)}\n")
    run = json.loads(lines[0])
    run["selection"] = [f"c{index}" for index in range(MAX_RUN_CASES + 1)]
    named = write(tmp_path, "named.jsonl", json.dumps(run) + "\n")
    with within(20):
        one_error_line(prmg_here("report", swept), "line 2: field 'definition': a case definition holds no sweep")
        one_error_line(prmg_here("report", named, "--report", "json"),
                       f"line 1: field 'selection': {MAX_RUN_CASES + 1} case names, more than the {MAX_RUN_CASES}")


def test_a_results_file_is_read_in_bounded_memory(tmp_path, monkeypatch):
    """Only the newest record of a case is kept, keys and short texts once for all records: a file of records as a
    run writes them (each case twice) takes little more than its bytes to read; a file of more cases than
    MAX_FILE_CASES (or of run records naming more than MAX_FILE_SELECTED, or selecting more than MAX_FILE_CASES
    different cases: 2,000,000 not_run records ran out of 2 GiB) is refused as it is read; the not_run records share
    one text a run; and running out of memory anyway (under a ulimit) is one line, not a traceback."""
    from prmg_cli.reports import store

    path = tmp_path / "many.jsonl"
    path.write_bytes(store.encode(store.RunRecord("r1", "", [f"c{index}" for index in range(1500)], {}, {})) + b"".join(
        store.encode(dataclasses.replace(record(f"c{index % 1500}"), metrics={"max_err_ratio": 0.5, "bad": 0},
                                         definition={"name": f"c{index % 1500}", "shape": [1, 1, 1, 8]},
                                         timings={"inputs": 0.5, "kernel": 0.1}, judged_under="k" * 64))
        for index in range(3000)))
    stored, used = read_traced(path)
    assert (stored.records, len(stored.results)) == (3000, 1500)
    assert used < 1.3 * path.stat().st_size, (used, path.stat().st_size)       # 3 without sharing nor superseding
    from prmg_cli.reports import merge

    missing = [r for r in merge.merge([store.read(write(tmp_path, "sel.jsonl", path.read_text().splitlines()[0]))]
                                      ).results]
    assert len(missing) == 1500 and len({id(r.message) for r in missing}) == 1     # one text a run, not a case
    monkeypatch.setattr(store, "MAX_FILE_CASES", 1000)
    with pytest.raises(PrmgError, match="line 1: its run records select more than 1000 different cases"):
        store.read(path)                # each would be reported (not_run if no record): bounded as the records are
    results_only = write(tmp_path, "results_only.jsonl", "\n".join(path.read_text().splitlines()[1:]) + "\n")
    with pytest.raises(PrmgError, match="line 1001: results of more than 1000 cases in one file"):
        store.read(results_only)
    monkeypatch.setattr(store, "MAX_FILE_SELECTED", 1000)
    with pytest.raises(PrmgError, match="line 1: its run records name more than 1000 cases together"):
        store.read(path)

    def exhausted(*args, **kwargs):
        raise MemoryError()

    monkeypatch.setattr(store, "read", exhausted)
    one_error_line(prmg_here("report", path), "out of memory")


def test_failed_records_with_their_error_maps_are_read_in_bounded_memory(tmp_path):
    """A failed case's error map holds up to 32 x 64 scores, 14 KB of text that lists of floats made 65 KB: a 500 MB
    file of such records (under the 512 MiB the reader takes) ran out of 2 GiB. The scores are held as arrays
    (``results.ScoreRows``): the file is read in under twice its size, and written back as it was read."""
    from prmg_cli.judging import diagnosis
    from prmg_cli.reports import store
    from prmg_cli.results import ScoreRows

    score = np.random.default_rng(1).lognormal(0, 3, (2, 16, 1, 64))
    error_map = {**diagnosis.error_map(score, 0, 64), "metric": "error/budget"}
    error_map["values"][0][0] = None
    path = tmp_path / "maps.jsonl"
    path.write_bytes(b"".join(store.encode(dataclasses.replace(record(f"c{index}"), status="failed", message="m",
                                                               error_map=error_map)) for index in range(200)))
    stored, used = read_traced(path)
    assert used < 2 * path.stat().st_size, (used, path.stat().st_size)         # 4.6 with lists of floats
    first = stored.results[0]
    assert isinstance(first.error_map["values"], ScoreRows) and first.error_map == error_map
    assert store.encode(first) == store.encode(dataclasses.replace(record("c0"), status="failed", message="m",
                                                                   error_map=error_map))


def test_an_infinite_score_of_a_stored_error_map_is_reported_in_json(tmp_path):
    """A stored error map may hold an infinite score (a result of inf against a finite golden): read back as
    ``ScoreRows``, it reached the JSON report's writer as a float it refuses (ValueError, exit 3); it is written as
    the other non-finite values are, ``"inf"``."""
    from prmg_cli.judging import diagnosis
    from prmg_cli.reports import store

    error_map = {**diagnosis.error_map(np.ones((1, 2, 1, 8)), 0, 8), "metric": "error/budget"}
    error_map["values"][0][0] = math.inf
    path = tmp_path / "inf.jsonl"
    path.write_bytes(store.encode(dataclasses.replace(record("c0"), status="failed", message="m",
                                                      error_map=error_map)))
    report = prmg_here("report", path, "--report", f"json:{tmp_path / 'r.json'}")
    assert report.returncode == 1, report.stderr
    assert '"inf"' in (tmp_path / "r.json").read_text()


def test_resume_into_another_results_file_writes_the_whole_run_there(tmp_path):
    """run --resume A --results B reported the verdicts taken from A but wrote only a run record to B, so `prmg report
    B` showed them not run: B gets a copy of each result taken, and holds the whole run."""
    cases = write(tmp_path, "ab.yaml", "- {name: a, shape: [1, 1, 1, 8]}\n- {name: b, shape: [1, 1, 2, 8]}\n")
    first, whole = tmp_path / "A.jsonl", tmp_path / "B.jsonl"
    assert prmg_here("run", cases, "--runner", "emulator", "--results", first, "-k", "a").returncode == 0
    before = first.read_bytes()
    resumed = prmg_here("run", cases, "--runner", "emulator", "--resume", first, "--results", whole)
    assert resumed.returncode == 0 and "1 result of" in resumed.stderr and first.read_bytes() == before
    report = prmg_here("report", whole, "--report", "json")
    assert report.returncode == 0
    assert [(case["name"], case["status"]) for case in json.loads(report.stdout)["cases"]] == [("a", "passed"),
                                                                                               ("b", "passed")]


def test_gen_case_append_adds_text_and_keeps_every_byte_of_the_file(tmp_path):
    """gen-case -o FILE --append rewrote the whole file, dropping the user's comments: the new case is added as text
    (into a block list at its indentation, into a flow list before its bracket, after comments only), the file's line
    ends kept; a layout it cannot add to as text is refused, the file left as it was."""
    files = {"block.yaml": "# my suite\ndefaults: {dtype: float32}   # keep\ncases:\n  # first\n  - name: a\n"
                           "    shape: [1, 1, 1, 8]   # note\n\n# trailing\n",
             "flow.yaml": "cases: [{name: a, shape: [1, 1, 1, 8]}]  # flow\ndefaults: {seed: 3}\n",
             "crlf.yaml": "- name: a\r\n  shape: [1, 1, 1, 8]",
             "comments.yaml": "# nothing yet\n",
             "middle.yaml": "cases:\n- name: a\n  shape: [1, 1, 1, 8]\ndefaults:\n  seed: 5\n"}
    for name, text in files.items():
        path = write(tmp_path, name, text)
        result = prmg_here("gen-case", "--shape", "1,1,1,16", "--name", "new", "-o", path, "--append")
        assert result.returncode == 0, result.stderr
        before, after = text.encode(), path.read_bytes()
        head = next((at for at, (old, new) in enumerate(zip(before, after)) if old != new), len(before))
        tail = len(before) - head
        assert after[:head] + after[len(after) - tail:] == before, name        # one insertion, every byte kept
        assert [case.name for case in load_cases([path])][-1] == "new"
        inserted = after[head:len(after) - tail].decode()
        assert "new" in inserted and ("\r\n" in inserted) == ("\r\n" in text), (name, inserted)
    for layout in ("cases: [{name: a, shape: [1, 1, 1, 8]}, ]\n", "null\n...\n", "~\n"):    # a document of null: exit 3
        trailing = write(tmp_path, "trailing.yaml", layout)
        one_error_line(prmg_here("gen-case", "--shape", "1,1,1,16", "-o", trailing, "--append"),
                       "cannot add the case to this file's layout as text")
        assert trailing.read_text() == layout


@pytest.mark.parametrize("args, code, fragment", [
    (["bench", "{case}", "--runner", "emulator", "--device", "4294967296"], 2, "--device must be from 0 to 2147483647"),
    (["bench", "{case}", "--runner", "emulator", "-k", "nomatch"], 5, "prmg: no cases selected to time"),
    (["coverage", "{case}", "--op", "forward", "--fail-under", "50"], 5, "prmg: no cases selected (check --op)"),
    (["gen-case", "--preset", "smoke", "--name", "x", "--seed", "3", "--dtype", "float32"], 2,
     "--preset writes a whole suite: it takes no --dtype, --seed, --name"),
    (["run", "{case}", "--runner", "emulator", "--env", "PRMG_EMU_FAULT_SHAPE=1,1,1"], 2,
     "PRMG_EMU_FAULT_SHAPE must be B,S,N,D (four integers >= 0), got '1,1,1'"),
    (["run", "{case}", "--runner", "emulator", "--env", "PRMG_EMU_FAULT_SHAPE= 1,1,1,8"], 2, "PRMG_EMU_FAULT_SHAPE"),
    (["run", "{case}", "--runner", "emulator", "--env", "PRMG_EMU_FAULT_SHAPE=99999999999999999999,1,1,8"], 2,
     "PRMG_EMU_FAULT_SHAPE"),                                   # strtoll reads INT64_MAX: a shape no case has
    (["run", "{case}", "--runner", "emulator", "--env", "PRMG_EMU_DEVICES=2x"], 2,
     "PRMG_EMU_DEVICES must be a device count from 0 to 64, got '2x'"),
    (["run", "{case}", "--runner", "emulator", "--env", "PRMG_EMU_DEVICES=65"], 2, "PRMG_EMU_DEVICES"),
    (["run", "{case}", "--runner", "emulator", "--env", "PRMG_EMU_MODES=1,2 "], 2,
     "PRMG_EMU_MODES must be a comma list of the modes 0..3 (e.g. 0,1), got '1,2 '"),
    (["run", "{case}", "--runner", "emulator", "--env", "PRMG_EMU_FAULT_DEVICE=-1"], 2, "PRMG_EMU_FAULT_DEVICE"),
    (["run", "{case}", "--runner", "emulator", "--env", "PRMG_EMU_DEVICE_MEMORY=64GB"], 2,
     "PRMG_EMU_DEVICE_MEMORY must be a byte count, or one with a K, M or G suffix (e.g. 64G), got '64GB'"),
    (["run", "{case}", "--runner", "emulator", "--env", "PRMG_EMU_BEYOND_GUARD=x:64"], 2,
     "PRMG_EMU_BEYOND_GUARD must be TENSOR:BYTES, TENSOR dy, cos, sin or workspace (e.g. cos:4096, or dy:-64 before "
     "dy), got 'x:64'"),
    (["run", "{case}", "--runner", "emulator", "--supported-modes", ""], 2,         # an unset variable: not today's
     "--supported-modes: unknown mode '' in ''"),
    (["dump", "{case}", "--out", "{case}.out", "-k", "nothing"], 5, "prmg: no cases selected (check -k)"),
    (["bench", "{case}", "--runner", "geir"], 2, "--runner geir: prmg bench times the aclnn launch"),  # no note first
    # a mistaken option is said before the cases are read: a selection of none exited 5 with it unsaid
    (["run", "{case}", "-k", "nomatch", "--runner", "geri"], 2, "--runner 'geri' (did you mean 'geir'?)"),
    (["run", "{case}", "-k", "nomatch", "--max-memory", "9" * 400], 2,         # float infinity: int() raised
     "--max-memory must be under 2**63 bytes (8 EiB)"),                          # (run_e2e: 'lots', "look like")
    (["run", "{case}", "-k", "nomatch", "--op-lib", "{case}.so"], 2, "--op-lib"),
    (["bench", "{case}", "-k", "nomatch", "--soc", "bogus"], 2, "--soc 'bogus' is not in the peak bandwidth table"),
    (["bench", "{case}", "-k", "nomatch", "--baseline", "{case}.json"], 2, "no such file"),
    (["run", "{case}", "--runner", "emulator", "--env", "PRMG_EMU_BUILD=latest"], 2,        # 561000 at every call:
     "PRMG_EMU_BUILD must be base, e9f0541c or 2b888cdb (the upstream build the emulator follows), got 'latest'"),
    (["run", "{case}", "--runner", "emulator", "--env", "PRMG_EMU_SOC=" + "A" * 128], 2,    # cut: the header had none
     "PRMG_EMU_SOC must be a chip's name of at most 127 printable ASCII characters"),
])
def test_smaller_flag_and_variable_checks(tmp_path, args, code, fragment):
    """Issue 36's smaller list: each of these once wrapped, exited 0, or was ignored or misread."""
    case = write(tmp_path, "c.yaml", CASE)
    args = [arg.format(case=case) for arg in args]
    env = dict(arg.split("=", 1) for arg in args[args.index("--env") + 1:]) if "--env" in args else {}
    args = args[:args.index("--env")] if "--env" in args else args
    result = prmg_here(*args, env=env)
    if code == 2:
        one_error_line(result, fragment)
    else:
        assert result.returncode == code and result.stderr.startswith(fragment) and "Traceback" not in result.stderr


CLOSED, FULL = "closed", "/dev/full"


@pytest.mark.parametrize("stdout", [CLOSED, FULL])
@pytest.mark.parametrize("args", [["--help"], ["run", "--help"], ["--version"], ["validate", "{case}"],
                                  ["run", "{case}", "--runner", "emulator", "--results", "{results}"]],
                         ids=["help", "run-help", "version", "validate", "run"])
def test_a_closed_or_full_standard_output_is_one_error_line(args, stdout, tmp_path):
    """Standard output closed when prmg starts (``>&-``: Python's sys.stdout is None) or full (``/dev/full``) is one
    ``prmg: error: cannot write to standard output`` line and exit 2 for every command, ``--help`` and ``--version``
    too: a closed one was an AttributeError (exit 3, or 1 with a traceback), a full one exit 3 under click's echo.
    A run stops at its header, before any case ran (its results file holds no result, none lost)."""
    case = tmp_path / "c.yaml"
    case.write_text("- {name: one, shape: [1, 1, 2, 8]}\n")
    results = tmp_path / "r.jsonl"
    argv = [word.format(case=case, results=results) for word in args]
    with open(os.devnull if stdout == CLOSED else stdout, "w") as out:
        result = subprocess.run([sys.executable, "-m", "prmg_cli.cli", *argv], stdout=out, stderr=subprocess.PIPE,
                                text=True, timeout=120, preexec_fn=(lambda: os.close(1)) if stdout == CLOSED else None)
    errors = [line for line in result.stderr.splitlines() if line.startswith("prmg: error:")]
    assert result.returncode == 2 and len(errors) == 1 and "Traceback" not in result.stderr, result.stderr
    assert errors[0].startswith("prmg: error: cannot write to standard output: "), result.stderr
    if "--results" in args:
        assert not results.exists() or '"prmg.result/' not in results.read_text()


@pytest.mark.parametrize("args, code", [(["validate", "{case}"], 0), (["validate", "{missing}"], 2),
                                        (["run", "{case}", "--runner", "emulator"], 0)])
def test_a_closed_standard_error_or_input_keeps_the_exit_code(args, code, tmp_path):
    """Standard error and input closed when prmg starts (``2>&- <&-``): the exit code is the command's (a note or
    an error line has nowhere to go): a run with stderr closed was exit 1 with nothing said, a missing file exit 1."""
    case = tmp_path / "c.yaml"
    case.write_text("- {name: one, shape: [1, 1, 2, 8]}\n")
    argv = [word.format(case=case, missing=tmp_path / "none.yaml") for word in args]
    result = subprocess.run([sys.executable, "-m", "prmg_cli.cli", *argv], stdout=subprocess.PIPE, text=True,
                            timeout=120, preexec_fn=lambda: (os.close(0), os.close(2)))
    assert result.returncode == code, result.stdout
    assert code or " ".join(result.stdout.split()).endswith(("1 passed, 0 failed", "supporting interleave)"))


def test_compare_writes_its_report_to_a_file_or_standard_output_as_run_does(tmp_path):
    """``prmg compare --report FORMAT[:FILE]``, as run's and report's: ``json:-`` is standard output (it was refused:
    'got json:-'), ``markdown:FILE`` the file, standard output then its summary line; a results file compared is
    never the output (one error line, the file untouched), nor is a FILE left empty."""
    a = tmp_path / "a.jsonl"
    prmg_forked("run", ROOT / "cases" / "smoke.yaml", "-k", "worked_example", "--runner", "emulator", "--results", a)
    before, b = a.read_bytes(), twin(a)
    piped = prmg_forked("compare", a, b, "--report", "json:-")
    assert piped.returncode == 0 and json.loads(piped.stdout)["summary"]["regressions"] == 0, piped.stderr
    for named in (("compare", a, b, "--report", "json:/dev/stdout"), ("report", a, "--report", "json:/dev/stdout")):
        piped = prmg_forked(*named)                 # /dev/stdout is standard output (a symlink to it was refused)
        assert piped.returncode == 0 and json.loads(piped.stdout)["summary"], piped.stderr
    piped = prmg_forked("report", a, "--report", "json:/dev/stderr")    # standard error (a log file: not replaced)
    assert piped.returncode == 0 and json.loads(piped.stderr)["summary"] and piped.stdout == "1 passed, 0 failed\n"
    ran = prmg_forked("run", ROOT / "cases" / "worked_example.yaml", "--runner", "emulator", "--report",
                      "json:/dev/stderr")             # the one report, no not-finished one before it (two documents)
    assert ran.returncode == 0 and json.loads(ran.stderr[ran.stderr.index("{"):])["summary"]["passed"] == 1, ran.stderr
    with pytest.raises(PrmgError, match="cannot write the dump: it is a symlink"):     # a folder: not written there
        check_outputs([Output("/dev/stderr", "dump", FOLDER)], {})
    written = prmg_forked("compare", a, b, "--report", f"markdown:{tmp_path / 'c.md'}")
    assert written.returncode == 0 and written.stdout == (f"wrote {tmp_path / 'c.md'}: 0 regressions (none); 0 fixed; "
                                                          f"1 case in A, 1 in B\n"), written.stdout
    assert (tmp_path / "c.md").read_text().startswith("# prmg compare")
    for spec in (f"json:{a}", "json:"):
        refused = prmg_forked("compare", a, b, "--report", spec)
        assert refused.returncode == 2 and refused.stderr.count("prmg: error:") == 1, refused.stderr
    assert a.read_bytes() == before


@pytest.mark.parametrize("args", [
    ("compare", "a.jsonl", "a.jsonl", "--report", "json:one.json", "--report", "markdown:two.md"),
    ("run", "w.yaml", "--report", "json", "-o", "one.json", "-o", "two.json"),
    ("gen-case", "--shape", "1,1,1,8", "-o", "one.yaml", "--output", "two.yaml"),
    ("coverage", "w.yaml", "--report", "json", "--report", "table"),
])
def test_an_option_of_one_value_given_twice_is_refused_not_the_first_dropped(tmp_path, args):
    """click keeps the last of an option given twice: compare's two --report wrote only the second (its --report takes
    one, run's and report's are repeatable) and ``-o a -o b`` only b, without a word. One error line naming the
    option, exit 2, nothing written; a flag and a repeatable option may still be repeated."""
    shutil.copy(ROOT / "cases" / "worked_example.yaml", tmp_path / "w.yaml")
    (tmp_path / "a.jsonl").write_text("")
    refused = prmg_here(*args, cwd=tmp_path)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert refused.stderr.startswith(f"prmg: error: prmg {args[0]}: Option ") and "given more than once" in \
        refused.stderr
    assert not list(tmp_path.glob("one.*")) and not list(tmp_path.glob("two.*"))
    fine = prmg_here("coverage", "w.yaml", "--wide", "--wide", cwd=tmp_path)
    assert fine.returncode == 0, fine.stderr
    both = prmg_here("report", ROOT / "tests" / "data" / "missing.jsonl", "--report", "json:one.json", "--report",
                     "csv:two.csv", cwd=tmp_path)
    assert "given more than once" not in both.stderr
