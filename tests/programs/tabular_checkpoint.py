"""A tabular binary classifier on imbalanced data, checkpointed to a file and resumed.

Idioms: standardisation by ``mean``/``std`` over dim 0; ``TensorDataset`` and ``DataLoader``
with ``shuffle`` and ``drop_last``, or a ``WeightedRandomSampler`` weighting each sample by its
class's inverse frequency (``SAMPLER``); ``nn.BCEWithLogitsLoss(pos_weight=...)`` on
``logits.squeeze(1)`` against float labels; BatchNorm1d and Dropout; ``torch.sigmoid(logits) >
0.5`` for accuracy, precision and recall under ``model.eval()`` and ``torch.inference_mode()``; a
checkpoint dict (epoch, model and optimizer ``state_dict``, loss) written by ``torch.save`` to a
path and read by ``torch.load(path, map_location=..., weights_only=True)``; a fresh model and
optimizer resumed from it at ``checkpoint["epoch"] + 1`` with ``ReduceLROnPlateau``.
"""

from __future__ import annotations

import os
import tempfile

import numpy as np
from shim import DataLoader, TensorDataset, nn, optim, torch

DROPOUT = 0.2
SHUFFLE = True
SAMPLER = False
DEVICE = "cpu"
FEATURES, BATCH, N = 6, 8, 36


def make_data(seed=0):
    """One positive in four; the label is a noisy linear rule of the features."""
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 1, size=(N, FEATURES)).astype(np.float32) * np.arange(1, FEATURES + 1, dtype=np.float32)
    score = x @ rng.normal(0, 1, size=FEATURES).astype(np.float32)
    y = (score > np.quantile(score, 0.75)).astype(np.float32)
    return torch.from_numpy(x), torch.from_numpy(y)


class TabularNet(nn.Module):
    def __init__(self, in_features=FEATURES, hidden=16):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_features, hidden),
            nn.BatchNorm1d(hidden),
            nn.ReLU(),
            nn.Dropout(DROPOUT),
            nn.Linear(hidden, hidden // 2),
            nn.ReLU(),
            nn.Linear(hidden // 2, 1),
        )

    def forward(self, x):
        return self.net(x)


def build():
    torch.manual_seed(0)
    return TabularNet()


def make_loader(x, y):
    dataset = TensorDataset(x, y)
    if SAMPLER:
        class_counts = torch.bincount(y.long())
        sample_weights = (1.0 / class_counts.float())[y.long()]
        sampler = torch.utils.data.WeightedRandomSampler(sample_weights, num_samples=len(dataset), replacement=True)
        return DataLoader(dataset, batch_size=BATCH, sampler=sampler, drop_last=True)
    return DataLoader(dataset, batch_size=BATCH, shuffle=SHUFFLE, drop_last=True)


def run_epoch(model, loader, criterion, optimizer, device):
    model.train()
    total, batches = 0.0, 0
    for features, labels in loader:
        features, labels = features.to(device), labels.to(device)
        optimizer.zero_grad()
        logits = model(features)
        loss = criterion(logits.squeeze(1), labels)
        loss.backward()
        optimizer.step()
        total += loss.item()
        batches += 1
    return total / batches


def evaluate(model, x, y, device):
    model.eval()
    with torch.inference_mode():
        probs = torch.sigmoid(model(x.to(device))).squeeze(1)
        preds = (probs > 0.5).float()
        y = y.to(device)
        tp = ((preds == 1) & (y == 1)).sum().item()
        fp = ((preds == 1) & (y == 0)).sum().item()
        fn = ((preds == 0) & (y == 1)).sum().item()
        accuracy = (preds == y).float().mean().item()
    return {
        "accuracy": accuracy,
        "precision": tp / (tp + fp) if tp + fp else 0.0,
        "recall": tp / (tp + fn) if tp + fn else 0.0,
    }


def train(model, steps=4):
    """``steps`` epochs: half of them, a checkpoint, then the rest twice (continued and resumed)."""
    device = torch.device(DEVICE)
    model = model.to(device)
    x, y = make_data()
    x = (x - x.mean(dim=0)) / x.std(dim=0)
    loader = make_loader(x, y)
    pos_weight = torch.tensor([(y == 0).sum().item() / (y == 1).sum().item()], device=device)
    criterion = nn.BCEWithLogitsLoss(pos_weight=pos_weight)
    optimizer = optim.Adam(model.parameters(), lr=1e-2, weight_decay=1e-4)
    half = steps // 2
    losses = [run_epoch(model, loader, criterion, optimizer, device) for _ in range(half)]

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "checkpoint.pt")
        torch.save(
            {
                "epoch": half - 1,
                "model_state_dict": model.state_dict(),
                "optimizer_state_dict": optimizer.state_dict(),
                "loss": losses[-1],
            },
            path,
        )
        continued = [run_epoch(model, loader, criterion, optimizer, device) for _ in range(half, steps)]

        checkpoint = torch.load(path, map_location=device, weights_only=True)
    resumed_model = TabularNet().to(device)
    resumed_model.load_state_dict(checkpoint["model_state_dict"])
    resumed_optimizer = optim.Adam(resumed_model.parameters(), lr=1e-2, weight_decay=1e-4)
    resumed_optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
    plateau = optim.lr_scheduler.ReduceLROnPlateau(resumed_optimizer, mode="min", factor=0.5, patience=0)
    resumed = []
    for _ in range(checkpoint["epoch"] + 1, steps):
        resumed.append(run_epoch(resumed_model, loader, criterion, resumed_optimizer, device))
        plateau.step(resumed[-1])
    metrics = evaluate(resumed_model, x, y, device)
    return {
        "losses": losses + continued,
        "resumed": losses + resumed,
        "saved_loss": checkpoint["loss"],
        "lr": resumed_optimizer.param_groups[0]["lr"],
        **metrics,
    }


if __name__ == "__main__":
    print(train(build(), steps=20))
