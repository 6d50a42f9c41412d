"""Random tensors — ``manual_seed``, ``rand``, ``randn``, dropout masks — from PyTorch's CPU generator.

The default generator is PyTorch's: a Mersenne Twister (MT19937) seeded as ``torch.manual_seed``
seeds it, whose values are drawn on the host with PyTorch's CPU algorithms
(vkml/frontend/mt19937.py) and uploaded to the tensor's device. So ``vkml.manual_seed(s)``
followed by the same random calls (``rand``, ``randn``, ``nn.init``, a module's constructor)
gives PyTorch's numbers, the same bits on the CPU backend and on every Vulkan device.

Dropout masks are the exception (``keep_mask``): PyTorch's CPU mask depends on the machine (MKL's
stream on Intel CPUs, the Mersenne Twister elsewhere), so vkml keeps its fused counter-based
stream for them (Threefry-2x32-20, vkml/ops/random.py), computed inside the kernels that use the
mask. Each mask takes one word of the Mersenne Twister as its key, as PyTorch's MKL path does.

>>> import vkml
>>> _ = vkml.manual_seed(0)
>>> [round(v, 4) for v in vkml.rand(3).tolist()]
[0.4963, 0.7682, 0.0885]
"""

from __future__ import annotations

import os
import threading

import numpy as np

from .. import tensor as _tensor
from ..errors import DTypeNotImplementedError, ShapeError
from ..graph import build as lazy
from ..graph.node import Node, Op, Random
from ..ir import types as T
from ..ops.promotion import default_float
from ..schedule import scheduler as _scheduler
from . import creation as _creation
from . import memory_format as _memory_format
from . import mt19937
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

DEFAULT_SEED = 67280421310721  # PyTorch's older fixed default: unseeded vkml programs stay deterministic
_U32 = 1 << 32
_U64 = 1 << 64


# Set while a draw must raise (vmap's randomness="error"): the reason, per thread.
_forbidden = threading.local()


class Generator:
    """PyTorch's CPU generator: a Mersenne Twister (vkml/frontend/mt19937.py) drawn on the host.

    The same seed gives PyTorch's CPU values, on every vkml device. ``get_state`` is PyTorch's
    5056-byte state, as a uint8 tensor.

    >>> g = Generator().manual_seed(1)
    >>> g.initial_seed()
    1
    """

    def __init__(self, seed: int = DEFAULT_SEED, *, device=None):
        self._lock = threading.Lock()  # one draw at a time: threads drawing at once each get their own words
        # PyTorch's generators belong to a device (``torch.Generator(device=device)``, as the
        # char-RNN tutorial makes one for random_split). vkml's draws are the same on every
        # device, so the device is only checked and reported (``Generator.device``).
        self._device = None if device is None else get_device(device)
        self._engine = mt19937.Engine(DEFAULT_SEED)
        self.manual_seed(seed)

    @property
    def device(self):
        """The device given at construction (the CPU by default, as PyTorch's)."""
        return get_device("cpu") if self._device is None else self._device

    def manual_seed(self, seed: int) -> Generator:
        """Restart from ``seed`` (an int in [-2^63, 2^64), kept modulo 2^64, as PyTorch's)."""
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
        seed = int(seed)
        if not -(1 << 63) <= seed < _U64:
            raise ValueError(
                f"manual_seed: seed {seed} is outside [-2^63, 2^64) (PyTorch's: Overflow when unpacking long long)"
            )
        with self._lock:
            self._engine.seed(seed % _U64)
        return self

    def seed(self) -> int:
        """Seed from the operating system's entropy (as ``Generator.seed``) and return the seed."""
        value = int.from_bytes(os.urandom(8), "little")  # as secrets.randbits(64), without its hmac import
        self.manual_seed(value)
        return value

    def initial_seed(self) -> int:
        return self._engine.initial_seed

    def get_state(self):
        """PyTorch's ``CPUGeneratorImplState`` bytes (seed, the 624 words, the normal cache): a uint8 tensor."""
        with self._lock:
            raw = self._engine.state_bytes()
        return _creation.tensor(np.frombuffer(raw, np.uint8).copy(), dtype=T.uint8, device="cpu")  # as PyTorch's

    def set_state(self, new_state) -> Generator:
        """Restore a state ``get_state`` (or PyTorch's ``Generator.get_state``) gave."""
        self._engine_load(state_bytes("set_state", new_state))
        return self

    def _engine_load(self, raw: bytes) -> None:
        with self._lock:
            self._engine.load_state_bytes(raw)

    def draw(self, fn, *args):
        """``fn(engine, *args)`` under the lock: one host draw of PyTorch's stream."""
        reason = getattr(_forbidden, "reason", None)
        if reason is not None:  # inside vmap(randomness="error") (vkml/frontend/func.py)
            raise RuntimeError(reason)
        with self._lock:
            return fn(self._engine, *args)

    def next_key(self) -> tuple[int, int, int]:
        """(key word 0, key word 1, offset) of a Threefry stream for one fused draw (dropout masks).

        Word 0 is one 32-bit word of the Mersenne Twister, as PyTorch's MKL dropout path takes one
        ``random()`` to seed its stream; word 1 the seed's low half, the offset 0.
        """
        return self.draw(mt19937.Engine.word), self._engine.initial_seed % _U32, 0


