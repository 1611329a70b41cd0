"""The ctypes binding to an installed CANN toolkit (or the host emulator, which has the same ABI).

Only the functions of ``acl-abi.md`` are called, each with its exact prototype. One ``AclSession`` per
worker process holds a device, a stream and a workspace; ``launch`` runs one case of any operator of
``ops.OPERATORS``:

  the in-place tensor is uploaded inside a larger buffer  [ guard 32 KiB | data | guard >= 32 KiB ]
  (0xA5 bytes, data 512-aligned and rounded: ``vocab.GUARD_BYTES``, ``vocab.DATA_ALIGN``), cos and sin in
  buffers of their own, guarded the same way; a tensor the case views at a storage offset or through strides
  (``_layout``) is uploaded as its whole storage, the elements before the offset and between its rows holding guard
  bytes, and ``aclCreateTensor`` gets its offset and strides (the data straight from the caller's array, or through a
  pinned host buffer when the toolkit has ``aclrtMallocHost``; device buffers, and large pinned buffers, are kept for
  the next launch of the same size: a tensor's device address repeats from one case to the next of its size);
  ``...GetWorkspaceSize``; the workspace, guarded the same way, is filled with 0xFF bytes (NaN in every
  float dtype, as PyTorch's fill-uninitialized-memory mode does) before every launch but the determinism check's
  reuse (``kept_workspace``: as the launch before left it, as a caching allocator hands a block back); launch
  between two timeline events; synchronize; read everything back. Any guard byte that changed (the workspace's
  included), any change of cos's or sin's storage, any change of the in-place tensor's storage outside its
  view (before its offset, between its rows), and any change of it after a refused call is a breach of the
  in-place contract. An executor obtained but never launched is released with
  ``aclDestroyAclOpExecutor`` (a launch frees it), also when a refused first phase left one set (a
  pooled executor stays busy until then). A kernel fault is asynchronous: the launch returns 0 and the
  synchronization its status, after which the device is unusable in this process (``device_faulted``:
  the worker must be replaced); so is it after a runtime or device status from the operator's own calls
  (``status.is_refusal`` false: 507899 from the launch of a device a fault left unusable).
  ``ASCEND_OPP_PATH``, which nnopbase reads at call time (after ``$ASCEND_HOME_PATH/opp_latest``), is set to
  ``<toolkit root>/opp`` when unset, before ``aclInit``. On the host emulator, the faults that acted on
  each launch are read from its test hook ``prmg_emu_applied_faults`` (a real toolkit has none).
"""

from __future__ import annotations

import atexit
import ctypes
import math
import os
import time
from ctypes import POINTER, c_char_p, c_float, c_int, c_int32, c_int64, c_size_t, c_uint32, c_uint64, c_void_p
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import dtypes
from ..case import Case, contiguous_strides, storage_elements
from ..errors import PrmgError
from ..inputs.seeded import Inputs, recycled_empty
from ..ops import DEFAULT_OP, OPERATORS
from ..results import MS_PER_SECOND, is_time, plural
from ..status import describe, is_refusal
from ..vocab import ACL_FORMATS, DATA_ALIGN, GUARD_BYTES, GUARD_FILL, TENSORS, WORKSPACE_POISON
from .linkage import mapped_libraries, refuse_foreign, resolved_outside, taking, toolkit_places
from .toolkit import EMULATOR_HOOK, Toolkit, chips_not_shown, opp_variable, refuse_stub, toolkit_variable


@dataclass
class Outcome:
    """What one launch produced, read back from the device.

    status: 0, or the first non-zero aclnnStatus (from GetWorkspaceSize or the launch).
    contract_violations: human-readable breaches of the in-place contract seen on the device, e.g.
      "guard zone after dy changed at byte +0", "cos changed at (0, 3, 0, 17)".
    dy_changed: after a refused call, whether the in-place tensor's device storage differs from what was
      uploaded (for a strided tensor the storage itself, not a view of it, is compared); None after a
      successful call (the judge compares the result outside and inside the slice itself) or when not
      known (the judge then compares ``dy`` with the input).
    timings: milliseconds of "upload", "kernel" (launch to synchronize, wall time), "download".
    faults: the emulator faults that acted on the call (``prmg_emu_applied_faults``), None when the toolkit
      cannot say (a real one).
    path: the call path that produced it: "aclnn", or "geir" (graph mode: GE's statuses, and ``phase`` the
      ``vocab.GRAPH_PHASES`` key of the step that returned ``status``; for aclnn the judge reads the phase from
      ``failed_call``).
    """

    status: int
    failed_call: str = ""                 # the function that returned ``status`` ("" when 0)
    error_message: str = ""               # aclGetRecentErrMsg() after the failure, when any
    dy: np.ndarray | None = None          # the in-place tensor read back after the call (its dtype and shape)
    contract_violations: tuple[str, ...] = ()
    kernel_ms: float | None = None        # ACL event time of the launch
    workspace_size: int = 0
    dy_changed: bool | None = None
    timings: dict = field(default_factory=dict)
    faults: tuple[str, ...] | None = None
    path: str = "aclnn"
    phase: str = ""


class AclError(RuntimeError):
    """A runtime call failed: ``aclrtMalloc failed: 207001 ACL_ERROR_RT_MEMORY_ALLOCATION: <message>``.

    status is None for a constructor that returned NULL (aclCreateTensor, aclCreateIntArray).
    """

    def __init__(self, function: str, status: int | None, message: str = ""):
        self.function = function
        self.status = status
        self.message = message
        super().__init__(function, status, message)

    def __str__(self) -> str:
        text = f"{self.function} failed: " + ("returned NULL" if self.status is None else describe(self.status))
        return f"{text}: {self.message}" if self.message else text


SYNCHRONIZE = "aclrtSynchronizeStream"
ACL_MEM_MALLOC_HUGE_FIRST = 0
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
ACL_EVENT_TIME_LINE = 0x8
ACL_HBM_MEM = 1                      # aclrtMemAttr: the device's memory, huge and normal pages together
ACL_ERROR_REPEAT_INITIALIZE = 100002
MAX_RANGES_LISTED = 4
# Transfers of at least this many bytes go through pinned host buffers (when the toolkit has them).
PINNED_MIN_BYTES = 1 << 20
_GUARD_PATTERN = np.full(GUARD_BYTES + DATA_ALIGN, GUARD_FILL, np.uint8)      # the most guard bytes one zone has
_GUARD_WORD = np.uint64(int.from_bytes(bytes([GUARD_FILL]) * 8, "little"))   # eight guard bytes

