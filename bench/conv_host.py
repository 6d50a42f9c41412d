"""Host cost of one conv2d: graph build, nodes, the plan-cache hit, kernels forward and backward.

    PYTHONPATH=$PWD python3 bench/conv_host.py [--device vulkan:0]

``F.conv2d(x[64, 64, 56, 56], w[64, 64, 3, 3], padding=1)`` on realized operands: the median and
minimum of 200 calls from the call to the returned lazy tensor (no realize), and the nodes that
tensor's graph holds; then a realize of a repeated call with ``device.run`` stubbed (the host's part
of a plan-cache hit: trace, lookup, bind); then the dispatches of a small conv2d forward, and of
its forward and backward together.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import Counter

import numpy as np

import vkml
import vkml.nn.functional as F


def graph_nodes(node) -> Counter:
    seen, stack = {}, [node]
    while stack:
        n = stack.pop()
        if id(n) not in seen and not n.realized:
            seen[id(n)] = n
            stack.extend(n.srcs)
    return Counter(str(n.op) for n in seen.values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    dev = vkml.device(args.device)
    x = vkml.zeros(64, 64, 56, 56, device=dev).realize()
    w = vkml.zeros(64, 64, 3, 3, device=dev).realize()
    for _ in range(20):
        F.conv2d(x, w, padding=1)
    times = []
    for _ in range(200):
        t0 = time.perf_counter()
        out = F.conv2d(x, w, padding=1)
        times.append(time.perf_counter() - t0)
    nodes = graph_nodes(out.node)
    print(
        f"{dev.name}: build median {statistics.median(times) * 1e6:.0f} µs, min {min(times) * 1e6:.0f} µs; "
        f"{sum(nodes.values())} nodes {dict(nodes)}"
    )
    run = dev.run
    dev.run = lambda dispatches, *args, **kwargs: None  # host work only: the results are not computed
    dev.run_again = lambda key, written: False  # (and no kept recording is submitted instead)
    try:
        vkml.realize(F.conv2d(x, w, padding=1))
        hits = []
        for _ in range(50):
            out = F.conv2d(x, w, padding=1)
            t0 = time.perf_counter()
            vkml.realize(out)
            hits.append(time.perf_counter() - t0)
    finally:
        dev.run = run
        del dev.run_again
    print(f"{dev.name}: realize of a plan-cache hit, run stubbed: median {statistics.median(hits) * 1e6:.0f} µs")
    rng = np.random.default_rng(0)
    xs = vkml.tensor(rng.standard_normal((2, 3, 6, 6)).astype(np.float32), device=dev, requires_grad=True)
    ws = vkml.tensor(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), device=dev, requires_grad=True)
    vkml.debug.reset_counters()
    F.conv2d(xs, ws, padding=1).realize()
    forward = vkml.debug.counters()["dispatches"]
    vkml.debug.reset_counters()
    F.conv2d(xs, ws, padding=1).sum().backward()
    vkml.realize(xs.grad, ws.grad)
    both = vkml.debug.counters()["dispatches"]
    print(f"{dev.name}: dispatches forward {forward}, forward and backward {both}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
