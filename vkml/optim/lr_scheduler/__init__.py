"""Learning-rate schedules with ``torch.optim.lr_scheduler``'s names, arguments and arithmetic.

Each scheduler computes its learning rates with the same float operations, in the same order,
as PyTorch 2.x: the chainable (recursive) form on ``step()``, the closed form when ``step`` is
given an epoch (deprecated there too). So a schedule run side by side with PyTorch's gives the
same Python floats, bit for bit (tests/test_lr_scheduler.py). Learning rates are Python
floats; a tensor ``lr`` is not supported.

>>> import vkml
>>> w = vkml.nn.Parameter(vkml.ones(2))
>>> opt = vkml.optim.SGD([w], lr=1.0)
>>> sched = StepLR(opt, step_size=2, gamma=0.5)
>>> lrs = []
>>> for _ in range(4):
...     opt.step(); sched.step(); lrs.append(sched.get_last_lr()[0])
>>> lrs
[1.0, 0.5, 0.5, 0.25]
"""

from .base import EPOCH_DEPRECATION_WARNING, LRScheduler
from .composite import ChainedScheduler, SequentialLR
from .cyclic import CyclicLR, OneCycleLR
from .decay import (
    ConstantLR,
    CosineAnnealingLR,
    CosineAnnealingWarmRestarts,
    ExponentialLR,
    LambdaLR,
    LinearLR,
    MultiplicativeLR,
    MultiStepLR,
    PolynomialLR,
    StepLR,
)
from .plateau import ReduceLROnPlateau

# PyTorch defines every scheduler in one file, torch.optim.lr_scheduler: each says it lives here (docs/nn.md)
for _scheduler in (LRScheduler, ChainedScheduler, SequentialLR, CyclicLR, OneCycleLR, ConstantLR, CosineAnnealingLR,
                   CosineAnnealingWarmRestarts, ExponentialLR, LambdaLR, LinearLR, MultiplicativeLR, MultiStepLR,
                   PolynomialLR, StepLR, ReduceLROnPlateau):  # fmt: skip
    _scheduler.__module__ = __name__
del _scheduler

__all__ = [
    "EPOCH_DEPRECATION_WARNING",
    "LRScheduler",
    "LambdaLR",
    "MultiplicativeLR",
    "StepLR",
    "MultiStepLR",
    "ConstantLR",
    "LinearLR",
    "ExponentialLR",
    "SequentialLR",
    "CosineAnnealingLR",
    "ChainedScheduler",
    "ReduceLROnPlateau",
    "CyclicLR",
    "CosineAnnealingWarmRestarts",
    "OneCycleLR",
    "PolynomialLR",
]


class _LRScheduler(LRScheduler):
    """``LRScheduler``'s name before PyTorch 2.0, still what many hand-written schedules subclass."""


# PyTorch defines every scheduler in torch.optim.lr_scheduler, and training loops tell a built-in scheduler from
# a hand-written one by ``scheduler.__module__ == lr_scheduler.__name__`` (d2l.ai's ``train``): the same here.
for _name in [*__all__, "_LRScheduler"]:
    if isinstance(globals()[_name], type):
        globals()[_name].__module__ = __name__
del _name
