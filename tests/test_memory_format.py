"""PyTorch's memory formats: accepted, checked, and no change of values (vkml/frontend/memory_format.py)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

import vkml


def test_the_names_exist_as_pytorchs():
    for name in ("contiguous_format", "channels_last", "channels_last_3d", "preserve_format"):
        assert isinstance(getattr(vkml, name), vkml.memory_format) and isinstance(
            getattr(torch, name), torch.memory_format
        )
        assert repr(getattr(vkml, name)) == f"vkml.{name}"
        assert pickle.loads(pickle.dumps(getattr(vkml, name))) is getattr(vkml, name)


def test_conversions_keep_the_values_and_a_model_runs():
    data = np.random.default_rng(0).standard_normal((2, 3, 5, 5)).astype(np.float32)
    x = vkml.tensor(data)
    for converted in (
        x.to(memory_format=vkml.channels_last),
        x.contiguous(memory_format=vkml.channels_last),
        x.clone(memory_format=vkml.channels_last),
        x.to(vkml.float32, memory_format=vkml.preserve_format),
    ):
        assert converted.shape == x.shape and np.array_equal(converted.numpy(), data)
    conv = torch.nn.Conv2d(3, 4, 3)
    mine = vkml.nn.Conv2d(3, 4, 3)
    mine.load_state_dict({k: vkml.tensor(v.detach().numpy()) for k, v in conv.state_dict().items()})
    assert mine.to(memory_format=vkml.channels_last) is mine  # as PyTorch's: the module itself
    want = conv.to(memory_format=torch.channels_last)(torch.tensor(data).to(memory_format=torch.channels_last))
    np.testing.assert_allclose(mine(x.to(memory_format=vkml.channels_last)).numpy(), want.detach().numpy(), atol=1e-5)


@pytest.mark.parametrize(
    "call",
    [
        lambda lib, x: x.to(memory_format=lib.channels_last),
        lambda lib, x: x.contiguous(memory_format=lib.channels_last_3d),
        lambda lib, x: x.clone(memory_format=lib.channels_last),
    ],
)
def test_a_wrong_rank_raises_as_pytorch(call):
    with pytest.raises(RuntimeError, match="required rank") as theirs:
        call(torch, torch.ones(3, 4))
    with pytest.raises(RuntimeError) as mine:
        call(vkml, vkml.ones(3, 4))
    assert str(mine.value) == str(theirs.value)
    with pytest.raises(TypeError, match="memory_format"):
        vkml.ones(2).to(memory_format="channels_last")


def test_is_contiguous_answers_for_the_row_major_layout():
    # vkml keeps row-major order: the answer PyTorch gives for a row-major tensor of the same shape
    for shape in ((2, 3, 4, 4), (2, 1, 4, 4), (2, 3, 1, 1), (0, 3, 4, 4), (3, 4)):
        got = vkml.ones(*shape).is_contiguous(memory_format=vkml.channels_last)
        assert got == torch.ones(*shape).is_contiguous(memory_format=torch.channels_last), shape
    assert vkml.ones(2, 3, 4, 4).permute(0, 2, 3, 1).is_contiguous(memory_format=vkml.channels_last) is False
