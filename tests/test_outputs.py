"""Outputs: every format parses with a standard reader and says what the results say; the table fits."""

from __future__ import annotations

import csv
import html
import io
import json
import re
import xml.etree.ElementTree as ET
from dataclasses import replace

import numpy as np
import pytest

from conftest import ROOT
from prmg_cli.cases.loader import Case, Expect
from prmg_cli.commands import bench_kernel
from prmg_cli.errors import PrmgError
from prmg_cli.reports import outputs
from prmg_cli.reports.outputs import csvreport, jsonreport, junit, listing, markdown, short_names, table
from prmg_cli.reports.outputs.labels import format_header
from prmg_cli.reports.progress import Progress
from prmg_cli.results import CaseResult, RunInfo, summary_counts, summary_line, visible

EMULATOR = RunInfo(runner="emulator", location="/root/.cache/prmg/emulator-ab12", supported_modes=(1,))
TOOLKIT = RunInfo(runner="aclnn", location="/usr/local/Ascend/ascend-toolkit/latest",
                  op_library="/usr/local/Ascend/ascend-toolkit/latest/lib64/libopapi_transformer.so",
                  supported_modes=(0, 1, 2, 3), devices=(0, 3), standard="single_bm", version="9.9.9")


def passed(name="ok_case", **extra):
    fields = dict(metrics={"max_err_ratio": 0.25, "bad_share": 0.0, "third": 7}, kernel_ms=0.0123,
                  duration_s=0.5, source="cases/basic.yaml", dtype="float16", cos_dtype="float32",
                  shape=[2, 4, 8, 128], cos_shape=[1, 4, 1, 64], rotary_mode="interleave",
                  partial_slice=[7, 71], standard="default", tags=["smoke"])
    fields.update(extra)
    return CaseResult(name=name, status="passed", **fields)


def failed(name="bad_case", **extra):
    fields = dict(message="3 elements over budget", metrics={"key": "err/budget 4.1"},
                  details=["worst (0, 1, 2, 17): expected 1.5 actual 2.5", "errors only on odd lanes"],
                  source="cases/faults.yaml", dtype="bfloat16", cos_dtype="bfloat16",
                  shape=[1, 2, 1, 64], cos_shape=[1, 2, 1, 64], rotary_mode="half",
                  partial_slice=[0, 64], standard="exact", duration_s=0.25)
    fields.update(extra)
    return CaseResult(name=name, status="failed", **fields)


def errored(name="crash_case", **extra):
    return CaseResult(name=name, status="error", message="worker died (SIGSEGV)", error_code=507015,
                      details=["launch of case 3"], **extra)


def skipped(name="skip_case", **extra):
    return CaseResult(name=name, status="skipped", message="mode quarter not supported", **extra)


def mixed():
    return [passed("p1"), passed("p2"), failed("f1"), errored("e1"), skipped("s1"), skipped("s2")]


# --- summary -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("results, line", [
    ([], "0 passed, 0 failed"),
    ([passed()], "1 passed, 0 failed"),
    ([passed(), failed()], "1 passed, 1 failed"),
    ([passed(), skipped(), skipped()], "1 passed, 0 failed, 2 skipped"),
    ([failed(), errored()], "0 passed, 1 failed, 1 error"),
    ([errored(), errored()], "0 passed, 0 failed, 2 errors"),
    (mixed(), "2 passed, 1 failed, 1 error, 2 skipped"),
    ([skipped(), skipped()], "0 passed, 0 failed, 2 skipped (every case was skipped)"),
    ([CaseResult("x", "xfailed"), CaseResult("y", "xpassed"), CaseResult("z", "not_run")],
     "0 passed, 0 failed, 1 xfailed, 1 xpassed, 1 not run"),
    ([passed(warnings=["vacuous"])], "1 passed, 0 failed, 1 warning"),
])
def test_summary_line_names_only_nonzero_extras(results, line):
    assert summary_line(results) == line


def test_summary_counts():
    assert summary_counts(mixed()) == {"passed": 2, "failed": 1, "error": 1, "skipped": 2, "xfailed": 0,
                                       "xpassed": 0, "not_run": 0, "total": 6, "warnings": 0}


def test_unknown_status_is_refused():
    with pytest.raises(ValueError, match="weird"):
        summary_counts([CaseResult("weird", "maybe")])


# --- header and table --------------------------------------------------------------------------------

def unwrapped(text: str) -> str:
    """``text`` with every run of white space (the wrapping of long lines included) as one space."""
    return " ".join(text.split())


def test_emulator_header_says_results_are_not_from_an_npu():
    header = unwrapped(format_header(EMULATOR))
    assert "emulator (host build at /root/.cache/prmg/emulator-ab12)" in header
    assert "host emulator, not an NPU" in header
    assert "target: rotary modes interleave" in header


def test_toolkit_header_names_toolkit_operator_library_devices_standard_version():
    header = unwrapped(format_header(TOOLKIT))
    assert "aclnn toolkit at /usr/local/Ascend/ascend-toolkit/latest" in header
    assert f"operator from {TOOLKIT.op_library}" in header
    assert "rotary modes half, interleave, quarter, interleave-half" in header
    assert "0, 3" in header and "single_bm" in header and "9.9.9" in header
    assert "NPU" not in header
    lines = format_header(TOOLKIT).splitlines()     # the version's line reads as no message of prmg's ("prmg: ...")
    assert lines[-1].startswith("prmg version: ") and not any(line.startswith("prmg: ") for line in lines)


def test_header_names_the_checks_that_ran_and_the_results_resume_took():
    """--check, the case files' checks:, --no-golden and golden: false each leave a line in every format's
    header (the table's, Markdown's, JSON's summary); --resume says how many results it took."""
    from dataclasses import replace

    assert "checks:" not in format_header(EMULATOR, [passed()]) and "resumed" not in format_header(EMULATOR)
    info = replace(EMULATOR, checks=("adjoint", "roundtrip"), resumed=1)
    results = [passed(checks=["determinism"]), passed("p2", checks=["determinism", "sample"], golden=False)]
    header = unwrapped(format_header(info, results))
    assert ("checks: adjoint, roundtrip on every pass case (--check); determinism, sample on 2 cases (their "
            "checks:); 1 case judged without the golden (golden: false)") in header
    assert "resumed: 1 result taken from the --resume file, not run again" in header
    no_golden = unwrapped(format_header(replace(info, golden=False, resumed=3)))
    assert "no golden (--no-golden): pass cases judged by their checks alone" in no_golden and "3 results" in no_golden
    assert "**checks**: adjoint, roundtrip on every pass case" in markdown.render(results, info)
    summary = json.loads(jsonreport.render(results, info))["summary"]
    assert summary["checks"] == ["adjoint", "roundtrip", "determinism", "sample"] and summary["golden"] is False
    assert f"checks: {summary['checks_header']}" in header
    assert "golden" not in json.loads(jsonreport.render([passed()], EMULATOR))["summary"].get("checks_header", "")


@pytest.mark.parametrize("results", [[], [passed()], [failed()], [skipped()], [errored()], mixed()])
@pytest.mark.parametrize("verbose", [False, True])
def test_last_line_of_table_is_exactly_the_summary(results, verbose):
    lines = table.render(results, EMULATOR, verbose=verbose).splitlines()
    assert lines[-1] == summary_line(results)
    assert lines[-2] == ""


