"""Trigonometric, hyperbolic, error-function and logarithm ops (issue 17), each one IR body.

Every float body is a math-library routine (vkml/ops/mathlib/: trig, hyperbolic, erfs, explog,
special) written out of exact primitives, so the CPU and every Vulkan driver give the same bits.
Integer inputs give float32 results, as PyTorch's; float16 is computed in float32 and rounded once.
"""

from __future__ import annotations

import math

import numpy as np

from ..ir import types as T
from ..ir.builder import select
from . import mathlib as M
from .registry import NUMERIC_DTYPES, OpDef, Public, register

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_PI_OVER_2 = math.sqrt(math.pi) / 2.0
# PyTorch multiplies by these constants rounded to float32 (a wrapped double scalar in a float op).
DEG2RAD = float(np.float32(math.pi / 180.0))
RAD2DEG = float(np.float32(180.0 / math.pi))
# ... and float64 ones rounded to float64 (its double kernel's M_PI / 180 and 180 / M_PI)
DEG2RAD64, RAD2DEG64 = math.pi / 180.0, 180.0 / math.pi


def _by_constant(c32: float, c64: float):
    return lambda a: a * (c64 if a.dtype is T.float64 else c32)


_TRIG_NAN = "{0}(±inf) = NaN, NaN gives NaN."
_EARLY_OVERFLOW = (
    "PyTorch's vectorized float32 {0} (tensors of 16 or more elements) forms exp(|x|) first and overflows to "
    "inf for 88.72 < |x| <= 89.416; its scalar path and vkml give the finite result there."
)


_PUBLIC = Public()  # vkml.<name>, Tensor.<name>, Tensor.<name>_
_PUBLIC_DSL = Public(dsl=True)  # and vkml.dsl.<name>


def _unary(name, fn, summary, precision, special, grad, divergence="", torch_name=None, public=_PUBLIC, **kw):
    # vkml.<name>(input), Tensor.<name>() and Tensor.<name>_() are made from the OpDef (``public``)
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
            public=public,
            **kw,
        )
    )


# ---------------------------------------------------------------------- gradients (PyTorch's formulas)


def _grad_atan2(c):
    y, x = c.inputs
    # PyTorch's: the reciprocal taken as 0 where y² + x² is 0 (both zero, or both squares underflow)
    denom = y * y + x * x
    recip = c.F.where(denom == 0, 0.0, 1.0 / denom)
    dy = c.g * x * recip if c.needs[0] else None
    dx = c.g * -y * recip if c.needs[1] else None
    return dy, dx


def _grad_logit(c):
    x, lo, hi = c.inputs
    d = c.g / (x * (1 - x))
    return c.F.where((x < lo) | (x > hi), 0.0, d), None, None


def _grad_sinc(c):
    # PyTorch's order: g · (πx·cos(πx) - sin(πx)) / (x·x·π), 0 where that denominator is 0 (x = 0, or
    # x·x underflows)
    (x,) = c.inputs
    F = c.F
    px = x * math.pi
    denom = x * x * math.pi
    return (F.where(denom == 0, 0.0, c.g * (px * px.cos() - px.sin()) / denom),)


# ---------------------------------------------------------------------- trigonometric

