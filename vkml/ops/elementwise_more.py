"""More elementwise operators (issue 17): rounding, remainders, classification, bit operations and
activations, each an IR body over exact primitives (no driver math), with PyTorch's semantics.

Bodies take scalars of the compute dtype (float32 for float16 tensors). Parameters such as
``leaky_relu``'s slope travel as scalar operands (broadcast constants), so that one kernel
serves every value; their gradient is None.
"""

from __future__ import annotations

from ..ir import builder as B
from ..ir import types as T
from . import mathlib as M
from .elementwise import LOGICAL_INPLACE_GRAD, _sign
from .grads import as_tensor, opmath
from .mathlib import dd
from .mathlib import f64more as F64
from .mathlib.bits import ABS_MASK, DEFAULT_NAN_BITS, SIGN_BIT, f32, f32_bits, from_bits, quiet, to_bits
from .registry import ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, OpDef, Public, register

F32, U32, I32 = T.float32, T.uint32, T.int32
INF = float("inf")
_TORCH_FMOD = (
    "PyTorch's vectorized CPU kernel computes fmod as a - trunc(a/b)·b: inexact for large ratios and NaN "
    "where a/b overflows (fmod(1, 1e-45)); vkml is exact, as C's fmod and numpy.fmod. "
)
_INT_DIV_ZERO = (
    "An integer tensor divided by a Python 0 raises PyTorch's RuntimeError 'ZeroDivisionError' at the op; "
    "a 0 inside an integer divisor tensor raises it when the result (or anything computed from it) is read, "
    "naming the op and the calling line: reading the divisor at the op would wait for the device "
    "(vkml/schedule/checks.py)."
)


def _float(v) -> bool:
    return v.dtype.is_float


def _zeros_grad(c):
    return tuple(c.F.zeros_like(c.g) if n else None for n in c.needs)


def _nan_of(x, y):
    """x86's NaN for an operation on x and y: the first NaN operand quieted, else the default NaN."""
    return B.select(B.isnan(x), quiet(x), B.select(B.isnan(y), quiet(y), f32_bits(DEFAULT_NAN_BITS)))


# ---------------------------------------------------------------------- rounding


def _rounding(prim):
    return lambda a: prim(a) if _float(a) else a


def _round_decimals(x, p):
    # PyTorch: nearbyint(x * 10^d) / 10^d, each step rounded in float32 (p = 10^d as float32), in float64
    # for float64 (p = 10^d as a double)
    return M.div(B.round_even(x * p), p)


def _round_neg_decimals(x, p):
    # PyTorch for d < 0: nearbyint(x / 10^-d) * 10^-d
    return B.round_even(M.div(x, p)) * p


# ---------------------------------------------------------------------- fmod and relatives


def _pow2_any(k):
    """2^k as float32 for an int32 k in [-149, 127], subnormal powers included (exact)."""
    normal = B.bitcast((k + 127) << 23, U32)
    sub = B.bitcast(B.const(1, I32) << B.select(k < -126, k + 149, B.const(0, I32)), U32)
    return from_bits(B.select(k < -126, sub, normal))


def fmod_f32(x, y):
    """x - trunc(x/y)·y exactly (IEEE 754 / C fmod): long division of the significands.

    |x| = mx·2^(ex-150) and |y| = my·2^(ey-150) with 24-bit integers mx, my; the remainder of
    mx·2^(ex-ey) by my is found 7 bits at a time (r < my < 2^24, so r·2^7 fits in int32), and
    r·2^(ey-150) is exact because it is a multiple of y's ulp below |y|. The sign is x's.
    """
    xb, yb = to_bits(x), to_bits(y)
    ax, ay = xb & ABS_MASK, yb & ABS_MASK
    ex, ey = B.bitcast(ax >> 23, I32), B.bitcast(ay >> 23, I32)
    hidden = B.const(0x800000, I32)
    zero = B.const(0, I32)
    mx = B.bitcast(ax & 0x7FFFFF, I32) | B.select(B.eq(ex, zero), zero, hidden)
    my = B.bitcast(ay & 0x7FFFFF, I32) | B.select(B.eq(ey, zero), zero, hidden)
    one = B.const(1, I32)
    ex1 = B.select(ex < one, one, ex)  # a subnormal's scale is that of exponent field 1
    ey1 = B.select(ey < one, one, ey)
    safe_my = B.select(B.eq(my, zero), one, my)
    n = ex1 - ey1

    def step(i, r):
        left = n - B.bitcast(i, I32) * 7
        s = B.select(left < zero, zero, B.select(left > 7, B.const(7, I32), left))
        return (B.emit("irem", r << s, safe_my),)

    (r,) = B.loop(0, 37, 1, (B.emit("irem", mx, safe_my),), step)  # 37·7 ≥ 253 = the largest ex - ey
    mag = B.convert(r, F32) * _pow2_any(ey1 - 150)
    out = from_bits(to_bits(mag) | (xb & SIGN_BIT))
    out = B.select(ax < ay, x, out)
    invalid = B.isnan(x) | B.isnan(y) | (ax >= 0x7F800000) | B.eq(ay, B.const(0, U32))
    return B.select(invalid, _nan_of(x, y), out)


def _safe_divisor(b):
    # integer division by 0 and INT_MIN / -1 are undefined in the IR: divide by 1 there
    return B.select(B.eq(b, B.const(0, b.dtype)) | B.eq(b, B.const(-1, b.dtype)), B.const(1, b.dtype), b)


