"""Three small models of scientific and probabilistic code, written as tutorials and reference
repositories write them by hand: a neural ODE, Gaussian-process regression and a Bayes-by-backprop layer.

The neural ODE (``MODEL = "node"``): a dynamics ``nn.Module`` ``f(t, y)`` taking the time as a tensor
concatenated to the state, integrated by fixed-step RK4 (``k1 .. k4``, ``y + dt / 6 * (k1 + 2 * k2 + 2 *
k3 + k4)``) or Euler (``SOLVER``) over ``torch.linspace`` times, the trajectory stacked with
``torch.stack`` and fitted to a spiral with an L1 loss, gradients through the whole unrolled solve
(no adjoint), RMSprop.

The GP (``MODEL = "gp"``): an RBF kernel ``outputscale * torch.exp(-0.5 * torch.cdist(x1, x2).pow(2) /
lengthscale ** 2)`` with ``log_lengthscale``, ``log_outputscale`` and ``log_noise`` parameters,
``torch.linalg.cholesky(K + noise * torch.eye(n))``, ``alpha = torch.cholesky_solve(y, L)``, the
negative log marginal likelihood ``0.5 * y.T @ alpha + torch.log(torch.diagonal(L)).sum() + 0.5 * n *
log(2 pi)``, Adam on the log-parameters, and the predictive mean and variance through
``torch.linalg.solve_triangular(L, K_s, upper=False)``.

The Bayesian layer (``MODEL = "bayes"``): weight and bias means and ``rho`` parameters, ``sigma =
F.softplus(rho)``, a sample ``mu + sigma * torch.randn_like(sigma)`` (a fixed epsilon when
``FIXED_NOISE``), the KL term ``torch.distributions.kl_divergence(Normal(mu, sigma), Normal(0, 1)).sum()``
scaled by the batch count, a Gaussian likelihood by ``Normal(pred, 0.1).log_prob(y)``, Adam."""

from __future__ import annotations

import math

import numpy as np
from shim import F, distributions, nn, optim, torch

MODEL = "node"  # or "gp", "bayes"
SOLVER = "rk4"  # or "euler"
FIXED_NOISE = False
DEVICE = "cpu"


# ---------------------------------------------------------------- neural ODE
class ODEFunc(nn.Module):
    def __init__(self, dim=2, hidden=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim + 1, hidden), nn.Tanh(), nn.Linear(hidden, dim))
        for m in self.net.modules():
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, mean=0, std=0.1)
                nn.init.constant_(m.bias, val=0)

    def forward(self, t, y):
        t_col = t.expand(y.shape[0], 1)
        return self.net(torch.cat([y, t_col], dim=1))


def rk4_step(func, t, dt, y):
    k1 = func(t, y)
    k2 = func(t + dt / 2, y + dt * k1 / 2)
    k3 = func(t + dt / 2, y + dt * k2 / 2)
    k4 = func(t + dt, y + dt * k3)
    return y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def euler_step(func, t, dt, y):
    return y + dt * func(t, y)


def odeint(func, y0, t):
    step = rk4_step if SOLVER == "rk4" else euler_step
    ys = [y0]
    y = y0
    for t0, t1 in zip(t[:-1], t[1:]):
        y = step(func, t0, t1 - t0, y)
        ys.append(y)
    return torch.stack(ys)


def spiral(device):
    t = torch.linspace(0.0, 1.5, 6, device=device)
    true_A = torch.tensor([[-0.1, 2.0], [-2.0, -0.1]], device=device)
    y0 = torch.tensor([[2.0, 0.0], [0.5, 1.0]], device=device)
    ys = [y0]
    for dt in (t[1:] - t[:-1]).tolist():
        ys.append(ys[-1] + dt * (ys[-1] ** 3) @ true_A * 0.1)
    return t, y0, torch.stack(ys)


# ---------------------------------------------------------------- Gaussian process
class ExactGP(nn.Module):
    def __init__(self):
        super().__init__()
        self.log_lengthscale = nn.Parameter(torch.tensor(0.0))
        self.log_outputscale = nn.Parameter(torch.tensor(0.0))
        self.log_noise = nn.Parameter(torch.tensor(-2.0))

    def kernel(self, x1, x2):
        lengthscale = self.log_lengthscale.exp()
        dist2 = torch.cdist(x1, x2).pow(2)
        return self.log_outputscale.exp() * torch.exp(-0.5 * dist2 / lengthscale**2)

    def neg_log_marginal_likelihood(self, x, y):
        n = x.shape[0]
        K = self.kernel(x, x) + self.log_noise.exp() * torch.eye(n, device=x.device)
        L = torch.linalg.cholesky(K)
        alpha = torch.cholesky_solve(y, L)
        data_fit = 0.5 * (y.T @ alpha).squeeze()
        complexity = torch.log(torch.diagonal(L)).sum()
        return data_fit + complexity + 0.5 * n * math.log(2 * math.pi)

    def predict(self, x, y, x_star):
        n = x.shape[0]
        K = self.kernel(x, x) + self.log_noise.exp() * torch.eye(n, device=x.device)
        L = torch.linalg.cholesky(K)
        K_s = self.kernel(x, x_star)
        alpha = torch.cholesky_solve(y, L)
        mean = K_s.T @ alpha
        v = torch.linalg.solve_triangular(L, K_s, upper=False)
        var = self.log_outputscale.exp() - (v * v).sum(0)
        return mean.squeeze(-1), var


