"""Where a realize's wall time goes beyond the GPU's: build, realize, synchronise, per row.

    python3 bench/realize_phases.py [ROW ...] [--profile] [--device vulkan:0]

Rows: conv2d_f16, add_2^24, bn_train, maxpool, sum_2^28, softmax, sdpa_f16 (default: all). For each,
after 3 untimed runs, 10 timed ones print the medians of: graph build (the op calls), realize
(schedule, lower, record, submit, wait), the synchronise after it, the GPU time (timestamps),
the time inside ``device.run`` and before its first call, and the counters that moved; then 20
runs without timestamps give the wall time a user sees. ``--profile`` adds a cProfile of 20
more runs. docs/benchmarks.md (session 9) has its numbers on the H200.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from bench_timing import gpu_clock, spy_runs  # noqa: E402

import vkml  # noqa: E402
from vkml.runtime.counters import counters  # noqa: E402


def cases(device) -> dict:
    F = vkml.nn.functional
    rng = np.random.default_rng(0)

    def t(shape, dtype="float32"):
        return vkml.tensor(rng.standard_normal(shape).astype(dtype), device=device).realize()

    made = {}
    x16, w16 = t((64, 64, 56, 56), "float16"), t((64, 64, 3, 3), "float16")
    made["conv2d_f16"] = lambda: F.conv2d(x16, w16, padding=1)
    a, b = t((1 << 24,)), t((1 << 24,))
    made["add_2^24"] = lambda: a + b
    xb, g, beta, mean = t((64, 64, 112, 112)), t((64,)), t((64,)), t((64,))
    var = (t((64,)).abs() + 1).realize()
    made["bn_train"] = lambda: F.batch_norm(xb, mean, var, g, beta, training=True)
    made["maxpool"] = lambda: F.max_pool2d(xb, 3, 2, 1)
    big = t((1 << 28,))
    made["sum_2^28"] = lambda: big.sum()
    s = t((8192, 8192))
    made["softmax"] = lambda: s.softmax(-1)
    q, k, v = (t((4, 8, 1024, 64), "float16") for _ in range(3))
    made["sdpa_f16"] = lambda: F.scaled_dot_product_attention(q, k, v)
    return made


def phases(device, fn) -> None:
    for _ in range(3):
        vkml.realize(fn())
        device.synchronize()
    rows = []
    for _ in range(10):
        before = dict(counters)
        with gpu_clock(device) as stamps, spy_runs(device) as calls:
            t0 = time.perf_counter()
            out = fn()
            t1 = time.perf_counter()
            vkml.realize(out)
            t2 = time.perf_counter()
            device.synchronize()
            t3 = time.perf_counter()
        moved = {k: counters[k] - before.get(k, 0) for k in counters if counters[k] != before.get(k, 0)}
        inside = sum(c[1] - c[0] for c in calls)
        first = calls[0][0] - t1 if calls else float("nan")
        rows.append((t1 - t0, t2 - t1, t3 - t2, sum(sum(r) for r in stamps), inside, first, moved))
        del out
    rows.sort(key=lambda r: r[0] + r[1] + r[2])
    r = rows[len(rows) // 2]
    print(
        f"  build {r[0] * 1e6:.0f} µs, realize {r[1] * 1e6:.0f} µs, synchronise {r[2] * 1e6:.0f} µs | "
        f"GPU {r[3] * 1e6:.0f} µs | in run() {r[4] * 1e6:.0f} µs, before it {r[5] * 1e6:.0f} µs"
    )
    print(f"  counters {r[6]}")
    walls = []
    for _ in range(20):
        t0 = time.perf_counter()
        vkml.realize(fn())
        device.synchronize()
        walls.append(time.perf_counter() - t0)
    walls.sort()
    print(f"  wall without timestamps: min {walls[0] * 1e6:.0f} µs, median {walls[10] * 1e6:.0f} µs")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rows", nargs="*")
    parser.add_argument("--device", default=None)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args(argv)
    device = vkml.device(args.device) if args.device else vkml.best_device()
    made = cases(device)
    for name in args.rows or list(made):
        print(name)
        phases(device, made[name])
        if args.profile:
            profile = cProfile.Profile()
            profile.enable()
            for _ in range(20):
                vkml.realize(made[name]())
                device.synchronize()
            profile.disable()
            text = io.StringIO()
            pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(14)
            print(text.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