def _int_trunc_div(a, b):
    q = B.emit("idiv", a, _safe_divisor(b))
    q = B.select(B.eq(b, B.const(-1, b.dtype)), -a, q)  # wraps at INT_MIN, as PyTorch
    return B.select(B.eq(b, B.const(0, b.dtype)), B.const(0, a.dtype), q)


def _int_trunc_rem(a, b):
    r = B.emit("irem", a, _safe_divisor(b))
    return B.select(B.eq(b, B.const(0, b.dtype)) | B.eq(b, B.const(-1, b.dtype)), B.const(0, a.dtype), r)


def _fmod(a, b):
    if a.dtype is T.float64:
        return F64.fmod(a, b)
    if _float(a):
        return fmod_f32(a, b)
    return _int_trunc_rem(a, b)


def _remainder(a, b):
    zero = B.const(0, a.dtype)
    mod = _fmod(a, b)
    # PyTorch: fmod, then add b where the remainder is nonzero and its sign differs from b's
    fix = B.ne(mod, zero) & B.ne(b < zero, mod < zero)
    return B.select(fix, mod + b, mod)


def _floor_divide(a, b):
    if not _float(a):
        q = _int_trunc_div(a, b)
        r = _int_trunc_rem(a, b)
        zero = B.const(0, a.dtype)
        differ = B.ne(a < zero, b < zero)
        return B.select(differ & B.ne(r, zero), q - B.const(1, a.dtype), q)
    # PyTorch's div_floor_floating (Python's float floor division)
    quotient = M.div(a, b)
    mod = _fmod(a, b)
    div = M.div(a - mod, b)
    div = B.select(B.ne(mod, 0.0) & B.ne(b < 0.0, mod < 0.0), div - 1.0, div)
    fl = B.floor(div)
    fl = B.select((div - fl) > 0.5, fl + 1.0, fl)
    signed_zero = _copysign(B.const(0.0, a.dtype), quotient)
    out = B.select(B.ne(div, 0.0), fl, signed_zero)
    return B.select(B.eq(b, 0.0), quotient, out)


def _div_trunc(a, b):
    if not _float(a):
        return _int_trunc_div(a, b)
    return B.trunc(M.div(a, b))


# ---------------------------------------------------------------------- sign bits and classification


def _sgn(a):
    return _sign(a)  # sign's body: a real number's sgn is its sign


def _signbit(a):
    if a.dtype is T.float64:
        return B.bitcast(a, T.int64) < 0
    if _float(a):
        return B.ne(to_bits(a) & SIGN_BIT, B.const(0, U32))
    if a.dtype is T.bool_:
        return B.ne(a, a)
    return a < 0


def _copysign(a, b):
    if a.dtype is T.float64:
        return F64.copysign(a, b)
    return from_bits((to_bits(a) & ABS_MASK) | (to_bits(b) & SIGN_BIT))


def _isinf(a):
    if not _float(a):
        return B.const(False, T.bool_)
    if a.dtype is T.float64:
        return B.eq(M.abs(a), B.const(INF, a.dtype))
    return B.eq(to_bits(a) & ABS_MASK, B.const(0x7F800000, U32))


def _isposinf(a):
    return B.eq(a, B.const(INF, a.dtype)) if _float(a) else B.const(False, T.bool_)


def _isneginf(a):
    return B.eq(a, B.const(-INF, a.dtype)) if _float(a) else B.const(False, T.bool_)


def _isfinite(a):
    if not _float(a):
        return B.const(True, T.bool_)
    if a.dtype is T.float64:
        return M.abs(a) < B.const(INF, a.dtype)  # False for NaN (ordered)
    return (to_bits(a) & ABS_MASK) < 0x7F800000


def _isnan(a):
    return B.isnan(a) if _float(a) else B.const(False, T.bool_)


# ---------------------------------------------------------------------- max/min that ignore NaN


def _fmax(a, b):
    if a.dtype is T.bool_:
        return a | b
    if not _float(a):
        return B.select(a < b, b, a)
    m = M.maximum(a, b)
    return B.select(B.isnan(a), b, B.select(B.isnan(b), a, m))


def _fmin(a, b):
    if a.dtype is T.bool_:
        return a & b
    if not _float(a):
        return B.select(b < a, b, a)
    m = M.minimum(a, b)
    return B.select(B.isnan(a), b, B.select(B.isnan(b), a, m))


# ---------------------------------------------------------------------- log-sum and hypot


def _nan_any(a, b):
    return F64.nan_of(a, b) if a.dtype is T.float64 else _nan_of(a, b)


def _logaddexp(a, b):
    # PyTorch: a where both are the same infinity, else max + log1p(exp(-|a - b|))
    m = B.select(a < b, b, a)
    out = m + M.log1p(M.exp(-M.abs(a - b)))
    out = B.select(B.isnan(a) | B.isnan(b), _nan_any(a, b), out)  # one NaN rule on every device
    return B.select(B.eq(a, b) & B.eq(M.abs(a), B.const(INF, a.dtype)), a, out)


_INV_LN2 = float.fromhex("0x1.715476p+0")  # 1/ln 2 rounded to float32, PyTorch's inv_log_2
_INV_LN2_F64 = float.fromhex("0x1.71547652b82fep+0")  # ... and rounded to float64, its double one


