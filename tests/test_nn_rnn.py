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


# name -> (module factory, LSTM): the sequence layers whose steps run in vkml/nn/rnn.py's _Sequence
SEQUENCES = {
    "rnn_tanh": (lambda m: m.RNN(IN, HID, 2), False),
    "rnn_relu_reverse": (lambda m: m.RNN(IN, HID, nonlinearity="relu", bidirectional=True), False),
    "lstm": (lambda m: m.LSTM(IN, HID), True),
    "lstm_bidirectional": (lambda m: m.LSTM(IN, HID, bidirectional=True), True),
    "gru_2_layers": (lambda m: m.GRU(IN, HID, 2), False),
}


def _input_and_state_gradients(name: str, lib, device=None, second_order: bool = False):
    """Gradients of a loss of every output with respect to the input and the initial states, and
    with ``second_order`` the gradient of a penalty on the input's gradient with respect to W_hh."""
    make, lstm = SEQUENCES[name]
    torch.manual_seed(0)
    pt = make(torch.nn)
    m = pt if lib is torch else make(nn)
    if lib is not torch:
        m.load_state_dict(pt.state_dict())
        m.to(device)
    g = np.random.default_rng(7)
    states = (2 if m.bidirectional or m.num_layers == 2 else 1, BATCH, HID)
    arrays = [_randn(g, STEPS, BATCH, IN), _randn(g, *states), _randn(g, *states)]
    if lib is torch:
        x, h0, c0 = (torch.tensor(a, requires_grad=True) for a in arrays)
    else:
        x, h0, c0 = (vkml.tensor(a, device=device, requires_grad=True) for a in arrays)
    out, state = m(x, (h0, c0) if lstm else h0)
    finals = list(state) if lstm else [state]
    loss = (out * out).sum() + sum((s * s * 0.5).sum() for s in finals)
    inputs = [x, h0, c0] if lstm else [x, h0]
    grads = lib.autograd.grad(loss, inputs, create_graph=second_order)
    numpy = (lambda t: t.detach().numpy()) if lib is torch else (lambda t: t.numpy())
    if not second_order:
        return [numpy(v) for v in grads]
    (grads[0] * grads[0]).sum().backward()
    return [numpy(v) for v in grads] + [numpy(m.weight_hh_l0.grad)]


@pytest.mark.parametrize("name", sorted(set(SEQUENCES) - {"lstm"}))
def test_input_state_and_second_order_gradients_match_torch(name):
    second = name == "lstm_bidirectional"  # create_graph differentiates the steps' ops: one case is enough
    got = _input_and_state_gradients(name, vkml, CPU, second)
    want = _input_and_state_gradients(name, torch, None, second)
    for k, (a, b) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=f"{name}: gradient {k}")


def test_sequence_gradients_vulkan_equals_cpu(gpu):
    # GRU's fused steps run on Vulkan in test_rnn_vulkan_equals_cpu; here LSTM's, with the states' gradients
    cpu = _input_and_state_gradients("lstm", vkml, CPU)
    on_gpu = _input_and_state_gradients("lstm", vkml, gpu)
    for k, (a, b) in enumerate(zip(on_gpu, cpu, strict=True)):
        assert_same_bits(a, b, f"gradient {k} on {gpu.name}")


# Kernels per time step, forward and forward + backward (docs/nn.md): one matmul and one
# elementwise kernel per step and direction (RNN: the matmul alone, its epilogue applies tanh).
STEP_KERNELS = {"RNN": (1, 3), "LSTM": (2, 4), "GRU": (2, 4)}


@pytest.mark.parametrize("name", sorted(STEP_KERNELS))
def test_kernels_per_time_step(name):
    def dispatches(steps: int, backward: bool) -> int:
        vkml.manual_seed(0)
        m = getattr(nn, name)(IN, HID, device=CPU)  # the plan's kernels; a device may split a matmul
        x = vkml.randn(steps, BATCH, IN, device=CPU, requires_grad=backward)
        vkml.realize(x, *m.parameters())
        vkml.debug.reset_counters()
        out = m(x)[0]
        if backward:
            (out * out).sum().backward()
            vkml.realize(x.grad, *(p.grad for p in m.parameters()))
        else:
            vkml.realize(out)
        return vkml.debug.counters()["dispatches"]

    for backward, bound in zip((False, True), STEP_KERNELS[name]):
        per_step = dispatches(3, backward) - dispatches(2, backward)
        assert per_step <= bound, f"{name} {'forward + backward' if backward else 'forward'}: {per_step} per step"


# GRU's case takes as long as LSTM's (about 10 s on CI's 2 cores): it runs with `make test-all`
@pytest.mark.parametrize("name", ["LSTM", pytest.param("GRU", marks=pytest.mark.stress)])
def test_a_recurrent_training_loop_compiles_nothing_after_its_first_iteration(name, monkeypatch):
    """The kernels of a training step do not depend on the sequence's length (each time step's
    backward kernel read step t's rows of the output's gradient, GRU's of its input projection,
    through views whose offsets, past the kernel's parameter budget, were baked in: a new kernel
    per step), and the second iteration of a fixed shape lowers, plans and compiles nothing."""
    from vkml.ir.interp import compiled as interp_compiled
    from vkml.schedule import scheduler as schedule

    programs = []
    compile_program = interp_compiled._compile
    monkeypatch.setattr(
        interp_compiled, "_compile", lambda kernel, dead: programs.append(kernel) or compile_program(kernel, dead)
    )
    vkml.manual_seed(0)
    rnn, head = getattr(nn, name)(IN, HID, batch_first=True, device=CPU), nn.Linear(HID, 2, device=CPU)
    optimizer = vkml.optim.SGD([*rnn.parameters(), *head.parameters()], lr=0.1)
    target = vkml.zeros(BATCH, 2, device=CPU)
    vkml.realize(target, *optimizer.param_groups[0]["params"])  # else the first graph holds their initialisation

    def iteration(steps: int) -> tuple[int, int, int]:
        """Templates lowered, plans made and CPU programs compiled by one training iteration."""
        x = vkml.randn(BATCH, steps, IN, device=CPU)
        vkml.realize(x)
        templates, plans, compiled = len(schedule._templates), vkml.debug.counters()["plans"], len(programs)
        loss = nn.functional.mse_loss(head(rnn(x)[0][:, -1]), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        loss.item()
        return (
            len(schedule._templates) - templates,
            vkml.debug.counters()["plans"] - plans,
            len(programs) - compiled,
        )

    schedule.clear_template_cache()
    iteration(2)
    assert iteration(2) == (0, 0, 0)
    # A new length plans anew, with new kernels only where a shape holds the length (the input
    # projection, the stacked outputs, W_hh's gradient): as many for 3 steps as for 4.
    longer = iteration(3)[0]
    assert iteration(4)[0] == longer
