"""A small decoder language model under three attention biases, written the way Hugging Face transformers'
``modeling_bloom.py`` (ALiBi), its older ``modeling_mistral.py`` (a sliding window) and prefix-LM code
(UniLM, PaLM / T5's prefix objective) write them.

Idioms: BLOOM's ``build_alibi_tensor`` (``torch.tensor(2 ** (-(2 ** -(math.log2(n) - 3))))``, ``torch.pow``
of an ``int32`` ``arange``, the extra slopes for a head count that is no power of two, positions by
``(attention_mask.cumsum(dim=-1) - 1) * attention_mask``, ``reshape(batch * heads, 1, seq)``);
``_split_heads`` of a fused ``query_key_value`` by ``view(b, s, heads, 3, d)`` and ``fused[..., 0, :]``;
scores by ``alibi.baddbmm(batch1=query, batch2=key, beta=1.0, alpha=inv_norm_factor)``; a boolean causal mask
written into ``torch.empty(..., dtype=torch.bool)`` by slice assignment, or-ed with ``~(mask[:, None, None,
:].to(torch.bool))``, into ``torch.masked_fill(scores, mask, torch.finfo(dtype).min)``; ``F.softmax(...,
dtype=torch.float32).to(input_dtype)``; ``pretraining_tp`` slices of the dense weight through ``F.linear``
summed into ``torch.zeros_like``; ``dropout_add``; ``bloom_gelu_forward`` behind an ``autograd.Function``
(``GeLUFunction`` with ``ctx.save_for_backward``); ``word_embeddings_layernorm``. The sliding window
(``ATTN = "sliding"``): ``torch.full((t, t), fill_value=1)``, ``torch.tril(..., diagonal=0)``,
``torch.triu(..., diagonal=-window)``, ``torch.log(mask).to(dtype)`` for the ``-inf`` band, plus the padding
mask expanded by ``masked_fill(inverted.to(torch.bool), finfo.min)``, into SDPA's float ``attn_mask`` under
``with sdpa_kernel(SDPBackend.MATH)``. The prefix LM (``ATTN = "prefix"``): a causal
``torch.ones(..., dtype=torch.bool).tril()`` or-ed with ``arange(n)[None, None, :] < prefix_len[:, None,
None]``, SDPA with the boolean ``attn_mask`` under the deprecated ``torch.backends.cuda.sdp_kernel(
enable_flash=False, enable_math=True, enable_mem_efficient=False)``, labels -100 over each prefix.
"""

from __future__ import annotations

import math
import warnings

from shim import F, nn, optim, torch

ATTN = "alibi"  # or "sliding", "prefix"
PRETRAINING_TP = 1
DROPOUT = 0.1
VOCAB, HIDDEN, HEADS, LAYERS, MAX_LEN, WINDOW = 24, 18, 3, 2, 16, 3
PAD = 0


def build_alibi_tensor(attention_mask, num_heads: int, dtype):
    batch_size, seq_length = attention_mask.shape
    closest_power_of_2 = 2 ** math.floor(math.log2(num_heads))
    base = torch.tensor(
        2 ** (-(2 ** -(math.log2(closest_power_of_2) - 3))), device=attention_mask.device, dtype=torch.float32
    )
    powers = torch.arange(1, 1 + closest_power_of_2, device=attention_mask.device, dtype=torch.int32)
    slopes = torch.pow(base, powers)

    if closest_power_of_2 != num_heads:
        extra_base = torch.tensor(
            2 ** (-(2 ** -(math.log2(2 * closest_power_of_2) - 3))), device=attention_mask.device, dtype=torch.float32
        )
        num_remaining_heads = min(closest_power_of_2, num_heads - closest_power_of_2)
        extra_powers = torch.arange(1, 1 + 2 * num_remaining_heads, 2, device=attention_mask.device, dtype=torch.int32)
        slopes = torch.cat([slopes, torch.pow(extra_base, extra_powers)], dim=0)

    # Note: alibi will added to the attention bias that will be applied to the query, key product of attention
    # => therefore alibi will have to be of shape (batch_size, num_heads, query_length, key_length)
    # => here we set (batch_size=1, num_heads=num_heads, query_length=1, key_length=max_length)
    # => the query_length dimension will then be broadcasted correctly
    # This is more or less identical to T5's relative position bias:
    # https://github.com/huggingface/transformers/blob/f681437203baa7671de3174b0fa583c349d9d5e1/src/transformers/models/t5/modeling_t5.py#L527
    arange_tensor = ((attention_mask.cumsum(dim=-1) - 1) * attention_mask)[:, None, :]
    alibi = slopes[..., None] * arange_tensor
    return alibi.reshape(batch_size * num_heads, 1, seq_length).to(dtype)