def _logaddexp2(a, b):
    m = B.select(a < b, b, a)
    out = m + M.log1p(M.exp2(-M.abs(a - b))) * (_INV_LN2_F64 if a.dtype is T.float64 else _INV_LN2)
    # -|NaN| flips the NaN's sign, and which of two NaN operands an add returns is not fixed by
    # SPIR-V: one NaN rule on every device (found by the Vulkan parity test)
    out = B.select(B.isnan(a) | B.isnan(b), _nan_any(a, b), out)
    return B.select(B.eq(a, b) & B.eq(M.abs(a), B.const(INF, a.dtype)), a, out)


def _xlogy(x, y):
    out = B.select(B.eq(x, 0.0), B.const(0.0, x.dtype), x * M.log(y))
    return B.select(B.isnan(y), y, out)


def _hypot(x, y):
    return F64.hypot(x, y) if x.dtype is T.float64 else hypot_f32(x, y)


def hypot_f32(x, y):
    """sqrt(x² + y²) within 1 ulp without overflow or underflow.

    Both are scaled by 2^-k (k from the larger one's exponent, so the larger lies in [1, 4)),
    the sum of squares is formed as a double-float (Dekker products, exact sums), its square
    root is corrected by one Newton step in double-float and scaled back by 2^k.
    """
    a, b = M.abs(x), M.abs(y)
    big = B.select(a < b, b, a)
    small = B.select(a < b, a, b)
    e = B.bitcast(to_bits(big) >> 23, I32)
    k = B.select(e < 1, B.const(-126, I32), B.select(e > 253, B.const(126, I32), e - 127))
    down = _pow2_any(-k)
    bs, ss = big * down, small * down
    p1, e1 = dd.two_prod(bs, bs)
    p2, e2 = dd.two_prod(ss, ss)
    s_hi, s_lo = dd.two_sum(p1, p2)
    h, l = dd.fast_two_sum(s_hi, s_lo + (e1 + e2))
    r = M.sqrt(h)
    r2, r2e = dd.two_prod(r, r)
    residual = ((h - r2) - r2e) + l
    safe_r = B.select(B.eq(r, 0.0), f32(1.0), r)
    out = (r + M.div(residual * 0.5, safe_r)) * _pow2_any(k)
    out = B.select(B.eq(big, 0.0), f32(0.0), out)
    out = B.select(B.isnan(x) | B.isnan(y), _nan_of(x, y), out)
    return B.select(B.eq(a, f32(INF)) | B.eq(b, f32(INF)), f32(INF), out)


# ---------------------------------------------------------------------- bit operations


def _bit(op):
    return lambda a, b: B.emit(op, a, b)


def _shift_left(a, b):
    # PyTorch: 0 for a count below 0 or at least the width
    bits = B.const(a.dtype.bits, a.dtype)
    zero = B.const(0, a.dtype)
    out = a << B.select((b < zero) | (b >= bits), zero, b)
    return B.select((b < zero) | (b >= bits), zero, out)


def _shift_right(a, b):
    # PyTorch: a count below 0 or at least the width shifts by width - 1 (the sign fills)
    top = B.const(a.dtype.bits - 1, a.dtype)
    zero = B.const(0, a.dtype)
    return a >> B.select((b < zero) | (b > top), top, b)


def _truth(a):
    if a.dtype is T.bool_:
        return a
    return B.ne(a, B.const(0, a.dtype))


def _logical(op):
    return lambda a, b: B.emit(op, _truth(a), _truth(b))


# ---------------------------------------------------------------------- activations


def _leaky_relu(x, slope):
    return B.select(x > 0.0, x, x * slope)


def _elu(x, negcoef, scale, input_scale):
    # PyTorch: x <= 0 ? expm1(x·input_scale)·negcoef : x·scale, negcoef = alpha·scale in float32
    return B.select(x > 0.0, x * scale, M.expm1(x * input_scale) * negcoef)


def _hardtanh(x, lo, hi):
    return M.clamp(x, lo, hi)


def _hardsigmoid(x):
    zero, six = B.const(0.0, x.dtype), B.const(6.0, x.dtype)  # float32, or float64
    return M.div(M.clamp(x + 3.0, zero, six), six)


def _hardswish(x):
    zero, six = B.const(0.0, x.dtype), B.const(6.0, x.dtype)
    return M.div(x * M.clamp(x + 3.0, zero, six), six)


def _silu(x):
    if x.dtype is T.float64:
        return M.silu64(x)  # double-double, within 1 ulp (mathlib/f64math.py)
    return M.silu(x)  # x times sigmoid's unrounded quotient, ≤ 2 ulp


def _mish(x):
    if x.dtype is T.float64:
        return M.mish64(x)  # double-double, within 1 ulp (mathlib/f64math.py)
    return M.mish(x)  # one exp of -|x|, ≤ 2 ulp


def _softsign(x):
    return M.div(x, 1.0 + M.abs(x))


def _logsigmoid(x):
    if x.dtype is T.float64:
        # -softplus(-x) within 1 ulp; a zero is +0, as PyTorch (a select: lavapipe folds 0.0 - v to -v)
        s = M.softplus(-x, 1.0, float("inf"))
        return B.select(B.eq(s, 0.0), B.const(0.0, x.dtype), -s)
    # PyTorch: min(x, 0) - log1p(exp(-|x|))
    return B.select(x < 0.0, x, f32(0.0)) - M.log1p(M.exp(-M.abs(x)))


