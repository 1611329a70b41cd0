"""Reports: every format parses with a standard reader and says what the results say."""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from prmg_cli import report
from prmg_cli.cases import Case, Expect
from prmg_cli.errors import PrmgError
from prmg_cli.report import CaseResult, RunInfo

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
    ([failed(), errored()], "0 passed, 1 failed, 1 errors"),
    (mixed(), "2 passed, 1 failed, 2 skipped, 1 errors"),
])
def test_summary_line_names_only_nonzero_extras(results, line):
    assert report.summary_line(results) == line


def test_summary_counts():
    assert report.summary_counts(mixed()) == {"passed": 2, "failed": 1, "error": 1, "skipped": 2,
                                              "total": 6}


def test_unknown_status_is_refused():
    with pytest.raises(ValueError, match="weird"):
        report.summary_counts([CaseResult("weird", "maybe")])


# --- header and table --------------------------------------------------------------------------------

def test_emulator_header_says_results_are_not_from_an_npu():
    header = report.format_header(EMULATOR)
    assert "emulator (host build at /root/.cache/prmg/emulator-ab12)" in header
    assert "host emulator, not an NPU" in header
    assert "target: rotary modes interleave" in header


def test_toolkit_header_names_toolkit_operator_library_devices_standard_version():
    header = report.format_header(TOOLKIT)
    assert "aclnn toolkit at /usr/local/Ascend/ascend-toolkit/latest" in header
    assert f"operator from {TOOLKIT.op_library}" in header
    assert "rotary modes half, interleave, quarter, interleave-half" in header
    assert "0, 3" in header and "single_bm" in header and "9.9.9" in header
    assert "NPU" not in header


@pytest.mark.parametrize("results", [[], [passed()], [failed()], [skipped()], [errored()], mixed()])
@pytest.mark.parametrize("verbose", [False, True])
def test_last_line_of_table_is_exactly_the_summary(results, verbose):
    lines = report.format_table(results, EMULATOR, verbose=verbose).splitlines()
    assert lines[-1] == report.summary_line(results)
    assert lines[-2] == ""


def test_table_row_cells():
    table = report.format_table([passed(), failed()], EMULATOR)
    row = next(line for line in table.splitlines() if line.startswith("ok_case"))
    for cell in ("fp16/fp32", "2x4x8x128", "1x4x1x64", "interleave", "[7, 71)", "default",
                 "max_err_ratio=0.25 bad_share=0", "PASS", "0.012 ms"):
        assert cell in row
    assert "third" not in row                            # only the first two metrics
    bad_row = next(line for line in table.splitlines() if line.startswith("bad_case"))
    assert "err/budget 4.1" in bad_row and "FAIL" in bad_row
    assert "bf16/" not in bad_row                        # same dtype for cos: one label
    assert bad_row.rstrip().endswith("-")               # no kernel time


def test_table_diagnoses_failures_and_errors_with_indented_details():
    lines = report.format_table(mixed(), EMULATOR).splitlines()
    start = lines.index("FAIL f1: 3 elements over budget")
    assert lines[start + 1] == "    worst (0, 1, 2, 17): expected 1.5 actual 2.5"
    assert lines[start + 2] == "    errors only on odd lanes"
    assert "ERROR e1: worker died (SIGSEGV)" in lines
    assert not any(line.startswith("SKIP s1") for line in lines)


def test_verbose_table_gives_skip_reasons():
    lines = report.format_table(mixed(), EMULATOR, verbose=True).splitlines()
    assert "SKIP s1: mode quarter not supported" in lines


def test_mode_given_as_int_code_is_named():
    table = report.format_table([passed(rotary_mode=2)], EMULATOR)
    assert "quarter" in table


# --- JSON --------------------------------------------------------------------------------------------

def test_json_summary_and_cases():
    document = json.loads(report.format_json(mixed(), TOOLKIT))
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


def _reject_constant(token):
    raise AssertionError(f"invalid JSON token {token}")


