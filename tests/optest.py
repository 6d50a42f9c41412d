"""Helpers for the op tests: bit and ulp comparisons, special inputs, layouts, and the contract's oracles.

The reduction oracle ``tree_reduce`` is the numerical contract written in numpy (DESIGN.md §4,
reference/semantics.md §3): neighbours pair level by level in logical index order, an odd
tail is carried up unchanged, and no identity element ever enters a combine.

    >>> tree_reduce(np.array([1.0, 2.0, 3.0], np.float32), np.add).item()
    6.0
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np
import pytest
import torch

import vkml

F32 = np.float32
TINY = np.finfo(F32).smallest_subnormal  # 2^-149
MIN_NORMAL = np.finfo(F32).tiny  # 2^-126
F32_MAX = np.finfo(F32).max

# Inputs every float test sees: NaN, ±inf, ±0, subnormals, the normal boundary, huge and tiny values.
F32_SPECIALS = np.array(
    [
        np.nan,
        -np.nan,
        np.inf,
        -np.inf,
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -2.5,
        3.0,
        TINY,
        -TINY,
        MIN_NORMAL - TINY,  # the largest subnormal
        -(MIN_NORMAL - TINY),
        MIN_NORMAL,
        -MIN_NORMAL,
        F32_MAX,
        -F32_MAX,
        1e-30,
        -1e-30,
        88.72,
        -104.0,
        65504.0,
        65520.0,
        1e20,
        -1e20,
        7.0,
        -0.25,
        2.0,
    ],
    dtype=F32,
)

F16_SPECIALS = np.array(
    [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 6e-8, -6e-8, 6.1e-5, 65504.0, -65504.0, 3.0, 1e-3],
    dtype=np.float16,
)

INT_SPECIALS = {
    np.int32: np.array([0, 1, -1, 2, -2, 7, -7, 2**31 - 1, -(2**31), 1000, -1000, 46341], dtype=np.int32),
    np.int64: np.array([0, 1, -1, 2, -2, 7, -7, 2**63 - 1, -(2**63), 2**31, -(2**31) - 1, 10**12], dtype=np.int64),
}


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def random_floats(shape, seed: int = 0, scale: float = 3.0, dtype=F32) -> np.ndarray:
    """Normal values times ``scale``, with some exact zeros and a few specials sprinkled in."""
    g = rng(seed)
    x = np.asarray(g.standard_normal(shape) * scale).astype(dtype)
    flat = x.reshape(-1)
    if flat.size >= 8:
        flat[g.integers(0, flat.size, max(1, flat.size // 16))] = 0.0
    return x


def random_ints(shape, dtype, seed: int = 0, low: int = -50, high: int = 50) -> np.ndarray:
    return rng(seed).integers(low, high, shape).astype(dtype)


def pairs_grid(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every (a[i], b[j]) pair, as two flat arrays."""
    return np.repeat(a, b.size), np.tile(b, a.size)


# ---------------------------------------------------------------------- comparisons


