"""Samplers: which dataset indices a ``DataLoader`` visits, in which order, and how they form batches.

Random orders are PyTorch's: its draws, in its order, from vkml's generator (PyTorch's CPU
generator, vkml/frontend/mt19937.py). A ``RandomSampler`` without a generator draws a 64-bit seed
from the default generator per pass and shuffles with ``randperm`` of a generator seeded with it;
``DataLoader`` first draws its workers' base seed, as PyTorch's iterator does. So after
``vkml.manual_seed(s)`` a shuffling loader visits PyTorch's batches in PyTorch's order. A numpy
``Generator`` given as ``generator`` is used as it is (numpy's orders). Nothing here touches a device.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from ...frontend import mt19937
from ...frontend import random as _random


def _generator(generator) -> _random.Generator:
    """``generator``, or vkml's default generator for None; a TypeError for anything else."""
    if generator is None:
        return _random.default_generator
    if not isinstance(generator, _random.Generator):
        raise TypeError(f"generator must be a vkml.Generator, got {type(generator).__name__}")
    return generator


def _seed64(generator) -> int:
    """PyTorch's ``torch.empty((), dtype=torch.int64).random_(generator=generator).item()``."""
    return int(_generator(generator).draw(mt19937.random_full, 1, "int64", 1 << 63)[0])


def _permutation(n: int, generator) -> np.ndarray:
    """``randperm(n, generator=generator)``'s order (numpy's for a numpy generator)."""
    if isinstance(generator, np.random.Generator):
        return generator.permutation(n)
    return _generator(generator).draw(mt19937.randperm, n)


def _randint(high: int, size: int, generator) -> np.ndarray:
    """``randint(high=high, size=(size,), dtype=int64, generator=generator)``'s values."""
    if isinstance(generator, np.random.Generator):
        return generator.integers(0, high, size=size)
    return _generator(generator).draw(mt19937.random_from_to, size, high, 0, True)


class Sampler:
    """Base class: ``__iter__`` yields indices (or, for a batch sampler, lists of indices)."""

    def __init__(self, data_source=None) -> None:
        pass

    def __iter__(self) -> Iterator:
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation per pass, or ``num_samples`` draws with ``replacement``.

    >>> import vkml
    >>> sorted(RandomSampler(range(5), generator=vkml.Generator().manual_seed(1)))
    [0, 1, 2, 3, 4]
    """

    def __init__(self, data_source, replacement: bool = False, num_samples: int | None = None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        generator = self.generator
        if generator is None:  # PyTorch's: a generator of the pass, seeded from the default one
            generator = _random.Generator().manual_seed(_seed64(None))
        if self.replacement:
            # drawn a chunk at a time, as PyTorch does: num_samples may be far more than memory
            # holds (minGPT's trainer asks for 1e10 and stops when it has trained enough)
            for _ in range(self.num_samples // 32):
                yield from _randint(n, 32, generator).tolist()
            yield from _randint(n, self.num_samples % 32, generator).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from _permutation(n, generator).tolist()
        yield from _permutation(n, generator).tolist()[: self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order, a new one each pass."""

    def __init__(self, indices: Sequence[int], generator=None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in _permutation(len(self.indices), self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probabilities proportional to ``weights``."""

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True, generator=None):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        weights = np.asarray(weights.numpy() if hasattr(weights, "numpy") else weights, dtype=np.float64)
        if weights.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(weights.shape)}")
        if (weights < 0).any() or not np.isfinite(weights).all() or weights.sum() <= 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0, or a negative weight)")
        if not replacement and num_samples > len(weights):
            raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
        self.weights = weights
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        if isinstance(self.generator, np.random.Generator):
            p = self.weights / self.weights.sum()
            yield from self.generator.choice(len(p), size=self.num_samples, replace=self.replacement, p=p).tolist()
            return
        yield from _generator(self.generator).draw(_weighted, self.weights, self.num_samples, self.replacement).tolist()

    def __len__(self) -> int:
        return self.num_samples


def _weighted(e, weights: np.ndarray, num_samples: int, replacement: bool) -> np.ndarray:
    """PyTorch's ``multinomial`` of float64 ``weights`` (the sampler's draw)."""
    if replacement:
        cum = np.cumsum(weights)
        cum = cum / cum[-1]
        cum[-1] = 1
        return np.searchsorted(cum, mt19937.uniform(e, num_samples, "float64", 0.0, 1.0), "left")
    ratio = weights / mt19937.exponential(e, len(weights), 1.0)
    return np.argsort(-ratio, kind="stable")[:num_samples]


class BatchSampler(Sampler):
    """Lists of ``batch_size`` indices from ``sampler``; the last shorter one unless ``drop_last``.

    >>> list(BatchSampler(SequentialSampler(range(5)), batch_size=2, drop_last=False))
    [[0, 1], [2, 3], [4]]
    """

    def __init__(self, sampler: Sampler | Iterable[int], batch_size: int, drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
