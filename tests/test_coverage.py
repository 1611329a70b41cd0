"""prmg coverage: the regime classes, the engine deciding which a case really exercises, the command's reports and
exit codes, the cover preset (complete, deterministic, red under the emulator's layout faults), the models
table, and the one-line coverage of a run's reports."""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace

import numpy as np
import pytest

from conftest import ROOT, prmg_forked
from prmg_cli.cases import cover_preset, coverage, gencase, loader, models_preset, presets as presets_module
from prmg_cli.cases.loader import load_cases, parse_document
from prmg_cli.commands.coverage import coverage_command
from prmg_cli.errors import PrmgError
from prmg_cli.inputs.seeded import make_inputs
from prmg_cli.ops import OPERATORS, constraints
from prmg_cli.ops.regimes import PHASE, regimes
from prmg_cli.reports.outputs import html as html_report, table
from prmg_cli.reports.outputs.screen import wrap
from prmg_cli.results import CaseResult, RunInfo, summary_line
from prmg_cli.vocab import GENERATORS, MODE_NAMES

COVER = ROOT / "cases" / "cover.yaml"


def case(**raw):
    """One case read as from a case file (name ``c`` unless given)."""
    return parse_document([{"name": "c", **raw}], "test.yaml", ROOT)[0]


def covered(one_case) -> set[str]:
    """The ``axis: name`` keys of the classes ``one_case`` covers."""
    table_ = regimes(one_case.op)
    return {table_[index].key for index in coverage.classes_of(coverage.facts(one_case))}


# ----- the engine on hand-made cases -----------------------------------------------------------------

def test_a_count_class_is_covered_only_at_its_value():
    at = covered(case(shape=[1, 65537, 1, 2], broadcast="1S1D"))
    assert {"S: 65537", "rows: 65537", "cos rows: 65537", "B: 1", "N: 1", "D: 2", "slice: L = 2"} <= at
    below = covered(case(shape=[1, 65536, 1, 2], broadcast="1S1D"))
    assert "S: 65536" in below and not {"S: 65537", "rows: 65537"} & below
    assert "cos rows: 1" in covered(case(shape=[1, 65537, 1, 2], broadcast="111D"))


def test_cos_varies_along_b_only_with_full_b_and_values_that_differ_there():
    rope = {"rope": {"base": 10000}}
    per_request = {"rope": {"base": 10000, "offset": [0, 5, 9]}}
    base = dict(shape=[3, 2, 2, 8], broadcast="B11D")
    assert "cos/sin vary: along B" not in covered(case(**base, inputs={"cos": rope, "sin": rope}))   # same rows
    assert "cos/sin vary: along B" in covered(case(**base, inputs={"cos": per_request, "sin": per_request}))
    assert "cos/sin vary: along B" in covered(case(**base))                                 # uniform draws
    assert "cos/sin vary: along B" not in covered(case(shape=[3, 2, 2, 8], broadcast="111D"))   # cos B = 1
    constant = {"values": [0.5] * 24}
    differing = {"values": [0.5] * 8 + [0.25] * 16}
    assert "cos/sin vary: along B" not in covered(case(**base, inputs={"cos": constant, "sin": constant}))
    assert "cos/sin vary: along B" not in covered(case(**base, inputs={"cos": differing, "sin": constant}))
    assert "cos/sin vary: along B" in covered(case(**base, inputs={"cos": differing, "sin": differing}))
    assert "cos/sin vary: along B" not in covered(case(**base, inputs={"cos": {"uniform": [1, 1.0001]},
                                                                      "sin": {"uniform": [1, 1.0001]}},
                                                       dtype="bfloat16"))   # one bfloat16 value: all the same
    rope_s = covered(case(shape=[1, 4, 2, 8], broadcast="1S1D", inputs={"cos": rope, "sin": rope}))
    assert "cos/sin vary: along S" in rope_s and "cos/sin vary: along N" not in rope_s


