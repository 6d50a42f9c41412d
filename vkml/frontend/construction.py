"""More creation ops with PyTorch's names: eye, linspace, logspace, empty, and the random ones.

The deterministic ones (eye, linspace, logspace) are computed on the host, as ``arange`` is,
with PyTorch's formulas, and uploaded. The random ones draw PyTorch's CPU values from vkml's
generator, which is PyTorch's (vkml/frontend/random.py, vkml/frontend/mt19937.py): the same
seed gives PyTorch's values, the same bits on the CPU backend and on every Vulkan device.

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
from ..ops.cast import bf16_bits_to_float, float_to_bf16_bits
from ..ops.promotion import default_float, promote_types
from . import complex as _complex
from . import memory_format as _memory_format
from . import mt19937, sorting
from . import operators as F
from . import random as R
from .creation import FACTORY_GRAD_MESSAGE, _device, _dtype, _size_args, full, size_keyword, tensor
from .exports import Export


def _number(op: str, name: str, value, bools: bool = False):
    """``value`` as a Python number; ``bools``: a bool is one (PyTorch's Number arguments: linspace's
    start and end), else its TypeError (randint's int arguments)."""
    if bools and isinstance(value, bool):
        return int(value)
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
        out._set_requires_grad(True, FACTORY_GRAD_MESSAGE)
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


def _linspace_values(op: str, start, end, steps: int, dtype, fused: bool = True) -> np.ndarray:
    """PyTorch's CPU formula: ``start + i·step`` for the first half, ``end - (steps-1-i)·step`` for the rest.

    ``step = (end - start) / (steps - 1)``, all in the dtype's precision (float16 rounds each
    operation, as c10::Half does, and bfloat16 as c10::BFloat16 does); integer dtypes truncate the
    ends to integers, compute in float64 and truncate the values. PyTorch's compiler contracts
    ``start + step * i`` into one fused multiply-add for float32, float64 and the integers (its
    kernels are built for FMA-capable CPUs), so each value is rounded once (``_fused_multiply_add``).
    ``fused=False``: the product and the sum rounded apart, as PyTorch's logspace (built for any x86 CPU).
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
        if fused and work in (np.float32, np.float64) and dtype is not T.bfloat16:
            first = _fused_multiply_add(step, i.astype(work), a)
            second = _fused_multiply_add(-step, (steps - 1 - i).astype(work), b)
        else:  # c10::Half and c10::BFloat16 round each operation: nothing to contract
            first = r(a + r(step * r(i.astype(work))))  # the index converts to the dtype first
            second = r(b - r(step * r((steps - 1 - i).astype(work))))
        return np.where(i < steps // 2, first, second).astype(work)


def _two_sum(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``x + y`` rounded, and its rounding error exactly (Knuth's TwoSum)."""
    s = x + y
    back = s - x
    return s, (x - (s - back)) + (y - back)


def _fused_multiply_add(x, y: np.ndarray, z) -> np.ndarray:
    """``x * y + z`` rounded once to ``y``'s dtype (float32 or float64), as C's ``fma``.

    float32: the product is exact in float64 and the sum's float64 rounding error is known, so the one
    float32 rounding is corrected where float64 rounded onto a float32 tie. float64: Dekker's exact
    product and TwoSum, then the low parts added (correct except where they meet a tie, which the
    values linspace makes do not)."""
    if y.dtype == np.float32:
        product = np.float64(x) * y.astype(np.float64)
        total, error = _two_sum(product, np.full_like(product, np.float64(z)))
        rounded = total.astype(np.float32)
        wide = rounded.astype(np.float64)
        toward = np.nextafter(rounded, np.where(total > wide, np.float32(np.inf), np.float32(-np.inf)))
        tie = (total != wide) & (total == (wide + toward.astype(np.float64)) / 2) & (error != 0)
        past = (error > 0) == (toward.astype(np.float64) > wide)  # the exact value lies beyond the tie
        return np.where(tie & past, toward, rounded)
    x = np.float64(x)
    product = x * y
    split = 134217729.0  # 2**27 + 1: Veltkamp's split of a float64 into two 26-bit halves
    x_hi = x * split - (x * split - x)
    y_hi = y * split - (y * split - y)
    x_lo, y_lo = x - x_hi, y - y_hi
    product_error = ((x_hi * y_hi - product) + x_hi * y_lo + x_lo * y_hi) + x_lo * y_lo
    total, error = _two_sum(product, np.full_like(product, z))
    return total + (product_error + error)


def linspace(start, end, steps: int, *, dtype=None, device=None, requires_grad: bool = False):
    """``steps`` values evenly spaced from ``start`` to ``end`` (both included), by PyTorch's CPU formula.

    Integer dtypes compute in float64 and truncate toward zero, as PyTorch.
    """
    if isinstance(start, complex) or isinstance(end, complex):
        return _complex_linspace("linspace", start, end, steps, dtype, device, requires_grad)
    start, end = _number("linspace", "start", start, True), _number("linspace", "end", end, True)
    dtype = _dtype(dtype) or default_float()
    if dtype is T.bool_:
        raise RuntimeError("\"linspace_cpu\" not implemented for 'Bool'")
    values = _linspace_values("linspace", start, end, steps, dtype)
    with np.errstate(invalid="ignore"):
        out = values.astype(dtype.value_np)
    return _finish(tensor(out, dtype=dtype, device=device), requires_grad)


def _complex_dtype_check(op: str, dtype):
    """PyTorch's error for complex ends with a real ``dtype``; returns the complex dtype to use."""
    dtype = _dtype(dtype)
    if dtype is not None and dtype not in (T.complex64, T.complex128):
        inferred = "c10::complex<double>" if default_float() is T.float64 else "c10::complex<float>"
        raise RuntimeError(
            f"torch.{op}(): inferred dtype {inferred} can't be safely cast to passed dtype "
            f"{F._mutation.torch_name(dtype)}"
        )
    return dtype or (T.complex128 if default_float() is T.float64 else T.complex64)


def _complex_linspace(op: str, start, end, steps: int, dtype, device, requires_grad: bool):
    """``linspace`` of complex ends: the real and the imaginary parts spaced each, as PyTorch's."""
    dtype = _complex_dtype_check(op, dtype)
    real = T.float64 if dtype is T.complex128 else T.float32
    start, end = complex(start), complex(end)
    parts = (linspace(start.real, end.real, steps, dtype=real, device=device),)
    parts += (linspace(start.imag, end.imag, steps, dtype=real, device=device),)
    return _finish(_complex.make_complex(*parts), requires_grad)


def logspace(start, end, steps: int, base: float = 10.0, *, dtype=None, device=None, requires_grad: bool = False):
    """``base ** linspace(start, end, steps)``: powers computed in the dtype's precision (float64 for integers
    and for float16 and bfloat16, whose ends and their difference round to the dtype first, as PyTorch's)."""
    if isinstance(start, complex) or isinstance(end, complex):
        _complex_dtype_check("logspace", dtype)
        raise NotImplementedError("logspace(): complex ends are not supported")
    start, end = _number("logspace", "start", start, True), _number("logspace", "end", end, True)
    base = _number("logspace", "base", base)
    dtype = _dtype(dtype) or default_float()
    if dtype is T.bool_:
        raise RuntimeError("\"logspace_cpu\" not implemented for 'Bool'")
    if dtype.is_float:
        values = _float_logspace_values(start, end, steps, base, dtype)
    else:
        exponents = _linspace_values("logspace", start, end, steps, dtype)
        with np.errstate(all="ignore"):
            values = np.power(exponents.dtype.type(base), exponents).astype(dtype.value_np)
    return _finish(tensor(values, dtype=dtype, device=device), requires_grad)


def _float_logspace_values(start, end, steps: int, base, dtype) -> np.ndarray:
    """PyTorch's CPU logspace for the float dtypes: the ends rounded to the dtype and their difference
    computed in it (c10::Half and c10::BFloat16 round it too), then the step, the exponents and the powers
    in float64 (``std::pow(double, double)``), and one rounding of each power to the dtype (through
    float32 for the half dtypes, as their constructors)."""
    _linspace_values("logspace", start, end, steps, dtype)  # the argument checks
    if dtype in (T.float16, T.bfloat16):
        round_to = (lambda v: bf16_bits_to_float(float_to_bf16_bits(v))) if dtype is T.bfloat16 else np.float16
    else:
        round_to = dtype.value_np.type
    with np.errstate(all="ignore"):
        if steps == 1:  # PyTorch fills pow(base, start) from the unrounded start
            exponents = np.array([start], np.float64)
        else:
            low, high = (round_to(np.float32(v)) if dtype is not T.float64 else np.float64(v) for v in (start, end))
            difference = round_to(high - low) if dtype is not T.float64 else high - low
            step = np.float64(difference) / max(steps - 1, 1)
            i = np.arange(steps, dtype=np.float64)
            low, high = np.float64(low), np.float64(high)
            exponents = np.where(i < steps // 2, low + step * i, high - step * (steps - 1 - i))
        values = np.power(np.float64(base), exponents)
        return values if dtype is T.float64 else values.astype(np.float32).astype(dtype.value_np)


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

    PyTorch's draw: ``word % (high - low) + low`` for one 32-bit word per element, or one 64-bit
    draw (two words) where the range reaches 2^32 and the dtype is int64, float64, float32 or
    bfloat16 (``random_(low, high)``).
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
        lazy.check_scalar_fits("randint", low, dtype, strict_unsigned=True)
        lazy.check_scalar_fits("randint", high - 1, dtype, strict_unsigned=True)
    return _finish(random_ints("randint", shape, low, high, dtype, device, generator), requires_grad)


def random_ints(op: str, shape, low: int, high: int, dtype, device, generator, draw_dtype=None):
    """PyTorch's ``random_(low, high)`` values of ``shape`` in ``dtype`` (see ``randint``), drawn as
    for a tensor of ``draw_dtype`` (``dtype`` unless given): it picks 32- or 64-bit words."""
    wide = (draw_dtype or dtype) in (T.int64, T.float64, T.float32, T.bfloat16)
    return R.host_draw(op, shape, dtype, device, generator, mt19937.random_from_to, high - low, low, wide)


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
    """A random permutation of ``0 .. n-1`` (int64 unless ``dtype``): PyTorch's CPU shuffle.

    Fisher–Yates from the front on the host: element i swaps with ``i + word % (n - i)``, one
    32-bit word per step (a 64-bit draw from 2^32/20 elements on), vkml/frontend/mt19937.py.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"randperm(): argument 'n' must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError(f"'randperm': Trying to create tensor with negative dimension {n}: [{n}]")
    if n >= 1 << 32:
        raise ValueError(f"randperm(): {n} elements is more than vkml addresses (2^32)")
    dtype = _dtype(dtype) or T.int64
    if dtype is T.float16 and n > 2049:
        raise RuntimeError("n cannot be greater than 2049 for Half type.")
    if not dtype.is_float and dtype is not T.bool_ and n:
        lazy.check_scalar_fits("randperm", n - 1, dtype, strict_unsigned=True)
    return _finish(
        R.host_draw("randperm", (int(n),), dtype, _device(device), generator, mt19937.randperm), requires_grad
    )


def bernoulli(input, p=None, *, generator=None):
    """1 with probability ``input`` (or ``p``), else 0, in ``input``'s dtype: PyTorch's draws.

    A tensor of probabilities: ``u < p`` elementwise with a float uniform per element (a double
    one for float64 probabilities), the uniforms drawn on the host and compared where ``input``
    is, so its values are not read back (nor checked to lie in [0, 1], which PyTorch's CPU op
    does). A number ``p``: ``u < p`` with a double uniform per element.
    """
    node = F._tensor_node("bernoulli", input)
    if not node.dtype.is_float:
        raise DTypeError(f"bernoulli(): expected a floating point tensor, got {node.dtype.name}")
    if p is not None:
        p = _number("bernoulli", "p", p)
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
        hits = R.host_draw("bernoulli", node.shape, T.bool_, node.device, generator, mt19937.bernoulli_scalar, p)
        return F.cast(hits, node.dtype)
    return F.cast(
        F.lt(bernoulli_uniforms("bernoulli", node.shape, node.dtype, node.device, generator), input), node.dtype
    )


def bernoulli_uniforms(op: str, shape, p_dtype, device, generator):
    """The uniforms PyTorch compares with a tensor of probabilities of ``p_dtype``: float64 ones from
    ``random64()`` for float64 probabilities, float32 ones from ``random()`` for the others."""
    wide = p_dtype is T.float64
    work = T.float64 if wide else T.float32
    return R.host_draw(op, shape, work, device, generator, mt19937.uniform, work.name, 0.0, 1.0)


def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, device=None, requires_grad: bool = False):
    """Normal values ``randn·std + mean``: tensor or float ``mean`` and ``std`` (broadcast), or floats and ``size``.

    PyTorch's draws: ``normal_(0, std)`` then ``+ mean`` for a float ``std``, ``normal_(0, 1)``
    then ``· std + mean`` for a tensor one. A negative float ``std`` is PyTorch's error; a tensor
    ``std`` is not read back to check. Differentiable in tensor ``mean`` and ``std`` (the
    reparameterization: PyTorch gives none).
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
        if std_t:
            z = R.normal_values("normal", shape, 0.0, 1.0, dtype, dev, generator)
            return F.cast(F.add(F.mul(z, std), mean), dtype)
        z = R.normal_values("normal", shape, 0.0, float(std), dtype, dev, generator)
        return F.cast(F.add(z, mean), dtype)
    if size is None:
        raise TypeError("normal(): with float mean and std, size is required")
    shape = _shape_of("normal", size)
    dtype = _dtype(dtype) or default_float()
    return _finish(R.normal_values("normal", shape, float(mean), float(std), dtype, device, generator), requires_grad)


def multinomial(input, num_samples: int, replacement: bool = False, *, generator=None):
    """Category indices (int64) drawn with weights ``input`` (1-D, or rows of a 2-D tensor): PyTorch's draws.

    With replacement and more than one sample (PyTorch's CPU kernel, on the host: it reads the
    weights back, as PyTorch's does): per row the running sums of the weights in float32, divided
    by the total, the last set to 1; each sample is the first category whose sum reaches a double
    uniform. Without replacement, or for one sample either way (PyTorch's fast path, the one
    ``Categorical.sample()`` takes): the exponential race, ``argmax`` or ``topk`` of ``input / q``
    for ``q`` exponential draws of ``input``'s shape, computed where ``input`` is. Weights are not checked (negative, NaN or
    all-zero rows give unspecified samples where PyTorch raises).
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
    dev = node.device
    if node.numel == 0:  # no rows: no draws, an empty (0, num_samples) result, as PyTorch's
        return F._wrap(lazy.const_node(0, T.int64, (0, int(num_samples)), dev))
    if replacement and num_samples > 1:
        work = np.float64 if node.dtype is T.float64 else np.float32
        rows = np.asarray(F.cast(input, T.float64 if work is np.float64 else T.float32).numpy(), work).reshape(-1, n)
        picks = R.host_draw(
            "multinomial", (rows.shape[0], num_samples), T.int64, dev, generator, _multinomial_rows, rows
        )
    else:
        q = R.host_draw("multinomial", node.shape, node.dtype, dev, generator, mt19937.exponential, 1.0)
        ratio = F.div(input, q)
        picks = F.argmax(ratio, -1, keepdim=True) if num_samples == 1 else sorting.topk(ratio, num_samples).indices
    return F.reshape(picks, num_samples) if len(node.shape) == 1 else F.reshape(picks, -1, num_samples)


def _multinomial_rows(e, numel: int, rows: np.ndarray) -> np.ndarray:
    """PyTorch's CPU ``multinomial`` with replacement: row by row, the row's samples in order."""
    count = rows.shape[0]
    samples = numel // count
    out = np.empty((count, samples), np.int64)
    for i, row in enumerate(rows):
        cum = np.cumsum(row)  # in the weights' dtype, left to right
        cum = cum / cum[-1]
        cum[-1] = 1
        out[i] = np.searchsorted(cum.astype(np.float64), mt19937.uniform(e, samples, "float64", 0.0, 1.0), "left")
    return out


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