def test_the_exit_note_ends_the_summary_line_or_stands_above_it_never_dropped():
    """A merge's exit 1 besides its cases (MIXED SETTINGS, STRICT) ends the summary line, or is the line above it
    when the two do not fit the width: the last line stays exactly the summary."""
    info = replace(EMULATOR, mixed=("faults",), warned=("a warning",))
    assert table.render([passed()], info, width=80).splitlines()[-1] == \
        "1 passed, 0 failed; exit 1: MIXED SETTINGS, STRICT"
    many = mixed() + [CaseResult("x", "xfailed"), CaseResult("y", "xpassed"), CaseResult("z", "not_run")]
    assert table.render(many, info, width=80).splitlines()[-2:] == ["exit 1: MIXED SETTINGS, STRICT",
                                                                    summary_line(many)]
    assert table.render([passed()], EMULATOR, width=80).splitlines()[-2:] == ["", "1 passed, 0 failed"]


def test_table_row_cells_and_shared_columns():
    raw = passed("raw_case", metrics={"alpha": 0.25, "bad_share": 0.0, "third": 7})
    text = table.render([passed(), failed(), raw], EMULATOR, verbose=True, wide=True)
    row = next(line for line in text.splitlines() if line.startswith("PASS     ok_case"))
    for cell in ("fp16/fp32", "2x4x8x128", "1S1D", "interleave", "[7, 71)", "default",
                 "err ≤ budget (x0.25)", "PASS", "0.012 ms"):      # no key metric written: today's text of it
        assert cell in row
    row = next(line for line in text.splitlines() if line.startswith("PASS     raw_case"))
    assert "alpha=0.25 bad_share=0" in row and "third" not in row      # no metric a judge knows: the first two
    bad_row = next(line for line in text.splitlines() if line.startswith("FAIL     bad_case"))
    assert bad_row.rstrip().endswith("err/budget 4.1")   # the metric last
    assert "bf16/" not in bad_row                        # same dtype for cos: one label
    assert " - " in bad_row                              # no kernel time
    one_mode = unwrapped(table.render([passed("a"), passed("b")], EMULATOR))
    assert "all cases: op grad, mode interleave, dtypes fp16/fp32, shape 2x4x8x128, cos 1S1D, slice [7, 71), " \
           "standard default" in one_mode


def test_table_fits_100_columns_and_wide_keeps_everything():
    long = [passed("full.bcast.interleave_fp32_bf16_2x3x4x16_BSND_s0-16_and_then_some_more_words",
                   rotary_mode=mode, cos_shape=[1, 4, 8, 64], standard=standard, key_metric="err/budget 0.99997")
            for mode, standard in ((0, "default"), (3, "double_thousandth"))] + [failed()]
    lines = table.render(long, EMULATOR).splitlines()
    body = lines[lines.index("") + 1:]
    assert max(len(line) for line in body if not line.startswith("FAIL ")) <= 100
    assert any("…" in line for line in body) and "ilv-half" in "\n".join(body)
    wide = table.render(long, EMULATOR, wide=True)
    assert long[0].name in wide and "kernel time" in wide and "double_thousandth" in wide


@pytest.mark.parametrize("columns", [30, 34, 40])
def test_shortened_names_of_the_shipped_cases_stay_unique_and_keep_their_modes(columns):
    """Every shipped name shortened to ``columns`` (the room an 80- to 140-column table leaves): unique, whole words
    of the name in its order, its first word; a rotary mode or dtype that tells it from another name is never
    cut (it is among the words that tell it apart)."""
    from prmg_cli.cases.loader import load_cases

    shipped = [case.name for case in load_cases([ROOT / "cases"])]
    shown, complete = short_names.short_names(shipped, columns, (short_names.MODE_WORDS, short_names.DTYPE_WORDS))
    assert complete and len(set(shown.values())) == len(set(shipped)) > 500          # never two names to one text
    parts = {name: re.split(r"[._]", name) for name in shipped}
    for name, text in shown.items():
        assert len(text) <= columns and (text == name or "…" in text)
        if text == name:
            continue
        head, _, tail = text.partition("…")
        if "…" in tail or not name.startswith(head) or not name.endswith(tail) or head == parts[name][0]:
            words = [word for word in re.split(r"[._…]", text) if word]         # whole words, in order
            assert text.startswith("…") or words[0] == parts[name][0], (name, text)
            assert _in_order(words, parts[name]), (name, text)
        else:             # too long for the words that tell it apart: cut in the middle
            words = [word for word in parts[name] if word in text]
        for other in shipped:     # a name differing from another only in a mode or dtype word keeps that word
            if other != name and len(parts[other]) == len(parts[name]):
                differ = [i for i, (a, b) in enumerate(zip(parts[name], parts[other])) if a != b]
                if len(differ) == 1 and parts[name][differ[0]] in short_names.MODE_WORDS | short_names.DTYPE_WORDS:
                    assert parts[name][differ[0]] in words, (name, text, other)


def _in_order(words: list[str], parts: list[str]) -> bool:
    """Whether ``words`` are some of ``parts``, in their order."""
    remaining = iter(parts)
    return all(word in remaining for word in words)


def test_shortened_names_keep_the_mode_and_dtype_their_column_no_longer_shows():
    given = ["cover.grad.interleave_fp16_fp32_255x1x1x4_B11D_s0-4",
             "cover.forward.interleave_fp16_fp32_255x1x1x4_B11D_s0-4",
             "cover.grad.half_fp16_fp32_256x1x1x4_B11D_s0-4", "cover.x"]
    shown, complete = short_names.short_names(given, 30)
    assert complete and shown == {given[0]: "cover.grad…255x1x1x4_B11D_s0-4", given[1]: "cover.forward…B11D_s0-4",
                                  given[2]: "cover…half…256x1x1x4_B11D_s0-4", "cover.x": "cover.x"}
    shown, complete = short_names.short_names(given, 40, (short_names.MODE_WORDS, short_names.DTYPE_WORDS))
    assert complete and shown == {given[0]: "cover.grad.interleave_fp16_fp32…s0-4",
                                  given[1]: "cover.forward.interleave_fp16_fp32…s0-4",
                                  given[2]: "cover…half_fp16_fp32_256x1x1x4_B11D_s0-4", "cover.x": "cover.x"}


def test_the_op_column_stays_when_operators_mix_and_the_terminal_width_is_used(monkeypatch):
    results = [passed(f"full.bcast.interleave_fp32_bf16_2x3x4x16_BSND_s0-16_{op}", op=op, rotary_mode=mode)
               for op in ("grad", "forward") for mode in (1, 3)]
    lines = table.render(results, EMULATOR).splitlines()
    heading = next(line for line in lines if line.startswith("verdict "))
    assert heading.split()[:3] == ["verdict", "case", "op"] and all(len(line) <= 100 for line in lines)
    assert "all cases: op" not in "\n".join(lines)
    assert "all cases: op grad" in table.render(results[:2], EMULATOR)
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    monkeypatch.setenv("COLUMNS", "150")                  # shutil.get_terminal_size reads it first
    wide_terminal = table.render(results, EMULATOR).splitlines()
    assert 100 < max(map(len, wide_terminal)) <= 150                       # whole names: no "…"
    assert all(any(line.startswith(f"PASS     {r.name}  ") for line in wide_terminal) for r in results)


@pytest.mark.parametrize("told, expected", [("abc", 100), ("0", 100), ("-5", 100), ("10", 80), ("²", 100),
                                            ("１２０", 100), ("100000", 100000), ("", 100), (" 90", 90)])
def test_any_columns_value_gives_a_width_never_a_crash(monkeypatch, told, expected):
    """``COLUMNS`` as a CI or a shell may set it (standard output a pipe): a number, at least ``MIN_WIDTH``, else
    ignored. ``COLUMNS=²`` passed ``str.isdigit`` and failed ``int``: every text report was exit 3."""
    from prmg_cli.reports.outputs import screen

    monkeypatch.setenv("COLUMNS", told)
    monkeypatch.setattr("sys.stdout.isatty", lambda: False)
    assert screen.width() == expected
    assert table.render(mixed(), EMULATOR)


