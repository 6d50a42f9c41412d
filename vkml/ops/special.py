"""torch.special's functions (and torch.i0): the normal distribution, erfcx, xlog1py, entr, the modified
Bessel functions and the orthogonal polynomials, each one elementwise OpDef.

The float bodies of ndtr ... legendre_polynomial_p are float64 routines (vkml/ops/mathlib/f64special.py):
a float32 operand is converted to float64, computed and rounded once, so float32 results are within 1 ulp
of the correctly rounded value where the float64 routine's bound (on the op's page) is a few float64 ulp,
and float16 is that float32 result rounded once more. xlog1py and entr are PyTorch's formulas on the
mathlib's log1p and log, in the operand's own width. Integer operands give float32 results, as PyTorch's.
"""

from __future__ import annotations

import math

from ..ir import builder as B
from ..ir import types as T
from . import mathlib as M
from .registry import NUMERIC_DTYPES, OpDef, Public, register

DTYPES = NUMERIC_DTYPES + (T.float64,)
_SQRT_2PI = math.sqrt(2.0 * math.pi)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_F32 = (
    "float32 (float16, bfloat16, integers): ≤ 1 ulp of the correctly rounded result (computed in float64, rounded once)"
)
_EARLY_OVERFLOW = (
    "PyTorch's float32 {0} forms exp(|x|) in float32 first and overflows to inf for 88.72 < |x| < {1}, where "
    "the result is finite; vkml gives the finite result. At ±inf PyTorch's formula gives NaN, and so does vkml."
)
_NOT_DIFFERENTIABLE = "PyTorch has no derivative for it either: its result does not require grad."


OPS: set[str] = set()  # the names of the ops defined here


def _special(name, fn, signature, summary, precision, special, grad=None, public=None, **kw):
    OPS.add(name)
    register(
        OpDef(
            name,
            "elementwise",
            signature,
            summary,
            dtypes=DTYPES,
            result="float",
            body=fn,
            precision=f"{_F32}; float64: {precision}",
            special=special,
            grad=grad,
            no_grad="" if grad is not None else _NOT_DIFFERENTIABLE,
            public=public,
            torch_name=kw.pop("torch_name", f"special.{name}"),
            reached_through=kw.pop("reached_through", (f"vkml.special.{name}({signature.split('(')[1]}",)),
            **kw,
        )
    )


# ---------------------------------------------------------------------- gradients (PyTorch's formulas)


def _grad_ndtr(c):
    (x,) = c.inputs
    return (c.g * ((x * x * -0.5).exp() * (1.0 / _SQRT_2PI)),)


def _grad_ndtri(c):
    return (c.g * (_SQRT_2PI * (c.output * c.output * 0.5).exp()),)


def _grad_log_ndtr(c):
    (x,) = c.inputs
    return (c.g * ((-(c.output + x * x * 0.5)).exp() * (1.0 / _SQRT_2PI)),)


def _grad_erfcx(c):
    (x,) = c.inputs
    return (c.g * (2.0 * x * c.output - _TWO_OVER_SQRT_PI),)


def _grad_i0(c):
    return (c.g * c.F.special.i1(c.inputs[0]),)


def _grad_i0e(c):
    (x,) = c.inputs
    return (c.g * (c.F.special.i1e(x) - x.sgn() * c.output),)


def _no_half_backward(name: str, x) -> None:
    """PyTorch's i1 and i1e backward kernels take float32 and float64 only."""
    torch_names = {"float16": "Half", "bfloat16": "BFloat16"}
    if x.dtype.name in torch_names:
        raise NotImplementedError(f"\"{name}_backward\" not implemented for '{torch_names[x.dtype.name]}'")


def _grad_i1(c):
    (x,) = c.inputs
    F = c.F
    _no_half_backward("i1", x)
    return (c.g * F.where(x == 0, 0.5, F.special.i0(x) - c.output / x),)


def _grad_i1e(c):
    (x,) = c.inputs
    F = c.F
    _no_half_backward("i1e", x)
    return (c.g * F.where(x == 0, 0.5, F.special.i0e(x) - c.output * (x.sgn() + 1.0 / x)),)


def _grad_xlog1py(c):
    x, y = c.inputs
    F = c.F
    dx = dy = None
    if c.needs[0]:
        dx = F.where((x == 0) & (y <= -1), 0.0, F.special.xlog1py(c.g, y))
    if c.needs[1]:
        dy = c.g * x / (y + 1)
    return dx, dy


