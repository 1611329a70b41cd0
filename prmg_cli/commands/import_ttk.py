"""``prmg import-ttk``: a TTK case list (CSV) as prmg cases (``case_writer.import_ttk_file``)."""

from __future__ import annotations


from .options import REQUIRED, Option, request_type

OPTIONS = (Option("csv_file", (), REQUIRED, "A TTK operator test list: a kernel list or a torch-path (e2e) list.",
                  "FILE.csv", argument=True, path=True),
           Option("output", ("-o", "--output"), None, "YAML file to write (stdout otherwise, or -; never the CSV "
                  "itself).", "FILE", path=True, output=True))

Request = request_type("ImportTtkRequest", OPTIONS, "The options of ``prmg import-ttk``.")

EPILOG = """\b
Examples:
  prmg import-ttk tests/data/ttk_kernel_inplace_partial_rotary_mul_grad.csv \\
      -o cases/ttk_upstream.yaml
  prmg import-ttk tests/data/ttk_e2e_inplace_partial_rotary_mul_backward.csv \\
      -o cases/ttk_upstream_e2e.yaml
"""


def main(request) -> int:
    """Convert a TTK case list (CSV) into prmg YAML cases: a kernel list (op_name, input_shapes) or a torch-path
    e2e list (api_name, tensor_view_shapes, a mode by name, an optional partial_slice: the torch API's default
    [0, 0]).

    Disabled rows are skipped with a note; rows that are not one of the two operators, cannot be mapped, or that
    the torch API or a soc_series filter keeps off the 950 are reported by row number (on stderr).
    precision_tolerances/absolute_precision become a double_thousandth standard with the same thresholds (TTK's
    --compare close; its default judges by mix_tolerance: prmg run --standard mixed); input_data_ranges uniform
    inputs, TTK's [-2, 2] where a row gives none; an e2e row's view offsets and strides the case's.
    """
    from .case_writer import import_ttk_file
    from ..reports.outputs.screen import say
    from ..writes import write_stdout

    text, notes = import_ttk_file(request.csv_file, request.output)
    for note in notes:
        say(note)                                               # (shown escaped by import_ttk_file)
    if text:
        write_stdout(text, document=request.output is None)       # the YAML, else the line saying where it went
    return 0
