"""The C host emulator (runners/emulator), driven directly through ctypes.

Builds the three libraries into a tmp folder with ``make -C runners/emulator OUT=...`` and checks the
runtime's faithfulness (init, devices, device memory that faults on host access, copy checks, 512-byte
granularity, events), the operator's statuses (one per constraints row of operator.md), its float32
arithmetic and RNE rounding against numpy / ml_dtypes, and that every fault name changes behaviour.
The small ctypes helper here is deliberately independent of ``prmg_cli/acl.py``.
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
NULLPTR, PARAM_INVALID, TILING = 161001, 161002, 561002
WORKSPACE = 16 << 20

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
        "prmg_emu_live_executors": (I32, []),
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
        """GetWorkspaceSize of ``op`` (grad or forward) on tensor handles; returns (status, size, executor)."""
        array = None if partial_slice is None else self.aclCreateIntArray(int64s(partial_slice), len(partial_slice))
        size, executor = U64(), P()
        phase_one = (self.aclnnInplacePartialRotaryMulGradGetWorkspaceSize if op == "grad"
                     else self.aclnnInplacePartialRotaryMulGetWorkspaceSize)
        status = phase_one(
            dy, cos, sin, mode, array, ctypes.byref(size) if size_out else None,
            ctypes.byref(executor) if executor_out else None)
        if array is not None:
            self.aclDestroyIntArray(array)
        return status, size.value, executor.value

    def run(self, dy, cos, sin, mode=1, partial_slice=None, fmt=ND, op="grad", workspace_fill=None,
            strides=None):
        """The whole sequence of ``op`` on numpy arrays (dy placed 512 bytes into its buffer, with a guard
        after); the workspace is allocated with 4 KiB to spare after it and, with ``workspace_fill``, every
        byte of it set to that value first.

        Returns (status, dy read back, cos read back, guard bytes after dy read back); after ``run`` the
        workspace's spare bytes are in ``self.workspace_tail``.
        """
        guard = np.full(512, 0xA5, np.uint8)
        dy_base, dy_data = self.to_device(np.concatenate([np.zeros(512, np.uint8), dy.view(np.uint8).ravel(), guard]))
        dy_data += 512
        cos_base, cos_data = self.to_device(cos)
        sin_base, sin_data = self.to_device(sin)
        tensors = [self.tensor(dy.shape, dtype_code(dy), dy_data, strides=strides, fmt=fmt),
                   self.tensor(cos.shape, dtype_code(cos), cos_data, fmt=fmt),
                   self.tensor(sin.shape, dtype_code(sin), sin_data, fmt=fmt)]
        status, size, executor = self.workspace_size(*tensors, mode, partial_slice, op=op)
        if status == 0:
            workspace = self.malloc(size + 4096)
            assert self.aclrtMemset(workspace, size + 4096, 0, size + 4096) == 0
            if workspace_fill is not None:
                assert self.aclrtMemset(workspace, size, workspace_fill, size) == 0
            launch = self.aclnnInplacePartialRotaryMulGrad if op == "grad" else self.aclnnInplacePartialRotaryMul
            status = launch(workspace, size, executor, self.stream)
            assert self.aclrtSynchronizeStream(self.stream) == 0
            self.workspace_tail = self.from_device(workspace + size, np.zeros(4096, np.uint8))
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
    """Environment for the emulator, which reads PRMG_EMU_* and ASCEND_OPP_PATH at every
    GetWorkspaceSize and launch."""
    for name in ("PRMG_EMU_FAULT", "PRMG_EMU_FAULT_SHAPE", "PRMG_EMU_MODES"):
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

def golden(dy, cos, sin, mode, start, end):
    """dx per operator.md in float32 (two rounded products, one rounded sum), rounded to dy's dtype."""
    g = dy[..., start:end].astype(np.float32)
    c = np.broadcast_to(cos.astype(np.float32), g.shape)
    s = np.broadcast_to(sin.astype(np.float32), g.shape)
    length = end - start
    half, quarter = length // 2, length // 4

    def half_rule(g1, g2, c1, c2, s1, s2):
        return c1 * g1 + s2 * g2, c2 * g2 - s1 * g1

    if mode == 0:
        out = np.concatenate(half_rule(g[..., :half], g[..., half:], c[..., :half], c[..., half:],
                                       s[..., :half], s[..., half:]), axis=-1)
    elif mode == 1:
        out = np.empty_like(g)
        out[..., 0::2] = c[..., 0::2] * g[..., 0::2] + s[..., 1::2] * g[..., 1::2]
        out[..., 1::2] = c[..., 1::2] * g[..., 1::2] - s[..., 0::2] * g[..., 0::2]
    elif mode == 2:
        parts = []
        for lo in (0, half):
            q1, q2 = slice(lo, lo + quarter), slice(lo + quarter, lo + half)
            parts += half_rule(g[..., q1], g[..., q2], c[..., q1], c[..., q2], s[..., q1], s[..., q2])
        out = np.concatenate(parts, axis=-1)
    else:
        first, second = half_rule(g[..., :half], g[..., half:], c[..., :half], c[..., half:],
                                  s[..., :half], s[..., half:])
        out = np.empty_like(g)
        out[..., 0::2], out[..., 1::2] = first, second
    dx = dy.copy()
    dx[..., start:end] = out.astype(dy.dtype)
    return dx


