"""The GANs of Aladdin Persson's Machine-Learning-Collection (ML/Pytorch/GANs), at tiny sizes on synthetic
images. ``MODEL`` picks one: the simple GAN, DCGAN, WGAN, WGAN-GP or the conditional WGAN-GP.

Idioms: the simple GAN's ``real.view(-1, 784)``, ``lossD = (lossD_real + lossD_fake) / 2``,
``disc.zero_grad()``, ``lossD.backward(retain_graph=True)`` then the generator's loss on the same ``fake``,
``criterion(disc_real, torch.ones_like(disc_real))``; DCGAN's ``_block`` helpers of ``nn.ConvTranspose2d``/
``nn.Conv2d(bias=False)`` with ``nn.BatchNorm2d``, ``initialize_weights`` over ``model.modules()`` by
``nn.init.normal_(m.weight.data, 0.0, 0.02)``, the shape ``test()`` asserts, ``Adam(betas=(0.5, 0.999))``,
``disc(fake.detach()).reshape(-1)``, ``gen.train()``/``disc.train()``; WGAN's critic iterations with
``loss_critic = -(torch.mean(critic_real) - torch.mean(critic_fake))``, ``loss_critic.backward(retain_graph=True)``,
``optim.RMSprop`` and weight clipping ``for p in critic.parameters(): p.data.clamp_(-WEIGHT_CLIP, WEIGHT_CLIP)``;
WGAN-GP's ``gradient_penalty`` (``torch.rand((BATCH_SIZE, 1, 1, 1)).repeat(1, C, H, W)``,
``torch.autograd.grad(inputs=interpolated_images, outputs=mixed_scores, grad_outputs=torch.ones_like(mixed_scores),
create_graph=True, retain_graph=True)[0]``, ``gradient.view(gradient.shape[0], -1).norm(2, dim=1)``,
``torch.mean((gradient_norm - 1) ** 2)``) with ``nn.InstanceNorm2d(affine=True)`` in the critic and
``Adam(betas=(0.0, 0.9))``; the conditional GAN's ``nn.Embedding(num_classes, img_size * img_size)`` viewed as
an extra image channel (``torch.cat([x, embedding], dim=1)``) and the generator's ``embed(labels).unsqueeze(2)
.unsqueeze(3)``; ``with torch.no_grad(): fake = gen(fixed_noise)`` for the grid. The noise is drawn live in
both libraries (vkml's ``randn``/``rand`` are PyTorch's generator).
"""

from __future__ import annotations

import numpy as np
from shim import DataLoader, TensorDataset, nn, optim, torch

MODEL = "simple"  # or "dcgan", "wgan", "wgan_gp", "cond_gan"
device = "cuda" if torch.cuda.is_available() else "cpu"
BATCH_SIZE = 4
IMAGE_SIZE = 16
CHANNELS_IMG = 1
Z_DIM = 6
FEATURES_DISC = 4
FEATURES_GEN = 4
NUM_CLASSES = 3
GEN_EMBEDDING = 5
CRITIC_ITERATIONS = 2
WEIGHT_CLIP = 0.01
LAMBDA_GP = 10


# ------------------------------------------------------------------------------------------ simple GAN
class Discriminator(nn.Module):
    def __init__(self, in_features):
        super().__init__()
        self.disc = nn.Sequential(
            nn.Linear(in_features, 16),
            nn.LeakyReLU(0.01),
            nn.Linear(16, 1),
            nn.Sigmoid(),
        )

    def forward(self, x):
        return self.disc(x)


class Generator(nn.Module):
    def __init__(self, z_dim, img_dim):
        super().__init__()
        self.gen = nn.Sequential(
            nn.Linear(z_dim, 24),
            nn.LeakyReLU(0.01),
            nn.Linear(24, img_dim),
            nn.Tanh(),  # normalize inputs to [-1, 1] so make outputs [-1, 1]
        )

    def forward(self, x):
        return self.gen(x)


