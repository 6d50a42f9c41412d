"""``vkml.nn.functional``: activations and normalisers with ``torch.nn.functional``'s names and defaults.

Each function calls a registered op (``vkml/ops/``) or a composite of ``vkml.frontend.operators``;
nothing here computes on its own.

>>> import vkml
>>> import vkml.nn.functional as F
>>> F.relu(vkml.tensor([-1.0, 2.0])).tolist()
[0.0, 2.0]
"""

from __future__ import annotations

import collections
import functools
import warnings
import weakref

from ..errors import DTypeError, ShapeError
from ..frontend import amp as _amp
from ..frontend import autograd, creation, memory_format, mutation
from ..frontend import operators as functions
from ..frontend import random as vkrandom
from ..frontend import shape as shape_ops
from ..frontend.caller import user_stacklevel
from ..frontend.dtype_info import scalar_type_name
from ..graph import build as lazy
from ..graph.node import Matmul, Node, Op
from ..ir import types as T
from ..ops import grads as G
from ..schedule import checks
from ..schedule import scheduler as _scheduler
from .module import Parameter

relu = functions.relu
softmax = functions.softmax
log_softmax = functions.log_softmax
sigmoid = functions.sigmoid
tanh = functions.tanh


def _no_integer_kernel(kernel: str, input) -> None:
    """PyTorch's NotImplementedError for an op with float kernels only (gelu, softplus of an int tensor)."""
    node = functions._tensor_node(kernel, input)
    if not node.dtype.is_float:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{mutation.torch_name(node.dtype)}'")


def gelu(input, approximate: str = "none"):
    """x·Φ(x): the exact erf form (``approximate='none'``) or the tanh approximation (``'tanh'``).

    See docs/ops/gelu.md and docs/ops/gelu_tanh.md for precision and the ±inf divergence.

    >>> gelu(vkml.tensor([0.0, 1.0])).tolist()  # doctest: +SKIP
    [0.0, 0.8413447141647339]
    """
    _no_integer_kernel("GeluKernelImpl", input)
    if approximate == "none":
        return functions._elementwise("gelu", input)
    if approximate == "tanh":
        return functions._elementwise("gelu_tanh", input)
    raise RuntimeError(f"'gelu': approximate must be 'none' or 'tanh', got {approximate!r}")


def softplus(input, beta: float = 1.0, threshold: float = 20.0):
    """log(1 + exp(beta·x)) / beta, and x itself where beta·x > threshold (PyTorch's definition).

    The defaults (beta=1, threshold=20) are one registered op (docs/ops/softplus.md). Other
    values compose it in float32 — beta·x, the op, a division by beta, a select — and round
    once at the end for float16, as PyTorch's CPU kernel does; this adds up to two roundings.

    >>> softplus(vkml.tensor([0.0]), beta=2.0).tolist()  # doctest: +SKIP
    [0.3465735912322998]
    """
    _no_integer_kernel("softplus_cpu", input)
    if beta == 1 and threshold == 20:
        return functions._elementwise("softplus", input)
    if beta == 0:
        raise ValueError("'softplus': beta must be nonzero")
    node = functions._tensor_node("softplus", input)
    x = functions.cast(input, T.float32) if node.dtype in (T.float16, T.bfloat16) else input
    scaled = x * float(beta)
    smooth = functions._elementwise("softplus", scaled)
    if threshold > 20 and node.dtype is T.float64:
        # the op returns z itself above 20; log1p(exp(-z)) (up to e^-20 relative) matters in float64
        smooth = smooth + functions.where(scaled > 20.0, (-scaled).exp().log1p(), 0.0)
    if beta != 1:
        smooth = smooth / float(beta)
    out = functions.where(scaled > float(threshold), x, smooth)
    return functions.cast(out, node.dtype) if node.dtype in (T.float16, T.bfloat16) else out


def pad(input, pad, mode: str = "constant", value: float | None = None):
    """Pad with a constant, or by ``mode`` 'reflect', 'replicate' or 'circular' (docs/ops/pad_nd.md).

    ``pad`` lists (before, after) from the last dim back.

    Mode 'constant' is a view, not a copy: the padding is index arithmetic in the kernel that
    reads it; negative amounts crop. Same as ``vkml.constant_pad_nd`` (docs/ops/constant_pad_nd.md).
    Where nothing grows (zero or negative amounts) every mode gives a copy: as PyTorch's, the
    result never shares the input's storage.

    >>> pad(vkml.tensor([[1.0]]), (1, 1)).tolist()  # doctest: +SKIP
    [[0.0, 1.0, 0.0]]
    """
    if mode != "constant":  # reflect, replicate, circular: vkml/frontend/shape.py
        if mode not in shape_ops.PAD_MODES:
            raise NotImplementedError(f"'pad': Unrecognised padding mode {mode}")
        if value is not None:
            raise RuntimeError(f"'pad': Padding mode \"{mode}\" doesn't take in value argument")
        out = shape_ops.pad_nd(input, pad, mode)
        if mode != "circular" and out._ctx is not None:  # PyTorch's one node (circular: its CopySlices)
            kind = "Reflection" if mode == "reflect" else "Replication"
            autograd.show(out, f"{kind}Pad{len(pad) // 2}DBackward0", (autograd.edge(input),))
        return out
    return functions.constant_pad_nd(input, pad, 0.0 if value is None else value)


# ---------------------------------------------------------------------- layers and losses


