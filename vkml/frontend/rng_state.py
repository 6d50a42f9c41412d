"""``vkml.get_rng_state`` / ``vkml.set_rng_state``: the default generator's state as a uint8 tensor,
byte for byte ``torch.get_rng_state``'s (PyTorch's CPU generator state, 5056 bytes: the seed, the
Mersenne Twister's 624 words and position, the cached normal value), so a checkpoint written by
either library restores the same stream in the other.

>>> import vkml
>>> state = vkml.get_rng_state()
>>> a = vkml.rand(2)
>>> vkml.set_rng_state(state)
>>> bool((vkml.rand(2) == a).all())
True
"""

from __future__ import annotations

from . import random


def get_rng_state():
    """The default generator's state: a uint8 tensor of 5056 bytes (module docstring)."""
    return random.default_generator.get_state()


def set_rng_state(new_state) -> None:
    """Restore the default generator's state from ``get_rng_state()``'s tensor (or PyTorch's)."""
    random.default_generator._engine_load(random.state_bytes("set_rng_state", new_state))
