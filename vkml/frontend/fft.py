"""``vkml.fft``: PyTorch's ``torch.fft``, as far as a library without complex dtypes can have it.

vkml has no complex tensors (vkml/ir/types.py: ``is_complex`` is False for every dtype), so the
transforms, whose results (``fft``, ``rfft``, ...) or inputs (``irfft``, ``hfft``, ...) are complex,
raise NotImplementedError naming themselves, with PyTorch's signatures. The real helpers are here:
``fftfreq`` and ``rfftfreq`` (the sample frequencies, as PyTorch rounds them) and ``fftshift`` and
``ifftshift`` (rolls, differentiable). docs/fft.md.
"""

from __future__ import annotations

import numpy as np

from ..ir import types as T
from .creation import _dtype, tensor
from .defaults import get_default_dtype
from .shape import roll
from .sparse_coo import strided

_NO_COMPLEX = "vkml has no complex dtypes, so it has no complex FFT inputs or results (docs/fft.md)"


def _name(transform, name: str):
    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = f"``torch.fft.{name}``: not in vkml ({_NO_COMPLEX}); raises NotImplementedError."
    return transform


def _one_dim(name: str):
    def transform(input, n=None, dim=-1, norm=None, *, out=None):
        raise NotImplementedError(f"torch.fft.{name}: {_NO_COMPLEX}")

    return _name(transform, name)


def _many_dims(name: str, dim_default):
    def transform(input, s=None, dim=dim_default, norm=None, *, out=None):
        raise NotImplementedError(f"torch.fft.{name}: {_NO_COMPLEX}")

    return _name(transform, name)


_ONE = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
_TWO = ("fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2")
_N = ("fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn")
TRANSFORMS = {
    **{name: _one_dim(name) for name in _ONE},
    **{name: _many_dims(name, (-2, -1)) for name in _TWO},
    **{name: _many_dims(name, None) for name in _N},
}


def _frequencies(op: str, n, d, dtype, device, requires_grad, count: int, signed: bool):
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"{op}(): argument 'n' must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError(f"{op}: Trying to create tensor with negative dimension {n}: [{n}]")
    dtype = _dtype(dtype) or get_default_dtype()
    if not dtype.is_float:
        raise RuntimeError(f"{op} requires a floating point dtype, got {dtype.name}")
    k = np.arange(count, dtype=np.float64)
    if signed:
        k[(n + 1) // 2 :] -= n
    # PyTorch multiplies the integer frequencies by 1/(n*d), the scale rounded to the result's dtype first.
    work = np.float32 if dtype in (T.float16, T.bfloat16, T.float32) else np.float64
    with np.errstate(divide="ignore", invalid="ignore"):  # n * d == 0: inf, and 0 * inf = NaN, as PyTorch
        scale = np.asarray(np.float64(1.0) / np.float64(n * d), dtype=work)
        values = (k.astype(work) * scale).astype(work)
    return tensor(values, dtype=dtype, device=device, requires_grad=requires_grad)


def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=strided, device=None, requires_grad=False):
    """The sample frequencies of an ``n``-point FFT with sample spacing ``d``: ``[0, 1, ..., -1] / (n * d)``.

    >>> vkml.fft.fftfreq(4).tolist()
    [0.0, 0.25, -0.5, -0.25]
    """
    _check_factory("fftfreq", out, layout)
    return _frequencies("fftfreq", n, d, dtype, device, requires_grad, n, True)


def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=strided, device=None, requires_grad=False):
    """The sample frequencies of an ``n``-point real FFT: ``[0, 1, ..., n // 2] / (n * d)``.

    >>> vkml.fft.rfftfreq(4).tolist()
    [0.0, 0.25, 0.5]
    """
    _check_factory("rfftfreq", out, layout)
    return _frequencies("rfftfreq", n, d, dtype, device, requires_grad, n // 2 + 1 if n >= 0 else 0, False)


def _check_factory(op: str, out, layout) -> None:
    if out is not None:
        raise NotImplementedError(f"{op}: out= is not supported by vkml (assign the result instead)")
    if layout is not strided:
        raise NotImplementedError(f"{op}: vkml creates strided tensors only, got layout={layout!r}")


def _shift(op: str, input, dim, sign: int):
    dims = tuple(range(input.ndim)) if dim is None else ((dim,) if isinstance(dim, (int, np.integer)) else tuple(dim))
    if not dims:
        raise RuntimeError("`shifts` required")  # PyTorch's roll with no dims
    shape = input.shape
    shifts = []
    for d in dims:
        size = shape[d if -input.ndim <= d < input.ndim else _bad_dim(op, d, input.ndim)]
        shifts.append(size // 2 if sign > 0 else (size + 1) // 2)
    return roll(input, tuple(shifts), dims)


def _bad_dim(op: str, d: int, ndim: int):
    n = max(ndim, 1)
    raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")


def fftshift(input, dim=None):
    """``input`` rolled by ``size // 2`` along ``dim`` (all dims when None): the zero frequency to the middle.

    >>> vkml.fft.fftshift(vkml.fft.fftfreq(4)).tolist()
    [-0.5, -0.25, 0.0, 0.25]
    """
    return _shift("fftshift", input, dim, 1)


def ifftshift(input, dim=None):
    """The inverse of ``fftshift``: ``input`` rolled by ``(size + 1) // 2`` along ``dim``."""
    return _shift("ifftshift", input, dim, -1)


__all__ = ["fftfreq", "rfftfreq", "fftshift", "ifftshift", *TRANSFORMS]
globals().update(TRANSFORMS)
