"""Elementwise operators: one IR body each, over scalars of the compute dtype.

Float bodies call the math library (``mathlib``), whose functions are decompositions into
exact primitives; integer and bool bodies use the primitives directly.
"""

from __future__ import annotations

import math

import numpy as np

from ..ir import builder as B
from ..ir import types as T
from . import mathlib as M
from .grads import HALF_NAMES, as_tensor, is_tensor, opmath
from .registry import ALL_DTYPES, FLOAT_DTYPES, NUMERIC_DTYPES, OpDef, Public, register


def _float(v) -> bool:
    return v.dtype.is_float


def _abs(a):
    return M.abs(a) if _float(a) else B.select(a < 0, -a, a)


def _maximum(a, b):
    if a.dtype is T.bool_:
        return a | b
    if _float(a):
        return M.maximum(a, b)
    return B.select(a < b, b, a)


def _minimum(a, b):
    if a.dtype is T.bool_:
        return a & b
    if _float(a):
        return M.minimum(a, b)
    return B.select(b < a, b, a)


def _clamp(x, lo, hi):
    if _float(x):
        return M.clamp(x, lo, hi)
    return B.select(hi < lo, hi, B.select(x < lo, lo, B.select(hi < x, hi, x)))


def _clamp_min(x, lo):
    if _float(x):
        return M.clamp_min(x, lo)
    return B.select(x < lo, lo, x)


def _clamp_max(x, hi):
    if _float(x):
        return M.clamp_max(x, hi)
    return B.select(hi < x, hi, x)


def _sign(a):
    if _float(a):
        return M.sign(a)
    one, zero = B.const(1, a.dtype), B.const(0, a.dtype)
    return B.select(a > 0, one, B.select(a < 0, -one, zero))


def _relu(a):
    if _float(a):
        return M.relu(a)
    return B.select(a < 0, 0, a)


def _pow(a, b):
    if _float(a):
        return M.pow(a, b)
    return _int_pow(a, b)


def _int_pow(a, b):
    # square-and-multiply over the exponent's 64 (or 32) bits; negative exponents: 1/a^|b| truncated (0 unless |a| == 1)
    bits = a.dtype.bits
    one = B.const(1, a.dtype)

    def step(i, acc, base, e):
        odd = B.eq(e & one, one)
        return B.select(odd, acc * base, acc), base * base, e >> 1

    acc, _, _ = B.loop(0, bits, 1, (one, a, b), step)
    neg = b < 0
    inv = B.select(
        B.eq(a, one),
        one,
        B.select(B.eq(a, B.const(-1, a.dtype)), B.select(B.eq(b & one, one), -one, one), B.const(0, a.dtype)),
    )
    return B.select(neg, inv, acc)


def _cmp(op):
    def body(a, b):
        return B.emit(op, a, b)

    return body


def _truth(a):
    return a if a.dtype is T.bool_ else B.ne(a, B.const(0, a.dtype))  # NaN is nonzero: True


def _logical(op):
    return lambda a, b: B.emit(op, _truth(a), _truth(b))


# ---------------------------------------------------------------------- gradients (PyTorch's formulas)
# Each rule gets a GradContext (vkml/ops/grads.py): c.g is the output's gradient, c.inputs the
# operands, c.F the vkml package. The driver sums over broadcast dims and casts to the operand's dtype.


def _grad_mul(c):
    # Each gradient reads only the other operand, and only when wanted: as PyTorch saves, so writing
    # x in place after ``x * 2`` leaves that product differentiable.
    a, b = c.inputs
    return (c.g * b if c.needs[0] else None), (c.g * a if c.needs[1] else None)


def _grad_div(c):
    a, b = c.inputs
    return (c.g / b if c.needs[0] else None), (-c.g * ((a / b) / b) if c.needs[1] else None)


def _grad_pow(c):
    a, b = c.inputs
    g, F = c.g, c.F
    da = db = None
    if c.needs[0]:
        if is_tensor(b):
            da = F.where(b == 0, 0.0, g * (b * a ** (b - 1)))
        else:
            da = F.zeros_like(g) if b == 0 else g * (b * a ** (b - 1))
    if c.needs[1]:
        if is_tensor(a):
            db = F.where((a == 0) & (b >= 0), 0.0, g * (c.output * a.log()))
        elif a == 0:
            db = F.where(b >= 0, 0.0, g * (c.output * -math.inf))
        else:  # a number's log as PyTorch's Scalar.log(): in double, not rounded to the tensor's dtype
            db = g * (c.output * (math.log(a) if a > 0 else math.nan))
    return da, db


