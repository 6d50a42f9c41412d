"""The pages of issue 18's further layers and losses (vkml/nn/functional_more.py,
vkml/nn/functional_losses_more.py)."""

from __future__ import annotations

from .page import THROUGH, OpDoc, nnf, sig

_NN = "vkml.nn.functional."
PAGES: dict[str, OpDoc] = {}
_RANDOM_MASKS = "The masks come from vkml's generator: other elements than PyTorch's for the same seed."
_NOT_READ = (
    "is PyTorch's error, raised when a result computed through the loss is read, not at the call (reading the "
    "values there would wait for the device)."
)


def _issue18(name, kind, module, precision, special="", divergence="", gradient=THROUGH):
    fn = getattr(nnf, name)
    calls = (sig(_NN + name, fn),) + ((module,) if module else ())
    return OpDoc(kind, calls, fn, precision=precision, special=special, divergence=divergence, gradient=gradient)


PAGES.update(
    {
        "dropout1d": _issue18(
            "dropout1d",
            "composite",
            "vkml.nn.Dropout1d(p=0.5, inplace=False)",
            "kept channels are multiplied by 1/(1-p) rounded to float32 (one rounding)",
            divergence=_RANDOM_MASKS,
        ),
        "dropout3d": _issue18(
            "dropout3d",
            "composite",
            "vkml.nn.Dropout3d(p=0.5, inplace=False)",
            "as `dropout1d`",
            divergence=_RANDOM_MASKS,
        ),
        "alpha_dropout": _issue18(
            "alpha_dropout",
            "composite",
            "vkml.nn.AlphaDropout(p=0.5, inplace=False)",
            "one product by a and one addition of b per element (PyTorch's a and b, rounded to float32)",
            divergence=_RANDOM_MASKS,
        ),
        "feature_alpha_dropout": _issue18(
            "feature_alpha_dropout",
            "composite",
            "vkml.nn.FeatureAlphaDropout(p=0.5, inplace=False)",
            "as `alpha_dropout`",
            divergence=_RANDOM_MASKS,
        ),
        "rrelu": _issue18(
            "rrelu",
            "composite",
            "vkml.nn.RReLU(lower=0.125, upper=0.3333333333333333, inplace=False)",
            "training: one product by the drawn slope; eval: `leaky_relu` with slope (lower + upper) / 2",
            special="NaN gives NaN.",
            divergence="The slopes are uniforms of vkml's generator drawn for every element; PyTorch's CPU kernel draws "
            "one only for each negative element, so the slopes and the draws after them differ from PyTorch's.",
            gradient="1 where x >= 0, else the slope (drawn, or the mean in eval).",
        ),
        "cosine_similarity": _issue18(
            "cosine_similarity",
            "composite",
            "vkml.nn.CosineSimilarity(dim=1, eps=1e-08)",
            "two 2-norms (tree sums and `sqrt`), clamped at eps, two divisions, a product and a tree sum",
            special="A vector of norm below eps is divided by eps; the clamp passes the norm's gradient "
            "unchanged, as PyTorch's (which clamps in place under no_grad), and a zero vector's norm has gradient 0.",
        ),
        "pairwise_distance": _issue18(
            "pairwise_distance",
            "composite",
            "vkml.nn.PairwiseDistance(p=2.0, eps=1e-06, keepdim=False)",
            "a difference plus eps, then `norm`'s tree sum and root",
        ),
        "pdist": _issue18(
            "pdist",
            "composite",
            "",
            "rows gathered for each pair i < j (exact), a difference, then `norm`",
        ),
        "bilinear": _issue18(
            "bilinear",
            "composite",
            "vkml.nn.Bilinear(in1_features, in2_features, out_features, bias=True)",
            "one `matmul` of input1 with the weight (its order), a product with input2 and a tree sum over in2, "
            "then the bias",
            divergence="PyTorch contracts in another order: the last bits may differ.",
        ),
        "embedding_bag": _issue18(
            "embedding_bag",
            "composite",
            "vkml.nn.EmbeddingBag(num_embeddings, embedding_dim, max_norm=None, norm_type=2.0, "
            "scale_grad_by_freq=False, mode='mean', sparse=False, _weight=None, include_last_offset=False, "
            "padding_idx=None)",
            "`embedding`'s exact rows, a 0/1 `matmul` over the bags (sum), one division by the count (mean), or "
            "`amax` (max)",
            special="An empty bag gives zeros; `padding_idx` entries count for nothing. An index out of range "
            + _NOT_READ,
            divergence="`sparse=True` raises NotImplementedError, and so does `scale_grad_by_freq` (PyTorch's CPU "
            "kernel scales each row's gradient by another row's count). Offsets that "
            "PyTorch refuses (`offsets[0] != 0`, `offsets[-1]` past the input) raise its RuntimeError when a result is "
            "read; decreasing offsets are not checked (PyTorch fails on them too, with an internal assertion).",
            gradient="Through the ops it is built of: each index's row gets its bag's gradient (times its "
            "per-sample weight, or divided by the count); for 'max' the gradient goes to the maximum.",
        ),
        "local_response_norm": _issue18(
            "local_response_norm",
            "composite",
            "vkml.nn.LocalResponseNorm(size, alpha=0.0001, beta=0.75, k=1.0)",
            "squares summed over the channel window in channel order, then `pow` and one division",
            divergence="PyTorch averages the window with `avg_pool2d`/`avg_pool3d`: the last bits may differ.",
        ),
        "gumbel_softmax": _issue18(
            "gumbel_softmax",
            "composite",
            "",
            "`log`s of the uniform draws and `softmax`",
            divergence="The noise comes from vkml's generator: other samples than PyTorch's for the same seed.",
            gradient="The soft sample's gradient (`hard=True` adds a detached difference).",
        ),
        "poisson_nll_loss": _issue18(
            "poisson_nll_loss",
            "loss",
            "vkml.nn.PoissonNLLLoss(log_input=True, full=False, size_average=None, eps=1e-08, reduce=None, "
            "reduction='mean')",
            "`exp` or `log`, products, then `mean` or `sum`",
        ),
        "gaussian_nll_loss": _issue18(
            "gaussian_nll_loss",
            "loss",
            "vkml.nn.GaussianNLLLoss(*, full=False, eps=1e-06, reduction='mean')",
            "`log`, a square and one division, then `mean` or `sum`",
            special="A negative `var` entry " + _NOT_READ,
            gradient="Through the ops it is built of; the clamp at eps passes the gradient through unchanged, "
            "as PyTorch's.",
        ),
        "margin_ranking_loss": _issue18(
            "margin_ranking_loss",
            "loss",
            "vkml.nn.MarginRankingLoss(margin=0.0, size_average=None, reduce=None, reduction='mean')",
            "a difference, a product, a clamp, then `mean` or `sum`",
        ),
        "hinge_embedding_loss": _issue18(
            "hinge_embedding_loss",
            "loss",
            "vkml.nn.HingeEmbeddingLoss(margin=1.0, size_average=None, reduce=None, reduction='mean')",
            "selects and a clamp, then `mean` or `sum`",
        ),
        "soft_margin_loss": _issue18(
            "soft_margin_loss",
            "loss",
            "vkml.nn.SoftMarginLoss(size_average=None, reduce=None, reduction='mean')",
            "`softplus` of -target·input, then `mean` or `sum`",
            divergence="PyTorch computes log1p(exp(-y·x)); `softplus` returns -y·x itself above 20, within an ulp.",
        ),
        "multilabel_soft_margin_loss": _issue18(
            "multilabel_soft_margin_loss",
            "loss",
            "vkml.nn.MultiLabelSoftMarginLoss(weight=None, size_average=None, reduce=None, reduction='mean')",
            "two `logsigmoid`s, products, a tree sum over the classes and one division, then `mean` or `sum`",
        ),
        "cosine_embedding_loss": _issue18(
            "cosine_embedding_loss",
            "loss",
            "vkml.nn.CosineEmbeddingLoss(margin=0.0, size_average=None, reduce=None, reduction='mean')",
            "three tree sums, `sqrt`, one division, selects, then `mean` or `sum`",
        ),
        "multi_margin_loss": _issue18(
            "multi_margin_loss",
            "loss",
            "vkml.nn.MultiMarginLoss(p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction='mean')",
            "a select of each target's score, a clamp (squared for p = 2), a tree sum and one division by C",
            special="A target out of [0, C) " + _NOT_READ,
        ),
        "multilabel_margin_loss": _issue18(
            "multilabel_margin_loss",
            "loss",
            "vkml.nn.MultiLabelMarginLoss(size_average=None, reduce=None, reduction='mean')",
            "selects over (sample, target slot, class), a clamp, a tree sum and one division by C",
            special="A counted target out of [0, C) " + _NOT_READ,
            divergence="Cost: N·C·C elements (PyTorch loops), fine for the class counts multi-label tasks have.",
        ),
        "triplet_margin_loss": _issue18(
            "triplet_margin_loss",
            "loss",
            "vkml.nn.TripletMarginLoss(margin=1.0, p=2.0, eps=1e-06, swap=False, size_average=None, reduce=None, "
            "reduction='mean')",
            "two or three `pairwise_distance`s, a clamp, then `mean` or `sum`",
        ),
        "ctc_loss": _issue18(
            "ctc_loss",
            "loss",
            "vkml.nn.CTCLoss(blank=0, reduction='mean', zero_infinity=False)",
            "the alpha recursion in log space: per step a 3-way logsumexp (max-shifted `exp`s, a sum, `log`) plus the "
            "emission; PyTorch's CPU kernel runs the same recursion, so results agree to a few ulp",
            special="An impossible alignment (input too short) gives inf, or 0 with `zero_infinity`. A target label "
            "out of [0, C) " + _NOT_READ,
            divergence="The gradient with respect to `log_probs` is the true one, -(state occupancy); PyTorch's "
            "backward adds exp(log_probs), assuming they come from `log_softmax`: through `log_softmax` (the usual "
            "use) both give the same gradient of the logits. Out-of-range labels raise (PyTorch reads out of "
            "bounds). Input lengths given as a tensor are not checked against T.",
            gradient="Through the ops it is built of (the recursion's steps); NaN-free for unreachable states.",
        ),
        "triplet_margin_with_distance_loss": _issue18(
            "triplet_margin_with_distance_loss",
            "loss",
            "vkml.nn.TripletMarginWithDistanceLoss(*, distance_function=None, margin=1.0, swap=False, "
            "reduction='mean')",
            "as the distance function's, then a clamp and `mean` or `sum`",
        ),
    }
)


