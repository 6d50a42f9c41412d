"""PyTorch's test/test_nn.py (its hand-written tests outside module_db), run on torch and on vkml side by side.

Each scenario follows one of test_nn's functional or Module API tests: cross_entropy with label
smoothing, weights and probabilities, nll_loss edge cases, embedding's max_norm, padding_idx and
from_pretrained, pad's modes and errors, interpolate's size and scale_factor rules, grid_sample and
affine_grid, pixel_shuffle, cosine_similarity edge cases, clip_grad_norm_/clip_grad_value_ (norm types,
error_if_nonfinite, foreach), parameters_to_vector, and the Module API (register_buffer/parameter
errors, named_modules with duplicates, state_dict hooks, apply, zero_grad, requires_grad_, to(),
__setattr__ rules, ModuleList/ModuleDict/ParameterList/ParameterDict, Sequential slicing, insert,
extend, pop, + and *). What a scenario returns, raises and warns on vkml must be what it does on torch
(tests/pytorch_suite.py). The default suite runs the scenarios that build no kernel and a sample of
the others; ``-m exhaustive`` runs them all.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from optest import skip_before_pytorch
from pytorch_suite import check, known_params

import vkml

SC = {}  # the default suite's
SLOW = {}  # the exhaustive run's (each compiles kernels on first use)
# a sample of the table-built families, in the default suite
_DEFAULT_SAMPLES = {
    "interp_bilinear_scale_factor2_align_cornersFalse",
    "grid_sample_bilinear_zeros_False",
    "pad_reflect_2_1_1_0",
}


def sc(f):
    SC[f.__name__] = f
    return f


def slow(f):
    SLOW[f.__name__] = f
    return f


def _group(name: str, f) -> None:
    (SC if name in _DEFAULT_SAMPLES else SLOW)[name] = f


R = np.random.default_rng(0)
X4 = R.standard_normal((2, 3, 4, 5)).astype(np.float32)
X3 = R.standard_normal((2, 3, 6)).astype(np.float32)
L = R.standard_normal((4, 5)).astype(np.float32)


def rnd(shape):
    return np.random.default_rng(len(shape) * 7 + int(np.prod(shape))).standard_normal(shape)


def rint(lo, hi, shape):
    return np.random.default_rng(int(np.prod(shape))).integers(lo, hi, shape)


def t(m, a, rg=False, **kw):
    return m.tensor(a, requires_grad=rg, **kw)


def F(m):
    return m.nn.functional


# ---------- losses
def ce(**kw):
    def f(m):
        x = t(m, L, True)
        y = m.tensor([0, 4, 2, 1])
        out = F(m).cross_entropy(x, y, **kw)
        out.sum().backward()
        return out, x.grad

    return f


for i, kw in enumerate(
    [
        dict(label_smoothing=0.1),
        dict(label_smoothing=0.3, reduction="sum"),
        dict(label_smoothing=0.2, reduction="none"),
        dict(label_smoothing=0.2, weight=None),
        dict(label_smoothing=0.15, ignore_index=2),
        dict(label_smoothing=0.15, ignore_index=2, reduction="none"),
    ]
):
    _group(f"ce_label_smoothing_{i}", ce(**kw))


def ce_w(**kw):
    def f(m):
        x = t(m, L, True)
        y = m.tensor([0, 4, 2, 1])
        out = F(m).cross_entropy(x, y, weight=m.tensor([1.0, 2.0, 0.5, 1.5, 3.0]), **kw)
        out.sum().backward()
        return out, x.grad

    return f


for i, kw in enumerate(
    [
        dict(),
        dict(label_smoothing=0.2),
        dict(label_smoothing=0.2, reduction="sum"),
        dict(label_smoothing=0.2, reduction="none"),
        dict(label_smoothing=0.2, ignore_index=4),
    ]
):
    _group(f"ce_weight_{i}", ce_w(**kw))


def ce_prob(**kw):
    def f(m):
        x = t(m, L, True)
        p = m.tensor(
            np.random.default_rng(5).dirichlet(np.ones(5), 4).astype(np.float32)
            if False
            else np.full((4, 5), 0.2, np.float32) + np.eye(4, 5, dtype=np.float32) * 0.1
        )
        out = F(m).cross_entropy(x, p, **kw)
        out.sum().backward()
        return out, x.grad

    return f


for i, kw in enumerate(
    [
        dict(),
        dict(label_smoothing=0.25),
        dict(reduction="none", label_smoothing=0.1),
        dict(weight=None, reduction="sum"),
    ]
):
    _group(f"ce_probs_{i}", ce_prob(**kw))


@sc
def ce_label_smoothing_bad(m):
    F(m).cross_entropy(t(m, L), m.tensor([0, 1, 2, 3]), label_smoothing=1.5)


@sc
def ce_label_smoothing_neg(m):
    F(m).cross_entropy(t(m, L), m.tensor([0, 1, 2, 3]), label_smoothing=-0.1)


@slow
def ce_spatial_ls(m):
    x = t(m, X4, True)
    y = m.tensor(rint(0, 3, (2, 4, 5)))
    out = F(m).cross_entropy(x, y, label_smoothing=0.1)
    out.backward()
    return out, x.grad


@slow
def ce_module_ls(m):
    return m.nn.CrossEntropyLoss(label_smoothing=0.1, reduction="sum")(t(m, L), m.tensor([0, 1, 2, 3]))


@slow
def ce_empty_batch(m):
    return F(m).cross_entropy(m.zeros(0, 5), m.zeros(0, dtype=m.int64))


@slow
def ce_all_ignored(m):
    return F(m).cross_entropy(t(m, L), m.tensor([1, 1, 1, 1]), ignore_index=1)


@slow
def ce_target_oob(m):
    return F(m).cross_entropy(t(m, L), m.tensor([0, 1, 7, 3]))


@sc
def ce_target_float_wrong_shape(m):
    F(m).cross_entropy(t(m, L), m.ones(4, 3))


@slow
def ce_1d(m):
    x = t(m, L[0], True)
    out = F(m).cross_entropy(x, m.tensor(3))
    out.backward()
    return out, x.grad


@slow
def nll_basic(m):
    x = t(m, L, True)
    out = F(m).nll_loss(x, m.tensor([0, 4, 2, 1]))
    out.backward()
    return out, x.grad


@slow
def nll_weight_ignore(m):
    x = t(m, L, True)
    out = F(m).nll_loss(x, m.tensor([0, 4, 2, 1]), weight=m.tensor([1.0, 2, 3, 4, 5]), ignore_index=4)
    out.backward()
    return out, x.grad


@slow
def nll_all_ignored_mean(m):
    x = t(m, L, True)
    out = F(m).nll_loss(x, m.tensor([2, 2, 2, 2]), ignore_index=2)
    out.backward()
    return out, x.grad


@sc
def nll_empty(m):
    return (
        F(m).nll_loss(m.zeros(0, 3), m.zeros(0, dtype=m.int64)),
        F(m).nll_loss(m.zeros(0, 3), m.zeros(0, dtype=m.int64), reduction="sum"),
        F(m).nll_loss(m.zeros(0, 3), m.zeros(0, dtype=m.int64), reduction="none"),
    )


@sc
def nll_oob(m):
    return F(m).nll_loss(t(m, L), m.tensor([0, 5, 1, 1]))


@sc
def nll_negative_target(m):
    return F(m).nll_loss(t(m, L), m.tensor([0, -1, 1, 1]))


@sc
def nll_batch_mismatch(m):
    F(m).nll_loss(t(m, L), m.tensor([0, 1, 1]))


@sc
def nll_float_target(m):
    F(m).nll_loss(t(m, L), m.tensor([0.0, 1, 1, 1]))


@sc
def nll_weight_wrong_size(m):
    F(m).nll_loss(t(m, L), m.tensor([0, 1, 1, 1]), weight=m.ones(3))


@slow
def nll_spatial(m):
    x = t(m, X4, True)
    y = m.tensor(rint(0, 3, (2, 4, 5)))
    out = F(m).nll_loss(x, y, reduction="none")
    out.sum().backward()
    return out, x.grad


@slow
def nll_3d_weights(m):
    x = t(m, X3, True)
    y = m.tensor(rint(0, 3, (2, 6)))
    out = F(m).nll_loss(x, y, weight=m.tensor([0.2, 1.0, 3.0]))
    out.backward()
    return out, x.grad


@slow
def nll_int_input(m):
    return F(m).nll_loss(m.ones(2, 3, dtype=m.int64), m.tensor([0, 1]))


@slow
def bce_out_of_range(m):
    return F(m).binary_cross_entropy(m.tensor([0.5, 1.5]), m.tensor([1.0, 0.0]))


@sc
def bce_size_mismatch(m):
    F(m).binary_cross_entropy(m.tensor([0.5, 0.5]), m.tensor([1.0, 0.0, 1.0]))


@slow
def bce_logits_pos_weight(m):
    x = t(m, L, True)
    out = F(m).binary_cross_entropy_with_logits(
        x, m.tensor((L > 0).astype(np.float32)), pos_weight=m.tensor([1.0, 2, 3, 0.5, 1])
    )
    out.backward()
    return out, x.grad


@slow
def mse_broadcast_warns(m):
    return F(m).mse_loss(t(m, L), m.ones(5))


@slow
def l1_broadcast_warns(m):
    return F(m).l1_loss(t(m, L), m.ones(1, 5))


@slow
def smooth_l1_beta0(m):
    x = t(m, L, True)
    out = F(m).smooth_l1_loss(x, m.zeros(4, 5), beta=0.0)
    out.backward()
    return out, x.grad


@slow
def huber_delta(m):
    x = t(m, L, True)
    out = F(m).huber_loss(x, m.zeros(4, 5), delta=0.5)
    out.backward()
    return out, x.grad


@slow
def kl_div_batchmean(m):
    x = t(m, np.log(np.full((4, 5), 0.2, np.float32)), True)
    out = F(m).kl_div(x, m.tensor(np.full((4, 5), 0.2, np.float32) + 0.01), reduction="batchmean")
    out.backward()
    return out, x.grad


@slow
def kl_div_mean_warns(m):
    return F(m).kl_div(t(m, L), m.tensor(np.abs(L)), reduction="mean")


@slow
def kl_div_log_target(m):
    return F(m).kl_div(t(m, L), t(m, L * 0.5), reduction="sum", log_target=True)


@slow
def legacy_reduction_args(m):
    return F(m).mse_loss(t(m, L), m.zeros(4, 5), size_average=False)


@sc
def invalid_reduction(m):
    F(m).mse_loss(t(m, L), m.zeros(4, 5), reduction="avg")


@slow
def margin_ranking(m):
    return F(m).margin_ranking_loss(t(m, L[0]), t(m, L[1]), m.tensor([1.0, -1, 1, -1, 1]), margin=0.3)


@slow
def cosine_embedding_loss(m):
    return F(m).cosine_embedding_loss(t(m, L[:2]), t(m, L[2:]), m.tensor([1, -1]), margin=0.2)


@slow
def triplet_margin(m):
    return F(m).triplet_margin_loss(t(m, L[:2]), t(m, L[1:3]), t(m, L[2:4]), swap=True)


@slow
def poisson_nll(m):
    return F(m).poisson_nll_loss(t(m, L), t(m, np.abs(L)), log_input=True, full=True)


@slow
def gaussian_nll_var_neg(m):
    return F(m).gaussian_nll_loss(t(m, L), t(m, L), m.full((4, 5), -1.0))


@slow
def gaussian_nll(m):
    x = t(m, L, True)
    out = F(m).gaussian_nll_loss(x, t(m, L * 0.5), m.full((4, 1), 0.7), full=True)
    out.backward()
    return out, x.grad


@slow
def multilabel_margin(m):
    return F(m).multilabel_margin_loss(
        t(m, L), m.tensor([[3, 0, -1, 1, 0], [1, 2, 3, -1, 0], [0, -1, 0, 0, 0], [4, 3, 2, 1, 0]])
    )


@slow
def ctc_basic(m):
    logits = t(m, rnd((6, 2, 4)).astype(np.float32), True)
    lp = logits.log_softmax(2)
    out = F(m).ctc_loss(lp, m.tensor([[1, 2], [3, 3]]), m.tensor([6, 5]), m.tensor([2, 2]))
    out.backward()
    return out, logits.grad


# ---------- embedding
W = rnd((6, 3)).astype(np.float32) * 2


@slow
def embedding_padding_idx_grad(m):
    e = m.nn.Embedding(6, 3, padding_idx=2)
    with m.no_grad():
        e.weight.copy_(m.tensor(W))
    out = e(m.tensor([[0, 2, 2, 5]]))
    out.sum().backward()
    return e.weight, e.weight.grad


@sc
def embedding_padding_idx_init_zero(m):
    m.manual_seed(0)
    e = m.nn.Embedding(6, 3, padding_idx=-2)
    return e.weight[4], e.padding_idx


@sc
def embedding_padding_idx_oob(m):
    m.nn.Embedding(6, 3, padding_idx=6)


@sc
def embedding_padding_idx_oob_neg(m):
    m.nn.Embedding(6, 3, padding_idx=-7)


@slow
def embedding_max_norm(m):
    w = t(m, W)
    out = F(m).embedding(m.tensor([0, 1, 1, 3]), w, max_norm=1.0)
    return out, w


@slow
def embedding_max_norm_type1(m):
    w = t(m, W)
    out = F(m).embedding(m.tensor([4, 5]), w, max_norm=1.5, norm_type=1.0)
    return out, w


@slow
def embedding_max_norm_module_grad(m):
    e = m.nn.Embedding(6, 3, max_norm=1.0)
    with m.no_grad():
        e.weight.copy_(m.tensor(W))
    out = e(m.tensor([0, 1, 1]))
    (out * m.tensor([1.0, 2, 3])).sum().backward()
    return out, e.weight, e.weight.grad


@slow
def embedding_from_pretrained(m):
    e = m.nn.Embedding.from_pretrained(t(m, W))
    return e(m.tensor([1, 2])), e.weight.requires_grad, e.padding_idx


@slow
def embedding_from_pretrained_unfrozen(m):
    e = m.nn.Embedding.from_pretrained(t(m, W), freeze=False, padding_idx=1)
    out = e(m.tensor([1, 2]))
    out.sum().backward()
    return e.weight.requires_grad, e.weight.grad


@sc
def embedding_from_pretrained_1d(m):
    m.nn.Embedding.from_pretrained(m.ones(3))


@sc
def embedding_index_oob(m):
    return F(m).embedding(m.tensor([0, 6]), t(m, W))


@sc
def embedding_float_index(m):
    F(m).embedding(m.tensor([0.0, 1.0]), t(m, W))


@slow
def embedding_bag_modes(m):
    w = t(m, W, True)
    outs = [
        F(m).embedding_bag(m.tensor([0, 1, 2, 4, 5, 3]), w, m.tensor([0, 2, 2, 5]), mode=mode)
        for mode in ("sum", "mean", "max")
    ]
    sum(o.sum() for o in outs).backward()
    return outs, w.grad


@slow
def embedding_bag_padding(m):
    w = t(m, W, True)
    out = F(m).embedding_bag(m.tensor([[0, 2, 2], [1, 2, 5]]), w, mode="mean", padding_idx=2)
    out.sum().backward()
    return out, w.grad


@slow
def embedding_bag_per_sample_weights(m):
    w = t(m, W, True)
    out = F(m).embedding_bag(
        m.tensor([0, 1, 2, 4]), w, m.tensor([0, 2]), mode="sum", per_sample_weights=m.tensor([0.5, 1.0, 2.0, -1.0])
    )
    out.sum().backward()
    return out, w.grad


@sc
def embedding_bag_psw_mean_error(m):
    F(m).embedding_bag(m.tensor([0, 1]), t(m, W), m.tensor([0]), mode="mean", per_sample_weights=m.tensor([0.5, 1.0]))


@sc
def one_hot(m):
    return F(m).one_hot(m.tensor([0, 2, 1])), F(m).one_hot(m.tensor([[0, 2]]), 4)


@sc
def one_hot_negative(m):
    F(m).one_hot(m.tensor([0, -1]))


@sc
def one_hot_too_small(m):
    return F(m).one_hot(m.tensor([0, 3]), 2)


# ---------- pad
for mode in ["constant", "reflect", "replicate", "circular"]:
    for pads in (
        [(1, 2), (2, 1, 1, 0), (0, 1, 2, 1)]
        if mode != "constant"
        else [(1, 2), (2, 1, 1, 0), (-1, 2, 0, 1), (1, 1, 1, 1, 1, 1)]
    ):

        def f(m, mode=mode, pads=pads):
            x = t(m, X4, True)
            out = F(m).pad(x, pads, mode=mode, **({"value": 1.5} if mode == "constant" else {}))
            (out * out).sum().backward()
            return out, x.grad

        _group(f"pad_{mode}_{'_'.join(map(str, pads))}", f)
for mode in ["reflect", "replicate", "circular"]:

    def f(m, mode=mode):
        x = t(m, X3, True)
        out = F(m).pad(x, (2, 3), mode=mode)
        (out * out).sum().backward()
        return out, x.grad

    _group(f"pad3d_input_{mode}", f)


@sc
def pad_reflect_too_big(m):
    F(m).pad(t(m, X3), (6, 1), mode="reflect")


@sc
def pad_odd_length(m):
    F(m).pad(t(m, X3), (1, 2, 3))


@sc
def pad_too_long(m):
    F(m).pad(t(m, X3), (1, 1, 1, 1, 1, 1, 1, 1))


@sc
def pad_bad_mode(m):
    F(m).pad(t(m, X3), (1, 1), mode="mirror")


@sc
def pad_reflect_wrong_dims(m):
    F(m).pad(t(m, L[0]), (1, 1, 1, 1), mode="reflect")


@sc
def pad_circular_too_big(m):
    F(m).pad(t(m, X3), (7, 0), mode="circular")


@sc
def pad_value_non_constant(m):
    F(m).pad(t(m, X3), (1, 1), mode="reflect", value=2.0)


@slow
def pad_modules(m):
    x = t(m, X4)
    return [
        m.nn.ZeroPad2d((1, 0, 2, 1))(x),
        m.nn.ConstantPad1d(2, 3.5)(t(m, X3)),
        m.nn.ReflectionPad2d(1)(x),
        m.nn.ReplicationPad2d((1, 2, 0, 1))(x),
        m.nn.CircularPad2d(1)(x),
        m.nn.ReflectionPad1d((2, 1))(t(m, X3)),
        m.nn.ZeroPad1d(1)(t(m, X3)),
    ]


@sc
def pad_module_repr(m):
    return [repr(m.nn.ZeroPad2d((1, 0, 2, 1))), repr(m.nn.ConstantPad1d(2, 3.5)), repr(m.nn.ReflectionPad2d(1))]


# ---------- interpolate
@sc
def interp_size_and_scale(m):
    F(m).interpolate(t(m, X4), size=(3, 3), scale_factor=2)


@sc
def interp_neither(m):
    F(m).interpolate(t(m, X4))


@sc
def interp_align_corners_nearest(m):
    F(m).interpolate(t(m, X4), scale_factor=2, mode="nearest", align_corners=True)


@sc
def interp_bad_mode(m):
    F(m).interpolate(t(m, X4), scale_factor=2, mode="linear")


@sc
def interp_size_len_mismatch(m):
    F(m).interpolate(t(m, X4), size=(3, 3, 3))


@sc
def interp_scale_len_mismatch(m):
    F(m).interpolate(t(m, X4), scale_factor=(2.0, 2.0, 2.0))


@sc
def interp_bad_mode_name(m):
    F(m).interpolate(t(m, X4), scale_factor=2, mode="cubic")


for mode in ["nearest", "nearest-exact", "bilinear", "bicubic", "area"]:
    for kw in [
        dict(scale_factor=2),
        dict(scale_factor=0.5),
        dict(size=(7, 3)),
        dict(scale_factor=(1.7, 0.6)),
        dict(scale_factor=1.3, recompute_scale_factor=True),
        dict(size=(3, 8)),
    ]:
        if mode in ("bilinear", "bicubic"):
            kws = [dict(kw, align_corners=False), dict(kw, align_corners=True)]
        else:
            kws = [kw]
        for k in kws:

            def f(m, mode=mode, k=k):
                x = t(m, X4, True)
                out = F(m).interpolate(x, mode=mode, **k)
                (out * out).sum().backward()
                return out, x.grad

            _group(f"interp_{mode}_{'_'.join(f'{a}{b}' for a, b in k.items())}", f)
for mode in ["bilinear", "bicubic"]:

    def f(m, mode=mode):
        x = t(m, X4, True)
        out = F(m).interpolate(x, size=(2, 3), mode=mode, antialias=True)
        (out * out).sum().backward()
        return out, x.grad

    _group(f"interp_antialias_{mode}", f)
for mode in ["nearest", "linear", "area", "nearest-exact"]:

    def f(m, mode=mode):
        x = t(m, X3, True)
        out = F(m).interpolate(x, scale_factor=1.5, mode=mode)
        (out * out).sum().backward()
        return out, x.grad

    _group(f"interp1d_{mode}", f)


@slow
def interp_trilinear(m):
    x = t(m, rnd((1, 2, 3, 4, 2)).astype(np.float32), True)
    out = F(m).interpolate(x, scale_factor=(2, 1.5, 2), mode="trilinear")
    out.sum().backward()
    return out, x.grad


@sc
def interp_align_corners_default_warns(m):
    return F(m).interpolate(t(m, X4), scale_factor=2, mode="bilinear")


@sc
def interp_int_input(m):
    return F(m).interpolate(m.tensor(X4 * 10).to(m.uint8), scale_factor=2, mode="nearest")


@sc
def interp_1d_for_2d_mode(m):
    F(m).interpolate(t(m, X3), scale_factor=2, mode="bilinear")


@slow
def upsample_modules(m):
    x = t(m, X4)
    return [
        m.nn.Upsample(scale_factor=2)(x),
        m.nn.Upsample(size=(5, 7), mode="bilinear")(x),
        m.nn.Upsample(scale_factor=1.5, mode="bicubic", align_corners=True)(x),
        m.nn.UpsamplingNearest2d(scale_factor=2)(x),
        m.nn.UpsamplingBilinear2d(size=(6, 6))(x),
    ]


@sc
def upsample_repr(m):
    return [
        repr(m.nn.Upsample(scale_factor=2)),
        repr(m.nn.Upsample(size=(5, 7), mode="bilinear")),
        repr(m.nn.UpsamplingNearest2d(scale_factor=2)),
        repr(m.nn.UpsamplingBilinear2d(size=(6, 6))),
    ]


@slow
def upsample_deprecated_fns(m):
    x = t(m, X4)
    return (
        F(m).upsample(x, scale_factor=2),
        F(m).upsample_nearest(x, scale_factor=2),
        F(m).upsample_bilinear(x, size=(6, 6)),
    )


@sc
def interp_zero_size(m):
    F(m).interpolate(t(m, X4), size=(0, 3))


@sc
def interp_scale_tiny(m):
    F(m).interpolate(t(m, X4), scale_factor=0.1)


# ---------- grid_sample / affine_grid
THETA = np.array([[[0.9, -0.2, 0.1], [0.3, 1.1, -0.2]], [[1.2, 0.1, 0.0], [-0.1, 0.8, 0.3]]], np.float32)
for ac in [False, True]:
    for size in [(2, 3, 4, 5), (2, 1, 3, 7)]:

        def f(m, ac=ac, size=size):
            th = t(m, THETA, True)
            g = F(m).affine_grid(th, size, align_corners=ac)
            (g * g).sum().backward()
            return g, th.grad

        _group(f"affine_grid_{ac}_{size[2]}x{size[3]}", f)


@sc
def affine_grid_bad_theta(m):
    F(m).affine_grid(m.ones(2, 3, 3), (2, 3, 4, 5), align_corners=False)


@sc
def affine_grid_size_mismatch(m):
    F(m).affine_grid(t(m, THETA), (3, 3, 4, 5), align_corners=False)


@slow
def affine_grid_3d(m):
    th = t(m, rnd((1, 3, 4)).astype(np.float32), True)
    g = F(m).affine_grid(th, (1, 1, 2, 3, 4), align_corners=False)
    g.sum().backward()
    return g, th.grad


GRID = (R.uniform(-1.3, 1.3, (2, 3, 4, 2))).astype(np.float32)
for mode in ["bilinear", "nearest", "bicubic"]:
    for pm in ["zeros", "border", "reflection"]:
        for ac in [False, True]:

            def f(m, mode=mode, pm=pm, ac=ac):
                x = t(m, X4, True)
                g = t(m, GRID, True)
                out = F(m).grid_sample(x, g, mode=mode, padding_mode=pm, align_corners=ac)
                (out * out).sum().backward()
                return out, x.grad, (g.grad if mode != "nearest" else None)

            _group(f"grid_sample_{mode}_{pm}_{ac}", f)


@sc
def grid_sample_bad_mode(m):
    F(m).grid_sample(t(m, X4), t(m, GRID), mode="linear", align_corners=False)


@sc
def grid_sample_bad_padding(m):
    F(m).grid_sample(t(m, X4), t(m, GRID), padding_mode="mirror", align_corners=False)


@sc
def grid_sample_batch_mismatch(m):
    F(m).grid_sample(t(m, X4), t(m, GRID[:1]), align_corners=False)


@sc
def grid_sample_bad_grid_last(m):
    F(m).grid_sample(t(m, X4), m.ones(2, 3, 4, 3), align_corners=False)


# ---------- pixel shuffle
@slow
def pixel_shuffle(m):
    x = t(m, rnd((2, 8, 3, 2)).astype(np.float32), True)
    out = F(m).pixel_shuffle(x, 2)
    (out * out).sum().backward()
    return out, x.grad


@slow
def pixel_unshuffle(m):
    x = t(m, rnd((2, 2, 4, 6)).astype(np.float32), True)
    out = F(m).pixel_unshuffle(x, 2)
    (out * out).sum().backward()
    return out, x.grad


@sc
def pixel_shuffle_5d(m):
    return F(m).pixel_shuffle(t(m, rnd((2, 1, 9, 2, 2)).astype(np.float32)), 3)


@sc
def pixel_shuffle_bad_channels(m):
    F(m).pixel_shuffle(t(m, X4), 2)


@sc
def pixel_unshuffle_bad_width(m):
    F(m).pixel_unshuffle(t(m, X4), 2)


@sc
def pixel_shuffle_low_dim(m):
    F(m).pixel_shuffle(t(m, L), 2)


@slow
def pixel_shuffle_modules(m):
    return (
        repr(m.nn.PixelShuffle(3)),
        repr(m.nn.PixelUnshuffle(2)),
        m.nn.PixelShuffle(2)(t(m, rnd((1, 4, 2, 2)).astype(np.float32))),
    )


# ---------- cosine similarity / distances
@slow
def cosine_similarity_basic(m):
    a = t(m, L, True)
    b = t(m, L[::-1].copy(), True)
    out = F(m).cosine_similarity(a, b)
    out.sum().backward()
    return out, a.grad, b.grad


@slow
def cosine_similarity_broadcast(m):
    a = t(m, L, True)
    b = t(m, L[:1], True)
    out = F(m).cosine_similarity(a, b, dim=1)
    out.sum().backward()
    return out, a.grad, b.grad


@slow
def cosine_similarity_zero_vector(m):
    a = m.zeros(2, 3, requires_grad=True)
    b = t(m, L[:2, :3], True)
    out = F(m).cosine_similarity(a, b)
    out.sum().backward()
    return out, a.grad, b.grad


@slow
def cosine_similarity_eps(m):
    return F(m).cosine_similarity(t(m, L * 1e-5), t(m, L * 1e-5), eps=1e-3)


@slow
def cosine_similarity_dim0(m):
    return F(m).cosine_similarity(t(m, L), t(m, L + 1), dim=0)


@slow
def cosine_similarity_large(m):
    return F(m).cosine_similarity(t(m, L * 1e20), t(m, L * 1e20))


@sc
def cosine_similarity_shape_mismatch(m):
    F(m).cosine_similarity(t(m, L), t(m, L[:, :3]))


@slow
def cosine_similarity_module(m):
    return m.nn.CosineSimilarity(dim=0, eps=1e-6)(t(m, L), t(m, L * 2 + 1)), repr(m.nn.CosineSimilarity(dim=0))


@slow
def cosine_similarity_0d_dim(m):
    return F(m).cosine_similarity(t(m, L[0]), t(m, L[1]), dim=0)


@sc
def cosine_similarity_int(m):
    return F(m).cosine_similarity(m.tensor([[1, 2]]), m.tensor([[3, 4]]))


@slow
def pairwise_distance(m):
    a = t(m, L, True)
    out = F(m).pairwise_distance(a, t(m, L[:1] * 0.5), p=1.5, eps=1e-6, keepdim=True)
    out.sum().backward()
    return out, a.grad


@slow
def pairwise_distance_same(m):
    a = t(m, L, True)
    out = F(m).pairwise_distance(a, t(m, L))
    out.sum().backward()
    return out, a.grad


@slow
def pdist(m):
    a = t(m, L, True)
    out = F(m).pdist(a)
    out.sum().backward()
    return out, a.grad


@slow
def cdist(m):
    return m.cdist(t(m, L), t(m, L[:2] + 0.5), p=1), m.cdist(t(m, L), t(m, L[:2] + 0.5))


@slow
def normalize(m):
    a = t(m, L, True)
    out = F(m).normalize(a, p=2, dim=0)
    out.sum().backward()
    return out, a.grad, F(m).normalize(m.zeros(2, 3))


# ---------- clip grad
def _grads(m, scale=1.0):
    ps = [m.nn.Parameter(m.tensor(L)), m.nn.Parameter(m.tensor(W))]
    ps[0].grad = m.tensor(L * scale)
    ps[1].grad = m.tensor(W * scale * 0.5)
    return ps


for nt in [2, 1, "inf", 0.5, 3]:
    for fe in [None, True, False]:

        def f(m, nt=nt, fe=fe):
            ps = _grads(m)
            n = m.nn.utils.clip_grad_norm_(ps, 1.5, norm_type=float(nt) if nt != "inf" else math.inf, foreach=fe)
            return n, [p.grad for p in ps]

        _group(f"clip_grad_norm_{nt}_{fe}", f)


@slow
def clip_grad_norm_nonfinite_error(m):
    ps = _grads(m)
    ps[0].grad[0, 0] = float("nan")
    m.nn.utils.clip_grad_norm_(ps, 1.0, error_if_nonfinite=True)


@slow
def clip_grad_norm_inf_error(m):
    ps = _grads(m)
    ps[1].grad[0, 0] = float("inf")
    m.nn.utils.clip_grad_norm_(ps, 1.0, norm_type=2.0, error_if_nonfinite=True)


@slow
def clip_grad_norm_nonfinite_no_error(m):
    ps = _grads(m)
    ps[0].grad[0, 0] = float("inf")
    n = m.nn.utils.clip_grad_norm_(ps, 1.0)
    return n, [p.grad for p in ps]


@sc
def clip_grad_norm_no_grads(m):
    ps = [m.nn.Parameter(m.ones(2))]
    return m.nn.utils.clip_grad_norm_(ps, 1.0)


@slow
def clip_grad_norm_single_tensor(m):
    p = _grads(m)[0]
    n = m.nn.utils.clip_grad_norm_(p, 0.5)
    return n, p.grad


@slow
def clip_grad_norm_generator(m):
    ps = _grads(m)
    n = m.nn.utils.clip_grad_norm_((p for p in ps), 0.5)
    return n, [p.grad for p in ps]


@sc
def clip_grad_norm_small_no_change(m):
    ps = _grads(m, 0.01)
    n = m.nn.utils.clip_grad_norm_(ps, 100.0)
    return n, [p.grad for p in ps]


@sc
def clip_grad_norm_max_norm_tensor(m):
    ps = _grads(m)
    n = m.nn.utils.clip_grad_norm_(ps, m.tensor(1.0))
    return n, [p.grad for p in ps]


@sc
def clip_grad_norm_deprecated(m):
    ps = _grads(m)
    return m.nn.utils.clip_grad_norm(ps, 1.0)


@sc
def clip_grad_value(m):
    ps = _grads(m)
    r = m.nn.utils.clip_grad_value_(ps, 0.7)
    return r, [p.grad for p in ps]


@sc
def clip_grad_value_foreach(m):
    ps = _grads(m)
    m.nn.utils.clip_grad_value_(ps, 0.3, foreach=True)
    return [p.grad for p in ps]


@sc
def clip_grad_value_no_grad(m):
    ps = [m.nn.Parameter(m.ones(2))]
    m.nn.utils.clip_grad_value_(ps, 0.3)
    return ps[0].grad


@slow
def get_total_norm(m):
    return m.nn.utils.get_total_norm([m.tensor(L), m.tensor(W)], norm_type=3.0), m.nn.utils.get_total_norm(
        [m.tensor(L)], error_if_nonfinite=False
    )


@sc
def clip_grads_with_norm(m):
    ps = _grads(m)
    m.nn.utils.clip_grads_with_norm_(ps, 1.0, m.tensor(5.0))
    return [p.grad for p in ps]


@sc
def params_to_vector(m):
    lin = m.nn.Linear(3, 2)
    conv = m.nn.Conv2d(2, 1, 2)
    with m.no_grad():
        for i, p in enumerate(list(lin.parameters()) + list(conv.parameters())):
            p.copy_(m.arange(p.numel(), dtype=m.float32).reshape(p.shape) * (i + 1))
    v = m.nn.utils.parameters_to_vector(list(lin.parameters()) + list(conv.parameters()))
    m.nn.utils.vector_to_parameters(v * 2, list(lin.parameters()) + list(conv.parameters()))
    return v, lin.weight, conv.bias


@sc
def vector_to_parameters_not_tensor(m):
    m.nn.utils.vector_to_parameters([1.0, 2.0], [m.nn.Parameter(m.ones(2))])


@sc
def vector_to_params_short(m):
    m.nn.utils.vector_to_parameters(m.ones(3), [m.nn.Parameter(m.ones(2, 2))])


# ---------- Module API
@sc
def register_buffer_errors(m):
    out = []
    mod = m.nn.Module()
    for args in [(3, m.ones(1)), ("a.b", m.ones(1)), ("", m.ones(1)), ("x", 3)]:
        try:
            mod.register_buffer(*args)
            out.append("ok")
        except Exception as e:
            out.append((type(e).__name__, str(e)))
    mod.attr = 5
    try:
        mod.register_buffer("attr", m.ones(1))
        out.append("ok")
    except Exception as e:
        out.append((type(e).__name__, str(e)))
    mod.register_buffer("buf", None)
    out.append((mod.buf, list(dict(mod.named_buffers()))))
    return out


@sc
def register_buffer_before_init(m):
    class M(m.nn.Module):
        def __init__(self):
            self.register_buffer("x", m.ones(1))

    M()


@sc
def register_parameter_errors(m):
    out = []
    mod = m.nn.Module()
    for args in [
        (3, m.nn.Parameter(m.ones(1))),
        ("a.b", m.nn.Parameter(m.ones(1))),
        ("", m.nn.Parameter(m.ones(1))),
        ("x", m.ones(1)),
        ("y", None),
    ]:
        try:
            mod.register_parameter(*args)
            out.append("ok")
        except Exception as e:
            out.append((type(e).__name__, str(e)))
    mod.attr = 5
    try:
        mod.register_parameter("attr", m.nn.Parameter(m.ones(1)))
        out.append("ok")
    except Exception as e:
        out.append((type(e).__name__, str(e)))
    return out, list(dict(mod.named_parameters()))


@sc
def register_parameter_nonleaf(m):
    mod = m.nn.Module()
    p = m.nn.Parameter(m.ones(2))
    mod.register_parameter("w", p * 2)


@sc
def register_param_nonleaf_param(m):
    mod = m.nn.Module()
    base = m.nn.Parameter(m.ones(2))
    q = m.nn.Parameter(base * 2)
    mod.register_parameter("w", q)
    return True


@sc
def add_module_errors(m):
    out = []
    mod = m.nn.Module()
    for args in [("a.b", m.nn.Linear(1, 1)), ("", m.nn.Linear(1, 1)), ("x", 3), (5, m.nn.Linear(1, 1))]:
        try:
            mod.add_module(*args)
            out.append("ok")
        except Exception as e:
            out.append((type(e).__name__, str(e)))
    mod.attr = 5
    try:
        mod.add_module("attr", m.nn.Linear(1, 1))
        out.append("ok")
    except Exception as e:
        out.append((type(e).__name__, str(e)))
    return out


@sc
def setattr_tensor_on_param(m):
    lin = m.nn.Linear(2, 2)
    lin.weight = m.ones(2, 2)


@sc
def setattr_module_on_param_name(m):
    lin = m.nn.Linear(2, 2)
    lin.weight = m.nn.Linear(1, 1)


@sc
def setattr_param_on_buffer(m):
    bn = m.nn.BatchNorm1d(2)
    bn.running_mean = m.nn.Parameter(m.ones(2))
    return sorted(dict(bn.named_parameters())), sorted(dict(bn.named_buffers()))


@sc
def setattr_tensor_on_buffer(m):
    bn = m.nn.BatchNorm1d(2)
    bn.running_mean = m.ones(2) * 3
    return bn.running_mean, sorted(dict(bn.named_buffers()))


@sc
def setattr_non_tensor_on_buffer(m):
    bn = m.nn.BatchNorm1d(2)
    bn.running_mean = 3


@sc
def setattr_none_on_param(m):
    lin = m.nn.Linear(2, 2)
    lin.bias = None
    return lin.bias, sorted(dict(lin.named_parameters()))


@sc
def setattr_param_before_init(m):
    class M(m.nn.Module):
        def __init__(self):
            self.w = m.nn.Parameter(m.ones(1))

    M()


@sc
def setattr_module_before_init(m):
    class M(m.nn.Module):
        def __init__(self):
            self.l = m.nn.Linear(1, 1)

    M()


@sc
def delattr_param(m):
    lin = m.nn.Linear(2, 2)
    del lin.bias
    return sorted(dict(lin.named_parameters())), hasattr(lin, "bias")


@sc
def getattr_missing(m):
    return m.nn.Linear(2, 2).nothing


@sc
def named_modules_duplicates(m):
    l = m.nn.Linear(2, 2)
    s = m.nn.Sequential(l, l, m.nn.ReLU())
    return (
        [n for n, _ in s.named_modules()],
        [n for n, _ in s.named_modules(remove_duplicate=False)],
        [n for n, _ in s.named_modules(prefix="p")],
        len(list(s.modules())),
    )


@sc
def named_parameters_duplicates(m):
    l = m.nn.Linear(2, 2)
    s = m.nn.Sequential(l, l)
    return (
        [n for n, _ in s.named_parameters()],
        [n for n, _ in s.named_parameters(remove_duplicate=False)],
        [n for n, _ in s.named_parameters(prefix="x", recurse=False)],
    )


@sc
def shared_param_two_names(m):
    a = m.nn.Linear(2, 2)
    b = m.nn.Linear(2, 2)
    b.weight = a.weight
    s = m.nn.Sequential(a, b)
    return [n for n, _ in s.named_parameters()], sorted(s.state_dict())


@sc
def named_children_buffers(m):
    s = m.nn.Sequential(m.nn.BatchNorm1d(2), m.nn.Sequential(m.nn.Linear(2, 2), m.nn.BatchNorm1d(2)))
    return (
        [n for n, _ in s.named_children()],
        [n for n, _ in s.named_buffers()],
        [n for n, _ in s.named_buffers(recurse=False)],
    )


@sc
def get_submodule_param(m):
    s = m.nn.Sequential(m.nn.Linear(2, 2), m.nn.Sequential(m.nn.Linear(2, 3)))
    return type(s.get_submodule("1.0")).__name__, s.get_parameter("1.0.bias").shape, s.get_submodule("") is s


@sc
def get_submodule_missing(m):
    m.nn.Sequential(m.nn.Linear(2, 2)).get_submodule("0.foo")


@sc
def get_parameter_not_param(m):
    m.nn.Sequential(m.nn.BatchNorm1d(2)).get_parameter("0.running_mean")


@sc
def get_buffer_missing(m):
    m.nn.Sequential(m.nn.BatchNorm1d(2)).get_buffer("0.weight")


@sc
def apply_fn(m):
    seen = []
    s = m.nn.Sequential(m.nn.Linear(2, 2), m.nn.Sequential(m.nn.ReLU(), m.nn.Linear(2, 1)))
    r = s.apply(lambda mod: seen.append(type(mod).__name__))
    return seen, r is s


@sc
def zero_grad_modes(m):
    lin = m.nn.Linear(2, 2)
    lin(m.ones(1, 2)).sum().backward()
    lin.zero_grad(set_to_none=False)
    a = (lin.weight.grad, lin.bias.grad)
    lin.zero_grad()
    return a, lin.weight.grad, lin.bias.grad


@sc
def requires_grad_module(m):
    s = m.nn.Sequential(m.nn.Linear(2, 2), m.nn.BatchNorm1d(2))
    r = s.requires_grad_(False)
    return [p.requires_grad for p in s.parameters()], r is s, [p.requires_grad for p in s.requires_grad_().parameters()]


@sc
def module_to_dtype(m):
    s = m.nn.Sequential(m.nn.Linear(2, 2), m.nn.BatchNorm1d(2))
    r = s.to(m.float64)
    return (
        r is s,
        [p.dtype for p in s.parameters()],
        [b.dtype for b in s.buffers()],
        s.double() is s,
        [p.dtype for p in s.half().parameters()],
        [b.dtype for b in s.buffers()],
    )


@sc
def module_to_int_dtype(m):
    m.nn.Linear(2, 2).to(m.int64)


@sc
def module_to_bad_args(m):
    m.nn.Linear(2, 2).to("float")


@sc
def module_train_eval(m):
    s = m.nn.Sequential(m.nn.Dropout(), m.nn.Sequential(m.nn.BatchNorm1d(2)))
    s.eval()
    a = [c.training for c in s.modules()]
    s.train()
    b = [c.training for c in s.modules()]
    s.train(False)
    c = [x.training for x in s.modules()]
    return a, b, c


@sc
def module_train_bad(m):
    m.nn.Linear(1, 1).train("yes")


@sc
def state_dict_hooks(m):
    calls = []
    lin = m.nn.Linear(2, 2)

    def post(module, sd, prefix, local_metadata):
        calls.append(("post", prefix))
        sd[prefix + "extra"] = m.ones(1)

    h = lin._register_state_dict_hook(post)
    sd = lin.state_dict(prefix="p.")
    h.remove()
    sd2 = lin.state_dict()
    return calls, sorted(sd), sorted(sd2)


@sc
def state_dict_pre_hook(m):
    calls = []
    lin = m.nn.Linear(2, 2)
    lin.register_state_dict_pre_hook(lambda mod, prefix, keep_vars: calls.append((prefix, keep_vars)))
    s = m.nn.Sequential(lin)
    s.state_dict()
    s.state_dict(keep_vars=True)
    return calls


@sc
def load_state_dict_pre_post_hooks(m):
    calls = []
    lin = m.nn.Linear(2, 2)
    lin.register_load_state_dict_pre_hook(
        lambda mod, sd, prefix, lm, strict, mk, uk, err: calls.append(("pre", prefix, sorted(sd)))
    )
    lin.register_load_state_dict_post_hook(
        lambda mod, keys: calls.append(("post", sorted(keys.missing_keys), sorted(keys.unexpected_keys)))
    )
    r = lin.load_state_dict({"weight": m.ones(2, 2), "bias": m.zeros(2)})
    return calls, lin.weight, list(r.missing_keys), list(r.unexpected_keys)


@sc
def load_state_dict_strict_errors(m):
    lin = m.nn.Linear(2, 2)
    lin.load_state_dict({"weight": m.ones(2, 2), "extra": m.ones(1)})


@sc
def load_state_dict_shape_error(m):
    lin = m.nn.Linear(2, 2)
    lin.load_state_dict({"weight": m.ones(3, 2), "bias": m.ones(2)})


@sc
def load_state_dict_non_strict(m):
    lin = m.nn.Linear(2, 2)
    r = lin.load_state_dict({"weight": m.ones(2, 2), "extra": m.ones(1)}, strict=False)
    return sorted(r.missing_keys), sorted(r.unexpected_keys), repr(r)


@sc
def load_state_dict_not_mapping(m):
    m.nn.Linear(2, 2).load_state_dict([1, 2])


@sc
def state_dict_keep_vars(m):
    lin = m.nn.Linear(2, 2)
    sd = lin.state_dict()
    sdk = lin.state_dict(keep_vars=True)
    return (
        sd["weight"].requires_grad,
        sdk["weight"].requires_grad,
        type(sdk["weight"]).__name__,
        sdk["weight"] is lin.weight,
    )


@sc
def state_dict_non_persistent(m):
    mod = m.nn.Module()
    mod.register_buffer("a", m.ones(1))
    mod.register_buffer("b", m.ones(1), persistent=False)
    return sorted(mod.state_dict()), [n for n, _ in mod.named_buffers()]


@sc
def extra_repr_and_repr(m):
    return repr(
        m.nn.Sequential(m.nn.Linear(2, 3, bias=False), m.nn.ReLU(inplace=True), m.nn.Sequential(m.nn.Dropout(0.2)))
    )


@sc
def module_dir_has_params(m):
    lin = m.nn.Linear(2, 2)
    d = dir(lin)
    return "weight" in d, "bias" in d, "forward" in d


@sc
def forward_hooks(m):
    lin = m.nn.Linear(2, 2)
    with m.no_grad():
        lin.weight.fill_(0.5)
        lin.bias.fill_(0.1)
    h1 = lin.register_forward_pre_hook(lambda mod, inp: (inp[0] * 2,))
    h2 = lin.register_forward_hook(lambda mod, inp, out: out + 1)
    a = lin(m.ones(1, 2))
    h1.remove()
    h2.remove()
    b = lin(m.ones(1, 2))
    return a, b


@sc
def forward_hook_with_kwargs(m):
    lin = m.nn.Linear(2, 2)
    with m.no_grad():
        lin.weight.fill_(0.5)
        lin.bias.fill_(0.1)
    lin.register_forward_pre_hook(lambda mod, args, kwargs: ((args[0] * 3,), kwargs), with_kwargs=True)
    lin.register_forward_hook(lambda mod, args, kwargs, out: out * 2, with_kwargs=True)
    return lin(m.ones(1, 2))


@sc
def forward_hook_prepend(m):
    order = []
    lin = m.nn.Linear(2, 2)
    lin.register_forward_hook(lambda *a: order.append(1))
    lin.register_forward_hook(lambda *a: order.append(2), prepend=True)
    lin(m.ones(1, 2))
    return order


@sc
def forward_hook_always_call(m):
    order = []

    class Bad(m.nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    b = Bad()
    b.register_forward_hook(lambda *a: order.append("always"), always_call=True)
    try:
        b(m.ones(1))
    except ValueError as e:
        order.append(str(e))
    return order


@sc
def register_module_alias(m):
    mod = m.nn.Module()
    mod.register_module("child", m.nn.ReLU())
    return [n for n, _ in mod.named_children()]


@sc
def module_half_float_buffers(m):
    bn = m.nn.BatchNorm1d(2)
    bn.half()
    return bn.num_batches_tracked.dtype, bn.running_mean.dtype


@sc
def parameters_recurse_false(m):
    s = m.nn.Sequential(m.nn.Linear(2, 2))
    s.register_parameter("own", m.nn.Parameter(m.ones(1)))
    return [p.shape for p in s.parameters(recurse=False)], len(list(s.parameters()))


# ---------- containers
@sc
def sequential_ops(m):
    s = m.nn.Sequential(m.nn.Linear(2, 3), m.nn.ReLU(), m.nn.Linear(3, 1), m.nn.Sigmoid())
    out = [
        type(s[0]).__name__,
        type(s[-1]).__name__,
        type(s[1:3]).__name__,
        [type(x).__name__ for x in s[1:3]],
        [type(x).__name__ for x in s[::-2]],
        len(s),
    ]
    s.append(m.nn.Tanh())
    out.append(len(s))
    s.insert(1, m.nn.Dropout())
    out.append([type(x).__name__ for x in s])
    s.insert(-1, m.nn.ELU())
    out.append([type(x).__name__ for x in s])
    p = s.pop(2)
    out.append(type(p).__name__)
    s.extend([m.nn.GELU(), m.nn.SiLU()])
    out.append([type(x).__name__ for x in s])
    del s[0]
    out.append(list(s._modules))
    del s[1:3]
    out.append(list(s._modules))
    s[0] = m.nn.Identity()
    out.append([type(x).__name__ for x in s])
    return out


@sc
def sequential_index_error(m):
    m.nn.Sequential(m.nn.ReLU())[3]


@sc
def sequential_neg_index_error(m):
    m.nn.Sequential(m.nn.ReLU())[-2]


@sc
def sequential_insert_bad(m):
    m.nn.Sequential(m.nn.ReLU()).insert(5, m.nn.ReLU())


@sc
def sequential_insert_not_module(m):
    m.nn.Sequential(m.nn.ReLU()).insert(0, 3)


@sc
def sequential_append_not_module(m):
    return m.nn.Sequential(m.nn.ReLU()).append(3)


@sc
def sequential_add_mul(m):
    a = m.nn.Sequential(m.nn.ReLU(), m.nn.Tanh())
    b = m.nn.Sequential(m.nn.Sigmoid())
    c = a + b
    d = b * 3
    a += b
    e = m.nn.Sequential(m.nn.ReLU())
    e *= 2
    return [type(x).__name__ for x in c], list(d._modules), list(a._modules), list(e._modules)


@sc
def sequential_add_bad(m):
    m.nn.Sequential(m.nn.ReLU()) + [m.nn.ReLU()]


@sc
def sequential_mul_bad(m):
    m.nn.Sequential(m.nn.ReLU()) * 0


@sc
def sequential_ordered_dict(m):
    from collections import OrderedDict

    s = m.nn.Sequential(OrderedDict([("a", m.nn.ReLU()), ("b", m.nn.Tanh())]))
    return list(s._modules), type(s.a).__name__, type(s[1]).__name__, type(s[0:1]).__name__, list(s[0:1]._modules)


@sc
def sequential_forward(m):
    s = m.nn.Sequential(m.nn.Linear(2, 3), m.nn.ReLU())
    with m.no_grad():
        s[0].weight.copy_(m.tensor([[1.0, -1], [0.5, 0.5], [-2, 1]]))
        s[0].bias.fill_(0.1)
    return s(m.tensor([[1.0, 2.0]])), m.nn.Sequential()(m.ones(2))


@sc
def modulelist_ops(m):
    ml = m.nn.ModuleList([m.nn.ReLU(), m.nn.Tanh()])
    out = [len(ml)]
    ml.append(m.nn.Sigmoid())
    ml.extend([m.nn.ELU(), m.nn.GELU()])
    ml.insert(1, m.nn.SiLU())
    out.append([type(x).__name__ for x in ml])
    out.append(type(ml[1:3]).__name__)
    out.append([type(x).__name__ for x in ml[-2:]])
    del ml[0]
    out.append(list(ml._modules))
    out.append(type(ml.pop(1)).__name__)
    out.append(list(ml._modules))
    ml[0] = m.nn.Identity()
    out.append(type(ml[0]).__name__)
    ml += [m.nn.ReLU()]
    out.append(len(ml))
    out.append(type(ml + m.nn.ModuleList([m.nn.Tanh()])).__name__)
    out.append(ml.index(ml[1]) if hasattr(ml, "index") else None)
    del ml[::2]
    out.append(list(ml._modules))
    return out


@sc
def modulelist_extend_bad(m):
    m.nn.ModuleList().extend(m.nn.ReLU())


@sc
def modulelist_index_error(m):
    m.nn.ModuleList([m.nn.ReLU()])[2]


@sc
def modulelist_add_bad(m):
    m.nn.ModuleList([m.nn.ReLU()]) + 3


@sc
def modulelist_repr_dedup(m):
    return repr(m.nn.ModuleList([m.nn.Linear(2, 2) for _ in range(4)] + [m.nn.ReLU()]))


@sc
def moduledict_ops(m):
    md = m.nn.ModuleDict({"a": m.nn.ReLU(), "b": m.nn.Tanh()})
    out = [list(md.keys()), len(md), "a" in md]
    md["c"] = m.nn.Sigmoid()
    md.update({"d": m.nn.ELU()})
    md.update([("e", m.nn.GELU())])
    out.append(list(md))
    out.append(type(md.pop("b")).__name__)
    out.append(list(md.keys()))
    del md["a"]
    out.append([(k, type(v).__name__) for k, v in md.items()])
    out.append([type(v).__name__ for v in md.values()])
    md.clear()
    out.append(len(md))
    return out


@sc
def moduledict_missing(m):
    m.nn.ModuleDict()["x"]


@sc
def moduledict_update_bad(m):
    m.nn.ModuleDict().update(3)


@sc
def moduledict_update_bad_seq(m):
    m.nn.ModuleDict().update([("a", m.nn.ReLU(), 1)])


@sc
def moduledict_bad_key(m):
    md = m.nn.ModuleDict()
    md[3] = m.nn.ReLU()


@sc
def parameterlist_ops(m):
    pl = m.nn.ParameterList([m.nn.Parameter(m.ones(2)), m.nn.Parameter(m.zeros(3))])
    pl.append(m.nn.Parameter(m.ones(1)))
    pl.extend([m.nn.Parameter(m.ones(4))])
    pl.append(m.ones(5))
    out = [
        len(pl),
        [p.shape for p in pl],
        [type(p).__name__ for p in pl],
        [n for n, _ in pl.named_parameters()],
        type(pl[1:3]).__name__,
    ]
    pl[0] = m.nn.Parameter(m.full((2,), 3.0))
    out.append(pl[0])
    pl += [m.nn.Parameter(m.ones(6))]
    out.append(len(pl))
    pl.append("hello")
    out.append((len(pl), pl[-1]))
    return out


@sc
def parameterlist_repr(m):
    return repr(m.nn.ParameterList([m.nn.Parameter(m.ones(2)), m.nn.Parameter(m.zeros(3, 2))]))


@sc
def parameterdict_ops(m):
    pd = m.nn.ParameterDict({"a": m.nn.Parameter(m.ones(2)), "b": m.nn.Parameter(m.zeros(3))})
    pd["c"] = m.nn.Parameter(m.ones(1))
    pd.update({"d": m.nn.Parameter(m.ones(4))})
    pd["e"] = m.ones(2)
    out = [
        list(pd.keys()),
        [p.shape for p in pd.values()],
        [n for n, _ in pd.named_parameters()],
        type(pd["e"]).__name__,
        "a" in pd,
        len(pd),
    ]
    out.append(pd.pop("b").shape)
    out.append(list(pd))
    out.append(pd.get("zz", 7))
    out.append(pd.setdefault("f", m.nn.Parameter(m.ones(1))).shape)
    del pd["a"]
    out.append(list(pd))
    c = pd.copy()
    out.append((type(c).__name__, list(c)))
    out.append(sorted(pd.fromkeys(["x", "y"], m.nn.Parameter(m.ones(1))).keys()))
    k, v = pd.popitem()
    out.append(k)
    pd.clear()
    out.append(len(pd))
    return out


@sc
def parameterdict_or(m):
    a = m.nn.ParameterDict({"a": m.nn.Parameter(m.ones(1))})
    b = m.nn.ParameterDict({"b": m.nn.Parameter(m.ones(2))})
    return list(a | b), list(b | a), type(a | b).__name__


@sc
def parameterdict_missing(m):
    m.nn.ParameterDict()["x"]


@sc
def parameterdict_repr(m):
    return repr(m.nn.ParameterDict({"a": m.nn.Parameter(m.ones(2)), "b": m.nn.Parameter(m.zeros(3, 2))}))


@sc
def parameter_repr(m):
    return repr(m.nn.Parameter(m.tensor([1.0, 2.0]))), repr(m.nn.Parameter(m.ones(2), requires_grad=False))


@sc
def parameter_int_requires_grad(m):
    m.nn.Parameter(m.ones(2, dtype=m.int64))


@sc
def parameter_int_no_grad(m):
    p = m.nn.Parameter(m.ones(2, dtype=m.int64), requires_grad=False)
    return p.dtype, p.requires_grad


@sc
def parameter_ops_give_tensors(m):
    p = m.nn.Parameter(m.ones(2))
    return type(p * 2).__name__, type(p.detach()).__name__, type(p.data).__name__, isinstance(p, m.Tensor), p.is_leaf


@sc
def buffer_class(m):
    class M(m.nn.Module):
        def __init__(self):
            super().__init__()
            self.b = m.nn.Buffer(m.ones(2))
            self.c = m.nn.Buffer(m.zeros(1), persistent=False)

    mod = M()
    return [n for n, _ in mod.named_buffers()], sorted(mod.state_dict()), type(mod.b).__name__


# ---------- misc functional
@sc
def dropout_bad_p(m):
    F(m).dropout(m.ones(2), p=1.5)


@sc
def dropout_eval_identity(m):
    return F(m).dropout(t(m, L), p=0.5, training=False), m.nn.Dropout(0.3).eval()(t(m, L))


@sc
def dropout_p1(m):
    return F(m).dropout(t(m, L), p=1.0), F(m).dropout(t(m, L), p=0.0)


@slow
def softmax_no_dim_warns(m):
    return F(m).softmax(t(m, L)), F(m).log_softmax(t(m, X3))


@slow
def softmin_dtype(m):
    return F(m).softmin(t(m, L), dim=1, dtype=m.float64)


@slow
def gumbel_softmax_hard_shape(m):
    m.manual_seed(0)
    g = F(m).gumbel_softmax(t(m, L), tau=0.5, hard=True)
    return g.sum(1), g.shape, ((g == 0) | (g == 1)).all()


@sc
def threshold(m):
    return F(m).threshold(t(m, L), 0.1, 20.0), m.nn.Threshold(0.5, -1.0)(t(m, L))


@sc
def glu_bad(m):
    F(m).glu(t(m, rnd((2, 3)).astype(np.float32)))


@slow
def glu(m):
    return F(m).glu(t(m, L), dim=0)


@sc
def hardtanh_bad(m):
    F(m).hardtanh(t(m, L), min_val=1.0, max_val=0.0)


@sc
def linear_shape_error(m):
    F(m).linear(t(m, L), m.ones(3, 4))


@slow
def bilinear(m):
    b = m.nn.Bilinear(2, 3, 4)
    with m.no_grad():
        b.weight.copy_(m.arange(24, dtype=m.float32).reshape(4, 2, 3) / 10)
        b.bias.fill_(0.5)
    return b(t(m, L[:2, :2]), t(m, L[:2, 2:5]))


@sc
def conv_padding_same_stride(m):
    F(m).conv2d(t(m, X4), m.ones(2, 3, 3, 3), padding="same", stride=2)


@slow
def conv_padding_same_even(m):
    x = t(m, X4, True)
    w = t(m, rnd((2, 3, 2, 4)).astype(np.float32), True)
    out = F(m).conv2d(x, w, padding="same", dilation=(1, 2))
    out.sum().backward()
    return out, x.grad, w.grad


@slow
def conv_padding_valid(m):
    return F(m).conv1d(t(m, X3), t(m, rnd((4, 3, 3)).astype(np.float32)), padding="valid")


@sc
def conv_weight_wrong_channels(m):
    F(m).conv2d(t(m, X4), m.ones(2, 4, 3, 3))


@sc
def conv_groups_bad(m):
    m.nn.Conv2d(3, 4, 3, groups=2)


@sc
def conv_padding_mode_bad(m):
    m.nn.Conv2d(3, 4, 3, padding_mode="mirror")


@slow
def conv_same_module_padding_modes(m):
    out = []
    for pm in ["zeros", "reflect", "replicate", "circular"]:
        c = m.nn.Conv2d(3, 2, 3, padding=1, padding_mode=pm, bias=False)
        with m.no_grad():
            c.weight.copy_(m.tensor(rnd((2, 3, 3, 3)).astype(np.float32)))
        out.append(c(t(m, X4)))
    return out


@slow
def local_response_norm(m):
    x = t(m, X4, True)
    out = F(m).local_response_norm(x, 2)
    out.sum().backward()
    return out, x.grad


@slow
def fold_unfold(m):
    x = t(m, X4, True)
    u = F(m).unfold(x, (2, 3), dilation=1, padding=1, stride=(1, 2))
    f = F(m).fold(u, (4, 5), (2, 3), padding=1, stride=(1, 2))
    f.sum().backward()
    return u, f, x.grad


@sc
def fold_bad_blocks(m):
    F(m).fold(m.ones(1, 12, 5), (4, 5), (2, 3))


@slow
def channel_shuffle(m):
    return F(m).channel_shuffle(t(m, rnd((1, 6, 2, 2)).astype(np.float32)), 3), m.nn.ChannelShuffle(2)(
        t(m, rnd((1, 4, 1, 1)).astype(np.float32))
    )


@sc
def flatten_unflatten(m):
    return (
        m.nn.Flatten()(t(m, X4)).shape,
        m.nn.Flatten(0, 2)(t(m, X4)).shape,
        m.nn.Unflatten(1, (2, 2))(t(m, L)).shape,
        repr(m.nn.Unflatten(1, (2, 2))),
    )


@sc
def unflatten_bad(m):
    m.nn.Unflatten(1, (2, 3))(t(m, L))


@sc
def identity_args(m):
    i = m.nn.Identity(54, unused="x")
    return i(t(m, L)) is not None


@slow
def batch_norm_eval_no_stats(m):
    bn = m.nn.BatchNorm1d(5, track_running_stats=False).eval()
    return bn(t(m, L))


@sc
def batch_norm_one_value_train(m):
    m.nn.BatchNorm1d(5)(t(m, L[:1]))


@slow
def batch_norm_momentum_none(m):
    bn = m.nn.BatchNorm1d(5, momentum=None)
    for k in range(3):
        bn(t(m, L + k))
    return bn.running_mean, bn.running_var, bn.num_batches_tracked


@slow
def instance_norm_warn(m):
    return m.nn.InstanceNorm1d(3)(t(m, X3)), m.nn.InstanceNorm1d(3, affine=True, track_running_stats=True)(t(m, X3))


@sc
def group_norm_bad(m):
    m.nn.GroupNorm(4, 6)


@sc
def layer_norm_shape_bad(m):
    F(m).layer_norm(t(m, L), (4,))


@slow
def layer_norm_no_bias(m):
    ln = m.nn.LayerNorm(5, bias=False)
    return ln(t(m, L)), [n for n, _ in ln.named_parameters()]


@slow
def rms_norm(m):
    x = t(m, L, True)
    out = F(m).rms_norm(x, (5,), weight=m.linspace(0.5, 1.5, 5), eps=None)
    out.sum().backward()
    return out, x.grad


@slow
def max_pool_return_indices(m):
    o, i = F(m).max_pool2d(t(m, X4), 2, return_indices=True)
    u = F(m).max_unpool2d(o, i, 2, output_size=(4, 5))
    return o, i, u


@sc
def max_pool_bad_padding(m):
    F(m).max_pool2d(t(m, X4), 2, padding=2)


@slow
def avg_pool_ceil_divisor(m):
    return F(m).avg_pool2d(t(m, X4), 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False), F(m).avg_pool2d(
        t(m, X4), 2, divisor_override=3
    )


@slow
def adaptive_pools(m):
    return (
        F(m).adaptive_avg_pool2d(t(m, X4), (3, None)),
        F(m).adaptive_max_pool2d(t(m, X4), 3, return_indices=True),
        F(m).adaptive_avg_pool1d(t(m, X3), 4),
    )


@slow
def lp_pool(m):
    return F(m).lp_pool2d(t(m, np.abs(X4)), 2.0, 2), F(m).lp_pool1d(t(m, np.abs(X3)), 3, 2)


@slow
def transformer_mask(m):
    return m.nn.Transformer.generate_square_subsequent_mask(4)


@slow
def sdpa_basic(m):
    q = t(m, rnd((1, 2, 3, 4)).astype(np.float32), True)
    out = F(m).scaled_dot_product_attention(q, q * 0.5, q + 1, is_causal=True)
    out.sum().backward()
    return out, q.grad


@slow
def multihead_attention_weights(m):
    m.manual_seed(0)
    torch.manual_seed(0)
    mha = m.nn.MultiheadAttention(4, 2, batch_first=True)
    with m.no_grad():
        for p in mha.parameters():
            p.copy_(m.linspace(-0.5, 0.5, p.numel()).reshape(p.shape))
    x = t(m, rnd((2, 3, 4)).astype(np.float32))
    o, w = mha(x, x, x)
    o2, w2 = mha(x, x, x, average_attn_weights=False, need_weights=True)
    o3, w3 = mha(x, x, x, need_weights=False)
    return o, w, w2, w3


@sc
def rnn_weights_names(m):
    return [n for n, _ in m.nn.LSTM(2, 3, num_layers=2, bidirectional=True, proj_size=2).named_parameters()]


@sc
def rnn_bad_dropout_warns(m):
    return m.nn.GRU(2, 3, dropout=0.5).dropout


@sc
def init_calculate_gain(m):
    return [m.nn.init.calculate_gain(n) for n in ["linear", "conv2d", "sigmoid", "tanh", "relu", "selu"]] + [
        m.nn.init.calculate_gain("leaky_relu", 0.2)
    ]


@sc
def init_calculate_gain_bad(m):
    m.nn.init.calculate_gain("foo")


@sc
def init_fan_error(m):
    m.nn.init.xavier_uniform_(m.ones(3))


@sc
def init_eye_dirac(m):
    return (
        m.nn.init.eye_(m.empty(3, 4)),
        m.nn.init.dirac_(m.empty(4, 2, 3)),
        m.nn.init.constant_(m.empty(2), 0.3),
        m.nn.init.ones_(m.empty(2)),
        m.nn.init.zeros_(m.empty(2)),
    )


@sc
def init_eye_bad(m):
    m.nn.init.eye_(m.empty(2, 2, 2))


@slow
def init_orthogonal_shape(m):
    w = m.nn.init.orthogonal_(m.empty(3, 5))
    return (w @ w.t() - m.eye(3)).abs().max() < 1e-5


@sc
def init_sparse_error(m):
    m.nn.init.sparse_(m.empty(2, 2, 2), 0.5)


@slow
def init_trunc_normal_bounds(m):
    w = m.nn.init.trunc_normal_(m.empty(1000), mean=0.0, std=2.0, a=-1.0, b=1.5)
    return bool(w.min() >= -1.0), bool(w.max() <= 1.5)


@sc
def init_kaiming_mode_bad(m):
    m.nn.init.kaiming_uniform_(m.empty(3, 3), mode="fan_avg")


# Where vkml still differs from PyTorch, and why (strict: a fix makes the test fail until it leaves this list)
KNOWN = {}
# the padding_mode error prints a set, whose order differs between processes
SC.pop("conv_padding_mode_bad", None)


# scenarios whose PyTorch behaviour changed by 2.13, the release vkml follows
CHANGED_IN_2_13 = {
    "interp_bad_mode_name": "interpolate's mode list names lanczos",
    "nll_float_target": "nll_loss's message for a float target",
}


def _tolerances(name: str) -> dict:
    # grid_sample's gradients sum many products in another order than PyTorch's
    return {"rtol": 1e-4, "atol": 1e-5} if name.startswith("grid_sample") else {}


@pytest.mark.parametrize("name", known_params(SC, KNOWN))
def test_nn_scenario_matches_torch(name: str) -> None:
    if name in CHANGED_IN_2_13:
        skip_before_pytorch(2, 13, CHANGED_IN_2_13[name])
    check(SC[name], **_tolerances(name))


@pytest.mark.exhaustive
@pytest.mark.parametrize("name", known_params(SLOW, KNOWN))
def test_nn_scenario_with_kernels_matches_torch(name: str) -> None:
    check(SLOW[name], **_tolerances(name))


def test_interpolate_and_pad_on_vulkan(gpu) -> None:
    """A sample on the Vulkan device: bilinear interpolation and reflect padding, with their gradients."""

    def scenario(m):
        device = {"device": gpu} if m is vkml else {}
        x = m.tensor(X4, requires_grad=True, **device)
        up = F(m).interpolate(x, scale_factor=1.5, mode="bilinear", align_corners=False)
        padded = F(m).pad(up, (1, 2, 2, 0), mode="reflect")
        (padded * padded).sum().backward()
        return padded, x.grad

    check(scenario)
