"""The vkml gaps the generative and modern-vision programs (tests/programs/: wgan_gp, cyclegan, glow_flow,
stylegan2_pieces, convnext_swin, nerf_mlp) found, each checked against PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vkml


def _self_attention_grads(lib, x, places):
    """A gradient penalty through self-attention: the gradient of sdpa with ``places`` sharing one tensor
    (``"qkv"``: sdpa(x, x, x); ``"kv"``: sdpa(q, x, x)), recorded by create_graph=True and differentiated again."""
    x = lib.tensor(x, requires_grad=True)
    q = x if places == "qkv" else lib.tensor(np.flip(x.detach().numpy(), -1).copy(), requires_grad=True)
    out = lib.nn.functional.scaled_dot_product_attention(q, x, x)
    grads = lib.autograd.grad(out.pow(2).sum(), [x, q] if places == "kv" else [x], create_graph=True)
    first = [g.detach().numpy().copy() for g in grads]
    sum(g.pow(2).sum() for g in grads).backward()
    return first + [x.grad.numpy()] + ([q.grad.numpy()] if places == "kv" else [])


@pytest.mark.parametrize("places", ["qkv", "kv"])
def test_self_attention_gradient_with_create_graph_counts_each_use_once(places):
    """sdpa(x, x, x) under create_graph=True gave x's whole gradient once per place it was passed in (3x
    the first derivative, 9x the second): the recorded backward now hands it to the first place only."""
    x = np.random.default_rng(0).standard_normal((2, 5, 4)).astype(np.float32)
    got, expected = _self_attention_grads(vkml, x, places), _self_attention_grads(torch, x, places)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4)


def test_grad_and_backward_with_no_inputs_raise_as_pytorch():
    """``autograd.grad(y, [])`` returned () and ``y.backward(inputs=[])`` did nothing; PyTorch raises both."""
    x = vkml.ones(2, requires_grad=True)
    y = (x * 2).sum()
    with pytest.raises(RuntimeError, match=r"`inputs` argument to `grad\(\)` cannot be empty"):
        vkml.autograd.grad(y, [])
    with pytest.raises(RuntimeError, match=r"`inputs` argument to `backward\(\)` cannot be empty"):
        y.backward(inputs=[])
    assert x.grad is None
    y.backward(inputs=[x])
    assert x.grad.tolist() == [2.0, 2.0]


@pytest.mark.parametrize("how", ["view", "view_as", "reshape"])
def test_a_view_of_the_same_shape_is_a_new_view(how):
    """``x.view(x.shape)`` was ``x`` itself: a leaf, no grad_fn, and one gradient for all its uses. As in
    PyTorch it is a new view: not a leaf, ViewBackward0, its own gradient, and writes reach ``x``."""
    results = []
    for lib in (torch, vkml):
        x = lib.ones(2, 3, requires_grad=True)
        a, b = (getattr(x, how)(x) if how == "view_as" else getattr(x, how)(2, 3) for _ in range(2))
        ga, gb = lib.autograd.grad((a * 2 + b * 3).sum(), [a, b])
        base = lib.zeros(2, 3)
        alias = getattr(base, how)(base) if how == "view_as" else getattr(base, how)(2, 3)
        alias.add_(1)
        results.append([a is x, a.is_leaf, a.grad_fn.name(), ga.tolist(), gb.tolist(), base.tolist()])
    assert results[1] == results[0]


@pytest.mark.parametrize("optimizer", ["Adam", "AdamW"])
def test_adam_refuses_an_int_beta_as_pytorch(optimizer):
    """StyleGAN2's ``betas=(0, 0.99)`` was accepted; PyTorch's Adam and AdamW raise (floats or Tensors only)."""
    for lib in (torch, vkml):
        make = getattr(lib.optim, optimizer)
        with pytest.raises(ValueError, match="betas must be either both floats or both Tensors"):
            make([lib.nn.Parameter(lib.ones(2))], betas=(0, 0.99))
        make([lib.nn.Parameter(lib.ones(2))], betas=(0**1.0, 0.99))
        make([lib.nn.Parameter(lib.ones(2))], betas=(lib.tensor(0.0), lib.tensor(0.99)))
