"""An older GitHub repository's training script: ``nn.DataParallel``, worker-process loaders and a focal
loss, at tiny sizes on synthetic data.

Its idioms: ``device = torch.device("cuda" if torch.cuda.is_available() else "cpu")`` (kept on the CPU
here by ``USE_CUDA``), ``torch.backends.cudnn.benchmark = True``, ``model = nn.DataParallel(model)``
then ``model.to(device)``; a map-style ``Dataset`` that augments with ``np.random`` inside
``__getitem__``, loaded with ``num_workers=2``, ``pin_memory=True``, ``persistent_workers=True``, a
seeded ``generator=g`` and the reproducibility notes' ``seed_worker`` (``torch.initial_seed() %
2**32`` into ``np.random.seed`` and ``random.seed``), so the workers' augmentations are PyTorch's; an
``IterableDataset`` that splits its range by ``torch.utils.data.get_worker_info()`` (``per_worker =
int(math.ceil(...))``), whose batches interleave across the workers; a ``FocalLoss`` module over
``F.binary_cross_entropy_with_logits(reduction='none')``, ``pt = torch.exp(-BCE_loss)`` and alpha by
``torch.where(targets == 1, alpha, 1 - alpha)`` (or the multi-class form with ``self.alpha.gather(0,
targets.data.view(-1))`` from a ``torch.tensor([alpha, 1 - alpha])``); ``torch.save(model.module
.state_dict(), path)``, and the wrapped checkpoint loaded into a bare model after stripping the
``module.`` prefix through an ``OrderedDict`` of ``k[7:]``."""

from __future__ import annotations

import math
import os
import random
import tempfile
from collections import OrderedDict

import numpy as np
from shim import DataLoader, F, nn, optim, torch

USE_CUDA = False
NUM_WORKERS = 2
FOCAL = "binary"  # or "gather"
BATCH = 4
N_FEATURES = 6


class AugmentedDataset(torch.utils.data.Dataset):
    """Feature vectors with a noise augmentation drawn from np.random in the worker."""

    def __init__(self, n):
        rng = np.random.default_rng(3)
        self.features = rng.normal(size=(n, N_FEATURES)).astype(np.float32)
        self.labels = (self.features[:, 0] + 0.5 * self.features[:, 1] > 0.8).astype(np.float32)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        x = self.features[idx] + np.random.normal(0, 0.1, N_FEATURES).astype(np.float32)
        if random.random() < 0.5:
            x = x * 1.1
        return torch.from_numpy(x), torch.tensor(self.labels[idx])


class RangeStream(torch.utils.data.IterableDataset):
    """PyTorch's IterableDataset example: each worker yields its own slice of [start, end)."""

    def __init__(self, start, end, features):
        super().__init__()
        assert end > start, "this example code only works with end >= start"
        self.start = start
        self.end = end
        self.features = features

    def __iter__(self):
        worker_info = torch.utils.data.get_worker_info()
        if worker_info is None:  # single-process data loading, return the full iterator
            iter_start = self.start
            iter_end = self.end
        else:  # in a worker process
            # split workload
            per_worker = int(math.ceil((self.end - self.start) / float(worker_info.num_workers)))
            worker_id = worker_info.id
            iter_start = self.start + worker_id * per_worker
            iter_end = min(iter_start + per_worker, self.end)
        for i in range(iter_start, iter_end):
            yield i, torch.from_numpy(self.features[i % len(self.features)])


def seed_worker(worker_id):
    worker_seed = torch.initial_seed() % 2**32
    np.random.seed(worker_seed)
    random.seed(worker_seed)


class FocalLoss(nn.Module):
    def __init__(self, alpha=0.25, gamma=2):
        super().__init__()
        self.gamma = gamma
        if FOCAL == "binary":
            self.alpha = alpha
        else:
            self.alpha = torch.tensor([alpha, 1 - alpha])

    def forward(self, inputs, targets):
        BCE_loss = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
        pt = torch.exp(-BCE_loss)  # prevents nans when probability 0
        if FOCAL == "binary":
            at = torch.where(targets == 1, self.alpha, 1 - self.alpha)
        else:
            targets = targets.type(torch.long)
            at = self.alpha.gather(0, targets.data.view(-1)).view_as(inputs)
        F_loss = at * (1 - pt) ** self.gamma * BCE_loss
        return F_loss.mean()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(N_FEATURES, 16)
        self.bn1 = nn.BatchNorm1d(16)
        self.fc2 = nn.Linear(16, 1)

    def forward(self, x):
        x = F.relu(self.bn1(self.fc1(x)))
        return self.fc2(x).squeeze(-1)


def build():
    torch.manual_seed(0)
    return Net()


def train(model, steps=3):
    device = torch.device("cuda" if USE_CUDA and torch.cuda.is_available() else "cpu")
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(1)
    np.random.seed(1)  # the main process's augmentations when NUM_WORKERS is 0
    random.seed(1)
    g = torch.Generator()
    g.manual_seed(0)
    loader = DataLoader(
        AugmentedDataset(BATCH * steps),
        batch_size=BATCH,
        shuffle=True,
        num_workers=NUM_WORKERS,
        pin_memory=True,
        persistent_workers=NUM_WORKERS > 0,
        worker_init_fn=seed_worker,
        generator=g,
        drop_last=True,
    )
    model = nn.DataParallel(model)
    model.to(device)
    criterion = FocalLoss()
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    record = {"losses": [], "epoch_loss": []}
    for epoch in range(2):
        model.train()
        running_loss = 0.0
        for inputs, labels in loader:
            inputs, labels = inputs.to(device, non_blocking=True), labels.to(device, non_blocking=True)
            optimizer.zero_grad()
            outputs = model(inputs)
            loss = criterion(outputs, labels)
            loss.backward()
            optimizer.step()
            running_loss += loss.item()
            if epoch == 0:
                record["losses"].append(loss.item())
        record["epoch_loss"].append(running_loss / len(loader))
    record["inputs"] = inputs[0].tolist()

    # the worker-split stream: which indices each batch holds, and the model's scores on them
    stream = DataLoader(RangeStream(3, 12, loader.dataset.features), batch_size=2, num_workers=NUM_WORKERS)
    record["stream"] = []
    model.eval()
    with torch.no_grad():
        for index, features in stream:
            record["stream"].append(index.tolist())
            record.setdefault("scores", []).append(model(features.to(device)).tolist())

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model_best.pth")
        torch.save(model.module.state_dict(), path)
        restored = Net()
        restored.load_state_dict(torch.load(path))
        wrapped_path = os.path.join(folder, "checkpoint.pth")
        torch.save({"epoch": 2, "state_dict": model.state_dict()}, wrapped_path)
        checkpoint = torch.load(wrapped_path, map_location="cpu")
        new_state_dict = OrderedDict()
        for k, v in checkpoint["state_dict"].items():
            name = k[7:]  # remove `module.`
            new_state_dict[name] = v
        bare = Net()
        bare.load_state_dict(new_state_dict)
    restored.eval()
    bare.eval()
    probe = torch.from_numpy(loader.dataset.features[:3])
    record["restored"] = restored(probe).tolist()
    record["bare"] = bare(probe).tolist()
    record["keys"] = list(checkpoint["state_dict"])[0]
    return record


if __name__ == "__main__":
    print(train(build()))
