"""A SimCLR-style contrastive training loop with the NT-Xent loss, at tiny sizes.

Its idioms: two augmented views of a batch made with tensor ops (a random-looking but fixed flip
``torch.flip(x, dims=[3])`` and additive jitter), ``torch.cat([z1, z2], dim=0)``; a projection head
``nn.Sequential(Linear, BatchNorm1d, ReLU, Linear)``; ``F.normalize(z, dim=1)``; the similarity matrix
``torch.matmul(z, z.T) / temperature``; the diagonal masked with
``sim.masked_fill_(torch.eye(2 * n, dtype=torch.bool), float('-inf'))`` (and ``fill_diagonal_`` in
the other form); positives as ``labels = torch.cat([torch.arange(n) + n, torch.arange(n)])``;
``F.cross_entropy(sim, labels)``; LARS-free ``optim.SGD`` with ``CosineAnnealingLR``; top-1 of the
positive pair as ``(sim.argmax(dim=1) == labels).float().mean()``; and a linear probe on the frozen
encoder's ``features.detach()``."""

from __future__ import annotations

import numpy as np
from shim import F, nn, optim, torch

TEMPERATURE = 0.5
MASK = "masked_fill"


class SimCLR(nn.Module):
    def __init__(self, feature_dim=8, proj_dim=4):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv2d(1, 4, 3, padding=1),
            nn.BatchNorm2d(4),
            nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d((2, 2)),
            nn.Flatten(),
        )
        self.fc = nn.Linear(16, feature_dim)
        self.projector = nn.Sequential(
            nn.Linear(feature_dim, feature_dim, bias=False),
            nn.BatchNorm1d(feature_dim),
            nn.ReLU(inplace=True),
            nn.Linear(feature_dim, proj_dim),
        )
        self.probe = nn.Linear(feature_dim, 3)

    def forward(self, x):
        h = self.fc(self.encoder(x))
        return h, self.projector(h)


def nt_xent(z1, z2, temperature=TEMPERATURE):
    n = z1.shape[0]
    z = F.normalize(torch.cat([z1, z2], dim=0), dim=1)
    sim = torch.matmul(z, z.T) / temperature
    if MASK == "masked_fill":
        sim = sim.masked_fill(torch.eye(2 * n, dtype=torch.bool, device=sim.device), float("-inf"))
    else:
        sim = sim.clone()
        sim.fill_diagonal_(float("-inf"))
    labels = torch.cat([torch.arange(n) + n, torch.arange(n)]).to(sim.device)
    loss = F.cross_entropy(sim, labels)
    top1 = (sim.argmax(dim=1) == labels).float().mean()
    return loss, top1


def build():
    torch.manual_seed(3)
    return SimCLR()


def train(model, steps=2):
    rng = np.random.default_rng(4)
    images = torch.tensor(rng.random((4 * steps, 1, 6, 6)).astype(np.float32))
    jitter = torch.tensor(rng.standard_normal((4 * steps, 1, 6, 6)).astype(np.float32)) * 0.1
    classes = torch.tensor(rng.integers(0, 3, 4 * steps))
    params = [p for name, p in model.named_parameters() if not name.startswith("probe")]
    optimizer = optim.SGD(params, lr=0.1, momentum=0.9, weight_decay=1e-4)
    scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps, eta_min=1e-3)
    probe_optimizer = optim.Adam(model.probe.parameters(), lr=1e-2)
    record = {"losses": [], "top1": [], "lr": [], "probe": []}
    model.train()
    for i in range(steps):
        x = images[4 * i : 4 * i + 4]
        view1 = x + jitter[4 * i : 4 * i + 4]
        view2 = torch.flip(x, dims=[3]) - jitter[4 * i : 4 * i + 4]
        h1, z1 = model(view1)
        _, z2 = model(view2)
        loss, top1 = nt_xent(z1, z2)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        probe_loss = F.cross_entropy(model.probe(h1.detach()), classes[4 * i : 4 * i + 4])
        probe_optimizer.zero_grad()
        probe_loss.backward()
        probe_optimizer.step()
        record["losses"].append(loss.item())
        record["top1"].append(top1.item())
        record["lr"].append(scheduler.get_last_lr()[0])
        record["probe"].append(probe_loss.item())
    record["probe_grad_left_encoder"] = model.fc.weight.grad.abs().sum().item()
    return record


if __name__ == "__main__":
    print(train(build()))
