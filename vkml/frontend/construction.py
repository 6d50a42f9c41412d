"""More creation ops with PyTorch's names: eye, linspace, logspace, empty, and the random ones.

The deterministic ones (eye, linspace, logspace) are computed on the host, as ``arange`` is,
with PyTorch's formulas, and uploaded. The random ones draw from vkml's counter-based
generator (vkml/frontend/random.py): ``randint``, ``bernoulli``, ``normal`` and
``multinomial`` are lazy compositions of its uniform and normal draws, computed where they are
used; ``randperm`` sorts Threefry keys on the host. Either way the same seed gives the same
bits on the CPU backend and on every Vulkan device (not PyTorch's values: its generator differs).

>>> import vkml
>>> vkml.eye(2).tolist()
[[1.0, 0.0], [0.0, 1.0]]
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import DTypeError
from ..graph import build as lazy
from ..ir import types as T
from ..ops import random as threefry
from ..ops.cast import bf16_bits_to_float, float_to_bf16_bits
from ..ops.promotion import default_float, promote_types
from . import memory_format as _memory_format
from . import operators as F
from . import random as R
from .creation import _device, _dtype, _size_args, full, size_keyword, tensor
from .exports import Export
from .shape import triu


def _number(op: str, name: str, value):
    if isinstance(value, F._tensor.Tensor):
        if value.numel() != 1:
            raise RuntimeError(f"{op}(): argument '{name}' must be a number or a one-element tensor")
        return value.item()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{op}(): argument '{name}' must be a number, not {type(value).__name__}")
    return value


def _finish(out, requires_grad: bool):
    if requires_grad:
        out.requires_grad = True
    return out


# ---------------------------------------------------------------------- deterministic


def eye(n: int, m: int | None = None, *, dtype=None, device=None, requires_grad: bool = False):
    """An ``n`` × ``m`` matrix (``m = n`` by default) with ones on the diagonal (float32 unless ``dtype``)."""
    for name, v in (("n", n), ("m", m)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer))):
            raise TypeError(f"eye(): argument '{name}' must be int, not {type(v).__name__}")
    if n < 0:
        raise RuntimeError(f"'eye': n must be greater or equal to 0, got {n}")
    m = n if m is None else m
    if m < 0:
        raise RuntimeError(f"'eye': m must be greater or equal to 0, got {m}")
    dtype = _dtype(dtype) or default_float()
    return _finish(tensor(np.eye(n, m, dtype=dtype.value_np), dtype=dtype, device=device), requires_grad)


def _linspace_values(op: str, start, end, steps: int, dtype) -> np.ndarray:
    """PyTorch's CPU formula: ``start + i·step`` for the first half, ``end - (steps-1-i)·step`` for the rest.

    ``step = (end - start) / (steps - 1)``, all in the dtype's precision (float16 rounds each
    operation, as c10::Half does, and bfloat16 as c10::BFloat16 does); integer dtypes truncate the
    ends to integers, compute in float64 and truncate the values. PyTorch's vectorized loop rounds some float elements
    differently: within an ulp of the larger end.
    """
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)):
        raise TypeError(f"{op}(): argument 'steps' must be int, not {type(steps).__name__}")
    if steps < 0:
        raise RuntimeError(f"{op}(): number of steps must be non-negative")
    work = dtype.value_np.type if dtype.is_float else np.float64
    if not dtype.is_float:  # PyTorch converts the ends to the integer dtype first (truncating, wrapping)
        start, end = (int(np.array(math.trunc(v)).astype(dtype.np)) for v in (start, end))
    i = np.arange(steps)
    # bfloat16 rounds each operation (c10::BFloat16 computes in float32 and rounds back), float16 too
    # (numpy's float16 arithmetic does); the other dtypes' arithmetic is their own.
    r = (lambda v: bf16_bits_to_float(float_to_bf16_bits(v))) if dtype is T.bfloat16 else (lambda v: v)
    with np.errstate(all="ignore"):
        a, b = r(work(start)), r(work(end))
        if steps == 1:
            return np.array([a], work)
        step = r(r(b - a) / r(work(steps - 1))) if steps > 1 else work(0)
        first = r(a + r(step * i.astype(work)))
        second = r(b - r(step * r((steps - 1 - i).astype(work))))
        return np.where(i < steps // 2, first, second).astype(work)


def linspace(start, end, steps: int, *, dtype=None, device=None, requires_grad: bool = False):
    """``steps`` values evenly spaced from ``start`` to ``end`` (both included), by PyTorch's CPU formula.

    Integer dtypes compute in float64 and truncate toward zero, as PyTorch.
    """
    start, end = _number("linspace", "start", start), _number("linspace", "end", end)
    dtype = _dtype(dtype) or default_float()
    if dtype is T.bool_:
        raise RuntimeError("\"linspace_cpu\" not implemented for 'Bool'")
    values = _linspace_values("linspace", start, end, steps, dtype)
    with np.errstate(invalid="ignore"):
        out = values.astype(dtype.value_np)
    return _finish(tensor(out, dtype=dtype, device=device), requires_grad)


def logspace(start, end, steps: int, base: float = 10.0, *, dtype=None, device=None, requires_grad: bool = False):
    """``base ** linspace(start, end, steps)``: powers computed in the dtype's precision (float64 for integers)."""
    start, end = _number("logspace", "start", start), _number("logspace", "end", end)
    base = _number("logspace", "base", base)
    dtype = _dtype(dtype) or default_float()
    if dtype is T.bool_:
        raise RuntimeError("\"logspace_cpu\" not implemented for 'Bool'")
    exponents = _linspace_values("logspace", start, end, steps, dtype)
    work = exponents.dtype.type
    with np.errstate(all="ignore"):
        values = np.power(work(base), exponents).astype(dtype.value_np)
    return _finish(tensor(values, dtype=dtype, device=device), requires_grad)


