"""Failure diagnosis: where the wrong elements of a result are, said in words, and a coarse error map.

``localise`` finds statements that hold for the set of wrong elements ("errors only on odd lanes", "only
in the last (b, s, n) row", "all rows sharing cos row (s=0) are right, the others wrong", "errors only at
d in [120, 128)"); ``outside_changes`` describes changes outside the slice; ``error_map`` condenses a
per-element score over (row, d) into a small grid for pictures.
"""

from __future__ import annotations

import math

import numpy as np

from ..dtypes import bits
from ..results import plural

WORST = 5                        # worst elements listed on failure
PATTERN_MINIMUM = 10             # wrong elements needed before naming a lane pattern (chance 2^-10)
MAP_ROWS, MAP_COLUMNS = 32, 64   # the largest error map kept in a result

def outside_changes(before: np.ndarray, after: np.ndarray, start: int, end: int):
    """None when the tensor outside ``[start, end)`` is bit-identical; else (summary, detail lines, count,
    bool mask of the changed elements)."""
    changed = bits(after) != bits(before)
    changed[..., start:end] = False
    count = int(changed.sum())
    if not count:
        return None
    depth = before.shape[-1]
    columns = np.flatnonzero(changed.reshape(-1, depth).any(axis=0))
    rows = np.flatnonzero(changed.reshape(-1, depth).any(axis=1))
    summary = (f"outside the slice at d={ranges(columns)} "
               f"({plural(count, 'element')}, {rows_text(rows, before.shape[:3])})")
    lines = [f"outside the slice at {tuple(int(i) for i in index)}: was {number(before[index])}, "
             f"now {number(after[index])}" for index in zip(*np.nonzero(changed))][:WORST]
    return summary, lines, count, changed


