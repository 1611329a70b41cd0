"""Which regime classes a suite covers: ``prmg coverage PATH...`` and the one-line coverage of a run's reports.

A class (``ops/regimes.py``) is covered by a case that really exercises it, decided from the case's
``Facts`` (``facts``):

- only a case expecting success counts for the classes of its shape, dtypes, slice and values (it reaches
  the kernel); only a case expecting an error counts for the phase classes, each by the first rule it breaks
  on today's target (``constraints.DEFAULT_SUPPORTED_MODES``) or on a target implementing every mode, and only
  when its expectation pins that rule's refusal, code and phase (``pins``: ``error: any`` or ``phase: any``
  passes whatever refuses it, so it covers no rule); any case counts for the chip and build classes: the rule it
  breaks first on a chip with rules of its own (the forward's A2/A3 tiling), the builds on which it earns another
  status than on the latest (``_elsewhere``);
- a case with a ``known_defect`` covers nothing (an xfail: the operator is known to miss there), nor does a run's
  xfailed result;
- ``cos/sin vary along B`` needs cos's and sin's B equal to dy's B > 1 *and* values that differ along B: a
  uniform or normal draw whose range the dtype can tell apart, a RoPE table with per-request offsets (a
  RoPE table varies along S only), explicit values or a file that differ there;
- the value kinds (ordinary and special) are read from the inputs themselves: the explicit
  ``values``/``bits``/``file`` data, the RoPE table, or the first ``SAMPLE`` elements of a drawn tensor, made
  by the run's own draw through the case's generator (``seeded.drawn_prefix``, float64), each rounded once to
  the tensor's dtype as the inputs round it (``dtype_bits``) and read as its bits (sign, exponent, fraction:
  ``dtypes.FLOAT_FORMATS``). dy's elements are inside or outside the slice by their lane.

A suite's coverage counts every case of it (a case its target would skip counts: the suite holds it); a
run's (``run_line``, in the table and HTML reports) counts only the cases that ran.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, fields, replace
from functools import lru_cache
from operator import attrgetter
from pathlib import Path

import numpy as np

from .. import dtypes
from ..case import CONTIGUOUS_STORAGE, Case, contiguous_strides, transposed
from ..errors import PrmgError
from ..inputs import npyfile
from ..inputs.seeded import drawn_prefix, rope_angles
from ..ops import OPERATORS, constraints
from ..ops.forward import membase_decode_heads
from ..ops.grad import contiguous
from ..ops.reference import partners_alike
from ..ops.regimes import ALIGN_BYTES, BUILD, CHIP, PHASE, Facts, Regime, regimes
from ..ops.targets import LATEST_BUILD, MEMBASE_SOCS
from ..results import STATUSES
from ..vocab import MODE_NAMES, TENSORS, broadcast_pattern

SAMPLE = 4096                                    # elements of a drawn tensor read for its special values
# statuses of cases that were launched and judged: not xfailed (a known defect hides what the kernel does there)
RAN = tuple(status for status, info in STATUSES.items() if info.evidence == 2)
MISSING_SHOWN = 8                                # at most this many missing classes are named on a one-line summary
RUN_HINT = "prmg coverage lists them"                 # where a run's coverage line sends for the missing classes
RUN_LINE_LIMIT = 50_000                          # ran cases past which a report's coverage line is not computed


# ---------------------------------------------------------------------------------------------------
# Values as bits


def dtype_bits(values: np.ndarray, dtype: str) -> np.ndarray:
    """float64 ``values`` rounded once to nearest even in ``dtype`` (float32, float16, bfloat16) as their bit
    patterns (uint64), exactly as the inputs round them (``dtypes.round_into``): float32 and float16 by numpy's
    cast, which keeps a NaN's sign and leading payload bits; bfloat16 by ``dtypes.bfloat16_bits``, which gives
    the quiet NaN with its sign (and needs no ml_dtypes)."""
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    if dtype == "bfloat16":
        return dtypes.bfloat16_bits(values).astype(np.uint64)
    with np.errstate(over="ignore", invalid="ignore"):
        return values.astype(np.dtype(dtype)).view(f"u{np.dtype(dtype).itemsize}").astype(np.uint64)


@lru_cache(maxsize=None)
def _binades(dtype: str) -> tuple[float, float]:
    """(the smallest normal, the bottom of the top binade) of ``dtype``: 2**(1 - bias) and 2**bias."""
    exponent_bits = dtypes.FLOAT_FORMATS[dtype].exponent_bits
    bias = 2 ** (exponent_bits - 1) - 1
    return 2.0 ** (1 - bias), 2.0 ** bias


def value_kinds(bits: np.ndarray, dtype: str) -> set[str]:
    """The kinds (``regimes.VALUE_KINDS``) among the bit patterns ``bits`` of ``dtype``: ``ordinary`` for a normal
    number below the top binade (biased exponent from 1 to top - 2), the special kinds by exponent, fraction
    and sign."""
    if not bits.size:
        return set()
    fmt = dtypes.FLOAT_FORMATS[dtype]
    exponent_bits, fraction_bits = fmt.exponent_bits, fmt.fraction_bits
    top = (1 << exponent_bits) - 1
    exponent = (bits >> fraction_bits) & top
    special = (exponent == 0) | (exponent >= top - 1)
    found = {"ordinary"} if not special.all() else set()
    if not special.any():
        return found
    bits, exponent = bits[special], exponent[special]
    sign = (bits >> (exponent_bits + fraction_bits)) & 1
    fraction = bits & ((1 << fraction_bits) - 1)
    nan = (exponent == top) & (fraction != 0)
    inf = (exponent == top) & (fraction == 0)
    zero = (exponent == 0) & (fraction == 0)
    masks = {"large": exponent == top - 1, "subnormal": (exponent == 0) & (fraction != 0),
             "+0": zero & (sign == 0), "-0": zero & (sign == 1), "NaN": nan, "-NaN": nan & (sign == 1),
             "NaN payload": nan & (fraction != 1 << (fraction_bits - 1)), "+Inf": inf & (sign == 0),
             "-Inf": inf & (sign == 1)}
    return found | {kind for kind, mask in masks.items() if mask.any()}


def _may_draw_special(low: float, high: float, count: int, dtype: str) -> bool:
    """Whether ``count`` uniform draws from [low, high] may hold a special value of ``dtype`` (zero, subnormal,
    top binade or beyond) at all: the chance of one draw, ``|[low, high] n special| / (high - low)``, times
    ``count`` is not negligible (1e-12)."""
    if high <= low:
        return True
    tiny, large = _binades(dtype)
    special = max(0.0, min(high, tiny) - max(low, -tiny)) + max(0.0, high - max(low, large)) \
        + max(0.0, min(high, -large) - low)
    return special / (high - low) * count > 1e-12


# ---------------------------------------------------------------------------------------------------
# Facts of a case


_FIELDS = {"dy": ("shape", "dtype"), "cos": ("cos_shape", "cos_dtype"), "sin": ("sin_shape", "sin_dtype")}


def _shape_of(case: Case, tensor: str) -> tuple[int, ...]:
    return getattr(case, _FIELDS[tensor][0])


def _dtype_of(case: Case, tensor: str) -> str:
    return getattr(case, _FIELDS[tensor][1])


def _data_bits(case: Case, tensor: str, limit: int | None) -> np.ndarray | None:
    """The bit patterns of the first ``limit`` elements (None: all) of ``tensor`` in C order, for the input
    kinds whose values are given or computed (``values``, ``bits``, ``file``, ``rope``); None for a draw."""
    spec, dtype, shape = case.input_spec(tensor), _dtype_of(case, tensor), _shape_of(case, tensor)
    if spec.kind == "values":
        return dtype_bits(np.asarray(spec.args[:limit], dtype=np.float64), dtype)
    if spec.kind == "bits":
        return np.asarray(spec.args[:limit], dtype=np.uint64)
    if spec.kind == "file":
        try:
            array = npyfile.load(spec.args[0], math.prod(shape), spec.args[1] if len(spec.args) > 1 else None)
        except npyfile.NpyError:
            return np.zeros(0, np.uint64)                  # unreadable now: it exercises nothing we can see
        array = array.reshape(-1)[:limit]
        if dtype == "bfloat16" and array.dtype == np.uint16:
            return array.astype(np.uint64)
        return dtype_bits(array.astype(np.float64), dtype)
    if spec.kind == "rope":
        base, offset = spec.args
        rows = shape[-3] if limit is None or len(shape) < 3 else min(shape[-3], max(1, limit // max(shape[-1], 1)))
        table = (*shape[:-3], rows, 1, shape[-1]) if len(shape) >= 3 else shape
        angles = rope_angles(table, case.rotary_mode, base, offset)
        return dtype_bits((np.cos if tensor == "cos" else np.sin)(angles), dtype)
    return None


def _sample_bits(case: Case, tensor: str) -> np.ndarray | None:
    """The bit patterns of the first ``SAMPLE`` elements of ``tensor`` (all of them when given explicitly); a
    draw is made by ``seeded.drawn_prefix`` (the run's own draw). None for a uniform draw that cannot hold a
    special value (``_may_draw_special``): every element is ordinary."""
    given = _data_bits(case, tensor, None if case.input_spec(tensor).kind in ("values", "bits") else SAMPLE)
    if given is not None:
        return given
    spec, count = case.input_spec(tensor), min(math.prod(_shape_of(case, tensor)), SAMPLE)
    if spec.kind == "uniform" and not _may_draw_special(*spec.args, count, _dtype_of(case, tensor)):
        return None
    return dtype_bits(drawn_prefix(case, tensor, count), _dtype_of(case, tensor))


@lru_cache(maxsize=1024)
def _distinct(low: float, high: float, dtype: str) -> bool:
    """Whether ``low`` and ``high`` round to different values of ``dtype`` (so draws between them differ)."""
    low_bits, high_bits = dtype_bits(np.array([low, high]), dtype)
    return bool(low_bits != high_bits)


def _varies(case: Case, tensor: str, axis: int) -> bool:
    """Whether ``tensor``'s values differ along ``axis`` (0, 1, 2: B, S, N)."""
    spec, dtype, shape = case.input_spec(tensor), _dtype_of(case, tensor), _shape_of(case, tensor)
    if spec.kind in ("uniform", "normal"):
        low, high = spec.args
        return _distinct(*((low, high) if spec.kind == "uniform" else (low - high, low + high)), dtype)
    if spec.kind == "rope":
        offset = spec.args[1]
        return axis == 1 or (axis == 0 and isinstance(offset, tuple) and len(set(offset)) > 1)
    data = _data_bits(case, tensor, None)
    if data is None or data.size != math.prod(shape):
        return False
    data = data.reshape(shape)
    return bool(np.any(data != data.take([0], axis=axis)))


def _special_values(case: Case, bits_of: Callable = _sample_bits) -> frozenset:
    """The (place, kind) pairs of the value kinds in ``case``'s inputs (module docstring), ``bits_of(case,
    tensor)`` giving a tensor's first elements as bits (None: all ordinary; ``_sample_bits``)."""
    def kinds(bits: np.ndarray | None, dtype: str, count: int) -> set[str]:
        return value_kinds(bits, dtype) if bits is not None else {"ordinary"} if count else set()

    found = set()
    dy = bits_of(case, "dy")
    count = dy.size if dy is not None else min(math.prod(case.shape), SAMPLE)
    lanes = np.arange(count) % max(case.shape[-1], 1)
    inside = (lanes >= case.partial_slice[0]) & (lanes < case.partial_slice[1])
    for place, mask in (("dy_in", inside), ("dy_out", ~inside)):
        found |= {(place, kind) for kind in kinds(None if dy is None else dy[mask], case.dtype, int(mask.sum()))}
    for tensor in ("cos", "sin"):
        found |= {("tables", kind) for kind in kinds(bits_of(case, tensor), _dtype_of(case, tensor),
                                                   math.prod(_shape_of(case, tensor)))}
    return frozenset(found)


def _partners_differ(case: Case) -> bool:
    """Whether ``case``'s sin tells a pair's two lanes apart (``reference.sin_partners``): a draw whose range the
    dtype can tell apart, explicit values or a file that differ there; never a RoPE table (alike at both lanes)."""
    spec, start, end = case.sin_input, *case.partial_slice
    if end <= start or spec.kind == "rope":
        return False
    if spec.kind in ("uniform", "normal"):
        low, high = spec.args
        return _distinct(*((low, high) if spec.kind == "uniform" else (low - high, low + high)), case.sin_dtype)
    data = _data_bits(case, "sin", None)
    if data is None or data.size != math.prod(case.sin_shape):
        return False
    return not partners_alike(OPERATORS[case.op].rotation, data.reshape(case.sin_shape), case.rotary_mode)


def _long_strides(case: Case, tensor: str) -> tuple[int, ...]:
    """The strides of ``tensor``'s axes of length > 1 (those that move its view; its strides if none given)."""
    strides = case.strides_of(tensor) or ()
    return tuple(stride for dim, stride in zip(case.shape_of(tensor), strides) if dim > 1)


def facts(case: Case, supported_modes=constraints.DEFAULT_SUPPORTED_MODES) -> Facts:
    """What ``case`` exercises (``regimes.Facts``): for a negative case the first rule it breaks on a target of
    ``supported_modes`` and on one of every mode; for a pass case its shape, dtypes, slice and values."""
    elsewhere = _elsewhere(case, supported_modes)
    if not case.expect.success:
        rules = [found[0].rule for modes in (supported_modes, frozenset(MODE_NAMES))
                 if (found := constraints.violation_details(case, modes)) and pins(case.expect, found[0])]
        return Facts(op=case.op, expects_error=True, first_rules=tuple(dict.fromkeys(rules)), **elsewhere)
    batch, positions, heads, depth = case.shape
    strided = {tensor: case.strides_of(tensor) is not None
               and not contiguous(case.shape_of(tensor), case.strides_of(tensor)) for tensor in TENSORS}
    written = case.slice_argument()
    return Facts(
        op=case.op, dtype=case.dtype, cos_dtype=case.cos_dtype, mode=case.rotary_mode,
        layout=broadcast_pattern(case.shape, case.cos_shape), format=case.format,
        strided=strided["dy"], strided_tables=strided["cos"] or strided["sin"],
        offsets=frozenset(tensor for tensor in TENSORS if case.offset_of(tensor) and not strided[tensor]),
        strided_offsets=frozenset(tensor for tensor in TENSORS if case.offset_of(tensor) and strided[tensor]),
        offset_off_block=frozenset(tensor for tensor in TENSORS if case.offset_of(tensor) * dtypes.bit_width(
            case.dtype_of(tensor)) // 8 % ALIGN_BYTES),
        transposed=frozenset(tensor for tensor in TENSORS if strided[tensor]
                             and transposed(case.shape_of(tensor), case.strides_of(tensor))),
        expanded=frozenset(tensor for tensor in TENSORS if case.expanded_axes(tensor)),
        tables_unlike=strided["cos"] and strided["sin"] and _long_strides(case, "cos") != _long_strides(case, "sin"),
        length_one_strided=frozenset(tensor for tensor in TENSORS if case.strides_of(tensor) is not None
                                     and not strided[tensor] and tuple(case.strides_of(tensor))
                                     != contiguous_strides(case.shape_of(tensor))),
        slice_list="null" if written is None else "longer" if len(written) > 2 else "pair",
        partners_differ=_partners_differ(case), decode_heads=membase_decode_heads(case),
        B=batch, S=positions, N=heads, D=depth, cos_rows=math.prod(case.cos_shape[:3]),
        start=case.partial_slice[0], end=case.partial_slice[1], itemsize=dtypes.bit_width(case.dtype) // 8,
        varies=frozenset(axis for index, axis in enumerate("BSN")
                         if case.cos_shape[index] == case.shape[index] > 1
                         and not any(index in case.expanded_axes(tensor) for tensor in ("cos", "sin"))
                         and all(_varies(case, tensor, index) for tensor in ("cos", "sin"))),
        values=_special_values(case), **elsewhere)


# What no rule reads of a case: cases that differ only there break the same rules (``_elsewhere``).
_RULE_BLIND = ("name", "source", "seed", "tags", "note")
_RULED = attrgetter(*(field.name for field in fields(Case) if field.name not in _RULE_BLIND))
_RULED_ELSEWHERE: dict[tuple, dict] = {}            # (_RULED(case), supported modes) -> _elsewhere(case)


def _elsewhere(case: Case, supported_modes) -> dict:
    """``Facts``' ``chip_rules``, the rule ``case`` breaks first on the A2/A3 chips (one tiling for both) when its
    operator runs there and the rule is theirs alone (``OperatorSpec.chip_rules``), and ``builds_differ``, the builds
    of ``OperatorSpec.builds`` on which it earns another status than on the latest: found once for all the cases
    that differ only in what no rule reads (``_RULE_BLIND``: their name, file, seed, tags and note), remembered by
    the other fields (a copy of the case without those cost 20-30 us a case)."""
    key = (_RULED(case), supported_modes)
    found = _RULED_ELSEWHERE.get(key)
    if found is None:
        if len(_RULED_ELSEWHERE) >= 1 << 10:
            _RULED_ELSEWHERE.clear()
        found = _RULED_ELSEWHERE[key] = _ruled_elsewhere(case, supported_modes)
    return found


def _ruled_elsewhere(case: Case, supported_modes) -> dict:
    """``_elsewhere`` of ``case``, found."""
    spec = OPERATORS[case.op]
    chips = [found[0].rule for soc in sorted(MEMBASE_SOCS.intersection(spec.socs))[:1]
             if (found := constraints.violation_details(case, supported_modes, soc))
             and found[0].rule in spec.chip_rules]
    statuses = {build: constraints.expected_status(case, supported_modes, build=build) for build in spec.builds}
    return {"chip_rules": tuple(chips), "builds_differ": frozenset(
        build for build, code in statuses.items() if code != statuses[LATEST_BUILD])}


def pins(expect, violation) -> bool:
    """Whether the expectation ``expect`` pins ``violation``'s refusal: its code (not ``any``) and its phase (not
    ``any``), so that the case fails when the operator refuses it for another rule or in another phase."""
    phase = "launch" if violation.at_launch else "workspace"
    return expect.error == violation.code and expect.phase == phase


@lru_cache(maxsize=None)
def _tests(op: str, phase: bool) -> tuple[tuple[int, Callable], ...]:
    """(index, test) of the classes of ``op`` on the phase axis (``phase``) or on the others; those of another chip
    or build on both."""
    return tuple((index, regime.test) for index, regime in enumerate(regimes(op))
                 if (regime.axis == PHASE) == phase or regime.axis in (CHIP, BUILD))


@lru_cache(maxsize=1 << 12)
def classes_of(case_facts: Facts) -> tuple[int, ...]:
    """The indices into ``regimes(op)`` of the classes ``case_facts`` falls in (only the phase classes for a
    case expecting an error, only the others for one expecting success); remembered, as the cases of a suite
    share a few facts (300 small cases of a run: 3)."""
    return tuple(index for index, test in _tests(case_facts.op, case_facts.expects_error) if test(case_facts))


# ---------------------------------------------------------------------------------------------------
# A suite's coverage


@dataclass
class ClassCoverage:
    """One class of one operator: how many cases cover it and the first of them."""

    regime: Regime
    count: int = 0
    example: str | None = None


@dataclass
class OpCoverage:
    """The classes of one operator and their cases."""

    op: str
    classes: list[ClassCoverage]

    @property
    def covered(self) -> int:
        return sum(1 for item in self.classes if item.count)

    @property
    def total(self) -> int:
        return len(self.classes)

    @property
    def missing(self) -> list[Regime]:
        return [item.regime for item in self.classes if not item.count]


_PREPARED: dict[int, tuple[Case, tuple[int, ...]]] = {}      # id(case) -> (case, its classes): prepare_classes


def case_classes(case: Case) -> tuple[int, ...]:
    """``classes_of(facts(case))``, found ahead by ``prepare_classes`` when it was asked for this case object."""
    found = _PREPARED.get(id(case))
    return found[1] if found is not None and found[0] is case else classes_of(facts(case))


def prepare_classes(cases: Sequence[Case]) -> Iterator[None]:
    """Find ``case_classes`` of each of ``cases`` (those ``evaluate`` counts) ahead, one case a step: a run's coverage
    line, found while its worker runs the cases (``Executor.run``'s ``idle``) rather than after the last one. A case
    whose facts raise is left to ``evaluate``, which meets the same error where it always did."""
    _PREPARED.clear()
    for case in cases:
        if not case.known_defect:
            try:
                _PREPARED[id(case)] = (case, classes_of(facts(case)))
            except Exception:
                pass
        yield


def evaluate(cases: Sequence) -> list[OpCoverage]:
    """The coverage of ``cases`` for each operator with at least one case, in ``OPERATORS`` order."""
    tables = {op: OpCoverage(op, [ClassCoverage(regime) for regime in regimes(op)]) for op in OPERATORS}
    seen = set()
    for case in cases:
        seen.add(case.op)
        if case.known_defect:                   # an xfail: the operator is known to miss there, nothing covered
            continue
        classes = tables[case.op].classes
        for index in case_classes(case):
            classes[index].count += 1
            classes[index].example = classes[index].example or case.name
    return [tables[op] for op in OPERATORS if op in seen]


def percent(coverages: Sequence[OpCoverage]) -> float:
    """The share of the classes of ``coverages`` that are covered, in percent (100 when there are none)."""
    total = sum(item.total for item in coverages)
    return 100.0 * sum(item.covered for item in coverages) / total if total else 100.0


def summary(coverages: Sequence[OpCoverage], shown: int = MISSING_SHOWN, where: str = "") -> str:
    """One line: ``covers 97 of 102 classes (95.1%: grad 60 of 62, forward 37 of 40)``, then the missing classes
    named when at most ``shown`` (``; missing: grad B: 65537, forward mode: half``), else counted, with ``where``
    names them (``; 162 missing (prmg coverage lists them)``)."""
    if not coverages:
        return "covers no class (no case)"
    covered, total = sum(item.covered for item in coverages), sum(item.total for item in coverages)
    parts = ", ".join(f"{item.op} {item.covered} of {item.total}" for item in coverages)
    line = f"covers {covered} of {total} classes ({percent(coverages):.1f}%: {parts})"
    missing = [f"{item.op} {regime.key}" for item in coverages for regime in item.missing]
    if missing and len(missing) <= shown:
        line += "; missing: " + ", ".join(missing)
    elif missing:
        line += f"; {len(missing)} missing" + (f" ({where})" if where else "")
    return line


def run_line(results: Sequence, known: Sequence = ()) -> str | None:
    """``coverage: ...`` (``summary``, pointing to ``prmg coverage`` for more than ``MISSING_SHOWN`` missing
    classes) of the cases of ``results`` that ran (statuses ``RAN``) and carry their definition; None when none
    does. A result's case is the one of ``known`` (the run's own cases) of its name and file, else made from its
    definition. A case graph mode alone ran (path ``geir``) counts as its tensors were fed, dense: at no storage
    offset, with no strides (GE's tensors have neither), so a graph-mode run covers no storage class. Past
    ``RUN_LINE_LIMIT`` cases made from the definitions (about 1 ms each; a stored definition states one case:
    ``store``) the line says to run ``prmg coverage`` instead."""
    from .loader import parse_document

    ran = [result for result in results if result.status in RAN and result.definition]
    if len(ran) > RUN_LINE_LIMIT:
        return f"coverage: not computed for {len(ran)} cases (over {RUN_LINE_LIMIT}); run prmg coverage PATH..."
    at_hand = {(case.name, case.source): case for case in known}
    cases = []
    for result in ran:
        if len(cases) > RUN_LINE_LIMIT:                # counted in cases too, whatever a definition makes
            return f"coverage: not computed for over {RUN_LINE_LIMIT} cases; run prmg coverage PATH..."
        source = result.source or "run"
        if (result.name, result.source) in at_hand:
            made = [at_hand[result.name, result.source]]
        else:
            try:
                made = parse_document([result.recorded_definition()], source, Path(source).parent)
            except PrmgError:                          # a file: input gone since: the case is not counted
                continue
        cases += [replace(case, **CONTIGUOUS_STORAGE) for case in made] if result.path == "geir" else made
    return f"coverage: {summary(evaluate(cases), where=RUN_HINT)}" if cases else None
