"""A tiny StyleGAN2 (mapping network, modulated convolutions, noise injection, skip ToRGB) and a
residual discriminator trained for a few steps on synthetic 8x8 images, written the way the popular
PyTorch StyleGAN2 ports write their layers.

Its idioms: equalized learning rate, weights drawn ``torch.randn(out, in).div_(lr_mul)`` and scaled
in ``forward`` (``F.linear(input, self.weight * self.scale, bias=self.bias * self.lr_mul)``,
``F.conv2d(input, self.weight * self.scale, ...)``); PixelNorm by
``input * torch.rsqrt(torch.mean(input ** 2, dim=1, keepdim=True) + 1e-8)``; a leaky ReLU scaled by
``math.sqrt(2)``; the modulated convolution as one grouped convolution with per-sample weights
(``weight.view(batch * out, in, k, k)``, ``input.view(1, batch * in, h, w)``, ``groups=batch``) and
demodulation by ``torch.rsqrt(weight.pow(2).sum([2, 3, 4]) + 1e-8)``; noise injection
``image + self.weight * noise`` with a learned per-channel weight and ``torch.randn(batch, 1, h, w)``
noise; a learned constant input ``repeat``-ed over the batch; upsampling by ``F.interpolate(scale_factor=2,
mode="bilinear", align_corners=False)``; a residual discriminator ``(out + skip) / math.sqrt(2)``;
the non-saturating ``F.softplus`` losses; the R1 penalty ``autograd.grad(outputs=real_pred.sum(),
inputs=real_img, create_graph=True)`` backpropagated with ``0 * real_pred[0]`` every ``d_reg_every``
steps; ``requires_grad(model, flag)`` toggling; Adam with ``betas=(0 ** ratio, 0.99 ** ratio)``; and
the ``g_ema`` accumulation ``par1[k].data.mul_(decay).add_(par2[k].data, alpha=1 - decay)`` over
``dict(model.named_parameters())``."""

from __future__ import annotations

import copy
import math

import numpy as np
from shim import F, nn, optim, torch

DEVICE = "cpu"
STYLE, N_MLP, CHANNELS, SIZE, BATCH = 8, 2, 4, 8, 2
R1, D_REG_EVERY = 10.0, 2


class PixelNorm(nn.Module):
    def forward(self, input):
        return input * torch.rsqrt(torch.mean(input**2, dim=1, keepdim=True) + 1e-8)


class EqualLinear(nn.Module):
    def __init__(self, in_dim, out_dim, bias=True, bias_init=0.0, lr_mul=1.0, activation=None):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_dim, in_dim).div_(lr_mul))
        self.bias = nn.Parameter(torch.zeros(out_dim).fill_(bias_init)) if bias else None
        self.activation = activation
        self.scale = (1 / math.sqrt(in_dim)) * lr_mul
        self.lr_mul = lr_mul

    def forward(self, input):
        out = F.linear(input, self.weight * self.scale, bias=self.bias * self.lr_mul)
        if self.activation:
            out = F.leaky_relu(out, 0.2) * math.sqrt(2)
        return out


class EqualConv2d(nn.Module):
    def __init__(self, in_channel, out_channel, kernel_size, stride=1, padding=0, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(out_channel, in_channel, kernel_size, kernel_size))
        self.scale = 1 / math.sqrt(in_channel * kernel_size**2)
        self.stride, self.padding = stride, padding
        self.bias = nn.Parameter(torch.zeros(out_channel)) if bias else None

    def forward(self, input):
        return F.conv2d(input, self.weight * self.scale, bias=self.bias, stride=self.stride, padding=self.padding)


class ModulatedConv2d(nn.Module):
    def __init__(self, in_channel, out_channel, kernel_size, style_dim, demodulate=True, upsample=False):
        super().__init__()
        self.eps = 1e-8
        self.kernel_size, self.in_channel, self.out_channel = kernel_size, in_channel, out_channel
        self.upsample, self.demodulate = upsample, demodulate
        self.scale = 1 / math.sqrt(in_channel * kernel_size**2)
        self.padding = kernel_size // 2
        self.weight = nn.Parameter(torch.randn(1, out_channel, in_channel, kernel_size, kernel_size))
        self.modulation = EqualLinear(style_dim, in_channel, bias_init=1)

    def forward(self, input, style):
        batch, in_channel, height, width = input.shape
        style = self.modulation(style).view(batch, 1, in_channel, 1, 1)
        weight = self.scale * self.weight * style
        if self.demodulate:
            demod = torch.rsqrt(weight.pow(2).sum([2, 3, 4]) + 1e-8)
            weight = weight * demod.view(batch, self.out_channel, 1, 1, 1)
        weight = weight.view(batch * self.out_channel, in_channel, self.kernel_size, self.kernel_size)
        if self.upsample:
            input = F.interpolate(input, scale_factor=2, mode="bilinear", align_corners=False)
            height, width = height * 2, width * 2
        input = input.view(1, batch * in_channel, height, width)
        out = F.conv2d(input, weight, padding=self.padding, groups=batch)
        return out.view(batch, self.out_channel, height, width)


