"""``vkml.fft``: PyTorch's ``torch.fft``.

Each transform along one dim is one product with its DFT matrix (made in float64 on the host, the
norm folded in, rounded once), applied to the interleaved (re, im) pairs of a complex input
(vkml/frontend/complex.py) or to a real input: lazy, fused, differentiable through the product, the
same bits on every device. The helpers ``fftfreq`` and ``rfftfreq`` (the sample frequencies, as
PyTorch rounds them) and ``fftshift`` and ``ifftshift`` (rolls, differentiable). docs/fft.md.
"""

from __future__ import annotations

import math

import numpy as np

from ..ir import types as T
from ..tensor import Tensor
from . import complex as CX
from . import operators as F
from .creation import _dtype, tensor
from .creation import zeros as creation_zeros
from .defaults import get_default_dtype
from .operators import cat
from .shape import movedim, roll
from .sparse_coo import strided

# The transforms as products with DFT matrices (docs/fft.md): the matrix of a length, direction and norm is
# made once per device and dtype (float64 on the host, rounded once) and kept in this bounded table.
_MATRICES: dict = {}
_MATRIX_CACHE = 64  # entries, and at most this many elements in all (a 1024-point matrix has 4 Mi)
_MATRIX_ELEMENTS = 16 << 20
_NORMS = ("backward", "ortho", "forward")


def _scale(norm, n: int, inverse: bool) -> float:
    if norm is None:
        norm = "backward"
    if norm not in _NORMS:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    return 1.0 / n if (norm == "backward") == inverse else 1.0


def _cos_sin(n: int, rows: int, cols: int, sign: int):
    """cos and sign * sin of 2 pi j k / n for j < rows, k < cols; exact at the quarter turns."""
    j = (np.arange(rows, dtype=np.int64)[:, None] * np.arange(cols, dtype=np.int64)[None, :]) % n
    theta = (2.0 * np.pi / n) * j
    c, s = np.cos(theta), np.sin(theta)
    quarter = (4 * j) % n == 0
    q = (4 * j) // n
    c = np.where(quarter, np.choose(q % 4, [1.0, 0.0, -1.0, 0.0]), c)
    s = np.where(quarter, np.choose(q % 4, [0.0, 1.0, 0.0, -1.0]), s)
    return c, sign * s