def _threshold(x, th, value):
    return B.select(x <= th, value, x)


def _hardshrink(x, lambd):
    return B.select((x >= -lambd) & (x <= lambd), B.const(0.0, x.dtype), x)


def _softshrink(x, lambd):
    # The zero is +0.0, as PyTorch's vectorized path gives (its scalar tail computes x·0, -0.0 for x < 0).
    return B.select(
        x > lambd, x - lambd, B.select(x < -lambd, x + lambd, B.select(B.isnan(x), x, B.const(0.0, x.dtype)))
    )


def _tanhshrink(x):
    return x - M.tanh(x)


def _nan_to_num(x, nan, posinf, neginf):
    out = B.select(B.eq(x, B.const(INF, x.dtype)), posinf, B.select(B.eq(x, B.const(-INF, x.dtype)), neginf, x))
    return B.select(B.isnan(x), nan, out)


def _lerp(a, b, w):
    # PyTorch: a + w·(b - a) for |w| < 0.5, else b - (b - a)·(1 - w)
    diff = b - a
    return B.select(M.abs(w) < 0.5, a + w * diff, b - diff * (1.0 - w))


# ---------------------------------------------------------------------- gradients


def _grad_copysign(c):
    a, b = c.inputs
    F = c.F
    ratio = F.where(a == 0, 0.0, c.output / F.where(a == 0, 1.0, a))
    return c.g * ratio, (F.zeros_like(c.g) if c.needs[1] else None)


def _grad_remainder(c):
    a, b = c.inputs
    db = None
    if c.needs[1]:
        db = -c.g * c.F.floor_divide(a, b)
    return c.g, db


def _grad_fmod(c):
    a, b = c.inputs
    db = None
    if c.needs[1]:
        db = -c.g * c.F.div(a, b, rounding_mode="trunc")
    return c.g, db


def _grad_logaddexp(c):
    # PyTorch's g / (1 + exp(other - input)), not g·exp(input - output): where the output rounds to the
    # larger operand (huge equal operands) the latter gives each side all of g, not half
    a, b = c.inputs
    d = b - a
    return c.g / (1 + d.exp()), c.g / (1 + (-d).exp())


def _grad_logaddexp2(c):
    # PyTorch's g / (1 + 2^(other - input)), as logaddexp's
    a, b = c.inputs
    ln2 = 0.6931471805599453
    d = (b - a) * ln2
    return c.g / (1 + d.exp()), c.g / (1 + (-d).exp())


def _grad_xlogy(c):
    x, y = c.inputs
    F = c.F
    dx = dy = None
    if c.needs[0]:
        # ``other`` may be a Python number (``x.xlogy(2.5)``): log needs a tensor operand
        dx = F.where((x == 0) & (y <= 0), 0.0, c.g * F.log(as_tensor(c, y)))
    if c.needs[1]:
        dy = c.g * x / y
    return dx, dy


def _grad_hypot(c):
    a, b = c.inputs
    return c.g * a / c.output, c.g * b / c.output


def _grad_fmax(c):
    a, b = c.inputs
    F = c.F
    take_a = (a >= b) | F.isnan(as_tensor(c, b))
    return F.where(take_a, c.g, 0.0), F.where(take_a, 0.0, c.g)


def _grad_fmin(c):
    a, b = c.inputs
    F = c.F
    take_a = (a <= b) | F.isnan(as_tensor(c, b))
    return F.where(take_a, c.g, 0.0), F.where(take_a, 0.0, c.g)


def _grad_lerp(c):
    a, b, w = c.inputs
    F = c.F
    da = db = dw = None
    if c.needs[0]:
        da = c.g * (1 - w)
    if c.needs[1]:
        db = c.g * w
    if len(c.needs) > 2 and c.needs[2]:
        dw = c.g * (F.sub(b, a))
    return da, db, dw


def _grad_leaky_relu(c):
    x, slope = c.inputs[0], c.inputs[1]
    return c.F.where(x > 0, c.g, c.g * slope), None


def _grad_elu(c):
    x, negcoef, scale, input_scale = c.inputs
    neg = c.g * (input_scale * negcoef) * (x * input_scale).exp()
    # PyTorch's test is x <= 0 for the exponential side: a NaN input takes the linear one
    return c.F.where(x <= 0, neg, c.g * scale), None, None, None


def _grad_hardtanh(c):
    x, lo, hi = c.inputs
    # PyTorch zeroes the gradient where x <= lo or x >= hi: a NaN input passes the gradient on
    return c.F.where((x <= lo) | (x >= hi), 0.0, c.g), None, None


def _grad_hardsigmoid(c):
    (x,) = c.inputs
    return (c.F.where((x > -3.0) & (x < 3.0), c.g / 6.0, 0.0),)


def _grad_hardswish(c):
    (x,) = c.inputs
    F = c.F
    # PyTorch's hardswish_backward: the middle piece is open at both ends (gradient 0 at -3, 1 at 3)
    return (F.where(x <= -3.0, 0.0, F.where(x < 3.0, c.g * (x / 3.0 + 0.5), c.g)),)


def _grad_silu(c):
    (x,) = c.inputs
    s = x.sigmoid()
    return (c.g * (s * (1 + x * (1 - s))),)


