"""Case files: the ``Case`` value, YAML loading (safe loader only), defaults, sweeps and validation.

Every user mistake raises ``PrmgError`` naming the file, the case and the field.

The case format
===============

A case file is either a bare list of cases, or a mapping ``{defaults: {...}, cases: [...]}`` whose
``defaults`` merge under every case of the file (a case's own keys win; ``inputs`` merge per tensor;
``tags`` are the union; ``tolerance`` merges per key unless the case picks a different ``standard``).
A path given to a command may be a file or a folder (every ``*.yaml``/``*.yml`` below it, sorted by
path). YAML anchors, aliases and ``<<`` merge keys work; ``1e-3`` reads as a number. Files are read
with the safe loader only: a ``!!python/...`` tag is an error and never runs; alias bombs and keys
written twice in one mapping are refused. Mistakes are reported as one line naming the file, the case
(``case '#3'`` for the third entry when its name is unknown) and the field (``inputs.dy.values``).

| key | meaning (default) |
|---|---|
| ``name`` | required; unique across the run; letters, digits, ``_ . -`` (may be a template, see sweeps) |
| ``shape`` | required; dy's shape ``[B, S, N, D]`` (an ``expect: {error: ...}`` case may use any length) |
| ``broadcast`` | cos/sin pattern against dy: ``BSND 111D 1S1D 1SND B1ND BS1D 11ND B11D``; the cos shape takes B, S, N from dy where the pattern has a letter, 1 where it has ``1``, and ``L = end - start`` as its last axis |
| ``cos_shape`` | cos's shape, instead of ``broadcast`` (not both). Neither given: ``[1, 1, 1, L]`` (``[1, 1, 1, 1]`` when the slice is empty) |
| ``sin_shape`` | sin's shape (``cos_shape``; set it only to write a negative case) |
| ``partial_slice`` | ``[start, end]``, the half-open slice of the last axis (``[0, D]``) |
| ``rotary_mode`` | ``half``/``interleave``/``quarter``/``interleave-half`` or 0..3 (``interleave``) |
| ``dtype`` | dy's dtype: ``float32``, ``float16``, ``bfloat16`` or an alias ``fp32 fp16 bf16 half float`` (``float32``) |
| ``cos_dtype`` / ``sin_dtype`` | cos's dtype (``dtype``); sin's dtype (``cos_dtype``) |
| ``seed`` | integer 0 <= seed < 2**64 (derived from the name: the same inputs on every machine and run) |
| ``inputs`` | per tensor ``dy``/``cos``/``sin``: ``{uniform: [lo, hi]}``, ``{normal: [mean, std]}``, ``{values: [...]}`` (flat C order or nested; as many numbers as the tensor has elements), ``{file: x.npy}`` (relative to the case file; as many elements as the tensor, read in C order); cos/sin also ``{rope: {base: 10000, offset: 0}}``, a real RoPE table laid out for the mode (``uniform: [-1, 1]``) |
| ``expect`` | ``pass``, or ``{error: CODE}``: a number, a status name such as ``ACLNN_ERR_INNER_TILING_ERROR``, or ``any`` (``pass``) |
| ``standard`` | precision standard: ``default double_thousandth single_bm double_benchmark allclose exact`` (the run's) |
| ``tolerance`` | the case's standard's parameters (``default``'s when the case names none), finite numbers >= 0, e.g. ``{rtol: 1e-3, atol: 1e-5}`` for ``allclose`` |
| ``tags`` | list of words (letters, digits, ``_ . -``), for ``--tag`` selection (any listed tag selects) |
| ``format`` | negative cases: aclFormat of all tensors, ``ND NCHW NHWC NC1HWC0 FRACTAL_Z FRACTAL_NZ`` (``ND``) |
| ``null`` | negative cases: tensors passed as NULL pointers, e.g. ``null: [cos]`` (the key YAML reads as null is this key) |
| ``dy_strides`` | negative cases: dy's element strides, one per axis (contiguous) |

A case with ``expect: pass`` must satisfy every constraint of the operator (``prmg validate`` says which
one it breaks, e.g. ``D = 2048 exceeds 1024``), except that a rotary mode the target does not support
is skipped at run time. ``expect: {error: ...}`` cases may use any shape length, any integer
rotary_mode, and the dtypes ``int8 int16 int32 int64 uint8 bool float64`` as well.

Sweeps
======

A case entry with a ``sweep`` mapping stands for the cartesian product of its value lists (the first
key varies slowest). Each swept key takes one value of its list per expanded case, exactly as if it had
been written in the entry (a key may not be both swept and written). ``name`` is a template: ``{key}``
is replaced by that key's value as written (``{dtype}`` -> ``bf16`` if written ``bf16``); lists are
joined compactly, shapes with ``x`` (``2x4x8x128``) and other lists with ``-`` (``{partial_slice}`` ->
``0-64``); ``{index}`` is the case's position in the expansion, from 0 (format specs work:
``{index:03d}``). Any key of the merged case (swept, written or from defaults) may appear in the
template; a template giving two cases the same name is an error::

    - name: "bwd_{dtype}_{broadcast}_{partial_slice}"
      shape: [2, 4, 8, 128]
      sweep:
        dtype: [float32, bfloat16]
        broadcast: [111D, BSND]
        partial_slice: [[0, 64], [7, 71]]       # 2 x 2 x 2 = 8 cases, e.g. bwd_bfloat16_111D_7-71
"""

from __future__ import annotations