_INT64_PTR = POINTER(c_int64)
# name: (restype, argtypes) -- acl-abi.md; aclError is int, aclnnStatus int32_t, enums 32-bit ints.
RUNTIME_PROTOTYPES = {
    "aclInit": (c_int, [c_char_p]),
    "aclFinalize": (c_int, []),
    "aclGetRecentErrMsg": (c_char_p, []),
    "aclrtGetDeviceCount": (c_int, [POINTER(c_uint32)]),
    "aclrtSetDevice": (c_int, [c_int32]),
    "aclrtResetDevice": (c_int, [c_int32]),
    "aclrtCreateStream": (c_int, [POINTER(c_void_p)]),
    "aclrtDestroyStream": (c_int, [c_void_p]),
    "aclrtSynchronizeStream": (c_int, [c_void_p]),
    "aclrtMalloc": (c_int, [POINTER(c_void_p), c_size_t, c_int]),
    "aclrtFree": (c_int, [c_void_p]),
    "aclrtMemcpy": (c_int, [c_void_p, c_size_t, c_void_p, c_size_t, c_int]),
    "aclrtMemset": (c_int, [c_void_p, c_size_t, c_int32, c_size_t]),
    "aclrtGetSocName": (c_char_p, []),
    "aclrtMallocHost": (c_int, [POINTER(c_void_p), c_size_t]),
    "aclrtFreeHost": (c_int, [c_void_p]),
    "aclrtGetMemInfo": (c_int, [c_int, POINTER(c_size_t), POINTER(c_size_t)]),
}
EVENT_PROTOTYPES = {
    "aclrtCreateEvent": (c_int, [POINTER(c_void_p)]),
    "aclrtCreateEventWithFlag": (c_int, [POINTER(c_void_p), c_uint32]),
    "aclrtRecordEvent": (c_int, [c_void_p, c_void_p]),
    "aclrtSynchronizeEvent": (c_int, [c_void_p]),
    "aclrtDestroyEvent": (c_int, [c_void_p]),
    "aclrtEventElapsedTime": (c_int, [POINTER(c_float), c_void_p, c_void_p]),
}
NNOPBASE_PROTOTYPES = {
    "aclCreateTensor": (c_void_p, [_INT64_PTR, c_uint64, c_int, _INT64_PTR, c_int64, c_int, _INT64_PTR,
                                   c_uint64, c_void_p]),
    "aclDestroyTensor": (c_int32, [c_void_p]),
    "aclCreateIntArray": (c_void_p, [_INT64_PTR, c_uint64]),
    "aclDestroyIntArray": (c_int32, [c_void_p]),
    "aclDestroyAclOpExecutor": (c_int32, [c_void_p]),
}
# The two phases every operator of the family shares (ops/spec.py).
_GET_WORKSPACE_PROTOTYPE = (c_int32, [c_void_p, c_void_p, c_void_p, c_int64, c_void_p, POINTER(c_uint64),
                                      POINTER(c_void_p)])
_LAUNCH_PROTOTYPE = (c_int32, [c_void_p, c_uint64, c_void_p, c_void_p])
OP_PROTOTYPES = {name: prototype for spec in OPERATORS.values()
                 for name, prototype in ((spec.get_workspace, _GET_WORKSPACE_PROTOTYPE),
                                         (spec.launch, _LAUNCH_PROTOTYPE))}
# The host emulator's test hook in the operator library: the faults that acted on the calling thread's last
# GetWorkspaceSize and launch, comma-separated (runners/emulator/README.md); no real toolkit has it.
APPLIED_FAULTS = EMULATOR_HOOK
EMULATOR_HOOKS = {APPLIED_FAULTS: (c_char_p, [])}
# Without these a launch still runs: no kernel time (events), no error text, no SoC name, no release of an
# unlaunched executor (older toolkits), no pinned host buffers, no other operator than the grad, no record of
# injected faults (every real toolkit).
OPTIONAL = frozenset({"aclGetRecentErrMsg", "aclrtGetSocName", "aclDestroyAclOpExecutor", "aclrtMallocHost",
                      "aclrtFreeHost", "aclrtGetMemInfo", APPLIED_FAULTS, *EVENT_PROTOTYPES,
                      *(name for spec in OPERATORS.values() if not spec.required for name in (spec.get_workspace,
                                                                                                spec.launch))})


# ---------------------------------------------------------------------------------------------------------
# Loading (once per process and library set) and aclInit (once per process and runtime)

class _Api:
    """The toolkit's functions with their prototypes declared, as attributes named like the C functions."""

    def __init__(self, toolkit: Toolkit):
        for path in (toolkit.runtime_lib, toolkit.nnopbase_lib, toolkit.op_lib):
            refuse_stub(path)
        before = mapped_libraries()
        runtime = _load(toolkit.runtime_lib, ctypes.RTLD_GLOBAL)
        nnopbase = _load(toolkit.nnopbase_lib, ctypes.RTLD_GLOBAL)
        op = _load(toolkit.op_lib, ctypes.RTLD_LOCAL)
        refuse_foreign(toolkit.root, before)   # another toolkit's libraries gave them dependencies of its own
        for library, path, prototypes in ((runtime, toolkit.runtime_lib, RUNTIME_PROTOTYPES),
                                          (runtime, toolkit.runtime_lib, EVENT_PROTOTYPES),
                                          (nnopbase, toolkit.nnopbase_lib, NNOPBASE_PROTOTYPES),
                                          (op, toolkit.op_lib, OP_PROTOTYPES),
                                          (op, toolkit.op_lib, EMULATOR_HOOKS)):
            for name, (restype, argtypes) in prototypes.items():
                setattr(self, name, _declare(library, path, name, restype, argtypes, name not in OPTIONAL))
        _refuse_outside(self, toolkit)
        self.has_events = all(getattr(self, name) is not None for name in EVENT_PROTOTYPES
                              if name != "aclrtCreateEventWithFlag")
        if self.aclGetRecentErrMsg is not None:     # a message is only ever the call's own that set it
            for prototypes in (RUNTIME_PROTOTYPES, EVENT_PROTOTYPES, NNOPBASE_PROTOTYPES, OP_PROTOTYPES):
                for name in prototypes:
                    if name != "aclGetRecentErrMsg" and getattr(self, name) is not None:
                        setattr(self, name, _drained(self.aclGetRecentErrMsg, getattr(self, name)))

    def recent_error(self) -> str:
        """aclGetRecentErrMsg(), or "" when there is none."""
        message = self.aclGetRecentErrMsg() if self.aclGetRecentErrMsg is not None else None
        return message.decode(errors="replace").strip() if message else ""

    def applied_faults(self) -> tuple[str, ...] | None:
        """The emulator faults that acted on this thread's last call of an operator, None without the hook."""
        if self.prmg_emu_applied_faults is None:
            return None
        names = self.prmg_emu_applied_faults() or b""
        return tuple(name for name in names.decode(errors="replace").split(",") if name)

    def check(self, function: str, status: int) -> None:
        """Raise AclError when a runtime call returned a non-zero aclError."""
        if status != 0:
            raise AclError(function, status, self.recent_error())


