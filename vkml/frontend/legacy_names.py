"""The ``torch`` namespace's older and lower-level names that programs still call.

The layers and losses PyTorch also exposes at ``torch.*`` (``torch.conv2d``, ``torch.batch_norm``, ``torch.kl_div`` with its
integer ``reduction``), the in-place ``torch.relu_(x)`` forms, small math (``gcd``, ``heaviside``,
``frexp``, ``ldexp``, ``inner``, ``addr``, ...), the signal windows, and the legacy tensor types
(``torch.FloatTensor(2, 3)``, ``isinstance(x, torch.LongTensor)``).

Each has PyTorch's ``torch.*`` signature, which is not always ``torch.nn.functional``'s:
``torch.batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
cudnn_enabled)``, ``torch.embedding(weight, indices, ...)``, ``torch.dropout(input, p, train)``.
The layers call vkml.nn.functional, imported on first call (``import vkml`` does not load vkml.nn).

A few are computed on the host in float64 or exactly with numpy, as the factorizations of
vkml/frontend/dense_linalg.py, and say so: ``gcd``, ``lcm``, ``frexp``, ``nextafter``,
``histogram`` (PyTorch's is a CPU-only op too) and the windows; the same bits on every device.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np

from ..graph import build as lazy
from ..ir import types as T
from ..ops import grads as _grads
from ..ops.promotion import default_float
from ..tensor import Tensor
from . import autograd, creation, defaults, devices, mutation, return_types, shape, statistics, type_queries
from . import operators as F
from .caller import user_stacklevel
from .exports import Export
from .size import Size


def _nnf():
    """vkml.nn.functional, whose functions the torch.<name> spellings below call."""
    from ..nn import functional  # lazy: off import vkml's path

    return functional


def _tensor(op: str, name: str, value) -> None:
    if not isinstance(value, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(value).__name__}")


_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _reduction(op: str, reduction) -> str:
    """PyTorch's ``at::Reduction`` integer (0 none, 1 mean, 2 sum) of the ``torch.*`` losses as its name.

    The losses default to 0 (none), as PyTorch's Python binding of ``torch.kl_div`` & co. does (its schema
    says Mean, but ``torch.kl_div(a, b)`` is unreduced)."""
    if reduction in _REDUCTIONS and not isinstance(reduction, bool):
        return _REDUCTIONS[reduction]
    raise ValueError(f"{op}(): {reduction!r} is not a valid value for reduction (0 none, 1 mean, 2 sum)")


def _pool_stride(stride):
    return None if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0) else stride


# ---------------------------------------------------------------------- names of existing ops

newaxis = None


def concat(tensors, dim: int = 0, *, axis=None):
    """``torch.concat``: ``torch.cat`` (``axis=`` its alias of ``dim``, as there)."""
    return F.cat(tensors, dim, axis=axis)


def concatenate(tensors, axis: int = 0, *, dim=None):
    """``torch.concatenate``: ``torch.cat`` with numpy's argument name; PyTorch takes ``dim=`` too
    (efficient-kan's ``torch.concatenate([...], dim=0)``)."""
    return F.cat(tensors, axis, axis=dim)


def ravel(input):
    """``input`` flattened to 1-D (a view where the layout allows), as ``torch.ravel``."""
    _tensor("ravel", "input", input)
    return F.reshape(mutation.contiguous(input), (-1,))  # PyTorch's: contiguous always, a copy where it must


def typename(obj) -> str:
    """A tensor's type name (``x.type()``), else the object's ``module.qualname``, as ``torch.typename``."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if qualname is None:
        module, qualname = obj.__class__.__module__, obj.__class__.__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def is_signed(input) -> bool:
    """Whether ``input``'s dtype holds negative values (floats and signed integers), as ``torch.is_signed``."""
    _tensor("is_signed", "input", input)
    return input.dtype.is_float or input.dtype.name.startswith("int")


def is_same_size(input, other) -> bool:
    """Whether ``input`` and ``other`` have the same shape, as ``torch.is_same_size``."""
    _tensor("is_same_size", "input", input)
    _tensor("is_same_size", "other", other)
    return tuple(input.shape) == tuple(other.shape)


def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=None, requires_grad: bool = False):
    """A 0-d tensor of ``s``, in the default float dtype unless ``dtype`` is given (an int too), as
    ``torch.scalar_tensor``."""
    dtype = default_float() if dtype is None else dtype
    return creation.tensor(s, dtype=dtype, device=device, requires_grad=requires_grad)


def fill(input, value):
    """A new tensor of ``input``'s shape, dtype and device filled with ``value`` (a number or a 0-d tensor),
    as ``torch.fill``."""
    _tensor("fill", "input", input)
    if not _is_tensor(value):
        return mutation.zero_gradient_link(creation.full_like(input, value), input)
    if value.ndim:
        raise RuntimeError(f"fill only supports 0-dimension value tensor but got tensor with {value.ndim} dimensions.")
    return mutation.zero_gradient_link(F.clone(F.expand(F.cast(value, input.dtype), tuple(input.shape))), input)


def _is_tensor(value) -> bool:
    return isinstance(value, Tensor)


def detach(input):
    """``torch.detach``: ``input.detach()``."""
    return input.detach()


def split_with_sizes(input, split_sizes, dim: int = 0):
    """``torch.split_with_sizes``: ``torch.split`` with a list of sizes."""
    return shape.split(input, list(split_sizes), dim)


def unsafe_split_with_sizes(input, split_sizes, dim: int = 0):
    """``torch.unsafe_split_with_sizes``: ``torch.split_with_sizes``."""
    return shape.split(input, list(split_sizes), dim)


def unsafe_chunk(input, chunks: int, dim: int = 0):
    """``torch.unsafe_chunk``: ``torch.chunk`` (vkml's pieces are views with autograd's checks either way)."""
    return shape.chunk(input, chunks, dim)


def unsafe_split(input, split_size, dim: int = 0):
    """``torch.unsafe_split``: ``torch.split``."""
    return shape.split(input, split_size, dim)


# ---------------------------------------------------------------------- the *_copy views and the *_scatter writes


def _copied(result):
    """A view op's result as new tensors (each of a tuple), as PyTorch's ``*_copy`` functions return."""
    return tuple(F.clone(r) for r in result) if isinstance(result, (tuple, list)) else F.clone(result)


def alias_copy(input):
    """``torch.alias_copy``: a copy of ``input``."""
    return _copied(input)


def detach_copy(input):
    """``torch.detach_copy``: a detached copy of ``input``."""
    return _copied(input.detach())


def diagonal_copy(input, offset: int = 0, dim1: int = 0, dim2: int = 1):
    """``torch.diagonal_copy``: ``torch.diagonal`` as a new tensor."""
    return _copied(shape.diagonal(input, offset, dim1, dim2))


def expand_copy(input, size, *, implicit: bool = False):
    """``torch.expand_copy``: ``input.expand(size)`` as a new tensor."""
    return _copied(F.expand(input, tuple(size)))


@autograd.shown_as("NarrowCopyBackward0", autograd.input_edge)
def narrow_copy(input, dim: int, start: int, length: int):
    """``torch.narrow_copy``: ``torch.narrow`` as a new tensor."""
    if isinstance(dim, int) and isinstance(input, Tensor) and dim >= max(input.ndim, 1):
        # PyTorch's narrow_copy checks a too-large dim with an internal assert (narrow: IndexError)
        raise RuntimeError(f"narrow_copy(): Expected dim < {max(input.ndim, 1)}, but got {dim}.")
    return _copied(shape.narrow(input, dim, start, length))


def permute_copy(input, dims):
    """``torch.permute_copy``: ``torch.permute`` as a new tensor."""
    return _copied(F.permute(input, tuple(dims)))


def select_copy(input, dim: int, index: int):
    """``torch.select_copy``: ``torch.select`` as a new tensor."""
    return _copied(input.select(dim, index))


