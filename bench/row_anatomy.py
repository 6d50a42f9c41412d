"""Where a row kernel's time goes: softmax and layer norm taken apart into the kernels they grow from.

    python3 bench/row_anatomy.py                     # 8192 x 8192: the GPU machine
    .venv/bin/python bench/row_anatomy.py --size 512  # the shape of the table, lavapipe

Each case is one kernel over a ``size`` x ``size`` float32 matrix, timed with GPU timestamps
(bench/bench_timing.py), and adds one piece to the one before it: streaming the matrix
through (``copy``), reading it once in a row kernel (``row sum``), a costlier combine
(``row max``), writing the row back from the lanes' registers (``centre``), a second tree
(``mean and variance``), weight and bias (``layer norm``), the exponential (``exp(x - max)``)
and softmax's sum and product (``softmax``). The differences between neighbouring rows are
what each piece costs; docs/benchmarks.md reads them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
for path in (str(TOOLS.parent), str(TOOLS)):
    if path not in sys.path:
        sys.path.insert(0, path)

import numpy as np  # noqa: E402
from bench_timing import time_vkml  # noqa: E402

import vkml  # noqa: E402


def cases(x, weight, bias) -> dict:
    """The kernels, in the order each adds one piece; every one is a single dispatch on a GPU."""
    n = x.shape[1]

    def centre():
        return x - x.mean(1, keepdim=True)

    def normalised():
        c = centre()
        return c * vkml.rsqrt((c * c).mean(1, keepdim=True) + 1e-5)

    return {
        "copy (x * 2)": lambda: x * 2.0,
        "row sum": lambda: x.sum(1),
        "row max": lambda: x.amax(1),
        "centre (x - mean)": centre,
        "mean and variance": normalised,
        "layer norm": lambda: vkml.nn.functional.layer_norm(x, (n,), weight, bias, 1e-5),
        "exp(x - max)": lambda: vkml.exp(x - x.amax(1, keepdim=True)),
        "softmax": lambda: vkml.softmax(x, -1),
    }


def measure(size: int, repeats: int, budget_s: float, device=None) -> dict[str, tuple[float, float]]:
    """``{case: (min, median)}`` in seconds for ``size`` x ``size`` rows on ``device`` (default: the best)."""
    device = device or vkml.best_device()
    rng = np.random.default_rng(0)
    x = vkml.tensor(rng.standard_normal((size, size), dtype=np.float32), device=device)
    weight = vkml.tensor(rng.standard_normal(size, dtype=np.float32), device=device)
    bias = vkml.tensor(rng.standard_normal(size, dtype=np.float32), device=device)
    out = {}
    for name, build in cases(x, weight, bias).items():
        timing = time_vkml(build, device, repeats=repeats, budget_s=budget_s)
        out[name] = (timing.gpu.min, timing.gpu.median)
    return out


def main(argv=None) -> dict[str, tuple[float, float]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=8192, help="rows and columns (default 8192)")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--budget", type=float, default=1.0, help="seconds of samples per case")
    args = parser.parse_args(argv)
    device = vkml.best_device()
    results = measure(args.size, args.repeats, args.budget, device)
    print(
        f"{args.size}×{args.size} float32 on {device.name}; GPU time, µs (min / median), and the step from the row above"
    )
    print("| kernel | min | median | step |")
    print("|---|---|---|---|")
    previous = None
    for name, (low, median) in results.items():
        step = "" if previous is None else f"{(median - previous) * 1e6:+.1f}"
        print(f"| {name} | {low * 1e6:.1f} | {median * 1e6:.1f} | {step} |")
        previous = median
    return results


if __name__ == "__main__":
    main()
