"""nn.utils.rnn (pad/pack/unpack) and recurrent modules over PackedSequence, against torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from optest import random_floats, to_torch

import vkml
from vkml.nn.utils import rnn as vrnn

LENGTHS = [3, 5, 1, 4]
SEQS = [random_floats((n, 2), seed=i) for i, n in enumerate(LENGTHS)]


def _pair(batch_first, padding_side="right", padding_value=0.0):
    t = torch.nn.utils.rnn.pad_sequence([to_torch(s) for s in SEQS], batch_first, padding_value, padding_side)
    v = vrnn.pad_sequence([vkml.tensor(s) for s in SEQS], batch_first, padding_value, padding_side)
    return t, v


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_pad_sequence_matches_torch(batch_first, padding_side):
    t, v = _pair(batch_first, padding_side, -2.0)
    np.testing.assert_array_equal(v.numpy(), t.numpy())


@pytest.mark.parametrize("batch_first", [False, True])
def test_pack_and_unpack_match_torch(batch_first):
    t, v = _pair(batch_first)
    tp = torch.nn.utils.rnn.pack_padded_sequence(t, LENGTHS, batch_first=batch_first, enforce_sorted=False)
    vp = vrnn.pack_padded_sequence(v, LENGTHS, batch_first=batch_first, enforce_sorted=False)
    np.testing.assert_array_equal(vp.batch_sizes.numpy(), tp.batch_sizes.numpy())
    np.testing.assert_array_equal(vp.sorted_indices.numpy(), tp.sorted_indices.numpy())
    np.testing.assert_array_equal(vp.data.numpy(), tp.data.numpy())
    tu, tl = torch.nn.utils.rnn.pad_packed_sequence(tp, batch_first=batch_first, padding_value=7.0, total_length=6)
    vu, vl = vrnn.pad_packed_sequence(vp, batch_first=batch_first, padding_value=7.0, total_length=6)
    np.testing.assert_array_equal(vu.numpy(), tu.numpy())
    assert vl.tolist() == tl.tolist() and vl.dtype is vkml.int64
    for a, b in zip(vrnn.unpack_sequence(vp), torch.nn.utils.rnn.unpack_sequence(tp), strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_pack_sequence_sorted_and_errors():
    ordered = sorted(SEQS, key=len, reverse=True)
    vp = vrnn.pack_sequence([vkml.tensor(s) for s in ordered])
    tp = torch.nn.utils.rnn.pack_sequence([to_torch(s) for s in ordered])
    assert vp.sorted_indices is None and tp.sorted_indices is None
    np.testing.assert_array_equal(vp.data.numpy(), tp.data.numpy())
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        vrnn.pack_sequence([vkml.tensor(s) for s in SEQS])
    _, v = _pair(False)
    with pytest.raises(RuntimeError, match="greater than 0"):
        vrnn.pack_padded_sequence(v, [3, 0, 1, 1], enforce_sorted=False)
    with pytest.raises(RuntimeError, match="batch_size"):
        vrnn.pack_padded_sequence(v, [3, 2])


def test_packing_passes_gradients_like_torch():
    t, v = _pair(True)
    t.requires_grad_(True)
    v.requires_grad_(True)
    w = random_floats((sum(LENGTHS), 2), seed=9)
    tp = torch.nn.utils.rnn.pack_padded_sequence(t, LENGTHS, batch_first=True, enforce_sorted=False)
    vp = vrnn.pack_padded_sequence(v, LENGTHS, batch_first=True, enforce_sorted=False)
    (tp.data * to_torch(w)).sum().backward()
    (vp.data * vkml.tensor(w)).sum().backward()
    np.testing.assert_array_equal(v.grad.numpy(), t.grad.numpy())


@pytest.mark.parametrize(
    "kind,kwargs",
    [("LSTM", {"num_layers": 2}), ("GRU", {"bidirectional": True}), ("RNN", {"batch_first": True})],
)
def test_recurrent_modules_take_packed_sequences_like_torch(kind, kwargs):
    torch.manual_seed(0)
    ref = getattr(torch.nn, kind)(2, 3, **kwargs)
    mine = getattr(vkml.nn, kind)(2, 3, **kwargs)
    mine.load_state_dict({k: v.detach().numpy() for k, v in ref.state_dict().items()})
    batch_first = kwargs.get("batch_first", False)
    t, v = _pair(batch_first)
    t.requires_grad_(True)
    v.requires_grad_(True)
    tp = torch.nn.utils.rnn.pack_padded_sequence(t, LENGTHS, batch_first=batch_first, enforce_sorted=False)
    vp = vrnn.pack_padded_sequence(v, LENGTHS, batch_first=batch_first, enforce_sorted=False)
    t_out, t_state = ref(tp)
    v_out, v_state = mine(vp)
    assert isinstance(v_out, vrnn.PackedSequence)
    np.testing.assert_allclose(v_out.data.numpy(), t_out.data.detach().numpy(), rtol=1e-5, atol=1e-6)
    t_h = t_state[0] if kind == "LSTM" else t_state
    v_h = v_state[0] if kind == "LSTM" else v_state
    np.testing.assert_allclose(v_h.numpy(), t_h.detach().numpy(), rtol=1e-5, atol=1e-6)
    (t_out.data.sum() + t_h.sum()).backward()
    (v_out.data.sum() + v_h.sum()).backward()
    np.testing.assert_allclose(v.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-5)