def _grad_entr(c):
    return (c.g * -(c.inputs[0].log() + 1.0),)


# ---------------------------------------------------------------------- the normal distribution, erfcx

_special(
    "ndtr",
    M.ndtr,
    "ndtr(input)",
    "The standard normal cumulative distribution function Phi(input) = erfc(-input/sqrt(2))/2.",
    "≤ 2 ulp of the correctly rounded result, the left tail's subnormal results included (mathlib.ndtr)",
    "ndtr(-inf) = 0, ndtr(inf) = 1, ndtr(±0) = 0.5, NaN gives NaN.",
    _grad_ndtr,
    divergence="PyTorch computes (1 + erf(x/sqrt(2)))/2, which cancels in the left tail: ndtr(-3) is 1.4e-6 "
    "off in float32 and ndtr(-10) = 0 in float64 (the true value is 7.6e-24); vkml forms erfc(-x/sqrt(2))/2, "
    "accurate there (vkml.special.log_ndtr of PyTorch is accurate in the tail, so log(ndtr) and log_ndtr agree "
    "in vkml and differ in PyTorch).",
)
_special(
    "ndtri",
    M.ndtri,
    "ndtri(input)",
    "The inverse of ndtr: the x with ndtr(x) = input, for input in [0, 1].",
    "≤ 4 ulp of the correctly rounded result (mathlib.ndtri)",
    "ndtri(0) = -inf, ndtri(1) = inf, input < 0 or > 1 gives NaN, NaN gives NaN.",
    _grad_ndtri,
)
_special(
    "log_ndtr",
    M.log_ndtr,
    "log_ndtr(input)",
    "log(ndtr(input)), accurate in both tails (no underflow far left).",
    "≤ 4 ulp of the correctly rounded result (mathlib.log_ndtr)",
    "log_ndtr(-inf) = -inf, log_ndtr(inf) = -0.0, -inf where input^2/2 overflows, NaN gives NaN.",
    _grad_log_ndtr,
)
_special(
    "erfcx",
    M.erfcx,
    "erfcx(input)",
    "The scaled complementary error function exp(input^2) erfc(input).",
    "≤ 2 ulp of the correctly rounded result (mathlib.erfcx)",
    "erfcx(inf) = 0, erfcx(-inf) = inf, overflow to inf below -26.63 (float32: -9.38), NaN gives NaN.",
    _grad_erfcx,
)

# ---------------------------------------------------------------------- modified Bessel functions

_special(
    "i0",
    M.i0,
    "i0(input)",
    "The modified Bessel function of the first kind of order 0.",
    "≤ 12 ulp of the correctly rounded result (mathlib.i0)",
    "i0(±inf) = NaN (as PyTorch), overflow to inf beyond ±713.98 (float32: ±91.9), i0(±0) = 1, NaN gives NaN.",
    _grad_i0,
    divergence=_EARLY_OVERFLOW.format("i0", "91.9"),
    public=Public(),
    torch_name="i0",
    reached_through=("vkml.special.i0(input)",),
)
_special(
    "i0e",
    M.i0e,
    "i0e(input)",
    "The exponentially scaled modified Bessel function of the first kind of order 0, exp(-|input|) i0(input).",
    "≤ 8 ulp of the correctly rounded result (mathlib.i0e)",
    "i0e(±inf) = 0, i0e(±0) = 1, NaN gives NaN.",
    _grad_i0e,
)
_special(
    "i1",
    M.i1,
    "i1(input)",
    "The modified Bessel function of the first kind of order 1.",
    "≤ 12 ulp of the correctly rounded result (mathlib.i1)",
    "i1(±inf) = NaN (as PyTorch), overflow to ±inf beyond ±713.95 (float32: ±91.9), i1(±0) = +0 (as PyTorch), NaN gives NaN.",
    _grad_i1,
    divergence=_EARLY_OVERFLOW.format("i1", "91.9"),
)
_special(
    "i1e",
    M.i1e,
    "i1e(input)",
    "The exponentially scaled modified Bessel function of the first kind of order 1, exp(-|input|) i1(input).",
    "≤ 8 ulp of the correctly rounded result (mathlib.i1e)",
    "i1e(±inf) = ±0, i1e(±0) = +0 (as PyTorch), NaN gives NaN.",
    _grad_i1e,
)
for _name, _summary in (
    ("modified_bessel_k0", "The modified Bessel function of the second kind of order 0."),
    ("modified_bessel_k1", "The modified Bessel function of the second kind of order 1."),
    ("scaled_modified_bessel_k0", "exp(input) times the modified Bessel function of the second kind of order 0."),
    ("scaled_modified_bessel_k1", "exp(input) times the modified Bessel function of the second kind of order 1."),
):
    _special(
        _name,
        getattr(M, _name),
        f"{_name}(input)",
        _summary,
        f"≤ 8 ulp of the correctly rounded result, normal results (mathlib.{_name})",
        "±0 gives inf, input < 0 gives NaN, inf gives 0 (as PyTorch), NaN gives NaN.",
    )
