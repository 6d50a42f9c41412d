"""PyTorch's questions about values that need the ``Tensor`` class: ``is_tensor``, ``is_floating_point``,
``result_type``.

They belong with the default dtype (defaults.py) and type promotion (dtypes.py), but those modules
load before vkml/tensor.py (autograd and the operators need them), so they cannot import ``Tensor``
at their top; this module loads after it.
"""

from __future__ import annotations

from ..ir import types as T
from ..ops import promotion
from ..tensor import Tensor


def is_tensor(obj) -> bool:
    """Whether ``obj`` is a vkml ``Tensor`` (``nn.Parameter`` included).

    >>> import vkml
    >>> vkml.is_tensor(vkml.ones(1)), vkml.is_tensor([1.0])
    (True, False)
    """
    return isinstance(obj, Tensor)


def result_type(tensor1, tensor2) -> T.DType:
    """The dtype an arithmetic op on ``tensor1`` and ``tensor2`` (tensors or Python numbers) gives, as
    ``torch.result_type``: tensors with dims outrank 0-dim tensors, which outrank Python scalars.

    >>> import vkml
    >>> vkml.result_type(vkml.tensor([1], dtype=vkml.uint8), 1000)
    vkml.uint8
    """
    dims, zero_dim, scalars = [], [], []
    for value in (tensor1, tensor2):
        if isinstance(value, Tensor):
            (dims if value.ndim else zero_dim).append(value.dtype)
        elif type(value) in (bool, int, float):
            scalars.append(value)
        else:
            raise TypeError(f"result_type(): expected a Tensor or a Python number, got {type(value).__name__}")
    return promotion.result_type(dims, zero_dim, scalars)


def is_floating_point(input) -> bool:
    """Whether ``input``'s dtype is a float dtype (float32, float16).

    >>> import vkml
    >>> vkml.is_floating_point(vkml.ones(1)), vkml.ones(1, dtype=vkml.int64).is_floating_point()
    (True, False)
    """
    if not is_tensor(input):
        raise TypeError(
            f"is_floating_point(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}"
        )
    return input.dtype.is_float
