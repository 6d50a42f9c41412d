"""A CycleGAN training step on two synthetic 8x8 image domains, written the way the CycleGAN/pix2pix
repository writes its ResNet generator, PatchGAN discriminator, image pool and losses.

Its idioms: ``nn.ReflectionPad2d`` around 7x7 and 3x3 convolutions; ``nn.InstanceNorm2d`` with
``affine=False`` (no parameters, no running statistics) through ``functools.partial``; a residual
block ``x + self.conv_block(x)``; ``nn.ConvTranspose2d(stride=2, padding=1, output_padding=1)``
upsampling; a PatchGAN discriminator with ``LeakyReLU(0.2, True)``; an image pool answering with a
stored image or the new one by ``random.uniform(0, 1) > 0.5`` and ``random.randint``, through
``image.data``, ``torch.unsqueeze``, ``.clone()`` and ``torch.cat``; an LSGAN ``nn.MSELoss`` against
``real_label``/``fake_label`` buffers ``expand_as`` the prediction; cycle and identity L1 losses;
one Adam over ``itertools.chain(netG_A.parameters(), netG_B.parameters())`` with ``betas=(0.5, 0.999)``;
``set_requires_grad`` freezing the discriminators for the generator step; ``(loss_D_real + loss_D_fake) * 0.5``;
and the linear decay ``LambdaLR`` of ``1.0 - max(0, epoch + epoch_count - n_epochs) / float(n_epochs_decay + 1)``."""

from __future__ import annotations

import functools
import itertools
import random

import numpy as np
from shim import lr_scheduler, nn, optim, torch

DEVICE = "cpu"
IMG, NC, NGF, NDF, BATCH, POOL = 8, 2, 4, 4, 2, 2
LAMBDA_A, LAMBDA_B, LAMBDA_IDT = 10.0, 10.0, 0.5


class ResnetBlock(nn.Module):
    def __init__(self, dim, norm_layer):
        super().__init__()
        self.conv_block = nn.Sequential(
            nn.ReflectionPad2d(1),
            nn.Conv2d(dim, dim, kernel_size=3, padding=0, bias=True),
            norm_layer(dim),
            nn.ReLU(True),
            nn.ReflectionPad2d(1),
            nn.Conv2d(dim, dim, kernel_size=3, padding=0, bias=True),
            norm_layer(dim),
        )

    def forward(self, x):
        return x + self.conv_block(x)


class ResnetGenerator(nn.Module):
    def __init__(self, input_nc, output_nc, ngf=NGF, n_blocks=1):
        super().__init__()
        norm_layer = functools.partial(nn.InstanceNorm2d, affine=False, track_running_stats=False)
        model = [
            nn.ReflectionPad2d(3),
            nn.Conv2d(input_nc, ngf, kernel_size=7, padding=0),
            norm_layer(ngf),
            nn.ReLU(True),
        ]
        model += [nn.Conv2d(ngf, ngf * 2, kernel_size=3, stride=2, padding=1), norm_layer(ngf * 2), nn.ReLU(True)]
        for _ in range(n_blocks):
            model += [ResnetBlock(ngf * 2, norm_layer)]
        model += [
            nn.ConvTranspose2d(ngf * 2, ngf, kernel_size=3, stride=2, padding=1, output_padding=1),
            norm_layer(ngf),
            nn.ReLU(True),
        ]
        model += [nn.ReflectionPad2d(3), nn.Conv2d(ngf, output_nc, kernel_size=7, padding=0), nn.Tanh()]
        self.model = nn.Sequential(*model)

    def forward(self, input):
        return self.model(input)


class NLayerDiscriminator(nn.Module):
    def __init__(self, input_nc, ndf=NDF):
        super().__init__()
        norm_layer = functools.partial(nn.InstanceNorm2d, affine=False, track_running_stats=False)
        sequence = [nn.Conv2d(input_nc, ndf, kernel_size=4, stride=2, padding=1), nn.LeakyReLU(0.2, True)]
        sequence += [
            nn.Conv2d(ndf, ndf * 2, kernel_size=4, stride=1, padding=1),
            norm_layer(ndf * 2),
            nn.LeakyReLU(0.2, True),
        ]
        sequence += [nn.Conv2d(ndf * 2, 1, kernel_size=3, stride=1, padding=1)]
        self.model = nn.Sequential(*sequence)

    def forward(self, input):
        return self.model(input)


class GANLoss(nn.Module):
    def __init__(self, target_real_label=1.0, target_fake_label=0.0):
        super().__init__()
        self.register_buffer("real_label", torch.tensor(target_real_label))
        self.register_buffer("fake_label", torch.tensor(target_fake_label))
        self.loss = nn.MSELoss()

    def get_target_tensor(self, prediction, target_is_real):
        target_tensor = self.real_label if target_is_real else self.fake_label
        return target_tensor.expand_as(prediction)

    def __call__(self, prediction, target_is_real):
        return self.loss(prediction, self.get_target_tensor(prediction, target_is_real))


class ImagePool:
    def __init__(self, pool_size):
        self.pool_size = pool_size
        self.num_imgs = 0
        self.images = []

    def query(self, images):
        if self.pool_size == 0:
            return images
        return_images = []
        for image in images:
            image = torch.unsqueeze(image.data, 0)
            if self.num_imgs < self.pool_size:
                self.num_imgs = self.num_imgs + 1
                self.images.append(image)
                return_images.append(image)
            else:
                p = random.uniform(0, 1)
                if p > 0.5:
                    random_id = random.randint(0, self.pool_size - 1)
                    tmp = self.images[random_id].clone()
                    self.images[random_id] = image
                    return_images.append(tmp)
                else:
                    return_images.append(image)
        return torch.cat(return_images, 0)


