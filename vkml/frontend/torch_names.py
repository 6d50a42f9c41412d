"""PyTorch's second names and small helpers of the ``torch`` namespace that programs reach for.

Aliases (``multiply`` for ``mul``, ``greater`` for ``gt``, ...) are the same functions and
methods under PyTorch's other name, in-place forms included. The helpers are composites of
existing ops (``dist``, ``cov``, ``corrcoef``, ``trapezoid``, ``broadcast_tensors``) or
host-side bookkeeping with PyTorch's behaviour (``seed``,
``is_nonzero``, ``set_num_threads``).

>>> import vkml
>>> vkml.multiply(vkml.tensor([2.0]), 3).tolist()
[6.0]
>>> [tuple(t.shape) for t in vkml.broadcast_tensors(vkml.ones(3, 1), vkml.ones(4))]
[(3, 4), (3, 4)]
"""

from __future__ import annotations

import math
import os

import numpy as np

from ..errors import ShapeError
from ..graph import build as lazy
from ..ops.promotion import default_float, promote_types
from ..tensor import Tensor
from . import creation, interop, mutation, random, scans, shape, statistics
from . import operators as F
from .exports import Export
from .size import Size
from .tensor_api import broadcast_to, positive

# PyTorch's second name -> vkml's first (each is a function, a Tensor method and an in-place method). The
# second names of plain ops (absolute, negative, multiply, greater, ...) are in their OpDef's ``public``.
ALIASES = {
    "subtract": "sub",
    "divide": "div",
}

pi = math.pi
e = math.e
inf = math.inf
nan = math.nan


def _check_tensor(op: str, name: str, value) -> None:
    if not isinstance(value, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(value).__name__}")


# ---------------------------------------------------------------------- broadcasting


def broadcast_shapes(*shapes) -> Size:
    """The shape ``shapes`` broadcast to, with PyTorch's error when they do not broadcast.

    >>> import vkml
    >>> vkml.broadcast_shapes((2, 1), (3,))
    vkml.Size([2, 3])
    """
    checked = []
    for s in shapes:
        if not isinstance(s, (int, tuple, list, Size)) or isinstance(s, bool):
            raise RuntimeError(f"Input shapes should be of type ints, a tuple of ints, or a list of ints, got {s}")
        s = (s,) if isinstance(s, int) else tuple(s)
        for size in s:
            if not isinstance(size, int) or isinstance(size, bool):
                raise RuntimeError(f"Input shapes should be of type ints, a tuple of ints, or a list of ints, got {s}")
            if size < 0:  # PyTorch's ValueError (older releases: RuntimeError, worded as below): both
                raise ShapeError(
                    "Attempting to broadcast a dimension with negative length! "
                    f"(Trying to create tensor with negative dimension {size}: {list(s)})"
                )
        checked.append(s)
    # PyTorch's order: the result starts as ones of the longest rank; each shape merges in from its last dim
    ndim = max((len(s) for s in checked), default=0)
    dims = [1] * ndim
    for k, s in enumerate(checked):
        for i in range(-1, -len(s) - 1, -1):
            size = s[i]
            if dims[i] == 1:
                dims[i] = size
            elif size not in (1, dims[i]):
                raise RuntimeError(
                    "Shape mismatch: objects cannot be broadcast to a single shape. Attempting to broadcast a "
                    f"dimension of length {size} at {i}! Mismatching argument at index {k} had {s}; but "
                    f"expected shape should be broadcastable to {dims}"
                )
    return Size(dims)


def broadcast_tensors(*tensors):
    """Views of ``tensors`` expanded to their common shape (PyTorch's ``broadcast_tensors``).

    >>> import vkml
    >>> a, b = vkml.broadcast_tensors(vkml.tensor([[1], [2]]), vkml.tensor([5, 6, 7]))
    >>> b.tolist()
    [[5, 6, 7], [5, 6, 7]]
    """
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for i, t in enumerate(tensors):
        _check_tensor("broadcast_tensors", f"tensors[{i}]", t)
    _check_broadcastable(t.shape for t in tensors)
    target = tuple(broadcast_shapes(*(t.shape for t in tensors)))
    # a tensor already of the common shape comes back itself, as PyTorch's (a leaf stays a leaf)
    return tuple(t if tuple(t.shape) == target else broadcast_to(t, target) for t in tensors)


