"""The ``cover`` preset: the smallest suite this generator finds that covers every regime class of every operator.

Candidates (``candidates``) are generated per operator, deterministically:

- **mix**: small shapes (every axis > 1, so each cos/sin layout is told apart and random tables vary along
  it) crossing every dtype pair, layout, rotary mode and format with slice placements chosen for the D and
  slice classes (D = 2, 254..258, 510..514, 1024; starts past 256 and 512; aligned and unaligned
  starts, ends and lengths; partial tiles);
- **counts**: one axis of B, S, N at 1, 3, 2**k - 1, 2**k, 2**k + 1 (k = 8, 12, 16) and the core-count
  neighbours, the other axes 1, a tiny slice, a layout that keeps the axis (so cos's rows follow);
- **specials**: a (1, 2, 2, 16) case per dtype pair whose dy (inside and outside the slice) and cos/sin hold
  every special value as exact bit patterns (``bits``: signed NaNs, payloads, signalling NaNs, -0.0,
  subnormals, the top binade, Inf);
- **storage**: each tensor at a storage offset (dy's over tables of another dtype), a NULL and a 3-value
  partialSlice; dy's rows and the tables'
  positions padded (kept where the operator makes its inputs contiguous); dy contiguous at another stride on an
  axis of length 1 (kept where the operator refuses a non-contiguous input);
- **errors**: a valid base case with one constraint broken at a time, expecting the status the constraint
  model gives on today's target (a case that only today's missing mode makes fail is tagged as such).

``coverage.facts`` decides what each candidate covers; a greedy set cover then keeps, as long as any class
is left, the candidate covering the most classes not yet covered (ties: fewer dy elements, then the earlier
candidate), first among the candidates today's target runs (so that every class it can run is covered by a
case that runs there, not one it skips), then among the others for what is left (the other rotary modes).
The result is the same bytes every time; a class no candidate covers is an error (it needs a candidate here).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from . import gencase
from .. import dtypes, status
from ..case import Case
from ..errors import PrmgError
from ..ops import OPERATORS, constraints
from ..ops.grad import SUPPORTED_FORMATS
from ..ops.regimes import COUNTER_BITS, core_rows, regimes
from ..vocab import BROADCASTS, MODE_NAMES
from .coverage import classes_of, dtype_bits, facts
from .loader import Expect

# (D, start, end): slice placements for the D and slice classes
SLICES = ((2, 0, 2), (24, 8, 24), (64, 16, 48), (40, 6, 12), (130, 2, 68), (128, 0, 64), (16, 5, 5), (256, 0, 256),
          (254, 2, 254), (258, 0, 256), (255, 1, 255), (257, 1, 257), (512, 256, 512), (510, 257, 509),
          (514, 512, 514), (1024, 514, 1022), (1024, 0, 1024), (96, 32, 96), (12, 2, 10), (48, 0, 24))
SHAPES = ((2, 3, 4), (3, 5, 7), (2, 2, 3), (3, 2, 2))        # (B, S, N), every axis > 1
TINY_SLICES = ((4, 0, 4), (8, 2, 6), (6, 2, 6))
KEEPS_AXIS = {axis: tuple(p for p in BROADCASTS if p[axis] != "1") for axis in range(3)}   # cos keeps B, S, N
# One constraint broken at a time, on the base (2, 2, 2, 16), 1S1D, slice [4, 12): name -> changed options
BASE = dict(shape=(2, 2, 2, 16), broadcast="1S1D", partial_slice=(4, 12))
BROKEN = {
    "null_dy": dict(null=("dy",)), "null_cos": dict(null=("cos",)), "null_sin": dict(null=("sin",)),
    "dy_int32": dict(dtype="int32", cos_dtype="float32"), "cos_float64": dict(cos_dtype="float64"),
    "sin_dtype_not_cos": dict(cos_dtype="float32", sin_dtype="float16"), "format_fractal_nz": dict(format="FRACTAL_NZ"),
    "mode_7": dict(mode=7), "mode_half_today": dict(mode="half"),
    "cos_3d": dict(cos_shape=(1, 1, 8)),
    "sin_shape_not_cos": dict(cos_shape=(1, 2, 1, 8), sin_shape=(1, 1, 1, 8)),
    "D_2048": dict(shape=(1, 1, 2, 2048), partial_slice=(0, 2048)),
    "start_negative": dict(cos_shape=(1, 1, 1, 8), partial_slice=(-2, 6)),
    "end_past_D": dict(cos_shape=(1, 1, 1, 8), partial_slice=(12, 20)),
    "start_after_end": dict(cos_shape=(1, 1, 1, 4), partial_slice=(10, 6)),
    "length_not_cos_D": dict(cos_shape=(1, 2, 1, 6)),
    "cos_D_over_dy_D": dict(cos_shape=(1, 1, 1, 32), partial_slice=(0, 0)),
    "odd_length": dict(partial_slice=(4, 11)),
    "quarter_length_6": dict(mode="quarter", partial_slice=(4, 10)),
    "quarter_D_18": dict(mode="quarter", shape=(2, 2, 2, 18)),
    "D_odd": dict(shape=(2, 2, 2, 15)),
    "bad_broadcast_B": dict(cos_shape=(3, 1, 1, 8)), "bad_broadcast_S": dict(cos_shape=(2, 3, 1, 8)),
    "empty_slice_past_D": dict(cos_shape=(1, 1, 1, 2), partial_slice=(20, 20)),
    "dy_not_contiguous": dict(shape=(1, 1, 4, 8), partial_slice=(0, 8), broadcast="111D", dy_strides=(32, 32, 1, 4)),
    "cos_not_contiguous": dict(cos_strides=(32, 16, 16, 1)),
    "sin_not_contiguous": dict(sin_strides=(32, 16, 16, 2)),
    # cos D = D: the forward's graph reads a list of none as [0, D) and rotates all of D (the grad's any refusal)
    "slice_list_empty": dict(cos_shape=(1, 2, 1, 16), partial_slice=()),
    # D = 8, cos D = 4: a tiling reading the one value as [4, D) (the slice_list_read fault) or as [0, 4)
    # (slice_of_1_as_end) succeeds where it must refuse
    "slice_list_of_1": dict(shape=(2, 2, 2, 8), cos_shape=(1, 2, 1, 4), partial_slice=(4,)),
}
TAGS = ("cover",)


def _mix(op: str) -> list[dict]:
    """Small cases crossing dtype pairs, layouts, modes and formats with ``SLICES`` (module docstring)."""
    spec, modes = OPERATORS[op], list(MODE_NAMES.values())
    count = len(spec.dtype_pairs) * len(spec.layouts) * len(modes)
    found = []
    for index in range(count):
        dy, cos = spec.dtype_pairs[index % len(spec.dtype_pairs)]
        depth, start, end = SLICES[index % len(SLICES)]
        found.append(dict(op=op, shape=(*SHAPES[index % len(SHAPES)], depth), broadcast=spec.layouts[index % 8],
                          partial_slice=(start, end), mode=modes[index // 8 % len(modes)], dtype=dy, cos_dtype=cos,
                          format=SUPPORTED_FORMATS[index % len(SUPPORTED_FORMATS)]))
    return found


def _counts(op: str) -> list[dict]:
    """One axis at a count class's value, the others 1 (module docstring)."""
    values = [1, 3] + [2 ** bits + delta for bits in COUNTER_BITS for delta in (-1, 0, 1)]
    rows = list(core_rows())
    pairs = OPERATORS[op].dtype_pairs
    found = []
    for axis in range(3):
        for number, value in enumerate(values + (rows if axis == 1 else [])):
            for variant in range(2):
                shape = [1, 1, 1]
                shape[axis] = value
                depth, start, end = TINY_SLICES[(number + variant) % len(TINY_SLICES)]
                dy, cos = pairs[(3 * axis + number + variant) % len(pairs)]
                found.append(dict(op=op, shape=(*shape, depth), broadcast=KEEPS_AXIS[axis][(number + 2 * variant) % 4],
                                  partial_slice=(start, end), dtype=dy, cos_dtype=cos))
    return found


