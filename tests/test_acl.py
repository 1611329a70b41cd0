"""The ctypes binding, driven through the built host emulator: results, statuses, contract checks, cleanup."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from prmg_cli.cases.loader import Case, Expect
from prmg_cli.device import acl
from prmg_cli.device.acl import AclError, AclSession
from prmg_cli.device.toolkit import OP_SYMBOL, emulator_toolkit
from prmg_cli.dtypes import OPERATOR_DTYPES, bits, to_numpy
from prmg_cli.inputs.seeded import Inputs
from prmg_cli.ops import GRAD

NUMPY = {name: to_numpy(name) for name in OPERATOR_DTYPES}


@pytest.fixture(scope="module")
def session(emulator):
    with AclSession(emulator) as opened:
        yield opened


def make_case(shape, cos_shape, partial_slice, dtype="float32", cos_dtype=None, **extra) -> Case:
    cos_dtype = cos_dtype or dtype
    return Case(name="t", source="t.yaml", shape=shape, cos_shape=cos_shape, sin_shape=cos_shape,
                partial_slice=partial_slice, dtype=dtype, cos_dtype=cos_dtype, sin_dtype=cos_dtype, **extra)


def random_inputs(case: Case, seed: int = 0) -> Inputs:
    rng = np.random.default_rng(seed)
    return Inputs(rng.uniform(-1, 1, case.shape).astype(NUMPY[case.dtype]),
                  rng.uniform(-1, 1, case.cos_shape).astype(NUMPY[case.cos_dtype]),
                  rng.uniform(-1, 1, case.sin_shape).astype(NUMPY[case.sin_dtype]))


def test_worked_example_of_operator_md(session):
    case = make_case((1, 1, 1, 8), (1, 1, 1, 4), (2, 6))
    inputs = Inputs(np.arange(1, 9, dtype=np.float32).reshape(case.shape),
                    np.array([0.5, 0.6, 0.7, 0.8], np.float32).reshape(case.cos_shape),
                    np.array([0.1, 0.2, 0.3, 0.4], np.float32).reshape(case.sin_shape))
    outcome = session.launch(case, inputs)
    assert (outcome.status, outcome.failed_call, outcome.contract_violations) == (0, "", ())
    np.testing.assert_allclose(outcome.dy.ravel(), [1, 2, 2.3, 2.1, 5.9, 3.3, 7, 8], rtol=1e-6)
    assert outcome.workspace_size > 0
    assert outcome.kernel_ms is not None and outcome.kernel_ms >= 0


@pytest.mark.parametrize("dtype, cos_dtype, tolerance", [
    ("float32", "float32", 1e-6), ("float16", "float16", 1e-3), ("bfloat16", "bfloat16", 8e-3),
    ("bfloat16", "float32", 8e-3)])
def test_interleave_matches_the_golden(session, dtype, cos_dtype, tolerance):
    case = make_case((2, 3, 4, 40), (1, 3, 1, 22), (7, 29), dtype, cos_dtype)     # odd start, 1S1D broadcast
    inputs = random_inputs(case, seed=len(dtype) + len(cos_dtype))
    outcome = session.launch(case, inputs)
    assert (outcome.status, outcome.contract_violations) == (0, ())
    assert outcome.dy.dtype == inputs.dy.dtype and outcome.dy.shape == case.shape
    expected = GRAD.golden(inputs.dy, inputs.cos, inputs.sin, 1, case.partial_slice)
    got, want = outcome.dy.astype(np.float64), expected.astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)
    outside = np.r_[0:7, 29:40]
    assert np.array_equal(bits(outcome.dy[..., outside]), bits(inputs.dy[..., outside]))
    assert not np.array_equal(bits(outcome.dy[..., 7:29]), bits(inputs.dy[..., 7:29]))


def test_refused_case_returns_the_status_and_leaves_dy_alone(session):
    case = make_case((1, 2, 1, 2048), (1, 2, 1, 8), (0, 8))
    inputs = random_inputs(case)
    outcome = session.launch(case, inputs)
    assert outcome.status == 561002
    assert outcome.failed_call == OP_SYMBOL
    assert "2048" in outcome.error_message
    assert np.array_equal(bits(outcome.dy), bits(inputs.dy))
    assert outcome.contract_violations == ()


@pytest.mark.parametrize("extra, shape, status", [
    ({"null": ("cos",)}, (1, 2, 1, 8), 161001),
    ({"null": ("dy",)}, (1, 2, 1, 8), 161001),
    ({"dy_strides": (32, 16, 16, 2)}, (1, 2, 1, 8), 561000),   # every other element: refused at launch
    ({}, (1, 2, 1, 2048), 561002),                              # D > 1024
])
def test_negative_tensors_are_built_as_asked(session, extra, shape, status):
    case = make_case(shape, (1, 1, 1, 8), (0, 8), **extra)
    inputs = random_inputs(case)
    outcome = session.launch(case, inputs)
    assert outcome.status == status, outcome.error_message
    assert outcome.dy.shape == shape
    assert np.array_equal(bits(outcome.dy), bits(inputs.dy)) and outcome.dy_changed is False
    assert outcome.contract_violations == ()


def test_an_empty_dy_succeeds_with_no_workspace(session):
    """nnopbase skips the tiling and the kernel of an empty output: success, 0 bytes of workspace, even with
    a slice outside D."""
    case = make_case((1, 0, 1, 8), (1, 1, 1, 8), (-2, 40))
    outcome = session.launch(case, random_inputs(case))
    assert (outcome.status, outcome.workspace_size, outcome.contract_violations) == (0, 0, ())
    assert outcome.dy.shape == case.shape


def test_a_refused_first_phase_leaves_no_executor_behind(session, emulator):
    """A refused GetWorkspaceSize may leave a busy pooled executor set (acl-abi.md): the binding releases it."""
    import ctypes

    live = ctypes.CDLL(str(emulator.root / "lib64" / "libascendcl.so")).prmg_emu_live_executors
    before = live()
    for shape, piece in (((1, 2, 1, 2048), (0, 8)), ((1, 2, 1, 16), (0, 6))):     # 561002: D > 1024, L != cos D
        case = make_case(shape, (1, 2, 1, 8), piece)
        assert session.launch(case, random_inputs(case)).status == 561002
    assert live() == before


def test_rows_sharing_storage_are_compared_on_the_storage(session):
    """dy_strides [4, 4, 0, 1]: rows share storage, so the uploaded view differs from the input, yet a
    refused call leaves the storage as uploaded: not a change."""
    case = make_case((1, 2, 2, 4), (1, 1, 1, 4), (0, 4), dy_strides=(4, 4, 0, 1),
                     expect=Expect(561000, "launch"))
    inputs = random_inputs(case)
    outcome = session.launch(case, inputs)
    assert outcome.status == 561000 and outcome.dy_changed is False
    from prmg_cli.judging.judge import judge
    assert judge(case, inputs, outcome).status == "passed"


def test_the_workspace_is_poisoned_and_guarded(session, monkeypatch):
    case = make_case((1, 2, 2, 16), (1, 1, 1, 16), (0, 16))
    inputs = random_inputs(case)
    monkeypatch.setenv("PRMG_EMU_FAULT", "workspace_overrun")
    outcome = session.launch(case, inputs)
    assert outcome.contract_violations[0].startswith(
        "guard zone after workspace changed at byte +0 (4 bytes, through +3)")
    assert "the kernel wrote outside the 16777216-byte workspace it asked for" in outcome.contract_violations[0]
    monkeypatch.setenv("PRMG_EMU_FAULT", "workspace_uninit_read")
    outcome = session.launch(case, inputs)
    assert np.isnan(outcome.dy.astype(np.float32)).all() and outcome.contract_violations == ()
    monkeypatch.delenv("PRMG_EMU_FAULT")
    assert session.launch(case, inputs).contract_violations == ()       # the guards were rewritten


def test_write_past_end_is_caught_by_the_guard_zone(session, monkeypatch):
    monkeypatch.setenv("PRMG_EMU_FAULT", "write_past_end")
    case = make_case((1, 2, 1, 8), (1, 2, 1, 8), (0, 8))
    outcome = session.launch(case, random_inputs(case))
    assert outcome.status == 0
    assert len(outcome.contract_violations) == 1
    assert outcome.contract_violations[0].startswith("guard zone after dy changed at byte +0")


@pytest.mark.parametrize("shape", [(1, 2, 2, 64), (1, 1, 3, 1000)])
def test_a_write_beyond_a_512_byte_guard_lands_in_one_of_32_kib(session, monkeypatch, shape):
    """The kernel writes 576 bytes past dy (64 beyond the 512-byte zones of before): inside the zone after dy, every
    side of every buffer 32 KiB, whatever the data's size (a 512 multiple or not)."""
    assert acl.GUARD_BYTES >= 32 << 10
    monkeypatch.setenv("PRMG_EMU_FAULT", "write_beyond_guard")
    case = make_case(shape, (1, 1, 1, shape[-1]), (0, shape[-1]))
    outcome = session.launch(case, random_inputs(case))
    assert outcome.contract_violations == ("guard zone after dy changed at byte +576 (4 bytes, through +579)",)
    monkeypatch.delenv("PRMG_EMU_FAULT")
    assert session.launch(case, random_inputs(case)).contract_violations == ()


