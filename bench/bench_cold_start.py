"""Cold and warm start: a new process, from ``import vkml`` to its first ``softmax(a @ a)`` result.

    .venv/bin/python bench/bench_cold_start.py                    # lavapipe here: about 30 s
    .venv/bin/python bench/bench_cold_start.py --repeats 5 --json start.json
    .venv/bin/python bench/bench.py --only cold_start,warm_start  # the same rows in bench.py's table

Every sample is a new interpreter that imports vkml, opens the device, uploads a 256×256 float32
matrix and reads back ``softmax(a @ a, dim=-1)``; it reports each phase's wall time (import,
device, first result) and its CPU time with its children's (spirv-as, spirv-val). ``cold``: the
kernel cache is a new empty folder and the drivers' own shader caches are off
(``__GL_SHADER_DISK_CACHE=0``, ``MESA_SHADER_CACHE_DISABLE=true``), as on a first run after
installing; ``warm``: a folder that an earlier, untimed process filled, drivers' caches as they
are. The peer is a new PyTorch process doing the same (on CUDA when it has it), phase by phase.
Python's bytecode is compiled once before the samples (as ``pip install`` does), so
``PYTHONDONTWRITEBYTECODE`` is left out of the samples' environment. Results are compared with
PyTorch's; nothing here asserts on time (docs/benchmarks.md has the figures).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

TOOLS = Path(__file__).resolve().parent
ROOT = TOOLS.parent
if str(TOOLS) not in sys.path:
    sys.path.insert(0, str(TOOLS))

from bench_report import Row, phases_table, results_table  # noqa: E402
from bench_timing import relative_error  # noqa: E402

N = 256  # the matrix is N×N
TOLERANCE = 1e-4  # float32 matmul then softmax, against PyTorch's
PHASES = ("import", "device", "first result")

# The input, built the same way in every process: values in [-0.5, 0.5], no zeros needed.
_INPUT = f"(np.arange({N * N}, dtype=np.float32).reshape({N}, {N}) % 17 - 8) / 16"


def input_matrix() -> np.ndarray:
    """The input every sample builds."""
    return eval(_INPUT, {"np": np})  # our own constant expression, shared with the sample processes


_VKML_CHILD = f"""
import json, os, sys, time
started, cpu0 = time.perf_counter(), time.process_time()
import vkml
imported = time.perf_counter()
import numpy as np
device = vkml.best_device() if sys.argv[1] == "best" else vkml.device(sys.argv[1])
opened = time.perf_counter()
a = vkml.tensor({_INPUT}, device=device)
out = vkml.softmax(a @ a, dim=-1).numpy()
done = time.perf_counter()
times = os.times()
np.save(sys.argv[2], out)
from vkml.runtime.counters import counters
print(json.dumps({{"import": imported - started, "device": opened - imported, "first result": done - opened,
       "total": done - started, "cpu": time.process_time() - cpu0 + times.children_user + times.children_system,
       "kernels compiled": counters["kernels_compiled"], "templates lowered": counters["templates_lowered"]}}))
"""

_TORCH_CHILD = f"""
import json, os, sys, time
started, cpu0 = time.perf_counter(), time.process_time()
import torch
imported = time.perf_counter()
import numpy as np
device = torch.device(sys.argv[1])
torch.empty(1, device=device).cpu()  # the CUDA context
opened = time.perf_counter()
a = torch.from_numpy({_INPUT}).to(device)
out = torch.softmax(a @ a, dim=-1).cpu().numpy()
done = time.perf_counter()
times = os.times()
np.save(sys.argv[2], out)
print(json.dumps({{"import": imported - started, "device": opened - imported, "first result": done - opened,
       "total": done - started, "cpu": time.process_time() - cpu0 + times.children_user + times.children_system}}))
"""


def _environment(cache_dir: Path | None, cold: bool) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    if cache_dir is not None:
        env["VKML_CACHE_DIR"] = str(cache_dir)
    if cold:
        env["__GL_SHADER_DISK_CACHE"] = "0"  # NVIDIA's own shader cache
        env["MESA_SHADER_CACHE_DISABLE"] = "true"
    return env


def _sample(code: str, device: str, env: dict[str, str], scratch: Path) -> tuple[dict[str, float], np.ndarray]:
    """One new process running ``code``: its phase times and its result."""
    result_path = scratch / "result.npy"
    done = subprocess.run(
        [sys.executable, "-c", code, device, str(result_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the sample process failed:\n{done.stderr[-3000:]}")
    times = json.loads(done.stdout.strip().splitlines()[-1])
    return times, np.load(result_path)


def vkml_samples(device: str, repeats: int, cache: str) -> tuple[list[dict[str, float]], np.ndarray]:
    """vkml's samples alone: ``cache`` is ``"cold"`` or ``"warm"`` (tests/test_cold_start.py runs one of each)."""
    return _samples(_VKML_CHILD, device, repeats, cache)


