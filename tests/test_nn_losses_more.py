"""Losses of issue 18 and cross_entropy's full argument set against PyTorch: values and gradients on the
CPU backend, the same bits on Vulkan, and PyTorch's errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from layercheck import check

import vkml
import vkml.nn as nn
import vkml.nn.functional as F

TF = torch.nn.functional


def _x(shape, seed=0, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def _pos(shape, seed=0):
    return (np.abs(_x(shape, seed)) + 0.1).astype(np.float32)


def _sign(shape, seed=1):
    return np.where(np.random.default_rng(seed).random(shape) < 0.5, -1.0, 1.0).astype(np.float32)


def _labels(shape, classes, seed=1):
    return np.random.default_rng(seed).integers(0, classes, shape).astype(np.int64)


def _multilabel(n, c, seed=2):
    """Rows of class indices, each ended by -1 somewhere (some values after it, which do not count)."""
    rng = np.random.default_rng(seed)
    t = rng.integers(0, c, (n, c)).astype(np.int64)
    for row in t:
        row[rng.integers(0, c)] = -1
    return t


# name, vkml function, torch function, arrays, which arrays get a gradient
CASES = [
    (
        "poisson full no log sum",
        lambda x, t: F.poisson_nll_loss(x, t, log_input=False, full=True, reduction="sum"),
        lambda x, t: TF.poisson_nll_loss(x, t, log_input=False, full=True, reduction="sum"),
        lambda: [_pos((4, 3)), _pos((4, 3), 1) * 3],
        [True, False],
    ),
    (
        "gaussian homoscedastic full none",
        lambda x, t, v: F.gaussian_nll_loss(x, t, v, full=True, reduction="none"),
        lambda x, t, v: TF.gaussian_nll_loss(x, t, v, full=True, reduction="none"),
        lambda: [_x((5, 3)), _x((5, 3), 1), _pos((5,), 2)],
        None,
    ),
    (
        "gaussian clamped var",
        lambda x, t, v: F.gaussian_nll_loss(x, t, v, eps=0.3, reduction="sum"),
        lambda x, t, v: TF.gaussian_nll_loss(x, t, v, eps=0.3, reduction="sum"),
        lambda: [_x((5, 3)), _x((5, 3), 1), _pos((5, 1), 2) * 0.5],
        None,
    ),
    (
        "margin ranking",
        lambda a, b, y: F.margin_ranking_loss(a, b, y, margin=0.3),
        lambda a, b, y: TF.margin_ranking_loss(a, b, y, margin=0.3),
        lambda: [_x((7,)), _x((7,), 1), _sign((7,))],
        [True, True, False],
    ),
    (
        "hinge embedding none",
        lambda x, y: F.hinge_embedding_loss(x, y, margin=0.5, reduction="none"),
        lambda x, y: TF.hinge_embedding_loss(x, y, margin=0.5, reduction="none"),
        lambda: [_x((4, 5)), _sign((4, 5))],
        [True, False],
    ),
    ("soft margin", F.soft_margin_loss, TF.soft_margin_loss, lambda: [_x((4, 5), 0, 8), _sign((4, 5))], [True, False]),
    (
        "multilabel soft margin weight",
        lambda x, y, w: F.multilabel_soft_margin_loss(x, y, w),
        lambda x, y, w: TF.multilabel_soft_margin_loss(x, y, w),
        lambda: [_x((4, 5)), (_sign((4, 5)) > 0).astype(np.float32), _pos((5,), 3)],
        [True, False, False],
    ),
    (
        "cosine embedding",
        lambda a, b, y: F.cosine_embedding_loss(a, b, y, margin=0.2),
        lambda a, b, y: TF.cosine_embedding_loss(a, b, y, margin=0.2),
        lambda: [_x((6, 4)), _x((6, 4), 1), _sign((6,))],
        [True, True, False],
    ),
    (
        "cosine embedding 1-D",
        lambda a, b, y: F.cosine_embedding_loss(a, b, y, reduction="none"),
        lambda a, b, y: TF.cosine_embedding_loss(a, b, y, reduction="none"),
        lambda: [_x((4,)), _x((4,), 1), np.array(-1.0, np.float32)],
        [True, True, False],
    ),
    (
        "multi margin",
        F.multi_margin_loss,
        TF.multi_margin_loss,
        lambda: [_x((5, 4)), _labels((5,), 4)],
        None,
    ),
    (
        "multi margin p2 weight none",
        lambda x, y, w: F.multi_margin_loss(x, y, p=2, margin=0.7, weight=w, reduction="none"),
        lambda x, y, w: TF.multi_margin_loss(x, y, p=2, margin=0.7, weight=w, reduction="none"),
        lambda: [_x((5, 4)), _labels((5,), 4), _pos((4,), 3)],
        [True, False, False],
    ),
    (
        "multi margin 1-D",
        lambda x, y: F.multi_margin_loss(x, y, reduction="none"),
        lambda x, y: TF.multi_margin_loss(x, y, reduction="none"),
        lambda: [_x((4,)), np.array([2], np.int64)],
        None,
    ),
    (
        "multilabel margin",
        F.multilabel_margin_loss,
        TF.multilabel_margin_loss,
        lambda: [_x((5, 4)), _multilabel(5, 4)],
        None,
    ),
    (
        "multilabel margin 1-D none",
        lambda x, y: F.multilabel_margin_loss(x, y, reduction="none"),
        lambda x, y: TF.multilabel_margin_loss(x, y, reduction="none"),
        lambda: [_x((4,)), np.array([3, 0, -1, 1], np.int64)],
        None,
    ),
    (
        "triplet",
        F.triplet_margin_loss,
        TF.triplet_margin_loss,
        lambda: [_x((5, 3)), _x((5, 3), 1), _x((5, 3), 2)],
        None,
    ),
    (
        "triplet p1 swap none",
        lambda a, p, n: F.triplet_margin_loss(a, p, n, margin=2.0, p=1, swap=True, reduction="none"),
        lambda a, p, n: TF.triplet_margin_loss(a, p, n, margin=2.0, p=1, swap=True, reduction="none"),
        lambda: [_x((5, 3)), _x((5, 3), 1), _x((5, 3), 2)],
        None,
    ),
    (
        "triplet with distance",
        lambda a, p, n: F.triplet_margin_with_distance_loss(
            a, p, n, distance_function=lambda x, y: (x - y).abs().sum(-1), swap=True
        ),
        lambda a, p, n: TF.triplet_margin_with_distance_loss(
            a, p, n, distance_function=lambda x, y: (x - y).abs().sum(-1), swap=True
        ),
        lambda: [_x((5, 3)), _x((5, 3), 1), _x((5, 3), 2)],
        None,
    ),
    (
        "kl log_target batchmean",
        lambda x, t: F.kl_div(x, t, reduction="batchmean", log_target=True),
        lambda x, t: TF.kl_div(x, t, reduction="batchmean", log_target=True),
        lambda: [_x((4, 3)), _x((4, 3), 1)],
        None,
    ),
]
ON_GPU = {"gaussian clamped var", "multilabel margin", "triplet p1 swap none"}


@pytest.mark.parametrize(("what", "vk", "pt", "make", "grad"), CASES, ids=[c[0] for c in CASES])
def test_losses_match_torch(what, vk, pt, make, grad, gpu):
    check(vk, pt, make(), gpu if what in ON_GPU else None, rtol=2e-6, atol=2e-6, grad=grad)


# cross_entropy and nll_loss: every argument, K-dimensional inputs, probability targets
CE = [
    ("weight", (5, 4), {"weight": True}),
    ("weight ignore mean", (6, 3), {"weight": True, "ignore_index": 1}),
    ("weight smoothing", (5, 4), {"weight": True, "label_smoothing": 0.2}),
    (
        "weight smoothing ignore sum",
        (6, 4),
        {"weight": True, "label_smoothing": 0.3, "ignore_index": 2, "reduction": "sum"},
    ),
    ("k-dim weight smoothing", (2, 3, 4, 2), {"weight": True, "label_smoothing": 0.1, "ignore_index": 0}),
    ("k-dim none", (2, 3, 5), {"reduction": "none", "ignore_index": 1}),
    ("probabilities weight smoothing", (4, 3), {"probs": True, "weight": True, "label_smoothing": 0.25}),
    ("k-dim probabilities sum", (2, 3, 4), {"probs": True, "reduction": "sum"}),
    ("unbatched weight none", (4,), {"weight": True, "reduction": "none"}),
]


@pytest.mark.parametrize(("what", "shape", "kwargs"), CE, ids=[c[0] for c in CE])
def test_cross_entropy_matches_torch(what, shape, kwargs, gpu):
    kwargs = dict(kwargs)
    classes = shape[1] if len(shape) > 1 else shape[0]
    x = _x(shape)
    if kwargs.pop("probs", False):
        p = np.exp(_x(shape, 1))
        target = (p / p.sum(1 if len(shape) > 1 else 0, keepdims=True)).astype(np.float32)
    else:
        target = _labels((shape[0],) + shape[2:] if len(shape) > 1 else (), classes)
    arrays = [x, target]
    if kwargs.pop("weight", False):
        arrays.append(_pos((classes,), 3))
    grad = [True, False, False][: len(arrays)]

    def call(f):
        return lambda *t: f(t[0], t[1], t[2] if len(t) > 2 else None, **kwargs)

    device = gpu if what == "k-dim weight smoothing" else None
    check(call(F.cross_entropy), call(TF.cross_entropy), arrays, device, rtol=2e-6, atol=2e-6, grad=grad)


def test_nll_loss_k_dim_weight_matches_torch():
    x, t, w = _x((2, 4, 3, 2)), _labels((2, 3, 2), 4), _pos((4,), 3)
    check(
        lambda x, t, w: F.nll_loss(x, t, w, ignore_index=3),
        lambda x, t, w: TF.nll_loss(x, t, w, ignore_index=3),
        [x, t, w],
        rtol=2e-6,
        atol=2e-6,
        grad=[True, False, False],
    )


def test_cross_entropy_module_takes_torch_arguments():
    w = _pos((4,), 3)
    x, t = _x((5, 4)), _labels((5,), 4)
    mine = nn.CrossEntropyLoss(vkml.tensor(w), ignore_index=2, label_smoothing=0.1, reduction="sum")
    ref = torch.nn.CrossEntropyLoss(torch.tensor(w), ignore_index=2, label_smoothing=0.1, reduction="sum")
    assert list(mine.state_dict()) == list(ref.state_dict()) == ["weight"]
    np.testing.assert_allclose(
        mine(vkml.tensor(x), vkml.tensor(t)).item(), ref(torch.tensor(x), torch.tensor(t)).item(), rtol=2e-6
    )


def test_legacy_size_average_and_reduce_pick_torch_reduction():
    x, t = _x((4, 3)), _x((4, 3), 1)
    for size_average, reduce in [(False, None), (None, False), (True, True)]:
        with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
            got = nn.L1Loss(size_average, reduce)(vkml.tensor(x), vkml.tensor(t)).numpy()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = torch.nn.L1Loss(size_average, reduce)(torch.tensor(x), torch.tensor(t)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-6)
    with pytest.warns(UserWarning):
        assert F.soft_margin_loss(vkml.tensor(x), vkml.tensor(t), reduce=False).shape == (4, 3)


MODULES = [
    ("PoissonNLLLoss", {"log_input": False, "full": True}, 2),
    ("GaussianNLLLoss", {"full": True}, 3),
    ("MarginRankingLoss", {"margin": 0.1}, 3),
    ("HingeEmbeddingLoss", {"margin": 0.5}, 2),
    ("SoftMarginLoss", {}, 2),
    ("MultiLabelSoftMarginLoss", {}, 2),
    ("CosineEmbeddingLoss", {"margin": 0.1}, 3),
    ("MultiMarginLoss", {"p": 2}, 2),
    ("MultiLabelMarginLoss", {}, 2),
    ("TripletMarginLoss", {"swap": True}, 3),
    ("TripletMarginWithDistanceLoss", {"margin": 0.5}, 3),
]


def _module_inputs(name):
    x = _pos((4, 3))
    if name in ("MultiMarginLoss",):
        return [x, _labels((4,), 3)]
    if name == "MultiLabelMarginLoss":
        return [x, _multilabel(4, 3)]
    if name in ("MarginRankingLoss",):
        return [_x((4,)), _x((4,), 1), _sign((4,))]
    if name == "CosineEmbeddingLoss":
        return [x, _x((4, 3), 1), _sign((4,))]
    if name in ("HingeEmbeddingLoss", "SoftMarginLoss"):
        return [_x((4, 3)), _sign((4, 3))]
    if name == "MultiLabelSoftMarginLoss":
        return [_x((4, 3)), (_sign((4, 3)) > 0).astype(np.float32)]
    if name == "PoissonNLLLoss":
        return [x, x * 3]
    return [_x((4, 3)), _x((4, 3), 1), _pos((4, 3), 2)]


@pytest.mark.parametrize(("name", "kwargs", "n"), MODULES, ids=[m[0] for m in MODULES])
def test_loss_modules_match_torch(name, kwargs, n):
    arrays = _module_inputs(name)
    mine, ref = getattr(nn, name)(**kwargs), getattr(torch.nn, name)(**kwargs)
    assert repr(mine) == repr(ref)
    assert mine.reduction == ref.reduction == "mean"
    got = mine(*[vkml.tensor(a) for a in arrays]).item()
    np.testing.assert_allclose(got, ref(*[torch.tensor(a) for a in arrays]).item(), rtol=2e-6)


ERRORS = [
    (lambda: F.poisson_nll_loss(vkml.ones(2), vkml.ones(2), reduction="avg"), ValueError, "avg is not a valid value"),
    (
        lambda: F.gaussian_nll_loss(vkml.ones(2, 3), vkml.ones(2, 3), vkml.ones(3)),
        ValueError,
        "var is of incorrect size",
    ),
    (lambda: F.gaussian_nll_loss(vkml.ones(2), vkml.ones(2), -1.0), ValueError, "var has negative entry"),
    (
        lambda: F.gaussian_nll_loss(vkml.ones(2), vkml.ones(2), vkml.ones(2), reduction="x"),
        ValueError,
        "x is not valid",
    ),
    (
        lambda: F.margin_ranking_loss(vkml.ones(2, 3), vkml.ones(2, 3), vkml.ones(2)),
        RuntimeError,
        "All input tensors should have same dimension",
    ),
    (lambda: F.multi_margin_loss(vkml.ones(2, 3), vkml.tensor([0, 1]), p=3), ValueError, "only p == 1 and p == 2"),
    (
        lambda: F.multi_margin_loss(vkml.ones(2, 3), vkml.tensor([0, 1, 2])),
        RuntimeError,
        "Expected target size \\[2\\], but got \\[3\\]",
    ),
    (
        lambda: F.multi_margin_loss(vkml.ones(2, 3), vkml.tensor([0, 1]), weight=vkml.ones(4)),
        RuntimeError,
        "inconsistent weight size, expected 3",
    ),
    (
        lambda: F.multi_margin_loss(vkml.ones(2, 3, 4), vkml.tensor([0, 1])),
        RuntimeError,
        "Expected non-empty vector or matrix",
    ),
    (
        lambda: F.multilabel_margin_loss(vkml.ones(2, 4), vkml.tensor([[0, -1, 0], [1, -1, 0]])),
        RuntimeError,
        "inconsistent target size",
    ),
    (
        lambda: F.cosine_embedding_loss(vkml.ones(2, 3), vkml.ones(2, 3), vkml.ones(2, 1)),
        RuntimeError,
        "0D or 1D target tensor expected",
    ),
    (
        lambda: F.triplet_margin_loss(vkml.ones(2, 3), vkml.ones(2, 3), vkml.ones(3)),
        RuntimeError,
        "anchor 2D, positive 2D, and negative 1D",
    ),
    (lambda: F.triplet_margin_loss(vkml.ones(2), vkml.ones(2), vkml.ones(2), margin=0), ValueError, "greater than 0"),
    (
        lambda: F.triplet_margin_with_distance_loss(vkml.ones(2), vkml.ones(2), vkml.ones(2), reduction="avg"),
        ValueError,
        "avg is not a valid value",
    ),
    (lambda: F.cross_entropy(vkml.ones(2, 3), vkml.tensor([0, 1]), weight=vkml.ones(4)), RuntimeError, "all 3 classes"),
    (lambda: F.cross_entropy(vkml.ones(2, 3), vkml.tensor([0, 1]), reduction="avg"), ValueError, "avg is not a valid"),
    (lambda: nn.MultiMarginLoss(p=3), ValueError, "only p == 1 and p == 2"),
    (lambda: nn.TripletMarginLoss(margin=-1.0), ValueError, "expected margin to be greater than 0"),
]


@pytest.mark.parametrize(("call", "error", "match"), ERRORS)
def test_loss_errors_match_torch(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_value_errors_are_raised_when_the_loss_is_read(gpu):
    """Target indices out of range and negative variances, which PyTorch reads at the call, raise when read."""
    for device in (None, gpu):
        # (at the call in eager mode, at the read otherwise)
        with pytest.raises(RuntimeError, match="multi_margin_loss.*target out of range"):
            F.multi_margin_loss(vkml.ones(2, 3, device=device), vkml.tensor([0, 3], device=device)).item()
        with pytest.raises(RuntimeError, match="multilabel_margin_loss.*target out of range"):
            F.multilabel_margin_loss(vkml.ones(1, 3, device=device), vkml.tensor([[1, 3, -1]], device=device)).item()
        var = vkml.tensor([1.0, -0.5], device=device)
        with pytest.raises(ValueError, match="gaussian_nll_loss.*var has negative entry"):
            F.gaussian_nll_loss(vkml.ones(2, device=device), vkml.ones(2, device=device), var).item()
        fine = F.gaussian_nll_loss(
            vkml.ones(2, device=device), vkml.zeros(2, device=device), vkml.ones(2, device=device)
        )
        assert fine.item() == pytest.approx(0.5)


def test_kl_div_mean_warns_as_torch():
    x = vkml.tensor(_x((2, 3)))
    with pytest.warns(UserWarning, match="'mean' divides the total loss by both the batch size and the support size"):
        F.kl_div(x, x)
    with pytest.warns(UserWarning, match="'mean' divides the total loss"):
        nn.KLDivLoss()(x, x)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_l1_and_mse_weight_match_torch(reduction):
    x, t, w = _x((4, 3)), _x((4, 3), 1), _pos((4, 3), 2)
    for vk, pt in [(F.l1_loss, TF.l1_loss), (F.mse_loss, TF.mse_loss)]:
        check(
            lambda x, t, w, vk=vk: vk(x, t, reduction=reduction, weight=w),
            lambda x, t, w, pt=pt: pt(x, t, reduction=reduction, weight=w),
            [x, t, w],
            rtol=2e-6,
            atol=2e-6,
            grad=[True, True, False],
        )
        with pytest.raises(ValueError, match="Weights and input must have the same size"):
            vk(vkml.tensor(x), vkml.tensor(t), weight=vkml.ones(3))
    with pytest.warns(
        UserWarning, match=r"Using a target size \(vkml.Size\(\[3\]\)\) that is different to the input size"
    ):
        F.mse_loss(vkml.tensor(x), vkml.tensor(t[0]))
