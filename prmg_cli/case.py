"""The ``Case`` value -- one fully resolved test case -- and the values it holds: how a tensor's inputs are made,
what the operator must return, the defect it is known to meet. The model floor: plain values, no numpy, read
by every layer above (the loader ``cases.loader`` makes them). And a case's sizes: the elements of a shape
(``element_count``) and of a tensor's storage (``storage_elements``), Python integers of any size; the strides of
a contiguous view (``contiguous_strides``), and what its strides make of a view (``expanded_axes``, ``transposed``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .status import describe
from .vocab import DEFAULT_GENERATOR, DEFAULT_OP, MODE_NAMES, SLICE, TENSORS


@dataclass(frozen=True)
class InputSpec:
    """How the values of one tensor are made.

    kind / args:
      uniform (lo, hi) | normal (mean, std) | values (flat C-order floats)
      | bits (flat C-order bit patterns of the tensor's dtype: NaN payloads and signs, -0.0, exactly)
      | file (absolute .npy path, the folder it must stay inside): a spec read from a case file names
        that file's folder; a spec made in code may give the path alone (no folder rule)
      | rope (base, offset)  -- cos/sin only: a real RoPE angle table laid out for the case's mode,
        positions starting at ``offset`` (an int, or a tuple of one per index of the table's B axis).
    """

    kind: str = "uniform"
    args: tuple = (-1.0, 1.0)


@dataclass(frozen=True)
class Expect:
    """What the operator must return: success (error is None), or one status code or "any" error, from the
    ``phase`` of ``vocab.PHASES`` that must return it (or "any" of the two)."""

    error: int | str | None = None
    phase: str | None = None        # None: ``workspace`` for a status (where operators validate), ``any`` for any

    def __post_init__(self) -> None:
        if self.phase is None and self.error is not None:
            object.__setattr__(self, "phase", "any" if self.error == "any" else "workspace")

    @property
    def success(self) -> bool:
        """True when the case expects the call to succeed (``error`` is None)."""
        return self.error is None


@dataclass(frozen=True)
class KnownDefect:
    """A defect the operator is known to have on a case (a strict xfail): ``reason``, and what the defect does
    -- the call returns ``status`` instead of what the case expects, or (``status`` None) it returns what is
    expected but its result is wrong within ``bounds`` (``defects.py``). Anything else going wrong is a failure
    like any other.

    ``behaves_as`` (only with ``status`` 0) says what the operator computes once the defect made it accept the
    call: the case's fields it then acts on, as ``(key, value)`` pairs (``()``: the case as written; e.g.
    ``(("rotary_mode", 1),)`` for a mode read as another). The accepted call's result is judged against the
    golden of the case with those fields (``judge``); None: not said, the result is not judged.
    """

    reason: str
    status: int | None = None
    behaves_as: tuple | None = None
    bounds: tuple = ()                  # a wrong result's bounds: (key, value) pairs of ``defects.BOUNDS``' keys

    def describe(self) -> str:
        """``reason (returns 0 SUCCESS)``, ``reason (returns 0 SUCCESS, then behaves as rotary_mode interleave)`` or
        ``reason (a wrong result within max_error_ulp 2, pattern odd_lanes)``."""
        if self.status is None:
            within = ", ".join(f"{key} {value:g}" if isinstance(value, float) else f"{key} {value}"
                               for key, value in self.bounds)
            return f"{self.reason} (a wrong result{' within ' + within if within else ''})"
        behaviour = f", then behaves as {self.behaviour()}" if self.behaves_as is not None else ""
        return f"{self.reason} (returns {describe(self.status)}{behaviour})"

    def behaviour(self) -> str:
        """``behaves_as`` as text: ``rotary_mode interleave``, ``the case as written`` ("" when not said)."""
        written = self.written_behaviour() or {}
        return ", ".join(f"{key} {value}" for key, value in written.items()) or \
            ("the case as written" if self.behaves_as is not None else "")

    def unjudged(self) -> str:
        """For a defect that makes the operator accept the call (``status`` 0) without saying what it then computes
        (``behaves_as``): the warning that the accepted call's result goes unjudged (``prmg validate`` gives it, and
        ``run`` on each call the defect made the operator accept, which ``--strict`` fails); else ""."""
        if self.status != 0 or self.behaves_as is not None:
            return ""
        return ("known_defect: status SUCCESS without behaves_as: the result of the accepted call is never judged; "
                "say what the operator then computes, e.g. behaves_as: {rotary_mode: interleave} ({} for the case as "
                "written)")

    def written_behaviour(self) -> dict | None:
        """``behaves_as`` as a case file writes it (a mode by its name); None when not said."""
        if self.behaves_as is None:
            return None
        return {key: MODE_NAMES.get(value, value) if key == "rotary_mode" else value for key, value in self.behaves_as}


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
    generator: str = DEFAULT_GENERATOR  # what draws the seeded inputs (vocab.GENERATORS, inputs/seeded.py)
    dy_input: InputSpec = InputSpec()
    cos_input: InputSpec = InputSpec()
    sin_input: InputSpec = InputSpec()
    expect: Expect = Expect()
    standard: str | None = None         # None: the run's standard (--standard, else "default")
    tolerance: tuple[tuple[str, float], ...] = ()   # standard parameters, e.g. (("rtol", 1e-3),)
    tags: tuple[str, ...] = ()
    # Extensions for negative cases (tensors the operator must refuse):
    format: str = "ND"                  # aclFormat of all three tensors (key of vocab.ACL_FORMATS)
    null: tuple[str, ...] = ()          # arguments passed as NULL pointers: subset of NULLABLE (tensors, the slice)
    dy_strides: tuple[int, ...] | None = None   # element strides of dy (None = contiguous)
    cos_strides: tuple[int, ...] | None = None  # element strides of cos (None = contiguous)
    sin_strides: tuple[int, ...] | None = None  # element strides of sin (None = contiguous)
    offsets: tuple[int, int, int] = (0, 0, 0)   # storage offsets (elements) of dy, cos, sin: views at an offset
    slice_list: tuple[int, ...] | None = None   # the list passed as partialSlice when it is not partial_slice
    builds: tuple[str, ...] = ()        # the upstream builds its expectation holds for (targets.BUILDS; (): every one)
    note: str | None = None             # one line: what the case pins
    partners_alike: str | None = None   # why its sin is alike at both lanes of every pair on purpose (no warning)
    op: str = DEFAULT_OP                # the operator (a key of ops.OPERATORS)
    known_defect: KnownDefect | None = None     # the defect the operator is known to meet (strict xfail)
    checks: tuple[str, ...] = ()        # golden-free checks to run as well (a subset of checks.CHECKS)
    golden: bool = True                 # False: judged by its checks alone
    correctness_unchecked: str | None = None    # why no check of correctness judges a golden: false case

    def input_spec(self, tensor: str) -> InputSpec:
        """How the values of ``tensor`` (``dy``, ``cos`` or ``sin``) are made."""
        return {"dy": self.dy_input, "cos": self.cos_input, "sin": self.sin_input}[tensor]

    def strides_of(self, tensor: str) -> tuple[int, ...] | None:
        """The element strides ``tensor`` (``dy``, ``cos`` or ``sin``) is viewed through; None: contiguous."""
        return {"dy": self.dy_strides, "cos": self.cos_strides, "sin": self.sin_strides}[tensor]

    def offset_of(self, tensor: str) -> int:
        """The storage offset (elements) of ``tensor``'s view: ``aclCreateTensor``'s ``offset``."""
        return self.offsets[TENSORS.index(tensor)]

    def expanded_axes(self, tensor: str) -> tuple[int, ...]:
        """The axes along which ``tensor``'s view repeats one storage row (``expanded_axes``; none when contiguous)."""
        strides = self.strides_of(tensor)
        return () if strides is None else expanded_axes(self.shape_of(tensor), strides)

    def dtype_of(self, tensor: str) -> str:
        """The dtype name of ``tensor`` (``dy``, ``cos`` or ``sin``)."""
        return {"dy": self.dtype, "cos": self.cos_dtype, "sin": self.sin_dtype}[tensor]

    def shape_of(self, tensor: str) -> tuple[int, ...]:
        """The view shape of ``tensor`` (``dy``, ``cos`` or ``sin``)."""
        return {"dy": self.shape, "cos": self.cos_shape, "sin": self.sin_shape}[tensor]

    def slice_argument(self) -> tuple[int, ...] | None:
        """What is passed as ``partialSlice``: None for a NULL pointer (``null: [partial_slice]``), else the list
        written (``slice_list``: any length), else ``partial_slice``'s two values."""
        if SLICE in self.null:
            return None
        return self.slice_list if self.slice_list is not None else tuple(self.partial_slice)