def dropout_add(x, residual, prob: float, training: bool):
    out = F.dropout(x, p=prob, training=training)
    out = residual + out
    return out


def bloom_gelu_forward(x):
    return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))


def bloom_gelu_back(g, x):
    x = x[0]  # x is a tuple of 1 element, needs to unpack it first
    tanh_out = torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x))
    # sqrt(2/pi) * 3 * 0.044715 -> 0.1070322243
    ff = 0.5 * x * ((1 - tanh_out * tanh_out) * (0.79788456 + 0.1070322243 * x * x)) + 0.5 * (1 + tanh_out)
    return ff * g


class GeLUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return bloom_gelu_forward(input)

    @staticmethod
    def backward(ctx, grad_output):
        input = ctx.saved_tensors
        tmp = bloom_gelu_back(grad_output, input)
        return tmp


class BloomGelu(nn.Module):
    def forward(self, x):
        if self.training:
            return GeLUFunction.apply(x)
        return bloom_gelu_forward(x)


def _make_causal_mask(input_ids_shape, device, past_key_values_length: int):
    batch_size, target_length = input_ids_shape
    mask = torch.empty((target_length, target_length + past_key_values_length), dtype=torch.bool, device=device)
    # ONNX doesn't support `torch.Tensor.triu` properly, thus we use this workaround
    seq_ids = torch.arange(target_length, device=device)
    mask[:, past_key_values_length:] = seq_ids[:, None] < seq_ids[None, :]
    if past_key_values_length > 0:
        mask[:, :past_key_values_length] = False
    expanded_mask = mask[None, None, :, :].expand(batch_size, 1, target_length, target_length + past_key_values_length)
    return expanded_mask


def _expand_mask(mask, tgt_length: int):
    batch_size, src_length = mask.shape
    tgt_length = tgt_length if tgt_length is not None else src_length
    expanded_mask = ~(mask[:, None, None, :].to(torch.bool))
    return expanded_mask.expand(batch_size, 1, tgt_length, src_length)


def _make_sliding_window_causal_mask(input_ids_shape, dtype, device, past_key_values_length=0, sliding_window=4096):
    """
    Make causal mask used for sliding window attention
    """
    bsz, tgt_len = input_ids_shape
    tensor = torch.full((tgt_len, tgt_len), fill_value=1, device=device)
    mask = torch.tril(tensor, diagonal=0)
    # make the mask banded to account for sliding window
    mask = torch.triu(mask, diagonal=-sliding_window)
    mask = torch.log(mask).to(dtype)
    if past_key_values_length > 0:
        mask = torch.cat([torch.zeros(tgt_len, past_key_values_length, dtype=dtype, device=device), mask], dim=-1)
    return mask[None, None, :, :].expand(bsz, 1, tgt_len, tgt_len + past_key_values_length)


def _expand_float_mask(mask, dtype, tgt_len=None):
    bsz, src_len = mask.size()
    tgt_len = tgt_len if tgt_len is not None else src_len
    expanded_mask = mask[:, None, None, :].expand(bsz, 1, tgt_len, src_len).to(dtype)
    inverted_mask = 1.0 - expanded_mask
    return inverted_mask.masked_fill(inverted_mask.to(torch.bool), torch.finfo(dtype).min)


