"""yunjey/pytorch-tutorial's generative adversarial network and variational auto-encoder, at tiny sizes on
synthetic images in place of MNIST. ``MODEL`` picks one.

The GAN's idioms: ``D`` and ``G`` as ``nn.Sequential``s of ``nn.Linear``, ``nn.LeakyReLU(0.2)``,
``nn.Sigmoid()``, ``nn.ReLU()`` and ``nn.Tanh()``; ``nn.BCELoss()`` against ``torch.ones(batch_size,
1)`` and ``torch.zeros(batch_size, 1)`` labels; ``denorm`` by ``(x + 1) / 2`` then ``out.clamp(0, 1)``;
``reset_grad()`` zeroing both optimizers; ``z = torch.randn(batch_size, latent_size).to(device)``; the
discriminator trained on ``G(z)`` without a ``detach`` (its gradient into G is thrown away by the
reset); ``real_score.mean().item()`` and ``fake_score.mean().item()`` in the
``'d_loss: {:.4f}, g_loss: {:.4f}, D(x): {:.2f}, D(G(z)): {:.2f}'`` line; ``images.reshape(batch_size,
-1)``; ``fake_images.reshape(fake_images.size(0), 1, 28, 28)`` for ``save_image`` (kept as numbers
here); ``torch.save(G.state_dict(), 'G.ckpt')``. The VAE's: ``encode`` returning ``self.fc2(h),
self.fc3(h)``, ``reparameterize`` by ``std = torch.exp(log_var/2)`` and ``eps = torch.randn_like(std)``,
``F.sigmoid(self.fc5(h))``; ``F.binary_cross_entropy(x_reconst, x, size_average=False)`` and ``kl_div =
- 0.5 * torch.sum(1 + log_var - mu.pow(2) - log_var.exp())``; ``'Reconst Loss: {:.4f}, KL Div: {:.4f}'``
lines; sampling under ``torch.no_grad()`` by ``model.decode(z).view(-1, 1, 28, 28)`` and ``x_concat =
torch.cat([x.view(-1, 1, 28, 28), out.view(-1, 1, 28, 28)], dim=3)``."""

# ruff: noqa: UP032  (the tutorial's spelling is the point: .format)
from __future__ import annotations

import os
import tempfile
import warnings

import numpy as np
from shim import F, nn, torch

MODEL = "gan"  # or "vae"
SHUFFLE = True
USE_CUDA = True  # the comparisons set False: both libraries on the CPU

# Hyper-parameters (MNIST's 28x28 images shrunk to 5x5)
side = 5
image_size = side * side
latent_size = 4
hidden_size = 12
batch_size = 6
h_dim = 10
z_dim = 3
learning_rate = 1e-3


class GAN(nn.Module):
    """The tutorial's two global nets, held together for the comparison's state_dict."""

    def __init__(self):
        super().__init__()
        # Discriminator
        self.D = nn.Sequential(
            nn.Linear(image_size, hidden_size),
            nn.LeakyReLU(0.2),
            nn.Linear(hidden_size, hidden_size),
            nn.LeakyReLU(0.2),
            nn.Linear(hidden_size, 1),
            nn.Sigmoid(),
        )
        # Generator
        self.G = nn.Sequential(
            nn.Linear(latent_size, hidden_size),
            nn.ReLU(),
            nn.Linear(hidden_size, hidden_size),
            nn.ReLU(),
            nn.Linear(hidden_size, image_size),
            nn.Tanh(),
        )


# VAE model
class VAE(nn.Module):
    def __init__(self, image_size=784, h_dim=400, z_dim=20):
        super().__init__()
        self.fc1 = nn.Linear(image_size, h_dim)
        self.fc2 = nn.Linear(h_dim, z_dim)
        self.fc3 = nn.Linear(h_dim, z_dim)
        self.fc4 = nn.Linear(z_dim, h_dim)
        self.fc5 = nn.Linear(h_dim, image_size)

    def encode(self, x):
        h = F.relu(self.fc1(x))
        return self.fc2(h), self.fc3(h)

    def reparameterize(self, mu, log_var):
        std = torch.exp(log_var / 2)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        h = F.relu(self.fc4(z))
        return F.sigmoid(self.fc5(h))

    def forward(self, x):
        mu, log_var = self.encode(x)
        z = self.reparameterize(mu, log_var)
        x_reconst = self.decode(z)
        return x_reconst, mu, log_var


def data_loader(low, high):
    rng = np.random.RandomState(0)
    images = rng.uniform(low, high, (3 * batch_size, 1, side, side)).astype(np.float32)
    labels = rng.randint(0, 10, 3 * batch_size)
    dataset = torch.utils.data.TensorDataset(torch.from_numpy(images), torch.from_numpy(labels))
    return torch.utils.data.DataLoader(dataset=dataset, batch_size=batch_size, shuffle=SHUFFLE)


def build():
    torch.manual_seed(0)
    device = torch.device("cuda" if USE_CUDA and torch.cuda.is_available() else "cpu")
    if MODEL == "gan":
        return GAN().to(device)
    return VAE(image_size, h_dim, z_dim).to(device)


def denorm(x):
    out = (x + 1) / 2
    return out.clamp(0, 1)


