"""``DataLoader``: batches from a dataset, in the main process or in worker processes.

Workers (``num_workers >= 1``) are processes of the ``multiprocessing`` context given (default:
the platform's, ``fork`` on Linux, as in PyTorch). **A worker never touches a vkml device**: a
forked child shares the parent's driver state, and a Vulkan call there could corrupt it. So a
worker reads samples, collates them into numpy arrays (``HostBatch`` leaves, collate.py) and
sends those; the main process makes the CPU tensors. A sample holding a tensor on a Vulkan
device is refused in the worker with an error that says so; CPU tensors are read on the host.
Batches arrive in the sampler's order whatever the number of workers, and for a given seed the
batches are the same with any ``num_workers`` (the shuffle and the worker seeds are drawn the
same way). See docs/data.md.
"""

from __future__ import annotations

import itertools
import multiprocessing
import multiprocessing.context
import os
import queue
import random
import time
import traceback
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...frontend import random as _random
from . import collate as _collate
from .collate import default_collate, default_convert  # noqa: F401 - torch.utils.data.dataloader's names
from .dataset import IterableDataset, TensorDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, _seed64

_POLL_S = 1.0  # how often a waiting main process checks that its workers are alive
_SHUTDOWN_JOIN_S = 5.0


@dataclass(frozen=True)
class WorkerInfo:
    """What ``get_worker_info()`` returns inside a worker: ``id``, ``num_workers``, ``seed``, ``dataset`` (its copy)."""

    id: int
    num_workers: int
    seed: int
    dataset: Any


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """In a DataLoader worker: its ``WorkerInfo``; in the main process: None.

    >>> get_worker_info() is None
    True
    """
    return _worker_info


class _Exhausted:
    """A worker's answer when its copy of an iterable dataset has no more batches."""


@dataclass
class _WorkerError:
    type_name: str
    exc_type: type | None
    text: str
    worker_id: int

    def reraise(self):
        message = f"Caught {self.type_name} in DataLoader worker process {self.worker_id}.\nOriginal {self.text}"
        try:
            error = self.exc_type(message) if self.exc_type is not None else RuntimeError(message)
        except Exception:
            error = RuntimeError(message)
        raise error


def _fetch(dataset, indices, auto_collation: bool, collate_fn):
    if auto_collation and collate_fn is _collate.default_collate and _plain_tensor_dataset(dataset):
        return dataset._collated(indices, _collate._ACTIVE[0])
    if auto_collation:
        getitems = getattr(dataset, "__getitems__", None)
        data = getitems(indices) if callable(getitems) else [dataset[i] for i in indices]
    else:
        data = dataset[indices]
    return collate_fn(data)


def _plain_tensor_dataset(dataset) -> bool:
    return isinstance(dataset, TensorDataset) and type(dataset).__getitem__ is TensorDataset.__getitem__


def _next_iterable(iterator, auto_collation: bool, batch_size: int | None, drop_last: bool, collate_fn):
    if not auto_collation:
        return collate_fn(next(iterator))
    data = list(itertools.islice(iterator, batch_size))
    if not data or (drop_last and len(data) < batch_size):
        raise StopIteration
    return collate_fn(data)


def _numpy_state(base_seed: int, worker_id: int) -> np.ndarray:
    """The seed of numpy's global generator in a worker: PyTorch's ``_generate_state``, which is numpy's
    ``SeedSequence`` of (worker id, low and high words of the base seed) drawn to four words, so that a
    dataset drawing ``np.random`` in its workers gets PyTorch's numbers for the same seed."""
    return np.random.SeedSequence([worker_id, base_seed & 0xFFFFFFFF, base_seed >> 32]).generate_state(4)