def test_a_second_ub_pass_needs_more_rows_per_core_than_a_pass_holds_and_tables_varying_along_them():
    """A 4-lane float32 slice: a pass holds 992 rows (the emulator's ub_pass_rows), so 64 * 993 rows give each of 64
    cores a second pass; with one cos/sin row for all (111D) nothing differs between passes."""
    second = "rows: a second UB pass"
    assert second in covered(case(shape=[1, 64 * 993, 1, 4], broadcast="1S1D"))
    assert second not in covered(case(shape=[1, 64 * 992 + 63, 1, 4], broadcast="1S1D"))
    assert second not in covered(case(shape=[1, 64 * 993, 1, 4], broadcast="111D"))


def test_special_values_count_where_they_are():
    nan_payload, negative_zero = 0x7E01, 0x8000                       # float16 bit patterns
    dy = [0x3C00] * 16                                                 # 1.0
    dy[5], dy[1] = nan_payload, negative_zero                          # lane 5 inside [4, 12), lane 1 outside
    found = covered(case(shape=[1, 1, 1, 16], partial_slice=[4, 12], dtype="float16", inputs={"dy": {"bits": dy}}))
    assert {"values: NaN payload, dy in slice", "values: NaN, dy in slice", "values: -0, dy outside"} <= found
    assert not {"values: NaN, dy outside", "values: -0, dy in slice", "values: -NaN, dy in slice"} & found
    plain = {key for key in covered(case(shape=[1, 1, 1, 16], partial_slice=[4, 12])) if key.startswith("values:")}
    assert plain == {"values: ordinary, dy in slice", "values: ordinary, dy outside", "values: ordinary, cos/sin"}
    assert "values: ordinary, dy outside" not in covered(case(shape=[1, 1, 1, 16]))        # the full slice
    huge = covered(case(shape=[2, 2, 2, 32], dtype="float16", inputs={"dy": {"uniform": [-65000, 65000]}}))
    assert "values: large, dy in slice" in huge
    tiny = covered(case(shape=[2, 2, 2, 32], inputs={"dy": {"uniform": [-1e-40, 1e-40]}}))
    assert "values: subnormal, dy in slice" in tiny and "values: large, dy in slice" not in tiny


def _run_bits(one_case, tensor: str) -> np.ndarray:
    """The first ``coverage.SAMPLE`` elements of the tensor ``make_inputs`` gives the run, as bits."""
    array = getattr(make_inputs(one_case), tensor).reshape(-1)[:coverage.SAMPLE]
    return array.view(f"u{array.itemsize}").astype(np.uint64)


def test_drawn_values_are_read_from_the_runs_own_inputs_for_each_generator():
    """The value classes of a drawn case are those of the tensors the run draws, through the case's generator:
    the seeds are chosen so that philox and pcg64 put subnormals in different places (the classes a draw of
    the other generator would give are wrong), and a 4096-element prefix of a larger normal draw counts."""
    def values(one_case, bits_of=coverage._sample_bits) -> frozenset:
        return coverage._special_values(one_case, bits_of)

    rare = dict(shape=[1, 1, 1, 16], partial_slice=[4, 12], dtype="float16", inputs={"dy": {"uniform": [-1e-3, 1e-3]}})
    differing = [seed for seed in range(40) if len({values(case(seed=seed, generator=generator, **rare), _run_bits)
                                                    for generator in GENERATORS}) > 1]
    assert differing
    large = dict(shape=[2, 4, 4, 130], partial_slice=[2, 66], broadcast="1S1D", dtype="bfloat16", cos_dtype="float32",
                 inputs={"dy": {"normal": [0, 1e-38]}, "cos": {"normal": [0, 1e-39]}, "sin": {"uniform": [-1, 1]}})
    for generator in GENERATORS:
        for one in (case(seed=differing[0], generator=generator, **rare), case(generator=generator, **large)):
            assert values(one) == values(one, _run_bits), (generator, one.shape)


