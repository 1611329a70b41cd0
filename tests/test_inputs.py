"""Seeded inputs: reproducible, chunk-size independent, every input kind, errors that name the field. Values are
rounded to bfloat16 by ``dtypes.rounded`` (checked against exact arithmetic in test_dtypes.py)."""

from __future__ import annotations

import hashlib
from dataclasses import replace

import ml_dtypes
import numpy as np
import pytest

from prmg_cli.cases.loader import Case, InputSpec
from prmg_cli.dtypes import OPERATOR_DTYPES, rounded
from prmg_cli.errors import PrmgError
from prmg_cli.inputs import seeded as inputs_module
from prmg_cli.inputs.seeded import THREADED_DRAWS, default_seed, drawn_prefix, make_inputs, philox4x32_10
from prmg_cli.vocab import GENERATORS

BF16 = np.dtype(ml_dtypes.bfloat16)


def case(**changes) -> Case:
    base = Case(name="demo", source="/cases/demo.yaml", shape=(2, 3, 4, 16), cos_shape=(1, 3, 1, 8),
                sin_shape=(1, 3, 1, 8), partial_slice=(4, 12), seed=1234)
    return replace(base, **changes)


def bits(array: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(array).view(np.dtype(f"u{array.dtype.itemsize}"))


def test_default_seed_is_the_masked_sha256_prefix_of_the_name():
    for name in ("demo", "fp32_basic-1", "ünï"):
        expected = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little") & (2 ** 63 - 1)
        assert default_seed(name) == expected
    assert default_seed("a") != default_seed("b")


@pytest.mark.parametrize("dtype", OPERATOR_DTYPES)
def test_same_case_gives_the_same_bits_and_tensors_get_their_own_streams(dtype):
    c = case(dtype=dtype, cos_dtype=dtype, sin_dtype=dtype, cos_shape=(2, 3, 4, 16), sin_shape=(2, 3, 4, 16))
    first, second = make_inputs(c), make_inputs(c)
    for tensor in ("dy", "cos", "sin"):
        assert np.array_equal(bits(getattr(first, tensor)), bits(getattr(second, tensor)))
    assert not np.array_equal(first.dy, first.cos) and not np.array_equal(first.cos, first.sin)
    assert not np.array_equal(make_inputs(replace(c, seed=1235)).dy, first.dy)


def philox_recipe(seed: int, index: int, kind: str, params, count: int) -> np.ndarray:
    """The ``philox`` inputs as the README writes them out, in float64: chunks of 65536 elements, chunk j
    from numpy's Philox(key=(seed, index), counter=(0, j, 0, 0)); a uniform element takes the next 32-bit
    half (low half first) of its words times 2**-32, a normal one the next standard_normal of a Generator."""
    values = []
    for chunk, begin in enumerate(range(0, count, 65536)):
        size = min(65536, count - begin)
        stream = np.random.Philox(key=np.array([seed, index], np.uint64), counter=np.array([0, chunk, 0, 0], np.uint64))
        if kind == "uniform":
            words = stream.random_raw((size + 1) // 2)
            halves = np.stack([words & 0xFFFFFFFF, words >> 32], axis=1).reshape(-1)[:size]
            values.append(params[0] + (params[1] - params[0]) * (halves.astype(np.float64) * 2.0 ** -32))
        else:
            values.append(params[0] + params[1] * np.random.Generator(stream).standard_normal(size))
    return np.concatenate(values) if values else np.zeros(0)


def philox4x32_block(counter: tuple[int, int, int, int], key: tuple[int, int]) -> tuple[int, int, int, int]:
    """One Philox4x32-10 block, as Random123's philox4x32 writes it, in plain Python integers."""
    v0, v1, v2, v3 = counter
    k0, k1 = key
    for _ in range(10):
        p0, p1 = 0xD2511F53 * v0, 0xCD9E8D57 * v2
        v0, v1, v2, v3 = (p1 >> 32) ^ v1 ^ k0, p1 & 0xFFFFFFFF, (p0 >> 32) ^ v3 ^ k1, p0 & 0xFFFFFFFF
        k0, k1 = (k0 + 0x9E3779B9) & 0xFFFFFFFF, (k1 + 0xBB67AE85) & 0xFFFFFFFF
    return v0, v1, v2, v3


# Random123's known answers for philox4x32 with 10 rounds (its kat_vectors): counter, key, the block
PHILOX4X32_KNOWN_ANSWERS = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF, 0xFFFFFFFF), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


def test_philox4x32_gives_random123s_known_answers():
    for counter, key, block in PHILOX4X32_KNOWN_ANSWERS:
        assert philox4x32_block(counter, key) == block
        assert tuple(int(word) for word in philox4x32_10(np.array([counter]), key)[0]) == block


def philox4x32_recipe(seed: int, index: int, kind: str, params, count: int) -> np.ndarray:
    """The ``philox4x32`` inputs as the README writes them out, in float64: a uniform element e takes word e % 4 of
    the Philox4x32-10 block at counter (m mod 2**32, m // 2**32, index, 0), m = e // 4, key (seed mod 2**32,
    seed // 2**32), times 2**-32; normal draws are ``philox``'s."""
    if kind == "normal":
        return philox_recipe(seed, index, kind, params, count)
    key = (seed & 0xFFFFFFFF, seed >> 32)
    words = [word for m in range(-(-count // 4))                  # each block once: its 4 words, in order
             for word in philox4x32_block((m & 0xFFFFFFFF, m >> 32, index, 0), key)][:count]
    return params[0] + (params[1] - params[0]) * (np.array(words, np.float64) * 2.0 ** -32)


RECIPES = {"philox4x32": philox4x32_recipe, "philox": philox_recipe}


@pytest.mark.parametrize("generator", list(RECIPES))
def test_draws_are_float64_philox_streams_rounded_once_to_the_dtype(generator):
    """The documented recipes of the default generator and the one before it, so any tool can regenerate the inputs
    (dy spans two of philox's stream chunks)."""
    c = case(shape=(2, 3, 128, 128), dtype="bfloat16", cos_dtype="float16", sin_dtype="float32",
             dy_input=InputSpec("uniform", (-3.0, 5.0)), sin_input=InputSpec("normal", (0.5, 2.0)))
    assert c.generator == GENERATORS[0] == "philox4x32"
    c = replace(c, generator=generator)
    made, recipe = make_inputs(c), RECIPES[generator]
    assert np.array_equal(bits(made.dy), bits(rounded(recipe(1234, 0, "uniform", (-3.0, 5.0), made.dy.size),
                                                      BF16).reshape(made.dy.shape)))
    assert np.array_equal(made.cos, recipe(1234, 1, "uniform", (-1.0, 1.0), 24).astype(np.float16).reshape(1, 3, 1, 8))
    assert np.array_equal(made.sin, recipe(1234, 2, "normal", (0.5, 2.0), 24).astype(np.float32).reshape(1, 3, 1, 8))
    assert float(made.dy.astype(np.float64).min()) >= -3.0 and float(made.dy.astype(np.float64).max()) <= 5.0
    for other in GENERATORS:
        if other != generator:
            assert not np.array_equal(bits(made.dy), bits(make_inputs(replace(c, generator=other)).dy))


@pytest.mark.parametrize("native_on", [True, False])
def test_philox4x32_counters_carry_into_their_second_word_and_big_seeds_into_the_second_key_word(monkeypatch,
                                                                                                  native_on):
    """Elements across 2**34 (block 2**32) and a seed over 2**32: the compiled draws and numpy's equal the plain
    recipe there, so the counter's and the key's upper words are really used."""
    if not native_on:
        monkeypatch.setenv("PRMG_NATIVE", "0")
    seed, begin = 2**64 - 2**31 + 5, 4 * 2**32 - 13
    made = np.empty(40)
    inputs_module._uniform("philox4x32", (seed, 2), begin, made, 1.0, 0.0, np.empty(40))
    key = (seed & 0xFFFFFFFF, seed >> 32)
    words = [philox4x32_block((e // 4 & 0xFFFFFFFF, e // 4 >> 32, 2, 0), key)[e % 4] for e in range(begin, begin + 40)]
    assert np.array_equal(made, np.array(words, np.float64) * 2.0 ** -32)


def test_draws_are_float64_pcg64_streams_rounded_once_to_the_dtype():
    """The recipe of ``generator: pcg64`` (prmg's inputs before philox): PCG64(SeedSequence([seed, index]))."""
    c = case(dtype="bfloat16", cos_dtype="float16", sin_dtype="float32", generator="pcg64",
             dy_input=InputSpec("uniform", (-3.0, 5.0)), sin_input=InputSpec("normal", (0.5, 2.0)))
    made = make_inputs(c)
    generator = [np.random.Generator(np.random.PCG64(np.random.SeedSequence([1234, i]))) for i in range(3)]
    assert np.array_equal(bits(made.dy), bits(rounded(generator[0].uniform(-3.0, 5.0, 2 * 3 * 4 * 16), BF16)
                                              .reshape(2, 3, 4, 16)))
    assert np.array_equal(made.cos, generator[1].uniform(-1.0, 1.0, 24).astype(np.float16).reshape(1, 3, 1, 8))
    assert np.array_equal(made.sin, generator[2].normal(0.5, 2.0, 24).astype(np.float32).reshape(1, 3, 1, 8))
    assert made.dy.dtype == BF16 and made.cos.dtype == np.float16 and made.sin.dtype == np.float32
    assert float(made.dy.astype(np.float64).min()) >= -3.0 and float(made.dy.astype(np.float64).max()) <= 5.0


@pytest.mark.parametrize("generator", GENERATORS)
@pytest.mark.parametrize("kind,args", [("uniform", (-1.0, 1.0)), ("normal", (0.0, 1.0))])
@pytest.mark.parametrize("chunk", [1, 7, 1000, 1 << 20])
def test_chunked_generation_equals_one_shot(generator, kind, args, chunk):
    c = case(shape=(3, 5, 7, 16), dtype="bfloat16", dy_input=InputSpec(kind, args), generator=generator)
    one_shot = make_inputs(c, chunk_elements=10 ** 9)
    chunked = make_inputs(c, chunk_elements=chunk)
    assert np.array_equal(bits(one_shot.dy), bits(chunked.dy))


@pytest.mark.parametrize("generator", GENERATORS)
@pytest.mark.parametrize("kind,args", [("uniform", (-1.0, 1.0)), ("normal", (0.0, 1.0))])
def test_a_drawn_prefix_is_the_first_elements_of_the_whole_tensor(generator, kind, args):
    """``drawn_prefix`` (what ``prmg coverage`` reads), rounded to the dtype, is the run's tensor cut short, for a
    tensor drawn over several threads and Philox chunks as well."""
    c = case(shape=(1, 1, THREADED_DRAWS // 64 + 3, 64), dtype="float16", dy_input=InputSpec(kind, args),
             generator=generator)
    whole = bits(make_inputs(c).dy).reshape(-1)
    for count in (1, 4096, 70_001):
        assert np.array_equal(bits(drawn_prefix(c, "dy", count).astype(np.float16)), whole[:count]), count


def test_normal_draws_have_the_requested_mean_and_spread():
    c = case(shape=(4, 64, 16, 64), dy_input=InputSpec("normal", (3.0, 0.5)))
    dy = make_inputs(c).dy.astype(np.float64)
    assert abs(dy.mean() - 3.0) < 0.01 and abs(dy.std() - 0.5) < 0.01


def test_values_fill_the_tensor_in_c_order_and_round_to_its_dtype():
    values = tuple(float(v) / 3 for v in range(24))
    c = case(cos_dtype="bfloat16", sin_dtype="bfloat16", cos_input=InputSpec("values", values))
    cos = make_inputs(c).cos
    assert cos.dtype == BF16 and cos.shape == (1, 3, 1, 8)
    assert np.array_equal(bits(cos), bits(rounded(np.array(values), BF16).reshape(1, 3, 1, 8)))


@pytest.mark.parametrize("count", [23, 25, 1])
def test_values_of_the_wrong_length_name_the_case_and_field(count):
    c = case(sin_input=InputSpec("values", (0.5,) * count))
    with pytest.raises(PrmgError) as error:
        make_inputs(c)
    assert error.value.field == "inputs.sin.values" and error.value.case == "demo"
    assert "24" in str(error.value) and "demo.yaml" in str(error.value)


def test_non_numeric_values_are_an_error():
    with pytest.raises(PrmgError, match="numbers") as error:
        make_inputs(case(cos_input=InputSpec("values", ("x",) * 24)))
    assert error.value.field == "inputs.cos.values"


def test_file_inputs_load_numbers_and_bfloat16_bit_patterns(tmp_path):
    rng = np.random.default_rng(0)
    dy = rng.uniform(-1, 1, (2, 3, 4, 16)).astype(BF16)
    cos = rng.uniform(-1, 1, (1, 3, 1, 8))
    np.save(tmp_path / "dy.npy", bits(dy))                 # uint16 patterns, as `prmg dump` writes them
    np.save(tmp_path / "cos.npy", cos)                      # float64 values, rounded to the tensor's dtype
    c = case(dtype="bfloat16", dy_input=InputSpec("file", (str(tmp_path / "dy.npy"),)),
             cos_input=InputSpec("file", (str(tmp_path / "cos.npy"),)))
    made = make_inputs(c)
    assert made.dy.dtype == BF16 and np.array_equal(bits(made.dy), bits(dy))
    assert made.cos.dtype == np.float32 and np.array_equal(made.cos, cos.astype(np.float32))


def test_file_inputs_are_read_in_c_order_whatever_their_shape(tmp_path):
    """The case format asks for as many elements as the tensor, as the loader checks."""
    values = np.arange(2 * 3 * 4 * 16, dtype=np.float32)
    np.save(tmp_path / "flat.npy", values)
    c = case(dy_input=InputSpec("file", (str(tmp_path / "flat.npy"),)))
    np.testing.assert_array_equal(make_inputs(c).dy, values.reshape(c.shape))


def test_file_errors_name_the_file_case_and_field(tmp_path):
    np.save(tmp_path / "wrong_shape.npy", np.zeros((2, 3), np.float32))
    np.save(tmp_path / "objects.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    (tmp_path / "garbage.npy").write_bytes(b"not a numpy file")
    for name, message in [("missing.npy", "no such file"), ("wrong_shape.npy", "shape"),
                          ("objects.npy", "cannot read"), ("garbage.npy", "cannot read")]:
        path = str(tmp_path / name)
        with pytest.raises(PrmgError, match=message) as error:
            make_inputs(case(dy_input=InputSpec("file", (path,))))
        assert error.value.field == "inputs.dy.file" and error.value.case == "demo"
        assert error.value.file == "/cases/demo.yaml"


def reference_angle(position, lane, length, mode, base):
    """theta of one table element, straight from the layout rules (a loop-free restatement)."""
    if mode == 1:
        return position * base ** (-2 * (lane // 2) / length)
    if mode == 2:
        half = length // 2
        return position * base ** (-2 * ((lane % half) % (half // 2)) / half)
    return position * base ** (-2 * (lane % (length // 2)) / length)


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
def test_rope_tables_follow_the_mode_layout(mode):
    c = case(rotary_mode=mode, cos_shape=(1, 5, 1, 8), sin_shape=(1, 5, 1, 8), cos_dtype="float32",
             sin_dtype="float32", cos_input=InputSpec("rope", (10000.0,)), sin_input=InputSpec("rope", (10000.0,)))
    made = make_inputs(c)
    for s in range(5):
        for lane in range(8):
            theta = reference_angle(s, lane, 8, mode, 10000.0)
            assert made.cos[0, s, 0, lane] == np.float32(np.cos(theta))
            assert made.sin[0, s, 0, lane] == np.float32(np.sin(theta))
    assert np.all(made.cos[0, 0] == 1) and np.all(made.sin[0, 0] == 0)     # position 0
    if mode == 1:
        assert np.array_equal(made.cos[..., 0::2], made.cos[..., 1::2])
    else:
        quarter = 2 if mode == 2 else 4
        assert np.array_equal(made.sin[..., :quarter], made.sin[..., quarter:2 * quarter])


def test_rope_position_offset_and_broadcast_axes():
    c = case(cos_shape=(2, 3, 4, 8), sin_shape=(2, 3, 4, 8), cos_input=InputSpec("rope", (500.0, 1000)),
             sin_input=InputSpec("rope", (500.0, 1000)))
    made = make_inputs(c)
    assert made.cos[1, 2, 3, 0] == np.float32(np.cos(1002.0))
    assert np.array_equal(made.cos[0], made.cos[1]) and np.array_equal(made.sin[:, :, 0], made.sin[:, :, 3])
    np.testing.assert_allclose(made.cos.astype(np.float64) ** 2 + made.sin.astype(np.float64) ** 2, 1, atol=1e-6)


def test_rope_offsets_per_request_position_each_batch_row():
    offsets = (0, 7, 100000)
    c = case(shape=(3, 1, 4, 16), cos_shape=(3, 1, 1, 8), sin_shape=(3, 1, 1, 8),
             cos_input=InputSpec("rope", (10000.0, offsets)), sin_input=InputSpec("rope", (10000.0, offsets)))
    made = make_inputs(c)
    assert [made.cos[b, 0, 0, 0] for b in range(3)] == [np.float32(np.cos(float(p))) for p in offsets]
    assert made.sin[2, 0, 0, 1] == np.float32(np.sin(100000.0))          # interleave: pair 0 shares the angle


@pytest.mark.parametrize("dtype, patterns", [("float16", [0x7E01, 0xFE00, 0x8000, 0x7C01]),
                                             ("bfloat16", [0x7FC1, 0xFFC0, 0x8000, 0x7F81]),
                                             ("float32", [0x7FC00001, 0xFFC00000, 0x80000000, 0x7F800001])])
def test_bits_give_every_pattern_exactly(dtype, patterns):
    """NaN payloads and signs, -0.0 and signalling NaNs, which decimal values cannot write, come out bit for bit."""
    c = case(shape=(1, 1, 1, 4), dtype=dtype, dy_input=InputSpec("bits", tuple(patterns)))
    assert bits(make_inputs(c).dy).reshape(-1).tolist() == patterns
    with pytest.raises(PrmgError, match="2 bit patterns given but the tensor") as error:
        make_inputs(case(shape=(1, 1, 1, 4), dtype=dtype, dy_input=InputSpec("bits", (1, 2))))
    assert error.value.field == "inputs.dy.bits"


def test_rope_is_refused_for_dy_and_bad_arguments():
    for spec, tensor in [(InputSpec("rope", (10000.0,)), "dy"), (InputSpec("rope", (0.0,)), "cos"),
                         (InputSpec("rope", ()), "sin")]:
        with pytest.raises(PrmgError) as error:
            make_inputs(case(**{f"{tensor}_input": spec}))
        assert error.value.field == f"inputs.{tensor}.rope"


@pytest.mark.parametrize("spec", [InputSpec("uniform", (1.0,)), InputSpec("uniform", ("a", 1)),
                                  InputSpec("normal", (0.0, -1.0)), InputSpec("uniform", (0.0, float("inf"))),
                                  InputSpec("poisson", (1.0,))])
def test_bad_specs_name_the_field(spec):
    with pytest.raises(PrmgError) as error:
        make_inputs(case(cos_input=spec))
    assert error.value.field == f"inputs.cos.{spec.kind}" and error.value.case == "demo"


def test_negative_case_shapes_and_dtypes_are_still_built():
    c = case(shape=(2, 0, 3, 8), cos_shape=(8,), sin_shape=(1, 2, 1, 3, 8), dtype="int32", cos_dtype="float64",
             sin_dtype="bool", cos_input=InputSpec("rope", (10000.0,)))
    made = make_inputs(c)
    assert made.dy.shape == (2, 0, 3, 8) and made.dy.dtype == np.int32
    assert made.cos.shape == (8,) and made.cos.dtype == np.float64
    assert made.sin.shape == (1, 2, 1, 3, 8) and made.sin.dtype == np.bool_


def test_integer_tensors_are_cast_from_the_draws():
    c = case(dtype="int32", dy_input=InputSpec("uniform", (-100.0, 100.0)))
    dy = make_inputs(c).dy
    assert np.array_equal(dy.ravel(), philox4x32_recipe(1234, 0, "uniform", (-100.0, 100.0), dy.size)
                          .astype(np.int32))
    dy = make_inputs(replace(c, generator="pcg64")).dy
    generator = np.random.Generator(np.random.PCG64(np.random.SeedSequence([1234, 0])))
    assert np.array_equal(dy.ravel(), generator.uniform(-100.0, 100.0, dy.size).astype(np.int32))


def test_unknown_dtype_names_the_field():
    with pytest.raises(PrmgError) as error:
        make_inputs(case(cos_dtype="float8"))
    assert error.value.field == "cos_dtype"


def test_large_arrays_are_recycled_only_when_nothing_holds_them():
    from prmg_cli.inputs.seeded import recycled_empty

    pool, shape = {}, (1 << 20,)
    first = recycled_empty("k", shape, np.float32, pool)
    assert recycled_empty("k", shape, np.float32, pool) is not first           # still held: a new one
    address = pool["k"].ctypes.data                                            # held by the pool alone
    assert recycled_empty("k", shape, np.float32, pool).ctypes.data == address  # recycled
    view = recycled_empty("k", shape, np.float32, pool)[::2]
    assert recycled_empty("k", shape, np.float32, pool).ctypes.data != address  # a view keeps it in use
    del view
    assert recycled_empty("k", (1 << 21,), np.float32, pool).shape == (1 << 21,)  # another shape: replaced
    assert recycled_empty("k", (10,), np.float32, pool).shape == (10,) and "k" in pool   # small: not pooled


def test_numpys_argument_check_of_a_draw_is_made_once_and_its_error_every_time():
    """A draw's arguments go through numpy's own checks (a draw of size 0), remembered per kind and arguments; an error
    is not remembered: the same wrong arguments fail again."""
    from prmg_cli.inputs.seeded import _check_arguments

    _check_arguments.cache_clear()
    for _ in range(2):
        with pytest.raises(ValueError, match="scale"):
            _check_arguments("normal", 0.0, -1.0)
        _check_arguments("uniform", -1.0, 1.0)
    assert _check_arguments.cache_info().hits == 1
