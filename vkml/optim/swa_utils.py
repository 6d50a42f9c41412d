"""``vkml.optim.swa_utils``: stochastic weight averaging and exponential moving averages of a
model's weights, as ``torch.optim.swa_utils``: ``AveragedModel``, ``SWALR``, ``update_bn`` and the
averaging functions.

The averages are computed as PyTorch computes them on the CPU: ``avg + (current - avg) / (n + 1)``
for SWA, ``decay * ema + (1 - decay) * current`` for EMA, and the ``multi`` (foreach) functions as
a lerp (PyTorch's ``_foreach_lerp_``: ``a + w * (b - a)`` for ``w < 0.5``, else ``b - (b - a) * (1 - w)``).
Without ``multi_avg_fn`` and ``avg_fn``, ``update_parameters`` uses the per-tensor SWA formula,
PyTorch's path on the CPU (on CUDA PyTorch takes the foreach lerp: its bits differ there).

>>> import vkml
>>> net = vkml.nn.Linear(2, 1)
>>> swa = vkml.optim.swa_utils.AveragedModel(net)
>>> swa.update_parameters(net)
>>> int(swa.n_averaged)
1
"""

from __future__ import annotations

import copy
import itertools
import math
import warnings

from ..frontend import autograd
from ..frontend.creation import tensor
from ..ir import types as T
from ..nn.module import Module
from ..nn.normalization import _BatchNorm
from .lr_scheduler.base import LRScheduler, _per_group
from .optimizer import Optimizer

__all__ = [
    "AveragedModel",
    "SWALR",
    "get_ema_avg_fn",
    "get_ema_multi_avg_fn",
    "get_swa_avg_fn",
    "get_swa_multi_avg_fn",
    "update_bn",
]


def _lerp_(averaged: list, current: list, weight) -> None:
    """PyTorch's foreach lerp, in place: ``a + w (b - a)`` below w = 0.5, ``b - (b - a)(1 - w)`` from it."""
    for a, b in zip(averaged, current):
        w = float(weight)
        a.copy_(a + w * (b - a) if abs(w) < 0.5 else b - (b - a) * (1 - w))


def get_ema_multi_avg_fn(decay: float = 0.999):
    """The in-place EMA update of lists of tensors: a lerp towards the current weights by ``1 - decay``."""
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")

    @autograd.no_grad()
    def ema_update(ema_param_list: list, current_param_list: list, _num_averaged) -> None:
        _lerp_(ema_param_list, current_param_list, 1 - decay)

    return ema_update


def get_swa_multi_avg_fn():
    """The in-place SWA update of lists of tensors: a lerp by ``1 / (n + 1)``."""

    @autograd.no_grad()
    def swa_update(averaged_param_list: list, current_param_list: list, num_averaged) -> None:
        _lerp_(averaged_param_list, current_param_list, 1 / (float(num_averaged) + 1))

    return swa_update


def get_ema_avg_fn(decay: float = 0.999):
    """``decay * ema + (1 - decay) * current``."""
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")

    @autograd.no_grad()
    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """``averaged + (current - averaged) / (n + 1)``."""

    @autograd.no_grad()
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A copy of ``model`` whose parameters (and buffers, with ``use_buffers``) are a running average
    of ``model``'s, updated by ``update_parameters(model)``; calling it runs the copy.

    >>> import vkml
    >>> net = vkml.nn.Linear(1, 1, bias=False)
    >>> ema = vkml.optim.swa_utils.AveragedModel(net, multi_avg_fn=vkml.optim.swa_utils.get_ema_multi_avg_fn(0.5))
    >>> ema.update_parameters(net)
    """

    def __init__(self, model: Module, device=None, avg_fn=None, multi_avg_fn=None, use_buffers: bool = False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tensor(0, dtype=T.int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Fold ``model``'s current weights into the average (the first call copies them)."""
        if self.use_buffers:
            ours = itertools.chain(self.module.parameters(), self.module.buffers())
            theirs = itertools.chain(model.parameters(), model.buffers())
        else:
            ours, theirs = self.parameters(), model.parameters()
        averaged, current = [], []
        first = int(self.n_averaged) == 0
        with autograd.no_grad():
            for p_averaged, p_model in zip(ours, theirs):
                p_model_ = p_model.detach().to(p_averaged.device)
                averaged.append(p_averaged.detach())
                current.append(p_model_)
                if first:
                    p_averaged.detach().copy_(p_model_)
            if not first:
                n = self.n_averaged.to(averaged[0].device) if averaged else self.n_averaged
                if self.multi_avg_fn is not None:
                    self.multi_avg_fn(averaged, current, n)
                elif self.avg_fn is not None:
                    for p_averaged, p_model in zip(averaged, current):
                        p_averaged.copy_(self.avg_fn(p_averaged, p_model, n))
                else:
                    swa = get_swa_avg_fn()
                    for p_averaged, p_model in zip(averaged, current):
                        p_averaged.copy_(swa(p_averaged, p_model, n))
            if not self.use_buffers:  # buffers follow the source model
                for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                    b_swa.detach().copy_(b_model.detach().to(b_swa.device))
            self.n_averaged.add_(1)


@autograd.no_grad()
def update_bn(loader, model: Module, device=None) -> None:
    """Recompute the BatchNorm running statistics of ``model`` with one pass over ``loader`` (a
    cumulative average over its batches, as PyTorch's ``update_bn``)."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    for batch in loader:
        if isinstance(batch, (list, tuple)):
            batch = batch[0]
        if device is not None:
            batch = batch.to(device)
        model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


def _linear_anneal(t: float) -> float:
    return t


def _cosine_anneal(t: float) -> float:
    return (1 - math.cos(math.pi * t)) / 2


class SWALR(LRScheduler):
    """Anneal each group's learning rate to ``swa_lr`` over ``anneal_epochs`` steps ('cos' or
    'linear'), then hold it, as ``torch.optim.swa_utils.SWALR``.

    >>> import vkml
    >>> opt = vkml.optim.SGD(vkml.nn.Linear(1, 1).parameters(), lr=1.0)
    >>> sched = vkml.optim.swa_utils.SWALR(opt, swa_lr=0.5, anneal_epochs=2, anneal_strategy="linear")
    >>> opt.step(); sched.step(); round(sched.get_last_lr()[0], 6)
    0.75
    """

    def __init__(
        self,
        optimizer: Optimizer,
        swa_lr: float,
        anneal_epochs: int = 10,
        anneal_strategy: str = "cos",
        last_epoch: int = -1,
    ) -> None:
        for value, group in zip(_per_group("swa_lr", optimizer, swa_lr), optimizer.param_groups):
            group["swa_lr"] = value
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._anneal_strategy = anneal_strategy  # state_dict() saves the name, as PyTorch's does
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @property
    def anneal_func(self):
        """The annealing curve ``anneal_strategy`` names (a property: state_dict() keeps the name)."""
        return _cosine_anneal if self._anneal_strategy == "cos" else _linear_anneal

    @staticmethod
    def _get_initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list[float]:
        if not self._get_lr_called_within_step:
            warnings.warn(
                "To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                UserWarning,
                stacklevel=2,
            )
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(self.optimizer.param_groups, prev_lrs)]
