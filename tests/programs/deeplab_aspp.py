"""torchvision's DeepLabV3 (``models/segmentation/deeplabv3.py``, ``_utils.py``) trained as its reference
script (``references/segmentation/train.py``, ``utils.py``) trains it, at tiny sizes on synthetic images.

Its idioms: an ``IntermediateLayerGetter`` (an ``nn.ModuleDict`` over ``named_children()`` returning an
``OrderedDict`` of the layers named in ``return_layers``); ``ASPPConv`` and ``ASPPPooling`` as
``nn.Sequential`` subclasses (dilated 3x3 convs with ``padding=dilation``; an ``AdaptiveAvgPool2d(1)``
branch iterated ``for mod in self`` and brought back by ``F.interpolate(size=x.shape[-2:],
mode="bilinear", align_corners=False)``); ``torch.cat`` of the branches, a projection with
``nn.Dropout(0.5)``; an FCN auxiliary head; the output upsampled to ``input_shape`` and returned in a
dict; ``nn.functional.cross_entropy(x, target, ignore_index=255)`` summed as ``out + 0.5 * aux`` over
targets with a 255 border; SGD over parameter groups with the aux head's ``lr * 10``, momentum and
weight decay, the poly schedule by ``LambdaLR(lambda x: (1 - x / total) ** 0.9)``; and the
``ConfusionMatrix`` (``self.mat += torch.bincount(n * a[k].to(torch.int64) + b[k], minlength=n**2)
.reshape(n, n)`` under ``torch.inference_mode()``, ``torch.diag``, global accuracy, per-class IoU and
``iu.mean().item() * 100``), fed ``target.flatten(), output.argmax(1).flatten()``.
``ATROUS = "multi_grid"`` uses a backbone whose last block is dilated instead of strided
(``replace_stride_with_dilation``)."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
from shim import F, nn, optim, torch

NUM_CLASSES = 3
ATROUS = "head"  # or "multi_grid": the backbone's last stage dilated instead of strided
DROPOUT = 0.5
IMAGE = 16
BATCH = 2


class IntermediateLayerGetter(nn.ModuleDict):
    """Module wrapper that returns intermediate layers from a model (torchvision.models._utils)."""

    _version = 2
    __annotations__ = {"return_layers": dict[str, str]}

    def __init__(self, model: nn.Module, return_layers: dict[str, str]) -> None:
        if not set(return_layers).issubset([name for name, _ in model.named_children()]):
            raise ValueError("return_layers are not present in model")
        orig_return_layers = return_layers
        return_layers = {str(k): str(v) for k, v in return_layers.items()}
        layers = OrderedDict()
        for name, module in model.named_children():
            layers[name] = module
            if name in return_layers:
                del return_layers[name]
            if not return_layers:
                break

        super().__init__(layers)
        self.return_layers = orig_return_layers

    def forward(self, x):
        out = OrderedDict()
        for name, module in self.items():
            x = module(x)
            if name in self.return_layers:
                out_name = self.return_layers[name]
                out[out_name] = x
        return out


def conv_bn_relu(in_channels, out_channels, stride=1, dilation=1):
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=dilation, dilation=dilation, bias=False),
        nn.BatchNorm2d(out_channels),
        nn.ReLU(inplace=True),
    )


class TinyBackbone(nn.Module):
    """A ResNet's stem and stages in miniature: output stride 8, or 4 with the last stage dilated."""

    def __init__(self, replace_stride_with_dilation=False):
        super().__init__()
        self.stem = conv_bn_relu(3, 4, stride=2)
        self.layer1 = conv_bn_relu(4, 6, stride=2)
        self.layer2 = conv_bn_relu(6, 8, stride=1 if replace_stride_with_dilation else 2)
        self.layer3 = conv_bn_relu(8, 8, dilation=2 if replace_stride_with_dilation else 1)
        self.fc = nn.Linear(8, 10)  # the classifier IntermediateLayerGetter leaves out


