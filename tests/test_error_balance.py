"""Error balance (``prmg_cli/error_balance.py``): a result whose errors lean one way beyond chance is a warning that
--strict fails, per case or pooled over a run's small cases; a correct kernel never gets it (the shipped suite in every
mode: ``test_run_e2e``), a kernel rounding toward +inf in float32 or casting to float16/bfloat16 toward +inf does."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from conftest import forked_pytest
from prmg_cli import error_balance
from prmg_cli.cases.loader import load_cases
from prmg_cli.device.acl import AclSession
from prmg_cli.device.execute import RunSettings, run_case
from prmg_cli.results import CaseResult, ExitCode, exit_code, run_warnings, summary_line
from test_standards import path  # noqa: F401  (the judging paths: whole arrays, one pass in numpy, compiled)


@pytest.mark.verdict
def test_the_sign_test_and_its_false_alarm_rate():
    assert error_balance.ALONE == 30
    assert 2 * math.exp(-error_balance.ALONE / 2) < error_balance.FALSE_ALARM <= 2 * math.exp(-29 / 2)
    assert error_balance.chance(0, 0) == 1.0 and error_balance.chance(50, 50) == 1.0
    assert error_balance.chance(30, 0) < 1e-6 < error_balance.chance(29, 0)
    assert error_balance.case_warning({"balance_up": 29, "balance_down": 0}) == ""              # too few to tell alone
    said = error_balance.case_warning({"balance_up": 5000, "balance_down": 4400})
    assert said == ("biased: 5000 of 9400 errors above the golden, 4400 below (bias +0.06); rounding to nearest splits "
                    "them evenly, and a split this one-sided has a chance <= 9.7e-09 (sign test, limit 1e-06)")
    assert error_balance.case_warning({"balance_up": 5000, "balance_down": 4500}) == ""        # chance 4e-6: no alarm
    assert "chance <= 1e-21714 (" in error_balance.case_warning({"balance_up": 10**5, "balance_down": 0})
    assert error_balance.case_warning({"balance_up": True, "balance_down": 0}) == ""           # not a count


@pytest.mark.verdict
def test_the_magnitude_test_has_the_signed_tests_edges():
    """Errors toward zero and away from it are a second sign test at the same rate, with the same edges (n = 10000: a
    lead of 540 warns, 538 does not; 30 alone, 29 pooled), whatever the signed counts; a record without them (written
    before the test) is read by the signed test alone; the signed test's text comes first when both lean."""
    even = {"balance_up": 5000, "balance_down": 5000}
    said = error_balance.case_warning({**even, "balance_toward": 5270, "balance_away": 4730})
    assert said.startswith("biased: 5270 of 10000 errors toward zero, 4730 away from zero (bias +0.05); ")
    assert error_balance.case_warning({**even, "balance_toward": 4730, "balance_away": 5270}).startswith(
        "biased: 4730 of 10000 errors toward zero, 5270 away from zero (bias -0.05)")
    assert error_balance.case_warning({**even, "balance_toward": 5269, "balance_away": 4731}) == ""
    assert error_balance.case_warning(even) == ""
    assert error_balance.case_warning({"balance_up": 30, "balance_down": 30, "balance_toward": 30,
                                       "balance_away": 0}).startswith("biased: 30 of 30 errors toward zero")
    assert error_balance.case_warning({"balance_up": 15, "balance_down": 14, "balance_toward": 29,
                                       "balance_away": 0}) == ""                         # too few alone: pooled
    assert error_balance.case_warning({"balance_up": 9000, "balance_down": 1000, "balance_toward": 0,
                                       "balance_away": 10000}).startswith("biased: 9000 of 10000 errors above")
    # the distinct recount, when there is one, is what the rule reads, for both tests
    assert error_balance.case_warning({**even, "balance_toward": 9000, "balance_away": 1000, "balance_distinct_up": 50,
                                       "balance_distinct_down": 50, "balance_distinct_toward": 50,
                                       "balance_distinct_away": 50}) == ""
    big = error_balance.RECOUNTED + 1
    assert error_balance.needs_distinct({**even, "balance_toward": 5270, "balance_away": 4730}, big)
    assert not error_balance.needs_distinct({**even, "balance_toward": 5269, "balance_away": 4731}, big)
    pool = [CaseResult(f"c{i}", "passed", op="grad", dtype="float32", metrics={
        "balance_up": 4, "balance_down": 4, "balance_toward": 8, "balance_away": 0}) for i in range(4)]
    assert run_warnings(pool) == ["biased (pooled over the 4 small grad float32 cases): 32 of 32 errors toward zero, 0 "
                                  "away from zero (bias +1.00); rounding to nearest splits them evenly, and a split "
                                  "this one-sided has a chance <= 2.3e-07 (sign test, limit 1e-06)"]


