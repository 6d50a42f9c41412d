"""``torch.nn.functional.multi_head_attention_forward``: what ``nn.MultiheadAttention`` computes, with its
parameters passed in (PyTorch's test_multihead_attention calls it directly, with ``static_k``/``static_v``).

Shapes, mask conventions (bool True = *not* attended; a float mask is added to the scores) and the
assertion messages are PyTorch's; the order of operations is PyTorch's too (the scores of
``need_weights=True`` are ``mask + (q·√(1/d))·kᵀ``), so results agree within float32 rounding.

>>> import vkml
>>> e, h = 4, 2
>>> w, b = vkml.ones(3 * e, e) * 0.1, vkml.zeros(3 * e)
>>> x = vkml.ones(3, 1, e)
>>> out, weights = multi_head_attention_forward(
...     x, x, x, e, h, w, b, None, None, False, 0.0, vkml.eye(e), vkml.zeros(e), training=False
... )
>>> out.shape, weights.shape
((3, 1, 4), (1, 3, 3))
"""

from __future__ import annotations

import math
import warnings

from ..frontend import creation
from ..frontend import operators as functions
from ..frontend import random as vkrandom
from ..ir import types as T
from . import functional as F
from .functional_attention import scaled_dot_product_attention

__all__ = ["multi_head_attention_forward"]

_OP = "'multi_head_attention_forward'"


