"""import-ttk: the upstream TTK list becomes 14 valid cases; bad rows are reported by row number."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from prmg_cli.cases import gencase, ttk
from prmg_cli.cases.loader import load_cases, validate
from prmg_cli.errors import PrmgError
from conftest import prmg_here

ROOT = Path(__file__).resolve().parent.parent
UPSTREAM = ROOT / "tests" / "data" / "ttk_kernel_inplace_partial_rotary_mul_grad.csv"   # upstream copy
SHIPPED = ROOT / "cases" / "ttk_upstream.yaml"
COLUMNS = ("testcase_name,network_name,op_name,input_shapes,input_dtypes,input_formats,output_shapes,"
           "output_dtypes,output_formats,input_ori_shapes,input_ori_formats,output_ori_shapes,output_ori_formats,"
           "attributes,input_data_ranges,precision_tolerances,absolute_precision,output_inplace_indexes,"
           "output_shape_unknown_indexes,is_enabled,remark,soc_series,priority,dump_file_prefix,"
           "manual_input_binaries,manual_golden_binaries").split(",")


def row(**fields) -> dict:
    """A valid TTK row of this operator (fp32, slice [8, 24) of D = 32), with ``fields`` replaced."""
    base = {"testcase_name": "ok", "op_name": "inplace_partial_rotary_mul_grad",
            "input_shapes": "((2, 3, 4, 32), (1, 3, 1, 16), (1, 3, 1, 16))",
            "input_dtypes": "('float32', 'float32', 'float32')", "input_formats": "('ND',)",
            "attributes": "{'rotary_mode': 1, 'partial_slice': [8, 24]}",
            "input_data_ranges": "((-2, 2), (-1, 1), (-0.5, 0.5))", "precision_tolerances": "((0.001, 0.001),)",
            "absolute_precision": "1e-8", "is_enabled": "True", "remark": ""}
    base.update(fields)
    return base


def write_csv(tmp_path: Path, rows: list[dict], columns=COLUMNS, name: str = "list.csv") -> Path:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, restval="")
    writer.writeheader()
    writer.writerows(rows)
    path = tmp_path / name
    path.write_text(buffer.getvalue(), encoding="utf-8")
    return path


def load(tmp_path: Path, doc: dict):
    path = tmp_path / "imported.yaml"
    path.write_text(gencase.dump_yaml(doc), encoding="utf-8")
    return load_cases([path])


def test_upstream_list_gives_fourteen_valid_cases(tmp_path):
    doc, notes = ttk.import_ttk(UPSTREAM)
    assert notes == []
    cases = load(tmp_path, doc)
    validate(cases, frozenset({1}))
    assert len(cases) == 14
    by_name = {case.name: case for case in cases}
    mixed = by_name["edge_bf16_mixed_cosfp32"]
    assert (mixed.dtype, mixed.cos_dtype, mixed.sin_dtype) == ("bfloat16", "float32", "float32")
    odd = by_name["edge_odd_len46_fp16"]
    assert odd.shape == (2, 3, 4, 96) and odd.cos_shape == (1, 1, 1, 46) and odd.partial_slice == (25, 71)
    assert all(case.rotary_mode == 1 and case.tags == ("ttk",) for case in cases)
    assert all(case.standard == "double_thousandth" for case in cases)
    assert dict(by_name["edge_bf16_full"].tolerance) == {"rel": 0.01, "share": 0.01, "atol": 1e-8, "cap": 0.0}
    assert dict(by_name["iprmg_fp32_01"].tolerance) == {"rel": 0.001, "share": 0.001, "atol": 1e-8, "cap": 0.0}
    assert all(tuple(case.dy_input.args) == (-1, 1) for case in cases)
    assert "# TTK row 3: mid slice + passthrough\n- name: edge_midslice_fp32\n" in gencase.dump_yaml(doc)


def test_shipped_import_equals_a_fresh_one():
    doc, _ = ttk.import_ttk(UPSTREAM)
    assert SHIPPED.read_text(encoding="utf-8") == gencase.dump_yaml(doc), \
        "cases/ttk_upstream.yaml drifted; regenerate with prmg import-ttk"


def test_shipped_import_has_fourteen_cases():
    cases = load_cases([SHIPPED])
    assert len(cases) == 14 and all("ttk" in case.tags for case in cases)


def test_a_row_maps_every_field(tmp_path):
    doc, notes = ttk.import_ttk(write_csv(tmp_path, [row(testcase_name="my case/1", remark="a note",
                                                         input_dtypes="('bfloat16', 'float16', 'float16')")]))
    assert notes == ["row 1 (my case/1): named 'my_case_1'"]
    case, = load(tmp_path, doc)
    assert case.name == "my_case_1"
    assert case.shape == (2, 3, 4, 32) and case.cos_shape == case.sin_shape == (1, 3, 1, 16)
    assert case.partial_slice == (8, 24) and case.rotary_mode == 1
    assert (case.dtype, case.cos_dtype, case.sin_dtype) == ("bfloat16", "float16", "float16")
    assert [tuple(spec.args) for spec in (case.dy_input, case.cos_input, case.sin_input)] == \
        [(-2, 2), (-1, 1), (-0.5, 0.5)]
    assert "# TTK row 1: a note\n" in gencase.dump_yaml(doc)


def test_bad_rows_are_reported_by_number_and_good_ones_kept(tmp_path):
    marker = tmp_path / "executed"
    rows = [
        row(testcase_name="good1"),
        row(testcase_name="off", is_enabled="False"),
        row(testcase_name="other", op_name="rotary_mul"),
        row(testcase_name="junk", input_shapes="((2, 3, 4, 32), (1, 3, 1, 16)"),
        row(testcase_name="two", input_shapes="((2, 3, 4, 32), (1, 3, 1, 16))"),
        row(testcase_name="nz", input_formats="('FRACTAL_NZ',)"),
        row(testcase_name="big", input_shapes="((1, 1, 1, 2048), (1, 1, 1, 16), (1, 1, 1, 16))"),
        row(testcase_name="evil", attributes=f"__import__('os').system('touch {marker}')"),
        row(testcase_name="noattr", attributes="{'rotary_mode': 1}"),
        row(testcase_name="int", input_dtypes="('int32', 'float32', 'float32')"),
        row(testcase_name="good1"),
        row(testcase_name="tol", precision_tolerances="((0.001, 0.001), (0.1, 0.1))"),
        row(testcase_name="good2", precision_tolerances="", absolute_precision=""),
    ]
    doc, notes = ttk.import_ttk(write_csv(tmp_path, rows))
    assert not marker.exists()
    cases = load(tmp_path, doc)
    assert [case.name for case in cases] == ["good1", "good1_row11", "good2"]
    assert cases[2].standard is None and cases[2].tolerance == ()
    expected = {
        2: "is_enabled False — skipped",
        3: "op_name rotary_mul is not one of inplace_partial_rotary_mul_grad",
        4: "cannot parse input_shapes",
        5: "expected 3 entries",
        6: "is not ND",
        7: "D = 2048 exceeds 1024",
        8: "cannot parse attributes",
        9: "partial_slice",
        10: "int32",
        11: "named 'good1_row11'",
        12: "precision_tolerances",
    }
    assert len(notes) == len(expected)
    for note, (number, fragment) in zip(notes, sorted(expected.items())):
        assert note.startswith(f"row {number} (") and fragment in note, note
    assert all(f"left out: {note}" in gencase.dump_yaml(doc) for note in notes)


def test_a_threshold_a_row_leaves_out_is_ttk_closes_default(tmp_path):
    """A row giving some thresholds is TTK's --compare close, which takes what the row leaves out from its own
    defaults (is_close: rel = share = 0.001 for a 16-bit output, 0.0001 otherwise, atol 1e-8), not prmg's
    double_thousandth defaults (atol 0, bfloat16 share 0.004); an atol per output, (1e-6,), is its one value."""
    rows = [row(testcase_name="no_atol", absolute_precision=""),
            row(testcase_name="bf16_atol_only", precision_tolerances="", absolute_precision="(1e-6,)",
                input_dtypes="('bfloat16', 'bfloat16', 'bfloat16')")]
    doc, notes = ttk.import_ttk(write_csv(tmp_path, rows))
    assert notes == []
    assert [case["tolerance"] for case in doc["cases"]] == [
        {"rel": 0.001, "share": 0.001, "atol": 1e-8, "cap": 0},
        {"rel": 0.001, "share": 0.001, "atol": 1e-6, "cap": 0}]
    fp32 = ttk.import_ttk(write_csv(tmp_path, [row(precision_tolerances="")]))[0]["cases"][0]["tolerance"]
    assert fp32 == {"rel": 0.0001, "share": 0.0001, "atol": 1e-8, "cap": 0}


@pytest.mark.parametrize("tolerances", ["0.001", "{'rel': 0.001, 'share': 0.001}", "()", "((0.001,),)"])
def test_precision_tolerances_that_are_not_pairs_are_reported(tmp_path, tolerances):
    doc, notes = ttk.import_ttk(write_csv(tmp_path, [row(testcase_name="tol", precision_tolerances=tolerances),
                                                     row(testcase_name="good")]))
    assert [case["name"] for case in doc["cases"]] == ["good"]
    assert len(notes) == 1
    assert notes[0].startswith("row 1 (tol): cannot parse precision_tolerances") and notes[0].endswith(" — skipped")


def test_a_row_with_missing_fields_is_reported(tmp_path):
    path = write_csv(tmp_path, [row()])
    path.write_text(path.read_text() + "short,,inplace_partial_rotary_mul_grad\n")
    doc, notes = ttk.import_ttk(path)
    assert len(doc["cases"]) == 1
    assert notes == ["row 2 (short): its number of fields differs from the header's — skipped"]


def test_a_file_that_is_not_a_ttk_list_is_an_error(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(PrmgError, match="missing column"):
        ttk.import_ttk(path)
    with pytest.raises(PrmgError, match="cannot read"):
        ttk.import_ttk(tmp_path / "absent.csv")


E2E = ROOT / "tests" / "data" / "ttk_e2e_inplace_partial_rotary_mul_backward.csv"            # upstream copy
SHIPPED_E2E = ROOT / "cases" / "ttk_upstream_e2e.yaml"


def test_upstreams_e2e_list_imports_whole_and_ships(tmp_path):
    """The torch-path list (api_name, tensor_view_shapes, a mode by name, no partial_slice on its last row, B = 0
    and S = 0 rows): 15 valid cases tagged e2e, judged by prmg's default standard; the shipped file is a fresh
    import."""
    doc, notes = ttk.import_ttk(E2E)
    assert notes == [] and SHIPPED_E2E.read_text(encoding="utf-8") == gencase.dump_yaml(doc)
    cases = {case.name: case for case in load(tmp_path, doc)}
    validate(list(cases.values()), frozenset({1}))
    assert len(cases) == 15 and all(c.tags == ("ttk", "e2e") and c.rotary_mode == 1 and c.standard is None
                                    for c in cases.values())
    assert cases["e2e_iprmb_noop_default_slice"].partial_slice == (0, 0)
    assert cases["e2e_iprmb_noop_B0"].shape == (0, 2, 4, 128) and cases["e2e_iprmb_noop_S0"].shape == (2, 0, 4, 64)
    assert cases["e2e_iprmb_fp16_cos_fp32"].cos_dtype == "float32"


def test_an_e2e_row_it_cannot_map_is_named(tmp_path):
    header = "testcase_name,api_name,tensor_view_shapes,tensor_dtypes,attributes,inplace_input_indexes\n"
    shapes, dtypes = '"((1, 2, 2, 8), (1, 1, 1, 8), (1, 1, 1, 8))"', "\"('float32', 'float32', 'float32')\""
    rows = [f"ok,x.ops.inplace_partial_rotary_mul_backward,{shapes},{dtypes},\"{{'rotary_mode': 'interleave'}}\","
            "\"(0,)\"",
            f"fwd,x.ops.inplace_partial_rotary_mul,{shapes},{dtypes},\"{{'rotary_mode': 'interleave'}}\",",
            f"other,x.ops.rope,{shapes},{dtypes},\"{{'rotary_mode': 1}}\",",
            f"index,x.ops.inplace_partial_rotary_mul_backward,{shapes},{dtypes},\"{{'rotary_mode': 1}}\",\"(1,)\"",
            f"mode,x.ops.inplace_partial_rotary_mul_backward,{shapes},{dtypes},\"{{'rotary_mode': 'spiral'}}\","]
    path = tmp_path / "e2e.csv"
    path.write_text(header + "\n".join(rows) + "\n", encoding="utf-8")
    doc, notes = ttk.import_ttk(path)
    assert [case["name"] for case in doc["cases"]] == ["ok", "fwd"] and doc["cases"][1]["op"] == "forward"
    assert notes[0].startswith("row 3 (other): api_name x.ops.rope is not one of inplace_partial_rotary_mul_backward")
    assert notes[1] == ("row 4 (index): inplace_input_indexes (1,) is not (0,): the in-place tensor is the first "
                        "— skipped")
    assert notes[2].startswith("row 5 (mode): field 'rotary_mode': unknown rotary mode 'spiral'")


def test_an_e2e_row_its_torch_api_refuses_is_left_out_naming_the_check(tmp_path):
    """An e2e row calls upstream's torch API, which refuses before any aclnn call what the operator alone would take:
    a mode that is no name (schema str rotary_mode), a mode other than 'interleave' (its TORCH_CHECK), a slice list
    of other than two values (int[2]); each is left out naming the check, not imported as a case that passes."""
    header = "testcase_name,api_name,tensor_view_shapes,tensor_dtypes,attributes\n"
    shapes, dtypes = '"((1, 2, 2, 8), (1, 1, 1, 8), (1, 1, 1, 8))"', "\"('float32', 'float32', 'float32')\""
    attributes = {"ok": "{'rotary_mode': 'interleave', 'partial_slice': [0, 8]}", "number": "{'rotary_mode': 1}",
                  "half": "{'rotary_mode': 'half'}",
                  "three": "{'rotary_mode': 'interleave', 'partial_slice': [0, 8, 9]}",
                  "one": "{'rotary_mode': 'interleave', 'partial_slice': [4]}"}
    rows = [f'{name},x.ops.inplace_partial_rotary_mul_backward,{shapes},{dtypes},"{text}"'
            for name, text in attributes.items()]
    path = tmp_path / "e2e.csv"
    path.write_text(header + "\n".join(rows) + "\n", encoding="utf-8")
    doc, notes = ttk.import_ttk(path)
    assert [case["name"] for case in doc["cases"]] == ["ok"]
    assert notes == ["row 2 (number): rotary_mode 1 is not a name: the torch API's schema takes str rotary_mode "
                     "— skipped",
                     "row 3 (half): rotary_mode 'half': the torch API accepts 'interleave' only — skipped",
                     "row 4 (three): partial_slice [0, 8, 9]: the torch API takes exactly two integers (int[2]) "
                     "— skipped",
                     "row 5 (one): partial_slice [4]: the torch API takes exactly two integers (int[2]) — skipped"]


E2E_COLUMNS = ("testcase_name,api_name,tensor_view_shapes,tensor_dtypes,attributes,input_data_ranges,"
               "precision_tolerances,absolute_precision,tensor_view_offsets,tensor_view_strides,tensor_storage_shapes,"
               "soc_series,batch_seed").split(",")


def e2e_row(**fields) -> dict:
    """A valid e2e row of the backward's torch API (fp32, dy [2, 2, 2, 8], slice [0, 8]), with ``fields`` replaced."""
    base = {"testcase_name": "ok", "api_name": "cann_ops_transformer.ops.inplace_partial_rotary_mul_backward",
            "tensor_view_shapes": "((2, 2, 2, 8), (1, 1, 1, 8), (1, 1, 1, 8))", "tensor_dtypes": "('float32',)",
            "attributes": "{'rotary_mode': 'interleave', 'partial_slice': [0, 8]}"}
    base.update(fields)
    return base


