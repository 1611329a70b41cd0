"""The HTML report: opened in headless Chromium after a real emulator run with injected faults, and its
HTML checked for escaping, self-containedness, the matplotlib requirement, the heatmap cap and speed.

The browser is Debian's ``chromium`` (``make test`` installs it where missing), driven by playwright with
``executable_path`` (never ``playwright install``: no browser is downloaded). Its screenshot and the page
are kept as test artifacts in ``reports/`` (``PRMG_TEST_ARTIFACTS`` elsewhere).
"""

from __future__ import annotations

import html.parser
import importlib.util
import json
import os
import re
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, prmg, prmg_forked
from prmg_cli.errors import PrmgError
from prmg_cli.judging import diagnosis
from prmg_cli.reports import outputs
from prmg_cli.reports.outputs import html as html_report
from prmg_cli.results import CaseResult, RunInfo, visible

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# This machine's closed network refuses Chromium's background connections: switch them off.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(os.environ.get("PRMG_TEST_ARTIFACTS") or ROOT / "reports")
EMULATOR = RunInfo(runner="emulator", location="/tmp/emu", faults=("sign",))


def need(condition: bool, why: str) -> None:
    """Skip when ``condition`` fails on a developer's machine; fail in CI, which must run every test."""
    if not condition:
        (pytest.fail if os.environ.get("CI") else pytest.skip)(why)


# --- the report of a real run, in a real browser ----------------------------------------------------

@pytest.fixture(scope="module")
def smoke_report(tmp_path_factory):
    """The shipped smoke suite through the emulator with two faults: wrong signs (heatmaps) and a write
    past the end of dy (guard-zone bytes); its HTML and JSON reports."""
    folder = tmp_path_factory.mktemp("html")
    page, data = folder / "smoke.html", folder / "smoke.json"
    started = time.perf_counter()
    result = prmg_forked("run", "cases/smoke.yaml", "--runner", "emulator", "--report", f"html:{page}",
                         "--report", f"json:{data}", env={"PRMG_EMU_FAULT": "sign,write_past_end"})
    print(f"emulator run with html and json reports: {time.perf_counter() - started:.1f} s")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    return page, json.loads(data.read_text())


