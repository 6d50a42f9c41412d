"""``vkml.nn.functional``: activations and normalisers with ``torch.nn.functional``'s names and defaults.

Each function calls a registered op (``vkml/ops/``) or a composite of ``vkml.functions``;
nothing here computes on its own.

>>> import vkml
>>> import vkml.nn.functional as F
>>> F.relu(vkml.tensor([-1.0, 2.0])).tolist()
[0.0, 2.0]
"""

from __future__ import annotations

from .. import functions
from ..ir import types as T

relu = functions.relu
softmax = functions.softmax
log_softmax = functions.log_softmax
sigmoid = functions.sigmoid
tanh = functions.tanh


def gelu(input, approximate: str = "none"):
    """x·Φ(x): the exact erf form (``approximate='none'``) or the tanh approximation (``'tanh'``).

    See docs/ops/gelu.md and docs/ops/gelu_tanh.md for precision and the ±inf divergence.

    >>> gelu(vkml.tensor([0.0, 1.0])).tolist()  # doctest: +SKIP
    [0.0, 0.8413447141647339]
    """
    if approximate == "none":
        return functions._elementwise("gelu", input)
    if approximate == "tanh":
        return functions._elementwise("gelu_tanh", input)
    raise ValueError(f"'gelu': approximate must be 'none' or 'tanh', got {approximate!r}")


def softplus(input, beta: float = 1.0, threshold: float = 20.0):
    """log(1 + exp(beta·x)) / beta, and x itself where beta·x > threshold (PyTorch's definition).

    The defaults (beta=1, threshold=20) are one registered op (docs/ops/softplus.md). Other
    values compose it in float32 — beta·x, the op, a division by beta, a select — and round
    once at the end for float16, as PyTorch's CPU kernel does; this adds up to two roundings.

    >>> softplus(vkml.tensor([0.0]), beta=2.0).tolist()  # doctest: +SKIP
    [0.3465735912322998]
    """
    if beta == 1 and threshold == 20:
        return functions._elementwise("softplus", input)
    if beta == 0:
        raise ValueError("'softplus': beta must be nonzero")
    node = functions._tensor_node("softplus", input)
    x = functions.cast(input, T.float32) if node.dtype is T.float16 else input
    scaled = x * float(beta)
    smooth = functions._elementwise("softplus", scaled)
    if beta != 1:
        smooth = smooth / float(beta)
    out = functions.where(scaled > float(threshold), x, smooth)
    return functions.cast(out, node.dtype) if node.dtype is T.float16 else out


def pad(input, pad, mode: str = "constant", value: float | None = None):
    """Pad with a constant (``mode='constant'`` only): ``pad`` lists (before, after) from the last dim back.

    A view, not a copy: the padding is index arithmetic in the kernel that reads it. Negative
    amounts crop. Same as ``vkml.constant_pad_nd`` (docs/ops/constant_pad_nd.md).

    >>> pad(vkml.tensor([[1.0]]), (1, 1)).tolist()  # doctest: +SKIP
    [[0.0, 1.0, 0.0]]
    """
    if mode != "constant":
        raise ValueError(f"'pad': only mode='constant' is supported, got {mode!r}")
    return functions.constant_pad_nd(input, pad, 0.0 if value is None else value)
