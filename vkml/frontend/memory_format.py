"""PyTorch's memory formats: ``vkml.contiguous_format``, ``channels_last``, ``channels_last_3d``,
``preserve_format`` and their type ``vkml.memory_format``.

vkml keeps every tensor's elements in row-major order of its shape and lets its kernels choose how
they walk them, so a memory format is a request vkml checks and then needs no copy for: ``x.to(
memory_format=vkml.channels_last)``, ``x.contiguous(memory_format=...)``, ``x.clone(memory_format=
...)`` and ``model.to(memory_format=...)`` give the same values, as PyTorch's do, and raise PyTorch's
errors for a wrong rank or a value that is no memory format. ``x.is_contiguous(memory_format=
vkml.channels_last)`` answers for vkml's row-major layout: True only where the two orders coincide
(one channel, or one position), where PyTorch answers True after a conversion (docs/interop.md).
"""

from __future__ import annotations

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
