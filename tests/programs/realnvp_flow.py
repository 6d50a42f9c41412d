"""A RealNVP normalizing flow on two-moons-like data, as the well-known short PyTorch RealNVP notebooks write it.

Its idioms: alternating binary masks ``torch.from_numpy(np.array([[0, 1], [1, 0]] * 3).astype(np.float32))``
kept as ``nn.Parameter(masks, requires_grad=False)``; scale and translation nets in two
``nn.ModuleList``s of ``nn.Sequential(Linear, LeakyReLU, ..., Tanh)``; coupling layers run backwards
over ``reversed(range(len(self.t)))`` in ``f`` (data to latent, ``z = (1 - mask) * (z - t) * torch.exp(-s) + z_``)
and forwards in ``g``; the log-determinant as ``log_det_J -= s.sum(dim=1)``; the prior
``distributions.MultivariateNormal(torch.zeros(2), torch.eye(2))`` (or an ``Independent(Normal, 1)``)
and ``log_prob(z) + log_det_J``; the loss ``-flow.log_prob(x).mean()``; Adam over
``[p for p in flow.parameters() if p.requires_grad]``; ``clip_grad_norm_``; and the round trip
``flow.g(flow.f(x)[0])`` checked under ``torch.no_grad()``."""

from __future__ import annotations

import numpy as np
from shim import distributions, nn, optim, torch

PRIOR = "multivariate"  # or "independent"
DEVICE = "cpu"


def nets():
    return nn.Sequential(
        nn.Linear(2, 16), nn.LeakyReLU(), nn.Linear(16, 16), nn.LeakyReLU(), nn.Linear(16, 2), nn.Tanh()
    )


def nett():
    return nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(), nn.Linear(16, 16), nn.LeakyReLU(), nn.Linear(16, 2))


class RealNVP(nn.Module):
    def __init__(self, nets, nett, mask, prior):
        super().__init__()
        self.prior = prior
        self.mask = nn.Parameter(mask, requires_grad=False)
        self.t = nn.ModuleList([nett() for _ in range(len(mask))])
        self.s = nn.ModuleList([nets() for _ in range(len(mask))])

    def g(self, z):
        x = z
        for i in range(len(self.t)):
            x_ = x * self.mask[i]
            s = self.s[i](x_) * (1 - self.mask[i])
            t = self.t[i](x_) * (1 - self.mask[i])
            x = x_ + (1 - self.mask[i]) * (x * torch.exp(s) + t)
        return x

    def f(self, x):
        log_det_J, z = x.new_zeros(x.shape[0]), x
        for i in reversed(range(len(self.t))):
            z_ = self.mask[i] * z
            s = self.s[i](z_) * (1 - self.mask[i])
            t = self.t[i](z_) * (1 - self.mask[i])
            z = (1 - self.mask[i]) * (z - t) * torch.exp(-s) + z_
            log_det_J -= s.sum(dim=1)
        return z, log_det_J

    def log_prob(self, x):
        z, logp = self.f(x)
        return self.prior.log_prob(z) + logp


def make_prior(device):
    loc, eye = torch.zeros(2, device=device), torch.eye(2, device=device)
    if PRIOR == "multivariate":
        return distributions.MultivariateNormal(loc, eye)
    return distributions.Independent(distributions.Normal(loc, torch.ones(2, device=device)), 1)


def moons(n, rng):
    half = n // 2
    angle = rng.uniform(0, np.pi, n)
    outer = np.stack([np.cos(angle[:half]), np.sin(angle[:half])], 1)
    inner = np.stack([1 - np.cos(angle[half:]), 0.5 - np.sin(angle[half:])], 1)
    return (np.concatenate([outer, inner]) + 0.05 * rng.standard_normal((n, 2))).astype(np.float32)


def build():
    torch.manual_seed(7)
    masks = torch.from_numpy(np.array([[0, 1], [1, 0]] * 2).astype(np.float32))
    return RealNVP(nets, nett, masks, make_prior("cpu"))


def train(model, steps=3):
    device = torch.device(DEVICE)
    flow = model.to(device)
    flow.prior = make_prior(device)
    rng = np.random.default_rng(7)
    optimizer = optim.Adam([p for p in flow.parameters() if p.requires_grad], lr=1e-3)
    record = {"losses": [], "grad_norm": []}
    for _ in range(steps):
        x = torch.from_numpy(moons(16, rng)).to(device)
        loss = -flow.log_prob(x).mean()
        optimizer.zero_grad()
        loss.backward(retain_graph=True)
        record["grad_norm"].append(nn.utils.clip_grad_norm_(flow.parameters(), max_norm=5.0).item())
        optimizer.step()
        record["losses"].append(loss.item())
    with torch.no_grad():
        x = torch.from_numpy(moons(8, rng)).to(device)
        z, log_det = flow.f(x)
        record["round_trip"] = (flow.g(z) - x).abs().max().item() < 1e-5
        record["log_det"] = log_det.tolist()
        record["z_std"] = z.std(dim=0).tolist()
    record["mask_grad"] = flow.mask.grad is None
    return record


if __name__ == "__main__":
    print(train(build()))