@autograd.shown_as(autograd.linear_name, autograd.linear_edges)
def linear(input, weight, bias=None):
    """``input @ weight.T + bias`` (weight: (out_features, in_features)).

    >>> linear(vkml.ones(2, 3), vkml.ones(4, 3)).shape  # doctest: +SKIP
    (2, 4)
    """
    if bias is not None:
        recorded = _linear_recorded(input, weight, bias)
        if recorded is not None:
            return recorded
    if getattr(input, "ndim", 1) == 0 or getattr(weight, "ndim", 1) == 0:
        raise RuntimeError(
            f"both arguments to linear need to be at least 1D, but they are {input.ndim}D and {weight.ndim}D"
        )
    if bias is not None:  # PyTorch's addmm checks, before matmul's (vkml/frontend/dtype_info.py)
        _linear_dtypes(input, weight, bias)
        if _adds_bias_before_rounding(input, weight, bias):
            wide = T.float32  # float16/bfloat16 products are exact in float32: the sums are the half matmul's
            out = functions.matmul(functions.cast(input, wide), functions.transpose(functions.cast(weight, wide), 0, 1))
            return functions.cast(out + functions.cast(bias, wide), input.dtype)
    out = functions.matmul(input, functions.transpose(weight, 0, 1))
    return out if bias is None else out + bias


def _linear_recorded(input, weight, bias):
    """The usual training ``linear`` (float32 matrices, grad mode on, nothing watching the graph) as ONE
    recorded op ``linear``, or None for every other case.

    The value is the one the operators compute (transpose, matmul, add: the same nodes, so the same
    kernels and bits), built with recording off; the rule (``_linear_grad``) builds the gradients those
    three ops' rules build, op for op. One context instead of three: a third of the recording's work,
    and of the backward's rules. Saved-tensor hooks, a checkpoint's op count, anomaly mode and autocast
    see the three ops, as before."""
    if not autograd.records_composites_whole():
        return None
    if (
        input.__class__ not in _PLAIN_TENSORS
        or weight.__class__ not in _PLAIN_TENSORS
        or bias.__class__ not in _PLAIN_TENSORS
        or _amp._state.dtypes
    ):
        return None
    x, w, b = input.node, weight.node, bias.node  # a view's brought up to date, as the operators read it
    if not (input.requires_grad or weight.requires_grad or bias.requires_grad):
        return None
    if x.dtype is not _F32 or w.dtype is not _F32 or b.dtype is not _F32:
        return None
    if len(x.shape) != 2 or len(w.shape) != 2 or len(b.shape) != 1 or x.shape[1] != w.shape[1]:
        return None
    if b.shape[0] != w.shape[0] or functions.split_k_chunks(1, x.shape[0], w.shape[0], x.shape[1]) > 1:
        return None
    if 0 in x.shape or 0 in w.shape:  # matmul lowers an empty product as a sum of products, not the tiled kernel
        return None
    node = None
    if x.device is w.device and not (lazy.is_eager() or memory_format.ACTIVE):
        # the operators' nodes: matmul's product of the input and the weight's transposed view, and add's
        # of the bias broadcast (lazy's fast path: None until the general path has met these kinds)
        node = lazy.binary_fast("add", _product(x, lazy.permute_node(w, _SWAPPED)), b)
    if node is not None:
        out = _Tensor(node)
    else:
        autograd._mode.enabled = False  # no_grad() for the value, without its object
        try:
            out = functions.matmul(input, functions.transpose(weight, 0, 1)) + bias
        finally:
            autograd._mode.enabled = True
    return autograd.record("linear", (input, weight, bias), out)


def _linear_grad(c):
    """``linear``'s gradients as its operators' rules build them: add's (the bias's, summed over the
    batch), matmul's (``x^T @ g`` then ``g @ (w^T)^T``, over the transposed weight's view) and permute's
    (the weight's: that product transposed back)."""
    x, w, b = c.inputs
    g = c.g
    gn = g.node
    m, n = gn.shape
    k = w.shape[1]
    if autograd._mode.enabled or lazy.is_eager() or memory_format.ACTIVE or gn.dtype is not _F32:
        direct = False  # create_graph (the operators record their ops), or a mode the operators act on
    elif m == 0 or n == 0 or k == 0:
        direct = False  # an empty product: matmul's sum of products (the tiled kernel would read past a buffer)
    else:  # matmul splits no product's k, so the products are the nodes below
        direct = functions.split_k_chunks(1, k, n, m) == 1 and functions.split_k_chunks(1, m, k, n) == 1
    grad_bias = grad_weight = grad_input = None
    if c.needs[2]:
        if direct:  # unbroadcast's nodes: the sum over the batch, kept as (1, n), reshaped to (n,)
            grad_bias = _Tensor(lazy.reshape_node(lazy.reduce("sum", gn, _BATCH_DIM, True, "sum"), (n,)))
        else:
            grad_bias = G.unbroadcast(g, tuple(b.shape))
    if c.needs[1]:
        if direct:  # (x^T @ g), transposed back: permute views as the operators make them
            grad_weight = _Tensor(lazy.permute_node(_product(lazy.permute_node(x.node, _SWAPPED), gn), _SWAPPED))
        else:
            grad_weight = (x.transpose(-1, -2) @ g).permute(1, 0)
    if c.needs[0]:
        if direct:  # g @ (w^T)^T: the transposed view, transposed again
            grad_input = _Tensor(_product(gn, lazy.permute_node(lazy.permute_node(w.node, _SWAPPED), _SWAPPED)))
        else:
            grad_input = g @ w.permute(1, 0).transpose(-1, -2)
    return grad_input, grad_weight, grad_bias


