"""A two-level-free Glow (one block of flow steps) on synthetic 4-channel 8x8 images, written the way
the popular PyTorch Glow implementations write ActNorm, the invertible 1x1 convolution and the
affine coupling.

Its idioms: ActNorm initialised from the first batch it sees (a ``register_buffer`` flag
``torch.tensor(0, dtype=torch.uint8)`` read by ``.item()``, statistics over a
``permute(1, 0, 2, 3).contiguous().view(C, -1)``, set by ``self.loc.data.copy_(-mean)`` and
``.fill_(1)`` under ``torch.no_grad()``), with logdet ``height * width * torch.sum(logabs(self.scale))``;
an invertible 1x1 convolution initialised orthogonal by ``torch.linalg.qr`` with logdet from
``torch.slogdet(weight.squeeze().double())[1].float()``, and its LU-decomposed variant
(``torch.linalg.lu`` at init; buffers ``w_p``, ``u_mask = torch.triu(torch.ones_like(w), 1)``,
``l_mask = u_mask.T``, ``s_sign = torch.sign(w_s)``, ``l_eye``; the weight rebuilt as
``w_p @ (w_l * l_mask + l_eye) @ (w_u * u_mask + torch.diag_embed(s_sign * torch.exp(w_s)))`` and its
inverse checked with ``torch.linalg.lu_factor`` + ``lu_solve``); ``F.conv2d(input, weight.unsqueeze(2).unsqueeze(3))``;
an affine coupling whose last conv is zero-initialised with a learned ``exp(scale * 3)``, split by
``chunk(2, 1)`` with ``torch.sigmoid(log_s + 2)``; squeezing by ``view``/``permute``/``contiguous``;
log-determinants summed over steps; a first ``torch.no_grad()`` pass that only initialises; the
``torch.rand_like`` dequantised bits-per-dim loss
``-log(n_bins) * n_pixel + logdet + log_p`` over ``log(2) * n_pixel``; ``torch.clamp`` of the
reconstruction in ``reverse`` under ``torch.no_grad()``."""

from __future__ import annotations

from math import log, pi

import numpy as np
from shim import F, nn, optim, torch

DEVICE = "cpu"
LU = True
IMG, CHANNELS, FILTERS, N_FLOW, BATCH, N_BITS = 8, 1, 8, 2, 4, 5
logabs = lambda x: torch.log(torch.abs(x))  # noqa: E731


class ActNorm(nn.Module):
    def __init__(self, in_channel, logdet=True):
        super().__init__()
        self.loc = nn.Parameter(torch.zeros(1, in_channel, 1, 1))
        self.scale = nn.Parameter(torch.ones(1, in_channel, 1, 1))
        self.register_buffer("initialized", torch.tensor(0, dtype=torch.uint8))
        self.logdet = logdet

    def initialize(self, input):
        with torch.no_grad():
            flatten = input.permute(1, 0, 2, 3).contiguous().view(input.shape[1], -1)
            mean = flatten.mean(1).unsqueeze(1).unsqueeze(2).unsqueeze(3).permute(1, 0, 2, 3)
            std = flatten.std(1).unsqueeze(1).unsqueeze(2).unsqueeze(3).permute(1, 0, 2, 3)
            self.loc.data.copy_(-mean)
            self.scale.data.copy_(1 / (std + 1e-6))

    def forward(self, input):
        _, _, height, width = input.shape
        if self.initialized.item() == 0:
            self.initialize(input)
            self.initialized.fill_(1)
        log_abs = logabs(self.scale)
        logdet = height * width * torch.sum(log_abs)
        return self.scale * (input + self.loc), logdet

    def reverse(self, output):
        return output / self.scale - self.loc


class InvConv2d(nn.Module):
    def __init__(self, in_channel):
        super().__init__()
        weight = torch.randn(in_channel, in_channel)
        q, _ = torch.linalg.qr(weight)
        self.weight = nn.Parameter(q.unsqueeze(2).unsqueeze(3))

    def forward(self, input):
        _, _, height, width = input.shape
        out = F.conv2d(input, self.weight)
        logdet = height * width * torch.slogdet(self.weight.squeeze().double())[1].float()
        return out, logdet

    def reverse(self, output):
        return F.conv2d(output, self.weight.squeeze().inverse().unsqueeze(2).unsqueeze(3))


