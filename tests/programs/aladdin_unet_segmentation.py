"""The U-Net image segmentation of Aladdin Persson's Machine-Learning-Collection (ML/Pytorch/image_segmentation/
semantic_segmentation_unet: model.py, train.py, utils.py), at a tiny width on synthetic 18x18 images and masks.

Idioms: ``DoubleConv`` (``nn.Conv2d(in_channels, out_channels, 3, 1, 1, bias=False)``, ``nn.BatchNorm2d``,
``nn.ReLU(inplace=True)``); ``UNET`` with ``self.ups``/``self.downs`` ``nn.ModuleList``s appended in loops over
``features`` and ``reversed(features)``, ``skip_connections = skip_connections[::-1]``, ``self.ups[idx](x)`` then
``self.ups[idx + 1](concat_skip)`` for ``idx in range(0, len(self.ups), 2)``, ``if x.shape !=
skip_connection.shape`` (an odd size: 18 -> 9 -> 4), where the original calls ``TF.resize`` and this one crops the
skip to ``x``'s size (and the masks to the output's), ``torch.cat((skip_connection, x), dim=1)``; the script's ``test()`` asserting ``preds.shape
== x.shape``; ``train_fn`` with ``targets.float().unsqueeze(1).to(device=DEVICE)``, ``torch.cuda.amp.autocast()``
and a ``GradScaler``; ``nn.BCEWithLogitsLoss()``; utils' ``check_accuracy`` (``torch.sigmoid(model(x))``, ``(preds
> 0.5).float()``, ``num_correct += (preds == y).sum()``, ``num_pixels += torch.numel(preds)``, ``dice_score += (2 *
(preds * y).sum()) / ((preds + y).sum() + 1e-8)``, the ``f"Got {num_correct}/{num_pixels} with acc
{num_correct/num_pixels*100:.2f}"`` and ``f"Dice score: {dice_score/len(loader)}"`` prints of tensors) and
``save_predictions_as_imgs``' ``preds = (preds > 0.5).float()`` under ``torch.no_grad()``.
"""

from __future__ import annotations

import warnings

import numpy as np
from shim import nn, optim, torch

LEARNING_RATE = 1e-3
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
BATCH_SIZE = 2
IMAGE_HEIGHT = 18  # 1280 originally
IMAGE_WIDTH = 18  # 1918 originally


class DoubleConv(nn.Module):
    def __init__(self, in_channels, out_channels):
        super(DoubleConv, self).__init__()  # noqa: UP008
        self.conv = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, 3, 1, 1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(inplace=True),
            nn.Conv2d(out_channels, out_channels, 3, 1, 1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(inplace=True),
        )

    def forward(self, x):
        return self.conv(x)


def center_crop(skip_connection, size):
    """The skip cut to ``size`` (H, W) around its centre, as the U-Net paper crops."""
    top = (skip_connection.shape[2] - size[0]) // 2
    left = (skip_connection.shape[3] - size[1]) // 2
    return skip_connection[:, :, top : top + size[0], left : left + size[1]]