# -------------------------------------------------------------------------- DCGAN / WGAN / WGAN-GP nets
class ConvDiscriminator(nn.Module):
    """DCGAN's Discriminator; ``norm`` is WGAN-GP's InstanceNorm2d, ``sigmoid`` off for a critic, and
    ``num_classes`` adds the conditional GAN's label channel."""

    def __init__(self, channels_img, features_d, norm="batch", sigmoid=True, num_classes=None, img_size=None):
        super().__init__()
        self.norm = norm
        self.img_size = img_size
        extra = 1 if num_classes else 0
        self.disc = nn.Sequential(
            # input: N x channels_img x 16 x 16
            nn.Conv2d(channels_img + extra, features_d, kernel_size=4, stride=2, padding=1),
            nn.LeakyReLU(0.2),
            # _block(in_channels, out_channels, kernel_size, stride, padding)
            self._block(features_d, features_d * 2, 4, 2, 1),
            # After all _block img output is 4x4 (Conv2d below makes into 1x1)
            nn.Conv2d(features_d * 2, 1, kernel_size=4, stride=2, padding=0),
            *([nn.Sigmoid()] if sigmoid else []),
        )
        if num_classes:
            self.embed = nn.Embedding(num_classes, img_size * img_size)

    def _block(self, in_channels, out_channels, kernel_size, stride, padding):
        return nn.Sequential(
            nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding, bias=False),
            nn.InstanceNorm2d(out_channels, affine=True) if self.norm == "instance" else nn.BatchNorm2d(out_channels),
            nn.LeakyReLU(0.2),
        )

    def forward(self, x, labels=None):
        if labels is not None:
            embedding = self.embed(labels).view(labels.shape[0], 1, self.img_size, self.img_size)
            x = torch.cat([x, embedding], dim=1)  # N x C x img_size(H) x img_size(W)
        return self.disc(x)


class ConvGenerator(nn.Module):
    def __init__(self, channels_noise, channels_img, features_g, num_classes=None, embed_size=None):
        super().__init__()
        extra = embed_size if num_classes else 0
        self.net = nn.Sequential(
            # Input: N x channels_noise x 1 x 1
            self._block(channels_noise + extra, features_g * 4, 4, 1, 0),  # img: 4x4
            self._block(features_g * 4, features_g * 2, 4, 2, 1),  # img: 8x8
            nn.ConvTranspose2d(features_g * 2, channels_img, kernel_size=4, stride=2, padding=1),
            # Output: N x channels_img x 16 x 16
            nn.Tanh(),
        )
        if num_classes:
            self.embed = nn.Embedding(num_classes, embed_size)

    def _block(self, in_channels, out_channels, kernel_size, stride, padding):
        return nn.Sequential(
            nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride, padding, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
        )

    def forward(self, x, labels=None):
        if labels is not None:
            # latent vector z: N x noise_dim x 1 x 1
            embedding = self.embed(labels).unsqueeze(2).unsqueeze(3)
            x = torch.cat([x, embedding], dim=1)
        return self.net(x)


def initialize_weights(model):
    # Initializes weights according to the DCGAN paper
    for m in model.modules():
        if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d, nn.BatchNorm2d)):
            nn.init.normal_(m.weight.data, 0.0, 0.02)


def test():
    N, in_channels, H, W = 2, 1, 16, 16
    noise_dim = 6
    x = torch.randn((N, in_channels, H, W))  # on the CPU, as the script's test()
    disc = ConvDiscriminator(in_channels, 4)
    assert disc(x).shape == (N, 1, 1, 1), "Discriminator test failed"
    gen = ConvGenerator(noise_dim, in_channels, 4)
    z = torch.randn((N, noise_dim, 1, 1))
    assert gen(z).shape == (N, in_channels, H, W), "Generator test failed"
    return True


def gradient_penalty(critic, real, fake, labels=None, device="cpu"):
    BATCH_SIZE, C, H, W = real.shape
    alpha = torch.rand((BATCH_SIZE, 1, 1, 1)).repeat(1, C, H, W).to(device)
    interpolated_images = real * alpha + fake * (1 - alpha)

    # Calculate critic scores
    mixed_scores = critic(interpolated_images) if labels is None else critic(interpolated_images, labels)

    # Take the gradient of the scores with respect to the images
    gradient = torch.autograd.grad(
        inputs=interpolated_images,
        outputs=mixed_scores,
        grad_outputs=torch.ones_like(mixed_scores),
        create_graph=True,
        retain_graph=True,
    )[0]
    gradient = gradient.view(gradient.shape[0], -1)
    gradient_norm = gradient.norm(2, dim=1)
    gradient_penalty = torch.mean((gradient_norm - 1) ** 2)
    return gradient_penalty


