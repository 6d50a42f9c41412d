"""Layers of issue 18 with ``torch.nn.functional``'s names and arguments: channel and alpha dropout, rrelu,
distances, bilinear, embedding_bag, local_response_norm and gumbel_softmax.

Each is a composite of ``vkml.frontend.operators``: no kernel of its own, and its gradient is its
parts'. Re-exported by ``vkml.nn.functional``.

>>> import vkml
>>> import vkml.nn.functional as F
>>> F.pairwise_distance(vkml.zeros(2, 3), vkml.ones(2, 3)).shape
(2,)
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..frontend import autograd, creation, mt19937, mutation
from ..frontend import operators as functions
from ..frontend import random as vkrandom
from ..ops import grads as G
from ..schedule import checks
from . import activation
from . import functional as F

# SELU's alpha · scale: the value alpha dropout drops to, as PyTorch's kernel
_ALPHA_PRIME = 1.7580993408473766


def _probability(op: str, p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"'{op}': dropout probability has to be between 0 and 1, but got {p}")


def _feature_mask(input, p: float, feature: bool):
    """True (kept) with probability 1 - p: one draw per element, or per (sample, channel) for ``feature``."""
    shape = tuple(input.shape)
    if feature:
        shape = shape[:2] + (1,) * (len(shape) - 2)
    return vkrandom.keep_mask(shape, p, input.device)


def _dropout(op: str, input, p: float, training: bool, inplace: bool, alpha: bool, feature: bool):
    """PyTorch's ``_dropout_impl``: identity when not training, p == 0 or empty; zeros for p == 1; else
    kept values scaled by 1/(1-p) (zeroed where dropped), or for ``alpha`` ``x·a·keep + b`` with SELU's
    negative saturation as the dropped value, so mean and variance stay (a, b as PyTorch's)."""
    _probability(op, p)
    if not training or p == 0 or input.numel() == 0:
        return input
    if feature and input.ndim < 2:  # checked only when a mask is drawn, as PyTorch's
        raise RuntimeError(f"'{op}': Feature dropout requires at least 2 dimensions in the input")

    def apply(x):
        if p == 1:
            return x * 0.0
        keep = _feature_mask(x, p, feature)
        if not alpha:
            return functions.where(keep, x * (1.0 / (1.0 - p)), 0.0)
        a = 1.0 / math.sqrt((_ALPHA_PRIME * _ALPHA_PRIME * p + 1) * (1 - p))
        noise = functions.where(keep, a, 0.0)  # keep · a
        shift = functions.where(keep, _ALPHA_PRIME * a * p, -_ALPHA_PRIME * a + _ALPHA_PRIME * a * p)
        return x * noise + shift

    if inplace:
        return mutation.inplace(input, op + "_", apply)
    return apply(input)


def dropout1d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Channel dropout for (N, C, L) or (C, L) inputs.

    Zero whole channels of (N, C, L) or (C, L) with probability ``p`` while ``training``, scaling the rest by
    1/(1-p); masks come from ``vkml.manual_seed``'s generator.

    >>> dropout1d(vkml.ones(2, 3, 4), training=False).shape  # doctest: +SKIP
    (2, 3, 4)
    """
    _probability("dropout1d", p)
    if input.ndim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note that dropout1d exists to "
            "provide channel-wise dropout on inputs with 1 spatial dimension, a channel dimension, and an optional "
            "batch dimension (i.e. 2D or 3D inputs)."
        )
    return _unbatched(
        input, input.ndim == 2, lambda x: _dropout("dropout1d", x, p, training, False, False, True), inplace
    )


def dropout3d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Channel dropout for (N, C, D, H, W) or (C, D, H, W) inputs.

    Zero whole channels of (N, C, D, H, W) or (C, D, H, W) with probability ``p`` while ``training``; any
    other rank warns as PyTorch's and is read as unbatched.

    >>> dropout3d(vkml.ones(1, 2, 2, 2, 2), training=False).shape  # doctest: +SKIP
    (1, 2, 2, 2, 2)
    """
    _probability("dropout3d", p)
    if input.ndim not in (4, 5):
        warnings.warn(
            f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is deprecated and will result in an "
            "error in a future release. To retain the behavior and silence this warning, please use dropout instead. "
            "Note that dropout3d exists to provide channel-wise dropout on inputs with 3 spatial dimensions, a "
            "channel dimension, and an optional batch dimension (i.e. 4D or 5D inputs).",
            stacklevel=2,
        )
    return _unbatched(
        input, input.ndim != 5, lambda x: _dropout("dropout3d", x, p, training, False, False, True), inplace
    )


def _unbatched(input, add_batch: bool, fn, inplace: bool):
    """``fn`` of ``input`` with a batch dim of 1 added and removed around it (``add_batch``), written back when
    ``inplace``."""

    def apply(x):
        if not add_batch:
            return fn(x)
        return functions.squeeze(fn(functions.unsqueeze(x, 0)), 0)

    if inplace:
        return mutation.inplace(input, "dropout_", apply)
    return apply(input)


def alpha_dropout(input, p: float = 0.5, training: bool = False, inplace: bool = False):
    """Dropout that keeps a SELU network's mean and variance.

    Dropped elements take SELU's negative saturation, and an affine map keeps
    mean 0 and variance 1 (PyTorch's a and b). Identity unless ``training`` (default False, as PyTorch's).

    >>> alpha_dropout(vkml.ones(3)).tolist()  # doctest: +SKIP
    [1.0, 1.0, 1.0]
    """
    return _dropout("alpha_dropout", input, p, training, inplace, True, False)


def feature_alpha_dropout(input, p: float = 0.5, training: bool = False, inplace: bool = False):
    """``alpha_dropout`` of whole channels (dim 1), one draw per (sample, channel).

    >>> feature_alpha_dropout(vkml.ones(2, 3)).shape  # doctest: +SKIP
    (2, 3)
    """
    return _dropout("feature_alpha_dropout", input, p, training, inplace, True, True)


def rrelu(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False, inplace: bool = False):
    """Randomized leaky ReLU.

    ``x`` for x >= 0, else ``a·x`` with ``a`` drawn uniform in [lower, upper) per element
    while ``training``; ``leaky_relu(x, (lower + upper) / 2)`` otherwise. The gradient is 1 or ``a``.

    >>> rrelu(vkml.tensor([-2.0, 1.0]), 0.25, 0.25).tolist()  # doctest: +SKIP
    [-0.5, 1.0]
    """
    activation._float_input("rrelu", input)
    if not training:
        return activation.leaky_relu(input, (lower + upper) / 2, inplace)
    if lower > upper:
        raise RuntimeError(
            f"'rrelu': Lower bound should be less than or equal to the upper bound, got {lower} > {upper}"
        )

    def apply(x):
        u = vkrandom.random_tensor("uniform", x.shape, x.dtype, x.device)
        slope = u * (float(upper) - float(lower)) + float(lower)
        return functions.where(x >= 0, x, x * slope)

    if inplace:
        return mutation.inplace(input, "rrelu_", apply)
    return apply(input)


def rrelu_(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False):
    """``rrelu`` written into ``input``."""
    return rrelu(input, lower, upper, training, inplace=True)


def defer_value_check(op: str, guard, bad, message: str, error=ValueError) -> None:
    """``error(message)`` if any of the bool tensor ``bad`` is True, raised when a result computed through
    ``guard`` is read (reading ``bad`` here would wait for the device), as ``cross_entropy``'s index check."""
    if bad.numel() == 0:
        return
    flag = bad.any()
    called = f" (called at {checks.user_line()})"

    def describe(values):
        return f"'{op}'{called}: {message}" if values[0] else None

    if guard.node.realized:
        if flag.item():
            raise error(f"'{op}': {message}")
        return
    checks.defer(guard.node, (flag.node,), describe, error)


# ---------------------------------------------------------------------- inplace activations


def relu(input, inplace: bool = False):
    """``max(x, 0)`` (``vkml.relu``, any dtype), written into ``input`` when ``inplace``, as PyTorch's."""
    if inplace:
        return mutation.inplace(input, "relu_", functions.relu)
    return functions.relu(input)


def relu_(input):
    """``relu`` written into ``input``."""
    return relu(input, inplace=True)


def elu_(input, alpha: float = 1.0):
    """``elu`` written into ``input``."""
    return activation.elu(input, alpha, inplace=True)


def selu_(input):
    """``selu`` written into ``input``."""
    return activation.selu(input, inplace=True)


def celu_(input, alpha: float = 1.0):
    """``celu`` written into ``input``."""
    return activation.celu(input, alpha, inplace=True)


def leaky_relu_(input, negative_slope: float = 0.01):
    """``leaky_relu`` written into ``input``."""
    return activation.leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input, min_val: float = -1.0, max_val: float = 1.0):
    """``hardtanh`` written into ``input``."""
    return activation.hardtanh(input, min_val, max_val, inplace=True)


