"""The golden: adjoint of an independent forward, the documented example, bit-exact copies outside the
slice, and agreement with a plain element-by-element implementation written here."""

from __future__ import annotations

import itertools
import zlib

import ml_dtypes
import numpy as np
import pytest

from prmg_cli.dtypes import FLOAT_FORMATS
from prmg_cli.ops import GRAD
from prmg_cli.vocab import BROADCASTS
from test_dtypes import exact_bfloat16

pytestmark = pytest.mark.verdict       # make test-verdict (and make mutate) run these first

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = (np.dtype(np.float32), np.dtype(np.float16), BF16)
MODES = (0, 1, 2, 3)


def _forward_tables(rotary_mode: int, length: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Index and sign tables of the forward's rotation, built independently of the operators' pair blocks.

    Returns ``(layout, partner, sign)``: the forward reads ``z = x[layout]`` and rotates it as
    ``R(z)[i] = sign[i] * z[partner[i]]``.
    """
    lane = np.arange(length)
    layout = lane
    if rotary_mode == 3:
        layout = np.concatenate([lane[0::2], lane[1::2]])     # read x interleaved, write in half layout
    if rotary_mode == 1:
        partner = lane ^ 1                                     # x_rot[2k] = -x[2k+1], x_rot[2k+1] = x[2k]
        sign = np.where(lane % 2 == 0, -1.0, 1.0)
        return layout, partner, sign
    group = length if rotary_mode in (0, 3) else length // 2   # cat(-x2, x1); quarter: cat(-x2, x1, -x4, x3)
    offset, within = lane - lane % group, lane % group
    first_half = within < group // 2
    partner = offset + np.where(first_half, within + group // 2, within - group // 2)
    sign = np.where(first_half, -1.0, 1.0)
    return layout, partner, sign


def rotary_mul_forward(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, rotary_mode: int,
                       partial_slice) -> np.ndarray:
    """The forward partial rotary ``y = z*cos + R(z)*sin`` over the slice, float64, identity outside it.

    ``z = x[..., start:end]`` read in the mode's layout and ``R`` the mode's rotation: half
    ``cat(-z2, z1)``; quarter ``cat(-z2, z1, -z4, z3)``; interleave ``R(z)[2k] = -z[2k+1]``,
    ``R(z)[2k+1] = z[2k]``; interleave-half reads ``z = cat(x[0::2], x[1::2])`` and rotates as half.
    Written with gather tables, apart from prmg's goldens, so that adjoint tests compare two derivations.
    """
    start, end = GRAD.check(x, cos, sin, rotary_mode, partial_slice)
    y = x.astype(np.float64)
    if start == end:
        return y
    layout, partner, sign = _forward_tables(rotary_mode, end - start)
    z = y[..., start:end][..., layout]
    y[..., start:end] = z * cos.astype(np.float64) + sign * z[..., partner] * sin.astype(np.float64)
    return y


def table_shape(shape, pattern, length):
    """cos/sin shape for dy ``shape`` under a broadcast ``pattern`` such as ``1S1D``."""
    return tuple(1 if flag == "1" else size for flag, size in zip(pattern[:3], shape[:3])) + (length,)


def random_case(rng, mode, max_dim=4, max_d=24):
    """A random (shape, slice, cos shape) valid for ``mode``."""
    unit = 4 if mode == 2 else 2
    shape = tuple(int(v) for v in rng.integers(1, max_dim + 1, 3))
    d = int(rng.integers(unit, max_d + 1))
    length = unit * int(rng.integers(1, d // unit + 1))
    start = int(rng.integers(0, d - length + 1))
    pattern = BROADCASTS[int(rng.integers(len(BROADCASTS)))]
    return shape + (d,), (start, start + length), table_shape(shape, pattern, length)


def loop_grad(dy, cos, sin, mode, partial_slice):
    """dx by plain Python loops over every element, straight from the formulas of operator.md."""
    start, end = partial_slice
    length = end - start
    half, quarter = length // 2, length // 4
    out = dy.copy()
    b_count, s_count, n_count, _ = dy.shape
    for b, s, n in itertools.product(range(b_count), range(s_count), range(n_count)):
        ci = tuple(0 if cos.shape[a] == 1 else i for a, i in enumerate((b, s, n)))
        g = [float(dy[b, s, n, start + j]) for j in range(length)]
        c = [float(cos[ci + (j,)]) for j in range(length)]
        si = [float(sin[ci + (j,)]) for j in range(length)]
        res = [0.0] * length
        if mode == 0:
            for k in range(half):
                res[k] = c[k] * g[k] + si[k + half] * g[k + half]
                res[k + half] = c[k + half] * g[k + half] - si[k] * g[k]
        elif mode == 1:
            for k in range(half):
                res[2 * k] = c[2 * k] * g[2 * k] + si[2 * k + 1] * g[2 * k + 1]
                res[2 * k + 1] = c[2 * k + 1] * g[2 * k + 1] - si[2 * k] * g[2 * k]
        elif mode == 2:
            for base in (0, half):
                for k in range(quarter):
                    i, j = base + k, base + quarter + k
                    res[i] = c[i] * g[i] + si[j] * g[j]
                    res[j] = c[j] * g[j] - si[i] * g[i]
        else:
            for k in range(half):
                res[2 * k] = c[k] * g[k] + si[k + half] * g[k + half]
                res[2 * k + 1] = c[k + half] * g[k + half] - si[k] * g[k]
        for j in range(length):
            out[b, s, n, start + j] = narrowed(res[j], dy.dtype)
    return out


def narrowed(value: float, dtype) -> np.ndarray:
    """``value`` rounded once to ``dtype``: numpy's cast for float32 and float16; for bfloat16 exact rational
    arithmetic (ml_dtypes before 0.7 rounds float64 through float32: twice)."""
    if dtype == BF16:
        return np.array(exact_bfloat16(value), np.uint16).view(BF16)
    return np.float64(value).astype(dtype)


def same_values(a, b):
    """Equal element for element: same bits, except that any NaN matches any NaN."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    both_nan = np.isnan(a64) & np.isnan(b64)
    bits_a = np.ascontiguousarray(a).view(np.dtype(f"u{a.dtype.itemsize}"))
    bits_b = np.ascontiguousarray(b).view(np.dtype(f"u{b.dtype.itemsize}"))
    return bool(np.all(both_nan | (bits_a == bits_b)))


@pytest.mark.parametrize("mode", MODES)
def test_backward_is_the_adjoint_of_the_forward(mode):
    rng = np.random.default_rng(100 + mode)
    for _ in range(25):
        shape, partial_slice, cshape = random_case(rng, mode)
        x = rng.standard_normal(shape)
        dy = rng.standard_normal(shape)
        cos = rng.standard_normal(cshape)        # independent entries: pair partners differ
        sin = rng.standard_normal(cshape)
        forward = rotary_mul_forward(x, cos, sin, mode, partial_slice)
        backward = GRAD.golden(dy, cos, sin, mode, partial_slice)
        lhs, rhs = np.sum(forward * dy), np.sum(x * backward)
        scale = np.sum(np.abs(forward * dy)) + np.sum(np.abs(x * backward))
        assert abs(lhs - rhs) <= 1e-12 * scale, (shape, partial_slice, cshape)


@pytest.mark.parametrize("mode", MODES)
def test_adjoint_catches_the_negated_sin_shortcut(mode):
    """The test above can fail: "backward = forward with -sin" is wrong when pair sins differ."""
    rng = np.random.default_rng(7)
    shape, partial_slice = (2, 3, 2, 16), (4, 12)
    cshape = (1, 3, 1, 8)
    x, dy = rng.standard_normal(shape), rng.standard_normal(shape)
    cos, sin = rng.standard_normal(cshape), rng.standard_normal(cshape)
    shortcut = rotary_mul_forward(dy, cos, -sin, mode, partial_slice)
    lhs, rhs = np.sum(rotary_mul_forward(x, cos, sin, mode, partial_slice) * dy), np.sum(x * shortcut)
    assert abs(lhs - rhs) > 1e-6 * abs(lhs)


def test_forward_rotates_pairs_by_the_angle_for_rope_tables():
    """With pair-equal tables the interleave forward is the rotation of each (x[2k], x[2k+1]) by theta."""
    theta = np.array([0.3, 0.3, -1.1, -1.1])
    x = np.array([1.0, 2.0, 3.0, -4.0]).reshape(1, 1, 1, 4)
    y = rotary_mul_forward(x, np.cos(theta).reshape(1, 1, 1, 4), np.sin(theta).reshape(1, 1, 1, 4), 1, (0, 4))
    expected = []
    for k in range(2):
        a, b, t = x[0, 0, 0, 2 * k], x[0, 0, 0, 2 * k + 1], theta[2 * k]
        expected += [a * np.cos(t) - b * np.sin(t), b * np.cos(t) + a * np.sin(t)]
    np.testing.assert_allclose(y.ravel(), expected, rtol=1e-15, atol=1e-15)


def test_forward_half_mode_is_x_cos_plus_rotated_x_sin():
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).reshape(1, 1, 1, 6)
    cos = np.array([0.5, 0.25, 2.0, 4.0]).reshape(1, 1, 1, 4)
    sin = np.array([1.0, 3.0, 0.5, 0.125]).reshape(1, 1, 1, 4)
    y = rotary_mul_forward(x, cos, sin, 0, (1, 5)).ravel()
    # z = (2, 3, 4, 5); R(z) = (-4, -5, 2, 3)
    assert y.tolist() == [1.0, 2 * 0.5 - 4 * 1.0, 3 * 0.25 - 5 * 3.0, 4 * 2.0 + 2 * 0.5, 5 * 4.0 + 3 * 0.125, 6.0]


