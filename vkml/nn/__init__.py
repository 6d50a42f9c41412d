"""Neural networks with PyTorch's names: layers (``vkml.nn.Linear``, ...), ``Module`` and its containers,
``vkml.nn.init`` and ``vkml.nn.functional``.

>>> import vkml
>>> net = vkml.nn.Sequential(vkml.nn.Linear(2, 8), vkml.nn.ReLU(), vkml.nn.Linear(8, 3))
>>> net(vkml.ones(4, 2)).shape
(4, 3)
"""

# parameter: torch.nn.parameter, where older repositories import Parameter from
from . import common_types, functional, init, parameter, utils  # noqa: F401
from .containers import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .layers import GELU, CrossEntropyLoss, Dropout, Embedding, LayerNorm, Linear, MSELoss, ReLU, Sigmoid, Tanh
from .module import Buffer, Module, Parameter, UninitializedBuffer, UninitializedParameter

__all__ = [
    "functional",
    "init",
    "utils",
    "Module",
    "Parameter",
    "Buffer",
    "UninitializedParameter",
    "UninitializedBuffer",
    "Sequential",
    "ModuleList",
    "ModuleDict",
    "ParameterList",
    "ParameterDict",
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

# Attention, transformer and recurrent layers (vkml/nn/attention.py, transformer.py, rnn.py).
from .attention import MultiheadAttention  # noqa: E402

__all__ += ["MultiheadAttention"]
from .transformer import (  # noqa: E402
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)

__all__ += [
    "Transformer",
    "TransformerEncoder",
    "TransformerDecoder",
    "TransformerEncoderLayer",
    "TransformerDecoderLayer",
]
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell  # noqa: E402

__all__ += ["RNNCell", "LSTMCell", "GRUCell", "RNN", "LSTM", "GRU"]
# Activation modules of issue 17 (vkml/nn/activation.py).
from . import activation as _activation  # noqa: E402

for _name in _activation.MODULES:
    globals()[_name] = getattr(_activation, _name)
__all__ += _activation.MODULES
del _name
# Convolution, pooling, normalisation, shape layers and losses (one block, appended)
from .conv import Conv1d, Conv2d  # noqa: E402
from .losses import (  # noqa: E402
    BCELoss,
    BCEWithLogitsLoss,
    Dropout2d,
    Flatten,
    HuberLoss,
    Identity,
    KLDivLoss,
    L1Loss,
    NLLLoss,
    SmoothL1Loss,
    Unflatten,
)
from .normalization import (  # noqa: E402
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    GroupNorm,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    RMSNorm,
)
from .pooling import (  # noqa: E402
    AdaptiveAvgPool2d,
    AdaptiveMaxPool2d,
    AvgPool1d,
    AvgPool2d,
    MaxPool1d,
    MaxPool2d,
)
from .sync_batchnorm import SyncBatchNorm  # noqa: E402  (before nn.modules, which exports it)

__all__ += [
    "Conv1d",
    "Conv2d",
    "MaxPool1d",
    "MaxPool2d",
    "AvgPool1d",
    "AvgPool2d",
    "AdaptiveAvgPool2d",
    "AdaptiveMaxPool2d",
    "BatchNorm1d",
    "BatchNorm2d",
    "BatchNorm3d",
    "InstanceNorm1d",
    "InstanceNorm2d",
    "InstanceNorm3d",
    "GroupNorm",
    "RMSNorm",
    "Flatten",
    "Unflatten",
    "Identity",
    "Dropout2d",
    "NLLLoss",
    "BCELoss",
    "BCEWithLogitsLoss",
    "L1Loss",
    "SmoothL1Loss",
    "HuberLoss",
    "KLDivLoss",
]
# Spatial layers of issue 18 (vkml/nn/spatial.py): 3-D, transposed, adaptive 1-D/3-D, upsampling, shuffles.
from . import spatial as _spatial  # noqa: E402

for _name in _spatial.MODULES:
    globals()[_name] = getattr(_spatial, _name)
__all__ += _spatial.MODULES
del _name
# Layers and losses of issue 18 (vkml/nn/layers_more.py, losses_more.py; one block, appended)
from . import layers_more as _layers_more  # noqa: E402
from . import losses_more as _losses_more  # noqa: E402

for _part in (_layers_more, _losses_more):
    for _name in _part.MODULES:
        globals()[_name] = getattr(_part, _name)
    __all__ += _part.MODULES
del _part, _name
# Power-average pooling and max unpooling of issue 18 (vkml/nn/pooling.py, appended block)
from . import pooling as _pooling  # noqa: E402

for _name in _pooling.MODULES:
    globals()[_name] = getattr(_pooling, _name)
__all__ += _pooling.MODULES
del _name
# Fractional max pooling (vkml/nn/fractional_pool.py)
from . import fractional_pool as _fractional_pool  # noqa: E402

for _name in _fractional_pool.MODULES:
    globals()[_name] = getattr(_fractional_pool, _name)
__all__ += _fractional_pool.MODULES
del _name
# vkml.nn.parallel: DistributedDataParallel and DataParallel for one device (nanoGPT imports them)
from . import parallel  # noqa: E402
from .parallel import DataParallel  # noqa: E402  (torch.nn.DataParallel, as PyTorch's nn exports it)

__all__ += ["parallel", "DataParallel"]
# vkml.nn.modules: the layers under PyTorch's module paths (nn.modules.batchnorm._BatchNorm, ...)
# nn.AdaptiveLogSoftmaxWithLoss (vkml/nn/adaptive.py)
from . import adaptive as _adaptive  # noqa: E402
from . import modules  # noqa: E402, F401

# torch.jit's TorchScript names (script, trace, ignore, ...) as attributes of vkml.jit (vkml/nn/torchscript.py)
from . import torchscript as _torchscript  # noqa: E402, F401

for _name in _adaptive.MODULES:
    globals()[_name] = getattr(_adaptive, _name)
__all__ += _adaptive.MODULES
del _name
__all__ += ["SyncBatchNorm"]  # vkml/nn/sync_batchnorm.py
# PyTorch's recurrent base classes (isinstance checks; built directly they have no forward)
from .rnn import RNNBase, RNNCellBase  # noqa: E402

__all__ += ["RNNBase", "RNNCellBase"]
# PyTorch's lazy convolutions and norms (vkml/nn/lazy.py)
from . import lazy as _lazy  # noqa: E402

for _name in _lazy.MODULES:
    globals()[_name] = getattr(_lazy, _name)
__all__ += _lazy.MODULES
del _name

# Autocast wraps nn.functional's functions as vkml/__init__.py wrapped vkml's (vkml/frontend/amp.py):
# `import vkml` does not load vkml.nn, so the wrapping happens here, once nn.functional is complete.
from ..frontend import amp as _amp  # noqa: E402
from . import functional_layers as _functional_layers  # noqa: E402
from . import functional_spatial as _functional_spatial  # noqa: E402

# the modules' own paths: Conv*d's _conv_forward and ConvTranspose*d's forward call these, not the public names
_amp.install_namespace(functional, [(_functional_layers, "_conv"), (_functional_spatial, "_conv_transpose")])
