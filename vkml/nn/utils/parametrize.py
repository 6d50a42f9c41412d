"""``torch.nn.utils.parametrize``: a parameter or buffer computed from others by modules, on every access.

``register_parametrization(module, "weight", P)`` moves ``module.weight`` to
``module.parametrizations.weight.original`` (or ``original0``, ``original1``, ... where ``P.right_inverse``
returns several tensors) and makes ``module.weight`` a property computing ``P(original)``: gradients
reach the originals, optimizers see the originals as the module's parameters, and ``state_dict`` keys
are PyTorch's (``parametrizations.weight.original``), so checkpoints load both ways. As in PyTorch the
module's class becomes a subclass named ``Parametrized<Class>`` while any parametrization is on it,
assigning ``module.weight = value`` stores ``right_inverse(value)`` in the originals, and inside
``with cached():`` each parametrized tensor is computed once.

>>> import vkml
>>> class Symmetric(vkml.nn.Module):
...     def forward(self, x):
...         return x.triu() + x.triu(1).transpose(0, 1)
>>> layer = vkml.nn.Linear(3, 3)
>>> _ = register_parametrization(layer, "weight", Symmetric())
>>> bool((layer.weight == layer.weight.T).all()), type(layer).__name__, is_parametrized(layer, "weight")
(True, 'ParametrizedLinear', True)
>>> sorted(layer.state_dict())
['bias', 'parametrizations.weight.original']
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Sequence

from ...frontend.autograd import no_grad
from ...tensor import Tensor
from ..containers import ModuleDict, ModuleList
from ..module import Module, Parameter

__all__ = [
    "ParametrizationList",
    "cached",
    "is_parametrized",
    "register_parametrization",
    "remove_parametrizations",
    "transfer_parametrizations_and_params",
    "type_before_parametrizations",
]

# Inside ``cached()`` (nested: a depth), each parametrized tensor is computed once per (module, name).
_cache_depth = 0
_cache: dict[tuple[int, str], Tensor] = {}


@contextlib.contextmanager
def cached():
    """Compute each parametrized tensor once inside the block (e.g. a weight used at every time step).

    >>> import vkml
    >>> with cached():
    ...     pass
    """
    global _cache_depth
    _cache_depth += 1
    try:
        yield
    finally:
        _cache_depth -= 1
        if not _cache_depth:
            _cache.clear()


def _register_parameter_or_buffer(module: Module, name: str, value: Tensor) -> None:
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _set_value(original: Tensor, value: Tensor) -> None:
    """Make ``original`` hold ``value`` in place (PyTorch's ``set_``): the Parameter the optimizer holds stays."""
    original.data = value.detach()


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, and the tensor(s) they start from.

    Holds ``original`` (``right_inverse`` of the tensor, one tensor) or ``original0``, ``original1``, ...
    (``right_inverse`` returned a sequence); the first module takes them all, each next one the previous
    result. Made by ``register_parametrization``.
    """

    def __init__(self, modules: Sequence[Module], original: Tensor, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype
        with no_grad():
            new = original
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
                # else: the original is left as it is (PyTorch's behaviour too)
        if not isinstance(new, (Tensor, Sequence)):
            raise ValueError(
                f"'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). Got {type(new).__name__}"
            )
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError(
                    "When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                    f"original.dtype: {original.dtype}\nright_inverse(original).dtype: {new.dtype}"
                )
            if original.device != new.device:
                raise ValueError(
                    "When `right_inverse` outputs one tensor, it may not change the device.\n"
                    f"original.device: {original.device}\nright_inverse(original).device: {new.device}"
                )
            if new is not original:
                _set_value(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, part in enumerate(new):
                if not isinstance(part, Tensor):
                    raise ValueError(
                        "'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                        f"Got element {i} of the sequence with type {type(part).__name__}."
                    )
                part = part.detach()
                if isinstance(original, Parameter):
                    part = Parameter(part, original.requires_grad)
                part.requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", part)
        if not self.unsafe:
            z = self()
            if not isinstance(z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(z).__name__}.")
            if z.dtype != original_dtype:
                raise ValueError(
                    "Registering a parametrization may not change the dtype of the tensor, unless `unsafe` flag is "
                    f"enabled.\nunparametrized dtype: {original_dtype}\nparametrized dtype: {z.dtype}"
                )
            if tuple(z.shape) != tuple(original_shape):
                raise ValueError(
                    "Registering a parametrization may not change the shape of the tensor, unless `unsafe` flag is "
                    f"enabled.\nunparametrized shape: {original_shape}\nparametrized shape: {z.shape}"
                )

    def right_inverse(self, value: Tensor) -> None:
        """Store ``value`` in the originals: each parametrization's ``right_inverse``, last first."""
        with no_grad():
            for module in reversed(self):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not implement right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(
                        f"The tensor returned by `right_inverse` has dtype {value.dtype} while `original` has dtype "
                        f"{self.original.dtype}"
                    )
                _set_value(self.original, value)
            else:
                if not isinstance(value, Sequence):
                    raise ValueError(f"'right_inverse' must return a sequence of tensors. Got {type(value).__name__}.")
                if len(value) != self.ntensors:
                    raise ValueError(
                        "'right_inverse' must return a sequence of tensors of length "
                        f"{self.ntensors}. Got a sequence of length {len(value)}."
                    )
                for i, part in enumerate(value):
                    original_i = getattr(self, f"original{i}")
                    if not isinstance(part, Tensor):
                        raise ValueError(
                            f"`right_inverse` must return a sequence of tensors. Got element {i} of type {type(part).__name__}"
                        )
                    if original_i.dtype != part.dtype:
                        raise ValueError(
                            f"Tensor {i} returned by `right_inverse` has dtype {part.dtype} while `original{i}` has "
                            f"dtype {original_i.dtype}"
                        )
                    _set_value(original_i, part)

    def forward(self) -> Tensor:
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _inject_new_class(module: Module) -> None:
    """Make ``module`` an instance of a new subclass ``Parametrized<Class>`` (the properties live on it)."""
    cls = module.__class__

    def default_deepcopy(self, memo):
        obj = memo.get(id(self), None)
        if obj is not None:
            return obj
        replica = self.__new__(self.__class__)
        memo[id(self)] = replica
        replica.__dict__ = copy.deepcopy(self.__dict__, memo)
        return replica

    def getstate(self):
        raise RuntimeError(
            "Serialization of parametrized modules is only supported through state_dict(). See:\n"
            "https://pytorch.org/tutorials/beginner/saving_loading_models.html"
            "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training"
        )

    members = {"__getstate__": getstate}
    if not hasattr(cls, "__deepcopy__"):
        members["__deepcopy__"] = default_deepcopy
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), members)