@pytest.mark.parametrize("dtype", (np.float64, np.float32))
def test_worked_example_of_operator_md(dtype):
    dy = np.arange(1, 9, dtype=dtype).reshape(1, 1, 1, 8)
    cos = np.array([0.5, 0.6, 0.7, 0.8], dtype=dtype).reshape(1, 1, 1, 4)
    sin = np.array([0.1, 0.2, 0.3, 0.4], dtype=dtype).reshape(1, 1, 1, 4)
    dx = GRAD.golden(dy, cos, sin, 1, (2, 6))
    assert dx.dtype == dtype
    expected = np.array([1, 2, 2.3, 2.1, 5.9, 3.3, 7, 8])
    # the only error is the rounding of cos/sin (and of dx) to ``dtype``
    tolerance = 8 * np.finfo(dtype).eps * np.abs(expected)
    assert np.all(np.abs(dx.ravel().astype(np.float64) - expected) <= tolerance), dx.ravel()


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_outside_the_slice_dx_is_bit_identical_to_dy(dtype):
    rng = np.random.default_rng(5)
    shape, partial_slice = (2, 3, 4, 20), (6, 14)
    bits = rng.integers(0, 2 ** (8 * dtype.itemsize), shape, dtype=np.uint64)
    dy = bits.astype(np.dtype(f"u{dtype.itemsize}")).view(dtype)     # every pattern: NaN payloads, -0, inf
    exponent_all_ones = {2: 0x7C00 if dtype == np.float16 else 0x7F80, 4: 0x7F800000}[dtype.itemsize]
    raw = dy.view(np.dtype(f"u{dtype.itemsize}"))
    raw[..., 0] = exponent_all_ones | 1                                   # signalling-style NaN payloads
    raw[..., -1] = exponent_all_ones | 0x15
    cos = rng.uniform(-1, 1, (1, 3, 1, 8)).astype(np.float32)
    sin = rng.uniform(-1, 1, (1, 3, 1, 8)).astype(np.float32)
    for mode in MODES:
        dx = GRAD.golden(dy, cos, sin, mode, partial_slice)
        for part in (np.s_[..., :6], np.s_[..., 14:]):
            assert np.array_equal(np.ascontiguousarray(dx[part]).view(raw.dtype),
                                  np.ascontiguousarray(dy[part]).view(raw.dtype))