def threshold_(input, threshold: float, value: float):
    """``threshold`` written into ``input``."""
    return activation.threshold(input, threshold, value, inplace=True)


# ---------------------------------------------------------------------- distances


def _tensor_argument(op: str, name: str, x) -> None:
    if not isinstance(x, functions._tensor.Tensor):
        raise TypeError(f"'{op}': {name} must be a vkml.Tensor, got {type(x).__name__}")


def _float_tensor(op: str, name: str, x) -> None:
    _tensor_argument(op, name, x)
    if not x.dtype.is_float:
        raise RuntimeError(f"'{op}': expected a floating point {name}, got {x.dtype.name}")


def cosine_similarity(x1, x2, dim: int = 1, eps: float = 1e-8):
    """Cosine similarity of ``x1`` and ``x2`` along ``dim``.

    ``sum(x1/‖x1‖ · x2/‖x2‖)`` over ``dim`` after broadcasting, each norm clamped below at ``eps``
    (PyTorch's formula: normalise first, then the dot product).

    >>> cosine_similarity(vkml.tensor([[1.0, 0.0]]), vkml.tensor([[1.0, 1.0]])).tolist()  # doctest: +SKIP
    [0.7071067690849304]
    """
    _tensor_argument("cosine_similarity", "x1", x1)
    _tensor_argument("cosine_similarity", "x2", x2)
    common = functions.promote_types(x1.dtype, x2.dtype)
    if not common.is_float:
        raise RuntimeError(
            f"expected common dtype to be floating point, yet common dtype is {mutation.torch_name(common)}"
        )
    x1, x2 = functions.cast(x1, common), functions.cast(x2, common)
    shape = functions.lazy.broadcast_shapes("cosine_similarity", tuple(x1.shape), tuple(x2.shape))
    ndim = max(len(shape), 1)
    if not -ndim <= dim < ndim:
        raise IndexError(
            f"'cosine_similarity': Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {dim})"
        )
    a, b = functions.expand(x1, *shape), functions.expand(x2, *shape)
    na, nb = _clamped_norm(a, dim, eps), _clamped_norm(b, dim, eps)
    if not autograd.is_grad_enabled():
        return ((a / na) * (b / nb)).sum(dim)
    return (_shown_normalized(a / na, x1) * _shown_normalized(b / nb, x2)).sum(dim)