def _grad_maximum(c):
    # A tie sends half to each side; a NaN sends all to both (PyTorch's rule).
    a, b = c.inputs
    g, F = c.g, c.F
    shared = F.where(as_tensor(c, a) == b, g / 2, g)
    da = F.where(as_tensor(c, a) < b, 0.0, shared) if c.needs[0] else None
    return da, (F.where(as_tensor(c, a) > b, 0.0, shared) if c.needs[1] else None)


def _grad_minimum(c):
    a, b = c.inputs
    g, F = c.g, c.F
    shared = F.where(as_tensor(c, a) == b, g / 2, g)
    da = F.where(as_tensor(c, a) > b, 0.0, shared) if c.needs[0] else None
    return da, (F.where(as_tensor(c, a) < b, 0.0, shared) if c.needs[1] else None)


def _grad_clamp(c):
    # PyTorch's clamp_backward_min_max: x inside [lo, hi] inclusive; lo only while lo < hi, hi where
    # x > hi or lo > hi. So x < lo == hi gives no gradient to anyone, nor does a NaN in any operand.
    x, lo, hi = c.inputs
    g, F = c.g, c.F
    lo_t = as_tensor(c, lo)
    dx = dlo = dhi = None  # only the wanted ones: a bound given as a number wants none
    if c.needs[0]:
        dx = F.where((x >= lo) & (x <= hi), g, 0.0)
    if c.needs[1]:
        dlo = F.where((x < lo) & (lo_t < hi), g, 0.0)
    if c.needs[2]:
        dhi = F.where((x > hi) | (lo_t > hi), g, 0.0)
    return dx, dlo, dhi


def _grad_clamp_min(c):
    x, lo = c.inputs
    return (c.F.where(x >= lo, c.g, 0.0) if c.needs[0] else None), (c.F.where(x < lo, c.g, 0.0) if c.needs[1] else None)


def _grad_clamp_max(c):
    x, hi = c.inputs
    return (c.F.where(x <= hi, c.g, 0.0) if c.needs[0] else None), (c.F.where(x > hi, c.g, 0.0) if c.needs[1] else None)


def _grad_where(c):
    cond = c.inputs[0]  # each value's gradient only where wanted: ``where(m, x, 0.0)`` wants one
    return (
        None,
        (c.F.where(cond, c.g, 0.0) if c.needs[1] else None),
        (c.F.where(cond, 0.0, c.g) if c.needs[2] else None),
    )


def _grad_gelu(c):
    # d/dx x·Φ(x) = Φ(x) + x·φ(x); Φ(x) is read off the output as gelu(x) / x (1/2 at 0).
    if c.output.dtype.name in HALF_NAMES:
        return _grad_gelu_half(c)
    (x,) = c.inputs
    F = c.F
    cdf = F.where(x == 0, 0.5, c.output / F.where(x == 0, 1.0, x))
    pdf = (x * x * -0.5).exp() * _INV_SQRT_2PI
    return (c.g * (cdf + x * pdf),)


def _grad_sigmoid(c):
    # float16: op for op in the dtype, as PyTorch's sigmoid_backward kernel for Half
    return (c.g * (1 - c.output) * c.output,)


# PyTorch's sigmoid_backward kernel for BFloat16 computes in float32 and rounds once
_grad_sigmoid_bf16 = opmath(_grad_sigmoid)


@opmath
def _grad_gelu_half(c):
    """PyTorch's float16/bfloat16 GeluBackward kernel: Φ(x) from erf (a half output is too coarse to read
    it off), in float32, rounded once."""
    (x,) = c.inputs
    cdf = 0.5 * (1.0 + (x * _SQRT1_2_F32).erf())
    pdf = _GELU_BETA_F32 * (x * x * -0.5).exp()
    return (c.g * (cdf + x * pdf),)


@opmath
def _grad_gelu_tanh_half(c):
    """PyTorch's float16/bfloat16 GeluBackward kernel (tanh form), its association, in float32."""
    (x,) = c.inputs
    x_sq = x * x
    t = (_TANH_BETA_F32 * (x + 0.044715 * (x_sq * x))).tanh()
    right_derivative = (0.5 * x) * (1 - t * t) * (_TANH_BETA_F32 * (1 + 3 * 0.044715 * x_sq))
    return (c.g * (0.5 * (1 + t) + right_derivative),)