def test_phase_classes_count_the_first_broken_rule_of_negative_cases_only():
    assert covered(case(shape=[1, 1, 2, 2048], expect={"error": "ACLNN_ERR_INNER_TILING_ERROR"})) == \
        {"phase: D > 1024"}
    quarter = covered(case(shape=[2, 2, 2, 16], partial_slice=[4, 10], rotary_mode="quarter",
                           cos_shape=[1, 1, 1, 6], expect={"error": "ACLNN_ERR_INNER_TILING_ERROR"}))
    assert quarter == {"phase: mode not implemented", "phase: L not a multiple of 4"}  # today / every mode
    assert not any(key.startswith(PHASE) for key in covered(case(shape=[1, 1, 2, 16])))
    assert covered(case(shape=[2, 4, 16], cos_shape=[1, 1, 1, 8], partial_slice=[4, 12], op="forward",
                        expect={"error": 561002})) == {"phase: not 4-D"}


@pytest.mark.parametrize("expect", [{"error": "any"}, {"error": "any", "phase": "workspace"},
                                    {"error": "ACLNN_ERR_INNER_TILING_ERROR", "phase": "any"},
                                    {"error": "ACLNN_ERR_INNER_TILING_ERROR", "phase": "launch"},
                                    {"error": "ACLNN_ERR_PARAM_INVALID"}])
@pytest.mark.verdict
def test_a_phase_class_is_covered_only_by_an_expectation_pinning_its_code_and_phase(expect):
    """Any refusal in either phase meets ``error: any``: D > 1024 refused as end > D, or at the launch, passes it, so
    it covers no rule; nor does another code or phase."""
    assert covered(case(shape=[1, 1, 2, 2048], expect=expect)) == set()
    assert covered(case(shape=[1, 1, 2, 16], partial_slice=[0, 32], cos_shape=[1, 1, 1, 32], expect=expect)) == set()


def test_every_phase_class_the_suite_covers_needs_its_rules_code_and_phase():
    """Each phase class a shipped negative case pinning a refusal covers (every rule's class, test below) is lost when
    its expectation loosens to any code or any phase (or another phase): only the pinned refusal shows that rule was
    checked. (A rule whose input is undefined upstream, a one-value slice list, is covered by ``error: any``.)"""
    from dataclasses import replace
    from prmg_cli.case import Expect

    found = {}
    for one in (c for c in load_cases([ROOT / "cases"]) if not c.expect.success and c.expect.error != "any"):
        for key in covered(one):
            if key.startswith(f"{PHASE}: "):
                found.setdefault((one.op, key), one)
    assert len(found) >= 38
    for (op, key), one in found.items():
        other = "launch" if one.expect.phase == "workspace" else "workspace"
        for loose in (Expect("any", "any"), Expect("any", one.expect.phase), Expect(one.expect.error, "any"),
                      Expect(one.expect.error, other)):
            assert key not in covered(replace(one, expect=loose)), (one.name, key, loose)


@pytest.mark.verdict
def test_known_defect_cases_and_xfailed_results_cover_nothing():
    from prmg_cli.cases.loader import case_to_dict

    marked = case(shape=[1, 1, 2, 16], known_defect={"reason": "r", "result": "wrong", "max_error_ulp": 2})
    assert coverage.evaluate([marked])[0].covered == 0
    plain = case(shape=[1, 1, 2, 16])
    results = [CaseResult("c", status, definition=case_to_dict(plain), source=str(ROOT / "test.yaml"))
               for status in ("xfailed",)]
    assert coverage.run_line(results) is None


def test_classes_prepared_during_a_run_are_those_the_line_counts(monkeypatch):
    """``prepare_classes`` finds each case's classes ahead (a run's idle moments); ``evaluate`` then takes them for
    those very case objects, and finds them itself for any other (an equal copy, a case prepared for no run)."""
    cases = [case(shape=[1, 1, 2, 16]), case(shape=[2, 3, 2, 32], dtype="bfloat16"),
             case(shape=[1, 1, 2, 16], known_defect={"reason": "r", "result": "wrong", "max_error_ulp": 2})]
    expected = coverage.summary(coverage.evaluate(cases))
    assert list(coverage.prepare_classes(cases)) == [None] * 3
    monkeypatch.setattr(coverage, "facts", lambda *args: pytest.fail("facts found again"))
    assert coverage.summary(coverage.evaluate(cases)) == expected
    with pytest.raises(pytest.fail.Exception, match="facts found again"):
        coverage.evaluate([replace(cases[0])])