def _make_prefix_lm_mask(prefix_lengths, seq_length, device):
    causal = torch.ones((seq_length, seq_length), dtype=torch.bool, device=device).tril()
    bidirectional = torch.arange(seq_length, device=device)[None, None, :] < prefix_lengths[:, None, None]
    return (causal[None, :, :] | bidirectional)[:, None, :, :]


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.pretraining_tp = PRETRAINING_TP
        self.slow_but_exact = True
        self.hidden_size = HIDDEN
        self.num_heads = HEADS
        self.head_dim = self.hidden_size // self.num_heads
        self.split_size = self.hidden_size
        self.hidden_dropout = DROPOUT
        # Layer-wise attention scaling
        self.inv_norm_factor = 1.0 / math.sqrt(self.head_dim)
        self.beta = 1.0
        self.query_key_value = nn.Linear(self.hidden_size, 3 * self.hidden_size, bias=True)
        self.dense = nn.Linear(self.hidden_size, self.hidden_size)
        self.attention_dropout = nn.Dropout(DROPOUT)

    def _split_heads(self, fused_qkv):
        batch_size, seq_length, three_times_hidden_size = fused_qkv.shape
        fused_qkv = fused_qkv.view(batch_size, seq_length, self.num_heads, 3, self.head_dim)
        return fused_qkv[..., 0, :], fused_qkv[..., 1, :], fused_qkv[..., 2, :]

    def _merge_heads(self, x):
        # What we want to achieve is:
        # batch_size * num_heads, seq_length, head_dim -> batch_size, seq_length, num_heads * head_dim
        batch_size_and_num_heads, seq_length, _ = x.shape
        batch_size = batch_size_and_num_heads // self.num_heads
        # First view to decompose the batch size
        # batch_size * num_heads, seq_length, head_dim -> batch_size, num_heads, seq_length, head_dim
        x = x.view(batch_size, self.num_heads, seq_length, self.head_dim)
        # batch_size, num_heads, seq_length, head_dim -> batch_size, seq_length, num_heads, head_dim
        x = x.permute(0, 2, 1, 3)
        # batch_size, seq_length, num_heads, head_dim -> batch_size, seq_length, num_heads * head_dim
        return x.reshape(batch_size, seq_length, self.num_heads * self.head_dim)

    def _dense(self, context_layer):
        if self.pretraining_tp > 1 and self.slow_but_exact:
            slices = self.hidden_size / self.pretraining_tp
            output_tensor = torch.zeros_like(context_layer)
            for i in range(self.pretraining_tp):
                output_tensor = output_tensor + F.linear(
                    context_layer[:, :, int(i * slices) : int((i + 1) * slices)],
                    self.dense.weight[:, int(i * slices) : int((i + 1) * slices)],
                )
            return output_tensor + self.dense.bias
        return self.dense(context_layer)

    def forward(self, hidden_states, residual, alibi, attention_mask):
        fused_qkv = self.query_key_value(hidden_states)  # [batch_size, seq_length, 3 x hidden_size]
        # 3 x [batch_size, seq_length, num_heads, head_dim]
        (query_layer, key_layer, value_layer) = self._split_heads(fused_qkv)
        batch_size, q_length, _, _ = query_layer.shape
        if ATTN == "alibi":
            query_layer = query_layer.transpose(1, 2).reshape(batch_size * self.num_heads, q_length, self.head_dim)
            key_layer = key_layer.permute(0, 2, 3, 1).reshape(batch_size * self.num_heads, self.head_dim, q_length)
            value_layer = value_layer.transpose(1, 2).reshape(batch_size * self.num_heads, q_length, self.head_dim)
            kv_length = key_layer.shape[-1]
            # [batch_size * num_heads, q_length, kv_length]
            # we use `torch.Tensor.baddbmm` instead of `torch.baddbmm` as the latter isn't supported by TorchScript v1.11
            matmul_result = alibi.baddbmm(
                batch1=query_layer, batch2=key_layer, beta=self.beta, alpha=self.inv_norm_factor
            )
            # change view to [batch_size, num_heads, q_length, kv_length]
            attention_scores = matmul_result.view(batch_size, self.num_heads, q_length, kv_length)
            # cast attention scores to fp32, compute scaled softmax and cast back to initial dtype - [batch_size, num_heads, q_length, kv_length]
            input_dtype = attention_scores.dtype
            # `float16` has a minimum value of -65504.0, whereas `bfloat16` and `float32` have a minimum value of `-3.4e+38`
            if input_dtype == torch.float16:
                attention_scores = attention_scores.to(torch.float)
            attn_weights = torch.masked_fill(attention_scores, attention_mask, torch.finfo(attention_scores.dtype).min)
            attention_probs = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(input_dtype)
            attention_probs = self.attention_dropout(attention_probs)
            attention_probs_reshaped = attention_probs.view(batch_size * self.num_heads, q_length, kv_length)
            context_layer = torch.bmm(attention_probs_reshaped, value_layer)
            context_layer = self._merge_heads(context_layer)
        else:
            query_layer, key_layer, value_layer = (x.transpose(1, 2) for x in (query_layer, key_layer, value_layer))
            dropout_p = self.attention_dropout.p if self.training else 0.0
            if ATTN == "sliding":
                with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
                    context_layer = F.scaled_dot_product_attention(
                        query_layer, key_layer, value_layer, attn_mask=attention_mask, dropout_p=dropout_p
                    )
            else:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", FutureWarning)  # sdp_kernel is deprecated for sdpa_kernel
                    with torch.backends.cuda.sdp_kernel(
                        enable_flash=False, enable_math=True, enable_mem_efficient=False
                    ):
                        context_layer = F.scaled_dot_product_attention(
                            query_layer, key_layer, value_layer, attn_mask=attention_mask, dropout_p=dropout_p
                        )
            context_layer = context_layer.transpose(1, 2).reshape(batch_size, q_length, self.hidden_size)
        output_tensor = self._dense(context_layer)
        output_tensor = dropout_add(output_tensor, residual, self.hidden_dropout, self.training)
        return output_tensor


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.dense_h_to_4h = nn.Linear(HIDDEN, 4 * HIDDEN)
        self.gelu_impl = BloomGelu()
        self.dense_4h_to_h = nn.Linear(4 * HIDDEN, HIDDEN)
        self.hidden_dropout = DROPOUT

    def forward(self, hidden_states, residual):
        hidden_states = self.gelu_impl(self.dense_h_to_4h(hidden_states))
        intermediate_output = self.dense_4h_to_h(hidden_states)
        return dropout_add(intermediate_output, residual, self.hidden_dropout, self.training)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.input_layernorm = nn.LayerNorm(HIDDEN, eps=1e-5)
        self.self_attention = Attention()
        self.post_attention_layernorm = nn.LayerNorm(HIDDEN, eps=1e-5)
        self.mlp = MLP()

    def forward(self, hidden_states, alibi, attention_mask):
        layernorm_output = self.input_layernorm(hidden_states)
        attention_output = self.self_attention(layernorm_output, hidden_states, alibi, attention_mask)
        layernorm_output = self.post_attention_layernorm(attention_output)
        return self.mlp(layernorm_output, attention_output)


class DecoderLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.word_embeddings = nn.Embedding(VOCAB, HIDDEN)
        self.word_embeddings_layernorm = nn.LayerNorm(HIDDEN, eps=1e-5)
        # ALiBi needs no positions; the other two learn them
        self.position_embeddings = nn.Embedding(MAX_LEN, HIDDEN) if ATTN != "alibi" else None
        self.h = nn.ModuleList([Block() for _ in range(LAYERS)])
        self.ln_f = nn.LayerNorm(HIDDEN, eps=1e-5)
        self.lm_head = nn.Linear(HIDDEN, VOCAB, bias=False)
        self.lm_head.weight = self.word_embeddings.weight
        self.apply(self._init_weights)

    def _init_weights(self, module):
        """Initialize the weights."""
        if isinstance(module, nn.Linear):
            module.weight.data.normal_(mean=0.0, std=0.02)
            if module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.Embedding):
            module.weight.data.normal_(mean=0.0, std=0.02)
        elif isinstance(module, nn.LayerNorm):
            module.bias.data.zero_()
            module.weight.data.fill_(1.0)

    def _prepare_attn_mask(self, attention_mask, input_shape, prefix_lengths, dtype):
        device = attention_mask.device
        _, src_length = input_shape
        if ATTN == "alibi":
            combined_attention_mask = None
            if src_length > 1:
                combined_attention_mask = _make_causal_mask(input_shape, device=device, past_key_values_length=0)
            # [batch_size, seq_length] -> [batch_size, 1, tgt_length, src_length]
            expanded_attn_mask = _expand_mask(attention_mask, tgt_length=src_length)
            return (
                expanded_attn_mask if combined_attention_mask is None else expanded_attn_mask | combined_attention_mask
            )
        if ATTN == "sliding":
            causal = _make_sliding_window_causal_mask(input_shape, dtype, device, sliding_window=WINDOW)
            return _expand_float_mask(attention_mask, dtype, tgt_len=src_length) + causal
        return _make_prefix_lm_mask(prefix_lengths, src_length, device)

    def forward(self, input_ids, attention_mask, prefix_lengths=None, labels=None):
        inputs_embeds = self.word_embeddings(input_ids)
        if self.position_embeddings is not None:
            inputs_embeds = inputs_embeds + self.position_embeddings(torch.arange(input_ids.shape[1]))
        hidden_states = self.word_embeddings_layernorm(inputs_embeds)
        alibi = build_alibi_tensor(attention_mask, HEADS, dtype=hidden_states.dtype)
        causal_mask = self._prepare_attn_mask(attention_mask, input_ids.shape, prefix_lengths, hidden_states.dtype)
        for block in self.h:
            hidden_states = block(hidden_states, alibi, causal_mask)
        logits = self.lm_head(self.ln_f(hidden_states))
        loss = None
        if labels is not None:
            shift_logits = logits[..., :-1, :].contiguous()
            shift_labels = labels[..., 1:].contiguous()
            batch_size, seq_length, vocab_size = shift_logits.shape
            loss = F.cross_entropy(
                shift_logits.view(batch_size * seq_length, vocab_size), shift_labels.view(batch_size * seq_length)
            )
        return loss, logits


