"""Four CIFAR models as kuangliu/pytorch-cifar writes them (VGG, MobileNetV2, DenseNet,
PreActResNet), at tiny widths on synthetic 8x8 images, trained with SGD (momentum, nesterov,
weight decay) under ``CosineAnnealingLR``.

Its idioms: a VGG built from a ``cfg`` list of widths and ``"M"`` with ``layers += [...]`` and
``nn.Sequential(*layers)``, ending in ``nn.AvgPool2d(kernel_size=1, stride=1)`` and
``out.view(out.size(0), -1)``; MobileNetV2's inverted residual blocks (1x1 expand, depthwise 3x3 with
``groups=planes``, 1x1 project) with a shortcut that is an empty ``nn.Sequential()`` or a conv + BN,
added only where ``self.stride == 1``, and a ``cfg`` of ``(expansion, out_planes, num_blocks,
stride)`` tuples unrolled by ``[stride] + [1] * (num_blocks - 1)``; DenseNet's Bottleneck with
``torch.cat([out, x], 1)`` growth, a Transition of ``F.avg_pool2d(out, 2)`` and ``math.floor`` of
the reduced width; PreActResNet's pre-activation block with ``hasattr(self, "shortcut")``, and
``F.relu(self.bn1(x))`` feeding both the shortcut and the conv; ``F.avg_pool2d(out, 4)``;
``optim.SGD(..., momentum=0.9, nesterov=True, weight_decay=5e-4)``, ``CosineAnnealingLR(T_max=...)``,
``outputs.max(1)`` with ``predicted.eq(targets).sum().item()`` and ``net.eval()`` under
``torch.no_grad()``."""

from __future__ import annotations

import math

import numpy as np
from shim import F, nn, optim, torch

MODEL = "VGG"  # or "MobileNetV2", "DenseNet", "PreActResNet"
DEVICE = "cpu"
SHUFFLE = True

cfg_vgg = {"VGG-tiny": [4, "M", 8, "M", 8, 8, "M"]}


class VGG(nn.Module):
    def __init__(self, vgg_name, num_classes=4):
        super().__init__()
        self.features = self._make_layers(cfg_vgg[vgg_name])
        self.classifier = nn.Linear(8, num_classes)

    def forward(self, x):
        out = self.features(x)
        out = out.view(out.size(0), -1)
        out = self.classifier(out)
        return out

    def _make_layers(self, cfg):
        layers = []
        in_channels = 3
        for x in cfg:
            if x == "M":
                layers += [nn.MaxPool2d(kernel_size=2, stride=2)]
            else:
                layers += [
                    nn.Conv2d(in_channels, x, kernel_size=3, padding=1),
                    nn.BatchNorm2d(x),
                    nn.ReLU(inplace=True),
                ]
                in_channels = x
        layers += [nn.AvgPool2d(kernel_size=1, stride=1)]
        return nn.Sequential(*layers)


class InvertedBlock(nn.Module):
    """expand + depthwise + pointwise"""

    def __init__(self, in_planes, out_planes, expansion, stride):
        super().__init__()
        self.stride = stride
        planes = expansion * in_planes
        self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=1, stride=1, padding=0, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=stride, padding=1, groups=planes, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, out_planes, kernel_size=1, stride=1, padding=0, bias=False)
        self.bn3 = nn.BatchNorm2d(out_planes)

        self.shortcut = nn.Sequential()
        if stride == 1 and in_planes != out_planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=1, padding=0, bias=False),
                nn.BatchNorm2d(out_planes),
            )

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        out = out + self.shortcut(x) if self.stride == 1 else out
        return out


class MobileNetV2(nn.Module):
    # (expansion, out_planes, num_blocks, stride)
    cfg = [(1, 4, 1, 1), (2, 6, 2, 2), (2, 8, 1, 1)]

    def __init__(self, num_classes=4):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(4)
        self.layers = self._make_layers(in_planes=4)
        self.conv2 = nn.Conv2d(8, 16, kernel_size=1, stride=1, padding=0, bias=False)
        self.bn2 = nn.BatchNorm2d(16)
        self.linear = nn.Linear(16, num_classes)

    def _make_layers(self, in_planes):
        layers = []
        for expansion, out_planes, num_blocks, stride in self.cfg:
            strides = [stride] + [1] * (num_blocks - 1)
            for stride in strides:
                layers.append(InvertedBlock(in_planes, out_planes, expansion, stride))
                in_planes = out_planes
        return nn.Sequential(*layers)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layers(out)
        out = F.relu(self.bn2(self.conv2(out)))
        out = F.avg_pool2d(out, 4)
        out = out.view(out.size(0), -1)
        out = self.linear(out)
        return out


class Bottleneck(nn.Module):
    def __init__(self, in_planes, growth_rate):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(in_planes)
        self.conv1 = nn.Conv2d(in_planes, 4 * growth_rate, kernel_size=1, bias=False)
        self.bn2 = nn.BatchNorm2d(4 * growth_rate)
        self.conv2 = nn.Conv2d(4 * growth_rate, growth_rate, kernel_size=3, padding=1, bias=False)

    def forward(self, x):
        out = self.conv1(F.relu(self.bn1(x)))
        out = self.conv2(F.relu(self.bn2(out)))
        out = torch.cat([out, x], 1)
        return out


