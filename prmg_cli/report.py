"""Reports of a run: a tabulate table for people; JSON, JUnit XML, CSV and Markdown for machines.

Every function here is pure: it takes the results of a run (``list[CaseResult]``) and what the run
was (``RunInfo``) and returns a string. Writing it somewhere is the caller's job. The one exception is
``Progress``, the terminal progress bar, which writes to stderr when that is a terminal.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import shutil
import sys
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tabulate import tabulate

from . import __version__, dtypes
from .vocab import MODE_NAMES
from .errors import PrmgError
from .status import status_name


@dataclass
class CaseResult:
    """The record of one case, as reports and the results file (JSON lines) hold it.

    status: "passed" | "failed" | "error" | "skipped".
    error_code: the status the operator returned (None when it was not called).
    """

    name: str
    status: str
    message: str = ""
    error_code: int | None = None
    metrics: dict = field(default_factory=dict)
    details: list = field(default_factory=list)
    kernel_ms: float | None = None
    duration_s: float = 0.0
    source: str = ""
    dtype: str = ""
    cos_dtype: str = ""
    shape: list = field(default_factory=list)
    cos_shape: list = field(default_factory=list)
    rotary_mode: str = ""
    partial_slice: list = field(default_factory=list)
    standard: str = ""
    tags: list = field(default_factory=list)
    key_metric: str = ""            # the judge's short summary of the metrics, e.g. "err/budget 0.41"

    def to_dict(self) -> dict:
        """The result as a mapping of its fields (plain values, ready for JSON)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "CaseResult":
        """The CaseResult of a ``to_dict`` mapping; keys that are not fields are ignored."""
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)


@dataclass
class RunInfo:
    """What the report header says about the run."""

    runner: str                 # "aclnn" | "emulator"
    location: str               # toolkit root (or emulator build folder)
    op_library: str = ""        # the library the operator was resolved from
    supported_modes: tuple = (1,)
    devices: tuple = (0,)
    standard: str = "default"
    version: str = ""


STATUSES = ("passed", "failed", "error", "skipped")
VERDICTS = {"passed": "PASS", "failed": "FAIL", "error": "ERROR", "skipped": "SKIP"}
REPORT_FORMATS = ("table", "json", "junit", "csv", "markdown")
TABLE_COLUMNS = ("case", "dtypes", "shape", "cos shape", "mode", "slice", "standard", "metric",
                 "verdict", "kernel time")
CSV_COLUMNS = ("name", "status", "error_code", "dtype", "cos_dtype", "shape", "cos_shape",
               "rotary_mode", "partial_slice", "standard", "kernel_ms", "duration_s", "message",
               "metrics")
EMULATOR_NOTE = "results come from the host emulator, not an NPU"
BENCH_EMULATOR_NOTE = "host timings (emulator), not NPU"

# Characters XML 1.0 cannot carry at all (not even escaped): C0 controls but \t \n \r, lone
# surrogates, U+FFFE and U+FFFF.
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


# ---------------------------------------------------------------------------------------------------
# Summary


def summary_counts(results: list[CaseResult]) -> dict:
    """``{"passed", "failed", "error", "skipped", "total"}``: how many results have each status."""
    counts = {status: 0 for status in STATUSES}
    for result in results:
        if result.status not in counts:
            raise ValueError(f"case '{result.name}': unknown status {result.status!r}")
        counts[result.status] += 1
    counts["total"] = len(results)
    return counts


def summary_line(results: list[CaseResult]) -> str:
    """``N passed, N failed``, then ``, N skipped`` and ``, N errors`` only when they are non-zero."""
    counts = summary_counts(results)
    line = f"{counts['passed']} passed, {counts['failed']} failed"
    if counts["skipped"]:
        line += f", {counts['skipped']} skipped"
    if counts["error"]:
        line += f", {counts['error']} errors"
    return line


# ---------------------------------------------------------------------------------------------------
# Cell formatting shared by every format


def printable(text) -> str:
    """``text`` with the characters XML 1.0 cannot hold removed (escaping is ElementTree's job); the
    text reports use it too, so that no control character reaches a terminal."""
    return _XML_ILLEGAL.sub("", str(text))


