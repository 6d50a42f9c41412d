"""PyTorch's lazy convolutions and normalizations: ``LazyConv{1,2,3}d``, ``LazyConvTranspose{1,2,3}d``,
``LazyBatchNorm{1,2,3}d``, ``LazyInstanceNorm{1,2,3}d``.

Each is its module with the input channels left open: until the first call its parameters (and the
norms' running statistics) are empty; the first call reads the channels from the input, gives them
their shapes and PyTorch's initialisation, and the module becomes the plain one (``cls_to_become``),
as ``LazyLinear`` does (vkml/nn/layers_more.py). The parameters keep their identity, so an optimizer
made before the first call sees the new values; as in PyTorch, run one forward pass before making
the optimizer, so that its state is shaped then.

>>> import vkml
>>> conv = vkml.nn.LazyConv2d(4, 3)
>>> tuple(conv(vkml.ones(1, 2, 5, 5)).shape), type(conv).__name__, tuple(conv.weight.shape)
((1, 4, 3, 3), 'Conv2d', (4, 2, 3, 3))
"""

from __future__ import annotations

from ..frontend import creation
from . import normalization as N
from . import spatial
from .conv import Conv1d, Conv2d
from .module import Module, _set_data, initialized, uninitialize


class _LazyMixin:
    """The first call shapes the parameters from its input, then the module becomes ``cls_to_become``."""

    cls_to_become: type[Module]

    def has_uninitialized_params(self) -> bool:
        return self.__dict__.get("_lazy_pending", False)

    def forward(self, input, *args, **kwargs):
        become = self.cls_to_become
        if self.__dict__.get("_lazy_pending", False):
            self.initialize_parameters(input)
            del self._lazy_pending, self._lazy_factory
            self.__class__ = become
        return become.forward(self, input, *args, **kwargs)

    def _empty_parameter(self, name: str) -> None:
        param = getattr(self, name, None)
        if param is not None:
            uninitialize(_set_data(param, creation.zeros(0, **self._lazy_factory)))


def _factory_of(placeholder) -> dict:
    """The dtype and device an empty placeholder has now: the factory kwargs, or what a ``.to()``,
    ``.double()`` or ``.cuda()`` before the first call made of them (PyTorch's UninitializedParameter
    follows those too)."""
    return {"dtype": placeholder.dtype, "device": placeholder.device}


class _LazyConv(_LazyMixin):
    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            self.cls_to_become.reset_parameters(self)

    def _lazy_setup(self, out_channels: int, device, dtype) -> None:
        object.__setattr__(self, "_lazy_factory", {"device": device, "dtype": dtype})
        object.__setattr__(self, "_lazy_pending", True)
        self.out_channels = out_channels
        self._empty_parameter("weight")
        self._empty_parameter("bias")

    def initialize_parameters(self, input) -> None:
        """The input's channels (dim 1 batched, 0 unbatched) as ``in_channels``; PyTorch's initialisation."""
        n, name = self._n, type(self).__name__
        if input.ndim not in (n + 1, n + 2):
            raise RuntimeError(
                f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to {name}, but got input of size: "
                f"{input.shape}"
            )
        self.in_channels = input.shape[1] if input.ndim == n + 2 else input.shape[0]
        if self.in_channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if self._transposed:
            shape = (self.in_channels, self.out_channels // self.groups, *self.kernel_size)
        else:
            shape = (self.out_channels, self.in_channels // self.groups, *self.kernel_size)
        initialized(_set_data(self.weight, creation.zeros(*shape, **_factory_of(self.weight))))
        if self.bias is not None:
            initialized(_set_data(self.bias, creation.zeros(self.out_channels, **_factory_of(self.bias))))
        object.__setattr__(self, "_lazy_pending", False)
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
        object.__setattr__(self, "_lazy_pending", True)  # the base's reset_parameters waits
        base.__init__(self, 0, 0, kernel_size, stride, padding, dilation, groups, bias, padding_mode, device, dtype)
        self._lazy_setup(out_channels, device, dtype)

    return type(
        f"Lazy{base.__name__}", (_LazyConv, base), {"__init__": __init__, "cls_to_become": base, "__doc__": doc}
    )


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
        object.__setattr__(self, "_lazy_pending", True)
        base.__init__(
            self,
            0,
            0,
            kernel_size,
            stride,
            padding,
            output_padding,
            groups,
            bias,
            dilation,
            padding_mode,
            device,
            dtype,
        )
        self._lazy_setup(out_channels, device, dtype)

    return type(
        f"Lazy{base.__name__}", (_LazyConv, base), {"__init__": __init__, "cls_to_become": base, "__doc__": doc}
    )


class _LazyNorm(_LazyMixin):
    def __init__(
        self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None, *, bias=True
    ):
        object.__setattr__(self, "_lazy_pending", True)
        self.cls_to_become.__init__(
            self, 0, eps, momentum, affine, track_running_stats, device=device, dtype=dtype, bias=bias
        )
        object.__setattr__(self, "_lazy_factory", {"device": device, "dtype": dtype})
        for name, _ in self._LAZY:
            uninitialize(getattr(self, name, None))

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            self.cls_to_become.reset_parameters(self)

    _LAZY = (("weight", 1.0), ("bias", 0.0), ("running_mean", 0.0), ("running_var", 1.0))

    def has_uninitialized_params(self) -> bool:
        pending = self.__dict__.get("_lazy_pending", False)
        return pending and any(getattr(self, name, None) is not None for name, _ in self._LAZY)

    def initialize_parameters(self, input) -> None:
        """``input.shape[1]`` features (PyTorch reads dim 1 for every rank): ones and zeros, as the norm's.
        Without affine parameters or running statistics nothing is lazy, and, as PyTorch's,
        ``num_features`` stays 0."""
        if not self.has_uninitialized_params():
            object.__setattr__(self, "_lazy_pending", False)
            return
        self.num_features = input.shape[1]
        for name, fill in self._LAZY:
            value = getattr(self, name, None)
            if value is not None:
                initialized(_set_data(value, creation.full((self.num_features,), fill, **_factory_of(value))))
        object.__setattr__(self, "_lazy_pending", False)
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