def slice_copy(input, dim: int = 0, start=None, end=None, step: int = 1):
    """``torch.slice_copy``: ``input[start:end:step]`` along ``dim`` as a new tensor."""
    return _copied(_slice(input, dim, start, end, step))


def split_copy(input, split_size, dim: int = 0):
    """``torch.split_copy``: ``torch.split``'s pieces as new tensors."""
    return _copied(shape.split(input, split_size, dim))


def split_with_sizes_copy(input, split_sizes, dim: int = 0):
    """``torch.split_with_sizes_copy``: ``torch.split_with_sizes``'s pieces as new tensors."""
    return _copied(shape.split(input, list(split_sizes), dim))


def squeeze_copy(input, dim=None):
    """``torch.squeeze_copy``: ``torch.squeeze`` as a new tensor."""
    return _copied(F.squeeze(input, dim))


def t_copy(input):
    """``torch.t_copy``: ``torch.t`` as a new tensor."""
    return _copied(shape.t(input))


def transpose_copy(input, dim0: int, dim1: int):
    """``torch.transpose_copy``: ``torch.transpose`` as a new tensor."""
    return _copied(F.transpose(input, dim0, dim1))


def unbind_copy(input, dim: int = 0):
    """``torch.unbind_copy``: ``torch.unbind``'s slices as new tensors."""
    return _copied(shape.unbind(input, dim))


def unfold_copy(input, dimension: int, size: int, step: int):
    """``torch.unfold_copy``: ``Tensor.unfold`` as a new tensor."""
    return _copied(input.unfold(dimension, size, step))


def unsqueeze_copy(input, dim: int):
    """``torch.unsqueeze_copy``: ``torch.unsqueeze`` as a new tensor."""
    return _copied(F.unsqueeze(input, dim))


def view_copy(input, size):
    """``torch.view_copy``: ``input.view(size)`` (a shape or a dtype) as a new tensor."""
    return _copied(input.view(size) if isinstance(size, T.DType) else input.view(*_as_sizes(size)))


def _as_sizes(size):
    return (size,) if isinstance(size, int) else tuple(size)


def _slice(input, dim: int, start, end, step: int):
    d = dim % input.ndim
    index = [slice(None)] * input.ndim
    index[d] = slice(start, end, step)
    return input[tuple(index)]


def _scatter(op: str, input, src, view):
    """A copy of ``input`` with ``src`` written into ``view(copy)``: PyTorch's functional ``*_scatter``."""
    _tensor(op, "input", input)
    _tensor(op, "src", src)
    out = F.clone(input)
    target = view(out)
    if tuple(target.shape) != tuple(src.shape):
        raise RuntimeError(
            f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
            f"slice size = {list(target.shape)}"
        )
    target.copy_(src)
    return out


def slice_scatter(input, src, dim: int = 0, start=None, end=None, step: int = 1):
    """A copy of ``input`` with ``src`` written into its slice ``start:end:step`` along ``dim``, as
    ``torch.slice_scatter``."""
    return _scatter("slice_scatter", input, src, lambda t: _slice(t, dim, start, end, step))


def select_scatter(input, src, dim: int, index: int):
    """A copy of ``input`` with ``src`` written at ``index`` of ``dim``, as ``torch.select_scatter``."""
    return _scatter("select_scatter", input, src, lambda t: t.select(dim, index))


def diagonal_scatter(input, src, offset: int = 0, dim1: int = 0, dim2: int = 1):
    """A copy of ``input`` with ``src`` written on its diagonal, as ``torch.diagonal_scatter``."""
    return _scatter("diagonal_scatter", input, src, lambda t: shape.diagonal(t, offset, dim1, dim2))


def adjoint(input):
    """The conjugate transpose of the last two dims (a view; real tensors: ``mT``), as ``torch.adjoint``."""
    return input.mH


def frobenius_norm(input, dim, keepdim: bool = False):
    """``torch.frobenius_norm`` (deprecated in PyTorch): ``torch.linalg.vector_norm(input, 2, dim, keepdim)``."""
    return statistics.vector_norm(input, 2, dim, keepdim)


def nuclear_norm(input, dim=None, keepdim: bool = False):
    """``torch.nuclear_norm`` (deprecated in PyTorch): the sum of singular values over ``dim`` (the last two
    dims by default; ``nuclear_norm(x, True)`` is keepdim), ``torch.linalg.matrix_norm(input, 'nuc', ...)``."""
    if isinstance(dim, bool):
        dim, keepdim = None, dim
    return statistics.matrix_norm(input, "nuc", (-2, -1) if dim is None else tuple(dim), keepdim)


def get_device(input) -> int:
    """``torch.get_device``: ``input.get_device()`` (-1 on the CPU)."""
    _tensor("get_device", "input", input)
    return input.get_device()


# ---------------------------------------------------------------------- torch.* layers and losses


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups: int = 1):
    """``torch.conv1d``: ``torch.nn.functional.conv1d``."""
    return _nnf().conv1d(input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups: int = 1):
    """``torch.conv2d``: ``torch.nn.functional.conv2d``."""
    return _nnf().conv2d(input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups: int = 1):
    """``torch.conv3d``: ``torch.nn.functional.conv3d``."""
    return _nnf().conv3d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups: int = 1, dilation=1):
    """``torch.conv_transpose1d``: ``torch.nn.functional.conv_transpose1d``."""
    return _nnf().conv_transpose1d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups: int = 1, dilation=1):
    """``torch.conv_transpose2d``: ``torch.nn.functional.conv_transpose2d``."""
    return _nnf().conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups: int = 1, dilation=1):
    """``torch.conv_transpose3d``: ``torch.nn.functional.conv_transpose3d``."""
    return _nnf().conv_transpose3d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode: bool = False):
    """``torch.max_pool1d``: ``torch.nn.functional.max_pool1d`` (an empty stride is the kernel size)."""
    return _nnf().max_pool1d(input, kernel_size, _pool_stride(stride), padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode: bool = False):
    """``torch.max_pool2d``: ``torch.nn.functional.max_pool2d`` (an empty stride is the kernel size)."""
    return _nnf().max_pool2d(input, kernel_size, _pool_stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode: bool = False):
    """``torch.max_pool3d``: ``torch.nn.functional.max_pool3d`` (an empty stride is the kernel size)."""
    return _nnf().max_pool3d(input, kernel_size, _pool_stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode: bool = False):
    """``torch.max_pool1d_with_indices``: (values, indices) of ``max_pool1d``."""
    return _nnf().max_pool1d(input, kernel_size, _pool_stride(stride), padding, dilation, ceil_mode, True)


def avg_pool1d(input, kernel_size, stride=(), padding=0, ceil_mode: bool = False, count_include_pad: bool = True):
    """``torch.avg_pool1d``: ``torch.nn.functional.avg_pool1d`` (an empty stride is the kernel size)."""
    return _nnf().avg_pool1d(input, kernel_size, _pool_stride(stride), padding, ceil_mode, count_include_pad)


def adaptive_avg_pool1d(input, output_size):
    """``torch.adaptive_avg_pool1d``: ``torch.nn.functional.adaptive_avg_pool1d``."""
    return _nnf().adaptive_avg_pool1d(input, output_size)


def adaptive_max_pool1d(input, output_size):
    """``torch.adaptive_max_pool1d``: (values, indices), as ``torch.nn.functional.adaptive_max_pool1d``
    with ``return_indices=True``."""
    return _nnf().adaptive_max_pool1d(input, output_size, True)


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    """``torch.batch_norm`` (its argument order: weight and bias first): ``torch.nn.functional.batch_norm``."""
    return _nnf().batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps: float = 1e-05, cudnn_enable: bool = True):
    """``torch.layer_norm``: ``torch.nn.functional.layer_norm``."""
    return _nnf().layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups: int, weight=None, bias=None, eps: float = 1e-05, cudnn_enabled: bool = True):
    """``torch.group_norm``: ``torch.nn.functional.group_norm``."""
    return _nnf().group_norm(input, num_groups, weight, bias, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled):
    """``torch.instance_norm`` (weight and bias first): ``torch.nn.functional.instance_norm``."""
    return _nnf().instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """``torch.rms_norm``: ``torch.nn.functional.rms_norm``."""
    return _nnf().rms_norm(input, normalized_shape, weight, eps)


