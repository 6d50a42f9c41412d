"""Datasets with ``torch.utils.data``'s names: map-style and iterable, and the ways to combine and split them."""

from __future__ import annotations

import bisect
import math
import warnings
from collections.abc import Iterable, Sequence
from typing import Any

from ...frontend.creation import tensor
from .sampler import _permutation


class Dataset:
    """A map-style dataset: ``dataset[i]`` is sample ``i``; subclasses define ``__getitem__`` and ``__len__``.

    >>> class Squares(Dataset):
    ...     def __len__(self): return 4
    ...     def __getitem__(self, i): return i * i
    >>> [Squares()[i] for i in range(4)]
    [0, 1, 4, 9]
    """

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A stream of samples: subclasses define ``__iter__``. With worker processes each worker
    iterates its own copy; ``get_worker_info()`` tells it which share to yield."""

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other: Dataset) -> ChainDataset:
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Sample ``i`` is ``tuple(t[i] for t in tensors)``; every tensor has the same first dimension.

    >>> import vkml
    >>> ds = TensorDataset(vkml.arange(3), vkml.arange(3) * 10)
    >>> [int(v) for v in ds[2]]
    [2, 20]
    """

    def __init__(self, *tensors) -> None:
        if not all(tensors[0].shape[0] == t.shape[0] for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]

    def _host_arrays(self) -> list:
        """Each tensor's values on the host, read once (again only if a tensor was given new values)."""
        nodes = [t.node for t in self.tensors]
        cached = self.__dict__.get("_host_cache")
        if cached is None or any(a is not b for a, b in zip(cached[0], nodes)):
            cached = (nodes, [t.numpy() for t in self.tensors])
            self._host_cache = cached
        return cached[1]

    def _collated(self, indices: list[int], leaves) -> tuple:
        """``default_collate`` of the samples at ``indices``: one host gather per tensor, not one slice per sample."""
        devices = self.__dict__.get("_source_devices") or [t.device.name for t in self.tensors]
        indices = list(indices)  # a batch sampler may yield tuples, which numpy would read as one index per axis
        return tuple(
            leaves.array(array[indices], t.dtype.name, device)
            for t, array, device in zip(self.tensors, self._host_arrays(), devices)
        )

    def __getstate__(self) -> dict:
        # Pickled for a spawned worker: the values on the host and the device names, never a device handle.
        devices = self.__dict__.get("_source_devices") or [t.device.name for t in self.tensors]
        return {"arrays": self._host_arrays(), "dtypes": [t.dtype.name for t in self.tensors], "devices": devices}

    def __setstate__(self, state: dict) -> None:
        # In the worker the tensors live on the CPU backend (numpy); batches still name the source device.
        self.tensors = tuple(tensor(a, dtype=d) for a, d in zip(state["arrays"], state["dtypes"]))
        self._host_cache = ([t.node for t in self.tensors], list(state["arrays"]))
        self._source_devices = list(state["devices"])


class ConcatDataset(Dataset):
    """The samples of several map-style datasets one after another."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    @staticmethod
    def cumsum(sequence) -> list[int]:
        out, total = [], 0
        for d in sequence:
            total += len(d)
            out.append(total)
        return out

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        dataset_idx = bisect.bisect_right(self.cumulative_sizes, idx)
        sample_idx = idx if dataset_idx == 0 else idx - self.cumulative_sizes[dataset_idx - 1]
        return self.datasets[dataset_idx][sample_idx]


class ChainDataset(IterableDataset):
    """The samples of several iterable datasets one after another."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self.datasets)


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset: Dataset, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list[int]) -> list:
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self) -> int:
        return len(self.indices)


class StackDataset(Dataset):
    """Several datasets of one length stacked: item i is the tuple of their items i (datasets given
    positionally) or the dict of them by name (given as keywords), as ``torch.utils.data.StackDataset``.

    >>> StackDataset([1, 2], ["a", "b"])[1], StackDataset(x=[1, 2], y=[3, 4])[0]
    ((2, 'b'), {'x': 1, 'y': 3})
    """

    def __init__(self, *args: Dataset, **kwargs: Dataset) -> None:
        if args and kwargs:
            raise ValueError(
                "Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like input/output, but both "
                "types are given."
            )
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        parts = list(args) if args else list(kwargs.values())
        self._length = len(parts[0])
        if any(len(d) != self._length for d in parts):
            raise ValueError("Size mismatch between datasets")
        self.datasets = args if args else kwargs

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices: list) -> list:
        named = isinstance(self.datasets, dict)
        columns = {}
        for key, d in self.datasets.items() if named else enumerate(self.datasets):
            if callable(getattr(d, "__getitems__", None)):
                items = d.__getitems__(indices)
                if len(items) != len(indices):
                    raise ValueError(
                        f"Nested dataset's output size mismatch. Expected {len(indices)}, got {len(items)}"
                    )
            else:
                items = [d[i] for i in indices]
            columns[key] = items
        if named:
            return [{k: columns[k][j] for k in columns} for j in range(len(indices))]
        return [tuple(columns[k][j] for k in columns) for j in range(len(indices))]

    def __len__(self) -> int:
        return self._length


def random_split(dataset: Dataset, lengths: Sequence[int | float], generator=None) -> list[Subset]:
    """Split ``dataset`` at random into non-overlapping ``Subset``\\ s of the given lengths (or fractions).

    Fractions that sum to 1 become lengths ``floor(fraction * len(dataset))``, the remainder
    handed out one by one from the first subset on, as PyTorch does. The permutation comes from
    ``generator`` (a ``vkml.Generator``; default: vkml's default generator): the same seed gives
    the same split, though not PyTorch's split for that seed.

    >>> import vkml
    >>> a, b = random_split(range(10), [0.7, 0.3], generator=vkml.Generator().manual_seed(0))
    >>> len(a), len(b), sorted(list(a) + list(b)) == list(range(10))
    (7, 3, True)
    """
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        subset_lengths: list[int] = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            subset_lengths.append(int(math.floor(len(dataset) * frac)))
        remainder = len(dataset) - sum(subset_lengths)
        for i in range(remainder):
            subset_lengths[i % len(subset_lengths)] += 1
        lengths = subset_lengths
        for i, length in enumerate(lengths):
            if length == 0:
                warnings.warn(
                    f"Length of split at index {i} is 0. This might result in an empty dataset.", stacklevel=2
                )
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = _permutation(sum(lengths), generator).tolist()
    out, offset = [], 0
    for length in lengths:
        out.append(Subset(dataset, indices[offset : offset + length]))
        offset += length
    return out


def _is_iterable_dataset(dataset: Any) -> bool:
    return isinstance(dataset, IterableDataset)
