"""Case files: both layouts, anchors, defaults, sweeps, folders, seeds, round trips, and the broken corpus."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np
import pytest
import yaml

from prmg_cli.cases.loader import (NAME_PATTERN, Case, Expect, InputSpec, case_to_dict, load_cases, sanitise_name,
                                   select, validate)
from prmg_cli.errors import PrmgError

DATA = Path(__file__).parent / "data"
LOADER = DATA / "cases" / "loader"
BROKEN = DATA / "broken"
ALL_MODES = frozenset({0, 1, 2, 3})


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def by_name(cases: list[Case]) -> dict[str, Case]:
    return {case.name: case for case in cases}


# ---------------------------------------------------------------------------------------------
# Good files


def test_bare_list_with_anchor_and_merge_key():
    first, second = load_cases([LOADER / "10_list.yaml"])
    assert first.name == "list_fp16"
    assert first.shape == (2, 4, 8, 128)
    assert first.cos_shape == (1, 4, 1, 64) == first.sin_shape    # 1S1D, L = 71 - 7
    assert first.partial_slice == (7, 71)
    assert (first.dtype, first.cos_dtype, first.sin_dtype) == ("float16",) * 3
    assert first.rotary_mode == 1 and first.expect == Expect() and first.tags == ("smoke",)
    # the second case inherits everything through <<: *base and overrides four keys
    assert second.name == "list_bf16_fp32"
    assert second.cos_shape == (1, 4, 1, 64) and second.partial_slice == (7, 71)
    assert (second.dtype, second.cos_dtype, second.sin_dtype) == ("bfloat16", "float32", "float32")
    assert second.rotary_mode == 0
    assert second.source == str(LOADER / "10_list.yaml")


@pytest.mark.parametrize("key, meant", [("theta", "base"), ("rope_theta", "base"), ("positions", "offset")])
def test_a_rope_key_named_as_a_model_config_names_it_says_the_key_meant(tmp_path, key, meant):
    """``rope_theta`` (a model's config) is no spelling of ``base``: the error says which key is meant."""
    path = tmp_path / "c.yaml"
    path.write_text(f"- {{name: a, shape: [1, 2, 1, 4], inputs: {{cos: {{rope: {{{key}: 1}}}}}}}}\n")
    with pytest.raises(PrmgError, match=f"field 'inputs.cos.rope.{key}': unknown key '{key}' \\(did you mean "
                                        f"'{meant}'\\?"):
        load_cases([path])


@pytest.mark.parametrize("entry, field, said", [
    ("mode: half", "mode", "(did you mean 'rotary_mode'?)"),                       # it said 'golden', the closest
    ("slice: [0, 4]", "slice", "(did you mean 'partial_slice'?)"),                 # spelling
    ("rope_theta: 500000", "rope_theta", "(a RoPE table's base is given per table: inputs: {cos: {rope: {base: ...}}, "
     "sin: {rope: {base: ...}}}; a model config's rope_theta is the table's base)"),
    ("broadcast: 1S1D, inputs: {cos: {rope: {offset: [1, 2]}}}", "inputs.cos.rope.offset",
     "got 2; a table of one row per request needs a B axis: broadcast B11D or BS1D"),
    # session 15: 'rope' said 'did you mean op', 'offset' dy_offset, 'base' and 'cos' nothing, 'tol' nothing
    ("rope: {base: 500000}", "rope", "(a RoPE table is an input's: inputs: {cos: {rope: {base: 10000, offset: 0}}, "
     "sin: {rope: ...}})"),
    ("offset: 17", "offset", "the first position, or a list of one per request; an offset in a tensor's storage is "
     "dy_offset, cos_offset or sin_offset)"),
    ("base: 500000", "base", "a model config's rope_theta is the table's base)"),
    ("cos: {rope: {}}", "cos", "(an input's values are given under inputs: inputs: {cos: ...})"),
    ("tol: {rtol: 0.1}", "tol", "(did you mean 'tolerance'?)"),
    ("DType: float16", "DType", "(did you mean 'dtype'?)"),             # session 16: it said 'cos_dtype', which
    ("Cos_Shape: [1, 3, 1, 4]", "Cos_Shape", "(did you mean 'cos_shape'?)"),       # has 'dtype' as a word
    ("head_dim: 128", "head_dim", "(a model config's head_dim is D in shape: [B, S, N, D])"),    # session 17: the key
    ("rotary_dim: 64", "rotary_dim", "rotary_dim is the length of partial_slice: [start, end))")])   # alone
def test_a_newcomers_key_says_the_way_out(tmp_path, entry, field, said):
    """A new user's first case, written as a model's config or another tool names things: the error names the key
    meant (one of whose words was written), where a model's rope_theta goes, and the layout per-request positions
    need."""
    path = tmp_path / "c.yaml"
    path.write_text(f"- {{name: a, shape: [2, 3, 1, 4], {entry}}}\n")
    with pytest.raises(PrmgError) as caught:
        load_cases([path])
    assert f"field '{field}': " in str(caught.value) and str(caught.value).endswith(said), str(caught.value)


def test_a_key_begun_is_suggested_only_when_one_choice_begins_with_it_and_it_has_3_letters():
    """``suggest``'s prefix rule (``tol``: tolerance) guesses nothing: a prefix two keys begin with, or one of fewer
    than 3 letters, suggests no key."""
    from prmg_cli.errors import suggest

    assert [suggest(word, ["dy_offset", "dy_strides", "tolerance"]) for word in ("tol", "dy_", "t")] == \
        [" (did you mean 'tolerance'?)", "", ""]


@pytest.mark.parametrize("written, meant", [("neox", "half"), ("rotate_half", "half"), ("non-interleaved", "half"),
                                             ("GPT-J", "interleave"), ("interleaved", "interleave"), ("hlf", "half")])
def test_an_unknown_rotary_mode_suggests_the_mode_a_conventions_name_means(tmp_path, written, meant):
    """'non-interleaved' is the half mode, yet the closest spelling is 'interleave': a convention's name (NeoX's
    rotate_half, GPT-J's) suggests its mode, in a case file, ``gen-case --mode`` and ``--supported-modes`` alike."""
    from prmg_cli.commands.case_writer import generate
    from prmg_cli.vocab import parse_modes

    path = tmp_path / "c.yaml"
    path.write_text(f"- {{name: a, shape: [1, 2, 1, 4], rotary_mode: {written}}}\n")
    flags = dict(cos_shape=None, broadcast=None, partial_slice=None, dtype=None, cos_dtype=None, seed=None, name=None,
                 inputs=None, expect=None, standard=None, preset=None, output=None, append=False)
    for attempt in (lambda: load_cases([path]), lambda: generate(shape="1,2,1,4", mode=written, **flags),
                    lambda: parse_modes(written)):
        with pytest.raises(PrmgError, match=f"\\(did you mean '{meant}'\\?"):
            attempt()


def test_defaults_merge_under_cases():
    cases = by_name(load_cases([LOADER / "20_defaults.yml"]))
    plain = cases["defaults_plain"]
    assert plain.dtype == "bfloat16" and plain.standard == "allclose"
    assert plain.tolerance == (("atol", 1e-5), ("rtol", 1e-3))
    assert plain.dy_input == InputSpec("normal", (0.0, 2.0))
    assert plain.cos_input == InputSpec("rope", (500000.0, 0))
    assert plain.sin_input == InputSpec()
    assert plain.tags == ("full",)

    overridden = cases["defaults_overridden"]
    assert overridden.dtype == overridden.cos_dtype == "float32"
    assert overridden.tolerance == (("atol", 0.0), ("rtol", 1e-3))     # merged per key
    assert overridden.tags == ("full", "mixed")                         # union, defaults first
    assert overridden.dy_input == InputSpec("normal", (0.0, 2.0))       # inputs merged per tensor
    assert overridden.cos_input == InputSpec("uniform", (-0.5, 0.5))
    assert overridden.sin_input == InputSpec("rope", (10000.0, 4))

    other = cases["defaults_other_standard"]
    assert other.standard == "default" and other.tolerance == ()        # tolerance stays with its standard


def test_expect_error_cases_may_describe_refused_tensors():
    case = by_name(load_cases([LOADER / "20_defaults.yml"]))["negative_int8"]
    assert case.shape == (3, 64) and case.cos_shape == (1, 64)
    assert case.dtype == "int8" and case.cos_dtype == "int8"
    assert case.rotary_mode == 9
    assert case.expect == Expect(161002)


def test_sweep_expands_the_cartesian_product_in_written_order():
    cases = load_cases([LOADER / "sub" / "30_sweep.yaml"])
    swept = [case for case in cases if case.name.startswith("sw_")]
    expected = [(dtype, pattern, piece)
                for dtype in ("float32", "bf16") for pattern in ("111D", "BSND") for piece in ("0-64", "7-71")]
    assert [case.name for case in swept] == [f"sw_{d}_{p}_{s}_2x4x8x128" for d, p, s in expected]
    bf16_bsnd = by_name(swept)["sw_bf16_BSND_7-71_2x4x8x128"]
    assert bf16_bsnd.dtype == "bfloat16" and bf16_bsnd.partial_slice == (7, 71)
    assert bf16_bsnd.cos_shape == (2, 4, 8, 64)
    indexed = [case for case in cases if case.name.startswith("idx_")]
    assert [(case.name, case.seed) for case in indexed] == [("idx_00", 1), ("idx_01", 2), ("idx_02", 3)]


def test_folder_loads_every_yaml_below_it_sorted_by_path(tmp_path):
    names = [case.name for case in load_cases([LOADER])]
    assert names[:2] == ["list_fp16", "list_bf16_fp32"]
    assert names[2:6] == ["defaults_plain", "defaults_overridden", "defaults_other_standard", "negative_int8"]
    assert names[6].startswith("sw_") and names[-1] == "idx_02"
    assert len(names) == 2 + 4 + 8 + 3
    # a file named twice (directly and through its folder) is read once
    assert len(load_cases([LOADER / "10_list.yaml", LOADER])) == len(names)
    write(tmp_path, "notes.txt", "not a case file")
    with pytest.raises(PrmgError, match="no \\*.yaml or \\*.yml files"):
        load_cases([tmp_path])


def test_default_keys(tmp_path):
    path = write(tmp_path, "d.yaml", """
- {name: whole, shape: [2, 3, 4, 32]}
- {name: part, shape: [2, 3, 4, 32], partial_slice: [4, 20]}
- {name: empty, shape: [2, 3, 4, 32], partial_slice: [5, 5]}
- {name: own_cos, shape: [2, 3, 4, 32], cos_shape: [2, 1, 1, 32], sin_shape: [1, 1, 1, 32],
   expect: {error: 561002}}
""")
    cases = by_name(load_cases([path]))
    whole = cases["whole"]
    assert whole.partial_slice == (0, 32) and whole.cos_shape == whole.sin_shape == (1, 1, 1, 32)
    assert (whole.dtype, whole.cos_dtype, whole.sin_dtype, whole.rotary_mode) == ("float32",) * 3 + (1,)
    assert whole.standard is None and whole.tolerance == () and whole.tags == ()
    assert whole.format == "ND" and whole.null == () and whole.dy_strides is None
    assert all(whole.input_spec(t) == InputSpec("uniform", (-1.0, 1.0)) for t in ("dy", "cos", "sin"))
    assert cases["part"].cos_shape == (1, 1, 1, 16)
    assert cases["empty"].cos_shape == (1, 1, 1, 1)       # a zero-length axis would be refused
    assert cases["own_cos"].cos_shape == (2, 1, 1, 32) and cases["own_cos"].sin_shape == (1, 1, 1, 32)


@pytest.mark.parametrize("pattern, cos_shape", [
    ("BSND", (2, 3, 5, 32)), ("111D", (1, 1, 1, 32)), ("1S1D", (1, 3, 1, 32)), ("1SND", (1, 3, 5, 32)),
    ("B1ND", (2, 1, 5, 32)), ("BS1D", (2, 3, 1, 32)), ("11ND", (1, 1, 5, 32)), ("B11D", (2, 1, 1, 32)),
])
def test_broadcast_patterns_derive_the_cos_shape(tmp_path, pattern, cos_shape):
    path = write(tmp_path, "b.yaml",
                 f"- {{name: b, shape: [2, 3, 5, 64], partial_slice: [8, 40], broadcast: {pattern}}}")
    (case,) = load_cases([path])
    assert case.cos_shape == case.sin_shape == cos_shape


def test_rotary_modes_dtypes_and_expect_spellings(tmp_path):
    path = write(tmp_path, "m.yaml", """
- {name: m0, shape: [1, 1, 1, 8], rotary_mode: half}
- {name: m3, shape: [1, 1, 1, 8], rotary_mode: interleave-half, dtype: half}
- {name: m2, shape: [1, 1, 1, 8], rotary_mode: 2, dtype: bf16, cos_dtype: fp32}
- {name: e1, shape: [1, 1, 1, 8], expect: {error: 561002}}
- {name: e2, shape: [1, 1, 1, 8], expect: {error: ACLNN_ERR_PARAM_NULLPTR}, null: [cos]}
- {name: e3, shape: [1, 1, 1, 8], expect: {error: any}, format: NC1HWC0, dy_strides: [8, 8, 8, 2]}
""")
    cases = by_name(load_cases([path]))
    assert [cases[n].rotary_mode for n in ("m0", "m3", "m2")] == [0, 3, 2]
    assert cases["m3"].dtype == "float16"
    assert (cases["m2"].dtype, cases["m2"].cos_dtype, cases["m2"].sin_dtype) == ("bfloat16", "float32", "float32")
    assert [cases[n].expect for n in ("e1", "e2", "e3")] == [Expect(561002), Expect(161001), Expect("any")]
    assert cases["e2"].null == ("cos",)                  # `null:` is read as the key "null"
    assert cases["e3"].format == "NC1HWC0" and cases["e3"].dy_strides == (8, 8, 8, 2)


def test_inputs_values_files_and_exponent_floats(tmp_path):
    np.save(tmp_path / "table.npy", np.linspace(0, 1, 4, dtype=np.float32).reshape(2, 2))
    path = write(tmp_path, "i.yaml", """
- name: inputs
  shape: [1, 1, 2, 4]
  partial_slice: [0, 4]
  inputs:
    dy: {values: [[1, 2, 3, 4], [5, 6, .nan, -.inf]]}
    cos: {values: [1e-3, -2E+2, 0.5, 7]}
    sin: {file: table.npy}
""")
    (case,) = load_cases([path])
    assert case.dy_input.kind == "values"
    assert case.dy_input.args[:6] == (1.0, 2.0, 3.0, 4.0, 5.0, 6.0)
    assert np.isnan(case.dy_input.args[6]) and case.dy_input.args[7] == -np.inf
    assert case.cos_input == InputSpec("values", (1e-3, -200.0, 0.5, 7.0))
    assert case.sin_input == InputSpec("file", (str((tmp_path / "table.npy").resolve()), str(tmp_path.resolve())))


@pytest.mark.parametrize("array, fragment", [
    (np.zeros(5, np.float32), "holds 5 elements"),
    (np.array([None, 1, 2, 3], dtype=object), "pickles are refused"),
])
def test_bad_npy_files_are_refused(tmp_path, array, fragment):
    np.save(tmp_path / "bad.npy", array, allow_pickle=True)
    path = write(tmp_path, "n.yaml", "- {name: n, shape: [1, 1, 1, 4], inputs: {cos: {file: bad.npy}}}")
    with pytest.raises(PrmgError, match=fragment) as caught:
        load_cases([path])
    assert caught.value.field == "inputs.cos.file"


def test_default_seeds_are_stable_and_follow_the_name(tmp_path):
    text = "- {name: alpha, shape: [1, 1, 1, 8]}\n- {name: beta, shape: [1, 1, 1, 8]}\n"
    first = by_name(load_cases([write(tmp_path, "a.yaml", text)]))
    (tmp_path / "elsewhere").mkdir()
    again = by_name(load_cases([write(tmp_path / "elsewhere", "b.yml", "# moved\n" + text)]))
    assert first["alpha"].seed == again["alpha"].seed and first["beta"].seed == again["beta"].seed
    assert first["alpha"].seed != first["beta"].seed
    assert isinstance(first["alpha"].seed, int) and first["alpha"].seed >= 0
    explicit = load_cases([write(tmp_path, "c.yaml", "- {name: alpha, shape: [1, 1, 1, 8], seed: 123}")])
    assert explicit[0].seed == 123


@pytest.mark.parametrize("document,field,fragment", [
    ([{"name": "a", "shape": [1, 1, 1, 8], "standard": "double_thousand"}], "standard",
     "unknown standard 'double_thousand' (valid: default, double_thousandth, single_bm, double_benchmark, "
     "allclose, exact, mixed) (did you mean 'double_thousandth'?)"),
    ([{"name": "a", "shape": [1, 1, 1, 8], "standard": "allclose", "tolerance": {"rtl": 1e-3}}], "tolerance.rtl",
     "standard 'allclose' has no parameter 'rtl' (valid: rtol, atol) (did you mean 'rtol'?)"),
    ([{"name": "a", "shape": [1, 1, 1, 8], "tolerance": {"budget_scal": 2}}], "tolerance.budget_scal",
     "standard 'default' has no parameter 'budget_scal' (valid: budget_scale) (did you mean 'budget_scale'?)"),
    ([{"name": "a", "shape": [1, 1, 1, 8], "standard": "allclose", "tolerance": {"rtol": float("inf")}}],
     "tolerance.rtol", "rtol must be a finite number >= 0, got inf"),
    ({"defaults": {"standard": "allclose", "tolerance": {"rtol": -1}}, "cases": [{"name": "a", "shape": [1, 1, 1, 8]}]},
     "defaults.tolerance.rtol", "rtol must be a finite number >= 0, got -1"),
    ([{"name": "a", "shape": [1, 1, 1, 8], "standard": ["allclose"]}], "standard",
     "unknown standard ['allclose'] (valid: default, double_thousandth, single_bm, double_benchmark, allclose, "
     "exact, mixed)"),
    ([{"name": "a", "shape": [1, 1, 1, 8], "standard": "double_benchmark", "tolerance": {"level": 3}}],
     "tolerance.level", "level must be one of 0, 1, 2, got 3"),
    # a share of elements over 1: a case no kernel passes (mixed), or that none fails on its relative error
    ([{"name": "a", "shape": [1, 1, 1, 8], "standard": "mixed", "tolerance": {"required_matched_ratio": 2}}],
     "tolerance.required_matched_ratio", "required_matched_ratio must be at most 1 (a share of the slice's "
     "elements), got 2"),
    ([{"name": "a", "shape": [1, 1, 1, 8], "standard": "double_thousandth", "tolerance": {"share": 1.5}}],
     "tolerance.share", "share must be at most 1 (a share of the slice's elements), got 1.5"),
])
def test_standard_and_tolerance_are_checked_as_the_judge_checks_them(tmp_path, document, field, fragment):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    with pytest.raises(PrmgError) as caught:
        load_cases([path])
    assert caught.value.field == field
    assert str(caught.value).endswith(f"field '{field}': {fragment}")


@pytest.mark.verdict
def test_a_share_of_every_element_is_a_tolerance_and_one_past_it_is_refused():
    """``Standard.fractions`` at its edge: a share of 1 (every element within, a strict but valid case) is read, the
    next float above it refused (a case no kernel passes, or none fails)."""
    from prmg_cli.judging.standards import check_standard

    for standard, key in (("mixed", "required_matched_ratio"), ("double_thousandth", "share")):
        check_standard(standard, {key: 1})
        with pytest.raises(PrmgError, match=f"{key} must be at most 1"):
            check_standard(standard, {key: np.nextafter(1.0, 2.0)})


def test_sanitise_name_replaces_each_character_a_name_cannot_hold():
    assert sanitise_name("my case/1") == "my_case_1"
    assert sanitise_name("a  b:c", "-") == "a--b-c"
    assert sanitise_name("ok_1.2-x") == "ok_1.2-x"
    assert sanitise_name("naïve") == "na_ve"
    assert NAME_PATTERN.fullmatch(sanitise_name("any {thing} at all!"))


def test_duplicate_names_across_files_name_both_files(tmp_path):
    one = write(tmp_path, "one.yaml", "- {name: same, shape: [1, 1, 1, 8]}")
    two = write(tmp_path, "two.yaml", "- {name: same, shape: [1, 1, 1, 16]}")
    with pytest.raises(PrmgError) as caught:
        load_cases([one, two])
    message = str(caught.value)
    assert str(one) in message and str(two) in message and caught.value.field == "name"


def test_case_to_dict_round_trips_minimal_keys(tmp_path):
    cases = load_cases([LOADER])
    path = tmp_path / "back.yaml"
    path.write_text(yaml.safe_dump([case_to_dict(case) for case in cases], sort_keys=False))
    again = load_cases([path])
    assert again == [dataclasses.replace(case, source=str(path)) for case in cases]
    plain = case_to_dict(by_name(cases)["sw_float32_111D_0-64_2x4x8x128"])
    assert plain == {"name": "sw_float32_111D_0-64_2x4x8x128", "shape": [2, 4, 8, 128], "partial_slice": [0, 64]}
    assert case_to_dict(by_name(cases)["list_fp16"])["broadcast"] == "1S1D"


def test_select_by_keyword_and_any_of_tags():
    cases = load_cases([LOADER])
    assert [c.name for c in select(cases, "list_", [])] == ["list_fp16", "list_bf16_fp32"]
    assert {c.name for c in select(cases, None, ["smoke", "mixed"])} == \
        {"list_fp16", "list_bf16_fp32", "defaults_overridden"}
    assert [c.name for c in select(cases, "overridden", ["smoke"])] == []
    assert select(cases, None, []) == cases


def test_validate_skips_unsupported_modes_but_not_other_violations(tmp_path):
    fine = load_cases([write(tmp_path, "ok.yaml", "- {name: q, shape: [1, 1, 1, 64], rotary_mode: quarter}")])
    validate(fine, frozenset({1}))                         # skipped at run time, not an error
    validate(fine, ALL_MODES)
    bad = load_cases([write(tmp_path, "bad.yaml",
                            "- {name: q, shape: [1, 1, 1, 64], rotary_mode: quarter, partial_slice: [0, 6]}")])
    with pytest.raises(PrmgError, match="L = 6 is not a multiple of 4") as caught:
        validate(bad, frozenset({1}))
    assert caught.value.field == "partial_slice" and caught.value.case == "q"
    negative = load_cases([write(tmp_path, "neg.yaml",
                                 "- {name: n, shape: [1, 1, 1, 2048], expect: {error: 561002}}")])
    validate(negative, frozenset({1}))                     # expect-error cases may break anything


def test_plain_case_files_are_composed_by_libyaml_and_read_as_the_counting_loader_reads_them():
    """Loading ~800 cases spent half its time in the pure-Python counting composer: a plain document (no alias,
    within the limits, no key twice) is now composed by libyaml, its values the same; any other goes to the counting
    loader, which words the refusal (the broken corpus:
    ``test_broken_file_gets_one_line_naming_file_case_and_field``)."""
    from prmg_cli.cases import yamlfile

    pytest.importorskip("yaml.cyaml")
    shipped = sorted((Path(__file__).parent.parent / "cases").rglob("*.yaml"))
    for path in [*shipped, *sorted((DATA / "cases").rglob("*.yaml"))]:
        text = yamlfile.decode(path.read_bytes(), str(path))
        read = yamlfile._plain_document(text) if path in shipped else yamlfile.parse_yaml(text, str(path))
        assert read == yamlfile.parse_yaml(text, str(path), "libyaml"), path      # shipped: by libyaml's composer
    deep = "[" * (yamlfile.MAX_DEPTH + 1) + "]" * (yamlfile.MAX_DEPTH + 1)       # the counting loader refuses it
    for text in ("- &a {x: 1}\n- *a\n", "- {x: 1, x: 2}\n", "- {<<: {x: 1}, y: 2}\n", deep, "- !!int abc\n",
                 "- [1, 2\n"):
        assert yamlfile._plain_document(text) is yamlfile._NOT_PLAIN, text
    deepest = "[" * yamlfile.MAX_DEPTH + "]" * yamlfile.MAX_DEPTH
    assert yamlfile._plain_document(deepest) == yamlfile.parse_yaml(deepest, "f", "libyaml")


def test_a_large_case_file_is_composed_only_by_the_counting_loader(monkeypatch):
    """libyaml's composer builds every node before ``_within_limits`` looks: a 14 MB list of 7 million values took
    ``prmg validate`` 37 s and 2.2 GB before its refusal (10 s and 0.37 GB by the counting loader alone). A document
    over ``MAX_PLAIN_BYTES`` goes straight to the counting loader, which refuses the list as it grows."""
    from prmg_cli.cases import yamlfile

    pytest.importorskip("yaml.cyaml")
    composed = []
    monkeypatch.setattr(yamlfile, "_plain_document", lambda text: composed.append(len(text)) or yamlfile._NOT_PLAIN)
    small = "- {name: a, values: [" + ", ".join(["1"] * 10) + "]}\n"
    yamlfile.parse_yaml(small, "small.yaml")
    assert composed == [len(small)]
    values = (yamlfile.MAX_PLAIN_BYTES // 3) + 1
    large = "- {name: a, values: [" + ", ".join(["1"] * values) + "]}\n"
    assert yamlfile.parse_yaml(large, "large.yaml")[0]["values"] == [1] * values
    assert composed == [len(small)]                        # the large one never reached libyaml's composer


def test_prmg_validate_reads_each_case_file_once(tmp_path, monkeypatch):
    """``prmg validate`` read every file twice (``check_files``, then ``load_cases``): now its check keeps the cases it
    read (``checked_cases``), the same as ``load_cases`` reads."""
    from prmg_cli.cases import loader, yamlfile
    from prmg_cli.commands.suite import validate_paths

    read, real = [], yamlfile.read_yaml
    monkeypatch.setattr(yamlfile, "read_yaml", lambda path, *rest: read.append(path) or real(path, *rest))
    for name in ("a.yaml", "b.yaml"):
        write(tmp_path, name, f"- {{name: {name[0]}, shape: [1, 1, 1, 8]}}\n")
    assert "2 cases in 2 files are valid" in validate_paths([str(tmp_path)], None)
    assert sorted(path.name for path in read) == ["a.yaml", "b.yaml"]
    cases, mistakes = loader.checked_cases([tmp_path], frozenset({1}))
    assert mistakes == [] and cases == load_cases([tmp_path])


def test_unreadable_and_missing_files(tmp_path):
    with pytest.raises(PrmgError, match="no such file or folder"):
        load_cases([tmp_path / "absent.yaml"])
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(PrmgError, match="not UTF-8"):
        load_cases([binary])


# ---------------------------------------------------------------------------------------------
# The broken corpus: one file per kind of mistake, each with the field its message must name.

CORPUS = {
    # file: (field named, case named, fragment of the message)
    "malformed_yaml.yaml": (None, None, "line 5, column 8: the list '[' opened at line 4, column 10 is not closed"),
    "python_tag.yaml": (None, None, "unsupported YAML tag '!!python/object/apply:os.system'"),
    "alias_bomb.yaml": (None, None, "aliases are followed (an alias bomb?)"),
    "recursive_alias.yaml": (None, None,
                             "line 3, column 17: the alias '*me' is inside the node it names (a recursive alias)"),
    "empty_file.yaml": (None, None, "empty"),
    "duplicate_key.yaml": (None, None, "line 4, column 3: the key 'dtype' is written twice in one mapping"),
    "unhashable_key.yaml": (None, None, "line 3, column 5: a key cannot be a list or a mapping"),
    "scalar_file.yaml": (None, None, "expected a list of cases"),
    "scalar_case.yaml": (None, "#2", "a case must be a mapping"),
    "scalar_inputs.yaml": ("inputs.dy", "scalar_inputs", "expected one of {uniform"),
    "missing_shape.yaml": ("shape", "no_shape", "missing required key 'shape'"),
    "missing_name.yaml": ("name", "#2", "missing required key 'name'"),
    "unknown_key.yaml": ("rotary_mod", "typo", "did you mean 'rotary_mode'?"),
    "bool_dim.yaml": ("shape", "bool_dim", "must be an integer, got a boolean"),
    "negative_dim.yaml": ("shape", "negative_dim", "negative (-16)"),
    "shape_mapping.yaml": ("shape", "shape_mapping", "got a mapping"),
    "three_d_shape.yaml": ("shape", "three_d", "expected 4 dimensions"),
    "unknown_dtype.yaml": ("dtype", "fp8", "valid: float32, float16, bfloat16"),
    "negative_only_dtype.yaml": ("cos_dtype", "int8_pass", "only in expect: {error: ...} cases"),
    "unknown_mode.yaml": ("rotary_mode", "spiral", "valid: half, interleave, quarter, interleave-half"),
    "mode_out_of_range.yaml": ("rotary_mode", "mode7", "unknown rotary_mode 7"),
    "values_length.yaml": ("inputs.dy.values", "short_values", "7 values for a tensor of 8 elements"),
    "values_not_numbers.yaml": ("inputs.cos.values", "text_values", "expected numbers"),
    "missing_npy.yaml": ("inputs.cos.file", "missing_npy", "no such file"),
    "rope_on_dy.yaml": ("inputs.dy.rope", "rope_dy", "cos and sin only"),
    "bad_uniform.yaml": ("inputs.sin.uniform", "reversed_range", "greater than hi"),
    "bad_rope_base.yaml": ("inputs.cos.rope.base", "rope_base", "number > 0"),
    "duplicate_names.yaml": ("name", "twin", "duplicate case name 'twin'"),
    "bad_name.yaml": ("name", "has a space", "not a valid name"),
    "bad_tolerance_key.yaml": ("tolerance.rel", "wrong_param", "standard 'allclose' has no parameter 'rel'"),
    "negative_tolerance.yaml": ("tolerance.rtol", "negative_tolerance", "number >= 0"),
    "bad_standard.yaml": ("standard", "strictish", "unknown standard 'strict'"),
    "bad_expect.yaml": ("expect", "expect_fail", "expected 'pass' or {error: CODE, phase: PHASE}"),
    "bad_expect_code.yaml": ("expect.error", "expect_name", "did you mean 'ACLNN_ERR_INNER_TILING_ERROR'?"),
    "bad_tags.yaml": ("tags", "tag_string", "expected a list of words"),
    "bad_seed.yaml": ("seed", "bool_seed", "got a boolean"),
    "bad_generator.yaml": ("generator", "typo_generator",
                           "(did you mean 'philox'?) (valid: philox4x32, philox, pcg64)"),
    "bad_slice.yaml": ("partial_slice", "one_number_slice", "holds one value: upstream's tiling reads"),
    "broadcast_and_cos_shape.yaml": ("broadcast", "both", "not both"),
    "bad_broadcast.yaml": ("broadcast", "bad_pattern", "unknown broadcast pattern '1S1N'"),
    "bad_null.yaml": ("null", "null_dx", "unknown argument 'dx'"),
    "bad_strides.yaml": ("dy_strides", "strides_rank", "expected 4 strides"),
    "defaults_unknown_key.yaml": ("defaults.dtyp", None, "did you mean 'dtype'?"),
    "defaults_bad_value.yaml": ("defaults.dtype", "a", "unknown dtype 'float99'"),
    "defaults_scalar.yaml": ("defaults", None, "expected a mapping"),
    "unknown_file_key.yaml": ("default", None, "did you mean 'defaults'?"),
    "sweep_duplicate_names.yaml": ("name", "bwd_{dtype}", "the name template 'bwd_{dtype}'"),
    "sweep_unknown_key.yaml": ("sweep.dtpye", "s_{index}", "did you mean 'dtype'?"),
    "sweep_too_big.yaml": ("sweep", "big_{index}", "the sweep makes 100000000 cases"),
    "sweep_not_list.yaml": ("sweep.dtype", "s_{dtype}", "non-empty list"),
    "template_unknown_field.yaml": ("name", "s_{dtpye}", "unknown field '{dtpye}'"),
    "d_too_large.yaml": ("shape", "wide", "D = 2048 exceeds 1024"),
    "odd_slice.yaml": ("partial_slice", "odd", "L = 5 is odd"),
    # characters a case file may not hold, named with line and column
    "nul_character.yaml": (None, None, "line 2, column 33: the character U+0000 (NUL) is not allowed"),
    "vertical_tab.yaml": (None, None, "line 2, column 17: the character U+000B (VT) is not allowed"),
    "del_character.yaml": (None, None, "line 1, column 12: the character U+007F (DEL) is not allowed"),
    "noncharacter.yaml": (None, None, "line 3, column 13: the character U+FFFE (a noncharacter)"),
    "bidi_override.yaml": (None, None, "the character U+202E (RIGHT-TO-LEFT OVERRIDE)"),
    # values their YAML tag cannot read
    "bad_int_tag.yaml": (None, None, "line 3, column 9: !!int 'abc' is not an integer"),
    "bad_float_tag.yaml": (None, None, "line 3, column 27: !!float '' is not a number"),
    "bad_bool_tag.yaml": (None, None, "line 3, column 11: !!bool 'maybe' is not true or false"),
    "bad_date.yaml": (None, None, "'2024-02-30' reads as a date or time but is not a valid one"),
    # lists and mappings where a word is expected
    "unhashable_format.yaml": ("format", "list_format", "unknown format [1]"),
    "unhashable_tags_with_defaults.yaml": ("tags", "nested_tags", "[1] is not a word"),
    "unhashable_broadcast.yaml": ("broadcast", "map_broadcast", "unknown broadcast pattern {'a': 1}"),
    "unhashable_null.yaml": ("null", "nested_null", "unknown argument ['x']"),
    "list_mode.yaml": ("rotary_mode", "list_mode", "expected a mode name or number, got a list [1]"),
    "huge_tolerance.yaml": ("tolerance.atol", "huge_tolerance", "got an integer of 1600 bits"),
    # name templates that would run code paths or allocate before the name is checked
    "template_nested_field.yaml": ("name", "x{index:{dtype}}", "nested fields are not supported"),
    "template_attribute.yaml": ("name", "x_{dtype.__class__}", "no attribute or index access"),
    "template_index.yaml": ("name", "x_{shape[0]}", "no attribute or index access"),
    "template_conversion.yaml": ("name", "x_{dtype!r}", "conversions are not supported"),
    "template_huge_width.yaml": ("name", "x_{index:0400000000d}", "widths and precisions are at most 200"),
    "dot_name.yaml": ("name", ".", "'.' is not a valid name"),
    "dotdot_name.yaml": ("name", "..", "'..' is not a valid name"),
    "run_cap.yaml": ("sweep", "many_{index}", "the sweep makes 200000 cases; with the 1 before it the run would "
                     "hold more than 200000"),
    # file: inputs stay inside the case file's folder and are files
    "file_outside_folder.yaml": ("inputs.dy.file", "escapes", "/etc/passwd is outside the case file's folder"),
    "file_absolute.yaml": ("inputs.dy.file", "absolute", "/etc/passwd is outside the case file's folder"),
    "file_directory.yaml": ("inputs.dy.file", "directory", "is a directory, not a file"),
    # YAML syntax in plain words
    "mapping_value_here.yaml": (None, None, "line 3, column 17: a mapping value is not allowed here (did you "
                                "forget a space after ':' or quotes?)"),
    "second_document.yaml": (None, None, "line 3, column 1: a second YAML document ('---')"),
}


def test_the_corpus_and_its_table_agree():
    assert sorted(CORPUS) == sorted(path.name for path in BROKEN.glob("*.yaml"))
    assert len(CORPUS) >= 20


@pytest.mark.parametrize("file_name", sorted(CORPUS))
def test_broken_file_gets_one_line_naming_file_case_and_field(file_name):
    field, case, fragment = CORPUS[file_name]
    with pytest.raises(PrmgError) as caught:
        validate(load_cases([BROKEN / file_name]), frozenset({1}))
    error = caught.value
    assert (error.field, error.case) == (field, case)
    assert error.file == str(BROKEN / file_name)
    message = str(error)
    assert fragment in message and "\n" not in message
    assert message.startswith(f"{BROKEN / file_name}: ")
    if field:
        assert f"field '{field}'" in message


def test_python_tags_are_never_executed(tmp_path):
    marker = tmp_path / "pwned"
    path = write(tmp_path, "evil.yaml", f"""
- name: evil
  shape: !!python/object/apply:os.system ["touch {marker}"]
- name: evil2
  shape: !!python/object/new:builtins.list [[1, 1, 1, 8]]
""")
    with pytest.raises(PrmgError, match="unsupported YAML tag"):
        load_cases([path])
    assert not marker.exists()
    assert not os.path.exists("/tmp/prmg_broken_corpus_pwned")


@pytest.mark.parametrize("text", ['{"schema": "prmg.run/1", "run_id": "r"}\n{"schema": "prmg.result/3", "name": "a"}\n',
                                  '{"schema": "prmg.result/3", "name": "a", "status": "passed"}\n'],
                         ids=["two-lines", "one-line"])
def test_a_results_file_given_as_cases_says_what_it_is_and_which_commands_read_it(tmp_path, text):
    """``prmg report --cases r.jsonl`` (or run, validate, coverage of it): the second line of a results file was a YAML
    syntax error ('this line does not fit the document'), and a file of one line a mapping of unknown keys; either
    way nothing said it is a results file nor where it goes."""
    path = tmp_path / "r.jsonl"
    path.write_text(text)
    with pytest.raises(PrmgError) as caught:
        load_cases([path])
    schema = text.split('"')[3]
    assert str(caught.value) == (f"{path}: holds {schema} records, not cases: a results file (prmg "
                                 "run --results) is read by prmg report, prmg compare and run --resume")
