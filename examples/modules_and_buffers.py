"""A small classifier built as a PyTorch user builds one, trained for a few steps.

It uses what real models rely on: ``nn.ModuleList`` of residual blocks, an ``nn.ModuleDict``
of heads, buffers holding the input normalisation (saved with the model) and a step counter
(not saved), ``apply`` with ``nn.init``, ``state_dict`` / ``load_state_dict`` and ``.to()``.
Apart from the import line, this is PyTorch code.

    python examples/modules_and_buffers.py --steps 40 --device vulkan:0
"""

from __future__ import annotations

import argparse
from collections import OrderedDict

import numpy as np

import vkml as torch  # the one line that differs from the PyTorch program
import vkml.nn as nn
import vkml.nn.functional as F


class Residual(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.mlp = nn.Sequential(
            OrderedDict(up=nn.Linear(width, 2 * width), act=nn.GELU(), down=nn.Linear(2 * width, width))
        )

    def forward(self, x):
        return x + self.mlp(self.norm(x))


class Classifier(nn.Module):
    def __init__(self, features: int, width: int, classes: int, depth: int):
        super().__init__()
        self.register_buffer("mean", torch.zeros(features))
        self.register_buffer("std", torch.ones(features))
        self.register_buffer("steps", torch.zeros((), dtype=torch.int64), persistent=False)
        self.stem = nn.Linear(features, width)
        self.blocks = nn.ModuleList([Residual(width) for _ in range(depth)])
        self.heads = nn.ModuleDict({"label": nn.Linear(width, classes), "radius": nn.Linear(width, 1)})
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.xavier_uniform_(module.weight)
            nn.init.zeros_(module.bias)

    def forward(self, x):
        x = self.stem((x - self.mean) / self.std)
        for block in self.blocks:
            x = block(x)
        return {name: head(x) for name, head in self.heads.items()}


def make_data(n: int, seed: int = 0):
    """Three Gaussian blobs in 4-D; the label is the blob, the radius each point's distance from the origin."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 3, size=(3, 4)) + 10
    labels = rng.integers(0, 3, size=n)
    points = (centres[labels] + rng.normal(0, 1, size=(n, 4))).astype(np.float32)
    return points, labels, np.linalg.norm(points, axis=1).astype(np.float32)


def main(steps: int = 40, device: str = "cpu", batch: int = 64) -> list[float]:
    torch.manual_seed(0)
    points, labels, radii = make_data(512)
    model = Classifier(features=4, width=16, classes=3, depth=2)
    model.mean = torch.tensor(points.mean(axis=0))  # a buffer: assigning replaces it
    model.std = torch.tensor(points.std(axis=0))
    model.to(device)
    print(model)
    print("parameters:", sum(p.numel() for p in model.parameters()), "| saved:", ", ".join(model.state_dict()))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    x, y = torch.tensor(points, device=device), torch.tensor(labels, device=device)
    r = torch.tensor(radii, device=device)
    losses = []
    model.train()
    for step in range(steps):
        start = (step * batch) % len(points)
        xb, yb, rb = x[start : start + batch], y[start : start + batch], r[start : start + batch]
        out = model(xb)
        loss = F.cross_entropy(out["label"], yb) + 0.01 * F.mse_loss(out["radius"].squeeze(1), rb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        model.steps = model.steps + 1
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        accuracy = (model(x)["label"].argmax(dim=1) == y).float().mean().item()
    # A checkpoint round trip: a fresh model loads the saved state and predicts the same.
    restored = Classifier(features=4, width=16, classes=3, depth=2).to(device)
    print("load:", restored.load_state_dict(model.state_dict()))
    restored.eval()
    with torch.no_grad():
        same = np.array_equal(restored(x)["label"].numpy(), model(x)["label"].numpy())
    print(f"steps: {int(model.steps.item())} | accuracy: {accuracy:.3f} | restored model agrees: {same}")
    print(f"loss: {losses[0]:.4f} -> {losses[-1]:.4f}")
    return losses


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    main(args.steps, args.device)
