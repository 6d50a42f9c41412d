"""Loss modules (NLLLoss, BCELoss, BCEWithLogitsLoss, L1Loss, SmoothL1Loss, HuberLoss, KLDivLoss) and the
shape layers a classifier needs (Flatten, Unflatten, Identity, Dropout2d), with PyTorch's arguments.

Class weights are buffers, as PyTorch's ``_WeightedLoss`` registers them: they move with ``to()``.

>>> import vkml
>>> Flatten()(vkml.ones(2, 3, 4)).shape
(2, 12)
"""

from __future__ import annotations

import math

from . import functional as F
from . import functional_losses as FL
from .module import Module


class _Loss(Module):
    """PyTorch's loss base: the deprecated ``size_average`` and ``reduce`` decide ``reduction`` when given."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__()
        self.reduction = F.legacy_reduction(size_average, reduce, reduction)


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class NLLLoss(_WeightedLoss):
    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None, reduction: str = "mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return FL.nll_loss(input, target, self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class BCELoss(_WeightedLoss):
    def forward(self, input, target):
        return FL.binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean", pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return FL.binary_cross_entropy_with_logits(
            input, target, self.weight, reduction=self.reduction, pos_weight=self.pos_weight
        )


class L1Loss(_Loss):
    def forward(self, input, target):
        return FL.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", beta: float = 1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return FL.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        if not isinstance(delta, (float, int)):
            raise TypeError(f"delta must be a float or int, got: {type(delta)}")
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return FL.huber_loss(input, target, self.reduction, self.delta)


class KLDivLoss(_Loss):
    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", log_target: bool = False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return FL.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class Identity(Module):
    """Returns its input; accepts and ignores any arguments, as PyTorch's."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Flatten(Module):
    """Merge dims ``start_dim`` .. ``end_dim`` into one (a reshape)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        nd = max(input.ndim, 1)
        start, end = self.start_dim % nd, self.end_dim % nd
        if not (-nd <= self.start_dim < nd and -nd <= self.end_dim < nd):
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], "
                f"but got {self.start_dim if not -nd <= self.start_dim < nd else self.end_dim})"
            )
        if start > end:
            raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
        if input.ndim == 0:
            return input.reshape(1)
        shape = input.shape
        return input.reshape(*shape[:start], math.prod(shape[start : end + 1]), *shape[end + 1 :])

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dim ``dim`` into ``unflattened_size`` (one entry may be -1)."""

    def __init__(self, dim: int, unflattened_size):
        super().__init__()
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError(
                f"unflattened_size must be a tuple of ints, but found type {type(unflattened_size).__name__}"
            )
        for pos, elem in enumerate(unflattened_size):
            if not isinstance(elem, int):
                raise TypeError(
                    f"unflattened_size must be tuple of ints, but found element of type {type(elem).__name__} at pos {pos}"
                )
        # kept as given, as PyTorch keeps it: the repr prints a list, a tuple or a Size as it came
        self.dim, self.unflattened_size = dim, unflattened_size

    def forward(self, input):
        return input.unflatten(self.dim, self.unflattened_size)  # unflatten's checks and words, as PyTorch

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class Dropout2d(Module):
    """Zero whole channels with probability ``p`` while training; see ``functional.dropout2d``."""

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input):
        return FL.dropout2d(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"
