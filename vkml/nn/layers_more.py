"""Modules of issue 18 with PyTorch's names, arguments, defaults and reprs: softmax layers, RReLU, channel and
alpha dropout, padding, distances, Bilinear, LazyLinear, EmbeddingBag and LocalResponseNorm.

Each forwards to a function of ``vkml.nn.functional``; parameters start as PyTorch's do, from
vkml's generator.

>>> import vkml
>>> ZeroPad2d(1)(vkml.ones(1, 2, 2)).shape
(1, 4, 4)
"""

from __future__ import annotations

import math

from ..frontend import autograd, creation
from ..frontend import operators as functions
from . import activation, init
from . import functional as F
from . import functional_more as FM
from .layers import Linear
from .lazy import LazyModuleMixin
from .module import Module, Parameter, UninitializedParameter, _set_data

# ---------------------------------------------------------------------- softmax layers


def softmax(input, dim=None, _stacklevel: int = 3, dtype=None):
    """``vkml.softmax`` with ``torch.nn.functional.softmax``'s arguments: without ``dim``, PyTorch's implicit
    dim and warning; ``dtype`` casts the input first."""
    if dim is None:
        dim = activation.softmax_dim("softmax", input.ndim, _stacklevel)
    x = functions.cast(input, dtype) if dtype is not None else input
    return functions.softmax(x, dim)


def log_softmax(input, dim=None, _stacklevel: int = 3, dtype=None):
    """``vkml.log_softmax`` with ``torch.nn.functional.log_softmax``'s arguments (see ``softmax``)."""
    if dim is None:
        dim = activation.softmax_dim("log_softmax", input.ndim, _stacklevel)
    x = functions.cast(input, dtype) if dtype is not None else input
    return functions.log_softmax(x, dim)


class Softmax(Module):
    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Module):
    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return log_softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax2d(Module):
    """Softmax over the channels (dim -3) of (N, C, H, W) or (C, H, W)."""

    def forward(self, input):
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D instead")
        return functions.softmax(input, -3)


