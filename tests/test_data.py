"""vkml.utils.data against torch.utils.data: datasets, samplers, collation, DataLoader (with workers)."""

from __future__ import annotations

import collections

import numpy as np
import pytest
import torch
import torch.utils.data as tdata

import vkml
from vkml.utils import data as vdata

Point = collections.namedtuple("Point", "x y")


def _as_lists(obj):
    """A batch's structure with every tensor (vkml or torch) as (dtype kind, nested list)."""
    if isinstance(obj, (vkml.Tensor, torch.Tensor)):
        is_float = obj.is_floating_point() if isinstance(obj, torch.Tensor) else obj.dtype.is_float
        kind = "bool" if obj.dtype in (vkml.bool, torch.bool) else "float" if is_float else "int"
        return kind, obj.tolist()
    if isinstance(obj, dict):
        return {k: _as_lists(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj).__name__, [_as_lists(v) for v in obj]
    return obj


BATCHES = {
    "ints": [1, 2, 3],
    "bools": [True, False],
    "floats": [0.5, 1.5],
    "strings": ["a", "b"],
    "numpy": [np.arange(3, dtype=np.float32), np.ones(3, dtype=np.float32)],
    "numpy-int-scalars": [np.int64(4), np.int64(5)],
    "dicts": [{"a": 1, "b": [0.5, 2]}, {"a": 2, "b": [1.5, 3]}],
    "tuples": [(1, "x"), (2, "y")],
    "namedtuples": [Point(1, 2.0), Point(3, 4.0)],
}


@pytest.mark.parametrize("name", list(BATCHES))
def test_default_collate_matches_torch(name: str) -> None:
    batch = BATCHES[name]
    assert _as_lists(vdata.default_collate(batch)) == _as_lists(tdata.default_collate(batch))


def test_reachable_as_in_torch() -> None:
    assert vkml.utils.data is vdata and vkml.utils.data.DataLoader is vdata.DataLoader


def test_default_collate_of_tensors_and_its_float64_rule() -> None:
    out = vdata.default_collate([vkml.tensor([1.0, 2.0]), vkml.tensor([3.0, 4.0])])
    assert out.shape == (2, 2) and out.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    for batch in ([0.1, 0.2], [np.float64(0.1)], [np.zeros(2)], [np.int8(1)], [np.zeros(2, np.uint8)], [np.int16(3)]):
        got, want = vdata.default_collate(batch), tdata.default_collate(batch)
        assert got.dtype.name == str(want.dtype).removeprefix("torch.") and got.tolist() == want.tolist()
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        vdata.default_collate([vkml.ones(2), vkml.ones(3)])
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        vdata.default_collate([[1, 2], [1]])
    with pytest.raises(TypeError, match="default_collate: batch must contain"):
        vdata.default_collate([object()])


def test_datasets_subset_concat_and_random_split() -> None:
    ds = vdata.TensorDataset(vkml.arange(10), vkml.arange(10) * 2)
    assert len(ds) == 10 and [int(v) for v in ds[3]] == [3, 6]
    with pytest.raises(AssertionError, match="Size mismatch"):
        vdata.TensorDataset(vkml.ones(2), vkml.ones(3))
    cat = vdata.ConcatDataset([range(3), range(10, 14)])
    assert len(cat) == 7 and [cat[i] for i in range(-7, 7)] == [*range(3), *range(10, 14)] * 2
    with pytest.raises(ValueError, match="absolute value of index"):
        cat[-8]
    a, b, c = vdata.random_split(range(10), [0.5, 0.3, 0.2], generator=vkml.Generator().manual_seed(1))
    assert (len(a), len(b), len(c)) == tuple(len(s) for s in tdata.random_split(range(10), [0.5, 0.3, 0.2]))
    assert sorted([*a, *b, *c]) == list(range(10))
    again = vdata.random_split(range(10), [5, 3, 2], generator=vkml.Generator().manual_seed(1))
    assert [list(s) for s in again] == [list(a), list(b), list(c)]
    with pytest.raises(ValueError, match="Sum of input lengths"):
        vdata.random_split(range(10), [5, 4])


def test_samplers_lengths_contents_and_errors() -> None:
    g = vkml.Generator().manual_seed(5)
    first = list(vdata.RandomSampler(range(7), generator=g))
    assert sorted(first) == list(range(7))
    assert list(vdata.RandomSampler(range(7), generator=vkml.Generator().manual_seed(5))) == first
    assert list(vdata.RandomSampler(range(7), generator=g)) != first  # each pass draws a new order
    drawn = list(vdata.RandomSampler(range(3), replacement=True, num_samples=50, generator=g))
    assert len(drawn) == 50 and set(drawn) <= {0, 1, 2}
    assert len(list(vdata.RandomSampler(range(4), num_samples=10, generator=g))) == 10
    assert sorted(vdata.SubsetRandomSampler([4, 8, 9], generator=g)) == [4, 8, 9]
    weighted = list(vdata.WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 40, generator=g))
    assert len(weighted) == 40 and set(weighted) <= {1, 3}
    for sampler in (vdata.BatchSampler(range(10), 3, False), vdata.BatchSampler(range(10), 3, True)):
        tsampler = tdata.BatchSampler(range(10), 3, sampler.drop_last)
        assert list(sampler) == list(tsampler) and len(sampler) == len(tsampler)
    for make in (lambda m: m.BatchSampler(range(3), 0, False), lambda m: m.RandomSampler(range(3), num_samples=0)):
        for module in (vdata, tdata):
            with pytest.raises(ValueError, match="should be a positive integer value"):
                make(module)


