"""The pages of the torch.* names of older and third-party code (vkml/frontend/legacy_names.py): one page
for the names that are other ops under PyTorch's torch.* signature, one per new op."""

from __future__ import annotations

from .page import THROUGH, OpDoc, sig, vkml

_L = vkml.frontend.legacy_names
_HOST = "host: numpy, exact or float64 rounded once, on any device's tensors (the device runs no kernel)"
_HOST_NOTE = (
    "Computed on the host whatever the device (a realize, a download and an upload per call); the same bits on "
    "every device."
)

_ALIASES = (
    "concat concatenate detach split_with_sizes unsafe_split_with_sizes unsafe_chunk unsafe_split conv1d conv2d conv3d conv_transpose1d "
    "conv_transpose2d conv_transpose3d max_pool1d max_pool2d max_pool3d max_pool1d_with_indices avg_pool1d "
    "adaptive_avg_pool1d adaptive_max_pool1d batch_norm layer_norm group_norm instance_norm rms_norm embedding "
    "dropout alpha_dropout feature_dropout feature_alpha_dropout pixel_shuffle pixel_unshuffle channel_shuffle "
    "prelu selu celu rrelu threshold hardshrink bilinear cosine_similarity pairwise_distance pdist kl_div "
    "margin_ranking_loss cosine_embedding_loss hinge_embedding_loss triplet_margin_loss poisson_nll_loss "
    "binary_cross_entropy_with_logits ctc_loss alias_copy detach_copy diagonal_copy expand_copy narrow_copy "
    "permute_copy select_copy slice_copy split_copy split_with_sizes_copy squeeze_copy t_copy transpose_copy "
    "unbind_copy unfold_copy unsqueeze_copy view_copy slice_scatter select_scatter diagonal_scatter adjoint "
    "frobenius_norm nuclear_norm get_device convolution conv_tbc set_default_tensor_type"
).split()


def _page(kind: str, calls, target, precision: str, special: str = "", divergence: str = "", gradient: str = THROUGH):
    return OpDoc(kind, calls, target, precision=precision, special=special, divergence=divergence, gradient=gradient)


def _host(calls, target, precision: str, special: str = "", divergence: str = "", gradient: str = "None (integer or "
          "piecewise-constant results)."):  # fmt: skip
    return OpDoc(
        "elementwise",
        calls,
        target,
        precision=precision,
        special=special,
        divergence=_HOST_NOTE + (" " + divergence if divergence else ""),
        gradient=gradient,
        backends=_HOST,
    )


def _window(name: str, formula: str) -> OpDoc:
    target = getattr(_L, name)
    return OpDoc(
        "creation",
        (sig(f"vkml.{name}", target),),
        target,
        precision=f"{formula} in float64 on the host, rounded once to the dtype",
        special="window_length 0 gives an empty tensor, 1 gives [1.]; `periodic` computes N + 1 points and drops "
        "the last, as PyTorch.",
        divergence="PyTorch computes in the result dtype: float32 values may differ in the last bit. " + _HOST_NOTE,
        gradient="A leaf: `requires_grad=True` makes it one.",
        backends=_HOST,
    )


