"""A T5-style encoder-decoder trained to reverse token sequences, written as Hugging Face's
modeling_t5.py and its seq2seq fine-tuning scripts write it, at tiny sizes.

Its idioms: ``T5LayerNorm`` (no mean, no bias: ``hidden_states.to(torch.float32).pow(2).mean(-1,
keepdim=True)``, ``torch.rsqrt``, back to the weight's dtype when that is half); the relative position
bias: ``_relative_position_bucket`` with ``(relative_position > 0).to(torch.long) * num_buckets``,
``torch.abs``, ``-torch.min(relative_position, torch.zeros_like(relative_position))`` for the causal
decoder, log-spaced buckets by ``torch.log(relative_position.float() / max_exact) / math.log(max_distance
/ max_exact)``, ``torch.min(..., torch.full_like(..., num_buckets - 1))`` and ``torch.where(is_small,
...)``; an ``nn.Embedding`` of buckets ``.permute([2, 0, 1]).unsqueeze(0)`` computed by the first layer
and passed on to the others; unscaled attention scores plus that bias and an additive mask made
from ``(1.0 - mask) * torch.finfo(dtype).min``; ``F.softmax(scores.float(), dim=-1).type_as(scores)``;
cross-attention over the encoder's output; the gated-GELU feed-forward ``gelu_new(wi_0(x)) *
wi_1(x)`` (``F.gelu(approximate="tanh")``); ``_shift_right`` (``new_zeros``, ``[..., 1:] = [...,
:-1].clone()``, ``masked_fill_(shifted == -100, pad)``); labels padded with -100 for
``nn.CrossEntropyLoss(ignore_index=-100)``; the output scaled by ``d_model ** -0.5`` with tied
embeddings; ``get_linear_schedule_with_warmup`` written with ``LambdaLR``; AdamW groups without
weight decay for biases and norm weights, ``fused=True`` when ``FUSED`` (PyTorch's CPU kernel);
``torch.autocast("cpu", dtype=torch.bfloat16)`` when ``AMP``; ``clip_grad_norm_``; and greedy
decoding that reuses the encoder's output, growing the decoder input with ``torch.cat``."""

from __future__ import annotations

import math

import numpy as np
from shim import F, lr_scheduler, nn, optim, torch

AMP = False
FUSED = False
DEVICE = "cpu"
PAD, EOS = 0, 1
VOCAB, D_MODEL, D_KV, HEADS, D_FF, LAYERS = 10, 16, 4, 4, 24, 2
NUM_BUCKETS, MAX_DISTANCE = 8, 16


class T5LayerNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        variance = hidden_states.to(torch.float32).pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        if self.weight.dtype in [torch.float16, torch.bfloat16]:
            hidden_states = hidden_states.to(self.weight.dtype)
        return self.weight * hidden_states


class T5Attention(nn.Module):
    def __init__(self, is_decoder, has_relative_attention_bias):
        super().__init__()
        self.is_decoder = is_decoder
        self.has_relative_attention_bias = has_relative_attention_bias
        self.inner_dim = HEADS * D_KV
        self.q = nn.Linear(D_MODEL, self.inner_dim, bias=False)
        self.k = nn.Linear(D_MODEL, self.inner_dim, bias=False)
        self.v = nn.Linear(D_MODEL, self.inner_dim, bias=False)
        self.o = nn.Linear(self.inner_dim, D_MODEL, bias=False)
        if has_relative_attention_bias:
            self.relative_attention_bias = nn.Embedding(NUM_BUCKETS, HEADS)

    @staticmethod
    def _relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
        relative_buckets = 0
        if bidirectional:
            num_buckets //= 2
            relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
            relative_position = torch.abs(relative_position)
        else:
            relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
        # half of the buckets are exact offsets, the other half grow logarithmically up to max_distance
        max_exact = num_buckets // 2
        is_small = relative_position < max_exact
        relative_position_if_large = max_exact + (
            torch.log(relative_position.float() / max_exact)
            / math.log(max_distance / max_exact)
            * (num_buckets - max_exact)
        ).to(torch.long)
        relative_position_if_large = torch.min(
            relative_position_if_large, torch.full_like(relative_position_if_large, num_buckets - 1)
        )
        relative_buckets += torch.where(is_small, relative_position, relative_position_if_large)
        return relative_buckets

    def compute_bias(self, query_length, key_length, device):
        context_position = torch.arange(query_length, dtype=torch.long, device=device)[:, None]
        memory_position = torch.arange(key_length, dtype=torch.long, device=device)[None, :]
        relative_position = memory_position - context_position
        buckets = self._relative_position_bucket(
            relative_position, bidirectional=not self.is_decoder, num_buckets=NUM_BUCKETS, max_distance=MAX_DISTANCE
        )
        values = self.relative_attention_bias(buckets)  # (query, key, heads)
        return values.permute([2, 0, 1]).unsqueeze(0)

    def forward(self, hidden_states, mask=None, key_value_states=None, position_bias=None):
        batch_size, seq_length = hidden_states.shape[:2]
        source = hidden_states if key_value_states is None else key_value_states
        key_length = source.shape[1]

        def shape(states):
            return states.view(batch_size, -1, HEADS, D_KV).transpose(1, 2)

        query_states = shape(self.q(hidden_states))
        key_states = shape(self.k(source))
        value_states = shape(self.v(source))
        scores = torch.matmul(query_states, key_states.transpose(3, 2))  # T5 does not scale by sqrt(d)
        if position_bias is None:
            if not self.has_relative_attention_bias:
                position_bias = torch.zeros(
                    (1, HEADS, seq_length, key_length), device=scores.device, dtype=scores.dtype
                )
            else:
                position_bias = self.compute_bias(seq_length, key_length, device=scores.device)
            if mask is not None:
                position_bias = position_bias + mask
        scores += position_bias
        attn_weights = F.softmax(scores.float(), dim=-1).type_as(scores)
        attn_output = torch.matmul(attn_weights, value_states)
        attn_output = attn_output.transpose(1, 2).contiguous().view(batch_size, -1, self.inner_dim)
        return self.o(attn_output), position_bias