def embedding(weight, indices, padding_idx: int = -1, scale_grad_by_freq: bool = False, sparse: bool = False):
    """``torch.embedding`` (weight first; padding_idx -1 is none): ``torch.nn.functional.embedding``."""
    padding = None if padding_idx is None or padding_idx == -1 else padding_idx
    return _nnf().embedding(indices, weight, padding, None, 2.0, scale_grad_by_freq, sparse)


def dropout(input, p: float, train: bool):
    """``torch.dropout`` (``train`` required): ``torch.nn.functional.dropout``."""
    return _nnf().dropout(input, p, train)


def alpha_dropout(input, p: float, train: bool):
    """``torch.alpha_dropout``: ``torch.nn.functional.alpha_dropout``."""
    return _nnf().alpha_dropout(input, p, train)


def _feature_shape_check(op: str, input) -> None:
    _tensor(op, "input", input)
    if input.ndim < 2:
        raise RuntimeError(f"Feature dropout requires at least 2 dimensions in the input, got {input.ndim}")


def feature_dropout(input, p: float, train: bool):
    """``torch.feature_dropout``: whole channels (dim 1) zeroed with probability p, the rest scaled by
    1 / (1 - p) (``dropout1d/2d/3d``'s rule for any number of dims)."""
    _feature_shape_check("feature_dropout", input)
    return _feature(input, p, train, alpha=False)


def feature_alpha_dropout(input, p: float, train: bool):
    """``torch.feature_alpha_dropout``: ``torch.nn.functional.feature_alpha_dropout``."""
    _feature_shape_check("feature_alpha_dropout", input)
    return _feature(input, p, train, alpha=True)


def _feature(input, p: float, train: bool, alpha: bool):
    if p < 0 or p > 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if alpha:
        return _nnf().feature_alpha_dropout(input, p, train)
    if not train or p == 0:
        return input
    # the mask of one value per (sample, channel), broadcast over the other dims, as PyTorch's feature noise
    noise_shape = (*input.shape[:2], *([1] * (input.ndim - 2)))
    keep = creation.ones(noise_shape, dtype=input.dtype, device=input.device)
    keep = _nnf().dropout(keep, p, True)
    return F.mul(input, keep)


def _inplace_layer(name: str, fn):
    def layer_(input, *args, **kwargs):
        return mutation.inplace(input, name, lambda t, *a: fn(t, *a, **kwargs), *args)

    layer_.__name__ = name
    layer_.__doc__ = f"``torch.{name}``: ``torch.{name[:-1]}`` written into ``input``, which is returned."
    return layer_


dropout_ = _inplace_layer("dropout_", dropout)
alpha_dropout_ = _inplace_layer("alpha_dropout_", alpha_dropout)
feature_dropout_ = _inplace_layer("feature_dropout_", feature_dropout)
feature_alpha_dropout_ = _inplace_layer("feature_alpha_dropout_", feature_alpha_dropout)


def pixel_shuffle(input, upscale_factor: int):
    """``torch.pixel_shuffle``: ``torch.nn.functional.pixel_shuffle``."""
    return _nnf().pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input, downscale_factor: int):
    """``torch.pixel_unshuffle``: ``torch.nn.functional.pixel_unshuffle``."""
    return _nnf().pixel_unshuffle(input, downscale_factor)


def channel_shuffle(input, groups: int):
    """``torch.channel_shuffle``: ``torch.nn.functional.channel_shuffle``."""
    return _nnf().channel_shuffle(input, groups)


def prelu(input, weight):
    """``torch.prelu``: ``torch.nn.functional.prelu``."""
    return _nnf().prelu(input, weight)


def selu(input):
    """``torch.selu``: ``torch.nn.functional.selu``."""
    return _nnf().selu(input)


def celu(input, alpha: float = 1.0):
    """``torch.celu``: ``torch.nn.functional.celu``."""
    return _nnf().celu(input, alpha)


def rrelu(input, lower: float = 0.125, upper: float = 1.0 / 3.0, training: bool = False, generator=None):
    """``torch.rrelu``: ``torch.nn.functional.rrelu`` (a ``generator`` other than None is not supported)."""
    if generator is not None:
        raise NotImplementedError("rrelu(): the generator argument is not supported by vkml; seed vkml instead")
    return _nnf().rrelu(input, lower, upper, training)


def threshold(input, threshold: float, value: float):  # noqa: A002 - PyTorch's argument name
    """``torch.threshold``: ``torch.nn.functional.threshold``."""
    return _nnf().threshold(input, threshold, value)


def hardshrink(input, lambd: float = 0.5):
    """``torch.hardshrink``: ``torch.nn.functional.hardshrink``."""
    return _nnf().hardshrink(input, lambd)


selu_ = _inplace_layer("selu_", selu)
celu_ = _inplace_layer("celu_", celu)
rrelu_ = _inplace_layer("rrelu_", rrelu)
threshold_ = _inplace_layer("threshold_", threshold)


def bilinear(input1, input2, weight, bias=None):
    """``torch.bilinear``: ``torch.nn.functional.bilinear``."""
    return _nnf().bilinear(input1, input2, weight, bias)


def cosine_similarity(x1, x2, dim: int = 1, eps: float = 1e-08):
    """``torch.cosine_similarity``: ``torch.nn.functional.cosine_similarity``."""
    return _nnf().cosine_similarity(x1, x2, dim, eps)


def pairwise_distance(x1, x2, p: float = 2.0, eps: float = 1e-06, keepdim: bool = False):
    """``torch.pairwise_distance``: ``torch.nn.functional.pairwise_distance``."""
    return _nnf().pairwise_distance(x1, x2, p, eps, keepdim)


def pdist(input, p: float = 2.0):
    """``torch.pdist``: ``torch.nn.functional.pdist``."""
    return _nnf().pdist(input, p)


def kl_div(input, target, reduction: int = 0, *, log_target: bool = False):
    """``torch.kl_div`` (``reduction`` an integer: 0 none, 1 mean, 2 sum): ``torch.nn.functional.kl_div``."""
    with warnings.catch_warnings():  # PyTorch's torch.kl_div does not warn about 'mean' (F.kl_div does)
        warnings.simplefilter("ignore", UserWarning)
        return _nnf().kl_div(input, target, reduction=_reduction("kl_div", reduction), log_target=log_target)


def margin_ranking_loss(input1, input2, target, margin: float = 0.0, reduction: int = 0):
    """``torch.margin_ranking_loss`` (integer ``reduction``): ``torch.nn.functional.margin_ranking_loss``."""
    red = _reduction("margin_ranking_loss", reduction)
    return _nnf().margin_ranking_loss(input1, input2, target, margin, reduction=red)


def cosine_embedding_loss(input1, input2, target, margin: float = 0.0, reduction: int = 0):
    """``torch.cosine_embedding_loss`` (integer ``reduction``): ``torch.nn.functional.cosine_embedding_loss``."""
    red = _reduction("cosine_embedding_loss", reduction)
    return _nnf().cosine_embedding_loss(input1, input2, target, margin, reduction=red)


def hinge_embedding_loss(input, target, margin: float = 1.0, reduction: int = 0):
    """``torch.hinge_embedding_loss`` (integer ``reduction``): ``torch.nn.functional.hinge_embedding_loss``."""
    red = _reduction("hinge_embedding_loss", reduction)
    return _nnf().hinge_embedding_loss(input, target, margin, reduction=red)


