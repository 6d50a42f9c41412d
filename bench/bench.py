"""vkml against PyTorch, side by side in the same run, on the same data.

    .venv/bin/python bench/bench.py --quick                 # any machine, < 1 min (lavapipe here)
    python3 bench/bench.py --json out.json                  # full sizes: the GPU machine
    .venv/bin/python bench/bench.py --quick --device cpu    # the CPU reference backend vs PyTorch CPU
    .venv/bin/python bench/bench.py --quick --only add,graph100 --repeats 3

vkml runs on ``--device`` (default ``vkml.best_device()``); PyTorch on CUDA when it has it,
else on the CPU (so on a machine without a GPU, vkml on lavapipe, a CPU Vulkan driver, meets
PyTorch on the CPU, and the header says so). The headline is the user's clock:
wall time from the call to the synchronised result on both sides, vkml and PyTorch
alternating a repetition each, reported as PyTorch time / vkml time (above 1: vkml is
faster). For diagnosis each row also has device-clock times: the sum of vkml's GPU timestamps
of the realize's dispatches (wall time on the CPU reference device) and PyTorch's CUDA events
(wall time on the CPU), with their ratio vkml / PyTorch. Each row reports medians (and minima
of the device clock), throughput, peak device memory and the relative error of vkml's result
against PyTorch's. See docs/benchmarks.md for the method and recorded results.
"""

from __future__ import annotations

import argparse
import datetime
import fnmatch
import platform
import subprocess
import sys
import time
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
ROOT = TOOLS.parent
for path in (str(ROOT), str(TOOLS)):
    if path not in sys.path:
        sys.path.insert(0, path)

import numpy as np  # noqa: E402
from bench_cold_start import measure_start_rows  # noqa: E402
from bench_report import Row, phases_table, results_table, seconds_text, summary, to_json  # noqa: E402
from bench_special import measure_compile, measure_graph, measure_training  # noqa: E402
from bench_timing import (  # noqa: E402
    as_tuple,
    has_timestamps,
    relative_error,
    time_torch,
    time_vkml,
    time_wall_side_by_side,
)
from bench_workloads import LAYER_WORKLOADS, OP_WORKLOADS, WORKLOADS, Case, Context  # noqa: E402

import vkml  # noqa: E402

SPECIAL = {
    "graph100": lambda ctx, reps, budget: measure_graph(ctx, 100, reps, budget),
    "graph1000": lambda ctx, reps, budget: measure_graph(ctx, 1000, reps, budget),
    "mlp_train_step": measure_training,
    "compile": measure_compile,
    "cold_start": measure_start_rows,  # new processes; the one entry gives the cold_start and warm_start rows
}
# The slow naive matmuls and the layer rows go after the rows about Python overhead, so that a
# --deadline cuts them first.
MATMULS = [name for name in WORKLOADS if name.startswith("matmul")]
ORDER = [
    *(name for name in WORKLOADS if name not in MATMULS and name not in LAYER_WORKLOADS),
    "graph100",
    "graph1000",
    "compile",
    "cold_start",
    "mlp_train_step",
    *MATMULS,
    *LAYER_WORKLOADS,
    *OP_WORKLOADS,
]


def _numpy(value) -> np.ndarray:
    """A result as numpy, whichever side it came from (float16 widened for comparison)."""
    value = as_tuple(value)[0]
    if isinstance(value, vkml.Tensor):
        return np.asarray(value.numpy())
    value = value.detach().cpu()  # torch
    return value.float().numpy() if value.dtype.is_floating_point else value.numpy()