import difflib
import itertools
import math
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from prmg_cli import constraints, dtypes
from prmg_cli.standards import STANDARD_PARAMS, STANDARDS, check_standard
from prmg_cli.checks import CHECKS
from prmg_cli.errors import PrmgError
from prmg_cli.ops import OPERATORS
from prmg_cli.status import STATUS_CODES, STATUS_NAMES, describe
from prmg_cli.vocab import BROADCASTS, FORMATS, MODE_NAMES, ROTARY_MODES, TENSORS, broadcast_shape

CASE_KEYS = ("name", "shape", "broadcast", "cos_shape", "sin_shape", "partial_slice", "rotary_mode",
             "dtype", "cos_dtype", "sin_dtype", "seed", "inputs", "expect", "standard", "tolerance",
             "tags", "format", "null", "dy_strides", "op", "known_defect", "checks", "golden")
FILE_KEYS = ("defaults", "cases")
INPUT_KINDS = ("uniform", "normal", "values", "file", "rope")
ROPE_KEYS = ("base", "offset")
DEFAULT_ROPE_BASE = 10000.0
# A file whose YAML expands (aliases followed) to more nodes than this is refused as an alias bomb.
MAX_EXPANDED_NODES = 2_000_000
MAX_SWEEP_CASES = 100_000         # one sweep entry may expand to at most this many cases
NAME_PATTERN = re.compile(r"[A-Za-z0-9_.-]+")   # a case name or tag: letters, digits, '_', '.', '-'
_INT64_MAX = 2**63 - 1


@dataclass(frozen=True)
class InputSpec:
    """How the values of one tensor are made.

    kind / args:
      uniform (lo, hi) | normal (mean, std) | values (flat C-order floats) | file (absolute .npy path,)
      | rope (base, offset)  -- cos/sin only: a real RoPE angle table laid out for the case's mode,
        positions starting at ``offset``.
    """

    kind: str = "uniform"
    args: tuple = (-1.0, 1.0)


@dataclass(frozen=True)
class Expect:
    """What the operator must return: success (error is None), one status code, or "any" error."""

    error: int | str | None = None

    @property
    def success(self) -> bool:
        """True when the case expects the call to succeed (``error`` is None)."""
        return self.error is None


@dataclass(frozen=True)
class Case:
    """One fully resolved test case. Shapes are tuples of ints; rotary_mode is the int code 0..3."""

    name: str
    source: str                         # the file the case came from (for messages)
    shape: tuple[int, ...]              # dy (B, S, N, D)
    cos_shape: tuple[int, ...]
    sin_shape: tuple[int, ...]
    partial_slice: tuple[int, int]      # [start, end)
    rotary_mode: int = 1
    dtype: str = "float32"              # dy's dtype (canonical name, see dtypes.py)
    cos_dtype: str = "float32"
    sin_dtype: str = "float32"
    seed: int = 0
    dy_input: InputSpec = InputSpec()
    cos_input: InputSpec = InputSpec()
    sin_input: InputSpec = InputSpec()
    expect: Expect = Expect()
    standard: str | None = None         # None: the run's standard (--standard, else "default")
    tolerance: tuple[tuple[str, float], ...] = ()   # standard parameters, e.g. (("rtol", 1e-3),)
    tags: tuple[str, ...] = ()
    # Extensions for negative cases (tensors the operator must refuse):
    format: str = "ND"                  # aclFormat of all three tensors (key of FORMATS)
    null: tuple[str, ...] = ()          # tensors passed as NULL pointers: subset of TENSORS
    dy_strides: tuple[int, ...] | None = None   # element strides of dy (None = contiguous)
    op: str = "grad"                    # the operator (a key of ops.OPERATORS)
    known_defect: str | None = None     # why the operator is known to fail this case (strict xfail)
    checks: tuple[str, ...] = ()        # golden-free checks to run as well (a subset of checks.CHECKS)
    golden: bool = True                 # False: judged by its checks alone

    def input_spec(self, tensor: str) -> InputSpec:
        """How the values of ``tensor`` (``dy``, ``cos`` or ``sin``) are made."""
        return {"dy": self.dy_input, "cos": self.cos_input, "sin": self.sin_input}[tensor]


# ----------------------------------------------------------------------------------------------
# Public API


def load_cases(paths: Sequence[str | Path]) -> list[Case]:
    """Every case of every file under ``paths`` (files, or folders searched for *.yaml/*.yml), in order.

    Names must be unique across the whole run.
    """
    cases: list[Case] = []
    first_seen: dict[str, str] = {}
    for file in _case_files(paths):
        for case in _load_file(file):
            if case.name in first_seen:
                other = first_seen[case.name]
                where = "earlier in the same file" if other == case.source else f"also in {other}"
                raise PrmgError(f"duplicate case name '{case.name}' ({where})",
                                file=case.source, case=case.name, field="name")
            first_seen[case.name] = case.source
            cases.append(case)
    return cases


def validate(cases: Sequence[Case], supported_modes: set[int] | frozenset[int]) -> None:
    """Raise PrmgError for the first ``expect: pass`` case that breaks a documented constraint.

    A rotary mode the target does not support is not an error: such a case is skipped at run time
    (``constraints.skip_reason``).
    """
    for case in cases:
        if not case.expect.success:
            continue
        for violation in constraints.violation_details(case, supported_modes):
            if not violation.skippable:
                raise PrmgError(f"expect: pass, but {violation.message} "
                                f"(the operator returns {describe(violation.code)})",
                                file=case.source, case=case.name, field=violation.field)


def sanitise_name(text: str, replacement: str = "_") -> str:
    """``text`` with every character that ``NAME_PATTERN`` does not allow replaced by ``replacement``."""
    return "".join(char if NAME_PATTERN.fullmatch(char) else replacement for char in text)


