"""``cross_entropy`` of class indices recorded as one op (vkml/nn/functional_cross_entropy.py): the same nodes,
values and gradients, bit for bit, as its composite's seven recorded ops, on the CPU device and on Vulkan, and
PyTorch's within rounding; every other call takes the composite."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vkml
import vkml.nn.functional as VF
from vkml.nn import functional_cross_entropy

# the rule checked here (tests/test_autograd.py asks every rule for a test)
GRAD_TESTED = {"cross_entropy"}


@pytest.fixture(params=["cpu", "vulkan"])
def device(request, gpu):
    return vkml.device("cpu") if request.param == "cpu" else gpu


def _composite(monkeypatch) -> None:
    monkeypatch.setattr(functional_cross_entropy, "recorded", lambda *args: None)


def _loss_and_grad(device, x_np, y_np, twice: bool = False, **kwargs) -> list:
    """The loss of ``cross_entropy(x * 1.5, y, **kwargs)`` (logits computed by an op, as a model's are) and the
    gradient of its sum (weighted by a fixed pattern for reduction='none'); with ``twice``, also the gradient of
    that gradient's squares."""
    x = vkml.tensor(x_np, device=device, requires_grad=True)
    loss = VF.cross_entropy(x * 1.5, vkml.tensor(np.asarray(y_np), device=device), **kwargs)
    c = vkml.tensor(np.linspace(-1, 1, loss.numel(), dtype=np.float32).reshape(loss.shape), device=device)
    (grad,) = vkml.autograd.grad((loss * c).sum(), [x], create_graph=twice)
    results = [loss, grad]
    if twice:
        results += vkml.autograd.grad((grad * grad).sum(), [x])
    return [r.detach().numpy() for r in results]


def _torch_loss_and_grad(x_np, y_np, twice: bool = False, **kwargs) -> list:
    x = torch.tensor(x_np, requires_grad=True)
    loss = torch.nn.functional.cross_entropy(x * 1.5, torch.from_numpy(np.asarray(y_np)).long(), **kwargs)
    c = torch.linspace(-1, 1, loss.numel()).reshape(loss.shape)
    (grad,) = torch.autograd.grad((loss * c).sum(), [x], create_graph=twice)
    results = [loss, grad]
    if twice:
        results += torch.autograd.grad((grad * grad).sum(), [x])
    return [r.detach().numpy() for r in results]


# (cross_entropy's arguments, the targets' dtype, unbatched: one (C,) input and a 0-d target)
# (the default suite keeps four; the stress marker runs the rest)
CASES = [
    ({}, np.int64, False),
    pytest.param({"reduction": "sum"}, np.int64, False, marks=pytest.mark.stress),
    pytest.param({"reduction": "none"}, np.int64, False, marks=pytest.mark.stress),
    pytest.param({"ignore_index": 2}, np.int64, False, marks=pytest.mark.stress),
    ({"ignore_index": 2, "reduction": "none"}, np.int64, False),
    ({"ignore_index": 2, "reduction": "sum"}, np.uint8, False),
    pytest.param({}, np.int64, True, marks=pytest.mark.stress),
    ({"reduction": "none"}, np.int64, True),
]


@pytest.mark.parametrize("kwargs, target_dtype, unbatched", CASES)
def test_one_op_has_its_composites_bits(device, monkeypatch, kwargs, target_dtype, unbatched):
    rng = np.random.default_rng(3)
    x_np = (rng.standard_normal((7, 5)) * 3).astype(np.float32)
    y_np = rng.integers(0, 5, 7).astype(target_dtype)
    y_np[1] = 2  # a target ignore_index=2 ignores
    if unbatched:
        x_np, y_np = x_np[1], y_np[1]
    one_op = _loss_and_grad(device, x_np, y_np, **kwargs)
    _composite(monkeypatch)
    composite = _loss_and_grad(device, x_np, y_np, **kwargs)
    for got, want in zip(one_op, composite, strict=True):
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    for got, want in zip(one_op, _torch_loss_and_grad(x_np, y_np, **kwargs), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_one_op_differentiates_twice_as_pytorch(gpu):
    device = gpu
    rng = np.random.default_rng(4)
    x_np, y_np = rng.standard_normal((6, 4)).astype(np.float32), rng.integers(0, 4, 6)
    got = _loss_and_grad(device, x_np, y_np, twice=True)
    for g, want in zip(got, _torch_loss_and_grad(x_np, y_np, twice=True), strict=True):
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reduction, computed", [("mean", True), ("sum", True), ("none", True), ("mean", False)])
def test_one_op_builds_its_composites_nodes(gpu, monkeypatch, reduction, computed):
    # the same graph structures, forward and gradient, so the same plans and kernels: no compile of its own
    monkeypatch.setenv("VKML_BACKWARD_RUNS", "lazy")  # the gradient's nodes as the rules built them
    x = vkml.ones(5, 3, device=gpu, requires_grad=True)
    y = vkml.tensor([0, 2, 1, 1, 0], device=gpu)

    def loss_and_grad():
        loss = VF.cross_entropy(x * 2.0 if computed else x, y, reduction=reduction)  # logits of an op, or a leaf
        return loss, vkml.autograd.grad(loss.sum(), [x])[0]

    one_op = loss_and_grad()
    _composite(monkeypatch)
    composite = loss_and_grad()
    assert one_op[0]._ctx.name == "cross_entropy" and composite[0]._ctx.name != "cross_entropy"
    assert [t.node.skey for t in one_op] == [t.node.skey for t in composite]


def test_one_op_keeps_pytorchs_graph(gpu):
    x = vkml.ones(2, 3, device=gpu, requires_grad=True)
    loss = VF.cross_entropy(x, vkml.tensor([0, 2], device=gpu))
    assert loss._ctx.name == "cross_entropy"
    assert type(loss.grad_fn).__name__ == "NllLossBackward0"
    ((log_softmax, _),) = loss.grad_fn.next_functions
    assert type(log_softmax).__name__ == "LogSoftmaxBackward0"
    assert log_softmax.next_functions[0][0].variable is x
    loss.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()


@pytest.mark.parametrize(
    "call",
    [
        lambda x, y: VF.cross_entropy(x, y, weight=vkml.ones(3)),
        lambda x, y: VF.cross_entropy(x, y, label_smoothing=0.1),
        lambda x, y: VF.cross_entropy(x, x.detach().softmax(1)),  # probabilities
        lambda x, y: VF.cross_entropy(x.unsqueeze(2), y.unsqueeze(1)),  # (N, C, d1)
        lambda x, y: VF.cross_entropy(x.half(), y),
        lambda x, y: VF.cross_entropy(x.detach(), y),  # nothing to record
    ],
    ids=["weight", "label_smoothing", "probabilities", "spatial", "float16", "no_grad"],
)
def test_other_calls_take_the_composite(monkeypatch, call):
    taken = []
    one_op = functional_cross_entropy.recorded
    monkeypatch.setattr(functional_cross_entropy, "recorded", lambda *a: taken.append(one_op(*a)) or taken[-1])
    x = vkml.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), requires_grad=True)
    loss = call(x, vkml.tensor([0, 2]))
    assert all(t is None for t in taken)
    assert loss._ctx is None or loss._ctx.name != "cross_entropy"
    with vkml.no_grad():
        VF.cross_entropy(x, vkml.tensor([0, 2]))
    assert all(t is None for t in taken)


def test_one_op_raises_for_a_target_out_of_range_when_read(gpu):
    x = vkml.zeros(2, 3, device=gpu, requires_grad=True)
    loss = VF.cross_entropy(x * 1.0, vkml.tensor([0, 5], device=gpu).realize() * 1)
    assert loss._ctx.name == "cross_entropy"
    with pytest.raises(IndexError, match="Target 5 is out of bounds"):
        loss.item()