def _check_broadcastable(shapes) -> None:
    """PyTorch's infer_size error for tensors: the shape so far (a) against the next (b), last dim first."""
    so_far: tuple[int, ...] | None = None
    for given in shapes:
        sizes = tuple(given)
        if so_far is None:
            so_far = sizes
            continue
        ndim = max(len(so_far), len(sizes))
        a = (1,) * (ndim - len(so_far)) + so_far
        b = (1,) * (ndim - len(sizes)) + sizes
        for d in reversed(range(ndim)):
            if a[d] != b[d] and 1 not in (a[d], b[d]):
                raise RuntimeError(
                    f"The size of tensor a ({a[d]}) must match the size of tensor b ({b[d]}) at non-singleton "
                    f"dimension {d}"
                )
        so_far = tuple(y if x == 1 else x for x, y in zip(a, b))


# ---------------------------------------------------------------------- statistics


def dist(input, other, p=2):
    """The ``p``-norm of ``input - other`` (broadcast), as ``torch.dist``.

    >>> import vkml
    >>> vkml.dist(vkml.tensor([0.0, 0.0]), vkml.tensor([3.0, 4.0])).item()
    5.0
    """
    _check_tensor("dist", "input", input)
    _check_tensor("dist", "other", other)
    return statistics.norm(F.sub(input, other), p=float(p))


def cov(input, *, correction: int = 1, fweights=None, aweights=None):
    """The covariance matrix of the variables in ``input``'s rows (observations in columns), as ``torch.cov``.

    ``fweights`` (integer frequencies) and ``aweights`` (observation weights) weight each
    column; ``correction`` 1 is Bessel's. A 1-D input is one variable (a 0-d result). As in
    PyTorch, a correction that leaves no degrees of freedom gives inf/NaN, not an error.

    >>> import vkml
    >>> vkml.cov(vkml.tensor([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]])).tolist()
    [[1.0, -1.0], [-1.0, 1.0]]
    """
    _check_tensor("cov", "input", input)
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with {input.ndim}")
    x = input if input.ndim == 2 else F.reshape(input, (1, -1))
    if not x.dtype.is_float:
        x = F.cast(x, default_float())
    if aweights is not None and aweights.dtype.is_float and aweights.dtype is not x.dtype:
        x = F.cast(x, promote_types(x.dtype, aweights.dtype))  # float16 x with float32 weights: float32
    observations = x.shape[1]
    weights = None
    if fweights is not None:
        _check_tensor("cov", "fweights", fweights)
        if fweights.ndim > 1 or fweights.dtype.is_float or fweights.shape[0:1] != (observations,):
            raise RuntimeError(
                f"cov(): expected fweights to be a 1-D integer tensor of {observations} elements, "
                f"got {fweights.dtype.name} of shape {tuple(fweights.shape)}"
            )
        if bool(F.lt(fweights, 0).any()):
            raise RuntimeError("cov(): fweights cannot be negative")
        weights = F.cast(fweights, x.dtype)
    if aweights is not None:
        _check_tensor("cov", "aweights", aweights)
        if aweights.ndim > 1 or not aweights.dtype.is_float or aweights.shape[0:1] != (observations,):
            raise RuntimeError(
                f"cov(): expected aweights to be a 1-D floating point tensor of {observations} elements, "
                f"got {aweights.dtype.name} of shape {tuple(aweights.shape)}"
            )
        if bool(F.lt(aweights, 0).any()):
            raise RuntimeError("cov(): aweights cannot be negative")
        aw = F.cast(aweights, x.dtype)
        weights = aw if weights is None else F.mul(weights, aw)
    if weights is None:
        total = F.cast(creation.tensor(float(observations), device=x.device), x.dtype)
        mean = F.mean(x, 1, True)
        norm_factor = F.sub(total, correction)
    else:
        total = weights.sum()
        mean = F.div(F.mul(x, weights).sum(1, keepdim=True), total)
        if correction == 0:
            norm_factor = total
        elif aweights is None:
            norm_factor = F.sub(total, correction)
        else:
            aw = F.cast(aweights, x.dtype)
            norm_factor = F.sub(total, F.div(F.mul(F.mul(weights, aw).sum(), correction), total))
    norm_factor = F.where(F.le(norm_factor, 0), F.mul(norm_factor, 0), norm_factor)
    centred = F.sub(x, mean)
    scaled = centred if weights is None else F.mul(centred, weights)
    out = F.div(F.matmul(scaled, F.transpose(centred, 0, 1)), norm_factor)
    # PyTorch squeezes the result: one variable (a 1-D input or a single row) gives a 0-d tensor
    return F.reshape(out, ()) if x.shape[0] == 1 else out