def select(cases: Sequence[Case], keyword: str | None = None, tags: Sequence[str] = ()) -> list[Case]:
    """The cases whose name contains ``keyword`` (case-sensitive substring) and, when ``tags`` are
    given, that carry at least one of them (any-of). Order is kept."""
    wanted = set(tags)
    return [case for case in cases
            if (not keyword or keyword in case.name) and (not wanted or wanted.intersection(case.tags))]


def case_to_dict(case: Case) -> dict:
    """``case`` as a mapping of plain values that ``load_cases`` reads back into the same Case.

    Keys equal to their defaults are left out; a cos shape that one broadcast pattern derives is
    written as ``broadcast``.
    """
    out: dict = {"name": case.name, "shape": list(case.shape)}
    start, end = case.partial_slice
    if case.cos_shape != _default_cos_shape(end - start):
        pattern = next((p for p in BROADCASTS if len(case.shape) == 4
                        and broadcast_shape(p, case.shape, end - start) == case.cos_shape), None)
        if pattern:
            out["broadcast"] = pattern
        else:
            out["cos_shape"] = list(case.cos_shape)
    if case.sin_shape != case.cos_shape:
        out["sin_shape"] = list(case.sin_shape)
    if case.partial_slice != (0, case.shape[-1] if case.shape else 0):
        out["partial_slice"] = [start, end]
    if case.rotary_mode != 1:
        out["rotary_mode"] = MODE_NAMES.get(case.rotary_mode, case.rotary_mode)
    if case.dtype != "float32":
        out["dtype"] = case.dtype
    if case.cos_dtype != case.dtype:
        out["cos_dtype"] = case.cos_dtype
    if case.sin_dtype != case.cos_dtype:
        out["sin_dtype"] = case.sin_dtype
    if case.seed != _default_seed(case.name):
        out["seed"] = case.seed
    inputs = {tensor: _input_to_dict(case.input_spec(tensor)) for tensor in TENSORS
              if case.input_spec(tensor) != InputSpec()}
    if inputs:
        out["inputs"] = inputs
    if not case.expect.success:
        code = case.expect.error
        out["expect"] = {"error": STATUS_NAMES.get(code, code) if isinstance(code, int) else code}
    if case.standard is not None:
        out["standard"] = case.standard
    if case.tolerance:
        out["tolerance"] = dict(case.tolerance)
    if case.tags:
        out["tags"] = list(case.tags)
    if case.format != "ND":
        out["format"] = case.format
    if case.null:
        out["null"] = list(case.null)
    if case.dy_strides is not None:
        out["dy_strides"] = list(case.dy_strides)
    if case.op != "grad":
        out["op"] = case.op
    if case.known_defect:
        out["known_defect"] = case.known_defect
    if case.checks:
        out["checks"] = list(case.checks)
    if not case.golden:
        out["golden"] = False
    return out


# ----------------------------------------------------------------------------------------------
# Files and YAML


def _case_files(paths: Sequence[str | Path]) -> list[Path]:
    """The case files named by ``paths``: files as given, folders expanded; each file once."""
    files: list[Path] = []
    seen: set[Path] = set()
    for given in paths:
        path = Path(given)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
            if not found:
                raise PrmgError("no *.yaml or *.yml files in this folder", file=str(path))
        elif path.exists():
            found = [path]
        else:
            raise PrmgError("no such file or folder", file=str(path))
        for file in found:
            if file.resolve() not in seen:
                seen.add(file.resolve())
                files.append(file)
    return files


class _SafeLoader(yaml.SafeLoader):
    """The safe loader, also reading ``1e-3`` (no dot) as a float as YAML 1.2 does."""


_SafeLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"))


def _read_yaml(file: Path):
    """The document in ``file`` as plain Python values, refusing alias bombs and non-safe tags."""
    source = str(file)
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise PrmgError("cannot read: not UTF-8 text", file=source) from None
    except OSError as error:
        raise PrmgError(f"cannot read: {error.strerror or error}", file=source) from None
    loader = _SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise PrmgError("the file is empty (expected a list of cases)", file=source)
        _check_expansion(node, source)
        return loader.construct_document(node)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        tag = re.search(r"constructor for the tag '([^']*)'", str(error.problem))
        if tag and mark:
            tag_text = tag.group(1).replace("tag:yaml.org,2002:", "!!")
            raise PrmgError(f"unsupported YAML tag '{tag_text}' at line {mark.line + 1} "
                            f"(only plain YAML is read; nothing is executed)", file=source) from None
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise PrmgError(f"malformed YAML{where}: {error.problem or error.context}", file=source) from None
    except yaml.YAMLError as error:
        raise PrmgError(f"malformed YAML: {error}", file=source) from None
    except RecursionError:
        raise PrmgError("YAML nested too deeply", file=source) from None
    finally:
        loader.dispose()


