"""Stochastic weight averaging and an EMA of the weights, as torch.optim.swa_utils' users write it.

Idioms: ``AveragedModel(model)`` for SWA and ``AveragedModel(model,
multi_avg_fn=get_ema_multi_avg_fn(decay))`` for an EMA updated every batch; a ``CosineAnnealingLR``
until ``swa_start``, then ``SWALR(optimizer, swa_lr=..., anneal_epochs=..., anneal_strategy="cos")``;
``swa_model.update_parameters(model)`` once an epoch; ``update_bn(loader, swa_model)`` recomputing
BatchNorm's running statistics for the averaged weights (a loader of ``(x, y)`` pairs, moved to
``device=``);
``swa_model.n_averaged``; the averaged model evaluated under ``torch.no_grad()``.
"""

from __future__ import annotations

import numpy as np
from shim import DataLoader, F, TensorDataset, lr_scheduler, nn, optim, torch

swa_utils = optim.swa_utils
SHUFFLE = True
DEVICE = "cpu"
N, FEATURES, BATCH = 40, 5, 10


def make_data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 1, size=(N, FEATURES)).astype(np.float32)
    y = np.sin(x @ rng.normal(0, 1, size=(FEATURES, 1))).astype(np.float32) + 0.3
    return torch.from_numpy(x), torch.from_numpy(y)


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(FEATURES, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 8), nn.Tanh())
        self.head = nn.Linear(8, 1)

    def forward(self, x):
        return self.head(self.body(x))


def build():
    torch.manual_seed(0)
    return Regressor()


def evaluate(model, x, y):
    model.eval()
    with torch.no_grad():
        return F.mse_loss(model(x), y).item()


def train(model, steps=4):
    device = torch.device(DEVICE)
    model = model.to(device)
    x, y = make_data()
    loader = DataLoader(TensorDataset(x, y), batch_size=BATCH, shuffle=SHUFFLE)
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    scheduler = lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps)
    swa_model = swa_utils.AveragedModel(model)
    ema_model = swa_utils.AveragedModel(model, multi_avg_fn=swa_utils.get_ema_multi_avg_fn(0.9))
    swa_start = steps // 2
    swa_scheduler = swa_utils.SWALR(optimizer, swa_lr=0.05, anneal_epochs=2, anneal_strategy="cos")

    losses, lrs = [], []
    for epoch in range(steps):
        model.train()
        total = 0.0
        for inputs, targets in loader:
            inputs, targets = inputs.to(device), targets.to(device)
            optimizer.zero_grad()
            loss = F.mse_loss(model(inputs), targets)
            loss.backward()
            optimizer.step()
            ema_model.update_parameters(model)
            total += loss.item() * inputs.size(0)
        losses.append(total / len(loader.dataset))
        if epoch >= swa_start:
            swa_model.update_parameters(model)
            swa_scheduler.step()
        else:
            scheduler.step()
        lrs.append(optimizer.param_groups[0]["lr"])

    swa_utils.update_bn(loader, swa_model, device=device)
    ema_model.train()
    swa_utils.update_bn(loader, ema_model, device=device)
    x, y = x.to(device), y.to(device)
    bn = swa_model.module.body[1]
    return {
        "losses": losses,
        "lrs": lrs,
        "model_loss": evaluate(model, x, y),
        "swa_loss": evaluate(swa_model, x, y),
        "ema_loss": evaluate(ema_model, x, y),
        "n_averaged": [swa_model.n_averaged.item(), ema_model.n_averaged.item()],
        "bn_running_mean": bn.running_mean.tolist(),
        "bn_running_var": bn.running_var.tolist(),
        "bn_batches": bn.num_batches_tracked.item(),
        "swa_head": swa_model.module.head.weight.flatten().tolist(),
    }


if __name__ == "__main__":
    print(train(build(), steps=10))
