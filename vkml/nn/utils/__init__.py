"""``torch.nn.utils``'s helpers: gradient clipping, parameters as one flat vector, ``rnn`` (padding and packing),
``parametrize`` and ``parametrizations`` (weight and spectral norm as parametrizations), ``prune``
(masks kept beside parameters)."""

from . import fusion, parametrizations, parametrize, prune, rnn, stateless
from .clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights
from .init_utils import skip_init
from .memory_format import convert_conv2d_weight_memory_format, convert_conv3d_weight_memory_format
from .weight_norms import remove_spectral_norm, remove_weight_norm, spectral_norm, weight_norm

__all__ = [
    "rnn",
    "prune",
    "stateless",
    "fusion",
    "fuse_conv_bn_eval",
    "fuse_conv_bn_weights",
    "fuse_linear_bn_eval",
    "fuse_linear_bn_weights",
    "skip_init",
    "convert_conv2d_weight_memory_format",
    "convert_conv3d_weight_memory_format",
    "parametrize",
    "parametrizations",
    "clip_grad_norm",
    "clip_grad_norm_",
    "clip_grad_value_",
    "clip_grads_with_norm_",
    "get_total_norm",
    "parameters_to_vector",
    "vector_to_parameters",
    "weight_norm",
    "remove_weight_norm",
    "spectral_norm",
    "remove_spectral_norm",
]
