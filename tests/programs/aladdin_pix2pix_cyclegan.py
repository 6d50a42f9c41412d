"""Pix2Pix and CycleGAN as Aladdin Persson's Machine-Learning-Collection writes them (ML/Pytorch/GANs/Pix2Pix
and CycleGAN: generator_model.py, discriminator_model.py, train.py, utils.py), at tiny sizes on synthetic
16x16 image pairs. ``MODEL`` picks one.

Idioms: Pix2Pix's U-Net ``Block`` choosing ``nn.Conv2d(..., bias=False, padding_mode="reflect") if down else
nn.ConvTranspose2d(...)`` and ``nn.ReLU() if act == "relu" else nn.LeakyReLU(0.2)``, dropout only ``if
self.use_dropout``, skips by ``torch.cat([up1, d3], 1)``; the PatchGAN ``Discriminator`` of ``x, y`` by
``torch.cat([x, y], dim=1)`` with ``features=[...]`` walked by ``stride=1 if feature == features[-1] else 2``;
CycleGAN's ``ConvBlock(**kwargs)`` with ``padding_mode="reflect"``, ``nn.InstanceNorm2d``, ``nn.ReLU(inplace=True)
if use_act else nn.Identity()``, ``ConvTranspose2d(output_padding=1)``, ``ResidualBlock`` ``x + self.block(x)``,
``nn.ModuleList`` loops, ``torch.tanh(self.last(x))`` and ``torch.sigmoid(self.model(x))``,
``nn.LeakyReLU(0.2, inplace=True)``; the training steps under ``torch.cuda.amp.autocast()`` with
``torch.cuda.amp.GradScaler()``'s ``scale(loss).backward()``, ``step(opt)`` and ``update()`` (vkml's "cuda" is
its Vulkan device, so its scaler is on where PyTorch's CPU build turns its own off: a power-of-two scale
leaves float32 gradients unchanged); Pix2Pix's ``bce = nn.BCEWithLogitsLoss()``, ``D_fake = disc(x,
y_fake.detach())``, ``L1 = l1_loss(y_fake, y) * config.L1_LAMBDA``, ``torch.sigmoid(D_real).mean().item()``;
CycleGAN's ``Adam(list(disc_H.parameters()) + list(disc_Z.parameters()), lr=..., betas=(0.5, 0.999))``,
``H_reals += D_H_real.mean().item()``, MSE adversarial losses against ``torch.ones_like``/``torch.zeros_like``,
cycle and identity L1 losses weighted by ``LAMBDA_CYCLE``/``LAMBDA_IDENTITY``; utils' ``save_checkpoint``
of ``{"state_dict": model.state_dict(), "optimizer": optimizer.state_dict()}`` and ``load_checkpoint`` with
``torch.load(checkpoint_file, map_location=DEVICE)`` resetting ``param_group["lr"] = lr``; ``gen.eval()``, a
sample under ``torch.no_grad()`` scaled by ``y_fake * 0.5 + 0.5``, then ``gen.train()``.
"""

from __future__ import annotations

import os
import tempfile
import warnings

import numpy as np
from shim import nn, optim, torch

MODEL = "pix2pix"  # or "cyclegan"
DROPOUT = 0.5
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
LEARNING_RATE = 2e-4
BATCH_SIZE = 2
L1_LAMBDA = 100
LAMBDA_IDENTITY = 0.0 + 0.5
LAMBDA_CYCLE = 10
IMAGE = 16


# ------------------------------------------------------------------------------------------- Pix2Pix
class CNNBlock(nn.Module):
    def __init__(self, in_channels, out_channels, stride):
        super(CNNBlock, self).__init__()  # noqa: UP008
        self.conv = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, 4, stride, 1, bias=False, padding_mode="reflect"),
            nn.BatchNorm2d(out_channels),
            nn.LeakyReLU(0.2),
        )

    def forward(self, x):
        return self.conv(x)


