"""``LRScheduler``, the base of every schedule, and the helpers the schedules share."""

from __future__ import annotations

import warnings
import weakref
from functools import wraps
from typing import Any

from ...tensor import Tensor
from ..optimizer import Optimizer

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where possible. "
    "Please use `scheduler.step()` to step the scheduler. During the deprecation, if epoch is different "
    "from None, the closed form is used instead of the new chainable form, where available. "
    "Please open an issue if you are unable to replicate your use case: "
    "https://github.com/pytorch/pytorch/issues/new/choose."
)


def _copy(value):
    """A tensor hyper-parameter is copied, so that a later in-place change of the caller's tensor (or of the
    group's lr) does not move a value the scheduler keeps, as PyTorch copies it."""
    return value.clone() if isinstance(value, Tensor) else value


def _lrs(optimizer: Optimizer, key: str = "lr") -> list:
    """Every group's ``key``, tensors copied (PyTorch's ``get_last_lr()`` never aliases a group's lr)."""
    return [_copy(group[key]) for group in optimizer.param_groups]


def _set_group_value(group: dict, key: str, value) -> None:
    """Set ``group[key]``; a tensor there (a tensor lr) is filled in place and stays a tensor, as in PyTorch."""
    current = group[key]
    if isinstance(current, Tensor):
        current.fill_(value.reshape(()) if isinstance(value, Tensor) else value)
    else:
        group[key] = value


def _per_group(name: str, optimizer: Optimizer, value) -> list:
    """``value`` once per parameter group: a list or tuple of that length, or one value repeated."""
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(
                f"{name} must have the same length as optimizer.param_groups. {name} has {len(value)} values, "
                f"param_groups has {len(optimizer.param_groups)}."
            )
        return [_copy(v) for v in value]
    return [_copy(value) for _ in optimizer.param_groups]


def _warn_get_lr_outside_step(scheduler: LRScheduler) -> None:
    if not scheduler._get_lr_called_within_step:
        warnings.warn(
            "To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
            UserWarning,
            stacklevel=3,
        )


def _check_optimizer(optimizer) -> None:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")


def _mark_optimizer_steps(optimizer: Optimizer) -> None:
    """Wrap ``optimizer.step`` (on the instance) so that a scheduler can tell whether it ran, as PyTorch does."""
    if hasattr(optimizer.step, "_wrapped_by_lr_sched"):
        return
    opt_ref = weakref.ref(optimizer)  # no cycle: the optimizer would otherwise hold itself
    func = optimizer.step.__func__

    @wraps(func)
    def step(*args, **kwargs):
        opt = opt_ref()
        opt._opt_called = True
        return func.__get__(opt, type(opt))(*args, **kwargs)

    step._wrapped_by_lr_sched = True
    optimizer.step = step


class LRScheduler:
    """Base class: ``step()`` sets every group's ``lr`` from ``get_lr()``; ``last_epoch`` counts the steps.

    On construction (``last_epoch=-1``) each group gets ``initial_lr`` (its current lr), the
    ``base_lrs``, and the scheduler takes its first step (epoch 0). Resuming with
    ``last_epoch >= 0`` needs ``initial_lr`` in every group (from a loaded optimizer state).
    """

    _get_lr_called_within_step = False
    _is_initial = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", _copy(group["lr"]))
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when resuming scheduler "
                        "with last_epoch >= 0.\nThis typically happens when:\n1. You're trying to resume training from "
                        "a checkpoint but haven't properly loaded the optimizer state\n2. You're using last_epoch >= 0 "
                        "for a fresh training run (not recommended)"
                    )
        self.base_lrs: list[float] = _lrs(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        _mark_optimizer_steps(optimizer)
        self._initial_step()

    def _initial_step(self) -> None:
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def state_dict(self) -> dict[str, Any]:
        """Every attribute but the optimizer (as PyTorch: a dict that ``vkml.save`` can store)."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)

    def get_last_lr(self) -> list[float]:
        """The learning rates the last ``step()`` set, one per parameter group."""
        return self._last_lr

    def get_lr(self) -> list[float]:
        """The next learning rates (called by ``step()``; use ``get_last_lr()`` to read them)."""
        raise NotImplementedError

    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch (call it after ``optimizer.step()``); ``epoch`` is deprecated, as in PyTorch."""
        if self._step_count == 1:
            if not hasattr(self.optimizer.step, "_wrapped_by_lr_sched"):
                warnings.warn(
                    "Seems like `optimizer.step()` has been overridden after learning rate scheduler "
                    "initialization. Please, make sure to call `optimizer.step()` before `lr_scheduler.step()`. "
                    "See more details at https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
                    UserWarning,
                    stacklevel=2,
                )
            elif not getattr(self.optimizer, "_opt_called", False):
                warnings.warn(
                    "Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 and later, "
                    "you should call them in the opposite order: `optimizer.step()` before `lr_scheduler.step()`.  "
                    "Failure to do this will result in PyTorch skipping the first value of the learning rate "
                    "schedule. See more details at https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
                    UserWarning,
                    stacklevel=2,
                )
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed_form = getattr(self, "_get_closed_form_lr", None)
                values = closed_form() if closed_form is not None else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            _set_group_value(group, "lr", lr)
        self._last_lr = _lrs(self.optimizer)