class ASPPConv(nn.Sequential):
    def __init__(self, in_channels: int, out_channels: int, dilation: int) -> None:
        modules = [
            nn.Conv2d(in_channels, out_channels, 3, padding=dilation, dilation=dilation, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
        ]
        super().__init__(*modules)


class ASPPPooling(nn.Sequential):
    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__(
            nn.AdaptiveAvgPool2d(1),
            nn.Conv2d(in_channels, out_channels, 1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
        )

    def forward(self, x):
        size = x.shape[-2:]
        for mod in self:
            x = mod(x)
        return F.interpolate(x, size=size, mode="bilinear", align_corners=False)


class ASPP(nn.Module):
    def __init__(self, in_channels: int, atrous_rates, out_channels: int = 8) -> None:
        super().__init__()
        modules = []
        modules.append(
            nn.Sequential(nn.Conv2d(in_channels, out_channels, 1, bias=False), nn.BatchNorm2d(out_channels), nn.ReLU())
        )

        rates = tuple(atrous_rates)
        for rate in rates:
            modules.append(ASPPConv(in_channels, out_channels, rate))

        modules.append(ASPPPooling(in_channels, out_channels))

        self.convs = nn.ModuleList(modules)

        self.project = nn.Sequential(
            nn.Conv2d(len(self.convs) * out_channels, out_channels, 1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
            nn.Dropout(DROPOUT),
        )

    def forward(self, x):
        _res = []
        for conv in self.convs:
            _res.append(conv(x))
        res = torch.cat(_res, dim=1)
        return self.project(res)


class DeepLabHead(nn.Sequential):
    def __init__(self, in_channels: int, num_classes: int, atrous_rates=(12, 24, 36)) -> None:
        super().__init__(
            ASPP(in_channels, atrous_rates),
            nn.Conv2d(8, 8, 3, padding=1, bias=False),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.Conv2d(8, num_classes, 1),
        )


class FCNHead(nn.Sequential):
    def __init__(self, in_channels: int, channels: int) -> None:
        inter_channels = in_channels // 4
        layers = [
            nn.Conv2d(in_channels, inter_channels, 3, padding=1, bias=False),
            nn.BatchNorm2d(inter_channels),
            nn.ReLU(),
            nn.Dropout(0.1 if DROPOUT else 0.0),
            nn.Conv2d(inter_channels, channels, 1),
        ]
        super().__init__(*layers)


class DeepLabV3(nn.Module):
    __constants__ = ["aux_classifier"]

    def __init__(self, backbone, classifier, aux_classifier=None):
        super().__init__()
        self.backbone = backbone
        self.classifier = classifier
        self.aux_classifier = aux_classifier

    def forward(self, x):
        input_shape = x.shape[-2:]
        # contract: features is a dict of tensors
        features = self.backbone(x)

        result = OrderedDict()
        x = features["out"]
        x = self.classifier(x)
        x = F.interpolate(x, size=input_shape, mode="bilinear", align_corners=False)
        result["out"] = x

        if self.aux_classifier is not None:
            x = features["aux"]
            x = self.aux_classifier(x)
            x = F.interpolate(x, size=input_shape, mode="bilinear", align_corners=False)
            result["aux"] = x

        return result


def build():
    torch.manual_seed(0)
    dilated = ATROUS == "multi_grid"
    backbone = TinyBackbone(replace_stride_with_dilation=dilated)
    return_layers = {"layer3": "out", "layer1": "aux"}
    backbone = IntermediateLayerGetter(backbone, return_layers=return_layers)
    rates = (2, 4, 6) if dilated else (1, 2, 3)
    return DeepLabV3(backbone, DeepLabHead(8, NUM_CLASSES, rates), FCNHead(6, NUM_CLASSES))


def criterion(inputs, target):
    losses = {}
    for name, x in inputs.items():
        losses[name] = nn.functional.cross_entropy(x, target, ignore_index=255)

    if len(losses) == 1:
        return losses["out"]

    return losses["out"] + 0.5 * losses["aux"]


class ConfusionMatrix:
    def __init__(self, num_classes):
        self.num_classes = num_classes
        self.mat = None

    def update(self, a, b):
        n = self.num_classes
        if self.mat is None:
            self.mat = torch.zeros((n, n), dtype=torch.int64, device=a.device)
        with torch.inference_mode():
            k = (a >= 0) & (a < n)
            inds = n * a[k].to(torch.int64) + b[k]
            self.mat += torch.bincount(inds, minlength=n**2).reshape(n, n)

    def reset(self):
        self.mat.zero_()

    def compute(self):
        h = self.mat.float()
        acc_global = torch.diag(h).sum() / h.sum()
        acc = torch.diag(h) / h.sum(1)
        iu = torch.diag(h) / (h.sum(1) + h.sum(0) - torch.diag(h))
        return acc_global, acc, iu

    def __str__(self):
        acc_global, acc, iu = self.compute()
        return ("global correct: {:.1f}\naverage row correct: {}\nIoU: {}\nmean IoU: {:.1f}").format(
            acc_global.item() * 100,
            [f"{i:.1f}" for i in (acc * 100).tolist()],
            [f"{i:.1f}" for i in (iu * 100).tolist()],
            iu.mean().item() * 100,
        )


def synthetic_batch(rng):
    """Images with a bright disc (class 1) and a dark square (class 2); the outer ring is 255 (void)."""
    images = rng.normal(0.0, 0.2, size=(BATCH, 3, IMAGE, IMAGE)).astype(np.float32)
    targets = np.zeros((BATCH, IMAGE, IMAGE), np.int64)
    yy, xx = np.mgrid[:IMAGE, :IMAGE]
    for i in range(BATCH):
        cy, cx = rng.integers(4, IMAGE - 4, 2)
        disc = (yy - cy) ** 2 + (xx - cx) ** 2 <= 9
        images[i, 0][disc] += 1.0
        targets[i][disc] = 1
        y0, x0 = rng.integers(1, IMAGE - 5, 2)
        images[i, 2, y0 : y0 + 4, x0 : x0 + 4] -= 1.0
        targets[i, y0 : y0 + 4, x0 : x0 + 4] = 2
    targets[:, 0, :] = targets[:, -1, :] = targets[:, :, 0] = targets[:, :, -1] = 255
    return torch.from_numpy(images), torch.from_numpy(targets)


def evaluate(model, batches, num_classes):
    model.eval()
    confmat = ConfusionMatrix(num_classes)
    with torch.inference_mode():
        for image, target in batches:
            output = model(image)
            output = output["out"]
            confmat.update(target.flatten(), output.argmax(1).flatten())
    return confmat


def train(model, steps=3):
    rng = np.random.default_rng(0)
    lr, epochs, iters_per_epoch = 0.02, 2, steps
    params_to_optimize = [
        {"params": [p for p in model.backbone.parameters() if p.requires_grad]},
        {"params": [p for p in model.classifier.parameters() if p.requires_grad]},
    ]
    params = [p for p in model.aux_classifier.parameters() if p.requires_grad]
    params_to_optimize.append({"params": params, "lr": lr * 10})
    optimizer = optim.SGD(params_to_optimize, lr=lr, momentum=0.9, weight_decay=1e-4)
    lr_scheduler = optim.lr_scheduler.LambdaLR(optimizer, lambda x: (1 - x / (iters_per_epoch * epochs)) ** 0.9)
    record = {"losses": [], "lr": []}
    model.train()
    for _ in range(steps):
        image, target = synthetic_batch(rng)
        output = model(image)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        lr_scheduler.step()
        record["losses"].append(loss.item())
        record["lr"].append([group["lr"] for group in optimizer.param_groups])
    confmat = evaluate(model, [synthetic_batch(rng) for _ in range(2)], NUM_CLASSES)
    record["confmat"] = confmat.mat.tolist()
    record["report"] = str(confmat)
    acc_global, _, iu = confmat.compute()
    record["miou"] = iu.mean().item() * 100
    record["acc_global"] = acc_global.item()
    record["out_shape"] = list(model(image)["out"].shape)
    return record


if __name__ == "__main__":
    print(train(build()))
