"""Five official PyTorch recipes around one small classifier, at a tiny size on synthetic data:
"Reproducibility" (``torch.manual_seed``, ``random.seed``, ``np.random.seed``,
``torch.use_deterministic_algorithms(True)``, ``torch.backends.cudnn.benchmark = False`` /
``deterministic = True``, a shuffling ``DataLoader`` with ``worker_init_fn=seed_worker`` reading
``torch.initial_seed() % 2**32`` and a seeded ``torch.Generator``); "Changing default device"
(``torch.set_default_device``, ``torch.get_default_device()``, layers built under ``with
torch.device(DEVICE):``) and ``torch.set_default_dtype(torch.float64)`` for a block;
"Saving and loading a general checkpoint" (a dict with ``epoch``, ``model_state_dict``,
``optimizer_state_dict`` and ``loss`` by ``torch.save``, resumed by ``torch.load(PATH, weights_only=True)``
into a new model and optimizer, then ``model.train()``); "Saving and loading multiple models in one
file" (netA, netB and their optimizers, ``map_location=torch.device('cpu')``); and "PyTorch Benchmark"
(``torch.utils.benchmark.Timer(stmt=..., setup=..., globals=...)``, ``timeit(n)``,
``blocked_autorange(min_run_time=...)``, ``Measurement.mean`` / ``median`` / ``times``, a
``benchmark.Compare`` table printed; only what does not depend on the clock is compared); and the
profiler recipe's scheduled form (``torch.profiler.schedule(wait=1, warmup=1, active=2, repeat=1)``,
``on_trace_ready`` reading ``prof.key_averages()`` and ``prof.step_num``, ``prof.step()`` per
training step, ``tensorboard_trace_handler``).
"""

from __future__ import annotations

import os
import random
import tempfile

import numpy as np
from shim import BACKEND, DataLoader, F, TensorDataset, nn, optim, torch

if BACKEND == "torch":
    import torch.utils.benchmark as benchmark
else:
    import vkml.utils.benchmark as benchmark

DEVICE = "cpu"
BATCH = 4
WORKERS = 2


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(5, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def seed_everything(seed=0):
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed)
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True


def seed_worker(worker_id):
    worker_seed = torch.initial_seed() % 2**32
    np.random.seed(worker_seed)
    random.seed(worker_seed)


def build():
    seed_everything(0)
    torch.set_default_device(DEVICE)
    try:
        with torch.device(DEVICE):
            models = nn.ModuleDict({"netA": Net(), "netB": Net()})
    finally:
        torch.set_default_device(None)
    return models


def dataset(n=16):
    x = torch.sin(torch.arange(n * 5, dtype=torch.float32) * 0.29).view(n, 5)
    y = (x[:, 0] > x[:, 1]).long() + (x[:, 2] > 0.5).long()
    return TensorDataset(x, y)


def batched_dot_mul_sum(a, b):
    """The benchmark recipe's two ways to a batched dot product."""
    return a.mul(b).sum(-1)


def batched_dot_bmm(a, b):
    a = a.reshape(-1, 1, a.shape[-1])
    b = b.reshape(-1, b.shape[-1], 1)
    return torch.bmm(a, b).flatten(-3)


def benchmarks():
    x = torch.sin(torch.arange(6 * 4, dtype=torch.float32)).view(6, 4)
    results = []
    for stmt, name in (("batched_dot_mul_sum(x, x)", "mul/sum"), ("batched_dot_bmm(x, x)", "bmm")):
        timer = benchmark.Timer(
            stmt=stmt + ".sum().item()",
            setup="from builtins import len",
            globals={"x": x, "batched_dot_mul_sum": batched_dot_mul_sum, "batched_dot_bmm": batched_dot_bmm},
            label="Batched dot",
            sub_label="6x4",
            description=name,
        )
        m0 = timer.timeit(3)
        m1 = timer.blocked_autorange(min_run_time=0.01)
        results += [m0, m1]
    compare = benchmark.Compare(results)
    compare.trim_significant_figures()
    compare.print()
    same = batched_dot_mul_sum(x, x).allclose(batched_dot_bmm(x, x))
    return [
        same,
        results[0].number_per_run,
        len(results[0].times),
        all(m.mean > 0 and m.median > 0 for m in results),
        results[1].title,
        results[1].description,
    ]


