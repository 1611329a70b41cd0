"""``prmg gen-case``: one case from flags, or a preset suite (``case_writer.generate``)."""

from __future__ import annotations

from ..cases.presets import PRESETS
from ..vocab import BROADCASTS
from .shared_options import EXCLUDE_TAGS, TAGS
from .options import Option, request_type

CASE_OPTIONS = (        # the options of one case (``--preset`` takes none of them)
    Option("shape", ("--shape",), None, "dy's shape.", "B,S,N,D"),
    Option("cos_shape", ("--cos-shape",), None, "cos/sin shape.", "B,S,N,L"),
    Option("broadcast", ("--broadcast",), None, f"Instead of --cos-shape: {', '.join(BROADCASTS)} (default: cos "
           f"shape [1, 1, 1, L], as in a case file).", "PATTERN"),
    Option("partial_slice", ("--slice",), None, "[start, end) of the last axis (default 0,D).", "START,END"),
    Option("dtype", ("--dtype",), None, "dy's dtype: float32 (the default), float16, bfloat16.", "DTYPE"),
    Option("cos_dtype", ("--cos-dtype",), None, "cos/sin dtype (default: --dtype).", "DTYPE"),
    Option("mode", ("--mode",), None, "half, interleave (the default), quarter, interleave-half or 0..3 (interleave: "
           "GLM, GPT-J; Llama, Qwen, Phi use half, DeepSeek interleave-half: the models preset names each).",
           "MODE"),
    Option("seed", ("--seed",), None, "Input seed (default: derived from the name).", "N", int),
    Option("name", ("--name",), None, "Case name (default: derived from the options).", "NAME"),
    Option("inputs", ("--inputs",), None, "TENSOR=KIND[:ARGS] items separated by commas, e.g. "
           "dy=uniform:-1:1,cos=rope:10000,sin=rope:10000 or dy=normal:0:2; rope:BASE:OFFSET starts the positions "
           "at OFFSET, rope:BASE:P1;P2;... gives each request (B index of the table) its own.", "SPEC"),
    Option("expect", ("--expect",), None, "pass (the default), error, or a status code/name.", "WHAT"),
    Option("standard", ("--standard",), None, "Precision standard for the case.", "NAME"),
)
APPEND = Option("append", ("--append",), False, "Add the case to FILE's text, keeping everything in it (comments "
                "too).", kind=bool)
OPTIONS = (
    *CASE_OPTIONS,
    Option("preset", ("--preset",), None, f"Write a whole suite: {', '.join(PRESETS)} (cover: every regime "
           f"class of prmg coverage; models: real models' shapes).", "NAME"),
    Option("tags", TAGS.flags, (), "With --preset: only its cases with this tag (repeatable: any of them).", "WORD",
           list),
    Option("exclude_tags", EXCLUDE_TAGS.flags, (), "With --preset: leave out its cases with this tag (repeatable).",
           "WORD", list),
    Option("output", ("-o", "--output"), None, "Write to FILE (stdout otherwise, or -); a case that would not load "
           "from FILE (a file: input outside its folder), or a FILE gen-case did not write as this would (the same "
           "preset's, or one case from flags, unedited), is refused.", "FILE",
           path=True, output=True),
    APPEND,
)

Request = request_type("GenCaseRequest", OPTIONS, "The options of ``prmg gen-case``.")

EPILOG = """\b
Examples:
  prmg gen-case --shape 2,16,4,128 --broadcast 1S1D --slice 32,96 \\
      --dtype bfloat16 --cos-dtype float32
  prmg gen-case --shape 1,1,1,2048 --slice 0,64 \\
      --expect ACLNN_ERR_INNER_TILING_ERROR -o neg.yaml --append
  prmg gen-case --shape 1,16,8,128 --broadcast 1S1D --mode half \\
      --inputs cos=rope:500000,sin=rope:500000
  prmg gen-case --shape 2,1,32,128 --broadcast B11D --mode half \\
      --inputs "cos=rope:5e5:37;4095,sin=rope:5e5:37;4095"
  prmg gen-case --preset smoke -o cases/smoke.yaml
  prmg gen-case --preset cover -o cases/cover.yaml
  prmg gen-case --preset models --tag long -o models-long.yaml
"""


def main(request) -> int:
    """Generate a case from flags, or a whole suite with --preset. Output is deterministic.

    Invalid combinations are refused with the constraint they break, unless --expect asks for an error. A case
    that cannot fail (its unchanged input already passes: cos = 1 and sin = 0 at position 0) is refused, and a
    case whose cos/sin are the same along a broadcast axis (a decode table with one position for every request)
    gets a warning on stderr: a broadcast fault would pass it. Give per-request positions with
    cos=rope:BASE:P1;P2;... (one per B index of the table). Any warning prmg validate would give of the case (a sin
    alike at both lanes of every pair, a sign of sin its values hide) is on stderr too.
    """
    import dataclasses

    from ..errors import PrmgError
    from .case_writer import generate
    from ..reports.outputs.screen import say
    from ..results import visible
    from ..writes import write_stdout

    given = [option.flags[0] for option in (*CASE_OPTIONS, APPEND)
             if getattr(request, option.name) not in (None, False)]
    if request.preset is not None and given:
        raise PrmgError(f"--preset writes a whole suite: it takes no {', '.join(given)}")
    notes: list[str] = []
    text = generate(**dataclasses.asdict(request), notes=notes)
    for note in notes:
        say(visible(note))
    if text:
        write_stdout(text, document=request.output is None)       # the YAML, else the line saying where it went
    return 0
