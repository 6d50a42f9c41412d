"""The demo's training step (vkml/demo.py), timed against the same step in PyTorch on the same device.

bench/bench.py calls ``bench_training_step`` (its ``mlp_train_step`` and ``train_peak_memory``
rows); run this file alone for a quick look:

    .venv/bin/python bench/bench_training.py [--device vulkan:0] [--torch-device cuda] [--quick] [--width N --batch N]
                                             [--steps N]

Both sides train the demo's MLP (2 → width → width → 3, ReLU, dropout 0.1) with Adam on the
demo's spirals; a step is forward, backward, update and reading the loss (``loss.item()``,
which waits for the device). The full run is issue 7's size: 4096 wide, batches of 4096
(two 4096² layers: about 0.4 TFLOP a step, so the matmuls dominate); ``--quick`` is the demo's
own size (64 wide, batches of 60: a latency-bound step). Untimed steps come first: one pass over
the batches (each batch is a slice at its own offset, and view offsets are part of a kernel's
structure, so every batch compiles its kernels once), then on until a whole pass compiled nothing
(``vkml.debug.counters``: kernels, pipelines, plans), at most ``WARM_CAP`` steps: the timed steps
are steady ones, and the row's note says how many warm-up steps that took. ``--steps N`` prints
each of the first N steps' compiles and time (a fresh model: what a user's loop sees).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import vkml  # noqa: E402
from vkml import demo  # noqa: E402

FULL_WIDTH = 4096  # issue 7's MLP: the demo's model scaled to 4096 wide, batches of 4096
FULL_BATCH = 4096
WARM_CAP = 40  # untimed steps at most before timing, whatever still compiles


def _torch_model(torch, width: int):
    torch.manual_seed(demo.SEED)
    return torch.nn.Sequential(
        torch.nn.Linear(2, width),
        torch.nn.ReLU(),
        torch.nn.Dropout(0.1),
        torch.nn.Linear(width, width),
        torch.nn.ReLU(),
        torch.nn.Linear(width, demo.CLASSES),
    )


def _compiles() -> int:
    """A count that grows with every compile of vkml's: kernels, driver pipelines, plans."""
    counts = vkml.debug.counters()
    return counts["kernels_compiled"] + counts["pipelines_created"] + counts["plans"]


def _warm(step, batches, compiles=None, cap: int = WARM_CAP) -> int:
    """Untimed steps: a pass over ``batches``, then on until ``len(batches)`` steps in a row left
    ``compiles()`` where it was (a whole pass that compiled nothing), at most ``cap`` steps; without
    ``compiles`` (PyTorch's side) the one pass. Returns the number of steps run."""
    steps = clean = 0
    while steps < len(batches) or (compiles is not None and clean < len(batches) and steps < cap):
        before = compiles() if compiles is not None else 0
        step(*batches[steps % len(batches)])
        steps += 1
        clean = clean + 1 if compiles is not None and compiles() == before else 0
    return steps


def _timed(step, batches, repeats: int, budget_s: float, compiles=None) -> tuple[list[float], int]:
    """Seconds of each of up to ``repeats`` steps after ``_warm``'s untimed ones, stopping once ``budget_s``
    is spent; and the number of untimed steps."""
    warm = _warm(step, batches, compiles)
    seconds, spent = [], 0.0
    for i in range(repeats):
        start = time.perf_counter()
        step(*batches[i % len(batches)])
        seconds.append(time.perf_counter() - start)
        spent += seconds[-1]
        if spent > budget_s:
            break
    return seconds, warm


