"""torch.special's functions beyond erf ... zeta (ndtr, ndtri, log_ndtr, erfcx, xlog1py, entr, the modified
Bessel functions, the orthogonal polynomials) and the multivariate log-gamma function (``vkml.mvlgamma``,
``Tensor.mvlgamma``, ``vkml.special.multigammaln``).

Each elementwise function records one registered op (vkml/ops/special.py) and takes PyTorch's ``out=``;
``SPECIAL`` is what vkml/frontend/transcendental.py adds to the ``vkml.special`` namespace. ``i0`` is a
plain op (``vkml.i0``, ``Tensor.i0``, ``Tensor.i0_`` from its OpDef).
"""

from __future__ import annotations

import math

from ..ops.registry import REGISTRY
from . import creation, mutation, type_queries
from . import operators as F
from .exports import Export
from .operators import _binary, _unary
from .out_arg import with_out

_UNARY = ("ndtr", "ndtri", "log_ndtr", "erfcx", "i0e", "i1", "i1e", "spherical_bessel_j0", "entr")
_UNARY += tuple(f"{scaled}modified_bessel_k{k}" for scaled in ("", "scaled_") for k in (0, 1))
_UNARY += ("bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "airy_ai")
_POLYNOMIALS = tuple(
    f"{kind}_polynomial_{letter}"
    for kind, letters in (
        ("chebyshev", "tuvw"),
        ("shifted_chebyshev", "tuvw"),
        ("hermite", ("h", "he")),
        ("laguerre", "l"),
        ("legendre", "p"),
    )
    for letter in letters
)


def _polynomial(name: str):
    plain = _binary(name)

    def fn(input, n):
        return plain(input, n)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{REGISTRY[name].summary} See docs/ops/{name}.md."
    return fn


def _unary_function(name: str):
    fn = _unary(name)
    fn.__doc__ = f"{REGISTRY[name].summary} See docs/ops/{name}.md."
    return fn


def _without_grad(fn, name: str):
    # torch.special.modified_bessel_i0 / _i1 are ops of their own without a derivative (their result
    # never requires grad), where torch.special.i0 / i1 have one: the same values, detached.
    def function(input):
        return fn(input.detach() if isinstance(input, F._tensor.Tensor) else input)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"{fn.__doc__} As PyTorch's, its result does not require grad."
    return function


def _incomplete_gamma(name: str, alias: str):
    plain = _binary(name)

    def fn(input, other):
        for position, (what, x) in enumerate((("input", input), ("other", other))):
            if not isinstance(x, F._tensor.Tensor):  # PyTorch takes tensors only here
                raise TypeError(f"{alias}(): argument '{what}' (position {position + 1}) must be Tensor, not "
                                f"{type(x).__name__}")  # fmt: skip
        dtype = type_queries.result_type(input, other)
        if not dtype.is_float:  # PyTorch's kernel takes float dtypes only (integers are not promoted)
            raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{mutation.torch_name(dtype)}'")
        return plain(input, other)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{REGISTRY[name].summary} See docs/ops/{name}.md."
    return fn


igamma = _incomplete_gamma("igamma", "igamma")
igammac = _incomplete_gamma("igammac", "igammac")


def mvlgamma(input, p):
    """The multivariate log-gamma function of dimension p: p(p-1)/4 log(pi) + sum_{i<p} lgamma(input - i/2).

    As PyTorch: ``p`` must be an int >= 1; the terms are summed over a last axis in PyTorch's order
    (input - (p-1)/2 first). See docs/ops/mvlgamma.md.
    """
    if type(p) is not int:
        raise TypeError(f"mvlgamma(): argument 'p' (position 2) must be int, not {type(p).__name__}")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    if not isinstance(input, F._tensor.Tensor):
        raise TypeError(f"mvlgamma(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    x = input if input.dtype.is_floating_point else input.float()  # integers: float32, as PyTorch
    steps = creation.arange(-p * 0.5 + 0.5, 0.5, 0.5, dtype=x.dtype, device=x.device)
    return F.lgamma(x.unsqueeze(-1) + steps).sum(-1) + p * (p - 1) * math.log(math.pi) / 4


def multigammaln(input, p):
    """torch.special.multigammaln: ``mvlgamma(input, p)``."""
    return mvlgamma(input, p)


i0 = F.i0  # bound in operators from the OpDef's ``public``
SPECIAL = {name: with_out(_unary_function(name), name) for name in _UNARY}
SPECIAL.update({name: with_out(_polynomial(name), name) for name in (*_POLYNOMIALS, "xlog1py")})
SPECIAL["i0"] = with_out(i0, "i0")
SPECIAL["modified_bessel_i0"] = with_out(_without_grad(i0, "modified_bessel_i0"), "modified_bessel_i0")
SPECIAL["modified_bessel_i1"] = with_out(_without_grad(SPECIAL["i1"], "modified_bessel_i1"), "modified_bessel_i1")
SPECIAL["multigammaln"] = with_out(multigammaln, "multigammaln")
SPECIAL["gammainc"] = with_out(_incomplete_gamma("igamma", "special_gammainc"), "gammainc")
SPECIAL["gammaincc"] = with_out(_incomplete_gamma("igammac", "special_gammaincc"), "gammaincc")

EXPORTS = (
    Export("mvlgamma", method=True, inplace=True),
    Export("igamma", method=True, inplace=True),
    Export("igammac", method=True, inplace=True),
)
