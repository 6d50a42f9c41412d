"""Which implementations ``scaled_dot_product_attention`` may use: ``torch.nn.attention.sdpa_kernel``,
``SDPBackend`` and ``torch.backends.cuda``'s ``enable_*_sdp`` switches, with PyTorch's names.

vkml has two implementations (docs/ops/scaled_dot_product_attention.md): the fused kernel, which never
writes the (L, S) scores (a flash-attention scheme), and the composite, which writes them between two
matmuls (PyTorch's math path, op for op). ``SDPBackend.MATH`` selects the composite;
``FLASH_ATTENTION``, ``EFFICIENT_ATTENTION`` and ``CUDNN_ATTENTION`` select the fused kernel (each is a
fused kernel in PyTorch; vkml has one, available on every device, as CUDA's are on a GPU). Where the
enabled backends leave no implementation that takes the call (only the fused kernel, for an input it
does not take, such as float64), the call raises PyTorch's ``RuntimeError: No viable backend for
scaled_dot_product_attention was found``.

>>> import vkml
>>> with sdpa_kernel(SDPBackend.MATH):
...     math_sdp_enabled(), flash_sdp_enabled()
(True, False)
>>> flash_sdp_enabled()
True
"""

from __future__ import annotations

import contextlib
import enum
import threading
import warnings
from collections.abc import Iterable

__all__ = [
    "SDPBackend",
    "WARN_FOR_UNFUSED_KERNELS",
    "sdpa_kernel",
    "enable_flash_sdp",
    "flash_sdp_enabled",
    "enable_mem_efficient_sdp",
    "mem_efficient_sdp_enabled",
    "enable_math_sdp",
    "math_sdp_enabled",
    "enable_cudnn_sdp",
    "cudnn_sdp_enabled",
    "sdp_kernel",
    "is_flash_attention_available",
]


WARN_FOR_UNFUSED_KERNELS = False  # torch.nn.attention's flag: PyTorch warns why a fused kernel was not taken


class SDPBackend(enum.IntEnum):
    """PyTorch's attention backends (the same members and values)."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


_FUSED = (SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION)
_SWITCHED = (SDPBackend.MATH, *_FUSED, SDPBackend.OVERRIDEABLE)
# Process-wide, as PyTorch's global context: the switches are settings, not per-thread state. A lock keeps
# a switch and a read in another thread from seeing half an update.
_lock = threading.Lock()
_enabled = dict.fromkeys(_SWITCHED, True)


def _set(backend: SDPBackend, enabled: bool) -> None:
    with _lock:
        _enabled[backend] = bool(enabled)


def enable_flash_sdp(enabled: bool) -> None:
    """``torch.backends.cuda.enable_flash_sdp``: allow (or not) the fused kernel under the flash name."""
    _set(SDPBackend.FLASH_ATTENTION, enabled)


def flash_sdp_enabled() -> bool:
    return _enabled[SDPBackend.FLASH_ATTENTION]


def enable_mem_efficient_sdp(enabled: bool) -> None:
    """``torch.backends.cuda.enable_mem_efficient_sdp``: the fused kernel under the memory-efficient name."""
    _set(SDPBackend.EFFICIENT_ATTENTION, enabled)


def mem_efficient_sdp_enabled() -> bool:
    return _enabled[SDPBackend.EFFICIENT_ATTENTION]


def enable_math_sdp(enabled: bool) -> None:
    """``torch.backends.cuda.enable_math_sdp``: allow (or not) the composite (scores in memory)."""
    _set(SDPBackend.MATH, enabled)


def math_sdp_enabled() -> bool:
    return _enabled[SDPBackend.MATH]


def enable_cudnn_sdp(enabled: bool) -> None:
    """``torch.backends.cuda.enable_cudnn_sdp``: the fused kernel under cuDNN's name."""
    _set(SDPBackend.CUDNN_ATTENTION, enabled)


def cudnn_sdp_enabled() -> bool:
    return _enabled[SDPBackend.CUDNN_ATTENTION]


def is_flash_attention_available() -> bool:
    """True: vkml's fused kernel runs on every device."""
    return True


NO_BACKEND = (
    "No viable backend for scaled_dot_product_attention was found. This is likely due to turning off both the math "
    "kernel and the fused kernels."
)


def allowed() -> tuple[bool, bool]:
    """(the fused kernel may run, the composite may run) under the current switches."""
    with _lock:
        return any(_enabled[b] for b in _FUSED), _enabled[SDPBackend.MATH]


@contextlib.contextmanager
def _only(backends: set) -> Iterable[None]:
    with _lock:
        before = dict(_enabled)
        for backend in _SWITCHED:
            _enabled[backend] = backend in backends
    try:
        yield
    finally:
        with _lock:
            _enabled.update(before)


def sdpa_kernel(backends, set_priority: bool = False):
    """``torch.nn.attention.sdpa_kernel``: inside the block only ``backends`` (one or a list of ``SDPBackend``)
    may compute ``scaled_dot_product_attention``. ``set_priority`` orders PyTorch's several fused kernels;
    vkml has one, so the order changes nothing.

    >>> import vkml
    >>> q = vkml.ones(1, 2, 4, 8)
    >>> with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]):
    ...     tuple(vkml.nn.functional.scaled_dot_product_attention(q, q, q).shape)
    (1, 2, 4, 8)
    """
    if isinstance(backends, SDPBackend):
        backends = [backends]
    if not isinstance(backends, (list, tuple, set)) or not all(isinstance(b, SDPBackend) for b in backends):
        got = type(backends).__name__
        raise AssertionError(f"Backend must be an instance of SDPBackend or a list of SDPBackend instances, got {got}")
    if not isinstance(set_priority, bool):
        raise TypeError(f"sdpa_kernel(): set_priority must be a bool, not {type(set_priority).__name__}")
    return _only(set(backends))


def sdp_kernel(
    enable_flash: bool = True, enable_math: bool = True, enable_mem_efficient: bool = True, enable_cudnn: bool = True
):
    """``torch.backends.cuda.sdp_kernel`` (deprecated there for ``sdpa_kernel``, which it calls)."""
    warnings.warn(
        "`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this context manager will be removed. "
        "Please see `torch.nn.attention.sdpa_kernel()` for the new context manager, with updated signature.",
        FutureWarning,
        stacklevel=2,
    )
    chosen = {
        SDPBackend.FLASH_ATTENTION: enable_flash,
        SDPBackend.MATH: enable_math,
        SDPBackend.EFFICIENT_ATTENTION: enable_mem_efficient,
        SDPBackend.CUDNN_ATTENTION: enable_cudnn,
    }
    return _only({backend for backend, on in chosen.items() if on})
