"""In-place writes through views of a leaf that requires grad: under no_grad (and through ``.data``) they
change the leaf, which stays a leaf whose gradient is as PyTorch's; with grad on they are PyTorch's error,
also for a leaf that is itself a view of a tensor that does not require grad."""

import pytest
import torch

import vkml

WRITES = {
    "w[0].fill_(1.0)": lambda m, w: w[0].fill_(1.0),
    "w.data[0] = 1": lambda m, w: w.data.__setitem__(0, 1),
    "w[:, 0].mul_(2)": lambda m, w: w[:, 0].mul_(2),
    "w[1] = 5.0": lambda m, w: w.__setitem__(1, 5.0),
    "w.t()[0].copy_(...)": lambda m, w: w.t()[0].copy_(m.tensor([7.0, 8.0])),
    "w.view(-1)[2:4].add_(10)": lambda m, w: w.view(-1)[2:4].add_(10),
    "w[w > 2] = 0": lambda m, w: w.__setitem__(w > 2, 0.0),
}


def _leaf(m, as_view: bool):
    if as_view:  # a leaf that is a view of a tensor that does not require grad
        return m.arange(6, dtype=m.float32).reshape(2, 3).requires_grad_()
    return m.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], requires_grad=True)


def _no_grad_write(m, label, as_view):
    w = _leaf(m, as_view)
    with m.no_grad():
        WRITES[label](m, w)
    (w * w).sum().backward()
    return w.tolist(), w.is_leaf, w.grad_fn is None, w.grad.tolist()


@pytest.mark.parametrize("as_view", [False, True])
@pytest.mark.parametrize("label", list(WRITES))
def test_no_grad_write_through_a_view_of_a_leaf(label, as_view):
    assert _no_grad_write(vkml, label, as_view) == _no_grad_write(torch, label, as_view)


@pytest.mark.parametrize("as_view", [False, True])
def test_grad_mode_write_through_a_view_of_a_leaf_is_refused(as_view):
    for label in ("w[0].fill_(1.0)", "w[:, 0].mul_(2)", "w[1] = 5.0"):
        for m in (torch, vkml):
            w = _leaf(m, as_view)
            with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
                WRITES[label](m, w)
            assert w.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], (label, m.__name__)
