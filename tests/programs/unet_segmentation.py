"""Binary segmentation with a small U-Net trained on Dice + BCE, as the popular U-Net repositories write it.

Its idioms: ``DoubleConv`` blocks (Conv2d without bias, BatchNorm2d, ``ReLU(inplace=True)``); ``Down`` as
``MaxPool2d(2)``; ``Up`` by ``nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)`` or
``ConvTranspose2d(k=2, s=2)``, the skip padded to size with ``F.pad(x1, [dx // 2, dx - dx // 2, ...])``
when the input is odd-sized, joined by ``torch.cat([x2, x1], dim=1)``; the model and images moved to
``memory_format=torch.channels_last``; targets at twice the resolution brought down with
``F.interpolate(mode="nearest")``; ``F.binary_cross_entropy_with_logits`` plus a soft Dice loss over
``dim=(-1, -2)`` of ``torch.sigmoid`` (or the multi-class form: ``F.one_hot(...).permute(0, 3, 1, 2)``
with ``F.softmax`` and ``F.cross_entropy``); RMSprop with momentum and ``foreach=True``,
``clip_grad_norm_``, a disabled ``torch.amp.GradScaler`` and ``torch.autocast(enabled=False)``;
``ReduceLROnPlateau("max")`` on the validation Dice; metrics by thresholding
``(torch.sigmoid(logits) > 0.5).float()`` (IoU, pixel accuracy) under ``torch.inference_mode()``."""

from __future__ import annotations

import numpy as np
from shim import F, nn, optim, torch

BILINEAR = True
CLASSES = 1  # or 2: the multi-class loss
DEVICE = "cpu"