def measure_case(name: str, case: Case, ctx: Context, repeats: int, budget_s: float) -> list[Row]:
    """Time vkml once and every PyTorch peer of ``case``; one row per peer.

    The wall-clock columns (the headline) come from repetitions that alternate vkml and the
    peer; the device-clock columns (diagnosis) from separate timestamped repetitions.
    """
    ours = time_vkml(case.vkml, ctx.device, repeats, budget_s)
    ours_values = _numpy(ours.result)
    ours.result = None
    rows = []
    for label, fn in case.torch.items():
        theirs = time_torch(fn, ctx.torch_device, repeats, budget_s)
        theirs_values = _numpy(theirs.result)
        theirs.result = None
        ours_wall, theirs_wall = time_wall_side_by_side(case.vkml, ctx.device, fn, ctx.torch_device, repeats, budget_s)
        error = relative_error(ours_values, theirs_values)
        passed = error <= case.tolerance
        note = case.note
        if case.reference is not None:  # both sides against float64: a cancelling sum has no float32 answer
            wide = _numpy(case.reference())
            ours_off, theirs_off = relative_error(ours_values, wide), relative_error(theirs_values, wide)
            passed = passed or ours_off <= 2 * theirs_off
            note = f"{note}; vs float64: vkml {ours_off:.1e}, PyTorch {theirs_off:.1e}"
        work = case.work
        ratio = ours.gpu.median / theirs.gpu.median if ours.gpu.median and theirs.gpu.median else None
        rows.append(
            Row(
                name,
                case.size,
                peer=f"{label} ({ctx.torch_device.type})",
                clock="gpu",
                vkml_min=ours.gpu.min,
                vkml_median=ours.gpu.median,
                vkml_wall_median=ours_wall.median,
                peer_min=theirs.gpu.min,
                peer_median=theirs.gpu.median,
                peer_wall_median=theirs_wall.median,
                ratio=ratio,
                vkml_rate=work.amount / ours.gpu.median if work and ours.gpu.median else None,
                peer_rate=work.amount / theirs.gpu.median if work and theirs.gpu.median else None,
                rate_unit=f"{work.unit}/s" if work else "",
                vkml_peak_bytes=ours.peak_bytes,
                peer_peak_bytes=theirs.peak_bytes,
                rel_error=error,
                tolerance=case.tolerance,
                samples=(len(ours.gpu.seconds), len(theirs.gpu.seconds)),
                status="ok" if passed else "mismatch",
                note=note,
            )
        )
    return rows


def run_workload(name: str, ctx: Context, repeats: int, budget_s: float) -> list[Row]:
    if name in SPECIAL:
        return SPECIAL[name](ctx, repeats, budget_s)
    make = WORKLOADS.get(name) or OP_WORKLOADS[name]
    return measure_case(name, make(ctx), ctx, repeats, budget_s)


def select(only: str | None, skip: str | None) -> list[str]:
    """Workload names in run order, filtered by comma-separated names or globs (``op:*``)."""

    def matches(name: str, patterns: str | None) -> bool:
        return any(fnmatch.fnmatchcase(name, p.strip()) for p in patterns.split(",") if p.strip())

    names = [n for n in ORDER if only is None or matches(n, only)]
    if only is not None:
        unknown = [
            p for p in only.split(",") if p.strip() and not any(fnmatch.fnmatchcase(n, p.strip()) for n in ORDER)
        ]
        if unknown:
            raise SystemExit(f"bench.py: no workload matches {', '.join(unknown)}; --list shows them")
    return [n for n in names if skip is None or not matches(n, skip)]


# ---------------------------------------------------------------------------- set-up and report


def torch_setup(spec: str | None, threads: int | None = None):
    """The PyTorch device (CUDA when present unless ``spec`` names one), with TF32 and reduced-precision reductions off."""
    import torch

    if threads:
        torch.set_num_threads(threads)

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    torch.set_float32_matmul_precision("highest")
    if spec:
        return torch.device(spec)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _git_commit() -> str:
    try:
        found = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10)
        return found.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def describe(device, torch_device, args) -> dict:
    """Date, devices, drivers, versions and the command: the header of a result."""
    import torch

    meta = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "commit": args.commit or _git_commit(),
        "mode": "quick" if args.quick else "full",
        "vkml_device": device.name,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_device": str(torch_device),
        "gpu_timestamps": has_timestamps(device),
    }
    report = next((r for r in vkml.vulkan_device_reports() if f"vulkan:{r['index']}" == device.name), None)
    if report is not None:
        meta["vkml_device_name"] = report.get("name")
        meta["vkml_device_type"] = report.get("device_type")
        meta["vkml_driver"] = f"{report.get('driver_name')} {report.get('driver_info')}".strip()
        meta["vulkan_api"] = report.get("api_version")
    else:
        meta["vkml_device_name"] = "CPU reference backend (numpy interpreter of the IR)"
    if torch_device.type == "cuda":
        meta["torch_device_name"] = torch.cuda.get_device_name(torch_device)
        meta["cuda"] = torch.version.cuda
    else:
        meta["torch_device_name"] = f"CPU, {torch.get_num_threads()} threads"
    return meta


