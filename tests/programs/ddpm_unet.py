"""A tiny DDPM: a U-Net with GroupNorm, SiLU and sinusoidal time embeddings learns to predict the
noise added to 8x8 images, as denoising-diffusion training code is written today.

Idioms: the time embedding ``torch.exp(torch.arange(half) * -(math.log(10000) / (half - 1)))`` and
``torch.cat`` of its sine and cosine; a ``torch.linspace`` beta schedule, ``torch.cumprod`` and
``F.pad`` of the cumulative product, buffers registered on the diffusion module; coefficients taken
for a batch of timesteps by ``gather`` and reshaped to broadcast; ``torch.randint`` timesteps and
``torch.randn_like`` noise; ``nn.Upsample`` and ``F.interpolate`` (nearest), a strided-conv
downsample and skip connections joined by ``torch.cat``; ``F.mse_loss``; AdamW with
``clip_grad_norm_``; an EMA copy made by ``copy.deepcopy`` with ``requires_grad_(False)``, updated
under ``torch.no_grad()`` by ``torch._foreach_lerp_`` (as timm and diffusers do) and ``copy_``
(buffers), a second, hand-written EMA by ``mul_``/``add_``, and ancestral sampling with the EMA
model.

The comparison with PyTorch draws timesteps and noise from numpy (``FIXED_NOISE``), since the two
libraries' generators differ; run as written the program draws them with ``randint``/``randn_like``.
"""

from __future__ import annotations

import copy
import math

import numpy as np
from shim import F, nn, optim, torch

FIXED_NOISE = False
DEVICE = "cpu"
STEPS_T = 16  # diffusion timesteps
IMAGE, BATCH, CHANNELS, TIME_DIM = 8, 4, 8, 16


def timestep_embedding(t, dim):
    half = dim // 2
    freqs = torch.exp(torch.arange(half, device=t.device) * -(math.log(10000) / (half - 1)))
    args = t[:, None].float() * freqs[None, :]
    return torch.cat([torch.sin(args), torch.cos(args)], dim=-1)


