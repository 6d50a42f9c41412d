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


def deprecated_spellings(device_type: str, default_dtype: T.DType) -> tuple[type, type]:
    """``torch.<device_type>.amp``'s ``autocast`` and ``GradScaler``: ``vkml.amp``'s on ``device_type``, with
    PyTorch's defaults and its FutureWarning naming the ``torch.amp`` spelling (shared by vkml.cpu.amp)."""

    class autocast(amp.autocast):  # noqa: N801  (PyTorch's name)
        __doc__ = f"``torch.{device_type}.amp.autocast(enabled, dtype, cache_enabled)``: ``vkml.autocast({device_type!r}, ...)``."

        def __init__(self, enabled: bool = True, dtype=default_dtype, cache_enabled: bool = True):
            warnings.warn(
                f"`torch.{device_type}.amp.autocast(args...)` is deprecated. "
                f"Please use `torch.amp.autocast('{device_type}', args...)` instead.",
                FutureWarning,
                stacklevel=2,
            )
            super().__init__(device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    class GradScaler(_GradScaler):
        __doc__ = f"``torch.{device_type}.amp.GradScaler(...)``: ``vkml.amp.GradScaler({device_type!r}, ...)``."

        def __init__(
            self,
            init_scale: float = 2.0**16,
            growth_factor: float = 2.0,
            backoff_factor: float = 0.5,
            growth_interval: int = 2000,
            enabled: bool = True,
        ) -> None:
            warnings.warn(
                f"`torch.{device_type}.amp.GradScaler(args...)` is deprecated. "
                f"Please use `torch.amp.GradScaler('{device_type}', args...)` instead.",
                FutureWarning,
                stacklevel=2,
            )
            super().__init__(device_type, init_scale, growth_factor, backoff_factor, growth_interval, enabled)

    return autocast, GradScaler


autocast, GradScaler = deprecated_spellings("cuda", T.float16)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """``torch.cuda.amp.custom_fwd``: ``vkml.amp.custom_fwd(device_type="cuda")``."""
    return amp.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd=None):
    """``torch.cuda.amp.custom_bwd``: ``vkml.amp.custom_bwd(device_type="cuda")``."""
    return amp.custom_bwd(bwd, device_type="cuda")