def on_terminal(args: list, columns: int, cwd, *, stderr_too: bool = False) -> str:
    """What ``prmg ARGS`` prints on a pseudo-terminal ``columns`` wide (without ``COLUMNS``), lines joined by
    ``\\n``; its standard error (progress) goes to a pipe, or with ``stderr_too`` to the terminal as well."""
    import fcntl
    import os
    import pty
    import struct
    import subprocess
    import sys
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {name: value for name, value in os.environ.items() if name != "COLUMNS"}
    child = subprocess.Popen([sys.executable, "-m", "prmg_cli.cli", *map(str, args)], stdin=subprocess.DEVNULL,
                             stdout=slave, stderr=slave if stderr_too else subprocess.PIPE, cwd=cwd, env=env)
    os.close(slave)
    output = b""
    while True:
        try:
            chunk = os.read(master, 1 << 16)
        except OSError:                  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        output += chunk
    os.close(master)
    child.communicate(timeout=120)
    return output.decode().replace("\r\n", "\n")


@pytest.fixture(scope="module")
def fault_results(tmp_path_factory):
    """A results file of cases/smoke.yaml and future_modes.yaml run with the emulator's ``sign`` fault injected."""
    from conftest import prmg_forked

    folder = tmp_path_factory.mktemp("compare")
    prmg_forked("run", ROOT / "cases" / "smoke.yaml", ROOT / "cases" / "future_modes.yaml", "--results",
                folder / "b.jsonl", env={"PRMG_EMU_FAULT": "sign"})
    return folder / "b.jsonl"


@pytest.mark.xdist_group("outputs_fault_results")          # one worker, one run of the fixture
@pytest.mark.parametrize("columns", [80, 100, 140])
def test_run_and_compare_fit_a_terminal_of_80_100_and_140_columns(columns, fault_results, tmp_path):
    """On a terminal as narrow as 80 columns, and as wide as 140, every line of ``prmg run``'s table (and its
    header, grouped and coverage lines) and of ``prmg compare``'s fits it, the verdict and the case first;
    skips are said per reason, and compare says which run had injected faults."""
    run = on_terminal(["run", ROOT / "cases" / "smoke.yaml", ROOT / "cases" / "future_modes.yaml", "--results",
                       tmp_path / "a.jsonl"], columns, tmp_path)
    lines = run.splitlines()
    assert lines[-1].endswith(" passed, 0 failed, 48 skipped") and max(map(len, lines)) <= columns, run
    heading = next(index for index, line in enumerate(lines) if line.startswith("verdict "))
    assert lines[heading].split()[:2] == ["verdict", "case"] and lines[heading].split()[-1] == "metric"
    rows = lines[heading + 2:lines.index("", heading)]
    assert len(rows) == 84 and all(row.split()[0] in ("PASS", "SKIP") for row in rows)
    assert ("SKIP 48 cases: rotary_mode half, quarter, interleave-half not supported by the target (supported: "
            "interleave) note: the emulator has every rotary mode: --supported-modes 0,1,2,3 runs the skipped "
            "cases") in " ".join(run.split())
    assert ("mode" in lines[heading].split()) == (columns > 80) and ("…" in run) == (columns < 140)
    skipped = [row.split()[1] for row in rows if row.startswith("SKIP")]      # the mode that skips them is shown
    assert all(re.search(r"(^|[._…])(half|quarter|interleave-half)([._…]|$)", name) for name in skipped) \
        or "mode" in lines[heading].split(), skipped
    compared = on_terminal(["compare", tmp_path / "a.jsonl", fault_results], columns, tmp_path)
    lines = compared.splitlines()
    assert max(map(len, lines)) <= columns and re.match(r"(\d+) regressions \(\1 new failures\)", lines[-1]), compared
    assert "run B had emulator faults injected (PRMG_EMU_FAULT): sign on 32 cases" in " ".join(compared.split())
    heading = next(line for line in lines if line.startswith("change "))       # each new failure was passed in A:
    assert heading.split() == ["change", "case", "detail"] and "all cases: A passed, B failed" in lines   # said once
    assert len(lines[lines.index(heading) + 1].split()[-1]) >= table.MIN_SQUEEZED     # the detail keeps its room
    changes = lines[lines.index(heading) + 2:lines.index("", lines.index(heading))]    # a detail cut is said so
    cut = [row for row in changes if row.endswith("…")]
    assert (changes[-1] == "details cut to the width: --wide shows them whole") == bool(cut) and cut, changes
    if columns == 80:                                                                  # --wide: whole, unfitted
        wide = on_terminal(["compare", tmp_path / "a.jsonl", fault_results, "--wide"], columns, tmp_path)
        heading = next(line for line in wide.splitlines() if line.startswith("change "))
        assert heading.split() == ["change", "case", "A", "B", "detail"] and "…" not in wide
        assert "--wide shows them whole" not in wide
        assert "smoke.interleave_bf16_bf16_1x3x5x64_111D_s1-31" in wide


@pytest.mark.xdist_group("outputs_fault_results")          # one worker, one run of the fixture
def test_failure_lines_and_notes_wrap_on_an_80_column_terminal_and_stay_whole_in_a_pipe(fault_results, tmp_path):
    """On an 80-column terminal a failure's line (err against bound, then where and how) and each diagnosis line
    under -v are wrapped at spaces, the later lines indented under the text; ``prmg:`` notes on a terminal's
    standard error too, and a run merged with its rerun is one duplicate note, not one per case. In a pipe each
    stays one line for grep (they were 250-330 columns, the terminal breaking them mid-word)."""
    from conftest import prmg_forked

    run, rerun, again = "run.jsonl", "rerun.jsonl", "again.jsonl"     # from tmp_path: a path is a word no wrap breaks
    for name in (run, rerun, again):
        (tmp_path / name).write_bytes(fault_results.read_bytes())
    shown = on_terminal(["report", run, rerun, "-v"], 80, tmp_path, stderr_too=True)
    lines = shown.splitlines()
    assert all(len(line) <= 80 or len(line.split()) == 1 for line in lines), shown     # but a path (a word)
    first = next(index for index, line in enumerate(lines) if line.startswith("FAIL smoke."))
    assert " ulp > bound " in " ".join(lines[first:first + 3]) and lines[first + 1].startswith("    ")
    grouped = on_terminal(["report", run, rerun, again], 80, tmp_path, stderr_too=True)   # the merged line too
    notes = [line for line in grouped.splitlines() if line.startswith("prmg: duplicate")]
    assert len(notes) == 1 and notes[0].startswith("prmg: duplicate: 84 cases in each of "), grouped
    assert all(len(line) <= 80 or len(line.split()) == 1 for line in grouped.splitlines()), grouped
    piped = prmg_forked("report", run, rerun, cwd=tmp_path)
    failures = [line for line in piped.stdout.splitlines() if re.match(r"FAIL \S+: ", line)]
    assert failures and all(" > bound " in line and "worst at" in line for line in failures), piped.stdout
    assert piped.stderr.count("\n") == 1 and "(-v names each)" in piped.stderr
    assert prmg_forked("report", run, rerun, "-v", cwd=tmp_path).stderr.count("prmg: duplicate: case '") == 84