def test_json_with_nan_inf_and_numpy_metrics_is_strict_json():
    result = failed(metrics={"max_err": float("nan"), "worst": float("inf"), "low": -np.inf,
                             "ratio": np.float32(0.5), "count": np.int64(3)},
                    kernel_ms=float("nan"))
    text = report.format_json([result], EMULATOR)
    metrics = json.loads(text, parse_constant=_reject_constant)["cases"][0]["metrics"]
    assert metrics == {"max_err": "nan", "worst": "inf", "low": "-inf", "ratio": 0.5, "count": 3}


# --- JUnit -------------------------------------------------------------------------------------------

def test_junit_counts_and_outcome_elements():
    root = ET.fromstring(report.format_junit(mixed(), TOOLKIT))
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
    assert properties["runner"] == "aclnn" and properties["location"] == TOOLKIT.location


def test_junit_escapes_markup_and_strips_control_characters():
    nasty = 'a < b && c > "d"\x00\x07\x1b end\ttab'
    result = failed(name="case <&>\x01", message=nasty, details=[nasty + " ]]> detail"])
    text = report.format_junit([result], EMULATOR)
    testcase = ET.fromstring(text).find("testsuite/testcase")
    assert testcase.get("name") == "case <&>"
    failure = testcase.find("failure")
    assert failure.get("message") == 'a < b && c > "d" end\ttab'
    assert 'a < b && c > "d" end\ttab ]]> detail' in failure.text


# --- CSV ---------------------------------------------------------------------------------------------

def test_csv_rows_and_fields():
    message = 'over budget, at "(0, 1)"\nsecond line'
    results = mixed() + [failed("quoted", message=message, metrics={"x": float("nan")})]
    rows = list(csv.DictReader(io.StringIO(report.format_csv(results, EMULATOR))))
    assert len(rows) == len(results)
    assert tuple(rows[0].keys()) == ("name", "status", "error_code", "dtype", "cos_dtype", "shape",
                                     "cos_shape", "rotary_mode", "partial_slice", "standard",
                                     "kernel_ms", "duration_s", "message", "metrics")
    assert [row["status"] for row in rows] == [r.status for r in results]
    first = rows[0]
    assert first["shape"] == "2x4x8x128" and first["partial_slice"] == "7:71"
    assert float(first["kernel_ms"]) == pytest.approx(0.0123)
    assert json.loads(first["metrics"]) == {"max_err_ratio": 0.25, "bad_share": 0.0, "third": 7}
    assert rows[3]["error_code"] == "507015" and rows[0]["error_code"] == ""
    assert rows[-1]["message"] == message
    assert json.loads(rows[-1]["metrics"], parse_constant=_reject_constant) == {"x": "nan"}


# --- Markdown ----------------------------------------------------------------------------------------

def test_markdown_has_heading_table_failures_and_summary_last():
    text = report.format_markdown(mixed() + [passed("pipe|name")], TOOLKIT)
    lines = text.splitlines()
    assert lines[0].startswith("# ")
    table = [line for line in lines if line.startswith("|")]
    assert len(table) == 2 + 7                           # header, rule, one row per case
    assert set(table[1]) <= set("|-: ")
    assert all(line.count("|") - line.count("\\|") == table[0].count("|") for line in table)
    assert "## Failures" in text and "errors only on odd lanes" in text
    assert "aclnn toolkit at" in text
    assert lines[-1] == "3 passed, 1 failed, 2 skipped, 1 errors"


# --- dispatch ----------------------------------------------------------------------------------------

def test_render_dispatches_every_format():
    results = mixed()
    assert report.REPORT_FORMATS == ("table", "json", "junit", "csv", "markdown")
    assert report.render("table", results, EMULATOR, verbose=True) == \
        report.format_table(results, EMULATOR, verbose=True)
    assert report.render("json", results, EMULATOR) == report.format_json(results, EMULATOR)
    assert report.render("junit", results, EMULATOR) == report.format_junit(results, EMULATOR)
    assert report.render("csv", results, EMULATOR) == report.format_csv(results, EMULATOR)
    assert report.render("markdown", results, EMULATOR) == report.format_markdown(results, EMULATOR)
    with pytest.raises(PrmgError, match="--report"):
        report.render("yaml", results, EMULATOR)


