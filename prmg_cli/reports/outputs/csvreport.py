"""The CSV report: one header row, then one row per case (``COLUMNS``), the status code with its name beside it, and
what ran it (``runner``: ``emulator`` for the host emulator, as the record says, else the run's), since the CSV has
no header lines to say so.

Shapes are written ``2x4x8x128``, the slice ``start:end``, metrics as compact JSON. Every text cell passes through
``cell``: control characters shown as escapes (``results.visible``), and a cell that starts with ``= + - @`` (which a
spreadsheet would run as a formula: ``=cmd|' /c calc'!A1`` from a results file's message, a case file's path) gets a
leading ``'``, as OWASP advises for CSV injection; a number (``-1``, ``1e-05``) is left as it is.
"""

from __future__ import annotations

import csv
import io
import json
import re

from ...results import CaseResult, RunInfo, json_safe, visible
from ...status import status_name
from ...vocab import mode_name

COLUMNS = ("name", "status", "error_code", "error_name", "op", "dtype", "cos_dtype", "shape", "cos_shape",
           "rotary_mode", "partial_slice", "standard", "kernel_ms", "duration_s", "message", "warnings", "metrics",
           "path", "device", "runner")


_FORMULA_START = tuple("=+-@")
_NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?|[-+]?(inf|nan)")


def cell(value) -> str:
    """``value`` as a CSV cell a spreadsheet shows and never runs (module docstring): escapes for control
    characters, and ``'`` before a text that starts like a formula, unless it is a number."""
    text = visible(value)
    if text.startswith(_FORMULA_START) and not _NUMBER.fullmatch(text):
        return "'" + text
    return text


def _row(result: CaseResult, info: RunInfo) -> dict:
    """One result of the run ``info`` as a CSV row."""
    return {key: value if isinstance(value, (int, float)) else cell(value)
            for key, value in _fields(result, info).items()}


def _fields(result: CaseResult, info: RunInfo) -> dict:
    """The values of one result's row, before ``cell``."""
    return {"name": result.name, "status": result.status,
            "error_code": "" if result.error_code is None else result.error_code,
            "error_name": "" if result.error_code is None else status_name(result.error_code), "op": result.op,
            "dtype": result.dtype, "cos_dtype": result.cos_dtype,
            "shape": "x".join(map(str, result.shape)), "cos_shape": "x".join(map(str, result.cos_shape)),
            "rotary_mode": mode_name(result.rotary_mode),
            "partial_slice": ":".join(map(str, result.partial_slice)),
            "standard": result.standard,
            "kernel_ms": "" if result.kernel_ms is None else json_safe(result.kernel_ms),
            "duration_s": json_safe(result.duration_s), "message": result.message,
            "warnings": "; ".join(result.warnings),
            "metrics": json.dumps(json_safe(result.metrics), separators=(",", ":"), allow_nan=False),
            "path": result.path, "device": result.device, "runner": result.runner or info.runner}


def render(results: list[CaseResult], info: RunInfo) -> str:
    """The CSV document of the results of the run ``info``."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(_row(r, info) for r in results)
    return out.getvalue()