class InvConv2dLU(nn.Module):
    def __init__(self, in_channel):
        super().__init__()
        weight = torch.randn(in_channel, in_channel)
        q, _ = torch.linalg.qr(weight)
        w_p, w_l, w_u = torch.linalg.lu(q)
        w_s = torch.diagonal(w_u)
        w_u = torch.triu(w_u, diagonal=1)
        u_mask = torch.triu(torch.ones_like(w_u), 1)
        l_mask = u_mask.T
        self.register_buffer("w_p", w_p)
        self.register_buffer("u_mask", u_mask)
        self.register_buffer("l_mask", l_mask)
        self.register_buffer("s_sign", torch.sign(w_s))
        self.register_buffer("l_eye", torch.eye(l_mask.shape[0]))
        self.w_l = nn.Parameter(torch.tril(w_l, diagonal=-1))
        self.w_s = nn.Parameter(logabs(w_s))
        self.w_u = nn.Parameter(w_u)

    def calc_weight(self):
        weight = (
            self.w_p
            @ (self.w_l * self.l_mask + self.l_eye)
            @ ((self.w_u * self.u_mask) + torch.diag_embed(self.s_sign * torch.exp(self.w_s)))
        )
        return weight.unsqueeze(2).unsqueeze(3)

    def forward(self, input):
        _, _, height, width = input.shape
        weight = self.calc_weight()
        out = F.conv2d(input, weight)
        logdet = height * width * torch.sum(self.w_s)
        return out, logdet

    def reverse(self, output):
        weight = self.calc_weight().squeeze()
        lu, pivots = torch.linalg.lu_factor(weight)
        b, c, h, w = output.shape
        columns = output.permute(1, 0, 2, 3).reshape(c, -1)
        return torch.linalg.lu_solve(lu, pivots, columns).view(c, b, h, w).permute(1, 0, 2, 3)


class ZeroConv2d(nn.Module):
    def __init__(self, in_channel, out_channel):
        super().__init__()
        self.conv = nn.Conv2d(in_channel, out_channel, 3, padding=0)
        self.conv.weight.data.zero_()
        self.conv.bias.data.zero_()
        self.scale = nn.Parameter(torch.zeros(1, out_channel, 1, 1))

    def forward(self, input):
        out = F.pad(input, [1, 1, 1, 1], value=1)
        out = self.conv(out)
        return out * torch.exp(self.scale * 3)


class AffineCoupling(nn.Module):
    def __init__(self, in_channel, filter_size=FILTERS):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(in_channel // 2, filter_size, 3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(filter_size, filter_size, 1),
            nn.ReLU(inplace=True),
            ZeroConv2d(filter_size, in_channel),
        )
        self.net[0].weight.data.normal_(0, 0.05)
        self.net[0].bias.data.zero_()
        self.net[2].weight.data.normal_(0, 0.05)
        self.net[2].bias.data.zero_()

    def forward(self, input):
        in_a, in_b = input.chunk(2, 1)
        log_s, t = self.net(in_a).chunk(2, 1)
        s = torch.sigmoid(log_s + 2)
        out_b = (in_b + t) * s
        logdet = torch.sum(torch.log(s).view(input.shape[0], -1), 1)
        return torch.cat([in_a, out_b], 1), logdet

    def reverse(self, output):
        out_a, out_b = output.chunk(2, 1)
        log_s, t = self.net(out_a).chunk(2, 1)
        s = torch.sigmoid(log_s + 2)
        in_b = out_b / s - t
        return torch.cat([out_a, in_b], 1)


class Flow(nn.Module):
    def __init__(self, in_channel, conv_lu=True):
        super().__init__()
        self.actnorm = ActNorm(in_channel)
        self.invconv = InvConv2dLU(in_channel) if conv_lu else InvConv2d(in_channel)
        self.coupling = AffineCoupling(in_channel)

    def forward(self, input):
        out, logdet = self.actnorm(input)
        out, det1 = self.invconv(out)
        out, det2 = self.coupling(out)
        logdet = logdet + det1
        if det2 is not None:
            logdet = logdet + det2
        return out, logdet

    def reverse(self, output):
        input = self.coupling.reverse(output)
        input = self.invconv.reverse(input)
        return self.actnorm.reverse(input)


