"""Generating cases: one case from command-line options, refused when it breaks a constraint, the pieces every
preset suite is made of (``preset_case``, ``rope_inputs``, ``header``), and deterministic YAML (the preset suites
are ``presets.py``'s, ``cover_preset.py``'s and ``models_preset.py``'s).

A generated case is the plain mapping of the case-file format (keys ``name, shape, cos_shape,
partial_slice, rotary_mode, dtype, cos_dtype, inputs, expect, tags`` ...), always with an explicit
``cos_shape`` so that a file describes itself.

Broadcast patterns are the shared vocabulary's (``vocab.BROADCASTS``, ``vocab.broadcast_shape``).

A document is ``{"defaults": {...}, "cases": [...]}`` and may carry two presentation keys that
``dump_yaml`` writes as YAML comments instead of data: ``"header"`` (lines for the top of the file)
and ``"comments"`` (``{case name: text}``, written above that case).
"""

from __future__ import annotations

import codecs
import os
import re
import textwrap
from pathlib import Path
from typing import Mapping, Sequence

import yaml

from . import yamlfile
from .. import dtypes, files, status
from ..errors import PrmgError, suggest
from ..ops import DEFAULT_OP, OPERATORS, constraints
from ..ops.targets import BUILDS
from ..results import plural, visible
from ..vocab import (BROADCASTS, DEFAULT_SUPPORTED_MODES, MODE_NAMES, ROTARY_MODES, SLICE, TENSORS, broadcast_pattern,
                     broadcast_shape, mode_suggestion, number)
from ..writes import Output, check_outputs
from .loader import INPUT_KINDS, NAME_PATTERN, sanitise_name

DTYPE_PAIRS = OPERATORS[DEFAULT_OP].dtype_pairs      # (dy dtype, cos/sin dtype) the grad takes: the presets' pairs
ALL_MODES = frozenset(MODE_NAMES)                     # a target implementing every rotary mode
# Case keys a generated case takes as written (``case_from_options``'s ``written_keys``).
WRITTEN_KEYS = ("cos_strides", "sin_strides", "dy_offset", "cos_offset", "sin_offset", "builds", "note",
                "partners_alike")
# Why the presets' RoPE-table cases are alike at both lanes of every pair (``partners_alike``): on purpose.
# Short enough for the case file's line (``  partners_alike: ...``) to fit 80 columns, as the README's gen-case
# line prints it; cases/ catches a partner swap with tables drawn independently (users.yaml, edge.independent_tables).
ROPE_PARTNERS = "a real RoPE table, alike by design (edge.yaml catches swaps)"


# ---------------------------------------------------------------------------------------------------
# One case from options
# ---------------------------------------------------------------------------------------------------

def ints(value, field: str, count: int | None = None) -> list[int]:
    """``value`` (a sequence of ints or the text ``"2,16,4,128"``) as a list of ints."""
    if isinstance(value, str):
        parts = [part for part in re.split(r"[,x\s]+", value.strip()) if part]
        if not parts:
            raise PrmgError(f"expected integers, got {value!r}", field=field)
    else:
        parts = list(value)
    try:
        numbers = [number(part) for part in parts]
    except (TypeError, ValueError):
        raise PrmgError(f"expected integers, got {value!r}", field=field) from None
    if any(isinstance(part, float) and not float(part).is_integer() for part in parts):
        raise PrmgError(f"expected integers, got {value!r}", field=field)
    if count is not None and len(numbers) != count:
        raise PrmgError(f"expected {plural(count, 'integer')}, got {len(numbers)} ({value!r})", field=field)
    return numbers


def broadcast_label(shape: Sequence[int], cos_shape: Sequence[int]) -> str:
    """The broadcast pattern ``cos_shape`` follows against dy ``shape`` (``vocab.broadcast_pattern``), or
    ``cos<shape>`` when it follows none."""
    return broadcast_pattern(shape, cos_shape) or "cos" + "x".join(str(size) for size in cos_shape)