def make_batch(step):
    lengths = [12, 10, 9, 12]
    prefix_lengths = torch.tensor([3 + (row + step) % 3 for row in range(4)])
    input_ids = torch.zeros(4, 12, dtype=torch.long)
    attention_mask = torch.zeros(4, 12, dtype=torch.long)
    for row, length in enumerate(lengths):
        start = 1 + (3 * row + step) % (VOCAB - 1)
        input_ids[row, :length] = torch.tensor([1 + (start + 2 * i) % (VOCAB - 1) for i in range(length)])
        attention_mask[row, :length] = 1
    labels = input_ids.masked_fill(attention_mask == 0, -100)
    if ATTN == "prefix":
        labels = labels.masked_fill(torch.arange(12)[None, :] < prefix_lengths[:, None], -100)
    return input_ids, attention_mask, prefix_lengths, labels


def build():
    torch.manual_seed(0)
    return DecoderLM()


def train(model, steps=4):
    optimizer = optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1, betas=(0.9, 0.95))
    losses, norms = [], []
    model.train()
    for step in range(steps):
        input_ids, attention_mask, prefix_lengths, labels = make_batch(step)
        loss, _ = model(input_ids, attention_mask, prefix_lengths, labels)
        optimizer.zero_grad()
        loss.backward()
        norms.append(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0).item())
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        input_ids, attention_mask, prefix_lengths, labels = make_batch(steps)
        eval_loss, logits = model(input_ids, attention_mask, prefix_lengths, labels)
        alibi = build_alibi_tensor(attention_mask, HEADS, torch.float32)
    return {
        "losses": losses,
        "grad_norms": norms,
        "eval_loss": eval_loss.item(),
        "predictions": logits.argmax(-1).tolist(),
        "alibi": alibi.flatten().tolist(),
    }


if __name__ == "__main__":
    print(train(build(), steps=20))
