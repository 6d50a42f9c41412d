"""A nanoGPT-style train.py loop written afresh at tiny sizes, with mixed precision live on the CPU.

Its idioms: a GPT whose attention calls F.scaled_dot_product_attention(is_causal=True) on q, k, v
split from one projection; the token embedding tied to the head (``wte.weight = lm_head.weight``);
AdamW with two parameter groups picked by ``p.dim() >= 2`` (decay and no decay); a cosine schedule
with a linear warmup written into each ``param_group['lr']``; ``torch.autocast(device_type="cpu",
dtype=torch.bfloat16)`` around the forward and loss, with ``torch.amp.GradScaler`` (enabled for
float16 alone) scaling, unscaling and stepping; ``clip_grad_norm_`` after unscale; an
``estimate_loss`` under ``@torch.no_grad()`` that switches ``model.eval()`` and back to
``model.train()``; ``torch.compile(model)``; and a checkpoint of the model and optimizer
state_dicts written with ``torch.save`` and read back with ``torch.load(weights_only=...)`` into a
fresh model and optimizer that train on."""

from __future__ import annotations

import io
import math

from shim import F, nn, torch

AMP_DTYPE = "bfloat16"
DEVICE = "cpu"
VOCAB, BLOCK, EMBD, HEADS, LAYERS = 16, 8, 16, 2, 1


class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(EMBD, 3 * EMBD, bias=False)
        self.c_proj = nn.Linear(EMBD, EMBD, bias=False)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(EMBD, dim=2)
        q = q.view(B, T, HEADS, C // HEADS).transpose(1, 2)
        k = k.view(B, T, HEADS, C // HEADS).transpose(1, 2)
        v = v.view(B, T, HEADS, C // HEADS).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(EMBD)
        self.attn = CausalSelfAttention()
        self.ln_2 = nn.LayerNorm(EMBD)
        self.mlp = nn.Sequential(nn.Linear(EMBD, 4 * EMBD), nn.GELU(approximate="tanh"), nn.Linear(4 * EMBD, EMBD))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.transformer = nn.ModuleDict(
            dict(
                wte=nn.Embedding(VOCAB, EMBD),
                wpe=nn.Embedding(BLOCK, EMBD),
                h=nn.ModuleList([Block() for _ in range(LAYERS)]),
                ln_f=nn.LayerNorm(EMBD),
            )
        )
        self.lm_head = nn.Linear(EMBD, VOCAB, bias=False)
        self.transformer.wte.weight = self.lm_head.weight
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        logits = self.lm_head(x)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss

    def configure_optimizers(self, weight_decay, learning_rate, betas):
        param_dict = {pn: p for pn, p in self.named_parameters() if p.requires_grad}
        decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
        nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
        optim_groups = [
            {"params": decay_params, "weight_decay": weight_decay},
            {"params": nodecay_params, "weight_decay": 0.0},
        ]
        return torch.optim.AdamW(optim_groups, lr=learning_rate, betas=betas)


def get_lr(it, warmup_iters=2, lr_decay_iters=6, learning_rate=3e-3, min_lr=3e-4):
    if it < warmup_iters:
        return learning_rate * (it + 1) / (warmup_iters + 1)
    if it > lr_decay_iters:
        return min_lr
    decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
    coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
    return min_lr + coeff * (learning_rate - min_lr)


def get_batch(step, batch_size=2):
    data = torch.tensor([(i * 5 + i // 3) % VOCAB for i in range(64)])
    ix = [(step * 11 + b * 17) % (len(data) - BLOCK) for b in range(batch_size)]
    x = torch.stack([data[i : i + BLOCK] for i in ix])
    y = torch.stack([data[i + 1 : i + 1 + BLOCK] for i in ix])
    return x.to(DEVICE), y.to(DEVICE)


def build():
    torch.manual_seed(1337)
    return GPT()


def train(model, steps=3):
    ptdtype = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}[AMP_DTYPE]
    device_type = "cuda" if "cuda" in DEVICE else "cpu"
    ctx = torch.autocast(device_type=device_type, dtype=ptdtype, enabled=AMP_DTYPE != "float32")
    scaler = torch.amp.GradScaler(device_type, enabled=(AMP_DTYPE == "float16"))
    model.to(DEVICE)
    optimizer = model.configure_optimizers(0.1, 3e-3, (0.9, 0.95))
    raw_model = model
    model = torch.compile(model)

    @torch.no_grad()
    def estimate_loss():
        model.eval()
        losses = torch.zeros(2)
        for k in range(2):
            X, Y = get_batch(100 + k)
            with ctx:
                _, loss = model(X, Y)
            losses[k] = loss.item()
        model.train()
        return losses.mean()

    record = {"losses": [], "lr": [], "eval": [], "norms": []}
    for it in range(steps):
        lr = get_lr(it)
        for param_group in optimizer.param_groups:
            param_group["lr"] = lr
        if it == steps - 1:
            record["eval"].append(estimate_loss().item())
        X, Y = get_batch(it)
        with ctx:
            logits, loss = model(X, Y)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        record["losses"].append(loss.item())
        record["lr"].append(lr)
        record["norms"].append(norm.item())
        record["logits_dtype"] = str(logits.dtype).split(".")[-1]

    buffer = io.BytesIO()
    torch.save({"model": raw_model.state_dict(), "optimizer": optimizer.state_dict(), "iter_num": steps}, buffer)
    buffer.seek(0)
    checkpoint = torch.load(buffer, map_location=DEVICE, weights_only=False)
    resumed = GPT().to(DEVICE)
    resumed.load_state_dict(checkpoint["model"])
    resumed_optimizer = resumed.configure_optimizers(0.1, 3e-3, (0.9, 0.95))
    resumed_optimizer.load_state_dict(checkpoint["optimizer"])
    X, Y = get_batch(checkpoint["iter_num"])
    with ctx:
        _, loss = resumed(X, Y)
    loss.backward()
    resumed_optimizer.step()
    record["resumed_loss"] = loss.item()
    record["resumed_lr"] = resumed_optimizer.param_groups[0]["lr"]
    record["tied"] = resumed.transformer.wte.weight is resumed.lm_head.weight
    record["groups"] = [len(g["params"]) for g in resumed_optimizer.param_groups]
    return record


if __name__ == "__main__":
    print(train(build()))
