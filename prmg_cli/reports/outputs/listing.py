"""``prmg run --list``: the cases that would run, one row each (fitted like the results table), then the
count."""

from __future__ import annotations

from ...case import Case
from ...results import plural, visible
from ...status import status_name
from ...vocab import broadcast_pattern, mode_name
from .labels import dtype_label, shape_label, slice_label
from .short_names import DTYPE_WORDS, MODE_WORDS
from .table import SHORTEN, fit


def expect_label(case: Case) -> str:
    """What a case expects: ``pass``, ``any error`` or ``561002 ACLNN_ERR_...``, and ``known defect``."""
    error = case.expect.error
    text = "pass" if error is None else "any error" if error == "any" else f"{error} {status_name(error)}"
    return text + (" (known defect)" if case.known_defect else "")


def render(cases: list) -> str:
    """The listing of ``cases``: a table (case, op, dtypes, shape, cos, mode, slice, expect, tags, file)."""
    rows = [{"case": visible(case.name), "op": case.op,
             "dtypes": dtype_label(case.dtype, case.cos_dtype, case.sin_dtype), "shape": shape_label(case.shape),
             "cos": broadcast_pattern(case.shape, case.cos_shape) or shape_label(case.cos_shape),
             "mode": visible(mode_name(case.rotary_mode) or "-"), "slice": slice_label(case.partial_slice),
             "expect": expect_label(case), "tags": visible(",".join(case.tags) or "-"),
             "file": visible(case.source)} for case in cases]
    lines = fit(rows, shared_candidates=("op", "mode", "file", "dtypes", "shape", "cos", "slice"),
                order=("file", "cos", "tags", SHORTEN, "shape", "slice", "dtypes", "mode"),
                protect={"mode": MODE_WORDS, "dtypes": DTYPE_WORDS})
    return "\n".join(lines + ["", plural(len(cases), "case")])