def _refuse_outside(api: _Api, toolkit: Toolkit) -> None:
    """PrmgError naming each function of the ABI that ``api`` holds whose code lies outside ``toolkit``'s folders
    (``linkage.resolved_outside``): a runtime library that only forwards, its code found in another toolkit's folder
    (through a RUNPATH, ``LD_LIBRARY_PATH``, ``LD_PRELOAD``), runs that toolkit under this one's name."""
    functions = {name: getattr(api, name) for prototypes in (RUNTIME_PROTOTYPES, EVENT_PROTOTYPES,
                                                             NNOPBASE_PROTOTYPES, OP_PROTOTYPES)
                 for name in prototypes if getattr(api, name) is not None}
    outside = resolved_outside(functions, toolkit_places(toolkit))
    if outside:
        named = "; ".join(f"{name} in {file}" for name, file in outside[:MAX_RANGES_LISTED])
        more = f" and {len(outside) - MAX_RANGES_LISTED} more" if len(outside) > MAX_RANGES_LISTED else ""
        raise PrmgError(f"the toolkit at {toolkit.root} runs code from outside it: {named}{more} (the symbols its "
                        f"libraries gave resolve into other files: another toolkit's folder on a RUNPATH, "
                        f"LD_LIBRARY_PATH or LD_PRELOAD?); source the toolkit's own set_env.sh")


def _drained(drain, function):
    """``function`` called right after ``drain`` (``aclGetRecentErrMsg``, which takes the message it returns): a
    message an earlier call set and nobody read (a refused probe, a call whose failure needs no text) is dropped
    before each call, so that the message read after a failure is that call's own, or none."""
    def call(*args):
        drain()
        return function(*args)

    call.__name__ = function.__name__
    return call


def _load(path: Path, mode: int) -> ctypes.CDLL:
    try:
        return ctypes.CDLL(str(path), mode=mode)
    except OSError as error:
        raise PrmgError(f"cannot load {path}: {error} (a real toolkit needs its set_env.sh sourced so that "
                        f"LD_LIBRARY_PATH finds its dependencies)") from None


def _declare(library: ctypes.CDLL, path: Path, name: str, restype, argtypes, required: bool):
    try:
        function = getattr(library, name)
    except AttributeError:
        if required:
            raise PrmgError(f"{path} does not export {name}") from None
        return None
    function.restype = restype
    function.argtypes = argtypes
    return function


_APIS: dict[tuple[Path, Path, Path], _Api] = {}
_INITIALISED: dict[Path, _Api] = {}     # runtime library -> api whose aclInit succeeded in this process


def prepare_environment(toolkit: Toolkit) -> None:
    """Apply the toolkit's ``env`` (the emulator's modes) and set ``ASCEND_OPP_PATH`` to ``<root>/opp`` when it is unset
    (nnopbase and GE read it at call time), before any of the toolkit's libraries is loaded; ``ASCEND_OPP_PATH`` and
    ``ASCEND_HOME_PATH`` (where nnopbase looks for ``opp_latest``) are handed over with ``~`` expanded
    (``toolkit.toolkit_variable``), so that the toolkit reads the folders prmg found it in and stamps."""
    os.environ.update(dict(toolkit.env))
    os.environ["ASCEND_OPP_PATH"] = str(opp_variable(toolkit))
    if os.environ.get("ASCEND_HOME_PATH"):
        os.environ["ASCEND_HOME_PATH"] = toolkit_variable("ASCEND_HOME_PATH", os.environ)


def _api(toolkit: Toolkit) -> _Api:
    """The loaded libraries of ``toolkit``, aclInit done (100002 "repeat initialise" counts as done), after
    ``prepare_environment``."""
    prepare_environment(toolkit)
    key = (toolkit.runtime_lib, toolkit.nnopbase_lib, toolkit.op_lib)
    if key not in _APIS:
        _APIS[key] = _Api(toolkit)
    api = _APIS[key]
    if toolkit.runtime_lib not in _INITIALISED:
        status = api.aclInit(None)
        if status not in (0, ACL_ERROR_REPEAT_INITIALIZE):
            raise AclError("aclInit", status, api.recent_error())
        _INITIALISED[toolkit.runtime_lib] = api
    return api


@atexit.register
def finalize_all() -> None:
    """aclFinalize every runtime this process initialised (also run at interpreter exit; a worker that
    leaves through os._exit, as multiprocessing children do, calls it itself)."""
    for api in _INITIALISED.values():
        api.aclFinalize()
    _INITIALISED.clear()


# ---------------------------------------------------------------------------------------------------------
# Resources released on every path

class _Scope:
    """Releases what was acquired, newest first, on leaving the ``with`` block -- errors included.

    A failing release raises only when nothing else is already propagating (the first error wins) and
    the device has not faulted (``device_faulted``: after an AI Core exception releases fail too, and
    the fault, not the release, is what the caller must see).
    """

    def __init__(self) -> None:
        self._releases: list = []
        self.device_faulted = False

    def on_exit(self, release, *args) -> None:
        self._releases.append((release, args))

    def __enter__(self) -> "_Scope":
        return self

    def __exit__(self, exc_type, exc, traceback) -> bool:
        first_error = None
        while self._releases:
            release, args = self._releases.pop()
            try:
                release(*args)
            except AclError as error:
                first_error = first_error or error
        if first_error is not None and exc_type is None and not self.device_faulted:
            raise first_error
        return False


# ---------------------------------------------------------------------------------------------------------
# Device buffers with guard zones