def _check_expansion(root: yaml.Node, source: str) -> None:
    """Refuse a document whose aliases expand it past MAX_EXPANDED_NODES nodes, or that refers to itself.

    Counted on the composed node graph, where every alias is a shared node, before anything is built.
    """
    sizes: dict[int, int] = {}
    active: set[int] = set()

    def expanded(node: yaml.Node) -> int:
        """How many nodes ``node`` stands for once its aliases are followed (PrmgError on a cycle or an alias bomb)."""
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in active:
            raise PrmgError(f"recursive YAML alias at line {node.start_mark.line + 1}", file=source)
        active.add(key)
        if isinstance(node, yaml.SequenceNode):
            total = 1 + sum(expanded(child) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            _check_unique_keys(node, source)
            total = 1 + sum(expanded(k) + expanded(v) for k, v in node.value)
        else:
            total = 1
        active.discard(key)
        if total > MAX_EXPANDED_NODES:
            raise PrmgError(f"YAML aliases expand to more than {MAX_EXPANDED_NODES} nodes "
                            f"(an alias bomb?) near line {node.start_mark.line + 1}", file=source)
        sizes[key] = total
        return total

    expanded(root)


def _check_unique_keys(node: yaml.MappingNode, source: str) -> None:
    """Refuse a mapping that writes one key twice (YAML would silently keep the last)."""
    seen = set()
    for key, _ in node.value:
        if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
            if (key.tag, key.value) in seen:
                raise PrmgError(f"key '{key.value}' written twice in one mapping at line {key.start_mark.line + 1}",
                                file=source)
            seen.add((key.tag, key.value))


def _load_file(file: Path) -> list[Case]:
    """The cases of one file: defaults merged, sweeps expanded, every key checked."""
    return parse_document(_read_yaml(file), str(file), file.parent)


def parse_document(document, source: str, folder: Path) -> list[Case]:
    """The cases of an already-read case document (a list, or ``{defaults, cases}``), as ``load_cases``
    reads them from a file named ``source``; ``file:`` inputs are relative to ``folder``."""
    defaults, entries = _split_document(document, source)
    cases = []
    for number, entry in enumerate(entries, start=1):
        cases.extend(_expand_entry(entry, defaults, source, folder, number))
    return cases


def _split_document(document, source: str) -> tuple[dict, list]:
    """(defaults, case entries) of a file: a bare list, or {defaults: {...}, cases: [...]}."""
    if isinstance(document, list):
        return {}, document
    if not isinstance(document, dict):
        raise PrmgError(f"expected a list of cases or {{defaults: ..., cases: [...]}}, got {_kind(document)}",
                        file=source)
    _check_keys(document, FILE_KEYS, _Where(source), "")
    if "cases" not in document:
        raise PrmgError("missing key 'cases' (a file is a list of cases or {defaults: ..., cases: [...]})",
                        file=source)
    defaults, entries = document.get("defaults", {}), document["cases"]
    if defaults is None:
        defaults = {}
    if not isinstance(defaults, dict):
        raise PrmgError(f"expected a mapping of case keys, got {_kind(defaults)}", file=source, field="defaults")
    defaults = _null_key_named(defaults)
    _check_keys(defaults, CASE_KEYS + ("sweep",), _Where(source), "defaults.")
    for key in ("name", "sweep"):
        if key in defaults:
            raise PrmgError(f"'{key}' belongs to each case, not to defaults", file=source, field=f"defaults.{key}")
    if not isinstance(entries, list):
        raise PrmgError(f"expected a list of cases, got {_kind(entries)}", file=source, field="cases")
    return defaults, entries


# ----------------------------------------------------------------------------------------------
# Entries: defaults, sweeps, name templates


class _Where:
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


def _expand_entry(entry, defaults: dict, source: str, folder: Path, number: int) -> list[Case]:
    """The cases one entry of ``cases`` stands for: one, or a sweep's whole product."""
    if not isinstance(entry, dict):
        raise PrmgError(f"a case must be a mapping of keys, got {_kind(entry)}", file=source, case=f"#{number}")
    entry = _null_key_named(entry)
    label = entry.get("name")
    where = _Where(source, label if isinstance(label, str) and label else f"#{number}")
    _check_keys(entry, CASE_KEYS + ("sweep",), where, "")
    sweep = entry.get("sweep", {})
    if not isinstance(sweep, dict) or ("sweep" in entry and not sweep):
        raise where.error("sweep", "expected a mapping of key: [values...] with at least one key")
    sweep = _null_key_named(sweep)
    _check_keys(sweep, CASE_KEYS, where, "sweep.")
    for key, values in sweep.items():
        if key == "name":
            raise where.error("sweep.name", "the name cannot be swept; make it a template such as 'x_{dtype}'")
        if key in entry:
            raise where.error(f"sweep.{key}", f"'{key}' is both swept and set in the case; keep one")
        if not isinstance(values, list) or not values:
            raise where.error(f"sweep.{key}", f"expected a non-empty list of values, got {_kind(values)}")
    keys = list(sweep)
    count = math.prod(len(sweep[key]) for key in keys)
    if count > MAX_SWEEP_CASES:
        raise where.error("sweep", f"the sweep makes {count} cases, more than {MAX_SWEEP_CASES}")
    written = {key: value for key, value in entry.items() if key != "sweep"}
    cases, names = [], {}
    for index, combination in enumerate(itertools.product(*(sweep[key] for key in keys))):
        raw, origins = _merge(defaults, {**written, **dict(zip(keys, combination))})
        origins.update({key: "sweep." for key in keys})
        name = _render_name(raw, index, _Where(source, where.case, origins))
        if name in names:
            raise where.error("name", f"the name template '{raw['name']}' gives the name '{name}' to cases "
                              f"{names[name]} and {index} of the sweep; add a swept key or {{index}}")
        names[name] = index
        cases.append(_build_case(raw, name, _Where(source, name, origins), folder))
    return cases


def _null_key_named(mapping: dict) -> dict:
    """``mapping`` with a key YAML read as null (written ``null:``) renamed to the case key "null"."""
    return {("null" if key is None else key): value for key, value in mapping.items()}


def _merge(defaults: dict, case: dict) -> tuple[dict, dict[str, str]]:
    """``case`` over ``defaults``, and which keys came from the defaults ("defaults." origins)."""
    merged = dict(defaults)
    origins = {key: "defaults." for key in defaults}
    for key, value in case.items():
        inherited = merged.get(key)
        if key == "inputs" and isinstance(inherited, dict) and isinstance(value, dict):
            origins.update({f"inputs.{tensor}": "defaults." for tensor in inherited})
            origins.update({f"inputs.{tensor}": "" for tensor in value})
            value = {**inherited, **value}
        elif key == "tags" and isinstance(inherited, list) and isinstance(value, list):
            value = list(dict.fromkeys(inherited + value))
        elif key == "tolerance" and isinstance(inherited, dict) and isinstance(value, dict) \
                and case.get("standard", defaults.get("standard")) == defaults.get("standard"):
            value = {**inherited, **value}
        merged[key] = value
        origins[key] = ""
    if "standard" in case and case["standard"] != defaults.get("standard") and "tolerance" not in case:
        merged.pop("tolerance", None)   # the defaults' tolerance belongs to the defaults' standard
    return merged, origins


def _render_name(raw: dict, index: int, where: _Where) -> str:
    """The case name: ``raw['name']`` with ``{key}`` fields filled in (see Sweeps)."""
    if "name" not in raw:
        raise where.error("name", "missing required key 'name'")
    template = raw["name"]
    if not isinstance(template, str):
        raise where.error("name", f"expected a string, got {_kind(template)}")
    if "{" in template or "}" in template:
        try:
            fields = [field for _, field, _, _ in string.Formatter().parse(template) if field is not None]
        except ValueError as error:
            raise where.error("name", f"bad name template '{template}': {error}") from None
        available = ["index"] + [key for key in raw if key != "name"]
        values: dict = {"index": index}
        for field in fields:
            if field not in available:
                raise where.error("name", f"unknown field '{{{field}}}' in name template '{template}'"
                                  f"{_suggest(field, available)} (available: {', '.join(available)})")
            if field != "index":
                values[field] = _name_text(field, raw[field], where)
        try:
            template = template.format(**values)
        except (ValueError, TypeError) as error:
            raise where.error("name", f"bad name template '{raw['name']}': {error}") from None
    if not NAME_PATTERN.fullmatch(template):
        raise where.error("name", f"'{template}' is not a valid name (letters, digits, '_', '.', '-' only)")
    return template


def _name_text(key: str, value, where: _Where) -> str:
    """``value`` as it appears in a name: scalars as written, shapes joined by 'x', other lists by '-'."""
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) and not isinstance(v, bool)
                                       for v in value):
        return ("x" if key.endswith("shape") else "-").join(str(v) for v in value)
    raise where.error("name", f"'{{{key}}}' cannot go into a name: its value is {_kind(value)}")


