"""``torch.nn.utils.prune``: zero a parameter's entries through a mask kept beside it.

Pruning ``module.weight`` moves the parameter to ``module.weight_orig``, adds the buffer
``module.weight_mask`` and makes ``module.weight`` the plain tensor ``weight_mask * weight_orig``,
recomputed before every forward by the pruning method, which sits in the module's forward
pre-hooks. Optimizers therefore train ``weight_orig`` (its pruned entries get zero gradient),
``state_dict`` holds ``weight_orig`` and ``weight_mask`` as PyTorch's does, and ``remove`` makes
the masked values the parameter again. Pruning a parameter twice combines the masks in a
``PruningContainer``: the new method only sees the entries (unstructured) or channels (structured)
still alive. ``random_*`` draw from vkml's generator, so their masks differ from PyTorch's for the
same seed; the magnitude methods pick PyTorch's entries (``topk`` of the magnitudes; ties between
equal magnitudes may resolve to other indices).

>>> import vkml
>>> layer = vkml.nn.Linear(4, 2)
>>> _ = l1_unstructured(layer, "weight", amount=0.25)
>>> sorted(layer.state_dict()), int((layer.weight == 0).sum())
(['bias', 'weight_mask', 'weight_orig'], 2)
>>> _ = remove(layer, "weight")
>>> sorted(layer.state_dict()), is_pruned(layer)
(['bias', 'weight'], False)
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable

from ...frontend.creation import ones_like, zeros_like
from ...frontend.random import rand, rand_like
from ...tensor import Tensor
from ..module import Module
from .convert_parameters import parameters_to_vector

__all__ = [
    "BasePruningMethod",
    "CustomFromMask",
    "Identity",
    "L1Unstructured",
    "LnStructured",
    "PruningContainer",
    "RandomStructured",
    "RandomUnstructured",
    "custom_from_mask",
    "global_unstructured",
    "identity",
    "is_pruned",
    "l1_unstructured",
    "ln_structured",
    "random_structured",
    "random_unstructured",
    "remove",
]


class BasePruningMethod:
    """A way of computing a mask; an instance is the forward pre-hook that applies it to its parameter.

    A subclass defines ``PRUNING_TYPE`` (``"unstructured"``, ``"structured"`` with a ``dim``
    attribute, or ``"global"``) and ``compute_mask(t, default_mask)``.
    """

    _tensor_name: str
    PRUNING_TYPE: str

    def __call__(self, module: Module, inputs) -> None:
        setattr(module, self._tensor_name, self.apply_mask(module))

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} must define compute_mask(t, default_mask)")

    def apply_mask(self, module: Module) -> Tensor:
        if not hasattr(self, "_tensor_name"):
            raise AttributeError(f"Module {module} has to be pruned")
        orig = getattr(module, self._tensor_name + "_orig")
        mask = getattr(module, self._tensor_name + "_mask")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module: Module, name: str, *args, importance_scores=None, **kwargs):
        """Prune ``module.<name>`` with ``cls(*args, **kwargs)`` (combined with an earlier method of that name)."""
        old_method, old_keys = None, []
        for key, hook in module._forward_pre_hooks.items():
            if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
                if old_method is not None:
                    raise RuntimeError(f"More than one pruning method is acting on the parameter named '{name}'")
                old_method, old_keys = hook, [key]
        orig = getattr(module, name)
        if importance_scores is not None and tuple(importance_scores.shape) != tuple(orig.shape):
            raise AssertionError(
                f"importance_scores should have the same shape as parameter {name} of {module}, "
                f"got {importance_scores.shape} vs {orig.shape}"
            )

        if old_method is None:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()

        method = cls(*args, **kwargs)
        method._tensor_name = name
        if isinstance(old_method, PruningContainer):
            old_method.add_pruning_method(method)
            method = old_method
        elif old_method is not None:
            container = PruningContainer(old_method)
            container.add_pruning_method(method)
            method = container

        try:
            scores = importance_scores if importance_scores is not None else orig
            mask = method.compute_mask(scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            for key in old_keys:
                del module._forward_pre_hooks[key]
            module.register_forward_pre_hook(method)
        except Exception:
            if old_method is None:  # leave the module as it was
                orig = getattr(module, name + "_orig")
                module._buffers.pop(name + "_mask", None)
                module.__dict__.pop(name, None)
                del module._parameters[name + "_orig"]
                module.register_parameter(name, orig)
            raise
        return method

    def prune(self, t: Tensor, default_mask: Tensor | None = None, importance_scores: Tensor | None = None) -> Tensor:
        """``t`` with this method's mask applied (the module is not touched)."""
        if importance_scores is not None and tuple(importance_scores.shape) != tuple(t.shape):
            raise AssertionError(
                f"importance_scores should have the same shape as tensor t, got {importance_scores.shape} vs {t.shape}"
            )
        scores = importance_scores if importance_scores is not None else t
        mask = self.compute_mask(scores, default_mask=default_mask if default_mask is not None else ones_like(t))
        return t * mask

    def remove(self, module: Module) -> None:
        """Make the pruned values ``module.<name>``'s parameter again, dropping ``_orig`` and ``_mask``."""
        if not hasattr(self, "_tensor_name"):
            raise AttributeError(f"Module {module} has to be pruned before pruning can be removed")
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = weight.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