def small(name: str, up: int, down: int, status: str = "passed", dtype: str = "float32") -> CaseResult:
    return CaseResult(name, status, op="grad", dtype=dtype, metrics={"balance_up": up, "balance_down": down})


@pytest.mark.verdict
def test_small_cases_are_pooled_per_operator_and_dtype():
    results = [small(f"c{i}", 8, 0) for i in range(4)] + [small("b", 8, 0, dtype="bfloat16"), small("big", 900, 0),
                                                          small("f", 8, 0, "failed")]
    assert run_warnings(results) == [error_balance.pooled(results)[0]]
    assert run_warnings(results)[0].startswith("biased (pooled over the 4 small grad float32 cases): 32 of 32 errors")
    assert exit_code(results, strict=False) == ExitCode.FAILED          # the failed one
    passing = results[:-1]
    assert exit_code(passing) == ExitCode.OK and exit_code(passing, strict=True) == ExitCode.FAILED
    assert summary_line(passing).endswith("1 warning")
    assert run_warnings([small(f"c{i}", 4, 4) for i in range(10)]) == []


CASES = """
- {name: whole_fp32, shape: [1, 4, 8, 64], partial_slice: [0, 64]}
- {name: onepass_fp32, shape: [2, 16, 8, 64], partial_slice: [0, 64]}
- {name: cast_bf16, shape: [1, 4, 8, 64], partial_slice: [0, 64], dtype: bfloat16, tolerance: {budget_scale: 2.5}}
- {name: cast_fp16, shape: [2, 16, 8, 64], partial_slice: [0, 64], dtype: float16, tolerance: {budget_scale: 2.5}}
- {name: const_dy, shape: [1, 1, 64, 64], partial_slice: [0, 64], inputs: {dy: {uniform: [1, 1]}}}
- {name: bf16_const, shape: [4, 2, 64, 64], partial_slice: [0, 64], dtype: bfloat16, tolerance: {budget_scale: 2.5},
   inputs: {dy: {uniform: [0.3, 0.3]}}}
- {name: tiny_fp32, shape: [1, 1, 1, 8], partial_slice: [2, 8]}
- {name: tiny_fp32_b, shape: [1, 1, 2, 8], partial_slice: [0, 8]}
- {name: tiny_fp32_c, shape: [1, 1, 1, 16], partial_slice: [0, 16]}
"""


ODD_HALVES = "".join(                   # odd integers of float16's unit-ulp range, cos 1, sin 1/2 and 1/4 by lane
    f"- {{name: odd_halves_{op}, op: {op}, shape: [1, 4, 4, 32], dtype: float16, cos_shape: [1, 1, 1, 32], inputs: "
    f"{{dy: {{values: {[1025 + 2 * (37 * i % 512) for i in range(512)]}}}, cos: {{values: {[1] * 32}}}, "
    f"sin: {{values: {[0.5, 0.25] * 16}}}}}}}\n" for op in ("grad", "forward"))


@pytest.mark.parametrize("fault, biased", [("", set()), ("round_up", {"whole_fp32", "onepass_fp32"}),
                                           ("cast_up", {"cast_bf16", "cast_fp16"})])
