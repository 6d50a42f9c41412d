"""A GPT built the way torchtitan and lit-gpt build big models: on the meta device, then given storage
and initialized.

Idioms checked: a config dataclass; ``with torch.device("meta"): model = GPT(cfg)`` (no memory, no
random draws, parameters counted from the meta model); ``model.to_empty(device=...)`` then
``model.apply(init)`` with ``trunc_normal_`` and a scaled init of the residual projections, after
``torch.manual_seed``; rotary buffers recomputed after ``to_empty`` (their values were never
made); tied input and output embeddings kept tied through ``to_empty``; AdamW param groups split by
``p.dim() >= 2``; training under ``torch.autograd.graph.save_on_cpu`` (activation offloading); and
a second model loaded from the first's state dict with ``load_state_dict(sd, assign=True)`` into a
meta-built model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from shim import F, nn, optim, torch

DEVICE = "cpu"
N_LAYER = 2


@dataclass
class Config:
    vocab_size: int = 32
    block_size: int = 8
    n_layer: int = 2
    n_head: int = 2
    n_embd: int = 16


def rope_cache(seq_len, head_dim, base=10000.0):
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2).float() / head_dim))
    angles = torch.outer(torch.arange(seq_len).float(), inv_freq)
    return torch.cos(angles), torch.sin(angles)


def apply_rope(x, cos, sin):
    x1, x2 = x[..., ::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.n_head = cfg.n_head
        self.qkv = nn.Linear(cfg.n_embd, 3 * cfg.n_embd, bias=False)
        self.proj = nn.Linear(cfg.n_embd, cfg.n_embd, bias=False)

    def forward(self, x, cos, sin):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v))
        q, k = apply_rope(q, cos[:t], sin[:t]), apply_rope(k, cos[:t], sin[:t])
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).contiguous().view(b, t, c))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.norm1, self.norm2 = nn.RMSNorm(cfg.n_embd), nn.RMSNorm(cfg.n_embd)
        self.attn = Attention(cfg)
        self.fc = nn.Linear(cfg.n_embd, 4 * cfg.n_embd, bias=False)
        self.proj = nn.Linear(4 * cfg.n_embd, cfg.n_embd, bias=False)

    def forward(self, x, cos, sin):
        x = x + self.attn(self.norm1(x), cos, sin)
        return x + self.proj(F.silu(self.fc(self.norm2(x))))


class GPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.norm = nn.RMSNorm(cfg.n_embd)
        self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # tied
        self.init_rope()

    def init_rope(self):
        cos, sin = rope_cache(self.cfg.block_size, self.cfg.n_embd // self.cfg.n_head)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def init_weights(self, module):
        if isinstance(module, nn.Linear):
            std = 0.02
            if getattr(module, "residual", False):
                std = 0.02 / math.sqrt(2 * self.cfg.n_layer)
            nn.init.trunc_normal_(module.weight, mean=0.0, std=std, a=-3 * std, b=3 * std)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        elif isinstance(module, nn.RMSNorm):
            module.reset_parameters()

    def forward(self, idx, targets=None):
        x = self.wte(idx)
        for block in self.blocks:
            x = block(x, self.cos, self.sin)
        logits = self.lm_head(self.norm(x))
        if targets is None:
            return logits
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))


def build():
    cfg = Config(n_layer=N_LAYER)
    torch.manual_seed(0)
    with torch.device("meta"):
        model = GPT(cfg)
    assert all(p.is_meta for p in model.parameters())
    for block in model.blocks:
        block.attn.proj.residual = block.proj.residual = True
    model.to_empty(device=DEVICE)
    model.lm_head.weight = model.wte.weight  # to_empty gives each module its own parameter: tie again
    torch.manual_seed(1337)  # the draws start here: the meta build drew nothing
    model.apply(model.init_weights)
    model.init_rope()
    return model


def batches(cfg, steps, batch=4):
    rng = np.random.default_rng(0)
    data = torch.tensor(rng.integers(0, cfg.vocab_size, size=(steps, batch, cfg.block_size + 1)))
    return [(d[:, :-1].to(DEVICE), d[:, 1:].to(DEVICE)) for d in data]


def train(model, steps=3):
    cfg = model.cfg
    with torch.device("meta"):
        counted = sum(p.numel() for p in GPT(cfg).parameters())
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    optimizer = optim.AdamW(
        [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}], lr=3e-3, betas=(0.9, 0.95)
    )
    losses = []
    for x, y in batches(cfg, steps):
        with torch.autograd.graph.save_on_cpu(pin_memory=True):
            loss = model(x, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())

    with torch.device("meta"):
        copy = GPT(cfg)
    result = copy.load_state_dict(model.state_dict(), assign=True)
    copy.lm_head.weight = copy.wte.weight  # assign=True replaced both: tie them again, as lit-gpt does
    copy.init_rope()
    x, y = batches(cfg, 1)[0]
    with torch.no_grad():
        same = torch.equal(copy(x), model(x))
    return {
        "losses": losses,
        "params": counted,
        "tied": model.lm_head.weight is model.wte.weight,
        "loaded": repr(result),
        "copy_matches": same,
        "copy_on_meta": any(p.is_meta for p in copy.parameters()),
        "first_weights": model.blocks[0].fc.weight[0, :4].tolist() + model.wte.weight[0, :4].tolist(),
    }


if __name__ == "__main__":
    print(train(build(), steps=5))