def _grad_mish(c):
    (x,) = c.inputs
    F = c.F
    t = F.nn.functional.softplus(x).tanh()
    return (c.g * (t + x * x.sigmoid() * (1 - t * t)),)


def _grad_softsign(c):
    # PyTorch differentiates its formula x / d, d = 1 + |x|, step by step: g/d - g·x/d²·sign(x), which is
    # g/d² for finite x and NaN at ±inf (0 - inf/inf)
    (x,) = c.inputs
    d = 1 + x.abs()
    return (c.g / d - c.g * x / (d * d) * x.sign(),)


def _grad_logsigmoid(c):
    (x,) = c.inputs
    return (c.g * (-x).sigmoid(),)


def _grad_threshold(c):
    x, th, _ = c.inputs
    return c.F.where(x <= th, 0.0, c.g), None, None


def _grad_shrink(c):
    x, lambd = c.inputs
    return c.F.where((x >= -lambd) & (x <= lambd), 0.0, c.g), None


def _grad_tanhshrink(c):
    (x,) = c.inputs
    t = x.tanh()
    return (c.g * (t * t),)


def _grad_nan_to_num(c):
    x = c.inputs[0]
    return (c.F.where(x.isfinite(), c.g, 0.0), None, None, None)


def _grad_round_decimals(c):
    return c.F.zeros_like(c.g), None


# ---------------------------------------------------------------------- the registry

_NAN = "NaN in any input gives NaN."
_ROUNDING = "Integers pass through unchanged. ±0, ±inf and NaN are returned as they are."


# The public names of the plain ops below (vkml.<name>(input[, other]) records the op, with nothing to check
# first): vkml.<name>, Tensor.<name> and, unless inplace=False, Tensor.<name>_ (vkml/frontend/public.py).
_PUBLIC = Public()
_FUNCTION_AND_METHOD = Public(inplace=False)


def _op(name, signature, summary, body, **kw):
    register(OpDef(name, "elementwise", signature, summary, body=body, **kw))


for _name, _prim, _what, _through, _aliases in (
    ("floor", B.floor, "toward -inf", (), ()),
    ("ceil", B.ceil, "toward +inf", (), ()),
    ("trunc", B.trunc, "toward zero", ("vkml.fix(input)", "Tensor.fix()"), ("fix",)),
):
    _op(
        _name,
        f"{_name}(input)",
        f"Round {_what} to an integral value.",
        _rounding(_prim),
        special=_ROUNDING + " The sign of a zero result is the input's (ceil(-0.5) = -0.0).",
        grad=_zeros_grad,
        reached_through=_through,
        public=Public(aliases=_aliases),
    )