_BESSEL_JY_DIVERGENCE = (
    "PyTorch's float64 {0} is about 1e-8 off for moderate x ({0}(5) = {1} where the true value is {2}) and "
    "loses the phase of large x entirely ({0}(1e20)); vkml is within its bound (float32: 1 ulp of max(|value|, 1))."
)
for _name, _summary, _bound, _specials, _theirs, _true in (
    ("bessel_j0", "The Bessel function of the first kind of order 0.", "≤ 2^-48 absolute",
     "J0(0) = 1, J0(±inf) = NaN (as PyTorch), NaN gives NaN.", "-0.1775967812", "-0.1775967713"),
    ("bessel_j1", "The Bessel function of the first kind of order 1.", "≤ 2^-48 absolute",
     "J1(±0) = ±0, J1(±inf) = NaN (as PyTorch), NaN gives NaN.", "-0.3275791437", "-0.3275791376"),
    ("bessel_y0", "The Bessel function of the second kind of order 0.", "≤ 2^-48 of max(|Y0|, 1)",
     "Y0(0) = -inf, input < 0 gives NaN, Y0(inf) = NaN (as PyTorch), NaN gives NaN.", "-0.3085176376", "-0.3085176252"),
    ("bessel_y1", "The Bessel function of the second kind of order 1.", "≤ 2^-48 of max(|Y1|, 1)",
     "Y1(0) = -inf, input < 0 gives NaN, Y1(inf) = NaN (as PyTorch), NaN gives NaN.", "0.1478631523", "0.1478631434"),
):  # fmt: skip
    _special(
        _name,
        getattr(M, _name),
        f"{_name}(input)",
        _summary,
        f"{_bound}: fitted Chebyshev series up to 8, the Hankel forms beyond with x reduced exactly; the relative "
        f"error grows near the function's zeros (mathlib.{_name})",
        _specials,
        divergence=_BESSEL_JY_DIVERGENCE.format(_name, _theirs, _true),
    )
_special(
    "airy_ai",
    M.airy_ai,
    "airy_ai(input)",
    "The Airy function Ai(input).",
    "|x| <= 2: ≤ 2^-50 absolute; x > 2: ≤ 2^-48 plus zeta·2^-51 relative (e^-zeta of the rounded zeta = "
    "(2/3)x^1.5); x < -2: ≤ 2^-50 absolute plus the phase's rounding, about |x|^1.5·2^-52 (fitted Chebyshev "
    "series and the asymptotic forms) (mathlib.airy_ai)",
    "airy_ai(±inf) = NaN (as PyTorch), NaN gives NaN.",
    divergence="PyTorch's float64 airy_ai is about 5e-9 off for moderate negative x (airy_ai(-3) = -0.3788142883 "
    "where the true value is -0.3788142937); vkml is within its bound.",
)
_special(
    "spherical_bessel_j0",
    M.spherical_bessel_j0,
    "spherical_bessel_j0(input)",
    "The spherical Bessel function of the first kind of order 0, sin(input)/input.",
    "≤ 2 ulp of the correctly rounded result (mathlib.spherical_bessel_j0)",
    "spherical_bessel_j0(0) = 1, spherical_bessel_j0(±inf) = 0 (as PyTorch), NaN gives NaN.",
)

# ---------------------------------------------------------------------- orthogonal polynomials