# ----------------------------------------------------------------------------------------------
# One case: every key checked and resolved


def _build_case(raw: dict, name: str, where: _Where, folder: Path) -> Case:
    """The Case that the merged mapping ``raw`` describes, or PrmgError naming the bad field."""
    expect = _parse_expect(raw.get("expect", "pass"), where)
    negative = not expect.success
    if "shape" not in raw:
        raise where.error("shape", "missing required key 'shape' (dy's [B, S, N, D])")
    shape = _parse_dims(raw["shape"], "shape", where, four=not negative)
    dim = shape[-1] if shape else 0
    partial_slice = _parse_slice(raw["partial_slice"], where) if "partial_slice" in raw else (0, dim)
    length = partial_slice[1] - partial_slice[0]
    if "broadcast" in raw:
        if "cos_shape" in raw:
            raise where.error("broadcast", "set either broadcast or cos_shape, not both")
        pattern = raw["broadcast"]
        if pattern not in BROADCASTS:
            raise where.error("broadcast", f"unknown broadcast pattern {_show(pattern)}"
                              f"{_suggest(pattern, BROADCASTS)} (valid: {', '.join(BROADCASTS)})")
        if len(shape) != 4:
            raise where.error("broadcast", "a broadcast pattern needs a 4-D shape; give cos_shape instead")
        cos_shape = broadcast_shape(pattern, shape, length)
    elif "cos_shape" in raw:
        cos_shape = _parse_dims(raw["cos_shape"], "cos_shape", where, four=not negative)
    else:
        cos_shape = _default_cos_shape(length)
    sin_shape = _parse_dims(raw["sin_shape"], "sin_shape", where, four=not negative) \
        if "sin_shape" in raw else cos_shape
    dtype = _parse_dtype(raw.get("dtype", "float32"), "dtype", where, negative)
    cos_dtype = _parse_dtype(raw["cos_dtype"], "cos_dtype", where, negative) if "cos_dtype" in raw else dtype
    sin_dtype = _parse_dtype(raw["sin_dtype"], "sin_dtype", where, negative) if "sin_dtype" in raw else cos_dtype
    sizes = {"dy": math.prod(shape), "cos": math.prod(cos_shape), "sin": math.prod(sin_shape)}
    inputs = _parse_inputs(raw.get("inputs", {}), sizes, where, folder)
    standard = _parse_standard(raw["standard"], where) if "standard" in raw else None
    checks = _parse_checks(raw.get("checks", []), where)
    golden = _parse_golden(raw.get("golden", True), where)
    if not golden and not checks:
        raise where.error("golden", "golden: false judges a case by its checks alone; name some in checks")
    return Case(
        name=name,
        source=where.source,
        shape=shape,
        cos_shape=cos_shape,
        sin_shape=sin_shape,
        partial_slice=partial_slice,
        rotary_mode=_parse_mode(raw.get("rotary_mode", 1), where, negative),
        dtype=dtype,
        cos_dtype=cos_dtype,
        sin_dtype=sin_dtype,
        seed=_parse_seed(raw["seed"], where) if "seed" in raw else _default_seed(name),
        dy_input=inputs["dy"],
        cos_input=inputs["cos"],
        sin_input=inputs["sin"],
        expect=expect,
        standard=standard,
        tolerance=_parse_tolerance(raw.get("tolerance", {}), standard, where),
        tags=_parse_words(raw.get("tags", []), "tags", where),
        format=_parse_format(raw.get("format", "ND"), where),
        null=_parse_null(raw.get("null", []), where),
        dy_strides=_parse_strides(raw["dy_strides"], shape, where) if "dy_strides" in raw else None,
        op=_parse_op(raw.get("op", "grad"), where),
        known_defect=_parse_known_defect(raw["known_defect"], where) if "known_defect" in raw else None,
        checks=checks,
        golden=golden,
    )


