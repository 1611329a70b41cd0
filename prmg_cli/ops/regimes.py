"""The regime classes of each operator: where a kernel's code changes behaviour, one class per regime.

``regimes(op)`` is the table ``prmg coverage`` reports against: axes (dtype pair, rotary mode, cos/sin
layout, format, each count of the shape, D, the slice, cos/sin varying along each broadcast axis, values
(ordinary and special), the expected-error phase, and what a case is on another chip or upstream build), each a
list of ``Regime`` classes with a one-line reason and a test on a case's ``Facts`` (``prmg_cli/cases/coverage.py``
computes them and counts the cases of each class).

Where the numbers come from:

- **Cores and tiles.** The emulator splits the B*S*N rows over ``EMU_CORES`` vector cores (``floor(rows /
  cores)`` each, the remainder one each to the first cores) and computes a row's slice in tiles of
  ``EMU_TILE`` lanes (``runners/emulator/kernel.h``, read here so the two never disagree). The 950's own
  count is read at run time (the 950 tiling of InplacePartialRotaryMul takes ``GetCoreNumAiv()`` as its
  block dim and splits B*S, or S when cos's B is 1, over it; when that is at most half the cores it splits N
  too: ops-transformer ``posembedding/inplace_partial_rotary_mul/op_host/inplace_rope_regbase_tiling_ab.cpp``).
  The docs searched do not state the 950's vector core count; upstream's tiling unit test of the grad runs the
  950 tiling with 64 (``k950CoreNum = 64``, the core count it hands the "Ascend950" platform: ops-transformer
  ``posembedding/inplace_partial_rotary_mul_grad/tests/ut/op_host/test_inplace_partial_rotary_mul_grad_tiling.cpp``;
  the grad's tiling too takes ``GetCoreNumAiv()``, ``op_host/inplace_partial_rotary_mul_grad_tiling_base_arch35
  .cpp``). The rows classes sit around 1, 2 and 3 full rounds of both counts, the emulator's and that one.
- **32-byte alignment.** Data of the Vector unit in the Unified Buffer must be 32-byte aligned (Huawei,
  "Compute Units", https://support.huawei.com/enterprise/en/doc/EDOC1100164852/69d2b4ec/compute-units;
  Ascend C "General Restrictions": Unified Buffer 32-byte aligned), and the 950 tiling rounds the slice
  length up to 32 bytes (``dAlign = CeilAlign(L, 32 / itemsize)``, ``BLOCK_SIZE = 32`` in
  ``inplace_rope_regbase_tiling_base.cpp``).
- **Counter widths.** A vector instruction works on 8 blocks of 32 bytes (256 bytes: 64 float32 or 128
  16-bit lanes) per repeat and repeats at most 255 times (an 8-bit count; Ascend C "Common Parameters",
  https://www.hiascend.com/document/detail/en/canncommercial/800/opdevg/Ascendcopdevg/atlas_ascendc_10_0020.html);
  one copy moves at most 4095 blocks (12 bits: ``MAX_COPY_BLOCK_COUNT = 4095`` in the 950 tiling);
  strides and repeat strides of the 950's register loads are ``uint16_t`` (16 bits: asc-devkit's
  ``asc_loadalign(..., uint16_t block_stride, uint16_t repeat_stride, ...)`` for Ascend 950PR/950DT).

To add a class: add a ``Regime`` to the axis it belongs to below (its test reads ``Facts``; add a field to
``Facts`` and compute it in ``coverage.facts`` when no field says what the class needs), then regenerate
the cover suite (``prmg gen-case --preset cover``); its test fails when no candidate covers the new class.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from typing import Callable

from . import OPERATORS
from .. import dtypes
from ..results import plural
from ..vocab import MODE_NAMES, TENSORS
from .grad import CHIP_REASONS, MAX_D, SUPPORTED_FORMATS
from .targets import BUILDS, LATEST_BUILD, MEMBASE_SOCS

PHASE = "phase"                   # the axis of the expected-error classes: only negative cases count there
CHIP, BUILD = "chip", "build"     # what a case is on another chip, on another build: every case counts there
VALUE_KINDS = ("ordinary", "large", "subnormal", "+0", "-0", "NaN", "-NaN", "NaN payload", "+Inf", "-Inf")
VALUE_PLACES = {"dy_in": "dy in slice", "dy_out": "dy outside", "tables": "cos/sin"}


@dataclass(frozen=True)
class Facts:
    """What one case exercises, as the classes see it (``coverage.facts`` computes it).

    A negative case (``expects_error``) has only ``op`` and ``first_rules``: the rules (``Violation.rule``) it
    breaks first on today's target and on a target
    implementing every mode. A pass case has the rest: the dtypes, mode, cos/sin layout
    (``vocab.broadcast_pattern``, None when it follows none), format, whether dy is strided, dy's shape (B, S,
    N, D) and rows, cos's rows (its B*S*N), the slice and its length, dy's item size, the axes of B, S, N along
    which cos and sin both vary (``varies``), the value kinds its inputs hold as ``(place, kind)``
    pairs (``values``: place a key of ``VALUE_PLACES``, kind one of ``VALUE_KINDS``), the tensors at a storage
    offset (the contiguous ones; the strided ones apart; those whose offset in bytes is off a 32-byte block),
    whether cos or sin is strided, the tensors viewed
    transposed and expanded, what its partialSlice is, whether its sin tells partners apart, and the heads of a row
    the forward's A2/A3 decode kernel takes (``forward.membase_decode_heads``).
    Every case has ``chip_rules`` (the rule it breaks first on a chip with rules of its own: the forward's A2/A3
    tiling) and ``builds_differ`` (the upstream builds on which it earns another status than on the latest).
    """

    op: str
    expects_error: bool = False
    first_rules: tuple[str, ...] = ()
    dtype: str = ""
    cos_dtype: str = ""
    mode: int = 1
    layout: str | None = None
    format: str = "ND"
    strided: bool = False
    B: int = 0
    S: int = 0
    N: int = 0
    D: int = 0
    cos_rows: int = 0
    start: int = 0
    end: int = 0
    itemsize: int = 4
    varies: frozenset = frozenset()
    values: frozenset = frozenset()
    offsets: frozenset = frozenset()      # the contiguous tensors (dy, cos, sin) viewed at a non-zero storage offset
    strided_tables: bool = False          # cos or sin not contiguous
    strided_offsets: frozenset = frozenset()  # the non-contiguous tensors viewed at a non-zero storage offset
    offset_off_block: frozenset = frozenset()  # the tensors whose storage offset is no whole number of 32-byte blocks
    transposed: frozenset = frozenset()   # the tensors whose view walks its storage out of axis order (case.transposed)
    expanded: frozenset = frozenset()     # the tensors with a stride-0 axis of length > 1 (case.expanded_axes)
    length_one_strided: frozenset = frozenset()  # contiguous, but not at C-order strides on an axis of length 1
    decode_heads: int = 0                 # the heads a row gives the forward's A2/A3 decode kernel (0: another kernel)
    tables_unlike: bool = False           # cos and sin both not contiguous, at other strides (axes of length > 1)
    slice_list: str = "pair"              # what partialSlice is: "pair", "null" (NULL), "longer" (3+ values)
    partners_differ: bool = False         # sin differs between the two lanes of some pair (reference.sin_partners)
    chip_rules: tuple[str, ...] = ()      # the rules broken first on the chips with rules of their own
    builds_differ: frozenset = frozenset()  # the builds giving another status than the latest (targets.BUILDS)
    rows: int = field(init=False)         # dy's rows, B*S*N
    length: int = field(init=False)       # the slice length L = end - start

    def __post_init__(self) -> None:
        object.__setattr__(self, "rows", self.B * self.S * self.N)
        object.__setattr__(self, "length", self.end - self.start)

    def aligned(self, elements: int) -> bool:
        """Whether ``elements`` of dy's dtype are a whole number of 32-byte blocks."""
        return elements * self.itemsize % ALIGN_BYTES == 0


