"""Glue for ``prmg gen-case`` and ``prmg import-ttk``: option text -> gencase/ttk calls -> YAML text or file."""

from __future__ import annotations

from pathlib import Path

from . import gencase, ttk
from .errors import PrmgError


def _ints(text: str | None, option: str) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        return tuple(int(part) for part in text.replace("x", ",").split(","))
    except ValueError:
        raise PrmgError(f"{option} must be comma-separated integers, got {text!r}") from None


def _write(text: str, output: str | None) -> str:
    if output is None:
        return text
    try:
        Path(output).parent.mkdir(parents=True, exist_ok=True)
        Path(output).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise PrmgError(f"cannot write: {exc.strerror}", file=output) from None
    return f"wrote {output}\n"


def generate(*, shape, cos_shape, broadcast, partial_slice, dtype, cos_dtype, mode, seed, name, inputs,
             expect, standard, preset, output, append) -> str:
    """``prmg gen-case``: a preset suite or one case from flags; returns what to print."""
    if preset is not None:
        if shape is not None or append:
            raise PrmgError("--preset writes a whole suite: it takes no --shape or --append")
        return _write(gencase.dump_yaml(gencase.preset(preset)), output)
    if shape is None:
        raise PrmgError("give --shape B,S,N,D (or --preset NAME)")
    case = gencase.case_from_options(
        shape=_ints(shape, "--shape"), cos_shape=_ints(cos_shape, "--cos-shape"), broadcast=broadcast,
        partial_slice=_ints(partial_slice, "--slice"), dtype=dtype, cos_dtype=cos_dtype, mode=mode,
        seed=seed, name=name, inputs=gencase.parse_inputs_option(inputs) if inputs else None,
        expect=expect, standard=standard)
    if append:
        if output is None:
            raise PrmgError("--append needs -o FILE")
        gencase.append_cases(output, [case])
        return f"added case '{case['name']}' to {output}\n"
    return _write(gencase.dump_yaml({"cases": [case]}), output)


def import_ttk_file(csv_path: str, output: str | None) -> tuple[str, list[str]]:
    """``prmg import-ttk``: (text to print, notes about skipped or unmapped rows)."""
    document, notes = ttk.import_ttk(csv_path)
    return _write(gencase.dump_yaml(document), output), notes
