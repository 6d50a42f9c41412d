"""Optimizers with PyTorch's names, arguments and arithmetic; a step is one submission.

>>> import vkml
>>> net = vkml.nn.Linear(2, 1)
>>> opt = vkml.optim.Adam(net.parameters(), lr=1e-2)
>>> loss = net(vkml.ones(4, 2)).sum()
>>> loss.backward(); opt.step(); opt.zero_grad()
"""

from . import lr_scheduler, swa_utils
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
