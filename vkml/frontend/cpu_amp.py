"""``vkml.cpu.amp``: PyTorch's deprecated spellings ``torch.cpu.amp.autocast`` and ``GradScaler``.

They are ``vkml.amp``'s on the CPU device type, with PyTorch's arguments, defaults (autocast's dtype
is bfloat16, which ``vkml.autocast`` does not run: it warns and turns the region off, as it does
for ``vkml.autocast("cpu", dtype=vkml.bfloat16)``; pass ``dtype=vkml.float16``) and FutureWarning.

>>> import warnings, vkml
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore")
...     with vkml.cpu.amp.autocast(dtype=vkml.float16):
...         pass
"""

from __future__ import annotations

import warnings

from ..ir import types as T
from . import amp
from .grad_scaler import GradScaler as _GradScaler

__all__ = ["GradScaler", "autocast"]


class autocast(amp.autocast):
    """``torch.cpu.amp.autocast(enabled, dtype, cache_enabled)``: ``vkml.autocast("cpu", ...)``."""

    def __init__(self, enabled: bool = True, dtype=T.bfloat16, cache_enabled: bool = True):
        warnings.warn(
            "`torch.cpu.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast('cpu', args...)` instead.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """``torch.cpu.amp.GradScaler(...)``: ``vkml.amp.GradScaler("cpu", ...)``."""

    def __init__(
        self,
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        warnings.warn(
            "`torch.cpu.amp.GradScaler(args...)` is deprecated. Please use `torch.amp.GradScaler('cpu', args...)` instead.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__("cpu", init_scale, growth_factor, backoff_factor, growth_interval, enabled)