def header_lines(meta: dict) -> list[str]:
    vk_type = meta.get("vkml_device_type")
    comparison = f"vkml on {meta['vkml_device']} ({meta['vkml_device_name']}"
    comparison += f", {vk_type}" if vk_type else ""
    comparison += f") vs PyTorch {meta['torch']} on {meta['torch_device']} ({meta['torch_device_name']})"
    if vk_type == "cpu" and meta["torch_device"] == "cpu":
        comparison += " — a CPU Vulkan driver against PyTorch's CPU kernels"
    lines = [
        f"- date: {meta['date']}; commit: {meta['commit']}; mode: {meta['mode']}",
        f"- {comparison}",
        f"- command: `{meta['command']}`",
    ]
    if "vkml_driver" in meta:
        lines.append(f"- Vulkan driver: {meta['vkml_driver']}, API {meta['vulkan_api']}")
    if "cuda" in meta:
        lines.append(f"- CUDA {meta['cuda']}")
    clock = "GPU timestamps" if meta["gpu_timestamps"] else "wall time (no device clock)"
    lines.append(f"- vkml 'gpu' clock: {clock}; PyTorch: {'CUDA events' if 'cuda' in meta else 'wall time'}")
    return lines


def progress_line(row: Row, elapsed_s: float, took_s: float) -> str:
    """One line per row while the run goes on, so a run cut short still shows what it measured."""
    times = (
        f"wall vkml {seconds_text(row.vkml_wall_median)}, {row.peer or 'no peer'} {seconds_text(row.peer_wall_median)}"
        f"; gpu vkml {seconds_text(row.vkml_median)}, peer {seconds_text(row.peer_median)}"
    )
    detail = times if row.status in ("ok", "mismatch") else row.note[:120]
    return (
        f"[{elapsed_s:6.1f}s] {row.workload:<16} {row.status:<8} PyTorch/vkml {row.speedup_text():>6}  {detail}"
        f"  ({took_s:.1f} s)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: the whole run in under a minute anywhere")
    parser.add_argument("--device", help="vkml device (default: vkml.best_device())")
    parser.add_argument("--torch-device", help="PyTorch device (default: cuda if available, else cpu)")
    parser.add_argument("--only", help="comma-separated workload names or globs (e.g. 'add,op:*')")
    parser.add_argument("--skip", help="comma-separated workload names or globs to leave out")
    parser.add_argument("--repeats", type=int, help="timed repetitions per side (default 10, quick 3)")
    parser.add_argument("--budget", type=float, help="seconds of timed repetitions per side before stopping early")
    parser.add_argument("--deadline", type=float, help="seconds after which remaining workloads are skipped")
    parser.add_argument("--torch-threads", type=int, help="PyTorch CPU threads (default: PyTorch's own choice)")
    parser.add_argument("--torch-compile", choices=("auto", "on", "off"), default="auto", help="auto: on with CUDA")
    parser.add_argument("--json", help="also write the results as JSON to this path")
    parser.add_argument("--commit", help="commit to record (default: git rev-parse HEAD)")
    parser.add_argument("--list", action="store_true", help="list the workloads and exit")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(ORDER))
        return 0
    names = select(args.only, args.skip)
    repeats = args.repeats or (3 if args.quick else 10)
    budget = args.budget if args.budget is not None else (1.0 if args.quick else 3.0)

    device = vkml.device(args.device) if args.device else vkml.best_device()
    torch_device = torch_setup(args.torch_device, args.torch_threads)
    compile_on = args.torch_compile == "on" or (args.torch_compile == "auto" and torch_device.type == "cuda")
    ctx = Context(device, torch_device, quick=args.quick, torch_compile=compile_on)
    meta = describe(device, torch_device, args)
    print("\n".join(header_lines(meta)), file=sys.stderr, flush=True)

    started, rows = time.perf_counter(), []
    for name in names:
        if args.deadline is not None and time.perf_counter() - started > args.deadline:
            rows.append(Row(name, status="skipped", note=f"past --deadline {args.deadline:g} s"))
            continue
        began = time.perf_counter()
        try:
            new = run_workload(name, ctx, repeats, budget)
        except Exception as exc:  # one broken workload must not hide the others' numbers
            new = [Row(name, status="error", note=f"{type(exc).__name__}: {str(exc)[:300]}")]
        rows += new
        for row in new:
            print(progress_line(row, time.perf_counter() - started, time.perf_counter() - began), file=sys.stderr)
        if args.json:  # after every workload, so a run cut short still leaves its numbers
            Path(args.json).write_text(to_json(meta, rows))
    print("\n".join(header_lines(meta)))
    print()
    print(results_table(rows))
    breakdown = phases_table(rows)
    if breakdown:
        print()
        print(breakdown)
    print()
    print("\n".join(summary(rows)))
    return 1 if any(r.status == "error" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
