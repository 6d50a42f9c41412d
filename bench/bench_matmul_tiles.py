"""Time vkml's matmul kernel under several tile families on one device (GPU timestamps).

The tiles a device gets are module constants of vkml/kernels/matmul/tiled.py (``TileFamily``); this
script swaps them in turn, so the best one for a GPU can be picked by measurement:

    .venv/bin/python bench/bench_matmul_tiles.py --size 4096 --size 8192        # the H200
    .venv/bin/python bench/bench_matmul_tiles.py --size 256 --repeats 2         # a quick run here

Each line: the family, fused multiply-adds on or off, the GPU time of the product (median of
the repeats, after a warm-up that compiles), TFLOP/s, and the largest error on 64 sampled
outputs relative to the stated bound γ_K Σ|a||b| (must stay ≤ 1).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

import vkml
from vkml.kernels.matmul import tiled as kernels_matmul
from vkml.kernels.matmul.tiled import TileFamily
from vkml.schedule import scheduler as schedule

FAMILIES = [
    TileFamily(16, 16, 8, 8, 8),
    TileFamily(16, 16, 8, 8, 16),
    TileFamily(16, 16, 8, 8, 8, packed=True),
    TileFamily(16, 16, 8, 4, 8),
    TileFamily(16, 8, 8, 8, 8),
    TileFamily(8, 16, 8, 8, 8),
    TileFamily(16, 16, 4, 4, 8),
]


def bound_ratio(got: np.ndarray, a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> float:
    """The largest |error| / (γ_K Σ|a||b|) over 64 sampled outputs (float64 references)."""
    k = a.shape[1]
    gamma = k * 2.0**-24 / (1 - k * 2.0**-24)
    rows, cols = rng.integers(0, a.shape[0], 64), rng.integers(0, b.shape[1], 64)
    worst = 0.0
    for i, j in zip(rows, cols):
        exact = a[i].astype(np.float64) @ b[:, j].astype(np.float64)
        scale = np.abs(a[i]).astype(np.float64) @ np.abs(b[:, j]).astype(np.float64)
        worst = max(worst, abs(float(got[i, j]) - exact) / (gamma * scale) if scale else 0.0)
    return worst


WARM_UP_S = 1.0  # an H200 left idle (compiling, checking) runs several times slower until its clocks ramp up


def time_product(ta, tb, device, repeats: int) -> float:
    started = time.perf_counter()
    (ta @ tb).realize()  # compile
    while time.perf_counter() - started < WARM_UP_S:
        (ta @ tb).realize()
    seconds = []
    for _ in range(repeats):
        with device.timestamped() as runs:
            (ta @ tb).realize()
        seconds.append(sum(sum(run) for run in runs))
    return statistics.median(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, action="append", help="square size (repeatable; default 4096)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--device", default=None, help="a Vulkan device (default: the best one)")
    args = parser.parse_args()
    device = vkml.device(args.device) if args.device else vkml.best_device()
    if device.kind != "vulkan":
        raise SystemExit("needs a Vulkan device (GPU timestamps)")
    rng = np.random.default_rng(0)
    large = kernels_matmul.choose_config(device.features, 4096, 4096, 4096)
    family_name = "LARGE_GPU_TILES" if large.fused or device.features.subgroup_size >= 32 else "SMALL_GPU_TILES"
    print(f"{device.name}: {family_name} swapped; default {large}")
    for size in args.size or [4096]:
        a = rng.standard_normal((size, size), dtype=np.float32)
        b = rng.standard_normal((size, size), dtype=np.float32)
        ta, tb = vkml.tensor(a, device=device), vkml.tensor(b, device=device)
        for family in FAMILIES:
            for fma in ("1", "0"):
                os.environ["VKML_MATMUL_FMA"] = fma
                setattr(kernels_matmul, family_name, family)
                schedule.clear_template_cache()
                seconds = time_product(ta, tb, device, args.repeats)
                ratio = bound_ratio((ta @ tb).numpy(), a, b, rng)
                tflops = 2 * size**3 / seconds / 1e12
                print(
                    f"{size:6d} {family} fma={fma}: {seconds * 1e3:9.3f} ms {tflops:7.2f} TFLOP/s  error/bound {ratio:.3f}"
                )


if __name__ == "__main__":
    main()