def empty(*size, dtype=None, device=None, requires_grad: bool = False, memory_format=None, **size_kw):
    """A tensor of ``size`` whose values are unspecified: in vkml, zeros (a constant, no memory written)."""
    size = size_keyword("empty", size, size_kw)
    out = full(_size_args(size), 0, dtype=_dtype(dtype) or default_float(), device=device)
    if memory_format is not None:
        _memory_format.check("empty", memory_format, out.ndim)
        if memory_format is _memory_format.preserve_format:
            raise RuntimeError("preserve memory format is unsupported by the empty operator")  # PyTorch's
        _memory_format.mark(out, memory_format)
    return _finish(out, requires_grad)


def empty_like(input, *, dtype=None, device=None, requires_grad: bool = False, memory_format=None):
    """``empty`` with ``input``'s shape, dtype and device (unless given): zeros in vkml."""
    node = F._tensor_node("empty_like", input)
    out = full(node.shape, 0, dtype=_dtype(dtype) or node.dtype, device=device or node.device)
    return _finish(_memory_format.like("empty_like", out, input, memory_format), requires_grad)


# ---------------------------------------------------------------------- random


def _shape_of(op: str, size) -> tuple[int, ...]:
    if isinstance(size, (int, np.integer)) and not isinstance(size, bool):
        size = (size,)
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"{op}(): argument 'size' must be a tuple of ints, not {type(size).__name__}")
    return _size_args(tuple(size))