def _product(a: Node, b: Node) -> Node:
    """matmul's node of float32 matrices ``a`` (m, k) and ``b`` (k, n) whose k it does not split."""
    return Node(Op.MATMUL, (a, b), _PRODUCTS, (a.shape[0], b.shape[1]), _F32, a.device)


G.RULES["linear"] = _linear_grad
_F32 = T.float32
_PRODUCTS = Matmul(_F32)  # a float32 matmul's products, added in float32
_SWAPPED = (1, 0)
_BATCH_DIM = (0,)
_Tensor = functions._tensor.Tensor
_PLAIN_TENSORS = (functions._tensor.Tensor, Parameter)  # exactly these: a subclass may change what an op does


def _adds_bias_before_rounding(input, weight, bias) -> bool:
    """Whether PyTorch's half-precision ``linear`` adds the bias to the float32 sums and rounds once (its
    addmm path: inputs of at most 2 dims, or contiguous ones, which it flattens) rather than rounding the
    product and then the sum (matmul, then ``add_``: a non-contiguous input of 3 or more dims)."""
    Tensor = functions._tensor.Tensor
    if not isinstance(input, Tensor) or input.dtype not in _HALF_DTYPES:  # the usual float32 linear: no
        return False
    if not (isinstance(weight, Tensor) and isinstance(bias, Tensor)) or not input.dtype is weight.dtype is bias.dtype:
        return False
    return input.ndim <= 2 or input.is_contiguous()


_HALF_DTYPES = frozenset((T.float16, T.bfloat16))


def _linear_dtypes(input, weight, bias) -> None:
    name, Tensor = scalar_type_name, functions._tensor.Tensor
    if isinstance(bias, Tensor) and isinstance(weight, Tensor) and bias.dtype is not weight.dtype:
        raise RuntimeError(
            f"self and mat2 must have the same dtype, but got {name(bias.dtype)} and {name(weight.dtype)}"
        )
    if isinstance(input, Tensor) and isinstance(weight, Tensor) and input.ndim == 2 and input.dtype is not weight.dtype:
        raise RuntimeError(
            f"mat1 and mat2 must have the same dtype, but got {name(input.dtype)} and {name(weight.dtype)}"
        )


@functools.lru_cache(maxsize=64)
def _class_indices(num_classes: int, device) -> object:
    """0 .. num_classes-1 as int64 on ``device``, made once (tensors are immutable, so sharing is safe)."""
    return creation.arange(num_classes, device=device)


def one_hot(tensor, num_classes: int = -1):
    """int64 one-hot rows of integer class indices, as ``torch.nn.functional.one_hot``.

    ``num_classes=-1`` reads the largest index from the tensor (one submission) and checks the
    indices at the call. With ``num_classes`` given, an index outside [0, num_classes) — which
    would give an all-zero row — is PyTorch's RuntimeError when the result is read, as
    ``cross_entropy``'s IndexError (vkml/schedule/checks.py).

    >>> one_hot(vkml.tensor([0, 2]), 3).tolist()  # doctest: +SKIP
    [[1, 0, 0], [0, 0, 1]]
    """
    _integer_indices("one_hot", tensor)
    if num_classes >= 0:
        return _checked_hits("one_hot", tensor, num_classes, -1, _one_hot_error(num_classes), RuntimeError).long()
    values = tensor.numpy()
    if values.size == 0:
        raise RuntimeError("'one_hot': Can not infer total number of classes from empty tensor.")
    if values.min() < 0:
        raise RuntimeError(_one_hot_error(0)(int(values.min()), ""))
    return _hits(tensor, int(values.max()) + 1, -1).long()


def _one_hot_error(num_classes: int):
    def message(value: int, called: str) -> str:
        if value < 0:
            return f"'one_hot'{called}: Class values must be non-negative."  # PyTorch's words
        return f"'one_hot'{called}: Class values must be smaller than num_classes."

    return message


def _out_of_bounds(op: str, what: str, size: int):
    def message(value: int, called: str) -> str:
        # PyTorch's words first (its suites match them), then the range
        if what == "Index":  # embedding's
            return f"'{op}'{called}: index out of range in self: Index {value} is out of bounds (expected 0 <= index < {size})"
        return f"'{op}'{called}: {what} {value} is out of bounds. Expected 0 <= {what.lower()} < {size}."

    return message


def _integer_indices(op: str, target) -> None:
    if not isinstance(target, functions._tensor.Tensor):
        raise TypeError(f"'{op}': indices must be a vkml.Tensor, got {type(target).__name__}")
    if target.dtype.is_float or target.dtype is T.bool_:
        if op == "embedding":  # PyTorch's words (its argument check)
            raise DTypeError(
                "'embedding': Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                f"Long, Int; but got {target.type()} instead (while checking arguments for embedding)"
            )
        raise DTypeError(f"'{op}': class indices must be an integer tensor, got {target.dtype.name}")