def test_rounding_toward_plus_infinity_is_biased(emulator, monkeypatch, tmp_path, fault, biased):
    """Each element within its budget (the half dtypes' widened 2.5 times, so that only the balance can see the
    cast), yet every error up: a warning on both judging paths (whole array, one pass), --strict fails it; the small
    float32 cases, too few alone, are biased pooled. A correct kernel repeating each computation along N (a constant
    dy and a 111D table: const_dy, bf16_const, whose raw counts lean 640 to 1280 and 18432 to 13824) is not: the
    rule reads the distinct (golden, result) pairs; nor is one on inputs of few bits (odd_halves_*: odd integers
    times 1/2 and 1/4, whose correctly rounded errors lean 203 to 72), as the rule reads the departures from the
    golden's correct rounding. round_up's const_dy and cast_up's bf16_const depart at 20 and 27 distinct pairs, too few
    alone (raw, 1920 to 0 and 32256 to 0, most of them the correct rounding's own): const_dy joins the float32 pool."""
    (tmp_path / "c.yaml").write_text(CASES + ("" if fault else ODD_HALVES))     # a correct kernel on them
    monkeypatch.setenv("PRMG_EMU_FAULT", fault)
    settings = RunSettings(toolkit=emulator)
    with AclSession(emulator, 0) as session:
        results = [run_case(session, case, settings)[0] for case in load_cases([tmp_path / "c.yaml"])]
        strict = [run_case(session, case, RunSettings(toolkit=emulator, strict=True))[0]
                  for case in load_cases([tmp_path / "c.yaml"]) if case.name in biased]
    assert all(result.status == "passed" for result in results), [r.message for r in results]
    assert {result.name for result in results if result.warnings} == biased
    for result in results:
        if result.name in biased:
            assert result.warnings[0].startswith(f"biased: {result.metrics['balance_distinct_up']} of ") and \
                result.metrics["balance_down"] == result.metrics["balance_distinct_down"] == 0
    assert all(result.status == "failed" and result.message.startswith("--strict: biased: ") for result in strict)
    pooled = run_warnings(results)
    assert pooled == ([] if fault != "round_up" else [pooled[0]])
    assert not pooled or pooled[0].startswith("biased (pooled over the 4 small grad float32 cases): ")


def test_rounding_toward_zero_on_one_lane_in_four_is_biased_at_every_dtype(emulator, monkeypatch, tmp_path):
    """round_zero: one lane in four rounded (float32) or cast (float16, bfloat16: budgets widened 2.5 times) toward
    zero, every element within its budget. Its errors above and below the golden split evenly (the data's signs are
    even), so the signed test is blind to it; their magnitudes lean toward zero: a warning, at every dtype, and
    --strict fails it. It passed every shipped float32 case under --strict before the magnitude test."""
    (tmp_path / "c.yaml").write_text(CASES)
    monkeypatch.setenv("PRMG_EMU_FAULT", "round_zero")
    wanted = ("whole_fp32", "onepass_fp32", "cast_bf16", "cast_fp16")
    with AclSession(emulator, 0) as session:
        results = [run_case(session, case, RunSettings(toolkit=emulator, strict=True))[0]
                   for case in load_cases([tmp_path / "c.yaml"]) if case.name in wanted]
    for result in results:
        toward, away = (result.metrics[f"balance_distinct_{side}"] for side in ("toward", "away"))
        assert result.status == "failed" and result.message.startswith(f"--strict: biased: {toward} of "), \
            result.message
        assert "errors toward zero" in result.message and toward > away
        assert error_balance.chance(*(result.metrics[f"balance_distinct_{side}"] for side in ("up", "down"))) > 1e-6
    assert len(results) == 4


@pytest.mark.parametrize("fault", ["", "round_up"])
def test_without_the_golden_sample_says_the_bias_of_its_rows(emulator, monkeypatch, tmp_path, fault):
    """--no-golden --check sample: the sampled rows' error balance is a warning (--strict fails it), as the golden's
    would be; a correct kernel gets none. const_dy's 20 departures are too few alone (a check's counts are not
    pooled)."""
    (tmp_path / "c.yaml").write_text(CASES)
    monkeypatch.setenv("PRMG_EMU_FAULT", fault)
    settings = RunSettings(toolkit=emulator, checks=("sample",), golden=False, strict=True)
    with AclSession(emulator, 0) as session:
        results = {case.name: run_case(session, case, settings)[0] for case in load_cases([tmp_path / "c.yaml"])
                   if case.name in ("whole_fp32", "const_dy", "bf16_const")}
    failed = {name for name, result in results.items() if result.status == "failed"}
    assert failed == ({"whole_fp32"} if fault else set()), {n: r.message for n, r in results.items()}
    assert all(results[name].message.startswith("--strict: sample: biased: ") for name in failed)


def test_the_plugin_pools_and_strict_fails_a_biased_session(tmp_path):
    cases = tmp_path / "c.yaml"
    cases.write_text("\n".join(line for line in CASES.splitlines() if "tiny" in line or "const_dy" in line) + "\n")
    result = forked_pytest("-q", "--prmg", cases, "--prmg-runner", "emulator", "--prmg-strict", cwd=tmp_path,
                           env={"PRMG_EMU_FAULT": "round_up"})
    assert result.returncode == 1 and "4 passed" in result.stdout, result.stdout
    assert "prmg warning: biased (pooled over the 4 small grad float32 cases): " in result.stdout


