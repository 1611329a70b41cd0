"""Glue for ``prmg gen-case`` and ``prmg import-ttk``: option text -> gencase/ttk calls -> YAML text or file."""

from __future__ import annotations

from . import files, gencase, presets, ttk
from .errors import PrmgError
from .results import visible
from .writes import Output, check_outputs


# The options whose text gencase parses, by the case field its errors name.
_SHAPE_OPTIONS = {"shape": "--shape", "cos_shape": "--cos-shape", "partial_slice": "--slice"}


def _write(text: str, output: str | None, what: str, inputs: dict[str, str]) -> str:
    """``text`` itself without ``output``; else write it to the file ``output`` (``writes.check_outputs``: never one
    of ``inputs``; atomically: a failed write leaves an existing file whole) and return ``wrote FILE``."""
    if output is None:
        return text
    check_outputs([Output(output, what)], inputs)
    files.write_text(output, text)
    return f"wrote {output}\n"


def generate(*, shape, cos_shape, broadcast, partial_slice, dtype, cos_dtype, mode, seed, name, inputs,
             expect, standard, preset, output, append, tags=(), exclude_tags=()) -> str:
    """``prmg gen-case``: a preset suite (its cases of ``tags``, without those of ``exclude_tags``) or one case
    from flags; returns what to print."""
    if preset is not None:                      # no option of one case with it: refused by commands.gen_case
        return _write(gencase.dump_yaml(presets.preset(preset, tags, exclude_tags)), output, "case file", {})
    if tags or exclude_tags:
        raise PrmgError("--tag and --exclude-tag choose cases of a --preset")
    if shape is None:
        raise PrmgError("give --shape B,S,N,D (or --preset NAME)")
    try:
        if partial_slice is not None:
            gencase.ints(partial_slice, "partial_slice", 2)             # the flag takes [start, end]
        given = dict(dtype=dtype, mode=mode, expect=expect)           # None: case_from_options' default
        case = gencase.case_from_options(
            shape=shape, cos_shape=cos_shape, broadcast=broadcast, partial_slice=partial_slice, cos_dtype=cos_dtype,
            seed=seed, name=name, inputs=gencase.parse_inputs_option(inputs) if inputs else None, standard=standard,
            **{key: value for key, value in given.items() if value is not None})
    except PrmgError as exc:
        if exc.case is None and exc.field in _SHAPE_OPTIONS:     # a shape or slice text gencase cannot read
            raise PrmgError(f"{_SHAPE_OPTIONS[exc.field]}: {exc.reason}") from None
        raise
    if append:
        if output is None:
            raise PrmgError("--append needs -o FILE")
        gencase.append_cases(output, [case])
        return f"added case '{case['name']}' to {output}\n"
    text = gencase.dump_yaml({"cases": [case]})
    if output is None:
        return text
    gencase.check_loads(text, output)             # e.g. a file: input outside the output's folder, or -o one
    files.write_text(output, text)
    return f"wrote {output}\n"


def import_ttk_file(csv_path: str, output: str | None) -> tuple[str, list[str]]:
    """``prmg import-ttk``: (text to print, notes about skipped or unmapped rows, with any control
    character of the CSV shown escaped)."""
    inputs = {csv_path: "the TTK list being imported"}
    if output is not None:
        check_outputs([Output(output, "YAML file")], inputs)          # before the CSV is read
    document, notes = ttk.import_ttk(csv_path)
    return _write(gencase.dump_yaml(document), output, "YAML file", inputs), [visible(note) for note in notes]
