"""JUnit XML as Jenkins, GitLab and GitHub read it: one ``testsuite`` named prmg, one ``testcase`` per case.

A run on the host emulator (or a merged report any of whose results came from it) names its suite ``EMULATED``,
``prmg (host emulator, not an NPU)``: a CI page shows a green suite's name and counts, not its properties.

A failed, errored, xpassed or not-run case has a ``failure`` or ``error`` child; a skipped or xfailed case a
``skipped`` child (pytest writes xfail the same way). A merge of runs judged under settings that differ (``MIXED
SETTINGS``, exit 1) has one more ``testcase``, ``prmg.report``, with an ``error`` naming them, and so has a merge that
``prmg report --strict`` fails on warnings of its shards (``STRICT``, ``RunInfo.warned``). The run's description
is in the suite's ``properties``, one per header line (a name the header repeats, such as a merged report's ``run``
of each shard, repeated: JUnit allows it), and ``path``, how the run called the operator (``RunInfo.path``: geir,
aclnn+geir), which the raw ``runner`` property does not say. Every attribute and text passes through ``xml_text``,
which keeps the document well-formed whatever a file name or message holds (ElementTree escapes markup; ``xml_text``
makes the characters XML 1.0 cannot carry at all visible as escapes instead).
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from ...results import STATUSES, CaseResult, RunInfo, json_safe, summary_counts, visible
from ...status import status_name
from .labels import device_line, header_fields, mixed_field, warned_field

# Characters XML 1.0 cannot carry at all (not even escaped): C0 controls but \t \n \r, lone
# surrogates, U+FFFE and U+FFFF.
EMULATED = "prmg (host emulator, not an NPU)"   # the suite's name when results come from the emulator
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(text) -> str:
    """``text`` safe for an XML 1.0 attribute or element: the characters XML cannot carry shown as
    escapes (``results.visible``), everything else as it is (ElementTree escapes ``<&"``)."""
    text = str(text)
    return _XML_ILLEGAL.sub(lambda match: visible(match.group()), text)


def _classname(result: CaseResult) -> str:
    """JUnit classname of a result: ``prmg.<case file stem>``."""
    stem = Path(result.source).stem if result.source else ""
    return f"prmg.{xml_text(stem) or 'cases'}"


def _body(result: CaseResult) -> str:
    """The text of a failure element: diagnosis lines, warnings, the status, the metrics as JSON, the call path, the
    device (a CI page lists failing tests, not the suite's properties: one chip computing wrong shows on each)."""
    lines = [str(d) for d in result.details] + [f"warning: {w}" for w in result.warnings]
    if result.error_code is not None:
        lines.append(f"status: {result.error_code} {status_name(result.error_code)}")
    if result.metrics:
        lines.append("metrics: " + json.dumps(json_safe(result.metrics), allow_nan=False))
    if result.path:
        lines.append(f"path: {result.path}")
    if result.device:
        lines.append(f"device: {result.device}")
    return "\n".join(lines)


def _testcase(result: CaseResult) -> ET.Element:
    """The ``<testcase>`` element of one result."""
    case = ET.Element("testcase", classname=_classname(result), name=xml_text(result.name),
                      time=f"{result.duration_s or 0.0:.3f}")
    tag, kind = result.info.junit, result.info.junit_type
    if tag:
        message = result.message if result.status != "xfailed" else f"xfailed: {result.known_defect}"
        outcome = ET.SubElement(case, tag, message=xml_text(message))
        if tag != "skipped":
            outcome.set("type", status_name(result.error_code) if result.error_code and kind in ("failure", "error")
                        else kind)
            outcome.text = xml_text(_body(result))
    elif result.metrics or result.warnings:
        ET.SubElement(case, "system-out").text = xml_text(_body(result))
    return case


def _merge_testcases(info: RunInfo) -> list[ET.Element]:
    """A merge of runs judged under settings that differ (``RunInfo.mixed``: exit 1 though every case passed), and one
    ``prmg report --strict`` fails on warnings of its shards (``RunInfo.warned``): a ``testcase`` each with an
    ``error`` naming them, so that a CI page, which shows the counts, does not show it green; [] for any other
    report."""
    cases = []
    for lines, name, field, kind in ((info.mixed, "the merged runs were judged alike", mixed_field, "mixed settings"),
                                     (info.warned, "the merged runs warn of nothing", warned_field, "warnings")):
        if lines:
            case = ET.Element("testcase", classname="prmg.report", name=name, time="0.000")
            label, text = field(info)
            ET.SubElement(case, "error", message=xml_text(f"{label}: {text}"), type=kind).text = xml_text(
                "\n".join(lines))
            cases.append(case)
    return cases


def render(results: list[CaseResult], info: RunInfo) -> str:
    """The JUnit document of the run (module docstring)."""
    counts = summary_counts(results)
    kinds = {tag: sum(counts[status] for status, info in STATUSES.items() if info.junit == tag)
             for tag in ("failure", "error", "skipped")}
    merged = _merge_testcases(info)
    kinds["error"] += len(merged)
    totals = {"tests": str(counts["total"] + len(merged)), "failures": str(kinds["failure"]),
              "errors": str(kinds["error"]),
              "skipped": str(kinds["skipped"]),
              "time": f"{sum(r.duration_s or 0.0 for r in results):.3f}"}
    name = EMULATED if info.runner == "emulator" or any(r.runner == "emulator" for r in results) else "prmg"
    suites = ET.Element("testsuites", name=name, **totals)
    suite = ET.SubElement(suites, "testsuite", name=name, **totals)
    properties = ET.SubElement(suite, "properties")
    raw = {"runner": info.runner, "location": info.location, "op_library": info.op_library,
           "devices": ",".join(str(d) for d in info.devices), "standard": info.standard,
           **({"path": info.path} if info.path else {})}
    # every header line, a name repeated as often as the header has it (a merged report's "run" of each shard)
    values = [(name, raw.pop(name, value)) for name, value in header_fields(info, results)] + list(raw.items())
    concentrated = device_line(results)
    values += [("failures by device", concentrated)] if concentrated else []
    for name, value in values:
        ET.SubElement(properties, "property", name=xml_text(name), value=xml_text(value))
    suite.extend(merged + [_testcase(r) for r in results])
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
