"""``torch.nn.utils.skip_init``: build a module whose parameters the caller will overwrite.

PyTorch builds it on the meta device and allocates uninitialized memory; vkml has no meta device, so
the module is built as usual on ``device``: its initial values are as unspecified as PyTorch's
uninitialized ones, and the caller sets every parameter anyway.
"""

from __future__ import annotations

import inspect

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """``module_cls(*args, **kwargs)`` whose parameter values are left to the caller (it must take ``device``)."""
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    return module_cls(*args, **kwargs)
