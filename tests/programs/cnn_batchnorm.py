"""A small CNN: Conv2d, BatchNorm2d, ReLU, MaxPool2d, Dropout, Flatten, Linear; Adam; eval accuracy."""

from __future__ import annotations

import numpy as np
from shim import F, nn, optim, torch

DROPOUT = 0.25


def make_images(n=32, size=8, seed=1):
    """Noisy images of a horizontal bar (0) or a vertical bar (1)."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, size=n)
    images = rng.normal(0, 0.3, size=(n, 1, size, size)).astype(np.float32)
    for image, label in zip(images, labels):
        r, c = rng.integers(0, size - 4, size=2)
        if label == 0:
            image[0, r + 1, c : c + 4] += 1.0
        else:
            image[0, r : r + 4, c + 1] += 1.0
    return torch.from_numpy(images), torch.tensor(labels)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, kernel_size=3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 8, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.dropout = nn.Dropout(DROPOUT)
        self.fc = nn.Linear(8 * 2 * 2, 2)

    def forward(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        x = self.pool(F.relu(self.bn2(self.conv2(x))))
        x = torch.flatten(x, 1)
        x = self.dropout(x)
        return F.log_softmax(self.fc(x), dim=1)


def build():
    torch.manual_seed(0)
    return Net()


def train(model, steps=5):
    images, labels = make_images()
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    model.train()
    for step in range(steps):
        batch = slice((step % 2) * 16, (step % 2) * 16 + 16)
        optimizer.zero_grad()
        output = model(images[batch])
        loss = F.nll_loss(output, labels[batch])
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        output = model(images)
        test_loss = F.nll_loss(output, labels, reduction="sum").item() / len(labels)
        pred = output.argmax(dim=1, keepdim=True)
        correct = pred.eq(labels.view_as(pred)).sum().item()
    return {
        "losses": losses,
        "test_loss": test_loss,
        "accuracy": correct / len(labels),
        "running_mean": model.bn1.running_mean.tolist(),
        "running_var": model.bn2.running_var.tolist(),
    }


if __name__ == "__main__":
    print(train(build(), steps=20))
