"""``prmg dump``: each case's inputs and golden as .npy files plus meta.json, for any other tool."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Sequence

import numpy as np

from . import files
from .case import Case
from .cases import NAME_PATTERN, input_files, load_cases, select
from .vocab import MODE_NAMES
from .dtypes import storable
from .errors import PrmgError
from .execute import default_max_memory, memory_need
from .inputs import make_inputs
from .ops import OPERATORS
from .results import plural
from .writes import FOLDER, Output, check_outputs


def case_meta(case: Case) -> dict:
    """What a reader needs to interpret the .npy files of ``case``."""
    return {
        "name": case.name, "source": case.source, "seed": case.seed,
        "dtype": case.dtype, "cos_dtype": case.cos_dtype, "sin_dtype": case.sin_dtype,
        "shape": list(case.shape), "cos_shape": list(case.cos_shape), "sin_shape": list(case.sin_shape),
        "rotary_mode": case.rotary_mode, "rotary_mode_name": MODE_NAMES.get(case.rotary_mode),
        "partial_slice": list(case.partial_slice),
        "expect": "pass" if case.expect.success else {"error": case.expect.error},
        "bfloat16_storage": "uint16 bit patterns",
    }


def dump_case(case: Case, folder: Path, root: Path) -> None:
    """Write ``folder``/dy.npy, cos.npy, sin.npy, golden.npy (success cases only) and meta.json.

    Every file written must resolve inside ``root``: ``folder`` is made without following a symlink that
    already sits there, and the files are opened with ``O_NOFOLLOW`` (``files.make_folder_within``,
    ``files.create_within``), so a planted symlink cannot redirect a write outside ``root``."""
    host, _ = memory_need(case)
    if host > default_max_memory():
        raise PrmgError(f"needs about {host / 2**30:.1f} GiB of memory, more than half of this machine's; "
                        f"not dumped", file=case.source, case=case.name, field="shape")
    inputs = make_inputs(case)
    arrays = {"dy": inputs.dy, "cos": inputs.cos, "sin": inputs.sin}
    op = OPERATORS[case.op]
    if case.expect.success:
        arrays["golden"] = inputs.dy.copy() if op.no_op(case) else op.golden(
            inputs.dy, inputs.cos, inputs.sin, case.rotary_mode, case.partial_slice)
    files.make_folder_within(folder, root)
    for name, array in arrays.items():
        with files.create_within(folder / f"{name}.npy", root) as handle:
            np.save(handle, storable(array), allow_pickle=False)
    with files.create_within(folder / "meta.json", root) as handle:
        handle.write((json.dumps(case_meta(case), indent=2) + "\n").encode("utf-8"))


def dump_cases(paths: Sequence[str], out: str, keyword: str | None = None) -> str:
    """``prmg dump``: writes every selected case under ``out`` (nothing outside it); returns a one-line
    summary. Any write failure (a full disk, an unwritable or non-folder ``out``) is one PrmgError."""
    loaded = load_cases(paths)
    cases = select(loaded, keyword, ())
    check_outputs([Output(out, "dump", FOLDER, tuple(case.name for case in cases))], input_files(paths, loaded))
    root = Path(out)
    try:
        root.mkdir(parents=True, exist_ok=True)
        real_root = Path(os.path.realpath(root))
        for case in cases:
            folder = root / case.name
            if not NAME_PATTERN.fullmatch(case.name) or not files.inside(folder, real_root) \
                    or Path(os.path.realpath(folder)) == real_root:
                raise PrmgError(f"the name would write outside {out}; not dumped", file=case.source,
                                case=case.name, field="name")
            dump_case(case, folder, real_root)
    except OSError as exc:
        raise PrmgError(f"cannot write: {files.os_reason(exc)}", file=exc.filename or out) from None
    return f"wrote {plural(len(cases), 'case')} to {root}"
