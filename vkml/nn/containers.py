"""PyTorch's containers: ``Sequential``, ``ModuleList``, ``ModuleDict``, ``ParameterList``, ``ParameterDict``.

Each keeps its members in the ``Module`` tables under their index (``"0"``, ``"1"``, ...) or
key, so parameters inside a container appear in ``named_parameters()`` and ``state_dict()``
with the same names as in PyTorch (``blocks.0.weight``).

>>> import vkml
>>> blocks = ModuleList([vkml.nn.Linear(2, 2) for _ in range(2)])
>>> [name for name, _ in blocks.named_parameters()]
['0.weight', '0.bias', '1.weight', '1.bias']
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from itertools import chain, islice
from typing import Any

from ..tensor import Tensor
from .module import Module, Parameter, _addindent


def _absolute_index(index, length: int) -> int:
    """``index`` (may be negative) as a position in ``range(length)``; IndexError as PyTorch's."""
    index = operator.index(index)
    if not -length <= index < length:
        raise IndexError(f"index {index} is out of range")
    return index % length if length else index


def _renumber(module: Module) -> None:
    """Key the children "0", "1", ... again in their order (after a deletion)."""
    object.__setattr__(module, "_modules", OrderedDict((str(i), m) for i, m in enumerate(module._modules.values())))


def _tensor_line(key, value, type_name: bool = False) -> str:
    """How ``ParameterList``/``ParameterDict`` print one member: its kind, dtype (``ParameterDict``: its
    type name, ``vkml.FloatTensor``, as PyTorch's prints ``torch.typename``), size and non-CPU device."""
    if not isinstance(value, Tensor):
        return f"  ({key}): Object of type: {type(value).__name__}"
    size = "x".join(str(s) for s in value.shape)
    device = "" if value.device.name == "cpu" else f" ({value.device.name})"
    kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
    described = value.type() if type_name else repr(value.dtype)
    return f"  ({key}): {kind} containing: [{described} of size {size}{device}]"


def _check_repeat(sequential, times) -> None:
    if not isinstance(times, int):
        raise TypeError(f"unsupported operand type(s) for *: {type(sequential)} and {type(times)}")
    if times <= 0:
        raise ValueError(f"Non-positive multiplication factor {times} for {type(sequential)}")


