"""PyTorch's memory formats: ``vkml.contiguous_format``, ``channels_last``, ``channels_last_3d``,
``preserve_format`` and their type ``vkml.memory_format``.

vkml keeps every tensor's elements in row-major order of its shape and lets its kernels choose how
they walk them, so a memory format changes no values and costs no copy. What it changes is what a
tensor reports, as PyTorch's: a tensor made in a channels-last format (``x.to(memory_format=
vkml.channels_last)``, ``x.contiguous(memory_format=...)``, ``x.clone(memory_format=...)``,
``empty(..., memory_format=...)``, ``model.to(memory_format=...)``'s 4-D (5-D) parameters) carries
the format (``Tensor._format``, on the tensor that owns its storage; None: row-major), and
``stride()``, ``is_contiguous()`` and ``is_contiguous(memory_format=...)`` answer for it and for its
views; ``contiguous()`` gives a row-major tensor again. The format passes on as PyTorch's does in the
common cases: an elementwise result takes the format of its first operand of the result's shape (a
broadcast bias leaves it to the other), a cast, ``clone()``, the ``*_like`` constructors keep it,
``conv2d`` gives channels last when its input or weight is, batch norm and 2-D pooling keep their
input's. Elsewhere (reductions, matmul, a gradient) a result is row-major (docs/interop.md).
"""

from __future__ import annotations

import weakref

from .exports import Export


class memory_format:  # noqa: N801  (torch.memory_format's name)
    """A memory format, as ``torch.memory_format``.

    >>> import vkml
    >>> vkml.channels_last, isinstance(vkml.channels_last, vkml.memory_format)
    (vkml.channels_last, True)
    """

    __slots__ = ("name", "rank")

    def __init__(self, name: str, rank: int | None):
        self.name = name
        self.rank = rank  # the tensor rank the format needs (None: any)

    def __repr__(self) -> str:
        return f"vkml.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))


contiguous_format = memory_format("contiguous_format", None)
channels_last = memory_format("channels_last", 4)
channels_last_3d = memory_format("channels_last_3d", 5)
preserve_format = memory_format("preserve_format", None)
_FORMATS = {f.name: f for f in (contiguous_format, channels_last, channels_last_3d, preserve_format)}


def _by_name(name: str) -> memory_format:
    return _FORMATS[name]


def check(op: str, value, ndim: int | None = None) -> None:
    """PyTorch's errors for ``memory_format=value`` given to ``op`` on a tensor of ``ndim`` dims (None: a module)."""
    if value is None:
        return
    if not isinstance(value, memory_format):
        raise TypeError(f"{op}(): argument 'memory_format' must be vkml.memory_format, not {type(value).__name__}")
    if ndim is not None and value.rank is not None and ndim != value.rank:
        raise RuntimeError(f"required rank {value.rank} tensor to use {value.name} format")


# Whether a tensor with a channels-last format is alive: while none is, the elementwise ops skip looking
# for one (the common program never pays for the format's bookkeeping, nor does one that converted a
# model once and dropped it). Invariant: ACTIVE == bool(_LIVE); _LIVE maps id(t) to a weak reference
# whose callback forgets t when it dies (a tensor's format is set only by ``mark``).
ACTIVE = False
_LIVE: dict[int, weakref.ref] = {}


def _forget(key: int) -> None:
    global ACTIVE
    _LIVE.pop(key, None)
    ACTIVE = bool(_LIVE)


def live_count() -> int:
    """How many tensors alive now carry a channels-last format (tests check the bookkeeping with it)."""
    return len(_LIVE)


def format_of(t) -> memory_format | None:
    """The channels-last format ``t`` is laid out in as PyTorch would report it, None for row-major: its
    own, or its storage owner's where ``t`` views it whole (detach(), .data, a dtype view)."""
    base = t._base
    if base is None:
        return getattr(t, "_format", None)
    if all(step[0] == "dtype" for step in t._chain) and tuple(base.shape) == tuple(t.shape):
        return getattr(base, "_format", None)
    return None


def mark(t, fmt: memory_format | None):
    """Give ``t`` (a tensor that owns its storage) the layout ``fmt`` (contiguous_format, None: row-major); returns it."""
    global ACTIVE
    if fmt is contiguous_format or fmt is preserve_format or (fmt is not None and fmt.rank != t.ndim):
        fmt = None
    if t._base is None:
        t._format = fmt
        key = id(t)
        if fmt is None:
            if key in _LIVE:
                _forget(key)
        elif key not in _LIVE:
            _LIVE[key] = weakref.ref(t, lambda _ref, key=key: _forget(key))
            ACTIVE = True
    return t


