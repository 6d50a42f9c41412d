"""Training-loop infrastructure programs (tests/programs/) run under vkml as under PyTorch, by their
import lines alone.

Stochastic weight averaging (swa_averaging), parametrized layers (parametrized_layers), magnitude
pruning (pruning_finetune), LoRA fine-tuning (lora_finetune), custom autograd Functions
(custom_autograd), schedulers with gradient accumulation and clipping (schedules_accumulation),
a data pipeline of datasets, samplers and loaders (data_pipeline) and torch.func's per-sample
gradients (per_sample_grads); each docstring lists the idioms it checks. As in
tests/test_programs.py, each model is built under PyTorch, its initial state_dict loaded into the
vkml model, and both train on the same data; every number must agree to 1e-4. Shuffles and sampler draws
come from different generators in the two libraries, so the comparison turns them off
(``SHUFFLE``) or gives both libraries one numpy generator's permutations and draws
(``_numpy_sampling``). swa_averaging and lora_finetune also run on lavapipe (``DEVICE``), with PyTorch's
numbers and the CPU backend's bits; one more test runs each program as written.

Each program compiles tens of kernels on the CPU interpreter (5 to 15 s on CI's 2 cores), so they run
with ``make test-all`` (``-m stress``); the gaps they found have short tests of their own
(tests/test_prune.py, tests/test_training_infra_gaps.py).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_programs import _load, _numbers

# name: (steps, rtol)
PROGRAMS = {
    "swa_averaging": (4, 1e-4),
    "parametrized_layers": (4, 1e-4),
    "pruning_finetune": (3, 1e-4),
    "lora_finetune": (4, 1e-4),
    "custom_autograd": (4, 1e-4),
    "schedules_accumulation": (3, 1e-4),
    "per_sample_grads": (3, 1e-4),
    "data_pipeline": (2, 1e-4),
}
SAMPLING = {"data_pipeline"}  # its splits and samplers draw from numpy for the comparison


def _numpy_sampling(library, monkeypatch, seed=0):
    """Give ``library``'s random_split, RandomSampler and WeightedRandomSampler one numpy generator's draws."""
    rng = np.random.default_rng(seed)
    data = library.utils.data

    def random_split(dataset, lengths, generator=None):
        n = len(dataset)
        if all(0 <= x <= 1 for x in lengths) and math.isclose(sum(lengths), 1):
            counts = [math.floor(n * x) for x in lengths]
            for i in range(n - sum(counts)):
                counts[i % len(counts)] += 1
            lengths = counts
        order, out, start = rng.permutation(n).tolist(), [], 0
        for length in lengths:
            out.append(data.Subset(dataset, order[start : start + length]))
            start += length
        return out

    def random_order(self):
        assert not self.replacement
        yield from rng.permutation(len(self.data_source)).tolist()

    def weighted(self):
        weights = np.asarray(self.weights.tolist() if hasattr(self.weights, "tolist") else self.weights, np.float64)
        yield from rng.choice(
            len(weights), size=self.num_samples, replace=self.replacement, p=weights / weights.sum()
        ).tolist()

    monkeypatch.setattr(data, "random_split", random_split)
    monkeypatch.setattr(data.RandomSampler, "__iter__", random_order)
    monkeypatch.setattr(data.WeightedRandomSampler, "__iter__", weighted)


def _run(name, backend, monkeypatch, initial=None, device=None, constants=None):
    steps, _ = PROGRAMS[name]
    constants = dict(constants or {}, **({} if device is None else {"DEVICE": device}))
    program = _load(name, backend, monkeypatch, constants=constants)
    if name in SAMPLING:
        _numpy_sampling(program.torch, monkeypatch)
    model = program.build()
    if initial is None:
        initial = {key: value.detach().numpy().copy() for key, value in model.state_dict().items()}
    else:
        model.load_state_dict({key: program.torch.tensor(value) for key, value in initial.items()})
    return initial, program.train(model, steps=steps)


def _compare(name, monkeypatch, device=None, constants=None):
    steps, rtol = PROGRAMS[name]
    initial, expected = _run(name, "torch", monkeypatch, constants=constants)
    _, got = _run(name, "vkml", monkeypatch, initial, device, constants)
    assert sorted(got) == sorted(expected)
    assert all(math.isfinite(x) for x in _numbers(got["losses"]))
    np.testing.assert_allclose(_numbers(got), _numbers(expected), rtol=rtol, atol=1e-6, err_msg=name)


@pytest.mark.stress
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_program_matches_pytorch(name, monkeypatch):
    _compare(name, monkeypatch)


@pytest.mark.stress
@pytest.mark.parametrize(
    "name, constants",
    [
        ("schedules_accumulation", {"SCHEDULE": "warm_restarts"}),
        ("schedules_accumulation", {"SCHEDULE": "sequential"}),
        ("schedules_accumulation", {"SCHEDULE": "chained"}),
    ],
    ids=lambda v: v if isinstance(v, str) else "-".join(map(str, v.values())),
)
def test_program_variant_matches_pytorch(name, constants, monkeypatch):
    _compare(name, monkeypatch, constants=constants)


@pytest.mark.stress
@pytest.mark.parametrize("name", ["swa_averaging", "lora_finetune"])
def test_program_matches_pytorch_on_vulkan(name, monkeypatch, gpu):
    """On a Vulkan device (``DEVICE = "cuda"``): PyTorch's numbers, and the CPU backend's bits."""
    import vkml

    assert vkml.device("cuda") == gpu
    initial, expected = _run(name, "torch", monkeypatch)
    _, on_cpu = _run(name, "vkml", monkeypatch, initial)
    _, on_vulkan = _run(name, "vkml", monkeypatch, initial, device="cuda")
    assert _numbers(on_vulkan) == _numbers(on_cpu)
    np.testing.assert_allclose(_numbers(on_vulkan), _numbers(expected), rtol=PROGRAMS[name][1], atol=1e-6)


@pytest.mark.stress
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_program_runs_as_written(name, monkeypatch):
    """Without the comparison's overrides: shuffled batches and vkml's own random draws."""
    program = _load(name, "vkml", monkeypatch, deterministic=False)
    result = program.train(program.build(), steps=PROGRAMS[name][0])
    assert all(math.isfinite(x) for x in _numbers(result)), result