def triplet_margin_loss(
    anchor,
    positive,
    negative,
    margin: float = 1.0,
    p: float = 2.0,
    eps: float = 1e-06,
    swap: bool = False,
    reduction: int = 0,
):
    """``torch.triplet_margin_loss`` (integer ``reduction``): ``torch.nn.functional.triplet_margin_loss``."""
    red = _reduction("triplet_margin_loss", reduction)
    return _nnf().triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction=red)


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    """``torch.poisson_nll_loss`` (every argument required, integer ``reduction``):
    ``torch.nn.functional.poisson_nll_loss``."""
    red = _reduction("poisson_nll_loss", reduction)
    return _nnf().poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=red)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction: int = 0):
    """``torch.binary_cross_entropy_with_logits`` (pos_weight before reduction, an integer):
    ``torch.nn.functional.binary_cross_entropy_with_logits``."""
    red = _reduction("binary_cross_entropy_with_logits", reduction)
    return _nnf().binary_cross_entropy_with_logits(input, target, weight, reduction=red, pos_weight=pos_weight)


def ctc_loss(
    log_probs, targets, input_lengths, target_lengths, blank: int = 0, reduction: int = 0, zero_infinity: bool = False
):
    """``torch.ctc_loss`` (integer ``reduction``): ``torch.nn.functional.ctc_loss``."""
    red = _reduction("ctc_loss", reduction)
    return _nnf().ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, red, zero_infinity)


# ---------------------------------------------------------------------- in-place torch.<op>_(input, ...)

# torch.<name>_(input, *args) is input.<name>_(*args) for these Tensor methods
INPLACE_FUNCTIONS = (
    "abs acos acosh arccos arccosh arcsin arcsinh arctan arctanh asin asinh atan atanh ceil clamp clamp_max "
    "clamp_min clip cos cosh deg2rad erf erfc exp exp2 expm1 floor frac log log10 log1p log2 logit "
    "nan_to_num neg negative rad2deg reciprocal relu round rsqrt sigmoid sin sinc sinh sqrt square tan tanh "
    "trunc xlogy zero fill index_put gcd lcm ldexp i0 fix"
).split()


def _inplace_function(name: str):
    def fn(input, *args, **kwargs):
        _tensor(name, "input", input)
        return getattr(input, name)(*args, **kwargs)

    fn.__name__ = name
    fn.__doc__ = f"``torch.{name}(input, ...)``: ``input.{name}(...)``, which writes into ``input`` and returns it."
    return fn


# ---------------------------------------------------------------------- math


def _host_values(t) -> np.ndarray:
    return t.detach()._host_values()


def _integer_pair(op: str, input, other):
    _tensor(op, "input", input)
    _tensor(op, "other", other)  # PyTorch's gcd and lcm take no Python number
    dtype = type_queries.result_type(input, other)
    # PyTorch checks the promoted dtype: a bool operand with an int one is an int gcd
    if dtype.is_float or dtype is T.bool_:  # PyTorch's NotImplementedError (a RuntimeError)
        raise NotImplementedError(f"\"{op}_cpu\" not implemented for '{mutation.torch_name(dtype)}'")
    return input, other, dtype


def _on_host_integer(op: str, fn, input, other):
    input, other, dtype = _integer_pair(op, input, other)
    a, b = np.broadcast_arrays(_host_values(input), _host_values(other))
    np_dtype = np.dtype(dtype.name)
    with np.errstate(over="ignore"):
        out = fn(a.astype(np_dtype), b.astype(np_dtype)).astype(np_dtype)
    return creation.tensor(np.array(out, order="C"), dtype=dtype, device=input.device)


def gcd(input, other):
    """The greatest common divisor of integers (nonnegative; gcd(0, 0) = 0), as ``torch.gcd``; computed exactly
    on the host (numpy)."""
    return _on_host_integer("gcd", np.gcd, input, other)


def lcm(input, other):
    """The least common multiple of integers (nonnegative), as ``torch.lcm``; computed exactly on the host
    (numpy; an overflow wraps, as PyTorch's)."""
    return _on_host_integer("lcm", np.lcm, input, other)


def heaviside(input, values):
    """The Heaviside step: 0 where input < 0, ``values`` where input == 0, 1 where input > 0 (NaN input
    gives 0), as ``torch.heaviside``; both dtypes must agree, as PyTorch's."""
    _tensor("heaviside", "input", input)
    _tensor("heaviside", "values", values)
    if input.dtype is not values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    step = F.cast(F.gt(input, 0), input.dtype)
    return F.where(F.eq(input, 0), values, step)


def frexp(input):
    """(mantissa, exponent) with input = mantissa · 2^exponent and 0.5 <= |mantissa| < 1 (0, inf, NaN kept,
    exponent 0), as ``torch.frexp``: exact, on the host (numpy); the exponent is int32."""
    _tensor("frexp", "input", input)
    if not input.dtype.is_float:
        raise RuntimeError(
            "torch.frexp() only supports floating-point dtypes, but got " + mutation.torch_name(input.dtype)
        )
    values = _host_values(input)
    if input.dtype is T.bfloat16:
        values = values.astype(np.float32)
    values = np.asarray(values).reshape(tuple(input.shape))
    exponent = np.asarray(np.frexp(values)[1]).astype(np.int32)
    # mantissa = input * 2^-exponent, exact (a power of two), and differentiable as PyTorch's
    # (grad / 2^exponent); two factors, so that neither overflows for subnormal or huge inputs
    half = -exponent // 2
    np_dtype = np.float32 if input.dtype is T.bfloat16 else values.dtype
    scales = [np.ldexp(np.ones_like(values, dtype=np_dtype), k).astype(np_dtype) for k in (half, -exponent - half)]
    m = input
    for scale in scales:
        m = F.mul(m, F.cast(creation.tensor(scale.copy(), device=input.device), input.dtype))
    e = creation.tensor(exponent.copy(), dtype=T.int32, device=input.device)
    return return_types.frexp(m, e)


def ldexp(input, other):
    """input · 2^other, as ``torch.ldexp``.

    A float tensor scaled by an integer tensor keeps its dtype and is exact (one rounding, where the result
    is subnormal: PyTorch's std::ldexp path; float32 and narrower on the device, float64 on the host);
    otherwise PyTorch's formula
    ``input * pow(2.0, other)``.

    >>> vkml.ldexp(vkml.tensor([1.5, 3.0]), vkml.tensor([2, -1])).tolist()
    [6.0, 1.5]
    """
    _tensor("ldexp", "input", input)
    if isinstance(other, Tensor) and input.dtype.is_float and not (other.dtype.is_float or other.dtype.is_complex):
        return _ldexp_exact(input, other)
    if not _is_tensor(other):
        return F.mul(input, F.pow(2.0, other))
    with autograd.no_grad():
        out = F.mul(input, F.pow(2.0, other))
    return autograd.record("ldexp", (input, other), out)


def _ldexp_exact(input, other):
    # 2^other itself may overflow or underflow where input · 2^other does not (0.5 · 2^128 in float32).
    # A float32/float16/bfloat16 input: the product in float64 is exact (2^k built from its exponent
    # bits, k clipped to a range where every such product is a normal double and the clip changes no
    # result), and the cast back rounds once — lazy, on any device. float64: exact on the host.
    if input.dtype is not T.float64:
        with autograd.no_grad():
            k = F.clamp(F.cast(other, T.int64), -_LDEXP_CLIP, _LDEXP_CLIP)
            power = ((k + 1023) << 52).view(T.float64)  # lazy: a bit cast, no copy
            out = F.cast(F.mul(F.cast(input, T.float64), power), input.dtype)
        return autograd.record("ldexp", (input, other), out, {})
    x = np.asarray(_host_values(input)).reshape(tuple(input.shape))
    k = np.asarray(_host_values(other)).astype(np.int64).reshape(tuple(other.shape))
    k = np.clip(k, -(1 << 20), 1 << 20)  # beyond any float's range: the same 0 or inf, no int32 wrap
    with np.errstate(all="ignore"):
        values = np.ldexp(*np.broadcast_arrays(x, k.astype(np.int32)))
    out = creation.tensor(np.array(values, order="C"), dtype=input.dtype, device=input.device)
    return autograd.record("ldexp", (input, other), out, {})