class Transition(nn.Module):
    def __init__(self, in_planes, out_planes):
        super().__init__()
        self.bn = nn.BatchNorm2d(in_planes)
        self.conv = nn.Conv2d(in_planes, out_planes, kernel_size=1, bias=False)

    def forward(self, x):
        out = self.conv(F.relu(self.bn(x)))
        out = F.avg_pool2d(out, 2)
        return out


class DenseNet(nn.Module):
    def __init__(self, block, nblocks, growth_rate=2, reduction=0.5, num_classes=4):
        super().__init__()
        self.growth_rate = growth_rate

        num_planes = 2 * growth_rate
        self.conv1 = nn.Conv2d(3, num_planes, kernel_size=3, padding=1, bias=False)

        self.dense1 = self._make_dense_layers(block, num_planes, nblocks[0])
        num_planes += nblocks[0] * growth_rate
        out_planes = int(math.floor(num_planes * reduction))
        self.trans1 = Transition(num_planes, out_planes)
        num_planes = out_planes

        self.dense2 = self._make_dense_layers(block, num_planes, nblocks[1])
        num_planes += nblocks[1] * growth_rate

        self.bn = nn.BatchNorm2d(num_planes)
        self.linear = nn.Linear(num_planes, num_classes)

    def _make_dense_layers(self, block, in_planes, nblock):
        layers = []
        for _ in range(nblock):
            layers.append(block(in_planes, self.growth_rate))
            in_planes += self.growth_rate
        return nn.Sequential(*layers)

    def forward(self, x):
        out = self.conv1(x)
        out = self.trans1(self.dense1(out))
        out = self.dense2(out)
        out = F.avg_pool2d(F.relu(self.bn(out)), 4)
        out = out.view(out.size(0), -1)
        out = self.linear(out)
        return out


class PreActBlock(nn.Module):
    """Pre-activation version of the BasicBlock."""

    expansion = 1

    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(in_planes)
        self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=1, padding=1, bias=False)

        if stride != 1 or in_planes != self.expansion * planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, self.expansion * planes, kernel_size=1, stride=stride, bias=False)
            )

    def forward(self, x):
        out = F.relu(self.bn1(x))
        shortcut = self.shortcut(out) if hasattr(self, "shortcut") else x
        out = self.conv1(out)
        out = self.conv2(F.relu(self.bn2(out)))
        out += shortcut
        return out


class PreActResNet(nn.Module):
    def __init__(self, block, num_blocks, num_classes=4):
        super().__init__()
        self.in_planes = 4

        self.conv1 = nn.Conv2d(3, 4, kernel_size=3, stride=1, padding=1, bias=False)
        self.layer1 = self._make_layer(block, 4, num_blocks[0], stride=1)
        self.layer2 = self._make_layer(block, 8, num_blocks[1], stride=2)
        self.bn = nn.BatchNorm2d(8 * block.expansion)
        self.linear = nn.Linear(8 * block.expansion, num_classes)

    def _make_layer(self, block, planes, num_blocks, stride):
        strides = [stride] + [1] * (num_blocks - 1)
        layers = []
        for stride in strides:
            layers.append(block(self.in_planes, planes, stride))
            self.in_planes = planes * block.expansion
        return nn.Sequential(*layers)

    def forward(self, x):
        out = self.conv1(x)
        out = self.layer1(out)
        out = self.layer2(out)
        out = F.relu(self.bn(out))
        out = F.avg_pool2d(out, 4)
        out = out.view(out.size(0), -1)
        out = self.linear(out)
        return out


def build():
    torch.manual_seed(0)
    if MODEL == "VGG":
        return VGG("VGG-tiny")
    if MODEL == "MobileNetV2":
        return MobileNetV2()
    if MODEL == "DenseNet":
        return DenseNet(Bottleneck, [2, 2])
    return PreActResNet(PreActBlock, [1, 1])


def train(model, steps=3):
    device = torch.device(DEVICE)
    net = model.to(device)
    rng = np.random.default_rng(0)
    inputs_all = torch.tensor(rng.standard_normal((steps * 4, 3, 8, 8)).astype(np.float32))
    targets_all = torch.tensor(rng.integers(0, 4, steps * 4))
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(net.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps)
    order = rng.permutation(steps * 4) if SHUFFLE else np.arange(steps * 4)
    record = {"losses": [], "correct": [], "lrs": []}
    net.train()
    for batch_idx in range(steps):
        picks = torch.tensor(order[batch_idx * 4 : (batch_idx + 1) * 4])
        inputs, targets = inputs_all[picks].to(device), targets_all[picks].to(device)
        optimizer.zero_grad()
        outputs = net(inputs)
        loss = criterion(outputs, targets)
        loss.backward()
        optimizer.step()
        scheduler.step()
        _, predicted = outputs.max(1)
        record["losses"].append(loss.item())
        record["correct"].append(predicted.eq(targets).sum().item())
        record["lrs"].append(scheduler.get_last_lr()[0])
    net.eval()
    with torch.no_grad():
        outputs = net(inputs_all[:4].to(device))
        record["eval_logits"] = outputs.flatten().tolist()
    return record


if __name__ == "__main__":
    for name in ("VGG", "MobileNetV2", "DenseNet", "PreActResNet"):
        MODEL = name
        print(name, train(build()))
