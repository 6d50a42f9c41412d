"""Losses, shape layers and Dropout2d against PyTorch: values and gradients; Vulkan = CPU bits."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from layercheck import check

import vkml
import vkml.nn as nn
import vkml.nn.functional as F

TF = torch.nn.functional


def _x(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _targets(shape, classes, seed=1, ignore=None):
    t = np.random.default_rng(seed).integers(0, classes, shape).astype(np.int64)
    if ignore is not None:
        t.reshape(-1)[::3] = ignore
    return t


NLL = [
    ("mean", (5, 4), (5,), {}),
    ("weighted ignore", (6, 3), (6,), {"weight": True, "ignore_index": 1}),
    ("spatial sum", (2, 3, 4), (2, 4), {"reduction": "sum", "weight": True}),
    ("none ignore -100", (6, 4), (6,), {"reduction": "none", "ignore_index": -100}),
    ("unbatched", (4,), (), {}),
]


@pytest.mark.parametrize(("what", "xs", "ts", "kwargs"), NLL, ids=[c[0] for c in NLL])
def test_nll_loss_matches_torch(what, xs, ts, kwargs, gpu):
    x = np.log(
        np.random.default_rng(0).dirichlet(np.ones(xs[0] if len(xs) == 1 else xs[1]), xs[0] if len(xs) > 1 else None)
    )
    x = _x(xs)
    kwargs = dict(kwargs)
    target = _targets(
        ts, xs[1] if len(xs) > 1 else xs[0], ignore=kwargs.get("ignore_index") if "ignore" in what else None
    )
    if target.ndim == 0:
        target = np.array(2, np.int64)
    arrays = [x, target]
    if kwargs.pop("weight", False):
        arrays.append(np.abs(_x((xs[1],), 3)) + 0.1)
    grads = [True, False] + [False] * (len(arrays) - 2)
    check(
        lambda *t: F.nll_loss(t[0], t[1], t[2] if len(t) > 2 else None, **kwargs),
        lambda *t: TF.nll_loss(t[0], t[1], t[2] if len(t) > 2 else None, **kwargs),
        arrays,
        gpu if what == "weighted ignore" else None,
        rtol=1e-6,
        atol=1e-6,
        grad=grads,
    )


def test_nll_loss_of_log_softmax_is_cross_entropy_and_module():
    x, t = _x((4, 5)), _targets((4,), 5)
    got = F.nll_loss(F.log_softmax(vkml.tensor(x), 1), vkml.tensor(t)).numpy()
    np.testing.assert_array_equal(got, F.cross_entropy(vkml.tensor(x), vkml.tensor(t)).numpy())
    w = np.abs(_x((5,), 2))
    layer, ref = nn.NLLLoss(vkml.tensor(w), reduction="sum"), torch.nn.NLLLoss(torch.tensor(w), reduction="sum")
    assert [n for n, _ in layer.named_buffers()] == [n for n, _ in ref.named_buffers()] == ["weight"]
    np.testing.assert_allclose(
        layer(vkml.tensor(x), vkml.tensor(t)).item(), ref(torch.tensor(x), torch.tensor(t)).item(), rtol=1e-6
    )


def test_nll_loss_target_out_of_range_raises_index_error():
    loss = F.nll_loss(vkml.tensor(_x((3, 4))), vkml.tensor([0, 4, 1]))
    with pytest.raises(IndexError, match="Target 4 is out of bounds"):
        loss.item()


def _probs(shape, seed):
    return (1 / (1 + np.exp(-_x(shape, seed)))).astype(np.float32)


ELEMENTWISE = [
    ("bce", F.binary_cross_entropy, TF.binary_cross_entropy, lambda: [_probs((4, 3), 0), _probs((4, 3), 1)], {}),
    (
        "bce weight sum",
        lambda x, t, w: F.binary_cross_entropy(x, t, w, reduction="sum"),
        lambda x, t, w: TF.binary_cross_entropy(x, t, w, reduction="sum"),
        lambda: [_probs((4, 3), 0), _probs((4, 3), 1), np.abs(_x((3,), 2))],
        {"grad": [True, True, False]},  # PyTorch: weight is not differentiable
    ),
    (
        "bce logits",
        F.binary_cross_entropy_with_logits,
        TF.binary_cross_entropy_with_logits,
        lambda: [_x((4, 3)) * 10, _probs((4, 3), 1)],
        {},
    ),
    (
        "bce logits pos_weight weight",
        lambda x, t, w, p: F.binary_cross_entropy_with_logits(x, t, w, reduction="none", pos_weight=p),
        lambda x, t, w, p: TF.binary_cross_entropy_with_logits(x, t, w, reduction="none", pos_weight=p),
        lambda: [_x((4, 3)) * 5, _probs((4, 3), 1), np.abs(_x((4, 1), 2)), np.abs(_x((3,), 3)) + 0.5],
        {"grad": [True, True, False, False]},
    ),
    ("l1", F.l1_loss, TF.l1_loss, lambda: [_x((4, 3)), _x((4, 3), 1)], {}),
    (
        "l1 sum",
        lambda x, t: F.l1_loss(x, t, reduction="sum"),
        lambda x, t: TF.l1_loss(x, t, reduction="sum"),
        lambda: [_x((5,)), _x((5,), 1)],
        {},
    ),
    ("smooth l1", F.smooth_l1_loss, TF.smooth_l1_loss, lambda: [_x((6, 3)) * 2, _x((6, 3), 1)], {}),
    (
        "smooth l1 beta",
        lambda x, t: F.smooth_l1_loss(x, t, reduction="none", beta=0.3),
        lambda x, t: TF.smooth_l1_loss(x, t, reduction="none", beta=0.3),
        lambda: [_x((6, 3)), _x((6, 3), 1)],
        {},
    ),
    (
        "smooth l1 beta 0",
        lambda x, t: F.smooth_l1_loss(x, t, beta=0.0),
        lambda x, t: TF.smooth_l1_loss(x, t, beta=0.0),
        lambda: [_x((6, 3)), _x((6, 3), 1)],
        {},
    ),
    ("huber", F.huber_loss, TF.huber_loss, lambda: [_x((6, 3)) * 2, _x((6, 3), 1)], {}),
    (
        "huber delta",
        lambda x, t: F.huber_loss(x, t, "sum", 0.4),
        lambda x, t: TF.huber_loss(x, t, reduction="sum", delta=0.4),
        lambda: [_x((6, 3)), _x((6, 3), 1)],
        {},
    ),
    (
        "kl batchmean",
        lambda x, t: F.kl_div(x, t, reduction="batchmean"),
        lambda x, t: TF.kl_div(x, t, reduction="batchmean"),
        lambda: [np.log(_probs((4, 3), 0)), np.where(_x((4, 3), 2) > 0, _probs((4, 3), 1), 0).astype(np.float32)],
        {"grad": [True, False]},  # (PyTorch's target gradient is NaN at zero targets)
    ),
    (
        "kl log_target none",
        lambda x, t: F.kl_div(x, t, reduction="none", log_target=True),
        lambda x, t: TF.kl_div(x, t, reduction="none", log_target=True),
        lambda: [_x((4, 3)), _x((4, 3), 1)],
        {},
    ),
]


@pytest.mark.parametrize(("what", "vk", "pt", "make", "kwargs"), ELEMENTWISE, ids=[c[0] for c in ELEMENTWISE])
def test_elementwise_losses_match_torch(what, vk, pt, make, kwargs, gpu):
    arrays = make()
    device = gpu if what in ("bce logits pos_weight weight", "kl batchmean", "smooth l1") else None
    check(vk, pt, arrays, device, rtol=2e-6, atol=2e-6, grad=kwargs.get("grad"))


def test_loss_modules_match_torch():
    x, t = _x((4, 3)), _probs((4, 3), 1)
    pairs = [
        (nn.L1Loss(), torch.nn.L1Loss(), _x((4, 3), 2)),
        (nn.SmoothL1Loss(beta=0.5), torch.nn.SmoothL1Loss(beta=0.5), _x((4, 3), 2)),
        (nn.HuberLoss(delta=0.5), torch.nn.HuberLoss(delta=0.5), _x((4, 3), 2)),
        (
            nn.KLDivLoss(reduction="batchmean", log_target=True),
            torch.nn.KLDivLoss(reduction="batchmean", log_target=True),
            _x((4, 3), 2),
        ),
        (
            nn.BCEWithLogitsLoss(pos_weight=vkml.tensor([1.0, 2.0, 3.0])),
            torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor([1.0, 2.0, 3.0])),
            t,
        ),
        (nn.BCELoss(), torch.nn.BCELoss(), t),
    ]
    for mine, ref, target in pairs:
        inp = _probs((4, 3), 5) if isinstance(mine, nn.BCELoss) else x
        np.testing.assert_allclose(
            mine(vkml.tensor(inp), vkml.tensor(target)).item(),
            ref(torch.tensor(inp), torch.tensor(target)).item(),
            rtol=1e-6,
        )
        assert list(mine.state_dict()) == list(ref.state_dict())


LOSS_ERRORS = [
    (
        lambda: F.l1_loss(vkml.ones(2), vkml.ones(2), reduction="avg"),
        ValueError,
        "avg is not a valid value for reduction",
    ),
    (lambda: F.binary_cross_entropy(vkml.ones(3, 1) * 0.5, vkml.ones(3)), ValueError, "different to the input size"),
    (lambda: F.smooth_l1_loss(vkml.ones(2), vkml.ones(2), beta=-1.0), RuntimeError, "negative values for beta"),
    (lambda: F.huber_loss(vkml.ones(2), vkml.ones(2), delta=0.0), RuntimeError, "non-positive values for delta"),
    (lambda: F.nll_loss(vkml.ones(2, 3), vkml.tensor([0, 1]), weight=vkml.ones(4)), RuntimeError, "for all 3 classes"),
    (lambda: F.nll_loss(vkml.ones(2, 3), vkml.tensor([0.0, 1.0])), TypeError, "integer"),
]


@pytest.mark.parametrize(("call", "error", "match"), LOSS_ERRORS)
def test_loss_errors_match_torch(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_shape_layers_match_torch():
    x = _x((2, 3, 4, 5))
    for mine, ref in [
        (nn.Flatten(), torch.nn.Flatten()),
        (nn.Flatten(0, 2), torch.nn.Flatten(0, 2)),
        (nn.Flatten(-3, -2), torch.nn.Flatten(-3, -2)),
        (nn.Unflatten(1, (3, 1)), torch.nn.Unflatten(1, (3, 1))),
        (nn.Unflatten(-1, (5, -1)), torch.nn.Unflatten(-1, (5, -1))),
        (nn.Identity(54, unused="x"), torch.nn.Identity(54, unused="x")),
    ]:
        np.testing.assert_array_equal(mine(vkml.tensor(x)).numpy(), ref(torch.tensor(x)).numpy())
        assert repr(mine) == repr(ref)
    with pytest.raises(RuntimeError, match="start_dim cannot come after end_dim"):
        nn.Flatten(2, 1)(vkml.tensor(x))


def test_dropout2d_zeros_whole_channels(gpu):
    vkml.manual_seed(3)
    x = vkml.ones(4, 8, 3, 3, requires_grad=True)
    out = F.dropout2d(x, 0.5)
    out.sum().backward()
    values = out.numpy().reshape(32, 9)
    assert set(np.unique(values)) == {0.0, 2.0}
    assert (values == values[:, :1]).all()  # a whole channel is kept or dropped
    np.testing.assert_array_equal(x.grad.numpy(), out.numpy())
    vkml.manual_seed(3)
    np.testing.assert_array_equal(F.dropout2d(vkml.ones(4, 8, 3, 3, device=gpu), 0.5).numpy(), out.numpy())
    layer = nn.Dropout2d(0.3)
    assert repr(layer) == repr(torch.nn.Dropout2d(0.3))
    layer.eval()
    assert layer(x) is x
    with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
        assert F.dropout2d(vkml.ones(2, 3, 4)).shape == (2, 3, 4)