def _mode_value(mode) -> int | str:
    """A mode as written in a case file: its name for 0..3, the bare integer otherwise."""
    if isinstance(mode, str):
        text = mode.strip()
        if text in ROTARY_MODES:
            return text
        try:
            mode = number(text)
        except ValueError:
            raise PrmgError(f"unknown rotary mode {mode!r}{mode_suggestion(text)}; use one of "
                            f"{', '.join(ROTARY_MODES)} or 0..3",
                            field="rotary_mode") from None
    if isinstance(mode, bool) or not isinstance(mode, int):
        raise PrmgError(f"rotary mode must be a name or an integer, got {mode!r}", field="rotary_mode")
    return MODE_NAMES.get(mode, mode)


def _dtype_name(name: str, field: str) -> str:
    """The canonical name of dtype ``name``; PrmgError naming ``field`` when it is unknown."""
    try:
        return dtypes.canonical(str(name))
    except KeyError:
        raise PrmgError(f"unknown dtype {name!r}{suggest(str(name), dtypes.DTYPES)}; use one of "
                        f"{', '.join(dtypes.DTYPES)}", field=field) from None


def _expect_value(expect) -> str | dict:
    """``expect`` as written in a case file: ``"pass"`` or ``{"error": CODE | NAME | "any"}`` (with a ``phase``
    when one is given).

    Accepts ``pass``, ``error`` (= any error), a status code, a status name or ``{"error": ..., "phase": ...}``."""
    if isinstance(expect, Mapping):
        if "error" not in expect or not set(expect) <= {"error", "phase"}:
            raise PrmgError(f"expect must be 'pass' or {{error: CODE, phase: PHASE}}, got {dict(expect)!r}",
                            field="expect")
        if expect["error"] in ("pass", "error"):
            raise PrmgError(f"expect {{error: {expect['error']}}} is not a status", field="expect")
        if "phase" in expect:
            return {**_expect_value(expect["error"]), "phase": expect["phase"]}
        expect = expect["error"]
    if isinstance(expect, bool):
        raise PrmgError(f"expect must be 'pass', 'error' or a status, got {expect!r}", field="expect")
    if isinstance(expect, int):
        code = expect
    else:
        text = str(expect).strip()
        if text == "pass":
            return "pass"
        if text in ("error", "any"):
            return {"error": "any"}
        if text in status.STATUS_CODES:
            return {"error": text}
        try:
            code = number(text)
        except ValueError:
            raise PrmgError(f"expect must be 'pass', 'error', a status code or a status name, got {expect!r}",
                            field="expect") from None
    if code not in status.STATUS_NAMES or code == 0:
        raise PrmgError(f"{code} is not a known error status", field="expect")
    return {"error": code}


def _expected_code(expect_value) -> int | None:
    """The status a case's ``expect`` names (None for pass or "any")."""
    if expect_value == "pass" or expect_value["error"] == "any":
        return None
    error = expect_value["error"]
    return error if isinstance(error, int) else status.STATUS_CODES[error]


def _number(text: str, field: str) -> float:
    """``text`` as a number: an int when written as one (exactly: a float would round one past 2**53), else a
    float."""
    try:
        return number(text)
    except ValueError:
        pass
    try:
        return number(text, float)
    except ValueError:
        raise PrmgError(f"{text!r} is not a number", field=field) from None


def _bit_pattern(text: str, field: str) -> int:
    """``text`` as a bit pattern: an integer >= 0, decimal or ``0x`` hexadecimal."""
    try:
        value = number(text, int, 0)
    except ValueError:
        raise PrmgError(f"{text!r} is not a bit pattern (an integer such as 0x7e01)", field=field) from None
    if value < 0:
        raise PrmgError(f"{text!r} is not a bit pattern (an integer >= 0)", field=field)
    return value


