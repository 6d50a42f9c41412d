"""A mixture density network on a one-to-many regression (the inverted sine problem), as Bishop's MDN
is written with torch.distributions.

Its idioms: a shared ``nn.Sequential`` trunk with three heads (mixture logits, means, scales); scales by
``F.softplus(x) + 1e-3`` (or ``torch.exp`` of a clamped log-scale) and ``.view(-1, K, D)``;
``distributions.MixtureSameFamily(distributions.Categorical(logits=pi),
distributions.Independent(distributions.Normal(mu, sigma), 1))`` and the NLL ``-mix.log_prob(y).mean()``;
the same likelihood written by hand with ``torch.logsumexp(F.log_softmax(pi, -1) + Normal(mu, sigma)
.log_prob(y.unsqueeze(1)).sum(-1), dim=-1)``; the mixture's ``mean`` and ``variance``; the most likely
component's mean by ``torch.gather(mu, 1, pi.argmax(-1)[:, None, None].expand(-1, 1, D))``; the
entropy of the mixing weights; ``distributions.kl_divergence`` between the components and a standard
normal prior; Adam with ``weight_decay`` and ``ExponentialLR``."""

from __future__ import annotations

import numpy as np
from shim import F, distributions, nn, optim, torch

COMPONENTS = 3
OUTPUT_DIM = 1
SCALE = "softplus"  # or "exp"
LIKELIHOOD = "mixture"  # or "logsumexp"
DEVICE = "cpu"


class MDN(nn.Module):
    def __init__(self, input_dim=1, hidden=12, k=COMPONENTS, d=OUTPUT_DIM):
        super().__init__()
        self.k, self.d = k, d
        self.trunk = nn.Sequential(nn.Linear(input_dim, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.pi = nn.Linear(hidden, k)
        self.mu = nn.Linear(hidden, k * d)
        self.sigma = nn.Linear(hidden, k * d)

    def forward(self, x):
        h = self.trunk(x)
        pi = self.pi(h)
        mu = self.mu(h).view(-1, self.k, self.d)
        if SCALE == "softplus":
            sigma = F.softplus(self.sigma(h)) + 1e-3
        else:
            sigma = torch.exp(torch.clamp(self.sigma(h), min=-7.0, max=7.0))
        return pi, mu, sigma.view(-1, self.k, self.d)

    def distribution(self, x):
        pi, mu, sigma = self(x)
        mix = distributions.Categorical(logits=pi)
        comp = distributions.Independent(distributions.Normal(mu, sigma), 1)
        return distributions.MixtureSameFamily(mix, comp)


def nll(model, x, y):
    if LIKELIHOOD == "mixture":
        return -model.distribution(x).log_prob(y).mean()
    pi, mu, sigma = model(x)
    log_component = distributions.Normal(mu, sigma).log_prob(y.unsqueeze(1)).sum(-1)
    return -torch.logsumexp(F.log_softmax(pi, dim=-1) + log_component, dim=-1).mean()


def make_data(n, rng):
    y = rng.uniform(-1, 1, (n, 1))
    x = np.sin(3 * y) + 0.3 * y + 0.05 * rng.standard_normal((n, 1))
    return torch.tensor(x, dtype=torch.float32), torch.tensor(y, dtype=torch.float32)


def build():
    torch.manual_seed(42)
    return MDN()


def train(model, steps=4):
    device = torch.device(DEVICE)
    model = model.to(device)
    rng = np.random.default_rng(42)
    optimizer = optim.Adam(model.parameters(), lr=1e-2, weight_decay=1e-5)
    scheduler = optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.9)
    record = {"losses": [], "lr": []}
    for _ in range(steps):
        x, y = (t.to(device) for t in make_data(32, rng))
        loss = nll(model, x, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        record["losses"].append(loss.item())
        record["lr"].append(scheduler.get_last_lr()[0])
    model.eval()
    with torch.no_grad():
        x = torch.linspace(-1, 1, 5, device=device).unsqueeze(1)
        mixture = model.distribution(x)
        pi, mu, sigma = model(x)
        best = torch.gather(mu, 1, pi.argmax(-1)[:, None, None].expand(-1, 1, model.d)).squeeze(1)
        prior = distributions.Normal(torch.zeros_like(mu), torch.ones_like(sigma))
        record["mean"] = mixture.mean.flatten().tolist()
        record["variance"] = mixture.variance.flatten().tolist()
        record["best_component_mean"] = best.flatten().tolist()
        record["mixing_entropy"] = mixture.mixture_distribution.entropy().tolist()
        record["kl_to_prior"] = distributions.kl_divergence(distributions.Normal(mu, sigma), prior).sum().item()
        record["log_prob_grid"] = mixture.log_prob(torch.zeros(5, model.d, device=device)).tolist()
    return record


if __name__ == "__main__":
    print(train(build()))
