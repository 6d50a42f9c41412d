"""An MLP classifier: DataLoader over a TensorDataset, SGD with momentum, StepLR, eval accuracy."""

from __future__ import annotations

import numpy as np
from shim import DataLoader, F, TensorDataset, lr_scheduler, nn, optim, torch

DROPOUT = 0.2
SHUFFLE = True


def make_data(n=96, features=10, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(0, 2, size=(classes, features))
    labels = rng.integers(0, classes, size=n)
    x = centers[labels] + rng.normal(0, 1, size=(n, features))
    return torch.tensor(x, dtype=torch.float32), torch.tensor(labels)


class MLP(nn.Module):
    def __init__(self, features=10, hidden=32, classes=3):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(features, hidden),
            nn.ReLU(),
            nn.Dropout(DROPOUT),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, classes),
        )

    def forward(self, x):
        return self.net(x)


def build():
    torch.manual_seed(0)
    return MLP()


def evaluate(model, loader):
    model.eval()
    correct, total, loss = 0, 0, 0.0
    with torch.no_grad():
        for x, y in loader:
            logits = model(x)
            loss += F.cross_entropy(logits, y, reduction="sum").item()
            pred = logits.argmax(dim=1)
            correct += (pred == y).sum().item()
            total += y.size(0)
    return loss / total, correct / total


def train(model, steps=5):
    x, y = make_data()
    loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=SHUFFLE)
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    losses = []
    model.train()
    while len(losses) < steps:
        for inputs, targets in loader:
            optimizer.zero_grad()
            loss = criterion(model(inputs), targets)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            if len(losses) == steps:
                break
        scheduler.step()
    eval_loss, accuracy = evaluate(model, DataLoader(TensorDataset(x, y), batch_size=32))
    return {"losses": losses, "eval_loss": eval_loss, "accuracy": accuracy, "lr": scheduler.get_last_lr()[0]}


if __name__ == "__main__":
    print(train(build(), steps=20))
