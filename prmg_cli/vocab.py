"""The operators' shared vocabulary: rotary modes, cos/sin layouts, tensor formats and tensor names.

Every module that speaks of a case (the loader, the operator table, the generator, the runner, the
reports) takes these words from here, so that none of them imports another to learn them.

- Rotary modes: ``half`` 0, ``interleave`` 1, ``quarter`` 2, ``interleave-half`` 3.
- Broadcast patterns of cos/sin against the in-place tensor (B, S, N): each letter keeps that axis of
  the tensor, each ``1`` makes it 1; the last axis is the slice length ``L``.
- aclFormat codes, and the tensor roles ``dy``/``cos``/``sin`` as case files name them.
- The bytes of the runner's in-place contract: guard zones and workspace poison.
- The phases of a call that may refuse a case: ``workspace`` (``...GetWorkspaceSize``) and ``launch``; in graph
  mode, the phases of GE's graph (``init``, ``build``, ``compile``, ``run``), of which build and compile refuse.
- The generators that draw a case's seeded inputs (``seeded.py``), the default first.
- The defaults of a case and a run: the operator, the standard, the rotary modes the target implements.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from .errors import PrmgError, suggest

ROTARY_MODES = {"half": 0, "interleave": 1, "quarter": 2, "interleave-half": 3}
MODE_NAMES = {code: name for name, code in ROTARY_MODES.items()}
HALF, INTERLEAVE, QUARTER, INTERLEAVE_HALF = ROTARY_MODES.values()
# The names the two RoPE conventions go by in model code and papers -> prmg's mode: no mode's spelling is close to
# most of them, and difflib finds 'interleave' for 'non-interleaved', the other one (``mode_suggestion``).
MODE_CONVENTIONS = {"neox": "half", "gpt-neox": "half", "rotate-half": "half", "non-interleaved": "half",
                    "noninterleaved": "half", "gptj": "interleave", "gpt-j": "interleave", "interleaved": "interleave",
                    "rotate-every-two": "interleave"}
ACL_FORMATS = {"NCHW": 0, "NHWC": 1, "ND": 2, "NC1HWC0": 3, "FRACTAL_Z": 4, "FRACTAL_NZ": 29}
TENSORS = ("dy", "cos", "sin")
SLICE = "partial_slice"     # the attribute a case may pass as a NULL aclIntArray (``null: [partial_slice]``)
NULLABLE = (*TENSORS, SLICE)        # what ``null`` may name, in the order of the operator's arguments
CASE_SUFFIXES = (".yaml", ".yml")  # case files: what a folder is searched for, what no report replaces (writes)
FILE_KEYS = ("defaults", "cases")  # a case file that is a mapping: its keys (else a list of cases)
COVERAGE_FORMATS = ("table", "json", "markdown", "html")     # the pages of `prmg coverage` (coverage_pages)
DEFAULT_OP = "grad"         # the operator of a case that names none (ops.OPERATORS): the one under test
DEFAULT_STANDARD = "default"        # what a case is judged by when neither it nor --standard names one (standards)
DEFAULT_SUPPORTED_MODES = frozenset({ROTARY_MODES["interleave"]})   # without --supported-modes: today's kernel's
# The runner's in-place contract: every device buffer sits between guard zones of GUARD_BYTES (its data DATA_ALIGN-
# byte aligned and rounded) filled with GUARD_FILL, and the workspace is filled with WORKSPACE_POISON before each
# launch (0xFF bytes read as NaN in every float dtype). 32 KiB a side: a near overrun (a write a few cache lines or
# a row past a buffer) lands in a zone prmg watches, not in memory no one does.
GUARD_BYTES = 32 << 10
DATA_ALIGN = 512
GUARD_FILL = 0xA5
WORKSPACE_POISON = 0xFF
# The two phases of an aclnn call, in which an operator may refuse a case (``expect: {error, phase}``).
PHASES = {"workspace": "...GetWorkspaceSize (the first phase)", "launch": "the launch (the second phase)"}
# Graph mode's phases (``runners/geir/prmg_geir.h``'s PRMG_GEIR_PHASE_*, numbered 1..4 in this order); a refusal is
# a status of GRAPH_REFUSING (GE declined the graph), never of init or run (GE or the device failed).
GRAPH_PHASES = {"init": "GE's initialisation, its session and Session::AddGraph",
                "build": "building the graph from the operator's IR",
                "compile": "compiling the graph (Session::CompileGraph)",
                "run": "running the graph (Session::RunGraph)"}
GRAPH_REFUSING = ("build", "compile")
BROADCASTS = ("BSND", "111D", "1S1D", "1SND", "B1ND", "BS1D", "11ND", "B11D")
# The inputs' versions, newest first: philox4x32 (the default), philox (the default before it), pcg64 (before both)
GENERATORS = ("philox4x32", "philox", "pcg64")
DEFAULT_GENERATOR = GENERATORS[0]
UNNAMED_GENERATOR = GENERATORS[-1]          # what drew a result record that names no generator (older than philox)
MAX_RUN_CASES = 200_000     # cases in one run (every entry of every file counted before expansion; a run record's)


def broadcast_shape(pattern: str, shape: Sequence[int], length: int) -> tuple[int, ...]:
    """cos's shape for a tensor of ``shape`` (B, S, N, D) under broadcast ``pattern`` (one of
    ``BROADCASTS``) and slice length ``L = length``: axis i is ``shape[i]`` where ``pattern[i]`` is a
    letter, 1 where it is ``1``; the last axis is ``max(L, 1)``."""
    return tuple(1 if letter == "1" else dim for letter, dim in zip(pattern[:3], shape[:3])) + (max(length, 1),)


def broadcast_pattern(shape: Sequence[int], cos_shape: Sequence[int]) -> str | None:
    """The pattern of ``BROADCASTS`` that ``cos_shape`` follows against ``shape`` (an axis of size 1 in
    both reads as ``1``), or None when it follows none."""
    if len(shape) != 4 or len(cos_shape) != 4:
        return None
    letters = []
    for letter, size, cos_size in zip("BSN", shape[:3], cos_shape[:3]):
        if cos_size == 1:
            letters.append("1")
        elif cos_size == size:
            letters.append(letter)
        else:
            return None
    return "".join(letters) + "D"


def mode_label(mode: int) -> str:
    """``half (0)`` for a known mode, ``7`` for any other value."""
    return f"{MODE_NAMES[mode]} ({mode})" if mode in MODE_NAMES else str(mode)


def mode_name(mode) -> str:
    """The name of a rotary mode given as its name or its int code (``1`` -> ``interleave``);
    ``""`` when unknown."""
    if isinstance(mode, int):
        return MODE_NAMES.get(mode, str(mode))
    code = decimal(mode.removeprefix("-")) if isinstance(mode, str) else None
    if code is not None:
        return MODE_NAMES.get(-code if mode.startswith("-") else code, mode)
    return "" if mode is None else str(mode)


_DECIMAL = re.compile(r"[0-9]+")
_SHARD = re.compile(r"([0-9]{1,19})/([0-9]{1,19})")      # N < 10**19: a shard count past any run's cases
MOST_DIGITS = 30            # a decimal of more digits reads as 10**30, past every range prmg checks


def decimal(text: str) -> int | None:
    """The integer ``text`` writes in ASCII digits (``0``-``9`` only), None for any other text: ``int()`` and
    ``str.isdigit`` also take ``²``, Arabic-Indic digits, signs, spaces and ``1_000``. A number of more than
    ``MOST_DIGITS`` significant digits is ``10**MOST_DIGITS`` (``int()`` refuses text of over 4,300 digits)."""
    if not _DECIMAL.fullmatch(text):
        return None
    digits = text.lstrip("0")
    return int(digits or "0") if len(digits) <= MOST_DIGITS else 10 ** MOST_DIGITS


def number(text, kind=int, base: int = 10):
    """``kind(text)`` (``int(text, base)`` for an int) for text in ASCII, ValueError for text holding anything else:
    ``int()`` and ``float()`` also read other scripts' digits (``٣``, full-width ``１``), which a case file's YAML reads
    as text and refuses, so a number on the command line is written as a case file writes it (``1_0``, YAML's and
    Python's 10, is taken by both)."""
    if isinstance(text, str) and not text.isascii():
        raise ValueError(f"{text!r}: digits 0-9 only")
    return int(text, base) if kind is int and isinstance(text, str) else kind(text)


def shard_numbers(text: str) -> tuple[int, int] | None:
    """(I, N) of a shard ``I/N`` written in ASCII digits (at most 19 each) with 1 <= I <= N, None for any other
    text."""
    match = _SHARD.fullmatch(text)
    if not match or not 1 <= int(match[1]) <= int(match[2]):
        return None
    return int(match[1]), int(match[2])


def mode_suggestion(text) -> str:
    """`` (did you mean 'half'? ...)`` for an unknown rotary mode: the mode a convention's name means
    (``MODE_CONVENTIONS``: ``neox``, ``rotate_half``, ``non-interleaved``...), else the closest spelling."""
    key = text.strip().lower().replace("_", "-").replace(" ", "-") if isinstance(text, str) else None
    if key in MODE_CONVENTIONS:
        return f" (did you mean '{MODE_CONVENTIONS[key]}'? prmg's name for the '{text.strip()}' convention)"
    return suggest(text, ROTARY_MODES)


def parse_modes(text: str, option: str = "--supported-modes") -> frozenset[int]:
    """The mode codes of a ``--supported-modes`` value: comma-separated numbers 0..3 or mode names."""
    modes = set()
    for item in text.split(","):
        item = item.strip()
        if item in ROTARY_MODES:
            modes.add(ROTARY_MODES[item])
        elif decimal(item) in MODE_NAMES:
            modes.add(decimal(item))
        else:
            raise PrmgError(f"{option}: unknown mode {item!r} in {text!r}{mode_suggestion(item)} "
                            f"(valid: 0..3 or {', '.join(ROTARY_MODES)}, comma-separated)")
    return frozenset(modes)


def mode_list(modes: Iterable[int]) -> str:
    """The names of ``modes``, comma-separated in code order (``none`` when empty)."""
    return ", ".join(MODE_NAMES.get(mode, str(mode)) for mode in sorted(modes)) or "none"
