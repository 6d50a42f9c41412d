"""Workloads of bench/bench.py that need more than a timed call: small graphs (where the time
goes between Python and the device), the cold compile of one fused kernel, and the MLP
training step of bench/bench_training.py.

    >>> rows = measure_graph(ctx, 1000, repeats=5, budget_s=3.0)   # doctest: +SKIP
    >>> rows[0].phases["build"]                                    # doctest: +SKIP
    0.0061
"""

from __future__ import annotations

import inspect
import os
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from bench_report import Row
from bench_timing import gpu_clock, has_timestamps, relative_error, spy_runs, torch_sync
from bench_workloads import Context, chain8

import vkml

TINY = 1024  # elements of each tensor of the small graphs


# ---------------------------------------------------------------------------- small graphs

# Ten single ops over two small tensors a, b ∈ [-1, 1), cycled: products, sums, two Python
# scalars (push constants, or baked in past the push-constant budget), a max, a min, and x·x,
# which gives x two uses, so the scheduler chooses between recomputing and realizing it. The
# min with b after x·x ≥ 0 clamps x to [-1, 1] once a cycle, so |x| stays under 6.25.
# Chains have at most CHAIN ops and are summed at the end: vkml's scheduler recurses once per
# op and a single chain of 1,000 ops hits Python's recursion limit (RecursionError).
_STEPS = (
    lambda lib, x, a, b: x * b,
    lambda lib, x, a, b: x + a,
    lambda lib, x, a, b: x * 0.5,
    lambda lib, x, a, b: x - b,
    lambda lib, x, a, b: lib.maximum(x, a),
    lambda lib, x, a, b: x * x,
    lambda lib, x, a, b: lib.minimum(x, b),
    lambda lib, x, a, b: x + 0.25,
    lambda lib, x, a, b: x * 0.75,
    lambda lib, x, a, b: x - a,
)
CHAIN = 100


