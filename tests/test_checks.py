"""The golden-free checks (prmg_cli/judging/checks/) against numpy kernel models of both operators: they never
fail correct kernels (plain or fused multiply-add), and each catches the faults only it can see."""

from __future__ import annotations

import dataclasses


import numpy as np
import pytest

from kernels import correct_kernel, faulty_kernel, forward_kernel
from prmg_cli.cases.loader import Case, InputSpec
from prmg_cli.device.acl import Outcome
from prmg_cli.dtypes import OPERATOR_DTYPES as DTYPES
from prmg_cli.inputs.seeded import make_inputs
from prmg_cli.judging.checks import CheckContext
from prmg_cli.judging.checks.adjoint import adjoint
from prmg_cli.judging.checks.determinism import determinism
from prmg_cli.judging.checks.roundtrip import roundtrip
from prmg_cli.judging.judge import judge
from prmg_cli.vocab import broadcast_shape

pytestmark = pytest.mark.verdict       # make test-verdict (and make mutate) run these first



class ModelSession:
    """Launches cases on the numpy kernel models: ``grad_fault``/``forward_fault`` inject a fault into
    one operator; ``nondeterministic`` fuses the forward's or grad's sums on every other launch; ``staged`` keeps
    each launch's cos and sin as its workspace and, on a workspace kept from the launch before (``kept_workspace``),
    takes those of the same shapes instead (the emulator's ``workspace_table_cache``)."""

    def __init__(self, grad_fault=None, forward_fault=None, nondeterministic=False, staged=False):
        self.grad_fault, self.forward_fault, self.nondeterministic = grad_fault, forward_fault, nondeterministic
        self.launches, self.staged, self.workspace = 0, staged, None

    def launch(self, case, inputs, kept_workspace=False):
        if self.staged:
            kept = self.workspace if kept_workspace else None
            if kept is not None and (kept.cos.shape, kept.sin.shape) == (inputs.cos.shape, inputs.sin.shape):
                inputs = dataclasses.replace(inputs, cos=kept.cos, sin=kept.sin)
            self.workspace = inputs
        self.launches += 1
        fused = self.nondeterministic and self.launches % 2 == 0
        with np.errstate(all="ignore"):
            if case.op == "forward":
                result = forward_kernel(inputs.dy, inputs.cos, inputs.sin, case.rotary_mode, case.partial_slice,
                                        fault=self.forward_fault, fused=fused)
            elif self.grad_fault:
                result = faulty_kernel(self.grad_fault, inputs.dy, inputs.cos, inputs.sin, case.rotary_mode,
                                       case.partial_slice)
            elif fused:                                         # the grad with fused sums: float64, rounded once
                result = _fused_grad(inputs, case)
            else:
                result = correct_kernel(inputs.dy, inputs.cos, inputs.sin, case.rotary_mode, case.partial_slice)
        return Outcome(status=0, dy=result, dy_changed=False)


def _fused_grad(inputs, case):
    from prmg_cli.ops import GRAD

    start, end = case.partial_slice
    out = inputs.dy.copy()
    exact = GRAD.golden_slice(inputs.dy, inputs.cos, inputs.sin, case.rotary_mode, (start, end))
    out[..., start:end] = exact.astype(np.float32).astype(inputs.dy.dtype)
    return out


def make_case(op="grad", mode=1, dtype="float32", cos_dtype=None, shape=(2, 3, 2, 40), piece=(4, 36),
              broadcast="1S1D", rope=False, seed=1):
    cos_dtype = cos_dtype or dtype
    cos_shape = broadcast_shape(broadcast, shape, piece[1] - piece[0])
    table = InputSpec("rope", (10000.0, 0)) if rope else InputSpec()
    return Case(name=f"c{seed}", source="t", shape=shape, cos_shape=cos_shape, sin_shape=cos_shape,
                partial_slice=piece, rotary_mode=mode, dtype=dtype, cos_dtype=cos_dtype, sin_dtype=cos_dtype,
                seed=seed, cos_input=table, sin_input=table, op=op)