def _shown_normalized(quotient, x):
    """``quotient`` = x / max(‖x‖, eps) shown as PyTorch's nodes: ``DivBackward0(x, CloneBackward0(
    LinalgVectorNormBackward0(x)))`` (its norm clamped in place on a clone)."""
    if quotient._ctx is None or not x.requires_grad or tuple(x.shape) != tuple(quotient.shape):
        return quotient  # a broadcast operand keeps vkml's nodes
    norm = (autograd.GraphNode("LinalgVectorNormBackward0", (autograd.edge(x),)), 0)
    return autograd.show(
        quotient, "DivBackward0", (autograd.edge(x), (autograd.GraphNode("CloneBackward0", (norm,)), 0))
    )


def _clamped_norm(x, dim: int, eps: float):
    """max(‖x‖, eps) in value, with ‖x‖'s own gradient (PyTorch clamps the norm in place under no_grad, so its
    gradient passes the clamp unchanged); n - n.detach() is exactly 0 where the norm is below eps (finite), and the
    norm is used as it is elsewhere, so that an infinite norm stays infinite (inf - inf would be NaN)."""
    n = x.norm(2, dim=dim, keepdim=True)
    return functions.where(n >= eps, n, n - n.detach() + eps)


def pairwise_distance(x1, x2, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
    """``‖x1 - x2 + eps‖_p`` over the last dim (PyTorch's formula, ``eps`` added to each difference).

    >>> pairwise_distance(vkml.zeros(1, 2), vkml.ones(1, 2), eps=0.0).tolist()  # doctest: +SKIP
    [1.4142135381698608]
    """
    _tensor_argument("pairwise_distance", "x1", x1)
    _tensor_argument("pairwise_distance", "x2", x2)
    ndim = max(x1.ndim, x2.ndim)
    # eps is a float scalar whatever its Python type: integer inputs give the default float dtype, as PyTorch's
    diff = x1 - x2 + float(eps)
    if ndim == 0:
        return diff.norm(p)
    return diff.norm(p, dim=ndim - 1, keepdim=keepdim)


def pdist(input, p: float = 2.0):
    """``‖x_i - x_j‖_p`` for every pair of rows i < j of an (N, M) ``input``, in row-major order of (i, j):
    N·(N-1)/2 values.

    >>> pdist(vkml.tensor([[0.0], [1.0], [3.0]])).tolist()  # doctest: +SKIP
    [1.0, 3.0, 2.0]
    """
    _float_tensor("pdist", "input", input)
    if input.ndim != 2:
        raise RuntimeError(f"'pdist': pdist only supports 2D tensors, got: {input.ndim}D")
    if p < 0:
        raise RuntimeError("'pdist': pdist only supports non-negative p values")
    n = input.shape[0]
    i, j = np.triu_indices(n, 1)
    if i.size == 0:
        return creation.zeros(0, dtype=input.dtype, device=input.device)
    diff = functions.getitem(input, (i,)) - functions.getitem(input, (j,))
    if p == 0:  # a count of nonzeros: PyTorch's pdist gives the input a zero gradient (norm alone gives None)
        return mutation.zero_gradient_link(diff.norm(p, dim=1), input)
    return diff.norm(p, dim=1)


def bilinear(input1, input2, weight, bias=None):
    """The bilinear map ``x1ᵀ A x2 + b`` over the last dims.

    ``y[..., o] = Σ_ij input1[..., i] · weight[o, i, j] · input2[..., j] + bias[o]``: one ``matmul`` of
    input1 with the weight, then a product with input2 summed over j.

    >>> bilinear(vkml.ones(2, 3), vkml.ones(2, 4), vkml.ones(5, 3, 4)).shape  # doctest: +SKIP
    (2, 5)
    """
    if input1.ndim != input2.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.ndim} and {input2.ndim}")
    if tuple(input1.shape[:-1]) != tuple(input2.shape[:-1]):
        raise RuntimeError(
            f"bilinear(): input batch dimensions do not match: got {list(input1.shape)} and {list(input2.shape)}"
        )
    if weight.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-D (out, in1, in2), got {weight.ndim}-D")
    out, in1, in2 = weight.shape
    if input1.shape[-1] != in1:
        raise RuntimeError(
            f"bilinear(): input1 size does not match weight size: got {input1.shape[-1]} but expected {in1}"
        )
    if input2.shape[-1] != in2:
        raise RuntimeError(
            f"bilinear(): input2 size does not match weight size: got {input2.shape[-1]} but expected {in2}"
        )
    if bias is not None and tuple(bias.shape) != (out,):
        raise RuntimeError(
            f"bilinear(): bias size does not match weight size: got {bias.shape[-1] if bias.ndim else 0} "
            f"but expected {out}"
        )
    lead = tuple(input1.shape[:-1])
    a = functions.reshape(input1, -1, in1)
    if weight.dtype in functions.HALF_PRECISION and a.dtype is weight.dtype and input2.dtype is weight.dtype:
        b = functions.reshape(input2, -1, in2)
        y = autograd.record("half_bilinear", (a, b, weight), _half_bilinear(a.detach(), b.detach(), weight.detach()))
    else:
        w = functions.reshape(functions.permute(weight, (1, 0, 2)), in1, out * in2)
        t = functions.reshape(functions.matmul(a, w), -1, out, in2)  # (B, out, in2)
        y = (t * functions.unsqueeze(functions.reshape(input2, -1, in2), 1)).sum(-1)
    if bias is not None:
        y = y + bias
    return functions.reshape(y, *lead, out)


