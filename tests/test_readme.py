"""Every command the ``sh`` blocks of the README and of its pages under ``docs/`` and the ``--help`` examples show
runs green on a correct kernel; the README's numbers that come from the code and the shipped suites are theirs.

The commands run in scratch copies of the repository (``cases/``, ``tests/data/``), so an example that
writes files writes them there. ``make`` lines (the README's two set-up commands) are not run here:
they are what CI itself runs. ``--runner aclnn`` becomes ``--runner emulator`` (no NPU here).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import PYTEST, ROOT, prmg_forked

BIN = Path(sys.executable).parent


def _shell_blocks(text: str) -> list[str]:
    """The lines of every ``sh`` code block (indented ones too), continuation lines joined."""
    lines, inside = [], False
    for raw in text.splitlines():
        stripped = raw.strip()
        if stripped.startswith("```"):
            inside = stripped == "```sh" if not inside else False
            continue
        if inside:
            lines.append(stripped)
    return _joined(lines)


def _joined(lines: list[str]) -> list[str]:
    """``lines`` (stripped) with each one ending in a backslash joined to the next, as the shell reads them."""
    joined, pending = [], ""
    for line in lines:
        pending += line[:-1].rstrip() + " " if line.endswith("\\") else line
        if not line.endswith("\\"):
            joined.append(pending)
            pending = ""
    return joined


def documentation() -> str:
    """The README and the pages of ``docs/`` it links to, in that order."""
    return "\n".join(page.read_text() for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))])


def _help_examples() -> list[str]:
    """The ``prmg ...`` example commands of every command's ``--help`` (continuation lines joined)."""
    from prmg_cli.commands import COMMANDS, load

    commands = []
    for name in COMMANDS:
        module = load(name)
        text = (module.main.__doc__ or "") + module.EPILOG
        commands += [line for line in _joined([line.strip() for line in text.splitlines()]) if line.startswith("prmg ")]
    return commands


def readme_commands() -> list[str]:
    """The commands to run: README shell lines and help examples, without comments and ``make`` lines."""
    found = []
    for line in _shell_blocks(documentation()) + _help_examples():
        line = re.sub(r"\s+#\s.*$", "", line).strip()
        if line and not line.startswith(("make ", "pytest ")) and line not in found:
            found.append(line)
    return found


# Slow commands that read no file an earlier one writes: their own test items, so xdist runs them beside the rest.
BENCH = "prmg bench --host"
ALONE = (BENCH, "PRMG_EMU_DEVICES=2 prmg run cases/smoke.yaml --cluster local")
# BENCH runs through prmg's entry point with each measurement of its four benchmarks taken once (the `repeat` each
# run_*_bench takes first, 9, 7, 3 and 3 by default, gives medians of more runs of the same code), on an eighth of
# dy's sequence (4, 128, 32, 128: 2M elements, 8 golden blocks, still split over both host threads) and 30 small
# cases, not 300, in the whole-process runs: the same code, every table and target line printed, in 4 s of CPU,
# not 21 s (a minute before the single runs); its exit code, stderr and last table are checked
BENCH_ONCE = ("import sys\nfrom prmg_cli.commands import bench_host as b\nfrom prmg_cli.cli import main\n"
              "b.SHAPE = b.PIPELINE_SHAPE = (4, 128, 32, 128)\n"
              "b.TABLE_SHAPE = b.PIPELINE_TABLE_SHAPE = (1, 128, 1, 96)\n"
              "b.SMALL_RUNS = (30, 3)\nwhole = b.run_whole_process_bench.__defaults__\n"
              "b.run_whole_process_bench.__defaults__ = (whole[0], b.SMALL_RUNS, *whole[2:])\n"
              "for bench in (b.run_host_bench, b.run_pipeline_bench, b.run_judge_paths_bench,\n"
              "              b.run_whole_process_bench):\n"
              "    bench.__defaults__ = (1, *bench.__defaults__[1:])\nsys.argv[0] = 'prmg'\nsys.exit(main())\n")