def mode_name(mode) -> str:
    """The name of a rotary mode given as its name or its int code (``1`` -> ``interleave``);
    ``""`` when unknown."""
    if isinstance(mode, int) or (isinstance(mode, str) and mode.isdigit()):
        return MODE_NAMES.get(int(mode), str(mode))
    return "" if mode is None else str(mode)


def short_dtype(name: str) -> str:
    """The table label of a dtype (``float16`` -> ``fp16``); unknown names are shown as they are."""
    try:
        return dtypes.lookup(name).short
    except KeyError:
        return str(name)


def dtype_label(dy: str, cos: str = "", sin: str = "") -> str:
    """dy's dtype, then cos's (and sin's) only where they differ: ``fp16``, ``fp16/fp32``,
    ``fp16/fp32/bf16``. An empty name means "the same as the one before"."""
    dy_label = short_dtype(dy) if dy else "-"
    cos_label = short_dtype(cos) if cos else dy_label
    sin_label = short_dtype(sin) if sin else cos_label
    if sin_label != cos_label:
        return f"{dy_label}/{cos_label}/{sin_label}"
    if cos_label != dy_label:
        return f"{dy_label}/{cos_label}"
    return dy_label


def shape_label(shape) -> str:
    """A shape as ``2x4x8x128`` (``-`` when unknown, ``()`` for a scalar)."""
    if shape is None:
        return "-"
    return "x".join(str(extent) for extent in shape) if len(shape) else "-"


def slice_label(partial_slice) -> str:
    """The partial slice as the half-open interval ``[start, end)``."""
    if not partial_slice or len(partial_slice) != 2:
        return "-"
    return f"[{partial_slice[0]}, {partial_slice[1]})"


def ms_label(ms: float | None) -> str:
    """A time in milliseconds for a table cell: ``0.012 ms``, or ``-`` when not measured."""
    if ms is None or not math.isfinite(ms):
        return "-"
    return f"{ms:.3f} ms" if ms >= 0.001 or ms == 0 else f"{ms:.1e} ms"


def _number(value) -> str:
    """A metric value for display: floats with 3 significant digits, anything else as written."""
    value = value.item() if hasattr(value, "item") else value     # numpy scalars
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def metric_label(result: CaseResult) -> str:
    """The key metric(s) of a result: the judge's ``key_metric`` when it gave one, else the first
    two metrics as ``name=value`` with 3 significant digits."""
    if result.key_metric:
        return result.key_metric
    shown = list(result.metrics.items())[:2]
    return " ".join(f"{k}={_number(v)}" for k, v in shown) or "-"


def _verdict(result: CaseResult) -> str:
    """The table's verdict word for a result's status (``VERDICTS``), else the status in capitals."""
    return VERDICTS.get(result.status, result.status.upper())


def _result_row(result: CaseResult) -> list[str]:
    """One row of the results table: name, dtypes, shapes, mode, slice, standard, metric, verdict, time."""
    return [printable(result.name), dtype_label(result.dtype, result.cos_dtype),
            shape_label(result.shape), shape_label(result.cos_shape),
            mode_name(result.rotary_mode) or "-", slice_label(result.partial_slice),
            result.standard or "-", printable(metric_label(result)),
            _verdict(result), ms_label(result.kernel_ms)]


def _version(info: RunInfo) -> str:
    """The prmg version that made the run (this one when the run info names none)."""
    return info.version or __version__


def _mode_names(info: RunInfo) -> str:
    """The target's supported rotary modes by name, comma-separated (``none`` when empty)."""
    return ", ".join(mode_name(mode) for mode in info.supported_modes) or "none"


def _runner_label(info: RunInfo) -> str:
    """What ran the cases: the emulator and its build folder, or the toolkit and the operator library."""
    if info.runner == "emulator":
        return f"emulator (host build at {info.location}); {EMULATOR_NOTE}"
    label = f"{info.runner} toolkit at {info.location}"
    if info.op_library:
        label += f"; operator from {info.op_library}"
    return label


def _header_fields(info: RunInfo) -> list[tuple[str, str]]:
    """The (label, value) lines above a report: runner, target modes, devices, standard, version."""
    return [("runner", _runner_label(info)),
            ("target", f"rotary modes {_mode_names(info)}"),
            ("devices", ", ".join(str(device) for device in info.devices) or "-"),
            ("standard", info.standard),
            ("prmg", _version(info))]


