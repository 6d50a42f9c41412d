"""pytorch/examples' vae/main.py at a tiny width on MNIST-shaped random data: the encoder's two
heads, reparameterize with torch.exp(0.5 * logvar) and torch.randn_like, a sigmoid decoder,
F.binary_cross_entropy(..., reduction='sum') plus the KL term over .pow(2) and .exp(), Adam, the
per-sample loss of a test loop under torch.no_grad(), and decoding torch.randn samples."""

from __future__ import annotations

import numpy as np
from shim import DataLoader, F, TensorDataset, nn, optim, torch

USE_CUDA = True
SHUFFLE = True


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 32)
        self.fc21 = nn.Linear(32, 4)
        self.fc22 = nn.Linear(32, 4)
        self.fc3 = nn.Linear(4, 32)
        self.fc4 = nn.Linear(32, 784)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 784))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


# Reconstruction + KL divergence losses summed over all elements and batch
def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 784), reduction="sum")
    # 0.5 * sum(1 + log(sigma^2) - mu^2 - sigma^2), Kingma and Welling, appendix B
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return BCE + KLD


def make_images(n=16, seed=0):
    """Pixels in [0, 1], as ToTensor gives MNIST's, with labels nobody uses."""
    rng = np.random.default_rng(seed)
    images = rng.random((n, 1, 28, 28), dtype=np.float32) ** 3
    return torch.tensor(images), torch.tensor(rng.integers(0, 10, size=n))


def build():
    torch.manual_seed(1)
    return VAE()


def train(model, steps=4):
    device = torch.device("cuda" if USE_CUDA and torch.cuda.is_available() else "cpu")
    model = model.to(device)
    optimizer = optim.Adam(model.parameters(), lr=1e-3)
    images, labels = make_images()
    train_loader = DataLoader(TensorDataset(images, labels), batch_size=4, shuffle=SHUFFLE)
    model.train()
    losses, train_loss = [], 0
    for batch_idx, (data, _) in enumerate(train_loader):
        if batch_idx == steps:
            break
        data = data.to(device)
        optimizer.zero_grad()
        recon_batch, mu, logvar = model(data)
        loss = loss_function(recon_batch, data, mu, logvar)
        loss.backward()
        train_loss += loss.item()
        optimizer.step()
        losses.append(loss.item() / len(data))
    model.eval()
    test_loss = 0
    with torch.no_grad():
        for data, _ in DataLoader(TensorDataset(images[:8], labels[:8]), batch_size=8):
            data = data.to(device)
            recon_batch, mu, logvar = model(data)
            test_loss += loss_function(recon_batch, data, mu, logvar).item()
            n = min(data.size(0), 4)
            comparison = torch.cat([data[:n], recon_batch.view(8, 1, 28, 28)[:n]])
        sample = torch.randn(4, 4).to(device)
        sample = model.decode(sample).cpu()
    return {
        "losses": losses,
        "train_loss": train_loss / (4 * len(losses)),
        "test_loss": test_loss / 8,
        "comparison": float(comparison.sum()),
        "sample_shape": list(sample.view(4, 1, 28, 28).shape),
    }


if __name__ == "__main__":
    print(train(build()))