def command_groups() -> dict[str, list[str]]:
    """The commands, split into items that can run side by side: each ``ALONE`` command, then the rest
    in README order (later examples read files earlier ones write)."""
    commands = readme_commands()
    groups = {command: [command] for command in commands if command in ALONE}
    groups["in order"] = [command for command in commands if command not in ALONE]
    return groups


def readme_files() -> dict[str, str]:
    """The README's ``yaml`` blocks that name their file on their first line (``# my_llama.yaml: ...``), by name:
    its commands read them."""
    files = {}
    for block in (ROOT / "README.md").read_text().split("```yaml\n")[1:]:
        text = block.split("```", 1)[0]
        named = re.match(r"# ([\w.-]+\.yaml)\b", text)
        if named:
            files[named.group(1)] = text
    return files


def plain_prmg(command: str) -> tuple[dict[str, str], list[str]] | None:
    """(variables, arguments) of a line that is ``[NAME=value ...] prmg ARGS`` and nothing else of the shell's (no
    redirection, pipe, list, expansion or glob: quotes only), which ``prmg_forked`` runs as the shell would, a process
    of its own, without starting an interpreter and importing prmg again (0.25 s of CPU a line, 35 lines of the walk in
    order); None for a line the shell runs (those with a redirection, ``&&``, ``$``, still start ``prmg``, the
    console script on ``PATH``)."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    words = list(lexer)
    if any(set(word) <= set("();<>|&") for word in words) or any(mark in command for mark in "$`*?~\\"):
        return None
    names = {}
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", words[0]):
        name, _, value = words.pop(0).partition("=")
        names[name] = value
    return (names, words[1:]) if words[:1] == ["prmg"] else None


@pytest.fixture
def scratch(tmp_path) -> Path:
    shutil.copytree(ROOT / "cases", tmp_path / "cases")
    shutil.copytree(ROOT / "tests" / "data", tmp_path / "tests" / "data")
    for name, text in readme_files().items():
        (tmp_path / name).write_text(text)
    return tmp_path


def test_there_are_examples_to_run():
    commands = readme_commands()
    assert len(commands) >= 15 and any("--report junit:" in c for c in commands)
    assert sum(map(len, command_groups().values())) == len(commands)


@pytest.mark.parametrize("group", list(command_groups()))
def test_readme_and_help_examples_run_green(scratch, group):
    """Every command of ``group`` in order, in one scratch folder; the emulator offers 4 devices for the
    ``--devices 0,1,2,3`` example."""
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", PRMG_EMU_DEVICES="4")
    failures = []
    for command in command_groups()[group]:
        shell = command.replace("--runner aclnn", "--runner emulator")
        plain = plain_prmg(shell) if group == "in order" else None
        if plain:
            result = prmg_forked(*plain[1], env={**env, **plain[0]}, cwd=scratch)
        else:
            argv = [sys.executable, "-c", BENCH_ONCE, *BENCH.split()[1:]] if command == BENCH else ["bash", "-c", shell]
            result = subprocess.run(argv, cwd=scratch, env=env, capture_output=True, text=True, timeout=300)
        ran = command != BENCH or "compiled pass:" in result.stdout           # the last line of its last table
        if result.returncode != 0 or "Traceback" in result.stderr or not ran:
            failures.append(f"{command}: exit {result.returncode}\n{result.stdout[-800:]}{result.stderr[-800:]}")
    assert not failures, "\n\n".join(failures)


def test_the_readmes_console_blocks_show_what_their_command_prints(scratch):
    """Each ``console`` block of the README (``$ COMMAND``, then lines it prints; ``...`` stands for lines left out,
    a line ending in `` ...`` for its rest) shows what the command prints: its fault-injection example fails as
    shown."""
    blocks = [block.split("```", 1)[0] for block in (ROOT / "README.md").read_text().split("```console\n")[1:]]
    assert blocks
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    for block in blocks:
        command, *shown = block.strip().splitlines()
        assert command.startswith("$ ")
        result = subprocess.run(["bash", "-c", command[2:]], cwd=scratch, env=env, capture_output=True, text=True,
                                timeout=300)
        printed = " ".join(result.stdout.split())
        assert "Traceback" not in result.stderr and result.returncode in (0, 1), result.stderr
        for line in shown:
            if line != "...":
                assert " ".join(line.removesuffix(" ...").split()) in printed, (line, result.stdout[-1500:])


def test_the_readmes_model_modes_are_the_model_table():
    """The README's table of model families: each model of ``models_preset.MODELS`` with its rotary mode, and whether a
    target of today's modes runs or skips its cases."""
    from prmg_cli.cases.models_preset import MODELS
    from prmg_cli.vocab import DEFAULT_SUPPORTED_MODES, ROTARY_MODES

    rows = re.findall(r"^\| (.+?) \| `([\w-]+)` \| (skips its cases|skips their cases|runs them) \|$",
                      (ROOT / "README.md").read_text(), flags=re.M)
    named = {model: (mode, verdict.split()[0]) for families, mode, verdict in rows
             for model in re.findall(r"\(`([\w.]+)`\)", families)}
    assert named == {model.name: (model.mode, "runs" if ROTARY_MODES[model.mode] in DEFAULT_SUPPORTED_MODES
                                  else "skips") for model in MODELS}


