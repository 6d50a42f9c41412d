"""PyTorch's lazy modules: ``LazyModuleMixin`` and the layers built on it, ``LazyLinear`` (vkml/nn/layers_more.py),
``LazyConv{1,2,3}d``, ``LazyConvTranspose{1,2,3}d``, ``LazyBatchNorm{1,2,3}d``, ``LazyInstanceNorm{1,2,3}d``.

A lazy module holds ``UninitializedParameter`` / ``UninitializedBuffer`` placeholders (vkml/nn/module.py) until
its first call: a forward pre-hook hands the call's arguments to ``initialize_parameters``, which materializes
them with the shapes the input implies and PyTorch's initialisation; then the hooks go and the module becomes
its plain class (``cls_to_become``). ``load_state_dict`` materializes placeholders from the checkpoint's shapes
first (a load pre-hook), so a lazy module takes a trained model's state before any call. Parameters keep their
identity, so an optimizer made before the first call sees the new values; as in PyTorch, run one forward pass
before making the optimizer, so that its state is shaped then.

>>> import vkml
>>> conv = vkml.nn.LazyConv2d(4, 3)
>>> tuple(conv(vkml.ones(1, 2, 5, 5)).shape), type(conv).__name__, tuple(conv.weight.shape)
((1, 4, 3, 3), 'Conv2d', (4, 2, 3, 3))
"""

from __future__ import annotations

import itertools

from ..frontend import autograd, creation
from ..ir import types as T
from . import normalization as N
from . import spatial
from .conv import Conv1d, Conv2d
from .module import UninitializedBuffer, UninitializedParameter, is_lazy


