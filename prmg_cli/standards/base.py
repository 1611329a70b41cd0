"""What every precision standard shares: the slice it judges (``SliceView``), its answer (``Judgement``), the
record a standard is (``Standard``), and the float32 facts the ``default`` budget and the checks' bounds use.

A standard is one module of this package holding one ``Standard`` record (its parameters with their default
per dtype, its judge, the metric that marks it, that metric's text in a table and its margin, the metric whose rise
``prmg compare`` calls a precision drift, and a line of help), and one entry in ``standards.STANDARDS``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..dtypes import FLOAT_FORMATS, Format

U32 = 2.0 ** -24                 # float32 unit roundoff
FTZ_FLOOR = 4 * 2.0 ** -126      # a float32 kernel flushing subnormal inputs, products or sums to zero
UNDERFLOW_FLOOR = 2.0 ** -147    # gradual underflow: half of 2^-149 in each of three float32 operations
_RELATIVE_EPS = 1e-7             # denominator guard of MERE/MARE: |a - g| / (|g| + 1e-7)


@dataclass(frozen=True)
class Standard:
    """One precision standard: ``name``; ``defaults``, its parameters per dy dtype (``"*"``: every dtype; the
    parameters a case may set in ``tolerance`` are their keys); ``judge(SliceView) -> Judgement``;
    ``key_metric``, the metric that marks a verdict of it, and ``describe(metrics)``, that metric's text in a
    table (e.g. ``0.50/0.50 ulp, beyond rounding 0%``); ``drift_metric``, the metric whose rise ``prmg compare``
    reports as a precision drift; ``help``, its rule in one line; ``key_margin(metrics)``, how close the verdict
    came to failing: error / limit (> 1 fails), None when it has no such ratio (the HTML report's margins);
    ``presets``, parameters that name a preset of others (``{"level": {1: {"mare_ratio": 5.0, ...}}}``): a case's
    ``tolerance`` naming one gets the preset's values for the parameters it does not set itself."""

    name: str
    defaults: dict
    judge: Callable
    key_metric: str
    describe: Callable
    drift_metric: str
    help: str
    key_margin: Callable[[dict], float | None]
    presets: dict = field(default_factory=dict)

    @property
    def params(self) -> tuple[str, ...]:
        """The parameters a case may set (those its defaults name)."""
        return tuple(next(iter(self.defaults.values())))


@dataclass
class SliceView:
    """What the standards judge: the slice of one case's result, its golden and the inputs behind it.

    ``op`` is the operator's ``OperatorSpec`` (its golden functions); ``x`` the in-place input (dy for
    the grad, x for the forward). ``actual`` and ``golden`` are float64 ``(B, S, N, L)``; where either is
    not finite both hold 0 (those elements are judged apart, by ``nonfinite``).
    """

    op: object
    x: np.ndarray
    cos: np.ndarray
    sin: np.ndarray
    result: np.ndarray                 # the device's in-place tensor, whole
    mode: int
    start: int
    end: int
    dtype: str
    params: dict
    actual: np.ndarray
    golden: np.ndarray
    non_finite: np.ndarray             # flat indices (into the slice) neutralised in actual/golden
    _magnitude: np.ndarray | None = None
    _rounded: np.ndarray | None = None

    @property
    def format(self) -> Format:
        """The in-place tensor's floating-point format."""
        return FLOAT_FORMATS[self.dtype]

    @property
    def piece(self) -> tuple[int, int]:
        """The slice ``(start, end)``."""
        return self.start, self.end

    def magnitude(self) -> np.ndarray:
        """``m = |c*x| + |s'*x'|`` per element (the operator's ``magnitude``), 0 where neutralised."""
        if self._magnitude is None:
            self._magnitude = self.neutral(self.op.magnitude(self.x, self.cos, self.sin, self.mode, self.piece))
        return self._magnitude

    def rounded(self) -> np.ndarray:
        """The golden rounded to the tensor's dtype, in that dtype (the operator's ``golden``)."""
        if self._rounded is None:
            self._rounded = self.op.golden(self.x, self.cos, self.sin, self.mode, self.piece)[..., self.start:self.end]
        return self._rounded

    def neutral(self, values: np.ndarray) -> np.ndarray:
        """``values`` with the neutralised elements set to 0 (in place)."""
        values.flat[self.non_finite] = 0
        return values


@dataclass
class Judgement:
    """A standard's answer: pass/fail, why, its metrics, and per element what the diagnosis needs."""

    failed: bool
    reason: str
    metrics: dict
    bad: np.ndarray                    # bool (B, S, N, L): elements the standard holds wrong
    score: np.ndarray                  # how wrong each element is (worst first in the diagnosis)
    expected: np.ndarray               # the value each element was compared with
    limit: np.ndarray | None = None    # the allowed error per element, when the standard has one
    limit_name: str = ""


def relative_errors(error: np.ndarray, golden: np.ndarray) -> np.ndarray:
    """``|a - g| / (|g| + 1e-7)`` of the absolute errors ``error`` against ``golden``."""
    return error / (np.abs(golden) + _RELATIVE_EPS)


def largest(values: np.ndarray) -> float:
    """The largest of ``values`` as a float, 0.0 for an empty array."""
    return float(values.max()) if values.size else 0.0


def number(metrics: dict, key: str) -> float:
    """``metrics[key]`` as a float; inf when it is missing, None (a ratio that was infinite) or not a number."""
    raw = metrics.get(key)
    try:
        return float("inf") if raw is None else float(raw)
    except (TypeError, ValueError):
        return float("inf")


def over(metrics: dict, key: str, limit: float = 1.0) -> float:
    """``number(metrics, key) / limit``, a margin (> 1 fails); inf for a limit of 0."""
    return number(metrics, key) / limit if limit else float("inf")


def margin(value, limit: float = 1.0) -> str:
    """``value`` with 3 significant digits, more when 3 would print it as ``limit`` although it is not
    (a margin of 0.99997 against 1 reads ``0.99997``, not ``1``); ``inf`` for None."""
    if value is None:
        return "inf"
    text = f"{value:.3g}"
    for digits in range(4, 10):
        if value == limit or float(text) != limit:
            break
        text = f"{value:.{digits}g}"
    return text
