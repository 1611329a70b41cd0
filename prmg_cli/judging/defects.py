"""What a wrong-result known defect (``known_defect: {result: wrong, ...}``) bounds, and whether a result stays
within it.

A marker written for one wrongness ("bfloat16 rounding differs by an ulp") must not hide another (a kernel that
does nothing, writes NaN, flips a sign), so a wrong-result defect names at least one bound (``BOUNDS``), and the
case is an xfail only while its wrong elements -- those the case's standard (and the non-finite rule) finds
wrong -- stay within every bound it names:

- ``max_error_ulp: X``: each wrong element errs by at most ``X`` ulps of dy's dtype at the golden,
  ``|actual - golden| / ulp_dy(|golden|)`` (a non-finite wrong element by infinitely many);
- ``elements: K``: at most ``K`` elements of the slice are wrong;
- ``pattern: NAME``: every wrong element lies where ``PATTERNS[NAME]`` says (odd lanes, the last row...).
"""

from __future__ import annotations

import numpy as np

from ..dtypes import Format


def _lanes(shape: tuple[int, ...], keep) -> np.ndarray:
    """The elements of a ``(B, S, N, L)`` slice whose lane ``j`` (from the slice's start) satisfies ``keep(j, L)``."""
    length = shape[-1]
    return np.broadcast_to(keep(np.arange(length), length), shape)


def _last_row(shape: tuple[int, ...]) -> np.ndarray:
    rows = np.zeros(shape[:-1], bool).reshape(-1)
    rows[-1:] = True
    return np.broadcast_to(rows.reshape(shape[:-1])[..., None], shape)


# A pattern's name -> (its text, the mask of the elements of a (B, S, N, L) slice it allows wrong).
PATTERNS = {
    "odd_lanes": ("on odd lanes of the slice", lambda shape: _lanes(shape, lambda j, length: j % 2 == 1)),
    "even_lanes": ("on even lanes of the slice", lambda shape: _lanes(shape, lambda j, length: j % 2 == 0)),
    "first_half": ("in the first half of the slice", lambda shape: _lanes(shape, lambda j, length: j < length // 2)),
    "second_half": ("in the second half of the slice",
                    lambda shape: _lanes(shape, lambda j, length: j >= length // 2)),
    "last_row": ("in the last (b, s, n) row", _last_row),
}
# The bounds a wrong-result defect may name, each with what its value must be (no bound of 0: a wrong element errs by
# more than 0, and 0 wrong elements is no wrong result, so the marker could never be met).
BOUNDS = {"max_error_ulp": "a finite number > 0", "elements": "an integer 1 <= elements <= 2**63 - 1",
          "pattern": f"one of {', '.join(PATTERNS)}"}


def beyond(bounds, actual: np.ndarray, golden: np.ndarray, wrong: np.ndarray, fmt: Format) -> list[str]:
    """What of the wrong elements ``wrong`` (bool, the slice's shape) of the slice ``actual`` (float64, against the
    float64 ``golden``) goes beyond the defect's ``bounds``, one text per bound broken; [] when all hold."""
    found = []
    for key, value in bounds:
        if key == "max_error_ulp":
            with np.errstate(all="ignore"):
                error = np.abs(actual[wrong] - golden[wrong]) / fmt.ulp(np.abs(np.nan_to_num(golden[wrong])))
            worst = float(np.nan_to_num(error, nan=np.inf, posinf=np.inf).max(initial=0.0))
            if worst > value:
                found.append(f"a wrong element errs by {worst:.3g} ulp > max_error_ulp {value:g}")
        elif key == "elements":
            count = int(wrong.sum())
            if count > value:
                found.append(f"{count} elements wrong > elements {value}")
        else:
            text, allowed = PATTERNS[value]
            outside = np.flatnonzero(wrong & ~allowed(wrong.shape))
            if outside.size:
                where = tuple(int(i) for i in np.unravel_index(outside[0], wrong.shape))
                found.append(f"{outside.size} wrong elements not {text} (pattern {value}; the first at (b, s, n, "
                             f"lane) = {where})")
    return found
