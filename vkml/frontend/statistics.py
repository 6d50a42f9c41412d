"""Statistics and predicate reductions with PyTorch's names: var, std, var_mean, std_mean, all, any,
count_nonzero, nansum, nanmean, aminmax, and the norms (``vkml.norm``, ``vkml.linalg``).

Every one is built from vkml's reductions (``sum``, ``amax``, ``amin``: the contract's fixed
pairwise tree, DESIGN.md section 4) and elementwise ops, so each gives the same bits on every
device and layout, and autograd differentiates it through the ops it is built of.

Order of the variance (two passes, as PyTorch's formula): in float32, first the mean
m = tree_sum(x) / n (one correctly rounded division), then the deviations d = x - m, then
tree_sum(d * d), divided once by max(0, n - correction). float16 inputs compute in float32 and
round once at the end; the standard deviation is the correctly rounded sqrt of the float32
variance, then rounded once.
"""

from __future__ import annotations

import math
import warnings

from ..graph import build as lazy
from ..ir import types as T
from ..ops import grads as _grads
from ..ops.cast import work_dtype
from . import autograd, dense_linalg, return_types
from . import operators as F
from .caller import user_stacklevel
from .exports import Export
from .operators import _dim_or_axis as dim_or_axis

# The public names of this module's ops (vkml/frontend/public.py binds them).
EXPORTS = (
    Export("all", method=True),
    Export("aminmax", method=True),
    Export("any", method=True),
    Export("count_nonzero", method=True),
    Export("nanmean", method=True),
    Export("nansum", method=True),
    Export("norm", method=True),
    Export("std", method=True),
    Export("std_mean"),
    Export("var", method=True),
    Export("var_mean"),
)


def _float_input(op: str, input, message: str):
    node = F._tensor_node(op, input)
    if not node.dtype.is_float:
        raise RuntimeError(f"'{op}': {message}, got {node.dtype.name}")
    return node


# ---------------------------------------------------------------------- variance


def _correction(op: str, dim, unbiased, correction):
    """(dim, correction) from PyTorch's overloads: ``var(x, unbiased)``, ``var(x, dim, unbiased)`` and
    ``var(x, dim, correction=c)``; the default correction is 1 (Bessel's)."""
    if isinstance(dim, bool):  # var(x, True): the old overload whose second argument is unbiased
        if unbiased is not None:
            raise TypeError(f"'{op}': got unbiased={dim!r} as the second argument and unbiased={unbiased!r}")
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError(f"'{op}': got both 'unbiased' ({unbiased!r}) and 'correction' ({correction!r}); pass one")
    if unbiased is not None:
        if not isinstance(unbiased, bool):
            raise TypeError(f"'{op}': argument 'unbiased' must be a bool, got {unbiased!r}")
        return dim, 1 if unbiased else 0
    if correction is None:
        return dim, 1
    if isinstance(correction, bool) or not isinstance(correction, (int, float)):
        raise TypeError(f"'{op}': argument 'correction' must be a number, got {correction!r}")
    return dim, correction


def _moments(op: str, input, dim, unbiased, keepdim: bool, correction, axis):
    """(variance, mean, dtype): float32 tensors in the order the module docstring states."""
    node = _float_input(op, input, "std and var only support floating point dtypes")
    dim, c = _correction(op, dim_or_axis(op, dim, axis), unbiased, correction)
    dims = lazy.reduce_dims(op, dim, len(node.shape))
    n = F._reduced_count(node, dims)
    if n - c <= 0:
        warnings.warn(
            f"{op}(): degrees of freedom is <= 0. Correction should be strictly less than the reduction factor "
            "(input numel divided by output numel).",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
    x = F.cast(input, work_dtype(node.dtype))
    m = F.mean(x, dims, keepdim=True)
    d = x - m
    # PyTorch divides by max(0, n - correction): inf for a positive sum of squares, NaN for 0
    var = F.div(F.sum(d * d, dims, keepdim), float(max(0, n - c)))
    if not keepdim:
        m = F.reshape(m, *var.shape)
    return var, m, node.dtype


@autograd.shown_as("VarBackward0", autograd.input_edge)
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None, keepdims=None):
    """Variance over ``dim`` (all dims when None): sum((x - mean)^2) / max(0, n - correction).

    ``correction`` defaults to 1 (Bessel's); ``unbiased=False`` is ``correction=0``. Two passes
    in float32: the tree mean, then the tree sum of squared deviations (order in
    vkml/frontend/statistics.py). Example: ``vkml.var(x, dim=1, correction=0)``.
    """
    keepdim = F._keepdim_or_keepdims("var", keepdim, keepdims)
    if _half_backward(input):
        return _half_moments("var", input, dim, unbiased, keepdim, correction, axis, ("var",))[0]
    v, _, dtype = _moments("var", input, dim, unbiased, keepdim, correction, axis)
    return F.cast(v, dtype)