def _special_patterns(dtype: str) -> dict[str, int]:
    """The bit pattern of each special value of ``dtype``: signed maxima, smallest and largest subnormals, signed
    zeros, the default NaN of both signs, a NaN with a low payload, a signalling NaN, signed Inf."""
    fmt = dtypes.FLOAT_FORMATS[dtype]
    exponent_bits, fraction_bits = fmt.exponent_bits, fmt.fraction_bits
    sign, top, quiet = 1 << (exponent_bits + fraction_bits), ((1 << exponent_bits) - 1) << fraction_bits, \
        1 << (fraction_bits - 1)
    largest = top - 1                                # the largest finite: exponent top - 1, every fraction bit
    return {"max": largest, "-max": sign | largest, "sub": 1, "-sub": sign | (quiet - 1), "+0": 0, "-0": sign,
            "nan": top | quiet, "-nan": sign | top | quiet, "nan_low_payload": top | quiet | 1,
            "snan": top | 1, "inf": top, "-inf": sign | top}


def _ordinary_bits(dtype: str, count: int, seed: int) -> np.ndarray:
    """``count`` deterministic values uniform in (-1, 1), rounded to ``dtype``, as bit patterns."""
    return dtype_bits(np.random.default_rng(seed).uniform(-1.0, 1.0, count), dtype)


