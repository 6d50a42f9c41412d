"""pytorch/examples' imagenet/main.py at a tiny size on synthetic images: its training loop line by line.

Its idioms: the device picked by ``torch.cuda.is_available()`` then ``torch.backends.mps.is_available()``;
``cudnn.benchmark = True`` (``import torch.backends.cudnn as cudnn``); ``nn.CrossEntropyLoss().to(device)``;
SGD with momentum and weight decay under ``StepLR``; a dummy dataset cut by ``torch.utils.data.Subset``
with ``pin_memory=True`` loaders; ``images.to(device, non_blocking=True)``; ``accuracy(output, target,
topk=(1, 5))`` by ``output.topk(maxk, 1, True, True)``, ``pred.t()``, ``pred.eq(target.view(1,
-1).expand_as(pred))``, ``correct[:k].reshape(-1).float().sum(0, keepdim=True)`` and ``mul_(100.0 /
batch_size)``; the ``AverageMeter`` fed 0-d tensors (``top1.update(acc1[0], images.size(0))``, so its sum
and average become tensors) and printed by ``'{val:6.2f} ({avg:6.2f})'.format(**self.__dict__)``; the
``Summary`` enum and ``ProgressMeter``; ``is_best = acc1 > best_acc1`` and ``max(acc1, best_acc1)`` of a
tensor and a number; ``save_checkpoint`` by ``torch.save`` of a dict with the model's, optimizer's and
scheduler's state and ``best_acc1``, ``shutil.copyfile`` to ``model_best.pth.tar``; and a resume by
``torch.load(..., map_location=loc)`` into a fresh model, optimizer and scheduler that goes on as the
uninterrupted run. The model is torchvision's AlexNet at a tiny width (``AdaptiveAvgPool2d((6, 6))``,
``torch.flatten(x, 1)``, in-place ReLUs, Dropout in the classifier).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from enum import Enum

import numpy as np
from shim import lr_scheduler, nn, torch

DROPOUT = 0.5
USE_CUDA = True  # the example's --gpu choice: "cuda" (a Vulkan device under vkml) where there is one
NUM_CLASSES = 6
BATCH_SIZE = 4
PRINT_FREQ = 2
ARCH = "alexnet"


class AlexNet(nn.Module):
    def __init__(self, num_classes: int = 1000, dropout: float = 0.5) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, kernel_size=5, stride=2, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(8, 12, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(12, 8, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
        )
        self.avgpool = nn.AdaptiveAvgPool2d((6, 6))
        self.classifier = nn.Sequential(
            nn.Dropout(p=dropout),
            nn.Linear(8 * 6 * 6, 32),
            nn.ReLU(inplace=True),
            nn.Dropout(p=dropout),
            nn.Linear(32, 32),
            nn.ReLU(inplace=True),
            nn.Linear(32, num_classes),
        )

    def forward(self, x):
        x = self.features(x)
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        x = self.classifier(x)
        return x


class Summary(Enum):
    NONE = 0
    AVERAGE = 1
    SUM = 2
    COUNT = 3


class AverageMeter(object):  # noqa: UP004 (as the example writes it)
    """Computes and stores the average and current value"""

    def __init__(self, name, fmt=":f", summary_type=Summary.AVERAGE):
        self.name = name
        self.fmt = fmt
        self.summary_type = summary_type
        self.reset()

    def reset(self):
        self.val = 0
        self.avg = 0
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count

    def __str__(self):
        fmtstr = "{name} {val" + self.fmt + "} ({avg" + self.fmt + "})"
        return fmtstr.format(**self.__dict__)

    def summary(self):
        fmtstr = ""
        if self.summary_type is Summary.NONE:
            fmtstr = ""
        elif self.summary_type is Summary.AVERAGE:
            fmtstr = "{name} {avg:.3f}"
        elif self.summary_type is Summary.SUM:
            fmtstr = "{name} {sum:.3f}"
        elif self.summary_type is Summary.COUNT:
            fmtstr = "{name} {count:.3f}"
        else:
            raise ValueError("invalid summary type %r" % self.summary_type)  # noqa: UP031

        return fmtstr.format(**self.__dict__)


class ProgressMeter(object):  # noqa: UP004
    def __init__(self, num_batches, meters, prefix=""):
        self.batch_fmtstr = self._get_batch_fmtstr(num_batches)
        self.meters = meters
        self.prefix = prefix
        self.lines = []

    def display(self, batch):
        entries = [self.prefix + self.batch_fmtstr.format(batch)]
        entries += [str(meter) for meter in self.meters]
        self.lines.append("\t".join(entries))

    def display_summary(self):
        entries = [" *"]
        entries += [meter.summary() for meter in self.meters]
        self.lines.append(" ".join(entries))

    def _get_batch_fmtstr(self, num_batches):
        num_digits = len(str(num_batches // 1))
        fmt = "{:" + str(num_digits) + "d}"
        return "[" + fmt + "/" + fmt.format(num_batches) + "]"


def accuracy(output, target, topk=(1,)):
    """Computes the accuracy over the k top predictions for the specified values of k"""
    with torch.no_grad():
        maxk = max(topk)
        batch_size = target.size(0)

        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))

        res = []
        for k in topk:
            correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True)
            res.append(correct_k.mul_(100.0 / batch_size))
        return res


def train_one_epoch(train_loader, model, criterion, optimizer, epoch, device, record):
    batch_time = AverageMeter("Time", ":6.3f")
    data_time = AverageMeter("Data", ":6.3f")
    losses = AverageMeter("Loss", ":.4e")
    top1 = AverageMeter("Acc@1", ":6.2f")
    top5 = AverageMeter("Acc@5", ":6.2f")
    progress = ProgressMeter(
        len(train_loader),
        [batch_time, data_time, losses, top1, top5],
        prefix="Epoch: [{}]".format(epoch),  # noqa: UP032
    )

    # switch to train mode
    model.train()

    end = time.time()
    for i, (images, target) in enumerate(train_loader):
        # measure data loading time
        data_time.update(time.time() - end)

        # move data to the same device as model
        images = images.to(device, non_blocking=True)
        target = target.to(device, non_blocking=True)

        # compute output
        output = model(images)
        loss = criterion(output, target)

        # measure accuracy and record loss
        acc1, acc5 = accuracy(output, target, topk=(1, 5))
        losses.update(loss.item(), images.size(0))
        top1.update(acc1[0], images.size(0))
        top5.update(acc5[0], images.size(0))

        # compute gradient and do SGD step
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

        # measure elapsed time
        batch_time.update(time.time() - end)
        end = time.time()

        record["losses"].append(loss.item())
        if i % PRINT_FREQ == 0:
            progress.display(i + 1)
            # the accuracy meters' part of the line: the timings differ from run to run
            record["progress"].append("\t".join(progress.lines[-1].split("\t")[4:]))


def validate(val_loader, model, criterion, device):
    def run_validate(loader, base_progress=0):
        with torch.no_grad():
            end = time.time()
            for i, (images, target) in enumerate(loader):
                i = base_progress + i
                images = images.to(device, non_blocking=True)
                target = target.to(device, non_blocking=True)

                # compute output
                output = model(images)
                loss = criterion(output, target)

                # measure accuracy and record loss
                acc1, acc5 = accuracy(output, target, topk=(1, 5))
                losses.update(loss.item(), images.size(0))
                top1.update(acc1[0], images.size(0))
                top5.update(acc5[0], images.size(0))

                # measure elapsed time
                batch_time.update(time.time() - end)
                end = time.time()

    batch_time = AverageMeter("Time", ":6.3f", Summary.NONE)
    losses = AverageMeter("Loss", ":.4e", Summary.NONE)
    top1 = AverageMeter("Acc@1", ":6.2f", Summary.AVERAGE)
    top5 = AverageMeter("Acc@5", ":6.2f", Summary.AVERAGE)
    progress = ProgressMeter(len(val_loader), [batch_time, losses, top1, top5], prefix="Test: ")

    # switch to evaluate mode
    model.eval()

    run_validate(val_loader)

    progress.display_summary()

    return top1.avg, progress.lines[-1], losses.avg


def save_checkpoint(state, is_best, directory, filename="checkpoint.pth.tar"):
    filename = os.path.join(directory, filename)
    torch.save(state, filename)
    if is_best:
        shutil.copyfile(filename, os.path.join(directory, "model_best.pth.tar"))


def synthetic_dataset(n, seed):
    """Images whose class sets which colour channel carries a bright quadrant."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, NUM_CLASSES, size=n)
    images = rng.normal(0, 0.5, size=(n, 3, 24, 24)).astype(np.float32)
    for k, label in enumerate(labels):
        channel, quadrant = label % 3, label // 3
        images[k, channel, 12 * quadrant : 12 * quadrant + 12, :12] += 1.5
    return torch.utils.data.TensorDataset(torch.tensor(images), torch.tensor(labels))