@autograd.shown_as("StdBackward0", autograd.input_edge)
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None, keepdims=None):
    """Standard deviation over ``dim``: the correctly rounded sqrt of ``var``'s float32 variance.

    Same arguments as ``var``. Example: ``x.std(dim=0, unbiased=False)``.
    """
    keepdim = F._keepdim_or_keepdims("std", keepdim, keepdims)
    if _half_backward(input):
        return _half_moments("std", input, dim, unbiased, keepdim, correction, axis, ("std",))[0]
    v, _, dtype = _moments("std", input, dim, unbiased, keepdim, correction, axis)
    return F.cast(_std_of_var(v), dtype)


def _std_of_var(v):
    """sqrt(v) whose gradient is 0 where the result is 0 (PyTorch's std_backward masks it: a constant
    row has std 0 and gradient 0, where sqrt's rule alone would give 0 * inf = NaN)."""
    return autograd.record("std_of_var", (v,), F.sqrt(v.detach()), {})


def _grad_std_of_var(c):
    out = c.output
    return (c.F.where(out == 0, 0.0, c.g / (2.0 * out)),)


_grads.RULES["std_of_var"] = _grad_std_of_var


def _half_moments(op: str, input, dim, unbiased, keepdim: bool, correction, axis, parts) -> tuple:
    """The float16/bfloat16 moments ``parts`` ("var", "std", "mean"), each differentiated as PyTorch's
    var_backward, std_backward and mean_backward do: op for op in the input's dtype, every op rounding
    (torch/csrc/autograd/FunctionsManual.cpp), not through the float32 ops the values come from."""
    v, m, dtype = _moments(op, input.detach(), dim, unbiased, keepdim, correction, axis)
    dim, c = _correction(op, dim_or_axis(op, dim, axis), unbiased, correction)
    dims = _grads.normalize_dims(lazy.reduce_dims(op, dim, len(input.shape)), len(input.shape))
    attrs = {"dim": dims, "keepdim": keepdim, "correction": c, "every": dim is None or not input.shape}
    values = {"var": lambda: v, "std": lambda: F.sqrt(v), "mean": lambda: m}
    return tuple(autograd.record(f"half_{p}", (input,), F.cast(values[p](), dtype), attrs) for p in parts)


def _half_var_backward(c, g):
    """PyTorch's var_backward: (2 / (n - correction)) * grad * (x - x.mean(dim, keepdim=True))."""
    x, F_, dims = c.inputs[0], c.F, c.attrs["dim"]
    g = _grads.restore_reduced(g, tuple(x.shape), dims, c.attrs["keepdim"])
    dof = math.prod(x.shape[d] for d in dims) - c.attrs["correction"]
    mean = F_.mean(x, dims, keepdim=True)
    if c.attrs["every"] and dof <= 0:  # 2 / dof is inf: NaN where x is its mean, inf elsewhere
        return g * F_.where(x == mean, math.nan, math.inf)
    scale = 2.0 / dof if dof else math.inf
    return scale * g * (x - mean)


def _half_mean_backward(c):
    x, dims = c.inputs[0], c.attrs["dim"]
    return (_grads.spread_reduced(c.g, tuple(x.shape), dims, c.attrs["keepdim"]) / math.prod(x.shape[d] for d in dims),)


def _half_std_backward(c):
    """PyTorch's std_backward: var_backward of (grad / (std * 2)), zero where std is 0."""
    return (_half_var_backward(c, c.F.where(c.output == 0, 0.0, c.g / (c.output * 2))),)


_grads.RULES["half_var"] = lambda c: (_half_var_backward(c, c.g),)
_grads.RULES["half_std"] = _half_std_backward
_grads.RULES["half_mean"] = _half_mean_backward
_grads.RULES["norm_zero"] = lambda c: (None,)  # PyTorch gives no gradient (None), not zeros