def import_e2e(tmp_path: Path, rows: list[dict]):
    """The cases (by name) and notes of an e2e list of ``rows``."""
    doc, notes = ttk.import_ttk(write_csv(tmp_path, rows, E2E_COLUMNS, "e2e.csv"))
    return {case["name"]: case for case in doc["cases"]}, notes


def test_an_e2e_row_keeps_ttks_common_fields_and_defaults(tmp_path):
    """TTK's common fields hold in an e2e list too: input_data_ranges (one entry for every input; a bound of None
    and a row without any TTK's default [-2, 2]), precision_tolerances and absolute_precision (close's); a one-entry
    tensor_dtypes is every tensor's. A range with values that must appear among the draws is left out naming it."""
    cases, notes = import_e2e(tmp_path, [
        e2e_row(testcase_name="ranged", input_data_ranges="((-1, 1), (None, 0.5), (0, 1))",
                precision_tolerances="((0.002, 0.003),)", absolute_precision="1e-6"),
        e2e_row(testcase_name="one", input_data_ranges="((-3, 3),)"),
        e2e_row(testcase_name="bare"),
        e2e_row(testcase_name="must", input_data_ranges="((-1, 1, 0),)")])
    assert cases["ranged"]["inputs"] == {"dy": {"uniform": [-1, 1]}, "cos": {"uniform": [-2, 0.5]},
                                         "sin": {"uniform": [0, 1]}}
    assert cases["ranged"]["standard"] == "double_thousandth"
    assert cases["ranged"]["tolerance"] == {"rel": 0.002, "share": 0.003, "atol": 1e-6, "cap": 0}
    assert all(cases["one"]["inputs"][tensor] == {"uniform": [-3, 3]} for tensor in ("dy", "cos", "sin"))
    assert all(cases["bare"]["inputs"][tensor] == {"uniform": [-2, 2]} for tensor in ("dy", "cos", "sin"))
    assert "standard" not in cases["bare"] and cases["bare"]["cos_dtype"] == "float32"
    assert notes == ["row 4 (must): input_data_ranges ((-1, 1, 0),) names values that must appear among the draws "
                     "(a range's third value on), which prmg's seeded inputs do not place — skipped"]


