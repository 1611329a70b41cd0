"""Golden-free checks on the device: one entry per check in ``CHECKS``.

A case asks for them with ``checks: [adjoint, roundtrip, determinism]`` (or ``prmg run --check``);
``golden: false`` judges a case by its checks alone.
"""

from __future__ import annotations

CHECKS: dict[str, str] = {
    "adjoint": "forward and grad on the device agree: <F x, dy> = <x, B dy> within float32 rounding",
    "roundtrip": "with a RoPE table, grad(forward(x)) returns x within float32 rounding",
    "determinism": "repeated launches give bit-identical outputs",
}
