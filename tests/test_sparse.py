"""Sparse COO tensors (vkml/frontend/sparse_coo.py, docs/sparse.md) against PyTorch: construction,
coalescing, conversions, the sparse @ dense products and their gradients, sums, PyTorch's errors for
ops without a sparse form, and the same bits on lavapipe as on the CPU.

Each case is written once for both libraries (``m`` is ``vkml`` or ``torch``).
"""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest
import torch

import vkml

IND = [[0, 1, 1, 0, 2], [2, 0, 2, 2, 1]]  # (0, 2) twice: an uncoalesced tensor
VAL = [3.0, 4.0, 5.0, 1.0, -2.0]
_RNG = np.random.default_rng(3)
DENSE = _RNG.standard_normal((3, 2)).astype(np.float32)
LEFT = _RNG.standard_normal((4, 3)).astype(np.float32)
MAT = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, 0.0], [0.0, 0.0, -3.0]], dtype=np.float32)


def _s(m, dtype=None):
    return m.sparse_coo_tensor(m.tensor(IND), m.tensor(VAL), (3, 3), dtype=dtype)


# (id, function of the module): each result compared with PyTorch's (sparse: indices, values, size, nnz,
# is_coalesced; dense: values and dtype)
CASES = [
    ("construct", lambda m: _s(m)),
    ("construct_lists_int64", lambda m: m.sparse_coo_tensor(IND, [1, 2, 3, 4, 5])),
    ("construct_numpy_int32_dtype", lambda m: m.sparse_coo_tensor(np.array(IND, np.int32), m.ones(5), dtype=m.int64)),
    ("construct_dense_dims", lambda m: m.sparse_coo_tensor(IND, m.tensor(np.arange(10.0).reshape(5, 2)))),
    ("construct_empty", lambda m: m.sparse_coo_tensor(m.zeros(2, 0, dtype=m.int64), m.zeros(0), (2, 3))),
    ("to_dense", lambda m: _s(m).to_dense()),
    ("coalesce", lambda m: _s(m).coalesce()),
    ("coalesce_indices_values", lambda m: (_s(m).coalesce().indices(), _s(m).coalesce().values())),
    ("raw_indices_values", lambda m: (_s(m)._indices(), _s(m)._values())),
    ("to_sparse", lambda m: m.tensor(MAT).to_sparse()),
    ("to_sparse_dim1", lambda m: m.tensor(MAT).to_sparse(1)),
    ("diag_to_sparse", lambda m: m.diag(m.tensor([1.0, 0.0, 2.0])).to_sparse()),
    ("dense_to_dense", lambda m: m.tensor(MAT).to_dense()),
    ("t", lambda m: _s(m).t()),
    ("transpose", lambda m: _s(m).coalesce().transpose(0, 1)),
    ("mul_scalar", lambda m: _s(m) * 2.5),
    ("rmul_scalar", lambda m: 2 * _s(m).coalesce()),
    ("div_scalar", lambda m: _s(m) / 4),
    ("mul_dense", lambda m: _s(m) * m.tensor(MAT)),
    ("dense_mul_broadcast", lambda m: m.tensor(MAT[0]).double() * _s(m).coalesce()),
    ("neg", lambda m: -_s(m)),
    ("add_sparse", lambda m: _s(m) + _s(m).coalesce()),
    ("sub_sparse", lambda m: _s(m) - m.tensor(MAT).to_sparse()),
    ("dense_add_sparse", lambda m: m.eye(3) + _s(m)),
    ("dense_add_sparse_int", lambda m: m.eye(3) + m.sparse_coo_tensor(IND, m.ones(5), (3, 3), dtype=m.int64)),
    ("dense_sub_sparse", lambda m: m.tensor(MAT) - _s(m)),
    ("sparse_mm", lambda m: m.sparse.mm(_s(m), m.tensor(DENSE))),
    ("mm", lambda m: m.mm(_s(m), m.tensor(DENSE))),
    ("spmm", lambda m: m.spmm(_s(m), m.tensor(DENSE))),
    ("matmul_operator", lambda m: _s(m) @ m.tensor(DENSE)),
    ("matmul_vector", lambda m: m.matmul(_s(m), m.tensor(DENSE[:, 0]))),
    ("method_mm", lambda m: _s(m).mm(m.tensor(DENSE))),
    ("dense_matmul_sparse", lambda m: m.tensor(LEFT) @ _s(m)),
    ("dense_mm_sparse", lambda m: m.mm(m.tensor(LEFT), _s(m))),
    ("chain", lambda m: m.tensor(MAT).to_sparse() @ m.tensor(MAT) @ _s(m)),
    ("sparse_sparse", lambda m: m.sparse.mm(_s(m), m.tensor(MAT).to_sparse())),
    ("sparse_sparse_operator", lambda m: m.tensor(MAT).to_sparse() @ _s(m).t()),
    (
        "sparse_sparse_empty",
        lambda m: m.mm(_s(m), m.sparse_coo_tensor(m.zeros(2, 0, dtype=m.int64), m.zeros(0), (3, 2))),
    ),
    ("addmm", lambda m: m.addmm(m.ones(3, 2), _s(m), m.tensor(DENSE), beta=0.5, alpha=2)),
    ("sparse_addmm", lambda m: m.sparse.addmm(m.ones(3, 2), _s(m), m.tensor(DENSE))),
    ("sum_all", lambda m: m.sparse.sum(_s(m))),
    ("sum_dim1", lambda m: m.sparse.sum(_s(m), dim=1)),
    ("sum_dim0_method", lambda m: _s(m).sum(0)),
    ("sum_dims", lambda m: m.sparse.sum(_s(m), dim=(0, 1))),
    ("torch_sum", lambda m: (m.sum(_s(m)), m.sum(_s(m), dim=1), m.sum(_s(m), 0, dtype=m.float64))),
    ("sum_dense_dim", lambda m: m.sparse.sum(m.sparse_coo_tensor(IND, m.ones(5, 2)), dim=2)),
    ("softmax", lambda m: m.sparse.softmax(_s(m), 1)),
    ("log_softmax_dim0", lambda m: m.sparse.log_softmax(_s(m), 0)),
    ("to_double", lambda m: _s(m).double()),
    ("to_dtype", lambda m: _s(m).to(m.float64)),
    ("facts", lambda m: (_s(m).shape, _s(m).size(1), _s(m)._nnz(), _s(m).sparse_dim(), _s(m).dense_dim())),
    ("more_facts", lambda m: (_s(m).dim(), _s(m).numel(), len(_s(m)), _s(m).is_sparse, m.ones(1).is_sparse)),
    ("layouts", lambda m: (_s(m).layout is m.sparse_coo, m.ones(1).layout is m.strided, _s(m).is_coalesced())),
    (
        "dense_sparse_dims",
        lambda m: (m.ones(2, 3).sparse_dim(), m.ones(2, 3).dense_dim(), m.ones(2, 3).to_sparse_coo()),
    ),
    # pygcn's deprecated constructor: the values' dtype is kept whatever the type's name
    ("legacy_float", lambda m: m.sparse.FloatTensor(m.tensor(IND), m.tensor(VAL), m.Size([3, 3]))),
    ("legacy_int_values", lambda m: m.sparse.FloatTensor(m.tensor(IND), m.tensor([1, 2, 3, 4, 5]))),
    ("legacy_shape", lambda m: m.sparse.DoubleTensor(2, 3)),
]


