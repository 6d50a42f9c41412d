"""Where a realize's wall time goes beyond the GPU's: build, realize, synchronise, per row.

    python3 bench/realize_phases.py [ROW ...] [--profile] [--small] [--bytecodes] [--device vulkan:0]

Rows: conv2d_f16, conv2d_f32, add_2^24, bn_train, maxpool, sum_2^28, softmax, layer_norm, sdpa_f16,
sdpa_f32, matmul (default: all). For each,
after 3 untimed runs, 10 timed ones print the medians of: graph build (the op calls), realize
(schedule, lower, record, submit, wait), the synchronise after it, the GPU time (timestamps),
the time inside ``device.run`` and before its first call, and the counters that moved; then 20
runs without timestamps give the wall time a user sees, and 200 more the host's own time per
realize: the realize's wall time less the time inside driver calls (Vulkan) or the
interpreter (``device.run`` on the CPU), and how much of it comes before the submission.
``--profile`` adds a cProfile of 20 more runs. ``--driver-calls`` prints instead, per row, the median
wall time of a realize and its ``synchronize()``, its Python outside the driver, the time from the
submission's return to the fence's first signalled poll, and each Vulkan function's time a call
(issue 20: what the fixed cost beyond the GPU's time is made of). ``--bytecodes`` prints instead the Python bytecodes of one steady call per phase (``sys.settrace``
opcode events, each charged to the innermost phase function on its stack: the same on a loaded
machine; docs/benchmarks.md, session 19). ``--small`` takes shapes a CPU driver (lavapipe)
or the CPU device runs in a moment, for the host's side. docs/benchmarks.md (session 9) has its
numbers on the H200.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from bench_timing import gpu_clock, spy_runs  # noqa: E402

import vkml  # noqa: E402
from vkml.runtime.counters import counters  # noqa: E402


def cases(device, small: bool = False) -> dict:
    """Each row's graph builder; it returns the tensors one realize computes."""
    F = vkml.nn.functional
    rng = np.random.default_rng(0)

    def t(shape, dtype="float32"):
        return vkml.tensor(rng.standard_normal(shape).astype(dtype), device=device).realize()

    # --small: the same graphs on shapes lavapipe and the CPU device run in a moment
    n, image, seq, square = (1 << 16, (8, 16, 16, 16), 64, 256) if small else (1 << 24, (64, 64, 112, 112), 1024, 8192)
    made = {}
    x16, w16 = t((image[0], 64, 28, 28) if small else (64, 64, 56, 56), "float16"), t((64, 64, 3, 3), "float16")
    made["conv2d_f16"] = lambda: (F.conv2d(x16, w16, padding=1),)
    a, b = t((n,)), t((n,))
    made["add_2^24"] = lambda: (a + b,)
    xb, g, beta, mean = t(image), t((image[1],)), t((image[1],)), t((image[1],))
    var = (t((image[1],)).abs() + 1).realize()
    # The running statistics are realized with the output, as bench.py's row and an optimizer step
    # do: left lazy, each repetition would chain one more pending update and keep its batch alive.
    made["bn_train"] = lambda: (F.batch_norm(xb, mean, var, g, beta, training=True), mean, var)
    made["maxpool"] = lambda: (F.max_pool2d(xb, 3, 2, 1),)
    big = t((n if small else 1 << 28,))
    made["sum_2^28"] = lambda: (big.sum(),)
    s = t((square, square))
    made["softmax"] = lambda: (s.softmax(-1),)
    q, k, v = (t((4, 8, seq, 64), "float16") for _ in range(3))
    made["sdpa_f16"] = lambda: (F.scaled_dot_product_attention(q, k, v),)

    # Rows added later make their inputs at their first call: the rows above keep their inputs' values,
    # and a run of some rows holds only their memory (an unrun row's 256 MiB would change the allocator's
    # state the others are measured in).
    def conv2d_f32():
        x32, w32 = t(x16.shape), t(w16.shape)
        return lambda: (F.conv2d(x32, w32, padding=1),)

    def layer_norm():
        weight, bias = t((square,)), t((square,))
        return lambda: (F.layer_norm(s, (square,), weight, bias),)

    def matmul():
        m = t((square, square))
        return lambda: (s @ m,)

    def sdpa_f32():
        q32, k32, v32 = (t((4, 8, seq, 64)) for _ in range(3))
        return lambda: (F.scaled_dot_product_attention(q32, k32, v32),)

    for later in (conv2d_f32, layer_norm, matmul, sdpa_f32):
        made[later.__name__] = _lazily(later)
    return made


def _lazily(make):
    """A row's builder whose inputs ``make()`` makes at the first call (``make`` returns the builder)."""
    built = []

    def build():
        if not built:
            built.append(make())
        return built[0]()

    return build