class LazyModuleMixin:
    """Mix in before a ``Module`` class to make its parameters lazy (``torch.nn.modules.lazy.LazyModuleMixin``):
    define ``initialize_parameters(*args, **kwargs)``, which materializes the placeholders from the first
    call's arguments; set ``cls_to_become`` to the class the module should have afterwards (None: keep it).

    >>> class Scale(LazyModuleMixin, vkml.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.scale = vkml.nn.UninitializedParameter()
    ...     def initialize_parameters(self, x):
    ...         self.scale.materialize(x.shape[-1])
    ...     def forward(self, x):
    ...         return x * self.scale
    >>> tuple(Scale()(vkml.ones(2, 3)).shape)
    (2, 3)
    """

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters, with_kwargs=True)

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        """As ``Module``'s, but a placeholder goes in as itself (it has no values to detach)."""
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if is_lazy(param) or keep_vars else param.detach()
        for name, buffer in self._buffers.items():
            if buffer is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buffer if is_lazy(buffer) or keep_vars else buffer.detach()

    def _lazy_load_hook(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
        """Materialize each placeholder the state dict has a tensor for, with that tensor's shape."""
        for name, param in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if key in state_dict and param is not None and is_lazy(param) and not is_lazy(state_dict[key]):
                with autograd.no_grad():
                    param.materialize(tuple(state_dict[key].shape))

    def initialize_parameters(self, *args, **kwargs) -> None:
        """Materialize the placeholders for the first call's arguments (each lazy module defines it)."""
        raise NotImplementedError(f"initialize_parameters is not implemented for {self.__class__.__name__}")

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter or buffer of this module (not its children) is still a placeholder."""
        return any(is_lazy(t) for t in itertools.chain(self._parameters.values(), self._buffers.values()))

    def _infer_parameters(self, module, args, kwargs=None):
        """The forward pre-hook of the first call: initialize, check, drop the hooks, become ``cls_to_become``."""
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        del module._initialize_hook, module._load_hook
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def _replicate_for_data_parallel(self):
        raise RuntimeError(
            "Modules with uninitialized parameters can't be used with `DataParallel`. "
            "Run a dummy forward pass to correctly initialize the modules"
        )


class _LazyConv(LazyModuleMixin):
    """``in_channels`` read from the first input (dim 1 batched, 0 unbatched)."""

    def _make_lazy(self, out_channels: int, bias: bool, device, dtype) -> None:
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs) -> None:
        """The input's channels as ``in_channels``; the shapes and initialisation of the plain convolution."""
        if not self.has_uninitialized_params():
            return
        n = self._n
        if input.ndim not in (n + 1, n + 2):
            raise RuntimeError(
                f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to {self.__class__.__name__}, but got "
                f"input of size: {input.shape}"
            )
        self.in_channels = input.shape[1] if input.ndim == n + 2 else input.shape[0]
        if self.in_channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if self._transposed:
            self.weight.materialize((self.in_channels, self.out_channels // self.groups, *self.kernel_size))
        else:
            self.weight.materialize((self.out_channels, self.in_channels // self.groups, *self.kernel_size))
        if self.bias is not None:
            self.bias.materialize((self.out_channels,))
        self.reset_parameters()


def _lazy_conv(base: type, doc: str) -> type:
    def __init__(
        self,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ):
        # the bias made only as a placeholder: the plain module's would be replaced at once
        super(cls, self).__init__(
            0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode, device, dtype
        )
        self._make_lazy(out_channels, bias, device, dtype)

    cls = type(f"Lazy{base.__name__}", (_LazyConv, base), {"__init__": __init__, "cls_to_become": base, "__doc__": doc})
    return cls


def _lazy_conv_transpose(base: type, doc: str) -> type:
    def __init__(
        self,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups: int = 1,
        bias: bool = True,
        dilation=1,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ):
        super(cls, self).__init__(
            0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation, padding_mode, device, dtype
        )
        self._make_lazy(out_channels, bias, device, dtype)

    cls = type(f"Lazy{base.__name__}", (_LazyConv, base), {"__init__": __init__, "cls_to_become": base, "__doc__": doc})
    return cls


class _LazyNorm(LazyModuleMixin):
    """``num_features`` read from the first input (``input.shape[1]``, for every rank, as PyTorch's)."""

    def __init__(
        self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None, *, bias=True
    ):
        super().__init__(0, eps, momentum, False, False, device=device, dtype=dtype, bias=False)
        self.affine, self.track_running_stats, self._bias = affine, track_running_stats, bias
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = creation.tensor(0, dtype=T.int64, device=device)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input) -> None:
        """Ones and zeros of ``input.shape[1]`` features, as the plain norm's; without affine parameters or
        running statistics nothing is lazy and, as PyTorch's, ``num_features`` stays 0."""
        if not self.has_uninitialized_params():
            return
        self.num_features = input.shape[1]
        for name in ("weight", "bias") if self.affine else ():
            if getattr(self, name) is not None:
                getattr(self, name).materialize((self.num_features,))
        if self.track_running_stats:
            self.running_mean.materialize((self.num_features,))
            self.running_var.materialize((self.num_features,))
        self.reset_parameters()


def _lazy_norm(base: type, doc: str) -> type:
    return type(f"Lazy{base.__name__}", (_LazyNorm, base), {"cls_to_become": base, "__doc__": doc})


_CONV = "A ``{0}`` whose ``in_channels`` is read from the first input (``input.shape[1]``, or ``[0]`` unbatched)."
_NORM = "A ``{0}`` whose ``num_features`` is read from the first input (``input.shape[1]``)."

LazyConv1d = _lazy_conv(Conv1d, _CONV.format("Conv1d"))
LazyConv2d = _lazy_conv(Conv2d, _CONV.format("Conv2d"))
LazyConv3d = _lazy_conv(spatial.Conv3d, _CONV.format("Conv3d"))
LazyConvTranspose1d = _lazy_conv_transpose(spatial.ConvTranspose1d, _CONV.format("ConvTranspose1d"))
LazyConvTranspose2d = _lazy_conv_transpose(spatial.ConvTranspose2d, _CONV.format("ConvTranspose2d"))
LazyConvTranspose3d = _lazy_conv_transpose(spatial.ConvTranspose3d, _CONV.format("ConvTranspose3d"))
LazyBatchNorm1d = _lazy_norm(N.BatchNorm1d, _NORM.format("BatchNorm1d"))
LazyBatchNorm2d = _lazy_norm(N.BatchNorm2d, _NORM.format("BatchNorm2d"))
LazyBatchNorm3d = _lazy_norm(N.BatchNorm3d, _NORM.format("BatchNorm3d"))
LazyInstanceNorm1d = _lazy_norm(N.InstanceNorm1d, _NORM.format("InstanceNorm1d"))
LazyInstanceNorm2d = _lazy_norm(N.InstanceNorm2d, _NORM.format("InstanceNorm2d"))
LazyInstanceNorm3d = _lazy_norm(N.InstanceNorm3d, _NORM.format("InstanceNorm3d"))

MODULES = [
    "LazyConv1d",
    "LazyConv2d",
    "LazyConv3d",
    "LazyConvTranspose1d",
    "LazyConvTranspose2d",
    "LazyConvTranspose3d",
    "LazyBatchNorm1d",
    "LazyBatchNorm2d",
    "LazyBatchNorm3d",
    "LazyInstanceNorm1d",
    "LazyInstanceNorm2d",
    "LazyInstanceNorm3d",
]
for _name in MODULES:
    globals()[_name].__module__ = __name__
del _name