@pytest.mark.parametrize("dy_dtype,table_dtype", list(itertools.product(FLOATS, FLOATS)), ids=str)
def test_random_cases_match_the_element_loop(dy_dtype, table_dtype):
    rng = np.random.default_rng(zlib.crc32(f"{dy_dtype} {table_dtype}".encode()))
    for mode in MODES:
        for _ in range(3):
            shape, partial_slice, cshape = random_case(rng, mode, max_dim=3, max_d=16)
            dy = rng.uniform(-2, 2, shape).astype(dy_dtype)
            cos = rng.uniform(-1, 1, cshape).astype(table_dtype)
            sin = rng.uniform(-1, 1, cshape).astype(table_dtype)
            dx = GRAD.golden(dy, cos, sin, mode, partial_slice)
            assert dx.dtype == dy_dtype and dx.shape == dy.shape
            assert same_values(dx, loop_grad(dy, cos, sin, mode, partial_slice)), (mode, shape, partial_slice)


@pytest.mark.parametrize("mode", MODES)
def test_special_values_match_the_element_loop(mode):
    rng = np.random.default_rng(11)
    shape, partial_slice, cshape = (2, 2, 3, 12), (2, 10), (1, 2, 1, 8)
    dy = rng.uniform(-1, 1, shape).astype(np.float32)
    dy.reshape(-1)[rng.choice(dy.size, 12, replace=False)] = [np.inf, -np.inf, np.nan, 0.0, -0.0, 3e38,
                                                             -3e38, 1e-45, np.inf, np.nan, -0.0, 1e-40]
    cos = rng.uniform(-1, 1, cshape).astype(np.float32)
    sin = rng.uniform(-1, 1, cshape).astype(np.float32)
    cos.reshape(-1)[:4] = [0.0, -0.0, 3e38, np.inf]
    with np.errstate(all="ignore"):
        dx = GRAD.golden(dy, cos, sin, mode, partial_slice)
        assert same_values(dx, loop_grad(dy, cos, sin, mode, partial_slice))