_POLY_SPECIAL = (
    "n is truncated to an integer as PyTorch does (a NaN, infinite or |n| >= 2^63 degree counts as negative); "
    "a negative n gives 0; {0} NaN in input gives NaN otherwise."
)
_POLY_NAN = (
    "With a NaN input and n >= 2 some of PyTorch's CPU kernels stop the recurrence at the NaN and return an "
    "unset value (chebyshev_polynomial_u(nan, 2) = -7.75e28, legendre_polynomial_p(nan, 2) = 0); vkml gives NaN."
)
# the polynomials whose PyTorch CPU kernel returns an unset value for a NaN input (n >= 2)
_UNSET_AT_NAN = {
    "chebyshev_polynomial_u",
    "chebyshev_polynomial_w",
    "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_w",
    "laguerre_polynomial_l",
    "legendre_polynomial_p",
}
_POLY_PRECISION = (
    "PyTorch's recurrence{0}, each step rounded in float64: the rounding errors of the recurrence (which grow "
    "with n where the polynomial is large or cancels), no other error (mathlib.{1})"
)
for _name, _fn, _what, _values, _closed in (
    (
        "chebyshev_polynomial_t",
        M.chebyshev_t,
        "The Chebyshev polynomial of the first kind T_n(input).",
        "T_n(±1) = (±1)^n;",
        "cos(n acos x) for n > 6, |x| < 1",
    ),
    (
        "chebyshev_polynomial_u",
        M.chebyshev_u,
        "The Chebyshev polynomial of the second kind U_n(input).",
        "U_n(±1) = (±1)^n (n + 1);",
        "sin((n + 1) acos x)/sin(acos x) for n > 8, |x| < 1",
    ),
    (
        "chebyshev_polynomial_v",
        M.chebyshev_v,
        "The Chebyshev polynomial of the third kind V_n(input).",
        "V_n(1) = 1, V_n(-1) = (-1)^n (2n + 1);",
        "cos((n + 1/2) acos x)/cos(acos(x)/2) for n > 8, |x| < 1",
    ),
    (
        "chebyshev_polynomial_w",
        M.chebyshev_w,
        "The Chebyshev polynomial of the fourth kind W_n(input).",
        "W_n(1) = 2n + 1, W_n(-1) = (-1)^n;",
        "sin((n + 1/2) acos x)/sin(acos(x)/2) for n > 8, |x| < 1",
    ),
    (
        "shifted_chebyshev_polynomial_t",
        M.shifted_chebyshev_t,
        "The shifted Chebyshev polynomial of the first kind T*_n(input) = T_n(2 input - 1).",
        "T*_n(1) = 1, T*_n(0) = (-1)^n;",
        "of T at 2x - 1",
    ),
    (
        "shifted_chebyshev_polynomial_u",
        M.shifted_chebyshev_u,
        "The shifted Chebyshev polynomial of the second kind U*_n(input) = U_n(2 input - 1).",
        "U*_n(1) = n + 1, U*_n(0) = (-1)^n (n + 1);",
        "of U at 2x - 1",
    ),
    (
        "shifted_chebyshev_polynomial_v",
        M.shifted_chebyshev_v,
        "The shifted Chebyshev polynomial of the third kind V*_n(input) = V_n(2 input - 1).",
        "V*_n(1) = 1, V*_n(0) = (-1)^n (2n + 1);",
        "of V at 2x - 1",
    ),
    (
        "shifted_chebyshev_polynomial_w",
        M.shifted_chebyshev_w,
        "The shifted Chebyshev polynomial of the fourth kind W*_n(input) = W_n(2 input - 1).",
        "W*_n(1) = 2n + 1, W*_n(0) = (-1)^n;",
        "of W at 2x - 1",
    ),
    ("hermite_polynomial_h", M.hermite_h, "The physicists' Hermite polynomial H_n(input).", "", ""),
    ("hermite_polynomial_he", M.hermite_he, "The probabilists' Hermite polynomial He_n(input).", "", ""),
    ("laguerre_polynomial_l", M.laguerre_l, "The Laguerre polynomial L_n(input).", "L_n(0) = 1;", ""),
    (
        "legendre_polynomial_p",
        M.legendre_p,
        "The Legendre polynomial P_n(input).",
        "P_n(±1) = (±1)^n;",
        "",
    ),
):
    _special(
        _name,
        _fn,
        f"{_name}(input, n)",
        _what + " n is a tensor or a number (broadcast with input).",
        _POLY_PRECISION.format(f" (and its closed form {_closed})" if _closed else "", _fn.__name__),
        _POLY_SPECIAL.format(_values),
        divergence=_POLY_NAN if _name in _UNSET_AT_NAN else "",
    )


# ---------------------------------------------------------------------- xlog1py and entr (PyTorch's formulas)