def randint(low=None, high=None, size=None, *, generator=None, dtype=None, device=None, requires_grad: bool = False):
    """Integers uniform in [low, high) (``randint(high, size)`` starts at 0); int64 unless ``dtype``.

    A range of n ≤ 2^24 values takes ``low + floor(k·n / 2^24)`` for a 24-bit uniform k
    (exact integer arithmetic): each value has probability floor or ceil of 2^24/n over 2^24.
    A wider range takes ``low + (k mod n)`` for a 48-bit uniform k (two draws of the
    generator): each value within n·2^-48 of uniform (relative). Ranges wider than 2^40 values
    are an error (PyTorch takes any int64 range).
    """
    if size is None:
        if high is None:
            raise TypeError("randint() missing required argument 'size'")
        low, high, size = 0, low, high
    elif high is None:
        low, high = 0, low
    if low is None:  # randint(high=..., size=...)
        low = 0
    if high is None:
        raise TypeError("randint() missing required argument 'high'")
    low, high = int(_number("randint", "low", low)), int(_number("randint", "high", high))
    shape = _shape_of("randint", size)
    if low >= high:
        raise RuntimeError(f"'randint': random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    dtype = _dtype(dtype) or T.int64
    if dtype is T.bool_ and (low < 0 or high > 2):
        raise RuntimeError(f"'randint': random_ expects 'from' and 'to' to fit bool, got from={low}, to={high}")
    if not dtype.is_float and dtype is not T.bool_:
        lazy.check_scalar_fits("randint", low, dtype)
        lazy.check_scalar_fits("randint", high - 1, dtype)
    span = high - low
    if span > 1 << 40:  # a 48-bit draw reduced mod span would be visibly non-uniform beyond
        raise RuntimeError(f"'randint': ranges wider than 2^40 values are not supported (got high - low = {span})")
    if span <= _BITS24:
        offset = _scaled_draw(shape, span, generator, device)
    else:
        offset = _reduced_draw(shape, span, generator, device)
    return _finish(F.cast(F.add(offset, low), dtype), requires_grad)


_BITS24 = 1 << 24


def _draw24(shape, generator, device):
    """A 24-bit uniform integer (int64) from one ``rand`` draw: u·2^24 is exact (u is a multiple of 2^-24)."""
    return F.cast(F.mul(R.rand(shape, generator=generator, device=device), float(_BITS24)), T.int64)


def _scaled_draw(shape, span: int, generator, device):
    """floor(k·span / 2^24) for a 24-bit uniform k, exactly: a float32 estimate corrected in int64.

    k·span < 2^48 is exact in int64; the float32 quotient is within one of the floor (its
    rounding is below one unit for a result below 2^24), and two exact comparisons fix it.
    """
    k = _draw24(shape, generator, device)
    product = F.mul(k, span)
    q = F.cast(F.mul(F.cast(product, T.float32), 1.0 / _BITS24), T.int64)  # (the multiply is exact)
    q = F.where(F.gt(F.mul(q, _BITS24), product), F.sub(q, 1), q)
    return F.where(F.le(F.mul(F.add(q, 1), _BITS24), product), F.add(q, 1), q)


def _reduced_draw(shape, span: int, generator, device):
    """k mod span for a 48-bit uniform k (two draws): bias below span·2^-48 (relative).

    The quotient comes from float32 (within 4 of the truth for span > 2^24, k < 2^48); the
    remainder k - q·span is exact in int64 and moved into [0, span) by exact corrections.
    """
    k = F.add(F.mul(_draw24(shape, generator, device), _BITS24), _draw24(shape, generator, device))
    q = F.cast(F.div(F.cast(k, T.float32), float(span)), T.int64)
    r = F.sub(k, F.mul(q, span))
    for _ in range(4):
        r = F.where(F.lt(r, 0), F.add(r, span), r)
        r = F.where(F.ge(r, span), F.sub(r, span), r)
    return r


def randint_like(input, low=0, high=None, *, generator=None, dtype=None, device=None, requires_grad: bool = False):
    """``randint`` with ``input``'s shape, dtype and device (unless given); ``randint_like(x, high)`` starts at 0."""
    node = F._tensor_node("randint_like", input)
    if high is None:
        low, high = 0, low
    return randint(
        low,
        high,
        node.shape,
        generator=generator,
        dtype=_dtype(dtype) or node.dtype,
        device=device or node.device,
        requires_grad=requires_grad,
    )


def randperm(n: int, *, generator=None, dtype=None, device=None, requires_grad: bool = False):
    """A random permutation of ``0 .. n-1`` (int64 unless ``dtype``): Threefry keys sorted on the host.

    Element i's key is the Threefry-2x32-20 word of counter (i, the draw's offset) under the
    seed; the permutation orders the keys (ties by index), so it is the same on every device.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"randperm(): argument 'n' must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError(f"'randperm': Trying to create tensor with negative dimension {n}: [{n}]")
    if n >= 1 << 32:
        raise ValueError(f"randperm(): {n} elements is more than vkml addresses (2^32)")
    dtype = _dtype(dtype) or T.int64
    if not dtype.is_float and dtype is not T.bool_ and n:
        lazy.check_scalar_fits("randperm", n - 1, dtype)
    k0, k1, offset = (generator or R.default_generator).next_key()
    u32 = np.uint32
    index = np.arange(n, dtype=u32)
    with np.errstate(over="ignore"):
        w0, _ = threefry.threefry2x32(index, np.full(n, offset, u32), u32(k0), u32(k1))
    order = np.argsort(w0, kind="stable")
    return _finish(tensor(order.astype(dtype.value_np), dtype=dtype, device=_device(device)), requires_grad)


def bernoulli(input, p=None, *, generator=None):
    """1 with probability ``input`` (or ``p``), else 0, in ``input``'s dtype: ``rand < p``.

    ``rand``'s 24-bit uniforms make the probability ``ceil(p·2^24)·2^-24``. Probabilities
    outside [0, 1] in a tensor are not checked (PyTorch's CPU op reads them back to check).
    """
    node = F._tensor_node("bernoulli", input)
    if not node.dtype.is_float:
        raise DTypeError(f"bernoulli(): expected a floating point tensor, got {node.dtype.name}")
    if p is not None:
        p = _number("bernoulli", "p", p)
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
        probs = p
    else:
        probs = input
    u = R.rand(node.shape, generator=generator, device=node.device)
    return F.cast(F.lt(u, probs), node.dtype)


def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, device=None, requires_grad: bool = False):
    """Normal values ``randn·std + mean``: tensor or float ``mean`` and ``std`` (broadcast), or floats and ``size``.

    A negative float ``std`` is PyTorch's error; a tensor ``std`` is not read back to check.
    Differentiable in tensor ``mean`` and ``std`` (the reparameterization: PyTorch gives none).
    """
    mean_t, std_t = isinstance(mean, F._tensor.Tensor), isinstance(std, F._tensor.Tensor)
    if not std_t:
        std = _number("normal", "std", std)
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    if not mean_t:
        mean = _number("normal", "mean", mean)
    if mean_t or std_t:
        if size is not None:
            raise TypeError("normal(): size is only taken with float mean and std")
        tensors = [t for t in (mean, std) if isinstance(t, F._tensor.Tensor)]
        for t in tensors:
            if not t.dtype.is_float:
                raise DTypeError(f"normal expects floating point mean and std, got {t.dtype.name}")
        shape = tensors[0].shape if len(tensors) == 1 else lazy.broadcast_shapes("normal", mean.shape, std.shape)
        dev = tensors[0].device
        dtype = tensors[0].dtype if len(tensors) == 1 else promote_types(mean.dtype, std.dtype)
        z = R.randn(shape, generator=generator, device=dev)
        return F.cast(F.add(F.mul(z, std), mean), dtype)
    if size is None:
        raise TypeError("normal(): with float mean and std, size is required")
    shape = _shape_of("normal", size)
    dtype = _dtype(dtype) or default_float()
    z = R.randn(shape, generator=generator, device=device)
    return _finish(F.cast(F.add(F.mul(z, float(std)), float(mean)), dtype), requires_grad)


def multinomial(input, num_samples: int, replacement: bool = False, *, generator=None):
    """Category indices (int64) drawn with weights ``input`` (1-D, or rows of a 2-D tensor).

    With replacement: each draw finds its uniform times the total among the running sums of
    the weights (the sums a ``matmul`` with a triangle of ones, in ascending order). Without:
    the exponential race (Gumbel top-k): category j gets key ``log w_j - log E_j`` with E_j an
    exponential draw, and the samples are the categories in decreasing key order, found by
    ranking (n² comparisons a row). Weights are not read back: negative, NaN or all-zero rows
    give unspecified samples where PyTorch raises.
    """
    node = F._tensor_node("multinomial", input)
    if len(node.shape) not in (1, 2):
        raise RuntimeError("'multinomial': prob_dist must be 1 or 2 dim")
    if not node.dtype.is_float:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: {node.dtype.name}")
    if isinstance(num_samples, bool) or not isinstance(num_samples, (int, np.integer)):
        raise TypeError(f"multinomial(): argument 'num_samples' must be int, not {type(num_samples).__name__}")
    n = node.shape[-1]
    if num_samples <= 0:
        raise RuntimeError("'multinomial': cannot sample n_sample <= 0 samples")
    if n == 0:
        raise RuntimeError("'multinomial': number of categories cannot be zero")
    if not replacement and num_samples > n:
        raise RuntimeError("'multinomial': cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    rows = F.reshape(F.cast(input, T.float32), -1, n)
    count = rows.shape[0]
    dev = node.device
    if replacement:
        upper = F.cast(F._wrap(lazy.const_node(True, T.bool_, (n, n), dev)), T.float32)
        cdf = F.matmul(rows, triu(upper))  # (count, n): cdf[r, j] = sum of weights 0..j
        total = F.getitem(cdf, (slice(None), slice(n - 1, n)))
        u = R.rand((count, num_samples), generator=generator, device=dev)
        target = F.mul(u, total)  # (count, S)
        below = F.le(F.unsqueeze(cdf, 1), F.unsqueeze(target, 2))  # (count, S, n)
        picks = F.minimum(F.sum(below, -1), n - 1)
    else:
        u = R.rand((count, n), generator=generator, device=dev)
        race = F.neg(F.log(F.sub(1.0, u)))  # exponential draws, in (0, 17]: 1 - u is in (0, 1]
        # a zero weight's key is -inf (not log 0 - log 0 = NaN when its race is 0): drawn last
        keys = F.where(F.gt(rows, 0.0), F.sub(F.log(rows), F.log(race)), float("-inf"))
        mine, theirs = F.unsqueeze(keys, 2), F.unsqueeze(keys, 1)  # (count, n, 1), (count, 1, n)
        index = tensor(np.arange(n), device=dev)
        earlier = F.lt(F.reshape(index, 1, 1, n), F.reshape(index, 1, n, 1))  # i < j
        beats = F.logical_or(F.gt(theirs, mine), F.logical_and(F.eq(theirs, mine), earlier))
        rank = F.sum(beats, -1)  # (count, n): how many categories come before j
        slots = tensor(np.arange(num_samples), device=dev)
        hit = F.eq(F.unsqueeze(rank, 2), F.reshape(slots, 1, 1, num_samples))  # (count, n, S)
        picks = F.sum(F.mul(hit, F.reshape(index, 1, n, 1)), 1)
    picks = F.cast(picks, T.int64)
    return F.reshape(picks, num_samples) if len(node.shape) == 1 else picks


# The public names (vkml/frontend/public.py binds them): ``x.bernoulli()``, ``x.multinomial(n)`` too.
EXPORTS = (
    Export("bernoulli", method=True),
    Export("empty"),
    Export("empty_like"),
    Export("eye"),
    Export("linspace"),
    Export("logspace"),
    Export("multinomial", method=True),
    Export("normal"),
    Export("randint"),
    Export("randint_like"),
    Export("randperm"),
)