_unary(
    "sin",
    lambda a: M.sin(a),
    "Sine (radians).",
    "≤ 1 ulp of the correctly rounded result over the whole float32 range (mathlib.sin)",
    _TRIG_NAN.format("sin") + " sin(-0.0) = -0.0.",
    lambda c: (c.g * c.inputs[0].cos(),),
    public=_PUBLIC_DSL,
)
_unary(
    "cos",
    lambda a: M.cos(a),
    "Cosine (radians).",
    "≤ 1 ulp of the correctly rounded result over the whole float32 range (mathlib.cos)",
    _TRIG_NAN.format("cos"),
    lambda c: (c.g * -c.inputs[0].sin(),),
    public=_PUBLIC_DSL,
)
_unary(
    "tan",
    lambda a: M.tan(a),
    "Tangent (radians).",
    "≤ 1 ulp of the correctly rounded result over the whole float32 range (mathlib.tan)",
    _TRIG_NAN.format("tan") + " tan(-0.0) = -0.0.",
    lambda c: (c.g * (1 + c.output * c.output),),
    public=_PUBLIC_DSL,
)
_unary(
    "asin",
    lambda a: M.asin(a),
    "Arcsine, in [-pi/2, pi/2].",
    "≤ 1 ulp of the correctly rounded result (mathlib.asin)",
    "asin(x) for |x| > 1 is NaN; asin(-0.0) = -0.0; NaN gives NaN.",
    lambda c: (c.g * (1 - c.inputs[0] * c.inputs[0]).rsqrt(),),
    public=Public(aliases=("arcsin",), dsl=True),
)
_unary(
    "acos",
    lambda a: M.acos(a),
    "Arccosine, in [0, pi].",
    "≤ 1 ulp of the correctly rounded result (mathlib.acos)",
    "acos(x) for |x| > 1 is NaN; NaN gives NaN.",
    lambda c: (-(c.g * (1 - c.inputs[0] * c.inputs[0]).rsqrt()),),
    public=Public(aliases=("arccos",), dsl=True),
)
_unary(
    "atan",
    lambda a: M.atan(a),
    "Arctangent, in [-pi/2, pi/2].",
    "≤ 1 ulp of the correctly rounded result (mathlib.atan)",
    "atan(±inf) = ±pi/2 (rounded to float32), atan(-0.0) = -0.0, NaN gives NaN.",
    lambda c: (c.g / (c.inputs[0] * c.inputs[0] + 1),),
    public=Public(aliases=("arctan",), dsl=True),
)
register(
    OpDef(
        "atan2",
        "elementwise",
        "atan2(input, other)",
        "The angle of the point (other, input) in (-pi, pi]: atan(input / other) in the right quadrant.",
        dtypes=NUMERIC_DTYPES,
        result="float",
        body=lambda y, x: M.atan2(y, x),
        precision="≤ 1 ulp of the correctly rounded result (mathlib.atan2)",
        special="C99's rules, as PyTorch: atan2(±0, +0) = ±0, atan2(±0, -0) = ±pi, atan2(±inf, ±inf) = ±pi/4 "
        "or ±3pi/4, atan2(±inf, finite) = ±pi/2; NaN in either operand gives NaN.",
        grad=_grad_atan2,
    )
)
_unary(
    "sinc",
    lambda a: M.sinc(a),
    "Normalized sinc: sin(pi x) / (pi x), 1 at 0.",
    "≤ 1 ulp of the correctly rounded result, near its zeros too (mathlib.sinc)",
    "sinc(±0) = 1, sinc(nonzero integer) = 0, sinc(±inf) = NaN, NaN gives NaN.",
    lambda c: _grad_sinc(c),
    divergence="PyTorch computes sin(pi·x) with pi·x rounded first: sinc of a nonzero integer n is about "
    "±2.8e-8/n there (sinc(1) = -2.78e-8) instead of 0, and large arguments lose their digits; vkml reduces "
    "x exactly, so vkml's result is the accurate one.",
    public=_PUBLIC_DSL,
)
_unary(
    "deg2rad",
    _by_constant(DEG2RAD, DEG2RAD64),
    "Degrees to radians: input · (pi / 180).",
    "one correctly rounded product by float32(pi/180): the bits of PyTorch",
    "NaN and ±inf pass through the product (deg2rad(±inf) = ±inf).",
    lambda c: (c.g * DEG2RAD,),
)
_unary(
    "rad2deg",
    _by_constant(RAD2DEG, RAD2DEG64),
    "Radians to degrees: input · (180 / pi).",
    "one correctly rounded product by float32(180/pi): the bits of PyTorch",
    "NaN and ±inf pass through the product; very large inputs overflow to ±inf.",
    lambda c: (c.g * RAD2DEG,),
)

# ---------------------------------------------------------------------- hyperbolic