def _worker_loop(
    dataset,
    index_queue,
    result_queue,
    done,
    auto_collation,
    batch_size,
    drop_last,
    collate_fn,
    init_fn,
    worker_id,
    n,
    seed,
):
    """A worker process: answers (epoch, batch index, indices) tasks with host batches, until it gets None.

    Once ``done`` is set (the main process stopped listening) it skips the tasks still queued, and
    it exits without waiting for unread results to be flushed.
    """
    global _worker_info
    result_queue.cancel_join_thread()
    _collate.enter_worker()
    np.random.seed(_numpy_state(seed, worker_id))
    seed = seed + worker_id
    random.seed(seed)
    _random.manual_seed(seed)
    _worker_info = WorkerInfo(worker_id, n, seed, dataset)
    iterable = isinstance(dataset, IterableDataset)
    init_error = None
    try:
        if init_fn is not None:
            init_fn(worker_id)
    except Exception as e:
        init_error = _WorkerError(type(e).__name__, type(e), traceback.format_exc(), worker_id)
    iterator = None
    while True:
        task = index_queue.get()
        if task is None:
            break
        if task[0] == "reset":
            iterator = None
            continue
        if done.is_set():
            continue
        _, epoch, batch_index, indices = task
        if init_error is not None:
            result_queue.put((epoch, batch_index, init_error))
            continue
        try:
            if iterable:
                if iterator is None:
                    iterator = iter(dataset)
                data = _next_iterable(iterator, auto_collation, batch_size, drop_last, collate_fn)
            else:
                data = _fetch(dataset, indices, auto_collation, collate_fn)
            answer = _collate.to_host(data)
        except StopIteration:
            answer = _Exhausted()
        except Exception as e:
            answer = _WorkerError(type(e).__name__, type(e), traceback.format_exc(), worker_id)
        result_queue.put((epoch, batch_index, answer))


class _Workers:
    """The worker processes of one DataLoader (kept across epochs when ``persistent_workers``)."""

    def __init__(self, loader: DataLoader, seed: int) -> None:
        ctx = loader.multiprocessing_context
        if ctx is None:
            ctx = multiprocessing.get_context()
        elif isinstance(ctx, str):
            ctx = multiprocessing.get_context(ctx)
        if _plain_tensor_dataset(loader.dataset):
            loader.dataset._host_arrays()  # read here: a forked worker inherits the values, never the device
        self.result_queue = ctx.Queue()
        self.done = ctx.Event()
        self.index_queues, self.processes = [], []
        for worker_id in range(loader.num_workers):
            index_queue = ctx.Queue()
            args = (
                loader.dataset,
                index_queue,
                self.result_queue,
                self.done,
                loader._auto_collation,
                loader.batch_size,
                loader.drop_last,
                loader.collate_fn,
                loader.worker_init_fn,
                worker_id,
                loader.num_workers,
                seed,
            )
            process = ctx.Process(target=_worker_loop, args=args, daemon=True)
            process.start()
            self.index_queues.append(index_queue)
            self.processes.append(process)
        self.epoch = 0

    def check_alive(self) -> None:
        dead = [p.pid for p in self.processes if not p.is_alive()]
        if dead:
            self.shutdown()
            raise RuntimeError(f"DataLoader worker (pid(s) {', '.join(map(str, dead))}) exited unexpectedly")

    def shutdown(self) -> None:
        self.done.set()
        for q in self.index_queues:
            try:
                q.put(None)
            except (OSError, ValueError):
                pass
        for p in self.processes:
            p.join(_SHUTDOWN_JOIN_S)
            if p.is_alive():
                p.terminate()
        for q in [*self.index_queues, self.result_queue]:
            q.cancel_join_thread()
            q.close()
        self.processes, self.index_queues = [], []


class _LengthWatch:
    """PyTorch's NOTE [ IterableDataset and __len__ ]: once ``len(loader)`` was asked, an iterator that yields
    more batches than the iterable dataset's reported length warns on each one past it."""

    def __init__(self, loader: DataLoader) -> None:
        self.reported = loader._IterableDataset_len_called if isinstance(loader.dataset, IterableDataset) else None
        self.yielded = 0

    def count(self, loader: DataLoader) -> None:
        self.yielded += 1
        if self.reported is not None and self.yielded > self.reported:
            message = (
                f"Length of IterableDataset {loader.dataset} was reported to be {self.reported}"
                f"(when accessing len(dataloader)), but {self.yielded} samples have been fetched. "
            )
            if loader.num_workers > 0:
                message += (
                    "For multiprocessing data-loading, this could be caused by not properly configuring the "
                    "IterableDataset replica at each worker. Please see "
                    "https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset for examples."
                )
            warnings.warn(message, stacklevel=3)


