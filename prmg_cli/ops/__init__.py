"""The operators under test: one ``OperatorSpec`` per operator in ``OPERATORS``.

An entry says everything the rest of prmg needs to know about an operator: its aclnn symbols, the name
of its in-place tensor, its constraint rules (which status a case earns), its golden, and the dtype
pairs and cos/sin layouts it accepts. A third operator would be a new module and one more entry.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OperatorSpec:
    """One operator of the InplacePartialRotaryMul family.

    ``get_workspace``/``launch``: the two aclnn entry points (same signatures for the whole family);
    ``inplace``: what the in-place tensor is called in the operator's docs (``dyRef``, ``xRef``).
    """

    name: str
    title: str
    get_workspace: str
    launch: str
    inplace: str


GRAD = OperatorSpec("grad", "InplacePartialRotaryMulGrad", "aclnnInplacePartialRotaryMulGradGetWorkspaceSize",
                    "aclnnInplacePartialRotaryMulGrad", "dyRef")
FORWARD = OperatorSpec("forward", "InplacePartialRotaryMul", "aclnnInplacePartialRotaryMulGetWorkspaceSize",
                       "aclnnInplacePartialRotaryMul", "xRef")
OPERATORS: dict[str, OperatorSpec] = {spec.name: spec for spec in (GRAD, FORWARD)}
