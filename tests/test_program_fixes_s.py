"""The gaps the official-tutorial programs of tests/test_programs_s.py found, each against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vkml

A = np.linspace(-1.0, 1.5, 6, dtype=np.float32).reshape(2, 3)


def _node_hooks_run(m):
    """Gradients through a node whose prehook scales its gradient and whose hook replaces one input's."""
    x = m.tensor(A, requires_grad=True)
    w = m.tensor(A[::-1].copy(), requires_grad=True)
    h = (x * w).tanh()
    seen = []
    pre = h.grad_fn.register_prehook(lambda grad_outputs: (grad_outputs[0] * 3,))
    post = h.grad_fn.next_functions[0][0].register_hook(
        lambda grad_inputs, grad_outputs: seen.append(len(grad_inputs)) or (grad_inputs[0], grad_inputs[1] * 0)
    )
    h.sum().backward(retain_graph=True)
    first = [x.grad.numpy().copy(), w.grad.numpy().copy()]
    pre.remove()
    post.remove()
    h.sum().backward()
    return first + [x.grad.numpy(), w.grad.numpy(), seen]


def test_node_prehook_and_hook_change_the_gradients_as_pytorchs():
    expected, got = _node_hooks_run(torch), _node_hooks_run(vkml)
    for e, g in zip(expected[:4], got[:4], strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-6)
    assert got[4] == expected[4] == [2]


def test_node_metadata_and_isinstance_node():
    for m in (torch, vkml):
        x = m.tensor(A, requires_grad=True)
        y = (x * 2).sum()
        y.grad_fn.metadata["tag"] = "loss"
        assert y.grad_fn.metadata == {"tag": "loss"}
        accumulate = y.grad_fn.next_functions[0][0].next_functions[0][0]
        assert isinstance(y.grad_fn, m.autograd.graph.Node)
        assert isinstance(accumulate, m.autograd.graph.Node)
        assert not isinstance(x, m.autograd.graph.Node)


def test_node_hook_returning_a_wrong_count_raises_as_pytorch():
    for m in (torch, vkml):
        x = m.tensor(A, requires_grad=True)
        y = x.exp()
        y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: (None, None))
        with pytest.raises(RuntimeError, match="returned an incorrect number of values"):
            y.sum().backward()


def _timed(benchmark_module, m):
    x = m.ones(4, 4)
    timer = benchmark_module.Timer(
        stmt="(x @ x).sum().item()", globals={"x": x}, label="mm", sub_label="4x4", description="ones"
    )
    once, blocks = timer.timeit(7), timer.blocked_autorange(min_run_time=0.001)
    return [
        once.number_per_run,
        len(once.times),
        once.times[0] == once.raw_times[0] / 7,
        once.mean > 0,
        blocks.median > 0,
        len(blocks.times) >= 1,
        once.title,
        once.description,
        repr(once).splitlines()[1:3],
        repr(once).splitlines()[-1].strip(),
    ]


def test_benchmark_timer_measures_as_pytorchs():
    import torch.utils.benchmark

    import vkml.utils.benchmark

    assert _timed(vkml.utils.benchmark, vkml) == _timed(torch.utils.benchmark, torch)
    table = str(vkml.utils.benchmark.Compare([vkml.utils.benchmark.Timer("1 + 1", label="add").timeit(3)]))
    assert table.startswith("[----- add -----]") and "Times are in" in table
