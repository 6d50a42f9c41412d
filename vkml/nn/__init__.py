"""Neural networks with PyTorch's names: layers (``vkml.nn.Linear``, ...), ``Module``, and ``vkml.nn.functional``.

>>> import vkml
>>> net = vkml.nn.Sequential(vkml.nn.Linear(2, 8), vkml.nn.ReLU(), vkml.nn.Linear(8, 3))
>>> net(vkml.ones(4, 2)).shape
(4, 3)
"""

from . import functional, utils
from .layers import (
    GELU,
    CrossEntropyLoss,
    Dropout,
    Embedding,
    LayerNorm,
    Linear,
    MSELoss,
    ReLU,
    Sigmoid,
    Tanh,
)
from .module import Module, Parameter, Sequential

__all__ = [
    "functional",
    "utils",
    "Module",
    "Parameter",
    "Sequential",
    "Linear",
    "LayerNorm",
    "Embedding",
    "Dropout",
    "ReLU",
    "GELU",
    "Tanh",
    "Sigmoid",
    "CrossEntropyLoss",
    "MSELoss",
]