class GAN(nn.Module):
    """The script's two global nets, held together for the comparison's state_dict."""

    def __init__(self):
        super().__init__()
        if MODEL == "simple":
            self.disc = Discriminator(IMAGE_SIZE * IMAGE_SIZE)
            self.gen = Generator(Z_DIM, IMAGE_SIZE * IMAGE_SIZE)
        elif MODEL == "dcgan":
            self.gen = ConvGenerator(Z_DIM, CHANNELS_IMG, FEATURES_GEN)
            self.disc = ConvDiscriminator(CHANNELS_IMG, FEATURES_DISC)
        elif MODEL == "wgan":
            self.gen = ConvGenerator(Z_DIM, CHANNELS_IMG, FEATURES_GEN)
            self.disc = ConvDiscriminator(CHANNELS_IMG, FEATURES_DISC, sigmoid=False)
        elif MODEL == "wgan_gp":
            self.gen = ConvGenerator(Z_DIM, CHANNELS_IMG, FEATURES_GEN)
            self.disc = ConvDiscriminator(CHANNELS_IMG, FEATURES_DISC, norm="instance", sigmoid=False)
        else:
            self.gen = ConvGenerator(Z_DIM, CHANNELS_IMG, FEATURES_GEN, NUM_CLASSES, GEN_EMBEDDING)
            self.disc = ConvDiscriminator(
                CHANNELS_IMG,
                FEATURES_DISC,
                norm="instance",
                sigmoid=False,
                num_classes=NUM_CLASSES,
                img_size=IMAGE_SIZE,
            )


def build():
    torch.manual_seed(0)
    model = GAN()
    if MODEL != "simple":
        initialize_weights(model.gen)
        initialize_weights(model.disc)
    return model.to(device)


def mnist_like_loader():
    rng = np.random.RandomState(0)
    images = np.tanh(rng.standard_normal((3 * BATCH_SIZE, CHANNELS_IMG, IMAGE_SIZE, IMAGE_SIZE))).astype(np.float32)
    labels = rng.randint(0, NUM_CLASSES, 3 * BATCH_SIZE)
    dataset = TensorDataset(torch.tensor(images), torch.tensor(labels))
    return DataLoader(dataset, batch_size=BATCH_SIZE, shuffle=False)


def printed_numbers(line):
    """The numbers of a printed ``Loss D: ..., loss G: ...`` line (as numbers: a last printed digit may round
    either way between the two libraries)."""
    return [float(word.strip(",")) for word in line.split()[2::3]]


def train_simple(gen, disc, loader, steps, record):
    lr = 3e-4
    fixed_noise = torch.randn((BATCH_SIZE, Z_DIM)).to(device)
    opt_disc = optim.Adam(disc.parameters(), lr=lr)
    opt_gen = optim.Adam(gen.parameters(), lr=lr)
    criterion = nn.BCELoss()
    for batch_idx, (real, _) in enumerate(loader):
        if batch_idx == steps:
            break
        real = real.view(-1, IMAGE_SIZE * IMAGE_SIZE).to(device)
        batch_size = real.shape[0]

        ### Train Discriminator: max log(D(x)) + log(1 - D(G(z)))
        noise = torch.randn(batch_size, Z_DIM).to(device)
        fake = gen(noise)
        disc_real = disc(real).view(-1)
        lossD_real = criterion(disc_real, torch.ones_like(disc_real))
        disc_fake = disc(fake).view(-1)
        lossD_fake = criterion(disc_fake, torch.zeros_like(disc_fake))
        lossD = (lossD_real + lossD_fake) / 2
        disc.zero_grad()
        lossD.backward(retain_graph=True)
        opt_disc.step()

        ### Train Generator: min log(1 - D(G(z))) <-> max log(D(G(z))
        # where the second option of maximizing doesn't suffer from saturating gradients
        output = disc(fake).view(-1)
        lossG = criterion(output, torch.ones_like(output))
        gen.zero_grad()
        lossG.backward()
        opt_gen.step()

        record["losses"].append(lossD.item())
        record["lines"].append(printed_numbers(f"Loss D: {lossD:.4f}, loss G: {lossG:.4f}"))
        if batch_idx == 0:
            with torch.no_grad():
                fake = gen(fixed_noise).reshape(-1, 1, IMAGE_SIZE, IMAGE_SIZE)
                data = real.reshape(-1, 1, IMAGE_SIZE, IMAGE_SIZE)
                record["grid"] = [fake.mean().item(), data.std().item()]


