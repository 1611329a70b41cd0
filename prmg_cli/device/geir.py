"""The ctypes binding to graph mode's library (``runners/geir/prmg_geir.h``: the GE shim, or the emulator's twin).

One ``GeirSession`` per worker process: ``prmg_geir_initialize`` once per process and library (GEInitialize with the
device id; ``prmg_geir_finalize`` when its last session closes), then per case ``launch``, which hands the library
the case's host tensors and its IR's names (``OperatorSpec.graph``) and gets back GE's status, the phase and call
that returned it, GE's message and the ref output:

  every host buffer sits between guard zones  [ guard 512 B | data | guard 512 B ]  (0xA5 bytes, as on the aclnn
  path's device): dy, cos and sin as fed to the graph, and the buffer the ref output is copied into. Any guard byte
  that changed, any change of an input (dy included: in graph mode the ref output is a tensor of its own, and the
  caller's dy must be left alone), an output of another size, shape or dtype than dy's (InferShape) is a breach of
  the contract. A null tensor of the case is an input left unlinked. A strided dy is fed dense: GE's tensors have
  no strides (``constraints.graph_case`` skips the cases whose status the strides decide). The partial_slice
  attribute is the list the case passes as partialSlice (``Case.slice_argument``: any length), and a null one is
  left unset, so that the IR's default applies, as the generated aclnn layer applies the op definition's.

The library's statuses are GE's (``status.STATUS_NAMES``), refusals those of the build and compile phases
(``vocab.GRAPH_REFUSING``); a failure of the init phase (GE, its session, or AddGraph, which says FAILED whatever
went wrong, a session GE could not make included) or of the run phase means GE or the device failed: the session
is then unfit.
On the emulator, the faults that acted are its test hook's (``prmg_emu_applied_faults``, through the twin's links).

Device memory is read around each case as on the aclnn path (``memory_mark``, judged by ``execute.leak_warning``):
free bytes through the runtime GE initialised (``aclrtGetMemInfo``), and as held the device memory GE may keep
cached between graphs (its caching allocator): ``GE_CACHE_FACTOR`` times the largest graph's tensors so far.
"""

from __future__ import annotations

import atexit
import ctypes
import time
from ctypes import POINTER, c_char, c_char_p, c_double, c_int32, c_int64, c_uint32, c_uint64, c_void_p

import numpy as np

from .. import dtypes
from ..case import Case
from ..errors import PrmgError
from ..inputs.seeded import Inputs
from ..ops import OPERATORS
from ..ops.constraints import graph_case
from ..status import describe
from ..vocab import ACL_FORMATS, GRAPH_PHASES, GUARD_BYTES, GUARD_FILL
from .acl import (APPLIED_FAULTS, RUNTIME_PROTOTYPES, Outcome, _describe_ranges, _first_change, _load,
                  free_device_memory, prepare_environment, same_bytes)
from .toolkit import Toolkit, refuse_stub

ABI_VERSION = 2                      # PRMG_GEIR_ABI_VERSION
MAX_DIMS = 8                         # PRMG_GEIR_MAX_DIMS
INPUTS = 3
PHASES = ("", *GRAPH_PHASES)         # PRMG_GEIR_PHASE_*: 0 none, 1 init, 2 build, 3 compile, 4 run
# What GE may keep cached of a graph's device memory after RemoveGraph, per byte of its tensors (inputs and ref
# output): its caching allocator reuses blocks across graphs and rounds each up to a bin, at most doubling it.
GE_CACHE_FACTOR = 2


class _Tensor(ctypes.Structure):
    _fields_ = [("data", c_void_p), ("bytes", c_uint64), ("data_type", c_int32), ("format", c_int32),
                ("dim_count", c_uint32), ("dims", c_int64 * MAX_DIMS)]


class _Call(ctypes.Structure):
    _fields_ = [("op_type", c_char_p), ("input_names", c_char_p * INPUTS), ("output_name", c_char_p),
                ("inputs", _Tensor * INPUTS), ("mode_attr", c_char_p), ("rotary_mode", c_int64),
                ("slice_attr", c_char_p), ("partial_slice", POINTER(c_int64)), ("slice_count", c_uint64),
                ("output", c_void_p), ("output_capacity", c_uint64)]