# --- prmg run --list ---------------------------------------------------------------------------------

def test_format_list_shows_cases_and_count():
    cases = [
        Case(name="mixed_dtypes", source="cases/a.yaml", shape=(2, 4, 8, 128), cos_shape=(1, 4, 1, 64),
             sin_shape=(1, 4, 1, 64), partial_slice=(7, 71), rotary_mode=0, dtype="float16",
             cos_dtype="float32", sin_dtype="float32"),
        Case(name="refuse_int8", source="cases/neg.yaml", shape=(1, 1, 1, 64), cos_shape=(1, 1, 1, 64),
             sin_shape=(1, 1, 1, 64), partial_slice=(0, 64), dtype="int8", cos_dtype="int8",
             sin_dtype="int8", expect=Expect(error=161002)),
    ]
    lines = report.format_list(cases).splitlines()
    assert lines[-1] == "2 cases"
    first = next(line for line in lines if line.startswith("mixed_dtypes"))
    for cell in ("fp16/fp32", "2x4x8x128", "1x4x1x64", "half", "[7, 71)", "success", "cases/a.yaml"):
        assert cell in first
    second = next(line for line in lines if line.startswith("refuse_int8"))
    assert "i8" in second and "161002 ACLNN_ERR_PARAM_INVALID" in second and "interleave" in second
    assert report.format_list(cases[:1]).splitlines()[-1] == "1 case"


# --- prmg bench --------------------------------------------------------------------------------------

BENCH_ROWS = [
    {"name": "llama", "shape": [4, 1024, 32, 128], "dtype": "float16", "cos_dtype": "float32",
     "min_ms": 1.25, "median_ms": 1.5, "bytes": 134_217_728, "gbps": 107.4, "peak_share": 0.0671},
    {"name": "tiny", "shape": (1, 1, 1, 64), "dtype": "float32", "cos_dtype": "float32",
     "min_ms": 0.004, "median_ms": 0.005, "bytes": 768, "gbps": 0.19, "peak_share": None},
]


def test_bench_table_labels_emulator_timings():
    text = report.format_bench(BENCH_ROWS, EMULATOR)
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("case"))
    for column in ("shape", "dtypes", "min ms", "median ms", "bytes moved (MB)", "GB/s", "% of peak"):
        assert column in header
    llama = next(line for line in lines if line.startswith("llama")).split()
    assert llama[1:] == ["4x1024x32x128", "fp16/fp32", "1.250", "1.500", "134.22", "107.40", "6.7"]
    tiny = next(line for line in lines if line.startswith("tiny")).split()
    assert tiny[2] == "fp32" and tiny[-1] == "-"
    assert "host timings (emulator), not NPU" in lines
    assert "host timings" not in report.format_bench(BENCH_ROWS, TOOLKIT)


# --- progress ----------------------------------------------------------------------------------------

class FakeStream(io.StringIO):
    def __init__(self, tty):
        super().__init__()
        self.tty = tty

    def isatty(self):
        return self.tty


def test_progress_draws_on_a_terminal_only():
    terminal = FakeStream(tty=True)
    bar = report.Progress(4, stream=terminal)
    bar.update(passed("first"))
    assert "[#####...............] 1/4 first" in terminal.getvalue()
    bar.update(passed("second"))
    assert "[##########..........] 2/4 second" in terminal.getvalue()
    bar.close()
    assert terminal.getvalue().endswith("\r")

    pipe = FakeStream(tty=False)
    bar = report.Progress(4, stream=pipe)
    bar.update(passed())
    bar.close()
    assert pipe.getvalue() == ""


def test_text_reports_keep_control_characters_off_the_terminal():
    result = failed(name="ansi\x1b[31m", message="boom\x07\nsecond line\x00", details=["d\x1b[0m"])
    for text in (report.format_table([result], EMULATOR), report.format_markdown([result], EMULATOR)):
        assert not any(ch in text for ch in "\x00\x07\x1b")
        assert text.splitlines()[-1] == "0 passed, 1 failed"
    lines = report.format_table([result], EMULATOR).splitlines()
    assert "FAIL ansi[31m: boom" in lines and "    second line" in lines