def _inject_property(module: Module, tensor_name: str) -> None:
    def get_parametrized(self) -> Tensor:
        parametrization = self.parametrizations[tensor_name]
        if not _cache_depth:
            return parametrization()
        key = (id(self), tensor_name)
        tensor = _cache.get(key)
        if tensor is None:
            tensor = _cache[key] = parametrization()
        return tensor

    def set_original(self, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has a parametrization (on ``tensor_name``, where given)."""
    parametrizations = getattr(module, "parametrizations", None)
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    return len(parametrizations) > 0 if tensor_name is None else tensor_name in parametrizations


def type_before_parametrizations(module: Module) -> type:
    """The class ``module`` had before its parametrizations (its own class when it has none)."""
    return module.__class__.__bases__[0] if is_parametrized(module) else type(module)


def _check_right_inverse_of(parametrization: Module, x: Tensor, y: Tensor, tensor_name: str) -> None:
    """PyTorch's checks of a parametrization added to a parametrized tensor: its ``right_inverse`` (if it has
    one) of the new value ``x`` must give a tensor of the current value ``y``'s dtype and shape."""
    if not hasattr(parametrization, "right_inverse"):
        return
    try:
        z = parametrization.right_inverse(x)
    except NotImplementedError:
        return
    if not isinstance(z, Tensor):
        raise ValueError(f"parametrization.right_inverse must return a tensor. Got: {type(z).__name__}")
    if z.dtype != y.dtype:
        raise ValueError(
            "The tensor returned by parametrization.right_inverse must have the same dtype as "
            f"module.{tensor_name}, unless the `unsafe` flag is enabled.\nmodule.{tensor_name}.dtype: {y.dtype}\n"
            f"returned dtype: {z.dtype}"
        )
    if tuple(z.shape) != tuple(y.shape):
        raise ValueError(
            "The tensor returned by parametrization.right_inverse must have the same shape as "
            f"module.{tensor_name}, unless the `unsafe` flag is enabled.\nmodule.{tensor_name}.shape: {y.shape}\n"
            f"returned shape: {z.shape}"
        )


