"""Layers with PyTorch's names, arguments and initialisation: Linear, LayerNorm, Embedding, Dropout, activations, losses.

Initial values come from vkml's random generator (``vkml.manual_seed``), PyTorch's CPU generator
with PyTorch's initialisers in PyTorch's order: a seeded model starts from the weights a seeded
PyTorch model has, bit for bit, on every device (docs/random.md).

>>> import vkml
>>> layer = Linear(4, 2)
>>> layer(vkml.ones(3, 4)).shape
(3, 2)
"""

from __future__ import annotations

import math

from ..frontend import creation
from ..frontend import operators as functions
from . import functional as F
from . import init
from .losses import _Loss, _WeightedLoss
from .module import Module, Parameter, _set_data


class Linear(Module):
    """``y = x @ weight.T + bias``; weight and bias start uniform in ±1/sqrt(in_features) (PyTorch's default:
    ``kaiming_uniform_(weight, a=sqrt(5))`` and a uniform bias, in ``reset_parameters``).

    >>> Linear(3, 5).weight.shape
    (5, 3)
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(creation.zeros(out_features, in_features, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(creation.zeros(out_features, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's default initialisation (the weight's draw first, then the bias's)."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.in_features
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class LayerNorm(Module):
    """Normalise over the last dims to mean 0, variance 1 (biased), then scale and shift (weight 1, bias 0)."""

    def __init__(
        self,
        normalized_shape,
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape, self.eps = shape, eps
        if elementwise_affine:
            self.weight = Parameter(creation.ones(shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
        if elementwise_affine and bias:
            self.bias = Parameter(creation.zeros(shape, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)

    def reset_parameters(self) -> None:
        """Weight back to ones, bias to zeros (after ``to_empty``, say)."""
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        affine, bias = self.weight is not None, self.bias is not None
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={affine}, bias={bias}"


class Embedding(Module):
    """Rows of ``weight`` (standard normal at start, ``padding_idx``'s row zero) picked by integer indices; see
    ``functional.embedding``."""

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx=None,
        max_norm=None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
        _weight=None,
        _freeze: bool = False,
        device=None,
        dtype=None,
    ):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        if padding_idx is not None:
            if padding_idx > 0 and padding_idx >= num_embeddings:
                raise AssertionError(f"Embedding: Padding_idx must be within num_embeddings, got {padding_idx}")
            if padding_idx < 0:
                if padding_idx < -num_embeddings:
                    raise AssertionError(f"Embedding: Padding_idx must be within num_embeddings, got {padding_idx}")
                padding_idx = num_embeddings + padding_idx
        self.padding_idx, self.max_norm, self.norm_type = padding_idx, max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is None:
            self.weight = Parameter(creation.zeros(num_embeddings, embedding_dim, dtype=dtype, device=device))
            self.reset_parameters()
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise AssertionError("Embedding: Shape of weight does not match num_embeddings and embedding_dim")
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self) -> None:
        """PyTorch's default: standard normal (``init.normal_``), then ``padding_idx``'s row zeroed."""
        init.normal_(self.weight)
        self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self) -> None:
        """Zero ``padding_idx``'s row of the weight: PyTorch's helper, which a subclass's own
        ``reset_parameters`` calls after its initialisation."""
        if self.padding_idx is not None:
            rows = functions.reshape(creation.arange(self.num_embeddings, device=self.weight.device), -1, 1)
            _set_data(self.weight, functions.where(rows == self.padding_idx, 0.0, self.weight))

    @classmethod
    def from_pretrained(
        cls,
        embeddings,
        freeze: bool = True,
        padding_idx=None,
        max_norm=None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
    ):
        """An ``Embedding`` holding ``embeddings`` (not trained when ``freeze``), as PyTorch's."""
        if embeddings.ndim != 2:
            raise AssertionError("Embedding.from_pretrained: Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(
            rows,
            cols,
            padding_idx,
            max_norm,
            norm_type,
            scale_grad_by_freq,
            sparse,
            _weight=embeddings,
            _freeze=freeze,
        )

    def forward(self, input):
        return F.embedding(
            input, self.weight, self.padding_idx, self.max_norm, self.norm_type, self.scale_grad_by_freq, self.sparse
        )

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        if self.sparse is not False:
            s += ", sparse=True"
        return s


class Dropout(Module):
    """Zero each element with probability ``p`` and scale the rest by 1/(1-p) while training; identity in eval()."""

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"Dropout: dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class ReLU(Module):
    """``max(x, 0)``; ``inplace=True`` writes into the input, as PyTorch's."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class GELU(Module):
    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Tanh(Module):
    def forward(self, input):
        return F.tanh(input)


class Sigmoid(Module):
    def forward(self, input):
        return F.sigmoid(input)


class CrossEntropyLoss(_WeightedLoss):
    """``functional.cross_entropy`` as a module; ``weight`` is a buffer (it moves with ``to()``), as PyTorch's."""

    def __init__(
        self,
        weight=None,
        size_average=None,
        ignore_index: int = -100,
        reduce=None,
        reduction: str = "mean",
        label_smoothing: float = 0.0,
    ):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(
            input,
            target,
            self.weight,
            ignore_index=self.ignore_index,
            reduction=self.reduction,
            label_smoothing=self.label_smoothing,
        )


class MSELoss(_Loss):
    """``functional.mse_loss`` as a module."""

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)
