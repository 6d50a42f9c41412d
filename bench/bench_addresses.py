"""Descriptor vs buffer-device-address access on the first Vulkan device.

The measurement behind the runtime's choice (vkml/codegen/__init__.py, vkml/runtime/vulkan/backend.py)
to reach only buffers larger than ``maxStorageBufferRange`` through their device address and
keep every other buffer on its descriptor.

    .venv/bin/python bench/bench_addresses.py [--numel 16777216] [--repeats 7]

For each kernel it prints the best wall time of ``repeats`` runs (one submission each) with
every buffer on its descriptor and with every buffer reached by address, and the ratio
address / descriptor; then the host cost per dispatch of recording 1000 tiny dispatches in one
run, each way. A buffer is sent down the by-address path the way ``VulkanDevice.run`` sends a
buffer past the range: its ``beyond_range`` flag.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from vkml.ir import types as T
from vkml.ir.builder import KernelBuilder, const, if_, local_id, loop, workgroup_id
from vkml.runtime.base import Dispatch
from vkml.runtime.vulkan.backend import VulkanDevice

LOCAL = 64
MAX_X = 65535


def _grid(invocations: int) -> tuple[int, int, int]:
    groups = -(-invocations // LOCAL)
    x = min(groups, MAX_X)
    return (x, -(-groups // x), 1)


def _flat_id(grid: tuple[int, int, int]):
    group = workgroup_id(1) * const(grid[0], T.uint32) + workgroup_id(0)
    return group * const(LOCAL, T.uint32) + local_id(0)


def scale_kernel(grid):
    """out[i] = x[i] * 2 + 1"""
    kb = KernelBuilder("bench_scale", (LOCAL, 1, 1))
    x, out = kb.buffer("x", T.float32, "read"), kb.buffer("out", T.float32, "write")
    n = kb.param("n", T.uint32)
    with kb:
        i = _flat_id(grid)
        with if_(i < n):
            out[i] = x[i] * 2.0 + 1.0
    return kb.finish()


def add_kernel(grid):
    """out[i] = a[i] + b[i]"""
    kb = KernelBuilder("bench_add", (LOCAL, 1, 1))
    a, b = kb.buffer("a", T.float32, "read"), kb.buffer("b", T.float32, "read")
    out = kb.buffer("out", T.float32, "write")
    n = kb.param("n", T.uint32)
    with kb:
        i = _flat_id(grid)
        with if_(i < n):
            out[i] = a[i] + b[i]
    return kb.finish()


def row_sum_kernel(grid, width: int):
    """out[i] = x[i·width] + ... + x[i·width + width − 1], loads in a loop"""
    kb = KernelBuilder("bench_row_sum", (LOCAL, 1, 1))
    x, out = kb.buffer("x", T.float32, "read"), kb.buffer("out", T.float32, "write")
    rows = kb.param("rows", T.uint32)
    with kb:
        i = _flat_id(grid)
        with if_(i < rows):
            base = i * const(width, T.uint32)
            one = const(1, T.uint32)
            (total,) = loop(one, const(width, T.uint32), one, [x[base]], lambda k, acc: (acc + x[base + k],))
            out[i] = total
    return kb.finish()


def best_seconds(device: VulkanDevice, dispatches: list[Dispatch], repeats: int) -> float:
    device.run(dispatches)  # compile and warm up
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        device.run(dispatches)
        times.append(time.perf_counter() - started)
    return min(times)


def by_address(buffers, on: bool) -> None:
    for buffer in buffers:
        buffer.beyond_range = on


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--numel", type=int, default=1 << 24)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    n = args.numel
    device = VulkanDevice(0)
    print(f"{device.logical.info.properties['deviceName']}: {n} float32 elements, best of {args.repeats}")
    rng = np.random.default_rng(0)
    a = device.allocate(T.float32, n)
    b = device.allocate(T.float32, n)
    out = device.allocate(T.float32, n)
    device.upload(a, rng.standard_normal(n, dtype=np.float32))
    device.upload(b, rng.standard_normal(n, dtype=np.float32))
    width = 16
    cases = {
        "x * 2 + 1": Dispatch(scale_kernel(_grid(n)), _grid(n), {"x": a, "out": out}, {"n": n}),
        "a + b": Dispatch(add_kernel(_grid(n)), _grid(n), {"a": a, "b": b, "out": out}, {"n": n}),
        f"row sums of {width}": Dispatch(
            row_sum_kernel(_grid(n // width), width), _grid(n // width), {"x": a, "out": out}, {"rows": n // width}
        ),
    }
    print(f"{'kernel':<16}{'descriptor ms':>15}{'address ms':>12}{'ratio':>8}")
    for name, dispatch in cases.items():
        buffers = list(dispatch.buffers.values())
        by_address(buffers, False)
        descriptor = best_seconds(device, [dispatch], args.repeats)
        by_address(buffers, True)
        address = best_seconds(device, [dispatch], args.repeats)
        by_address(buffers, False)
        print(f"{name:<16}{descriptor * 1e3:>15.2f}{address * 1e3:>12.2f}{address / descriptor:>8.2f}")

    tiny = device.allocate(T.float32, LOCAL)
    small = [Dispatch(scale_kernel((1, 1, 1)), (1, 1, 1), {"x": tiny, "out": out}, {"n": LOCAL})] * 1000
    by_address([tiny, out], False)
    descriptor = best_seconds(device, small, args.repeats)
    by_address([tiny, out], True)
    address = best_seconds(device, small, args.repeats)
    by_address([tiny, out], False)
    print(
        f"1000 tiny dispatches in one run: descriptor {descriptor * 1e3:.2f} µs, "
        f"address {address * 1e3:.2f} µs per dispatch ({address / descriptor:.2f}x)"
    )


if __name__ == "__main__":
    main()
