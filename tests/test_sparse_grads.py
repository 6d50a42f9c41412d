"""Sparse gradients, as PyTorch gives them: ``nn.Embedding(sparse=True)``'s weight gradient is a sparse COO
tensor, and ``optim.SparseAdam`` and ``optim.SGD`` step on it (word2vec's and recommenders' idiom;
tests/programs/word2vec_skipgram.py). Each result is compared with PyTorch's."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vkml

# the recorded ops whose gradient rules these tests compare with PyTorch's (tests/test_autograd.py)
GRAD_TESTED = {"embedding"}  # Embedding(sparse=True)'s rule
IDS = [[1, 3, 3], [0, 3, 5]]  # a repeated id, and the padding id 5 in the padding case


def _pair(padding_idx=None, num=6, dim=3):
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((num, dim)).astype(np.float32)
    ours = vkml.nn.Embedding(num, dim, sparse=True, padding_idx=padding_idx)
    theirs = torch.nn.Embedding(num, dim, sparse=True, padding_idx=padding_idx)
    ours.weight.data = vkml.tensor(weight)
    theirs.weight.data = torch.tensor(weight)
    return ours, theirs


def _loss(module, lib, ids, scale):
    out = module(lib.tensor(ids))
    return (out * lib.tensor(scale)).sum()


@pytest.mark.parametrize("padding_idx", [None, 5])
def test_embedding_sparse_grad_is_pytorchs_coo(padding_idx):
    ours, theirs = _pair(padding_idx)
    scale = np.linspace(-1, 2, 18, dtype=np.float32).reshape(2, 3, 3)
    for module, lib in ((ours, vkml), (theirs, torch)):
        _loss(module, lib, IDS, scale).backward()
        _loss(module, lib, [[2, 3, 1]], scale[:1]).backward()  # a second pass adds sparse to sparse
    mine, ref = ours.weight.grad, theirs.weight.grad
    assert ours(vkml.tensor([1])).grad_fn.name() == theirs(torch.tensor([1])).grad_fn.name() == "EmbeddingBackward0"
    assert mine.is_sparse and mine.layout == vkml.sparse_coo and not mine.is_coalesced()
    assert mine._nnz() == ref._nnz()
    mine, ref = mine.coalesce(), ref.coalesce()
    np.testing.assert_array_equal(mine.indices().numpy(), ref.indices().numpy())
    np.testing.assert_allclose(mine.values().numpy(), ref.values().numpy(), rtol=1e-6)
    np.testing.assert_allclose(ours.weight.grad.to_dense().numpy(), theirs.weight.grad.to_dense().numpy(), rtol=1e-6)


def test_sparse_grad_meets_a_dense_one_as_pytorchs():
    """A weight used by a sparse lookup and by a dense op gets a dense gradient, in either order."""
    for first_dense in (True, False):
        grads = []
        for lib in (vkml, torch):
            w = lib.nn.Parameter(lib.ones(4, 2))
            dense = (w * lib.tensor([[1.0, 2.0]])).sum()
            looked = lib.nn.functional.embedding(lib.tensor([0, 2, 2]), w, sparse=True).sum()
            (dense + looked if first_dense else looked + dense).backward()
            assert not w.grad.is_sparse
            grads.append(w.grad.numpy())
        np.testing.assert_array_equal(*grads)


@pytest.mark.parametrize("which", ["sgd", "sgd_momentum", "sparse_adam", "adagrad"])
def test_optimizers_step_on_sparse_grads_as_pytorch(which):
    ours, theirs = _pair()
    make = {
        "sgd": lambda lib, m: lib.optim.SGD(m.parameters(), lr=0.5),
        "sgd_momentum": lambda lib, m: lib.optim.SGD(m.parameters(), lr=0.5, momentum=0.9),
        "sparse_adam": lambda lib, m: lib.optim.SparseAdam(list(m.parameters()), lr=0.1),
        "adagrad": lambda lib, m: lib.optim.Adagrad(m.parameters(), lr=0.1, lr_decay=0.01),
    }[which]
    mine, ref = make(vkml, ours), make(torch, theirs)
    scale = np.linspace(-1, 2, 18, dtype=np.float32).reshape(2, 3, 3)
    for step in range(3):
        ids = [[(i + step) % 5 for i in row] for row in IDS]
        for opt, module, lib in ((mine, ours, vkml), (ref, theirs, torch)):
            opt.zero_grad()
            _loss(module, lib, ids, scale).backward()
            opt.step()
        np.testing.assert_allclose(ours.weight.numpy(), theirs.weight.detach().numpy(), rtol=1e-6, atol=1e-7)
    for key in {"sparse_adam": ["exp_avg", "exp_avg_sq"], "adagrad": ["sum"]}.get(which, []):
        # dense state, changed only in the rows the gradients named, as PyTorch's
        state = mine.state[ours.weight][key]
        assert not state.is_sparse
        np.testing.assert_allclose(state.numpy(), ref.state[theirs.weight][key].numpy(), rtol=1e-6, atol=1e-8)


def test_sparse_adam_on_a_gradient_of_two_sparse_dims():
    """A sparse gradient over two sparse dims (assigned by hand): the rows are its row-major positions."""
    rng = np.random.default_rng(3)
    start = rng.standard_normal((3, 4, 2)).astype(np.float32)
    ids, values = [[0, 2, 0], [1, 3, 1]], rng.standard_normal((3, 2)).astype(np.float32)
    results = []
    for lib in (vkml, torch):
        p = lib.nn.Parameter(lib.tensor(start))
        opt = lib.optim.SparseAdam([p], lr=0.1)
        for _ in range(2):
            p.grad = lib.sparse_coo_tensor(lib.tensor(ids), lib.tensor(values), (3, 4, 2))
            opt.step()
        results.append(p.detach().numpy())
    np.testing.assert_allclose(*results, rtol=1e-6)


def test_dense_plus_sparse_adds_each_entry_in_order():
    """``p.add_(sparse, alpha=...)``, ``p + s`` and ``p - s`` with a Parameter on the left: dense results,
    duplicates added one at a time from the dense value (PyTorch's CPU loop), bit for bit."""
    rng = np.random.default_rng(1)
    base = rng.standard_normal((4, 3)).astype(np.float32)
    values = rng.standard_normal((5, 3)).astype(np.float32) * 1e-3
    ids = [[2, 0, 2, 2, 3]]
    results = []
    for lib in (vkml, torch):
        s = lib.sparse_coo_tensor(lib.tensor(ids), lib.tensor(values), (4, 3), check_invariants=True)
        p = lib.nn.Parameter(lib.tensor(base))
        with lib.no_grad():
            summed, diff = p + s, p - s
            p.add_(s, alpha=-0.3)
        results.append([summed.numpy(), diff.numpy(), p.detach().numpy()])
    for mine, ref in zip(*results):
        np.testing.assert_array_equal(mine, ref)


def test_sparse_grad_errors_are_pytorchs():
    ours, _ = _pair()
    ours(vkml.tensor([1, 2])).sum().backward()
    for opt, error, text in (
        (
            vkml.optim.Adam(ours.parameters()),
            RuntimeError,
            "Adam does not support sparse gradients, please consider SparseAdam instead",
        ),
        (vkml.optim.RMSprop(ours.parameters()), RuntimeError, "RMSprop does not support sparse gradients"),
        (
            vkml.optim.SGD(ours.parameters(), lr=0.1, weight_decay=0.1),
            RuntimeError,
            r"add\(sparse, dense\) is not supported",
        ),
        (
            vkml.optim.Adagrad(ours.parameters(), weight_decay=0.1),
            RuntimeError,
            "weight_decay option is not compatible with sparse gradients",
        ),
    ):
        before = ours.weight.numpy().copy()
        with pytest.raises(error, match=text):
            opt.step()
        np.testing.assert_array_equal(ours.weight.numpy(), before)  # the parameter is untouched
    dense = vkml.nn.Parameter(vkml.ones(3))
    (dense * 2).sum().backward()
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients, please consider Adam instead"):
        vkml.optim.SparseAdam([dense]).step()
    with pytest.raises(ValueError, match="Invalid learning rate"):
        vkml.optim.SparseAdam([dense], lr=-1.0)


@pytest.mark.parametrize(("mode", "padding_idx"), [("sum", None), ("mean", 2)])
def test_embedding_bag_sparse_grad_is_pytorchs(mode, padding_idx):
    """EmbeddingBag(sparse=True) (DLRM's tables): each id's row of the bag's gradient, scaled by its sample
    weight ('sum') or its bag's size ('mean'), padding ids left out."""
    rng = np.random.default_rng(2)
    weight = rng.standard_normal((5, 3)).astype(np.float32)
    ids, offsets = [1, 2, 1, 4, 0, 2], [0, 2, 5]
    psw = rng.uniform(0.5, 1.5, 6).astype(np.float32) if mode == "sum" else None
    scale = rng.standard_normal((3, 3)).astype(np.float32)
    grads = []
    for lib in (vkml, torch):
        bag = lib.nn.EmbeddingBag(5, 3, mode=mode, sparse=True, padding_idx=padding_idx)
        bag.weight.data = lib.tensor(weight)
        weights = None if psw is None else lib.tensor(psw)
        (bag(lib.tensor(ids), lib.tensor(offsets), per_sample_weights=weights) * lib.tensor(scale)).sum().backward()
        assert bag.weight.grad.is_sparse
        grads.append((bag.weight.grad._nnz(), bag.weight.grad.coalesce()))
    (n_mine, mine), (n_ref, ref) = grads
    assert n_mine == n_ref
    np.testing.assert_array_equal(mine.indices().numpy(), ref.indices().numpy())
    np.testing.assert_allclose(mine.values().numpy(), ref.values().numpy(), rtol=1e-6)


def test_zero_grad_keeping_a_sparse_grad_empties_it():
    """``zero_grad(set_to_none=False)`` zeroes a sparse gradient in place (nnz 0, PyTorch's sparse
    ``zero_``); the next backward adds its entries to it."""
    results = []
    for lib in (vkml, torch):
        emb = lib.nn.Embedding(4, 2, sparse=True)
        opt = lib.optim.SGD(emb.parameters(), lr=0.1)
        emb(lib.tensor([1, 2])).sum().backward()
        grad = emb.weight.grad
        opt.zero_grad(set_to_none=False)
        assert emb.weight.grad is grad and grad._nnz() == 0 and grad.is_sparse
        emb(lib.tensor([3, 3])).sum().backward()
        results.append(emb.weight.grad.to_dense().numpy())
    np.testing.assert_array_equal(*results)