_op(
    "round",
    "round(input, *, decimals=0)",
    "Round half to even (decimals=0), as torch.round.",
    _rounding(B.round_even),
    special=_ROUNDING + " round(-0.5) = -0.0.",
    grad=_zeros_grad,
)
_op(
    "round_decimals",
    "round_decimals(input, scale)",
    "round(input, decimals=d) for d > 0: round_even(x·10^d) / 10^d in float32 (float64 for float64), as PyTorch.",
    _round_decimals,
    dtypes=FLOAT_DTYPES,
    precision="exact as PyTorch's formula: the product and the quotient are each correctly rounded",
    special="NaN gives NaN; a product that overflows gives inf/10^d = inf (as PyTorch).",
    torch_name="round",
    grad=_grad_round_decimals,
    reached_through=("vkml.round(input, decimals=d) for d > 0", "Tensor.round(decimals=d)"),
)
_op(
    "round_neg_decimals",
    "round_neg_decimals(input, scale)",
    "round(input, decimals=d) for d < 0: round_even(x / 10^-d) · 10^-d in float32 (float64 for float64), as PyTorch.",
    _round_neg_decimals,
    dtypes=FLOAT_DTYPES,
    precision="exact as PyTorch's formula: the quotient and the product are each correctly rounded",
    special="NaN gives NaN.",
    torch_name="round",
    grad=_grad_round_decimals,
    reached_through=("vkml.round(input, decimals=d) for d < 0", "Tensor.round(decimals=d)"),
)
_op(
    "frac",
    "frac(input)",
    "input - trunc(input), with the input's sign.",
    lambda a: a - B.trunc(a),
    dtypes=FLOAT_DTYPES,
    special="frac(±inf) = NaN (inf - inf); frac(-0.0) = +0.0 and frac(-2.5) = -0.5, as PyTorch's x - trunc(x).",
    grad=lambda c: (c.g,),
)
_op(
    "sgn",
    "sgn(input)",
    "sign(input) for real tensors (complex tensors do not exist in vkml).",
    _sgn,
    special="As `sign`: sgn(±0.0) = +0.0.",
    divergence="sgn(NaN) is NaN (as vkml.sign); PyTorch returns 0.0.",
    grad=_zeros_grad,
    public=_PUBLIC,
)
_op(
    "signbit",
    "signbit(input)",
    "True where the sign bit is set (-0.0 included).",
    _signbit,
    dtypes=ALL_DTYPES,
    result="bool",
    special="signbit(-0.0) is True; a NaN's sign bit is read as it is on the CPU.",
    divergence="The sign of a NaN is not kept on every device (NVIDIA's driver returns its canonical NaN, sign "
    "clear, for a float16 NaN), so signbit of a NaN may differ between devices; PyTorch reads the bit.",
    reads_nan_sign=True,
    public=_FUNCTION_AND_METHOD,
)
_op(
    "copysign",
    "copysign(input, other)",
    "|input| with the sign bit of other.",
    _copysign,
    result="float",
    special="The sign bit of other decides, also for -0.0; a NaN input keeps its payload on the CPU.",
    divergence="A NaN's sign is not kept on every device (see signbit), so copysign with a NaN `other` "
    "may give either sign there.",
    grad=_grad_copysign,
    reads_nan_sign=True,
    public=Public(numbers="other"),
)
_op(
    "square",
    "square(input)",
    "input * input.",
    lambda a: a * a,
    special="square(NaN) = NaN; integers wrap.",
    grad=lambda c: (c.g * (2 * c.inputs[0]),),
    public=_PUBLIC,
)
_op(
    "reciprocal",
    "reciprocal(input)",
    "1 / input; integer inputs give float32.",
    lambda a: M.div(B.const(1.0, a.dtype), a),
    result="float",
    precision="correctly rounded (mathlib.div)",
    special="reciprocal(±0) = ±inf, reciprocal(±inf) = ±0, NaN gives NaN.",
    grad=lambda c: (-c.g * (c.output * c.output),),
    public=_PUBLIC,
)
_op(
    "fmod",
    "fmod(input, other)",
    "Remainder of truncated division, with the sign of input (C's fmod).",
    _fmod,
    precision="exact (the IEEE 754 remainder of truncated division is representable; computed by long division)",
    special="fmod(x, ±0), fmod(±inf, y) and NaN give NaN; fmod(x, ±inf) = x for finite x; a zero result "
    "has the sign of x.",
    divergence=_TORCH_FMOD + _INT_DIV_ZERO,
    grad=_grad_fmod,
)
_op(
    "remainder",
    "remainder(input, other)",
    "Python's modulus: fmod(input, other), plus other where the signs differ (as PyTorch).",
    _remainder,
    precision="exact fmod, then at most one correctly rounded addition (PyTorch's formula)",
    special="remainder(x, ±0) and NaN give NaN; remainder(-1, inf) = inf and remainder(1, -inf) = -inf "
    "(PyTorch's formula); remainder(-0.0, y) = -0.0.",
    divergence=_TORCH_FMOD
    + _INT_DIV_ZERO
    + " With a Python number as input (`3 % x`) the gradient with respect to other is PyTorch's Tensor rule "
    "(-g·floor(input / other)); PyTorch's Scalar-first overload has no derivative: its backward raises.",
    grad=_grad_remainder,
    operator="a % b",
)
_op(
    "floor_divide",
    "floor_divide(input, other)",
    "floor(input / other) as PyTorch computes it (Python's float floor division); integers floor.",
    _floor_divide,
    precision="PyTorch's div_floor_floating with exact fmod and correctly rounded division",
    special="x / 0 gives ±inf or NaN (the true quotient); a zero result takes the quotient's sign "
    "(floor_divide(-0.0, 3) = -0.0); NaN gives NaN.",
    divergence=_TORCH_FMOD
    + _INT_DIV_ZERO
    + " float16 is computed in float32 and rounded once, as PyTorch's scalar path; its vectorized path rounds "
    "its steps to float16, so floor_divide(65504, -7.25) is -9040 here (the floor, -9036, rounded to even) and "
    "-9032 there. The gradient is zero, as that of PyTorch's `div(rounding_mode='floor')` (the same op here); "
    "PyTorch's `floor_divide` and `//` have no derivative: their backward raises.",
    grad=_zeros_grad,
    operator="a // b",
    reached_through=("vkml.div(input, other, rounding_mode='floor')",),
)
_op(
    "div_trunc",
    "div_trunc(input, other)",
    "div(input, other, rounding_mode='trunc'): the quotient rounded toward zero.",
    _div_trunc,
    precision="trunc of the correctly rounded quotient (PyTorch's formula)",
    special="x / 0 gives ±inf or NaN; NaN gives NaN.",
    divergence=_INT_DIV_ZERO,
    torch_name="div",
    grad=_zeros_grad,
    reached_through=("vkml.div(input, other, rounding_mode='trunc')",),
)
for _name, _fn, _what in (
    ("isnan", _isnan, "True where input is NaN."),
    ("isinf", _isinf, "True where input is +inf or -inf."),
    ("isposinf", _isposinf, "True where input is +inf."),
    ("isneginf", _isneginf, "True where input is -inf."),
    ("isfinite", _isfinite, "True where input is neither inf nor NaN."),
):
    _op(
        _name,
        f"{_name}(input)",
        _what,
        _fn,
        dtypes=ALL_DTYPES,
        result="bool",
        special="Integer and bool inputs are always finite.",
        public=_FUNCTION_AND_METHOD,
    )
