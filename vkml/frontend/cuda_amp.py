"""``vkml.cuda.amp``: PyTorch's older spellings ``torch.cuda.amp.autocast``, ``GradScaler``,
``custom_fwd`` and ``custom_bwd``, for scripts written before ``torch.amp``.

They are ``vkml.amp``'s on the Vulkan device type (what ``"cuda"`` names in vkml), with PyTorch's
FutureWarning that the spelling is deprecated.

>>> import warnings, vkml
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore")
...     with vkml.cuda.amp.autocast():
...         pass
"""

from __future__ import annotations

import warnings

from ..ir import types as T
from . import amp
from .grad_scaler import GradScaler as _GradScaler

__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd"]


class autocast(amp.autocast):
    """``torch.cuda.amp.autocast(enabled, dtype, cache_enabled)``: ``vkml.autocast("cuda", ...)``."""

    def __init__(self, enabled: bool = True, dtype=T.float16, cache_enabled: bool = True):
        warnings.warn(
            "`torch.cuda.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast('cuda', args...)` instead.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """``torch.cuda.amp.GradScaler(...)``: ``vkml.amp.GradScaler("cuda", ...)``."""

    def __init__(
        self,
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        warnings.warn(
            "`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use `torch.amp.GradScaler('cuda', args...)` instead.",
            FutureWarning,
            stacklevel=2,
        )
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """``torch.cuda.amp.custom_fwd``: ``vkml.amp.custom_fwd(device_type="cuda")``."""
    return amp.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd=None):
    """``torch.cuda.amp.custom_bwd``: ``vkml.amp.custom_bwd(device_type="cuda")``."""
    return amp.custom_bwd(bwd, device_type="cuda")
