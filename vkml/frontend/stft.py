"""``vkml.stft`` and ``vkml.istft``: PyTorch's short-time Fourier transform and its inverse, built of
views (``unfold``), the window product, the fft transforms (vkml/frontend/fft.py) and, for the inverse, an
overlap-add (``fold``) divided by the window's envelope. docs/fft.md.
"""

from __future__ import annotations

import warnings

from ..tensor import Tensor
from . import complex as CX
from . import fft
from .creation import ones
from .exports import Export

_NO_WINDOW = {
    "stft": "A window was not provided. A rectangular window will be applied,which is known to cause spectral "
    "leakage. Other windows such as torch.hann_window or torch.hamming_window are recommended to reduce spectral "
    "leakage.To suppress this warning and use a rectangular window, explicitly set "
    "`window=torch.ones(n_fft, device=<device>)`.",
    "istft": "A window was not provided. A rectangular window will be applied.Please provide the same window used "
    "by stft to make the inversion lossless.To suppress this warning and use a rectangular window, explicitly set "
    "`window=torch.ones(n_fft, device=<device>)`.",
}


def _nn_functional():
    """vkml.nn.functional (pad, fold), loaded on the first transform: ``import vkml`` does not load vkml.nn."""
    from ..nn import functional  # lazy: off import vkml's path

    return functional


def _window(op: str, window, n_fft: int, win_length: int, like, device) -> Tensor:
    """The window padded on both sides to ``n_fft`` (PyTorch centres a shorter one); none is PyTorch's warning
    and a rectangular window."""
    if window is None:
        warnings.warn(_NO_WINDOW[op], UserWarning, stacklevel=3)
        window = ones(win_length, dtype=like, device=device)
    if window.ndim != 1 or window.shape[0] != win_length:
        raise RuntimeError(
            f"{op}: expected a 1D window tensor of size equal to win_length={win_length}, but got window with "
            f"size {list(window.shape)}"
        )
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        window = _nn_functional().pad(window, (left, n_fft - win_length - left))
    return window


def _lengths(op: str, n_fft: int, hop_length, win_length, length_of_input=None):
    hop = n_fft // 4 if hop_length is None else int(hop_length)
    win = n_fft if win_length is None else int(win_length)
    if n_fft <= 0 or (length_of_input is not None and n_fft > length_of_input):
        raise RuntimeError(f"{op}: expected 0 < n_fft < {length_of_input}, but got n_fft={n_fft}")
    if hop <= 0:
        raise RuntimeError(f"{op}: expected hop_length > 0, but got hop_length={hop}")
    if win <= 0 or win > n_fft:
        raise RuntimeError(f"{op}: expected 0 < win_length <= n_fft, but got win_length={win}")
    return hop, win


def stft(
    input,
    n_fft: int,
    hop_length=None,
    win_length=None,
    window=None,
    center: bool = True,
    pad_mode: str = "reflect",
    normalized: bool = False,
    onesided=None,
    return_complex=None,
):
    """PyTorch's ``stft``: frames of ``n_fft`` samples every ``hop_length`` (``n_fft // 4``), times the
    window (ones), transformed (``rfft`` when ``onesided``, the default for real inputs and windows);
    the result is ``(batch, freq, frames)``. ``center`` pads ``n_fft // 2`` on both sides with ``pad_mode``."""
    is_complex = isinstance(input, CX.ComplexTensor) or (window is not None and window.is_complex())
    if return_complex is None:
        raise RuntimeError(
            "stft requires the return_complex parameter be given for real inputs, and will further require that "
            "return_complex=True in a future PyTorch release."
        )
    if not return_complex:
        warnings.warn(
            "stft with return_complex=False is deprecated. In a future pytorch release, stft will return complex "
            "tensors for all inputs, and return_complex=False will raise an error.",
            UserWarning,
            stacklevel=2,
        )
    if input.ndim not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {input.ndim}D")
    x = input if input.ndim == 2 else input.unsqueeze(0)
    if center:
        if isinstance(x, CX.ComplexTensor):
            raise RuntimeError('"stft" with center=True is not implemented for complex inputs by vkml')
        pad = n_fft // 2
        x = _nn_functional().pad(x.unsqueeze(1), (pad, pad), mode=pad_mode).squeeze(1)
    hop, win = _lengths("stft", n_fft, hop_length, win_length, x.shape[-1])
    w = _window("stft", window, n_fft, win, x.dtype if not isinstance(x, CX.ComplexTensor) else None, x.device)
    frames = x.unfold(-1, n_fft, hop) * w  # (batch, frames, n_fft)
    onesided = (not is_complex) if onesided is None else onesided
    norm = "ortho" if normalized else "backward"
    if onesided:
        if is_complex:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        out = fft.rfft(frames, dim=-1, norm=norm)
    else:
        out = fft.fft(frames, dim=-1, norm=norm)
    out = out.transpose(-1, -2)
    if input.ndim == 1:
        out = out.squeeze(0)
    return out if return_complex else CX.view_as_real(out)


