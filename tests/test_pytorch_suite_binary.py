"""PyTorch's test/test_binary_ufuncs.py (TestBinaryUfuncs: its hand-written checks, not the OpInfo ones
tests/opdb_sweep.py runs), on torch and on vkml, compared as tests/pytorch_suite_ops.py says: broadcasting
(empty shapes and errors), comparisons and logical ops of mixed dtypes, bitwise ops and shifts, division with
every rounding mode on special values and integers, floor_divide, fmod/remainder (negatives, zero divisors,
large dividends), pow (integer and negative exponents, scalar bases), maximum/minimum/fmax/fmin with NaN,
copysign and signed zeros, hypot, gcd/lcm, nextafter, ldexp, logaddexp(2), lerp, float_power, xlogy/xlog1py,
heaviside, atan2 edge cases, add/sub alpha rules and PyTorch's errors.
"""

from __future__ import annotations

import math
import operator

import numpy as np
import pytest
from pytorch_suite_ops import cases, on_device, same

# Cases that take over ~0.06 s each (CPU-backend kernels to build): behind the exhaustive marker
# (pytest -m exhaustive), so that this file adds little to the default suite.
SLOW = frozenset(
    (
        "test_binary[nextafter bfloat16]",
        "test_binary[nextafter float16]",
        "test_binary[mem overlap]",
        "test_binary[shift limits]",
        "test_binary[lerp low precision]",
        "test_binary[copysign subgradient]",
        "test_binary[cumulative trapezoid]",
        "test_binary[zeta]",
        "test_binary[add]",
        "test_binary[binary with scalars]",
        "test_binary[bitwise named]",
        "test_binary[bitwise ops bool]",
        "test_binary[bitwise ops int16]",
        "test_binary[bitwise ops int32]",
        "test_binary[bitwise ops int64]",
        "test_binary[bitwise ops int8]",
        "test_binary[bitwise ops uint8]",
        "test_binary[broadcast shapes]",
        "test_binary[comparison extremal broadcast]",
        "test_binary[comparison mixed dtypes]",
        "test_binary[comparisons]",
        "test_binary[div rounding modes float32]",
        "test_binary[div rounding modes float64]",
        "test_binary[div rounding modes int16]",
        "test_binary[div rounding modes int32]",
        "test_binary[div rounding modes int64]",
        "test_binary[div rounding modes int8]",
        "test_binary[div rounding modes uint8]",
        "test_binary[div rounding nonfinite float16]",
        "test_binary[div rounding nonfinite float32]",
        "test_binary[div vs python]",
        "test_binary[divide by zero float16]",
        "test_binary[divide by zero float32]",
        "test_binary[divide by zero float64]",
        "test_binary[float power]",
        "test_binary[float scalar pow tensor float32]",
        "test_binary[float scalar pow tensor float64]",
        "test_binary[floor divide]",
        "test_binary[fmod remainder float16]",
        "test_binary[fmod remainder float32]",
        "test_binary[fmod remainder float64]",
        "test_binary[fmod remainder int32]",
        "test_binary[fmod remainder int64]",
        "test_binary[fmod remainder int8]",
        "test_binary[fmod remainder large float64]",
        "test_binary[heaviside]",
        "test_binary[inplace dunders]",
        "test_binary[int and float pow]",
        "test_binary[int div semantics]",
        "test_binary[lerp float32]",
        "test_binary[lerp float64]",
        "test_binary[logaddexp float32]",
        "test_binary[logaddexp float64]",
        "test_binary[logical methods]",
        "test_binary[logical ops]",
        "test_binary[long pow floats]",
        "test_binary[lt promotion]",
        "test_binary[maximum minimum float float16]",
        "test_binary[maximum minimum int bool]",
        "test_binary[muldiv scalar]",
        "test_binary[pow special values]",
        "test_binary[pow tensor scalar float16]",
        "test_binary[pow tensor scalar float32]",
        "test_binary[pow tensor scalar float64]",
        "test_binary[rdiv]",
        "test_binary[rpow]",
        "test_binary[shifts]",
        "test_binary[tensor pow tensor]",
        "test_binary[trapezoid]",
        "test_binary[xlogy xlog1py]",
        "test_binary_on_vulkan[div rounding nonfinite float32]",
        "test_binary_on_vulkan[fmod remainder float signs]",
        "test_binary_on_vulkan[int div semantics]",
        "test_binary_on_vulkan[shifts]",
    )
)

INF, NAN = math.inf, math.nan
SPECIAL = [1.0, -1.0, 0.0, -0.0, 0.1, -0.1, math.pi, -math.pi, INF, -INF, NAN]
INT_DTYPES = ("uint8", "int8", "int16", "int32", "int64")
FLOAT_DTYPES = ("float32", "float64", "float16", "bfloat16")


def _rng():
    """A generator seeded afresh: each side of a case draws the same values."""
    return np.random.default_rng(7)


def _randn(*shape):
    return _rng().standard_normal(shape).astype(np.float32)


def _signs(m, t):
    """``t``'s sign bits (so that -0.0 and 0.0 differ), as PyTorch's copysign test checks them; a NaN's sign is
    no part of the contract (DESIGN §4: NaN-ness only)."""
    return m.signbit(t) & ~m.isnan(t)


def _broadcast_empty(m):
    return [
        (m.zeros(0) + m.zeros(5, 0)).shape,
        (m.zeros(0) + m.zeros(5, 0, 1)).shape,
        (m.zeros(()) + m.zeros(5, 0, 6)).shape,
        (m.zeros(0) + m.zeros(1)).shape,
        (m.zeros(0, 7, 0, 6, 5, 0, 1) + m.zeros(1, 1, 5, 1, 7)).shape,
    ]


def _broadcast_shapes(m):
    out = []
    pairs = [((1,), ()), ((2,), ()), ((1,), (2,)), ((2, 1), (2,)), ((1, 2), (2,)), ((3, 2), (2,))]
    pairs += [((1, 3, 2), (3, 2)), ((3, 1, 2), (3, 2)), ((2, 3, 2), ()), ((3, 1, 2), (1, 3, 2))]
    for lhs, rhs in pairs:
        a, b = m.ones(lhs), m.full(rhs, 2.0)
        for op in (m.add, m.mul, m.atan2, m.maximum, m.fmod, m.hypot, m.lt, m.logaddexp, m.copysign):
            out.append(op(a, b).shape)
        out.append(m.broadcast_shapes(lhs, rhs))
    for lhs in ((), (1,), (2,), (1, 2, 3)):
        x = m.full(lhs, 1.5)
        out += [(x * 2.0).shape, (x * m.tensor(2.0)).shape, m.pow(x, 2).shape, m.remainder(x, 0.7)]
    return out


def _addcmul_scalar(m):
    y = m.tensor(3.0)
    return y.addcmul(y, y, value=2.0)


def _comparisons(m):
    x, y = m.tensor(_randn(5, 5)), m.tensor(_randn(5, 5)[::-1].copy())
    y[0, 0] = x[0, 0]
    out = [x == y, x != y, x < y, x <= y, x > y, x >= y]
    for op in (m.lt, m.le, m.gt, m.ge, m.eq, m.ne, m.logical_and, m.logical_or, m.logical_xor):
        out.append(op(m.tensor([True]), m.tensor([False])))
    return out


def _comparison_mixed(m):
    """Comparisons of every pair of dtypes, 1-d and 0-d, with out= (test_type_promotion's and test_binary_ufuncs')."""
    values = {"uint8": 32, "int8": 32, "int16": 1024, "int32": 1 << 20, "int64": 1 << 35}
    values |= {"float16": 1024, "float32": 1 << 20, "float64": 1 << 35, "bfloat16": 1024, "bool": 1}
    out = []
    for (d1, v1), (d2, v2) in [(a, b) for a in values.items() for b in values.items()]:
        for shape in ((1,), ()):
            t1 = m.full(shape, v1, dtype=getattr(m, d1))
            t2 = m.full(shape, v2, dtype=getattr(m, d2))
            for op in (m.lt, m.le, m.gt, m.ge, m.eq, m.ne):
                o = m.empty(1, dtype=m.bool)
                out += [op(t1, t2), op(t1, t2, out=o)]
    return out


def _comparison_extremal(m):
    out = []
    vals = [0.0, 1.0, -1.0, INF, -INF, NAN, 15.0, 99.0]
    for d1, d2 in (("float32", "int64"), ("float16", "float32"), ("bfloat16", "float64"), ("int8", "uint8")):
        if d1.startswith(("int", "uint")):
            a = m.tensor([0, 15, 99, 3], dtype=getattr(m, d1))
        else:
            a = m.tensor(vals, dtype=getattr(m, d1))
        b = m.tensor([[15, 99, 0, 1, 3, 15, 99, 0]][0][: a.shape[0]], dtype=getattr(m, d2)).expand(2, a.shape[0])
        for op in (m.lt, m.le, m.gt, m.ge, m.eq, m.ne, m.logical_and, m.logical_or, m.logical_xor):
            o = m.zeros(1, dtype=m.float64)
            out += [op(a, b), op(a, b, out=o)]
    return out


