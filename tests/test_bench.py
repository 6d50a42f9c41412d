"""bench/bench.py keeps working: a --quick run of cheap workloads, and its helpers.

Nothing here asserts on time: only that the rows are there, compared, and correct.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import bench_report
import bench_special
import bench_timing
import numpy as np
import pytest

import bench  # bench/ is on pytest's pythonpath (pyproject.toml)
import vkml

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"


def test_quick_run_of_cheap_workloads_writes_compared_rows(tmp_path):
    out = tmp_path / "bench.json"
    run = subprocess.run(
        [sys.executable, str(BENCH / "bench.py"), "--quick", "--only", "add,graph100,compile,op:exp"]
        + ["--repeats", "2", "--torch-threads", "1", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(out.read_text())
    rows = {row["workload"]: row for row in result["rows"]}
    assert set(rows) == {"add", "graph100", "compile", "op:exp"}
    for name in ("add", "graph100", "op:exp"):
        row = rows[name]
        assert row["status"] == "ok", row
        assert row["ratio"] > 0 and row["vkml_median"] > 0 and row["peer_median"] > 0
        # The headline: wall time to the synchronised result on both sides.
        assert row["vkml_wall_median"] > 0 and row["peer_wall_median"] > 0
        assert row["speedup"] == pytest.approx(row["peer_wall_median"] / row["vkml_wall_median"])
        assert row["rel_error"] <= row["tolerance"]
    assert rows["add"]["rate_unit"] == "B/s" and rows["add"]["vkml_rate"] > 0
    assert set(rows["graph100"]["phases"]) >= {"build", "schedule + lower", "record + submit + wait", "download"}
    assert rows["compile"]["vkml_median"] > 0
    assert set(rows["compile"]["phases"]) == {"IR → validated SPIR-V", "vkCreateComputePipelines"}
    meta = result["meta"]
    assert meta["mode"] == "quick" and meta["commit"] and meta["date"]
    # The markdown table on stdout has a line per row and the geometric mean under it.
    assert "| workload | size | peer | vkml wall | peer wall | PyTorch/vkml (wall) |" in run.stdout
    assert sum(line.startswith("| op:exp |") for line in run.stdout.splitlines()) == 1
    summary = [line for line in run.stdout.splitlines() if line.startswith("geometric mean")]
    assert summary[0].startswith("geometric mean of PyTorch/vkml wall time"), summary
    assert any("vkml/peer device-clock time" in line for line in summary)


def test_select_takes_names_and_globs_and_refuses_unknown_names():
    assert bench.select("add,op:e*", None) == ["add", "op:exp"]
    assert "add" not in bench.select(None, "add")
    with pytest.raises(SystemExit, match="no-such-workload"):
        bench.select("add,no-such-workload", None)


def test_layer_rows_come_after_the_matmuls_and_select_alone():
    names = bench.select(None, None)
    assert names.index("conv2d_f32") > names.index("matmul_f16_8192")
    assert bench.select("conv2d_*,sdpa_*", None) == [
        "conv2d_f32",
        "conv2d_f16",
        "sdpa_f16_1024",
        "sdpa_f32_1024",
        "sdpa_f16_4096_causal",
    ]


class _Counting:
    """Stands in for a tensor and for the ``lib`` module: counts every op applied."""

    ops = 0

    def _op(self, *_):
        _Counting.ops += 1
        return _Counting()

    __add__ = __sub__ = __mul__ = _op
    maximum = minimum = _op


@pytest.mark.parametrize("ops", [1, 3, 99, 100, 101, 250, 1000])
def test_small_graph_has_exactly_the_asked_number_of_ops(ops):
    _Counting.ops = 0
    lib = _Counting()
    bench_special.small_graph(lib, _Counting(), _Counting(), ops)
    assert _Counting.ops == ops


def test_small_graph_values_stay_bounded():
    rng = np.random.default_rng(1)
    a, b = (rng.random(256, dtype=np.float32) * 2 - 1 for _ in range(2))
    out = bench_special.small_graph(np, a, b, 1000)
    assert np.all(np.abs(out) <= 62.5)  # ten chains of values within ±6.25


def test_relative_error_and_geometric_mean():
    assert bench_timing.relative_error(np.ones(3), np.ones(3)) == 0.0
    assert bench_timing.relative_error(np.ones(3), np.ones(4)) == float("inf")
    assert bench_timing.relative_error(np.array([1.0, 2.0]), np.array([1.0, 1.0])) == pytest.approx(1 / 2**0.5)
    assert bench_timing.geometric_mean([2.0, 8.0]) == pytest.approx(4.0)
    assert bench_timing.geometric_mean([0.0, float("nan")]) is None


def test_units_and_ratio_formatting():
    assert bench_report.seconds_text(0.00123) == "1.23 ms"
    assert bench_report.seconds_text(2.5e-6) == "2.5 µs"
    assert bench_report.rate_text(4.12e12, "B/s") == "4.12 TB/s"
    assert bench_report.Row("x", vkml_median=2.0, peer_median=4.0).ratio_text() == "0.50"
    assert bench_report.Row("x").ratio_text() == "—"
    wall_row = bench_report.Row("x", clock="wall", vkml_median=2.0, peer_median=4.0)
    assert wall_row.speedup_text() == "2.00"  # a wall-clock row's medians are its wall times
    assert bench_report.Row("x", vkml_median=2.0, peer_median=4.0).speedup is None  # device clock only


def test_side_by_side_wall_times_alternate_and_wait_for_both_sides():
    import torch

    events = []

    class Device:
        def synchronize(self):
            events.append("vkml sync")

    def build():
        events.append("vkml")
        return vkml.ones(3) * 2.0

    def peer():
        events.append("torch")
        return torch.ones(3)

    ours, theirs = bench_timing.time_wall_side_by_side(build, Device(), peer, torch.device("cpu"), 3, 10.0)
    assert len(ours.seconds) == len(theirs.seconds) == 3 and min(ours.seconds + theirs.seconds) > 0
    assert events == ["vkml", "vkml sync", "torch"] * 5  # two warm-ups, then three alternating repetitions


def test_tune_kernels_variants_are_listable_and_apply_to_the_h200_tuning():
    from dataclasses import replace

    import tune_kernels

    from vkml.codegen.features import DeviceFeatures
    from vkml.kernels import tuning as kernels_tuning

    base = kernels_tuning.tuning_from_features(DeviceFeatures.h200_like())
    for name, fields in tune_kernels.VARIANTS.items():
        assert "," not in name  # --variants splits on commas
        try:
            replace(base, **fields)  # a Tuning field (a TypeError otherwise)
        except ValueError:
            pass  # a combination the device's tuning rules out: the tool prints it as skipped
    with pytest.raises(SystemExit, match="unknown variants"):
        tune_kernels.main(["--variants", "default,no such variant"])


def test_spy_runs_sees_a_realize_that_replays_its_kept_recording(gpu):
    # A repeated realize submits its kept recording through VulkanDevice.run_again, not run: the phases of
    # bench.py's small graphs read the spy's calls (graph100 raised IndexError when it missed them).
    a = vkml.tensor(np.arange(8, dtype=np.float32), device=gpu).realize()
    for _ in range(3):
        (a * 2 + 1).realize()
    with bench_timing.spy_runs(gpu) as calls:
        (a * 2 + 1).realize()
    assert len(calls) == 1 and calls[0][2] >= 1 and calls[0][0] <= calls[0][1]
    assert "run" not in vars(gpu) and "run_again" not in vars(gpu)  # the class's methods are back