def context(case, session, repeat=2):
    inputs = make_inputs(case)
    outcome = session.launch(case, inputs)
    return CheckContext(case, inputs, outcome, session.launch, {"repeat": repeat}), inputs, outcome


SWEEP = [(op, mode, dtype, broadcast) for op in ("grad", "forward") for mode in range(4)
         for dtype in DTYPES for broadcast in ("1S1D", "BSND", "111D")]


@pytest.mark.parametrize("op, mode, dtype, broadcast", SWEEP)
def test_adjoint_and_roundtrip_pass_correct_kernels(op, mode, dtype, broadcast):
    case = make_case(op, mode, dtype, broadcast=broadcast, rope=True, seed=mode * 7 + len(dtype))
    for session in (ModelSession(), ModelSession(nondeterministic=True)):
        ctx, _, _ = context(case, session)
        first, second = adjoint(ctx), roundtrip(ctx)
        assert first.passed and not first.note, first.message
        assert second.passed and not second.note, second.message
        assert first.metrics["adjoint_ratio"] < 1 and second.metrics["roundtrip_ratio"] < 1


@pytest.mark.parametrize("dtype", DTYPES)
def test_adjoint_catches_a_forward_fault_on_a_grad_case_whose_golden_passes(dtype):
    case = make_case("grad", 1, dtype, shape=(2, 8, 2, 64), piece=(0, 64))
    session = ModelSession(forward_fault="sign")
    ctx, inputs, outcome = context(case, session)
    assert judge(case, inputs, outcome).status == "passed"          # the grad itself is right
    result = adjoint(ctx)
    assert not result.passed and result.message.startswith("adjoint: <F x, dy> and <x, B dy> differ")


@pytest.mark.parametrize("fault", ["sign", "own_sin"])
def test_adjoint_catches_a_grad_fault_without_a_golden(fault):
    case = make_case("forward", 1, "bfloat16", shape=(1, 16, 2, 64), piece=(0, 64), broadcast="BSND")
    ctx, _, _ = context(case, ModelSession(grad_fault=fault))
    assert not adjoint(ctx).passed


def test_roundtrip_catches_a_forward_fault():
    case = make_case("grad", 1, "float16", shape=(1, 32, 2, 64), piece=(0, 64), rope=True)
    ctx, _, _ = context(case, ModelSession(forward_fault="sign"))
    result = roundtrip(ctx)
    assert not result.passed and "roundtrip: grad(forward(x)) is off x" in result.message


def test_a_partner_sin_forward_is_invisible_to_roundtrip_but_not_to_adjoint():
    """With RoPE tables a pair's partners share their sin, so the partner's sin is the same number: only
    the adjoint check, on the case's independent tables, sees the fault."""
    rope = make_case("grad", 1, "float32", shape=(1, 16, 2, 64), piece=(0, 64), rope=True)
    assert roundtrip(context(rope, ModelSession(forward_fault="partner_sin"))[0]).passed
    plain = make_case("grad", 1, "float32", shape=(1, 16, 2, 64), piece=(0, 64))
    assert not adjoint(context(plain, ModelSession(forward_fault="partner_sin"))[0]).passed


def test_determinism_reuses_the_workspace_another_launch_left():
    """Issue 34 (session 14): a kernel taking its tables from the workspace a launch of the same shapes left is right
    on every poisoned workspace (the golden passes it, and so did determinism's repeats); the launch of other tables
    (sin negated) and the case again on its workspace differ from the first."""
    case = make_case("grad", 1, "float32", shape=(2, 8, 4, 64), piece=(0, 64), broadcast="BSND")
    ctx, inputs, outcome = context(case, ModelSession(staged=True))
    assert judge(case, inputs, outcome).status == "passed"
    result = determinism(ctx)
    assert not result.passed and result.metrics["determinism_mismatches"] > 0, result
    assert result.message.startswith("determinism: a launch on the workspace another launch left (other tables) "
                                     "differs from the first in "), result.message