def test_random_sampler_with_replacement_draws_lazily() -> None:
    """minGPT's trainer: RandomSampler(replacement=True, num_samples=int(1e10)), iterated a few
    batches; the draws come as they are taken, not all 1e10 at once (PyTorch draws 32 at a time)."""
    sampler = vdata.RandomSampler(range(5), replacement=True, num_samples=int(1e10))
    loader = vdata.DataLoader(range(5), sampler=sampler, batch_size=4, shuffle=False)
    batches = iter(loader)
    first = [next(batches).tolist() for _ in range(3)]
    assert all(len(b) == 4 and set(b) <= set(range(5)) for b in first)
    assert len(list(vdata.RandomSampler(range(5), replacement=True, num_samples=70))) == 70


def _batches(loader):
    return [_as_lists(b) for b in loader]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"batch_size": 3},
        {"batch_size": 3, "drop_last": True},
        {"batch_size": None},
        {"batch_sampler": [[0, 4], [1, 2, 3]]},
        {"sampler": [9, 0, 5], "batch_size": 2},
    ],
)
def test_dataloader_batches_match_torch(kwargs) -> None:
    data = [{"x": np.full(2, i, dtype=np.float32), "y": i} for i in range(10)]
    loader, tloader = vdata.DataLoader(data, **kwargs), tdata.DataLoader(data, **kwargs)
    assert len(loader) == len(tloader)
    assert _batches(loader) == _batches(tloader)


def test_shuffle_is_deterministic_per_seed_and_covers_the_data() -> None:
    ds = vdata.TensorDataset(vkml.arange(20).float(), vkml.arange(20))
    run = lambda seed: _batches(  # noqa: E731
        vdata.DataLoader(ds, batch_size=6, shuffle=True, generator=vkml.Generator().manual_seed(seed))
    )
    assert run(0) == run(0) and run(0) != run(1)
    ys = [y for batch in run(0) for y in batch[1][1][1]]
    assert sorted(ys) == list(range(20))
    vkml.manual_seed(7)
    a = _batches(vdata.DataLoader(ds, batch_size=6, shuffle=True))
    vkml.manual_seed(7)
    assert _batches(vdata.DataLoader(ds, batch_size=6, shuffle=True)) == a


class _Squares(vdata.Dataset):
    def __len__(self):
        return 11

    def __getitem__(self, i):
        info = vdata.get_worker_info()
        return {"x": np.array([i, i * i], dtype=np.int32), "worker": -1 if info is None else info.id}