@contextmanager
def driver_time(device):
    """Yields [seconds inside the driver (Vulkan: every ``vk*`` call through the device's function
    table) or the interpreter (CPU: ``device.run``), perf_counter at the last submission's start];
    the caller zeroes the first between samples. The table is wrapped while the block runs."""
    spent = [0.0, 0.0]
    if device.kind != "vulkan":
        run = device._run

        def timed_run(*args, **kwargs):
            start = spent[1] = time.perf_counter()
            try:
                return run(*args, **kwargs)
            finally:
                spent[0] += time.perf_counter() - start

        device._run = timed_run
        try:
            yield spent
        finally:
            del device._run
        return
    lib = device.logical.lib
    holders = [o for o in (device.logical, device.recordings, device.descriptors, device.transfers) if o.lib is lib]

    class Timed:
        def __getattr__(self, name):
            function = getattr(lib, name)
            if not callable(function):
                return function

            def timed(*args):
                start = time.perf_counter()
                if name == "vkQueueSubmit":
                    spent[1] = start
                try:
                    return function(*args)
                finally:
                    spent[0] += time.perf_counter() - start

            setattr(self, name, timed)
            return timed

    timed = Timed()
    for holder in holders:
        holder.lib = timed
    try:
        yield spent
    finally:
        for holder in holders:
            holder.lib = lib


def host_time(device, fn, repeats: int = 200) -> None:
    """Print the median host time per realize outside the driver, and the part before the submission."""
    outside, before = [], []
    with driver_time(device) as spent:
        for _ in range(repeats):
            out = fn()
            spent[0] = spent[1] = 0.0
            t0 = time.perf_counter()
            vkml.realize(*out)
            t1 = time.perf_counter()
            outside.append(t1 - t0 - spent[0])
            before.append(spent[1] - t0 if spent[1] else float("nan"))
            device.synchronize()
            del out
    outside.sort()
    before.sort()
    middle = repeats // 2
    print(
        f"  host per realize, outside the driver: median {outside[middle] * 1e6:.1f} µs "
        f"({before[middle] * 1e6:.1f} µs before the submission)"
    )


