"""vkml.optim against torch.optim, and the rule that a training step is one submission."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from optest import assert_same_bits

import vkml
import vkml.nn as nn
import vkml.nn.functional as VF
from vkml import debug

CPU = vkml.device("cpu")

OPTIMIZERS = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.05, "momentum": 0.8, "dampening": 0.3}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True}),
    ("Adam", {"lr": 0.01}),
    ("Adam", {"lr": 0.01, "betas": (0.8, 0.99), "weight_decay": 0.1, "amsgrad": True}),
    ("AdamW", {"lr": 0.01}),
    ("AdamW", {"lr": 0.02, "weight_decay": 0.3, "eps": 1e-6}),
]


def _problem(seed: int = 0):
    g = np.random.default_rng(seed)
    w = g.standard_normal((4, 3)).astype(np.float32)
    b = g.standard_normal(3).astype(np.float32)
    x = g.standard_normal((8, 4)).astype(np.float32)
    y = g.integers(0, 3, 8)
    return w, b, x, y


@pytest.mark.parametrize(("name", "kwargs"), OPTIMIZERS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(OPTIMIZERS)])
def test_steps_match_torch(name, kwargs):
    w0, b0, x, y = _problem()
    w, b = nn.Parameter(vkml.tensor(w0)), nn.Parameter(vkml.tensor(b0))
    wt, bt = torch.from_numpy(w0.copy()).requires_grad_(), torch.from_numpy(b0.copy()).requires_grad_()
    opt = getattr(vkml.optim, name)([w, b], **kwargs)
    opt_t = getattr(torch.optim, name)([wt, bt], **kwargs)
    for _ in range(4):
        opt.zero_grad()
        VF.cross_entropy(vkml.tensor(x) @ w + b, vkml.tensor(y)).backward()
        opt.step()
        opt_t.zero_grad()
        torch.nn.functional.cross_entropy(torch.from_numpy(x) @ wt + bt, torch.from_numpy(y)).backward()
        opt_t.step()
    np.testing.assert_allclose(w.numpy(), wt.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b.numpy(), bt.detach().numpy(), rtol=1e-5, atol=1e-6)


def _model(device):
    vkml.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 3)).to(device)


@pytest.mark.parametrize("runs, at_backward, at_step", [("split", 2, 1), ("end", 1, 1), ("lazy", 0, 1)])
@pytest.mark.parametrize("device_name", ["cpu", "gpu"])
def test_a_training_step_submits_where_backward_runs_says(device_name, gpu, monkeypatch, runs, at_backward, at_step):
    monkeypatch.setenv("VKML_BACKWARD_RUNS", runs)
    device = CPU if device_name == "cpu" else gpu
    net = _model(device)
    opt = vkml.optim.Adam(net.parameters(), lr=0.01)
    _, _, x, y = _problem()
    xs, ys = vkml.tensor(x, device=device), vkml.tensor(y, device=device)
    for step in range(3):
        debug.reset_counters()
        opt.zero_grad()
        loss = VF.cross_entropy(net(xs), ys)
        loss.backward()
        assert debug.counters()["submissions"] == at_backward, f"step {step}"
        opt.step()
        assert debug.counters()["submissions"] == at_backward + at_step, f"step {step}"
        loss.item()
        for p in net.parameters():
            p.grad.numpy()
        assert debug.counters()["submissions"] == at_backward + at_step  # loss and gradients were realized


def test_later_steps_compile_nothing(gpu):
    net = _model(gpu)
    opt = vkml.optim.AdamW(net.parameters(), lr=0.01)
    _, _, x, y = _problem()
    xs, ys = vkml.tensor(x, device=gpu), vkml.tensor(y, device=gpu)
    for _ in range(3):
        debug.reset_counters()
        VF.cross_entropy(net(xs), ys).backward()
        opt.step()
        opt.zero_grad()
    assert debug.counters()["kernels_compiled"] == 0  # new masks, step sizes and values are parameters


def test_training_gives_the_same_bits_on_cpu_and_vulkan(gpu):
    def train(device):
        net = _model(device)
        opt = vkml.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
        _, _, x, y = _problem()
        losses = []
        for _ in range(4):
            loss = VF.cross_entropy(net(vkml.tensor(x, device=device)), vkml.tensor(y, device=device))
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return np.array(losses, np.float32), net[0].weight.numpy()

    cpu_losses, cpu_w = train(CPU)
    gpu_losses, gpu_w = train(gpu)
    assert_same_bits(gpu_losses, cpu_losses, "losses")
    assert_same_bits(gpu_w, cpu_w, "weights after 4 steps")
    assert cpu_losses[-1] < cpu_losses[0]


def test_optimizer_bookkeeping():
    w = nn.Parameter(vkml.ones(2))
    unused = nn.Parameter(vkml.ones(2))
    opt = vkml.optim.SGD([{"params": [w]}, {"params": [unused], "lr": 0.5}], lr=0.25)
    assert [g["lr"] for g in opt.param_groups] == [0.25, 0.5]
    loss = opt.step(closure=lambda: (w * w).sum().backward() or (w * w).sum())
    assert loss.item() == 2.0
    assert w.tolist() == [0.5, 0.5] and unused.tolist() == [1.0, 1.0]  # no gradient: not updated
    node_before = w.node
    opt.zero_grad()
    assert w.grad is None
    opt.step()
    assert w.node is node_before
    opt.zero_grad(set_to_none=False)
    assert w.grad is None  # nothing to zero
    with pytest.raises(ValueError, match="empty parameter list"):
        vkml.optim.Adam([])
    vkml.optim.SGD([vkml.ones(2)], lr=0.1)  # as in PyTorch: a tensor that does not require grad is kept, never updated
    with pytest.raises(ValueError, match="^Nesterov momentum requires a momentum and zero dampening$"):
        vkml.optim.SGD([w], lr=0.1, nesterov=True)


@pytest.mark.parametrize("name", ["Adam", "AdamW", "SGD", "RMSprop"])
def test_a_state_tensor_held_earlier_sees_every_step(name):
    """PyTorch updates optimizer state in place: a reference taken after the first step sees the later ones."""
    kwargs = {"momentum": 0.9} if name in ("SGD", "RMSprop") else {}
    values = np.float32([[0.5, -1.0], [2.0, 0.25]])
    ours, theirs = vkml.nn.Parameter(vkml.tensor(values)), torch.nn.Parameter(torch.tensor(values))
    opts = [getattr(lib.optim, name)([p], lr=0.1, **kwargs) for lib, p in ((vkml, ours), (torch, theirs))]
    held = []
    for step in range(3):
        for p, opt in zip((ours, theirs), opts):
            opt.zero_grad()
            (p * p).sum().backward()
            opt.step()
        if step == 0:
            held = [(opts[0].state[ours][k], opts[1].state[theirs][k]) for k in opts[1].state[theirs] if k != "step"]
    assert held
    for mine, ref in held:
        np.testing.assert_allclose(mine.numpy(), ref.detach().numpy(), rtol=1e-6, atol=1e-7)