def format_header(info: RunInfo) -> str:
    """The lines above a report: runner (toolkit path or emulator), target modes, devices, standard,
    prmg version. An emulator run says plainly that its results do not come from an NPU."""
    return "\n".join(f"{name}: {value}" for name, value in _header_fields(info))


def _diagnosis(result: CaseResult, indent: str = "    ") -> list[str]:
    """The lines explaining one result: ``FAIL name: message`` then its details, indented."""
    message_lines = printable(result.message).splitlines() or [""]
    lines = [f"{_verdict(result)} {printable(result.name)}: {message_lines[0]}".rstrip()]
    lines += [indent + line for line in message_lines[1:]]
    for detail in result.details:
        lines += [indent + line for line in printable(detail).splitlines()]
    return lines


# ---------------------------------------------------------------------------------------------------
# Table (the default)


def format_table(results: list[CaseResult], info: RunInfo, *, verbose: bool = False) -> str:
    """Header, one table row per case, the diagnosis of each failed or errored case (and skip reasons
    when ``verbose``), a blank line, and the summary line as the very last line."""
    lines = [format_header(info), ""]
    lines.append(tabulate([_result_row(r) for r in results], headers=TABLE_COLUMNS,
                          tablefmt="simple", disable_numparse=True))
    explained = ("failed", "error", "skipped") if verbose else ("failed", "error")
    shown = [r for r in results if r.status in explained]
    if shown:
        lines.append("")
        for result in shown:
            lines += _diagnosis(result)
    lines += ["", summary_line(results)]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------
# JSON