def test_non_contiguous_dy_and_tables_are_read_correctly():
    rng = np.random.default_rng(13)
    dy = rng.uniform(-1, 1, (3, 4, 2, 20)).astype(np.float32)[:, ::2, :, :]
    cos = rng.uniform(-1, 1, (1, 4, 1, 16)).astype(np.float32)[:, ::2, :, ::2]
    sin = rng.uniform(-1, 1, (1, 4, 1, 16)).astype(np.float32)[:, ::2, :, ::2]
    before = dy.copy()
    dx = GRAD.golden(dy, cos, sin, 1, (4, 12))
    assert np.array_equal(dy, before)
    assert same_values(dx, loop_grad(dy, cos, sin, 1, (4, 12)))


def test_large_blocks_match_the_element_loop_on_a_sample():
    """Shapes that span many cache blocks (and threads) give the same bits as one small evaluation."""
    rng = np.random.default_rng(17)
    dy = rng.uniform(-1, 1, (3, 300, 5, 40)).astype(np.float32)
    cos = rng.uniform(-1, 1, (1, 300, 1, 32)).astype(np.float32)
    sin = rng.uniform(-1, 1, (1, 300, 1, 32)).astype(np.float32)
    for mode in MODES:
        dx = GRAD.golden(dy, cos, sin, mode, (4, 36))
        for b, s in ((0, 0), (2, 299), (1, 150)):
            part = np.s_[b:b + 1, s:s + 1]
            assert same_values(dx[part], loop_grad(dy[part], cos[:, s:s + 1], sin[:, s:s + 1], mode, (4, 36)))
        expected = GRAD.golden_slice(dy, cos, sin, mode, (4, 36)).astype(np.float32)
        assert same_values(dx[..., 4:36], expected)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_empty_slice_returns_a_copy(dtype):
    dy = np.random.default_rng(1).uniform(-1, 1, (2, 2, 2, 6)).astype(dtype)
    table = np.ones((1, 1, 1, 0), np.float32)
    for partial_slice in ((0, 0), (3, 3), (6, 6)):
        dx = GRAD.golden(dy, table, table, 1, partial_slice)
        assert dx is not dy and not np.shares_memory(dx, dy)
        assert same_values(dx, dy)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_same_precision_computation_is_a_few_ulps_from_float64(dtype):
    rng = np.random.default_rng(19)
    for mode in MODES:
        shape, partial_slice, cshape = (2, 8, 4, 40), (4, 36), (1, 8, 1, 32)
        dy = rng.uniform(-1, 1, shape).astype(dtype)
        cos, sin = (rng.uniform(-1, 1, cshape).astype(dtype) for _ in "cs")
        exact = GRAD.golden_slice(dy, cos, sin, mode, partial_slice)
        low = GRAD.golden_slice(dy, cos, sin, mode, partial_slice, compute_dtype=dtype)
        assert exact.dtype == np.float64 and low.dtype == dtype
        magnitude = GRAD.magnitude(dy, cos, sin, mode, partial_slice)
        fmt = FLOAT_FORMATS[dtype.name]                # (numpy's finfo knows bfloat16 from ml_dtypes 0.7 on)
        unit, tiny = fmt.unit_roundoff, fmt.smallest
        error = np.abs(low.astype(np.float64) - exact)
        # two product roundings and one sum rounding: at most about 3 units of the magnitude
        assert np.all(error <= 3.01 * unit * magnitude + 2 * tiny)
        assert np.any(error > 0)        # it really computed in the low precision


