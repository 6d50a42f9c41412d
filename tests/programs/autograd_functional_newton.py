"""The ``torch.autograd.functional`` API and the "Jacobians, Hessians, hvp, vhp, and more" tutorial's
``torch.func`` counterparts, at a tiny size on synthetic data: a small regression net trained by
truncated Newton steps (conjugate gradient on Hessian-vector products) over its flattened parameters.

Idioms: ``torch.autograd.functional.jacobian`` (a tuple of inputs, ``create_graph``, ``vectorize=True``
and ``strategy="forward-mode"``), ``hessian`` (``vectorize=True``), ``vjp``, ``jvp``, ``hvp`` and
``vhp`` with their ``(output, product)`` pairs; ``torch.func.jacrev``/``jacfwd``/``hessian`` agreeing
with them; ``torch.func.functional_call`` over a dict of flat-parameter views built by ``split`` and
``view``; ``torch.nn.utils.parameters_to_vector`` / ``vector_to_parameters``; a Newton-CG loop with
``torch.dot`` and a damping term, the step applied under ``torch.no_grad()``.
"""

from __future__ import annotations

import math

from shim import nn, torch

DAMPING = 1.0
CG_ITERS = 4
functional = torch.autograd.functional


def data(n=12):
    x = torch.sin(torch.arange(n * 3, dtype=torch.float32) * 0.37).view(n, 3)
    y = (x[:, :1] * 0.8 - x[:, 1:2] * x[:, 2:3] + 0.1).tanh()
    return x, y


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 5)
        self.fc2 = nn.Linear(5, 1)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x)))


def build():
    torch.manual_seed(0)
    return Net()


def unflatten(model, flat):
    """A ``{name: view}`` dict over the flat parameter vector, for ``functional_call``."""
    names = [name for name, _ in model.named_parameters()]
    shapes = [p.shape for p in model.parameters()]
    pieces = flat.split([math.prod(s) for s in shapes])
    return {name: piece.view(shape) for name, piece, shape in zip(names, pieces, shapes)}


def conjugate_gradient(hvp_fn, g, iters):
    """Solve ``H d = g`` approximately, one Hessian-vector product per iteration."""
    d = torch.zeros_like(g)
    r = g.clone()
    p = r.clone()
    rs = torch.dot(r, r)
    for _ in range(iters):
        hp = hvp_fn(p) + DAMPING * p
        alpha = rs / torch.dot(p, hp)
        d = d + alpha * p
        r = r - alpha * hp
        rs_new = torch.dot(r, r)
        p = r + (rs_new / rs) * p
        rs = rs_new
    return d


def probes(x):
    """The tutorial's small functions through every entry of the functional API."""
    w = torch.cos(torch.arange(3, dtype=torch.float32))
    v = torch.ones(3) * 0.5

    def f(a, b):
        return (a.exp() * b).sin()

    def scalar(a):
        return (a.pow(3) * w).sum() + (a[0] * a[1]).tanh()

    a = x[0]
    jac_a, jac_b = functional.jacobian(f, (a, w))
    jac_vec = functional.jacobian(lambda t: f(t, w), a, vectorize=True)
    jac_fwd = functional.jacobian(lambda t: f(t, w), a, vectorize=True, strategy="forward-mode")
    hess = functional.hessian(scalar, a)
    hess_vec = functional.hessian(scalar, a, vectorize=True)
    out_vjp, vjp = functional.vjp(lambda t: f(t, w), a, v)
    out_jvp, jvp = functional.jvp(lambda t: f(t, w), a, v)
    out_hvp, hvp = functional.hvp(scalar, a, v)
    out_vhp, vhp = functional.vhp(scalar, a, v)
    jacrev = torch.func.jacrev(f, argnums=(0, 1))(a, w)
    jacfwd = torch.func.jacfwd(lambda t: f(t, w))(a)
    hess_func = torch.func.hessian(scalar)(a)
    # create_graph: the Jacobian's trace is differentiable in the input
    a_leaf = a.clone().requires_grad_(True)
    jac_graph = functional.jacobian(lambda t: f(t, w), a_leaf, create_graph=True)
    (grad_trace,) = torch.autograd.grad(jac_graph.diagonal().sum(), a_leaf)
    return {
        "jacobian": [jac_a.sum().item(), jac_b.abs().sum().item(), jac_vec.sum().item(), jac_fwd.sum().item()],
        "jac_func": [jacrev[0].sum().item(), jacrev[1].sum().item(), jacfwd.sum().item()],
        "hessian": [hess.sum().item(), hess_vec.trace().item(), hess_func.sum().item()],
        "products": [x.sum().item() for x in (out_vjp, vjp, out_jvp, jvp, out_hvp, hvp, out_vhp, vhp)],
        "grad_trace": grad_trace.tolist(),
    }


def train(model, steps=3):
    x, y = data()
    criterion = nn.MSELoss()
    flat = nn.utils.parameters_to_vector(model.parameters()).detach()

    def loss_of(theta):
        return criterion(torch.func.functional_call(model, unflatten(model, theta), (x,)), y)

    losses, norms = [], []
    for step in range(steps):
        loss, grad = functional.vjp(loss_of, flat, torch.tensor(1.0))
        direction = conjugate_gradient(lambda p, at=flat: functional.hvp(loss_of, at, p)[1], grad, CG_ITERS)
        with torch.no_grad():
            flat = flat - direction
        losses.append(loss.item())
        norms.append(grad.norm().item())
        print(f"step {step}: loss {loss.item():.5f} |grad| {norms[-1]:.5f}")
    nn.utils.vector_to_parameters(flat, model.parameters())
    final = criterion(model(x), y).item()
    return {"losses": losses, "grad_norms": norms, "final": final, **probes(x)}


if __name__ == "__main__":
    print(train(build()))
