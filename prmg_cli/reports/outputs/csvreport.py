"""The CSV report: one header row, then one row per case (``COLUMNS``), the status code with its name beside it, and
what ran it (``runner``: ``emulator`` for the host emulator, as the record says, else the run's), since the CSV has
no header lines to say so.

Shapes are written ``2x4x8x128``, the slice ``start:end``, metrics as compact JSON. Cells that start
with ``= + - @`` are left as they are (CSV has no escaping for spreadsheets); control characters are
shown as escapes.
"""

from __future__ import annotations

import csv
import io
import json

from ...results import CaseResult, RunInfo, json_safe, visible
from ...status import status_name
from ...vocab import mode_name

COLUMNS = ("name", "status", "error_code", "error_name", "op", "dtype", "cos_dtype", "shape", "cos_shape",
           "rotary_mode", "partial_slice", "standard", "kernel_ms", "duration_s", "message", "warnings", "metrics",
           "path", "device", "runner")


def _row(result: CaseResult, info: RunInfo) -> dict:
    """One result of the run ``info`` as a CSV row."""
    return {"name": visible(result.name), "status": result.status,
            "error_code": "" if result.error_code is None else result.error_code,
            "error_name": "" if result.error_code is None else status_name(result.error_code), "op": result.op,
            "dtype": result.dtype, "cos_dtype": result.cos_dtype,
            "shape": "x".join(map(str, result.shape)), "cos_shape": "x".join(map(str, result.cos_shape)),
            "rotary_mode": mode_name(result.rotary_mode),
            "partial_slice": ":".join(map(str, result.partial_slice)),
            "standard": result.standard,
            "kernel_ms": "" if result.kernel_ms is None else json_safe(result.kernel_ms),
            "duration_s": json_safe(result.duration_s), "message": visible(result.message),
            "warnings": "; ".join(visible(w) for w in result.warnings),
            "metrics": json.dumps(json_safe(result.metrics), separators=(",", ":"), allow_nan=False),
            "path": result.path, "device": result.device, "runner": visible(result.runner or info.runner)}


def render(results: list[CaseResult], info: RunInfo) -> str:
    """The CSV document of the results of the run ``info``."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(_row(r, info) for r in results)
    return out.getvalue()