def profiled_steps(net, x, y, log_dir):
    """A few SGD steps under a scheduled profile: which steps each saved trace holds."""
    optimizer = optim.SGD(net.parameters(), lr=0.05)
    saved, losses = [], []
    handler = torch.profiler.tensorboard_trace_handler(log_dir, worker_name="worker0")

    def trace_ready(prof):
        names = sorted(e.key for e in prof.key_averages() if e.key.startswith("train_step_"))
        saved.append([prof.step_num, names])
        handler(prof)

    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU],
        schedule=torch.profiler.schedule(wait=1, warmup=1, active=2, repeat=1),
        on_trace_ready=trace_ready,
    ) as prof:
        for step in range(6):
            with torch.profiler.record_function(f"train_step_{step}"):
                optimizer.zero_grad()
                loss = F.cross_entropy(net(x), y)
                loss.backward()
                optimizer.step()
            losses.append(loss.item())
            prof.step()
    return saved, losses, len(os.listdir(log_dir))


def train(model, steps=3):
    netA, netB = model["netA"], model["netB"]
    seed_everything(0)
    g = torch.Generator()
    g.manual_seed(0)
    loader = DataLoader(
        dataset(), batch_size=BATCH, shuffle=True, num_workers=WORKERS, worker_init_fn=seed_worker, generator=g
    )
    optimizerA = optim.SGD(netA.parameters(), lr=0.1, momentum=0.9)
    optimizerB = optim.Adam(netB.parameters(), lr=0.01)
    result = {
        "losses": [],
        "deterministic": [torch.are_deterministic_algorithms_enabled(), str(torch.get_default_device())],
    }
    seen_targets = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.pt")
        for epoch in range(steps):
            for x, y in loader:
                seen_targets += y.tolist()
                for net, optimizer in ((netA, optimizerA), (netB, optimizerB)):
                    optimizer.zero_grad()
                    loss = F.cross_entropy(net(x), y)
                    loss.backward()
                    optimizer.step()
            result["losses"].append(loss.item())
            if epoch == 0:  # the general checkpoint, resumed into fresh objects
                torch.save(
                    {
                        "epoch": epoch,
                        "model_state_dict": netB.state_dict(),
                        "optimizer_state_dict": optimizerB.state_dict(),
                        "loss": loss,
                    },
                    path,
                )
                netB = Net()
                optimizerB = optim.Adam(netB.parameters(), lr=0.01)
                checkpoint = torch.load(path, weights_only=True)
                netB.load_state_dict(checkpoint["model_state_dict"])
                optimizerB.load_state_dict(checkpoint["optimizer_state_dict"])
                result["resumed"] = [checkpoint["epoch"], checkpoint["loss"].item()]
                netB.train()
        both = os.path.join(tmp, "both.pt")
        torch.save(
            {
                "modelA_state_dict": netA.state_dict(),
                "modelB_state_dict": netB.state_dict(),
                "optimizerA_state_dict": optimizerA.state_dict(),
                "optimizerB_state_dict": optimizerB.state_dict(),
            },
            both,
        )
        checkpoint = torch.load(both, map_location=torch.device("cpu"), weights_only=True)
        modelA, modelB = Net(), Net()
        modelA.load_state_dict(checkpoint["modelA_state_dict"])
        modelB.load_state_dict(checkpoint["modelB_state_dict"])
        modelA.eval()
        modelB.eval()
        x = dataset().tensors[0]
        result["loaded"] = [modelA(x).sum().item(), modelB(x).sum().item()]
        result["optimizer_state"] = sorted(checkpoint["optimizerB_state_dict"]["state"][0])
        x, y = dataset().tensors
        result["profiled"] = profiled_steps(modelA, x, y, os.path.join(tmp, "log"))
    torch.set_default_dtype(torch.float64)
    try:
        wide = nn.Linear(2, 2)
        result["default_dtype"] = [str(wide.weight.dtype).split(".")[-1], str(torch.ones(1).dtype).split(".")[-1]]
    finally:
        torch.set_default_dtype(torch.float32)
    torch.use_deterministic_algorithms(False)
    result["targets"] = seen_targets
    result["benchmark"] = benchmarks()
    return result


if __name__ == "__main__":
    print(train(build()))
