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

from ..frontend import creation
from ..frontend import operators as functions
from ..frontend.sdpa_backends import WARN_FOR_UNFUSED_KERNELS, SDPBackend, sdpa_kernel  # noqa: F401  (torch.nn.attention's names)
from . import init
from .functional_mha import canonical_mask, multi_head_attention_forward
from .layers import Linear
from .module import Module, Parameter


class NonDynamicallyQuantizableLinear(Linear):
    """A ``Linear`` under the name torch gives ``MultiheadAttention.out_proj`` (same repr, same state_dict keys)."""


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
        """(attn_output, attn_weights or None); shapes (L, N, E) and (N, L, S), or batch first, or unbatched
        (``F.multi_head_attention_forward`` with this module's parameters, as PyTorch's)."""
        batched = query.ndim == 3
        key_padding_mask = canonical_mask(
            key_padding_mask,
            "key_padding_mask",
            None if attn_mask is None else attn_mask.dtype,
            "attn_mask",
            query.dtype,
        )
        attn_mask = canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, check_other=False)
        if self.batch_first and batched:
            query, key, value = (functions.transpose(t, 0, 1) for t in (query, key, value))
        separate = not self._qkv_same_embed_dim
        out, weights = multi_head_attention_forward(
            query,
            key,
            value,
            self.embed_dim,
            self.num_heads,
            self.in_proj_weight,
            self.in_proj_bias,
            self.bias_k,
            self.bias_v,
            self.add_zero_attn,
            self.dropout,
            self.out_proj.weight,
            self.out_proj.bias,
            training=self.training,
            key_padding_mask=key_padding_mask,
            need_weights=need_weights,
            attn_mask=attn_mask,
            use_separate_proj_weight=separate,
            q_proj_weight=self.q_proj_weight,
            k_proj_weight=self.k_proj_weight,
            v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights,
            is_causal=is_causal,
        )
        if self.batch_first and batched:
            out = functions.transpose(out, 0, 1)
        return out, weights