def _grad_gelu_tanh(c):
    if c.output.dtype.name in HALF_NAMES:
        return _grad_gelu_tanh_half(c)
    (x,) = c.inputs
    beta, kappa = _SQRT_2_OVER_PI, 0.044715
    x_sq = x * x
    t = (beta * (x + kappa * (x_sq * x))).tanh()
    left_derivative = 0.5 * (1 + t)
    right_derivative = (0.5 * x) * (1 - t * t) * beta * (1 + 3 * kappa * x_sq)
    return (c.g * (left_derivative + right_derivative),)


def _grad_softplus(c):
    # The registered op has beta = 1, threshold = 20; vkml.dsl.softplus hands other ones in as attrs.
    (x,) = c.inputs
    beta, threshold = c.attrs.get("beta", 1), c.attrs.get("threshold", 20)
    z = x if beta == 1 else x * beta
    return (c.F.where(z > threshold, c.g, c.g * z.sigmoid()),)


_INV_SQRT_2PI = 0.3989422804014327
# PyTorch's half GeluBackward constants, float32 products of the double ones (M_2_SQRTPI, M_SQRT1_2, M_SQRT2)
_SQRT1_2_F32 = float(np.float32(0.7071067811865476))
_GELU_BETA_F32 = float(np.float32(1.1283791670955126) * np.float32(0.7071067811865476) * np.float32(0.5))
_TANH_BETA_F32 = float(np.float32(1.4142135623730951 * 1.1283791670955126 * 0.5))
_SQRT_2_OVER_PI = 0.7978845608028654


_NAN_PROPAGATES = "NaN in any input gives NaN."
_F16_SCALAR = (
    "A Python float in a float16 op keeps float32 precision (PyTorch's CPU rounds it to float16 first "
    "for add and sub, but not for mul and div); vkml does the same for all four."
)
_ALPHA = (
    " With ``alpha`` (not 1), ``alpha * other`` is rounded before the {}, where PyTorch's CPU and CUDA kernels "
    "fuse the two into one rounding: a float result can differ from PyTorch's in the last bit. A float16 or "
    "bfloat16 result is computed in float32 (alpha rounded to its dtype first) and rounded once, as PyTorch's "
    "kernels compute it."
)
_CMP_NAN = "Comparisons with NaN are False, except `ne`, which is True (IEEE 754, as PyTorch)."

