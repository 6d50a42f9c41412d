"""``Tensor.view(dtype)``: the tensor's bits read as another dtype, as PyTorch's ``view.dtype``.

Same element size (float32 <-> int32, float16 <-> bfloat16 <-> int16, uint8 <-> int8 <-> bool,
float64 <-> int64): one lazy node that reinterprets each element (vkml/ops/bitview.py), the
shape kept, and a view of the input's storage as in PyTorch: a write to either tensor shows in
the other. Different element sizes: the last dim is scaled by the size ratio (little-endian, as
PyTorch on every machine it runs on), with PyTorch's errors for a 0-dim tensor, a last dim whose
stride is not 1, and, going up in size, a last size, storage offset or stride that the ratio does
not divide. Such a result is built from the input's bits with shifts (lazily, the same bits on
every device) and is a new tensor: writes to it or to the input do not reach the other, where
PyTorch's share storage. The result never requires grad (PyTorch's ``view.dtype`` is not
differentiable).
"""

from __future__ import annotations

from ..graph import build as lazy
from ..ir import types as T
from ..ops.bitview import INT_OF_SIZE
from . import operators as F
from . import shape as S
from .dtype_info import refuse_no_tensor_dtype
from .mutation import link_view, torch_name


def _int_view(t, size: int):
    """``t``'s bits as the signed integer dtype of its own element size (no copy, no autograd)."""
    return F._wrap(lazy.bitcast_node(t.node, INT_OF_SIZE[size]))


def view_dtype(input, dtype: T.DType):
    """``input.view(*shape)`` (``reshape`` that must be a view) or ``input.view(dtype)`` (the bits read as ``dtype``).

    ``view(dtype)`` is PyTorch's ``view.dtype``, a bit reinterpretation, lazy like every op.

    Of one element size (float32 <-> int32, float16 <-> bfloat16 <-> int16, uint8 <-> int8 <-> bool,
    float64 <-> int64) the shape is kept and the result is a view of the input's storage: a write to
    either shows in the other. Between sizes the last dim is scaled by the ratio, bytes in
    little-endian order (PyTorch's on every machine it runs on), with PyTorch's RuntimeErrors for a
    0-dim input, a last dim whose stride is not 1, and, going up in size, a last size, storage
    offset or stride the ratio does not divide.

    >>> import vkml
    >>> vkml.tensor([1.0, -2.0]).view(vkml.int32).tolist()
    [1065353216, -1073741824]
    >>> vkml.tensor([1.0]).view(vkml.uint8).tolist()
    [0, 0, 128, 63]
    """
    refuse_no_tensor_dtype("view", dtype)
    if not isinstance(dtype, T.DType):
        raise TypeError(f"view(): argument 'dtype' must be a vkml dtype, not {dtype!r}")
    node = input.node
    src, size, new = input.dtype, input.dtype.nbytes, dtype.nbytes
    if size == new:
        out = F._wrap(lazy.bitcast_node(node, dtype))
        return out if out is input else link_view(out, input, ("dtype", dtype))
    what = f"to view {torch_name(src)} as {torch_name(dtype)} (different element sizes)"
    if input.ndim == 0:
        raise RuntimeError(f"self.dim() cannot be 0 {what}")
    strides = input.stride()
    if strides[-1] != 1:
        raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {strides[-1]}")
    *lead, last = input.shape
    if size > new:  # each element becomes `ratio` smaller ones, the lowest bits first
        ratio = size // new
        wide = _int_view(input, size)
        narrow = INT_OF_SIZE[new]
        pieces = [F.cast(wide >> (8 * new * k) if k else wide, narrow) for k in range(ratio)]
        out = S.stack(pieces, -1).reshape(*lead, last * ratio)
    else:  # `ratio` neighbours along the last dim make one element
        ratio = new // size
        if last % ratio:
            raise RuntimeError(f"self.size(-1) must be divisible by {ratio} {what}, but got {last}")
        offset = input.storage_offset()
        if offset % ratio:
            raise RuntimeError(f"self.storage_offset() must be divisible by {ratio} {what}, but got {offset}")
        for i, stride in enumerate(strides[:-1]):
            if stride % ratio:
                raise RuntimeError(f"self.stride({i}) must be divisible by {ratio} {what}, but got {stride}")
        groups = _int_view(input, size).reshape(*lead, last // ratio, ratio)
        wide = INT_OF_SIZE[new]
        mask = (1 << (8 * size)) - 1
        out = None
        for k in range(ratio):
            piece = F.cast(groups[..., k], wide) & mask
            piece = piece << (8 * size * k) if k else piece
            out = piece if out is None else out | piece
    if out.dtype is not dtype:
        out = F._wrap(lazy.bitcast_node(out.node, dtype))
    return out
