"""Optimizers with PyTorch's names, arguments and arithmetic; a step is one submission.

>>> import vkml
>>> net = vkml.nn.Linear(2, 1)
>>> opt = vkml.optim.Adam(net.parameters(), lr=1e-2)
>>> loss = net(vkml.ones(4, 2)).sum()
>>> loss.backward(); opt.step(); opt.zero_grad()
"""

# Each optimizer says it lives at PyTorch's path with vkml for torch (``vkml.optim.adamw.AdamW``, as
# ``torch.optim.adamw.AdamW``; Adafactor and Muon at ``torch.optim``): docs/nn.md, "Class paths"
from . import adamax, adamw, lr_scheduler, nadam, radam, rprop, swa_utils  # noqa: E402  (PyTorch's files of the classes defined beside others)
from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adam_variants import Adamax, NAdam, RAdam
from .asgd import ASGD, Rprop
from .lbfgs import LBFGS
from .muon import Muon
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD
from .sparse_adam import SparseAdam

for _module in (adamax, adamw, nadam, radam, rprop):
    for _name in _module.__all__:
        getattr(_module, _name).__module__ = _module.__name__
Adafactor.__module__ = Muon.__module__ = __name__
del _module, _name

__all__ = [
    "Optimizer",
    "SGD",
    "Adam",
    "AdamW",
    "RMSprop",
    "Adagrad",
    "Adadelta",
    "Adafactor",
    "Adamax",
    "NAdam",
    "RAdam",
    "ASGD",
    "Rprop",
    "LBFGS",
    "Muon",
    "SparseAdam",
    "lr_scheduler",
    "swa_utils",
]