class RReLU(Module):
    """``functional.rrelu``: random negative slopes in [lower, upper) while training, their mean in eval()."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return FM.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")


# ---------------------------------------------------------------------- dropout


class _DropoutNd(Module):
    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"{type(self).__name__}: dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(_DropoutNd):
    def forward(self, input):
        return FM.dropout1d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    def forward(self, input):
        return FM.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    def forward(self, input):
        return FM.alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    def forward(self, input):
        return FM.feature_alpha_dropout(input, self.p, self.training)


# ---------------------------------------------------------------------- padding


def _ntuple(padding, n: int) -> tuple:
    """PyTorch's ``_ntuple``: a sequence as a tuple (its length unchecked, as PyTorch's), a number repeated."""
    if isinstance(padding, (tuple, list)):
        return tuple(padding)
    return (padding,) * n


class _PadNd(Module):
    mode = "constant"
    dims = 1
    dim_check = False  # the circular modules check the input's rank themselves, as PyTorch's

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(padding, 2 * self.dims)

    def forward(self, input):
        if self.dim_check and input.ndim not in (self.dims + 1, self.dims + 2):
            raise ValueError(
                f"{type(self).__name__}: expected {self.dims + 1}D or {self.dims + 2}D input (got {input.ndim}D input)"
            )
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value: float):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    dims = 1


class ConstantPad2d(_ConstantPadNd):
    dims = 2


class ConstantPad3d(_ConstantPadNd):
    dims = 3


class ZeroPad1d(ConstantPad1d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ReflectionPad1d(_PadNd):
    mode, dims = "reflect", 1


class ReflectionPad2d(_PadNd):
    mode, dims = "reflect", 2


class ReflectionPad3d(_PadNd):
    mode, dims = "reflect", 3


class ReplicationPad1d(_PadNd):
    mode, dims = "replicate", 1


class ReplicationPad2d(_PadNd):
    mode, dims = "replicate", 2


class ReplicationPad3d(_PadNd):
    mode, dims = "replicate", 3


class CircularPad1d(_PadNd):
    mode, dims, dim_check = "circular", 1, True


class CircularPad2d(_PadNd):
    mode, dims, dim_check = "circular", 2, True


class CircularPad3d(_PadNd):
    mode, dims, dim_check = "circular", 3, True


# ---------------------------------------------------------------------- distances, Bilinear, LazyLinear


class CosineSimilarity(Module):
    def __init__(self, dim: int = 1, eps: float = 1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return FM.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return FM.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class Bilinear(Module):
    """``y = x1ᵀ A x2 + b``; weight (out, in1, in2) and bias start uniform in ±1/sqrt(in1_features), as PyTorch's."""

    def __init__(
        self, in1_features: int, in2_features: int, out_features: int, bias: bool = True, device=None, dtype=None
    ):
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        self.weight = Parameter(creation.zeros(out_features, in1_features, in2_features, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(creation.zeros(out_features, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.in1_features <= 0:
            raise ValueError(f"Bilinear: in1_features must be > 0, but got (in1_features={self.in1_features})")
        bound = 1 / math.sqrt(self.in1_features)
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return FM.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
            f"out_features={self.out_features}, bias={self.bias is not None}"
        )


class LazyLinear(LazyModuleMixin, Linear):
    """A ``Linear`` whose ``in_features`` is read from the first input: until then its parameters are
    placeholders (``UninitializedParameter``); the first call gives them their shapes and PyTorch's
    initialisation, and the module becomes a ``Linear`` (vkml/nn/lazy.py).

    >>> lin = vkml.nn.LazyLinear(3)
    >>> tuple(lin(vkml.ones(2, 5)).shape), type(lin).__name__, tuple(lin.weight.shape)
    ((2, 3), 'Linear', (3, 5))
    """

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None):
        super().__init__(0, 0, False)  # no bias made: the placeholder takes its place
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input) -> None:
        """Shape the parameters for ``input``'s last dim and initialise them (PyTorch's ``Linear`` defaults)."""
        if self.has_uninitialized_params():
            with autograd.no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()
        if self.in_features == 0:  # loaded from a state dict: the input must fit the loaded weight
            if input.shape[-1] != self.weight.shape[-1]:
                raise AssertionError(
                    f"The in_features inferred from input: {input.shape[-1]} is not equal to in_features from "
                    f"self.weight: {self.weight.shape[-1]}"
                )
            self.in_features = input.shape[-1]


# ---------------------------------------------------------------------- EmbeddingBag, LocalResponseNorm


class EmbeddingBag(Module):
    """Sums, means or maxima of bags of embeddings; weight standard normal at start (``padding_idx``'s row zero)."""

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        max_norm=None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        _weight=None,
        include_last_offset: bool = False,
        padding_idx=None,
        device=None,
        dtype=None,
    ):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.max_norm, self.norm_type, self.scale_grad_by_freq = max_norm, norm_type, scale_grad_by_freq
        if padding_idx is not None:
            if padding_idx > 0 and padding_idx >= num_embeddings:
                raise AssertionError(f"EmbeddingBag: padding_idx must be within num_embeddings, got {padding_idx}")
            if padding_idx < 0:
                if padding_idx < -num_embeddings:
                    raise AssertionError(f"EmbeddingBag: padding_idx must be within num_embeddings, got {padding_idx}")
                padding_idx = num_embeddings + padding_idx
        self.padding_idx = padding_idx
        if _weight is None:
            self.weight = Parameter(creation.zeros(num_embeddings, embedding_dim, dtype=dtype, device=device))
            self.reset_parameters()
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise AssertionError("EmbeddingBag: Shape of weight does not match num_embeddings and embedding_dim")
            self.weight = Parameter(_weight)
        self.mode, self.sparse, self.include_last_offset = mode, sparse, include_last_offset

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self) -> None:
        """Zero ``padding_idx``'s row of the weight, as PyTorch's helper of the same name."""
        if self.padding_idx is not None:
            rows = functions.reshape(F._class_indices(self.num_embeddings, self.weight.device), -1, 1)
            _set_data(self.weight, functions.where(rows == self.padding_idx, 0.0, self.weight))

    @classmethod
    def from_pretrained(
        cls,
        embeddings,
        freeze: bool = True,
        max_norm=None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        include_last_offset: bool = False,
        padding_idx=None,
    ):
        if embeddings.ndim != 2:
            raise AssertionError("EmbeddingBag.from_pretrained: Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        bag = cls(
            rows,
            cols,
            max_norm,
            norm_type,
            scale_grad_by_freq,
            mode,
            sparse,
            embeddings,
            include_last_offset,
            padding_idx,
        )
        bag.weight.requires_grad = not freeze
        return bag

    def forward(self, input, offsets=None, per_sample_weights=None):
        return FM.embedding_bag(
            input,
            self.weight,
            offsets,
            self.max_norm,
            self.norm_type,
            self.scale_grad_by_freq,
            self.mode,
            self.sparse,
            per_sample_weights,
            self.include_last_offset,
            self.padding_idx,
        )

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm!r}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type!r}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq!r}"
        s += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx!r}"
        return s


class LocalResponseNorm(Module):
    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return FM.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


MODULES = [
    "Softmax",
    "LogSoftmax",
    "Softmax2d",
    "RReLU",
    "Dropout1d",
    "Dropout3d",
    "AlphaDropout",
    "FeatureAlphaDropout",
    "ZeroPad1d",
    "ZeroPad2d",
    "ZeroPad3d",
    "ConstantPad1d",
    "ConstantPad2d",
    "ConstantPad3d",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ReflectionPad3d",
    "ReplicationPad1d",
    "ReplicationPad2d",
    "ReplicationPad3d",
    "CircularPad1d",
    "CircularPad2d",
    "CircularPad3d",
    "CosineSimilarity",
    "PairwiseDistance",
    "Bilinear",
    "LazyLinear",
    "EmbeddingBag",
    "LocalResponseNorm",
]
