"""``grad_fn`` names and ``next_functions`` of a training loss graph, walked beside PyTorch's.

A composite op (mean, mse_loss, cross_entropy, linear, layer_norm, conv2d, ...) is recorded as the
ops vkml builds it from; its result's ``grad_fn`` shows PyTorch's node and edges
(vkml/frontend/autograd.py, ``shown_as``). docs/autograd.md lists what still differs.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vkml


def _walk(fn, leaves: dict, depth: int = 0) -> list:
    """Each node as (depth, name(), type name, repr's name); a leaf's AccumulateGrad by its parameter's name."""
    if fn is None:
        return [(depth, None)]
    name = fn.name()
    if name == "torch::autograd::AccumulateGrad":
        return [(depth, name, type(fn).__name__, leaves[id(fn.variable)])]
    assert repr(fn).startswith(f"<{name} object at ")
    rows = [(depth, name, type(fn).__name__)]
    for node, index in fn.next_functions:
        assert index == 0
        rows += _walk(node, leaves, depth + 1)
    return rows


def _models(lib):
    nn, F = lib.nn, lib.nn.functional
    lib.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(3, 5), nn.ReLU(), nn.Linear(5, 3))
    cnn = nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8, 3))
    embed, proj, norm = nn.Embedding(7, 4), nn.Linear(4, 4), nn.LayerNorm(4)
    head = nn.Linear(4, 7, bias=False)
    x, y = lib.ones(4, 3), lib.tensor([0, 1, 2, 1])
    img, tokens = lib.ones(2, 1, 6, 6), lib.tensor([[1, 2, 3], [4, 5, 6]])

    def transformer():
        # (a batched matmul and a division by a power of two keep vkml's nodes: docs/autograd.md)
        h = norm(proj(embed(tokens)))
        logits = head(F.gelu(h) * F.softmax(h, dim=-1) + h)
        return F.cross_entropy(logits.view(-1, 7), tokens.view(-1))

    losses = {
        "mse": lambda: F.mse_loss(mlp(x), lib.zeros(4, 3)),
        "cross_entropy": lambda: F.cross_entropy(mlp(x), y),
        "nll_log_softmax": lambda: F.nll_loss(F.log_softmax(mlp(x), dim=1), y),
        "mean_pow": lambda: (mlp(x) ** 2).mean() + mlp[0].weight.t().sum() + mlp(x).mean(0).sum(),
        "cnn": lambda: F.cross_entropy(cnn(img), y[:2]),
        "transformer": transformer,
    }
    modules = [mlp, cnn, embed, proj, norm, head]
    leaves = {id(p): f"{i}.{n}" for i, m in enumerate(modules) for n, p in m.named_parameters()}
    return losses, leaves


@pytest.mark.parametrize("case", ["mse", "cross_entropy", "nll_log_softmax", "mean_pow", "cnn", "transformer"])
def test_a_loss_graph_has_pytorchs_nodes_and_edges(case):
    walked = {}
    for lib in (torch, vkml):
        losses, leaves = _models(lib)
        walked[lib.__name__] = _walk(losses[case]().grad_fn, leaves)
    assert walked["vkml"] == walked["torch"]


def test_backward_through_a_renamed_composite_still_runs_its_own_ops():
    w = vkml.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    loss = vkml.nn.functional.mse_loss(w @ w, vkml.zeros(2, 2))
    assert loss.grad_fn.name() == "MseLossBackward0" and type(loss.grad_fn).__name__ == "MseLossBackward0"
    loss.backward()
    tw = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    torch.nn.functional.mse_loss(tw @ tw, torch.zeros(2, 2)).backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-6)
