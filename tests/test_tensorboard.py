"""``vkml.utils.tensorboard.SummaryWriter`` against ``torch.utils.tensorboard.SummaryWriter``: the same calls write
the same event files (every event but its wall time, folder by folder), read back with tensorboard's loader."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

import vkml

# an optional dependency of vkml (pyproject's tensorboard extra); `make test` installs it, so CI runs these
pytest.importorskip("tensorboard", reason="the optional tensorboard package is not installed")


def _write(m, writer_class, log_dir):
    rng = np.random.default_rng(0)
    values = rng.standard_normal((50, 4)).astype(np.float32)
    image = rng.random((3, 6, 5)).astype(np.float32)
    batch = (rng.random((3, 1, 4, 4)) * 255).astype(np.uint8)
    with writer_class(log_dir, purge_step=2) as writer:
        for step in range(3):
            writer.add_scalar("loss/train", m.tensor(0.5 / (step + 1)), step)
            writer.add_scalar("lr", 0.1 * step, global_step=step, walltime=100.0 + step)
            writer.add_scalar("acc", m.tensor([0.25 * step]), step, new_style=True)
            writer.add_scalars("run", {"a": step, "b": m.tensor(2.0 * step)}, step, walltime=7.0)
        writer.add_histogram("weights", m.tensor(values), 1)
        writer.add_histogram("weights/numpy_bins", values, 2, bins="auto", max_bins=5)
        writer.add_histogram_raw("raw", 0.0, 3.0, 4, 6.0, 14.0, [1.0, 2.0, 3.0], [1, 1, 2], global_step=3)
        writer.add_image("image/chw", m.tensor(image), 0)
        writer.add_image("image/hwc", m.tensor(image).permute(1, 2, 0), 0, dataformats="HWC")
        writer.add_image("image/hw", m.tensor(image[0]), 0, dataformats="HW")
        writer.add_images("images", m.tensor(batch), 0)
        writer.add_text("notes", "first run: ok", 0)
        writer.add_hparams({"lr": 0.1, "bs": 32, "opt": "adam", "wd": None}, {"hparam/acc": 0.5}, run_name="hp")


def _events(log_dir) -> dict:
    """Each folder's events (wall times cleared, files in name order), keyed by the folder below ``log_dir``."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    found = {}
    for folder, _, files in sorted(os.walk(log_dir)):
        events = []
        for name in sorted(f for f in files if f.startswith("events.out.tfevents")):
            for event in EventFileLoader(os.path.join(folder, name)).Load():
                event.wall_time = 0
                events.append(event.SerializeToString())
        if events:
            found[os.path.relpath(folder, log_dir)] = events
    return found


def test_the_same_calls_write_pytorchs_events(tmp_path):
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    from vkml.utils.tensorboard import SummaryWriter

    _write(torch, TorchWriter, tmp_path / "torch")
    _write(vkml, SummaryWriter, tmp_path / "vkml")
    want, got = _events(tmp_path / "torch"), _events(tmp_path / "vkml")
    assert sorted(got) == sorted(want) == [".", "hp", "run_a", "run_b"]
    for folder in want:
        assert len(got[folder]) == len(want[folder]), folder
        for i, (g, w) in enumerate(zip(got[folder], want[folder])):
            assert g == w, (folder, i)


def test_errors_and_unsupported_methods_raise(tmp_path):
    from vkml.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(tmp_path)
    with pytest.raises(AssertionError, match="one element"):
        writer.add_scalar("x", vkml.ones(2), 0)
    with pytest.raises(AssertionError, match="size of input tensor and input format are different"):
        writer.add_image("x", vkml.ones(2, 2), 0)
    with pytest.raises(TypeError, match="hparam_dict and metric_dict should be dictionary"):
        writer.add_hparams([], {})
    with pytest.raises(NotImplementedError, match="add_graph"):
        writer.add_graph(vkml.nn.Linear(2, 2), vkml.ones(1, 2))
    writer.close()
    writer.close()  # a second close is allowed, as PyTorch's
    assert writer.get_logdir() == tmp_path