class T5DenseGatedActDense(nn.Module):
    def __init__(self):
        super().__init__()
        self.wi_0 = nn.Linear(D_MODEL, D_FF, bias=False)
        self.wi_1 = nn.Linear(D_MODEL, D_FF, bias=False)
        self.wo = nn.Linear(D_FF, D_MODEL, bias=False)

    def forward(self, hidden_states):
        hidden_gelu = F.gelu(self.wi_0(hidden_states), approximate="tanh")
        return self.wo(hidden_gelu * self.wi_1(hidden_states))


class T5Block(nn.Module):
    def __init__(self, is_decoder, has_relative_attention_bias):
        super().__init__()
        self.is_decoder = is_decoder
        self.self_norm = T5LayerNorm(D_MODEL)
        self.self_attn = T5Attention(is_decoder, has_relative_attention_bias)
        if is_decoder:
            self.cross_norm = T5LayerNorm(D_MODEL)
            self.cross_attn = T5Attention(is_decoder, False)
        self.ff_norm = T5LayerNorm(D_MODEL)
        self.ff = T5DenseGatedActDense()

    def forward(self, h, mask, position_bias, encoder_hidden_states=None, encoder_mask=None, cross_bias=None):
        out, position_bias = self.self_attn(self.self_norm(h), mask=mask, position_bias=position_bias)
        h = h + out
        if self.is_decoder:
            out, cross_bias = self.cross_attn(
                self.cross_norm(h), mask=encoder_mask, key_value_states=encoder_hidden_states, position_bias=cross_bias
            )
            h = h + out
        return h + self.ff(self.ff_norm(h)), position_bias, cross_bias


def extended_mask(mask, dtype):
    """1 keeps a key, 0 hides it: an additive mask of 0 and the dtype's most negative number."""
    mask = mask.to(dtype)
    return (1.0 - mask) * torch.finfo(dtype).min


class T5Stack(nn.Module):
    def __init__(self, is_decoder, embed_tokens):
        super().__init__()
        self.is_decoder = is_decoder
        self.embed_tokens = embed_tokens
        self.block = nn.ModuleList([T5Block(is_decoder, has_relative_attention_bias=(i == 0)) for i in range(LAYERS)])
        self.final_layer_norm = T5LayerNorm(D_MODEL)

    def forward(self, input_ids, attention_mask, encoder_hidden_states=None, encoder_attention_mask=None):
        h = self.embed_tokens(input_ids)
        batch, seq = input_ids.shape
        if self.is_decoder:
            causal = torch.tril(torch.ones(seq, seq, device=input_ids.device))
            mask = attention_mask[:, None, None, :] * causal[None, None, :, :]
            encoder_mask = extended_mask(encoder_attention_mask[:, None, None, :], h.dtype)
        else:
            mask = attention_mask[:, None, None, :]
            encoder_mask = None
        mask = extended_mask(mask, h.dtype)
        position_bias = cross_bias = None
        for layer in self.block:
            h, position_bias, cross_bias = layer(
                h, mask, position_bias, encoder_hidden_states, encoder_mask, cross_bias
            )
        return self.final_layer_norm(h)


