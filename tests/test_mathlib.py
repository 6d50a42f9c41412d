"""The math library (vkml.ops.mathlib) through the CPU interpreter, against float64 and numpy/torch.

- div and sqrt: bit-equal to numpy float32 (NaN results compared by NaN-ness, plus vkml's own
  documented NaN bits); rsqrt bit-equal to torch.rsqrt.
- f32_to_f16: bit-equal to numpy's astype(float16) (torch's .half() for NaN) on 2^20 random bit
  patterns and the edge table of shared/reference/semantics.md; all 2^32 with ``-m exhaustive``.
- exp, log, ... : ulp distance to the float64 result rounded to float32, measured in the integer
  order of float32 bit patterns (so a subnormal ulp is 2^-149), on random inputs spanning the
  whole exponent range plus special values; every function's documented bound is asserted.
- NaN/inf/signed-zero tables against torch (CPU), except the documented divergences, which are
  asserted explicitly with the value vkml chose.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from optest import erf64, gelu64, gelu_tanh64, sigmoid64, softplus64

from vkml.errors import DTypeError
from vkml.ir import types as T
from vkml.ir.builder import KernelBuilder
from vkml.ir.interp.reference import evaluate
from vkml.ops import mathlib as M
from vkml.ops.mathlib.division import significand_quotient

NAN, INF = float("nan"), float("inf")
N = 1 << 18
DEFAULT_NAN = 0xFFC00000  # what an invalid operation returns (x86's default NaN, numpy's bits)


def f32_from_bits(*patterns: int) -> np.ndarray:
    return np.array(patterns, dtype=np.uint32).view(np.float32)


def bits(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, np.float32).view(np.uint32)


# NaNs (quiet and signaling, both signs, payloads), infinities, zeros, subnormal and normal
# extremes, and neighbours of 1.
SPECIALS = np.concatenate(
    [
        f32_from_bits(0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFA12345, 0x7FFFFFFF),
        f32_from_bits(0x7F800000, 0xFF800000, 0x00000000, 0x80000000),
        f32_from_bits(0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00800000, 0x80800000),
        f32_from_bits(0x7F7FFFFF, 0xFF7FFFFF, 0x3F800000, 0xBF800000, 0x3F7FFFFF, 0x3F800001),
        np.float32([0.5, -0.5, 2.0, -2.0, 3.0, -3.0, 1e-20, -1e-20, 1e20, -1e20]),
    ]
)


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def log_uniform(seed: int, n: int = N, lo: float = -149, hi: float = 128, signed: bool = True) -> np.ndarray:
    """|x| = 2^U(lo, hi) * U(1, 2): every binade equally likely; both signs if ``signed``."""
    g = rng(seed)
    x = np.exp2(g.uniform(lo, hi, n)) * g.uniform(1.0, 2.0, n)
    if signed:
        x = x * g.choice([-1.0, 1.0], n)
    with np.errstate(over="ignore"):
        return x.astype(np.float32)


def random_bits(seed: int, n: int = N) -> np.ndarray:
    return rng(seed).integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)


def ordered(x: np.ndarray) -> np.ndarray:
    """float32 bit patterns as integers in numeric order (-0 and +0 both map to 0)."""
    i = np.asarray(x, np.float32).view(np.int32).astype(np.int64)
    return np.where(i < 0, -(i & 0x7FFFFFFF), i)


def ulp_distance(got: np.ndarray, ref64: np.ndarray) -> np.ndarray:
    """Distance in float32 ulps from the float64 reference rounded to float32; NaN-ness must agree."""
    with np.errstate(over="ignore", invalid="ignore"):
        ref = np.asarray(ref64, np.float64).astype(np.float32)
    d = np.abs(ordered(got) - ordered(ref))
    nan_got, nan_ref = np.isnan(got), np.isnan(ref)
    return np.where(nan_got | nan_ref, np.where(nan_got == nan_ref, 0, 1 << 40), d)


def assert_within_ulp(got, ref64, max_ulp: int, inputs, what: str) -> None:
    d = ulp_distance(got, ref64)
    if d.max() > max_ulp:
        worst = np.argsort(d)[-4:][::-1]
        shown = "; ".join(
            f"x={tuple(np.asarray(a)[i] for a in inputs)} got {got[i]!r} want {np.float32(ref64[i])!r} ({d[i]} ulp)"
            for i in worst
        )
        raise AssertionError(f"{what}: {int((d > max_ulp).sum())} of {d.size} beyond {max_ulp} ulp: {shown}")


def assert_same_bits(got, want, what: str) -> None:
    """NaN-ness equal, every non-NaN result bit for bit (so -0.0 != +0.0)."""
    got, want = np.asarray(got, np.float32), np.asarray(want, np.float32)
    nan_g, nan_w = np.isnan(got), np.isnan(want)
    bad = (nan_g != nan_w) | (~nan_w & (bits(got) != bits(want)))
    if bad.any():
        i = np.flatnonzero(bad)[:6]
        raise AssertionError(f"{what}: {int(bad.sum())} differ, e.g. at {i}: got {got[i]} want {want[i]}")


def torch_float(fn, *arrays):
    return fn(*(torch.from_numpy(np.ascontiguousarray(a)) for a in arrays)).numpy()


def pairs(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.meshgrid(values, values, indexing="ij")
    return a.ravel(), b.ravel()


# ---------------------------------------------------------------- division


def division_cases() -> tuple[np.ndarray, np.ndarray]:
    g = rng(1)
    normal_a = g.uniform(1, 2, N).astype(np.float32)
    # Quotients across the whole range: subnormal results, overflow, underflow to zero.
    scaled_b = (g.uniform(1, 2, N) * np.exp2(g.integers(-140, 128, N))).astype(np.float32)
    # Exact halfway cases (only possible for subnormal results): odd multiples of 2^-149 / 2^k.
    odd = f32_from_bits(*range(1, 4001, 2))
    halves = np.float32(2.0) ** g.integers(1, 4, odd.size).astype(np.float32)
    sa, sb = pairs(SPECIALS)
    a = np.concatenate([random_bits(2), normal_a, log_uniform(3), odd, sa])
    b = np.concatenate([random_bits(4), scaled_b, log_uniform(5), halves, sb])
    return a, b


def test_div_is_bit_exact_against_numpy():
    a, b = division_cases()
    got = evaluate(M.div, a, b)
    with np.errstate(all="ignore"):
        want = a / b
    assert_same_bits(got, want, "div")


def test_div_nan_bits():
    a = f32_from_bits(0, 0x7F800000, 0x7F800001, 0x3F800000, 0xFFA00001, 0x7FC00001)
    b = f32_from_bits(0x80000000, 0xFF800000, 0x7F800002, 0xFF800003, 0x00000000, 0x7F800004)
    # 0/0 and inf/inf give the default NaN; otherwise the first NaN operand, quieted.
    assert list(bits(evaluate(M.div, a, b))) == [
        DEFAULT_NAN,
        DEFAULT_NAN,
        0x7FC00001,
        0xFFC00003,
        0xFFE00001,
        0x7FC00001,
    ]


def test_div_operator_on_float_values_builds_mathlib_div():
    a, b = np.float32([1.0, 7.0, -0.0]), np.float32([3.0, 0.0, 5.0])
    got = evaluate(lambda x, y: x / y, a, b)
    with np.errstate(divide="ignore"):
        assert_same_bits(got, a / b, "x / y")


def near_halfway_significands(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """x, y in [1, 2) whose quotient lies within 2^-20 ulp of a midpoint between two float32s.

    With y = Y * 2^-23 (Y odd) and a midpoint q = M * 2^-24 (M odd, 25 bits), x = q*y is a float
    exactly when M*Y is a multiple of 2^25; solving M*Y = t (mod 2^25) for a small odd t makes
    x = (M*Y - t) * 2^-47 a float whose quotient misses the midpoint by t*2^-47/y.
    """
    g = rng(seed)
    big_y = g.integers(1 << 22, 1 << 23, n, dtype=np.int64) * 2 + 1
    t = g.choice([-5, -3, -1, 1, 3, 5], n).astype(np.int64)
    mod = 1 << 25
    inverse = big_y.copy()  # Newton's iteration for 1/Y mod 2^25 (Y*Y = 1 mod 8 to start)
    for _ in range(5):
        inverse = inverse * (2 - big_y * inverse % mod) % mod
    big_m = t * inverse % mod
    keep = big_m >= 1 << 24  # M has its leading one at bit 24: q in [1, 2)
    big_m, big_y, t = big_m[keep], big_y[keep], t[keep]
    big_x = (big_m * big_y - t) >> 25  # exact: M*Y - t is a multiple of 2^25
    x = np.ldexp(big_x.astype(np.float64), -22)  # in [1, 4): x/2 puts the quotient in [1/2, 1)
    x = np.where(x >= 2, x / 2, x).astype(np.float32)
    return x, np.ldexp(big_y.astype(np.float64), -23).astype(np.float32)


def test_div_significand_core_rounds_near_halfway_quotients_correctly():
    x, y = near_halfway_significands(11, 1 << 17)
    assert ((x >= 1) & (x < 2) & (y >= 1) & (y < 2)).all()
    assert_same_bits(evaluate(significand_quotient, x, y), x / y, "significand_quotient")


def test_div_near_halfway_quotients_at_every_scale():
    x, y = near_halfway_significands(12, 1 << 17)
    g = rng(13)
    # Exponents over the whole range, both signs: the fast path, its edges and the integer path.
    a = np.ldexp(x * g.choice([-1, 1], x.size), g.integers(-149, 128, x.size)).astype(np.float32)
    b = np.ldexp(y * g.choice([-1, 1], y.size), g.integers(-149, 128, y.size)).astype(np.float32)
    with np.errstate(all="ignore"):
        assert_same_bits(evaluate(M.div, a, b), a / b, "div near halfway")


def test_div_at_the_edges_of_the_fast_range():
    # Exponent-field differences around the float path's limits [-125, 127], random significands.
    g = rng(14)
    n = 1 << 16
    diff = g.choice([*range(-128, -121), *range(124, 131)], n)
    field_b = g.integers(1, 255, n)
    field_a = np.clip(field_b + diff, 0, 254)
    fractions = g.integers(0, 1 << 23, (2, n))
    signs = g.integers(0, 2, (2, n)) << 31
    a = (signs[0] | (field_a << 23) | fractions[0]).astype(np.uint32).view(np.float32)
    b = (signs[1] | (field_b << 23) | fractions[1]).astype(np.uint32).view(np.float32)
    with np.errstate(all="ignore"):
        assert_same_bits(evaluate(M.div, a, b), a / b, "div at the fast range's edges")


def test_div_bit_exact_on_a_million_random_pairs():
    # 2^20 pairs: random bit patterns against each other and against log-uniform magnitudes.
    n = 1 << 19
    a = np.concatenate([random_bits(21, n), log_uniform(22, n, -60, 60)])
    b = np.concatenate([random_bits(23, n), log_uniform(24, n, -60, 60)])
    with np.errstate(all="ignore"):
        assert_same_bits(evaluate(M.div, a, b), a / b, "div on random pairs")


def test_div_builds_the_divisor_once_per_value_and_keeps_the_bits():
    # Quotients sharing a divisor (a row by its sum) share its reciprocal and split: fewer
    # instructions, the same bits as dividing one pair at a time.
    from vkml.ir import builder as B
    from vkml.ir.core import Instr, walk

    def fmuls(fn) -> int:
        kb = KernelBuilder("k", (1, 1, 1))
        ref = kb.buffer("a", T.float32, "readwrite")
        with kb:
            fn(ref)
        return sum(1 for s in walk(kb.finish().body) if isinstance(s, Instr) and s.op == "mul")

    def quotients(ref, count: int) -> None:
        b = ref[0]  # one value: what a row's sum is in a rows kernel
        for k in range(count):
            ref[B.const(k, T.uint32)] = M.div(ref[k + 1], b)

    one, four = fmuls(lambda ref: quotients(ref, 1)), fmuls(lambda ref: quotients(ref, 4))
    assert four == 4 * one - 3 * 5  # the seed and two Newton steps: once (5 mul); its halves take an integer and
    g = rng(25)
    a = np.concatenate([random_bits(26, 4096), log_uniform(27, 4096, -60, 60)]).reshape(-1, 4)
    b = np.concatenate([random_bits(28, 1024), log_uniform(29, 1024, -60, 60)])
    b[g.integers(0, len(b), 64)] = 0.0
    with np.errstate(all="ignore"):
        shared = evaluate(lambda b_, *a_: tuple(M.div(x, b_) for x in a_), b, *a.T)
        for k in range(4):
            assert_same_bits(shared[k], a[:, k] / b, f"div sharing its divisor, quotient {k}")


def test_div_on_vulkan_near_halfway_and_random_pairs():
    # The float path on a real driver (lavapipe here): Dekker's exact products need NoContraction.
    import vkml

    assert vkml.vulkan_device_reports(), "no Vulkan device: install lavapipe"
    x, y = near_halfway_significands(16, 1 << 14)
    g = rng(17)
    a = np.concatenate([x * g.choice(np.float32([-1, 1]), x.size) * np.float32(2.0**-60), random_bits(18, 1 << 13)])
    b = np.concatenate([y * np.float32(2.0**40), random_bits(19, 1 << 13)])
    assert a.dtype == b.dtype == np.float32
    device = vkml.best_device()
    got = (vkml.tensor(a, device=device) / vkml.tensor(b, device=device)).numpy()
    with np.errstate(all="ignore"):
        assert_same_bits(got, a / b, "div on Vulkan")


@pytest.mark.exhaustive
def test_div_significand_core_exhaustive_over_x_for_sampled_y():
    # Every significand x in [1, 2) against 64 divisors: 2^29 quotients through the float core.
    x = (np.arange(1 << 23, dtype=np.uint32) | 0x3F800000).view(np.float32)
    for y in near_halfway_significands(15, 128)[1][:64]:
        ys = np.full_like(x, y)
        assert_same_bits(evaluate(significand_quotient, x, ys), x / ys, f"significand_quotient(x, {y!r})")


# ---------------------------------------------------------------- sqrt and rsqrt


def test_sqrt_is_bit_exact_against_numpy():
    subnormals = f32_from_bits(*rng(6).integers(1, 0x00800000, 1 << 16))
    x = np.concatenate([random_bits(7), log_uniform(8), subnormals, SPECIALS])
    with np.errstate(invalid="ignore"):
        want = np.sqrt(x)
    got = evaluate(M.sqrt, x)
    assert_same_bits(got, want, "sqrt")
    # Invalid gives the default NaN; a NaN operand comes back quieted.
    nan_bits = bits(evaluate(M.sqrt, f32_from_bits(0xBF800000, 0xFF800000, 0x7F800001, 0xFFC00002)))
    assert list(nan_bits) == [DEFAULT_NAN, DEFAULT_NAN, 0x7FC00001, 0xFFC00002]


@pytest.mark.exhaustive
def test_sqrt_exhaustive_on_one_to_four():
    # The integer core sees only the significand and the exponent's parity, so [1, 4) covers it.
    x = np.arange(0x3F800000, 0x40800000, dtype=np.uint32).view(np.float32)
    assert_same_bits(evaluate(M.sqrt, x), np.sqrt(x), "sqrt on [1, 4)")


def test_rsqrt_is_bit_equal_to_torch():
    x = np.concatenate([np.abs(log_uniform(9)), SPECIALS])
    assert_same_bits(evaluate(M.rsqrt, x), torch_float(torch.rsqrt, x), "rsqrt")


# ---------------------------------------------------------------- float16


F16_EDGES = [  # semantics.md §2: input -> f16 bits
    (np.float32(65519.996), 0x7BFF),
    (np.float32(65520.0), 0x7C00),
    (np.float32(-65520.0), 0xFC00),
    (np.float32(2.0**-24), 0x0001),
    (np.float32(2.0**-25), 0x0000),
    (np.nextafter(np.float32(2.0**-25), np.float32(1)), 0x0001),
    (np.float32(1.5 * 2.0**-24), 0x0002),
    (np.float32(2.5 * 2.0**-24), 0x0002),
    (np.float32(1 + 2.0**-11), 0x3C00),
    (np.float32(1 + 3 * 2.0**-11), 0x3C02),
    (np.float32(2.0**-14 * (1 - 2.0**-24)), 0x0400),
    (np.float32(-0.0), 0x8000),
]


def f16_bits_of(x: np.ndarray) -> np.ndarray:
    return evaluate(M.f32_to_f16, x).view(np.uint16)


def check_f16_chunk(x: np.ndarray) -> None:
    got = f16_bits_of(x)
    with np.errstate(over="ignore", invalid="ignore"):
        want = x.astype(np.float16).view(np.uint16)
    nan = np.isnan(x)
    assert np.array_equal(got[~nan], want[~nan]), "f32_to_f16 differs from numpy on non-NaN input"
    # NaN: torch's .half() (sign kept, quiet bit forced, top 9 payload bits kept).
    torch_nan = torch.from_numpy(x[nan]).half().numpy().view(np.uint16)
    assert np.array_equal(got[nan], torch_nan), "f32_to_f16 differs from torch on NaN input"


def test_f32_to_f16_random_bits_and_edges():
    x = np.concatenate([random_bits(10, 1 << 20), SPECIALS, np.float32([e[0] for e in F16_EDGES])])
    check_f16_chunk(x)
    assert list(f16_bits_of(np.float32([e[0] for e in F16_EDGES]))) == [e[1] for e in F16_EDGES]


def test_f32_to_f16_in_range_equals_f32_to_f16_within_its_domain():
    """Every 101st float32 of the subnormal-to-normal crossing, random ones below 65520 and every NaN
    of SPECIALS, both signs: the same bits as the general narrowing."""
    crossing = np.arange(0x32F00000, 0x38900000, 101, dtype=np.uint64).astype(np.uint32)
    in_range = np.random.default_rng(61).integers(0, 0x477FF000, 1 << 18, dtype=np.uint64).astype(np.uint32)
    x = np.concatenate([crossing, in_range, np.uint32([0, 1, 0x3F800000, 0x38800000, 0x387FFFFF, 0x477FEFFF])])
    x = np.concatenate([x, x | np.uint32(0x80000000)]).view(np.float32)
    x = np.concatenate([x, SPECIALS[np.isnan(SPECIALS)]])
    assert np.array_equal(evaluate(M.f32_to_f16_in_range, x).view(np.uint16), f16_bits_of(x))


@pytest.mark.exhaustive
def test_f32_to_f16_all_patterns():
    chunk = 1 << 24
    for start in range(0, 1 << 32, chunk):
        check_f16_chunk(np.arange(start, start + chunk, dtype=np.uint64).astype(np.uint32).view(np.float32))


def test_f16_to_f32_all_patterns():
    h = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    got = evaluate(M.f16_to_f32, h)
    assert np.array_equal(bits(got), bits(h.astype(np.float32)))


# ---------------------------------------------------------------- transcendental precision


def _uniform(seed, lo, hi):
    return rng(seed).uniform(lo, hi, N).astype(np.float32)


def neighbours(values, steps: int = 4) -> np.ndarray:
    """Each value and its ``steps`` float32 neighbours on either side."""
    centre = ordered(np.float32(values))[:, None] + np.arange(-steps, steps + 1)[None, :]
    i = centre.ravel()
    return np.where(i < 0, (-i) | 0x80000000, i).astype(np.uint32).view(np.float32)


# Overflow and underflow thresholds, where results turn subnormal, and the split points of the
# piecewise evaluations (log's sqrt(2), erf's and gelu's 0.75, tanh's 9.011, ...).
THRESHOLDS = neighbours(
    [88.72284, -87.33655, -103.27893, -103.97208, 128.0, -126.0, -149.0, -150.0, 40.0, -17.32868]
    + [1.4142135, 0.70710677, -0.99999994, 9.010913, 0.75, -0.75, 3.92, -13.2, -14.4, -10.0, -10.6, 20.0]
    + [0.34657359, -0.34657359, 1.0, -1.0]
)


# name -> (float64 reference, ulp bound, inputs beyond the log-uniform sweep and the specials)
UNARY = {
    "exp": (np.exp, 1, lambda: _uniform(20, -104, 89)),
    "exp2": (np.exp2, 1, lambda: _uniform(21, -151, 129)),
    "expm1": (np.expm1, 1, lambda: _uniform(22, -20, 89)),
    "log": (np.log, 1, lambda: _uniform(23, 0.25, 4)),
    "log2": (np.log2, 1, lambda: _uniform(24, 0.25, 4)),
    "log1p": (np.log1p, 1, lambda: _uniform(25, -1, 1)),
    "sigmoid": (sigmoid64, 2, lambda: _uniform(26, -110, 30)),
    "tanh": (np.tanh, 2, lambda: _uniform(27, -10, 10)),
    "softplus": (softplus64, 2, lambda: _uniform(28, -110, 30)),
    "erf": (erf64, 2, lambda: _uniform(29, -5, 5)),
    "gelu": (gelu64, 2, lambda: _uniform(30, -16, 4)),
    "gelu_tanh": (gelu_tanh64, 2, lambda: _uniform(31, -12, 4)),
}


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_within_documented_ulp(name):
    ref64, bound, focused = UNARY[name]
    x = np.concatenate([log_uniform(40), focused(), SPECIALS, THRESHOLDS])
    with np.errstate(all="ignore"):
        want = ref64(x.astype(np.float64))
    got = evaluate(getattr(M, name), x)
    assert_within_ulp(got, want, bound, (x,), name)
    assert not np.isnan(got[~np.isnan(want)]).any(), f"{name}: NaN for an input with a non-NaN result"


def test_functions_state_their_precision():
    for name in [*UNARY, "div", "sqrt", "rsqrt", "pow", "abs", "maximum", "minimum", "clamp", "relu", "sign"]:
        doc = getattr(M, name).__doc__
        assert "Precision:" in doc and "Special values:" in doc, name


def test_pow_within_one_ulp():
    g = rng(50)
    # Exponents t = y*log2|x| over the whole range of finite, nonzero results.
    x1 = np.abs(log_uniform(51))
    log2x = np.log2(x1.astype(np.float64))
    y1 = (g.uniform(-155, 130, N) / np.where(log2x == 0, 1, log2x)).astype(np.float32)
    x2, y2 = _uniform(52, 0, 4), _uniform(53, -40, 40)
    x3, y3 = _uniform(54, -10, 10), g.integers(-40, 41, N).astype(np.float32)  # negative bases
    x4, y4 = _uniform(55, 0.999, 1.001), _uniform(56, -1e5, 1e5)  # large y: log2|x| must be very accurate
    x = np.concatenate([x1, x2, x3, x4])
    y = np.concatenate([y1, y2, y3, y4])
    with np.errstate(all="ignore"):
        want = np.power(x.astype(np.float64), y.astype(np.float64))
    assert_within_ulp(evaluate(M.pow, x, y), want, 1, (x, y), "pow")


def test_pow_integer_powers_are_exact_when_representable():
    x = np.float32([2, 3, -3, 10, -2, 0.5, 7, 1.5])
    y = np.float32([10, 5, 3, 7, -3, -20, 8, 4])
    assert_same_bits(evaluate(M.pow, x, y), (x.astype(np.float64) ** y).astype(np.float32), "pow, integer powers")


# ---------------------------------------------------------------- special values against torch


ACTIVATIONS = {
    "exp": torch.exp,
    "log": torch.log,
    "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "softplus": torch.nn.functional.softplus,
    "gelu": torch.nn.functional.gelu,
    "gelu_tanh": lambda t: torch.nn.functional.gelu(t, approximate="tanh"),
    "relu": torch.relu,
    "erf": torch.erf,
    "expm1": torch.expm1,
    "log1p": torch.log1p,
    "log2": torch.log2,
    "exp2": torch.exp2,
    "abs": torch.abs,
}
# Inputs where vkml deliberately differs from torch: (name, input) -> vkml's value.
DIVERGENCES = {
    ("gelu", -INF): -0.0,  # the limit; torch gives NaN
    ("gelu", INF): INF,  # torch gives inf or NaN depending on the tensor length
    ("gelu", np.float32(3.4028235e38)): np.float32(3.4028235e38),  # exact; torch overflows above 2^127
    ("gelu", np.float32(-3.4028235e38)): -0.0,
    ("gelu_tanh", -INF): -0.0,  # the limit; torch gives NaN
    ("sign", NAN): NAN,  # a NaN propagates; torch gives 0
}
SPECIAL_POINTS = np.concatenate(
    [SPECIALS, np.float32([88.72283, 88.72284, -103.97, -104.0, 9.0, 9.1, 20.0, 20.5, -87.5, -14.0, 1.0e-30])]
)


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_special_values_like_torch(name):
    """Same NaN-ness and infinities as torch, and the same signed zeros and limits at ±0 and ±inf.

    Finite nonzero results are left to the float64 tests: torch flushes some tails to zero
    (sigmoid(-103.9), log1p(2^-149), gelu(-14)) that vkml rounds correctly.
    """
    x = SPECIAL_POINTS
    got = evaluate(getattr(M, name), x)
    # One point per call: torch's vectorized CPU kernels give other signed zeros than its scalar loop
    # (gelu(-0.0) is +0 in an AVX2 vector, -0 in the scalar tail), so which one a point meets depends
    # on the tensor's length and the host's ISA; the scalar loop follows the formula.
    want = np.concatenate([torch_float(ACTIVATIONS[name], x[i : i + 1]) for i in range(x.size)])
    chosen = np.array([(name, v) in DIVERGENCES or (name, float(v)) in DIVERGENCES for v in x])
    exact = (~np.isfinite(want) | ~np.isfinite(got) | (x == 0) | np.isinf(x)) & ~chosen
    assert_same_bits(got[exact], want[exact], f"{name} vs torch at nonfinite results, ±0 and ±inf")
    assert np.isfinite(got[~exact & ~chosen]).all()


@pytest.mark.parametrize(("name", "x", "value"), [(k[0], k[1], v) for k, v in DIVERGENCES.items()])
def test_documented_divergences(name, x, value):
    got = evaluate(getattr(M, name), np.float32([x]))
    assert_same_bits(got, np.float32([value]), f"{name}({x})")
    assert "Divergence from PyTorch:" in getattr(M, name).__doc__


POW_VALUES = np.float32([0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0, -8.0, INF, -INF, NAN, 1.0 / 3.0, 1e-30])


def test_pow_special_cases_like_torch():
    x, y = pairs(POW_VALUES)
    got = evaluate(M.pow, x, y)
    want = torch_float(torch.pow, x, y)
    exact = ~np.isfinite(want) | (want == 0) | ~np.isfinite(got) | (got == 0) | (np.abs(want) == 1)
    assert_same_bits(got[exact], want[exact], "pow special cases")
    assert_within_ulp(got[~exact], want[~exact].astype(np.float64), 1, (x[~exact], y[~exact]), "pow vs torch")


def test_pow_c99_table():
    cases = [  # (x, y, result)
        (NAN, 0.0, 1.0),
        (NAN, -0.0, 1.0),
        (1.0, NAN, 1.0),
        (-8.0, 1.0 / 3.0, NAN),
        (-2.0, 3.0, -8.0),
        (-2.0, 2.0, 4.0),
        (-1.0, INF, 1.0),
        (-1.0, -INF, 1.0),
        (0.0, -1.0, INF),
        (-0.0, -1.0, -INF),
        (-0.0, -2.0, INF),
        (-0.0, 3.0, -0.0),
        (0.0, -INF, INF),
        (-INF, 3.0, -INF),
        (-INF, -3.0, -0.0),
        (-INF, 0.5, INF),
        (0.5, INF, 0.0),
        (2.0, -INF, 0.0),
        (-3.0, 2.0**25, INF),  # huge even integer exponent
        (2.0, 1000.0, INF),
        (2.0, -1000.0, 0.0),
    ]
    x, y, want = (np.float32([c[i] for c in cases]) for i in range(3))
    assert_same_bits(evaluate(M.pow, x, y), want, "pow C99 table")


def test_maximum_minimum_nan_and_signed_zero():
    a = np.float32([NAN, 1.0, NAN, 0.0, -0.0, -0.0, 3.0, -INF])
    b = np.float32([1.0, NAN, NAN, -0.0, 0.0, -0.0, 2.0, INF])
    assert_same_bits(evaluate(M.maximum, a, b), [NAN, NAN, NAN, 0.0, 0.0, -0.0, 3.0, INF], "maximum")
    assert_same_bits(evaluate(M.minimum, a, b), [NAN, NAN, NAN, -0.0, -0.0, -0.0, 2.0, -INF], "minimum")
    # Away from signed zeros, torch agrees.
    x, y = pairs(SPECIAL_POINTS)
    zeros = (x == 0) & (y == 0)
    for name, fn in (("maximum", torch.maximum), ("minimum", torch.minimum)):
        got = evaluate(getattr(M, name), x, y)
        assert_same_bits(got[~zeros], torch_float(fn, x, y)[~zeros], name)


def test_clamp_like_torch():
    x = SPECIAL_POINTS
    for lo, hi in [(-1.0, 1.0), (0.0, None), (None, 0.5), (2.0, -2.0), (-0.0, -0.0), (NAN, 1.0), (None, NAN)]:
        got = evaluate(lambda v, lo=lo, hi=hi: M.clamp(v, lo, hi), x)
        want = torch_float(lambda t, lo=lo, hi=hi: torch.clamp(t, lo, hi), x)
        if lo is None and np.isnan(hi):  # the reference PyTorch's rule (2.13); 2.11 returns x for a NaN max alone
            want = np.full_like(x, np.nan)
        assert_same_bits(got, want, f"clamp({lo}, {hi})")
    lo = np.full_like(x, -0.5)
    hi = np.where(np.arange(x.size) % 3 == 0, np.float32(NAN), np.float32(0.5))
    got = evaluate(M.clamp, x, lo, hi)
    assert_same_bits(got, torch_float(torch.clamp, x, lo, hi), "clamp with tensor bounds")
    assert_same_bits(evaluate(lambda v: M.clamp_min(v, 0.0), x), torch_float(lambda t: t.clamp_min(0.0), x), "min")
    assert_same_bits(evaluate(lambda v: M.clamp_max(v, 0.0), x), torch_float(lambda t: t.clamp_max(0.0), x), "max")


def test_sign_relu_abs():
    x = SPECIAL_POINTS
    want = torch_float(torch.sign, x)
    want[np.isnan(x)] = NAN  # the documented divergence
    assert_same_bits(evaluate(M.sign, x), want, "sign")
    assert_same_bits(evaluate(M.relu, np.float32([-0.0, -INF, NAN])), [-0.0, 0.0, NAN], "relu")
    assert list(bits(evaluate(M.abs, f32_from_bits(0xFFC00001, 0x80000000)))) == [0x7FC00001, 0]


def test_softplus_beta_and_threshold():
    x = np.concatenate([_uniform(60, -40, 40), SPECIALS])
    for beta, threshold in [(2.0, 20.0), (0.5, 5.0), (3.0, 30.0)]:
        got = evaluate(lambda v, b=beta, t=threshold: M.softplus(v, beta=b, threshold=t), x)
        with np.errstate(all="ignore"):
            z = x.astype(np.float64) * beta
            want = np.where(z.astype(np.float32) > threshold, x, np.log1p(np.exp(np.minimum(z, 90.0))) / beta)
        assert_within_ulp(got, want, 2, (x,), f"softplus(beta={beta}, threshold={threshold})")


def test_float16_operands_are_rejected_with_the_function_name():
    kb = KernelBuilder("k")
    with kb:
        h = kb.param("h", T.float16)
        with pytest.raises(DTypeError, match="exp"):
            M.exp(h)
