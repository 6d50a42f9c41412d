"""LoRA fine-tuning of a frozen network, as a user writes low-rank adapters by hand.

Idioms: a ``LoRALinear`` wrapping an ``nn.Linear`` (``lora_A`` kaiming-uniform, ``lora_B`` zeros,
``scaling = alpha / r``, dropout on the adapter's input) swapped in with ``setattr`` over
``named_modules()``; the base frozen with ``requires_grad_(False)`` and the trainable count
``sum(p.numel() for p in model.parameters() if p.requires_grad)``; AdamW param groups (adapters with
weight decay, the new head without, a higher lr for the head) built from ``named_parameters()``
filtered by ``p.requires_grad``; ``optimizer.param_groups[i]["lr"]`` scaled by hand;
``clip_grad_norm_`` over the trainable parameters; an adapter-only checkpoint (the state_dict
filtered by key) written with ``torch.save`` to ``io.BytesIO`` and loaded into a fresh model with
``load_state_dict(strict=False)`` (its ``missing_keys``/``unexpected_keys``); merging
``W += (B @ A) * scaling`` under ``torch.no_grad()`` and checking the merged model's outputs.
"""

from __future__ import annotations

import io
import math

import numpy as np
from shim import F, nn, optim, torch

DROPOUT = 0.1
DEVICE = "cpu"
N, FEATURES, CLASSES, RANK, ALPHA = 32, 10, 3, 2, 4


class LoRALinear(nn.Module):
    def __init__(self, base: nn.Linear, r=RANK, alpha=ALPHA, dropout=None):
        super().__init__()
        self.base = base
        self.r, self.scaling = r, alpha / r
        self.lora_A = nn.Parameter(torch.empty(r, base.in_features))
        self.lora_B = nn.Parameter(torch.zeros(base.out_features, r))
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
        self.lora_dropout = nn.Dropout(DROPOUT if dropout is None else dropout)
        self.merged = False

    def forward(self, x):
        out = self.base(x)
        if not self.merged:
            out = out + (self.lora_dropout(x) @ self.lora_A.t() @ self.lora_B.t()) * self.scaling
        return out

    @torch.no_grad()
    def merge(self):
        self.base.weight += (self.lora_B @ self.lora_A) * self.scaling
        self.merged = True


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Linear(FEATURES, 24), nn.GELU(), nn.LayerNorm(24), nn.Linear(24, 24), nn.GELU(), nn.Linear(24, 16)
        )
        self.head = nn.Linear(16, CLASSES)

    def forward(self, x):
        return self.head(self.encoder(x))


def add_lora(model):
    for name, module in list(model.encoder.named_modules()):
        if isinstance(module, nn.Linear):
            setattr(model.encoder, name, LoRALinear(module))
    return model


def build():
    torch.manual_seed(0)
    return add_lora(Backbone())


def make_data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 1, size=(N, FEATURES)).astype(np.float32)
    y = (x[:, :CLASSES] * np.array([1.0, -1.0, 0.5], dtype=np.float32)).argmax(1)
    return torch.from_numpy(x), torch.from_numpy(y)


def train(model, steps=4):
    device = torch.device(DEVICE)
    model = model.to(device)
    x, y = (t.to(device) for t in make_data())
    for name, p in model.named_parameters():
        p.requires_grad_("lora_" in name or name.startswith("head."))
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    frozen = sum(p.numel() for p in model.parameters() if not p.requires_grad)

    decay = [p for n, p in model.named_parameters() if p.requires_grad and "lora_" in n]
    head = [p for n, p in model.named_parameters() if p.requires_grad and n.startswith("head.")]
    optimizer = optim.AdamW(
        [{"params": decay, "weight_decay": 0.01}, {"params": head, "weight_decay": 0.0, "lr": 3e-2}],
        lr=1e-2,
        betas=(0.9, 0.98),
    )
    frozen_before = model.encoder[0].base.weight.clone()
    losses, norms = [], []
    model.train()
    for step in range(steps):
        if step == steps // 2:
            for group in optimizer.param_groups:
                group["lr"] *= 0.5
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y, label_smoothing=0.05)
        loss.backward()
        norms.append(nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], 1.0).item())
        optimizer.step()
        losses.append(loss.item())
    base_unchanged = torch.equal(model.encoder[0].base.weight, frozen_before)
    no_base_grad = model.encoder[0].base.weight.grad is None

    adapter_state = {k: v for k, v in model.state_dict().items() if "lora_" in k or k.startswith("head.")}
    buffer = io.BytesIO()
    torch.save(adapter_state, buffer)
    buffer.seek(0)
    restored = build().to(device)
    restored.load_state_dict(
        {k: v for k, v in model.state_dict().items() if "lora_" not in k and "head" not in k}, strict=False
    )
    result = restored.load_state_dict(torch.load(buffer, weights_only=True), strict=False)
    extra = restored.load_state_dict(
        {"head.weight": adapter_state["head.weight"], "extra.scale": torch.ones(1, device=device)}, strict=False
    )

    model.eval()
    restored.eval()
    with torch.no_grad():
        before = model(x)
        same_restored = (restored(x) - before).abs().max().item()
        for module in model.modules():
            if isinstance(module, LoRALinear):
                module.merge()
        after = model(x)
        accuracy = (after.argmax(1) == y).float().mean().item()
    return {
        "losses": losses,
        "grad_norms": norms,
        "trainable": trainable,
        "frozen": frozen,
        "base_unchanged": base_unchanged,
        "no_base_grad": no_base_grad,
        "adapter_keys": sorted(adapter_state),
        "missing": len(result.missing_keys),
        "unexpected": list(result.unexpected_keys),
        "extra_unexpected": list(extra.unexpected_keys),
        "restored_diff": same_restored,
        "merge_diff": (after - before).abs().max().item(),
        "accuracy": accuracy,
        "lrs": [g["lr"] for g in optimizer.param_groups],
    }


if __name__ == "__main__":
    print(train(build(), steps=20))
