"""Fixes found running pytorch/examples programs (tests/programs/vae.py, dcgan.py,
time_sequence_prediction.py, reinforcement_learning.py, siamese_network.py, mnist_rnn.py) under
vkml: each behaves as PyTorch's does (checked against the torch installed here)."""

from __future__ import annotations

import collections
import operator
import warnings

import numpy as np
import pytest
import torch

import vkml


@pytest.mark.parametrize("op", [operator.mul, operator.add, operator.sub, operator.truediv, operator.lt])
def test_numpy_scalar_on_the_left_defers_to_the_tensor(op):
    """np.float64(0.99) * t gave an ndarray of t's values (numpy's __mul__ read the tensor through
    __array__): the result left autograd and vkml. Tensor's __array_priority__ makes numpy defer."""
    x = vkml.tensor([1.0, 2.0], requires_grad=True)
    got = op(np.float64(0.5), x)
    expected = op(torch.tensor(np.float64(0.5)).item(), torch.tensor([1.0, 2.0]))
    assert isinstance(got, vkml.Tensor) and str(got.dtype) == str(expected.dtype).replace("torch", "vkml")
    np.testing.assert_array_equal(got.numpy(), expected.numpy())
    if got.dtype.is_float:
        got.sum().backward()
        assert x.grad is not None


def test_numpy_array_on_the_left_is_a_type_error():
    """numpy defers to the tensor, whose operators refuse an ndarray, as PyTorch's do."""
    with pytest.raises(TypeError):
        np.ones(2) * vkml.ones(2)


CASES = {
    "numpy float64": [np.float64(1.5)],
    "numpy float64 after a Python float": [2.0, np.float64(1.5)],
    "numpy float16 and int64": [np.int64(1), np.float16(2.0)],
    "numpy float32 and float64": [np.float32(1.5), np.float64(2.0)],
    "numpy int32 and a Python int": [np.int32(1), 2],
    "numpy int32 and a Python float": [np.int32(1), 2.0],
    "numpy uint8": [np.uint8(1), np.uint8(7)],
    "nested, float64 first": [[np.float64(1.0)], [1.0]],
    "float64 tensor and a Python float": "tensor",
    "numpy arrays": [np.array([1.5]), np.array([2.0])],
    "deque of numpy float64": collections.deque([np.float64(1.0), 2.0]),
}


@pytest.mark.parametrize("name", CASES)
def test_tensor_of_a_sequence_infers_the_dtype_as_pytorch(name):
    """tensor([np.float64(x)]) was float32 (numpy's float64 taken for Python floats), [np.uint8(1)]
    raised StopIteration; PyTorch promotes each element's own dtype."""
    data = CASES[name]
    if data == "tensor":
        got, expected = (
            vkml.tensor([vkml.tensor(1.0, dtype=vkml.float64), 2.0]),
            torch.tensor([torch.tensor(1.0).double(), 2.0]),
        )
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # PyTorch's warning that a list of arrays is slow
            got, expected = vkml.tensor(data), torch.tensor(data)
    assert str(got.dtype).removeprefix("vkml.") == str(expected.dtype).removeprefix("torch."), name
    np.testing.assert_array_equal(got.numpy(), expected.numpy())
