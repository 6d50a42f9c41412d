"""The autograd parts of "Learning PyTorch with Examples" and the autograd tutorial: a third-order
polynomial fitted through a custom torch.autograd.Function (the tutorial's LegendrePolynomial3),
backward with a gradient and retain_graph, accumulated .grad, grad.zero_(), detach, no_grad,
requires_grad_ and torch.autograd.grad."""

from __future__ import annotations

import math

from shim import nn, torch


class LegendrePolynomial3(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return 0.5 * (5 * input**3 - 3 * input)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input**2 - 1)


class Legendre(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Parameter(torch.full((), 0.0))
        self.b = nn.Parameter(torch.full((), -1.0))
        self.c = nn.Parameter(torch.full((), 0.0))
        self.d = nn.Parameter(torch.full((), 0.3))

    def forward(self, x):
        return self.a + self.b * LegendrePolynomial3.apply(self.c + self.d * x)


def build():
    torch.manual_seed(0)
    return Legendre()


def train(model, steps=5):
    x = torch.linspace(-math.pi, math.pi, 100)
    y = torch.sin(x)
    learning_rate = 5e-4
    losses = []
    for _ in range(steps):
        loss = (model(x) - y).pow(2).sum()
        losses.append(loss.item())
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= learning_rate * p.grad
                p.grad = None

    # the autograd tutorial: gradients accumulate until zeroed; retain_graph allows a second backward
    inp = torch.eye(4, 5, requires_grad=True)
    out = (inp + 1).pow(2).t()
    out.backward(torch.ones_like(out), retain_graph=True)
    first = inp.grad.clone()
    out.backward(torch.ones_like(out), retain_graph=True)
    accumulated = inp.grad.clone()
    inp.grad.zero_()
    out.backward(torch.ones_like(out))
    w = torch.randn(5, 3).requires_grad_()
    z = torch.matmul(torch.ones(5), w)
    (dz_dw,) = torch.autograd.grad(z.sum(), w)
    return {
        "losses": losses,
        "first": first.sum().item(),
        "accumulated": accumulated.sum().item(),
        "after_zero": inp.grad.sum().item(),
        "detached": z.detach().requires_grad,
        "grad_w": dz_dw.sum().item(),
    }


if __name__ == "__main__":
    print(train(build(), steps=200))
