"""``linear`` recorded as one op (vkml/nn/functional.py ``_linear_recorded``): the same values and gradients,
bit for bit, as its three operators (transpose, matmul, add) recorded each, and PyTorch's within rounding."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vkml
import vkml.nn.functional as VF

# the rule checked here (tests/test_autograd.py asks every rule for a test)
GRAD_TESTED = {"linear"}


def _grads(device, x_np, w_np, b_np, which: tuple[bool, bool, bool], twice: bool = False) -> list:
    """The output and the gradients of ``(linear(x, w, b) * c).sum()`` (c: a fixed pattern) for the operands
    ``which`` marks as requiring grad; with ``twice``, also the gradient of the input's gradient's sum."""
    x, w, b = (vkml.tensor(a, device=device, requires_grad=r) for a, r in zip((x_np, w_np, b_np), which))
    out = VF.linear(x, w, b)
    c = vkml.tensor(np.linspace(-1, 1, out.numel(), dtype=np.float32).reshape(out.shape), device=device)
    leaves = [t for t in (x, w, b) if t.requires_grad]
    grads = vkml.autograd.grad((out * c).sum(), leaves, create_graph=twice)
    results = [out, *grads]
    if twice and which[0]:
        results += vkml.autograd.grad((grads[0] * grads[0]).sum(), [w])
    return [r.detach().numpy() for r in results]


@pytest.mark.parametrize(
    "which, rows",
    [
        ((True, True, True), 6),
        ((False, True, True), 6),
        ((True, False, True), 6),
        ((True, True, False), 6),
        ((False, False, True), 6),
        ((True, True, True), 4096),  # the weight's gradient sums 4096 products: matmul splits its k
    ],
)
def test_linear_as_one_op_has_its_operators_bits(gpu, monkeypatch, which, rows):
    rng = np.random.default_rng(7)
    x_np, w_np, b_np = (rng.standard_normal(s).astype(np.float32) for s in ((rows, 5), (4, 5), (4,)))
    one_op = _grads(gpu, x_np, w_np, b_np, which)
    monkeypatch.setattr(VF, "_linear_recorded", lambda *args: None)  # the three operators' records
    operators = _grads(gpu, x_np, w_np, b_np, which)
    for got, want in zip(one_op, operators, strict=True):
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    tx, tw, tb = (torch.tensor(a, requires_grad=r) for a, r in zip((x_np, w_np, b_np), which))
    out = torch.nn.functional.linear(tx, tw, tb)
    c = torch.linspace(-1, 1, out.numel()).reshape(out.shape)
    expected = [out, *torch.autograd.grad((out * c).sum(), [t for t in (tx, tw, tb) if t.requires_grad])]
    for got, want in zip(one_op, expected, strict=True):
        np.testing.assert_allclose(got, want.detach().numpy(), rtol=1e-4, atol=1e-4)


def test_linear_as_one_op_differentiates_twice_as_pytorch(gpu):
    rng = np.random.default_rng(8)
    x_np, w_np, b_np = (rng.standard_normal(s).astype(np.float32) for s in ((3, 4), (2, 4), (2,)))
    got = _grads(gpu, x_np, w_np, b_np, (True, True, True), twice=True)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x_np, w_np, b_np))
    out = torch.nn.functional.linear(tx, tw, tb)
    c = torch.linspace(-1, 1, out.numel()).reshape(out.shape)
    grads = torch.autograd.grad((out * c).sum(), [tx, tw, tb], create_graph=True)
    expected = [out, *grads, *torch.autograd.grad((grads[0] * grads[0]).sum(), [tw])]
    for g, want in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, want.detach().numpy(), rtol=1e-5, atol=1e-5)


def test_linear_as_one_op_builds_its_operators_nodes(gpu, monkeypatch):
    # the same graph structures, forward and gradients, so the same plans and kernels: no compile of its own
    monkeypatch.setenv("VKML_BACKWARD_RUNS", "lazy")  # the gradients' nodes as the rules built them
    x = vkml.ones(5, 3, device=gpu, requires_grad=True)
    layer = vkml.nn.Linear(3, 4).to(gpu)

    def out_and_grads():
        out = layer(x * 2.0)
        return out, vkml.autograd.grad((out * out).sum(), [x, layer.weight, layer.bias], retain_graph=True)

    one_op, one_op_grads = out_and_grads()
    monkeypatch.setattr(VF, "_linear_recorded", lambda *args: None)
    operators, operators_grads = out_and_grads()
    assert one_op.grad_fn.name() == operators.grad_fn.name() == "AddmmBackward0"
    assert one_op._ctx.name != operators._ctx.name  # recorded as linear, and as add
    assert one_op.node.skey == operators.node.skey
    assert [g.node.skey for g in one_op_grads] == [g.node.skey for g in operators_grads]


def test_linear_as_one_op_keeps_pytorchs_graph_and_version_check(gpu):
    x = vkml.ones(2, 3, device=gpu, requires_grad=True)
    layer = vkml.nn.Linear(3, 4).to(gpu)
    out = layer(x)
    assert type(out.grad_fn).__name__ == "AddmmBackward0"
    names = [type(n).__name__ if n is not None else None for n, _ in out.grad_fn.next_functions]
    assert names == ["AccumulateGrad", "AccumulateGrad", "TBackward0"]  # bias, input, TBackward0(weight)
    with vkml.no_grad():
        layer.weight.mul_(2.0)  # the weight the gradient reads changed: PyTorch's error at backward
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


@pytest.mark.parametrize("device", ["cpu", "vulkan"])
@pytest.mark.parametrize("x_shape, out_features", [((0, 8), 24), ((5, 0), 3), ((4, 6), 0)])
def test_an_empty_linear_and_its_gradients_match_torch(device, gpu, x_shape, out_features):
    # An empty product (no batch, no input or no output features) takes matmul's sum of products: the one-op
    # path's tiled kernel had read element 0 of an empty buffer in the weight's gradient (a transformer layer
    # given an empty batch, h/peerPT9)
    dev = gpu if device == "vulkan" else vkml.device("cpu")
    rng = np.random.default_rng(3)
    x_np = rng.standard_normal(x_shape, dtype=np.float32)
    w_np = rng.standard_normal((out_features, x_shape[1]), dtype=np.float32)
    b_np = rng.standard_normal(out_features, dtype=np.float32)
    results = []
    for m, place in ((torch, {}), (vkml, {"device": dev})):
        x, w, b = (m.tensor(a, requires_grad=True, **place) for a in (x_np, w_np, b_np))
        out = m.nn.functional.linear(x, w, b)
        parts = out.chunk(3, -1) if out_features % 3 == 0 and out_features else (out,)
        total = parts[0]
        for part in parts[1:]:
            total = total + part
        (total * 2.0).sum().backward()
        results.append([t.detach().numpy() for t in (out, x.grad, w.grad, b.grad)])
    for got, want in zip(results[1], results[0]):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    again = VF.linear(vkml.tensor(x_np, device=dev), vkml.tensor(w_np, device=dev), vkml.tensor(b_np, device=dev))
    assert again.numpy().shape == (x_shape[0], out_features)  # the process keeps working
