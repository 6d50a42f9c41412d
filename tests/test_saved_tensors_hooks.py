"""``autograd.graph.saved_tensors_hooks``, ``save_on_cpu`` and ``disable_saved_tensors_hooks``, against torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vkml


def _grads(lib, hooks, fn):
    lib.manual_seed(0)
    x = lib.randn(3, 4, requires_grad=True)
    w = lib.randn(4, 2, requires_grad=True)
    with hooks(lib):
        loss = fn(lib, x, w)
    loss.backward()
    return x.grad.numpy(), w.grad.numpy()


def _doubling(lib):
    """Hooks that change what is kept (scaled on pack, scaled back on unpack): the rule must use unpack's."""
    return lib.autograd.graph.saved_tensors_hooks(lambda t: t.detach() * 2, lambda t: t / 2)


_PROGRAMS = {
    "mlp": lambda lib, x, w: lib.nn.functional.gelu(x @ w).tanh().pow(2).mean(),
    "softmax": lambda lib, x, w: ((x @ w).softmax(-1) * lib.arange(2.0)).sum(),
    "layer_norm": lambda lib, x, w: lib.nn.functional.layer_norm(x, (4,)).exp().sum() + (x * x).sum() * w.sum(),
}


@pytest.mark.parametrize("hooks", [_doubling, lambda lib: lib.autograd.graph.save_on_cpu()], ids=["scaled", "on_cpu"])
@pytest.mark.parametrize("program", list(_PROGRAMS))
def test_gradients_through_saved_tensor_hooks_are_torchs(hooks, program):
    want = _grads(torch, hooks, _PROGRAMS[program])
    got = _grads(vkml, hooks, _PROGRAMS[program])
    for a, b in zip(want, got, strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def test_pack_runs_at_forward_and_unpack_at_backward():
    for lib in (torch, vkml):
        log = []
        x = lib.ones(3, requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(
            lambda t, log=log: log.append("pack") or t, lambda t, log=log: log.append("unpack") or t
        ):
            y = (x * x).sum()
        assert log == ["pack", "pack"]
        y.backward()
        assert log == ["pack", "pack", "unpack", "unpack"]
        assert x.grad.tolist() == [2.0, 2.0, 2.0]


def test_hooks_reach_custom_functions_and_nest():
    def run(lib):
        log = []

        class Square(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return 2 * x * g

        x = lib.tensor([1.0, 3.0], requires_grad=True)
        outer = lib.autograd.graph.saved_tensors_hooks(lambda t: log.append("outer") or t, lambda t: t)
        inner = lib.autograd.graph.saved_tensors_hooks(lambda t: log.append("inner") or t, lambda t: t * 0 + 1)
        with outer, inner:
            y = Square.apply(x).sum()
        y.backward()
        return log, x.grad.tolist()

    assert run(vkml) == run(torch)


def test_disable_and_bad_unpack_raise_torchs_errors():
    for lib in (torch, vkml):
        graph = lib.autograd.graph
        with graph.disable_saved_tensors_hooks("not here"):
            with pytest.raises(RuntimeError, match="^not here$"):
                with graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                    pass
        x = lib.ones(2, requires_grad=True)
        with graph.saved_tensors_hooks(lambda t: None, lambda p: 3):
            y = (x * x).sum()
        with pytest.raises(TypeError, match="unpack_hook expected to be a Tensor but got result of type int"):
            y.backward()