def test_doctor_fits_an_80_column_terminal_its_paths_beside_their_labels(tmp_path):
    """``prmg doctor`` on an 80-column terminal: every line fits, but a path too long for any line, which stays
    beside its label (``runtime: /...``), never alone below it; the libraries loaded are one ``loaded from FOLDER:``
    line with their names (a line per library passed 80 columns: ``loaded: /.../libopapi_transformer.so``)."""
    from prmg_cli.reports.outputs import screen

    shown = on_terminal(["doctor"], 80, tmp_path)
    lines = shown.splitlines()
    assert all(len(line) <= 80 or len(line.split()) == 1 or len(line.split()) == 2 and line.split()[0].endswith(":")
               for line in lines), shown            # but a path (or NAME=path) alone, or beside its label
    assert re.search(r" loaded from /\S+/lib64: libascendcl\.so, libnnopbase\.so, libopapi_transformer\.so symbol ",
                     " ".join(shown.split())), shown
    assert not any(line.startswith("/") for line in lines), shown     # a path on a line of its own keeps its indent
    assert not any(re.fullmatch(r" +[A-Za-z_]+:", line) for line in lines), shown     # no label alone on its line
    long_path = "/opt/" + "a" * 80 + "/libascendcl.so"
    assert screen.wrap(f"  runtime: {long_path} (from ASCEND_HOME_PATH)", 80) == \
        [f"  runtime: {long_path}", "      (from ASCEND_HOME_PATH)"]


def test_failures_are_one_line_each_unless_verbose():
    lines = table.render(mixed(), EMULATOR).splitlines()
    assert "FAIL f1: 3 elements over budget" in lines
    assert not any(line.startswith("    worst") for line in lines)
    assert "ERROR e1: worker died (SIGSEGV)" in lines
    assert not any(line.startswith("SKIP s1") for line in lines)


def test_verbose_table_gives_details_skip_reasons_and_max_details():
    lines = table.render(mixed(), EMULATOR, verbose=True).splitlines()
    start = lines.index("FAIL f1: 3 elements over budget")
    assert lines[start + 1] == "    worst (0, 1, 2, 17): expected 1.5 actual 2.5"
    assert lines[start + 2] == "    errors only on odd lanes"
    assert "SKIP s1: mode quarter not supported" in lines
    capped = table.render(mixed(), EMULATOR, verbose=True, max_details=1).splitlines()
    start = capped.index("FAIL f1: 3 elements over budget")
    assert capped[start + 2] == "    ... 1 more line (--max-details)"


def test_details_repeating_the_message_are_shown_once():
    result = failed(message="3 over budget; errors only on odd lanes",
                    details=["errors only on odd lanes", "worst at (0, 0, 0, 1)"])
    lines = table.render([result], EMULATOR, verbose=True).splitlines()
    assert sum("errors only on odd lanes" in line for line in lines) == 1


def test_mode_given_as_int_code_is_named():
    text = table.render([passed(rotary_mode=2), passed("b")], EMULATOR)
    assert "quarter" in text


# --- JSON --------------------------------------------------------------------------------------------

def on_devices(failing: dict[str, int], cases: dict[str, int]) -> list[CaseResult]:
    """Results of ``cases[device]`` cases on each device, ``failing[device]`` of them failed."""
    return [failed(f"{device}.{index}", device=device) if index < failing.get(device, 0) else
            passed(f"{device}.{index}", device=device) for device, count in cases.items() for index in range(count)]


def test_failures_that_concentrate_on_one_device_are_named_in_every_report():
    """Issue 32: a chip that computes wrong showed only as a list of failures; every report now says where they
    concentrate (the chance of so many there by luck under 1 in 1000), and says nothing where they spread."""
    from prmg_cli.reports.outputs.labels import device_line, failures_by_device
    from prmg_cli.reports.outputs import html

    chip = on_devices({"1": 17}, {"0": 17, "1": 17})
    line = "17 failures, all on device 1 of 2: suspect the chip"
    assert device_line(chip) == line
    assert failures_by_device(chip) == {"0": {"cases": 17, "failures": 0}, "1": {"cases": 17, "failures": 17}}
    assert table.render(chip, TOOLKIT, width=100).splitlines()[-3:] == [f"failures by device: {line}", "",
                                                                        "17 passed, 17 failed"]
    summary = json.loads(jsonreport.render(chip, TOOLKIT))["summary"]
    assert summary["device_line"] == line and summary["failures_by_device"]["1"]["failures"] == 17
    properties = {p.get("name"): p.get("value") for p in ET.fromstring(junit.render(chip, TOOLKIT)).iter("property")}
    assert properties["failures by device"] == line
    failures = [element.text for element in ET.fromstring(junit.render(chip, TOOLKIT)).iter("failure")]
    assert len(failures) == 17 and all(text.endswith("\ndevice: 1") for text in failures)   # on each failing test
    assert f"**failures by device**: {line}" in markdown.render(chip, TOOLKIT)
    rows = list(csv.DictReader(io.StringIO(csvreport.render(chip, TOOLKIT))))
    assert {row["device"] for row in rows if row["status"] == "failed"} == {"1"}
    if html.available():
        assert f'id="device-line">failures by device: {line}</div>' in html.render(chip, TOOLKIT)
    part = on_devices({"2": 15, "0": 1}, {"0": 20, "1": 20, "2": 20})
    assert device_line(part) == "15 of 16 failures on device 2 of 3, which ran 20 of 60 cases: suspect the chip"
    for spread in (on_devices({"0": 5, "1": 4}, {"0": 17, "1": 17}), on_devices({"1": 2}, {"0": 32, "1": 2}),
                   on_devices({"0": 9}, {"0": 9})):                        # as the cases go, too few, one device
        assert device_line(spread) == "" and "failures by device" not in table.render(spread, TOOLKIT)


def test_the_device_line_blames_a_chip_exactly_past_its_stated_chance():
    """All of n failures on device 1 of 2 that ran half the cases: the chance by luck is 2^-n (the Chernoff bound
    is exact at q = 1), times the 2 devices tried, so 10 failures (2 * 2^-10 = 0.00195) stay unblamed and 11 (0.00098)
    pass under 1 in 1000; a lone failure is never read as a chip's, however few cases its device ran."""
    from prmg_cli.reports.outputs.labels import device_line

    assert device_line(on_devices({"1": 10}, {"0": 10, "1": 10})) == ""
    assert device_line(on_devices({"1": 11}, {"0": 11, "1": 11})) == ("11 failures, all on device 1 of 2: suspect "
                                                                     "the chip")
    assert device_line(on_devices({"1": 1}, {"0": 5000, "1": 1})) == ""     # 2 * 1/5001 < 1e-3, yet one failure


def test_the_device_line_weighs_each_device_by_the_cases_it_ran_and_counts_a_chips_xpass():
    """Session 11: 45 of 50 failures on a device that ran 900 of 1000 cases are its share, no chip to suspect (taken
    as 1 in 2, they would be: a chance of 1e-8); an xpass on one chip of an ``--each-device`` record (its known
    defect does not show there: the chip computes otherwise) is that chip's failure."""
    from prmg_cli.reports.outputs.labels import device_line

    assert device_line(on_devices({"0": 45, "1": 5}, {"0": 900, "1": 100})) == ""
    chip = [CaseResult(f"c{k}", "xpassed", device="0,1", device_statuses={"0": "xfailed", "1": "xpassed"})
            for k in range(11)]
    assert device_line(chip) == "11 failures, all on device 1 of 2: suspect the chip"