def test_an_e2e_rows_views_become_offsets_and_strides_as_its_torch_api_takes_them(tmp_path):
    """tensor_view_offsets become each tensor's storage offset; tensor_view_strides its strides, which the forward's
    torch API takes (AutoContiguous) and the backward's refuses unless contiguous (its is_contiguous checks);
    tensor_storage_shapes must hold what the view reaches. Nothing of a view is dropped."""
    forward = "cann_ops_transformer.ops.inplace_partial_rotary_mul"
    cases, notes = import_e2e(tmp_path, [
        e2e_row(testcase_name="offsets", tensor_view_offsets="(64, 8, 8)",
                tensor_storage_shapes="((128, 8), (2, 8), (16,))"),
        e2e_row(testcase_name="plain", tensor_view_strides="((32, 16, 8, 1), None, ())"),
        e2e_row(testcase_name="fwd_strided", api_name=forward,
                tensor_view_shapes="((2, 2, 2, 8), (1, 2, 1, 8), (1, 2, 1, 8))",
                tensor_view_strides="((), (32, 16, 16, 1), (32, 16, 16, 1))"),
        e2e_row(testcase_name="grad_strided", tensor_view_strides="((256, 64, 8, 1), (), ())"),
        e2e_row(testcase_name="small", tensor_view_offsets="(8, 0, 0)", tensor_storage_shapes="((64,), (), ())"),
        e2e_row(testcase_name="negative", tensor_view_offsets="(-1, 0, 0)")])
    assert (cases["offsets"]["dy_offset"], cases["offsets"]["cos_offset"], cases["offsets"]["sin_offset"]) == (64, 8, 8)
    assert not any(key.endswith(("_offset", "_strides")) for key in cases["plain"])
    assert cases["fwd_strided"]["cos_strides"] == cases["fwd_strided"]["sin_strides"] == [32, 16, 16, 1]
    assert "dy_strides" not in cases["fwd_strided"]
    assert [note.split(":")[0] for note in notes] == ["row 4 (grad_strided)", "row 5 (small)", "row 6 (negative)"]
    assert "the torch API refuses" in notes[0] and "holds fewer elements than its view reaches (72)" in notes[1]
    assert "is not an offset >= 0" in notes[2]
    path = tmp_path / "views.yaml"
    path.write_text(gencase.dump_yaml({"cases": [cases["offsets"], cases["fwd_strided"]]}), encoding="utf-8")
    ran = prmg_here("run", str(path), "--runner", "emulator")          # the views reach the operator, and pass
    assert ran.returncode == 0 and ran.stdout.rstrip().endswith("2 passed, 0 failed"), ran.stdout + ran.stderr


