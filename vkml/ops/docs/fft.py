"""The pages of ``vkml.fft`` (vkml/frontend/fft.py; docs/fft.md): the transforms and the real helpers."""

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


def _transform(name: str) -> OpDoc:
    return OpDoc(
        "matmul",
        (sig(f"vkml.fft.{name}", getattr(_FFT, name)),),
        getattr(_FFT, name),
        precision="one matrix product per transformed dim with its DFT matrix (made in float64 on the host, the "
        "norm folded in, rounded once to the dtype): matmul's order and bound with K = 2n (complex input) or n "
        "(real), so an error growing with n where PyTorch's FFT grows with log n; past 1024 points a composite "
        "length is split into shorter transforms and twiddles (Cooley-Tukey's four steps, docs/fft.md)",
        special="`n` (`s`) below the input size crop it, above it pad it with zeros (the matrix rows are "
        "dropped, nothing is padded); PyTorch's RuntimeErrors for a bad `norm`, `n < 1`, a complex input to a "
        "real-input transform.",
        divergence="`out=` raises NotImplementedError. The work is O(n^2) per transformed dim up to 1024 points.",
        gradient=THROUGH,
    )


_TRANSFORMS = [f"{p}fft{s}" for p in ("", "i", "r", "ir", "h", "ih") for s in ("", "2", "n")]


def _short_time(name: str, what: str) -> OpDoc:
    fn = getattr(vkml.frontend.stft, name)
    return OpDoc(
        "matmul",
        (sig(f"vkml.{name}", fn), f"`Tensor.{name}(...)`"),
        fn,
        precision=f"{what}; each frame's transform as `vkml.fft`'s (docs/fft.md)",
        special="PyTorch's errors (no `return_complex` for a real input to `stft`, a vanishing window envelope in "
        "`istft`) and its warning for a missing window.",
        divergence="`stft` of a complex input with `center=True` raises RuntimeError.",
        gradient=THROUGH,
    )


PAGES: dict[str, OpDoc] = {
    "stft": _short_time(
        "stft", "frames (`unfold`, `center` padding with `pad_mode`) times the window, then `rfft`/`fft`"
    ),
    "istft": _short_time(
        "istft", "`irfft`/`ifft` of each frame times the window, overlap-added (`fold`), over the squared window's sum"
    ),
    **{name: _transform(name) for name in _TRANSFORMS},
    "fftfreq": _freq("fftfreq"),
    "rfftfreq": _freq("rfftfreq"),
    "fftshift": _shift("fftshift", "size // 2"),
    "ifftshift": _shift("ifftshift", "(size + 1) // 2"),
}
