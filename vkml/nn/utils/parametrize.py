"""``torch.nn.utils.parametrize``: a module's parameter or buffer computed from others on each access.

``register_parametrization(module, "weight", P)`` moves ``module.weight`` to
``module.parametrizations.weight.original`` (``original0``, ``original1``, ... when ``P.right_inverse``
returns a tuple) and makes ``module.weight`` a property of a subclass made for the module
(``Parametrized<Class>``, as PyTorch names it) that returns ``P(original)``; assigning
``module.weight = x`` writes ``P.right_inverse(x)`` into the originals. The state dict keys are
PyTorch's (``parametrizations.weight.original``), so checkpoints load both ways.

>>> import vkml
>>> class Symmetric(vkml.nn.Module):
...     def forward(self, x):
...         return x.triu() + x.triu(1).transpose(-1, -2)
>>> layer = register_parametrization(vkml.nn.Linear(3, 3), "weight", Symmetric())
>>> type(layer).__name__, sorted(layer.state_dict())
('ParametrizedLinear', ['bias', 'parametrizations.weight.original'])
>>> bool((layer.weight == layer.weight.T).all())
True
"""

from __future__ import annotations

import contextlib

from ...frontend.autograd import no_grad
from ...tensor import Tensor
from ..containers import ModuleDict, ModuleList
from ..module import Module, Parameter

_cache_enabled = 0
_cache: dict = {}


@contextlib.contextmanager
def cached():
    """Inside the block, each parametrized tensor is computed once, on its first access."""
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


def _register_parameter_or_buffer(module: Module, name: str, value: Tensor) -> None:
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _as_original(value: Tensor, like: Tensor) -> Tensor:
    """``value`` held as ``like`` is: a Parameter (with its requires_grad) or a plain buffer tensor."""
    if isinstance(like, Parameter):
        return Parameter(value.detach(), requires_grad=like.requires_grad)
    return value.detach()


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, and the original tensor(s) they start from."""

    def __init__(self, modules, original: Tensor, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        with no_grad():
            new = original
            for module in reversed(self):  # type: ignore[call-overload]
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, Tensor) and not isinstance(new, list | tuple):
            raise ValueError(
                f"'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). Got {type(new).__name__}"
            )
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if not unsafe and (new.dtype != original.dtype or tuple(new.shape) != tuple(original.shape)):
                raise ValueError(
                    "When `right_inverse` outputs one tensor, it may not change the dtype or shape.\n"
                    f"original.dtype: {original.dtype}\nright_inverse(original).dtype: {new.dtype}\n"
                    f"original.shape: {tuple(original.shape)}\nright_inverse(original).shape: {tuple(new.shape)}"
                )
            # the module's own Parameter object stays the original when right_inverse leaves it as it is,
            # so an optimizer made before the registration still updates it (PyTorch keeps it by set_)
            _register_parameter_or_buffer(
                self, "original", original if new is original else _as_original(new, original)
            )
        else:
            for i, originali in enumerate(new):
                if not isinstance(originali, Tensor):
                    raise ValueError(
                        "'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                        f"Got element {i} of the sequence with type {type(originali).__name__}."
                    )
                _register_parameter_or_buffer(self, f"original{i}", _as_original(originali, original))

    def right_inverse(self, value: Tensor) -> None:
        """Write ``value`` into the originals, through each parametrization's ``right_inverse`` in reverse."""
        with no_grad():
            for module in reversed(self):  # type: ignore[call-overload]
                if hasattr(module, "right_inverse"):
                    value = module.right_inverse(value)
                else:
                    raise RuntimeError(f"parametrization {type(module).__name__} does not implement right_inverse.")
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
                self.original.copy_(value)
            else:
                if not isinstance(value, list | tuple) or len(value) != self.ntensors:
                    raise ValueError(f"'right_inverse' must return a sequence of tensors of length {self.ntensors}.")
                for i, tensor in enumerate(value):
                    getattr(self, f"original{i}").copy_(tensor)

    def forward(self) -> Tensor:
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _inject_new_class(module: Module) -> None:
    """Give ``module`` a subclass of its class of its own, to hold the parametrized tensors' properties."""
    cls = module.__class__
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), {})