@pytest.mark.parametrize("series, imported", [
    ("", True), ("ascend950", True), ("('Ascend950PR',)", True), ("('-Ascend310P',)", True),
    ("('ascend910b', 'ascend950')", True), ("('Ascend910B',)", False), ("('-ascend950',)", False),
    ("('ascend950', '-Ascend950DT')", False)])
def test_soc_series_is_ttks_filter_with_exclusions(tmp_path, series, imported):
    """soc_series is TTK's SoC filter: names run the row on those chips, a leading '-' excludes one; the row is
    imported when it runs on the 950 (a name starting 'ascend950', case aside), which case files are written for."""
    cases, notes = import_e2e(tmp_path, [e2e_row(soc_series=series), e2e_row(testcase_name="other")])
    assert ("ok" in cases) == imported and (notes == []) == imported


def test_a_batch_consistency_row_is_left_out_naming_it(tmp_path):
    cases, notes = import_e2e(tmp_path, [e2e_row(batch_seed="(100,)"), e2e_row(testcase_name="other")])
    assert list(cases) == ["other"] and "batch-consistency comparison" in notes[0]


def test_lists_with_crlf_line_ends_import_the_same():
    """Upstream keeps its e2e list with CRLF line ends (ops-transformer 2b888cdb: 16 characters more than the
    copy's 16 lines): either list imported from CRLF text gives the same cases."""
    import tempfile

    for source in (UPSTREAM, E2E):
        with tempfile.TemporaryDirectory() as folder:
            crlf = Path(folder) / source.name
            crlf.write_bytes(source.read_bytes().replace(b"\n", b"\r\n"))
            assert ttk.import_ttk(crlf)[0]["cases"] == ttk.import_ttk(source)[0]["cases"]