def build():
    torch.manual_seed(0)
    return AlexNet(num_classes=NUM_CLASSES, dropout=DROPOUT)


def pick_device():
    if USE_CUDA and torch.cuda.is_available():
        return torch.device("cuda")
    elif torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def make_optimizer(model):
    optimizer = torch.optim.SGD(model.parameters(), 0.05, momentum=0.9, weight_decay=1e-4)
    """Sets the learning rate to the initial LR decayed by 10 every 30 epochs"""
    scheduler = lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    return optimizer, scheduler


def train(model, steps=4):
    """``steps`` training batches over two epochs, a checkpoint after each, then a resume from the first."""
    device = pick_device()
    model = model.to(device)
    torch.backends.cudnn.benchmark = True
    criterion = nn.CrossEntropyLoss().to(device)
    optimizer, scheduler = make_optimizer(model)

    per_epoch = (steps + 1) // 2
    train_dataset = torch.utils.data.Subset(synthetic_dataset(40, seed=1), range(per_epoch * BATCH_SIZE))
    val_dataset = torch.utils.data.Subset(synthetic_dataset(20, seed=2), range(10))
    train_loader = torch.utils.data.DataLoader(
        train_dataset, batch_size=BATCH_SIZE, shuffle=False, num_workers=0, pin_memory=True, sampler=None
    )
    val_loader = torch.utils.data.DataLoader(
        val_dataset, batch_size=BATCH_SIZE, shuffle=False, num_workers=0, pin_memory=True
    )

    record = {"losses": [], "progress": [], "acc1": [], "val_loss": [], "best": [], "summaries": []}
    best_acc1 = 0
    directory = tempfile.mkdtemp()
    try:
        for epoch in range(2):
            train_one_epoch(train_loader, model, criterion, optimizer, epoch, device, record)
            acc1, summary, val_loss = validate(val_loader, model, criterion, device)
            scheduler.step()
            # remember best acc@1 and save checkpoint
            is_best = acc1 > best_acc1
            best_acc1 = max(acc1, best_acc1)
            save_checkpoint(
                {
                    "epoch": epoch + 1,
                    "arch": ARCH,
                    "state_dict": model.state_dict(),
                    "best_acc1": best_acc1,
                    "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict(),
                },
                is_best,
                directory,
            )
            if epoch == 0:
                shutil.copyfile(os.path.join(directory, "checkpoint.pth.tar"), os.path.join(directory, "epoch0.tar"))
            record["acc1"].append(float(acc1))
            record["val_loss"].append(val_loss)
            record["best"].append(bool(is_best))
            record["summaries"].append(summary)
        record["losses"] = record["losses"][:steps]
        final = [p.detach().clone() for p in model.parameters()]

        # resume from the first epoch's checkpoint: the second epoch again, to the same weights
        loc = "cpu"
        checkpoint = torch.load(os.path.join(directory, "epoch0.tar"), map_location=loc)
        start_epoch = checkpoint["epoch"]
        resumed = build()
        resumed.load_state_dict(checkpoint["state_dict"])
        resumed = resumed.to(device)
        optimizer, scheduler = make_optimizer(resumed)
        optimizer.load_state_dict(checkpoint["optimizer"])
        scheduler.load_state_dict(checkpoint["scheduler"])
        best_acc1 = checkpoint["best_acc1"]
        replay = {"losses": [], "progress": []}
        for epoch in range(start_epoch, 2):
            train_one_epoch(train_loader, resumed, criterion, optimizer, epoch, device, replay)
            scheduler.step()
        record["resumed_lr"] = scheduler.get_last_lr()[0]
        record["resumes_exactly"] = all(
            torch.equal(a, b.detach()) for a, b in zip(final, resumed.parameters(), strict=True)
        )
        record["best_acc1"] = float(max(acc1, best_acc1))
        record["best_saved"] = os.path.exists(os.path.join(directory, "model_best.pth.tar"))
    finally:
        shutil.rmtree(directory)
    return record


if __name__ == "__main__":
    print(train(build()))
