"""The CPU reference interpreter, instruction by instruction, against direct numpy (and ``evaluate``)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from vkml.ir import types as T
from vkml.ir.builder import bitcast, const, const_bits, convert, emit
from vkml.ir.instructions import CONVERSIONS, SPECS
from vkml.ir.interp.reference import evaluate

RNG = np.random.default_rng(1234)
UINT_OF = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def assert_same_bits(actual: np.ndarray, expected: np.ndarray) -> None:
    """Equal dtypes and equal bits (so NaN payloads and the sign of zero count)."""
    expected = np.asarray(expected)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    if actual.dtype.kind == "f":
        u = UINT_OF[actual.dtype.itemsize]
        np.testing.assert_array_equal(actual.view(u), expected.view(u))
    else:
        np.testing.assert_array_equal(actual, expected)


def samples(dtype: T.DType, n: int = 300) -> np.ndarray:
    """Special values of ``dtype`` followed by random ones (random bit patterns for floats)."""
    npt = dtype.np
    if dtype.is_float:
        u = UINT_OF[dtype.nbytes]
        info = np.finfo(npt)
        special = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0]
        special += [info.max, -info.max, info.tiny, -info.tiny, info.smallest_subnormal, -info.smallest_subnormal]
        special = np.array(special, dtype=npt)
        largest_subnormal = np.array([info.tiny], dtype=npt).view(u) - u(1)
        bits = RNG.integers(0, np.iinfo(u).max, size=n // 2, dtype=u, endpoint=True)
        moderate = (RNG.standard_normal(n // 2) * 10.0 ** RNG.integers(-3, 4, size=n // 2)).astype(npt)
        return np.concatenate([special, largest_subnormal.view(npt), bits.view(npt), moderate])
    if dtype is T.bool_:
        return np.array([False, True] + list(RNG.integers(0, 2, size=n).astype(bool)))
    info = np.iinfo(npt)
    special = np.array([info.min, info.min + 1, info.max, info.max - 1, 0, 1, 2, 7, info.max // 2], dtype=npt)
    if dtype.is_signed:
        special = np.concatenate([special, np.array([-1, -2, -7], dtype=npt)])
    small = RNG.integers(-20 if dtype.is_signed else 0, 20, size=n // 2).astype(npt)
    return np.concatenate([special, RNG.integers(info.min, info.max, size=n // 2, dtype=npt, endpoint=True), small])


def pairs(dtype: T.DType) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of the first 25 samples, then random pairs."""
    s = samples(dtype)
    head = s[:25]
    a, b = (np.array(x, dtype=dtype.np) for x in zip(*itertools.product(head, head)))
    return np.concatenate([a, s]), np.concatenate([b, RNG.permutation(s)])


def emitting(op: str, *attrs):
    return lambda *vals: emit(op, *vals, attrs=attrs)


# ---------------------------------------------------------------- pure instructions

FLOAT_TYPES = (T.float32, T.float16)
INT_TYPES = (T.int32, T.uint32, T.int64)

BINARY_REFERENCES = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
}
UNORDERED_REFERENCES = {
    "ult": lambda a, b: (a < b) | np.isnan(a) | np.isnan(b),
    "ule": lambda a, b: (a <= b) | np.isnan(a) | np.isnan(b),
    "ugt": lambda a, b: (a > b) | np.isnan(a) | np.isnan(b),
    "uge": lambda a, b: (a >= b) | np.isnan(a) | np.isnan(b),
}


@pytest.mark.parametrize("dtype", FLOAT_TYPES + INT_TYPES, ids=lambda t: t.short)
@pytest.mark.parametrize("op", sorted(BINARY_REFERENCES))
def test_binary_arithmetic_and_comparisons(op, dtype):
    a, b = pairs(dtype)
    with np.errstate(all="ignore"):
        expected = BINARY_REFERENCES[op](a, b)
    assert_same_bits(evaluate(emitting(op), a, b), expected)


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=lambda t: t.short)
@pytest.mark.parametrize("op", sorted(UNORDERED_REFERENCES))
def test_unordered_float_comparisons(op, dtype):
    a, b = pairs(dtype)
    assert_same_bits(evaluate(emitting(op), a, b), UNORDERED_REFERENCES[op](a, b))


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=lambda t: t.short)
def test_isnan_and_float_negation_flips_only_the_sign_bit(dtype):
    a = samples(dtype)
    assert_same_bits(evaluate(emitting("isnan"), a), a != a)
    u = UINT_OF[dtype.nbytes]
    sign = u(1 << (dtype.bits - 1))
    assert_same_bits(evaluate(emitting("neg"), a).view(u), a.view(u) ^ sign)


@pytest.mark.parametrize("dtype", INT_TYPES, ids=lambda t: t.short)
def test_integer_negation_wraps(dtype):
    a = samples(dtype)
    info = np.iinfo(dtype.np)
    expected = np.array([(-int(x)) % (1 << dtype.bits) for x in a], dtype=np.uint64)
    if dtype.is_signed:
        expected = np.array([v - (1 << dtype.bits) if v > info.max else v for v in expected.tolist()], dtype.np)
    assert_same_bits(evaluate(emitting("neg"), a), expected.astype(dtype.np))