def _input_spec(tensor: str, text: str) -> dict:
    """One ``KIND:ARG:ARG`` setting of ``--inputs`` as an input mapping (see ``parse_inputs_option``)."""
    field = f"inputs.{tensor}"
    kind, _, rest = text.partition(":")
    kind = kind.strip()
    if kind == "file":
        if not rest:
            raise PrmgError("file: needs a path, e.g. dy=file:dy.npy", field=field)
        return {"file": rest}
    args = [part for part in rest.split(":")] if rest else []
    if kind in ("uniform", "normal"):
        if len(args) != 2:
            raise PrmgError(f"{kind} takes two numbers, e.g. {tensor}={kind}:-1:1", field=field)
        return {kind: [_number(arg, field) for arg in args]}
    if kind in ("values", "bits"):
        if len(args) != 1 or not args[0].strip():
            raise PrmgError(f"{kind} takes ';'-separated numbers, e.g. dy={kind}:1;2;3;4", field=field)
        numbers = [_number(arg.strip(), field) if kind == "values" else _bit_pattern(arg.strip(), field)
                   for arg in args[0].split(";")]
        return {kind: numbers}
    if kind == "rope":
        if tensor == "dy":
            raise PrmgError("rope tables are for cos and sin only", field=field)
        if len(args) > 2:
            raise PrmgError("rope takes BASE[:OFFSET or P1;P2;...], e.g. cos=rope:10000 or cos=rope:500000:0;37;4096",
                            field=field)
        base = _number(args[0], field) if args else 10000
        offset = [_number(part.strip(), field) for part in args[1].split(";")] if len(args) > 1 and ";" in args[1] \
            else _number(args[1], field) if len(args) > 1 else 0
        return {"rope": {"base": base, "offset": offset}}
    raise PrmgError(f"unknown input kind {kind!r}{suggest(kind, INPUT_KINDS)}; use one of {', '.join(INPUT_KINDS)}",
                    field=field)


def parse_inputs_option(text: str) -> dict:
    """The compact ``--inputs`` form as an ``inputs`` mapping.

    ``TENSOR=KIND[:ARG...]`` settings separated by commas; TENSOR is dy, cos, sin or all; KIND is
    ``uniform:LO:HI``, ``normal:MEAN:STD``, ``values:V1;V2;...``, ``bits:P1;P2;...`` (bit patterns, e.g.
    ``0x7e01``), ``file:PATH.npy`` or ``rope:BASE[:OFFSET]`` (positions from OFFSET along S), with per-request
    positions ``rope:BASE:P1;P2;...`` (one per index of the table's B axis).
    Example: ``dy=uniform:-1:1,cos=rope:10000,sin=rope:10000``.
    """
    inputs: dict = {}
    settings = [part.strip() for part in str(text).split(",")]
    if not any(settings):
        raise PrmgError("empty --inputs; e.g. dy=uniform:-1:1,cos=rope:10000,sin=rope:10000", field="inputs")
    for setting in settings:
        tensor, equals, spec = setting.partition("=")
        tensor = tensor.strip()
        if not equals or not spec.strip():
            raise PrmgError(f"{setting!r} is not TENSOR=KIND:ARGS (e.g. dy=uniform:-1:1)", field="inputs")
        targets = TENSORS if tensor == "all" else (tensor,)
        if tensor != "all" and tensor not in TENSORS:
            raise PrmgError(f"unknown tensor {tensor!r}; use dy, cos, sin or all", field="inputs")
        for target in targets:
            if target in inputs:
                raise PrmgError(f"{target} is set twice", field="inputs")
            inputs[target] = _input_spec(target, spec.strip())
    return {tensor: inputs[tensor] for tensor in TENSORS if tensor in inputs}


def _inputs_value(inputs) -> dict | None:
    """``inputs`` (a mapping or the ``--inputs`` text) as an ``inputs`` mapping in dy, cos, sin order; None when
    empty."""
    if inputs is None or isinstance(inputs, Mapping):
        return {tensor: inputs[tensor] for tensor in TENSORS if tensor in inputs} if inputs else None
    return parse_inputs_option(inputs)


