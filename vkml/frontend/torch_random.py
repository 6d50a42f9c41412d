"""``vkml.random``: ``torch.random``'s names — the default generator's seeding, state and ``fork_rng``.

>>> import vkml
>>> _ = vkml.random.manual_seed(0)
>>> with vkml.random.fork_rng():
...     _ = vkml.rand(3)
>>> round(vkml.rand(1).item(), 4)  # the draw inside the fork did not advance the stream
0.4963
"""

from __future__ import annotations

import contextlib

from . import random as _random
from .rng_state import get_rng_state, set_rng_state
from .torch_names import initial_seed, seed

manual_seed = _random.manual_seed
default_generator = _random.default_generator

__all__ = ["default_generator", "fork_rng", "get_rng_state", "initial_seed", "manual_seed", "seed", "set_rng_state"]


@contextlib.contextmanager
def fork_rng(
    devices=None, enabled: bool = True, _caller: str = "fork_rng", _devices_kw: str = "devices", device_type="cuda"
):
    """Run the block with the default generator's state saved and restored after it (``torch.random.fork_rng``).

    vkml has one generator for every device, so ``devices`` and ``device_type`` choose nothing.
    """
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
