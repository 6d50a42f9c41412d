"""Reinforcement-learning, self-supervised and other research programs (tests/programs/: ppo_gae,
sac_td3, clip_contrastive, mae_masking, dino_byol, siren_kan, pixelcnn_wavenet, mixer_efficientnet,
gumbel_vae) run under vkml as under PyTorch, by their import lines alone.

As in tests/test_programs.py, each model is built under PyTorch and its initial state_dict loaded into
the vkml model. Their random draws stay live and unpatched: after the same ``manual_seed`` vkml's
generator gives PyTorch's values for every draw these programs make (``Categorical.sample``,
``Normal.rsample``, ``torch.normal``, ``randn_like``, ``rand``, ``randperm``, ``gumbel_softmax``'s
exponentials), so the rollouts, replay samples, masks and views are the same in both libraries and
every number is compared as the program computes it. Dropout's mask is the exception (its
``DROPOUT`` is 0 for the comparison). A second test builds each model under vkml
itself and compares its initial weights with PyTorch's (orthogonal, xavier, truncated-normal and the
programs' own initialisations).

Each comparison compiles 50 to 150 kernels on the CPU interpreter (10 to 90 s on CI's 2 cores), so
they run with ``make test-all`` (``-m stress``), as does the check that PPO and SAC give the CPU's
bits on Vulkan; the initial weights, MAE's masking and a KAN grid
update are compared in ``make test``, and the gaps they found are tested in
tests/test_rlssl_program_gaps.py and tests/test_random.py.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_programs import _load, program_tests

TORCH_2_13 = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 13)

# name: (steps, rtol, atol)
PROGRAMS = {
    "ppo_gae": (2, 1e-4, 1e-6),
    "sac_td3": (3, 1e-4, 1e-6),
    "clip_contrastive": (3, 1e-4, 1e-6),
    "mae_masking": (3, 1e-4, 1e-6),
    # DINO records per-parameter gradient norms, one of them the 2-norm of thousands of squares
    "dino_byol": (3, 1e-4, 1e-5),
    "siren_kan": (3, 1e-4, 1e-6),
    "pixelcnn_wavenet": (3, 1e-4, 1e-6),
    "mixer_efficientnet": (3, 1e-4, 1e-6),
    "gumbel_vae": (3, 1e-4, 1e-6),
}
# Dropout masks are the one draw vkml does not take as PyTorch does (tests/programs/README.md): the
# comparison runs EfficientNet's head dropout at p = 0 (the layer stays in the model)
CONSTANTS = {"mixer_efficientnet": {"DROPOUT": 0.0}}
# Other module constants a program is compared under, besides its defaults, with their tolerances
# where those differ. BYOL's projector puts a biased Linear before BatchNorm1d: that bias's gradient
# is rounding noise (~1e-8), which Adam turns into lr-sized steps of either sign, so the target
# encoder's parameter sums agree only to about the learning rate.
VARIANTS = {
    "sac_td3": [({"ALGO": "td3"}, None), ({"ALGO": "ddpg"}, None)],
    "dino_byol": [({"METHOD": "byol"}, (3, 1e-4, 1e-3))],
    "siren_kan": [({"MODEL": "kan"}, None)],
    "pixelcnn_wavenet": [({"MODEL": "wavenet"}, None)],
    "mixer_efficientnet": [({"MODEL": "efficientnet"}, None)],
    "gumbel_vae": [({"GUMBEL": "by_hand"}, None)],
}


test_program_matches_pytorch, test_program_variant_matches_pytorch = program_tests(
    PROGRAMS, VARIANTS, CONSTANTS, deterministic=False
)


def _initial_state(name, backend, monkeypatch, constants=None):
    program = _load(name, backend, monkeypatch, deterministic=False, constants=constants)
    return {key: value.detach().numpy().copy() for key, value in program.build().state_dict().items()}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_program_builds_as_pytorch_does(name, monkeypatch):
    if name == "dino_byol" and not TORCH_2_13:
        pytest.skip("DINO's head draws trunc_normal_, whose stream PyTorch 2.13 changed (vkml follows 2.13)")
    """No state_dict copy: each ``build()`` seeds the generator, so its initial weights are PyTorch's."""
    expected = _initial_state(name, "torch", monkeypatch)
    got = _initial_state(name, "vkml", monkeypatch)
    assert sorted(got) == sorted(expected)
    for key in expected:
        np.testing.assert_allclose(got[key], expected[key], rtol=1e-5, atol=1e-6, err_msg=key)


def _masking_and_splines(backend, monkeypatch):
    """MAE's random masking and patchify (with the gradient through the kept patches), and a KAN
    layer's grid update (B-spline bases, ``lstsq``, ``torch.concatenate``): the programs' functions on
    fixed inputs, the short form of the comparisons above for ``make test``."""
    mae = _load("mae_masking", backend, monkeypatch, deterministic=False)
    torch = mae.torch
    torch.manual_seed(7)
    model = mae.MaskedAutoencoderViT.__new__(mae.MaskedAutoencoderViT)
    mae.nn.Module.__init__(model)
    model.patch_embed = mae.PatchEmbed(4, 2, 3, 4)
    imgs = torch.tensor(np.linspace(-1, 1, 2 * 3 * 4 * 4, dtype=np.float32).reshape(2, 3, 4, 4), requires_grad=True)
    patches = model.patchify(imgs)
    kept, mask, ids_restore = model.random_masking(patches, 0.5)
    (kept * torch.arange(12.0)).sum().backward()
    numbers = [kept.tolist(), mask.tolist(), ids_restore.tolist(), imgs.grad.flatten().tolist()]
    numbers.append(model.unpatchify(patches).flatten().tolist())

    kan = _load("siren_kan", backend, monkeypatch, deterministic=False)
    kan.torch.manual_seed(3)
    layer = kan.KANLinear(2, 2, grid_size=3, spline_order=2)
    x = kan.torch.tensor(np.linspace(-0.9, 0.8, 12, dtype=np.float32).reshape(6, 2) ** 3)
    layer.update_grid(x)
    numbers += [layer.grid.flatten().tolist(), layer.spline_weight.flatten().tolist(), layer(x).flatten().tolist()]
    return numbers


def test_masking_and_splines_match_pytorch(monkeypatch):
    from test_programs import _numbers

    expected = _masking_and_splines("torch", monkeypatch)
    got = _masking_and_splines("vkml", monkeypatch)
    np.testing.assert_allclose(_numbers(got), _numbers(expected), rtol=1e-4, atol=1e-5)


@pytest.mark.stress
@pytest.mark.parametrize(("name", "constants"), [("ppo_gae", {}), ("sac_td3", {"ALGO": "sac"})], ids=["ppo", "sac"])
def test_program_same_bits_on_vulkan(name, constants, monkeypatch, gpu):
    """On a Vulkan device each number is the CPU backend's, bit for bit (and so PyTorch's, as above):
    Categorical's exponential race computed on the device, ``randperm`` minibatches, ``rsample`` and
    ``tanh`` squashing, the polyak updates."""
    from test_programs import _numbers, run_program

    steps = PROGRAMS[name][0]
    initial, on_cpu = run_program(name, "vkml", monkeypatch, steps, constants=constants, deterministic=False)
    on_vulkan_constants = dict(constants, DEVICE=str(gpu))
    _, on_vulkan = run_program(name, "vkml", monkeypatch, steps, initial, on_vulkan_constants, deterministic=False)
    assert _numbers(on_vulkan) == _numbers(on_cpu)