def test_determinism_fails_a_launch_of_another_status_whatever_its_result():
    """A repeat, or the launch on the workspace another launch left, that returns another status than the first fails
    determinism, though its dy is bit-identical to the first's (a no-op refused on reuse: mutants
    determinism-*-status-unchecked)."""
    case = make_case("grad", 1, "float32", shape=(1, 2, 2, 8), piece=(0, 8), broadcast="BSND")
    ctx, _, outcome = context(case, ModelSession())
    for reused, said in ((False, "a repeated launch"), (True, "a launch on the workspace another launch left")):
        def launch(case, inputs, kept_workspace=False, reused=reused):
            status = 561000 if kept_workspace == reused else outcome.status
            return dataclasses.replace(outcome, status=status, dy=outcome.dy.copy())

        result = determinism(dataclasses.replace(ctx, launch=launch))
        assert not result.passed and result.metrics == {"determinism_mismatches": None}, (reused, result)
        assert result.message == f"determinism: {said} returned status 561000, the first 0", result.message


def test_determinism_catches_a_one_ulp_nondeterminism_each_launch_passes():
    case = make_case("grad", 1, "float32", shape=(2, 8, 4, 64), piece=(0, 64), broadcast="BSND")
    session = ModelSession(nondeterministic=True)
    ctx, inputs, outcome = context(case, session, repeat=3)
    again = session.launch(case, inputs)
    assert judge(case, inputs, outcome).status == "passed" and judge(case, inputs, again).status == "passed"
    result = determinism(ctx)
    assert not result.passed and result.metrics["determinism_mismatches"] > 0
    assert determinism(context(case, ModelSession(), repeat=3)[0]).passed


def test_a_check_that_cannot_run_says_why():
    """A case the other operator's rules refuse (the forward needs D even; an A2/A3 chip has no grad kernel: the
    rules of the chip it runs on) is one the check is not defined for: skipped, saying why; a launch of the other
    operator that fails is a check that could not run: a note (a warning)."""
    case = make_case("grad", 1, "float32", shape=(1, 2, 2, 41), piece=(4, 36))
    ctx, _, _ = context(case, ModelSession())
    result = adjoint(ctx)
    assert result.passed and "D = 41 is not a multiple of 2" in result.skipped and not result.note
    ctx, _, _ = context(make_case("grad", 1, "float32"), ModelSession())
    refusing = dataclasses.replace(ctx, launch=lambda case, inputs, **how: Outcome(status=561002, dy=None,
                                                                                   error_message="tiling failed"))
    for check in (adjoint, roundtrip):
        result = check(refusing)
        assert result.note.endswith("launch returned 561002 tiling failed") and not result.skipped, result
    launch = ctx.launch                 # roundtrip's forward launch runs, its launch of the grad back fails
    back_refused = dataclasses.replace(ctx, launch=lambda case, inputs, **how: launch(case, inputs, **how)
                                       if case.op == "forward" else Outcome(status=561002, dy=None, error_message="x"))
    assert roundtrip(back_refused).note == "roundtrip: the InplacePartialRotaryMulGrad launch returned 561002 x"
    forward, _, _ = context(make_case("forward", 1, "float32", broadcast="BS1D"), ModelSession())
    on_a2 = dataclasses.replace(forward, soc="ascend910b")      # an A2/A3 chip: no grad kernel there
    for check in (adjoint, roundtrip):
        assert check(forward).judged and "op definition has no config for ascend910b" in check(on_a2).skipped


def test_a_check_marked_first_runs_right_after_the_main_launch(monkeypatch):
    """``Check.first`` orders the checks (determinism's repeats must follow the main launch directly), not a name."""
    from prmg_cli.judging import checks
    from prmg_cli.judging.checks import Check, CheckResult, run_checks

    def toy(name, first):
        return Check(name, "a toy check", lambda context: CheckResult(name), f"{name}_ratio", str, lambda m: None,
                     applies=lambda context: "", first=first)

    monkeypatch.setitem(checks.CHECKS, "later", toy("later", False))
    monkeypatch.setitem(checks.CHECKS, "sooner", toy("sooner", True))
    ran = run_checks(("later", "sooner"), CheckContext(case=None, inputs=None, outcome=None, launch=None))
    assert [result.name for result in ran] == ["sooner", "later"]
    assert checks.CHECKS["determinism"].first and not checks.CHECKS["adjoint"].first
