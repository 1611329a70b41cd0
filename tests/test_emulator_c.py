"""The C host emulator (runners/emulator), driven directly through ctypes.

Builds the three libraries into a tmp folder with ``make -C runners/emulator OUT=...`` and checks the
runtime's faithfulness (init, devices, SoC name, device and pinned host memory, copy checks, 512-byte
granularity, events, executors), both operators' statuses (one per constraints row of operator.md for the
grad, of upstream's code for the forward), their float32 arithmetic and RNE rounding against numpy /
ml_dtypes, and that every fault name changes behaviour as described.
The small ctypes helper here is deliberately independent of ``prmg_cli/device/acl.py``.
"""

from __future__ import annotations

import ctypes
import faulthandler
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

SOURCES = Path(__file__).resolve().parent.parent / "runners" / "emulator"

FLOAT32, FLOAT16, INT32, BF16 = 0, 1, 3, 27
NUMPY_OF = {FLOAT32: np.float32, FLOAT16: np.float16, BF16: ml_dtypes.bfloat16, INT32: np.int32}
ND, NCHW, NHWC = 2, 0, 1
H2H, H2D, D2H, D2D = 0, 1, 2, 3
INVALID_PARAM, UNINITIALIZE, REPEAT_INITIALIZE = 100000, 100001, 100002
INVALID_DEVICE, CONTEXT_NULL = 107001, 107002
NULLPTR, PARAM_INVALID, INNER, TILING, OPP_PATH = 161001, 161002, 561000, 561002, 561107
AICORE_EXCEPTION, DEVICE_UNUSABLE = 507015, 507899
WORKSPACE = 16 << 20
OPS = {"grad": "aclnnInplacePartialRotaryMulGrad", "forward": "aclnnInplacePartialRotaryMul"}

P, I32, I64, U32, U64, SZ = (ctypes.c_void_p, ctypes.c_int32, ctypes.c_int64, ctypes.c_uint32,
                             ctypes.c_uint64, ctypes.c_size_t)
PROTOTYPES = {
    "libascendcl.so": {
        "aclInit": (I32, [ctypes.c_char_p]), "aclFinalize": (I32, []),
        "aclGetRecentErrMsg": (ctypes.c_char_p, []),
        "aclrtGetDeviceCount": (I32, [ctypes.POINTER(U32)]),
        "aclrtSetDevice": (I32, [I32]), "aclrtResetDevice": (I32, [I32]),
        "aclrtCreateStream": (I32, [ctypes.POINTER(P)]), "aclrtDestroyStream": (I32, [P]),
        "aclrtSynchronizeStream": (I32, [P]),
        "aclrtMalloc": (I32, [ctypes.POINTER(P), SZ, I32]), "aclrtFree": (I32, [P]),
        "aclrtMemcpy": (I32, [P, SZ, P, SZ, I32]), "aclrtMemset": (I32, [P, SZ, I32, SZ]),
        "aclrtCreateEvent": (I32, [ctypes.POINTER(P)]),
        "aclrtCreateEventWithFlag": (I32, [ctypes.POINTER(P), U32]),
        "aclrtRecordEvent": (I32, [P, P]), "aclrtSynchronizeEvent": (I32, [P]),
        "aclrtDestroyEvent": (I32, [P]),
        "aclrtEventElapsedTime": (I32, [ctypes.POINTER(ctypes.c_float), P, P]),
        "aclrtGetSocName": (ctypes.c_char_p, []),
        "aclrtMallocHost": (I32, [ctypes.POINTER(P), SZ]), "aclrtFreeHost": (I32, [P]),
        "prmg_emu_live_executors": (ctypes.c_int, []),
    },
    "libnnopbase.so": {
        "aclCreateTensor": (P, [ctypes.POINTER(I64), U64, I32, ctypes.POINTER(I64), I64, I32,
                                ctypes.POINTER(I64), U64, P]),
        "aclDestroyTensor": (I32, [P]),
        "aclCreateIntArray": (P, [ctypes.POINTER(I64), U64]), "aclDestroyIntArray": (I32, [P]),
        "aclDestroyAclOpExecutor": (I32, [P]),
    },
    "libopapi_transformer.so": {
        "aclnnInplacePartialRotaryMulGradGetWorkspaceSize": (I32, [P, P, P, I64, P, ctypes.POINTER(U64),
                                                                   ctypes.POINTER(P)]),
        "aclnnInplacePartialRotaryMulGrad": (I32, [P, U64, P, P]),
        "aclnnInplacePartialRotaryMulGetWorkspaceSize": (I32, [P, P, P, I64, P, ctypes.POINTER(U64),
                                                               ctypes.POINTER(P)]),
        "aclnnInplacePartialRotaryMul": (I32, [P, U64, P, P]),
        "prmg_emu_applied_faults": (ctypes.c_char_p, []),
    },
}


def int64s(values):
    return (I64 * len(values))(*values)


def contiguous_strides(shape):
    strides, step = [], 1
    for dim in reversed(shape):
        strides.insert(0, step)
        step *= dim
    return strides


class Emulator:
    """The three libraries with prototypes, plus the few composite steps the tests need."""

    def __init__(self, lib64: Path):
        self.fn = {}
        for library, functions in PROTOTYPES.items():
            handle = ctypes.CDLL(str(lib64 / library), mode=ctypes.RTLD_GLOBAL)
            for name, (restype, argtypes) in functions.items():
                function = getattr(handle, name)
                function.restype, function.argtypes = restype, argtypes
                self.fn[name] = function
        self.stream = None

    def __getattr__(self, name):
        return self.fn[name]

    def malloc(self, size):
        pointer = P()
        assert self.aclrtMalloc(ctypes.byref(pointer), size, 0) == 0
        return pointer.value

    def to_device(self, array, before=0, after=0):
        """A device buffer holding ``array`` at byte offset ``before``; returns (base, data address)."""
        data = np.ascontiguousarray(array)
        base = self.malloc(before + data.nbytes + after)
        assert self.aclrtMemcpy(base + before, data.nbytes, data.ctypes.data, data.nbytes, H2D) == 0
        return base, base + before

    def from_device(self, address, like):
        out = np.empty_like(like)
        assert self.aclrtMemcpy(out.ctypes.data, out.nbytes, address, out.nbytes, D2H) == 0
        return out

    def tensor(self, shape, dtype, data=None, strides=None, offset=0, fmt=ND):
        strides = contiguous_strides(shape) if strides is None else strides
        return self.aclCreateTensor(int64s(shape), len(shape), dtype, int64s(strides), offset, fmt,
                                    int64s(shape), len(shape), data)

    def workspace_size(self, dy, cos, sin, mode=1, partial_slice=(0, 0), size_out=True, executor_out=True,
                       op="grad"):
        """GetWorkspaceSize of ``op`` ("grad" or "forward") on tensor handles; returns (status, size, executor)."""
        array = None if partial_slice is None else self.aclCreateIntArray(int64s(partial_slice), len(partial_slice))
        size, executor = U64(), P()
        status = self.fn[OPS[op] + "GetWorkspaceSize"](
            dy, cos, sin, mode, array, ctypes.byref(size) if size_out else None,
            ctypes.byref(executor) if executor_out else None)
        if array is not None:
            self.aclDestroyIntArray(array)
        return status, size.value, executor.value

    def launch(self, workspace, size, executor, op="grad"):
        """The second phase of ``op``; its status."""
        return self.fn[OPS[op]](workspace, size, executor, self.stream)

    def run(self, dy, cos, sin, mode=1, partial_slice=None, fmt=ND, op="grad", workspace_fill=None,
            workspace_extra=0):
        """The whole sequence of ``op`` on numpy arrays (dy placed 512 bytes into its buffer, with a guard after).

        workspace_fill: a byte value the workspace is set to before the launch (None: as aclrtMalloc gives
        it, zeros); workspace_extra: bytes allocated past the size asked for.
        Returns (status, dy read back, cos read back, guard bytes after dy read back).
        """
        guard = np.full(512, 0xA5, np.uint8)
        dy_base, dy_data = self.to_device(np.concatenate([np.zeros(512, np.uint8), dy.view(np.uint8).ravel(), guard]))
        dy_data += 512
        cos_base, cos_data = self.to_device(cos)
        sin_base, sin_data = self.to_device(sin)
        tensors = [self.tensor(dy.shape, dtype_code(dy), dy_data, fmt=fmt),
                   self.tensor(cos.shape, dtype_code(cos), cos_data, fmt=fmt),
                   self.tensor(sin.shape, dtype_code(sin), sin_data, fmt=fmt)]
        status, size, executor = self.workspace_size(*tensors, mode, partial_slice, op=op)
        if status == 0:
            workspace = self.malloc(size + workspace_extra)
            if workspace_fill is not None:
                assert self.aclrtMemset(workspace, size + workspace_extra, workspace_fill, size + workspace_extra) == 0
            status = self.launch(workspace, size, executor, op)
            assert self.aclrtSynchronizeStream(self.stream) == 0
            self.aclrtFree(workspace)
        dy_out = self.from_device(dy_data, dy)
        cos_out = self.from_device(cos_data, cos)
        guard_out = self.from_device(dy_data + dy.nbytes, guard)
        for tensor in tensors:
            assert self.aclDestroyTensor(tensor) == 0
        for base in (dy_base, cos_base, sin_base):
            assert self.aclrtFree(base) == 0
        return status, dy_out, cos_out, guard_out

    def message(self):
        text = self.aclGetRecentErrMsg()
        return text.decode() if text else None

    def applied(self):
        """The test hook: the faults that acted on this thread's last first phase and launch."""
        return self.prmg_emu_applied_faults().decode()


def dtype_code(array):
    return {np.dtype(v): k for k, v in NUMPY_OF.items()}[array.dtype]


@pytest.fixture(scope="session")
def toolkit(tmp_path_factory):
    """A fresh `make OUT=...` build, to check its layout (never loaded: see ``emu``)."""
    out = tmp_path_factory.mktemp("emulator_toolkit")
    subprocess.run(["make", "-s", "-C", str(SOURCES), f"OUT={out}"], check=True)
    return out


@pytest.fixture(scope="session")
def emu(emulator):
    """The session's shared emulator build, loaded in this process.

    Loading a second build here would not be isolated: its libopapi_transformer.so would bind to the
    libascendcl.so already loaded under the same soname. So every in-process test uses the one build
    that prmg's own binding loads too, and aclInit may already have been called by another test.
    """
    emulator = Emulator(emulator.root / "lib64")
    assert emulator.aclInit(None) in (0, REPEAT_INITIALIZE)
    assert emulator.aclrtSetDevice(0) == 0
    stream = P()
    assert emulator.aclrtCreateStream(ctypes.byref(stream)) == 0
    emulator.stream = stream.value
    return emulator


