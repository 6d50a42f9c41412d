"""pytorch/examples programs (tests/programs/: vae, dcgan, time_sequence_prediction,
reinforcement_learning, siamese_network, mnist_rnn) run under vkml as under PyTorch.

As in tests/test_programs.py, the model is built under PyTorch and its initial state_dict loaded
into the vkml model. These programs also draw random numbers while training (the VAE's
torch.randn_like, DCGAN's torch.randn noise, the policies' Categorical.sample): the two libraries'
generators differ, so for the comparison both libraries' draws come from one numpy generator
(patched in for the test, undone after it), and dropout is off and batches unshuffled. A second
test runs each program as written, live draws included, under vkml on the CPU and on Vulkan, and
asks for the same bits.

Both run with `make test-all` (`-m stress`): one step of each program compiles 40 to 90 kernels,
4 to 11 s of CPU on the interpreter each; the fixes they found have short tests of their own in
tests/test_examples_idioms.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_programs import _load, _numbers

STEPS = 2
PROGRAMS = ["vae", "dcgan", "time_sequence_prediction", "reinforcement_learning", "siamese_network", "mnist_rnn"]


def _numpy_draws(library, monkeypatch, seed=0):
    """Replace ``library``'s randn, randn_like and Categorical.sample with draws from one numpy generator."""
    rng = np.random.default_rng(seed)

    def randn(*size, dtype=None, device=None, **_):
        size = tuple(size[0]) if len(size) == 1 and isinstance(size[0], tuple | list) else size
        values = rng.standard_normal(size).astype(np.float32)
        return library.tensor(values, dtype=dtype or library.float32, device=device)

    def randn_like(input, **_):
        return library.tensor(rng.standard_normal(tuple(input.shape)), dtype=input.dtype, device=input.device)

    def sample(self, sample_shape=()):
        assert sample_shape == ()
        u = library.tensor(rng.random(tuple(self.batch_shape)), dtype=self.probs.dtype, device=self.probs.device)
        below = self.probs.cumsum(-1) < u.unsqueeze(-1)  # inverse CDF: the first category whose CDF passes u
        return below.sum(-1).clamp(max=self.probs.shape[-1] - 1)

    monkeypatch.setattr(library, "randn", randn)
    monkeypatch.setattr(library, "randn_like", randn_like)
    monkeypatch.setattr(library.distributions.Categorical, "sample", sample)


def _deterministic(program, monkeypatch, use_cuda):
    for constant, value in {"DROPOUT": 0.0, "SHUFFLE": False, "USE_CUDA": use_cuda}.items():
        if hasattr(program, constant):
            monkeypatch.setattr(program, constant, value)


def _run(name, backend, monkeypatch, initial=None, use_cuda=False):
    program = _load(name, backend, monkeypatch)
    _deterministic(program, monkeypatch, use_cuda)
    _numpy_draws(program.torch, monkeypatch)
    model = program.build()
    if initial is None:
        initial = {key: value.detach().numpy().copy() for key, value in model.state_dict().items()}
    else:
        model.load_state_dict({key: program.torch.tensor(value) for key, value in initial.items()})
    return initial, program.train(model, steps=STEPS)


@pytest.mark.stress
@pytest.mark.parametrize("name", PROGRAMS)
def test_example_matches_pytorch(name, monkeypatch):
    initial, expected = _run(name, "torch", monkeypatch)
    _, got = _run(name, "vkml", monkeypatch, initial)
    assert sorted(got) == sorted(expected)
    assert len(got["losses"]) == STEPS and all(math.isfinite(x) for x in got["losses"])
    np.testing.assert_allclose(_numbers(got), _numbers(expected), rtol=1e-4, atol=1e-6, err_msg=name)


@pytest.mark.stress
@pytest.mark.parametrize("name", PROGRAMS)
def test_example_runs_as_written_with_the_same_bits_on_vulkan(name, monkeypatch, gpu):
    """Live dropout, shuffling and random draws from vkml's generator, seeded alike: the CPU and a
    Vulkan device (what ``torch.device("cuda")`` picks, by each program's USE_CUDA) agree bit for bit."""
    import vkml

    results = []
    for use_cuda in (False, True):
        program = _load(name, "vkml", monkeypatch)
        if hasattr(program, "USE_CUDA"):
            monkeypatch.setattr(program, "USE_CUDA", use_cuda)
        vkml.manual_seed(0)
        results.append(program.train(program.build(), steps=1))
    assert vkml.device("cuda") == gpu
    assert all(math.isfinite(x) for x in _numbers(results[0])), results[0]
    assert _numbers(results[1]) == _numbers(results[0]), name