def _matrix(kind: str, n: int, used: int, sign: int, scale: float, real_in: bool, dtype, device):
    """The real matrix of one transform along one dim, for rows of interleaved (re, im) pairs.

    ``c2c``: ``used`` complex inputs to ``n`` complex outputs; ``r2c``: ``used`` real inputs to
    ``n // 2 + 1`` complex outputs; ``c2r``: ``used`` complex inputs (the one-sided half) to ``n`` real
    outputs, the inner bins counted twice. ``real_in`` keeps the rows of the real parts alone."""
    key = (kind, n, used, sign, scale, real_in, dtype, device)
    found = _MATRICES.get(key)
    if found is not None:
        return found
    if kind == "c2c":
        c, s = _cos_sin(n, used, n, sign)
        m = np.empty((2 * used, 2 * n))
        m[0::2, 0::2], m[0::2, 1::2], m[1::2, 0::2], m[1::2, 1::2] = c, s, -s, c
    elif kind == "r2c":
        c, s = _cos_sin(n, used, n // 2 + 1, sign)
        m = np.empty((used, 2 * (n // 2 + 1)))
        m[:, 0::2], m[:, 1::2] = c, s
    else:
        c, s = _cos_sin(n, used, n, sign)
        k = np.arange(used)
        weight = np.where((k == 0) | ((n % 2 == 0) & (k == n // 2)), 1.0, 2.0)[:, None]
        m = np.empty((2 * used, n))
        m[0::2], m[1::2] = weight * c, -weight * s
    if real_in and kind != "r2c":
        m = m[0::2]
    m = m * scale
    out = tensor(np.ascontiguousarray(m), dtype=dtype, device=device)
    _keep(key, out)
    return out


def _keep(key, value) -> None:
    """Keep ``value`` in the table, dropping the oldest entries past its bounds."""
    _MATRICES[key] = value
    while len(_MATRICES) > _MATRIX_CACHE or sum(v.numel() for v in _MATRICES.values()) > _MATRIX_ELEMENTS:
        if len(_MATRICES) == 1:
            break
        _MATRICES.pop(next(iter(_MATRICES)))


def _real_dtype(op: str, input):
    if isinstance(input, CX.ComplexTensor):
        return input._pair.dtype
    if input.dtype in (T.float32, T.float64):
        return input.dtype
    if input.dtype in (T.float16, T.bfloat16):
        raise RuntimeError(f"{op}: vkml has no complex32 (ComplexHalf): convert the input to float32 first")
    return get_default_dtype()  # integers and bools, as PyTorch: the default float


# Above this length a transform is split into smaller ones (``_four_step``) where the length has a factor:
# a direct matrix would cost (2n)^2 elements and an error growing with n.
_DIRECT_MAX = 1024


def _factor(n: int) -> int:
    """The largest divisor of ``n`` up to its square root (1 for a prime)."""
    for d in range(math.isqrt(n), 1, -1):
        if n % d == 0:
            return d
    return 1


def _along(op: str, input, dim: int, kind: str, n: int, sign: int, scale: float):
    """One transform of ``input`` (complex or real) along its dim ``dim`` (non-negative)."""
    if n > _DIRECT_MAX and _factor(n) > 1:
        return _split(op, input, dim, kind, n, sign, scale)
    return _direct(op, input, dim, kind, n, sign, scale)


def _split(op: str, input, dim: int, kind: str, n: int, sign: int, scale: float):
    """A long transform from complex-to-complex ones of a composite length (``_four_step``): a real input
    is the complex one's real part; a complex-to-real one reads the Hermitian-extended spectrum."""
    length = input.shape[dim]
    if kind == "c2r":
        half = n // 2 + 1
        pair = movedim(input._pair, dim, -2)[..., : min(length, half), :]
        if pair.shape[-2] < half:
            pad = creation_zeros(*pair.shape[:-2], half - pair.shape[-2], 2, dtype=pair.dtype, device=pair.device)
            pair = cat([pair, pad], -2)
        mirror = pair[..., 1 : n - half + 1, :].flip(-2) * tensor([1.0, -1.0], dtype=pair.dtype, device=pair.device)
        full = CX.ComplexTensor(cat([pair, mirror], -2))
        out = _four_step(op, full, full.ndim - 1, n, sign, scale)
        return movedim(out.real, -1, dim)
    out = _four_step(op, input, dim, n, sign, scale)
    return out[(slice(None),) * dim + (slice(0, n // 2 + 1),)] if kind == "r2c" else out


def _four_step(op: str, input, dim: int, n: int, sign: int, scale: float):
    """The length-``n`` complex transform along ``dim`` as ``n1`` transforms of length ``n2``, twiddles, and
    ``n2`` of length ``n1`` (Cooley-Tukey's four steps; ``n = n1 * n2``): input index ``t = t1 * n2 + t2``,
    output index ``k = k1 + n1 * k2``."""
    n1 = _factor(n)
    n2 = n // n1
    x = input.movedim(dim, -1)
    length = x.shape[-1]
    if length > n:
        x = x[..., :n]
    elif length < n:  # zeros past the input's end, as PyTorch pads
        zeros = (CX.c_zeros if isinstance(x, CX.ComplexTensor) else creation_zeros)(
            *x.shape[:-1], n - length, dtype=x.dtype, device=x.device
        )
        x = (CX.cat if isinstance(x, CX.ComplexTensor) else cat)([x, zeros], -1)
    lead = tuple(x.shape[:-1])
    x = x.reshape(*lead, n1, n2)
    y = _along(op, x, len(lead), "c2c", n1, sign, 1.0)  # over t1: (.., k1, t2)
    y = CX.mul(y, CX.ComplexTensor(_twiddles(n, n1, sign, scale, CX._REAL_OF[y.dtype], y.device)))
    z = _along(op, y, len(lead) + 1, "c2c", n2, sign, 1.0)  # over t2: (.., k1, k2)
    return z.transpose(-2, -1).reshape(*lead, n).movedim(-1, dim)


def _twiddles(n: int, n1: int, sign: int, scale: float, dtype, device):
    """exp(sign 2 pi i k1 t2 / n) * scale as (n1, n2, 2) pairs, kept with the matrices."""
    key = ("twiddles", n, n1, sign, scale, dtype, device)
    found = _MATRICES.get(key)
    if found is None:
        c, s = _cos_sin(n, n1, n // n1, sign)
        found = tensor(np.stack([c * scale, s * scale], -1), dtype=dtype, device=device)
        _keep(key, found)
    return found


def _direct(op: str, input, dim: int, kind: str, n: int, sign: int, scale: float):
    """One transform along ``dim`` as one product with its matrix."""
    is_complex = isinstance(input, CX.ComplexTensor)
    real = _real_dtype(op, input)
    length = input.shape[dim]
    out_len = n // 2 + 1 if kind == "r2c" else n
    used = min(length, n // 2 + 1 if kind == "c2r" else n)
    m = _matrix(kind, n, used, sign, scale, not is_complex, real, input.device)
    if is_complex:
        pair = movedim(input._pair, dim, -2)[..., :used, :]
        lead = tuple(pair.shape[:-2])
        flat = pair.reshape(*lead, 2 * used)
    else:
        x = input if input.dtype is real else input.to(real)
        flat = movedim(x, dim, -1)[..., :used]
        lead = tuple(flat.shape[:-1])
    y = F.matmul(flat, m)
    if kind == "c2r":
        return movedim(y, -1, dim)
    return CX.ComplexTensor(movedim(y.reshape(*lead, out_len, 2), -2, dim))


def _check_n(n) -> int:
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return int(n)


def _check_out(op: str, out) -> None:
    if out is not None:
        raise NotImplementedError(f"torch.fft.{op}: out= is not supported by vkml (assign the result instead)")


def _tensor_input(op: str, input):
    if not isinstance(input, Tensor):
        raise TypeError(f"fft_{op}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")


def _refuse_complex(op: str, input) -> None:
    if isinstance(input, CX.ComplexTensor):  # PyTorch's three texts
        got = CX._TORCH_NAMES[input.dtype.name]
        if op in ("rfft", "ihfft"):
            raise RuntimeError(f"{op} expects a real input tensor, but got {got}")
        if op.startswith("rfft"):
            raise RuntimeError(f"rfftn expects a real-valued input tensor, but got {got}")
        raise RuntimeError(f"Only supports floating-point dtypes, but found: {got}")


# kind, sign, inverse (the scale's direction), real input only, complex output
_ONE_D = {
    "fft": ("c2c", -1, False),
    "ifft": ("c2c", 1, True),
    "rfft": ("r2c", -1, False),
    "irfft": ("c2r", 1, True),
    "hfft": ("c2r", -1, False),
    "ihfft": ("r2c", 1, True),
}


def _one(op: str, input, n, dim: int, norm):
    kind, sign, inverse = _ONE_D[op]
    if kind == "r2c":
        _refuse_complex(op, input)
    d = _norm_dim(dim, input.ndim)
    length = input.shape[d]
    if n is None:
        n = 2 * (length - 1) if kind == "c2r" else length
    n = _check_n(n)
    return _along(op, input, d, kind, n, sign, _scale(norm, n, inverse))


def _norm_dim(d: int, ndim: int) -> int:
    if not -max(ndim, 1) <= d < max(ndim, 1):
        _bad_dim("fft", d, ndim)
    return d % ndim if ndim else 0


def _dims_sizes(input, s, dim, op: str, last_half: bool):
    """The dims a multi-dim transform runs over and the signal size of each (PyTorch's rules for ``s``
    and ``dim``); ``last_half``: the last size defaults to ``2 * (size - 1)`` (a C2R last dim)."""
    ndim = input.ndim
    if dim is not None:
        dims = [dim] if isinstance(dim, (int, np.integer)) else list(dim)
        dims = [_norm_dim(d, ndim) for d in dims]
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
        if s is not None and len(s) != len(dims):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
    elif s is not None:
        if len(s) > ndim:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {ndim} dimensions.")
        dims = list(range(ndim - len(s), ndim))
    else:
        dims = list(range(ndim))
    if not dims:
        raise RuntimeError(f"{op} must transform at least one axis")
    sizes = []
    for i, d in enumerate(dims):
        size = None if s is None or s[i] == -1 else int(s[i])
        if size is None:
            size = 2 * (input.shape[d] - 1) if last_half and i == len(dims) - 1 else input.shape[d]
        sizes.append(_check_n(size))
    return dims, sizes


def _many(op: str, input, s, dim, norm):
    one = op.rstrip("n2")
    kind, sign, inverse = _ONE_D[one]
    dims, sizes = _dims_sizes(input, s, dim, op, kind == "c2r")
    out = input
    if kind == "r2c":  # the real-to-complex step first, then complex steps along the other dims
        _refuse_complex(op, input)
        out = _along(op, out, dims[-1], kind, sizes[-1], sign, _scale(norm, sizes[-1], inverse))
        dims, sizes = dims[:-1], sizes[:-1]
        kind = "c2c"
    last = None
    if kind == "c2r":  # complex steps first, the complex-to-real one last
        last = (dims[-1], sizes[-1])
        dims, sizes = dims[:-1], sizes[:-1]
    for d, n in zip(dims, sizes):
        out = _along(op, out, d, "c2c", n, sign, _scale(norm, n, inverse))
    if last is not None:
        out = _along(op, out, last[0], "c2r", last[1], sign, _scale(norm, last[1], inverse))
    return out


def _transform_1d(name: str):
    def transform(input, n=None, dim=-1, norm=None, *, out=None):
        _check_out(name, out)
        _tensor_input(name, input)
        return _one(name, input, n, dim, norm)

    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = (
        f"``torch.fft.{name}``: the transform along ``dim`` as a product with its DFT matrix (docs/fft.md)."
    )
    return transform


def _transform_nd(name: str, dim_default):
    def transform(input, s=None, dim=dim_default, norm=None, *, out=None):
        _check_out(name, out)
        _tensor_input(name, input)
        return _many(name, input, s, dim, norm)

    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = f"``torch.fft.{name}``: one transform per dim in ``dim`` (docs/fft.md)."
    return transform


_ONE = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
_TWO = ("fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2")
_N = ("fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn")
TRANSFORMS = {
    **{name: _transform_1d(name) for name in _ONE},
    **{name: _transform_nd(name, (-2, -1)) for name in _TWO},
    **{name: _transform_nd(name, None) for name in _N},
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
    if isinstance(input, CX.ComplexTensor):
        return input.roll(tuple(shifts), dims)
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
