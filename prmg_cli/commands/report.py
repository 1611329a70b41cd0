"""``prmg report``: one report from results files, merged (``merge.report_files``)."""

from __future__ import annotations

from ..errors import PrmgError
from ..reports.outputs import OUTPUTS
from ..results import WORST_FIRST
from .shared_options import OUTPUT, REPORTS, VERBOSE, WIDE
from .options import REQUIRED, Option, request_type

OPTIONS = (
    Option("results", (), REQUIRED, "Results files of prmg run --results (shards of one suite, or an earlier run).",
           "RESULTS.jsonl...", list, argument=True, path=True),
    Option("cases", ("--cases",), (), "The suite's case files or folders (repeatable): report in their order, and "
           "list the cases no file holds, or edited since their record was made, as not_run (exit 1); a record of "
           "another case is left out when ok, else reported after them.", "PATH", list,
           path=True),
    Option("report", REPORTS.flags, (), f"As prmg run's: {', '.join(OUTPUTS)}, to FILE or standard output; "
           f"repeatable.", REPORTS.metavar, list),
    OUTPUT,
    Option("duplicates", ("--duplicates",), "worst", f"A case in several files: worst (the worst verdict, a verdict "
           f"beating none: {' > '.join(WORST_FIRST)}) or last (the last file's record).", "RULE"),
    Option("allow_mixed", ("--allow-mixed",), (), "A setting (repeatable: standard, strict, runner, toolkit_version, "
           "soc, op_library, libraries, opp, faults, ...; settings: records of no run record among records of "
           "runs) that may differ between the runs merged; any other that differs is named and makes the exit code 1 "
           "(the host and the toolkit's folder may always differ).",
           "SETTING", list),
    Option("chips", ("--chips",), None, "The chips every case must have run on (0-7, 0,2,4), on each host that ran "
           "it, or on each host named (ci-1:0-7,ci-2:0-7: hosts as the runs recorded them, PRMG_HOST or the host "
           "name): per-chip CI jobs merged, or --each-device runs; a case no results file holds a record of on one of "
           "them is not_run there (exit 1), and each such chip is named on stderr.", "[HOST:]IDS"),
    Option("strict", ("--strict",), False, "As prmg run --strict: a record's warning fails its case (a device "
           "memory leak), and so does each warning of the runs merged (a chip whose runs selected fewer cases than "
           "its host's others, a run with a preloaded library taking the toolkit's calls, a run on the host emulator "
           "without --runner emulator), named in every report; "
           "exit 1. Runs with and without --strict are then alike.", kind=bool),
    VERBOSE, WIDE,
)

Request = request_type("ReportRequest", OPTIONS, "The options of ``prmg report``.")

EPILOG = """\b
Examples (two shards, say on two hosts, then one report):
  prmg run cases/smoke.yaml --shard 1/2 --results smoke-1.jsonl
  prmg run cases/smoke.yaml --shard 2/2 --results smoke-2.jsonl
  prmg report smoke-1.jsonl smoke-2.jsonl --cases cases/smoke.yaml \\
      --report junit:smoke.xml --report markdown:smoke.md
  prmg report smoke-1.jsonl smoke-2.jsonl --report json -o smoke.json
"""


def main(request) -> int:
    """Re-render one report from one or more results files, merged in case order.

    Each case held by several files is named on stderr (more than three: one line per set of files, -v names each).
    Each run's record names the cases it selected and its shard, so a case of a shard no file holds, or of a run
    stopped before it, is not_run: a report of some shards only is never green. The header carries every run's
    provenance and names the settings that differ between them; runs judged under settings that differ (standard,
    strictness, runner, toolkit, SoC, operator library or kernel files...) are no one verdict: exit 1 unless
    --allow-mixed names each. Exit codes as for a run: 0 when every case is ok, 1 when one failed, errored, xpassed
    or was not run (also: a --cases case no file holds, a --chips chip no file holds a case of, mixed settings,
    under --strict a warning),
    2 for unreadable files, 5 when there is
    nothing to report.
    """
    from ..reports.merge import report_files

    return report_files(list(request.results), list(request.cases), request.report, request.output,
                        request.duplicates, request.verbose, request.wide, list(request.allow_mixed),
                        chips_request(request.chips), request.strict)


def chips_request(text: str | None) -> tuple:
    """The chips ``--chips TEXT`` names (``suite.device_request`` of each list of ids): ``0-7`` their ids, expected on
    each host that ran a case; ``a:0-7,b:0-3,6`` each host's (``provenance.host_label``; the ids after ``HOST:`` are
    its own up to the next host) as labels ``a/0``, ``b/6``, expected whichever hosts ran. () without ``--chips``;
    PrmgError for ``all`` (no runtime to ask), and for a list of ids before the first host."""
    from ..device.provenance import host_label
    from .suite import device_request

    if text is None:
        return ()
    parts, hosts = text.split(","), {}
    if ":" in text and ":" not in parts[0]:
        raise PrmgError(f"--chips {text}: {parts[0].strip()} names no host while "
                        f"{next(part for part in parts if ':' in part).strip()} does: name the host of every list "
                        f"of chips (HOST:0-7) or of none")
    for part in parts:
        host, colon, ids = part.rpartition(":") if ":" in part else (None, "", part)
        host = host_label(host.strip(), f"--chips {text}") if colon else (list(hosts)[-1] if hosts else None)
        hosts.setdefault(host, []).append(ids)
    labels: tuple = ()
    for host, ids in hosts.items():
        chips = device_request(",".join(ids), "--chips" if host is None else f"--chips {host}:")
        if chips is None:
            raise PrmgError(f"--chips {text}: a report cannot ask the runtime which chips there are; name them (0-7)")
        labels += chips if host is None else tuple(f"{host}/{chip}" for chip in chips)
    return labels
