"""The case keys, one parser each, and the words of their error messages.

Each ``parse_*`` function takes the value a case file wrote (any plain YAML value: text, numbers,
booleans, null, dates, lists, mappings, nested or not) and returns the checked, resolved value, or
raises ``PrmgError`` at ``Where`` naming the field. No value makes a parser raise anything else: words
are compared as text only after checking they are text (a list is never looked up in a dict), numbers
are converted only after checking they fit, and messages show a user's value through ``show``, which
is bounded (at most ``SHOW_LIMIT`` characters, whatever the value's size).
"""

from __future__ import annotations

import math
import os
import re
import sys
import reprlib
from collections.abc import Sequence
from pathlib import Path

from .. import dtypes
from ..case import expanded_axes
from ..dtypes import INT64_MAX
from ..errors import PrmgError, suggest
from ..inputs import npyfile
from ..judging.checks import CHECKS, check_names
from ..judging.defects import BOUNDS, PATTERNS
from ..judging.standards import STANDARDS, check_standard, standard_of
from ..ops import OPERATORS
from ..results import plural, visible
from ..status import REFUSAL_FAMILIES, STATUS_CODES, describe, is_refusal
from ..vocab import (ACL_FORMATS, BROADCASTS, GENERATORS, MODE_NAMES, NULLABLE, PHASES, ROTARY_MODES, TENSORS,
                     mode_suggestion)

INPUT_KINDS = ("uniform", "normal", "values", "bits", "file", "rope")
ROPE_KEYS = ("base", "offset")
# What a model's config (and a newcomer) calls a RoPE table's keys: said with the key meant, as no spelling is close.
ROPE_ALIASES = {"theta": "base", "rope_theta": "base", "position": "offset", "positions": "offset"}
ROPE_ALIAS_WHY = {"base": "a model config's rope_theta is the table's base",
                  "offset": "the first position, or a list of one per request"}
# ... and beside a case's shape, where base and offset are no keys either ('rope' suggested 'op', 'offset' dy_offset)
CASE_ROPE_KEYS = {**ROPE_ALIASES, "base": "base", "rope_base": "base", "offset": "offset", "offsets": "offset",
                  "rope_offset": "offset"}
# A model config's words for the axes of dy's shape [B, S, N, D] and its rotated lanes, written beside a case's shape
# by a new user copying a config (head_dim: 128 was "unknown key 'head_dim'" alone).
_AXES = {"B": ("batch", "batch_size"), "S": ("seq_len", "seq_length", "seqlen"),
         "N": ("num_heads", "n_heads", "num_attention_heads", "num_key_value_heads"), "D": ("head_dim",)}
MODEL_CONFIG_KEYS = {**{key: f"{axis} in shape: [B, S, N, D]" for axis, keys in _AXES.items() for key in keys},
                     "rotary_dim": "the length of partial_slice: [start, end)",
                     "partial_rotary_factor": "partial_slice: [0, factor x D]"}
DEFAULT_ROPE_BASE = 10000.0
# No standard normal draw Z of a generator (numpy's ziggurat, its tail -log(U) of a 53-bit U) is 40 or more from 0, so
# a normal's draws mean + std * Z are finite in float64 when |mean| + 40 * std is.
NORMAL_Z_LIMIT = 40
# The most elements an array of float64 (the golden's dtype) may count, the product of a shape's non-zero
# dimensions: numpy refuses a larger one ("array is too big"), even when another dimension is 0.
MAX_ARRAY_ELEMENTS = INT64_MAX // 8
SHOW_LIMIT = 60
# A case name or tag: letters, digits, '_', '.', '-', and not only dots ('.' and '..' name folders).
NAME_PATTERN = re.compile(r"(?!\.+\Z)[A-Za-z0-9_.-]+")
MAX_NAME_LENGTH = 200
# What ``is_word`` takes, as messages say it (a 300-letter host label read as a wrong character without the length)
WORD = f"ASCII letters, digits, '_', '.', '-'; not only dots; at most {MAX_NAME_LENGTH} characters"
MAX_SLICE_VALUES = 16             # values of a partial_slice list of another length than 2
MAX_OFFSET = 2**32                # a view's storage offset, in elements

# ----------------------------------------------------------------------------------------------
# Messages

def _quoted(text: str) -> str:
    """A user's text quoted once as they typed it, hidden characters escaped (``results.visible``): ``'C:\\fp16'``,
    not ``repr``'s ``'C:\\\\fp16'``; in double quotes when it holds a single quote and no double one, as ``repr``."""
    mark = '"' if "'" in text and '"' not in text else "'"
    return f"{mark}{visible(text)}{mark}"


class _Shown(reprlib.Repr):
    """``reprlib``'s bounded rendering, with text inside a list or mapping quoted once as ``_quoted`` does."""

    def repr_str(self, value, level):
        return _shorten(_quoted(value[:self.maxstring + 1]), self.maxstring)