def _plain(x):
    """A comparable description of a result of either library."""
    if isinstance(x, (tuple, list)):
        return [_plain(v) for v in x]
    if isinstance(x, (torch.Tensor, vkml.Tensor)):
        if x.is_sparse:
            return {
                "indices": _plain(x._indices()),
                "values": _plain(x._values()),
                "size": tuple(x.shape),
                "nnz": x._nnz(),
                "coalesced": x.is_coalesced(),
                "dtype": str(x.dtype).split(".")[-1],
            }
        return (np.asarray(x.detach().numpy()), str(x.dtype).split(".")[-1])
    if isinstance(x, (torch.Size, vkml.Size)):
        return tuple(x)
    return x


def _compare(got, want) -> None:
    if isinstance(want, list):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _compare(g, w)
    elif isinstance(want, dict):
        assert got.keys() == want.keys()
        for key in want:
            _compare(got[key], want[key])
    elif isinstance(want, tuple) and len(want) == 2 and isinstance(want[0], np.ndarray):
        assert got[1] == want[1]
        assert got[0].shape == want[0].shape
        np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-6)
    else:
        assert got == want


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_matches_pytorch(case):
    _, fn = case
    with warnings.catch_warnings():
        # PyTorch's warning that it checks no sparse invariants; both libraries' on the legacy constructors
        warnings.simplefilter("ignore")
        want = _plain(fn(torch))
        got = _plain(fn(vkml))
    _compare(got, want)


def _grads(m, op, leaf: bool):
    """(result, gradient of the values or the sparse leaf, gradient of the dense operand)."""
    values = m.tensor(VAL, requires_grad=not leaf)
    s = m.sparse_coo_tensor(m.tensor(IND), values if not leaf else values.detach(), (3, 3), requires_grad=leaf)
    d = m.tensor(DENSE, requires_grad=True)
    w = m.tensor(np.arange(6.0, dtype=np.float32).reshape(3, 2))
    out = op(m, s, d)
    (out * w).sum().backward()
    g = s.grad if leaf else values.grad
    return out, (g.coalesce().to_dense() if leaf else g), d.grad


