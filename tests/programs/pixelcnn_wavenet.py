"""Autoregressive convolutional models: PixelCNN, written as jzbontar/pixelcnn-pytorch is, and
WaveNet, written as the common PyTorch re-implementations (vincentherrmann/pytorch-wavenet,
r9y9/wavenet_vocoder's layers) are, at tiny sizes on synthetic data. ``MODEL`` picks one.

PixelCNN's idioms: ``MaskedConv2d(nn.Conv2d)`` whose mask is a buffer from ``self.weight.data.clone()``,
``fill_(1)`` and slice assignments indexed by a bool (``kW // 2 + (mask_type == 'B')``), applied in
``forward`` by ``self.weight.data *= self.mask`` before ``super().forward(x)``; an ``nn.Sequential``
of masked convs, ``nn.BatchNorm2d`` and ``nn.ReLU(True)``; targets by ``(input.data[:, 0] * 255).long()``
(here ``* (LEVELS - 1)``); ``F.cross_entropy`` over a 4-D logits map; and sampling pixel by pixel
into ``torch.Tensor(n, 1, h, w)`` after ``fill_(0)`` and ``net.train(False)``, with
``F.softmax(out[:, :, i, j])`` by its implicit dim and ``torch.multinomial(probs, 1).float()``.

WaveNet's: ``CausalConv1d(nn.Conv1d)`` padded by ``(kernel_size - 1) * dilation`` on both sides and cut
by ``result[:, :, :-self.__padding]`` (a name-mangled attribute); left padding by ``F.pad(x, (pad,
0))``; dilations ``2 ** i`` repeated over stacks; gated activations ``torch.tanh(filter) *
torch.sigmoid(gate)`` from one conv ``chunk``-ed in two; 1x1 residual and skip convs; skips summed by
``torch.stack(skips).sum(dim=0)``; mu-law companding (``torch.sign(x) * torch.log1p(mu *
torch.abs(x)) / math.log1p(mu)``) and quantisation to ``long``; one-hot inputs by ``F.one_hot(...).
permute(0, 2, 1).float()``; the shifted cross-entropy ``F.cross_entropy(logits[:, :, :-1], target[:,
1:])``; ``nn.utils.clip_grad_value_``; and generation sample by sample with ``torch.multinomial``
and ``torch.cat`` over a receptive-field window.
"""

from __future__ import annotations

import math

import numpy as np
from shim import F, nn, optim, torch

MODEL = "pixelcnn"  # or "wavenet"
IMG = 5
LEVELS = 8
FM = 8
CLASSES = 16
CHANNELS = 8
LAYERS = 3
STACKS = 2
LENGTH = 24


