"""``torch.nn.utils.rnn``: batches of sequences of different lengths, padded or packed.

A ``PackedSequence`` holds the time steps of a batch one after the other, each step only for
the sequences still running (``batch_sizes[t]`` of them, longest first), as PyTorch's. The
recurrent modules (``nn.RNN``, ``nn.LSTM``, ``nn.GRU``) take one and return one, and
their final states are each sequence's state after its own last element.

Lengths are host data (a list, or an int64 CPU tensor, as PyTorch requires); packing and
unpacking are one ``index_select`` each, so gradients flow through them.

>>> import vkml
>>> from vkml.nn.utils.rnn import pad_sequence, pack_padded_sequence, pad_packed_sequence
>>> batch = pad_sequence([tensor([1.0, 2.0, 3.0]), tensor([4.0])], batch_first=True)
>>> batch.tolist()
[[1.0, 2.0, 3.0], [4.0, 0.0, 0.0]]
>>> packed = pack_padded_sequence(batch, [3, 1], batch_first=True)
>>> packed.data.tolist(), packed.batch_sizes.tolist()
([1.0, 4.0, 2.0, 3.0], [2, 1, 1])
>>> padded, lengths = pad_packed_sequence(packed, batch_first=True)
>>> lengths.tolist()
[3, 1]
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...frontend.creation import full, tensor
from ...frontend.operators import cat
from ...frontend.shape import stack
from ...ir import types as T
from ...tensor import Tensor


class PackedSequence(NamedTuple):
    """``data`` (the running sequences' elements, time step after time step), ``batch_sizes`` (how many
    sequences run at each step, an int64 CPU tensor), and the permutations between the caller's
    batch order and the longest-first order (``None`` when the batch came sorted)."""

    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None = None
    unsorted_indices: Tensor | None = None

    def to(self, *args, **kwargs) -> PackedSequence:
        """``data`` moved or cast as ``Tensor.to`` does (the indices follow it to its device); ``self`` when
        nothing changes, as PyTorch's."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        moved = [None if i is None else i.to(data.device) for i in (self.sorted_indices, self.unsorted_indices)]
        return self._replace(data=data, sorted_indices=moved[0], unsorted_indices=moved[1])

    def cpu(self) -> PackedSequence:
        return self.to("cpu")

    def cuda(self, device=None) -> PackedSequence:
        return self.to("cuda" if device is None else device)

    # PyTorch's casts: ``self`` when ``data`` already has the dtype
    def double(self) -> PackedSequence:
        return self.to(dtype=T.float64)

    def float(self) -> PackedSequence:
        return self.to(dtype=T.float32)

    def half(self) -> PackedSequence:
        return self.to(dtype=T.float16)

    def long(self) -> PackedSequence:
        return self.to(dtype=T.int64)

    def int(self) -> PackedSequence:
        return self.to(dtype=T.int32)

    def short(self) -> PackedSequence:
        return self.to(dtype=T.int16)

    def char(self) -> PackedSequence:
        return self.to(dtype=T.int8)

    def byte(self) -> PackedSequence:
        return self.to(dtype=T.uint8)

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        return False


def _host_lengths(op: str, lengths) -> np.ndarray:
    if isinstance(lengths, Tensor):
        if lengths.device.kind != "cpu":
            raise RuntimeError(
                f"{op}: 'lengths' argument should be a 1D CPU int64 tensor, but got 1D {lengths.device.name} "
                f"{lengths.dtype.name} tensor"
            )
        values = lengths.numpy()
    else:
        values = np.asarray(lengths)
    if values.ndim != 1:
        raise RuntimeError(
            f"{op}: 'lengths' argument should be a 1D CPU int64 tensor, but got {values.ndim}D cpu Long tensor"
        )
    if values.dtype.kind not in "iu":
        if values.size and not np.all(np.floor(values) == values):
            raise RuntimeError(f"{op}: 'lengths' must be integers, got {values.tolist()}")
    return values.astype(np.int64)


def _index(values, device) -> Tensor:
    return tensor(np.asarray(values, dtype=np.int64), device=device)


