"""A small convolutional classifier trained on synthetic images, written as a PyTorch user writes it.

The images are 12x12 single-channel pictures of three shapes (a horizontal bar, a vertical bar,
a square) at random places, with noise; the network is Conv2d, BatchNorm2d, ReLU, MaxPool2d
twice, then Flatten and Linear. It uses train/eval mode (batch statistics vs running ones),
SGD with momentum, and prints the loss of every step. Apart from the import line, this is
PyTorch code.

    python examples/cnn_classifier.py --steps 30 --device vulkan:0
"""

from __future__ import annotations

import argparse

import numpy as np

import vkml as torch  # the one line that differs from the PyTorch program
import vkml.nn as nn
import vkml.nn.functional as F


def make_images(n: int, size: int = 12, seed: int = 0):
    """``n`` noisy images of a horizontal bar (0), a vertical bar (1) or a square (2) at a random place."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, size=n)
    images = rng.normal(0, 0.3, size=(n, 1, size, size)).astype(np.float32)
    for image, label in zip(images, labels):
        r, c = rng.integers(1, size - 5, size=2)
        if label == 0:
            image[0, r + 2, c : c + 5] += 1.0
        elif label == 1:
            image[0, r : r + 5, c + 2] += 1.0
        else:
            image[0, r : r + 3, c : c + 3] += 1.0
    return images, labels


class SmallCNN(nn.Module):
    def __init__(self, classes: int = 3):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, kernel_size=3, padding=1),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(16 * 3 * 3, classes))

    def forward(self, x):
        return self.classifier(self.features(x))


def main(steps: int = 30, device: str = "cpu", batch: int = 32) -> list[float]:
    torch.manual_seed(0)
    images, labels = make_images(256)
    model = SmallCNN().to(device)
    print(model)
    print("parameters:", sum(p.numel() for p in model.parameters()))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    x, y = torch.tensor(images, device=device), torch.tensor(labels, device=device)
    losses = []
    model.train()
    for step in range(steps):
        start = (step * batch) % len(images)
        out = model(x[start : start + batch])
        loss = F.cross_entropy(out, y[start : start + batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        print(f"step {step}: loss {losses[-1]:.6f}")
    model.eval()
    with torch.no_grad():
        accuracy = (model(x).argmax(dim=1) == y).float().mean().item()
    tracked = model.features[1].num_batches_tracked.item()
    print(f"batches tracked: {tracked} | accuracy: {accuracy:.3f}")
    print(f"loss: {losses[0]:.4f} -> {losses[-1]:.4f}")
    return losses


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    main(args.steps, args.device)
