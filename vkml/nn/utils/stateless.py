"""``torch.nn.utils.stateless``: ``functional_call`` under its name before ``torch.func``, deprecated there too.

>>> import vkml, warnings
>>> layer = vkml.nn.Linear(2, 1)
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore", FutureWarning)
...     out = functional_call(layer, {"weight": vkml.ones(1, 2), "bias": vkml.zeros(1)}, (vkml.ones(1, 2),))
>>> out.tolist()
[[2.0]]
"""

from __future__ import annotations

import warnings

from ...frontend.func import functional_call as _functional_call

__all__ = ["functional_call"]


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """``vkml.func.functional_call``, with PyTorch's FutureWarning."""
    warnings.warn(
        "`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed in a "
        "future version of PyTorch. Please use `torch.func.functional_call` instead which is a drop-in replacement.",
        FutureWarning,
        stacklevel=2,
    )
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)