class _SingleProcessIter:
    def __init__(self, loader: DataLoader) -> None:
        self.loader = loader
        _seed64(loader.generator)  # the workers' base seed, drawn as PyTorch's iterator draws it
        self.iterable = isinstance(loader.dataset, IterableDataset)
        self.length_watch = _LengthWatch(loader)
        if self.iterable:
            self.iterator = iter(loader.dataset)
        else:
            self.sampler_iter = iter(loader._index_sampler)

    def __iter__(self):
        return self

    def __next__(self):
        loader = self.loader
        if self.iterable:
            batch = _next_iterable(
                self.iterator, loader._auto_collation, loader.batch_size, loader.drop_last, loader.collate_fn
            )
            self.length_watch.count(loader)
            return batch
        return _fetch(loader.dataset, next(self.sampler_iter), loader._auto_collation, loader.collate_fn)

    def __len__(self) -> int:
        return len(self.loader)


class _MultiProcessIter:
    def __init__(self, loader: DataLoader) -> None:
        self.loader = loader
        if loader.persistent_workers and loader._workers is not None:
            # PyTorch resets its one iterator for a later epoch and draws no new base seed, so the
            # shuffle that follows comes from the generator's next draws
            self.workers = loader._workers
            self.workers.epoch += 1
            for q in self.workers.index_queues:
                q.put(("reset",))
        else:
            self.workers = _Workers(loader, _seed64(loader.generator))  # PyTorch's base seed
            if loader.persistent_workers:
                loader._workers = self.workers
        self.epoch = self.workers.epoch
        self.iterable = isinstance(loader.dataset, IterableDataset)
        self.length_watch = _LengthWatch(loader)
        self.sampler_iter = None if self.iterable else iter(loader._index_sampler)
        self.active = [True] * loader.num_workers
        self.next_worker = itertools.cycle(range(loader.num_workers))
        self.send_idx = self.rcvd_idx = 0
        self.task_worker: dict[int, int] = {}
        self.done_sending = False
        self.results: dict[int, Any] = {}
        self.finished = False
        for _ in range(loader.prefetch_factor * loader.num_workers):
            self._send()

    def __iter__(self):
        return self

    def __len__(self) -> int:
        return len(self.loader)

    def _send(self) -> None:
        if self.done_sending or not any(self.active):
            return
        indices = None
        if not self.iterable:
            try:
                indices = next(self.sampler_iter)
            except StopIteration:
                self.done_sending = True
                return
        worker = next(w for w in self.next_worker if self.active[w])
        self.workers.index_queues[worker].put(("task", self.epoch, self.send_idx, indices))
        self.task_worker[self.send_idx] = worker
        self.send_idx += 1

    def _receive(self):
        timeout = self.loader.timeout
        started = time.monotonic()
        while True:
            try:
                return self.workers.result_queue.get(timeout=min(_POLL_S, timeout) if timeout > 0 else _POLL_S)
            except queue.Empty:
                if timeout > 0 and time.monotonic() - started >= timeout:
                    self._shutdown()
                    raise RuntimeError(f"DataLoader timed out after {timeout} seconds") from None
                self.workers.check_alive()

    def __next__(self):
        while True:
            if self.finished:
                raise StopIteration
            if self.rcvd_idx >= self.send_idx:  # nothing outstanding: the epoch is over
                self._shutdown()
                raise StopIteration
            if self.rcvd_idx in self.results:
                answer = self.results.pop(self.rcvd_idx)
                worker = self.task_worker.pop(self.rcvd_idx)
                self.rcvd_idx += 1
                if isinstance(answer, _Exhausted):
                    self.active[worker] = False
                    continue
                self._send()
                if isinstance(answer, _WorkerError):
                    # as PyTorch's: the iterator stays usable, so a loop that catches a sample's error
                    # (an unreadable file) goes on with the next batch
                    answer.reraise()
                batch = _collate.to_tensors(answer)
                if self.iterable:
                    self.length_watch.count(self.loader)
                return batch
            epoch, batch_index, answer = self._receive()
            if epoch == self.epoch:
                self.results[batch_index] = answer

    def _shutdown(self) -> None:
        if self.finished:
            return
        self.finished = True
        if not self.loader.persistent_workers:
            self.workers.shutdown()

    def __del__(self):
        try:
            self._shutdown()
        except Exception:  # the interpreter may be ending: the daemon workers end with it
            pass


