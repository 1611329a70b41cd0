"""``prmg run --list``: the cases that would run, one row each (fitted like the results table), then the
count and, for the cases the target would skip, the line per reason a run prints (``table.grouped_lines``)."""

from __future__ import annotations

from ...case import Case
from ...results import CaseResult, plural, visible
from ...status import status_name
from ...vocab import broadcast_pattern, mode_name
from .labels import dtype_label, shape_label, slice_label
from .screen import width as screen_width, wrap
from .short_names import DTYPE_WORDS, MODE_WORDS
from .table import SHORTEN, fit, grouped_lines

SKIP = "skip"                       # the expect cell of a case the target would skip (its reason is below the table)
_DEFECT = " (known defect)"


def expect_label(case: Case, names: bool = True) -> str:
    """What a case expects: ``pass``, ``any error`` or ``561002 ACLNN_ERR_...`` (the code alone without
    ``names``), and ``known defect``."""
    error = case.expect.error
    text = ("pass" if error is None else "any error" if error == "any" else
            f"{error} {status_name(error)}" if names else str(error))
    return text + (_DEFECT if case.known_defect else "")


def render(cases: list, skipped: list[CaseResult] = (), *, wide: bool = False, width: int | None = None) -> str:
    """The listing of ``cases``: a table (case, op, dtypes, shape, cos, mode, slice, expect, tags, file) fitted to
    ``width`` (default ``screen.width()``; ``wide`` keeps everything), an expected error giving way to its code alone
    before the mode column goes; ``skipped``, the results a run would give the cases the target skips
    (``execute.precheck``), marks their rows ``skip`` and adds their grouped reasons below the count."""
    width = width or screen_width()
    skips = {result.name for result in skipped}
    rows = [{"case": visible(case.name), "op": case.op,
             "dtypes": dtype_label(case.dtype, case.cos_dtype, case.sin_dtype), "shape": shape_label(case.shape),
             "cos": broadcast_pattern(case.shape, case.cos_shape) or shape_label(case.cos_shape),
             "mode": visible(mode_name(case.rotary_mode) or "-"), "slice": slice_label(case.partial_slice),
             "expect": SKIP if case.name in skips else expect_label(case), "tags": visible(",".join(case.tags) or "-"),
             "file": visible(case.source)} for case in cases]
    codes = {expect_label(case): expect_label(case, names=False) for case in cases}

    def codes_only(row: dict) -> dict:
        """A step of the fitting order: an expected error's status keeps its code alone."""
        return {**row, "expect": codes.get(row["expect"], row["expect"])}

    lines = fit(rows, wide=wide, width=width,
                shared_candidates=("op", "mode", "file", "dtypes", "shape", "cos", "slice"),
                order=("file", "cos", "tags", SHORTEN, "shape", "slice", "dtypes", codes_only, "mode"),
                protect={"mode": MODE_WORDS, "dtypes": DTYPE_WORDS})
    count = plural(len(cases), "case") + (f", {len(skips)} of them skipped by the target" if skips else "")
    reasons = [part for line in grouped_lines(list(skipped)) for part in wrap(line, width)]
    return "\n".join(lines + ["", count] + reasons)