def _lt_promotion(m):
    out = []
    for d in ("uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"):
        for shape in ((1,), ()):
            x = m.zeros(shape, dtype=getattr(m, d))
            out += [x < 0.5, x < m.tensor(0.5), x <= -0.5, x == 0.0]
    return out


def _bool_comparisons(m):
    a = m.tensor([True, False, True, False, True, False])
    b = m.tensor([True, False, True, True, True, True])
    return [
        a == b,
        a != b,
        a < b,
        a > b,
        a >= b,
        a <= b,
        a > False,
        a == m.tensor(True),
        a == m.tensor(0, dtype=m.bool),
    ]


def _logical_methods(m):
    out = []
    for d in ("uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"):
        x, b = m.tensor([1, 2, 3, 4], dtype=getattr(m, d)), m.tensor([2], dtype=getattr(m, d))
        out += [x.lt(2), x.le(2), x.ge(2), x.gt(2), x.eq(2), x.ne(2)]
        out += [x.lt(b), x.le(b), x.ge(b), x.gt(b), x.eq(b), x.ne(b)]
    x = m.tensor([True, False, True, False])
    out += [x.lt(True), x.le(True), x.ge(True), x.gt(True), x.eq(True), x.ne(True)]
    return out


def _logical_ops(m):
    out = []
    dtypes = ("bool", "uint8", "int32", "int64", "float16", "float32", "float64")
    for d1 in dtypes:
        for d2 in dtypes:
            for op, b_values in (("logical_xor", [1, 0, 0, 10]), ("logical_and", [1, 0, 0, 10])):
                a = m.tensor([10, 0, 1, 0], dtype=getattr(m, d1))
                b = m.tensor(b_values, dtype=getattr(m, d2))
                c = m.empty(0, dtype=m.bool)
                out += [getattr(a, op)(b), getattr(m, op)(a, b, out=c), c]
                if d1 == d2:
                    out.append(getattr(a.clone(), op + "_")(b))
            out.append(m.logical_or(m.tensor([10, 0, 1, 0], dtype=getattr(m, d1)), m.tensor([1, 0, 0, 10])))
    return out


def _logical_xor_alignment(m):
    a = m.tensor(_randn(128) > 0)
    b = m.tensor(_randn(128)[::-1].copy() > 0)
    out = []
    for i in (1, 2, 15):
        for j in (1, 8):
            c = m.zeros(128, dtype=m.bool)
            m.logical_xor(a[i : 100 + i], b[j : 100 + j], out=c[j : 100 + j])
            out.append(c)
    return out


def _bitwise_ops(dtype):
    def run(m):
        out = []
        rng = _rng()
        for shape in ((5,), (15, 15)):
            if dtype == "bool":
                an, bn = rng.integers(0, 2, shape).astype(bool), rng.integers(0, 2, shape).astype(bool)
                scalar = True
            else:
                lo = 0 if dtype == "uint8" else -9
                an, bn, scalar = rng.integers(lo, 10, shape), rng.integers(lo, 10, shape), int(rng.integers(1, 9))
            a, b = m.tensor(an, dtype=getattr(m, dtype)), m.tensor(bn, dtype=getattr(m, dtype))
            for op in (operator.and_, operator.or_, operator.xor):
                out += [op(a, b), op(a, scalar), op(scalar, b)]
            for op in (operator.iand, operator.ior, operator.ixor):
                x = a.clone()
                op(x, b)
                y = a.clone()
                op(y, scalar)
                out += [x, y]
        return out

    return run


def _bitwise_named(m):
    out = []
    for d in INT_DTYPES:
        a = m.tensor([1, -2, 3], dtype=getattr(m, d)) if d != "uint8" else m.tensor([1, 254, 3], dtype=m.uint8)
        b = m.tensor([2, 1, 3], dtype=getattr(m, d))
        for name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
            c = m.empty(0, dtype=getattr(m, d))
            out += [getattr(m, name)(a, b), getattr(m, name)(a, 2), getattr(m, name)(a, b, out=c), c]
            out += [getattr(a.clone(), name + "_")(b), getattr(a.clone(), name + "_")(2)]
    t, f = m.tensor([True, True, False]), m.tensor([False, True, False])
    out += [m.bitwise_and(t, f), m.bitwise_or(t, f), m.bitwise_xor(t, f), m.bitwise_not(t), ~m.tensor([1, -2, 0])]
    return out


def _shifts(m):
    out = []
    for d in ("int8", "int16", "int32", "int64"):
        a = m.tensor([-10, 10], dtype=getattr(m, d))
        out += [a << 2, a >> 1, m.bitwise_left_shift(a, 2), m.bitwise_right_shift(a, 1)]
    for d in INT_DTYPES:
        a = m.tensor([19, -20, -21, 22], dtype=getattr(m, d))
        b = m.tensor([2, 1, 3, 1], dtype=getattr(m, d))
        for op in (m.bitwise_left_shift, operator.lshift, m.bitwise_right_shift, operator.rshift):
            out += [op(a, b), op(a, 2)]
        x = a.clone()
        x <<= 1
        y = a.clone()
        y >>= b
        out += [x, y, 2 << b, 64 >> b]
    return out


def _shifts_out_of_range(m):
    out = []
    for d in ("uint8", "int8", "int16", "int32", "int64"):
        a = m.tensor([1, -1, 5, -7], dtype=getattr(m, d))
        bits = {"uint8": 8, "int8": 8, "int16": 16, "int32": 32, "int64": 64}[d]
        s = m.tensor([bits, bits + 3, bits - 1, 0], dtype=getattr(m, d))
        out += [a << s, a >> s]
    return out


def _shifts_float(m):
    out = []
    for op in (m.bitwise_left_shift, operator.lshift, m.bitwise_right_shift, operator.rshift):
        a = m.tensor([19, -20, -21, 22])
        out.append(op(a, 1.8))
        a = m.tensor([19.1, -20.2, -21.3, 22.4])
        out += [op(a, 2), op(a, 2.2)]
    return out