def _xlog1py(x, y):
    out = B.select(B.eq(x, 0.0), B.const(0.0, x.dtype), x * M.log1p(y))
    return B.select(B.isnan(y), y, out)


def _entr(x):
    zero, minus_inf = B.const(0.0, x.dtype), B.const(-math.inf, x.dtype)
    out = B.select(x > 0.0, -(x * M.log(B.select(x > 0.0, x, B.const(1.0, x.dtype)))), minus_inf)
    out = B.select(B.eq(x, 0.0), zero, out)
    return B.select(B.isnan(x), x, out)


OPS.update(("xlog1py", "entr"))
register(
    OpDef(
        "xlog1py",
        "elementwise",
        "xlog1py(input, other)",
        "input * log1p(other), 0 where input is 0 (unless other is NaN).",
        dtypes=DTYPES,
        result="float",
        body=_xlog1py,
        precision="log1p ≤ 1 ulp, then one product (float64: the float64 log1p, ≤ 1 ulp)",
        special="xlog1py(0, y) = 0 for any y but NaN (also y = -1 and y = inf); xlog1py(x, NaN) = NaN.",
        grad=_grad_xlog1py,
        torch_name="special.xlog1py",
        reached_through=("vkml.special.xlog1py(input, other)",),
    )
)
register(
    OpDef(
        "entr",
        "elementwise",
        "entr(input)",
        "The elementwise entropy: -input * log(input) for input > 0, 0 at 0, -inf for input < 0.",
        dtypes=DTYPES,
        result="float",
        body=_entr,
        precision="log ≤ 1 ulp, then one product (float64: the float64 log, ≤ 1 ulp)",
        special="entr(0) = 0, entr(x < 0) = -inf, entr(inf) = -inf, NaN gives NaN.",
        grad=_grad_entr,
        torch_name="special.entr",
        reached_through=("vkml.special.entr(input)",),
    )
)


# ---------------------------------------------------------------------- the incomplete gamma functions


def _igamma_grad(name: str, sign: float):
    def rule(c):
        # PyTorch: no derivative in a (NotImplementedError); d/dx P(a, x) = x^(a-1) e^-x / Gamma(a) = -d/dx Q
        if c.needs[0]:
            raise NotImplementedError(f"the derivative for '{name}: input' is not implemented.")
        a, x = c.inputs
        density = ((a - 1.0) * x.log() - x - a.lgamma()).exp()
        return None, c.g * (sign * density)

    return rule


_IGAMMA_PRECISION = (
    "≤ 1e-12 relative (measured), plus about (a + 10)·2^-52 relative from the prefactor exp(a log x - x - lgamma(a)); "
    "where the other side's method gives the complement near 1, its cancellation (as PyTorch's) "
    "(mathlib.{0})"
)
_IGAMMA_SPECIAL = (
    "As PyTorch: a < 0 or x < 0 gives NaN; a = 0 gives {one} (NaN at x = 0); x = 0 gives {zero}; x = inf gives "
    "{one} (NaN for a = inf); a = inf gives {zero}; NaN gives NaN."
)
_IGAMMA_DIVERGENCE = (
    "PyTorch's float64 kernel is less accurate in places, where vkml is within its bound: igamma(100, 101) is "
    "3e-10 off there, and igammac(1e-30, 1e-3) = 6.91e-30 where the true value is 6.33e-30. vkml runs its series "
    "or continued fraction for 20 sqrt(a) + 60 terms (PyTorch switches to Temme's asymptotic expansion for "
    "large a), so its error grows with a as stated above."
)
for _name, _fn, _summary, _one, _zero, _sign, _alias in (
    ("igamma", M.igamma, "The regularized lower incomplete gamma function P(input, other).", "1", "0", 1.0, "gammainc"),
    ("igammac", M.igammac, "The regularized upper incomplete gamma function Q(input, other) = 1 - P.", "0", "1", -1.0,
     "gammaincc"),
):  # fmt: skip
    _special(
        _name,
        _fn,
        f"{_name}(input, other)",
        _summary,
        _IGAMMA_PRECISION.format(_name),
        _IGAMMA_SPECIAL.format(one=_one, zero=_zero),
        _igamma_grad(_name, _sign),
        divergence=_IGAMMA_DIVERGENCE,
        torch_name=_name,
        reached_through=(f"vkml.special.{_alias}(input, other)", f"Tensor.{_name}(other)", f"Tensor.{_name}_(other)"),
    )