class DoubleConv(nn.Module):
    def __init__(self, in_channels, out_channels, mid_channels=None):
        super().__init__()
        if not mid_channels:
            mid_channels = out_channels
        self.double_conv = nn.Sequential(
            nn.Conv2d(in_channels, mid_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(mid_channels),
            nn.ReLU(inplace=True),
            nn.Conv2d(mid_channels, out_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(inplace=True),
        )

    def forward(self, x):
        return self.double_conv(x)


class Down(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.maxpool_conv = nn.Sequential(nn.MaxPool2d(2), DoubleConv(in_channels, out_channels))

    def forward(self, x):
        return self.maxpool_conv(x)


class Up(nn.Module):
    def __init__(self, in_channels, out_channels, bilinear=True):
        super().__init__()
        if bilinear:
            self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
            self.conv = DoubleConv(in_channels, out_channels, in_channels // 2)
        else:
            self.up = nn.ConvTranspose2d(in_channels, in_channels // 2, kernel_size=2, stride=2)
            self.conv = DoubleConv(in_channels, out_channels)

    def forward(self, x1, x2):
        x1 = self.up(x1)
        diff_y = x2.size()[2] - x1.size()[2]
        diff_x = x2.size()[3] - x1.size()[3]
        x1 = F.pad(x1, [diff_x // 2, diff_x - diff_x // 2, diff_y // 2, diff_y - diff_y // 2])
        x = torch.cat([x2, x1], dim=1)
        return self.conv(x)


class UNet(nn.Module):
    def __init__(self, n_channels, n_classes, bilinear=False):
        super().__init__()
        self.n_channels = n_channels
        self.n_classes = n_classes
        self.bilinear = bilinear
        factor = 2 if bilinear else 1
        self.inc = DoubleConv(n_channels, 4)
        self.down1 = Down(4, 8)
        self.down2 = Down(8, 16 // factor)
        self.up1 = Up(16, 8 // factor, bilinear)
        self.up2 = Up(8, 4, bilinear)
        self.outc = nn.Conv2d(4, n_classes, kernel_size=1)

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        x = self.up1(x3, x2)
        x = self.up2(x, x1)
        return self.outc(x)


def dice_coeff(input, target, reduce_batch_first=False, epsilon=1e-6):
    sum_dim = (-1, -2) if input.dim() == 2 or not reduce_batch_first else (-1, -2, -3)
    inter = 2 * (input * target).sum(dim=sum_dim)
    sets_sum = input.sum(dim=sum_dim) + target.sum(dim=sum_dim)
    sets_sum = torch.where(sets_sum == 0, inter, sets_sum)
    dice = (inter + epsilon) / (sets_sum + epsilon)
    return dice.mean()


def multiclass_dice_coeff(input, target, reduce_batch_first=False, epsilon=1e-6):
    return dice_coeff(input.flatten(0, 1), target.flatten(0, 1), reduce_batch_first, epsilon)


def dice_loss(input, target, multiclass=False):
    fn = multiclass_dice_coeff if multiclass else dice_coeff
    return 1 - fn(input, target, reduce_batch_first=True)


def make_data(n, size=9, seed=0):
    rng = np.random.default_rng(seed)
    images = rng.standard_normal((n, 1, size, size)).astype(np.float32)
    yy, xx = np.mgrid[: 2 * size, : 2 * size]
    centres = rng.integers(4, 2 * size - 4, (n, 2))
    masks = np.stack([((yy - cy) ** 2 + (xx - cx) ** 2 < 16) for cy, cx in centres]).astype(np.int64)
    images += masks[:, None, ::2, ::2] * 1.5
    return torch.tensor(images), torch.tensor(masks)


def build():
    torch.manual_seed(0)
    return UNet(n_channels=1, n_classes=CLASSES, bilinear=BILINEAR)


def evaluate(model, images, masks):
    model.eval()
    with torch.inference_mode():
        logits = model(images)
        if model.n_classes == 1:
            pred = (torch.sigmoid(logits) > 0.5).float()
            truth = masks.float().unsqueeze(1)
            dice = dice_coeff(pred, truth, reduce_batch_first=False)
        else:
            pred = F.one_hot(logits.argmax(dim=1), model.n_classes).permute(0, 3, 1, 2).float()
            truth = F.one_hot(masks, model.n_classes).permute(0, 3, 1, 2).float()
            dice = multiclass_dice_coeff(pred[:, 1:], truth[:, 1:], reduce_batch_first=False)
        inter = (pred * truth).sum()
        union = pred.sum() + truth.sum() - inter
        iou = (inter / union.clamp(min=1)).item()
        accuracy = (pred == truth).float().mean().item()
    model.train()
    return dice.item(), iou, accuracy


def train(model, steps=2):
    device = torch.device(DEVICE)
    images, full_masks = make_data(2 * steps + 2)
    model.to(device=device, memory_format=torch.channels_last)
    optimizer = optim.RMSprop(model.parameters(), lr=1e-3, weight_decay=1e-8, momentum=0.9, foreach=True)
    scheduler = optim.lr_scheduler.ReduceLROnPlateau(optimizer, "max", patience=0, factor=0.5)
    grad_scaler = torch.amp.GradScaler(device.type, enabled=False)
    criterion = nn.CrossEntropyLoss() if model.n_classes > 1 else nn.BCEWithLogitsLoss()
    record = {"losses": [], "dice": [], "iou": [], "accuracy": [], "lr": []}
    model.train()
    for i in range(steps):
        batch = images[2 * i : 2 * i + 2].to(device=device, dtype=torch.float32, memory_format=torch.channels_last)
        true_masks = full_masks[2 * i : 2 * i + 2].unsqueeze(1).float()
        true_masks = F.interpolate(true_masks, size=batch.shape[-2:], mode="nearest").squeeze(1).long()
        true_masks = true_masks.to(device=device, dtype=torch.long)
        with torch.autocast(device.type, enabled=False):
            masks_pred = model(batch)
            if model.n_classes == 1:
                loss = criterion(masks_pred.squeeze(1), true_masks.float())
                loss += dice_loss(F.sigmoid(masks_pred.squeeze(1)), true_masks.float(), multiclass=False)
            else:
                loss = criterion(masks_pred, true_masks)
                loss += dice_loss(
                    F.softmax(masks_pred, dim=1).float(),
                    F.one_hot(true_masks, model.n_classes).permute(0, 3, 1, 2).float(),
                    multiclass=True,
                )
        optimizer.zero_grad(set_to_none=True)
        grad_scaler.scale(loss).backward()
        grad_scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        grad_scaler.step(optimizer)
        grad_scaler.update()
        val_masks = F.interpolate(full_masks[-2:].unsqueeze(1).float(), scale_factor=0.5, mode="nearest")
        dice, iou, accuracy = evaluate(model, images[-2:].to(device), val_masks.squeeze(1).long().to(device))
        scheduler.step(dice)
        record["losses"].append(loss.item())
        record["dice"].append(dice)
        record["iou"].append(iou)
        record["accuracy"].append(accuracy)
        record["lr"].append(optimizer.param_groups[0]["lr"])
    return record


if __name__ == "__main__":
    print(train(build()))