@pytest.mark.verdict
def test_each_distinct_golden_and_result_pair_counts_once():
    """An error repeated (a broadcast table over equal dy rows) is one trial of the sign test: three copies of one
    error up and one more up count 2 up; two copies of one error down count 1; an exact element, one whose golden is
    below the balance's floor and a non-finite one count neither way; ``departures`` places each at its first
    element."""
    import numpy as np

    from prmg_cli.dtypes import FLOAT_FORMATS
    from prmg_cli.judging.standards.default import departures, distinct_balance_counts

    up, down = 1 + 2.0 ** -20, 2 - 2.0 ** -20
    golden = np.array([1, 1, 1, 1, 2, 2, 3, 2.0 ** -90, 5, 6])
    actual = np.array([up, up, up, 1 + 2.0 ** -19, down, down, 3, 2.0 ** -89, np.inf, np.nan])
    # up, down; toward zero, away from it
    assert distinct_balance_counts(actual, golden, FLOAT_FORMATS["float32"]) == (2, 1, 1, 2)
    # where they lie, for the groups' tests: each distinct pair at its first element only
    sign, toward, binade = departures(actual, golden, FLOAT_FORMATS["float32"])
    assert binade.tolist() == [1, 0, 0, 1, 2, 0, 0, 0, 0, 0]
    assert sign.tolist() == [1, 0, 0, 1, -1, 0, 0, 0, 0, 0] and np.flatnonzero(toward).tolist() == [4]


def test_the_distinct_pairs_are_np_unique_s_without_its_import_of_numpy_ma():
    """The recount's distinct pairs (``default._distinct``: a sort and a comparison of neighbours) are np.unique's, the
    same values in the same order, -0.0 and 0.0 alike in either part, an empty array included."""
    import numpy as np

    from prmg_cli.judging.standards.default import _distinct

    rng = np.random.default_rng(5)
    parts = np.array([0.0, -0.0, 1.0, -1.0, 2.0 ** -30, 3.5])
    for size in (0, 1, 2, 7, 200):
        values = rng.choice(parts, size) + 1j * rng.choice(parts, size)
        found, expected = _distinct(values), np.unique(values)
        assert found.shape == expected.shape and np.array_equal(found, expected)


@pytest.mark.verdict
def test_the_distinct_pairs_are_recounted_where_the_raw_counts_decide():
    """Raw counts that lean beyond chance, or too few to be tested alone (pooled by the run: 29 counted errors, even
    split evenly), are recounted as distinct pairs; ALONE or more that split evenly, or none, are not -- in a result
    of more than RECOUNTED elements (BIG)."""
    counts = lambda up, down: {"balance_up": up, "balance_down": down}
    BIG = error_balance.RECOUNTED + 1
    assert error_balance.needs_distinct(counts(3, 0), BIG) and error_balance.needs_distinct(counts(15, 14), BIG)
    assert error_balance.needs_distinct(counts(600, 400), BIG)
    assert not error_balance.needs_distinct(counts(15, 15), BIG) and not error_balance.needs_distinct(counts(0, 0), BIG)
    assert not error_balance.needs_distinct(counts(500, 500), BIG)
    # a small result is recounted whatever its raw counts: they are no screen for departures from the correct rounding
    assert error_balance.needs_distinct(counts(500, 500), error_balance.RECOUNTED)
    assert not error_balance.needs_distinct(counts(0, 0), error_balance.RECOUNTED)


# --- groups of rows and lanes: a bias of a kernel's tail rows or lanes alone ------------------------------------------

