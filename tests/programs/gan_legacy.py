"""A GAN written as the 2017 repositories wrote them (the DCGAN example of PyTorch 0.2, the
generative-model collections), at 8x8 images.

Its idioms: preallocated buffers ``input = torch.FloatTensor(batchSize, nc, s, s)``, ``noise =
torch.FloatTensor(batchSize, nz, 1, 1)``, ``label = torch.FloatTensor(batchSize)`` filled each step by
``input.resize_as_(real_cpu).copy_(real_cpu)``, ``label.resize_(batch_size).fill_(real_label)`` and
``noise.resize_(batch_size, nz, 1, 1).normal_(0, 1)``, wrapped as ``Variable``; ``weights_init`` by
``classname.find('Conv') != -1`` on ``m.weight.data.normal_(0.0, 0.02)`` and ``m.bias.data.fill_(0)``
applied with ``net.apply``; a generator that grows by ``F.upsample(x, scale_factor=2)`` and
``F.upsample_bilinear`` (deprecated, with PyTorch's warnings) and ends in ``F.tanh``; a discriminator
as ``nn.Sequential(OrderedDict([...]))`` ending in ``F.sigmoid``; a linear head initialised by
``nn.init.xavier_uniform`` (no underscore); ``nn.BCELoss()``; ``errD_real.data.item()`` and
``D_x = output.data.mean()``; the fake pass on ``fake.detach()``; and a sample under
``Variable(fixed_noise, volatile=True)``."""

# ruff: noqa: UP008, UP031, UP032, B007  (the old repositories' spelling is the point: super(Net, self), % and .format)

from __future__ import annotations

import warnings
from collections import OrderedDict

import numpy as np
from shim import F, nn, optim, torch

Variable = torch.autograd.Variable  # from torch.autograd import Variable

nz, ngf, ndf, nc, imageSize = 4, 6, 4, 1, 8
batchSize = 4
real_label, fake_label = 1, 0
UPSAMPLE = "nearest"  # or "bilinear": F.upsample_bilinear


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        m.weight.data.normal_(0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        m.weight.data.normal_(1.0, 0.02)
        m.bias.data.fill_(0)


class _netG(nn.Module):
    def __init__(self):
        super(_netG, self).__init__()
        self.fc = nn.Linear(nz, ngf * 2 * 2)
        nn.init.xavier_uniform(self.fc.weight)
        self.conv1 = nn.Conv2d(ngf, ngf, 3, 1, 1)
        self.bn1 = nn.BatchNorm2d(ngf)
        self.conv2 = nn.Conv2d(ngf, nc, 3, 1, 1)

    def forward(self, input):
        x = self.fc(input.view(input.size(0), -1)).view(-1, ngf, 2, 2)
        if UPSAMPLE == "bilinear":
            x = F.upsample_bilinear(x, scale_factor=2)
        else:
            x = F.upsample(x, scale_factor=2)
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.upsample(x, scale_factor=2, mode="nearest")
        return F.tanh(self.conv2(x))


class _netD(nn.Module):
    def __init__(self):
        super(_netD, self).__init__()
        self.main = nn.Sequential(
            OrderedDict(
                [
                    ("conv1", nn.Conv2d(nc, ndf, 4, 2, 1, bias=False)),
                    ("lrelu1", nn.LeakyReLU(0.2, inplace=True)),
                    ("conv2", nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False)),
                    ("bn2", nn.BatchNorm2d(ndf * 2)),
                    ("lrelu2", nn.LeakyReLU(0.2, inplace=True)),
                    ("conv3", nn.Conv2d(ndf * 2, 1, 2, 1, 0, bias=False)),
                ]
            )
        )

    def forward(self, input):
        output = F.sigmoid(self.main(input))
        return output.view(-1, 1).squeeze(1)


class GAN(nn.Module):
    """Both nets in one module, so one state_dict carries the initial weights of both."""

    def __init__(self):
        super(GAN, self).__init__()
        self.netG = _netG()
        self.netG.apply(weights_init)
        self.netD = _netD()
        self.netD.apply(weights_init)


def build():
    torch.manual_seed(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # xavier_uniform's deprecation (recorded in train)
        return GAN()


def train(model, steps=3):
    netG, netD = model.netG, model.netD
    criterion = nn.BCELoss()
    input = torch.FloatTensor(batchSize, nc, imageSize, imageSize)
    noise = torch.FloatTensor(batchSize, nz, 1, 1)
    fixed_noise = torch.FloatTensor(batchSize, nz, 1, 1).normal_(0, 1)
    label = torch.FloatTensor(batchSize)
    optimizerD = optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))
    data = np.random.RandomState(0).uniform(-1, 1, (batchSize * steps, nc, imageSize, imageSize)).astype(np.float32)
    record = {"losses": [], "errD": [], "D_x": [], "D_G_z1": [], "D_G_z2": [], "lines": []}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nn.init.xavier_uniform(torch.empty(2, 2))
        F.upsample(torch.zeros(1, 1, 2, 2), scale_factor=2)
        F.upsample_bilinear(torch.zeros(1, 1, 2, 2), scale_factor=2)
        F.sigmoid(torch.zeros(1))
        F.tanh(torch.zeros(1))
    record["warnings"] = [w.category.__name__ for w in caught]
    for i in range(steps):
        ############################
        # (1) Update D network: maximize log(D(x)) + log(1 - D(G(z)))
        ###########################
        # train with real
        netD.zero_grad()
        real_cpu = torch.from_numpy(data[i * batchSize : (i + 1) * batchSize])
        batch_size = real_cpu.size(0)
        input.resize_as_(real_cpu).copy_(real_cpu)
        label.resize_(batch_size).fill_(real_label)
        inputv = Variable(input)
        labelv = Variable(label)

        output = netD(inputv)
        errD_real = criterion(output, labelv)
        errD_real.backward()
        D_x = output.data.mean()

        # train with fake
        noise.resize_(batch_size, nz, 1, 1).normal_(0, 1)
        noisev = Variable(noise)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fake = netG(noisev)
        labelv = Variable(label.fill_(fake_label))
        output = netD(fake.detach())
        errD_fake = criterion(output, labelv)
        errD_fake.backward()
        D_G_z1 = output.data.mean()
        errD = errD_real + errD_fake
        optimizerD.step()

        ############################
        # (2) Update G network: maximize log(D(G(z)))
        ###########################
        netG.zero_grad()
        labelv = Variable(label.fill_(real_label))  # fake labels are real for generator cost
        output = netD(fake)
        errG = criterion(output, labelv)
        errG.backward()
        D_G_z2 = output.data.mean()
        optimizerG.step()

        record["lines"].append(
            "[%d/%d][%d/%d] Loss_D: %.4f Loss_G: %.4f D(x): %.4f D(G(z)): %.4f / %.4f"
            % (0, 1, i, steps, errD.data.item(), errG.data.item(), D_x, D_G_z1, D_G_z2)
        )
        record["losses"].append(errG.data.item())
        record["errD"].append(errD.data.item())
        record["D_x"].append(float(D_x))
        record["D_G_z1"].append(float(D_G_z1))
        record["D_G_z2"].append(float(D_G_z2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fake = netG(Variable(fixed_noise, volatile=True))
    record["sample"] = [fake.data.mean().item(), list(fake.size())]
    return record


if __name__ == "__main__":
    print(train(build()))