README_LIMIT = 25_000          # bytes (issue 37): reference material goes to docs/, with a pointer here


def test_every_docs_page_is_linked_from_the_readme_and_every_link_resolves():
    """Every page of ``docs/`` is linked from the README, which stays under ``README_LIMIT`` bytes, and every link
    resolves."""
    assert len((ROOT / "README.md").read_bytes()) < README_LIMIT
    readme = (ROOT / "README.md").read_text()
    for page in sorted((ROOT / "docs").glob("*.md")):
        assert f"](docs/{page.name})" in readme, page.name
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target, anchor in re.findall(r"\]\(([^)#:]*\.md|)(?:#([^)]*))?\)", page.read_text()):
            linked = (page.parent / target) if target else page
            assert linked.is_file(), f"{page.name}: {target}"
            # a page names itself by an anchor of its own (a link to its own top read 'see this page')
            assert linked.resolve() != page.resolve() or not target, f"{page.name} links to itself"
            assert not anchor or anchor in _anchors(linked), f"{page.name}: {target}#{anchor}"


def _anchors(page) -> set[str]:
    """The anchors GitHub gives the headings of ``page``: lower case, punctuation but '-' dropped, spaces as '-'."""
    return {re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
            for line in page.read_text().splitlines() if line.startswith("#")}