class _Report(ctypes.Structure):
    _fields_ = [("status", c_uint32), ("phase", c_int32), ("call", c_char * 64), ("message", c_char * 4096),
                ("output_bytes", c_uint64), ("output_data_type", c_int32), ("output_dim_count", c_uint32),
                ("output_dims", c_int64 * MAX_DIMS), ("compile_ms", c_double), ("run_ms", c_double)]


PROTOTYPES = {
    "prmg_geir_abi_version": (c_uint32, []),
    "prmg_geir_initialize": (c_uint32, [c_int32, POINTER(_Report)]),
    "prmg_geir_run": (c_uint32, [POINTER(_Call), POINTER(_Report)]),
    "prmg_geir_finalize": (c_uint32, [POINTER(_Report)]),
}


_OPEN: dict = {}                    # library path -> sessions open on it in this process (GE is initialised once)
_LIBRARIES: dict = {}               # library path -> its ctypes handle, for ``_finalize_open``


@atexit.register
def _finalize_open() -> None:
    """At interpreter exit, ``prmg_geir_finalize`` on each library a session of this process left open: registered
    after ``acl.finalize_all`` (imported first), so run before it, GE ended before the runtime it started on. (The
    shim also ends GE in its own exit handler, for a caller that is not prmg, but after every Python one.)"""
    for path, count in list(_OPEN.items()):
        if count > 0:
            _OPEN[path] = 0
            _LIBRARIES[path].prmg_geir_finalize(ctypes.byref(_Report()))


class GeirError(PrmgError):
    """Graph mode could not start or end: ``prmg_geir_initialize failed: 145000 ACL_ERROR_GE_PARAM_INVALID: ...``."""


def _text(raw: bytes) -> str:
    return raw.decode(errors="replace").strip()


def _check(function: str, status: int, report: _Report) -> None:
    if status != 0:
        raise GeirError(f"{function} failed: {describe(status)}"
                        + (f": {_text(report.message)}" if report.message else ""))


class _HostBuffer:
    """One host tensor between guard zones: ``data`` is a view of the bytes the library sees."""

    def __init__(self, name: str, values: np.ndarray | None, nbytes: int | None = None):
        self.name = name
        self.values = None if values is None else np.ascontiguousarray(values)
        size = self.values.nbytes if self.values is not None else nbytes
        self.image = np.full(2 * GUARD_BYTES + size, GUARD_FILL, np.uint8)
        self.data = self.image[GUARD_BYTES:GUARD_BYTES + size]
        if self.values is not None:
            self.data[...] = self.values.reshape(-1).view(np.uint8)

    @property
    def address(self) -> int:
        return self.data.ctypes.data

    def guard_violations(self) -> list[str]:
        """Changed guard bytes as ranges, offsets from the data's first / one past its last byte."""
        before, after = self.image[:GUARD_BYTES], self.image[GUARD_BYTES + self.data.size:]
        return (_describe_ranges(f"guard zone before {self.name} changed", np.flatnonzero(before != GUARD_FILL)
                                 - GUARD_BYTES)
                + _describe_ranges(f"guard zone after {self.name} changed", np.flatnonzero(after != GUARD_FILL)))

    def after(self) -> np.ndarray:
        """The tensor's values now, in its dtype and shape."""
        return self.data.view(self.values.dtype).reshape(self.values.shape)

    def changed(self) -> bool:
        """Whether any byte of the tensor differs from what was fed."""
        return not same_bytes(self.values.reshape(-1).view(np.uint8), self.data)


def _tensor(buffer: _HostBuffer | None, values: np.ndarray, dtype_name: str, acl_format: int, case: Case,
            role: str) -> _Tensor:
    """The call's description of one input (data NULL for an input left unlinked)."""
    if values.ndim > MAX_DIMS:
        raise PrmgError(f"{role} has {values.ndim} dims: graph mode's library takes at most {MAX_DIMS} "
                        f"(prmg_geir.h)", file=case.source, case=case.name, field="shape" if role == "dy" else
                        f"{role}_shape")
    tensor = _Tensor(buffer.address if buffer is not None else None, values.nbytes, dtypes.lookup(dtype_name).acl_code,
                     acl_format, values.ndim)
    tensor.dims[:values.ndim] = values.shape
    return tensor


