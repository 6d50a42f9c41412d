"""The gaps the legacy-idiom programs (tests/test_programs_q.py) found, each against PyTorch: the deprecated
overloads and arguments old GitHub code passes (PyTorch takes them with a warning), ``loss.data[0]``'s
IndexError, and the text ``print`` shows of a return type and a device."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import vkml

A = np.arange(6, dtype=np.float32).reshape(2, 3) / 7


def _run(fn, m):
    """``fn(m)``'s value (numpy) and the messages of the warnings it raised, the library's name as torch."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = fn(m)
    return value, [str(w.message).split(" (Triggered")[0].replace("vkml", "torch") for w in caught]


def test_variable_volatile_warns_and_is_ignored():
    for m in (torch, vkml):
        value, messages = _run(lambda m: m.autograd.Variable(m.tensor(A), volatile=True), m)
        assert not value.requires_grad
        assert messages == ["volatile was removed and now has no effect. Use `with torch.no_grad():` instead."]
    _, messages = _run(lambda m: m.tensor(A).volatile, vkml)
    assert messages == _run(lambda m: m.tensor(A).volatile, torch)[1]


@pytest.mark.parametrize(
    ("index", "message"),
    [(0, "invalid index of a 0-dim tensor. Use `tensor.item()`"), (slice(0, 1), "slice() cannot be applied"),
     ((0, 1), "too many indices for tensor of dimension 0")],
)  # fmt: skip
def test_index_of_a_0d_loss_raises_pytorchs_index_error(index, message):
    for m in (torch, vkml):
        with pytest.raises(IndexError, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
            m.tensor(1.5).data[index]


@pytest.mark.parametrize(
    "call",
    [
        lambda m, a: m.addcmul(a, 0.5, a * 2, a),
        lambda m, a: a.clone().addcmul_(0.5, a * 2, a),
        lambda m, a: m.addcdiv(a, -0.25, a, a + 1),
        lambda m, a: a.clone().addcdiv_(-0.25, a, a + 1),
        lambda m, a: m.addmm(0.5, a[:, :2], 2, a[:, :2], a[:2, :2]),
        lambda m, a: m.addmm(0.5, a[:, :2], a[:, :2], a[:2, :2]),
        lambda m, a: a[:, :2].clone().addmm_(0.5, 2, a[:, :2], a[:2, :2]),
    ],
)
def test_deprecated_scalar_first_overloads_match_pytorch(call):
    """``exp_avg_sq.mul_(beta2).addcmul_(1 - beta2, grad, grad)`` of pre-1.5 optimizers, and the like."""
    expected = call(torch, torch.tensor(A)).numpy()
    value, messages = _run(lambda m: call(m, m.tensor(A)), vkml)
    np.testing.assert_allclose(value.numpy(), expected, rtol=1e-6)
    assert len(messages) == 1 and messages[0].startswith("This overload of add")


def test_range_is_inclusive_in_the_default_float_dtype():
    for args, kwargs in [
        ((0, 3), {}),
        ((0, 1, 0.25), {}),
        ((2, -1, -1), {}),
        ((1, 4), {"dtype": "int64"}),
        ((0, 1, 0.3), {}),
    ]:
        results = []
        for m in (torch, vkml):
            given = {k: getattr(m, v) for k, v in kwargs.items()}
            value, messages = _run(lambda m, args=args, given=given: m.range(*args, **given), m)
            results.append((value.tolist(), str(value.dtype).split(".")[-1], messages))
        assert results[1] == results[0]


def test_set_default_tensor_type_warns_once(monkeypatch):
    monkeypatch.setattr(vkml.frontend.legacy_names, "_warned_default_tensor_type", False)
    try:
        _, first = _run(lambda m: m.set_default_tensor_type("torch.FloatTensor"), vkml)
        _, second = _run(lambda m: m.set_default_tensor_type(m.FloatTensor), vkml)
    finally:
        vkml.set_default_dtype(vkml.float32)
        vkml.set_default_device(None)
    assert first == [
        "torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use torch.set_default_dtype() "
        "and torch.set_default_device() as alternatives."
    ]
    assert second == []  # PyTorch's TORCH_WARN_ONCE


def test_return_types_and_devices_print_as_pytorchs():
    results = []
    for m in (torch, vkml):
        x = m.tensor(A)
        texts = [
            repr(m.max(x, 1)),
            str(m.topk(x, 2, sorted=True)),
            repr(x.sort(descending=True)),
            repr(m.device("cpu")),
        ]
        results.append([t.replace("vkml", "torch") for t in texts])
    assert results[1] == results[0]
    assert repr(vkml.device("meta")) == repr(torch.device("meta"))


def test_a_value_with_history_written_into_a_detached_tensor_takes_its_gradient():
    """``encoder_outputs = Variable(torch.zeros(n, h))`` then ``encoder_outputs[ei] = encoder_output[0][0]``: the
    gradient reaches the written values, the tensor it was detached from stays outside autograd, and both still
    show the writes (vkml dropped the gradient)."""
    results = []
    weights = np.arange(6, dtype=np.float32).reshape(2, 3)
    for m in (torch, vkml):
        w = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
        base = m.zeros(2, 3)
        buf = m.autograd.Variable(base)
        buf[0] = w * 2
        buf[1, 1:] = w[:2] ** 2
        (buf * m.tensor(weights)).sum().backward()
        detached = m.zeros(3).detach()
        detached.copy_(w * 3)
        detached.sum().backward()
        results.append((w.grad.tolist(), buf.requires_grad, base.requires_grad, base.tolist(), detached.tolist()))
    assert results[1] == results[0]


@pytest.mark.parametrize("dst", ["DoubleTensor", "torch.DoubleTensor", "float64", "FloatTensor"])
def test_module_type_takes_a_legacy_type_or_its_name(dst):
    """``model.type(torch.DoubleTensor)``: every parameter cast, still a Parameter that requires grad."""
    results = []
    for m in (torch, vkml):
        model = m.nn.Sequential(m.nn.Linear(2, 3), m.nn.BatchNorm1d(3))
        model.type(dst if "." in dst else getattr(m, dst))
        results.append(
            [
                (str(t.dtype).split(".")[-1], type(t).__name__, t.requires_grad)
                for t in model.state_dict(keep_vars=True).values()
            ]
        )
    assert results[1] == results[0]


@pytest.mark.parametrize(
    "loss",
    [
        lambda F, x, t: F.binary_cross_entropy(x.sigmoid(), t),
        lambda F, x, t: F.binary_cross_entropy(x.sigmoid(), t, weight=t + 1, reduction="sum"),
        lambda F, x, t: F.binary_cross_entropy_with_logits(x, t, pos_weight=t[0] + 1),
        lambda F, x, t: F.smooth_l1_loss(x, t, reduction="none"),
        lambda F, x, t: F.smooth_l1_loss(x, t, beta=0.0),
    ],
)
def test_printed_losses_name_pytorchs_node(loss):
    """``print(loss)`` in a training loop: ``tensor(0.6931, grad_fn=<BinaryCrossEntropyBackward0>)``, edges too."""
    shown = []
    for m in (torch, vkml):
        x = m.tensor(A, requires_grad=True)
        out = loss(m.nn.functional, x * 2, m.tensor(A.round()))
        node = out.grad_fn
        shown.append((type(node).__name__, [type(n).__name__ for n, _ in node.next_functions]))
    assert shown[1] == shown[0]


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
@pytest.mark.parametrize(("batch_first", "bidirectional"), [(False, False), (False, True), (True, False)])
def test_rnn_output_strides_match_pytorch(mode, batch_first, bidirectional):
    """word_language_model's ``output.view(output.size(0) * output.size(1), output.size(2))``: a time-major
    output is contiguous (vkml's LSTM gave a strided view that ``view`` refused); batch_first's is its transpose."""
    strides = []
    for m in (torch, vkml):
        rnn = getattr(m.nn, mode)(3, 4, 2, batch_first=batch_first, bidirectional=bidirectional)
        out, _ = rnn(m.zeros(5, 2, 3))
        strides.append((out.stride(), out.is_contiguous()))
    assert strides[1] == strides[0]


@pytest.mark.parametrize("dtype", ["uint8", "int64", "float32"])
def test_masked_fill_with_a_byte_mask_raises_pytorchs_error(dtype):
    """``x.masked_fill_(mask.byte(), 0)`` of pre-1.2 code: current PyTorch refuses it with a RuntimeError."""
    messages = []
    for m in (torch, vkml):
        with pytest.raises(RuntimeError) as caught:
            m.tensor(A).masked_fill_(m.tensor(A > 0.3).to(getattr(m, dtype)), 0.0)
        messages.append(str(caught.value))
    assert messages[1] == messages[0]
