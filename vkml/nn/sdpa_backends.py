"""``torch.nn.attention``'s backend choice for ``scaled_dot_product_attention``: ``SDPBackend`` and the
``sdpa_kernel`` context manager (re-exported by vkml/nn/attention.py, which is ``vkml.nn.attention``).

vkml has one attention implementation, its fused kernel, and runs it under any of FLASH_ATTENTION,
EFFICIENT_ATTENTION, MATH and CUDNN_ATTENTION with the same bits; a block that enables none of them
(only ERROR or OVERRIDEABLE) makes the call raise PyTorch's "No viable backend" RuntimeError.
``set_priority`` is accepted: with one implementation there is no order to choose.

>>> import vkml
>>> from vkml.nn.attention import SDPBackend, sdpa_kernel
>>> with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
...     vkml.backends.cuda.flash_sdp_enabled(), vkml.backends.cuda.math_sdp_enabled()
(True, False)
>>> vkml.backends.cuda.math_sdp_enabled()
True
"""

from __future__ import annotations

import contextlib
import enum

from ..frontend import compat


class SDPBackend(enum.Enum):
    """PyTorch's scaled_dot_product_attention backends, with its values."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


_FLAG = {
    SDPBackend.MATH: "math",
    SDPBackend.FLASH_ATTENTION: "flash",
    SDPBackend.EFFICIENT_ATTENTION: "mem_efficient",
    SDPBackend.CUDNN_ATTENTION: "cudnn",
}

# PyTorch warns when a fused kernel cannot run and it falls back to math; vkml never falls back by choice.
WARN_FOR_UNFUSED_KERNELS = False


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority: bool = False):
    """Enable exactly ``backends`` (one ``SDPBackend`` or a list) for scaled_dot_product_attention in the block."""
    assert isinstance(backends, SDPBackend | list), (
        f"Backend must be an instance of SDPBackend or a list of SDPBackend instances, got {type(backends).__name__}"
    )
    chosen = [backends] if isinstance(backends, SDPBackend) else list(backends)
    saved = dict(compat.sdp_enabled)
    compat.sdp_enabled.update(dict.fromkeys(compat.SDP_BACKENDS, False))
    compat.sdp_enabled.update((_FLAG[b], True) for b in chosen if b in _FLAG)
    try:
        yield
    finally:
        compat.sdp_enabled.update(saved)


__all__ = ["SDPBackend", "WARN_FOR_UNFUSED_KERNELS", "sdpa_kernel"]
