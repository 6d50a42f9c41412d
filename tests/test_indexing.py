"""Advanced indexing (integer tensors, lists, bool masks) and gather/scatter against torch.

Reads, writes and gradients run on torch, on the CPU backend and on lavapipe; vkml matches
torch's values and shapes, and the CPU backend matches Vulkan bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vkml

RNG = np.random.default_rng(1616)
X = RNG.standard_normal((4, 5, 6)).astype(np.float32)
MASK = X[:, :, 0] > 0
MASK3 = X > 0.5


class T:
    """An index tensor, made by each library on the indexed tensor's device."""

    def __init__(self, values):
        self.values = np.asarray(values)


def _for(lib, item, device=None):
    if isinstance(item, T):
        return torch.tensor(item.values) if lib is torch else vkml.tensor(item.values, device=device)
    if isinstance(item, tuple):
        return tuple(_for(lib, i, device) for i in item)
    return item


READS = {
    "int tensor": T([2, 0, 3, 0]),
    "negative ints": T([-1, -4, 1]),
    "list": [1, 1, 2],
    "2-d index": T([[0, 1], [3, 2]]),
    "0-d index": T(2),
    "bool mask": T(MASK),
    "full bool mask": T(MASK3),
    "mask then slice": (T(MASK), slice(1, None, 2)),
    "slice then tensor": (slice(None), T([4, 0])),
    "two broadcast": (T([[0], [3]]), T([1, 2, 4])),
    "separated advanced go first": (T([0, 2]), slice(None), T([1, 5])),
    "adjacent stay in place": (slice(None), T([0, 2]), T([1, 5])),
    "with none": (None, T([1, 0]), Ellipsis, 2),
    "ellipsis tensor": (Ellipsis, T([5, 0, 5])),
    "int and list": (1, [0, 4], slice(None, 3)),
    "python bool": True,
    "empty list": T(np.zeros(0, np.int64)),
    "empty mask": T(np.zeros(4, bool)),
}


def _read(lib, key, device=None):
    x = torch.tensor(X) if lib is torch else vkml.tensor(X, device=device)
    return x[_for(lib, READS[key], device)]


@pytest.mark.parametrize("key", READS)
def test_read_matches_torch(key):
    want = _read(torch, key).numpy()
    got = _read(vkml, key, "cpu").numpy()
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("key", READS)
def test_read_same_bits_on_vulkan(key, gpu):
    assert _read(vkml, key, gpu).numpy().tobytes() == _read(vkml, key, "cpu").numpy().tobytes()


def test_read_of_int_and_bool_tensors():
    ints = np.arange(12, dtype=np.int64).reshape(3, 4)
    flags = ints % 3 == 0
    np.testing.assert_array_equal(vkml.tensor(ints)[[2, 0]].numpy(), ints[[2, 0]])
    np.testing.assert_array_equal(vkml.tensor(flags)[:, [3, 1]].numpy(), flags[:, [3, 1]])


@pytest.mark.parametrize(
    "index, message",
    [
        (T([0, 4]), "index 4 is out of bounds for dimension 0 with size 4"),
        ((slice(None), [5, 7]), "index 5 is out of bounds for dimension 1 with size 5"),
        ((2, slice(None), [1, 6]), "index 6 is out of bounds for dimension 1 with size 6"),
        (T([-5]), "index -5 is out of bounds for dimension 0 with size 4"),
        (T(np.ones(3, bool)), "The shape of the mask"),
    ],
)
def test_out_of_range_index_raises_eagerly_naming_op_index_and_size(index, message):
    x = vkml.tensor(X)
    with pytest.raises(IndexError, match="__getitem__") as info:
        x[_for(vkml, index, "cpu")]
    assert message in str(info.value)
    with pytest.raises(IndexError):
        torch.tensor(X)[_for(torch, index)]


def test_float_index_tensor_raises_as_torch():
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or bool tensors"):
        vkml.tensor(X)[vkml.tensor([1.0])]


# ---------------------------------------------------------------------- writes

WRITES = {
    "int tensor, number": (T([2, 0]), 7.0),
    "repeated index, last wins": (T([1, 3, 1]), T(np.arange(3 * 5 * 6, dtype=np.float32).reshape(3, 5, 6))),
    "broadcast value": ((T([0, 3]), slice(None), T([5, 1])), T(np.arange(5, dtype=np.float32))),
    "bool mask, number": (T(MASK3), -1.0),
    "bool mask, 0-d tensor": (T(MASK3), T(np.float32(4.5))),
    "partial mask, tensor values": (T(MASK), T(np.ones(6, np.float32))),
    "list and slice": (([1, 2], slice(1, 3)), 0.0),
    "full mask, tensor values": (T(MASK3), T(np.arange(MASK3.sum(), dtype=np.float32))),
}


def _write(lib, key, device=None):
    x = torch.tensor(X) if lib is torch else vkml.tensor(X, device=device)
    view = x[1]
    index, value = WRITES[key]
    x[_for(lib, index, device)] = _for(lib, value, device)
    return x.numpy(), view.numpy()


