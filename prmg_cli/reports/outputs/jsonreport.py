"""The JSON report: ``{"summary": {...}, "cases": [...]}``, always valid JSON.

``summary`` holds the status counts (every status, ``total``, ``warnings``), ``ok``, the summary line,
the exit code the run ends with, the run's own warnings (``run_warnings``: the pooled error balance of small
cases), and the run's description (``RunInfo``: runner, toolkit and driver
versions, SoC, host, start time, the emulator faults named and their shape); when faults were named,
``fault_cases`` maps each fault that acted to the cases it acted on and ``fault_header`` is the header's
line about them (``labels.fault_field``). ``checks`` lists every golden-free check the run asked for
(``--check``'s and the case files' ``checks:``), ``golden`` says whether every case was judged against the
golden (false under ``--no-golden`` or when a case says ``golden: false``), and ``checks_header`` is the
header's line about them (``labels.checks_field``), as every other format's header says it. ``cases`` holds
each result's fields, ``warnings`` included, and beside ``error_code`` its name (``error_name``). NaN and
infinities are written as the strings ``"nan"``, ``"inf"``, ``"-inf"``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from json.encoder import encode_basestring_ascii

from ...results import (CaseResult, RunInfo, json_safe, report_exit_code, run_warnings, summary_counts,
                        summary_line)
from ...status import status_name
from ...vocab import mode_list, mode_name
from .labels import checks_field, checks_ran, device_line, failures_by_device, fault_cases, fault_field


def summary(results: list[CaseResult], info: RunInfo) -> dict:
    """The ``summary`` object: status counts, ok, the summary line, the exit code and the run info."""
    counts = summary_counts(results)
    code = report_exit_code(results, info)
    faults, checks = fault_field(info, results), checks_field(info, results)
    injected = {"fault_cases": fault_cases(results), "fault_header": f"{faults[0]}: {faults[1]}"} if faults else {}
    names, _, goldless = checks_ran(results)
    ran = {"checks": list(dict.fromkeys([*info.checks, *names])), "golden": info.golden and not goldless,
           **({"checks_header": checks[1]} if checks else {})}
    devices = {"failures_by_device": failures_by_device(results), "device_line": device_line(results)}
    return {**counts, "ok": code == 0, "exit_code": int(code), "line": summary_line(results), **devices,
            "run_warnings": run_warnings(results),
            **info.to_dict(), **injected, **ran, "supported_mode_names": mode_list(info.supported_modes).split(", "),
            "duration_s": sum(r.duration_s or 0.0 for r in results)}


def case_record(result: CaseResult) -> dict:
    """One result for the JSON report: its fields, rotary mode by name, the status code's name beside the code
    (``error_name``)."""
    record = result.to_dict()
    record["rotary_mode"] = mode_name(result.rotary_mode)
    if result.error_code is None:
        return record
    items = list(record.items())
    at = list(record).index("error_code") + 1
    return dict([*items[:at], ("error_name", status_name(result.error_code)), *items[at:]])


def render(results: list[CaseResult], info: RunInfo) -> str:
    """The JSON document of the run (module docstring)."""
    return "".join(pieces(results, info))


def pieces(results: list[CaseResult], info: RunInfo) -> Iterator[str]:
    """The text of ``render`` in pieces, one case at a time: what ``json.dumps(document, indent=2)`` writes, but
    never more than one case's text at once (a report of 200,000 cases is written in the memory of one)."""
    yield '{\n  "summary": ' + indented(summary(results, info), 1) + ',\n  "cases": ['
    for index, result in enumerate(results):
        yield ("," if index else "") + "\n    " + indented(case_record(result), 2)
    yield "\n  ]\n}" if results else "]\n}"


def indented(value, depth: int) -> str:
    """``json.dumps(json_safe(value), indent=2, allow_nan=False)`` with each line after the first ``depth`` levels
    further in: the same text, written without the json module's indenting encoder (Python, not C) and json_safe's
    copy, which took 0.15 s of a fail-fast run's 0.6 s writing its 828 cases (now about 0.06 s)."""
    out: list[str] = []
    _write(value, "\n" + "  " * depth, out)
    return "".join(out)


def _write(value, newline: str, out: list[str]) -> None:
    """Append ``value``'s text to ``out``, its lines after the first starting ``newline``: the plain types by their
    exact type first, anything else as ``json_safe`` makes it (numpy values, tuples, ScoreRows, non-finite floats,
    subclasses: json writes an IntEnum by ``int.__repr__``)."""
    kind = type(value)
    if kind is str:
        out.append(encode_basestring_ascii(value))
    elif kind is dict or kind is list:
        if not value:
            out.append("{}" if kind is dict else "[]")
            return
        inner, opening = newline + "  ", "{" if kind is dict else "["
        for item in value:
            if kind is dict:
                out.append(opening + inner + encode_basestring_ascii(str(item)) + ": ")
                _write(value[item], inner, out)
            else:
                out.append(opening + inner)
                _write(item, inner, out)
            opening = ","
        out.append(newline + ("}" if kind is dict else "]"))
    elif value is None or value is True or value is False:
        out.append("null" if value is None else "true" if value else "false")
    elif kind is int or (kind is float and math.isfinite(value)):
        out.append(repr(value))
    else:
        safe = json_safe(value)
        if isinstance(safe, (dict, list)) or safe is None or isinstance(safe, bool):
            _write(safe, newline, out)
        elif isinstance(safe, str):
            out.append(encode_basestring_ascii(safe))
        else:                                           # an int's or a finite float's subclass, as json writes it
            out.append(int.__repr__(safe) if isinstance(safe, int) else float.__repr__(safe))
