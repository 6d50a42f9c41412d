"""The gaps found by the third-party-style programs of tests/programs/ listed in tests/test_programs_n.py,
each against PyTorch.

imagenet_main: a 0-d CPU tensor (``best_acc1`` loaded with ``map_location="cpu"``) compared with an
accuracy on the GPU raised vkml's DeviceError; PyTorch treats a 0-d CPU tensor in an op on another
device's tensors as a number.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vkml


def test_a_cpu_scalar_tensor_joins_an_op_on_another_device_as_pytorch(gpu):
    values = np.array([1.5, -2.0, 3.0], np.float32)
    scale = np.float32(0.75)
    x = torch.tensor(values, requires_grad=True)
    s = torch.tensor(scale, requires_grad=True)
    expected = torch.where(x > s, x * s, s - x)
    expected.sum().backward()
    xv = vkml.tensor(values, device=gpu, requires_grad=True)
    sv = vkml.tensor(scale, requires_grad=True)  # on the CPU
    got = vkml.where(xv > sv, xv * sv, sv - xv)
    assert got.device == gpu
    got.sum().backward()
    np.testing.assert_array_equal(got.detach().cpu().numpy(), expected.detach().numpy())
    np.testing.assert_array_equal(xv.grad.cpu().numpy(), x.grad.numpy())
    assert sv.grad.device.type == "cpu"  # the scalar's gradient stays where the scalar lives, as PyTorch's
    np.testing.assert_allclose(sv.grad.numpy(), s.grad.numpy(), rtol=1e-6)
    # max() of a GPU 0-d accuracy and a loaded CPU one, and += of a CPU scalar into a GPU tensor
    best = max(vkml.tensor(40.0, device=gpu), vkml.tensor(25.0))
    assert best.item() == 40.0 and best.device == gpu
    total = vkml.zeros(2, device=gpu)
    total += vkml.tensor(2.5)
    np.testing.assert_array_equal(total.cpu().numpy(), [2.5, 2.5])


def test_a_cpu_tensor_of_more_dims_still_refuses_another_device(gpu):
    with pytest.raises(vkml.DeviceError, match="'add' operands are on different devices"):
        vkml.tensor([1.0, 2.0]) + vkml.tensor(3.0, device=gpu)
    with pytest.raises(vkml.DeviceError):
        vkml.tensor([1.0, 2.0], device=gpu) + vkml.tensor([3.0, 4.0])


def test_module_share_memory_marks_every_parameter_and_buffer_shared_as_pytorch():
    """mnist_hogwild: ``model.share_memory()`` before the workers start, then ``p.is_shared()``."""
    expected = torch.nn.BatchNorm1d(3)
    got = vkml.nn.BatchNorm1d(3)
    assert not any(p.is_shared() for p in got.parameters())
    assert expected.share_memory() is expected and got.share_memory() is got
    assert [t.is_shared() for t in got.parameters()] == [t.is_shared() for t in expected.parameters()] == [True] * 2
    assert [t.is_shared() for t in got.buffers()] == [t.is_shared() for t in expected.buffers()] == [True] * 3
