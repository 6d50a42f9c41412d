"""mixup (facebookresearch/mixup-cifar10, ``train.py``) and CutMix (clovaai/CutMix-PyTorch, ``train.py``)
training, at tiny sizes on synthetic images.

Their idioms: ``lam = np.random.beta(alpha, alpha)`` after ``np.random.seed``; ``index = torch.randperm(
batch_size)``; ``mixed_x = lam * x + (1 - lam) * x[index, :]`` with a numpy float64 ``lam``; the
``Variable`` wrapping of old code (``map(Variable, (inputs, targets_a, targets_b))``);
``mixup_criterion`` as ``lam * criterion(pred, y_a) + (1 - lam) * criterion(pred, y_b)``; the mixed
accuracy ``lam * predicted.eq(targets_a.data).cpu().sum().float() + (1 - lam) * ...``; ``train_loss +=
loss.item()`` and ``100. * correct / total`` of a tensor; CutMix's ``rand_bbox`` (``np.sqrt``, ``int``,
``np.random.randint``, ``np.clip`` giving numpy integers used as slice bounds), the box pasted by slice
assignment ``input[:, :, bbx1:bbx2, bby1:bby2] = input[rand_index, :, bbx1:bbx2, bby1:bby2]``, ``lam``
adjusted to the exact area, ``r = np.random.rand(1)`` compared with the cutmix probability, and
``criterion(output, target_a) * lam + criterion(output, target_b) * (1. - lam)``. ``MIX = "beta"``
draws ``lam`` from ``torch.distributions.Beta(alpha, alpha).sample()`` instead and mixes one-hot targets
into soft labels for ``F.cross_entropy`` with probabilities. A small pre-activation ResNet with
``nesterov`` SGD and ``MultiStepLR``, adjusted by hand like the original (``adjust_learning_rate``
writes ``param_group['lr']``)."""

from __future__ import annotations

import numpy as np
from shim import DataLoader, F, TensorDataset, nn, optim, torch

MIX = "mixup"  # or "cutmix", or "beta"
ALPHA = 1.0
CUTMIX_PROB = 1.0
BATCH = 8
SHUFFLE = True
NUM_CLASSES = 4


class PreActBlock(nn.Module):
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
    def __init__(self, block, num_blocks, num_classes=10):
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
    return PreActResNet(PreActBlock, [1, 1], num_classes=NUM_CLASSES)


def mixup_data(x, y, alpha=1.0, use_cuda=False):
    """Returns mixed inputs, pairs of targets, and lambda"""
    if alpha > 0:
        lam = np.random.beta(alpha, alpha)
    else:
        lam = 1

    batch_size = x.size()[0]
    if use_cuda:
        index = torch.randperm(batch_size).cuda()
    else:
        index = torch.randperm(batch_size)

    mixed_x = lam * x + (1 - lam) * x[index, :]
    y_a, y_b = y, y[index]
    return mixed_x, y_a, y_b, lam


def mixup_criterion(criterion, pred, y_a, y_b, lam):
    return lam * criterion(pred, y_a) + (1 - lam) * criterion(pred, y_b)


