"""A conditional SNGAN with a projection discriminator, as pytorch-sngan-projection / BigGAN-PyTorch /
mimicry write it, at a tiny size on synthetic class-coloured images.

Its idioms: every discriminator layer wrapped by ``nn.utils.spectral_norm`` (the old hook API, whose
``weight_orig``, ``weight_u``, ``weight_v`` sit in the state_dict and whose power iteration runs on each
training forward) or ``nn.utils.parametrizations.spectral_norm``; ``nn.init.xavier_uniform_(w, gain)``
with ``math.sqrt(2)`` on the residual convs, applied before the wrapping; residual D blocks with
``F.avg_pool2d`` and a learnable 1x1 shortcut; the projection head ``torch.sum(self.l_y(y) * h, dim=1,
keepdim=True)`` added to ``self.l5(h)`` after ``torch.sum(h, dim=(2, 3))``; a generator of conditional
BatchNorm (``nn.BatchNorm2d(affine=False)`` with class embeddings for gamma and beta,
``.view(-1, C, 1, 1)``, gamma's embedding initialised to ones by ``.data.fill_(1.0)``),
``F.interpolate(scale_factor=2)`` upsampling, ``torch.tanh``; hinge losses ``F.relu(1.0 - d_real).mean()``
and ``-d_fake.mean()`` (or the non-saturating ``F.softplus``); ``n_dis`` critic steps per generator step
with ``z = torch.randn(...)`` and ``torch.randint`` labels drawn under the seed; ``Adam(betas=(0.0,
0.9))``; a frozen-D generator step by ``requires_grad_(False)``; and fixed-noise samples under
``torch.no_grad()`` with the discriminator in ``eval()`` (no power iteration) and the generator in
``train()`` (BigGAN-PyTorch's ``G_eval_mode`` off), the spectral norm checked by ``torch.linalg.matrix_norm(...,
ord=2)``.
"""

from __future__ import annotations

import math

import numpy as np
from shim import F, nn, optim, torch

SN = "hooks"  # or "parametrizations"
LOSS = "hinge"  # or "ns": the non-saturating softplus loss
N_CLASSES, NZ, CH = 3, 8, 8
# BigGAN-PyTorch's G_eval_mode: samples with the generator in eval() (running statistics). Off here, as its
# default: the generator's conv biases sit before BatchNorm, so their exact gradient is zero and Adam turns
# round-off into full steps that each library takes differently; with batch statistics they cancel.
G_EVAL_MODE = False


def sn(module):
    if SN == "hooks":
        return nn.utils.spectral_norm(module)
    return nn.utils.parametrizations.spectral_norm(module)


class ConditionalBatchNorm2d(nn.Module):
    def __init__(self, num_features, num_classes):
        super().__init__()
        self.num_features = num_features
        self.bn = nn.BatchNorm2d(num_features, affine=False)
        self.embed_gamma = nn.Embedding(num_classes, num_features)
        self.embed_beta = nn.Embedding(num_classes, num_features)
        self.embed_gamma.weight.data.fill_(1.0)
        self.embed_beta.weight.data.zero_()

    def forward(self, x, y):
        out = self.bn(x)
        gamma = self.embed_gamma(y).view(-1, self.num_features, 1, 1)
        beta = self.embed_beta(y).view(-1, self.num_features, 1, 1)
        return gamma * out + beta


class GBlock(nn.Module):
    def __init__(self, in_ch, out_ch, num_classes):
        super().__init__()
        self.b1 = ConditionalBatchNorm2d(in_ch, num_classes)
        self.c1 = nn.Conv2d(in_ch, out_ch, 3, 1, 1)
        self.b2 = ConditionalBatchNorm2d(out_ch, num_classes)
        self.c2 = nn.Conv2d(out_ch, out_ch, 3, 1, 1)
        self.c_sc = nn.Conv2d(in_ch, out_ch, 1, 1, 0)
        nn.init.xavier_uniform_(self.c1.weight.data, math.sqrt(2))
        nn.init.xavier_uniform_(self.c2.weight.data, math.sqrt(2))
        nn.init.xavier_uniform_(self.c_sc.weight.data, 1.0)

    def forward(self, x, y):
        h = F.relu(self.b1(x, y))
        h = F.interpolate(h, scale_factor=2)
        h = self.c1(h)
        h = F.relu(self.b2(h, y))
        h = self.c2(h)
        return h + self.c_sc(F.interpolate(x, scale_factor=2))


class Generator(nn.Module):
    def __init__(self, nz=NZ, ch=CH, num_classes=N_CLASSES, bottom_width=2):
        super().__init__()
        self.bottom_width = bottom_width
        self.ch = ch
        self.l1 = nn.Linear(nz, bottom_width * bottom_width * ch)
        self.block2 = GBlock(ch, ch, num_classes)
        self.block3 = GBlock(ch, ch, num_classes)
        self.b4 = nn.BatchNorm2d(ch)
        self.c4 = nn.Conv2d(ch, 3, 3, 1, 1)
        nn.init.xavier_uniform_(self.l1.weight.data, 1.0)
        nn.init.xavier_uniform_(self.c4.weight.data, 1.0)

    def forward(self, z, y):
        h = self.l1(z).view(z.size(0), -1, self.bottom_width, self.bottom_width)
        h = self.block2(h, y)
        h = self.block3(h, y)
        h = F.relu(self.b4(h))
        return torch.tanh(self.c4(h))