@pytest.mark.verdict
def test_a_group_leans_from_its_floor_at_the_false_alarm_rate_shared_by_the_groups():
    """Two rows of 64 lanes: groups rows 0 and 1 (row_groups) and the 64 lanes, each tested at 1e-6 / 66: row 1 with
    38 departures all above its correct rounding is biased (2 exp(-19) < 1.5e-8), with 37 it is not; the lanes, one
    departure each, never are; one row alone has no group (the whole result is case_warning's)."""
    import numpy as np

    from prmg_cli.judging.standards.default import group_counts, row_groups

    def warning(sign, toward):
        return error_balance.group_warning(group_counts(sign, toward))

    assert row_groups(2) == [(0, 0), (1, 1)] and row_groups(1) == []
    assert 37 < error_balance.group_floor(66) < 38
    for ups, said in ((38, True), (37, False)):
        sign, toward = np.zeros((1, 1, 2, 64), np.int8), np.zeros((1, 1, 2, 64), bool)
        sign[0, 0, 1, :ups] = 1
        text = warning(sign, toward)
        assert text.startswith(f"biased in rows 1 to 1: {ups} of {ups} errors above the golden, 0 below") == said, text
        assert said or text == ""
        assert (warning(sign[..., :1, :], toward[..., :1, :]) == "") and (
            warning(-sign, toward).startswith(f"biased in rows 1 to 1: 0 of {ups} errors") == said)
    sign[0, 0, 1, :38], toward[0, 0, 1, :38] = np.tile([1, -1], 19), True              # even signs, all toward zero
    assert warning(sign, toward).startswith("biased in rows 1 to 1: 38 of 38 errors toward zero")
    assert "limit 1.5e-08)" in warning(sign, toward)
    sign[0, 0, :, 5], toward[...] = 0, False                                            # one lane: 2 rows, no more
    counts = group_counts(sign, toward)
    assert counts[-59] == ("lane 5 of the slice", 0, 0, 0, 0) and len(counts) == 66