def test_report_loads_in_headless_chromium_and_shows_summary_cases_and_heatmaps(smoke_report, tmp_path,
                                                                                 record_property):
    need(importlib.util.find_spec("playwright") is not None, "playwright is missing (pip install -e '.[test]')")
    need(Path(CHROMIUM).exists(), f"no chromium at {CHROMIUM} (make test installs it)")
    from playwright.sync_api import sync_playwright

    page_path, report = smoke_report
    cases, summary = report["cases"], report["summary"]
    failed_with_map = [i for i, case in enumerate(cases) if case["status"] == "failed" and case["error_map"]]
    guard = [i for i, case in enumerate(cases) if "guard zone" in case["message"]]
    assert len(failed_with_map) > 20 and guard          # the faults did what this test needs

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
            viewport={"width": 1280, "height": 900})
        try:
            page = context.new_page()
            console, requests = [], []
            page.on("console", lambda message: console.append(f"{message.type}: {message.text}"))
            page.on("pageerror", lambda error: console.append(f"pageerror: {error}"))
            page.on("request", lambda request: requests.append(request.url))
            page.goto(page_path.as_uri(), wait_until="load")

            errors = [line for line in console if line.startswith(("error", "pageerror"))]
            assert not errors, errors
            assert all(url.startswith(("file:", "data:")) for url in requests), requests
            assert page.title() == f"prmg report: {summary['line']}"

            # the summary: the line and every status count
            assert page.locator("#summary").is_visible()
            assert page.inner_text("#summary-line") == summary["line"]
            for status in ("passed", "failed", "error", "xfailed", "xpassed", "skipped", "not_run"):
                assert page.inner_text(f'[data-filter-status="{status}"] b') == str(summary[status])
            assert page.locator("table.matrix td.cell").count() > 5

            # every case, in order, in the table, each in a matrix cell
            rows = page.locator("table.cases tbody tr")
            assert rows.count() == len(cases)
            names = page.eval_on_selector_all("table.cases tbody tr td.name", "cells => cells.map(c => c.innerText)")
            assert names == [visible(case["name"]) for case in cases]
            cells = page.eval_on_selector_all("table.cases tbody tr", "rows => rows.map(r => r.dataset.cell)")
            for cell in set(cells):
                assert page.locator(f'table.matrix td[data-cell="{cell}"]').count() == 1

            # a decoded heatmap in the card of every failure with an error map, and the bytes of the others
            for index in failed_with_map:
                heatmap = page.locator(f"#case-{index}-card img.heatmap")
                assert heatmap.count() == 1, cases[index]["name"]
            assert page.locator("img.heatmap").count() == len(failed_with_map)
            undecoded = page.eval_on_selector_all("img", "images => images.filter(i => !(i.complete && "
                                                          "i.naturalWidth > 0)).map(i => i.alt)")
            assert not undecoded
            for index in guard:
                assert "guard zone after dy changed" in page.inner_text(f"#case-{index}-card .bytes")
            assert page.locator("#margins").is_visible() and page.locator("#timing").is_visible()

            # the counts and matrix cells filter the table
            page.click('[data-filter-status="failed"]')
            assert page.inner_text("#shown") == f"{summary['failed']} of {len(cases)} cases shown"
            page.click('[data-filter-status="failed"]')
            assert page.inner_text("#shown") == f"{len(cases)} of {len(cases)} cases shown"
            page.click("table.matrix td.cell >> nth=0")
            first_cell = page.get_attribute("table.matrix td.cell >> nth=0", "data-cell")
            assert page.inner_text("#shown") == f"{cells.count(first_cell)} of {len(cases)} cases shown"
            page.click("#clear")

            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            screenshot = ARTIFACTS / "html-report.png"
            page.evaluate("window.scrollTo(0, 0)")
            page.screenshot(path=str(screenshot), full_page=True)
            shutil.copyfile(page_path, ARTIFACTS / "html-report.html")
            assert screenshot.stat().st_size > 10_000
            print(f"screenshot of the HTML report: {screenshot}")
            record_property("screenshot", str(screenshot))
            assert not [line for line in console if line.startswith(("error", "pageerror"))], console
        finally:
            context.close()


# --- the HTML itself ----------------------------------------------------------------------------------

