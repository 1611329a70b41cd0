"""Options several commands share, declared once (``options.Option`` records)."""

from __future__ import annotations

from ..device.runners import runners_help
from ..reports.outputs import OUTPUTS
from .options import REQUIRED, Option

PATHS = Option("paths", (), REQUIRED, "Case files or folders (every *.yaml / *.yml below a folder, sorted).",
               "PATH...", list, argument=True, path=True)
RUNNER = Option("runner", ("--runner",), "auto", runners_help(), "NAME", plugin=True)
OP_LIB = Option("op_lib", ("--op-lib",), None, "Load the operators from this library instead of the documented "
                "search order.", "PATH", plugin=True, path=True)
SUPPORTED_MODES = Option(
    "supported_modes", ("--supported-modes",), None,
    "Rotary modes the target implements, e.g. 0,1,2,3 or half,interleave (default: interleave, like today's "
    "kernel). Pass cases of other modes are skipped with a reason, unless the toolkit's first phase accepts the mode "
    "(then they run and are judged); cases that expect an error always run. The emulator implements the modes named "
    "here.", "LIST", plugin=True)
KEYWORD = Option("keyword", ("-k",), None, "Only cases whose name contains SUBSTRING.", "SUBSTRING")
TAGS = Option("tags", ("--tag",), (), "Only cases with this tag (repeatable: any of them).", "WORD", list)
EXCLUDE_TAGS = Option("exclude_tags", ("--exclude-tag",), (), "Leave out cases with this tag (repeatable).", "WORD",
                      list)
OUTPUT = Option("output", ("-o", "--output"), None, "The file of the one --report given without one (- or /dev/stdout: "
                "standard output).", "FILE", path=True, output=True)
REPORTS = Option("report", ("--report",), (), f"{', '.join(list(OUTPUTS)[:-1])} or {list(OUTPUTS)[-1]} (html: pip "
                 f"install 'prmg[html]'), to FILE or standard output (no FILE, - or /dev/stdout; /dev/stderr for "
                 f"standard error); repeatable, e.g. --report junit:smoke.xml --report html:run.html.", "FORMAT[:FILE]",
                 list)
VERBOSE = Option("verbose", ("-v", "--verbose"), False, "Also print diagnosis lines and skip reasons.", kind=bool)
WIDE = Option("wide", ("--wide",), False, "Show every table column and whole case names.", kind=bool)