def default_name(case: Mapping) -> str:
    """A name derived from a case's parameters, e.g. ``interleave_bf16_fp32_2x16x4x128_111D_s32-96``."""
    mode = case["rotary_mode"]
    parts = [mode if isinstance(mode, str) else f"mode{mode}", short_dtype(case["dtype"]),
             short_dtype(case["cos_dtype"])]
    if "sin_dtype" in case:
        parts.append("sin-" + short_dtype(case["sin_dtype"]))
    parts.append("x".join(str(size) for size in case["shape"]))
    parts.append(broadcast_label(case["shape"], case["cos_shape"]))
    if "sin_shape" in case:
        parts.append("sin" + "x".join(str(size) for size in case["sin_shape"]))
    parts.append("s" + "-".join(str(value) for value in case["partial_slice"]) if "partial_slice" in case
                 else "s-null")
    if case.get("format", "ND") != "ND":
        parts.append(case["format"])
    parts.extend("null-" + tensor for tensor in case.get("null", ()))
    parts.extend(f"{tensor}-strided" if tensor != "dy" else "strided" for tensor in TENSORS
                 if case.get(f"{tensor}_strides"))
    parts.extend(f"{tensor}-at{case[f'{tensor}_offset']}" for tensor in TENSORS if case.get(f"{tensor}_offset"))
    return sanitise_name("_".join(parts), "-")


def short_dtype(dtype_name: str) -> str:
    """The short name of a dtype, e.g. ``bf16``."""
    return dtypes.lookup(dtype_name).short


def case_from_options(*, shape, cos_shape=None, broadcast=None, partial_slice=None, dtype="float32",
                      cos_dtype=None, mode="interleave", seed=None, name=None, inputs=None, expect="pass",
                      standard=None, tolerance=None, tags=(), sin_shape=None, sin_dtype=None,
                      format=None, null=(), dy_strides=None, known_defect=None, op=DEFAULT_OP, checks=(),
                      golden=True, **written_keys) -> dict:
    """One case mapping from options; refuses (PrmgError) a case the operator would reject unless it
    expects an error, and an error expectation the operator can never return for it.

    Defaults: ``cos_shape`` from ``broadcast`` and the slice length, else the loader's default
    ``[1, 1, 1, L]`` (``L = max(end - start, 1)``), so a case file that sets neither means the same; ``partial_slice``
    ``[0, cos D]`` when ``cos_shape`` is given, else ``[0, D]``; ``cos_dtype = dtype``. ``inputs`` is a
    mapping or the ``--inputs`` text. ``sin_shape``, ``sin_dtype``, ``format``, ``null`` and
    ``dy_strides`` exist to describe negative cases; ``written_keys`` holds keys of ``WRITTEN_KEYS`` (strides and
    offsets of cos/sin and dy, the builds, a note, partners_alike), written as given. A ``partial_slice`` of
    another length than 2 is written as given (the slice is then its first two values, or empty).
    """
    case = _case_dict(shape=shape, cos_shape=cos_shape, broadcast=broadcast, partial_slice=partial_slice,
                      dtype=dtype, cos_dtype=cos_dtype, mode=mode, seed=seed, name=name, inputs=inputs,
                      expect=expect, standard=standard, tolerance=tolerance, tags=tags, sin_shape=sin_shape,
                      sin_dtype=sin_dtype, format=format, null=null, dy_strides=dy_strides, known_defect=known_defect,
                      op=op, checks=checks, golden=golden, **written_keys)
    refuse_invalid([case])
    return with_builds([case])[0]