def _round_up(size: int, multiple: int) -> int:
    return -(-size // multiple) * multiple


@dataclass
class _GuardedBuffer:
    """One device allocation laid out as [guard | values | guard] (``total`` bytes, every guard byte
    ``GUARD_FILL`` as uploaded); ``staging`` is the pinned host image it went through, if any."""

    name: str
    base: int                   # device address of the allocation
    values: np.ndarray          # the uploaded values, 1-D, in their own dtype
    total: int
    staging: np.ndarray | None = None
    after: np.ndarray | None = None                       # the values read back
    guards: tuple[np.ndarray, np.ndarray] | None = None   # the guard zones read back (before, after)

    @property
    def data_address(self) -> int:
        return self.base + GUARD_BYTES

    def values_after(self) -> np.ndarray:
        """The values as read back (after the download)."""
        return self.after

    def guard_violations(self) -> list[str]:
        """Changed guard bytes as ranges, offsets relative to the data's first / one-past-last byte."""
        before, after = self.guards
        if _intact(before) and _intact(after):
            return []
        return (_describe_ranges(f"guard zone before {self.name} changed",
                                 np.flatnonzero(before != GUARD_FILL) - GUARD_BYTES)
                + _describe_ranges(f"guard zone after {self.name} changed", np.flatnonzero(after != GUARD_FILL)))

    def value_violations(self, layout: "_Layout") -> list[str]:
        """``name changed at (b, s, n, d), first of K elements`` when a value of the view ``layout`` changed, and
        ``_outside_view``'s line when storage around it did."""
        if same_bytes(self.values, self.after):
            return []
        return (_first_change(self.name, _from_storage(self.values, layout), _from_storage(self.after, layout),
                              layout.view_dims) + _outside_view(self.name, self.values, self.after, layout))


_memcmp = None


def same_bytes(first: np.ndarray, second: np.ndarray) -> bool:
    """Whether two C-contiguous arrays hold the same bytes (libc ``memcmp``: no temporaries, the GIL released)."""
    global _memcmp
    if first.nbytes != second.nbytes:
        return False
    if _memcmp is None:
        _memcmp = ctypes.CDLL(None).memcmp
        _memcmp.restype, _memcmp.argtypes = c_int, [c_void_p, c_void_p, c_size_t]
    if not (first.flags.c_contiguous and second.flags.c_contiguous):
        return bool(np.array_equal(dtypes.bits(first).ravel(), dtypes.bits(second).ravel()))
    return first.nbytes == 0 or _memcmp(first.ctypes.data, second.ctypes.data, first.nbytes) == 0


def _intact(zone: np.ndarray) -> bool:
    """Whether every byte of the guard zone ``zone`` (uint8) holds ``GUARD_FILL``, compared in 8-byte words."""
    words = zone.size // 8
    return bool((zone[:words * 8].view(np.uint64) == _GUARD_WORD).all() and (zone[words * 8:] == GUARD_FILL).all())


def _describe_ranges(prefix: str, offsets: np.ndarray) -> list[str]:
    """``prefix at byte +0 (4 bytes, through +3)`` for each run of consecutive offsets."""
    if offsets.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(offsets) != 1) + 1
    runs = np.split(offsets, breaks)
    lines = []
    for run in runs[:MAX_RANGES_LISTED]:
        first, last = int(run[0]), int(run[-1])
        line = f"{prefix} at byte {first:+d}"
        if last != first:
            line += f" ({plural(last - first + 1, 'byte')}, through {last:+d})"
        lines.append(line)
    if len(runs) > MAX_RANGES_LISTED:
        lines.append(f"{prefix} in {len(runs) - MAX_RANGES_LISTED} more ranges "
                     f"({plural(sum(run.size for run in runs), 'byte')} in all)")
    return lines


def _first_change(name: str, before: np.ndarray, after: np.ndarray, shape: tuple[int, ...]) -> list[str]:
    """``name changed at (b, s, n, d), first of K elements`` when the bit patterns differ."""
    changed = np.flatnonzero(dtypes.bits(before).ravel() != dtypes.bits(after).ravel())
    if changed.size == 0:
        return []
    index = tuple(int(i) for i in np.unravel_index(int(changed[0]), shape)) if shape else ()
    return [f"{name} changed at {index}, first of {plural(changed.size, 'element')}"]


@dataclass(frozen=True)
class _Layout:
    """How one tensor is described to aclCreateTensor (element strides and storage offset; storage in elements)."""

    view_dims: tuple[int, ...]
    strides: tuple[int, ...]
    storage_dims: tuple[int, ...]
    storage_elements: int
    offset: int = 0

    @property
    def plain(self) -> bool:
        """Whether the storage is exactly the view's C-order elements (no offset, no gaps): uploaded as is."""
        return self.offset == 0 and self.storage_dims == self.view_dims


def _contiguous_layout(shape: tuple[int, ...]) -> _Layout:
    """C-contiguous element strides: stride[i] = prod(shape[i+1:]) (0 before a zero dim; CANN treats
    every empty tensor as contiguous whatever its strides)."""
    return _Layout(tuple(shape), contiguous_strides(shape), tuple(shape), math.prod(shape))


def _layout(case: Case, tensor: str) -> _Layout:
    """``tensor``'s view as ``case`` describes it (``case.strides_of``, ``case.offset_of``): the plain contiguous
    layout, or a 1-D storage of ``case.storage_elements`` elements whose view starts ``offset`` elements in."""
    shape, strides, offset = tuple(case.shape_of(tensor)), case.strides_of(tensor), case.offset_of(tensor)
    plain = _contiguous_layout(shape)
    if strides is None and offset == 0:
        return plain
    strides = plain.strides if strides is None else tuple(strides)
    if len(strides) != len(shape) or any(stride < 0 for stride in strides):
        raise PrmgError(f"{tensor}_strides {list(strides)} must be {len(shape)} non-negative element strides",
                        file=case.source, case=case.name, field=f"{tensor}_strides")
    elements = storage_elements(case, tensor)
    return _Layout(shape, strides, (elements,), elements, offset)


def _to_storage(values: np.ndarray, layout: _Layout) -> np.ndarray:
    """The storage elements holding ``values`` at the positions ``layout`` maps them to; the elements before its
    offset and the gaps between them hold guard bytes (``GUARD_FILL``)."""
    if layout.plain:
        return values.reshape(-1)
    storage = np.empty(layout.storage_elements, dtype=values.dtype)
    storage.view(np.uint8)[...] = GUARD_FILL
    if values.size:
        _view(storage, layout)[...] = values
    return storage


def _from_storage(storage: np.ndarray, layout: _Layout) -> np.ndarray:
    """The view's values read from ``storage`` (a new C-contiguous array of the view's shape)."""
    return storage.reshape(layout.view_dims) if layout.plain else _view(storage, layout).copy()


def _outside_view(name: str, before: np.ndarray, after: np.ndarray, layout: _Layout) -> list[str]:
    """``dy storage changed before its offset (3 elements) at element 1, first of 2`` / ``dy storage changed outside
    its view (strides [...]) at element k, first of N``: storage elements that the view ``layout`` does not reach
    (before its offset, between its rows) and that changed."""
    if layout.plain:
        return []
    covered = np.zeros(layout.storage_elements, bool)
    if covered.size and 0 not in layout.view_dims:
        _view(covered, layout)[...] = True
    changed = np.flatnonzero(~covered & (dtypes.bits(before) != dtypes.bits(after)))
    if changed.size == 0:
        return []
    first = int(changed[0])
    where = (f"before its offset ({plural(layout.offset, 'element')})" if first < layout.offset
             else f"outside its view (strides {list(layout.strides)})")
    return [f"{name} storage changed {where} at element {first}, first of {changed.size}"]