# What a check's own launches reset: every tensor contiguous, at offset 0 (the probes' layout).
CONTIGUOUS_STORAGE = {"dy_strides": None, "cos_strides": None, "sin_strides": None, "offsets": (0, 0, 0)}


def element_count(shape: Sequence[int]) -> int:
    """The number of elements of a tensor of ``shape`` (negative dims count as 0)."""
    count = 1
    for dim in shape:
        count *= max(int(dim), 0)
    return count


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """The C-order (contiguous) element strides of ``shape``: stride[i] = prod(shape[i+1:])."""
    strides, step = [], 1
    for dim in reversed(shape):
        strides.append(step)
        step *= dim
    return tuple(reversed(strides))


def expanded_axes(shape: Sequence[int], strides: Sequence[int]) -> tuple[int, ...]:
    """The axes of length > 1 whose stride is 0: torch's ``expand`` (``cos[None, :, None].expand(B, -1, N, -1)``),
    every index along them reading the same storage elements (none for an empty view)."""
    if any(dim <= 0 for dim in shape):
        return ()
    return tuple(axis for axis, (dim, stride) in enumerate(zip(shape, strides)) if dim > 1 and stride == 0)


def transposed(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether the view's axes walk its storage out of their order: the strides of its axes of length > 1 (stride-0
    ones aside) do not fall from the first axis to the last, as ``q.transpose(1, 2)`` of a BNSD q, a BSND view whose
    S steps by D and N by S*D (``[B, S, N, D]`` at strides ``[N*S*D, D, S*D, 1]``)."""
    steps = [stride for dim, stride in zip(shape, strides) if dim > 1 and stride != 0]
    return any(earlier < later for earlier, later in zip(steps, steps[1:]))


def storage_elements(case: Case, tensor: str = "dy") -> int:
    """The elements ``tensor``'s storage holds (``case.shape_of``, ``strides_of``, ``offset_of``): its offset, plus
    its size for a contiguous view, or ``1 + sum((dim - 1) * stride)`` for a strided one (0 for an empty view)."""
    shape, strides = case.shape_of(tensor), case.strides_of(tensor)
    if strides is None:
        reach = element_count(shape)
    else:
        reach = 0 if any(dim <= 0 for dim in shape) else \
            1 + sum((dim - 1) * stride for dim, stride in zip(shape, strides))
    return case.offset_of(tensor) + reach