def _default_seed(name: str) -> int:
    """The seed a case gets when it sets none: stable, derived from its name (inputs.default_seed)."""
    from prmg_cli.inputs import default_seed  # inputs.py owns the derivation
    return default_seed(name)


def _default_cos_shape(length: int) -> tuple[int, ...]:
    """cos's shape when neither cos_shape nor broadcast is given: (1, 1, 1, L), L >= 1."""
    return (1, 1, 1, max(length, 1))


def _is_int(value) -> bool:
    """True for an int that is not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    """True for an int or a float that is not a bool."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _parse_dims(value, key: str, where: _Where, *, four: bool) -> tuple[int, ...]:
    """A shape: a list of ints 0 <= d <= 2**63-1; exactly four of them unless ``four`` is False."""
    if not isinstance(value, list):
        raise where.error(key, f"expected a list of dimensions like [2, 16, 4, 128], got {_kind(value)}")
    for position, dim in enumerate(value):
        if not _is_int(dim):
            raise where.error(key, f"dimension {position} must be an integer, got {_kind(dim)}")
        if dim < 0:
            raise where.error(key, f"dimension {position} is negative ({dim})")
        if dim > _INT64_MAX:
            raise where.error(key, f"dimension {position} ({dim}) does not fit in int64")
    if four and len(value) != 4:
        raise where.error(key, f"expected 4 dimensions [B, S, N, D], got {len(value)} "
                          f"(other lengths only in expect: {{error: ...}} cases)")
    return tuple(value)


def _parse_slice(value, where: _Where) -> tuple[int, int]:
    """``[start, end]`` as a tuple of two integers that fit in int64."""
    if not (isinstance(value, list) and len(value) == 2 and all(_is_int(v) for v in value)):
        raise where.error("partial_slice", f"expected [start, end] (two integers), got {_show(value)}")
    if any(abs(v) > _INT64_MAX for v in value):
        raise where.error("partial_slice", "start and end must fit in int64")
    return value[0], value[1]


def _parse_mode(value, where: _Where, negative: bool) -> int:
    """The mode's int code: a name of ROTARY_MODES or 0..3 (any int64 in expect-error cases)."""
    valid = "half, interleave, quarter, interleave-half or 0..3"
    if isinstance(value, str):
        if value not in ROTARY_MODES:
            raise where.error("rotary_mode", f"unknown rotary_mode '{value}'{_suggest(value, ROTARY_MODES)}"
                              f" (valid: {valid})")
        return ROTARY_MODES[value]
    if not _is_int(value):
        raise where.error("rotary_mode", f"expected a mode name or number, got {_kind(value)} (valid: {valid})")
    if not negative and value not in MODE_NAMES:
        raise where.error("rotary_mode", f"unknown rotary_mode {value} (valid: {valid})")
    if abs(value) > _INT64_MAX:
        raise where.error("rotary_mode", f"rotary_mode {value} does not fit in int64")
    return value


def _parse_dtype(value, key: str, where: _Where, negative: bool) -> str:
    """The canonical dtype name; only the operator's dtypes outside expect-error cases."""
    allowed = tuple(dtypes.DTYPES) if negative else dtypes.OPERATOR_DTYPES
    if not isinstance(value, str):
        raise where.error(key, f"expected a dtype name, got {_kind(value)} (valid: {', '.join(allowed)})")
    try:
        name = dtypes.canonical(value)
    except KeyError:
        name = None
    if name not in allowed:
        extra = " (the others only in expect: {error: ...} cases)" if name in dtypes.DTYPES else ""
        raise where.error(key, f"unknown dtype '{value}'{_suggest(value, allowed)} "
                          f"(valid: {', '.join(allowed)}){extra}")
    return name


def _parse_seed(value, where: _Where) -> int:
    """A seed: an integer 0 <= seed < 2**64."""
    if not _is_int(value) or not 0 <= value < 2**64:
        raise where.error("seed", f"expected an integer 0 <= seed < 2**64, got {_kind(value)}")
    return value


def _parse_expect(value, where: _Where) -> Expect:
    """``pass`` -> Expect(None); ``{error: CODE}`` -> Expect(code int, or "any")."""
    usage = "expected 'pass' or {error: CODE} (CODE a number, a status name or 'any')"
    if value == "pass":
        return Expect()
    if not isinstance(value, dict):
        raise where.error("expect", f"{usage}, got {_show(value)}")
    _check_keys(value, ("error",), where, "expect.")
    if "error" not in value:
        raise where.error("expect", f"{usage}, got an empty mapping")
    code = value["error"]
    if code == "any":
        return Expect("any")
    if isinstance(code, str):
        if code not in STATUS_CODES:
            raise where.error("expect.error", f"unknown status name '{code}'{_suggest(code, STATUS_CODES)}")
        code = STATUS_CODES[code]
    if not _is_int(code):
        raise where.error("expect.error", f"{usage}, got {_kind(code)}")
    if code == 0:
        raise where.error("expect.error", "0 is success: write 'expect: pass'")
    return Expect(code)