register(
    OpDef(
        "add",
        "elementwise",
        "add(input, other, *, alpha=1)",
        "Sum of two tensors, broadcast.",
        dtypes=ALL_DTYPES,
        body=lambda a, b: (a | b) if a.dtype is T.bool_ else a + b,
        special=_NAN_PROPAGATES + " inf + -inf is NaN. Integers wrap.",
        divergence=_F16_SCALAR + _ALPHA.format("addition"),
        grad=lambda c: (c.g, c.g),
        operator="a + b",
        recompute=True,
    )
)
register(
    OpDef(
        "sub",
        "elementwise",
        "sub(input, other, *, alpha=1)",
        "Difference of two tensors, broadcast.",
        body=lambda a, b: a - b,
        special=_NAN_PROPAGATES + " inf - inf is NaN. Integers wrap.",
        divergence=_F16_SCALAR + _ALPHA.format("subtraction"),
        grad=lambda c: (c.g, -c.g),
        operator="a - b",
        recompute=True,
    )
)
register(
    OpDef(
        "mul",
        "elementwise",
        "mul(input, other)",
        "Product of two tensors, broadcast.",
        dtypes=ALL_DTYPES,
        body=lambda a, b: (a & b) if a.dtype is T.bool_ else a * b,
        special=_NAN_PROPAGATES + " 0 * inf is NaN. Integers wrap.",
        grad=_grad_mul,
        operator="a * b",
        recompute=True,
        public=Public(aliases=("multiply",)),
    )
)
register(
    OpDef(
        "div",
        "elementwise",
        "div(input, other)",
        "True division; integer inputs give float32.",
        result="float",
        body=lambda a, b: M.div(a, b),
        precision="correctly rounded (bit-equal to numpy float32)",
        special="x/0 is ±inf by the signs of x and 0; 0/0, inf/inf and NaN inputs give NaN. The operator "
        "`scalar / tensor` is `reciprocal(tensor) * scalar`, two roundings, as PyTorch's; `vkml.div(scalar, tensor)` "
        "divides once. A float16 or bfloat16 tensor's Python-number dividend is rounded to its dtype first, as "
        "PyTorch's CPU does (a divisor stays float32).",
        grad=_grad_div,
        operator="a / b",
        reached_through=("vkml.true_divide(input, other)", "Tensor.true_divide(other)"),
    )
)
register(
    OpDef(
        "neg",
        "elementwise",
        "neg(input)",
        "Negation.",
        body=lambda a: -a,
        special="Flips the sign bit: neg(0.0) = -0.0, NaN stays NaN.",
        grad=lambda c: (-c.g,),
        operator="-a",
        recompute=True,
        public=Public(aliases=("negative",)),
    )
)
register(
    OpDef(
        "abs",
        "elementwise",
        "abs(input)",
        "Absolute value.",
        body=_abs,
        special="abs(-0.0) = 0.0; abs(NaN) = NaN; abs(INT_MIN) = INT_MIN (wraps, as PyTorch).",
        grad=lambda c: (c.g * c.inputs[0].sign(),),
        operator="abs(a)",
        public=Public(aliases=("absolute",)),
    )
)
register(
    OpDef(
        "sign",
        "elementwise",
        "sign(input)",
        "-1, 0 or 1 by the sign of the input.",
        body=_sign,
        special="sign(±0.0) = ±0.0 is not kept: both give +0.0.",
        divergence="sign(NaN) is NaN (numpy's rule; PyTorch returns 0.0, pytorch#41245).",
        grad=lambda c: (c.F.zeros_like(c.g),),
        public=Public(),
    )
)
register(
    OpDef(
        "pow",
        "elementwise",
        "pow(input, exponent)",
        "input raised to exponent, broadcast.",
        body=_pow,
        precision="float: see mathlib.pow; integers exact (wrapping)",
        special="C99 special cases: pow(x, 0) = 1 even for NaN x, pow(1, y) = 1 even for NaN y, "
        "(-8)^(1/3) = NaN, 0^-1 = inf, (-0)^-1 = -inf. Integer negative exponents give 0 unless |x| = 1. "
        "A Python-number exponent takes PyTorch's routine where its kernel does: 2 is x*x; for float32 and "
        "float64, 3 is x*x*x and -2 is 1/(x*x); for those and bfloat16, 0.5 is sqrt (sqrt(-0.0) = -0.0), "
        "-0.5 is 1/sqrt(x) and -1 is 1/x; the gradient stays pow's.",
        grad=_grad_pow,
        operator="a ** b",
    )
)
register(
    OpDef(
        "maximum",
        "elementwise",
        "maximum(input, other)",
        "Elementwise maximum.",
        dtypes=ALL_DTYPES,
        body=_maximum,
        special="A NaN on either side gives NaN.",
        divergence="maximum(+0.0, -0.0) is +0.0 in either order (IEEE 754-2019); PyTorch's sign depends on its vector path.",
        grad=_grad_maximum,
        public=Public(inplace=False, numbers="none"),
    )
)
register(
    OpDef(
        "minimum",
        "elementwise",
        "minimum(input, other)",
        "Elementwise minimum.",
        dtypes=ALL_DTYPES,
        body=_minimum,
        special="A NaN on either side gives NaN.",
        divergence="minimum(+0.0, -0.0) is -0.0 in either order (IEEE 754-2019); PyTorch's sign depends on its vector path.",
        grad=_grad_minimum,
        public=Public(inplace=False, numbers="none"),
    )
)
register(
    OpDef(
        "clamp",
        "elementwise",
        "clamp(input, min=None, max=None)",
        "Clamp into [min, max].",
        body=_clamp,
        special="NaN input gives NaN; a NaN bound makes every output NaN; min > max gives max everywhere; "
        "clamp(-0.0, min=0.0) = -0.0 (as PyTorch).",
        grad=_grad_clamp,
    )
)
register(
    OpDef(
        "clamp_min",
        "elementwise",
        "clamp_min(input, min)",
        "max(input, min) with PyTorch's NaN rule.",
        body=_clamp_min,
        special="NaN input or NaN bound gives NaN.",
        grad=_grad_clamp_min,
        reached_through=("vkml.clamp(input, min=min)", "Tensor.clamp(min=min)"),
    )
)
register(
    OpDef(
        "clamp_max",
        "elementwise",
        "clamp_max(input, max)",
        "min(input, max) with PyTorch's NaN rule.",
        body=_clamp_max,
        special="NaN input or NaN bound gives NaN.",
        grad=_grad_clamp_max,
        reached_through=("vkml.clamp(input, max=max)", "Tensor.clamp(max=max)"),
    )
)
register(
    OpDef(
        "where",
        "elementwise",
        "where(condition, input, other)",
        "input where condition, else other.",
        dtypes=ALL_DTYPES,
        result="custom",
        body=lambda c, a, b: B.select(c, a, b),
        condition=True,
        special="A pure select: NaN in the unselected input does not matter.",
        grad=_grad_where,
    )
)
for _name, _op, _sym, _aliases in (
    ("eq", "eq", "==", ()),
    ("ne", "ne", "!=", ("not_equal",)),
    ("lt", "lt", "<", ("less",)),
    ("le", "le", "<=", ("less_equal",)),
    ("gt", "gt", ">", ("greater",)),
    ("ge", "ge", ">=", ("greater_equal",)),
):
    register(
        OpDef(
            _name,
            "elementwise",
            f"{_name}(input, other)",
            f"input {_sym} other, as bool.",
            dtypes=ALL_DTYPES if _name in ("eq", "ne") else NUMERIC_DTYPES,
            result="bool",
            body=_cmp(_op),
            special=_CMP_NAN,
            operator=f"a {_sym} b",
            public=Public(aliases=_aliases, numbers="other"),
        )
    )