def _view(storage: np.ndarray, layout: _Layout) -> np.ndarray:
    """``storage`` seen through ``layout`` (view dims and element strides, from its offset). An axis of one element
    never steps: its stride, which may be any (2**62 times an item's bytes is past numpy's int64), is taken as 0."""
    if storage.size == 0 or 0 in layout.view_dims:
        return np.zeros(layout.view_dims, dtype=storage.dtype)
    itemsize = storage.dtype.itemsize
    return np.lib.stride_tricks.as_strided(storage[layout.offset:], shape=layout.view_dims, strides=tuple(
        stride * itemsize if dim > 1 else 0 for dim, stride in zip(layout.view_dims, layout.strides)))


def _shaped(values: np.ndarray, dtype_name: str, shape: tuple[int, ...], case: Case, tensor: str) -> np.ndarray:
    """``values`` as a contiguous array of dtype ``dtype_name`` and shape ``shape``."""
    array = np.ascontiguousarray(values, dtype=dtypes.to_numpy(dtype_name))
    if array.size != math.prod(shape):
        raise PrmgError(f"{tensor} has {plural(array.size, 'value')} but shape {list(shape)} needs "
                        f"{math.prod(shape)}", file=case.source, case=case.name, field="inputs")
    return array.reshape(shape)


def _int64_array(values) -> ctypes.Array:
    return (c_int64 * len(values))(*values)


# ---------------------------------------------------------------------------------------------------------
# The session

def free_device_memory(get_mem_info) -> int | None:
    """The free bytes of the calling thread's device, ``get_mem_info(ACL_HBM_MEM, &free, &total)`` (the runtime's
    ``aclrtGetMemInfo``, bound as ``RUNTIME_PROTOTYPES`` declares it); None when it is missing or refuses."""
    free, total = c_size_t(), c_size_t()
    if get_mem_info is None or get_mem_info(ACL_HBM_MEM, ctypes.byref(free), ctypes.byref(total)):
        return None
    return int(free.value)


