"""Where a workload's host (Python) time goes: cProfile of repeated training steps or graph100 builds.

    python3 bench/profile_host.py mlp_train_step [--quick] [--device vulkan:0] [--steps 20]
    python3 bench/profile_host.py graph100

Runs untimed repetitions first (compiles, plan caches, GPU clocks), then profiles ``--steps``
more and prints the functions with the most time of their own, and the wall time per step.
The GPU's share is inside the fence waits (``Recordings.wait_for``): with asynchronous
submission (the default) the host waits only where it reads results, so the time there is the
GPU work the host did not overlap; ``VKML_ASYNC=0`` waits after every submission, as before.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
for path in (str(TOOLS.parent), str(TOOLS)):
    if path not in sys.path:
        sys.path.insert(0, path)

import numpy as np  # noqa: E402
from bench_special import small_graph  # noqa: E402
from profile_dispatches import training_action  # noqa: E402

import vkml  # noqa: E402


def graph_action(device):
    a, b = (vkml.tensor(np.linspace(0.5, 1.5, 1024, dtype=np.float32), device=device) for _ in range(2))
    return lambda: small_graph(vkml, a, b, 100).numpy()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", choices=["mlp_train_step", "graph100"])
    parser.add_argument("--device", default=None)
    parser.add_argument("--quick", action="store_true", help="the demo's MLP size")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args(argv)
    device = vkml.device(args.device) if args.device else vkml.best_device()
    action = training_action(device, args.quick) if args.name == "mlp_train_step" else graph_action(device)
    for _ in range(5):
        action()
    started = time.perf_counter()
    for _ in range(args.steps):
        action()
    wall = (time.perf_counter() - started) / args.steps
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(args.steps):
        action()
    profiler.disable()
    print(f"{args.name} on {device.name}: {wall * 1e3:.3f} ms per step without the profiler")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