class GeirSession:
    """Graph mode on one device of one toolkit, for one worker process (module docstring)."""

    path = "geir"

    def __init__(self, toolkit: Toolkit, device: int = 0):
        if toolkit.geir_lib is None:
            raise PrmgError("graph mode's library was not resolved (runners.geir.with_graph_mode)")
        refuse_stub(toolkit.geir_lib, "graph-mode library")
        prepare_environment(toolkit)
        self.toolkit, self.device = toolkit, device
        self.device_faulted = False
        self._library = _load(toolkit.geir_lib, ctypes.RTLD_GLOBAL)
        for name, (restype, argtypes) in PROTOTYPES.items():
            try:
                function = getattr(self._library, name)
            except AttributeError:
                raise PrmgError(f"{toolkit.geir_lib} does not export {name}") from None
            function.restype, function.argtypes = restype, argtypes
        version = self._library.prmg_geir_abi_version()
        if version != ABI_VERSION:
            raise PrmgError(f"{toolkit.geir_lib} implements version {version} of prmg_geir.h, not {ABI_VERSION}: "
                            f"rebuild it (remove it from the cache)")
        hook = getattr(self._library, APPLIED_FAULTS, None)
        if hook is not None:
            hook.restype, hook.argtypes = c_char_p, []
        self._applied = hook
        self._mem_info = self._runtime("aclrtGetMemInfo")
        self._cached = 0                  # the device bytes GE may keep cached (module docstring)
        report = _Report()
        _check("prmg_geir_initialize", self._library.prmg_geir_initialize(device, ctypes.byref(report)), report)
        _OPEN[toolkit.geir_lib] = _OPEN.get(toolkit.geir_lib, 0) + 1
        _LIBRARIES[toolkit.geir_lib] = self._library
        self._open = True

    def __enter__(self) -> "GeirSession":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        """Close the session (idempotent): ``prmg_geir_finalize`` when it is the process's last on its library."""
        if getattr(self, "_open", False):
            self._open = False
            _OPEN[self.toolkit.geir_lib] -= 1
            if _OPEN[self.toolkit.geir_lib] == 0:
                report = _Report()
                _check("prmg_geir_finalize", self._library.prmg_geir_finalize(ctypes.byref(report)), report)

    def _runtime(self, name: str):
        """The runtime's function ``name`` as ``RUNTIME_PROTOTYPES`` declares it, None when it lacks it."""
        try:
            function = getattr(ctypes.CDLL(str(self.toolkit.runtime_lib)), name)
        except (OSError, AttributeError):
            return None
        function.restype, function.argtypes = RUNTIME_PROTOTYPES[name]
        return function

    def soc_name(self) -> str:
        """aclrtGetSocName() of the runtime GE initialised, "" when it cannot say."""
        function = self._runtime("aclrtGetSocName")
        name = function() if function is not None else None
        return name.decode(errors="replace") if name else ""

    def memory_mark(self) -> tuple[int, int] | None:
        """(free bytes of the device's memory, ``free_device_memory`` through the runtime GE initialised; the bytes
        GE may keep cached, ``GE_CACHE_FACTOR`` times the largest graph's tensors so far) now, or None when the
        runtime cannot say."""
        free = free_device_memory(self._mem_info)
        return None if free is None else (free, self._cached)

    def accepted_modes(self, op_name: str | None = None) -> None:
        """None: graph mode is not asked which modes it takes (a graph compile per mode)."""
        return None

    @staticmethod
    def judged_case(case: Case, supported_modes, soc: str | None = None) -> Case | str:
        """``case`` as graph mode must answer it on chip family ``soc``, or why it has no graph form
        (``constraints.graph_case``)."""
        return graph_case(case, supported_modes, soc)

    def launch(self, case: Case, inputs: Inputs, *, kept_workspace: bool = False) -> Outcome:
        """Build, compile and run ``case``'s graph on ``inputs`` and check every host buffer afterwards
        (``kept_workspace`` is aclnn's: GE allocates and fills the graph's workspace itself)."""
        if not self._open:
            raise PrmgError("the graph-mode session is closed")
        op = OPERATORS[case.op]
        graph = op.graph
        began = time.perf_counter()
        values = {"dy": np.asarray(inputs.dy, dtype=dtypes.to_numpy(case.dtype)).reshape(case.shape),
                  "cos": np.asarray(inputs.cos, dtype=dtypes.to_numpy(case.cos_dtype)).reshape(case.cos_shape),
                  "sin": np.asarray(inputs.sin, dtype=dtypes.to_numpy(case.sin_dtype)).reshape(case.sin_shape)}
        names = dict(zip(("dy", "cos", "sin"), graph.inputs))
        fed = {role: None if role in case.null else _HostBuffer(f"graph input {names[role]}", array)
               for role, array in values.items()}
        output = _HostBuffer(f"graph output {graph.output}", None, values["dy"].nbytes)
        acl_format = ACL_FORMATS[case.format]
        written = case.slice_argument()                # None: the attribute left unset (the IR's default)
        slice_values = None if written is None else (c_int64 * len(written))(*written)
        call = _Call(graph.op_type.encode(), (c_char_p * INPUTS)(*(name.encode() for name in graph.inputs)),
                     graph.output.encode(),
                     (_Tensor * INPUTS)(*(_tensor(fed[role], values[role], case.dtype_of(role), acl_format, case, role)
                                          for role in ("dy", "cos", "sin"))),
                     graph.mode_attr.encode(), case.rotary_mode, graph.slice_attr.encode(), slice_values,
                     len(written or ()), output.address, output.data.size)
        report = _Report()
        tensors = sum(buffer.data.size for buffer in (*fed.values(), output) if buffer is not None)
        self._cached = max(self._cached, GE_CACHE_FACTOR * tensors)
        timings = {"upload": (time.perf_counter() - began) * 1e3}
        status = self._library.prmg_geir_run(ctypes.byref(call), ctypes.byref(report))
        faults = self._faults()
        phase = PHASES[report.phase] if 0 <= report.phase < len(PHASES) else f"phase {report.phase}"
        timings.update(compile=report.compile_ms, kernel=report.run_ms)
        began = time.perf_counter()
        violations = [line for buffer in (*fed.values(), output) if buffer is not None
                      for line in buffer.guard_violations()]
        dy_input = fed["dy"]
        dy_changed = dy_input is not None and dy_input.changed()
        for role, buffer in fed.items():
            if buffer is not None and (role != "dy" or status == 0):
                violations += _first_change(buffer.name, buffer.values, buffer.after(), buffer.values.shape)
        result = None
        if status == 0:
            violations += self._output_problems(case, report, output)
            if report.output_bytes == output.data.size:
                result = output.data.view(values["dy"].dtype).reshape(case.shape).copy()
        elif phase in ("init", "run"):        # GE, its session or the device failed: the process is unfit
            self.device_faulted = True
        timings["download"] = (time.perf_counter() - began) * 1e3
        return Outcome(status, _text(report.call) if status else "", _text(report.message) if status else "",
                       result if status == 0 else (dy_input.after().copy() if dy_input is not None else None),
                       tuple(violations), None, 0, None if status == 0 else dy_changed, timings, faults,
                       path="geir", phase=phase if status else "")

    @staticmethod
    def _output_problems(case: Case, report: _Report, output: _HostBuffer) -> list[str]:
        """The ref output's contract (InferShape): dy's shape, dtype and size."""
        dims = list(report.output_dims[:min(report.output_dim_count, MAX_DIMS)])
        wanted = dtypes.lookup(case.dtype).acl_code
        problems = []
        if dims != list(case.shape) or report.output_data_type != wanted:
            problems.append(f"graph output {OPERATORS[case.op].graph.output} has shape {dims} and dtype "
                            f"{report.output_data_type}, not dy's {list(case.shape)} and {wanted} (InferShape)")
        if report.output_bytes != output.data.size:
            problems.append(f"graph output {OPERATORS[case.op].graph.output} is {report.output_bytes} bytes, not "
                            f"dy's {output.data.size}")
        return problems

    def _faults(self) -> tuple[str, ...] | None:
        """The emulator faults that acted on the last case (None without the hook: a real toolkit)."""
        if self._applied is None:
            return None
        names = self._applied() or b""
        return tuple(name for name in names.decode(errors="replace").split(",") if name)


def probe(toolkit: Toolkit) -> dict:
    """What ``prmg doctor`` reports about graph mode on ``toolkit``: its library, how it was made, and whether a
    session opens on device 0 (GE initialised and finalised). Never raises: problems are listed under "errors"."""
    report: dict = {"library": str(toolkit.geir_lib), "build": toolkit.geir_build, "errors": []}
    try:
        with GeirSession(toolkit, 0) as session:
            report["soc"] = session.soc_name()
    except PrmgError as error:
        report["errors"].append(str(error))
    return report