def bits(a: np.ndarray) -> np.ndarray:
    """The bit patterns of a float array as unsigned integers of the same width."""
    a = np.asarray(a)
    return a.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def assert_same_bits(actual: np.ndarray, expected: np.ndarray, what: str = "") -> None:
    """Equal dtype, shape and bits; NaNs match by NaN-ness (any payload), everything else bit for bit."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    if actual.dtype.kind == "f":
        nan_a, nan_e = np.isnan(actual), np.isnan(expected)
        bad = (nan_a != nan_e) | (~nan_e & (bits(actual) != bits(expected)))
    else:
        bad = actual != expected
    if bad.any():
        idx = np.argwhere(bad)[:6]
        shown = ", ".join(f"{tuple(i)}: got {actual[tuple(i)]!r} want {expected[tuple(i)]!r}" for i in idx)
        raise AssertionError(f"{what}: {int(bad.sum())} of {bad.size} differ ({shown})")


def ulp32(ref: np.ndarray) -> np.ndarray:
    """The float32 ulp at each float64 value: 2^(e-23) for |ref| in [2^e, 2^(e+1)), at least 2^-149."""
    mag = np.abs(np.asarray(ref, np.float64))
    with np.errstate(divide="ignore"):
        exponent = np.floor(np.log2(np.where(mag > 0, mag, 1.0)))
    return np.maximum(np.ldexp(1.0, (exponent - 23).astype(np.int64)), 2.0**-149)


def ulp_error(actual: np.ndarray, ref64: np.ndarray) -> np.ndarray:
    """|actual - ref| in float32 ulps of the float64 reference; 0 where both are the same inf or NaN."""
    a = np.asarray(actual, np.float64)
    r = np.asarray(ref64, np.float64)
    with np.errstate(over="ignore"):
        rounded = r.astype(np.float32)  # beyond the float32 range, the correctly rounded result is ±inf
    same_special = (np.isnan(a) & np.isnan(r)) | (np.isinf(rounded) & (a == rounded))
    with np.errstate(invalid="ignore"):
        err = np.abs(a - r) / ulp32(r)
    err = np.where(same_special, 0.0, err)
    return np.where(np.isnan(err), np.inf, err)


def assert_ulp(actual: np.ndarray, ref64: np.ndarray, max_ulp: float, what: str = "", inputs=None) -> None:
    """Every element within ``max_ulp`` float32 ulps of the float64 reference (NaN only where it is NaN)."""
    err = ulp_error(actual, ref64)
    bad = err > max_ulp
    if bad.any():
        idx = np.flatnonzero(bad.reshape(-1))[:6]
        flat_a, flat_r = np.asarray(actual).reshape(-1), np.asarray(ref64).reshape(-1)
        flat_x = None if inputs is None else np.asarray(inputs).reshape(-1)
        shown = ", ".join(
            (f"x={flat_x[i]!r} " if flat_x is not None else "")
            + f"got {flat_a[i]!r} want {flat_r[i]!r} ({err.reshape(-1)[i]:.2f} ulp)"
            for i in idx
        )
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {bad.size} beyond {max_ulp} ulp; worst {err.max():.2f} ({shown})"
        )


def f16_ulp_distance(actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """Distance in float16 steps between two float16 arrays (0 where both are NaN)."""

    def ordered(h):
        u = bits(h).astype(np.int64)
        return np.where(u & 0x8000, -(u & 0x7FFF), u)

    a, e = np.asarray(actual, np.float16), np.asarray(expected, np.float16)
    dist = np.abs(ordered(a) - ordered(e)).astype(np.float64)
    nan_a, nan_e = np.isnan(a), np.isnan(e)
    return np.where(nan_a & nan_e, 0.0, np.where(nan_a | nan_e, np.inf, dist))


# ---------------------------------------------------------------------- torch and vkml


TORCH_DTYPES = {
    np.dtype(np.float32): torch.float32,
    np.dtype(np.float16): torch.float16,
    np.dtype(np.int32): torch.int32,
    np.dtype(np.int64): torch.int64,
    np.dtype(np.bool_): torch.bool,
}


def torch_at_least(major: int, minor: int) -> bool:
    """Whether the oracle is PyTorch ``major.minor`` or newer. vkml follows the newest PyTorch's messages
    and behaviour; a test that compares with an older one (the GPU machine runs 2.11) checks less."""
    return tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2]) >= (major, minor)


def skip_before_pytorch(major: int, minor: int, why: str) -> None:
    """Skip a comparison whose oracle predates PyTorch ``major.minor``, whose behaviour vkml follows
    (CI's PyTorch runs it; the GPU machine's 2.11 differs there). ``why`` says what changed."""
    if not torch_at_least(major, minor):
        pytest.skip(f"PyTorch {torch.__version__} predates {major}.{minor}: {why}")


def to_torch(a: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.array(a, order="C", copy=True))  # keeps 0-dim arrays 0-dim


def from_torch(t: torch.Tensor) -> np.ndarray:
    return t.detach().contiguous().numpy()


def weighted_grad(lib, fn, x_np: np.ndarray, device=None, seed: int = 0) -> np.ndarray:
    """d(sum of w * the op's values)/dx for fixed random weights w, on torch or on vkml's ``device``.

    ``fn(lib, x)`` returns a tensor or a (values, indices) pair; the values are weighted.
    """
    x = to_torch(x_np).requires_grad_(True) if lib is torch else vkml.tensor(x_np, device=device, requires_grad=True)
    out = fn(lib, x)
    values = out[0] if isinstance(out, tuple) else out
    w = random_floats(tuple(values.shape), seed=seed)
    (values * (to_torch(w) if lib is torch else vkml.tensor(w, device=device))).sum().backward()
    return from_torch(x.grad) if lib is torch else x.grad.numpy()


def result_arrays(result) -> list[np.ndarray]:
    """The arrays of an op's result: one tensor, or a tuple (named or not) of them, torch's or vkml's."""
    parts = result if isinstance(result, tuple) else (result,)
    return [from_torch(p) if isinstance(p, torch.Tensor) else p.numpy() for p in parts]


def assert_device_gives_cpu_bits(fn, x_np: np.ndarray, device, name: str, grad_seed: int | None = None) -> None:
    """``fn(vkml, x)`` on ``device`` returns the CPU's bits, every result array; with ``grad_seed``
    the gradient of the weighted values (``weighted_grad``) too."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cpu = result_arrays(fn(vkml, vkml.tensor(x_np)))
        dev = result_arrays(fn(vkml, vkml.tensor(x_np, device=device)))
    assert len(dev) == len(cpu), name
    for c, d in zip(cpu, dev, strict=True):
        assert_same_bits(d, c, name)
    if grad_seed is not None:
        cpu_grad = weighted_grad(vkml, fn, x_np, seed=grad_seed)
        assert_same_bits(weighted_grad(vkml, fn, x_np, device, seed=grad_seed), cpu_grad, name + " gradient")


def vk(a: np.ndarray) -> vkml.Tensor:
    """A vkml tensor holding exactly ``a`` (its dtype kept, float64 not allowed)."""
    a = np.asarray(a)
    assert a.dtype != np.float64, "tests build float32/float16 arrays explicitly"
    return vkml.tensor(a)


# ---------------------------------------------------------------------- layouts

LAYOUTS = ("contiguous", "transposed", "strided", "flipped", "expanded")


def in_layout(a: np.ndarray, layout: str) -> tuple[vkml.Tensor, np.ndarray]:
    """A vkml tensor that reads ``a``'s values (2-D, or 1-D for some layouts) through a non-trivial view.

    Returns (tensor, the numpy values it holds): "expanded" broadcasts the first row, so its
    values differ from ``a``.
    """
    if layout == "contiguous":
        return vk(a), a
    if layout == "transposed":
        assert a.ndim == 2
        return vk(np.ascontiguousarray(a.T)).T, a
    if layout == "strided":  # every other column (row) of a wider buffer, skipping an offset
        wide = np.zeros(a.shape[:-1] + (2 * a.shape[-1] + 1,), a.dtype)
        wide[..., 1::2] = a
        index = (slice(None),) * (a.ndim - 1) + (slice(1, None, 2),)
        return vk(wide)[index], a
    if layout == "flipped":
        dims = tuple(range(a.ndim))
        return vk(np.ascontiguousarray(np.flip(a, dims))).flip(dims), a
    if layout == "expanded":
        row = a[:1]
        return vk(np.ascontiguousarray(row)).expand(*a.shape), np.broadcast_to(row, a.shape).copy()
    raise ValueError(layout)


# ---------------------------------------------------------------------- the contract's reduction oracle


def tree_reduce(x: np.ndarray, combine: Callable) -> np.ndarray:
    """Reduce the last axis of ``x`` over the contract's fixed pairwise tree.

    Level by level: element 2j combines with 2j+1 (the lower index on the left); an odd tail
    is carried up unchanged. ``combine`` works on whole arrays (e.g. ``np.add``) or on
    tuples of arrays (arg-reductions). The empty case is the caller's.
    """
    level = x if isinstance(x, tuple) else (x,)
    while level[0].shape[-1] > 1:
        m = level[0].shape[-1]
        left = tuple(a[..., 0 : m - 1 : 2] for a in level)
        right = tuple(a[..., 1:m:2] for a in level)
        with np.errstate(all="ignore"):
            merged = combine(*left, *right) if len(level) > 1 else (combine(left[0], right[0]),)
        if m % 2:
            merged = tuple(np.concatenate([c, a[..., -1:]], axis=-1) for c, a in zip(merged, level))
        level = merged
    out = tuple(a[..., 0] for a in level)
    return out if isinstance(x, tuple) else out[0]


def reduced_last(x: np.ndarray, dim, keepdim: bool = False) -> tuple[np.ndarray, Callable]:
    """``x`` with the reduced dims moved last and flattened (logical index order), and a function that
    reshapes a result of shape ``x.shape[kept]`` to what torch returns for (dim, keepdim)."""
    nd = x.ndim
    if dim is None:
        axes = tuple(range(nd))
    else:
        axes = tuple(sorted({d % nd for d in ((dim,) if isinstance(dim, int) else dim)}))
    kept = [d for d in range(nd) if d not in axes]
    moved = np.transpose(x, kept + list(axes))
    flat = moved.reshape([x.shape[d] for d in kept] + [-1])

    def shape_result(r: np.ndarray) -> np.ndarray:
        if keepdim:
            return r.reshape([1 if d in axes else x.shape[d] for d in range(nd)])
        return r.reshape([x.shape[d] for d in kept])

    return flat, shape_result


def maximum_ref(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The contract's maximum: NaN if either is NaN; max(+0, -0) = +0 in either order."""
    with np.errstate(invalid="ignore"):
        out = np.where(a > b, a, b)
        zeros = (a == 0) & (b == 0)
    out = np.where(zeros, (bits(a) & bits(b)).view(a.dtype), out)  # +0 unless both are -0
    return np.where(np.isnan(a) | np.isnan(b), np.array(np.nan, a.dtype), out).astype(a.dtype)


def minimum_ref(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The contract's minimum: NaN if either is NaN; min(+0, -0) = -0 in either order."""
    with np.errstate(invalid="ignore"):
        out = np.where(a < b, a, b)
        zeros = (a == 0) & (b == 0)
    out = np.where(zeros, (bits(a) | bits(b)).view(a.dtype), out)  # -0 unless both are +0
    return np.where(np.isnan(a) | np.isnan(b), np.array(np.nan, a.dtype), out).astype(a.dtype)


def first_extreme_index(x: np.ndarray, largest: bool) -> np.ndarray:
    """Index along the last axis of the first NaN, else of the first maximum (minimum)."""
    has_nan = np.isnan(x).any(axis=-1) if x.dtype.kind == "f" else np.zeros(x.shape[:-1], bool)
    first_nan = np.argmax(np.isnan(x), axis=-1) if x.dtype.kind == "f" else 0
    with np.errstate(invalid="ignore"):
        masked = np.where(np.isnan(x), -np.inf if largest else np.inf, x) if x.dtype.kind == "f" else x
    extreme = np.argmax(masked, axis=-1) if largest else np.argmin(masked, axis=-1)
    return np.where(has_nan, first_nan, extreme).astype(np.int64)


def fused_multiply_add(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """a * b + c rounded once to float32: exact in float64 up to one rounding, then rounded to odd."""
    with np.errstate(all="ignore"):
        p = a.astype(np.float64) * b.astype(np.float64)  # exact: 24 + 24 significant bits
        c64 = c.astype(np.float64)
        s = p + c64
        t = s - p
        e = (p - (s - t)) + (c64 - t)  # s + e == p + c exactly (TwoSum)
        bits = s.view(np.uint64)
        inexact = (e != 0) & np.isfinite(e) & ((bits & np.uint64(1)) == 0)
        away = (e > 0) == (s > 0)
        bits = np.where(inexact, np.where(away, bits + np.uint64(1), bits - np.uint64(1)), bits)
        return bits.view(np.float64).astype(np.float32)  # an odd last bit: no double rounding here


# ---------------------------------------------------------------- float64 references of the smooth functions


def erf64(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def erfc64(x):
    return np.vectorize(math.erfc, otypes=[np.float64])(x)


def sigmoid64(x):
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


def gelu64(x):
    """0.5·x·erfc(-x/√2); the limits -0.0 and +inf at ∓inf."""
    with np.errstate(invalid="ignore"):
        return np.where(np.isinf(x), np.where(x > 0, x, -0.0), 0.5 * x * erfc64(-x / math.sqrt(2.0)))


def gelu_tanh64(x):
    # 0.5·x·(1 + tanh(u)) = x·sigmoid(2u): the same real function without float64 cancellation
    with np.errstate(all="ignore"):
        u = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)
        return np.where(np.isinf(x), np.where(x > 0, x, -0.0), x * sigmoid64(2.0 * u))


def softplus64(x):
    with np.errstate(over="ignore"):
        return np.where(x > 20.0, x, np.log1p(np.exp(np.minimum(x, 20.0))))


def lowered(*tensors) -> list:
    """The kernels the scheduler would dispatch for ``tensors`` (nothing runs)."""
    from vkml.schedule import scheduler as schedule

    dispatches, _, _ = schedule.lower(schedule.Plan([t.node for t in tensors]))
    return [d.kernel for d in dispatches]
