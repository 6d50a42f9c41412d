"""A training loop with activation checkpointing, an EMA of the weights and gradient accumulation.

Its idioms: blocks run through ``torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)``
while training (and plainly in eval), one of them also with ``checkpoint_sequential``; an EMA model
from ``copy.deepcopy(model)`` with ``requires_grad_(False)`` and ``.eval()``, updated under
``torch.no_grad()`` by ``ema_p.mul_(decay).add_(p.detach(), alpha=1 - decay)`` over
``zip(ema.parameters(), model.parameters())`` and buffers copied with ``copy_``, parameters matched
by ``named_parameters()``/``dict``; gradient accumulation dividing the loss by ``accum_steps`` and
stepping every ``accum_steps`` micro-batches with ``optimizer.zero_grad(set_to_none=True)``;
``torch.optim.AdamW`` with ``amsgrad=True``; ``LinearLR`` warmup chained to ``CosineAnnealingLR`` by
``SequentialLR``; and the EMA's loss under ``torch.inference_mode()``."""

from __future__ import annotations

import copy

import numpy as np
from shim import BACKEND, F, nn, optim, torch

if BACKEND == "torch":
    from torch.utils.checkpoint import checkpoint, checkpoint_sequential
else:
    from vkml.utils.checkpoint import checkpoint, checkpoint_sequential

ACCUM = 2


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 2 * dim)
        self.fc2 = nn.Linear(2 * dim, dim)

    def forward(self, x):
        return x + self.fc2(F.silu(self.fc1(self.norm(x))))


class Net(nn.Module):
    def __init__(self, dim=8, depth=2, classes=3):
        super().__init__()
        self.inp = nn.Linear(4, dim)
        self.blocks = nn.ModuleList([Block(dim) for _ in range(depth)])
        self.tail = nn.Sequential(
            nn.Linear(dim, dim, bias=False), nn.ReLU(), nn.BatchNorm1d(dim), nn.Linear(dim, classes)
        )
        self.grad_checkpointing = True

    def forward(self, x):
        x = self.inp(x)
        for block in self.blocks:
            if self.grad_checkpointing and self.training:
                x = checkpoint(block, x, use_reentrant=False)
            else:
                x = block(x)
        if self.training:
            return checkpoint_sequential(self.tail, 4, x, use_reentrant=False)
        return self.tail(x)


class ModelEma:
    def __init__(self, model, decay=0.9):
        self.module = copy.deepcopy(model)
        self.module.eval()
        self.module.requires_grad_(False)
        self.decay = decay

    @torch.no_grad()
    def update(self, model):
        model_params = dict(model.named_parameters())
        for name, ema_p in self.module.named_parameters():
            ema_p.mul_(self.decay).add_(model_params[name].detach(), alpha=1 - self.decay)
        for ema_b, b in zip(self.module.buffers(), model.buffers()):
            ema_b.copy_(b)


def build():
    torch.manual_seed(7)
    return Net()


def train(model, steps=2):
    rng = np.random.default_rng(2)
    x = torch.tensor(rng.standard_normal((4 * ACCUM * steps, 4)).astype(np.float32))
    y = torch.tensor(rng.integers(0, 3, 4 * ACCUM * steps))
    ema = ModelEma(model)
    optimizer = optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.05, amsgrad=True)
    warmup = optim.lr_scheduler.LinearLR(optimizer, start_factor=0.5, total_iters=1)
    cosine = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=4)
    scheduler = optim.lr_scheduler.SequentialLR(optimizer, [warmup, cosine], milestones=[1])
    record = {"losses": [], "lr": [], "ema_loss": []}
    model.train()
    optimizer.zero_grad(set_to_none=True)
    running = 0.0
    for micro in range(ACCUM * steps):
        xb, yb = x[4 * micro : 4 * micro + 4], y[4 * micro : 4 * micro + 4]
        loss = F.cross_entropy(model(xb), yb) / ACCUM
        loss.backward()
        running += loss.item()
        if (micro + 1) % ACCUM == 0:
            nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            scheduler.step()
            ema.update(model)
            record["losses"].append(running)
            record["lr"].append(optimizer.param_groups[0]["lr"])
            running = 0.0
            with torch.inference_mode():
                record["ema_loss"].append(F.cross_entropy(ema.module(x), y).item())
    record["nbt"] = model.tail[2].num_batches_tracked.item()
    record["running_mean"] = model.tail[2].running_mean.tolist()
    record["grad_is_none"] = all(p.grad is None for p in model.parameters())
    record["ema_requires_grad"] = any(p.requires_grad for p in ema.module.parameters())
    model.eval()
    with torch.no_grad():
        record["eval_loss"] = F.cross_entropy(model(x), y).item()
    return record


if __name__ == "__main__":
    print(train(build()))
