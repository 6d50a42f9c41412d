"""What alternating with PyTorch costs each side's wall time (CUDA machines only).

    python3 bench/bench_alternation.py

bench.py's headline alternates a vkml call and a PyTorch call (issue 20's method). This probe times,
in one process, each side alone and each side right after the other's work, for `add` on 2^24 and
2^28 floats and a float16 SDPA (B4 H8 T1024 D64): min / median of 60 calls, call to synchronised
result. docs/benchmarks.md (session 14) has the H200's figures.
"""

from __future__ import annotations

import time

import numpy as np
import torch

import vkml
import vkml.nn.functional as VF


def timed(fn, other, calls: int = 60) -> tuple[float, float]:
    """Min and median µs of ``fn()``, with ``other()`` (when given) run between the calls."""
    seconds = []
    for _ in range(calls):
        started = time.perf_counter()
        fn()
        seconds.append(time.perf_counter() - started)
        if other is not None:
            other()
    seconds.sort()
    return seconds[0] * 1e6, seconds[len(seconds) // 2] * 1e6


def report(name: str, ours, theirs) -> None:
    for _ in range(10):
        ours(), theirs()
    results = {
        "vkml alone": timed(ours, None),
        "vkml alternating": timed(ours, theirs),
        "PyTorch alone": timed(theirs, None),
        "PyTorch alternating": timed(theirs, ours),
    }
    print(name, "  ".join(f"{k} {lo:.0f}/{mid:.0f} µs" for k, (lo, mid) in results.items()), flush=True)


def main() -> None:
    if not torch.cuda.is_available():
        raise SystemExit("needs PyTorch with CUDA beside a Vulkan device")
    device, rng = vkml.best_device(), np.random.default_rng(0)
    for bits in (24, 28):
        x = rng.uniform(-1, 1, 1 << bits).astype(np.float32)
        a, ta = vkml.tensor(x, device=device), torch.tensor(x, device="cuda")
        report(
            f"add 2^{bits}",
            lambda a=a: (vkml.realize(a + a), device.synchronize()),
            lambda ta=ta: (ta + ta, torch.cuda.synchronize()),
        )
    arrays = [rng.uniform(-1, 1, (4, 8, 1024, 64)).astype(np.float16) for _ in range(3)]
    q, k, v = (vkml.tensor(t, device=device) for t in arrays)
    tq, tk, tv = (torch.tensor(t, device="cuda") for t in arrays)
    report(
        "SDPA float16 B4 H8 T1024 D64",
        lambda: (vkml.realize(VF.scaled_dot_product_attention(q, k, v)), device.synchronize()),
        lambda: (torch.nn.functional.scaled_dot_product_attention(tq, tk, tv), torch.cuda.synchronize()),
    )


if __name__ == "__main__":
    main()