_REPR = _Shown()
_REPR.maxlist = _REPR.maxtuple = _REPR.maxset = _REPR.maxfrozenset = 8
_REPR.maxdict = 4
_REPR.maxlevel = 3
_REPR.maxstring = _REPR.maxother = SHOW_LIMIT
_REPR.maxlong = 40


def _shorten(text: str, limit: int = SHOW_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, ending in ``...`` when cut."""
    return text if len(text) <= limit else text[:limit - 3] + "..."


def show(value, *, quote: bool = True) -> str:
    """A short rendering of a user's value for a message: at most SHOW_LIMIT characters whatever the
    value (a huge list, a 10,000-digit integer); text is quoted once (``_quoted``) unless ``quote`` is False,
    and what cannot be seen in it escaped either way."""
    if isinstance(value, str):
        head = value[:SHOW_LIMIT + 1]            # bounded before escaping: a 1 GB string costs nothing
        return _shorten(_quoted(head) if quote else visible(head))
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"an integer of {value.bit_length()} bits"
    try:
        return _shorten(_REPR.repr(value))
    except (ValueError, RecursionError):
        return f"a {type(value).__name__}"


def kind(value) -> str:
    """What ``value`` is, for 'expected X, got Y' messages (bool is not an integer here)."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, int):
        text = show(value)
        return text if text.startswith("an integer") else f"the integer {text}"
    if isinstance(value, float):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {show(value)}"
    if isinstance(value, list):
        return f"a list {show(value)}"
    if isinstance(value, dict):
        return "a mapping"
    return f"a {type(value).__name__} ({show(value)})"


def label(text) -> str:
    """A key or name as it appears in a field path or a case label, which the message quotes (``field 'x'``):
    bounded, never a huge string; text with what cannot be seen escaped (``results.visible``: ``d\\u200by``, a
    newline ``\\n``), so the message stays one line, but not quoted again (``repr`` made it ``field ''d\\u200by''``);
    anything else (a number, a list) as ``show`` writes it."""
    return _shorten(visible(text)) if isinstance(text, str) else show(text)


def named(key) -> str:
    """A key in a message's text: ``label`` quoted for text (``unknown key 'd\\u200by'``), ``show`` for another."""
    return f"'{label(key)}'" if isinstance(key, str) else show(key)


class Where:
    """Where a value lives, for error messages: the file, the case, and which keys came from where."""

    def __init__(self, source: str, case: str | None = None, origins: dict[str, str] | None = None):
        self.source = source
        self.case = case
        self.origins = origins or {}

    def field(self, path: str) -> str:
        """``path`` prefixed by where its top key came from ("defaults." or "sweep."), if not the case."""
        parts = path.split(".")
        for top in (".".join(parts[:2]), parts[0]):
            if top in self.origins:
                return self.origins[top] + path
        return path

    def error(self, path: str, message: str) -> PrmgError:
        """A PrmgError at this file and case naming ``path`` as the field (prefixed by where it came from)."""
        return PrmgError(message, file=self.source, case=self.case, field=self.field(path) if path else None)


def check_keys(mapping: dict, known: Sequence[str], where: Where, prefix: str) -> None:
    """Refuse a key not in ``known``, suggesting the closest known one."""
    for key in mapping:
        if not (isinstance(key, str) and key in known):
            hint = suggest(key, known)
            if key in CASE_ROPE_KEYS and "inputs" in known:     # a model config's rope_theta beside a case's shape
                name = CASE_ROPE_KEYS[key]
                storage = "; an offset in a tensor's storage is dy_offset, cos_offset or sin_offset" \
                    if key in ("offset", "offsets") else ""
                hint = (f" (a RoPE table's {name} is given per table: inputs: {{cos: {{rope: {{{name}: ...}}}}, sin: "
                        f"{{rope: {{{name}: ...}}}}}}; {ROPE_ALIAS_WHY[name]}{storage})")
            elif key == "rope" and "inputs" in known:
                hint = (" (a RoPE table is an input's: inputs: {cos: {rope: {base: 10000, offset: 0}}, sin: "
                        "{rope: ...}})")
            elif key in MODEL_CONFIG_KEYS and "inputs" in known:
                hint = f" (a model config's {key} is {MODEL_CONFIG_KEYS[key]})"
            elif key in TENSORS and "inputs" in known:
                hint = f" (an input's values are given under inputs: inputs: {{{key}: ...}})"
            raise where.error(f"{prefix}{label(key)}", f"unknown key {named(key)}{hint}")


def is_int(value) -> bool:
    """True for an int that is not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value) -> bool:
    """True for an int or a float that is not a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def as_float(value) -> float | None:
    """``value`` as a float when it is a number a float can hold (NaN and infinities included), else None."""
    if not is_number(value):
        return None
    try:
        return float(value)
    except OverflowError:
        return None


def is_finite(value) -> bool:
    """True for a number that is a finite float."""
    number = as_float(value)
    return number is not None and math.isfinite(number)


def _word(value, choices) -> bool:
    """True when ``value`` is text and one of ``choices`` (never hashing a non-text value)."""
    return isinstance(value, str) and value in choices


def _choice(value, choices, where: Where, field: str, what: str) -> str:
    """``value`` when it is one of ``choices``, else ``field``'s error: ``unknown WHAT 'value'``, the closest choice
    and every valid one."""
    if not _word(value, choices):
        raise where.error(field, f"unknown {what} {show(value)}{suggest(value, choices)} "
                          f"(valid: {', '.join(choices)})")
    return value


# ----------------------------------------------------------------------------------------------
# Shapes, modes, dtypes


def parse_dims(value, key: str, where: Where, *, four: bool) -> tuple[int, ...]:
    """A shape: a list of ints 0 <= d <= 2**63-1 whose non-zero ones multiply to at most ``MAX_ARRAY_ELEMENTS``;
    exactly four of them unless ``four`` is False."""
    if not isinstance(value, list):
        raise where.error(key, f"expected a list of dimensions like [2, 16, 4, 128], got {kind(value)}")
    for position, dim in enumerate(value):
        if not is_int(dim):
            raise where.error(key, f"dimension {position} must be an integer, got {kind(dim)}")
        if dim < 0:
            raise where.error(key, f"dimension {position} is negative ({show(dim)})")
        if dim > INT64_MAX:
            raise where.error(key, f"dimension {position} ({show(dim)}) does not fit in int64")
    extent = math.prod(dim for dim in value if dim)
    if extent > MAX_ARRAY_ELEMENTS:
        raise where.error(key, f"its non-zero dimensions multiply to {extent}, over the {MAX_ARRAY_ELEMENTS} "
                          f"elements of the largest array numpy can make (even with a dimension of 0)")
    if four and len(value) != 4:
        raise where.error(key, f"expected 4 dimensions [B, S, N, D], got {len(value)} "
                          f"(other lengths only in expect: {{error: ...}} cases)")
    return tuple(value)


def parse_slice(value, where: Where) -> tuple[int, int]:
    """``[start, end]`` as a tuple of two integers that fit in int64."""
    if not (isinstance(value, list) and len(value) == 2 and all(is_int(v) for v in value)):
        raise where.error("partial_slice", f"expected [start, end] (two integers), got {show(value)}")
    if any(abs(v) > INT64_MAX for v in value):
        raise where.error("partial_slice", "start and end must fit in int64")
    return value[0], value[1]


def parse_slice_list(value, where: Where) -> tuple[tuple[int, int], tuple[int, ...] | None]:
    """``partial_slice`` as a case file writes it: ``[start, end]`` -> ((start, end), None); a list of another
    length (at most ``MAX_SLICE_VALUES`` int64 integers), passed to the operator as written, -> (the slice the
    950's tiling acts on: its first two values, (0, 0) for a shorter list, which no stack defines; the list)."""
    if isinstance(value, list) and len(value) == 2:
        return parse_slice(value, where), None
    if not (isinstance(value, list) and len(value) <= MAX_SLICE_VALUES and all(is_int(v) for v in value)):
        raise where.error("partial_slice", f"expected [start, end] (two integers; a list of 0 to {MAX_SLICE_VALUES} "
                          f"integers to pass another length), got {show(value)}")
    if any(abs(v) > INT64_MAX for v in value):
        raise where.error("partial_slice", "its values must fit in int64")
    return (value[0], value[1]) if len(value) > 2 else (0, 0), tuple(value)


def parse_broadcast(value, shape: tuple[int, ...], where: Where) -> str:
    """A broadcast pattern of ``BROADCASTS``, for a 4-D ``shape``."""
    _choice(value, BROADCASTS, where, "broadcast", "broadcast pattern")
    if len(shape) != 4:
        raise where.error("broadcast", "a broadcast pattern needs a 4-D shape; give cos_shape instead")
    return value


def parse_mode(value, where: Where, negative: bool) -> int:
    """The mode's int code: a name of ROTARY_MODES or 0..3 (any int64 in expect-error cases)."""
    valid = "half, interleave, quarter, interleave-half or 0..3"
    if isinstance(value, str):
        if value not in ROTARY_MODES:
            raise where.error("rotary_mode", f"unknown rotary_mode {show(value)}{mode_suggestion(value)}"
                              f" (valid: {valid})")
        return ROTARY_MODES[value]
    if not is_int(value):
        raise where.error("rotary_mode", f"expected a mode name or number, got {kind(value)} (valid: {valid})")
    if not negative and value not in MODE_NAMES:
        raise where.error("rotary_mode", f"unknown rotary_mode {show(value)} (valid: {valid})")
    if abs(value) > INT64_MAX:
        raise where.error("rotary_mode", f"rotary_mode {show(value)} does not fit in int64")
    return value


def parse_dtype(value, key: str, where: Where, negative: bool) -> str:
    """The canonical dtype name; only the operator's dtypes outside expect-error cases."""
    allowed = tuple(dtypes.DTYPES) if negative else dtypes.OPERATOR_DTYPES
    if not isinstance(value, str):
        raise where.error(key, f"expected a dtype name, got {kind(value)} (valid: {', '.join(allowed)})")
    try:
        name = dtypes.canonical(value)
    except KeyError:
        name = None
    if name not in allowed:
        extra = " (the others only in expect: {error: ...} cases)" if name in dtypes.DTYPES else ""
        raise where.error(key, f"unknown dtype {show(value)}{suggest(value, allowed)} "
                          f"(valid: {', '.join(allowed)}){extra}")
    return name


def parse_seed(value, where: Where) -> int:
    """A seed: an integer 0 <= seed < 2**64."""
    if not is_int(value) or not 0 <= value < 2**64:
        raise where.error("seed", f"expected an integer 0 <= seed < 2**64, got {kind(value)}")
    return value


def parse_generator(value, where: Where) -> str:
    """The generator of the case's seeded inputs, one of ``GENERATORS``."""
    return _choice(value, GENERATORS, where, "generator", "generator")


# ----------------------------------------------------------------------------------------------
# Expectation and judging


def parse_expect(value, where: Where) -> tuple[int | str | None, str | None]:
    """``pass`` -> (None, None); ``{error: CODE, phase: PHASE}`` -> (the status code (an int64) or ``"any"``, the
    phase of ``vocab.PHASES`` that must return it, ``"any"``, or None when not written: ``loader.Expect``'s
    default)."""
    usage = ("expected 'pass' or {error: CODE, phase: PHASE} (CODE a number, a status name or 'any'; PHASE "
             f"{', '.join(PHASES)} or any)")
    if value == "pass":
        return None, None
    if not isinstance(value, dict):
        raise where.error("expect", f"{usage}, got {show(value)}")
    check_keys(value, ("error", "phase"), where, "expect.")
    if "error" not in value:
        raise where.error("expect", f"{usage}, got no error")
    code = parse_status(value["error"], where, "expect.error", usage)
    _refusal_only(code, where, "expect.error", "an expected error")
    phase = value.get("phase")
    if phase is not None and not _word(phase, (*PHASES, "any")):
        raise where.error("expect.phase", f"unknown phase {show(phase)}{suggest(phase, PHASES)} (valid: "
                          f"{', '.join(PHASES)} or any)")
    return code, phase


def parse_status(code, where: Where, field: str, usage: str, *, success: bool = False) -> int | str:
    """A status: ``any``, a name of ``STATUS_CODES`` or an int64 (0 only when ``success`` may be named)."""
    if code == "any":
        return "any"
    if isinstance(code, str):
        if code not in STATUS_CODES:
            raise where.error(field, f"unknown status name {show(code)}{suggest(code, STATUS_CODES)}")
        code = STATUS_CODES[code]
    if not is_int(code):
        raise where.error(field, f"{usage}, got {kind(code)}")
    if abs(code) > INT64_MAX:
        raise where.error(field, f"status {show(code)} does not fit in int64")
    if code == 0 and not success:
        raise where.error(field, "0 is success: write 'expect: pass'")
    return code


def _refusal_only(code: int | str, where: Where, field: str, what: str) -> None:
    """Refuse a status that is no operator's refusal (``status.is_refusal``): a runtime or device status says the
    runtime or the device failed, and the judge never counts it as the operator's answer."""
    if code != "any" and not is_refusal(code):
        raise where.error(field, f"{describe(code)} is a runtime or device status, never an operator's refusal: "
                          f"{what} is a status of the {', '.join(f'{family}xxx' for family in REFUSAL_FAMILIES)} "
                          f"families")


def parse_standard(value, where: Where) -> str:
    """A known standard's name (``standards.check_standard``)."""
    if not _word(value, STANDARDS):
        raise where.error("standard", f"unknown standard {show(value)} (valid: {', '.join(STANDARDS)})"
                          + suggest(value, STANDARDS))
    return value


def parse_tolerance(value, standard: str | None, where: Where) -> tuple[tuple[str, float], ...]:
    """The standard's parameters (``default`` when the case names none), sorted by key; each a finite
    number >= 0 (``standards.check_standard``); a preset (``Standard.presets``: ``double_benchmark``'s ``level``)
    also by TTK's name of it, ``L<k>`` for preset ``k``."""
    if not isinstance(value, dict):
        raise where.error("tolerance", f"expected a mapping of the standard's parameters, got {kind(value)}")
    standard = standard_of(standard)
    accepted = STANDARDS[standard].params
    presets = STANDARDS[standard].presets
    value = {key: int(number[1:]) if isinstance(number, str) and key in presets and re.fullmatch(r"L\d", number)
             and int(number[1:]) in presets[key] else number for key, number in value.items()}
    for key, number in value.items():
        if not _word(key, accepted):
            takes = f"valid: {', '.join(accepted)}" if accepted else "it takes none"
            raise where.error(f"tolerance.{label(key)}", f"standard '{standard}' has no parameter {named(key)} "
                              f"({takes}){suggest(key, accepted)}")
        if key in presets and not is_finite(number):
            names = ", ".join(f"{k} (L{k})" for k in presets[key])
            raise where.error(f"tolerance.{key}", f"{key} must be one of {names}, got {show(number)}")
        if not is_finite(number) or number < 0:
            raise where.error(f"tolerance.{key}", f"{key} must be a finite number >= 0, got {show(number)}")
    try:
        check_standard(standard, value)              # the judge's own check, in case it is stricter
    except PrmgError as error:
        raise where.error(error.field, error.reason) from None
    return tuple(sorted((key, float(number)) for key, number in value.items()))


def is_word(value) -> bool:
    """Whether ``value`` is a word (``NAME_PATTERN``, at most ``MAX_NAME_LENGTH``): a tag, a host label
    (``provenance.host_label``), ASCII and one line."""
    return isinstance(value, str) and bool(NAME_PATTERN.fullmatch(value)) and len(value) <= MAX_NAME_LENGTH


def parse_words(value, key: str, where: Where) -> tuple[str, ...]:
    """Tags: a list of words (``is_word``) as a tuple without repeats, in order."""
    if not isinstance(value, list):
        raise where.error(key, f"expected a list of words, got {kind(value)}")
    for word in value:
        if not is_word(word):
            raise where.error(key, f"{show(word)} is not a word ({WORD})")
    return tuple(dict.fromkeys(value))


def parse_op(value, where: Where) -> str:
    """An operator's name, a key of ``ops.OPERATORS``."""
    return _choice(value, OPERATORS, where, "op", "op")


def parse_known_defect(value, where: Where) -> tuple[str, int | None, tuple | None, tuple]:
    """The defect a case is known to meet: ``{reason: TEXT, status: CODE}`` (the defective operator returns
    CODE, e.g. ``SUCCESS``, instead of what the case expects; with ``SUCCESS`` also ``behaves_as: {...}``, what
    it then computes: ``parse_behaves_as``) or ``{reason: TEXT, result: wrong, BOUND: VALUE...}`` (the call returns
    what is expected, but its result is wrong within the bounds it names, at least one of ``defects.BOUNDS``).
    Returns (reason, CODE or None for a wrong result, ``behaves_as`` or None, the bounds as ``(key, value)`` pairs
    in ``BOUNDS`` order); the reason is one line of printable text (500 characters at most)."""
    usage = ("expected {reason: TEXT, status: CODE} (with SUCCESS also behaves_as: {...}) or {reason: TEXT, "
             f"result: wrong, and a bound: {', '.join(BOUNDS)}}}: the defect the case meets")
    if not isinstance(value, dict):
        raise where.error("known_defect", f"{usage}, got {kind(value)}")
    check_keys(value, ("reason", "status", "behaves_as", "result", *BOUNDS), where, "known_defect.")
    reason = parse_reason(value.get("reason"), "known_defect.reason", where)
    if ("status" in value) == ("result" in value):
        raise where.error("known_defect", f"{usage}: name exactly one of status and result")
    bounds = tuple((key, _defect_bound(key, value[key], where)) for key in BOUNDS if key in value)
    if "result" in value:
        if value["result"] != "wrong":
            raise where.error("known_defect.result", f"expected 'wrong', got {show(value['result'])}")
        if "behaves_as" in value:
            raise where.error("known_defect.behaves_as", "behaves_as says what an accepted call computes: it goes "
                              "with status: SUCCESS, not with result: wrong")
        if not bounds:
            raise where.error("known_defect", f"a wrong result must be bounded, or the marker hides any wrongness "
                              f"(a kernel that does nothing, NaN, a flipped sign): name at least one of "
                              f"{', '.join(f'{key} ({text})' for key, text in BOUNDS.items())}")
        return reason, None, None, bounds
    if bounds:
        raise where.error(f"known_defect.{bounds[0][0]}", "a bound goes with result: wrong, not with status")
    status = parse_status(value["status"], where, "known_defect.status", usage, success=True)
    if status == "any":
        raise where.error("known_defect.status", "name the status the defective operator returns, not 'any'")
    if status != 0:
        _refusal_only(status, where, "known_defect.status", "a known defect's status")
        if "behaves_as" in value:
            raise where.error("known_defect.behaves_as", f"a call refused with {describe(status)} computes "
                              f"nothing: behaves_as goes with status: SUCCESS")
    return reason, status, parse_behaves_as(value["behaves_as"], where) if "behaves_as" in value else None, ()


def _defect_bound(key: str, value, where: Where):
    """A wrong-result defect's bound ``key`` (``defects.BOUNDS``) checked: a float, an int or a pattern's name."""
    field = f"known_defect.{key}"
    if key == "max_error_ulp":
        number = as_float(value) if is_number(value) else None
        if number is None or not math.isfinite(number) or number <= 0:
            raise where.error(field, f"expected {BOUNDS[key]}, got {kind(value)}")
        return number
    if key == "elements":
        if not is_int(value) or not 1 <= value <= INT64_MAX:
            raise where.error(field, f"expected {BOUNDS[key]}, got {kind(value)}")
        return value
    if not _word(value, PATTERNS):
        raise where.error(field, f"unknown pattern {show(value)}{suggest(value, PATTERNS)} (valid: "
                          f"{', '.join(PATTERNS)})")
    return value


# The case keys a known defect's ``behaves_as`` may give, each with its parser (called as for an expect-pass case).
BEHAVES_AS_KEYS = {"rotary_mode": lambda value, where: parse_mode(value, where, negative=False)}


def parse_behaves_as(value, where: Where) -> tuple:
    """What the operator computes once a known defect made it accept the call: a mapping of case keys
    (``BEHAVES_AS_KEYS``) to the values it then acts on, e.g. ``{rotary_mode: interleave}`` for a mode read as
    another; ``{}``: the case as written. Returns ``(key, value)`` pairs in the order of ``BEHAVES_AS_KEYS``."""
    if not isinstance(value, dict):
        raise where.error("known_defect.behaves_as", f"expected a mapping of the case keys the accepted call acts "
                          f"on ({', '.join(BEHAVES_AS_KEYS)}; {{}} for the case as written), got {kind(value)}")
    check_keys(value, tuple(BEHAVES_AS_KEYS), where, "known_defect.behaves_as.")
    pairs = []
    for key, parse in BEHAVES_AS_KEYS.items():
        if key in value:
            try:
                pairs.append((key, parse(value[key], where)))
            except PrmgError as error:
                raise where.error(f"known_defect.behaves_as.{key}", error.reason) from None
    return tuple(pairs)


def parse_reason(value, key: str, where: Where) -> str:
    """A one-line reason: printable text, 500 characters at most."""
    if not isinstance(value, str) or not value.strip() or not value.isprintable() or len(value) > 500:
        raise where.error(key, f"expected a one-line reason (at most 500 characters), got {kind(value)}")
    return value.strip()


def parse_checks(value, where: Where) -> tuple[str, ...]:
    """Golden-free checks: a list of names of ``checks.CHECKS``, without repeats, in order (``checks.check_names``)."""
    if not isinstance(value, list):
        raise where.error("checks", f"expected a list of checks ({', '.join(CHECKS)}), got {kind(value)}")
    try:
        return check_names(value, show)
    except PrmgError as error:
        raise where.error("checks", error.reason) from None


def parse_golden(value, where: Where) -> bool:
    """``golden: false`` judges a case by its checks alone (with the run's ``--check``, one of them a check of
    correctness: ``loader.unjudged``)."""
    if not isinstance(value, bool):
        raise where.error("golden", f"expected true or false, got {kind(value)}")
    return value


# ----------------------------------------------------------------------------------------------
# Negative-case tensors


def parse_format(value, where: Where) -> str:
    """An aclFormat name, a key of ``ACL_FORMATS``."""
    return _choice(value, ACL_FORMATS, where, "format", "format")


def parse_null(value, where: Where) -> tuple[str, ...]:
    """The arguments to pass as NULL pointers (tensors, ``partial_slice``), in the operator's order."""
    if not isinstance(value, list):
        raise where.error("null", f"expected a list of argument names ({', '.join(NULLABLE)}), got {kind(value)}")
    for name in value:
        if not _word(name, NULLABLE):
            raise where.error("null", f"unknown argument {show(name)}{suggest(name, NULLABLE)} (valid: "
                              f"{', '.join(NULLABLE)})")
    return tuple(name for name in NULLABLE if name in value)


def parse_strides(value, shape: tuple[int, ...], where: Where, key: str = "dy_strides") -> tuple[int, ...]:
    """A tensor's element strides (``key``: ``dy_strides``, ``cos_strides``, ``sin_strides``): one non-negative
    int64 per axis of its ``shape``. A stride of 0 on an axis of length > 1 is torch's ``expand`` (``case
    .expanded_axes``), which cos and sin may have (each index along it reads the same row); dy, written in place, may
    not (torch refuses an in-place write through it). No other two elements of the view share a storage element
    (``overlapping``: prmg draws a value per storage element)."""
    if not (isinstance(value, list) and all(is_int(v) and 0 <= v <= INT64_MAX for v in value)):
        raise where.error(key, f"expected a list of non-negative int64 integers, got {show(value)}")
    if len(value) != len(shape):
        raise where.error(key, f"expected {plural(len(shape), 'stride')} (one per axis of its shape), "
                               f"got {len(value)}")
    expanded = expanded_axes(shape, value)
    if expanded and key == "dy_strides":
        raise where.error(key, f"strides {value} expand the {list(shape)} view along axis "
                               f"{', '.join(map(str, expanded))} (stride 0): dy is written in place, and an in-place "
                               f"write through an expanded view puts several results on one storage element (torch "
                               f"refuses it); only cos and sin may be expanded")
    if overlapping([1 if axis in expanded else dim for axis, dim in enumerate(shape)], value):
        raise where.error(key, f"strides {value} put two elements of the {list(shape)} view on one storage element "
                               f"(overlapping rows; a stride of 0, torch's expand, is the one overlap taken): prmg "
                               f"draws a value per element, which such storage cannot hold; give strides that keep "
                               f"the elements apart")
    return tuple(value)


def overlapping(shape, strides) -> bool:
    """Whether two elements of a view of ``shape`` and element ``strides`` share a storage element (an empty view:
    no). Axes of one element aside and sorted by stride, the view is apart when each stride steps past all the
    axes below it reach, ``stride_k >= 1 + sum_{j<k} (dim_j - 1) * stride_j``; one that is not is checked element by
    element (an interleaving of axes can still keep them apart)."""
    axes = sorted((stride, dim) for dim, stride in zip(shape, strides) if dim > 1)
    if any(dim <= 0 for dim in shape) or not axes:
        return False
    reach = 0
    for stride, dim in axes:
        if stride <= reach:
            break
        reach += (dim - 1) * stride
    else:
        return False
    if axes[0][0] == 0:
        return True
    seen = {0}
    for stride, dim in axes:
        seen = {at + step * stride for at in seen for step in range(dim)}
    return len(seen) < math.prod(dim for _, dim in axes)


def parse_offset(value, key: str, where: Where) -> int:
    """A tensor's storage offset in elements (``key``: ``dy_offset``, ``cos_offset``, ``sin_offset``): an integer
    0 <= offset <= ``MAX_OFFSET`` (the elements before the view are real storage prmg allocates and watches)."""
    if not (is_int(value) and 0 <= value <= MAX_OFFSET):
        raise where.error(key, f"expected an integer 0 <= offset <= {MAX_OFFSET} (elements of storage before the "
                               f"view), got {kind(value)}")
    return value


def parse_builds(value, where: Where) -> tuple[str, ...]:
    """The upstream builds a case's expectation holds for: a non-empty list of names of ``targets.BUILDS``, in
    that table's order."""
    from ..ops.targets import BUILDS

    if not (isinstance(value, list) and value):
        raise where.error("builds", f"expected a list of builds ({', '.join(BUILDS)}), got {kind(value)}")
    for name in value:
        _choice(name, BUILDS, where, "builds", "build")
    return tuple(name for name in BUILDS if name in value)


# ----------------------------------------------------------------------------------------------
# Inputs


def parse_inputs(value, tensors: dict[str, tuple[tuple[int, ...], str]], where: Where, folder: Path):
    """One ``(kind, args)`` per tensor (``None`` when not given: the default uniform [-1, 1]); ``tensors``
    gives each tensor's (shape, dtype)."""
    if not isinstance(value, dict):
        raise where.error("inputs", f"expected a mapping of dy/cos/sin to input specs, got {kind(value)}")
    check_keys(value, TENSORS, where, "inputs.")
    return {tensor: parse_input(value[tensor], tensor, *tensors[tensor], where, folder)
            if tensor in value else None for tensor in TENSORS}


def parse_input(value, tensor: str, shape: tuple[int, ...], dtype: str, where: Where,
                folder: Path) -> tuple[str, tuple]:
    """``(kind, args)`` of ``inputs.TENSOR``: one kind of ``INPUT_KINDS`` with checked arguments (as many
    numbers as the tensor of ``shape`` has elements for ``values``, ``bits`` and ``file``; bit patterns that
    fit ``dtype``; one RoPE offset, or one per row of the table's first axis)."""
    size = math.prod(shape)
    path = f"inputs.{tensor}"
    kinds = INPUT_KINDS if tensor != "dy" else tuple(k for k in INPUT_KINDS if k != "rope")
    if not (isinstance(value, dict) and len(value) == 1):
        raise where.error(path, f"expected one of {{{': ..., '.join(kinds)}: ...}}, got {show(value)}")
    (input_kind, args), = value.items()
    if input_kind == "rope" and tensor == "dy":
        raise where.error(f"{path}.rope", "rope tables are for cos and sin only")
    check_keys(value, kinds, where, f"{path}.")
    path = f"{path}.{input_kind}"
    if input_kind in ("uniform", "normal"):
        labels = ("lo", "hi") if input_kind == "uniform" else ("mean", "std")
        if not (isinstance(args, list) and len(args) == 2 and all(is_finite(v) for v in args)):
            raise where.error(path, f"expected [{', '.join(labels)}] (two finite numbers), got {show(args)}")
        low, high = float(args[0]), float(args[1])
        if input_kind == "uniform" and low > high:
            raise where.error(path, f"lo {show(args[0])} is greater than hi {show(args[1])}")
        if input_kind == "normal" and high < 0:
            raise where.error(path, f"std {show(args[1])} is negative")
        if input_kind == "uniform" and not math.isfinite(high - low):
            raise where.error(path, f"hi - lo overflows float64 (draws are lo + (hi - lo) * U): keep the range "
                                    f"within {sys.float_info.max:.4g}")
        if input_kind == "normal" and not math.isfinite(abs(low) + NORMAL_Z_LIMIT * high):
            raise where.error(path, f"draws mean + std * Z (|Z| < {NORMAL_Z_LIMIT}) could overflow float64: keep "
                                    f"|mean| + {NORMAL_Z_LIMIT} * std within {sys.float_info.max:.4g}")
        return input_kind, (low, high)
    if input_kind in ("values", "bits"):
        flat = flatten_numbers(args, path, where, size, integers=input_kind == "bits")
        if len(flat) != size:
            raise where.error(path, f"{plural(len(flat), 'value')} for a tensor of {plural(size, 'element')}")
        if input_kind == "bits":
            width = dtypes.bit_width(dtype)
            wide = next((number for number in flat if not 0 <= number < 2**width), None)
            if wide is not None:
                raise where.error(path, f"bit pattern {show(wide)} does not fit {dtype}'s {width} bits "
                                        f"(0 <= pattern < 2**{width})")
        return input_kind, flat
    if input_kind == "file":
        return input_kind, check_npy(args, size, path, where, folder)
    return input_kind, parse_rope(args, path, where, shape[0] if len(shape) == 4 else 1)


def flatten_numbers(value, path: str, where: Where, size: int, integers: bool = False) -> tuple:
    """A flat or nested list of numbers (``integers``: of ints), flattened in C order; refused as soon as it
    holds more than ``size`` numbers."""
    if not isinstance(value, list):
        raise where.error(path, f"expected a list of numbers, got {kind(value)}")
    flat: list[float] = []
    pending = [iter(value)]
    while pending:
        for item in pending[-1]:
            if isinstance(item, list):
                pending.append(iter(item))
                break
            number = (item if is_int(item) else None) if integers else as_float(item)
            if number is None:
                raise where.error(path, f"expected {'integers' if integers else 'numbers'}, got {kind(item)} "
                                        f"at position {len(flat)}")
            if len(flat) == size:
                raise where.error(path, f"more than {plural(size, 'value')} for a tensor of {plural(size, 'element')}")
            flat.append(number)
        else:
            pending.pop()
    return tuple(flat)


def check_npy(value, size: int, path: str, where: Where, folder: Path) -> tuple[str, str]:
    """``(absolute path, folder)`` of a .npy file inside ``folder`` holding ``size`` plain numbers
    (``npyfile``)."""
    if not isinstance(value, str) or not value:
        raise where.error(path, f"expected a .npy file path, got {kind(value)}")
    if "\0" in value:
        raise where.error(path, f"{show(value)} is not a usable path (it holds a NUL character)")
    root = os.path.realpath(folder)
    try:
        file = npyfile.resolve(value, root)
        npyfile.check(file, size, root)
    except npyfile.NpyError as error:
        raise where.error(path, str(error)) from None
    return file, root


def parse_rope(value, path: str, where: Where, rows: int = 1) -> tuple[float, int | tuple[int, ...]]:
    """(base, offset) of a RoPE table: base > 0 (10000), positions from offset >= 0 (0); the offset may be a
    list of ``rows`` integers, one per index of the table's first axis (B: per-request positions)."""
    if not isinstance(value, dict):
        raise where.error(path, f"expected {{base: 10000, offset: 0}}, got {kind(value)}")
    for key in value:
        if key in ROPE_ALIASES:
            raise where.error(f"{path}.{key}", f"unknown key '{key}' (did you mean '{ROPE_ALIASES[key]}'? "
                                               f"{ROPE_ALIAS_WHY[ROPE_ALIASES[key]]})")
    check_keys(value, ROPE_KEYS, where, f"{path}.")
    base = value.get("base", DEFAULT_ROPE_BASE)
    offset = value.get("offset", 0)
    if not (is_finite(base) and base > 0):
        raise where.error(f"{path}.base", f"expected a finite number > 0, got {kind(base)}")
    if isinstance(offset, list):
        if len(offset) != rows:
            way = "; a table of one row per request needs a B axis: broadcast B11D or BS1D" if rows == 1 else ""
            raise where.error(f"{path}.offset", f"a list of offsets has one per index of the table's first axis "
                                                f"(B = {rows}), got {len(offset)}{way}")
        if not all(is_int(item) and 0 <= item <= INT64_MAX for item in offset):
            raise where.error(f"{path}.offset", f"expected integers 0 <= offset <= 2**63 - 1, got {show(offset)}")
        return float(base), tuple(offset)
    if not (is_int(offset) and 0 <= offset <= INT64_MAX):
        raise where.error(f"{path}.offset", f"expected an integer 0 <= offset <= 2**63 - 1 or a list of them, got "
                                            f"{kind(offset)}")
    return float(base), offset