def _parse_standard(value, where: _Where) -> str:
    """A known standard's name (``compare.check_standard``)."""
    _check_standard(value, {}, where)
    return value


def _parse_tolerance(value, standard: str | None, where: _Where) -> tuple[tuple[str, float], ...]:
    """The standard's parameters (``default`` when the case names none), sorted by key; each a finite
    number >= 0 (``compare.check_standard``)."""
    if not isinstance(value, dict):
        raise where.error("tolerance", f"expected a mapping of the standard's parameters, got {_kind(value)}")
    _check_standard(standard or "default", value, where)
    return tuple(sorted((key, float(number)) for key, number in value.items()))


def _check_standard(standard, tolerance: dict, where: _Where) -> None:
    """``compare.check_standard``, its error raised at ``where`` with a did-you-mean hint for a
    misspelt standard or parameter name."""
    try:
        check_standard(standard, tolerance)
    except PrmgError as error:
        _, _, key = error.field.partition(".")
        word, choices = (key, STANDARD_PARAMS[standard]) if key else (standard, STANDARDS)
        hint = "" if word in choices else _suggest(word, choices)
        raise where.error(error.field, error.reason + hint) from None


def _parse_words(value, key: str, where: _Where) -> tuple[str, ...]:
    """Tags: a list of words (``NAME_PATTERN``) as a tuple without repeats, in order."""
    if not isinstance(value, list):
        raise where.error(key, f"expected a list of words, got {_kind(value)}")
    for word in value:
        if not (isinstance(word, str) and NAME_PATTERN.fullmatch(word)):
            raise where.error(key, f"{_show(word)} is not a word (letters, digits, '_', '.', '-')")
    return tuple(dict.fromkeys(value))


def _parse_op(value, where: _Where) -> str:
    """An operator's name, a key of ``ops.OPERATORS``."""
    if not isinstance(value, str) or value not in OPERATORS:
        raise where.error("op", f"unknown op {_show(value)}{_suggest(value, OPERATORS)} "
                          f"(valid: {', '.join(OPERATORS)})")
    return value


def _parse_known_defect(value, where: _Where) -> str:
    """Why the operator is known to fail the case: a non-empty line of text."""
    if not isinstance(value, str) or not value.strip() or not value.isprintable():
        raise where.error("known_defect", f"expected a one-line reason the operator fails this case, "
                          f"got {_kind(value)}")
    return value.strip()


def _parse_checks(value, where: _Where) -> tuple[str, ...]:
    """Golden-free checks: a list of names of ``checks.CHECKS``, without repeats, in order."""
    if not isinstance(value, list):
        raise where.error("checks", f"expected a list of checks ({', '.join(CHECKS)}), got {_kind(value)}")
    for name in value:
        if not isinstance(name, str) or name not in CHECKS:
            raise where.error("checks", f"unknown check {_show(name)}{_suggest(name, CHECKS)} "
                              f"(valid: {', '.join(CHECKS)})")
    return tuple(dict.fromkeys(value))


def _parse_golden(value, where: _Where) -> bool:
    """``golden: false`` judges a case by its checks alone (it must then name some)."""
    if not isinstance(value, bool):
        raise where.error("golden", f"expected true or false, got {_kind(value)}")
    return value


def _parse_format(value, where: _Where) -> str:
    """An aclFormat name, a key of ``FORMATS``."""
    if value not in FORMATS:
        raise where.error("format", f"unknown format {_show(value)}{_suggest(value, FORMATS)} "
                          f"(valid: {', '.join(FORMATS)})")
    return value


def _parse_null(value, where: _Where) -> tuple[str, ...]:
    """The tensors to pass as NULL pointers, in the order dy, cos, sin."""
    if not isinstance(value, list):
        raise where.error("null", f"expected a list of tensor names ({', '.join(TENSORS)}), got {_kind(value)}")
    for tensor in value:
        if tensor not in TENSORS:
            raise where.error("null", f"unknown tensor {_show(tensor)} (valid: {', '.join(TENSORS)})")
    return tuple(tensor for tensor in TENSORS if tensor in value)


def _parse_strides(value, shape: tuple[int, ...], where: _Where) -> tuple[int, ...]:
    """dy's element strides: one non-negative int64 per axis of ``shape``."""
    if not (isinstance(value, list) and all(_is_int(v) and 0 <= v <= _INT64_MAX for v in value)):
        raise where.error("dy_strides", f"expected a list of non-negative integers, got {_show(value)}")
    if len(value) != len(shape):
        raise where.error("dy_strides", f"expected {len(shape)} strides (one per axis of shape), got {len(value)}")
    return tuple(value)


def _parse_inputs(value, sizes: dict[str, int], where: _Where, folder: Path) -> dict[str, InputSpec]:
    """One InputSpec per tensor (uniform [-1, 1] when not given)."""
    if not isinstance(value, dict):
        raise where.error("inputs", f"expected a mapping of dy/cos/sin to input specs, got {_kind(value)}")
    _check_keys(value, TENSORS, where, "inputs.")
    return {tensor: _parse_input(value[tensor], tensor, sizes[tensor], where, folder)
            if tensor in value else InputSpec() for tensor in TENSORS}