def _inject_property(module: Module, tensor_name: str) -> None:
    def get_parametrized(self) -> Tensor:
        parametrization = self.parametrizations[tensor_name]
        if _cache_enabled:
            key = (id(self), tensor_name)
            if key not in _cache:
                _cache[key] = parametrization()
            return _cache[key]
        return parametrization()

    def set_original(self, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has a parametrization (on ``tensor_name``, when given)."""
    parametrizations = getattr(module, "parametrizations", None)
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    return len(parametrizations) > 0 if tensor_name is None else tensor_name in parametrizations


def type_before_parametrizations(module: Module) -> type:
    """The module's class before any parametrization was registered."""
    return module.__class__.__bases__[0] if is_parametrized(module) else type(module)


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *, unsafe: bool = False):
    """Make ``module.<tensor_name>`` the output of ``parametrization`` (after any registered before it)."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        parametrizations = module.parametrizations[tensor_name]
        if not unsafe:
            before = getattr(module, tensor_name)
            after = parametrization(before)
            _check_consistent(before, after)
        parametrizations.append(parametrization)
        parametrizations.unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        if not unsafe:
            _check_consistent(original, parametrizations())
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = parametrizations
    else:
        raise ValueError(
            f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with name "
            f"'{tensor_name}'"
        )
    return module


def _check_consistent(original: Tensor, value) -> None:
    if not isinstance(value, Tensor):
        raise ValueError(f"A parametrization must return a tensor. Got {type(value).__name__}.")
    if value.dtype != original.dtype:
        raise ValueError(
            "Registering a parametrization may not change the dtype of the tensor, unless `unsafe` flag is enabled.\n"
            f"unparametrized dtype: {original.dtype}\nparametrized dtype: {value.dtype}"
        )
    if tuple(value.shape) != tuple(original.shape):
        raise ValueError(
            "Registering a parametrization may not change the shape of the tensor, unless `unsafe` flag is enabled.\n"
            f"unparametrized shape: {tuple(original.shape)}\nparametrized shape: {tuple(value.shape)}"
        )


def remove_parametrizations(module: Module, tensor_name: str, leave_parametrized: bool = True):
    """Undo ``register_parametrization``: ``module.<tensor_name>`` a plain parameter or buffer again, holding
    the parametrized value (``leave_parametrized=True``) or the original."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                value = getattr(module, tensor_name)
                original.copy_(value)
    else:
        if not leave_parametrized:
            raise ValueError(
                "Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized in terms of "
                "a sequence of tensors."
            )
        with no_grad():
            value = getattr(module, tensor_name)
        first = parametrizations.original0
        original = Parameter(value.detach(), value.requires_grad) if isinstance(first, Parameter) else value.detach()
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def transfer_parametrizations_and_params(from_module: Module, to_module: Module, tensor_name: str | None = None):
    """Register ``from_module``'s parametrizations (of ``tensor_name``, or all) on ``to_module``, originals copied."""
    if not is_parametrized(from_module):
        raise ValueError(f"Module {from_module} does not have any parametrizations")
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        source = from_module.parametrizations[name]
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        for parametrization in source:
            register_parametrization(to_module, name, parametrization)
        with no_grad():
            target = to_module.parametrizations[name]
            for key in ("original",) if source.is_tensor else (f"original{i}" for i in range(source.ntensors)):
                setattr(target, key, Parameter(getattr(source, key).detach().clone()))
    return to_module


__all__ = [
    "cached",
    "is_parametrized",
    "register_parametrization",
    "remove_parametrizations",
    "transfer_parametrizations_and_params",
    "type_before_parametrizations",
    "ParametrizationList",
]