def test_every_rule_is_a_phase_class_and_the_suites_break_each():
    """Each rule a Violation names is in its operator's table (one home: ``OperatorSpec.rule_reasons``), and the
    shipped suites break every reachable one of them first."""
    from prmg_cli.ops.regimes import UNREACHABLE_RULES

    negatives = [c for c in load_cases([ROOT / "cases"]) if not c.expect.success]
    negatives += [c for _, c in cover_preset.candidates() if not c.expect.success]
    for one in negatives:
        for violation in constraints.violation_details(one, frozenset({1})) + \
                constraints.violation_details(one, frozenset(MODE_NAMES)):
            assert violation.rule in OPERATORS[one.op].rule_reasons, (one.name, violation)
    for op in OPERATORS:
        classes = {r.name for r in regimes(op) if r.axis == PHASE}
        assert classes == set(OPERATORS[op].rule_reasons) - UNREACHABLE_RULES, op


def test_value_bits_and_kinds():
    assert coverage.dtype_bits(np.array([1.0, -0.0]), "bfloat16").tolist() == [0x3F80, 0x8000]
    assert coverage.dtype_bits(np.array([1.0 + 2 ** -8]), "bfloat16").tolist() == [0x3F80]     # ties to even
    assert coverage.dtype_bits(np.array([np.inf, 1e-45]), "float32").tolist() == [0x7F800000, 1]
    assert coverage.value_kinds(np.array([0x7FC0, 0xFFC1, 0x0001, 0x7F7F], np.uint64), "bfloat16") == \
        {"NaN", "-NaN", "NaN payload", "subnormal", "large"}
    assert coverage.value_kinds(np.array([0x3C00], np.uint64), "float16") == {"ordinary"}
    assert coverage.value_kinds(np.array([0x3C00, 0x8000], np.uint64), "float16") == {"ordinary", "-0"}


def test_value_bits_round_once_as_the_runs_inputs():
    """bfloat16 bits of float64 values are those the run's inputs get (``dtypes.rounded``, the compiled pass for a
    large array; proved against exact arithmetic in test_dtypes.py): 1 + 2**-8 + 2**-30 is just past a tie, which a
    rounding through float32 to nearest would make and then break to even, and a NaN with a payload is the quiet
    NaN (no ``NaN payload`` class the run's tensor does not hold)."""
    from prmg_cli.dtypes import bfloat16, rounded

    rng = np.random.default_rng(7)
    near_ties = (1 + 2.0 ** -8 + rng.integers(-2 ** 20, 2 ** 20, 20_000) * 2.0 ** -52) * rng.choice([-1, 1], 20_000)
    payload = np.array([0x7FF0000000000123, 0xFFF4000000000000], np.uint64).view(np.float64)
    values = np.concatenate([near_ties, rng.normal(0, 1e-38, 20_000), rng.uniform(-3.5e38, 3.5e38, 1000), payload,
                             [1 + 2 ** -8 + 2 ** -30, 0.0, -0.0, np.inf, -np.inf, 1e-300, 1e300]])
    expected = rounded(values, bfloat16()).view(np.uint16)
    assert coverage.dtype_bits(values, "bfloat16").tolist() == expected.tolist()
    assert coverage.value_kinds(coverage.dtype_bits(payload, "bfloat16"), "bfloat16") == {"NaN", "-NaN"}
    assert coverage.dtype_bits(np.array([1 + 2 ** -8 + 2 ** -30]), "bfloat16").tolist() == [0x3F81]


def test_summary_line_and_missing_classes():
    result = coverage.evaluate([case(shape=[1, 1, 1, 2])])
    assert [item.op for item in result] == ["grad"]
    line = coverage.summary(result, shown=2, where="where")
    total = len(regimes("grad"))
    missing = total - result[0].covered
    assert line == (f"covers {result[0].covered} of {total} classes ({100 * result[0].covered / total:.1f}%: grad "
                    f"{result[0].covered} of {total}); {missing} missing (where)")   # more than shown: counted
    few = coverage.summary(coverage.evaluate([case(shape=[1, 1, 1, 2])]), shown=missing)
    assert few.endswith("; missing: " + ", ".join(f"grad {regime.key}" for regime in result[0].missing))