def test_the_readmes_limits_are_the_codes():
    """Each limit the README and docs/cases.md state is the constant the code enforces."""
    from prmg_cli.commands import bench_kernel
    from prmg_cli.cases import loader, coverage, fields, yamlfile
    from prmg_cli import files, results
    from prmg_cli.reports import compare, store
    from prmg_cli.reports.outputs import screen, table
    from prmg_cli.judging.checks.determinism import MAX_REPEAT

    text = " ".join(documentation().split())
    claims = [f"at most {yamlfile.MAX_FILE_BYTES // files.MiB} MiB", f"at most {yamlfile.MAX_EXPANDED_NODES:,} nodes",
              f"nest at most {yamlfile.MAX_DEPTH} levels", f"at most {yamlfile.MAX_LIST_VALUES:,} values in one list",
              f"at most {loader.MAX_RUN_CASES:,} cases", f"at most {fields.MAX_NAME_LENGTH} characters",
              f"(2; at most {MAX_REPEAT})", f"never under {screen.MIN_WIDTH} columns",
              f"or {screen.WIDTH} columns when standard output is not a terminal",
              f"not under {table.MIN_NAME} characters", f"naming at most {coverage.MISSING_SHOWN} missing classes",
              _fit_order_in_words(),
              f"2^{(fields.MAX_ARRAY_ELEMENTS + 1).bit_length() - 1} elements",
              *(f"{soc} {peak:.0f} GB/s" for soc, peak in bench_kernel.PEAK_GBPS.items()),
              f"{bench_kernel.DEFAULT_SOC} applies when no entry matches", f"(0 to {MAX_REPEAT})",
              f"(1 to {MAX_REPEAT}, the bound of `prmg run --repeat`)",
              f"of at most {compare.MAX_BENCH_BYTES // files.MiB} MiB",
              f"from 0 to 10^{len(str(results.MAX_SECONDS)) - 1} s",
              f"file of at most {store.MAX_FILE_BYTES // files.MiB} MiB",
              f"at most {store.MAX_FILE_CASES:,} cases a file, run records naming at most {loader.MAX_RUN_CASES:,} "
              f"cases each and {store.MAX_FILE_SELECTED:,} together",
              f"more than {loader.MAX_FOLDER_ENTRIES:,} files and folders",
              f"(at most {fields.MAX_SLICE_VALUES} values)", f"(0; at most 2^{fields.MAX_OFFSET.bit_length() - 1})",
              f"no line over {store.MAX_LINE_BYTES // files.MiB} MiB"]
    missing = [claim for claim in claims if claim not in text]
    assert not missing, missing


def _fit_order_in_words() -> str:
    """``table.FIT_ORDER`` as the README says it: what gives way before the names are shortened, then after."""
    from prmg_cli.reports.outputs import table

    words = {"kernel time": "the kernel time", "standard": "the standard", "cos": "the cos layout",
             "slice": "the slice", "shape": "the shape", table.ESSENTIALS: "the metric's detail after its first comma"}
    cut = table.FIT_ORDER.index(table.SHORTEN)
    after = [step for step in table.FIT_ORDER[cut + 1:]]
    return (f"{', '.join(words[step] for step in table.FIT_ORDER[:cut])}; then long names are shortened to the room "
            f"left, not under {table.MIN_NAME} characters while the {', '.join(after[:-1])} and {after[-1]} columns "
            f"can still go")


def test_the_readmes_module_table_names_every_module_that_exists():
    """docs/developing.md's table of modules: every module of prmg_cli/ (a top-level module, a package at the top, a
    module of a stage's package, or a package inside one) is in it, by its path in prmg_cli/, and everything in it
    exists."""
    page = (ROOT / "docs" / "developing.md").read_text()
    rows = [line for line in page.splitlines() if line.startswith("| `")]
    named = {name for row in rows for name in re.findall(r"`([\w/]+(?:\.py|/))`", row.split("|")[1])}
    package = ROOT / "prmg_cli"
    tops = [path for path in package.iterdir() if (path / "__init__.py").is_file()]
    modules = {path.name for path in package.glob("*.py") if path.name != "__init__.py"} | \
        {f"{path.name}/" for path in tops
         if not any(path.glob("*/__init__.py")) and len(list(path.glob("*.py"))) == 1} | \
        {f"{top.name}/{path.name}" for top in tops for path in top.glob("*.py") if path.name != "__init__.py"} | \
        {f"{top.name}/{path.name}/" for top in tops for path in top.iterdir() if (path / "__init__.py").is_file()}
    assert modules <= named, sorted(modules - named)
    assert all((package / name).exists() for name in named), sorted(n for n in named if not (package / n).exists())


