"""examples/gpt.py is a PyTorch program with only its import lines changed: run under real PyTorch (the
import lines swapped back) from the same weights and batches, its losses match vkml's on the CPU, and
lavapipe's losses are the CPU's bit for bit. Its main() trains from a text file through a DataLoader
with mixed precision, and a run stopped half way and resumed from its checkpoint ends with the bits
of the run that was not stopped."""

from __future__ import annotations

import re
import types
from pathlib import Path

import numpy as np
import torch

import vkml

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "gpt.py"
STEPS = 3
SMALL = {"block_size": 16, "n_layer": 1, "n_head": 4, "n_embd": 32, "dropout": 0.0}  # main()'s heads


def _load(library: str) -> types.ModuleType:
    """examples/gpt.py as a module whose import lines name ``library`` (``vkml`` as written, or ``torch``)."""
    source = EXAMPLE.read_text()
    import_lines = re.findall(r"^(?:import vkml|from vkml).*$", source, flags=re.M)
    assert len(import_lines) == 4, import_lines  # the only lines that differ from the PyTorch program
    if library == "torch":
        for line in import_lines:
            swapped = line.split("#")[0].replace("vkml as torch", "torch").replace("vkml", "torch").rstrip()
            source = source.replace(line, swapped)
        assert "vkml" not in source.replace("(vkml:", "").split('"""', 2)[2].replace("# vkml:", ""), (
            "vkml beyond imports"
        )
    module = types.ModuleType(f"gpt_{library}")
    exec(compile(source, str(EXAMPLE), "exec"), module.__dict__)
    return module


def _batches(vocab: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """One batch seen STEPS times: the loss on it must fall."""
    rng = np.random.default_rng(19)
    shape = (4, SMALL["block_size"])
    return [(rng.integers(0, vocab, shape), rng.integers(0, vocab, shape))] * STEPS


def _vkml_losses(gpt, device, state: dict, batches) -> list[float]:
    model = gpt.GPT(gpt.Config(len(state["vocab"]), **SMALL))
    model.load_state_dict({k: vkml.tensor(v) for k, v in state["weights"].items()})
    model = model.to(device)
    optimizer = gpt.make_optimizer(model)
    to = lambda a: vkml.from_numpy(a).to(device)  # noqa: E731
    return [gpt.train_step(model, optimizer, to(x), to(y)).item() for x, y in batches]


def test_gpt_matches_pytorch_and_lavapipe_matches_cpu(gpu):
    gpt_vk, gpt_pt = _load("vkml"), _load("torch")
    vocab = sorted(set(gpt_vk.TEXT))
    vkml.manual_seed(0)
    init = gpt_vk.GPT(gpt_vk.Config(len(vocab), **SMALL))
    state = {"vocab": vocab, "weights": {k: v.numpy() for k, v in init.state_dict().items()}}
    batches = _batches(len(vocab))

    reference = gpt_pt.GPT(gpt_pt.Config(len(vocab), **SMALL))
    reference.load_state_dict({k: torch.from_numpy(v) for k, v in state["weights"].items()})
    optimizer = gpt_pt.make_optimizer(reference)
    theirs = [
        gpt_pt.train_step(reference, optimizer, torch.from_numpy(x), torch.from_numpy(y)).item() for x, y in batches
    ]

    ours = _vkml_losses(gpt_vk, "cpu", state, batches)
    np.testing.assert_allclose(ours, theirs, rtol=2e-5)
    assert ours[-1] < ours[0]
    assert _vkml_losses(gpt_vk, gpu, state, batches) == ours  # the same bits on Vulkan


def test_gpt_main_runs_as_a_program_from_a_text_file(capsys, tmp_path):
    gpt = _load("vkml")
    text = tmp_path / "text.txt"
    text.write_text(gpt.TEXT[:400])
    loss = gpt.main(
        steps=1, device="cpu", batch_size=4, block_size=16, sample_tokens=1, n_layer=1, n_embd=32, data=str(text)
    )
    out = capsys.readouterr().out
    assert re.search(r"^device: cpu \| parameters: \d+ \| vocabulary: \d+$", out, flags=re.M)
    assert f"step 0: loss {loss:.4f}" in out and re.search(r"train \d+\.\d+ val \d+\.\d+", out)
    sample = re.search(r"^sample: (.*)$", out, flags=re.M).group(1)
    assert sample[0] == "T" and len(sample.replace(" / ", "\n")) == 2 and set(sample) <= set(gpt.TEXT) | {"/"}
    assert "loss plot" not in out  # no --plot asked


def test_gpt_mixed_precision_run_resumes_with_the_same_bits(capsys, tmp_path):
    """A 5-step run (the schedule's length) stopped after step 2 and resumed to step 4 ends with the
    bits of the run stopped at step 4 alone: weights, AdamW moments, GradScaler, schedule, RNG, losses."""
    gpt = _load("vkml")
    run = {"steps": 5, "device": "cpu", "batch_size": 4, "block_size": 16, "n_layer": 1, "n_embd": 32}
    run.update(amp=True, progress=False)
    whole, stopped = tmp_path / "whole.ckpt", tmp_path / "stopped.ckpt"
    gpt.main(**run, checkpoint=str(whole), stop_after=4)
    gpt.main(**run, checkpoint=str(stopped), stop_after=2)
    gpt.main(**run, checkpoint=str(stopped), stop_after=4, resume=True)
    out = capsys.readouterr().out
    assert f"resumed from {stopped} at step 2" in out and "stopped at step 4 of 5" in out

    a, b = vkml.load(whole), vkml.load(stopped)
    assert len(a["losses"]) == 4 and a["losses"][-1] < a["losses"][0]  # the loss falls
    assert a["losses"] == b["losses"] and a["step"] == b["step"] == 4
    assert a["scaler"] == b["scaler"] and a["scheduler"] == b["scheduler"]
    assert a["scaler"]["_growth_tracker"] > 0  # the scaled steps were taken, not skipped
    assert a["rng"].tolist() == b["rng"].tolist()
    for name, value in a["model"].items():  # every weight the same bits
        assert value.numpy().tobytes() == b["model"][name].numpy().tobytes(), name
    for key, state in a["optimizer"]["state"].items():
        for name, value in state.items():
            assert np.array_equal(np.asarray(value), np.asarray(b["optimizer"]["state"][key][name])), (key, name)