def test_a_merge_of_shards_from_several_hosts_keeps_their_devices_apart():
    """Device 1 of one host is not device 1 of another, nor the device 0 a run pinned to chip 3 by
    ASCEND_RT_VISIBLE_DEVICES used chip 0: labels are the hosts' chips, an --each-device record's chips too (its
    device_statuses kept their bare ids, so failures by device added up two hosts' chips), its message with them."""
    from prmg_cli.reports.chips import Chips
    from prmg_cli.reports.store import RunRecord, Stored

    runs = [RunRecord(f"r{host}", "", [], {}, {"host": host}) for host in ("a", "b")]
    results = [passed(f"{host}{device}", run_id=f"r{host}", device=device) for host in "ab" for device in "01"]
    chips = Chips.of([Stored("x", results, runs)])
    assert [chips.labelled(r).device for r in results] == ["a/0", "a/1", "b/0", "b/1"]
    assert [Chips.of([Stored("x", results[:2], runs[:1])]).labelled(r).device for r in results[:2]] == ["0", "1"]
    each = CaseResult("e", "failed", run_id="rb", device="1", device_statuses={"0": "passed", "1": "failed"},
                      message="[failed on device 1; passed on device 0] wrong")
    labelled = chips.labelled(each)
    assert (labelled.device, labelled.device_statuses) == ("b/1", {"b/0": "passed", "b/1": "failed"})
    assert labelled.message == "[failed on device b/1; passed on device b/0] wrong"
    pinned = [RunRecord("p", "", [], {}, {"host": "a", "visible_devices": "3,5"})]
    assert Chips.of([Stored("y", [], pinned)]).label("p", "1") == "5"


def test_json_summary_and_cases():
    document = json.loads(jsonreport.render(mixed(), TOOLKIT))
    summary = document["summary"]
    assert (summary["passed"], summary["failed"], summary["error"], summary["skipped"],
            summary["total"]) == (2, 1, 1, 2, 6)
    assert summary["runner"] == "aclnn" and summary["location"] == TOOLKIT.location
    assert summary["supported_modes"] == [0, 1, 2, 3]
    assert [case["name"] for case in document["cases"]] == ["p1", "p2", "f1", "e1", "s1", "s2"]
    first = document["cases"][0]
    for key in ("name", "status", "error_code", "metrics", "message", "details", "kernel_ms",
                "duration_s", "dtype", "cos_dtype", "shape", "cos_shape", "rotary_mode",
                "partial_slice", "standard", "source", "tags"):
        assert key in first
    assert first["shape"] == [2, 4, 8, 128] and first["partial_slice"] == [7, 71]
    assert document["cases"][3]["status"] == "error" and document["cases"][3]["error_code"] == 507015
    assert document["cases"][3]["error_name"] == "ACL_ERROR_RT_AICORE_EXCEPTION"          # the code's name beside it


def _reject_constant(token):
    raise AssertionError(f"invalid JSON token {token}")


def test_json_with_nan_inf_and_numpy_metrics_is_strict_json():
    result = failed(metrics={"max_err": float("nan"), "worst": float("inf"), "low": -np.inf,
                             "ratio": np.float32(0.5), "count": np.int64(3)},
                    kernel_ms=float("nan"))
    text = jsonreport.render([result], EMULATOR)
    metrics = json.loads(text, parse_constant=_reject_constant)["cases"][0]["metrics"]
    assert metrics == {"max_err": "nan", "worst": "inf", "low": "-inf", "ratio": 0.5, "count": 3}



def test_json_report_text_is_what_json_dumps_writes():
    """``jsonreport.indented`` (the report's writer, without the json module's Python encoder) writes what
    ``json.dumps(json_safe(value), indent=2, allow_nan=False)`` writes, each line after the first ``depth`` levels
    in: every JSON type, empty containers, keys that are not text, escapes, numpy values, tuples, ScoreRows,
    non-finite floats and subclasses of int, float and str (the json module writes those by the base type)."""
    import enum

    from prmg_cli.results import ScoreRows, json_safe

    class Number(enum.IntEnum):
        THREE = 3

    class Word(str, enum.Enum):
        E_ACUTE = "b\u00e9"

    class Real(float):
        pass

    value = {"plain": ["text \u2028\x00\ud800 \\ \"", 0, -7, 10 ** 30, 2.5, 1e-300, -0.0, None, True, False],
             "empty": [[], {}, (), ""], "odd": [float("nan"), np.inf, -np.inf, np.float32(0.1), np.float64(1e300),
                                             np.int64(7), np.bool_(True), np.array([[1, 2], [3, 4]], np.uint8),
                                             (1, (2, 3)), Number.THREE, Word.E_ACUTE, Real(0.3), Real("nan"),
                                             ScoreRows.of([[1.0, None], [2.5]]), b"bytes"],
             3: {"nested": {"deeper": [{}]}}, None: 1, 2.5: [], True: (), Number.THREE: "key"}
    records = [value, *map(jsonreport.case_record, mixed()), jsonreport.summary(mixed(), TOOLKIT)]
    for record in records:
        for depth in (0, 1, 2):
            expected = json.dumps(json_safe(record), indent=2, allow_nan=False).replace("\n", "\n" + "  " * depth)
            assert jsonreport.indented(record, depth) == expected

# --- JUnit -------------------------------------------------------------------------------------------

def test_junit_counts_and_outcome_elements():
    root = ET.fromstring(junit.render(mixed(), TOOLKIT))
    suite = root.find("testsuite")
    for element in (root, suite):
        assert element.get("tests") == "6"
        assert element.get("failures") == "1"
        assert element.get("errors") == "1"
        assert element.get("skipped") == "2"
    cases = suite.findall("testcase")
    assert len(cases) == 6
    assert len(suite.findall("testcase/failure")) == 1
    assert len(suite.findall("testcase/error")) == 1
    assert len(suite.findall("testcase/skipped")) == 2
    failure = suite.find("testcase[@name='f1']/failure")
    assert failure.get("message") == "3 elements over budget"
    assert "errors only on odd lanes" in failure.text
    assert suite.find("testcase[@name='f1']").get("classname") == "prmg.faults"
    assert suite.find("testcase[@name='e1']").get("classname") == "prmg.cases"   # no source file
    assert float(suite.find("testcase[@name='p1']").get("time")) == 0.5
    properties = {p.get("name"): p.get("value") for p in suite.findall("properties/property")}
    assert properties["runner"] == "aclnn" and properties["location"] == TOOLKIT.location and "path" not in properties
    graph = replace(TOOLKIT, path="aclnn+geir")         # the raw runner says nothing of graph mode: path does
    properties = {p.get("name"): p.get("value") for p in ET.fromstring(junit.render(mixed(), graph)).iter("property")}
    assert properties["runner"] == "aclnn" and properties["path"] == "aclnn+geir"


def test_junit_escapes_markup_and_strips_control_characters():
    nasty = 'a < b && c > "d"\x00\x07\x1b end\ttab'
    result = failed(name="case <&>\x01", message=nasty, details=[nasty + " ]]> detail"])
    text = junit.render([result], EMULATOR)
    testcase = ET.fromstring(text).find("testsuite/testcase")
    assert testcase.get("name") == "case <&>\\x01"
    failure = testcase.find("failure")
    assert failure.get("message") == 'a < b && c > "d"\\x00\\x07\\x1b end\ttab'
    assert 'a < b && c > "d"\\x00\\x07\\x1b end\ttab ]]> detail' in failure.text


# --- CSV ---------------------------------------------------------------------------------------------

def test_csv_rows_and_fields():
    message = 'over budget, at "(0, 1)"\nsecond line'
    results = mixed() + [failed("quoted", message=message, metrics={"x": float("nan")})]
    rows = list(csv.DictReader(io.StringIO(csvreport.render(results, EMULATOR))))
    assert len(rows) == len(results)
    assert tuple(rows[0].keys()) == csvreport.COLUMNS
    assert [row["status"] for row in rows] == [r.status for r in results]
    first = rows[0]
    assert first["shape"] == "2x4x8x128" and first["partial_slice"] == "7:71"
    assert float(first["kernel_ms"]) == pytest.approx(0.0123)
    assert json.loads(first["metrics"]) == {"max_err_ratio": 0.25, "bad_share": 0.0, "third": 7}
    assert rows[3]["error_code"] == "507015" and rows[0]["error_code"] == ""
    assert rows[3]["error_name"] == "ACL_ERROR_RT_AICORE_EXCEPTION" and rows[0]["error_name"] == ""
    assert rows[-1]["message"] == visible(message)
    assert json.loads(rows[-1]["metrics"], parse_constant=_reject_constant) == {"x": "nan"}