class _Stream(vdata.IterableDataset):
    def __iter__(self):
        info = vdata.get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, 9, step))

    def __len__(self):
        return 9


class _Fails(vdata.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 2:
            raise KeyError(f"no sample {i}")
        return i


def test_workers_give_the_main_process_batches_in_order() -> None:
    ds = _Squares()
    single_loader = vdata.DataLoader(ds, batch_size=2, shuffle=True, generator=vkml.Generator().manual_seed(2))
    loader = vdata.DataLoader(
        ds,
        batch_size=2,
        shuffle=True,
        generator=vkml.Generator().manual_seed(2),
        num_workers=2,
        persistent_workers=True,
        prefetch_factor=3,
        pin_memory=True,  # accepted, does nothing (docs/data.md)
    )
    for epoch in range(2):  # persistent workers serve a second epoch, shuffled anew
        single, multi = list(single_loader), list(loader)
        if epoch == 0:
            assert [b["x"].tolist() for b in multi] == [b["x"].tolist() for b in single]
        else:  # no new base seed is drawn, as in PyTorch: another shuffle (tests/test_program_fixes_o.py)
            assert sorted(x for b in multi for x in b["x"].tolist()) == sorted(
                x for b in single for x in b["x"].tolist()
            )
        assert all(isinstance(b["x"], vkml.Tensor) and b["x"].dtype == vkml.int32 for b in multi)
        assert {w for b in multi for w in b["worker"].tolist()} == {0, 1}
    assert vdata.get_worker_info() is None


def test_iterable_dataset_with_workers() -> None:
    batches = list(vdata.DataLoader(_Stream(), batch_size=2, num_workers=2))
    values = sorted(v for b in batches for v in b.tolist())
    assert values == list(range(9))
    assert len(vdata.DataLoader(_Stream(), batch_size=2)) == 5


class _Seeds(vdata.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        info = vdata.get_worker_info()
        return [info.id, info.seed, getattr(info.dataset, "offset", 0), float(vkml.rand(1).item())]


def _set_offset(worker_id: int) -> None:
    vdata.get_worker_info().dataset.offset = 100 + worker_id


def test_worker_init_fn_and_worker_seeds() -> None:
    loader = vdata.DataLoader(
        _Seeds(), batch_size=1, num_workers=2, worker_init_fn=_set_offset, generator=vkml.Generator().manual_seed(4)
    )
    rows = [[v[0] for v in b[:3]] + [b[3].item()] for b in loader]
    assert [r[0] for r in rows] == [0, 1, 0, 1] and [r[2] for r in rows] == [100, 101, 100, 101]
    assert rows[1][1] == rows[0][1] + 1  # seed = base seed + worker id
    assert rows[0][3] != rows[1][3]  # each worker's vkml generator is seeded with its own seed
    again = [
        [v[0] for v in b[:3]] + [b[3].item()]
        for b in vdata.DataLoader(
            _Seeds(), batch_size=1, num_workers=2, worker_init_fn=_set_offset, generator=vkml.Generator().manual_seed(4)
        )
    ]
    assert again == rows


def test_spawned_workers_get_a_tensor_dataset_as_host_values() -> None:
    ds = vdata.TensorDataset(vkml.arange(8).reshape(4, 2).float(), vkml.arange(4))
    loader = vdata.DataLoader(ds, batch_size=3, num_workers=1, multiprocessing_context="spawn")
    assert _batches(loader) == _batches(vdata.DataLoader(ds, batch_size=3))


def test_worker_error_names_the_worker_and_keeps_the_type() -> None:
    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process 0"):
        list(vdata.DataLoader(_Fails(), batch_size=2, num_workers=1))


def test_worker_refuses_a_device_tensor(gpu) -> None:
    class OnDevice(vdata.Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return vkml.ones(2, device=gpu)

    with pytest.raises(RuntimeError, match="never use Vulkan devices"):
        list(vdata.DataLoader(OnDevice(), batch_size=2, num_workers=1))


def test_tensor_dataset_on_a_device_batches_on_that_device(gpu) -> None:
    ds = vdata.TensorDataset(vkml.arange(6, device=gpu).float())
    for workers in (0, 1):
        (x,) = next(iter(vdata.DataLoader(ds, batch_size=4, num_workers=workers)))
        assert x.device == gpu and x.tolist() == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"num_workers": -1}, "num_workers option should be non-negative"),
        ({"prefetch_factor": 2}, "prefetch_factor option could only be specified"),
        ({"persistent_workers": True}, "persistent_workers option needs num_workers > 0"),
        ({"sampler": [0], "shuffle": True}, "sampler option is mutually exclusive with shuffle"),
        ({"batch_sampler": [[0]], "batch_size": 2}, "batch_sampler option is mutually exclusive"),
        ({"batch_size": None, "drop_last": True}, "batch_size=None option disables auto-batching"),
    ],
)
def test_dataloader_argument_errors_match_torch(kwargs, match: str) -> None:
    for module in (vdata, tdata):
        with pytest.raises(ValueError, match=match):
            module.DataLoader(range(4), **kwargs)


