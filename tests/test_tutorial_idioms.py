"""Idioms of the official PyTorch tutorials that vkml lacked: the graph of ``grad_fn``
(``next_functions``, ``name()``, as the "Neural Networks" tutorial prints it), the in-place view
ops (``target.unsqueeze_(-1)`` of the char-RNN generation tutorial) and ``out=``
(``torch.add(x, y, out=result)`` of the tensor tutorials). Each is compared with PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vkml


def _edges(fn):
    """A grad_fn's edges as names: ``[("MulBackward0", ...), "AccumulateGrad", None]``, recursively."""
    if fn is None:
        return None
    name = fn.name().split("::")[-1]
    return (name, [_edges(next_fn) for next_fn, _ in fn.next_functions]) if fn.next_functions else name


def test_grad_fn_next_functions_walks_the_graph_as_pytorch():
    def graph(lib):
        w = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        x = lib.tensor([[0.5, -1.0]])
        loss = (lib.relu(x @ w) * 3.0).exp()
        return w, loss

    (_, tl), (vw, vl) = graph(torch), graph(vkml)
    assert _edges(vl.grad_fn) == _edges(tl.grad_fn)
    assert vl.grad_fn.name() == "ExpBackward0" and repr(vl.grad_fn).startswith("<ExpBackward0 object at 0x")
    leaf = vl.grad_fn.next_functions[0][0].next_functions[0][0].next_functions[0][0].next_functions[1][0]
    assert leaf.variable is vw and repr(leaf).startswith("<AccumulateGrad object at 0x")
    vl.sum().backward()
    tl.sum().backward()
    assert _edges(vl.grad_fn) == _edges(tl.grad_fn)  # the edges stay after backward frees the graph


@pytest.mark.parametrize(
    "name, args",
    [
        ("unsqueeze_", (-1,)),
        ("squeeze_", ()),
        ("squeeze_", (0,)),
        ("t_", ()),
        ("transpose_", (0, 1)),
        ("swapdims_", (1, 0)),
    ],
)
def test_inplace_view_ops_match_pytorch(name, args):
    def run(lib):
        values = np.arange(6, dtype=np.float32).reshape(1, 6) if name.startswith("squeeze") else None
        values = values if values is not None else np.arange(6, dtype=np.float32).reshape(2, 3)
        x = lib.tensor(values)
        same = getattr(x, name)(*args) is x
        owner = [same, list(x.shape), x.tolist()]
        y = lib.tensor(values)
        view = y[:]  # a view: the op changes its shape, writes through it still reach y
        getattr(view, name)(*args)
        view += 1
        w = lib.tensor(values, requires_grad=True)
        h = w * 2
        getattr(h, name)(*args)
        (h * lib.arange(h.numel(), dtype=lib.float32).reshape(h.shape)).sum().backward()
        return owner, list(view.shape), y.tolist(), w.grad.tolist(), h.grad_fn.next_functions[0][0].name()

    assert run(vkml) == run(torch)


def test_inplace_view_op_on_a_leaf_that_requires_grad_raises_as_pytorch():
    w = vkml.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        w.unsqueeze_(0)
    assert w.shape == (3,)
    # PyTorch allows it under no_grad; vkml refuses clearly, leaving w as it was (docs/ops/inplace_views.md)
    with vkml.no_grad(), pytest.raises(NotImplementedError, match="unsqueeze_"):
        w.unsqueeze_(0)
    assert w.shape == (3,) and w.requires_grad


def test_out_keyword_writes_the_result_as_pytorch(recwarn):
    def run(lib):
        x = lib.arange(12, dtype=lib.float32).reshape(3, 4)
        result = lib.empty(3, 4)
        same = lib.add(x, 1, out=result) is result
        y3 = lib.zeros(3, 3)
        lib.matmul(x, x.T, out=y3)
        doubles = lib.zeros(3, 4, dtype=lib.float64)  # float32 result, converted up
        lib.mul(x, x, out=doubles)
        empty = lib.empty(0)
        lib.sum(x, 1, out=empty)  # no elements: resized without a warning
        values, indices = lib.empty(0), lib.empty(0, dtype=lib.int64)
        named = lib.max(x, 1, out=(values, indices))
        row = x[1].clone()
        lib.sub(row, 1, out=x[0])  # a view: writes reach the base
        return (
            same,
            result.tolist(),
            y3.tolist(),
            doubles.dtype.is_floating_point,
            doubles.tolist(),
            empty.tolist(),
            (
                named[0] is values,
                named.indices is indices,
                values.tolist(),
                indices.tolist(),
                x.tolist(),
            ),
        )

    assert run(vkml) == run(torch)


def test_out_keyword_errors_and_resize_warning_as_pytorch():
    for lib in (torch, vkml):
        x = lib.ones(3, requires_grad=True)
        out = lib.empty(3)
        with pytest.raises(RuntimeError, match=r"add\(\): functions with out=\.\.\. arguments don't support automatic"):
            lib.add(x, 1, out=out)
        with lib.no_grad():
            assert lib.add(x, 1, out=out) is out and out.tolist() == [2.0, 2.0, 2.0]
        ints = lib.zeros(3, dtype=lib.int64)
        with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
            lib.add(x.detach(), 0.5, out=ints)
        assert ints.tolist() == [0, 0, 0]
        small = lib.zeros(2)
        with pytest.warns(
            UserWarning, match=r"resized since it had shape \[2\], which does not match the required output shape \[3\]"
        ):
            lib.add(x.detach(), 1, out=small)
        assert small.tolist() == [2.0, 2.0, 2.0]


def test_out_keyword_on_lavapipe(gpu):
    x = vkml.arange(6, dtype=vkml.float32, device=gpu).reshape(2, 3)
    out = vkml.empty(2, 2, device=gpu)
    assert vkml.matmul(x, x.T, out=out) is out
    expected = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(out.cpu().numpy(), expected @ expected.T)


def test_generator_takes_a_device_as_pytorch():
    """The char-RNN classification tutorial splits its data with
    ``random_split(data, [.85, .15], generator=torch.Generator(device=device).manual_seed(2024))``."""
    import torch.utils.data

    import vkml.utils.data

    for lib in (torch, vkml):
        g = lib.Generator(device=lib.device("cpu")).manual_seed(2024)
        assert str(g.device) == "cpu" and str(lib.Generator().device) == "cpu"
        split = lib.utils.data.random_split
        parts = split(list(range(7)), [0.85, 0.15], generator=lib.Generator(device="cpu").manual_seed(2024))
        assert [len(p) for p in parts] == [6, 1]
        assert sorted(parts[0].indices + parts[1].indices) == list(range(7))