def test_magnitude_is_the_sum_of_the_two_product_sizes():
    rng = np.random.default_rng(23)
    dy = rng.uniform(-1, 1, (1, 2, 1, 10))
    cos, sin = rng.uniform(-1, 1, (1, 2, 1, 8)), rng.uniform(-1, 1, (1, 2, 1, 8))
    m = GRAD.magnitude(dy, cos, sin, 1, (1, 9))
    g = dy[..., 1:9]
    for k in range(4):
        even, odd = 2 * k, 2 * k + 1
        assert np.allclose(m[..., even], abs(cos[..., even] * g[..., even]) + abs(sin[..., odd] * g[..., odd]))
        assert np.allclose(m[..., odd], abs(cos[..., odd] * g[..., odd]) + abs(sin[..., even] * g[..., even]))
    # m bounds |dx| and a sign error shows up as a difference of up to 2*m
    dx = GRAD.golden_slice(dy, cos, sin, 1, (1, 9))
    assert np.all(np.abs(dx) <= m * (1 + 1e-15))


def test_bfloat16_result_is_rounded_once_from_float64():
    """dx[0] = 1 + 2^-8 + 2^-30 rounds up to bfloat16 1 + 2^-7; rounding through float32 first would
    give 1 + 2^-8, a tie that goes to the even 1."""
    dy = np.array([1.0, 1.0], BF16).reshape(1, 1, 1, 2)
    cos = np.array([1.0, 1.0]).reshape(1, 1, 1, 2)
    sin = np.array([0.0, 2.0 ** -8 + 2.0 ** -30]).reshape(1, 1, 1, 2)    # s[1]*g[1] feeds dx[0]
    dx = GRAD.golden(dy, cos, sin, 1, (0, 2))
    assert float(dx[0, 0, 0, 0]) == 1.0 + 2.0 ** -7


@pytest.mark.parametrize("bad", [
    dict(partial_slice=(2, 12)),            # end > D
    dict(partial_slice=(4, 2)),             # start > end
    dict(cshape=(1, 1, 1, 6)),              # cos length != L
    dict(cshape=(1, 3, 1, 8)),              # S neither 1 nor dy's
    dict(mode=5),
    dict(partial_slice=(0, 6), cshape=(1, 1, 1, 6), mode=2),   # quarter needs a multiple of 4
    dict(partial_slice=(0, 7), cshape=(1, 1, 1, 7), mode=0),   # half: an odd length has a lane with no pair
    dict(partial_slice=(0, 7), cshape=(1, 1, 1, 7), mode=3),
    dict(partial_slice=(0, 7), cshape=(1, 1, 1, 7), mode=1),
])
def test_invalid_arguments_raise_value_error(bad):
    params = dict(partial_slice=(0, 8), cshape=(1, 1, 1, 8), mode=1)
    params.update(bad)
    dy = np.zeros((1, 2, 1, 10), np.float32)
    table = np.zeros(params["cshape"], np.float32)
    with pytest.raises(ValueError):
        GRAD.golden(dy, table, table, params["mode"], params["partial_slice"])


def test_host_bench_naive_baseline_computes_the_same_gradient():
    """The benchmark's naive contender is a fair baseline: same result up to its float32 rounding."""
    from prmg_cli.commands.bench_host import naive_interleave_grad

    rng = np.random.default_rng(29)
    dy = rng.uniform(-1, 1, (2, 6, 3, 20)).astype(np.float32)
    cos, sin = (rng.uniform(-1, 1, (1, 6, 1, 12)).astype(np.float32) for _ in "cs")
    naive = naive_interleave_grad(dy, cos, sin, (4, 16))
    golden = GRAD.golden(dy, cos, sin, 1, (4, 16))
    magnitude = GRAD.magnitude(dy, cos, sin, 1, (4, 16))
    assert np.array_equal(naive[..., :4], dy[..., :4]) and np.array_equal(naive[..., 16:], dy[..., 16:])
    error = np.abs(naive[..., 4:16].astype(np.float64) - golden[..., 4:16].astype(np.float64))
    assert np.all(error <= 4 * np.finfo(np.float32).eps * magnitude)


