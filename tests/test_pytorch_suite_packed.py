"""PyTorch's test/nn/test_packed_sequence.py, run on torch and on vkml side by side.

Each scenario follows one of its tests: PackedSequence's dtype casts and ``.to``/``.cpu``,
pack_padded_sequence with enforce_sorted (sorted and shuffled lengths, batch_first, its data,
batch_sizes and indices, its gradient through pad_packed_sequence), pad_packed_sequence's
total_length and padding_value, pack_sequence, pad_sequence (batch_first, padding_value,
padding_side, a tensor of sequences), unpad_sequence, unpack_sequence and PyTorch's errors. Inputs
come from numpy with fixed seeds (the PyTorch test's random lengths and values made repeatable);
a scenario returns what the test asserts on, and vkml must return, raise and warn what torch does
(tests/pytorch_suite.py).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from pytorch_suite import check, known_params

import vkml

SC = {}  # the default suite's
SLOW = {}  # the exhaustive run's

CASTS = ("double", "float", "long", "int", "short", "char", "byte")
CAST_DTYPES = {
    "double": "float64",
    "float": "float32",
    "long": "int64",
    "int": "int32",
    "short": "int16",
    "char": "int8",
    "byte": "uint8",
}


def sc(f):
    SC[f.__name__] = f
    return f


def slow(f):
    SLOW[f.__name__] = f
    return f


def rnn(m):
    return m.nn.utils.rnn


def ordered_sequences(m, dtype: str, seed: int, batch: int = 5, max_length: int = 6) -> list:
    """The test's _ordered_sequence: ``batch`` random sequences, longest first."""
    rng = np.random.default_rng(seed)
    lengths = sorted(rng.integers(1, max_length + 1, batch), reverse=True)
    low, high = (0, 256) if dtype == "uint8" else (-128, 128)
    return [m.tensor(rng.integers(low, high, n), dtype=getattr(m, dtype)) for n in lengths]


def packed_fields(packed) -> tuple:
    return packed.data, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices


def type_cast(input_dtype: str, cast: str, enforce_sorted: bool):
    def f(m):
        seqs = ordered_sequences(m, input_dtype, 1)
        padded = rnn(m).pad_sequence(seqs)
        packed = rnn(m).pack_padded_sequence(padded, [len(s) for s in seqs], enforce_sorted=enforce_sorted)
        cast_packed = getattr(packed, cast)()
        unpacked, lengths = rnn(m).pad_packed_sequence(cast_packed)
        return unpacked, lengths, packed_fields(cast_packed)

    return f


for _input, _cast in itertools.product(CAST_DTYPES.values(), CASTS):
    for _enforce in (True, False):
        _table = SC if (_input, _enforce) == ("int32", True) and _cast in ("double", "byte") else SLOW
        _table[f"type_cast_{_input}_{_cast}_enforce{_enforce}"] = type_cast(_input, _cast, _enforce)


@sc
def wrong_order(m):
    b_a = rnn(m).pad_sequence([m.ones(22, 3), m.ones(25, 3)])
    return rnn(m).pack_padded_sequence(b_a, [22, 25], enforce_sorted=True)


@sc
def pad_sequence_of_tensor(m):
    from_tuple = rnn(m).pad_sequence((m.tensor([[7, 6]]), m.tensor([[-7, -1]])))
    from_tensor = rnn(m).pad_sequence(m.tensor([[[7, 6]], [[-7, -1]]]))
    return from_tuple, from_tensor


@sc
def pad_sequence_not_iterable(m):
    return rnn(m).pad_sequence(5)


def total_length(batch_first: bool, total: int | None):
    def f(m):
        seqs = ordered_sequences(m, "float32", 2)
        lengths = [len(s) for s in seqs]
        packed = rnn(m).pack_padded_sequence(rnn(m).pad_sequence(seqs), lengths)
        return rnn(m).pad_packed_sequence(packed, batch_first=batch_first, total_length=total)

    return f


