"""``vkml.distributed``: PyTorch's process-group API for the one process vkml runs in.

vkml drives one device from one process, so a process group here has one rank: that is what
``torchrun --nproc_per_node=1`` gives a PyTorch program, and the collectives of one rank are exact
without communication (``all_reduce`` of one tensor is that tensor, ``broadcast`` from rank 0
leaves it as it is, ``barrier`` has no one to wait for). A program that asks for more ranks
(``world_size`` > 1, from the argument or ``WORLD_SIZE``) gets a NotImplementedError naming the
value: vkml has no transport between processes. As in PyTorch, rank and world size, the
collectives and ``DistributedDataParallel`` need ``init_process_group`` first.

nanoGPT's train.py imports ``init_process_group`` and ``destroy_process_group`` (and
``torch.nn.parallel.DistributedDataParallel``) at the top and calls them only under torchrun.

>>> import vkml.distributed as dist
>>> dist.is_initialized()
False
"""

from __future__ import annotations

import enum
import os

__all__ = [
    "Backend",
    "ReduceOp",
    "all_gather",
    "all_reduce",
    "barrier",
    "broadcast",
    "destroy_process_group",
    "get_backend",
    "get_rank",
    "get_world_size",
    "init_process_group",
    "is_available",
    "is_initialized",
    "is_nccl_available",
    "is_torchelastic_launched",
    "reduce",
]

_NOT_INITIALIZED = "Default process group has not been initialized, please make sure to call init_process_group."


class Backend(str):
    """A backend's name; vkml's one-rank group accepts PyTorch's names (``gloo``, ``nccl``, ``mpi``, ...)."""

    GLOO = "gloo"
    NCCL = "nccl"
    MPI = "mpi"
    UCC = "ucc"

    def __new__(cls, name: str):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, but got: {type(name)}")
        return super().__new__(cls, name.lower())


class ReduceOp(enum.Enum):
    """The reductions of ``all_reduce`` and ``reduce`` (with one rank, each leaves the tensor as it is)."""

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"


class _Group:
    backend: str | None = None


_group = _Group()


def is_available() -> bool:
    """True: the process-group API exists (with one rank)."""
    return True


def is_nccl_available() -> bool:
    """False: vkml has no NCCL."""
    return False


def is_torchelastic_launched() -> bool:
    """Whether the process was started by torchrun (``TORCHELASTIC_RUN_ID`` is set), as PyTorch tells it."""
    return os.getenv("TORCHELASTIC_RUN_ID") is not None


def is_initialized() -> bool:
    """Whether ``init_process_group`` has run (and no ``destroy_process_group`` since)."""
    return _group.backend is not None


def _env_int(name: str, given: int) -> int:
    if given != -1:
        return given
    value = os.environ.get(name)
    return int(value) if value is not None else -1


def init_process_group(
    backend=None,
    init_method=None,
    timeout=None,
    world_size: int = -1,
    rank: int = -1,
    store=None,
    group_name: str = "",
    pg_options=None,
    device_id=None,
) -> None:
    """Start the default process group: one rank (rank 0 of world size 1) in this process."""
    if is_initialized():
        raise ValueError("trying to initialize the default process group twice!")
    world_size, rank = _env_int("WORLD_SIZE", world_size), _env_int("RANK", rank)
    if world_size not in (-1, 1):
        raise NotImplementedError(
            f"init_process_group: world_size={world_size}: vkml runs in one process, a group has one rank"
        )
    if rank not in (-1, 0):
        raise ValueError(f"init_process_group: rank={rank} is not below world_size=1")
    _group.backend = Backend(backend) if backend is not None else Backend.GLOO


def destroy_process_group(group=None) -> None:
    """End the default process group."""
    if not is_initialized():
        raise ValueError(_NOT_INITIALIZED)
    _group.backend = None


def _check() -> None:
    if not is_initialized():
        raise ValueError(_NOT_INITIALIZED)


def get_rank(group=None) -> int:
    """0, the one rank."""
    _check()
    return 0


def get_world_size(group=None) -> int:
    """1, the one rank."""
    _check()
    return 1


def get_backend(group=None) -> str:
    """The backend's name given to ``init_process_group``."""
    _check()
    return _group.backend


def barrier(group=None, async_op: bool = False, device_ids=None):
    """Nothing to wait for with one rank."""
    _check()


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """The reduction over one rank: ``tensor`` as it is, for every ``op``."""
    _check()


def reduce(tensor, dst: int = 0, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """The reduction over one rank into ``dst`` (0): ``tensor`` as it is."""
    _check()
    if dst != 0:
        raise ValueError(f"reduce: dst={dst} is not a rank of a group of world size 1")


def broadcast(tensor, src: int = 0, group=None, async_op: bool = False):
    """From rank 0 to itself: ``tensor`` as it is."""
    _check()
    if src != 0:
        raise ValueError(f"broadcast: src={src} is not a rank of a group of world size 1")


def all_gather(tensor_list, tensor, group=None, async_op: bool = False):
    """``tensor_list[0]`` gets a copy of ``tensor`` (the one rank's)."""
    _check()
    if len(tensor_list) != 1:
        raise ValueError(f"all_gather: tensor_list has {len(tensor_list)} tensors, the group has 1 rank")
    tensor_list[0].copy_(tensor)
