"""The official tutorial "Learning PyTorch with Examples", at a tiny size: sin(x) fitted by a cubic
four ways. With tensors and gradients written out by hand (scalar sums of `2.0 * (y_pred - y)`,
`torch.linspace`, `torch.randn(())`, in-place `a -= lr * grad_a` on plain tensors); with a custom autograd Function (LegendrePolynomial3 saving its
input by `ctx.save_for_backward`); with `nn.Sequential(nn.Linear(3, 1), nn.Flatten(0, 1))` over
`x.unsqueeze(-1).pow(p)` trained by `optim.RMSprop`; and the "dynamic net" whose forward draws
`random.randint(4, 5)` (Python's generator, seeded here) and reuses one parameter for every extra
power, trained by SGD with momentum. `build()` gives the Sequential model, the dynamic net and part one's
four starting tensors (as buffers) in one `nn.ModuleDict`."""

from __future__ import annotations

import math
import random

from shim import nn, optim, torch

SEED = 0


class LegendrePolynomial3(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return 0.5 * (5 * input**3 - 3 * input)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input**2 - 1)


class DynamicNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Parameter(torch.randn(()))
        self.b = torch.nn.Parameter(torch.randn(()))
        self.c = torch.nn.Parameter(torch.randn(()))
        self.d = torch.nn.Parameter(torch.randn(()))
        self.e = torch.nn.Parameter(torch.randn(()))

    def forward(self, x):
        y = self.a + self.b * x + self.c * x**2 + self.d * x**3
        for exp in range(4, random.randint(4, 6)):
            y = y + self.e * x**exp
        return y

    def string(self):
        return f"y = {self.a.item()} + {self.b.item()} x + {self.c.item()} x^2 + {self.d.item()} x^3 + {self.e.item()} x^4 ? + {self.e.item()} x^5 ?"


def build():
    torch.manual_seed(SEED)
    model = nn.ModuleDict({"sequential": nn.Sequential(nn.Linear(3, 1), nn.Flatten(0, 1)), "dynamic": DynamicNet()})
    # part one's four tensors, drawn as the tutorial draws them, kept as buffers so that a state_dict carries them
    tensors = nn.Module()
    for name in "abcd":
        tensors.register_buffer(name, torch.randn((), dtype=torch.float))
    model["tensors"] = tensors
    return model


def _tensors(x, y, steps, a, b, c, d):
    """Part one: forward and backward passes written out by hand."""
    learning_rate = 1e-6
    losses = []
    for _ in range(steps):
        y_pred = a + b * x + c * x**2 + d * x**3
        loss = (y_pred - y).pow(2).sum().item()
        losses.append(loss)
        grad_y_pred = 2.0 * (y_pred - y)
        grad_a = grad_y_pred.sum()
        grad_b = (grad_y_pred * x).sum()
        grad_c = (grad_y_pred * x**2).sum()
        grad_d = (grad_y_pred * x**3).sum()
        a -= learning_rate * grad_a
        b -= learning_rate * grad_b
        c -= learning_rate * grad_c
        d -= learning_rate * grad_d
    return losses, [a.item(), b.item(), c.item(), d.item()]


def _custom_function(x, y, steps):
    a = torch.full((), 0.0, requires_grad=True)
    b = torch.full((), -1.0, requires_grad=True)
    c = torch.full((), 0.0, requires_grad=True)
    d = torch.full((), 0.3, requires_grad=True)
    learning_rate = 5e-6
    losses = []
    for _ in range(steps):
        P3 = LegendrePolynomial3.apply
        y_pred = a + b * P3(c + d * x)
        loss = (y_pred - y).pow(2).sum()
        losses.append(loss.item())
        loss.backward()
        with torch.no_grad():
            a -= learning_rate * a.grad
            b -= learning_rate * b.grad
            c -= learning_rate * c.grad
            d -= learning_rate * d.grad
            a.grad = None
            b.grad = None
            c.grad = None
            d.grad = None
    return losses, [a.item(), b.item(), c.item(), d.item()]


def train(model, steps=4):
    torch.manual_seed(SEED)
    x = torch.linspace(-math.pi, math.pi, 200)
    y = torch.sin(x)
    start = model["tensors"]
    tensor_losses, tensor_coefs = _tensors(
        x, y, steps, start.a.clone(), start.b.clone(), start.c.clone(), start.d.clone()
    )
    function_losses, function_coefs = _custom_function(x, y, steps)

    p = torch.tensor([1, 2, 3])
    xx = x.unsqueeze(-1).pow(p)
    loss_fn = torch.nn.MSELoss(reduction="sum")
    sequential = model["sequential"]
    optimizer = torch.optim.RMSprop(sequential.parameters(), lr=1e-3)
    losses = []
    for _ in range(steps):
        y_pred = sequential(xx)
        loss = loss_fn(y_pred, y)
        losses.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    linear_layer = sequential[0]
    coefs = [
        linear_layer.bias.item(),
        *linear_layer.weight[:, 0].tolist(),
        *linear_layer.weight[:, 1:].flatten().tolist(),
    ]

    random.seed(SEED)
    dynamic = model["dynamic"]
    criterion = torch.nn.MSELoss(reduction="sum")
    dyn_optimizer = optim.SGD(dynamic.parameters(), lr=1e-8, momentum=0.9)
    dynamic_losses = []
    for _ in range(steps):
        y_pred = dynamic(x)
        loss = criterion(y_pred, y)
        dynamic_losses.append(loss.item())
        dyn_optimizer.zero_grad()
        loss.backward()
        dyn_optimizer.step()
    return {
        "losses": losses,
        "coefs": coefs,
        "tensor_losses": tensor_losses,
        "tensor_coefs": tensor_coefs,
        "function_losses": function_losses,
        "function_coefs": function_coefs,
        "dynamic_losses": dynamic_losses,
        "dynamic_coefs": [p.item() for p in dynamic.parameters()],
        "dynamic_string_ok": dynamic.string().startswith("y = "),
    }


if __name__ == "__main__":
    print(train(build(), steps=50))
