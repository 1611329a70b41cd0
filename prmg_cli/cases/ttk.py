"""Import of TTK operator test lists (CSV) as prmg cases: upstream's kernel lists and its torch-path (e2e) lists.

A TTK list has one row per case; its fields are Python literals inside CSV quoting, read here with
``ast.literal_eval`` only (never ``eval``). Which kind a list is comes from its header (``LIST_KINDS``). Per row,
each prmg key (or rule) <- the kernel list's column; the e2e list's:

- ``name`` (characters outside letters, digits, ``_ . -`` become ``_``) <- kernel list ``testcase_name``; e2e list
  ``testcase_name``
- ``op`` <- kernel list ``op_name`` (``OP_NAMES``); e2e list ``api_name``, its last dotted part (``API_NAMES``)
- ``shape``, ``cos_shape`` (``sin_shape`` when it differs) <- kernel list ``input_shapes`` (dy, cos, sin); e2e list
  ``tensor_view_shapes``
- ``dtype``, ``cos_dtype`` (``sin_dtype`` when it differs) <- kernel list ``input_dtypes`` (dy, cos, sin); e2e list
  ``tensor_dtypes`` (one entry: every tensor's)
- only ND (empty: ND) <- kernel list ``input_formats``; e2e list ``tensor_formats``
- ``rotary_mode``, ``partial_slice`` (absent: the torch API's default ``[0, 0]``, a no-op) <- kernel list
  ``attributes`` ``{'rotary_mode': m, 'partial_slice': [start, end]}``; e2e list the same, the mode a name the torch
  API takes (``'interleave'``), ``partial_slice`` optional
- ``inputs: {dy: {uniform: [lo, hi]}, ...}`` (a bound of None, or no column: TTK's default [-2, 2]) <- kernel list
  ``input_data_ranges`` ((lo, hi) per input; one entry: every input's); e2e list the same
- ``standard: double_thousandth``, ``tolerance: {rel, share, atol, cap: 0}``: TTK's ``close``, its defaults where the
  row gives one of them only (``_close_defaults``) <- kernel list ``precision_tolerances`` ((rel, share) per output),
  ``absolute_precision`` (atol); e2e list the same
- ``dy_offset`` ... ``sin_strides`` (``_views``: the backward's torch API refuses a non-contiguous view; the storage
  must hold what the view reaches) <- e2e list ``tensor_view_offsets``, ``tensor_view_strides``,
  ``tensor_storage_shapes``
- must be ``(0,)``: the in-place tensor is the first <- e2e list ``inplace_input_indexes``
- a YAML comment above the case <- kernel list ``remark``; e2e list ``remark``

The columns prmg maps no key from (``UNMAPPED``) must hold what the case does anyway: empty (or ``()``), or what the
mapped columns already say (output shapes, dtypes and ori shapes dy's, formats ND, the in-place output 0, a
``soc_series`` that runs the row on the 950, the case files' chip: TTK's filter, ``-`` excluding a chip); a row
giving anything else there (input or golden binaries, a golden API of its own, a batch-consistency group, another
chip) is left out naming the column, never imported without it.

Every imported case gets the tag ``ttk`` (and ``e2e`` from an e2e list) and ``expect: pass``. Rows are numbered
from 1 over the data rows (the header line is not counted, so row N is line N + 1 of a file without quoted line
breaks). A disabled row, a row of another operator and a row that cannot be mapped (bad literal, wrong arity,
a format other than ND, a case the operator would refuse, an e2e row its torch API refuses before the operator runs:
a mode that is no name or not in ``TORCH_API_MODES``, a slice list of other than two values) is left out with a note
naming its row. A name that is empty, only dots or too long becomes ``ttk_rowN``. A list with no importable row is
an error, not an empty file. Only a regular file of at most 16 MiB is read.
"""

from __future__ import annotations

import ast
import csv
import io
import math
import re
from dataclasses import dataclass
from pathlib import Path

from . import gencase
from .. import files
from ..case import contiguous_strides
from ..ops.targets import REFERENCE_SOC
from ..ops.grad import contiguous
from ..vocab import INTERLEAVE, MODE_NAMES, ROTARY_MODES, TENSORS
from ..errors import PrmgError
from .fields import show
from .loader import MAX_NAME_LENGTH, NAME_PATTERN, sanitise_name