# |k| beyond which a float32 (or narrower) input's input · 2^k is 0 or inf (2^-149 · 2^400 overflows float32,
# 2^128 · 2^-400 underflows it), and 2^(±400) · 2^(±128) is a normal double
_LDEXP_CLIP = 400


def _grad_ldexp(c):
    """PyTorch's LdexpBackward0. An integer exponent (the exact path): ``grad · pow(2, other)`` with an
    integer 2, so an exponent below 0 gives 0, as PyTorch's. A float exponent: ``grad · 2^other`` for the
    input, ``(grad · result) · ln 2`` for the exponent (each product rounded in the result's dtype)."""
    input, other = c.inputs
    if not other.dtype.is_float:
        return c.F.mul(c.g, c.F.pow(2, other)).to(input.dtype), None
    g = c.g
    g_input = F.mul(g, F.pow(2.0, other)) if c.needs[0] else None
    g_other = F.mul(F.mul(g, c.output), math.log(2.0)) if c.needs[1] else None
    return g_input, g_other


_grads.RULES["ldexp"] = _grad_ldexp


def nextafter(input, other):
    """The next float after ``input`` towards ``other``, as ``torch.nextafter``: exact, on the host (numpy)."""
    _tensor("nextafter", "input", input)
    _tensor("nextafter", "other", other)
    # PyTorch promotes the operands (an int tensor with a float one, float16 with float32, a 0-d
    # float64 with float32 tensors) and refuses an integer result dtype
    dtype = type_queries.result_type(input, other)
    if not dtype.is_float:  # PyTorch's class and words
        raise NotImplementedError(f"\"nextafter_cpu\" not implemented for '{mutation.torch_name(dtype)}'")
    if dtype is T.bfloat16:
        values = _nextafter_bfloat16(_host_values(input.to(dtype)), _host_values(other.to(dtype)))
    else:
        np_dtype = np.dtype(dtype.name)
        a, b = np.broadcast_arrays(_host_values(input).astype(np_dtype), _host_values(other).astype(np_dtype))
        values = np.where(a == b, b, np.nextafter(a, b))  # numpy's float16 gives a, not b (-0.0 towards 0.0)
    out = creation.tensor(np.array(values, order="C"), dtype=dtype, device=input.device)
    return autograd.record("nextafter", (input, other), out, {})


def _nextafter_bfloat16(a, b) -> np.ndarray:
    """nextafter over bfloat16 values held as float32 (numpy has no bfloat16): a step of one in the upper
    16 bits of a's float32 pattern, the smallest subnormal with b's sign from zero, b where they are equal."""
    a, b = np.broadcast_arrays(np.asarray(a, np.float32), np.asarray(b, np.float32))
    bits = (a.view(np.uint32) >> 16).astype(np.int32)
    away = (a < b) == (a > 0)  # a step away from zero grows the magnitude's bit pattern
    stepped = np.where(away, bits + 1, bits - 1)
    stepped = np.where(a == 0, np.where(b > 0, 0x0001, 0x8001), stepped)
    out = (stepped.astype(np.uint32) << 16).view(np.float32)
    out = np.where(a == b, b, out)
    return np.where(np.isnan(a) | np.isnan(b), np.float32(np.nan), out)


def _grad_nextafter(c):
    # PyTorch's rule: the gradient passes to input where input != other (where they are equal the
    # result is other itself), other gets zeros
    x, y = c.inputs
    return c.F.where(c.F.eq(x, y), 0.0, c.g), (c.F.zeros_like(c.g) if c.needs[1] else None)


_grads.RULES["nextafter"] = _grad_nextafter


def inner(input, other):
    """The inner product over the last dims (0-d operands multiply), as ``torch.inner``."""
    _tensor("inner", "input", input)
    _tensor("inner", "other", other)
    if input.ndim == 0 or other.ndim == 0:
        return F.mul(input, other)
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(
            f"inner() the last dimension must match on both input tensors but got shapes {list(input.shape)} "
            f"and {list(other.shape)}"
        )
    return shape.tensordot(input, other, ([input.ndim - 1], [other.ndim - 1]))


def vdot(input, other):
    """The dot product of two 1-D tensors of one dtype, as ``torch.vdot`` (real tensors: ``dot``)."""
    return shape.dot(input, other)


def addr(input, vec1, vec2, *, beta=1, alpha=1):
    """beta · input + alpha · outer(vec1, vec2), as ``torch.addr`` (beta 0 ignores input, NaN included)."""
    _tensor("addr", "input", input)
    if shape._rounds_once(input, vec1, vec2) and vec1.ndim == 1 and vec2.ndim == 1 and _plain_scalar(beta, alpha):
        return _half_addr(input, vec1, vec2, beta, alpha)
    return shape._scaled_sum("addr", input, shape.outer(vec1, vec2), beta, alpha)


def _plain_scalar(*values) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def _half_addr(input, vec1, vec2, beta, alpha):
    """PyTorch's float16/bfloat16 addr kernel: ``beta · input + alpha · vec1 · vec2`` op for op in the dtype,
    beta and alpha rounded to it; its backward (derivatives.yaml) is ``grad · beta`` and
    ``(grad @ vec2) · alpha``, ``(gradᵀ @ vec1) · alpha``."""
    dt = input.dtype

    def scalar(v):
        return creation.tensor(float(v), dtype=dt, device=input.device)

    product = (scalar(alpha) * F.unsqueeze(vec1.detach(), 1)) * F.unsqueeze(vec2.detach(), 0)
    out = product if beta == 0 else scalar(beta) * input.detach() + product
    if not (autograd.is_grad_enabled() and any(t.requires_grad for t in (input, vec1, vec2))):
        return out
    return autograd.record("half_addr", (input, vec1, vec2), out, {"beta": beta, "alpha": alpha})


def _grad_half_addr(c):
    input, vec1, vec2 = c.inputs
    g, beta, alpha = c.g, c.attrs["beta"], c.attrs["alpha"]
    grad_input = (g if beta == 1 else g * beta) if c.needs[0] else None
    grad_vec1 = (g @ vec2) * alpha if c.needs[1] else None
    grad_vec2 = (g.transpose(0, 1) @ vec1) * alpha if c.needs[2] else None
    return grad_input, grad_vec1, grad_vec2


_grads.RULES["half_addr"] = _grad_half_addr


