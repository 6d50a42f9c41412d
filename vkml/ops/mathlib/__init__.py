"""The math library: every non-primitive float function, written in the DSL out of exact primitives.

Import point for the rest of vkml (``from vkml.ops import mathlib``). Each public function
documents its precision (``Precision:``), its NaN/inf behaviour (``Special values:``) and any
``Divergence from PyTorch:``; the docs generator reads those lines.

All functions take and return float32 IR values (float16 is computed in float32 and narrowed
with ``f32_to_f16``); the transcendental ones dispatch float64 operands to their float64 twins
(``f64math``, ``f64trig``, ``f64erf``: each within 1 ulp of float64, built on the double-double
arithmetic of ``f64dd``; vkml/ops/float64.py lists them with their bounds). Only add/sub/mul, compares, select, bit and integer operations are used,
so the CPU interpreter and every Vulkan driver produce the same bits.

| function | precision |
|---|---|
| div, sqrt, f32_to_f16, f32_to_f16_in_range, f16_to_f32, abs, maximum, minimum, clamp, relu, sign | exact |
| rsqrt | two correct roundings (bit-equal to torch.rsqrt) |
| exp, exp2, expm1, log, log2, log1p, pow | ≤ 1 ulp |
| sigmoid, silu, mish, tanh, softplus, erf, gelu, gelu_tanh | ≤ 2 ulp (measured ≤ 1) |
| sin, cos, tan, asin, acos, atan, atan2, sinc, sinh, cosh, asinh, acosh, atanh, log10, logit | ≤ 1 ulp |
| erfc, erfinv | ≤ 1 ulp |
| lgamma, digamma | ≤ 1 ulp for x > 0; ≤ 1 ulp + 2^-27 absolute for x < 0 |
| trigamma | ≤ 1 ulp |
| zeta, polygamma (n >= 2) | ≤ 1 ulp for q > 0, s <= 256; for q < 0 plus 2^-36 of the largest term |
| ndtr, ndtri, log_ndtr, erfcx, i0, i0e, i1, i1e, the K Bessel functions, spherical_bessel_j0 | ≤ 1 ulp (computed in float64: f64special) |
| the orthogonal polynomials (chebyshev_t ... legendre_p) | PyTorch's recurrences, each step in float64 |

"ulp" is the float32 ulp of the correctly rounded result, counted in the integer order of
float32 bit patterns, so for subnormal results it is the absolute 2^-149.

NaN bits follow x86 (what numpy and PyTorch's CPU kernels give): a NaN operand of an
arithmetic function comes back quieted (the first NaN operand when there are two), and an
invalid operation (0/0, sqrt(-1), log(-1), pow(-8, 1/3)) gives 0xFFC00000. Select-only
functions (maximum, minimum, clamp, relu, sign) pass a NaN through unchanged.

Layout: ``bits`` (float32 fields, rounding to float32), ``dd`` (double-float arithmetic),
``exact``, ``f16``, ``explog``, ``power``, ``special``, ``trig`` (Payne-Hanek reduction, sin, cos,
tan, their inverses), ``hyperbolic`` (with log10 and logit), ``erfs`` (erfc, erfinv), ``gamma`` (lgamma, digamma, trigamma), ``zeta``
(Hurwitz zeta, polygamma).
"""

from ...ir import builder as _builder
from . import exact as _exact
from . import f64 as _f64
from . import f64erf as _f64e
from . import f64math as _f64m
from . import f64more as _f64x
from . import f64special as _f64s
from . import f64trig as _f64t
from .bf16 import bf16_to_f32, f32_to_bf16, round_bf16
from .erfs import erfc, erfinv
from .exact import rsqrt
from .explog import exp, exp2, expm1, log, log1p, log2
from .f16 import f16_to_f32, f32_to_f16, f32_to_f16_in_range
from .gamma import digamma, lgamma, trigamma
from .hyperbolic import acosh, asinh, atanh, cosh, log10, logit, sinh
from .power import pow
from .special import erf, gelu, gelu_tanh, mish, sigmoid, silu, softplus, tanh
from .trig import acos, asin, atan, atan2, cos, sin, sinc, tan
from .zeta import polygamma, zeta