# ---------------------------------------------------------------- Bayes by backprop
class BayesianLinear(nn.Module):
    def __init__(self, in_features, out_features, prior_sigma=1.0):
        super().__init__()
        self.weight_mu = nn.Parameter(torch.empty(out_features, in_features).uniform_(-0.2, 0.2))
        self.weight_rho = nn.Parameter(torch.empty(out_features, in_features).fill_(-3.0))
        self.bias_mu = nn.Parameter(torch.zeros(out_features))
        self.bias_rho = nn.Parameter(torch.full((out_features,), -3.0))
        self.prior_sigma = prior_sigma
        self.kl = 0

    def sample(self, mu, rho):
        sigma = F.softplus(rho)
        if FIXED_NOISE:
            eps = torch.linspace(-1.0, 1.0, sigma.numel(), device=sigma.device).view_as(sigma)
        else:
            eps = torch.randn_like(sigma)
        return mu + sigma * eps, sigma

    def forward(self, x):
        weight, w_sigma = self.sample(self.weight_mu, self.weight_rho)
        bias, b_sigma = self.sample(self.bias_mu, self.bias_rho)
        prior = distributions.Normal(torch.zeros_like(self.weight_mu), self.prior_sigma * torch.ones_like(w_sigma))
        self.kl = distributions.kl_divergence(distributions.Normal(self.weight_mu, w_sigma), prior).sum()
        self.kl = (
            self.kl
            + distributions.kl_divergence(
                distributions.Normal(self.bias_mu, b_sigma), distributions.Normal(0.0, self.prior_sigma)
            ).sum()
        )
        return F.linear(x, weight, bias)


class BayesianMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = BayesianLinear(1, 8)
        self.l2 = BayesianLinear(8, 1)

    def forward(self, x):
        return self.l2(torch.relu(self.l1(x)))

    def kl(self):
        return self.l1.kl + self.l2.kl


def build():
    torch.manual_seed(11)
    if MODEL == "gp":
        return ExactGP()
    if MODEL == "bayes":
        return BayesianMLP()
    return ODEFunc()


def train(model, steps=3):
    device = torch.device(DEVICE)
    model = model.to(device)
    record = {"losses": []}
    rng = np.random.default_rng(2)
    if MODEL == "gp":
        x = torch.tensor(np.sort(rng.uniform(-2, 2, (9, 1)), axis=0).astype(np.float32), device=device)
        y = torch.sin(2 * x) + 0.1 * torch.tensor(rng.standard_normal((9, 1)).astype(np.float32), device=device)
        optimizer = optim.Adam(model.parameters(), lr=0.1)
        for _ in range(steps):
            optimizer.zero_grad()
            loss = model.neg_log_marginal_likelihood(x, y)
            loss.backward()
            optimizer.step()
            record["losses"].append(loss.item())
        with torch.no_grad():
            mean, var = model.predict(x, y, torch.linspace(-2, 2, 5, device=device).unsqueeze(1))
        record["mean"] = mean.tolist()
        record["var"] = var.tolist()
        record["lengthscale"] = model.log_lengthscale.exp().item()
        return record
    if MODEL == "bayes":
        x = torch.tensor(rng.uniform(-1, 1, (16, 1)).astype(np.float32), device=device)
        y = x**3 + 0.05 * torch.tensor(rng.standard_normal((16, 1)).astype(np.float32), device=device)
        optimizer = optim.Adam(model.parameters(), lr=0.02)
        num_batches = 4
        record["kl"] = []
        for _ in range(steps):
            optimizer.zero_grad()
            pred = model(x)
            nll = -distributions.Normal(pred, 0.1).log_prob(y).sum()
            loss = nll + model.kl() / num_batches
            loss.backward()
            optimizer.step()
            record["losses"].append(loss.item())
            record["kl"].append(model.kl().item())
        record["rho_grad"] = model.l1.weight_rho.grad.abs().sum().item()
        return record
    t, y0, true_y = spiral(device)
    optimizer = optim.RMSprop(model.parameters(), lr=1e-2)
    for _ in range(steps):
        optimizer.zero_grad()
        pred_y = odeint(model, y0, t)
        loss = torch.mean(torch.abs(pred_y - true_y))
        loss.backward()
        optimizer.step()
        record["losses"].append(loss.item())
    record["final_state"] = pred_y[-1].flatten().tolist()
    return record


if __name__ == "__main__":
    print(train(build()))