def istft(
    input,
    n_fft: int,
    hop_length=None,
    win_length=None,
    window=None,
    center: bool = True,
    normalized: bool = False,
    onesided=None,
    length=None,
    return_complex: bool = False,
):
    """PyTorch's ``istft``: each frame inverse-transformed, times the window, overlap-added and divided by
    the summed squared window (PyTorch's RuntimeError where that envelope is near 0)."""
    if not isinstance(input, CX.ComplexTensor):
        raise RuntimeError("istft requires a complex-valued input tensor")
    if input.ndim not in (2, 3):
        raise RuntimeError(f"istft: expected a tensor with 2 or 3 dimensions of complex, but got {input.ndim}D")
    hop, win = _lengths("istft", n_fft, hop_length, win_length)
    z = input if input.ndim == 3 else input.unsqueeze(0)
    freq, n_frames = z.shape[-2], z.shape[-1]
    onesided = (freq != n_fft) if onesided is None else onesided
    if onesided and freq != n_fft // 2 + 1:
        raise RuntimeError(
            f"istft: expected the frequency dimension (3rd to the last) of the input tensor to match n_fft / 2 + 1 "
            f"when onesided=True, but got {freq}"
        )
    norm = "ortho" if normalized else "backward"
    spectra = z.transpose(-1, -2)  # (batch, frames, freq)
    if onesided:
        if return_complex:
            raise RuntimeError("cannot have onesided output if window or input is complex")
        frames = fft.irfft(spectra, n=n_fft, dim=-1, norm=norm)
    else:
        frames = fft.ifft(spectra, n=n_fft, dim=-1, norm=norm)
        if not return_complex:
            frames = frames.real
    real_dtype = frames.dtype if not isinstance(frames, CX.ComplexTensor) else frames._pair.dtype
    w = _window("istft", window, n_fft, win, real_dtype, z.device)
    frames = frames * w
    total = n_fft + hop * (n_frames - 1)
    functional = _nn_functional()

    def overlap_add(values):
        folded = functional.fold(
            values.transpose(-1, -2), output_size=(1, total), kernel_size=(1, n_fft), stride=(1, hop)
        )
        return folded.reshape(values.shape[0], total)

    if isinstance(frames, CX.ComplexTensor):
        y = CX.make_complex(overlap_add(frames.real.contiguous()), overlap_add(frames.imag.contiguous()))
    else:
        y = overlap_add(frames)
    envelope = overlap_add((w * w).expand(1, n_frames, n_fft))
    start = n_fft // 2 if center else 0
    end = total - (n_fft // 2 if center else 0)
    if length is not None:
        end = start + int(length)
    end = min(end, total)
    y = y[..., start:end]
    envelope = envelope[..., start:end]
    if bool((envelope.abs() < 1e-11).any()):
        raise RuntimeError("istft: window overlap add min: 0 (the window's squared sum vanishes somewhere)")
    y = y / envelope
    if length is not None and y.shape[-1] < int(length):
        pad = int(length) - y.shape[-1]
        y = (
            CX.cat([y, CX.c_zeros(y.shape[0], pad, dtype=y.dtype, device=y.device)], -1)
            if isinstance(y, CX.ComplexTensor)
            else functional.pad(y, (0, pad))
        )
    return y if input.ndim == 3 else y.squeeze(0)


EXPORTS = (Export("stft", method=True), Export("istft", method=True))