def _half_first_product(a, weight):
    """(B, out, in2): Σ_i a[b, i]·weight[o, i, j], float32 sums rounded to the dtype (PyTorch's first bmm)."""
    out, in1, in2 = weight.shape
    w = functions.reshape(functions.permute(weight, (1, 0, 2)), in1, out * in2)
    return functions.reshape(functions.matmul(a, w), -1, out, in2)


def _half_bilinear(a, b, weight):
    """PyTorch's half ``_trilinear`` (aten/src/ATen/native/Linear.cpp): two products, each a float32 sum
    rounded to the dtype: y[b, o] = Σ_j t[b, o, j]·b[b, j] with t the first product."""
    t = _half_first_product(a, weight)
    wide_t, wide_b = functions.half_in_float32(t, functions.unsqueeze(b, 1))
    return functions.cast((wide_t * wide_b).sum(-1), t.dtype)


def _add_in_order(terms):
    """Σ_o terms[:, o] added one after another in the dtype (``_trilinear``'s loop over the out dim)."""
    total = terms[:, 0]
    for o in range(1, terms.shape[1]):
        total = total + terms[:, o]
    return total


def _grad_half_bilinear(c):
    """``_trilinear_backward``: each gradient is itself a ``_trilinear`` of the other two operands and g, its
    loop over the out dim adding the terms in the dtype where that dim is summed."""
    a, b, weight = c.inputs
    g = c.g  # (B, out)
    grads = [None, None, None]
    if c.needs[0]:  # Σ_o (Σ_j (g[b, o]·w[o, i, j]) b[b, j])
        scaled = functions.unsqueeze(functions.unsqueeze(g, -1), -1) * functions.unsqueeze(weight, 0)  # (B, o, i, j)
        column = functions.unsqueeze(functions.unsqueeze(b, 1), -1)  # (B, 1, in2, 1)
        grads[0] = _add_in_order(functions.squeeze(functions.matmul(scaled, column), -1))
    if c.needs[1]:  # Σ_o (Σ_i a[b, i]·w[o, i, j])·g[b, o]
        grads[1] = _add_in_order(_half_first_product(a, weight) * functions.unsqueeze(g, -1))
    if c.needs[2]:  # Σ_b (a[b, i]·g[b, o])·b[b, j]
        scaled = functions.unsqueeze(a, 1) * functions.unsqueeze(g, -1)  # (B, out, in1)
        grads[2] = functions.matmul(functions.permute(scaled, (1, 2, 0)), b)
    return tuple(grads)