OP_NAMES = {"inplace_partial_rotary_mul_grad": "grad", "inplace_partial_rotary_mul": "forward"}     # kernel lists
API_NAMES = {"inplace_partial_rotary_mul_backward": "grad", "inplace_partial_rotary_mul": "forward"}   # e2e lists
# The modes the torch API of an e2e list passes on (ops-transformer's torch_extension/cann_ops_transformer/ops/csrc/
# inplace_partial_rotary_mul{,_backward}.cpp, read at 577814407 of 2026-08-21: it maps the four names, then
# TORCH_CHECKs rotary_mode == "interleave"; its schema takes str rotary_mode and int[2] partial_slice).
TORCH_API_MODES = (MODE_NAMES[INTERLEAVE],)
# What the header of an imported kernel list says of its thresholds. TTK reads precision_tolerances and
# absolute_precision only under --compare close (its is_close); without --compare it routes a float output to
# mix_tolerance (ops-test-kit's comparison/resolve.py, as its test_resolve_tolerance has it), whose verdict prmg's
# --standard mixed gives.
THRESHOLDS_NOTE = ["precision_tolerances/absolute_precision -> standard double_thousandth, cap 0: TTK's "
                   "--compare close (it has no cap);",
                   "TTK's default (no --compare) ignores them and judges by mix_tolerance: prmg run --standard mixed."]
# An e2e row's view columns (TTK's E2E_Case_Writing.md): each tensor's storage offset, strides and storage shape.
VIEW_COLUMNS = ("tensor_view_offsets", "tensor_view_strides", "tensor_storage_shapes")
# TTK's data range of an input whose input_data_ranges gives none (its Test_Case_Generation.md: min -2, max 2).
DEFAULT_RANGE = (-2, 2)
IMPORTED = "Imported by `prmg import-ttk "      # how the first line of each file import-ttk writes begins (after '# ')
_MAX_FIELD = 100_000
MAX_CSV_BYTES = 16 * files.MiB


@dataclass(frozen=True)
class ListKind:
    """One kind of TTK list: its required columns, the column naming the operator and the names it may hold
    (read as their last dotted part), the columns of the three tensors' shapes, dtypes and formats, the tag its
    cases get besides ``ttk``, and whether its rows call upstream's torch API (an e2e list: the API's own checks,
    its default slice, views at offsets and strides)."""

    name: str
    required: tuple[str, ...]
    op_column: str
    op_names: dict
    shapes: str
    dtypes: str
    formats: str
    tags: tuple[str, ...]
    torch_api: bool


LIST_KINDS = (
    ListKind("kernel", ("testcase_name", "op_name", "input_shapes", "input_dtypes", "attributes"), "op_name",
             OP_NAMES, "input_shapes", "input_dtypes", "input_formats", ("ttk",), False),
    ListKind("e2e", ("testcase_name", "api_name", "tensor_view_shapes", "tensor_dtypes", "attributes"), "api_name",
             API_NAMES, "tensor_view_shapes", "tensor_dtypes", "tensor_formats", ("ttk", "e2e"), True),
)


class _Unmappable(Exception):
    """A row that cannot become a case; the message says why."""


def _literal(row: dict, column: str, default=None):
    """The Python literal in ``row[column]`` (``default`` when the field is empty or missing)."""
    text = (row.get(column) or "").strip()
    if not text:
        return default
    if len(text) > _MAX_FIELD:
        raise _Unmappable(f"{column} is longer than {_MAX_FIELD} characters")
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise _Unmappable(f"cannot parse {column}: {text[:80]!r}") from None


def _triple(value, column: str, parse, broadcast: bool = False) -> list:
    """Three entries (dy, cos, sin) of ``column``, each converted by ``parse``; with ``broadcast``, one entry stands
    for all three (TTK fills every position from a one-entry dtype or range list)."""
    entries = tuple(value) * 3 if broadcast and isinstance(value, (tuple, list)) and len(value) == 1 else value
    if not isinstance(entries, (tuple, list)) or len(entries) != 3:
        raise _Unmappable(f"cannot parse {column}: expected 3 entries (dy, cos, sin), got {value!r:.80}")
    try:
        return [parse(entry) for entry in entries]
    except (TypeError, ValueError):
        raise _Unmappable(f"cannot parse {column}: {value!r:.80}") from None


def _shape(entry) -> list[int]:
    """One shape entry as a list of ints (ValueError otherwise)."""
    if not isinstance(entry, (tuple, list)) or not all(isinstance(d, int) and not isinstance(d, bool) for d in entry):
        raise ValueError(entry)
    return list(entry)


