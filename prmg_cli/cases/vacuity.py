"""Whether a case can fail at all, and which broadcast faults it can see (``prmg gen-case`` asks before it writes
one: ``case_writer``).

A pass case is **vacuous** when the unchanged input already passes its standard (``judge.judge_result`` of the
input itself): a kernel that does nothing passes it -- e.g. a RoPE table at position 0 only (S = 1, offset 0),
whose cos is 1 and sin 0. A broadcast fault (the emulator's ``broadcast_b``/``_s``/``_n``, ``ignore_broadcast``:
reading cos/sin row 0 along an axis where the table is full) is **invisible** when the table's rows along that
axis are all equal (bit for bit, cos and sin): e.g. a decode table ``B11D`` with one offset for every request.
Cases over ``MAX_ELEMENTS`` are not looked at (their inputs would take long to draw).
"""

from __future__ import annotations

import numpy as np

from ..case import Case
from ..dtypes import bits

AXES = "BSN"
MAX_ELEMENTS = 1 << 24


def vacuous(case: Case, inputs) -> str:
    """Why ``case`` (a pass case, with its ``inputs``) cannot fail, or "" when it can: its unchanged input passes
    its standard. A no-op call (``OperatorSpec.no_op``: an empty slice or tensor) is its own input on purpose: it
    fails a kernel that writes anything, as the run judges it (no ``vacuous`` warning)."""
    from ..judging.judge import judge_result
    from ..ops import OPERATORS

    if OPERATORS[case.op].no_op(case):
        return ""
    if judge_result(case, inputs, inputs.dy.copy(), case.standard, case.tolerance).status != "passed":
        return ""
    trivial = " (cos = 1 and sin = 0 everywhere)" if (inputs.cos == 1).all() and (inputs.sin == 0).all() else ""
    return f"its unchanged input already passes{trivial}: a kernel that does nothing passes it"


def blind_axes(case: Case, inputs) -> list[str]:
    """The axes (``B``, ``S``, ``N``) along which ``case``'s cos/sin table is full (as long as dy's, over 1) but
    the same in every row: a kernel reading row 0 along them (a broadcast fault) passes the case."""
    tables = [bits(inputs.cos), bits(inputs.sin)]
    return [AXES[axis] for axis in range(3)
            if len(case.cos_shape) == 4 and case.cos_shape[axis] == case.shape[axis] > 1
            and all((table == table.take([0], axis=axis)).all() for table in tables)]


def weak_spots(case: Case) -> tuple[str, list[str]]:
    """(``vacuous``, ``blind_axes``) of a pass case of at most ``MAX_ELEMENTS`` elements; ("", []) otherwise."""
    from ..inputs.seeded import make_inputs

    if not case.expect.success or int(np.prod(case.shape, dtype=np.int64)) > MAX_ELEMENTS:
        return "", []
    inputs = make_inputs(case)
    with np.errstate(all="ignore"):
        return vacuous(case, inputs), blind_axes(case, inputs)