def test_the_shipped_suites_table_counts_each_files_cases():
    from prmg_cli.cases.loader import load_cases

    readme = (ROOT / "README.md").read_text()
    rows = re.findall(r"^\| `([\w/.]+\.yaml)` \| (\d+) \|", readme, flags=re.M)
    shipped = sorted(str(path.relative_to(ROOT / "cases")) for path in (ROOT / "cases").rglob("*.yaml"))
    assert sorted(name for name, _ in rows) == shipped
    counts = {name: len(load_cases([ROOT / "cases" / name])) for name in shipped}
    assert {name: int(count) for name, count in rows} == counts
    assert f"`prmg run cases/` runs {sum(counts.values())} cases" in readme


def test_compares_order_and_drift_metric_are_the_codes():
    """Every place that lists what ``prmg compare`` reports lists it in ``compare.CATEGORIES``' order
    (``compare.ORDER``), and says which metric drifts under ``default``."""
    from prmg_cli.reports import compare
    from prmg_cli.commands import load
    from prmg_cli.judging.standards import STANDARDS

    readme = " ".join((ROOT / "README.md").read_text().split())
    reports = " ".join((ROOT / "docs" / "reports.md").read_text().split())
    command = load("compare")
    assert readme.count(compare.ORDER) == 2 and compare.ORDER in reports and compare.ORDER in command.main.__doc__
    drifting = STANDARDS["default"].drift_metric
    assert f"`{drifting}` under `default`" in reports
    assert f"{drifting} under default" in next(option.help for option in command.OPTIONS if option.name == "drift")


def test_the_stop_signals_exit_codes_and_what_compare_cannot_compare_are_said_where_the_code_has_them():
    """Every stop signal (``errors.STOPS``) is in ``prmg run --help``'s exit codes and the README's, with its code
    (``run --help`` said 130/143 after SIGHUP became 129); ``--allow-changed``'s help names every judging setting
    ``compare.judging`` holds a record to (it left out the standard's limits and prmg's judging code) and the
    emulator against a toolkit; ``prmg report --help`` says how duplicates are named as ``merge`` does."""
    from prmg_cli.commands import load
    from prmg_cli.errors import STOPS
    from prmg_cli.reports import compare, merge
    from prmg_cli.results import CaseResult, stopped_exit_code

    readme = " ".join((ROOT / "README.md").read_text().split())
    run_help = " ".join(load("run").main.__doc__.split())
    codes = "/".join(str(int(stopped_exit_code(signum))) for signum in STOPS)
    words = [f"{what} ({signal}" for what, signal in STOPS.values()]
    assert codes in run_help and all(word in run_help for word in words), run_help
    assert " / ".join(codes.split("/")) in readme and all(signal in readme for _, signal in STOPS.values())
    settings = {"standard": "x", "strict": True, "checks": ["sample"], "check_options": {}, "golden": False,
                "each_device": True, "limits": {"default": "f"}, "judging_code": "c"}
    record = CaseResult(name="c", status="passed", standard="default", device_statuses={"0": "passed"})
    said = compare.judging(record, settings)
    help_text = " ".join(next(option.help for option in load("compare").OPTIONS
                              if option.name == "allow_changed").split())
    named = {"standard": "standard", "--standard": "--standard", "--strict": "--strict", "--check": "checks",
             "check options": "checks", "--no-golden": "--no-golden", "--each-device": "--each-device",
             "chips": "chips", "limits of default": "limits", "judging code": "judging code"}
    assert all(named[key] in help_text for key in said), (sorted(said), help_text)
    assert "emulator" in help_text and "toolkit" in help_text
    report_help = " ".join(load("report").main.__doc__.split())
    assert f"more than {('zero', 'one', 'two', 'three', 'four')[merge.DUPLICATES_NAMED]}: one line per set of " \
           f"files, -v names each" in report_help


