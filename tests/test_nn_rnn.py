"""Recurrent layers against torch: a torch state_dict gives torch's outputs, states and gradients; Vulkan equals CPU."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from optest import assert_same_bits

import vkml
import vkml.nn as nn

CPU = vkml.device("cpu")
IN, HID, STEPS, BATCH = 3, 4, 3, 2


def _randn(rng, *shape) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def _flatten(value) -> list:
    if isinstance(value, (tuple, list)):
        return [v for item in value for v in _flatten(item)]
    return [value]


# name -> (module factory, input shape, state shapes or None (zeros), LSTM)
CASES = {
    "rnn_cell": (lambda m: m.RNNCell(IN, HID), (BATCH, IN), [(BATCH, HID)]),
    "rnn_cell_relu_unbatched": (lambda m: m.RNNCell(IN, HID, nonlinearity="relu"), (IN,), None),
    "lstm_cell": (lambda m: m.LSTMCell(IN, HID), (BATCH, IN), [(BATCH, HID), (BATCH, HID)]),
    "gru_cell": (lambda m: m.GRUCell(IN, HID, bias=False), (BATCH, IN), [(BATCH, HID)]),
    "rnn_relu_2_layers": (lambda m: m.RNN(IN, HID, 2, nonlinearity="relu"), (STEPS, BATCH, IN), [(2, BATCH, HID)]),
    "lstm_bidirectional_2_layers": (
        lambda m: m.LSTM(IN, HID, num_layers=2, bidirectional=True),
        (STEPS, BATCH, IN),
        [(4, BATCH, HID), (4, BATCH, HID)],
    ),
    "lstm_batch_first_no_state": (lambda m: m.LSTM(IN, HID, batch_first=True), (BATCH, STEPS, IN), None),
    "gru_bidirectional_batch_first": (
        lambda m: m.GRU(IN, HID, batch_first=True, bidirectional=True),
        (BATCH, STEPS, IN),
        [(2, BATCH, HID)],
    ),
    "gru_unbatched_no_bias": (lambda m: m.GRU(IN, HID, bias=False), (STEPS, IN), [(1, HID)]),
}


def _pair(name: str, device):
    make, in_shape, state_shapes = CASES[name]
    torch.manual_seed(0)
    pt = make(torch.nn)
    vk = make(nn)
    vk.load_state_dict(pt.state_dict())
    vk.to(device)
    g = np.random.default_rng(4)
    x = _randn(g, *in_shape)
    states = [_randn(g, *s) for s in state_shapes] if state_shapes else None

    def pack(convert):
        if states is None:
            return ()
        values = [convert(s) for s in states]
        return (tuple(values),) if len(values) == 2 else (values[0],)

    pt_outs = _flatten(pt(torch.from_numpy(x), *pack(torch.from_numpy)))
    vk_outs = _flatten(vk(vkml.tensor(x, device=device), *pack(lambda s: vkml.tensor(s, device=device))))
    ups = [_randn(g, *o.shape) for o in pt_outs]
    torch.autograd.backward(pt_outs, [torch.from_numpy(u) for u in ups])
    loss = None
    for out, up in zip(vk_outs, ups, strict=True):
        term = (out * vkml.tensor(up, device=device)).sum()
        loss = term if loss is None else loss + term
    loss.backward()
    vk_res = {f"out{i}": o.numpy() for i, o in enumerate(vk_outs)}
    vk_res |= {k: p.grad.numpy() for k, p in vk.named_parameters()}
    pt_res = {f"out{i}": o.detach().numpy() for i, o in enumerate(pt_outs)}
    pt_res |= {k: p.grad.numpy() for k, p in pt.named_parameters()}
    return vk_res, pt_res


@pytest.mark.parametrize("name", sorted(CASES))
def test_rnn_modules_match_torch(name):
    vk, pt = _pair(name, CPU)
    assert vk.keys() == pt.keys()
    for what in pt:
        np.testing.assert_allclose(vk[what], pt[what], rtol=1e-5, atol=1e-6, err_msg=f"{name}: {what}")


@pytest.mark.parametrize("name", ["lstm_cell", "gru_bidirectional_batch_first"])
def test_rnn_vulkan_equals_cpu(name, gpu):
    cpu, _ = _pair(name, CPU)
    on_gpu, _ = _pair(name, gpu)
    for what in cpu:
        assert_same_bits(on_gpu[what], cpu[what], f"{name}: {what} on {gpu.name}")


@pytest.mark.parametrize("name", sorted(CASES))
def test_parameters_named_shaped_and_initialised_as_torch(name):
    make = CASES[name][0]
    pt = make(torch.nn)
    vkml.manual_seed(0)
    vk = make(nn)
    assert [(k, tuple(v.shape)) for k, v in vk.state_dict().items()] == [
        (k, tuple(v.shape)) for k, v in pt.state_dict().items()
    ]
    assert repr(vk) == repr(pt)
    bound = 1 / np.sqrt(HID)
    values = np.concatenate([p.numpy().ravel() for p in vk.parameters()])
    assert np.abs(values).max() <= bound and np.abs(values).max() > 0.8 * bound


@pytest.mark.parametrize(
    "make",
    [
        lambda m: m.LSTM(IN, HID, 2, False, True),
        lambda m: m.GRU(IN, HID, 1, False, False, 0.0, True),
        lambda m: m.RNN(IN, HID, 1, "relu", False),
    ],
)
def test_positional_arguments_in_torchs_order(make):
    """torch's positional order: num_layers, bias, batch_first, dropout, bidirectional (RNN: nonlinearity first)."""
    pt, vk = make(torch.nn), make(nn)
    assert list(vk.state_dict()) == list(pt.state_dict())
    assert repr(vk) == repr(pt)


def test_dropout_between_layers_only_in_training():
    vkml.manual_seed(1)
    lstm = nn.LSTM(IN, HID, num_layers=2, dropout=0.5)
    x = vkml.ones(STEPS, BATCH, IN)
    a, b = lstm(x)[0].numpy(), lstm(x)[0].numpy()
    assert not np.array_equal(a, b)
    lstm.eval()
    assert_same_bits(lstm(x)[0].numpy(), lstm(x)[0].numpy(), "eval")


@pytest.mark.parametrize(
    "make, error, words",
    [
        (lambda: nn.RNN(IN, HID, nonlinearity="sigmoid"), ValueError, "nonlinearity"),
        (lambda: nn.LSTM(IN, HID, dropout=1.5), ValueError, "dropout"),
        (lambda: nn.GRU(IN, HID)(vkml.ones(STEPS, BATCH, IN + 1)), RuntimeError, "input_size"),
        (lambda: nn.GRU(IN, HID)(vkml.ones(IN)), ValueError, "2D or 3D"),
        (lambda: nn.RNN(IN, HID)(vkml.ones(STEPS, BATCH, IN), vkml.zeros(2, BATCH, HID)), RuntimeError, "hidden size"),
        (lambda: nn.LSTMCell(IN, HID)(vkml.ones(BATCH, IN + 1)), RuntimeError, "input_size"),
    ],
)
def test_rnn_errors(make, error, words):
    with pytest.raises(error, match=words):
        make()
