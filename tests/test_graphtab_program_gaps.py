"""Gaps the graph, time-series, tabular and classical-ML programs (tests/test_programs_graphtab.py) and
their probes found: ``torch.pca_lowrank`` and ``torch.svd_lowrank`` (the randomized SVD of
``torch._lowrank``), ``torch.mv`` of a sparse COO matrix (PageRank's power iteration), LBFGS over an
``nn.Embedding(sparse=True)`` (PyTorch's takes the sparse gradient dense), and AdamW's refusal of a sparse
gradient in PyTorch's words.

Their random draw is ``randn(n, q)`` from the global generator, PyTorch's draw in vkml, so after the same
``manual_seed`` the factors are PyTorch's. A singular vector's sign is LAPACK's choice and differs
between LAPACK builds (PyTorch's MKL, numpy's OpenBLAS) for wide matrices, so vectors are compared with
their signs aligned column by column.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vkml


def _data(shape, seed=0):
    rng = np.random.default_rng(seed)
    *batch, m, n = shape
    low = rng.standard_normal((*batch, m, 2)) @ rng.standard_normal((*batch, 2, n))
    return (low + 0.05 * rng.standard_normal(shape) + 1.0).astype(np.float32)


def _aligned(got, expected):
    """``got`` with each column's sign flipped to agree with ``expected``'s (singular vectors' signs are free)."""
    signs = np.sign(np.sum(got * expected, axis=-2, keepdims=True))
    return got * np.where(signs == 0, 1, signs)


def _factors(lib, fn, x, **kwargs):
    lib.manual_seed(7)
    return [t.numpy() for t in getattr(lib, fn)(lib.tensor(x), **kwargs)]


@pytest.mark.parametrize(
    ("fn", "shape", "kwargs"),
    [
        ("pca_lowrank", (12, 5), {"q": 3}),
        ("pca_lowrank", (12, 5), {"q": 2, "center": False, "niter": 0}),
        ("pca_lowrank", (4, 9), {"q": 3}),
        ("pca_lowrank", (2, 8, 4), {"q": 2}),
        ("svd_lowrank", (5, 11), {"q": 3, "niter": 1}),
    ],
    ids=str,
)
def test_lowrank_factors_match_pytorch(fn, shape, kwargs):
    x = _data(shape)
    U, S, V = _factors(vkml, fn, x, **kwargs)
    eU, eS, eV = _factors(torch, fn, x, **kwargs)
    assert U.shape == eU.shape and S.shape == eS.shape and V.shape == eV.shape
    np.testing.assert_allclose(S, eS, rtol=1e-4, atol=1e-4)
    # the data are rank 2 plus noise: the first two directions are determined, the rest are noise's
    np.testing.assert_allclose(_aligned(U[..., :2], eU[..., :2]), eU[..., :2], atol=1e-3)
    np.testing.assert_allclose(_aligned(V[..., :2], eV[..., :2]), eV[..., :2], atol=1e-3)


def test_pca_lowrank_of_a_sparse_matrix_is_the_dense_one():
    x = _data((8, 5))
    x[x < 1.0] = 0
    dense = _factors(vkml, "pca_lowrank", x, q=2)
    vkml.manual_seed(7)
    sparse = vkml.pca_lowrank(vkml.tensor(x).to_sparse(), q=2)
    for got, expected in zip(sparse, dense, strict=True):
        np.testing.assert_allclose(got.numpy(), expected, atol=1e-5)


def test_pca_lowrank_refuses_what_pytorch_refuses():
    x = vkml.ones(4, 3)
    with pytest.raises(ValueError, match=r"q\(=4\) must be non-negative integer and not greater than min\(m, n\)=3"):
        vkml.pca_lowrank(x, q=4)
    with pytest.raises(ValueError, match=r"niter\(=-1\) must be non-negative integer"):
        vkml.pca_lowrank(x, niter=-1)


def _pagerank(lib, steps=3):
    """PageRank's power iteration over a sparse transition matrix, ``torch.mv`` and ``Tensor.mv``."""
    src = lib.tensor([0, 1, 2, 2, 3, 4, 4])
    dst = lib.tensor([1, 2, 0, 3, 4, 0, 2])
    out_degree = lib.bincount(src, minlength=5).float()
    transition = lib.sparse_coo_tensor(lib.stack([dst, src]), 1.0 / out_degree[src], (5, 5))
    rank = lib.full((5,), 0.2, requires_grad=True)
    r = rank
    for step in range(steps):
        r = 0.15 / 5 + 0.85 * (lib.mv(transition, r) if step % 2 else transition.mv(r))
    (r * lib.arange(5.0)).sum().backward()
    return r.detach().numpy(), rank.grad.numpy()


def test_mv_of_a_sparse_matrix_matches_pytorch():
    for got, expected in zip(_pagerank(vkml), _pagerank(torch), strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-6)
    matrix = vkml.sparse_coo_tensor(vkml.tensor([[0, 1], [1, 2]]), vkml.tensor([1.0, 2.0]), (2, 3))
    with pytest.raises(RuntimeError, match=r"mv: expected self.size\(-1\) == vec.size\(-1\)"):
        vkml.mv(matrix, vkml.ones(2))
    with pytest.raises(RuntimeError, match="mv: two tensor dim should be 2 and 1"):
        vkml.mv(matrix, vkml.ones(3, 1))


def _embedding_lbfgs(lib):
    """A few LBFGS steps with a strong-Wolfe search on a sparse-gradient embedding and a dense layer."""
    rng = np.random.default_rng(4)
    embedding = lib.nn.Embedding(5, 3, sparse=True)
    linear = lib.nn.Linear(3, 1)
    for p in (embedding.weight, linear.weight, linear.bias):
        p.data = lib.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32))
    optimizer = lib.optim.LBFGS([embedding.weight, *linear.parameters()], max_iter=4, line_search_fn="strong_wolfe")
    ids, target = lib.tensor([0, 2, 2, 4]), lib.tensor([[1.0], [-1.0], [-1.0], [0.5]])

    def closure():
        optimizer.zero_grad()
        loss = ((linear(embedding(ids)) - target) ** 2).mean()
        loss.backward()
        return loss

    losses = [float(optimizer.step(closure)) for _ in range(2)]
    return losses, embedding.weight.detach().numpy(), embedding.weight.grad.is_sparse


def test_lbfgs_takes_a_sparse_gradient_as_pytorch_does():
    got_losses, got_weight, got_sparse = _embedding_lbfgs(vkml)
    losses, weight, sparse = _embedding_lbfgs(torch)
    assert got_sparse and sparse
    np.testing.assert_allclose(got_losses, losses, rtol=1e-4)
    np.testing.assert_allclose(got_weight, weight, rtol=1e-4, atol=1e-5)


def test_adamw_refuses_a_sparse_gradient_in_pytorchs_words():
    embedding = vkml.nn.Embedding(4, 2, sparse=True)
    optimizer = vkml.optim.AdamW(embedding.parameters())
    embedding(vkml.tensor([1])).sum().backward()
    with pytest.raises(
        RuntimeError, match="^Adam does not support sparse gradients, please consider SparseAdam instead$"
    ):
        optimizer.step()