class Sequential(Module):
    """Modules applied one after another; built from modules or from an ``OrderedDict`` of named modules.

    >>> from collections import OrderedDict
    >>> net = Sequential(OrderedDict(fc=vkml.nn.Linear(2, 3), act=vkml.nn.ReLU()))
    >>> net(vkml.ones(4, 2)).shape, [name for name, _ in net.named_children()]
    ((4, 3), ['fc', 'act'])
    """

    def __init__(self, *args: Module):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for index, module in enumerate(args):
                self.add_module(str(index), module)

    def forward(self, input):
        for module in self:
            input = module(input)
        return input

    def _key_at(self, index) -> str:
        return list(self._modules)[_absolute_index(index, len(self))]

    def __getitem__(self, index) -> Module | Sequential:
        if isinstance(index, slice):
            return type(self)(OrderedDict(list(self._modules.items())[index]))
        return self._modules[self._key_at(index)]

    def __setitem__(self, index: int, module: Module) -> None:
        setattr(self, self._key_at(index), module)

    def __delitem__(self, index) -> None:
        keys = list(self._modules)[index] if isinstance(index, slice) else [self._key_at(index)]
        for key in keys:
            delattr(self, key)
        _renumber(self)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __add__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        return Sequential(*self, *other)

    def __iadd__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        return self.extend(other)

    def __mul__(self, other: int) -> Sequential:
        """``seq * n``: the modules n times over (the same objects, as PyTorch's)."""
        _check_repeat(self, other)
        return Sequential(*(list(self) * other))

    def __rmul__(self, other: int) -> Sequential:
        return self.__mul__(other)

    def __imul__(self, other: int) -> Sequential:
        _check_repeat(self, other)
        return self.extend(list(self) * (other - 1))

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, sequential: Iterable[Module]) -> Sequential:
        for module in sequential:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        if index < 0:
            index += n
        for i in range(n, index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module
        return self

    def pop(self, key) -> Module:
        value = self[key]
        del self[key]
        return value


class ModuleList(Module):
    """A list of modules whose parameters the owner sees (a Python list would hide them).

    >>> layers = ModuleList([vkml.nn.ReLU()]).append(vkml.nn.Tanh())
    >>> len(layers), layers[-1]
    (2, Tanh())
    """

    def __init__(self, modules: Iterable[Module] | None = None):
        super().__init__()
        if modules is not None:
            self += modules

    def __getitem__(self, index) -> Module | ModuleList:
        if isinstance(index, slice):
            return type(self)(list(self._modules.values())[index])
        return self._modules[str(_absolute_index(index, len(self)))]

    def __setitem__(self, index: int, module: Module) -> None:
        setattr(self, str(_absolute_index(index, len(self))), module)

    def __delitem__(self, index) -> None:
        if isinstance(index, slice):
            for key in list(self._modules)[index]:
                delattr(self, key)
        else:
            delattr(self, str(_absolute_index(index, len(self))))
        _renumber(self)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        return ModuleList(chain(self, other))

    def __dir__(self) -> list[str]:
        return [key for key in super().__dir__() if not key.isdigit()]

    def insert(self, index: int, module: Module) -> None:
        for i in range(len(self._modules), index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module

    def append(self, module: Module) -> ModuleList:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        if not isinstance(modules, Iterable):
            raise TypeError(f"ModuleList.extend should be called with an iterable, but got {type(modules).__name__}")
        offset = len(self)
        for i, module in enumerate(modules):
            self.add_module(str(offset + i), module)
        return self

    def pop(self, key) -> Module:
        value = self[key]
        del self[key]
        return value

    def __repr__(self) -> str:
        """As PyTorch: runs of equal modules print once, as ``(0-2): 3 x Linear(...)``."""
        reprs = [repr(module) for module in self]
        if not reprs:
            return self._get_name() + "()"
        runs: list[list[Any]] = []  # [first index, last index, repr]
        for i, text in enumerate(reprs):
            if runs and runs[-1][2] == text:
                runs[-1][1] = i
            else:
                runs.append([i, i, text])
        lines = []
        for first, last, text in runs:
            line = f"({first}): {text}" if first == last else f"({first}-{last}): {last - first + 1} x {text}"
            lines.append(_addindent(line, 2))
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """An ordered dict of modules whose parameters the owner sees.

    >>> heads = ModuleDict({"cls": vkml.nn.Linear(4, 2), "reg": vkml.nn.Linear(4, 1)})
    >>> list(heads), "cls" in heads
    (['cls', 'reg'], True)
    """

    def __init__(self, modules: Mapping[str, Module] | Iterable | None = None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def clear(self) -> None:
        self._modules.clear()

    def pop(self, key: str) -> Module:
        value = self[key]
        del self[key]
        return value

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules) -> None:
        if not isinstance(modules, Iterable):
            raise TypeError(
                "ModuleDict.update should be called with an iterable of key/value pairs, but got "
                + type(modules).__name__
            )
        if isinstance(modules, (Mapping, ModuleDict)):
            for key, module in modules.items():
                self[key] = module
            return
        for j, pair in enumerate(modules):
            if not isinstance(pair, Iterable):
                raise TypeError(f"ModuleDict update sequence element #{j} should be Iterable; is {type(pair).__name__}")
            if len(pair) != 2:
                raise ValueError(f"ModuleDict update sequence element #{j} has length {len(pair)}; 2 is required")
            self[pair[0]] = pair[1]


class ParameterList(Module):
    """A list of parameters (tensors given to it become Parameters), visible to the owner.

    >>> scales = ParameterList([vkml.ones(2) for _ in range(3)])
    >>> len(scales), [name for name, _ in scales.named_parameters()]
    (3, ['0', '1', '2'])
    """

    def __init__(self, values: Iterable | None = None):
        super().__init__()
        object.__setattr__(self, "_size", 0)
        if values is not None:
            self += values

    def __getitem__(self, index):
        if isinstance(index, slice):
            return type(self)(self[i] for i in range(*index.indices(len(self))))
        return getattr(self, str(_absolute_index(index, len(self))))

    def __setitem__(self, index: int, value) -> None:
        index = _absolute_index(index, len(self))
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, str(index), value)

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator:
        return (self[i] for i in range(len(self)))

    def __iadd__(self, values: Iterable) -> ParameterList:
        return self.extend(values)

    def __dir__(self) -> list[str]:
        return [key for key in super().__dir__() if not key.isdigit()]

    def append(self, value) -> ParameterList:
        object.__setattr__(self, "_size", self._size + 1)
        self[self._size - 1] = value
        return self

    def extend(self, values: Iterable) -> ParameterList:
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise TypeError(f"ParameterList.extend should be called with an iterable, but got {type(values).__name__}")
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return "\n".join(_tensor_line(i, value) for i, value in enumerate(self))

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """An ordered dict of parameters (tensors given to it become Parameters), visible to the owner.

    A plain ``dict`` is read in sorted key order, an ``OrderedDict`` in its own, as PyTorch does.

    >>> table = ParameterDict({"b": vkml.zeros(2), "a": vkml.ones(3)})
    >>> list(table), table["a"].shape
    (['a', 'b'], (3,))
    """

    def __init__(self, parameters: Any = None):
        super().__init__()
        object.__setattr__(self, "_keys", {})
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str):
        return getattr(self, key)

    def __setitem__(self, key: str, value) -> None:
        self._keys[key] = None
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, key, value)

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __reversed__(self) -> Iterator[str]:
        return reversed(list(self._keys))

    def __contains__(self, key: str) -> bool:
        return key in self._keys

    def copy(self) -> ParameterDict:
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def fromkeys(self, keys: Iterable[str], default=None) -> ParameterDict:
        """A new ParameterDict with each of ``keys`` holding ``default``."""
        return ParameterDict((k, default) for k in keys)

    def __or__(self, other: ParameterDict) -> ParameterDict:
        merged = self.copy()
        merged.update(other)
        return merged

    def __ror__(self, other: ParameterDict) -> ParameterDict:
        merged = other.copy()
        merged.update(self)
        return merged

    def __ior__(self, other: ParameterDict) -> ParameterDict:
        self.update(other)
        return self

    def setdefault(self, key: str, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        for key in list(self._keys):
            del self[key]

    def pop(self, key: str):
        value = self[key]
        del self[key]
        return value

    def popitem(self) -> tuple[str, Any]:
        key = next(reversed(self))
        return key, self.pop(key)

    def get(self, key: str, default=None):
        return self[key] if key in self else default

    def keys(self):
        return self._keys.keys()

    def items(self):
        return ((k, self[k]) for k in self._keys)

    def values(self):
        return (self[k] for k in self._keys)

    def update(self, parameters) -> None:
        if not isinstance(parameters, Iterable):
            raise TypeError(
                "ParametersDict.update should be called with an iterable of key/value pairs, but got "
                + type(parameters).__name__
            )
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            pairs = list(parameters.items())
        elif isinstance(parameters, Mapping):
            pairs = sorted(parameters.items())
        else:
            pairs = []
            for j, pair in enumerate(parameters):
                if not isinstance(pair, Iterable):
                    raise TypeError(
                        f"ParameterDict update sequence element #{j} should be Iterable; is {type(pair).__name__}"
                    )
                if len(pair) != 2:
                    raise ValueError(
                        f"ParameterDict update sequence element #{j} has length {len(pair)}; 2 is required"
                    )
                pairs.append(tuple(islice(pair, 2)))
        for key, value in pairs:
            self[key] = value

    def extra_repr(self) -> str:
        return "\n".join(_tensor_line(key, value, type_name=True) for key, value in self.items())

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterDict should not be called.")
