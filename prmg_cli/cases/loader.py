"""Case files: YAML loading (safe loader only), defaults, sweeps and validation, into ``case.Case`` values.

Every user mistake raises ``PrmgError`` naming the file, the case and the field.

The case format
===============

A case file is either a bare list of cases, or a mapping ``{defaults: {...}, cases: [...]}`` whose
``defaults`` merge under every case of the file (a case's own keys win; ``inputs`` merge per tensor;
``tags`` are the union; ``tolerance`` merges per key unless the case picks a different ``standard``).
A path given to a command may be a file or a folder (every ``*.yaml``/``*.yml`` below it, sorted by
path). YAML anchors, aliases and ``<<`` merge keys work; ``1e-3`` reads as a number. Files are read
with the safe loader only: a ``!!python/...`` tag is an error and never runs; alias bombs and keys
written twice in one mapping are refused (``yamlfile``). Mistakes are reported as one line naming the file, the case
(``case '#3'`` for the third entry when its name is unknown) and the field (``inputs.dy.values``).

The keys of a case, each with its default in parentheses:

- ``name``: required; unique across the run; letters, digits, ``_ . -``, not only dots, at most 200 characters (may be
  a template, see sweeps)
- ``shape``: required; dy's shape ``[B, S, N, D]`` (an ``expect: {error: ...}`` case may use any length)
- ``broadcast``: cos/sin pattern against dy: ``BSND 111D 1S1D 1SND B1ND BS1D 11ND B11D``; the cos shape takes B, S, N
  from dy where the pattern has a letter, 1 where it has ``1``, and ``L = end - start`` as its last axis
- ``cos_shape``: cos's shape, instead of ``broadcast`` (not both). Neither given: ``[1, 1, 1, L]`` (``[1, 1, 1, 1]``
  when the slice is empty)
- ``sin_shape``: sin's shape (``cos_shape``; set it only to write a negative case)
- ``partial_slice``: ``[start, end]``, the half-open slice of the last axis (``[0, D]``); a list of another length (0
  to 16 values) is passed as written (the 950's tiling acts on its first two values); ``null: [partial_slice]`` passes
  a NULL ``partialSlice`` (the op definition's default ``{0, 0}``)
- ``rotary_mode``: ``half``/``interleave``/``quarter``/``interleave-half`` or 0..3 (``interleave``)
- ``dtype``: dy's dtype: ``float32``, ``float16``, ``bfloat16`` or an alias ``fp32 fp16 bf16 half float``
  (``float32``)
- ``cos_dtype`` / ``sin_dtype``: cos's dtype (``dtype``); sin's dtype (``cos_dtype``)
- ``seed``: integer 0 <= seed < 2**64 (derived from the name: the same inputs on every machine and run)
- ``generator``: what draws the seeded inputs: ``philox4x32``, or ``philox`` and ``pcg64``, the generators of prmg
  before it (``philox4x32``; ``seeded.py``)
- ``inputs``: per tensor ``dy``/``cos``/``sin``: ``{uniform: [lo, hi]}``, ``{normal: [mean, std]}``,
  ``{values: [...]}`` (flat C order or nested; as many numbers as the tensor has elements), ``{bits: [...]}`` (the
  same, as integer bit patterns of the tensor's dtype: NaN payloads and signs), ``{file: x.npy}`` (relative to the
  case file and inside its folder; as many elements as the tensor, read in C order); cos/sin also
  ``{rope: {base: 10000, offset: 0}}``, a real RoPE table laid out for the mode, positions from ``offset`` along S (a
  list of one offset per B index: per-request positions) (``uniform: [-1, 1]``)
- ``expect``: ``pass``, or ``{error: CODE}``: a number, a status name such as ``ACLNN_ERR_INNER_TILING_ERROR``, or
  ``any`` (``pass``)
- ``standard``: precision standard: ``default double_thousandth single_bm double_benchmark allclose exact mixed`` (the
  run's)
- ``tolerance``: the case's standard's parameters (``default``'s when the case names none), finite numbers >= 0, e.g.
  ``{rtol: 1e-3, atol: 1e-5}`` for ``allclose``
- ``tags``: list of words (letters, digits, ``_ . -``), for ``--tag`` selection (any listed tag selects)
- ``format``: negative cases: aclFormat of all tensors, ``ND NCHW NHWC NC1HWC0 FRACTAL_Z FRACTAL_NZ`` (``ND``)
- ``null``: arguments passed as NULL pointers, e.g. ``null: [cos]`` (a tensor: negative cases) or
  ``null: [partial_slice]`` (the key YAML reads as null is this key)
- ``dy_strides`` / ``cos_strides`` / ``sin_strides``: a tensor's element strides, one per axis (contiguous), no two
  elements on one storage element but along a stride-0 axis of cos or sin (torch's expand): the grad refuses a
  non-contiguous tensor at the launch, the forward takes it (AutoContiguous)
- ``dy_offset`` / ``cos_offset`` / ``sin_offset``: a tensor's storage offset in elements (0): the view starts that far
  into its storage (torch's ``x[1:]``), passed as ``aclCreateTensor``'s ``offset``; the storage before it must come
  back untouched
- ``builds``: the upstream builds the case's expectation holds for (every build): ``base e9f0541c 2b888cdb``
  (``targets.BUILDS``); on a toolkit of another or unknown build a failed expectation is reported as depending on the
  build
- ``note``: one line: what the case pins (the behaviour, build or document it matches), shown with its result
- ``partners_alike``: one line: why the case's sin is alike at both lanes of every pair on purpose (a real RoPE
  table); without it such a case passes with a warning (``partners alike``: a kernel swapping partners' sin passes
  it), which ``--strict`` fails

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
``{index:03d}``; attribute or index access, conversions such as ``!r``, nested fields and widths over
200 are refused). Any key of the merged case (swept, written or from defaults) may appear in the
template; a template giving two cases the same name is an error::

    - name: "bwd_{dtype}_{broadcast}_{partial_slice}"
      shape: [2, 4, 8, 128]
      sweep:
        dtype: [float32, bfloat16]
        broadcast: [111D, BSND]
        partial_slice: [[0, 64], [7, 71]]       # 2 x 2 x 2 = 8 cases, e.g. bwd_bfloat16_111D_7-71

What is refused before any work
===============================

A case file is read only when it is a regular file of at most 16 MiB; its text must be UTF-8 of
printable characters (``yamlfile``: a NUL, a vertical tab, DEL, U+FFFE ... are named with their line
and column). A ``file:`` input must be a regular .npy file inside the case file's folder (symlinks
resolved; ``npyfile``). A run holds at most ``MAX_RUN_CASES`` cases: every file is read and every
entry's size (a sweep's: the product of its list lengths) counted before any case is made, so a run over
the cap is refused without making one.

Every mistake is a ``PrmgError`` naming the file, the case and the field; ``load_cases`` raises the
first one, ``check_files`` returns all of them (one per broken case).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import re
import stat
import string
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from . import yamlfile
from .. import files
from ..case import Case, Expect, InputSpec, KnownDefect
from ..errors import PrmgError
from ..inputs import npyfile
from ..judging.checks import ANCHORED, CHECKS, weak_checks_text
from ..ops import constraints
from ..status import STATUS_NAMES, describe
from ..vocab import (CASE_SUFFIXES, DEFAULT_GENERATOR, DEFAULT_OP, FILE_KEYS, MAX_RUN_CASES, MODE_NAMES, SLICE,
                     TENSORS, broadcast_pattern, broadcast_shape)
from .fields import (INPUT_KINDS, MAX_NAME_LENGTH, NAME_PATTERN, Where, check_keys, kind, label, parse_broadcast,
                     parse_builds, parse_checks, parse_dims, parse_dtype, parse_expect, parse_format, parse_generator,
                     parse_golden, parse_inputs, parse_known_defect, parse_mode, parse_null, parse_offset, parse_op,
                     parse_reason, parse_seed, parse_slice_list, parse_standard, parse_strides, parse_tolerance,
                     parse_words, show, suggest)
from .yamlfile import MAX_EXPANDED_NODES, MAX_FILE_BYTES, MAX_LIST_VALUES

CASE_KEYS = ("name", "shape", "broadcast", "cos_shape", "sin_shape", "partial_slice", "rotary_mode",
             "dtype", "cos_dtype", "sin_dtype", "seed", "inputs", "expect", "standard", "tolerance",
             "tags", "format", "null", "dy_strides", "op", "known_defect", "checks", "golden", "correctness_unchecked",
             "generator", "cos_strides", "sin_strides", "dy_offset", "cos_offset", "sin_offset", "builds", "note",
             "partners_alike")
_NAME_CHARACTER = re.compile(r"[A-Za-z0-9_.-]")
_FORMAT_SPEC = re.compile(r"(?:.?[<>=^])?[-+ ]?z?#?0?(?P<width>\d*)[,_]?(?:\.(?P<precision>\d+))?[bcdeEfFgGnosxX%]?")

__all__ = ["Case", "InputSpec", "Expect", "KnownDefect", "load_cases", "input_files", "check_files", "checked_cases",
           "validate", "unjudged", "select", "case_files", "case_to_dict", "case_record",
           "parse_document", "sanitise_name", "fingerprint", "fingerprint_or_empty", "definition_fingerprint",
           "NAME_PATTERN",
           "MAX_NAME_LENGTH", "INPUT_KINDS", "CASE_KEYS", "MAX_RUN_CASES", "MAX_FILE_BYTES", "MAX_EXPANDED_NODES",
           "MAX_LIST_VALUES"]


# ----------------------------------------------------------------------------------------------
# Public API


def load_cases(paths: Sequence[str | Path]) -> list[Case]:
    """Every case of every file under ``paths`` (files, or folders searched for *.yaml/*.yml), in order.

    Names must be unique across the whole run, which holds at most ``MAX_RUN_CASES`` cases. Raises
    the first mistake as a PrmgError naming the file, the case and the field.
    """
    run = _Run()
    run.read(_case_files(paths, run))
    return run.cases


def case_files(paths: Sequence[str | Path], report=None) -> list[Path]:
    """The case files every command reads for ``paths``, in order (``_case_files``: files as given, every
    *.yaml/*.yml below a folder, dot-folders, ``build/`` and ``venv/`` included, symlinked folders not entered,
    each file once); a path that cannot be read or listed is left out, or a file kept (loading it reports why), and
    ``report`` (when given) gets the PrmgError of each path left out."""
    return list(_case_files(paths, _Run(report=report or (lambda error: None))))


def input_files(paths: Sequence[str | Path], cases: Sequence[Case]) -> dict[str, str]:
    """Every file a command reading the cases of ``paths`` reads, -> what it is: each case file (``case_files``) and
    each ``file:`` input of ``cases``. What ``writes.check_outputs`` spares."""
    read = {str(file): "a case file" for file in case_files(paths)}
    return {**read, **{path: what for path, what in file_inputs(cases).items() if path not in read}}


def read_as_case(paths: Sequence[str | Path]) -> Callable[[str], str | None]:
    """For ``writes.check_outputs``: a function telling of an output path the case folder of ``paths`` in which the
    next command given the same paths would read it as a case file (a ``CASE_SUFFIXES`` file below the folder, once
    both are resolved), None when it would not (``prmg coverage d -o d/cov.yaml`` broke the next ``prmg run d``)."""
    folders = {os.path.realpath(path): str(path) for path in map(str, paths) if os.path.isdir(path)}

    def folder_reading(path: str) -> str | None:
        if not path.endswith(CASE_SUFFIXES):
            return None
        real = os.path.realpath(path)
        return next((given for folder, given in folders.items() if os.path.commonpath((real, folder)) == folder),
                    None)
    return folder_reading


def file_inputs(cases: Sequence[Case]) -> dict[str, str]:
    """Each ``file:`` input of ``cases`` (its path) -> what it is (``the dy input of case 'x'``, its first case's)."""
    found: dict[str, str] = {}
    for case in cases:
        for tensor in TENSORS:
            spec = case.input_spec(tensor)
            if spec.kind == "file":
                found.setdefault(spec.args[0], f"the {tensor} input of case '{case.name}'")
    return found


def check_files(paths: Sequence[str | Path], supported_modes: set[int] | frozenset[int]) -> list[PrmgError]:
    """Every mistake in the case files under ``paths``, in file and case order, one PrmgError each:

    - a file that cannot be read or parsed (or whose ``defaults`` are wrong): one error for the file;
    - an entry whose keys, sweep or name template are wrong: one error for the entry;
    - each case that does not load (a sweep's cases sharing one mistake: one error), has a name used
      before, or (``expect: pass``) breaks a constraint of the operator on a target supporting
      ``supported_modes`` (``validate``): one error for the case.

    An empty list means ``load_cases`` and ``validate`` accept every file. Reading stops at the run's
    case limit (``MAX_RUN_CASES``), which is reported as one more error.
    """
    return checked_cases(paths, supported_modes)[1]


def checked_cases(paths: Sequence[str | Path],
                  supported_modes: set[int] | frozenset[int]) -> tuple[list[Case], list[PrmgError]]:
    """The cases read and ``check_files``'s mistakes: without a mistake, the cases ``load_cases`` reads (and
    ``validate`` accepts), read once (``prmg validate`` read every file twice)."""
    errors: list[PrmgError] = []
    run = _Run(report=errors.append, supported_modes=supported_modes)
    run.read(_case_files(paths, run))
    return run.cases, errors


def validate(cases: Sequence[Case], supported_modes: set[int] | frozenset[int]) -> None:
    """Raise PrmgError for the first ``expect: pass`` case that breaks a documented constraint.

    A rotary mode the target does not support is not an error: such a case is skipped at run time
    (``constraints.skip_reason``).
    """
    for case in cases:
        error = _violation(case, supported_modes)
        if error is not None:
            raise error


def unjudged(case: Case, checks: tuple = (), golden: bool = True) -> PrmgError | None:
    """The PrmgError for a pass case that, without the golden (its ``golden: false``, or the run's ``--no-golden``
    when ``golden`` is False), no check anchored to the formula would judge: neither its ``checks`` nor the run's
    (``--check``: ``checks``) name one of ``checks.ANCHORED``, and it gives no ``correctness_unchecked`` reason;
    else None. ``validate`` asks it of the file alone (no run checks), ``prmg run`` and the pytest plugin with
    the run's (``suite.check_judged``)."""
    names = tuple(dict.fromkeys(case.checks + checks))
    if (not case.expect.success or (golden and case.golden) or case.correctness_unchecked
            or any(CHECKS[name].anchored for name in names)):
        return None
    without = "golden: false" if not case.golden else "--no-golden"
    return PrmgError(f"without the golden ({without}) this case is judged by {', '.join(names) or 'no check'}, "
                     f"none anchored to the formula ({weak_checks_text(names)}): add {', '.join(ANCHORED)} "
                     f"to its checks or --check, or say why with correctness_unchecked: REASON",
                     file=case.source, case=case.name, field="checks")


def _violation(case: Case, supported_modes) -> PrmgError | None:
    """The PrmgError for the first constraint an ``expect: pass`` case breaks (not counting an
    unsupported mode), or None."""
    if not case.expect.success:
        return None
    for violation in constraints.violation_details(case, supported_modes):
        if not violation.skippable:
            return PrmgError(f"expect: pass, but {violation.message} "
                             f"(the operator returns {describe(violation.code)})",
                             file=case.source, case=case.name, field=violation.field)
    return None


def sanitise_name(text: str, replacement: str = "_") -> str:
    """``text`` with every character a name cannot hold (letters, digits, ``_ . -``) replaced by
    ``replacement``."""
    return "".join(char if _NAME_CHARACTER.fullmatch(char) else replacement for char in text)


def select(cases: Sequence[Case], keyword: str | None = None, tags: Sequence[str] = ()) -> list[Case]:
    """The cases whose name contains ``keyword`` (case-sensitive substring) and, when ``tags`` are
    given, that carry at least one of them (any-of). Order is kept."""
    wanted = set(tags)
    return [case for case in cases
            if (not keyword or keyword in case.name) and (not wanted or wanted.intersection(case.tags))]


def case_to_dict(case: Case) -> dict:
    """``case`` as a mapping of plain values that ``load_cases`` reads back into the same Case.

    Keys equal to their defaults are left out; a cos shape that a broadcast pattern derives is
    written as ``broadcast``, the pattern the table shows (``vocab.broadcast_pattern``: an axis of size 1 in dy
    and cos reads as ``1``, so a decode table [4, 1, 1, D] of dy [4, 1, 8, D] is ``B11D``, not ``BS1D``). A
    ``file:`` input is written as its absolute path.
    """
    out: dict = {"name": case.name, "shape": list(case.shape)}
    start, end = case.partial_slice
    if case.cos_shape != _default_cos_shape(end - start):
        pattern = broadcast_pattern(case.shape, case.cos_shape)
        if pattern and broadcast_shape(pattern, case.shape, end - start) == case.cos_shape:
            out["broadcast"] = pattern
        else:
            out["cos_shape"] = list(case.cos_shape)
    if case.sin_shape != case.cos_shape:
        out["sin_shape"] = list(case.sin_shape)
    if case.slice_list is not None:
        out["partial_slice"] = list(case.slice_list)
    elif case.partial_slice != (0, case.shape[-1] if case.shape else 0) and SLICE not in case.null:
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
    if case.generator != DEFAULT_GENERATOR:
        out["generator"] = case.generator
    inputs = {tensor: _input_to_dict(case.input_spec(tensor)) for tensor in TENSORS
              if case.input_spec(tensor) != InputSpec()}
    if inputs:
        out["inputs"] = inputs
    if not case.expect.success:
        code = case.expect.error
        out["expect"] = {"error": STATUS_NAMES.get(code, code) if isinstance(code, int) else code}
        if case.expect.phase != Expect(code).phase:
            out["expect"]["phase"] = case.expect.phase
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
    for tensor in TENSORS:
        if case.strides_of(tensor) is not None:
            out[f"{tensor}_strides"] = list(case.strides_of(tensor))
        if case.offset_of(tensor):
            out[f"{tensor}_offset"] = case.offset_of(tensor)
    if case.op != DEFAULT_OP:
        out["op"] = case.op
    if case.known_defect:
        defect = case.known_defect
        out["known_defect"] = {"reason": defect.reason, **({"result": "wrong", **dict(defect.bounds)}
                                                           if defect.status is None else
                                                           {"status": STATUS_NAMES.get(defect.status, defect.status)})}
        if defect.behaves_as is not None:
            out["known_defect"]["behaves_as"] = defect.written_behaviour()
    if case.checks:
        out["checks"] = list(case.checks)
    if not case.golden:
        out["golden"] = False
    if case.correctness_unchecked:
        out["correctness_unchecked"] = case.correctness_unchecked
    if case.builds:
        out["builds"] = list(case.builds)
    if case.note:
        out["note"] = case.note
    if case.partners_alike:
        out["partners_alike"] = case.partners_alike
    return out


def case_record(case: Case) -> dict:
    """``case_to_dict(case)`` with its ``generator`` always written: the ``definition`` a result records (and
    its fingerprint hashes), so a record names the generator of its inputs whatever the default is (a record
    naming none is older than ``philox``: ``results.CaseResult.recorded_definition``)."""
    return {**case_to_dict(case), "generator": case.generator}


def fingerprint(case: Case) -> str:
    """A hash of what ``case`` is, to tell whether a recorded result still belongs to it.

    The sha256 (64 hex digits) of the canonical JSON (sorted keys, no spaces, ASCII) of
    ``case_record(case)`` (its ``generator`` always written: a record of inputs drawn by another
    generator, or before the key existed, never matches) with every ``file:`` input's path replaced by
    the sha256 of that file's bytes. So it changes with any key of the case (name, shapes, dtypes, seed,
    generator, inputs, expect, standard, tolerance, tags ...) and with the contents of its .npy files, and
    it is the same on every run and machine and wherever the case file lies (neither ``source`` nor any
    path is hashed). PrmgError naming the case and field when a ``file:`` input can no longer be read.
    """
    definition = case_record(case)
    for tensor in TENSORS:
        spec = case.input_spec(tensor)
        if spec.kind == "file":
            folder = spec.args[1] if len(spec.args) > 1 else None
            try:
                definition["inputs"][tensor] = {"file": {"sha256": npyfile.digest(spec.args[0], folder)}}
            except npyfile.NpyError as error:
                raise PrmgError(str(error), file=case.source, case=case.name,
                                field=f"inputs.{tensor}.file") from None
    return definition_fingerprint(definition)


def definition_fingerprint(definition: dict) -> str:
    """The sha256 (64 hex digits) of the canonical JSON (sorted keys, no spaces, ASCII) of ``definition``: a case's
    ``fingerprint`` when its ``file:`` inputs are their digests (a case without one: of the ``definition`` its record
    holds, which ``consistency.contradiction`` holds its fingerprint against)."""
    text = json.dumps(definition, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def fingerprint_or_empty(case: Case) -> str:
    """``fingerprint(case)``, or "" when a ``file:`` input of it can no longer be read (a record with no
    fingerprint is never trusted as this case's)."""
    try:
        return fingerprint(case)
    except PrmgError:
        return ""


def parse_document(document, source: str, folder: Path) -> list[Case]:
    """The cases of an already-read case document (a list, or ``{defaults, cases}``), as ``load_cases``
    reads them from a file named ``source``; ``file:`` inputs are relative to ``folder``."""
    run = _Run()
    run.add_document(document, source, folder)
    return run.cases


# ----------------------------------------------------------------------------------------------
# A run: the files, their cases, the names and the case budget they share


class _Stop(Exception):
    """The run's case limit was reached: read no more."""


class _Run:
    """The cases loaded so far, their names, and how many more the run may hold.

    Without ``report`` the first mistake is raised; with it every mistake is passed to ``report`` and
    loading goes on with the next case, entry or file. With ``supported_modes`` every loaded case is
    checked against the operator's constraints as well (``check_files``).
    """

    def __init__(self, report: Callable[[PrmgError], None] | None = None, supported_modes=None):
        self.report = report
        self.supported_modes = supported_modes
        self.cases: list[Case] = []
        self.first_seen: dict[str, str] = {}
        self.planned = 0
        self.stopped = False
        self.steps: list | None = None      # while ``read`` reads: its mistakes and entries to expand, in order

    def read(self, files: Iterable[Path]) -> None:
        """Add the cases of every file of ``files`` in two passes: read every file and count every entry's
        cases against ``MAX_RUN_CASES`` (``reserve``), then make the cases. So a run over the cap makes none:
        the mistakes found while reading are reported in order, the cap's last, and nothing is expanded."""
        self.steps = []
        try:
            for file in files:
                self.load_file(file)
                if self.stopped:
                    break
        finally:
            steps, self.steps = self.steps, None
        for step in steps:
            if isinstance(step, PrmgError):
                self.fail(step)
            elif not self.stopped:
                self.expand(*step)

    def fail(self, error: PrmgError) -> None:
        """Raise ``error``, or report it and carry on; while ``read`` reads, keep it for its turn."""
        if self.steps is not None:
            self.steps.append(error)
        elif self.report is None:
            raise error
        else:
            self.report(error)

    def load_file(self, file: Path) -> None:
        """Add the cases of one case file."""
        try:
            document = yamlfile.read_yaml(file)
            if document is None:
                raise PrmgError("the file is empty (expected a list of cases)", file=str(file))
        except PrmgError as error:
            self.fail(error)
            return
        try:
            self.add_document(document, str(file), file.parent)
        except _Stop:
            self.stopped = True

    def add_document(self, document, source: str, folder: Path) -> None:
        """Add the cases of an already-read case document."""
        try:
            defaults, entries = _split_document(document, source)
        except PrmgError as error:
            self.fail(error)
            return
        for number, entry in enumerate(entries, start=1):
            self.add_entry(entry, defaults, source, folder, number)

    def reserve(self, count: int, where: Where, field: str) -> bool:
        """Count ``count`` more cases against MAX_RUN_CASES; True when they fit. An entry that alone makes
        more is one error (nothing expanded, reading goes on: False); one that fills the run past the cap is
        an error and, when collecting, ends the reading (_Stop)."""
        if self.planned + count <= MAX_RUN_CASES:
            self.planned += count
            return True
        makes = f"the sweep makes {count} cases" if field == "sweep" else "this case"
        if count > MAX_RUN_CASES:
            self.fail(where.error(field, f"{makes}, more than the {MAX_RUN_CASES} a run may hold "
                                         "(split the cases into several runs)"))
            return False
        self.fail(where.error(field, f"{makes}; with the {self.planned} before it the run would hold more "
                                     f"than {MAX_RUN_CASES} (split the cases into several runs)"))
        raise _Stop

    def add_entry(self, entry, defaults: dict, source: str, folder: Path, number: int) -> None:
        """Add the cases one entry of ``cases`` stands for: one, or a sweep's whole product (counted now,
        made now or, while ``read`` reads, in its second pass)."""
        try:
            where, written, sweep = _split_entry(entry, source, number)
            count = math.prod(len(values) for values in sweep.values())
        except PrmgError as error:
            self.fail(error)
            return
        if not self.reserve(count, where, "sweep" if sweep else "name"):
            return
        if self.steps is None:
            self.expand(where, written, sweep, defaults, source, folder)
        else:
            self.steps.append((where, written, sweep, defaults, source, folder))

    def expand(self, where: Where, written: dict, sweep: dict, defaults: dict, source: str, folder: Path) -> None:
        """Make the cases of one entry (``add_entry``): each combination of its sweep, merged with ``defaults``."""
        keys = list(sweep)
        names: dict[str, int] = {}
        reported: set[tuple] = set()
        for index, combination in enumerate(itertools.product(*(sweep[key] for key in keys))):
            try:
                raw, origins = _merge(defaults, {**written, **dict(zip(keys, combination))})
                origins.update({key: "sweep." for key in keys})
                name = _render_name(raw, index, Where(source, where.case, origins))
            except PrmgError as error:
                if (error.field, error.reason) not in reported:
                    reported.add((error.field, error.reason))
                    self.fail(error)
                continue
            if name in names:                      # the template is the one mistake: report it once
                self.fail(where.error("name", f"the name template {show(raw['name'])} gives the name '{name}' to "
                                      f"cases {names[name]} and {index} of the sweep; add a swept key or {{index}}"))
                return
            names[name] = index
            try:
                case = _build_case(raw, name, Where(source, name, origins), folder)
            except PrmgError as error:             # a mistake all the sweep's cases share: reported once
                if (error.field, error.reason) not in reported:
                    reported.add((error.field, error.reason))
                    self.fail(error)
                continue
            self.add_case(case)

    def add_case(self, case: Case) -> None:
        """Keep ``case`` unless its name was used before (and, when checking, it breaks a constraint)."""
        if case.name in self.first_seen:
            other = self.first_seen[case.name]
            where = "earlier in the same file" if other == case.source else f"also in {other}"
            self.fail(PrmgError(f"duplicate case name '{case.name}' ({where})",
                                file=case.source, case=case.name, field="name"))
            return
        self.first_seen[case.name] = case.source
        if self.supported_modes is not None:
            error = _violation(case, self.supported_modes) or unjudged(case)
            if error is not None:
                self.fail(error)
        self.cases.append(case)


# ----------------------------------------------------------------------------------------------
# Files


# The most files and folders below a folder given as a path of case files (cases/ holds about 20).
MAX_FOLDER_ENTRIES = 100_000


def _case_files(paths: Sequence[str | Path], run: _Run) -> Iterator[Path]:
    """The case files named by ``paths``, in order: files as given, folders expanded (every
    *.yaml/*.yml below, sorted by path, symlinked folders not followed); each file once. A path that
    is missing or cannot be listed is reported to ``run`` when its turn comes."""
    seen: set[tuple[int, int]] = set()
    unknown = 0
    for given in paths:
        path = Path(given)
        try:
            info = os.stat(path)
        except FileNotFoundError:
            run.fail(PrmgError("no such file or folder", file=str(path)))
            continue
        except (OSError, ValueError) as error:
            reason = files.os_reason(error) if isinstance(error, OSError) else "not a valid path"
            run.fail(PrmgError(reason, file=str(path)))
            continue
        if stat.S_ISDIR(info.st_mode):
            found = _folder_files(path, run)
            if found is None:
                continue
            if not found:
                run.fail(PrmgError("no *.yaml or *.yml files in this folder", file=str(path)))
                continue
        else:
            found = [path]
        for file in found:
            try:
                file_info = os.stat(file)
                identity = (file_info.st_dev, file_info.st_ino)
            except (OSError, ValueError):
                unknown += 1
                identity = (-1, unknown)                      # reported when it is read
            if identity not in seen:
                seen.add(identity)
                yield file


def _folder_files(folder: Path, run: _Run) -> list[Path] | None:
    """Every *.yaml / *.yml below ``folder``, sorted by path (symlinked folders are not entered); None, reported to
    ``run``, for a folder holding more than ``MAX_FOLDER_ENTRIES`` files and folders below it (a mistyped path such
    as ``/`` or ``~``: walking it all took 46 s before its first word), instead of the folders below it that
    cannot be listed, which are reported once the walk ends."""
    unreadable: list[OSError] = []
    found, entries = [], 0
    for root, folders, names in os.walk(folder, onerror=unreadable.append):
        folders.sort()
        entries += len(folders) + len(names)
        if entries > MAX_FOLDER_ENTRIES:
            run.fail(PrmgError(f"more than {MAX_FOLDER_ENTRIES:,} files and folders below it (still counting in "
                               f"{root}): not a folder of case files? Name the case files, or the folder that holds "
                               f"them", file=str(folder)))
            return None
        found.extend(Path(root) / name for name in names if name.endswith(CASE_SUFFIXES))
    for error in unreadable:
        run.fail(PrmgError(f"cannot list this folder: {files.os_reason(error)}", file=str(error.filename)))
    return sorted(found)


def _split_document(document, source: str) -> tuple[dict, list]:
    """(defaults, case entries) of a file: a bare list, or {defaults: {...}, cases: [...]}."""
    if isinstance(document, list):
        return {}, document
    if not isinstance(document, dict):
        raise PrmgError(f"expected a list of cases or {{defaults: ..., cases: [...]}}, got {kind(document)}",
                        file=source)
    check_keys(document, FILE_KEYS, Where(source), "")
    if "cases" not in document:
        raise PrmgError("missing key 'cases' (a file is a list of cases or {defaults: ..., cases: [...]})",
                        file=source)
    defaults, entries = document.get("defaults", {}), document["cases"]
    if defaults is None:
        defaults = {}
    if not isinstance(defaults, dict):
        raise PrmgError(f"expected a mapping of case keys, got {kind(defaults)}", file=source, field="defaults")
    defaults = _null_key_named(defaults)
    check_keys(defaults, CASE_KEYS + ("sweep",), Where(source), "defaults.")
    for key in ("name", "sweep", "known_defect"):
        if key in defaults:
            raise PrmgError(f"'{key}' belongs to each case, not to defaults", file=source, field=f"defaults.{key}")
    if not isinstance(entries, list):
        raise PrmgError(f"expected a list of cases, got {kind(entries)}", file=source, field="cases")
    return defaults, entries


# ----------------------------------------------------------------------------------------------
# Entries: defaults, sweeps, name templates


def _split_entry(entry, source: str, number: int) -> tuple[Where, dict, dict]:
    """(where, the written keys, the sweep) of one entry of ``cases``, its keys and sweep checked."""
    if not isinstance(entry, dict):
        raise PrmgError(f"a case must be a mapping of keys, got {kind(entry)}", file=source, case=f"#{number}")
    entry = _null_key_named(entry)
    name = entry.get("name")
    if isinstance(name, str) and name:
        where = Where(source, name if len(name) <= MAX_NAME_LENGTH else label(name))
    else:
        where = Where(source, f"#{number}")
    check_keys(entry, CASE_KEYS + ("sweep",), where, "")
    sweep = entry.get("sweep", {})
    if not isinstance(sweep, dict) or ("sweep" in entry and not sweep):
        raise where.error("sweep", "expected a mapping of key: [values...] with at least one key")
    sweep = _null_key_named(sweep)
    check_keys(sweep, CASE_KEYS, where, "sweep.")
    for key, values in sweep.items():
        if key == "name":
            raise where.error("sweep.name", "the name cannot be swept; make it a template such as 'x_{dtype}'")
        if key in entry:
            raise where.error(f"sweep.{key}", f"'{key}' is both swept and set in the case; keep one")
        if not isinstance(values, list) or not values:
            raise where.error(f"sweep.{key}", f"expected a non-empty list of values, got {kind(values)}")
    written = {key: value for key, value in entry.items() if key != "sweep"}
    return where, written, sweep


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
            origins.update({f"inputs.{label(tensor)}": "defaults." for tensor in inherited})
            origins.update({f"inputs.{label(tensor)}": "" for tensor in value})
            value = {**inherited, **value}
        elif key == "tags" and isinstance(inherited, list) and isinstance(value, list):
            try:
                value = list(dict.fromkeys(inherited + value))
            except TypeError:                     # an unhashable tag: parse_words names it
                value = inherited + value
        elif key == "tolerance" and isinstance(inherited, dict) and isinstance(value, dict) \
                and case.get("standard", defaults.get("standard")) == defaults.get("standard"):
            value = {**inherited, **value}
        merged[key] = value
        origins[key] = ""
    if "standard" in case and case["standard"] != defaults.get("standard") and "tolerance" not in case:
        merged.pop("tolerance", None)   # the defaults' tolerance belongs to the defaults' standard
    return merged, origins


def _render_name(raw: dict, index: int, where: Where) -> str:
    """The case name: ``raw['name']`` with ``{key}`` fields filled in (see Sweeps), at most
    MAX_NAME_LENGTH characters, checked piece by piece so that no template can allocate more."""
    if "name" not in raw:
        raise where.error("name", "missing required key 'name'")
    template = raw["name"]
    if not isinstance(template, str):
        raise where.error("name", f"expected a string, got {kind(template)}")
    name = _fill_template(template, raw, index, where) if "{" in template or "}" in template else template
    if len(name) > MAX_NAME_LENGTH:
        raise where.error("name", f"a name has at most {MAX_NAME_LENGTH} characters, this one {len(name)}")
    if not NAME_PATTERN.fullmatch(name):
        raise where.error("name", f"{show(name)} is not a valid name (letters, digits, '_', '.', '-' only, "
                          f"not only dots)")
    return name


def _fill_template(template: str, raw: dict, index: int, where: Where) -> str:
    """``template`` with each ``{key}`` or ``{key:spec}`` replaced (see Sweeps); refused: attribute or
    index access, conversions (``!r``), nested fields, widths or precisions over MAX_NAME_LENGTH, and
    a result over MAX_NAME_LENGTH characters (checked before each piece is added)."""
    def bad(reason: str) -> PrmgError:
        return where.error("name", f"bad name template {show(template)}: {reason}")

    try:
        pieces = list(string.Formatter().parse(template))
    except ValueError as error:
        raise bad(str(error)) from None
    available = ["index"] + [key for key in raw if key != "name" and isinstance(key, str)]
    out, length = [], 0
    for literal, field, spec, conversion in pieces:
        out.append(literal)
        length += len(literal)
        if field is None:
            continue
        if conversion is not None:
            raise bad(f"'{{{label(field)}!{conversion}}}': conversions are not supported")
        if field not in available:
            if not field.isidentifier():
                raise bad(f"'{{{label(field)}}}' is not a key (only {{key}} or {{key:spec}}: no attribute or "
                          f"index access, no positional fields)")
            raise where.error("name", f"unknown field '{{{label(field)}}}' in name template {show(template)}"
                              f"{suggest(field, available)} (available: {', '.join(available)})")
        if "{" in spec or "}" in spec:
            raise bad(f"'{{{field}:{label(spec)}}}': nested fields are not supported")
        match = _FORMAT_SPEC.fullmatch(spec)
        if match is None:
            raise bad(f"'{{{field}:{label(spec)}}}' is not a format spec")
        for number in (match.group("width"), match.group("precision")):
            if number and (len(number) > 3 or int(number) > MAX_NAME_LENGTH):
                raise bad(f"'{{{field}:{label(spec)}}}': widths and precisions are at most {MAX_NAME_LENGTH}")
        value = index if field == "index" else _name_text(field, raw[field], where)
        try:
            text = format(value, spec)
        except (ValueError, TypeError) as error:
            raise bad(str(error)) from None
        length += len(text)
        if length > MAX_NAME_LENGTH:
            raise where.error("name", f"the name template {show(template)} makes a name of more than "
                              f"{MAX_NAME_LENGTH} characters")
        out.append(text)
    return "".join(out)


def _name_text(key: str, value, where: Where) -> str:
    """``value`` as it appears in a name: scalars as written, shapes joined by 'x', other lists by '-'
    (refused when it would be longer than a name may be)."""
    def text_of(item) -> str | None:
        if isinstance(item, bool) or not isinstance(item, (str, int, float)):
            return None
        if isinstance(item, int) and item.bit_length() > 664:          # more than 200 digits
            return None
        return str(item)

    if isinstance(value, list):
        pieces = [text_of(item) for item in value[:MAX_NAME_LENGTH + 1]]
        if len(value) <= MAX_NAME_LENGTH and all(piece is not None for piece in pieces):
            return ("x" if key.endswith("shape") else "-").join(pieces)
    else:
        text = text_of(value)
        if text is not None:
            return text
    raise where.error("name", f"'{{{key}}}' cannot go into a name: its value is {kind(value)}")


# ----------------------------------------------------------------------------------------------
# One case: every key checked and resolved


def _build_case(raw: dict, name: str, where: Where, folder: Path) -> Case:
    """The Case that the merged mapping ``raw`` describes, or PrmgError naming the bad field."""
    expect = Expect(*parse_expect(raw.get("expect", "pass"), where))
    negative = not expect.success
    if "shape" not in raw:
        raise where.error("shape", "missing required key 'shape' (dy's [B, S, N, D])")
    shape = parse_dims(raw["shape"], "shape", where, four=not negative)
    dim = shape[-1] if shape else 0
    null = parse_null(raw.get("null", []), where)
    if SLICE in null and "partial_slice" in raw:
        raise where.error("partial_slice", "null: [partial_slice] passes a NULL partialSlice, which holds no values: "
                                           "drop one of them")
    partial_slice, slice_list = parse_slice_list(raw["partial_slice"], where) if "partial_slice" in raw else \
        ((0, 0) if SLICE in null else (0, dim), None)
    length = partial_slice[1] - partial_slice[0]
    if "broadcast" in raw:
        if "cos_shape" in raw:
            raise where.error("broadcast", "set either broadcast or cos_shape, not both")
        cos_shape = broadcast_shape(parse_broadcast(raw["broadcast"], shape, where), shape, length)
    elif "cos_shape" in raw:
        cos_shape = parse_dims(raw["cos_shape"], "cos_shape", where, four=not negative)
    else:
        cos_shape = _default_cos_shape(length)
    sin_shape = parse_dims(raw["sin_shape"], "sin_shape", where, four=not negative) \
        if "sin_shape" in raw else cos_shape
    dtype = parse_dtype(raw.get("dtype", "float32"), "dtype", where, negative)
    cos_dtype = parse_dtype(raw["cos_dtype"], "cos_dtype", where, negative) if "cos_dtype" in raw else dtype
    sin_dtype = parse_dtype(raw["sin_dtype"], "sin_dtype", where, negative) if "sin_dtype" in raw else cos_dtype
    tensors = {"dy": (shape, dtype), "cos": (cos_shape, cos_dtype), "sin": (sin_shape, sin_dtype)}
    inputs = {tensor: InputSpec(*spec) if spec else InputSpec()
              for tensor, spec in parse_inputs(raw.get("inputs", {}), tensors, where, folder).items()}
    standard = parse_standard(raw["standard"], where) if "standard" in raw else None
    checks = parse_checks(raw.get("checks", []), where)
    golden = parse_golden(raw.get("golden", True), where)
    unchecked = parse_reason(raw["correctness_unchecked"], "correctness_unchecked", where) \
        if "correctness_unchecked" in raw else None
    if unchecked and golden:
        raise where.error("correctness_unchecked", "only a golden: false case can leave correctness unchecked")
    return Case(
        name=name,
        source=where.source,
        shape=shape,
        cos_shape=cos_shape,
        sin_shape=sin_shape,
        partial_slice=partial_slice,
        rotary_mode=parse_mode(raw.get("rotary_mode", 1), where, negative),
        dtype=dtype,
        cos_dtype=cos_dtype,
        sin_dtype=sin_dtype,
        seed=parse_seed(raw["seed"], where) if "seed" in raw else _default_seed(name),
        generator=parse_generator(raw["generator"], where) if "generator" in raw else DEFAULT_GENERATOR,
        dy_input=inputs["dy"],
        cos_input=inputs["cos"],
        sin_input=inputs["sin"],
        expect=expect,
        standard=standard,
        tolerance=parse_tolerance(raw.get("tolerance", {}), standard, where),
        tags=parse_words(raw.get("tags", []), "tags", where),
        format=parse_format(raw.get("format", "ND"), where),
        null=null,
        dy_strides=parse_strides(raw["dy_strides"], shape, where) if "dy_strides" in raw else None,
        cos_strides=parse_strides(raw["cos_strides"], cos_shape, where, "cos_strides") if "cos_strides" in raw
        else None,
        sin_strides=parse_strides(raw["sin_strides"], sin_shape, where, "sin_strides") if "sin_strides" in raw
        else None,
        offsets=tuple(parse_offset(raw.get(f"{tensor}_offset", 0), f"{tensor}_offset", where) for tensor in TENSORS),
        slice_list=slice_list,
        builds=parse_builds(raw["builds"], where) if "builds" in raw else (),
        note=parse_reason(raw["note"], "note", where) if "note" in raw else None,
        partners_alike=parse_reason(raw["partners_alike"], "partners_alike", where) if "partners_alike" in raw
        else None,
        op=parse_op(raw.get("op", DEFAULT_OP), where),
        known_defect=_known_defect(raw["known_defect"], expect, where) if "known_defect" in raw else None,
        checks=checks,
        golden=golden,
        correctness_unchecked=unchecked,
    )


def _known_defect(value, expect: Expect, where: Where) -> KnownDefect:
    """The case's known defect (``fields.parse_known_defect``), refused when it cannot be met beside ``expect``:
    a wrong result where the case expects a refusal (a refused call has no result), or a status the case already
    expects (``SUCCESS`` with ``expect: pass``, its own code, any refusal with ``error: any``): the case would be
    xpassed whenever the operator is right and never xfailed."""
    defect = KnownDefect(*parse_known_defect(value, where))
    if defect.status is None and not expect.success:
        raise where.error("known_defect.result", "a wrong result is what a call that succeeds returns, and this case "
                          "expects a refusal: the marker can never be met (a wrong result goes with expect: pass)")
    if defect.status is not None and (defect.status == 0 if expect.success else
                                      defect.status == expect.error or (expect.error == "any" and defect.status)):
        expected = "success (expect: pass)" if expect.success else \
            f"{'any refusal' if expect.error == 'any' else describe(expect.error)} (expect: {{error: ...}})"
        raise where.error("known_defect.status", f"{'SUCCESS' if defect.status == 0 else describe(defect.status)} "
                          f"is what the case expects, {expected}: the marker can never be met and the case is "
                          f"xpassed whenever the operator is right; name the status the defective operator returns")
    return defect


def _default_seed(name: str) -> int:
    """The seed a case gets when it sets none: stable, derived from its name (inputs.default_seed)."""
    from ..inputs.seeded import default_seed  # seeded.py owns the derivation
    return default_seed(name)


def _default_cos_shape(length: int) -> tuple[int, ...]:
    """cos's shape when neither cos_shape nor broadcast is given: (1, 1, 1, L), L >= 1."""
    return (1, 1, 1, max(length, 1))


def _input_to_dict(spec: InputSpec) -> dict:
    """``spec`` as the ``inputs`` entry that ``fields.parse_input`` reads back into it."""
    if spec.kind == "rope":
        base, offset = spec.args
        if isinstance(offset, tuple):
            offset = list(offset)
        return {"rope": {"base": base, **({"offset": offset} if offset else {})}}
    if spec.kind == "file":
        return {"file": spec.args[0]}
    return {spec.kind: list(spec.args)}
