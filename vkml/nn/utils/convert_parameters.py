"""``parameters_to_vector`` and ``vector_to_parameters``: all parameters as one flat tensor and back."""

from __future__ import annotations

from collections.abc import Iterable

from ...frontend.operators import cat
from ...tensor import Tensor


def _check_same_device(params: list[Tensor]) -> None:
    devices = {p.device for p in params}
    if len(devices) > 1:
        raise TypeError("Found two parameters on different devices, this is currently not supported.")


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """Every parameter flattened and concatenated, in order (a new tensor, part of the autograd graph).

    >>> import vkml
    >>> parameters_to_vector([vkml.ones(2, 2), vkml.zeros(1)]).tolist()
    [1.0, 1.0, 1.0, 1.0, 0.0]
    """
    params = list(parameters)
    _check_same_device(params)
    return cat([p.reshape(-1) for p in params])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Give each parameter its slice of ``vec`` as new values (as PyTorch's ``param.data = ...``; same objects)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected vkml.Tensor, but got: {type(vec).__name__}")
    params = list(parameters)
    _check_same_device(params)
    pointer = 0
    for p in params:  # PyTorch's: vec[pointer:pointer + n].view_as(p); a longer vec leaves its tail unused
        n = p.numel()
        piece = vec[pointer : pointer + n]
        if piece.numel() != n:
            raise RuntimeError(f"shape '{list(p.shape)}' is invalid for input of size {piece.numel()}")
        p.node = piece.reshape(p.shape).detach().node
        pointer += n