class PruningContainer(BasePruningMethod):
    """The methods applied one after another to one parameter; the last one's mask is computed on what
    the earlier ones left."""

    def __init__(self, *args) -> None:
        self._pruning_methods: tuple[BasePruningMethod, ...] = ()
        if len(args) == 1:
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method) -> None:
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError(
                "Can only add pruning methods acting on the parameter named "
                f"'{self._tensor_name}' to PruningContainer. Found '{method._tensor_name}'"
            )
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        method = self._pruning_methods[-1]
        mask = default_mask.to(dtype=t.dtype)
        if method.PRUNING_TYPE == "unstructured":
            alive = mask == 1
            new = mask.clone()
            new[alive] = method.compute_mask(t[alive], default_mask=mask[alive]).to(dtype=mask.dtype)
            return new
        if method.PRUNING_TYPE == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError(
                    "Pruning methods of PRUNING_TYPE 'structured' need to have the attribute `dim` defined."
                )
            dim = method.dim + t.dim() if method.dim < 0 else method.dim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor with dimensions {t.dim()}")
            keep = mask.sum(dim=[d for d in range(t.dim()) if d != dim]) != 0
            index = (slice(None),) * dim + (keep,)
            new = mask.clone()
            new[index] = method.compute_mask(t[index], default_mask=mask[index]).to(dtype=mask.dtype)
            return new
        if method.PRUNING_TYPE == "global":
            return method.compute_mask(t, default_mask=mask).to(dtype=mask.dtype)
        raise ValueError(f"Unrecognized PRUNING_TYPE {method.PRUNING_TYPE}")


class Identity(BasePruningMethod):
    """Prunes nothing: the mask stays all ones (a hook and the ``_orig``/``_mask`` layout all the same)."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


def _check_amount(amount) -> None:
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
        not isinstance(amount, numbers.Integral) and not 0.0 <= float(amount) <= 1.0
    ):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def _count(amount, size: int) -> int:
    """How many of ``size`` entries ``amount`` prunes (a count, or a fraction rounded half to even)."""
    if isinstance(amount, numbers.Integral):
        if amount > size:
            raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={size}")
        return int(amount)
    return round(amount * size)


def _validate_pruning_amount_init(amount) -> None:
    """PyTorch's name for the check a pruning method makes of ``amount`` when it is made."""
    _check_amount(amount)


def _validate_pruning_amount(amount, tensor_size: int) -> None:
    """PyTorch's name for the check of an integer ``amount`` against the entries there are to prune."""
    if isinstance(amount, numbers.Integral) and amount > tensor_size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={tensor_size}")


def _compute_nparams_toprune(amount, tensor_size: int) -> int:
    """PyTorch's name for ``_count``: how many of ``tensor_size`` entries ``amount`` prunes."""
    return _count(amount, tensor_size)


def _check_structured(t: Tensor, dim: int) -> None:
    if t.dim() <= 1:
        raise ValueError(
            "Structured pruning can only be applied to multidimensional tensors. "
            f"Found tensor of shape {t.shape} with {t.dim()} dims"
        )
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")


