"""A model built on custom ``torch.autograd.Function``s, as a user extending autograd writes them.

Idioms: ``forward(ctx, ...)``/``backward(ctx, ...)`` static methods and ``Function.apply``;
``ctx.save_for_backward`` / ``ctx.saved_tensors`` (a None saved among tensors);
``ctx.needs_input_grad`` to skip gradients nobody asked for; the newer ``forward(...)`` +
``setup_context(ctx, inputs, output)`` form; a straight-through estimator returning ``None`` for a
non-tensor argument; two outputs with ``ctx.mark_non_differentiable(indices)`` and ``scatter_``
into ``grad.new_zeros(...)``; ``@once_differentiable`` from ``torch.autograd.function`` and the
error on differentiating it twice; ``torch.autograd.gradcheck`` in float64 (``eps``, ``atol``) and
``raise_exception=False`` on a wrong backward; a frozen weight (``requires_grad_(False)``) seen
through ``needs_input_grad``.
"""

from __future__ import annotations

import numpy as np
from shim import F, nn, optim, torch

once_differentiable = torch.autograd.function.once_differentiable
N, FEATURES, HIDDEN, CLASSES, K = 16, 6, 10, 3, 4
SEEN_NEEDS = []


class AffineFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias=None):
        ctx.save_for_backward(x, weight, bias)
        out = x @ weight.t()
        if bias is not None:
            out = out + bias
        return out

    @staticmethod
    def backward(ctx, grad_out):
        x, weight, bias = ctx.saved_tensors
        SEEN_NEEDS.append(tuple(ctx.needs_input_grad))
        grad_x = grad_w = grad_b = None
        if ctx.needs_input_grad[0]:
            grad_x = grad_out @ weight
        if ctx.needs_input_grad[1]:
            grad_w = grad_out.t() @ x
        if bias is not None and ctx.needs_input_grad[2]:
            grad_b = grad_out.sum(0)
        return grad_x, grad_w, grad_b


class QuantizeSTE(torch.autograd.Function):
    """Round to a grid going forward, pass the gradient straight through going back."""

    @staticmethod
    def forward(ctx, x, step):
        return torch.round(x / step) * step

    @staticmethod
    def backward(ctx, grad_out):
        return grad_out, None


class SoftClamp(torch.autograd.Function):
    @staticmethod
    def forward(x, low, high):
        return x.clamp(low, high)

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, low, high = inputs
        ctx.save_for_backward((x > low) & (x < high))

    @staticmethod
    def backward(ctx, grad_out):
        (inside,) = ctx.saved_tensors
        return grad_out * inside.to(grad_out.dtype) + 0.01 * grad_out * (~inside).to(grad_out.dtype), None, None


class TopK(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        values, indices = x.topk(k, dim=1)
        ctx.mark_non_differentiable(indices)
        ctx.save_for_backward(indices)
        ctx.input_shape = x.shape
        return values, indices

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_values, grad_indices):
        (indices,) = ctx.saved_tensors
        grad = grad_values.new_zeros(ctx.input_shape)
        grad.scatter_(1, indices, grad_values)
        return grad, None


class WrongSquare(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * x  # should be 2 * x


class CustomLinear(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(out_features, in_features))
        self.bias = nn.Parameter(torch.empty(out_features)) if bias else None
        bound = 1 / in_features**0.5
        nn.init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            nn.init.uniform_(self.bias, -bound, bound)

    def forward(self, x):
        return AffineFn.apply(x, self.weight, self.bias)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = CustomLinear(FEATURES, HIDDEN)
        self.project = CustomLinear(HIDDEN, HIDDEN, bias=False)
        self.head = nn.Linear(K, CLASSES)

    def forward(self, x):
        h = SoftClamp.apply(self.embed(x), -1.0, 1.0)
        h = QuantizeSTE.apply(h, 0.125)
        values, indices = TopK.apply(self.project(h), K)
        return self.head(values), indices


def build():
    torch.manual_seed(0)
    return Net()


def make_data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 1, size=(N, FEATURES)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0.5)
    return torch.from_numpy(x), torch.from_numpy(y)


def checks():
    """gradcheck in float64, a wrong backward caught, and a twice-differentiated once_differentiable."""
    gen = np.random.default_rng(1)
    x = torch.tensor(gen.normal(size=(3, 4)), dtype=torch.float64, requires_grad=True)
    w = torch.tensor(gen.normal(size=(2, 4)), dtype=torch.float64, requires_grad=True)
    b = torch.tensor(gen.normal(size=(2,)), dtype=torch.float64, requires_grad=True)
    affine_ok = torch.autograd.gradcheck(AffineFn.apply, (x, w, b), eps=1e-6, atol=1e-4)
    topk_ok = torch.autograd.gradcheck(lambda t: TopK.apply(t, 2)[0], (x,))
    wrong_ok = torch.autograd.gradcheck(WrongSquare.apply, (x,), raise_exception=False)
    values, indices = TopK.apply(x, 2)
    (g,) = torch.autograd.grad(values.pow(2).sum(), x, create_graph=True)
    try:
        g.sum().backward()
        twice = "no error"
    except RuntimeError as error:
        twice = "once_differentiable" in str(error)
    return [affine_ok, topk_ok, wrong_ok, twice, indices.requires_grad, values.requires_grad]


def train(model, steps=4):
    x, y = make_data()
    optimizer = optim.Adam(model.parameters(), lr=0.02)
    losses = []
    SEEN_NEEDS.clear()
    for step in range(steps):
        if step == steps - 1:
            model.project.weight.requires_grad_(False)
        optimizer.zero_grad()
        logits, _ = model(x)
        loss = F.cross_entropy(logits, y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    with torch.no_grad():
        logits, indices = model(x)
    return {
        "losses": losses,
        "needs": [list(n) for n in SEEN_NEEDS],
        "frozen_grad": model.project.weight.grad is None,
        "indices": indices[:4].tolist(),
        "accuracy": (logits.argmax(1) == y).float().mean().item(),
        "checks": checks(),
    }


if __name__ == "__main__":
    print(train(build(), steps=20))