_unary(
    "sinh",
    lambda a: M.sinh(a),
    "Hyperbolic sine.",
    "≤ 1 ulp of the correctly rounded result (mathlib.sinh)",
    "sinh(±inf) = ±inf, overflow to ±inf beyond ±89.416, sinh(-0.0) = -0.0, NaN gives NaN.",
    lambda c: (c.g * c.inputs[0].cosh(),),
    divergence=_EARLY_OVERFLOW.format("sinh"),
    public=_PUBLIC_DSL,
)
_unary(
    "cosh",
    lambda a: M.cosh(a),
    "Hyperbolic cosine.",
    "≤ 1 ulp of the correctly rounded result (mathlib.cosh)",
    "cosh(±inf) = inf, overflow to inf beyond ±89.416, NaN gives NaN.",
    lambda c: (c.g * c.inputs[0].sinh(),),
    divergence=_EARLY_OVERFLOW.format("cosh"),
    public=_PUBLIC_DSL,
)
_unary(
    "asinh",
    lambda a: M.asinh(a),
    "Inverse hyperbolic sine.",
    "≤ 1 ulp of the correctly rounded result (mathlib.asinh)",
    "asinh(±inf) = ±inf, asinh(-0.0) = -0.0, NaN gives NaN.",
    lambda c: (c.g * (c.inputs[0] * c.inputs[0] + 1).rsqrt(),),
    public=Public(aliases=("arcsinh",), dsl=True),
)
_unary(
    "acosh",
    lambda a: M.acosh(a),
    "Inverse hyperbolic cosine (input >= 1).",
    "≤ 1 ulp of the correctly rounded result (mathlib.acosh)",
    "acosh(x < 1) = NaN, acosh(1) = 0, acosh(inf) = inf, NaN gives NaN.",
    lambda c: (c.g * (c.inputs[0] * c.inputs[0] - 1).rsqrt(),),
    public=Public(aliases=("arccosh",), dsl=True),
)
_unary(
    "atanh",
    lambda a: M.atanh(a),
    "Inverse hyperbolic tangent (|input| <= 1).",
    "≤ 1 ulp of the correctly rounded result (mathlib.atanh)",
    "atanh(±1) = ±inf, atanh(x) for |x| > 1 is NaN, atanh(-0.0) = -0.0, NaN gives NaN.",
    lambda c: (c.g / (1 - c.inputs[0] * c.inputs[0]),),
    public=Public(aliases=("arctanh",), dsl=True),
)

# ---------------------------------------------------------------------- error functions

_unary(
    "erf",
    lambda a: M.erf(a),
    "The error function.",
    "≤ 2 ulp of the correctly rounded result (mathlib.erf)",
    "erf(±inf) = ±1, erf(-0.0) = -0.0, NaN gives NaN.",
    lambda c: (c.g * (_TWO_OVER_SQRT_PI * (-(c.inputs[0] * c.inputs[0])).exp()),),
)
_unary(
    "erfc",
    lambda a: M.erfc(a),
    "The complementary error function 1 - erf(input), accurate in the right tail.",
    "≤ 1 ulp of the correctly rounded result (mathlib.erfc)",
    "erfc(-inf) = 2, erfc(inf) = 0, erfc(±0) = 1, NaN gives NaN.",
    lambda c: (c.g * (-_TWO_OVER_SQRT_PI * (-(c.inputs[0] * c.inputs[0])).exp()),),
    public=_PUBLIC_DSL,
)
_unary(
    "erfinv",
    lambda a: M.erfinv(a),
    "The inverse error function (|input| <= 1).",
    "≤ 1 ulp of the correctly rounded result (mathlib.erfinv)",
    "erfinv(±1) = ±inf, erfinv(x) for |x| > 1 is NaN, erfinv(-0.0) = -0.0, NaN gives NaN.",
    lambda c: (c.g * (_SQRT_PI_OVER_2 * (c.output * c.output).exp()),),
    public=_PUBLIC_DSL,
)

# ---------------------------------------------------------------------- logarithms and exponentials

_unary(
    "log2",
    lambda a: M.log2(a),
    "Base-2 logarithm.",
    "≤ 1 ulp of the correctly rounded result, exact for powers of two (mathlib.log2)",
    "log2(x < 0) = NaN, log2(±0) = -inf, log2(inf) = inf, NaN gives NaN.",
    lambda c: (c.g / (c.inputs[0] * _LN2),),
)
_unary(
    "log10",
    lambda a: M.log10(a),
    "Base-10 logarithm.",
    "≤ 1 ulp of the correctly rounded result (mathlib.log10)",
    "log10(x < 0) = NaN, log10(±0) = -inf, log10(inf) = inf, NaN gives NaN.",
    lambda c: (c.g / (c.inputs[0] * _LN10),),
    public=_PUBLIC_DSL,
)
_unary(
    "log1p",
    lambda a: M.log1p(a),
    "log(1 + input), accurate near 0.",
    "≤ 1 ulp of the correctly rounded result (mathlib.log1p)",
    "log1p(-1) = -inf, log1p(x < -1) = NaN, log1p(inf) = inf, log1p(-0.0) = -0.0, NaN gives NaN.",
    lambda c: (c.g / (c.inputs[0] + 1),),
)
_unary(
    "expm1",
    lambda a: M.expm1(a),
    "exp(input) - 1, accurate near 0.",
    "≤ 1 ulp of the correctly rounded result (mathlib.expm1)",
    "expm1(-inf) = -1, expm1(inf) = inf, overflow to inf above 88.72, expm1(-0.0) = -0.0, NaN gives NaN.",
    lambda c: (c.g * (c.output + 1),),
)
_unary(
    "exp2",
    lambda a: M.exp2(a),
    "2 to the power input.",
    "≤ 1 ulp of the correctly rounded result, exact for integers (mathlib.exp2)",
    "exp2(-inf) = 0, exp2(inf) = inf, overflow to inf from 128, NaN gives NaN.",
    lambda c: (c.g * (c.output * _LN2),),
)


