"""Polynomial regression with a custom nn.Module of nn.Parameters and a hand-written SGD step
(no optimizer): the update under no_grad, gradients zeroed by hand."""

from __future__ import annotations

import math

from shim import nn, torch


class Polynomial(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Parameter(torch.randn(()))
        self.b = nn.Parameter(torch.randn(()))
        self.c = nn.Parameter(torch.randn(()))
        self.d = nn.Parameter(torch.randn(()))

    def forward(self, x):
        return self.a + self.b * x + self.c * x**2 + self.d * x**3

    def string(self):
        return f"y = {self.a.item():.4f} + {self.b.item():.4f} x + {self.c.item():.4f} x^2 + {self.d.item():.4f} x^3"


def build():
    torch.manual_seed(0)
    return Polynomial()


def train(model, steps=5):
    x = torch.linspace(-math.pi, math.pi, 200)
    y = torch.tanh(x) * 0.5 + 0.1 * x
    learning_rate = 1e-5
    losses = []
    for _ in range(steps):
        y_pred = model(x)
        loss = (y_pred - y).pow(2).sum()
        losses.append(loss.item())
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for param in model.parameters():
                param -= learning_rate * param.grad
    with torch.no_grad():
        final = torch.mean((model(x) - y) ** 2).item()
    return {"losses": losses, "mse": final, "params": [p.item() for p in model.parameters()]}


if __name__ == "__main__":
    model = build()
    print(train(model, steps=200))
    print(model.string())