def rounded_up(case, inputs, chosen=lambda row, lane: False, toward_zero=False):
    """The correct float32 result of ``case`` (``kernels.correct_kernel``), each element where ``chosen(row, lane)``
    (row in C order of (b, s, n), lane of the slice; arrays) rounded toward +inf instead, where the golden lies above
    it (``toward_zero``: rounded toward zero, where the golden lies nearer zero than it)."""
    import numpy as np
    from kernels import correct_kernel
    from prmg_cli.ops import GRAD

    start, end = case.partial_slice
    result = correct_kernel(inputs.dy, inputs.cos, inputs.sin, case.rotary_mode, case.partial_slice)
    golden = GRAD.golden_slice(inputs.dy, inputs.cos, inputs.sin, case.rotary_mode, case.partial_slice)
    part = result[..., start:end]
    up = np.where(part < golden, np.nextafter(part, np.float32(np.inf)), part) if not toward_zero else \
        np.where(np.abs(part) > np.abs(golden), np.nextafter(part, np.float32(0)), part)
    row, lane = np.indices((part.size // (end - start), end - start))
    result[..., start:end] = np.where(np.broadcast_to(chosen(row, lane), row.shape).reshape(part.shape), up, part)
    return result


@pytest.mark.verdict
def test_a_kernel_biased_on_its_tail_rows_or_one_lane_alone_is_biased(path):
    """float32: rounding toward +inf on the last 25 of 1000 rows of 8 lanes (the last of 40 cores' shares), on one
    element in four of its last 250 rows, on lane 37 of 300 rows of 64, or on the first or the last row of each core's
    share, stays within every budget and leans the whole result by too little to tell, and a row group of the tail
    (the last shares, or the rows from a share's start to the end), that lane or the shares' first or last rows lean
    beyond chance; the correct results lean nowhere, on every judging path."""
    from prmg_cli.device.acl import Outcome
    from prmg_cli.inputs.seeded import make_inputs
    from prmg_cli.judging.judge import judge
    from test_judge import make_case

    rows, lanes = make_case((1, 1, 1000, 8), (0, 8), broadcast="11ND"), make_case((1, 1, 300, 64), (0, 64))
    for case, chosen, said in (
            (rows, lambda row, lane: False, None), (lanes, lambda row, lane: False, None),
            (rows, lambda row, lane: row >= 975, r"biased in rows (9[5-9]\d) to 999: "),
            (lanes, lambda row, lane: lane == 37, r"biased in lane 37 of the slice: "),
            # one element in four of the last 250 rows: no core's share (25 rows at most) nor lane leans; rows
            # from the start of an earlier share to the end do
            (rows, lambda row, lane: (row >= 750) & ((row + lane) % 4 == 0), r"biased in rows [1-8]?\d\d to 999: "),
            # the first row of each of 40 cores' shares of 25 rows (a peeled prologue: the emulator's share_edge_up)
            (rows, lambda row, lane: row % 25 == 0,
             r"biased in the first row of each core's share \(40 cores, floor split\): "),
            (rows, lambda row, lane: row % 25 == 24, r"biased in the last row of each core's share \(40 cores, ")):
        inputs = make_inputs(case)
        verdict = judge(case, inputs, Outcome(status=0, dy=rounded_up(case, inputs, chosen)), "default")
        assert verdict.status == "passed" and error_balance.case_warning(verdict.metrics) == "", path
        biased = [text for text in verdict.warnings if text.startswith("biased")]
        assert len(biased) == (said is not None) and all(re.match(said, text) for text in biased), (path, biased)


@pytest.mark.verdict
def test_a_large_result_biased_on_its_tail_rows_alone_is_biased(path):
    """Past ``RECOUNTED`` slice elements (160,000: 40,000 rows of 4 lanes, the compiled scans on two threads; an
    infinite dy makes a chunk of them judged element by element, in its first part and in a later one, after parts
    that passed), the groups are screened by the departures' sides
    per row and lane counted with their repeats (``departure_sides``; the compiled scans count them as numpy does,
    bit for bit), then tested on the distinct departures: float32 rounded toward +inf on the last 200 rows (800
    elements, within every budget, the whole result leaning by too little to tell) is biased in a group of the last
    core's rows on every judging path; the correct result is not (session 12: the emulator's tail_rows_up, the
    last core's last eighth of a float32 slice past 2^16 elements, passed cases/ under --strict when the groups
    stopped at RECOUNTED). Without the golden, sample says a group's bias of its rows too, in the case's rows (on the
    compiled path: it judges its rows as the judge does)."""
    import numpy as np

    from prmg_cli.device.acl import Outcome
    from prmg_cli.dtypes import FLOAT_FORMATS
    from prmg_cli.inputs.seeded import make_inputs
    from prmg_cli.judging import default_pass
    from prmg_cli.judging.checks.base import CheckContext
    from prmg_cli.judging.checks.sample import in_case_group, sample, sampled_rows
    from prmg_cli.judging.judge import judge
    from prmg_cli.judging.standards.default import departure_sides
    from prmg_cli.ops import GRAD
    from test_judge import make_case

    case = make_case((1, 1, 40000, 4), (0, 4), broadcast="11ND")
    assert 40000 * 4 > 2 * error_balance.RECOUNTED
    said_of = "biased in rows 2 to 4: 40 of 40 errors"                    # rows of sample's layout, said of the case's
    assert in_case_group(said_of, np.array([0, 5, 9, 12, 40])) == "biased in the sampled rows from 9 to 40: 40 of 40 " \
        "errors" and in_case_group(said_of, np.arange(5)) == said_of
    assert in_case_group("biased in the first row of each core's share (40 cores, floor split): 9", np.array([0, 5])) \
        == "biased in the first row of each core's share of the sampled rows (40 cores, floor split): 9"
    inputs = make_inputs(case)
    inputs.dy[0, 0, 7, 1] = np.inf
    inputs.dy[0, 0, 1424, 2] = np.inf          # the third part of the second chunk (1024 rows, parts of 192)
    for chosen, said, toward_zero in (
            (lambda row, lane: False, None, False),
            (lambda row, lane: row >= 39800, r"biased in rows \d+ to 39999: ", False),
            # toward zero on the tail rows (as often up as down): only the screen's magnitude counts lean (session 13)
            (lambda row, lane: row >= 39800, r"biased in rows \d+ to 39999: \d+ of \d+ errors toward zero", True)):
        result = rounded_up(case, inputs, chosen, toward_zero)
        verdict = judge(case, inputs, Outcome(status=0, dy=result), "default")
        assert verdict.status == "passed" and error_balance.case_warning(verdict.metrics) == "", path
        biased = [text for text in verdict.warnings if text.startswith("biased")]
        assert len(biased) == (said is not None) and all(re.match(said, text) for text in biased), (path, biased)
        if path == "native":
            checked = sample(CheckContext(case, inputs, Outcome(status=0, dy=result), None))
            assert checked.passed and len(checked.warnings) == (said is not None), checked.warnings
            rows = sampled_rows(case, case.seed ^ 0x5A4D)[0]
            assert said is None or re.match(r"sample: biased in (rows \d+ to|the sampled rows from \d+ to) 39999: ",
                                            checked.warnings[0]), (checked.warnings, len(rows))
            golden = GRAD.golden_slice(inputs.dy, inputs.cos, inputs.sin, case.rotary_mode, case.partial_slice)
            passed = default_pass.fast_default(case, inputs, result, None, {})
            expected = departure_sides(result.astype(np.float64), golden, FLOAT_FORMATS["float32"])
            assert passed.sides is not None and passed.distinct is None
            assert all(np.array_equal(got, want) for got, want in zip(passed.sides, expected))
            assert expected[0][39800:, 0].sum() > 100 and np.array_equal(expected[1].sum(0), expected[0].sum(0))


@pytest.mark.verdict
def test_the_screen_counts_a_golden_at_the_balance_s_threshold_and_none_below_it(path):
    """The screen of a large result (past ``RECOUNTED``) counts a departure whose golden is exactly the balance's
    threshold (``balance_threshold``: 2^-77 in float32) and none whose golden is the float below it, as numpy's and
    the compiled scans' counts both do, bit for bit (cos 1 and sin 0: the golden is dy; 100 rows of each, every lane
    one ulp above it): a compiled screen counting from just above the threshold differed from numpy's."""
    import numpy as np

    from prmg_cli.device.acl import Outcome
    from prmg_cli.dtypes import FLOAT_FORMATS
    from prmg_cli.inputs.seeded import make_inputs
    from prmg_cli.judging import default_pass
    from prmg_cli.judging.judge import judge
    from prmg_cli.judging.standards.default import balance_threshold, departure_sides
    from test_judge import make_case

    case = make_case((1, 1, 40000, 4), (0, 4), broadcast="11ND")
    inputs = make_inputs(case)
    inputs.cos[...], inputs.sin[...] = 1, 0
    threshold = np.float32(balance_threshold(FLOAT_FORMATS["float32"]))
    assert threshold == np.float32(2.0 ** -77)
    inputs.dy[0, 0, 100:200] = threshold
    inputs.dy[0, 0, 200:300] = np.nextafter(threshold, np.float32(0))
    result = inputs.dy.copy()
    result[0, 0, 100:300] = np.nextafter(result[0, 0, 100:300], np.float32(np.inf))
    verdict = judge(case, inputs, Outcome(status=0, dy=result), "default")
    assert verdict.status == "passed", verdict.message
    rows, lanes = departure_sides(result.astype(np.float64), inputs.dy.astype(np.float64), FLOAT_FORMATS["float32"])
    assert rows[100:200].tolist() == [[4, 0, 0]] * 100 and not rows[:100].any() and not rows[200:].any()
    assert lanes.tolist() == [[100, 0, 0]] * 4
    if path == "native":
        passed = default_pass.fast_default(case, inputs, result, None, {})
        assert passed.sides is not None and np.array_equal(passed.sides[0], rows) and np.array_equal(passed.sides[1],
                                                                                                    lanes)


def nudged(case, direction, values=None):
    """``case``'s inputs with cos 1 and sin 0 (the golden is dy, the correct result dy itself), dy replaced by
    ``values`` where they are not NaN, and a result one float32 ulp above dy where ``direction`` (over the slice's
    (rows, lanes)) is +1, below where it is -1: departures from the correct rounding placed one by one."""
    import numpy as np

    from prmg_cli.inputs.seeded import make_inputs

    inputs = make_inputs(case)
    inputs.cos[...], inputs.sin[...] = 1, 0
    flat = inputs.dy.reshape(direction.shape)
    if values is not None:
        flat[...] = np.where(np.isnan(values), flat, values)
    result = np.where(direction > 0, np.nextafter(flat, np.float32(np.inf)),
                      np.where(direction < 0, np.nextafter(flat, np.float32(-np.inf)), flat))
    return inputs, result.reshape(inputs.dy.shape).astype(np.float32)


def noise(rows: int, lanes: int, share: float = 0.2, seed: int = 3):
    """Departures of random sign on ``share`` of the elements: a correct kernel's computation noise."""
    import numpy as np

    rng = np.random.default_rng(seed)
    return np.where(rng.random((rows, lanes)) < share, rng.choice(np.array([-1, 1], np.int8), (rows, lanes)), 0)


@pytest.mark.verdict
def test_a_large_result_biased_on_one_lane_alone_is_biased(path):
    """2048 rows of 64 lanes (past ``RECOUNTED``): lane 37 one ulp up on a quarter of its rows (512 departures), among
    departures of random sign on a fifth of the elements, leans the whole result by too little to tell (z about 2)
    but its lane beyond chance: the screen tests each lane's departures, so the lane is recounted and said; without
    the bias nothing is (a screen of the rows alone spread the lane over every row group and never recounted it)."""
    import numpy as np

    from prmg_cli.device.acl import Outcome
    from prmg_cli.judging.judge import judge
    from test_judge import make_case

    case = make_case((1, 1, 2048, 64), (0, 64), broadcast="11ND")
    for biased in (False, True):
        direction = noise(2048, 64)
        if biased:
            direction[::4, 37] = 1
        inputs, result = nudged(case, direction)
        verdict = judge(case, inputs, Outcome(status=0, dy=result), "default")
        said = [text for text in verdict.warnings if text.startswith("biased")]
        assert verdict.status == "passed" and error_balance.case_warning(verdict.metrics) == "", path
        assert [text.split(":")[0] for text in said] == ["biased in lane 37 of the slice"] * biased, (path, said)


@pytest.mark.verdict
@pytest.mark.parametrize("rows, said", [(16384, True), (16385, False)])
def test_a_result_of_recounted_elements_has_its_groups_recounted_one_more_is_screened(path, rows, said):
    """A group's bias that only its distinct departures show: the first 200 rows (within one share of every split)
    hold 400 distinct departures up on even rows and, on odd rows, 400 repeats of two pairs down (200 toward zero,
    200 away), among random noise: the groups' counts with their repeats split evenly, the distinct ones lean up. A
    result of RECOUNTED slice elements (16384 rows of 4) has its groups recounted always, and the rows' group is said;
    one of 16385 rows is screened by the counts with their repeats, which do not lean: no warning (the screen's
    documented blind spot)."""
    import numpy as np

    from prmg_cli.device.acl import Outcome
    from prmg_cli.judging.judge import judge
    from test_judge import make_case

    case = make_case((1, 1, rows, 4), (0, 4), broadcast="11ND")
    assert (rows * 4 <= error_balance.RECOUNTED) == said
    direction, values = noise(rows, 4), np.full((rows, 4), np.nan, np.float32)
    direction[:200] = 0
    direction[0:200:2] = 1
    direction[1:200:2] = -1
    values[1:200:2] = np.tile(np.float32([0.75, -0.75]), (100, 2))
    inputs, result = nudged(case, direction, values)
    verdict = judge(case, inputs, Outcome(status=0, dy=result), "default")
    biased = [text for text in verdict.warnings if text.startswith("biased")]
    assert verdict.status == "passed" and error_balance.case_warning(verdict.metrics) == "", (path, biased)
    assert len(biased) == said and all(re.match(r"biased in rows 0 to \d+: \d+ of \d+ errors above", text)
                                       for text in biased), (path, biased)


@pytest.mark.verdict
@pytest.mark.parametrize("step, said", [(1, "the binade 4 <= |golden| < 8"), (-1, "the binade 2 <= |golden| < 4")])
def test_a_bias_on_one_binade_alone_is_biased_and_named_by_its_binade(path, step, said):
    """4000 rows of 4 lanes, every golden in [1, 2) with departures of random sign on a fifth of them, but 200 goldens
    from 4 up (4 itself: the binade [4, 8)) or from the float below 4 down ([2, 4)) one ulp up: the whole result leans
    by too little to tell, no row or lane group leans, the binade does, and is named (the emulator's binade_thin_up
    passed cases/ under --strict before the binades were groups); with two binades of departures alone it is tested."""
    from prmg_cli.device.acl import Outcome
    from prmg_cli.judging.judge import judge
    from test_judge import make_case

    case = make_case((1, 1, 4000, 4), (0, 4), broadcast="11ND")
    rng = np.random.default_rng(11)
    values = (rng.uniform(1, 2, (4000, 4)) * rng.choice([-1, 1], (4000, 4))).astype(np.float32)
    direction = noise(4000, 4)
    chosen = rng.choice(4000 * 4, 200, replace=False)
    first = np.float32(4) if step > 0 else np.nextafter(np.float32(4), np.float32(0))
    magnitudes = first * (1 + step * np.arange(200, dtype=np.float32) * np.float32(2.0 ** -20))
    values.flat[chosen] = magnitudes * rng.choice(np.float32([-1, 1]), 200)
    direction.flat[chosen] = 1
    inputs, result = nudged(case, direction, values)
    verdict = judge(case, inputs, Outcome(status=0, dy=result), "default")
    biased = [text for text in verdict.warnings if text.startswith("biased")]
    assert verdict.status == "passed" and error_balance.case_warning(verdict.metrics) == "", (path, biased)
    assert [text.split(":")[0] for text in biased] == [f"biased in {said}"], (path, biased)