@pytest.mark.parametrize("key", WRITES)
def test_write_matches_torch(key):
    for got, want in zip(_write(vkml, key, "cpu"), _write(torch, key)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("key", WRITES)
def test_write_same_bits_on_vulkan(key, gpu):
    for on_gpu, on_cpu in zip(_write(vkml, key, gpu), _write(vkml, key, "cpu")):
        assert on_gpu.tobytes() == on_cpu.tobytes()


def test_index_put_accumulate_adds_in_index_order():
    """Repeated positions add left to right after the old value, as a sequential loop in float32 does."""
    values = np.array([1e8, 1.0, -1e8, 1.0, 3.0], np.float32)
    index = np.array([2, 2, 2, 2, 0])
    expected = np.zeros(4, np.float32)
    for i, v in zip(index, values):
        expected[i] = np.float32(expected[i] + v)
    results = []
    for device in ("cpu", vkml.best_device()):
        x = vkml.zeros(4, device=device)
        x.index_put_((vkml.tensor(index, device=device),), vkml.tensor(values, device=device), accumulate=True)
        results.append(x.numpy())
    np.testing.assert_array_equal(results[0], expected)
    assert results[0].tobytes() == results[1].tobytes()
    ref = torch.zeros(4).index_put_((torch.tensor(index),), torch.tensor(values), accumulate=True)
    np.testing.assert_array_equal(results[0], ref.numpy())


# ---------------------------------------------------------------------- dim-wise ops

IDX2 = np.array([[0, 4, 4], [2, 2, 0], [1, 3, 4], [0, 0, 0]])
SRC = RNG.standard_normal((4, 3)).astype(np.float32)
Y = RNG.standard_normal((4, 5)).astype(np.float32)

DIMWISE = {
    "gather dim 1": lambda L, y: y.gather(1, L(IDX2)),
    "gather dim 0": lambda L, y: y.gather(0, L(IDX2[:3] % 4)),
    "index_select": lambda L, y: y.index_select(1, L([4, 0, 4])),
    "take_along_dim": lambda L, y: y.take_along_dim(L(np.argsort(Y, axis=1)), 1),
    "take_along_dim broadcast": lambda L, y: y.take_along_dim(L([[-1, 0]]), 1),
    "scatter_": lambda L, y: y.clone().scatter_(1, L(IDX2), L(SRC)),
    "scatter_ value": lambda L, y: y.clone().scatter_(1, L(IDX2[:, :1]), value=9.0),
    "scatter_add_ repeated": lambda L, y: y.clone().scatter_add_(1, L(IDX2), L(SRC)),
    "scatter_add": lambda L, y: y.scatter_add(0, L(IDX2 % 4), L(SRC)),
    "where one arg": lambda L, y: (y > 0.3).nonzero(),
    "masked_fill": lambda L, y: y.masked_fill(L(Y[0] > 0), -2.0),
}


def _dimwise(lib, key, device=None):
    y = torch.tensor(Y) if lib is torch else vkml.tensor(Y, device=device)

    def make(values):
        return torch.tensor(np.asarray(values)) if lib is torch else vkml.tensor(np.asarray(values), device=device)

    return DIMWISE[key](make, y).numpy()


@pytest.mark.parametrize("key", DIMWISE)
def test_dimwise_matches_torch(key):
    got, want = _dimwise(vkml, key, "cpu"), _dimwise(torch, key)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("key", DIMWISE)
def test_dimwise_same_bits_on_vulkan(key, gpu):
    assert _dimwise(vkml, key, gpu).tobytes() == _dimwise(vkml, key, "cpu").tobytes()


def test_where_with_condition_only_is_nonzero_as_tuple():
    got = vkml.where(vkml.tensor(MASK))
    want = torch.where(torch.tensor(MASK))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w.numpy())


def test_gather_out_of_range_raises_as_torch():
    for lib in (torch, vkml):
        with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 1 with size 5"):
            lib.tensor(Y).gather(1, lib.tensor([[5]]))


# ---------------------------------------------------------------------- gradients

GRADS = {
    "read repeated": lambda L, w: (w[L([0, 3, 0])] * w[L([1, 1, 2])]).sum(),
    "read mask": lambda L, w: (w[L(MASK3)] ** 2).sum(),
    "gather": lambda L, w: (w.reshape(4, 30).gather(1, L(np.array([[0, 0, 29]] * 4))) * 3.0).sum(),
    "write then read": lambda L, w: _write_read(L, w),
    "scatter_add": lambda L, w: (w.reshape(4, 30)[:, :3].clone().scatter_add_(1, L(IDX2 % 3), w[:, 0, :3]) ** 2).sum(),
}


def _write_read(L, w):
    y = w * 1.0
    y[L([2, 0])] = w[1] * 2.0
    return (y * w).sum()


def _grad(lib, key, device=None):
    w = (torch.tensor(X) if lib is torch else vkml.tensor(X, device=device)).requires_grad_()

    def make(values):
        return torch.tensor(np.asarray(values)) if lib is torch else vkml.tensor(np.asarray(values), device=device)

    GRADS[key](make, w).backward()
    return w.grad.numpy()


@pytest.mark.parametrize("key", GRADS)
def test_gradient_matches_torch(key):
    np.testing.assert_allclose(_grad(vkml, key, "cpu"), _grad(torch, key), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("key", GRADS)
def test_gradient_same_bits_on_vulkan(key, gpu):
    assert _grad(vkml, key, gpu).tobytes() == _grad(vkml, key, "cpu").tobytes()


@pytest.mark.parametrize("index", [4, -5, (0, 5), (slice(None), 1, -7)])
def test_int_index_out_of_range_names_op_index_dim_and_size(index):
    """Basic (view) indexing raises PyTorch's IndexError words, naming the op."""
    with pytest.raises(IndexError) as theirs:
        torch.tensor(X)[index]
    with pytest.raises(IndexError) as ours:
        vkml.tensor(X)[index]
    assert str(ours.value) == f"'__getitem__': {theirs.value}"


def test_accumulate_past_lavapipes_loop_limit(gpu):
    """One position taking 70000 contributions: lavapipe stops a shader's loops after 65535 trips."""
    n = 70000
    for device in ("cpu", gpu):
        x = vkml.zeros(2, device=device)
        x.index_put_((vkml.zeros(n, dtype=vkml.int64, device=device),), vkml.ones(n, device=device), accumulate=True)
        np.testing.assert_array_equal(x.numpy(), [float(n), 0.0])
