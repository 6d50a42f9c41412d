"""``make demo``: train a small classifier on ``best_device()``, then the same run on the CPU reference.

The data are three interleaved spirals, generated here (nothing is downloaded). The model
is a two-hidden-layer MLP with dropout, trained with Adam; every step is three submissions —
forward, gradients, update — that the host does not wait for until it reads the loss, which
needs only the first (vkml/frontend/autograd.py). Run with ``python -m vkml.demo`` (``--epochs N`` to shorten).
The same seed gives the same bits on every device, so the run on the CPU reference backend
must reproduce every loss bit for bit.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field

import numpy as np

import vkml
import vkml.nn as nn
import vkml.nn.functional as F

from . import debug
from .utils.progress import progress_bar

CLASSES = 3
POINTS_PER_CLASS = 300
TRAIN_POINTS = 600
BATCH = 60
WIDTH = 64  # hidden units per layer
EPOCHS = 12
SEED = 0


def make_spirals(points_per_class: int = POINTS_PER_CLASS, seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    """(x, y): ``CLASSES`` spiral arms in the plane with angular noise, shuffled; x float32 (n, 2), y int64."""
    g = np.random.default_rng(seed)
    xs, ys = [], []
    for c in range(CLASSES):
        radius = np.linspace(0.05, 1.0, points_per_class)
        angle = np.linspace(c * 4.0, c * 4.0 + 4.0, points_per_class) + g.standard_normal(points_per_class) * 0.2
        xs.append(np.stack([radius * np.sin(angle), radius * np.cos(angle)], axis=1))
        ys.append(np.full(points_per_class, c))
    order = g.permutation(CLASSES * points_per_class)
    return np.concatenate(xs)[order].astype(np.float32), np.concatenate(ys)[order].astype(np.int64)


def make_model(device, width: int = WIDTH) -> nn.Module:
    """The demo's MLP: 2 → width → width → 3, ReLU, dropout 0.1 (bench/bench_training.py scales ``width``)."""
    vkml.manual_seed(SEED)  # PyTorch's initial weights; weights and masks the same bits on every device
    model = nn.Sequential(
        nn.Linear(2, width), nn.ReLU(), nn.Dropout(0.1), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, CLASSES)
    )
    return model.to(device)


@dataclass
class History:
    losses: list[float] = field(default_factory=list)  # every step's loss, as float32 values
    epochs: list[dict] = field(default_factory=list)


def train_step(model: nn.Module, optimizer, x, y) -> float:
    """One step of the demo's loop (bench/bench_training.py times this very function): the loss before the update."""
    loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()  # submits the forward as it starts, the gradients as it ends
    optimizer.step()  # submits the update
    return loss.item()  # waits for the forward only: the gradients and the update may still run


def accuracy(model: nn.Module, x, y) -> float:
    model.eval()
    with vkml.no_grad():
        hit = (model(x).argmax(dim=1) == y).float().mean().item()
    model.train()
    return hit


def train(device, data, epochs: int = EPOCHS, show: bool = True) -> History:
    """Train on ``device``; print a progress bar and one line per epoch when ``show``."""
    x, y = data
    x_train, y_train = vkml.tensor(x[:TRAIN_POINTS], device=device), vkml.tensor(y[:TRAIN_POINTS], device=device)
    x_test, y_test = vkml.tensor(x[TRAIN_POINTS:], device=device), vkml.tensor(y[TRAIN_POINTS:], device=device)
    model = make_model(device)
    optimizer = vkml.optim.Adam(model.parameters(), lr=0.01)
    steps = TRAIN_POINTS // BATCH
    history = History()
    live = show and sys.stdout.isatty()
    for epoch in range(1, epochs + 1):
        epoch_losses, step_seconds = [], 0.0
        # The shared bar (tqdm when installed), on stdout with the epoch lines; erased when the epoch ends.
        bar = progress_bar(
            range(steps),
            desc=f"  epoch {epoch:>2}/{epochs}",
            unit="step",
            disable=not live,
            leave=False,
            file=sys.stdout,
        )
        for step in bar:
            batch = slice(step * BATCH, (step + 1) * BATCH)  # a view: no copy, no upload
            debug.reset_counters()
            start = time.perf_counter()
            value = train_step(model, optimizer, x_train[batch], y_train[batch])
            step_seconds += time.perf_counter() - start
            counts = debug.counters()
            epoch_losses.append(value)
            bar.set_postfix_str(f"loss {value:.4f}", refresh=False)
        history.losses += epoch_losses
        stats = {
            "loss": float(np.mean(epoch_losses)),
            "train_acc": accuracy(model, x_train, y_train),
            "test_acc": accuracy(model, x_test, y_test),
            "ms_per_step": 1e3 * step_seconds / steps,
            "kernels": counts["dispatches"],
            "submissions": counts["submissions"],
        }
        history.epochs.append(stats)
        if show:
            print(
                f"  epoch {epoch:>2}/{epochs}  loss {stats['loss']:.4f}  "
                f"train {stats['train_acc']:6.1%}  test {stats['test_acc']:6.1%}  "
                f"{stats['ms_per_step']:6.1f} ms/step  {stats['kernels']} kernels, "
                f"{stats['submissions']} submission{'s' if stats['submissions'] != 1 else ''} per step"
            )
    return history


def print_devices() -> None:
    reports = vkml.vulkan_device_reports()
    print("Vulkan devices:")
    for r in reports:
        print(
            f"  vulkan:{r['index']}  {r['name']}  ({r['device_type']}, driver {r.get('driver_name', '?')} "
            f"{r.get('driver_version', '')}, Vulkan {r.get('api_version', '?')})"
        )
    if not reports:
        print("  none found: running on the CPU reference backend")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=EPOCHS)
    args = parser.parse_args(argv)
    print_devices()
    device = vkml.best_device()
    print(f"best_device() -> {device.name}\n")
    data = make_spirals()
    print(
        f"Data: {CLASSES} interleaved spirals, {TRAIN_POINTS} training and {len(data[1]) - TRAIN_POINTS} test "
        f"points (generated, seed {SEED})"
    )
    print(f"Model: {make_model('cpu')!r}".replace("\n", "\n  "))
    print(f"Adam(lr=0.01), batches of {BATCH}, {args.epochs} epochs\n")
    print(f"Training on {device.name}:")
    history = train(device, data, args.epochs)
    final = history.epochs[-1]
    print(f"\nFinal test accuracy on {device.name}: {final['test_acc']:.1%}")
    if device.name == "cpu":
        print("The best device is the CPU reference backend: no other device to compare with.")
        return 0
    print("\nThe same run on the CPU reference backend (the IR interpreter):")
    reference = train(vkml.device("cpu"), data, args.epochs)
    ours = np.array(history.losses, np.float32).view(np.uint32)
    theirs = np.array(reference.losses, np.float32).view(np.uint32)
    same = np.array_equal(ours, theirs)
    print(f"\nLoss bits on {device.name} and cpu equal at every one of {len(ours)} steps: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
