"""A convolutional autoencoder: strided Conv2d down, ConvTranspose2d up, Sigmoid output, MSE loss,
Adam; reconstruction error under no_grad."""

from __future__ import annotations

import numpy as np
from shim import nn, optim, torch


def make_images(n=16, size=8, seed=2):
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:size, 0:size]
    images = []
    for _ in range(n):
        cy, cx, r = rng.uniform(2, size - 2), rng.uniform(2, size - 2), rng.uniform(1.5, 3)
        images.append(((yy - cy) ** 2 + (xx - cx) ** 2 < r * r).astype(np.float32))
    return torch.tensor(np.stack(images)[:, None])


class AutoEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv2d(1, 4, 3, stride=2, padding=1),  # 8 -> 4
            nn.ReLU(True),
            nn.Conv2d(4, 8, 3, stride=2, padding=1),  # 4 -> 2
            nn.ReLU(True),
        )
        self.decoder = nn.Sequential(
            nn.ConvTranspose2d(8, 4, 4, stride=2, padding=1),  # 2 -> 4
            nn.ReLU(True),
            nn.ConvTranspose2d(4, 1, 4, stride=2, padding=1),  # 4 -> 8
            nn.Sigmoid(),
        )

    def forward(self, x):
        return self.decoder(self.encoder(x))


def build():
    torch.manual_seed(0)
    return AutoEncoder()


def train(model, steps=5):
    images = make_images()
    criterion = nn.MSELoss()
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for step in range(steps):
        batch = images[(step % 2) * 8 : (step % 2) * 8 + 8]
        recon = model(batch)
        loss = criterion(recon, batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    with torch.no_grad():
        recon = model(images)
        per_image = ((recon - images) ** 2).mean(dim=(1, 2, 3))
        code = model.encoder(images[:1]).flatten()
    return {"losses": losses, "per_image": per_image.tolist(), "code": code.tolist()}


if __name__ == "__main__":
    print(train(build(), steps=50))