def _specials(op: str) -> list[dict]:
    """Per dtype pair a (1, 2, 2, 16) case, slice [4, 12), 1S1D tables, holding every special value as bits:
    row 0 of dy the NaNs, Infs and zeros (inside the slice and out), row 1 the maxima and subnormals, rows 2
    and 3 ordinary values; cos and sin each some of them too, in one position row each."""
    shape, piece, cos_shape = (1, 2, 2, 16), (4, 12), (1, 2, 1, 8)
    found = []
    for index, (dy, cos) in enumerate(OPERATORS[op].dtype_pairs):
        data, table = _special_patterns(dy), _special_patterns(cos)
        x = _ordinary_bits(dy, math.prod(shape), 10 + index).reshape(4, 16)
        first = [data[name] for name in ("nan", "-nan", "nan_low_payload", "snan", "inf", "-inf", "-0", "+0")]
        second = [data[name] for name in ("max", "-max", "sub", "-sub")]
        x[0, 4:12], x[0, :4], x[0, 12:] = first, first[:4], first[4:]
        x[1, 4:8], x[1, :4], x[1, 12:] = second, second, second
        c, s = (_ordinary_bits(cos, math.prod(cos_shape), seed).reshape(2, 8) for seed in (20 + index, 30 + index))
        c[0, :4] = [table[name] for name in ("nan_low_payload", "-nan", "inf", "sub")]
        s[1, :6] = [table[name] for name in ("-inf", "-0", "+0", "max", "nan", "snan")]
        label = f"{dtypes.lookup(dy).short}_{dtypes.lookup(cos).short}"
        found.append(dict(op=op, name=f"specials_{label}", shape=shape, cos_shape=cos_shape,
                          partial_slice=piece, dtype=dy, cos_dtype=cos,
                          inputs={tensor: {"bits": [int(v) for v in array.reshape(-1)]}
                                  for tensor, array in (("dy", x), ("cos", c), ("sin", s))}))
    return found