class NoiseInjection(nn.Module):
    def __init__(self, channel):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(1, channel, 1, 1))

    def forward(self, image, noise=None):
        if noise is None:
            batch, _, height, width = image.shape
            noise = torch.randn(batch, 1, height, width, device=image.device)
        return image + self.weight * noise


class ConstantInput(nn.Module):
    def __init__(self, channel, size=4):
        super().__init__()
        self.input = nn.Parameter(torch.randn(1, channel, size, size))

    def forward(self, input):
        return self.input.repeat(input.shape[0], 1, 1, 1)


class StyledConv(nn.Module):
    def __init__(self, in_channel, out_channel, kernel_size, style_dim, upsample=False):
        super().__init__()
        self.conv = ModulatedConv2d(in_channel, out_channel, kernel_size, style_dim, upsample=upsample)
        self.noise = NoiseInjection(out_channel)
        self.bias = nn.Parameter(torch.zeros(1, out_channel, 1, 1))

    def forward(self, input, style, noise=None):
        out = self.conv(input, style)
        out = self.noise(out, noise=noise)
        return F.leaky_relu(out + self.bias, 0.2) * math.sqrt(2)


class ToRGB(nn.Module):
    def __init__(self, in_channel, style_dim, upsample=True):
        super().__init__()
        self.upsample = upsample
        self.conv = ModulatedConv2d(in_channel, 3, 1, style_dim, demodulate=False)
        self.bias = nn.Parameter(torch.zeros(1, 3, 1, 1))

    def forward(self, input, style, skip=None):
        out = self.conv(input, style) + self.bias
        if skip is not None:
            if self.upsample:
                skip = F.interpolate(skip, scale_factor=2, mode="bilinear", align_corners=False)
            out = out + skip
        return out


class Generator(nn.Module):
    def __init__(self, style_dim=STYLE, n_mlp=N_MLP, channel=CHANNELS, lr_mlp=0.01):
        super().__init__()
        layers = [PixelNorm()]
        for _ in range(n_mlp):
            layers.append(EqualLinear(style_dim, style_dim, lr_mul=lr_mlp, activation="fused_lrelu"))
        self.style = nn.Sequential(*layers)
        self.input = ConstantInput(channel)
        self.conv1 = StyledConv(channel, channel, 3, style_dim)
        self.to_rgb1 = ToRGB(channel, style_dim, upsample=False)
        self.convs = nn.ModuleList(
            [StyledConv(channel, channel, 3, style_dim, upsample=True), StyledConv(channel, channel, 3, style_dim)]
        )
        self.to_rgbs = nn.ModuleList([ToRGB(channel, style_dim)])

    def forward(self, styles, noise=None):
        latent = self.style(styles)
        out = self.input(latent)
        out = self.conv1(out, latent, noise=noise)
        skip = self.to_rgb1(out, latent)
        for conv1, conv2, to_rgb in zip(self.convs[::2], self.convs[1::2], self.to_rgbs):
            out = conv1(out, latent, noise=noise if noise is None else F.interpolate(noise, scale_factor=2))
            out = conv2(out, latent, noise=noise if noise is None else F.interpolate(noise, scale_factor=2))
            skip = to_rgb(out, latent, skip)
        return skip


class ResBlock(nn.Module):
    def __init__(self, in_channel, out_channel):
        super().__init__()
        self.conv1 = EqualConv2d(in_channel, in_channel, 3, padding=1)
        self.conv2 = EqualConv2d(in_channel, out_channel, 3, stride=2, padding=1)
        self.skip = EqualConv2d(in_channel, out_channel, 1, stride=2, bias=False)

    def forward(self, input):
        out = F.leaky_relu(self.conv1(input), 0.2) * math.sqrt(2)
        out = F.leaky_relu(self.conv2(out), 0.2) * math.sqrt(2)
        skip = self.skip(input)
        return (out + skip) / math.sqrt(2)


