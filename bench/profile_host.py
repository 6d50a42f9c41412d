"""Where a workload's host (Python) time goes: cProfile of repeated training steps or graph100 builds.

    python3 bench/profile_host.py mlp_train_step [--quick] [--device vulkan:0] [--steps 20] [--bytecodes]
    python3 bench/profile_host.py block_train_step
    python3 bench/profile_host.py graph100

``block_train_step`` is a transformer block's eager step (d = 32, 4 heads, 16 tokens, batch 2:
LayerNorm, qkv Linear, causal ``scaled_dot_product_attention``, Linear, GELU MLP, AdamW, the loss
read). ``--bytecodes`` also prints the Python bytecodes one step executes (``sys.settrace`` opcode
events: a loaded machine leaves the count unchanged; docs/benchmarks.md, "Session 15: host cost").

Runs ``--warmup`` untimed repetitions first (compiles, plan caches, scalars moved to rings, GPU
clocks), then profiles ``--steps`` more and prints the functions with the most time of their own,
and the wall time per step.
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


class _Block(vkml.nn.Module):
    """A pre-norm transformer block: attention and a GELU MLP, each added to its input."""

    def __init__(self, width: int, heads: int):
        super().__init__()
        nn = vkml.nn
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.up, self.down, self.act = nn.Linear(width, 4 * width), nn.Linear(4 * width, width), nn.GELU()
        self.heads = heads

    def forward(self, x):
        batch, tokens, width = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(width, dim=-1)
        q, k, v = (t.reshape(batch, tokens, self.heads, width // self.heads).transpose(1, 2) for t in (q, k, v))
        attended = vkml.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(attended.transpose(1, 2).reshape(batch, tokens, width))
        return x + self.down(self.act(self.up(self.norm2(x))))


def block_action(device):
    """One eager training step of ``_Block`` with AdamW, the loss read, after one untimed step."""
    vkml.manual_seed(0)
    model = _Block(32, 4).to(device)
    optimizer = vkml.optim.AdamW(model.parameters(), lr=1e-3)
    x = vkml.tensor(np.random.default_rng(0).standard_normal((2, 16, 32)).astype(np.float32), device=device)

    def step():
        optimizer.zero_grad()
        loss = model(x).square().mean()
        loss.backward()
        optimizer.step()
        return loss.item()

    step()
    return step


def bytecodes(action) -> int:
    """Python bytecodes one call of ``action`` executes (sys.settrace opcode events)."""
    count = 0

    def tracer(frame, event, arg):
        nonlocal count
        frame.f_trace_opcodes = True
        if event == "opcode":
            count += 1
        return tracer

    sys.settrace(tracer)
    try:
        action()
    finally:
        sys.settrace(None)
    return count


def graph_action(device):
    a, b = (vkml.tensor(np.linspace(0.5, 1.5, 1024, dtype=np.float32), device=device) for _ in range(2))
    return lambda: small_graph(vkml, a, b, 100).numpy()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", choices=["mlp_train_step", "block_train_step", "graph100"])
    parser.add_argument("--device", default=None)
    parser.add_argument("--quick", action="store_true", help="the demo's MLP size")
    parser.add_argument("--steps", type=int, default=20)
    # A step's changing kernel parameters move to a ring buffer over its first steps (vkml/schedule/eager_scalars.py)
    parser.add_argument("--warmup", type=int, default=15, help="untimed steps first")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--bytecodes", action="store_true", help="also count one step's Python bytecodes")
    args = parser.parse_args(argv)
    device = vkml.device(args.device) if args.device else vkml.best_device()
    makers = {
        "mlp_train_step": lambda: training_action(device, args.quick),
        "block_train_step": lambda: block_action(device),
    }
    action = makers.get(args.name, lambda: graph_action(device))()
    for _ in range(args.warmup):
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
    if args.bytecodes:
        print(f"{bytecodes(action)} bytecodes in one step")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