def random_case(shape, cos_shape, dtype=np.float32, table_dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    dy = rng.uniform(-1, 1, shape).astype(dtype)
    cos = rng.uniform(-1, 1, cos_shape).astype(table_dtype)
    sin = rng.uniform(-1, 1, cos_shape).astype(table_dtype)
    return dy, cos, sin


def bits(array):
    return np.ascontiguousarray(array).view(f"u{array.dtype.itemsize}")


# ---------------------------------------------------------------- build and runtime ----------

def test_build_is_laid_out_like_a_toolkit(toolkit):
    for library in PROTOTYPES:
        assert (toolkit / "lib64" / library).is_file()
    assert (toolkit / "opp" / "vendors").is_dir()
    set_env = (toolkit / "set_env.sh").read_text()
    assert f'ASCEND_HOME_PATH="{toolkit}"' in set_env and "ASCEND_OPP_PATH" in set_env
    assert not list(SOURCES.glob("*.so")) and not list(SOURCES.glob("*.o"))


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
        ("non-contiguous strides (refused at launch)", good, table, table, 1, (0, 8), {"strides": [64, 1, 32, 2]}, 0),
        ("any stride on a length-1 axis", ((1, 2, 2, 8), FLOAT32), table, table, 1, (0, 8),
         {"strides": [7, 16, 8, 1]}, 0),
        ("gap next to a length-1 axis (refused at launch)", ((1, 2, 2, 8), FLOAT32), table, table, 1, (0, 8),
         {"strides": [7, 32, 8, 1]}, 0),
        ("empty tensor with any strides", ((1, 0, 2, 16), FLOAT32), table, table, 1, (0, 8),
         {"strides": [5, 3, 7, 9]}, TILING),
        ("non-zero offset (refused at launch)", good, table, table, 1, (0, 8), {"offset": 16}, 0),
        ("slice of 3 values", good, table, table, 1, (0, 8, 8), {}, PARAM_INVALID),
        ("mode 0 unsupported", good, table, table, 0, (0, 8), {}, TILING),
        ("mode 2 unsupported", good, table, table, 2, (0, 8), {}, TILING),
        ("mode 4", good, table, table, 4, (0, 8), {}, TILING),
        ("mode -1", good, table, table, -1, (0, 8), {}, TILING),
        ("dy 3-D", ((2, 2, 16), FLOAT32), table, table, 1, (0, 8), {}, TILING),
        ("cos 5-D", good, ((1, 1, 2, 1, 8), FLOAT32), ((1, 1, 2, 1, 8), FLOAT32), 1, (0, 8), {}, TILING),
        ("cos shape != sin shape", good, table, ((1, 1, 1, 8), FLOAT32), 1, (0, 8), {}, TILING),
        ("dim 0", ((1, 0, 2, 16), FLOAT32), table, table, 1, (0, 8), {}, TILING),
        ("D > 1024", ((1, 1, 1, 1040), FLOAT32), ((1, 1, 1, 8), FLOAT32), ((1, 1, 1, 8), FLOAT32), 1,
         (0, 8), {}, TILING),
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
        assert size == WORKSPACE and executor


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
    assert emu.workspace_size(None, table, table, 1, (0, 8))[0] == NULLPTR
    assert emu.workspace_size(table, None, table, 1, (0, 8))[0] == NULLPTR
    assert emu.workspace_size(table, table, None, 1, (0, 8))[0] == NULLPTR
    assert emu.workspace_size(table, table, table, 1, (0, 8), size_out=False)[0] == NULLPTR
    assert emu.workspace_size(table, table, table, 1, (0, 8), executor_out=False)[0] == NULLPTR
    bad_mode_and_dtype = emu.workspace_size(table, table, table, 9, (0, 8))[0]
    assert bad_mode_and_dtype == PARAM_INVALID


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
    assert emu.aclnnInplacePartialRotaryMulGrad(None, size, executor, emu.stream) == PARAM_INVALID


# ---------------------------------------------------------------- fault injection ------------

def fault_case():
    """Interleave, slice [2, 10) of D = 12, cos/sin broadcast over B and N (distinct per row)."""
    return random_case((2, 2, 2, 12), (1, 2, 1, 8), seed=11)


@pytest.mark.parametrize("fault", ["sign", "own_sin", "half_pairing", "shift_slice", "ignore_broadcast",
                                   "skip_last_row", "clobber_passthrough", "write_past_end", "modify_cos",
                                   "bf16_compute", "noop", "nan", "accept_mode"])
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


def test_tensor_data_outside_device_memory_is_an_aicore_exception(emu, env):
    host = np.zeros(8, np.float32)
    dy = emu.tensor((1, 1, 1, 8), FLOAT32, host.ctypes.data)
    table = emu.tensor((1, 1, 1, 8), FLOAT32, emu.malloc(32))
    status, size, executor = emu.workspace_size(dy, table, table, 1, (0, 8))
    assert status == 0
    assert emu.aclnnInplacePartialRotaryMulGrad(emu.malloc(size), size, executor, emu.stream) == 507015
    assert "dy data" in emu.message()


def test_d_over_1024_message(emu, env):
    dy, table = emu.tensor((1, 1, 1, 2048), FLOAT32, 0x1000), emu.tensor((1, 1, 1, 8), FLOAT32, 0x2000)
    assert emu.workspace_size(dy, table, table, 1, (0, 8))[0] == TILING
    assert emu.message() == "InplacePartialRotaryMulGrad: D = 2048 exceeds 1024"


# ---------------------------------------------------------------- the real stack, mirrored ---------

def _small_tensors(emu, shape=(1, 2, 2, 8), strides=None, offset=0):
    values = np.arange(int(np.prod(shape)), dtype=np.float32)
    base, data = emu.to_device(values)
    table = emu.to_device(np.full(8, 0.5, np.float32))[1]
    dy = emu.tensor(shape, FLOAT32, data, strides, offset)
    cos = emu.tensor((1, 1, 1, 8), FLOAT32, table)
    return dy, cos, data, values


@pytest.mark.parametrize("strides, offset", [([64, 1, 32, 2], 0), ([7, 32, 8, 1], 0), (None, 16)])
def test_non_contiguous_input_passes_phase_one_and_the_launch_refuses_it(emu, env, strides, offset):
    dy, cos, data, values = _small_tensors(emu, strides=strides, offset=offset)
    status, size, executor = emu.workspace_size(dy, cos, cos, 1, (0, 8))
    assert (status, size) == (0, WORKSPACE)
    assert emu.aclnnInplacePartialRotaryMulGrad(emu.malloc(size), size, executor, emu.stream) == 561000
    message = emu.message()
    assert "not contiguous" in message and "AutoContiguous" in message
    np.testing.assert_array_equal(emu.from_device(data, values), values)      # untouched


@pytest.mark.parametrize("mode, status", [(2**32 + 1, 0), (2**32 + 7, TILING), (-2**32 + 1, 0), (2**40, TILING)])
def test_rotary_mode_is_read_as_int32(emu, env, mode, status):
    dy, cos, _, _ = _small_tensors(emu)
    assert emu.workspace_size(dy, cos, cos, mode, (0, 8))[0] == status


@pytest.mark.parametrize("value", [None, "", "/nonexistent/opp", "file"])
def test_ascend_opp_path_is_read_at_every_call(emu, env, tmp_path, value):
    dy, cos, _, _ = _small_tensors(emu)
    if value is None:
        env.delenv("ASCEND_OPP_PATH")
    else:
        if value == "file":
            value = str(tmp_path / "file")
            Path(value).write_text("")
        env.setenv("ASCEND_OPP_PATH", value)
    for op in ("grad", "forward"):
        assert emu.workspace_size(dy, cos, cos, 1, (0, 8), op=op)[0] == 561107
        assert "ASCEND_OPP_PATH" in emu.message()


def test_unlaunched_executors_are_destroyed_and_nothing_leaks(emu, env):
    dy, cos, _, _ = _small_tensors(emu)
    before = emu.prmg_emu_live_executors()
    status, size, executor = emu.workspace_size(dy, cos, cos, 1, (0, 8))
    assert status == 0 and emu.prmg_emu_live_executors() == before + 1
    assert emu.aclDestroyAclOpExecutor(executor) == 0
    assert emu.prmg_emu_live_executors() == before
    assert emu.aclDestroyAclOpExecutor(executor) == PARAM_INVALID and "already" in emu.message()
    _, size, launched = emu.workspace_size(dy, cos, cos, 1, (0, 8), op="forward")
    assert emu.aclnnInplacePartialRotaryMul(emu.malloc(size), size, launched, emu.stream) == 0
    assert emu.aclDestroyAclOpExecutor(launched) == PARAM_INVALID       # a launch freed it
    assert emu.prmg_emu_live_executors() == before


def test_soc_name_and_pinned_host_memory(emu, env):
    assert emu.aclrtGetSocName() == b"Ascend950PR"
    env.setenv("PRMG_EMU_SOC", "Ascend950DT_test")
    assert emu.aclrtGetSocName() == b"Ascend950DT_test"
    pinned = P()
    assert emu.aclrtMallocHost(ctypes.byref(pinned), 4096) == 0 and pinned.value % 4096 == 0
    host = (ctypes.c_float * 1024).from_address(pinned.value)
    host[0], host[1023] = 1.5, -2.5
    device = emu.malloc(4096)
    assert emu.aclrtMemcpy(device, 4096, pinned.value, 4096, H2D) == 0
    back = emu.from_device(device, np.zeros(1024, np.float32))
    assert (back[0], back[1023]) == (1.5, -2.5)
    assert emu.aclrtFreeHost(pinned.value) == 0
    assert emu.aclrtFreeHost(pinned.value) == INVALID_PARAM


def test_version_files_are_where_a_toolkit_keeps_them(toolkit):
    assert "toolkit_installed_version=[8.5.0-emulator" in (toolkit / "version.cfg").read_text()
    info = list(toolkit.glob("*-linux/ascend_toolkit_install.info"))
    assert len(info) == 1 and "version=8.5.0-emulator" in info[0].read_text()


# ---------------------------------------------------------------- the forward op -------------------

def forward_golden(x, cos, sin, mode, start, end):
    """y = z*c + R(z)*s over the slice in float32 (operator.md), rounded to x's dtype."""
    z = x[..., start:end].astype(np.float32)
    length = end - start
    if mode == 3:
        z = np.concatenate([z[..., 0::2], z[..., 1::2]], axis=-1)
    c = np.broadcast_to(cos.astype(np.float32), z.shape)
    s = np.broadcast_to(sin.astype(np.float32), z.shape)
    rotated = np.empty_like(z)
    if mode == 1:
        rotated[..., 0::2], rotated[..., 1::2] = -z[..., 1::2], z[..., 0::2]
    else:
        group = length // 2 if mode == 2 else length
        for lo in range(0, length, group):
            h = group // 2
            rotated[..., lo:lo + h], rotated[..., lo + h:lo + group] = -z[..., lo + h:lo + group], z[..., lo:lo + h]
    y = x.copy()
    y[..., start:end] = (c * z + s * rotated).astype(x.dtype)
    return y


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
@pytest.mark.parametrize("dtype, table", [(np.float32, np.float32), (np.float16, np.float32),
                                          (ml_dtypes.bfloat16, ml_dtypes.bfloat16)])
def test_forward_matches_its_formula_bit_for_bit(emu, env, mode, dtype, table):
    env.setenv("PRMG_EMU_MODES", "0,1,2,3")
    x, cos, sin = random_case((2, 3, 2, 40), (2, 1, 2, 24), dtype, table, seed=mode + 5)
    status, y, _, guard = emu.run(x, cos, sin, mode, (5, 29), op="forward")
    assert status == 0 and (guard == 0xA5).all()
    np.testing.assert_array_equal(bits(y), bits(forward_golden(x, cos, sin, mode, 5, 29)))


FORWARD_ROWS = [
    ("valid", (1, 2, 2, 16), FLOAT32, (1, 1, 1, 8), FLOAT32, 1, (4, 12), ND, 0),
    ("mode unsupported today", (1, 2, 2, 16), FLOAT32, (1, 1, 1, 8), FLOAT32, 0, (4, 12), ND, PARAM_INVALID),
    ("mode 7", (1, 2, 2, 16), FLOAT32, (1, 1, 1, 8), FLOAT32, 7, (4, 12), ND, PARAM_INVALID),
    ("x int32", (1, 2, 2, 16), INT32, (1, 1, 1, 8), FLOAT32, 1, (4, 12), ND, PARAM_INVALID),
    ("cos fp16 for a bf16 x", (1, 2, 2, 16), BF16, (1, 1, 1, 8), FLOAT16, 1, (4, 12), ND, PARAM_INVALID),
    ("cos fp32 for a bf16 x", (1, 2, 2, 16), BF16, (1, 1, 1, 8), FLOAT32, 1, (4, 12), ND, 0),
    ("format NCHW", (1, 2, 2, 16), FLOAT32, (1, 1, 1, 8), FLOAT32, 1, (4, 12), NCHW, PARAM_INVALID),
    ("D odd", (1, 2, 2, 15), FLOAT32, (1, 1, 1, 8), FLOAT32, 1, (4, 12), ND, PARAM_INVALID),
    ("D over 1024", (1, 1, 1, 2048), FLOAT32, (1, 1, 1, 8), FLOAT32, 1, (0, 8), ND, PARAM_INVALID),
    ("slice odd", (1, 2, 2, 16), FLOAT32, (1, 1, 1, 7), FLOAT32, 1, (4, 11), ND, PARAM_INVALID),
    ("slice past D", (1, 2, 2, 16), FLOAT32, (1, 1, 1, 8), FLOAT32, 1, (12, 20), ND, PARAM_INVALID),
    ("layout 1S1D refused on 950", (2, 2, 2, 16), FLOAT32, (1, 2, 1, 8), FLOAT32, 1, (4, 12), ND, PARAM_INVALID),
    ("layout B1ND", (2, 2, 2, 16), FLOAT32, (2, 1, 2, 8), FLOAT32, 1, (4, 12), ND, 0),
    ("layout B11D", (2, 2, 2, 16), FLOAT32, (2, 1, 1, 8), FLOAT32, 1, (4, 12), ND, 0),
    ("3-D x", (2, 2, 16), FLOAT32, (1, 1, 1, 8), FLOAT32, 1, (4, 12), ND, PARAM_INVALID),
    ("empty slice", (1, 2, 2, 16), FLOAT32, (1, 1, 1, 8), FLOAT32, 1, (6, 6), ND, 0),
]


@pytest.mark.parametrize("label, shape, dtype, cos_shape, cos_dtype, mode, piece, fmt, expected", FORWARD_ROWS,
                         ids=[row[0] for row in FORWARD_ROWS])
def test_forward_constraints(emu, env, label, shape, dtype, cos_shape, cos_dtype, mode, piece, fmt, expected):
    x = emu.tensor(shape, dtype, 0x1000, fmt=fmt)
    table = emu.tensor(cos_shape, cos_dtype, 0x2000, fmt=fmt)
    assert emu.workspace_size(x, table, table, mode, piece, op="forward")[0] == expected, emu.message()


def test_forward_null_pointers_and_a_grad_executor_refused(emu, env):
    x = emu.tensor((1, 1, 1, 8), FLOAT32, emu.malloc(32))
    assert emu.workspace_size(None, x, x, 1, (0, 8), op="forward")[0] == NULLPTR
    _, size, executor = emu.workspace_size(x, x, x, 1, (0, 8))
    assert emu.aclnnInplacePartialRotaryMul(emu.malloc(size), size, executor, emu.stream) == PARAM_INVALID
    assert "belongs to InplacePartialRotaryMulGrad" in emu.message()


# ---------------------------------------------------------------- the new faults -------------------

def regime_case(shape=(2, 3, 7, 140), cos_shape=(2, 3, 7, 130), piece=(5, 135), dtype=np.float32):
    """42 rows (not a multiple of 40), L = 130 (two whole tiles and a partial one), an odd start, D = 140
    (not a multiple of 8 fp32 elements), cos/sin full along B, S and N."""
    return random_case(shape, cos_shape, dtype, seed=17) + (piece,)


def faulty_run(emu, env, fault, case=None, mode=1, op="grad", workspace_fill=None):
    dy, cos, sin, piece = case or regime_case()
    env.setenv("PRMG_EMU_FAULT", fault)
    result = emu.run(dy, cos, sin, mode, piece, op=op, workspace_fill=workspace_fill)
    env.delenv("PRMG_EMU_FAULT")
    expected = (golden if op == "grad" else forward_golden)(dy, cos, sin, mode, *piece)
    return result, expected, dy


@pytest.mark.parametrize("fault", ["core_tail", "tile_tail", "unaligned_start", "row_pad", "broadcast_b",
                                   "broadcast_s", "broadcast_n"])
def test_regime_faults_change_the_result_where_their_regime_is(emu, env, fault):
    (status, dx, _, guard), expected, _ = faulty_run(emu, env, fault)
    assert status == 0 and (guard == 0xA5).all()
    assert not np.array_equal(bits(dx), bits(expected))
    # outside its regime (8 rows, L = 32 from an aligned start, D = 64, cos broadcast everywhere) the fault is inert
    calm = random_case((1, 2, 4, 64), (1, 1, 1, 32), seed=3) + ((8, 40),)
    (status, dx, _, _), expected, _ = faulty_run(emu, env, fault, calm)
    np.testing.assert_array_equal(bits(dx), bits(expected))


def test_special_value_faults(emu, env):
    dy, cos, sin, piece = random_case((1, 1, 2, 16), (1, 1, 1, 8), seed=4) + ((4, 12),)
    dy[0, 0, 0, 4] = np.nan
    dy[0, 0, 0, 0] = -0.0
    (status, dx, _, _), expected, _ = faulty_run(emu, env, "squash_nan", (dy, cos, sin, piece))
    assert np.isnan(expected[0, 0, 0, 4]) and dx[0, 0, 0, 4] == 0
    (status, dx, _, _), expected, _ = faulty_run(emu, env, "passthrough_add_zero", (dy, cos, sin, piece))
    assert bits(expected)[0, 0, 0, 0] == 0x80000000 and bits(dx)[0, 0, 0, 0] == 0
    np.testing.assert_array_equal(dx[..., 4:12], expected[..., 4:12])


def test_mixed_cast_and_row_index_u16(emu, env):
    case = random_case((1, 2, 2, 64), (1, 2, 1, 64), ml_dtypes.bfloat16, np.float32, seed=9) + ((0, 64),)
    (_, dx, _, _), expected, _ = faulty_run(emu, env, "mixed_cast", case)
    assert not np.array_equal(bits(dx), bits(expected))
    case = random_case((1, 2, 2, 64), (1, 2, 1, 64), seed=9) + ((0, 64),)
    (_, dx, _, _), expected, _ = faulty_run(emu, env, "mixed_cast", case)         # same dtypes: inert
    np.testing.assert_array_equal(bits(dx), bits(expected))
    many = random_case((1, 65540, 1, 4), (1, 1, 1, 2), seed=2) + ((0, 2),)
    (_, dx, _, _), expected, dy = faulty_run(emu, env, "row_index_u16", many)
    np.testing.assert_array_equal(bits(dx[0, 65536:]), bits(dy[0, 65536:]))     # the high rows never written


def test_workspace_faults(emu, env):
    case = random_case((1, 2, 2, 16), (1, 2, 1, 16), seed=5) + ((0, 16),)
    (status, dx, _, _), expected, _ = faulty_run(emu, env, "workspace_uninit_read", case)
    np.testing.assert_array_equal(bits(dx), bits(expected))                     # zeroed workspace: hidden
    (status, dx, _, _), expected, _ = faulty_run(emu, env, "workspace_uninit_read", case, workspace_fill=0xFF)
    assert np.isnan(dx[..., :16]).all()                                          # poisoned: every lane NaN
    (status, dx, _, _), expected, _ = faulty_run(emu, env, "workspace_overrun", case)
    assert status == 0 and (emu.workspace_tail[:4] == 0xFF).all() and (emu.workspace_tail[4:] == 0).all()


def test_nondeterministic_fault_differs_by_an_ulp_between_launches(emu, env):
    case = random_case((2, 8, 4, 64), (1, 8, 1, 64), seed=6) + ((0, 64),)
    dy, cos, sin, piece = case
    env.setenv("PRMG_EMU_FAULT", "nondeterministic")
    first, second = (emu.run(dy, cos, sin, 1, piece)[1] for _ in range(2))
    env.delenv("PRMG_EMU_FAULT")
    differ = bits(first) != bits(second)
    assert differ.any()
    # each launch is a correct float32 kernel: they differ within float32 rounding of the products (|c|, |s|, |dy|
    # <= 1, so every product magnitude sum m <= 2 and the rounding of one product is at most 2^-24 * 2)
    assert np.abs(first.astype(np.float64) - second.astype(np.float64)).max() <= 2.0 ** -22


@pytest.mark.parametrize("fault", ["fwd_sign", "fwd_partner_sin", "fwd_noop"])
def test_forward_faults_act_on_the_forward_only(emu, env, fault):
    dy, cos, sin, piece = random_case((1, 2, 2, 16), (1, 1, 1, 16), seed=8) + ((0, 16),)
    (_, y, _, _), expected, _ = faulty_run(emu, env, fault, (dy, cos, sin, piece), op="forward")
    assert not np.array_equal(bits(y), bits(expected))
    (_, dx, _, _), expected, _ = faulty_run(emu, env, fault, (dy, cos, sin, piece), op="grad")
    np.testing.assert_array_equal(bits(dx), bits(expected))
