"""Failure artifacts (``prmg run --save-failures DIR``): everything about a failed case, loadable with numpy.

``DIR/<case>/`` holds ``dy.npy``, ``cos.npy``, ``sin.npy`` (the inputs), ``actual.npy`` (the in-place
tensor read back), ``golden.npy`` (the float64 golden of the slice, ``(B, S, N, L)``), ``score.npy``
(per slice element the error over what the standard allows, e.g. error/budget: > 1 is wrong) and
``meta.json`` (the result record: case definition, metrics, message, details; ``files``: each file written
-> its dtype). A failure whose slice was right (a contract breach: a guard zone, cos changed) has its golden
and score too (``judge.slice_arrays``); a case with no golden (``golden: false``, an expected error, an empty
slice) has neither. bfloat16 arrays are stored as their uint16 bit patterns, so numpy alone reads all; the
README's snippet (``--save-failures``) reads any such folder.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from . import files
from .dtypes import from_numpy, storable
from .errors import PrmgError
from .outputs.jsonreport import json_safe


def save_failure(folder: str, result, inputs, actual, arrays: dict) -> str:
    """Write the artifacts of one failed case into ``folder``/<case name> (module docstring), nothing outside
    ``folder``: a symlink that sits at ``folder``/<case name> or inside it is never followed
    (``files.make_folder_within``, ``files.create_within``). Returns the folder written, or a sentence
    saying why it could not be (the run goes on: the result says so)."""
    root = Path(os.path.realpath(folder))
    target = root / result.name
    try:
        files.make_folder_within(target, root)
        saved = {"dy.npy": inputs.dy, "cos.npy": inputs.cos, "sin.npy": inputs.sin,
                 **({"actual.npy": actual} if actual is not None else {}),
                 **{f"{name}.npy": array for name, array in arrays.items()}}
        dtypes = {}
        for name, array in saved.items():
            with files.create_within(target / name, root) as handle:
                np.save(handle, storable(np.asarray(array)), allow_pickle=False)
            dtypes[name] = from_numpy(np.asarray(array).dtype).name
        meta = {**result.to_dict(), "files": dtypes}
        with files.create_within(target / "meta.json", root) as handle:
            handle.write((json.dumps(json_safe(meta), indent=2, allow_nan=False) + "\n").encode("utf-8"))
    except PrmgError as error:
        return f"could not write artifacts: {error}"
    except (OSError, KeyError, ValueError) as error:
        why = files.os_reason(error) if isinstance(error, OSError) else type(error).__name__
        return f"could not write artifacts under {folder}: {why}"
    return str(target)
