"""PyTorch's test/test_dataloader.py, run on torch and on vkml side by side.

Each scenario follows one of its tests that run without CUDA: TensorDataset, StackDataset, ConcatDataset,
ChainDataset, Subset slicing, random_split (lengths, fractions, generators, its draw from the default
generator), the samplers (Sequential, Random with replacement and num_samples, SubsetRandom,
WeightedRandom, Batch with drop_last, a plain iterable as sampler or batch_sampler), default_collate and
default_convert of every element type, DataLoader's lengths, drop_last, argument errors, IterableDataset
with and without batching, namedtuple and dict samples, custom collate functions, and worker processes
(worker_init_fn, get_worker_info, seeds, persistent workers, per-worker round robin, errors). vkml's
random orders are PyTorch's for the same seed (vkml/utils/data/sampler.py), so where PyTorch's test only
checks that a shuffle covers the data, the scenario compares the order itself. A scenario returns what
the test asserts on; vkml must return, raise and warn what torch does (tests/pytorch_suite.py).

Scenarios that start worker processes cost a fork each (a few tenths of a second on the 2-core CI
machine); one of each kind runs by default, the rest behind the ``exhaustive`` marker.
"""

from __future__ import annotations

import collections
import math
import os
import tempfile
import time
import warnings

import numpy as np
import pytest
from pytorch_suite import check, known_params

import vkml

SC = {}  # the default suite's
SLOW = {}  # the exhaustive run's (worker processes, long sleeps)


def sc(f):
    SC[f.__name__] = f
    return f


def slow(f):
    SLOW[f.__name__] = f
    return f


def D(m):
    return m.utils.data


_RNG = np.random.default_rng(0)
DATA = _RNG.standard_normal((100, 2, 3, 5)).astype(np.float32)
LABELS = np.tile(_RNG.permutation(50), 2).astype(np.int64)


def dataset(m):
    """The suite's TensorDataset: 100 samples of shape (2, 3, 5) and their labels."""
    return D(m).TensorDataset(m.tensor(DATA), m.tensor(LABELS))


def loader(m, ds=None, **kwargs):
    return D(m).DataLoader(dataset(m) if ds is None else ds, **kwargs)


def outcome(fn):
    """What ``fn()`` returns, or the class and first line of what it raises (a worker's error carries its
    traceback, whose file names differ between the libraries)."""
    try:
        return ("returns", fn())
    except Exception as error:  # the class and message are what is compared
        return ("raises", type(error).__name__, str(error).splitlines()[0] if str(error) else "")


# --- random_split ---------------------------------------------------------------------------------------------


@sc
def random_split_lengths_must_equal_dataset_size(m):
    return D(m).random_split([1, 2, 3, 4], [1, 2])


@sc
def random_split_sizes_and_contents(m):
    split = D(m).random_split
    m.manual_seed(0)
    out = [[list(s) for s in split([1, 2, 3, 4, 5, 6], [2, 4])]]
    out.append([list(s) for s in split([1, 2, 3, 4, 5, 6], [0.5, 0.5])])
    out.append([list(s) for s in split(range(3), [0.5, 0.5], generator=m.Generator().manual_seed(1))])
    out.append([len(s) for s in split(range(106), [0.1, 0.2, 0.3, 0.4], generator=m.Generator().manual_seed(1))])
    return out


@sc
def random_split_odd_fractions_give_the_remainder_round_robin(m):
    split = D(m).random_split
    out = []
    for data, fractions in ((range(107), [0.1, 0.2, 0.3, 0.4]), (range(5), [0.33, 0.67]), ([1, 2, 3, 4], [0.25, 0.75])):
        out.append([list(s) for s in split(data, fractions, generator=m.Generator().manual_seed(3))])
    return out


@sc
def random_split_indices_are_ints(m):
    seen = []

    class Custom:
        def __init__(self, values):
            self.values = values

        def __getitem__(self, key):
            seen.append(type(key).__name__)
            return self.values[key]

        def __len__(self):
            return len(self.values)

    for lengths in ([5], [1.0]):
        part = D(m).random_split(Custom([1, 2, 3, 4, 5]), lengths, generator=m.Generator().manual_seed(0))[0]
        batches = list(D(m).DataLoader(part))
    return seen, batches


@sc
def random_split_reproducibility(m):
    split = D(m).random_split
    out = [[list(x) for x in split(range(10), [3, 7], generator=m.Generator().manual_seed(1))]]
    for lengths in ([60, 40], [0.5, 0.5], [0.33, 0.33, 0.34]):
        out.append([list(x) for x in split(range(100), lengths, generator=m.Generator().manual_seed(42))])
    return out


@sc
def random_split_incomplete_fraction(m):
    return D(m).random_split([1, 2, 3, 4], [0.1])


@sc
def random_split_fraction_above_one(m):
    return D(m).random_split([1, 2, 3, 4], [1.1])


@sc
def random_split_lengths_past_the_end(m):
    parts = D(m).random_split([1, 2, 3, 4], [5, -1], generator=m.Generator().manual_seed(0))
    return [list(p) for p in parts]


@sc
def random_split_warns_of_an_empty_split(m):
    parts = D(m).random_split(range(1), [0.5, 0.5], generator=m.Generator().manual_seed(0))
    return [list(p) for p in parts]


@sc
def random_split_of_a_tensor_dataset_by_fractions(m):
    ds = D(m).TensorDataset(m.arange(10.0), m.arange(10))
    parts = D(m).random_split(ds, [0.3, 0.7], generator=m.Generator().manual_seed(4))
    return [[p[i] for i in range(len(p))] for p in parts], [type(p).__name__ for p in parts]


@sc
def random_split_draws_from_the_default_generator(m):
    m.manual_seed(5)
    D(m).random_split(range(10), [5, 5])
    after_default = m.rand(3)
    m.manual_seed(5)
    D(m).random_split(range(10), [5, 5], generator=m.Generator().manual_seed(42))
    return after_default, m.rand(3)