for _batch_first in (True, False):
    for _delta in (-99, -1, 0, 1, 8, None):  # -99: total_length -1; -1: one short of the longest
        _name = f"total_length_{'batch_first' if _batch_first else 'seq_first'}_{_delta}"
        _total = None if _delta is None else (-1 if _delta == -99 else 6 + _delta)
        _table = SC if _delta in (-1, 8) else SLOW
        _table[_name] = total_length(_batch_first, _total)


@sc
def total_length_zero(m):
    packed = rnn(m).pack_sequence([m.ones(3), m.ones(2)])
    return rnn(m).pad_packed_sequence(packed, total_length=0)


@sc
def pad_packed_padding_value(m):
    packed = rnn(m).pack_sequence([m.tensor([1.0, 2.0]), m.tensor([3.0, 4.0, 5.0])], enforce_sorted=False)
    return (
        rnn(m).pad_packed_sequence(packed, batch_first=True, padding_value=-1.5, total_length=4),
        rnn(m).pad_packed_sequence(packed, padding_value=7),
    )


@sc
def packed_to_and_cpu(m):
    out = []
    for enforce_sorted in (True, False):
        seqs = ordered_sequences(m, "int32", 3)
        a = (
            rnn(m)
            .pack_padded_sequence(rnn(m).pad_sequence(seqs), [len(s) for s in seqs], enforce_sorted=enforce_sorted)
            .cpu()
        )
        out += [a is a.to("cpu"), a is a.cpu(), a is a.to("cpu", dtype=m.int32), a is a.to(dtype=m.int32)]
        out += [packed_fields(a.long()), packed_fields(a.to(m.int64)), a.is_cuda]
    return out


@sc
def pad_sequence_small(m):
    a, b, c = m.tensor([1, 2, 3]), m.tensor([4, 5]), m.tensor([6])
    return (
        rnn(m).pad_sequence([b, a, c], True),
        rnn(m).pad_sequence([b, a, c]),
        rnn(m).pad_sequence([b, a, c], True, 1),
        rnn(m).pad_sequence([a, b, c], True),
    )


@sc
def pad_sequence_padding_side(m):
    a, b, c = m.tensor([1, 2, 3]), m.tensor([4, 5]), m.tensor([6])
    out = []
    for batch_first in (True, False):
        for side in ("left", "right"):
            out.append(rnn(m).pad_sequence([b, a, c], batch_first, -1, side))
    return out


@sc
def pad_sequence_bad_padding_side(m):
    return rnn(m).pad_sequence([m.ones(2)], padding_side="middle")


def _square_sequences(m, num_dim: int, seed: int, descending: bool = False, shuffle: bool = True) -> list:
    rng = np.random.default_rng(seed)
    lengths = [i * i for i in range(1, 6)]
    if descending:
        lengths = lengths[::-1]
    sequences = [m.tensor(rng.random((n, 3, *([2] * num_dim))).astype(np.float32)) for n in lengths]
    order = rng.permutation(len(sequences)) if shuffle else range(len(sequences))
    return [sequences[i] for i in order]


def pad_sequence_dims(num_dim: int):
    def f(m):
        seqs = _square_sequences(m, num_dim, num_dim)
        return rnn(m).pad_sequence(seqs, True), rnn(m).pad_sequence(seqs)

    return f


def unpad_sequence_dims(num_dim: int):
    def f(m):
        seqs = _square_sequences(m, num_dim, 10 + num_dim)
        lengths = m.as_tensor([s.size(0) for s in seqs])
        out = []
        for batch_first in (True, False):
            padded = rnn(m).pad_sequence(seqs, batch_first=batch_first)
            out.append(rnn(m).unpad_sequence(padded, lengths, batch_first=batch_first))
        return out

    return f


def unpack_sequence_dims(num_dim: int):
    def f(m):
        seqs = _square_sequences(m, num_dim, 20 + num_dim)
        return rnn(m).unpack_sequence(rnn(m).pack_sequence(seqs, enforce_sorted=False))

    return f