def test_a_row_asking_what_no_mapped_column_gives_is_left_out_naming_the_column(tmp_path):
    """Columns prmg maps no key from are read too: a row holding there only what the case does anyway imports; one
    asking for more (input or golden binaries, another output, another chip) is left out naming the column, where it
    was imported without it (its inputs or golden silently replaced by prmg's own)."""
    same = dict(output_shapes="((2, 3, 4, 32),)", output_dtypes="('float32',)", output_formats="('ND',)",
                input_ori_shapes="((2, 3, 4, 32), (1, 3, 1, 16), (1, 3, 1, 16))", output_inplace_indexes="(0,)",
                output_shape_unknown_indexes="()", manual_input_binaries="()", soc_series="('ascend910b', 'ascend950')")
    asking = {"output_shapes": "((2, 3, 4, 16),)", "output_dtypes": "('float16',)", "input_ori_formats": "('NZ',)",
              "output_inplace_indexes": "(1,)", "output_shape_unknown_indexes": "(0,)",
              "manual_input_binaries": "('dy.bin', 'cos.bin', 'sin.bin')", "manual_golden_binaries": "('dx.bin',)",
              "soc_series": "ascend910b"}
    rows = [row(testcase_name="same", **same)] + [row(testcase_name=column, **{column: value})
                                                  for column, value in asking.items()]
    doc, notes = ttk.import_ttk(write_csv(tmp_path, rows))
    assert [case["name"] for case in doc["cases"]] == ["same"] and len(notes) == len(asking)
    for number, (note, column) in enumerate(zip(notes, asking), start=2):
        assert note.startswith(f"row {number} ({column}): {column} ") and note.endswith("— skipped"), note
    assert "inputs read from binary files" in notes[5] and "does not name ascend950" in notes[7]
    e2e = tmp_path / "e2e.csv"
    e2e.write_text("testcase_name,api_name,tensor_view_shapes,tensor_dtypes,attributes,golden_api\n"
                   "g,x.ops.inplace_partial_rotary_mul_backward,\"((1, 2, 2, 8), (1, 1, 1, 8), (1, 1, 1, 8))\","
                   "\"('float32', 'float32', 'float32')\",\"{'rotary_mode': 1}\",my.golden\n"
                   "ok,x.ops.inplace_partial_rotary_mul_backward,\"((1, 2, 2, 8), (1, 1, 1, 8), (1, 1, 1, 8))\","
                   "\"('float32', 'float32', 'float32')\",\"{'rotary_mode': 'interleave'}\",\n", encoding="utf-8")
    doc, notes = ttk.import_ttk(e2e)
    assert [case["name"] for case in doc["cases"]] == ["ok"]
    assert notes == ["row 1 (g): golden_api 'my.golden' asks for a golden API of its own, which prmg's own golden "
                     "would replace — skipped"]