def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta · input + alpha · the sum over the batch of batch1[i] @ batch2[i], as ``torch.addbmm``."""
    _tensor("addbmm", "input", input)
    if shape._rounds_once(input, batch1, batch2) and 0 < batch1.shape[0] <= _HALF_ADDBMM_BATCHES:
        # PyTorch's addbmm is addmm_ once per batch into the float16/bfloat16 result: it rounds after each
        out, scale = input, beta
        for i in range(batch1.shape[0]):
            out = shape.addmm(out, batch1[i], batch2[i], beta=scale, alpha=alpha)
            scale = 1
        return out
    return shape._scaled_sum("addbmm", input, F.sum(shape.bmm(batch1, batch2), 0), beta, alpha)


# up to this many batches a half addbmm rounds after each as PyTorch's; more sum in float32 (one op)
_HALF_ADDBMM_BATCHES = 64


def diagflat(input, offset: int = 0):
    """A 2-D tensor with ``input`` flattened on its ``offset`` diagonal, as ``torch.diagflat``."""
    _tensor("diagflat", "input", input)
    return shape.diag(F.reshape(input, (-1,)), offset)


def dsplit(input, indices_or_sections):
    """``input`` split along dim 2, as ``torch.dsplit`` (``tensor_split`` of a tensor of 3 or more dims)."""
    _tensor("dsplit", "input", input)
    if input.ndim < 3:
        raise RuntimeError(
            f"torch.dsplit requires a tensor with at least 3 dimension, but got a tensor with {input.ndim} dimensions!"
        )
    return shape._even_split("dsplit", input, indices_or_sections, 2)


def unravel_index(indices, shape):  # noqa: F811 - PyTorch's argument name (the module is not used here)
    """The coordinates of flat ``indices`` in a tensor of ``shape``, one int64 tensor per dim, as
    ``torch.unravel_index``."""
    if not isinstance(indices, Tensor):
        indices = creation.tensor(indices)
    if indices.dtype.is_float or indices.dtype is T.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype.name}")
    if not isinstance(shape, (int, list, tuple)):  # a tensor of sizes too: PyTorch's TypeError
        raise TypeError(f"expected 'shape' to be int or sequence of ints, but got {type(shape)}")
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    for d in dims:
        if type(d) is not int:
            raise TypeError(f"expected 'shape' sequence to only contain ints, but got {type(d)}")
    if any(d < 0 for d in dims):
        raise ValueError("'shape' cannot have negative values, but got " + str(dims))
    total = math.prod(dims)
    if bool(F.lt(indices, -total).any()) or bool(F.ge(indices, total).any()):
        raise ValueError(f"'indices' must be in range [{-total}, {total - 1}]")
    flat = F.cast(indices, T.int64)
    flat = F.where(F.lt(flat, 0), F.add(flat, total), flat)
    out = []
    stride = total
    for d in dims:
        stride //= d if d else 1
        out.append((flat // stride) % d if d else F.mul(flat, 0))
    return tuple(out)


def combinations(input, r: int = 2, with_replacement: bool = False):
    """The length-``r`` combinations of a 1-D tensor's elements as rows, in ``itertools`` order, as
    ``torch.combinations`` (a gather of ``input``: differentiable)."""
    _tensor("combinations", "input", input)
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return creation.tensor([], dtype=input.dtype, device=input.device)
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(pick(range(input.shape[0]), r))
    if not rows:
        return F.reshape(creation.tensor([], dtype=input.dtype, device=input.device), (0, r))
    index = creation.tensor(rows, dtype=T.int64, device=input.device)
    return F.reshape(input.index_select(0, F.reshape(index, (-1,))), (len(rows), r))


def histogram(input, bins=100, *, range=None, weight=None, density: bool = False):  # noqa: A002
    """(hist, bin_edges) of ``input``'s values, as ``torch.histogram`` (a CPU-only op in PyTorch): ``bins`` a
    count over ``range`` (the data's min and max by default) or a 1-D tensor of edges; on the host (numpy's
    rule, which is PyTorch's), in ``input``'s float dtype."""
    _tensor("histogram", "input", input)
    if not input.dtype.is_float:
        raise RuntimeError(
            f"torch.histogram: input tensor and bins tensors should have the same dtype, got {input.dtype.name}"
        )
    values = _host_values(input).reshape(-1).astype(np.float64)
    edges = _host_values(bins).astype(np.float64) if _is_tensor(bins) else int(bins)
    w = None if weight is None else _host_values(weight).reshape(-1).astype(np.float64)
    if range is not None and not _is_tensor(bins):
        lo, hi = float(range[0]), float(range[1])
    elif not _is_tensor(bins):
        lo, hi = (float(values.min()), float(values.max())) if values.size else (0.0, 1.0)  # numpy's [0, 1]
    if not _is_tensor(bins):
        if lo > hi:
            raise RuntimeError(f"torch.histogram: min should not exceed max, but got min {lo} max {hi}")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5  # numpy's and PyTorch's widening of an empty range
        np_dtype = np.dtype(input.dtype.name) if input.dtype.name != "bfloat16" else np.float32
        edges = np.linspace(np.asarray(lo, np_dtype), np.asarray(hi, np_dtype), edges + 1, dtype=np_dtype).astype(
            np.float64
        )
    hist, edges = np.histogram(values, bins=edges, weights=w, density=density)
    hist_t = F.cast(creation.tensor(hist.astype(np.float64), dtype=T.float64, device=input.device), input.dtype)
    edge_t = F.cast(creation.tensor(edges, dtype=T.float64, device=input.device), input.dtype)
    return return_types.histogram(hist_t, edge_t)


def gradient(input, *, spacing=1, dim=None, edge_order: int = 1):
    """The derivative of ``input`` sampled on a grid, one tensor per dim, as ``torch.gradient`` (numpy's rule):
    central differences inside, one-sided differences of order ``edge_order`` (1 or 2) at the ends;
    ``spacing`` a number, one number per dim, or one coordinate tensor per dim (unevenly spaced samples)."""
    op = "torch.gradient"
    _tensor(op, "input", input)
    if edge_order not in (1, 2):
        raise RuntimeError(f"{op} only supports edge_order=1 and edge_order=2.")
    if spacing is None:  # PyTorch's default, spelled out by its OpInfo samples
        spacing = 1
    dims = list(range(input.ndim)) if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    dims = [lazy.normalize_dim(op, d, input.ndim) for d in dims]
    for d in dims:
        if dims.count(d) > 1:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    if isinstance(spacing, (list, tuple)):
        if len(spacing) != len(dims) and dim is None:  # PyTorch's words differ when no dim is given
            raise RuntimeError(
                f"{op} expected spacing to be unspecified, a scalar, or a list of length equal to 'self.dim() = "
                f"{input.ndim}', since dim argument was not given, but got a list of length {len(spacing)}"
            )
        if len(spacing) != len(dims):
            raise RuntimeError(
                f"{op} expected spacing to be unspecified, a scalar or it's spacing and dim arguments to have the "
                f"same length, but got a spacing argument of length {len(spacing)} and a dim argument of length "
                f"{len(dims)}."
            )
        spacings = list(spacing)
    else:
        spacings = [spacing] * len(dims)
    x = input if input.dtype.is_float else F.cast(input, default_float())
    out = []
    for d, h in zip(dims, spacings):
        n = x.shape[d]
        if n < edge_order + 1:
            raise RuntimeError(f"{op} expected each dimension size to be at least edge_order+1")
        out.append(_gradient_along(x, d, n, h, edge_order))
    return tuple(out)


def _gradient_along(x, d: int, n: int, h, edge_order: int):
    def part(start, length):
        return shape.narrow(x, d, start, length)

    if _is_tensor(h):  # coordinates: numpy's second-order formula for uneven samples
        view = [1] * x.ndim
        dx = F.sub(shape.narrow(h, 0, 1, n - 1), shape.narrow(h, 0, 0, n - 1))
        dx1, dx2 = shape.narrow(dx, 0, 0, n - 2), shape.narrow(dx, 0, 1, n - 2)
        view[d] = n - 2

        def shaped(t):
            return F.reshape(t, tuple(view))

        a = shaped(F.neg(F.div(dx2, F.mul(dx1, F.add(dx1, dx2)))))
        b = shaped(F.div(F.sub(dx2, dx1), F.mul(dx1, dx2)))
        c = shaped(F.div(dx1, F.mul(dx2, F.add(dx1, dx2))))
        inner = F.add(F.add(F.mul(a, part(0, n - 2)), F.mul(b, part(1, n - 2))), F.mul(c, part(2, n - 2)))
        if edge_order == 1:
            first = F.div(F.sub(part(1, 1), part(0, 1)), dx[0])
            last = F.div(F.sub(part(n - 1, 1), part(n - 2, 1)), dx[n - 2])
        else:
            e1, e2 = dx[0], dx[1]
            first = F.add(
                F.add(
                    F.mul(part(0, 1), F.neg(F.div(F.add(F.mul(e1, 2), e2), F.mul(e1, F.add(e1, e2))))),
                    F.mul(part(1, 1), F.div(F.add(e1, e2), F.mul(e1, e2))),
                ),
                F.mul(part(2, 1), F.neg(F.div(e1, F.mul(e2, F.add(e1, e2))))),
            )
            e1, e2 = dx[n - 3], dx[n - 2]
            last = F.add(
                F.add(
                    F.mul(part(n - 3, 1), F.div(e2, F.mul(e1, F.add(e1, e2)))),
                    F.mul(part(n - 2, 1), F.neg(F.div(F.add(e2, e1), F.mul(e1, e2)))),
                ),
                F.mul(part(n - 1, 1), F.div(F.add(F.mul(e2, 2), e1), F.mul(e2, F.add(e1, e2)))),
            )
        return F.cat([first, inner, last], d)
    # PyTorch's ops in its order (each rounds in float16): ((x[2:] - x[:-2]) / h) / 2 inside, and for
    # edge_order 2 (-1.5·x0 + 2·x1 - 0.5·x2) / h and (0.5·x[-3] - 2·x[-2] + 1.5·x[-1]) / h at the ends
    inner = F.div(F.div(F.sub(part(2, n - 2), part(0, n - 2)), h), 2.0)
    if edge_order == 1:
        first = F.div(F.sub(part(1, 1), part(0, 1)), h)
        last = F.div(F.sub(part(n - 1, 1), part(n - 2, 1)), h)
    else:
        first = F.div(F.sub(F.add(F.mul(part(0, 1), -1.5), F.mul(part(1, 1), 2.0)), F.mul(part(2, 1), 0.5)), h)
        last = F.div(
            F.add(F.sub(F.mul(part(n - 3, 1), 0.5), F.mul(part(n - 2, 1), 2.0)), F.mul(part(n - 1, 1), 1.5)), h
        )
    return F.cat([first, inner, last], d)


def convolution(input, weight, bias, stride, padding, dilation, transposed: bool, output_padding, groups: int):
    """``torch.convolution``: ``conv{1,2,3}d`` or ``conv_transpose{1,2,3}d`` by the input's dims and ``transposed``."""
    _tensor("convolution", "input", input)
    dims = input.ndim - 2
    if dims not in (1, 2, 3):
        raise RuntimeError(f"convolution: expected a 3-D, 4-D or 5-D input, got {input.ndim}-D")
    nnf = _nnf()
    if transposed:
        fn = getattr(nnf, f"conv_transpose{dims}d")
        return fn(input, weight, bias, stride, padding, output_padding, groups, dilation)
    return getattr(nnf, f"conv{dims}d")(input, weight, bias, stride, padding, dilation, groups)


def conv_tbc(input, weight, bias, pad: int = 0):
    """``torch.conv_tbc``: a 1-d convolution of a (time, batch, channels) input with a (width, in, out) weight."""
    _tensor("conv_tbc", "input", input)
    out = _nnf().conv1d(F.permute(input, (1, 2, 0)), F.permute(weight, (2, 1, 0)), bias, 1, pad)
    return F.permute(out, (2, 0, 1))


def _volatile(self) -> bool:
    """``Tensor.volatile``: always False since PyTorch 0.4 (``with vkml.no_grad():`` replaced it), with PyTorch's
    warning."""
    warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning, stacklevel=2)
    return False


_warned_default_tensor_type = False


def set_default_tensor_type(t):
    """``torch.set_default_tensor_type`` (deprecated in PyTorch): the default float dtype and device from a legacy
    type (``vkml.cuda.FloatTensor``) or its name (``'torch.cuda.DoubleTensor'``); only float types, as PyTorch."""
    if isinstance(t, str):
        name = t.rsplit(".", 1)[-1]
        if name not in _LEGACY_DTYPES:
            raise TypeError(f"invalid type: '{t}'")
        cls = CUDA_TYPES[name] if ".cuda." in t else globals()[name]
    else:
        cls = t
    if not getattr(cls, "is_legacy_tensor_type", False):
        raise TypeError(f"invalid type: '{t}'")
    if not cls.dtype.is_float:
        raise TypeError("only floating-point types are supported as the default type")
    global _warned_default_tensor_type
    if not _warned_default_tensor_type:  # PyTorch's TORCH_WARN_ONCE: the first call of the process
        _warned_default_tensor_type = True
        warnings.warn(
            "vkml.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use vkml.set_default_dtype() "
            "and vkml.set_default_device() as alternatives.",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
    defaults.set_default_dtype(cls.dtype)
    devices.set_default_device("cuda" if cls.is_cuda else "cpu")


def _range(start, end, step=1, *, dtype=None, device=None, requires_grad: bool = False):
    """``torch.range`` (deprecated in PyTorch): ``start`` to ``end`` *inclusive* by ``step``, in the default float
    dtype unless ``dtype`` is given (integer bounds too), each value ``start + i * step`` in float64, with
    PyTorch's warning.

    >>> import vkml
    >>> vkml.range(1, 4).tolist()  # doctest: +SKIP
    [1.0, 2.0, 3.0, 4.0]
    """
    warnings.warn(
        "vkml.range is deprecated and will be removed in a future release because its behavior is inconsistent "
        "with Python's range builtin. Instead, use vkml.arange, which produces values in [start, end).",
        UserWarning,
        stacklevel=user_stacklevel(),
    )
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    count = int(math.floor((end - start) / step)) + 1
    values = start + np.arange(count, dtype=np.float64) * step
    dtype = default_float() if dtype is None else dtype
    return creation.tensor(values, dtype=dtype, device=device, requires_grad=requires_grad)


# ---------------------------------------------------------------------- the windows


def _window(op: str, window_length: int, periodic: bool, dtype, device, requires_grad: bool, values):
    if isinstance(window_length, bool) or not isinstance(window_length, int):
        raise TypeError(f"{op}(): argument 'window_length' must be int, not {type(window_length).__name__}")
    if window_length < 0:
        raise RuntimeError(f"{op} requires non-negative window_length, got window_length={window_length}")
    dtype = default_float() if dtype is None else dtype
    if not dtype.is_float:
        raise RuntimeError(f"{op} expects floating point dtypes, got: {mutation.torch_name(dtype)}")
    if window_length == 0:
        out = np.zeros(0)
    elif window_length == 1:
        out = np.ones(1)
    else:
        n = window_length + 1 if periodic else window_length
        out = values(np.arange(n, dtype=np.float64), n)[:window_length]
    t = F.cast(creation.tensor(np.ascontiguousarray(out), dtype=T.float64, device=device), dtype)
    return t.requires_grad_(True) if requires_grad else t


def hann_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype=None,
    layout=None,
    device=None,
    pin_memory=False,
    requires_grad=False,
):
    """The Hann window 0.5 - 0.5 cos(2πn / (N - 1)), as ``torch.hann_window`` (``periodic``: N + 1 points,
    the last dropped); float64 on the host, rounded once."""
    return _window(
        "hann_window", window_length, periodic, dtype, device, requires_grad,
        lambda n, N: 0.5 - 0.5 * np.cos(2 * np.pi * n / (N - 1)),
    )  # fmt: skip


def hamming_window(
    window_length: int, periodic: bool = True, alpha: float = 0.54, beta: float = 0.46, *, dtype=None, layout=None,
    device=None, pin_memory=False, requires_grad=False,
):  # fmt: skip
    """The Hamming window alpha - beta cos(2πn / (N - 1)), as ``torch.hamming_window``; float64 on the host."""
    return _window(
        "hamming_window", window_length, periodic, dtype, device, requires_grad,
        lambda n, N: alpha - beta * np.cos(2 * np.pi * n / (N - 1)),
    )  # fmt: skip


def blackman_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype=None,
    layout=None,
    device=None,
    pin_memory=False,
    requires_grad=False,
):
    """The Blackman window 0.42 - 0.5 cos(2πn / (N - 1)) + 0.08 cos(4πn / (N - 1)), as
    ``torch.blackman_window``; float64 on the host."""
    return _window(
        "blackman_window", window_length, periodic, dtype, device, requires_grad,
        lambda n, N: 0.42 - 0.5 * np.cos(2 * np.pi * n / (N - 1)) + 0.08 * np.cos(4 * np.pi * n / (N - 1)),
    )  # fmt: skip


