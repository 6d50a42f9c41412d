"""``MultiheadAttention`` with ``torch.nn``'s names, arguments, parameter names and initialisation; and,
as ``torch.nn.attention``, ``sdpa_kernel`` and ``SDPBackend`` (vkml/frontend/sdpa_backends.py).

A torch ``MultiheadAttention``'s ``state_dict`` loads into vkml's of the same arguments and
gives torch's outputs within float32 rounding (tests/test_nn_attention.py).

>>> import vkml
>>> mha = MultiheadAttention(8, 2)
>>> out, weights = mha(vkml.ones(3, 1, 8), vkml.ones(5, 1, 8), vkml.ones(5, 1, 8))
>>> out.shape, weights.shape
((3, 1, 8), (1, 3, 5))
"""

from __future__ import annotations

import math

from ..frontend import creation
from ..frontend import operators as functions
from ..frontend import random as vkrandom
from ..frontend.sdpa_backends import WARN_FOR_UNFUSED_KERNELS, SDPBackend, sdpa_kernel  # noqa: F401  (torch.nn.attention's names)
from ..ir import types as T
from . import functional as F
from . import init
from .functional_attention import scaled_dot_product_attention
from .layers import Linear
from .module import Module, Parameter


class NonDynamicallyQuantizableLinear(Linear):
    """A ``Linear`` under the name torch gives ``MultiheadAttention.out_proj`` (same repr, same state_dict keys)."""


def _float_mask(mask, name: str, dtype):
    """torch's ``_canonical_mask``: a bool mask (True = masked out) becomes 0 / -inf of ``dtype``; a float one stays."""
    if mask is None:
        return None
    if mask.dtype is T.bool_:
        return functions.where(mask, float("-inf"), creation.zeros((), dtype=dtype, device=mask.device))
    if not mask.dtype.is_float:
        raise AssertionError(
            f"'MultiheadAttention': only bool and floating types of {name} are supported, got {mask.dtype.name}"
        )
    return mask


def _dropout(x, p: float):
    if p == 0.0:
        return x
    if p == 1.0:
        return x * 0.0
    keep = vkrandom.keep_mask(x.shape, p, x.device)
    return functions.where(keep, x * (1.0 / (1.0 - p)), 0.0)


