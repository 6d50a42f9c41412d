"""vkml.nn against torch.nn: the same weights give the same outputs and gradients; Vulkan equals CPU bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from optest import assert_same_bits

import vkml
import vkml.nn as nn
import vkml.nn.functional as VF

CPU = vkml.device("cpu")
TF = torch.nn.functional


def _grads_of(module) -> dict[str, np.ndarray]:
    return {name: p.grad.numpy() for name, p in module.named_parameters()}


def _run_pair(vk_module, pt_module, x: np.ndarray, device, integer_input: bool = False):
    """Forward and backward (upstream: fixed random) through both; returns vkml's (out, grads) and torch's."""
    vk_module.load_state_dict({k: v for k, v in pt_module.state_dict().items()})
    vk_module.to(device)
    xv = vkml.tensor(x, device=device)
    xt = torch.from_numpy(x)
    pt_out = pt_module(xt)
    upstream = np.random.default_rng(5).standard_normal(tuple(pt_out.shape)).astype(np.float32)
    pt_out.backward(torch.from_numpy(upstream))
    out = vk_module(xv)
    out.backward(vkml.tensor(upstream, device=device))
    vkml.realize(out, *(p.grad for p in vk_module.parameters()))
    pt_grads = {name: p.grad.numpy() for name, p in pt_module.named_parameters()}
    return (out.numpy(), _grads_of(vk_module)), (pt_out.detach().numpy(), pt_grads)


MODULES = {
    "mlp": (
        lambda: nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 8), nn.Tanh(), nn.Linear(8, 3), nn.Sigmoid()),
        lambda: torch.nn.Sequential(
            torch.nn.Linear(5, 16),
            torch.nn.ReLU(),
            torch.nn.Linear(16, 8),
            torch.nn.Tanh(),
            torch.nn.Linear(8, 3),
            torch.nn.Sigmoid(),
        ),
        lambda g: g.standard_normal((6, 5)).astype(np.float32),
    ),
    "gelu_layernorm": (
        lambda: nn.Sequential(nn.Linear(4, 12), nn.GELU(), nn.LayerNorm(12), nn.GELU(approximate="tanh")),
        lambda: torch.nn.Sequential(
            torch.nn.Linear(4, 12), torch.nn.GELU(), torch.nn.LayerNorm(12), torch.nn.GELU(approximate="tanh")
        ),
        lambda g: g.standard_normal((2, 3, 4)).astype(np.float32),
    ),
    "embedding": (
        lambda: nn.Sequential(nn.Embedding(10, 6), nn.LayerNorm((4, 6))),
        lambda: torch.nn.Sequential(torch.nn.Embedding(10, 6), torch.nn.LayerNorm((4, 6))),
        lambda g: g.integers(0, 10, (3, 4)).astype(np.int64),
    ),
}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_modules_match_torch_and_vulkan_equals_cpu(name, gpu):
    make_vk, make_pt, make_x = MODULES[name]
    torch.manual_seed(0)
    pt_module = make_pt()
    x = make_x(np.random.default_rng(1))
    (out, grads), (pt_out, pt_grads) = _run_pair(make_vk(), pt_module, x, CPU)
    np.testing.assert_allclose(out, pt_out, rtol=1e-5, atol=2e-6)
    assert grads.keys() == pt_grads.keys()
    for k in grads:
        np.testing.assert_allclose(grads[k], pt_grads[k], rtol=1e-4, atol=2e-5, err_msg=k)
    (gpu_out, gpu_grads), _ = _run_pair(make_vk(), pt_module, x, gpu)
    assert_same_bits(gpu_out, out, f"{name} forward on {gpu.name}")
    for k in grads:
        assert_same_bits(gpu_grads[k], grads[k], f"{name} grad of {k} on {gpu.name}")


LOSSES = [
    ("int targets", (5, 4), lambda g: g.integers(0, 4, 5), {}),
    ("sum, smoothing", (5, 4), lambda g: g.integers(0, 4, 5), {"reduction": "sum", "label_smoothing": 0.1}),
    ("ignore_index", (6, 3), lambda g: np.array([0, -100, 2, 1, -100, 2]), {}),
    ("spatial, none", (2, 3, 4), lambda g: g.integers(0, 3, (2, 4)), {"reduction": "none"}),
    ("unbatched", (4,), lambda g: np.array(2), {}),
    ("probabilities", (3, 5), lambda g: np.random.default_rng(2).dirichlet(np.ones(5), 3).astype(np.float32), {}),
]


@pytest.mark.parametrize(("what", "shape", "make_target", "kwargs"), LOSSES, ids=[entry[0] for entry in LOSSES])
def test_cross_entropy_matches_torch(what, shape, make_target, kwargs):
    g = np.random.default_rng(3)
    logits = (g.standard_normal(shape) * 3).astype(np.float32)
    target = np.asarray(make_target(g))
    target = target.astype(np.int64) if target.dtype.kind in "iu" else target
    x = vkml.tensor(logits, requires_grad=True)
    loss = VF.cross_entropy(x, vkml.tensor(target), **kwargs)
    xt = torch.from_numpy(logits).requires_grad_()
    want = TF.cross_entropy(xt, torch.from_numpy(target), **kwargs)
    upstream = np.ones(tuple(want.shape), np.float32)
    loss.backward(vkml.tensor(upstream))
    want.backward(torch.from_numpy(upstream))
    np.testing.assert_allclose(loss.numpy(), want.detach().numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_mse_loss_and_one_hot_match_torch():
    g = np.random.default_rng(4)
    a, b = g.standard_normal((3, 4)).astype(np.float32), g.standard_normal((4,)).astype(np.float32)
    x = vkml.tensor(a, requires_grad=True)
    with pytest.warns(UserWarning, match="Using a target size"):  # broadcasting targets: PyTorch's warning
        loss = VF.mse_loss(x, vkml.tensor(b))
    loss.backward()
    xt = torch.from_numpy(a).requires_grad_()
    want = TF.mse_loss(xt, torch.from_numpy(b).expand(3, 4))
    want.backward()
    np.testing.assert_allclose(loss.item(), want.item(), rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-6)
    with pytest.warns(UserWarning, match="Using a target size"):
        assert VF.mse_loss(x, vkml.tensor(b), reduction="none").shape == (3, 4)
    labels = np.array([[0, 3], [2, 1]])
    assert VF.one_hot(vkml.tensor(labels)).tolist() == TF.one_hot(torch.from_numpy(labels)).tolist()
    with pytest.raises(ValueError, match="avg is not a valid value for reduction"):  # PyTorch's words
        VF.mse_loss(x, x, reduction="avg")


def test_state_dict_round_trip_keeps_parameter_identity(gpu):
    vkml.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2, bias=False))
    names = [name for name, _ in net.named_parameters()]
    assert names == ["0.weight", "0.bias", "2.weight"]
    weight = net[0].weight
    bound = 1 / np.sqrt(3)
    assert np.abs(weight.numpy()).max() <= bound
    saved = {k: v.numpy() for k, v in net.state_dict().items()}
    net.to(gpu)
    assert net[0].weight is weight and weight.device is gpu and weight.requires_grad
    other = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2, bias=False))
    other.load_state_dict(net.state_dict())
    for k, v in other.state_dict().items():
        assert_same_bits(v.numpy(), saved[k], k)
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "2.weight"'):
        other.load_state_dict({k: v for k, v in saved.items() if k != "2.weight"})
    with pytest.raises(RuntimeError, match=r"size mismatch for 0.bias: copying a param with shape vkml.Size\(\[5\]\)"):
        other.load_state_dict({**saved, "0.bias": np.zeros(5, np.float32)})


def test_train_eval_dropout_and_module_rules():
    net = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5))
    assert net.training and net[1].training
    net.eval()
    assert not net[1].training
    x = vkml.ones(3, 2)
    assert_same_bits(net(x).numpy(), net[0](x).numpy(), "dropout in eval() is the identity")
    net.train()
    vkml.manual_seed(0)
    dropped = (net(vkml.ones(64, 2)).numpy() == 0).mean()
    assert 0.3 < dropped < 0.7
    assert "Dropout(p=0.5, inplace=False)" in repr(net) and "Linear(in_features=2" in repr(net)

    class Broken(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(vkml.ones(1))

    with pytest.raises(AttributeError, match="before Module.__init__\\(\\) call"):
        Broken()
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        nn.Dropout(1.5)
