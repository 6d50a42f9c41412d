"""Learning-rate schedules, gradient accumulation, clipping and early stopping in one training loop.

Idioms: ``OneCycleLR(max_lr=..., total_steps=..., pct_start=..., anneal_strategy=...,
div_factor=..., final_div_factor=...)`` stepped per optimizer step (``SCHEDULE="onecycle"``), or
``CosineAnnealingWarmRestarts(T_0, T_mult, eta_min)`` stepped with a fractional epoch
(``"warm_restarts"``), or ``SequentialLR`` of ``LinearLR`` warmup and ``ExponentialLR``
(``"sequential"``), or ``ChainedScheduler`` of ``ConstantLR`` and ``StepLR`` (``"chained"``);
``scheduler.get_last_lr()``; gradient accumulation (the loss divided by ``ACCUMULATE`` and stepped
every ``ACCUMULATE`` batches); ``clip_grad_norm_(..., error_if_nonfinite=True, foreach=True)``
returning the total norm, then ``clip_grad_value_``; a poisoned batch caught by
``error_if_nonfinite`` (RuntimeError) and skipped; ``ReduceLROnPlateau(mode="min", factor,
patience, threshold, cooldown, min_lr)`` on a validation loss with early stopping and the best
weights kept with ``copy.deepcopy(model.state_dict())``; scheduler ``state_dict()`` round trip.
"""

from __future__ import annotations

import copy

import numpy as np
from shim import DataLoader, F, TensorDataset, lr_scheduler, nn, optim, torch

SHUFFLE = True
SCHEDULE = "onecycle"
ACCUMULATE = 2
N, FEATURES, BATCH = 48, 4, 8


def make_data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 1, size=(N, FEATURES)).astype(np.float32)
    y = (x**2 @ np.array([1.0, -0.5, 0.3, 0.0], dtype=np.float32) + 0.1 * rng.normal(size=N)).astype(np.float32)
    return torch.from_numpy(x), torch.from_numpy(y).unsqueeze(1)


def build():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(FEATURES, 32), nn.SiLU(), nn.Linear(32, 16), nn.SiLU(), nn.Linear(16, 1))


def make_scheduler(optimizer, steps_per_epoch, epochs):
    if SCHEDULE == "onecycle":
        return lr_scheduler.OneCycleLR(
            optimizer,
            max_lr=0.05,
            total_steps=steps_per_epoch * epochs,
            pct_start=0.3,
            anneal_strategy="cos",
            div_factor=10.0,
            final_div_factor=100.0,
        )
    if SCHEDULE == "warm_restarts":
        return lr_scheduler.CosineAnnealingWarmRestarts(optimizer, T_0=2, T_mult=2, eta_min=1e-4)
    if SCHEDULE == "sequential":
        warmup = lr_scheduler.LinearLR(optimizer, start_factor=0.1, end_factor=1.0, total_iters=3)
        decay = lr_scheduler.ExponentialLR(optimizer, gamma=0.8)
        return lr_scheduler.SequentialLR(optimizer, schedulers=[warmup, decay], milestones=[3])
    constant = lr_scheduler.ConstantLR(optimizer, factor=0.5, total_iters=2)
    step = lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    return lr_scheduler.ChainedScheduler([constant, step])


def train(model, steps=3):
    x, y = make_data()
    train_set = TensorDataset(x[:32], y[:32])
    val_x, val_y = x[32:], y[32:]
    loader = DataLoader(train_set, batch_size=BATCH, shuffle=SHUFFLE, drop_last=True)
    optimizer = optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.01)
    steps_per_epoch = len(loader) // ACCUMULATE
    scheduler = make_scheduler(optimizer, steps_per_epoch, steps)
    plateau_model = copy.deepcopy(model)
    plateau_opt = optim.SGD(plateau_model.parameters(), lr=0.05, momentum=0.9)
    plateau = lr_scheduler.ReduceLROnPlateau(
        plateau_opt, mode="min", factor=0.5, patience=1, threshold=1e-3, cooldown=1, min_lr=1e-3
    )

    losses, lrs, norms, skipped = [], [], [], 0
    for epoch in range(steps):
        model.train()
        optimizer.zero_grad()
        total = 0.0
        for i, (inputs, targets) in enumerate(loader):
            if epoch == 1 and i == 0:
                inputs = inputs.clone()
                inputs[0, 0] = float("inf")  # a corrupt batch
            loss = F.mse_loss(model(inputs), targets) / ACCUMULATE
            loss.backward()
            if (i + 1) % ACCUMULATE:
                continue
            try:
                norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0, error_if_nonfinite=True, foreach=True)
            except RuntimeError:
                skipped += 1
                optimizer.zero_grad()
                continue
            nn.utils.clip_grad_value_(model.parameters(), clip_value=0.5)
            norms.append(norm.item())
            optimizer.step()
            optimizer.zero_grad()
            total += loss.item() * ACCUMULATE
            if SCHEDULE == "warm_restarts":
                scheduler.step(epoch + (i + 1) / len(loader))
            elif SCHEDULE == "onecycle":
                scheduler.step()
            lrs.append(scheduler.get_last_lr()[0])
        if SCHEDULE in ("sequential", "chained"):
            scheduler.step()
            lrs.append(scheduler.get_last_lr()[0])
        losses.append(total)

    restored = make_scheduler(optim.AdamW(build().parameters(), lr=0.01), steps_per_epoch, steps)
    restored.load_state_dict(scheduler.state_dict())

    # plateau schedule with early stopping on the validation loss
    best, best_state, bad_epochs, val_losses, plateau_lrs = float("inf"), None, 0, [], []
    for _epoch in range(3 * steps):
        plateau_model.train()
        for inputs, targets in loader:
            plateau_opt.zero_grad()
            F.mse_loss(plateau_model(inputs), targets).backward()
            plateau_opt.step()
        plateau_model.eval()
        with torch.no_grad():
            val = F.mse_loss(plateau_model(val_x), val_y).item()
        val_losses.append(val)
        plateau.step(val)
        plateau_lrs.append(plateau_opt.param_groups[0]["lr"])
        if val < best - 1e-4:
            best, best_state, bad_epochs = val, copy.deepcopy(plateau_model.state_dict()), 0
        else:
            bad_epochs += 1
            if bad_epochs >= 3:
                break
    plateau_model.load_state_dict(best_state)
    with torch.no_grad():
        best_again = F.mse_loss(plateau_model(val_x), val_y).item()
    return {
        "losses": losses,
        "lrs": lrs,
        "norms": norms,
        "skipped": skipped,
        "restored_lr": restored.get_last_lr(),
        "val_losses": val_losses,
        "plateau_lrs": plateau_lrs,
        "best": [best, best_again],
        "stopped_at": len(val_losses),
    }


if __name__ == "__main__":
    print(train(build(), steps=6))