def json_safe(value):
    """``value`` with only JSON-representable parts: numpy scalars and arrays become Python values,
    tuples become lists, and non-finite floats become the strings ``"nan"``, ``"inf"``, ``"-inf"``."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if hasattr(value, "tolist") and hasattr(value, "dtype"):      # numpy scalar or array
        return json_safe(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _summary(results: list[CaseResult], info: RunInfo) -> dict:
    """The ``summary`` object of the JSON report: status counts, ok, the summary line and the run info."""
    counts = summary_counts(results)
    return {**counts,
            "ok": counts["failed"] == 0 and counts["error"] == 0,
            "line": summary_line(results),
            "runner": info.runner,
            "location": info.location,
            "op_library": info.op_library,
            "supported_modes": list(info.supported_modes),
            "supported_mode_names": [mode_name(m) for m in info.supported_modes],
            "devices": list(info.devices),
            "standard": info.standard,
            "version": _version(info),
            "duration_s": sum(r.duration_s or 0.0 for r in results)}


def _case_record(result: CaseResult) -> dict:
    """One result for the JSON report: its fields, rotary mode by name."""
    record = result.to_dict()
    record["rotary_mode"] = mode_name(result.rotary_mode)
    return record


def format_json(results: list[CaseResult], info: RunInfo) -> str:
    """``{"summary": {counts, runner, location, supported_modes, ...}, "cases": [CaseResult fields]}``,
    always valid JSON (NaN and infinities are written as strings)."""
    document = {"summary": _summary(results, info), "cases": [_case_record(r) for r in results]}
    return json.dumps(json_safe(document), indent=2, allow_nan=False)


# ---------------------------------------------------------------------------------------------------
# JUnit XML


def _classname(result: CaseResult) -> str:
    """JUnit classname of a result: ``prmg.<case file stem>``."""
    stem = Path(result.source).stem if result.source else ""
    return f"prmg.{stem or 'cases'}"


def _junit_body(result: CaseResult) -> str:
    """The text of a JUnit failure element: diagnosis lines, the status, the metrics as JSON."""
    lines = [str(d) for d in result.details]
    if result.error_code is not None:
        lines.append(f"status: {result.error_code} {status_name(result.error_code)}")
    if result.metrics:
        lines.append("metrics: " + json.dumps(json_safe(result.metrics), allow_nan=False))
    return "\n".join(lines)


def _junit_case(result: CaseResult) -> ET.Element:
    """The ``<testcase>`` element of one result, with a failure, error or skipped child when it did not pass."""
    case = ET.Element("testcase", classname=_classname(result), name=printable(result.name),
                      time=f"{result.duration_s or 0.0:.3f}")
    if result.status in ("failed", "error", "skipped"):
        tag = {"failed": "failure", "error": "error", "skipped": "skipped"}[result.status]
        outcome = ET.SubElement(case, tag, message=printable(result.message))
        if tag != "skipped":
            outcome.set("type", status_name(result.error_code) if result.error_code else tag)
            outcome.text = printable(_junit_body(result))
    elif result.metrics:
        ET.SubElement(case, "system-out").text = printable(_junit_body(result))
    return case


def format_junit(results: list[CaseResult], info: RunInfo) -> str:
    """JUnit XML as Jenkins, GitLab and GitHub read it: one ``testsuite`` named prmg, one
    ``testcase`` per case with a ``failure``, ``error`` or ``skipped`` child when it did not pass."""
    counts = summary_counts(results)
    totals = {"tests": str(counts["total"]), "failures": str(counts["failed"]),
              "errors": str(counts["error"]), "skipped": str(counts["skipped"]),
              "time": f"{sum(r.duration_s or 0.0 for r in results):.3f}"}
    suites = ET.Element("testsuites", name="prmg", **totals)
    suite = ET.SubElement(suites, "testsuite", name="prmg", **totals)
    properties = ET.SubElement(suite, "properties")
    for name, value in [("runner", info.runner), ("location", info.location),
                        ("op_library", info.op_library), ("target", _mode_names(info)),
                        ("devices", ",".join(str(d) for d in info.devices)),
                        ("standard", info.standard), ("version", _version(info))]:
        ET.SubElement(properties, "property", name=name, value=printable(value))
    suite.extend(_junit_case(r) for r in results)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


# ---------------------------------------------------------------------------------------------------
# CSV


def _csv_row(result: CaseResult) -> dict:
    """One result as a CSV row: shapes joined by ``x``, slice by ``:``, metrics as compact JSON."""
    return {"name": result.name, "status": result.status,
            "error_code": "" if result.error_code is None else result.error_code,
            "dtype": result.dtype, "cos_dtype": result.cos_dtype,
            "shape": "x".join(map(str, result.shape)), "cos_shape": "x".join(map(str, result.cos_shape)),
            "rotary_mode": mode_name(result.rotary_mode),
            "partial_slice": ":".join(map(str, result.partial_slice)),
            "standard": result.standard,
            "kernel_ms": "" if result.kernel_ms is None else json_safe(result.kernel_ms),
            "duration_s": json_safe(result.duration_s), "message": result.message,
            "metrics": json.dumps(json_safe(result.metrics), separators=(",", ":"), allow_nan=False)}


def format_csv(results: list[CaseResult], info: RunInfo) -> str:
    """One header row, then one row per case (columns ``CSV_COLUMNS``). Shapes are ``2x4x8x128``, the
    slice ``start:end``, metrics compact JSON. ``info`` is unused: the rows hold cases only."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(_csv_row(r) for r in results)
    return out.getvalue()


# ---------------------------------------------------------------------------------------------------
# Markdown


