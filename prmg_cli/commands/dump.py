"""``prmg dump``: write cases' inputs and goldens as .npy files (``dump_arrays.dump_cases``)."""

from __future__ import annotations

from .shared_options import KEYWORD, PATHS
from .options import REQUIRED, Option, request_type

OPTIONS = (PATHS, Option("out", ("--out",), REQUIRED, "Folder to write DIR/CASE/ into.", "DIR", path=True), KEYWORD)

Request = request_type("DumpRequest", OPTIONS, "The options of ``prmg dump``.")

EPILOG = """\b
Example:
  prmg dump cases/smoke.yaml --out /tmp/golden -k worked
"""


def main(request) -> int:
    """Write each case's inputs and golden as .npy files for other tools.

    DIR/CASE/ gets dy.npy, cos.npy, sin.npy, golden.npy (the exact result, float64) and expected.npy (it
    rounded to dy's dtype; both absent for cases that expect an error), and meta.json (the case: dtypes,
    shapes, mode, slice, seed; each file's dtype): the layout of prmg run --save-failures. bfloat16 arrays are
    stored as their 16-bit patterns (uint16) and meta.json names the dtype. Exit 5 when -k selects no case.
    """

    from .dump_arrays import dump_cases
    from ..reports.outputs.screen import say
    from ..results import ExitCode
    from ..writes import write_stdout

    summary = dump_cases(list(request.paths), request.out, request.keyword)
    if not summary:                                 # as prmg run: exit 5, not 'wrote 0 cases'
        say("no cases selected (check -k)")
        return int(ExitCode.NO_CASES)
    write_stdout(summary)
    return 0