class T5ForConditionalGeneration(nn.Module):
    def __init__(self):
        super().__init__()
        self.shared = nn.Embedding(VOCAB, D_MODEL)
        self.encoder = T5Stack(False, self.shared)
        self.decoder = T5Stack(True, self.shared)
        self.lm_head = nn.Linear(D_MODEL, VOCAB, bias=False)
        self.lm_head.weight = self.shared.weight

    def _shift_right(self, input_ids):
        shifted = input_ids.new_zeros(input_ids.shape)
        shifted[..., 1:] = input_ids[..., :-1].clone()
        shifted[..., 0] = PAD  # T5 starts decoding from the pad token
        shifted.masked_fill_(shifted == -100, PAD)
        return shifted

    def forward(self, input_ids, attention_mask, labels=None, decoder_input_ids=None, encoder_outputs=None):
        if encoder_outputs is None:
            encoder_outputs = self.encoder(input_ids, attention_mask)
        if decoder_input_ids is None:
            decoder_input_ids = self._shift_right(labels)
        decoder_mask = torch.ones_like(decoder_input_ids)
        sequence_output = self.decoder(decoder_input_ids, decoder_mask, encoder_outputs, attention_mask)
        sequence_output = sequence_output * (D_MODEL**-0.5)  # tied embeddings: rescale before the head
        lm_logits = self.lm_head(sequence_output)
        loss = None
        if labels is not None:
            loss_fct = nn.CrossEntropyLoss(ignore_index=-100)
            loss = loss_fct(lm_logits.view(-1, lm_logits.size(-1)), labels.view(-1))
        return loss, lm_logits, encoder_outputs


def get_linear_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps, last_epoch=-1):
    def lr_lambda(current_step):
        if current_step < num_warmup_steps:
            return float(current_step) / float(max(1, num_warmup_steps))
        return max(0.0, float(num_training_steps - current_step) / float(max(1, num_training_steps - num_warmup_steps)))

    return lr_scheduler.LambdaLR(optimizer, lr_lambda, last_epoch)


def reverse_batch(rng, batch=3, max_len=5):
    """Sources of 3..max_len tokens (2..VOCAB-1) padded with PAD; labels are the reversal then EOS,
    padded with -100."""
    lengths = rng.integers(3, max_len + 1, size=batch)
    src = np.full((batch, max_len), PAD, dtype=np.int64)
    labels = np.full((batch, max_len + 1), -100, dtype=np.int64)
    for i, n in enumerate(lengths):
        seq = rng.integers(2, VOCAB, size=n)
        src[i, :n] = seq
        labels[i, :n] = seq[::-1]
        labels[i, n] = EOS
    return src, (src != PAD).astype(np.int64), labels


@torch.no_grad()
def greedy_decode(model, input_ids, attention_mask, max_new_tokens=4):
    encoder_outputs = model.encoder(input_ids, attention_mask)
    decoder_input_ids = torch.full((input_ids.shape[0], 1), PAD, dtype=torch.long, device=input_ids.device)
    for _ in range(max_new_tokens):
        _, logits, _ = model(
            input_ids, attention_mask, decoder_input_ids=decoder_input_ids, encoder_outputs=encoder_outputs
        )
        next_tokens = logits[:, -1, :].argmax(dim=-1, keepdim=True)
        decoder_input_ids = torch.cat([decoder_input_ids, next_tokens], dim=-1)
    return decoder_input_ids


def build():
    torch.manual_seed(0)
    return T5ForConditionalGeneration()


def train(model, steps=3):
    device = torch.device(DEVICE)
    model = model.to(device)
    no_decay = ["bias", "norm.weight", "layer_norm.weight"]
    grouped = [
        {
            "params": [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)],
            "weight_decay": 0.01,
        },
        {"params": [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)], "weight_decay": 0.0},
    ]
    optimizer = optim.AdamW(grouped, lr=1e-2, **({"fused": True} if FUSED else {}))
    scheduler = get_linear_schedule_with_warmup(optimizer, num_warmup_steps=1, num_training_steps=steps + 1)
    rng = np.random.default_rng(0)
    record = {"losses": [], "lrs": [], "grad_norms": [], "group_sizes": [len(g["params"]) for g in grouped]}
    model.train()
    for _ in range(steps):
        src, mask, labels = (torch.from_numpy(a).to(device) for a in reverse_batch(rng))
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=AMP):
            loss, _, _ = model(src, mask, labels=labels)
        loss.backward()
        record["grad_norms"].append(nn.utils.clip_grad_norm_(model.parameters(), 1.0).item())
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        record["losses"].append(loss.item())
        record["lrs"].append(scheduler.get_last_lr()[0])
    model.eval()
    record["decoded"] = greedy_decode(model, src, mask).tolist()
    buckets = T5Attention._relative_position_bucket(
        torch.arange(-20, 21)[None, :], bidirectional=True, num_buckets=NUM_BUCKETS, max_distance=MAX_DISTANCE
    )
    record["buckets"] = buckets.flatten().tolist()
    return record


if __name__ == "__main__":
    print(train(build()))
