"""Spatial layers with PyTorch's names, arguments, defaults, initialisation and reprs: 3-D convolution
and pooling, transposed convolutions, adaptive pools of 1 and 3 dims, upsampling, pixel and channel
shuffles, ``Fold`` and ``Unfold``. The computations are vkml/nn/functional_spatial.py and
vkml/nn/functional_layers.py.

>>> import vkml
>>> ConvTranspose2d(3, 2, 3, stride=2)(vkml.ones(1, 3, 4, 4)).shape
(1, 2, 9, 9)
"""

from __future__ import annotations

from . import functional_layers as FL
from . import functional_spatial as FS
from .conv import _ConvNd
from .module import Module
from .pooling import _AdaptiveAvgPoolNd, _AdaptiveMaxPoolNd, _AvgPoolNd, _MaxPoolNd

# ---------------------------------------------------------------------- convolution


class Conv3d(_ConvNd):
    """3-D convolution over (N, C, D, H, W) or (C, D, H, W); see ``functional.conv3d``."""

    _n = 3


class _ConvTransposeNd(_ConvNd):
    _transposed = True

    def __init__(
        self,
        in_channels: int,
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
        name = type(self).__name__
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {name}')
        # PyTorch converts padding with _single/_pair/_triple: a string is not a transposed padding
        padding = FL._tuple(name, "padding", padding, self._n)
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, padding_mode, device, dtype
        )
        self.output_padding = FL._tuple(name, "output_padding", output_padding, self._n)

    def _output_padding(self, input, output_size) -> tuple[int, ...]:
        """PyTorch's ``_output_padding``: the output padding that gives ``output_size`` (None: the module's own)."""
        n = self._n
        if output_size is None:
            return self.output_padding
        batched = input.ndim == n + 2
        lead = 2 if batched else 1
        if len(output_size) == lead + n:
            output_size = output_size[lead:]
        if len(output_size) != n:
            raise ValueError(
                f"ConvTranspose{n}D: for {input.ndim}D input, output_size must have {n} or {lead + n} elements "
                f"(got {len(output_size)})"
            )
        spatial = tuple(input.shape[lead:])
        smallest = [
            (i - 1) * s - 2 * p + d * (k - 1) + 1
            for i, s, p, d, k in zip(spatial, self.stride, self.padding, self.dilation, self.kernel_size)
        ]
        largest = [m + s - 1 for m, s in zip(smallest, self.stride)]
        if any(not lo <= size <= hi for size, lo, hi in zip(output_size, smallest, largest)):
            raise ValueError(
                f"requested an output size of {output_size}, but valid sizes range from {smallest} to {largest} "
                f"(for an input of {input.shape[2:]})"  # PyTorch's words: the sizes after two dims, batched or not
            )
        return tuple(size - lo for size, lo in zip(output_size, smallest))

    def forward(self, input, output_size=None):
        return FS._conv_transpose(
            f"conv_transpose{self._n}d",
            input,
            self.weight,
            self.bias,
            self.stride,
            self.padding,
            self._output_padding(input, output_size),
            self.groups,
            self.dilation,
            self._n,
        )


class ConvTranspose1d(_ConvTransposeNd):
    """Transposed 1-D convolution over (N, C, L) or (C, L); see ``functional.conv_transpose1d``."""

    _n = 1


class ConvTranspose2d(_ConvTransposeNd):
    """Transposed 2-D convolution over (N, C, H, W) or (C, H, W); see ``functional.conv_transpose2d``."""

    _n = 2


class ConvTranspose3d(_ConvTransposeNd):
    """Transposed 3-D convolution over (N, C, D, H, W) or (C, D, H, W); see ``functional.conv_transpose3d``."""

    _n = 3


# ---------------------------------------------------------------------- pooling


class MaxPool3d(_MaxPoolNd):
    _pool = staticmethod(FS.max_pool3d)


class AvgPool3d(_AvgPoolNd):
    _pool = staticmethod(FS.avg_pool3d)


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    _fn = staticmethod(FS.adaptive_avg_pool1d)


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    _fn = staticmethod(FS.adaptive_avg_pool3d)


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    _fn = staticmethod(FS.adaptive_max_pool1d)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    _fn = staticmethod(FS.adaptive_max_pool3d)


# ---------------------------------------------------------------------- resampling and shuffles


class Upsample(Module):
    """``functional.interpolate`` as a layer, PyTorch's arguments (a tuple ``scale_factor`` kept as floats)."""

    def __init__(
        self, size=None, scale_factor=None, mode: str = "nearest", align_corners=None, recompute_scale_factor=None
    ):
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(factor) for factor in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode, self.align_corners = mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return FS.interpolate(
            input,
            self.size,
            self.scale_factor,
            self.mode,
            self.align_corners,
            recompute_scale_factor=self.recompute_scale_factor,
        )

    def extra_repr(self) -> str:
        info = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else f"size={self.size!r}"
        return info + f", mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """``Upsample`` with mode 'nearest'."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """``Upsample`` with mode 'bilinear' and ``align_corners=True``, as PyTorch's."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class PixelShuffle(Module):
    def __init__(self, upscale_factor: int):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return FS.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    def __init__(self, downscale_factor: int):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return FS.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    def __init__(self, groups: int):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return FS.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"


class Fold(Module):
    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):
        return FL.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (
            f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
            f"padding={self.padding}, stride={self.stride}"
        )


class Unfold(Module):
    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, input):
        return FL.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, stride={self.stride}"


MODULES = [
    "Conv3d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "ConvTranspose3d",
    "MaxPool3d",
    "AvgPool3d",
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool3d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool3d",
    "Upsample",
    "UpsamplingNearest2d",
    "UpsamplingBilinear2d",
    "PixelShuffle",
    "PixelUnshuffle",
    "ChannelShuffle",
    "Fold",
    "Unfold",
]
