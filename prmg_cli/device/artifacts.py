"""The one layout of a case's arrays on disk, written by ``prmg dump`` (``dump_arrays.py``) and by ``prmg run
--save-failures DIR`` (``save_failure``), so that one loader (the snippet of docs/reports.md) reads both.

``DIR/<case>/`` holds, as ``.npy`` files numpy alone reads (bfloat16 arrays as their uint16 bit patterns):

- ``dy.npy``, ``cos.npy``, ``sin.npy``: the inputs, in their dtypes;
- ``golden.npy``: the exact result, float64, the in-place tensor's shape (the input outside the slice) -- where
  the case has a golden (not for an expected error; a failure of a ``golden: false`` case has none);
- ``expected.npy``: that golden rounded to the in-place tensor's dtype: what a correctly rounded kernel returns;
- a failure only: ``actual.npy``, the in-place tensor read back, and, where the slice was judged against a golden,
  ``score.npy``: per element the error over what the standard allows (e.g. error/budget: > 1 is wrong), float64,
  the tensor's shape, 0 outside the slice (whose bit identity is checked apart);

and ``meta.json``, one schema (``SCHEMA``): ``case`` (``case_meta``: name, source, op, seed, generator, dtypes,
shapes, rotary mode, slice, expectation and the case's ``definition``), ``files`` (each ``.npy`` written -> the
dtype of its array) and ``result`` (a failure's result record: status, message, metrics, details, its device...;
null for a dump).
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import numpy as np

from .. import files
from ..case import Case
from ..dtypes import from_numpy, rounded, storable
from ..errors import PrmgError
from ..results import json_safe
from ..vocab import MODE_NAMES

SCHEMA = "prmg.artifacts/1"


def case_meta(case: Case) -> dict:
    """What a reader needs to interpret the ``.npy`` files of ``case``, and its case-file mapping."""
    from ..cases.loader import case_to_dict

    return {
        "name": case.name, "source": case.source, "op": case.op, "seed": case.seed, "generator": case.generator,
        "dtype": case.dtype, "cos_dtype": case.cos_dtype, "sin_dtype": case.sin_dtype,
        "shape": list(case.shape), "cos_shape": list(case.cos_shape), "sin_shape": list(case.sin_shape),
        "rotary_mode": case.rotary_mode, "rotary_mode_name": MODE_NAMES.get(case.rotary_mode),
        "partial_slice": list(case.partial_slice),
        "expect": "pass" if case.expect.success else {"error": case.expect.error},
        "definition": case_to_dict(case),
    }


def whole(case: Case, x: np.ndarray, golden_slice: np.ndarray, score: np.ndarray | None = None) -> dict:
    """``golden.npy``, ``expected.npy`` (and ``score.npy`` from the slice's ``score``) of the layout: the float64
    golden of the slice ``golden_slice`` set into the in-place input ``x``, rounded to ``x``'s dtype, and the
    score set into zeros of ``x``'s shape."""
    start, end = case.partial_slice
    golden = np.asarray(x, dtype=np.float64).copy()
    golden[..., start:end] = golden_slice
    with np.errstate(over="ignore", invalid="ignore"):      # a golden past the dtype's range rounds to inf
        arrays = {"golden": golden, "expected": rounded(golden, x.dtype)}
    if score is not None:
        arrays["score"] = np.zeros(golden.shape)
        arrays["score"][..., start:end] = score
    return arrays


class _Writes:
    """A file's ``write`` alone, for ``np.save``: given the file itself numpy writes with ``ndarray.tofile``, whose
    short write on a full disk is an OSError without an errno ("100000 requested and 6128 written", which prmg
    could only say as 'cannot write: oserror'); given this it writes in chunks through ``write``, which fails with
    ENOSPC ('no space left on device')."""

    def __init__(self, handle):
        self.write = handle.write


def write_folder(target: Path, root: Path, case: Case, arrays: dict, result=None) -> None:
    """Write ``arrays`` (name -> array) as ``target``/NAME.npy and ``target``/meta.json (module docstring),
    nothing outside ``root``: a symlink that sits at ``target`` or inside it is never followed
    (``files.make_folder_within``, ``files.create_within``). ``result``: a failure's CaseResult. When a write fails
    (a full disk), the files this call opened are removed again, and a meta.json an earlier write left (it would
    describe arrays now gone), and ``target`` when this call made it: a folder of some arrays read as a case's."""
    made = not os.path.lexists(target)
    files.make_folder_within(target, root)
    opened: list[Path] = []
    try:
        written = {}
        for name, array in arrays.items():
            with files.create_within(target / f"{name}.npy", root) as handle:
                opened.append(target / f"{name}.npy")
                np.save(_Writes(handle), storable(np.asarray(array)), allow_pickle=False)
            written[f"{name}.npy"] = from_numpy(np.asarray(array).dtype).name
        meta = {"schema": SCHEMA, "case": case_meta(case), "files": written,
                "result": result.to_dict() if result is not None else None}
        with files.create_within(target / "meta.json", root) as handle:
            handle.write((json.dumps(json_safe(meta), indent=2, allow_nan=False) + "\n").encode("utf-8"))
    except BaseException:
        stale = target / "meta.json"
        for path in opened + ([stale] if not stale.is_symlink() else []):     # a symlink stays, never followed
            with contextlib.suppress(OSError):
                path.unlink()
        if made:
            with contextlib.suppress(OSError):
                target.rmdir()
        raise


def save_failure(folder: str, case: Case, result, inputs, actual, arrays: dict) -> str:
    """Write the artifacts of one failed case into ``folder``/<case name> (``write_folder``): its inputs, the
    tensor read back and, from the judge's ``arrays`` (the slice's float64 ``golden`` and ``score``), the golden,
    the expected tensor and the score. Returns the folder written, or a sentence saying why it could not be (the
    run goes on: the result says so)."""
    root = Path(os.path.realpath(folder))
    saved = {"dy": inputs.dy, "cos": inputs.cos, "sin": inputs.sin,
             **({"actual": actual} if actual is not None else {})}
    if "golden" in arrays:
        saved.update(whole(case, inputs.dy, arrays["golden"], arrays.get("score")))
    try:
        write_folder(root / result.name, root, case, saved, result)
    except PrmgError as error:
        return f"could not write artifacts: {error}"
    except (OSError, KeyError, ValueError) as error:
        why = files.os_reason(error) if isinstance(error, OSError) else type(error).__name__
        return f"could not write artifacts under {folder}: {why}"
    return str(root / result.name)