def localise(bad: np.ndarray, start: int, cos_shape: tuple[int, ...]) -> list[str]:
    """Statements that hold for the set of wrong elements ``bad`` (bool ``(B, S, N, L)``)."""
    count, length = int(bad.sum()), bad.shape[-1]
    if count == bad.size:
        return ["every element wrong"]
    if count == 0:
        return []
    notes = []
    lanes = np.arange(length)
    columns = bad.reshape(-1, length).any(axis=0)
    if count >= PATTERN_MINIMUM and length >= 2:
        for text, member in (("on odd lanes", lanes % 2 == 1), ("on even lanes", lanes % 2 == 0),
                             ("in the first half of the slice", lanes < length // 2),
                             ("in the second half of the slice", lanes >= length // 2)):
            if not columns[~member].any():
                notes.append(f"errors only {text}")
        used = np.flatnonzero(columns)
        low, high = int(used[0]), int(used[-1]) + 1
        if high - low <= length // 2 and not (notes and high - low == length // 2):
            notes.append(f"errors only at d in [{start + low}, {start + high})")
    rows_shape = bad.shape[:3]
    rows = bad.reshape(-1, length).any(axis=1)
    if rows.all():
        return notes
    bad_rows = np.flatnonzero(rows)
    if len(bad_rows) == 1 and bad_rows[0] == rows.size - 1:
        notes.append(f"errors only in the last (b, s, n) row {_row(bad_rows[0], rows_shape)}")
        return notes
    table_note = _table_rows_note(rows, rows_shape, cos_shape)
    if table_note:
        notes.append(table_note)
    elif len(bad_rows) * 2 <= rows.size:
        notes.append(f"errors only in {rows_text(bad_rows, rows_shape)}")
    else:
        notes.append(f"errors in every row except {rows_text(np.flatnonzero(~rows), rows_shape)}")
    return notes


def _table_rows_note(rows: np.ndarray, rows_shape: tuple[int, ...], cos_shape: tuple[int, ...]) -> str:
    """When cos/sin broadcast and every group of rows sharing one cos row is all right or all wrong:
    "all rows sharing cos row (s=0) are right, the others wrong" (or the reverse); else ""."""
    table_axes = [axis for axis in range(3) if cos_shape[axis] > 1]
    table_rows = int(np.prod([cos_shape[axis] for axis in table_axes], dtype=np.int64))
    if not 1 < table_rows < rows.size:
        return ""
    index = np.indices(rows_shape).reshape(3, -1)
    table_of_row = np.ravel_multi_index(tuple(index[axis] for axis in table_axes),
                                        tuple(cos_shape[axis] for axis in table_axes))
    wrong_rows = np.bincount(table_of_row, weights=rows, minlength=table_rows)
    all_rows = np.bincount(table_of_row, minlength=table_rows)
    if not np.all((wrong_rows == 0) | (wrong_rows == all_rows)):
        return ""
    right = np.flatnonzero(wrong_rows == 0)
    wrong = np.flatnonzero(wrong_rows > 0)
    names = "bsn"

    def label(groups):
        """``cos rows (b=0, s=1), ... and K more``: the first three cos rows of ``groups`` and the count left."""
        coordinates = np.unravel_index(groups, tuple(cos_shape[axis] for axis in table_axes))
        shown = [", ".join(f"{names[axis]}={int(c[i])}" for axis, c in zip(table_axes, coordinates))
                 for i in range(min(3, len(groups)))]
        more = f" and {len(groups) - 3} more" if len(groups) > 3 else ""
        return f"cos row{'s' * (len(groups) > 1)} " + ", ".join(f"({text})" for text in shown) + more

    if len(right) <= len(wrong):
        return f"all rows sharing {label(right)} are right, the others wrong"
    return f"all rows sharing {label(wrong)} are wrong, the others right"


def _row(flat: int, rows_shape: tuple[int, ...]) -> str:
    """Flat row number ``flat`` as its ``(b, s, n)`` tuple in ``rows_shape``."""
    return str(tuple(int(i) for i in np.unravel_index(flat, rows_shape)))


def rows_text(rows: np.ndarray, rows_shape: tuple[int, ...]) -> str:
    """e.g. "row (0, 1, 0)", "rows (0, 0, 0), (0, 1, 0), (0, 2, 0), ... (5 of 24 rows)", "every row"."""
    total = int(np.prod(rows_shape, dtype=np.int64))
    if len(rows) == total:
        return "every row"
    if len(rows) == 1:
        return f"row {_row(rows[0], rows_shape)}"
    shown = ", ".join(_row(r, rows_shape) for r in rows[:3])
    return f"rows {shown}{', ...' if len(rows) > 3 else ''} ({len(rows)} of {plural(total, 'row')})"


def ranges(values: np.ndarray) -> str:
    """Sorted ints as ranges: [1, 2, 3, 7] -> "1-3, 7" (at most four ranges shown)."""
    breaks = np.flatnonzero(np.diff(values) != 1)
    firsts, lasts = np.r_[values[0], values[breaks + 1]], np.r_[values[breaks], values[-1]]
    parts = [f"{a}" if a == b else f"{a}-{b}" for a, b in zip(firsts.tolist(), lasts.tolist())]
    return ", ".join(parts[:4]) + (", ..." if len(parts) > 4 else "")


def number(value) -> str:
    """``value`` with 8 significant digits."""
    return f"{float(value):.8g}"


def _cell(value: float) -> float:
    """``value`` to 3 significant digits, more where 3 would move it across the limit 1 or onto it (0.9997 stays
    below: as 1.0 a correct bfloat16 result's half-ulp errors, nearly all of their budget, were drawn as over it)."""
    shown = float(f"{value:.3g}")
    return shown if (shown > 1) == (value > 1) and (shown >= 1) == (value >= 1) else float(f"{value:.9g}")


def error_map(score: np.ndarray, start: int, depth: int, changed_outside: np.ndarray | None = None) -> dict:
    """A coarse map of ``score`` (``(B, S, N, L)``, e.g. error/budget; > 1 is wrong) over (row, d) of the
    whole last axis: at most ``MAP_ROWS`` x ``MAP_COLUMNS`` cells, each the largest score it covers (3
    significant digits; None where nothing was judged, i.e. outside the slice, unless ``changed_outside``
    (bool, the whole tensor's shape) marks a change there, shown as 1e9).

    Returns ``{"rows", "depth", "slice": [start, end], "row_edges", "column_edges", "values"}``.
    """
    length = score.shape[-1]
    rows = int(np.prod(score.shape[:-1], dtype=np.int64))
    row_edges = np.unique(np.linspace(0, rows, min(rows, MAP_ROWS) + 1).astype(np.int64))
    column_edges = np.unique(np.linspace(0, depth, min(depth, MAP_COLUMNS) + 1).astype(np.int64))
    slice_scores = np.nan_to_num(score.reshape(rows, length).astype(np.float64), nan=1e9, posinf=1e9)
    grid = np.full((len(row_edges) - 1, depth), np.nan)
    grid[:, start:start + length] = np.fmax.reduceat(slice_scores, row_edges[:-1], axis=0)
    if changed_outside is not None and changed_outside.any():
        outside = np.logical_or.reduceat(changed_outside.reshape(rows, depth), row_edges[:-1], axis=0)
        grid[outside] = 1e9
    grid = np.fmax.reduceat(grid, column_edges[:-1], axis=1)
    values = [[None if math.isnan(v) else _cell(v) for v in line] for line in grid.tolist()]
    return {"rows": rows, "depth": depth, "slice": [start, start + length], "row_edges": row_edges.tolist(),
            "column_edges": column_edges.tolist(), "values": values}