def _logit(x, lo, hi):
    # PyTorch: x clamped to [eps, 1 - eps] first (a NaN stays NaN: both comparisons are false)
    return M.logit(select(x < lo, lo, select(x > hi, hi, x)))


register(
    OpDef(
        "logit",
        "elementwise",
        "logit(input, eps=None)",
        "log(p / (1 - p)) for p = input, clamped to [eps, 1 - eps] when eps is given (None or eps < 0: no clamp).",
        dtypes=NUMERIC_DTYPES,
        result="float",
        body=_logit,
        precision="≤ 1 ulp of the correctly rounded result (mathlib.logit)",
        special="logit(0) = -inf, logit(1) = inf, x < 0 or x > 1 gives NaN (without eps), NaN gives NaN.",
        divergence="PyTorch rounds p / (1 - p) before its logarithm, up to hundreds of ulp off near p = 1/2; "
        "vkml evaluates log(p) - log1p(-p) or log1p((2p - 1)/(1 - p)) in double-float, within 1 ulp. "
        "A float16 or bfloat16 input is computed as PyTorch's kernel instead, log(x / (1 - x)) op for op in "
        "the dtype, each op rounding (docs/dtypes.md), the bits of PyTorch's.",
        grad=_grad_logit,
    )
)


# ---------------------------------------------------------------------- gamma functions


def _grad_trigamma(c):
    return (c.g * c.F.polygamma(2, c.inputs[0]),)


_unary(
    "lgamma",
    lambda a: M.lgamma(a),
    "log |Gamma(input)|.",
    "x > 0: ≤ 1 ulp of the correctly rounded result; x < 0: ≤ 1 ulp plus 2^-27 absolute (mathlib.lgamma)",
    "lgamma(±0) = inf, lgamma(n) = inf for negative integers n, lgamma(±inf) = inf, NaN gives NaN.",
    lambda c: (c.g * c.inputs[0].digamma(),),
    public=_PUBLIC_DSL,
)
_unary(
    "digamma",
    lambda a: M.digamma(a),
    "The digamma function, d/dx log Gamma(x).",
    "x > 0: ≤ 1 ulp of the correctly rounded result; x < 0: ≤ 1 ulp plus 2^-27 absolute (mathlib.digamma)",
    "digamma(+0) = -inf, digamma(-0) = inf, digamma(n) = NaN for negative integers n and -inf, "
    "digamma(inf) = inf, NaN gives NaN (as PyTorch).",
    lambda c: (c.g * c.F.polygamma(1, c.inputs[0]),),
    divergence="The gradient is vkml's trigamma, so for negative x it differs from PyTorch's float32 one "
    "by up to about 2e-5 relatively (see trigamma).",
    reached_through=("vkml.polygamma(0, input)", "Tensor.polygamma(0)"),
    public=_PUBLIC_DSL,
)
_unary(
    "trigamma",
    lambda a: M.trigamma(a),
    "polygamma(1, input): the second derivative of log Gamma.",
    "≤ 1 ulp of the correctly rounded result (mathlib.trigamma)",
    "trigamma(±0) = inf, trigamma(inf) = 0, trigamma(-inf) = NaN, NaN gives NaN.",
    _grad_trigamma,
    divergence="At the negative integers (its poles) vkml gives inf; PyTorch gives large finite values "
    "(polygamma(1, -1) = 1.29e15). Elsewhere for negative x PyTorch's float32 result is off by up to about "
    "2e-5 relatively (polygamma(1, -7.950587) = 412.7526; 412.74422 in float64, as vkml's), and by about "
    "1e-4 within 0.01 of a pole (polygamma(1, -7.99) = 10003.611; 10002.715 in float64, as vkml's).",
    torch_name="polygamma",
    reached_through=("vkml.polygamma(1, input)", "Tensor.polygamma(1)", "vkml.special.polygamma(1, input)"),
    public=None,  # reached through vkml.polygamma(1, input) alone
)


