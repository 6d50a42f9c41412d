"""Pooling layers with PyTorch's names and defaults; the computation is vkml/nn/functional_layers.py.

>>> import vkml
>>> MaxPool2d(2)(vkml.ones(1, 1, 4, 4)).shape
(1, 1, 2, 2)
"""

from __future__ import annotations

from . import functional_layers as FL
from . import functional_pooling as FP
from .module import Module


class _MaxPoolNd(Module):
    """The max pools of 1, 2 and 3 spatial dims: PyTorch's arguments, kept as given; ``_pool`` is the function."""

    _pool = None

    def __init__(
        self, kernel_size, stride=None, padding=0, dilation=1, return_indices: bool = False, ceil_mode: bool = False
    ):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input):
        return type(self)._pool(
            input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode, self.return_indices
        )

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )


class MaxPool2d(_MaxPoolNd):
    _pool = staticmethod(FL.max_pool2d)


class MaxPool1d(_MaxPoolNd):
    _pool = staticmethod(FL.max_pool1d)


class _AvgPoolNd(Module):
    """The average pools of 2 and 3 spatial dims: PyTorch's arguments, kept as given; ``_pool`` is the function."""

    _pool = None

    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override=None,
    ):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input):
        return type(self)._pool(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(_AvgPoolNd):
    _pool = staticmethod(FL.avg_pool2d)


class AvgPool1d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True):
        super().__init__()
        # PyTorch's AvgPool1d keeps 1-tuples (``_single``)
        self.kernel_size = FL._tuple("AvgPool1d", "kernel_size", kernel_size, 1)
        self.stride = FL._tuple("AvgPool1d", "stride", stride if stride is not None else kernel_size, 1)
        self.padding = FL._tuple("AvgPool1d", "padding", padding, 1)
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, input):
        return FL.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AdaptiveAvgPoolNd(Module):
    """The adaptive average pools of 1, 2 and 3 dims; ``_fn`` is the function."""

    _fn = None

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        return type(self)._fn(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class _AdaptiveMaxPoolNd(Module):
    """The adaptive max pools of 1, 2 and 3 dims; ``_fn`` is the function."""

    _fn = None

    def __init__(self, output_size, return_indices: bool = False):
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, input):
        return type(self)._fn(input, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    _fn = staticmethod(FL.adaptive_avg_pool2d)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    _fn = staticmethod(FL.adaptive_max_pool2d)


# ---------------------------------------------------------------------- power-average pooling, max unpooling
# (vkml/nn/functional_pooling.py)


class _LPPoolNd(Module):
    """PyTorch's ``_LPPoolNd``: the arguments kept as given; ``_fn`` is the function, given a float ``norm_type``."""

    _fn = None

    def __init__(self, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False):
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel_size, stride, ceil_mode

    def forward(self, input):
        return type(self)._fn(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return (
            f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
            f"ceil_mode={self.ceil_mode}"
        )


class LPPool1d(_LPPoolNd):
    _fn = staticmethod(FP.lp_pool1d)


class LPPool2d(_LPPoolNd):
    _fn = staticmethod(FP.lp_pool2d)


class LPPool3d(_LPPoolNd):
    _fn = staticmethod(FP.lp_pool3d)


class _MaxUnpoolNd(Module):
    """PyTorch's ``_MaxUnpoolNd``: kernel, stride (default the kernel) and padding as ``_n``-tuples."""

    _n = 2
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        n = self._n
        self.kernel_size = FP._expand(kernel_size, n)
        self.stride = FP._expand(stride if stride is not None else kernel_size, n)
        self.padding = FP._expand(padding, n)

    def forward(self, input, indices, output_size=None):
        return type(self)._fn(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    _n = 1
    _fn = staticmethod(FP.max_unpool1d)


class MaxUnpool2d(_MaxUnpoolNd):
    _n = 2
    _fn = staticmethod(FP.max_unpool2d)


class MaxUnpool3d(_MaxUnpoolNd):
    _n = 3
    _fn = staticmethod(FP.max_unpool3d)


MODULES = ["LPPool1d", "LPPool2d", "LPPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d"]