def _dtype(entry) -> str:
    """One dtype entry, a string (ValueError otherwise)."""
    if not isinstance(entry, str):
        raise ValueError(entry)
    return entry


def _range(entry) -> list[float]:
    """One ``(lo, hi)`` data range as a list of two numbers, a bound of None TTK's default (``DEFAULT_RANGE``);
    ValueError otherwise (a third value and more, TTK's values that must appear among the draws, included)."""
    if entry is None:
        entry = (None, None)
    if not isinstance(entry, (tuple, list)) or len(entry) != 2:
        raise ValueError(entry)
    bounds = [default if x is None else x for x, default in zip(entry, DEFAULT_RANGE)]
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in bounds):
        raise ValueError(entry)
    return bounds


def _inputs(row: dict) -> dict:
    """``{dy: {uniform: [lo, hi]}, ...}`` of the row's input_data_ranges (one entry: every input's), TTK's default
    [-2, 2] where it gives none."""
    ranges = _literal(row, "input_data_ranges", ((None, None),))
    if isinstance(ranges, (tuple, list)) and any(isinstance(entry, (tuple, list)) and len(entry) > 2
                                                 for entry in ranges):
        raise _Unmappable(f"input_data_ranges {ranges!r:.80} names values that must appear among the draws (a "
                          "range's third value on), which prmg's seeded inputs do not place")
    return dict(zip(TENSORS, ({"uniform": r} for r in _triple(ranges, "input_data_ranges", _range, True))))


def _enabled(row: dict) -> bool:
    """The row's ``is_enabled`` (True when empty; the text true, 1 or yes counts as True)."""
    value = _literal(row, "is_enabled", True)
    if isinstance(value, str):
        value = value.strip().lower() in ("true", "1", "yes")
    return bool(value)


def _close_defaults(dtype: str) -> dict:
    """TTK ``close``'s thresholds where a row gives none (its is_close ``_get_rtol``, ``_get_ptol``, ``_get_atol``):
    rel = share = 0.001 for float16 and bfloat16 outputs, 0.0001 otherwise; atol 1e-8."""
    rel = 0.001 if dtype in ("float16", "bfloat16") else 0.0001
    return {"rel": rel, "share": rel, "atol": 1e-8}


def _tolerance(row: dict, dtype: str) -> dict | None:
    """``{rel, share, atol, cap: 0}`` from precision_tolerances ((rel, share) per output) and
    absolute_precision, what the row leaves out TTK ``close``'s default for an output of ``dtype``
    (``_close_defaults``); None when the row gives no thresholds."""
    tolerances = _literal(row, "precision_tolerances")
    atol = _literal(row, "absolute_precision")
    if tolerances is None and atol is None:
        return None
    tolerance: dict = _close_defaults(dtype)
    if tolerances is not None:
        nested = isinstance(tolerances, (tuple, list)) and tolerances and isinstance(tolerances[0], (tuple, list))
        pairs = tolerances if nested else [tolerances]
        if len(pairs) != 1 or not isinstance(pairs[0], (tuple, list)) or len(pairs[0]) != 2:
            raise _Unmappable(f"cannot parse precision_tolerances: expected ((rel, share),) for the one "
                              f"output, got {tolerances!r:.80}")
        rel, share = pairs[0]
        tolerance.update(rel=rel, share=share)
    if isinstance(atol, (tuple, list)) and len(atol) == 1:         # per output, as TTK's resolve reads it
        atol = atol[0]
    if atol is not None:
        tolerance["atol"] = atol
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in tolerance.values()):
        raise _Unmappable(f"tolerances must be numbers >= 0, got {tolerance}")
    tolerance["cap"] = 0
    return tolerance


def _attributes(row: dict, kind: ListKind) -> tuple[object, object]:
    """(rotary_mode, partial_slice) of the row's ``attributes``: both required in a kernel list; in an e2e list
    ``partial_slice`` may be absent, the torch API's default ``[0, 0]`` (its docs: ``None`` is handled as
    ``[0, 0]``)."""
    attributes = _literal(row, "attributes", {})
    needed = ("rotary_mode",) if kind.torch_api else ("rotary_mode", "partial_slice")
    if not isinstance(attributes, dict) or any(key not in attributes for key in needed):
        raise _Unmappable(f"attributes must give {' and '.join(needed)}, got {attributes!r:.80}")
    unknown = sorted(set(attributes) - {"rotary_mode", "partial_slice"})
    if unknown:
        raise _Unmappable(f"unknown attributes {unknown}")
    mode, piece = attributes["rotary_mode"], attributes.get("partial_slice", [0, 0])
    if kind.torch_api:
        _torch_api(mode, piece)
    return mode, piece