class Tags(html.parser.HTMLParser):
    """Every start tag of a page with its attributes, and the text of its ``<script>`` elements."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def a_map(rows=(2, 3, 2), depth=64, start=8, end=40, seed=0, outside=False) -> dict:
    """A real ``diagnosis.error_map`` of random scores, some over the limit, optionally a change outside."""
    generator = np.random.default_rng(seed)
    score = generator.uniform(0, 0.9, size=rows + (end - start,))
    score[..., 1::2] *= 1e5                                  # odd lanes wrong, like a sign fault
    changed = None
    if outside:
        changed = np.zeros(rows + (depth,), bool)
        changed[0, 0, 0, depth - 1] = True
    result = diagnosis.error_map(score, start, depth, changed)
    result["metric"] = "error/budget"
    return result


def a_failure(name="bad", **extra) -> CaseResult:
    fields = dict(name=name, status="failed", message="384 of 768 elements over budget; errors only on odd lanes",
                  metrics={"max_err_ratio": 3.2e4, "bad": 384}, key_metric="err/budget 3.2e+04",
                  details=["localisation: errors only on odd lanes",
                           "worst at (b, s, n, d)=(1, 0, 1, 9): expected 0.5, got -0.5, error 1, budget 1e-06"],
                  dtype="float32", cos_dtype="float32", sin_dtype="float32", shape=[2, 3, 2, 64],
                  cos_shape=[1, 3, 1, 32], sin_shape=[1, 3, 1, 32], rotary_mode="interleave",
                  partial_slice=[8, 40], standard="default", kernel_ms=0.02, error_map=a_map())
    fields.update(extra)
    return CaseResult(**fields)


def a_pass(name="ok", **extra) -> CaseResult:
    fields = dict(status="passed", message="", details=[], error_map={}, metrics={"max_err_ratio": 0.41, "bad": 0},
                  key_metric="err/budget 0.41")
    return a_failure(name, **{**fields, **extra})


HOSTILE = '<script>alert("name")</script>\x1b[2J\u202eevil\n'


def test_file_text_cannot_break_or_inject_into_the_page():
    results = [
        a_failure(HOSTILE, source='cases/"><svg onload=alert(1)>.yaml', op="<b>op</b>",
                  message='guard zone after dy changed at byte +0 (1 bytes, through +0); <img src=x '
                          'onerror=alert(2)> & "quotes"\x07; see https://evil.example/x.png',
                  details=["</pre><script>alert(3)</script>", "outside the slice at (0, 0, 0, 1): was <1>, now 2",
                           "worst at (b, s, n, d)=(0, 0, 0, 9): expected <i>, got 1, error 2, budget 3"],
                  warnings=['" onmouseover="alert(4)'], standard="<u>std</u>", artifacts="</code>\x00"),
        a_failure("xpassed</td>", status="xpassed", error_map={}, message="<blink>gone</blink>"),
        a_failure("nr", status="not_run", error_map={}, message="not run: <stop>"),
        a_pass("ok\u2028line", dtype="<float>", rotary_mode="<mode>")]
    page = html_report.render(results, RunInfo(runner="emulator", location='<loc">', faults=("<f>",),
                                               host="\x1b]0;title\x07"))
    tags = Tags(page).tags
    assert [tag for tag, _ in tags].count("script") == 1                # the page's own script only
    assert not {tag for tag, _ in tags} & {"svg", "blink", "u", "stop", "float", "mode", "f", "loc"}
    assert not [attrs for _, attrs in tags if any(key.startswith("on") for key in attrs)]
    for raw in ('<script>alert("name")', "<img src=x", "</pre><script>", "<blink>", "\x1b", "\x07", "\x00",
                "\u202e", "\u2028", '" onmouseover', "<b>op</b>", "<u>std</u>", '<loc">'):
        assert raw not in page, raw
    for shown in ("&lt;script&gt;alert(&quot;name&quot;)&lt;/script&gt;\\x1b[2J\\u202eevil\\n",
                  "&lt;img src=x onerror=alert(2)&gt; &amp; &quot;quotes&quot;\\x07",
                  "&lt;/pre&gt;&lt;script&gt;alert(3)&lt;/script&gt;", "ok\\u2028line"):
        assert shown in page, shown
    images = [attrs["src"] for tag, attrs in tags if tag == "img"]
    assert len(images) >= 3 and all(src.startswith("data:image/png;base64,") for src in images)


def test_the_page_is_self_contained():
    page = html_report.render([a_failure(message="see https://evil.example/x.png"), a_pass()], EMULATOR)
    tags = Tags(page).tags
    assert not {tag for tag, _ in tags} & {"link", "iframe", "object", "embed", "base", "video", "audio"}
    for tag, attrs in tags:
        for key in ("src", "href", "action", "srcset", "poster"):
            if key in attrs:
                assert attrs[key].startswith(("data:", "#")), (tag, key, attrs[key])
    assert "script-src 'unsafe-inline'" in page and "default-src 'none'" in page     # the CSP allows nothing else
    assert "http://" not in page
    assert page.count("https://") == 1                                 # the message's text, not a resource
    assert "@import" not in page and "url(" not in page


def test_summary_matrix_and_cards():
    results = [a_failure("a", faults=["sign"]), a_pass("b"),
               a_pass("c", dtype="float16", cos_dtype="float16", sin_dtype="float16"),
               a_failure("g", error_map={}, message="guard zone after dy changed at byte +0 (4 bytes, through +3)",
                         metrics={"max_err_ratio": 0.5, "bad": 0}, key_metric="err/budget 0.5", details=[],
                         cos_shape=[2, 3, 2, 32], sin_shape=[2, 3, 2, 32]),
               a_failure("e", status="error", error_map={}, message="worker crashed: signal 11 (SIGSEGV)",
                         metrics={}, details=[], faults=None),
               a_pass("s", status="skipped", message="rotary mode half is not supported", rotary_mode="half")]
    page = html_report.render(results, EMULATOR)
    assert ("FAULTS INJECTED: sign (PRMG_EMU_FAULT: acted on 1 of 6 cases: a; 1 case ended without reporting them "
            "(a crash or timeout): e): this run tests prmg, not the operator") in page and "not an NPU" in page
    assert page.count('<img class="heatmap"') == 1
    assert page.count('class="bytes"') == 1 and "only the bytes above are wrong" in page
    assert "worker crashed: signal 11 (SIGSEGV)" in page
    assert "Failures (2 failed, 1 error)" in page
    cells = [attrs for tag, attrs in Tags(page).tags if tag == "td" and "data-cell" in attrs]
    # fp32 interleave 1S1D holds a, b, e (its worst: error); fp16's c; fp32 BSND's g; fp32 half's skip
    assert sorted(cell["data-status"] for cell in cells) == ["error", "failed", "passed", "skipped"]
    assert 'title="fp32 · interleave · 1S1D: 1 error, 1 failed, 1 passed"' in page
    assert 'class="gap"' in page                                       # e.g. fp16 with BSND


def test_heatmaps_are_capped_and_the_page_says_so():
    results = [a_failure(f"f{i}", error_map=a_map(seed=i, outside=i == 0)) for i in range(5)]
    page = html_report.render(results, EMULATOR, max_heatmaps=2)
    assert page.count('<img class="heatmap"') == 2
    assert "heatmaps are drawn for the first 2 of the 5 cases with an error map" in page
    assert page.count("heatmap not drawn") == 3
    assert page.count('class="card"') == 5


def test_an_empty_run_renders():
    page = html_report.render([], EMULATOR)
    assert "0 passed, 0 failed" in page and "every case is fine" in page


def test_500_cases_with_400_failures_render_in_a_few_seconds():
    results = [a_failure(f"full.case_{i}", error_map=a_map(rows=(4, 8, 2) if i % 3 else (1, 1, 1), seed=i,
                                                           outside=i % 7 == 0)) for i in range(400)]
    results += [a_pass(f"full.pass_{i}") for i in range(100)]
    html_report.render(results[:1], EMULATOR)                          # matplotlib imported, fonts loaded
    started = time.process_time()                 # CPU, not wall time: a loaded machine never grows it
    page = html_report.render(results, EMULATOR)
    seconds = time.process_time() - started
    print(f"500 cases, 400 failures: {seconds:.2f} s, {len(page) / 1e6:.1f} MB")
    assert page.count('<img class="heatmap"') == html_report.MAX_HEATMAPS == 100
    assert page.count("<tr id=\"case-") == 500
    assert seconds < 20                     # a few seconds of CPU here


def test_closest_to_their_limit_ranks_by_the_error_beyond_the_output_rounding():
    """Correctly rounded bfloat16 results (err/budget near 1, nothing beyond the rounding) come last."""
    rounded = {"max_err_ratio": 0.99996, "bad": 0, "max_err_ulp": 0.4999, "beyond_rounding": 0.0}
    results = [a_pass(f"bf16_{i}", metrics=rounded, key_metric="0.50/0.50 ulp, beyond rounding 0%") for i in range(5)]
    results += [a_pass("fp32", metrics={"max_err_ratio": 0.6, "bad": 0, "max_err_ulp": 41.0, "beyond_rounding": 0.45},
                       key_metric="41/97 ulp, beyond rounding 45%"),
                a_pass("thousandth", metrics={"rel_err_share": 3e-4, "share_limit": 1e-3, "max_rel_err": 0.01},
                       key_metric="wrong 0.0003/0.001, max rel 0.01", standard="double_thousandth")]
    page = html_report.render(results, EMULATOR)
    listed = re.findall(r"<li><code>([^<]*)</code>", page.split('<ol class="closest">')[1].split("</ol>")[0])
    assert listed == ["fp32", "thousandth", "bf16_0", "bf16_1", "bf16_2"]
    assert "<li><code>fp32</code> 41/97 ulp, beyond rounding 45%</li>" in page


# --- what the page computes ---------------------------------------------------------------------------

@pytest.mark.parametrize("metrics, margin", [
    ({"max_err_ratio": 0.99997, "bad": 0}, 0.99997),
    ({"max_err_ratio": None, "bad": 3}, float("inf")),
    ({"rel_err_share": 5e-4, "share_limit": 1e-3, "max_rel_err": 0.02, "cap": 0.1}, 0.5),
    ({"rel_err_share": 5e-4, "share_limit": 1e-3, "max_rel_err": 0.3, "cap": 0.1}, 3.0),
    ({"MERE": 2 ** -11, "MARE": 2 ** -5, "T": 2 ** -10, "small_errors": 0}, 3.2),
    ({"mare_ratio": 5.0, "mere_ratio": 1.0, "rmse_ratio": 3.0, "mare_limit": 10.0, "mere_limit": 2.0,
      "rmse_limit": 2.0}, 1.5),
    ({"max_tol_ratio": 0.25, "bad": 0}, 0.25),
    ({"mismatches": 0, "max_abs_err": 0.0}, None),
    ({"adjoint_ratio": 0.1}, 0.1),
    ({"sample_ratio": 0.3, "sample_rows": 64}, 0.3),            # the page's own formulas had missed it
    ({"mismatches": 0, "roundtrip_ratio": 0.2}, 0.2),           # exact has no margin: the check's is next
    ({"status": 161002}, None),
])
def test_key_margin_of_every_standard(metrics, margin):
    value = html_report.key_margin(metrics)
    assert value == (pytest.approx(margin) if margin not in (None, float("inf")) else margin)


def test_the_margins_plot_and_the_closest_list_read_beyond_rounding_under_default():
    """A correctly rounded bfloat16 result (err/budget 0.9999, nothing beyond the rounding) sits in the
    histogram's first bin and last in the "closest to their limit" list; another standard's cases keep their
    error / limit."""
    class Plots:                                    # the histogram's values, without drawing it
        def margin_histogram(self, margins):
            self.margins = margins
            return "data:,"

        def time_against_bytes(self, points, note):
            return "data:,"

    rounded = CaseResult(name="rounded", status="passed", standard="default", key_metric="0.50/0.50 ulp, beyond 0%",
                         metrics={"max_err_ratio": 0.9999, "max_err_ulp": 0.5, "bound_ulp": 0.5,
                                  "beyond_rounding": 0.0})
    computed = CaseResult(name="computed", status="passed", standard="default", key_metric="3.1/9.0 ulp, 40%",
                          metrics={"max_err_ratio": 0.6, "max_err_ulp": 3.1, "bound_ulp": 9.0, "beyond_rounding": 0.4})
    loose = CaseResult(name="loose", status="passed", standard="allclose", metrics={"max_tol_ratio": 0.25})
    plots = Plots()
    page = html_report._plots([rounded, computed, loose], EMULATOR, plots)
    assert sorted(value for value, _ in plots.margins) == [0.0, 0.25, 0.4]
    assert re.findall(r"<code>(\w+)</code>", page) == ["computed", "loose", "rounded"]


def test_a_new_standard_or_check_brings_its_margin(monkeypatch):
    """The page reads each margin from the registries (``Standard.key_margin``, ``Check.key_margin``): an entry
    added to one has its margin on the page without a line of the page changing."""
    from prmg_cli.judging import checks, standards
    from prmg_cli.judging.standards import Standard, over

    toy = Standard("toy", {"*": {}}, None, "toy_err", str, "toy_err", "a toy", lambda m: over(m, "toy_err", 4.0))
    monkeypatch.setitem(standards.STANDARDS, "toy", toy)
    probe = checks.Check("probe", "a toy check", None, "probe_ratio", str, lambda m: over(m, "probe_ratio"))
    monkeypatch.setitem(checks.CHECKS, "probe", probe)
    assert html_report.key_margin({"toy_err": 2.0}) == 0.5
    assert html_report.key_margin({"probe_ratio": 3.0}) == 3.0
    assert html_report.key_margin({"toy_err": None}) == float("inf")


def test_bytes_moved_of_a_record_is_its_cases():
    """The page's bytes of a result record are what ``labels.bytes_moved`` (bench's GB/s) gives for its case."""
    from prmg_cli.reports.outputs.labels import bytes_moved
    from prmg_cli.cases.loader import load_cases
    from prmg_cli.device.execute import case_result

    cases = [case for case in load_cases([ROOT / "cases" / "smoke.yaml"]) if case.expect.error is None]
    assert cases
    for case in cases:
        assert html_report.bytes_moved(case_result(case, "passed")) == bytes_moved(case), case.name


# --- matplotlib is optional -----------------------------------------------------------------------------

def test_without_matplotlib_the_targets_are_refused(monkeypatch):
    monkeypatch.setattr(html_report, "available", lambda: False)
    with pytest.raises(PrmgError, match=r"pip install 'prmg\[html\]'"):
        outputs.parse_targets(["html:r.html"], None)
    with pytest.raises(PrmgError, match="matplotlib"):
        outputs.parse_targets(["html"], "r.html")
    assert outputs.parse_targets(["json:r.json"], None)[0].format == "json"


def test_without_matplotlib_html_is_a_usage_error_before_the_run(tmp_path):
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text("import sys\nsys.modules['matplotlib'] = None\n")
    page = tmp_path / "r.html"
    result = prmg("run", "cases/smoke.yaml", "--runner", "emulator", "--report", "html", "-o", page,
                  env={"PYTHONPATH": str(hide)})
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout == ""                                        # no header: nothing ran
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'prmg[html]'" in lines[0], result.stderr
    assert not page.exists()


def test_a_cell_at_or_just_under_its_limit_is_drawn_within_it():
    """A correct bfloat16 result's errors take nearly all of their budget (half an ulp): cells of 0.9997 were stored
    as 1.0 and drawn in the first colour over the limit, so a Llama prefill's right half of the slice looked wrong;
    0.9997 stays below 1, and a cell at 1 (within: only error > budget is wrong) is blue, 1.5 yellow."""
    import base64
    import io

    from PIL import Image

    from prmg_cli.reports.outputs.plots import Heatmaps

    colours = {}
    for value in (0.9997, 1.0, 1.5):
        error_map = {**diagnosis.error_map(np.full((1, 4, 2, 8), value), 0, 8), "metric": "error/budget"}
        assert error_map["values"][0][0] == value
        png = base64.b64decode(Heatmaps().draw(error_map).split(",", 1)[1])
        pixels = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
        colours[value] = pixels[pixels.shape[0] // 2, pixels.shape[1] // 2].astype(int)
    assert all(colours[value][2] > colours[value][0] for value in (0.9997, 1.0))        # blue: within
    assert colours[1.5][0] > colours[1.5][2]                                           # yellow: over
