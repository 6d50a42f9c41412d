"""Shape and construction ops with PyTorch's names: stack, split, flatten, movedim, repeat, tril, einsum, ...

Every function here is a composite of the ops in ``operators.py``: the movement ops are index
arithmetic on views (slices, reshapes, permutes, expands, flips, pads), never copies of their
own, except the joins (stack and its kin, roll, the padding modes: one ``cat`` of views);
the linear-algebra ones lower to ``matmul`` or to a broadcast product and ``sum``. So
each one's gradient is the chain of its parts' rules, and the CPU backend and every Vulkan
device compute the same bits. Arguments are checked eagerly, with PyTorch's messages and
exception types (``ShapeError`` is both a ValueError and PyTorch's RuntimeError).

>>> import vkml
>>> a, b = vkml.split(vkml.arange(5), [2, 3])
>>> a.tolist(), b.tolist()
([0, 1], [2, 3, 4])
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..errors import DTypeError, DTypeNotImplementedError, ShapeError
from ..graph import build as lazy
from ..ir import types as T
from ..ops import grads as _grads
from ..ops.promotion import promote_types
from . import autograd
from . import operators as F
from .caller import user_stacklevel
from .creation import _dtype, tensor
from .dtype_info import check_matmul_dtypes
from .exports import Export


def _t(op: str, x):
    """``x``'s node checked to be a tensor (PyTorch's TypeError otherwise)."""
    return F._tensor_node(op, x)


def _dim(op: str, dim, ndim: int) -> int:
    return lazy.normalize_dim(op, dim, ndim)


def _ints(op: str, what: str, values) -> tuple[int, ...]:
    if isinstance(values, (int, np.integer)) and not isinstance(values, bool):
        return (int(values),)
    if not isinstance(values, (tuple, list)) or any(
        not isinstance(v, (int, np.integer)) or isinstance(v, bool) for v in values
    ):
        raise TypeError(f"'{op}': {what} must be an int or a tuple of ints, got {values!r}")
    return tuple(int(v) for v in values)


def _tensors(op: str, tensors) -> list:
    if isinstance(tensors, F._tensor.Tensor) or not isinstance(tensors, (tuple, list)):
        raise TypeError(  # PyTorch's words
            f"{op}(): argument 'tensors' (position 1) must be tuple of Tensors, not {type(tensors).__name__}"
        )
    for t in tensors:
        _t(op, t)
    return list(tensors)


# ---------------------------------------------------------------------- joining


def stack(tensors, dim: int = 0, *, axis=None):
    """Join tensors of one shape along a new dim ``dim`` (``cat`` of each unsqueezed; dtypes promote).

    ``axis=`` is PyTorch's alias of ``dim``.

    >>> stack([vkml.tensor([1, 2]), vkml.tensor([3, 4])], 1).tolist()  # doctest: +SKIP
    [[1, 3], [2, 4]]
    """
    if axis is not None:
        dim = F._dim_or_axis("stack", None if dim == 0 else dim, axis)
    tensors = _tensors("stack", tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    shape = tensors[0].shape
    for i, t in enumerate(tensors):
        if t.shape != shape:
            raise ShapeError(
                f"stack expects each tensor to be equal size, but got {list(shape)} at entry 0 and "
                f"{list(t.shape)} at entry {i}"
            )
    d = _dim("stack", dim, len(shape) + 1)
    edges = tuple(autograd.edge(t) for t in tensors) if autograd.is_grad_enabled() else None
    out = F.cat([F.unsqueeze(t, d) for t in tensors], d)
    if edges is not None and out._ctx is not None:  # PyTorch's one node, not a cat of unsqueezes
        autograd.show(out, "StackBackward0", edges)
    return out


def atleast_1d(*tensors):
    """Each tensor with at least 1 dim (a 0-d tensor becomes shape (1,)); one tensor in, one out."""
    return _atleast("atleast_1d", tensors, lambda t: F.reshape(t, 1) if t.ndim == 0 else t)


def atleast_2d(*tensors):
    """Each tensor with at least 2 dims: 0-d gives (1, 1), 1-d (n,) gives (1, n)."""
    return _atleast("atleast_2d", tensors, lambda t: F.reshape(t, 1, -1) if t.ndim < 2 else t)


def atleast_3d(*tensors):
    """Each tensor with at least 3 dims: 0-d gives (1, 1, 1), (n,) gives (1, n, 1), (m, n) gives (m, n, 1)."""

    def lift(t):
        if t.ndim == 0:
            return F.reshape(t, 1, 1, 1)
        if t.ndim == 1:
            return F.reshape(t, 1, -1, 1)
        return F.unsqueeze(t, -1) if t.ndim == 2 else t

    return _atleast("atleast_3d", tensors, lift)


def _atleast(op: str, tensors, lift):
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        return tuple(lift(t) for t in _tensors(op, tensors[0]))
    for t in tensors:
        _t(op, t)
    out = tuple(lift(t) for t in tensors)
    return out[0] if len(out) == 1 else out


def hstack(tensors):
    """Join along dim 1 (dim 0 when every tensor is 1-D); 0-d tensors count as 1-D."""
    tensors = _tensors("hstack", tensors)
    if not tensors:
        raise RuntimeError("hstack expects a non-empty TensorList")
    parts = atleast_1d(tensors)
    return F.cat(list(parts), 0 if parts[0].ndim == 1 else 1)


def vstack(tensors):
    """Join along dim 0 after ``atleast_2d`` (1-D tensors become rows)."""
    tensors = _tensors("vstack", tensors)
    if not tensors:
        raise RuntimeError("vstack expects a non-empty TensorList")
    return F.cat(list(atleast_2d(tensors)), 0)


def dstack(tensors):
    """Join along dim 2 after ``atleast_3d``."""
    tensors = _tensors("dstack", tensors)
    if not tensors:
        raise RuntimeError("dstack expects a non-empty TensorList")
    return F.cat(list(atleast_3d(tensors)), 2)


row_stack = vstack


def column_stack(tensors):
    """Join along dim 1 with 0-d and 1-D tensors made columns (n, 1)."""
    tensors = _tensors("column_stack", tensors)
    if not tensors:
        raise RuntimeError("column_stack expects a non-empty TensorList")
    return F.cat([F.reshape(t, -1, 1) if t.ndim < 2 else t for t in tensors], 1)


# ---------------------------------------------------------------------- splitting (views)


def narrow(input, dim: int, start: int, length: int):
    """Elements ``start`` to ``start + length`` of ``dim`` (a view sharing ``input``'s storage).

    ``start`` may be negative (counted from the end), as in PyTorch.
    """
    node = _t("narrow", input)
    if not node.shape:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = _dim("narrow", dim, len(node.shape))
    if isinstance(start, F._tensor.Tensor):
        if start.ndim != 0 or start.dtype.is_float or start.dtype.is_complex or start.dtype is T.bool_:
            raise RuntimeError("start must be an 0-dim integral Tensor.")
        start = start.item()
    size = node.shape[d]
    if not -size <= start <= size:
        raise IndexError(
            f"'narrow': start out of range (expected to be in range of [{-size}, {size}], but got {start})"
        )
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    start = start + size if start < 0 else start
    if start + length > size:
        raise ShapeError(f"'narrow': start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return _narrow(input, d, start, length)


def _narrow(input, d: int, start: int, length: int):
    if start == 0 and length == input.shape[d]:
        return input
    return F.getitem(input, (slice(None),) * d + (slice(start, start + length),))


def _pieces(input, d: int, sizes, node_name: str = "SliceBackward0") -> tuple:
    """Views of consecutive ``sizes`` of dim ``d``, each shown as PyTorch's node ``node_name`` (split's
    pieces are one ``SplitBackward0``'s outputs in PyTorch, tensor_split's are slices)."""
    out, start = [], 0
    for s in sizes:
        out.append(_shown_piece(_narrow(input, d, start, s), input, node_name))
        start += s
    return tuple(out)


def _shown_piece(piece, input, node_name: str):
    """``piece`` of ``input`` (recorded as vkml's slice), shown as PyTorch's node ``node_name``."""
    if node_name != "SliceBackward0" and piece is not input and piece._ctx is not None:
        autograd.show(piece, node_name, (autograd.edge(input),))
    return piece


def split(tensor, split_size_or_sections=None, dim: int = 0, *, split_size=None):
    """Views of ``split_size_or_sections``-long pieces of ``dim`` (the last may be shorter), or of the listed sizes.

    ``split_size=`` is the keyword ``Tensor.split`` has in PyTorch.

    >>> [t.tolist() for t in split(vkml.arange(5), 2)]  # doctest: +SKIP
    [[0, 1], [2, 3], [4]]
    """
    if split_size is not None:
        if split_size_or_sections is not None:
            raise TypeError("split() got multiple values for argument 'split_size'")
        split_size_or_sections = split_size
    if split_size_or_sections is None:
        raise TypeError("split() missing 1 required positional argument: 'split_size_or_sections'")
    node = _t("split", tensor)
    d = _dim("split", dim, len(node.shape))
    if not node.shape:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    size = node.shape[d]
    if isinstance(split_size_or_sections, (tuple, list)):
        sizes = _ints("split", "split_sizes", split_size_or_sections)
        if any(s < 0 for s in sizes):
            raise RuntimeError(
                f"split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes={list(sizes)}"
            )
        if sum(sizes) != size:
            raise ShapeError(
                f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's size at dimension {d}), "
                f"but got split_sizes={list(sizes)}"
            )
        return _pieces(tensor, d, sizes, "SplitWithSizesBackward0")
    (step,) = _ints("split", "split_size", split_size_or_sections)
    if step < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={step}")
    if step == 0:
        if size:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {size}")
        return (tensor,)
    count = max(1, -(-size // step))
    return _pieces(tensor, d, [min(step, size - k * step) for k in range(count)], "SplitBackward0")


def chunk(input, chunks: int, dim: int = 0):
    """At most ``chunks`` views of ceil(size / chunks) elements of ``dim`` each (fewer when they run out)."""
    node = _t("chunk", input)
    if not node.shape:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    (chunks,) = _ints("chunk", "chunks", chunks)
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = _dim("chunk", dim, len(node.shape))
    if node.shape[d] == 0:  # PyTorch: ``chunks`` empty pieces
        return tuple(_narrow(input, d, 0, 0) for _ in range(chunks))
    return split(input, -(-node.shape[d] // chunks), d)


def tensor_split(input, indices_or_sections=None, dim: int = 0, *, indices=None, sections=None):
    """``sections`` views whose sizes differ by at most one (the first ones longer), or views cut at ``indices``.

    ``indices_or_sections`` is an int, a list of ints, or an int64 tensor (0-d: sections, 1-D:
    indices; read back, as PyTorch does); PyTorch's keywords ``indices=`` and ``sections=`` name one kind.
    """
    named = [v for v in (indices_or_sections, indices, sections) if v is not None]
    if len(named) != 1:
        raise TypeError("tensor_split() takes one of indices_or_sections, indices= or sections=")
    indices_or_sections = named[0]
    node = _t("tensor_split", input)
    if not node.shape:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    if isinstance(indices_or_sections, F._tensor.Tensor):
        if indices_or_sections.dtype is not T.int64:
            raise RuntimeError(
                "tensor_split expected tensor_indices_or_sections to have dtype of long, but got "
                f"{F._mutation.torch_name(indices_or_sections.dtype)}"
            )
        if indices_or_sections.ndim > 1:
            raise RuntimeError(
                "tensor_split expected tensor_indices_or_sections to be a zero-dimensional or one-dimensional "
                f"tensor, but got a tensor with {indices_or_sections.ndim} dims"
            )
        value = indices_or_sections.tolist()
        indices_or_sections = value if indices_or_sections.ndim else int(value)
    d = _dim("tensor_split", dim, len(node.shape))
    size = node.shape[d]
    if isinstance(indices_or_sections, (tuple, list)):
        cuts = _ints("tensor_split", "indices", indices_or_sections)
        out, start = [], 0
        for c in (*cuts, size):  # piece k is [cut k-1, cut k), each clamped to the dim: empty where they cross
            c = c + size if c < 0 else c
            stop = min(max(c, 0), size)
            out.append(_narrow(input, d, min(start, stop), max(0, stop - start)))
            start = stop
        return tuple(out)
    (sections,) = _ints("tensor_split", "sections", indices_or_sections)
    if sections <= 0:
        raise RuntimeError(f"'tensor_split': number of sections must be larger than 0, got {sections}")
    base, extra = divmod(size, sections)
    return _pieces(input, d, [base + 1 if k < extra else base for k in range(sections)])


def hsplit(input, indices_or_sections):
    """``tensor_split`` along dim 1 (dim 0 for a 1-D tensor)."""
    node = _t("hsplit", input)
    if not node.shape:
        raise RuntimeError(
            "torch.hsplit requires a tensor with at least 1 dimension, but got a tensor with 0 dimensions!"
        )
    return _even_split("hsplit", input, indices_or_sections, 0 if len(node.shape) == 1 else 1)


def vsplit(input, indices_or_sections):
    """``tensor_split`` along dim 0 of a tensor with at least 2 dims."""
    node = _t("vsplit", input)
    if len(node.shape) < 2:
        raise RuntimeError(
            f"torch.vsplit requires a tensor with at least 2 dimension, but got a tensor with {len(node.shape)} dimensions!"
        )
    return _even_split("vsplit", input, indices_or_sections, 0)


def _even_split(op: str, input, sections, d: int):
    if isinstance(sections, (int, np.integer)) and not isinstance(sections, bool):
        if sections == 0 or input.shape[d] % sections:
            raise RuntimeError(
                f"torch.{op} attempted to split along dimension {d}, but the size of the dimension "
                f"{input.shape[d]} is not divisible by the split_size {sections}!"
            )
    return tensor_split(input, sections, d)


def unbind(input, dim: int = 0):
    """The slices of ``dim``, each without it (views)."""
    node = _t("unbind", input)
    if not node.shape:
        raise IndexError(f"'unbind': Dimension specified as {dim} but tensor has no dimensions")
    d = _dim("unbind", dim, len(node.shape))
    return tuple(
        _shown_piece(F.getitem(input, (slice(None),) * d + (i,)), input, "UnbindBackward0")
        for i in range(node.shape[d])
    )


# ---------------------------------------------------------------------- reshaping (views)


def flatten(input, start_dim: int = 0, end_dim: int = -1):
    """Dims ``start_dim`` to ``end_dim`` merged into one (a 0-d tensor becomes shape (1,))."""
    node = _t("flatten", input)
    nd = len(node.shape)
    s, e = _dim("flatten", start_dim, nd), _dim("flatten", end_dim, nd)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if nd == 0:
        return F.reshape(input, 1)
    if s == e:  # PyTorch returns the tensor itself
        return input
    return F.reshape(input, *node.shape[:s], math.prod(node.shape[s : e + 1]), *node.shape[e + 1 :])


def unflatten(input, dim: int, sizes):
    """Dim ``dim`` split into ``sizes`` (one of them may be -1)."""
    node = _t("unflatten", input)
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise TypeError(f"unflatten(): argument 'dim' (position 1) must be int, not {type(dim).__name__}")
    if not node.shape:  # PyTorch wraps its dim error (older releases: an IndexError)
        raise RuntimeError(
            f"unflatten got an unexpected error:\nDimension specified as {dim} but tensor has no dimensions"
        )
    d = _dim("unflatten", dim, len(node.shape))
    sizes = _ints("unflatten", "sizes", sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    if sizes.count(-1) > 1:
        raise ShapeError("unflatten got an unexpected error:\nonly one dimension can be inferred")
    known = math.prod(s for s in sizes if s != -1)
    size = node.shape[d]
    if -1 in sizes and known == 0 and size == 0:
        raise ShapeError(
            f"unflatten got an unexpected error:\ncannot reshape tensor of 0 elements into shape {list(sizes)} "
            "because the unspecified dimension size -1 can be any value and is ambiguous"
        )
    if (-1 in sizes and (known == 0 or size % known)) or (-1 not in sizes and known != size):
        raise ShapeError(
            f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {d} ({size}) in the input tensor"
        )
    return F.reshape(input, *node.shape[:d], *sizes, *node.shape[d + 1 :])


def movedim(input, source, destination):
    """Dims ``source`` moved to positions ``destination``; the others keep their order (a view)."""
    node = _t("movedim", input)
    nd = len(node.shape)
    src, dst = _ints("movedim", "source", source), _ints("movedim", "destination", destination)
    if len(src) != len(dst):
        raise RuntimeError(
            f"movedim: Invalid source or destination dims: source ({list(src)} dims) should contain the same "
            f"number of dims as destination ({list(dst)} dims)"
        )
    src = tuple(_dim("movedim", s, nd) for s in src)
    dst = tuple(_dim("movedim", s, nd) for s in dst)
    if len(set(src)) != len(src):
        raise RuntimeError(f"movedim: repeated dim in `source` ({list(source)})")
    if len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({list(destination)})")
    if nd == 0:  # a 0-dim tensor takes dim 0 (or -1) and stays as it is
        return input
    order = [-1] * nd
    for s, t in zip(src, dst):
        order[t] = s
    rest = iter(d for d in range(nd) if d not in src)
    order = [o if o != -1 else next(rest) for o in order]
    return F.permute(input, *order)


moveaxis = movedim


def swapaxes(input, axis0: int, axis1: int):
    """``transpose(input, axis0, axis1)`` (NumPy's name)."""
    return F.transpose(input, axis0, axis1)


def swapdims(input, dim0: int, dim1: int):
    """``transpose(input, dim0, dim1)``."""
    return F.transpose(input, dim0, dim1)


def t(input):
    """The transpose of a matrix; a 0-d or 1-D tensor comes back as it is."""
    node = _t("t", input)
    if len(node.shape) > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {len(node.shape)}D")
    if len(node.shape) != 2:
        return input
    return autograd.show(F.transpose(input, 0, 1), "TBackward0", (autograd.edge(input),))  # PyTorch's node


def mT(input):  # noqa: N802 - PyTorch's name
    """The last two dims swapped (``Tensor.mT``): a batch of matrices transposed."""
    node = _t("mT", input)
    if not node.shape:  # PyTorch: the identity, deprecated
        warnings.warn(
            "Tensor.mT is deprecated on 0-D tensors. This function is the identity in these cases.", stacklevel=2
        )
        return F.permute(input)
    if len(node.shape) < 2:
        raise RuntimeError(
            f"'mT': tensor.mT is only supported on matrices or batches of matrices. Got {len(node.shape)}-D tensor."
        )
    return F.transpose(input, -2, -1)


def view_as(input, other):
    """``input.view(other.shape)``."""
    return input.view(*_t("view_as", other).shape)


def reshape_as(input, other):
    """``input.reshape(other.shape)``."""
    return F.reshape(input, *_t("reshape_as", other).shape)


def expand_as(input, other):
    """``input.expand(other.shape)``."""
    return F.expand(input, *_t("expand_as", other).shape)


# ---------------------------------------------------------------------- repeating


@autograd.shown_as("RepeatBackward0", autograd.input_edge)
def repeat(input, *sizes, **keyword):
    """``input`` tiled ``sizes[d]`` times along each dim (leading sizes add dims): an expand, then a reshape."""
    if keyword:  # x.repeat(repeats=(1, 2)), as PyTorch also takes it
        sizes = F.keyword_sizes("repeat", sizes, keyword, "repeats")
    node = _t("repeat", input)
    sizes = F._shape_args("repeat", sizes)
    if len(sizes) < len(node.shape):
        raise RuntimeError(
            "'repeat': Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor"
        )
    shape = (1,) * (len(sizes) - len(node.shape)) + node.shape
    final = tuple(r * s for r, s in zip(sizes, shape))
    if any(r < 0 for r in sizes):
        raise RuntimeError(f"'repeat': Trying to create tensor with negative dimension {min(final)}: {list(final)}")
    # (1, s0, 1, s1, ...) expanded to (r0, s0, r1, s1, ...): the repeats are stride-0 dims
    # before each dim, and the reshape merges each pair (a copy only where it must be one).
    paired = F.reshape(input, *[v for s in shape for v in (1, s)])
    expanded = F.expand(paired, *[v for r, s in zip(sizes, shape) for v in (r, s)])
    out = F.reshape(expanded, *final)
    # PyTorch's repeat always returns new memory; where the reshape could stay a view (all-1
    # repeats, or repeats only on leading new dims) the result would share input's storage, so an
    # in-place write to one would show in the other (and on the stride-0 dims, refuse to run).
    return F.clone(out) if out._base is not None else out


def tile(input, dims):
    """``repeat`` with ``dims`` padded with leading 1s to ``input``'s number of dims."""
    node = _t("tile", input)
    dims = _ints("tile", "dims", dims)
    dims = (1,) * (len(node.shape) - len(dims)) + dims
    return repeat(input, *dims)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Each element repeated ``repeats`` times along ``dim`` (flattened when None).

    ``repeats`` is an int (an expand and a reshape) or a tensor of one count per element
    (read back to the host, as PyTorch's CPU op does; then an ``index_select``).
    ``repeat_interleave(counts)`` alone gives the indices ``0..n-1`` repeated by ``counts``.
    """
    node = _t("repeat_interleave", input)
    if repeats is None:  # torch.repeat_interleave(repeats): indices
        if node.dtype not in (T.int32, T.int64):  # PyTorch's kernel has no other dtype
            raise DTypeNotImplementedError(
                f"\"repeat_interleave_cpu\" not implemented for '{F._mutation.torch_name(node.dtype)}'"
            )
        if len(node.shape) != 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        counts = np.asarray(input.tolist(), np.int64)
        if (counts < 0).any():
            raise RuntimeError("'repeat_interleave': repeats can not be negative")
        return tensor(np.repeat(np.arange(counts.size), counts), dtype=node.dtype, device=node.device)
    if dim is None:
        input = F.reshape(input, -1)
        d = 0
    else:
        d = _dim("repeat_interleave", dim, len(node.shape))
    if input.ndim == 0:
        input = F.reshape(input, 1)
    size = input.shape[d]
    if isinstance(repeats, F._tensor.Tensor):
        if repeats.dtype not in (T.int32, T.int64):
            raise RuntimeError(f"repeat_interleave: repeats has to be Long or Int tensor, got {repeats.dtype.name}")
        if repeats.ndim > 1:
            raise RuntimeError("repeat_interleave: repeats must be 0-dim or 1-dim tensor")
        counts = np.asarray(repeats.tolist(), np.int64).reshape(-1)
        if counts.size == 1:
            repeats = int(counts[0])
        else:
            if counts.size != size:
                raise RuntimeError(
                    f"'repeat_interleave': repeats must have the same size as input along dim, but got repeats.size(0) = {counts.size} "
                    f"and input.size({d}) = {size}"
                )
            if (counts < 0).any():
                raise RuntimeError("'repeat_interleave': repeats can not be negative")
            index = tensor(np.repeat(np.arange(size), counts), device=node.device)
            return _check_output_size(F._indexing.index_select(input, d, index), d, output_size)
    (r,) = _ints("repeat_interleave", "repeats", repeats)
    if r < 0:
        raise RuntimeError("'repeat_interleave': Repeats must be non-negative")
    shape = input.shape
    wide = F.expand(F.unsqueeze(input, d + 1), *shape[: d + 1], r, *shape[d + 1 :])
    out = F.reshape(wide, *shape[:d], size * r, *shape[d + 1 :])
    # New memory, as PyTorch's: the reshape stays a view of input for r == 1 or a dim of size 1
    return _check_output_size(F.clone(out) if out._base is not None else out, d, output_size)


def _check_output_size(out, d: int, output_size):
    if output_size is not None and out.shape[d] != output_size:
        raise RuntimeError(
            f"repeat_interleave: allocated size does not match required size ({output_size} != {out.shape[d]})"
        )
    return out


def roll(input, shifts, dims=None):
    """Elements shifted by ``shifts`` along ``dims`` (flattened when None), wrapping around: two slices joined."""
    node = _t("roll", input)
    shifts = _ints("roll", "shifts", shifts)
    if dims is None:
        if not shifts:
            raise RuntimeError("'roll': `shifts` required")
        if len(shifts) != 1:
            raise RuntimeError(f"'roll': shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
        out = F.reshape(roll(F.reshape(input, -1), shifts, 0), *node.shape)
        return autograd.show(out, "RollBackward0", (autograd.edge(input),))
    dims = _ints("roll", "dims", dims)
    if not shifts:
        raise RuntimeError("'roll': `shifts` required")
    if len(shifts) != len(dims):
        raise RuntimeError(f"'roll': shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    if not node.shape:
        raise IndexError(f"'roll': Dimension specified as {dims[0]} but tensor has no dimensions")
    out = input
    for shift, dim in zip(shifts, dims):
        d = _dim("roll", dim, len(node.shape))
        size = node.shape[d] if node.shape else 1
        k = shift % size if size else 0
        if k and node.shape:
            out = F.cat([_narrow(out, d, size - k, k), _narrow(out, d, 0, size - k)], d)
    # New memory, as PyTorch's, also when every shift is a whole turn: makemore's MLP writes
    # into the rolled index tensor, which must not write into the caller's
    out = F.clone(out) if out is input else out
    return autograd.show(out, "RollBackward0", (autograd.edge(input),))  # PyTorch's one node, not cat's


# ---------------------------------------------------------------------- flips and rotations


def fliplr(input):
    """Reverse dim 1 (left and right) of a tensor with at least 2 dims."""
    if len(_t("fliplr", input).shape) < 2:
        raise RuntimeError("'fliplr': Input must be >= 2-d.")
    return F.flip(input, (1,))


def flipud(input):
    """Reverse dim 0 (up and down) of a tensor with at least 1 dim."""
    if len(_t("flipud", input).shape) < 1:
        raise RuntimeError("'flipud': Input must be >= 1-d.")
    return F.flip(input, (0,))


@autograd.shown_as("Rot90Backward0", autograd.input_edge)
def rot90(input, k: int = 1, dims=(0, 1)):
    """Rotate by 90° ``k`` times in the plane of ``dims``, from the first dim towards the second (a view)."""
    node = _t("rot90", input)
    dims = _ints("rot90", "dims", dims)
    nd = len(node.shape)
    if len(dims) != 2:
        raise RuntimeError(f"'rot90': expected total rotation dims == 2, but got dims = {len(dims)}")
    if nd < 2:
        raise RuntimeError(f"'rot90': expected total dims >= 2, but got total dims = {nd}")
    d0, d1 = _dim("rot90", dims[0], nd), _dim("rot90", dims[1], nd)
    if d0 == d1:
        raise RuntimeError(
            f"'rot90': expected rotation dims to be different, but got dim0 = {dims[0]} and dim1 = {dims[1]}"
        )
    k %= 4
    if k == 1:
        return F.transpose(F.flip(input, (d1,)), d0, d1)
    if k == 2:
        return F.flip(input, (d0, d1))
    if k == 3:
        return F.transpose(F.flip(input, (d0,)), d0, d1)
    return F.clone(input)  # new memory, as for the other k and PyTorch's


# ---------------------------------------------------------------------- triangles and diagonals


def _keep_triangle(op: str, input, diagonal: int, lower: bool):
    node = _t(op, input)
    if len(node.shape) < 2:
        raise RuntimeError(f"{op}: input tensor must have at least 2 dimensions")
    m, n = node.shape[-2:]
    rows = F.reshape(tensor(np.arange(m), device=node.device), m, 1)
    cols = tensor(np.arange(n) - int(diagonal), device=node.device)
    keep = cols <= rows if lower else cols >= rows
    zero = False if node.dtype is T.bool_ else 0
    out = F.where(keep, input, zero)
    return autograd.show(out, f"{op.capitalize()}Backward0", (autograd.edge(input),))  # PyTorch's one node


def tril(input, diagonal: int = 0):
    """The lower triangle of the last two dims (elements with ``col - row <= diagonal``); zeros elsewhere."""
    return _keep_triangle("tril", input, diagonal, True)


def triu(input, diagonal: int = 0):
    """The upper triangle of the last two dims (elements with ``col - row >= diagonal``); zeros elsewhere."""
    return _keep_triangle("triu", input, diagonal, False)


def diagonal(input, offset: int = 0, dim1: int = 0, dim2: int = 1):
    """The diagonal of dims ``dim1`` and ``dim2`` (``offset`` above it when positive), as a last dim; a view.

    The two dims are moved last and flattened; the diagonal is then every (cols + 1)-th element,
    a strided slice. Writes through the result reach ``input`` where the two dims, in either
    order, flatten as a view of its storage (a contiguous or transposed matrix); where they do
    not (dims of a strided slice, say), the result is a copy that writes do not reach (PyTorch's
    is always a view).
    """
    node = _t("diagonal", input)
    nd = len(node.shape)
    d1, d2 = _dim("diagonal", dim1, nd), _dim("diagonal", dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    x = movedim(input, (d1, d2), (-2, -1))
    if not F._mutation.viewable(x, (*x.shape[:-2], x.shape[-2] * x.shape[-1])):
        # the same elements in the same order are the -offset diagonal of the dims swapped,
        # which may flatten as a view where these do not (a transposed matrix)
        swapped = movedim(input, (d2, d1), (-2, -1))
        if F._mutation.viewable(swapped, (*x.shape[:-2], x.shape[-2] * x.shape[-1])):
            x, offset = swapped, -offset
    rows, cols = x.shape[-2:]
    r0, c0 = (0, offset) if offset >= 0 else (-offset, 0)
    length = max(0, min(rows - r0, cols - c0))
    lead = x.shape[:-2]
    if length == 0:
        return F.reshape(F.getitem(x, (..., slice(0, 0), slice(0, 0))), *lead, 0)
    # flattened, the diagonal is every (cols + 1)-th element from r0·cols + c0: one strided slice
    # (and a view of the storage, written through, where the two dims flatten as one: PyTorch's
    # view rule; elsewhere the flattening is a copy, see the page)
    flat = F.reshape(x, *lead, rows * cols)
    start = r0 * cols + c0
    out = F.getitem(flat, (..., slice(start, start + (length - 1) * (cols + 1) + 1, cols + 1)))
    return autograd.show(out, "DiagonalBackward0", (autograd.edge(input),))  # PyTorch's one view node


_diagonal = diagonal  # (diag's argument ``diagonal`` hides the function there)


def diag_embed(input, offset: int = 0, dim1: int = -2, dim2: int = -1):
    """Matrices with the last dim of ``input`` on their ``offset`` diagonal, placed at dims ``dim1``, ``dim2``.

    No copy: the vector padded with zeros is read with a stride of size + 1 (a pad and reshapes).
    """
    node = _t("diag_embed", input)
    if not node.shape:
        raise IndexError("'diag_embed': Dimension out of range (expected to be in range of [-1, 0], but got -2)")
    nd = len(node.shape) + 1
    d1, d2 = _dim("diag_embed", dim1, nd), _dim("diag_embed", dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"'diag_embed': diagonal dimensions cannot be identical {dim1}, {dim2}")
    return movedim(_embed(input, offset), (-2, -1), (d1, d2))


def _embed(v, offset: int):
    """(*lead, n) -> (*lead, N, N), N = n + |offset|: v[i] at row i (+|offset| if negative), column i (+offset)."""
    lead, n = v.shape[:-1], v.shape[-1]
    size = n + abs(offset)
    if n == 0:
        return F.reshape(F.constant_pad_nd(v, (0, size * size)), *lead, size, size)
    # element i at flat position i·(size + 1) + start
    start = offset if offset >= 0 else -offset * size
    rows = F.constant_pad_nd(F.unsqueeze(v, -1), (0, size))  # (*lead, n, size + 1)
    flat = F.reshape(rows, *lead, n * (size + 1))
    flat = F.constant_pad_nd(flat, (start, size * size - start - n * (size + 1)))
    return F.reshape(flat, *lead, size, size)


def diag(input, diagonal: int = 0):
    """A 1-D ``input`` on the ``diagonal`` of a square matrix, or the ``diagonal`` of a 2-D ``input``."""
    node = _t("diag", input)
    if len(node.shape) == 1:
        return _embed(input, diagonal)
    if len(node.shape) == 2:
        return _diagonal(input, diagonal)
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {len(node.shape)}D")


def trace(input):
    """The sum of a matrix's diagonal (integers sum to int64, as PyTorch)."""
    node = _t("trace", input)
    if len(node.shape) != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {len(node.shape)}")
    if node.dtype is T.bool_:  # PyTorch's (its sum of a bool diagonal would be int64)
        raise DTypeNotImplementedError("\"trace\" not implemented for 'Bool'")
    return autograd.show(F.sum(diagonal(input)), "TraceBackward0", (autograd.edge(input),))


# ---------------------------------------------------------------------- products


def outer(input, vec2):
    """``input[i] * vec2[j]`` for vectors (a broadcast product; dtypes promote)."""
    for name, v in (("self", input), ("vec2", vec2)):
        if len(_t("outer", v).shape) != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {v.ndim}-D")
    out = F.mul(F.unsqueeze(input, 1), F.unsqueeze(vec2, 0))
    # PyTorch's: input.reshape(n, 1) * vec2, a MulBackward0 of a ViewBackward0 and the vector itself
    column = autograd.edge(input)
    column = column if column[0] is None else (autograd.GraphNode("ViewBackward0", (column,)), 0)
    return autograd.show(out, "MulBackward0", (column, autograd.edge(vec2)))


ger = outer


def mm(input, mat2):
    """The product of two matrices of one dtype (``matmul``'s order: ascending k, see docs/ops/matmul.md)."""
    sparse = F._sparse_operand(input, mat2)
    if sparse is not None:  # a sparse COO operand: vkml/frontend/sparse_coo.py
        return sparse._sparse_dispatch("mm", input, mat2)
    a, b = _t("mm", input), _t("mm", mat2)
    if len(a.shape) != 2:
        raise RuntimeError("'mm': self must be a matrix")
    if len(b.shape) != 2:
        raise RuntimeError("'mm': mat2 must be a matrix")
    if a.shape[1] != b.shape[0]:
        raise ShapeError(
            f"'mm': mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x{a.shape[1]} and {b.shape[0]}x{b.shape[1]})"
        )
    check_matmul_dtypes("mm", a.dtype, b.dtype, 2, 2)
    return F.matmul(input, mat2)


def bmm(input, mat2):
    """Batched product of (b, n, m) and (b, m, p) tensors of one dtype (``matmul``'s order)."""
    a, b = _t("bmm", input), _t("bmm", mat2)
    if len(a.shape) != 3:
        raise RuntimeError("'bmm': batch1 must be a 3D tensor")
    if len(b.shape) != 3:
        raise RuntimeError("'bmm': batch2 must be a 3D tensor")
    if b.shape[:2] != (a.shape[0], a.shape[2]):
        raise ShapeError(
            f"'bmm': Expected size for first two dimensions of batch2 tensor to be: [{a.shape[0]}, {a.shape[2]}] but got: "
            f"[{b.shape[0]}, {b.shape[1]}]."
        )
    check_matmul_dtypes("bmm", a.dtype, b.dtype, 3, 3)
    return autograd.show(F.matmul(input, mat2), "BmmBackward0", (autograd.edge(input), autograd.edge(mat2)))


def mv(input, vec):
    """Matrix times vector (``matmul``'s order); a sparse COO matrix gives a dense vector."""
    sparse = F._sparse_operand(input, vec)
    if sparse is not None:  # a sparse COO operand: vkml/frontend/sparse_coo.py
        return sparse._sparse_dispatch("mv", input, vec)
    a, v = _t("mv", input), _t("mv", vec)
    if len(a.shape) != 2 or len(v.shape) != 1:
        raise RuntimeError(f"'mv': vector + matrix @ vector expected, got 1, {len(a.shape)}, {len(v.shape)}")
    if a.shape[1] != v.shape[0]:
        raise ShapeError(
            f"'mv': size mismatch, got input ({a.shape[0]}), mat ({a.shape[0]}x{a.shape[1]}), vec ({v.shape[0]})"
        )
    check_matmul_dtypes("mv", a.dtype, v.dtype, 2, 1)
    return F.matmul(input, vec)


def dot(input, tensor):
    """The inner product of two vectors of one dtype (``matmul``'s order: ascending index, from -0.0)."""
    a, b = _t("dot", input), _t("dot", tensor)
    if len(a.shape) != 1 or len(b.shape) != 1:
        raise RuntimeError(f"'dot': 1D tensors expected, but got {len(a.shape)}D and {len(b.shape)}D tensors")
    if a.shape != b.shape:
        raise ShapeError(
            f"'dot': inconsistent tensor size, expected tensor [{a.shape[0]}] and src [{b.shape[0]}] to have the same number "
            f"of elements, but got {a.shape[0]} and {b.shape[0]} elements respectively"
        )
    check_matmul_dtypes("dot", a.dtype, b.dtype, 1, 1)
    return F.matmul(input, tensor)


def _scaled_sum(op: str, input, product, beta, alpha):
    """``beta * input + alpha * product``; ``beta == 0`` ignores ``input`` (its NaNs too), as PyTorch."""
    if not product.dtype.is_float:
        # addmm/addmv/addbmm/baddbmm truncate a float beta or alpha to an integer dtype, as PyTorch's CPU kernels
        truncates = op != "addr" and product.dtype is not T.bool_
        for name, v in (("beta", beta), ("alpha", alpha)):
            if isinstance(v, float) and not float(v).is_integer() and not truncates:
                raise RuntimeError(
                    f"{op}: for integral input tensors, argument {name} must not be a floating point number."
                )
    if product.dtype is T.bool_ and not isinstance(beta, float) and not isinstance(alpha, float):
        # bool results are logical: (beta and input) or (alpha and product), an int beta/alpha as a bool
        _broadcasts_to(op, input, product)
        scaled = product if alpha else F.logical_and(product, False)
        return F.logical_or(input, scaled) if beta else scaled
    if not product.dtype.is_float and product.dtype is not T.bool_:
        beta = int(beta) if isinstance(beta, float) and math.isfinite(beta) else beta
        alpha = int(alpha) if isinstance(alpha, float) and math.isfinite(alpha) else alpha
    scaled = product if alpha == 1 else F.mul(product, alpha)
    if beta == 0:
        _broadcasts_to(op, input, product)
        return scaled
    part = input if beta == 1 else F.mul(input, beta)
    _broadcasts_to(op, input, product)
    return F.add(part, scaled)


def _broadcasts_to(op: str, input, product) -> None:
    if lazy.broadcast_shapes(op, input.shape, product.shape) != product.shape:
        raise ShapeError(
            f"{op}: the input of shape {list(input.shape)} does not broadcast to the product's shape {list(product.shape)}"
        )


def _rounds_once(input, a, b) -> bool:
    """Whether ``input`` and both factors are float16, or all bfloat16: PyTorch's addmm and baddbmm then
    add ``beta * input`` to the product's float32 sums and round once."""
    Tensor = F._tensor.Tensor
    if not all(isinstance(t, Tensor) for t in (input, a, b)):
        return False
    return input.dtype in (T.float16, T.bfloat16) and input.dtype is a.dtype is b.dtype


def _wide_scaled_sum(op: str, product, input, a, b, beta, alpha):
    """``beta * input + alpha * product(a, b)`` in float32 (half products are exact there), rounded once."""
    wide = T.float32
    total = _scaled_sum(op, F.cast(input, wide), product(F.cast(a, wide), F.cast(b, wide)), beta, alpha)
    return F.cast(total, input.dtype)


def _legacy_addmm(args: tuple):
    """PyTorch's deprecated overloads ``addmm(beta, input, [alpha,] mat1, mat2)`` and the method's
    ``input.addmm_(beta, [alpha,] mat1, mat2)``: (input, mat1, mat2, beta, alpha), with PyTorch's warning."""
    if isinstance(args[0], F._tensor.Tensor):  # the method: input first, then beta
        input, beta, *rest = args
    else:
        beta, input, *rest = args
    alpha = rest.pop(0) if len(rest) == 3 else 1
    if len(rest) != 2 or isinstance(beta, F._tensor.Tensor) or isinstance(alpha, F._tensor.Tensor):
        raise TypeError(f"addmm() takes 3 positional arguments (input, mat1, mat2) but {len(args)} were given")
    legacy = "Number beta, Tensor input, " + ("Number alpha, " if len(args) == 5 else "")
    warnings.warn(
        f"This overload of addmm is deprecated:\n\taddmm({legacy}Tensor mat1, Tensor mat2)\nConsider using one of "
        "the following signatures instead:\n\taddmm(Tensor input, Tensor mat1, Tensor mat2, *, Number beta = 1, "
        "Number alpha = 1)",
        UserWarning,
        stacklevel=user_stacklevel(),
    )
    return input, *rest, beta, alpha


def addmm(input, mat1, mat2, *rest, beta=1, alpha=1):
    """``beta * input + alpha * (mat1 @ mat2)``, ``input`` broadcast to the product's shape."""
    if rest:
        input, mat1, mat2, beta, alpha = _legacy_addmm((input, mat1, mat2, *rest))
    sparse = F._sparse_operand(mat1, mat2)
    if sparse is not None:  # a sparse COO operand: vkml/frontend/sparse_coo.py
        return sparse._sparse_dispatch("addmm", input, mat1, mat2, beta=beta, alpha=alpha)
    _t("addmm", input)
    if _rounds_once(input, mat1, mat2):
        return _shown_addmm(_wide_scaled_sum("addmm", mm, input, mat1, mat2, beta, alpha), input, mat1, mat2)
    prod = mm(mat1, mat2)
    if input.dtype is not prod.dtype:
        raise RuntimeError(
            f"addmm: expected self and mat2 to have the same dtype, but got: {input.dtype.name} != {prod.dtype.name}"
        )
    return _shown_addmm(_scaled_sum("addmm", input, prod, beta, alpha), input, mat1, mat2)


def _shown_addmm(out, input, mat1, mat2):
    """``out`` shown as PyTorch's one ``AddmmBackward0`` node (vkml records a product, a scale and a sum)."""
    edges = (autograd.edge(input), autograd.edge(mat1), autograd.edge(mat2))
    return autograd.show(out, "AddmmBackward0", edges) if out is not input else out


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """``beta * input + alpha * bmm(batch1, batch2)``, ``input`` broadcast to the product's shape."""
    _t("baddbmm", input)
    edges = (autograd.edge(input), autograd.edge(batch1), autograd.edge(batch2))  # PyTorch's one node's
    if _rounds_once(input, batch1, batch2):
        out = _wide_scaled_sum("baddbmm", bmm, input, batch1, batch2, beta, alpha)
    else:
        prod = bmm(batch1, batch2)
        if input.dtype is not prod.dtype:
            raise RuntimeError(
                f"baddbmm: expected self and batch2 to have the same dtype, but got: {input.dtype.name} != "
                f"{prod.dtype.name}"
            )
        out = _scaled_sum("baddbmm", input, prod, beta, alpha)
    return autograd.show(out, "BaddbmmBackward0", edges) if out is not input else out


def addmv(input, mat, vec, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat @ vec)``."""
    _t("addmv", input)
    with autograd.no_grad():
        out = _scaled_sum("addmv", input, mv(mat, vec), beta, alpha)
    return autograd.record("addmv", (input, mat, vec), out, {"beta": beta, "alpha": alpha})


def _grad_addmv(c):
    """PyTorch's AddmvBackward0: ``grad·beta``, ``outer(grad, vec)·alpha`` and ``(matᵀ @ grad)·alpha``, a
    scale of 1 skipped (each product rounded in the operands' dtype, in that order)."""
    _, mat, vec = c.inputs
    g, beta, alpha = c.g, c.attrs["beta"], c.attrs["alpha"]

    def scaled(t, s):
        return t if s == 1 else F.mul(t, s)

    g_input = scaled(g, beta) if c.needs[0] else None
    g_mat = scaled(F.matmul(F.unsqueeze(g, 1), F.unsqueeze(vec, 0)), alpha) if c.needs[1] else None
    g_vec = scaled(F.matmul(F.transpose(mat, 0, 1), g), alpha) if c.needs[2] else None
    return g_input, g_mat, g_vec


_grads.RULES["addmv"] = _grad_addmv


def tensordot(a, b, dims=2):
    """Contract the last ``dims`` dims of ``a`` with the first of ``b`` (or the listed pairs): one ``matmul``."""
    na, nb = _t("tensordot", a), _t("tensordot", b)
    if isinstance(dims, F._tensor.Tensor):
        dims = dims.tolist()
    if isinstance(dims, (tuple, list)) and any(isinstance(d, (int, np.integer)) for d in dims):
        raise TypeError(f"tensordot(): argument 'dims' must be an int or a pair of lists of ints, not {dims!r}")
    if isinstance(dims, (int, np.integer)):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > len(na.shape) or dims > len(nb.shape):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        da = tuple(range(len(na.shape) - int(dims), len(na.shape)))
        db = tuple(range(int(dims)))
    else:
        if len(dims) != 2:
            raise RuntimeError("tensordot expects dims to be a pair of lists or an int")
        da, db = (_ints("tensordot", "dims", d) for d in dims)
        if len(da) != len(db):
            raise RuntimeError(
                f"'tensordot': both dimension lists should have same length, got {len(da)} and {len(db)}"
            )
        da = tuple(_dim("tensordot", d, len(na.shape)) for d in da)
        db = tuple(_dim("tensordot", d, len(nb.shape)) for d in db)
    if na.dtype is not nb.dtype:
        raise RuntimeError(f"'tensordot': expected scalar type {na.dtype.name} but found {nb.dtype.name}")
    for x, y in zip(da, db):
        # a size-1 dim contracts with any size, as PyTorch's: the other operand is summed over it first
        if b.shape[y] == 1:
            a = F.sum(a, x, keepdim=True, dtype=na.dtype) if a.shape[x] != 1 else a
        elif a.shape[x] == 1:
            b = F.sum(b, y, keepdim=True, dtype=nb.dtype)
        elif a.shape[x] != b.shape[y]:
            raise ShapeError(
                f"'tensordot': contracted dimensions need to match, but first has size {na.shape[x]} in dim {x} and second has "
                f"size {nb.shape[y]} in dim {y}"
            )
    free_a = [d for d in range(a.ndim) if d not in da]
    free_b = [d for d in range(b.ndim) if d not in db]
    k = math.prod(a.shape[d] for d in da)
    left = F.reshape(F.permute(a, *free_a, *da), math.prod(a.shape[d] for d in free_a), k)
    right = F.reshape(F.permute(b, *db, *free_b), k, math.prod(b.shape[d] for d in free_b))
    out = F.matmul(left, right)
    return F.reshape(out, *(a.shape[d] for d in free_a), *(b.shape[d] for d in free_b))


# ---------------------------------------------------------------------- einsum

_SUBLIST_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _sublist_subscripts(sublist) -> str:
    """``[0, 1, ...]`` as ``"ab..."``: PyTorch numbers the subscripts 0..51 (a-z, then A-Z)."""
    if not isinstance(sublist, (list, tuple)):
        raise TypeError(f"einsum(): expected a list of subscripts, got {type(sublist).__name__}")
    out = []
    for s in sublist:
        if s is Ellipsis:
            out.append("...")
        elif isinstance(s, (int, np.integer)) and not isinstance(s, bool) and 0 <= s < len(_SUBLIST_LETTERS):
            out.append(_SUBLIST_LETTERS[s])
        else:
            raise ValueError(f"einsum(): subscript in subscript list is not within the valid range [0, 52), got {s!r}")
    return "".join(out)


def _sublist_equation(args: tuple):
    """``(x, [0, 1], y, [1, 2], [0, 2])`` as ``("ab,bc->ac", (x, y))``; without the last list, no ``->``."""
    operands = args[0::2][: len(args) // 2]
    terms = [_sublist_subscripts(sub) for sub in args[1::2][: len(args) // 2]]
    equation = ",".join(terms)
    if len(args) % 2:
        equation += "->" + _sublist_subscripts(args[-1])
    return equation, tuple(operands)


def einsum(equation, *operands):
    """Sums of products named by an equation (``"ij,jk->ik"``, ``"bii->bi"``, ``"...ij->...ji"``).

    Lowering: a letter repeated within one operand takes that operand's diagonal; a letter that
    appears in one operand only and not in the output is summed there first; then operands are
    joined left to right. Joining two operands whose shared letters are all either kept (batch)
    or contracted is one ``matmul`` (each output adds its products in ascending order of the
    contracted letters flattened, their order of first appearance in the equation, from -0.0;
    see docs/ops/matmul.md); the last operand's letters missing from the output are summed by
    ``sum``'s pairwise tree. Integer operands give exact results. The result dtype is the
    operands' promoted dtype, except where integers are summed outside a contraction (``ij->j``,
    ``ij,jk->``): that sum widens to int64, as ``sum`` and PyTorch's einsum do.
    """
    if isinstance(equation, F._tensor.Tensor):  # the sublist form: einsum(x, [0, 1], y, [1, 2], [0, 2])
        equation, operands = _sublist_equation((equation, *operands))
    if len(operands) == 1 and isinstance(operands[0], (tuple, list)):
        operands = tuple(operands[0])
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): the equation must be a string, got {type(equation).__name__}")
    nodes = [_t("einsum", o) for o in operands]
    if not nodes:
        raise RuntimeError("einsum(): must provide at least one operand")
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) > len(nodes):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    if len(terms) < len(nodes):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    dev = lazy.check_devices("einsum", nodes)
    del dev
    # each operand's subscripts, with '...' expanded to upper-case-free private letters
    ell_dims = 0
    parsed = []
    for i, (term, node) in enumerate(zip(terms, nodes)):
        letters = _subscripts(term, i)
        if "." in letters:
            named = len(letters) - 1
            if named > len(node.shape):
                raise RuntimeError(
                    f"einsum(): the number of subscripts in the equation ({named}) is more than the number of "
                    f"dimensions ({len(node.shape)}) for operand {i}"
                )
            ell_dims = max(ell_dims, len(node.shape) - named)
        elif len(letters) != len(node.shape):
            raise RuntimeError(
                f"einsum(): the number of subscripts in the equation ({len(letters)}) does not match the number of "
                f"dimensions ({len(node.shape)}) for operand {i} and no ellipsis was given"
            )
        parsed.append(letters)
    ell = [chr(0x100 + k) for k in range(ell_dims)]  # private names for the broadcast dims
    expanded = []
    for letters, node in zip(parsed, nodes):
        if "." in letters:
            k = letters.index(".")
            n = len(node.shape) - (len(letters) - 1)
            letters = letters[:k] + ell[ell_dims - n :] + letters[k + 1 :]
        expanded.append(letters)
    order = []  # every letter, in order of first appearance
    for letters in expanded:
        for c in letters:
            if c not in order:
                order.append(c)
    if arrow:
        out_letters = _subscripts(rhs, None)
        if "." in out_letters:
            k = out_letters.index(".")
            out_letters = out_letters[:k] + ell + out_letters[k + 1 :]
        for c in out_letters:
            if c not in order:
                raise RuntimeError(
                    f"einsum(): output subscript {c} does not appear in the equation for any input operand"
                )
            if out_letters.count(c) > 1:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in the output")
    else:
        counts = {c: sum(letters.count(c) for letters in expanded) for c in order}
        out_letters = ell + sorted(c for c in order if counts[c] == 1 and c not in ell)
    # sizes: a letter's size is the same wherever it appears, or 1 there (broadcast)
    sizes: dict[str, int] = {}
    for i, (letters, node) in enumerate(zip(expanded, nodes)):
        for c, s in zip(letters, node.shape):
            if c in sizes and s != sizes[c] and s != 1 and sizes[c] != 1:
                if letters.count(c) > 1:
                    raise RuntimeError(
                        f"einsum(): subscript {c} is repeated for operand {i} but the sizes don't match, {s} != {sizes[c]}"
                    )
                raise ShapeError(
                    f"einsum(): subscript {c} has size {s} for operand {i} which does not broadcast with previously "
                    f"seen size {sizes[c]}"
                )
            if c not in sizes or sizes[c] == 1:
                sizes[c] = s
        for c in set(letters):
            dims = [s for l_, s in zip(letters, node.shape) if l_ == c]
            if len(set(dims)) > 1:
                raise RuntimeError(
                    f"einsum(): subscript {c} is repeated for operand {i} but the sizes don't match, {dims[1]} != {dims[0]}"
                )
    dtype = nodes[0].dtype
    for n in nodes[1:]:
        if n.dtype is not dtype:  # PyTorch's einsum multiplies without promoting
            raise RuntimeError(f"'einsum': expected scalar type {dtype.name} but found {n.dtype.name}")
    # 1. diagonals of repeated letters; 2. sum letters only this operand has and the output lacks
    prepared = []
    for k, (letters, x) in enumerate(zip(expanded, operands)):
        x = F.cast(x, dtype)
        letters = list(letters)
        while len(set(letters)) != len(letters):
            c = next(c for c in letters if letters.count(c) > 1)
            i = letters.index(c)
            j = letters.index(c, i + 1)
            x = diagonal(x, 0, i, j)
            letters = [l_ for n, l_ in enumerate(letters) if n not in (i, j)] + [c]
        elsewhere = set(out_letters) | {c for m, other in enumerate(expanded) if m != k for c in other}
        alone = [n for n, c in enumerate(letters) if c not in elsewhere]
        if alone and len(operands) > 1:
            x = _sum(x, alone)
            letters = [c for n, c in enumerate(letters) if n not in alone]
        prepared.append((x, letters))
    # 3. join left to right
    x, letters = prepared[0]
    for m, (y, other) in enumerate(prepared[1:], start=1):
        later = set(out_letters) | {c for _, ls in prepared[m + 1 :] for c in ls}
        x, letters = _join(x, letters, y, other, later, order, sizes)
    # 4. sum what the output lacks, then put the output's letters in order
    gone = [n for n, c in enumerate(letters) if c not in out_letters]
    if gone:
        x = _sum(x, gone)
        letters = [c for n, c in enumerate(letters) if n not in gone]
    x = F.permute(x, *[letters.index(c) for c in out_letters]) if letters else x
    shape = tuple(sizes[c] for c in out_letters)
    return F.expand(x, *shape) if x.shape != shape else x


def _subscripts(term: str, operand) -> list[str]:
    out, i = [], 0
    where = f"operand {operand}" if operand is not None else "the output"
    while i < len(term):
        c = term[i]
        if term.startswith("...", i):
            if "." in out:
                raise RuntimeError(f"einsum(): found more than one '...' in {where}")
            out.append(".")
            i += 3
            continue
        if c == ".":
            raise RuntimeError("einsum(): found '.' for operand that is not part of any ellipsis")
        if not c.isascii() or not c.isalpha():
            raise RuntimeError(
                f"einsum(): invalid subscript given at index {i} in the equation string, subscripts must be in [a-zA-Z]"
            )
        out.append(c)
        i += 1
    return out


def _sum(x, dims):
    """``sum`` over ``dims``: integers and bools widen to int64, as PyTorch's einsum does where it sums alone."""
    return F.sum(x, tuple(dims))


def _join(x, xl, y, yl, later, order, sizes):
    """The product of two operands: shared letters still needed are batch dims, the others contracted (matmul)."""
    shared = [c for c in order if c in xl and c in yl]
    batch = [c for c in shared if c in later]
    contract = [c for c in shared if c not in later]
    only_x = [c for c in xl if c not in shared]
    only_y = [c for c in yl if c not in shared]

    def arrange(t, letters, groups):
        perm = [letters.index(c) for g in groups for c in g]
        t = F.permute(t, *perm) if perm != list(range(len(perm))) else t
        shape = [t.shape[i] for i in range(t.ndim)]
        sizes_of = iter(shape)
        merged = []
        for g in groups:
            merged.append(math.prod(next(sizes_of) for _ in g))
        return t, merged

    # broadcast size-1 batch and contracted letters to their full size first
    def full(t, letters):
        want = [sizes[c] if c in shared else t.shape[n] for n, c in enumerate(letters)]
        return F.expand(t, *want) if tuple(want) != t.shape else t

    x, y = full(x, xl), full(y, yl)
    dtype = promote_types(x.dtype, y.dtype)
    xb, xs = arrange(x, xl, [batch, only_x, contract])
    yb, ys = arrange(y, yl, [batch, contract, only_y])
    left = F.reshape(xb, *[sizes[c] for c in batch], xs[1], xs[2])
    right = F.reshape(yb, *[sizes[c] for c in batch], ys[1], ys[2])
    if dtype is T.bool_:
        prod = F.cast(F.matmul(F.cast(left, T.int64), F.cast(right, T.int64)), T.bool_)
    else:
        prod = F.cast(F.matmul(left, right), dtype)
    out = F.reshape(
        prod,
        *[sizes[c] for c in batch],
        *[x.shape[xl.index(c)] for c in only_x],
        *[y.shape[yl.index(c)] for c in only_y],
    )
    return out, batch + only_x + only_y


# ---------------------------------------------------------------------- grids and index sets


def meshgrid(*tensors, indexing: str = "ij"):
    """Coordinate grids of 0-d or 1-D tensors (expanded views); ``indexing='xy'`` swaps the first two dims.

    PyTorch warns when ``indexing`` is not given and uses 'ij'; vkml uses 'ij' without a warning.
    """
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    nodes = [_t("meshgrid", t) for t in tensors]
    if not nodes:
        raise RuntimeError("torch.meshgrid: expects a non-empty TensorList")
    for n in nodes:
        if len(n.shape) > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: shape {n.shape}")
    dtypes = {n.dtype for n in nodes}
    if len(dtypes) > 1:
        raise RuntimeError("torch.meshgrid: expects all tensors to have the same dtype")
    lazy.check_devices("meshgrid", nodes)
    flat = [F.reshape(t, -1) for t in tensors]
    swap = indexing == "xy" and len(flat) >= 2
    if swap:
        flat[0], flat[1] = flat[1], flat[0]
    shape = tuple(f.shape[0] for f in flat)
    grids = []
    for k, f in enumerate(flat):
        view = [1] * len(flat)
        view[k] = shape[k]
        grids.append(F.expand(F.reshape(f, *view), *shape))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def cartesian_prod(*tensors):
    """Every combination of the 1-D tensors' elements, as rows (the last varies fastest); one tensor comes back."""
    nodes = [_t("cartesian_prod", t) for t in tensors]
    for n in nodes:
        if len(n.shape) != 1:
            raise RuntimeError(f"'cartesian_prod': Expect a 1D vector, but got shape {list(n.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([F.reshape(g, -1) for g in grids], 1)


def _triangle_indices(op: str, row: int, col: int, offset: int, dtype, device, lower: bool):
    dtype = _dtype(dtype) or T.int64
    if dtype not in (T.int32, T.int64):
        raise DTypeError(f"\"{op}\" not implemented for '{dtype.name}'")
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    r, c = np.meshgrid(np.arange(row), np.arange(col), indexing="ij")
    keep = (c - r <= offset) if lower else (c - r >= offset)
    return tensor(np.stack([r[keep], c[keep]]).reshape(2, -1), dtype=dtype, device=device)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None):
    """The (row, column) indices of the lower triangle of a row × col matrix, row by row: a (2, N) tensor."""
    return _triangle_indices("tril_indices", row, col, offset, dtype, device, True)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None):
    """The (row, column) indices of the upper triangle of a row × col matrix, row by row: a (2, N) tensor."""
    return _triangle_indices("triu_indices", row, col, offset, dtype, device, False)


# ---------------------------------------------------------------------- Tensor methods


def _tile_method(self, *dims, **keyword):
    """``Tensor.tile(dims)``, also as ``x.tile(2, 3)`` and ``x.tile(dims=(2, 3))``."""
    if keyword:
        dims = F.keyword_sizes("tile", dims, keyword, "dims")
    return tile(self, dims[0] if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else dims)


# The public names (vkml/frontend/public.py binds them); a method takes the function's arguments after
# ``self``, as PyTorch's (``flatten`` replaces the argument-free one of tensor.py).
EXPORTS = (
    Export("addmm", method=True, inplace=True),
    Export("addmv", method=True, inplace=True),
    Export("atleast_1d"),
    Export("atleast_2d"),
    Export("atleast_3d"),
    Export("baddbmm", method=True, inplace=True),
    Export("bmm", method=True),
    Export("cartesian_prod"),
    Export("chunk", method=True),
    Export("column_stack"),
    Export("diag", method=True),
    Export("diag_embed", method=True),
    Export("diagonal", method=True),
    Export("dot", method=True),
    Export("dstack"),
    Export("einsum"),
    Export("flatten", method=True),
    Export("fliplr", method=True),
    Export("flipud", method=True),
    Export("ger", method=True),
    Export("hsplit", method=True),
    Export("hstack"),
    Export("meshgrid"),
    Export("mm", method=True),
    Export("moveaxis", method=True),
    Export("movedim", method=True),
    Export("mv", method=True),
    Export("narrow", method=True),
    Export("outer", method=True),
    Export("repeat_interleave", method=True),
    Export("roll", method=True),
    Export("rot90", method=True),
    Export("row_stack"),
    Export("split", method=True),
    Export("stack"),
    Export("swapaxes", method=True),
    Export("swapdims", method=True),
    Export("t", method=True),
    Export("tensor_split", method=True),
    Export("tensordot"),
    Export("trace", method=True),
    Export("tril", method=True),
    Export("tril_indices"),
    Export("triu", method=True),
    Export("triu_indices"),
    Export("unbind", method=True),
    Export("unflatten", method=True),
    Export("vsplit", method=True),
    Export("vstack"),
    Export("view_as", function=False, method=True),
    Export("reshape_as", function=False, method=True),
    Export("expand_as", function=False, method=True),
    Export("repeat", function=False, method=True),
    Export("tile", method=_tile_method),  # also as x.tile(2, 3)
    Export("mT", function=False, method=property(mT)),
)


# ---------------------------------------------------------------------- padding by reflection, replication, wrapping

PAD_MODES = ("reflect", "replicate", "circular")


def pad_nd(input, pad, mode: str):
    """``nn.functional.pad`` in mode ``'reflect'``, ``'replicate'`` or ``'circular'``: slices joined by ``cat``.

    ``pad`` lists (before, after) amounts from the last dim back, for the last 1, 2 or 3 dims of
    an input with one or no batch dim more, as PyTorch. Output position j of a padded dim of
    size n reads input position x = j - before, mapped into the dim: reflected about its ends
    (``reflect``: -x, or 2(n-1) - x), clamped (``replicate``), or wrapped (``circular``, which
    first crops negative amounts and wraps within what is left, as PyTorch). The positions form
    a few runs, each a slice of the input read forwards, backwards (a flip) or repeated (an
    expand), so values move and never change; the gradient adds back along the same runs.
    """
    if mode not in PAD_MODES:
        raise NotImplementedError(f"'pad': Unrecognised padding mode {mode}")
    node = _t("pad", input)
    pad = _ints("pad", "pad", tuple(pad))
    if len(pad) % 2:
        raise RuntimeError("'pad': Padding length must be divisible by 2")
    k, nd = len(pad) // 2, len(node.shape)
    if len(pad) > 2 * nd:  # PyTorch checks this first
        raise RuntimeError(
            "'pad': Padding length should be less than or equal to two times the input dimension but got padding "
            f"length {len(pad)} and input of dimension {nd}"
        )
    if k not in (1, 2, 3) or nd not in (k + 1, k + 2):
        raise NotImplementedError(
            f"'pad': Padding size {len(pad)} is not supported for {nd}D input tensor.\nSupported combinations for "
            "non-constant padding:\n  - 2D or 3D input: padding size = 2 (pads last dimension)\n  - 3D or 4D input: "
            "padding size = 4 (pads last 2 dimensions)\n  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)"
        )
    amounts = [(nd - 1 - i, pad[2 * i], pad[2 * i + 1]) for i in range(k)]
    if node.dtype is T.bool_ and mode != "circular":  # PyTorch has no bool kernel for these two
        kernel = "reflection" if mode == "reflect" else "replication"
        raise NotImplementedError(f"\"{kernel}_pad{k}d\" not implemented for 'Bool'")
    if mode == "circular":
        for d, before, after in amounts:
            if before > node.shape[d] or after > node.shape[d]:
                raise RuntimeError("'pad': Padding value causes wrapping around more than once.")
            if node.shape[d] + before + after < 0:
                raise RuntimeError("'pad': Negative padding value is resulting in an empty dimension")
    first = 1 if nd == k + 2 else 0  # a batch dim may be empty; the others may not
    if any(node.shape[d] == 0 for d in range(first, nd)):
        raise RuntimeError(
            f"'pad': Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 batch size and other non-zero "
            f"dimensions for input, but got: {list(node.shape)}"
        )
    if mode == "reflect":
        for i, (d, before, after) in enumerate(amounts):
            if before >= node.shape[d] or after >= node.shape[d]:
                raise RuntimeError(  # PyTorch numbers the width's argument 4, the height's 6, the depth's 8
                    f"'pad': Argument #{4 + 2 * i}: Padding size should be less than the corresponding input "
                    f"dimension, but got: padding ({before}, {after}) at dimension {d} of input {list(node.shape)}"
                )
    out = input
    for d, before, after in amounts:
        out = _pad_dim(out, d, before, after, mode)
    if out is input or out._base is not None:  # no padding, or a crop: PyTorch's result is a copy all the same
        out = F.clone(out)
    return out


def _pad_dim(x, d: int, before: int, after: int, mode: str):
    n = x.shape[d]
    if mode == "circular":  # crop negative amounts first, then wrap within what is left
        lo, hi = max(0, -before), n - max(0, -after)
        x, n = _narrow(x, d, lo, max(0, hi - lo)), max(0, hi - lo)
        before, after = max(0, before), max(0, after)
        if before > n or after > n:  # PyTorch reads memory outside the input here (its values vary)
            raise RuntimeError(
                f"'pad': Padding value causes wrapping around more than once (dim {d}: {before}, {after} after cropping "
                f"to size {n})."
            )
    size = n + before + after
    if size < 0:
        raise RuntimeError(f"pad: the padded size of dim {d} would be {size}")
    if size == 0:  # cropped away entirely: an empty slice, as PyTorch (no runs to join)
        return _narrow(x, d, 0, 0)
    positions = []
    for j in range(size):
        p = j - before
        if mode == "reflect":
            p = -p if p < 0 else (2 * (n - 1) - p if p >= n else p)
        elif mode == "replicate":
            p = min(max(p, 0), n - 1)
        else:
            p %= n
        positions.append(p)
    if positions == list(range(n)):
        return x
    parts, j = [], 0
    while j < size:  # maximal runs of steps +1, -1 or 0
        step = positions[j + 1] - positions[j] if j + 1 < size else 1
        if step not in (-1, 0, 1):
            step = 1
        end = j + 1
        while end < size and positions[end] - positions[end - 1] == step:
            end += 1
        length, start = end - j, positions[j]
        if step == 1:
            parts.append(_narrow(x, d, start, length))
        elif step == -1:
            parts.append(F.flip(_narrow(x, d, start - length + 1, length), (d,)))
        else:
            one = _narrow(x, d, start, 1)
            parts.append(F.expand(one, *[length if i == d else s for i, s in enumerate(one.shape)]))
        j = end
    return parts[0] if len(parts) == 1 else F.cat(parts, d)