def test_greedy_cover_takes_the_largest_gain_then_the_smallest_case():
    covers = [frozenset({1, 2}), frozenset({1, 2, 3}), frozenset({4}), frozenset({4}), frozenset({3})]
    assert cover_preset.greedy_cover(covers, [1, 1, 5, 2, 1]) == [1, 3]


# ----- the command -----------------------------------------------------------------------------------

@pytest.mark.verdict
def test_fail_under_is_met_by_a_share_equal_to_it(tmp_path):
    """--fail-under P exits 1 only when the covered share is below P: a suite covering exactly P% passes it."""
    path = str(ROOT / "cases" / "smoke.yaml")
    share = coverage.percent(coverage.evaluate(load_cases([path])))
    assert 0 < share < 100
    assert coverage_command([path], fail_under=share)[1] == 0
    assert coverage_command([path], fail_under=math.nextafter(share, 100))[1] == 1


def test_coverage_reports_in_process(tmp_path):
    text, code = coverage_command([str(ROOT / "cases" / "smoke.yaml")], fail_under=10, columns=100)
    assert code == 0 and "grad (InplacePartialRotaryMulGrad):" in text and "MISSING" in text
    assert f"\n{text.splitlines()[0]}\n" in (ROOT / "docs" / "coverage.md").read_text()     # its example is this one's
    assert all(len(line) <= 100 for line in text.splitlines())           # the table fits, the missing are counted
    assert re.fullmatch(r"covers \d+ of \d+ classes \(.*\); \d+ missing \(marked MISSING above\)",
                        text.splitlines()[-1]) and "  half      " in text and " MISSING " in text
    assert text.splitlines()[-2] == "reasons cut to the width: --wide shows them whole"
    assert "reasons cut" not in coverage_command([str(ROOT / "cases" / "smoke.yaml")])[0]      # --wide: whole
    text, code = coverage_command([str(ROOT / "cases" / "smoke.yaml")], "json", fail_under=90)
    assert code == 1 and "is under --fail-under 90%" in text
    report = json.loads(text[:text.rindex("}") + 1])
    assert report["total"] == len(regimes("grad")) and report["missing"][0] == "grad mode: half"
    first = report["operators"][0]["classes"][0]
    assert (first["axis"], first["class"], first["example"]) == ("dtypes", "fp32/fp32", "smoke.worked_example")
    assert first["cases"] > 1 and first["reason"].startswith("float32 data and tables")
    page = tmp_path / "coverage.html"
    text, code = coverage_command([str(ROOT / "cases" / "forward.yaml")], "html", str(page), ops=("forward",))
    assert code == 0 and text.startswith(f"wrote {page}: covers ")
    assert "<tr class=missing>" in page.read_text() and "Content-Security-Policy" in page.read_text()
    markdown, _ = coverage_command([str(ROOT / "cases" / "forward.yaml")], "markdown")
    assert "| axis | class | cases | example | reason |" in markdown and "**missing**" in markdown


def test_coverage_of_the_shipped_cases_misses_nothing(tmp_path):
    result = prmg_forked("coverage", "cases/", "--fail-under", "100")
    assert result.returncode == 0, result.stderr
    classes = sum(len(regimes(op)) for op in OPERATORS)
    assert result.stdout.splitlines()[-1] == f"covers {classes} of {classes} classes (100.0%: " + ", ".join(
        f"{op} {len(regimes(op))} of {len(regimes(op))}" for op in OPERATORS) + ")"
    assert f"`{result.stdout.splitlines()[-1]}`" in " ".join((ROOT / "README.md").read_text().split())   # as stated
    bad = tmp_path / "bad.yaml"
    bad.write_text("- name: x\n  shape: [1, 1, 1, 2]\n  dtype: float99\n")
    for args in (("nowhere/",), (str(bad), "--fail-under", "50")):
        result = prmg_forked("coverage", *args)
        assert result.returncode == 2 and "Traceback" not in result.stderr, args
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "field 'dtype'" in result.stderr and "bad.yaml" in result.stderr


