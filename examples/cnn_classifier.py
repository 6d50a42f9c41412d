"""A small convolutional classifier, written as a PyTorch user writes it: only the import lines differ.

It trains on scikit-learn's handwritten digits (8x8 images, 10 classes) when scikit-learn is
installed, else on synthetic 12x12 pictures of three shapes (a horizontal bar, a vertical bar, a
square) at random places, with noise. The network is Conv2d, BatchNorm2d, ReLU, MaxPool2d twice,
then Flatten and Linear; train/eval mode switch batch statistics and running ones. The loop is a
whole script's: a shuffled DataLoader over a TensorDataset, SGD with momentum and a cosine
learning-rate schedule, a progress bar (tqdm when installed, else a one-line bar), checkpoints that a
later run resumes bit for bit, the accuracy on held-out images and a loss plot (matplotlib, when
installed).

    python examples/cnn_classifier.py --steps 60 --device vulkan:0 --plot loss.png
    python examples/cnn_classifier.py --steps 60 --checkpoint cnn.ckpt --stop-after 30   # interrupted ...
    python examples/cnn_classifier.py --steps 60 --checkpoint cnn.ckpt --resume          # ... and resumed
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import vkml as torch  # the only lines that differ from the PyTorch program
import vkml.nn as nn
import vkml.nn.functional as F
from vkml.utils.data import DataLoader, Subset, TensorDataset

try:
    from tqdm import tqdm
except ImportError:  # a one-line bar with the part of tqdm's interface used here
    tqdm = None


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


def load_images(synthetic: bool = False):
    """(images (N, 1, H, W) float32, labels (N,) int64, classes, name): scikit-learn's digits, else the shapes."""
    if not synthetic:
        try:
            from sklearn.datasets import load_digits
        except ImportError:
            print("scikit-learn is not installed: training on synthetic shapes")
        else:
            digits = load_digits()
            images = (digits.images / 16.0).astype(np.float32)[:, None]
            return images, digits.target.astype(np.int64), 10, "scikit-learn digits"
    images, labels = make_images(320)
    return images, labels.astype(np.int64), 3, "synthetic shapes"


class SmallCNN(nn.Module):
    def __init__(self, classes: int = 3, size: int = 12):
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
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(16 * (size // 4) ** 2, classes))

    def forward(self, x):
        return self.classifier(self.features(x))


def epoch_loader(dataset, batch_size, seed, epoch, skip=0):
    """The batches of one epoch in an order fixed by (seed, epoch), after the first ``skip`` (a resumed
    run continues the interrupted epoch); the loader's own generator keeps the global one untouched."""
    generator = torch.Generator().manual_seed(seed + epoch)
    order = torch.randperm(len(dataset), generator=generator).tolist()
    subset = Subset(dataset, order[skip * batch_size :])
    return DataLoader(subset, batch_size=batch_size, drop_last=True, generator=generator)


class Bar:
    """A progress bar on stderr, for when tqdm is not installed."""

    def __init__(self, iterable, total, initial=0, desc="", disable=False):
        self.iterable, self.total, self.n, self.desc, self.disable = iterable, total, initial, desc, disable
        self.postfix, self.start = "", time.perf_counter()

    def __iter__(self):
        for item in self.iterable:
            yield item
            self.n += 1
            if not self.disable:
                done = 30 * self.n // max(1, self.total)
                bar = "#" * done + "." * (30 - done)
                print(
                    f"\r{self.desc}: [{bar}] {self.n}/{self.total} {self.postfix}", end="", file=sys.stderr, flush=True
                )
        if not self.disable:
            print(file=sys.stderr)

    def set_postfix_str(self, text):
        self.postfix = text


def plot_losses(losses, path):
    """Write the training loss per step to ``path`` (a PNG) with matplotlib; say so when it is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"loss plot: matplotlib is not installed, {path} not written")
        return
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(range(len(losses)), losses)
    ax.set_xlabel("step")
    ax.set_ylabel("training loss")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    print(f"loss plot: {path}")


def main(
    steps: int = 30,
    device: str = "cpu",
    batch: int = 32,
    seed: int = 0,
    synthetic: bool = False,
    checkpoint=None,
    resume: bool = False,
    stop_after=None,
    plot=None,
    progress: bool = True,
) -> list[float]:
    torch.manual_seed(seed)
    images, labels, classes, name = load_images(synthetic)
    held_out = len(images) // 5
    x, y = torch.tensor(images), torch.tensor(labels)
    train_set = TensorDataset(x[held_out:], y[held_out:])
    x_test, y_test = x[:held_out].to(device), y[:held_out].to(device)
    per_epoch = len(train_set) // batch
    model = SmallCNN(classes, images.shape[-1]).to(device)
    print(
        f"data: {name}, {len(train_set)} training and {held_out} held-out images of {images.shape[-1]}x{images.shape[-1]}"
    )
    print(model)
    print("parameters:", sum(p.numel() for p in model.parameters()))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps, eta_min=0.005)
    losses, start = [], 0
    if resume:
        state = torch.load(checkpoint, map_location=device)
        model.load_state_dict(state["model"])  # the BatchNorm running statistics too
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        torch.set_rng_state(state["rng"].cpu())
        losses, start = list(state["losses"]), state["step"]
        print(f"resumed from {checkpoint} at step {start}")
    end = steps if stop_after is None else min(steps, stop_after)

    def batches():
        step = start
        while step < end:
            for xb, yb in epoch_loader(train_set, batch, seed, step // per_epoch, skip=step % per_epoch):
                yield step, xb, yb
                step += 1
                if step == end:
                    break

    model.train()
    bar = (tqdm or Bar)(batches(), total=steps, initial=start, desc="training", disable=not progress)
    for step, xb, yb in bar:
        out = model(xb.to(device))
        loss = F.cross_entropy(out, yb.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        bar.set_postfix_str(f"loss {losses[-1]:.4f}")
        print(f"step {step}: loss {losses[-1]:.6f}")
    if checkpoint is not None:
        state = {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "rng": torch.get_rng_state(),
            "step": end,
            "losses": losses,
        }
        torch.save(state, checkpoint)
        print(f"checkpoint: {checkpoint} at step {end}")
    if end < steps:
        print(f"stopped at step {end} of {steps}")
        return losses
    model.eval()
    with torch.no_grad():
        accuracy = (model(x_test).argmax(dim=1) == y_test).float().mean().item()
    tracked = model.features[1].num_batches_tracked.item()
    print(f"batches tracked: {tracked} | held-out accuracy: {accuracy:.3f}")
    print(f"loss: {losses[0]:.4f} -> {losses[-1]:.4f}")
    if plot is not None:
        plot_losses(losses, plot)
    return losses


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30, help="steps of the whole run (the schedule's length)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--synthetic", action="store_true", help="the synthetic shapes even with scikit-learn")
    parser.add_argument("--checkpoint", default=None, help="a file to save the run to at its end")
    parser.add_argument("--resume", action="store_true", help="continue the run saved in --checkpoint")
    parser.add_argument("--stop-after", type=int, default=None, help="stop (and save) after this step")
    parser.add_argument("--plot", default=None, help="write the loss curve to this PNG (needs matplotlib)")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args()
    main(
        args.steps,
        args.device,
        args.batch,
        synthetic=args.synthetic,
        checkpoint=args.checkpoint,
        resume=args.resume,
        stop_after=args.stop_after,
        plot=args.plot,
        progress=not args.no_progress,
    )
