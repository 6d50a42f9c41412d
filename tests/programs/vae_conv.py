"""A convolutional VAE trained the way tutorials write one, at 8x8 images.

Its idioms: an encoder of Conv2d + ReLU flattened with ``nn.Flatten`` into ``mu`` and ``logvar``
heads; ``reparameterize`` with ``std = torch.exp(0.5 * logvar)`` and ``eps = torch.randn_like(std)``;
a decoder of Linear + ``nn.Unflatten`` + ConvTranspose2d + Sigmoid; the loss
``F.binary_cross_entropy(recon, x, reduction='sum')`` plus
``-0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())`` divided by the batch size; Adam;
``train_loss += loss.item()`` over a DataLoader epoch; an evaluation epoch under ``torch.no_grad()``
with ``model.eval()``; and sampling ``model.decode(torch.randn(n, latent))``."""

from __future__ import annotations

import numpy as np
from shim import DataLoader, F, TensorDataset, nn, optim, torch

LATENT = 3
SHUFFLE = True


class ConvVAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv2d(1, 4, 3, stride=2, padding=1), nn.ReLU(), nn.Flatten())
        self.fc_mu = nn.Linear(4 * 4 * 4, LATENT)
        self.fc_logvar = nn.Linear(4 * 4 * 4, LATENT)
        self.decoder_input = nn.Linear(LATENT, 4 * 4 * 4)
        self.decoder = nn.Sequential(
            nn.Unflatten(1, (4, 4, 4)),
            nn.ConvTranspose2d(4, 1, 3, stride=2, padding=1, output_padding=1),
            nn.Sigmoid(),
        )

    def encode(self, x):
        h = self.encoder(x)
        return self.fc_mu(h), self.fc_logvar(h)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        return self.decoder(F.relu(self.decoder_input(z)))

    def forward(self, x):
        mu, logvar = self.encode(x)
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    bce = F.binary_cross_entropy(recon_x, x, reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return (bce + kld) / x.size(0), bce.item(), kld.item()


def build():
    torch.manual_seed(0)
    return ConvVAE()


def train(model, steps=2):
    rng = np.random.default_rng(3)
    images = torch.from_numpy(rng.random((4 * steps, 1, 8, 8)).astype(np.float32))
    loader = DataLoader(TensorDataset(images), batch_size=4, shuffle=SHUFFLE)
    optimizer = optim.Adam(model.parameters(), lr=1e-3)
    record = {"losses": [], "bce": [], "kld": []}
    model.train()
    train_loss = 0.0
    for (x,) in loader:
        optimizer.zero_grad()
        recon, mu, logvar = model(x)
        loss, bce, kld = loss_function(recon, x, mu, logvar)
        loss.backward()
        train_loss += loss.item()
        optimizer.step()
        record["losses"].append(loss.item())
        record["bce"].append(bce)
        record["kld"].append(kld)
    record["epoch_loss"] = train_loss / len(loader)
    model.eval()
    test_loss = 0.0
    with torch.no_grad():
        for (x,) in DataLoader(TensorDataset(images[:4]), batch_size=4):
            recon, mu, logvar = model(x)
            test_loss += loss_function(recon, x, mu, logvar)[0].item()
        sample = model.decode(torch.randn(2, LATENT))
    record["test_loss"] = test_loss
    record["sample_shape"] = list(sample.shape)
    record["sample_in_unit_range"] = bool(((sample >= 0) & (sample <= 1)).all())
    return record


if __name__ == "__main__":
    print(train(build()))
