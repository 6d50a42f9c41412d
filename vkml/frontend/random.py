"""Random tensors — ``manual_seed``, ``rand``, ``randn``, dropout masks — from one counter-based generator.

A generator's state is (seed, offset). Each call draws its own stream: element ``i`` of the
result is Threefry-2x32-20 of the counter (i, offset) under the key ``seed``
(vkml/ops/random.py), and ``offset`` then advances by one. Nothing random is computed on the
host or kept on a device: a random tensor is a lazy node like any other, fused into the
kernels that use it, and the same seed gives the same bits on the CPU backend and on every
Vulkan device. The seed and offset reach kernels as parameters, so a training loop that
draws new masks every step reuses the same compiled kernels.

>>> import vkml
>>> _ = vkml.manual_seed(0)
>>> a = vkml.rand(3).tolist()
>>> _ = vkml.manual_seed(0)
>>> vkml.rand(3).tolist() == a
True
"""

from __future__ import annotations

import threading

import numpy as np

from ..errors import DTypeError, ShapeError
from ..graph import build as lazy
from ..graph.node import Node, Op, Random
from ..ir import types as T
from ..ops.promotion import default_float
from ..schedule import scheduler as _scheduler
from . import memory_format as _memory_format
from . import operators as _operators
from .creation import _dtype, check_fits, size_keyword
from .devices import device as get_device
from .devices import get_default_device
from .exports import Export

# The public names of this module's ops (vkml/frontend/public.py binds them).
EXPORTS = (
    Export("rand"),
    Export("rand_like"),
    Export("randn"),
    Export("randn_like"),
)

DEFAULT_SEED = 67280421310721  # PyTorch's default seed: unseeded programs are deterministic too
_U32 = 1 << 32


# Set while a draw must raise (vmap's randomness="error"): the reason, per thread.
_forbidden = threading.local()


class Generator:
    """A stream of random tensors: (seed, offset), the offset advancing one per draw.

    >>> g = Generator().manual_seed(1)
    >>> g.get_state()
    (1, 0)
    """

    def __init__(self, seed: int = DEFAULT_SEED, *, device=None):
        self._lock = threading.Lock()  # threads drawing at once each get an offset of their own
        # PyTorch's generators belong to a device (``torch.Generator(device=device)``, as the
        # char-RNN tutorial makes one for random_split). vkml's draws are the same on every
        # device, so the device is only checked and reported (``Generator.device``).
        self._device = None if device is None else get_device(device)
        self.manual_seed(seed)

    @property
    def device(self):
        """The device given at construction (the CPU by default, as PyTorch's)."""
        return get_device("cpu") if self._device is None else self._device

    def manual_seed(self, seed: int) -> Generator:
        """Restart from ``seed`` (any integer; taken modulo 2^64)."""
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"manual_seed: the seed must be an int, got {type(seed).__name__}")
        self._seed, self._offset = seed % (1 << 64), 0
        return self

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self) -> tuple[int, int]:
        """(seed, offset): enough to replay every later draw with ``set_state``."""
        return self._seed, self._offset

    def set_state(self, state: tuple[int, int]) -> None:
        self._seed, self._offset = int(state[0]) % (1 << 64), int(state[1]) % _U32

    def next_key(self) -> tuple[int, int, int]:
        """(key word 0, key word 1, offset) for one draw; advances the offset."""
        reason = getattr(_forbidden, "reason", None)
        if reason is not None:  # inside vmap(randomness="error") (vkml/frontend/func.py)
            raise RuntimeError(reason)
        with self._lock:
            offset = self._offset
            self._offset = (offset + 1) % _U32
            seed = self._seed
        return seed % _U32, seed >> 32, offset


default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """Seed the default generator (as ``torch.manual_seed``) and return it."""
    return default_generator.manual_seed(seed)


def _shape(size) -> tuple[int, ...]:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    if any(isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, np.integer)) for s in size):
        raise TypeError(f"size must be a tuple of ints, got {size}")  # PyTorch's class
    if any(s < 0 for s in size):  # PyTorch's RuntimeError (a ShapeError is also the ValueError it was)
        raise ShapeError(f"Trying to create tensor with negative dimension: sizes must be non-negative, got {size}")
    return tuple(int(s) for s in size)


def random_tensor(kind: str, shape, dtype=None, device=None, generator: Generator | None = None):
    """A lazy tensor of ``kind`` ("uniform", "uniform_f16", "normal") random float32 values, cast to ``dtype``."""
    dtype = _dtype(dtype) or default_float()
    if not dtype.is_float:
        raise DTypeError(f"random tensors are floating point, got dtype {dtype.name}")
    shape = tuple(shape)
    numel = 1
    for s in shape:
        numel *= s
    dev = get_default_device() if device is None else get_device(device)
    check_fits("randn" if kind == "normal" else "rand", shape, dtype, dev)
    if numel >= _U32:  # threefry's counter word is the element's index
        raise ValueError(f"random tensors index their elements with 32 bits: {numel} elements is too many")
    words = (generator or default_generator).next_key()
    srcs = tuple(lazy.const_node(w, T.int32, (), dev) for w in words)  # int32 bits: parameters of the kernel
    if _scheduler.recorder is not None:  # vkml.jit draws again on replay (vkml/frontend/jit.py)
        _scheduler.recorder.drew(generator or default_generator, srcs)
    out = _operators._wrap(Node(Op.RANDOM, srcs, Random(kind), shape, T.float32, dev))
    return _operators.cast(out, dtype)


def rand(*size, generator: Generator | None = None, dtype=None, device=None, requires_grad: bool = False, **size_kw):
    """Uniform values in [0, 1): multiples of 2^-24 (float16: of 2^-11, so none rounds up to 1).

    >>> vkml.rand(2, 3).shape  # doctest: +SKIP
    (2, 3)
    """
    size = size_keyword("rand", size, size_kw)
    kind = "uniform_f16" if dtype is T.float16 or dtype == "float16" else "uniform"
    out = random_tensor(kind, _shape(size), dtype, device, generator)
    return out.requires_grad_() if requires_grad else out


def randn(*size, generator: Generator | None = None, dtype=None, device=None, requires_grad: bool = False, **size_kw):
    """Standard normal values (Box–Muller on 24-bit uniforms: |x| < 5.8, the tails beyond are cut).

    >>> vkml.randn(4, device="cpu").dtype  # doctest: +SKIP
    vkml.float32
    """
    size = size_keyword("randn", size, size_kw)
    out = random_tensor("normal", _shape(size), dtype, device, generator)
    return out.requires_grad_() if requires_grad else out


def rand_like(input, dtype=None, device=None, generator: Generator | None = None, *, memory_format=None):
    """``rand`` with ``input``'s shape, dtype and device (unless given); ``input``'s channels-last format
    unless ``memory_format`` says otherwise."""
    out = rand(input.shape, generator=generator, dtype=dtype or input.dtype, device=device or input.device)
    return _memory_format.like("rand_like", out, input, memory_format)


def randn_like(input, dtype=None, device=None, generator: Generator | None = None, *, memory_format=None):
    """``randn`` with ``input``'s shape, dtype and device (unless given); ``input``'s channels-last format
    unless ``memory_format`` says otherwise."""
    out = randn(input.shape, generator=generator, dtype=dtype or input.dtype, device=device or input.device)
    return _memory_format.like("randn_like", out, input, memory_format)


def keep_mask(shape, p: float, device, generator: Generator | None = None):
    """A bool tensor, True with probability 1 - p: which elements dropout keeps."""
    return random_tensor("uniform", shape, None, device, generator) >= float(p)