def _case_dict(*, shape, cos_shape=None, broadcast=None, partial_slice=None, dtype="float32", cos_dtype=None,
               mode="interleave", seed=None, name=None, inputs=None, expect="pass", standard=None,
               tolerance=None, tags=(), sin_shape=None, sin_dtype=None, format=None, null=(),
               dy_strides=None, known_defect=None, op=DEFAULT_OP, checks=(), golden=True, **written_keys) -> dict:
    """The case mapping of ``case_from_options``, before the operator's constraints are checked."""
    shape = ints(shape, "shape")
    unknown = sorted(set(written_keys) - set(WRITTEN_KEYS))
    if unknown:
        raise PrmgError(f"unknown option {unknown[0]!r} (valid: {', '.join(WRITTEN_KEYS)})", field=unknown[0])
    if cos_shape is not None and broadcast is not None:
        raise PrmgError("give either a cos shape or a broadcast pattern, not both", field="cos_shape")
    null_slice = SLICE in null
    if partial_slice is None and not null_slice:
        end = ints(cos_shape, "cos_shape")[-1] if cos_shape is not None else (shape[-1] if shape else 0)
        partial_slice = [0, end]
    written = None if null_slice else ints(partial_slice, "partial_slice")
    partial_slice = written[:2] if written is not None and len(written) >= 2 else [0, 0]
    if cos_shape is None and broadcast is None:         # the loader's default: [1, 1, 1, L]
        cos_shape = [1, 1, 1, max(partial_slice[1] - partial_slice[0], 1)]
    elif cos_shape is None:
        if len(shape) != 4:
            raise PrmgError(f"dy must be 4-D (B, S, N, D) for a broadcast pattern; give cos_shape for {shape}",
                            field="shape")
        if broadcast not in BROADCASTS:
            raise PrmgError(f"unknown broadcast pattern {broadcast!r}{suggest(broadcast, BROADCASTS)}; use one of "
                            f"{', '.join(BROADCASTS)}",
                            field="broadcast")
        cos_shape = broadcast_shape(broadcast, shape, partial_slice[1] - partial_slice[0])
    dtype = _dtype_name(dtype, "dtype")
    case: dict = {"name": None, "shape": shape, "cos_shape": ints(cos_shape, "cos_shape")}
    if sin_shape is not None:
        case["sin_shape"] = ints(sin_shape, "sin_shape")
    if written is not None:
        case["partial_slice"] = written
    case["rotary_mode"] = _mode_value(mode)
    case["dtype"] = dtype
    case["cos_dtype"] = _dtype_name(cos_dtype, "cos_dtype") if cos_dtype is not None else dtype
    if sin_dtype is not None:
        case["sin_dtype"] = _dtype_name(sin_dtype, "sin_dtype")
    if seed is not None:
        case["seed"] = int(seed)
    input_settings = _inputs_value(inputs)
    if input_settings:
        case["inputs"] = input_settings
    case["expect"] = _expect_value(expect)
    if standard is not None:
        case["standard"] = standard
    if tolerance:
        case["tolerance"] = dict(tolerance)
    if format is not None and format != "ND":
        case["format"] = format
    if null:
        case["null"] = list(null)
    if dy_strides is not None:
        case["dy_strides"] = ints(dy_strides, "dy_strides")
    case.update({key: list(value) if isinstance(value, (list, tuple)) else value
                 for key, value in written_keys.items() if value is not None})
    if tags:
        case["tags"] = list(tags)
    if known_defect:
        case["known_defect"] = dict(known_defect)
    if op != DEFAULT_OP:
        case["op"] = op
    if checks:
        case["checks"] = list(checks)
    if not golden:
        case["golden"] = False
    case["name"] = name if name is not None else default_name(case)
    if not NAME_PATTERN.fullmatch(case["name"]):
        raise PrmgError("a name is letters, digits, '_', '.' and '-' only", case=str(case["name"]), field="name")
    return case


def load_generated(cases: Sequence[dict]) -> list:
    """The loader's ``Case`` values for case mappings, read exactly as from a case file (``file``
    inputs, which name files relative to a file not yet written, are left out)."""
    from .loader import parse_document

    readable = [{**case, "inputs": {tensor: spec for tensor, spec in case["inputs"].items() if "file" not in spec}}
                if "inputs" in case else case for case in cases]
    try:
        return parse_document(list(readable), "generated", Path.cwd())
    except PrmgError as exc:
        raise PrmgError(exc.reason, case=exc.case, field=exc.field) from None