def bartlett_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype=None,
    layout=None,
    device=None,
    pin_memory=False,
    requires_grad=False,
):
    """The Bartlett (triangular) window 1 - |2n / (N - 1) - 1|, as ``torch.bartlett_window``; float64 on the host."""
    return _window(
        "bartlett_window", window_length, periodic, dtype, device, requires_grad,
        lambda n, N: 1 - np.abs(2 * n / (N - 1) - 1),
    )  # fmt: skip


def kaiser_window(
    window_length: int, periodic: bool = True, beta: float = 12.0, *, dtype=None, layout=None, device=None,
    pin_memory=False, requires_grad=False,
):  # fmt: skip
    """The Kaiser window I0(beta sqrt(1 - (2n / (N - 1) - 1)^2)) / I0(beta), as ``torch.kaiser_window``;
    float64 on the host."""
    return _window(
        "kaiser_window", window_length, periodic, dtype, device, requires_grad,
        lambda n, N: np.i0(beta * np.sqrt(np.clip(1 - (2 * n / (N - 1) - 1) ** 2, 0, None))) / np.i0(beta),
    )  # fmt: skip


def renorm(input, p, dim: int, maxnorm):
    """Each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` scaled to norm ``maxnorm`` (by
    maxnorm / (norm + 1e-7), PyTorch's factor), as ``torch.renorm``."""
    _tensor("renorm", "input", input)
    if p <= 0:
        raise RuntimeError(f"renorm: non-positive-norm not supported, got p={p}")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if input.ndim < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} dimensions")
    d = lazy.normalize_dim("renorm", dim, input.ndim)
    others = tuple(i for i in range(input.ndim) if i != d)
    norms = statistics.vector_norm(input, p, others, True) if others else F.abs(input)
    scale = F.where(F.gt(norms, maxnorm), F.div(maxnorm, F.add(norms, 1e-7)), 1.0)
    return F.mul(input, F.cast(scale, input.dtype))


