"""The operators under test: one ``OperatorSpec`` (``ops/spec.py``) per operator in ``OPERATORS``.

An entry says everything the rest of prmg needs to know about an operator: its aclnn symbols, the name
of its in-place tensor, its constraint rules (which status a case earns), its golden, and the dtype
pairs and cos/sin layouts it accepts. A third operator would be a new module and one more entry.
"""

from __future__ import annotations

from .forward import FORWARD
from .grad import GRAD
from ..vocab import DEFAULT_OP
from .spec import OperatorSpec, Violation

OPERATORS: dict[str, OperatorSpec] = {spec.name: spec for spec in (GRAD, FORWARD)}

__all__ = ["OPERATORS", "DEFAULT_OP", "OperatorSpec", "Violation", "GRAD", "FORWARD"]
