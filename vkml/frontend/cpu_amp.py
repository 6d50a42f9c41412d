"""``vkml.cpu.amp``: PyTorch's deprecated spellings ``torch.cpu.amp.autocast`` and ``GradScaler``.

They are ``vkml.amp``'s on the CPU device type, with PyTorch's arguments, defaults (autocast's dtype
is bfloat16) and FutureWarning.

>>> import warnings, vkml
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore")
...     with vkml.cpu.amp.autocast(dtype=vkml.float16):
...         pass
"""

from __future__ import annotations

from ..ir import types as T
from .cuda_amp import deprecated_spellings

__all__ = ["GradScaler", "autocast"]

autocast, GradScaler = deprecated_spellings("cpu", T.bfloat16)