def squeeze2d(input):
    b_size, n_channel, height, width = input.shape
    squeezed = input.view(b_size, n_channel, height // 2, 2, width // 2, 2)
    squeezed = squeezed.permute(0, 1, 3, 5, 2, 4)
    return squeezed.contiguous().view(b_size, n_channel * 4, height // 2, width // 2)


def unsqueeze2d(output):
    b_size, n_channel, height, width = output.shape
    unsqueezed = output.view(b_size, n_channel // 4, 2, 2, height, width)
    unsqueezed = unsqueezed.permute(0, 1, 4, 2, 5, 3)
    return unsqueezed.contiguous().view(b_size, n_channel // 4, height * 2, width * 2)


def gaussian_log_p(x, mean, log_sd):
    return -0.5 * log(2 * pi) - log_sd - 0.5 * (x - mean) ** 2 / torch.exp(2 * log_sd)


class Glow(nn.Module):
    def __init__(self, in_channel=CHANNELS, n_flow=N_FLOW, conv_lu=True):
        super().__init__()
        squeeze_dim = in_channel * 4
        self.flows = nn.ModuleList([Flow(squeeze_dim, conv_lu=conv_lu) for _ in range(n_flow)])
        self.prior = ZeroConv2d(squeeze_dim, squeeze_dim * 2)

    def forward(self, input):
        out = squeeze2d(input)
        logdet = 0
        for flow in self.flows:
            out, det = flow(out)
            logdet = logdet + det
        mean, log_sd = self.prior(torch.zeros_like(out)).chunk(2, 1)
        log_p = gaussian_log_p(out, mean, log_sd).view(input.shape[0], -1).sum(1)
        return log_p, logdet, out

    def reverse(self, z):
        input = z
        for flow in self.flows[::-1]:
            input = flow.reverse(input)
        return unsqueeze2d(input)


def calc_loss(log_p, logdet, image_size, n_bins):
    n_pixel = image_size * image_size * CHANNELS
    loss = -log(n_bins) * n_pixel
    loss = loss + logdet + log_p
    return (
        (-loss / (log(2) * n_pixel)).mean(),
        (log_p / (log(2) * n_pixel)).mean(),
        (logdet / (log(2) * n_pixel)).mean(),
    )


def make_images(n=8, seed=0):
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:IMG, 0:IMG].astype(np.float32) / IMG
    freq = rng.uniform(1, 3, (n, 1, 1, 1)).astype(np.float32)
    images = 0.5 + 0.4 * np.sin(2 * np.pi * freq * (xx + yy))
    return torch.from_numpy(images.astype(np.float32))


def build():
    torch.manual_seed(0)
    return Glow(conv_lu=LU)


def train(model, steps=3):
    device = torch.device(DEVICE)
    model = model.to(device)
    n_bins = 2.0**N_BITS
    images = make_images()
    optimizer = optim.Adam(model.parameters(), lr=1e-3)
    losses, log_ps, logdets = [], [], []
    for step in range(steps + 1):
        start = (step * BATCH) % images.size(0)
        image = images[start : start + BATCH].to(device)
        image = torch.floor(image * 255 / 2 ** (8 - N_BITS)) / n_bins - 0.5
        if step == 0:  # the data-dependent initialisation pass, without a step
            with torch.no_grad():
                log_p, logdet, _ = model(image + torch.rand_like(image) / n_bins)
            first = model.flows[0].actnorm
            initial = {"loc": first.loc.detach().clone(), "scale": first.scale.detach().clone()}
            continue
        log_p, logdet, _ = model(image + torch.rand_like(image) / n_bins)
        logdet = logdet.mean()
        loss, log_p, log_det = calc_loss(log_p, logdet, IMG, n_bins)
        model.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        log_ps.append(log_p.item())
        logdets.append(log_det.item())
    with torch.no_grad():
        image = images[:BATCH].to(device) - 0.5
        _, _, z = model(image)
        reconstruction = torch.clamp(model.reverse(z), -0.5, 0.5)
        error = (reconstruction - image).abs().max().item()
    return {
        "losses": losses,
        "log_p": log_ps,
        "logdet": logdets,
        "round_trip_small": error < 1e-4,
        "initialized": [int(flow.actnorm.initialized.item()) for flow in model.flows],
        "init_loc": initial["loc"].flatten().tolist(),
        "init_scale": initial["scale"].flatten().tolist(),
        "loc": model.flows[0].actnorm.loc.flatten().tolist(),
        "scale": model.flows[0].actnorm.scale.flatten().tolist(),
    }


if __name__ == "__main__":
    print(train(build(), steps=10))