# ---------------------------------------------------------------------- legacy tensor types


class _LegacyTensorType(type):
    """The metaclass of ``vkml.FloatTensor`` and its kind (and of ``vkml.cuda.FloatTensor``'s).

    ``isinstance(x, vkml.FloatTensor)`` is whether x is a float32 tensor on the CPU (a Vulkan tensor is
    PyTorch's ``torch.cuda.FloatTensor``: ``isinstance(x, vkml.cuda.FloatTensor)``), and calling the class
    makes a tensor of that dtype, on the CPU (``vkml.cuda.*``: on ``"cuda"``, the best Vulkan device), as
    PyTorch's legacy constructors: ``FloatTensor(2, 3)`` (zeros here; PyTorch's are uninitialized),
    ``FloatTensor([1, 2])``, ``FloatTensor(size)``, ``FloatTensor()`` (empty), ``FloatTensor(tensor)``
    (the tensor itself when its dtype matches).
    """

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype and (obj.device.kind != "cpu") == cls.is_cuda

    def __call__(cls, *args, device=None):
        device = device if device is not None else ("cuda" if cls.is_cuda else "cpu")
        return creation.legacy_new(cls.__name__, cls.dtype, device, args)

    def __repr__(cls) -> str:
        return f"<class '{cls.__module__}.{cls.__name__}'>"


def _tensor_new(self, *args, size=None):
    """``Tensor.new(...)``: the legacy constructor with this tensor's dtype and device (``x.new(2, 3)``,
    ``x.new([1, 2])``, ``x.new()``, ``x.new(size=(2, 3))``), as PyTorch's."""
    if size is not None:
        if args:
            raise TypeError("new() got multiple values for argument 'size'")
        args = (Size(size),)
    return creation.legacy_new("new", self.dtype, self.device, args)


_LEGACY_DTYPES = {
    "FloatTensor": T.float32, "DoubleTensor": T.float64, "HalfTensor": T.float16, "BFloat16Tensor": T.bfloat16,
    "ByteTensor": T.uint8, "CharTensor": T.int8, "ShortTensor": T.int16, "IntTensor": T.int32,
    "LongTensor": T.int64, "BoolTensor": T.bool_,
}  # fmt: skip


def _legacy_type(name: str, dtype, cuda: bool):
    namespace = {"dtype": dtype, "is_cuda": cuda, "__module__": "vkml.cuda" if cuda else "vkml"}
    return _LegacyTensorType(name, (), {**namespace, "is_legacy_tensor_type": True})


LEGACY_TYPES = tuple(_legacy_type(name, dtype, False) for name, dtype in _LEGACY_DTYPES.items())
# vkml.cuda.FloatTensor and its kind (vkml/frontend/cuda.py binds them)
CUDA_TYPES = {name: _legacy_type(name, dtype, True) for name, dtype in _LEGACY_DTYPES.items()}
globals().update({c.__name__: c for c in LEGACY_TYPES})


# ---------------------------------------------------------------------- exports


_FUNCTIONS = (
    "concat concatenate ravel typename is_signed is_same_size scalar_tensor fill detach split_with_sizes "
    "unsafe_chunk unsafe_split conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d max_pool1d "
    "max_pool2d max_pool3d max_pool1d_with_indices avg_pool1d adaptive_avg_pool1d adaptive_max_pool1d batch_norm "
    "layer_norm group_norm instance_norm rms_norm embedding dropout alpha_dropout feature_dropout "
    "feature_alpha_dropout dropout_ alpha_dropout_ feature_dropout_ feature_alpha_dropout_ pixel_shuffle "
    "pixel_unshuffle channel_shuffle prelu selu celu rrelu threshold hardshrink selu_ celu_ rrelu_ threshold_ "
    "bilinear cosine_similarity pairwise_distance pdist kl_div margin_ranking_loss cosine_embedding_loss "
    "hinge_embedding_loss triplet_margin_loss poisson_nll_loss binary_cross_entropy_with_logits ctc_loss "
    "diagflat dsplit unravel_index combinations histogram hann_window hamming_window blackman_window "
    "bartlett_window kaiser_window alias_copy detach_copy diagonal_copy expand_copy narrow_copy permute_copy "
    "select_copy slice_copy split_copy split_with_sizes_copy squeeze_copy t_copy transpose_copy unbind_copy "
    "unfold_copy unsqueeze_copy view_copy slice_scatter select_scatter diagonal_scatter frobenius_norm nuclear_norm "
    "get_device gradient convolution conv_tbc set_default_tensor_type"
).split()
# functions that are also Tensor methods (and, with True, in-place methods Tensor.<name>_)
_METHODS = {
    "ravel": False, "is_signed": False, "is_same_size": False, "gcd": True, "lcm": True, "heaviside": True,
    "frexp": False, "ldexp": True, "nextafter": True, "inner": False, "vdot": False, "addr": True, "addbmm": True,
    "diagflat": False, "dsplit": False, "renorm": True, "hardshrink": False, "prelu": False,
    "histogram": False, "unsafe_chunk": False, "unsafe_split": False, "adjoint": False, "split_with_sizes": False,
    "unsafe_split_with_sizes": False,
    "slice_scatter": False, "select_scatter": False, "diagonal_scatter": False, "narrow_copy": False,
}  # fmt: skip


EXPORTS = (
    Export("newaxis", value=None),
    *(Export(name) for name in _FUNCTIONS if name not in _METHODS),
    *(Export(name, method=True, inplace=inplace) for name, inplace in _METHODS.items()),
    *(Export(name + "_", value=_inplace_function(name + "_")) for name in INPLACE_FUNCTIONS),
    *(Export(name, value=cls) for name, cls in ((c.__name__, c) for c in LEGACY_TYPES)),
    Export("new", function=False, method=_tensor_new),
    Export("range", value=_range),
    Export("volatile", function=False, method=property(_volatile)),
)
