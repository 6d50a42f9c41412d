"""Time the cooperative-matrix float16 matmul under several shapes on one device (GPU timestamps).

The shape a device gets is ``kernels_matmul_coopmat.DEFAULT``; this script swaps in each of
``CANDIDATES`` (or the ``--shape`` ones), so the fastest on a GPU can be picked by measurement:

    .venv/bin/python bench/bench_matmul_coopmat.py --size 8192 --sweep        # the H200, about 3 minutes
    .venv/bin/python bench/bench_matmul_coopmat.py --size 8192 --sweep --wt   # x @ w.T (nn.Linear's layout)
    .venv/bin/python bench/bench_matmul_coopmat.py --shape "256x128x16 sg64x64 v4"
    .venv/bin/python bench/bench_matmul_coopmat.py --shape "128x128x16 sg64x32 v4 e2"   # two epilogue blocks

Each line: the shape, the GPU time of the float16 product (median of the repeats, after a
warm-up that compiles), TFLOP/s, the time of the same product with K = 2·bk (two K-steps:
about the epilogue's and the launch's share), the driver's register and shared-memory figures
for the kernel where it reports them (VK_KHR_pipeline_executable_properties), and the largest error on 64 sampled outputs
relative to the bound of docs/ops/matmul.md on matrix units (2γ_(K+16) Σ|a||b|, plus half an
ulp of the float16 rounding): it must stay ≤ 1.

Without cooperative matrices (lavapipe) nothing can be timed: the script says so, then checks
each shape where it can — SPIR-V that passes spirv-val for an H200-like device, and a small
product run by the CPU interpreter with that shape, compared with numpy within the bound.
"""

from __future__ import annotations

import argparse

import numpy as np
from bench_matmul_tiles import time_product  # tools/ is this script's folder, so on sys.path

import vkml
from vkml import debug
from vkml.codegen import compile_kernel
from vkml.codegen.features import DeviceFeatures
from vkml.ir import types as T
from vkml.kernels.matmul import coopmat as kernels_matmul_coopmat
from vkml.kernels.matmul.coopmat import CANDIDATES, Shape
from vkml.runtime.vulkan import pipeline_stats
from vkml.schedule import scheduler as schedule


def gamma(n: int) -> float:
    return n * 2.0**-24 / (1 - n * 2.0**-24)


def bound_ratio(got: np.ndarray, a: np.ndarray, b: np.ndarray, rng: np.random.Generator, samples: int = 64) -> float:
    """The largest |error| / (2γ_(K+16) Σ|a||b| + half an ulp of float16) over sampled outputs (float64 references)."""
    k = a.shape[1]
    rows, cols = rng.integers(0, a.shape[0], samples), rng.integers(0, b.shape[1], samples)
    worst = 0.0
    for i, j in zip(rows, cols):
        ai, bj = a[i].astype(np.float64), b[:, j].astype(np.float64)
        exact = ai @ bj
        value = float(got[i, j])
        big = np.float16(max(abs(exact), abs(value)))
        half_ulp = float(np.nextafter(big, np.float16(np.inf)) - big) / 2 if np.isfinite(big) else np.inf
        allowed = 2 * gamma(k + 16) * float(np.abs(ai) @ np.abs(bj)) + half_ulp
        worst = max(worst, abs(value - exact) / allowed)
    return worst


def use(shape: Shape) -> None:
    """Lower float16 products with ``shape`` from now on (the mode string names it: a fresh template)."""
    kernels_matmul_coopmat.DEFAULT = shape
    schedule.clear_template_cache()