def pack_sequence_compat(num_dim: int):
    """test_pack_sequence's _compatibility_test for sorted and shuffled sequences."""

    def f(m):
        out = []
        sorted_seqs = _square_sequences(m, num_dim, 30 + num_dim, descending=True, shuffle=False)
        shuffled = _square_sequences(m, num_dim, 30 + num_dim, descending=True)
        for batch_first in (True, False):
            cases = [(sorted_seqs, True), (sorted_seqs, False), (shuffled, False)]
            for seqs, enforce_sorted in cases:
                lengths = [s.size(0) for s in seqs]
                padded = rnn(m).pad_sequence(seqs, batch_first)
                packed = rnn(m).pack_sequence(seqs, enforce_sorted)
                unpacked = rnn(m).pad_packed_sequence(packed, batch_first)
                pack_padded = rnn(m).pack_padded_sequence(padded, lengths, batch_first, enforce_sorted)
                out += [padded, unpacked, packed_fields(packed), packed_fields(pack_padded)]
        return out

    return f


for _num_dim in (0, 1, 2, 3):
    _table = SC if _num_dim == 1 else SLOW
    _table[f"pad_sequence_dims_{_num_dim}"] = pad_sequence_dims(_num_dim)
    _table[f"unpack_sequence_dims_{_num_dim}"] = unpack_sequence_dims(_num_dim)
    SLOW[f"unpad_sequence_dims_{_num_dim}"] = unpad_sequence_dims(_num_dim)
    SLOW[f"pack_sequence_compat_{_num_dim}"] = pack_sequence_compat(_num_dim)


@sc
def unpad_sequence_small(m):
    seqs = [m.tensor([1, 2, 3]), m.tensor([4, 5]), m.tensor([6])]
    lengths = m.as_tensor([v.size(0) for v in seqs])
    return [
        rnn(m).unpad_sequence(rnn(m).pad_sequence(seqs, batch_first=bf), lengths, batch_first=bf)
        for bf in (True, False)
    ]


@sc
def pack_sequence_small(m):
    a, b, c = m.tensor([1, 2, 3]), m.tensor([4, 5]), m.tensor([6])
    return (
        packed_fields(rnn(m).pack_sequence([a, b, c], enforce_sorted=False)),
        packed_fields(rnn(m).pack_sequence([b, c, a], enforce_sorted=False)),
        packed_fields(rnn(m).pack_sequence([a, b, c], enforce_sorted=True)),
        rnn(m).unpack_sequence(rnn(m).pack_sequence([a, b, c], enforce_sorted=False)),
    )


@sc
def pack_sequence_unsorted_enforced(m):
    a, b, c = m.tensor([1, 2, 3]), m.tensor([4, 5]), m.tensor([6])
    return rnn(m).pack_sequence([b, c, a], enforce_sorted=True)


def pack_padded(sorted_lengths: list, shuffle: bool, batch_first: bool):
    """test_pack_padded_sequence: data, batch sizes, indices, the inverse and the gradient."""

    def f(m):
        max_length = sorted_lengths[0]
        columns = []
        for i, n in enumerate(sorted_lengths, 1):
            column = i * 100 + m.arange(1.0, 5 * n + 1).view(n, 1, 5)
            columns.append(m.cat([column, m.zeros(max_length - n, 1, 5)]))
        padded = m.cat(columns, 1)
        lengths = sorted_lengths
        if shuffle:
            permutation = m.tensor(list(np.random.default_rng(len(sorted_lengths)).permutation(len(sorted_lengths))))
            padded = padded.index_select(1, permutation)
            lengths = m.tensor(sorted_lengths).index_select(0, permutation)
        padded.requires_grad_()
        src = padded.transpose(0, 1) if batch_first else padded
        packed = rnn(m).pack_padded_sequence(src, lengths, batch_first=batch_first, enforce_sorted=not shuffle)
        unpacked, unpacked_len = rnn(m).pad_packed_sequence(packed, batch_first=batch_first)
        grad_output = m.tensor(np.random.default_rng(5).standard_normal(tuple(unpacked.shape)).astype(np.float32))
        unpacked.backward(grad_output)
        return packed_fields(packed), unpacked, unpacked_len, padded.grad

    return f