def _storage(op: str) -> list[dict]:
    """Each tensor at a storage offset, a NULL and a 3-value partialSlice (valid for every operator); dy's rows and
    cos's positions padded (not contiguous: valid for an operator that makes its inputs contiguous), and so at a
    storage offset (x's rows from its second head on; cos and sin as vLLM's cos_sin.chunk(2, -1) makes them, sin L
    into each row of 2L); cos and sin without elements (the grad's no-op since e9f0541c, which its base build
    refused); dy transposed (a BSND view of BNSD storage, q.transpose(1, 2)), and so at S = 1, a contiguous view
    (a decode step's), and cos and sin expanded along B (stride 0, torch's expand); cos and sin strided each its
    own way; a decode call of 257 heads a row (cos [B, 1, 1, L]: the forward's A2/A3 decode kernel)."""
    return [dict(op=op, name="decode_heads_257", shape=(2, 1, 257, 8), broadcast="B11D", partial_slice=(0, 8)),
            dict(op=op, name="views_at_offsets", shape=(2, 3, 2, 8), broadcast="1S1D", partial_slice=(2, 6),
                 dy_offset=5, cos_offset=3, sin_offset=1, dtype="bfloat16", cos_dtype="float32"),
            dict(op=op, name="slice_null", shape=(1, 2, 2, 8), null=("partial_slice",)),
            dict(op=op, name="slice_of_3", shape=(1, 2, 2, 8), partial_slice=(2, 6, 8)),
            dict(op=op, name="rows_padded", shape=(1, 2, 4, 8), broadcast="111D", partial_slice=(0, 8),
                 dy_strides=(128, 64, 16, 1)),
            dict(op=op, name="tables_padded", shape=(1, 2, 2, 8), broadcast="1S1D", partial_slice=(2, 6),
                 cos_strides=(8, 8, 8, 1), sin_strides=(16, 8, 4, 1)),
            dict(op=op, name="rows_padded_at_offset", shape=(1, 2, 3, 8), broadcast="111D", partial_slice=(4, 8),
                 dy_strides=(64, 32, 8, 1), dy_offset=8),
            dict(op=op, name="tables_unlike", shape=(1, 2, 2, 8), broadcast="1S1D", partial_slice=(2, 6),
                 cos_strides=(8, 8, 8, 1), sin_strides=(24, 12, 12, 1)),
            dict(op=op, name="tables_chunked", shape=(1, 2, 2, 8), broadcast="1S1D", partial_slice=(2, 6),
                 cos_strides=(16, 8, 8, 1), sin_strides=(16, 8, 8, 1), sin_offset=4),
            dict(op=op, name="tables_empty", shape=(1, 2, 2, 8), cos_shape=(1, 0, 1, 4), partial_slice=(2, 6)),
            dict(op=op, name="rows_transposed", shape=(1, 3, 2, 8), broadcast="1S1D", partial_slice=(2, 6),
                 dy_strides=(48, 8, 24, 1)),
            dict(op=op, name="rows_transposed_at_s1", shape=(2, 1, 2, 8), broadcast="B11D", partial_slice=(2, 6),
                 dy_strides=(16, 8, 8, 1)),
            dict(op=op, name="tables_expanded", shape=(2, 2, 2, 8), broadcast="BS1D", partial_slice=(2, 6),
                 cos_strides=(0, 4, 4, 1), sin_strides=(0, 4, 4, 1))]


def _errors(op: str) -> list[dict]:
    """``BASE`` with one constraint of ``BROKEN`` broken, expecting what the constraint model says."""
    found = []
    for name, change in BROKEN.items():
        options = dict(op=op, name=f"error.{name}", **BASE)
        if "cos_shape" in change:
            options.pop("broadcast")
        options.update(change)
        found.append(options)
    return found


def _named(op: str, options: dict) -> dict:
    """``options`` as a case mapping named ``cover.OP.<name or the derived one>``, tagged ``cover`` (and ``forward``, as
    the forward preset's cases are, when OP is the forward: ``--tag forward`` selects every forward case of cases/
    but those of users' and models' geometries)."""
    return gencase.preset_case(f"cover.{op}", TAGS + (("forward",) if op == "forward" else ()), **options)


def _expectation(case: Case) -> tuple[dict, tuple[str, ...]] | None:
    """What a case breaking a constraint should expect: the status the constraint model gives on today's target, and
    the tags of a case only today's missing mode refuses (a target of every mode accepts it); None when today's
    target accepts it."""
    found = constraints.violation_details(case, constraints.DEFAULT_SUPPORTED_MODES)
    if not found:
        return None
    today = found[0].code
    missing_mode = not constraints.expected_status(case, gencase.ALL_MODES)
    tags = gencase.MODE_UNSUPPORTED_TAGS if missing_mode else ()
    expect = {"error": status.STATUS_NAMES[today]}
    phase = constraints.expected_phase(case, constraints.DEFAULT_SUPPORTED_MODES)
    if phase != Expect(today).phase:
        expect["phase"] = phase
    return expect, tags