def register_parametrization(
    module: Module, tensor_name: str, parametrization: Module, *, unsafe: bool = False
) -> Module:
    """Compute ``module.<tensor_name>`` as ``parametrization(original)`` on every access (PyTorch's function).

    A second call on the same name chains: the new parametrization takes the previous result.
    ``unsafe=True`` skips the checks that the parametrized tensor keeps its dtype and shape.

    >>> import vkml
    >>> class Double(vkml.nn.Module):
    ...     def forward(self, x):
    ...         return 2 * x
    >>> layer = register_parametrization(vkml.nn.Linear(2, 2), "bias", Double())
    >>> bool((layer.bias == 2 * layer.parametrizations.bias.original).all())
    True
    """
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            y = getattr(module, tensor_name)
            x = parametrization(y)
            if not isinstance(x, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(x).__name__}.")
            if x.dtype != y.dtype:
                raise ValueError(
                    "Registering a parametrization may not change the dtype of the tensor, unless the `unsafe` flag "
                    f"is enabled.\nmodule.{tensor_name}.dtype: {y.dtype}\nparametrization(module.{tensor_name}).dtype: "
                    f"{x.dtype}"
                )
            if tuple(x.shape) != tuple(y.shape):
                raise ValueError(
                    "Registering a parametrization may not change the shape of the tensor, unless the `unsafe` flag "
                    f"is enabled.\nmodule.{tensor_name}.shape: {y.shape}\n"
                    f"parametrization(module.{tensor_name}).shape: {x.shape}"
                )
            _check_right_inverse_of(parametrization, x, y, tensor_name)
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = parametrizations
    else:
        raise ValueError(
            f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with name '{tensor_name}'"
        )
    return module


def remove_parametrizations(module: Module, tensor_name: str, leave_parametrized: bool = True) -> Module:
    """Remove the parametrizations on ``tensor_name``: it becomes a plain parameter (or buffer) again,
    holding the parametrized value (``leave_parametrized=True``) or the original."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                _set_value(original, getattr(module, tensor_name))
    else:
        if not leave_parametrized:
            raise ValueError(
                "Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized in terms of "
                "a sequence of tensors."
            )
        value = getattr(module, tensor_name)
        original = Parameter(value.detach(), value.requires_grad) if value.requires_grad else value.detach()
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def transfer_parametrizations_and_params(
    from_module: Module, to_module: Module, tensor_name: str | None = None
) -> Module:
    """Register ``from_module``'s parametrizations (on ``tensor_name``, or all) on ``to_module`` and give its
    originals ``from_module``'s values, as PyTorch's function does (a name ``to_module`` lacks is added as a
    Parameter first)."""
    if not is_parametrized(from_module):
        return to_module
    for name in list(from_module.parametrizations) if tensor_name is None else [tensor_name]:
        source = from_module.parametrizations[name]
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name).detach()))
        for parametrization in source:
            register_parametrization(to_module, name, parametrization)
        target = to_module.parametrizations[name]
        with no_grad():
            if source.is_tensor:
                _set_value(target.original, source.original)
            else:
                for i in range(source.ntensors):
                    _set_value(getattr(target, f"original{i}"), getattr(source, f"original{i}"))
    return to_module