class Discriminator(nn.Module):
    def __init__(self, channel=CHANNELS):
        super().__init__()
        self.from_rgb = EqualConv2d(3, channel, 1)
        self.block = ResBlock(channel, channel)
        self.final_linear = nn.Sequential(
            EqualLinear(channel * 4 * 4, channel, activation="fused_lrelu"), EqualLinear(channel, 1)
        )

    def forward(self, input):
        out = F.leaky_relu(self.from_rgb(input), 0.2) * math.sqrt(2)
        out = self.block(out)
        return self.final_linear(out.view(out.shape[0], -1))


class StyleGAN2(nn.Module):
    def __init__(self):
        super().__init__()
        self.generator = Generator()
        self.discriminator = Discriminator()


def requires_grad(model, flag=True):
    for p in model.parameters():
        p.requires_grad = flag


def accumulate(model1, model2, decay=0.999):
    par1 = dict(model1.named_parameters())
    par2 = dict(model2.named_parameters())
    for k in par1.keys():
        par1[k].data.mul_(decay).add_(par2[k].data, alpha=1 - decay)


def d_logistic_loss(real_pred, fake_pred):
    return F.softplus(-real_pred).mean() + F.softplus(fake_pred).mean()


def d_r1_loss(real_pred, real_img):
    (grad_real,) = torch.autograd.grad(outputs=real_pred.sum(), inputs=real_img, create_graph=True)
    return grad_real.pow(2).reshape(grad_real.shape[0], -1).sum(1).mean()


def g_nonsaturating_loss(fake_pred):
    return F.softplus(-fake_pred).mean()


def make_images(n=8, seed=0):
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:SIZE, 0:SIZE].astype(np.float32) / SIZE
    colours = rng.uniform(-1, 1, (n, 3, 1, 1)).astype(np.float32)
    return torch.from_numpy((colours * np.cos(2 * np.pi * (xx - yy))).astype(np.float32))


def build():
    torch.manual_seed(0)
    return StyleGAN2()


def train(model, steps=2):
    device = torch.device(DEVICE)
    model = model.to(device)
    generator, discriminator = model.generator, model.discriminator
    g_ema = copy.deepcopy(generator).eval()
    accumulate(g_ema, generator, 0)
    d_reg_ratio = D_REG_EVERY / (D_REG_EVERY + 1)
    g_optim = optim.Adam(generator.parameters(), lr=2e-3, betas=(0**1.0, 0.99**1.0))
    d_optim = optim.Adam(discriminator.parameters(), lr=2e-3 * d_reg_ratio, betas=(0**d_reg_ratio, 0.99**d_reg_ratio))
    images = make_images()
    sample_z = torch.randn(BATCH, STYLE, device=device)
    losses, d_losses, r1s = [], [], []
    for i in range(steps):
        start = (i * BATCH) % images.size(0)
        real_img = images[start : start + BATCH].to(device)

        requires_grad(generator, False)
        requires_grad(discriminator, True)
        noise = torch.randn(BATCH, STYLE, device=device)
        fake_img = generator(noise)
        d_loss = d_logistic_loss(discriminator(real_img), discriminator(fake_img))
        discriminator.zero_grad()
        d_loss.backward()
        d_optim.step()
        d_losses.append(d_loss.item())

        if i % D_REG_EVERY == 0:
            real_img.requires_grad = True
            real_pred = discriminator(real_img)
            r1_loss = d_r1_loss(real_pred, real_img)
            discriminator.zero_grad()
            (R1 / 2 * r1_loss * D_REG_EVERY + 0 * real_pred[0]).backward()
            d_optim.step()
            r1s.append(r1_loss.item())

        requires_grad(generator, True)
        requires_grad(discriminator, False)
        noise = torch.randn(BATCH, STYLE, device=device)
        g_loss = g_nonsaturating_loss(discriminator(generator(noise)))
        generator.zero_grad()
        g_loss.backward()
        g_optim.step()
        losses.append(g_loss.item())
        accumulate(g_ema, generator, 0.5)
    with torch.no_grad():
        fixed = torch.zeros(BATCH, 1, 4, 4, device=device)
        sample = g_ema(sample_z, noise=fixed)
    return {
        "losses": losses,
        "d_losses": d_losses,
        "r1": r1s,
        "sample": sample.flatten()[::7].tolist(),
        "noise_weight": generator.conv1.noise.weight.flatten().tolist(),
    }


if __name__ == "__main__":
    print(train(build(), steps=4))
