"""``torch.utils.data.distributed.DistributedSampler``: each process of a data-parallel run reads its own
share of the dataset.

Every replica draws the same permutation (seeded by ``seed + epoch``, so ``set_epoch`` reshuffles),
pads it by repeating its start to a multiple of ``num_replicas`` (or drops the tail with
``drop_last``), and takes every ``num_replicas``-th index from ``rank``. The permutation is
PyTorch's ``randperm`` of a generator seeded with ``seed + epoch``: the same as PyTorch's.

>>> list(DistributedSampler(range(5), num_replicas=2, rank=1, shuffle=False))
[1, 3, 0]
"""

from __future__ import annotations

import math

from ...frontend import random as _random
from .sampler import Sampler, _permutation

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    """Indices of ``rank``'s share of ``dataset`` among ``num_replicas`` processes (default: the process group's)."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False) -> None:
        if num_replicas is None or rank is None:
            from ... import distributed as dist  # lazy: off import vkml's path

            if not dist.is_available():
                raise RuntimeError("Requires distributed package to be available")
            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.epoch, self.shuffle, self.seed, self.drop_last = 0, shuffle, seed, drop_last
        size = len(dataset)
        if drop_last and size % num_replicas:
            self.num_samples = math.ceil((size - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(size / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        size = len(self.dataset)
        if self.shuffle:
            generator = _random.Generator().manual_seed(self.seed + self.epoch)
            indices = _permutation(size, generator).tolist()
        else:
            indices = list(range(size))
        if self.drop_last:
            indices = indices[: self.total_size]
        else:
            missing = self.total_size - len(indices)
            indices += (indices * math.ceil(missing / len(indices)))[:missing] if missing else []
        return iter(indices[self.rank : self.total_size : self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Reshuffle for ``epoch`` (call it before each epoch's loader, as PyTorch requires)."""
        self.epoch = epoch