@pytest.mark.parametrize(
    ("name", "op", "leaf"),
    [
        ("sparse_mm_values", lambda m, s, d: m.sparse.mm(s, d), False),
        ("sparse_mm_leaf", lambda m, s, d: m.sparse.mm(s, d), True),
        ("mm_values", lambda m, s, d: m.mm(s, d), False),
        ("spmm_values", lambda m, s, d: m.spmm(s, d), False),
        ("matmul_values_scaled", lambda m, s, d: (s * 2) @ d, False),
        ("dense_times_sparse", lambda m, s, d: (d.t() @ s).t(), False),
        ("to_dense", lambda m, s, d: s.to_dense()[:, :2] * d[:3], False),
        ("coalesce", lambda m, s, d: m.sparse.mm(s.coalesce(), d), False),
        ("dense_to_sparse", lambda m, s, d: m.sparse.mm(s, d.to_sparse().to_dense()), False),
        ("sum_rows", lambda m, s, d: m.sparse.sum(s, 1).to_dense()[:, None] * d, False),
        ("mul_dense", lambda m, s, d: m.sparse.mm(s * (d @ d.t()), d), False),
        ("addmm", lambda m, s, d: m.addmm(d, s, d, beta=0.5, alpha=-2), False),
        ("sparse_sparse", lambda m, s, d: m.sparse.mm(s, d.to_sparse()).to_dense(), False),
        ("sparse_sparse_leaf", lambda m, s, d: m.sparse.mm(s, d.to_sparse()).to_dense(), True),
    ],
)
def test_gradients_match_pytorch(name, op, leaf):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = _grads(torch, op, leaf)
    got = _grads(vkml, op, leaf)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=1e-6, atol=1e-6, err_msg=name)


# (id, function of the module, PyTorch's error type, text both libraries' messages contain)
ERRORS = [
    ("view", lambda m: _s(m).view(9), NotImplementedError, "view"),
    ("exp", lambda m: m.exp(_s(m)), NotImplementedError, "exp"),
    ("method_exp", lambda m: _s(m).exp(), NotImplementedError, "exp"),
    ("mean", lambda m: _s(m).mean(), NotImplementedError, "mean"),
    ("reshape", lambda m: _s(m).reshape(9), RuntimeError, "reshape is not implemented for sparse tensors"),
    ("numpy", lambda m: _s(m).numpy(), TypeError, "can't convert Sparse layout tensor to numpy"),
    ("add_dense", lambda m: _s(m) + m.ones(3, 3), RuntimeError, "add(sparse, dense) is not supported"),
    ("indices", lambda m: _s(m).indices(), RuntimeError, "Cannot get indices on an uncoalesced tensor"),
    ("values", lambda m: _s(m).values(), RuntimeError, "Cannot get values on an uncoalesced tensor"),
    ("nnz", lambda m: m.sparse_coo_tensor(IND, VAL[:4]), RuntimeError, "indices and values must have same nnz"),
    ("indices_1d", lambda m: m.sparse_coo_tensor(IND[0], VAL), RuntimeError, "indices must be sparse_dim x nnz"),
    ("len_size", lambda m: m.sparse_coo_tensor(IND, VAL, (3,)), RuntimeError, "len(size) == sparse_dim + dense_dim"),
    (
        "out_of_size",
        lambda m: m.sparse_coo_tensor(IND, VAL, (2, 3), check_invariants=True),
        RuntimeError,
        "size is inconsistent with indices: for dim 0, size is 2 but found index 2",
    ),
    ("mm_dtype", lambda m: m.sparse.mm(_s(m), m.ones(3, 2, dtype=m.float64)), RuntimeError, "expected scalar type"),
    ("mm_shape", lambda m: m.mm(_s(m), m.ones(4, 2)), RuntimeError, "Expected dim 0 size 3, got 4"),
    ("mm_sparse_shape", lambda m: m.mm(_s(m), m.ones(4, 2).to_sparse()), RuntimeError, "(3x3 and 4x2)"),
    ("mm_sparse_dtype", lambda m: m.mm(_s(m), _s(m).double()), RuntimeError, "mat1 dtype Float does not match"),
    ("add_sizes", lambda m: _s(m) + m.ones(3, 4).to_sparse(), RuntimeError, "expected sizes of 'self' and 'other'"),
    ("int_grad", lambda m: m.sparse_coo_tensor(IND, [1] * 5, requires_grad=True), RuntimeError, "floating point"),
    ("dense_coalesce", lambda m: m.ones(2).coalesce(), RuntimeError, "coalesce expected sparse coordinate tensor"),
    (
        "dense_values",
        lambda m: m.ones(2).values(),
        RuntimeError,
        "values expected sparse tensor layout but got Strided",
    ),
    ("legacy_int32", lambda m: m.sparse.FloatTensor(m.tensor(IND).int(), m.tensor(VAL), (3, 3)), RuntimeError, "int64"),
    ("legacy_int32_no_size", lambda m: m.sparse.FloatTensor(m.tensor(IND).int(), m.tensor(VAL)), RuntimeError, "Long"),
]


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_errors_match_pytorch(case):
    _, fn, error, text = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(error, match=None) as want:
            fn(torch)
    with pytest.raises(error) as got, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn(vkml)
    assert text in str(want.value) and text in str(got.value)


