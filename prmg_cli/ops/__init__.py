"""Stage 1, operators: a case in; what the operator must do with it out -- its golden, the status it earns on a target.

One ``OperatorSpec`` (``spec``) per operator in ``OPERATORS``; ``reference`` evaluates an operator's
``Rotation`` in float64 (the golden engine), ``constraints`` applies its rules on a target (``targets``: chips and
upstream builds), ``regimes`` lists its regime classes. The lowest stage: every other one asks it about operators.

An entry says everything the rest of prmg needs to know about an operator: its aclnn symbols, the name
of its in-place tensor, its constraint rules (which status a case earns), its golden, and the dtype
pairs and cos/sin layouts it accepts. A third operator would be a new module and one more entry.
"""

from __future__ import annotations

from ..vocab import DEFAULT_OP
from .forward import FORWARD
from .grad import GRAD
from .spec import OperatorSpec, Violation

OPERATORS: dict[str, OperatorSpec] = {spec.name: spec for spec in (GRAD, FORWARD)}

__all__ = ["OPERATORS", "DEFAULT_OP", "OperatorSpec", "Violation", "GRAD", "FORWARD"]
