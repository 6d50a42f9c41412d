"""Save and resume: a GRU sequence classifier trained a few steps, its model and optimizer
state_dicts saved with torch.save, loaded into a fresh model and optimizer with torch.load and
load_state_dict, and trained on; the resumed run must match the uninterrupted one."""

from __future__ import annotations

import io

import numpy as np
from shim import F, nn, optim, torch


def make_data(n=24, length=6, seed=3):
    """Sequences of 2-d points; the label says whether the first coordinate's sum is positive."""
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 1, size=(n, length, 2)).astype(np.float32)
    y = (x[:, :, 0].sum(axis=1) > 0).astype(np.int64)
    return torch.tensor(x), torch.tensor(y)


class GRUClassifier(nn.Module):
    def __init__(self, hidden=8):
        super().__init__()
        self.gru = nn.GRU(2, hidden, batch_first=True)
        self.fc = nn.Linear(hidden, 2)

    def forward(self, x):
        _, h = self.gru(x)
        return self.fc(h[-1])


def build():
    torch.manual_seed(0)
    return GRUClassifier()


def steps_of(model, optimizer, x, y, first, count):
    losses = []
    for step in range(first, first + count):
        batch = slice((step % 3) * 8, (step % 3) * 8 + 8)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x[batch]), y[batch])
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def train(model, steps=5):
    x, y = make_data()
    half = steps // 2
    optimizer = optim.SGD(model.parameters(), lr=0.5, momentum=0.9, nesterov=True)
    losses = steps_of(model, optimizer, x, y, 0, half)

    buffer = io.BytesIO()
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": half}, buffer)
    buffer.seek(0)

    continued = steps_of(model, optimizer, x, y, half, steps - half)

    checkpoint = torch.load(buffer)
    resumed_model = GRUClassifier()
    resumed_model.load_state_dict(checkpoint["model"])
    resumed_optimizer = optim.SGD(resumed_model.parameters(), lr=0.5, momentum=0.9, nesterov=True)
    resumed_optimizer.load_state_dict(checkpoint["optimizer"])
    resumed = steps_of(resumed_model, resumed_optimizer, x, y, checkpoint["step"], steps - half)

    with torch.no_grad():
        accuracy = (resumed_model(x).argmax(dim=1) == y).float().mean().item()
        same = all(torch.equal(p, q) for p, q in zip(model.parameters(), resumed_model.parameters()))
    return {"losses": losses + continued, "resumed": losses + resumed, "accuracy": accuracy, "same_params": same}


if __name__ == "__main__":
    print(train(build(), steps=20))
