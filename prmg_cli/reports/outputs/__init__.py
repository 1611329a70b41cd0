"""The output formats: one entry per format in ``OUTPUTS``, each a function from a run's results to text.

A new format is a new module with a ``render`` function and one entry here. ``prmg run`` and
``prmg report`` take ``--report FORMAT[:FILE]`` (repeatable) and write each report where it says. A format's
module is imported when its report is written (a run writing a table never imports tabulate, csv or XML).

Beside the formats, what the text ones share: ``screen`` (the width, wrapping), ``table`` (how a table fits it),
``short_names`` (how a case name is shortened), ``labels`` (what reports say of a case), ``listing`` (the rows of
``prmg run --list``) and ``plots`` (the HTML page's pictures).
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from ...errors import PrmgError, suggest
from ...results import CaseResult, RunInfo
from ...writes import output_file


def _module(name: str):
    """The format module ``name`` of this package, imported on first use."""
    return importlib.import_module(f"{__name__}.{name}")


@dataclass(frozen=True)
class RenderOptions:
    """How a report is laid out: ``verbose`` adds diagnosis lines, ``wide`` keeps every table column,
    ``max_details`` caps diagnosis lines per case, ``header`` prints the run's header on top; ``cases``, the
    results' cases when they are at hand (a run's own), which the coverage line then takes as they are rather than
    making them again from the results' definitions (``coverage.run_line``)."""

    verbose: bool = False
    wide: bool = False
    max_details: int | None = None
    header: bool = True
    cases: tuple = ()


@dataclass(frozen=True)
class Output:
    """One report format: what it is for, its writer (results, run info, options) -> text, and
    ``require``, a cheap check that the format can be written here (raises ``PrmgError``, e.g. for a
    missing optional dependency), called when the report targets are parsed, before any case runs; and
    ``pieces``, when given, the same text in pieces (a report of many cases written to a file a piece at a time:
    ``render_pieces``); ``coverage``, whether it carries the run's coverage line (``coverage.run_line``, whose work a
    run then does while its cases run); ``suffixes``, the file name endings that name it (``-o run.html`` without
    ``--report`` is refused rather than given a table)."""

    description: str
    write: Callable[[list[CaseResult], RunInfo, RenderOptions], str]
    require: Callable[[], None] | None = None
    pieces: Callable[[list[CaseResult], RunInfo, RenderOptions], Iterable[str]] | None = None
    coverage: bool = False
    suffixes: tuple[str, ...] = ()


OUTPUTS: dict[str, Output] = {
    "table": Output("a table for people (the default)", lambda results, info, options: _module("table").render(
        results, info, verbose=options.verbose, wide=options.wide, max_details=options.max_details,
        header=options.header, cases=options.cases), coverage=True),
    "json": Output("JSON: summary and every case",
                   lambda results, info, options: _module("jsonreport").render(results, info),
                   pieces=lambda results, info, options: _module("jsonreport").pieces(results, info),
                   suffixes=(".json",)),
    "junit": Output("JUnit XML for CI", lambda results, info, options: _module("junit").render(results, info),
                    suffixes=(".xml",)),
    "csv": Output("CSV: one row per case", lambda results, info, options: _module("csvreport").render(results, info),
                  suffixes=(".csv",)),
    "markdown": Output("Markdown: table and failures",
                       lambda results, info, options: _module("markdown").render(results, info),
                       suffixes=(".md", ".markdown")),
    "html": Output("HTML: one self-contained page with a verdict matrix, error heatmaps and plots "
                   "(needs prmg[html])",
                   lambda results, info, options: _module("html").render(results, info, cases=options.cases),
                   require=lambda: _module("html").require(), coverage=True, suffixes=(".html", ".htm")),
}
REPORT_FORMATS = tuple(OUTPUTS)


def render(fmt: str, results: list[CaseResult], info: RunInfo, options: RenderOptions = RenderOptions()) -> str:
    """The report of ``results`` in format ``fmt`` (a key of ``OUTPUTS``)."""
    if fmt not in OUTPUTS:
        raise PrmgError(f"unknown report format {fmt!r}{suggest(fmt, OUTPUTS)}; choose one of {', '.join(OUTPUTS)}",
                        field="--report")
    return OUTPUTS[fmt].write(results, info, options)


