"""The precision standards: how the slice of a result is judged against the golden. One module per standard,
each holding one ``base.Standard`` record; ``STANDARDS`` is the registry (adding a standard is one module and one
line here). ``standard_of`` is the standard a case is judged by, ``check_standard`` checks a standard's name and a
case's ``tolerance`` (once, where they are read: the case loader and ``--standard``); ``standard_parameters`` gives
the parameters a case is judged with. The others are the standards in use around Ascend, each module stating its
rule and the upstream rule it reproduces (``docs/standards.md`` has the table); ``default`` is derived from float32
rounding (its module says how).
"""

from __future__ import annotations

import math
from typing import Mapping

from . import allclose, default, double_benchmark, double_thousandth, exact, mixed, single_bm
from ...errors import PrmgError, suggest
from ...vocab import DEFAULT_STANDARD
from .base import FTZ_FLOOR, U32, UNDERFLOW_FLOOR, Judgement, SliceView, Standard, margin, over, within

STANDARDS: dict[str, Standard] = {module.STANDARD.name: module.STANDARD for module in (
    default, double_thousandth, single_bm, double_benchmark, allclose, exact, mixed)}

__all__ = ["STANDARDS", "DEFAULT_STANDARD", "Standard", "SliceView", "Judgement", "standard_of", "check_standard",
           "standard_parameters", "U32", "FTZ_FLOOR", "UNDERFLOW_FLOOR", "margin", "over", "within"]


def standard_of(named: str | None, override: str | None = None) -> str:
    """The standard of a case naming ``named`` (None: it names none): ``override`` (``--standard``), else ``named``,
    else ``DEFAULT_STANDARD``."""
    return override or named or DEFAULT_STANDARD


def check_standard(standard: str, tolerance: Mapping[str, float] | None = None, *,
                   file: str | None = None, case: str | None = None) -> None:
    """Raise ``PrmgError`` unless ``standard`` is known and ``tolerance`` only sets its parameters
    (``Standard.params``) to finite numbers >= 0, a share of elements (``Standard.fractions``) to at most 1, a
    preset's (``Standard.presets``) to one of its names. The one
    check of standards and tolerances: the case loader calls it too. The error's field is ``standard`` or
    ``tolerance.KEY``."""
    if not isinstance(standard, str) or standard not in STANDARDS:
        raise PrmgError(f"unknown standard {standard!r}{suggest(standard, STANDARDS)} (valid: {', '.join(STANDARDS)})",
                        file=file, case=case, field="standard")
    accepted = STANDARDS[standard].params
    for key, value in dict(tolerance or {}).items():
        if key not in accepted:
            takes = f"valid: {', '.join(accepted)}" if accepted else "it takes none"
            raise PrmgError(f"standard {standard!r} has no parameter {key!r} ({takes})",
                            file=file, case=case, field=f"tolerance.{key}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or value < 0:
            raise PrmgError(f"{key} must be a finite number >= 0, got {value!r}",
                            file=file, case=case, field=f"tolerance.{key}")
        if key in STANDARDS[standard].fractions and value > 1:
            raise PrmgError(f"{key} must be at most 1 (a share of the slice's elements), got {value!r}",
                            file=file, case=case, field=f"tolerance.{key}")
        presets = STANDARDS[standard].presets.get(key)
        if presets is not None and value not in presets:
            raise PrmgError(f"{key} must be one of {', '.join(map(str, presets))}, got {value!r}",
                            file=file, case=case, field=f"tolerance.{key}")


def standard_parameters(standard: str, dtype: str, tolerance: Mapping[str, float] | None = None) -> dict:
    """The parameters ``standard`` uses for a dy of ``dtype``: its defaults, updated by the presets ``tolerance``
    names (``Standard.presets``), then by ``tolerance``."""
    table = STANDARDS[standard].defaults
    params = dict(table.get(dtype, table.get("*", {})))
    for key, presets in STANDARDS[standard].presets.items():
        if key in dict(tolerance or {}):
            params.update(presets[tolerance[key]])
    params.update({key: float(value) for key, value in dict(tolerance or {}).items()})
    return params