@autograd.shown_as("VarMeanBackward0", autograd.input_edge)
def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None, keepdims=None):
    """(var, mean) over ``dim`` in one pass over the graph: the mean is the one the variance subtracts.

    A plain tuple, as PyTorch's. Example: ``v, m = vkml.var_mean(x, 1)``.
    """
    keepdim = F._keepdim_or_keepdims("var_mean", keepdim, keepdims)
    if _half_backward(input):
        return _half_moments("var_mean", input, dim, unbiased, keepdim, correction, axis, ("var", "mean"))
    v, m, dtype = _moments("var_mean", input, dim, unbiased, keepdim, correction, axis)
    return F.cast(v, dtype), F.cast(m, dtype)


@autograd.shown_as("StdMeanBackward0", autograd.input_edge)
def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None, keepdims=None):
    """(std, mean) over ``dim``; see ``var_mean``. Example: ``s, m = vkml.std_mean(x, (0, 1))``."""
    keepdim = F._keepdim_or_keepdims("std_mean", keepdim, keepdims)
    if _half_backward(input):
        return _half_moments("std_mean", input, dim, unbiased, keepdim, correction, axis, ("std", "mean"))
    v, m, dtype = _moments("std_mean", input, dim, unbiased, keepdim, correction, axis)
    return F.cast(_std_of_var(v), dtype), F.cast(m, dtype)


# ---------------------------------------------------------------------- predicates and counts


def _nonzero(op: str, input):
    F._tensor_node(op, input)
    return F.cast(input, T.bool_)  # PyTorch's truth: nonzero, and NaN, is True