class AclSession:
    """One device, stream and workspace of one toolkit, for one worker process. Use as a context manager."""

    path = "aclnn"                  # the call path its results name (``runners``)

    def __init__(self, toolkit: Toolkit, device: int = 0):
        self.toolkit = toolkit
        self.device = device
        self._api = _api(toolkit)
        self._stream: int | None = None
        self._workspace: _Workspace | None = None
        self._kept: dict[str, tuple[int, int]] = {}            # role -> (device base, bytes), between launches
        self._pinned: dict[str, tuple[int, np.ndarray]] = {}   # role -> (host address, its bytes)
        self._readback: dict = {}                               # recycled read-back arrays (seeded.recycled_empty)
        self.device_faulted = False         # a kernel faulted: the device is unusable in this process
        status = self._api.aclrtSetDevice(device)
        if status != 0:
            message, hidden = self._api.recent_error(), self._hiding(device)
            raise AclError("aclrtSetDevice", status, "; ".join(part for part in (message, hidden) if part))
        stream = c_void_p()
        status = self._api.aclrtCreateStream(ctypes.byref(stream))
        if status != 0:
            error = AclError("aclrtCreateStream", status, self._api.recent_error())
            self._api.aclrtResetDevice(device)
            raise error
        self._stream = stream.value

    def _hiding(self, device: int) -> str:
        """Why ``device`` cannot be opened when ``$ASCEND_RT_VISIBLE_DEVICES`` hides it (``toolkit.chips_not_shown``:
        ``-1``, or a chip the host lacks, names more chips than the runtime shows and ``device`` is past them), else
        "": a plain run on device 0 under ``-1`` said only ``invalid device id 0``."""
        try:
            count = _device_count(self._api)
        except AclError:
            return ""
        return (chips_not_shown(count) or "") if device >= count else ""

    def __enter__(self) -> "AclSession":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        """Free the workspace, destroy the stream and release the device (idempotent)."""
        if self._stream is None:
            return
        stream, self._stream = self._stream, None
        freed = self._api.aclrtFree(self._workspace.base) if self._workspace else 0
        self._workspace = None
        for base, _ in self._kept.values():
            freed = self._api.aclrtFree(base) or freed
        for address, _ in self._pinned.values():
            freed = self._api.aclrtFreeHost(address) or freed
        self._kept.clear()
        self._pinned.clear()
        destroyed = self._api.aclrtDestroyStream(stream)
        reset = self._api.aclrtResetDevice(self.device)
        self._api.check("aclrtFree", freed)
        self._api.check("aclrtDestroyStream", destroyed)
        self._api.check("aclrtResetDevice", reset)

    def device_count(self) -> int:
        """aclrtGetDeviceCount()."""
        return _device_count(self._api)

    def memory_mark(self) -> tuple[int, int] | None:
        """(free bytes of the device's memory, ``free_device_memory``; the bytes prmg itself keeps on the device
        between launches: the workspace and the kept buffers) now, or None when the runtime cannot say."""
        free = free_device_memory(self._api.aclrtGetMemInfo)
        if free is None:
            return None
        held = sum(size for _, size in self._kept.values())
        return free, held + (self._workspace.size + 2 * GUARD_BYTES if self._workspace else 0)

    def soc_name(self) -> str:
        """aclrtGetSocName() (e.g. ``Ascend950PR``), "" when the runtime cannot say."""
        if self._api.aclrtGetSocName is None:
            return ""
        name = self._api.aclrtGetSocName()
        return name.decode(errors="replace") if name else ""

    def accepted_modes(self, op_name: str = DEFAULT_OP) -> tuple[int, ...] | None:
        """The rotary modes 0..3 whose first phase ``op_name``'s operator accepts on a small valid case
        (dy float32 [1, 1, 1, 4], slice [0, 4), cos/sin [1, 1, 1, 4]): what the toolkit implements, as far as its
        checks tell. Each executor is released unlaunched; None when the toolkit cannot release one
        (``aclDestroyAclOpExecutor`` missing: asking would leak them) or lacks the operator."""
        api, op = self._api, OPERATORS[op_name]
        get_workspace = getattr(api, op.get_workspace)
        if api.aclDestroyAclOpExecutor is None or get_workspace is None:
            return None
        self._check_open()
        shape = (1, 1, 1, 4)
        accepted = []
        with _Scope() as scope:
            tensors = [self._tensor(scope, _contiguous_layout(shape), "float32", ACL_FORMATS["ND"],
                                    self._upload(role, np.zeros(shape, np.float32)))
                       for role in ("probe_x", "probe_cos", "probe_sin")]
            piece = api.aclCreateIntArray(_int64_array((0, 4)), 2)
            if not piece:
                raise AclError("aclCreateIntArray", None, api.recent_error())
            scope.on_exit(api.aclDestroyIntArray, piece)
            for mode in range(4):
                size, executor = c_uint64(0), c_void_p()
                status = get_workspace(*tensors, mode, piece, ctypes.byref(size), ctypes.byref(executor))
                self._release_executor(executor)
                if status == 0:
                    accepted.append(mode)
        return tuple(accepted)

    def _check_open(self) -> None:
        if self._stream is None:
            raise PrmgError("the ACL session is closed")

    # -- one case ------------------------------------------------------------------------------------

    def launch(self, case: Case, inputs: Inputs, *, kept_workspace: bool = False) -> Outcome:
        """Run ``case``'s operator on ``inputs`` as ``case`` describes them and read everything back.

        Operator statuses are returned in the Outcome; runtime failures raise AclError. A failed
        synchronization (a kernel fault) sets ``device_faulted``: nothing more can run in this process.
        ``kept_workspace``: the workspace is not poisoned first when the launch before asked for as many bytes (it
        holds what that launch left, as a caching allocator hands a block back: the determinism check's reuse).
        """
        self._check_open()
        api, op = self._api, OPERATORS[case.op]
        get_workspace, run = getattr(api, op.get_workspace), getattr(api, op.launch)
        if get_workspace is None or run is None:
            raise PrmgError(f"{self.toolkit.op_lib} does not export {op.get_workspace} and {op.launch} "
                            f"(the {op.title} operator)", file=case.source, case=case.name, field="op")
        values = {"dy": _shaped(inputs.dy, case.dtype, case.shape, case, "dy"),
                  "cos": _shaped(inputs.cos, case.cos_dtype, case.cos_shape, case, "cos"),
                  "sin": _shaped(inputs.sin, case.sin_dtype, case.sin_shape, case, "sin")}
        layouts = {tensor: _layout(case, tensor) for tensor in TENSORS}
        storages = {tensor: _to_storage(values[tensor], layouts[tensor]) for tensor in TENSORS}
        dy_layout, dy_storage = layouts["dy"], storages["dy"]
        acl_format = ACL_FORMATS[case.format]
        timings: dict[str, float] = {}

        with _Scope() as scope:
            began = time.perf_counter()
            buffers = {tensor: self._upload(op.tensor if tensor == "dy" else tensor, storages[tensor])
                       for tensor in TENSORS}
            dy_buffer, cos_buffer, sin_buffer = buffers.values()
            timings["upload"] = (time.perf_counter() - began) * 1e3
            tensors = {tensor: self._tensor(scope, layouts[tensor], case.dtype_of(tensor), acl_format, buffers[tensor])
                       for tensor in TENSORS}
            for name in case.null:
                tensors[name] = None
            slice_values = case.slice_argument()
            partial_slice = None
            if slice_values is not None:
                partial_slice = api.aclCreateIntArray(_int64_array(slice_values), len(slice_values))
                if not partial_slice:
                    raise AclError("aclCreateIntArray", None, api.recent_error())
                scope.on_exit(api.aclDestroyIntArray, partial_slice)

            workspace_size, executor = c_uint64(0), c_void_p()
            status = get_workspace(tensors["dy"], tensors["cos"], tensors["sin"], case.rotary_mode, partial_slice,
                                   ctypes.byref(workspace_size), ctypes.byref(executor))
            failed_call, kernel_ms, workspace = "", None, None
            if status != 0:
                failed_call, message = op.get_workspace, api.recent_error()
                self._release_executor(executor)        # a refused first phase may leave a busy executor set
            else:
                began = time.perf_counter()
                workspace = self._prepared_workspace(workspace_size.value, executor, kept_workspace)
                timings["upload"] += (time.perf_counter() - began) * 1e3        # poisoning the workspace
                began = time.perf_counter()
                status, failed_call, message, kernel_ms = self._run(scope, run, op.launch, workspace,
                                                                    workspace_size.value, executor)
                timings["kernel"] = (time.perf_counter() - began) * 1e3
            faults = api.applied_faults()
            if failed_call == SYNCHRONIZE:                  # the device faulted: nothing can be read back
                scope.device_faulted = self.device_faulted = True
                return Outcome(status, failed_call, message, workspace_size=workspace_size.value, timings=timings,
                               faults=faults)

            began = time.perf_counter()
            for buffer in buffers.values():
                self._download(buffer)
            violations = [line for buffer in buffers.values() for line in buffer.guard_violations()]
            if workspace is not None:
                violations += workspace.guard_violations(self)
            violations += cos_buffer.value_violations(layouts["cos"])
            violations += sin_buffer.value_violations(layouts["sin"])
            if status != 0 and not is_refusal(status):      # the runtime or device failed, not the operator
                self.device_faulted = True
            after = dy_buffer.values_after()
            dy_after = _from_storage(after, dy_layout)
            if status == 0:
                violations += _outside_view(dy_buffer.name, dy_storage, after, dy_layout)
            # after a refused call the storage must be untouched; after a success the judge compares the result
            changed = None if status == 0 else not same_bytes(after, dy_storage)
            timings["download"] = (time.perf_counter() - began) * 1e3
            return Outcome(status, failed_call, message, dy_after, tuple(violations), kernel_ms,
                           workspace_size.value, changed, timings, faults)

    def _prepared_workspace(self, size: int, executor: c_void_p, kept: bool = False) -> "_Workspace | None":
        """The session's workspace for a launch needing ``size`` bytes, poisoned (0xFF) -- unless ``kept`` and the
        launch before used ``size`` bytes of it: then as that launch left it -- and its guards intact; None when
        ``size`` is 0. Should this fail, the unlaunched ``executor`` is released."""
        if size == 0:
            return None
        try:
            if self._workspace is None or self._workspace.size < size:
                if self._workspace is not None:
                    self._free(self._workspace.base)
                    self._workspace = None
                self._workspace = _Workspace.allocate(self, size)
            if not (kept and self._workspace.used == size):
                self._workspace.poison(self, size)
            return self._workspace
        except BaseException:
            self._release_executor(executor)
            raise

    def _release_executor(self, executor: c_void_p) -> None:
        """aclDestroyAclOpExecutor for an executor that will never be launched (when the toolkit has it)."""
        if executor.value and self._api.aclDestroyAclOpExecutor is not None:
            self._api.aclDestroyAclOpExecutor(executor)

    def _run(self, scope: _Scope, run, launch_name: str, workspace: "_Workspace | None", workspace_size: int,
             executor: c_void_p):
        """Launch between two timeline events and synchronize: (status, failed call, message, kernel ms)."""
        api = self._api
        try:
            events = self._timing_events(scope)
        except BaseException:
            self._release_executor(executor)
            raise
        timed = events is not None and api.aclrtRecordEvent(events[0], self._stream) == 0
        status = run(workspace.data_address if workspace else None, workspace_size, executor, self._stream)
        if status != 0:
            message = api.recent_error()
            api.aclrtSynchronizeStream(self._stream)
            return status, launch_name, message, None
        timed = timed and api.aclrtRecordEvent(events[1], self._stream) == 0
        sync = api.aclrtSynchronizeStream(self._stream)
        if sync != 0:
            return sync, SYNCHRONIZE, api.recent_error(), None
        kernel_ms = None
        if timed and api.aclrtSynchronizeEvent(events[1]) == 0:
            elapsed = c_float()
            if api.aclrtEventElapsedTime(ctypes.byref(elapsed), events[0], events[1]) == 0 \
                    and is_time(elapsed.value, MS_PER_SECOND):       # a negative or endless time is no time
                kernel_ms = float(elapsed.value)
        return 0, "", "", kernel_ms

    def _timing_events(self, scope: _Scope) -> tuple[int, int] | None:
        """Two events for the kernel time (timeline flag when available), or None when events fail."""
        api = self._api
        if not api.has_events:
            return None
        events = []
        for _ in range(2):
            event = c_void_p()
            status = -1
            if api.aclrtCreateEventWithFlag is not None:
                status = api.aclrtCreateEventWithFlag(ctypes.byref(event), ACL_EVENT_TIME_LINE)
            if status != 0:
                status = api.aclrtCreateEvent(ctypes.byref(event))
            if status != 0:
                return None
            scope.on_exit(self._destroy_event, event.value)
            events.append(event.value)
        return events[0], events[1]

    # -- runtime helpers ---------------------------------------------------------------------------

    def _malloc(self, size: int) -> int:
        """aclrtMalloc of ``size`` bytes (its owner frees it)."""
        pointer = c_void_p()
        self._api.check("aclrtMalloc", self._api.aclrtMalloc(ctypes.byref(pointer), size,
                                                             ACL_MEM_MALLOC_HUGE_FIRST))
        return pointer.value

    def _free(self, pointer: int) -> None:
        self._api.check("aclrtFree", self._api.aclrtFree(pointer))

    def _destroy_event(self, event: int) -> None:
        self._api.check("aclrtDestroyEvent", self._api.aclrtDestroyEvent(event))

    def _destroy_tensor(self, tensor: int) -> None:
        status = self._api.aclDestroyTensor(tensor)
        if status != 0:
            raise AclError("aclDestroyTensor", status, self._api.recent_error())

    def _copy(self, destination: int, source: int, size: int, kind: int) -> None:
        """aclrtMemcpy of ``size`` bytes."""
        self._api.check("aclrtMemcpy", self._api.aclrtMemcpy(destination, size, source, size, kind))

    def _upload(self, name: str, values: np.ndarray) -> _GuardedBuffer:
        """Allocate [guard | values, 512-rounded | >= guard] and copy it to the device in one copy of a host image:
        pinned (kept for the next launch) when the toolkit has pinned memory and the values are large, else a plain
        array; without pinned memory, a large buffer's guards come from a constant pattern and its values straight
        from their array (three copies, no image of their size)."""
        values = np.ascontiguousarray(values).reshape(-1)
        data = values.view(np.uint8)
        total = GUARD_BYTES + _round_up(data.size, DATA_ALIGN) + GUARD_BYTES
        base = self._device_buffer(name, total)
        staging = self._pinned_image(name, total) if data.size >= PINNED_MIN_BYTES else np.empty(total, np.uint8)
        end = GUARD_BYTES + data.size
        if staging is not None:
            staging[:GUARD_BYTES] = GUARD_FILL
            staging[GUARD_BYTES:end] = data
            staging[end:] = GUARD_FILL
            self._copy(base, staging.ctypes.data, total, ACL_MEMCPY_HOST_TO_DEVICE)
        else:
            self._copy(base, _GUARD_PATTERN.ctypes.data, GUARD_BYTES, ACL_MEMCPY_HOST_TO_DEVICE)
            if data.size:
                self._copy(base + GUARD_BYTES, data.ctypes.data, data.size, ACL_MEMCPY_HOST_TO_DEVICE)
            self._copy(base + end, _GUARD_PATTERN.ctypes.data, total - end, ACL_MEMCPY_HOST_TO_DEVICE)
        return _GuardedBuffer(name, base, values, total, staging)

    def _download(self, buffer: _GuardedBuffer) -> None:
        """Read the buffer back: its values into a new array (``buffer.after``), its guard zones apart."""
        size = buffer.values.nbytes
        end = GUARD_BYTES + size
        after = recycled_empty(("readback", buffer.name), (buffer.values.size,), buffer.values.dtype, self._readback)
        if buffer.staging is not None:
            staging = buffer.staging
            self._copy(staging.ctypes.data, buffer.base, buffer.total, ACL_MEMCPY_DEVICE_TO_HOST)
            np.copyto(after.view(np.uint8), staging[GUARD_BYTES:end])
            buffer.guards = (staging[:GUARD_BYTES].copy(), staging[end:].copy())
        else:
            before, behind = np.empty(GUARD_BYTES, np.uint8), np.empty(buffer.total - end, np.uint8)
            self._copy(before.ctypes.data, buffer.base, GUARD_BYTES, ACL_MEMCPY_DEVICE_TO_HOST)
            if size:
                self._copy(after.ctypes.data, buffer.base + GUARD_BYTES, size, ACL_MEMCPY_DEVICE_TO_HOST)
            self._copy(behind.ctypes.data, buffer.base + end, behind.size, ACL_MEMCPY_DEVICE_TO_HOST)
            buffer.guards = (before, behind)
        buffer.after = after

    def _device_buffer(self, role: str, total: int) -> int:
        """A device allocation of ``total`` bytes for ``role``, kept for the next launch asking the same size for the
        same role (freed by ``close``): a tensor's device address repeats from one case to the next of its size, as a
        framework's caching allocator hands addresses back, so that a kernel caching what it derived from its inputs
        by their address (the emulator's ``table_address_cache``) meets new values at an old address."""
        kept = self._kept.get(role)
        if kept is not None and kept[1] == total:
            return kept[0]
        if kept is not None:
            del self._kept[role]
            self._free(kept[0])
        base = self._malloc(total)
        self._kept[role] = (base, total)
        return base

    def _pinned_image(self, role: str, total: int) -> np.ndarray | None:
        """A pinned host buffer of ``total`` bytes for ``role`` (``aclrtMallocHost``, kept for the next launch
        of the same size; freed by ``close``), or None when the toolkit has no pinned memory."""
        api = self._api
        if api.aclrtMallocHost is None or api.aclrtFreeHost is None:
            return None
        pinned = self._pinned.get(role)
        if pinned is not None and pinned[1].size == total:
            return pinned[1]
        if pinned is not None:
            del self._pinned[role]
            api.check("aclrtFreeHost", api.aclrtFreeHost(pinned[0]))
        pointer = c_void_p()
        api.check("aclrtMallocHost", api.aclrtMallocHost(ctypes.byref(pointer), total))
        image = np.ctypeslib.as_array((ctypes.c_uint8 * total).from_address(pointer.value))
        self._pinned[role] = (pointer.value, image)
        return image

    def _tensor(self, scope: _Scope, layout: _Layout, dtype_name: str, acl_format: int,
                buffer: _GuardedBuffer) -> int:
        tensor = self._api.aclCreateTensor(
            _int64_array(layout.view_dims), len(layout.view_dims), dtypes.lookup(dtype_name).acl_code,
            _int64_array(layout.strides), layout.offset, acl_format, _int64_array(layout.storage_dims),
            len(layout.storage_dims), buffer.data_address)
        if not tensor:
            raise AclError("aclCreateTensor", None, self._api.recent_error())
        scope.on_exit(self._destroy_tensor, tensor)
        return tensor


