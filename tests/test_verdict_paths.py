"""Issue 20: every verdict path, not only the golden launch, is unable to end green while the kernel is wrong.

Each test builds a wrong kernel -- the emulator's fault switch, a stand-in toolkit (the emulator's libraries
in a folder prmg did not build, so nothing of prmg's own emulator settings applies), or a numpy kernel model
-- and shows the red verdict; and the same path stays green on a correct kernel.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import replace

import numpy as np
import pytest

from conftest import forked_pytest, prmg_forked, prmg_here
from prmg_cli.cases.loader import Case, Expect, KnownDefect
from prmg_cli.device.acl import SYNCHRONIZE, Outcome
from prmg_cli.device.execute import known_defect_status
from prmg_cli.judging import checks
from prmg_cli.judging.judge import judge
from prmg_cli.ops import GRAD
from prmg_cli.reports.compare import compare
from prmg_cli.results import CaseResult

EMU = ("--runner", "emulator")


def write(tmp_path, text: str, name: str = "cases.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def run_json(*args, env=None, timeout=300):
    """``prmg run ARGS --report json`` and its exit code and cases by name."""
    out = prmg_forked("run", *args, "--report", "json", env=env, timeout=timeout)
    assert out.stdout, out.stderr
    document = json.loads(out.stdout)
    return out.returncode, {case["name"]: case for case in document["cases"]}, document["summary"], out.stderr


@pytest.fixture
def stand_in(emulator, tmp_path):
    """A toolkit prmg did not build: the emulator's libraries without the marker file (kind ``aclnn``), so the
    process environment (``PRMG_EMU_MODES``, ``PRMG_EMU_FAULT``) configures it as a vendor's library would be. Run
    with ``--runner emulator``, which runs the emulator installed as a toolkit by name (``aclnn``, the NPU gate's
    runner, and ``auto`` refuse the emulator's libraries wherever a toolkit is meant)."""
    root = tmp_path / "cann"
    shutil.copytree(emulator.root, root, symlinks=True)
    (root / "PRMG_EMULATOR").unlink()
    return {"ASCEND_HOME_PATH": str(root), "ASCEND_OPP_PATH": str(root / "opp")}


# --- golden-free checks -----------------------------------------------------------------------------------

ODD_D = """
- {name: odd_d, shape: [1, 2, 2, 33], partial_slice: [0, 32], golden: false, checks: [adjoint, sample, determinism]}
"""


@pytest.mark.parametrize("fault", ["", "sign"])
def test_a_check_the_other_operator_refuses_is_skipped_and_sample_judges(tmp_path, fault):
    """The forward refuses D = 33 (odd), which the grad takes, so adjoint is not defined for the case: skipped, saying
    why (a detail; session 17: it was a warning, so the shipped odd-D cover case failed a correct kernel under
    ``prmg run cases/ --check all --strict``); sample, anchored to the formula, judges."""
    code, cases, _, _ = run_json(write(tmp_path, ODD_D), *EMU, "--strict", env={"PRMG_EMU_FAULT": fault})
    assert (code, cases["odd_d"]["status"]) == ((1, "failed") if fault else (0, "passed"))
    assert not cases["odd_d"].get("warnings") and any(detail.startswith(
        "adjoint skipped: adjoint: the InplacePartialRotaryMul operator refuses it: D = 33") for detail in
        cases["odd_d"]["details"]), cases["odd_d"]


def test_checks_needing_an_operator_the_chip_lacks_are_skipped(tmp_path):
    """An A2/A3 chip has the forward and no grad kernel: adjoint and roundtrip of a forward case are not defined
    there, skipped saying why (session 17: each was a warning, so ``prmg run cases/ --tag forward --check all
    --strict`` failed 59 correct forward cases there); sample judges."""
    case = "- {name: a2, op: forward, shape: [2, 3, 2, 16], partial_slice: [0, 16], broadcast: BS1D}\n"
    code, cases, _, _ = run_json(write(tmp_path, case), *EMU, "--strict", "--check", "all",
                                 env={"PRMG_EMU_SOC": "Ascend910B2"})
    assert (code, cases["a2"]["status"]) == (0, "passed") and not cases["a2"].get("warnings"), cases["a2"]
    assert sum("has no config for ascend910b" in detail for detail in cases["a2"]["details"]) == 2, cases["a2"]


@pytest.mark.verdict
def test_a_case_no_anchored_check_judged_is_an_error_not_a_pass():
    """When every check anchored to the formula skipped or could not run, nothing held the result to the formula:
    an error, whatever adjoint and determinism said (or a warning when the case says why)."""
    case = Case("g", "t", (1, 1, 2, 16), (1, 1, 1, 16), (1, 1, 1, 16), (0, 16), golden=False)
    results = [checks.CheckResult("adjoint"), checks.CheckResult("sample", note="the host is out of memory")]
    verdict = checks.fold_checks(judge(case, *_unchanged(case), golden=False), results, _context(case), golden=False)
    assert verdict.status == "error" and verdict.message.startswith("not judged: without the golden no check "
                                                                    "anchored to the formula ran (sample not run: ")
    said = replace(case, correctness_unchecked="too large")
    verdict = checks.fold_checks(judge(said, *_unchanged(said), golden=False), results, _context(said), golden=False)
    assert verdict.status == "passed" and verdict.warnings[-1].startswith("correctness not checked: too large")


@pytest.mark.verdict
def test_only_a_check_anchored_to_the_formula_lets_a_case_go_without_the_golden():
    """``loader.unjudged``, what validate and run ask of a pass case judged without the golden: refused when its
    checks and the run's hold no anchored one (determinism, adjoint), unless it says why (correctness_unchecked);
    accepted with sample from either side, or with the golden."""
    from prmg_cli.cases.loader import unjudged

    case = Case("g", "t", (1, 1, 2, 16), (1, 1, 1, 16), (1, 1, 1, 16), (0, 16), golden=False,
                checks=("determinism", "adjoint"))
    assert "none anchored to the formula" in str(unjudged(case))
    assert "(--no-golden)" in str(unjudged(replace(case, golden=True), ("roundtrip",), golden=False))
    assert unjudged(replace(case, correctness_unchecked="too large")) is None
    assert unjudged(case, ("sample",)) is None and unjudged(replace(case, checks=("sample",))) is None
    assert unjudged(replace(case, golden=True)) is None


def _unchanged(case):
    from prmg_cli.inputs.seeded import make_inputs

    inputs = make_inputs(case)
    return inputs, Outcome(status=0, dy=inputs.dy.copy(), dy_changed=False)


def _context(case):
    return checks.CheckContext(case, *_unchanged(case), launch=None)


@pytest.mark.verdict
def test_the_shipped_determinism_cases_reach_every_core_and_a_partial_last_core():
    """A kernel nondeterministic on one core alone moves only that core's rows: determinism sees it only on a case that
    gives the core rows. The shipped determinism cases give every core of each count (the emulator's 40, the 950's 64)
    rows, and, under the ceil split of upstream's 950 tilings (``blockFactor = CeilDiv``), a last core with a partial
    share, which upstream's kernels run in a code path of its own (a last core's loop): with B*S of 64 and 16 before,
    each core of the 64 held one unit and no last core was partial."""
    import math

    from prmg_cli.cases.loader import load_cases
    from prmg_cli.ops.regimes import core_counts

    cases = [case for case in load_cases(["cases/checks.yaml"]) if "determinism" in case.checks]
    for cores in core_counts():
        assert any(math.prod(case.shape[:3]) >= cores for case in cases)
        units = [case.shape[0] * case.shape[1] for case in cases]
        assert any(count > cores // 2 and count % -(-count // cores) for count in units), (cores, units)

def test_determinism_alone_is_refused_unless_the_case_says_why(tmp_path):
    path = write(tmp_path, "- {name: d, shape: [1, 1, 2, 16], golden: false, checks: [determinism]}\n")
    out = prmg_here("validate", path)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.count("\n") == 1
    assert f"{path}: case 'd': field 'checks': without the golden (golden: false) this case is judged by " \
           "determinism, none anchored to the formula" in out.stderr
    plain = write(tmp_path, "- {name: d, shape: [1, 1, 2, 16]}\n", "plain.yaml")
    out = prmg_forked("run", plain, *EMU, "--no-golden", "--check", "determinism")
    assert out.returncode == 2 and "case 'd': field 'checks': without the golden (--no-golden) this case is " \
                                   "judged by determinism" in out.stderr
    said = write(tmp_path, "- {name: d, shape: [1, 1, 2, 16], golden: false, checks: [determinism],\n"
                           "   correctness_unchecked: only determinism fits at this size}\n", "said.yaml")
    code, cases, _, _ = run_json(said, *EMU)
    assert code == 0 and cases["d"]["status"] == "passed"
    assert cases["d"]["warnings"] == ["correctness not checked: only determinism fits at this size (determinism: "
                                      + checks.CHECKS["determinism"].description + ")"]
    code, cases, _, _ = run_json(said, *EMU, "--strict")
    assert code == 1 and cases["d"]["status"] == "failed"


def test_the_runs_checks_and_the_cases_together_must_judge_correctness(tmp_path):
    """Refused only where neither the case's checks: nor --check hold a check anchored to the formula: --no-golden
    needs no --check for a case with its own sample, and --check sample judges a golden: false determinism case."""
    path = write(tmp_path, "- {name: own, shape: [1, 1, 2, 16], checks: [sample]}\n"
                           "- {name: det, shape: [1, 1, 2, 16], golden: false, checks: [determinism]}\n")
    sign = {"PRMG_EMU_FAULT": "sign"}
    code, cases, _, _ = run_json(path, *EMU, "-k", "own", "--no-golden", env=sign)
    assert code == 1 and cases["own"]["message"].startswith("sample: ")
    code, cases, _, _ = run_json(path, *EMU, "--check", "sample", env=sign)
    assert code == 1 and cases["det"]["status"] == "failed" and cases["det"]["message"].startswith("sample: ")
    assert run_json(path, *EMU, "--check", "sample")[0] == 0


@pytest.mark.verdict
def test_sample_draws_every_row_class_the_kernel_tiles_by():
    """The first, last and middle rows first, the rows either side of a 2^8, 2^12 and 2^16 counter wrap, the first and
    last row of each core's share (for the emulator's 40 cores and the 950's 64, of rows and of (b, s) units), the
    tail rows past the last full share, the rows either side of a seam between two UB passes of a core, one row for
    each index of each table axis."""
    from prmg_cli.judging.checks.sample import class_rows, sampled_rows, ub_seams
    from prmg_cli.ops.regimes import core_counts

    case = Case("r", "t", (3, 700, 5, 16), (3, 700, 1, 16), (3, 700, 1, 16), (0, 16))
    rows, chosen = 3 * 700 * 5, set(class_rows(case, 1 << 20).tolist())
    for cores in core_counts():
        share, unit_share = rows // cores, 3 * 700 // cores
        assert {k * share for k in range(cores)} | {(k + 1) * share - 1 for k in range(cores)} <= chosen
        assert set(range(cores * share, rows)) <= chosen
        assert {k * unit_share * 5 for k in range(cores)} | {((k + 1) * unit_share) * 5 - 1 for k in range(cores)} \
            <= chosen
    assert list(class_rows(case, 1 << 20)[:3]) == [0, rows - 1, rows // 2]        # first: where truncation spares
    assert {255, 256, 4095, 4096} <= chosen                  # both sides of each counter wrap below the row count
    coordinates = np.unravel_index(sorted(chosen), (3, 700, 5))
    assert set(coordinates[0]) == {0, 1, 2} and set(coordinates[1]) == set(range(700))
    small = Case("s", "t", (2, 3, 4, 16), (1, 1, 1, 16), (1, 1, 1, 16), (0, 16))
    assert sampled_rows(small, 1)[1] == 1.0 and len(sampled_rows(small, 1)[0]) == 24      # every row: sure
    # a 16-lane float32 slice: a UB pass holds 496 rows; 32,768 rows give 819 a core (40) and 512 (64): one seam each
    seamed = Case("u", "t", (1, 4096, 8, 16), (1, 4096, 1, 16), (1, 4096, 1, 16), (0, 16))
    chosen = set(class_rows(seamed, 1 << 20).tolist())
    for cores in core_counts():
        share = 32768 // cores
        assert {k * share + 495 for k in range(cores)} | {k * share + 496 for k in range(cores)} <= chosen
    assert ub_seams(seamed, 32768)[0] == [39 * 819 + 495, 39 * 819 + 496]          # the last core's first
    # 1,024 float32 lanes: a pass holds 7 rows; 1,200 rows give the 40 cores 30 each, seams after 7, 14, 21 and 28
    passes = Case("p", "t", (1, 1200, 1, 1024), (1, 1, 1, 1024), (1, 1, 1, 1024), (0, 1024))
    assert {k * 30 + seam + side for k in range(40) for seam in (7, 14, 21, 28) for side in (-1, 0)} \
        <= set(class_rows(passes, 1 << 20).tolist())


@pytest.mark.verdict
@pytest.mark.parametrize("outer, inner, cores", [(41, 3, 40), (5, 70, 40), (130, 7, 64), (3, 200, 64), (64, 64, 40)])
def test_each_split_of_a_grid_tiles_it_exactly(outer, inner, cores):
    """Session 11: ``sample.grid_blocks`` gives the blocks of each of the two ways upstream's grid tilings split an
    ``outer`` x ``inner`` grid: each way's blocks lie inside the grid and cover each of its cells once, so their
    corners (the rows ``sample`` takes) are real rows, the last block's too (a grid not divisible by its block)."""
    from prmg_cli.judging.checks.sample import grid_blocks

    blocks = grid_blocks(outer, inner, cores)
    cells = [(o, i) for o0, o1, i0, i1 in blocks for o in range(o0, o1 + 1) for i in range(i0, i1 + 1)]
    assert all(0 <= o0 <= o1 < outer and 0 <= i0 <= i1 < inner for o0, o1, i0, i1 in blocks)
    assert sorted(cells) == sorted(2 * [(o, i) for o in range(outer) for i in range(inner)])   # two splits, once each


@pytest.mark.verdict
def test_sample_takes_b_unit_shares_the_s_first_grid_and_heads_over_two_cores():
    """Three row classes of upstream's tilings whose rows the other classes mostly hold too, each pinned where they do
    not: the shares of b units (AB, cos's B of 1: a unit is a b of all its rows), BAB's B x S grid split S first (S in
    ceil shares over the cores, then B over the cores left), and AB's heads when the (b, s) units are exactly half the
    cores (each unit's heads split over two cores)."""
    from prmg_cli.judging.checks.sample import class_rows, share_bounds
    from prmg_cli.ops.regimes import core_counts

    def rows_of(shape):
        positions, length = shape[1], shape[3]
        table = (1, positions, 1, length)
        return set(class_rows(Case("c", "t", shape, table, table, (0, length)), 1 << 20).tolist())

    ceil = lambda count, parts: -(-count // parts)                                  # noqa: E731
    chosen = rows_of((130, 2, 2, 16))                                               # b units of 4 rows
    assert {row for cores in core_counts() for first, last in share_bounds(130, cores)
            for row in (4 * first, 4 * last + 3)} <= chosen
    batch, positions, heads = 5, 70, 3
    chosen = rows_of((batch, positions, heads, 16))
    for cores in core_counts():
        factor_s = ceil(positions, cores)
        factor_b = ceil(batch, min(cores // ceil(positions, factor_s), batch))
        for b0 in range(0, batch, factor_b):
            for s0 in range(0, positions, factor_s):
                b1, s1 = min(b0 + factor_b, batch) - 1, min(s0 + factor_s, positions) - 1
                assert {(b * positions + s) * heads + n for b, s, n in
                        ((b0, s0, 0), (b0, s1, heads - 1), (b1, s0, 0), (b1, s1, heads - 1))} <= chosen, (cores, b0, s0)
    chosen = rows_of((4, 8, 37, 16))                    # 32 (b, s) units: half the 950's 64 cores, 19 + 18 heads
    assert {unit * 37 + row for unit in range(32) for row in (0, 18, 19, 36)} <= chosen


@pytest.mark.verdict
def test_sample_takes_every_cores_ends_however_the_kernel_splits_rows(monkeypatch):
    """Upstream's 950 tilings split with ceil shares (``blockFactor = CeilDiv(count, cores)``): 4,000 rows over 64
    cores are shares of 63, which the emulator's floor split (62 each, 32 left over) shares only at core 0. A 950 kernel
    whose core 50 stops one row short of its share ([3150, 3212]) leaves row 3212: sample drew it by chance only (57
    of the 64 ceil shares had an end outside its rows), and now takes every core's first and last row of each split
    (floor, ceil, one more on the first cores; rows, (b, s) and b units; BAB's B x S grid; AB's heads), past its
    three quarters when they do not fit."""
    from kernels import correct_kernel
    from prmg_cli.inputs.seeded import make_inputs
    from prmg_cli.judging.checks import sample as sample_module

    monkeypatch.setattr(sample_module, "SAMPLE_ELEMENTS", 1 << 14)
    case = Case("ceil", "t", (1, 4000, 1, 16), (1, 4000, 1, 16), (1, 4000, 1, 16), (0, 16), seed=3)
    inputs = make_inputs(case)
    result = correct_kernel(inputs.dy, inputs.cos, inputs.sin, 1, (0, 16))
    result[0, 3212] = inputs.dy[0, 3212]                    # core 50's last row of its ceil share, left as it was
    outcome = Outcome(status=0, dy=result, dy_changed=False)
    found = checks.run_checks(("sample",), checks.CheckContext(case, inputs, outcome, None))[0]
    assert not found.passed and "(b, s, n) = (0, 3212, 0)" in found.message
    rows = set(sample_module.sampled_rows(case, 1)[0].tolist())
    assert {core * 63 for core in range(64)} | {min(core * 63 + 62, 3999) for core in range(64)} <= rows
    # 10 over 4: floor (2 each, 8 and 9 a tail), ceil (3 each, 1 left), floor with one more on the first 2 cores
    assert sample_module.share_bounds(10, 4) == [(0, 1), (2, 3), (4, 5), (6, 7), (8, 8), (9, 9), (0, 2), (3, 5),
                                                 (6, 8), (8, 9)]
    # BAB's B x S grid of 64 cores, B first (3 b of 21 blocks of 34 positions): core (1, 0) ends at (1, 33, 4)
    grid = Case("grid", "t", (3, 700, 5, 16), (1, 700, 1, 16), (1, 700, 1, 16), (0, 16))
    assert (700 + 33) * 5 + 4 in sample_module.class_rows(grid, 1 << 20)
    # AB with 4 (b, s) units of 300 heads: each unit's heads split over 16 of the 64 cores (19 a core), 10 of the 40
    heads = set(sample_module.class_rows(Case("n", "t", (1, 4, 300, 16), (1, 4, 1, 16), (1, 4, 1, 16), (0, 16)),
                                         1 << 20).tolist())
    assert {unit * 300 + row for unit in range(4) for factor in (19, 30) for first in range(0, 300, factor)
            for row in (first, min(first + factor, 300) - 1)} <= heads
    # budget: every first row is taken even when they outnumber three quarters of the rows sample may take
    wide = Case("wide", "t", (3, 5000, 7, 1024), (3, 5000, 1, 1024), (3, 5000, 1, 1024), (0, 1024))
    monkeypatch.setattr(sample_module, "SAMPLE_ELEMENTS", 1 << 20)
    rows, detect = sample_module.sampled_rows(wide, 1)
    first = set(sample_module.first_rows(wide))
    assert len(first) > 768 and first <= set(rows.tolist()) and len(rows) == len(first) + 256 and 0 < detect < 0.01


@pytest.mark.verdict
def test_sample_takes_the_bnsd_layouts_core_blocks(monkeypatch):
    """The grad's BNSD layout (cos [1, 1, N, D], as a BNSD caller's [1, 1, S, D] table): its ABA/BA tilings read dy
    as [b, s, n] and split B and N over the cores (``SplitCore``: ceil each, B first or N first), every s of a block
    inside it, so a core's block is no run of rows. 2 x 3 x 700 rows over 64 cores, N first: blocks of 11 heads for
    both b. A kernel whose block (b 0..1, n 11..21) leaves its last row (1, 2, 21) as it was: sample drew row 3521 by
    chance only before it took the four corners of each block of that grid (and of the 1SND layout's B x S*N)."""
    from kernels import correct_kernel
    from prmg_cli.inputs.seeded import make_inputs
    from prmg_cli.judging.checks import sample as sample_module

    monkeypatch.setattr(sample_module, "SAMPLE_ELEMENTS", 1 << 14)
    case = Case("bnsd", "t", (2, 3, 700, 16), (1, 1, 700, 16), (1, 1, 700, 16), (0, 16), seed=3)
    assert (0, 1, 11, 21) in sample_module.grid_blocks(2, 700, 64)
    inputs = make_inputs(case)
    result = correct_kernel(inputs.dy, inputs.cos, inputs.sin, 1, (0, 16))
    result[1, 2, 21] = inputs.dy[1, 2, 21]
    outcome = Outcome(status=0, dy=result, dy_changed=False)
    found = checks.run_checks(("sample",), checks.CheckContext(case, inputs, outcome, None))[0]
    assert not found.passed and "(b, s, n) = (1, 2, 21)" in found.message
    # 1SND: blocks of B x (S*N) folded rows, 40 b over 64 cores S*N first (blocks of 66 positions, all 40 b) and over
    # 40 cores (blocks of 105): rows no other split of the rows, (b, s) units or b units ends a share at
    folded = Case("1snd", "t", (40, 60, 70, 16), (1, 60, 70, 16), (1, 60, 70, 16), (0, 16))
    assert {b * 4200 + f for b in (0, 39) for f in (65, 66, 104, 105)} <= set(sample_module.first_rows(folded))


def sample_under(emulator, monkeypatch, fault: str, case: Case, elements: int):
    """(the golden's verdict, the sample check's result) of ``case`` launched once on the emulator under ``fault``,
    sample's budget shrunk to ``elements`` slice lanes (a small test of a large case's sampling)."""
    from prmg_cli.device.acl import AclSession
    from prmg_cli.inputs.seeded import make_inputs
    from prmg_cli.judging.checks import sample as sample_module

    monkeypatch.setattr(sample_module, "SAMPLE_ELEMENTS", elements)
    monkeypatch.setenv("PRMG_EMU_FAULT", fault)
    inputs = make_inputs(case)
    with AclSession(emulator, 0) as session:
        outcome = session.launch(case, inputs)
        found = checks.run_checks(("sample",), checks.CheckContext(case, inputs, outcome, session.launch))[0]
    return judge(case, inputs, outcome), found


def test_sample_catches_a_single_wrong_row_of_a_row_class_and_states_its_odds(emulator, monkeypatch):
    """The emulator's middle core skips the last row of its share (core_last_row): one wrong row among 3,200, of
    which sample draws 1,024 (its budget shrunk for a small test) -- the class rows make it sure; the metric states
    the chance for a wrong row elsewhere."""
    case = Case("one_row", "t", (1, 64, 50, 16), (1, 64, 1, 16), (1, 64, 1, 16), (0, 16))
    golden, found = sample_under(emulator, monkeypatch, "core_last_row", case, 1 << 14)
    assert golden.message.startswith("16 of 51200 elements over budget")
    assert not found.passed and found.metrics["sample_rows"] == 1024
    assert 0.1 < found.metrics["sample_detect"] < 0.3
    assert "sample: the host reference disagrees on 1 of 1024 sampled rows ((b, s, n) = (0, " in found.message


@pytest.mark.verdict
def test_sample_takes_each_cores_first_and_last_ub_pass_seam_within_its_budget(monkeypatch):
    """2,560 rows of 256 float32 lanes, a UB pass holding 31 of them (ub_pass_rows: a quarter of 248 KiB over 1 KiB of
    dy and 1 KiB of cos/sin a row), sample's budget shrunk to 1,024 rows: the rows either side of each core's first and
    last seam (40 cores of 64 rows: after rows 31 and 62; 64 cores of 40: after 31), the last core's first, are taken
    before the S axis' 1,024 indices fill the class rows' three quarters; the rest are 256 seeded draws among the
    1,792 rows left, the odds sample_detect states."""
    from prmg_cli.judging.checks import sample as sample_module
    from prmg_cli.ops.regimes import ub_pass_rows

    monkeypatch.setattr(sample_module, "SAMPLE_ELEMENTS", 1 << 18)
    # the table rows count: a bfloat16 slice with float32 cos/sin holds two 32-byte-rounded dy rows of table a row
    assert (ub_pass_rows(256, 4, 4), ub_pass_rows(128, 2, 2), ub_pass_rows(128, 2, 4), ub_pass_rows(1, 4, 4)) \
        == (31, 124, 82, 992)
    case = Case("seam", "t", (1, 2560, 1, 256), (1, 2560, 1, 256), (1, 2560, 1, 256), (0, 256))
    rows, detect = sample_module.sampled_rows(case, 7)
    seams = {core * 64 + k for core in range(40) for k in (30, 31, 61, 62)} \
        | {core * 40 + k for core in range(64) for k in (30, 31)}
    assert seams <= set(rows.tolist()) and len(rows) == 1024 and detect == 256 / 1792
    assert sample_module.ub_seams(case, 2560)[0] == [39 * 64 + 30, 39 * 64 + 31, 39 * 64 + 61, 39 * 64 + 62]


@pytest.mark.verdict
def test_sample_says_its_rows_verdict_of_the_case_rows():
    """The sampled rows are judged laid out as (rows, 1, 1, D): the failure names each by the case's (b, s, n) and
    leaves out the notes on which rows of that layout are wrong (the check lists the case's wrong rows itself)."""
    from prmg_cli.judging.checks.sample import in_case_rows

    message = ("2 of 512 elements over budget: err 9 ulp > bound 1 ulp (x9); errors only on odd lanes; errors only in "
               "rows (1, 0, 0), (3, 0, 0); worst at (b, s, n, d)=(3, 0, 0, 5): expected 1, got 2, error 1, budget 0.1")
    assert in_case_rows(message, np.array([4, 7, 9, 22]), (2, 4, 3)) == (
        "2 of 512 elements over budget: err 9 ulp > bound 1 ulp (x9); errors only on odd lanes; worst at (b, s, n, "
        "d)=(1, 3, 1, 5): expected 1, got 2, error 1, budget 0.1")


def test_sample_sees_the_rows_of_a_ub_pass_seam_and_names_them_as_the_case_has_them(emulator, monkeypatch):
    """The last core's later UB passes start on the tables of the row before (ub_tail_seam): 2 wrong rows in the middle
    of its share of 2,560 rows, of which sample draws 1,024 (its budget shrunk for a small test). Before the seams were
    row classes neither was among them (each had the odds sample_detect states, 0.14); now both always are, and the
    failure names them by the case's (b, s, n), not by their place among the sampled rows."""
    case = Case("seam", "t", (1, 2560, 1, 256), (1, 2560, 1, 256), (1, 2560, 1, 256), (0, 256))
    golden, found = sample_under(emulator, monkeypatch, "ub_tail_seam", case, 1 << 18)
    # a pass holds 31 rows of 256 float32 lanes: the last core's rows 39 * 64 + 31 and + 62
    assert "errors only in rows (0, 2527, 0), (0, 2558, 0)" in golden.message
    assert not found.passed and found.metrics["sample_rows"] == 1024 and found.metrics["sample_detect"] < 0.5
    assert found.message.startswith("sample: the host reference disagrees on 2 of 1024 sampled rows ((b, s, n) = "
                                    "(0, 2527, 0), (0, 2558, 0)): ")
    assert re.search(r"worst at \(b, s, n, d\)=\(0, 25(27|58), 0, \d+\)", found.message), found.message
    assert " row" not in found.message.split("): ", 1)[1].replace("worst at", "")      # no note on the layout's rows


@pytest.mark.verdict
@pytest.mark.parametrize("fault, consistent", [("negate_sin", ("adjoint", "roundtrip", "determinism")),
                                               ("swap_tables", ("adjoint", "roundtrip", "determinism")),
                                               ("half_pairing", ("adjoint", "determinism"))])
def test_sample_catches_a_grad_and_forward_wrong_in_the_same_way(fault, consistent):
    """Both operators negate sin, read cos as sin and sin as cos, or pair the lanes of another mode: each pair is
    consistent (adjoint and determinism, with a RoPE table roundtrip too, accept it); sample does not."""
    from test_checks import ModelSession, context, make_case

    case = make_case("grad", rope=True)
    session = ModelSession(grad_fault=fault, forward_fault=fault)
    ctx, _, _ = context(case, session)
    found = {result.name: result for result in checks.run_checks(tuple(checks.CHECKS), ctx)}
    assert all(found[name].passed for name in consistent), found
    assert not found["sample"].passed and found["sample"].message.startswith("sample: the host reference disagrees")
    correct, _, _ = context(case, ModelSession())
    assert all(result.passed and result.judged for result in checks.run_checks(tuple(checks.CHECKS), correct))


def test_checks_skip_where_they_are_not_defined_and_stay_green_on_the_shipped_edge_cases(tmp_path):
    """Over the shipped special values (NaN, Inf, overflow) and empty slices every check passes or says why it
    is not defined: no false alarm on a correct kernel. Every record the run writes (expect-error cases with
    reversed and negative slices among them) is read back by the results store's checks."""
    from prmg_cli.reports import store

    results = tmp_path / "r.jsonl"
    files = ("special", "edge", "checks", "cover", "forward", "negative")           # the shipped files with skips
    out = prmg_forked("run", *(f"cases/{name}.yaml" for name in files), *EMU, "--check",
                      "adjoint,roundtrip,determinism,sample", "--report", "json", "--results", results)
    document = json.loads(out.stdout)
    assert out.returncode == 0, [(c["name"], c["message"]) for c in document["cases"]
                                 if c["status"] not in ("passed", "skipped", "xfailed")]
    assert sorted(r.name for r in store.read(results).results) == sorted(c["name"] for c in document["cases"])
    details = {(c["source"], d) for c in document["cases"] for d in c["details"]}
    for source in ("cases/special.yaml", "cases/forward.yaml"):
        assert (source, "adjoint skipped: the inputs hold NaN or infinities, so <F x, dy> is not a number") in details
    for source in ("cases/edge.yaml", "cases/forward.yaml", "cases/negative.yaml"):
        assert (source, "roundtrip skipped: the call is a no-op here (an empty slice, tensor or table)") in details


def test_an_internal_error_in_a_check_ends_the_run_with_exit_code_3(tmp_path, emulator, monkeypatch, capsys):
    """A bug in a check is not a case error: the run stops (exit 3) with the worker's traceback. (Adding a check
    is one entry of ``checks.CHECKS``: here a toy entry that fails.)"""
    from test_cli_commands import run_in_process

    from prmg_cli.device import execute
    from prmg_cli.commands import suite
    from prmg_cli.commands import run

    def broken(context):
        raise ZeroDivisionError("a bug in a check")

    monkeypatch.setitem(checks.CHECKS, "toy", checks.Check("toy", "a toy check", broken, "toy_ratio", str,
                                                        lambda m: None))
    path = write(tmp_path, "- {name: t, shape: [1, 1, 2, 16], checks: [adjoint]}\n")
    with pytest.raises(execute.InternalError, match="(?s)case 't':.*ZeroDivisionError: a bug in a check"):
        suite.run_suite(run.Request(paths=(str(path),), runner="emulator", check="toy", report=("json:" + str(
            tmp_path / "r.json"),)))
    code, _, err = run_in_process(capsys, monkeypatch, "run", path, *EMU, "--check", "toy")      # the entry point
    assert code == 3 and "Traceback (most recent call last)" in err and "ZeroDivisionError: a bug in a check" in err


@pytest.mark.verdict
def test_every_launch_of_a_check_is_held_to_the_contract():
    """A forward that writes past its tensor only when a check launches it: the case fails on that launch."""
    from test_checks import ModelSession, context, make_case

    class GuardBreaking(ModelSession):
        def launch(self, case, inputs, **how):
            outcome = super().launch(case, inputs, **how)
            if case.op == "forward":
                outcome.contract_violations = ("guard zone after x changed at byte +0",)
            return outcome

    case = make_case("grad")
    ctx, inputs, outcome = context(case, GuardBreaking())
    verdict = checks.fold_checks(judge(case, inputs, outcome), checks.run_checks(("adjoint",), ctx), ctx, True)
    assert verdict.status == "failed" and verdict.kinds == {"contract"}
    assert verdict.message == ("adjoint: launch of InplacePartialRotaryMul: guard zone after x changed at byte +0")


# --- known defects, expected errors, skips ------------------------------------------------------------------

DEFECT_CASE = "-k", "neg.mode_2pow32_plus_1", "cases/negative.yaml"


@pytest.mark.parametrize("fault, status, words", [
    ("", "xfailed", "known defect (upstream's tiling reads"),
    ("modify_cos", "failed", "(not the known defect: "),
    ("crash", "error", "worker crashed: signal 11 (SIGSEGV) (not the known defect"),
    ("write_past_end", "failed", "guard zone after dy changed"),
])
def test_a_known_defect_is_xfail_only_when_that_defect_is_what_went_wrong(fault, status, words):
    code, cases, _, _ = run_json(*DEFECT_CASE, *EMU, env={"PRMG_EMU_FAULT": fault})
    result = cases["neg.mode_2pow32_plus_1"]
    assert (result["status"], code) == (status, 0 if status == "xfailed" else 1)
    assert words in result["message"]


@pytest.mark.verdict
@pytest.mark.parametrize("fault, status", [("", "xfailed"), ("sign", "failed"), ("noop", "failed")])
def test_the_call_a_known_defect_accepts_is_judged_as_what_it_behaves_as(emulator, monkeypatch, fault, status):
    """The shipped int32-mode defect: the operator accepts 2**32 + 1 and computes interleave; a wrong result
    under the defect is a failure, not an xfail (in-process: the emulator reads PRMG_EMU_FAULT at each call)."""
    from prmg_cli.device.acl import AclSession
    from prmg_cli.cases.loader import load_cases
    from prmg_cli.device.execute import RunSettings, run_case

    case = next(case for case in load_cases(["cases/negative.yaml"]) if case.name == "neg.mode_2pow32_plus_1")
    assert case.known_defect.behaves_as == (("rotary_mode", 1),)
    monkeypatch.setenv("PRMG_EMU_FAULT", fault)
    with AclSession(emulator, 0) as session:
        result = run_case(session, case, RunSettings(toolkit=emulator))[0]
    assert result.status == status, result.message
    if fault:
        assert "; the call the known defect accepts is wrong as rotary_mode interleave (its behaves_as): " \
            in result.message and "(not the known defect: " in result.message


@pytest.mark.verdict
def test_a_wrong_result_defect_excuses_nothing_beyond_its_wrong_elements(emulator, monkeypatch, tmp_path):
    """Wrong kernels round 9: a case marked ``known_defect: {result: wrong, pattern: last_row}`` was xfailed under
    ``--strict``, exit 0, when its kernel also moved between launches (``nondeterministic`` under ``--check
    determinism``: a check that judges no value fails beyond any wrong result), when its forward negated sin
    (``fwd_sign`` under ``--check adjoint``: adjoint failing in rows the golden passes is the other operator wrong;
    both ``unexplained``), or when it rounded toward +inf outside the last row (``round_up``: the error balance of a
    failed result was never counted; the elements outside the pattern are now judged as a passing result is). The
    defect alone stays an xfail, sample and adjoint failing on its row."""
    from prmg_cli.device.acl import AclSession
    from prmg_cli.cases.loader import load_cases
    from prmg_cli.device.execute import RunSettings, run_case

    path = tmp_path / "kd.yaml"
    path.write_text("- {name: kd, shape: [2, 2, 2, 64], cos_shape: [2, 2, 1, 64], partial_slice: [0, 64], "
                    "known_defect: {result: wrong, pattern: last_row, reason: the last row}}\n")
    case = load_cases([str(path)])[0]
    with AclSession(emulator, 0) as session:            # the emulator reads PRMG_EMU_FAULT at each call
        for fault, checks, status, said in (
                ("skip_last_row", ("determinism", "sample", "adjoint"), "xfailed", "known defect (the last row"),
                ("skip_last_row,fwd_sign", ("adjoint",), "failed", "adjoint: <F x, dy> and <x, B dy> differ"),
                ("skip_last_row,nondeterministic", ("determinism",), "failed", "determinism: 2 launches of the same "
                                                                               "inputs differ"),
                ("skip_last_row,round_up", (), "failed", "--strict: outside the known defect's pattern last_row: "
                                                         "biased")):
            monkeypatch.setenv("PRMG_EMU_FAULT", fault)
            result = run_case(session, case, RunSettings(toolkit=emulator, strict=True, checks=checks))[0]
            assert result.status == status and said in result.message, (fault, result.message)


@pytest.mark.verdict
def test_a_success_defect_naming_no_behaviour_is_a_warning_strict_fails(emulator, monkeypatch, tmp_path):
    """A defect "accepts half" without behaves_as leaves the accepted call's result unjudged: a kernel flipping
    the sign there would be an xfail. Each such call is a warning, and --strict fails the case."""
    from prmg_cli.device.acl import AclSession
    from prmg_cli.cases.loader import load_cases
    from prmg_cli.device.execute import RunSettings, run_case

    text = ("- {name: k, shape: [1, 1, 2, 16], rotary_mode: half, expect: {error: 561002}, "
            "known_defect: {reason: accepts half, status: SUCCESS}}\n")
    case = load_cases([write(tmp_path, text)])[0]
    monkeypatch.setenv("PRMG_EMU_FAULT", "accept_mode,sign")
    with AclSession(emulator, 0) as session:
        lenient, strict = (run_case(session, case, RunSettings(toolkit=emulator, strict=strict))[0]
                           for strict in (False, True))
    assert lenient.status == "xfailed" and lenient.warnings == [case.known_defect.unjudged()]
    assert strict.status == "failed" and strict.message == f"--strict: {case.known_defect.unjudged()}"


@pytest.mark.verdict
def test_a_defect_accepting_the_case_as_written_must_change_nothing_outside_its_empty_slice():
    from prmg_cli.inputs.seeded import make_inputs

    case = Case("f", "t", (1, 1, 2, 2000), (1, 1, 1, 2), (1, 1, 1, 2), (0, 0), expect=Expect(561002),
                known_defect=KnownDefect("early return", 0, ()))
    inputs = make_inputs(case)
    assert judge(case, inputs, Outcome(status=0, dy=inputs.dy.copy())).kinds == {"status"}
    changed = inputs.dy.copy()
    changed[0, 0, 0, 0] += 1
    verdict = judge(case, inputs, Outcome(status=0, dy=changed))
    assert verdict.kinds == {"status", "contract"}
    assert "the call the known defect accepts is wrong as the case as written (its behaves_as): " in verdict.message
    assert known_defect_status(case, CaseResult("f", "failed"), verdict.kinds, 0).status == "failed"


@pytest.mark.parametrize("defect, field, words", [
    ("{reason: x, result: wrong, behaves_as: {}}", "known_defect.behaves_as", "goes with status: SUCCESS, not"),
    ("{reason: x, status: 161002, behaves_as: {}}", "known_defect.behaves_as", "a call refused with 161002"),
    ("{reason: x, status: SUCCESS, behaves_as: {dtype: fp16}}", "known_defect.behaves_as.dtype", "unknown key"),
    ("{reason: x, status: SUCCESS, behaves_as: {rotary_mode: 9}}", "known_defect.behaves_as.rotary_mode",
     "unknown rotary_mode 9"),
    ("{reason: x, status: SUCCESS, behaves_as: interleave}", "known_defect.behaves_as", "expected a mapping"),
    ("{reason: x, result: wrong}", "known_defect", "a wrong result must be bounded"),
    ("{reason: x, result: wrong, max_error_ulp: -1}", "known_defect.max_error_ulp", "a finite number > 0"),
    ("{reason: x, result: wrong, max_error_ulp: 0}", "known_defect.max_error_ulp", "a finite number > 0"),
    ("{reason: x, result: wrong, elements: 0}", "known_defect.elements", "an integer 1 <= elements"),
    ("{reason: x, result: wrong, elements: 1.5}", "known_defect.elements", "an integer 1 <= elements <= 2**63 - 1"),
    ("{reason: x, result: wrong, pattern: odd}", "known_defect.pattern",
     "unknown pattern 'odd' (did you mean 'odd_lanes'?) (valid: odd_lanes, even_lanes"),
    ("{reason: x, status: SUCCESS, elements: 2}", "known_defect.elements", "goes with result: wrong"),
])
def test_behaves_as_and_a_wrong_results_bounds_are_checked(tmp_path, defect, field, words):
    from prmg_cli.cases.loader import load_cases
    from prmg_cli.errors import PrmgError

    text = f"- {{name: k, shape: [1, 1, 2, 16], rotary_mode: 7, expect: {{error: 561002}}, known_defect: {defect}}}\n"
    with pytest.raises(PrmgError) as raised:
        load_cases([write(tmp_path, text)])
    assert raised.value.field == field and words in raised.value.reason


@pytest.mark.parametrize("expect, defect, field, words", [
    ("pass", "status: SUCCESS", "known_defect.status", "SUCCESS is what the case expects, success (expect: pass)"),
    ("{error: 561002}", "status: 561002", "known_defect.status",
     "561002 ACLNN_ERR_INNER_TILING_ERROR is what the case expects, 561002"),
    ("{error: any}", "status: 161002", "known_defect.status", "is what the case expects, any refusal"),
    ("{error: 561002}", "result: wrong, elements: 3", "known_defect.result", "this case expects a refusal"),
])
def test_a_known_defect_the_case_already_expects_is_refused(tmp_path, expect, defect, field, words):
    """A marker that can never be met beside the case's expect (found by fuzzing): the case was xpassed whenever
    the operator was right, and validate said nothing."""
    from prmg_cli.cases.loader import load_cases
    from prmg_cli.errors import PrmgError

    text = f"- {{name: k, shape: [1, 1, 2, 16], expect: {expect}, known_defect: {{reason: x, {defect}}}}}\n"
    with pytest.raises(PrmgError) as raised:
        load_cases([write(tmp_path, text)])
    assert raised.value.field == field and words in raised.value.reason and "never be met" in raised.value.reason


def test_validate_warns_of_a_success_defect_that_names_no_behaviour(tmp_path):
    from prmg_cli.commands.suite import validate_paths

    text = "- {name: k, shape: [1, 1, 2, 16], rotary_mode: 7, expect: {error: 561002}, known_defect: {reason: x, %s}}\n"
    said = validate_paths([str(write(tmp_path, text % "status: SUCCESS"))], None)
    assert "case 'k': known_defect: status SUCCESS without behaves_as: the result of the accepted call is never " \
           "judged" in said
    assert "warning" not in validate_paths([str(write(tmp_path, text % "status: SUCCESS, behaves_as: {}"))], None)


BOUNDED = """
- {name: sign_odd, shape: [1, 2, 3, 24], partial_slice: [2, 22],
   known_defect: {reason: "second lanes add", result: wrong, pattern: odd_lanes}}
- {name: rounding, shape: [1, 2, 3, 24], partial_slice: [2, 22], dtype: bfloat16,
   known_defect: {reason: "bf16 rounding differs", result: wrong, max_error_ulp: 1}}
- {name: few, shape: [1, 2, 3, 24], partial_slice: [2, 22], known_defect: {reason: "one row", result: wrong,
   elements: 20, pattern: last_row}}
"""


@pytest.mark.parametrize("fault, xfailed", [
    ("sign", {"sign_odd"}), ("truncate", {"rounding"}), ("skip_last_row", {"few"}),
    ("noop", set()), ("nan", set()), ("neg_sin", set())])
def test_a_wrong_result_defect_xfails_only_within_its_bounds(emulator, monkeypatch, tmp_path, fault, xfailed):
    """A marker written for one wrongness (the second lanes' sign, bf16 rounding, the last row) xfails only that:
    a kernel that does nothing, writes NaN or flips the sign of sin goes beyond every bound and fails."""
    from prmg_cli.device.acl import AclSession
    from prmg_cli.cases.loader import load_cases
    from prmg_cli.device.execute import RunSettings, run_case

    monkeypatch.setenv("PRMG_EMU_FAULT", fault)
    with AclSession(emulator, 0) as session:
        results = {case.name: run_case(session, case, RunSettings(toolkit=emulator))[0]
                   for case in load_cases([write(tmp_path, BOUNDED)])}
    assert {name for name, result in results.items() if result.status == "xfailed"} == xfailed
    for name, result in results.items():         # a fault that leaves a case right: xpassed, which fails too
        assert result.status in ("xfailed", "failed", "xpassed"), result.message
        if result.status == "failed":
            assert "beyond the known defect: " in result.message and "(not the known defect: " in result.message
    assert fault in ("sign", "truncate", "skip_last_row") or all(r.status == "failed" for r in results.values())


def test_a_known_defect_that_hangs_is_an_error():
    code, cases, _, _ = run_json(*DEFECT_CASE, *EMU, "--timeout", "2", env={"PRMG_EMU_FAULT": "hang"})
    assert code == 1 and cases["neg.mode_2pow32_plus_1"]["status"] == "error"


@pytest.mark.verdict
def test_known_defect_status_rules():
    wrong = Case("w", "t", (1, 1, 1, 4), (1, 1, 1, 4), (1, 1, 1, 4), (0, 4),
                 known_defect=KnownDefect("why", bounds=(("elements", 1),)))
    status = replace(wrong, known_defect=KnownDefect("why", 0), expect=Expect(561002))
    failed = CaseResult("w", "failed", message="m")
    assert known_defect_status(wrong, failed, {"result"}, 0).status == "xfailed"
    assert known_defect_status(wrong, failed, {"result", "check"}, 0).status == "xfailed"
    assert known_defect_status(wrong, failed, {"result", "contract"}, 0).status == "failed"
    assert known_defect_status(wrong, failed, {"result", "defect_bound"}, 0).status == "failed"
    assert known_defect_status(wrong, failed, {"check"}, 0).status == "failed"     # the golden saw nothing wrong
    assert known_defect_status(status, failed, {"status"}, 0).status == "xfailed"
    assert known_defect_status(status, failed, {"status"}, 161002).status == "failed"
    assert known_defect_status(status, CaseResult("w", "error", message="timed out"), set()).status == "error"
    assert known_defect_status(status, CaseResult("w", "passed"), set(), 561002).status == "xpassed"


@pytest.mark.parametrize("text, field, words", [
    ("- {name: k, shape: [1, 1, 1, 4], known_defect: it fails}\n", "known_defect", "expected {reason: TEXT, status"),
    ("- {name: k, shape: [1, 1, 1, 4], known_defect: {reason: x}}\n", "known_defect", "name exactly one of"),
    ("defaults: {known_defect: {reason: x, result: wrong}}\ncases:\n- {name: k, shape: [1, 1, 1, 4]}\n",
     "defaults.known_defect", "'known_defect' belongs to each case, not to defaults"),
])
def test_a_known_defect_must_name_its_defect_on_each_case(tmp_path, text, field, words):
    out = prmg_here("validate", write(tmp_path, text))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert f"field '{field}'" in out.stderr and words in out.stderr


@pytest.mark.verdict
def test_a_device_fault_is_never_an_expected_refusal():
    case = Case("a", "t", (1, 1, 1, 4), (1, 1, 1, 4), (1, 1, 1, 4), (0, 4), expect=Expect("any"))
    from prmg_cli.inputs.seeded import make_inputs

    inputs = make_inputs(case)
    faulted = judge(case, inputs, Outcome(status=507015, failed_call=SYNCHRONIZE))
    assert faulted.status == "failed" and "a device fault after the kernel ran, not a refusal" in faulted.message
    assert judge(case, inputs, Outcome(status=561002, failed_call=GRAD.get_workspace, dy=inputs.dy.copy(),
                                       dy_changed=False)).status == "passed"


@pytest.mark.verdict
@pytest.mark.parametrize("status, call", [(507015, GRAD.launch), (507899, GRAD.launch), (507899, GRAD.get_workspace),
                                          (100000, GRAD.launch), (207018, GRAD.get_workspace)])
@pytest.mark.parametrize("phase", ["any", "launch", "workspace"])
def test_a_runtime_status_from_the_operators_own_calls_is_never_an_expected_refusal(status, call, phase):
    from prmg_cli.inputs.seeded import make_inputs

    case = Case("a", "t", (1, 1, 1, 4), (1, 1, 1, 4), (1, 1, 1, 4), (0, 4), expect=Expect("any", phase))
    inputs = make_inputs(case)
    verdict = judge(case, inputs, Outcome(status=status, failed_call=call, dy=inputs.dy.copy(), dy_changed=False))
    assert verdict.status == "failed" and verdict.kinds == {"status"}
    assert f"from {call}: a runtime or device status, not a refusal by the operator" in verdict.message


@pytest.mark.verdict
def test_a_refusal_is_a_status_of_the_aclnn_families():
    from prmg_cli.status import STATUS_NAMES, is_refusal

    assert [code for code in STATUS_NAMES if is_refusal(code)] == [161001, 161002, 361001, 561000, 561001, 561002,
                                                                   561003, 561103, 561107, 561112]
    assert not any(is_refusal(code) for code in (0, -561002, 100000, 107001, 207001, 507015, 507899, 1561002))


@pytest.mark.verdict
def test_the_asynchronous_kernel_fault_statuses_have_their_names():
    from prmg_cli.status import describe

    assert [describe(code) for code in (507014, 507034, 507036)] == [
        "507014 ACL_ERROR_RT_AICORE_TIMEOUT", "507034 ACL_ERROR_RT_VECTOR_CORE_TIMEOUT",
        "507036 ACL_ERROR_RT_VECTOR_CORE_TRAP_EXCEPTION"]


@pytest.mark.verdict
@pytest.mark.parametrize("call, status", [("launch", 507899), ("launch", 507015), ("get_workspace", 100000)])
def test_a_runtime_that_fails_the_operators_call_never_meets_an_expected_error(emulator, monkeypatch, call, status):
    """A stand-in for a broken runtime under the emulator's operator: the operator's own call returns a runtime
    or device status (the launch of a device a kernel fault left unusable returns 507899 on a real stack). The
    case fails, and the session is no longer fit to run another case."""
    from prmg_cli import ops
    from prmg_cli.device.acl import AclSession
    from prmg_cli.device.execute import RunSettings, run_case

    case = Case("e", "t", (1, 1, 2, 16), (1, 1, 2, 16), (1, 1, 2, 16), (0, 16), expect=Expect("any"))
    with AclSession(emulator, 0) as session:
        api = session._api

        def failing(*args):
            if call == "launch":
                api.aclDestroyAclOpExecutor(args[2])            # the executor this launch would have consumed
            return status

        monkeypatch.setattr(api, getattr(ops.GRAD, call), failing)
        result, fit = run_case(session, case, RunSettings(toolkit=emulator))
    assert result.status == "failed" and result.error_code == status
    assert "a runtime or device status, not a refusal by the operator" in result.message
    assert not fit and session.device_faulted          # the worker is replaced: the device's state is unknown


@pytest.mark.parametrize("field, text", [("expect.error", "expect: {error: 507015}"),
                                         ("expect.error", "expect: {error: ACL_ERROR_RT_DRV_INTERNAL_ERROR}"),
                                         ("known_defect.status", "known_defect: {reason: x, status: 507899}")])
def test_a_case_cannot_expect_a_runtime_status(tmp_path, field, text):
    from prmg_cli.cases.loader import load_cases
    from prmg_cli.errors import PrmgError

    with pytest.raises(PrmgError) as raised:
        load_cases([write(tmp_path, f"- {{name: r, shape: [1, 1, 2, 16], {text}}}\n")])
    assert raised.value.field == field and "is a runtime or device status, never an operator's refusal: " \
        in raised.value.reason and "161xxx, 361xxx, 561xxx families" in raised.value.reason


@pytest.mark.verdict
def test_the_phase_of_an_expected_error_is_checked():
    from prmg_cli.inputs.seeded import make_inputs

    case = Case("p", "t", (1, 1, 1, 4), (1, 1, 1, 4), (1, 1, 1, 4), (0, 4), expect=Expect(561000, "launch"))
    inputs = make_inputs(case)
    early = judge(case, inputs, Outcome(status=561000, failed_call=GRAD.get_workspace, dy_changed=False))
    assert early.status == "failed" and early.kinds == {"status"}
    assert "expected 561000 ACLNN_ERR_INNER from the launch (the second phase), got it from ...GetWorkspaceSize" \
        in early.message
    assert judge(case, inputs, Outcome(status=561000, failed_call=GRAD.launch, dy_changed=False)).status == "passed"


def test_the_shipped_non_contiguous_case_fails_when_the_first_phase_refuses(stand_in):
    """A stand-in toolkit whose first phase returns 561000 (an unknown PRMG_EMU_FAULT does that in both phases'
    first call): the shipped case expects 561000 from the launch, so it fails."""
    code, cases, _, _ = run_json("cases/negative.yaml", "-k", "not_contiguous", "--runner", "emulator",
                                 env={**stand_in, "PRMG_EMU_FAULT": "no_such_fault"})
    result = cases["neg.dy_not_contiguous"]
    assert code == 1 and result["status"] == "failed"
    assert "from the launch (the second phase), got it from ...GetWorkspaceSize" in result["message"]
    code, cases, _, _ = run_json("cases/negative.yaml", "-k", "not_contiguous", "--runner", "emulator", env=stand_in)
    assert code == 0


def test_validate_warns_when_the_phase_disagrees_with_the_model(tmp_path):
    path = write(tmp_path, "- {name: n, shape: [1, 1, 4, 8], dy_strides: [32, 32, 1, 4],\n"
                           "   expect: {error: ACLNN_ERR_INNER}}\n")
    out = prmg_here("validate", path)
    assert out.returncode == 0
    assert "but the constraint model predicts the launch (the second phase) returns it (write phase: launch)" \
        in out.stdout


def test_a_run_where_every_case_is_skipped_is_not_green(stand_in):
    """The toolkit implements interleave only, as the target says: every case of future_modes is skipped."""
    args = ("cases/future_modes.yaml", "--exclude-tag", "mode-unsupported", "--runner", "emulator")
    code, cases, summary, _ = run_json(*args, env=stand_in)
    assert code == 5 and summary["exit_code"] == 5 and summary["skipped"] == len(cases)
    assert summary["accepted_modes"] == [1]
    code, _, summary, _ = run_json(*args, "--strict", env=stand_in)
    assert code == 1 and summary["exit_code"] == 1
    out = prmg_forked("run", *args, env=stand_in)
    assert out.returncode == 5 and "(every case was skipped)" in out.stdout


MODES = """
- {name: half_ok, shape: [1, 2, 2, 32], rotary_mode: half}
- {name: quarter_ok, shape: [1, 2, 2, 32], rotary_mode: quarter}
- {name: too_wide, shape: [1, 1, 1, 2048], partial_slice: [0, 64], expect: {error: ACLNN_ERR_INNER_TILING_ERROR}}
"""


@pytest.mark.parametrize("toolkit, status", [({"PRMG_EMU_MODES": "0,1,2,3"}, "passed"),
                                             ({"PRMG_EMU_FAULT": "accept_mode"}, "failed")])
@pytest.mark.verdict
def test_pass_cases_of_a_mode_the_toolkit_accepts_run_though_the_target_lacks_it(stand_in, tmp_path, toolkit, status):
    """A toolkit whose first phase accepts half and quarter claims to implement them: their pass cases run (with
    --strict too), and pass on one that does (every mode implemented) or fail on one that computes them wrongly
    (accept_mode: interleave's formula), beside a negative case that passes; the run says why on stderr."""
    code, cases, summary, stderr = run_json(write(tmp_path, MODES), "--runner", "emulator", "--strict",
                                            env={**stand_in, **toolkit})
    assert (code, summary["skipped"]) == (0 if status == "passed" else 1, 0)
    assert (cases["half_ok"]["status"], cases["quarter_ok"]["status"], cases["too_wide"]["status"]) == \
        (status, status, "passed")
    assert summary["accepted_modes"] == [0, 1, 2, 3]
    assert "the toolkit accepts half, quarter, interleave-half too: their pass cases run, since its first phase " \
           "says it implements them (--supported-modes 0,1,2,3 says so as well)" in stderr


# --- resume ----------------------------------------------------------------------------------------------

def test_resume_runs_again_after_the_operator_library_is_rebuilt_or_the_soc_changes(stand_in, tmp_path):
    path, results = write(tmp_path, "- {name: r, shape: [1, 1, 2, 16]}\n"), tmp_path / "r.jsonl"

    def resumed(env):
        code, _, summary, stderr = run_json(path, "--runner", "emulator", "--resume", results, env=env)
        assert code == 0, stderr
        return summary["resumed"], "1 recorded verdict of a case changed since or judged under other" in stderr

    assert run_json(path, "--runner", "emulator", "--results", results, env=stand_in)[0] == 0
    assert resumed(stand_in) == (1, False)
    library = os.path.join(stand_in["ASCEND_HOME_PATH"], "lib64", "libopapi_transformer.so")
    with open(library, "rb") as built, open(library + ".new", "wb") as rebuilt:
        rebuilt.write(built.read() + b"\0")               # another build, at the same path
    os.replace(library + ".new", library)
    assert resumed(stand_in) == (0, True)
    assert resumed({**stand_in, "PRMG_EMU_SOC": "Ascend950DT_9591"}) == (0, True)


@pytest.mark.parametrize("field", ["soc", "driver_version", "host", "toolkit_version", "op_library_resolved",
                                   "location_resolved"])
def test_the_resume_key_holds_where_the_run_happened(emulator, field):
    """The toolkit's folder and library are keyed with links resolved (``latest`` and the version folder it names are
    one toolkit); as named they are the header's alone."""
    from prmg_cli.device.execute import RunSettings
    from prmg_cli.results import RunInfo
    from prmg_cli.reports.store import settings_key
    from prmg_cli.reports.run_record import recorded_settings

    settings, info = RunSettings(toolkit=emulator), RunInfo("emulator", str(emulator.root))
    assert settings_key(recorded_settings(replace(info, **{field: "elsewhere"}), settings)) \
        != settings_key(recorded_settings(info, settings))
    named = replace(info, location="/named/latest", op_library="/named/latest/lib64/libopapi_transformer.so")
    assert settings_key(recorded_settings(named, settings)) == settings_key(recorded_settings(info, settings))


@pytest.mark.verdict
def test_a_run_on_each_device_is_judged_under_other_settings_than_one_sharing_them(emulator):
    """--each-device (every case on every device) is in the settings a verdict was judged under: --resume of such a
    run trusts no record of a run that shared the devices (each case had run on one chip only), and ``prmg report``
    sees the two as mixed; a run without it keeps the keys of before."""
    from prmg_cli.reports.run_record import recorded_settings
    from prmg_cli.device.execute import RunSettings
    from prmg_cli.reports.store import settings_key
    from prmg_cli.results import RunInfo

    shared, info = RunSettings(toolkit=emulator), RunInfo("emulator", str(emulator.root))
    each = replace(shared, each_device=True)
    assert recorded_settings(info, each)["each_device"] is True and "each_device" not in recorded_settings(info, shared)
    assert settings_key(recorded_settings(info, each)) != settings_key(recorded_settings(info, shared))


# --- compare, pytest -------------------------------------------------------------------------------------

@pytest.mark.verdict
@pytest.mark.parametrize("before, after, category", [
    ("passed", "skipped", "verdict lost"), ("passed", "xfailed", "verdict lost"),
    ("failed", "skipped", "verdict lost"), ("failed", "xfailed", "verdict lost"),
    ("xfailed", "skipped", "verdict lost"), ("failed", "passed", "fixed"), ("skipped", "passed", "status changed"),
    ("failed", "not_run", "verdict lost"), ("error", "not_run", "verdict lost"), ("passed", "not_run", "new failure"),
    ("not_run", "skipped", "status changed"), ("not_run", "xfailed", "status changed"),
])
def test_compare_counts_a_lost_verdict_as_a_regression(before, after, category):
    """A case whose status says less of the kernel than it did (``StatusInfo.evidence``) lost its verdict: a
    failure that was not run this time is a regression, not a change (it was exit 0 before)."""
    comparison = compare({"c": CaseResult("c", before)}, {"c": CaseResult("c", after)})
    assert [change.category for change in comparison.changes] == [category]
    assert bool(comparison.regressions) == (category in ("verdict lost", "new failure"))


PLUGIN_CASES = """
- {name: p_defect, shape: [1, 2, 2, 32], known_defect: {reason: the sign is wrong, result: wrong, pattern: odd_lanes}}
- {name: p_vacuous, shape: [1, 1, 1, 8], inputs: {cos: {values: [1, 1, 1, 1, 1, 1, 1, 1]},
                                                   sin: {values: [0, 0, 0, 0, 0, 0, 0, 0]}}}
"""


def test_pytest_plugin_matches_prmg_under_runxfail_and_surfaces_warnings(tmp_path):
    path = write(tmp_path, PLUGIN_CASES)

    def pytest_run(*args):
        return forked_pytest("--prmg", path, "--prmg-runner", "emulator", "-q", "-rxX", *args, cwd=tmp_path,
                             env={"PRMG_EMU_FAULT": "sign"})

    normal = pytest_run()
    assert normal.returncode == 0, normal.stdout
    assert "1 passed, 1 xfailed, 1 warning" in normal.stdout
    assert "\nprmg FAULTS INJECTED: sign (PRMG_EMU_FAULT: acted on 2 of 2 cases: " in normal.stdout   # the end line
    assert "PrmgWarning: prmg case p_vacuous: vacuous: the unchanged input already passes" in normal.stdout
    runxfail = pytest_run("--runxfail")
    assert runxfail.returncode == 1 and "1 failed, 1 passed" in runxfail.stdout
    strict = pytest_run("-W", "error::prmg_cli.pytest_plugin.PrmgWarning")
    assert strict.returncode == 1 and "1 failed, 1 xfailed" in strict.stdout


def test_pytest_plugin_exits_as_prmg_run_does(tmp_path):
    """An all-skipped session judged nothing: 5, 1 under --prmg-strict, which also fails a warning case. (Without
    pytest's hypothesis and xdist plugins, which cost a second of start-up.)"""

    def session(path, *args, env=None):
        return forked_pytest("-p", "no:xdist", "--prmg", path, "--prmg-runner", "emulator", "-q", *args,
                             cwd=tmp_path, env=env)

    skipped = write(tmp_path, "- {name: s, shape: [1, 1, 1, 16], rotary_mode: quarter}\n", "skipped.yaml")
    alone = session(skipped)
    assert alone.returncode == 5, alone.stdout
    assert "\nprmg: every case was skipped, nothing was judged: exit 5 (as prmg run's" in alone.stdout
    assert session(skipped, "--prmg-strict").returncode == 1
    weak = write(tmp_path, PLUGIN_CASES.split("\n", 2)[2] + "- {name: p_ok, shape: [1, 2, 2, 16]}\n")
    strict = session(weak, "--prmg-strict")            # p_vacuous passes without it (the test above)
    assert strict.returncode == 1 and "1 failed, 1 passed" in strict.stdout
    assert "FAILED cases.yaml::p_vacuous - failed: --strict: vacuous" in strict.stdout


def test_the_store_checks_every_field_of_its_records():
    """One kind per field: a field added to a record is type-checked when read back, or this fails."""
    from prmg_cli.reports import store
    from prmg_cli.results import RECORD_FIELDS, RunInfo

    assert set(RECORD_FIELDS) == set(CaseResult.__dataclass_fields__)
    assert set(store.RUN_INFO_FIELDS) == set(RunInfo.__dataclass_fields__)
    assert set(store.RUN_FIELDS) | {"schema"} == set(store.RunRecord("r", "", [], {}, {}).to_dict())
    assert set(RECORD_FIELDS.values()) | set(store.RUN_FIELDS.values()) | set(store.RUN_INFO_FIELDS.values()) \
        <= set(store._KINDS)


CHECKED = "- {name: g, shape: [1, 2, 2, 16], broadcast: 1S1D, inputs: {cos: {rope: {}}, sin: {rope: {}}}}\n"


def test_a_consistent_wrong_pair_cannot_pass_a_golden_free_verdict(tmp_path):
    """Through the emulator: a grad and a forward that both negate sin pass adjoint, roundtrip and determinism, so
    --no-golden without a check anchored to the formula is refused, and the shipped checks-only case fails."""
    path = write(tmp_path, CHECKED)
    pair = {"PRMG_EMU_FAULT": "neg_sin,fwd_neg_sin"}
    out = prmg_forked("run", path, *EMU, "--no-golden", "--check", "adjoint,roundtrip,determinism", env=pair)
    assert out.returncode == 2 and "none anchored to the formula (adjoint: " in out.stderr
    assert out.stderr.count("\n") == 1 and "add sample to its checks or --check" in out.stderr
    code, cases, _, _ = run_json(path, *EMU, "--no-golden", "--check", "adjoint,roundtrip,sample", env=pair)
    assert code == 1 and "sample: the host reference disagrees" in cases["g"]["message"]
    code, cases, _, _ = run_json("cases/checks.yaml", *EMU, "-k", "checks_only", "--strict", env=pair)
    assert code == 1 and cases["checks.grad_large_checks_only"]["message"].startswith("sample: ")


def test_a_write_past_the_buffer_on_a_checks_launch_fails_the_case(tmp_path):
    """The grad is right; the forward, which only the adjoint check launches, writes past x."""
    path = write(tmp_path, CHECKED)
    code, cases, _, _ = run_json(path, *EMU, "--check", "adjoint", env={"PRMG_EMU_FAULT": "fwd_write_past_end"})
    assert code == 1 and cases["g"]["status"] == "failed"
    assert "adjoint: launch of InplacePartialRotaryMul: guard zone after x changed at byte +0" in cases["g"]["message"]
    assert run_json(path, *EMU, "--check", "adjoint")[0] == 0


def test_an_expected_error_is_not_met_by_a_device_fault(tmp_path):
    path = write(tmp_path, "- {name: e, shape: [1, 1, 2, 16], expect: {error: any}}\n")
    code, cases, _, _ = run_json(path, *EMU, env={"PRMG_EMU_FAULT": "device_fault"})
    assert code == 1 and cases["e"]["status"] == "failed"
    assert "from aclrtSynchronizeStream: a device fault after the kernel ran, not a refusal" in cases["e"]["message"]


def _interleave_pairs(rotary_mode: int, length: int):
    """A toy operator's own pairing, written here: interleave only (2k with 2k + 1, written in place)."""
    from prmg_cli.ops.reference import PairBlock

    if rotary_mode != 1:
        raise ValueError("the toy has one mode")
    even, odd = slice(0, length, 2), slice(1, length, 2)
    return (PairBlock(even, odd, even, odd),)


@pytest.mark.verdict
@pytest.mark.parametrize("second_sign,status", [(-1, "passed"), (1, "failed")])
def test_an_operator_is_one_entry(emulator, monkeypatch, second_sign, status):
    """A toy operator -- one entry in ``ops.OPERATORS`` with a ``Rotation`` of its own -- is an operator everywhere:
    case files, the constraint model, the runner, the judge, the checks (its adjoint is the forward). It borrows
    the grad's entry points and rules (the emulator implements no third operator), so its golden is judged
    against the grad's kernel: its own rotation with the grad's formula ``dx[q'] = c[q]*g[q] - s[p]*g[p]`` passes,
    the same with ``+`` fails -- the golden, the judge's one-pass scan and the sample check all come from the
    entry."""
    from prmg_cli import ops
    from prmg_cli.device.acl import AclSession
    from prmg_cli.cases.loader import parse_document, validate
    from prmg_cli.device.execute import RunSettings, run_case
    from prmg_cli.ops.reference import Rotation

    rotation = Rotation(pairs=_interleave_pairs, tables_at="input", first_sign=1, second_sign=second_sign)
    monkeypatch.setitem(ops.OPERATORS, "toy", replace(ops.GRAD, name="toy", title="ToyGrad", required=False,
                                                      rotation=rotation))
    cases = parse_document([{"name": "t", "op": "toy", "shape": [1, 2, 2, 16], "broadcast": "1S1D",
                             "checks": ["sample"]},
                            {"name": "t_bad", "op": "toy", "shape": [1, 1, 1, 2048], "partial_slice": [0, 8],
                             "expect": {"error": "ACLNN_ERR_INNER_TILING_ERROR"}}], "toy.yaml", ".")
    validate(cases, frozenset({1}))
    with AclSession(emulator, 0) as session:
        results = [run_case(session, case, RunSettings(toolkit=emulator))[0] for case in cases]
    assert [(r.op, r.status) for r in results] == [("toy", status), ("toy", "passed")], results
    if status == "passed":
        assert results[0].metrics["sample_ratio"] < 1
    else:
        assert results[0].message.startswith("32 of 64 elements over budget") and "errors only on odd lanes" in \
            results[0].message and "sample: the host reference disagrees on 4 of 4 sampled rows" in results[0].message


@pytest.mark.verdict
def test_a_toy_operator_s_adjoint_checks_run_against_its_partner(emulator, monkeypatch):
    """The toy grad's golden-free checks launch its adjoint partner (the forward) and pass on a correct pair."""
    from prmg_cli import ops
    from prmg_cli.device.acl import AclSession
    from prmg_cli.cases.loader import parse_document, validate
    from prmg_cli.device.execute import RunSettings, run_case

    monkeypatch.setitem(ops.OPERATORS, "toy", replace(ops.GRAD, name="toy", title="ToyGrad", required=False))
    cases = parse_document([{"name": "t", "op": "toy", "shape": [1, 2, 2, 16], "broadcast": "1S1D",
                             "checks": ["adjoint", "roundtrip"]}], "toy.yaml", ".")
    validate(cases, frozenset({1}))
    with AclSession(emulator, 0) as session:
        result = run_case(session, cases[0], RunSettings(toolkit=emulator))[0]
    assert (result.op, result.status) == ("toy", "passed") and result.metrics["adjoint_ratio"] < 1


# --- exit codes, --strict, --resume: the rules behind a run's verdict ---------------------------------------

@pytest.mark.verdict
def test_exit_code_rules():
    """1 when any case failed, errored, xpassed or did not run; when every case was skipped nothing was judged: 5
    (1 under --strict); else 0."""
    from prmg_cli.results import ExitCode, exit_code

    judged = [CaseResult("a", "passed"), CaseResult("b", "xfailed"), CaseResult("c", "skipped")]
    assert exit_code(judged) == ExitCode.OK
    for status in ("failed", "error", "xpassed", "not_run"):
        assert exit_code(judged + [CaseResult("d", status)]) == ExitCode.FAILED, status
    skipped = [CaseResult("a", "skipped"), CaseResult("b", "skipped")]
    assert exit_code(skipped) == ExitCode.NO_CASES and exit_code(skipped, strict=True) == ExitCode.FAILED


@pytest.mark.verdict
def test_strict_fails_a_passing_case_with_a_warning():
    from prmg_cli.device.execute import RunSettings, strict_status

    warned = CaseResult("a", "passed", warnings=["vacuous: ..."])
    assert strict_status(warned, RunSettings(None, strict=True)).status == "failed"
    assert strict_status(warned, RunSettings(None)).status == "passed"
    assert strict_status(CaseResult("a", "passed"), RunSettings(None, strict=True)).status == "passed"


@pytest.mark.verdict
def test_resume_trusts_only_verdicts_of_the_same_case_under_the_same_settings():
    from prmg_cli.reports.store import Stored, trusted

    record = replace(CaseResult("a", "passed"), fingerprint="f", judged_under="k")
    assert trusted(Stored("r.jsonl", results=[record]), {"a": "f"}, "k") == {"a": record}
    assert trusted(Stored("r.jsonl", results=[record]), {"a": "f"}, "other settings") == {}
    assert trusted(Stored("r.jsonl", results=[record]), {"a": "changed case"}, "k") == {}
    assert trusted(Stored("r.jsonl", results=[replace(record, status="error")]), {"a": "f"}, "k") == {}


@pytest.mark.verdict
def test_a_user_error_exits_2_with_one_line(tmp_path):
    done = prmg_here("validate", write(tmp_path, "- {name: a, shape: [1, 1, 1, 8], standard: nope}\n"))
    assert done.returncode == 2 and done.stderr.startswith("prmg: error: ") and done.stderr.count("\n") == 1, done


WEAK = """
- {name: loose, shape: [1, 2, 4, 32], tolerance: {budget_scale: 1.0e9}}
- {name: tiny_sin, shape: [1, 2, 4, 32], inputs: {sin: {uniform: [-1.0e-12, 1.0e-12]}}}
- {name: classic_loose, shape: [1, 2, 4, 32], standard: allclose, tolerance: {atol: 10, rtol: 0}}
- {name: big_tiny_sin, shape: [2, 64, 8, 64], inputs: {sin: {uniform: [-1.0e-12, 1.0e-12]}}}
- {name: fine, shape: [1, 2, 4, 32]}
- {name: big_fine, shape: [2, 64, 8, 64]}
"""


@pytest.mark.verdict
def test_validate_warns_of_partners_alike_as_the_run_will(tmp_path):
    """A RoPE table without ``partners_alike: REASON`` passes its run with the partners-alike warning: validate says
    so first (it said nothing, and a newcomer's case written from the README's example without that line was valid
    without a word, then warned twice in its run); with the reason, or uniform tables, no warning."""
    from prmg_cli.commands.suite import validate_paths
    from prmg_cli.judging.judge import PARTNERS_ALIKE_WARNING

    rope = "inputs: {cos: {rope: {base: 10000, offset: 5}}, sin: {rope: {base: 10000, offset: 5}}}"
    path = write(tmp_path, f"- {{name: rope, shape: [1, 3, 2, 16], broadcast: 1S1D, {rope}}}\n"
                           f"- {{name: said, shape: [1, 3, 2, 16], broadcast: 1S1D, {rope}, partners_alike: RoPE}}\n"
                           "- {name: drawn, shape: [1, 3, 2, 16]}\n")
    warnings = [line for line in validate_paths([str(path)], None).splitlines() if line.startswith("warning")]
    assert warnings == [f"warning: {path}: case 'rope': {PARTNERS_ALIKE_WARNING}"]


@pytest.mark.parametrize("fault", ["", "neg_sin"])
def test_a_case_whose_tolerance_or_values_hide_the_sign_of_sin_is_weak(emulator, monkeypatch, tmp_path, fault):
    """A kernel rotating the wrong way passes a case with a huge budget or allclose atol, or with sin tiny against
    the data: validate and run say so (run: the vacuous warning where the unchanged input passes too, else the weak
    one), --strict fails them; the ordinary cases get no warning and fail the flipped kernel."""
    from prmg_cli.device.acl import AclSession
    from prmg_cli.cases.loader import load_cases
    from prmg_cli.device.execute import RunSettings, run_case
    from prmg_cli.judging.judge import SIGN_HIDDEN_WARNING
    from prmg_cli.commands.suite import validate_paths

    path = write(tmp_path, WEAK)
    said = validate_paths([str(path)], None)
    assert [line.split(": ")[2] for line in said.splitlines() if line.startswith("warning")] == \
        ["4 cases (loose, tiny_sin, classic_loose, big_tiny_sin)"]          # one warning: one line naming them
    assert f"big_tiny_sin): {SIGN_HIDDEN_WARNING}" in said
    monkeypatch.setenv("PRMG_EMU_FAULT", fault)
    with AclSession(emulator, 0) as session:
        cases = load_cases([path])
        results = {case.name: run_case(session, case, RunSettings(toolkit=emulator))[0] for case in cases}
        strict = {case.name: run_case(session, case, RunSettings(toolkit=emulator, strict=True))[0].status
                  for case in cases}
    weak = {"loose", "tiny_sin", "classic_loose", "big_tiny_sin"}
    assert {name for name, result in results.items() if result.status == "passed"} == \
        (weak | {"fine", "big_fine"} if not fault else weak)
    assert {name for name, result in results.items() if result.warnings} == weak
    assert results["tiny_sin"].warnings == [SIGN_HIDDEN_WARNING] == results["big_tiny_sin"].warnings
    assert results["loose"].warnings[0].startswith("vacuous: ")
    assert all(strict[name] == "failed" for name in weak)
