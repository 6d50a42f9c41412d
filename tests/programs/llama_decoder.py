"""A Llama-style decoder trained on a copying task and sampled with a KV cache, written as
meta-llama/llama (model.py, generation.py), lit-gpt and Hugging Face's Llama write it, at tiny sizes.

Its idioms: ``RMSNorm`` by ``x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)`` on
``x.float()`` then ``.type_as(x)``; rotary embeddings as complex numbers
(``torch.polar(torch.ones_like(freqs), freqs)`` over ``torch.outer``, ``torch.view_as_complex`` of
the query reshaped into pairs, the product's ``torch.view_as_real(...).flatten(3)``) or, with
``ROPE = "rotate_half"``, Hugging Face's ``cos``/``sin`` of an ``inv_freq`` buffer with
``torch.cat((-x2, x1), dim=-1)``; a SwiGLU MLP ``w2(F.silu(w1(x)) * w3(x))`` with its hidden size
rounded up by ``multiple_of``; grouped-query attention with the keys repeated by
``[:, :, :, None, :].expand(...).reshape(...)`` (``ATTN = "expand"``), by
``torch.repeat_interleave(x, dim=1, repeats=n_rep)`` (``"repeat_interleave"``) or left to
``F.scaled_dot_product_attention(..., enable_gqa=True)`` (``"sdpa_gqa"``); a KV cache held as plain
tensor attributes and written in place by slice assignment ``cache_k[:bsz, start_pos : start_pos +
seqlen] = xk``, read back as ``cache_k[:bsz, : start_pos + seqlen]``; the generation mask
``torch.hstack([torch.zeros((seqlen, start_pos)), torch.triu(torch.full((seqlen, seqlen),
float("-inf")), diagonal=1)])``; ``generate`` under ``@torch.inference_mode()`` over prompts of
different lengths padded with ``torch.full``, ``input_text_mask = tokens != pad_id``,
``torch.where(input_text_mask[:, cur_pos], tokens[:, cur_pos], next_token)`` and an
``eos_reached |=`` stop; top-p sampling by ``torch.sort(descending=True)``, ``torch.cumsum``, a
boolean mask written with ``probs_sort[mask] = 0.0``, ``div_``, ``torch.multinomial`` and
``torch.gather`` (``SAMPLER = "meta"``) or Hugging Face's ascending sort, ``scatter`` of the removal
mask back to vocabulary order and ``masked_fill(-inf)`` (``"hf"``); and ``p.numel()`` over the
parameters; training through ``torch.compile(model, mode=..., fullgraph=True)`` with the module itself
found again by ``getattr(compiled, "_orig_mod", compiled)``. ``TOP_P`` is small enough that one token survives, so either library samples the same
one."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from shim import F, nn, torch

ROPE = "complex"  # or "rotate_half"
ATTN = "expand"  # or "repeat_interleave", "sdpa_gqa"
SAMPLER = "meta"  # or "hf"
COMPILE = True
TOP_P = 1e-3
DEVICE = "cpu"
PAD_ID, EOS_ID = 0, 1


@dataclass
class ModelArgs:
    dim: int = 16
    n_layers: int = 2
    n_heads: int = 4
    n_kv_heads: int = 2
    vocab_size: int = 11
    multiple_of: int = 8
    norm_eps: float = 1e-5
    max_batch_size: int = 2
    max_seq_len: int = 12


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        return self._norm(x.float()).type_as(x) * self.weight


def precompute_freqs_cis(dim, end, theta=10000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: dim // 2].float() / dim))
    t = torch.arange(end, device=freqs.device)
    freqs = torch.outer(t, freqs).float()
    return torch.polar(torch.ones_like(freqs), freqs)  # cos + i sin of every position's angles


def reshape_for_broadcast(freqs_cis, x):
    shape = [d if i == 1 or i == x.ndim - 1 else 1 for i, d in enumerate(x.shape)]
    return freqs_cis.view(*shape)


def apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


class RotaryEmbedding(nn.Module):
    """Hugging Face's form: cos and sin of the angles, the halves of each head swapped by rotate_half."""

    def __init__(self, head_dim, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x, position_ids):
        inv_freq = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        positions = position_ids[:, None, :].float()
        freqs = (inv_freq @ positions).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(dtype=x.dtype), emb.sin().to(dtype=x.dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=2):
    cos = cos.unsqueeze(unsqueeze_dim)
    sin = sin.unsqueeze(unsqueeze_dim)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


def repeat_kv(x, n_rep):
    bs, slen, n_kv_heads, head_dim = x.shape
    if n_rep == 1:
        return x
    return (
        x[:, :, :, None, :]
        .expand(bs, slen, n_kv_heads, n_rep, head_dim)
        .reshape(bs, slen, n_kv_heads * n_rep, head_dim)
    )