@dataclass
class _Workspace:
    """A session's workspace, kept across launches: one allocation [guard | ``size`` bytes | guard] (``GUARD_BYTES``
    each). Before each launch the ``used`` bytes the operator asked for are set to 0xFF (poison) and the
    rest of the allocation holds the guard pattern 0xA5, so a write past ``used`` is seen."""

    base: int
    size: int
    used: int = 0

    @property
    def data_address(self) -> int:
        return self.base + GUARD_BYTES

    @classmethod
    def allocate(cls, session: AclSession, size: int) -> "_Workspace":
        """A new workspace of ``size`` bytes (rounded up to 512) with its guard zones written."""
        size = _round_up(size, DATA_ALIGN)
        workspace = cls(session._malloc(size + 2 * GUARD_BYTES), size)
        session._api.check("aclrtMemset", session._api.aclrtMemset(workspace.base, size + 2 * GUARD_BYTES,
                                                                   GUARD_FILL, size + 2 * GUARD_BYTES))
        return workspace

    def poison(self, session: AclSession, used: int) -> None:
        """Fill ``[0, used)`` with ``WORKSPACE_POISON`` and ``[used, size)`` with the guard pattern."""
        api = session._api
        if used < self.used:
            api.check("aclrtMemset", api.aclrtMemset(self.data_address + used, self.size - used, GUARD_FILL,
                                                     self.used - used))
        self.used = used
        api.check("aclrtMemset", api.aclrtMemset(self.data_address, self.size, WORKSPACE_POISON, used))

    def _guards(self) -> tuple[tuple[str, int, int], tuple[str, int, int]]:
        """(label, device address, length) of the zone before the workspace and of the one after ``used``."""
        return (("before", self.base, GUARD_BYTES),
                ("after", self.data_address + self.used, self.size - self.used + GUARD_BYTES))

    def guard_violations(self, session: AclSession) -> list[str]:
        """``guard zone after workspace changed at byte +0 (...)`` for each changed run of guard bytes (offsets
        from the workspace's first byte, or from one past the ``used`` bytes); changed zones are rewritten."""
        lines = []
        for label, address, length in self._guards():
            host = np.empty(length, np.uint8)
            session._copy(host.ctypes.data, address, length, ACL_MEMCPY_DEVICE_TO_HOST)
            changed = np.zeros(0, np.int64) if _intact(host) else np.flatnonzero(host != GUARD_FILL)
            if changed.size:
                lines += _describe_ranges(f"guard zone {label} workspace changed",
                                          changed - GUARD_BYTES if label == "before" else changed)
                session._api.check("aclrtMemset", session._api.aclrtMemset(address, length, GUARD_FILL, length))
        if lines:
            lines[0] += f" (the kernel wrote outside the {self.used}-byte workspace it asked for)"
        return lines


