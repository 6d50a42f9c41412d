"""A GPT trained on a sorting task, as karpathy/minGPT (model.py, trainer.py, projects' demo) writes
it, at tiny sizes.

Its idioms: ``nn.ModuleDict(dict(wte=..., wpe=..., drop=..., h=nn.ModuleList([...]), ln_f=...))``;
an MLP kept as ``nn.ModuleDict`` and called through ``self.mlpf = lambda x: m.dropout(m.c_proj(
m.act(m.c_fc(x))))``; ``NewGELU`` written with ``torch.tanh`` and ``torch.pow(x, 3.0)``; the causal
``register_buffer("bias", torch.tril(...).view(1, 1, T, T))`` and ``att.masked_fill(self.bias[:, :,
:T, :T] == 0, float("-inf"))``; ``self.apply(self._init_weights)`` and ``c_proj.weight`` scaled by
``pn.endswith``; ``sum(p.numel() for p in self.transformer.parameters())``; ``configure_optimizers``
walking ``named_modules()`` x ``named_parameters()`` into ``decay`` and ``no_decay`` sets by
``isinstance(m, whitelist_weight_modules)`` and ``pn.endswith("bias")``, checked by set algebra over
``param_dict.keys()``, and AdamW over ``sorted(list(decay))`` param groups; ``F.cross_entropy(...,
ignore_index=-1)`` on targets with their prompt masked as ``y[:, :n - 1] = -1``; the trainer's
``model.zero_grad(set_to_none=True)`` and ``torch.nn.utils.clip_grad_norm_``; and ``generate``
under the ``@torch.no_grad()`` decorator with a temperature, ``idx[:, -block_size:]`` cropping and
the greedy ``torch.topk(probs, k=1, dim=-1)``."""

from __future__ import annotations

import math

import numpy as np
from shim import F, nn, torch

DROPOUT = 0.1
LENGTH, NUM_DIGITS = 4, 3
BLOCK_SIZE = 2 * LENGTH - 1
N_LAYER, N_HEAD, N_EMBD = 2, 2, 16
DEVICE = "cpu"


class NewGELU(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, block_size, pdrop):
        super().__init__()
        assert n_embd % n_head == 0
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.attn_dropout = nn.Dropout(pdrop)
        self.resid_dropout = nn.Dropout(pdrop)
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size))
        self.n_head = n_head
        self.n_embd = n_embd

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class Block(nn.Module):
    def __init__(self, n_embd, n_head, block_size, pdrop):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, block_size, pdrop)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.ModuleDict(
            dict(
                c_fc=nn.Linear(n_embd, 4 * n_embd),
                c_proj=nn.Linear(4 * n_embd, n_embd),
                act=NewGELU(),
                dropout=nn.Dropout(pdrop),
            )
        )
        m = self.mlp
        self.mlpf = lambda x: m.dropout(m.c_proj(m.act(m.c_fc(x))))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlpf(self.ln_2(x))
        return x