def corrcoef(input):
    """Pearson's correlation coefficients of ``input``'s rows, clipped to [-1, 1], as ``torch.corrcoef``.

    >>> import vkml
    >>> vkml.corrcoef(vkml.tensor([[0.0, 1.0, 2.0], [0.0, 2.0, 4.0]])).tolist()
    [[1.0, 1.0], [1.0, 1.0]]
    """
    _check_tensor("corrcoef", "input", input)
    if input.ndim > 2:
        raise RuntimeError(
            f"corrcoef(): expected input to have two or fewer dimensions but got an input with {input.ndim}"
        )
    c = cov(input)
    if c.ndim == 0:
        return F.div(c, c)
    d = shape.diagonal(c)
    stddev = F.sqrt(d)
    c = F.div(F.div(c, F.unsqueeze(stddev, 1)), F.unsqueeze(stddev, 0))
    return F.clamp(c, -1, 1)


def trapezoid(y, x=None, *, dx=None, dim: int = -1):
    """The integral of ``y`` along ``dim`` by the trapezoid rule, sample points ``x`` or spacing ``dx`` (1).

    >>> import vkml
    >>> vkml.trapezoid(vkml.tensor([1.0, 2.0, 3.0])).item()
    4.0
    """
    _check_tensor("trapezoid", "y", y)
    if x is not None and dx is not None:
        raise TypeError("trapezoid() received an invalid combination of arguments: x and dx both given")
    if x is not None and not isinstance(x, F._tensor.Tensor):  # PyTorch's overloads: a Tensor x, or a number dx=
        raise TypeError(f"trapezoid(): argument 'x' (position 2) must be Tensor, not {type(x).__name__}")
    dim = lazy.normalize_dim("trapezoid", dim, y.ndim)
    n = y.shape[dim]
    if n == 0:
        return F.sum(F.mul(y, 0), dim)
    left, right = shape.narrow(y, dim, 0, n - 1), shape.narrow(y, dim, 1, n - 1)
    pair_sums = F.add(left, right)
    if x is None or not hasattr(x, "shape"):
        spacing = 1 if dx is None else dx
        if x is not None:
            spacing = x
        return F.div(F.mul(F.sum(pair_sums, dim), spacing), 2)
    widths = _spacings("trapezoid", x, y, dim)
    return F.div(F.sum(F.mul(widths, pair_sums), dim), 2)


def cumulative_trapezoid(y, x=None, *, dx=None, dim: int = -1):
    """The running trapezoid integral of ``y`` along ``dim`` (one element shorter), as PyTorch's.

    >>> import vkml
    >>> vkml.cumulative_trapezoid(vkml.tensor([1.0, 2.0, 3.0])).tolist()
    [1.5, 4.0]
    """
    _check_tensor("cumulative_trapezoid", "y", y)
    if x is not None and dx is not None:
        raise TypeError("cumulative_trapezoid() received an invalid combination of arguments: x and dx both given")
    if x is not None and not isinstance(x, F._tensor.Tensor):  # PyTorch's overloads: a Tensor x, or a number dx=
        raise TypeError(f"cumulative_trapezoid(): argument 'x' (position 2) must be Tensor, not {type(x).__name__}")
    dim = lazy.normalize_dim("cumulative_trapezoid", dim, y.ndim)
    n = y.shape[dim]
    if n == 0:
        return y
    left, right = shape.narrow(y, dim, 0, n - 1), shape.narrow(y, dim, 1, n - 1)
    pair_sums = F.add(left, right)
    if x is None or not hasattr(x, "shape"):
        spacing = x if x is not None else (1 if dx is None else dx)
        return scans.cumsum(F.div(F.mul(pair_sums, spacing), 2), dim)
    widths = _spacings("cumulative_trapezoid", x, y, dim)
    return scans.cumsum(F.div(F.mul(widths, pair_sums), 2), dim)


