"""The preset suites of ``prmg gen-case --preset``: what each shipped case file under ``cases/`` holds, made from
the options ``gencase`` takes (the regime cover and the model table are ``cover_preset.py`` and ``models_preset.py``).
Presets are deterministic: the same command writes the same bytes, and a test checks each shipped file.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import numpy as np

from .. import dtypes
from ..errors import PrmgError, suggest
from ..vocab import BROADCASTS, ROTARY_MODES, TENSORS, broadcast_shape
from .gencase import (DTYPE_PAIRS, MODE_UNSUPPORTED_TAGS, case_from_options, document, dump_yaml, header, preset_case,
                      refuse_invalid, rope_inputs, short_dtype, with_builds)

FUTURE_MODES = ("half", "quarter", "interleave-half")


# ---------------------------------------------------------------------------------------------------
# Presets
# ---------------------------------------------------------------------------------------------------

def _even(n: int) -> int:
    """The largest even number <= ``n``."""
    return n - n % 2


def slice_placements(D: int) -> dict[str, tuple[int, int]]:
    """Where a slice can sit in a last axis of ``D`` (D even, >= 8): the whole axis, its head, a middle
    slice with an odd start, its tail, and length-2 slices at head, tail and an odd start."""
    half = _even(D // 2)
    odd_start = (D // 4) | 1
    return {
        "full": (0, D),
        "head": (0, half),
        "mid_odd": (odd_start, odd_start + half),
        "tail": (D - half, D),
        "len2_head": (0, 2),
        "len2_tail": (D - 2, D),
        "len2_odd": (odd_start, odd_start + 2),
    }


# The worked example: interleave, slice [2, 6), D = 8; dx row = 1, 2, 2.3, 2.1, 5.9, 3.3, 7, 8.
WORKED_EXAMPLE = dict(shape=(1, 1, 1, 8), cos_shape=(1, 1, 1, 4), partial_slice=(2, 6), dtype="float32",
                      inputs={"dy": {"values": [1, 2, 3, 4, 5, 6, 7, 8]},
                              "cos": {"values": [0.5, 0.6, 0.7, 0.8]},
                              "sin": {"values": [0.1, 0.2, 0.3, 0.4]}})

def cancellation(mode: str = "interleave") -> dict:
    """Inputs of a slice of 16 lanes whose pairs (p, q) of ``mode`` nearly cancel in the grad: dy in [1, 1 + 1e-4],
    c[p] = 0.75 = -s[q], so ``dx[p] = c[p]*g[p] + s[q]*g[q]`` is ~1e-4 of its terms and fp32 computed in bf16 (dy
    rounded to 1.0) is far off, while a pair's entries still differ (c[q] = 0.5, s[p] = -0.5)."""
    from ..ops import GRAD

    cos, sin = [0.0] * 16, [0.0] * 16
    for block in GRAD.rotation.pairs(ROTARY_MODES[mode], 16):
        for lane in range(16)[block.first]:
            cos[lane], sin[lane] = 0.75, -0.5
        for lane in range(16)[block.second]:
            cos[lane], sin[lane] = 0.5, -0.75
    return dict(inputs={"dy": {"uniform": [1.0, 1.0001]}, "cos": {"values": cos}, "sin": {"values": sin}})


