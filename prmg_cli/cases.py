"""Case files: the ``Case`` value, YAML loading (safe loader only), defaults, sweeps and validation.

Every user mistake raises ``PrmgError`` naming the file, the case and the field.
"""

from __future__ import annotations

from dataclasses import dataclass, field

ROTARY_MODES = {"half": 0, "interleave": 1, "quarter": 2, "interleave-half": 3}
MODE_NAMES = {code: name for name, code in ROTARY_MODES.items()}
FORMATS = {"NCHW": 0, "NHWC": 1, "ND": 2, "NC1HWC0": 3, "FRACTAL_Z": 4, "FRACTAL_NZ": 29}
TENSORS = ("dy", "cos", "sin")


@dataclass(frozen=True)
class InputSpec:
    """How the values of one tensor are made.

    kind / args:
      uniform (lo, hi) | normal (mean, std) | values (flat C-order floats) | file (absolute .npy path,)
      | rope (base,)  -- cos/sin only: a real RoPE angle table laid out for the case's mode.
    """

    kind: str = "uniform"
    args: tuple = (-1.0, 1.0)


@dataclass(frozen=True)
class Expect:
    """What the operator must return: success (error is None), one status code, or "any" error."""

    error: int | str | None = None

    @property
    def success(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class Case:
    """One fully resolved test case. Shapes are tuples of ints; rotary_mode is the int code 0..3."""

    name: str
    source: str                         # the file the case came from (for messages)
    shape: tuple[int, ...]              # dy (B, S, N, D)
    cos_shape: tuple[int, ...]
    sin_shape: tuple[int, ...]
    partial_slice: tuple[int, int]      # [start, end)
    rotary_mode: int = 1
    dtype: str = "float32"              # dy's dtype (canonical name, see dtypes.py)
    cos_dtype: str = "float32"
    sin_dtype: str = "float32"
    seed: int = 0
    dy_input: InputSpec = InputSpec()
    cos_input: InputSpec = InputSpec()
    sin_input: InputSpec = InputSpec()
    expect: Expect = Expect()
    standard: str | None = None         # None: the run's standard (--standard, else "default")
    tolerance: tuple[tuple[str, float], ...] = ()   # standard parameters, e.g. (("rtol", 1e-3),)
    tags: tuple[str, ...] = ()
    # Extensions for negative cases (tensors the operator must refuse):
    format: str = "ND"                  # aclFormat of all three tensors (key of FORMATS)
    null: tuple[str, ...] = ()          # tensors passed as NULL pointers: subset of TENSORS
    dy_strides: tuple[int, ...] | None = None   # element strides of dy (None = contiguous)

    def input_spec(self, tensor: str) -> InputSpec:
        return {"dy": self.dy_input, "cos": self.cos_input, "sin": self.sin_input}[tensor]