def _spacings(op: str, x, y, dim: int):
    """x[i+1] - x[i] along ``dim``, shaped to multiply ``y``'s pairs (x 1-D, or y's shape)."""
    _check_tensor(op, "x", x)
    if x.ndim == 1:
        if x.shape[0] != y.shape[dim]:
            raise RuntimeError(
                f"{op}: There must be one `x` value for each sample point, got x of {x.shape[0]} points "
                f"and y of {y.shape[dim]} along dim {dim}"
            )
        widths = F.sub(shape.narrow(x, 0, 1, x.shape[0] - 1), shape.narrow(x, 0, 0, x.shape[0] - 1))
        view = [1] * y.ndim
        view[dim] = x.shape[0] - 1
        return F.reshape(widths, tuple(view))
    n = x.shape[dim]
    return F.sub(shape.narrow(x, dim, 1, n - 1), shape.narrow(x, dim, 0, n - 1))


# ---------------------------------------------------------------------- predicates and dtypes


def is_nonzero(input) -> bool:
    """Whether the one element of ``input`` is not zero; raises for zero or several elements, as PyTorch.

    >>> import vkml
    >>> vkml.is_nonzero(vkml.tensor([0.5]))
    True
    """
    _check_tensor("is_nonzero", "input", input)
    n = math.prod(input.shape)
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input)


def _assert(condition, message) -> None:
    """``torch._assert``: raise AssertionError(message) where ``condition`` is false (a tensor by its truth).

    Models written for torch.fx tracing (torchvision's ViT) check shapes with it.

    >>> import vkml
    >>> vkml._assert(vkml.tensor(True), "never raised")
    """
    if not condition:
        raise AssertionError(message)


def _sample_dirichlet(input, generator=None):
    """``torch._sample_dirichlet``: one Dirichlet draw per row of concentrations (the last dim).

    torchvision's MixUp and CutMix draw their mixing weight with it; the draws come from vkml's
    generator (not PyTorch's stream).

    >>> import vkml
    >>> round(vkml._sample_dirichlet(vkml.tensor([0.5, 0.5])).sum().item(), 5)
    1.0
    """
    from ..distributions.dirichlet import _sample_dirichlet as sample  # lazy: off import vkml's path

    _check_tensor("_sample_dirichlet", "self", input)
    if generator is not None:
        raise NotImplementedError("_sample_dirichlet: generator= is not supported; draws use the default generator")
    return sample(input)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad: bool | None = None):
    """``obj`` as a tensor, sharing memory where it can, as ``torch.asarray``.

    A tensor of the asked dtype and device is returned itself (``copy=True`` copies it); a
    numpy array becomes a CPU tensor over its memory when its dtype allows (``from_numpy``);
    anything else is copied. ``copy=False`` where a copy is needed raises, as in PyTorch.

    >>> import vkml
    >>> x = vkml.ones(2)
    >>> vkml.asarray(x) is x
    True
    """
    out = interop.as_tensor(obj, dtype=dtype, device=device)
    shares = out is obj or (isinstance(obj, np.ndarray) and out.device.kind == "cpu" and dtype is None)
    if copy is False and not shares:  # PyTorch's words where it has them
        if isinstance(obj, Tensor) and out.dtype is not obj.dtype:
            raise ValueError(
                f"can't alias tensor with dtype '{mutation.torch_name(obj.dtype)}' into dtype "
                f"'{mutation.torch_name(out.dtype)}'."
            )
        if isinstance(obj, (list, tuple, range)):
            raise ValueError("can't alias arbitrary sequence into a tensor.")
        raise ValueError(f"asarray(): copy=False, but {type(obj).__name__} cannot be taken without a copy")
    if copy is True and (shares or isinstance(obj, Tensor)):
        out = F.clone(out) if isinstance(obj, Tensor) else creation.tensor(np.array(obj), dtype=dtype, device=device)
    if requires_grad is None:  # PyTorch 2.13: a tensor's own requires_grad (its history kept)
        return out
    if requires_grad is False and isinstance(out, Tensor) and out.requires_grad:
        return out.detach()
    if requires_grad and not (out is obj and obj.requires_grad):  # a tensor that requires grad keeps its history
        out = out.detach().requires_grad_(True) if out is obj else out.requires_grad_(True)
    return out