def _class_target_dtype(op: str, target) -> None:
    """PyTorch's RuntimeError for class-index targets of nll_loss and cross_entropy that are neither
    int64 nor uint8 (an int32 target is refused there, though other index ops take it)."""
    if isinstance(target, functions._tensor.Tensor) and target.dtype not in (T.int64, T.uint8):
        if target.dtype.is_float and op == "cross_entropy":
            return  # _integer_indices' error (cross_entropy reads float targets as probabilities)
        if target.dtype.is_float:  # a DTypeError: PyTorch's RuntimeError, and the TypeError vkml raised before
            raise DTypeError(
                f"'{op}': expected target dtype to be Long or Byte, but got {scalar_type_name(target.dtype)} "
                "(class indices must be an integer tensor)"
            )
        raise RuntimeError(
            f"'{op}': expected target dtype to be Long or Byte, but got {scalar_type_name(target.dtype)}"
        )


def _weight_dtype(op: str, input, weight) -> None:
    """PyTorch's RuntimeError for a class weight of another dtype than the input (nll_loss's kernel)."""
    if weight is not None and weight.dtype != input.dtype:
        raise RuntimeError(
            f"'{op}': expected scalar type {scalar_type_name(input.dtype)} but found {scalar_type_name(weight.dtype)}"
        )


def _checked_hits(op: str, indices, size: int, dim: int, message, error=IndexError, ignore_index=None):
    """``_hits(indices, size, dim)``, with PyTorch's IndexError for an index outside [0, size)
    (``ignore_index`` excepted), which would otherwise match no class and give silent zeros;
    ``message(value, where)`` words the ``error``.

    The indices are not read here: that would wait for the device. The first bad position and
    its value are two small reductions computed in the submission that computes anything
    through the result, and reading a result raises the error, naming the op and the line that
    called it (vkml/schedule/checks.py). Realized indices that passed are remembered, so the same loaded
    labels are checked once; indices uploaded from the host (or a view of them) whose values the host
    saw within range pass at once (``checks.uploaded_range``).
    """
    _integer_indices(op, indices)
    hits = _hits(indices, size, dim)
    node, key = indices.node, (size, ignore_index)
    # Inside vkml.jit's capture the check is always made and never remembered: the recording
    # replays it on every later call's indices (vkml/frontend/jit.py).
    capturing = _scheduler.recorder is not None
    earlier = _indices_checking.get(id(node)) if not capturing else None
    if earlier is not None and earlier[0]() is node and earlier[1] == key and key not in _indices_passed.get(node, ()):
        values = checks.finished_values(earlier[2])
        if values is not None:
            earlier[3](values)  # a pass is remembered in _indices_passed: no new check below
    if indices.numel() == 0 or (key in _indices_passed.get(node, ()) and not capturing):
        return hits
    uploaded = checks.uploaded_range(node) if not capturing else None
    if uploaded is not None and uploaded[0] >= 0 and uploaded[1] < size:  # values the host saw: all in range
        return hits
    # The check's ops, built on nodes: integer and bool values that nothing records or writes to,
    # node for node those of ``indices.reshape(-1)``, ``>=``, ``&``, ``where``, ``amin`` ... (a dozen
    # ops at each loss call, on each batch's new targets).
    n = indices.numel()
    flat = node if node.shape == (n,) else lazy.reshape_node(node, (n,))
    positions = _class_indices(n, node.device).node  # 0 .. n-1, made once per length

    def op(name, *operands):
        return lazy.elementwise(name, list(operands))

    bad = op("logical_not", op("bitwise_and", op("ge", flat, 0), op("lt", flat, size)))
    if ignore_index is not None:
        bad = op("bitwise_and", bad, op("ne", flat, ignore_index))
    first = lazy.reduce("amin", op("where", bad, positions, n), None, False)
    value = functions._wrap(lazy.reduce("sum", op("where", op("eq", positions, first), flat, 0), None, False))
    first = functions._wrap(first)
    called = f" (called at {checks.user_line()})"
    remember = weakref.ref(node) if node.realized and not capturing else None

    def describe(values):
        if values[0] < n:
            if getattr(message, "takes_position", False):  # words that name the bad index's position too
                return message(values[1], called, values[0])
            return message(values[1], called)
        if remember is not None and remember() is not None:
            _indices_passed.setdefault(remember(), set()).add(key)
        return None

    if hits.node.realized:  # eager mode computed the comparison already: check now, at the op
        refused = describe([first.item(), value.item()])
        if refused is not None:
            raise error(refused)
        return hits
    checks.defer(hits.node, (first.node, value.node), describe, error)
    if remember is not None:
        _indices_checking[id(node)] = (remember, key, (first.node, value.node), describe)
        _indices_checking.move_to_end(id(node))
        if len(_indices_checking) > 16:
            _indices_checking.popitem(last=False)
    return hits


# realized index tensor -> (size, ignore_index) pairs its values passed (a realized node's values never change)
_indices_passed: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# id of a realized index tensor's node -> (a weak reference to it, (size, ignore_index), its latest check's
# nodes and ``describe``), for the latest few: a loop that calls the loss on the same labels and never reads
# it reads that check's values at the next call once the device has finished them, so the labels are
# checked again only until one check passes. Bounded, not weak: a check's nodes not computed yet hold the
# nodes their values are computed from, the labels'. Not the Check: an unread one keeps realizes looking.
_indices_checking: collections.OrderedDict = collections.OrderedDict()


def _hits(target, num_classes: int, dim: int):
    """A bool tensor, True where the class index along ``dim`` equals ``target`` (an elementwise comparison)."""
    classes = _class_indices(num_classes, target.device)
    expanded = functions.unsqueeze(target, dim)
    shape = [1] * expanded.ndim
    shape[dim] = num_classes
    return expanded == classes.reshape(*shape)


_REDUCTIONS = ("mean", "sum", "none")


