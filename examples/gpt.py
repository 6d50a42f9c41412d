"""A small character-level GPT, written as a PyTorch user writes it: only the three import lines differ.

Token and position embeddings, a stack of pre-norm transformer blocks (causal self-attention through
F.scaled_dot_product_attention, a GELU MLP), AdamW with weight decay on the matrices only,
cross_entropy, an evaluation on held-out text under no_grad, then sampling with torch.multinomial.
It trains on the short text below; on a GPU it runs where ``"cuda"`` points (vkml: best_device()'s
Vulkan device). tests/test_gpt_example.py runs the same file under PyTorch, with the import lines
swapped, and compares the losses.

    python examples/gpt.py --steps 300            # "cuda" if vkml.cuda.is_available(), else the CPU
    python examples/gpt.py --steps 20 --device cpu
"""

from __future__ import annotations

import argparse
import math
import time

import vkml as torch  # the only lines that differ from the PyTorch program
import vkml.nn as nn
from vkml.nn import functional as F

TEXT = """\
The river ran past the mill and under the old stone bridge, and the miller's children
counted the boats that went by. In the morning the boats carried grain down to the town;
in the evening they came back with salt, cloth and news. The youngest child kept a list of
every boat's name in a book with a green cover, and when a boat she had never seen went by
she ran along the bank to read the letters painted on its side. Some names were long and
some were short. Some boats came every week and some came once and never again. When the
river froze the boats stopped, and the children skated where the boats had been, and the
book with the green cover waited on the shelf for the spring.
"""


class Config:
    def __init__(self, vocab_size, block_size=32, n_layer=2, n_head=4, n_embd=64, dropout=0.1):
        self.vocab_size, self.block_size = vocab_size, block_size
        self.n_layer, self.n_head, self.n_embd, self.dropout = n_layer, n_head, n_embd, dropout


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.n_head = config.n_head
        self.qkv = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.proj = nn.Linear(config.n_embd, config.n_embd)
        self.dropout = config.dropout
        self.resid_dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        p = self.dropout if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.proj(y))


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd)
        self.mlp = nn.Sequential(
            nn.Linear(config.n_embd, 4 * config.n_embd),
            nn.GELU(),
            nn.Linear(4 * config.n_embd, config.n_embd),
            nn.Dropout(config.dropout),
        )

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.tok_emb = nn.Embedding(config.vocab_size, config.n_embd)
        self.pos_emb = nn.Embedding(config.block_size, config.n_embd)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList([Block(config) for _ in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        B, T = idx.shape
        pos = torch.arange(0, T, dtype=torch.long, device=idx.device)
        x = self.drop(self.tok_emb(idx) + self.pos_emb(pos))
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(B * T, -1), targets.view(B * T))
        return logits, loss

    @torch.no_grad()
    def generate(self, tokens, max_new_tokens, temperature=1.0):
        """``tokens`` (a list of ids) continued by ``max_new_tokens`` sampled ones, one forward pass each."""
        tokens = list(tokens)
        device = self.lm_head.weight.device
        for _ in range(max_new_tokens):
            context = torch.tensor([tokens[-self.config.block_size :]], dtype=torch.long, device=device)
            logits, _ = self(context)
            probs = F.softmax(logits[:, -1, :] / temperature, dim=-1)
            tokens.append(torch.multinomial(probs, num_samples=1).item())
        return tokens


def make_optimizer(model, lr=3e-3, weight_decay=0.1):
    """AdamW with weight decay on the matrices only (biases, LayerNorm weights and nothing else)."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.99))


def train_step(model, optimizer, xb, yb):
    """One step; returns the loss tensor (reading it is the caller's choice: it waits for the GPU)."""
    _, loss = model(xb, yb)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss


def main(steps=300, device=None, batch_size=16, block_size=32, seed=1337, sample_tokens=200, n_layer=2, n_embd=64):
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(seed)
    chars = sorted(set(TEXT))
    stoi = {ch: i for i, ch in enumerate(chars)}
    itos = {i: ch for i, ch in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in TEXT], dtype=torch.long)
    n = int(0.9 * len(data))
    train_data, val_data = data[:n], data[n:]

    def get_batch(split):
        source = train_data if split == "train" else val_data
        ix = torch.randint(len(source) - block_size, (batch_size,))
        x = torch.stack([source[i : i + block_size] for i in ix])
        y = torch.stack([source[i + 1 : i + 1 + block_size] for i in ix])
        return x.to(device), y.to(device)

    @torch.no_grad()
    def estimate_loss(iters=4):
        model.eval()
        out = {}
        for split in ("train", "val"):
            losses = torch.zeros(iters)
            for k in range(iters):
                _, loss = model(*get_batch(split))
                losses[k] = loss.item()
            out[split] = losses.mean().item()
        model.train()
        return out

    model = GPT(Config(len(chars), block_size=block_size, n_layer=n_layer, n_embd=n_embd)).to(device)
    model = torch.compile(model)  # vkml: the model itself (it fuses lazily)
    optimizer = make_optimizer(model)
    print(f"device: {device} | parameters: {sum(p.numel() for p in model.parameters())} | vocabulary: {len(chars)}")
    start, first = time.perf_counter(), None
    for step in range(steps):
        loss = train_step(model, optimizer, *get_batch("train")).item()
        first = loss if first is None else first
        if step % 50 == 0 or step == steps - 1:
            print(f"step {step}: loss {loss:.4f}")
    elapsed = time.perf_counter() - start
    losses = estimate_loss()
    print(f"loss: {first:.4f} -> {loss:.4f} | train {losses['train']:.4f} val {losses['val']:.4f}")
    print(f"steps: {steps} | {elapsed / max(steps, 1) * 1000:.1f} ms/step | random guess {math.log(len(chars)):.4f}")
    sample = model.generate([stoi["T"]], max_new_tokens=sample_tokens, temperature=0.8)
    print("sample:", "".join(itos[i] for i in sample).replace("\n", " / "))
    return loss


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--device", default=None, help="default: 'cuda' if available, else 'cpu'")
    parser.add_argument("--sample-tokens", type=int, default=200)
    args = parser.parse_args()
    main(args.steps, args.device, sample_tokens=args.sample_tokens)
