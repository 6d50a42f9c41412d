""".data, detach() and version counters in the corners real programs reach, against torch.

Each program runs on torch and on vkml (CPU backend and lavapipe) and returns what it observed:
values, versions, flags or the error it raised; vkml must observe the same.
"""

from __future__ import annotations

import pytest
import torch

import vkml


def _set_data_new_shape(L, dev):
    p = L.ones(3, requires_grad=True, device=dev)
    p.data = L.zeros(5, device=dev)
    return [list(p.shape), p.requires_grad, p.is_leaf, p._version, p.detach().tolist()]


def _set_data_int_refused(L, dev):
    p = L.ones(3, requires_grad=True, device=dev)
    p.data = L.zeros(3, dtype=L.int64, device=dev)


def _data_write_between_forward_and_backward(L, dev):
    # PyTorch: .data has a version counter of its own, so this is no error, and the rule reads
    # the storage as it is at backward (the gradient of p * p uses the doubled p)
    p = L.tensor([1.0, 2.0, 3.0], requires_grad=True, device=dev)
    y = (p * p).sum()
    p.data.mul_(2)
    y.backward()
    return [p._version, p.grad.tolist(), p.is_leaf, p.grad_fn is None]


def _data_view_write_between_forward_and_backward(L, dev):
    p = L.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True, device=dev)
    y = (p[1] * p[1]).sum()
    p.data[1].add_(1)
    y.backward()
    return [p._version, p.grad.tolist()]


def _detach_write_between_forward_and_backward(L, dev):
    p = L.tensor([1.0, 2.0, 3.0], requires_grad=True, device=dev)
    y = (p * p).sum()
    p.detach().mul_(2)
    y.backward()


def _saved_value_written(L, dev):
    a = L.tensor([1.0, 2.0, 3.0], requires_grad=True, device=dev)
    y = a.exp()
    z = y.exp()
    y.add_(1)
    z.sum().backward()


def _storage_shared(L, dev):
    x = L.tensor([1.0, 2.0, 3.0], device=dev)
    d = x.data
    e = x.detach()
    x.add_(1)
    after_x = [d.tolist(), e.tolist()]
    d.mul_(10)
    after_d = [x.tolist(), e.tolist()]
    e[0] = -1.0
    return [after_x, after_d, x.tolist(), d.tolist()]


def _versions(L, dev):
    a = L.tensor([1.0, 2.0, 3.0], requires_grad=True, device=dev)
    b = a * 1
    d = b.detach()
    d.zero_()
    first = [b._version, d._version]
    c = a * 1
    e = c.data
    e.zero_()
    return [first, c._version, e._version]


def _set_data_shares_storage(L, dev):
    p = L.tensor([1.0, 2.0, 3.0], requires_grad=True, device=dev)
    q = L.tensor([5.0, 6.0], device=dev)
    p.data = q
    q.add_(1)
    seen_by_p = p.detach().tolist()
    with L.no_grad():
        p.mul_(2)
    return [seen_by_p, q.tolist(), p.is_leaf, p.requires_grad]


def _view_before_set_data_keeps_old_values(L, dev):
    p = L.tensor([1.0, 2.0, 3.0], requires_grad=True, device=dev)
    v = p.data[1:]
    p.data = L.tensor([7.0, 8.0, 9.0], device=dev)
    return [v.tolist(), p.detach().tolist()]


def _inplace_on_leaf_after_set_data(L, dev):
    p = L.tensor([1.0, 2.0], requires_grad=True, device=dev)
    p.data = L.tensor([3.0, 4.0], device=dev)
    p.add_(1)


def _train_after_set_data(L, dev):
    p = L.tensor([1.0, 2.0], requires_grad=True, device=dev)
    p.data = L.tensor([3.0, -4.0], device=dev)
    opt = (torch.optim if L is torch else vkml.optim).SGD([p], lr=0.5)
    for _ in range(2):
        opt.zero_grad()
        (p * p).sum().backward()
        opt.step()
    return [p.detach().tolist(), p.grad.tolist()]


def _sgd_by_hand(L, dev):
    w = L.tensor([1.0, -2.0, 0.5], requires_grad=True, device=dev)
    x = L.tensor([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]], device=dev)
    versions = []
    for _ in range(3):
        loss = ((x @ w) ** 2).mean()
        loss.backward()
        with L.no_grad():
            w -= 0.1 * w.grad
            w.grad.zero_()
        w.data.clamp_(-1.5, 1.5)
        versions.append(w._version)
    return [w.detach().tolist(), versions, w.is_leaf, w.grad.tolist()]


PROGRAMS = [
    _set_data_new_shape,
    _set_data_int_refused,
    _data_write_between_forward_and_backward,
    _data_view_write_between_forward_and_backward,
    _detach_write_between_forward_and_backward,
    _saved_value_written,
    _storage_shared,
    _versions,
    _set_data_shares_storage,
    _view_before_set_data_keeps_old_values,
    _inplace_on_leaf_after_set_data,
    _train_after_set_data,
    _sgd_by_hand,
]


def _observe(program, L, dev):
    try:
        return ("ok", program(L, dev))
    except RuntimeError as e:
        return ("RuntimeError", str(e).split(":")[0].split(".")[0])


def _assert_close(got, want):
    if isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(want), (got, want)
        for g, w in zip(got, want):
            _assert_close(g, w)
    elif isinstance(want, float):
        assert got == pytest.approx(want, rel=1e-6, abs=1e-7), (got, want)
    else:
        assert got == want, (got, want)


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__.strip("_"))
def test_same_as_torch(program, gpu):
    want = _observe(program, torch, "cpu")
    for dev in (vkml.device("cpu"), gpu):
        got = _observe(program, vkml, dev)
        assert got[0] == want[0], (got, want)
        if got[0] == "ok":
            # Values within float32 rounding of PyTorch's (its CPU kernels change between releases:
            # the GPU machine's older torch fuses differently); structure, versions and flags exactly.
            _assert_close(got[1], want[1])
        else:
            assert got[1] == want[1], (got, want)


def test_stale_view_write_after_set_data_raises_instead_of_corrupting():
    p = vkml.tensor([1.0, 2.0, 3.0])
    v = p[1:]
    p.data = vkml.tensor([7.0, 8.0, 9.0])
    with pytest.raises(RuntimeError, match="take the view again"):
        v.add_(1)
    assert p.tolist() == [7.0, 8.0, 9.0] and v.tolist() == [2.0, 3.0]