LOGICAL_INPLACE_GRAD = (
    "In place on a float tensor that requires grad (`x.logical_and_(y)`), PyTorch records nothing: the gradient "
    "passes through as if the op had not run. vkml gives x's history and `other` a zero gradient (the result is "
    "piecewise constant), as PyTorch's in-place comparisons (`x.eq_(y)`) do."
)
register(
    OpDef(
        "logical_and",
        "elementwise",
        "logical_and(input, other)",
        "Logical and: nonzero values are True; the result is bool.",
        dtypes=ALL_DTYPES,
        result="bool",
        body=_logical("and"),
        divergence=LOGICAL_INPLACE_GRAD,
        public=Public(numbers="none"),
    )
)
register(
    OpDef(
        "logical_or",
        "elementwise",
        "logical_or(input, other)",
        "Logical or: nonzero values are True; the result is bool.",
        dtypes=ALL_DTYPES,
        result="bool",
        body=_logical("or"),
        divergence=LOGICAL_INPLACE_GRAD,
        public=Public(numbers="none"),
    )
)
register(
    OpDef(
        "logical_not",
        "elementwise",
        "logical_not(input)",
        "Logical not: True where input is zero; the result is bool.",
        dtypes=ALL_DTYPES,
        result="bool",
        body=lambda a: ~_truth(a),
        public=Public(),
    )
)
register(
    OpDef(
        "relu",
        "elementwise",
        "relu(input)",
        "max(input, 0).",
        body=_relu,
        special="relu(NaN) = NaN, relu(-0.0) = -0.0 (as PyTorch CPU), relu(-inf) = 0.",
        grad=lambda c: (c.F.where(c.output <= 0, 0.0, c.g),),
        public=Public(),
    )
)


def _float_op(name, fn, summary, precision, special, divergence="", torch_name=None, grad=None, **kw):
    register(
        OpDef(
            name,
            "elementwise",
            f"{name}(input)",
            summary,
            dtypes=NUMERIC_DTYPES,
            result="float",
            body=fn,
            precision=precision,
            special=special,
            divergence=divergence,
            torch_name=torch_name,
            grad=grad,
            **kw,
        )
    )


