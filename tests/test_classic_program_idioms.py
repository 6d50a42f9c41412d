"""Gaps the classic programs (tests/programs/annotated_transformer.py and its neighbours) found,
each checked against PyTorch's behaviour."""

from __future__ import annotations

import numpy as np
import torch

import vkml


def test_type_as_moves_to_the_other_tensors_device(gpu):
    """PyTorch's ``a.type_as(b)`` is ``a.type(b.type())``, and the type name carries the device: The
    Annotated Transformer's ``tgt_mask & subsequent_mask(n).type_as(tgt_mask.data)`` builds the
    mask on the host and meets a device mask. vkml cast the dtype only, so ``&`` raised DeviceError."""
    host = torch.triu(torch.ones(1, 3, 3), diagonal=1).type(torch.uint8) == 0
    on_host = vkml.triu(vkml.ones(1, 3, 3), diagonal=1).type(vkml.uint8) == 0
    device_mask = vkml.tensor([[True, True, False]], device=gpu)
    moved = on_host.type_as(device_mask)
    assert moved.device == device_mask.device and moved.dtype == vkml.bool
    expected = torch.tensor([[True, True, False]]) & host.type_as(torch.tensor([True]))
    np.testing.assert_array_equal((device_mask & moved).cpu().numpy(), expected.numpy())
    # ... and back: a device tensor typed as a host one comes to the host, cast, with its gradient
    x = vkml.tensor([1.5, -2.0], device=gpu, requires_grad=True)
    y = x.type_as(vkml.zeros(1, dtype=vkml.float32))
    assert y.device == vkml.device("cpu") and y is not x
    (y * vkml.tensor([3.0, 4.0])).sum().backward()
    np.testing.assert_array_equal(x.grad.cpu().numpy(), [3.0, 4.0])
    # same dtype and device: the tensor itself, as PyTorch returns it
    assert x.type_as(x) is x


def test_type_names_carry_the_device_as_pytorch(gpu):
    """``x.type('torch.cuda.FloatTensor')`` moves a host tensor to the GPU and a CPU type name moves a device
    tensor back, as PyTorch's; ``type()`` names the device kind; a plain dtype only casts."""
    host = vkml.tensor([1, 2])
    moved = host.type("torch.cuda.FloatTensor")
    assert moved.device == gpu and moved.dtype is vkml.float32 and moved.tolist() == [1.0, 2.0]
    assert moved.type() == "vkml.cuda.FloatTensor" and host.type() == "vkml.LongTensor"
    back = moved.type("torch.LongTensor")
    assert back.device == vkml.device("cpu") and back.dtype is vkml.int64 and back.tolist() == [1, 2]
    assert moved.type(moved.type()) is moved  # same dtype and device kind: the tensor itself
    assert host.type(vkml.cuda.FloatTensor).device == gpu
    assert moved.type(vkml.float16).device == gpu  # a dtype names no device
    assert vkml.tensor([1.5]).type(vkml.FloatTensor).device == vkml.device("cpu")