def rand_bbox(size, lam):
    W = size[2]
    H = size[3]
    cut_rat = np.sqrt(1.0 - lam)
    cut_w = int(W * cut_rat)
    cut_h = int(H * cut_rat)

    # uniform
    cx = np.random.randint(W)
    cy = np.random.randint(H)

    bbx1 = np.clip(cx - cut_w // 2, 0, W)
    bby1 = np.clip(cy - cut_h // 2, 0, H)
    bbx2 = np.clip(cx + cut_w // 2, 0, W)
    bby2 = np.clip(cy + cut_h // 2, 0, H)

    return bbx1, bby1, bbx2, bby2


def beta_mix(x, y, alpha):
    """lam from torch.distributions.Beta, soft one-hot targets."""
    lam = torch.distributions.Beta(torch.tensor([alpha]), torch.tensor([alpha])).sample()
    index = torch.randperm(x.size(0))
    y_onehot = F.one_hot(y, NUM_CLASSES).float()
    mixed_x = lam * x + (1 - lam) * x[index]
    mixed_y = lam * y_onehot + (1 - lam) * y_onehot[index]
    return mixed_x, mixed_y, lam.item()


def adjust_learning_rate(optimizer, epoch, base_lr):
    """decrease the learning rate at 100 and 150 epoch (here: after the first epoch)"""
    lr = base_lr
    if epoch >= 1:
        lr /= 10
    for param_group in optimizer.param_groups:
        param_group["lr"] = lr


def synthetic_data(n):
    rng = np.random.default_rng(0)
    labels = rng.integers(0, NUM_CLASSES, n)
    images = rng.normal(0.0, 0.5, size=(n, 3, 8, 8)).astype(np.float32)
    for i, label in enumerate(labels):
        images[i, label % 3, 2 * (label // 3) :, :] += 1.0
    return TensorDataset(torch.from_numpy(images), torch.from_numpy(labels))


def train(model, steps=3):
    Variable = torch.autograd.Variable  # from torch.autograd import Variable
    np.random.seed(0)
    torch.manual_seed(0)
    base_lr = 0.1
    trainloader = DataLoader(synthetic_data(BATCH * steps), batch_size=BATCH, shuffle=SHUFFLE)
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(model.parameters(), lr=base_lr, momentum=0.9, weight_decay=1e-4, nesterov=True)
    record = {"losses": [], "acc": [], "lam": [], "lr": []}
    for epoch in range(2):
        adjust_learning_rate(optimizer, epoch, base_lr)
        model.train()
        train_loss = 0
        correct = 0
        total = 0
        for batch_idx, (inputs, targets) in enumerate(trainloader):
            if epoch == 1 and batch_idx >= 1:
                break
            if MIX == "mixup":
                inputs, targets_a, targets_b, lam = mixup_data(inputs, targets, ALPHA)
                inputs, targets_a, targets_b = map(Variable, (inputs, targets_a, targets_b))
                outputs = model(inputs)
                loss = mixup_criterion(criterion, outputs, targets_a, targets_b, lam)
            elif MIX == "cutmix":
                r = np.random.rand(1)
                if ALPHA > 0 and r < CUTMIX_PROB:
                    # generate mixed sample
                    lam = np.random.beta(ALPHA, ALPHA)
                    rand_index = torch.randperm(inputs.size()[0])
                    targets_a = targets
                    targets_b = targets[rand_index]
                    bbx1, bby1, bbx2, bby2 = rand_bbox(inputs.size(), lam)
                    inputs[:, :, bbx1:bbx2, bby1:bby2] = inputs[rand_index, :, bbx1:bbx2, bby1:bby2]
                    # adjust lambda to exactly match pixel ratio
                    lam = 1 - ((bbx2 - bbx1) * (bby2 - bby1) / (inputs.size()[-1] * inputs.size()[-2]))
                    # compute output
                    outputs = model(inputs)
                    loss = criterion(outputs, targets_a) * lam + criterion(outputs, targets_b) * (1.0 - lam)
                else:
                    targets_a = targets_b = targets
                    lam = 1.0
                    outputs = model(inputs)
                    loss = criterion(outputs, targets)
            else:
                inputs, soft_targets, lam = beta_mix(inputs, targets, ALPHA)
                targets_a, targets_b = targets, targets  # accuracy against the unmixed labels
                outputs = model(inputs)
                loss = F.cross_entropy(outputs, soft_targets)

            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

            train_loss += loss.item()
            _, predicted = torch.max(outputs.data, 1)
            total += targets.size(0)
            correct += (
                lam * predicted.eq(targets_a.data).cpu().sum().float()
                + (1 - lam) * predicted.eq(targets_b.data).cpu().sum().float()
            )
            record["losses"].append(loss.item())
            record["lam"].append(float(lam))
            record["acc"].append(float(100.0 * correct / total))
        record["lr"].append(optimizer.param_groups[0]["lr"])
        record.setdefault("train_loss", []).append(train_loss / (batch_idx + 1))
    record["losses"] = record["losses"][:steps]
    return record


if __name__ == "__main__":
    print(train(build()))