class DataLoader:
    """Batches of ``dataset``: PyTorch's arguments and defaults (see docs/data.md for the few differences).

    ``pin_memory`` is accepted and does nothing: vkml stages host data for its devices itself,
    and a batch's ``.to(device)`` does not wait for the GPU work in flight (docs/data.md).

    >>> import vkml
    >>> loader = DataLoader(range(5), batch_size=2)
    >>> [b.tolist() for b in loader]
    [[0, 1], [2, 3], [4]]
    """

    def __init__(
        self,
        dataset,
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler: Sampler | None = None,
        batch_sampler: Sampler | None = None,
        num_workers: int = 0,
        collate_fn=None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn=None,
        multiprocessing_context=None,
        generator=None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        in_order: bool = True,
    ) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError(
                "prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 to enable "
                "multiprocessing, otherwise set prefetch_factor to None."
            )
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if isinstance(dataset, IterableDataset):
            for name, value in (("shuffle", shuffle), ("sampler", sampler), ("batch_sampler", batch_sampler)):
                if value not in (None, False):
                    raise ValueError(
                        f"DataLoader with IterableDataset: expected unspecified {name} option, but got {name}={value}"
                    )
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"
                )
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is None and not isinstance(dataset, IterableDataset):
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and sampler is not None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.generator = generator
        self.persistent_workers = persistent_workers
        # PyTorch's in_order=False lets workers' batches come back as they finish; vkml's loader always
        # yields them in the sampler's order, which that permits too
        self.in_order = in_order
        auto = self._auto_collation
        self.collate_fn = (
            collate_fn if collate_fn is not None else (_collate.default_collate if auto else _collate.default_convert)
        )
        self._workers: _Workers | None = None
        self._IterableDataset_len_called = None
        self._initialized = True
        self._check_worker_number_rationality()

    # PyTorch refuses to change these once the loader is made: its samplers were built from them
    _FIXED_AFTER_INIT = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")

    def __setattr__(self, attr, value) -> None:
        if self.__dict__.get("_initialized") and attr in self._FIXED_AFTER_INIT:
            raise ValueError(f"{attr} attribute should not be set after {type(self).__name__} is initialized")
        super().__setattr__(attr, value)

    @property
    def multiprocessing_context(self):
        return self._multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, context) -> None:
        """PyTorch's checks: a start method's name (made a context here) or a context, and only with workers."""
        if context is not None:
            if self.num_workers <= 0:
                raise ValueError(
                    "multiprocessing_context can only be used with multi-process loading (num_workers > 0), but got "
                    f"num_workers={self.num_workers}"
                )
            if isinstance(context, str):
                methods = multiprocessing.get_all_start_methods()
                if context not in methods:
                    raise ValueError(
                        f"multiprocessing_context option should specify a valid start method in {methods!r}, but got "
                        f"multiprocessing_context={context!r}"
                    )
                context = multiprocessing.get_context(context)
            if not isinstance(context, multiprocessing.context.BaseContext):
                raise TypeError(
                    "multiprocessing_context option should be a valid context object or a string specifying the "
                    f"start method, but got multiprocessing_context={context}"
                )
        self._multiprocessing_context = context

    def _check_worker_number_rationality(self) -> None:
        """PyTorch's warning when the loader would start more workers than the CPUs this process may use."""
        if not self.num_workers:
            return
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        if cpus is not None and self.num_workers <= cpus:
            return
        suggestion = (
            "DataLoader is not able to compute a suggested max number of worker in current system."
            if cpus is None
            else f"Our suggested max number of worker in current system is {cpus}"
            f"{'' if hasattr(os, 'sched_getaffinity') else ' (`cpuset` is not taken into account)'}, "
            "which is smaller than what this DataLoader is going to create."
        )
        warnings.warn(
            f"This DataLoader will create {self.num_workers} worker processes in total. {suggestion} Please be aware "
            "that excessive worker creation might get DataLoader running slow or even freeze, lower the worker "
            "number to avoid potential slowness/freeze if necessary.",
            stacklevel=3,
        )

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None or (
            isinstance(self.dataset, IterableDataset) and self.batch_size is not None
        )

    @property
    def _index_sampler(self):
        return self.batch_sampler if self.batch_sampler is not None else self.sampler

    def __iter__(self):
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        if not (self.persistent_workers and self._workers is not None):
            self._check_worker_number_rationality()  # PyTorch's, each time it makes a multi-process iterator
        return _MultiProcessIter(self)

    def __len__(self) -> int:
        if isinstance(self.dataset, IterableDataset):
            length = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else -(-length // self.batch_size)
            return length
        return len(self._index_sampler)

    def __del__(self):
        workers = getattr(self, "_workers", None)
        if workers is not None:
            try:
                workers.shutdown()
            except Exception:  # the interpreter may be ending: the daemon workers end with it
                pass