@pytest.fixture
def env(monkeypatch, emulator):
    """Environment for the emulator, which reads PRMG_EMU_* and ASCEND_OPP_PATH at every GetWorkspaceSize
    (and PRMG_EMU_FAULT* at every launch): no faults, default modes, the build's own opp folder."""
    for name in ("PRMG_EMU_FAULT", "PRMG_EMU_FAULT_SHAPE", "PRMG_EMU_MODES", "PRMG_EMU_SOC"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ASCEND_OPP_PATH", str(emulator.root / "opp"))
    return monkeypatch


def in_child(action, timeout=10.0):
    """Runs ``action()`` in a forked copy of this process (libraries loaded, ACL initialised).

    Returns (signal that ended the child or 0, action's JSON-able result or None, or "hung" when it
    was still running after ``timeout`` seconds and got killed).
    """
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        faulthandler.disable()          # a child dying of a signal is the expected outcome here
        try:
            os.write(write_end, json.dumps(action()).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    deadline = time.monotonic() + timeout
    done, status = os.waitpid(pid, os.WNOHANG)
    while not done and time.monotonic() < deadline:
        time.sleep(0.01)
        done, status = os.waitpid(pid, os.WNOHANG)
    if not done:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(read_end)
        return 0, "hung"
    with os.fdopen(read_end, "rb") as pipe:
        output = pipe.read()
    return (os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0), (json.loads(output) if output else None)


# ---------------------------------------------------------------- golden (from operator.md) ----

def _float32_slice(x, cos, sin, start, end):
    """The slice [start, end) of ``x`` and cos/sin broadcast to it, in float32."""
    g = x[..., start:end].astype(np.float32)
    return g, np.broadcast_to(cos.astype(np.float32), g.shape), np.broadcast_to(sin.astype(np.float32), g.shape)


def _halves(rule, g, c, s, lo, hi):
    """``rule`` applied to the two halves of lanes [lo, hi) of g, c and s: (first half's result, second's)."""
    first, second = slice(lo, (lo + hi) // 2), slice((lo + hi) // 2, hi)
    return rule(g[..., first], g[..., second], c[..., first], c[..., second], s[..., first], s[..., second])


def _written(x, out, start, end):
    """``x`` with its slice [start, end) replaced by ``out`` rounded to x's dtype."""
    y = x.copy()
    y[..., start:end] = out.astype(x.dtype)
    return y


def golden(dy, cos, sin, mode, start, end):
    """dx per operator.md in float32 (two rounded products, one rounded sum), rounded to dy's dtype."""
    g, c, s = _float32_slice(dy, cos, sin, start, end)
    length = end - start
    half = length // 2

    def half_rule(g1, g2, c1, c2, s1, s2):
        return c1 * g1 + s2 * g2, c2 * g2 - s1 * g1

    if mode == 0:
        out = np.concatenate(_halves(half_rule, g, c, s, 0, length), axis=-1)
    elif mode == 1:
        out = np.empty_like(g)
        out[..., 0::2] = c[..., 0::2] * g[..., 0::2] + s[..., 1::2] * g[..., 1::2]
        out[..., 1::2] = c[..., 1::2] * g[..., 1::2] - s[..., 0::2] * g[..., 0::2]
    elif mode == 2:
        out = np.concatenate([*_halves(half_rule, g, c, s, 0, half), *_halves(half_rule, g, c, s, half, length)],
                             axis=-1)
    else:
        out = np.empty_like(g)
        out[..., 0::2], out[..., 1::2] = _halves(half_rule, g, c, s, 0, length)
    return _written(dy, out, start, end)


def forward_golden(x, cos, sin, mode, start, end):
    """y per operator.md's forward in float32, each element with its own sin, rounded to x's dtype.

    Per pair (i, j): y_i = c_i*x_i - s_i*x_j, y_j = c_j*x_j + s_j*x_i (two rounded products, one rounded
    sum); interleave-half reads x interleaved, z = cat(x[0::2], x[1::2]), and writes y in half layout.
    """
    g, c, s = _float32_slice(x, cos, sin, start, end)
    length = end - start
    half = length // 2

    def half_rule(x1, x2, c1, c2, s1, s2):
        return c1 * x1 - s1 * x2, c2 * x2 + s2 * x1

    if mode == 0:
        out = np.concatenate(_halves(half_rule, g, c, s, 0, length), axis=-1)
    elif mode == 1:
        out = np.empty_like(g)
        out[..., 0::2] = c[..., 0::2] * g[..., 0::2] - s[..., 0::2] * g[..., 1::2]
        out[..., 1::2] = c[..., 1::2] * g[..., 1::2] + s[..., 1::2] * g[..., 0::2]
    elif mode == 2:
        out = np.concatenate([*_halves(half_rule, g, c, s, 0, half), *_halves(half_rule, g, c, s, half, length)],
                             axis=-1)
    else:
        z = np.concatenate((g[..., 0::2], g[..., 1::2]), axis=-1)
        out = np.concatenate(_halves(half_rule, z, c, s, 0, length), axis=-1)
    return _written(x, out, start, end)


def random_case(shape, cos_shape, dtype=np.float32, table_dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    dy = rng.uniform(-1, 1, shape).astype(dtype)
    cos = rng.uniform(-1, 1, cos_shape).astype(table_dtype)
    sin = rng.uniform(-1, 1, cos_shape).astype(table_dtype)
    return dy, cos, sin


def bits(array):
    return np.ascontiguousarray(array).view(f"u{array.dtype.itemsize}")


# ---------------------------------------------------------------- build and runtime ----------

@pytest.mark.xdist_group("emulator_c_build")             # one worker, one build of the fixture
def test_build_is_laid_out_like_a_toolkit(toolkit):
    for library in PROTOTYPES:
        assert (toolkit / "lib64" / library).is_file()
    assert (toolkit / "opp" / "vendors").is_dir()
    set_env = (toolkit / "set_env.sh").read_text()
    assert f'ASCEND_HOME_PATH="{toolkit}"' in set_env and "ASCEND_OPP_PATH" in set_env
    assert not list(SOURCES.glob("*.so")) and not list(SOURCES.glob("*.o"))


@pytest.mark.xdist_group("emulator_c_build")
def test_build_writes_the_version_files_of_a_toolkit(toolkit):
    arch = os.uname().machine
    info = dict(line.split("=", 1) for line in
                (toolkit / f"{arch}-linux" / "ascend_toolkit_install.info").read_text().splitlines())
    assert info == {"package_name": "Ascend-cann-toolkit", "version": "8.5.0-emulator", "innerversion": "prmg-emulator",
                    "arch": arch, "os": "linux", "path": f"{toolkit}/{arch}-linux"}
    cfg = (toolkit / "version.cfg").read_text().splitlines()
    assert cfg[0] == "# version: 1.0"
    assert "runtime_running_version=[8.5.0-emulator:8.5.0-emulator]" in cfg
    assert "toolkit_running_version=[8.5.0-emulator:8.5.0-emulator]" in cfg
    driver = (toolkit / "driver" / "version.info").read_text().splitlines()
    assert driver[0] == "Version=8.5.0-emulator"


def test_lint_is_clean():
    subprocess.run(["make", "-s", "-C", str(SOURCES), "lint"], check=True)


def test_init_twice_fails(emu):
    assert emu.aclInit(None) == REPEAT_INITIALIZE
    assert "twice" in emu.message()


def test_recent_error_message_is_consumed_on_read(emu):
    assert emu.aclrtSetDevice(99) == INVALID_DEVICE
    assert "99" in emu.message()
    assert emu.message() is None


def test_runtime_before_init_and_devices(emu):
    def lifecycle():
        def device_count():
            count = U32()
            assert emu.aclrtGetDeviceCount(ctypes.byref(count)) == 0
            return count.value

        assert emu.aclFinalize() == 0
        out = {"count_before_init": emu.aclrtGetDeviceCount(ctypes.byref(U32())),
               "finalize_again": emu.aclFinalize()}
        os.environ.update(PRMG_EMU_DEVICES="4", ASCEND_RT_VISIBLE_DEVICES="1,3")
        out["init"] = emu.aclInit(None)
        out["count"] = device_count()
        out["malloc_without_device"] = emu.aclrtMalloc(ctypes.byref(P()), 512, 0)
        out["stream_without_device"] = emu.aclrtCreateStream(ctypes.byref(P()))
        out["bad_device"] = emu.aclrtSetDevice(2)
        out["last_device"] = emu.aclrtSetDevice(1)
        del os.environ["PRMG_EMU_DEVICES"], os.environ["ASCEND_RT_VISIBLE_DEVICES"]
        emu.aclFinalize()
        emu.aclInit(None)
        out["default_count"] = device_count()
        return out

    assert in_child(lifecycle) == (0, {
        "count_before_init": UNINITIALIZE, "finalize_again": 100037, "init": 0, "count": 2,
        "malloc_without_device": CONTEXT_NULL, "stream_without_device": CONTEXT_NULL,
        "bad_device": INVALID_DEVICE, "last_device": 0, "default_count": 1})


def test_host_dereference_of_device_address_faults(emu):
    address = emu.malloc(4096)
    assert in_child(lambda: ctypes.string_at(address + 512, 4).hex()) == (signal.SIGSEGV, None)
    assert in_child(lambda: ctypes.memset(address, 0, 1) and "wrote") == (signal.SIGSEGV, None)
    emu.aclrtFree(address)


def test_allocations_are_512_byte_granular(emu):
    small = emu.malloc(1)
    assert small % 512 == 0
    block = np.arange(1024, dtype=np.uint8)
    assert emu.aclrtMemcpy(small, 512, block.ctypes.data, 512, H2D) == 0
    assert emu.aclrtMemcpy(small, 513, block.ctypes.data, 513, H2D) == INVALID_PARAM
    assert "past the end" in emu.message()
    larger = emu.malloc(513)
    assert emu.aclrtMemcpy(larger, 1024, block.ctypes.data, 1024, H2D) == 0
    assert emu.aclrtMemcpy(larger, 1025, block.ctypes.data, 1025, H2D) == INVALID_PARAM
    for pointer in (small, larger):
        assert emu.aclrtFree(pointer) == 0
    assert emu.aclrtFree(small) == INVALID_PARAM
    assert emu.aclrtMalloc(ctypes.byref(P()), 0, 0) == INVALID_PARAM


def test_an_allocation_reads_as_zeros_though_a_freed_one_of_its_size_left_bytes(emu):
    """A small freed allocation's bytes are kept for the next allocation of its size (no page faults), zeroed:
    it reads as a fresh mapping does, and its address is device memory a host dereference faults on."""
    size = (32 << 10) * 2 + 512                               # a small tensor's buffer with its guard zones
    written = np.full(size, 0x5A, np.uint8)
    for _ in range(2):
        first = emu.malloc(size)
        assert emu.aclrtMemcpy(first, size, written.ctypes.data, size, H2D) == 0
        assert emu.aclrtFree(first) == 0
        again = emu.malloc(size)
        assert not emu.from_device(again, np.empty(size, np.uint8)).any()
        assert in_child(lambda: ctypes.string_at(again, 4).hex()) == (signal.SIGSEGV, None)
        assert emu.aclrtFree(again) == 0


def test_memcpy_kind_and_size_checks(emu):
    host = np.arange(256, dtype=np.uint8)
    back = np.zeros(256, dtype=np.uint8)
    device = emu.malloc(1024)
    other = emu.malloc(1024)
    h, b = host.ctypes.data, back.ctypes.data
    assert emu.aclrtMemcpy(device, 100, h, 101, H2D) == INVALID_PARAM          # count > destMax
    assert emu.aclrtMemcpy(device, 256, device, 256, H2D) == INVALID_PARAM     # src is device memory
    assert emu.aclrtMemcpy(b, 256, h, 256, H2D) == INVALID_PARAM               # dst is not device memory
    assert emu.aclrtMemcpy(b, 256, h, 256, D2H) == INVALID_PARAM               # src is not device memory
    assert emu.aclrtMemcpy(device, 256, h, 256, H2H) == INVALID_PARAM          # dst is device memory
    assert emu.aclrtMemcpy(device, 256, h, 256, 7) == INVALID_PARAM            # unknown kind
    assert emu.aclrtMemcpy(device + 900, 256, h, 256, H2D) == INVALID_PARAM    # interior, runs past the end
    assert emu.aclrtMemcpy(device + 700, 256, h, 256, H2D) == 0                # interior, fits
    assert emu.aclrtMemcpy(other + 512, 256, device + 700, 256, D2D) == 0
    assert emu.aclrtMemcpy(b, 256, other + 512, 256, D2H) == 0
    np.testing.assert_array_equal(back, host)
    assert emu.aclrtMemset(device, 1024, 7, 1025) == INVALID_PARAM             # count > maxCount
    assert emu.aclrtMemset(device + 512, 1024, 7, 1024) == INVALID_PARAM       # past the end
    assert emu.aclrtMemset(h, 256, 7, 256) == INVALID_PARAM                    # host memory
    assert emu.aclrtMemset(device + 512, 512, 7, 512) == 0
    assert emu.aclrtMemcpy(b, 256, device + 768, 256, D2H) == 0
    assert (back == 7).all()
    emu.aclrtFree(device)
    emu.aclrtFree(other)
    assert emu.aclrtMemcpy(b, 256, device, 256, D2H) == INVALID_PARAM          # freed



def test_memset_keeps_the_bytes_of_plain_memset_through_any_writes(emu):
    """aclrtMemset skips bytes its last call set to the same value and nothing wrote since: whatever the order
    of memsets, copies into and out of the buffer, the bytes read back are those plain memsets give."""
    rng = np.random.default_rng(5)
    size = 8192
    device, source = emu.malloc(size), emu.malloc(size)
    model = np.zeros(size, np.uint8)
    assert emu.aclrtMemset(device, size, 0, size) == 0
    others = rng.integers(0, 256, size, dtype=np.uint8)
    assert emu.aclrtMemcpy(source, size, others.ctypes.data, size, H2D) == 0
    ranges = [(0, size), (512, 4096), (1000, 2000), (4096, 4096)]           # memsets repeat and nest
    for _ in range(400):
        begin, count = ranges[rng.integers(0, len(ranges))]
        if rng.random() < 0.5:
            begin = int(rng.integers(0, size))
            count = int(rng.integers(0, size - begin + 1))
        action = rng.choice(["memset", "memset", "h2d", "d2d", "d2h"])
        if action == "memset":
            value = int(rng.choice([0xFF, 0xFF, 0, rng.integers(0, 256)]))
            assert emu.aclrtMemset(device + begin, count, value, count) == 0
            model[begin:begin + count] = value
        elif action == "h2d":
            data = rng.integers(0, 256, count, dtype=np.uint8)
            assert emu.aclrtMemcpy(device + begin, count, data.ctypes.data, count, H2D) == 0
            model[begin:begin + count] = data
        elif action == "d2d":
            assert emu.aclrtMemcpy(device + begin, count, source + begin, count, D2D) == 0
            model[begin:begin + count] = others[begin:begin + count]
        else:                                       # a read leaves the record as it is
            back = np.empty(count, np.uint8)
            assert emu.aclrtMemcpy(back.ctypes.data, count, device + begin, count, D2H) == 0
            np.testing.assert_array_equal(back, model[begin:begin + count])
    np.testing.assert_array_equal(emu.from_device(device, model), model)
    for pointer in (device, source):
        assert emu.aclrtFree(pointer) == 0


def test_memset_of_bytes_that_hold_its_value_costs_nothing(emu):
    """The second of two equal memsets returns without writing: far cheaper than a memset that writes."""
    size = 64 << 20
    device = emu.malloc(size)
    best = []
    for _ in range(3):
        began = time.perf_counter()
        assert emu.aclrtMemset(device, size, 1, size) == 0
        writing = time.perf_counter() - began
        began = time.perf_counter()
        for _ in range(20):
            assert emu.aclrtMemset(device, size, 1, size) == 0
        best.append((time.perf_counter() - began) / writing)
    emu.aclrtFree(device)
    assert min(best) < 0.5, best


def test_workspace_poison_survives_a_grad_launch_and_not_a_forward_staging(emu, env):
    """The grad only reads its workspace, so a memset after it has nothing to rewrite; the forward stages a
    strided tensor in the workspace, so the memset after it writes the poison again."""
    data = emu.to_device(np.arange(64, dtype=np.float32))[1]
    table = emu.tensor((1, 1, 1, 8), FLOAT32, data)
    for op, strides, staged in (("grad", None, False), ("forward", [64, 64, 32, 2], True)):
        x = emu.tensor((1, 1, 2, 8), FLOAT32, data, strides)
        status, size, executor = emu.workspace_size(x, table, table, 1, (0, 8), op=op)
        workspace = emu.malloc(size)
        assert status == 0 and emu.aclrtMemset(workspace, size, 0xFF, size) == 0
        assert emu.launch(workspace, size, executor, op) == 0
        poisoned = (emu.from_device(workspace, np.empty(size, np.uint8)) == 0xFF).all()
        assert poisoned != staged
        assert emu.aclrtMemset(workspace, size, 0xFF, size) == 0
        assert (emu.from_device(workspace, np.empty(size, np.uint8)) == 0xFF).all()
        emu.aclrtFree(workspace)

def test_timeline_events_measure_elapsed_time(emu):
    start, end, plain = P(), P(), P()
    assert emu.aclrtCreateEventWithFlag(ctypes.byref(start), 0x8) == 0
    assert emu.aclrtCreateEventWithFlag(ctypes.byref(end), 0x8) == 0
    assert emu.aclrtCreateEvent(ctypes.byref(plain)) == 0
    ms = ctypes.c_float()
    assert emu.aclrtEventElapsedTime(ctypes.byref(ms), start, end) == INVALID_PARAM  # not recorded
    assert emu.aclrtRecordEvent(start, emu.stream) == 0
    emu.aclrtSynchronizeStream(emu.stream)
    assert emu.aclrtRecordEvent(end, emu.stream) == 0
    assert emu.aclrtSynchronizeEvent(end) == 0
    assert emu.aclrtEventElapsedTime(ctypes.byref(ms), start, end) == 0
    assert 0 <= ms.value < 1000
    for event in (start, end, plain):
        assert emu.aclrtDestroyEvent(event) == 0
    assert emu.aclrtDestroyEvent(start) == INVALID_PARAM


# ---------------------------------------------------------------- the operator ----------------

def test_worked_example_of_operator_md(emu, env):
    dy = np.arange(1, 9, dtype=np.float32).reshape(1, 1, 1, 8)
    cos = np.array([0.5, 0.6, 0.7, 0.8], np.float32).reshape(1, 1, 1, 4)
    sin = np.array([0.1, 0.2, 0.3, 0.4], np.float32).reshape(1, 1, 1, 4)
    status, dx, cos_out, guard = emu.run(dy, cos, sin, 1, (2, 6))
    assert status == 0
    np.testing.assert_allclose(dx.ravel(), [1, 2, 2.3, 2.1, 5.9, 3.3, 7, 8], rtol=1e-6)
    np.testing.assert_array_equal(bits(dx), bits(golden(dy, cos, sin, 1, 2, 6)))
    np.testing.assert_array_equal(cos_out, cos)
    assert (guard == 0xA5).all()


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
def test_every_mode_matches_the_formulas_bit_for_bit(emu, env, mode):
    env.setenv("PRMG_EMU_MODES", "0,1,2,3")
    dy, cos, sin = random_case((2, 3, 2, 40), (1, 3, 1, 24), seed=mode)
    status, dx, _, _ = emu.run(dy, cos, sin, mode, (5, 29))
    assert status == 0
    np.testing.assert_array_equal(bits(dx), bits(golden(dy, cos, sin, mode, 5, 29)))


@pytest.mark.parametrize("cos_shape", [(2, 3, 4, 8), (1, 1, 1, 8), (1, 3, 1, 8), (2, 1, 4, 8), (1, 1, 4, 8)])
def test_broadcast_patterns(emu, env, cos_shape):
    dy, cos, sin = random_case((2, 3, 4, 16), cos_shape, seed=len(cos_shape) + sum(cos_shape))
    status, dx, _, _ = emu.run(dy, cos, sin, 1, (8, 16))
    assert status == 0
    np.testing.assert_array_equal(bits(dx), bits(golden(dy, cos, sin, 1, 8, 16)))


@pytest.mark.parametrize("dy_type,table_type", [(np.float16, np.float32), (ml_dtypes.bfloat16, np.float32),
                                                (ml_dtypes.bfloat16, ml_dtypes.bfloat16),
                                                (np.float32, np.float16)])
def test_half_precision_results_round_to_nearest_even(emu, env, dy_type, table_type):
    dy, cos, sin = random_case((3, 2, 2, 64), (3, 2, 2, 64), dy_type, table_type, seed=7)
    status, dx, _, _ = emu.run(dy, cos, sin, 1, (0, 64))
    assert status == 0
    np.testing.assert_array_equal(bits(dx), bits(golden(dy, cos, sin, 1, 0, 64)))


@pytest.mark.parametrize("dy_type", [np.float16, ml_dtypes.bfloat16])
def test_float32_to_half_conversion_covers_special_values(emu, env, dy_type):
    """With g = 1, c = x and s = 0, every lane is dx = x*1 +/- 0*1 = x, rounded once to dy's dtype."""
    rng = np.random.default_rng(3)
    finfo = ml_dtypes.finfo(dy_type)
    edges = np.array([np.inf, -np.inf, float(finfo.max), float(finfo.max) * 1.0009765625,
                      float(finfo.max) * 1.001, float(finfo.smallest_subnormal) / 2,
                      float(finfo.smallest_subnormal) * 0.75, float(finfo.smallest_subnormal) * 1.5,
                      float(finfo.smallest_normal) * 0.999, 65520.0, 65519.99, 1e-8, 3.0e38,
                      ], np.float32)
    tails = rng.integers(0, 1 << 32, 20000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    near_half = (rng.standard_normal(20000) * float(finfo.max) ** 0.5).astype(np.float32)
    patterns = np.arange(1, 0x7C00 if dy_type == np.float16 else 0x7F80, 7, dtype=np.uint16)
    below, above = (patterns - 1).view(dy_type).astype(np.float64), patterns.view(dy_type).astype(np.float64)
    top, under_top = float(finfo.max), float((np.array(finfo.max, dy_type).view(np.uint16) - 1).view(dy_type))
    overflow_tie = top + (top - under_top) / 2               # ties to even: rounds to inf
    ties = np.append((below + above) / 2, overflow_tie).astype(np.float32)   # exact: halfway points
    values = np.concatenate([edges, tails, near_half, ties, -ties, np.nextafter(ties, np.float32(0))])
    values = values[~np.isnan(values) & (values != 0)]
    cos = np.resize(values, (values.size // 1024 + 1) * 1024).reshape(-1, 1, 1, 1024)
    dy = np.ones(cos.shape, dy_type)
    status, dx, _, _ = emu.run(dy, cos, np.zeros_like(cos), 1, (0, 1024))
    assert status == 0
    with np.errstate(over="ignore"):
        expected = cos.astype(dy_type)
    np.testing.assert_array_equal(bits(dx), bits(expected))


def test_empty_slice_or_null_slice_changes_nothing(emu, env):
    dy, cos, sin = random_case((1, 2, 1, 8), (1, 1, 1, 4))
    for partial_slice in [(3, 3), None]:
        status, dx, _, _ = emu.run(dy, cos, sin, 1, partial_slice)
        assert status == 0
        np.testing.assert_array_equal(bits(dx), bits(dy))


def constraint_rows():
    """(id, dy (shape, dtype), cos, sin, mode, slice, extra tensor fields, expected status)."""
    good = ((1, 2, 2, 16), FLOAT32)
    table = ((1, 2, 1, 8), FLOAT32)
    rows = [
        ("dtype int32", ((1, 2, 2, 16), INT32), table, table, 1, (0, 8), {}, PARAM_INVALID),
        ("cos dtype int32", good, ((1, 2, 1, 8), INT32), ((1, 2, 1, 8), INT32), 1, (0, 8), {}, PARAM_INVALID),
        ("sin dtype != cos", good, table, ((1, 2, 1, 8), FLOAT16), 1, (0, 8), {}, PARAM_INVALID),
        ("format NC1HWC0", good, table, table, 1, (0, 8), {"fmt": 3}, PARAM_INVALID),
        # strides are not looked at in phase one: a non-contiguous tensor fails at the launch (561000)
        ("non-contiguous strides", good, table, table, 1, (0, 8), {"strides": [64, 1, 32, 2]}, 0),
        ("any stride on a length-1 axis", ((1, 2, 2, 8), FLOAT32), table, table, 1, (0, 8),
         {"strides": [7, 16, 8, 1]}, 0),
        ("gap next to a length-1 axis", ((1, 2, 2, 8), FLOAT32), table, table, 1, (0, 8),
         {"strides": [7, 32, 8, 1]}, 0),
        ("empty dy with any strides", ((1, 0, 2, 16), FLOAT32), table, table, 1, (0, 8),
         {"strides": [5, 3, 7, 9]}, 0),
        ("non-zero offset", good, table, table, 1, (0, 8), {"offset": 16}, 0),
        ("slice of 3 values uses the first two", good, table, table, 1, (0, 8, 8), {}, 0),
        ("slice of 1 value", good, table, table, 1, (8,), {}, TILING),
        ("mode 0 unsupported", good, table, table, 0, (0, 8), {}, TILING),
        ("mode 2 unsupported", good, table, table, 2, (0, 8), {}, TILING),
        ("mode 4", good, table, table, 4, (0, 8), {}, TILING),
        ("mode -1", good, table, table, -1, (0, 8), {}, TILING),
        ("dy 3-D", ((2, 2, 16), FLOAT32), table, table, 1, (0, 8), {}, TILING),
        ("cos 5-D", good, ((1, 1, 2, 1, 8), FLOAT32), ((1, 1, 2, 1, 8), FLOAT32), 1, (0, 8), {}, TILING),
        ("cos shape != sin shape", good, table, ((1, 1, 1, 8), FLOAT32), 1, (0, 8), {}, TILING),
        ("dy dim 0: no tiling", ((1, 0, 2, 16), FLOAT32), table, table, 1, (0, 8), {}, 0),
        ("dy dim 0, nothing checked", ((2, 0, 2000), FLOAT32), ((3, 1, 1, 5), FLOAT32), table, 7, (-2, 40), {}, 0),
        ("dim < 0", ((1, -1, 2, 16), FLOAT32), table, table, 1, (0, 8), {}, TILING),
        ("cos empty: a no-op", good, ((0, 2, 1, 8), FLOAT32), ((0, 2, 1, 8), FLOAT32), 1, (0, 8), {}, 0),
        ("cos empty, D > 1024", ((1, 1, 1, 1040), FLOAT32), ((1, 1, 1, 0), FLOAT32), ((1, 1, 1, 0), FLOAT32), 1,
         (0, 8), {}, 0),
        ("cos empty, sin shape differs", good, ((0, 2, 1, 8), FLOAT32), table, 1, (0, 8), {}, TILING),
        ("D > 1024", ((1, 1, 1, 1040), FLOAT32), ((1, 1, 1, 8), FLOAT32), ((1, 1, 1, 8), FLOAT32), 1,
         (0, 8), {}, TILING),
        ("empty slice, D > 1024", ((1, 1, 1, 1040), FLOAT32), table, table, 1, (3, 3), {}, 0),
        ("empty slice, bad layout", good, ((3, 1, 1, 4), FLOAT32), ((3, 1, 1, 4), FLOAT32), 1, (3, 3), {}, 0),
        ("empty slice, L odd and != cos D", good, ((1, 2, 1, 7), FLOAT32), ((1, 2, 1, 7), FLOAT32), 1, (3, 3), {},
         0),
        ("empty slice past D", good, table, table, 1, (20, 20), {}, TILING),
        ("empty slice, start < 0", good, table, table, 1, (-1, -1), {}, TILING),
        ("empty slice, cos shape != sin shape", good, table, ((1, 1, 1, 8), FLOAT32), 1, (3, 3), {}, TILING),
        ("empty slice, cos 3-D", good, ((2, 1, 8), FLOAT32), ((2, 1, 8), FLOAT32), 1, (3, 3), {}, TILING),
        ("empty slice, cos D > dy D", good, ((1, 2, 1, 32), FLOAT32), ((1, 2, 1, 32), FLOAT32), 1, (0, 0), {},
         TILING),
        ("start < 0", good, table, table, 1, (-2, 6), {}, TILING),
        ("end > D", good, table, table, 1, (10, 18), {}, TILING),
        ("start > end", good, table, table, 1, (8, 0), {}, TILING),
        ("L != cos D", good, table, table, 1, (0, 6), {}, TILING),
        ("cos D > dy D", ((1, 2, 2, 4), FLOAT32), table, table, 1, (0, 0), {}, TILING),
        ("L odd", ((1, 2, 2, 16), FLOAT32), ((1, 2, 1, 7), FLOAT32), ((1, 2, 1, 7), FLOAT32), 1, (0, 7), {},
         TILING),
        ("cos S neither 1 nor dy's", good, ((1, 3, 1, 8), FLOAT32), ((1, 3, 1, 8), FLOAT32), 1, (0, 8), {},
         TILING),
        ("cos B neither 1 nor dy's", ((2, 2, 2, 16), FLOAT32), ((3, 2, 1, 8), FLOAT32), ((3, 2, 1, 8), FLOAT32), 1,
         (0, 8), {}, TILING),
        ("valid", good, table, table, 1, (0, 8), {}, 0),
        ("valid NCHW bf16/fp16", ((1, 2, 2, 16), BF16), ((1, 2, 1, 8), FLOAT16), ((1, 2, 1, 8), FLOAT16), 1,
         (8, 16), {"fmt": NCHW}, 0),
    ]
    return [pytest.param(*row[1:], id=row[0]) for row in rows]


@pytest.mark.parametrize("dy,cos,sin,mode,partial_slice,extra,expected", constraint_rows())
def test_each_constraint_row_returns_its_status(emu, env, dy, cos, sin, mode, partial_slice, extra, expected):
    dy_tensor = emu.tensor(dy[0], dy[1], 0x1000, extra.get("strides"), extra.get("offset", 0), extra.get("fmt", ND))
    cos_tensor, sin_tensor = emu.tensor(*cos, 0x2000), emu.tensor(*sin, 0x3000)
    status, size, executor = emu.workspace_size(dy_tensor, cos_tensor, sin_tensor, mode, partial_slice)
    message = emu.message()
    assert status == expected, message
    if expected:
        assert message.startswith("InplacePartialRotaryMulGrad: ")
    else:
        assert size == (0 if 0 in dy[0] else WORKSPACE)          # an empty dy: nnopbase runs no tiling, no kernel
    assert executor and emu.aclDestroyAclOpExecutor(executor) == 0    # a refusal too leaves a busy executor


def test_mode_switch_enables_quarter_and_checks_its_length(emu, env):
    dy, table = emu.tensor((1, 1, 1, 16), FLOAT32, 0x1000), emu.tensor((1, 1, 1, 6), FLOAT32, 0x2000)
    assert emu.workspace_size(dy, table, table, 2, (0, 6))[0] == TILING            # unsupported
    env.setenv("PRMG_EMU_MODES", "1,2")
    assert emu.workspace_size(dy, table, table, 2, (0, 6))[0] == TILING            # L % 4 != 0
    assert "multiple of 4" in emu.message()
    assert emu.workspace_size(dy, table, table, 1, (0, 6))[0] == 0
    assert emu.workspace_size(dy, table, table, 0, (0, 6))[0] == TILING


def test_null_pointers_come_first(emu, env):
    table = emu.tensor((1, 1, 1, 8), INT32, 0x2000)    # an invalid dtype must not mask the null pointer
    assert emu.workspace_size(None, table, table, 1, (0, 8)) == (NULLPTR, 0, None)       # before any executor
    assert emu.workspace_size(table, None, table, 1, (0, 8)) == (NULLPTR, 0, None)
    assert emu.workspace_size(table, table, None, 1, (0, 8)) == (NULLPTR, 0, None)
    assert emu.workspace_size(table, table, table, 1, (0, 8), executor_out=False)[0] == NULLPTR
    status, _, executor = emu.workspace_size(table, table, table, 1, (0, 8), size_out=False)
    assert status == NULLPTR and emu.aclDestroyAclOpExecutor(executor) == 0    # after the executor was taken
    status, _, executor = emu.workspace_size(table, table, table, 9, (0, 8))
    assert status == PARAM_INVALID and emu.aclDestroyAclOpExecutor(executor) == 0


def test_executor_serves_one_launch_and_workspace_is_checked(emu, env):
    dy = emu.tensor((1, 1, 1, 8), FLOAT32, emu.malloc(32))
    table = emu.tensor((1, 1, 1, 8), FLOAT32, emu.malloc(32))
    workspace = emu.malloc(WORKSPACE)
    status, size, executor = emu.workspace_size(dy, table, table, 1, (0, 8))
    assert emu.aclnnInplacePartialRotaryMulGrad(workspace, size, executor, emu.stream) == 0
    assert emu.aclnnInplacePartialRotaryMulGrad(workspace, size, executor, emu.stream) == PARAM_INVALID
    assert "one launch" in emu.message()
    _, size, executor = emu.workspace_size(dy, table, table, 1, (0, 8))
    assert emu.aclnnInplacePartialRotaryMulGrad(workspace, size - 1, executor, emu.stream) == PARAM_INVALID
    _, size, executor = emu.workspace_size(dy, table, table, 1, (0, 8))
    assert emu.aclnnInplacePartialRotaryMulGrad(None, size, executor, emu.stream) == NULLPTR     # nnopbase's order
    _, size, executor = emu.workspace_size(dy, table, table, 1, (0, 8))
    assert emu.aclnnInplacePartialRotaryMulGrad(dy, size, executor, emu.stream) == PARAM_INVALID  # not device memory


@pytest.mark.parametrize("op", ["grad", "forward"])
def test_an_empty_output_gets_a_0_byte_workspace_and_no_kernel(emu, env, op):
    """nnopbase skips the tiling and the kernel launch for an output without elements (whatever the slice)."""
    x = emu.tensor((2, 0, 2, 16), FLOAT32, 0x1000)
    table = emu.tensor((1, 1, 1, 8), FLOAT32, 0x2000)
    env.setenv("PRMG_EMU_FAULT", "crash" if op == "grad" else "fwd_noop")          # no kernel: nothing acts
    status, size, executor = emu.workspace_size(x, table, table, 1, (40, 2), op=op)
    assert (status, size) == (0, 0) and executor
    assert emu.launch(None, 0, executor, op) == 0 and emu.applied() == ""


# ---------------------------------------------------------------- fault injection ------------

def fault_case():
    """Interleave, slice [2, 10) of D = 12, cos/sin broadcast over B and N (distinct per row)."""
    return random_case((2, 2, 2, 12), (1, 2, 1, 8), seed=11)


@pytest.mark.parametrize("fault", ["sign", "own_sin", "half_pairing", "shift_slice", "ignore_broadcast",
                                   "skip_last_row", "clobber_passthrough", "write_past_end", "modify_cos",
                                   "bf16_compute", "noop", "nan", "accept_mode", "clobber_row_end"])
def test_each_fault_changes_behaviour(emu, env, fault):
    dy, cos, sin = fault_case()
    expected = golden(dy, cos, sin, 1, 2, 10)
    clean = emu.run(dy, cos, sin, 1, (2, 10))
    env.setenv("PRMG_EMU_FAULT", fault)
    faulty = emu.run(dy, cos, sin, 0 if fault == "accept_mode" else 1, (2, 10))
    assert clean[0] == 0 and faulty[0] == 0
    np.testing.assert_array_equal(clean[1], expected)
    changed = {"dy": not np.array_equal(bits(faulty[1]), bits(expected)),
               "cos": not np.array_equal(faulty[2], cos), "guard": not (faulty[3] == 0xA5).all()}
    where = {"write_past_end": "guard", "modify_cos": "cos", "accept_mode": None}.get(fault, "dy")
    if where:
        assert changed[where], changed
    if fault != "noop" and where == "dy":
        assert not changed["cos"] and not changed["guard"]
    env.setenv("PRMG_EMU_FAULT_SHAPE", "1,1,1,12")       # another shape: the fault stays off
    if fault == "accept_mode":
        assert emu.run(dy, cos, sin, 0, (2, 10))[0] == TILING
    else:
        np.testing.assert_array_equal(bits(emu.run(dy, cos, sin, 1, (2, 10))[1]), bits(expected))
    env.setenv("PRMG_EMU_FAULT_SHAPE", "2,2,2,12")       # this shape: the fault acts again
    assert emu.run(dy, cos, sin, 0 if fault == "accept_mode" else 1, (2, 10))[0] == 0


def test_truncate_fault_rounds_toward_zero(emu, env):
    rng = np.random.default_rng(3)
    for dtype in (np.float16, ml_dtypes.bfloat16):
        dy = rng.uniform(-1, 1, (1, 2, 2, 16)).astype(dtype)
        cos, sin = (rng.uniform(-1, 1, (1, 2, 1, 16)).astype(np.float32) for _ in "cs")
        env.setenv("PRMG_EMU_FAULT", "truncate")
        truncated = emu.run(dy, cos, sin, 1, (0, 16))[1].astype(np.float64)
        env.delenv("PRMG_EMU_FAULT")
        nearest = emu.run(dy, cos, sin, 1, (0, 16))[1].astype(np.float64)
        assert (np.abs(truncated) <= np.abs(nearest)).all()
        assert (truncated != nearest).mean() > 0.2


def test_unknown_fault_name_is_refused(emu, env):
    env.setenv("PRMG_EMU_FAULT", "no_such_fault")
    dy, cos, sin = fault_case()
    status = emu.run(dy, cos, sin, 1, (2, 10))[0]
    assert status == 561000


def test_the_applied_faults_hook_says_which_faults_acted(emu, env):
    """prmg_emu_applied_faults: the faults in force when the kernel of this thread's last first phase and
    launch ran (accept_mode: when it made a mode pass), in the catalogue's order; each first phase resets it."""
    dy, cos, sin = fault_case()
    env.setenv("PRMG_EMU_FAULT", "modify_cos,sign,fwd_sign")
    assert emu.run(dy, cos, sin, 1, (2, 10))[0] == 0 and emu.applied() == "sign,modify_cos"
    env.setenv("PRMG_EMU_FAULT_SHAPE", "9,9,9,9")                                   # matches no launch
    assert emu.run(dy, cos, sin, 1, (2, 10))[0] == 0 and emu.applied() == ""
    env.setenv("PRMG_EMU_FAULT_SHAPE", ",".join(map(str, dy.shape)))
    assert emu.run(dy, cos, sin, 1, (2, 10), op="forward")[0] == 0 and emu.applied() == "fwd_sign"
    assert emu.run(dy, cos, sin, 1, (2, 9))[0] == TILING and emu.applied() == ""     # refused: no kernel ran
    env.setenv("PRMG_EMU_FAULT", "accept_mode")
    assert emu.run(dy, cos, sin, 1, (2, 10))[0] == 0 and emu.applied() == ""        # mode 1 needs no help
    assert emu.run(dy, cos, sin, 0, (2, 10))[0] == 0 and emu.applied() == "accept_mode"
    assert emu.workspace_size(None, None, None)[0] == NULLPTR and emu.applied() == ""


def test_crash_and_hang_faults(emu, env):
    dy = emu.tensor((1, 1, 1, 8), FLOAT32, emu.malloc(32))
    table = emu.tensor((1, 1, 1, 8), FLOAT32, emu.malloc(32))
    workspace = emu.malloc(WORKSPACE)

    def launch():
        status, size, executor = emu.workspace_size(dy, table, table, 1, (0, 8))
        return emu.aclnnInplacePartialRotaryMulGrad(workspace, size, executor, emu.stream)

    assert in_child(launch) == (0, 0)
    env.setenv("PRMG_EMU_FAULT", "crash")
    assert in_child(launch) == (signal.SIGSEGV, None)
    env.setenv("PRMG_EMU_FAULT", "hang")
    assert in_child(launch, timeout=0.5) == (0, "hung")


def test_tensor_data_outside_device_memory_is_an_asynchronous_aicore_exception(emu, env):
    """As on a real device: the launch returns 0, the next synchronization 507015, and the device stays
    unusable in this process (every later synchronization repeats the fault, every call needing the device
    is 507899; releases still work); only a new process recovers. Run in a child: it poisons its process."""
    host = np.zeros(8, np.float32)
    dy = emu.tensor((1, 1, 1, 8), FLOAT32, host.ctypes.data)
    table = emu.tensor((1, 1, 1, 8), FLOAT32, emu.malloc(32))
    status, size, executor = emu.workspace_size(dy, table, table, 1, (0, 8))
    workspace = emu.malloc(size)
    assert status == 0

    def fault():
        launched = emu.aclnnInplacePartialRotaryMulGrad(workspace, size, executor, emu.stream)
        event = P()
        steps = [launched, emu.aclrtSynchronizeStream(emu.stream), emu.message(),
                 emu.aclrtSynchronizeStream(emu.stream), emu.aclrtMalloc(ctypes.byref(P()), 64, 0), emu.message(),
                 emu.aclrtMemcpy(host.ctypes.data, 32, workspace, 32, D2H), emu.aclrtMemset(workspace, 32, 0, 32),
                 emu.aclrtCreateStream(ctypes.byref(P())), emu.aclrtCreateEvent(ctypes.byref(event))]
        again, _, second = emu.workspace_size(dy, table, table, 1, (0, 8))           # host-side: still works
        steps += [again, emu.launch(workspace, size, second), emu.aclrtFree(workspace),
                  emu.aclrtMemcpy(host.ctypes.data, 32, host.ctypes.data, 32, H2H)]
        return steps

    steps = in_child(fault)[1]
    assert steps[:2] == [0, AICORE_EXCEPTION] and "AI core exception: dy data" in steps[2]
    assert steps[3:5] == [AICORE_EXCEPTION, DEVICE_UNUSABLE]
    assert "unusable after a kernel fault earlier in this process (507015" in steps[5]
    assert steps[6:] == [DEVICE_UNUSABLE] * 4 + [0, DEVICE_UNUSABLE, 0, 0]
    assert emu.aclrtSynchronizeStream(emu.stream) == 0                             # this process is fine


def test_device_fault_faults_asynchronously_on_purpose(emu, env):
    dy, cos, sin = random_case((1, 2, 2, 12), (1, 2, 1, 8), seed=5)
    env.setenv("PRMG_EMU_FAULT", "device_fault")

    def fault():
        tensors = [emu.tensor(a.shape, FLOAT32, emu.to_device(a)[1]) for a in (dy, cos, sin)]
        _, size, executor = emu.workspace_size(*tensors, 1, (2, 10))
        launched = emu.launch(emu.malloc(size), size, executor)
        return [launched, emu.applied(), emu.aclrtSynchronizeStream(emu.stream), emu.message()]

    launched, applied, synchronized, message = in_child(fault)[1]
    assert (launched, applied, synchronized) == (0, "device_fault", AICORE_EXCEPTION)
    assert "PRMG_EMU_FAULT=device_fault" in message


def test_d_over_1024_message(emu, env):
    dy, table = emu.tensor((1, 1, 1, 2048), FLOAT32, 0x1000), emu.tensor((1, 1, 1, 8), FLOAT32, 0x2000)
    assert emu.workspace_size(dy, table, table, 1, (0, 8))[0] == TILING
    assert emu.message() == "InplacePartialRotaryMulGrad: D = 2048 exceeds 1024"


# ---------------------------------------------------------------- runtime extras ---------------

def test_soc_name_is_a_950pr_name_or_the_override(emu, env):
    assert emu.aclrtGetSocName() == b"Ascend950PR_9589"
    env.setenv("PRMG_EMU_SOC", "Ascend950DT_9591")
    assert emu.aclrtGetSocName() == b"Ascend950DT_9591"

    def before_init():
        emu.aclFinalize()
        name = emu.aclrtGetSocName()
        return {"name": name, "message": emu.message()}

    signal_number, out = in_child(before_init)
    assert signal_number == 0 and out["name"] is None and "aclInit" in out["message"]


def test_pinned_host_memory_is_page_aligned_host_memory_for_copies(emu):
    pinned, other = P(), P()
    assert emu.aclrtMallocHost(ctypes.byref(pinned), 1000) == 0
    assert pinned.value % os.sysconf("SC_PAGE_SIZE") == 0
    ctypes.memmove(pinned.value, bytes(range(200)), 200)                 # host-writable
    device = emu.malloc(512)
    assert emu.aclrtMemcpy(device, 512, pinned.value, 200, H2D) == 0      # pinned as the host source
    assert emu.aclrtMallocHost(ctypes.byref(other), 200) == 0
    assert emu.aclrtMemcpy(other.value, 200, device, 200, D2H) == 0       # pinned as the host destination
    assert ctypes.string_at(other.value, 200) == bytes(range(200))
    assert emu.aclrtMemcpy(device, 512, pinned.value, 200, D2D) == INVALID_PARAM   # not device memory
    for block in (pinned, other):
        assert emu.aclrtFreeHost(block.value) == 0
    assert emu.aclrtFreeHost(pinned.value) == INVALID_PARAM              # already freed
    assert emu.aclrtFreeHost(device) == INVALID_PARAM                    # not from aclrtMallocHost
    assert "aclrtMallocHost" in emu.message()
    assert emu.aclrtMallocHost(ctypes.byref(P()), 0) == INVALID_PARAM
    emu.aclrtFree(device)

    def before_init():
        emu.aclFinalize()
        return [emu.aclrtMallocHost(ctypes.byref(P()), 64), emu.aclrtFreeHost(None)]

    assert in_child(before_init) == (0, [UNINITIALIZE, UNINITIALIZE])


def small_tensors(emu, dtype=FLOAT32):
    """dy/x (1, 1, 1, 8) and cos/sin (1, 1, 1, 8) in fresh device memory."""
    return (emu.tensor((1, 1, 1, 8), dtype, emu.malloc(32)), emu.tensor((1, 1, 1, 8), FLOAT32, emu.malloc(32)))


@pytest.mark.parametrize("op", ["grad", "forward"])
def test_destroy_frees_an_unlaunched_executor_and_refuses_others(emu, env, op):
    x, table = small_tensors(emu)
    workspace = emu.malloc(WORKSPACE)
    live = emu.prmg_emu_live_executors()
    _, _, kept = emu.workspace_size(x, table, table, 1, (0, 8), op=op)
    _, size, launched = emu.workspace_size(x, table, table, 1, (0, 8), op=op)
    assert emu.prmg_emu_live_executors() == live + 2
    assert emu.aclDestroyAclOpExecutor(kept) == 0
    assert emu.prmg_emu_live_executors() == live + 1
    assert emu.aclDestroyAclOpExecutor(kept) == PARAM_INVALID                     # already destroyed
    assert "already destroyed" in emu.message()
    assert emu.launch(workspace, size, kept, op) == PARAM_INVALID                  # destroyed: no launch
    assert emu.launch(workspace, size, launched, op) == 0
    assert emu.prmg_emu_live_executors() == live
    assert emu.aclDestroyAclOpExecutor(launched) == PARAM_INVALID                  # launched: freed already
    assert emu.aclDestroyAclOpExecutor(0x12345) == PARAM_INVALID                   # never an executor
    assert emu.aclDestroyAclOpExecutor(None) == NULLPTR
    other = "forward" if op == "grad" else "grad"
    _, size, foreign = emu.workspace_size(x, table, table, 1, (0, 8), op=op)
    assert emu.launch(workspace, size, foreign, other) == PARAM_INVALID            # the other op's executor
    assert "first phase" in emu.message()
    assert emu.prmg_emu_live_executors() == live                                   # consumed by that attempt


def test_a_failed_first_phase_leaves_a_busy_executor(emu, env):
    """Upstream's generated layer sets *executor (a pooled one, kept busy) before its checks: a refused call
    leaks one unless it is destroyed; a launch of it is refused."""
    x, table = small_tensors(emu)
    workspace = emu.malloc(WORKSPACE)
    live = emu.prmg_emu_live_executors()
    for op in OPS:
        status, _, refused = emu.workspace_size(x, table, table, 9, (0, 8), op=op)
        assert status == TILING and refused
        assert emu.prmg_emu_live_executors() == live + 1
        assert emu.launch(workspace, WORKSPACE, refused, op) == PARAM_INVALID       # consumed by the attempt
        assert "a first phase that failed" in emu.message()
        status, _, refused = emu.workspace_size(x, table, table, 1, (0, 6), op=op)
        assert status == TILING and emu.aclDestroyAclOpExecutor(refused) == 0
        assert emu.workspace_size(None, table, table, 1, (0, 8), op=op)[2] is None   # refused before taking one
    assert emu.prmg_emu_live_executors() == live


# ---------------------------------------------------------------- the grad: host behaviour ------

@pytest.mark.parametrize("op", ["grad", "forward"])
@pytest.mark.parametrize("value", [None, "", "no such folder", "a file"])
def test_opp_path_must_name_a_folder(emu, env, tmp_path, op, value):
    x, table = small_tensors(emu)
    if value is None:
        env.delenv("ASCEND_OPP_PATH")
    else:
        (tmp_path / "a file").write_text("")
        env.setenv("ASCEND_OPP_PATH", str(tmp_path / value) if value else "")
    null_first = emu.workspace_size(None, table, table, 1, (0, 8), op=op)[0]
    status = emu.workspace_size(x, table, table, 1, (0, 8), op=op)[0]
    assert (null_first, status) == (NULLPTR, OPP_PATH)
    assert "ASCEND_OPP_PATH" in emu.message()
    env.setenv("ASCEND_OPP_PATH", str(tmp_path))                                    # any existing folder
    status, _, executor = emu.workspace_size(x, table, table, 1, (0, 8), op=op)
    assert status == 0 and emu.aclDestroyAclOpExecutor(executor) == 0


@pytest.mark.parametrize("op", ["grad", "forward"])
def test_rotary_mode_is_read_as_int32(emu, env, op):
    dy, cos, sin = random_case((1, 2, 2, 12), (1, 2, 1, 8), seed=21)
    expected = (golden if op == "grad" else forward_golden)(dy, cos, sin, 1, 2, 10)
    status, out, _, _ = emu.run(dy, cos, sin, 2**32 + 1, (2, 10), op=op)            # low 32 bits: 1
    assert status == 0
    np.testing.assert_array_equal(bits(out), bits(expected))
    assert emu.run(dy, cos, sin, 2**32 + 7, (2, 10), op=op)[0] == TILING             # low 32 bits: 7
    assert "read as int32: 7" in emu.message()
    assert emu.run(dy, cos, sin, -(2**32) + 1, (2, 10), op=op)[0] == 0              # low 32 bits: 1 again


@pytest.mark.parametrize("op", ["grad", "forward"])
@pytest.mark.parametrize("fault", ["", "ignore_offset"])
def test_a_view_at_a_storage_offset_is_contiguous_and_read_there(emu, env, op, fault):
    """opbase's IsContiguous ignores the offset and GetData() applies it once: dy 16 elements and sin 8 into their
    storage run as ordinary contiguous inputs, the storage before them untouched; under the grad's
    ignore_offset fault the kernel works from each storage's start."""
    env.setenv("PRMG_EMU_FAULT", fault)
    dy, cos, sin = random_case((1, 2, 2, 8), (1, 2, 1, 8), seed=77)
    offsets = {"dy": 16, "cos": 0, "sin": 8}
    arrays = {"dy": dy, "cos": cos, "sin": sin}
    storage = {name: np.concatenate([np.full(offsets[name], -3.5, np.float32), arrays[name].ravel()])
               for name in arrays}
    data = {name: emu.to_device(storage[name])[1] for name in arrays}
    tensors = [emu.tensor(arrays[name].shape, FLOAT32, data[name], None, offsets[name]) for name in arrays]
    status, size, executor = emu.workspace_size(*tensors, 1, (0, 8), op=op)
    assert status == 0 and emu.launch(emu.malloc(size), size, executor, op=op) == 0
    out = emu.from_device(data["dy"], storage["dy"])
    expected = (golden if op == "grad" else forward_golden)(dy, cos, sin, 1, 0, 8)
    if fault and op == "grad":
        assert not np.array_equal(out[16:], expected.ravel()) and (out[:16] != -3.5).any()
    else:
        np.testing.assert_array_equal(bits(out[16:]), bits(expected.ravel()))
        assert (out[:16] == -3.5).all()


@pytest.mark.parametrize("tensor,strides", [
    ("dy", [64, 1, 32, 2]),               # every other element, S and N swapped
    ("dy", [7, 32, 8, 1]),                # a gap next to a length-1 axis
    ("cos", [16, 1, 16, 2]),
    ("sin", [16, 16, 8, 2]),
])
def test_grad_refuses_a_non_contiguous_tensor_at_the_launch(emu, env, tensor, strides):
    shapes = {"dy": (1, 2, 2, 8), "cos": (1, 2, 1, 8), "sin": (1, 2, 1, 8)}
    storage = {name: np.arange(256, dtype=np.float32) / 7 for name in shapes}
    data = {name: emu.to_device(storage[name])[1] for name in shapes}
    tensors = {name: emu.tensor(shapes[name], FLOAT32, data[name], strides if name == tensor else None)
               for name in shapes}
    live = emu.prmg_emu_live_executors()
    status, size, executor = emu.workspace_size(tensors["dy"], tensors["cos"], tensors["sin"], 1, (0, 8))
    assert (status, size) == (0, WORKSPACE)
    assert emu.launch(emu.malloc(size), size, executor) == INNER
    assert emu.message().startswith(f"InplacePartialRotaryMulGrad: {tensor} is not contiguous")
    assert emu.prmg_emu_live_executors() == live                                   # the launch consumed it
    for name in shapes:
        np.testing.assert_array_equal(emu.from_device(data[name], storage[name]), storage[name])


# ---------------------------------------------------------------- the forward op --------------

@pytest.mark.parametrize("mode", [0, 1, 2, 3])
def test_forward_matches_its_formulas_bit_for_bit(emu, env, mode):
    env.setenv("PRMG_EMU_MODES", "0,1,2,3")
    x, cos, sin = random_case((2, 3, 2, 40), (1, 3, 1, 24), seed=40 + mode)
    status, y, cos_out, guard = emu.run(x, cos, sin, mode, (6, 30), op="forward")
    assert status == 0
    np.testing.assert_array_equal(bits(y), bits(forward_golden(x, cos, sin, mode, 6, 30)))
    np.testing.assert_array_equal(cos_out, cos)
    assert (guard == 0xA5).all()


def test_forward_worked_example(emu, env):
    """Interleave, slice [2, 6) of x = 1..8: y = c*x - s*x' on even lanes, c*x + s*x' on odd (own sin)."""
    x = np.arange(1, 9, dtype=np.float32).reshape(1, 1, 1, 8)
    cos = np.array([0.5, 0.6, 0.7, 0.8], np.float32).reshape(1, 1, 1, 4)
    sin = np.array([0.1, 0.2, 0.3, 0.4], np.float32).reshape(1, 1, 1, 4)
    status, y, _, _ = emu.run(x, cos, sin, 1, (2, 6), op="forward")
    assert status == 0
    np.testing.assert_allclose(y.ravel(), [1, 2, 0.5 * 3 - 0.1 * 4, 0.6 * 4 + 0.2 * 3, 0.7 * 5 - 0.3 * 6,
                                           0.8 * 6 + 0.4 * 5, 7, 8], rtol=1e-6)


@pytest.mark.parametrize("cos_shape", [(2, 3, 4, 8), (1, 1, 1, 8), (1, 3, 1, 8), (2, 1, 4, 8), (2, 1, 1, 8),
                                       (2, 3, 1, 8), (1, 1, 4, 8), (1, 3, 4, 8)])
def test_forward_accepts_every_broadcast_layout(emu, env, cos_shape):
    """Upstream's JudgeLayoutByShape accepts all eight layouts (its docs list four for the 950)."""
    x, cos, sin = random_case((2, 3, 4, 16), cos_shape, seed=sum(cos_shape))
    status, y, _, _ = emu.run(x, cos, sin, 1, (4, 12), op="forward")
    assert status == 0
    np.testing.assert_array_equal(bits(y), bits(forward_golden(x, cos, sin, 1, 4, 12)))


@pytest.mark.parametrize("x_type,table_type", [(np.float32, np.float32), (np.float16, np.float16),
                                               (ml_dtypes.bfloat16, ml_dtypes.bfloat16),
                                               (np.float16, np.float32), (ml_dtypes.bfloat16, np.float32)])
def test_forward_dtype_pairs_round_to_nearest_even(emu, env, x_type, table_type):
    x, cos, sin = random_case((3, 2, 2, 64), (3, 2, 2, 64), x_type, table_type, seed=8)
    status, y, _, _ = emu.run(x, cos, sin, 1, (0, 64), op="forward")
    assert status == 0
    np.testing.assert_array_equal(bits(y), bits(forward_golden(x, cos, sin, 1, 0, 64)))


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
def test_grad_is_the_adjoint_of_the_forward(emu, env, mode):
    """<forward(x), dy> == <x, grad(dy)> on the slice (float64 sums of the emulator's float32 results)."""
    env.setenv("PRMG_EMU_MODES", "0,1,2,3")
    x, cos, sin = random_case((2, 2, 3, 32), (1, 2, 1, 16), seed=50 + mode)
    dy = random_case((2, 2, 3, 32), (1, 1, 1, 1), seed=60 + mode)[0]
    y = emu.run(x, cos, sin, mode, (8, 24), op="forward")[1]
    dx = emu.run(dy, cos, sin, mode, (8, 24))[1]
    left = np.sum(y[..., 8:24].astype(np.float64) * dy[..., 8:24])
    right = np.sum(x[..., 8:24].astype(np.float64) * dx[..., 8:24])
    assert abs(left - right) < 1e-4 * np.sum(np.abs(x[..., 8:24].astype(np.float64)))


def forward_rows():
    """(id, x (shape, dtype), cos, sin, mode, slice, expected status) from upstream's code (README.md)."""
    good, table = ((1, 2, 2, 16), FLOAT32), ((1, 2, 1, 8), FLOAT32)
    rows = [
        ("x dtype int32", ((1, 2, 2, 16), INT32), table, table, 1, (0, 8), PARAM_INVALID),
        ("cos dtype int32", good, ((1, 2, 1, 8), INT32), ((1, 2, 1, 8), INT32), 1, (0, 8), PARAM_INVALID),
        ("sin dtype != cos", good, table, ((1, 2, 1, 8), FLOAT16), 1, (0, 8), PARAM_INVALID),
        ("x fp32 with cos fp16", good, ((1, 2, 1, 8), FLOAT16), ((1, 2, 1, 8), FLOAT16), 1, (0, 8), PARAM_INVALID),
        ("x fp16 with cos bf16", ((1, 2, 2, 16), FLOAT16), ((1, 2, 1, 8), BF16), ((1, 2, 1, 8), BF16), 1, (0, 8),
         PARAM_INVALID),
        ("mode 0 unsupported", good, table, table, 0, (0, 8), TILING),
        ("mode 4", good, table, table, 4, (0, 8), TILING),
        ("mode checked before shapes", ((2, 16), FLOAT32), table, table, 0, (0, 8), TILING),
        ("x 3-D", ((2, 2, 16), FLOAT32), table, table, 1, (0, 8), TILING),
        ("cos shape != sin shape", good, table, ((1, 1, 1, 8), FLOAT32), 1, (0, 8), TILING),
        ("start < 0", good, table, table, 1, (-2, 6), TILING),
        ("end > D", good, table, table, 1, (10, 18), TILING),
        ("start > end", good, table, table, 1, (8, 0), TILING),
        ("empty slice, nothing else checked", ((1, 2, 2, 2000), FLOAT32), ((5, 1, 1, 3), FLOAT32),
         ((5, 1, 1, 3), FLOAT32), 1, (7, 7), 0),
        ("cos D = 0 is a no-op", good, ((1, 2, 1, 0), FLOAT32), ((1, 2, 1, 0), FLOAT32), 1, (0, 8), 0),
        ("L != cos D", good, table, table, 1, (0, 6), TILING),
        ("L odd", good, ((1, 2, 1, 7), FLOAT32), ((1, 2, 1, 7), FLOAT32), 1, (0, 7), TILING),
        ("D > 1024", ((1, 1, 1, 1040), FLOAT32), ((1, 1, 1, 8), FLOAT32), ((1, 1, 1, 8), FLOAT32), 1, (0, 8),
         TILING),
        ("D odd", ((1, 2, 2, 15), FLOAT32), table, table, 1, (0, 8), TILING),
        ("x dim 0: no tiling", ((1, 0, 2, 16), FLOAT32), ((1, 1, 1, 8), FLOAT32), ((1, 1, 1, 8), FLOAT32), 1, (0, 8),
         0),
        ("x dim 0, nothing checked", ((2, 0, 15), FLOAT32), ((3, 1, 1, 5), FLOAT32), table, 7, (9, 3), 0),
        ("dim < 0", ((1, -1, 2, 16), FLOAT32), ((1, 1, 1, 8), FLOAT32), ((1, 1, 1, 8), FLOAT32), 1, (0, 8), TILING),
        ("cos S neither 1 nor x's", good, ((1, 3, 1, 8), FLOAT32), ((1, 3, 1, 8), FLOAT32), 1, (0, 8), TILING),
        ("cos B neither 1 nor x's", ((2, 2, 2, 16), FLOAT32), ((3, 1, 1, 8), FLOAT32), ((3, 1, 1, 8), FLOAT32), 1,
         (0, 8), TILING),
        ("NULL slice is the default {0, 0}", ((1, 2, 2, 8), FLOAT32), table, table, 1, None, 0),
        ("NULL slice, a no-op whatever cos D", good, table, table, 1, None, 0),
        ("empty slice array: nnopbase's NULL data", ((1, 2, 2, 8), FLOAT32), table, table, 1, (), 561103),
        ("slice of 3 values uses the first two", good, table, table, 1, (0, 8, 99), 0),
        ("slice of 1 value", good, table, table, 1, (8,), TILING),
        ("valid bf16 x, fp32 cos", ((1, 2, 2, 16), BF16), table, table, 1, (8, 16), 0),
    ]
    return [pytest.param(*row[1:], id=row[0]) for row in rows]


@pytest.mark.parametrize("x,cos,sin,mode,partial_slice,expected", forward_rows())
def test_each_forward_constraint_returns_upstreams_status(emu, env, x, cos, sin, mode, partial_slice, expected):
    tensors = [emu.tensor(*x, 0x1000), emu.tensor(*cos, 0x2000), emu.tensor(*sin, 0x3000)]
    status, size, executor = emu.workspace_size(*tensors, mode, partial_slice, op="forward")
    message = emu.message()
    assert status == expected, message
    if expected:
        assert message.startswith("InplacePartialRotaryMul: ")
    else:
        assert size == (0 if 0 in x[0] else WORKSPACE)
    assert emu.aclDestroyAclOpExecutor(executor) == 0                 # a refusal too leaves a busy executor


def test_forward_null_pointers_come_first(emu, env):
    table = emu.tensor((1, 1, 1, 8), INT32, 0x2000)
    for position in range(3):
        tensors = [table, table, table]
        tensors[position] = None
        assert emu.workspace_size(*tensors, 1, (0, 8), op="forward")[0] == NULLPTR
    assert emu.workspace_size(table, table, table, 1, (0, 8), size_out=False, op="forward")[0] == NULLPTR
    assert emu.workspace_size(table, table, table, 1, (0, 8), executor_out=False, op="forward")[0] == NULLPTR
    assert emu.workspace_size(table, table, table, 9, (0, 8), op="forward")[0] == PARAM_INVALID  # dtype before mode


def test_forward_empty_slice_changes_nothing(emu, env):
    x, cos, sin = random_case((1, 2, 1, 8), (1, 1, 1, 4))
    status, y, _, _ = emu.run(x, cos, sin, 1, (3, 3), op="forward")
    assert status == 0
    np.testing.assert_array_equal(bits(y), bits(x))


def test_forward_makes_non_contiguous_inputs_contiguous(emu, env):
    """AutoContiguous: a strided xRef is copied into the workspace and back into its view; cos, contiguous at a
    storage offset, is read in place (the offset applied once)."""
    rng = np.random.default_rng(70)
    storage = rng.uniform(-1, 1, (2, 3, 2, 32)).astype(np.float32)        # x = storage[..., 1::2]
    cos_storage = rng.uniform(-1, 1, 3 + 3 * 8).astype(np.float32)       # cos = (1, 3, 1, 8) at offset 3
    sin = rng.uniform(-1, 1, (1, 3, 1, 8)).astype(np.float32)
    x_base, x_data = emu.to_device(storage)
    cos_data, sin_data = emu.to_device(cos_storage)[1], emu.to_device(sin)[1]
    x_tensor = emu.tensor((2, 3, 2, 16), FLOAT32, x_data, [192, 64, 32, 2], 1)
    cos_tensor = emu.tensor((1, 3, 1, 8), FLOAT32, cos_data, None, 3)
    sin_tensor = emu.tensor((1, 3, 1, 8), FLOAT32, sin_data)
    status, size, executor = emu.workspace_size(x_tensor, cos_tensor, sin_tensor, 1, (4, 12), op="forward")
    assert status == 0
    assert size == WORKSPACE + 1024             # x's copy, 768 bytes rounded up to 512s; cos at offset 3: contiguous
    assert emu.launch(emu.malloc(size), size - 1, executor, "forward") == PARAM_INVALID
    _, size, executor = emu.workspace_size(x_tensor, cos_tensor, sin_tensor, 1, (4, 12), op="forward")
    assert emu.launch(emu.malloc(size), size, executor, "forward") == 0
    expected = storage.copy()
    cos = cos_storage[3:].reshape(1, 3, 1, 8)
    expected[..., 1::2] = forward_golden(storage[..., 1::2], cos, sin, 1, 4, 12)
    np.testing.assert_array_equal(bits(emu.from_device(x_data, storage)), bits(expected))
    np.testing.assert_array_equal(emu.from_device(cos_data, cos_storage), cos_storage)


# ---------------------------------------------------------------- kernel-layout faults --------

def run_with_fault(emu, env, fault, dy, cos, sin, mode=1, partial_slice=None, op="grad", **options):
    """(clean result, faulty result) of one case: dy read back after a launch without, then with ``fault``."""
    clean = emu.run(dy, cos, sin, mode, partial_slice, op=op, **options)
    env.setenv("PRMG_EMU_FAULT", fault)
    faulty = emu.run(dy, cos, sin, mode, partial_slice, op=op, **options)
    env.delenv("PRMG_EMU_FAULT")
    assert clean[0] == 0 and faulty[0] == 0
    return clean[1], faulty[1]


def test_squash_nan_stores_nan_results_as_zero(emu, env):
    dy, cos, sin = random_case((1, 2, 2, 16), (1, 2, 1, 8), seed=80)
    dy[0, 1, 0, 5] = np.nan                                  # lane 3 of [2, 10): itself and lane 2 are NaN
    clean, faulty = run_with_fault(emu, env, "squash_nan", dy, cos, sin, 1, (2, 10))
    expected = golden(dy, cos, sin, 1, 2, 10)
    np.testing.assert_array_equal(bits(clean), bits(expected))
    nan = np.isnan(expected)
    assert nan.sum() == 2 and (bits(faulty)[nan] == 0).all()
    np.testing.assert_array_equal(bits(faulty)[~nan], bits(expected)[~nan])


@pytest.mark.parametrize("dtype,minus_zero,signalling,quiet", [(np.float32, 0x80000000, 0x7F800001, 0x7FC00001),
                                                               (np.float16, 0x8000, 0x7C01, 0x7E01)])
def test_passthrough_add_zero_rewrites_outside_the_slice(emu, env, dtype, minus_zero, signalling, quiet):
    dy, cos, sin = random_case((1, 2, 2, 16), (1, 2, 1, 8), dtype, np.float32, seed=81)
    raw = bits(dy).copy()
    raw[0, 0, 0, 0], raw[0, 1, 1, 15], raw[0, 1, 0, 3] = minus_zero, signalling, minus_zero   # last one in the slice
    dy = raw.view(dtype)
    clean, faulty = run_with_fault(emu, env, "passthrough_add_zero", dy, cos, sin, 1, (2, 10))
    np.testing.assert_array_equal(bits(clean), bits(golden(dy, cos, sin, 1, 2, 10)))
    changed = bits(faulty) != bits(clean)
    assert changed.sum() == 2
    assert bits(faulty)[0, 0, 0, 0] == 0 and bits(faulty)[0, 1, 1, 15] == quiet


def test_workspace_overrun_inverts_the_bytes_past_the_workspace(emu, env):
    dy, cos, sin = random_case((1, 2, 2, 12), (1, 2, 1, 8), seed=82)
    env.setenv("PRMG_EMU_FAULT", "workspace_overrun")

    def exact():                                                     # workspace exactly the size asked for
        tensors = [emu.tensor(a.shape, FLOAT32, emu.to_device(a)[1]) for a in (dy, cos, sin)]
        _, size, executor = emu.workspace_size(*tensors, 1, (2, 10))
        return [emu.launch(emu.malloc(size), size, executor), emu.aclrtSynchronizeStream(emu.stream), emu.message()]

    launched, synchronized, message = in_child(exact)[1]
    assert (launched, synchronized) == (0, AICORE_EXCEPTION) and "workspace + 16777216" in message
    tensors = [emu.tensor(a.shape, FLOAT32, emu.to_device(a)[1]) for a in (dy, cos, sin)]
    _, size, executor = emu.workspace_size(*tensors, 1, (2, 10))
    workspace = emu.malloc(size + 512)                               # room past it: silently overwritten
    assert emu.launch(workspace, size, executor) == 0
    past = emu.from_device(workspace + size, np.zeros(8, np.uint8))
    assert list(past) == [0xFF] * 4 + [0] * 4


def test_workspace_uninit_read_shows_only_with_a_poisoned_workspace(emu, env):
    dy, cos, sin = random_case((2, 2, 2, 12), (1, 2, 1, 8), seed=83)
    expected = golden(dy, cos, sin, 1, 2, 10)
    env.setenv("PRMG_EMU_FAULT", "workspace_uninit_read")
    zeroed = emu.run(dy, cos, sin, 1, (2, 10), workspace_fill=0)[1]
    poisoned = emu.run(dy, cos, sin, 1, (2, 10), workspace_fill=0xFF)[1]      # 0xFFFFFFFF is a NaN
    np.testing.assert_array_equal(bits(zeroed), bits(expected))
    assert np.isnan(poisoned[..., 2:10]).all()
    np.testing.assert_array_equal(bits(poisoned[..., [0, 1, 10, 11]]), bits(dy[..., [0, 1, 10, 11]]))


@pytest.mark.parametrize("shape,unwritten", [((3, 5, 3, 8), 5), ((2, 20, 1, 8), 0), ((1, 30, 1, 8), 0)])
def test_core_tail_drops_the_remainder_rows(emu, env, shape, unwritten):
    """45 rows on 40 cores: 1 row each plus 5 remainder rows, which the fault never writes; 40 and 30 rows
    have no remainder on a core that also has a share (30 < 40: every row is a remainder row)."""
    dy, cos, sin = random_case(shape, (1, shape[1], 1, 8), seed=84)
    clean, faulty = run_with_fault(emu, env, "core_tail", dy, cos, sin, 1, (0, 8))
    rows, faulty_rows, dy_rows = clean.reshape(-1, 8), faulty.reshape(-1, 8), dy.reshape(-1, 8)
    np.testing.assert_array_equal(bits(clean), bits(golden(dy, cos, sin, 1, 0, 8)))
    split = len(rows) - unwritten
    np.testing.assert_array_equal(bits(faulty_rows[:split]), bits(rows[:split]))
    np.testing.assert_array_equal(bits(faulty_rows[split:]), bits(dy_rows[split:]))


@pytest.mark.parametrize("slice_,wrong", [((2, 98), (64, 96)), ((0, 64), None), ((0, 128), None), ((4, 60), None)])
def test_tile_tail_uses_the_previous_tiles_tables_on_a_partial_last_tile(emu, env, slice_, wrong):
    length = slice_[1] - slice_[0]
    dy, cos, sin = random_case((1, 2, 1, 128), (1, 2, 1, length), seed=85)
    clean, faulty = run_with_fault(emu, env, "tile_tail", dy, cos, sin, 1, slice_)
    differs = np.nonzero((bits(faulty) != bits(clean)).any(axis=(0, 1, 2)))[0] - slice_[0]
    if wrong is None:
        assert differs.size == 0
    else:
        assert differs.min() >= wrong[0] and differs.max() < wrong[1] and differs.size > (wrong[1] - wrong[0]) // 2


@pytest.mark.parametrize("dtype,start,aligned", [(np.float32, 2, False), (np.float32, 8, True),
                                                 (np.float16, 2, False), (np.float16, 16, True),
                                                 (ml_dtypes.bfloat16, 8, False)])
def test_unaligned_start_leaves_the_first_pair(emu, env, dtype, start, aligned):
    dy, cos, sin = random_case((2, 2, 1, 40), (1, 1, 1, 16), dtype, np.float32, seed=86)
    clean, faulty = run_with_fault(emu, env, "unaligned_start", dy, cos, sin, 1, (start, start + 16))
    expected = clean.copy()
    if not aligned:
        expected[..., start:start + 2] = dy[..., start:start + 2]
    np.testing.assert_array_equal(bits(faulty), bits(expected))


@pytest.mark.parametrize("dtype,d,padded", [(np.float32, 12, True), (np.float32, 16, False),
                                            (np.float16, 24, True), (np.float16, 32, False)])
def test_row_pad_addresses_rows_with_a_block_rounded_stride(emu, env, dtype, d, padded):
    dy, cos, sin = random_case((2, 3, 2, d), (1, 3, 1, 8), dtype, dtype, seed=87)
    clean, faulty = run_with_fault(emu, env, "row_pad", dy, cos, sin, 1, (2, 10))
    assert (not np.array_equal(bits(faulty), bits(clean))) == padded
    env.setenv("PRMG_EMU_FAULT", "row_pad")
    assert (emu.run(dy, cos, sin, 1, (2, 10))[3] == 0xA5).all()             # stays inside dy


@pytest.mark.parametrize("fault,axis", [("broadcast_b", 0), ("broadcast_s", 1), ("broadcast_n", 2)])
def test_broadcast_axis_faults_index_a_full_axis_at_zero(emu, env, fault, axis):
    shape = (2, 3, 2, 12)
    for full in (True, False):
        cos_shape = [1, 1, 1, 8]
        if full:
            cos_shape[axis] = shape[axis]
        other = (axis + 1) % 3                                        # another full axis stays right
        cos_shape[other] = shape[other]
        dy, cos, sin = random_case(shape, tuple(cos_shape), seed=88 + axis)
        clean, faulty = run_with_fault(emu, env, fault, dy, cos, sin, 1, (2, 10))
        np.testing.assert_array_equal(bits(clean), bits(golden(dy, cos, sin, 1, 2, 10)))
        index = [slice(None)] * 4
        index[axis] = 0                                                # the index-0 block is right either way
        np.testing.assert_array_equal(bits(faulty[tuple(index)]), bits(clean[tuple(index)]))
        assert (not np.array_equal(bits(faulty), bits(clean))) == full


@pytest.mark.parametrize("dy_type,table_type,visible", [(ml_dtypes.bfloat16, np.float32, True),
                                                         (np.float16, np.float32, True),
                                                         (ml_dtypes.bfloat16, ml_dtypes.bfloat16, False),
                                                         (np.float32, np.float32, False)])
def test_mixed_cast_rounds_the_tables_to_dys_dtype(emu, env, dy_type, table_type, visible):
    dy, cos, sin = random_case((2, 2, 2, 64), (2, 2, 1, 64), dy_type, table_type, seed=89)
    clean, faulty = run_with_fault(emu, env, "mixed_cast", dy, cos, sin, 1, (0, 64))
    assert (not np.array_equal(bits(faulty), bits(clean))) == visible
    if visible:
        narrowed = [t.astype(dy_type).astype(np.float32) for t in (cos, sin)]
        np.testing.assert_array_equal(bits(faulty), bits(golden(dy, *narrowed, 1, 0, 64)))


def test_row_index_u16_wraps_the_row_counter(emu, env):
    rows = 65536 + 8
    dy, cos, sin = random_case((rows, 1, 1, 2), (1, 1, 1, 2), seed=90)
    clean, faulty = run_with_fault(emu, env, "row_index_u16", dy, cos, sin, 1, (0, 2))
    np.testing.assert_array_equal(bits(clean), bits(golden(dy, cos, sin, 1, 0, 2)))
    np.testing.assert_array_equal(bits(faulty[65536:]), bits(dy[65536:]))          # high rows never written
    np.testing.assert_array_equal(bits(faulty[8:65536]), bits(clean[8:65536]))
    twice = golden(golden(dy[:8], cos, sin, 1, 0, 2), cos, sin, 1, 0, 2)             # low rows written twice
    np.testing.assert_array_equal(bits(faulty[:8]), bits(twice))


def test_nondeterministic_alternates_between_two_correct_kernels(emu, env):
    """The determinism check must catch this: every launch is a correct float32 kernel (one rounding less
    with the FMA), but two launches of the same case differ in some elements by an ulp."""
    dy, cos, sin = random_case((4, 8, 4, 64), (1, 8, 1, 64), seed=91)
    expected = golden(dy, cos, sin, 1, 0, 64)
    env.setenv("PRMG_EMU_FAULT", "nondeterministic")
    results = [emu.run(dy, cos, sin, 1, (0, 64))[1] for _ in range(3)]
    assert not np.array_equal(bits(results[0]), bits(results[1]))
    np.testing.assert_array_equal(bits(results[0]), bits(results[2]))
    assert any(np.array_equal(bits(result), bits(expected)) for result in results[:2])
    g, c, s = (np.broadcast_to(a.astype(np.float64), dy.shape) for a in (dy, cos, sin))
    partner_lane = np.arange(64) ^ 1                                      # interleave: lane j pairs with j ^ 1
    kept, partner = c * g, s[..., partner_lane] * g[..., partner_lane]
    exact = kept + np.where(np.arange(64) % 2 == 0, 1, -1) * partner
    bound = (np.abs(kept) + np.abs(partner)) * 2.0**-23                   # both kernels' float32 error bound
    for result in results[:2]:
        assert (np.abs(result - exact) <= bound).all()


# ---------------------------------------------------------------- forward faults --------------

@pytest.mark.parametrize("fault", ["fwd_sign", "fwd_partner_sin", "fwd_noop"])
def test_forward_faults_change_the_forward_only(emu, env, fault):
    x, cos, sin = random_case((2, 2, 2, 12), (1, 2, 1, 8), seed=92)
    clean, faulty = run_with_fault(emu, env, fault, x, cos, sin, 1, (2, 10), op="forward")
    np.testing.assert_array_equal(bits(clean), bits(forward_golden(x, cos, sin, 1, 2, 10)))
    assert not np.array_equal(bits(faulty), bits(clean))
    if fault == "fwd_noop":
        np.testing.assert_array_equal(bits(faulty), bits(x))
    if fault == "fwd_partner_sin":                   # the partner's sin, the grad's shortcut: y_i = c_i x_i - s_j x_j
        swapped = sin.reshape(-1, 4, 2)[..., ::-1].reshape(sin.shape)
        np.testing.assert_array_equal(bits(faulty), bits(forward_golden(x, cos, swapped, 1, 2, 10)))
    env.setenv("PRMG_EMU_FAULT", fault)               # a forward fault leaves the grad alone
    np.testing.assert_array_equal(bits(emu.run(x, cos, sin, 1, (2, 10))[1]), bits(golden(x, cos, sin, 1, 2, 10)))


@pytest.mark.parametrize("fault", ["sign", "own_sin", "noop", "core_tail", "nondeterministic"])
def test_grad_faults_leave_the_forward_alone(emu, env, fault):
    x, cos, sin = random_case((3, 5, 3, 8), (1, 5, 1, 8), seed=93)
    env.setenv("PRMG_EMU_FAULT", fault)
    for _ in range(2):
        status, y, _, _ = emu.run(x, cos, sin, 1, (0, 8), op="forward")
        assert status == 0
        np.testing.assert_array_equal(bits(y), bits(forward_golden(x, cos, sin, 1, 0, 8)))


def test_unknown_fault_name_is_refused_by_both_ops(emu, env):
    env.setenv("PRMG_EMU_FAULT", "sign,no_such_fault")
    x, cos, sin = fault_case()
    for op in OPS:
        assert emu.run(x, cos, sin, 1, (2, 10), op=op)[0] == INNER
        assert "no_such_fault" in emu.message()


@pytest.mark.parametrize("rows,wrong", [(280, ()), (320, (7,)), (40 * 15, (7, 8, 9, 10, 11, 12, 13, 14))])
def test_ub_stale_tables_is_wrong_only_on_a_cores_later_ub_passes(emu, env, rows, wrong):
    """A 1024-lane float32 slice: one UB pass holds 7 rows (README's ub_pass_rows). 280 rows give each of the 40
    cores 7, one pass: the fault changes nothing; 320 rows give 8, and a core's 8th row (its second pass) takes the
    tables of its first row; 600 rows give 15: rows 7-14 (the second and third passes) take the first pass's tables."""
    dy, cos, sin = random_case((1, rows, 1, 1024), (1, rows, 1, 1024), seed=97)
    clean, faulty = run_with_fault(emu, env, "ub_stale_tables", dy, cos, sin, 1, (0, 1024))
    np.testing.assert_array_equal(bits(clean), bits(golden(dy, cos, sin, 1, 0, 1024)))
    differs = np.nonzero((bits(faulty) != bits(clean)).reshape(rows, -1).any(axis=1))[0]
    share = rows // 40
    assert sorted(set(differs % share)) == list(wrong) and len(differs) == 40 * len(wrong)