def refuse_invalid(cases: Sequence[dict]) -> None:
    """Raise PrmgError for the first case that expects success yet breaks a documented constraint (on
    any target: a mode the target lacks is skipped, not refused), that expects an error status the
    operator returns neither on today's kernel nor on a target with every mode, or any error where both succeed
    (``--expect error`` on a valid case wrote a case that always fails; validate only warned of it)."""
    for case, value in zip(cases, load_generated(cases)):
        code = _expected_code(case["expect"])
        if case["expect"] == "pass":
            broken = constraints.violations(value, ALL_MODES)
            if broken:
                raise PrmgError("; ".join(message for _, message in broken)
                                + f" (the operator returns {status.describe(broken[0][0])})", case=case["name"])
        elif not case.get("known_defect"):
            returns = {constraints.expected_status(value, modes) for modes in (DEFAULT_SUPPORTED_MODES, ALL_MODES)}
            if code is None and returns == {0}:
                raise PrmgError("expects an error but the operator returns 0 SUCCESS (the case breaks no "
                                "constraint, on any target): it would fail", case=case["name"], field="expect")
            if code is not None and code not in returns:
                said = " or ".join(status.describe(got) for got in sorted(returns))
                raise PrmgError(f"expects {status.describe(code)} but the operator returns {said}",
                                case=case["name"], field="expect")


def with_builds(cases: Sequence[dict]) -> list[dict]:
    """``cases``, each that does not name its builds given ``builds``: the upstream builds (``targets.BUILDS``) on
    which the constraint model predicts its expectation on today's target (``constraints.holding_builds``), when
    that is some builds but not every one (an empty cos: a no-op since e9f0541c), so that a toolkit of another
    or an unknown build reports the case as depending on the build rather than as a plain failure."""
    return [{**case, "builds": list(holding)} if "builds" not in case and 0 < len(holding) < len(BUILDS) else case
            for case, value in zip(cases, load_generated(cases))
            for holding in [constraints.holding_builds(value, DEFAULT_SUPPORTED_MODES)]]


# ---------------------------------------------------------------------------------------------------
# Pieces of the preset suites (``presets``, ``cover``, ``models``)
# ---------------------------------------------------------------------------------------------------

MODE_UNSUPPORTED_TAGS = ("today", "mode-unsupported")   # a negative case of a mode today's kernel lacks


def preset_case(prefix: str, tags: Sequence[str], name: str | None = None, **options) -> dict:
    """The case mapping of ``case_from_options`` (unchecked: ``preset`` checks whole documents) named
    ``prefix.<name or the derived name>``, with ``tags``; a RoPE sin says why it is alike at both lanes of every
    pair (``partners_alike``: ``ROPE_PARTNERS``)."""
    if "rope" in ((_inputs_value(options.get("inputs")) or {}).get("sin") or {}):
        options.setdefault("partners_alike", ROPE_PARTNERS)
    case = _case_dict(tags=tags, name=f"{prefix}.{name}" if name else None, **options)
    if name is None:
        case["name"] = f"{prefix}.{case['name']}"
    return case


def rope_inputs(base: float = 10000, offset: int | list[int] = 0) -> dict:
    """``inputs`` giving cos and sin real RoPE tables of ``base`` from position ``offset`` (or one per B index)."""
    table = {"rope": {"base": base, "offset": offset}}
    return {"cos": table, "sin": table}


GENERATED = "Generated by "         # how the first line of each file gen-case writes begins (after '# ')
ONE_CASE = f"{GENERATED}prmg gen-case (prmg_cli/cases/gencase.py)."      # the header of a file of cases from flags


def header(preset_name: str, what: str, part: str | None = None,
           module: str = "prmg_cli/cases/presets.py") -> list[str]:
    """The comment header of a preset file: how it was made, what it holds, how to change it (``module``)."""
    command = f"prmg gen-case --preset {preset_name}"
    where = f" (its '{part}' part, shipped as cases/full/{part}.yaml)" if part else ""
    return [f"{GENERATED}`{command}`{where}.", *textwrap.wrap(what[0].upper() + what[1:] + ".", 100),
            f"Do not edit by hand: change {module}, then run python -m prmg_cli.cases.presets (tests check it)."]


