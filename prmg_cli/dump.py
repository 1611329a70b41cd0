"""``prmg dump``: each case's inputs and golden as .npy files plus meta.json, for any other tool."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

import numpy as np

from .cases import Case, load_cases, select
from .vocab import MODE_NAMES
from .dtypes import storable
from .errors import PrmgError
from .execute import default_max_memory, memory_need
from .inputs import make_inputs
from .reference import inplace_partial_rotary_mul_grad


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


def dump_case(case: Case, folder: Path) -> None:
    """Write ``folder``/dy.npy, cos.npy, sin.npy, golden.npy (success cases only) and meta.json."""
    host, _ = memory_need(case)
    if host > default_max_memory():
        raise PrmgError(f"needs about {host / 2**30:.1f} GiB of memory, more than half of this machine's; "
                        f"not dumped", file=case.source, case=case.name, field="shape")
    inputs = make_inputs(case)
    folder.mkdir(parents=True, exist_ok=True)
    arrays = {"dy": inputs.dy, "cos": inputs.cos, "sin": inputs.sin}
    if case.expect.success:
        arrays["golden"] = inplace_partial_rotary_mul_grad(
            inputs.dy, inputs.cos, inputs.sin, case.rotary_mode, case.partial_slice)
    for name, array in arrays.items():
        np.save(folder / f"{name}.npy", storable(array), allow_pickle=False)
    (folder / "meta.json").write_text(json.dumps(case_meta(case), indent=2) + "\n", encoding="utf-8")


def dump_cases(paths: Sequence[str], out: str, keyword: str | None = None) -> str:
    """``prmg dump``: writes every selected case under ``out``; returns a one-line summary."""
    cases = select(load_cases(paths), keyword, ())
    root = Path(out)
    try:
        for case in cases:
            dump_case(case, root / case.name)
    except OSError as exc:
        raise PrmgError(f"cannot write: {exc.strerror}", file=exc.filename or out) from None
    return f"wrote {len(cases)} cases to {root}"