def _torch_api(mode, piece) -> None:
    """Refuse (``_Unmappable``) an e2e row the torch API it calls refuses before any aclnn call (``TORCH_API_MODES``):
    a ``rotary_mode`` that is no name, a mode name other than the API's, a ``partial_slice`` of other than two values.
    An unknown name is left to the case's own check."""
    if not isinstance(mode, str):
        raise _Unmappable(f"rotary_mode {mode!r} is not a name: the torch API's schema takes str rotary_mode")
    if mode in ROTARY_MODES and mode not in TORCH_API_MODES:
        raise _Unmappable(f"rotary_mode {mode!r}: the torch API accepts {', '.join(map(repr, TORCH_API_MODES))} "
                          "only")
    if not isinstance(piece, (tuple, list)) or len(piece) != 2:
        raise _Unmappable(f"partial_slice {piece!r:.80}: the torch API takes exactly two integers (int[2])")


def _soc_series(text: str) -> bool:
    """Whether a ``soc_series`` (``ascend950``, ``('Ascend950PR', '-Ascend310P')``) runs the row on the chip case files
    are written for (``targets.REFERENCE_SOC``): TTK's SoC filter, where a name with a leading ``-`` excludes a chip.
    A name is the 950's when it starts so, case aside; the row runs there unless a ``-`` name is the 950's, and when
    no other name is given or one is the 950's."""
    names = [word.lower() for word in re.findall(r"-?[A-Za-z0-9_]+", text)]
    ours = [name.lstrip("-").startswith(REFERENCE_SOC) for name in names]
    if any(ok and name.startswith("-") for ok, name in zip(ours, names)):
        return False
    chosen = [ok for ok, name in zip(ours, names) if not name.startswith("-")]
    return not chosen or any(chosen)


def _empty(value, shapes, dtypes) -> bool:
    return value in (None, (), [], "")


def _nd(value, shapes, dtypes) -> bool:
    return _empty(value, shapes, dtypes) or isinstance(value, (tuple, list)) and all(entry == "ND" for entry in value)


def _listed(value) -> list | None:
    return [list(entry) if isinstance(entry, (tuple, list)) else entry for entry in value] \
        if isinstance(value, (tuple, list)) else None


# The columns no prmg key comes from, with what a row may hold there: what the case does anyway. (column, test of its
# literal against the row's (dy, cos, sin) shapes and dtypes, what a row holding anything else asks of the case.)
UNMAPPED = {
    "kernel": (
        ("output_shapes", lambda v, s, d: _empty(v, s, d) or _listed(v) == [s[0]], "an output shape other than dy's"),
        ("output_dtypes", lambda v, s, d: _empty(v, s, d) or _listed(v) == [d[0]], "an output dtype other than dy's"),
        ("output_formats", _nd, "an output format other than ND"),
        ("input_ori_shapes", lambda v, s, d: _empty(v, s, d) or _listed(v) == s, "original shapes other than the "
         "inputs'"),
        ("output_ori_shapes", lambda v, s, d: _empty(v, s, d) or _listed(v) == [s[0]], "an original output shape "
         "other than dy's"),
        ("input_ori_formats", _nd, "original formats other than ND"),
        ("output_ori_formats", _nd, "an original output format other than ND"),
        ("output_inplace_indexes", lambda v, s, d: _empty(v, s, d) or _listed(v) == [0], "an in-place output other "
         "than dy"),
        ("output_shape_unknown_indexes", _empty, "outputs of unknown shape"),
        ("manual_input_binaries", _empty, "inputs read from binary files, which prmg's seeded inputs would replace"),
        ("manual_golden_binaries", _empty, "a golden read from binary files, which prmg's own golden would replace"),
    ),
    "e2e": (
        ("output_tensor_indexes", lambda v, s, d: _empty(v, s, d) or _listed(v) == [0], "outputs other than dy"),
        ("golden_api", None, "a golden API of its own, which prmg's own golden would replace"),
        *((column, _empty, "a batch-consistency comparison across cases (--deterministic-level 3), which prmg does "
           "not make") for column in ("batch_seed", "batch_axis", "batch_slice_info")),
    ),
}


def _per_tensor(row: dict, column: str) -> list:
    """The three entries (dy, cos, sin) of a view column, None for each when the row gives none."""
    value = _literal(row, column)
    if value in (None, (), []):
        return [None] * 3
    return _triple(value, column, lambda entry: None if entry in (None, (), []) else entry)