def render_pieces(fmt: str, results: list[CaseResult], info: RunInfo,
                  options: RenderOptions = RenderOptions()) -> Iterable[str]:
    """The report ``render`` makes, in the pieces of its format's ``pieces`` when it has them (else whole): what a
    report file is written from (``files.write_text``)."""
    if fmt in OUTPUTS and OUTPUTS[fmt].pieces is not None:
        return OUTPUTS[fmt].pieces(results, info, options)
    return [render(fmt, results, info, options)]


@dataclass(frozen=True)
class ReportTarget:
    """One report of a run: its format and its file (None: standard output)."""

    format: str
    path: str | None = None


def write_targets(targets: Sequence[ReportTarget], pieces: Callable[[ReportTarget], Iterable[str]],
                  results: list[CaseResult], ending: Callable[[], list[str]]) -> list[PrmgError]:
    """Write each of ``targets`` (``pieces(target)``: its text) to its file or standard output, then say which files
    were written (``writes.wrote``, as compare and coverage say it): when no report went to standard output, the
    lines ``ending()`` gives (the failures) and ``wrote FILES: SUMMARY`` (``summary_line`` of ``results``) there;
    under a table there, ``wrote FILES``; beside a document there (``--report json``), on standard error. Return the
    errors of those that could not be written (a full disk): one failing never keeps the others from being written,
    and the caller raises them once it has said the rest (``PrmgError.all_of``)."""
    from ...files import write_text
    from ...results import summary_line
    from ...writes import write_stdout, wrote
    from .screen import say

    unwritten, written = [], []
    for target in targets:
        if target.path is None:
            write_stdout("".join(pieces(target)), document=target.format != "table")
            continue
        try:
            write_text(target.path, pieces(target))
            written.append(target.path)
        except PrmgError as error:
            unwritten += [error, *error.others]
    shown = next((target.format for target in targets if target.path is None), None)
    line = wrote(written, summary_line(results) if shown is None else "")
    if shown is None:
        write_stdout("\n".join([*ending(), line]))
    elif line:
        write_stdout(line) if shown == "table" else say(line)
    return unwritten


def parse_targets(specs: list[str], output: str | None) -> list[ReportTarget]:
    """The reports ``--report FORMAT[:FILE]`` (repeatable) and ``-o FILE`` ask for.

    ``-o FILE`` is the file of the one report given without a file (``--report json -o r.json``); no ``--report``
    means a table; a FILE ``-`` is standard output (``writes.output_file``). At most one report may go to standard
    output, and no two to one file. A format that cannot be written here (its ``require`` raises) is refused now,
    before the run, and so is ``-o`` without ``--report`` naming a file of another format (``Output.suffixes``),
    which would get a table.
    """
    meant = [name for name, out in OUTPUTS.items() if output and os.path.splitext(output)[1].lower() in out.suffixes]
    if not specs and meant:
        raise PrmgError(f"-o {output}: without --report a table goes there, not the {meant[0]} its name says; give "
                        f"--report {meant[0]} -o {output} (or --report {meant[0]}:{output})")
    specs = list(specs) or ["table"]
    targets = []
    for spec in specs:
        fmt, sep, path = str(spec).partition(":")
        if fmt not in OUTPUTS:
            raise PrmgError(f"--report {spec!r}: unknown format {fmt!r}{suggest(fmt, OUTPUTS)} (valid: "
                            f"{', '.join(OUTPUTS)}, "
                            f"optionally FORMAT:FILE)")
        if sep and not path:
            raise PrmgError(f"--report {spec!r}: no file after ':'")
        if OUTPUTS[fmt].require:
            OUTPUTS[fmt].require()
        targets.append(ReportTarget(fmt, output_file(path) or None))
    bare = [i for i, target in enumerate(targets) if target.path is None]
    if output is not None:
        if len(bare) != 1:
            raise PrmgError("-o FILE names the file of the one --report given without a file; "
                            f"{len(bare)} are without one (use --report FORMAT:FILE)")
        targets[bare[0]] = ReportTarget(targets[bare[0]].format, output)
    elif len(bare) > 1:
        raise PrmgError("only one report can go to standard output; give the others a file "
                        "(--report FORMAT:FILE)")
    return targets          # two reports to one file: refused by writes.check_outputs, with the run's files