def _samples(code: str, device: str, repeats: int, cache: str | None) -> tuple[list[dict[str, float]], np.ndarray]:
    """``repeats`` samples; ``cache``: ``"cold"`` (a new folder each), ``"warm"`` (one filled first) or None."""
    with tempfile.TemporaryDirectory(prefix="vkml-start-") as folder:
        scratch = Path(folder)
        warm_dir = scratch / "warm-cache"
        # Untimed: compiles the bytecode, and fills the warm folder.
        _sample(code, device, _environment(warm_dir, cold=False), scratch)
        samples, result = [], None
        for index in range(max(1, repeats)):
            if cache == "cold":
                cache_dir = scratch / f"cold-cache-{index}"
                times, result = _sample(code, device, _environment(cache_dir, cold=True), scratch)
                shutil.rmtree(cache_dir, ignore_errors=True)
            else:
                times, result = _sample(code, device, _environment(warm_dir, cold=False), scratch)
            samples.append(times)
    return samples, result


def _median(samples: list[dict[str, float]], key: str) -> float:
    return statistics.median(sample[key] for sample in samples)


def measure_start(vkml_device: str, torch_device: str, repeats: int) -> list[Row]:
    """The ``cold_start`` and ``warm_start`` rows: vkml in new processes against PyTorch in new processes."""
    theirs, expected = _samples(_TORCH_CHILD, torch_device, repeats, None)
    rows = []
    for name in ("cold", "warm"):
        ours, result = vkml_samples(vkml_device, repeats, name)
        error = relative_error(result, expected)
        after_import = [s["total"] - s["import"] for s in ours]
        peer_after_import = [s["total"] - s["import"] for s in theirs]
        rows.append(
            Row(
                f"{name}_start",
                f"import + softmax(a @ a), {N}×{N} float32",
                peer=f"new process ({torch_device})",
                clock="wall",
                vkml_min=min(s["total"] for s in ours),
                vkml_median=_median(ours, "total"),
                peer_min=min(s["total"] for s in theirs),
                peer_median=_median(theirs, "total"),
                rel_error=error,
                tolerance=TOLERANCE,
                samples=(len(ours), len(theirs)),
                status="ok" if error <= TOLERANCE else "mismatch",
                note=(
                    f"after import: vkml {statistics.median(after_import):.3f} s, PyTorch "
                    f"{statistics.median(peer_after_import):.3f} s; CPU time (with children): vkml "
                    f"{_median(ours, 'cpu'):.3f} s, PyTorch {_median(theirs, 'cpu'):.3f} s; kernels compiled: "
                    f"{_median(ours, 'kernels compiled'):g}, groups lowered: {_median(ours, 'templates lowered'):g}"
                ),
                phases={phase: _median(ours, phase) for phase in PHASES}
                | {f"PyTorch {phase}": _median(theirs, phase) for phase in PHASES},
            )
        )
    return rows


def measure_start_rows(ctx, repeats: int, budget_s: float) -> list[Row]:
    """bench.py's entry: both rows on its devices (``budget_s`` does not apply: each sample is a process)."""
    device = getattr(ctx.device, "name", str(ctx.device))
    return measure_start(device, str(ctx.torch_device), min(repeats, 5))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="best", help="vkml device (default: vkml.best_device())")
    parser.add_argument("--torch-device", help="PyTorch device (default: cuda if available, else cpu)")
    parser.add_argument("--repeats", type=int, default=3, help="samples of each kind (default 3)")
    parser.add_argument("--json", help="also write the rows as JSON to this path")
    args = parser.parse_args(argv)
    torch_device = args.torch_device
    if torch_device is None:
        import torch

        torch_device = "cuda" if torch.cuda.is_available() else "cpu"
    rows = measure_start(args.device, torch_device, args.repeats)
    print(results_table(rows))
    print()
    print(phases_table(rows))
    for row in rows:
        print(f"{row.workload}: {row.note}")
    if args.json:
        Path(args.json).write_text(json.dumps([row.__dict__ for row in rows], indent=1, default=str))
    return 0 if all(row.status == "ok" for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