class UNET(nn.Module):
    def __init__(self, in_channels=3, out_channels=1, features=[64, 128, 256, 512]):  # noqa: B006
        super(UNET, self).__init__()  # noqa: UP008
        self.ups = nn.ModuleList()
        self.downs = nn.ModuleList()
        self.pool = nn.MaxPool2d(kernel_size=2, stride=2)

        # Down part of UNET
        for feature in features:
            self.downs.append(DoubleConv(in_channels, feature))
            in_channels = feature

        # Up part of UNET
        for feature in reversed(features):
            self.ups.append(nn.ConvTranspose2d(feature * 2, feature, kernel_size=2, stride=2))
            self.ups.append(DoubleConv(feature * 2, feature))

        self.bottleneck = DoubleConv(features[-1], features[-1] * 2)
        self.final_conv = nn.Conv2d(features[0], out_channels, kernel_size=1)

    def forward(self, x):
        skip_connections = []

        for down in self.downs:
            x = down(x)
            skip_connections.append(x)
            x = self.pool(x)

        x = self.bottleneck(x)
        skip_connections = skip_connections[::-1]

        for idx in range(0, len(self.ups), 2):
            x = self.ups[idx](x)
            skip_connection = skip_connections[idx // 2]

            if x.shape != skip_connection.shape:
                skip_connection = center_crop(skip_connection, size=x.shape[2:])

            concat_skip = torch.cat((skip_connection, x), dim=1)
            x = self.ups[idx + 1](concat_skip)

        return self.final_conv(x)


def test():
    x = torch.randn((2, 1, 16, 16))
    model = UNET(in_channels=1, out_channels=1, features=[2, 4])
    preds = model(x)
    assert preds.shape == x.shape  # no crop at a size divisible by 4
    return list(preds.shape)


def build():
    torch.manual_seed(0)
    return UNET(in_channels=3, out_channels=1, features=[2, 4]).to(DEVICE)


def carvana_like_loader(seed, n=3):
    """Images and masks (a bright disc on the image is the car), as CarvanaDataset gives them."""
    rng = np.random.RandomState(seed)
    yy, xx = np.mgrid[:IMAGE_HEIGHT, :IMAGE_WIDTH]
    for _ in range(n):
        images, masks = [], []
        for _ in range(BATCH_SIZE):
            cy, cx, r = rng.randint(4, 14), rng.randint(4, 14), rng.randint(3, 6)
            mask = ((yy - cy) ** 2 + (xx - cx) ** 2 <= r * r).astype(np.float32)
            images.append(mask[None] * 0.8 + 0.3 * rng.standard_normal((3, IMAGE_HEIGHT, IMAGE_WIDTH)))
            masks.append(mask)
        yield torch.tensor(np.stack(images).astype(np.float32)), torch.tensor(np.stack(masks))


def train_fn(loader, model, optimizer, loss_fn, scaler, steps, record):
    for batch_idx, (data, targets) in enumerate(loader):
        if batch_idx == steps:
            break
        data = data.to(device=DEVICE)
        targets = targets.float().unsqueeze(1).to(device=DEVICE)

        # forward
        with torch.cuda.amp.autocast():
            predictions = model(data)
            targets = center_crop(targets, size=predictions.shape[2:])  # the valid U-Net's smaller output
            loss = loss_fn(predictions, targets)

        # backward
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

        # update tqdm loop
        record["losses"].append(loss.item())


def check_accuracy(loader, model, device="cuda"):
    num_correct = 0
    num_pixels = 0
    dice_score = 0
    model.eval()

    with torch.no_grad():
        for x, y in loader:
            x = x.to(device)
            y = y.to(device).unsqueeze(1)
            preds = torch.sigmoid(model(x))
            preds = (preds > 0.5).float()
            y = center_crop(y, size=preds.shape[2:])
            num_correct += (preds == y).sum()
            num_pixels += torch.numel(preds)
            dice_score += (2 * (preds * y).sum()) / ((preds + y).sum() + 1e-8)

    lines = [
        f"Got {num_correct}/{num_pixels} with acc {num_correct / num_pixels * 100:.2f}",
        f"Dice score: {dice_score / 3:.4f}",
    ]
    model.train()
    return lines, float(dice_score / 3)


def train(model, steps=3):
    record = {"losses": [], "test": test()}
    loss_fn = nn.BCEWithLogitsLoss()
    optimizer = optim.Adam(model.parameters(), lr=LEARNING_RATE)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.cuda.amp's deprecation; PyTorch's CPU build turns it off
        scaler = torch.cuda.amp.GradScaler()
        train_fn(carvana_like_loader(0, steps), model, optimizer, loss_fn, scaler, steps, record)
    model.eval()
    lines, dice = check_accuracy(carvana_like_loader(1), model, device=DEVICE)
    record["eval_lines"] = lines
    record["dice"] = dice
    model.train()
    with torch.no_grad():  # and in train mode, on batch statistics
        x, _ = next(carvana_like_loader(1))
        preds = torch.sigmoid(model(x.to(device=DEVICE)))
        preds = (preds > 0.5).float()
        record["train_mode_preds"] = [preds.mean().item(), torch.sigmoid(model(x.to(DEVICE))).sum().item()]
    return record


if __name__ == "__main__":
    print(train(build()))