@pytest.mark.parametrize("tensor", ["dy", "cos", "sin", "workspace"])
def test_a_near_overrun_of_any_buffer_lands_in_its_guard_zone(session, monkeypatch, tensor):
    """The kernel writes 64 bytes, 4 KiB or 30 KiB past the end of a buffer's data (the workspace's: the size it
    asked for), or as far before its start: each lands in a guard zone, which says where."""
    monkeypatch.setenv("PRMG_EMU_FAULT", "write_beyond_guard")
    case = make_case((1, 2, 2, 64), (1, 1, 1, 64), (0, 64))
    inputs = random_inputs(case)
    for distance in (64, 4 << 10, 30 << 10, -64, -(4 << 10), -(30 << 10)):
        monkeypatch.setenv("PRMG_EMU_BEYOND_GUARD", f"{tensor}:{distance}")
        violations = session.launch(case, inputs).contract_violations
        side = "after" if distance >= 0 else "before"
        said = f"guard zone {side} {tensor} changed at byte {distance:+d} (4 bytes, through {distance + 3:+d})"
        assert len(violations) == 1 and violations[0].startswith(said), violations


@pytest.mark.verdict
def test_modified_cos_is_caught(session, monkeypatch):
    monkeypatch.setenv("PRMG_EMU_FAULT", "modify_cos")
    case = make_case((1, 2, 1, 8), (1, 2, 1, 8), (0, 8))
    outcome = session.launch(case, random_inputs(case))
    assert any(line.startswith("cos changed at (") and ", first of " in line
               for line in outcome.contract_violations), outcome.contract_violations
    assert not any("sin" in line or "guard" in line for line in outcome.contract_violations)