class ResBlock(nn.Module):
    def __init__(self, cin, cout, time_dim, groups=4):
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.time = nn.Linear(time_dim, cout)
        self.norm2 = nn.GroupNorm(groups, cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, temb):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.time(F.silu(temb))[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return h + self.skip(x)


class UNet(nn.Module):
    def __init__(self, ch=CHANNELS, time_dim=TIME_DIM):
        super().__init__()
        self.time_dim = time_dim
        self.time_mlp = nn.Sequential(nn.Linear(time_dim, 2 * time_dim), nn.SiLU(), nn.Linear(2 * time_dim, time_dim))
        self.inc = nn.Conv2d(1, ch, 3, padding=1)
        self.down1 = ResBlock(ch, ch, time_dim)
        self.downsample = nn.Conv2d(ch, ch, 3, stride=2, padding=1)
        self.down2 = ResBlock(ch, 2 * ch, time_dim)
        self.mid = ResBlock(2 * ch, 2 * ch, time_dim)
        self.upsample = nn.Sequential(
            nn.Upsample(scale_factor=2, mode="nearest"), nn.Conv2d(2 * ch, 2 * ch, 3, padding=1)
        )
        self.up1 = ResBlock(3 * ch, ch, time_dim)
        self.up2 = ResBlock(2 * ch, ch, time_dim)
        self.out = nn.Sequential(nn.GroupNorm(4, ch), nn.SiLU(), nn.Conv2d(ch, 1, 3, padding=1))

    def forward(self, x, t):
        temb = self.time_mlp(timestep_embedding(t, self.time_dim))
        h0 = self.inc(x)
        h1 = self.down1(h0, temb)
        h2 = self.down2(self.downsample(h1), temb)
        h2 = self.mid(h2, temb)
        h = self.upsample(h2)
        h = self.up1(torch.cat([h, h1], dim=1), temb)
        # a second, functional upsample round trip keeps F.interpolate's nearest mode in the graph
        coarse = F.interpolate(F.avg_pool2d(h, 2), size=h.shape[-2:], mode="nearest")
        h = self.up2(torch.cat([h, coarse], dim=1), temb)
        return self.out(h)


def extract(a, t, x_shape):
    b = t.shape[0]
    out = a.gather(-1, t)
    return out.reshape(b, *((1,) * (len(x_shape) - 1)))


class GaussianDiffusion(nn.Module):
    def __init__(self, model, timesteps=STEPS_T):
        super().__init__()
        self.model = model
        self.num_timesteps = timesteps
        betas = torch.linspace(1e-4, 0.2, timesteps, dtype=torch.float64)
        alphas = 1.0 - betas
        alphas_cumprod = torch.cumprod(alphas, dim=0)
        alphas_cumprod_prev = F.pad(alphas_cumprod[:-1], (1, 0), value=1.0)
        posterior_variance = betas * (1.0 - alphas_cumprod_prev) / (1.0 - alphas_cumprod)

        def register(name, value):
            self.register_buffer(name, value.to(torch.float32))

        register("betas", betas)
        register("sqrt_alphas_cumprod", torch.sqrt(alphas_cumprod))
        register("sqrt_one_minus_alphas_cumprod", torch.sqrt(1.0 - alphas_cumprod))
        register("sqrt_recip_alphas", torch.sqrt(1.0 / alphas))
        register("posterior_variance", posterior_variance)

    def q_sample(self, x_start, t, noise=None):
        if noise is None:
            noise = torch.randn_like(x_start)
        return (
            extract(self.sqrt_alphas_cumprod, t, x_start.shape) * x_start
            + extract(self.sqrt_one_minus_alphas_cumprod, t, x_start.shape) * noise
        )

    def forward(self, x_start, t=None, noise=None):
        if t is None:
            t = torch.randint(0, self.num_timesteps, (x_start.shape[0],), device=x_start.device).long()
        if noise is None:
            noise = torch.randn_like(x_start)
        x_noisy = self.q_sample(x_start, t, noise=noise)
        return F.mse_loss(self.model(x_noisy, t), noise)

    @torch.no_grad()
    def p_sample(self, x, i, noise):
        t = torch.full((x.shape[0],), i, device=x.device, dtype=torch.long)
        eps = self.model(x, t)
        coef = extract(self.betas, t, x.shape) / extract(self.sqrt_one_minus_alphas_cumprod, t, x.shape)
        mean = extract(self.sqrt_recip_alphas, t, x.shape) * (x - coef * eps)
        if i == 0:
            return mean
        return mean + torch.sqrt(extract(self.posterior_variance, t, x.shape)) * noise

    @torch.no_grad()
    def sample(self, shape, noises=None):
        x = torch.randn(shape, device=self.betas.device) if noises is None else noises[0]
        for k, i in enumerate(reversed(range(self.num_timesteps))):
            noise = torch.randn_like(x) if noises is None else noises[k + 1]
            x = self.p_sample(x, i, noise)
        return x.clamp(-1.0, 1.0)


def build():
    torch.manual_seed(0)
    return GaussianDiffusion(UNet())


def make_images(n=16, seed=0):
    """Blurry blobs in [-1, 1]: a bright disc at a random place on a dark ground."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:IMAGE, 0:IMAGE]
    centres = rng.uniform(2, IMAGE - 2, size=(n, 2))
    d2 = (yy[None] - centres[:, 0, None, None]) ** 2 + (xx[None] - centres[:, 1, None, None]) ** 2
    return (2.0 * np.exp(-d2 / 4.0) - 1.0).astype(np.float32)[:, None]


@torch.no_grad()
def update_ema(ema_model, model, decay):
    ema_params, params = list(ema_model.parameters()), list(model.parameters())
    torch._foreach_lerp_(ema_params, params, 1.0 - decay)
    for ema_b, b in zip(ema_model.buffers(), model.buffers()):
        ema_b.copy_(b)


def train(model, steps=5):
    device = torch.device(DEVICE)
    model = model.to(device)
    images = torch.from_numpy(make_images()).to(device)
    rng = np.random.default_rng(1)
    ema = copy.deepcopy(model)
    ema.requires_grad_(False)
    shadow = {name: p.detach().clone() for name, p in model.named_parameters()}
    optimizer = optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.0)
    losses, norms = [], []
    model.train()
    for step in range(steps):
        idx = [(step * BATCH + b) % images.shape[0] for b in range(BATCH)]
        x0 = images[idx]
        t = noise = None
        if FIXED_NOISE:
            t = torch.from_numpy(rng.integers(0, STEPS_T, size=BATCH)).to(device)
            noise = torch.from_numpy(rng.standard_normal(x0.shape).astype(np.float32)).to(device)
        loss = model(x0, t, noise)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)))
        optimizer.step()
        update_ema(ema, model, decay=0.9)
        with torch.no_grad():
            for name, p in model.named_parameters():
                shadow[name].mul_(0.9).add_(p.detach(), alpha=0.1)
        losses.append(loss.item())
    ema.eval()
    noises = None
    if FIXED_NOISE:
        noises = [torch.from_numpy(rng.standard_normal((2, 1, IMAGE, IMAGE)).astype(np.float32)).to(device)]
        noises += [torch.from_numpy(rng.standard_normal((2, 1, IMAGE, IMAGE)).astype(np.float32)).to(device)] * STEPS_T
    samples = ema.sample((2, 1, IMAGE, IMAGE), noises)
    ema_params = dict(ema.named_parameters())
    ema_gap = max((shadow[name] - ema_params[name]).abs().max().item() for name in shadow)
    return {
        "losses": losses,
        "grad_norms": norms,
        "sample_mean": samples.mean().item(),
        "sample_std": samples.std().item(),
        "ema_matches_hand_written": ema_gap < 1e-5,
    }


if __name__ == "__main__":
    print(train(build(), steps=50))