def operands(rng, m: int, k: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    a = rng.standard_normal((m, k), dtype=np.float32).astype(np.float16)
    b = rng.standard_normal((k, n), dtype=np.float32).astype(np.float16)
    return a, b


def sweep_on_device(device, shapes, size: int, repeats: int, wt: bool) -> None:
    """Time ``a @ b`` (``wt``: ``a @ w.T`` with ``w`` = b.T stored row-major, so B has k contiguous)."""
    rng = np.random.default_rng(0)
    a, b = operands(rng, size, size, size)
    ta = vkml.tensor(a, device=device)
    tb = vkml.tensor(np.ascontiguousarray(b.T), device=device).T if wt else vkml.tensor(b, device=device)
    short_k = {}
    device.pipelines.capture_statistics = pipeline_stats.supported(device.logical)
    for shape in shapes:
        if not kernels_matmul_coopmat.fits(device.features, shape):
            print(f"{shape}: does not fit this device (workgroup size or shared memory)")
            continue
        use(shape)
        compiled: list = []
        debug.kernel_listeners.append(compiled.append)
        try:
            seconds = time_product(ta, tb, device, repeats)
        finally:
            debug.kernel_listeners.remove(compiled.append)
        ratio = bound_ratio((ta @ tb).numpy(), a, b, rng)
        if shape.bk not in short_k:
            sa, sb = operands(rng, size, 2 * shape.bk, size)
            sb_t = vkml.tensor(np.ascontiguousarray(sb.T), device=device).T if wt else vkml.tensor(sb, device=device)
            short_k[shape.bk] = vkml.tensor(sa, device=device), sb_t
        epilogue = time_product(*short_k[shape.bk], device, repeats)
        tflops = 2 * size**3 / seconds / 1e12
        print(
            f"{size:6d}{' wt' if wt else ''} {str(shape):24s} {seconds * 1e3:8.3f} ms {tflops:7.1f} TFLOP/s"
            f"  K={2 * shape.bk}: {epilogue * 1e3:7.3f} ms{registers(device, compiled)}  error/bound {ratio:.3f}",
            flush=True,
        )


def registers(device, kernels) -> str:
    """The driver's register and shared-memory figures for the product's kernel, where it reports them."""
    if not device.pipelines.capture_statistics:
        return ""
    figures = {}
    try:
        matrix_kernels = [kernel for kernel in kernels if kernel.name.startswith("MMC")]
        for kernel in matrix_kernels:
            for found in pipeline_stats.executable_statistics(
                device.logical, device.pipelines.lookup(kernel).pipeline.handle
            ):
                figures.update({k: v for k, v in found["statistics"].items() if "egister" in k or "hared" in k})
    except Exception as exc:  # the figures are a bonus: never lose the timing line over them
        return f"  [no statistics: {type(exc).__name__}: {exc}]"
    return "  [" + ", ".join(f"{k} {v}" for k, v in figures.items()) + "]" if figures else ""


def check_without_matrices(device, shapes, wt: bool) -> None:
    """What can run here: each shape's SPIR-V for an H200-like device, and the CPU interpreter's product."""
    print(f"{device.name}: no float16 cooperative matrices, nothing to time; checking each shape instead")
    h200 = DeviceFeatures.h200_like()
    chosen = kernels_matmul_coopmat.applies
    kernels_matmul_coopmat.applies = lambda features, a, b: a is T.float16 is b  # the interpreter takes them
    rng = np.random.default_rng(1)
    try:
        for shape in shapes:
            use(shape)
            # Tails in m, k and n; k and n multiples of 4, so that groups of four are staged as vectors.
            a, b = operands(rng, shape.bm + 9, 2 * shape.bk + 8, shape.bn + 4)
            tb = vkml.tensor(np.ascontiguousarray(b.T)).T if wt else vkml.tensor(b)
            product = vkml.tensor(a) @ tb
            plan = schedule.Plan([product.node])
            (main,) = plan.chains[id(product.node)]
            template = kernels_matmul_coopmat.lower_matmul_coopmat(product.node, main, set(plan.roots), frozenset(), 32)
            lines = len(compile_kernel(template.kernels[0].kernel, h200).asm.splitlines())  # spirv-val
            ratio = bound_ratio(product.numpy(), a, b, rng, samples=256)
            fits = "fits" if kernels_matmul_coopmat.fits(h200, shape) else "does NOT fit"
            print(f"{str(shape):24s} {fits} an H200, {lines} lines of SPIR-V; CPU error/bound {ratio:.3f}", flush=True)
            if ratio > 1:
                raise SystemExit(f"{shape}: the interpreted product is outside the bound")
    finally:
        kernels_matmul_coopmat.applies = chosen
        use(CANDIDATES[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=8192, help="square size (default 8192)")
    parser.add_argument("--sweep", action="store_true", help="time every shape of CANDIDATES (default: DEFAULT)")
    parser.add_argument("--shape", action="append", default=[], help='a shape, e.g. "256x128x16 sg64x64 v4"')
    parser.add_argument("--wt", action="store_true", help="time x @ w.T (B with k contiguous) instead of x @ y")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--device", default=None, help="a Vulkan device (default: the best one)")
    args = parser.parse_args()
    shapes = [Shape.parse(text) for text in args.shape]
    shapes += list(CANDIDATES) if args.sweep else ([] if shapes else [kernels_matmul_coopmat.DEFAULT])
    for shape in shapes:
        problem = shape.problem(32)
        if problem is not None:
            raise SystemExit(f"{shape}: {problem}")
    device = vkml.device(args.device) if args.device else vkml.best_device()
    if device.kind != "vulkan":
        raise SystemExit("needs a Vulkan device (GPU timestamps)")
    print(f"{device.name}: default {kernels_matmul_coopmat.DEFAULT}")
    if not kernels_matmul_coopmat.applies(device.features, T.float16, T.float16):
        check_without_matrices(device, shapes, args.wt)
        return
    sweep_on_device(device, shapes, args.size, args.repeats, args.wt)


if __name__ == "__main__":
    main()