def _parse_input(value, tensor: str, size: int, where: _Where, folder: Path) -> InputSpec:
    """The InputSpec of ``inputs.TENSOR``: one kind of ``INPUT_KINDS`` with checked arguments (``size`` numbers for
    ``values`` and ``file``)."""
    path = f"inputs.{tensor}"
    kinds = INPUT_KINDS if tensor != "dy" else tuple(k for k in INPUT_KINDS if k != "rope")
    if not (isinstance(value, dict) and len(value) == 1):
        raise where.error(path, f"expected one of {{{': ..., '.join(kinds)}: ...}}, got {_show(value)}")
    (kind, args), = value.items()
    if kind == "rope" and tensor == "dy":
        raise where.error(f"{path}.rope", "rope tables are for cos and sin only")
    _check_keys(value, kinds, where, f"{path}.")
    path = f"{path}.{kind}"
    if kind in ("uniform", "normal"):
        labels = ("lo", "hi") if kind == "uniform" else ("mean", "std")
        if not (isinstance(args, list) and len(args) == 2
                and all(_is_number(v) and math.isfinite(v) for v in args)):
            raise where.error(path, f"expected [{', '.join(labels)}] (two finite numbers), got {_show(args)}")
        if kind == "uniform" and args[0] > args[1]:
            raise where.error(path, f"lo {args[0]} is greater than hi {args[1]}")
        if kind == "normal" and args[1] < 0:
            raise where.error(path, f"std {args[1]} is negative")
        return InputSpec(kind, (float(args[0]), float(args[1])))
    if kind == "values":
        flat = _flatten_numbers(args, path, where)
        if len(flat) != size:
            raise where.error(path, f"{len(flat)} values for a tensor of {size} elements")
        return InputSpec(kind, flat)
    if kind == "file":
        return InputSpec(kind, (_check_npy(args, size, path, where, folder),))
    return InputSpec(kind, _parse_rope(args, path, where))


def _flatten_numbers(value, path: str, where: _Where) -> tuple[float, ...]:
    """A flat or nested list of numbers, flattened in C order."""
    if not isinstance(value, list):
        raise where.error(path, f"expected a list of numbers, got {_kind(value)}")
    flat: list[float] = []
    pending = [iter(value)]
    while pending:
        for item in pending[-1]:
            if isinstance(item, list):
                pending.append(iter(item))
                break
            if not _is_number(item):
                raise where.error(path, f"expected numbers, got {_kind(item)} at position {len(flat)}")
            flat.append(float(item))
        else:
            pending.pop()
    return tuple(flat)


def _check_npy(value, size: int, path: str, where: _Where, folder: Path) -> str:
    """The absolute path of a readable .npy of ``size`` plain (non-object) elements."""
    if not isinstance(value, str) or not value:
        raise where.error(path, f"expected a .npy file path, got {_kind(value)}")
    file = (folder / value).resolve()
    if not file.is_file():
        raise where.error(path, f"no such file: {file}")
    try:
        with open(file, "rb") as stream:
            version = np.lib.format.read_magic(stream)
            read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) \
                else np.lib.format.read_array_header_2_0
            shape, _, dtype = read_header(stream)
    except (OSError, ValueError) as error:
        raise where.error(path, f"{file} is not a readable .npy file ({error})") from None
    if dtype.hasobject:
        raise where.error(path, f"{file} holds Python objects (pickles are refused)")
    if math.prod(shape) != size:
        raise where.error(path, f"{file} holds {math.prod(shape)} elements {tuple(shape)}; "
                          f"the tensor has {size}")
    return str(file)


def _parse_rope(value, path: str, where: _Where) -> tuple[float, int]:
    """(base, offset) of a RoPE table: base > 0 (10000), positions from offset >= 0 (0)."""
    if not isinstance(value, dict):
        raise where.error(path, f"expected {{base: 10000, offset: 0}}, got {_kind(value)}")
    _check_keys(value, ROPE_KEYS, where, f"{path}.")
    base = value.get("base", DEFAULT_ROPE_BASE)
    offset = value.get("offset", 0)
    if not (_is_number(base) and math.isfinite(base) and base > 0):
        raise where.error(f"{path}.base", f"expected a finite number > 0, got {_kind(base)}")
    if not (_is_int(offset) and 0 <= offset <= _INT64_MAX):
        raise where.error(f"{path}.offset", f"expected an integer >= 0, got {_kind(offset)}")
    return float(base), offset


def _input_to_dict(spec: InputSpec) -> dict:
    """``spec`` as the ``inputs`` entry that ``_parse_input`` reads back into it."""
    if spec.kind == "rope":
        base, offset = spec.args
        return {"rope": {"base": base, **({"offset": offset} if offset else {})}}
    if spec.kind == "file":
        return {"file": spec.args[0]}
    return {spec.kind: list(spec.args)}


# ----------------------------------------------------------------------------------------------
# Messages


def _check_keys(mapping: dict, known: Sequence[str], where: _Where, prefix: str) -> None:
    """Refuse a key not in ``known``, suggesting the closest known one."""
    for key in mapping:
        if key not in known:
            raise where.error(f"{prefix}{key}", f"unknown key {_show(key)}{_suggest(key, known)}")


def _suggest(word, choices) -> str:
    """' (did you mean 'x'?)' for the closest of ``choices``, or ''."""
    if not isinstance(word, str):
        return ""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _show(value) -> str:
    """A short rendering of a user's value for a message."""
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _kind(value) -> str:
    """What ``value`` is, for 'expected X, got Y' messages (bool is not an integer here)."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, int):
        return f"the integer {value}"
    if isinstance(value, float):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {_show(value)}"
    if isinstance(value, list):
        return f"a list {_show(value)}"
    if isinstance(value, dict):
        return "a mapping"
    return f"a {type(value).__name__} ({_show(value)})"