def train_dcgan(gen, disc, loader, steps, record):
    LEARNING_RATE = 2e-4
    opt_gen = optim.Adam(gen.parameters(), lr=LEARNING_RATE, betas=(0.5, 0.999))
    opt_disc = optim.Adam(disc.parameters(), lr=LEARNING_RATE, betas=(0.5, 0.999))
    criterion = nn.BCELoss()
    fixed_noise = torch.randn(4, Z_DIM, 1, 1).to(device)
    gen.train()
    disc.train()
    for batch_idx, (real, _) in enumerate(loader):
        if batch_idx == steps:
            break
        real = real.to(device)
        noise = torch.randn(BATCH_SIZE, Z_DIM, 1, 1).to(device)
        fake = gen(noise)

        ### Train Discriminator max log(D(x)) + log(1 - D(G(z)))
        disc_real = disc(real).reshape(-1)
        loss_disc_real = criterion(disc_real, torch.ones_like(disc_real))
        disc_fake = disc(fake.detach()).reshape(-1)
        loss_disc_fake = criterion(disc_fake, torch.zeros_like(disc_fake))
        loss_disc = (loss_disc_real + loss_disc_fake) / 2
        disc.zero_grad()
        loss_disc.backward()
        opt_disc.step()

        ### Train Generator min log(1 - D(G(z))) <-> max log(D(G(z))
        output = disc(fake).reshape(-1)
        loss_gen = criterion(output, torch.ones_like(output))
        gen.zero_grad()
        loss_gen.backward()
        opt_gen.step()

        record["losses"].append(loss_disc.item())
        record["lines"].append(printed_numbers(f"Loss D: {loss_disc:.4f}, loss G: {loss_gen:.4f}"))
    with torch.no_grad():
        fake = gen(fixed_noise)
        record["grid"] = fake[:2].tolist()


def train_wgan(gen, critic, loader, steps, record):
    conditional = MODEL == "cond_gan"
    if MODEL == "wgan":
        LEARNING_RATE = 5e-5
        opt_gen = optim.RMSprop(gen.parameters(), lr=LEARNING_RATE)
        opt_critic = optim.RMSprop(critic.parameters(), lr=LEARNING_RATE)
    else:
        LEARNING_RATE = 1e-4
        opt_gen = optim.Adam(gen.parameters(), lr=LEARNING_RATE, betas=(0.0, 0.9))
        opt_critic = optim.Adam(critic.parameters(), lr=LEARNING_RATE, betas=(0.0, 0.9))
    gen.train()
    critic.train()
    for batch_idx, (data, labels) in enumerate(loader):
        if batch_idx == steps:
            break
        data = data.to(device)
        labels = labels.to(device)
        cur_batch_size = data.shape[0]

        # Train Critic: max E[critic(real)] - E[critic(fake)]
        for _ in range(CRITIC_ITERATIONS):
            noise = torch.randn(cur_batch_size, Z_DIM, 1, 1).to(device)
            if conditional:
                fake = gen(noise, labels)
                critic_real = critic(data, labels).reshape(-1)
                critic_fake = critic(fake, labels).reshape(-1)
            else:
                fake = gen(noise)
                critic_real = critic(data).reshape(-1)
                critic_fake = critic(fake).reshape(-1)
            if MODEL == "wgan":
                loss_critic = -(torch.mean(critic_real) - torch.mean(critic_fake))
            else:
                gp = gradient_penalty(critic, data, fake, labels if conditional else None, device=device)
                loss_critic = -(torch.mean(critic_real) - torch.mean(critic_fake)) + LAMBDA_GP * gp
                record["gp"].append(gp.item())
            critic.zero_grad()
            loss_critic.backward(retain_graph=True)
            opt_critic.step()

            if MODEL == "wgan":
                # clip critic weights between -0.01, 0.01
                for p in critic.parameters():
                    p.data.clamp_(-WEIGHT_CLIP, WEIGHT_CLIP)

        # Train Generator: max E[critic(gen_fake)] <-> min -E[critic(gen_fake)]
        gen_fake = (critic(fake, labels) if conditional else critic(fake)).reshape(-1)
        loss_gen = -torch.mean(gen_fake)
        gen.zero_grad()
        loss_gen.backward()
        opt_gen.step()

        record["losses"].append(loss_critic.item())
        record["lines"].append(printed_numbers(f"Loss D: {loss_critic:.4f}, loss G: {loss_gen:.4f}"))
    record["clipped"] = [p.abs().max().item() for p in critic.parameters()]


def train(model, steps=3):
    torch.manual_seed(1)  # the noise
    record = {"losses": [], "lines": []}
    loader = mnist_like_loader()
    if MODEL == "simple":
        train_simple(model.gen, model.disc, loader, steps, record)
    elif MODEL == "dcgan":
        record["test"] = test()
        train_dcgan(model.gen, model.disc, loader, steps, record)
    else:
        record["gp"] = []
        train_wgan(model.gen, model.disc, loader, steps, record)
    return record


if __name__ == "__main__":
    print(train(build()))
