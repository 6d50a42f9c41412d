"""``torch.nn.modules.module``: Module, the global hooks' registration functions, and their tables.

The tables (``_global_forward_hooks`` ...) live in vkml/nn/global_hooks.py; reading one here reads it
there, and assigning one here (PyTorch's tests reset them so in tearDown) replaces it there.
"""

import sys
import types

from .. import global_hooks
from ._export import export

export(
    globals(),
    ["Module"],
    {
        "_IncompatibleKeys": "vkml.nn.loading",
        "_addindent": "vkml.nn.module",  # custom __repr__s nest their children's with it
        **{name: "vkml.nn.global_hooks" for name in global_hooks.__all__},
    },
)


def __getattr__(name: str):
    if name.startswith("_global_") and hasattr(global_hooks, name):
        return getattr(global_hooks, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _Namespace(types.ModuleType):
    def __setattr__(self, name: str, value) -> None:
        if name.startswith("_global_") and hasattr(global_hooks, name):
            setattr(global_hooks, name, value)
        else:
            super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Namespace
