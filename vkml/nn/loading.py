"""What ``Module.load_state_dict`` reads and returns: checkpoint values from vkml, numpy or torch, and the key report.

torch is never imported here: a torch tensor is read through its own methods, so torch is
needed only by a program that passes torch tensors.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..frontend import creation
from ..ir import types as T
from ..tensor import Tensor


class _IncompatibleKeys(NamedTuple):
    """What ``load_state_dict`` returns: the keys it did not find and those it did not expect."""

    missing_keys: list[str]
    unexpected_keys: list[str]

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return f"_IncompatibleKeys(missing_keys={self.missing_keys}, unexpected_keys={self.unexpected_keys})"

    __str__ = __repr__


def checkpoint_values(value, key: str):
    """A checkpoint value as something with ``.shape`` that ``converted_like`` can convert: vkml tensor or numpy array.

    torch tensors are read through their own methods (detach, cpu, numpy), so torch is
    needed only by a caller who passes torch tensors; bfloat16, which numpy lacks, widens
    to float32 first.
    """
    if isinstance(value, Tensor):
        return value.detach()
    if type(value).__module__.split(".")[0] == "torch":
        value = value.detach().cpu()
        if str(value.dtype) == "torch.bfloat16":
            value = value.float()
        return value.numpy()
    if isinstance(value, (np.ndarray, np.generic)):
        return np.asarray(value)
    raise TypeError(
        f'While copying the parameter named "{key}", expected vkml.Tensor or Tensor-like object from checkpoint '
        f"but received {type(value)}"
    )


def converted_like(values, like: Tensor) -> Tensor:
    """``values`` (vkml tensor or numpy array) with ``like``'s dtype and device, as ``like.copy_(values)`` casts."""
    if isinstance(values, Tensor):
        return values.to(like.device).to(like.dtype)
    if values.dtype == np.float64 and like.dtype is not T.float64:  # narrow on the host, as the cast would
        values = values.astype(np.float32)  # (PyTorch converts double to float first, also toward half)
    return creation.tensor(values, device=like.device).to(like.dtype)
