"""PyTorch parity gaps closed in session 21, each against torch CPU: ``Tensor.set_`` in its four forms
(storage shared both ways, old views keeping the old storage, PyTorch's errors)."""

from __future__ import annotations

import warnings

import pytest
import torch

import vkml

# ---------------------------------------------------------------------- Tensor.set_


def _set_to_tensor(lib, dev):
    t = lib.arange(4.0, device=dev)
    v = t[1:3]  # taken before: keeps t's old storage
    a = lib.arange(10.0, 16.0, device=dev)
    t.set_(a)
    v.mul_(10)
    t[0] = -1
    a[1] += 100
    w = t.view(2, 3)
    w[1, 2] = 7
    return [t, v, a, w, t.stride(), t.storage_offset()]


def _set_to_view(lib, dev):
    s = lib.arange(12.0, device=dev).view(3, 4)[:, 1:].t()  # strided, offset 1
    q = lib.zeros(1, device=dev)
    q.set_(s)
    s[0, 1] = 33
    q[2, 2] += 5
    return [q, s, q.stride(), q.storage_offset(), q.is_set_to(s)]


def _set_strided(lib, dev):
    a = lib.arange(8.0, device=dev)
    t = lib.zeros(2, device=dev)
    t.set_(a, 1, (2, 3), (3, 1))
    t[1] *= -1
    u = lib.zeros(2, device=dev)
    u.set_(a.untyped_storage(), 2, (3,), (2,))
    u += 100
    r = lib.zeros(2, device=dev)
    r.set_(a, 0, (2, 2))  # stride row-major by default
    return [t, u, r, a, t.stride(), t.storage_offset()]


def _set_storage_whole(lib, dev):
    a = lib.arange(6, device=dev).view(2, 3)
    t = lib.zeros(1, dtype=a.dtype, device=dev)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t.set_(a.t().storage())
    t[5] = 60
    u = lib.zeros(1, dtype=a.dtype, device=dev).set_(a[1].untyped_storage())
    return [t, u, a]


def _set_empty(lib, dev):
    x = lib.arange(6.0, device=dev)
    old = x.view(2, 3)
    x.set_()
    old[0, 0] = 9  # the old storage still lives through the view
    return [x, old, tuple(x.shape), x.untyped_storage().nbytes()]


def _set_self_and_own_view(lib, dev):
    x = lib.arange(6.0, device=dev)
    y = x[2:]
    x.set_(y)
    x[0] = 50
    z = lib.arange(3.0, device=dev)
    z.set_(z)
    z[0] = 7
    return [x, y, z]


def _set_leaf_under_no_grad(lib, dev):
    p = lib.zeros(3, requires_grad=True, device=dev)
    src = lib.ones(3, device=dev)
    with lib.no_grad():
        p.set_(src)
    (p * 2).sum().backward()
    with lib.no_grad():
        src.add_(1)
    return [p.detach(), p.grad, p.is_leaf, p.requires_grad]


SET_CASES = {
    "tensor": _set_to_tensor,
    "strided_view": _set_to_view,
    "offset_size_stride": _set_strided,
    "whole_storage": _set_storage_whole,
    "empty": _set_empty,
    "self_and_own_view": _set_self_and_own_view,
    "leaf_under_no_grad": _set_leaf_under_no_grad,
}


def _plain(values):
    return [v.tolist() if isinstance(v, (torch.Tensor, vkml.Tensor)) else v for v in values]


@pytest.mark.parametrize("case", SET_CASES)
def test_set_shares_storage_as_torch(case):
    fn = SET_CASES[case]
    assert _plain(fn(vkml, "cpu")) == _plain(fn(torch, "cpu"))


@pytest.mark.parametrize("case", ["tensor", "offset_size_stride"])
def test_set_on_vulkan_equals_torch(case, gpu):
    fn = SET_CASES[case]
    assert _plain(fn(vkml, gpu)) == _plain(fn(torch, "cpu"))


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the class and words are what is compared
        return type(e).__name__, str(e).split("\n")[0]
    return None


SET_ERRORS = {
    "dtype": lambda L: L.zeros(2).set_(L.arange(3)),
    "leaf_requires_grad": lambda L: L.zeros(2, requires_grad=True).set_(L.ones(2)),
    "offset_without_size": lambda L: L.zeros(2).set_(L.ones(2), 0),
    "not_a_source": lambda L: L.zeros(2).set_(5),
    "negative_offset": lambda L: L.zeros(2).set_(L.ones(4).untyped_storage(), -1, (1,)),
    "negative_stride": lambda L: L.zeros(2).set_(L.ones(4), 0, (2,), (-1,)),
}


@pytest.mark.parametrize("case", SET_ERRORS)
def test_set_errors_in_torch_words(case):
    fn = SET_ERRORS[case]
    assert _error(lambda: fn(vkml)) == _error(lambda: fn(torch))


def test_set_past_the_storage_refused():
    # PyTorch grows the storage (uninitialised elements); vkml refuses rather than read what is not there
    with pytest.raises(NotImplementedError, match="set_"):
        vkml.zeros(2).set_(vkml.ones(4), 2, (3,))
