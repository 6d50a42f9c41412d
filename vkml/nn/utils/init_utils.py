"""``torch.nn.utils.skip_init``: build a module whose parameters the caller will overwrite.

As PyTorch's: the module is built on the meta device (its initialization draws nothing, so the
generator stays where PyTorch's does) and given storage on ``device`` with ``to_empty``.
"""

from __future__ import annotations

import inspect

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """``module_cls(*args, **kwargs)`` whose parameter values are left to the caller (it must take ``device``).

    >>> import vkml
    >>> vkml.nn.utils.skip_init(vkml.nn.Linear, 2, 3).weight.shape
    vkml.Size([3, 2])
    """
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = "meta"
    return module_cls(*args, **kwargs).to_empty(device=final_device)
