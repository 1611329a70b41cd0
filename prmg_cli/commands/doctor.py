"""``prmg doctor``: what was found and where (``doctor_findings.diagnose``)."""

from __future__ import annotations

from dataclasses import replace

from ..device.runners import RUNNERS
from .shared_options import OP_LIB, RUNNER
from .options import request_type

OPTIONS = (replace(RUNNER, help=f"The runner whose libraries to look for and open: {', '.join(RUNNERS)} (prmg run "
                                f"--help says what each runs); exit 1 when it is not usable."), OP_LIB)

Request = request_type("DoctorRequest", OPTIONS, "The options of ``prmg doctor``.")

EPILOG = """\b
Example:
  prmg doctor --runner emulator
"""


def main(request) -> int:
    """Say what was found and where: toolkit, libraries, operator symbols, devices, ASCEND_* variables, and the
    emulator's PRMG_EMU_* variables and fault names.

    Exit 0 when a runner is usable, 1 otherwise.
    """
    from .doctor_findings import diagnose
    from ..writes import write_stdout

    text, usable = diagnose(request.runner, request.op_lib)
    write_stdout(text)
    return 0 if usable else 1