def test_csv_cells_a_spreadsheet_would_run_as_formulas_are_shown_as_text():
    """A results file's message ``=cmd|' /c calc'!A1`` (or a device, a call path, a runner, a name starting with - or
    @) was written as it was, so a spreadsheet opening the CSV ran it; device and path also kept raw control
    characters. A text cell starting with = + - @ now gets a leading ' and every text cell is escaped; numbers
    (a negative status code, a time) stay numbers."""
    formula = "=cmd|' /c calc'!A1"
    result = CaseResult(name="-x", status="error", message=formula, error_code=-1, warnings=["@SUM(A1)"],
                        path="+1+1\x1b[2J", device="\x01-2", runner="-aclnn", kernel_ms=-0.0, duration_s=1e-5)
    (row,) = csv.DictReader(io.StringIO(csvreport.render([result], EMULATOR)))
    assert (row["name"], row["message"], row["warnings"]) == ("'-x", "'" + formula, "'@SUM(A1)")
    assert (row["path"], row["device"], row["runner"]) == ("'+1+1\\x1b[2J", "\\x01-2", "'-aclnn")
    assert (row["error_code"], row["kernel_ms"], row["duration_s"]) == ("-1", "-0.0", "1e-05")
    assert csvreport.cell("-1e-05") == "-1e-05" and csvreport.cell("-inf") == "-inf"


def test_csv_and_junit_say_what_ran_the_cases_where_a_ci_page_or_a_script_looks():
    """Issue 32 (fourth look): a CSV of the host emulator's run had no word of the emulator (no header lines), and a
    JUnit suite said so only in its properties, which CI pages do not show: the CSV names each row's runner (its
    record's, else the run's) and a JUnit suite of any emulator result is named so."""
    rows = list(csv.DictReader(io.StringIO(csvreport.render([passed("a"), passed("b", runner="aclnn")], EMULATOR))))
    assert [row["runner"] for row in rows] == ["emulator", "aclnn"]
    names = {info.runner: ET.fromstring(junit.render([passed("a")], info)).find("testsuite").get("name")
             for info in (EMULATOR, TOOLKIT)}
    assert names == {"emulator": "prmg (host emulator, not an NPU)", "aclnn": "prmg"}
    merged = ET.fromstring(junit.render([passed("a", runner="emulator")], TOOLKIT))
    assert merged.get("name") == merged.find("testsuite").get("name") == junit.EMULATED


# --- Markdown ----------------------------------------------------------------------------------------

def test_markdown_has_heading_table_failures_and_summary_last():
    text = markdown.render(mixed() + [passed("pipe|name")], TOOLKIT)
    lines = text.splitlines()
    assert lines[0].startswith("# ")
    table = [line for line in lines if line.startswith("|")]
    assert len(table) == 2 + 7                           # header, rule, one row per case
    assert set(table[1]) <= set("|-: ")
    assert all(line.count("|") - line.count("\\|") == table[0].count("|") for line in table)
    assert "## Failures" in text and "errors only on odd lanes" in text
    assert "aclnn toolkit at" in text
    assert lines[-1] == "3 passed, 1 failed, 1 error, 2 skipped"


HOSTILE = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "**bold** _it_ `code`", "[x](javascript:y)",
           "![i](http://example.com/i.png)", "a | b", "# heading #", "~~gone~~", "&amp; &lt;", "back\\slash`"]


@pytest.mark.parametrize("text", HOSTILE)
def test_markdown_shows_text_from_results_files_as_text(text):
    """Names, runner, dtypes, messages and details from a results file render (CommonMark with GitHub's
    tables) as the very text, in cells, the header list and headings: no HTML, link, image or emphasis."""
    import markdown_it

    from prmg_cli.reports.compare import Change, Comparison, render as render_comparison

    result = failed(name=text, dtype=text, cos_dtype=text, rotary_mode=text, standard=text, message=text,
                    key_metric=text, details=[text])
    info = RunInfo(runner=text, location=text, op_library=text, soc=text, host=text)
    parser = markdown_it.MarkdownIt("commonmark").enable("table")
    comparison = Comparison([Change("new failure", text, "passed", "failed", visible(text))], 1, 1)
    for document in (markdown.render([result], info), render_comparison(comparison, "markdown")):
        page = parser.render(document)
        for tag in ("<script", "<img", "<a ", "<strong>bold", "<em>it", "<code>code", "<h1>heading", "<del", "<s>"):
            assert tag not in page, (tag, page)
        shown = html.escape(visible(text), quote=False)
        assert page.count(shown) >= (4 if document.startswith("# prmg report") else 1), page
        assert page.count("<tr>") == 2                   # the header row and one row per case: no cell split


# --- dispatch ----------------------------------------------------------------------------------------

def test_render_dispatches_every_format():
    results = mixed()
    assert outputs.REPORT_FORMATS == ("table", "json", "junit", "csv", "markdown", "html")
    assert outputs.render("table", results, EMULATOR, outputs.RenderOptions(verbose=True)) == \
        table.render(results, EMULATOR, verbose=True)
    assert outputs.render("json", results, EMULATOR) == jsonreport.render(results, EMULATOR)
    assert outputs.render("junit", results, EMULATOR) == junit.render(results, EMULATOR)
    assert outputs.render("csv", results, EMULATOR) == csvreport.render(results, EMULATOR)
    assert outputs.render("markdown", results, EMULATOR) == markdown.render(results, EMULATOR)
    with pytest.raises(PrmgError, match="--report"):
        outputs.render("yaml", results, EMULATOR)


@pytest.mark.parametrize("specs, output, expected", [
    ([], None, [("table", None)]),
    (["json"], "r.json", [("json", "r.json")]),
    (["junit:smoke.xml", "json:smoke.json"], None, [("junit", "smoke.xml"), ("json", "smoke.json")]),
    (["table", "junit:s.xml"], None, [("table", None), ("junit", "s.xml")]),
    (["junit:s.xml", "json"], "r.json", [("junit", "s.xml"), ("json", "r.json")]),
    ([], "run.txt", [("table", "run.txt")]), (["json"], "r.html", [("json", "r.html")]),   # a format asked for
])
def test_report_targets(specs, output, expected):
    assert [(t.format, t.path) for t in outputs.parse_targets(specs, output)] == expected


@pytest.mark.parametrize("specs, output, message", [
    (["yaml"], None, "unknown format"), (["json:"], None, "no file"),
    (["json", "csv"], None, "only one report"), (["json:a"], "b", "-o FILE names"),
    # -o alone naming another format's file got a table (the table's text in run.html)
    ([], "run.html", r"-o run.html: without --report a table goes there, not the html its name says; give --report "
                     r"html -o run.html \(or --report html:run.html\)"), ([], "out/R.JSON", "not the json"),
])
def test_bad_report_targets(specs, output, message):
    with pytest.raises(PrmgError, match=message):
        outputs.parse_targets(specs, output)


def test_two_reports_to_one_file_are_refused_devices_excepted(tmp_path):
    from prmg_cli.writes import APPEND, Output, check_outputs

    with pytest.raises(PrmgError, match="it is another report"):
        check_outputs([Output(str(tmp_path / "a")), Output(f"{tmp_path}/./a")], {})
    with pytest.raises(PrmgError, match="it is the results file"):
        check_outputs([Output(str(tmp_path / "r"), "results file", APPEND), Output(f"{tmp_path}/r")], {})
    check_outputs([Output("/dev/null"), Output("/dev/null"), Output(str(tmp_path / "b"))],
                  {str(tmp_path / "a"): "a case file"})


# --- prmg run --list ---------------------------------------------------------------------------------

