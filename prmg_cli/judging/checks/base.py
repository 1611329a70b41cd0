"""What every golden-free check shares: its record (``Check``), what it may use (``CheckContext``), what it finds
(``CheckResult``), and the tools of the checks that launch: the golden-free element bound, probes, re-aiming a
case at another operator, and a launch that may be refused.

**A golden-free element bound.** An operator's output element is ``out = c*x + sign*s*x'`` (its
``lane_terms``); a correct float32 kernel is within ``E = (2u + u^2)*m`` of the exact value before its final
rounding (``m = |c*x| + |s*x'|``, ``u = 2^-24``, as for the ``default`` standard), and the exact value lies
within ``m`` of zero, so after rounding to the output dtype::

    b = E + ulp_dtype(m + E)/2 + min(4*2^-126, m) + 2^-147

bounds ``|device - exact|`` without any golden (``ulp(m + E) >= ulp(|exact| + E)``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ...case import CONTIGUOUS_STORAGE, Case
from ...dtypes import FLOAT_FORMATS, from_numpy, rounded
from ...inputs.seeded import Inputs, tensor_generator
from ...ops import OPERATORS
from ...vocab import broadcast_shape
from ..standards import FTZ_FLOOR, U32, UNDERFLOW_FLOOR

U64 = 2.0 ** -53


@dataclass
class CheckResult:
    """What one check found: whether it holds, its metrics, why not, details; ``note`` when it could not
    run (a launch of the other operator failed), reported as a warning; ``skipped`` why it is not defined for
    the case (``Check.applies``, or the other operator's rules refuse the case: ``launched``); ``contract`` the
    in-place contract breaches of its launches; ``warnings`` what it saw that is no failure but that ``--strict``
    fails, said only when the golden does not judge the case (the golden's judgement says it of the whole result);
    ``rows`` where it failed, when it can say (adjoint: the rows whose identity broke)."""

    name: str
    passed: bool = True
    metrics: dict = field(default_factory=dict)
    message: str = ""
    details: list = field(default_factory=list)
    note: str = ""
    skipped: str = ""
    contract: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    rows: object = None         # the case's (b, s, n) rows, flat, where it found a launch wrong; None: it cannot say

    @property
    def judged(self) -> bool:
        """True when the check ran to a verdict (neither skipped nor unable to run)."""
        return not (self.note or self.skipped)


@dataclass
class CheckContext:
    """What a check may use: the case, its inputs, the main launch's outcome, a way to launch any case of
    any operator on the device (``launch(case, inputs) -> Outcome``), the values of the checks' options
    (``Check.options``: name -> value), and the chip family it runs on (``targets.Target.soc``: whose rules a launch
    of the other operator is held to, ``launched``; None: the reference chip's)."""

    case: Case
    inputs: Inputs
    outcome: object
    launch: Callable
    options: dict = field(default_factory=dict)
    soc: str | None = None

    def option(self, check: "Check", name: str):
        """The value of ``check``'s option ``name``: the run's, else its default."""
        return self.options.get(name, check.options[name].default)


@dataclass(frozen=True)
class CheckOption:
    """An option a check owns: a ``prmg run --NAME`` flag (and ``--prmg-NAME`` of the pytest plugin), an integer
    from ``minimum`` to ``maximum`` (``default`` when not given)."""

    default: int
    minimum: int
    maximum: int
    metavar: str
    help: str


@dataclass(frozen=True)
class Check:
    """One golden-free check: ``name``, a one-line ``description``, ``run(context) -> CheckResult``, its
    ``metric`` in a result's metrics, that metric's text in a table (``describe(metrics)``) and its margin
    (``key_margin(metrics)``: error / limit, > 1 fails; None for a count), whether it is an oracle (it can find a
    wrong result: its metric's rise is a precision drift), whether it is ``anchored`` to the formula (it compares
    the result with the operator's formula on the host, not only the device's kernels with each other: without the
    golden a case needs one), ``applies(context) -> reason`` ("" when the check is defined for
    the case, else why not), the ``options`` it owns (``CheckOption`` by name) and whether it runs ``first``, right
    after the main launch (determinism: nothing else runs on the device between the launches it compares)."""

    name: str
    description: str
    run: Callable[[CheckContext], CheckResult]
    metric: str
    describe: Callable[[dict], str]
    key_margin: Callable[[dict], float | None]
    oracle: bool = True
    anchored: bool = False
    applies: Callable[[CheckContext], str] = lambda context: no_op(context.case)
    options: dict = field(default_factory=dict)
    first: bool = False


def forward_and_backward(op_name: str):
    """(the forward, its transpose) of the pair that operator ``op_name`` belongs to (``OperatorSpec.adjoint``,
    ``OperatorSpec.direction``)."""
    op = OPERATORS[op_name]
    other = OPERATORS[op.adjoint]
    return (op, other) if op.direction == "forward" else (other, op)


def no_op(case: Case) -> str:
    """Why a check of the slice is not defined for ``case``: its operator's call is a no-op (an empty slice,
    in-place tensor or table: ``OperatorSpec.no_op``), or ""."""
    return "the call is a no-op here (an empty slice, tensor or table)" if OPERATORS[case.op].no_op(case) else ""


def element_bound(op, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, mode: int, piece) -> np.ndarray:
    """The golden-free bound ``b`` of every output element of ``op``'s slice (module docstring)."""
    magnitude = op.magnitude(x, cos, sin, mode, piece)
    fmt = FLOAT_FORMATS[from_numpy(x.dtype).name]
    computation = magnitude * (2 * U32 + U32 * U32)
    bound = 0.5 * fmt.ulp(magnitude + computation)
    bound += computation + np.minimum(magnitude, FTZ_FLOOR) + UNDERFLOW_FLOOR
    return bound


def probe(case: Case, tensor: str, shape, dtype, salt: int) -> np.ndarray:
    """A seeded uniform(-1, 1) probe tensor (the case's seed, ``salt`` apart from its own inputs)."""
    generator = tensor_generator(case.seed ^ (salt << 32), tensor)
    return rounded(generator.uniform(-1.0, 1.0, shape), dtype)


def as_operator(case: Case, inputs: Inputs, op, x: np.ndarray) -> tuple[object, Inputs]:
    """``case`` re-aimed at ``op`` with in-place tensor ``x`` (contiguous, as the probes are): cos/sin expanded
    to BSND and converted exactly to float32 where ``op`` refuses the case's layout or dtype pair (the same
    numbers, the same operator)."""
    cos, sin = inputs.cos, inputs.sin
    shape = tuple(case.cos_shape)
    if shape not in {broadcast_shape(layout, case.shape, case.cos_shape[-1]) for layout in op.layouts}:
        shape = broadcast_shape("BSND", case.shape, case.cos_shape[-1])
        cos, sin = np.ascontiguousarray(np.broadcast_to(cos, shape)), np.ascontiguousarray(np.broadcast_to(sin, shape))
    cos_dtype = case.cos_dtype
    if (case.dtype, cos_dtype) not in op.dtype_pairs:
        cos_dtype = "float32"
        cos, sin = cos.astype(np.float32), sin.astype(np.float32)
    aimed = dataclasses.replace(case, op=op.name, cos_shape=shape, sin_shape=shape, cos_dtype=cos_dtype,
                                sin_dtype=cos_dtype, **CONTIGUOUS_STORAGE, checks=(), golden=True, known_defect=None,
                                correctness_unchecked=None)
    return aimed, Inputs(x, cos, sin)


def refusal(op, case: Case, soc: str | None = None) -> str:
    """Why ``op`` would refuse ``case`` on chip family ``soc`` (its first broken rule), or ""."""
    from ...ops.constraints import violation_details

    found = [v for v in violation_details(case, frozenset({case.rotary_mode}), soc) if not v.skippable]
    return f"the {op.title} operator refuses it: {found[0].message}" if found else ""


def launched(context: CheckContext, case: Case, inputs: Inputs, what: str):
    """``inputs`` through ``case`` on the device: (outcome, {}), or (None, the ``CheckResult`` fields saying why not):
    ``skipped`` when the operator's rules on the chip refuse ``case`` (the check is not defined for it: the forward
    takes no odd D, which the grad does; an A2/A3 chip has no grad kernel; a correct kernel's case, so no warning),
    ``note`` when its launch failed (a warning)."""
    refused = refusal(OPERATORS[case.op], case, context.soc)
    if refused:
        return None, {"skipped": f"{what}: {refused}"}
    outcome = context.launch(case, inputs)
    if outcome.status != 0 or outcome.dy is None:
        return None, {"note": f"{what}: the {OPERATORS[case.op].title} launch returned {outcome.status} "
                              f"{outcome.error_message}"}
    return outcome, {}


def rows(array: np.ndarray) -> np.ndarray:
    """``array`` (B, S, N, L) as float64 rows (B*S*N, L)."""
    return array.reshape(-1, array.shape[-1]).astype(np.float64)