def suggested(t) -> memory_format | None:
    """PyTorch's ``suggest_memory_format``: ``t``'s channels-last format, also for a view whose strides
    order the dims channels-last (a slice of a channels-last tensor), None for row-major."""
    fmt = format_of(t)
    if fmt is not None or t.ndim not in (4, 5):
        return fmt
    fmt = channels_last if t.ndim == 4 else channels_last_3d
    strides = t.stride()
    order = [0, *range(2, t.ndim), 1]  # outermost to innermost
    if (
        strides[1] == 1
        and all(strides[a] >= strides[b] for a, b in zip(order, order[1:]))
        and strides != strides_in(tuple(t.shape), None)
    ):
        return fmt
    return None


def propagate(out, *operands):
    """``out`` (an elementwise result) in the format of the first tensor operand of its shape; returns ``out``."""
    for o in operands:
        if hasattr(o, "_node") and o.shape == out.shape:  # a Tensor (this module sits below tensor.py)
            fmt = format_of(o)
            if fmt is not None:
                mark(out, fmt)
            return out
    return out


def like(op: str, out, input, fmt):
    """A ``*_like`` constructor's result ``out`` in ``fmt`` (default preserve_format: ``input``'s layout)."""
    check(op, fmt, out.ndim)
    if fmt is None or fmt is preserve_format:
        return mark(out, format_of(input)) if ACTIVE else out
    return mark(out, fmt)


def keep(out, *sources):
    """A layer's result (a tensor, or a tuple of them: values and indices) in the channels-last format of
    the first of ``sources`` that has one and the result's rank (conv2d: input, then weight; pooling,
    the input), as PyTorch's; ``out`` unchanged where none has one."""
    if not ACTIVE:
        return out
    if isinstance(out, tuple):
        return (
            type(out)(*(keep(o, *sources) for o in out))
            if hasattr(out, "_fields")
            else tuple(keep(o, *sources) for o in out)
        )
    for src in sources:
        fmt = format_of(src) if hasattr(src, "_node") and src.ndim == out.ndim else None
        if fmt is not None:
            if out._base is not None:  # a view of the layer's work: a tensor of its own to carry the format
                out = out.clone(memory_format=fmt)
            return mark(out, fmt)
    return out


def convert(t, fmt: memory_format, copy: bool):
    """``t`` laid out in ``fmt`` (``x.to(memory_format=...)``, ``x.contiguous(memory_format=...)``): ``t`` itself
    where it is in that layout already, else a clone in it (or, where ``copy`` is False and ``t`` is a new
    tensor of the caller's that owns its storage, ``t`` given the format)."""
    if fmt.rank is None:  # contiguous_format
        if format_of(t) is None and t.is_contiguous():
            return t
    elif format_of(t) is fmt:
        return t
    if copy or t._base is not None:
        return t.clone(memory_format=fmt)
    return mark(t, fmt)


def strides_in(shape: tuple[int, ...], fmt: memory_format | None) -> tuple[int, ...]:
    """PyTorch's strides of a tensor of ``shape`` laid out in ``fmt`` (None: row-major).

    >>> strides_in((2, 3, 4, 5), channels_last)
    (60, 1, 15, 3)
    """
    n = len(shape)
    order = [0, *range(2, n), 1] if fmt is not None and fmt.rank == n else list(range(n))
    strides, step = [0] * n, 1
    for d in reversed(order):
        strides[d] = step
        step *= shape[d] if fmt is not None else max(shape[d], 1)
    return tuple(strides)


def is_contiguous_in(shape: tuple[int, ...], fmt: memory_format) -> bool:
    """Whether a row-major tensor of ``shape`` is also laid out in ``fmt`` (size-1 dims ignored, as PyTorch).

    >>> is_contiguous_in((2, 1, 3, 3), channels_last), is_contiguous_in((2, 3, 4, 4), channels_last)
    (True, False)
    """
    if len(shape) != fmt.rank:
        return False
    # channels last: the channel dim (1) moves innermost; the others keep their order
    order = [0, *range(2, len(shape)), 1]
    strides, step = [0] * len(shape), 1
    for d in reversed(order):
        strides[d] = step
        step *= shape[d]
    row_major, step = [0] * len(shape), 1
    for d in reversed(range(len(shape))):
        row_major[d] = step
        step *= shape[d]
    return all(size <= 1 or a == b for a, b, size in zip(strides, row_major, shape))


EXPORTS = (
    Export("memory_format", value=memory_format),
    Export("contiguous_format", value=contiguous_format),
    Export("channels_last", value=channels_last),
    Export("channels_last_3d", value=channels_last_3d),
    Export("preserve_format", value=preserve_format),
)