class GPT(nn.Module):
    def __init__(self, vocab_size, block_size, n_layer, n_head, n_embd, pdrop):
        super().__init__()
        self.block_size = block_size
        self.transformer = nn.ModuleDict(
            dict(
                wte=nn.Embedding(vocab_size, n_embd),
                wpe=nn.Embedding(block_size, n_embd),
                drop=nn.Dropout(pdrop),
                h=nn.ModuleList([Block(n_embd, n_head, block_size, pdrop) for _ in range(n_layer)]),
                ln_f=nn.LayerNorm(n_embd),
            )
        )
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith("c_proj.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))
        self.n_params = sum(p.numel() for p in self.transformer.parameters())

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
        elif isinstance(module, nn.LayerNorm):
            torch.nn.init.zeros_(module.bias)
            torch.nn.init.ones_(module.weight)

    def configure_optimizers(self, learning_rate, weight_decay, betas):
        decay = set()
        no_decay = set()
        whitelist_weight_modules = (torch.nn.Linear,)
        blacklist_weight_modules = (torch.nn.LayerNorm, torch.nn.Embedding)
        for mn, m in self.named_modules():
            for pn, _p in m.named_parameters():
                fpn = f"{mn}.{pn}" if mn else pn
                # named_modules is recursive: a parameter is seen from each of its ancestors too
                if pn.endswith("bias"):
                    no_decay.add(fpn)
                elif pn.endswith("weight") and isinstance(m, whitelist_weight_modules):
                    decay.add(fpn)
                elif pn.endswith("weight") and isinstance(m, blacklist_weight_modules):
                    no_decay.add(fpn)

        param_dict = {pn: p for pn, p in self.named_parameters()}
        inter_params = decay & no_decay
        union_params = decay | no_decay
        assert len(inter_params) == 0, f"parameters {inter_params} made it into both decay/no_decay sets!"
        assert len(param_dict.keys() - union_params) == 0, (
            f"parameters {param_dict.keys() - union_params} were not separated!"
        )
        optim_groups = [
            {"params": [param_dict[pn] for pn in sorted(list(decay))], "weight_decay": weight_decay},
            {"params": [param_dict[pn] for pn in sorted(list(no_decay))], "weight_decay": 0.0},
        ]
        return torch.optim.AdamW(optim_groups, lr=learning_rate, betas=betas)

    def forward(self, idx, targets=None):
        device = idx.device
        b, t = idx.size()
        assert t <= self.block_size, f"Cannot forward sequence of length {t}, block size is only {self.block_size}"
        pos = torch.arange(0, t, dtype=torch.long, device=device).unsqueeze(0)
        tok_emb = self.transformer.wte(idx)
        pos_emb = self.transformer.wpe(pos)
        x = self.transformer.drop(tok_emb + pos_emb)
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        logits = self.lm_head(x)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, do_sample=False, top_k=None):
        for _ in range(max_new_tokens):
            idx_cond = idx if idx.size(1) <= self.block_size else idx[:, -self.block_size :]
            logits, _ = self(idx_cond)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, top_k)
                logits[logits < v[:, [-1]]] = -float("Inf")
            probs = F.softmax(logits, dim=-1)
            if do_sample:
                idx_next = torch.multinomial(probs, num_samples=1)
            else:
                _, idx_next = torch.topk(probs, k=1, dim=-1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


class SortDataset:
    """minGPT's demo task: a sequence of digits, then the same digits sorted; the loss sees the answer only."""

    def __init__(self, rng, length=LENGTH, num_digits=NUM_DIGITS):
        self.rng = rng
        self.length = length
        self.num_digits = num_digits

    def __getitem__(self, idx):
        inp = torch.from_numpy(self.rng.integers(0, self.num_digits, size=(self.length,)))
        sol = torch.sort(inp)[0]
        cat = torch.cat((inp, sol), dim=0)
        x = cat[:-1].clone()
        y = cat[1:].clone()
        y[: self.length - 1] = -1
        return x, y


def build():
    torch.manual_seed(0)
    return GPT(NUM_DIGITS, BLOCK_SIZE, N_LAYER, N_HEAD, N_EMBD, DROPOUT)


def train(model, steps=3):
    device = torch.device(DEVICE)
    model = model.to(device)
    optimizer = model.configure_optimizers(learning_rate=5e-3, weight_decay=0.1, betas=(0.9, 0.95))
    dataset = SortDataset(np.random.default_rng(0))
    record = {"losses": [], "grad_norms": [], "n_params": model.n_params}
    record["group_sizes"] = [len(group["params"]) for group in optimizer.param_groups]
    model.train()
    for it in range(steps):
        batch = [dataset[4 * it + i] for i in range(4)]
        x = torch.stack([b[0] for b in batch]).to(device)
        y = torch.stack([b[1] for b in batch]).to(device)
        logits, loss = model(x, y)
        model.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        record["losses"].append(loss.item())
        record["grad_norms"].append(norm.item())
    model.eval()
    inp = torch.tensor([[2, 0, 1, 1]], dtype=torch.long, device=device)
    cat = model.generate(inp, LENGTH, temperature=0.8, do_sample=False)
    record["sorted"] = cat[0, LENGTH:].tolist()
    return record


if __name__ == "__main__":
    print(train(build()))
