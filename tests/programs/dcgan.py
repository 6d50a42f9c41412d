"""pytorch/examples' dcgan/main.py at a tiny width (16x16 images, 2 channels of noise): a Generator
of ConvTranspose2d + BatchNorm2d + ReLU ending in Tanh, a Discriminator of strided Conv2d +
LeakyReLU(0.2, inplace=True) ending in Sigmoid and .view(-1, 1).squeeze(1), weights_init applied
with model.apply that picks layers by m.__class__.__name__.find('Conv') and writes
nn.init.normal_(m.weight.data, ...) and nn.init.constant_, BCELoss over labels from
torch.full(..., dtype=data.dtype) and label.fill_, fake.detach() for D's step, two Adam
optimizers with betas=(0.5, 0.999), and D(x), D(G(z)) read with .mean().item()."""

from __future__ import annotations

import numpy as np
from shim import nn, optim, torch

USE_CUDA = True
nz, ngf, ndf, nc = 2, 4, 4, 3


# custom weights initialization called on netG and netD
def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        torch.nn.init.normal_(m.weight, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        torch.nn.init.normal_(m.weight, 1.0, 0.02)
        torch.nn.init.zeros_(m.bias)


def weights_init_data(m):
    """The older form of the same init, as many copies of the example still write it."""
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        nn.init.normal_(m.weight.data, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        nn.init.normal_(m.weight.data, 1.0, 0.02)
        nn.init.constant_(m.bias.data, 0)


class Generator(nn.Module):
    def __init__(self, ngpu=1):
        super().__init__()
        self.ngpu = ngpu
        self.main = nn.Sequential(
            # input is Z, going into a convolution
            nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 4),
            nn.ReLU(True),
            # state size. (ngf*4) x 4 x 4
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            # state size. (ngf*2) x 8 x 8
            nn.ConvTranspose2d(ngf * 2, nc, 4, 2, 1, bias=False),
            nn.Tanh(),
            # state size. (nc) x 16 x 16
        )

    def forward(self, input):
        if input.is_cuda and self.ngpu > 1:
            output = nn.parallel.data_parallel(self.main, input, range(self.ngpu))
        else:
            output = self.main(input)
        return output


class Discriminator(nn.Module):
    def __init__(self, ngpu=1):
        super().__init__()
        self.ngpu = ngpu
        self.main = nn.Sequential(
            # input is (nc) x 16 x 16
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            # state size. (ndf) x 8 x 8
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            # state size. (ndf*2) x 4 x 4
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False),
            nn.Sigmoid(),
        )

    def forward(self, input):
        output = self.main(input)
        return output.view(-1, 1).squeeze(1)


class GAN(nn.Module):
    """Both nets in one module so the comparison can copy one state_dict; the example keeps two."""

    def __init__(self):
        super().__init__()
        self.netG = Generator()
        self.netG.apply(weights_init)
        self.netD = Discriminator()
        self.netD.apply(weights_init_data)


def make_images(n=8, seed=0):
    """Images scaled to [-1, 1] as the example's Normalize((0.5,)*3, (0.5,)*3) leaves them."""
    rng = np.random.default_rng(seed)
    return torch.tensor(rng.uniform(-1, 1, size=(n, nc, 16, 16)).astype(np.float32))


def build():
    torch.manual_seed(999)
    return GAN()


def train(model, steps=3):
    device = torch.device("cuda" if USE_CUDA and torch.cuda.is_available() else "cpu")
    netG, netD = model.netG.to(device), model.netD.to(device)
    criterion = nn.BCELoss()
    fixed_noise = torch.randn(4, nz, 1, 1, device=device)
    real_label, fake_label = 1, 0
    optimizerD = optim.Adam(netD.parameters(), lr=0.0002, betas=(0.5, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=0.0002, betas=(0.5, 0.999))
    images = make_images()
    errDs, errGs, D_xs, D_G_z1s, D_G_z2s = [], [], [], [], []
    for i in range(steps):
        ############################
        # (1) Update D network: maximize log(D(x)) + log(1 - D(G(z)))
        ###########################
        # train with real
        netD.zero_grad()
        real_cpu = images[(i % 2) * 4 : (i % 2) * 4 + 4].to(device)
        batch_size = real_cpu.size(0)
        label = torch.full((batch_size,), real_label, dtype=real_cpu.dtype, device=device)
        output = netD(real_cpu)
        errD_real = criterion(output, label)
        errD_real.backward()
        D_x = output.mean().item()

        # train with fake
        noise = torch.randn(batch_size, nz, 1, 1, device=device)
        fake = netG(noise)
        label.fill_(fake_label)
        output = netD(fake.detach())
        errD_fake = criterion(output, label)
        errD_fake.backward()
        D_G_z1 = output.mean().item()
        errD = errD_real + errD_fake
        optimizerD.step()

        ############################
        # (2) Update G network: maximize log(D(G(z)))
        ###########################
        netG.zero_grad()
        label.fill_(real_label)  # fake labels are real for generator cost
        output = netD(fake)
        errG = criterion(output, label)
        errG.backward()
        D_G_z2 = output.mean().item()
        optimizerG.step()
        errDs.append(errD.item())
        errGs.append(errG.item())
        D_xs.append(D_x)
        D_G_z1s.append(D_G_z1)
        D_G_z2s.append(D_G_z2)
    with torch.no_grad():
        fake = netG(fixed_noise).detach()
    return {
        "losses": [d + g for d, g in zip(errDs, errGs)],
        "errD": errDs,
        "errG": errGs,
        "D_x": D_xs,
        "D_G_z1": D_G_z1s,
        "D_G_z2": D_G_z2s,
        "fake": float(fake.abs().sum()),
        "running_var": float(netD.main[3].running_var.sum()),
    }


if __name__ == "__main__":
    print(train(build()))
