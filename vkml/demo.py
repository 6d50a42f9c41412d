"""``make demo``: build a lazy graph on ``best_device()``, realize it, show what ran.

Run with ``python -m vkml.demo``.
"""

from __future__ import annotations

import time

import numpy as np

import vkml
from vkml import debug


def main() -> None:
    reports = vkml.vulkan_device_reports()
    print("Vulkan devices:")
    for r in reports:
        print(
            f"  vulkan:{r['index']}  {r['name']}  ({r['device_type']}, driver {r.get('driver_name', '?')} "
            f"{r.get('driver_version', '')}, Vulkan {r.get('api_version', '?')})"
        )
    if not reports:
        print("  none found: running on the CPU reference backend")
    dev = vkml.best_device()
    print(f"best_device() -> {dev.name}\n")

    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((256, 512), dtype=np.float32)
    w_np = rng.standard_normal((512, 64), dtype=np.float32) / 16
    x = vkml.tensor(x_np, device=dev)
    w = vkml.tensor(w_np, device=dev)

    print("Building a lazy graph: logits = relu(x @ w) - 0.5; probs = softmax(logits, dim=1); loss = mean(...)")
    logits = vkml.relu(x @ w) - 0.5
    probs = vkml.softmax(logits, dim=1)
    best = probs.argmax(dim=1)
    score = (probs * logits).sum(dim=1).mean()
    print(f"  nothing has run yet: {score!r}\n")

    debug.reset_counters()
    start = len(debug.recent_kernels)
    t0 = time.perf_counter()
    vkml.realize(probs, best, score)
    elapsed = time.perf_counter() - t0
    ran = list(debug.recent_kernels)[start:]
    c = debug.counters()
    print(
        f"realize(probs, best, score) on {dev.name}: {len(ran)} kernels, {c['submissions']} submission(s), "
        f"{elapsed * 1e3:.1f} ms"
    )
    for _device, name, grid, local in ran:
        print(f"  {name:<40} grid {grid}  local {local}")

    reference = np.maximum(x_np @ w_np, 0) - 0.5
    print(f"\nscore = {score.item():.6f}; first argmax = {best[:8].tolist()}")
    print(f"max |logits - numpy| = {np.abs(logits.numpy() - reference).max():.2e}")
    if dev.name != "cpu":
        cpu_score = vkml.softmax(vkml.relu(vkml.tensor(x_np) @ vkml.tensor(w_np)) - 0.5, dim=1)
        same = np.array_equal(cpu_score.numpy().view(np.uint32), probs.numpy().view(np.uint32))
        print(f"softmax on {dev.name} equals the CPU reference bit for bit: {same}")


if __name__ == "__main__":
    main()
