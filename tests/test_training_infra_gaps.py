"""Gaps the training-infrastructure programs (tests/test_programs_infra.py) found, each against PyTorch."""

from __future__ import annotations

import importlib

import pytest
import torch

import vkml


def _square_function(lib):
    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @lib.autograd.function.once_differentiable
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 2 * x * grad

    return Square


@pytest.mark.parametrize("lib", [torch, vkml], ids=["torch", "vkml"])
def test_once_differentiable_backward_once_and_error_twice(lib):
    square = _square_function(lib)
    x = lib.tensor([1.5, -2.0], requires_grad=True)
    (g,) = lib.autograd.grad(square.apply(x).sum(), x)
    assert g.tolist() == [3.0, -4.0] and not g.requires_grad
    # the gradient reaching backward depends on x, so its result would be differentiated again
    (g,) = lib.autograd.grad(square.apply(x).pow(2).sum(), x, create_graph=True)
    assert g.requires_grad and g.tolist() == [13.5, -32.0]
    with pytest.raises(RuntimeError, match="differentiate twice a function that was marked with @once_differentiable"):
        g.sum().backward()
    assert x.grad is None  # the failed backward wrote nothing


def test_autograd_function_module_is_importable():
    module = importlib.import_module("vkml.autograd.function")
    assert module is vkml.autograd.function
    assert module.Function is vkml.autograd.Function and module.FunctionCtx is vkml.autograd.FunctionCtx
    assert issubclass(module.InplaceFunction, vkml.autograd.Function)
    assert module.InplaceFunction(inplace=True).inplace is True