def all(input, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """True where every element over ``dim`` is nonzero (NaN counts as nonzero); a bool tensor.

    Any dtype. ``all`` of no elements is True. Exact: it counts the zeros with ``sum``. A uint8
    input gives uint8 (0 or 1), as PyTorch's.
    """
    keepdim = F._keepdim_or_keepdims("all", keepdim, keepdims)
    dim = dim_or_axis("all", dim, axis)
    if _no_dims(dim):  # PyTorch's all(x, dim=()) reduces nothing (sum's reduces everything)
        return _uint8_stays(input, _nonzero("all", input))
    zeros = F.logical_not(_nonzero("all", input))
    return _uint8_stays(input, F.eq(F.sum(zeros, dim, keepdim), 0))


def _no_dims(dim) -> bool:
    return isinstance(dim, (tuple, list)) and len(dim) == 0


def _uint8_stays(input, truth):
    """PyTorch's ``all``/``any`` of a uint8 tensor is uint8 (kept from before it had bool)."""
    return F.cast(truth, T.uint8) if input.dtype is T.uint8 else truth


def any(input, dim=None, keepdim=False, *, axis=None, keepdims=None):
    """True where some element over ``dim`` is nonzero (NaN counts as nonzero); a bool tensor.

    Any dtype. ``any`` of no elements is False. Exact: it counts the nonzeros with ``sum``. A uint8
    input gives uint8, as PyTorch's.
    """
    keepdim = F._keepdim_or_keepdims("any", keepdim, keepdims)
    dim = dim_or_axis("any", dim, axis)
    if _no_dims(dim):  # PyTorch's any(x, dim=()) reduces nothing, as all's
        return _uint8_stays(input, _nonzero("any", input))
    return _uint8_stays(input, F.gt(F.sum(_nonzero("any", input), dim, keepdim), 0))


def count_nonzero(input, dim=None, *, axis=None):
    """The number of nonzero elements over ``dim`` (int64). NaN counts as nonzero. Exact."""
    return F.sum(_nonzero("count_nonzero", input), F._dim_or_axis("count_nonzero", dim, axis))


@autograd.shown_as("NansumBackward0", autograd.input_edge)
def nansum(input, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
    """``sum`` over ``dim`` with NaN taken as zero (the same tree; a NaN's slot adds +0.0).

    ``dtype`` converts the input first, as PyTorch. Integer inputs are ``sum``.
    """
    keepdim = F._keepdim_or_keepdims("nansum", keepdim, keepdims)
    F._tensor_node("nansum", input)
    F._refuse_int_dtype_under_grad(input, dtype)
    x = F.cast(input, dtype) if dtype is not None else input
    if x.dtype.is_float:
        x = F.where(F.ne(x, x), 0.0, x)
    out = F.sum(x, dim_or_axis("nansum", dim, axis), keepdim)
    return F.cast(out, dtype) if dtype is not None else out


def nanmean(input, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
    """Mean over ``dim`` of the elements that are not NaN: their tree sum divided by their count.

    Float dtypes only (PyTorch's RuntimeError otherwise). All-NaN or empty gives NaN.
    """
    keepdim = F._keepdim_or_keepdims("nanmean", keepdim, keepdims)
    node = F._tensor_node("nanmean", input if dtype is None else F.cast(input, dtype))
    if not node.dtype.is_float:  # PyTorch's words
        raise RuntimeError(
            "nanmean(): expected input to have floating point or complex dtype but got "
            f"{F._mutation.torch_name(node.dtype)}"
        )
    x = F.cast(input, dtype) if dtype is not None else input
    out_dtype = x.dtype
    dim = dim_or_axis("nanmean", dim, axis)
    wide = F.cast(x, work_dtype(out_dtype))
    count = F.sum(F.eq(wide, wide), dim, keepdim)
    return F.cast(F.div(nansum(wide, dim, keepdim), F.cast(count, wide.dtype)), out_dtype)


@autograd.shown_as("AminmaxBackward0", autograd.input_edge)
def aminmax(input, *, dim=None, keepdim=False):
    """(min, max) over ``dim`` as ``vkml.return_types.aminmax``: ``amin`` and ``amax`` with their rules.

    An empty reduction raises, as PyTorch.
    """
    node = F._tensor_node("aminmax", input)
    if node.dtype is T.bool_:  # compared as 0 and 1, given back as bool
        lo, hi = aminmax(F.cast(input, T.int32), dim=dim, keepdim=keepdim)
        return return_types.aminmax(F.cast(lo, T.bool_), F.cast(hi, T.bool_))
    if dim is not None:
        dim = lazy.normalize_dim("aminmax", dim, len(node.shape))
    lo = F._reduce("amin", input, dim, keepdim, "aminmax")
    hi = F._reduce("amax", input, dim, keepdim, "aminmax")
    return return_types.aminmax(lo, hi)


# ---------------------------------------------------------------------- norms


def _norm_work(op: str, input, dtype):
    """(float32 tensor to compute in, result dtype), with PyTorch's checks of ``dtype``."""
    node = _float_input(op, input, "Expected a floating point tensor as input")
    out = node.dtype
    if dtype is not None:
        if not isinstance(dtype, T.DType) or not dtype.is_float:
            raise RuntimeError(f"'{op}': dtype should be floating point, got {dtype!r}")
        if dtype.nbytes < node.dtype.nbytes:
            raise RuntimeError(
                f"'{op}': the dtype of the input ({node.dtype.name}) should be convertible without narrowing "
                f"to the specified dtype ({dtype.name})"
            )
        out = dtype
    return F.cast(input, work_dtype(out)), out


def _safe_root(total, root):
    """``root(total)`` with a zero gradient (not NaN) where ``total`` is 0, as PyTorch's norms give."""
    zero = F.eq(total, 0.0)
    return F.where(zero, 0.0, root(F.where(zero, 1.0, total)))


@autograd.shown_as("LinalgVectorNormBackward0", lambda op, input, *a, **k: (autograd.edge(input),))
def _vector_norm(op: str, input, ord, dim, keepdim: bool, dtype):
    if _half_backward(input) and not isinstance(ord, bool) and isinstance(ord, (int, float)) and ord != 0:
        # PyTorch differentiates a float16/bfloat16 norm with its own formula in the input's dtype
        # (every op rounding), not through the float32 ops the value is computed with
        out = _vector_norm_value(op, input.detach(), ord, dim, keepdim, dtype)
        dims = _grads.normalize_dims(lazy.reduce_dims(op, dim, len(input.shape)), len(input.shape))
        return autograd.record("half_vector_norm", (input,), out, {"ord": float(ord), "dim": dims, "keepdim": keepdim})
    return _vector_norm_value(op, input, ord, dim, keepdim, dtype)


def _half_backward(input) -> bool:
    """Whether ``input`` is a float16/bfloat16 tensor that autograd would differentiate."""
    return getattr(input, "dtype", None) in F.HALF_PRECISION and input.requires_grad and autograd.is_grad_enabled()


def _grad_half_vector_norm(c):
    """PyTorch's norm_backward (torch/csrc/autograd/FunctionsManual.cpp), op for op in the input's dtype."""
    x, norm, g, p = c.inputs[0], c.output, c.g, c.attrs["ord"]
    dims, F_ = c.attrs["dim"], c.F
    if not c.attrs["keepdim"]:
        g = _grads.restore_reduced(g, tuple(x.shape), dims, False)
        norm = _grads.restore_reduced(norm, tuple(x.shape), dims, False)
    if p == 1:
        return (F_.sgn(x) * g,)
    if p == 2:
        return (g * F_.where(norm == 0, 0.0, x / norm),)
    if math.isinf(p):  # the gradient of amax(|x|) shared among the ties, NaN counting as a maximum
        a = F_.abs(x)
        mask = F_.logical_or(a == norm, F_.isnan(a))
        return (F_.sgn(x) * ((g / F_.sum(mask, dims, keepdim=True)) * mask),)
    a = F_.abs(x)
    if p < 1:
        scaled = F_.sgn(x) * F_.where(x == 0, 0.0, F_.pow(a, p - 1))
        return (scaled * g * F_.pow(norm, 1 - p),)
    scaled = F_.sgn(x) * F_.pow(a, p - 1) if p < 2 else x * F_.pow(a, p - 2)
    return (scaled * F_.where(norm == 0, 0.0, g / F_.pow(norm, p - 1)),)


_grads.RULES["half_vector_norm"] = _grad_half_vector_norm


def _vector_norm_value(op: str, input, ord, dim, keepdim: bool, dtype):
    x, out_dtype = _norm_work(op, input, dtype)
    if isinstance(ord, bool) or not isinstance(ord, (int, float)):
        raise TypeError(f"'{op}': ord must be a number for a vector norm, got {ord!r}")
    dims = lazy.reduce_dims(op, dim, x.ndim)
    a = F.abs(x)
    if ord == math.inf or ord == -math.inf:
        if F._reduced_count(x.node, dims) == 0:
            raise RuntimeError(
                f"'{op}' cannot compute the {ord} norm on an empty tensor because the operation does not have an "
                "identity"
            )
        out = F._reduce("amax" if ord > 0 else "amin", a, dims, keepdim, op)
    elif ord == 0:
        # the count of nonzeros; the result requires grad but gives none (None), as PyTorch
        count = F.sum(F.cast(F.ne(x, 0.0), T.float32), dims, keepdim)
        out = autograd.record("norm_zero", (x,), count, {})
    elif ord == 1:
        out = F.sum(a, dims, keepdim)
    elif ord == 2:
        out = _safe_root(F.sum(x * x, dims, keepdim), F.sqrt)
    else:
        p = float(ord)
        # |x|^p as pow gives it (0^p is 0 for p > 0, inf for p < 0), with a zero gradient (not
        # 0 * inf = NaN) at x = 0, as PyTorch's
        zero = F.eq(a, 0.0)
        powers = F.where(zero, 0.0 if p > 0 else math.inf, F.pow(F.where(zero, 1.0, a), p))
        out = _safe_root(F.sum(powers, dims, keepdim), lambda s: F.pow(s, 1.0 / p))
    return F.cast(out, out_dtype)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """The vector ``ord``-norm over ``dim`` (every element when None): PyTorch's ``torch.linalg.vector_norm``.

    ord 2: sqrt of the tree sum of x*x; 1: tree sum of |x|; inf / -inf: max / min of |x|; 0: the
    number of nonzeros; any other p: (tree sum of |x|^p)^(1/p). Computed in float32, rounded once
    to the result dtype (the input's, or ``dtype``). The gradient at a zero norm is 0, as PyTorch's.
    """
    return _vector_norm("linalg.vector_norm", x, ord, dim, keepdim, dtype)


def _matrix_norm(op: str, A, ord, dim, keepdim: bool, dtype):
    node = F._tensor_node(op, A)
    if len(node.shape) < 2:
        raise RuntimeError(f"'{op}': The input tensor A must have at least 2 dimensions, got shape {node.shape}")
    if not isinstance(dim, (tuple, list)) or len(dim) != 2:
        raise RuntimeError(f"'{op}': dim must be a 2-tuple, got {dim!r}")
    d0, d1 = (lazy.normalize_dim(op, d, len(node.shape)) for d in dim)
    if d0 == d1:
        raise RuntimeError(f"'{op}': dims must be different, got ({d0}, {d1})")
    if ord == "fro":
        return _vector_norm(op, A, 2, (d0, d1), keepdim, dtype)
    if ord in ("nuc", 2, -2) and not isinstance(ord, bool):
        return _singular_value_norm(op, A, ord, (d0, d1), keepdim, dtype)
    if isinstance(ord, bool) or ord not in (1, -1, math.inf, -math.inf):
        raise RuntimeError(f"'{op}': Order {ord!r} not supported (supported: 'fro', 1, -1, inf, -inf)")
    x, out_dtype = _norm_work(op, A, dtype)
    # ord ±1: the max/min over columns of the column sums; ord ±inf: over rows of the row sums
    summed, over = (d0, d1) if abs(ord) == 1 else (d1, d0)
    sums = F.sum(F.abs(x), summed, keepdim=True)
    out = F._reduce("amax" if ord > 0 else "amin", sums, over, True, op)
    if not keepdim:
        out = F.squeeze(out, (d0, d1))
    return F.cast(out, out_dtype)


def _singular_value_norm(op: str, A, ord, dims, keepdim: bool, dtype):
    """'nuc' (the sum), 2 (the largest) or -2 (the smallest) of the singular values over ``dims``
    (``linalg.svdvals``, computed on the host: vkml/frontend/dense_linalg.py)."""
    if A.dtype.nbytes < 4:  # float16/bfloat16: PyTorch's LAPACK-backed norms refuse them
        names = {"float16": "Half", "bfloat16": "BFloat16"}
        raise RuntimeError(f"{op}: Low precision dtypes not supported. Got {names.get(A.dtype.name, A.dtype.name)}")
    x, out_dtype = _norm_work(op, A, dtype)
    rest = [d for d in range(len(x.shape)) if d not in dims]
    moved = F.permute(x, (*rest, *dims))
    s = dense_linalg.svdvals(moved)
    out = F.sum(s, -1) if ord == "nuc" else F._reduce("amax" if ord == 2 else "amin", s, -1, False, op)
    if keepdim:
        for d in sorted(dims):
            out = F.unsqueeze(out, d)
    return F.cast(out, out_dtype)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """The matrix norm over the two dims ``dim``: 'fro', 'nuc', 1, -1, 2, -2, inf, -inf (PyTorch's
    ``torch.linalg.matrix_norm``).

    'fro' is the vector 2-norm over both dims; 1 / -1 the max / min column sum of |A|; inf /
    -inf the max / min row sum; 'nuc', 2 and -2 the sum, max and min of the singular values
    (``linalg.svdvals``, computed on the host).
    """
    return _matrix_norm("linalg.matrix_norm", A, ord, dim, keepdim, dtype)


def linalg_norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """``torch.linalg.norm``: a vector norm over one dim, a matrix norm over two.

    With ``ord`` and ``dim`` both None, the 2-norm of every element. With ``ord`` and no
    ``dim``, ``A`` must be 1-D (a vector norm) or 2-D (a matrix norm).
    """
    op = "linalg.norm"
    node = F._tensor_node(op, A)
    if dim is not None and not isinstance(dim, (tuple, list)):
        dim = (dim,)
    if dim is None:
        if ord is None:
            return _vector_norm(op, A, 2, None, keepdim, dtype)
        if len(node.shape) not in (1, 2):
            raise RuntimeError(
                f"'{op}': If dim is not specified but ord is, the input must be 1D or 2D. Got {len(node.shape)}D."
            )
        dim = tuple(range(len(node.shape)))
    if len(dim) == 1:
        if isinstance(ord, str):
            raise RuntimeError(f"'{op}': ord={ord!r} is a matrix norm; it needs 2 dims, got dim={tuple(dim)}")
        return _vector_norm(op, A, 2 if ord is None else ord, dim, keepdim, dtype)
    if len(dim) == 2:
        return _matrix_norm(op, A, "fro" if ord is None else ord, tuple(dim), keepdim, dtype)
    raise RuntimeError(f"'{op}': If dim is specified, it must be of length 1 or 2. Got {tuple(dim)}")


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """``torch.norm``: 'fro' (or None) is the 2-norm over ``dim`` (every element when None); a number p
    is ``linalg.vector_norm`` with ord p; 'nuc' the nuclear norm over ``dim`` (the last two dims by default).
    """
    if p == "nuc":
        if dim is None:
            dim = (-2, -1)
        return _matrix_norm("norm", input, "nuc", tuple(dim), keepdim, dtype)
    if p is None or p == "fro":
        p = 2
    if isinstance(p, str):
        raise RuntimeError(f"'norm': p={p!r} is not supported (a number, 'fro' or 'nuc')")
    return _vector_norm("norm", input, p, dim, keepdim, dtype)
