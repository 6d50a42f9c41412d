"""The pages of the layers of a CNN (vkml/nn/functional_*.py)."""

from __future__ import annotations

from .page import THROUGH, OpDoc, nnf, sig

PAGES: dict[str, OpDoc] = {}
_NN = "vkml.nn.functional."
_WINDOWS = "Padding and windows are views (index arithmetic); "
PAGES.update(
    {
        "conv2d": OpDoc(
            "composite",
            (
                sig(_NN + "conv2d", nnf.conv2d),
                "vkml.nn.Conv2d(in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, "
                "bias=True, padding_mode='zeros')",
            ),
            nnf.conv2d,
            precision="an implicit-GEMM `matmul`, the contract's named exception (as `matmul`; each sample's "
            "(O/groups, C/groups·kh·kw) @ (C/groups·kh·kw, H_out·W_out) per group, the second operand read from the "
            "padded input's windows, the batch's products counted together; with VKML_CONV_IMPLICIT=0, or float16 on a "
            "device with VK_NV_cooperative_matrix2 (faster there), and one "
            "group, im2col written out and one product (O, C·kh·kw) @ (C·kh·kw, N·H_out·W_out), the same sums): "
            "each output starts from "
            "-0.0 and adds its K = C/groups·kh·kw float32 products in ascending (channel, kernel row, kernel column) "
            "order, every product and sum rounded, then adds the bias (one rounding; bfloat16 operands: the float32 "
            "sums plus the bias, rounded to bfloat16 once, as PyTorch's CPU convolution, and float16 ones in groups "
            "> 1 or of up to 2^22 multiply-adds; a larger one-group float16 one: the sums rounded, then the bias "
            "added, where PyTorch's CPU rounds once too, for the workgroup-scope matrix template narrows its "
            "sums). The order depends on the shapes "
            "alone: the CPU's bits on every device where `matmul` keeps them (all sizes on lavapipe; products under "
            "2^27 multiply-adds on GPUs with the large tiles). Bound: |computed - exact| <= γ_(K+1) (|b| + Σ |w||x|), "
            "γ_n = nu/(1 - nu), u = 2^-24",
            special="As `matmul`: NaN and inf propagate through products and sums (0 × inf is NaN, so an inf in "
            "the input makes NaN wherever a zero weight meets it, as PyTorch). Zero padding reads +0.0.",
            divergence="PyTorch (oneDNN, or its own im2col and BLAS) sums in another order: results differ in the "
            "last bits, within both orders' bounds. The modules' `padding_mode` ('zeros', 'reflect', 'replicate', "
            "'circular') pads as `F.pad` does, before the windows are taken. The stride-1 input gradient of an inf "
            "weight is NaN beside the border (inf times the padding's zeros) where PyTorch's CPU gradient, which "
            "adds columns back, is inf or finite.",
            gradient="One rule for both forms (the same bits). The weight's: a `matmul` of the upstream gradient "
            "(O, N·H_out·W_out) and the zero-padded input's columns (written out for it). The input's, at stride 1: "
            "itself a convolution (one product, as the forward's) of the upstream gradient zero-padded by "
            "dilation·(k - 1) - padding on each side with the weight flipped in its spatial dims and its channels "
            "swapped: each element starts from -0.0 and adds its O·kh·kw products in ascending (output channel, "
            "flipped kernel row, flipped kernel column) order, i.e. output channel by output channel, the taps in "
            "descending row-major order, every product and sum rounded; the padding's zeros enter as products (an inf "
            "weight makes NaN beside the border). At a larger stride, the `matmul` "
            "W^T @ g (C·kh·kw, N·H_out·W_out) (sums over O in ascending order from -0.0) whose columns are added "
            "back into the positions each window read, taps in ascending row-major order (one rounding each), then "
            "the padding cropped. With groups > 1, through the window view and the batched `matmul` (the latter "
            "order at every stride). float16/bfloat16 of up to 2^22 multiply-adds as PyTorch's CPU convolution "
            "(vkml/nn/half_conv.py; larger ones as float32, for speed): the "
            "input's by the latter order at every stride; the weight's a float32 product a sample, each added to "
            "the sum so far widened and rounded back to the dtype (up to 64 samples; a larger batch adds its "
            "samples in float32, one rounding); a dilated convolution's bias: each sample's float32 sum rounded, "
            "then added in the dtype.",
        ),
        "conv1d": OpDoc(
            "composite",
            (
                sig(_NN + "conv1d", nnf.conv1d),
                "vkml.nn.Conv1d(in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, "
                "bias=True, padding_mode='zeros')",
            ),
            nnf.conv1d,
            precision="as `conv2d` with K = C/groups·k",
            gradient="As `conv2d`'s, with one kernel dim.",
        ),
        "max_pool2d": OpDoc(
            "composite",
            (sig(_NN + "max_pool2d", nnf.max_pool2d), "vkml.nn.MaxPool2d(kernel_size, stride=None, ...)"),
            nnf.max_pool2d,
            precision="exact: " + _WINDOWS.lower() + "each output is the selected element",
            special="A NaN in a window is its result (the last NaN is selected, as PyTorch's); padding is -inf and "
            "never selected.",
            gradient="Each window's gradient goes to one element, its first maximum in row-major order (or last "
            "NaN), as PyTorch's; overlapping windows add, in ascending kernel-tap order (an argmax over the window "
            "view and one elementwise kernel).",
        ),
        "max_pool1d": OpDoc(
            "composite",
            (sig(_NN + "max_pool1d", nnf.max_pool1d), "vkml.nn.MaxPool1d(kernel_size, stride=None, ...)"),
            nnf.max_pool1d,
            precision="exact",
            special="As `max_pool2d`.",
            gradient="As `max_pool2d`.",
        ),
        "avg_pool2d": OpDoc(
            "composite",
            (sig(_NN + "avg_pool2d", nnf.avg_pool2d), "vkml.nn.AvgPool2d(kernel_size, stride=None, ...)"),
            nnf.avg_pool2d,
            precision=_WINDOWS + "the tree sum of each window, then one division by the divisor; a window of more "
            "than 64 elements that does not tile the input (stride ≠ kernel) sums dim by dim, the last first, each a "
            "tree sum",
            special="NaN or inf in a window propagates to its result.",
            divergence="PyTorch sums each window in row-major order: the last bits may differ.",
            gradient=THROUGH,
        ),
        "avg_pool1d": OpDoc(
            "composite",
            (sig(_NN + "avg_pool1d", nnf.avg_pool1d), "vkml.nn.AvgPool1d(kernel_size, stride=None, ...)"),
            nnf.avg_pool1d,
            precision="as `avg_pool2d`",
            gradient=THROUGH,
        ),
        "adaptive_avg_pool2d": OpDoc(
            "composite",
            (sig(_NN + "adaptive_avg_pool2d", nnf.adaptive_avg_pool2d), "vkml.nn.AdaptiveAvgPool2d(output_size)"),
            nnf.adaptive_avg_pool2d,
            precision="`mean` (size 1), `avg_pool2d` (even windows) or two 0/1 `matmul`s and one division",
            special="NaN or inf propagates to the windows that hold it; with uneven windows, an inf also makes NaN "
            "in windows of the same rows or columns (0 × inf in the 0/1 products).",
            gradient=THROUGH,
        ),
        "adaptive_max_pool2d": OpDoc(
            "composite",
            (
                sig(_NN + "adaptive_max_pool2d", nnf.adaptive_max_pool2d),
                "vkml.nn.AdaptiveMaxPool2d(output_size, return_indices=False)",
            ),
            nnf.adaptive_max_pool2d,
            precision="exact",
            special="As `max_pool2d`.",
            gradient="As `max_pool2d`.",
        ),
        "batch_norm": OpDoc(
            "composite",
            (
                sig(_NN + "batch_norm", nnf.batch_norm),
                "vkml.nn.BatchNorm1d(num_features, ...)",
                "vkml.nn.BatchNorm2d(num_features, ...)",
            ),
            nnf.batch_norm,
            precision="two `mean`s (two-pass biased variance), `rsqrt` and products; PyTorch's kernel uses other "
            "orders, so the last bits may differ. With spatial dims, each mean is a `sum` over each sample's "
            "positions (one row of N·C), then a `sum` of those N row sums over the batch (each over `sum`'s "
            "tree), divided by N·H·W: the order depends on the shape alone. Training a float16/bfloat16 "
            "input whose parameters share its dtype (a `.half()` model) follows PyTorch CPU's kernel: the "
            "saved mean and 1/sqrt(var + eps) rounded to the dtype, the output x·alpha + beta fused and "
            "rounded once, bfloat16's variance and running updates rounded step by step, float16's running "
            "statistics from the float32 sums; its gradients from the rounded statistics in float32, each "
            "rounded once",
            special="A NaN or inf in a channel makes that channel's outputs NaN while training.",
            gradient="While training with spatial dims, one rule in closed form (PyTorch's formula): with "
            "x̂ = (x - mean)·rstd and sums over each channel's M = N·H·W positions in the statistics' order (each "
            "sample's positions, then the N row sums), the bias's gradient is Σ g, the weight's Σ g·x̂, the "
            "input's (rstd·weight)·((g - Σ g / M) - x̂·(Σ g·x̂ / M)), each operation rounded in that order; "
            "under create_graph the statistics are recomputed from x, recorded, so second derivatives reach x "
            "through them. Otherwise (no spatial dims, evaluation) through the ops it is built of.",
        ),
        "instance_norm": OpDoc(
            "composite",
            (
                sig(_NN + "instance_norm", nnf.instance_norm),
                "vkml.nn.InstanceNorm1d(...)",
                "vkml.nn.InstanceNorm2d(...)",
            ),
            nnf.instance_norm,
            precision="as `batch_norm`, per sample and channel",
            gradient=THROUGH,
        ),
        "group_norm": OpDoc(
            "composite",
            (sig(_NN + "group_norm", nnf.group_norm), "vkml.nn.GroupNorm(num_groups, num_channels, eps=1e-05)"),
            nnf.group_norm,
            precision="as `layer_norm`, per sample and group",
            gradient=THROUGH,
        ),
        "rms_norm": OpDoc(
            "composite",
            (sig(_NN + "rms_norm", nnf.rms_norm), "vkml.nn.RMSNorm(normalized_shape, eps=None)"),
            nnf.rms_norm,
            precision="a `mean` of squares, `rsqrt` and products",
            gradient=THROUGH,
        ),
        "normalize": OpDoc(
            "composite",
            (sig(_NN + "normalize", nnf.normalize),),
            nnf.normalize,
            precision="a tree sum, a root (`sqrt` for p = 2), a clamp and one division",
            special="A zero vector gives zeros, and zero gradient (PyTorch's subgradient).",
            gradient=THROUGH,
        ),
        "nll_loss": OpDoc(
            "loss",
            (
                sig(_NN + "nll_loss", nnf.nll_loss),
                "vkml.nn.NLLLoss(weight=None, size_average=None, ignore_index=-100, reduce=None, reduction='mean')",
            ),
            nnf.nll_loss,
            precision="a select, tree sums and one division by the summed weights",
            special="A target out of [0, C) (not `ignore_index`) is PyTorch's IndexError, raised when a result is read, or by a later realize that computes from it once the device has checked the targets.",
            gradient=THROUGH,
        ),
        "binary_cross_entropy": OpDoc(
            "loss",
            (
                sig(_NN + "binary_cross_entropy", nnf.binary_cross_entropy),
                "vkml.nn.BCELoss(weight=None, size_average=None, reduce=None, reduction='mean')",
            ),
            nnf.binary_cross_entropy,
            precision="two `log`s clamped at -100, products, then `mean` or `sum`",
            special="An input outside [0, 1] or NaN is PyTorch's RuntimeError, raised when the loss is read "
            "(the check is computed with it, no stall).",
            gradient=THROUGH,
        ),
        "binary_cross_entropy_with_logits": OpDoc(
            "loss",
            (
                sig(_NN + "binary_cross_entropy_with_logits", nnf.binary_cross_entropy_with_logits),
                "vkml.nn.BCEWithLogitsLoss(weight=None, size_average=None, reduce=None, reduction='mean', pos_weight=None)",
            ),
            nnf.binary_cross_entropy_with_logits,
            precision="`softplus`, products and sums, then `mean` or `sum`",
            gradient=THROUGH,
        ),
        "l1_loss": OpDoc(
            "loss",
            (sig(_NN + "l1_loss", nnf.l1_loss), "vkml.nn.L1Loss(size_average=None, reduce=None, reduction='mean')"),
            nnf.l1_loss,
            precision="a difference, `abs`, then `mean` or `sum`",
            gradient=THROUGH,
        ),
        "smooth_l1_loss": OpDoc(
            "loss",
            (
                sig(_NN + "smooth_l1_loss", nnf.smooth_l1_loss),
                "vkml.nn.SmoothL1Loss(size_average=None, reduce=None, reduction='mean', beta=1.0)",
            ),
            nnf.smooth_l1_loss,
            precision="a difference, a select between the square and linear pieces, then `mean` or `sum`",
            gradient=THROUGH,
        ),
        "huber_loss": OpDoc(
            "loss",
            (sig(_NN + "huber_loss", nnf.huber_loss), "vkml.nn.HuberLoss(reduction='mean', delta=1.0)"),
            nnf.huber_loss,
            precision="a difference, a select between the square and linear pieces, then `mean` or `sum`",
            gradient=THROUGH,
        ),
        "kl_div": OpDoc(
            "loss",
            (
                sig(_NN + "kl_div", nnf.kl_div),
                "vkml.nn.KLDivLoss(size_average=None, reduce=None, reduction='mean', log_target=False)",
            ),
            nnf.kl_div,
            precision="`log` (or `exp`), products, then a tree sum",
            special="0 · log(0) counts as 0; a negative or NaN target gives NaN (PyTorch's xlogy).",
            gradient=THROUGH,
        ),
        "unfold": OpDoc(
            "composite",
            (sig(_NN + "unfold", nnf.unfold), "vkml.nn.Unfold(kernel_size, dilation=1, padding=0, stride=1)"),
            nnf.unfold,
            gradient="Through the views it is built of: each column's gradient adds back into the position it read.",
        ),
        "fold": OpDoc(
            "composite",
            (
                sig(_NN + "fold", nnf.fold),
                "vkml.nn.Fold(output_size, kernel_size, dilation=1, padding=0, stride=1)",
            ),
            nnf.fold,
            precision="each output adds the blocks that cover it in kernel order (one rounding per block after "
            "the first); exact where blocks do not overlap",
            divergence="PyTorch adds overlapping blocks in block order: where more than two overlap, the last bits "
            "may differ.",
            gradient=THROUGH,
        ),
        "dropout2d": OpDoc(
            "composite",
            (sig(_NN + "dropout2d", nnf.dropout2d), "vkml.nn.Dropout2d(p=0.5, inplace=False)"),
            nnf.dropout2d,
            precision="kept channels are multiplied by 1/(1-p) rounded to float32 (one rounding)",
            divergence="The masks come from vkml's generator: other channels than PyTorch's for the same seed.",
            gradient=THROUGH,
        ),
    }
)
# Fractional max pooling (vkml/nn/fractional_pool.py)
_FRACTIONAL = (
    "PyTorch's windows for the same `_random_samples`: each (sample, channel) plane's uniforms place the "
    "windows of each dim at `int((i + u) * alpha) - int(u * alpha)`, alpha = (input - kernel) / (output - 1), "
    "the last at input - kernel, computed on the host in the input's float type (float16 arithmetic for "
    "float16, as PyTorch's CPU kernel; bfloat16 in float32). Without `_random_samples` they are drawn with "
    "`vkml.rand`, so the windows differ from PyTorch's for the same seed; reading the samples back waits for "
    "the device."
)
PAGES.update(
    {
        f"fractional_max_pool{n}d": OpDoc(
            "composite",
            (
                sig(_NN + f"fractional_max_pool{n}d", getattr(nnf, f"fractional_max_pool{n}d")),
                f"vkml.nn.FractionalMaxPool{n}d(kernel_size, output_size=None, output_ratio=None, "
                "return_indices=False, _random_samples=None)",
            ),
            getattr(nnf, f"fractional_max_pool{n}d"),
            precision="exact: each output is the selected element; `return_indices` gives its position in the "
            "plane (" + ("t·H·W + h·W + w" if n == 3 else "h·W + w") + ")",
            special="The first maximum of a window in row-major order, or its last NaN (PyTorch's scan).",
            divergence=_FRACTIONAL,
            gradient="Through `gather`: each output's gradient goes to its selected element; overlapping windows add.",
        )
        for n in (2, 3)
    }
)
