"""The pages of ``vkml.fft``'s real helpers (vkml/frontend/fft.py; docs/fft.md). The transforms have no
page: vkml has no complex dtypes, and each raises NotImplementedError naming itself."""

from __future__ import annotations

from .page import THROUGH, OpDoc, sig, vkml

_FFT = vkml.frontend.fft
_HOST = "host: numpy, then uploaded to `device` (the device runs no kernel)"


def _freq(name: str) -> OpDoc:
    return OpDoc(
        "creation",
        (sig(f"vkml.fft.{name}", getattr(_FFT, name)),),
        getattr(_FFT, name),
        precision="PyTorch's rounding, bit for bit: the integer frequencies times 1/(n*d) rounded to the result's "
        "dtype (float32 for float16 and bfloat16, rounded once more to the dtype)",
        special="n * d == 0 gives inf and NaN (0 * inf), as PyTorch.",
        divergence="`out=` and a layout other than `vkml.strided` raise NotImplementedError.",
        gradient="A leaf: `requires_grad=True` makes it one.",
        backends=_HOST,
    )


def _shift(name: str, amount: str) -> OpDoc:
    return OpDoc(
        "movement",
        (sig(f"vkml.fft.{name}", getattr(_FFT, name)),),
        getattr(_FFT, name),
        precision=f"exact (`vkml.roll` by {amount} along each dim)",
        special="`dim=()` raises PyTorch's RuntimeError (`shifts` required).",
        gradient=THROUGH,
    )


PAGES: dict[str, OpDoc] = {
    "fftfreq": _freq("fftfreq"),
    "rfftfreq": _freq("rfftfreq"),
    "fftshift": _shift("fftshift", "size // 2"),
    "ifftshift": _shift("ifftshift", "(size + 1) // 2"),
}
