"""The math library's conversion-free rounding keeps every bit of the formulas it replaced.

exp's reduction and scaling and log's exponent used round_even and float<->int conversions,
which Hopper runs at 1/8 of its float32 add rate; ``round_to_int``, ``round_and_pow2`` and
``int_to_float`` (mathlib/bits.py) do the same with an add of 1.5 * 2^23. exp and exp2 are
compared with their formulas under the old rounding (round_even, a convert, ``scale`` by an int32 k) on every 97th
float32 bit pattern of their clamped ranges; the other users are evaluated twice, once with
the old rounding patched back in, on samples of their whole range. The bits must agree. pow's
integer and parity tests (float adds instead of trunc and a convert) and unpack's normalisation
of subnormals (a subtraction instead of an int->float convert) are checked against numpy.
"""

from __future__ import annotations

import numpy as np
import pytest

from vkml.ir.builder import convert, isnan, round_even, select
from vkml.ir.interp.reference import evaluate
from vkml.ops import mathlib as M
from vkml.ops.mathlib import bits, explog, power
from vkml.ops.mathlib.bits import F32, I32, f32, quiet
from vkml.ops.mathlib.dd import mul_dd_const, scale, two_sum

CHUNK = 1 << 20  # elements per interpreter call: bounds its memory


def _old_round_to_int(v):
    k = round_even(v)
    return k, convert(k, I32)


def _old_int_to_float(k):
    return convert(k, F32)


def _old_exp(x):
    """exp's formula with the old rounding: round_even, a float->int convert, and ``scale`` by the int32 k."""
    clamped = select(x < 89.0, x, f32(89.0))
    clamped = select(clamped > -104.0, clamped, f32(-104.0))
    k = round_even(clamped * explog.LOG2E)
    s, tail = explog.exp_parts_wide(clamped - k * explog.LN2_HI, k * -explog.LN2_HI_LO)
    return select(isnan(x), quiet(x), scale(s + tail, convert(k, I32)))


def _old_exp2_rounded(t_hi, t_lo, d_below, d_above):
    """explog.exp2_rounded with the old rounding (pow's and exp2's core): round_even, a convert, ``scale``."""
    k = round_even(t_hi)
    d_hi, d_lo = two_sum(t_hi - k, t_lo)
    r_hi, r_lo = mul_dd_const(d_hi, d_lo, explog.LN2, explog.LN2_LO)
    s, tail = explog.exp_parts(r_hi, r_lo, explog.EXP_FAST_Q)
    return scale(s + tail, convert(k, I32))


def _old_exp_rounded(v_hi, v_lo):
    """power._exp_rounded (pow's core) with the old rounding: round_even, a convert, ``scale``."""
    k = round_even(v_hi * explog.LOG2E)
    s, tail = explog.exp_parts_wide(v_hi - k * explog.LN2_HI, v_lo - k * explog.LN2_HI_LO)
    return scale(s + tail, convert(k, I32))


def _old_exp2(x):
    clamped = select(x < 130.0, x, f32(130.0))
    clamped = select(clamped > -152.0, clamped, f32(-152.0))
    return select(isnan(x), quiet(x), _old_exp2_rounded(clamped, f32(0.0), 0, 0))


def _patterns(lo: float, hi: float, stride: int) -> np.ndarray:
    """Every ``stride``-th float32 bit pattern in [lo, hi] (lo < 0 < hi), both signs, ends included."""
    top_pos = int(np.float32(hi).view(np.uint32))
    top_neg = int(np.float32(-lo).view(np.uint32))
    pos = np.arange(0, top_pos + 1, stride, dtype=np.uint32)
    neg = np.arange(0, top_neg + 1, stride, dtype=np.uint32) | np.uint32(0x80000000)
    ends = np.float32([lo, hi]).view(np.uint32)
    return np.concatenate([pos, neg, ends]).view(np.float32)


EDGES = np.float32([np.nan, np.inf, -np.inf, 0.0, -0.0, 88.72284, 88.7228394, -87.33655, -103.97208, 1e-30, -1e-30])


def _both(fn, x: np.ndarray, monkeypatch) -> tuple[np.ndarray, np.ndarray]:
    """``fn`` over ``x`` as it is, and with the old rounding formulas patched in."""
    new = np.concatenate([evaluate(fn, x[i : i + CHUNK]) for i in range(0, x.size, CHUNK)])
    with monkeypatch.context() as m:
        m.setattr(explog, "round_to_int", _old_round_to_int)
        m.setattr(explog, "int_to_float", _old_int_to_float)
        old = np.concatenate([evaluate(fn, x[i : i + CHUNK]) for i in range(0, x.size, CHUNK)])
    return new, old


def _assert_same_bits(new: np.ndarray, old: np.ndarray, x: np.ndarray, what: str) -> None:
    differ = new.view(np.uint32) != old.view(np.uint32)
    if differ.any():
        i = np.flatnonzero(differ)[:4]
        raise AssertionError(f"{what}: {int(differ.sum())} of {x.size} differ, e.g. x={x[i]}: {new[i]} vs {old[i]}")


def test_round_to_int_is_round_even_and_convert():
    # Every 97th pattern with |v| < 2^22 (the promised range), plus the halfway points near 0.
    v = np.concatenate([_patterns(-(2.0**22) + 1, 2.0**22 - 1, 97), np.arange(-40.5, 41, 1.0, dtype=np.float32)])
    v = v[np.abs(v) < 2.0**22]
    for i in range(0, v.size, CHUNK):
        chunk = v[i : i + CHUNK]
        k, k_int = evaluate(bits.round_to_int, chunk)
        want = np.rint(chunk)
        assert np.array_equal(k, want), "round_to_int's float differs from rint"  # -0 comes back as +0
        assert np.array_equal(k_int, want.astype(np.int32)), "round_to_int's int32 differs from rint"


