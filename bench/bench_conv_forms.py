"""A 3×3 convolution against the matmuls it could be: which form of the product is fastest here.

    python3 bench/bench_conv_forms.py [--full]

``--full`` is ResNet's stage 1 (64×64×56², 64→64 channels), else a tiny shape that runs on
lavapipe. For float16 and float32 it times ``F.conv2d`` (both forms, ``VKML_CONV_IMPLICIT`` 1 and 0, with
their gradients) and the same multiply-adds as plain
products of stored operands — (64 × 576) @ (576 × N·H·W), (N·H·W × 576) @ (576 × 64), the
batched W @ cols, a transposed operand — and the nine-window im2col alone: wall and GPU time
(timestamps), medians of 15. docs/benchmarks.md (session 9) has its numbers on the H200.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from bench_timing import gpu_clock  # noqa: E402

import vkml  # noqa: E402


def _realize(out) -> None:
    vkml.realize(*(out if isinstance(out, tuple) else (out,)))


def timed(device, name: str, fn, repeats: int = 15) -> None:
    for _ in range(3):
        _realize(fn())
        device.synchronize()
    walls, gpus = [], []
    for _ in range(repeats):
        with gpu_clock(device) as stamps:
            t0 = time.perf_counter()
            _realize(fn())
            device.synchronize()
            walls.append(time.perf_counter() - t0)
        gpus.append(sum(sum(r) for r in stamps))
    walls.sort()
    gpus.sort()
    print(f"{name:42s} wall {walls[repeats // 2] * 1e3:8.3f} ms   GPU {gpus[repeats // 2] * 1e3:8.3f} ms", flush=True)


def main() -> int:
    device = vkml.best_device()
    F = vkml.nn.functional
    rng = np.random.default_rng(0)
    n, c, side, o = (64, 64, 56, 64) if "--full" in sys.argv else (2, 8, 8, 8)
    length, k = side * side, c * 9

    def t(shape, dtype):
        return vkml.tensor(rng.standard_normal(shape).astype(dtype), device=device).realize()

    def forms(dtype: str) -> None:  # each lambda runs inside timed(), before the next is made
        x, w = t((n, c, side, side), dtype), t((o, c, 3, 3), dtype)
        timed(device, f"conv2d {dtype}", lambda: F.conv2d(x, w, padding=1))
        # The two forms of F.conv2d (VKML_CONV_IMPLICIT, read at each call): the implicit GEMM (one product
        # reading the windows of x) against the im2col form (columns, product, layout), the same bits.
        for form, flag in (("implicit GEMM", "1"), ("im2col", "0")):
            os.environ["VKML_CONV_IMPLICIT"] = flag
            timed(device, f"conv2d {form} {dtype}", lambda: F.conv2d(x, w, padding=1))
            xg, wg = (a.clone().requires_grad_() for a in (x, w))
            y = F.conv2d(xg, wg, padding=1)
            g = vkml.ones_like(y)
            timed(
                device,
                f"conv2d {form} gradients {dtype}",
                lambda y=y, xg=xg, wg=wg, g=g: vkml.autograd.grad(y, (xg, wg), g, retain_graph=True),
            )
        os.environ.pop("VKML_CONV_IMPLICIT")
        w2, cols_t, cols, w_t = t((o, k), dtype), t((k, n * length), dtype), t((n * length, k), dtype), t((k, o), dtype)
        batched = t((n, k, length), dtype)
        timed(device, f"W(O,K) @ cols(K,NL) {dtype}", lambda: w2 @ cols_t)
        timed(device, f"cols(NL,K) @ W^T(K,O) {dtype}", lambda: cols @ w_t)
        timed(device, f"W @ cols(N,K,L) batched {dtype}", lambda: w2 @ batched)
        timed(device, f"cols(NL,K) @ W(O,K).T {dtype}", lambda: cols @ w2.T)
        padded = t((n, c, side + 2, side + 2), dtype)
        windows = [padded[:, :, i : i + side, j : j + side].unsqueeze(2) for i in range(3) for j in range(3)]
        timed(device, f"im2col alone {dtype}", lambda: vkml.cat(windows, 2))

    for dtype in ("float16", "float32"):
        forms(dtype)
    return 0


if __name__ == "__main__":
    sys.exit(main())