@dataclass(frozen=True)
class Regime:
    """One class: its axis, its name, why a kernel behaves differently there, and whether a case's
    ``Facts`` fall in it."""

    axis: str
    name: str
    reason: str
    test: Callable[[Facts], bool]

    @property
    def key(self) -> str:
        """``axis: name``, as reports name the class."""
        return f"{self.axis}: {self.name}"


ALIGN_BYTES = 32            # the Unified Buffer's alignment (module docstring)
VECTOR_LANES = 16           # lanes of a 32-byte block of a 16-bit dtype
COUNTER_BITS = (8, 12, 16)  # repeat counts, copy block counts, uint16 strides (module docstring)
TILING_TEST_CORES = 64      # the 950's vector cores in upstream's tiling unit test (module docstring)
CORE_ROUNDS = (1, 2, 3)     # full rounds of the cores whose neighbours are rows classes


@cache
def emulator_layout() -> tuple[int, int, int]:
    """(vector cores, tile lanes, unified buffer bytes) of the emulator's kernel layout: ``EMU_CORES``, ``EMU_TILE``
    and ``EMU_UB_BYTES`` of ``runners/emulator/kernel.h``."""
    from ..files import emulator_sources

    text = (emulator_sources() / "kernel.h").read_text(encoding="utf-8")
    return tuple(int(re.search(rf"#define {name} (\d+)", text).group(1))
                 for name in ("EMU_CORES", "EMU_TILE", "EMU_UB_BYTES"))