class Discriminator(nn.Module):
    def __init__(self, in_channels=3, features=[4, 8, 8]):  # noqa: B006
        super().__init__()
        self.initial = nn.Sequential(
            nn.Conv2d(in_channels * 2, features[0], kernel_size=4, stride=2, padding=1, padding_mode="reflect"),
            nn.LeakyReLU(0.2),
        )

        layers = []
        in_channels = features[0]
        for feature in features[1:]:
            layers.append(CNNBlock(in_channels, feature, stride=1 if feature == features[-1] else 2))
            in_channels = feature

        layers.append(nn.Conv2d(in_channels, 1, kernel_size=4, stride=1, padding=1, padding_mode="reflect"))

        self.model = nn.Sequential(*layers)

    def forward(self, x, y):
        x = torch.cat([x, y], dim=1)
        x = self.initial(x)
        x = self.model(x)
        return x


class Block(nn.Module):
    def __init__(self, in_channels, out_channels, down=True, act="relu", use_dropout=False):
        super(Block, self).__init__()  # noqa: UP008
        self.conv = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, 4, 2, 1, bias=False, padding_mode="reflect")
            if down
            else nn.ConvTranspose2d(in_channels, out_channels, 4, 2, 1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU() if act == "relu" else nn.LeakyReLU(0.2),
        )

        self.use_dropout = use_dropout
        self.dropout = nn.Dropout(DROPOUT)
        self.down = down

    def forward(self, x):
        x = self.conv(x)
        return self.dropout(x) if self.use_dropout else x


class Generator(nn.Module):
    def __init__(self, in_channels=3, features=64):
        super().__init__()
        self.initial_down = nn.Sequential(
            nn.Conv2d(in_channels, features, 4, 2, 1, padding_mode="reflect"),
            nn.LeakyReLU(0.2),
        )  # 8
        self.down1 = Block(features, features * 2, down=True, act="leaky", use_dropout=False)  # 4
        self.down2 = Block(features * 2, features * 2, down=True, act="leaky", use_dropout=False)  # 2
        self.bottleneck = nn.Sequential(nn.Conv2d(features * 2, features * 2, 4, 2, 1), nn.ReLU())  # 1
        self.up1 = Block(features * 2, features * 2, down=False, act="relu", use_dropout=True)  # 2
        self.up2 = Block(features * 2 * 2, features * 2, down=False, act="relu", use_dropout=True)  # 4
        self.up3 = Block(features * 2 * 2, features, down=False, act="relu", use_dropout=False)  # 8
        self.final_up = nn.Sequential(
            nn.ConvTranspose2d(features * 2, in_channels, kernel_size=4, stride=2, padding=1),
            nn.Tanh(),
        )

    def forward(self, x):
        d1 = self.initial_down(x)
        d2 = self.down1(d1)
        d3 = self.down2(d2)
        bottleneck = self.bottleneck(d3)
        up1 = self.up1(bottleneck)
        up2 = self.up2(torch.cat([up1, d3], 1))
        up3 = self.up3(torch.cat([up2, d2], 1))
        return self.final_up(torch.cat([up3, d1], 1))


# ------------------------------------------------------------------------------------------ CycleGAN
class CycleBlock(nn.Module):
    def __init__(self, in_channels, out_channels, stride):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, 4, stride, 1, bias=True, padding_mode="reflect"),
            nn.InstanceNorm2d(out_channels),
            nn.LeakyReLU(0.2, inplace=True),
        )

    def forward(self, x):
        return self.conv(x)


class CycleDiscriminator(nn.Module):
    def __init__(self, in_channels=3, features=[4, 8, 8]):  # noqa: B006
        super().__init__()
        self.initial = nn.Sequential(
            nn.Conv2d(in_channels, features[0], kernel_size=4, stride=2, padding=1, padding_mode="reflect"),
            nn.LeakyReLU(0.2, inplace=True),
        )

        layers = []
        in_channels = features[0]
        for feature in features[1:]:
            layers.append(CycleBlock(in_channels, feature, stride=1 if feature == features[-1] else 2))
            in_channels = feature
        layers.append(nn.Conv2d(in_channels, 1, kernel_size=4, stride=1, padding=1, padding_mode="reflect"))
        self.model = nn.Sequential(*layers)

    def forward(self, x):
        x = self.initial(x)
        return torch.sigmoid(self.model(x))