def _by_width(name: str):
    """The float32 function ``name`` of ``exact``, or its float64 twin (``f64``) for float64 operands."""
    f32_fn, f64_fn = getattr(_exact, name), getattr(_f64, name)

    def dispatch(x, *args):
        return f64_fn(x, *args) if x.dtype is _f64.F64 else f32_fn(x, *args)

    dispatch.__name__ = dispatch.__qualname__ = name
    dispatch.__doc__ = f32_fn.__doc__
    return dispatch


abs = _by_width("abs")  # noqa: A001 - PyTorch's name
div = _by_width("div")
sqrt = _by_width("sqrt")
maximum = _by_width("maximum")
minimum = _by_width("minimum")
clamp = _by_width("clamp")
relu = _by_width("relu")
sign = _by_width("sign")


def clamp_min(x, lo):
    return clamp(x, lo, None)


def clamp_max(x, hi):
    return clamp(x, None, hi)


clamp_min.__doc__, clamp_max.__doc__ = _exact.clamp_min.__doc__, _exact.clamp_max.__doc__


# float64 operands of the transcendental functions go to their float64 routines (f64math, f64trig);
# the docstring stays the float32 one, and the float64 bound is on the function in f64math/f64trig.
def _with_f64(f32_fn, f64_fn):
    def dispatch(x, *args, **kwargs):
        return f64_fn(x, *args, **kwargs) if x.dtype is _f64.F64 else f32_fn(x, *args, **kwargs)

    dispatch.__name__ = dispatch.__qualname__ = f32_fn.__name__
    dispatch.__doc__ = f32_fn.__doc__
    dispatch.f64 = f64_fn
    return dispatch


exp, exp2, expm1 = _with_f64(exp, _f64m.exp), _with_f64(exp2, _f64m.exp2), _with_f64(expm1, _f64m.expm1)
log, log2, log10 = _with_f64(log, _f64m.log), _with_f64(log2, _f64m.log2), _with_f64(log10, _f64m.log10)
log1p = _with_f64(log1p, _f64m.log1p)
tanh, sigmoid, softplus = (
    _with_f64(tanh, _f64m.tanh),
    _with_f64(sigmoid, _f64m.sigmoid),
    _with_f64(softplus, _f64m.softplus),
)
sinh, cosh = _with_f64(sinh, _f64m.sinh), _with_f64(cosh, _f64m.cosh)
asinh, acosh, atanh = _with_f64(asinh, _f64m.asinh), _with_f64(acosh, _f64m.acosh), _with_f64(atanh, _f64m.atanh)
sin, cos, tan = _with_f64(sin, _f64t.sin), _with_f64(cos, _f64t.cos), _with_f64(tan, _f64t.tan)
asin, acos, atan = _with_f64(asin, _f64t.asin), _with_f64(acos, _f64t.acos), _with_f64(atan, _f64t.atan)
atan2, pow = _with_f64(atan2, _f64t.atan2), _with_f64(pow, _f64m.pow)  # noqa: A001
sinc = _with_f64(sinc, _f64t.sinc)
erf, erfc, gelu = _with_f64(erf, _f64e.erf), _with_f64(erfc, _f64e.erfc), _with_f64(gelu, _f64e.gelu)
gelu_tanh = _with_f64(gelu_tanh, _f64e.gelu_tanh)
rsqrt = _with_f64(rsqrt, lambda x: _f64.div(_f64._f64(1.0), _f64.sqrt(x)))  # 1/sqrt(x), as PyTorch's double
silu64, mish64 = _f64m.silu, _f64m.mish
logit, erfinv = _with_f64(logit, _f64x.logit), _with_f64(erfinv, _f64x.erfinv)
digamma, trigamma = _with_f64(digamma, _f64x.digamma), _with_f64(trigamma, _f64x.trigamma)
lgamma = _with_f64(lgamma, _f64x.lgamma)


def _through_f64(fn):
    """``fn`` of f64special for float64 operands, and for float32 ones converted up and rounded once."""
    narrow = _f64s.float32(fn)

    # the operands spelled out: an op body's arity is its code's argument count (an op's operands)
    if fn.__code__.co_argcount == 1:

        def dispatch(x):
            return fn(x) if x.dtype is _f64.F64 else narrow(x)

    else:

        def dispatch(x, n):
            return fn(x, n) if x.dtype is _f64.F64 else narrow(x, n)

    dispatch.__name__ = dispatch.__qualname__ = fn.__name__
    dispatch.__doc__ = fn.__doc__
    dispatch.f64 = fn
    return dispatch