def gan(model, steps, device, record):
    D, G = model.D, model.G
    # Binary cross entropy loss and optimizer
    criterion = nn.BCELoss()
    d_optimizer = torch.optim.Adam(D.parameters(), lr=0.0002 * 10)
    g_optimizer = torch.optim.Adam(G.parameters(), lr=0.0002 * 10)

    def reset_grad():
        d_optimizer.zero_grad()
        g_optimizer.zero_grad()

    torch.manual_seed(1)
    loader = data_loader(-1, 1)  # Normalize(mean=(0.5,), std=(0.5,)) puts MNIST in [-1, 1]
    total_step = len(loader)
    for i, (images, _) in enumerate(loader):
        if i == steps:
            break
        images = images.reshape(batch_size, -1).to(device)
        # Create the labels which are later used as input for the BCE loss
        real_labels = torch.ones(batch_size, 1).to(device)
        fake_labels = torch.zeros(batch_size, 1).to(device)

        # ================================================================== #
        #                      Train the discriminator                       #
        # ================================================================== #
        # Compute BCE_Loss using real images where BCE_Loss(x, y): - y * log(D(x)) - (1-y) * log(1 - D(x))
        # Second term of the loss is always zero since real_labels == 1
        outputs = D(images)
        d_loss_real = criterion(outputs, real_labels)
        real_score = outputs
        # Compute BCELoss using fake images
        # First term of the loss is always zero since fake_labels == 0
        z = torch.randn(batch_size, latent_size).to(device)
        fake_images = G(z)
        outputs = D(fake_images)
        d_loss_fake = criterion(outputs, fake_labels)
        fake_score = outputs
        # Backprop and optimize
        d_loss = d_loss_real + d_loss_fake
        reset_grad()
        d_loss.backward()
        d_optimizer.step()

        # ================================================================== #
        #                        Train the generator                         #
        # ================================================================== #
        # Compute loss with fake images
        z = torch.randn(batch_size, latent_size).to(device)
        fake_images = G(z)
        outputs = D(fake_images)
        # We train G to maximize log(D(G(z)) instead of minimizing log(1-D(G(z)))
        g_loss = criterion(outputs, real_labels)
        # Backprop and optimize
        reset_grad()
        g_loss.backward()
        g_optimizer.step()

        record["losses"].append(d_loss.item())
        record["g_losses"].append(g_loss.item())
        record["lines"].append(
            "Epoch [{}/{}], Step [{}/{}], d_loss: {:.4f}, g_loss: {:.4f}, D(x): {:.2f}, D(G(z)): {:.2f}".format(
                0,
                1,
                i + 1,
                total_step,
                d_loss.item(),
                g_loss.item(),
                real_score.mean().item(),
                fake_score.mean().item(),
            )
        )
    # Save real images
    images = images.reshape(images.size(0), 1, side, side)
    record["real"] = denorm(images).sum().item()
    # Save sampled images
    fake_images = fake_images.reshape(fake_images.size(0), 1, side, side)
    record["fake"] = denorm(fake_images)[0].tolist()
    # Save the model checkpoints
    with tempfile.TemporaryDirectory() as folder:
        torch.save(G.state_dict(), os.path.join(folder, "G.ckpt"))
        torch.save(D.state_dict(), os.path.join(folder, "D.ckpt"))
        record["G"] = torch.load(os.path.join(folder, "G.ckpt"))["4.bias"].tolist()
    return record


def vae(model, steps, device, record):
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
    torch.manual_seed(1)
    loader = data_loader(0, 1)
    for i, (x, _) in enumerate(loader):
        if i == steps:
            break
        # Forward pass
        x = x.to(device).view(-1, image_size)
        x_reconst, mu, log_var = model(x)
        # Compute reconstruction loss and kl divergence
        # For KL divergence, see Appendix B in VAE paper or http://yunjey47.tistory.com/43
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # size_average's deprecation
            reconst_loss = F.binary_cross_entropy(x_reconst, x, size_average=False)
        kl_div = -0.5 * torch.sum(1 + log_var - mu.pow(2) - log_var.exp())
        # Backprop and optimize
        loss = reconst_loss + kl_div
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        record["losses"].append(loss.item())
        record["lines"].append(
            "Epoch[{}/{}], Step [{}/{}], Reconst Loss: {:.4f}, KL Div: {:.4f}".format(
                1, 1, i + 1, len(loader), reconst_loss.item(), kl_div.item()
            )
        )
    with torch.no_grad():
        # Save the sampled images
        z = torch.randn(batch_size, z_dim).to(device)
        out = model.decode(z).view(-1, 1, side, side)
        record["sampled"] = out[0].tolist()
        # Save the reconstructed images
        out, _, _ = model(x)
        x_concat = torch.cat([x.view(-1, 1, side, side), out.view(-1, 1, side, side)], dim=3)
        record["concat"] = [list(x_concat.shape), x_concat[:, :, :, side:].sum().item()]
    return record


def train(model, steps=3):
    device = torch.device("cuda" if USE_CUDA and torch.cuda.is_available() else "cpu")
    record = {"losses": [], "lines": []}
    if MODEL == "gan":
        record["g_losses"] = []
        return gan(model, steps, device, record)
    return vae(model, steps, device, record)


if __name__ == "__main__":
    print(train(build()))
