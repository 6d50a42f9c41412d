"""Sweep kernel-template tunings on one device: which layout is fastest for the bandwidth workloads.

    python3 bench/tune_kernels.py                       # full sizes (2^28, 8192×8192): the GPU machine
    .venv/bin/python bench/tune_kernels.py --quick      # small sizes, lavapipe
    python3 bench/tune_kernels.py --only add,sum --repeats 20
    python3 bench/tune_kernels.py --only sum_axis0 --variants 'default,columns of 8 outputs,columns chunks of 32'

Each variant changes one field of the device's default ``Tuning`` (vkml/kernels/tuning.py);
the table gives the minimum GPU time per workload and its ratio to the default (below 1:
the variant is faster). Results never change bits (tests/test_kernels_tuning.py), so a
better variant can become the default in ``tuning_from_features`` as it is.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
for path in (str(TOOLS.parent), str(TOOLS)):
    if path not in sys.path:
        sys.path.insert(0, path)

import numpy as np  # noqa: E402
from bench_timing import time_vkml  # noqa: E402
from bench_workloads import chain8  # noqa: E402

import vkml  # noqa: E402
from vkml.kernels import tuning as kernels_tuning  # noqa: E402

WARM_UP_S = 2.0

VARIANTS = {
    "default": {},
    "1 vector per invocation": {"vectors_per_invocation": 1},
    "4 vectors per invocation": {"vectors_per_invocation": 4},
    "scalar elementwise": {"vector": 1},
    "local size 128": {"local_size": 128},
    "local size 512": {"local_size": 512},
    "reduce 8 per lane": {"reduce_per_lane": 8},
    "reduce 32 per lane": {"reduce_per_lane": 32},
    "row in chunks of 16 per lane": {"reduce_row_per_lane": 16},
    "row up to 64 per lane": {"reduce_row_per_lane": 64},
    "reduce 128 lanes": {"reduce_lanes": 128},
    "reduce 512 lanes": {"reduce_lanes": 512},
    # Variant names hold no commas: --variants is a comma-separated list.
    "reduce 1024 lanes of 8": {"reduce_lanes": 1024, "reduce_per_lane": 8},  # 8192-float rows in one chunk
    "reduce 512 lanes of 16": {"reduce_lanes": 512, "reduce_per_lane": 16, "reduce_row_per_lane": 16},
    "rows of 256 lanes of 32": {"row_lanes": 256, "reduce_row_per_lane": 32},  # the H200's rows before 2026-11-30
    "rows of 1024 lanes of 8": {"row_lanes": 1024, "reduce_per_lane": 8, "reduce_row_per_lane": 8},
    "no shuffles": {"subgroup": 1},
    "columns of 8 outputs": {"columns_outputs": 8},
    "columns of 32 outputs": {"columns_outputs": 32},
    "columns of 64 outputs": {"columns_outputs": 64},
    "columns chunks of 8": {"columns_per_chunk": 8},
    "columns chunks of 32": {"columns_per_chunk": 32},
}


def workloads(device, quick: bool) -> dict:
    """name -> function building the lazy result (inputs made once, on ``device``)."""
    rng = np.random.default_rng(0)
    n = 1 << (20 if quick else 28)
    rows, cols = (512, 1024) if quick else (8192, 8192)
    a, b = (vkml.tensor(rng.standard_normal(n, dtype=np.float32), device=device) for _ in range(2))
    x = vkml.tensor(rng.standard_normal((rows, cols), dtype=np.float32), device=device)
    w, bias = (vkml.tensor(rng.standard_normal(cols, dtype=np.float32), device=device) for _ in range(2))
    # bench.py's op rows: rows of 1,024 (16384 x 1024; quick 512 x 1024), one workgroup a row
    short = vkml.tensor(rng.standard_normal((512 if quick else 16384, 1024), dtype=np.float32), device=device)
    w_short, b_short = (vkml.tensor(rng.standard_normal(1024, dtype=np.float32), device=device) for _ in range(2))
    return {
        "add": lambda: a + b,
        "chain8": lambda: chain8(vkml, a, b),
        "sum": lambda: a.sum(),
        "sum_axis0": lambda: x.sum(0),
        "softmax": lambda: vkml.softmax(x, -1),
        "layer_norm": lambda: vkml.nn.functional.layer_norm(x, (cols,), w, bias),
        "softmax_1024": lambda: vkml.softmax(short, -1),
        "layer_norm_1024": lambda: vkml.nn.functional.layer_norm(short, (1024,), w_short, b_short),
        "sum_rows_1024": lambda: short.sum(-1),
    }


def warm_up(cases: dict, names: list[str], seconds: float = WARM_UP_S) -> None:
    """Untimed realizes until ``seconds`` pass: an idle H200 runs several times slower until its
    clocks ramp up, which made the first variants of a sweep look slow (2026-11-30)."""
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        for name in names:
            vkml.realize(cases[name]())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes (any machine)")
    parser.add_argument("--device", help="vkml device (default: vkml.best_device())")
    parser.add_argument("--only", help="comma-separated workloads")
    parser.add_argument("--variants", help="comma-separated variant names (default: all)")
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args(argv)
    chosen = [v.strip() for v in args.variants.split(",")] if args.variants else list(VARIANTS)
    unknown = [v for v in chosen if v not in VARIANTS]
    if unknown:  # before any timing: a typo should not cost a GPU run
        raise SystemExit(f"tune_kernels.py: unknown variants {unknown}; known: {', '.join(VARIANTS)}")
    device = vkml.device(args.device) if args.device else vkml.best_device()
    base = kernels_tuning.tuning_for(device)
    cases = workloads(device, args.quick)
    names = args.only.split(",") if args.only else list(cases)
    print(f"device {device}; default {base}")
    print("| variant | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    warm_up(cases, names)
    baseline: dict[str, float] = {}
    for label in chosen:
        try:
            tuning = replace(base, **VARIANTS[label])
        except ValueError as e:  # e.g. a per-lane count below another field
            print(f"| {label} | skipped: {e} |")
            continue
        kernels_tuning.set_tuning(device, tuning)
        cells = []
        for name in names:
            seconds = min(time_vkml(cases[name], device, args.repeats, 30.0).gpu.seconds)
            baseline.setdefault(name, seconds)
            cells.append(f"{seconds * 1e3:.3f} ms ({seconds / baseline[name]:.2f})")
        print(f"| {label} | " + " | ".join(cells) + " |", flush=True)
    kernels_tuning.set_tuning(device, None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
