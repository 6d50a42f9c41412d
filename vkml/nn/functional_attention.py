"""``scaled_dot_product_attention`` with ``torch.nn.functional``'s name, arguments and masking rules.

Today a composite: ``softmax(q @ kᵀ · scale + mask) @ v`` with the score matrix materialised
between two matmuls (a fused kernel that keeps scores on chip is issue 18's goal, not done).

>>> import vkml
>>> q = vkml.ones(1, 2, 4)
>>> scaled_dot_product_attention(q, q, q).shape
(1, 2, 4)
"""

from __future__ import annotations

import math

import numpy as np

from ..frontend import creation
from ..frontend import operators as functions
from ..frontend import random as vkrandom
from ..ir import types as T


def _check_inputs(query, key, value, attn_mask, dropout_p: float, is_causal: bool, enable_gqa: bool) -> None:
    op = "scaled_dot_product_attention"
    if query.ndim < 2 or key.ndim < 2 or value.ndim < 2:
        raise RuntimeError(
            f"'{op}': expected query, key, and value to all be at least 2 dimensional, got query.dim: "
            f"{query.ndim} key.dim: {key.ndim} and value.dim: {value.ndim}"
        )
    if not (query.dtype.is_float and query.dtype == key.dtype == value.dtype):
        raise RuntimeError(
            f"'{op}': expected query, key, and value to have the same float dtype, got query.dtype: "
            f"{query.dtype.name}, key.dtype: {key.dtype.name}, and value.dtype: {value.dtype.name}"
        )
    if key.shape[-1] != query.shape[-1]:
        raise RuntimeError(
            f"'{op}': query and key must have the same last dim (embedding size), got shapes "
            f"{query.shape} and {key.shape}"
        )
    if key.shape[-2] != value.shape[-2]:
        raise RuntimeError(
            f"'{op}': key and value must have the same sequence length (dim -2), got shapes {key.shape} and {value.shape}"
        )
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"'{op}': dropout_p must be in [0, 1], got {dropout_p}")
    if is_causal and attn_mask is not None:
        raise RuntimeError(f"'{op}': explicit attn_mask should not be set when is_causal=True")
    if attn_mask is not None and attn_mask.dtype not in (T.bool_, T.float32, query.dtype):
        raise RuntimeError(
            f"'{op}': expected attn_mask dtype to be bool or float or to match query dtype, got attn_mask.dtype: "
            f"{attn_mask.dtype.name} and query.dtype: {query.dtype.name}"
        )
    if enable_gqa:
        if query.ndim < 3 or key.ndim < 3 or value.ndim < 3:
            raise RuntimeError(f"'{op}': enable_gqa=True needs a heads dim (-3) on query, key and value")
        heads = query.shape[-3]
        if heads % key.shape[-3] or heads % value.shape[-3]:
            raise RuntimeError(
                f"'{op}': number of heads in key ({key.shape[-3]}) and value ({value.shape[-3]}) must divide "
                f"the number of heads in query ({heads})"
            )

    def batch_of(t) -> tuple:  # with enable_gqa, key and value heads are repeated to query's count
        return t.shape[:-3] + (query.shape[-3],) if enable_gqa else t.shape[:-2]

    try:
        batch = np.broadcast_shapes(query.shape[:-2], batch_of(key), batch_of(value))
    except ValueError:
        raise RuntimeError(
            f"'{op}': batch dims of query {query.shape}, key {key.shape} and value {value.shape} do not broadcast"
        ) from None
    scores = (*batch, query.shape[-2], key.shape[-2])
    if attn_mask is not None and not _broadcasts_to(attn_mask.shape, scores):
        raise RuntimeError(f"'{op}': attn_mask of shape {attn_mask.shape} does not broadcast to the scores' {scores}")


def _broadcasts_to(shape: tuple, target: tuple) -> bool:
    try:
        return np.broadcast_shapes(shape, target) == tuple(target)
    except ValueError:
        return False


def _repeat_heads(x, heads: int):
    """Each head of ``x`` (dim -3) repeated ``heads // x.shape[-3]`` times in place: torch's repeat_interleave."""
    groups = heads // x.shape[-3]
    if groups == 1:
        return x
    lead, (h, s, e) = x.shape[:-3], x.shape[-3:]
    spread = functions.expand(functions.unsqueeze(x, -3), *lead, h, groups, s, e)
    return functions.reshape(spread, *lead, h * groups, s, e)


def causal_mask(target_len: int, source_len: int, device):
    """A (target_len, source_len) bool tensor, True where column <= row: torch's ``tril`` causal mask."""
    rows = functions.unsqueeze(creation.arange(target_len, device=device), 1)
    cols = functions.unsqueeze(creation.arange(source_len, device=device), 0)
    return cols <= rows


def scaled_dot_product_attention(
    query,
    key,
    value,
    attn_mask=None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
):
    """softmax(query @ keyᵀ · scale + mask) @ value over the last two dims, batch dims broadcast.

    ``attn_mask`` is bool (True = take part in attention, as PyTorch) or float (added to the
    scores); ``is_causal`` masks column > row (top-left aligned when L != S); ``scale``
    defaults to 1/sqrt(E); ``enable_gqa`` repeats each key/value head for its group of query
    heads. ``dropout_p`` > 0 drops attention weights with vkml's generator (as ``F.dropout``),
    whatever the module's training mode, as PyTorch. A row whose every score is -inf (all
    masked) gives zeros, as PyTorch's math path (its ``_safe_softmax``), not NaN.

    Today a composite: the (L, S) scores are written to memory between the two matmuls.

    Precision: two matmuls (each within matmul's bound, docs/ops/matmul.md), one rounding of the
    product by ``scale``, vkml's softmax (docs/ops/softmax.md); PyTorch scales q and k by
    sqrt(scale) each and may use a fused CPU kernel, so last bits differ.

    >>> q = vkml.ones(2, 3)
    >>> scaled_dot_product_attention(q, q, q, is_causal=True).shape  # doctest: +SKIP
    (2, 3)
    """
    _check_inputs(query, key, value, attn_mask, dropout_p, is_causal, enable_gqa)
    if enable_gqa:
        key = _repeat_heads(key, query.shape[-3])
        value = _repeat_heads(value, query.shape[-3])
    scale_factor = 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
    scores = functions.matmul(query, functions.transpose(key, -2, -1)) * scale_factor
    if is_causal:
        attn_mask = causal_mask(query.shape[-2], key.shape[-2], query.device)
    if attn_mask is not None and attn_mask.dtype is T.bool_:
        scores = functions.where(attn_mask, scores, float("-inf"))
    elif attn_mask is not None:  # a float32 mask on float16 scores is rounded to float16 first, as PyTorch
        scores = scores + functions.cast(attn_mask, scores.dtype)
    weights = functions.softmax(scores, -1)
    if attn_mask is not None:
        # PyTorch's _safe_softmax: a row with no finite score attends to nothing (zeros, not NaN).
        empty = functions.amax(scores, -1, keepdim=True) == float("-inf")
        weights = functions.where(empty, 0.0, weights)
    if dropout_p == 1.0:
        weights = weights * 0.0
    elif dropout_p > 0.0:  # F.dropout's rule, written here since functional.py re-exports this module
        keep = vkrandom.keep_mask(weights.shape, dropout_p, weights.device)
        weights = functions.where(keep, weights * (1.0 / (1.0 - dropout_p)), 0.0)
    return functions.matmul(weights, value)
