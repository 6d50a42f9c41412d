"""copy.deepcopy of tensors, parameters, modules and devices, as PyTorch programs use it
(a best-model snapshot, an EMA copy, a frozen target network)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

import vkml
import vkml.nn as nn


@pytest.fixture(params=["cpu", "vulkan"])
def dev(request, gpu):
    return vkml.device("cpu") if request.param == "cpu" else gpu


def test_a_copied_tensor_has_its_own_storage(dev):
    a = vkml.tensor([1.0, 2.0], device=dev)
    b = copy.deepcopy(a)
    b.add_(1.0)
    assert a.tolist() == [1.0, 2.0] and b.tolist() == [2.0, 3.0] and b.device is dev


@pytest.mark.parametrize("kind", ["tensor", "parameter"])
def test_requires_grad_grad_and_class_are_kept_as_pytorch_keeps_them(dev, kind):
    """A tensor's copy keeps its gradient; a Parameter's copy does not (PyTorch's two rules)."""
    if kind == "tensor":
        ours, theirs = vkml.ones(3, device=dev, requires_grad=True), torch.ones(3, requires_grad=True)
    else:
        ours, theirs = nn.Parameter(vkml.ones(3, device=dev)), torch.nn.Parameter(torch.ones(3))
    (ours * 2).sum().backward()
    (theirs * 2).sum().backward()
    ours_copy, theirs_copy = copy.deepcopy(ours), copy.deepcopy(theirs)
    assert (type(ours_copy) is nn.Parameter) == (type(theirs_copy) is torch.nn.Parameter) == (kind == "parameter")
    assert ours_copy.requires_grad == theirs_copy.requires_grad
    assert (ours_copy.grad is None) == (theirs_copy.grad is None)
    if theirs_copy.grad is not None:
        assert ours_copy.grad.tolist() == theirs_copy.grad.tolist() and ours_copy.grad is not ours.grad


def test_a_computed_tensor_refuses_as_pytorch_does():
    x = vkml.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(x * 2)
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(torch.ones(2, requires_grad=True) * 2)


def test_a_copied_module_trains_apart_from_the_original_and_keeps_ties(dev):
    vkml.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 3)).to(dev)
    tied = nn.Sequential(nn.Embedding(5, 3), nn.Linear(3, 5, bias=False)).to(dev)
    tied[1].weight = tied[0].weight
    snapshot = copy.deepcopy(model)
    tied_copy = copy.deepcopy(tied)
    assert tied_copy[1].weight is tied_copy[0].weight  # a tie stays a tie, as in PyTorch
    assert tied_copy[0].weight is not tied[0].weight
    before = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    x = vkml.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), device=dev)
    opt = vkml.optim.SGD(snapshot.parameters(), lr=0.1)
    snapshot(x).sum().backward()
    opt.step()
    after = model.state_dict()
    assert all(np.array_equal(before[k], after[k].numpy()) for k in before)  # the original did not move
    assert not np.array_equal(snapshot[0].weight.numpy(), before["0.weight"])


def test_devices_are_not_copied(dev):
    assert copy.deepcopy(dev) is dev and copy.copy(dev) is dev