@sc
def subset_slicing(m):
    ds = D(m).TensorDataset(m.tensor([1, 2, 3, 4, 5]))
    subset = D(m).Subset(ds, [0, 1, 2, 3, 4])
    out = [subset[:], subset[1:2], subset[0:-1:2], ds[:]]
    first, _ = D(m).random_split(ds, [3, 2], generator=m.Generator().manual_seed(7))
    out += [list(first.indices), first[:], first[0:2], first[0:-1:2], ds[first.indices[0:-1:2]]]
    return out


@sc
def subset_of_subset_slicing(m):
    ds = D(m).TensorDataset(m.tensor([1, 2, 3, 4, 5]))
    inner = D(m).Subset(D(m).Subset(ds, [0, 1, 2, 3, 4]), [0, 1, 2, 3, 4])
    out = [inner[:], inner[0:2], inner[0:-1:2]]
    first, _ = D(m).random_split(ds, [4, 1], generator=m.Generator().manual_seed(2))
    first_of_first, _ = D(m).random_split(first, [3, 1], generator=m.Generator().manual_seed(3))
    out += [list(first_of_first.indices), first_of_first[:], first_of_first[0:2], first_of_first[0:-1:2]]
    return out


# --- TensorDataset, StackDataset, ConcatDataset -----------------------------------------------------------------


@sc
def tensor_dataset_len_and_items(m):
    rng = np.random.default_rng(1)
    t = m.tensor(rng.standard_normal((15, 10, 2, 3)).astype(np.float32))
    labels = m.tensor(rng.standard_normal((15, 10)).astype(np.float32))
    flat = m.tensor(np.arange(15.0, dtype=np.float32))
    source = D(m).TensorDataset(t, labels, flat)
    return len(source), [source[i] for i in (0, 7, 14, -1)], len(D(m).TensorDataset(t)), D(m).TensorDataset(t)[3]


@sc
def tensor_dataset_size_mismatch(m):
    return D(m).TensorDataset(m.zeros(3), m.zeros(4))


def _stack_parts(m):
    t = D(m).TensorDataset(m.tensor(np.arange(150.0, dtype=np.float32).reshape(15, 10)))
    other = D(m).TensorDataset(m.tensor(np.arange(300.0, dtype=np.float32).reshape(15, 5, 4)))
    return t, other


@sc
def stack_dataset_empty(m):
    return D(m).StackDataset()


@sc
def stack_dataset_mixed(m):
    t, other = _stack_parts(m)
    return D(m).StackDataset(t, a=other)


@sc
def stack_dataset_size_mismatch_tuple(m):
    return D(m).StackDataset(D(m).TensorDataset(m.zeros(15, 10)), D(m).TensorDataset(m.zeros(10, 15)))


@sc
def stack_dataset_size_mismatch_dict(m):
    return D(m).StackDataset(a=D(m).TensorDataset(m.zeros(15, 10)), b=D(m).TensorDataset(m.zeros(10, 15)))


@sc
def stack_dataset_len_and_items(m):
    t, other = _stack_parts(m)
    by_position, by_name = D(m).StackDataset(t, other), D(m).StackDataset(a=t, b=other)
    single, single_named = D(m).StackDataset(t), D(m).StackDataset(a=t)
    lengths = [len(by_position), len(by_name), len(single), len(single_named)]
    return lengths, by_position[3], by_name[14], single[0], single_named[2]


class GetItemsDataset:
    """A dataset with ``__getitems__`` (a batch in one call), as PyTorch's test_getitems builds it."""

    def __init__(self, m, short: bool = False):
        self.data = m.tensor([0.5, 1.5, 2.5, 3.5])
        self.short = short

    def __getitem__(self, item):
        return self.data[item]

    def __getitems__(self, items):
        return self.data[items][:-1] if self.short else self.data[items]

    def __len__(self):
        return 4


@sc
def stack_dataset_getitems(m):
    t = GetItemsDataset(m)
    labels = [1, 2, 3, 4]
    return (
        D(m).StackDataset(t, labels).__getitems__([0, 1, 2, 3]),
        D(m).StackDataset(t=t, l=labels).__getitems__([3, 1]),
    )


@sc
def stack_dataset_getitems_index_error(m):
    return D(m).StackDataset(GetItemsDataset(m), [1, 2, 3, 4]).__getitems__([0, 4])


@sc
def stack_dataset_getitems_output_size_mismatch(m):
    return D(m).StackDataset(GetItemsDataset(m, short=True), [1, 2, 3, 4]).__getitems__([0, 1, 2, 3])


@sc
def concat_dataset_items(m):
    out = []
    for parts in ([[0], [1]], [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]], [[0, 1, 2, 3, 4], [], [5, 6, 7, 8, 9]]):
        result = D(m).ConcatDataset(parts)
        out.append((len(result), [result[i] for i in range(len(result))], result[-1], result.cumulative_sizes))
    return out


@sc
def concat_dataset_index_error(m):
    return D(m).ConcatDataset([[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]])[11]


@sc
def concat_dataset_negative_index_too_large(m):
    return D(m).ConcatDataset([[0, 1], [2]])[-4]


@sc
def concat_dataset_empty_list(m):
    return D(m).ConcatDataset([])


@sc
def concat_dataset_by_adding(m):
    rng = np.random.default_rng(2)
    parts = [
        D(m).TensorDataset(m.tensor(rng.random((7, 3, 4)).astype(np.float32)), m.tensor(np.arange(7) + 10 * k))
        for k in range(3)
    ]
    result = parts[0] + parts[1] + parts[2]
    return type(result).__name__, len(result), result[0], result[7], result[20]