def test_the_names_the_docs_give_of_the_code_exist():
    """A ``module.name`` the README or docs/ put in backticks is an attribute of that prmg module (named by its last
    parts, in whichever stage's package: ``judge.judge``, ``outputs.OUTPUTS``; of one of them when two modules share
    a name), and a path they put in backticks is a file of the repository (or of prmg_cli/)."""
    import importlib

    text = documentation()
    package = ROOT / "prmg_cli"
    dotted = {".".join(path.relative_to(package).with_suffix("").parts).removesuffix(".__init__")
              for path in package.rglob("*.py")}
    missing = []
    for module, name in sorted(set(re.findall(r"`([a-z_]+(?:\.[a-z_]+)*)\.([A-Za-z_]+)(?:\(\))?`", text))):
        found = [other for other in dotted if other == module or other.endswith(f".{module}")]
        if name in ("py", "c", "h", "md", "yaml", "json", "jsonl", "npy", "csv", "html", "xml", "txt") or not found \
                or (module, name) in {("inputs", tensor) for tensor in ("dy", "cos", "sin")}:     # case keys
            continue
        if not any(hasattr(importlib.import_module(f"prmg_cli.{other}"), name) for other in found):
            missing.append(f"{module}.{name}")
    missing += [path for path in sorted(set(re.findall(r"`((?:prmg_cli|runners|tests|cases|docs)/[\w./-]+)`", text)))
                if not (ROOT / path).exists() and not (ROOT / "prmg_cli" / path).exists()]     # cases/: both
    assert not missing, missing


def test_the_browser_target_does_what_the_readme_says():
    """``make browser`` says it is installing chromium before running the very apt-get command the README
    quotes."""
    makefile = (ROOT / "Makefile").read_text()
    target = makefile[makefile.index("\nbrowser:"):makefile.index("\ntest:")]
    command = re.search(r"(apt-get update -qq && .*chromium)\)", " ".join(target.replace("\\\n", " ").split())).group(1)
    assert f"runs `{command}`" in " ".join((ROOT / "README.md").read_text().split())
    assert "echo 'make browser: no chromium found; installing it with apt-get" in target


def test_the_fault_shape_example_is_a_shape_of_the_smoke_suite():
    """docs/runners.md's example of a fault narrowed by PRMG_EMU_FAULT_SHAPE acts on as many cases of
    cases/smoke.yaml as it says: its pass cases of that shape (it named a shape the suite no longer had, so the
    run said FAULTS NAMED BUT NEVER INJECTED)."""
    from prmg_cli.cases.loader import load_cases

    said = re.search(r"FAULTS INJECTED: sign \(PRMG_EMU_FAULT_SHAPE=([\d,]+): acted on (\d+) of (\d+) cases: \.\.\.\)` "
                     r"for `cases/smoke.yaml`", (ROOT / "docs" / "runners.md").read_text())
    cases = load_cases([ROOT / "cases" / "smoke.yaml"])
    shape = tuple(int(size) for size in said.group(1).split(","))
    assert len(cases) == int(said.group(3))
    assert sum(case.shape == shape and case.expect.success for case in cases) == int(said.group(2))


def test_the_make_test_command_keeps_an_xdist_group_on_one_worker(tmp_path):
    """``make test``'s ``--dist loadgroup`` sends every test marked ``xdist_group`` to one worker, as
    tests/test_cluster.py relies on to share one Ray cluster (pytest 9.2 with pytest-xdist 3.8 scattered them)."""
    command = re.search(r"\$\(BIN\)/python -m pytest (.*)", (ROOT / "Makefile").read_text()).group(1).split()
    (tmp_path / "test_grouped.py").write_text(
        "import os, pytest\npytestmark = pytest.mark.xdist_group('g')\n"
        "@pytest.mark.parametrize('i', range(4))\ndef test_w(i):\n"
        "    open(f'w{i}', 'w').write(os.environ['PYTEST_XDIST_WORKER'])\n")
    (tmp_path / "test_other.py").write_text("def test_a(): pass\ndef test_b(): pass\n")
    subprocess.run([*PYTEST, *command, "-p", "no:prmg"],
                   cwd=tmp_path, check=True, capture_output=True)
    assert len({(tmp_path / f"w{i}").read_text() for i in range(4)}) == 1
