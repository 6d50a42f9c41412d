"""Seeing what vkml runs: ``VKML_DEBUG=1`` reports each realize's kernels, dispatches and times on stderr;
``vkml.profiler`` tabulates per-kernel device times as torch.profiler does; ``vkml.debug.dump_graph``
prints the lazy graph; ``python -m vkml.doctor`` reports the machine and smoke-tests each device."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import vkml
from vkml import debug, doctor

profile, record_function, ProfilerActivity = (
    vkml.profiler.profile,
    vkml.profiler.record_function,
    vkml.profiler.ProfilerActivity,
)

ROOT = Path(__file__).resolve().parent.parent
CPU = vkml.device("cpu")


@pytest.fixture(params=["cpu", "gpu"])
def dev(request, gpu):
    return CPU if request.param == "cpu" else gpu


def _work(device):
    """A realize of two kernels (a fused row softmax with its sum, then a total)."""
    x = vkml.tensor(np.linspace(-2, 2, 32, dtype=np.float32).reshape(4, 8), device=device)
    return (x.softmax(1) * 2).sum()


# ---------------------------------------------------------------------- VKML_DEBUG


_SUMMARY = (
    r"vkml: realize on {device}: (\d+) kernels, (\d+) dispatches, 1 submission, ([\d.]+ \w+) bound, ([\d.]+ \w+) up, "
    r"([\d.]+ \w+) down, [\d.]+ ms \w+, [\d.]+ ms wall, (planned|plan replayed), \d+ kernels compiled"
)
_KERNEL_LINE = r"^\s+\d+\s+[\d.]+ ms  (\S+)  grid \("


@pytest.mark.parametrize("level", [1, 2])
def test_vkml_debug_reports_each_realize_on_stderr(dev, monkeypatch, capsys, level):
    expected = _work(dev).item()
    monkeypatch.setenv("VKML_DEBUG", str(level))
    got = _work(dev).item()
    second = _work(dev).item()
    err = capsys.readouterr().err
    assert got == second == expected  # timing changes no result
    summaries = re.findall(_SUMMARY.format(device=dev.name), err)
    assert len(summaries) == 2 and summaries[1][5] == "plan replayed"
    kernels, dispatches = map(int, summaries[1][:2])
    bound, up, down = summaries[1][2:5]  # the first line counts the transfers since any earlier line
    # the softmax kernel binds x (4x8 float32: 128 B) and writes its row maxima and row sums (16 B
    # each); the total binds x, both and its result (4 B). Between the two realizes: x uploaded,
    # the first total downloaded.
    assert (bound, up, down) == (f"{(128 + 16 + 16) + (128 + 16 + 16 + 4)} B", "128 B", "4 B")
    names = [name for device, name, _, _ in list(debug.recent_kernels)[-kernels:] if device == dev.name]
    assert kernels == dispatches == len(names) == 2
    lines = re.findall(_KERNEL_LINE, err, flags=re.M)
    assert lines[-kernels:] == names if level == 2 else lines == []  # level 1: the summary alone


_LEVEL3 = """
import numpy as np, vkml
x = vkml.tensor(np.linspace(-2, 2, 32, dtype=np.float32).reshape(4, 8), device={device!r})
y = x.softmax(1) * 2
z = y.sum()
z.item()
"""


def test_vkml_debug_3_lists_each_kernels_ops_with_the_users_line(dev, tmp_path):
    script = tmp_path / "user_script.py"
    script.write_text(_LEVEL3.format(device=dev.name))
    env = {
        **os.environ,
        "VKML_DEBUG": "3",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    done = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    err = done.stderr
    assert len(re.findall(_SUMMARY.format(device=dev.name), err)) == 1
    kernels = re.findall(_KERNEL_LINE, err, flags=re.M)
    assert len(kernels) == 2
    # under each kernel line, its fused ops with the line of user_script.py that made each
    blocks = re.split(_KERNEL_LINE, err, flags=re.M)[2::2]
    ops = [re.findall(r"^\s+(\w+)\s+\([\d, ]*\) float32  at user_script\.py:(\d+)$", b, flags=re.M) for b in blocks]
    assert [name for name, _ in ops[0]] == ["shift_max", "view", "sub", "exp", "sum"]
    assert {line for _, line in ops[0]} == {"4"}  # all of softmax's first kernel: y = x.softmax(1) * 2
    assert ("mul", "4") in ops[1] and ("sum", "5") in ops[1]  # the * 2 on line 4 fused into z = y.sum()


def test_vkml_debug_off_prints_nothing(capsys, monkeypatch):
    monkeypatch.delenv("VKML_DEBUG", raising=False)
    _work(CPU).item()
    assert "vkml: realize" not in capsys.readouterr().err


# ---------------------------------------------------------------------- vkml.profiler


def test_profiler_records_every_kernel_with_its_time(dev):
    _work(dev).item()  # compile outside the profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
        for _ in range(3):
            with record_function("step"):
                _work(dev).item()
    assert debug.run_listeners == []  # the profile stopped listening
    kernels = [e for e in prof.events() if not e.is_user_annotation]
    names = sorted({name for device, name, _, _ in list(debug.recent_kernels)[-len(kernels) // 3 :]})
    assert sorted({e.name for e in kernels}) == names and len(kernels) == 3 * len(names)
    averages = {e.key: e for e in prof.key_averages()}
    assert averages["step"].count == 3 and all(averages[n].count == 3 for n in names)
    spent = "cpu_time_total" if dev is CPU else "device_time_total"
    assert all(getattr(e, spent) > 0 for e in kernels)
    step = averages["step"]
    if dev is CPU:  # the kernels' time is the range's CPU time, not its own
        assert step.self_cpu_time_total == pytest.approx(step.cpu_time_total - sum(e.cpu_time_total for e in kernels))
    else:
        assert step.device_time_total == pytest.approx(sum(e.device_time_total for e in kernels))
    table = prof.key_averages().table(sort_by="self_cuda_time_total" if dev is not CPU else "self_cpu_time_total")
    header = table.splitlines()[1]
    assert re.search(r"Name\s+Self CPU\s+CPU total\s+CPU time avg\s+Self Device\s+Self Device %", header)
    assert "# of Calls" in header and "Self CPU time total:" in table and "Self Device time total:" in table
    rows = [line.split()[0] for line in table.splitlines()[3:] if line and not line.startswith("-")]
    assert set(names) | {"step"} <= set(rows)
    by_shape = prof.key_averages(group_by_input_shape=True)
    assert all(e.input_shapes for e in by_shape if e.key != "step")


def test_profiler_activities_select_devices(gpu):
    _work(gpu).item()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        _work(gpu).item()
    assert prof.events() == []  # Vulkan kernels are CUDA activity
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        _work(gpu).item()
        _work(CPU).item()
    assert prof.events() and {e.device for e in prof.events()} == {gpu.name}


def test_profiler_chrome_trace_and_refusals(tmp_path):
    with profile() as prof:
        _work(CPU).item()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())["traceEvents"]
    assert [e["name"] for e in trace] == [e.name for e in prof.events()] and all(e["ph"] == "X" for e in trace)
    for option in ("profile_memory", "with_stack", "with_flops"):
        with pytest.raises(NotImplementedError, match=option):
            profile(**{option: True})
    with pytest.raises(ValueError, match="unknown sort_by"):
        prof.key_averages().table(sort_by="nonsense")
    with pytest.raises(RuntimeError, match="record_shapes"):
        prof.key_averages(group_by_input_shape=True)


# ---------------------------------------------------------------------- dump_graph


def test_dump_graph_text_and_dot(tmp_path):
    a = vkml.tensor([1.0, 2.0])
    b = a.exp()
    text = vkml.debug.dump_graph(b + b)
    lines = text.splitlines()
    assert lines[0].startswith("%0 elementwise (2,) float32 cpu") and "'add'" in lines[0]
    assert "'exp'" in lines[1] and lines[2].startswith("    %2 buffer (2,) float32 cpu")
    assert lines[3] == "  %1 (above)"  # a node used twice is printed once
    dot = vkml.debug.dump_graph(b + b, format="dot", file=tmp_path / "g.dot")
    assert dot.startswith("digraph vkml {") and dot.count("->") == 3 and dot.count("[label=") == 3
    assert (tmp_path / "g.dot").read_text().strip() == dot
    b.realize()
    assert vkml.debug.dump_graph(b).startswith("%0 buffer (2,) float32 cpu")
    with pytest.raises(ValueError, match="format"):
        vkml.debug.dump_graph(b, format="svg")


# ---------------------------------------------------------------------- doctor


def test_doctor_reports_and_smoke_tests_every_device(gpu):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(
        [sys.executable, "-m", "vkml.doctor"], env=env, capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    report = vkml.vulkan_device_reports()[gpu.index]
    for needle in (
        f"numpy {np.__version__}",
        "Vulkan loader: found",
        f"vulkan:{gpu.index}: {report['name']} ({report['device_type']})",
        "spirv-as: ",
        "spirv-val: ",
        "kernel cache: ",
        f'"cuda" names {gpu.name}',
        "smoke test on cpu: ok",
        f"smoke test on {gpu.name}: ok",
        "all devices computed correctly",
    ):
        assert needle in out, needle


def test_doctor_fails_when_a_device_computes_wrong(monkeypatch, capsys):
    monkeypatch.setattr(doctor, "smoke_test", lambda device: (device.kind != "cpu", "FAILED: made up"))
    assert doctor.main() == 1
    out = capsys.readouterr().out
    assert "smoke test on cpu: FAILED: made up" in out and "SOME DEVICES FAILED" in out
