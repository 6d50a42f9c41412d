"""A ResNet fine-tuning script with the reproducibility and speed switches of modern vision training code
(torchvision's references/classification/train.py, timm's train.py), at tiny sizes on synthetic images.

Its idioms: ``seed_everything`` (``random.seed``, ``np.random.seed``, ``torch.manual_seed``,
``torch.cuda.manual_seed_all``), ``os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"``,
``torch.backends.cudnn.deterministic = True``, ``torch.backends.cudnn.benchmark = False``,
``torch.use_deterministic_algorithms(True)`` and ``torch.are_deterministic_algorithms_enabled()``; a
"pretrained" backbone whose ``fc`` is replaced by ``nn.Linear(model.fc.in_features, num_classes)`` (or,
as the fine-tuning tutorial does for SqueezeNet, whose ``classifier[1]`` becomes a ``Conv2d(...,
kernel_size=(1, 1))`` with a bias, and ``model.num_classes`` is set); the early stages frozen by
``requires_grad = False`` over ``named_parameters()`` and their BatchNorms kept in eval mode by
``model.apply(set_bn_eval)`` after ``model.train()``; ``model.to(device, memory_format=torch.channels_last)``
and ``images.contiguous(memory_format=torch.channels_last)``; bfloat16 mixed precision by
``torch.autocast(device_type="cpu", dtype=torch.bfloat16)`` around the forward and the loss (no
GradScaler); SGD over ``filter(lambda p: p.requires_grad, model.parameters())`` in two groups (the head
at 10x), a warmup by ``LinearLR`` chained to ``CosineAnnealingLR`` with ``SequentialLR``; label
smoothing; evaluation under ``torch.inference_mode()`` and autocast, with ``output.float()`` and top-1
by ``topk``; and the weights' memory format checked by ``is_contiguous(memory_format=...)``."""

from __future__ import annotations

import os
import random

import numpy as np
from shim import F, nn, optim, torch

HEAD = "linear"  # or "conv": SqueezeNet's 1x1 conv classifier with a bias
AMP = True
CHANNELS_LAST = True
NUM_CLASSES = 3
BATCH = 4


def seed_everything(seed: int) -> None:
    random.seed(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    def __init__(self, layers=(1, 1), num_classes=1000, width=4):
        super().__init__()
        self.inplanes = width
        self.conv1 = nn.Conv2d(3, width, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(width, layers[0])
        self.layer2 = self._make_layer(2 * width, layers[1], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(2 * width, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def _make_layer(self, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes, kernel_size=1, stride=stride, bias=False), nn.BatchNorm2d(planes)
            )
        layers = [BasicBlock(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes
        layers += [BasicBlock(planes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer2(self.layer1(x))
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        return self.fc(x)


class ConvHeadResNet(ResNet):
    """The backbone with SqueezeNet's classifier: dropout, a 1x1 conv with a bias, ReLU, global pooling."""

    def __init__(self, num_classes=1000, width=4):
        super().__init__(num_classes=num_classes, width=width)
        del self.fc
        self.classifier = nn.Sequential(
            nn.Dropout(p=0.0), nn.Conv2d(2 * width, num_classes, kernel_size=1), nn.ReLU(inplace=True)
        )

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer2(self.layer1(x))
        x = self.classifier(x)
        return torch.flatten(F.adaptive_avg_pool2d(x, (1, 1)), 1)


def build():
    seed_everything(0)
    if HEAD == "conv":
        model = ConvHeadResNet(num_classes=10)  # the "pretrained" model, 10 classes
        model.classifier[1] = nn.Conv2d(8, NUM_CLASSES, kernel_size=(1, 1), stride=(1, 1))
        model.num_classes = NUM_CLASSES
    else:
        model = ResNet(num_classes=10)
        model.fc = nn.Linear(model.fc.in_features, NUM_CLASSES)
    return model


def set_bn_eval(m):
    if isinstance(m, nn.BatchNorm2d) and not m.weight.requires_grad:
        m.eval()


def synthetic_images(rng, n):
    labels = rng.integers(0, NUM_CLASSES, n)
    images = rng.normal(0.0, 0.5, size=(n, 3, 8, 8)).astype(np.float32)
    for i, label in enumerate(labels):
        images[i, label] += 0.8
    return torch.from_numpy(images), torch.from_numpy(labels)


def train(model, steps=3):
    os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    torch.use_deterministic_algorithms(True)
    record = {"deterministic": torch.are_deterministic_algorithms_enabled(), "losses": [], "lr": []}
    try:
        device = torch.device("cpu")
        memory_format = torch.channels_last if CHANNELS_LAST else torch.contiguous_format
        model = model.to(device, memory_format=memory_format)
        head = "classifier" if HEAD == "conv" else "fc"
        for name, param in model.named_parameters():
            if not name.startswith(("layer2", head)):
                param.requires_grad = False
        head_params = [p for n, p in model.named_parameters() if n.startswith(head)]
        backbone_params = [p for n, p in model.named_parameters() if not n.startswith(head) and p.requires_grad]
        params = filter(lambda p: p.requires_grad, model.parameters())
        record["n_trainable"] = sum(p.numel() for p in params)
        optimizer = optim.SGD(
            [{"params": backbone_params}, {"params": head_params, "lr": 0.1}], lr=0.01, momentum=0.9, weight_decay=1e-4
        )
        warmup = optim.lr_scheduler.LinearLR(optimizer, start_factor=0.1, total_iters=2)
        cosine = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps, eta_min=1e-4)
        scheduler = optim.lr_scheduler.SequentialLR(optimizer, [warmup, cosine], milestones=[2])
        criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
        rng = np.random.default_rng(0)
        for _ in range(steps):
            model.train()
            model.apply(set_bn_eval)
            images, target = synthetic_images(rng, BATCH)
            images = images.to(device, non_blocking=True).contiguous(memory_format=memory_format)
            target = target.to(device, non_blocking=True)
            with torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=AMP):
                output = model(images)
                loss = criterion(output, target)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            scheduler.step()
            record["losses"].append(loss.item())
            record["lr"].append(scheduler.get_last_lr())
        record["output_dtype"] = str(output.dtype).replace("vkml.", "torch.")
        record["frozen_bn_in_eval"] = [not m.training for m in model.layer1.modules() if isinstance(m, nn.BatchNorm2d)]
        model.eval()
        images, target = synthetic_images(rng, 2 * BATCH)
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=AMP):
            output = model(images.contiguous(memory_format=memory_format)).float()
        _, pred = output.topk(1, 1, True, True)
        record["top1"] = pred.t().eq(target.view(1, -1)).float().sum().item() * 100.0 / target.size(0)
        # (the logits themselves are left out: the trained weights differ from PyTorch's by round-off, since
        # the bfloat16 convolutions' gradients sum in another order, and a logit can move by one bfloat16 step)
        record["eval_predictions"] = output.argmax(1).tolist()
        record["channels_last"] = model.conv1.weight.is_contiguous(memory_format=torch.channels_last)
    finally:
        torch.use_deterministic_algorithms(False)
        torch.backends.cudnn.deterministic = False
    return record


if __name__ == "__main__":
    print(train(build()))
