"""``Module``, ``Parameter`` and ``Sequential``: PyTorch's containers for trainable tensors.

A ``Parameter`` is a leaf tensor that requires grad and that a ``Module`` finds by attribute.
Parameters keep their identity for their whole life: an optimizer step, ``load_state_dict``
and ``.to(device)`` give a parameter a new node (new values), never a new object, so the
references a user or an optimizer holds stay valid.

>>> import vkml
>>> class Affine(Module):
...     def __init__(self):
...         super().__init__()
...         self.scale = Parameter(vkml.ones(2))
...     def forward(self, x):
...         return x * self.scale
>>> [name for name, _ in Affine().named_parameters()]
['scale']
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

import numpy as np

from ..errors import ShapeError
from ..tensor import Tensor


class Parameter(Tensor):
    """A tensor a ``Module`` trains: a leaf that requires grad (unless told not to).

    >>> Parameter(vkml.zeros(3)).requires_grad
    True
    """

    __slots__ = ()

    def __init__(self, data: Tensor, requires_grad: bool = True):
        super().__init__(data.node, requires_grad=requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()


class IncompatibleKeys(NamedTuple):
    missing_keys: list[str]
    unexpected_keys: list[str]


def _as_array(value) -> np.ndarray:
    """Values of a vkml tensor, a torch tensor, a numpy array or nested lists, as a numpy array."""
    if hasattr(value, "detach") and hasattr(value, "numpy"):
        value = value.detach()
        value = value.cpu() if hasattr(value, "cpu") else value
        return np.asarray(value.numpy())
    return np.asarray(value)


class Module:
    """Base class of layers and models: holds parameters and sub-modules, found by attribute."""

    def __init__(self) -> None:
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "training", True)

    def __setattr__(self, name: str, value: Any) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__}.__init__ must call super().__init__() before setting {name!r}")
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        object.__delattr__(self, name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        setattr(self, name, param)

    def add_module(self, name: str, module: Module | None) -> None:
        setattr(self, name, module)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} has no forward()")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    # ------------------------------------------------------------------ traversal
    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        seen = set()
        stack = [(prefix, self)]
        while stack:
            name, module = stack.pop()
            if id(module) in seen:
                continue
            seen.add(id(module))
            yield name, module
            children = [(f"{name}.{k}" if name else k, m) for k, m in module._modules.items() if m is not None]
            stack.extend(reversed(children))

    def modules(self) -> Iterator[Module]:
        for _, module in self.named_modules():
            yield module

    def children(self) -> Iterator[Module]:
        yield from (m for m in self._modules.values() if m is not None)

    def named_parameters(self, prefix: str = "", recurse: bool = True) -> Iterator[tuple[str, Parameter]]:
        """(dotted name, parameter) pairs, each parameter once, in registration order."""
        seen = set()
        modules = self.named_modules(prefix) if recurse else [(prefix, self)]
        for module_name, module in modules:
            for name, param in module._parameters.items():
                if param is None or id(param) in seen:
                    continue
                seen.add(id(param))
                yield (f"{module_name}.{name}" if module_name else name), param

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict[str, Tensor]:
        """Every parameter by dotted name, detached (the same nodes: no copy)."""
        return {name: param.detach() for name, param in self.named_parameters()}

    def load_state_dict(self, state_dict: dict, strict: bool = True) -> IncompatibleKeys:
        """Copy values into the parameters (from vkml or torch tensors, or numpy arrays); keeps their identity.

        >>> net = Sequential(Linear(2, 2)); net.load_state_dict(net.state_dict())  # doctest: +SKIP
        IncompatibleKeys(missing_keys=[], unexpected_keys=[])
        """
        from ..creation import tensor

        params = dict(self.named_parameters())
        missing = [k for k in params if k not in state_dict]
        unexpected = [k for k in state_dict if k not in params]
        if strict and (missing or unexpected):
            raise KeyError(f"load_state_dict: missing keys {missing}, unexpected keys {unexpected}")
        for name, param in params.items():
            if name not in state_dict:
                continue
            values = _as_array(state_dict[name])
            if tuple(values.shape) != param.shape:
                raise ShapeError(f"load_state_dict: {name!r} has shape {param.shape}, the value {tuple(values.shape)}")
            param.node = tensor(values, dtype=param.dtype, device=param.device).node
        return IncompatibleKeys(missing, unexpected)

    def to(self, device=None, dtype=None) -> Module:
        """Move (copy) every parameter and its gradient to ``device`` and/or cast floats to ``dtype``; in place."""
        for param in self.parameters():
            moved = param.detach()
            if device is not None:
                moved = moved.to(device)
            if dtype is not None and param.dtype.is_float:
                moved = moved.to(dtype)
            param.node = moved.node
            if param.grad is not None:
                param.grad = param.grad.to(param.device).to(param.dtype)
        return self

    def cpu(self) -> Module:
        return self.to("cpu")

    def train(self, mode: bool = True) -> Module:
        """Training mode (dropout active) for this module and every sub-module."""
        for module in self.modules():
            object.__setattr__(module, "training", bool(mode))
        return self

    def eval(self) -> Module:
        return self.train(False)

    def zero_grad(self, set_to_none: bool = True) -> None:
        from ..creation import zeros_like

        for param in self.parameters():
            param.grad = None if set_to_none or param.grad is None else zeros_like(param.grad)

    # ------------------------------------------------------------------ printing
    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = [f"  ({name}): " + repr(m).replace("\n", "\n  ") for name, m in self._modules.items()]
        head = f"{type(self).__name__}({self.extra_repr()}"
        return head + ")" if not lines else head + "\n" + "\n".join(lines) + "\n)"


class Sequential(Module):
    """Modules applied one after another.

    >>> net = Sequential(Linear(2, 8), ReLU(), Linear(8, 3))  # doctest: +SKIP
    """

    def __init__(self, *modules: Module):
        super().__init__()
        for i, module in enumerate(modules):
            self.add_module(str(i), module)

    def forward(self, input):
        for module in self._modules.values():
            input = module(input)
        return input

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self._modules)), module)
        return self

    def __getitem__(self, index: int) -> Module:
        return list(self._modules.values())[index]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())