def _setup(device, width: int, batch: int):
    """The demo's model and Adam on ``device``, and the batches: windows of one dataset tensor."""
    batches = max(1, demo.TRAIN_POINTS // demo.BATCH) if batch == demo.BATCH else 3
    x, y = demo.make_spirals(points_per_class=-(-batch * batches // demo.CLASSES))
    model = demo.make_model(device, width)
    optimizer = vkml.optim.Adam(model.parameters(), lr=0.01)
    xs, ys = vkml.tensor(x, device=device), vkml.tensor(y, device=device)
    return model, optimizer, [(xs[i : i + batch], ys[i : i + batch]) for i in range(0, batch * batches, batch)], x, y


def step_report(device, width: int, batch: int, steps: int) -> list[tuple[int, dict, float]]:
    """The first ``steps`` steps of a fresh model: (step, counts of compiles and moves, seconds) each,
    every step waited for (``synchronize``), as a user's loop meets them."""
    model, optimizer, ours, _, _ = _setup(device, width, batch)
    keys = ("kernels_compiled", "pipelines_created", "plans", "scalars_moved", "recordings_reused")
    report = []
    for i in range(steps):
        before = vkml.debug.counters()
        start = time.perf_counter()
        demo.train_step(model, optimizer, *ours[i % len(ours)])
        device.synchronize()
        seconds = time.perf_counter() - start
        after = vkml.debug.counters()
        report.append((i + 1, {k: after[k] - before[k] for k in keys}, seconds))
    return report


def bench_training_step(
    device=None,
    torch_device=None,
    quick: bool = False,
    repeats: int = 30,
    budget_s: float = 10.0,
    width: int | None = None,
    batch: int | None = None,
):
    """Per-step seconds of the demo's training step in vkml on ``device`` and in torch on ``torch_device``.

    ``width`` and ``batch`` default to 4096 each, or to the demo's 64 and 60 when ``quick``.

    Returns ``{"vkml_seconds": [...], "torch_seconds": [...], "vkml_peak_bytes", "torch_peak_bytes",
    "size", "note"}`` (the contract of bench/bench_special.py).
    """
    import torch

    device = vkml.device(device) if device is not None else vkml.best_device()
    torch_device = torch.device(torch_device or "cpu")
    repeats = min(repeats, 10) if quick else repeats
    width = width or (demo.WIDTH if quick else FULL_WIDTH)
    batch = batch or (demo.BATCH if quick else FULL_BATCH)
    model, optimizer, ours, x, y = _setup(device, width, batch)
    starts = range(0, batch * len(ours), batch)
    if hasattr(device, "reset_peak_memory"):
        device.reset_peak_memory()
    vkml_seconds, warm = _timed(
        lambda a, b: demo.train_step(model, optimizer, a, b), ours, repeats, budget_s, compiles=_compiles
    )
    device.synchronize()  # the last step's gradients and update may still run (loss.item() waits for the forward)
    vkml_peak = device.memory_stats().get("peak_bytes")

    net = _torch_model(torch, width).to(torch_device)
    torch_optimizer = torch.optim.Adam(net.parameters(), lr=0.01)
    xt, yt = torch.from_numpy(x).to(torch_device), torch.from_numpy(y).to(torch_device)
    theirs = [(xt[i : i + batch], yt[i : i + batch]) for i in starts]

    def torch_step(a, b):
        loss = torch.nn.functional.cross_entropy(net(a), b)
        torch_optimizer.zero_grad()
        loss.backward()
        torch_optimizer.step()
        return loss.item()

    if torch_device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(torch_device)
    torch_seconds, torch_warm = _timed(torch_step, theirs, repeats, budget_s)
    torch_peak = torch.cuda.max_memory_allocated(torch_device) if torch_device.type == "cuda" else None
    return {
        "vkml_seconds": vkml_seconds,
        "torch_seconds": torch_seconds,
        "vkml_peak_bytes": vkml_peak,
        "torch_peak_bytes": torch_peak,
        "size": f"MLP 2-{width}-{width}-3, batch {batch}",
        "note": f"the demo's step: forward, backward, Adam, loss.item(); timed after {warm} untimed steps "
        f"(a pass over the {len(ours)} batches that compiled nothing{', cap reached' if warm >= WARM_CAP else ''}; "
        f"PyTorch {torch_warm})",
        "warm_steps": warm,
    }


def main(argv: list[str]) -> int:
    def flag(name: str):
        return argv[argv.index(name) + 1] if name in argv else None

    width, batch, steps = flag("--width"), flag("--batch"), flag("--steps")
    if steps:
        device = vkml.device(flag("--device")) if flag("--device") else vkml.best_device()
        size = (int(width or (demo.WIDTH if "--quick" in argv else FULL_WIDTH)),)
        size += (int(batch or (demo.BATCH if "--quick" in argv else FULL_BATCH)),)
        print(f"the first {steps} steps of a fresh MLP 2-{size[0]}-{size[0]}-3, batch {size[1]} ({device.name}):")
        for i, counts, seconds in step_report(device, *size, int(steps)):
            print(f"  step {i:2d}: {seconds * 1e3:9.2f} ms  " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    torch_device = flag("--torch-device")
    if torch_device is None:  # PyTorch on the GPU where there is one, as bench/bench.py's rows
        import torch

        torch_device = "cuda" if torch.cuda.is_available() else "cpu"
    result = bench_training_step(
        device=flag("--device"),
        torch_device=torch_device,
        quick="--quick" in argv,
        width=int(width) if width else None,
        batch=int(batch) if batch else None,
    )
    ours, theirs = np.median(result["vkml_seconds"]), np.median(result["torch_seconds"])
    print(
        f"{result['size']}: vkml {ours * 1e3:.2f} ms/step, torch ({torch_device}) {theirs * 1e3:.2f} ms/step, "
        f"ratio {ours / theirs:.2f} ({result['note']})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
