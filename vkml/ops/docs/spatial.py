"""The pages of the spatial layers of issue 18 (vkml/nn/functional_spatial.py)."""

from __future__ import annotations

from .page import THROUGH, OpDoc, Sig, nnf, sig

_NN = "vkml.nn.functional."
PAGES: dict[str, OpDoc] = {}
_SEPARABLE = (
    "source indices and weights computed on the host in float32 with PyTorch's CPU formulas (linear weights are "
    "its bits, the fused multiply-add of its source index included); each dim's weighted sum is products and "
    "sums rounded one by one, the last dim first"
)
PAGES.update(
    {
        "conv3d": OpDoc(
            "composite",
            (
                sig(_NN + "conv3d", nnf.conv3d),
                "vkml.nn.Conv3d(in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, "
                "bias=True, padding_mode='zeros')",
            ),
            nnf.conv3d,
            precision="as `conv2d` with K = C/groups·kd·kh·kw, in ascending (channel, depth, row, column) order",
            special="As `conv2d`.",
            divergence="As `conv2d`: PyTorch sums in another order, the last bits may differ.",
            gradient="As `conv2d`'s, with three kernel dims (the stride-1 input gradient adds its O·kd·kh·kw "
            "products output channel by output channel, the taps in descending row-major order).",
        ),
        **{
            f"conv_transpose{n}d": OpDoc(
                "composite",
                (
                    sig(_NN + f"conv_transpose{n}d", getattr(nnf, f"conv_transpose{n}d")),
                    f"vkml.nn.ConvTranspose{n}d(in_channels, out_channels, kernel_size, stride=1, padding=0, "
                    "output_padding=0, groups=1, bias=True, dilation=1, padding_mode='zeros'); forward(input, "
                    "output_size=None)",
                ),
                getattr(nnf, f"conv_transpose{n}d"),
                precision="one batched `matmul` (each block a sum over C/groups in ascending channel order from "
                "-0.0), then the blocks that cover an output added in row-major kernel order (one rounding each, "
                "as `fold`), then the bias; a float16 or bfloat16 block rounds to the dtype and each add rounds, as "
                "PyTorch's CPU kernel (its col2im adds in the dtype)",
                special="NaN and inf propagate through the products and sums; an output that no block covers "
                "(dilation or stride gaps) is +0.0 plus the bias.",
                divergence="PyTorch sums the products of an output in another order: the last bits may differ. "
                "Module padding_mode other than 'zeros' raises ValueError, as PyTorch's.",
                gradient=THROUGH,
            )
            for n in (1, 2, 3)
        },
        "max_pool3d": OpDoc(
            "composite",
            (sig(_NN + "max_pool3d", nnf.max_pool3d), "vkml.nn.MaxPool3d(kernel_size, stride=None, ...)"),
            nnf.max_pool3d,
            precision="exact",
            special="As `max_pool2d`.",
            gradient="As `max_pool2d`.",
        ),
        "avg_pool3d": OpDoc(
            "composite",
            (sig(_NN + "avg_pool3d", nnf.avg_pool3d), "vkml.nn.AvgPool3d(kernel_size, stride=None, ...)"),
            nnf.avg_pool3d,
            precision="as `avg_pool2d`",
            special="As `avg_pool2d`.",
            divergence="As `avg_pool2d`.",
            gradient=THROUGH,
        ),
        **{
            f"adaptive_avg_pool{n}d": OpDoc(
                "composite",
                (
                    sig(_NN + f"adaptive_avg_pool{n}d", getattr(nnf, f"adaptive_avg_pool{n}d")),
                    f"vkml.nn.AdaptiveAvgPool{n}d(output_size)",
                ),
                getattr(nnf, f"adaptive_avg_pool{n}d"),
                precision="`mean` (size 1), `avg_pool` (even windows) or one 0/1 `matmul` per spatial dim and "
                "one division",
                special="As `adaptive_avg_pool2d`.",
                gradient=THROUGH,
            )
            for n in (1, 3)
        },
        **{
            f"adaptive_max_pool{n}d": OpDoc(
                "composite",
                (
                    sig(_NN + f"adaptive_max_pool{n}d", getattr(nnf, f"adaptive_max_pool{n}d")),
                    f"vkml.nn.AdaptiveMaxPool{n}d(output_size, return_indices=False)",
                ),
                getattr(nnf, f"adaptive_max_pool{n}d"),
                precision="exact",
                special="As `max_pool2d`.",
                gradient="As `max_pool2d`.",
            )
            for n in (1, 3)
        },
        "interpolate": OpDoc(
            "composite",
            (
                sig(_NN + "interpolate", nnf.interpolate),
                "vkml.nn.Upsample(size=None, scale_factor=None, mode='nearest', align_corners=None, "
                "recompute_scale_factor=None)",
                "vkml.nn.UpsamplingNearest2d(size=None, scale_factor=None)",
                "vkml.nn.UpsamplingBilinear2d(size=None, scale_factor=None)",
                Sig(_NN + "upsample", nnf.upsample, suffix=" (deprecated, warns)"),
                Sig(_NN + "upsample_nearest", nnf.upsample_nearest, suffix=" (deprecated, warns)"),
                Sig(_NN + "upsample_bilinear", nnf.upsample_bilinear, suffix=" (deprecated, warns)"),
            ),
            nnf.interpolate,
            precision="'nearest', 'nearest-exact': exact, PyTorch's CPU source indices (its bits). 'linear', "
            "'bilinear', 'bicubic', 'trilinear': " + _SEPARABLE + ". 'area': `adaptive_avg_pool`. uint8 "
            "'bilinear': PyTorch's fixed-point CPU kernel (int16 weights, each dim rounded and saturated to uint8 in "
            "turn), exact: its bits",
            special="NaN and inf propagate to the outputs whose taps read them; a weight of 0 times inf is NaN, as "
            "in PyTorch's kernels.",
            divergence="PyTorch's CPU kernels contract parts of the weighted sums (and of the bicubic "
            "coefficients) into fused multiply-adds, differently by path (output size, channels-last, ISA): "
            "linear modes agree within a few ulp, not bit for bit. The 2-D 'nearest' kernel copies when the output "
            "size equals the input's and halves indices when it is twice it, whatever the scale factor (PyTorch's "
            "CPU `nearest_idx`; its 1-D and 3-D kernels do not): vkml does the same. `antialias=True` (float "
            "'bilinear', 'bicubic' and 'lanczos', PyTorch 2.13's 3-lobed Lanczos, which needs it) sums every "
            "source element under the filter widened by the downscale, with PyTorch's weights to within a "
            "rounding (Lanczos: most outputs differ from PyTorch's in their last bit or two); PyTorch's kernel "
            "gives a constant output when the width is 1 (a size-1 last dim resized along the height), vkml the "
            "resampled column. Antialiased uint8, uint8 'bicubic' and other integer or bool inputs in any mode "
            "(PyTorch's kernels take floats and uint8) raise NotImplementedError. float64 inputs take the float32 source indices and "
            "weights (PyTorch computes them in float64): within about 1e-6 relative.",
            gradient="Through a gather per tap and dim (its gradient adds back into the positions read, in index "
            "order) and the products by the weights.",
        ),
        "affine_grid": OpDoc(
            "composite",
            (sig(_NN + "affine_grid", nnf.affine_grid),),
            nnf.affine_grid,
            precision="the base grid in float32 as PyTorch's `linspace_from_neg_one`, then one batched `matmul` "
            "(ascending k from -0.0)",
            divergence="PyTorch's linspace and bmm may fuse multiply-adds: the last bits may differ.",
            gradient=THROUGH,
        ),
        "grid_sample": OpDoc(
            "composite",
            (sig(_NN + "grid_sample", nnf.grid_sample),),
            nnf.grid_sample,
            precision="coordinates unnormalised and padded with PyTorch's formulas; each corner's or tap's weight a "
            "product of per-dim weights, the terms added in PyTorch's corner order, each operation rounded",
            special="A NaN or infinite coordinate reads no element under 'zeros': its weight makes the output NaN "
            "(bilinear, bicubic) or 0 (nearest), as PyTorch's. Under 'border' and 'reflection' (bilinear, nearest) "
            "PyTorch's clip takes 0 for NaN, so such a point reads the first element along that dim (reflecting "
            "an infinity gives NaN first; +inf under 'border' clips to the last).",
            divergence="The coordinates are read back to the host to choose the elements (one submission per call). "
            "PyTorch's CPU kernel fuses multiply-adds: the last bits may differ. In bfloat16 the weights and "
            "their gradients are rounded to bfloat16 at each operation, where PyTorch keeps float32 inside the "
            "kernel: the gradients (bicubic most) may differ by several bfloat16 ulps.",
            gradient="`input`: the gathers' scatter-add. `grid`: through the weights and the padding (zero at and "
            "beyond the clipped bounds, as PyTorch's `clip_coordinates_set_grad`); zeros in mode 'nearest', as "
            "PyTorch's.",
        ),
        "pixel_shuffle": OpDoc(
            "composite",
            (sig(_NN + "pixel_shuffle", nnf.pixel_shuffle), "vkml.nn.PixelShuffle(upscale_factor)"),
            nnf.pixel_shuffle,
            gradient=THROUGH,
        ),
        "pixel_unshuffle": OpDoc(
            "composite",
            (sig(_NN + "pixel_unshuffle", nnf.pixel_unshuffle), "vkml.nn.PixelUnshuffle(downscale_factor)"),
            nnf.pixel_unshuffle,
            gradient=THROUGH,
        ),
        "channel_shuffle": OpDoc(
            "composite",
            (sig(_NN + "channel_shuffle", nnf.channel_shuffle), "vkml.nn.ChannelShuffle(groups)"),
            nnf.channel_shuffle,
            gradient=THROUGH,
        ),
    }
)