@pytest.mark.verdict
def test_every_byte_of_both_guard_zones_is_compared():
    """A changed byte anywhere in the guard zone before the data or after it -- its first, its last, one in the
    middle -- is a contract breach named by its zone and offset; intact zones are none."""
    from prmg_cli.vocab import GUARD_BYTES, GUARD_FILL

    def zone():
        return np.full(GUARD_BYTES, GUARD_FILL, np.uint8)

    buffer = acl._GuardedBuffer("dy", 0, np.zeros(4, np.float32), 16 + 2 * GUARD_BYTES, guards=(zone(), zone()))
    assert buffer.guard_violations() == []
    for side, offset, said in ((0, 0, f"before dy changed at byte -{GUARD_BYTES}"), (0, GUARD_BYTES - 1,
                               "before dy changed at byte -1"), (1, 0, "after dy changed at byte +0"),
                               (1, GUARD_BYTES // 2 + 3, f"after dy changed at byte +{GUARD_BYTES // 2 + 3}"),
                               (1, GUARD_BYTES - 1, f"after dy changed at byte +{GUARD_BYTES - 1}")):
        guards = [zone(), zone()]
        guards[side][offset] ^= 0x80
        buffer.guards = tuple(guards)
        assert buffer.guard_violations() == [f"guard zone {said}"], (side, offset)


def test_guard_ranges_are_summarised():
    lines = acl._describe_ranges("guard zone before dy changed", np.array([-4, -3, -2, -1]))
    assert lines == ["guard zone before dy changed at byte -4 (4 bytes, through -1)"]
    lines = acl._describe_ranges("guard zone after dy changed", np.array([0, 7, 8, 20, 30, 40, 50]))
    assert lines[:2] == ["guard zone after dy changed at byte +0",
                         "guard zone after dy changed at byte +7 (2 bytes, through +8)"]
    assert lines[-1] == "guard zone after dy changed in 2 more ranges (7 bytes in all)"


def test_acl_error_names_function_status_and_message(emulator):
    error = AclError("aclrtMalloc", 207001, "out of memory")
    assert str(error) == "aclrtMalloc failed: 207001 ACL_ERROR_RT_MEMORY_ALLOCATION: out of memory"
    assert str(AclError("aclCreateTensor", None)) == "aclCreateTensor failed: returned NULL"
    with pytest.raises(AclError) as raised:
        AclSession(emulator, device=7)                     # the emulator has one device by default
    assert raised.value.function == "aclrtSetDevice"
    assert str(raised.value).startswith("aclrtSetDevice failed: 107001 ACL_ERROR_RT_INVALID_DEVICEID")


def test_modes_switched_on_for_the_emulator(emulator_home, monkeypatch):
    monkeypatch.delenv("PRMG_EMU_MODES", raising=False)       # restored after the test
    case = make_case((1, 2, 1, 16), (1, 2, 1, 8), (4, 12), rotary_mode=0)
    inputs = random_inputs(case)
    with AclSession(emulator_toolkit()) as default:
        assert default.launch(case, inputs).status == 561002
    with AclSession(emulator_toolkit(modes=[0, 1, 2, 3])) as widened:
        outcome = widened.launch(case, inputs)
    assert outcome.status == 0
    expected = GRAD.golden(inputs.dy, inputs.cos, inputs.sin, 0, case.partial_slice)
    np.testing.assert_allclose(outcome.dy, expected, rtol=1e-6, atol=1e-6)


PAIRS = {"aclrtMalloc": "aclrtFree", "aclCreateTensor": "aclDestroyTensor",
         "aclCreateIntArray": "aclDestroyIntArray", "aclrtCreateEventWithFlag": "aclrtDestroyEvent"}


def count_calls(session, monkeypatch, fail_download: bool = False) -> dict[str, int]:
    """Wrap the session's acquire/release functions to count calls; optionally fail every D2H copy."""
    calls = dict.fromkeys([*PAIRS, *PAIRS.values()], 0)
    api = session._api
    for name in calls:
        def counted(*args, _function=getattr(api, name), _name=name):
            calls[_name] += 1
            return _function(*args)
        monkeypatch.setattr(api, name, counted)
    if fail_download:
        memcpy = api.aclrtMemcpy
        monkeypatch.setattr(api, "aclrtMemcpy", lambda *args: 207001 if args[4] == 2 else memcpy(*args))
    return calls


@pytest.mark.parametrize("partial_slice, fail_download", [((0, 8), False), ((0, 7), False), ((0, 8), True)])
def test_every_acquired_resource_is_released(session, monkeypatch, partial_slice, fail_download):
    case = make_case((1, 2, 1, 8), (1, 2, 1, len(range(*partial_slice))), partial_slice)
    warm = make_case((1, 2, 1, 8), (1, 2, 1, 8), (0, 8))
    session.launch(warm, random_inputs(warm))       # the session's workspace (kept until close) exists
    calls = count_calls(session, monkeypatch, fail_download)
    if fail_download:
        with pytest.raises(AclError, match=r"^aclrtMemcpy failed: 207001 ACL_ERROR_RT_MEMORY_ALLOCATION"):
            session.launch(case, random_inputs(case))
    else:
        status = session.launch(case, random_inputs(case)).status
        assert status == (0 if partial_slice == (0, 8) else 561002)
        assert calls["aclrtCreateEventWithFlag"] == (2 if status == 0 else 0)
    assert calls["aclCreateTensor"] == 3 and calls["aclCreateIntArray"] == 1     # device buffers: kept (warm's sizes)
    for acquire, release in PAIRS.items():
        assert calls[acquire] == calls[release], (acquire, calls)


def rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


def test_resources_are_released_on_every_path(session):
    good = make_case((1, 64, 4, 128), (1, 64, 1, 64), (32, 96))            # 128 KiB of dy, 16 MiB workspace
    refused = dataclasses.replace(good, partial_slice=(32, 95))
    good_inputs, refused_inputs = random_inputs(good), random_inputs(refused)
    for _ in range(10):                                                    # warm up allocator pools
        session.launch(good, good_inputs)
    before = rss_bytes()
    for _ in range(100):
        assert session.launch(good, good_inputs).status == 0
        assert session.launch(refused, refused_inputs).status == 561002
    assert rss_bytes() - before < 8 * 2**20     # a leak of the buffers alone would be ~40 MiB


def test_probe_reports_libraries_symbols_and_devices(emulator):
    report = acl.probe(emulator)
    assert report["errors"] == []
    assert report["loaded"] == [str(emulator.runtime_lib), str(emulator.nnopbase_lib), str(emulator.op_lib)]
    assert report["symbols"][OP_SYMBOL] and report["symbols"]["aclnnInplacePartialRotaryMulGrad"]
    assert set(report["symbols"]) == {OP_SYMBOL, "aclnnInplacePartialRotaryMulGrad",
                                      "aclnnInplacePartialRotaryMulGetWorkspaceSize", "aclnnInplacePartialRotaryMul"}
    assert report["device_count"] == 1


# ---------------------------------------------------------------------------------------------------------
# The binding assumes nothing of the emulator: a minimal stand-in written here, with host memory as
# "device" memory, no aclGetRecentErrMsg, no aclrtCreateEventWithFlag and no workspace, must work too.

STAND_IN = {
    "libascendcl.so": r"""
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
int aclInit(const char *config) { (void)config; return 0; }
int aclFinalize(void) { return 0; }
int aclrtGetDeviceCount(uint32_t *count) { *count = 2; return 0; }
int aclrtSetDevice(int32_t id) { return id < 2 ? 0 : 107001; }
int aclrtResetDevice(int32_t id) { (void)id; return 0; }
int aclrtCreateStream(void **stream) { *stream = malloc(1); return 0; }
int aclrtDestroyStream(void *stream) { free(stream); return 0; }
int aclrtSynchronizeStream(void *stream) { (void)stream; return 0; }
int aclrtMalloc(void **ptr, size_t size, int policy) { (void)policy; *ptr = malloc(size); return *ptr ? 0 : 207001; }
int aclrtFree(void *ptr) { free(ptr); return 0; }
int aclrtMemcpy(void *dst, size_t max, const void *src, size_t count, int kind)
{ (void)kind; if (count > max) return 100000; memcpy(dst, src, count); return 0; }
int aclrtMemset(void *dst, size_t max, int value, size_t count)
{ if (count > max) return 100000; memset(dst, value, count); return 0; }
int aclrtCreateEvent(void **event) { *event = calloc(1, sizeof(double)); return 0; }
int aclrtRecordEvent(void *event, void *stream)
{ struct timespec now; (void)stream; clock_gettime(CLOCK_MONOTONIC, &now);
  *(double *)event = now.tv_sec * 1e3 + now.tv_nsec / 1e6; return 0; }
int aclrtSynchronizeEvent(void *event) { (void)event; return 0; }
int aclrtDestroyEvent(void *event) { free(event); return 0; }
int aclrtEventElapsedTime(float *ms, void *start, void *end)
{ *ms = (float)(*(double *)end - *(double *)start); return 0; }
""",
    "libnnopbase.so": r"""
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
typedef struct { int64_t dims[8]; uint64_t rank; int dtype; float *data; } tensor;
typedef struct { int64_t values[8]; uint64_t size; } int_array;
void *aclCreateTensor(const int64_t *dims, uint64_t rank, int dtype, const int64_t *strides, int64_t offset,
                      int format, const int64_t *storage, uint64_t storage_rank, void *data)
{ (void)strides; (void)offset; (void)format; (void)storage; (void)storage_rank;
  if (rank > 8) return NULL;
  tensor *t = calloc(1, sizeof *t); memcpy(t->dims, dims, rank * 8); t->rank = rank; t->dtype = dtype;
  t->data = data; return t; }
int32_t aclDestroyTensor(const void *t) { free((void *)t); return 0; }
void *aclCreateIntArray(const int64_t *values, uint64_t size)
{ if (size > 8) return NULL;
  int_array *a = calloc(1, sizeof *a); memcpy(a->values, values, size * 8); a->size = size; return a; }
int32_t aclDestroyIntArray(const void *a) { free((void *)a); return 0; }
""",
    "libopapi_transformer.so": r"""
#include <stdint.h>
#include <stdlib.h>
typedef struct { int64_t dims[8]; uint64_t rank; int dtype; float *data; } tensor;
typedef struct { int64_t values[8]; uint64_t size; } int_array;
typedef struct { tensor dy, cos, sin; int64_t start, end; } job;
int32_t aclnnInplacePartialRotaryMulGradGetWorkspaceSize(tensor *dy, const tensor *cos, const tensor *sin,
    int64_t mode, const int_array *slice, uint64_t *workspace, void **executor)
{ if (!dy || !cos || !sin) return 161001;
  if (dy->dtype != 0 || cos->dtype != 0 || sin->dtype != 0) return 161002;
  if (dy->rank != 4 || cos->rank != 4 || mode != 1 || slice->size != 2 || dy->dims[3] > 1024) return 561002;
  int64_t start = slice->values[0], end = slice->values[1];
  if (start < 0 || end > dy->dims[3] || start > end || (end - start) % 2 || end - start != cos->dims[3])
    return 561002;
  job *j = malloc(sizeof *j); j->dy = *dy; j->cos = *cos; j->sin = *sin; j->start = start; j->end = end;
  *workspace = 0; *executor = j; return 0; }
int32_t aclnnInplacePartialRotaryMulGrad(void *workspace, uint64_t size, void *executor, void *stream)
{ (void)workspace; (void)size; (void)stream;
  job *j = executor; int64_t *d = j->dy.dims, *c = j->cos.dims, length = j->end - j->start;
  for (int64_t b = 0; b < d[0]; b++) for (int64_t s = 0; s < d[1]; s++) for (int64_t n = 0; n < d[2]; n++) {
    float *g = j->dy.data + ((b * d[1] + s) * d[2] + n) * d[3] + j->start;
    int64_t row = (((c[0] == 1 ? 0 : b) * c[1] + (c[1] == 1 ? 0 : s)) * c[2] + (c[2] == 1 ? 0 : n)) * c[3];
    const float *cs = j->cos.data + row, *sn = j->sin.data + row;
    for (int64_t k = 0; k < length; k += 2) {
      float even = g[k], odd = g[k + 1];
      g[k] = cs[k] * even + sn[k + 1] * odd;
      g[k + 1] = cs[k + 1] * odd - sn[k] * even;
    } }
  free(j); return 0; }
""",
}

STAND_IN_SCRIPT = r"""
import json, sys
import numpy as np
from prmg_cli.device.acl import AclSession, probe
from prmg_cli.case import Case
from prmg_cli.inputs.seeded import Inputs
from prmg_cli.device.toolkit import find_toolkit

toolkit = find_toolkit()
rng = np.random.default_rng(1)
case = Case(name="s", source="s", shape=(2, 3, 2, 12), cos_shape=(1, 3, 1, 8), sin_shape=(1, 3, 1, 8),
            partial_slice=(3, 11))
inputs = Inputs(*(rng.uniform(-1, 1, shape).astype(np.float32) for shape in (case.shape, case.cos_shape,
                                                                              case.sin_shape)))
refused = Case(name="r", source="s", shape=(1, 1, 1, 2048), cos_shape=(1, 1, 1, 8), sin_shape=(1, 1, 1, 8),
               partial_slice=(0, 8))
refused_dy = rng.uniform(-1, 1, refused.shape).astype(np.float32)
with AclSession(toolkit, device=1) as session:
    good = session.launch(case, inputs)
    bad = session.launch(refused, Inputs(refused_dy, inputs.cos[:, :1], inputs.sin[:, :1]))
    count = session.device_count()
np.savez(sys.argv[1], dy=inputs.dy, cos=inputs.cos, sin=inputs.sin, result=good.dy)
print(json.dumps({"kind": toolkit.kind, "status": good.status, "violations": list(good.contract_violations),
                  "kernel_ms": good.kernel_ms, "workspace": good.workspace_size, "refused": bad.status,
                  "refused_call": bad.failed_call, "refused_unchanged": bool(np.array_equal(bad.dy, refused_dy)),
                  "devices": count, "probe": probe(toolkit)}))
"""


def test_binding_drives_an_independent_minimal_toolkit(tmp_path):
    lib64 = tmp_path / "standin" / "lib64"
    lib64.mkdir(parents=True)
    for library, source in STAND_IN.items():
        (tmp_path / f"{library}.c").write_text(source)
        subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib64 / library), str(tmp_path / f"{library}.c")],
                       check=True)
    env = {**os.environ, "ASCEND_HOME_PATH": str(tmp_path / "standin")}
    result = subprocess.run([sys.executable, "-c", STAND_IN_SCRIPT, str(tmp_path / "arrays.npz")], env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["kind"], report["status"], report["violations"], report["workspace"]) == ("aclnn", 0, [], 0)
    assert report["kernel_ms"] is not None                  # timed with plain aclrtCreateEvent
    assert (report["refused"], report["refused_call"], report["refused_unchanged"]) == (561002, OP_SYMBOL, True)
    assert report["devices"] == 2
    assert report["probe"]["errors"] == []
    assert report["probe"]["symbols"][OP_SYMBOL] and report["probe"]["symbols"]["aclnnInplacePartialRotaryMulGrad"]
    arrays = np.load(tmp_path / "arrays.npz")
    expected = GRAD.golden(arrays["dy"], arrays["cos"], arrays["sin"], 1, (3, 11))
    np.testing.assert_allclose(arrays["result"], expected, rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------------------------------------------------
# The transfer path: pinned host buffers (when the toolkit exports aclrtMallocHost), kept device buffers

def fake_pinned_memory(api, monkeypatch) -> dict:
    """aclrtMallocHost / aclrtFreeHost backed by numpy buffers, counting calls (the emulator has neither yet)."""
    live, calls = {}, {"aclrtMallocHost": 0, "aclrtFreeHost": 0}

    def malloc_host(pointer, size):
        calls["aclrtMallocHost"] += 1
        buffer = np.empty(size, np.uint8)
        live[buffer.ctypes.data] = buffer
        pointer._obj.value = buffer.ctypes.data
        return 0

    def free_host(address):
        calls["aclrtFreeHost"] += 1
        return 0 if live.pop(address, None) is not None else 100000

    monkeypatch.setattr(api, "aclrtMallocHost", malloc_host)
    monkeypatch.setattr(api, "aclrtFreeHost", free_host)
    return calls


@pytest.mark.parametrize("fault", [None, "write_past_end", "modify_cos", "clobber_passthrough"])
def test_pinned_host_buffers_give_what_direct_transfers_give(emulator, monkeypatch, fault):
    case = make_case((2, 4, 3, 40), (1, 4, 1, 32), (8, 40), dtype="bfloat16", cos_dtype="float32")
    inputs = random_inputs(case, 3)
    if fault:
        monkeypatch.setenv("PRMG_EMU_FAULT", fault)
    with AclSession(emulator) as direct:
        expected = direct.launch(case, inputs)
    monkeypatch.setattr(acl, "PINNED_MIN_BYTES", 0)
    with AclSession(emulator) as pinned:
        calls = fake_pinned_memory(pinned._api, monkeypatch)
        first, second = pinned.launch(case, inputs), pinned.launch(case, inputs)
        assert calls["aclrtMallocHost"] == 3               # dy, cos, sin: kept for the second launch
    assert calls["aclrtFreeHost"] == 3                     # released by close
    for got in (first, second):
        assert (got.status, got.contract_violations) == (expected.status, expected.contract_violations)
        assert bits(got.dy).tobytes() == bits(expected.dy).tobytes()
    assert bool(expected.contract_violations) == (fault in ("write_past_end", "modify_cos"))


def test_device_buffers_are_kept_between_launches_and_freed_at_close(emulator, monkeypatch):
    """Each tensor's device buffer is kept for the next launch of its size (a new size replaces it), large or small:
    its address repeats, as a caching allocator's would."""
    large = make_case((1, 64, 8, 512), (1, 64, 1, 128), (0, 128))           # 1 MiB of dy
    small = make_case((1, 2, 1, 8), (1, 2, 1, 8), (0, 8))
    with AclSession(emulator) as session:
        calls = count_calls(session, monkeypatch)
        outcomes = [session.launch(large, random_inputs(large)) for _ in range(3)]
        assert calls["aclrtMalloc"] - calls["aclrtFree"] == 4 and calls["aclrtMalloc"] == 4   # dy, cos, sin, workspace
        outcomes += [session.launch(small, random_inputs(small)) for _ in range(2)]
        assert calls["aclrtMalloc"] == 7 and calls["aclrtFree"] == 3           # the three tensors' buffers replaced
    assert calls["aclrtMalloc"] == calls["aclrtFree"]
    assert all(outcome.status == 0 and not outcome.contract_violations for outcome in outcomes)
    assert all(np.array_equal(bits(outcome.dy), bits(outcomes[0].dy)) for outcome in outcomes[:3])


def test_a_kernel_caching_its_tables_by_address_fails_the_next_case_of_their_size(emulator, monkeypatch):
    """The emulator's table_address_cache: the grad reads the cos/sin it copied at the last call whose tables had
    the same addresses and sizes. prmg's device buffers keep their addresses from one case to the next of the same
    sizes (allocated anew each launch, cos got an address another tensor had held, and cases/ passed under
    --strict): the second of two launches alike but for the values runs on the first one's tables and fails."""
    from prmg_cli.judging.judge import judge

    case = make_case((1, 2, 2, 8), (1, 2, 1, 8), (0, 8))
    monkeypatch.setenv("PRMG_EMU_FAULT", "table_address_cache")
    with AclSession(emulator) as session:
        verdicts = [judge(case, inputs, session.launch(case, inputs))
                    for inputs in (random_inputs(case), random_inputs(case, seed=9))]
    assert verdicts[0].status == "passed" and verdicts[1].status == "failed", verdicts[1].message


def test_a_refused_call_compares_the_storage_and_a_success_leaves_it_to_the_judge(session):
    good = make_case((1, 2, 1, 8), (1, 2, 1, 8), (0, 8))
    refused = make_case((1, 2, 1, 8), (1, 2, 1, 7), (0, 7))
    assert session.launch(good, random_inputs(good)).dy_changed is None
    assert session.launch(refused, random_inputs(refused)).dy_changed is False


def test_timings_name_the_transfer_stages(session):
    case = make_case((1, 2, 1, 8), (1, 2, 1, 8), (0, 8))
    assert set(session.launch(case, random_inputs(case)).timings) == {"upload", "kernel", "download"}


@pytest.mark.verdict
def test_a_beyond_guard_place_the_emulator_cannot_read_is_refused_before_any_case():
    """PRMG_EMU_BEYOND_GUARD=TENSOR:BYTES (BYTES negative: before the tensor): a text the emulator would meet with a
    device fault at the first launch -- an unknown tensor, no distance, a distance strtoll cannot read whole -- is a
    user error before any case runs (exit 2); each tensor and the workspace, either side, are taken."""
    from prmg_cli.device.toolkit import check_emulator_env
    from prmg_cli.errors import PrmgError

    for place in ("dy:576", "cos:0", "sin:-64", "workspace:30720", "dy:-999999999999999999"):
        check_emulator_env({"PRMG_EMU_BEYOND_GUARD": place})
    for place in ("x:64", "dy:", "dy", "dy:1e3", "dy:+4", "dy:" + "9" * 19, "dy:64 "):
        with pytest.raises(PrmgError, match="PRMG_EMU_BEYOND_GUARD must be TENSOR:BYTES"):
            check_emulator_env({"PRMG_EMU_BEYOND_GUARD": place})