_op(
    "isreal",
    "isreal(input)",
    "True everywhere: vkml has no complex tensors.",
    lambda a: B.const(True, T.bool_),
    dtypes=ALL_DTYPES,
    result="bool",
    special="True also for NaN and inf (they are real).",
    public=_FUNCTION_AND_METHOD,
)
_op(
    "fmax",
    "fmax(input, other)",
    "Maximum that ignores NaN: the other value where one side is NaN.",
    _fmax,
    dtypes=ALL_DTYPES,
    special="NaN only where both are NaN; fmax(+0.0, -0.0) = +0.0.",
    grad=_grad_fmax,
    public=Public(inplace=False, numbers="none"),  # PyTorch has no Tensor.fmax_
)
_op(
    "fmin",
    "fmin(input, other)",
    "Minimum that ignores NaN: the other value where one side is NaN.",
    _fmin,
    dtypes=ALL_DTYPES,
    special="NaN only where both are NaN; fmin(+0.0, -0.0) = -0.0.",
    grad=_grad_fmin,
    public=Public(inplace=False, numbers="none"),  # PyTorch has no Tensor.fmin_
)
_op(
    "logaddexp",
    "logaddexp(input, other)",
    "log(exp(input) + exp(other)) without overflow.",
    _logaddexp,
    dtypes=FLOAT_DTYPES,
    precision="≤ 4 ulp of max(|a|, |b|) (max + log1p(exp(-|a - b|)), exp and log1p ≤ 1 ulp each)",
    special="Equal infinities give that infinity; -inf with finite x gives x; NaN gives NaN.",
    grad=_grad_logaddexp,
    public=Public(inplace=False, numbers="none"),
)
_op(
    "logaddexp2",
    "logaddexp2(input, other)",
    "log2(2^input + 2^other) without overflow.",
    _logaddexp2,
    dtypes=FLOAT_DTYPES,
    precision="≤ 4 ulp of max(|a|, |b|) (max + log1p(exp2(-|a - b|))·(1/ln 2))",
    special="Equal infinities give that infinity; NaN gives NaN.",
    grad=_grad_logaddexp2,
    public=Public(inplace=False, numbers="none"),
)
_op(
    "xlogy",
    "xlogy(input, other)",
    "input * log(other), 0 where input is 0 (unless other is NaN).",
    _xlogy,
    result="float",
    precision="log ≤ 1 ulp, then one product",
    special="xlogy(0, y) = 0 for any y but NaN (also y = 0 and y = inf); xlogy(x, NaN) = NaN.",
    grad=_grad_xlogy,
    public=_PUBLIC,
)
_op(
    "hypot",
    "hypot(input, other)",
    "sqrt(input² + other²) without overflow or underflow.",
    _hypot,
    dtypes=FLOAT_DTYPES,
    precision="≤ 1 ulp (double-float sum of squares, corrected square root)",
    special="hypot(±inf, y) = inf even for NaN y (C99); otherwise NaN gives NaN.",
    grad=_grad_hypot,
    public=Public(numbers="none"),
)
_op(
    "nan_to_num",
    "nan_to_num(input, nan, posinf, neginf)",
    "NaN, +inf and -inf replaced by the given values.",
    _nan_to_num,
    dtypes=FLOAT_DTYPES,
    special="The defaults (vkml.nan_to_num) are 0, the dtype's largest and lowest finite value.",
    grad=_grad_nan_to_num,
)
_op(
    "lerp",
    "lerp(input, end, weight)",
    "input + weight·(end - input), PyTorch's two-sided formula.",
    _lerp,
    dtypes=FLOAT_DTYPES,
    precision="PyTorch's formula, each step correctly rounded (no fused multiply-add): within 2 ulp of "
    "4·max(|input|, |end|) for weights in [-1, 2] (the formula cancels near its zeros)",
    special="NaN in any input gives NaN; lerp(a, b, 1) = b exactly.",
    divergence="PyTorch's vectorized CPU path fuses the multiply-add, so results may differ by 1 ulp.",
    grad=_grad_lerp,
)
for _name, _prim, _sym in (("bitwise_and", "and", "&"), ("bitwise_or", "or", "|"), ("bitwise_xor", "xor", "^")):
    _op(
        _name,
        f"{_name}(input, other)",
        f"Bitwise input {_sym} other of integer or bool tensors (logical for bool).",
        _bit(_prim),
        dtypes=INT_DTYPES + (T.bool_,),
        special="Integers only: float tensors are PyTorch's error.",
        operator=f"a {_sym} b",
    )
_op(
    "bitwise_not",
    "bitwise_not(input)",
    "Bitwise not of an integer tensor; logical not of a bool tensor.",
    lambda a: ~a,
    dtypes=INT_DTYPES + (T.bool_,),
    operator="~a",
)
_op(
    "bitwise_left_shift",
    "bitwise_left_shift(input, other)",
    "input << other on integer tensors.",
    _shift_left,
    dtypes=INT_DTYPES,
    special="A count below 0 or at least the bit width gives 0 (as PyTorch); bits shifted out are lost.",
    operator="a << b",
)
_op(
    "bitwise_right_shift",
    "bitwise_right_shift(input, other)",
    "input >> other on integer tensors (arithmetic: the sign fills).",
    _shift_right,
    dtypes=INT_DTYPES,
    special="A count below 0 or at least the bit width shifts by width - 1 (0 or -1, as PyTorch).",
    operator="a >> b",
)
_op(
    "logical_xor",
    "logical_xor(input, other)",
    "Logical xor: nonzero values are True; the result is bool.",
    _logical("xor"),
    dtypes=ALL_DTYPES,
    result="bool",
    special="NaN is nonzero, so True.",
    divergence=LOGICAL_INPLACE_GRAD,
    public=Public(numbers="none"),
)

# ---------------------------------------------------------------------- activations (vkml.nn.functional)