def _unstructured_mask(scores: Tensor, default_mask: Tensor, k: int) -> Tensor:
    """``default_mask`` with the ``k`` entries of smallest ``scores`` set to 0."""
    mask = default_mask.clone()
    if k:
        flat = mask.view(-1)
        flat[scores.reshape(-1).topk(k, largest=False).indices] = 0
    return mask


def _channels_mask(t: Tensor, dim: int, keep) -> Tensor:
    mask = zeros_like(t)
    mask[(slice(None),) * (dim % t.dim()) + (keep,)] = 1
    return mask


class RandomUnstructured(BasePruningMethod):
    """Prunes ``amount`` entries chosen uniformly at random."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount) -> None:
        _check_amount(amount)
        self.amount = amount

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        k = _count(self.amount, t.numel())
        if not k:
            return default_mask.clone()
        mask = default_mask.clone()
        mask.view(-1)[rand_like(t).reshape(-1).topk(k).indices] = 0
        return mask

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Prunes the ``amount`` entries of smallest magnitude."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount) -> None:
        _check_amount(amount)
        self.amount = amount

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        return _unstructured_mask(t.abs(), default_mask, _count(self.amount, t.numel()))

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Prunes ``amount`` channels along ``dim``, chosen uniformly at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim: int = -1) -> None:
        _check_amount(amount)
        self.amount, self.dim = amount, dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        _check_structured(t, self.dim)
        channels = t.shape[self.dim]
        k = _count(self.amount, channels)
        if not k:
            return default_mask
        prob = rand(channels, device=t.device)
        threshold = prob.kthvalue(k).values
        mask = _channels_mask(t, self.dim, prob > threshold)
        return mask * default_mask.to(dtype=mask.dtype)

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes the ``amount`` channels along ``dim`` of smallest ``n``-norm."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim: int = -1) -> None:
        _check_amount(amount)
        self.amount, self.n, self.dim = amount, n, dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        _check_structured(t, self.dim)
        channels = t.shape[self.dim]
        k = _count(self.amount, channels)
        if not k:
            return default_mask
        dim = self.dim % t.dim()
        norms = t.norm(p=self.n, dim=[d for d in range(t.dim()) if d != dim])
        mask = _channels_mask(t, dim, norms.topk(channels - k, largest=True).indices)
        return mask * default_mask.to(dtype=mask.dtype)

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes where a given mask is 0."""

    PRUNING_TYPE = "global"

    def __init__(self, mask: Tensor) -> None:
        self.mask = mask

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        if tuple(default_mask.shape) != tuple(self.mask.shape):
            raise AssertionError(
                f"default_mask shape {default_mask.shape} must match self.mask shape {self.mask.shape}"
            )
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


def identity(module: Module, name: str) -> Module:
    Identity.apply(module, name)
    return module


def random_unstructured(module: Module, name: str, amount) -> Module:
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module: Module, name: str, amount, importance_scores=None) -> Module:
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module: Module, name: str, amount, dim: int) -> Module:
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module: Module, name: str, amount, n, dim: int, importance_scores=None) -> Module:
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module: Module, name: str, mask: Tensor) -> Module:
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs) -> None:
    """Prune the ``(module, name)`` pairs of ``parameters`` together: ``pruning_method(**kwargs)`` (an
    unstructured method) ranks their entries as one vector."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    scores = parameters_to_vector(
        [importance_scores.get((module, name), getattr(module, name)) for module, name in parameters]
    )
    default_mask = parameters_to_vector(
        [getattr(module, name + "_mask", ones_like(getattr(module, name))) for module, name in parameters]
    )
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(
            'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. '
            f"Found method {pruning_method} of type {method.PRUNING_TYPE}"
        )
    container = PruningContainer(method)
    final_mask = container.compute_mask(scores, default_mask)
    pointer = 0
    for module, name in parameters:
        param = getattr(module, name)
        count = param.numel()
        custom_from_mask(module, name, mask=final_mask[pointer : pointer + count].view_as(param))
        pointer += count


def remove(module: Module, name: str) -> Module:
    """Make the pruned ``module.<name>`` a plain parameter again (its pruned entries stay 0)."""
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module: Module) -> bool:
    """Whether ``module`` or a module in it has a pruning hook."""
    return any(
        isinstance(hook, BasePruningMethod)
        for _, submodule in module.named_modules()
        for hook in submodule._forward_pre_hooks.values()
    )
