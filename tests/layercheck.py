"""Shared check for the layer tests: a vkml function against torch's, forward and every input's gradient,
on the CPU backend against PyTorch (a tolerance: summation orders differ) and on Vulkan against the CPU
backend (bit for bit)."""

from __future__ import annotations

import numpy as np
import torch
from optest import assert_same_bits

import vkml

CPU = vkml.device("cpu")


def run(fn, arrays, device, upstream_seed: int = 5, grad=None):
    """fn(*tensors) on ``device``; returns (outputs, gradients of the float inputs) as numpy arrays.

    ``grad`` lists which inputs get a gradient (default: every float array)."""
    grad = [a.dtype.kind == "f" for a in arrays] if grad is None else grad
    tensors = [vkml.tensor(a, device=device, requires_grad=g) for a, g in zip(arrays, grad)]
    out = fn(*tensors)
    outs = out if isinstance(out, tuple) else (out,)
    first = outs[0]
    up = np.random.default_rng(upstream_seed).standard_normal(tuple(first.shape)).astype(np.float32)
    if any(grad):
        first.backward(vkml.tensor(up, device=device))
    grads = [t.grad for t, g in zip(tensors, grad) if g]
    vkml.realize(*outs, *grads)
    return [o.numpy() for o in outs], [g.numpy() for g in grads]


def run_torch(fn, arrays, upstream_seed: int = 5, grad=None):
    grad = [a.dtype.kind == "f" for a in arrays] if grad is None else grad
    tensors = [torch.tensor(a, requires_grad=g) for a, g in zip(arrays, grad)]
    out = fn(*tensors)
    outs = out if isinstance(out, tuple) else (out,)
    up = np.random.default_rng(upstream_seed).standard_normal(tuple(outs[0].shape)).astype(np.float32)
    if any(grad):
        outs[0].backward(torch.tensor(up))
    return [o.detach().numpy() for o in outs], [t.grad.numpy() for t, g in zip(tensors, grad) if g]


def check(vk_fn, pt_fn, arrays, gpu=None, rtol=1e-5, atol=1e-5, grad=None):
    """vkml's forward and gradients match torch's on the CPU backend, and ``gpu``'s bits equal the CPU's."""
    outs, grads = run(vk_fn, arrays, CPU, grad=grad)
    want_outs, want_grads = run_torch(pt_fn, arrays, grad=grad)
    assert len(outs) == len(want_outs) and len(grads) == len(want_grads)
    for k, (a, b) in enumerate(zip(outs, want_outs)):
        assert a.shape == b.shape, f"output {k}: shape {a.shape} != torch's {b.shape}"
        if a.dtype.kind in "iub":
            np.testing.assert_array_equal(a, b, err_msg=f"output {k}")
        else:
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=f"output {k}")
    for k, (a, b) in enumerate(zip(grads, want_grads)):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=f"gradient {k}")
    if gpu is not None:
        gpu_outs, gpu_grads = run(vk_fn, arrays, gpu, grad=grad)
        for k, (a, b) in enumerate(zip(gpu_outs, outs)):
            assert_same_bits(a, b, f"output {k} on {gpu.name}")
        for k, (a, b) in enumerate(zip(gpu_grads, grads)):
            assert_same_bits(a, b, f"gradient {k} on {gpu.name}")
    return outs, grads