for _i, ((_lengths, _shuffle), _bf) in enumerate(
    itertools.product(
        [([10, 8, 4, 2, 2, 2, 1], False), ([11, 10, 8, 6, 4, 3, 1], False), ([11, 10, 8, 6, 4, 3, 1], True)],
        (True, False),
    )
):
    _table = SLOW
    _table[f"pack_padded_{_i}_{'shuffled' if _shuffle else 'sorted'}_batch_first{_bf}"] = pack_padded(
        _lengths, _shuffle, _bf
    )


@sc
def pack_padded_unsorted_enforced(m):
    return rnn(m).pack_padded_sequence(m.zeros(3, 3), [1, 3, 2])


@sc
def pack_padded_empty(m):
    return rnn(m).pack_padded_sequence(m.zeros(0, 0), [])


@sc
def pack_padded_empty_batch_first(m):
    return rnn(m).pack_padded_sequence(m.zeros([0, 1, 10]), m.zeros([11, 14, 14, 2]), True)


@sc
def pack_padded_zero_length(m):
    return rnn(m).pack_padded_sequence(m.zeros(3, 2), [3, 0], enforce_sorted=False)


@sc
def pack_padded_lengths_on_wrong_count(m):
    return rnn(m).pack_padded_sequence(m.zeros(3, 2), [3, 2, 1])


@sc
def pack_padded_lengths_tensor_2d(m):
    return rnn(m).pack_padded_sequence(m.zeros(3, 2), m.tensor([[3, 2]]))


@sc
def packed_sequence_fields(m):
    packed = rnn(m).pack_sequence([m.tensor([1.0, 2.0]), m.tensor([3.0, 4.0, 5.0])], enforce_sorted=False)
    return (
        packed.data,
        packed.batch_sizes,
        packed.batch_sizes.dtype,
        packed.sorted_indices,
        packed.unsorted_indices,
        packed.is_pinned(),
        len(packed),
        packed[1],
        type(packed).__name__,
        packed.data.requires_grad,
    )


@slow
def packed_sequence_through_lstm(m):
    m.manual_seed(0)
    lstm = m.nn.LSTM(2, 3)
    rng = np.random.default_rng(6)
    weights = {
        k: m.tensor(rng.standard_normal(tuple(v.shape)).astype(np.float32)) for k, v in lstm.state_dict().items()
    }
    lstm.load_state_dict(weights)
    seqs = [m.tensor(rng.standard_normal((n, 2)).astype(np.float32)) for n in (2, 4, 3)]
    packed = rnn(m).pack_sequence(seqs, enforce_sorted=False)
    out, (h, c) = lstm(packed)
    padded, lengths = rnn(m).pad_packed_sequence(out, batch_first=True)
    return padded, lengths, h, c, out.batch_sizes, out.sorted_indices


# Divergences not fixed yet: strict xfails, so that a fix shows up as an XPASS to remove from here.
KNOWN: dict[str, str] = {}


@pytest.mark.parametrize("name", known_params(SC, KNOWN))
def test_packed_scenario_matches_torch(name: str) -> None:
    check(SC[name])


@pytest.mark.exhaustive
@pytest.mark.parametrize("name", known_params(SLOW, KNOWN))
def test_packed_scenario_with_more_cases_matches_torch(name: str) -> None:
    check(SLOW[name])


def test_packed_sequence_on_vulkan(gpu) -> None:
    """A sample on the Vulkan device: pack_padded_sequence of shuffled lengths, unpacked, with its gradient."""

    def scenario(m):
        device = {"device": gpu} if m is vkml else {}
        padded = m.tensor(np.arange(24.0, dtype=np.float32).reshape(4, 3, 2), requires_grad=True, **device)
        packed = rnn(m).pack_padded_sequence(padded, [2, 4, 3], enforce_sorted=False)
        unpacked, lengths = rnn(m).pad_packed_sequence(packed, batch_first=True, total_length=5)
        (unpacked * unpacked).sum().backward()
        return packed_fields(packed), unpacked, lengths, padded.grad

    check(scenario)