class MaskedConv2d(nn.Conv2d):
    def __init__(self, mask_type, *args, **kwargs):
        super(MaskedConv2d, self).__init__(*args, **kwargs)  # noqa: UP008 (as the repository writes it)
        assert mask_type in {"A", "B"}
        self.register_buffer("mask", self.weight.data.clone())
        _, _, kH, kW = self.weight.size()
        self.mask.fill_(1)
        self.mask[:, :, kH // 2, kW // 2 + (mask_type == "B") :] = 0
        self.mask[:, :, kH // 2 + 1 :] = 0

    def forward(self, x):
        self.weight.data *= self.mask
        return super(MaskedConv2d, self).forward(x)  # noqa: UP008


def pixelcnn():
    fm = FM
    return nn.Sequential(
        MaskedConv2d("A", 1, fm, 5, 1, 2, bias=False),
        nn.BatchNorm2d(fm),
        nn.ReLU(True),
        MaskedConv2d("B", fm, fm, 3, 1, 1, bias=False),
        nn.BatchNorm2d(fm),
        nn.ReLU(True),
        MaskedConv2d("B", fm, fm, 3, 1, 1, bias=False),
        nn.BatchNorm2d(fm),
        nn.ReLU(True),
        nn.Conv2d(fm, LEVELS, 1),
    )


class CausalConv1d(nn.Conv1d):
    def __init__(self, in_channels, out_channels, kernel_size, dilation=1, **kwargs):
        self.__padding = (kernel_size - 1) * dilation
        super().__init__(in_channels, out_channels, kernel_size, padding=self.__padding, dilation=dilation, **kwargs)

    def forward(self, input):
        result = super().forward(input)
        if self.__padding != 0:
            return result[:, :, : -self.__padding]
        return result


class ResidualBlock(nn.Module):
    def __init__(self, residual_channels, skip_channels, dilation):
        super().__init__()
        self.dilation = dilation
        # one conv gives the filter and the gate, left-padded by hand
        self.dilated = nn.Conv1d(residual_channels, 2 * residual_channels, kernel_size=2, dilation=dilation)
        self.res_conv = nn.Conv1d(residual_channels, residual_channels, 1)
        self.skip_conv = nn.Conv1d(residual_channels, skip_channels, 1)

    def forward(self, x):
        out = self.dilated(F.pad(x, (self.dilation, 0)))
        filter_, gate = out.chunk(2, dim=1)
        out = torch.tanh(filter_) * torch.sigmoid(gate)
        skip = self.skip_conv(out)
        res = self.res_conv(out) + x
        return res, skip


class WaveNet(nn.Module):
    def __init__(
        self, layers=LAYERS, stacks=STACKS, residual_channels=CHANNELS, skip_channels=CHANNELS, classes=CLASSES
    ):
        super().__init__()
        self.classes = classes
        self.causal = CausalConv1d(classes, residual_channels, kernel_size=2)
        self.dilations = [2**i for i in range(layers)] * stacks
        self.blocks = nn.ModuleList([ResidualBlock(residual_channels, skip_channels, d) for d in self.dilations])
        self.end1 = nn.Conv1d(skip_channels, skip_channels, 1)
        self.end2 = nn.Conv1d(skip_channels, classes, 1)
        self.receptive_field = sum(self.dilations) + 2

    def forward(self, x):
        x = self.causal(x)
        skips = []
        for block in self.blocks:
            x, skip = block(x)
            skips.append(skip)
        out = torch.stack(skips).sum(dim=0)
        out = F.relu(out)
        out = F.relu(self.end1(out))
        return self.end2(out)


def mu_law_encode(x, mu=CLASSES - 1):
    x = torch.sign(x) * torch.log1p(mu * torch.abs(x)) / math.log1p(mu)
    return ((x + 1) / 2 * mu + 0.5).long()


def mu_law_decode(q, mu=CLASSES - 1):
    x = 2 * q.float() / mu - 1
    return torch.sign(x) * ((1 + mu) ** torch.abs(x) - 1) / mu


def build():
    torch.manual_seed(0)
    return WaveNet() if MODEL == "wavenet" else pixelcnn()


def synthetic_images(n, step):
    rng = np.random.default_rng(step)
    yy, xx = np.mgrid[0:IMG, 0:IMG].astype(np.float32) / (IMG - 1)
    images = np.clip(xx[None] * rng.uniform(0.2, 1.0, (n, 1, 1)) + 0.3 * yy[None], 0, 1)
    return torch.from_numpy(np.round(images * (LEVELS - 1)).astype(np.float32)[:, None] / (LEVELS - 1))


def _train_pixelcnn(net, steps):
    optimizer = optim.Adam(net.parameters(), lr=1e-2)
    record = {"losses": [], "samples": [], "masked_weight": []}
    for step in range(steps):
        net.train(True)
        input = synthetic_images(4, step)
        target = (input.data[:, 0] * (LEVELS - 1)).long()
        loss = F.cross_entropy(net(input), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        record["losses"].append(loss.item())
    # the masked weights stay zero where the mask is (the step's update is masked at the next forward)
    record["masked_weight"] = (net[3].weight.data * (1 - net[3].mask)).abs().sum().item()

    torch.manual_seed(3)
    sample = torch.Tensor(2, 1, IMG, IMG)
    sample.fill_(0)
    net.train(False)
    with torch.no_grad():
        for i in range(IMG):
            for j in range(IMG):
                out = net(sample)
                probs = F.softmax(out[:, :, i, j]).data
                sample[:, :, i, j] = torch.multinomial(probs, 1).float() / (LEVELS - 1)
    record["samples"] = sample.flatten().tolist()
    return record


def _train_wavenet(model, steps):
    optimizer = optim.Adam(model.parameters(), lr=3e-3)
    t = torch.linspace(0, 1, LENGTH)
    record = {"losses": [], "generated": []}
    model.train()
    for step in range(steps):
        audio = torch.stack([0.8 * torch.sin(2 * math.pi * (3 + k + step) * t) for k in range(3)])
        target = mu_law_encode(audio)  # (batch, length) of class indices
        x = F.one_hot(target, model.classes).permute(0, 2, 1).float()
        logits = model(x)
        loss = F.cross_entropy(logits[:, :, :-1], target[:, 1:])
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_value_(model.parameters(), 1.0)
        optimizer.step()
        record["losses"].append(loss.item())

    torch.manual_seed(4)
    model.eval()
    generated = target[:1, : model.receptive_field]
    with torch.no_grad():
        for _ in range(4):
            window = generated[:, -model.receptive_field :]
            x = F.one_hot(window, model.classes).permute(0, 2, 1).float()
            probs = F.softmax(model(x)[:, :, -1], dim=1)
            next_sample = torch.multinomial(probs, 1)
            generated = torch.cat([generated, next_sample], dim=1)
    record["generated"] = mu_law_decode(generated).flatten().tolist()
    return record


def train(model, steps=3):
    return _train_wavenet(model, steps) if MODEL == "wavenet" else _train_pixelcnn(model, steps)


if __name__ == "__main__":
    print(train(build()))