def _reduce(loss, reduction: str, op: str, count=None):
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return loss.mean() if count is None else loss.sum() / count
    raise ValueError(f"'{op}': {reduction} is not a valid value for reduction")  # PyTorch's words


@autograd.shown_as("NllLossBackward0", autograd.cross_entropy_edges)
def cross_entropy(
    input,
    target,
    weight=None,
    size_average=None,
    ignore_index: int = -100,
    reduce=None,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
):
    """Cross entropy of logits ``input`` (N, C, d1, ...) or (C,) against class indices or class probabilities.

    Integer targets pick the log-probability of their class by an elementwise comparison
    with 0..C-1 (no gather kernel): ``-w[t] · where(class == t, log_softmax(input), 0).sum(1)``.
    Targets equal to ``ignore_index`` count for nothing, and 'mean' divides by the summed
    weights of the rest (their count without ``weight``), as ``nll_loss``. Float targets of
    ``input``'s shape are probabilities: ``-(target · w · log_softmax).sum(1)``, and 'mean'
    divides by the number of (n, d1, ...) positions; an ``ignore_index`` ≥ 0 with them is
    PyTorch's RuntimeError.
    ``label_smoothing`` ε mixes in ``-(ε/C)·Σ_c w_c·log_softmax`` as PyTorch's (for probability
    targets: target·(1-ε) + ε/C). An ε outside [0, 1] is refused with PyTorch's RuntimeError; PyTorch's
    functional form raises it only above 1 and computes with a negative ε (a deliberate difference).

    A class index outside [0, C) other than ``ignore_index`` is PyTorch's IndexError naming
    the first such index (the comparison would otherwise match no class and give a silent loss
    of -0.0). It is raised when a result computed through the loss is read (``item``, ``numpy``),
    not at the call: reading the targets there would wait for the device, a stall in every
    training step. Instead the first bad position is computed in the submission that computes
    the loss or its gradient, the error names the op and the calling line, and every tensor
    computed from the loss (gradients, updated parameters) raises it when read
    (vkml/schedule/checks.py). Realized targets that passed are not checked again.

    >>> cross_entropy(vkml.zeros(2, 4), vkml.tensor([1, 3])).item()  # doctest: +SKIP
    1.3862943649291992
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    if reduction not in _REDUCTIONS:
        raise ValueError(f"'cross_entropy': {reduction} is not a valid value for reduction")
    if label_smoothing > 1.0:
        raise RuntimeError(f"'cross_entropy': label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    label_smoothing = max(label_smoothing, 0.0)  # PyTorch's functional form takes a negative one as no smoothing
    if not isinstance(input, functions._tensor.Tensor) or not input.dtype.is_float:
        raise RuntimeError(
            f"'cross_entropy': expected a floating point input tensor, got {getattr(input, 'dtype', type(input).__name__)}"
        )
    if input.ndim == 0:
        raise ValueError("'cross_entropy': Expected 1 or more dimensions (got 0)")
    unbatched = input.ndim == 1
    if unbatched:
        input, target = functions.unsqueeze(input, 0), functions.unsqueeze(target, 0)
    num_classes = input.shape[1]
    if weight is not None and tuple(weight.shape) != (num_classes,):
        raise RuntimeError(
            f"'cross_entropy': weight tensor should be defined either for all {num_classes} classes or no classes "
            f"but got weight tensor of shape: {list(weight.shape)}"
        )
    _weight_dtype("cross_entropy", input, weight)
    if weight is None and not label_smoothing and isinstance(target, functions._tensor.Tensor):
        one_op = _cross_entropy_op.recorded(input, target, ignore_index, reduction)  # the usual training call
        if one_op is not None:
            return functions.squeeze(one_op, 0) if unbatched and reduction == "none" else one_op
    logp = functions.log_softmax(input, 1)
    w = None if weight is None else functions.reshape(weight, num_classes, *([1] * (input.ndim - 2)))
    weighted = logp if w is None else logp * w
    if target.dtype.is_float:
        if ignore_index >= 0:  # PyTorch's check: a negative one is the default's kind, and ignored
            raise RuntimeError("'cross_entropy': ignore_index is not supported for floating point target")
        if input.ndim == 2 and target.ndim > 1 and target.shape != input.shape:
            # PyTorch takes a target of another shape for class indices, which nll_loss refuses
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if target.shape != input.shape:
            raise ShapeError(
                f"'cross_entropy': probability targets need the input's shape {input.shape}, got {target.shape}"
            )
        if label_smoothing:
            target = target * (1 - label_smoothing) + label_smoothing / num_classes
        if input.dtype in functions.HALF_PRECISION:
            # PyTorch's -(log_softmax * target * weight) summed over all positions at once for 'sum' and
            # 'mean' (then divided by their count), each op rounding to float16/bfloat16
            terms = logp * target if w is None else logp * target * w
            if reduction != "none":
                total = -terms.sum()
                return total if reduction == "sum" else total / (input.numel() // num_classes)
            loss = -terms.sum(1)
            return functions.squeeze(loss, 0) if unbatched else loss
        if num_classes == 0 and reduction == "mean":  # PyTorch divides the sum by numel / C: 0 / 0 here
            return -(target * weighted).sum() * float("nan")
        loss = -(target * weighted).sum(1)
        count = None
    else:
        _class_target_dtype("cross_entropy", target)
        if target.ndim and target.shape[0] != input.shape[0]:  # PyTorch's first check, a ValueError as ShapeError
            raise ShapeError(
                f"'cross_entropy': Expected input batch_size ({input.shape[0]}) to match target batch_size "
                f"({target.shape[0]})."
            )
        if target.shape != (input.shape[0],) + input.shape[2:]:
            raise ShapeError(
                f"'cross_entropy': input of shape {input.shape} needs targets of shape "
                f"{(input.shape[0],) + input.shape[2:]}, got {target.shape}"
            )
        message = _out_of_bounds("cross_entropy", "Target", num_classes)
        hits = _checked_hits("cross_entropy", target, num_classes, 1, message, ignore_index=ignore_index)
        loss = -functions.where(hits, logp, 0.0).sum(1)
        valid = target != ignore_index
        if w is None:
            count = valid.sum()
        else:
            target_weight = functions.where(valid, functions.where(hits, w, 0.0).sum(1), 0.0)
            loss = loss * target_weight
            count = target_weight.sum()
        if label_smoothing:
            loss = (1 - label_smoothing) * loss - label_smoothing / num_classes * weighted.sum(1)
        loss = functions.where(valid, loss, 0.0)
    if unbatched and reduction == "none":
        loss = functions.squeeze(loss, 0)
    return _reduce(loss, reduction, "cross_entropy", count)


def legacy_reduction(size_average, reduce, reduction: str) -> str:
    """PyTorch's deprecated ``size_average`` and ``reduce``: when either is given they decide the reduction
    (both default True: 'mean'; reduce alone: 'sum'; reduce=False: 'none'), with PyTorch's warning."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    result = "mean" if size_average and reduce else "sum" if reduce else "none"
    warnings.warn(
        f"size_average and reduce args will be deprecated, please use reduction='{result}' instead.", stacklevel=3
    )
    return result


