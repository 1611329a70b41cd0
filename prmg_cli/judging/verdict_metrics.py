"""The key metric of a result: the metric that marks it, its text in a table and its margin, from the standards' and
the checks' registries (``Standard.key_metric``/``describe``/``key_margin``, ``Check.metric``/``describe``/
``key_margin``), and the metrics whose rise ``prmg compare`` calls a precision drift (each standard's
``drift_metric`` and each oracle check's), read from the registries at each call, so that an entry added to one is
seen.
"""

from __future__ import annotations

from ..status import describe as status_text
from .checks import CHECKS
from .standards import STANDARDS


def _marks():
    """(metric, its text, its margin) of every standard, every check and the status: the first one present in a
    result's metrics is its key metric."""
    return (*((standard.key_metric, standard.describe, standard.key_margin) for standard in STANDARDS.values()),
            *((check.metric, check.describe, check.key_margin) for check in CHECKS.values()),
            ("status", lambda metrics: status_text(metrics["status"]), lambda metrics: None))


def drift_metrics() -> tuple[str, ...]:
    """The metrics whose rise is a precision drift: each standard's ``drift_metric``, each oracle check's metric."""
    return tuple(dict.fromkeys([*(standard.drift_metric for standard in STANDARDS.values()),
                                *(check.metric for check in CHECKS.values() if check.oracle)]))


def _failed(key: str, margin, metrics: dict) -> bool:
    """Whether the mark ``key`` (of ``_marks``, with its ``margin``) says the result is wrong: a margin over 1, or,
    for a mark without one, a count other than 0 (the exact standard's mismatches, the determinism check's; None:
    a repeat's status differed). The status is never such a mark: an expected error's code is no failure."""
    if key == "status":
        return False
    value = margin(metrics)
    return value > 1 if value is not None else metrics[key] != 0


def key_metric(metrics: dict) -> str:
    """A short text of the key number(s) of ``metrics`` against their limits, in their units, for a table column,
    e.g. ``err 0.50 ulp ≤ bound 0.50 ulp, 0% beyond rounding`` or ``err 1.26e7 ulp > bound 3.65 ulp (x3.45e6)``:
    that of the first standard or check whose metric ``metrics`` holds and that failed (``_failed``), else of the
    first whose metric it holds (a case failing its determinism check shows ``repeats differ in 40 elements``, not
    the golden's passing error); led by ``N changed outside the slice`` when elements outside the slice changed
    and by ``N non-finite wrong`` when non-finite elements were wrong. What precedes the first ``, `` is what a
    narrow table keeps."""
    present = [(key, shown, margin) for key, shown, margin in _marks() if key in metrics]
    failed = [mark for mark in present if _failed(mark[0], mark[2], metrics)]
    text = next((shown(metrics) for _, shown, _ in failed + present), "")
    for key, words in (("non_finite", "non-finite wrong"), ("outside_changed", "changed outside the slice")):
        if metrics.get(key):
            text = f"{metrics[key]} {words}" + (f", {text}" if text else "")
    return text


def key_margin(metrics: dict) -> float | None:
    """How close the result came to failing, error / limit (> 1 fails): the margin of the first standard or check
    whose metric ``metrics`` holds and that has one (``key_margin``; not the exact standard's mismatch count);
    None when none has, inf for an infinite ratio."""
    for key, _, margin in _marks():
        value = margin(metrics) if key in metrics else None
        if value is not None:
            return value
    return None


def margins(metrics: dict) -> list[tuple[str, float]]:
    """(metric, margin) of every standard and check whose metric ``metrics`` holds and that has a margin
    (``key_margin``: error / limit, > 1 fails), in the registries' order."""
    found = [(key, margin(metrics)) for key, _, margin in _marks() if key in metrics]
    return [(key, value) for key, value in found if value is not None]


def drift_value(metrics: dict) -> tuple[str, float] | None:
    """(metric, value) of the first of ``drift_metrics()`` that ``metrics`` holds as a number, or None."""
    for key in drift_metrics():
        value = metrics.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return key, float(value)
    return None