def _python_trunc_div(a: int, b: int) -> tuple[int, int]:
    q = abs(a) // abs(b)
    q = q if (a < 0) == (b < 0) else -q
    return q, a - q * b


@pytest.mark.parametrize("dtype", INT_TYPES, ids=lambda t: t.short)
def test_idiv_irem_truncate_toward_zero(dtype):
    a, b = pairs(dtype)
    info = np.iinfo(dtype.np)
    defined = b != 0
    if dtype.is_signed:  # the quotient overflows: undefined
        defined &= ~((a == info.min) & (b == -1))
    a, b = a[defined], b[defined]
    q, r = evaluate(lambda x, y: (emit("idiv", x, y), emit("irem", x, y)), a, b)
    expected = [_python_trunc_div(int(x), int(y)) for x, y in zip(a, b)]
    assert_same_bits(q, np.array([e[0] for e in expected], dtype.np))
    assert_same_bits(r, np.array([e[1] for e in expected], dtype.np))
    if dtype.is_signed:
        small = np.array([7, -7, 7, -7], dtype.np), np.array([2, 2, -2, -2], dtype.np)
        q, r = evaluate(lambda x, y: (emit("idiv", x, y), emit("irem", x, y)), *small)
        assert q.tolist() == [3, -3, -3, 3] and r.tolist() == [1, -1, 1, -1]


@pytest.mark.parametrize("dtype", INT_TYPES + (T.bool_,), ids=lambda t: t.short)
def test_bitwise_ops(dtype):
    a, b = pairs(dtype)
    for op, ref in {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}.items():
        assert_same_bits(evaluate(emitting(op), a, b), ref(a, b))
    expected_not = ~a if dtype is not T.bool_ else np.logical_not(a)
    assert_same_bits(evaluate(emitting("not"), a), expected_not)


@pytest.mark.parametrize("count_type", (T.uint32, T.int32), ids=lambda t: t.short)
@pytest.mark.parametrize("dtype", INT_TYPES, ids=lambda t: t.short)
def test_shifts_against_python_integers(dtype, count_type):
    a = samples(dtype)
    counts = RNG.integers(0, dtype.bits, size=len(a)).astype(count_type.np)
    counts[:3] = [0, 1, dtype.bits - 1]
    left, right = evaluate(lambda x, s: (emit("shl", x, s), emit("shr", x, s)), a, counts)
    width = 1 << dtype.bits
    expected_left = [(int(x) << int(s)) % width for x, s in zip(a, counts)]
    expected_right = [(int(x) >> int(s)) % width for x, s in zip(a, counts)]  # Python >> is arithmetic
    as_bits = UINT_OF[dtype.nbytes]
    assert left.view(as_bits).tolist() == expected_left
    assert right.view(as_bits).tolist() == expected_right