_ACT = dict(dtypes=FLOAT_DTYPES)
_op(
    "silu",
    "silu(input)",
    "x / (1 + exp(-x)) (also called swish).",
    _silu,
    precision="≤ 2 ulp (see mathlib.silu)",
    special="silu(-inf) = NaN (-inf / inf, as PyTorch), silu(inf) = inf, NaN gives NaN.",
    torch_name="nn.functional.silu",
    grad=opmath(_grad_silu),
    **_ACT,
)
_op(
    "mish",
    "mish(input)",
    "x · tanh(softplus(x)).",
    _mish,
    precision="≤ 2 ulp (see mathlib.mish)",
    special="mish(-inf) = NaN (-inf · 0, as PyTorch), mish(inf) = inf.",
    torch_name="nn.functional.mish",
    grad=opmath(_grad_mish),
    **_ACT,
)
_op(
    "leaky_relu",
    "leaky_relu(input, negative_slope)",
    "x for x > 0, else x · negative_slope.",
    _leaky_relu,
    special="NaN gives NaN; leaky_relu(-0.0) = -0.0 · slope.",
    torch_name="nn.functional.leaky_relu",
    grad=_grad_leaky_relu,
    **_ACT,
)
_op(
    "elu",
    "elu(input, negcoef, scale, input_scale)",
    "x·scale for x > 0, else expm1(x·input_scale)·negcoef, negcoef = alpha·scale (elu, selu and celu).",
    _elu,
    precision="expm1 ≤ 1 ulp, then products each correctly rounded",
    special="elu(-inf) = -negcoef; NaN gives NaN.",
    torch_name="nn.functional.elu",
    grad=opmath(_grad_elu),
    **_ACT,
    reached_through=(
        "vkml.nn.functional.elu(input, alpha=1.0, inplace=False)",
        "vkml.nn.functional.selu(input, inplace=False)",
        "vkml.nn.functional.celu(input, alpha=1.0, inplace=False)",
        "vkml.nn.ELU, vkml.nn.SELU, vkml.nn.CELU",
    ),
)
_op(
    "hardtanh",
    "hardtanh(input, min_val, max_val)",
    "Clamp into [min_val, max_val].",
    _hardtanh,
    special="NaN gives NaN (as clamp).",
    torch_name="nn.functional.hardtanh",
    grad=_grad_hardtanh,
    **_ACT,
    reached_through=("vkml.nn.functional.relu6(input, inplace=False)", "vkml.nn.Hardtanh, vkml.nn.ReLU6"),
)
_op(
    "hardsigmoid",
    "hardsigmoid(input)",
    "clamp(x + 3, 0, 6) / 6.",
    _hardsigmoid,
    precision="one rounded sum and one correctly rounded division",
    special="NaN gives NaN.",
    torch_name="nn.functional.hardsigmoid",
    grad=opmath(_grad_hardsigmoid),
    **_ACT,
)
_op(
    "hardswish",
    "hardswish(input)",
    "x · clamp(x + 3, 0, 6) / 6.",
    _hardswish,
    precision="a rounded sum, a product and a correctly rounded division",
    special="NaN gives NaN; hardswish(-inf) = NaN (-inf · 0).",
    torch_name="nn.functional.hardswish",
    grad=opmath(_grad_hardswish),
    **_ACT,
)
_op(
    "softsign",
    "softsign(input)",
    "x / (1 + |x|).",
    _softsign,
    precision="one rounded sum and one correctly rounded division",
    special="softsign(±inf) = NaN (inf / inf, as PyTorch's formula); NaN gives NaN.",
    torch_name="nn.functional.softsign",
    grad=_grad_softsign,
    **_ACT,
)
_op(
    "logsigmoid",
    "logsigmoid(input)",
    "log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)).",
    _logsigmoid,
    precision="exp and log1p ≤ 1 ulp each: ≤ 3 ulp",
    special="logsigmoid(-inf) = -inf, logsigmoid(inf) = 0.0; NaN gives NaN.",
    torch_name="nn.functional.logsigmoid",
    grad=opmath(_grad_logsigmoid),
    **_ACT,
)
_op(
    "threshold",
    "threshold(input, threshold, value)",
    "x where x > threshold, else value.",
    _threshold,
    special="NaN input stays NaN (NaN <= threshold is False), as PyTorch.",
    torch_name="nn.functional.threshold",
    grad=_grad_threshold,
    **_ACT,
)
_op(
    "hardshrink",
    "hardshrink(input, lambd)",
    "x where |x| > lambd, else 0.",
    _hardshrink,
    special="NaN gives NaN.",
    torch_name="nn.functional.hardshrink",
    grad=_grad_shrink,
    **_ACT,
)
_op(
    "softshrink",
    "softshrink(input, lambd)",
    "x - lambd above lambd, x + lambd below -lambd, else 0.",
    _softshrink,
    special="NaN gives NaN; the zero between -lambd and lambd is +0.0.",
    divergence="PyTorch's scalar tail path (the last len % 8 elements) computes x·0 there: -0.0 for negative x.",
    torch_name="nn.functional.softshrink",
    grad=_grad_shrink,
    **_ACT,
)
_op(
    "tanhshrink",
    "tanhshrink(input)",
    "x - tanh(x).",
    _tanhshrink,
    precision="tanh ≤ 2 ulp, then one difference (large relative error near 0, as PyTorch's formula)",
    special="tanhshrink(±inf) = ±inf; NaN gives NaN.",
    torch_name="nn.functional.tanhshrink",
    grad=_grad_tanhshrink,
    **_ACT,
)