def small_graph(lib, a, b, ops: int):
    """Exactly ``ops`` elementwise ops over two small tensors: chains of ≤ ``CHAIN`` ops, summed.

    >>> small_graph(np, np.ones(2), np.ones(2), 3)   # 1·1, + 1, − 1
    array([1., 1.])
    """
    chains = max(1, -(-ops // CHAIN))
    chain_ops = ops - (chains - 1)  # the sums of the chains take the rest
    total = None
    for k in range(chains):
        x = a
        for i in range(chain_ops // chains + (k < chain_ops % chains)):
            x = _STEPS[(i + k) % len(_STEPS)](lib, x, a, b)  # each chain starts at another step
        total = x if total is None else total + x
    return total


def _median(values: list[float]) -> float:
    return statistics.median(values)


def measure_graph(ctx: Context, ops: int, repeats: int, budget_s: float) -> list[Row]:
    """Build + realize + download of ``small_graph`` against the same ops in eager PyTorch.

    vkml's time to result splits into: ``build`` (Python records the nodes), ``schedule +
    lower`` (realize up to ``Device.run``), ``record + submit + wait`` (inside ``run``),
    ``download`` (``.numpy()``); the ``gpu`` phase comes from as many extra runs with GPU
    timestamps, outside the timed ones (reading timestamps back costs about 1 ms a realize).
    """
    import torch

    device, torch_device = ctx.device, ctx.torch_device
    a, ta = ctx.pair((TINY,), tag="tiny_a")
    b, tb = ctx.pair((TINY,), tag="tiny_b")
    small_graph(vkml, a, b, ops).numpy()  # warm-up: compiles
    phases: dict[str, list[float]] = defaultdict(list)
    totals: list[float] = []
    dispatches = submissions = 0
    ours = None
    while len(totals) < max(1, repeats) and (sum(totals) < budget_s or not totals):
        # No GPU timestamps here: reading them back costs about 1 ms a realize (measured), which
        # is no part of the time to result; the gpu phase comes from extra runs below.
        with spy_runs(device) as calls:
            started = time.perf_counter()
            out = small_graph(vkml, a, b, ops)
            built = time.perf_counter()
            out.realize()
            realized = time.perf_counter()
            ours = out.numpy()
            done = time.perf_counter()
        entered, left = calls[0][0], calls[-1][1]
        dispatches, submissions = sum(c[2] for c in calls), len(calls)
        phases["build"].append(built - started)
        phases["schedule + lower"].append(entered - built)
        phases["record + submit + wait"].append(left - entered)
        phases["after run"].append(realized - left)
        phases["download"].append(done - realized)
        totals.append(done - started)
    for _ in range(len(totals) if has_timestamps(device) else 0):
        with gpu_clock(device) as runs:
            small_graph(vkml, a, b, ops).realize()
        phases["gpu (timestamps)"].append(sum(sum(run) for run in runs))

    small_graph(torch, ta, tb, ops).cpu()  # warm-up
    torch_sync(torch_device)
    peer_totals, issued = [], []
    theirs = None
    while len(peer_totals) < max(1, repeats) and (sum(peer_totals) < budget_s or not peer_totals):
        started = time.perf_counter()
        out = small_graph(torch, ta, tb, ops)
        torch_sync(torch_device)
        synced = time.perf_counter()
        theirs = out.cpu().numpy()
        peer_totals.append(time.perf_counter() - started)
        issued.append(synced - started)

    error = relative_error(ours, theirs)
    return [
        Row(
            f"graph{ops}",
            f"{ops} ops on {TINY} float32",
            peer=f"eager ({torch_device.type})",
            clock="wall",
            vkml_min=min(totals),
            vkml_median=_median(totals),
            vkml_wall_median=_median(totals),
            peer_min=min(peer_totals),
            peer_median=_median(peer_totals),
            peer_wall_median=_median(peer_totals),
            rel_error=error,
            tolerance=1e-5,
            samples=(len(totals), len(peer_totals)),
            status="ok" if error <= 1e-5 else "mismatch",
            note=f"time to result (build, realize, download); vkml: {dispatches} dispatches in {submissions} "
            f"submission(s); torch: {ops} kernel launches, {_median(issued) * 1e6 / ops:.1f} µs per op to sync",
            phases={name: _median(values) for name, values in phases.items()},
        )
    ]


# ---------------------------------------------------------------------------- cold compile


def _fused_chain_kernel(ctx: Context):
    """The IR kernel vkml dispatches for ``chain8`` (captured through ``vkml.debug.kernel_listeners``)."""
    a, _ = ctx.pair((TINY,), tag="tiny_a")
    b, _ = ctx.pair((TINY,), tag="tiny_b")
    seen: list = []
    vkml.debug.kernel_listeners.append(seen.append)
    try:
        chain8(vkml, a, b).realize()
    finally:
        vkml.debug.kernel_listeners.remove(seen.append)
    return seen[-1]


def measure_compile(ctx: Context, repeats: int, budget_s: float) -> list[Row]:
    """IR → verified SPIR-V → ``vkCreateComputePipelines`` for the fused ``chain8`` kernel, cold.

    Each repetition renames the kernel (its name reaches the SPIR-V as OpName), so neither the
    kernel cache nor the driver's pipeline cache has seen it; pipelines go through an empty
    ``VkPipelineCache`` of their own, never the user's.
    """
    device = ctx.device
    if not hasattr(device, "pipelines"):
        return [Row("compile", "fused chain8 kernel", status="skipped", note="the CPU reference compiles nothing")]
    from vkml.codegen import compile_kernel
    from vkml.ir import parse
    from vkml.runtime.vulkan.kernel_cache import KernelBinary
    from vkml.runtime.vulkan.pipelines import PipelineCacheFile, Pipelines

    kernel = _fused_chain_kernel(ctx)
    text = str(kernel)
    header = f"kernel {kernel.name} "
    if not text.startswith(header):
        return [Row("compile", status="error", note=f"unexpected IR text start: {text[:40]!r}")]
    with tempfile.TemporaryDirectory() as folder:
        cold = Pipelines(device.logical, device.kernels, PipelineCacheFile(device.logical, Path(folder) / "cold.bin"))
        codegen, driver, totals = [], [], []
        while len(totals) < max(1, repeats) and (sum(totals) < budget_s or not totals):
            name = f"{kernel.name}_cold{len(totals)}_{os.getpid()}_{time.time_ns()}"
            renamed = parse(f"kernel {name} " + text[len(header) :])
            started = time.perf_counter()
            compiled = compile_kernel(renamed, device.features)
            emitted = time.perf_counter()
            pipeline = cold.create(name, len(renamed.buffers), KernelBinary.from_compiled(compiled))
            done = time.perf_counter()
            cold.cache_file.dirty = False  # never written: the folder is temporary
            del pipeline  # its finalizer queues the handle; reap() destroys it (never destroy it here too)
            cold.reap()
            codegen.append(emitted - started)
            driver.append(done - emitted)
            totals.append(done - started)
    return [
        Row(
            "compile",
            f"fused chain8 kernel ({text.count(chr(10))} lines of IR)",
            clock="wall",
            vkml_min=min(totals),
            vkml_median=_median(totals),
            vkml_wall_median=_median(totals),
            samples=(len(totals), 0),
            note="cold: IR → verified, emitted, assembled, validated SPIR-V → vkCreateComputePipelines; no PyTorch peer",
            phases={"IR → validated SPIR-V": _median(codegen), "vkCreateComputePipelines": _median(driver)},
        )
    ]


# ---------------------------------------------------------------------------- training step


def _seconds(value) -> list[float]:
    if value is None:
        return []
    return [float(v) for v in value] if isinstance(value, (list, tuple)) else [float(value)]


def _step_row(name: str, result: dict, peer: str, note: str) -> Row:
    """A wall-clock row of ``bench_training_step``'s per-step seconds (``result``, its dict)."""
    ours, theirs = _seconds(result.get("vkml_seconds")), _seconds(result.get("torch_seconds"))
    return Row(
        name,
        str(result.get("size", "")),
        peer=peer,
        clock="wall",
        vkml_min=min(ours, default=None),
        vkml_median=statistics.median(ours) if ours else None,
        peer_min=min(theirs, default=None),
        peer_median=statistics.median(theirs) if theirs else None,
        samples=(len(ours), len(theirs)),
        note=note,
    )


def measure_training(ctx: Context, repeats: int, budget_s: float) -> list[Row]:
    """The MLP training step of bench/bench_training.py, when that file exists.

    Contract expected of ``bench_training_step``: it takes any of the keyword arguments
    ``device``, ``torch_device``, ``quick``, ``repeats``, ``budget_s`` and returns a dict with
    ``vkml_seconds`` and ``torch_seconds`` (a float or a list of per-step seconds), and
    optionally ``vkml_peak_bytes``, ``torch_peak_bytes``, ``size`` and ``note``.
    """
    try:
        from bench_training import bench_training_step
    except ModuleNotFoundError as exc:
        if exc.name != "bench_training":
            raise  # the file is there but broken: an error row, not a skip
        note = "bench/bench_training.py is not there yet"
        return [
            Row("mlp_train_step", status="skipped", note=note),
            Row("train_peak_memory", status="skipped", note=note),
        ]
    offered = {
        "device": ctx.device,
        "torch_device": ctx.torch_device,
        "quick": ctx.quick,
        "repeats": repeats,
        "budget_s": budget_s,
    }
    accepted = inspect.signature(bench_training_step).parameters
    result = bench_training_step(**{k: v for k, v in offered.items() if k in accepted})
    if not isinstance(result, dict):
        return [Row("mlp_train_step", status="error", note=f"bench_training_step returned {type(result).__name__}")]
    size = str(result.get("size", ""))
    peer = f"eager ({ctx.torch_device.type})"
    rows = [_step_row("mlp_train_step", result, peer, str(result.get("note", "")))]
    if not ctx.quick and "width" in accepted and "batch" in accepted:
        # The demo's own size (64 wide, batches of 60) in a full run too: a step of the size most
        # programs a user ports first, where the host's work per op, not the GPU's, is the time.
        from vkml import demo

        small = bench_training_step(
            **{k: v for k, v in offered.items() if k in accepted and k != "quick"}, width=demo.WIDTH, batch=demo.BATCH
        )
        note = "the demo's size: host-bound on both sides; " + str(small.get("note", "")).removeprefix(
            "the demo's step: "
        )
        rows.append(_step_row("mlp_train_step_small", small, peer, note))
    vk_peak, torch_peak = result.get("vkml_peak_bytes"), result.get("torch_peak_bytes")
    rows.append(
        Row(
            "train_peak_memory",
            size,
            peer="torch.cuda.max_memory_allocated" if ctx.torch_device.type == "cuda" else peer,
            clock="",
            vkml_peak_bytes=vk_peak,
            peer_peak_bytes=torch_peak,
            ratio=(vk_peak / torch_peak) if vk_peak and torch_peak else None,
            note="ratio: peak bytes vkml / torch",
        )
    )
    return rows
