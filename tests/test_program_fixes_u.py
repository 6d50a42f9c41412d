"""The gaps the tutorial programs of tests/test_programs_u.py (yunjey's pytorch-tutorial, karpathy's
nn-zero-to-hero, the UvA deep learning tutorials) found, each against PyTorch."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import vkml


def _optimizer_template_run(m):
    """The UvA tutorial's ``OptimizerTemplate.zero_grad``: ``p.grad.detach_()`` then ``p.grad.zero_()`` on every
    parameter after each backward, a Linear's bias among them (its gradient is a sum reshaped: a view)."""
    m.manual_seed(0)
    net = m.nn.Sequential(m.nn.Linear(4, 3), m.nn.Tanh(), m.nn.Linear(3, 2))
    x = m.tensor(np.linspace(-1, 1, 20, dtype=np.float32).reshape(5, 4))
    grads = []
    for _ in range(2):
        net(x).pow(2).sum().backward()
        grads.append([p.grad.numpy().copy() for p in net.parameters()])
        for p in net.parameters():
            p.grad.detach_()
            p.grad.zero_()
        with m.no_grad():
            for p in net.parameters():
                p.add_(-0.1 * p)
    return grads, [p.grad.abs().sum().item() for p in net.parameters()]


def test_a_leaf_gradient_is_no_view_so_detach_in_place_works():
    (want, want_zero), (got, got_zero) = _optimizer_template_run(torch), _optimizer_template_run(vkml)
    for w_step, g_step in zip(want, got, strict=True):
        for w, g in zip(w_step, g_step, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7)
    assert got_zero == want_zero == [0.0] * 4


def _storage_run(m):
    """makemore part 2's look at a view's storage: ``a = torch.arange(18)``, ``a.view(3, 3, 2)``, ``a.storage()``."""
    a = m.arange(18)
    if m is torch:  # PyTorch warns of TypedStorage once a process: an earlier test may have had the warning
        torch.storage._reset_warn_typed_storage_removal()
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        viewed = a.view(3, 3, 2).transpose(0, 1).storage()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        floats = m.linspace(0, 1, 3)[1:].storage()
    return [
        str(viewed).splitlines()[:-1],
        str(viewed).splitlines()[-1].split("TypedStorage")[1].replace(m.__name__, "lib"),
        [len(viewed), viewed.size(), viewed[4], viewed.tolist() == a.tolist(), viewed.nbytes(), viewed.element_size()],
        [viewed.data_ptr() == a.data_ptr(), str(floats).splitlines()[:-1], list(floats)],
    ]


def test_tensor_storage_lists_the_owners_elements_as_pytorchs():
    assert _storage_run(vkml) == _storage_run(torch)
