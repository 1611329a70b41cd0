"""Failure artifacts (``prmg run --save-failures DIR``): everything about a failed case, loadable with numpy.

``DIR/<case>/`` holds ``dy.npy``, ``cos.npy``, ``sin.npy`` (the inputs), ``actual.npy`` (the in-place
tensor read back), ``golden.npy`` (the float64 golden of the slice, ``(B, S, N, L)``), ``score.npy``
(per slice element the error over what the standard allows, e.g. error/budget: > 1 is wrong) and
``meta.json`` (the result record: case definition, metrics, message, details). bfloat16 arrays are
stored as their uint16 bit patterns (``meta.json`` names each file's dtype), so numpy alone reads all::

    import json, numpy as np, ml_dtypes
    folder = "failures/my_case"
    meta = json.load(open(f"{folder}/meta.json"))
    actual = np.load(f"{folder}/actual.npy")
    if meta["files"]["actual.npy"] == "bfloat16": actual = actual.view(ml_dtypes.bfloat16)
    score = np.load(f"{folder}/score.npy"); print(np.argwhere(score > 1)[:5])
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .dtypes import from_numpy, storable
from .outputs.jsonreport import json_safe


def save_failure(folder: str, result, inputs, actual, arrays: dict) -> str:
    """Write the artifacts of one failed case into ``folder``/<case name> (module docstring); returns the
    folder written, or "" when it could not be written (the run goes on: the result says so)."""
    target = Path(folder) / result.name
    try:
        target.mkdir(parents=True, exist_ok=True)
        files = {"dy.npy": inputs.dy, "cos.npy": inputs.cos, "sin.npy": inputs.sin}
        if actual is not None:
            files["actual.npy"] = actual
        files.update({f"{name}.npy": array for name, array in arrays.items()})
        dtypes = {}
        for name, array in files.items():
            np.save(target / name, storable(np.asarray(array)), allow_pickle=False)
            dtypes[name] = from_numpy(np.asarray(array).dtype).name
        meta = {**result.to_dict(), "files": dtypes}
        (target / "meta.json").write_text(json.dumps(json_safe(meta), indent=2, allow_nan=False) + "\n",
                                          encoding="utf-8")
    except (OSError, KeyError, ValueError):
        return ""
    return str(target)
