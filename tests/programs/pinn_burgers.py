"""A physics-informed neural network for the viscous Burgers equation, as PINN reference code writes it.

Its idioms: collocation points as leaf tensors made with ``requires_grad=True`` (and by
``.requires_grad_()`` on slices); a tanh MLP built from a list of layer widths into an
``nn.ModuleList`` with ``nn.init.xavier_normal_`` weights; the residual
``u_t + u * u_x - nu * u_xx`` from ``torch.autograd.grad(u, x, grad_outputs=torch.ones_like(u),
retain_graph=True, create_graph=True)[0]``, differentiated again for ``u_xx``; a loss of the boundary
and initial MSE plus the residual's mean square; Adam for a few steps, then ``optim.LBFGS`` with
``line_search_fn="strong_wolfe"`` and a closure that zeroes the gradients, calls ``backward()`` and
returns the loss; the relative L2 error ``torch.linalg.norm(u - u_ref, 2) / torch.linalg.norm(u_ref, 2)``
on a grid evaluated under ``torch.no_grad()``."""

from __future__ import annotations

import math

import numpy as np
from shim import nn, optim, torch

NU = 0.01 / math.pi
LBFGS_ITERATIONS = 4
DEVICE = "cpu"


class PhysicsInformedNN(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.activation = nn.Tanh()
        self.linears = nn.ModuleList([nn.Linear(layers[i], layers[i + 1]) for i in range(len(layers) - 1)])
        for linear in self.linears:
            nn.init.xavier_normal_(linear.weight.data, gain=1.0)
            nn.init.zeros_(linear.bias.data)

    def forward(self, x, t):
        a = torch.cat([x, t], dim=1)
        for linear in self.linears[:-1]:
            a = self.activation(linear(a))
        return self.linears[-1](a)


def residual(model, x, t):
    u = model(x, t)
    u_t = torch.autograd.grad(u, t, grad_outputs=torch.ones_like(u), retain_graph=True, create_graph=True)[0]
    u_x = torch.autograd.grad(u, x, grad_outputs=torch.ones_like(u), retain_graph=True, create_graph=True)[0]
    u_xx = torch.autograd.grad(u_x, x, grad_outputs=torch.ones_like(u_x), retain_graph=True, create_graph=True)[0]
    return u_t + u * u_x - NU * u_xx


def make_points(n_boundary=12, n_collocation=24, seed=0):
    rng = np.random.default_rng(seed)
    x0 = rng.uniform(-1, 1, (n_boundary, 1))
    initial = np.hstack([x0, np.zeros_like(x0), -np.sin(np.pi * x0)])
    tb = rng.uniform(0, 1, (n_boundary, 1))
    side = np.where(rng.random((n_boundary, 1)) < 0.5, -1.0, 1.0)
    boundary = np.hstack([side, tb, np.zeros_like(tb)])
    data = np.vstack([initial, boundary]).astype(np.float32)
    collocation = np.hstack([rng.uniform(-1, 1, (n_collocation, 1)), rng.uniform(0, 1, (n_collocation, 1))])
    return torch.from_numpy(data), torch.tensor(collocation, dtype=torch.float32)


def build():
    torch.manual_seed(1234)
    return PhysicsInformedNN([2, 10, 10, 1])


def train(model, steps=3):
    device = torch.device(DEVICE)
    model = model.to(device)
    data, collocation = make_points()
    x_u = data[:, 0:1].to(device)
    t_u = data[:, 1:2].to(device)
    u_true = data[:, 2:3].to(device)
    x_f = torch.tensor(collocation[:, 0:1], requires_grad=True, device=device)
    t_f = collocation[:, 1:2].clone().to(device).requires_grad_()
    mse = nn.MSELoss()

    def loss_fn():
        loss_u = mse(model(x_u, t_u), u_true)
        f = residual(model, x_f, t_f)
        loss_f = torch.mean(f**2)
        return loss_u + loss_f, loss_u, loss_f

    record = {"losses": [], "loss_u": [], "loss_f": []}
    adam = optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(steps):
        adam.zero_grad()
        loss, loss_u, loss_f = loss_fn()
        loss.backward()
        adam.step()
        record["losses"].append(loss.item())
        record["loss_u"].append(loss_u.item())
        record["loss_f"].append(loss_f.item())

    lbfgs = optim.LBFGS(
        model.parameters(),
        lr=1.0,
        max_iter=LBFGS_ITERATIONS,
        max_eval=LBFGS_ITERATIONS * 5 // 4,
        history_size=10,
        tolerance_grad=1e-7,
        tolerance_change=1.0 * np.finfo(float).eps,
        line_search_fn="strong_wolfe",
    )
    evaluations = []

    def closure():
        lbfgs.zero_grad()
        loss, _, _ = loss_fn()
        loss.backward()
        evaluations.append(loss.item())
        return loss

    final = lbfgs.step(closure)
    record["lbfgs_first"] = float(final)
    record["lbfgs_evaluations"] = evaluations

    with torch.no_grad():
        xs = torch.linspace(-1, 1, 9, device=device)
        ts = torch.linspace(0, 1, 5, device=device)
        grid_x, grid_t = torch.meshgrid(xs, ts, indexing="ij")
        u = model(grid_x.reshape(-1, 1), grid_t.reshape(-1, 1))
        u_ref = -torch.sin(math.pi * grid_x.reshape(-1, 1)) * torch.exp(-grid_t.reshape(-1, 1))
        record["relative_l2"] = (torch.linalg.norm(u - u_ref, 2) / torch.linalg.norm(u_ref, 2)).item()
    return record


if __name__ == "__main__":
    print(train(build()))
