"""Optimizers with PyTorch's names and arithmetic: ``SGD``, ``Adam``, ``AdamW``; a step is one submission.

>>> import vkml
>>> net = vkml.nn.Linear(2, 1)
>>> opt = vkml.optim.Adam(net.parameters(), lr=1e-2)
>>> loss = net(vkml.ones(4, 2)).sum()
>>> loss.backward(); opt.step(); opt.zero_grad()
"""

from . import lr_scheduler
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "lr_scheduler"]