G.RULES["half_bilinear"] = _grad_half_bilinear


# ---------------------------------------------------------------------- embedding_bag


def embedding_bag(
    input,
    weight,
    offsets=None,
    max_norm=None,
    norm_type: float = 2,
    scale_grad_by_freq: bool = False,
    mode: str = "mean",
    sparse: bool = False,
    per_sample_weights=None,
    include_last_offset: bool = False,
    padding_idx=None,
):
    """Sums, means or maxima of bags of embeddings.

    The bags of ``weight``'s rows are the rows of a 2-D ``input`` (B, N), or the runs of a
    1-D ``input`` that ``offsets`` starts.

    No gather and no reading of ``offsets``: each index's bag is the count of offsets at or before
    its position, minus one (a comparison and a sum), the rows come from ``embedding``'s one-hot
    product, and a bag's sum is a 0/1 matrix product over the bags. 'mean' divides by the count of
    indices in the bag (``padding_idx`` not counted), 'max' takes ``amax`` over the bag's members;
    an empty bag gives zeros in every mode. ``sparse=True`` ('sum', 'mean') gives a leaf ``weight`` PyTorch's
    sparse COO gradient (``F.embedding``'s, docs/sparse.md). Cost: B·N·D multiply-adds for the bags' product and,
    for 'max', a (B, N, D) select — sized for the bags of a training step, not for huge tables.

    An index outside [0, num_embeddings) is PyTorch's RuntimeError in its bag kernels' words ("Expected idx
    >= 0 && idx < num_embeddings"), raised when a result is read; PyTorch's sum and mean kernels without
    ``padding_idx`` word it otherwise, naming the index's position, which vkml does not find.

    >>> embedding_bag(vkml.tensor([[0, 1]]), vkml.tensor([[1.0], [3.0]])).tolist()  # doctest: +SKIP
    [[2.0]]
    """
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(
            f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it must "
            f"have the same shape as the input ({input.shape})"
        )
    if weight.ndim != 2:
        raise ValueError(f"'embedding_bag': weight has to be a 2D Tensor, but got Tensor of dimension {weight.ndim}")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError(
                "'embedding_bag': if input is 2D, then offsets has to be None, as input is treated is a mini-batch of fixed length "
                f"sequences. However, found offsets of type {_type_name(offsets)}"
            )
        bags, length = input.shape
        include_last_offset = False
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("'embedding_bag': offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("'embedding_bag': offsets has to be a 1D Tensor")
        bags, length = None, input.shape[0]
    else:
        raise ValueError(f"'embedding_bag': input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"'embedding_bag': mode has to be one of sum, mean or max, got {mode!r}")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("'embedding_bag': max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("'embedding_bag': max mode does not support sparse weights")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for mode='sum' "
            f"(got mode='{mode}'). Please open a feature request on GitHub."
        )
    if scale_grad_by_freq:
        # PyTorch's CPU kernel scales each row's gradient by another row's count (its result is no
        # frequency scaling that could be matched), so vkml refuses instead of guessing
        raise NotImplementedError("'embedding_bag': scale_grad_by_freq=True is not supported")
    num = weight.shape[0]
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise RuntimeError(
                f"'embedding_bag': padding_idx must be within the number of embeddings, {-num} through {num - 1}, "
                f"but got {padding_idx}"
            )
        padding_idx %= num
    if per_sample_weights is not None and per_sample_weights.dtype is not weight.dtype:
        raise RuntimeError(
            "'embedding_bag': Expected tensor for argument #1 'weight' to have the same type as tensor for argument "
            f"#1 'per_sample_weights'; but type {weight.type()} does not equal {per_sample_weights.type()} (while "
            "checking arguments for embedding_bag)"
        )
    flat = functions.reshape(input, -1)
    # (n, D); renorms as PyTorch's. With sparse=True the rows' gradient (each bag's gradient, scaled by the
    # sample weight or the bag's size) becomes the weight's sparse one, padding ids left out: PyTorch's
    rows = F._lookup(  # an index out of range: PyTorch's bag kernel's words
        flat,
        weight,
        padding_idx if sparse else None,
        max_norm=max_norm,
        norm_type=norm_type,
        sparse=sparse,
        bounds_message=_bag_index_message if mode == "max" or padding_idx is not None else _bag_position_message,
        bounds_error=RuntimeError,
    )
    used = None if padding_idx is None else flat != padding_idx
    if per_sample_weights is not None:
        rows = rows * functions.unsqueeze(functions.reshape(per_sample_weights, -1), 1)
    if used is not None:
        rows = functions.where(functions.unsqueeze(used, 1), rows, 0.0)
    n = flat.shape[0]
    if bags is not None:  # fixed-length bags: member k of bag b is flat[b·length + k]
        member = functions.reshape(_positions(n, flat.device) // max(length, 1), 1, n) == functions.reshape(
            _positions(bags, flat.device), bags, 1
        )
    else:
        if offsets.dtype.is_float or offsets.dtype.name == "bool":
            raise TypeError(f"'embedding_bag': offsets must be an integer tensor, got {offsets.dtype.name}")
        bags = offsets.shape[0] - 1 if include_last_offset else offsets.shape[0]
        # with include_last_offset the last offset only ends the last bag, which runs to the end of the
        # input as PyTorch's (its value should be the input's length)
        starts = functions.reshape(offsets[:bags], 1, -1)
        # bag of position k: the last offset at or before k
        bag_of = (starts <= functions.reshape(_positions(n, flat.device), n, 1)).long().sum(1) - 1
        member = functions.reshape(bag_of, 1, n) == functions.reshape(_positions(bags, flat.device), bags, 1)
        if offsets.shape[0]:
            first, last = offsets[0], offsets[-1]
            defer_value_check(
                "embedding_bag",
                member,
                first != 0,
                "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from position 0",
                RuntimeError,
            )
            defer_value_check(
                "embedding_bag",
                member,
                last > n,
                f"offsets[-1] can not be greater than input's length {n}",
                RuntimeError,
            )
    if used is not None:
        member = member & functions.reshape(used, 1, n)
    if mode == "max":
        big = functions.where(functions.unsqueeze(member, 2), functions.unsqueeze(rows, 0), -math.inf)
        out = (
            functions.amax(big, 1)
            if n
            else creation.zeros(bags, weight.shape[1], dtype=weight.dtype, device=weight.device)
        )
        empty = functions.logical_not(member.any(1)) if n else None
        return out if empty is None else functions.where(functions.unsqueeze(empty, 1), 0.0, out)
    out = functions.matmul(functions.cast(member, weight.dtype), rows)
    if mode == "mean":
        count = member.long().sum(1)
        out = out / functions.unsqueeze(functions.clamp(count, min=1), 1)
    return out


def _type_name(value) -> str:
    """How PyTorch's messages print a value's type: ``<class 'vkml.Tensor'>`` for a tensor (its public path)."""
    if isinstance(value, functions._tensor.Tensor):
        return "<class 'vkml.Tensor'>"
    return str(type(value))


def _bag_index_message(num: int):
    def message(value: int, called: str) -> str:
        return (
            f"'embedding_bag'{called}: embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx "
            f"to be {value}"
        )

    return message


def _bag_position_message(num: int):
    """PyTorch's words for a bad index of a sum or mean bag without padding_idx (its index_select_add kernel):
    the index's position in the input, then its value."""

    def message(value: int, called: str, position: int) -> str:
        return (
            f"'embedding_bag'{called}: Index {position} of input takes value {value} which is not in the valid "
            f"range [0, {num})"
        )

    message.takes_position = True
    return message


def _positions(n: int, device):
    return F._class_indices(n, device)


# ---------------------------------------------------------------------- local_response_norm, gumbel_softmax


def local_response_norm(input, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
    """Local response normalisation over neighbouring channels.

    ``x / (k + alpha/size · Σ x²)^beta``, the sum over ``size`` neighbouring channels (dim 1), zero-padded
    ``size//2`` before and ``(size-1)//2`` after, as PyTorch's.

    The window sum adds ``size`` shifted slices of the padded squares in channel order; PyTorch's
    average pool sums in another order, so the last bits may differ.

    >>> local_response_norm(vkml.ones(1, 3, 2), 2).shape  # doctest: +SKIP
    (1, 3, 2)
    """
    if input.ndim < 3:
        raise ValueError(
            f"'local_response_norm': Expected 3D or higher dimensionality input (got {input.ndim} dimensions)"
        )
    if input.numel() == 0:
        return input
    channels = input.shape[1]
    sq = input * input
    pad = [0, 0] * (input.ndim - 2) + [size // 2, (size - 1) // 2]
    padded = functions.constant_pad_nd(sq, pad, 0.0)
    total = None
    for s in range(size):
        part = padded.narrow(1, s, channels)
        total = part if total is None else total + part
    div = functions.pow(total * (1.0 / size) * alpha + k, beta)
    return input / div


def gumbel_softmax(logits, tau: float = 1, hard: bool = False, eps: float = 1e-10, dim: int = -1):
    """A sample of the Gumbel-softmax distribution over ``dim``, soft or one-hot.

    ``softmax((logits + g) / tau, dim)`` with Gumbel(0, 1) noise ``g`` from ``vkml.manual_seed``'s generator;
    ``hard`` returns the one-hot argmax with the soft sample's gradient (``y_hard - y_soft.detach() + y_soft``).

    >>> gumbel_softmax(vkml.zeros(2, 3), hard=True).sum(-1).tolist()  # doctest: +SKIP
    [1.0, 1.0]
    """
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    # PyTorch's draw: Exp(1) values of the logits' dtype (exponential_), the noise -log of them
    exponential = vkrandom.host_draw(
        "gumbel_softmax", logits.shape, logits.dtype, logits.device, None, mt19937.exponential, 1.0
    )
    gumbels = (logits - functions.log(exponential)) / tau
    y_soft = functions.softmax(gumbels, dim)
    if not hard:
        return y_soft
    d = functions.lazy.normalize_dim("gumbel_softmax", dim, y_soft.ndim)
    index = functions.argmax(y_soft, d, keepdim=True)
    classes = functions.reshape(
        _positions(y_soft.shape[d], y_soft.device), *[-1 if i == d else 1 for i in range(y_soft.ndim)]
    )
    y_hard = functions.cast(index == classes, y_soft.dtype)
    return y_hard - y_soft.detach() + y_soft


FUNCTIONS = [
    "relu",
    "relu_",
    "elu_",
    "selu_",
    "celu_",
    "leaky_relu_",
    "hardtanh_",
    "threshold_",
    "dropout1d",
    "dropout3d",
    "alpha_dropout",
    "feature_alpha_dropout",
    "rrelu",
    "rrelu_",
    "cosine_similarity",
    "pairwise_distance",
    "pdist",
    "bilinear",
    "embedding_bag",
    "local_response_norm",
    "gumbel_softmax",
]