class CountingIterableDataset:
    """PyTorch's CountingIterableDataset: 0 .. n - 1, with a length (made per library below)."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


def counting(m, n):
    cls = type("CountingIterableDataset", (CountingIterableDataset, D(m).IterableDataset), {})
    return cls(n)


@sc
def concat_dataset_refuses_iterable_first(m):
    return D(m).ConcatDataset([counting(m, 10)])


@sc
def concat_dataset_refuses_iterable_later(m):
    return D(m).ConcatDataset([D(m).TensorDataset(m.zeros(7)), counting(m, 10), counting(m, 5)])


@sc
def chain_dataset_and_adding_iterables(m):
    out = []
    for chained in (counting(m, 20) + counting(m, 15), D(m).ChainDataset([counting(m, 20), counting(m, 15)])):
        fetched = list(D(m).DataLoader(chained))
        out.append((type(chained).__name__, len(chained), fetched))
    return out


@sc
def chain_dataset_refuses_a_map_dataset(m):
    return list(iter(counting(m, 5) + dataset(m)))


@sc
def chain_dataset_refuses_a_map_dataset_in_its_list(m):
    return list(iter(D(m).ChainDataset([counting(m, 5), dataset(m)])))


# --- DataLoader without workers ------------------------------------------------------------------------------


@sc
def sequential_batches(m):
    return list(loader(m)), list(loader(m, batch_size=3))[-2:], list(loader(m, batch_size=None))[:3]


@sc
def shuffle_order_after_manual_seed(m):
    m.manual_seed(0)
    first = [y for _, y in loader(m, batch_size=2, shuffle=True)]
    second = [y for _, y in loader(m, batch_size=2, shuffle=True)]
    return first, second, m.rand(2)


@sc
def shuffle_without_batching(m):
    m.manual_seed(1)
    return [y for _, y in loader(m, batch_size=None, shuffle=True)]


@sc
def shuffle_with_a_seeded_generator(m):
    make = lambda: loader(m, shuffle=True, batch_size=7, generator=m.Generator().manual_seed(42))  # noqa: E731
    return [y for _, y in make()], [y for _, y in make()]


@sc
def shuffle_epochs_follow_on(m):
    dl = loader(m, shuffle=True, batch_size=50, generator=m.Generator().manual_seed(3))
    return [[y for _, y in dl] for _ in range(3)]


@sc
def invalid_assign_after_init(m):
    dl = loader(m)
    out = []
    for attr in ("batch_size", "sampler", "batch_sampler", "drop_last", "dataset"):
        out.append(outcome(lambda attr=attr: setattr(dl, attr, {})))
    dl.num_workers = 0  # not guarded in PyTorch
    return out


class BulkLoadingDataset:
    def __init__(self, length):
        self.length = length

    def __getitem__(self, indices):
        assert isinstance(indices, (list, tuple))
        return self.m.as_tensor(indices)

    def __len__(self):
        return self.length


class BulkLoadingSampler:
    def __init__(self, m, dataset, batch_size):
        self.m, self.dataset, self.batch_size = m, dataset, batch_size

    def __iter__(self):
        for x in self.m.randperm(len(self.dataset)).split(self.batch_size):
            yield x.tolist()

    def __len__(self):
        return int(math.ceil(len(self.dataset) / float(self.batch_size)))


def bulk_loading(num_workers):
    def f(m):
        ds = BulkLoadingDataset(35)
        ds.m = m
        dl = D(m).DataLoader(ds, batch_size=None, sampler=BulkLoadingSampler(m, ds, 4), num_workers=num_workers)
        m.manual_seed(4)
        return dl._auto_collation, list(dl)

    return f


SC["bulk_loading_without_batching"] = bulk_loading(0)
SLOW["bulk_loading_without_batching_workers"] = bulk_loading(2)


@sc
def growing_dataset_len(m):
    ds = [m.ones(4) for _ in range(4)]
    seq, shuffled = D(m).DataLoader(ds, shuffle=False), D(m).DataLoader(ds, shuffle=True)
    ds.append(m.ones(4))
    return len(seq), len(shuffled)


def bad_arguments(**kwargs):
    return lambda m: loader(m, **kwargs)


BAD = {
    "num_workers_negative": {"num_workers": -1},
    "timeout_negative": {"timeout": -1},
    "batch_size_none_drop_last": {"batch_size": None, "drop_last": True},
    "context_without_workers": {"num_workers": 0, "multiprocessing_context": "fork"},
    "context_bad_name": {"num_workers": 1, "multiprocessing_context": "bad"},
    "context_not_a_context": {"num_workers": 1, "multiprocessing_context": 3},
    "sampler_and_shuffle": {"batch_size": 11, "sampler": [0, 1], "shuffle": True},
    "batch_sampler_sampler_and_shuffle": {"batch_sampler": [[0]], "sampler": [0], "shuffle": True},
    "batch_sampler_sampler_and_shuffle_3": {"batch_sampler": [[0]], "sampler": [0], "shuffle": 3},
    "batch_sampler_and_batch_size": {"batch_size": 11, "batch_sampler": [[0]]},
    "batch_sampler_and_shuffle": {"shuffle": True, "batch_sampler": [[0]]},
    "batch_sampler_and_drop_last": {"drop_last": True, "batch_sampler": [[0]]},
    "batch_sampler_and_drop_last_3": {"drop_last": 3, "batch_sampler": [[0]]},
    "persistent_without_workers": {"persistent_workers": True},
    "prefetch_factor_without_workers": {"prefetch_factor": 2},
    "prefetch_factor_negative": {"num_workers": 1, "prefetch_factor": -1},
    "batch_size_zero": {"batch_size": 0},
    "batch_size_float": {"batch_size": 2.0},
}
for _name, _kwargs in BAD.items():
    SC[f"invalid_arguments_{_name}"] = bad_arguments(**_kwargs)


def iterable_bad_arguments(**kwargs):
    return lambda m: D(m).DataLoader(counting(m, 20), **kwargs)


ITERABLE_BAD = {
    "shuffle": {"shuffle": True},
    "shuffle_3": {"shuffle": 3},
    "sampler": {"sampler": [0, 1]},
    "sampler_3": {"sampler": 3},
    "batch_sampler": {"batch_sampler": [[0, 1]]},
    "batch_sampler_3": {"batch_sampler": 3},
}
for _name, _kwargs in ITERABLE_BAD.items():
    SC[f"invalid_iterable_arguments_{_name}"] = iterable_bad_arguments(**_kwargs)


@sc
def excessive_worker_count_warns(m):
    dl = loader(m, batch_size=2, num_workers=1000)
    return dl.num_workers


@sc
def builtin_collection_conversion(m):
    out = []
    for coll in (list, tuple):
        for ds in (CountingDataset(20), counting(m, 20)):
            out.append(coll(D(m).DataLoader(ds, batch_size=None)))
            out.append(coll(D(m).DataLoader(ds, batch_size=2)))
    return out


class CountingDataset:
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        return i

    def __len__(self):
        return self.n


@sc
def iterable_dataset_without_batching(m):
    ds = counting(m, 20)
    dl = D(m).DataLoader(ds, batch_size=None)
    fetched = list(dl)
    return [type(d).__name__ for d in fetched], fetched, len(dl)


@sc
def iterable_dataset_batching_and_drop_last(m):
    ds = counting(m, 20)
    return list(D(m).DataLoader(ds, batch_size=7)), list(D(m).DataLoader(ds, batch_size=7, drop_last=True))


class LongIterableDataset:
    """Reports 20 samples and yields 25 (PyTorch's NOTE [ IterableDataset and __len__ ])."""

    def __iter__(self):
        return iter(range(25))

    def __len__(self):
        return 20

    def __repr__(self):  # the warning names the dataset
        return "LongIterableDataset()"


@sc
def iterable_dataset_past_its_length_warns_after_len(m):
    ds = type("Long", (LongIterableDataset, D(m).IterableDataset), {})()
    dl = D(m).DataLoader(ds)
    before = [int(x) for x in dl]  # no warning: len(dl) was never asked
    assert len(dl) == 20
    return before, [int(x) for x in dl]


@sc
def iterable_dataset_len(m):
    class Ten(D(m).IterableDataset):
        def __len__(self):
            return 10

        def __iter__(self):
            return iter(range(10))

    return [len(D(m).DataLoader(Ten(), batch_size=b, drop_last=d)) for b in (1, 2, 3) for d in (False, True)]


@sc
def random_sampler_counts(m):
    from collections import Counter

    def stat(sampler):
        counts = Counter(sampler)
        return sum(v > 1 for v in counts.values()), min(counts), max(counts), sum(counts.values())

    ds = dataset(m)
    m.manual_seed(11)
    samplers = (
        D(m).RandomSampler(ds, replacement=True, num_samples=len(ds) + 1),
        D(m).RandomSampler(ds),
        D(m).RandomSampler(ds, num_samples=len(ds) * 2),
        D(m).RandomSampler(ds, num_samples=len(ds) - 1),
        D(m).RandomSampler(ds, num_samples=len(ds) + 1),
    )
    return [stat(s) for s in samplers], list(samplers[0])[:10]


@sc
def random_sampler_replacement_not_bool(m):
    return D(m).RandomSampler(dataset(m), replacement=0)


@sc
def random_sampler_num_samples_zero(m):
    return D(m).RandomSampler(dataset(m), num_samples=0)


@sc
def random_sampler_lengths(m):
    ds = dataset(m)
    out = []
    for replacement in (True, False):
        sampler = D(m).RandomSampler(ds, replacement=replacement, num_samples=len(ds) + 5)
        count = sum(1 for _ in sampler)
        lengths = [len(D(m).DataLoader(ds, batch_size=b, sampler=sampler)) for b in (1, 6)]
        out.append((len(sampler), count, lengths))
    return out


@sc
def distributed_sampler_invalid_rank(m):
    from importlib import import_module

    DistributedSampler = import_module(f"{m.__name__}.utils.data.distributed").DistributedSampler
    ds = m.tensor(list(range(10)), dtype=m.int32)
    return outcome(lambda: DistributedSampler(ds, 3, 3)), outcome(lambda: DistributedSampler(ds, 3, -1))


@sc
def distributed_sampler_drop_last_never_duplicates(m):
    from importlib import import_module

    DistributedSampler = import_module(f"{m.__name__}.utils.data.distributed").DistributedSampler
    data = m.tensor(list(range(9)), dtype=m.int32)
    scanned = []
    for rank in range(4):
        sampler = DistributedSampler(data, 4, rank)
        for batch in D(m).DataLoader(data, batch_size=2, drop_last=True, sampler=sampler):
            scanned.append(batch)
    return scanned


WEIGHTS = [0.1, 0.9, 0.4, 0.7, 3.0, 0.6]


def seeded_samplers(m, generator):
    ds = dataset(m)
    return (
        D(m).RandomSampler(ds, num_samples=5, replacement=True, generator=generator()),
        D(m).RandomSampler(ds, replacement=False, generator=generator()),
        D(m).WeightedRandomSampler(WEIGHTS, num_samples=5, replacement=True, generator=generator()),
        D(m).WeightedRandomSampler(WEIGHTS, num_samples=5, replacement=False, generator=generator()),
        D(m).SubsetRandomSampler(range(10), generator=generator()),
    )


@sc
def sampler_reproducibility_with_generators(m):
    return [list(s) + list(s) for s in seeded_samplers(m, lambda: m.Generator().manual_seed(42))]


@sc
def sampler_reproducibility_with_manual_seed(m):
    out = []
    for sampler in seeded_samplers(m, lambda: None):
        m.manual_seed(0)
        twice = list(sampler) + list(sampler)
        its = (iter(sampler), iter(sampler))  # interleaved: each iterator draws when first advanced
        interleaved = ([], [])
        for idx in range(len(sampler)):
            for i in range(2):
                if idx == 0:
                    m.manual_seed(0)
                interleaved[i].append(next(its[i]))
        out.append((twice, interleaved))
    return out


@sc
def weighted_sampler_errors(m):
    W = D(m).WeightedRandomSampler
    return [
        outcome(lambda: W(WEIGHTS, num_samples=0)),
        outcome(lambda: W(WEIGHTS, num_samples=5, replacement=0)),
        outcome(lambda: W([[0.1, 0.2]], num_samples=1)),
        outcome(lambda: list(W(WEIGHTS, num_samples=7, replacement=False))),
    ]


@sc
def weighted_sampler_of_a_tensor(m):
    return list(D(m).WeightedRandomSampler(m.tensor(WEIGHTS), 8, generator=m.Generator().manual_seed(9)))


@sc
def batch_sampler_drop_last_and_errors(m):
    B, S = D(m).BatchSampler, D(m).SequentialSampler
    out = [list(B(S(range(10)), 3, drop_last=d)) for d in (False, True)]
    out += [len(B(S(range(10)), 3, drop_last=d)) for d in (False, True)]
    out.append(list(B(range(5), 2, False)))
    out += [outcome(lambda: B(S(range(10)), 0, False)), outcome(lambda: B(S(range(10)), 3, 1))]
    out.append(outcome(lambda: B(S(range(10)), True, False)))
    return out


@sc
def sampler_is_a_plain_iterable(m):
    dl = loader(m, sampler=range(2, 12), batch_size=2)
    return len(dl), list(dl)


def _uneven_batches():
    batches = []
    for i in range(0, 20, 5):
        batches.append(tuple(range(i, i + 2)))
        batches.append(tuple(range(i + 2, i + 5)))
    return batches


@sc
def batch_sampler_is_a_plain_iterable(m):
    dl = loader(m, batch_sampler=_uneven_batches())
    return len(dl), list(dl)


@sc
def numpy_samples(m):
    class Arrays(D(m).Dataset):
        def __getitem__(self, i):
            return np.ones((2, 3, 4)) * i

        def __len__(self):
            return 1000

    return next(iter(D(m).DataLoader(Arrays(), batch_size=12)))


@sc
def numpy_scalars_keep_their_dtype(m):
    out = []
    for dt in (np.float64, np.float32, np.float16, np.int64, np.int32, np.int16, np.int8, np.uint8, np.bool_):
        samples = [dt(1), dt(0)]
        out.append(next(iter(D(m).DataLoader(samples, batch_size=2))))
    return out


@sc
def error_dataset_without_getitem(m):
    class Error(D(m).Dataset):
        def __len__(self):
            return 100

    first = outcome(lambda: Error()[0])
    it = iter(D(m).DataLoader(Error(), batch_size=2, shuffle=True))
    errors = 0
    while True:
        try:
            next(it)
        except NotImplementedError:
            errors += 1
        except StopIteration:
            return first, errors


@sc
def loader_lengths(m):
    ds = dataset(m)
    return [len(ds), len(loader(m, batch_size=2)), len(list(loader(m, batch_size=2))), len(loader(m, batch_size=3))]


@sc
def drop_last_lengths_and_batches(m):
    dl = loader(m, batch_size=30, drop_last=True)
    return len(dl), [y for _, y in dl]


@sc
def error_in_iter_without_workers(m):
    class Error(D(m).IterableDataset):
        def __iter__(self):
            raise RuntimeError("Error in __iter__")

    return list(iter(D(m).DataLoader(Error())))


# --- collation ------------------------------------------------------------------------------------------------


class CustomList(list):
    pass


class CustomDict(dict):
    pass


Point = collections.namedtuple("Point", ["data", "label", "random_tensor"])
Pair = collections.namedtuple("Pair", ["positive", "negative"])


def collate(m):
    return D(m)._utils.collate


@sc
def default_convert_keeps_mapping_and_sequence_types(m):
    convert = collate(m).default_convert
    d, seq = convert(CustomDict({"a": 1, "b": 2})), convert(CustomList([1, 2, 3]))
    return type(d).__name__, d, type(seq).__name__, seq, convert(range(2))


@sc
def default_convert_of_arrays_and_scalars(m):
    convert = D(m).default_convert
    return [
        convert(np.arange(3, dtype=np.int16)),
        convert(np.float32(1.5)),
        convert([np.zeros(2), {"a": np.ones(1, np.uint8)}]),
        convert(Pair(np.int64(1), np.float64(2))),
        convert("text"),
        convert(np.array(["a", "b"])).tolist(),
        convert(m.ones(2)),
        convert((1, 2.5)),
    ]


@sc
def default_collate_dtypes(m):
    c = collate(m).default_collate
    return c([1, 2, -1]), c([1.1, 2.3, -0.9]), c([True, False]), c(["a", "b", "c"]), c([b"a", b"b"])


@sc
def default_collate_keeps_mapping_type(m):
    out = collate(m).default_collate([CustomDict({"a": 1, "b": 2}), CustomDict({"a": 3, "b": 4})])
    return type(out).__name__, out


@sc
def default_collate_keeps_sequence_type(m):
    out = collate(m).default_collate([CustomList([1, 2, 3]), CustomList([4, 5, 6])])
    return type(out).__name__, out


@sc
def default_collate_range_becomes_a_list(m):
    out = collate(m).default_collate([range(2), range(2)])
    return type(out).__name__, out


@sc
def default_collate_numpy_strings_pass_through(m):
    arr = np.array(["a", "b", "c"])
    out = collate(m).default_collate(arr)
    return type(out).__name__, [str(s) for s in out]


@sc
def default_collate_numpy_string_array_of_arrays(m):
    return collate(m).default_collate(np.array([[["a", "b", "c"]]]))


@sc
def default_collate_numpy_objects(m):
    return collate(m).default_collate(np.array([object(), object(), object()]))


@sc
def default_collate_numpy_nested_objects(m):
    return collate(m).default_collate(np.array([[[object(), object(), object()]]]))


@sc
def default_collate_numpy_memmap(m):
    # torch warns that its tensor would share the read-only memory; vkml copies it (no warning to compare)
    warnings.filterwarnings("ignore", "The given NumPy array is not writable")
    with tempfile.TemporaryFile() as f:
        arr = np.array([[0, 1], [2, 3], [4, 5], [6, 7]])
        mapped = np.memmap(f, dtype=arr.dtype, mode="w+", shape=arr.shape)
        mapped[:] = arr[:]
        readonly = np.memmap(f, dtype=arr.dtype, mode="r", shape=arr.shape)
        return collate(m).default_collate(list(readonly))


@sc
def default_collate_unequal_sequences(m):
    return collate(m).default_collate([["X"], ["X", "X"]])


@sc
def default_collate_unequal_sequences_reversed(m):
    return collate(m).default_collate([["X", "X"], ["X"]])


@sc
def default_collate_unequal_tensors(m):
    return collate(m).default_collate([m.zeros(2), m.zeros(3)])


@sc
def default_collate_of_an_unknown_type(m):
    return collate(m).default_collate([{1, 2}, {3}])


@sc
def default_collate_mixed_tensor_dtypes_and_scalars(m):
    c = D(m).default_collate
    return (
        c([m.tensor([1, 2], dtype=m.int8), m.tensor([3, 4], dtype=m.int8)]),
        c([m.tensor(1.5), m.tensor(2.5)]),
        c([m.tensor([True]), m.tensor([False])]),
        c([m.zeros(0), m.zeros(0)]),
        c([np.float16(1), np.float16(2)]),
        c([[1, 2.5], [3, 4.5]]),
        c([(np.zeros((2, 2), np.int8), "a"), (np.ones((2, 2), np.int8), "b")]),
    )


@sc
def default_collate_nested_dicts_and_namedtuples(m):
    batch = [Point(Pair(i, -i), str(i), m.tensor([float(i), 2.0 * i])) for i in range(3)]
    out = D(m).default_collate(batch)
    nested = D(m).default_collate([{"a": {"b": [i, i + 1]}, "c": np.int32(i)} for i in range(2)])
    return type(out).__name__, type(out.data).__name__, out, nested


@sc
def default_collate_bfloat16_and_float16_tensors(m):
    c = D(m).default_collate
    return c([m.ones(2, dtype=m.bfloat16), m.zeros(2, dtype=m.bfloat16)]), c([m.ones(1, dtype=m.float16)])


@sc
def default_collate_in_the_main_process_is_not_shared(m):
    t_in, n_in = m.zeros(1), np.zeros(1)
    return t_in.is_shared(), D(m).default_collate([t_in]).is_shared(), D(m).default_collate([n_in]).is_shared()


@sc
def default_collate_empty_batch(m):
    return D(m).default_collate([])


class DictDataset:
    def __init__(self, m):
        self.m = m

    def __len__(self):
        return 4

    def __getitem__(self, ndx):
        return {"a_tensor": self.m.empty(4, 2).fill_(ndx), "another_dict": {"a_number": ndx}}


@sc
def dict_samples(m):
    return list(D(m).DataLoader(DictDataset(m), batch_size=2, shuffle=False))


class NamedTupleDataset:
    def __init__(self, m):
        self.m = m

    def __len__(self):
        return 4

    def __getitem__(self, ndx):
        return Point(Pair(ndx, -ndx), str(ndx), self.m.arange(3.0) + ndx)


@sc
def namedtuple_samples(m):
    batched = list(D(m).DataLoader(NamedTupleDataset(m), batch_size=2))
    unbatched = list(D(m).DataLoader(NamedTupleDataset(m), batch_size=None))
    kinds = [
        (type(b).__name__, type(b.data).__name__, isinstance(b.data.positive, m.Tensor)) for b in batched + unbatched
    ]
    return kinds, batched, unbatched


class SimpleCustomBatch:
    def __init__(self, m, data):
        transposed = list(zip(*data))
        self.inp = m.stack(transposed[0], 0)
        self.tgt = m.stack(transposed[1], 0)


@sc
def custom_batch_collate_fn(m):
    ds = D(m).TensorDataset(m.arange(50.0).view(10, 5), m.arange(50.0).view(10, 5) * 2)
    dl = D(m).DataLoader(ds, batch_size=3, collate_fn=lambda batch: SimpleCustomBatch(m, batch))
    return [(type(b).__name__, b.inp, b.tgt) for b in dl]


@slow  # vkml's first pack_padded_sequence in a process costs a second
def packed_sequence_collate_fn(m):
    def pack(batch):
        data = m.stack([sample[0] for sample in batch], 1)
        t, b = data.size()
        lengths = m.randint(1, t, size=(b,), dtype=m.int64)
        return m.nn.utils.rnn.pack_padded_sequence(data, lengths, enforce_sorted=False)

    ds = D(m).TensorDataset(m.arange(50.0).view(10, 5), m.arange(50.0).view(10, 5))
    m.manual_seed(6)
    out = []
    for packed in D(m).DataLoader(ds, batch_size=5, collate_fn=pack):
        out.append((type(packed).__name__, packed.data, packed.batch_sizes, packed.sorted_indices))
    return out


@sc
def get_worker_info_in_the_main_process(m):
    return D(m).get_worker_info()


# --- worker processes -----------------------------------------------------------------------------------------


class SeedDataset:
    def __init__(self, m, size):
        self.m, self.size = m, size

    def __getitem__(self, idx):
        return self.m.initial_seed()

    def __len__(self):
        return self.size


def _seed_12345(m):
    return lambda worker_id: m.manual_seed(12345)


@sc
def worker_init_fn_seeds_each_worker(m):
    return list(D(m).DataLoader(SeedDataset(m, 4), batch_size=2, num_workers=2, worker_init_fn=_seed_12345(m)))


@slow
def worker_seeds_from_a_seeded_generator(m):
    """Each worker's initial seed is the pass's base seed plus its id: PyTorch's numbers for the same generator."""
    dl = D(m).DataLoader(SeedDataset(m, 4), batch_size=1, num_workers=4, generator=m.Generator().manual_seed(42))
    return sorted(int(b) for b in dl), sorted(int(b) for b in dl)


@slow
def worker_seeds_over_epochs(m):
    """A new base seed per epoch, drawn from the generator; persistent workers keep theirs."""
    out = []
    for persistent in (False, True):
        dl = D(m).DataLoader(
            SeedDataset(m, 2), num_workers=2, persistent_workers=persistent, generator=m.Generator().manual_seed(9)
        )
        out.append([sorted(int(b) for b in dl) for _ in range(2)])
    return out


@slow
def worker_seeds_after_manual_seed(m):
    m.manual_seed(8)
    return sorted(int(b) for b in D(m).DataLoader(SeedDataset(m, 3), batch_size=1, num_workers=3))


class RandomDrawsDataset:
    """Each sample is a draw of numpy's, Python's and the library's global generators in the worker."""

    def __init__(self, m):
        self.m = m

    def __len__(self):
        return 4

    def __getitem__(self, i):
        import random

        return np.random.rand(), random.random(), self.m.rand(1).item()


@slow
def worker_global_generators_are_seeded_as_in_pytorch(m):
    """PyTorch seeds numpy with its _generate_state(base seed, worker id) and Python and torch with the seed."""
    dl = D(m).DataLoader(RandomDrawsDataset(m), batch_size=2, num_workers=2, generator=m.Generator().manual_seed(5))
    return list(dl)


class MultiEpochDataset:
    def __init__(self, m, length):
        self.m, self.length = m, length

    def __iter__(self):
        info = D(self.m).get_worker_info()
        assert info is not None
        for _ in range(self.length // info.num_workers):
            yield info.id

    def __len__(self):
        return self.length


@slow
def multi_epochs_round_robin(m):
    ds = type("MultiEpoch", (MultiEpochDataset, D(m).IterableDataset), {})(m, 20)
    dl = D(m).DataLoader(ds, batch_size=10, shuffle=False, num_workers=2)
    return [list(dl) for _ in range(3)]


class WorkerSpecific:
    def __init__(self, m, sizes):
        self.m, self.sizes = m, sizes

    def __iter__(self):
        info = D(self.m).get_worker_info()
        assert info is not None
        return iter(range(self.sizes[info.id]))

    def __len__(self):
        return sum(self.sizes)


@slow
def iterable_dataset_per_worker_with_batching(m):
    ds = type("WorkerSpecific", (WorkerSpecific, D(m).IterableDataset), {})(m, [0, 4, 20])
    fetched = list(D(m).DataLoader(ds, num_workers=3, batch_size=7, prefetch_factor=3))
    return sorted(tuple(t.tolist()) for t in fetched)


def per_worker(batch_size, drop_last, prefetch_factor):
    def f(m):
        ds = type("WorkerSpecific", (WorkerSpecific, D(m).IterableDataset), {})(m, [0, 4, 20])
        dl = D(m).DataLoader(
            ds, num_workers=3, batch_size=batch_size, drop_last=drop_last, prefetch_factor=prefetch_factor
        )
        fetched = list(dl)
        if batch_size is None:
            return [type(x).__name__ for x in fetched], sorted(fetched), len(dl)
        return sorted(tuple(t.tolist()) for t in fetched), len(dl)

    return f


for _bs in (None, 7):
    for _drop in (False, True) if _bs else (False,):
        for _prefetch in (2, 4):
            SLOW[f"iterable_dataset_per_worker_{_bs}_{_drop}_{_prefetch}"] = per_worker(_bs, _drop, _prefetch)


@slow
def iterable_dataset_past_its_length_warns_with_workers(m):
    ds = type("Long", (LongIterableDataset, D(m).IterableDataset), {})()
    dl = D(m).DataLoader(ds, num_workers=1)
    before = [int(x) for x in dl]
    assert len(dl) == 20
    return before, [int(x) for x in dl]


@slow
def builtin_collection_conversion_with_a_worker(m):
    out = []
    for ds in (CountingDataset(20), counting(m, 20)):
        out.append(list(D(m).DataLoader(ds, batch_size=None, num_workers=1)))
        out.append(tuple(D(m).DataLoader(ds, batch_size=2, num_workers=1)))
    return out


@slow
def chain_dataset_with_a_worker(m):
    return list(D(m).DataLoader(counting(m, 20) + counting(m, 15), num_workers=1))


@slow
def sequential_batches_with_workers(m):
    return list(loader(m, batch_size=7, num_workers=2))


@slow
def sequential_with_workers_variants(m):
    return (
        list(loader(m, num_workers=2))[:5],
        list(loader(m, batch_size=2, num_workers=3, prefetch_factor=3))[-3:],
        list(loader(m, batch_size=None, num_workers=2))[7],
    )


@slow
def shuffle_with_workers_is_the_order_without(m):
    make = lambda w: loader(m, shuffle=True, batch_size=9, num_workers=w, generator=m.Generator().manual_seed(42))  # noqa: E731
    return [y for _, y in make(0)], [y for _, y in make(2)], [y for _, y in make(2)]


@slow
def sampler_and_batch_sampler_with_workers(m):
    return list(loader(m, sampler=range(2, 12), batch_size=2, num_workers=2)), list(
        loader(m, batch_sampler=_uneven_batches(), num_workers=2)
    )


@slow
def error_dataset_with_workers(m):
    class Error(D(m).Dataset):
        def __len__(self):
            return 41

    it = iter(D(m).DataLoader(Error(), batch_size=2, shuffle=True, num_workers=2))
    errors = 0
    while True:
        try:
            next(it)
        except NotImplementedError:
            errors += 1
        except StopIteration:
            return errors


def _raise_in_init(worker_id):
    raise RuntimeError("Error in worker_init_fn")


@sc
def error_in_worker_init_fn(m):
    return outcome(lambda: list(loader(m, num_workers=1, worker_init_fn=_raise_in_init)))


@slow
def error_in_iter_with_workers(m):
    class Error(D(m).IterableDataset):
        def __iter__(self):
            raise RuntimeError("Error in __iter__")

    return outcome(lambda: list(iter(D(m).DataLoader(Error(), num_workers=2))))


class WorkerInfoDataset:
    def __init__(self, m):
        self.m = m

    def __getitem__(self, idx):
        return self.m.tensor(self.value)

    def __len__(self):
        return 6


def _worker_info_init(m):
    def init(worker_id):
        info = D(m).get_worker_info()
        seen = [worker_id == info.id, info.num_workers, info.seed == m.initial_seed()]
        seen.append(type(info.dataset).__name__)
        seen.append(hasattr(info.dataset, "value"))
        for attr in ("id", "a"):
            try:
                setattr(info, attr, 3999)
                seen.append("assigned")
            except Exception as e:  # PyTorch's own test expects RuntimeError; 2.6+ raise FrozenInstanceError
                seen.append((type(e).__name__, str(e)))
        seen.append([f"{k}=" in repr(info) for k in ("id", "num_workers", "seed", "dataset")])
        info.dataset.value = [worker_id, all(s is not False for s in seen), len(seen)]

    return init


@slow
def get_worker_info_in_workers(m):
    ds = WorkerInfoDataset(m)
    data = list(D(m).DataLoader(ds, batch_size=2, num_workers=2, worker_init_fn=_worker_info_init(m)))
    return data, D(m).get_worker_info(), hasattr(ds, "value"), outcome(lambda: ds[0])


class WorkerQueueDataset:
    def __init__(self, data):
        self.data = data
        self.worker_id = None

    def worker_init_fn(self, worker_id):
        self.worker_id = worker_id

    def __getitem__(self, item):
        return self.worker_id, self.data[item]

    def __len__(self):
        return len(self.data)


@slow
def individual_worker_queues_take_turns(m):
    out = []
    for batch_size, num_workers in ((8, 1), (8, 2), (16, 3)):
        ds = WorkerQueueDataset(list(range(64)))
        dl = D(m).DataLoader(
            ds, batch_size=batch_size, num_workers=num_workers, timeout=5, worker_init_fn=ds.worker_init_fn
        )
        out.append(list(dl))
    return out


class NotResetDataset:
    def __init__(self):
        self.data = list(range(10))

    def __len__(self):
        return len(self.data)

    def __getitem__(self, idx):
        assert self.start == 0  # a persistent worker keeps the dataset it was started with
        return self.data[idx]


@slow
def persistent_workers_keep_their_dataset(m):
    ds = NotResetDataset()
    dl = D(m).DataLoader(ds, num_workers=2, persistent_workers=True)
    ds.start = 0
    epochs = []
    for i in range(3):
        epochs.append(list(dl))
        ds.start = i + 1
    return epochs


@slow
def persistent_workers_dict_samples(m):
    return list(D(m).DataLoader(DictDataset(m), batch_size=2, shuffle=False, persistent_workers=True, num_workers=1))


@slow
def persistent_workers_shuffle_follows_on(m):
    dl = loader(m, batch_size=25, shuffle=True, num_workers=2, persistent_workers=True,
                generator=m.Generator().manual_seed(1))  # fmt: skip
    return [[y for _, y in dl] for _ in range(3)]


class SleepDataset:
    def __init__(self, size, seconds):
        self.size, self.seconds, self.slept = size, seconds, False

    def __getitem__(self, idx):
        if not self.slept:
            time.sleep(self.seconds)
            self.slept = True
        return idx

    def __len__(self):
        return self.size


@slow
def timeout_error(m):
    dl = D(m).DataLoader(SleepDataset(10, 3), batch_size=2, num_workers=2, timeout=1)
    return outcome(lambda: next(iter(dl)))


@slow
def large_sampler_indices_error_leaves_cleanly(m):
    class Empty(D(m).Dataset):
        def __len__(self):
            return 100000

        def __getitem__(self, i):
            return m.empty(0)

    for x in D(m).DataLoader(Empty(), batch_size=40960, num_workers=1):
        assert x.numel() == 0
        raise RuntimeError("My Error")


class ConvDataset:
    def __init__(self, m):
        self.m = m
        self.x = m.ones(1, 1, 2400)
        self[0]  # a convolution in the parent process first

    def __len__(self):
        return 1

    def __getitem__(self, index):
        return self.m.nn.functional.conv1d(self.x, self.m.ones(1, 1, 2))


@slow
def conv_after_fork(m):
    return [tuple(x.shape) for x in D(m).DataLoader(ConvDataset(m), num_workers=1)]


@slow
def set_affinity_in_worker_init(m):
    cpu = sorted(os.sched_getaffinity(0))[-1]

    class Affinity(D(m).IterableDataset):
        def __iter__(self):
            return iter(os.sched_getaffinity(0))

    dl = D(m).DataLoader(Affinity(), num_workers=2, worker_init_fn=lambda _: os.sched_setaffinity(0, [cpu]))
    return [int(s) == cpu for s in dl]


@slow
def multiprocessing_contexts(m):
    import multiprocessing

    out = []
    for ctx in (None, "fork", multiprocessing.get_context("fork")):
        out.append(list(D(m).DataLoader(CountingDataset(11), num_workers=3, batch_size=3, multiprocessing_context=ctx)))
    return out


# Divergences not fixed yet: strict xfails, so that a fix shows up as an XPASS to remove from here.
KNOWN: dict[str, str] = {}


@pytest.mark.parametrize("name", known_params(SC, KNOWN))
def test_dataloader_scenario_matches_torch(name: str) -> None:
    check(SC[name])


@pytest.mark.exhaustive
@pytest.mark.parametrize("name", known_params(SLOW, KNOWN))
def test_dataloader_scenario_with_workers_matches_torch(name: str) -> None:
    check(SLOW[name])


def test_tensor_dataset_on_vulkan_shuffles_as_torch(gpu) -> None:
    """A sample on the Vulkan device: a TensorDataset there, shuffled with a seeded generator, batches as torch's."""

    def scenario(m):
        device = {"device": gpu} if m is vkml else {}
        ds = D(m).TensorDataset(m.tensor(DATA[:20], **device), m.tensor(LABELS[:20], **device))
        dl = D(m).DataLoader(ds, batch_size=6, shuffle=True, generator=m.Generator().manual_seed(42))
        batches = list(dl)
        return batches, [str(x.device).split(":")[0] in ("cpu", "vulkan") for x, _ in batches]

    check(scenario)


def test_numpy_worker_seed_state_is_pytorchs() -> None:
    """PyTorch's test_numpy_gen_state: the numpy state a worker is seeded with, from (base seed, worker id)."""
    from torch.utils.data._utils.worker import _generate_state

    from vkml.utils.data.dataloader import _numpy_state

    rng = np.random.default_rng(3)
    for worker_id, base_seed in [(0, 0), (15, 2**64 - 1), *zip(rng.integers(0, 16, 20), rng.integers(0, 2**63, 20))]:
        want = [int(v) for v in _generate_state(int(base_seed), int(worker_id))]
        assert [int(v) for v in _numpy_state(int(base_seed), int(worker_id))] == want