def test_int_to_float_is_exact_on_its_whole_range():
    k = np.arange(-(1 << 22) + 1, 1 << 22, dtype=np.int32)
    assert np.array_equal(evaluate(bits.int_to_float, k), k.astype(np.float32))


@pytest.mark.parametrize(
    "name, old_formula, lo, hi", [("exp", _old_exp, -104.0, 89.0), ("exp2", _old_exp2, -152.0, 130.0)]
)
def test_exp_bits_unchanged_on_every_97th_pattern_of_its_range(name, old_formula, lo, hi):
    x = np.concatenate([_patterns(lo, hi, 97), _patterns(-3.0e38, 3.0e38, 99991), EDGES])
    new = np.concatenate([evaluate(getattr(M, name), x[i : i + CHUNK]) for i in range(0, x.size, CHUNK)])
    old = np.concatenate([evaluate(old_formula, x[i : i + CHUNK]) for i in range(0, x.size, CHUNK)])
    _assert_same_bits(new, old, x, name)


def test_round_and_pow2_gives_the_rounded_value_and_its_power_of_two():
    v = np.concatenate([_patterns(-150.0, 128.0, 9973), np.arange(-150.5, 129, 0.25, dtype=np.float32)])
    for d in (26, -2):
        k, p = evaluate(lambda x, d=d: bits.round_and_pow2(x, f32(bits.ROUNDER + d)), v)
        want = np.rint(v)
        assert np.array_equal(k, want)
        valid = (want + d >= -126) & (want + d <= 127)
        assert np.array_equal(p[valid], np.ldexp(np.float32(1.0), (want[valid] + d).astype(np.int32)))


WHOLE_RANGE = {  # function -> the interesting part of its domain
    "expm1": (-20.0, 89.0),
    "log": (-1.0, 3.0e38),
    "log2": (-1.0, 3.0e38),
    "log1p": (-1.0, 3.0e38),
    "sigmoid": (-110.0, 30.0),
    "tanh": (-10.0, 10.0),
    "softplus": (-110.0, 30.0),
    "erf": (-5.0, 5.0),
    "gelu": (-16.0, 4.0),
    "gelu_tanh": (-12.0, 4.0),
}


@pytest.mark.parametrize("name", list(WHOLE_RANGE))
def test_users_of_the_rounding_keep_their_bits(name, monkeypatch):
    lo, hi = WHOLE_RANGE[name]
    x = np.concatenate([_patterns(lo, hi, 9973), _patterns(-3.0e38, 3.0e38, 99991), EDGES])
    new, old = _both(getattr(M, name), x, monkeypatch)
    _assert_same_bits(new, old, x, name)


def test_pow_keeps_its_bits(monkeypatch):
    g = np.random.default_rng(7)
    base = np.concatenate([g.uniform(0, 4, 1 << 16), -g.uniform(0, 4, 1 << 12), np.exp2(g.uniform(-140, 127, 1 << 16))])
    base = base.astype(np.float32)
    expo = np.concatenate([g.uniform(-40, 40, base.size - 4096), g.integers(-30, 30, 4096)]).astype(np.float32)
    new = evaluate(M.pow, base, expo)
    with monkeypatch.context() as m:
        m.setattr(explog, "round_to_int", _old_round_to_int)
        m.setattr(explog, "int_to_float", _old_int_to_float)
        m.setattr(power, "_exp_rounded", _old_exp_rounded)
        old = evaluate(M.pow, base, expo)
    _assert_same_bits(new, old, base, "pow")


def test_pow_integer_and_parity_tests_by_float_adds():
    """pow(-1, y) is 1 for even integers (all of |y| >= 2^24, and ±inf), -1 for odd ones, NaN otherwise:
    the integer and parity tests that replaced trunc and a float->int convert."""
    around = np.float32([2.0**22, 2.0**23, 2.0**24])[:, None] + np.arange(-40, 41, dtype=np.float32)[None, :]
    y = np.concatenate(
        [
            _patterns(-3.0e38, 3.0e38, 9973),
            np.arange(-1000, 1000.5, 0.5, dtype=np.float32),
            around.ravel(),
            -around.ravel(),
        ]
    )
    y = np.concatenate([y, np.float32([np.inf, -np.inf, np.nan, 0.0, -0.0])])
    got = evaluate(M.pow, np.full(y.size, -1.0, np.float32), y)
    with np.errstate(invalid="ignore"):
        want = np.power(np.float64(-1.0), y.astype(np.float64))
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(got[~np.isnan(want)], want[~np.isnan(want)])
    a = _patterns(-0.0, 2.0**23, 97).view(np.uint32) & np.uint32(0x7FFFFFFF)
    a = a.view(np.float32)
    assert np.array_equal(evaluate(lambda v: power.is_integer(v), a), np.trunc(a) == a)


def test_unpack_normalises_every_subnormal():
    """unpack's shift comes from float(fraction), now made by a subtraction instead of a conversion."""
    fraction = np.arange(1, 1 << 23, dtype=np.uint32)
    m, e = evaluate(bits.unpack, fraction)
    top = np.frexp(fraction.astype(np.float64))[1] - 1  # floor(log2(fraction))
    shift = (23 - top).astype(np.uint32)
    assert np.array_equal(m, fraction << shift)
    assert np.array_equal(e, -126 - shift.astype(np.int32))