# ---------------------------------------------------------------------- Hurwitz zeta and polygamma(n >= 2)


def _grad_zeta(c):
    # PyTorch: no derivative in x (NotImplementedError); d/dq zeta(x, q) = -x zeta(x + 1, q)
    if c.needs[0]:
        raise NotImplementedError("the derivative for 'zeta' is not implemented.")
    x, q = c.inputs
    return None, c.g * -x * c.F.special.zeta(x + 1, q)


def _grad_polygamma(c):
    x, s = c.inputs[0], c.inputs[1]
    # s = n + 1 is a Python number here (the face passes it): d/dx polygamma(n, x) = polygamma(n + 1, x)
    return (c.g * c.F.polygamma(int(s), x), None, None, None)


register(
    OpDef(
        "zeta",
        "elementwise",
        "zeta(input, other)",
        "The Hurwitz zeta function sum_{k >= 0} (other + k)^-input (torch.special.zeta(x, q)).",
        dtypes=NUMERIC_DTYPES,
        result="float",
        body=lambda s, q: M.zeta(s, q),
        precision="q > 0, 1 < x <= 256: ≤ 1 ulp of the correctly rounded result (measured worst case 0.51 ulp; "
        "0.74 for subnormal results); q < 0: ≤ 1 ulp plus 2^-36 of the largest term |q - round(q)|^-x (the "
        "folding onto positive arguments cancels near the zeros; measured within 0.5 ulp) (mathlib.zeta)",
        special="Cephes' rules, as PyTorch: x = 1 gives inf, x < 1 NaN, q a non-positive integer inf, q < 0 "
        "with a non-integer x NaN, q = ±inf or x = inf NaN, NaN gives NaN.",
        divergence="PyTorch's float32 kernel runs Cephes' series in float32 (several ulp off, more for large x) "
        "and gives NaN where every term underflows (zeta(1e30, 2)); vkml gives the correctly rounded value "
        "within its bound (0 there). Above x = 256 vkml's Euler-Maclaurin tail converges more slowly (the "
        "bound is stated up to 256).",
        torch_name="special.zeta",
        grad=_grad_zeta,
        reached_through=("vkml.special.zeta(input, other)",),
    )
)
register(
    OpDef(
        "polygamma",
        "elementwise",
        "polygamma(n, input)",
        "The n-th derivative of digamma, (-1)^(n+1) n! zeta(n + 1, x), for n >= 2 (n = 0 is digamma, n = 1 trigamma).",
        dtypes=NUMERIC_DTYPES,
        result="float",
        # operands: x, then s = n + 1 and log(n!) as a float32 pair, Python numbers from the face
        body=lambda x, s, lh, ll: M.polygamma(x, s, lh, ll),
        precision="x > 0, n <= 255: ≤ 1 ulp of the correctly rounded result (measured worst case 0.51 ulp; 0.74 "
        "for subnormal results); x < 0: ≤ 1 ulp plus 2^-36 of the largest term n!/|x - round(x)|^(n+1) "
        "(measured within 0.5 ulp) (mathlib.polygamma, through mathlib.zeta)",
        special="As PyTorch: ±0 and the negative integers (poles) give (-1)^(n+1) inf, inf gives NaN, -inf "
        "gives (-1)^(n+1) inf, NaN gives NaN.",
        divergence="PyTorch's float32 kernel evaluates exp(lgamma(n + 1)) zeta(n + 1, x) in float32: up to "
        "millions of ulp off for n >= 10, and inf (NaN where its zeta underflows) once n! overflows float32 "
        "(n >= 35: polygamma(35, 5) = inf, polygamma(35, 40) = NaN), and for negative x its trigamma "
        "is off by up to about 2e-5 relatively (polygamma(1, -7.950587) = 412.7526 there, 412.74422 "
        "in float64); vkml is within its bound (float16 and bfloat16: the float32 result rounded once). float64 raises NotImplementedError "
        "for n >= 2 (no float64 routine yet; .float() computes it in float32).",
        grad=_grad_polygamma,
        reached_through=("vkml.special.polygamma(n, input)",),
    )
)