class Attention(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.n_kv_heads = args.n_heads if args.n_kv_heads is None else args.n_kv_heads
        self.n_heads = args.n_heads
        self.n_rep = self.n_heads // self.n_kv_heads
        self.head_dim = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(args.dim, self.n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(args.dim, self.n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim, bias=False)
        self.args = args
        self.cache_k = self.cache_v = None

    def setup_cache(self, device):
        shape = (self.args.max_batch_size, self.args.max_seq_len, self.n_kv_heads, self.head_dim)
        self.cache_k = torch.zeros(shape, device=device)
        self.cache_v = torch.zeros(shape, device=device)

    def forward(self, x, start_pos, rope, mask, use_cache):
        bsz, seqlen, _ = x.shape
        xq = self.wq(x).view(bsz, seqlen, self.n_heads, self.head_dim)
        xk = self.wk(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        xv = self.wv(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        if ROPE == "complex":
            xq, xk = apply_rotary_emb(xq, xk, freqs_cis=rope)
        else:
            xq, xk = apply_rotary_pos_emb(xq, xk, *rope)
        if use_cache:
            self.cache_k = self.cache_k.to(xq)
            self.cache_v = self.cache_v.to(xq)
            self.cache_k[:bsz, start_pos : start_pos + seqlen] = xk
            self.cache_v[:bsz, start_pos : start_pos + seqlen] = xv
            keys = self.cache_k[:bsz, : start_pos + seqlen]
            values = self.cache_v[:bsz, : start_pos + seqlen]
        else:
            keys, values = xk, xv
        xq, keys, values = xq.transpose(1, 2), keys.transpose(1, 2), values.transpose(1, 2)
        if ATTN == "sdpa_gqa":
            if mask is None:
                output = F.scaled_dot_product_attention(xq, keys, values, is_causal=True, enable_gqa=True)
            else:
                output = F.scaled_dot_product_attention(xq, keys, values, attn_mask=mask, enable_gqa=True)
        else:
            if ATTN == "expand":
                keys = repeat_kv(keys.transpose(1, 2), self.n_rep).transpose(1, 2)
                values = repeat_kv(values.transpose(1, 2), self.n_rep).transpose(1, 2)
            else:
                keys = torch.repeat_interleave(keys, dim=1, repeats=self.n_rep)
                values = torch.repeat_interleave(values, dim=1, repeats=self.n_rep)
            scores = torch.matmul(xq, keys.transpose(2, 3)) / math.sqrt(self.head_dim)
            if mask is None:
                causal = torch.triu(torch.full((seqlen, seqlen), float("-inf"), device=x.device), diagonal=1)
                scores = scores + causal
            else:
                scores = scores + mask
            scores = F.softmax(scores.float(), dim=-1).type_as(xq)
            output = torch.matmul(scores, values)
        output = output.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.wo(output)


class FeedForward(nn.Module):
    def __init__(self, dim, hidden_dim, multiple_of):
        super().__init__()
        hidden_dim = int(2 * hidden_dim / 3)
        hidden_dim = multiple_of * ((hidden_dim + multiple_of - 1) // multiple_of)
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = nn.Linear(hidden_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class TransformerBlock(nn.Module):
    def __init__(self, layer_id, args):
        super().__init__()
        self.layer_id = layer_id
        self.attention = Attention(args)
        self.feed_forward = FeedForward(args.dim, 4 * args.dim, args.multiple_of)
        self.attention_norm = RMSNorm(args.dim, eps=args.norm_eps)
        self.ffn_norm = RMSNorm(args.dim, eps=args.norm_eps)

    def forward(self, x, start_pos, rope, mask, use_cache):
        h = x + self.attention(self.attention_norm(x), start_pos, rope, mask, use_cache)
        return h + self.feed_forward(self.ffn_norm(h))


class Transformer(nn.Module):
    def __init__(self, params):
        super().__init__()
        self.params = params
        self.tok_embeddings = nn.Embedding(params.vocab_size, params.dim)
        self.layers = nn.ModuleList(TransformerBlock(i, params) for i in range(params.n_layers))
        self.norm = RMSNorm(params.dim, eps=params.norm_eps)
        self.output = nn.Linear(params.dim, params.vocab_size, bias=False)
        head_dim = params.dim // params.n_heads
        self.freqs_cis = precompute_freqs_cis(head_dim, params.max_seq_len * 2)
        self.rotary_emb = RotaryEmbedding(head_dim)

    def forward(self, tokens, start_pos=0, use_cache=False):
        _bsz, seqlen = tokens.shape
        h = self.tok_embeddings(tokens)
        if ROPE == "complex":
            self.freqs_cis = self.freqs_cis.to(h.device)
            rope = self.freqs_cis[start_pos : start_pos + seqlen]
        else:
            position_ids = torch.arange(start_pos, start_pos + seqlen, device=tokens.device).unsqueeze(0)
            rope = self.rotary_emb(h, position_ids)
        mask = None
        if use_cache and seqlen > 1:
            mask = torch.full((seqlen, seqlen), float("-inf"), device=tokens.device)
            mask = torch.triu(mask, diagonal=1)
            # the cached keys before start_pos are all visible
            mask = torch.hstack([torch.zeros((seqlen, start_pos), device=tokens.device), mask]).type_as(h)
        elif use_cache:
            mask = torch.zeros((1, start_pos + 1), device=tokens.device).type_as(h)
        for layer in self.layers:
            h = layer(h, start_pos, rope, mask, use_cache)
        return self.output(self.norm(h)).float()


def sample_top_p(probs, p):
    probs_sort, probs_idx = torch.sort(probs, dim=-1, descending=True)
    probs_sum = torch.cumsum(probs_sort, dim=-1)
    mask = probs_sum - probs_sort > p
    probs_sort[mask] = 0.0
    probs_sort.div_(probs_sort.sum(dim=-1, keepdim=True))
    next_token = torch.multinomial(probs_sort, num_samples=1)
    return torch.gather(probs_idx, -1, next_token)


def top_p_logits(logits, top_p, min_tokens_to_keep=1):
    """Hugging Face's TopPLogitsWarper: drop the least likely tokens whose mass stays under 1 - top_p."""
    sorted_logits, sorted_indices = torch.sort(logits, descending=False)
    cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
    sorted_indices_to_remove = cumulative_probs <= (1 - top_p)
    sorted_indices_to_remove[..., -min_tokens_to_keep:] = 0
    indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices, sorted_indices_to_remove)
    return logits.masked_fill(indices_to_remove, -float("Inf"))


@torch.inference_mode()
def generate(model, prompt_tokens, max_gen_len, temperature=0.6, top_p=TOP_P):
    params = model.params
    device = next(model.parameters()).device
    for layer in model.layers:
        layer.attention.setup_cache(device)
    bsz = len(prompt_tokens)
    min_prompt_len = min(len(t) for t in prompt_tokens)
    max_prompt_len = max(len(t) for t in prompt_tokens)
    total_len = min(params.max_seq_len, max_gen_len + max_prompt_len)
    tokens = torch.full((bsz, total_len), PAD_ID, dtype=torch.long, device=device)
    for k, t in enumerate(prompt_tokens):
        tokens[k, : len(t)] = torch.tensor(t, dtype=torch.long, device=device)
    prev_pos = 0
    eos_reached = torch.tensor([False] * bsz, device=device)
    input_text_mask = tokens != PAD_ID
    last_logits = None
    for cur_pos in range(min_prompt_len, total_len):
        logits = model.forward(tokens[:, prev_pos:cur_pos], prev_pos, use_cache=True)
        last_logits = logits[:, -1]
        if SAMPLER == "meta":
            probs = torch.softmax(logits[:, -1] / temperature, dim=-1)
            next_token = sample_top_p(probs, top_p)
        else:
            filtered = top_p_logits(logits[:, -1] / temperature, top_p)
            next_token = torch.multinomial(F.softmax(filtered, dim=-1), num_samples=1)
        next_token = next_token.reshape(-1)
        next_token = torch.where(input_text_mask[:, cur_pos], tokens[:, cur_pos], next_token)
        tokens[:, cur_pos] = next_token
        eos_reached |= (~input_text_mask[:, cur_pos]) & (next_token == EOS_ID)
        prev_pos = cur_pos
        if all(eos_reached):
            break
    return tokens, last_logits


def copy_batch(rng, batch=4, half=4, vocab=11):
    """Sequences ``a b c d a b c d``: the second half repeats the first (tokens 2 .. vocab-1)."""
    first = rng.integers(2, vocab, size=(batch, half))
    seq = np.concatenate([first, first], axis=1)
    return seq[:, :-1].astype(np.int64), seq[:, 1:].astype(np.int64)


def build():
    torch.manual_seed(0)
    return Transformer(ModelArgs())


def train(model, steps=3):
    device = torch.device(DEVICE)
    model = model.to(device)
    compiled = torch.compile(model, mode="max-autotune-no-cudagraphs", fullgraph=True) if COMPILE else model
    raw_model = getattr(compiled, "_orig_mod", compiled)  # the module itself: its attributes, generate
    optimizer = torch.optim.AdamW(compiled.parameters(), lr=3e-3, betas=(0.9, 0.95), weight_decay=0.1)
    rng = np.random.default_rng(0)
    record = {"losses": [], "grad_norms": [], "n_params": sum(p.numel() for p in raw_model.parameters())}
    compiled.train()
    for _ in range(steps):
        x, y = copy_batch(rng)
        x, y = torch.from_numpy(x).to(device), torch.from_numpy(y).to(device)
        logits = compiled(x)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        record["losses"].append(loss.item())
        record["grad_norms"].append(norm.item())
    compiled.eval()
    assert raw_model is model and not model.training
    tokens, last_logits = generate(raw_model, [[5, 7, 3, 9], [4, 8, 6]], max_gen_len=4)
    record["tokens"] = tokens.tolist()
    record["last_logits"] = last_logits.flatten().tolist()
    record["inference"] = [last_logits.is_inference(), last_logits.requires_grad]
    # the cache gave what one pass over the whole sequence gives
    with torch.no_grad():
        full = model(tokens[:1, :-1])[:, -1]
    record["cache_matches"] = bool(torch.allclose(full, last_logits[:1], atol=1e-5))
    return record


if __name__ == "__main__":
    print(train(build()))
