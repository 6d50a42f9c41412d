"""``OptimizedModule``: what ``vkml.compile(module)`` returns, shaped as PyTorch's.

PyTorch's ``torch.compile(model)`` wraps the model in an ``OptimizedModule`` whose one sub-module is
``_orig_mod``: calls, attribute reads and writes go to the model, and the wrapper's ``state_dict``,
``named_parameters`` and ``named_modules`` name everything under ``_orig_mod.`` (a checkpoint saved
from the compiled model has those keys; loading it needs the wrapper or the prefix stripped).
Programs rely on both, so vkml's wrapper is the same; calling it calls the model, since vkml fuses
every realize's graph without a compile step (vkml/frontend/compat.py).

>>> import vkml
>>> net = vkml.nn.Linear(2, 3)
>>> fast = vkml.compile(net)
>>> fast._orig_mod is net, list(fast.state_dict())
(True, ['_orig_mod.weight', '_orig_mod.bias'])
"""

from __future__ import annotations

from typing import Any

from .module import Module


class OptimizedModule(Module):
    """The wrapper ``vkml.compile(module)`` returns: ``_orig_mod`` is the module, which runs the calls."""

    # Attributes the wrapper keeps itself (PyTorch's set, less what only dynamo has); any other
    # attribute it is given is set on the module.
    _opt_mod_attributes = frozenset({"_orig_mod", "dynamo_ctx", "forward", "_forward", "__dict__"})

    def __init__(self, mod: Module, dynamo_ctx: Any = None) -> None:
        # first: attribute reads of the wrapper go to _orig_mod, also while Module.__init__ runs
        object.__setattr__(self, "_orig_mod", mod)
        super().__init__()
        self._orig_mod = mod  # registered as the sub-module (Module.__setattr__): the "_orig_mod." keys
        self.dynamo_ctx = dynamo_ctx
        self.forward = mod.__call__  # the module's own hooks run, as under PyTorch's wrapper
        # training is the module's: reads find it there (__getattr__), writes go there (__setattr__)
        del self.__dict__["training"]

    def __getattr__(self, name: str) -> Any:
        modules = self.__dict__.get("_modules")
        if modules is None or "_orig_mod" not in modules:
            # half built (copy.deepcopy and pickle make the object before its state): nothing to forward to
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        if name == "_orig_mod":
            return modules["_orig_mod"]
        return getattr(modules["_orig_mod"], name)

    def __setattr__(self, name: str, value: Any) -> None:
        if hasattr(type(self), name) or name in OptimizedModule._opt_mod_attributes:
            return super().__setattr__(name, value)
        return setattr(self._orig_mod, name, value)

    def __len__(self) -> int:
        return len(self._orig_mod)
