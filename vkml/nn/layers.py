"""Layers with PyTorch's names, arguments and initialisation: Linear, LayerNorm, Embedding, Dropout, activations, losses.

Initial values come from vkml's random generator (``vkml.manual_seed``), so a seeded model
starts from the same bits on every device — not from the same values as a seeded PyTorch
model (load a state dict for that).

>>> import vkml
>>> layer = Linear(4, 2)
>>> layer(vkml.ones(3, 4)).shape
(3, 2)
"""

from __future__ import annotations

import math

from ..frontend import creation
from . import functional as F
from . import init
from .module import Module, Parameter


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
        self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True, device=None
    ):
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.normalized_shape, self.eps = shape, eps
        if elementwise_affine:
            self.weight = Parameter(creation.ones(shape, device=device))
        else:
            self.register_parameter("weight", None)
        if elementwise_affine and bias:
            self.bias = Parameter(creation.zeros(shape, device=device))
        else:
            self.register_parameter("bias", None)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        affine, bias = self.weight is not None, self.bias is not None
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={affine}, bias={bias}"


class Embedding(Module):
    """Rows of ``weight`` (standard normal at start) picked by integer indices; see ``functional.embedding``."""

    def __init__(self, num_embeddings: int, embedding_dim: int, device=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.weight = Parameter(creation.zeros(num_embeddings, embedding_dim, device=device))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's default: standard normal (``init.normal_``)."""
        init.normal_(self.weight)

    def forward(self, input):
        return F.embedding(input, self.weight)

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}"


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
    def forward(self, input):
        return F.relu(input)


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


class CrossEntropyLoss(Module):
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
        super().__init__()
        self.register_buffer("weight", weight)
        self.reduction = F.legacy_reduction(size_average, reduce, reduction)
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


class MSELoss(Module):
    """``functional.mse_loss`` as a module."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__()
        self.reduction = F.legacy_reduction(size_average, reduce, reduction)

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)
