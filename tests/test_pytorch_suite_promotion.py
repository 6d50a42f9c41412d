"""PyTorch's test/test_type_promotion.py (TestTypePromotion: its hand-written checks), on torch and on vkml,
compared as tests/pytorch_suite_ops.py says: in-place ops that do not promote (PyTorch's "result type Float
can't be cast to the desired output type Long"), unsigned and signed integers with Python scalars, 0-d tensors
as "wrapped numbers" or not, float16/bfloat16 mixes, out= with a wider or narrower dtype, mixed-dtype backward,
the many-promotions sweep of add/sub/mul/div/rsub, alpha rules, booleans, torch.result_type, can_cast,
promote_types, comparisons across dtypes, indexing assignment dtypes, true_divide and the default dtype
(float32 and float64, as PyTorch's float_double_default_dtype runs each check).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from pytorch_suite_ops import cases, on_device, same

# Cases that take over ~0.06 s each (CPU-backend kernels to build): behind the exhaustive marker
# (pytest -m exhaustive), so that this file adds little to the default suite.
SLOW = frozenset(
    (
        "test_promotion[div promotion]",
        "test_promotion[computation ignores out]",
        "test_promotion[atan2 promotion]",
        "test_promotion[clamp promotion]",
        "test_promotion[unary out casting]",
        "test_promotion[comparison types]",
        "test_promotion[inplace]",
        "test_promotion[integer div]",
        "test_promotion[lt type promotion]",
        "test_promotion[many promotions bfloat16]",
        "test_promotion[many promotions bool]",
        "test_promotion[many promotions float16]",
        "test_promotion[many promotions float32]",
        "test_promotion[many promotions float64]",
        "test_promotion[many promotions int16]",
        "test_promotion[many promotions int32]",
        "test_promotion[many promotions int64]",
        "test_promotion[many promotions int8]",
        "test_promotion[many promotions uint8]",
        "test_promotion[mixed type backward]",
        "test_promotion[scalar values]",
        "test_promotion[scalar wrapping]",
        "test_promotion[transpose]",
        "test_promotion[true divide out]",
        "test_promotion[true divide]",
        "test_promotion_on_vulkan[half]",
        "test_promotion_on_vulkan[inplace]",
        "test_promotion_on_vulkan[many promotions float16]",
        "test_promotion_on_vulkan[scalar values]",
    )
)

MATH_DTYPES = ("uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64")
ALL_DTYPES = ("bool", *MATH_DTYPES)


def _rng():
    """A generator seeded afresh: each side of a case draws the same values."""
    return np.random.default_rng(5)


def _both_defaults(fn):
    """``fn`` run with the default dtype float32 and again with float64 (PyTorch's float_double_default_dtype)."""

    def run(m):
        before = m.get_default_dtype()
        try:
            out = []
            for d in (m.float32, m.float64):
                m.set_default_dtype(d)
                out.append(fn(m))
            return out
        finally:
            m.set_default_dtype(before)

    return run


def _inplace(m):
    i = m.ones([4, 4, 4], dtype=m.int32)
    i.add_(m.ones([4, 4, 4], dtype=m.int64))
    i.add_(1)
    u = m.tensor([1, 1, 1], dtype=m.uint8)
    u *= m.tensor([1, 1, 1], dtype=m.int16)
    u8 = m.tensor([200, 1, 3], dtype=m.uint8)
    u8 += m.tensor([100, -2, 5], dtype=m.int64)
    i8 = m.tensor([100, -100], dtype=m.int8)
    i8 *= 3
    f16 = m.tensor([1.5, 2.5], dtype=m.float16)
    f16 += m.tensor([1e-3, 1.0], dtype=m.float64)
    f16 *= 1e5
    return [i, i.dtype, u, u.dtype, u8, i8, f16]


def _unsigned(m):
    dont_promote = m.ones(3, dtype=m.uint8) + 5
    return [dont_promote, dont_promote.dtype, m.ones(3, dtype=m.uint8) - 5, m.ones(3, dtype=m.uint8) * 300]


def _int_float_promotion(m):
    a = m.ones([4, 4, 4], dtype=m.int32)
    b = m.ones([4, 4, 4], dtype=m.int64)
    f = m.ones([4, 4, 4], dtype=m.float32)
    d = m.ones([4, 4, 4], dtype=m.float64)
    return [a + b, (a + b).dtype, f + d, d + f, a + 1, (a + 1).dtype, a + f, (a + f).dtype]


def _from_issue(m):
    a = m.tensor(_rng().random(3).astype(np.float32))
    u = m.tensor([0, 0, 1], dtype=m.uint8)
    other = m.tensor(5.5, dtype=m.float64)
    return [(a * 5).dtype, u + 1, u + 1000, (u + 5.5).dtype, (u + other).dtype, (a + other).dtype, u + 1000]


def _half(m):
    half = m.tensor(5.5, dtype=m.float16)
    default = m.tensor(100000.0)
    h1 = m.tensor([5.5], dtype=m.float16)
    bf = m.tensor([5.5], dtype=m.bfloat16)
    return [half + 2.2, half + 100000, half + default, h1 + half, h1 + 2.2, h1 + default, bf + h1, bf + 3, bf * 2.5]


def _alternate_result(m):
    f = m.tensor([1, 1, 1, 1], dtype=m.float32)
    d = m.tensor([1, 1, 1, 1], dtype=m.float64)
    r = m.add(f, f, out=d)
    return [d, d.dtype, r.dtype, f + f]


def _mixed_type_backward(m):
    f = m.ones([3, 3], dtype=m.float32, requires_grad=True)
    ten = m.tensor([10.0], dtype=m.float64)
    tens = f * ten
    s = (tens + 2).sum()
    s.backward()
    out = [f.grad, tens]
    for fn in (m.add, m.sub, m.rsub, m.mul, m.div):
        for d1, d2 in itertools.product(("float32", "float64"), ("float32", "float64", "int32", "int64")):
            x = m.ones(10, requires_grad=True, dtype=getattr(m, d1))
            y = m.full((10,), 2, dtype=getattr(m, d2))
            fn(x, y).sum().backward()
            out += [x.grad, x.grad.dtype]
    return out


def _test_tensor(m, dtype, rng, remove_zeros=False):
    shape = (5, 5, 5)
    if dtype == "bool":
        return m.tensor(rng.integers(int(remove_zeros), 2, shape).astype(bool))
    if dtype in ("float16", "bfloat16", "float32", "float64"):
        v = rng.standard_normal(shape)
        if remove_zeros:
            v[np.abs(v) < 0.05] = 5
        return m.tensor(v.astype(np.float32)).to(getattr(m, dtype))
    v = rng.integers(-5 if dtype != "uint8" else 0, 10, shape)
    if remove_zeros:
        v[v == 0] = 5
    return m.tensor(v, dtype=getattr(m, dtype))


def _many_promotions(first_dtypes):
    def run(m):
        out = []
        rng = _rng()
        for d1 in first_dtypes:
            for d2 in ALL_DTYPES:
                for name in ("add", "sub", "mul", "div", "rsub"):
                    common = m.promote_types(getattr(m, d1), getattr(m, d2))
                    if name in ("sub", "rsub") and common is m.bool:
                        continue
                    first = _test_tensor(m, d1, rng)
                    second = _test_tensor(m, d2, rng, name == "div")
                    if "bool" in (d1, d2) and name in ("sub", "rsub"):
                        continue
                    first, second = first.transpose(0, 2), second.transpose(2, 1)
                    op = getattr(m, name)
                    result = op(first, second)
                    out += [result.dtype, result, op(first.to(common), second.to(common))]
        return out

    return run


def _non_promoting_ops(m):
    x = m.ones(4, dtype=m.float64)
    try:
        m.neg(m.ones(4, dtype=m.float32), out=x)
        neg = x
    except RuntimeError as e:
        neg = type(e).__name__
    return [neg, x.dtype]


def _booleans(m):
    one = m.tensor([True])
    t = m.tensor(True)
    return [one + one, one + True, m.add(t, t, alpha=True), m.add(one, one, alpha=False), one * True, t * t]


def _create_bool_tensors(m):
    return [
        m.arange(False, True),
        m.arange(True),
        m.arange(False, True, 0.5),
        m.arange(False, False),
        m.linspace(False, True, 5),
        m.logspace(False, True, 4),
        m.scalar_tensor(False),
        m.scalar_tensor(3),
        m.scalar_tensor(True).dtype,
    ]


def _result_type(m):
    t = m.tensor
    return [
        m.result_type(t(1, dtype=m.int32), 1),
        m.result_type(1, t(1, dtype=m.int32)),
        m.result_type(1, 1.0),
        m.result_type(t(1), 1.0),
        m.result_type(t(1, dtype=m.int64), t([1, 1], dtype=m.int32)),
        m.result_type(t([1.0, 1.0], dtype=m.float32), 1.0),
        m.result_type(t(1.0, dtype=m.float32), t(1, dtype=m.float64)),
        m.result_type(t([1], dtype=m.uint8), -1),
        m.result_type(t([1], dtype=m.uint8), t(-1)),
        m.result_type(t([1], dtype=m.uint8), t([1], dtype=m.int8)),
        m.result_type(t([1], dtype=m.float16), t([1], dtype=m.bfloat16)),
        m.result_type(t([1], dtype=m.bool), True),
        m.result_type(t([True]), 2),
        m.result_type(t([True]), 2.5),
        m.result_type(t([1], dtype=m.float16), 2.5),
        m.result_type(t([1], dtype=m.float16), t(2.5, dtype=m.float64)),
        m.result_type(t(1, dtype=m.int64), t(1, dtype=m.float16)),
        m.result_type(2, t(1.0, dtype=m.bfloat16)),
        m.result_type(t(1.0, dtype=m.float64), 1),
        m.result_type(True, False),
        m.result_type(1, 2),
    ]


def _can_cast(m):
    out = []
    for a in ALL_DTYPES:
        for b in ALL_DTYPES:
            out.append(m.can_cast(getattr(m, a), getattr(m, b)))
    return out


def _promote_types(m):
    out = []
    for a in ALL_DTYPES:
        for b in ALL_DTYPES:
            out.append(m.promote_types(getattr(m, a), getattr(m, b)))
    return out


def _comparison_types(m):
    values = {"uint8": 32, "int8": 32, "int16": 1024, "int32": 1 << 20, "int64": 1 << 35, "float16": 1024}
    values |= {"bfloat16": 1024, "float32": 1 << 20, "float64": 1 << 35}
    out = []
    for (d1, v1), (d2, v2) in itertools.product(values.items(), values.items()):
        for shape in ((1,), ()):
            t1 = m.full(shape, v1, dtype=getattr(m, d1))
            t2 = m.full(shape, v2, dtype=getattr(m, d2))
            out += [t1 < t2, m.le(t1, t2), m.gt(t1, t2, out=m.empty(1, dtype=m.bool)), t1 >= t2, t1 == t2, t1 != t2]
    return out


def _lt_type_promotion(m):
    out = []
    for d in MATH_DTYPES:
        for shape in ((1,), ()):
            x = m.zeros(shape, dtype=getattr(m, d))
            out += [x < 0.5, x < m.tensor(0.5), (x < 0.5).dtype]
    return out


def _indexing(m):
    tmp = m.ones(9, 9, dtype=m.float32)
    mask = m.ones(10, 10, dtype=m.uint8)
    a = m.ones(5, 2, dtype=m.float64)
    a[:, 1] = m.zeros(5, dtype=m.int32)
    b = m.ones(5, dtype=m.int64)
    b[1:3] = m.tensor([2.7, -3.9])
    return [tmp + mask[1:, 1:], a, b]


def _transpose(m):
    a = m.tensor([[True, True], [False, True]])
    return [a.t() == 0, a.t() == False]  # noqa: E712 - PyTorch's check compares with False


def _true_divide(m):
    out = []
    for d in ("bool", "uint8", "int8", "int16", "int32", "int64"):
        dividend = (m.tensor(_rng().standard_normal(5).astype(np.float32)) * 100).to(getattr(m, d))
        divisor = m.arange(1, 6).to(getattr(m, d))
        out += [m.true_divide(dividend, divisor), m.true_divide(dividend, 2.0), dividend / 2, dividend / divisor]
    return out


def _true_divide_out(m):
    out = []
    for d in ("float32", "float64"):
        dividend = (m.tensor(_rng().standard_normal(5).astype(np.float32)) * 100).to(getattr(m, d))
        divisor = m.arange(1, 6).to(getattr(m, d))
        q = m.empty(5, dtype=getattr(m, d))
        out += [m.true_divide(dividend, divisor, out=q), m.true_divide(dividend, 2, out=q)]
        out += [dividend.clone().true_divide_(divisor), dividend.clone().true_divide_(2), dividend.clone().div_(2)]
    return out


def _integer_div(m):
    out = []
    for d in ("int8", "uint8", "int16", "int32", "int64"):
        a, b = m.tensor(1, dtype=getattr(m, d)), m.tensor(1, dtype=getattr(m, d))
        o = m.empty(1, dtype=m.float32)
        out += [a / b, m.div(a, b), m.div(a, b, out=o), a.true_divide(b)]
    return out


def _scalar_wrapping(m):
    """Python numbers and 0-d tensors of each dtype against 1-d tensors of each dtype: the result's dtype."""
    out = []
    scalars = [True, 3, -3, 2.5, 1e40]
    for d in ALL_DTYPES:
        t = m.ones(2, dtype=getattr(m, d))
        for s in scalars:
            for op in ("add", "mul", "div", "maximum", "eq", "fmod", "atan2"):
                try:
                    out.append(getattr(m, op)(t, s if op != "maximum" else m.tensor(s)).dtype)
                except Exception as e:  # noqa: BLE001 - the class is compared with torch's (vkml's may subclass it)
                    out.append(("raises", isinstance(e, RuntimeError), isinstance(e, NotImplementedError)))
        for z in ALL_DTYPES:
            zero_dim = m.ones((), dtype=getattr(m, z))
            out += [(t + zero_dim).dtype, (zero_dim * t).dtype, m.result_type(t, zero_dim)]
    return out


def _scalar_values(m):
    """The values of mixed Python-number arithmetic (rounding of the scalar to the tensor's dtype)."""
    out = []
    for d in ("uint8", "int8", "int32", "int64", "float16", "bfloat16", "float32"):
        t = m.tensor([1, 2, 100], dtype=getattr(m, d))
        out += [t + 2.7, t * 0.1, t - 300, t + True, 1.5 - t, 2**t if d not in ("uint8", "int8") else t + 1]
    h = m.tensor([1.0, 2.0], dtype=m.float16)
    out += [h + 1e-4, h * 70000, h + m.tensor(1e-4, dtype=m.float64), m.tensor([1.0], dtype=m.bfloat16) + 1e-3]
    return out


def _cat_promotion(m):
    out = []
    for a, b in (
        ("int32", "float32"),
        ("uint8", "int8"),
        ("bool", "int64"),
        ("float16", "bfloat16"),
        ("int64", "float64"),
    ):
        x, y = m.ones(2, dtype=getattr(m, a)), m.zeros(3, dtype=getattr(m, b))
        out += [m.cat([x, y]), m.stack([x, x.to(getattr(m, b))]), m.where(m.tensor([True, False]), x, y[:2])]
    return out


def _div_promotion(m):
    out = []
    for d in ALL_DTYPES:
        for op in (m.div, m.true_divide):
            a = m.arange(1, 6).to(getattr(m, d)) if d != "bool" else m.tensor([True, True, False, True, True])
            b = m.arange(1, 6).to(getattr(m, d)) if d != "bool" else m.ones(5, dtype=m.bool)
            for x, y in ((a, b), (a, 2), (2, b) if op is m.div else (a, 3.5)):
                r = op(x, y)
                out += [r.dtype, r]
            o = m.empty(5, dtype=m.float64)
            out += [op(a, b, out=o), o.dtype]
        if getattr(m, d).is_floating_point:
            x = m.arange(1, 6).to(getattr(m, d))
            out += [x.clone().div_(x), x.clone().true_divide_(2)]
    return out


def _computation_ignores_out(m):
    """The computation runs in the operands' dtype and only then converts to out's (PyTorch's rule)."""
    a = m.tensor([5.0, 3.0], dtype=m.float16)
    b = m.tensor([1e-3, 70000.0], dtype=m.float32)
    o = m.empty(2, dtype=m.float64)
    r = m.add(a, a.clone().fill_(2049.0), out=o)
    u = m.tensor([200, 100], dtype=m.uint8)
    oi = m.empty(2, dtype=m.int64)
    return [r, o, m.mul(a, b, out=m.empty(2, dtype=m.float64)), m.add(u, u, out=oi), m.mul(u, 2, out=oi)]


def _clamp_promotion(m):
    out = []
    for d in ("uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64"):
        t = m.tensor([-3, 1, 5, 200], dtype=getattr(m, d)) if d != "uint8" else m.tensor([0, 1, 5, 200], dtype=m.uint8)
        for lo, hi in ((2, 4), (1.5, 4.5), (m.tensor(2), m.tensor(4)), (m.tensor(1.5), None), (None, m.tensor([4.5]))):
            r = m.clamp(t, lo, hi)
            out += [r.dtype, r]
    return out


def _atan2_promotion(m):
    out = []
    for a in ("int32", "int64", "bool", "float16", "bfloat16", "float32", "float64", "uint8"):
        for b in ("int64", "float32", "float64", "bool", "float16"):
            x = m.tensor([1, 0, 1], dtype=getattr(m, a))
            y = m.tensor([1, 1, 0], dtype=getattr(m, b))
            r = m.atan2(x, y)
            out += [r.dtype, r]
    return out


def _unary_out_casting(m):
    out = []
    t = m.tensor([1.5, -2.5, 3.25])
    for d in ("float64", "float16", "bfloat16", "int64", "bool"):
        o = m.empty(3, dtype=getattr(m, d))
        for fn in (m.exp, m.sin, m.sqrt, m.sigmoid):
            try:
                out.append(fn(t.abs(), out=o))
            except RuntimeError as e:
                out.append(str(e))
    return out


def _cat_out_dtypes(m):
    out = []
    for od in ("float64", "float32", "int64"):
        for a, b in (("int32", "float32"), ("int64", "int32"), ("uint8", "bool")):
            x, y = m.ones(2, dtype=getattr(m, a)), m.zeros(2, dtype=getattr(m, b))
            try:
                out.append(m.cat([x, y], out=m.empty(4, dtype=getattr(m, od))))
            except TypeError as e:  # PyTorch's class for cat
                out.append(str(e))
    return out


def _numpy_scalars(m):
    """numpy scalars and 0-d arrays against tensors: PyTorch treats a numpy scalar as a Python number."""
    out = []
    for d in ("uint8", "int32", "float16", "float32"):
        t = m.ones(3, dtype=getattr(m, d))
        # (np.bool_ left out: PyTorch reads it as a float, t * np.bool_(True) is float32)
        for s in (np.float64(2.5), np.int64(3), np.float32(1.5), np.int8(-2)):
            r = t * s
            out += [r.dtype, r, (s + t).dtype]
    return out


CASES = {
    "div promotion": _both_defaults(_div_promotion),
    "computation ignores out": _computation_ignores_out,
    "clamp promotion": _clamp_promotion,
    "atan2 promotion": _atan2_promotion,
    "unary out casting": _unary_out_casting,
    "cat out dtypes": _cat_out_dtypes,
    "numpy scalars": _numpy_scalars,
    "inplace": _both_defaults(_inplace),
    "unsigned": _both_defaults(_unsigned),
    "int float promotion": _both_defaults(_int_float_promotion),
    "from issue": _both_defaults(_from_issue),
    "half": _both_defaults(_half),
    "alternate result": _both_defaults(_alternate_result),
    "mixed type backward": _mixed_type_backward,
    **{f"many promotions {d}": _many_promotions((d,)) for d in ALL_DTYPES},
    "non promoting ops": _non_promoting_ops,
    "booleans": _both_defaults(_booleans),
    "create bool tensors": _both_defaults(_create_bool_tensors),
    "result type": _both_defaults(_result_type),
    "can cast": _can_cast,
    "promote types": _promote_types,
    "comparison types": _comparison_types,
    "lt type promotion": _both_defaults(_lt_type_promotion),
    "indexing": _indexing,
    "transpose": _transpose,
    "true divide": _both_defaults(_true_divide),
    "true divide out": _true_divide_out,
    "integer div": _integer_div,
    "scalar wrapping": _both_defaults(_scalar_wrapping),
    "scalar values": _scalar_values,
    "cat promotion": _cat_promotion,
}

# Divergences not fixed yet: strict xfails, so that a fix shows up as an XPASS to remove from here.
KNOWN: dict[str, str] = {}


def _params(table, test):
    return [
        pytest.param(n, marks=pytest.mark.xfail(reason=KNOWN[n], strict=True)) if n in KNOWN else p
        for n, p in zip(table, cases(table, test, SLOW), strict=True)
    ]


# logspace's float32 values come from vkml's pow, within an ulp of PyTorch's libm pow (not bitwise)
TOLERANCE = {"create bool tensors": {"atol": 1e-6, "rtol": 1.3e-6}}


@pytest.mark.parametrize("name", _params(CASES, "test_promotion"))
def test_promotion(name):
    same(CASES[name], name=name, **TOLERANCE.get(name, {}))


ERRORS = {
    "inplace add_ float into int": (
        lambda m: m.ones([4, 4, 4], dtype=m.int32).add_(1.5),
        "result type Float can't be cast to the desired output type Int",
    ),
    "inplace add_ uint8 into bool": (
        lambda m: m.tensor([1, 1, 1], dtype=m.bool).add_(m.tensor([1, 1, 1], dtype=m.uint8)),
        "result type Byte can't be cast to the desired output type Bool",
    ),
    "inplace mul_ float into long": (
        lambda m: m.tensor([1, 2]).mul_(m.tensor([1.5, 2.0])),
        "result type Float can't be cast to the desired output type Long",
    ),
    "inplace div_ long": (
        lambda m: m.tensor([1, 2]).div_(2),
        "result type Float can't be cast to the desired output type Long",
    ),
    "inplace sub_ double into half": (
        lambda m: m.tensor([1, 2], dtype=m.int16).sub_(m.tensor(1.5, dtype=m.float64)),
        "result type Double can't be cast to the desired output type Short",
    ),
    "inplace iadd float into long": (
        lambda m: m.tensor([1, 2]).__iadd__(0.5),
        "result type Float can't be cast to the desired output type Long",
    ),
    "inplace into bool from int": (
        lambda m: m.tensor([True]).mul_(2),
        "result type Long can't be cast to the desired output type Bool",
    ),
    "half cpu": (lambda m: m.tensor(5.5, dtype=m.float16).float() + 2.2, None),
    "alternate result": (
        lambda m: m.add(m.ones(4), m.ones(4), out=m.zeros(4, dtype=m.int64)),
        "result type Float can't be cast to the desired output type Long",
    ),
    "out into bool": (
        lambda m: m.mul(m.ones(4, dtype=m.int32), 2, out=m.zeros(4, dtype=m.bool)),
        "result type Int can't be cast to the desired output type Bool",
    ),
    "non promoting lerp": (lambda m: m.lerp(m.ones(4, dtype=m.float64), m.ones(4), 1), None),
    "alpha int": (lambda m: m.add(m.ones(4, dtype=m.int32), m.ones(4, dtype=m.int32), alpha=1.1), "alpha must not be"),
    "alpha bool": (lambda m: m.add(m.ones(4, dtype=m.bool), m.ones(4, dtype=m.bool), alpha=1.1), "alpha must not be"),
    "alpha bool scalars": (lambda m: m.add(m.tensor(1), 1, alpha=True), "Boolean alpha only supported"),
    "true_divide out int": (
        lambda m: m.true_divide(m.tensor([5, 3]), m.tensor([2, 1]), out=m.empty(2, dtype=m.int64)),
        "result type Float can't be cast to the desired output type Long",
    ),
    "true_divide out int scalar": (
        lambda m: m.true_divide(m.tensor([5, 3], dtype=m.uint8), 2, out=m.empty(2, dtype=m.uint8)),
        "can't be cast to the desired output type Byte",
    ),
    "true_divide_ int": (lambda m: m.tensor([5, 3]).true_divide_(m.tensor([2, 1])), "can't be cast"),
    "true_divide_ bool scalar": (
        lambda m: m.tensor([True]).true_divide_(2),
        "can't be cast to the desired output type Bool",
    ),
    "div out int": (
        lambda m: m.div(m.tensor(1, dtype=m.int8), m.tensor(1, dtype=m.int8), out=m.empty(1, dtype=m.int8)),
        "result type Float can't be cast to the desired output type Char",
    ),
    "promote_types bad": (lambda m: m.promote_types(m.float32, 3), None),
    "result_type no tensor": (lambda m: m.result_type("a", 1), None),
    "can_cast bad": (lambda m: m.can_cast(m.float32, "int"), None),
    "index put dtype": (
        lambda m: m.ones(5, 2, dtype=m.float64).index_put_((m.tensor([0, 1]),), m.zeros(2, 2, dtype=m.int32)),
        "Index put requires the source and destination dtypes match",
    ),
    "masked_fill_ float into int": (
        lambda m: m.ones(3, dtype=m.int32).masked_fill_(m.tensor([True, False, True]), m.tensor(1.5)),
        None,
    ),
}


@pytest.mark.parametrize("name", _params(ERRORS, "test_promotion_errors"))
def test_promotion_errors(name):
    fn, match = ERRORS[name]
    same(fn, match=match, name=name)


@pytest.mark.parametrize(
    "name",
    cases(["inplace", "half", "many promotions float16", "scalar values"], "test_promotion_on_vulkan", SLOW),
)
def test_promotion_on_vulkan(name, gpu):
    same(on_device(gpu, CASES[name]), name=name)