class ConvBlock(nn.Module):
    def __init__(self, in_channels, out_channels, down=True, use_act=True, **kwargs):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, padding_mode="reflect", **kwargs)
            if down
            else nn.ConvTranspose2d(in_channels, out_channels, **kwargs),
            nn.InstanceNorm2d(out_channels),
            nn.ReLU(inplace=True) if use_act else nn.Identity(),
        )

    def forward(self, x):
        return self.conv(x)


class ResidualBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.block = nn.Sequential(
            ConvBlock(channels, channels, kernel_size=3, padding=1),
            ConvBlock(channels, channels, use_act=False, kernel_size=3, padding=1),
        )

    def forward(self, x):
        return x + self.block(x)


class CycleGenerator(nn.Module):
    def __init__(self, img_channels, num_features=64, num_residuals=9):
        super().__init__()
        self.initial = nn.Sequential(
            nn.Conv2d(img_channels, num_features, kernel_size=7, stride=1, padding=3, padding_mode="reflect"),
            nn.InstanceNorm2d(num_features),
            nn.ReLU(inplace=True),
        )
        self.down_blocks = nn.ModuleList(
            [
                ConvBlock(num_features, num_features * 2, kernel_size=3, stride=2, padding=1),
                ConvBlock(num_features * 2, num_features * 4, kernel_size=3, stride=2, padding=1),
            ]
        )
        self.res_blocks = nn.Sequential(*[ResidualBlock(num_features * 4) for _ in range(num_residuals)])
        self.up_blocks = nn.ModuleList(
            [
                ConvBlock(
                    num_features * 4, num_features * 2, down=False, kernel_size=3, stride=2, padding=1, output_padding=1
                ),
                ConvBlock(
                    num_features * 2, num_features * 1, down=False, kernel_size=3, stride=2, padding=1, output_padding=1
                ),
            ]
        )

        self.last = nn.Conv2d(
            num_features * 1, img_channels, kernel_size=7, stride=1, padding=3, padding_mode="reflect"
        )

    def forward(self, x):
        x = self.initial(x)
        for layer in self.down_blocks:
            x = layer(x)
        x = self.res_blocks(x)
        for layer in self.up_blocks:
            x = layer(x)
        return torch.tanh(self.last(x))


# ----------------------------------------------------------------------------------------- utilities
def save_checkpoint(model, optimizer, filename="my_checkpoint.pth.tar"):
    print("=> Saving checkpoint")
    checkpoint = {
        "state_dict": model.state_dict(),
        "optimizer": optimizer.state_dict(),
    }
    torch.save(checkpoint, filename)


def load_checkpoint(checkpoint_file, model, optimizer, lr):
    print("=> Loading checkpoint")
    checkpoint = torch.load(checkpoint_file, map_location=DEVICE)
    model.load_state_dict(checkpoint["state_dict"])
    optimizer.load_state_dict(checkpoint["optimizer"])

    # If we don't do this then it will just have learning rate of old checkpoint
    # and it will lead to many hours of debugging \:
    for param_group in optimizer.param_groups:
        param_group["lr"] = lr


class Nets(nn.Module):
    """train.py's global nets, held together for the comparison's state_dict."""

    def __init__(self):
        super().__init__()
        if MODEL == "pix2pix":
            self.disc = Discriminator(in_channels=3)
            self.gen = Generator(in_channels=3, features=4)
        else:
            self.disc_H = CycleDiscriminator(in_channels=3)
            self.disc_Z = CycleDiscriminator(in_channels=3)
            self.gen_Z = CycleGenerator(img_channels=3, num_features=2, num_residuals=2)
            self.gen_H = CycleGenerator(img_channels=3, num_features=2, num_residuals=2)


