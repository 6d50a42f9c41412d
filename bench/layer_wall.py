"""Where the layer rows' wall time goes beyond their GPU time (issues 18 and 20): counts and phases per call.

    python3 bench/layer_wall.py [ROW ...] [--quick] [--repeats 30] [--no-times] [--json out.json]

Rows are bench/bench_workloads.py's layer workloads (default: batch_norm_train, max_pool2d,
conv2d_f32, conv2d_f16, softmax, layer_norm, sdpa_f16_1024, resnet_block_fwd), at the bench's full
sizes, or its ``--quick`` ones (what lavapipe runs in a moment). For each, after warm-up calls:

- counts of one call (the same on a loaded machine): the counters that moved (dispatches, barriers,
  submissions, plans, recordings reused, host waits, ...), the device memory blocks made (each a
  ``vkAllocateMemory``), every ``vk*`` call through the device's function table, and the Python
  bytecodes of the graph build and of the realize;
- the kernels of one call, with their grids and GPU microseconds (timestamps; a dispatch's time
  includes the barrier in front of it);
- unless ``--no-times``: medians over ``--repeats`` calls of the build, the realize (up to its
  return: plan lookup, allocation, submission), the host before ``vkQueueSubmit``, the time inside
  driver calls, and the synchronise after it, back to back; the same wall time with PyTorch's call
  back to back; and both alternating a call each, as bench/bench_timing.py's
  ``time_wall_side_by_side`` does. docs/benchmarks.md ("Session 18: where the layer rows' wall time
  goes") reads them.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import json
import pstats
import statistics
import sys
import time
import types
from contextlib import contextmanager, nullcontext
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
for path in (str(TOOLS.parent), str(TOOLS)):
    if path not in sys.path:
        sys.path.insert(0, path)

from bench_timing import as_tuple, gpu_clock, torch_sync  # noqa: E402
from bench_workloads import WORKLOADS, Context  # noqa: E402
from realize_phases import driver_time  # noqa: E402

import vkml  # noqa: E402
from vkml.runtime.counters import counters  # noqa: E402
from vkml.runtime.vulkan import memory as vk_memory  # noqa: E402

# Calls before the counts: compiles, then the allocator settles on the ranges a call reuses (batch
# norm's running statistics take a few calls), so that the counted call is the steady state.
WARM_UP_CALLS = 8
ROWS = (
    "batch_norm_train",
    "max_pool2d",
    "conv2d_f32",
    "conv2d_f16",
    "softmax",
    "layer_norm",
    "sdpa_f16_1024",
    "resnet_block_fwd",
)


def bytecodes(fn) -> int:
    """Python bytecodes ``fn()`` executes (sys.settrace opcode events), as tests/test_host_cost.py counts."""
    count = 0

    def tracer(frame, event, arg):
        nonlocal count
        frame.f_trace_opcodes = True
        if event == "opcode":
            count += 1
        return tracer

    sys.settrace(tracer)
    try:
        fn()
    finally:
        sys.settrace(None)
    return count


class DriverCalls:
    """Counts every ``vk*`` call through the device's function table while installed (as
    realize_phases.driver_time wraps it), and the memory blocks made (``vkAllocateMemory``)."""

    def __init__(self, device):
        self.device = device
        self.calls: collections.Counter = collections.Counter()

    def __enter__(self):
        lib, calls = self.device.logical.lib, self.calls
        self.lib = lib
        self.holders = [
            o
            for o in (self.device.logical, self.device.recordings, self.device.descriptors, self.device.transfers)
            if o.lib is lib
        ]

        class Counted:
            def __getattr__(self, name):
                function = getattr(lib, name)
                if not callable(function):
                    return function

                def counted(*args):
                    calls[name] += 1
                    return function(*args)

                setattr(self, name, counted)
                return counted

        counted = Counted()
        for holder in self.holders:
            holder.lib = counted
        self.init = vk_memory.MemoryBlock.__init__
        init = self.init

        def counting_init(block, *args, **kwargs):
            calls["MemoryBlock (vkAllocateMemory)"] += 1
            init(block, *args, **kwargs)

        vk_memory.MemoryBlock.__init__ = counting_init
        return self

    def __exit__(self, *exc):
        for holder in self.holders:
            holder.lib = self.lib
        vk_memory.MemoryBlock.__init__ = self.init


def call(device, build) -> tuple:
    out = vkml.realize(*as_tuple(build()))
    device.synchronize()
    return out


def counts(device, build) -> dict:
    """What one call (after warm-up) does, by counts."""
    built = []
    build_codes = bytecodes(lambda: built.append(as_tuple(build())))
    device.synchronize()
    before = dict(counters)
    realize_codes = bytecodes(lambda: vkml.realize(*built[0]))
    moved = {k: counters[k] - before.get(k, 0) for k in counters if counters[k] != before.get(k, 0)}
    device.synchronize()
    built.clear()
    calls = {}
    if device.kind == "vulkan":
        with DriverCalls(device) as spy:
            call(device, build)
        calls = dict(spy.calls)
    return {"build_bytecodes": build_codes, "realize_bytecodes": realize_codes, "counters": moved, "vk_calls": calls}


def kernels(device, build) -> list:
    """(kernel, grid, GPU µs) of each dispatch of one call, recorded with timestamps."""
    got = []
    original = device.run

    def run(dispatches, timestamps=False, key=None):
        seconds = original(dispatches, timestamps=True, key=key)
        got.extend(
            (d.kernel.name, tuple(d.grid), round((s or 0.0) * 1e6, 1)) for d, s in zip(dispatches, seconds or [])
        )
        return seconds

    device.run = run
    device.run_again = lambda key, written: False
    try:
        call(device, build)
    finally:
        del device.run, device.run_again
    return got


def median_us(values) -> float:
    return round(statistics.median(values) * 1e6, 1)


def phases(device, build, repeats: int) -> dict:
    """Medians of each phase of a call, back to back (vkml alone)."""
    rows = collections.defaultdict(list)
    with driver_time(device) as spent:
        for _ in range(repeats):
            spent[0] = spent[1] = 0.0
            t0 = time.perf_counter()
            out = as_tuple(build())
            t1 = time.perf_counter()
            vkml.realize(*out)
            t2 = time.perf_counter()
            inside_realize, submitted_at = spent[0], spent[1]
            device.synchronize()
            t3 = time.perf_counter()
            rows["build"].append(t1 - t0)
            rows["realize"].append(t2 - t1)
            rows["realize_host_outside_driver"].append(t2 - t1 - inside_realize)
            rows["before_submit"].append((submitted_at - t1) if submitted_at else float("nan"))
            rows["synchronize"].append(t3 - t2)
            rows["wall"].append(t3 - t0)
            del out
    result = {k: median_us(v) for k, v in rows.items()}
    gpu = []
    for _ in range(max(3, repeats // 3)):
        with gpu_clock(device) as runs:
            call(device, build)
        gpu.append(sum(sum(r) for r in runs))
    result["gpu_timestamps"] = median_us(gpu)
    return result


def peer_and_alternation(device, build, torch_fn, torch_device, repeats: int) -> dict:
    """Wall medians: PyTorch back to back, then both sides alternating (bench_timing.time_wall_side_by_side)."""
    for _ in range(3):
        torch_fn()
    torch_sync(torch_device)
    peer = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = torch_fn()
        torch_sync(torch_device)
        peer.append(time.perf_counter() - t0)
        del out
    ours, theirs, gpu_alternating = [], [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = call(device, build)
        t1 = time.perf_counter()
        out = None
        peer_out = torch_fn()
        torch_sync(torch_device)
        t2 = time.perf_counter()
        peer_out = None
        ours.append(t1 - t0)
        theirs.append(t2 - t1)
    # The GPU time of vkml's kernels right after a PyTorch call: does the switch slow the kernels themselves?
    for _ in range(max(3, repeats // 3)):
        torch_fn()
        torch_sync(torch_device)
        with gpu_clock(device) as runs:
            call(device, build)
        gpu_alternating.append(sum(sum(r) for r in runs))
    del out, peer_out
    return {
        "peer_back_to_back": median_us(peer),
        "vkml_alternating": median_us(ours),
        "peer_alternating": median_us(theirs),
        "gpu_timestamps_after_peer": median_us(gpu_alternating),
    }


@contextmanager
def session_17_paths():
    """Inside the block, the layers build as before session 18 (an A/B in one run): batch norm's and
    layer norm's ops through the tensor ops (the ops' path their node builds fall back to where a
    memory format is active), max pooling's taps as slices of the padded tensor."""
    from vkml.nn import functional_layers, functional_norm

    norm_format, window_max = functional_norm._memory_format, functional_layers._padded_window_max
    functional_norm._memory_format = types.SimpleNamespace(ACTIVE=True)
    functional_layers._padded_window_max = lambda *args: None
    try:
        yield
    finally:
        functional_norm._memory_format, functional_layers._padded_window_max = norm_format, window_max