def _views(row: dict, shapes: list, op: str) -> dict:
    """The case keys (``dy_offset``, ``cos_strides`` ...) of an e2e row's tensor_view_offsets and tensor_view_strides;
    refuses (``_Unmappable``) a view the torch API refuses (the backward's TORCH_CHECKs every input contiguous), a
    tensor_storage_shapes holding fewer elements than its view reaches, and entries that are no offsets or strides."""
    keys = {}
    offsets, strides, storages = (_per_tensor(row, column) for column in VIEW_COLUMNS)
    for tensor, shape, offset, stride, storage in zip(TENSORS, shapes, offsets, strides, storages):
        offset = 0 if offset is None else offset
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise _Unmappable(f"tensor_view_offsets: {tensor}'s {offset!r:.40} is not an offset >= 0")
        if stride is not None and not (isinstance(stride, (tuple, list)) and len(stride) == len(shape) and all(
                isinstance(step, int) and not isinstance(step, bool) and step >= 0 for step in stride)):
            raise _Unmappable(f"tensor_view_strides: {tensor}'s {stride!r:.60} are not {len(shape)} strides >= 0")
        steps = list(stride) if stride is not None else list(contiguous_strides(shape))
        if op == "grad" and not contiguous(tuple(shape), tuple(steps)):
            raise _Unmappable(f"tensor_view_strides: {tensor}'s {list(steps)} are not contiguous, which the torch "
                              "API refuses (inplace_partial_rotary_mul_backward checks each input is_contiguous)")
        if storage is not None:
            reach = offset + (1 + sum((dim - 1) * step for dim, step in zip(shape, steps)) if 0 not in shape else 0)
            if not (isinstance(storage, (tuple, list)) and all(isinstance(d, int) and d >= 0 for d in storage)) \
                    or math.prod(storage) < reach:
                raise _Unmappable(f"tensor_storage_shapes: {tensor}'s {storage!r:.60} holds fewer elements than its "
                                  f"view reaches ({reach})")
        if offset:
            keys[f"{tensor}_offset"] = offset
        if steps != list(contiguous_strides(shape)):
            keys[f"{tensor}_strides"] = steps
    return keys


def _unmapped(row: dict, kind: ListKind, shapes: list, dtypes: list) -> None:
    """Refuse (``_Unmappable``) a row whose unmapped columns (``UNMAPPED``, ``soc_series``) ask what the case would not
    do."""
    for column, holds, asks in UNMAPPED[kind.name]:
        text = (row.get(column) or "").strip()
        if text and (holds is None or not holds(_literal(row, column), shapes, dtypes)):
            raise _Unmappable(f"{column} {text!r:.80} asks for {asks}")
    series = (row.get("soc_series") or "").strip()
    if not _soc_series(series):
        raise _Unmappable(f"soc_series {series!r:.80} does not name {REFERENCE_SOC}, the chip case files are "
                          "written for (a run reads its own chip)")


def _case(row: dict, name: str, kind: ListKind, op: str) -> dict:
    """The case mapping of one enabled row of operator ``op`` in a list of ``kind``."""
    shape, cos_shape, sin_shape = _triple(_literal(row, kind.shapes), kind.shapes, _shape)
    dtype, cos_dtype, sin_dtype = _triple(_literal(row, kind.dtypes), kind.dtypes, _dtype, True)
    _unmapped(row, kind, [shape, cos_shape, sin_shape], [dtype, cos_dtype, sin_dtype])
    formats = _literal(row, kind.formats, ("ND",))
    if not isinstance(formats, (tuple, list)) or any(fmt != "ND" for fmt in formats):
        raise _Unmappable(f"{kind.formats} {formats!r:.80} is not ND")
    inplace = _literal(row, "inplace_input_indexes", (0,))
    if tuple(inplace) != (0,) if isinstance(inplace, (tuple, list)) else True:
        raise _Unmappable(f"inplace_input_indexes {inplace!r:.80} is not (0,): the in-place tensor is the first")
    mode, piece = _attributes(row, kind)
    views = _views(row, [shape, cos_shape, sin_shape], op) if kind.torch_api else {}
    tolerance = _tolerance(row, dtype)
    try:
        return gencase.case_from_options(
            name=name, shape=shape, cos_shape=cos_shape, sin_shape=sin_shape if sin_shape != cos_shape else None,
            partial_slice=piece, mode=mode, dtype=dtype, op=op,
            cos_dtype=cos_dtype, sin_dtype=sin_dtype if sin_dtype != cos_dtype else None, inputs=_inputs(row),
            standard="double_thousandth" if tolerance else None, tolerance=tolerance, tags=kind.tags, **views)
    except PrmgError as exc:
        where = f"field '{exc.field}': " if exc.field else ""
        raise _Unmappable(f"{where}{exc.reason}") from None