class DBlock(nn.Module):
    def __init__(self, in_ch, out_ch, downsample=False, optimized=False):
        super().__init__()
        self.c1 = nn.Conv2d(in_ch, out_ch, 3, 1, 1)
        self.c2 = nn.Conv2d(out_ch, out_ch, 3, 1, 1)
        self.c_sc = nn.Conv2d(in_ch, out_ch, 1, 1, 0)
        nn.init.xavier_uniform_(self.c1.weight.data, math.sqrt(2))
        nn.init.xavier_uniform_(self.c2.weight.data, math.sqrt(2))
        nn.init.xavier_uniform_(self.c_sc.weight.data, 1.0)
        self.c1, self.c2, self.c_sc = sn(self.c1), sn(self.c2), sn(self.c_sc)
        self.downsample = downsample
        self.optimized = optimized

    def shortcut(self, x):
        if self.optimized:
            return self.c_sc(F.avg_pool2d(x, 2))
        x = self.c_sc(x)
        return F.avg_pool2d(x, 2) if self.downsample else x

    def residual(self, x):
        h = x if self.optimized else F.relu(x)
        h = self.c2(F.relu(self.c1(h)))
        return F.avg_pool2d(h, 2) if self.downsample else h

    def forward(self, x):
        return self.residual(x) + self.shortcut(x)


class SNResNetProjectionDiscriminator(nn.Module):
    def __init__(self, ch=CH, num_classes=N_CLASSES):
        super().__init__()
        self.block1 = DBlock(3, ch, downsample=True, optimized=True)
        self.block2 = DBlock(ch, ch, downsample=True)
        self.block3 = DBlock(ch, ch)
        self.l5 = nn.Linear(ch, 1)
        nn.init.xavier_uniform_(self.l5.weight.data)
        self.l5 = sn(self.l5)
        if num_classes > 0:
            self.l_y = nn.Embedding(num_classes, ch)
            nn.init.xavier_uniform_(self.l_y.weight.data)
            self.l_y = sn(self.l_y)

    def forward(self, x, y=None):
        h = x
        for i in range(1, 4):
            h = getattr(self, "block{}".format(i))(h)  # noqa: UP032 (as the repository writes it)
        h = F.relu(h)
        # Global pooling
        h = torch.sum(h, dim=(2, 3))
        output = self.l5(h)
        if y is not None:
            output += torch.sum(self.l_y(y) * h, dim=1, keepdim=True)
        return output


class GAN(nn.Module):
    """The two networks under one module, so that one state_dict carries both."""

    def __init__(self):
        super().__init__()
        self.gen = Generator()
        self.dis = SNResNetProjectionDiscriminator()


def real_batch(rng, n):
    """8x8 images whose class sets the dominant colour; labels as int64."""
    y = rng.integers(0, N_CLASSES, size=n)
    x = rng.normal(0, 0.2, size=(n, 3, 8, 8)).astype(np.float32)
    for k, label in enumerate(y):
        x[k, label] += 0.6
    return torch.tensor(np.tanh(x)), torch.tensor(y)


def dis_loss(dis_real, dis_fake):
    if LOSS == "hinge":
        return F.relu(1.0 - dis_real).mean() + F.relu(1.0 + dis_fake).mean()
    return F.softplus(-dis_real).mean() + F.softplus(dis_fake).mean()


def gen_loss(dis_fake):
    if LOSS == "hinge":
        return -dis_fake.mean()
    return F.softplus(-dis_fake).mean()


def build():
    torch.manual_seed(0)
    return GAN()


def train(model, steps=2):
    gen, dis = model.gen, model.dis
    opt_gen = optim.Adam(gen.parameters(), lr=2e-3, betas=(0.0, 0.9))
    opt_dis = optim.Adam(dis.parameters(), lr=2e-3, betas=(0.0, 0.9))
    n_dis, batch_size = 2, 4
    rng = np.random.default_rng(0)
    torch.manual_seed(1)
    fixed_z = torch.randn(3, NZ)
    fixed_y = torch.arange(N_CLASSES)
    record = {"losses": [], "dis_losses": [], "sigma": []}
    gen.train()
    dis.train()
    for _ in range(steps):
        # Discriminator: n_dis steps
        for _ in range(n_dis):
            real, y_real = real_batch(rng, batch_size)
            z = torch.randn(batch_size, NZ)
            y_fake = torch.randint(0, N_CLASSES, (batch_size,))
            with torch.no_grad():
                fake = gen(z, y_fake)
            dis_real = dis(real, y_real)
            dis_fake = dis(fake, y_fake)
            loss_dis = dis_loss(dis_real, dis_fake)
            opt_dis.zero_grad()
            loss_dis.backward()
            opt_dis.step()
            record["dis_losses"].append(loss_dis.item())
        # Generator: D frozen
        dis.requires_grad_(False)
        z = torch.randn(batch_size, NZ)
        y_fake = torch.randint(0, N_CLASSES, (batch_size,))
        loss_gen = gen_loss(dis(gen(z, y_fake), y_fake))
        opt_gen.zero_grad()
        loss_gen.backward()
        opt_gen.step()
        dis.requires_grad_(True)
        record["losses"].append(loss_gen.item())
    # the largest singular value of a wrapped weight after training: ~1
    with torch.no_grad():
        w = dis.block2.c1.weight  # the hook's attribute, or computed from parametrizations.weight.original
        record["sigma"].append(torch.linalg.matrix_norm(w.flatten(1), ord=2).item())
    if G_EVAL_MODE:
        gen.eval()
    dis.eval()
    with torch.no_grad():
        samples = gen(fixed_z, fixed_y)
        record["sample_mean"] = samples.mean().item()
        record["sample_scores"] = dis(samples, fixed_y).flatten().tolist()
    return record


if __name__ == "__main__":
    print(train(build()))
