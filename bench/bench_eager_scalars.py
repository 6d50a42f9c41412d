"""The demo's eager training step with its changing kernel parameters in a ring buffer, against the
same step with them as push constants (``VKML_EAGER_SCALARS=0``), alternating in one process.

    .venv/bin/python bench/bench_eager_scalars.py [--device vulkan:0] [--rounds 8] [--steps 20]

Two loops, as bench/bench_training.py ``--quick`` sizes them (MLP 2-64-64-3, dropout, Adam, the loss
read): one batch stepped again and again, and ten batches of a dataset in turn (each a window of
it, so the forward and backward realizes bind other memory every step). Each round runs both
settings: a few untimed steps (the setting's recordings come back), then ``--steps`` timed ones;
the switch is read on every realize (vkml/schedule/eager_scalars.py). Prints the median ms per step
of each setting and their ratio (push constants / ring), and the recordings reused per step.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import vkml  # noqa: E402
from vkml import demo  # noqa: E402
from vkml.runtime.counters import counters  # noqa: E402

SETTINGS = {"ring": "1", "push constants": "0"}
UNTIMED = 6  # steps before a setting's timed ones: its recordings are made again


def _loop(device, batches: int):
    """A step function over ``batches`` batches of the demo's size, taken in turn."""
    batch = demo.BATCH
    x, y = demo.make_spirals(points_per_class=-(-batch * batches // demo.CLASSES))
    model = demo.make_model(device)
    optimizer = vkml.optim.Adam(model.parameters(), lr=0.01)
    xs, ys = vkml.tensor(x, device=device), vkml.tensor(y, device=device)
    pairs = [(xs[i : i + batch], ys[i : i + batch]) for i in range(0, batch * batches, batch)]
    turn = [0]

    def step():
        a, b = pairs[turn[0] % len(pairs)]
        turn[0] += 1
        return demo.train_step(model, optimizer, a, b)

    return step


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args(argv)
    device = vkml.device(args.device) if args.device else vkml.best_device()
    for name, batches in (("one batch", 1), ("ten batches", 10)):
        step = _loop(device, batches)
        for _ in range(20):  # compiles, plans, and the ring's variants
            step()
        seconds: dict = {s: [] for s in SETTINGS}
        reused: dict = dict.fromkeys(SETTINGS, 0)
        for _ in range(args.rounds):
            for setting, value in SETTINGS.items():
                os.environ["VKML_EAGER_SCALARS"] = value
                for _ in range(UNTIMED):
                    step()
                before = counters["recordings_reused"]
                for _ in range(args.steps):
                    start = time.perf_counter()
                    step()
                    seconds[setting].append(time.perf_counter() - start)
                reused[setting] += counters["recordings_reused"] - before
        ring, pushed = (statistics.median(seconds[s]) * 1e3 for s in SETTINGS)
        per_step = {s: reused[s] / (args.rounds * args.steps) for s in SETTINGS}
        print(
            f"{name} on {device.name}: ring {ring:.3f} ms/step, push constants {pushed:.3f} ms/step, "
            f"ratio {pushed / ring:.2f}; recordings reused per step: {per_step['ring']:.1f} vs "
            f"{per_step['push constants']:.1f}"
        )
    os.environ.pop("VKML_EAGER_SCALARS", None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
