"""A DCGAN training loop written the way the DCGAN tutorial teaches it, at a 8x8 image size.

Its idioms: a generator of ConvTranspose2d + BatchNorm2d + ReLU ending in Tanh and a discriminator
of strided Conv2d + LeakyReLU(0.2, inplace=True) + BatchNorm2d ending in Sigmoid, both in
``nn.Sequential`` under ``self.main``; ``weights_init`` applied with ``model.apply`` that picks
layers by ``m.__class__.__name__.find('Conv')`` / ``find('BatchNorm')`` and sets them with
``nn.init.normal_`` and ``nn.init.constant_`` on ``.data``; ``nn.BCELoss``; labels from
``torch.full((b,), real_label, dtype=torch.float)`` refilled with ``label.fill_(fake_label)``; noise
from ``torch.randn(b, nz, 1, 1)``; two Adam optimizers with ``betas=(0.5, 0.999)``; the
discriminator's fake pass on ``fake.detach()``; ``output.view(-1)``; ``D_x = output.mean().item()``;
and a fixed-noise sample under ``torch.no_grad()`` moved off the graph with ``.detach().cpu()``."""

from __future__ import annotations

import numpy as np
from shim import nn, optim, torch

nz, ngf, ndf, nc = 4, 4, 4, 1
real_label, fake_label = 1.0, 0.0
DEVICE = "cpu"


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        nn.init.normal_(m.weight.data, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        nn.init.normal_(m.weight.data, 1.0, 0.02)
        nn.init.constant_(m.bias.data, 0)


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 2, 4, 1, 0, bias=False),  # 4x4
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, nc, 4, 2, 1, bias=False),  # 8x8
            nn.Tanh(),
        )

    def forward(self, input):
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),  # 4x4
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 2, 2, 0, bias=False),  # 2x2
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, 1, 2, 1, 0, bias=False),  # 1x1
            nn.Sigmoid(),
        )

    def forward(self, input):
        return self.main(input)


class GAN(nn.Module):
    """Both nets in one module, so one state_dict carries the initial weights of both."""

    def __init__(self):
        super().__init__()
        self.netG = Generator()
        self.netG.apply(weights_init)
        self.netD = Discriminator()
        self.netD.apply(weights_init)


def build():
    torch.manual_seed(999)
    return GAN()


def train(model, steps=2):
    device = torch.device(DEVICE)
    netG, netD = model.netG.to(device), model.netD.to(device)
    criterion = nn.BCELoss()
    fixed_noise = torch.randn(2, nz, 1, 1, device=device)
    optimizerD = optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))
    rng = np.random.default_rng(0)
    images = torch.tensor(rng.uniform(-1, 1, (4 * steps, nc, 8, 8)).astype(np.float32))
    record = {"losses": [], "lossD": [], "D_x": [], "D_G_z1": [], "D_G_z2": []}
    for i in range(steps):
        # (1) Update D network: maximize log(D(x)) + log(1 - D(G(z)))
        netD.zero_grad()
        real_cpu = images[4 * i : 4 * i + 4].to(device)
        b_size = real_cpu.size(0)
        label = torch.full((b_size,), real_label, dtype=torch.float, device=device)
        output = netD(real_cpu).view(-1)
        errD_real = criterion(output, label)
        errD_real.backward()
        D_x = output.mean().item()
        noise = torch.randn(b_size, nz, 1, 1, device=device)
        fake = netG(noise)
        label.fill_(fake_label)
        output = netD(fake.detach()).view(-1)
        errD_fake = criterion(output, label)
        errD_fake.backward()
        D_G_z1 = output.mean().item()
        errD = errD_real + errD_fake
        optimizerD.step()
        # (2) Update G network: maximize log(D(G(z)))
        netG.zero_grad()
        label.fill_(real_label)
        output = netD(fake).view(-1)
        errG = criterion(output, label)
        errG.backward()
        D_G_z2 = output.mean().item()
        optimizerG.step()
        record["losses"].append(errG.item())
        record["lossD"].append(errD.item())
        record["D_x"].append(D_x)
        record["D_G_z1"].append(D_G_z1)
        record["D_G_z2"].append(D_G_z2)
    with torch.no_grad():
        fake = netG(fixed_noise).detach().cpu()
    record["sample_mean"] = fake.mean().item()
    record["sample_shape"] = list(fake.shape)
    return record


if __name__ == "__main__":
    print(train(build()))