def test_only_an_emulator_runs_skips_end_with_how_to_run_them():
    """The note after the skips of an emulator run (a newcomer's half-mode case) is never said of a toolkit's, whose
    kernel may lack the modes; nor without a skip."""
    skipped = CaseResult(name="h", status="skipped", rotary_mode="half", message="rotary_mode half (0) not supported")
    passed = CaseResult(name="p", status="passed")
    assert table.failure_lines([skipped], info=EMULATOR, width=100)[-1] == table.EMULATOR_MODES_NOTE
    for results, info in (([skipped], TOOLKIT), ([passed], EMULATOR), ([skipped], None)):
        assert table.EMULATOR_MODES_NOTE not in table.failure_lines(results, info=info, width=100)


def test_format_list_shows_cases_and_count():
    cases = [
        Case(name="mixed_dtypes", source="cases/a.yaml", shape=(2, 4, 8, 128), cos_shape=(1, 4, 1, 64),
             sin_shape=(1, 4, 1, 64), partial_slice=(7, 71), rotary_mode=0, dtype="float16",
             cos_dtype="float32", sin_dtype="float32"),
        Case(name="refuse_int8", source="cases/neg.yaml", shape=(1, 1, 1, 64), cos_shape=(1, 1, 1, 64),
             sin_shape=(1, 1, 1, 64), partial_slice=(0, 64), dtype="int8", cos_dtype="int8",
             sin_dtype="int8", expect=Expect(error=161002)),
    ]
    cases[0] = Case(**{**cases[0].__dict__, "tags": ("smoke", "mixed")})
    lines = listing.render(cases).splitlines()
    assert lines[-1] == "2 cases"
    first = next(line for line in lines if line.startswith("mixed_dtypes"))
    for cell in ("fp16/fp32", "2x4x8x128", "half", "[7, 71)", "pass", "smoke,mixed"):
        assert cell in first
    second = next(line for line in lines if line.startswith("refuse_int8"))
    assert "i8" in second and "161002 ACLNN_ERR_PARAM_INVALID" in second and "interleave" in second
    assert listing.render(cases[:1]).splitlines()[-1] == "1 case"
    assert max(len(line) for line in lines) <= 100


def test_list_fits_80_columns_with_expected_errors_and_known_defects():
    """On an 80-column terminal the listing of long names expecting long statuses (a known defect's too) fits: the
    expected error gives way to its code alone; ``wide`` keeps the name."""
    from prmg_cli.cases.loader import load_cases

    cases = load_cases([str(ROOT / "cases" / "negative.yaml"), str(ROOT / "cases" / "forward.yaml")])
    lines = listing.render(cases, width=80).splitlines()
    assert max(map(len, lines)) <= 80, max(lines, key=len)
    assert re.search(r"^neg.mode_2pow32_plus_1 .* 561002 \(known defect\)$", "\n".join(lines), re.M)
    wide = listing.render(cases, wide=True, width=80)
    assert "561002 ACLNN_ERR_INNER_TILING_ERROR (known defect)" in wide and "cases/negative.yaml" in wide


# --- prmg bench --------------------------------------------------------------------------------------

BENCH_ROWS = [
    {"name": "llama", "shape": [4, 1024, 32, 128], "dtype": "float16", "cos_dtype": "float32",
     "min_ms": 1.25, "median_ms": 1.5, "bytes": 134_217_728, "gbps": 107.4, "peak_share": 0.0671},
    {"name": "tiny", "shape": (1, 1, 1, 64), "dtype": "float32", "cos_dtype": "float32",
     "min_ms": 0.004, "median_ms": 0.005, "bytes": 768, "gbps": 0.19, "peak_share": None},
]


def test_bench_table_labels_emulator_timings():
    text = bench_kernel.format_bench(BENCH_ROWS, EMULATOR)
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("case"))
    for column in ("shape", "dtypes", "min ms", "median ms", "bytes moved (MB)", "GB/s", "% of peak"):
        assert column in header
    llama = next(line for line in lines if line.startswith("llama")).split()
    assert llama[1:] == ["4x1024x32x128", "fp16/fp32", "1.250", "1.500", "134.22", "107.40", "6.7"]
    tiny = next(line for line in lines if line.startswith("tiny")).split()
    assert tiny[2] == "fp32" and tiny[-1] == "-"
    assert "host timings (emulator), not NPU" in lines
    assert "host timings" not in bench_kernel.format_bench(BENCH_ROWS, TOOLKIT)
    long_name = {**BENCH_ROWS[0], "name": "cover.grad.interleave_fp16_fp32_255x1x1x4_B11D_s0-4"}
    for width in (80, 100):          # fitted (bench_kernel.BENCH_FIT_ORDER): the case first, the median kept
        lines = bench_kernel.format_bench([*BENCH_ROWS, long_name], EMULATOR, width=width).splitlines()
        heading = next(line for line in lines if line.startswith("case"))
        assert max(map(len, lines)) <= width and "median ms" in heading and "fp16/fp32" in lines[-3], lines
        assert heading.index("median ms") + len("median ms") == lines[-3].index("1.500") + len("1.500")  # right


# --- progress ----------------------------------------------------------------------------------------

class FakeStream(io.StringIO):
    def __init__(self, tty):
        super().__init__()
        self.tty = tty

    def isatty(self):
        return self.tty


def test_progress_draws_on_a_terminal_with_eta():
    clock = iter(range(0, 100, 10))
    terminal = FakeStream(tty=True)
    bar = Progress(4, stream=terminal, clock=lambda: next(clock))
    bar.update(passed("first"))
    assert "[#####...............] 1/4 0F 0E ETA 0:30 first" in terminal.getvalue()
    bar.update(failed("second"))
    assert "[##########..........] 2/4 1F 0E ETA" in terminal.getvalue()
    bar.close()
    assert terminal.getvalue().endswith("\r")


def test_progress_in_ci_prints_a_line_every_interval():
    times = iter([0, 1, 2, 31, 32, 70, 71])
    pipe = FakeStream(tty=False)
    bar = Progress(5, stream=pipe, interval=30, clock=lambda: next(times))
    for name in "abcde":
        bar.update(passed(name)) if name != "c" else bar.update(errored(name))
    bar.close()
    assert pipe.getvalue().splitlines() == ["prmg: 3/5 done (0 failed, 1 error), ETA 0:21",
                                            "prmg: 5/5 done (0 failed, 1 error), ETA 0:00"]


def test_text_reports_keep_control_characters_off_the_terminal():
    result = failed(name="ansi\x1b[31m", message="boom\x07\nall passed\x00", details=["d\x1b[0m"])
    for text in (table.render([result], EMULATOR, verbose=True), markdown.render([result], EMULATOR)):
        assert not any(ch in text for ch in "\x00\x07\x1b")
        assert text.splitlines()[-1] == "0 passed, 1 failed"
        assert "\nall passed" not in text
    lines = table.render([result], EMULATOR).splitlines()
    assert "FAIL ansi\\x1b[31m: boom\\x07\\nall passed\\x00" in lines


@pytest.mark.parametrize("text, shown", [
    ("plain name", "plain name"), ("a\nb", "a\\nb"), ("\x1b[2J", "\\x1b[2J"), ("tab\there", "tab\\there"),
    ("back\\slash", "back\\slash"), ("back\\slash\n", "back\\slash\\n"), ("bidi\u202eevil", "bidi\\u202eevil"),
    ("\ufffe", "\\ufffe"),
    ("caf\u00e9 \u4e2d", "caf\u00e9 \u4e2d"), ("\x85next", "\\x85next"), ("\U000e0041tag", "\\U000e0041tag"),
])
def test_visible_escapes_what_could_change_the_screen(text, shown):
    assert visible(text) == shown


