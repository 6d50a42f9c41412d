"""Timing for bench/bench.py: vkml (GPU timestamps + wall) and PyTorch (CUDA events or wall).

Every measurement warms up first (kernel compiles, pipeline creation, allocator growth stay
out of the numbers), then repeats until ``repeats`` samples or ``budget_s`` seconds of
samples, whichever comes first (at least one sample). Peak device memory is read over the
timed repetitions only, with the inputs already allocated.

    >>> t = time_vkml(lambda: a + b, dev, repeats=5, budget_s=2.0)     # doctest: +SKIP
    >>> t.gpu.median, t.wall.median                                     # doctest: +SKIP
    (0.00073, 0.00091)
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field

import vkml
from vkml.runtime.counters import counters


@dataclass
class Samples:
    """Repeated measurements of one quantity, in seconds."""

    seconds: list[float] = field(default_factory=list)

    @property
    def min(self) -> float | None:
        return min(self.seconds) if self.seconds else None

    @property
    def median(self) -> float | None:
        return statistics.median(self.seconds) if self.seconds else None


@dataclass
class Timing:
    """What one side of a comparison measured: ``gpu`` is device time (timestamps or CUDA
    events), or wall time where the device has no clock of its own (CPU)."""

    gpu: Samples
    wall: Samples
    peak_bytes: int | None
    result: object = None  # the output of the last repetition, for the correctness check


def as_tuple(out) -> tuple:
    return out if isinstance(out, tuple) else (out,)


# ---------------------------------------------------------------------------- vkml


def _reset_peak(device) -> None:
    if hasattr(device, "reset_peak_memory"):
        device.reset_peak_memory()
    elif hasattr(device, "peak_bytes"):  # the CPU reference device
        device.peak_bytes = device.allocated_bytes


def _peak(device) -> int | None:
    stats = getattr(device, "memory_stats", None)
    return stats()["peak_bytes"] if stats else None


def has_timestamps(device) -> bool:
    """Whether ``device`` can time its runs on its own clock (a Vulkan device whose queue has timestamps)."""
    queries = getattr(device, "timestamp_queries", None)
    return bool(queries is not None and queries.supported)


@contextmanager
def gpu_clock(device):
    """Collect the GPU seconds of every run inside the block (an empty list without timestamps)."""
    if has_timestamps(device):
        with device.timestamped() as runs:
            yield runs
    else:
        yield []


def time_vkml(build: Callable, device, repeats: int, budget_s: float) -> Timing:
    """Time ``build()`` (graph construction) plus realizing what it returns.

    GPU time is the sum of the timestamped dispatch durations of the realize's runs; on a
    device without timestamps (the CPU reference) it is the wall time.
    """
    vkml.realize(*as_tuple(build()))  # warm-up: compiles and pipeline creation
    gpu, wall = Samples(), Samples()
    _reset_peak(device)
    out, spent = None, 0.0
    while len(wall.seconds) < max(1, repeats) and (spent < budget_s or not wall.seconds):
        out = None  # let the previous output go before the next allocates
        with gpu_clock(device) as runs:
            started = time.perf_counter()
            out = vkml.realize(*as_tuple(build()))
            elapsed = time.perf_counter() - started
        wall.seconds.append(elapsed)
        gpu.seconds.append(sum(sum(run) for run in runs) if has_timestamps(device) else elapsed)
        spent += elapsed
    return Timing(gpu, wall, _peak(device), out)


@contextmanager
def spy_runs(device):
    """Record ``(entered, left, dispatch count)`` perf_counter stamps of every ``device.run`` in the block.

    It shadows the bound method on this one instance, so the split of a realize into
    schedule + lower (before ``run``) and record + submit + wait (inside it) needs no hook in
    vkml.schedule.
    """
    calls: list[tuple[float, float, int]] = []
    original = device.run
    original_again = getattr(device, "run_again", None)

    def run(dispatches, *args, **kwargs):
        entered = time.perf_counter()
        try:
            return original(dispatches, *args, **kwargs)
        finally:
            calls.append((entered, time.perf_counter(), len(dispatches)))

    def run_again(key, written):
        # A realize whose plan and buffers repeat submits its kept recording without making dispatches
        # (VulkanDevice.run_again); the dispatches it launched are the counter's difference.
        entered, before = time.perf_counter(), counters["dispatches"]
        replayed = original_again(key, written)
        if replayed:
            calls.append((entered, time.perf_counter(), counters["dispatches"] - before))
        return replayed

    device.run = run
    if original_again is not None:
        device.run_again = run_again
    try:
        yield calls
    finally:
        del device.run
        if original_again is not None:
            del device.run_again


# ---------------------------------------------------------------------------- torch


def torch_sync(torch_device) -> None:
    import torch

    if torch_device.type == "cuda":
        torch.cuda.synchronize(torch_device)


def time_torch(fn: Callable, torch_device, repeats: int, budget_s: float, warmups: int = 1) -> Timing:
    """Time ``fn()`` with CUDA events (and wall, with a synchronize) on CUDA, wall time on the CPU."""
    import torch

    cuda = torch_device.type == "cuda"
    out = None
    for _ in range(warmups):
        out = fn()
    torch_sync(torch_device)
    gpu, wall = Samples(), Samples()
    if cuda:
        torch.cuda.reset_peak_memory_stats(torch_device)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    spent = 0.0
    while len(wall.seconds) < max(1, repeats) and (spent < budget_s or not wall.seconds):
        out = None
        started = time.perf_counter()
        if cuda:
            start.record()
            out = fn()
            end.record()
            end.synchronize()
        else:
            out = fn()
        elapsed = time.perf_counter() - started
        wall.seconds.append(elapsed)
        gpu.seconds.append(start.elapsed_time(end) * 1e-3 if cuda else elapsed)
        spent += elapsed
    peak = torch.cuda.max_memory_allocated(torch_device) if cuda else None
    return Timing(gpu, wall, peak, out)


# ---------------------------------------------------------------------------- the user's clock


def time_wall_side_by_side(
    build: Callable, device, torch_fn: Callable, torch_device, repeats: int, budget_s: float
) -> tuple[Samples, Samples]:
    """Wall-clock from the call to the synchronised result, vkml and PyTorch alternating.

    What a user's clock sees: vkml builds the graph, realizes it and waits for the device;
    PyTorch runs ``torch_fn`` and synchronises its device. No timestamps or CUDA events are
    recorded meanwhile (they cost time of their own). The sides alternate a repetition each,
    so that clock boosts, other processes and thermal state fall on both alike. Both sides are
    warmed up first (compiles, allocator growth).
    """
    for _ in range(2):
        vkml.realize(*as_tuple(build()))
        device.synchronize()
        torch_fn()
        torch_sync(torch_device)
    ours, theirs, spent = Samples(), Samples(), 0.0
    while len(ours.seconds) < max(1, repeats) and (spent < budget_s or not ours.seconds):
        started = time.perf_counter()
        out = vkml.realize(*as_tuple(build()))
        device.synchronize()
        middle = time.perf_counter()
        out = None
        peer = torch_fn()
        torch_sync(torch_device)
        ended = time.perf_counter()
        peer = None
        ours.seconds.append(middle - started)
        theirs.seconds.append(ended - middle)
        spent += ended - started
    del out, peer
    return ours, theirs


# ---------------------------------------------------------------------------- comparisons


def relative_error(got, want) -> float:
    """‖got − want‖ / ‖want‖ in float64 (inf when shapes differ, nan when either has NaN)."""
    import numpy as np

    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        return math.inf
    scale = float(np.linalg.norm(want))
    diff = float(np.linalg.norm(got - want))
    return diff / scale if scale else diff


def geometric_mean(values: list[float]) -> float | None:
    """The geometric mean of the positive finite ``values`` (None when there are none)."""
    usable = [v for v in values if v and math.isfinite(v) and v > 0]
    if not usable:
        return None
    return math.exp(sum(math.log(v) for v in usable) / len(usable))