def test_operands_on_two_devices_raise_as_pytorchs(gpu):
    s, d = _s(vkml), vkml.ones(3, 2, device=gpu)
    for fn in (lambda: vkml.sparse.mm(s, d), lambda: s + _s(vkml).to(gpu)):
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            fn()


def test_vkml_refuses_what_it_does_not_compute():
    """Where PyTorch gives an answer vkml does not compute, vkml raises NotImplementedError naming it."""
    s = _s(vkml)
    leaf = vkml.sparse_coo_tensor(IND, VAL, (3, 3), requires_grad=True)
    for fn, text in [
        (lambda: vkml.mm(leaf, vkml.ones(3, 2)), "dense in PyTorch"),  # torch's leaf gradient is dense there
        (lambda: s * s, "mul of two sparse tensors"),
        (lambda: s.to_sparse(1), "already sparse"),
        (lambda: vkml.save({"adj": s}, io.BytesIO()), "adj is a sparse COO tensor"),
    ]:
        with pytest.raises(NotImplementedError, match=text):
            fn()
    assert s.to_dense().shape == (3, 3)  # the tensor is intact


def _gcn_step(m, device):
    """pytorch/examples' gcn: adjacency built sparse, normalized, a GraphConv forward and backward."""
    edges = np.array([[0, 1], [1, 2], [2, 3], [3, 0], [4, 1], [1, 2]], dtype=np.int32)
    adj = m.sparse_coo_tensor(edges.T, m.ones(len(edges)), (5, 5), dtype=m.int64)
    adj = m.eye(5) + adj
    deg = m.sqrt(1 / m.sum(adj, dim=1))
    deg = m.diag(deg).to_sparse()
    adj = (deg @ adj @ deg).to_sparse().to(device)
    feat = m.tensor(_RNG_FIXED.reshape(5, 4)).to_sparse().to(device)
    w = m.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3), device=device, requires_grad=True)
    out = m.spmm(adj, m.mm(feat, w))
    m.nn.functional.log_softmax(out, dim=1).sum().backward()
    return out.detach().cpu().numpy(), w.grad.cpu().numpy()


_RNG_FIXED = np.where(np.arange(20) % 3 == 0, 0.0, np.linspace(0.1, 2.0, 20)).astype(np.float32)


def test_gcn_matches_pytorch_and_lavapipe_gives_the_cpus_bits(gpu):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = _gcn_step(torch, "cpu")
    cpu = _gcn_step(vkml, "cpu")
    vk = _gcn_step(vkml, gpu)
    for w, c, v in zip(want, cpu, vk):
        np.testing.assert_allclose(c, w, rtol=1e-5, atol=1e-6)
        assert c.tobytes() == v.tobytes()


def test_repr_names_indices_values_and_layout():
    text = repr(_s(vkml))
    assert text.startswith("tensor(indices=tensor([[0, 1, 1, 0, 2],")
    assert "size=(3, 3), nnz=5, layout=vkml.sparse_coo)" in text


def test_sparse_torch_is_the_package_as_in_pytorch():
    """``torch.sparse.torch`` is ``torch`` (capsule-network code builds its one-hot targets with
    ``torch.sparse.torch.eye(n).index_select(0, labels)``); other missing names stay AttributeErrors."""
    assert vkml.sparse.torch is vkml and torch.sparse.torch is torch
    labels = [1, 0, 2]
    np.testing.assert_array_equal(
        vkml.sparse.torch.eye(3).index_select(dim=0, index=vkml.tensor(labels)).numpy(),
        torch.sparse.torch.eye(3).index_select(dim=0, index=torch.tensor(labels)).numpy(),
    )
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        vkml.sparse.nope  # noqa: B018
