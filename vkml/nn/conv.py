"""``nn.Conv1d`` and ``nn.Conv2d`` with PyTorch's arguments, defaults and initialisation.

The computation is ``functional.conv1d``/``conv2d`` (im2col and a batched matmul,
vkml/nn/functional_layers.py); ``padding_mode`` other than 'zeros' pads by slices of the input
('reflect', 'replicate', 'circular'), as PyTorch's.

>>> import vkml
>>> Conv2d(3, 8, 3, padding=1)(vkml.ones(2, 3, 5, 5)).shape
(2, 8, 5, 5)
"""

from __future__ import annotations

import math

from ..frontend import creation
from . import functional_layers as FL
from . import init
from .module import Module, Parameter


class _ConvNd(Module):
    _n = 2
    _transposed = False  # a transposed convolution's weight is (in, out/groups, *kernel)

    def __init__(
        self,
        in_channels: int,
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
        super().__init__()
        n, name = self._n, type(self).__name__
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            valid_padding_strings = {"same", "valid"}  # printed as a set, as PyTorch
            if padding not in valid_padding_strings:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {valid_padding_strings}")
            if padding == "same" and any(s != 1 for s in FL._tuple(name, "stride", stride, n)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in FL._PAD_MODES:
            valid_padding_modes = {"zeros", "reflect", "replicate", "circular"}  # printed as a set, as PyTorch
            raise ValueError(
                f"padding_mode must be one of {valid_padding_modes}, but got padding_mode='{padding_mode}'"
            )
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = FL._tuple(name, "kernel_size", kernel_size, n)
        self.stride = FL._tuple(name, "stride", stride, n)
        self.padding = padding if isinstance(padding, str) else FL._tuple(name, "padding", padding, n)
        self.dilation = FL._tuple(name, "dilation", dilation, n)
        self.padding_mode = padding_mode
        if self._transposed:
            shape = (in_channels, out_channels // groups, *self.kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *self.kernel_size)
        self.weight = Parameter(creation.zeros(*shape, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(creation.zeros(out_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's default: ``kaiming_uniform_(weight, a=sqrt(5))``, then the bias uniform in ±1/sqrt(fan_in)."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def _conv_forward(self, input, weight, bias):
        """The convolution of ``input`` by ``weight`` and ``bias``: PyTorch's hook, which subclasses override
        (openai/whisper casts the weights to the input's dtype here)."""
        return FL._conv(
            f"conv{self._n}d",
            input,
            weight,
            bias,
            self.stride,
            self.padding,
            self.dilation,
            self.groups,
            self._n,
            self.padding_mode,
        )

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * self._n:
            s += f", padding={self.padding}"  # a string unquoted, as PyTorch's
        if self.dilation != (1,) * self._n:
            s += f", dilation={self.dilation}"
        if self._transposed and self.output_padding != (0,) * self._n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv2d(_ConvNd):
    """2-D convolution over (N, C, H, W) or (C, H, W); see ``functional.conv2d`` and docs/ops/conv2d.md."""

    _n = 2


class Conv1d(_ConvNd):
    """1-D convolution over (N, C, L) or (C, L); see ``functional.conv1d``."""

    _n = 1
