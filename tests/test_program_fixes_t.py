"""The gaps the d2l.ai part-two programs (tests/test_programs_t.py) found, each against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vkml
import vkml.debug

W0 = np.array([[0.5], [-1.0], [0.25]], dtype=np.float32)
X = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(4, 3)


def _adam_from_scratch(m, steps, counts=None):
    """The book's ``adam`` on a linear regression: states written by ``v[:] = ...`` and the parameters by
    ``p[:] -= ...`` under ``torch.no_grad()``; per step the loss, and (``counts``) vkml's work counters."""
    w = m.tensor(W0, requires_grad=True)
    b = m.zeros(1, requires_grad=True)
    states = [(m.zeros((3, 1)), m.zeros((3, 1))), (m.zeros(1), m.zeros(1))]
    X_, y = m.tensor(X), m.tensor(X.sum(1, keepdims=True))
    hyperparams = {"lr": 0.1, "t": 1}
    losses = []
    for _ in range(steps):
        if counts is not None:
            vkml.debug.reset_counters()
        loss = ((m.matmul(X_, w) + b - y) ** 2 / 2).mean()
        loss.backward()
        for p, (v, s) in zip([w, b], states, strict=True):
            with m.no_grad():
                v[:] = 0.9 * v + (1 - 0.9) * p.grad
                s[:] = 0.999 * s + (1 - 0.999) * m.square(p.grad)
                v_bias_corr = v / (1 - 0.9 ** hyperparams["t"])
                s_bias_corr = s / (1 - 0.999 ** hyperparams["t"])
                p[:] -= hyperparams["lr"] * v_bias_corr / (m.sqrt(s_bias_corr) + 1e-6)
            p.grad.data.zero_()
        hyperparams["t"] += 1
        losses.append(loss.item())
        if counts is not None:
            counts.append(dict(vkml.debug.counters()))
    return losses, w, b


@pytest.mark.parametrize("update", ["slice", "data", "sub_"])
def test_a_parameter_written_through_a_slice_under_no_grad_stays_a_leaf(update):
    """d2l's from-scratch momentum, AdaGrad, RMSProp, Adadelta and Adam write ``p[:] -= lr * v`` under
    ``no_grad``: in vkml the parameter took the history of the re-read ``p[:]`` (a ``SliceBackward0``), and the
    next step's backward raised "Trying to backward through the graph a second time"."""
    results = []
    for m in (torch, vkml):
        w = m.tensor(W0, requires_grad=True)
        x = m.tensor(X)
        out = []
        for _ in range(3):
            loss = (m.matmul(x, w) ** 2).mean()
            loss.backward()
            with m.no_grad():
                if update == "slice":
                    w[:] -= 0.1 * w.grad
                elif update == "data":
                    w[:] = w.data - 0.1 * w.grad
                else:
                    w[1:].sub_(0.1 * w.grad[1:])
            w.grad.zero_()
            out.append([w.grad_fn is None, w.is_leaf, w.requires_grad])
        results.append([out, [loss.item(), *w.detach().numpy().reshape(-1).tolist()]])
    assert results[1][0] == results[0][0]
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-6)


def test_a_leaf_copying_a_value_with_history_under_no_grad_keeps_no_history():
    """``with torch.no_grad(): w.copy_(y)`` and ``w[:] = y`` for a ``y`` that requires grad: PyTorch's ``w``
    stays a leaf without a ``grad_fn``."""
    results = []
    for m in (torch, vkml):
        w = m.zeros(3, requires_grad=True)
        y = m.tensor([1.0, 2.0, 3.0], requires_grad=True) * 2
        with m.no_grad():
            w.copy_(y)
            first = [w.grad_fn is None, w.is_leaf]
            w[:2] = y[1:]
        results.append(first + [w.grad_fn is None, w.is_leaf, w.detach().tolist()])
    assert results[1] == results[0]


def test_adam_from_scratch_matches_pytorch_and_keeps_its_states():
    """The book's Adam from scratch: the same losses and parameters as PyTorch, and each step's graph the
    same size: the moments written in place under ``no_grad`` are kept when a realize computes them, not
    recomputed from every earlier step's (before, each step lowered new kernels over a chain as long as the
    training so far, and took seconds by step 20)."""
    counts = []
    got, w, b = _adam_from_scratch(vkml, 8, counts)
    want, w_t, b_t = _adam_from_scratch(torch, 8)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(w.detach().numpy(), w_t.detach().numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(b.detach().numpy(), b_t.detach().numpy(), rtol=1e-5, atol=1e-7)
    # after the first steps (zeros, then stored states) every step is the same graph: replayed, nothing lowered
    for step in counts[3:]:
        assert step.get("templates_lowered", 0) == 0, counts
        assert step.get("plan_replays", 0) >= 1, counts
    assert len({step.get("dispatches") for step in counts[3:]}) == 1, counts


def test_a_buffer_filled_in_a_loop_under_no_grad_is_still_one_kernel():
    """The state nodes are only a tensor's current value: ``out[i] = ...`` in a loop under ``no_grad`` keeps
    its earlier partial values inlined, so reading ``out`` is one dispatch (and PyTorch's values)."""
    results = []
    for m in (torch, vkml):
        x = m.tensor(X)
        with m.no_grad():
            out = m.zeros(4, 3)
            for i in range(4):
                out[i] = x[i] * (i + 1)
            if m is vkml:
                vkml.debug.reset_counters()
            results.append(out.tolist())
            if m is vkml:
                assert vkml.debug.counters()["dispatches"] == 1
    assert results[1] == results[0]


def test_lr_scheduler_classes_name_their_module_as_pytorchs_do():
    """d2l's ``train`` tells a built-in scheduler from a hand-written one by ``scheduler.__module__ ==
    lr_scheduler.__name__``: vkml's classes said ``vkml.optim.lr_scheduler.decay`` (the file), so
    ``MultiStepLR`` was called as a function (TypeError)."""
    names = [n for n in torch.optim.lr_scheduler.__all__ if isinstance(getattr(torch.optim.lr_scheduler, n), type)]
    for m in (torch, vkml):
        module = m.optim.lr_scheduler
        assert {n: getattr(module, n).__module__ == module.__name__ for n in names} == dict.fromkeys(names, True)
        assert module._LRScheduler.__module__ == module.__name__