def state_bytes(op: str, new_state) -> bytes:
    """The bytes of a generator state given to ``op``: a uint8 tensor of 5056 elements (PyTorch's size)."""
    if not isinstance(new_state, _tensor.Tensor):
        raise TypeError(f"{op}(): expected a vkml.uint8 tensor, but got {type(new_state).__name__}")
    if new_state.dtype is not T.uint8:
        raise TypeError(f"{op}(): RNG state must be a vkml.ByteTensor (a vkml.uint8 tensor), got {new_state.dtype}")
    if new_state.numel() != mt19937.STATE_BYTES:
        raise RuntimeError(
            f"{op}(): expected a generator state of {mt19937.STATE_BYTES} bytes (PyTorch's CPU state), "
            f"but found {new_state.numel()}"
        )
    return new_state.numpy().astype(np.uint8).tobytes()


default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """Seed the default generator (as ``torch.manual_seed``) and return it.

    ``seed`` goes through ``int()`` first, as PyTorch's: ``manual_seed(1.5)`` seeds with 1.
    """
    return default_generator.manual_seed(int(seed))


def _shape(size) -> tuple[int, ...]:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    if any(isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, np.integer)) for s in size):
        raise TypeError(f"size must be a tuple of ints, got {size}")  # PyTorch's class
    if any(s < 0 for s in size):  # PyTorch's RuntimeError (a ShapeError is also the ValueError it was)
        raise ShapeError(f"Trying to create tensor with negative dimension: sizes must be non-negative, got {size}")
    return tuple(int(s) for s in size)


def host_draw(op: str, shape, dtype, device, generator: Generator | None, fn, *args):
    """A tensor of ``shape`` holding ``fn(engine, numel, *args)``'s values, drawn on the host and uploaded.

    ``fn``'s values come in the dtype PyTorch computes them in (float32, float64 or int64) and
    are converted to ``dtype``. Inside ``vkml.jit`` the draw is recorded, so that each replay
    draws anew (vkml/frontend/jit.py).
    """
    shape = tuple(shape)
    dev = get_default_device() if device is None else get_device(device)
    check_fits(op, shape, dtype, dev)
    numel = 1
    for s in shape:
        numel *= s
    if numel >= _U32:  # a host array of 2^32 values or more: never a useful draw on a vkml device
        raise ValueError(f"{op}(): random tensors hold fewer than 2^32 elements, got {numel}")
    if dev.kind == "meta":  # no values to draw: the generator stays where it is, as PyTorch's
        return _operators.meta_tensor(shape, dtype)
    gen = generator or default_generator

    def upload():
        values = np.asarray(gen.draw(fn, numel, *args))
        kind = {"f": T.float64 if values.dtype == np.float64 else T.float32, "b": T.bool_}.get(
            values.dtype.kind, T.int64
        )
        return _operators._from_numpy(values.astype(kind.np, copy=False).reshape(shape), dev, kind)

    drawn = upload()
    if _scheduler.recorder is not None:  # vkml.jit: a replay draws these values anew, as an input
        _scheduler.recorder.host_drew(op, gen, drawn.node, upload)
    return drawn if drawn.dtype is dtype else _operators.cast(drawn, dtype)


def _float_dtype(op: str, dtype):
    dtype = _dtype(dtype) or default_float()
    if not dtype.is_float:
        # PyTorch's kernels have no other dtype: its NotImplementedError
        raise DTypeNotImplementedError(f"random tensors are floating point, got dtype {dtype.name}")
    return dtype


