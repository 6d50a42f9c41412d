"""``clip_grad_norm_`` and ``clip_grad_value_``: rescale or clamp gradients, as ``torch.nn.utils`` does.

The gradients are written in place (``mul_``, ``clamp_``), as PyTorch's are: a reference to
``p.grad`` taken before the call sees the clipped values.
The norms reduce in vkml's fixed order (DESIGN section 4), so they can differ from PyTorch's
in the last bits; the formula is PyTorch's: each gradient's norm, the norm of those norms,
then ``coef = min(max_norm / (total_norm + 1e-6), 1)``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable

from ...frontend.autograd import no_grad
from ...frontend.creation import tensor
from ...frontend.operators import HALF_PRECISION, amax, amin, cat, clamp
from ...frontend.statistics import vector_norm
from ...tensor import Tensor

_NONFINITE = (
    "The total norm of order {} for gradients from `parameters` is non-finite, so it cannot be clipped. "
    "To disable this error and scale the gradients by the non-finite norm anyway, set `error_if_nonfinite=False`"
)


def _as_list(parameters) -> list[Tensor]:
    # a complex parameter's gradient is its real pair's (docs/complex.md): its 2-norm is the complex one
    return [getattr(p, "_pair", p) for p in ([parameters] if isinstance(parameters, Tensor) else parameters)]


def _vector_norm(x: Tensor, p: float) -> Tensor:
    """``torch.linalg.vector_norm(x, p)`` over all elements."""
    if x.dtype in HALF_PRECISION:  # PyTorch's norm computes in float32 and rounds once (bfloat16 training)
        return vector_norm(x, p)
    if p == math.inf:
        return amax(x.abs())
    if p == -math.inf:
        return amin(x.abs())
    if p == 0:
        return (x != 0).to(x.dtype).sum()
    if p == 1:
        return x.abs().sum()
    if p == 2:
        return (x * x).sum().sqrt()
    return (x.abs() ** p).sum() ** (1.0 / p)


def get_total_norm(
    tensors: Tensor | Iterable[Tensor],
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """The ``norm_type`` norm of the norms of ``tensors`` (PyTorch's ``get_total_norm``).

    >>> import vkml
    >>> get_total_norm([vkml.tensor([3.0]), vkml.tensor([4.0])]).item()
    5.0
    """
    tensors = [t for t in _as_list(tensors) if t is not None]
    norm_type = float(norm_type)
    if not tensors:
        return tensor(0.0)
    device = tensors[0].device
    norms = [_vector_norm(t, norm_type).to(device).reshape(1) for t in tensors]
    total_norm = _vector_norm(cat(norms), norm_type)
    if error_if_nonfinite and not math.isfinite(total_norm.item()):
        raise RuntimeError(_NONFINITE.format(norm_type))
    return total_norm


def clip_grads_with_norm_(
    parameters: Tensor | Iterable[Tensor], max_norm: float, total_norm: Tensor, foreach: bool | None = None
) -> None:
    """Scale the gradients in place by ``min(max_norm / (total_norm + 1e-6), 1)`` (PyTorch's)."""
    params = [p for p in _as_list(parameters) if p.grad is not None]
    if not params:
        return
    coef = clamp(float(max_norm) / (total_norm + 1e-6), max=1.0)
    with no_grad():
        for p in params:
            p.grad.mul_(coef.to(p.grad.device).to(p.grad.dtype))


def clip_grad_norm_(
    parameters: Tensor | Iterable[Tensor],
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """Scale the gradients in place so that their joint ``norm_type`` norm is at most ``max_norm``; return
    that norm (before clipping), as PyTorch's.

    ``foreach`` is accepted for PyTorch's signature; vkml fuses the work either way.
    ``error_if_nonfinite=True`` reads the norm back (a submission) to check it.

    >>> import vkml
    >>> w = vkml.nn.Parameter(vkml.tensor([3.0, 4.0]))
    >>> w.grad = vkml.tensor([3.0, 4.0])
    >>> clip_grad_norm_([w], max_norm=1.0).item()
    5.0
    >>> [round(v, 4) for v in w.grad.tolist()]
    [0.6, 0.8]
    """
    params = [p for p in _as_list(parameters) if p.grad is not None]
    if not params:
        return tensor(0.0)
    total_norm = get_total_norm([p.grad for p in params], norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(params, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(
    parameters: Tensor | Iterable[Tensor],
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """PyTorch's deprecated spelling of ``clip_grad_norm_`` (it warns, then clips)."""
    warnings.warn(
        "`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
        FutureWarning,
        stacklevel=2,
    )
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float, foreach: bool | None = None) -> None:
    """Clamp every gradient into ``[-clip_value, clip_value]``.

    >>> import vkml
    >>> w = vkml.nn.Parameter(vkml.zeros(3)); w.grad = vkml.tensor([-2.0, 0.5, 9.0])
    >>> clip_grad_value_(w, 1.0); w.grad.tolist()
    [-1.0, 0.5, 1.0]
    """
    clip_value = float(clip_value)
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if not grads:  # PyTorch's grouped clamp of an empty list of gradients raises (foreach or not)
        raise RuntimeError(
            "Expected !nested_tensorlist[0].empty() to be true, but got false.  (Could this error message be "
            "improved?  If so, please report an enhancement request to PyTorch.)"
        )
    with no_grad():
        for g in grads:
            g.clamp_(min=-clip_value, max=clip_value)
