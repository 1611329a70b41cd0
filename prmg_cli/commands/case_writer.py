"""Glue for ``prmg gen-case`` and ``prmg import-ttk``: option text -> gencase/ttk calls -> YAML text or file."""

from __future__ import annotations

import os
from collections import Counter

from .. import files
from ..cases import gencase, presets, ttk
from ..errors import PrmgError
from ..results import plural, visible
from ..vocab import DEFAULT_SUPPORTED_MODES, ROTARY_MODES, mode_list, mode_name
from ..writes import Output, check_outputs


# The flag that sets each case field a flag-built case's error may name (its first part: inputs.dy.uniform).
FIELD_FLAGS = {"shape": "--shape", "cos_shape": "--cos-shape", "broadcast": "--broadcast", "partial_slice": "--slice",
               "dtype": "--dtype", "cos_dtype": "--cos-dtype", "sin_dtype": "--cos-dtype", "rotary_mode": "--mode",
               "seed": "--seed", "name": "--name", "inputs": "--inputs", "expect": "--expect",
               "standard": "--standard", "preset": "--preset"}


def _flag_error(exc: PrmgError) -> PrmgError:
    """``exc`` naming the flag that set its field (``FIELD_FLAGS``), as the user wrote it; itself for another."""
    flag = FIELD_FLAGS.get((exc.field or "").split(".")[0])
    if flag is None or exc.file is not None:
        return exc
    return PrmgError(f"{flag}{f' ({exc.field})' if '.' in exc.field else ''}: {exc.reason}")


def _write(text: str, output: str | None, what: str, inputs: dict[str, str], count: int,
           generated: bool = False) -> str:
    """``text`` (a case file of ``count`` cases) itself without ``output``; else write it to the file ``output``
    (``writes.check_outputs``: never one of ``inputs``; atomically: a failed write leaves an existing file whole;
    gen-case's (``generated``) never over a file it did not write: ``_not_hand_written``) and return ``wrote N cases
    to FILE``, as ``prmg dump`` says."""
    if output is None:
        return text
    check_outputs([Output(output, what)], inputs)
    if generated:                                               # gen-case's, not import-ttk's (which rewrites its own)
        _not_hand_written(output)
    files.write_text(output, text)
    return f"wrote {plural(count, 'case')} to {output}\n"


def _not_hand_written(output: str) -> None:
    """Refuse to replace a regular file that gen-case did not write (its first line is not a comment beginning
    ``gencase.GENERATED``): a new user's own case file given as ``-o`` (meaning --append) was replaced by the one
    generated case, exit 0."""
    mark = f"# {gencase.GENERATED}".encode()
    try:
        with open(output, "rb") as file:
            if not os.path.isfile(output) or file.read(len(mark)) in (mark, b""):
                return
    except OSError:
        return                                  # missing: a new file (check_outputs said why any other cannot be)
    raise PrmgError("cannot write the case file: it holds text gen-case did not write, which replacing it would lose "
                    "(add one case to it with --append, or remove the file first)", file=output)


def generate(*, shape, cos_shape, broadcast, partial_slice, dtype, cos_dtype, mode, seed, name, inputs,
             expect, standard, preset, output, append, tags=(), exclude_tags=(), notes: list | None = None) -> str:
    """``prmg gen-case``: a preset suite (its cases of ``tags``, without those of ``exclude_tags``) or one case
    from flags; returns what to print. A RoPE sin is written with why it is alike at both lanes of every pair
    (``partners_alike``: ``gencase.ROPE_PARTNERS``, as the presets write it). A case that cannot fail is refused,
    and ``notes`` gets a warning for one that cannot see a broadcast fault (``check_strength``) and, for a preset,
    how many of its cases today's target skips (``skipped_today``)."""
    if preset is not None:                      # no option of one case with it: refused by commands.gen_case
        try:
            doc = presets.preset(preset, tags, exclude_tags)
        except PrmgError as exc:
            raise _flag_error(exc) from None
        if notes is not None:
            notes += skipped_today(doc["cases"])
        return _write(gencase.dump_yaml(doc), output, "case file", {}, len(doc["cases"]), generated=True)
    if tags or exclude_tags:
        raise PrmgError("--tag and --exclude-tag choose cases of a --preset")
    if shape is None:
        raise PrmgError("give --shape B,S,N,D (or --preset NAME)")
    try:
        if partial_slice is not None:
            gencase.ints(partial_slice, "partial_slice", 2)             # the flag takes [start, end]
        given = dict(dtype=dtype, mode=mode, expect=expect)           # None: case_from_options' default
        parsed = gencase.parse_inputs_option(inputs) if inputs else None
        if "rope" in ((parsed or {}).get("sin") or {}):              # as the presets say why, or the run warns
            given["partners_alike"] = gencase.ROPE_PARTNERS
        case = gencase.case_from_options(
            shape=shape, cos_shape=cos_shape, broadcast=broadcast, partial_slice=partial_slice, cos_dtype=cos_dtype,
            seed=seed, name=name, inputs=parsed, standard=standard,
            **{key: value for key, value in given.items() if value is not None})
    except PrmgError as exc:
        raise _flag_error(exc) from None
    check_strength(case, notes if notes is not None else [])
    if append:
        if output is None:
            raise PrmgError("--append needs -o FILE")
        gencase.append_cases(output, [case])
        return f"added case '{case['name']}' to {output}\n"
    text = gencase.dump_yaml({"cases": [case]})
    if output is None:
        return text
    gencase.check_loads(text, output)             # e.g. a file: input outside the output's folder, or -o one
    _not_hand_written(output)
    files.write_text(output, text)
    return f"wrote 1 case to {output}\n"


