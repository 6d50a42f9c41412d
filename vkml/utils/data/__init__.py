"""Data loading with ``torch.utils.data``'s names: datasets, samplers, ``DataLoader``, collation.

>>> import vkml
>>> from vkml.utils.data import DataLoader, TensorDataset
>>> ds = TensorDataset(vkml.arange(6).reshape(3, 2).float(), vkml.tensor([0, 1, 0]))
>>> [y.tolist() for _, y in DataLoader(ds, batch_size=2)]
[[0, 1], [0]]
"""

from . import _utils  # noqa: F401  (torch.utils.data._utils.collate: older programs' import path)
from .collate import default_collate, default_convert
from .dataloader import DataLoader, WorkerInfo, get_worker_info
from .dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from .distributed import DistributedSampler
from .sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [
    "BatchSampler",
    "ChainDataset",
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "DistributedSampler",
    "IterableDataset",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "StackDataset",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "WeightedRandomSampler",
    "WorkerInfo",
    "default_collate",
    "default_convert",
    "get_worker_info",
    "random_split",
]
