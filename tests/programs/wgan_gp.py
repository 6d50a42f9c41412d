"""A WGAN-GP on synthetic 8x8 images, written the way the well-known PyTorch WGAN-GP repositories write it.

Its idioms: a critic without batch norm and a generator with it; the gradient penalty at random
interpolates ``alpha = torch.rand(B, 1, 1, 1)`` of real and fake images, made a leaf by
``.requires_grad_(True)``, with ``torch.autograd.grad(outputs=..., inputs=..., grad_outputs=torch.ones_like(...),
create_graph=True, retain_graph=True, only_inputs=True)[0]`` and ``((g.norm(2, dim=1) - 1) ** 2).mean()``;
``n_critic`` critic steps per generator step; the critic frozen for the generator step by
``p.requires_grad = False`` over its parameters; the critic's terms backpropagated one by one with
0-d gradients ``one`` and ``mone = one * -1`` (``d_real.backward(mone)``); the Wasserstein distance
read off with ``.item()``; Adam with ``betas=(0.0, 0.9)``; and images sampled under ``torch.no_grad()``
from a fixed noise batch."""

from __future__ import annotations

import numpy as np
from shim import nn, optim, torch

DEVICE = "cpu"
NZ, NC, IMG, BATCH, N_CRITIC, LAMBDA_GP = 4, 1, 8, 4, 2, 10.0


class Generator(nn.Module):
    def __init__(self, nz=NZ, ngf=4):
        super().__init__()
        self.ngf = ngf
        self.project = nn.Sequential(nn.Linear(nz, 2 * ngf * 2 * 2), nn.BatchNorm1d(2 * ngf * 4), nn.ReLU(True))
        self.main = nn.Sequential(
            nn.ConvTranspose2d(2 * ngf, ngf, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf, NC, 4, 2, 1),
            nn.Tanh(),
        )

    def forward(self, z):
        out = self.project(z)
        return self.main(out.view(-1, 2 * self.ngf, 2, 2))


class Critic(nn.Module):
    def __init__(self, ndf=4):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(NC, ndf, 4, 2, 1),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, 2 * ndf, 4, 2, 1),
            nn.LeakyReLU(0.2, inplace=True),
        )
        self.linear = nn.Linear(2 * ndf * 2 * 2, 1)

    def forward(self, x):
        return self.linear(self.main(x).view(x.size(0), -1))


class WGAN(nn.Module):
    def __init__(self):
        super().__init__()
        self.netG = Generator()
        self.netD = Critic()


def calc_gradient_penalty(netD, real_data, fake_data, device):
    alpha = torch.rand(real_data.size(0), 1, 1, 1, device=device)
    interpolates = (alpha * real_data + (1 - alpha) * fake_data).requires_grad_(True)
    disc_interpolates = netD(interpolates)
    gradients = torch.autograd.grad(
        outputs=disc_interpolates,
        inputs=interpolates,
        grad_outputs=torch.ones_like(disc_interpolates),
        create_graph=True,
        retain_graph=True,
        only_inputs=True,
    )[0]
    gradients = gradients.view(gradients.size(0), -1)
    return ((gradients.norm(2, dim=1) - 1) ** 2).mean() * LAMBDA_GP


def make_data(n=16, seed=0):
    """Blurry blobs in [-1, 1]: the 'real' images."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:IMG, 0:IMG].astype(np.float32)
    centres = rng.uniform(2, IMG - 2, (n, 2)).astype(np.float32)
    blobs = np.exp(-((yy - centres[:, :1, None]) ** 2 + (xx - centres[:, 1:, None]) ** 2) / 4.0)
    return torch.from_numpy((2 * blobs - 1)[:, None].astype(np.float32))


def build():
    torch.manual_seed(0)
    return WGAN()


def train(model, steps=3):
    device = torch.device(DEVICE)
    model = model.to(device)
    netG, netD = model.netG, model.netD
    data = make_data()
    optimizerD = optim.Adam(netD.parameters(), lr=1e-3, betas=(0.0, 0.9))
    optimizerG = optim.Adam(netG.parameters(), lr=1e-3, betas=(0.0, 0.9))
    one = torch.tensor(1, dtype=torch.float, device=device)
    mone = one * -1
    fixed_noise = torch.randn(BATCH, NZ, device=device)
    d_costs, wasserstein, g_costs, penalties = [], [], [], []
    cursor = 0
    for _step in range(steps):
        for p in netD.parameters():
            p.requires_grad = True
        for _ in range(N_CRITIC):
            real = data[cursor : cursor + BATCH].to(device)
            cursor = (cursor + BATCH) % data.size(0)
            netD.zero_grad()
            d_real = netD(real).mean()
            d_real.backward(mone)
            noise = torch.randn(BATCH, NZ, device=device)
            with torch.no_grad():
                fake = netG(noise)
            d_fake = netD(fake).mean()
            d_fake.backward(one)
            gradient_penalty = calc_gradient_penalty(netD, real.data, fake.data, device)
            gradient_penalty.backward()
            d_cost = d_fake - d_real + gradient_penalty
            optimizerD.step()
            d_costs.append(d_cost.item())
            wasserstein.append((d_real - d_fake).item())
            penalties.append(gradient_penalty.item())
        for p in netD.parameters():
            p.requires_grad = False
        netG.zero_grad()
        noise = torch.randn(BATCH, NZ, device=device)
        g = netD(netG(noise)).mean()
        g.backward(mone)
        optimizerG.step()
        g_costs.append((-g).item())
    netG.eval()
    with torch.no_grad():
        samples = netG(fixed_noise)
    return {
        "losses": g_costs,
        "d_costs": d_costs,
        "wasserstein": wasserstein,
        "penalties": penalties,
        "samples": samples.flatten()[:16].tolist(),
        "frozen": [p.requires_grad for p in netD.parameters()],
    }


if __name__ == "__main__":
    print(train(build(), steps=20))
