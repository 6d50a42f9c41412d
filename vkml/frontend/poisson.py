"""``vkml.poisson(rates, generator=None)``: Poisson samples, drawn on the host from vkml's generator.

The algorithm is PyTorch's CPU ``sample_poisson`` (vkml/frontend/mt19937.py): Hörmann's transformed
rejection (PTRS) from rate 10 up, Knuth's products of uniforms below, one element after the other
with the generator's double uniforms. vkml's generator is PyTorch's CPU one (docs/random.md), so
after the same ``manual_seed`` the samples are PyTorch's and the generator ends where PyTorch's does.
The rates are read back (PyTorch's CPU op reads them too); the result is a new tensor on the rates'
device, so the values are the same bits on the CPU and on any Vulkan device.

>>> import vkml
>>> _ = vkml.manual_seed(0)
>>> vkml.poisson(vkml.tensor([0.0, 4.0])).shape
vkml.Size([2])
"""

from __future__ import annotations

import numpy as np

from ..errors import DTypeNotImplementedError
from . import autograd, mt19937
from . import operators as F
from . import random as R
from .exports import Export
from .mutation import torch_name


def poisson(input, generator=None):
    """Samples of Poisson(``input``) elementwise, in ``input``'s float dtype and on its device.

    A negative or NaN rate is PyTorch's RuntimeError, an integer tensor its NotImplementedError; an
    infinite rate raises too (PyTorch's sampler does not end). The gradient is zero, as PyTorch's.
    After the same seed the samples are PyTorch's (the module doc).
    """
    node = F._tensor_node("poisson", input)
    if not node.dtype.is_float:
        raise DTypeNotImplementedError(f"\"poisson_cpu\" not implemented for '{torch_name(node.dtype)}'")
    values = np.asarray(input.detach()._host_values(), np.float64)
    if np.isnan(values).any() or (values < 0).any():
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    if np.isinf(values).any():
        raise RuntimeError("poisson: an infinite rate has no sample (PyTorch's sampler does not end)")
    # float64 counts, converted to the rates' dtype (past 2^24 they round in float32, as PyTorch's)
    out = R.host_draw("poisson", node.shape, node.dtype, node.device, generator, mt19937.poisson, values)
    return autograd.record("poisson", (input,), out)


EXPORTS = (Export("poisson"),)
