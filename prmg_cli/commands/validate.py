"""``prmg validate``: check case files without running them (``suite.validate_paths``)."""

from __future__ import annotations

from .shared_options import PATHS, SUPPORTED_MODES
from .options import Option, request_type

OPTIONS = (PATHS, Option("supported_modes", SUPPORTED_MODES.flags, None, "Rotary modes the target implements "
                         "(default: interleave): cases of other modes are reported as the ones a run would skip.",
                         "LIST"))

Request = request_type("ValidateRequest", OPTIONS, "The options of ``prmg validate``.")

EPILOG = """\b
Example:
  prmg validate cases/ --supported-modes 0,1,2,3
"""


def main(request) -> int:
    """Check case files: syntax, keys, types, values and the operators' documented constraints.

    Prints a warning per case whose expected error the constraint model disagrees with, then a summary;
    exit 0 when every file is valid, 2 otherwise (one line per broken case, naming file, case, field).
    """
    from .suite import validate_paths
    from ..writes import write_stdout

    write_stdout(validate_paths(list(request.paths), request.supported_modes))
    return 0