def candidates() -> list[tuple[dict, object]]:
    """Every candidate of every operator as (case mapping, loaded Case), in order, names unique: the valid cases
    of the mix, counts, specials and storage families, and the error cases expecting what the constraint model
    says."""
    passing, breaking, names = [], [], set()
    for op in OPERATORS:
        for family, options_list in ((passing, (*_mix(op), *_counts(op), *_specials(op), *_storage(op))),
                                     (breaking, _errors(op))):
            for options in options_list:
                case_map = _named(op, options)
                if case_map["name"] not in names:
                    names.add(case_map["name"])
                    family.append(case_map)
    found = []
    loaded = gencase.load_generated([{**case_map, "expect": {"error": "any"}} for case_map in passing + breaking])
    for number, (case_map, case) in enumerate(zip(passing + breaking, loaded)):
        if number < len(passing):
            if not constraints.violations(case, gencase.ALL_MODES):
                found.append((case_map, replace(case, expect=Expect())))
        elif (expected := _expectation(case)) is not None:
            expect, tags = expected
            pinned = Expect(constraints.expected_status(case, constraints.DEFAULT_SUPPORTED_MODES),
                            constraints.expected_phase(case, constraints.DEFAULT_SUPPORTED_MODES))
            found.append(({**case_map, "expect": expect, "tags": [*case_map["tags"], *tags]},
                          replace(case, expect=pinned)))
    return sorted(found, key=lambda pair: list(OPERATORS).index(pair[1].op))


def greedy_cover(covers: list[frozenset], sizes: list[int]) -> list[int]:
    """Indices of ``covers`` chosen greedily: each time the one adding the most uncovered elements (ties: the
    smaller ``sizes``, then the earlier index), until none adds any."""
    elements = {element: bit for bit, element in enumerate(sorted(frozenset().union(*covers), key=repr))}
    masks = [sum(1 << elements[element] for element in cover) for cover in covers]
    uncovered, chosen = (1 << len(elements)) - 1, []
    while uncovered:
        best = max(range(len(masks)), key=lambda i: (bin(masks[i] & uncovered).count("1"), -sizes[i], -i))
        if not masks[best] & uncovered:
            break
        chosen.append(best)
        uncovered &= ~masks[best]
    return chosen


def cover_document() -> dict:
    """The ``cover`` preset: the greedy cover of ``candidates`` over every class of every operator, in
    candidate order. PrmgError naming the classes no candidate covers."""
    found = candidates()
    covers = [frozenset((case.op, index) for index in classes_of(facts(case))) for _, case in found]
    universe = {(op, index) for op in OPERATORS for index in range(len(regimes(op)))}
    left = universe - frozenset().union(*covers)
    if left:
        raise PrmgError("no cover candidate covers " + ", ".join(f"{op} {regimes(op)[index].key}"
                                                                 for op, index in sorted(left)))
    sizes = [math.prod(case.shape) for _, case in found]
    runs_today = [not constraints.skip_reason(case, constraints.DEFAULT_SUPPORTED_MODES) for _, case in found]
    first = greedy_cover([cover if today else frozenset() for cover, today in zip(covers, runs_today)], sizes)
    done = frozenset().union(*(covers[index] for index in first))
    chosen = sorted(first + greedy_cover([cover - done for cover in covers], sizes))
    header = gencase.header("cover", "the smallest suite the greedy set cover finds that covers every regime class "
                            "of both operators (prmg coverage lists them): small shapes except where a class needs "
                            "size, every special value as exact bits, each rule of the constraint model broken",
                            module="prmg_cli/cases/cover_preset.py")
    return gencase.document([found[index][0] for index in chosen], header=header)