def _md_cell(text: str) -> str:
    """``text`` safe inside a Markdown table cell (``|`` escaped, line breaks as spaces)."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def format_markdown(results: list[CaseResult], info: RunInfo) -> str:
    """A heading, the header as a list, a GitHub-flavoured table, a Failures section with each
    diagnosis, and the summary line last."""
    lines = ["# prmg report: aclnnInplacePartialRotaryMulGrad", ""]
    lines += [f"- **{name}**: {_md_cell(value)}" for name, value in _header_fields(info)]
    rows = [[_md_cell(cell) for cell in _result_row(r)] for r in results]
    lines += ["", tabulate(rows, headers=TABLE_COLUMNS, tablefmt="github", disable_numparse=True)]
    failed = [r for r in results if r.status in ("failed", "error")]
    if failed:
        lines += ["", "## Failures"]
        for result in failed:
            lines += ["", f"### {_verdict(result)} `{printable(result.name)}`", "",
                      "```", *_diagnosis(result), "```"]
    lines += ["", summary_line(results)]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------
# Dispatch


def render(fmt: str, results: list[CaseResult], info: RunInfo, verbose: bool = False) -> str:
    """The report of ``results`` in format ``fmt`` (one of ``REPORT_FORMATS``)."""
    if fmt == "table":
        return format_table(results, info, verbose=verbose)
    renderers = {"json": format_json, "junit": format_junit, "csv": format_csv,
                 "markdown": format_markdown}
    if fmt not in renderers:
        raise PrmgError(f"unknown report format {fmt!r}; choose one of {', '.join(REPORT_FORMATS)}",
                        field="--report")
    return renderers[fmt](results, info)


# ---------------------------------------------------------------------------------------------------
# prmg run --list


def _expect_label(expect) -> str:
    """What a case expects, for ``--list``: ``success``, ``any error`` or ``error CODE NAME``."""
    if expect.error is None:
        return "success"
    if expect.error == "any":
        return "any error"
    return f"error {expect.error} {status_name(expect.error)}"


def format_list(cases: list) -> str:
    """The cases that would run (``prmg run --list``): one row each, then ``N cases``."""
    rows = [[case.name, dtype_label(case.dtype, case.cos_dtype, case.sin_dtype),
             shape_label(case.shape), shape_label(case.cos_shape), mode_name(case.rotary_mode) or "-",
             slice_label(case.partial_slice), _expect_label(case.expect), case.source] for case in cases]
    table = tabulate(rows, headers=("case", "dtypes", "shape", "cos shape", "mode", "slice", "expect",
                                    "source"), tablefmt="simple", disable_numparse=True)
    count = f"{len(cases)} case" + ("" if len(cases) == 1 else "s")
    return f"{table}\n\n{count}"


# ---------------------------------------------------------------------------------------------------
# prmg bench


def _fixed(value, digits: int, scale: float = 1.0) -> str:
    """``value * scale`` with ``digits`` decimals, ``-`` for a missing or non-finite value."""
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value * scale:.{digits}f}"


def format_bench(rows: list[dict], info: RunInfo) -> str:
    """The ``prmg bench`` table: per case min and median kernel time, bytes moved (MB = 1e6 bytes),
    achieved GB/s and ``peak_share`` (a fraction of the device's peak bandwidth) as a percentage.
    Emulator runs are labelled as host timings."""
    table_rows = [[row["name"], shape_label(row.get("shape")),
                   dtype_label(row.get("dtype", ""), row.get("cos_dtype", "")),
                   _fixed(row.get("min_ms"), 3), _fixed(row.get("median_ms"), 3),
                   _fixed(row.get("bytes"), 2, 1e-6), _fixed(row.get("gbps"), 2),
                   _fixed(row.get("peak_share"), 1, 100.0)] for row in rows]
    table = tabulate(table_rows, headers=("case", "shape", "dtypes", "min ms", "median ms",
                                          "bytes moved (MB)", "GB/s", "% of peak"),
                     tablefmt="simple", disable_numparse=True, colalign=("left", "left", "left")
                     + ("right",) * 5)
    lines = [format_header(info), "", table]
    if info.runner == "emulator":
        lines += ["", BENCH_EMULATOR_NOTE]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------
# Progress bar


class Progress:
    """A one-line progress bar on stderr, ``[#####.....] 57/300 case_name``, drawn only when the
    stream is a terminal; silent otherwise."""

    WIDTH = 20

    def __init__(self, total: int, stream=None):
        self.total = total
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self._drawn = False

    def update(self, result: CaseResult) -> None:
        """Count one more finished case and redraw the bar with its name."""
        self.done += 1
        if not self.enabled:
            return
        filled = self.WIDTH * self.done // max(self.total, 1)
        line = f"[{'#' * filled}{'.' * (self.WIDTH - filled)}] {self.done}/{self.total} {result.name}"
        columns = shutil.get_terminal_size().columns - 1
        self.stream.write("\r" + line[:columns].ljust(columns))
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        """Erase the bar so that what is printed next starts on a clean line."""
        if self._drawn:
            columns = shutil.get_terminal_size().columns - 1
            self.stream.write("\r" + " " * columns + "\r")
            self.stream.flush()
            self._drawn = False