class MultiheadAttention(Module):
    """Attention over ``num_heads`` heads of ``embed_dim // num_heads`` each, with input and output projections.

    Parameters as torch: ``in_proj_weight`` (3E, E) (or ``q_proj_weight``, ``k_proj_weight``,
    ``v_proj_weight`` when kdim or vdim differ from E), ``in_proj_bias`` (3E), ``bias_k`` and
    ``bias_v`` (1, 1, E) with ``add_bias_kv``, and ``out_proj`` (a Linear). Masks follow
    torch's MultiheadAttention convention (bool True = *not* attended, the opposite of
    ``scaled_dot_product_attention``); ``is_causal`` is a hint that ``attn_mask`` is causal and
    needs it. With ``need_weights=False`` the heads go through ``scaled_dot_product_attention``.

    >>> MultiheadAttention(4, 2).in_proj_weight.shape
    (12, 4)
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = False,
        device=None,
        dtype=None,
    ):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(
                f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and num_heads={num_heads} instead"
            )
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads, self.dropout, self.batch_first = num_heads, dropout, batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")

        def empty(*shape):
            return Parameter(creation.zeros(*shape, dtype=dtype, device=device))

        if not self._qkv_same_embed_dim:
            self.q_proj_weight = empty(embed_dim, embed_dim)
            self.k_proj_weight = empty(embed_dim, self.kdim)
            self.v_proj_weight = empty(embed_dim, self.vdim)
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = empty(3 * embed_dim, embed_dim)
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = empty(3 * embed_dim)
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)
        if add_bias_kv:
            self.bias_k, self.bias_v = empty(1, 1, embed_dim), empty(1, 1, embed_dim)
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        """torch's: xavier_uniform_ projections, zero biases, xavier_normal_ bias_k and bias_v."""
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def _projections(self, query, key, value):
        e = self.embed_dim
        bias = self.in_proj_bias
        b_q, b_k, b_v = (None,) * 3 if bias is None else (bias[:e], bias[e : 2 * e], bias[2 * e :])
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            w_q, w_k, w_v = w[:e], w[e : 2 * e], w[2 * e :]
        else:
            w_q, w_k, w_v = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        return F.linear(query, w_q, b_q), F.linear(key, w_k, b_k), F.linear(value, w_v, b_v)

    def _check_shapes(self, query, key, value, key_padding_mask, attn_mask) -> bool:
        """torch's ``_mha_shape_check``: whether the input is batched (3-D) or not (2-D)."""
        name = "MultiheadAttention"
        if query.ndim not in (2, 3):
            raise AssertionError(
                f"'{name}': query should be unbatched 2D or batched 3D tensor but received {query.ndim}-D"
            )
        batched = query.ndim == 3
        if key.ndim != query.ndim or value.ndim != query.ndim:
            raise AssertionError(
                f"'{name}': for {'batched' if batched else 'unbatched'} {query.ndim}-D query, expected key and value "
                f"to be {query.ndim}-D but found {key.ndim}-D and {value.ndim}-D tensors respectively"
            )
        if key_padding_mask is not None and key_padding_mask.ndim != query.ndim - 1:
            raise AssertionError(
                f"'{name}': for a {query.ndim}-D query, expected key_padding_mask to be {query.ndim - 1}-D "
                f"but found {key_padding_mask.ndim}-D tensor instead"
            )
        if attn_mask is not None and attn_mask.ndim not in (2, 3):
            raise RuntimeError(f"'{name}': attn_mask's dimension {attn_mask.ndim} is not supported")
        if query.shape[-1] != self.embed_dim:
            raise AssertionError(
                f"'{name}': was expecting embedding dimension of {self.embed_dim}, but got {query.shape[-1]}"
            )
        if key.shape[:-1] != value.shape[:-1]:
            raise AssertionError(
                f"'{name}': key's sequence and batch dims {key.shape[:-1]} do not match value's {value.shape[:-1]}"
            )
        return batched

    def forward(
        self,
        query,
        key,
        value,
        key_padding_mask=None,
        need_weights: bool = True,
        attn_mask=None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ):
        """(attn_output, attn_weights or None); shapes (L, N, E) and (N, L, S), or batch first, or unbatched."""
        batched = self._check_shapes(query, key, value, key_padding_mask, attn_mask)
        if is_causal and attn_mask is None:
            raise RuntimeError(
                "'MultiheadAttention': need attn_mask if specifying the is_causal hint. You may use the Transformer "
                "module method `generate_square_subsequent_mask` to create this mask."
            )
        if not batched:
            query, key, value = (functions.unsqueeze(t, 1) for t in (query, key, value))
            if key_padding_mask is not None:
                key_padding_mask = functions.unsqueeze(key_padding_mask, 0)
        elif self.batch_first:
            query, key, value = (functions.transpose(t, 0, 1) for t in (query, key, value))
        out, weights = self._attend(query, key, value, key_padding_mask, need_weights, attn_mask, average_attn_weights)
        if not batched:
            out = functions.squeeze(out, 1)
            if weights is not None:
                weights = functions.squeeze(weights, 0)
        elif self.batch_first:
            out = functions.transpose(out, 0, 1)
        return out, weights

    def _attend(self, query, key, value, key_padding_mask, need_weights, attn_mask, average_attn_weights):
        tgt_len, bsz, embed_dim = query.shape
        src_len = key.shape[0]
        heads, head_dim = self.num_heads, self.head_dim
        if key_padding_mask is not None and key_padding_mask.shape != (bsz, src_len):
            raise AssertionError(
                f"'MultiheadAttention': expecting key_padding_mask shape of {(bsz, src_len)}, "
                f"but got {key_padding_mask.shape}"
            )
        key_padding_mask = _float_mask(key_padding_mask, "key_padding_mask", query.dtype)
        attn_mask = _float_mask(attn_mask, "attn_mask", query.dtype)
        if attn_mask is not None:
            want = (tgt_len, src_len) if attn_mask.ndim == 2 else (bsz * heads, tgt_len, src_len)
            if attn_mask.shape != want:
                raise RuntimeError(
                    f"'MultiheadAttention': the shape of the {attn_mask.ndim}D attn_mask is {attn_mask.shape}, "
                    f"but should be {want}."
                )
            if attn_mask.ndim == 2:
                attn_mask = functions.unsqueeze(attn_mask, 0)
        q, k, v = self._projections(query, key, value)
        if self.bias_k is not None and self.bias_v is not None:
            k = functions.cat([k, functions.expand(self.bias_k, 1, bsz, embed_dim)], 0)
            v = functions.cat([v, functions.expand(self.bias_v, 1, bsz, embed_dim)], 0)
            if attn_mask is not None:
                attn_mask = functions.constant_pad_nd(attn_mask, (0, 1))
            if key_padding_mask is not None:
                key_padding_mask = functions.constant_pad_nd(key_padding_mask, (0, 1))
        q = functions.transpose(functions.reshape(q, tgt_len, bsz * heads, head_dim), 0, 1)
        k = functions.transpose(functions.reshape(k, k.shape[0], bsz * heads, head_dim), 0, 1)
        v = functions.transpose(functions.reshape(v, v.shape[0], bsz * heads, head_dim), 0, 1)
        if self.add_zero_attn:
            zeros = creation.zeros(bsz * heads, 1, head_dim, dtype=k.dtype, device=k.device)
            k, v = functions.cat([k, zeros], 1), functions.cat([v, zeros], 1)
            if attn_mask is not None:
                attn_mask = functions.constant_pad_nd(attn_mask, (0, 1))
            if key_padding_mask is not None:
                key_padding_mask = functions.constant_pad_nd(key_padding_mask, (0, 1))
        src_len = k.shape[1]
        if key_padding_mask is not None:
            # (N, S) -> (N·H, 1, S), head-major within each batch element as q, k and v above.
            spread = functions.expand(functions.reshape(key_padding_mask, bsz, 1, 1, src_len), bsz, heads, 1, src_len)
            spread = functions.reshape(spread, bsz * heads, 1, src_len)
            attn_mask = spread if attn_mask is None else attn_mask + spread
        dropout_p = self.dropout if self.training else 0.0
        if need_weights:
            scores = functions.matmul(q * math.sqrt(1.0 / head_dim), functions.transpose(k, -2, -1))
            if attn_mask is not None:
                scores = scores + attn_mask
            weights = _dropout(functions.softmax(scores, -1), dropout_p)
            out = functions.matmul(weights, v)  # (N·H, L, hd)
            out = functions.reshape(functions.transpose(out, 0, 1), tgt_len * bsz, embed_dim)
            weights = functions.reshape(weights, bsz, heads, tgt_len, src_len)
            if average_attn_weights:
                weights = functions.mean(weights, 1)
        else:
            if attn_mask is not None:
                rows = 1 if attn_mask.shape[0] == 1 else bsz
                attn_mask = functions.reshape(attn_mask, rows, -1, attn_mask.shape[1], src_len)  # L or 1 rows
            q4, k4, v4 = (functions.reshape(t, bsz, heads, t.shape[1], head_dim) for t in (q, k, v))
            out = scaled_dot_product_attention(q4, k4, v4, attn_mask, dropout_p)  # (N, H, L, hd)
            out = functions.reshape(functions.permute(out, 2, 0, 1, 3), tgt_len * bsz, embed_dim)
            weights = None
        out = self.out_proj(out)
        return functions.reshape(out, tgt_len, bsz, embed_dim), weights
