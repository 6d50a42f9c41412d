"""``vkml.get_rng_state`` / ``vkml.set_rng_state``: the default generator's state as a uint8 tensor,
as ``torch.get_rng_state`` gives it, so a checkpoint can hold it (``vkml.save``) and a resumed run
draws the same dropout masks and random tensors as the run it continues.

The state is the generator's (seed, offset) as two little-endian 64-bit words: 16 bytes (PyTorch's
CPU state is its Mersenne Twister's 5056 bytes; either is opaque to the program that stores it).

>>> import vkml
>>> state = vkml.get_rng_state()
>>> a = vkml.rand(2)
>>> vkml.set_rng_state(state)
>>> bool((vkml.rand(2) == a).all())
True
"""

from __future__ import annotations

import numpy as np

from ..ir import types as T
from ..tensor import Tensor
from . import random
from .creation import tensor

_NBYTES = 16


def get_rng_state():
    """The default generator's state: a uint8 tensor of 16 bytes (module docstring)."""
    seed, offset = random.default_generator.get_state()
    return tensor(np.array([seed, offset], dtype="<u8").view(np.uint8), dtype=T.uint8)


def set_rng_state(new_state) -> None:
    """Restore the default generator's state from ``get_rng_state()``'s tensor."""
    if not isinstance(new_state, Tensor):
        raise TypeError(f"set_rng_state(): expected a vkml.uint8 tensor, but got {type(new_state).__name__}")
    if new_state.dtype is not T.uint8:
        raise TypeError(f"set_rng_state(): the RNG state must be a vkml.uint8 tensor, got {new_state.dtype}")
    if new_state.numel() != _NBYTES:
        raise RuntimeError(
            f"set_rng_state(): expected a generator state of {_NBYTES} bytes, but found {new_state.numel()}"
        )
    seed, offset = np.ascontiguousarray(new_state.numpy().reshape(-1)).view("<u8").tolist()
    random.default_generator.set_state((seed, offset))