class _Dies(vdata.Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        import os

        os._exit(3)


class _Slow(vdata.Dataset):
    def __len__(self):
        return 1

    def __getitem__(self, i):
        import time

        time.sleep(1.0)
        return i


def test_dead_worker_and_timeout_raise_as_torch() -> None:
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+\) exited unexpectedly"):
        list(vdata.DataLoader(_Dies(), batch_size=1, num_workers=1))
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.2 seconds"):
        list(vdata.DataLoader(_Slow(), num_workers=1, timeout=0.2))


class _Large(vdata.Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return np.zeros((128, 128), np.float32)  # a batch is far larger than a pipe's buffer


def test_leaving_an_epoch_early_lets_the_workers_exit_on_their_own() -> None:
    """Results nobody reads must not keep a worker alive: it exits cleanly, not by terminate() after a timeout."""
    it = iter(vdata.DataLoader(_Large(), batch_size=8, num_workers=2, prefetch_factor=4))
    next(it)
    processes = list(it.workers.processes)
    it._shutdown()
    assert [p.exitcode for p in processes] == [0, 0]


def test_a_custom_collate_fn_gets_the_samples_as_torch_gives_them() -> None:
    seen = {}

    def collate(lib):
        def fn(samples):
            seen.setdefault(lib, []).append([(int(x), y) for x, y in samples])
            xs = lib.stack([x for x, _ in samples]) if lib is vkml else torch.stack([x for x, _ in samples])
            return {"x": xs * 2, "labels": [y for _, y in samples]}

        return fn

    class Pairs:
        def __init__(self, lib):
            self.lib = lib

        def __len__(self):
            return 5

        def __getitem__(self, i):
            return self.lib.tensor(i), f"item{i}"

    got = list(vdata.DataLoader(Pairs(vkml), batch_size=2, collate_fn=collate(vkml)))
    want = list(tdata.DataLoader(Pairs(torch), batch_size=2, collate_fn=collate(torch)))
    assert seen[vkml] == seen[torch]
    assert [b["labels"] for b in got] == [b["labels"] for b in want]
    assert [b["x"].tolist() for b in got] == [b["x"].tolist() for b in want]


def test_pytorch_tensors_from_a_kept_torchvision_style_dataset_collate():
    # A program that swapped `import torch` for vkml but kept torchvision: its transforms make torch tensors.
    samples = [(torch.arange(6, dtype=torch.float32).reshape(2, 3) * i, torch.tensor(i)) for i in range(4)]
    samples[0][0].requires_grad_(True)  # exported by value all the same
    x, y = next(iter(vkml.utils.data.DataLoader(samples, batch_size=4)))
    assert isinstance(x, vkml.Tensor) and x.dtype == vkml.float32 and y.dtype == vkml.int64
    np.testing.assert_array_equal(x.numpy(), np.stack([s[0].detach().numpy() for s in samples]))
    assert y.tolist() == [0, 1, 2, 3]
    assert vkml.utils.data.default_convert(torch.ones(2, dtype=torch.float16)).dtype == vkml.float16
