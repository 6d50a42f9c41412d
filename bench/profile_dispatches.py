"""Where a workload's GPU time goes: every dispatch of one realize, timed by GPU timestamps.

    .venv/bin/python bench/profile_dispatches.py [--device vulkan:0] [--quick] softmax layer_norm mlp_train_step

Each name is a workload of bench/bench_workloads.py (``bench.py --list``) or ``mlp_train_step``
(bench/bench_training.py's step, 4096 wide with batches of 4096; the demo's size with
``--quick``). Untimed realizes compile and warm the GPU up (WARM_UP_S); the next is recorded with a timestamp after each
dispatch (vkml/runtime/vulkan/timestamps.py) and printed one line per dispatch: the kernel, its grid,
its GPU microseconds and its share of the run. A dispatch's time includes the barrier in front
of it. ``--stats`` adds what the driver reports of each kernel's pipeline (register count,
shared memory, ...: vkml/runtime/vulkan/pipeline_stats.py), which decides how many workgroups an SM
holds at once. This is issue 7's "profile showing where the time goes" (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
for path in (str(TOOLS.parent), str(TOOLS)):
    if path not in sys.path:
        sys.path.insert(0, path)

from bench_timing import as_tuple  # noqa: E402
from bench_workloads import WORKLOADS, Context  # noqa: E402

import vkml  # noqa: E402

WARM_UP_S = 1.0  # seconds of untimed repetitions before the profiled one
recorded_kernels: dict = {}  # kernel name -> kernel, of the last recorded_runs


def recorded_runs(device, action) -> list[list[tuple[str, tuple, float]]]:
    """Call ``action()`` with every ``device.run`` timestamped: per run, ``(kernel, grid, seconds)`` per dispatch."""
    runs, original = [], device.run
    recorded_kernels.clear()

    def run(dispatches, timestamps=False, key=None):
        seconds = original(dispatches, timestamps=True, key=key)
        runs.append([(d.kernel.name, tuple(d.grid), s) for d, s in zip(dispatches, seconds or [])])
        for d in dispatches:
            recorded_kernels.setdefault(d.kernel.name, d.kernel)
        return seconds

    started = time.perf_counter()
    while time.perf_counter() - started < WARM_UP_S:
        action()  # untimed: a GPU that has been idle runs slow until its clocks ramp up
    device.run = run
    device.run_again = lambda key, written: False  # every run is made and timed: none replays a recording
    try:
        action()
    finally:
        del device.run, device.run_again  # the instance attributes go; the class's methods are back
    return runs


def training_action(device, quick: bool):
    """One training step of bench/bench_training.py's MLP, after one untimed step."""
    from bench_training import FULL_BATCH, FULL_WIDTH

    from vkml import demo

    width, batch = (demo.WIDTH, demo.BATCH) if quick else (FULL_WIDTH, FULL_BATCH)
    x, y = demo.make_spirals(points_per_class=-(-batch // demo.CLASSES))
    model = demo.make_model(device, width)
    optimizer = vkml.optim.Adam(model.parameters(), lr=0.01)
    xs, ys = vkml.tensor(x[:batch], device=device), vkml.tensor(y[:batch], device=device)
    demo.train_step(model, optimizer, xs, ys)
    return lambda: demo.train_step(model, optimizer, xs, ys)


def report(name: str, runs) -> str:
    """The per-dispatch table, then the time per kernel name summed over the run."""
    lines = [f"## {name}", "", "| run | # | kernel | grid | µs | share |", "|---|---|---|---|---|---|"]
    total = sum(s for run in runs for _, _, s in run) or 1.0
    by_kernel: dict[str, float] = defaultdict(float)
    for r, run in enumerate(runs):
        for i, (kernel, grid, seconds) in enumerate(run):
            lines.append(f"| {r} | {i} | `{kernel}` | {grid} | {seconds * 1e6:,.1f} | {seconds / total:.1%} |")
            by_kernel[kernel] += seconds
    lines += ["", f"GPU total {total * 1e6:,.1f} µs over {sum(len(r) for r in runs)} dispatches; heaviest kernels:", ""]
    for kernel, seconds in sorted(by_kernel.items(), key=lambda kv: -kv[1])[:12]:
        lines.append(f"- `{kernel}`: {seconds * 1e6:,.1f} µs ({seconds / total:.1%})")
    return "\n".join(lines) + "\n"


def statistics_report(device) -> str:
    """The driver's statistics of each recorded kernel's pipeline, one line per kernel and executable."""
    from vkml.runtime.vulkan.pipeline_stats import executable_statistics, supported

    if not supported(device.logical):
        return f"({device.name} does not report pipeline statistics)\n"
    lines = ["| kernel | executable | subgroup | statistics |", "|---|---|---|---|"]
    for name, kernel in recorded_kernels.items():
        handle = device.pipelines.lookup(kernel).pipeline.handle
        for executable in executable_statistics(device.logical, handle):
            stats = ", ".join(f"{k}: {v}" for k, v in executable["statistics"].items())
            lines.append(f"| `{name}` | {executable['executable']} | {executable['subgroup_size']} | {stats} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="+", help="workloads (bench.py --list) or mlp_train_step")
    parser.add_argument("--device", default=None, help="vkml device (default: vkml.best_device())")
    parser.add_argument("--quick", action="store_true", help="the --quick sizes of bench.py")
    parser.add_argument("--stats", action="store_true", help="also the driver's pipeline statistics per kernel")
    args = parser.parse_args(argv)
    device = vkml.device(args.device) if args.device else vkml.best_device()
    if device.kind != "vulkan":
        raise SystemExit(f"profile_dispatches.py: {device.name} has no GPU timestamps; give a vulkan device")
    device.pipelines.capture_statistics = args.stats
    import torch

    ctx = Context(device, torch.device("cpu"), quick=args.quick)
    for name in args.names:
        if name == "mlp_train_step":
            action = training_action(device, args.quick)
        elif name in WORKLOADS:
            case = WORKLOADS[name](ctx)
            vkml.realize(*as_tuple(case.vkml()))  # compiles

            def action(case=case):
                vkml.realize(*as_tuple(case.vkml()))
        else:
            raise SystemExit(f"profile_dispatches.py: unknown workload {name!r} (bench.py --list shows them)")
        print(report(name, recorded_runs(device, action)))
        if args.stats:
            print(statistics_report(device))
    return 0


if __name__ == "__main__":
    sys.exit(main())