# ---------------------------------------------------------------------------------------------------
# Documents and YAML
# ---------------------------------------------------------------------------------------------------

def document(cases: Sequence[dict], *, defaults: Mapping | None = None, header: Sequence[str] = (),
             comments: Mapping[str, str] | None = None) -> dict:
    """A case-file document; ``header``/``comments`` are written by ``dump_yaml`` as YAML comments."""
    doc: dict = {}
    if header:
        doc["header"] = list(header)
    if comments:
        doc["comments"] = dict(comments)
    if defaults:
        doc["defaults"] = dict(defaults)
    doc["cases"] = list(cases)
    return doc


class _Dumper(yaml.SafeDumper):
    """Safe dumper that never writes anchors/aliases (shared lists are written out each time), and
    that quotes text the case loader would read as something else (``1e-8``: a float there)."""

    def ignore_aliases(self, data) -> bool:
        """Never write anchors and aliases: repeated values are written out in full."""
        return True


yamlfile.add_resolvers(_Dumper)


class _Inline(dict):
    """A mapping written on one line: ``{uniform: [-1, 1]}``, ``{error: ACLNN_ERR_PARAM_NULLPTR}``."""


_Dumper.add_representer(_Inline, lambda dumper, data: dumper.represent_mapping(
    "tag:yaml.org,2002:map", data.items(), flow_style=True))


def _inline_values(case: Mapping) -> dict:
    """``case`` with its small mappings (each input setting, expect, tolerance) marked to be inlined."""
    out = dict(case)
    if isinstance(out.get("inputs"), Mapping):
        out["inputs"] = {tensor: _Inline(spec) if isinstance(spec, Mapping) else spec
                         for tensor, spec in out["inputs"].items()}
    for key in ("expect", "tolerance"):
        if isinstance(out.get(key), Mapping):
            out[key] = _Inline(out[key])
    return out