def driver_calls(device, fn, repeats: int = 200) -> None:
    """Print where a realize and the ``synchronize()`` after it spend their wall time, median µs per call of
    each: the whole, the Python outside the driver, and each Vulkan function called (its time a call and its
    calls a realize); then the time from ``vkQueueSubmit``'s return to the fence's first signalled poll
    (the GPU's work plus its launch latency). Vulkan only."""
    if device.kind != "vulkan":
        print("  --driver-calls: a Vulkan device only")
        return
    lib = device.logical.lib
    holders = [o for o in (device.logical, device.recordings, device.descriptors, device.transfers) if o.lib is lib]
    calls: dict[str, list] = {}
    marks = [0.0, 0.0]  # the last submission's return, the first signalled fence poll after it

    class Timed:
        def __getattr__(self, name):
            function = getattr(lib, name)
            if not callable(function):
                return function
            spent = calls.setdefault(name, [])

            def timed(*args):
                start = time.perf_counter()
                result = function(*args)
                end = time.perf_counter()
                spent.append(end - start)
                if name == "vkQueueSubmit":
                    marks[0], marks[1] = end, 0.0
                elif name in ("vkGetFenceStatus", "vkWaitForFences") and result == 0 and not marks[1]:
                    marks[1] = end
                return result

            setattr(self, name, timed)
            return timed

    walls, outside, latency = [], [], []
    timed = Timed()
    for holder in holders:
        holder.lib = timed
    try:
        for _ in range(repeats):
            out = fn()
            before = sum(len(v) for v in calls.values()), sum(sum(v) for v in calls.values())
            t0 = time.perf_counter()
            vkml.realize(*out)
            device.synchronize()
            t1 = time.perf_counter()
            inside = sum(sum(v) for v in calls.values()) - before[1]
            walls.append(t1 - t0)
            outside.append(t1 - t0 - inside)
            if marks[1]:
                latency.append(marks[1] - marks[0])
            del out
    finally:
        for holder in holders:
            holder.lib = lib

    def median(values):
        return sorted(values)[len(values) // 2] * 1e6 if values else float("nan")

    print(f"  realize + synchronize: median {median(walls):.1f} µs, Python outside the driver {median(outside):.1f} µs")
    print(f"  submit's return to the fence's first signalled poll: median {median(latency):.1f} µs")
    for name, spent in sorted(calls.items(), key=lambda item: -sum(item[1])):
        print(f"    {name:28s} {median(spent):8.1f} µs a call, {len(spent) / repeats:5.1f} calls a realize")


def phases(device, fn) -> None:
    for _ in range(3):
        vkml.realize(*fn())
        device.synchronize()
    rows = []
    for _ in range(10):
        before = dict(counters)
        with gpu_clock(device) as stamps, spy_runs(device) as calls:
            t0 = time.perf_counter()
            out = fn()
            t1 = time.perf_counter()
            vkml.realize(*out)
            t2 = time.perf_counter()
            device.synchronize()
            t3 = time.perf_counter()
        moved = {k: counters[k] - before.get(k, 0) for k in counters if counters[k] != before.get(k, 0)}
        inside = sum(c[1] - c[0] for c in calls)
        first = calls[0][0] - t1 if calls else float("nan")
        rows.append((t1 - t0, t2 - t1, t3 - t2, sum(sum(r) for r in stamps), inside, first, moved))
        del out
    rows.sort(key=lambda r: r[0] + r[1] + r[2])
    r = rows[len(rows) // 2]
    print(
        f"  build {r[0] * 1e6:.0f} µs, realize {r[1] * 1e6:.0f} µs, synchronise {r[2] * 1e6:.0f} µs | "
        f"GPU {r[3] * 1e6:.0f} µs | in run() {r[4] * 1e6:.0f} µs, before it {r[5] * 1e6:.0f} µs"
    )
    print(f"  counters {r[6]}")
    walls = []
    for _ in range(20):
        t0 = time.perf_counter()
        vkml.realize(*fn())
        device.synchronize()
        walls.append(time.perf_counter() - t0)
    walls.sort()
    print(f"  wall without timestamps: min {walls[0] * 1e6:.0f} µs, median {walls[10] * 1e6:.0f} µs")
    host_time(device, fn)


def _phase_codes() -> dict:
    """The functions whose bytecodes (their own and their callees') make each phase of a realize."""
    from vkml.runtime.vulkan import backend, recordings
    from vkml.schedule import eager_scalars, plan_cache, scheduler

    phases = {
        "plan lookup": [
            scheduler._namespace,
            plan_cache.find,
            plan_cache.trace,
            plan_cache.lookup,
            plan_cache.remember,
        ],
        "allocation": [backend.VulkanDevice.allocate_each],
        "replay key": [plan_cache.allocate_keyed, plan_cache.replay_key, eager_scalars.replay_key],
        "record/replay": [
            backend.VulkanDevice.run_again,
            backend.VulkanDevice.run,
            plan_cache.dispatches_of,
            plan_cache.bind,
            eager_scalars.dispatches_of,
        ],
        "submit": [recordings.Recordings.submit_again, recordings.Recordings.submit],
        "wait": [recordings.Recordings.wait_for, recordings.Recordings.wait_claimed, backend.VulkanDevice.synchronize],
        "result": [plan_cache.finish],
    }
    codes = {}
    for phase, functions in phases.items():
        for function in functions:
            codes[function.__code__] = phase
    return codes


def phase_bytecodes(device, fn, repeats: int = 3) -> dict:
    """Bytecodes of one steady call of ``fn`` then its realize, by phase (the median of ``repeats``):
    "build" is the op calls, "realize" the realize's own, and each phase the functions ``_phase_codes``
    names, their callees included. The synchronise after each call is not counted."""
    codes = _phase_codes()
    for _ in range(5):
        vkml.realize(*fn())
        device.synchronize()
    samples = []
    for _ in range(repeats):
        counts: dict = {}
        where = ["build"]

        def tracer(frame, event, arg, counts=counts, where=where):
            frame.f_trace_opcodes = True
            if event == "opcode":
                phase, f = where[0], frame
                while f is not None:
                    found = codes.get(f.f_code)
                    if found is not None:
                        phase = found
                        break
                    f = f.f_back
                counts[phase] = counts.get(phase, 0) + 1
            return tracer

        sys.settrace(tracer)
        try:
            out = fn()
            where[0] = "realize"
            vkml.realize(*out)
        finally:
            sys.settrace(None)
        device.synchronize()
        del out
        samples.append(counts)
    samples.sort(key=lambda c: sum(c.values()))
    return samples[len(samples) // 2]


PHASES = ("build", "plan lookup", "allocation", "replay key", "record/replay", "submit", "wait", "result", "realize")


def print_bytecodes(device, made: dict, names: list[str]) -> None:
    print(f"{'row':12} " + " ".join(f"{p:>13}" for p in PHASES) + f" {'total':>8}")
    for name in names:
        counts = phase_bytecodes(device, made[name])
        print(f"{name:12} " + " ".join(f"{counts.get(p, 0):>13}" for p in PHASES) + f" {sum(counts.values()):>8}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rows", nargs="*")
    parser.add_argument("--device", default=None)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--small", action="store_true", help="shapes a CPU driver runs in a moment")
    parser.add_argument("--bytecodes", action="store_true", help="bytecodes of a steady call by phase")
    parser.add_argument("--driver-calls", action="store_true", help="the driver's calls of a realize and its wait")
    args = parser.parse_args(argv)
    device = vkml.device(args.device) if args.device else vkml.best_device()
    made = cases(device, args.small)
    if args.bytecodes:
        print_bytecodes(device, made, args.rows or list(made))
        return 0
    if args.driver_calls:
        for name in args.rows or list(made):
            print(name)
            for _ in range(5):  # plans, compiles and records; then replays
                vkml.realize(*made[name]())
                device.synchronize()
            driver_calls(device, made[name])
        return 0
    for name in args.rows or list(made):
        print(name)
        phases(device, made[name])
        if args.profile:
            profile = cProfile.Profile()
            profile.enable()
            for _ in range(20):
                vkml.realize(*made[name]())
                device.synchronize()
            profile.disable()
            text = io.StringIO()
            pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(14)
            print(text.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
