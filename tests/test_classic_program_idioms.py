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