def ties_inputs(dtype: str, shape: tuple[int, ...]) -> dict:
    """``values`` inputs whose results often lie exactly halfway between two values of ``dtype``: dy seeded integers
    where the dtype's spacing is 1 ([128, 256) in bfloat16, [1024, 2048) in float16), cos 1 and sin 1/2 and 3/2 by
    lane (partners differ), so ``dy*c +- dy'*s`` is a whole or half integer, and half integers there are ties."""
    low = 128 if dtype == "bfloat16" else 1024
    dy = low + np.random.default_rng(7).integers(0, low, math.prod(shape))
    return {"dy": {"values": dy.tolist()}, "cos": {"values": [1.0] * shape[-1]},
            "sin": {"values": [0.5, 1.5] * (shape[-1] // 2)}}


def exact_inputs(shape: tuple[int, ...]) -> dict:
    """``values`` inputs on which a kernel computing in float32 makes no rounding error before its final cast, and
    whose results often lie exactly halfway between two values of float16 or bfloat16: dy seeded integers of
    magnitude [128, 256) and both signs (8 bits: exact in every dtype), cos in {+-1, +-1/2} and sin in {+-1/2} or
    {+-k/16, k odd} by lane (partners differ), so every product and sum is a multiple of 1/16 below 2^9, exact in
    float32 (and in the float64 golden) whatever the order of the operations or a fused multiply-add. The exact
    result cast to nearest even is then the golden rounded to dy's dtype, bit for bit: a correct kernel is
    ``exact``, and a cast sending ties anywhere else (to odd, up or down by position, away from zero) differs at
    them, in either operator (no result of either is zero, whose sign the order of the operations could flip, nor
    below the dtypes' normals, where flushing is legitimate)."""
    rng = np.random.default_rng(20261240)       # a seed whose results of both operators are all nonzero
    count, length = math.prod(shape), shape[-1]
    dy = rng.integers(128, 256, count) * rng.choice((-1, 1), count)
    cos = rng.choice((1.0, -1.0, 0.5, -0.5), length)
    sin = rng.choice([0.5] * 8 + [k / 16 for k in range(1, 16, 2)], length) * rng.choice((-1.0, 1.0), length)
    return {"dy": {"values": dy.tolist()}, "cos": {"values": cos.tolist()}, "sin": {"values": sin.tolist()}}


def spread_inputs(dtype: str, shape: tuple[int, ...], low: int, high: int) -> dict:
    """``values`` inputs of dy whose magnitudes spread evenly in the exponent over [2^low, 2^high) (signs and
    mantissas seeded, rounded to ``dtype``): every flush-to-zero threshold between those powers meets some results,
    which a uniform draw, its magnitudes bunched under its top, leaves out."""
    rng = np.random.default_rng(11)
    count = math.prod(shape)
    magnitudes = np.exp2(low + (high - low) * (np.arange(count) + rng.uniform(0, 1, count)) / count)
    values = rng.permutation(magnitudes) * rng.choice((-1.0, 1.0), count)
    return {"dy": {"values": dtypes.rounded(values, dtypes.to_numpy(dtype)).astype(np.float64).tolist()}}


def _smoke() -> dict:
    """The ``smoke`` preset: every dtype pair and broadcast pattern, odd starts, non-power-of-two lengths, the
    worked example, two calls alike but for their tables' middle and slice (``same_table_ends``: a stale result) and a
    few negative cases, all fast."""
    tags = ("smoke",)
    case = lambda name=None, tags=tags, **options: preset_case("smoke", tags, name, **options)  # noqa: E731
    cases = [case("worked_example", **WORKED_EXAMPLE)]
    slices = [(0, 64), (7, 39), (30, 64)]
    for index, (dy, cos) in enumerate(DTYPE_PAIRS):          # every dtype pair, patterns and slices rotating
        cases.append(case(shape=(2, 3, 2, 64), broadcast=BROADCASTS[index % 8],
                          partial_slice=slices[index % 3], dtype=dy, cos_dtype=cos))
    for pattern in BROADCASTS:                        # every pattern, distinct B, S, N, pass-through tail
        cases.append(case(shape=(2, 3, 4, 24), broadcast=pattern, partial_slice=(2, 18)))
    for shape, piece, dtype in [((1, 2, 2, 128), (7, 71), "float32"), ((2, 2, 2, 96), (25, 71), "float16"),
                                ((1, 3, 5, 64), (1, 31), "bfloat16")]:     # odd starts
        cases.append(case(shape=shape, broadcast="111D", partial_slice=piece, dtype=dtype))
    for shape, piece, dtype, cos in [((1, 3, 5, 64), (10, 40), "bfloat16", "float32"),     # non-power-of-two L
                                     ((1, 1, 2, 128), (6, 68), "float32", "float32"),
                                     ((2, 2, 1, 16), (3, 9), "float16", "float16")]:
        cases.append(case(shape=shape, broadcast="1S1D", partial_slice=piece, dtype=dtype, cos_dtype=cos))
    cases.append(case(shape=(2, 2, 2, 8), broadcast="BSND", partial_slice=(5, 7)))         # L = 2
    cases.append(case(shape=(1, 2, 2, 1024), broadcast="1S1D", partial_slice=(0, 1024)))  # D = 1024
    cases.append(case("fp32_cancellation", shape=(2, 2, 2, 32), cos_shape=(1, 1, 1, 16), partial_slice=(8, 24),
                      **cancellation()))
    cases.append(case("rope_bf16", shape=(1, 16, 2, 64), broadcast="1S1D", dtype="bfloat16",
                      inputs="cos=rope:10000,sin=rope:10000"))
    cases.append(case("rope_glm_fp16", shape=(2, 8, 2, 128), broadcast="1S1D", partial_slice=(0, 64),
                      dtype="float16", inputs="cos=rope:10000,sin=rope:10000"))
    cases.append(case("empty_slice", shape=(1, 2, 2, 16), cos_shape=(1, 1, 1, 2), partial_slice=(5, 5)))
    cases += same_table_ends(case, "smoke")          # a chip serving a stale result (a cache) fails on every chip
    cases.append(case("error_null_cos", shape=(1, 2, 2, 16), broadcast="1S1D", null=("cos",),
                      expect="ACLNN_ERR_PARAM_NULLPTR"))
    cases.append(case("error_dy_int32", shape=(1, 2, 2, 16), broadcast="1S1D", dtype="int32", cos_dtype="float32",
                      expect="ACLNN_ERR_PARAM_INVALID"))
    cases.append(case("error_mode_half_today", shape=(1, 2, 2, 16), broadcast="1S1D", mode="half",
                      expect="ACLNN_ERR_INNER_TILING_ERROR", tags=("smoke", *MODE_UNSUPPORTED_TAGS)))
    cases.append(case("error_length_not_cos_D", shape=(1, 2, 2, 16), cos_shape=(1, 2, 1, 8), partial_slice=(0, 16),
                      expect="ACLNN_ERR_INNER_TILING_ERROR"))
    return document(cases, header=header("smoke", "a few dozen fast cases: every dtype pair and broadcast "
                                                  "pattern, odd starts, non-power-of-two lengths, the worked "
                                                  "example; what NPU CI runs"))


def _full_broadcast() -> list[dict]:
    """Every broadcast pattern x every dtype pair once; D and the slice placement rotate (Latin square)."""
    cases = []
    sizes = (16, 40, 64, 96, 128, 130)
    placements = ("full", "head", "mid_odd", "tail")
    for i, pattern in enumerate(BROADCASTS):
        for j, (dy, cos) in enumerate(DTYPE_PAIRS):
            D = sizes[(i + 2 * j) % len(sizes)]
            piece = slice_placements(D)[placements[(i + j) % len(placements)]]
            cases.append(preset_case("full.bcast", ("full", "broadcast"), shape=(2, 3, 4, D), broadcast=pattern,
                                     partial_slice=piece, dtype=dy, cos_dtype=cos))
    return cases


def _full_slices() -> list[dict]:
    """Every slice placement (head, middle with odd start, tail at D, length 2, non-power-of-two lengths)
    x every dtype pair once, in D = 128; the broadcast pattern rotates."""
    placements = dict(slice_placements(128))
    placements.update({"L6": (120, 126), "L30": (5, 35), "L46": (25, 71), "L62": (6, 68), "L94": (3, 97),
                       "L126": (1, 127)})
    cases = []
    for i, (label, piece) in enumerate(placements.items()):
        for j, (dy, cos) in enumerate(DTYPE_PAIRS):
            cases.append(preset_case("full.slice", ("full", "slice"), f"{label}_{short_dtype(dy)}_{short_dtype(cos)}",
                                     shape=(1, 2, 3, 128), broadcast=BROADCASTS[(i + j) % 8],
                                     partial_slice=piece, dtype=dy, cos_dtype=cos))
    return cases


def _full_dims() -> list[dict]:
    """Last-axis sizes D from 2 to 1024, each with the whole axis as slice and (D >= 4) an odd-start
    slice leaving a pass-through tail; dtype pairs and patterns rotate."""
    sizes = (2, 4, 6, 8, 12, 16, 18, 32, 34, 48, 62, 64, 80, 96, 100, 128, 160, 192, 200, 256, 320, 384, 512,
             576, 640, 768, 896, 1000, 1022, 1024)
    cases = []
    for i, D in enumerate(sizes):
        start = (D // 3) | 1
        pieces = [(0, D)] + ([(start, start + _even(D - start - 1))] if D >= 4 else [])
        for k, piece in enumerate(pieces):
            dy, cos = DTYPE_PAIRS[(2 * i + k) % 9]
            cases.append(preset_case("full.dim", ("full", "dim"), shape=(1, 2, 2, D),
                                     broadcast=BROADCASTS[(i + 3 * k) % 8], partial_slice=piece,
                                     dtype=dy, cos_dtype=cos))
    return cases


# Input scales: (label, inputs). Every magnitude stays finite in every dtype (|c*g + s*g'| < 65504).
SCALES = (
    ("milli", {"dy": {"uniform": [-0.001, 0.001]}}),
    ("hundred", {"dy": {"uniform": [-100.0, 100.0]}}),
    ("ten_thousand", {"dy": {"uniform": [-10000.0, 10000.0]}}),
    ("normal", {"dy": {"normal": [0.0, 1.0]}}),
    ("offset_normal", {"dy": {"normal": [3.0, 0.01]}}),
    ("wide_tables", {"cos": {"uniform": [-4.0, 4.0]}, "sin": {"uniform": [-4.0, 4.0]}}),
    ("small_tables", {"cos": {"uniform": [-0.001, 0.001]}, "sin": {"uniform": [-0.001, 0.001]}}),
    ("positive", {"dy": {"uniform": [0.5, 1.0]}, "cos": {"uniform": [0.0, 1.0]}, "sin": {"uniform": [0.0, 1.0]}}),
)


def _full_scales() -> list[dict]:
    """Every input scale x every dtype pair once (D = 64, slice with odd start, 12 rows)."""
    cases = []
    for i, (label, inputs) in enumerate(SCALES):
        for j, (dy, cos) in enumerate(DTYPE_PAIRS):
            cases.append(preset_case("full.scale", ("full", "scale"), f"{label}_{short_dtype(dy)}_{short_dtype(cos)}",
                                     shape=(2, 2, 3, 64), broadcast=BROADCASTS[(i + j) % 8],
                                     partial_slice=(3, 59), dtype=dy, cos_dtype=cos, inputs=inputs))
    return cases


FULL_PARTS = {
    "broadcast": (_full_broadcast, "every broadcast pattern x every dtype pair"),
    "slices": (_full_slices, "every slice placement x every dtype pair"),
    "dims": (_full_dims, "last-axis sizes D from 2 to 1024"),
    "scales": (_full_scales, "every input scale x every dtype pair"),
}


def _full_part(part: str) -> dict:
    """One part of the ``full`` preset (a key of ``FULL_PARTS``) as its own document."""
    make, what = FULL_PARTS[part]
    return document(make(), header=header("full", what, part))


def _full() -> dict:
    """The ``full`` preset: every part of ``FULL_PARTS`` in one document."""
    cases = [case for part in FULL_PARTS for case in FULL_PARTS[part][0]()]
    return document(cases, header=header("full", "the cross product that matters, by covering design"))


def same_table_ends(case, preset: str) -> list[dict]:
    """Two calls alike in every tensor's shape and in both ends of cos and sin, unlike between (three requests' RoPE
    tables, the middle one at another position) and in the slice: siblings run one after the other (on one device, at
    the same device addresses), so that a kernel caching its tables by address, checking its cache by the tables' first
    and last bytes (the emulator's table_block_cache) or not at all (table_address_cache), or its tilings by the
    tensors alone (tiling_cache), runs the later one with the first one's tables or slice: a stale result. ``case``
    makes a case of ``preset``."""
    ends = f"cos and sin alike at both ends as the other {preset}.same_table_ends_* case's, unlike between: a kernel " \
           f"caching its tables by address and checking their ends runs this call with the other's"
    return [case(f"same_table_ends_at_{position}", shape=(3, 2, 2, 16), broadcast="BS1D",
                 partial_slice=(start, start + 8), inputs=rope_inputs(10000, [0, position, 9]), note=ends)
            for start, position in ((0, 4), (8, 5))]


def _edge() -> dict:
    """The ``edge`` preset: empty slices, D = 1024, minimal shapes, huge, tiny and subnormal magnitudes, RoPE
    tables at long positions, mixed dtypes."""
    tags = ("edge",)
    case = lambda name, **options: preset_case("edge", tags, name, **options)  # noqa: E731
    cases = [
        case("empty_slice_mid", shape=(1, 2, 2, 16), cos_shape=(1, 1, 1, 2), partial_slice=(6, 6)),
        case("empty_slice_zero", shape=(2, 1, 2, 8), cos_shape=(1, 1, 1, 2), partial_slice=(0, 0), dtype="float16"),
        case("empty_slice_at_D", shape=(1, 1, 3, 8), cos_shape=(1, 1, 1, 8), partial_slice=(8, 8), dtype="bfloat16"),
    ]
    for dtype in dtypes.OPERATOR_DTYPES:
        cases.append(case(f"D1024_full_{short_dtype(dtype)}", shape=(1, 2, 2, 1024), broadcast="1S1D", dtype=dtype))
        cases.append(case(f"minimal_{short_dtype(dtype)}", shape=(1, 1, 1, 2), broadcast="BSND", dtype=dtype))
    cases += [
        case("D1024_odd_start", shape=(1, 1, 2, 1024), broadcast="11ND", partial_slice=(1, 1023)),
        case("D1024_last_pair", shape=(1, 1, 2, 1024), broadcast="11ND", partial_slice=(1022, 1024),
             dtype="bfloat16"),
        case("many_rows_D2", shape=(2, 64, 8, 2), broadcast="1SND", dtype="float16"),
        case("rows_over_65536", shape=(2, 2048, 17, 32), broadcast="1S1D", partial_slice=(8, 24), dtype="float16"),
        # a batch of 16 over one table of positions (training's shared cos/sin): each batch index, the last one too
        case("batch_16_shared_tables", shape=(16, 4, 2, 64), broadcast="1S1D", partial_slice=(0, 64)),
        case("huge_fp32", shape=(2, 2, 2, 32), broadcast="BSND", inputs={"dy": {"uniform": [-1e30, 1e30]}}),
        case("huge_tables_fp32", shape=(2, 2, 2, 32), broadcast="1S1D",
             inputs={"cos": {"uniform": [-1e30, 1e30]}, "sin": {"uniform": [-1e30, 1e30]}}),
        case("huge_fp16", shape=(2, 2, 2, 32), broadcast="BSND", dtype="float16",
             inputs={"dy": {"uniform": [-30000.0, 30000.0]}}),
        case("huge_bf16", shape=(2, 2, 2, 32), broadcast="BSND", dtype="bfloat16",
             inputs={"dy": {"uniform": [-1e30, 1e30]}}),
        case("tiny_fp32", shape=(2, 2, 2, 32), broadcast="BSND", inputs={"dy": {"uniform": [-1e-30, 1e-30]}}),
        case("tiny_bf16", shape=(2, 2, 2, 32), broadcast="BSND", dtype="bfloat16",
             inputs={"dy": {"uniform": [-1e-30, 1e-30]}}),
        case("small_normals_fp32", shape=(1, 2, 2, 32), broadcast="BSND",
             inputs=spread_inputs("float32", (1, 2, 2, 32), -124, -96)),
        case("small_normals_bf16", shape=(1, 2, 2, 32), broadcast="BSND", dtype="bfloat16",
             inputs=spread_inputs("bfloat16", (1, 2, 2, 32), -124, -96)),
        case("tiny_fp16", shape=(2, 2, 2, 32), broadcast="BSND", dtype="float16",
             inputs={"dy": {"uniform": [-6e-05, 6e-05]}}),
        case("subnormal_fp16", shape=(2, 2, 2, 32), broadcast="BSND", dtype="float16",
             inputs={"dy": {"uniform": [-1e-07, 1e-07]}}),
        case("subnormal_fp32", shape=(2, 2, 2, 32), broadcast="BSND", inputs={"dy": {"uniform": [-1e-40, 1e-40]}}),
        case("subnormal_tables_fp32", shape=(2, 2, 2, 32), broadcast="1S1D",
             inputs={"cos": {"uniform": [-1e-39, 1e-39]}, "sin": {"uniform": [-1e-39, 1e-39]}}),
        case("rope_long_positions_fp32", shape=(1, 64, 2, 128), broadcast="1S1D", inputs=rope_inputs(10000, 100000)),
        case("rope_long_positions_bf16", shape=(1, 64, 2, 128), broadcast="1S1D", dtype="bfloat16",
             inputs=rope_inputs(10000, 100000)),
        case("rope_base500k_long_fp16", shape=(1, 64, 2, 128), broadcast="1S1D", dtype="float16",
             cos_dtype="float32", inputs=rope_inputs(500000, 100000)),
        case("independent_tables", shape=(2, 4, 2, 64), broadcast="1S1D",
             inputs={"dy": {"uniform": [-1.0, 1.0]}, "cos": {"uniform": [-1.0, 1.0]},
                     "sin": {"uniform": [-1.0, 1.0]}}),
        case("fp32_cancellation", shape=(2, 3, 2, 16), cos_shape=(1, 1, 1, 16), partial_slice=(0, 16),
             **cancellation()),
        case("mixed_bf16_fp32", shape=(2, 3, 2, 64), broadcast="B1ND", partial_slice=(9, 57), dtype="bfloat16",
             cos_dtype="float32"),
        case("mixed_bf16_fp16", shape=(2, 3, 2, 64), broadcast="BS1D", partial_slice=(9, 57), dtype="bfloat16",
             cos_dtype="float16"),
        case("mixed_fp16_bf16_rope", shape=(1, 32, 2, 64), broadcast="1S1D", dtype="float16",
             cos_dtype="bfloat16", inputs=rope_inputs(10000, 4096)),
        case("dy_at_offset_fp16", shape=(2, 3, 2, 16), broadcast="1S1D", partial_slice=(2, 14), dtype="float16",
             dy_offset=7),
        case("tables_at_offsets_bf16_fp32", shape=(2, 3, 2, 16), broadcast="BS1D", partial_slice=(4, 12),
             dtype="bfloat16", cos_dtype="float32", cos_offset=3, sin_offset=11),
        case("views_at_offsets_fp32", shape=(1, 4, 2, 32), broadcast="BSND", partial_slice=(0, 32), dy_offset=256,
             cos_offset=64, sin_offset=1),
    ]
    # Calls alike in every tensor but one attribute, run one after the other: a tiling or executor cache keyed by
    # the tensors alone runs the later ones with the first one's slice or mode (the emulator's tiling_cache).
    sibling = "the same shapes and dtypes as the other edge.same_shapes_* cases, another {}: a cache of tilings " \
              "keyed without it runs this call with another case's"
    cases += [case(f"same_shapes_slice_at_{start}", shape=(1, 3, 2, 32), broadcast="1S1D",
                   partial_slice=(start, start + 8), note=sibling.format("slice start")) for start in (0, 8, 24)]
    cases += [case(f"same_shapes_mode_{mode.replace('-', '_')}", shape=(1, 3, 2, 32), broadcast="1S1D",
                   partial_slice=(8, 24), mode=mode, note=sibling.format("rotary_mode")) for mode in ROTARY_MODES]
    cases += same_table_ends(case, "edge")
    cases += [case(f"ties_{op}_{short_dtype(dtype)}", op=op, shape=(1, 4, 8, 32), cos_shape=(1, 1, 1, 32),
                   dtype=dtype, inputs=ties_inputs(dtype, (1, 4, 8, 32)),
                   note="integers and halves: a quarter of the results lie halfway between two values of the dtype, "
                        "where a kernel casting ties away from zero (CAST_ROUND for CAST_RINT) leans the error balance")
              for op in ("grad", "forward") for dtype in ("bfloat16", "float16")]
    # The cast's tie rule, judged bit for bit: results exact in float32, 76 to 109 of 512 ties of the dtype (above).
    exact = "products and sums exact in float32, a seventh of the results or more ties of the dtype: judged bit " \
            "for bit, so a cast sending ties elsewhere than to even (to odd, by position, away from zero) fails"
    cases += [case(f"exact_{op}_{short_dtype(dtype)}_{short_dtype(cos_dtype)}", op=op, shape=(1, 2, 8, 32),
                   cos_shape=(1, 1, 1, 32), dtype=dtype, cos_dtype=cos_dtype, standard="exact",
                   inputs=exact_inputs((1, 2, 8, 32)), note=exact)
              for op in ("grad", "forward") for dtype in ("bfloat16", "float16") for cos_dtype in (dtype, "float32")]
    return document(cases, header=header("edge", "empty slices, D = 1024, minimal shapes, huge, tiny and "
                                                 "subnormal magnitudes, RoPE tables at long positions, "
                                                 "mixed dtypes, views at storage offsets"))


def _users() -> dict:
    """The ``users`` preset: the classes of failure public reports on RoPE kernels name, small: head_dim 192 in
    bfloat16, partial rotary (rotary dim < head dim) at model geometries, the half/interleave pairing mixed up,
    in place on a view at a storage offset, and tables whose partners differ (a partner-sin bug passed a test
    whose sin halves were equal); and the calls of a real caller, vllm-ascend's DeepSeek-V4 attention (query and kv
    token-major, the RoPE on the last 64 of 512 lanes, interleave: what today's kernel implements)."""
    tags = ("users",)
    case = lambda name, **options: preset_case("users", tags, name, **options)  # noqa: E731
    uniform = {"cos": {"uniform": [-1.0, 1.0]}, "sin": {"uniform": [-1.0, 1.0]}}
    cases = [
        case("hd192_bf16", shape=(2, 16, 4, 192), broadcast="1S1D", dtype="bfloat16", inputs=uniform,
             note="head_dim 192 in bfloat16 (not a power of two: 6 tiles of 32 lanes, 384-byte rows)"),
        case("hd192_rope_tail_bf16", shape=(1, 32, 4, 192), broadcast="1S1D", partial_slice=(128, 192),
             dtype="bfloat16", inputs=rope_inputs(10000, 0),
             note="head_dim 192 with RoPE on its last 64 lanes (DeepSeek's qk_rope_head_dim), bfloat16"),
        case("hd192_forward_bf16", op="forward", shape=(2, 16, 4, 192), broadcast="1S1D", dtype="bfloat16",
             inputs=uniform, note="the forward at head_dim 192 in bfloat16"),
        case("partial_rotary_glm_bf16_fp32", shape=(1, 64, 2, 128), broadcast="1S1D", partial_slice=(0, 64),
             dtype="bfloat16", cos_dtype="float32", inputs=uniform,
             note="partial rotary at GLM-4's geometry: the first 64 of 128 lanes, the rest passed through"),
        case("partial_rotary_phi_fp16_fp32", shape=(1, 32, 4, 80), broadcast="1S1D", partial_slice=(0, 32),
             dtype="float16", cos_dtype="float32", inputs=uniform,
             note="partial rotary at Phi-2's geometry: 32 of 80 lanes (partial_rotary_factor 0.4)"),
        case("pairing_mixup_rope_bf16", shape=(1, 32, 2, 128), broadcast="1S1D", dtype="bfloat16",
             inputs=rope_inputs(10000, 0),
             note="interleave pairs (2k, 2k+1) on a real RoPE table: a kernel pairing (k, k + L/2) (the half "
                  "mode's) fails it"),
        case("inplace_offset_view_bf16", shape=(1, 63, 4, 128), broadcast="1S1D", dtype="bfloat16", inputs=uniform,
             dy_offset=4 * 128, note="in place on x[1:] of a token-major buffer (torch's view at a storage offset, "
                                     "as vllm-ascend passes it): the kernel must start at the view"),
        case("inplace_offset_view_decode_fp16", shape=(8, 1, 8, 128), broadcast="B11D", dtype="float16",
             inputs=rope_inputs(10000, [3, 700, 1500, 2047, 9, 64, 512, 1023]), dy_offset=8 * 128, cos_offset=128,
             sin_offset=128, note="decode in place on views at storage offsets: dy and its per-request tables"),
        case("dsv4_q_rope_tail_bf16", shape=(16, 1, 8, 512), broadcast="B11D", partial_slice=(448, 512),
             dtype="bfloat16", inputs=uniform,
             note="vllm-ascend's DeepSeek-V4 query (head_dim 512, qk_rope_head_dim 64): q.unsqueeze(1) of [tokens, "
                  "heads, 512], slice [nope_head_dim, head_dim], a table row per token"),
        case("dsv4_kv_rope_tail_bf16", shape=(64, 1, 1, 512), broadcast="B11D", partial_slice=(448, 512),
             dtype="bfloat16", inputs=uniform,
             note="vllm-ascend's DeepSeek-V4 kv: kv.view(-1, 1, 1, 512), one head, a table row per token row (the "
                  "tables as large as dy)"),
        case("hf_decode_q_transposed_s1_bf16", shape=(4, 1, 8, 128), broadcast="B11D", dtype="bfloat16",
             inputs=uniform, dy_strides=(1024, 128, 128, 1),
             note="a Hugging Face style decode step: the grad of q of [batch, heads, 1, 128] (BNSD) passed as "
                  "q.transpose(1, 2), [4, 1, 8, 128] at strides [1024, 128, 128, 1]: contiguous (op::IsContiguous "
                  "skips the axis of length 1, as torch does), so the grad must take it as it is"),
        case("hf_bnsd_q_transposed_bf16", op="forward", shape=(2, 16, 4, 64), broadcast="BS1D", dtype="bfloat16",
             inputs=uniform, dy_strides=(4096, 64, 1024, 1), cos_strides=(0, 64, 64, 1), sin_strides=(0, 64, 64, 1),
             note="a Hugging Face style caller: q of [batch, heads, seq, 64] (BNSD) passed as q.transpose(1, 2), a "
                  "BSND view at strides [4096, 64, 1024, 1], and cos, sin of [seq, 64] as "
                  "c[None, :, None].expand(2, -1, -1, -1) (stride 0 along B): AutoContiguous copies all three"),
        case("dsv4_o_inverse_rope_cp_heads_bf16", op="forward", shape=(16, 1, 4, 512), broadcast="B11D",
             partial_slice=(448, 512), dtype="bfloat16", inputs=uniform, dy_strides=(4096, 2048, 512, 1),
             dy_offset=4 * 512,
             note="vllm-ascend's DeepSeek-V4 inverse RoPE on the attention output under context parallelism: "
                  "o_proj_input[:, start_h:end_h, :].unsqueeze(1) of [tokens, 8 heads, 512], the second rank's 4 "
                  "heads (strided, at a storage offset: AutoContiguous copies them in and back), cos and -sin per "
                  "token"),
    ]
    return document(cases, header=header("users", "the failure classes of public reports on RoPE kernels: "
                                                  "head_dim 192 in bfloat16, partial rotary at model geometries, "
                                                  "the pairing mixed up, in place on views at storage offsets, "
                                                  "tables whose partners differ; vllm-ascend's DeepSeek-V4 calls"))


def _finite_values(dtype: str, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Deterministic values uniform in (-1, 1), rounded to ``dtype``, as float64 (for ``values:`` inputs)."""
    draws = np.random.default_rng(seed).uniform(-1.0, 1.0, shape)
    return dtypes.rounded(draws, dtypes.to_numpy(dtype)).astype(np.float64)


def _special_values(dtype: str) -> dict[str, float]:
    """The special numbers of ``dtype``: its largest finite value and smallest subnormal."""
    import ml_dtypes

    info = ml_dtypes.finfo(dtypes.to_numpy(dtype))
    return {"max": float(info.max), "sub": float(info.smallest_subnormal)}


def _special_inputs(dy_dtype: str, cos_dtype: str, shape: tuple[int, ...], cos_shape: tuple[int, ...],
                    in_tables: bool, seed: int) -> dict:
    """``values`` inputs for the ``special`` preset (dy (1, 2, 2, 16), slice [4, 12), cos/sin 1S1D).

    Outside the slice every row holds -0.0, NaN, +-Inf, +-subnormal, +-max and 0 (all must come back bit
    for bit). With ``in_tables`` False the slice holds them too: row 0 a NaN, row 1 +-Inf, row 2 -0.0 and
    subnormals, row 3 +-max (sums that overflow or cancel), and the sin of row 1's inf and its partner is 0
    (NaN either way the pair is rotated: a kernel skipping a zero sin's product makes a number); else cos/sin
    hold NaN, -0.0, +Inf (times a 0 of dy in row 2: NaN), a subnormal and cos's max, and the slice ordinary
    values."""
    nan, inf = float("nan"), float("inf")
    dy_special, table_special = _special_values(dy_dtype), _special_values(cos_dtype)
    big, tiny = dy_special["max"], dy_special["sub"]
    dy = _finite_values(dy_dtype, shape, seed)
    outside = [[-0.0, nan, inf, -inf, tiny, -big, 0.0, -tiny], [nan, -0.0, -tiny, big, -inf, 0.0, inf, tiny]]
    for row in range(4):
        values = outside[row % 2]
        dy[0, row // 2, row % 2, :4], dy[0, row // 2, row % 2, 12:] = values[:4], values[4:]
    cos, sin = _finite_values(cos_dtype, cos_shape, seed + 1), _finite_values(cos_dtype, cos_shape, seed + 2)
    if not in_tables:
        dy[0, 0, 0, 4] = nan
        dy[0, 0, 1, 6], dy[0, 0, 1, 10] = inf, -inf
        sin[0, 0, min(1, cos_shape[2] - 1), 2:4] = 0.0   # at row 1's inf: 0 * inf is NaN (a skipped product is not)
        cos[0, 0, min(1, cos_shape[2] - 1), 6] = 0.0     # at row 1's -inf: 0 * -inf is NaN (likewise)
        dy[0, 1, 0, 4:8] = [-0.0, -0.0, tiny, -tiny]
        dy[0, 1, 1, 4:12] = [big, big, -big, big, 1.0, -1.0, big, -big]
    else:
        cos[0, 0, 0, 2], cos[0, 0, 0, 6] = nan, -0.0
        sin[0, 1, 0, 5], sin[0, 1, 0, 0] = inf, table_special["sub"]
        cos[0, 1, 0, 3] = table_special["max"]
        dy[0, 1, 0, 4 + 5] = 0.0                     # inf (sin) * 0 (dy) in row 2: NaN
    return {name: {"values": array.reshape(-1).tolist()} for name, array in (("dy", dy), ("cos", cos), ("sin", sin))}


def _special() -> dict:
    """The ``special`` preset: NaN, +-Inf, -0.0, subnormals and each dtype's maximum, inside and outside the
    slice, in dy and in cos/sin, for every dtype pair: NaN and Inf must propagate as float32 arithmetic
    does and everything outside the slice must come back bit for bit."""
    cases = []
    shape, piece = (1, 2, 2, 16), (4, 12)
    cos_shape = broadcast_shape("1S1D", shape, piece[1] - piece[0])
    for index, (dy, cos) in enumerate(DTYPE_PAIRS):
        for where in ("dy", "tables"):
            cases.append(preset_case("special", ("special",), f"{where}_{short_dtype(dy)}_{short_dtype(cos)}",
                                     shape=shape, cos_shape=cos_shape, partial_slice=piece, dtype=dy, cos_dtype=cos,
                                     inputs=_special_inputs(dy, cos, shape, cos_shape, where == "tables", index)))
    return document(cases, header=header("special", "NaN, +-Inf, -0.0, subnormals and each dtype's maximum inside "
                                                    "and outside the slice, in dy and in cos/sin, for every dtype "
                                                    "pair"))


def _negative() -> dict:
    """The ``negative`` preset: each documented constraint broken once, with the status it earns."""
    tags = ("negative",)
    nullptr, invalid, tiling = "ACLNN_ERR_PARAM_NULLPTR", "ACLNN_ERR_PARAM_INVALID", "ACLNN_ERR_INNER_TILING_ERROR"
    base = dict(shape=(2, 2, 2, 16), broadcast="1S1D", partial_slice=(4, 12))

    def case(name, extra_tags=(), **options):
        """A negative case: ``base`` updated by ``options`` (a cos_shape replaces its broadcast), tagged
        ``negative`` and ``extra_tags``."""
        if "cos_shape" in options:
            options.setdefault("broadcast", None)
        return preset_case("neg", tags + tuple(extra_tags), name, **{**base, **options})

    cases = [case(f"null_{tensor}", null=(tensor,), expect=nullptr) for tensor in TENSORS]
    cases += [
        case("dy_int32", dtype="int32", cos_dtype="float32", expect=invalid),
        case("cos_float64", cos_dtype="float64", expect=invalid),
        case("sin_dtype_not_cos", cos_dtype="float32", sin_dtype="float16", expect=invalid),
        case("format_fractal_nz", format="FRACTAL_NZ", expect=invalid),
        case("dy_not_contiguous", shape=(1, 1, 4, 8), partial_slice=(0, 8), dy_strides=(32, 32, 1, 4),
             expect={"error": "ACLNN_ERR_INNER", "phase": "launch"}),
        case("mode_7", mode=7, expect=tiling),
        case("mode_2pow32_plus_1", mode=2**32 + 1, expect=tiling,
             known_defect={"reason": "upstream's tiling reads the int64 rotary_mode as int32: 2**32 + 1 is read as 1 "
                                     "(interleave) and accepted", "status": "SUCCESS",
                           "behaves_as": {"rotary_mode": "interleave"}}),
    ]
    cases += [case(f"mode_{mode}_today", MODE_UNSUPPORTED_TAGS, mode=mode, expect=tiling)
              for mode in FUTURE_MODES]
    cases += [
        case("dy_3d", shape=(2, 4, 16), cos_shape=(1, 1, 1, 8), expect=tiling),
        case("sin_shape_not_cos", cos_shape=(1, 2, 1, 8), sin_shape=(1, 1, 1, 8), expect=tiling),
        case("D_2048", shape=(1, 1, 2, 2048), partial_slice=(0, 2048), expect=tiling),
        case("start_negative", cos_shape=(1, 1, 1, 8), partial_slice=(-2, 6), expect=tiling),
        case("end_past_D", cos_shape=(1, 1, 1, 8), partial_slice=(12, 20), expect=tiling),
        case("start_after_end", cos_shape=(1, 1, 1, 4), partial_slice=(10, 6), expect=tiling),
        case("length_not_cos_D", cos_shape=(1, 2, 1, 6), partial_slice=(4, 12), expect=tiling),
        case("cos_D_over_dy_D", cos_shape=(1, 1, 1, 32), partial_slice=(0, 0), expect=tiling),
        case("odd_length", partial_slice=(4, 11), expect=tiling),
        case("quarter_length_6", mode="quarter", partial_slice=(4, 10), expect=tiling),
        case("bad_broadcast_B", cos_shape=(3, 1, 1, 8), expect=tiling),
        case("empty_slice_ok", cos_shape=(1, 1, 1, 2), partial_slice=(7, 7)),
        case("cos_not_contiguous", cos_strides=(32, 16, 16, 1), expect={"error": "ACLNN_ERR_INNER", "phase": "launch"}),
        case("dy_transposed", shape=(2, 3, 2, 8), cos_shape=(1, 3, 1, 8), partial_slice=(0, 8),
             dy_strides=(48, 8, 24, 1), expect={"error": "ACLNN_ERR_INNER", "phase": "launch"},
             note="dy = g.transpose(1, 2) of a BNSD gradient: a BSND view at strides [48, 8, 24, 1], dense but not "
                  "contiguous: nnopbase refuses it at the launch (no AutoContiguous), dy untouched"),
        case("cos_expanded", shape=(2, 3, 2, 8), cos_shape=(2, 3, 1, 8), partial_slice=(0, 8),
             cos_strides=(0, 8, 8, 1), sin_strides=(0, 8, 8, 1), expect={"error": "ACLNN_ERR_INNER", "phase": "launch"},
             note="cos, sin = c.expand(2, -1, -1, -1) of [1, 3, 1, 8] tables: stride 0 along B is not contiguous "
                  "(IsContiguousShape): nnopbase refuses them at the launch"),
        case("sin_not_contiguous", sin_strides=(32, 16, 16, 2), expect={"error": "ACLNN_ERR_INNER", "phase": "launch"}),
        case("dy_heads_at_offset", shape=(2, 1, 2, 16), cos_shape=(2, 1, 1, 16), partial_slice=(0, 16),
             dy_strides=(64, 32, 16, 1), dy_offset=32, expect={"error": "ACLNN_ERR_INNER", "phase": "launch"},
             note="dy = g[:, 2:4].unsqueeze(1) of a [2, 4, 16] gradient (vllm-ascend's heads of one rank): strided "
                  "at a storage offset, refused at the launch (no AutoContiguous), its storage before the offset "
                  "untouched"),
    ]
    cases += slice_list_cases(case)
    # the order of upstream's checks: an empty dy skips the tiling (nnopbase; not the launch's contiguity check), an
    # empty slice or cos skips its L, D, positive-dims and layout rules, but never the slice range, 4-D, cos == sin
    # or cos D <= D
    cases += [
        case("dy_empty_ok", ("check-order",), shape=(2, 0, 2, 16), cos_shape=(1, 1, 1, 8)),
        case("dy_empty_bad_slice_ok", ("check-order",), shape=(2, 0, 2, 16), cos_shape=(1, 1, 1, 8),
             partial_slice=(-2, 40)),
        case("dy_empty_cos_strided", ("check-order",), shape=(2, 0, 2, 16), cos_shape=(1, 3, 1, 8),
             cos_strides=(48, 16, 16, 1), expect={"error": "ACLNN_ERR_INNER", "phase": "launch"},
             note="an empty dy skips the tiling and the kernel, but nnopbase's launch refuses the non-contiguous cos "
                  "first (NnopbaseExecutorRunWithWorkspace: UpdateAddr before SkipKernelLaunch)"),
        case("cos_empty_ok", ("check-order",), cos_shape=(0, 1, 1, 8)),
        case("empty_slice_D_2048_ok", ("check-order",), shape=(1, 1, 2, 2048), cos_shape=(1, 1, 1, 2),
             partial_slice=(0, 0)),
        case("empty_slice_bad_broadcast_ok", ("check-order",), cos_shape=(3, 1, 1, 2), partial_slice=(7, 7)),
        case("empty_slice_past_D", ("check-order",), cos_shape=(1, 1, 1, 2), partial_slice=(20, 20), expect=tiling),
        case("empty_slice_sin_shape_not_cos", ("check-order",), cos_shape=(1, 1, 1, 2), sin_shape=(1, 1, 1, 4),
             partial_slice=(7, 7), expect=tiling),
        case("empty_slice_cos_3d", ("check-order",), cos_shape=(1, 1, 2), partial_slice=(7, 7), expect=tiling),
    ]
    return document(cases, header=header("negative", "each constraint of the operator's documentation (upstream's "
                                                     "aclnnInplacePartialRotaryMulGrad.md) broken once, "
                                                     "with the status the operator returns, and the order "
                                                     "of its checks"))


SLICE_NULL_NOTE = ("a NULL partialSlice: the generated aclnn layer passes the op definition's default {0, 0}, an "
                   "empty slice: nothing changes (upstream's code, op definitions of 5871dd99)")
FORWARD_SLICE_NULL_NOTE = ("; the forward's docs say a NULL slice rotates the whole D: a build that follows its docs, "
                           "not this code, fails this case")


def slice_list_cases(case, forward: bool = False) -> list[dict]:
    """The partialSlice lists other callers pass, made by ``case(name, extra_tags, **options)``: NULL (the op
    definition's default, a no-op; for the ``forward`` its docs say otherwise), 3 values (the first two used), no
    value (nnopbase's 561103) and one value (read past its end as [4, 2^32): the slice range's 561002)."""
    tags = ("slice-list",)
    return [
        case("slice_null_ok", tags, null=("partial_slice",),
             note=SLICE_NULL_NOTE + (FORWARD_SLICE_NULL_NOTE if forward else "")),
        case("slice_of_3_ok", tags, partial_slice=(4, 12, 99),
             note="a partialSlice of 3 values: the tiling reads values[0] and values[1] unchecked"),
        case("slice_list_empty", tags, partial_slice=(), expect="ACLNN_ERR_INNER_NULLPTR",
             note="a partialSlice of no value: nnopbase refuses the NULL data of an empty aclIntArray"),
        case("slice_of_1", tags, partial_slice=(4,), expect="ACLNN_ERR_INNER_TILING_ERROR",
             note="the tiling reads values[1] past a one-value list's end, where nnopbase lays the ref output's "
                  "AnchorInstanceInfo, as 2^32: [4, 2^32), past D (the A2/A3 tiling: a list not of 2)"),
    ]


def _perf() -> dict:
    """The ``perf`` preset: large real-model shapes for timing."""
    tags = ("perf",)
    cases = []
    for dtype in dtypes.OPERATOR_DTYPES:
        cases.append(preset_case("perf", tags, f"llama_4x1024x32x128_s0-64_{short_dtype(dtype)}",
                                 shape=(4, 1024, 32, 128), broadcast="1S1D", partial_slice=(0, 64), dtype=dtype,
                                 inputs=rope_inputs()))
    cases += [
        preset_case("perf", tags, "llama_1x4096x32x128_full_bf16", shape=(1, 4096, 32, 128), broadcast="1S1D",
                    dtype="bfloat16", inputs=rope_inputs()),
        preset_case("perf", tags, "hd256_8x2048x8x256_s0-128_fp16", shape=(8, 2048, 8, 256), broadcast="1S1D",
                    partial_slice=(0, 128), dtype="float16", inputs=rope_inputs()),
        preset_case("perf", tags, "mixed_4x1024x32x128_s32-96_bf16_fp32", shape=(4, 1024, 32, 128),
                    broadcast="1S1D", partial_slice=(32, 96), dtype="bfloat16", cos_dtype="float32",
                    inputs=rope_inputs()),
        preset_case("perf", tags, "D1024_4x512x8x1024_full_fp32", shape=(4, 512, 8, 1024), broadcast="1S1D",
                    dtype="float32", inputs=rope_inputs()),
    ]
    return document(cases, header=header("perf", "large shapes for timing (not shipped under cases/)"))


def _forward() -> dict:
    """The ``forward`` preset: the forward op (aclnnInplacePartialRotaryMul) over its dtype pairs (cos/sin
    the x's dtype or float32) and every cos/sin layout, odd starts and tails, RoPE tables, special values,
    a non-contiguous x (made contiguous: AutoContiguous), and each of its constraints broken once with the
    status upstream's code returns (``ops/forward.py``)."""
    from ..ops import FORWARD

    tags = ("forward",)
    case = lambda name=None, tags=tags, **options: preset_case("fwd", tags, name, op="forward", **options)  # noqa: E731
    cases = []
    placements = [(0, 64), (7, 39), (30, 64), (16, 48)]
    for index, (x, table) in enumerate(FORWARD.dtype_pairs):
        for position, layout in enumerate(FORWARD.layouts[index % 2::2]):
            cases.append(case(shape=(2, 3, 2, 64), broadcast=layout, partial_slice=placements[(index + position) % 4],
                              dtype=x, cos_dtype=table))
    for m, mode in enumerate(FUTURE_MODES):        # each dtype pair in each future mode (a kernel is built per dtype
        odd = (7, 19) if mode == "quarter" else (5, 35)     # and mode), the last with halves (quarters) of odd length
        pieces = ((0, 64), (0, 32), (9, 45), (24, 64))
        for j, (x, table) in enumerate(FORWARD.dtype_pairs):
            piece = odd if j == len(FORWARD.dtype_pairs) - 1 else pieces[(j + m + 1) % 4]
            cases.append(case(tags=tags + ("future", mode), shape=(2, 3, 4, 64), broadcast=BROADCASTS[(j + m + 3) % 8],
                              partial_slice=piece, mode=mode, dtype=x, cos_dtype=table))
    cases += [
        case("rope_bf16", shape=(1, 32, 2, 128), broadcast="BSND", dtype="bfloat16", inputs=rope_inputs()),
        case("rope_partial_fp16_fp32", shape=(2, 16, 4, 128), broadcast="BSND", partial_slice=(0, 64),
             dtype="float16", cos_dtype="float32", inputs=rope_inputs()),
        case("D1024_fp32", shape=(1, 2, 2, 1024), broadcast="111D"),
        case("L2_tail", shape=(2, 2, 2, 8), broadcast="B11D", partial_slice=(6, 8), dtype="bfloat16"),
        case("many_rows", shape=(2, 64, 8, 16), broadcast="B1ND", partial_slice=(2, 14), dtype="float16"),
    ]
    shape, piece = (1, 2, 2, 16), (4, 12)
    for index, (x, table) in enumerate(FORWARD.dtype_pairs):
        cos_shape = broadcast_shape("BSND", shape, piece[1] - piece[0])
        cases.append(case(f"special_{short_dtype(x)}_{short_dtype(table)}", shape=shape, cos_shape=cos_shape,
                          partial_slice=piece, dtype=x, cos_dtype=table,
                          inputs=_special_inputs(x, table, shape, cos_shape, index % 2 == 1, 100 + index)))
    cases.append(case("x_not_contiguous_works", shape=(1, 2, 4, 8), partial_slice=(0, 8), broadcast="111D",
                      dy_strides=(128, 64, 16, 1)))               # rows padded to 16: AutoContiguous copies them
    cases.append(case("tables_not_contiguous_work", shape=(2, 3, 2, 16), broadcast="1S1D", partial_slice=(4, 12),
                      cos_strides=(48, 16, 16, 1), sin_strides=(24, 8, 8, 1), dtype="bfloat16", cos_dtype="float32"))
    cases.append(case("views_at_offsets", shape=(2, 3, 2, 16), broadcast="B1ND", partial_slice=(2, 14),
                      dy_offset=32, cos_offset=5, sin_offset=3, dtype="float16"))
    cases.append(case("x_heads_at_offset_works", shape=(2, 1, 2, 16), broadcast="B11D", partial_slice=(12, 16),
                      dy_strides=(64, 32, 16, 1), dy_offset=32, dtype="bfloat16",
                      note="x[:, 2:4].unsqueeze(1) of [2, 4, 16]: heads 2 and 3 of 4, strided at a storage offset; "
                           "AutoContiguous copies them in and back from the view"))
    cases.append(case("decode_257_heads_fp16", shape=(2, 1, 257, 128), broadcast="B11D", partial_slice=(96, 128),
                      dtype="float16",
                      note="a decode step of 257 heads, a rope tail of D = 128 over cos [B, 1, 1, L]: on A2/A3 the "
                           "membase decode kernel (it reads the slice's L, 32 float16 lanes: whole 32-byte blocks, "
                           "not x's D), whose 8-bit repeat count over a row's heads wrapped to 1 until upstream's "
                           "5889c853"))
    cases.append(case("tables_chunked_work", shape=(2, 3, 2, 16), broadcast="1S1D", partial_slice=(4, 12),
                      cos_strides=(48, 16, 16, 1), sin_strides=(48, 16, 16, 1), sin_offset=8,
                      note="cos, sin = cos_sin.chunk(2, -1) of a [1, 3, 1, 16] table: rows 16 apart, sin 8 into each"))
    cases.append(case("tables_unlike_work", shape=(2, 3, 2, 16), broadcast="1S1D", partial_slice=(4, 12),
                      cos_strides=(48, 16, 16, 1), sin_strides=(72, 24, 24, 1), sin_offset=16, dtype="float16",
                      note="cos = cos_cache[..., :8] of a [1, 3, 1, 16] cache (rows 16 apart), sin the last 8 lanes "
                           "of a [1, 3, 1, 24] one (rows 24 apart, 16 into each): AutoContiguous copies each along its "
                           "own strides"))
    cases.append(case("x_transposed_works", shape=(2, 3, 2, 16), broadcast="1S1D", partial_slice=(4, 12),
                      dy_strides=(96, 16, 48, 1), dtype="bfloat16",
                      note="x = q.transpose(1, 2) of a BNSD q [2, 2, 3, 16]: a BSND view at strides [96, 16, 48, 1], "
                           "dense but not contiguous; AutoContiguous copies it in and back in the view's order"))
    cases.append(case("tables_expanded_work", shape=(2, 3, 2, 16), broadcast="BS1D", partial_slice=(4, 12),
                      cos_strides=(0, 8, 8, 1), sin_strides=(0, 8, 8, 1), dtype="float16",
                      note="cos = c.expand(2, -1, -1, -1) of a [1, 3, 1, 8] table, sin alike: stride 0 along B, one "
                           "storage row per position; AutoContiguous repeats it for each b"))
    invalid, nullptr, tiling = "ACLNN_ERR_PARAM_INVALID", "ACLNN_ERR_PARAM_NULLPTR", "ACLNN_ERR_INNER_TILING_ERROR"
    base = dict(shape=(2, 2, 2, 16), broadcast="B1ND", partial_slice=(4, 12))
    negative = lambda name, extra=(), **options: case(name, tags + ("negative",) + tuple(extra),  # noqa: E731
                                                      **{**base, **options})
    cases += [negative(f"null_{tensor}", null=(tensor,), expect=nullptr) for tensor in TENSORS]
    cases += [
        negative("x_int32", dtype="int32", cos_dtype="float32", expect=invalid),
        negative("cos_fp16_for_bf16", dtype="bfloat16", cos_dtype="float16", expect=invalid),
        negative("format_fractal_nz", format="FRACTAL_NZ", expect=invalid),
        negative("mode_half_today", MODE_UNSUPPORTED_TAGS, mode="half", expect=tiling),
        negative("mode_7", mode=7, expect=tiling),
        negative("D_odd", shape=(2, 2, 2, 15), expect=tiling),
        negative("D_2048", shape=(1, 1, 2, 2048), partial_slice=(0, 8), cos_shape=(1, 1, 2, 8), broadcast=None,
                 expect=tiling),
        negative("odd_length", partial_slice=(4, 11), expect=tiling),
        negative("slice_past_D", cos_shape=(1, 1, 1, 8), broadcast=None, partial_slice=(12, 20), expect=tiling),
        negative("bad_broadcast_B", cos_shape=(3, 1, 1, 8), broadcast=None, expect=tiling),
        negative("empty_slice_ok", cos_shape=(1, 1, 1, 2), broadcast=None, partial_slice=(7, 7)),
        negative("x_empty_ok", shape=(2, 0, 2, 16), cos_shape=(1, 1, 1, 8), broadcast=None, partial_slice=(12, 20)),
        *slice_list_cases(lambda name, extra=(), **options: negative(name, extra, **options), forward=True),
        negative("D_2000_empty_slice", shape=(1, 1, 2, 2000), cos_shape=(1, 1, 1, 2), broadcast=None,
                 partial_slice=(0, 0), expect=tiling,
                 known_defect={"reason": "the 950 tiling returns early for an empty slice, before its D <= 1024 rule",
                               "status": "SUCCESS", "behaves_as": {}}),
    ]
    return document(cases, header=header("forward", "the forward op over its dtype pairs and 950 layouts, RoPE "
                                                    "tables, special values and each of its constraints broken once"))


def _checks() -> dict:
    """The ``checks`` preset: the golden-free checks on the device (adjoint, roundtrip, determinism) over
    both operators, every dtype, the layouts both accept and more, and a large case judged by its checks
    alone (``golden: false``, with sample, the check anchored to the formula)."""
    tags = ("checks",)
    every = ("adjoint", "roundtrip", "determinism")
    case = lambda name, **options: preset_case("checks", tags, name, **options)  # noqa: E731
    cases = []
    for index, dtype in enumerate(dtypes.OPERATOR_DTYPES):
        for op, layout in (("grad", "1S1D"), ("grad", "BSND"), ("forward", "B1ND"), ("forward", "111D")):
            cases.append(case(f"{op}_{short_dtype(dtype)}_{layout}", op=op, shape=(2, 8, 2, 64), broadcast=layout,
                              partial_slice=(8, 40) if index % 2 else (0, 64), dtype=dtype, checks=every,
                              inputs=rope_inputs() if "S" in layout else None))      # a RoPE table needs positions
    cases += [
        case("grad_mixed_bf16_fp16", shape=(1, 16, 4, 128), broadcast="BS1D", dtype="bfloat16", cos_dtype="float16",
             checks=("adjoint", "determinism")),
        case("grad_large_checks_only", shape=(1, 101, 8, 128), broadcast="1S1D", partial_slice=(32, 128),
             dtype="bfloat16", checks=(*every, "sample"), golden=False, inputs=rope_inputs()),
    ]
    return document(cases, header=header("checks", "golden-free checks on the device: adjoint, roundtrip and "
                                                   "determinism over both operators, and a case judged by its "
                                                   "checks alone"))


def _future_modes() -> dict:
    """The ``future_modes`` preset: modes half, quarter and interleave-half, skipped on today's target."""
    cases = []
    for m, mode in enumerate(FUTURE_MODES):
        prefix, tags = f"future.{mode}", ("future", mode)
        quarter = mode == "quarter"
        pieces = [(0, 64), (0, 32), (9, 45), (24, 64)]                 # full, head, odd start (L 36), tail
        for j, (dy, cos) in enumerate(DTYPE_PAIRS):
            cases.append(preset_case(prefix, tags, shape=(2, 3, 4, 64), broadcast=BROADCASTS[(j + m) % 8],
                                     partial_slice=pieces[(j + m) % 4], mode=mode, dtype=dy, cos_dtype=cos))
        odd_lengths = [(7, 19), (60, 64), (3, 43)] if quarter else [(5, 35), (62, 64), (3, 9)]
        for k, piece in enumerate(odd_lengths):                        # non-power-of-two and minimal lengths
            dy = dtypes.OPERATOR_DTYPES[k]
            cases.append(preset_case(prefix, tags, shape=(1, 2, 3, 64), broadcast=BROADCASTS[(k + 5) % 8],
                                     partial_slice=piece, mode=mode, dtype=dy))
        cases += [
            preset_case(prefix, tags, "rope_bf16", shape=(1, 64, 2, 128), broadcast="1S1D", mode=mode,
                        dtype="bfloat16", inputs=rope_inputs()),
            preset_case(prefix, tags, "rope_partial_fp16_fp32", shape=(2, 32, 2, 128), broadcast="1S1D",
                        partial_slice=(0, 64), mode=mode, dtype="float16", cos_dtype="float32", inputs=rope_inputs()),
            preset_case(prefix, tags, "D1024_fp32", shape=(1, 2, 2, 1024), broadcast="11ND", mode=mode),
            preset_case(prefix, tags, "cancellation_fp32", shape=(2, 2, 2, 32), cos_shape=(1, 1, 1, 16),
                        partial_slice=(8, 24), mode=mode, **cancellation(mode)),
        ]
    return document(cases, header=header("future_modes", "modes half, quarter and interleave-half; skipped "
                                                         "on today's target, run with --supported-modes 0,1,2,3"))


def _worked_example() -> dict:
    """The document of the worked example (``cases/worked_example.yaml``)."""
    case = case_from_options(name="worked_example", tags=("example",), **WORKED_EXAMPLE)
    comment = ("the worked example: interleave, slice [2, 6), D = 8;\n"
               "expected dx row: 1, 2, 2.3, 2.1, 5.9, 3.3, 7, 8")
    return document([case], header=["The worked example of upstream's interleave formula: dy 1..8, cos 0.5..0.8, "
                                    "sin 0.1..0.4, slice [2, 6).",
                                    "Do not edit by hand: regenerate with python -m prmg_cli.cases.presets "
                                    "(tests check it)."],
                    comments={case["name"]: comment})


def _cover() -> dict:
    """The ``cover`` preset (``prmg_cli/cases/cover_preset.py``)."""
    from .cover_preset import cover_document

    return cover_document()


def _models() -> dict:
    """The ``models`` preset (``prmg_cli/cases/models_preset.py``)."""
    from .models_preset import models_document

    return models_document()


_PRESET_MAKERS = {"smoke": _smoke, "full": _full, "edge": _edge, "negative": _negative, "special": _special,
                  "forward": _forward, "users": _users, "checks": _checks, "perf": _perf,
                  "future_modes": _future_modes, "cover": _cover, "models": _models}
PRESETS = tuple(_PRESET_MAKERS)


def _checked(doc: dict) -> dict:
    """``doc`` after ``refuse_invalid`` has checked its cases, each given the builds its expectation holds for
    (``with_builds``)."""
    refuse_invalid(doc["cases"])
    doc["cases"] = with_builds(doc["cases"])
    return doc


def preset(name: str, tags: Sequence[str] = (), exclude_tags: Sequence[str] = ()) -> dict:
    """The document of preset ``name`` (one of ``PRESETS``), every case checked by the loader and the
    operator's constraints; with ``tags``, only the cases carrying one of them, and never one carrying one of
    ``exclude_tags`` (the header's command says so)."""
    if name not in _PRESET_MAKERS:
        raise PrmgError(f"unknown preset {name!r}{suggest(name, PRESETS)}; use one of {', '.join(PRESETS)}",
                        field="preset")
    doc = _checked(_PRESET_MAKERS[name]())
    if not tags and not exclude_tags:
        return doc
    wanted, unwanted = set(tags), set(exclude_tags)
    kept = [case for case in doc["cases"] if (not wanted or wanted.intersection(case.get("tags", ())))
            and not unwanted.intersection(case.get("tags", ()))]
    if not kept:
        raise PrmgError(f"no case of preset {name!r} is left by --tag and --exclude-tag", field="preset")
    command = f"prmg gen-case --preset {name}"
    options = "".join(f" --tag {tag}" for tag in tags) + "".join(f" --exclude-tag {tag}" for tag in exclude_tags)
    lines = [line.replace(f"`{command}`", f"`{command}{options}`") for line in doc.get("header", [])]
    comments = {case_name: text for case_name, text in doc.get("comments", {}).items()
                if case_name in {case["name"] for case in kept}}
    return document(kept, defaults=doc.get("defaults"), header=lines, comments=comments)


def shipped_documents() -> dict[str, dict]:
    """Every generated file shipped under ``cases/``: relative path -> document (``ttk_upstream.yaml`` and
    ``ttk_upstream_e2e.yaml``, imported from the upstream CSVs by ``prmg_cli.cases.ttk``, are not among them; the
    models' long cases are made on demand)."""
    from .models_preset import LONG_TAG

    files = {"smoke.yaml": preset("smoke")}
    files.update({f"full/{part}.yaml": _checked(_full_part(part)) for part in FULL_PARTS})
    files.update({"edge.yaml": preset("edge"), "negative.yaml": preset("negative"), "special.yaml": preset("special"),
                  "forward.yaml": preset("forward"), "checks.yaml": preset("checks"), "users.yaml": preset("users"),
                  "future_modes.yaml": preset("future_modes"), "worked_example.yaml": _worked_example(),
                  "cover.yaml": preset("cover"), "models.yaml": preset("models", exclude_tags=(LONG_TAG,))})
    return files


def write_shipped(cases_dir: str | Path) -> list[Path]:
    """Write ``shipped_documents()`` below ``cases_dir``; returns the paths written. ``python -m prmg_cli.cases.presets
    [DIR]`` does it for ``cases/`` (or DIR): how the shipped files are regenerated after a change here."""
    written = []
    for relative, doc in shipped_documents().items():
        path = Path(cases_dir) / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dump_yaml(doc), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    import sys

    for written in write_shipped(sys.argv[1] if len(sys.argv) > 1 else "cases"):
        print(f"wrote {written}")