def _read_rows(csv_path: str | Path) -> tuple[list[dict], ListKind]:
    """The data rows of the CSV as mappings and the kind of list its header says; PrmgError when the file is
    unreadable or not a TTK list.

    Only a regular file of at most MAX_CSV_BYTES is read (``files.read_regular``)."""
    path = str(csv_path)
    try:
        data = files.read_regular(path, MAX_CSV_BYTES)
    except PrmgError as exc:
        raise PrmgError(f"cannot read: {exc.reason}", file=path) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise PrmgError(f"not a readable CSV file: {files.not_utf8(data, exc)}", file=path) from None
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        rows = list(reader)
        header = reader.fieldnames or []
    except csv.Error as exc:
        raise PrmgError(f"not a readable CSV file: {str(exc).splitlines()[0] if str(exc) else 'bad CSV'}",
                        file=path) from None
    kind = next((kind for kind in LIST_KINDS if all(column in header for column in kind.required)), None)
    if kind is None:
        missing = [column for column in LIST_KINDS[0].required if column not in header]
        others = "; an e2e list: " + ", ".join(LIST_KINDS[1].required)
        raise PrmgError(f"not a TTK case list: missing column(s) {', '.join(missing)}{others}", file=path)
    return rows, kind


def import_ttk(csv_path: str | Path) -> tuple[dict, list[str]]:
    """The case document of a TTK list and one note per row left out (or renamed), by row number."""
    rows, kind = _read_rows(csv_path)
    cases, notes, comments, names, unranged = [], [], {}, set(), False
    for number, row in enumerate(rows, start=1):
        raw_name = (row.get("testcase_name") or "").strip()
        label = f"row {number} ({show(raw_name, quote=False)})" if raw_name else f"row {number}"
        if None in row or any(value is None for value in row.values()):
            notes.append(f"{label}: its number of fields differs from the header's — skipped")
            continue
        op_name = (row.get(kind.op_column) or "").strip()
        op = kind.op_names.get(op_name.rsplit(".", 1)[-1])
        if op is None:
            notes.append(f"{label}: {kind.op_column} {show(op_name, quote=False) or '(empty)'} is not one of "
                         f"{', '.join(kind.op_names)} — skipped")
            continue
        try:
            if not _enabled(row):
                notes.append(f"{label}: is_enabled False — skipped")
                continue
            name = sanitise_name(raw_name)
            if not NAME_PATTERN.fullmatch(name) or len(name) > MAX_NAME_LENGTH - 12:
                name = f"ttk_row{number}"
            if name in names:
                name = f"{name}_row{number}"
            case = _case(row, name, kind, op)
        except _Unmappable as exc:
            notes.append(f"{label}: {exc} — skipped")
            continue
        if name != raw_name:
            notes.append(f"{label}: named '{name}'")
        names.add(name)
        cases.append(case)
        unranged = unranged or not (row.get("input_data_ranges") or "").strip()
        remark = (row.get("remark") or "").strip()
        comments[name] = f"TTK row {number}" + (f": {remark}" if remark else "")
    if not cases:
        first = f"; {notes[0]}" if notes else ""
        raise PrmgError(f"no row could be imported ({len(rows)} data row(s){first})", file=str(csv_path))
    source = Path(csv_path).name
    header = [f"{IMPORTED}{source}` from the TTK {kind.name} list {source}:",
              f"{len(cases)} case(s) from {len(rows)} data row(s) (rows counted from 1 after the header line).",
              *(THRESHOLDS_NOTE if any("tolerance" in case for case in cases) else []),
              *(["no thresholds in a row: prmg's default standard."] if any("tolerance" not in case for case in cases)
                else []),
              *(["no input_data_ranges in a row: TTK's default, uniform in [-2, 2]."] if unranged else []),
              *(["no partial_slice in an e2e row: the torch API's default [0, 0]."] if kind.torch_api else [])]
    header += [f"left out: {note}" for note in notes]
    return gencase.document(cases, header=header, comments=comments), notes
