"""Whether a case can fail at all, which broadcast faults it can see (``prmg gen-case`` asks before it writes
one: ``case_writer``), and the warning a run would give of its inputs (``weak_warning``: ``prmg validate`` and
``prmg gen-case`` say it).

A pass case is **vacuous** when the unchanged input already passes its standard (``judge.judge_result`` of the
input itself): a kernel that does nothing passes it -- e.g. a RoPE table at position 0 only (S = 1, offset 0),
whose cos is 1 and sin 0. A broadcast fault (the emulator's ``broadcast_b``/``_s``/``_n``, ``ignore_broadcast``:
reading cos/sin row 0 along an axis where the table is full) is **invisible** when the table's rows along that
axis are all equal (bit for bit, cos and sin): e.g. a decode table ``B11D`` with one offset for every request.
Cases over ``MAX_ELEMENTS`` are not looked at (their inputs would take long to draw).
"""

from __future__ import annotations

import math

import numpy as np

from ..case import Case
from ..dtypes import bits

AXES = "BSN"
MAX_ELEMENTS = 1 << 24
# The largest dy ``weak_warning`` makes inputs for (16 MiB of float32): ``prmg run`` sees it in every case.
VALIDATE_ELEMENTS = 1 << 22


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


def weak_warning(case: Case) -> str | None:
    """For a pass case (of at most ``VALIDATE_ELEMENTS`` elements) the warning its run would give of its inputs:
    ``judge.PARTNERS_ALIKE_WARNING`` when its sin is alike at both lanes of every pair without a word why
    (``judge.partners_alike_warned``: a RoPE table), ``judge.SIGN_HIDDEN_WARNING`` when its tolerance or values hide
    the sign of sin (``judge.sign_hidden``, by its own standard, or ``default`` without the golden); else None."""
    from ..inputs.seeded import make_inputs
    from ..judging.judge import PARTNERS_ALIKE_WARNING, SIGN_HIDDEN_WARNING, partners_alike_warned, sign_hidden
    from ..judging.standards import standard_of

    if not case.expect.success or case.known_defect or math.prod(case.shape) > VALIDATE_ELEMENTS:
        return None
    inputs = make_inputs(case)
    if partners_alike_warned(case, inputs):
        return PARTNERS_ALIKE_WARNING
    judged = (case.standard, case.tolerance) if case.golden else (None, ())
    return SIGN_HIDDEN_WARNING if sign_hidden(case, inputs, standard_of(judged[0]), dict(judged[1])) else None