def canonical_mask(mask, mask_name: str, other_type, other_name: str, target_type, check_other: bool = True):
    """PyTorch's ``F._canonical_mask``: a bool mask (True = masked out) as 0 / -inf of ``target_type``; a float
    mask as it is; warns when ``mask`` and the other mask have different dtypes."""
    if mask is None:
        return None
    if mask.dtype is not T.bool_ and not mask.dtype.is_float:
        raise AssertionError(f"{_OP}: only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype is not other_type:
        warnings.warn(
            f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same type for both instead.",
            stacklevel=3,
        )
    if mask.dtype is T.bool_:
        return functions.where(mask, float("-inf"), creation.zeros((), dtype=target_type, device=mask.device))
    return mask


def _shape_check(query, key, value, key_padding_mask, attn_mask, num_heads: int) -> bool:
    """PyTorch's ``_mha_shape_check``: whether the input is batched (3-D query) or not (2-D)."""
    if query.ndim == 3:
        kind, mask_dims = "batched (3-D)", 2
    elif query.ndim == 2:
        kind, mask_dims = "unbatched (2-D)", 1
    else:
        raise AssertionError(
            f"{_OP}: query should be unbatched 2D or batched 3D tensor but received {query.ndim}-D query tensor"
        )
    if key.ndim != query.ndim or value.ndim != query.ndim:
        raise AssertionError(
            f"{_OP}: For {kind} `query`, expected `key` and `value` to be {query.ndim}-D but found {key.ndim}-D and "
            f"{value.ndim}-D tensors respectively"
        )
    if key_padding_mask is not None and key_padding_mask.ndim != mask_dims:
        raise AssertionError(
            f"{_OP}: For {kind} `query`, expected `key_padding_mask` to be `None` or {mask_dims}-D but found "
            f"{key_padding_mask.ndim}-D tensor instead"
        )
    if attn_mask is not None:
        if attn_mask.ndim not in (2, 3):
            raise AssertionError(
                f"{_OP}: For {kind} `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found "
                f"{attn_mask.ndim}-D tensor instead"
            )
        if query.ndim == 2 and attn_mask.ndim == 3:
            expected = (num_heads, query.shape[0], key.shape[0])
            if tuple(attn_mask.shape) != expected:
                raise AssertionError(f"{_OP}: Expected `attn_mask` shape to be {expected} but got {attn_mask.shape}")
    return query.ndim == 3


def _projections(query, key, value, in_proj_weight, in_proj_bias, separate: tuple | None):
    e = query.shape[-1]
    b_q, b_k, b_v = (
        (None,) * 3 if in_proj_bias is None else (in_proj_bias[:e], in_proj_bias[e : 2 * e], in_proj_bias[2 * e :])
    )
    if separate is None:
        if in_proj_weight is None:
            raise AssertionError(f"{_OP}: use_separate_proj_weight is False but in_proj_weight is None")
        w_q, w_k, w_v = in_proj_weight[:e], in_proj_weight[e : 2 * e], in_proj_weight[2 * e :]
    else:
        for name, w in zip(("q", "k", "v"), separate):
            if w is None:
                raise AssertionError(f"{_OP}: use_separate_proj_weight is True but {name}_proj_weight is None")
        w_q, w_k, w_v = separate
    return F.linear(query, w_q, b_q), F.linear(key, w_k, b_k), F.linear(value, w_v, b_v)


def _heads(x, static, bsz: int, num_heads: int, head_dim: int, name: str):
    """(S, N, E) as (N·H, S, hd), head-major within each batch element; or ``static`` (already so)."""
    if static is None:
        return x.reshape(x.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    if static.shape[0] != bsz * num_heads:
        raise AssertionError(f"{_OP}: expecting {name}.size(0) of {bsz * num_heads}, but got {static.shape[0]}")
    if static.shape[2] != head_dim:
        raise AssertionError(f"{_OP}: expecting {name}.size(2) of {head_dim}, but got {static.shape[2]}")
    return static


def _pad_last(mask):
    return None if mask is None else functions.constant_pad_nd(mask, (0, 1))


def multi_head_attention_forward(
    query,
    key,
    value,
    embed_dim_to_check: int,
    num_heads: int,
    in_proj_weight,
    in_proj_bias,
    bias_k,
    bias_v,
    add_zero_attn: bool,
    dropout_p: float,
    out_proj_weight,
    out_proj_bias,
    training: bool = True,
    key_padding_mask=None,
    need_weights: bool = True,
    attn_mask=None,
    use_separate_proj_weight: bool = False,
    q_proj_weight=None,
    k_proj_weight=None,
    v_proj_weight=None,
    static_k=None,
    static_v=None,
    average_attn_weights: bool = True,
    is_causal: bool = False,
):
    """Multi-head attention of ``query`` (L, N, E) over ``key``/``value`` (S, N, E_k/E_v), or unbatched
    (L, E): ``(attn_output, attn_weights or None)`` as ``torch.nn.functional.multi_head_attention_forward``.

    ``static_k``/``static_v`` (N·H, S, E/H) replace the projected keys/values; ``attn_mask`` (L, S) or
    (N·H, L, S) and ``key_padding_mask`` (N, S) are bool (True = not attended) or float (added).
    """
    batched = _shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = canonical_mask(
        key_padding_mask, "key_padding_mask", None if attn_mask is None else attn_mask.dtype, "attn_mask", query.dtype
    )
    if is_causal and attn_mask is None:
        raise RuntimeError(
            f"{_OP}: Need attn_mask if specifying the is_causal hint. You may use the Transformer module method "
            "`generate_square_subsequent_mask` to create this mask."
        )
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the hint alone: scaled_dot_product_attention's is_causal does the masking
    else:
        attn_mask = canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, check_other=False)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"{_OP}: was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"{_OP}: embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(
                f"{_OP}: key's sequence and batch dims {key.shape[:2]} do not match value's {value.shape[:2]}"
            )
    elif tuple(key.shape) != tuple(value.shape):
        raise AssertionError(f"{_OP}: key shape {key.shape} does not match value shape {value.shape}")
    separate = (q_proj_weight, k_proj_weight, v_proj_weight) if use_separate_proj_weight else None
    q, k, v = _projections(query, key, value, in_proj_weight, in_proj_bias, separate)
    if attn_mask is not None:
        if attn_mask.ndim == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(
                    f"{_OP}: The shape of the 2D attn_mask is {attn_mask.shape}, but should be {(tgt_len, src_len)}."
                )
            attn_mask = attn_mask.unsqueeze(0)
        elif tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
            raise RuntimeError(
                f"{_OP}: The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                f"{(bsz * num_heads, tgt_len, src_len)}."
            )
    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError(f"{_OP}: bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError(f"{_OP}: bias cannot be added to static value.")
        k = functions.cat([k, bias_k.expand(1, bsz, embed_dim)], 0)
        v = functions.cat([v, bias_v.expand(1, bsz, embed_dim)], 0)
        attn_mask, key_padding_mask = _pad_last(attn_mask), _pad_last(key_padding_mask)
    elif bias_k is not None or bias_v is not None:
        raise AssertionError(f"{_OP}: bias_k and bias_v must both be given, or neither")
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = _heads(k, static_k, bsz, num_heads, head_dim, "static_k")
    v = _heads(v, static_v, bsz, num_heads, head_dim, "static_v")
    if add_zero_attn:
        zeros = creation.zeros(bsz * num_heads, 1, head_dim, dtype=k.dtype, device=k.device)
        k, v = functions.cat([k, zeros], 1), functions.cat([v, zeros], 1)
        attn_mask, key_padding_mask = _pad_last(attn_mask), _pad_last(key_padding_mask)
    src_len = k.shape[1]
    if key_padding_mask is not None:
        if key_padding_mask.shape[0] != bsz:
            raise AssertionError(
                f"{_OP}: Expected key_padded_mask.shape[0] to be {bsz}, but got {key_padding_mask.shape[0]}"
            )
        if key_padding_mask.shape[1] != src_len:
            raise AssertionError(
                f"{_OP}: Expected key_padded_mask.shape[1] to be {src_len}, but got {key_padding_mask.shape[1]}"
            )
        spread = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(bsz, num_heads, 1, src_len)
        spread = spread.reshape(bsz * num_heads, 1, src_len)
        attn_mask = spread if attn_mask is None else attn_mask + spread
    if not training:
        dropout_p = 0.0
    if need_weights:
        scores = functions.matmul(q * math.sqrt(1.0 / head_dim), k.transpose(-2, -1))
        if attn_mask is not None:
            scores = attn_mask + scores
        weights = functions.softmax(scores, -1)
        if dropout_p > 0.0:
            keep = vkrandom.keep_mask(weights.shape, dropout_p, weights.device)
            weights = functions.where(keep, weights * (1.0 / (1.0 - dropout_p)), 0.0)
        out = functions.matmul(weights, v).transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = F.linear(out, out_proj_weight, out_proj_bias)
        out = out.reshape(tgt_len, bsz, out.shape[-1])  # sizes spelled out: an empty batch infers no -1
        weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = functions.mean(weights, 1)
        if not batched:
            out, weights = out.squeeze(1), weights.squeeze(0)
        return out, weights
    if attn_mask is not None:
        if attn_mask.shape[0] == 1 and attn_mask.ndim == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.reshape(bsz, num_heads, attn_mask.shape[-2], src_len)
    q4, k4, v4 = (t.reshape(bsz, num_heads, t.shape[1], head_dim) for t in (q, k, v))
    out = scaled_dot_product_attention(q4, k4, v4, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = F.linear(out, out_proj_weight, out_proj_bias)
    out = out.reshape(tgt_len, bsz, out.shape[-1])  # sizes spelled out: an empty batch infers no -1
    return (out.squeeze(1) if not batched else out), None