# Power-average pooling, max unpooling (vkml/nn/functional_pooling.py)
PAGES.update(
    {
        **{
            f"lp_pool{n}d": _issue18(
                f"lp_pool{n}d",
                "composite",
                f"vkml.nn.LPPool{n}d(norm_type, kernel_size, stride=None, ceil_mode=False)",
                f"PyTorch's composite: `pow`, `avg_pool{n}d`, a product by the window size, `pow` by 1/p",
                special="Negative elements with a fractional p, or a window whose powers sum below 0 (odd p), give "
                "NaN, as PyTorch's (no absolute value is taken). p = ±inf is the max (min) of |x| over each window, "
                "as PyTorch since 2.12 (before, the formula gave ones).",
                gradient="Through the ops it is built of; a window whose powers sum to 0 gets gradient 0 "
                "(`relu`'s, as PyTorch's).",
            )
            for n in (1, 2, 3)
        },
        **{
            f"max_unpool{n}d": _issue18(
                f"max_unpool{n}d",
                "composite",
                f"vkml.nn.MaxUnpool{n}d(kernel_size, stride=None, padding=0)",
                "exact: each element is copied to its index",
                special="Repeated indices: the last element in row-major order wins, as PyTorch's CPU kernel (its "
                "GPU kernel leaves the winner unspecified). An index outside the output plane is PyTorch's "
                "RuntimeError at the call.",
                divergence="The indices are read back to the host at the call (they choose the positions): one "
                "submission per call when they are not computed yet.",
                gradient="Every element gets the output's gradient at its index, an overwritten one too (a gather), "
                "as PyTorch's.",
            )
            for n in (1, 2, 3)
        },
    }
)
