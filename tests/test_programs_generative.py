"""Generative and modern-vision programs (tests/programs/: wgan_gp, cyclegan, glow_flow, stylegan2_pieces,
convnext_swin, nerf_mlp) run under vkml as under PyTorch, by their import lines alone.

As in tests/test_programs.py, each model is built under PyTorch and its initial state_dict loaded into
the vkml model. These programs draw random numbers while training (interpolation weights, latent
noise, noise injection, stochastic depth, stratified ray samples): the two libraries' generators
differ, so for the comparison both libraries' ``rand``/``randn``/``rand_like``/``randn_like`` come from
one numpy generator (patched in for the test, undone after it). Python's ``random`` (CycleGAN's image
pool) is seeded by the program itself and is the same for both.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_programs import _load, _numbers

# name: (steps, rtol, atol). The WGAN's generator trains under Adam with beta1 = 0, whose first
# step is lr * g / (|g| + eps) whatever g's size: float rounding in a near-zero gradient entry moves
# its sampled pixels by up to a few 1e-6 (the losses themselves agree to 1e-7).
PROGRAMS = {
    "wgan_gp": (2, 1e-4, 1e-5),
    "cyclegan": (2, 1e-4, 1e-6),
    "glow_flow": (3, 1e-4, 1e-6),
    "stylegan2_pieces": (2, 1e-4, 1e-6),
    "convnext_swin": (3, 1e-4, 1e-6),
    "nerf_mlp": (3, 1e-4, 1e-6),
}
# Other module constants a program is compared under, besides its defaults.
VARIANTS = {"glow_flow": [{"LU": False}]}


def _size(size):
    return tuple(size[0]) if len(size) == 1 and isinstance(size[0], tuple | list) else tuple(size)


def _numpy_draws(library, monkeypatch, seed=0):
    """Replace ``library``'s rand, randn, rand_like and randn_like with draws from one numpy generator."""
    rng = np.random.default_rng(seed)

    def rand(*size, dtype=None, device=None, **_):
        return library.tensor(rng.random(_size(size)).astype(np.float32), dtype=dtype or library.float32, device=device)

    def randn(*size, dtype=None, device=None, **_):
        values = rng.standard_normal(_size(size)).astype(np.float32)
        return library.tensor(values, dtype=dtype or library.float32, device=device)

    def rand_like(input, **_):
        return library.tensor(rng.random(tuple(input.shape)), dtype=input.dtype, device=input.device)

    def randn_like(input, **_):
        return library.tensor(rng.standard_normal(tuple(input.shape)), dtype=input.dtype, device=input.device)

    for name, fn in {"rand": rand, "randn": randn, "rand_like": rand_like, "randn_like": randn_like}.items():
        monkeypatch.setattr(library, name, fn)


def _run(name, backend, monkeypatch, initial=None, constants=None):
    steps = PROGRAMS[name][0]
    program = _load(name, backend, monkeypatch, deterministic=False, constants=constants)
    _numpy_draws(program.torch, monkeypatch)
    model = program.build()
    if initial is None:
        initial = {key: value.detach().numpy().copy() for key, value in model.state_dict().items()}
    else:
        model.load_state_dict({key: program.torch.tensor(value) for key, value in initial.items()})
    return initial, program.train(model, steps=steps)


def _compare(name, monkeypatch, constants=None):
    steps, rtol, atol = PROGRAMS[name]
    initial, expected = _run(name, "torch", monkeypatch, constants=constants)
    _, got = _run(name, "vkml", monkeypatch, initial, constants)
    assert sorted(got) == sorted(expected)
    assert len(got["losses"]) == steps and all(math.isfinite(x) for x in got["losses"])
    np.testing.assert_allclose(_numbers(got), _numbers(expected), rtol=rtol, atol=atol, err_msg=name)
    return got


@pytest.mark.stress
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_program_matches_pytorch(name, monkeypatch):
    _compare(name, monkeypatch)


@pytest.mark.stress
@pytest.mark.parametrize(
    ("name", "constants"), [(name, c) for name, cs in VARIANTS.items() for c in cs], ids=lambda v: str(v)
)
def test_program_variant_matches_pytorch(name, constants, monkeypatch):
    _compare(name, monkeypatch, constants)