@pytest.mark.parametrize("pattern", ("1S1D", "BSND", "B11D"))
def test_many_blocks_split_over_threads_match_the_element_loop(monkeypatch, pattern):
    """Tiny blocks force many blocks, cached table expansions, tail blocks and the split over two
    threads; every mode must still give the element loop's bits."""
    from prmg_cli import native
    from prmg_cli.ops import reference

    monkeypatch.setattr(reference, "_BLOCK_ELEMENTS", 48)
    rng = np.random.default_rng(31)
    shape, partial_slice = (3, 7, 5, 20), (2, 18)
    dy = rng.uniform(-1, 1, shape).astype(np.float32)
    cshape = table_shape(shape, pattern, 16)
    cos, sin = (rng.uniform(-1, 1, cshape).astype(np.float32) for _ in "cs")
    blocks = reference._block_indices(shape[:3], shape[-1], ())
    assert len(blocks) >= 2 * native.MIN_BLOCKS_PER_THREAD         # really split over both threads
    for mode in MODES:
        dx = GRAD.golden(dy, cos, sin, mode, partial_slice, workers=2)
        assert same_values(dx, loop_grad(dy, cos, sin, mode, partial_slice)), mode


def test_large_work_buffers_lie_in_whole_huge_pages_and_do_not_overlap():
    from prmg_cli.ops import reference

    size = reference._HUGE_PAGE_ALLOCATION // 8 // 3          # four rows of this: above the threshold
    buffers = reference._huge_page_buffers(4, size)
    assert buffers.shape == (4, size) and buffers.ctypes.data % reference._HUGE_PAGE == 0
    buffers[...] = np.arange(4)[:, None]
    assert all(np.all(buffers[row] == row) for row in range(4))
    assert reference._huge_page_buffers(4, 10).shape == (4, 10)


@pytest.mark.parametrize("shape, parts", [((3, 7, 5, 20), 2), ((1, 7, 5, 20), 2), ((1, 1, 1, 6), 2),
                                          ((4, 2, 2, 2), 1), ((2, 5, 1, 4), 3)])
def test_copy_parts_cover_the_array_once(shape, parts):
    from prmg_cli.ops import reference

    hits = np.zeros(shape, np.int64)
    indices = reference._leading_parts(shape, parts)
    assert len(indices) == parts
    for index in indices:
        hits[index] += 1
    assert np.all(hits == 1)


def test_host_bench_pipeline_rows_say_met_or_not_met_against_each_goal(monkeypatch):
    from prmg_cli.commands import bench_host

    monkeypatch.setenv("COLUMNS", "80")                 # an 80-column terminal: the two tables and the prose fit it

    def row(dtype, generator, stage_ms, host_ms, copy_ms, vs_copy, peak):
        return {"dtype": dtype, "generator": generator, "status": ["passed"],
                **dict.fromkeys(bench_host.STAGES, stage_ms), "host_ms": host_ms, "copy_ms": copy_ms,
                "vs_copy": vs_copy, "peak_mem_x_dy": peak}

    rows = [row("bfloat16", "philox4x32", 1.0, 90.0, 9.0, 10.0, 3.5),
            row("bfloat16", "philox", 2.0, 99.0, 9.0, 11.0, 3.5), row("bfloat16", "pcg64", 2.0, 99.0, 9.0, 12.0, 3.5),
            row("float32", "philox4x32", 1.0, 420.0, 20.0, 21.0, 9.0)]
    text = bench_host.format_pipeline_bench(rows, {"runs": {"300": {"per_case_ms": 4.2, "wall_s": 1.26},
                                                          "3": {"per_case_ms": 400.0, "wall_s": 1.2}}})
    assert "pipeline bfloat16: 10.00 x copy <= 20.00: met" in text
    assert "pipeline bfloat16: 10.00 x copy (stretch) <= 10.00: met" in text
    assert "pipeline float32: 21.00 x copy <= 20.00: NOT met" in text
    assert "pipeline float32: 9.00 peak mem x dy <= 8.00: NOT met" in text
    assert "whole process, 300 small cases: 4.20 ms per case <= 5.00: met" in text
    assert "whole process, 3 small cases: 1.20 s <= 1.00: NOT met" in text
    assert all(stage in text for stage in ("inputs", "upload", "kernel", "download", "golden", "judge"))
    assert "bfloat16  pcg64" in text and "bfloat16  philox " in text                  # shown, not judged:
    assert "11.00" not in text.split("targets:")[1] and "12.00" not in text.split("targets:")[1]
    assert max(map(len, text.splitlines())) <= 80, text


