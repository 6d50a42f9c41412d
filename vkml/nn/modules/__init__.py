"""``torch.nn.modules``: the layers under their PyTorch module paths, for code that names them there.

Copied model code reaches private bases through these paths (torchvision's
``split_normalization_params`` tests ``isinstance(m, nn.modules.batchnorm._BatchNorm)``, layers import
``_pair`` from ``torch.nn.modules.utils``). Each submodule holds the vkml classes of PyTorch's file of
that name; the package itself has every public layer, as ``torch.nn.modules`` does.

>>> import vkml.nn as nn
>>> issubclass(nn.BatchNorm2d, nn.modules.batchnorm._BatchNorm)
True
"""

import importlib as _importlib

from . import (  # noqa: F401  (the submodules, as attributes: nn.modules.batchnorm)
    activation,
    adaptive,
    batchnorm,
    channelshuffle,
    container,
    conv,
    distance,
    dropout,
    flatten,
    fold,
    instancenorm,
    lazy,
    linear,
    loss,
    module,
    normalization,
    padding,
    pixelshuffle,
    pooling,
    rnn,
    sparse,
    transformer,
    upsampling,
    utils,
)

_nn = _importlib.import_module("vkml.nn")  # the package importing this one, its layers all bound by now
globals().update({name: getattr(_nn, name) for name in _nn.__all__ if name[:1].isupper()})
