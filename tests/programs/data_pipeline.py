"""A data pipeline of custom datasets, splits, samplers and loaders feeding a small sequence model.

Idioms: a map-style ``torch.utils.data.Dataset`` of variable-length sequences (``__len__``,
``__getitem__`` returning ``(tensor, int)``); a ``collate_fn`` padding with
``nn.utils.rnn.pad_sequence(batch_first=True)`` and returning lengths; ``random_split(dataset,
[0.75, 0.25], generator=torch.Generator().manual_seed(42))``; ``Subset`` and ``ConcatDataset``
(``cumulative_sizes``); per-sample weights from class counts for a ``WeightedRandomSampler(...,
replacement=True, generator=...)`` wrapped in a ``BatchSampler(drop_last=True)`` given to
``DataLoader(batch_sampler=...)``; ``DataLoader(shuffle=True, drop_last=True, generator=...)`` and
``len(loader)``; an ``IterableDataset`` checking ``get_worker_info()`` and a loader over it with
``drop_last``; a dataset of dict samples through ``default_collate``; a masked mean over the
padded steps.
"""

from __future__ import annotations

import numpy as np
from shim import DataLoader, F, nn, optim, torch

data = torch.utils.data
DIM, CLASSES, BATCH = 3, 3, 8


def make_sequences(n, seed):
    rng = np.random.default_rng(seed)
    items = []
    for _ in range(n):
        length = int(rng.integers(2, 7))
        label = int(rng.integers(0, CLASSES))
        seq = rng.normal(0, 1, size=(length, DIM)).astype(np.float32) + 0.8 * np.eye(DIM, dtype=np.float32)[label]
        items.append((seq, label))
    return items


class SequenceDataset(data.Dataset):
    def __init__(self, n, seed=0):
        self.items = make_sequences(n, seed)

    def __len__(self):
        return len(self.items)

    def __getitem__(self, index):
        seq, label = self.items[index]
        return torch.from_numpy(seq), label


class StreamDataset(data.IterableDataset):
    def __init__(self, n, seed=5):
        super().__init__()
        self.n, self.seed = n, seed

    def __iter__(self):
        assert data.get_worker_info() is None  # one process: no sharding needed
        for seq, label in make_sequences(self.n, self.seed):
            yield torch.from_numpy(seq), label


class DictDataset(data.Dataset):
    def __init__(self, base):
        self.base = base

    def __len__(self):
        return len(self.base)

    def __getitem__(self, index):
        seq, label = self.base[index]
        return {"features": seq.mean(0), "label": label, "length": seq.shape[0]}


def pad_collate(batch):
    seqs, labels = zip(*batch)
    lengths = torch.tensor([s.shape[0] for s in seqs])
    return nn.utils.rnn.pad_sequence(list(seqs), batch_first=True), lengths, torch.tensor(labels)


class MeanPoolClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.encode = nn.Sequential(nn.Linear(DIM, 16), nn.ReLU(), nn.Linear(16, 16))
        self.classify = nn.Linear(16, CLASSES)

    def forward(self, padded, lengths):
        h = self.encode(padded)
        mask = (torch.arange(padded.size(1))[None, :] < lengths[:, None]).unsqueeze(-1)
        pooled = (h * mask).sum(1) / lengths[:, None].float()
        return self.classify(pooled)


def build():
    torch.manual_seed(0)
    return MeanPoolClassifier()


def run(model, loader, optimizer):
    losses = []
    for padded, lengths, labels in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(padded, lengths), labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def train(model, steps=2):
    full = SequenceDataset(40)
    train_set, val_set = data.random_split(full, [0.75, 0.25], generator=torch.Generator().manual_seed(42))
    extra = data.Subset(SequenceDataset(12, seed=1), list(range(0, 12, 2)))
    combined = data.ConcatDataset([train_set, extra])

    labels = torch.tensor([label for _, label in combined])
    class_counts = torch.bincount(labels, minlength=CLASSES)
    weights = 1.0 / class_counts.float()[labels]
    sampler = data.WeightedRandomSampler(
        weights, num_samples=len(combined), replacement=True, generator=torch.Generator().manual_seed(1)
    )
    weighted_loader = DataLoader(
        combined, batch_sampler=data.BatchSampler(sampler, batch_size=BATCH, drop_last=True), collate_fn=pad_collate
    )
    shuffled_loader = DataLoader(
        train_set,
        batch_size=BATCH,
        shuffle=True,
        drop_last=True,
        collate_fn=pad_collate,
        generator=torch.Generator().manual_seed(0),
    )
    stream_loader = DataLoader(StreamDataset(14), batch_size=4, drop_last=True, collate_fn=pad_collate)
    val_loader = DataLoader(val_set, batch_size=5, collate_fn=pad_collate)

    optimizer = optim.Adam(model.parameters(), lr=0.02)
    losses = []
    for _ in range(steps):
        model.train()
        losses += run(model, weighted_loader, optimizer)
        losses += run(model, shuffled_loader, optimizer)
        losses += run(model, stream_loader, optimizer)

    model.eval()
    correct, seen = 0, 0
    with torch.no_grad():
        for padded, lengths, labels in val_loader:
            correct += (model(padded, lengths).argmax(1) == labels).sum().item()
            seen += labels.numel()
    dict_batch = next(iter(DataLoader(DictDataset(val_set), batch_size=4)))
    return {
        "losses": losses,
        "sizes": [len(train_set), len(val_set), len(extra), len(combined), *combined.cumulative_sizes],
        "loader_lengths": [len(weighted_loader), len(shuffled_loader), len(val_loader)],
        "class_counts": class_counts.tolist(),
        "val_accuracy": correct / seen,
        "dict_keys": sorted(dict_batch),
        "dict_shapes": [list(dict_batch["features"].shape), list(dict_batch["label"].shape)],
        "dict_dtypes": [str(dict_batch["label"].dtype).split(".")[-1], str(dict_batch["length"].dtype).split(".")[-1]],
        "dict_features": dict_batch["features"].sum().item(),
    }


if __name__ == "__main__":
    print(train(build(), steps=4))