def uniform_values(
    op: str, shape, low: float, high: float, dtype=None, device=None, generator: Generator | None = None
):
    """``uniform_(low, high)``'s values for a new tensor: PyTorch's CPU draw (vkml/frontend/mt19937.py)."""
    dtype = _float_dtype(op, dtype)
    return host_draw(op, shape, dtype, device, generator, mt19937.uniform, dtype.name, low, high)


def normal_values(op: str, shape, mean: float, std: float, dtype=None, device=None, generator: Generator | None = None):
    """``normal_(mean, std)``'s values for a new tensor: PyTorch's CPU draw (vkml/frontend/mt19937.py)."""
    dtype = _float_dtype(op, dtype)
    work = dtype.name if dtype in (T.float64, T.float16, T.bfloat16) else "float32"
    return host_draw(op, shape, dtype, device, generator, mt19937.normal, work, mean, std)


def random_tensor(kind: str, shape, dtype=None, device=None, generator: Generator | None = None):
    """A tensor of ``kind`` ("uniform", "uniform_f16", "normal") random values in ``dtype``, PyTorch's draws."""
    if kind == "normal":
        return normal_values("randn", shape, 0.0, 1.0, dtype, device, generator)
    return uniform_values("rand", shape, 0.0, 1.0, dtype, device, generator)


def threefry_tensor(shape, device, generator: Generator | None = None):
    """A lazy float32 tensor of uniforms in [0, 1) from a fused Threefry stream, keyed by one word of
    ``generator`` (``Generator.next_key``): computed in the kernels that use it, never uploaded."""
    shape = tuple(shape)
    numel = 1
    for s in shape:
        numel *= s
    dev = get_default_device() if device is None else get_device(device)
    check_fits("dropout", shape, T.float32, dev)
    if numel >= _U32:  # threefry's counter word is the element's index
        raise ValueError(f"random tensors index their elements with 32 bits: {numel} elements is too many")
    if dev.kind == "meta":  # no values to draw: the generator stays where it is, as PyTorch's
        return _operators.meta_tensor(shape, T.float32)
    words = (generator or default_generator).next_key()
    # int32 bits: parameters of the kernel, new every draw (``Stepping``: an eager replay reads them from a ring)
    srcs = tuple(lazy.stepping_const_node(w, T.int32, dev) for w in words)
    if _scheduler.recorder is not None:  # vkml.jit draws again on replay (vkml/frontend/jit.py)
        _scheduler.recorder.drew(generator or default_generator, srcs)
    return _operators._wrap(Node(Op.RANDOM, srcs, Random("uniform"), shape, T.float32, dev))


def rand(*size, generator: Generator | None = None, dtype=None, device=None, requires_grad: bool = False, **size_kw):
    """Uniform values in [0, 1): PyTorch's CPU draws for the same seed (docs/random.md).

    One 32-bit word each, its low 24 bits times 2^-24 (float64: 53 bits of two words); float16 and
    bfloat16 round the float32 value (which may round up to 1, as PyTorch's).

    >>> vkml.rand(2, 3).shape  # doctest: +SKIP
    (2, 3)
    """
    size = size_keyword("rand", size, size_kw)
    out = uniform_values("rand", _shape(size), 0.0, 1.0, dtype, device, generator)
    return out.requires_grad_() if requires_grad else out


def randn(*size, generator: Generator | None = None, dtype=None, device=None, requires_grad: bool = False, **size_kw):
    """Standard normal values: PyTorch's CPU draws for the same seed (docs/random.md).

    Box–Muller over blocks of 16 uniforms; fewer than 16 values take the double-precision scalar
    path with its cached second value (vkml/frontend/mt19937.py).

    >>> vkml.randn(4, device="cpu").dtype  # doctest: +SKIP
    vkml.float32
    """
    size = size_keyword("randn", size, size_kw)
    out = normal_values("randn", _shape(size), 0.0, 1.0, dtype, device, generator)
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
    """A bool tensor, True with probability 1 - p: which elements dropout keeps (a fused Threefry stream:
    not PyTorch's mask, whose stream depends on the CPU's vendor; docs/ops/dropout.md)."""
    return threefry_tensor(shape, device, generator) >= float(p)