def test_visible_escapes_by_category_in_non_ascii_text_too():
    """Every code point of the BMP after a printable non-ASCII one (the table's ``≤``) is escaped exactly when it is a
    named escape or of a hidden category (printable text takes a shortcut that must agree)."""
    import unicodedata

    from prmg_cli.results import _HIDDEN_CATEGORIES, _NAMED_ESCAPES, _escape

    for code in range(0x10000):
        char = chr(code)
        hidden = char in _NAMED_ESCAPES or unicodedata.category(char) in _HIDDEN_CATEGORIES
        assert visible("\u2264" + char) == "\u2264" + (_escape(char) if hidden else char), hex(code)


def test_a_count_of_one_meets_a_singular_noun(tmp_path):
    """Wherever prmg puts a count before a noun (``results.plural``), one of it reads in the singular."""
    from prmg_cli.device import acl
    from prmg_cli.commands import dump_arrays
    from prmg_cli.reports.outputs import html as html_report

    one = tmp_path / "one.yaml"
    one.write_text("- {name: one, shape: [1, 1, 1, 2]}\n")
    assert dump_arrays.dump_cases([str(one)], str(tmp_path / "out")).startswith("wrote 1 case to ")
    before = np.zeros(4, np.float32)
    after = before.copy()
    after[2] = 1.0
    assert acl._first_change("dy", before, after, (1, 1, 1, 4)) == ["dy changed at (0, 0, 0, 2), first of 1 element"]
    assert '<span id="shown">1 of 1 case shown</span>' in html_report.render([passed()], EMULATOR)
    stopped = CaseResult(name="n", status="not_run", message="stopped")
    assert "NOT RUN 1 case (n): stopped" in table.render([stopped], EMULATOR)
    shown = table.render([failed(details=["first", "second"])], EMULATOR, verbose=True, max_details=1)
    assert "... 1 more line (--max-details)" in shown
    from prmg_cli.cases.loader import parse_document

    with pytest.raises(PrmgError, match="1 value for a tensor of 2 elements"):
        parse_document([{"name": "v", "shape": [1, 1, 1, 2], "inputs": {"dy": {"values": [1.0]}}}], "t.yaml", tmp_path)


def test_a_report_format_is_one_module_and_one_outputs_entry(tmp_path, monkeypatch, capsys):
    """A new report format is a writer and one ``outputs.OUTPUTS`` entry (docs/developing.md): a toy one is then a
    format of prmg run's and prmg report's --report, named in both --help texts (they listed the formats a second
    time), and written where --report says."""
    import importlib

    from prmg_cli.commands import report, run, shared_options
    from test_cli_commands import run_in_process

    toy = outputs.Output("toy: a line per case", lambda results, info, options: "".join(
        f"{result.name} {result.status}\n" for result in results))
    monkeypatch.setitem(outputs.OUTPUTS, "toy", toy)
    try:
        for module in (shared_options, run, report):
            importlib.reload(module)
        for command, listed in (("run", "markdown, html or toy (html: pip"), ("report", "markdown, html, toy, to")):
            code, out, _ = run_in_process(capsys, monkeypatch, command, "--help")
            assert code == 0 and listed in " ".join(out.split()), command
        (tmp_path / "c.yaml").write_text("- {name: c, shape: [1, 1, 1, 8]}\n")
        results, written = tmp_path / "r.jsonl", tmp_path / "toy.txt"
        code, _, err = run_in_process(capsys, monkeypatch, "run", tmp_path / "c.yaml", "--runner", "emulator",
                                      "--report", f"toy:{written}", "--results", results)
        assert code == 0 and written.read_text() == "c passed\n", err
        code, out, _ = run_in_process(capsys, monkeypatch, "report", results, "--report", "toy")
        assert code == 0 and out.startswith("c passed\n")
    finally:
        monkeypatch.undo()
        for module in (shared_options, run, report):
            importlib.reload(module)


def test_an_error_line_wraps_on_an_80_column_terminal_and_stays_one_line_in_a_pipe(tmp_path):
    """A refusal that explains itself (gen-case's vacuous case: 360 columns) was one line on a terminal too, which
    broke it mid-word; it wraps under its text as prmg's notes do, one ``prmg: error:``, and stays one line in a pipe
    (for grep)."""
    from conftest import prmg_here

    args = ["gen-case", "--shape", "8,1,32,128", "--mode", "half", "--inputs", "cos=rope:500000,sin=rope:500000"]
    shown = on_terminal(args, 80, tmp_path, stderr_too=True).splitlines()
    assert len(shown) > 3 and all(len(line) <= 80 for line in shown), shown
    assert shown[0].startswith("prmg: error: ") and all(line.startswith("      ") for line in shown[1:])
    piped = prmg_here(*args)
    assert piped.returncode == 2 and piped.stderr.count("\n") == 1 and len(piped.stderr) > 300
    assert " ".join(" ".join(shown).split()) == piped.stderr.strip()


def test_a_passed_call_that_computes_nothing_says_so_instead_of_a_bare_dash():
    """An empty slice or tensor has no metric: only the in-place tensor left bit for bit. Its table cell was a bare
    ``-`` (five of ttk_upstream_e2e's cases in every ``make run``), which read as nothing checked."""
    from prmg_cli.reports.outputs.labels import metric_label

    def result(**fields):
        return CaseResult(**{"name": "c", "status": "passed", "shape": [2, 2, 2, 8], "cos_shape": [1, 1, 1, 8],
                             "partial_slice": [0, 8], **fields})

    assert metric_label(result(partial_slice=[4, 4])) == "no-op: dy left unchanged"
    assert metric_label(result(shape=[0, 2, 2, 8], op="forward")) == "no-op: x left unchanged"
    assert metric_label(result()) == "-"                                  # not a no-op: nothing to say
    assert metric_label(result(partial_slice=[4, 4], status="failed")) == "-"
    assert metric_label(result(partial_slice=[4, 4], metrics={"a": 1})) == "a=1"


def test_cases_warned_alike_get_one_entry_in_the_run_and_in_validate(tmp_path):
    """A newcomer's file of RoPE tables without ``partners_alike``: each passed case repeated the same five-line
    warning below the table, and ``prmg validate`` once a case. Alike warnings of one file are one entry naming the
    cases; a case warned otherwise, a failure and ``-v`` keep their own."""
    from prmg_cli.commands.suite import validate_paths

    alike = ["partners alike: sin is the same at both lanes of every pair"]
    results = [CaseResult(name=name, status="passed", warnings=list(alike)) for name in ("a", "b", "c", "d")]
    results += [CaseResult(name="e", status="passed", warnings=["vacuous"]), CaseResult(name="f", status="failed",
                                                                                      message="err", warnings=alike)]
    results.insert(0, CaseResult(name="g", status="passed", message="note", warnings=list(alike)))  # more to say
    lines = table.failure_lines(results, width=100)
    assert lines == ["PASS g: note", f"    warning: {alike[0]}", "PASS 4 cases (a, b, c and 1 more):",
                     f"    warning: {alike[0]}", "PASS e:", "    warning: vacuous", "FAIL f: err",
                     f"    warning: {alike[0]}"]
    assert sum(line.startswith("PASS") for line in table.failure_lines(results, width=100, verbose=True)) == 6
    path = tmp_path / "rope.yaml"
    rope = "inputs: {cos: {rope: {base: 10000}}, sin: {rope: {base: 10000}}}"
    path.write_text("".join(f"- {{name: {name}, shape: [1, 4, 1, 8], {rope}}}\n" for name in ("x", "y")))
    said = validate_paths([str(path)], None).splitlines()
    assert said[0].startswith(f"warning: {path}: 2 cases (x, y): partners alike: ")
    assert sum(line.startswith("warning:") for line in said) == 1