def _invert(permutation: np.ndarray) -> np.ndarray:
    inverse = np.empty_like(permutation)
    inverse[permutation] = np.arange(len(permutation))
    return inverse


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0, padding_side: str = "right"):
    """Stack tensors of shape (L_i, *) into (max L, B, *) (``batch_first``: (B, max L, *)), padded with
    ``padding_value`` on ``padding_side`` ("right" or "left").

    >>> import vkml
    >>> pad_sequence([vkml.ones(2), vkml.ones(1)], padding_value=-1.0).tolist()
    [[1.0, 1.0], [1.0, -1.0]]
    """
    if isinstance(sequences, Tensor):
        sequences = list(sequences.unbind(0))
    if not hasattr(sequences, "__iter__"):
        raise RuntimeError(
            f"pad_sequence: Expected iterable for input sequences, but got arg of type: {type(sequences)}"
        )
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("pad_sequence: received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    trailing = tuple(sequences[0].shape[1:])
    for i, s in enumerate(sequences):
        if not isinstance(s, Tensor):
            raise TypeError(f"pad_sequence: expected a sequence of Tensors, got {type(s).__name__} at {i}")
        if s.ndim == 0 or tuple(s.shape[1:]) != trailing:
            raise RuntimeError(
                f"pad_sequence: every sequence must have the trailing shape {trailing}, got {tuple(s.shape)} at {i}"
            )
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        missing = longest - s.shape[0]
        if missing:
            filler = full((missing, *trailing), padding_value, dtype=s.dtype, device=s.device)
            s = cat([s, filler] if padding_side == "right" else [filler, s], 0)
        padded.append(s)
    return stack(padded, 0 if batch_first else 1)


def pack_padded_sequence(input, lengths, batch_first: bool = False, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch (T, B, *) (``batch_first``: (B, T, *)) whose sequences have ``lengths``.

    ``enforce_sorted``: the lengths must be decreasing (else sequences are reordered, and the
    permutation kept in the result).
    """
    if input.numel() == 0:  # PyTorch's first check
        raise RuntimeError("pack_padded_sequence: Cannot pack empty tensors.")
    values = _host_lengths("pack_padded_sequence", lengths)
    batch = input.shape[0] if batch_first else input.shape[1] if input.ndim > 1 else 0
    if len(values) != batch:
        raise RuntimeError(
            f"pack_padded_sequence: Expected `len(lengths)` to be equal to batch_size, but got {len(values)} "
            f"(batch_size={batch})"
        )
    if enforce_sorted:
        if np.any(values[1:] > values[:-1]):
            raise RuntimeError(
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can pass "
                "`enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this requirement "
                "if you do not need ONNX exportability."
            )
        order = None
    else:
        order = np.argsort(-values, kind="stable")
    if values.size and values.min() <= 0:
        raise RuntimeError(
            "Length of all samples has to be greater than 0, but found an element in 'lengths' that is <= 0"
        )
    steps = input.shape[1] if batch_first else input.shape[0]
    if values.size and values.max() > steps:
        raise RuntimeError(
            f"pack_padded_sequence: a length of {values.max()} is longer than the padded sequences ({steps} steps)"
        )
    sorted_lengths = values if order is None else values[order]
    time_major = input.transpose(0, 1) if batch_first else input
    batch_sizes = [int(np.count_nonzero(sorted_lengths > t)) for t in range(int(sorted_lengths[0]) if batch else 0)]
    sizes = tensor(np.asarray(batch_sizes, dtype=np.int64))
    if order is None:
        return PackedSequence(pack_time_major(time_major, sizes, None), sizes, None, None)
    sorted_indices = _index(order, input.device)
    return PackedSequence(
        pack_time_major(time_major, sizes, sorted_indices), sizes, sorted_indices, _index(_invert(order), input.device)
    )


def pack_time_major(time_major, batch_sizes, sorted_indices):
    """The ``data`` of a PackedSequence with ``batch_sizes`` and ``sorted_indices`` from a (T, B, *) batch
    in the caller's order (the recurrent modules repack their outputs with it)."""
    steps, batch = time_major.shape[0], time_major.shape[1]
    position = np.arange(batch) if sorted_indices is None else sorted_indices.numpy()
    rows = []  # flat (t * B + b) positions of the running sequences, step by step
    for t, running in enumerate(batch_sizes.numpy().tolist()):
        rows.extend(t * batch + position[:running])
    flat = time_major.reshape(steps * batch, *time_major.shape[2:])
    return flat.index_select(0, _index(rows, time_major.device))


def pad_packed_sequence(
    sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0, total_length=None
):
    """The padded batch and the lengths (an int64 CPU tensor) of a ``PackedSequence``, in the caller's
    batch order; ``total_length`` pads to that many steps."""
    data, sizes = sequence.data, sequence.batch_sizes.numpy().astype(np.int64)
    batch = int(sizes[0]) if sizes.size else 0
    steps = len(sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError(
                f"Expected total_length to be at least the length of the longest sequence in input, but got "
                f"total_length={total_length} and max sequence length being {steps}"
            )
        steps = total_length
    lengths = np.array([np.count_nonzero(sizes > b) for b in range(batch)], dtype=np.int64)
    # Each padded position reads its row of data, or the padding row appended after the data.
    padding_row = data.shape[0]
    source = np.full((steps, batch), padding_row, dtype=np.int64)
    offset = 0
    for t, running in enumerate(sizes):
        source[t, :running] = offset + np.arange(running)
        offset += running
    unsorted = None if sequence.unsorted_indices is None else sequence.unsorted_indices.numpy()
    if unsorted is not None:
        source = source[:, unsorted]
        lengths = lengths[unsorted]
    filler = full((1, *data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
    rows = cat([data, filler], 0).index_select(0, _index(source.reshape(-1), data.device))
    padded = rows.reshape(steps, batch, *data.shape[1:])
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, tensor(lengths)


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of tensors of shape (L_i, *) (``pad_sequence`` then ``pack_padded_sequence``)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences, lengths, batch_first: bool = False) -> list:
    """The list of sequences ``pad_sequence`` stacked: each trimmed to its length."""
    values = _host_lengths("unpad_sequence", lengths)
    batch_major = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    return [batch_major[i, : int(n)] for i, n in enumerate(values)]


def unpack_sequence(packed_sequences: PackedSequence) -> list:
    """The list of sequences a ``PackedSequence`` holds, in the caller's order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


__all__ = [
    "PackedSequence",
    "pad_sequence",
    "pack_padded_sequence",
    "pad_packed_sequence",
    "pack_sequence",
    "unpad_sequence",
    "unpack_sequence",
]