def test_the_pipeline_case_is_the_issues():
    from prmg_cli.commands import bench_host

    case = bench_host.pipeline_case("bfloat16")
    assert (case.shape, case.cos_shape, case.partial_slice, case.rotary_mode) == \
        ((4, 1024, 32, 128), (1, 1024, 1, 96), (32, 128), 1)
    assert case.cos_dtype == case.sin_dtype == "bfloat16" and case.standard is None


def _mirrored_pairs(rotary_mode: int, length: int):
    """A toy operator's pairing, unlike either operator's: lane k pairs with L-1-k, and the pair's results are
    written crosswise (p' = q, q' = p)."""
    from prmg_cli.ops.reference import PairBlock

    if rotary_mode != 1:
        raise ValueError("the toy has one mode")
    half = length // 2
    first, second = slice(0, half), slice(length - 1, half - 1 if half else None, -1)
    return (PairBlock(first, second, second, first),)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_a_new_operators_rotation_is_all_its_goldens_need(dtype, monkeypatch):
    """A third operator brings only its ``Rotation``: the engine's fast golden (blocks, threads, complex tables),
    its float64 slice, magnitude, lane terms and the judge's block terms all equal a plain element loop of
    the toy's own formula ``out[p'] = c[p']*x[p] + s[p']*x[q]``, ``out[q'] = c[q']*x[q] - s[q']*x[p]`` with
    the mirrored pairing (written here, apart from the engine)."""
    from dataclasses import replace

    from prmg_cli.ops import reference

    rotation = reference.Rotation(pairs=_mirrored_pairs, tables_at="output", first_sign=1, second_sign=-1)
    toy = replace(GRAD, name="toy", rotation=rotation)
    monkeypatch.setattr(reference, "_BLOCK_ELEMENTS", 40)            # many blocks, over two threads
    rng = np.random.default_rng(3)
    shape, piece = (2, 5, 3, 14), (2, 12)
    length = piece[1] - piece[0]
    x = rng.uniform(-2, 2, shape).astype(dtype)
    cos, sin = (rng.uniform(-1, 1, (1, 5, 1, length)).astype(dtype) for _ in "cs")
    g, c, s = (np.asarray(a, np.float64) for a in (x[..., 2:12], cos, sin))
    exact, magnitude = np.empty(g.shape), np.empty(g.shape)
    for k in range(length // 2):
        p, q = k, length - 1 - k                               # read at (p, q), written at (q, p)
        exact[..., q] = c[..., q] * g[..., p] + s[..., q] * g[..., q]
        exact[..., p] = c[..., p] * g[..., q] - s[..., p] * g[..., p]
        magnitude[..., q] = np.abs(c[..., q] * g[..., p]) + np.abs(s[..., q] * g[..., q])
        magnitude[..., p] = np.abs(c[..., p] * g[..., q]) + np.abs(s[..., p] * g[..., p])
    assert np.array_equal(toy.golden_slice(x, cos, sin, 1, piece), exact)
    assert np.array_equal(toy.magnitude(x, cos, sin, 1, piece), magnitude)
    golden = toy.golden(x, cos, sin, 1, piece, workers=2)
    expected = x.copy()
    expected[..., 2:12] = exact.astype(dtype)
    assert golden.view(np.uint8).tobytes() == expected.view(np.uint8).tobytes()
    kept, partner, sign, cos_lane, sin_lane = toy.lane_terms(1, length)
    assert np.array_equal(c[..., cos_lane] * g[..., kept] + sign * (s[..., sin_lane] * g[..., partner]), exact)
    terms = toy.slice_terms(x, cos, sin, 1, piece, block_elements=48)
    evaluator = terms.evaluator()
    for index, _ in terms.blocks:
        _, block_golden, block_magnitude = evaluator.evaluate(index)
        assert np.array_equal(block_golden, exact[index]) and np.array_equal(block_magnitude, magnitude[index])
    with pytest.raises(ValueError):
        toy.golden(x, cos, sin, 0, piece)