def _yaml(data) -> str:
    """``data`` as YAML text (``_Dumper``: no anchors), keys in insertion order, lists of scalars inline,
    lines up to 120 characters."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=None, width=120,
                     allow_unicode=True)


def _comment(text: str, indent: str = "") -> str:
    """``text`` as YAML comment lines (``# ...``) at ``indent``: one per line of ``text``, control and
    other invisible characters written as escapes (``\\x1b``), so nothing can end the comment early or
    make the file unreadable."""
    return "".join(f"{indent}# {visible(line)}".rstrip() + "\n" for line in str(text).splitlines() or [""])


def dump_yaml(doc: Mapping) -> str:
    """``doc`` as YAML text, deterministically (same document, same bytes): keys in insertion order,
    lists of scalars inline, a comment header, and ``comments`` above their cases."""
    header = list(doc.get("header") or [ONE_CASE])
    comments = dict(doc.get("comments") or {})
    text = _comment("\n".join(header))
    if doc.get("defaults"):
        text += _yaml({"defaults": dict(doc["defaults"])})
    text += "cases:\n" if doc["cases"] else "cases: []\n"
    for case in doc["cases"]:
        if case.get("name") in comments:
            text += _comment(comments[case["name"]])
        text += _yaml([_inline_values(case)])
    return text


def append_cases(path: str | Path, new_cases: Sequence[dict]) -> None:
    """Add ``new_cases`` to the case file ``path`` (created when missing); refuse a name already used,
    and a file that is not a valid case file (one line: what the loader says about it).

    The file is read like any case file (``yamlfile.read_yaml``: bounded, regular files only) and the new cases
    are added to it as text (``_appended``): every byte already there stays as it was, comments included. The
    result is written atomically, so a failed write leaves the file as it was."""
    from .loader import parse_document

    given, path = str(path), Path(path)
    check_outputs([Output(given, "case file", cases=True)], {})        # not through a symlink, not a folder or a FIFO
    if not os.path.lexists(path):
        text = dump_yaml({"cases": list(new_cases)})
        check_loads(text, given)
        files.write_text(path, text)
        return
    data = files.read_regular(path, yamlfile.MAX_FILE_BYTES)
    loaded = yamlfile.parse_yaml(yamlfile.decode(data, given), given)
    if isinstance(loaded, list):
        doc = {"cases": loaded}
    elif isinstance(loaded, dict) and isinstance(loaded.get("cases"), list):
        doc = dict(loaded)
    elif loaded is None:
        doc = {"cases": []}
    else:
        raise PrmgError("not a case file: expected {defaults, cases} or a list of cases", file=given)
    try:
        names = {case.name for case in parse_document(doc, given, path.parent)}
    except PrmgError as exc:
        raise PrmgError(f"cannot append to a file that does not load: {exc}") from None
    for case in new_cases:
        if case["name"] in names:
            raise PrmgError("a case of this name is already in the file", file=given, case=case["name"])
        names.add(case["name"])
    data = _appended(data, new_cases, given)
    text = yamlfile.decode(data, given)
    added = yamlfile.parse_yaml(_yaml([_inline_values(case) for case in new_cases]), given)     # as YAML reads them
    expected = [*doc["cases"], *added] if loaded is None or isinstance(loaded, list) else \
        {**loaded, "cases": [*loaded["cases"], *added]}
    try:
        same = yamlfile.parse_yaml(text, given) == expected
    except PrmgError:
        same = False
    if not same:
        raise PrmgError(NOT_AS_TEXT, file=given)
    check_loads(text, given)
    files.write_bytes(path, data)


NOT_AS_TEXT = ("cannot add the case to this file's layout as text (the file is left as it was); add it by hand, or "
               "write a new file with -o")


def _appended(data: bytes, new_cases: Sequence[dict], source: str) -> bytes:
    """The bytes of the case file ``data`` with ``new_cases`` added as text after its last case, every other byte
    kept: into its block list of cases at that list's indentation, into a flow list (``cases: [...]``) before its
    closing bracket, or, when the file holds no document (comments only), as a list after what it holds; line
    ends as the file's (CRLF when it uses them)."""
    bom = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    text = yamlfile.decode(data, source)
    newline = "\r\n" if "\r\n" in text else "\n"
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    if isinstance(node, yaml.MappingNode):
        node = next(value for key, value in node.value if key.value == "cases")
    if isinstance(node, yaml.ScalarNode):                     # a document of `null` alone: no list to add to
        raise PrmgError(NOT_AS_TEXT, file=source)
    if node is not None and node.flow_style:                  # [a, b]: before the closing bracket
        at = node.end_mark.index - 1
        flow = ", ".join(yaml.dump(_inline_values(case), Dumper=_Dumper, sort_keys=False, default_flow_style=True,
                                   width=float("inf"), allow_unicode=True).strip() for case in new_cases)
        insert = (", " if node.value else "") + flow
    else:                                                     # a block list (or none): lines at its indentation
        at = len(text) if node is None or node.end_mark.index == len(text) else \
            node.end_mark.index - node.end_mark.column              # the start of the line after the list
        indent = " " * (0 if node is None else node.start_mark.column)
        lines = "".join(_yaml([_inline_values(case)]) for case in new_cases).splitlines()
        insert = "".join(f"{indent}{line}{newline}" for line in lines)
        if at and not text[:at].endswith(("\n", "\r")):
            insert = newline + insert
    offset = bom + len(text[:at].encode("utf-8"))
    return data[:offset] + insert.encode("utf-8") + data[offset:]


def check_loads(text: str, path: str | Path) -> None:
    """Raise the loader's PrmgError (one line) unless the case file ``text`` loads as the file ``path``: its
    ``file:`` inputs exist there, inside its folder; and PrmgError when ``path`` may not be written
    (``writes.check_outputs``: a symlink, or one of those inputs, which writing it would destroy, as ``import-ttk``
    spares its CSV). Called before a case file is written."""
    from .loader import input_files, parse_document

    cases = parse_document(yamlfile.parse_yaml(text, str(path)), str(path), Path(path).parent)
    check_outputs([Output(str(path), "case file", cases=True)], input_files([], cases))