def skipped_today(cases: list[dict]) -> list[str]:
    """A note saying how many of the pass ``cases`` a target of today's modes (``DEFAULT_SUPPORTED_MODES``) skips,
    per rotary mode; none when it skips none."""
    modes = Counter(mode for mode in (case.get("rotary_mode", "interleave") for case in cases
                                      if case.get("expect", "pass") == "pass")
                    if ROTARY_MODES.get(mode, mode) not in DEFAULT_SUPPORTED_MODES)
    if not modes:
        return []
    each = ", ".join(f"{mode_name(mode) or mode}: {count}" for mode, count in modes.items())
    return [f"note: today's target ({mode_list(DEFAULT_SUPPORTED_MODES)} only) skips {sum(modes.values())} of "
            f"{plural(len(cases), 'case')} here ({each}); --supported-modes 0,1,2,3 runs them (the emulator has "
            f"every mode)"]


def check_strength(case: dict, notes: list) -> None:
    """Refuse (PrmgError) a generated pass case that cannot fail (``vacuity.vacuous``); add to ``notes`` a
    warning naming each axis along which its cos/sin cannot show a broadcast fault (``vacuity.blind_axes``), with
    how to give each request its own position, and the warning ``prmg validate`` and its run would give of its inputs
    (``vacuity.weak_warning``: a sin alike at both lanes of every pair, a sign of sin its values hide). A case with
    ``file:`` inputs (read once written) is not looked at."""
    from ..cases.vacuity import weak_spots, weak_warning

    if any("file" in spec for spec in case.get("inputs", {}).values()):
        return
    value = gencase.load_generated([case])[0]
    cannot, blind = weak_spots(value)
    rope = any("rope" in case.get("inputs", {}).get(tensor, {}) for tensor in ("cos", "sin"))
    batch = value.shape[0]
    positions = ";".join(f"P{index}" for index in range(1, batch + 1)) if batch <= 3 else f"P1;P2;...;P{batch}"
    per_request = (f"one position per request: --broadcast B11D --inputs \"cos=rope:BASE:{positions},"   # quoted:
                   f"sin=rope:BASE:{positions}\"")                               # a shell ends a command at ';'
    if cannot:
        hint = f"; give positions past 0 (cos=rope:BASE:OFFSET) or {per_request}" if rope else ""
        raise PrmgError(f"this case cannot fail: {cannot}{hint}", case=case["name"], field="inputs")
    for axis in blind:
        count = value.shape["BSN".index(axis)]
        hint = f"; give {per_request}" if axis == "B" and rope else ""
        notes.append(f"warning: case '{case['name']}': cos and sin are the same for every {axis.lower()} ({axis} = "
                     f"{count}): a kernel reading the first row for all of them (a broadcast fault) passes it{hint}")
    weak = weak_warning(value)
    if weak:
        notes.append(f"warning: case '{case['name']}': {weak}")


def import_ttk_file(csv_path: str, output: str | None) -> tuple[str, list[str]]:
    """``prmg import-ttk``: (text to print, notes about skipped or unmapped rows, with any control
    character of the CSV shown escaped)."""
    inputs = {csv_path: "the TTK list being imported"}
    if output is not None:
        check_outputs([Output(output, "YAML file")], inputs)          # before the CSV is read
    document, notes = ttk.import_ttk(csv_path)
    return _write(gencase.dump_yaml(document), output, "YAML file", inputs, len(document["cases"])), \
        [visible(note) for note in notes]
