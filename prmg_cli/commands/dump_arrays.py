"""``prmg dump``: each case's inputs and golden as .npy files plus meta.json, for any other tool, in the layout
``--save-failures`` writes too (``artifacts``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import numpy as np

from .. import files
from ..case import Case, element_count, storage_elements
from ..cases.loader import NAME_PATTERN, input_files, load_cases, select, validate
from ..device.artifacts import whole, write_folder
from ..device.execute import default_max_memory, memory_need
from ..errors import PrmgError
from ..inputs.seeded import make_inputs
from ..ops import OPERATORS
from ..results import plural
from ..vocab import ROTARY_MODES, TENSORS
from ..writes import FOLDER, Output, check_outputs


def _largest_field(case: Case) -> str:
    """The field that makes ``case``'s arrays large: the storage offset or the strides of the tensor whose storage
    holds the most elements beyond its view (``dy_offset: 4294967296`` on a small shape), else its ``shape``."""
    beyond, tensor = max((storage_elements(case, tensor) - element_count(case.shape_of(tensor)), tensor)
                         for tensor in TENSORS)
    if beyond <= element_count(case.shape):
        return "shape"
    return f"{tensor}_offset" if case.offset_of(tensor) else f"{tensor}_strides"


def dump_case(case: Case, folder: Path, root: Path) -> None:
    """Write ``folder``/dy.npy, cos.npy, sin.npy, golden.npy and expected.npy (a case expecting success) and
    meta.json: the layout ``--save-failures`` writes too (``artifacts``), nothing outside ``root``."""
    host, _ = memory_need(case)
    if host > default_max_memory():
        raise PrmgError(f"needs about {host / 2**30:.1f} GiB of memory, more than half of this machine's; "
                        f"not dumped", file=case.source, case=case.name, field=_largest_field(case))
    inputs = make_inputs(case)
    arrays = {"dy": inputs.dy, "cos": inputs.cos, "sin": inputs.sin}
    op = OPERATORS[case.op]
    if case.expect.success:               # a no-op call leaves the input as it is
        with np.errstate(all="ignore"):   # inputs that overflow their dtype make inf - inf = NaN, as the judge's do
            golden = np.asarray(inputs.dy[..., slice(*case.partial_slice)], np.float64) if op.no_op(case) else \
                op.golden_slice(inputs.dy, inputs.cos, inputs.sin, case.rotary_mode, case.partial_slice)
            arrays.update(whole(case, inputs.dy, golden))
    write_folder(folder, root, case, arrays)


def dump_cases(paths: Sequence[str], out: str, keyword: str | None = None) -> str:
    """``prmg dump``: writes every selected case under ``out`` (nothing outside it); returns a one-line
    summary, or "" when ``keyword`` selects no case (nothing made). Any write failure (a full disk, an unwritable
    or non-folder ``out``) is one PrmgError."""
    loaded = load_cases(paths)
    validate(loaded, frozenset(ROTARY_MODES.values()))    # a pass case breaking a rule has no golden: as run refuses
    cases = select(loaded, keyword, ())
    if not cases:
        return ""
    check_outputs([Output(out, "dump", FOLDER, tuple(case.name for case in cases))], input_files(paths, loaded))
    root = where = Path(out)
    done = 0
    try:
        root.mkdir(parents=True, exist_ok=True)
        real_root = Path(os.path.realpath(root))
        for case in cases:
            folder = where = root / case.name
            if not NAME_PATTERN.fullmatch(case.name) or not files.inside(folder, real_root) \
                    or Path(os.path.realpath(folder)) == real_root:
                raise PrmgError(f"the name would write outside {out}; not dumped", file=case.source,
                                case=case.name, field="name")
            dump_case(case, folder, real_root)         # a case it could not write whole leaves no folder
            done += 1
    except OSError as exc:
        kept = f" ({done} of {plural(len(cases), 'case')} written whole)" if done else ""
        raise PrmgError(f"cannot write: {files.os_reason(exc)}{kept}", file=exc.filename or str(where)) from None
    return f"wrote {plural(len(cases), 'case')} to {root}"