# ---------------------------------------------------------------------- random state


def seed() -> int:
    """Seed the default generator from the operating system's entropy; returns the seed (``torch.seed``)."""
    value = int.from_bytes(os.urandom(8), "little") >> 1  # as secrets.randbits(63), without its hmac import
    random.default_generator.manual_seed(value)
    return value


def initial_seed() -> int:
    """The seed the default generator was last seeded with."""
    return random.default_generator.initial_seed()


# ---------------------------------------------------------------------- threads

_num_threads: int | None = None


def set_num_threads(num: int) -> None:
    """Record the number of CPU threads for intra-op work (``torch.set_num_threads``).

    vkml's CPU backend runs its kernels through numpy, whose thread pool is fixed at import; the
    value is kept for ``get_num_threads`` and never changes a result (nor does it in PyTorch).
    """
    if isinstance(num, bool) or not isinstance(num, int) or num <= 0:
        raise RuntimeError(f"set_num_threads expects a positive integer, got {num!r}")
    global _num_threads
    _num_threads = num


def get_num_threads() -> int:
    """The value ``set_num_threads`` recorded, else the number of CPUs this process may use."""
    if _num_threads is not None:
        return _num_threads
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


PUBLIC = [
    *ALIASES,
    "pi",
    "e",
    "inf",
    "nan",
    "broadcast_shapes",
    "broadcast_tensors",
    "dist",
    "cov",
    "corrcoef",
    "trapezoid",
    "trapz",
    "cumulative_trapezoid",
    "is_nonzero",
    "asarray",
    "seed",
    "initial_seed",
    "set_num_threads",
    "get_num_threads",
]
trapz = trapezoid


def tril_(self, diagonal: int = 0):
    """In-place ``tril``."""
    return mutation.inplace(self, "tril_", shape.tril, diagonal)


def triu_(self, diagonal: int = 0):
    """In-place ``triu``."""
    return mutation.inplace(self, "triu_", shape.triu, diagonal)


def _contains(self, element) -> bool:
    """``element in t``: whether any element equals ``element`` (a number or a tensor), as PyTorch."""
    if isinstance(element, (Tensor, int, float, bool)):
        return bool(F.eq(self, element).any())
    raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a {type(element)}.")


def _reversed(self):
    """``reversed(t)``: ``t`` flipped along dim 0 (a 0-d tensor is itself), as PyTorch."""
    return self if self.ndim == 0 else F.flip(self, (0,))


# The public names (vkml/frontend/public.py binds them): each alias is its first name's function, method
# and in-place method; the helpers are functions; a few are methods or operators only.
EXPORTS = (
    *(Export(alias, method=True, inplace=True, value=getattr(F, first)) for alias, first in ALIASES.items()),
    *(Export(name, method=name in ("dist", "is_nonzero")) for name in PUBLIC if name not in ALIASES),
    Export("tril_", function=False, method=tril_),
    Export("triu_", function=False, method=triu_),
    Export("__contains__", function=False, method=_contains),
    Export("__reversed__", function=False, method=_reversed),
    Export("__pos__", function=False, method=positive),
)
