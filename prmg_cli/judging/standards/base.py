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

from ...dtypes import FLOAT_FORMATS, Format, rounded

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
    ``tolerance`` naming one gets the preset's values for the parameters it does not set itself; ``fractions``, the
    parameters that are a share of the slice's elements (at most 1: ``required_matched_ratio: 2`` made a case no
    kernel can pass); ``sampled``, whether the ``sample`` check judges its cases' sampled rows by it after
    ``default``: it judges each element alone (its verdict on some rows is the case's on them) and passes only what
    ``default`` passes (``exact``: a kernel casting ties to the odd neighbour passed its cases under
    ``--no-golden``)."""

    name: str
    defaults: dict
    judge: Callable
    key_metric: str
    describe: Callable
    drift_metric: str
    help: str
    key_margin: Callable[[dict], float | None]
    presets: dict = field(default_factory=dict)
    fractions: tuple = ()
    sampled: bool = False

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

    def nearest(self) -> np.ndarray:
        """``e``: the float64 golden rounded once to the tensor's dtype, as float64 (0 where neutralised; a golden
        past the dtype's range rounds to an infinity)."""
        with np.errstate(over="ignore"):
            return rounded(self.golden, self.x.dtype).astype(np.float64)

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


def short_number(text: str) -> str:
    """A number's text with its exponent written short: ``1.26e+07`` -> ``1.26e7``, ``3e-05`` -> ``3e-5``."""
    mantissa, _, exponent = text.partition("e")
    return f"{mantissa}e{int(exponent)}" if exponent else text


def times(ratio) -> str:
    """How many times its limit a value is, ``x3.45e6`` (``margin`` against 1: never ``x1`` for a value over it);
    ``xinf`` for None (an infinite ratio)."""
    return "x" + short_number(margin(ratio, 1.0))


def against(label: str, value, limit, unit: str = "", *, limit_label: str = "", ratio=None,
            shown: Callable = None) -> tuple[str, bool]:
    """(text, over) of a value against its limit: ``label value unit <= limit_label limit unit`` within it,
    ``label value unit > limit_label limit unit (xR)`` beyond it, R = ``ratio`` (default value / limit; None:
    infinite) -- e.g. ``err 1.26e7 ulp > bound 3.65 ulp (x3.45e6)``. ``shown`` writes the numbers (default
    ``margin`` against the limit, exponents short)."""
    if ratio is None and value is not None and limit is not None:
        ratio = value / limit if limit else (0.0 if value == 0 else None)
    beyond = ratio is None or ratio > 1
    write = shown or (lambda number: short_number(margin(number, limit if limit is not None else 1.0)))
    text = f"{label} {write(value)}{unit} {'>' if beyond else '≤'} {limit_label}{write(limit)}{unit}"
    return (f"{text} ({times(ratio)})" if beyond else text), beyond


def within(label: str, ratio, limit_label: str) -> tuple[str, bool]:
    """(text, over) of an error given only as its ratio to a limit: ``adjoint err <= bound (x0.17)`` within it,
    ``adjoint err > bound (x5.2)`` beyond it (None: infinite)."""
    beyond = ratio is None or ratio > 1
    return f"{label} {'>' if beyond else '≤'} {limit_label} ({times(ratio)})", beyond


def joined(*terms: tuple[str, bool]) -> str:
    """The texts of ``terms`` (``against``/``within``), those beyond their limit first, joined by ``, ``: a table
    too narrow for the whole text keeps what precedes the first ``, `` (``outputs.table``)."""
    return ", ".join(text for text, _ in sorted(terms, key=lambda term: not term[1]))
