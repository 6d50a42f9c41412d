"""Time issue 7's skinny matmuls under the square tiles and under ``skinny_config``'s (GPU timestamps).

The MLP 2 → 4096 → 4096 → 3 trained on batches of 4096 (bench/bench_training.py) has five
products that the square tiles serve badly: K = 2 and K = 3 (4096² outputs from tiny
operands), and N = 3, M = 2 or N = 2 with K = 4096 (a few thousand outputs, each a chain of
4096 adds). Each is timed with its epilogue as the training step fuses it, twice: with the
device's own choice and with the square tiles the same device would get without the hook
(``skinny_config`` off), or, on a device that does not get the skinny tiles (lavapipe), with
them forced in. Both must give the same bits (unfused configs here: each product has fewer
than ``FMA_MIN_MULTIPLY_ADDS`` multiply-adds).

    .venv/bin/python bench/bench_matmul_skinny.py                 # the H200: 4096
    .venv/bin/python bench/bench_matmul_skinny.py --size 1024     # a quicker run here (lavapipe)
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import vkml  # noqa: E402
from vkml.kernels.matmul import tiled as kernels_matmul  # noqa: E402
from vkml.schedule import scheduler as schedule  # noqa: E402


def products(size: int, rng: np.random.Generator):
    """(label, inputs, function of vkml tensors) for the step's five skinny products at width ``size``."""

    def data(*shape):
        return rng.standard_normal(shape, dtype=np.float32)

    x, w1, b1, h, w3, b3, g = (
        data(size, 2),
        data(size, 2),
        data(size),
        data(size, size),
        data(3, size),
        data(3),
        data(size, 3),
    )
    g1 = data(size, size)
    return [
        (f"relu(x @ w1.T + b1)  {size}x2 @ 2x{size}", (x, w1, b1), lambda x, w, b: vkml.relu(x @ w.T + b)),
        (f"(g @ w3) * (h > 0)   {size}x3 @ 3x{size}", (g, w3, h), lambda g, w, h: (g @ w) * (h > 0)),
        (f"h @ w3.T + b3        {size}x{size} @ {size}x3", (h, w3, b3), lambda h, w, b: h @ w.T + b),
        (f"h.T @ g              {size}x{size} @ {size}x3", (h, g), lambda h, g: h.T @ g),
        (f"x.T @ g1             2x{size} @ {size}x{size}", (x, g1), lambda x, g: x.T @ g),
    ]


def gpu_seconds(device, fn, tensors, repeats: int) -> tuple[float, np.ndarray]:
    """The median GPU time of one realize of ``fn(*tensors)`` (after one that compiles), and its result."""
    result = fn(*tensors).numpy()
    seconds = []
    for _ in range(repeats):
        with device.timestamped() as runs:
            fn(*tensors).realize()
        seconds.append(sum(sum(run) for run in runs))
    return statistics.median(seconds), result


def product_node(root):
    """The matmul node under ``root``'s epilogue."""
    stack = [root]
    while stack:
        node = stack.pop()
        if node.op == "matmul":
            return node
        stack.extend(node.srcs)
    raise ValueError("no matmul in the graph")


# Module constants of vkml/kernels/matmul/tiled.py to try instead of the defaults (``--sweep``).
SWEEP = [
    {"SKINNY_BK": 128},
    {"SKINNY_BK": 64},
    {"SKINNY_INVOCATIONS": 256},
    {"SKINNY_INVOCATIONS": 64},
    {"SKINNY_OUTPUTS": 32},
    {"SKINNY_OUTPUTS": 128},  # N = 3: 32 rows, 128 bytes of a transposed A per k
    {"SKINNY_OUTPUTS": 128, "SKINNY_BK": 64},
    {"SKINNY_OUTPUTS_PER_OWNER": 4},
    {"SKINNY_OUTPUTS_PER_OWNER": 4, "SKINNY_OUTPUTS": 128, "SKINNY_INVOCATIONS": 256},
    {"SKINNY_PAD": 4},
    {"SKINNY_LONG_SIDE": 8},
    {"SHORT_K_TILES": kernels_matmul.TileFamily(4, 64, 4, 4, 8)},
    {"SHORT_K_TILES": kernels_matmul.TileFamily(8, 32, 2, 4, 8)},
    {"SHORT_K_TILES": kernels_matmul.TileFamily(8, 32, 8, 4, 8)},
]


def with_tiles(skinny: bool):
    """A ``choose_config`` that uses the skinny tiles where they apply (``skinny``) or never, within the device's limits."""
    original = kernels_matmul.choose_config
    skinny_config = kernels_matmul.skinny_config

    def choose(features, m, n, k):
        kernels_matmul.skinny_config = lambda *args: None
        try:
            square = original(features, m, n, k)
        finally:
            kernels_matmul.skinny_config = skinny_config
        config = (skinny_config(m, n, k, square.fused) if skinny else None) or square
        while config.shared_bytes > features.max_compute_shared_memory_size and config.bk > 1:
            config = replace(config, bk=config.bk // 2)  # lavapipe has 32 KiB
        return config

    return choose


def timed_variants(device, fn, tensors, variants, repeats: int):
    """Per variant (None: the square tiles; a dict: the skinny tiles with those constants): (config, seconds, result)."""
    rows, original = [], {name: getattr(kernels_matmul, name) for v in variants if v for name in v}
    choose = kernels_matmul.choose_config
    try:
        for variant in variants:
            for name, value in (variant or {}).items():
                setattr(kernels_matmul, name, value)
            kernels_matmul.choose_config = with_tiles(variant is not None)
            schedule.clear_template_cache()
            mm = product_node(fn(*tensors).node)
            m, k = mm.srcs[0].shape[-2:]
            config = kernels_matmul.choose_config(device.features, m, mm.shape[-1], k)
            timed = next((row for row in rows if row[0] == config), None)  # a constant this product ignores
            rows.append(timed or (config, *gpu_seconds(device, fn, tensors, repeats)))
            kernels_matmul.choose_config = choose
            for name, value in original.items():
                setattr(kernels_matmul, name, value)
    finally:
        kernels_matmul.choose_config = choose
        for name, value in original.items():
            setattr(kernels_matmul, name, value)
        schedule.clear_template_cache()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=4096, help="the hidden width and the batch (default 4096)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sweep", action="store_true", help="also try the constants in SWEEP")
    parser.add_argument("--device", default=None, help="a Vulkan device (default: the best one)")
    args = parser.parse_args()
    device = vkml.device(args.device) if args.device else vkml.best_device()
    if device.kind != "vulkan":
        raise SystemExit("needs a Vulkan device (GPU timestamps)")
    variants = [None, {}] + (SWEEP if args.sweep else [])
    print(f"{device.name}: GPU µs per product, median of {args.repeats}")
    print("| product | variant | tiles | µs | square / this |")
    print("|---|---|---|---|---|")
    for label, arrays, fn in products(args.size, np.random.default_rng(0)):
        tensors = [vkml.tensor(a, device=device) for a in arrays]
        rows = timed_variants(device, fn, tensors, variants, args.repeats)
        square_s, square_out = rows[0][1], rows[0][2]
        for variant, (config, seconds, result) in zip(variants, rows):
            if not np.array_equal(result.view(np.uint32), square_out.view(np.uint32)):
                raise SystemExit(f"{label}: {config} gave other bits than {rows[0][0]}")
            name = "square" if variant is None else ", ".join(f"{k}={v}" for k, v in variant.items()) or "skinny"
            print(f"| {label} | {name} | {config} | {seconds * 1e6:,.1f} | {square_s / seconds:.2f}x |")


if __name__ == "__main__":
    main()
