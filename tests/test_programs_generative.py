"""Generative and modern-vision programs (tests/programs/: wgan_gp, cyclegan, glow_flow, stylegan2_pieces,
convnext_swin, nerf_mlp) run under vkml as under PyTorch, by their import lines alone.

As in tests/test_programs.py, each model is built under PyTorch and its initial state_dict loaded into
the vkml model. These programs draw random numbers while training (interpolation weights, latent
noise, noise injection, stochastic depth, stratified ray samples): the two libraries' generators
differ, so for the comparison both libraries' ``rand``/``randn``/``rand_like``/``randn_like`` come from
one numpy generator (patched in for the test, undone after it), and the draws stay live: DropPath,
the WGAN's interpolates and the NeRF's stratified samples run as written. Python's ``random``
(CycleGAN's image pool) is seeded by the program itself and is the same for both.

Each comparison takes 10 to 60 s of CPU on the interpreter, so they run with ``make test-all``
(``-m stress``), as does the check that glow_flow and nerf_mlp give the CPU's bits on Vulkan; NeRF's
rendering and sampling functions are compared in ``make test``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_programs import _load, _numbers, program_tests, run_program

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
    def numpy_draws(program):
        _numpy_draws(program.torch, monkeypatch)

    steps = PROGRAMS[name][0]
    return run_program(name, backend, monkeypatch, steps, initial, constants, deterministic=False, prepare=numpy_draws)


test_program_matches_pytorch, test_program_variant_matches_pytorch = program_tests(
    PROGRAMS,
    VARIANTS,
    deterministic=False,
    prepare=lambda program, monkeypatch: _numpy_draws(program.torch, monkeypatch),
)


@pytest.mark.stress
@pytest.mark.parametrize("name", ["glow_flow", "nerf_mlp"])
def test_program_same_bits_on_vulkan(name, monkeypatch, gpu):
    """On a Vulkan device each number is the CPU backend's, bit for bit (and so PyTorch's, as above):
    slogdet, the LU factors and lu_solve; searchsorted, cumprod, gather and sort."""
    initial, expected = _run(name, "torch", monkeypatch)
    _, on_cpu = _run(name, "vkml", monkeypatch, initial)
    _, on_vulkan = _run(name, "vkml", monkeypatch, initial, {"DEVICE": str(gpu)})
    assert _numbers(on_vulkan) == _numbers(on_cpu)
    _, rtol, atol = PROGRAMS[name]
    np.testing.assert_allclose(_numbers(on_vulkan), _numbers(expected), rtol=rtol, atol=atol)


def _rendering(backend, monkeypatch):
    """NeRF's volume rendering and hierarchical sampling (with the gradient of the rendered colour) on
    fixed rays: the short form of the comparison above, for ``make test``."""
    nerf = _load("nerf_mlp", backend, monkeypatch)
    torch = nerf.torch
    rng = np.random.default_rng(5)
    raw = torch.tensor(rng.standard_normal((3, 5, 4)).astype(np.float32), requires_grad=True)
    z_vals = torch.tensor(np.sort(rng.uniform(1, 3, (3, 5)), -1).astype(np.float32))
    rays_d = torch.tensor(rng.standard_normal((3, 3)).astype(np.float32))
    rgb_map, disp_map, acc_map, weights, depth_map = nerf.raw2outputs(raw, z_vals, rays_d)
    (rgb_map.sum() + depth_map.sum()).backward()
    mids = 0.5 * (z_vals[..., 1:] + z_vals[..., :-1])
    samples = nerf.sample_pdf(mids, weights[..., 1:-1].detach(), 4, det=True)
    return [rgb_map.tolist(), disp_map.tolist(), acc_map.tolist(), raw.grad.flatten().tolist(), samples.tolist()]


def test_volume_rendering_matches_pytorch(monkeypatch):
    expected = _rendering("torch", monkeypatch)
    got = _rendering("vkml", monkeypatch)
    np.testing.assert_allclose(_numbers(got), _numbers(expected), rtol=1e-5, atol=1e-6)


@pytest.mark.stress
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_program_runs_as_written(name, monkeypatch):
    """With vkml's own generator drawing (no numpy patch), each program trains to finite numbers."""
    program = _load(name, "vkml", monkeypatch, deterministic=False)
    result = program.train(program.build(), steps=1)
    assert len(result["losses"]) == 1
    assert all(math.isfinite(x) for x in _numbers(result))
