"""Time float16 ``linear`` with a bias (PyTorch's rounding: the bias added to the float32 sums, one rounding)
against the plain float16 product, on the best device.

``before`` turns off the selection that gives the widened float16 operands of that float32 product the
cooperative-matrix template (``lowering.widened_from``), as before it existed: the scalar float32 tiles.
Prints the kernels each side ran and the device time (timestamps where the device has them).

    python bench/bench_half_linear.py --size 4096 --repeats 20
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_timing import as_tuple, time_vkml  # noqa: E402

import vkml  # noqa: E402
from vkml import debug  # noqa: E402
from vkml.kernels import matmul as matmul_templates  # noqa: E402
from vkml.schedule import scheduler as schedule  # noqa: E402


def run(label: str, build, device, repeats: int) -> np.ndarray:
    names: list[str] = []
    debug.kernel_listeners.append(lambda kernel: names.append(kernel.name))
    try:
        timing = time_vkml(build, device, repeats, budget_s=20.0)
    finally:
        debug.kernel_listeners.pop()
    products = sorted({name for name in names if name.startswith("MM")})
    print(
        f"{label:34s} {timing.gpu.median * 1e3:9.3f} ms (median of {len(timing.gpu.seconds)})  {products}", flush=True
    )
    return as_tuple(timing.result)[0].float().numpy()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=4096, help="m = n = k")
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    device = vkml.best_device()
    print(device, flush=True)
    rng = np.random.default_rng(0)
    n = args.size
    x, w, b = (
        vkml.tensor(rng.standard_normal(shape).astype(np.float16), device=device) for shape in ((n, n), (n, n), (n,))
    )
    linear = lambda: vkml.nn.functional.linear(x, w, b)  # noqa: E731
    after = run("linear f16 + bias (after)", linear, device, args.repeats)
    run("x @ w.T f16 (no bias)", lambda: x @ w.T, device, args.repeats)
    run("x @ w.T + b f16 (rounded twice)", lambda: x @ w.T + b, device, args.repeats)
    selection = matmul_templates.widened_from
    matmul_templates.widened_from = lambda node: None
    schedule.clear_template_cache()
    try:
        before = run("linear f16 + bias (before)", linear, device, args.repeats)
    finally:
        matmul_templates.widened_from = selection
        schedule.clear_template_cache()
    differ = np.count_nonzero(after.view(np.uint32) != before.view(np.uint32))
    print(f"outputs differing in bits between before and after: {differ} of {after.size}", flush=True)


if __name__ == "__main__":
    main()
