"""A DataLoader training loop: does batch N+1's upload overlap step N's GPU work?

    .venv/bin/python bench/bench_upload_overlap.py [--device vulkan:0] [--batch 512] [--features 1024]
        [--hidden 4096] [--steps 40] [--read-every 1] [--staged] [--torch]

The loop is the one PyTorch users write (``for x, y in loader: x, y = x.to(dev), y.to(dev); ...;
loss.backward(); opt.step()``, the loss read every ``--read-every`` steps, 0 never), on an MLP
big enough that a step's GPU work takes a while. It runs twice:

- ``overlapped``: as written; the upload of batch N+1 does not wait for step N's work
  (vkml/runtime/vulkan/backend.py: a range no work in flight uses, written through the mapping,
  or a copy queued behind that work);
- ``serialized``: ``device.synchronize()`` before each step's upload, which is what an upload
  that waits for the previous step's work costs (vkml before uploads overlapped).

For each it prints the median ms per step over the steps after the first few, the median host ms
spent in the two ``.to(device)`` calls, and per step the host waits, the waits skipped (host
reads and writes that went ahead while work was in flight), the queued copies
(``transfer_submissions``) and the command buffers submitted again (``recordings_reused``). ``--staged`` makes every upload a queued copy (the path of memory
the host does not map: a discrete GPU without resizable BAR). ``--torch`` runs the same loop with
PyTorch on CUDA (``pin_memory=True``, ``non_blocking=True``) when it has a GPU, for reference.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import vkml
import vkml.nn as nn
import vkml.nn.functional as F
from vkml.runtime.counters import counters, snapshot
from vkml.runtime.vulkan.memory import MemoryChoice
from vkml.utils.data import DataLoader, TensorDataset

WARMUP = 3


def _data(args) -> tuple[np.ndarray, np.ndarray]:
    g = np.random.default_rng(0)
    n = args.batch * (args.steps + 1)
    return g.standard_normal((n, args.features)).astype(np.float32), g.integers(0, 10, n)


def run_vkml(args, serialized: bool) -> dict:
    dev = vkml.device(args.device)
    vkml.manual_seed(0)
    xs, ys = _data(args)
    loader = DataLoader(
        TensorDataset(vkml.tensor(xs), vkml.tensor(ys)),
        batch_size=args.batch,
        shuffle=True,
        drop_last=True,
        pin_memory=True,
        generator=vkml.Generator().manual_seed(1),
    )
    net = nn.Sequential(
        nn.Linear(args.features, args.hidden), nn.ReLU(), nn.Linear(args.hidden, args.hidden), nn.ReLU(),
        nn.Linear(args.hidden, 10),
    ).to(dev)  # fmt: skip
    opt = vkml.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    step_ms, upload_ms, rows = [], [], []
    dev.synchronize()
    last = time.perf_counter()
    for step, (x, y) in enumerate(loader):
        before = snapshot()
        if serialized:
            dev.synchronize()
        t = time.perf_counter()
        x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
        upload_ms.append((time.perf_counter() - t) * 1e3)
        loss = F.cross_entropy(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if args.read_every and step % args.read_every == 0:
            loss.item()
        now = time.perf_counter()
        step_ms.append((now - last) * 1e3)
        last = now
        keys = ("host_waits", "waits_skipped", "transfer_submissions", "recordings_reused")
        rows.append([counters[k] - before[k] for k in keys])
    dev.synchronize()
    total = (time.perf_counter() - last) * 1e3  # the tail the last step left running
    steady = slice(WARMUP, None)
    return {
        "ms/step": statistics.median(step_ms[steady]),
        "upload ms": statistics.median(upload_ms[steady]),
        "waits/step": statistics.mean(r[0] for r in rows[steady]),
        "skipped/step": statistics.mean(r[1] for r in rows[steady]),
        "queued/step": statistics.mean(r[2] for r in rows[steady]),
        "reused/step": statistics.mean(r[3] for r in rows[steady]),
        "tail ms": total,
    }


def run_torch(args) -> dict | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    dev = torch.device("cuda")
    torch.manual_seed(0)
    xs, ys = _data(args)
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.from_numpy(xs), torch.from_numpy(ys)),
        batch_size=args.batch,
        shuffle=True,
        drop_last=True,
        pin_memory=True,
    )
    tnn = torch.nn
    net = tnn.Sequential(
        tnn.Linear(args.features, args.hidden), tnn.ReLU(), tnn.Linear(args.hidden, args.hidden), tnn.ReLU(),
        tnn.Linear(args.hidden, 10),
    ).to(dev)  # fmt: skip
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    step_ms, upload_ms = [], []
    torch.cuda.synchronize()
    last = time.perf_counter()
    for step, (x, y) in enumerate(loader):
        t = time.perf_counter()
        x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
        upload_ms.append((time.perf_counter() - t) * 1e3)
        loss = torch.nn.functional.cross_entropy(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if args.read_every and step % args.read_every == 0:
            loss.item()
        now = time.perf_counter()
        step_ms.append((now - last) * 1e3)
        last = now
    torch.cuda.synchronize()
    return {"ms/step": statistics.median(step_ms[WARMUP:]), "upload ms": statistics.median(upload_ms[WARMUP:])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="vulkan:0")
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--features", type=int, default=1024)
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--read-every", type=int, default=1)
    parser.add_argument("--staged", action="store_true", help="every upload a copy queued behind the work")
    parser.add_argument("--torch", action="store_true", help="also PyTorch on CUDA, for reference")
    args = parser.parse_args()
    dev = vkml.device(args.device)
    if args.staged:
        choice = dev.memory.choice
        dev.memory.choice = MemoryChoice(
            choice.device_type,
            choice.staging_type or choice.device_type,
            False,
            choice.direct_download,
            choice.coherent,
        )
    print(
        f"{dev.name}: batch {args.batch} x {args.features}, hidden {args.hidden}, {args.steps} steps, "
        f"loss read every {args.read_every or 'never'}, uploads {'staged' if args.staged else 'as the memory allows'}"
    )
    run_vkml(args, serialized=False)  # compile and tune first
    results = {"overlapped": run_vkml(args, False), "serialized": run_vkml(args, True)}
    if args.torch:
        found = run_torch(args)
        if found is not None:
            results["torch cuda"] = found
    keys = list(results["overlapped"])
    print(f"{'':12}" + "".join(f"{k:>14}" for k in keys))
    for name, row in results.items():
        print(f"{name:12}" + "".join(f"{row[k]:14.3f}" if k in row else f"{'':>14}" for k in keys))
    ratio = results["serialized"]["ms/step"] / results["overlapped"]["ms/step"]
    print(f"serialized / overlapped ms per step: {ratio:.2f}")


if __name__ == "__main__":
    main()
