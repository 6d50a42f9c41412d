"""The pages of the complex-tensor functions (vkml/frontend/complex.py; docs/complex.md)."""

from __future__ import annotations

from .page import THROUGH, OpDoc, sig, vkml

_CX = vkml.frontend.complex
_PAIR = (
    "A complex tensor is a handle on its pair, a float32 (float64) tensor of its shape plus a trailing dim "
    "of 2 (docs/complex.md)."
)


def _page(name: str, kind: str, target, precision: str, special: str = "", divergence: str = "") -> OpDoc:
    return OpDoc(
        kind,
        (sig(f"vkml.{name}", target),),
        target,
        precision=precision,
        special=special or _PAIR,
        divergence=divergence,
        gradient=THROUGH,
    )


_VIEW = "exact: a view of the pair's storage (a write through either tensor shows in the other)"
PAGES: dict[str, OpDoc] = {
    "complex": _page("complex", "creation", _CX.make_complex, "exact (stacks the parts)"),
    "polar": _page("polar", "elementwise", _CX.polar, "`abs * cos(angle)`, `abs * sin(angle)`: vkml's cos and sin"),
    "view_as_real": _page("view_as_real", "movement", _CX.view_as_real, _VIEW),
    "view_as_complex": _page(
        "view_as_complex",
        "movement",
        _CX.view_as_complex,
        _VIEW,
        special="PyTorch's RuntimeErrors: a last dim that is not 2 or not of stride 1, an odd stride or offset.",
    ),
    "real": _page("real", "movement", _CX.real, _VIEW + "; a real tensor is its own real part"),
    "imag": _page(
        "imag",
        "movement",
        _CX.imag,
        _VIEW,
        special="A real tensor raises PyTorch's RuntimeError (imag is not implemented for non-complex dtypes).",
    ),
    "angle": _page(
        "angle",
        "elementwise",
        _CX.angle,
        "`atan2(imag, real)` (vkml's atan2); a real tensor gives 0 or pi",
        special="0 at 0 (pi at -0.0 + 0j, as atan2), with gradient 0 there as PyTorch's.",
    ),
    "conj": _page(
        "conj",
        "elementwise",
        _CX.conj,
        "exact (the imaginary part negated)",
        divergence="Materialised: vkml has no lazy conjugate bit, so `is_conj()` is False and `resolve_conj()` "
        "returns its input; the values are PyTorch's.",
    ),
    "conj_physical": _page("conj_physical", "elementwise", _CX.conj_physical, "exact (as `conj`)"),
    "resolve_conj": _page("resolve_conj", "movement", _CX.resolve_conj, "exact: the input itself"),
    "is_conj": _page("is_conj", "creation", _CX.is_conj, "exact: always False (no lazy conjugate bit)"),
}
