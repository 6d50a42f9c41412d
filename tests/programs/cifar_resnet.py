"""A CIFAR-style ResNet training script at a tiny width on 8x8 synthetic images.

Its idioms: ``torch.manual_seed`` for determinism; a torchvision-like ``BasicBlock`` with
``expansion = 1``, a ``shortcut`` that is an empty ``nn.Sequential()`` or a 1x1 conv + BatchNorm,
``out += self.shortcut(x)`` and ``F.relu``; ``_make_layer`` building ``strides = [stride] + [1] *
(num_blocks - 1)`` into ``nn.Sequential(*layers)``; ``F.adaptive_avg_pool2d`` and ``out.view(out.size(0),
-1)``; ``model.apply(init_fn)`` with ``nn.init.kaiming_normal_(mode='fan_out', nonlinearity='relu')``;
``TensorDataset`` + ``DataLoader(shuffle=True, drop_last=True, num_workers=0, generator=g)``;
``optim.SGD(momentum=0.9, nesterov=True, weight_decay=5e-4)`` with ``OneCycleLR`` stepped per batch
(or ``MultiStepLR`` per epoch); ``nn.CrossEntropyLoss(label_smoothing=0.1)``; accuracy as
``outputs.argmax(1).eq(targets).sum().item()`` (and ``outputs.max(1)``); ``scheduler.get_last_lr()``;
and an evaluation pass under ``torch.no_grad()`` in ``model.eval()``."""

from __future__ import annotations

import numpy as np
from shim import DataLoader, F, TensorDataset, nn, optim, torch

SHUFFLE = True
SCHEDULE = "onecycle"


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != self.expansion * planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, self.expansion * planes, kernel_size=1, stride=stride, bias=False),
                nn.BatchNorm2d(self.expansion * planes),
            )

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += self.shortcut(x)
        return F.relu(out)


class ResNet(nn.Module):
    def __init__(self, block, num_blocks, num_classes=4):
        super().__init__()
        self.in_planes = 4
        self.conv1 = nn.Conv2d(3, 4, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(4)
        self.layer1 = self._make_layer(block, 4, num_blocks[0], stride=1)
        self.layer2 = self._make_layer(block, 8, num_blocks[1], stride=2)
        self.linear = nn.Linear(8 * block.expansion, num_classes)

    def _make_layer(self, block, planes, num_blocks, stride):
        strides = [stride] + [1] * (num_blocks - 1)
        layers = []
        for stride in strides:
            layers.append(block(self.in_planes, planes, stride))
            self.in_planes = planes * block.expansion
        return nn.Sequential(*layers)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer1(out)
        out = self.layer2(out)
        out = F.adaptive_avg_pool2d(out, 1)
        out = out.view(out.size(0), -1)
        return self.linear(out)


def init_fn(m):
    if isinstance(m, nn.Conv2d):
        nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
    elif isinstance(m, nn.BatchNorm2d):
        nn.init.ones_(m.weight)
        nn.init.zeros_(m.bias)


def build():
    torch.manual_seed(0)
    model = ResNet(BasicBlock, [1, 1])
    model.apply(init_fn)
    return model


def train(model, steps=2, epochs=1):
    rng = np.random.default_rng(1)
    n = 4 * steps + 2  # drop_last leaves the last 2 out
    x = torch.from_numpy(rng.standard_normal((n, 3, 8, 8)).astype(np.float32))
    y = torch.from_numpy(rng.integers(0, 4, n))
    g = torch.Generator()
    g.manual_seed(0)
    loader = DataLoader(TensorDataset(x, y), batch_size=4, shuffle=SHUFFLE, drop_last=True, num_workers=0, generator=g)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    optimizer = optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4)
    if SCHEDULE == "onecycle":
        scheduler = optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.1, epochs=epochs, steps_per_epoch=len(loader))
    else:
        scheduler = optim.lr_scheduler.MultiStepLR(optimizer, milestones=[1], gamma=0.1)
    record = {"losses": [], "lr": [], "train_acc": [], "batches": len(loader)}
    for _ in range(epochs):
        model.train()
        correct = total = 0
        for inputs, targets in loader:
            optimizer.zero_grad()
            outputs = model(inputs)
            loss = criterion(outputs, targets)
            loss.backward()
            optimizer.step()
            if SCHEDULE == "onecycle":
                scheduler.step()
            record["losses"].append(loss.item())
            record["lr"].append(scheduler.get_last_lr()[0])
            correct += outputs.argmax(1).eq(targets).sum().item()
            total += targets.size(0)
        if SCHEDULE != "onecycle":
            scheduler.step()
        record["train_acc"].append(100.0 * correct / total)
    model.eval()
    with torch.no_grad():
        outputs = model(x)
        _, predicted = outputs.max(1)
        record["test_acc"] = predicted.eq(y).sum().item() / y.size(0)
        record["test_loss"] = F.cross_entropy(outputs, y).item()
    return record


if __name__ == "__main__":
    print(train(build()))