# torch.special's functions (f64special): one float64 routine serves float32 too
ndtr, ndtri, log_ndtr = _through_f64(_f64s.ndtr), _through_f64(_f64s.ndtri), _through_f64(_f64s.log_ndtr)
erfcx, spherical_bessel_j0 = _through_f64(_f64s.erfcx), _through_f64(_f64s.spherical_bessel_j0)
i0, i0e, i1, i1e = (_through_f64(f) for f in (_f64s.i0, _f64s.i0e, _f64s.i1, _f64s.i1e))
modified_bessel_k0 = _through_f64(_f64s.modified_bessel_k0)
modified_bessel_k1 = _through_f64(_f64s.modified_bessel_k1)
scaled_modified_bessel_k0 = _through_f64(_f64s.scaled_modified_bessel_k0)
scaled_modified_bessel_k1 = _through_f64(_f64s.scaled_modified_bessel_k1)
chebyshev_t, chebyshev_u = _through_f64(_f64s.chebyshev_t), _through_f64(_f64s.chebyshev_u)
chebyshev_v, chebyshev_w = _through_f64(_f64s.chebyshev_v), _through_f64(_f64s.chebyshev_w)
shifted_chebyshev_t = _through_f64(_f64s.shifted_chebyshev_t)
shifted_chebyshev_u = _through_f64(_f64s.shifted_chebyshev_u)
shifted_chebyshev_v = _through_f64(_f64s.shifted_chebyshev_v)
shifted_chebyshev_w = _through_f64(_f64s.shifted_chebyshev_w)
hermite_h, hermite_he = _through_f64(_f64s.hermite_h), _through_f64(_f64s.hermite_he)
laguerre_l, legendre_p = _through_f64(_f64s.laguerre_l), _through_f64(_f64s.legendre_p)
igamma, igammac = _through_f64(_f64s.igamma), _through_f64(_f64s.igammac)
bessel_j0, bessel_j1 = _through_f64(_f64s.bessel_j0), _through_f64(_f64s.bessel_j1)
bessel_y0, bessel_y1 = _through_f64(_f64s.bessel_y0), _through_f64(_f64s.bessel_y1)
airy_ai = _through_f64(_f64s.airy_ai)
_builder.float_division = div  # `a / b` on float IR values builds this division

__all__ = [
    "bf16_to_f32",
    "f32_to_bf16",
    "round_bf16",
    "abs",
    "clamp",
    "clamp_max",
    "clamp_min",
    "exp",
    "exp2",
    "expm1",
    "log",
    "log1p",
    "log2",
    "pow",
    "erf",
    "gelu",
    "gelu_tanh",
    "sigmoid",
    "silu",
    "mish",
    "softplus",
    "tanh",
    "div",
    "maximum",
    "minimum",
    "relu",
    "rsqrt",
    "sign",
    "sqrt",
    "f16_to_f32",
    "f32_to_f16",
    "f32_to_f16_in_range",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "atan2",
    "sinc",
    "sinh",
    "cosh",
    "asinh",
    "acosh",
    "atanh",
    "log10",
    "logit",
    "erfc",
    "erfinv",
    "lgamma",
    "digamma",
    "trigamma",
    "zeta",
    "polygamma",
    "ndtr",
    "ndtri",
    "log_ndtr",
    "erfcx",
    "spherical_bessel_j0",
    "i0",
    "i0e",
    "i1",
    "i1e",
    "modified_bessel_k0",
    "modified_bessel_k1",
    "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1",
    "chebyshev_t",
    "chebyshev_u",
    "chebyshev_v",
    "chebyshev_w",
    "shifted_chebyshev_t",
    "shifted_chebyshev_u",
    "shifted_chebyshev_v",
    "shifted_chebyshev_w",
    "hermite_h",
    "hermite_he",
    "laguerre_l",
    "legendre_p",
    "igamma",
    "igammac",
    "bessel_j0",
    "bessel_j1",
    "bessel_y0",
    "bessel_y1",
    "airy_ai",
]
