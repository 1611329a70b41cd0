"""A numpy model of the device kernel: a correct one and faulty variants, for testing the comparator.

The model is written independently of ``prmg_cli.ops.reference`` (its own lane map), so tests comparing
the two are meaningful. Notation of ``shared/docs/operator.md``: ``g = dy[..., start:end]``, slice
lane ``j`` (0-based at ``start``) gets::

    dx[j] = c[own[j]] * g[own[j]] + sign[j] * s[partner[j]] * g[partner[j]]

where ``own``/``partner``/``sign`` come from ``lane_map(mode, L)``. The correct kernel does what the
operator promises: inputs widened exactly to float32, the two products and their sum each rounded in
float32 (numpy does not fuse multiply-add), the result rounded once to dy's dtype.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

FAULTS = ("sign", "own_sin", "half_pairing", "shift_slice", "ignore_broadcast", "skip_last_row",
          "skip_tail", "clobber_passthrough", "bf16_compute", "noop", "nan", "cos_cast", "truncate", "negate_sin",
          "swap_tables")


def lane_map(mode: int, length: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(own, partner, sign)`` per output lane of a slice of ``length`` for rotary mode 0..3.

    half: lane j < L/2 pairs with j + L/2 (+), else with j - L/2 (-); quarter: the half rule inside
    each half of the slice; interleave: 2k with 2k+1 (+), 2k+1 with 2k (-); interleave-half: output
    2k = c[k]g[k] + s[k+L/2]g[k+L/2], output 2k+1 = c[k+L/2]g[k+L/2] - s[k]g[k].
    """
    lanes = np.arange(length)
    if mode in (0, 2):
        block = length // 2 if mode == 0 else length // 4      # distance to the partner
        first = (lanes // block) % 2 == 0
        return lanes, np.where(first, lanes + block, lanes - block), np.where(first, 1, -1)
    if mode == 1:
        return lanes, lanes ^ 1, np.where(lanes % 2 == 0, 1, -1)
    if mode == 3:
        half, even = length // 2, lanes % 2 == 0
        own = np.where(even, lanes // 2, lanes // 2 + half)
        return own, np.where(even, own + half, own - half), np.where(even, 1, -1)
    raise ValueError(f"rotary mode {mode}")


def _rotate(dy, cos, sin, mode, partial_slice, *, compute=np.float32, lane_mode=None,
            own_sin=False, sign_fault=False, flush=False):
    """The slice's ``dx`` computed in ``compute`` (every operand and operation rounded there);
    ``flush``: float32 subnormal operands, products and sums become zero (flush-to-zero hardware)."""
    start, end = partial_slice
    own, partner, sign = lane_map(mode if lane_mode is None else lane_mode, end - start)
    if sign_fault:
        sign = np.ones_like(sign)
    ftz = (lambda x: np.where(np.abs(x) < 2.0 ** -126, 0, x).astype(x.dtype)) if flush else (lambda x: x)
    g = ftz(dy[..., start:end].astype(compute))
    c, s = ftz(cos.astype(compute)), ftz(sin.astype(compute))
    cos_term = ftz(c[..., own] * g[..., own])
    sin_term = ftz((s[..., own] if own_sin else s[..., partner]) * g[..., partner])
    return ftz(cos_term + sign.astype(compute) * sin_term)


def _kernel(dy, cos, sin, mode, partial_slice, **fault):
    """dy with the slice replaced by the (possibly faulty) result, rounded to dy's dtype."""
    out = dy.copy()
    start, end = partial_slice
    if end > start:
        out[..., start:end] = _rotate(dy, cos, sin, mode, partial_slice, **fault).astype(dy.dtype)
    return out


def _toward_zero(values: np.ndarray, dtype) -> np.ndarray:
    """float32 ``values`` converted to ``dtype`` rounding toward zero (one step back where nearest went
    away from zero)."""
    nearest = values.astype(dtype)
    widened = nearest.astype(np.float32)
    away = np.isfinite(values) & (np.abs(widened) > np.abs(values))
    bits = nearest.view(f"u{np.dtype(dtype).itemsize}").copy()
    bits[away] -= 1                                  # sign-magnitude: one ulp toward zero
    return bits.view(dtype)


def correct_kernel(dy, cos, sin, mode, partial_slice, *, flush=False):
    """The operator as a correct fp32-compute kernel implements it (a new array; dy is not changed);
    ``flush=True``: the same on hardware that flushes float32 subnormals to zero."""
    return _kernel(dy, cos, sin, mode, tuple(partial_slice), flush=flush)


def faulty_kernel(name, dy, cos, sin, mode, partial_slice):
    """The result of a kernel with fault ``name`` (one of ``FAULTS``):

    sign: the minus lanes add instead; own_sin: each lane uses its own sin, not its partner's;
    half_pairing: pairs as mode 0 (half) whatever the mode; shift_slice: works on the slice moved by
    one pair (right; left when the slice ends at D; wrapping around the row when neither fits, as the
    emulator's fault does); ignore_broadcast: cos/sin row 0 for every
    row; skip_last_row: the last (b, s, n) row is left as dy; skip_tail: the last 8 lanes (2 when
    L < 32) are left as dy; clobber_passthrough: zeroes the column just after the slice (before it
    when the slice ends at D); bf16_compute: operands, products and sum rounded to bfloat16;
    noop: nothing written; nan: one element (middle row, middle lane) becomes NaN; cos_cast: cos/sin
    rounded to dy's dtype before the fp32 computation; truncate: the fp32 result converted to a
    float16/bfloat16 dy toward zero instead of to nearest; negate_sin: sin negated (the transpose of a forward
    with the same fault, so adjoint and roundtrip accept the pair); swap_tables: cos read as sin and sin as cos
    (likewise).
    """
    start, end = partial_slice = tuple(partial_slice)
    if name == "sign":
        return _kernel(dy, cos, sin, mode, partial_slice, sign_fault=True)
    if name == "own_sin":
        return _kernel(dy, cos, sin, mode, partial_slice, own_sin=True)
    if name == "half_pairing":
        return _kernel(dy, cos, sin, mode, partial_slice, lane_mode=0)
    if name == "shift_slice":
        depth = dy.shape[-1]
        shift = 2 if end + 2 <= depth else -2 if start >= 2 else 2
        positions = (np.arange(start, end) + shift) % depth
        out = dy.copy()
        out[..., positions] = _rotate(dy[..., positions], cos, sin, mode, (0, end - start)).astype(dy.dtype)
        return out
    if name == "ignore_broadcast":
        first = lambda table: np.broadcast_to(table.reshape(-1, table.shape[-1])[0], table.shape)
        return _kernel(dy, first(cos), first(sin), mode, partial_slice)
    if name == "negate_sin":
        return _kernel(dy, cos, -sin, mode, partial_slice)
    if name == "swap_tables":
        return _kernel(dy, sin, cos, mode, partial_slice)
    if name == "bf16_compute":
        return _kernel(dy, cos, sin, mode, partial_slice, compute=ml_dtypes.bfloat16)
    if name == "cos_cast":
        return _kernel(dy, cos.astype(dy.dtype), sin.astype(dy.dtype), mode, partial_slice)
    if name == "truncate":
        out = dy.copy()
        if end > start:
            out[..., start:end] = _toward_zero(_rotate(dy, cos, sin, mode, partial_slice), dy.dtype)
        return out
    out = correct_kernel(dy, cos, sin, mode, partial_slice)
    rows = out.reshape(-1, out.shape[-1])                      # a view: (b, s, n) rows
    if name == "skip_last_row":
        rows[-1] = dy.reshape(rows.shape)[-1]
    elif name == "skip_tail":
        tail = 8 if end - start >= 32 else 2
        out[..., end - tail:end] = dy[..., end - tail:end]
    elif name == "clobber_passthrough":
        out[..., end if end < dy.shape[-1] else start - 1] = 0
    elif name == "noop":
        out[...] = dy
    elif name == "nan":
        rows[len(rows) // 2, (start + end) // 2] = np.nan
    else:
        raise ValueError(f"unknown fault {name!r}")
    return out


def forward_lane_map(mode: int, length: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(layout, partner, sign)`` of the forward ``y = z*c + R(z)*s`` with ``z = x[layout]`` and
    ``R(z)[j] = sign[j] * z[partner[j]]``: half ``cat(-z2, z1)``, quarter the half rule on each half,
    interleave ``R(z)[2k] = -z[2k+1]``, ``R(z)[2k+1] = z[2k]``, interleave-half: z read as
    ``cat(x[0::2], x[1::2])``, then the half rule (written independently of prmg_cli.ops.reference)."""
    lanes = np.arange(length)
    layout = np.concatenate([lanes[0::2], lanes[1::2]]) if mode == 3 else lanes
    if mode == 1:
        return layout, lanes ^ 1, np.where(lanes % 2 == 0, -1, 1)
    group = length // 2 if mode == 2 else length
    within = lanes % group
    first = within < group // 2
    return layout, np.where(first, lanes + group // 2, lanes - group // 2), np.where(first, -1, 1)


def forward_kernel(x, cos, sin, mode, partial_slice, *, fault=None, fused=False):
    """The forward as a float32 kernel computes it (a new array): ``y = c*z + sign*s*z[partner]`` on the
    slice, rounded to x's dtype. Faults: ``sign`` (the + lanes subtract), ``partner_sin`` (the partner's
    sin, as the grad uses), ``negate_sin``, ``swap_tables`` (cos read as sin and sin as cos), ``half_pairing`` (the
    lanes of mode 0, half, whatever the mode, as the grad's fault of that name); ``fused``: each sum fused with its
    first product, as an FMA kernel does (computed in float64, rounded once to float32)."""
    start, end = partial_slice
    out = x.copy()
    if end == start:
        return out
    if fault == "swap_tables":
        cos, sin = sin, cos
    layout, partner, sign = forward_lane_map(0 if fault == "half_pairing" else mode, end - start)
    if fault == "sign":
        sign = -np.ones_like(sign)
    z = x[..., start:end].astype(np.float32)[..., layout]
    c, s = cos.astype(np.float32), sin.astype(np.float32)
    if fault == "negate_sin":
        s = -s
    sin_used = s[..., partner] if fault == "partner_sin" else s
    rotated = (sin_used * z[..., partner]).astype(np.float32)
    if fused:
        y = (c.astype(np.float64) * z.astype(np.float64) + sign * rotated.astype(np.float64)).astype(np.float32)
    else:
        y = c * z + sign.astype(np.float32) * rotated
    out[..., start:end] = y.astype(x.dtype)
    return out
