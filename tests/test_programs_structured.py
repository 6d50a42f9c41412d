"""Classic-ML and structured-model training programs (tests/programs/) run under vkml as under PyTorch, by
their import lines alone.

A BiLSTM-CRF tagger (bilstm_crf), skip-gram word2vec over sparse gradients (word2vec_skipgram), DLRM and
matrix-factorisation recommenders (dlrm_recsys), a hand-written GAT and PointNet (gat_pointnet), a neural
ODE, a Gaussian process and a Bayes-by-backprop layer (ode_gp_bayes), and capsule routing, a TabNet-style
sparsemax and a ConvLSTM (capsule_tabnet_convlstm); each docstring lists the idioms it checks. As in
tests/test_programs.py, each model is built under PyTorch, its initial state_dict loaded into the vkml
model, and both train on the same data with their random draws off; every number must agree to the
program's tolerance. The comparisons compile tens of kernels each on the CPU interpreter, so they run with
``make test-all`` (``-m stress``); ``make test`` checks two of the programs' hand-written functions (sparsemax
and GAT's segment softmax) with their gradients, and tests/test_sparse_grads.py the sparse gradients word2vec found missing.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_programs import _load, _numbers, program_tests, run_program

# name: (steps, rtol)
PROGRAMS = {
    "bilstm_crf": (3, 1e-4),
    "word2vec_skipgram": (3, 1e-4),
    "dlrm_recsys": (3, 1e-4),
    "gat_pointnet": (3, 1e-4),
    "ode_gp_bayes": (3, 1e-4),
    "capsule_tabnet_convlstm": (3, 1e-4),
}
# Other module constants a program is compared under, besides its defaults.
VARIANTS = {
    "word2vec_skipgram": [{"OPTIMIZER": "sgd"}],
    "dlrm_recsys": [{"MODEL": "mf"}],
    "gat_pointnet": [{"MODEL": "pointnet"}],
    "ode_gp_bayes": [{"SOLVER": "euler"}, {"MODEL": "gp"}, {"MODEL": "bayes"}],
    "capsule_tabnet_convlstm": [{"ROUTING": "einsum"}, {"MODEL": "tabnet"}, {"MODEL": "convlstm"}],
}


def _run(name, backend, monkeypatch, initial=None, constants=None, deterministic=True):
    return run_program(name, backend, monkeypatch, PROGRAMS[name][0], initial, constants, deterministic)


test_program_matches_pytorch, test_program_variant_matches_pytorch = program_tests(PROGRAMS, VARIANTS)


@pytest.mark.stress
@pytest.mark.parametrize(("name", "constants"), [("word2vec_skipgram", {}), ("gat_pointnet", {})])
def test_program_same_bits_on_vulkan(name, constants, monkeypatch, gpu):
    """On a Vulkan device each number is the CPU backend's, bit for bit (and so PyTorch's, as above):
    the sparse gradients and SparseAdam's row updates, the segment softmax's scatter_reduce."""
    initial, expected = _run(name, "torch", monkeypatch, constants=constants)
    _, on_cpu = _run(name, "vkml", monkeypatch, initial, constants)
    _, on_vulkan = _run(name, "vkml", monkeypatch, initial, dict(constants, DEVICE=str(gpu)))
    assert _numbers(on_vulkan) == _numbers(on_cpu)
    np.testing.assert_allclose(_numbers(on_vulkan), _numbers(expected), rtol=PROGRAMS[name][1], atol=1e-6)


@pytest.mark.stress
@pytest.mark.parametrize(
    ("name", "constants"),
    [
        ("word2vec_skipgram", {"SAMPLER": True}),
        ("bilstm_crf", {"FIXED_NOISE": False}),
        ("ode_gp_bayes", {"MODEL": "bayes", "FIXED_NOISE": False}),
    ],
    ids=lambda v: str(v),
)
def test_program_runs_as_written(name, constants, monkeypatch):
    """With its random draws live (torch.multinomial negatives, randn hidden states, randn_like weight
    noise from vkml's generator) each program trains to finite numbers."""
    program = _load(name, "vkml", monkeypatch, deterministic=False, constants=constants)
    result = program.train(program.build(), steps=2)
    assert len(result["losses"]) == 2 and all(math.isfinite(x) for x in result["losses"])
    if name == "word2vec_skipgram":
        assert all(result["neg_in_range"]) and result["grad_is_sparse"]


def _functions(backend, monkeypatch):
    """Two of the programs' hand-written functions on fixed inputs, values and gradients, for ``make test``:
    TabNet's sparsemax (sort, cumsum, gather, clamp) and GAT's segment softmax (scatter_reduce "amax"
    without self, scatter_add, index_add_)."""
    rng = np.random.default_rng(5)
    caps = _load("capsule_tabnet_convlstm", backend, monkeypatch)
    torch = caps.torch
    z = torch.tensor(rng.standard_normal((4, 6)).astype(np.float32), requires_grad=True)
    mask = caps.sparsemax(z * 2, dim=-1)
    gat = _load("gat_pointnet", backend, monkeypatch)
    layer = gat.GATLayer(6, 2, heads=2, dropout=0.0)
    for p in layer.parameters():
        p.data = torch.tensor((0.3 * rng.standard_normal(tuple(p.shape))).astype(np.float32))
    edges = torch.tensor([[0, 1, 2, 3, 3, 0], [1, 1, 0, 0, 2, 3]])  # node 1 has two in-edges, node 3 one
    attended = layer(z, edges)
    ((mask * z).sum() + (attended * attended).sum()).backward()
    outputs = [mask, attended, z.grad] + [p.grad for p in layer.parameters()]
    return [o.detach().numpy().ravel().tolist() for o in outputs]


def test_program_functions_match_pytorch(monkeypatch):
    expected = _functions("torch", monkeypatch)
    got = _functions("vkml", monkeypatch)
    np.testing.assert_allclose(_numbers(got), _numbers(expected), rtol=1e-5, atol=1e-6)