def ub_pass_rows(length: int, itemsize: int, cos_itemsize: int) -> int:
    """The rows one UB pass of a core holds for a slice of ``length`` lanes of dy's ``itemsize`` bytes and cos's
    ``cos_itemsize``: upstream's BAB tiling's budget (a quarter of the unified buffer for each of dy in, dx out and
    their double buffers) with one cos/sin row per dy row, ``floor(floor32(UB / 4) / dy_row / (1 + table_rows))``,
    ``dy_row`` the slice's bytes rounded up to 32, ``table_rows = max(1, ceil(cos_row / dy_row))``; at least 1 (the
    emulator's ``ub_pass_rows``). That is the pass of one head: with N heads to a table row upstream's ``SplitUb``
    holds more dy rows (runners/emulator/README.md)."""
    _, _, ub = emulator_layout()
    dy_row = -(-length * itemsize // ALIGN_BYTES) * ALIGN_BYTES
    cos_row = -(-length * cos_itemsize // ALIGN_BYTES) * ALIGN_BYTES
    return max(1, ub // 4 // ALIGN_BYTES * ALIGN_BYTES // dy_row // (1 + max(1, -(-cos_row // dy_row))))


# ---------------------------------------------------------------------------------------------------
# The axes


def _dtype_axis(spec) -> list[Regime]:
    """One class per (dy, cos) dtype pair the operator accepts."""
    found = []
    for dy, cos in spec.dtype_pairs:
        label = f"{dtypes.lookup(dy).short}/{dtypes.lookup(cos).short}"
        widths = dtypes.bit_width(cos) - dtypes.bit_width(dy)
        reason = (f"{dy} data and tables: the same-precision kernel" if dy == cos else
                  f"{dy} data with {cos} tables: a mixed-precision path, tables "
                  f"{'wider than' if widths > 0 else 'narrower than' if widths < 0 else 'as wide as'} the data")
        found.append(Regime("dtypes", label, reason, lambda f, pair=(dy, cos): (f.dtype, f.cos_dtype) == pair))
    return found


_MODE_REASONS = {0: "pairs (j, j + L/2): rotate_half", 1: "adjacent pairs (2j, 2j + 1): rotate_every_two",
                 2: "the half rule on each half of the slice (L a multiple of 4)",
                 3: "read interleaved, written in half layout (DeepSeek)"}


def _mode_axis() -> list[Regime]:
    return [Regime("mode", name, _MODE_REASONS[code], lambda f, code=code: f.mode == code)
            for code, name in MODE_NAMES.items()]


# The 950 tiling's templates per cos/sin layout (JudgeLayoutByShape in inplace_rope_regbase_tiling_base.cpp).
_LAYOUT_REASONS = {
    "BSND": "cos/sin as large as dy: no broadcast (the NO_BROADCAST template)",
    "111D": "one cos/sin row for every row (the BROADCAST_BSN template)",
    "1S1D": "one row per position, shared over B and N (the BSND template)",
    "1SND": "per (s, n), shared over B (the BNSD template, S and N folded)",
    "B1ND": "per (b, n), shared over S (the BNSD template)",
    "BS1D": "per (b, s), shared over N (the SBND template)",
    "11ND": "per head, shared over B and S (the BNSD template)",
    "B11D": "per batch, shared over S and N (the SBND template): decode with per-request positions",
}


def _layout_axis(spec) -> list[Regime]:
    return [Regime("layout", pattern, _LAYOUT_REASONS[pattern], lambda f, p=pattern: f.layout == p)
            for pattern in spec.layouts]


def _format_axis() -> list[Regime]:
    return [Regime("format", name, "a format nnopbase takes for an ND operator" if name != "ND" else
                   "the operator's own format", lambda f, n=name: f.format == n) for name in SUPPORTED_FORMATS]


def _count_classes(axis: str, count: Callable[[Facts], int], what: str) -> list[Regime]:
    """1, small odd, and 2**k - 1, 2**k, 2**k + 1 for the counter widths k of ``COUNTER_BITS``."""
    found = [Regime(axis, "1", f"a single {what}: loops of one trip, the axis may be folded away",
                    lambda f: count(f) == 1),
             Regime(axis, "small odd", f"an odd {what} count from 3 to 15: no split into halves or pairs",
                    lambda f: 3 <= count(f) <= 15 and count(f) % 2 == 1)]
    widths = {8: "an 8-bit repeat count (at most 255 repeats)", 12: "a 12-bit copy block count (at most 4095)",
              16: "a 16-bit counter or stride"}
    for bits in COUNTER_BITS:
        top = 2 ** bits
        found += [
            Regime(axis, f"{top - 1}", f"the largest {what} count that fits {widths[bits]}",
                   lambda f, v=top - 1: count(f) == v),
            Regime(axis, f"{top}", f"one past {widths[bits]}: a counter of that width wraps to 0",
                   lambda f, v=top: count(f) == v),
            Regime(axis, f"{top + 1}", f"two past {widths[bits]}: wraps to 1, a tail of one",
                   lambda f, v=top + 1: count(f) == v),
        ]
    return found


def core_counts() -> dict[int, str]:
    """The vector core counts rows are split over, each with whose it is: the emulator's and the 950's of upstream's
    tiling test (module docstring; one entry when they are equal)."""
    cores, _, _ = emulator_layout()
    return {cores: "the emulator's", TILING_TEST_CORES: "the 950's in upstream's tiling test"}


def share_bounds(count: int, cores: int) -> list[tuple[int, int]]:
    """The (first, last) unit of each core's share of ``count`` units split over ``cores``, each way a kernel splits
    them: ``floor(count / cores)`` each with the remainder one each to the first cores after every full share (the
    emulator), ``ceil(count / cores)`` each and what is left to the last core used (upstream's 950 tilings:
    ``blockFactor = CeilDiv(count, cores)``, ``blockNum = CeilDiv(count, blockFactor)``), and ``floor`` each with one
    more on each of the first ``count % cores`` cores; every unit of the first way's tail is one share of its own."""
    return list(dict.fromkeys(bound for split in splits(count, cores).values() for bound in split))


def splits(count: int, cores: int) -> dict[str, list[tuple[int, int]]]:
    """``share_bounds`` by the way a kernel splits ``count`` units over ``cores``: ``floor`` (the emulator's full
    shares; its tail, ``tail``, one unit a share), ``ceil`` (upstream's 950 tilings) and ``front`` (one more on each of
    the first ``count % cores`` cores), each a list of the shares' (first, last) units."""
    share, remainder = divmod(count, cores)
    factor = -(-count // cores)
    starts = [core * share + min(core, remainder) for core in range(cores + 1)]
    return {"floor": [(core * share, (core + 1) * share - 1) for core in range(cores) if share],
            "tail": [(unit, unit) for unit in range(cores * share, count)],
            "ceil": [(start, min(start + factor, count) - 1) for start in range(0, count, factor)] if factor else [],
            "front": [(first, last - 1) for first, last in zip(starts, starts[1:]) if last > first]}


def core_rows() -> dict[int, str]:
    """Rows around the core counts: ``rounds * cores`` and its two neighbours for each count and each of
    ``CORE_ROUNDS``, each with the reason it is a class."""
    found = {}
    for cores, whose in core_counts().items():
        for rounds in CORE_ROUNDS:
            full, whole = rounds * cores, plural(rounds, "full round")
            found.setdefault(full - 1, f"{full - 1} rows over {cores} cores ({whose}): one short of {whole}")
            found.setdefault(full, f"{plural(rounds, 'row')} on each of {cores} cores ({whose}), no remainder")
            found.setdefault(full + 1, f"one remainder row after {whole} of {cores} cores ({whose}): a core tail")
    return found


def _rows_axis() -> list[Regime]:
    """dy's rows: the counter classes, and the split over the vector cores (``core_rows``)."""
    rows = _count_classes("rows", lambda f: f.rows, "row")
    rows += [Regime("rows", f"{count}", reason, lambda f, v=count: f.rows == v)
             for count, reason in core_rows().items()]
    half = TILING_TEST_CORES // 2
    rows.append(Regime("rows", f"B*S <= {half}, N > 1", f"B*S at most half the 950's {TILING_TEST_CORES} cores: its "
                       "tiling splits the heads over the cores too", lambda f: f.B * f.S <= half and f.N > 1))
    most = max(core_counts())
    rows.append(Regime("rows", "a second UB pass", f"more rows on each of {most} cores than one pass of its unified "
                       "buffer holds (ub_pass_rows), cos/sin varying along them: what a core's second and later "
                       "passes load and address", lambda f: f.length > 0 and bool(f.varies) and f.rows // most
                       > ub_pass_rows(f.length, f.itemsize, dtypes.lookup(f.cos_dtype).numpy.itemsize)))
    return rows


def _d_axis(op: str) -> list[Regime]:
    def around(top: int) -> list[Regime]:
        return [Regime("D", f"{top - 2}..{top - 1}", f"a pair short of {top}: the last 256-byte repeat and "
                       "32-byte block of a row are partial", lambda f: top - 2 <= f.D <= top - 1),
                Regime("D", f"{top}", f"{top} elements: whole 256-byte repeats ({top * 4 // 256} in float32, "
                       f"{top * 2 // 256} in 16-bit dtypes)", lambda f: f.D == top),
                Regime("D", f"{top + 1}..{top + 2}", f"a pair past {top}: one more, partial, repeat per row",
                       lambda f: top + 1 <= f.D <= top + 2)]

    return [Regime("D", "2", "the smallest row: one pair", lambda f: f.D == 2),
            *around(256), *around(512),
            Regime("D", f"{MAX_D}", "the largest D the tiling takes", lambda f: f.D == MAX_D),
            Regime("D", "rows not 32-byte multiples", "D * itemsize % 32 != 0: rows do not start on 32-byte "
                   "blocks (a kernel that pads rows to 32 bytes misaddresses them)", lambda f: not f.aligned(f.D)),
            Regime("D", "rows 32-byte multiples", "every row starts on a 32-byte block", lambda f: f.aligned(f.D)),
            *([] if "D odd" in OPERATORS[op].rule_reasons else [
                Regime("D", "odd, the slice ending at D", "an odd D (the tiling has no D parity rule, where the "
                       "forward's refuses one): rows start at alternate parities and the slice's last pair ends the "
                       "row; a kernel assuming an even D (pairs loaded two lanes at a time from each row's start) "
                       "misaddresses every other row", lambda f: f.D % 2 == 1 and f.length > 0 and f.end == f.D)])]


def _slice_axis() -> list[Regime]:
    _, tile, _ = emulator_layout()
    some = lambda test: lambda f: f.length > 0 and test(f)  # noqa: E731 (classes of a non-empty slice)
    return [
        Regime("slice", "empty", "L = 0: the tiling returns before the kernel; dy must come back untouched",
               lambda f: f.length == 0),
        Regime("slice", "full [0, D)", "no pass-through part: the whole row is rewritten",
               some(lambda f: f.start == 0 and f.end == f.D)),
        Regime("slice", "at 0, before D", "a pass-through tail after the slice",
               some(lambda f: f.start == 0 < f.D - f.end)),
        Regime("slice", "after 0, ending at D", "a pass-through head before the slice",
               some(lambda f: f.start > 0 and f.end == f.D)),
        Regime("slice", "inside", "pass-through parts on both sides", some(lambda f: 0 < f.start and f.end < f.D)),
        Regime("slice", "start 32-byte aligned", "the slice starts on a 32-byte block (start > 0)",
               some(lambda f: f.start > 0 and f.aligned(f.start))),
        Regime("slice", "start not 32-byte aligned", "start * itemsize % 32 != 0: UB data must be 32-byte "
               "aligned, so the first block mixes pass-through and slice", some(lambda f: not f.aligned(f.start))),
        Regime("slice", "end 32-byte aligned", "the slice ends on a 32-byte block before D",
               some(lambda f: f.end < f.D and f.aligned(f.end))),
        Regime("slice", "end not 32-byte aligned", "the slice's last block is shared with pass-through data",
               some(lambda f: not f.aligned(f.end))),
        Regime("slice", "L 32-byte multiple", "the tiling's aligned length equals L",
               some(lambda f: f.aligned(f.length))),
        Regime("slice", "L not 32-byte multiple", "the tiling pads L up to 32 bytes: padding lanes must not "
               "be written back", some(lambda f: not f.aligned(f.length))),
        Regime("slice", "start >= 256", "a lane offset of 256 or more elements (past 8 bits)",
               some(lambda f: f.start >= 256)),
        Regime("slice", "start >= 512", "a lane offset of 512 or more elements (2 KiB of float32)",
               some(lambda f: f.start >= 512)),
        Regime("slice", "L = 2", "a single pair", lambda f: f.length == 2),
        Regime("slice", f"L % {VECTOR_LANES} != 0", f"a {VECTOR_LANES}-lane vector (32 bytes of a 16-bit dtype) "
               "ends inside the slice", some(lambda f: f.length % VECTOR_LANES != 0)),
        Regime("slice", f"L < {tile}", f"one partial tile of the emulator's {tile} lanes",
               some(lambda f: f.length < tile)),
        Regime("slice", f"L = k*{tile}", f"whole tiles of {tile} lanes", some(lambda f: f.length % tile == 0)),
        Regime("slice", f"L > {tile}, partial tile", "whole tiles then a partial one: the tail tile's cos/sin "
               "offsets", lambda f: f.length > tile and f.length % tile != 0),
    ]


def _varies_axis() -> list[Regime]:
    return [Regime("cos/sin vary", f"along {axis}", f"cos/sin of full {axis} (dy's {axis} > 1) that really differ "
                   f"along it: a kernel reading index 0 of {axis} is caught only then",
                   lambda f, axis=axis: axis in f.varies) for axis in "BSN"]


_VALUE_REASONS = {
    "ordinary": "normal numbers below the top binade: the arithmetic every other value class departs from",
    "large": "the top binade of the dtype: c*x + s*x' overflows to Inf where the products add up",
    "subnormal": "below the dtype's normals: flush-to-zero or gradual underflow",
    "+0": "a zero: products and sums of zeros",
    "-0": "a negative zero: outside the slice it must keep its sign (x + 0.0 turns -0.0 into +0.0); inside, "
          "+0 and -0 compare equal (c*g - s*g' and -(s*g' - c*g), both right, give zeros of either sign)",
    "NaN": "a NaN: it must reach every result it touches",
    "-NaN": "a NaN with its sign bit set",
    "NaN payload": "a NaN whose payload is not the default (or a signalling one): rounding by bit tricks "
                   "can turn it into Inf",
    "+Inf": "+Inf: Inf * 0 and Inf - Inf are NaN",
    "-Inf": "-Inf: Inf * 0 and Inf - Inf are NaN",
}


def _values_axis() -> list[Regime]:
    return [Regime("values", f"{kind}, {label}", _VALUE_REASONS[kind] + (" (outside: must come back bit for "
                   "bit)" if place == "dy_out" else ""), lambda f, key=(place, kind): key in f.values)
            for place, label in VALUE_PLACES.items() for kind in VALUE_KINDS]


# The rules of each operator (``OperatorSpec.rule_reasons``) are its phase classes, but for those no case file
# can break first: a negative dim is refused when the file is read, and a dim of 0 makes the call a no-op.
UNREACHABLE_RULES = frozenset({"dim <= 0"})


def _phase_axis(op: str) -> list[Regime]:
    return [Regime(PHASE, name, reason, lambda f, name=name: name in f.first_rules)
            for name, reason in OPERATORS[op].rule_reasons.items() if name not in UNREACHABLE_RULES]


def _storage_axis(op: str) -> list[Regime]:
    """Each tensor viewed at a storage offset (every operator takes one: it is contiguous); an operator that takes a
    non-contiguous x or cos/sin (``auto_contiguous``: its layer copies them) has a class of each, and of each at a
    storage offset too (the copy's own address arithmetic, not GetData's); the others refuse one (phase classes) and
    take a contiguous view at another stride on an axis of length 1."""
    found = [Regime("storage", f"{tensor} at an offset", f"a contiguous {tensor} view at a storage offset (torch's "
                    f"x[1:], vllm's in-place views): the kernel must work from the view's first element, not the "
                    f"storage's", lambda f, tensor=tensor: tensor in f.offsets) for tensor in TENSORS]
    found += [Regime("storage", "an offset off the 32-byte block", "a view whose offset in bytes is no whole number of "
                     "32-byte blocks (torch's x[1:] of a row of 7 float16): nnopbase takes any offset (no alignment "
                     "check; GetData() adds offset x element size), so the kernel's first GM address is unaligned; a "
                     "kernel rounding its addresses to the block reads and writes the elements before the view",
                     lambda f: bool(f.offset_off_block)),
              Regime("storage", "dy at an offset, dtypes mixed", "a dy of one element size over tables of another "
                     "(bfloat16 q over float32 cos and sin, vllm-ascend's in-place views), dy at a storage offset: "
                     "each address takes its own tensor's element size (GetData: offset x that size); a kernel or "
                     "layer working the three addresses out with one size (the tables') reads and writes dy elsewhere",
                     lambda f: "dy" in f.offsets | f.strided_offsets
                     and dtypes.bit_width(f.dtype) != dtypes.bit_width(f.cos_dtype)),
              Regime("storage", "cos/sin broadcast, at an offset", "a broadcast table (cos B, S or N of 1 where dy's "
                     "is larger) viewed at a storage offset: the rows it repeats must be read from the view's first "
                     "element, not the storage's", lambda f: f.cos_rows < f.rows and bool({"cos", "sin"} & (
                         f.offsets | f.strided_offsets)))]
    if not OPERATORS[op].auto_contiguous:
        found.append(Regime("storage", "a length-1 axis at another stride", "a contiguous view whose stride on an axis "
                            "of length 1 is not the C-order one (a decode step's q.transpose(1, 2) of a BNSD q at "
                            "S = 1): op::IsContiguous skips such an axis, so the operator that refuses a "
                            "non-contiguous input must take it", lambda f: bool(f.length_one_strided)))
    if OPERATORS[op].auto_contiguous:
        found += [Regime("storage", "x not contiguous", "AutoContiguous: the generated layer copies x into the "
                         "workspace, runs the kernel and copies it back", lambda f: f.strided),
                  Regime("storage", "cos/sin not contiguous", "AutoContiguous: the generated layer copies the tables "
                         "into the workspace before the kernel reads them", lambda f: f.strided_tables),
                  Regime("storage", "x not contiguous, at an offset", "a strided x view at a storage offset "
                         "(vllm-ascend's o_proj_input[:, heads].unsqueeze(1)): the copies in and back must start at "
                         "the view, which GetData's offset does not place for them",
                         lambda f: "dy" in f.strided_offsets),
                  Regime("storage", "cos/sin not contiguous, at an offset", "a strided table at a storage offset "
                         "(vLLM's cos_sin.chunk(2, -1): sin at offset L, rows 2L apart): the copy in must start at the "
                         "view", lambda f: bool({"cos", "sin"} & f.strided_offsets)),
                  Regime("storage", "cos/sin not contiguous, unlike", "cos and sin both strided, each its own way "
                         "(cos a slice of a [.., D] cache, sin a chunk of a [.., 2L] one): each table's copy in must "
                         "walk its own strides", lambda f: f.tables_unlike),
                  Regime("storage", "x transposed", "a permuted x view (q.transpose(1, 2) of a BNSD q: [B, S, N, D] "
                         "at strides [N*S*D, D, S*D, 1]): dense but not contiguous, the copies in and back must walk "
                         "the view's axes, not the storage's order", lambda f: "dy" in f.transposed),
                  Regime("storage", "cos/sin expanded", "a table expanded along an axis (torch's expand: stride 0, "
                         "as cos[None, :, None].expand(B, -1, N, -1)): the copy in must repeat its one storage row "
                         "along the axis", lambda f: bool({"cos", "sin"} & f.expanded))]
    return found


def _decode_kernel_axis(op: str) -> list[Regime]:
    """An operator that runs on the A2/A3 chips (the forward): its membase tiling's decode kernel, whose one vector
    instruction per table multiplies a row's heads with an 8-bit repeat count (``forward.membase_decode_heads``)."""
    if not MEMBASE_SOCS & set(OPERATORS[op].socs):
        return []
    return [Regime("A2/A3 decode kernel", "256+ heads", "a decode call the A2/A3 membase tiling sends to its decode "
                   "kernel (cos [B, 1, 1, L], x's S or N 1, a slice of L <= 64 lanes in whole 32-byte blocks) with "
                   "256 heads or more a row: one instruction's 8-bit repeat count over the heads wraps (upstream's "
                   "kernel until 5889c853)",
                   lambda f: f.decode_heads >= 256)]


def _slice_list_axis() -> list[Regime]:
    """The partialSlice argument as other callers pass it (``ops/grad.py`` rules 2 and 5b)."""
    return [Regime("slice list", "NULL", "a NULL partialSlice: the generated layer passes the op definition's default "
                   "{0, 0}, an empty slice (nothing may change)", lambda f: f.slice_list == "null"),
            Regime("slice list", "3+ values", "a longer list: the tiling reads its first two values unchecked",
                   lambda f: f.slice_list == "longer")]


def _partners_axis() -> list[Regime]:
    return [Regime("partners", "sin differs within pairs", "sin differs between the two lanes of a pair: a kernel "
                   "taking each element's own sin where its partner's belongs is caught only then (a RoPE table is "
                   "alike at both lanes)", lambda f: f.partners_differ)]


def _chip_axis(op: str) -> list[Regime]:
    """Each rule only another chip's tiling has (``OperatorSpec.chip_rules``: the forward's A2/A3 membase rules): the
    cases breaking it first there, which a run on that chip judges by its rules (``constraints.on_chip``). A chip
    the op definition lacks is a run's target (the run stops), not a case's class."""
    return [Regime(CHIP, name, f"{reason}: a run on that chip judges the case by it",
                   lambda f, name=name: name in f.chip_rules)
            for name, reason in OPERATORS[op].chip_rules.items() if name not in CHIP_REASONS]


def _build_axis(op: str) -> list[Regime]:
    """Each upstream build before the latest that the operator's rules tell apart (``OperatorSpec.builds``): the
    cases earning another status there, which a toolkit of that (or an unknown) build reports as depending on the
    build (``targets``)."""
    return [Regime(BUILD, f"another status on {build}", f"{BUILDS[build]}: the case's status there differs from "
                   f"{LATEST_BUILD}'s (an empty cos, a rule base checks for an empty slice, or the range first)",
                   lambda f, build=build: build in f.builds_differ)
            for build in OPERATORS[op].builds if build != LATEST_BUILD]


@cache
def regimes(op: str) -> tuple[Regime, ...]:
    """Every class of operator ``op`` (a key of ``OPERATORS``), axis by axis."""
    spec = OPERATORS[op]
    return (*_dtype_axis(spec), *_mode_axis(), *_layout_axis(spec), *_format_axis(), *_storage_axis(op),
            *_count_classes("B", lambda f: f.B, "batch"), *_count_classes("S", lambda f: f.S, "position"),
            *_count_classes("N", lambda f: f.N, "head"), *_rows_axis(),
            *_count_classes("cos rows", lambda f: f.cos_rows, "cos/sin row"), *_d_axis(op), *_slice_axis(),
            *_decode_kernel_axis(op), *_slice_list_axis(), *_varies_axis(), *_partners_axis(), *_values_axis(),
            *_phase_axis(op), *_chip_axis(op), *_build_axis(op))