class CycleGAN(nn.Module):
    def __init__(self):
        super().__init__()
        self.netG_A = ResnetGenerator(NC, NC)
        self.netG_B = ResnetGenerator(NC, NC)
        self.netD_A = NLayerDiscriminator(NC)
        self.netD_B = NLayerDiscriminator(NC)
        self.criterionGAN = GANLoss()


def set_requires_grad(nets, requires_grad=False):
    if not isinstance(nets, list):
        nets = [nets]
    for net in nets:
        if net is not None:
            for param in net.parameters():
                param.requires_grad = requires_grad


def make_domains(n=8, seed=0):
    """Domain A: horizontal stripes; domain B: vertical stripes, with jittered phase."""
    rng = np.random.default_rng(seed)
    grid = np.arange(IMG, dtype=np.float32)
    phase = rng.uniform(0, 2 * np.pi, (n, NC, 1, 1)).astype(np.float32)
    a = np.sin(grid[None, None, :, None] + phase) * np.ones((1, 1, 1, IMG), np.float32)
    b = np.sin(grid[None, None, None, :] + phase) * np.ones((1, 1, IMG, 1), np.float32)
    return torch.from_numpy(a.astype(np.float32)), torch.from_numpy(b.astype(np.float32))


def build():
    torch.manual_seed(0)
    return CycleGAN()


def train(model, steps=2):
    random.seed(0)
    device = torch.device(DEVICE)
    model = model.to(device)
    netG_A, netG_B, netD_A, netD_B = model.netG_A, model.netG_B, model.netD_A, model.netD_B
    criterionGAN, criterionCycle, criterionIdt = model.criterionGAN, nn.L1Loss(), nn.L1Loss()
    optimizer_G = optim.Adam(itertools.chain(netG_A.parameters(), netG_B.parameters()), lr=2e-3, betas=(0.5, 0.999))
    optimizer_D = optim.Adam(itertools.chain(netD_A.parameters(), netD_B.parameters()), lr=2e-3, betas=(0.5, 0.999))
    epoch_count, n_epochs, n_epochs_decay = 1, 1, steps

    def lambda_rule(epoch):
        return 1.0 - max(0, epoch + epoch_count - n_epochs) / float(n_epochs_decay + 1)

    schedulers = [lr_scheduler.LambdaLR(optimizer, lr_lambda=lambda_rule) for optimizer in (optimizer_G, optimizer_D)]
    fake_A_pool, fake_B_pool = ImagePool(POOL), ImagePool(POOL)
    domain_a, domain_b = make_domains()
    losses, d_losses, cycles, lrs = [], [], [], []
    for step in range(steps):
        start = (step * BATCH) % domain_a.size(0)
        real_A = domain_a[start : start + BATCH].to(device)
        real_B = domain_b[start : start + BATCH].to(device)
        fake_B = netG_A(real_A)
        rec_A = netG_B(fake_B)
        fake_A = netG_B(real_B)
        rec_B = netG_A(fake_A)

        set_requires_grad([netD_A, netD_B], False)
        optimizer_G.zero_grad()
        idt_A = netG_A(real_B)
        loss_idt_A = criterionIdt(idt_A, real_B) * LAMBDA_B * LAMBDA_IDT
        idt_B = netG_B(real_A)
        loss_idt_B = criterionIdt(idt_B, real_A) * LAMBDA_A * LAMBDA_IDT
        loss_G_A = criterionGAN(netD_A(fake_B), True)
        loss_G_B = criterionGAN(netD_B(fake_A), True)
        loss_cycle_A = criterionCycle(rec_A, real_A) * LAMBDA_A
        loss_cycle_B = criterionCycle(rec_B, real_B) * LAMBDA_B
        loss_G = loss_G_A + loss_G_B + loss_cycle_A + loss_cycle_B + loss_idt_A + loss_idt_B
        loss_G.backward()
        optimizer_G.step()

        set_requires_grad([netD_A, netD_B], True)
        optimizer_D.zero_grad()
        loss_D = 0.0
        for netD, real, fake_pool, fake in (
            (netD_A, real_B, fake_B_pool, fake_B),
            (netD_B, real_A, fake_A_pool, fake_A),
        ):
            fake = fake_pool.query(fake)
            loss_D_real = criterionGAN(netD(real), True)
            loss_D_fake = criterionGAN(netD(fake.detach()), False)
            loss_D_basic = (loss_D_real + loss_D_fake) * 0.5
            loss_D_basic.backward()
            loss_D = loss_D + loss_D_basic.item()
        optimizer_D.step()
        for scheduler in schedulers:
            scheduler.step()
        losses.append(loss_G.item())
        d_losses.append(loss_D)
        cycles.append([loss_cycle_A.item(), loss_cycle_B.item(), loss_idt_A.item(), loss_idt_B.item()])
        lrs.append(optimizer_G.param_groups[0]["lr"])
    return {
        "losses": losses,
        "d_losses": d_losses,
        "cycles": cycles,
        "lrs": lrs,
        "n_buffers": len(list(model.buffers())),
        "pool": [fake_A_pool.num_imgs, fake_B_pool.num_imgs],
    }


if __name__ == "__main__":
    print(train(build(), steps=4))
