"""Module backward hooks (register_full_backward_hook / _pre_hook) against PyTorch's."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import vkml

W = np.random.default_rng(5).standard_normal((2, 3)).astype(np.float32)
X = np.random.default_rng(6).standard_normal((4, 3)).astype(np.float32)


def _run(lib, x_requires_grad: bool, replace: str | None):
    layer = lib.nn.Linear(3, 2)
    with lib.no_grad():
        layer.weight.copy_(lib.tensor(W))
        layer.bias.fill_(0.5)
    seen = []

    def pre(module, grad_output):
        seen.append(("pre", grad_output[0].detach().numpy().copy()))
        return (grad_output[0] * 3,) if replace == "grad_output" else None

    def full(module, grad_input, grad_output):
        seen.append(
            (
                "full",
                [None if g is None else g.detach().numpy().copy() for g in grad_input],
                grad_output[0].detach().numpy().copy(),
            )
        )
        return (grad_input[0] * 0.5,) if replace == "grad_input" and grad_input[0] is not None else None

    layer.register_full_backward_pre_hook(pre)
    handle = layer.register_full_backward_hook(full)
    x = lib.tensor(X, requires_grad=x_requires_grad)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (layer(x) ** 2).sum().backward()
    handle.remove()
    (layer(x) ** 2).sum().backward()  # removed: the full hook is not called again; the pre hook is
    grads = (None if x.grad is None else x.grad.numpy(), layer.weight.grad.numpy())
    return seen, grads, sorted(str(w.message)[:40] for w in caught)


@pytest.mark.parametrize("replace", [None, "grad_output", "grad_input"])
@pytest.mark.parametrize("x_requires_grad", [True, False])
def test_full_backward_hooks_match_torch(x_requires_grad, replace):
    ours, theirs = _run(vkml, x_requires_grad, replace), _run(torch, x_requires_grad, replace)
    assert [s[0] for s in ours[0]] == [s[0] for s in theirs[0]]
    for a, b in zip(ours[0], theirs[0]):
        if a[0] == "pre":
            np.testing.assert_allclose(a[1], b[1], rtol=1e-5)
        else:
            assert [g is None for g in a[1]] == [g is None for g in b[1]]
            for g, h in zip(a[1], b[1]):
                if g is not None:
                    np.testing.assert_allclose(g, h, rtol=1e-5)
            np.testing.assert_allclose(a[2], b[2], rtol=1e-5)
    for g, h in zip(ours[1], theirs[1]):
        assert (g is None) == (h is None)
        if g is not None:
            np.testing.assert_allclose(g, h, rtol=1e-5, atol=1e-6)
    assert ours[2] == theirs[2]


def test_backward_hooks_see_two_inputs_whole():
    """Two inputs requiring grad: the full hook sees both gradients at once and may replace them, as torch's."""

    def run(m):
        seen = []
        bilinear = m.nn.Bilinear(2, 2, 1)
        with m.no_grad():
            bilinear.weight.copy_(m.tensor([[[1.0, 2.0], [3.0, 4.0]]]))
            bilinear.bias.fill_(0.5)

        def hook(module, grad_input, grad_output):
            seen.append([g.numpy().tolist() for g in grad_input])
            return (grad_input[0] * 2, grad_input[1])

        bilinear.register_full_backward_hook(hook)
        a = m.tensor([[1.0, -1.0]], requires_grad=True)
        b = m.tensor([[0.5, 2.0]], requires_grad=True)
        bilinear(a, b).sum().backward()
        return seen, a.grad.numpy().tolist(), b.grad.numpy().tolist()

    assert run(vkml) == run(torch)


def test_backward_hooks_refuse_what_they_cannot_see_whole():
    """Inputs requiring grad of two dtypes: an explicit NotImplementedError, not hooks given half the gradients."""

    class Mixed(vkml.nn.Module):
        def forward(self, a, b):
            return a.sum() + b.sum().float()

    mixed = Mixed()
    mixed.register_full_backward_hook(lambda m, gi, go: None)
    a = vkml.ones(2, requires_grad=True)
    b = vkml.ones(2, dtype=vkml.float64, requires_grad=True)
    with pytest.raises(NotImplementedError, match="share one dtype and device"):
        mixed(a, b)
    with vkml.no_grad():
        assert mixed(a, b).item() == 4.0  # no graph, no hooks: runs