_float_op(
    "exp",
    lambda a: M.exp(a),
    "e to the power input.",
    "≤ 1 ulp of the float64 result",
    "exp(-inf) = 0, exp(inf) = inf, overflow (x > 88.72) gives inf, NaN gives NaN.",
    grad=lambda c: (c.g * c.output,),
    public=Public(),
)
_float_op(
    "log",
    lambda a: M.log(a),
    "Natural logarithm.",
    "≤ 1 ulp of the float64 result",
    "log(x < 0) = NaN, log(±0) = -inf, log(inf) = inf, NaN gives NaN.",
    grad=lambda c: (c.g / c.inputs[0],),
    public=Public(),
)
_float_op(
    "sqrt",
    lambda a: M.sqrt(a),
    "Square root.",
    "correctly rounded (bit-equal to numpy float32)",
    "sqrt(-0.0) = -0.0, sqrt(x < 0) = NaN, sqrt(inf) = inf.",
    divergence="vkml's sqrt is correctly rounded; PyTorch's CPU build (AVX-512 path) is 1 ulp off on about "
    "0.7% of float32 inputs.",
    grad=lambda c: (c.g / (2 * c.output),),
    public=Public(),
)
_float_op(
    "rsqrt",
    lambda a: M.rsqrt(a),
    "1 / sqrt(input).",
    "see mathlib.rsqrt",
    "rsqrt(±0) = ±inf, rsqrt(x < 0) = NaN, rsqrt(inf) = 0.",
    grad=lambda c: (-0.5 * c.g * (c.output * c.output * c.output),),
    public=Public(),
)
_float_op(
    "tanh",
    lambda a: M.tanh(a),
    "Hyperbolic tangent.",
    "≤ 2 ulp away from 0 (see mathlib.tanh)",
    "tanh(±inf) = ±1, tanh(-0.0) = -0.0, NaN gives NaN.",
    grad=lambda c: (c.g * (1 - c.output * c.output),),
    public=Public(),
)
_float_op(
    "sigmoid",
    lambda a: M.sigmoid(a),
    "1 / (1 + exp(-input)).",
    "≤ 2 ulp (see mathlib.sigmoid)",
    "sigmoid(-inf) = 0, sigmoid(inf) = 1, never NaN for finite input.",
    grad=lambda c: _grad_sigmoid_bf16(c) if c.output.dtype.name == "bfloat16" else _grad_sigmoid(c),
    public=Public(),
)
_float_op(
    "gelu",
    lambda a: M.gelu(a),
    "x·Φ(x) with the exact erf form (vkml.nn.functional.gelu).",
    "≤ 2 ulp away from its zeros (see mathlib.gelu)",
    "gelu(NaN) = NaN.",
    divergence="gelu(-inf) = -0.0 and gelu(+inf) = +inf (the limits); PyTorch gives NaN for -inf "
    "and inf or NaN for +inf depending on its vector path (pytorch#185770).",
    torch_name="nn.functional.gelu",
    grad=_grad_gelu,
)
_float_op(
    "gelu_tanh",
    lambda a: M.gelu_tanh(a),
    "gelu with the tanh approximation (approximate='tanh').",
    "≤ 2 ulp away from its zeros (see mathlib.gelu_tanh)",
    "gelu_tanh(NaN) = NaN.",
    divergence="gelu_tanh(-inf) = -0.0 (the limit); PyTorch gives NaN.",
    grad=_grad_gelu_tanh,
    reached_through=("vkml.nn.functional.gelu(input, approximate='tanh')",),
    torch_call="torch.nn.functional.gelu(approximate='tanh')",
)
_float_op(
    "softplus",
    lambda a: M.softplus(a),
    "log(1 + exp(input)), linear above 20 (beta=1, threshold=20).",
    "≤ 2 ulp (see mathlib.softplus)",
    "softplus(-inf) = 0, softplus(inf) = inf.",
    torch_name="nn.functional.softplus",
    grad=_grad_softplus,
)


def _max_pool_step(running, tap):
    """The running window maximum after one more tap, by PyTorch's pooling rule: a tap replaces it
    when greater, or NaN (so the first maximum stays, and the last NaN)."""
    if running.dtype is T.bool_:
        return running | tap
    if _float(running):
        return B.select((tap > running) | B.isnan(tap), tap, running)
    return B.select(tap > running, tap, running)


def _grad_max_pool_step(c):
    running, tap = c.inputs
    take = (as_tensor(c, tap) > running) | (as_tensor(c, tap) != tap)
    return c.F.where(take, 0.0, c.g), c.F.where(take, c.g, 0.0)


register(
    OpDef(
        "max_pool_step",
        "elementwise",
        "max_pool_step(running, tap)",
        "One tap of a pooling window's maximum: tap where tap > running or tap is NaN, else running.",
        dtypes=ALL_DTYPES,
        body=_max_pool_step,
        special="A NaN tap replaces the running value; a NaN running value stays unless a later tap is NaN "
        "(the window's last NaN, PyTorch's rule). Ties keep the running value (the first maximum, its bits).",
        grad=_grad_max_pool_step,
        reached_through=("vkml.nn.functional.max_pool1d/2d/3d (without return_indices)",),
    )
)

CAST_DTYPES = (T.float32, T.float16, T.int32, T.int64, T.bool_)
assert FLOAT_DTYPES  # re-exported for callers that build casts