def build():
    torch.manual_seed(0)
    return Nets().to(DEVICE)


def paired_loader():
    rng = np.random.RandomState(0)
    for _ in range(6):
        x = np.tanh(rng.standard_normal((BATCH_SIZE, 3, IMAGE, IMAGE))).astype(np.float32)
        y = np.tanh(2 * x[:, ::-1] + 0.1 * rng.standard_normal(x.shape)).astype(np.float32)
        yield torch.tensor(x), torch.tensor(np.ascontiguousarray(y))


def train_pix2pix(disc, gen, loader, opt_disc, opt_gen, l1_loss, bce, g_scaler, d_scaler, steps, record):
    for idx, (x, y) in enumerate(loader):
        if idx == steps:
            break
        x = x.to(DEVICE)
        y = y.to(DEVICE)

        # Train Discriminator
        with torch.cuda.amp.autocast():
            y_fake = gen(x)
            D_real = disc(x, y)
            D_real_loss = bce(D_real, torch.ones_like(D_real))
            D_fake = disc(x, y_fake.detach())
            D_fake_loss = bce(D_fake, torch.zeros_like(D_fake))
            D_loss = (D_real_loss + D_fake_loss) / 2

        disc.zero_grad()
        d_scaler.scale(D_loss).backward()
        d_scaler.step(opt_disc)
        d_scaler.update()

        # Train generator
        with torch.cuda.amp.autocast():
            D_fake = disc(x, y_fake)
            G_fake_loss = bce(D_fake, torch.ones_like(D_fake))
            L1 = l1_loss(y_fake, y) * L1_LAMBDA
            G_loss = G_fake_loss + L1

        opt_gen.zero_grad()
        g_scaler.scale(G_loss).backward()
        g_scaler.step(opt_gen)
        g_scaler.update()

        record["losses"].append(G_loss.item())
        record["postfix"].append(
            dict(D_real=torch.sigmoid(D_real).mean().item(), D_fake=torch.sigmoid(D_fake).mean().item())
        )


def train_cyclegan(disc_H, disc_Z, gen_Z, gen_H, loader, opt_disc, opt_gen, l1, mse, d_scaler, g_scaler, steps, record):
    H_reals = 0
    H_fakes = 0
    for idx, (zebra, horse) in enumerate(loader):
        if idx == steps:
            break
        zebra = zebra.to(DEVICE)
        horse = horse.to(DEVICE)

        # Train Discriminators H and Z
        with torch.cuda.amp.autocast():
            fake_horse = gen_H(zebra)
            D_H_real = disc_H(horse)
            D_H_fake = disc_H(fake_horse.detach())
            H_reals += D_H_real.mean().item()
            H_fakes += D_H_fake.mean().item()
            D_H_real_loss = mse(D_H_real, torch.ones_like(D_H_real))
            D_H_fake_loss = mse(D_H_fake, torch.zeros_like(D_H_fake))
            D_H_loss = D_H_real_loss + D_H_fake_loss

            fake_zebra = gen_Z(horse)
            D_Z_real = disc_Z(zebra)
            D_Z_fake = disc_Z(fake_zebra.detach())
            D_Z_real_loss = mse(D_Z_real, torch.ones_like(D_Z_real))
            D_Z_fake_loss = mse(D_Z_fake, torch.zeros_like(D_Z_fake))
            D_Z_loss = D_Z_real_loss + D_Z_fake_loss

            # put it togethor
            D_loss = (D_H_loss + D_Z_loss) / 2

        opt_disc.zero_grad()
        d_scaler.scale(D_loss).backward()
        d_scaler.step(opt_disc)
        d_scaler.update()

        # Train Generators H and Z
        with torch.cuda.amp.autocast():
            # adversarial loss for both generators
            D_H_fake = disc_H(fake_horse)
            D_Z_fake = disc_Z(fake_zebra)
            loss_G_H = mse(D_H_fake, torch.ones_like(D_H_fake))
            loss_G_Z = mse(D_Z_fake, torch.ones_like(D_Z_fake))

            # cycle loss
            cycle_zebra = gen_Z(fake_horse)
            cycle_horse = gen_H(fake_zebra)
            cycle_zebra_loss = l1(zebra, cycle_zebra)
            cycle_horse_loss = l1(horse, cycle_horse)

            # identity loss (remove these for efficiency if you set lambda_identity=0)
            identity_zebra = gen_Z(zebra)
            identity_horse = gen_H(horse)
            identity_zebra_loss = l1(zebra, identity_zebra)
            identity_horse_loss = l1(horse, identity_horse)

            # add all togethor
            G_loss = (
                loss_G_Z
                + loss_G_H
                + cycle_zebra_loss * LAMBDA_CYCLE
                + cycle_horse_loss * LAMBDA_CYCLE
                + identity_horse_loss * LAMBDA_IDENTITY
                + identity_zebra_loss * LAMBDA_IDENTITY
            )

        opt_gen.zero_grad()
        g_scaler.scale(G_loss).backward()
        g_scaler.step(opt_gen)
        g_scaler.update()

        record["losses"].append(G_loss.item())
        record["postfix"].append(dict(H_real=H_reals / (idx + 1), H_fake=H_fakes / (idx + 1)))


