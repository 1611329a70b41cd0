"""The ctypes binding, driven through the built host emulator: results, statuses, contract checks, cleanup."""

from __future__ import annotations

import dataclasses

import ml_dtypes
import numpy as np
import pytest

from prmg_cli import acl
from prmg_cli.acl import AclError, AclSession
from prmg_cli.cases import Case
from prmg_cli.dtypes import bits
from prmg_cli.inputs import Inputs
from prmg_cli.reference import inplace_partial_rotary_mul_grad
from prmg_cli.toolkit import OP_SYMBOL, emulator_toolkit

NUMPY = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}


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
    expected = inplace_partial_rotary_mul_grad(inputs.dy, inputs.cos, inputs.sin, 1, case.partial_slice)
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
    ({"dy_strides": (32, 16, 16, 2)}, (1, 2, 1, 8), 161002),   # every other element: not contiguous
    ({}, (1, 0, 1, 8), 561002),                                 # a zero dim
])
def test_negative_tensors_are_built_as_asked(session, extra, shape, status):
    case = make_case(shape, (1, 1, 1, 8), (0, 8), **extra)
    inputs = random_inputs(case)
    outcome = session.launch(case, inputs)
    assert outcome.status == status, outcome.error_message
    assert outcome.dy.shape == shape
    assert np.array_equal(bits(outcome.dy), bits(inputs.dy))
    assert outcome.contract_violations == ()


def test_write_past_end_is_caught_by_the_guard_zone(session, monkeypatch):
    monkeypatch.setenv("PRMG_EMU_FAULT", "write_past_end")
    case = make_case((1, 2, 1, 8), (1, 2, 1, 8), (0, 8))
    outcome = session.launch(case, random_inputs(case))
    assert outcome.status == 0
    assert len(outcome.contract_violations) == 1
    assert outcome.contract_violations[0].startswith("guard zone after dy changed at byte +0")


def test_modified_cos_is_caught(session, monkeypatch):
    monkeypatch.setenv("PRMG_EMU_FAULT", "modify_cos")
    case = make_case((1, 2, 1, 8), (1, 2, 1, 8), (0, 8))
    outcome = session.launch(case, random_inputs(case))
    assert any(line.startswith("cos changed at (") and ", first of " in line
               for line in outcome.contract_violations), outcome.contract_violations
    assert not any("sin" in line or "guard" in line for line in outcome.contract_violations)


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
    expected = inplace_partial_rotary_mul_grad(inputs.dy, inputs.cos, inputs.sin, 0, case.partial_slice)
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
    calls = count_calls(session, monkeypatch, fail_download)
    if fail_download:
        with pytest.raises(AclError, match=r"^aclrtMemcpy failed: 207001 ACL_ERROR_RT_MEMORY_ALLOCATION"):
            session.launch(case, random_inputs(case))
    else:
        status = session.launch(case, random_inputs(case)).status
        assert status == (0 if partial_slice == (0, 8) else 561002)
        assert calls["aclrtCreateEventWithFlag"] == (2 if status == 0 else 0)
    assert calls["aclrtMalloc"] >= 3 and calls["aclCreateTensor"] == 3 and calls["aclCreateIntArray"] == 1
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
    assert report["symbols"] == {OP_SYMBOL: True, "aclnnInplacePartialRotaryMulGrad": True}
    assert report["device_count"] == 1