def _device_count(api: _Api) -> int:
    count = c_uint32(0)
    api.check("aclrtGetDeviceCount", api.aclrtGetDeviceCount(ctypes.byref(count)))
    return int(count.value)


def preloads(toolkit: Toolkit) -> list:
    """``linkage.taking`` of a process that loaded ``toolkit``'s libraries as a worker does (no device touched):
    what a header names before any worker starts (the pytest plugin's)."""
    prepare_environment(toolkit)
    for path in (toolkit.runtime_lib, toolkit.nnopbase_lib):
        _load(path, ctypes.RTLD_GLOBAL)
    _load(toolkit.op_lib, ctypes.RTLD_LOCAL)
    return taking(toolkit)


# The longest a ``probe`` or ``preloads`` run in a child (``execute.call_in_child``) may take, in seconds: a wedged
# device hangs it.
PROBE_TIMEOUT = 120


def probe(toolkit: Toolkit) -> dict:
    """What ``prmg doctor`` reports about ``toolkit``: libraries loaded, operator symbols, device count.

    Never raises: problems are listed under "errors".
    """
    report: dict = {"kind": toolkit.kind, "root": str(toolkit.root),
                    "libraries": {"runtime": str(toolkit.runtime_lib), "nnopbase": str(toolkit.nnopbase_lib),
                                  "operator": str(toolkit.op_lib)},
                    "op_lib_source": toolkit.op_lib_source, "loaded": [], "symbols": {},
                    "device_count": None, "errors": []}
    try:
        for path in (toolkit.runtime_lib, toolkit.nnopbase_lib, toolkit.op_lib):
            refuse_stub(path)
        for path in (toolkit.runtime_lib, toolkit.nnopbase_lib):
            _load(path, ctypes.RTLD_GLOBAL)
            report["loaded"].append(str(path))
        op = _load(toolkit.op_lib, ctypes.RTLD_LOCAL)
        report["loaded"].append(str(toolkit.op_lib))
        report["symbols"] = {name: hasattr(op, name) for name in OP_PROTOTYPES}
        api = _api(toolkit)
        report["device_count"] = _device_count(api)
        name = api.aclrtGetSocName() if api.aclrtGetSocName is not None else None
        report["soc"] = name.decode(errors="replace") if name else ""
    except (PrmgError, AclError) as error:
        report["errors"].append(str(error))
    return report
