"""The programs in examples/ run as a user runs them (a short form), on the CPU backend and on Vulkan."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import types
from pathlib import Path

import numpy as np

import vkml

ROOT = Path(__file__).resolve().parent.parent


def _run(script: str, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / script), *args], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_modules_and_buffers(gpu):
    on_cpu = _run("modules_and_buffers.py", "--steps", "4")
    first, last = map(float, re.search(r"loss: (\S+) -> (\S+)", on_cpu).groups())
    assert last < first
    assert "restored model agrees: True" in on_cpu and "steps: 4 |" in on_cpu
    assert "(0-1): 2 x Residual(" in on_cpu and "saved: mean, std, stem.weight" in on_cpu
    # The same bits on Vulkan: every printed number is the same.
    assert _run("modules_and_buffers.py", "--steps", "4", "--device", gpu.name) == on_cpu


def _load_example(script: str) -> types.ModuleType:
    module = types.ModuleType(script.removesuffix(".py"))
    path = ROOT / "examples" / script
    exec(compile(path.read_text(), str(path), "exec"), module.__dict__)
    return module


def test_cnn_classifier(gpu, tmp_path, capsys):
    short = ("--steps", "6", "--batch", "64", "--synthetic", "--no-progress")
    whole = tmp_path / "whole.ckpt"
    on_cpu = _run("cnn_classifier.py", *short, "--checkpoint", str(whole))
    first, last = map(float, re.search(r"loss: (\S+) -> (\S+)", on_cpu).groups())
    assert last < first
    assert "batches tracked: 6 |" in on_cpu and "(0): Conv2d(1, 8, kernel_size=(3, 3)" in on_cpu
    # The same bits on Vulkan: every printed loss is the same.
    assert _run("cnn_classifier.py", *short, "--device", gpu.name).replace(f"checkpoint: {whole} at step 6\n", "") == (
        on_cpu.replace(f"checkpoint: {whole} at step 6\n", "")
    )
    # Stopped after 3 steps (mid-epoch: 4 batches an epoch) and resumed: the run's bits, BatchNorm's
    # running statistics and the momentum buffers included, and the same printed losses.
    cnn, stopped = _load_example("cnn_classifier.py"), tmp_path / "stopped.ckpt"
    run = {"steps": 6, "device": "cpu", "batch": 64, "synthetic": True, "progress": False, "checkpoint": str(stopped)}
    cnn.main(**run, stop_after=3)
    cnn.main(**run, resume=True)
    resumed = capsys.readouterr().out
    step_lines = [line for line in on_cpu.splitlines() if line.startswith("step ")]
    assert [line for line in resumed.splitlines() if line.startswith("step ")] == step_lines
    a, b = vkml.load(whole), vkml.load(stopped)
    assert a["losses"] == b["losses"] and a["step"] == b["step"] == 6 and a["scheduler"] == b["scheduler"]
    for name, value in a["model"].items():
        assert value.numpy().tobytes() == b["model"][name].numpy().tobytes(), name
    for key, state in a["optimizer"]["state"].items():
        assert (
            state["momentum_buffer"].numpy().tobytes()
            == b["optimizer"]["state"][key]["momentum_buffer"].numpy().tobytes()
        )


def _numbers(text: str) -> list[float]:
    return [float(v) for v in re.findall(r"-?\d+\.\d+", text)]


def test_sgd_inplace(gpu):
    on_cpu = _run("sgd_inplace.py", "--steps", "6")
    first, last = map(float, re.search(r"loss: (\S+) -> (\S+)", on_cpu).groups())
    assert last < first
    # .data writes do not count in the version (PyTorch's): two in-place updates a step, 6 steps
    assert "w1 version 6, leaf True, grad zero True" in on_cpu
    assert _run("sgd_inplace.py", "--steps", "6", "--device", gpu.name) == on_cpu  # the same bits
    on_torch = _run("sgd_inplace.py", "--steps", "6", "--torch")
    assert on_torch.splitlines()[-2:-1] == on_cpu.splitlines()[-2:-1]  # versions, leaf, grads zeroed
    np.testing.assert_allclose(_numbers(on_cpu), _numbers(on_torch), rtol=1e-4, atol=1e-6)


def test_char_sampler(gpu):
    args = ("--steps", "8", "--samples", "3")
    on_cpu = _run("char_sampler.py", *args)
    first, last = map(float, re.search(r"loss: (\S+) -> (\S+)", on_cpu).groups())
    assert last < first
    assert _run("char_sampler.py", *args, "--device", gpu.name) == on_cpu  # the same bits, the same samples
    on_torch = _run("char_sampler.py", *args, "--torch")
    # counts, nll and losses as PyTorch's; the samples differ (another generator) but use the alphabet
    assert on_cpu.splitlines()[1] == on_torch.splitlines()[1]
    assert (
        re.search(r"bigram pairs (\d+), distinct (\d+)", on_cpu).groups()
        == re.search(r"bigram pairs (\d+), distinct (\d+)", on_torch).groups()
    )
    numbers = [line for line in on_cpu.splitlines() if not line.startswith("samples")]
    torch_numbers = [line for line in on_torch.splitlines() if not line.startswith("samples")]
    np.testing.assert_allclose(_numbers("\n".join(numbers)), _numbers("\n".join(torch_numbers)), rtol=1e-5)
    samples = on_cpu.splitlines()[-1].removeprefix("samples: ").split(" ")
    assert len(samples) == 3 and all(set(s) <= set("abcdefghijklmnopqrstuvwxyz") for s in samples)