def train(model, steps=3):
    record = {"losses": [], "postfix": []}
    with warnings.catch_warnings():
        # torch.cuda.amp's deprecation; PyTorch's CPU build also says it turns the scaler and autocast off
        warnings.simplefilter("ignore")
        g_scaler = torch.cuda.amp.GradScaler()
        d_scaler = torch.cuda.amp.GradScaler()
        L1_LOSS = nn.L1Loss()
        if MODEL == "pix2pix":
            disc, gen = model.disc, model.gen
            opt_disc = optim.Adam(disc.parameters(), lr=LEARNING_RATE, betas=(0.5, 0.999))
            opt_gen = optim.Adam(gen.parameters(), lr=LEARNING_RATE, betas=(0.5, 0.999))
            BCE = nn.BCEWithLogitsLoss()
            train_pix2pix(
                disc, gen, paired_loader(), opt_disc, opt_gen, L1_LOSS, BCE, g_scaler, d_scaler, steps, record
            )
        else:
            disc_H, disc_Z, gen_Z, gen_H = model.disc_H, model.disc_Z, model.gen_Z, model.gen_H
            opt_disc = optim.Adam(
                list(disc_H.parameters()) + list(disc_Z.parameters()), lr=LEARNING_RATE, betas=(0.5, 0.999)
            )
            opt_gen = optim.Adam(
                list(gen_Z.parameters()) + list(gen_H.parameters()), lr=LEARNING_RATE, betas=(0.5, 0.999)
            )
            mse = nn.MSELoss()
            train_cyclegan(
                disc_H, disc_Z, gen_Z, gen_H, paired_loader(), opt_disc, opt_gen, L1_LOSS, mse, d_scaler, g_scaler,
                steps, record,
            )  # fmt: skip
            gen, opt_gen = gen_H, opt_gen

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "gen.pth.tar")
        save_checkpoint(gen, opt_gen, filename=path)
        state_before = {k: v.clone() for k, v in gen.state_dict().items()}
        with torch.no_grad():
            for p in gen.parameters():
                p.zero_()
        load_checkpoint(path, gen, opt_gen, LEARNING_RATE / 2)
        record["restored"] = all(torch.equal(v, gen.state_dict()[k]) for k, v in state_before.items())
        record["lr"] = [g["lr"] for g in opt_gen.param_groups]

    # save_some_examples
    x, _ = next(paired_loader())
    x = x.to(DEVICE)
    gen.eval()
    with torch.no_grad():
        y_fake = gen(x)
        y_fake = y_fake * 0.5 + 0.5  # remove normalization#
        record["example"] = y_fake[0, 0].tolist()
    gen.train()
    return record


if __name__ == "__main__":
    print(train(build()))
