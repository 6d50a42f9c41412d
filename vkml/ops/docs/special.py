"""The pages of torch.special's composed functions (vkml/frontend/special_functions.py); the elementwise ones
(ndtr ... legendre_polynomial_p) are registered ops with pages of their own."""

from __future__ import annotations

from .page import THROUGH, OpDoc, sig, vkml

_SPECIAL = vkml.frontend.special_functions
PAGES: dict[str, OpDoc] = {
    "mvlgamma": OpDoc(
        "composite",
        (
            sig("vkml.mvlgamma", _SPECIAL.mvlgamma),
            "Tensor.mvlgamma(p)",
            "Tensor.mvlgamma_(p)",
            sig("vkml.special.multigammaln", _SPECIAL.multigammaln),
        ),
        _SPECIAL.mvlgamma,
        precision="PyTorch's formula: lgamma (≤ 1 ulp; float64 ≤ 2 ulp) of input + (-(p-1)/2, ..., -1/2, 0), "
        "summed over a last axis of p by the reduction tree, plus p(p-1)/4 log(pi) rounded once to the dtype",
        special="NaN gives NaN, +inf gives inf; as PyTorch (2.x), input <= (p-1)/2 is not an error (lgamma's "
        "values at the poles and negative arguments are summed).",
        divergence="PyTorch sums the p terms in its own order: the last bits may differ for p > 2.",
        gradient=THROUGH,
    ),
}