@pytest.mark.parametrize("options, message", [(dict(fail_under=101), "--fail-under must be a percentage"),
                                              (dict(report="yaml"), "--report: unknown format 'yaml'"),
                                              (dict(ops=("backward",)), "--op: unknown operator 'backward'")])
def test_coverage_refuses_bad_options(options, message):
    with pytest.raises(PrmgError, match=message):
        coverage_command([str(ROOT / "cases" / "smoke.yaml")], **options)


# ----- the cover preset ------------------------------------------------------------------------------

def test_cover_preset_covers_every_class_with_small_cases():
    cases = load_cases([COVER])
    result = coverage.evaluate(cases)
    assert all(not item.missing for item in result) and {item.op for item in result} == set(OPERATORS)
    sizes = sorted(math.prod(c.shape) for c in cases)
    assert sizes[len(sizes) // 2] <= 1024                        # most are tiny; size only where a class needs it
    assert sum(sizes) < 8_000_000
    today = [c for c in cases if not constraints.skip_reason(c, constraints.DEFAULT_SUPPORTED_MODES)]
    runs_today = coverage.evaluate(today)
    assert {r.axis for item in runs_today for r in item.missing} == {"mode"}     # only the modes it lacks


@pytest.mark.parametrize("fault", ["row_index_u16", "core_tail", "tile_tail", "unaligned_start", "row_pad",
                                   "broadcast_b", "broadcast_s", "broadcast_n", "ub_stale_tables"])
def test_cover_suite_catches_the_layout_faults(fault):
    result = prmg_forked("run", COVER, "--runner", "emulator", "--fail-fast", "--report", "json", "-k",
                         "cover.grad.", env={"PRMG_EMU_FAULT": fault})  # grad faults: the forward's cases cannot fail
    report = json.loads(result.stdout)
    assert result.returncode == 1 and report["summary"]["failed"] >= 1, report["summary"]
    assert [c for c in report["cases"] if c["status"] == "failed"][0]["name"].startswith("cover.")


# ----- the models table and preset -------------------------------------------------------------------

def test_models_table_is_consistent_and_sourced():
    for model in models_preset.MODELS:
        start, end = model.rotary
        assert 0 <= start < end <= model.head_dim and (end - start) % (4 if model.mode == "quarter" else 2) == 0
        assert model.heads % model.kv_heads == 0 and model.mode in MODE_NAMES.values()
        assert any(source.startswith("https://") for source in model.sources), model.name
        positions = models_preset.decode_positions(model)
        assert len(set(positions)) == len(positions) == models_preset.DECODE_BATCH and max(positions) < model.context


def test_models_preset_decode_long_and_shipping():
    every = gencase.load_generated(presets_module.preset("models")["cases"])
    decode = [c for c in every if "decode" in c.tags]
    assert decode and all(c.shape[1] == 1 and c.cos_shape[0] == c.shape[0] > 1 for c in decode)
    assert all("cos/sin vary: along B" in covered(c) for c in decode)
    long = [c for c in every if "long" in c.tags]
    assert long and all(c.shape[1] == models_preset.LONG_TOKENS > 65536 and models_preset.LONG_TAG in c.tags
                        for c in long)
    assert [m.name for m in models_preset.MODELS if m.context >= models_preset.LONG_TOKENS] == \
        [m.name for m in models_preset.MODELS for c in long if c.name.startswith(f"models.{m.name}.")]
    shipped = load_cases([ROOT / "cases" / "models.yaml"])
    assert shipped and not any("long" in c.tags for c in shipped)
    only_long = presets_module.preset("models", tags=("long",))
    assert [c["name"] for c in only_long["cases"]] == [c.name for c in long]
    assert only_long["header"][0] == "Generated by `prmg gen-case --preset models --tag long`."


# ----- the run's coverage in its reports -------------------------------------------------------------

def test_table_and_html_show_the_coverage_of_what_ran(monkeypatch):
    from prmg_cli.cases.loader import case_to_dict

    info = RunInfo(runner="emulator", location="/x")
    ran = [case(shape=[1, 1, 1, 2]), case(name="d", shape=[1, 4, 1, 8], broadcast="1S1D")]
    skipped = case(name="s", shape=[2, 1, 1, 4], rotary_mode="half")
    results = [CaseResult(c.name, status, definition=case_to_dict(c), source=str(ROOT / "test.yaml"))
               for c, status in ((ran[0], "passed"), (ran[1], "failed"), (skipped, "skipped"))]
    line = coverage.run_line(results)
    assert line == "coverage: " + coverage.summary(coverage.evaluate(ran), where="prmg coverage lists them")
    text = table.render(results, info)
    assert text.endswith("\n\n" + "\n".join(wrap(line, 100)) + "\n\n" + summary_line(results))   # wrapped to 100
    page = html_report.render(results, info)
    assert 'id="coverage-line">coverage: covers ' in page
    assert coverage.run_line([CaseResult("x", "passed")]) is None               # a record without its definition
    for known in ([*ran, skipped], ran[1:]):     # a run's own cases are taken as they are, others made again
        sources = [replace(c, source=str(ROOT / "test.yaml")) for c in known]
        assert coverage.run_line(results, sources) == line
        assert table.render(results, info, cases=sources) == text
        assert html_report.render(results, info, cases=sources) == page
    made = []
    real_parse = loader.parse_document
    monkeypatch.setattr(loader, "parse_document", lambda *args: made.append(args[0]) or real_parse(*args))
    coverage.run_line(results, [replace(ran[1], source=str(ROOT / "test.yaml"))])
    assert [document[0]["name"] for document in made] == [ran[0].name]


@pytest.mark.verdict
def test_the_offset_classes_at_their_edges():
    """The off-block class counts an offset in bytes (the kernel's first GM address): float16 8 elements in (16 bytes)
    and float32 1 in are off the 32-byte block; float16 16 in and float32 8 in are on it, as is no offset. A full
    cos at an offset is no broadcast table at an offset; one of B*S*N rows fewer than dy's is."""
    key = "storage: an offset off the 32-byte block"
    for dtype, offset, off in (("float16", 8, True), ("float32", 1, True), ("float16", 16, False),
                               ("float32", 8, False), ("float32", 0, False)):
        assert (key in covered(case(shape=[1, 1, 2, 8], dtype=dtype, dy_offset=offset))) == off, (dtype, offset)
    key = "storage: cos/sin broadcast, at an offset"
    full = covered(case(shape=[1, 2, 2, 8], broadcast="BSND", cos_offset=8))
    assert key not in full and "storage: cos at an offset" in full
    assert key in covered(case(shape=[1, 2, 2, 8], broadcast="1S1D", cos_offset=8))


@pytest.mark.verdict
def test_a_length_one_axis_at_another_stride_is_a_class_of_the_grad():
    """A contiguous view whose stride on an axis of length 1 is not the C-order one (q.transpose(1, 2) at S = 1) is the
    grad's class; the same view at C-order strides, a non-contiguous one (refused) and a cos so viewed for the forward
    (which copies what it finds non-contiguous) are not."""
    key = "storage: a length-1 axis at another stride"
    decode = dict(shape=[2, 1, 2, 8], broadcast="B11D", partial_slice=[2, 6])
    assert key in covered(case(**decode, dy_strides=[16, 8, 8, 1]))
    assert key in covered(case(**decode, cos_strides=[4, 99, 4, 1]))
    assert key not in covered(case(**decode, dy_strides=[16, 16, 8, 1]))
    assert key not in covered(case(**decode, dy_strides=[32, 8, 16, 1])) | covered(case(**decode))
    assert not any(regime.key == key for regime in regimes("forward"))


@pytest.mark.verdict
def test_tables_strided_each_their_own_way_are_a_class_of_the_forward():
    """cos and sin both strided, at other strides where their views move (axes of length > 1), are the forward's
    class (each table's copy in walks its own strides); alike there, or one of them contiguous, they are not."""
    key = "storage: cos/sin not contiguous, unlike"
    base = dict(op="forward", shape=[1, 2, 2, 8], broadcast="1S1D", partial_slice=[2, 6])
    assert key in covered(case(**base, cos_strides=[8, 8, 8, 1], sin_strides=[24, 12, 12, 1]))
    assert key not in covered(case(**base, cos_strides=[8, 8, 8, 1], sin_strides=[16, 8, 4, 1]))
    assert key not in covered(case(**base, cos_strides=[8, 8, 8, 1])) | covered(case(**base, sin_strides=[8, 8, 8, 1]))
    assert not any(regime.key == key for regime in regimes("grad"))


def test_graph_mode_alone_covers_no_storage_class():
    """Graph mode feeds every tensor dense (GE's tensors have no offset or strides): views at offsets and strided
    tables that graph mode alone ran cover no storage class of the run's coverage line (they covered six); run
    through aclnn, or both paths, they do."""
    from prmg_cli.cases.loader import case_to_dict

    views = case(op="forward", shape=[1, 2, 2, 8], broadcast="1S1D", dy_offset=5, cos_offset=2, sin_offset=2,
                 cos_strides=[32, 16, 16, 1])
    assert {key for key in covered(views) if key.startswith("storage: ")} == {
        "storage: dy at an offset", "storage: sin at an offset", "storage: cos/sin not contiguous",
        "storage: cos/sin not contiguous, at an offset",     # cos strided at its offset: not a contiguous view
        "storage: an offset off the 32-byte block", "storage: cos/sin broadcast, at an offset"}  # 20 bytes; 1S1D

    def classes(path: str) -> int:
        result = CaseResult(views.name, "passed", definition=case_to_dict(views), source="t.yaml", path=path)
        return int(re.search(r"covers (\d+) of", coverage.run_line([result])).group(1))

    assert classes("aclnn") == classes("aclnn+geir") == classes("geir") + 6


def test_a_strided_view_at_an_offset_is_a_class_of_its_own():
    """A strided x at a storage offset (vllm-ascend's heads of one rank) is the forward's class of its own, which the
    copies in and back must place, not the contiguous view at an offset that GetData places; the grad, which refuses
    a strided dy, has no such class."""
    heads = case(op="forward", shape=[1, 2, 3, 8], broadcast="111D", partial_slice=[4, 8], dy_strides=[64, 32, 8, 1],
                 dy_offset=8)
    shifted = case(op="forward", shape=[1, 2, 3, 8], broadcast="111D", partial_slice=[4, 8], dy_offset=8)
    storage = lambda one: {key for key in covered(one) if key.startswith("storage: ")}       # noqa: E731
    assert storage(heads) == {"storage: x not contiguous", "storage: x not contiguous, at an offset"}
    assert storage(shifted) == {"storage: dy at an offset"}
    for offset, off_block in ((16, False), (8, True), (48, False)):            # float16: 32, 16 and 96 bytes
        half = case(shape=[1, 2, 3, 8], broadcast="111D", partial_slice=[4, 8], dtype="float16", dy_offset=offset)
        assert ("storage: an offset off the 32-byte block" in covered(half)) == off_block, offset
    # a table's offset in its own dtype's bytes (bf16 x, float32 cos: 8 elements are 32 bytes); tables at an offset
    # that broadcast nothing (BSND) are no broadcast at an offset
    wide = case(op="forward", shape=[1, 2, 3, 8], broadcast="BSND", dtype="bfloat16", cos_dtype="float32",
                cos_offset=8, sin_offset=8)
    assert storage(wide) == {"storage: cos at an offset", "storage: sin at an offset"}
    assert not any("at an offset" in item.name and "contiguous" in item.name for item in regimes("grad"))


def test_a_huge_run_is_pointed_to_the_command(monkeypatch):
    monkeypatch.setattr(coverage, "RUN_LINE_LIMIT", 1)
    from prmg_cli.cases.loader import case_to_dict

    results = [CaseResult(name, "passed", definition=case_to_dict(case(name=name, shape=[1, 1, 1, 2])))
               for name in "ab"]
    assert coverage.run_line(results) == "coverage: not computed for 2 cases (over 1); run prmg coverage PATH..."
