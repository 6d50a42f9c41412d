"""A training loop under ``torch.compile`` that checkpoints and resumes, as nanoGPT's train.py does.

Idioms checked: ``torch._dynamo.config.suppress_errors = True`` and ``torch._dynamo.reset()`` before
compiling; ``model = torch.compile(model)`` trained as the model; a checkpoint of the compiled model's
``state_dict`` (keys prefixed ``_orig_mod.``), the optimizer's and a scheduler's, and the step, saved
with ``torch.save`` to a buffer; on resume the prefix stripped as nanoGPT strips it
(``unwanted_prefix = "_orig_mod."``), ``load_state_dict`` into a fresh model, optimizer and
scheduler, and a ``@torch.compiler.disable`` evaluation; the resumed run must match the uninterrupted one.
"""

from __future__ import annotations

import io

import numpy as np
from shim import F, lr_scheduler, nn, optim, torch


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 3))

    def forward(self, x):
        return self.net(x)


def build():
    torch.manual_seed(0)
    return MLP()


def make_data(n=24, seed=5):
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 1, size=(n, 6)).astype(np.float32)
    y = (x[:, :3].sum(1) > 0).astype(np.int64) + (x[:, 3] > 1).astype(np.int64)
    return torch.tensor(x), torch.tensor(y)


def make_optimizer(model):
    optimizer = optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1, betas=(0.9, 0.95))
    scheduler = lr_scheduler.CosineAnnealingLR(optimizer, T_max=10, eta_min=1e-4)
    return optimizer, scheduler


def run(model, optimizer, scheduler, x, y, first, count):
    losses = []
    for step in range(first, first + count):
        batch = slice((step % 3) * 8, (step % 3) * 8 + 8)
        loss = F.cross_entropy(model(x[batch]), y[batch])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    return losses


@torch.compiler.disable
def evaluate(model, x, y):
    with torch.no_grad():
        return (model(x).argmax(-1) == y).float().mean().item()


def train(model, steps=4):
    torch._dynamo.config.suppress_errors = True
    torch._dynamo.reset()
    x, y = make_data()
    compiled = torch.compile(model)
    optimizer, scheduler = make_optimizer(compiled)
    half = steps // 2
    losses = run(compiled, optimizer, scheduler, x, y, 0, half)

    buffer = io.BytesIO()
    checkpoint = {
        "model": compiled.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "iter_num": half,
    }
    torch.save(checkpoint, buffer)
    keys = list(checkpoint["model"])
    continued = run(compiled, optimizer, scheduler, x, y, half, steps - half)

    buffer.seek(0)
    checkpoint = torch.load(buffer)
    state_dict = checkpoint["model"]
    unwanted_prefix = "_orig_mod."
    for k in list(state_dict.keys()):
        if k.startswith(unwanted_prefix):
            state_dict[k[len(unwanted_prefix) :]] = state_dict.pop(k)
    resumed_model = MLP()
    result = resumed_model.load_state_dict(state_dict)
    resumed_model = torch.compile(resumed_model)
    resumed_optimizer, resumed_scheduler = make_optimizer(resumed_model)
    resumed_optimizer.load_state_dict(checkpoint["optimizer"])
    resumed_scheduler.load_state_dict(checkpoint["scheduler"])
    resumed = run(resumed_model, resumed_optimizer, resumed_scheduler, x, y, checkpoint["iter_num"], steps - half)
    torch._dynamo.config.suppress_errors = False
    return {
        "losses": losses + continued,
        "resumed": losses + resumed,
        "keys": ",".join(keys),
        "loaded": repr(result),
        "lr": resumed_scheduler.get_last_lr(),
        "accuracy": evaluate(resumed_model, x, y),
        "same_params": all(torch.equal(p, q) for p, q in zip(compiled.parameters(), resumed_model.parameters())),
    }


if __name__ == "__main__":
    print(train(build(), steps=6))