@autograd.shown_as("MseLossBackward0")
def mse_loss(input, target, size_average=None, reduce=None, reduction: str = "mean", weight=None):
    """Mean (or sum) of squared differences, broadcast as PyTorch does (with its warning when the shapes
    differ); ``weight`` (input's shape) scales each term, and 'mean' then divides by its sum.

    >>> mse_loss(vkml.tensor([1.0, 2.0]), vkml.tensor([1.0, 4.0])).item()  # doctest: +SKIP
    2.0
    """
    target_size_warning(input, target)
    reduction = legacy_reduction(size_average, reduce, reduction)
    diff = input - target
    return weighted_reduce(diff * diff, weight, input, reduction, "mse_loss")


def target_size_warning(input, target) -> None:
    """PyTorch's warning for l1_loss and mse_loss when ``target`` will broadcast against ``input``."""
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.",
            stacklevel=user_stacklevel(),
        )


def weighted_reduce(loss, weight, input, reduction: str, op: str):
    """``_reduce(loss)``, or with ``weight`` (input's shape) PyTorch's weighted form: 'mean' is
    Σ weight·loss / Σ weight."""
    if weight is None:
        return _reduce(loss, reduction, op)
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError(f"'{op}': Weights and input must have the same size.")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"'{op}': Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")
    loss = loss * weight
    return loss.sum() / weight.sum() if reduction == "mean" else _reduce(loss, reduction, op)