PAGES: dict[str, OpDoc] = {
    "torch_functional_names": _page(
        "alias",
        tuple(sig(f"vkml.{name}", getattr(_L, name)) for name in _ALIASES)
        + (
            "vkml.<op>_(input, ...) for the in-place Tensor methods (vkml.relu_, vkml.clamp_, vkml.zero_, ...)",
            "vkml.FloatTensor(*sizes) / vkml.FloatTensor(data) and the other legacy types (Double, Half, BFloat16, "
            "Byte, Char, Short, Int, Long, Bool), vkml.cuda.FloatTensor(...) on the GPU",
            "Tensor.new(*sizes) / Tensor.new(data): the legacy constructor with the tensor's dtype and device",
        ),
        vkml.frontend.legacy_names,
        "as the op each one calls (see its page: conv2d, batch_norm, kl_div, ...)",
        special="The legacy constructors give zeros for sizes (PyTorch's memory is uninitialized); "
        "`isinstance(x, vkml.FloatTensor)` is float32 on the CPU, `vkml.cuda.FloatTensor` float32 on a GPU. "
        "The `*_copy` functions return their view op's result as new tensors; the `*_scatter` ones a copy "
        "of input with src written into the view (src must have the view's shape, PyTorch's error otherwise). "
        "The torch.* losses take `reduction` as PyTorch's integer (0 none, 1 mean, 2 sum) and default to 0, "
        "as PyTorch's binding; `torch.batch_norm` and `torch.instance_norm` take weight and bias before the running "
        "statistics, `torch.embedding` the weight first, `torch.dropout` a required `train`.",
        divergence="`rrelu`'s `generator` raises NotImplementedError. `cudnn_enabled` is accepted and ignored, as on "
        "PyTorch's CPU.",
    ),
    "gcd": _host(
        (sig("vkml.gcd", _L.gcd), "Tensor.gcd(other)", "Tensor.gcd_(other)"),
        _L.gcd,
        "exact (numpy.gcd on the host)",
        special="Nonnegative; gcd(0, 0) = 0; a float or bool result dtype raises, as PyTorch (bool with int is int).",
    ),
    "lcm": _host(
        (sig("vkml.lcm", _L.lcm), "Tensor.lcm(other)", "Tensor.lcm_(other)"),
        _L.lcm,
        "exact (numpy.lcm on the host); an overflow wraps",
        special="Nonnegative; lcm(x, 0) = 0; a float or bool result dtype raises, as PyTorch (bool with int is int).",
    ),
    "frexp": _host(
        (sig("vkml.frexp", _L.frexp), "Tensor.frexp()"),
        _L.frexp,
        "exact (numpy.frexp on the host)",
        special="0, ±inf and NaN keep their value with exponent 0; subnormals are normalised. Returns "
        "`vkml.return_types.frexp(mantissa, exponent)`, exponent int32.",
    ),
    "nextafter": _host(
        (sig("vkml.nextafter", _L.nextafter), "Tensor.nextafter(other)", "Tensor.nextafter_(other)"),
        _L.nextafter,
        "exact (numpy.nextafter on the host; bfloat16: a step of its bit pattern, numpy having no bfloat16)",
        special="NaN in either operand gives NaN; equal operands give `other`. The operands promote as "
        "PyTorch's (an int tensor with a float one, float16 with float32); an integer result dtype raises "
        "NotImplementedError.",
        gradient="PyTorch's rule: `input` gets the gradient where input != other (0 where they are equal), "
        "`other` zeros.",
    ),
    "histogram": _host(
        (sig("vkml.histogram", _L.histogram),),
        _L.histogram,
        "numpy.histogram on the host (float64 counts, rounded once to the input dtype); edges from linspace in the "
        "input dtype, as PyTorch",
        special="An empty range (min == max) is widened by 0.5 each way, and an empty input without a range "
        "counts over [0, 1], as numpy and PyTorch. Returns `vkml.return_types.histogram(hist, bin_edges)`.",
        divergence="PyTorch's is CPU-only; this one takes tensors of any device. PyTorch adds float32 weights "
        "in float32 one by one; vkml's float64 sums rounded once can differ from them by a few ulp.",
    ),
    "gradient": _page(
        "composite",
        (sig("vkml.gradient", _L.gradient),),
        _L.gradient,
        "numpy's formulas: (f[i+1] - f[i-1]) / 2h inside, (f[1] - f[0]) / h or the second-order "
        "(-3f[0] + 4f[1] - f[2]) / 2h at the ends; uneven coordinates use numpy's weighted three-point formula; "
        "each a few rounded operations",
        special="Each dim needs edge_order + 1 samples, as PyTorch; integer inputs give the default float dtype.",
        divergence="PyTorch may order the same operations differently: the last bits may differ.",
    ),
    "heaviside": _page(
        "elementwise",
        (sig("vkml.heaviside", _L.heaviside), "Tensor.heaviside(values)", "Tensor.heaviside_(values)"),
        _L.heaviside,
        "exact",
        special="NaN input gives 0 (the comparison input > 0 is false), as PyTorch's kernel; -0.0 counts as 0.",
        divergence="PyTorch's heaviside has no derivative: its backward raises. vkml differentiates it as the "
        "`where` it is built of: `values` gets the gradient where input == 0, `input` none.",
        gradient="`values`: the gradient where input == 0; `input`: none (piecewise constant).",
    ),
    "ldexp": _page(
        "elementwise",
        (sig("vkml.ldexp", _L.ldexp), "Tensor.ldexp(other)", "Tensor.ldexp_(other)"),
        _L.ldexp,
        "exact for a float input and an integer exponent tensor (one rounding, as PyTorch's std::ldexp: the "
        "product formed in float64 on the device, float64 inputs on the host); otherwise PyTorch's formula input · pow(2.0, other): `pow` then one rounded product",
        special="One rounding of the exact input · 2^other: it overflows to ±inf or underflows to a subnormal or 0 "
        "only where the result does (0.5 · 2^128 is finite in float32). Other exponents: as `mul` and `pow`.",
        gradient="PyTorch's LdexpBackward0: grad · pow(2, other) with an integer 2, so a negative integer "
        "exponent gives a zero gradient; `other` gets none.",
    ),
    "inner": _page(
        "composite",
        (sig("vkml.inner", _L.inner), "Tensor.inner(other)"),
        _L.inner,
        "as `tensordot` over the last dims (a matmul)",
        special="A 0-d operand multiplies.",
    ),
    "vdot": _page(
        "composite",
        (sig("vkml.vdot", _L.vdot), "Tensor.vdot(other)"),
        _L.vdot,
        "as `dot` (no conjugation: vkml has no complex dtypes)",
    ),
    "addr": _page(
        "composite",
        (sig("vkml.addr", _L.addr), "Tensor.addr(vec1, vec2, *, beta=1, alpha=1)", "Tensor.addr_(...)"),
        _L.addr,
        "as `addmm`: `outer`, the scalings and one `add`",
        special="beta = 0 ignores input, NaN included, as PyTorch.",
    ),
    "addbmm": _page(
        "composite",
        (sig("vkml.addbmm", _L.addbmm), "Tensor.addbmm(batch1, batch2, *, beta=1, alpha=1)", "Tensor.addbmm_(...)"),
        _L.addbmm,
        "`bmm`, the tree `sum` over the batch, the scalings and one `add`",
        special="beta = 0 ignores input, NaN included, as PyTorch.",
        divergence="PyTorch accumulates the batch inside one GEMM: the last bits may differ.",
    ),
    "diagflat": _page(
        "movement",
        (sig("vkml.diagflat", _L.diagflat), "Tensor.diagflat(offset=0)"),
        _L.diagflat,
        "exact (moves or copies values; never changes bits)",
    ),
    "dsplit": _page(
        "movement",
        (sig("vkml.dsplit", _L.dsplit), "Tensor.dsplit(indices_or_sections)"),
        _L.dsplit,
        "exact (views)",
        special="Needs 3 or more dims; an int must divide dim 2, as PyTorch.",
    ),
    "unravel_index": _page(
        "composite",
        (sig("vkml.unravel_index", _L.unravel_index),),
        _L.unravel_index,
        "exact (integer floor division and remainder)",
        special="Negative indices count from the end; out-of-range ones raise, as PyTorch.",
        gradient="None (integer results).",
    ),
    "combinations": _page(
        "movement",
        (sig("vkml.combinations", _L.combinations),),
        _L.combinations,
        "exact (an `index_select` of the input)",
        special="r = 0 gives an empty tensor; r larger than the length gives shape (0, r), as PyTorch.",
    ),
    "renorm": _page(
        "composite",
        (sig("vkml.renorm", _L.renorm), "Tensor.renorm(p, dim, maxnorm)", "Tensor.renorm_(p, dim, maxnorm)"),
        _L.renorm,
        "`linalg_vector_norm` per slice, then the factor maxnorm / (norm + 1e-7) and one product",
        divergence="PyTorch sums the norms in another order: the last bits may differ.",
    ),
    "ravel": _page(
        "movement",
        (sig("vkml.ravel", _L.ravel), "Tensor.ravel()"),
        _L.ravel,
        "exact (a view where the layout allows, else a copy)",
    ),
    "fill": _page(
        "creation",
        (sig("vkml.fill", _L.fill), "vkml.fill_(input, value)"),
        _L.fill,
        "exact (the value converted once to the dtype)",
        gradient="None to input; a 0-d tensor value receives the summed gradient, as PyTorch.",
    ),
    "scalar_tensor": _page(
        "creation",
        (sig("vkml.scalar_tensor", _L.scalar_tensor),),
        _L.scalar_tensor,
        "exact (the number rounded once to the dtype)",
        special="An int gives the default float dtype unless `dtype` is given, as PyTorch.",
        gradient="A leaf: `requires_grad=True` makes it one.",
    ),
    "hann_window": _window("hann_window", "0.5 - 0.5·cos(2πn/(N-1))"),
    "hamming_window": _window("hamming_window", "alpha - beta·cos(2πn/(N-1))"),
    "blackman_window": _window("blackman_window", "0.42 - 0.5·cos(2πn/(N-1)) + 0.08·cos(4πn/(N-1))"),
    "bartlett_window": _window("bartlett_window", "1 - |2n/(N-1) - 1|"),
    "kaiser_window": _window("kaiser_window", "I0(beta·sqrt(1 - (2n/(N-1) - 1)²)) / I0(beta)"),
}