@pytest.mark.parametrize("dtype", FLOAT_TYPES + INT_TYPES + (T.bool_,), ids=lambda t: t.short)
def test_select_is_a_pure_lane_choice(dtype):
    a, b = pairs(dtype)
    cond = RNG.integers(0, 2, size=len(a)).astype(bool)
    assert_same_bits(evaluate(emitting("select"), cond, a, b), np.where(cond, a, b))


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=lambda t: t.short)
def test_rounding_instructions(dtype):
    a = samples(dtype)
    for op, ref in {"floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "round_even": np.rint}.items():
        with np.errstate(invalid="ignore"):
            expected = ref(a)
        assert_same_bits(evaluate(emitting(op), a), expected)
    ties = np.array([0.5, 1.5, 2.5, -0.5, -2.5, -0.2], dtype=dtype.np)
    assert_same_bits(evaluate(emitting("round_even"), ties), np.array([0, 2, 2, -0.0, -2, -0.0], dtype.np))


# ---------------------------------------------------------------- conversions


def _in_range_for(src: T.DType, dst: T.DType, a: np.ndarray) -> np.ndarray:
    if not (src.is_float and dst.is_int):
        return a
    info = np.iinfo(dst.np)
    finite = a[np.isfinite(a)].astype(np.float64)
    return finite[(finite > info.min - 1) & (finite < info.max + 1)].astype(src.np)


@pytest.mark.parametrize(
    "pair", sorted(CONVERSIONS, key=lambda p: (p[0].name, p[1].name)), ids=lambda p: "-".join(t.short for t in p)
)
def test_convert_matches_numpy(pair):
    src, dst = pair
    a = _in_range_for(src, dst, samples(src))
    with np.errstate(all="ignore"):
        expected = a.astype(dst.np)
    assert_same_bits(evaluate(lambda x: convert(x, dst), a), expected)


def test_convert_edge_cases_by_hand():
    assert evaluate(lambda x: convert(x, T.int32), np.int64([2**32 + 5, -1, 2**31])).tolist() == [5, -1, -(2**31)]
    assert evaluate(lambda x: convert(x, T.int64), np.uint32([0xFFFFFFFF])).tolist() == [0xFFFFFFFF]
    assert evaluate(lambda x: convert(x, T.int64), np.int32([-1])).tolist() == [-1]
    assert evaluate(lambda x: convert(x, T.int32), np.float32([-2.7, 2.7, -0.0])).tolist() == [-2, 2, 0]
    # int64 -> f32 rounds once, to nearest even; via float64 it would round twice and land on 2^60.
    big = np.int64([2**60 + 2**36 + 1, 2**60 + 2**36, 2**60 + 3 * 2**36])
    assert [int(v) - 2**60 for v in evaluate(lambda x: convert(x, T.float32), big)] == [2**37, 0, 2**38]


def test_bitcast_and_f16_bits():
    f = samples(T.float32)
    assert_same_bits(evaluate(lambda x: bitcast(x, T.uint32), f), f.view(np.uint32))
    assert_same_bits(evaluate(lambda x: bitcast(x, T.int32), f), f.view(np.int32))
    i = samples(T.int32)
    assert_same_bits(evaluate(lambda x: bitcast(x, T.float32), i), i.view(np.float32))
    assert_same_bits(evaluate(lambda x: bitcast(x, T.uint32), i), i.view(np.uint32))
    h = samples(T.float16)
    assert_same_bits(evaluate(lambda x: emit("f16_to_bits", x), h), h.view(np.uint16).astype(np.uint32))
    bits = np.uint32([0x3C00, 0xFFFF3C00, 0x7E01, 0x8001])  # high bits are ignored
    expected = np.uint16([0x3C00, 0x3C00, 0x7E01, 0x8001]).view(np.float16)
    assert_same_bits(evaluate(lambda x: emit("f16_from_bits", x), bits), expected)


def test_constants_keep_their_bits():
    x = np.zeros(3, np.float32)
    out = evaluate(lambda v: (v + const_bits(0x7FC00123, T.float32), v - 0.0, const(-0.0, T.float32) + v), x)
    assert out[0].view(np.uint32)[0] & 0x7FFFFF == 0x400123
    assert_same_bits(out[1], np.zeros(3, np.float32))
    assert_same_bits(out[2], np.zeros(3, np.float32))  # -0 + +0 is +0


def test_mul_add_rounds_the_product_then_the_sum():
    f = samples(T.float32)
    a, b, c = f, np.roll(f, 1), np.roll(f, 2)
    with np.errstate(all="ignore"):
        assert_same_bits(evaluate(lambda x, y, z: emit("mul_add", x, y, z), a, b, c), a * b + c)
    # (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24 rounds to 1 + 2^-11, so the sum is 0 (a fused one would give 2^-24).
    x = np.float32([1 + 2.0**-12])
    assert_same_bits(evaluate(lambda p, q: emit("mul_add", p, p, q), x, -(x * x)), np.float32([0.0]))


def test_every_pure_instruction_is_tested_here():
    tested = set(BINARY_REFERENCES) | set(UNORDERED_REFERENCES)
    tested |= {"isnan", "neg", "idiv", "irem", "and", "or", "xor", "not", "shl", "shr", "select"}
    tested |= {"floor", "ceil", "trunc", "round_even", "convert", "bitcast", "f16_to_bits", "f16_from_bits"}
    tested |= {"mul_add"}
    assert {name for name, spec in SPECS.items() if spec.kind == "pure"} == tested


# ---------------------------------------------------------------- evaluate


def test_evaluate_round_trip_single_and_tuple_outputs():
    a = samples(T.float32, 1000)
    b = RNG.permutation(a)
    with np.errstate(all="ignore"):
        assert_same_bits(evaluate(lambda x, y: x * y + x, a, b), a * b + a)
    diff, positive = evaluate(lambda x, y: (x - y, x > 0.0), a, b, local_size=32)
    with np.errstate(all="ignore"):
        assert_same_bits(diff, a - b)
    assert_same_bits(positive, a > 0)


def test_evaluate_handles_empty_inputs_and_tails():
    assert evaluate(lambda x: x + 1, np.zeros(0, np.int32)).shape == (0,)
    assert evaluate(lambda x: x + 1, np.arange(65, dtype=np.int32)).tolist() == list(range(1, 66))


def test_evaluate_rejects_bad_inputs():
    with pytest.raises(ValueError, match="one length"):
        evaluate(lambda x, y: x + y, np.zeros(3, np.float32), np.zeros(4, np.float32))
    with pytest.raises(TypeError, match="float128"):
        evaluate(lambda x: x, np.zeros(3, np.longdouble))
    with pytest.raises(ValueError, match="expected IR Values"):
        evaluate(lambda x: 3, np.zeros(3, np.float32))