@autograd.shown_as(
    "NativeLayerNormBackward0",
    lambda input, shape, weight=None, bias=None, *a, **k: (
        autograd.edge(input),
        autograd.edge(weight),
        autograd.edge(bias),
    ),
)
def layer_norm(input, normalized_shape, weight=None, bias=None, eps: float = 1e-5):
    """(x - mean) / sqrt(var + eps) over the last ``len(normalized_shape)`` dims (biased variance), then affine.

    float16 inputs are normalised in float32 and rounded once. rsqrt(var + eps) is computed once
    per row; where a row fits one chunk of the device's rows kernel, mean, variance and output are
    one kernel reading x, weight and bias once (vkml/schedule/scheduler.py, rule 7), same bits as two.

    >>> layer_norm(vkml.tensor([[1.0, 3.0]]), (2,)).tolist()  # doctest: +SKIP
    [[-0.9999950..., 0.9999950...]]
    """
    if isinstance(normalized_shape, int):  # PyTorch's signature takes a sequence only (modules take an int)
        raise TypeError("layer_norm(): argument 'normalized_shape' (position 2) must be tuple of ints, not int")
    shape = tuple(normalized_shape)
    if not shape:
        raise RuntimeError("'layer_norm': Expected normalized_shape to be at least 1-dimensional, got ()")
    if tuple(input.shape[input.ndim - len(shape) :]) != shape:
        raise ShapeError(
            f"'layer_norm': Given normalized_shape={list(shape)}, expected input with shape [*, "
            f"{', '.join(map(str, shape))}], but got input of size{list(input.shape)}"
        )
    dims = tuple(range(input.ndim - len(shape), input.ndim))
    x = input.float() if input.dtype in (T.float16, T.bfloat16) else input
    out = _norm.layer_norm_unrecorded(x, input, dims, weight, bias, eps)
    if out is not None:
        return out.to(input.dtype) if input.dtype in (T.float16, T.bfloat16) else out
    centred = x - x.mean(dims, keepdim=True)
    variance = (centred * centred).mean(dims, keepdim=True)
    out = centred * functions.rsqrt(variance + eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out.to(input.dtype) if input.dtype in (T.float16, T.bfloat16) else out


@autograd.shown_as("EmbeddingBackward0", lambda input, weight, *a, **k: (autograd.edge(weight),))
def embedding(
    input,
    weight,
    padding_idx=None,
    max_norm=None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
):
    """Rows of ``weight`` picked by the integer indices ``input``: a one-hot matrix times ``weight``.

    Cost: the one-hot product does N·V·D multiply-adds for N indices into V rows of width D
    (a gather would read N·D values); it needs no gather kernel, and its gradient — a one-hot
    product too — adds every index's gradient into its row. ``padding_idx``'s row is read as
    any other but gets no gradient, as PyTorch's.

    An index outside [0, num_embeddings) is PyTorch's IndexError naming the first such index
    (the one-hot product would otherwise give a silent zero row), raised when a result computed
    through the lookup is read, as ``cross_entropy``'s. ``max_norm`` scales the looked-up rows whose
    norm exceeds it, in place in ``weight``, before the lookup (PyTorch's ``embedding_renorm_``);
    ``scale_grad_by_freq`` divides each row's gradient by its count in ``input`` (a second one-hot
    product, for the gradient only). ``sparse=True`` makes the gradient of a leaf ``weight`` a sparse COO
    tensor, PyTorch's (vkml/nn/sparse_grad.py); with ``scale_grad_by_freq`` the lookup works and its backward
    raises PyTorch's RuntimeError.

    >>> embedding(vkml.tensor([1]), vkml.tensor([[0.0], [5.0]])).tolist()  # doctest: +SKIP
    [[5.0]]
    """
    return _lookup(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse)


def _lookup(
    input,
    weight,
    padding_idx=None,
    max_norm=None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
    bounds_message=None,
    bounds_error=IndexError,
):
    """``embedding``, an index out of range raising ``bounds_error`` worded by ``bounds_message(num_embeddings)``
    (``embedding_bag``'s words are its own)."""
    if weight.ndim != 2:
        raise ShapeError(f"'embedding': 'weight' must be 2-D (num_embeddings, embedding_dim), got shape {weight.shape}")
    num = weight.shape[0]
    if padding_idx is not None and not -num <= padding_idx < num:
        raise AssertionError(f"'embedding': Padding_idx must be within num_embeddings, got {padding_idx}")
    message = _out_of_bounds("embedding", "Index", num) if bounds_message is None else bounds_message(num)
    hits = _checked_hits("embedding", input, num, -1, message, error=bounds_error)
    if max_norm is not None:
        renorm_rows(weight, hits.reshape(-1, num).any(0), max_norm, norm_type)
    if sparse and scale_grad_by_freq and autograd.is_grad_enabled() and weight.requires_grad:
        # PyTorch looks up, then refuses at backward: it has no sparse gradient scaled by frequency
        return _sparse_grad.lookup(weight, functions.cast(hits, weight.dtype), input, padding_idx, True)
    if sparse and _sparse_grad.wants_sparse_grad(weight):
        return _sparse_grad.lookup(weight, functions.cast(hits, weight.dtype), input, padding_idx)
    if padding_idx is not None:
        # the padding row's value, without its gradient
        rows = functions.reshape(_class_indices(num, weight.device), num, 1)
        weight = functions.where(rows == padding_idx % num, weight.detach(), weight)
    picks = functions.cast(hits, weight.dtype)
    out = functions.matmul(picks, weight)
    if not scale_grad_by_freq or not autograd.is_grad_enabled() or not weight.requires_grad:
        return out
    # the same value, with each index's gradient divided by how often its row is looked up in
    # ``input`` (PyTorch's scale_grad_by_freq): the gradient flows only through a product by
    # hits / count, whose value is cancelled exactly (y - y.detach() is 0 for finite y)
    counts = picks.reshape(-1, num).sum(0)
    scaled = functions.matmul(picks / functions.where(hits, counts, 0.0).sum(-1, keepdim=True), weight)
    return out.detach() + (scaled - scaled.detach())


def renorm_rows(weight, used, max_norm: float, norm_type: float) -> None:
    """PyTorch's ``embedding_renorm_``: the ``used`` rows of ``weight`` whose ``norm_type``-norm exceeds
    ``max_norm`` are scaled, in place and without autograd, by max_norm / (norm + 1e-7)."""
    with autograd.no_grad():
        norms = weight.norm(norm_type, dim=1)
        scale = functions.where(used & (norms > max_norm), max_norm / (norms + 1e-7), 1.0)
        mutation.inplace(weight, "embedding_renorm_", lambda w: w * functions.unsqueeze(scale, 1))


def dropout(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """While ``training``, zero elements with probability ``p`` (masks from ``vkml.manual_seed``'s generator) and
    scale the others by 1/(1-p); otherwise return ``input``. ``inplace`` writes the result into ``input``.

    >>> dropout(vkml.ones(4), 0.5, training=False).tolist()  # doctest: +SKIP
    [1.0, 1.0, 1.0, 1.0]
    """
    if not 0 <= p <= 1:
        raise ValueError(f"'dropout': dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0:
        return input

    def apply(x):
        if p == 1:
            return x * 0.0
        keep = vkrandom.keep_mask(x.shape, p, x.device)
        recorded = _dropout_recorded(x, keep, 1.0 / (1.0 - p)) if not inplace else None
        if recorded is not None:
            return recorded
        return functions.where(keep, x * (1.0 / (1.0 - p)), 0.0)

    if inplace:
        return mutation.inplace(input, "dropout_", apply)
    # PyTorch's CPU dropout multiplies by its scaled mask: one MulBackward0, no edge for the mask
    return autograd.show(apply(input), "MulBackward0", (autograd.edge(input), (None, 0)))


def _dropout_recorded(x, keep, scale: float):
    """``where(keep, x * scale, 0.0)`` as ONE recorded op ``dropout`` (float32, lazy mode, grad mode on,
    nothing watching the graph, as ``_linear_recorded``), or None: the same nodes, built directly, and one
    context where the operators record two (``dropout`` shows it as PyTorch's ``MulBackward0``)."""
    if not autograd.records_composites_whole():
        return None
    if x.__class__ not in _PLAIN_TENSORS or not x.requires_grad or _amp._state.dtypes:
        return None
    node, mask = x.node, keep.node
    if node.dtype is not _F32 or mask.device is not node.device or lazy.is_eager() or memory_format.ACTIVE:
        return None
    out = _Tensor(_where_node(mask, _binary_node("mul", node, scale), 0.0))
    return autograd.record("dropout", (x, keep), out, {"scale": scale})


def _dropout_grad(c):
    """The where's rule (the kept elements' gradient) and then the product's (times the scale), as the
    operators' two rules build them; their nodes directly where no graph is recorded."""
    _, keep = c.inputs
    g, scale = c.g, c.attrs["scale"]
    if autograd._mode.enabled or lazy.is_eager() or memory_format.ACTIVE or g.dtype is not _F32:
        return c.F.where(keep, g, 0.0) * scale, None
    return _Tensor(_binary_node("mul", _where_node(keep.node, g.node, 0.0), scale)), None


def _binary_node(name: str, a, b) -> Node:
    """The operators' node of ``name`` (lazy's fast path, else its general path)."""
    node = lazy.binary_fast(name, a, b)
    return node if node is not None else lazy.elementwise(name, [a, b])


def _where_node(condition: Node, a, b) -> Node:
    node = lazy.condition_fast("where", [condition, a, b])
    return node if node is not None else lazy.elementwise("where", [condition, a, b])


G.RULES["dropout"] = _dropout_grad
_NO_EDGE = (None, 0)


# Attention (vkml/nn/functional_attention.py); imported last, as it only builds on the frontend.
# Activations of issue 17 (vkml/nn/activation.py), as vkml.nn.functional.<name>.
from . import activation as _activation  # noqa: E402
from . import sparse_grad as _sparse_grad  # noqa: E402
from .functional_attention import scaled_dot_product_attention  # noqa: E402, F401
from .functional_mha import multi_head_attention_forward  # noqa: E402, F401

for _name in _activation.FUNCTIONS:
    globals()[_name] = getattr(_activation, _name)
del _name
# ---------------------------------------------------------------------- convolution, pooling, normalisation
# (vkml/nn/functional_layers.py and vkml/nn/functional_losses.py; imported last, as they import this module's helpers)
from . import functional_cross_entropy as _cross_entropy_op  # noqa: E402  (cross_entropy as one op)
from . import functional_losses_more as _losses_more  # noqa: E402  (issue 18, below)
from . import functional_more as _more  # noqa: E402
from . import functional_norm as _norm  # noqa: E402  (layer_norm's unrecorded nodes)
from . import layers_more as _layers_more  # noqa: E402
from .functional_layers import (  # noqa: E402, F401
    adaptive_avg_pool2d,
    adaptive_max_pool2d,
    avg_pool1d,
    avg_pool2d,
    conv1d,
    conv2d,
    fold,
    max_pool1d,
    max_pool2d,
    unfold,
)
from .functional_losses import (  # noqa: E402, F401
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    dropout2d,
    huber_loss,
    kl_div,
    l1_loss,
    nll_loss,
    smooth_l1_loss,
)
from .functional_norm import (  # noqa: E402, F401
    batch_norm,
    group_norm,
    instance_norm,
    normalize,
    rms_norm,
)

# Spatial functions of issue 18 (vkml/nn/functional_spatial.py).
from .functional_spatial import (  # noqa: E402, F401
    adaptive_avg_pool1d,
    adaptive_avg_pool3d,
    adaptive_max_pool1d,
    adaptive_max_pool3d,
    affine_grid,
    avg_pool3d,
    channel_shuffle,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    grid_sample,
    interpolate,
    max_pool3d,
    pixel_shuffle,
    pixel_unshuffle,
    upsample,
    upsample_bilinear,
    upsample_nearest,
)

# ---------------------------------------------------------------------- issue 18: more layers and losses
# (vkml/nn/functional_more.py, functional_losses_more.py), and softmax and log_softmax with
# PyTorch's dim=None, _stacklevel and dtype arguments (vkml/nn/layers_more.py)
for _part in (_more, _losses_more):
    for _name in _part.FUNCTIONS:
        globals()[_name] = getattr(_part, _name)
for _name in ("softmax", "log_softmax"):
    globals()[_name] = getattr(_layers_more, _name)
del _part, _name
# Power-average pooling and max unpooling of issue 18 (vkml/nn/functional_pooling.py).
from . import functional_pooling as _pooling  # noqa: E402

for _name in _pooling.FUNCTIONS:
    globals()[_name] = getattr(_pooling, _name)
del _name
# Fractional max pooling (vkml/nn/fractional_pool.py)
from . import fractional_pool as _fractional_pool  # noqa: E402

for _name in _fractional_pool.FUNCTIONS:
    globals()[_name] = getattr(_fractional_pool, _name)
del _name