def _div_rounding_modes(dtype):
    def run(m):
        rng = _rng()
        if dtype.startswith(("int", "uint")):
            info = np.iinfo(dtype)
            an = rng.integers(info.min, info.max, 100, endpoint=True)
            bn = rng.integers(info.min, info.max, 100, endpoint=True)
            bn[bn == 0] = 1
            an[:10], bn[:10] = [7, -7, 7, -7, 0, 5, -5, 1, -1, 9], [2, 2, -2, -2, 3, -3, 3, -1, 1, 10]
        else:
            an, bn = rng.uniform(-10, 10, 100), rng.uniform(-10, 10, 100)
            bn[np.abs(bn) < 0.1] = 0.1
        a, b = m.tensor(an, dtype=getattr(m, dtype)), m.tensor(bn, dtype=getattr(m, dtype))
        out = [m.divide(a, b, rounding_mode=mode) for mode in (None, "trunc", "floor")]
        out += [m.div(a[::2], b[::2], rounding_mode=mode) for mode in (None, "trunc", "floor")]
        out += [m.remainder(a, b), m.fmod(a, b), m.floor_divide(a, b), a // b, a % b]
        return out

    return run


def _div_rounding_nonfinite(dtype):
    def run(m):
        num = m.tensor(SPECIAL, dtype=getattr(m, dtype))
        denom = num[num != 0]
        a, b = num[None, :].clone(), denom[:, None].clone()
        out = []
        for mode in (None, "trunc", "floor"):
            r = m.divide(a, b, rounding_mode=mode)
            out += [r, _signs(m, r)]
        return out

    return run


def _divide_by_zero(dtype):
    def run(m):
        a = m.tensor(SPECIAL, dtype=getattr(m, dtype))
        out = []
        for mode in (None, "trunc", "floor"):
            for r in (m.divide(a, 0, rounding_mode=mode), m.divide(a, m.zeros_like(a), rounding_mode=mode)):
                out += [r, _signs(m, r)]
            r = m.divide(a, -0.0, rounding_mode=mode)
            out += [r, _signs(m, r)]
        for fn in (m.fmod, m.remainder):
            out += [fn(a, 0.0), fn(a, m.zeros_like(a))]
        return out

    return run


def _div_vs_python(m):
    out = []
    for a in range(-6, 6):
        for b in range(-6, 6):
            if b == 0:
                continue
            for x, y in ((a * 0.5, b * 0.5), (a, b)):
                at, bt = m.tensor(x), m.tensor(y)
                out += [at / bt, at / y, x / bt, m.true_divide(at, bt), at // bt, at // y, x // bt]
                out += [m.floor_divide(at, bt), at % bt, x % bt, at % y]
    return out


def _idiv_vs_python(m):
    out = []
    for a, b in ((7, 2), (-7, 2), (7, -2), (-7, -2), (3.5, -1.5), (-3.5, 2.0)):
        at, bt = m.tensor(a), m.tensor(b)
        if at.is_floating_point():
            t0, t1 = at.clone(), at.clone()
            t0 /= b
            t1 /= bt
            out += [t0, t1, at.clone().true_divide_(bt), at.clone().true_divide_(5)]
        t = at.clone()
        t //= bt
        out += [t, at.clone().floor_divide_(bt), at.clone().floor_divide_(5)]
        t = at.clone()
        t %= bt
        out.append(t)
    return out


def _binary_with_scalars(m):
    out = []
    for op, fn in ((operator.add, m.add), (operator.sub, m.sub), (operator.mul, m.mul), (operator.truediv, m.div)):
        for a, b in ((3, -4), (2.5, -1.5), (-3, 0.5), (7, 2)):
            at, bt = m.tensor(a), m.tensor(b)
            for x, y in ((at, bt), (a, bt), (at, b)):
                out += [op(x, y), fn(x, y) if isinstance(x, m.Tensor) else fn(m.tensor(x), y)]
    return out


def _floor_divide(m):
    out = []
    for d in ("int8", "int16", "int32", "int64", "float32", "float64", "float16", "bfloat16"):
        x = m.tensor(_randn(10) * 30).to(getattr(m, d))
        y = m.arange(1, 11, dtype=getattr(m, d))
        out += [x // y, x // 3, m.floor_divide(x, -3), m.floor_divide(x, y.flip(0) * -1), 30 // y]
    o = m.empty(10, dtype=m.float32)
    x = m.tensor(_randn(10) * 10)
    out += [m.floor_divide(x, m.arange(1.0, 11), out=o), m.floor_divide(x, 2, out=o)]
    xi, oi = m.tensor(_randn(10) * 10).long(), m.empty(10, dtype=m.int64)
    out += [m.floor_divide(xi, m.arange(1, 11), out=oi), m.floor_divide(xi, 2, out=oi)]
    return out


def _rdiv(m):
    out = []
    for d in ("uint8", "int32", "int64", "float32", "float64"):
        x = (m.tensor(_rng().random(20).astype(np.float32)) + 1).mul(4).to(getattr(m, d))
        out += [30 / x, 30.0 / x, 30 // x, 30 % x, 2**x if d != "uint8" else 2.0**x]
    return out


def _fmod_remainder(dtype):
    def run(m):
        rng = _rng()
        xn = rng.integers(-9, 9, (10, 10)).astype(dtype)
        mn = rng.integers(-9, 9, (10, 10)).astype(dtype)
        mn[mn == 0] = 1
        x, mod = m.tensor(xn), m.tensor(mn)
        mods = [3, 2.3, -3, -2.3, mod, mod.t()]
        if dtype.startswith("int"):
            mods.append(m.tensor(rng.uniform(-9, 9, (10, 10)).astype(np.float32)))
        out = []
        for dividend in (x, x.t()):
            for md in mods:
                for fn, inplace in ((m.fmod, "fmod_"), (m.remainder, "remainder_")):
                    r = fn(dividend, md)
                    o = m.empty(0, dtype=r.dtype)
                    fn(dividend, md, out=o)
                    out += [r, o, o.shape]
                    try:
                        out.append(getattr(dividend.clone(), inplace)(md))
                    except RuntimeError as e:
                        out.append(str(e).split(": ")[-1])
        for dividend in (5, 3.14):
            out += [m.remainder(dividend, mod), m.remainder(dividend, mod.t())]
        return out

    return run


def _fmod_remainder_float_signs(m):
    a = m.tensor([5.0, -5.0, 5.0, -5.0, 0.0, -0.0, 3.0, -3.0, INF, 1.0])
    b = m.tensor([3.0, 3.0, -3.0, -3.0, 2.0, 2.0, 1.5, -1.5, 2.0, INF])
    out = []
    for fn in (m.fmod, m.remainder):
        r = fn(a, b)
        out += [r, _signs(m, r), fn(a.double(), b.double()), fn(a.half(), b.half())]
    out += [m.remainder(m.tensor([-1.0, 1.0, -0.5]), -INF), m.remainder(m.tensor([-1.0, 1.0]), INF)]
    return out


def _fmod_remainder_large(dtype):
    def run(m):
        out = []
        for av in (1e9, -1e9):
            for bv in (3.14159265358979, -3.14159265358979):
                a, b = m.tensor([av], dtype=getattr(m, dtype)), m.tensor([bv], dtype=getattr(m, dtype))
                out += [m.remainder(a, b), m.fmod(a, b)]
        return out

    return run


def _remainder_overflow(m):
    x = m.tensor(23500, dtype=m.int64)
    q = 392486996410368
    return [x % q, -x % q, x % -q, -x % -q]


def _int_div_semantics(m):
    out = []
    for d in INT_DTYPES:
        lo = 0 if d == "uint8" else -9
        a = m.tensor(list(range(lo, 10)), dtype=getattr(m, d))
        for b in (3, -3) if d != "uint8" else (3, 7):
            bt = m.full_like(a, b)
            out += [a // b, a % b, m.fmod(a, b), m.div(a, b, rounding_mode="trunc"), a // bt, a % bt, m.fmod(a, bt)]
            out += [m.div(a, bt, rounding_mode="floor"), m.div(a, bt), a / b]
    i8 = m.tensor([-128, 127, -128], dtype=m.int8)
    out += [m.div(i8, m.tensor([-1, -1, 1], dtype=m.int8), rounding_mode="trunc"), i8 // m.tensor([-1], dtype=m.int8)]
    i64 = m.tensor([-(2**63), 2**63 - 1, -7], dtype=m.int64)
    out += [i64 // 2, i64 % 3, m.fmod(i64, 5), i64 // -1]
    return out


def _pow_tensor_scalar(dtype):
    def run(m):
        rng = _rng()
        if dtype in ("float32", "float64", "float16", "bfloat16"):
            base = m.tensor(rng.random((10, 10)) + 0.5, dtype=getattr(m, dtype))
        else:
            high = 4 if dtype in ("int8", "uint8") else 10
            base = m.tensor(rng.integers(1, high, (10, 10)), dtype=getattr(m, dtype))
        out = []
        for e in (-2.8, -2, -1, -0.5, 0, 0.5, 1, 2, 3, 4, 3.3):
            out += [m.pow(base[4], e), m.pow(base[:, 4], e), e ** base[4], m.result_type(e, base)]
        out += [m.pow(3, base[4]), m.pow(3, base[:, 4]), 3 ** base[4]]
        return out

    return run


def _int_tensor_pow_neg_ints(m):
    ints = [-(2**31), -3, -2, -1, 0, 1, 2, 3, 2**31 - 1]
    t = m.tensor(ints, dtype=m.int32)
    return [m.pow(t, e) for e in (0, 1, 2, 3)] + [m.pow(t, 2.0), m.pow(t, 0.5)]


def _long_pow_floats(m):
    t = m.tensor([0, 1, 23, 4567], dtype=m.int64)
    out = []
    for e in (0.0, 1 / 3, 1 / 2, 1.0, 3 / 2, 2.0):
        r = t.pow(e)
        o = m.empty_like(r)
        out += [r, m.pow(t, e, out=o)]
    return out


def _float_scalar_pow_tensor(dtype):
    def run(m):
        floats = [2.0, -3 / 2, -1.0, -1 / 2, -1 / 3, 0.0, 1 / 3, 1 / 2, 1.0, 3 / 2, 2.0]
        ft = m.tensor(floats, dtype=getattr(m, dtype))
        t = m.tensor(_rng().uniform(0, 9, (2, 2, 2)), dtype=getattr(m, dtype))
        out = []
        for base in floats:
            out += [m.pow(base, ft), base**ft, m.pow(base, t)]
        return out

    return run


def _tensor_pow_tensor(m):
    out = []
    ints = [0, 1, 2, 3]
    for d in INT_DTYPES:
        v = m.tensor(ints, dtype=getattr(m, d))
        for i in range(4):
            p = m.tensor(ints[-i:] + ints[:-i] if i else ints, dtype=getattr(m, d))
            out += [v.pow(p), m.pow(v, p), v.clone().pow_(p)]
    floats = [-3.0, -2.0, -1.0, -1 / 2, -1 / 3, 0.0, 1 / 3, 1 / 2, 1.0, 2.0, 3.0]
    for d in ("float32", "float64", "float16"):
        v = m.tensor(floats, dtype=getattr(m, d))
        for i in range(0, 11, 3):
            p = m.tensor(floats[-i:] + floats[:-i] if i else floats, dtype=getattr(m, d))
            out += [v.pow(p), v.clone().pow_(p)]
    return out


def _int_and_float_pow(m):
    out = []
    rng = _rng()
    for d, lo, hi in (("int8", -2, 2), ("uint8", 0, 3), ("int16", -5, 5), ("int64", -10, 10), ("int32", -10, 10)):
        for bshape, escalar, eshape in (((4, 4), 0, (4, 1)), ((3, 1), 4, (3, 1)), ((1,), 2, ()), ((), 2, ())):
            base = m.tensor(rng.integers(lo, hi, bshape, endpoint=True), dtype=getattr(m, d))
            exp = m.tensor(rng.integers(0, hi, eshape, endpoint=True), dtype=getattr(m, d))
            out += [base.pow(escalar), base.pow(exp), m.pow(base, exp, out=m.empty_like(base.pow(exp)))]
            out += [base.clone().pow_(escalar)]
    for d, lo, hi in (("float32", 0.0, 10.0), ("float64", -10.0, 10.0), ("float32", -10.0, 10.0)):
        base = m.tensor(rng.uniform(lo, hi, (5, 5, 5)), dtype=getattr(m, d))
        exp = m.tensor(rng.uniform(lo, hi, (5,)), dtype=getattr(m, d))
        out += [base.pow(5), base.pow(exp), base.clone().pow_(exp), base[:, ::2].pow(exp)]
    return out


def _pow_scalar_type_promotion(m):
    out = []
    for value in (17, [17]):
        u8 = m.tensor(value, dtype=m.uint8)
        i64 = m.tensor(value, dtype=m.int64)
        out += [m.pow(2, u8, out=m.tensor(0, dtype=m.int64)), m.pow(2, i64, out=m.tensor(0, dtype=m.int64))]
    return out


def _rpow(m):
    x = m.tensor(_randn(10, 10))
    s = m.tensor(_randn(1)).squeeze()
    return [m.pow(2, x), 2**x, m.pow(2, s), 2**s, 2.5**x, m.pow(-2.0, m.tensor([0.5, 2.0, 3.0, -1.0]))]


def _pow_special(m):
    base = m.tensor([0.0, -0.0, 1.0, -1.0, INF, -INF, NAN, 2.0, -2.0, 0.5])
    out = []
    for e in (0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 3.0, 0.5, -0.5, INF, -INF, NAN, 1.5, -3.0):
        r = m.pow(base, e)
        out += [r, _signs(m, r)]
    e = m.tensor([0.0, 1.0, -1.0, INF, -INF, NAN, 2.0, 0.5])
    for b in (0.0, 1.0, -1.0, 2.0, 0.5, INF, -INF):
        out.append(m.pow(b, e))
    return out


def _maximum_minimum_promotion(m):
    out = []
    dtypes = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64")
    for d1 in dtypes:
        for d2 in dtypes:
            a = m.tensor((0, 1), dtype=getattr(m, d1))
            b = m.tensor((1, 0), dtype=getattr(m, d2))
            for op in (m.maximum, m.max, m.fmax, m.minimum, m.min, m.fmin):
                r = op(a, b)
                out += [r.dtype, m.result_type(a, b)]
    return out


def _maximum_minimum_int_bool(m):
    out = []
    rng = _rng()
    for d in ("bool", "uint8", "int8", "int16", "int32", "int64"):
        an = rng.integers(-100, 100, 10)
        bn = rng.integers(-100, 100, 10)
        a, b = m.tensor(an).to(getattr(m, d)), m.tensor(bn).to(getattr(m, d))
        for op in (m.maximum, m.minimum, m.fmax, m.fmin):
            o = m.empty_like(a)
            out += [op(a, b), op(a, b, out=o)]
        out += [m.max(a, b), m.min(a, b)]
    return out


def _maximum_minimum_float(dtype):
    def run(m):
        a = m.tensor(_randn(10), dtype=getattr(m, dtype))
        b = m.tensor(_randn(10)[::-1].copy(), dtype=getattr(m, dtype))
        av = (INF, -INF, NAN, INF, NAN, NAN, 1, NAN, 0.0, -0.0)
        bv = (-INF, INF, INF, NAN, NAN, 0, NAN, -5, -0.0, 0.0)
        c, d = m.tensor(av, dtype=getattr(m, dtype)), m.tensor(bv, dtype=getattr(m, dtype))
        out = []
        for x, y in ((a, b), (c, d)):
            for op in (m.maximum, m.minimum, m.fmax, m.fmin):
                o = m.empty_like(x)
                out += [op(x, y), op(x, y, out=o)]
            out += [m.max(x, y), m.min(x, y)]
        return out

    return run


def _min_max_binary_nan(m):
    a = m.tensor(_rng().random(100))
    b = m.tensor(_rng().random(100)[::-1].copy())
    a[:25] = NAN
    b[25:50] = NAN
    a[50:75] = NAN
    b[50:75] = NAN
    return [m.max(a, b).isnan(), m.min(a, b).isnan(), m.max(a, b), m.min(a.float(), b.float())]


def _mul_intertype_scalar(dtype):
    def run(m):
        x = m.tensor(1.5, dtype=getattr(m, dtype))
        y = m.tensor(3, dtype=m.int32)
        out = [x * y, y * x]
        x *= y
        return [*out, x]

    return run


def _sub(m):
    out = []
    for d in ("uint8", "int8", "int16", "int32", "int64", "float32", "float64", "float16", "bfloat16"):
        m1 = m.tensor([2.34, 4.44], dtype=getattr(m, d))
        m2 = m.tensor([1.23, 2.33], dtype=getattr(m, d))
        out.append(m1 - m2)
    a = m.tensor(_randn(10, 9))
    b = m.tensor(_randn(10, 9)[::-1].copy())
    r = a.clone()
    r.sub_(b)
    s = a.clone()
    s.sub_(123.5)
    return [*out, m.add(a, b, alpha=-1), r, m.add(a, -123.5), s, m.sub(a, b, alpha=2), m.rsub(a, b), m.rsub(a, 2)]


def _add(m):
    out = []
    for d in ("float32", "float64"):
        m1 = m.tensor(_randn(10, 10), dtype=getattr(m, d))
        v1 = m.tensor(_randn(10), dtype=getattr(m, d))
        out += [m.add(m1[4], v1), m.add(m1[:, 4], v1), m1 + 3, 3 + m1, m1 + m.tensor(3), m.tensor(3) + m1]
        r = m1.clone()
        r[3].add_(2)
        r[:, 3].add_(2)
        m2 = m.tensor(_randn(10, 10), dtype=getattr(m, d)).t()
        out += [r, (m1 + m2).is_contiguous(), m1 + m2, m.tensor([1.0], dtype=getattr(m, d)) + m.tensor([])]
    one = m.tensor(1, dtype=m.uint8)
    out += [m.add(one, 1), m.add(one, 255), m.add(one, -2)]
    b1 = m.tensor([True, False, False, True, False, False])
    b2 = m.tensor([True, True, False, False, False, True])
    out += [b1 + b2, m.add(m.zeros(2, 3, dtype=m.bool), m.zeros(2, 3, dtype=m.bool), alpha=0), b1 * b2]
    out += [m.tensor([1.0, 2.0], dtype=m.bfloat16) + m.tensor([3.0, 4.0], dtype=m.bfloat16)]
    out += [m.add(m.tensor([1, 2]), m.tensor([3, 4]), alpha=3), m.add(m.tensor([1.0, 2.0]), 3, alpha=0.5)]
    return out


def _mul(m):
    m1 = m.tensor(_randn(10, 10))
    r = m1.clone()
    r[:, 3].mul_(2)
    a1 = m.tensor([True, False, False, True])
    a2 = m.tensor([True, False, True, False])
    b1 = m.tensor([0.1, 0.1], dtype=m.bfloat16)
    b2 = m.tensor([1.1, 0.1], dtype=m.bfloat16)
    return [r, a1 * a2, b1 * b2, b1.mul(b2), m.tensor([1e-5], dtype=m.float16) * 1e5]


def _div(m):
    out = []
    for d in ("bfloat16", "float32"):
        m1 = m.tensor(_randn(10, 10)).to(getattr(m, d))
        r1 = m1.clone()
        r1[:, 3].div_(2)
        r2 = m1.clone()
        r2[:, 3].true_divide_(2)
        a1 = m.tensor([4.2, 6.2], dtype=getattr(m, d))
        a2 = m.tensor([2.0, 2.0], dtype=getattr(m, d))
        res = m.empty_like(a1)
        out += [r1, r2, m.div(a1, a2), a1.div(a2), m.true_divide(a1, a2, out=res), res]
    x = m.tensor([100.0], dtype=m.float16)
    out += [x.div(1e5), x / 3, m.tensor([1e-5], dtype=m.float16).mul(1e5), 1e5 * m.tensor([1e-5], dtype=m.float16)]
    return out


def _hypot(m):
    out = []
    for d in ("float32", "float64", "bfloat16"):
        out += [
            m.hypot(m.tensor(_randn(10)).to(getattr(m, d)), m.tensor(_randn(10)[::-1].copy()).to(getattr(m, d))),
            m.hypot(m.tensor(_randn(3, 3, 3)).to(getattr(m, d)), m.tensor(_randn(3, 3, 3) * 2).to(getattr(m, d))),
            m.hypot(m.tensor(_randn(10, 1)).to(getattr(m, d)), m.tensor(_randn(10, 1)).to(getattr(m, d)).t()),
        ]
    out.append(m.hypot(m.arange(10), m.tensor(_randn(10))))
    s = m.tensor([0.0, -0.0, INF, -INF, NAN, 3.0, 1e30, 1e-30])
    out += [m.hypot(s, m.tensor([0.0, -0.0, NAN, 1.0, INF, 4.0, 1e30, 1e-30])), m.hypot(s, NAN)]
    return out


def _gcd_lcm(m):
    out = []
    for d in INT_DTYPES:
        t1 = m.tensor([0, 10, 0], dtype=getattr(m, d))
        t2 = m.tensor([0, 0, 10], dtype=getattr(m, d))
        out.append(m.gcd(t1, t2))
        if d != "uint8":
            a = m.tensor(_rng().integers(-20, 20, 64), dtype=getattr(m, d))
            b = m.tensor(_rng().integers(-20, 20, 64)[::-1].copy(), dtype=getattr(m, d))
            out += [m.gcd(a, b), m.lcm(a, b) if d != "int8" else m.gcd(b, a), m.lcm(t1, t2)]
    out.append(m.gcd(m.tensor([190, 210], dtype=m.uint8), m.tensor([190, 220], dtype=m.uint8)))
    return out


def _nextafter(dtype):
    def run(m):
        dt = getattr(m, dtype)
        t1 = m.tensor([0, 0, 10, -0.0, 1, -1, INF, -INF], dtype=dt)
        t2 = m.tensor([INF, -INF, 10, 0.0, 2, -2, 0, 0], dtype=dt)
        a = m.tensor(_randn(100), dtype=dt)
        b = m.tensor(_randn(100)[::-1].copy(), dtype=dt)
        r = m.nextafter(t1, t2)
        return [
            r,
            _signs(m, r),
            m.nextafter(t2, t1),
            m.nextafter(m.tensor([0, NAN], dtype=dt), m.tensor([NAN, 0])),
            m.nextafter(a, b),
        ]

    return run


def _ldexp(m):
    mant = m.tensor(_randn(64))
    exps = m.tensor(_rng().integers(-31, 31, 64), dtype=m.int32)
    r = mant.clone()
    r.ldexp_(exps)
    bounds = m.tensor([INF, -INF, INF, NAN])
    return [
        m.ldexp(mant, exps),
        mant.ldexp(exps),
        r,
        m.ldexp(bounds, m.tensor([3, 0, 30, 1], dtype=m.int32)),
        m.ldexp(m.tensor([1.0, 3.0]), m.tensor([200, -200])),
        m.ldexp(m.tensor([1, 2]), m.tensor([2, 3])),
        m.ldexp(m.tensor([1.5], dtype=m.float64), m.tensor([-1060])),
    ]


def _lerp(dtype):
    def run(m):
        out = []
        rng = _rng()
        for s1, s2, s3 in (((), (5,), (5, 5)), ((5, 5), (), (5,)), ((5,), (5, 5), ())):
            start = m.tensor(rng.standard_normal(s1), dtype=getattr(m, dtype))
            end = m.tensor(rng.standard_normal(s2), dtype=getattr(m, dtype))
            for w in (m.tensor(rng.standard_normal(s3), dtype=getattr(m, dtype)), 0.3, 0.7):
                o = m.tensor(1.0, dtype=getattr(m, dtype))
                out += [m.lerp(start, end, w), start.lerp(end, w), m.lerp(start, end, w, out=o)]
        return out

    return run


def _logaddexp(dtype):
    def run(m):
        a = m.tensor(_randn(64, 2) - 0.5, dtype=getattr(m, dtype))
        b = m.tensor(_randn(64, 2)[::-1].copy() - 0.5, dtype=getattr(m, dtype))
        c = m.tensor([INF, -INF, INF, NAN, -INF, 1.0], dtype=getattr(m, dtype))
        d = m.tensor([INF, -INF, -INF, NAN, 2.0, -INF], dtype=getattr(m, dtype))
        out = []
        for fn in (m.logaddexp, m.logaddexp2):
            out += [fn(a, b), fn(a[:3], b[:3]), fn(a * 10000, b * 10000), fn(c, d)]
        return out

    return run


def _float_power(m):
    out = []
    rng = _rng()
    for bd in ("uint8", "int32", "int64", "float16", "float32", "float64", "bfloat16"):
        for ed in ("int64", "float32", "float64"):
            base = m.tensor(rng.integers(1, 100, 30), dtype=getattr(m, bd))
            exp = m.tensor(rng.integers(-2, 2, 30), dtype=getattr(m, ed))
            exp[0] = 0
            out += [m.float_power(base, exp), base.float_power(exp)]
            out.append(m.float_power(base, exp, out=m.empty(30, dtype=m.float64)))
            for e in (-2.8, -2, -1, -0.5, 0.5, 1, 2):
                out += [m.float_power(base, e), m.float_power(e, exp)]
            if bd == "float64":
                out.append(base.clone().float_power_(exp))
    return out


def _xlogy(m):
    rng = _rng()
    out = []
    for xd, yd in (
        ("float32", "float32"),
        ("float32", "float64"),
        ("int64", "float32"),
        ("float64", "int32"),
        ("bool", "float32"),
    ):
        x = m.tensor(rng.uniform(0.5, 1000, (3, 2, 4, 5))).to(getattr(m, xd))
        y = m.tensor(rng.uniform(0.5, 1000, (3, 2, 4, 5))).to(getattr(m, yd))
        z = m.tensor(rng.uniform(0.5, 1000, (4, 5))).to(getattr(m, yd))
        x1 = m.tensor(rng.uniform(-0.5, 1000, (3, 2, 4, 5))).to(getattr(m, xd))
        for fn in (m.xlogy, m.special.xlogy, m.special.xlog1py):
            for other in (x, y, z):
                r = fn(x if fn is not m.special.xlog1py else x1, other)
                o = m.empty_like(r)
                out += [r, fn(3.14, other), fn(x, 3.14), fn(x, other, out=o)]
    t = m.tensor([-1.0, 0.0, 1.0, 2.0, INF, -INF, NAN])
    for zd in ("float32", "int64", "bool", "float64"):
        zeros = m.zeros(7, dtype=getattr(m, zd))
        out += [m.xlogy(zeros, t), m.special.xlog1py(zeros, t), m.xlogy(0, t), m.special.xlog1py(0, t)]
        out += [m.xlogy(t, zeros), m.xlogy(t, 0.0)]
    out.append(m.zeros(7).xlogy_(t))
    return out


def _xlogy_scalar_promotion(m):
    t = m.tensor(_randn(1)).squeeze()
    fns = (m.xlogy, m.special.xlog1py, m.special.xlogy)
    return [fn(*args).dtype for fn in fns for args in ((t, 5), (t, 5.0), (5, t), (5.0, t))]


def _xlogy_bfloat16(m):
    rng = _rng()
    x = m.tensor(rng.uniform(0.5, 1000, (3, 4)), dtype=m.bfloat16)
    y = m.tensor(rng.uniform(0.5, 1000, (3, 4)), dtype=m.bfloat16)
    x1 = m.tensor(rng.uniform(-0.8, 1000, (3, 4)), dtype=m.bfloat16)
    t = m.tensor([-1.0, 0.0, 1.0, 2.0, INF, -INF, NAN])
    seven = m.tensor(7, dtype=m.bfloat16)
    return [m.xlogy(x, y), m.xlogy(x, 3.14), m.special.xlog1py(x1, x1), m.xlogy(t, seven), m.special.xlog1py(t, 0.0)]


def _heaviside(m):
    out = []
    rng = _rng()
    for d in ("bool", "uint8", "int8", "int32", "int64", "float16", "bfloat16", "float32", "float64"):
        i = rng.integers(-10, 10, 10)
        i[[0, 3, 7]] = 0
        x = m.tensor(i).to(getattr(m, d))
        v = m.tensor(rng.integers(-10, 10, 10)).to(getattr(m, d))
        o = m.empty_like(x)
        out += [m.heaviside(x, v), x.heaviside(v), m.heaviside(x, v, out=o), x.clone().heaviside_(v)]
    x = m.tensor([-9, 5, 0, 6, -2, 2])
    out += [
        m.heaviside(x, m.tensor(0)),
        m.heaviside(m.tensor(0), x),
        m.heaviside(m.tensor([-0.0, NAN, 0.0]), m.tensor(0.5)),
    ]
    return out


def _copysign(m):
    out = []
    rng = _rng()
    dtypes = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64")
    for d1 in dtypes:
        for d2 in dtypes:
            lo = 0 if "bool" in (d1, d2) else -9
            a = m.tensor(rng.integers(lo, 9, (3, 4)).astype(np.float64)).to(getattr(m, d1))
            b = m.tensor(rng.integers(lo, 9, (3, 4)).astype(np.float64)).to(getattr(m, d2))
            r = m.copysign(a, b)
            out += [r, _signs(m, r), m.copysign(a.unsqueeze(1), b).shape]
    cases_ = m.tensor([0.0, -0.0, INF, -INF, NAN])
    b = m.tensor(rng.integers(-9, 9, (5,)).astype(np.float32))
    for d in ("float32", "float64", "float16"):
        for c in cases_.to(getattr(m, d)):
            r = m.copysign(c.reshape(1), b)
            out += [r, _signs(m, r)]
            r = m.copysign(b, c.reshape(1))
            out += [r, _signs(m, r)]
    out += [m.copysign(m.tensor([1.0, 2.0]), -0.0), m.copysign(m.tensor([1, -2]), -1), m.copysign(3, m.tensor([-1.0]))]
    return out


def _atan2(m):
    out = []
    pts = [(0, 0), (0, 1), (0, -1), (-1, 0), (1, 0), (-1, -1), (1, 1), (1, -1), (-1, 1)]
    for d in ("float32", "float64"):
        xs = m.tensor([p[0] for p in pts], dtype=getattr(m, d))
        ys = m.tensor([p[1] for p in pts], dtype=getattr(m, d))
        out.append(m.atan2(ys, xs))
    a = m.tensor(_rng().random((5, 5)), dtype=m.float64)
    b = m.tensor(_rng().random((5, 5)).T.copy(), dtype=m.float64)
    sz = m.tensor([0.0, -0.0, 0.0, -0.0, INF, -INF, INF, 1.0, NAN])
    sx = m.tensor([0.0, 0.0, -0.0, -0.0, INF, INF, -INF, -INF, 1.0])
    r = m.atan2(sz, sx)
    out += [a.atan2(b), r, _signs(m, r), m.atan2(m.tensor([1, 2]), m.tensor([3, 4])), m.arctan2(a, 2.0)]
    return out


def _trapezoid(m):
    x = m.tensor(_randn(2, 3, 4))
    y = m.tensor(_randn(10, 2))
    return [
        m.trapezoid(x, dx=1, dim=1),
        m.trapezoid(y, dx=0.1, dim=0),
        m.trapezoid(m.zeros(0, 2), dim=0),
        m.trapezoid(x, x=m.tensor([1.0, 2.0, 3.0]), dim=1),
        m.trapezoid(y, x=m.tensor([2.0, 3.0, 4.0, 7.0, 11.0, 14.0, 22.0, 26.0, 26.1, 30.3]), dim=0),
        m.trapezoid(m.zeros(0, 2), x=m.tensor([1.0, 2.0]), dim=1),
        m.trapz(y, dim=0),
    ]


def _not_implemented(m):
    class Unknown:
        pass

    t = m.ones(2, 2)
    names = ("__lt__", "__le__", "__gt__", "__ge__", "__add__", "__radd__", "__sub__", "__rsub__", "__mul__")
    names += ("__rmul__", "__matmul__", "__rmatmul__", "__truediv__", "__rtruediv__", "__floordiv__", "__rfloordiv__")
    names += ("__mod__", "__rmod__", "__pow__", "__rpow__", "__lshift__", "__rlshift__", "__rshift__", "__rrshift__")
    names += ("__and__", "__rand__", "__xor__", "__rxor__", "__or__", "__ror__")
    return [getattr(t, n)(Unknown()) is NotImplemented for n in names]


def _inplace_dunders(m):
    t = m.tensor([1.5, -2.5, 3.25])
    t += 1
    t -= 1
    t *= 2
    t /= 4
    t //= 0.5
    t %= 3
    t **= 2
    return t


def _muldiv_scalar(m):
    out = []
    rng = _rng()
    for d in ("uint8", "int8", "int32", "int64", "float16", "bfloat16", "float32", "float64", "bool"):
        x = m.tensor(rng.integers(1, 9, (10, 3))).to(getattr(m, d))
        s = m.tensor(rng.integers(1, 9, (1,))).to(getattr(m, d)).item()
        y = m.full_like(x, s)
        out += [x * s, x * y, s * x, y * x, x / s, x / y, s / x, y / x]
    return out


def _shift_limits(m):
    """Shifts by a negative amount or by the width or more: 0, or the sign's fill for a right shift."""
    out = []
    for d in INT_DTYPES:
        a = (
            m.tensor([5, 1, 100, 3], dtype=getattr(m, d))
            if d == "uint8"
            else m.tensor([5, -5, 1, -1], dtype=getattr(m, d))
        )
        s = (
            m.tensor([9, 70, 8, 0], dtype=getattr(m, d))
            if d == "uint8"
            else m.tensor([-1, -1, -40, 70], dtype=getattr(m, d))
        )
        out += [a << s, a >> s, a << 200 if d == "uint8" else a << -1, a >> 100]
    return out


def _copysign_subgradient(m):
    x = m.tensor([1.0, 2.0, -3.0], requires_grad=True)
    m.copysign(x, m.tensor([0.0, -0.0, 2.0])).sum().backward()
    z = m.tensor([0.0, -0.0, 2.0], requires_grad=True)
    m.copysign(z, m.tensor([-1.0, 1.0, -1.0])).sum().backward()
    return [x.grad, z.grad]


def _zeta(m):
    out = []
    for d in ("float32",):  # float64 zeta is vkml's NotImplementedError (no float64 routine yet: docs/ops/zeta.md)
        x = m.tensor([2.0, 3.0, 1.0, 0.5, -1.0, 4.5], dtype=getattr(m, d))
        q = m.tensor([1.0, 2.0, 1.0, 1.0, 1.0, 0.25], dtype=getattr(m, d))
        out += [m.special.zeta(x, q), m.special.zeta(x[:, None], q), m.special.zeta(2.0, q - 1), m.special.zeta(x, 1.0)]
    out.append(m.special.zeta(m.tensor([2, 3]), m.tensor([1, 2])))
    return out


def _cumulative_trapezoid(m):
    y = m.tensor([[1.0, 2.0, 4.0], [0.0, 1.0, -1.0]])
    return [
        m.cumulative_trapezoid(y, dim=1),
        m.cumulative_trapezoid(y, dim=0),
        m.cumulative_trapezoid(m.tensor([1.0, 2.0, 4.0]), x=m.tensor([0.0, 1.0, 3.0])),
        m.cumulative_trapezoid(m.tensor([1.0, 2.0]), dx=0.5),
        m.cumulative_trapezoid(m.zeros(0, 3), dim=0).shape,
    ]


def _lerp_low_precision(m):
    out = []
    for d in ("float16", "bfloat16"):
        s = m.tensor(_randn(20) * 10).to(getattr(m, d))
        e = m.tensor(_randn(20)[::-1].copy() * 10).to(getattr(m, d))
        w = m.tensor(_rng().random(20).astype(np.float32)).to(getattr(m, d))
        out += [m.lerp(s, e, 0.3), m.lerp(s, e, w), m.lerp(s, e, 0.75), s.clone().lerp_(e, 0.6)]
    return out


def _mem_overlap(m):
    """out= the input itself, a separate part of its storage, or one overlapping it partially (PyTorch's error);
    in-place ops on an expanded tensor (PyTorch's internal-overlap error)."""
    out = []
    names = ("add", "mul", "sub", "div", "pow", "fmod", "atan2", "hypot", "nextafter", "le", "eq", "logical_and")
    names += ("exp", "abs", "floor", "sqrt", "sigmoid", "neg")
    for name in names:
        fn = getattr(m, name)
        unary = name in ("exp", "abs", "floor", "sqrt", "sigmoid", "neg")
        for given, written in (((0, 3), (0, 3)), ((3, 6), (0, 3)), ((0, 3), (1, 4)), ((1, 4), (0, 3))):
            data = m.tensor([0.5, 1.5, 2.0, 3.0, 4.5, 5.0], dtype=m.float64)
            other = m.tensor([2.0, 0.5, 1.5], dtype=m.float64)
            x, o = data[given[0] : given[1]], data[written[0] : written[1]]
            try:
                r = fn(x, out=o) if unary else fn(other, x, out=o)
                out += [r.dtype, data]
            except RuntimeError as e:
                out.append(str(e))
        expanded = m.tensor([1.5], dtype=m.float64).expand(3, 3)
        try:
            getattr(expanded, name + "_")(*(() if unary else (m.ones(3, 3, dtype=m.float64),)))
            out.append(expanded)
        except (RuntimeError, AttributeError) as e:
            out.append(type(e).__name__)
    return out


CASES = {
    "mem overlap": _mem_overlap,
    "shift limits": _shift_limits,
    "copysign subgradient": _copysign_subgradient,
    "zeta": _zeta,
    "cumulative trapezoid": _cumulative_trapezoid,
    "lerp low precision": _lerp_low_precision,
    "broadcast empty": _broadcast_empty,
    "broadcast shapes": _broadcast_shapes,
    "addcmul scalar": _addcmul_scalar,
    "comparisons": _comparisons,
    "comparison mixed dtypes": _comparison_mixed,
    "comparison extremal broadcast": _comparison_extremal,
    "lt promotion": _lt_promotion,
    "bool comparisons": _bool_comparisons,
    "logical methods": _logical_methods,
    "logical ops": _logical_ops,
    "logical xor alignment": _logical_xor_alignment,
    **{f"bitwise ops {d}": _bitwise_ops(d) for d in ("bool", *INT_DTYPES)},
    "bitwise named": _bitwise_named,
    "shifts": _shifts,
    "shifts out of range": _shifts_out_of_range,
    "shifts float": _shifts_float,
    **{f"div rounding modes {d}": _div_rounding_modes(d) for d in ("float32", "float64", *INT_DTYPES)},
    **{f"div rounding nonfinite {d}": _div_rounding_nonfinite(d) for d in FLOAT_DTYPES},
    **{f"divide by zero {d}": _divide_by_zero(d) for d in FLOAT_DTYPES},
    "div vs python": _div_vs_python,
    "idiv vs python": _idiv_vs_python,
    "binary with scalars": _binary_with_scalars,
    "floor divide": _floor_divide,
    "rdiv": _rdiv,
    **{f"fmod remainder {d}": _fmod_remainder(d) for d in ("int8", "int32", "int64", "float32", "float64", "float16")},
    "fmod remainder float signs": _fmod_remainder_float_signs,
    **{f"fmod remainder large {d}": _fmod_remainder_large(d) for d in ("float32", "float64")},
    "remainder overflow": _remainder_overflow,
    "int div semantics": _int_div_semantics,
    **{
        f"pow tensor scalar {d}": _pow_tensor_scalar(d)
        for d in ("int8", "uint8", "int32", "int64", "float32", "float64", "float16", "bfloat16")
    },
    "int tensor pow neg ints": _int_tensor_pow_neg_ints,
    "long pow floats": _long_pow_floats,
    **{f"float scalar pow tensor {d}": _float_scalar_pow_tensor(d) for d in ("float32", "float64")},
    "tensor pow tensor": _tensor_pow_tensor,
    "int and float pow": _int_and_float_pow,
    "pow scalar type promotion": _pow_scalar_type_promotion,
    "rpow": _rpow,
    "pow special values": _pow_special,
    "maximum minimum promotion": _maximum_minimum_promotion,
    "maximum minimum int bool": _maximum_minimum_int_bool,
    **{f"maximum minimum float {d}": _maximum_minimum_float(d) for d in FLOAT_DTYPES},
    "min max binary nan": _min_max_binary_nan,
    **{f"mul intertype scalar {d}": _mul_intertype_scalar(d) for d in ("float32", "float64")},
    "sub": _sub,
    "add": _add,
    "mul": _mul,
    "div": _div,
    "hypot": _hypot,
    "gcd lcm": _gcd_lcm,
    **{f"nextafter {d}": _nextafter(d) for d in ("float32", "float64", "bfloat16", "float16")},
    "ldexp": _ldexp,
    **{f"lerp {d}": _lerp(d) for d in ("float32", "float64")},
    **{f"logaddexp {d}": _logaddexp(d) for d in ("float32", "float64")},
    "float power": _float_power,
    "xlogy xlog1py": _xlogy,
    "xlogy scalar promotion": _xlogy_scalar_promotion,
    "xlogy bfloat16": _xlogy_bfloat16,
    "heaviside": _heaviside,
    "copysign": _copysign,
    "atan2": _atan2,
    "trapezoid": _trapezoid,
    "not implemented": _not_implemented,
    "inplace dunders": _inplace_dunders,
    "muldiv scalar": _muldiv_scalar,
}

# Transcendental results: vkml's decompositions are within a few ulps of PyTorch's libm (DESIGN §4), not bitwise.
APPROXIMATE = (
    "pow",
    "rpow",
    "hypot",
    "atan2",
    "logaddexp",
    "float power",
    "xlogy",
    "rdiv",
    "lerp",
    "trapezoid",
    "zeta",
    "mem overlap",  # its sigmoid and hypot
)
TOLERANCE = {"atol": 1e-5, "rtol": 1.3e-6}
LOW_PRECISION = {"atol": 1e-3, "rtol": 8e-3}


def _tolerance(name: str) -> dict:
    if name.startswith("nextafter"):
        return {}  # exact in every dtype: a one-ulp step is the point
    if "float16" in name or "bfloat16" in name:
        return LOW_PRECISION
    return TOLERANCE if name.startswith(APPROXIMATE) or " pow" in name else {}


# Divergences not fixed yet: strict xfails, so that a fix shows up as an XPASS to remove from here.
KNOWN: dict[str, str] = {}


def _params(table, test):
    return [
        pytest.param(n, marks=pytest.mark.xfail(reason=KNOWN[n], strict=True)) if n in KNOWN else p
        for n, p in zip(table, cases(table, test, SLOW), strict=True)
    ]


@pytest.mark.parametrize("name", _params(CASES, "test_binary"))
def test_binary(name):
    same(CASES[name], name=name, **_tolerance(name))


ERRORS = {
    "broadcast empty": (lambda m: m.zeros(5, 0) + m.zeros(0, 5), "must match the size of tensor b"),
    "broadcast empty 2": (lambda m: m.zeros(7, 0) + m.zeros(2, 1), "must match the size"),
    **{
        f"not broadcastable {a} {b}": (lambda m, a=a, b=b: m.atan2(m.ones(a), m.ones(b)), "must match the size")
        for a, b in (((2,), (3,)), ((3, 1), (2, 1)), ((1, 3, 2), (3,)), ((3, 1, 2), (2, 1, 2)))
    },
    "addcmul tensor value requires grad": (
        lambda m: m.tensor(3.0).addcmul(m.tensor(3.0), m.tensor(3.0), value=m.tensor(2.0, requires_grad=True)),
        None,
    ),
    **{
        f"inplace comparison dtype {op}": (
            lambda m, op=op: getattr(m.tensor([1], dtype=m.int32), op)(m.tensor([2.5])),
            None,
        )
        for op in ("lt_", "eq_", "logical_and_", "logical_xor_")
    },
    "comparison scalar overflow": (lambda m: m.tensor([32], dtype=m.uint8) < (1 << 70), None),
    "pow int negative": (
        lambda m: m.pow(m.tensor([1, 2, 3]), -2),
        r"Integers to negative integer powers are not allowed\.",
    ),
    "pow_ int negative": (
        lambda m: m.tensor([1, 2, 3]).pow_(-1),
        r"Integers to negative integer powers are not allowed\.",
    ),
    "pow int32 negative": (
        lambda m: m.tensor([-3, 2], dtype=m.int32) ** -3,
        r"Integers to negative integer powers are not allowed\.",
    ),
    "pow out int negative": (
        lambda m: m.pow(m.tensor([1, 2]), -1, out=m.empty(2, dtype=m.int64)),
        r"Integers to negative integer powers are not allowed\.",
    ),
    "pow_ result type": (lambda m: m.tensor([1, 2]).pow_(0.5), "can't be cast to the desired output type Long"),
    "pow_ tensor result type": (lambda m: m.tensor([1, 2]).pow_(m.tensor([0.5, 2.0])), None),
    **{
        f"pow_ resize {a} {b}": (
            lambda m, a=a, b=b: m.ones(a, dtype=m.float64).pow_(m.ones(b, dtype=m.float64)),
            "doesn't match the broadcast shape",
        )
        for a, b in (((), (3,)), ((2,), (2, 1)), ((2, 1), (2, 2)), ((2, 2), (2, 1, 1)))
    },
    "mul intertype inplace": (
        lambda m: m.tensor(3, dtype=m.int32).mul_(m.tensor(1.5)),
        "result type Float can't be cast to the desired output type Int",
    ),
    "imul intertype": (
        lambda m: operator.imul(m.tensor([3], dtype=m.int32), m.tensor(1.5, dtype=m.float64)),
        "can't be cast to the desired output type",
    ),
    "sub bool tensors": (
        lambda m: m.tensor([True, False]) - m.tensor([True, True]),
        r"Subtraction, the `\-` operator, with two bool tensors is not supported. Use the `\^` or `logical_xor\(\)`",
    ),
    "rsub bool scalar": (
        lambda m: 1 - m.tensor([True, False]),
        r"Subtraction, the `\-` operator, with a bool tensor is not supported. If you are trying to invert a mask",
    ),
    "sub bool scalar": (lambda m: m.tensor([True, False]) - 1, r"with a bool tensor is not supported"),
    "sub bool tensor float": (
        lambda m: m.sub(m.tensor([True]), m.tensor([1.0])),
        "with a bool tensor is not supported",
    ),
    "add alpha bool int": (
        lambda m: m.add(m.tensor([1], dtype=m.int8), m.tensor([2], dtype=m.int8), alpha=True),
        r"Boolean alpha only supported for Boolean results\.",
    ),
    "add alpha float int": (
        lambda m: m.add(m.tensor([1], dtype=m.int8), m.tensor([2], dtype=m.int8), alpha=1.0),
        r"For integral input tensors, argument alpha must not be a floating point number\.",
    ),
    "sub alpha bool int": (
        lambda m: m.sub(m.tensor([1], dtype=m.int8), m.tensor([2], dtype=m.int8), alpha=True),
        r"Boolean alpha only supported for Boolean results\.",
    ),
    "sub alpha float int": (
        lambda m: m.sub(m.tensor([1], dtype=m.int8), m.tensor([2], dtype=m.int8), alpha=1.0),
        r"For integral input tensors, argument alpha must not be a floating point number\.",
    ),
    "add alpha complex": (
        lambda m: m.add(m.tensor([3.0, 4.0]), m.tensor([4.0, 3.0]), alpha=complex(0.1, 0.2)),
        r"For non-complex input tensors, argument alpha must not be a complex number\.",
    ),
    **{
        f"integer {fn} by zero {d}": (
            lambda m, fn=fn, d=d: getattr(m, fn)(
                m.tensor([3, -4], dtype=getattr(m, d)), m.zeros(2, dtype=getattr(m, d))
            ),
            "ZeroDivisionError",
        )
        for fn in ("fmod", "remainder", "floor_divide")
        for d in ("uint8", "int32", "int64")
    },
    "integer floordiv operator zero": (lambda m: m.tensor([0, 1]) // m.tensor([0, 1]), "ZeroDivisionError"),
    "integer div trunc zero": (
        lambda m: m.div(m.tensor([5, 1]), m.tensor([0, 1]), rounding_mode="trunc"),
        "ZeroDivisionError",
    ),
    "integer div floor scalar zero": (lambda m: m.div(m.tensor([5]), 0, rounding_mode="floor"), "ZeroDivisionError"),
    "integer remainder scalar zero": (lambda m: m.tensor([5, 2]) % 0, "ZeroDivisionError"),
    "div rounding mode": (
        lambda m: m.div(m.tensor([1.0]), 2, rounding_mode="round"),
        "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'round'",
    ),
    "idiv int tensor": (lambda m: operator.itruediv(m.tensor([5, 3]), 2), "can't be cast to the desired output type"),
    "true_divide_ int": (lambda m: m.tensor([5, 3]).true_divide_(m.tensor([2, 1])), "can't be cast to the desired"),
    "floor_divide_ int by float": (lambda m: m.tensor([5, 3]).floor_divide_(m.tensor([2.0, 1.0])), "can't be cast"),
    "ifloordiv int by float": (lambda m: operator.ifloordiv(m.tensor([5, 3]), m.tensor(2.0)), "can't be cast"),
    "fmod_ int by float": (
        lambda m: m.tensor([5, 3]).fmod_(2.5),
        "result type Float can't be cast to the desired output type Long",
    ),
    "remainder_ int8 by float": (
        lambda m: m.tensor([5, 3], dtype=m.int8).remainder_(m.tensor([2.5, 1.0], dtype=m.float64)),
        "result type Double can't be cast to the desired output type Char",
    ),
    "remainder_ int16 by half": (
        lambda m: m.tensor([5, 3], dtype=m.int16).remainder_(m.tensor([2.5, 1.0], dtype=m.float16)),
        "result type Half can't be cast to the desired output type Short",
    ),
    "xlogy_ int": (lambda m: m.tensor([1, 2]).xlogy_(m.tensor([2.0, 3.0])), "can't be cast to the desired output type"),
    "xlogy_ bool": (lambda m: m.tensor([True]).xlogy_(m.tensor([2.0])), "can't be cast to the desired output type"),
    "float_power_ int": (
        lambda m: m.tensor([1, 2]).float_power_(2),
        "the base given to float_power_ has dtype Long but the operation's result requires dtype Double",
    ),
    "float_power_ float": (
        lambda m: m.tensor([1.0, 2.0]).float_power_(2.0),
        "operation's result requires dtype Double",
    ),
    "float_power_ tensor": (
        lambda m: m.tensor([1.0]).float_power_(m.tensor([2.0])),
        "operation's result requires dtype",
    ),
    **{
        f"float_power out {d}": (
            lambda m, d=d: m.float_power(m.tensor([-2, -1, 0, 1, 2]), -0.25, out=m.empty(1, dtype=getattr(m, d))),
            "operation's result requires dtype",
        )
        for d in ("int64", "float32")
    },
    "heaviside mixed dtypes": (
        lambda m: m.heaviside(m.tensor([1.0, 0.0]), m.tensor([1, 0])),
        "heaviside is not yet implemented for tensors with different dtypes.",
    ),
    "heaviside_ mixed dtypes": (
        lambda m: m.tensor([1, 0]).heaviside_(m.tensor([0.5, 0.5])),
        "heaviside is not yet implemented for tensors with different dtypes.",
    ),
    "heaviside out mixed dtypes": (
        lambda m: m.heaviside(m.tensor([1, 0]), m.tensor([0.5, 0.5]), out=m.empty(2)),
        "heaviside is not yet implemented for tensors with different dtypes.",
    ),
    "trapezoid dim": (lambda m: m.trapezoid(m.zeros(2, 3), x=m.tensor([]), dim=2), "Dimension out of range"),
    "trapezoid x size": (
        lambda m: m.trapezoid(m.zeros(2, 3), x=m.tensor([1.0, 2.0]), dim=1),
        "There must be one `x` value for each sample point",
    ),
    "shift float tensor": (lambda m: m.tensor([1.0]) << m.tensor([1.0]), None),
    "bitwise float": (lambda m: m.bitwise_and(m.tensor([1.0]), m.tensor([1.0])), "not implemented for 'Float'"),
    "bitwise float scalar": (lambda m: m.tensor([3]) & 1.5, None),
    "gcd float": (lambda m: m.gcd(m.tensor([1.0]), m.tensor([2.0])), "not implemented for 'Float'"),
    "nextafter int": (lambda m: m.nextafter(m.tensor([1]), m.tensor([2])), "not implemented for 'Long'"),
    "maximum complex": (lambda m: m.maximum(m.ones(1, dtype=m.complex64), m.ones(1)), "not implemented for"),
    "lerp dtype": (
        lambda m: m.lerp(m.ones(4, dtype=m.float64), m.ones(4), 1),
        "expected dtype double for `end`",
    ),
    "atan2_ int": (
        lambda m: m.tensor([1, 2]).atan2_(m.tensor([1, 1])),
        "can't be cast to the desired output type Long",
    ),
    "hypot int": (lambda m: m.hypot(m.tensor([3]), m.tensor([4])), "not implemented for 'Long'"),
    "logaddexp int": (lambda m: m.logaddexp(m.tensor([3]), m.tensor([4])), "not implemented for 'Long'"),
    "add out long": (
        lambda m: m.add(m.ones(4), m.ones(4), out=m.zeros(4, dtype=m.int64)),
        "result type Float can't be cast to the desired output type Long",
    ),
    "add_ inplace float into int": (
        lambda m: m.ones(2, dtype=m.int32).add_(1.5),
        "result type Float can't be cast to the desired output type Int",
    ),
    "ldexp_ int": (
        lambda m: m.tensor([1, 2]).ldexp_(m.tensor([1, 1])),
        "can't be cast to the desired output type Long",
    ),
}


@pytest.mark.parametrize("name", _params(ERRORS, "test_binary_errors"))
def test_binary_errors(name):
    fn, match = ERRORS[name]
    same(fn, match=match, name=name)


@pytest.mark.parametrize(
    "name",
    cases(
        ["div rounding nonfinite float32", "fmod remainder float signs", "int div semantics", "shifts", "copysign"],
        "test_binary_on_vulkan",
        SLOW,
    ),
)
def test_binary_on_vulkan(name, gpu):
    same(on_device(gpu, CASES[name]), name=name, **_tolerance(name))


GRAD_TESTED = {"ldexp"}  # tests/test_autograd.py's inventory of checked rules


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_ldexp_gradient_matches_pytorch(dtype):
    import torch

    import vkml

    mantissa = np.array([0.75, -1.5, 3.0, 1e-3, -0.0], dtype=dtype)
    exponent = np.array([1, -3, 0, 20, 4], dtype=np.int64)
    upstream = np.array([1.0, -2.0, 0.5, 3.0, 1.0], dtype=dtype)
    grads = []
    for m in (torch, vkml):
        x = m.tensor(mantissa, requires_grad=True)
        e = m.tensor(exponent)
        out = m.ldexp(x, e)
        assert out.dtype == getattr(m, dtype)
        out.backward(m.tensor(upstream))
        grads.append((out.detach().numpy(), x.grad.numpy()))
    (want_out, want_grad), (got_out, got_grad) = grads
    np.testing.assert_array_equal(got_out, want_out)
    np.testing.assert_array_equal(got_grad, want_grad)