def realize_profile(device, build, runs: int = 20, top: int = 10) -> list:
    """cProfile of ``runs`` realizes (builds outside it): the functions with the most time of their own,
    C functions included (what bytecode counts do not see)."""
    profile = cProfile.Profile()
    for _ in range(runs):
        out = as_tuple(build())
        profile.enable()
        vkml.realize(*out)
        profile.disable()
        device.synchronize()
        del out
    stats = pstats.Stats(profile).stats
    rows = sorted(stats.items(), key=lambda item: -item[1][2])[:top]
    return [
        (f"{Path(file).name}:{line}({name})", calls // runs, round(own / runs * 1e6, 1))
        for (file, line, name), (calls, _, own, _, _) in rows
    ]


POOL_FORMS = ((3, 2, 1), (2, 2, 0), (1, 2, 0), (3, 1, 1))  # (kernel, stride, padding)


def pool_taps(ctx: Context, repeats: int) -> dict:
    """GPU µs of max_pool2d on the bench's input for windows of 9, 4 and 1 taps (and stride 1), both sides:
    a kernel whose time follows its taps at one output size is bound by each tap's index arithmetic,
    one that follows the bytes by memory."""
    import torch

    shape = (2, 8, 24, 24) if ctx.quick else (64, 64, 112, 112)
    x, tx = ctx.pair(shape, tag="act")
    F, device, found = vkml.nn.functional, ctx.device, {}
    for kernel, stride, padding in POOL_FORMS:

        def build(kernel=kernel, stride=stride, padding=padding):
            return F.max_pool2d(x, kernel, stride, padding)

        for _ in range(3):
            call(device, build)
        gpu = []
        for _ in range(repeats):
            with gpu_clock(device) as runs:
                call(device, build)
            gpu.append(sum(sum(r) for r in runs))
        peer = []
        if ctx.torch_device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            for _ in range(repeats):
                start.record()
                torch.nn.functional.max_pool2d(tx, kernel, stride, padding)
                end.record()
                end.synchronize()
                peer.append(start.elapsed_time(end) * 1e-3)
        found[f"k{kernel} s{stride} p{padding}"] = {
            "vkml_gpu": median_us(gpu),
            "peer_gpu": median_us(peer) if peer else None,
        }
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rows", nargs="*")
    parser.add_argument("--quick", action="store_true", help="the bench's --quick sizes (lavapipe)")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--no-times", action="store_true", help="counts and kernels only")
    parser.add_argument("--json", help="write the results here too")
    parser.add_argument("--pool-taps", action="store_true", help="also max_pool2d's GPU time by window size")
    parser.add_argument("--ab", action="store_true", help="each row's counts and phases before session 18 too")
    parser.add_argument("--profile", action="store_true", help="a cProfile of each row's realizes")
    args = parser.parse_args(argv)
    import torch

    device = vkml.best_device()
    torch_device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if torch_device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    ctx = Context(device, torch_device, quick=args.quick)
    results = {"device": device.name, "torch_device": str(torch_device)}
    bytecodes(lambda: None)  # on the H200's Python the first traced call counted 0: a throwaway first trace
    for name in args.rows or ROWS:
        started = time.perf_counter()
        case = WORKLOADS[name](ctx)
        row = {}
        for label, paths in (("before", session_17_paths), ("", nullcontext)) if args.ab else (("", nullcontext),):
            with paths():
                for _ in range(WARM_UP_CALLS):
                    call(device, case.vkml)
                found = counts(device, case.vkml)
                if device.kind == "vulkan":
                    found["kernels"] = kernels(device, case.vkml)
                if not args.no_times:
                    found["phases"] = phases(device, case.vkml, args.repeats)
            row.update({f"{key}_{label}" if label else key: value for key, value in found.items()})
        if not args.no_times:
            row.update(peer_and_alternation(device, case.vkml, case.torch["eager"], torch_device, args.repeats))
        if args.profile:
            row["realize_profile"] = realize_profile(device, case.vkml)
        row["probe_seconds"] = round(time.perf_counter() - started, 1)
        results[name] = row
        print(name, json.dumps(row), flush=True)
        ctx.forget_inputs()
    if args.pool_taps:
        for label, paths in (("pool_taps_before", session_17_paths), ("pool_taps", nullcontext)):
            if label.endswith("before") and not args.ab:
                continue
            with paths():
                results[label] = pool_taps(ctx, args.repeats)
            print(label, json.dumps(results[label]), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
