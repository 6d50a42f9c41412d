"""Hand-written rows for what PyTorch's module tables (tests/test_moduledb_sweep.py, run with
``-m exhaustive``) found in vkml.nn, each compared with torch on the same inputs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from optest import torch_at_least

import vkml


def _pair(shape, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return torch.tensor(x, requires_grad=True), vkml.tensor(x).requires_grad_(True)


def _same(got, want):
    torch.testing.assert_close(torch.from_numpy(np.array(got.detach().numpy())), want.detach())


def _error_class(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the class is compared
        return type(e)
    return None


@pytest.mark.parametrize("shape", [(0, 3), (0, 3, 4), (0, 3, 2, 2)])
def test_batch_norm_of_an_empty_batch_in_training(shape):
    """module_db's zero-batch sample: an empty output, gradients of zeros, running statistics kept."""
    t_mod = getattr(torch.nn, f"BatchNorm{max(len(shape) - 2, 1)}d")(3)
    v_mod = getattr(vkml.nn, f"BatchNorm{max(len(shape) - 2, 1)}d")(3)
    t_x, v_x = _pair(shape)
    t_out, v_out = t_mod(t_x), v_mod(v_x)
    assert tuple(v_out.shape) == tuple(t_out.shape)
    t_out.sum().backward()
    v_out.sum().backward()
    _same(v_mod.weight.grad, t_mod.weight.grad)
    _same(v_mod.bias.grad, t_mod.bias.grad)
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        _same(getattr(v_mod, name), getattr(t_mod, name))


@pytest.mark.parametrize("eps, training", [(-1.0, True), (0.0, True), (-1.0, False)])
def test_batch_norm_refuses_a_bad_eps(eps, training):
    args = (torch.zeros(3), torch.ones(3))
    want = _error_class(lambda: torch.nn.functional.batch_norm(torch.ones(4, 3), *args, training=training, eps=eps))
    if want is None:
        pytest.skip("this PyTorch accepts the eps (the check came in PyTorch 2.13)")
    v_args = (vkml.zeros(3), vkml.ones(3))
    got = _error_class(lambda: vkml.nn.functional.batch_norm(vkml.ones(4, 3), *v_args, training=training, eps=eps))
    assert got is not None and issubclass(got, want), f"vkml raises {got}, torch {want}"


def _both(text):
    """``text`` (an expression in ``m``) evaluated with torch and with vkml: (torch's error class,
    vkml's error class)."""
    return tuple(_error_class(lambda m=m: eval(text, {"m": m})) for m in (torch, vkml))  # noqa: S307


# module_db's error inputs (constructor and forward) of the recurrent modules and the losses
ERROR_ROWS = [
    "m.nn.RNN(3, 4, bias=1)",
    "m.nn.GRU(3, 4, batch_first=1)",
    "m.nn.LSTM(3, 4, bias='x')",
    "m.nn.RNN(0, 4)",
    "m.nn.LSTM(3, 5.0)",
    "m.nn.GRU(3, 4)(m.ones(2, 1, 3, dtype=m.float64))",
    "m.nn.RNNCell(3, 4)(m.ones(2, 3), m.ones(1, 1, 2, 4))",
    "m.nn.GRUCell(3, 4)(m.ones(2, 3), m.ones(1, 1, 2, 4))",
    "m.nn.LSTMCell(3, 4)(m.ones(2, 3), (m.ones(1, 1, 2, 4), m.ones(2, 4)))",
    # PyTorch refuses a complex delta from 2.13 on (2.11 accepts it; the GPU machine's PyTorch is 2.11)
    pytest.param(
        "m.nn.HuberLoss(delta=1.0 + 0.0j)",
        marks=pytest.mark.skipif(not torch_at_least(2, 13), reason="PyTorch < 2.13 accepts a complex delta"),
    ),
    "m.nn.NLLLoss(weight=m.ones(3, dtype=m.float16))(m.zeros(2, 3), m.tensor([0, 1]))",
    "m.nn.CrossEntropyLoss(weight=m.ones(3, dtype=m.float64))(m.zeros(2, 3), m.tensor([0, 1]))",
    "m.nn.CrossEntropyLoss(ignore_index=1)(m.zeros(2, 3), m.full((2, 3), 1 / 3))",
    "m.nn.Unflatten(1, (2, 2.0))",
    "m.nn.Unflatten(1, 4)",
]


@pytest.mark.parametrize("text", ERROR_ROWS)
def test_error_inputs_raise_torch_class(text):
    want, got = _both(text)
    assert want is not None, f"torch accepts {text}"
    assert got is not None and issubclass(got, want), f"{text}: vkml raises {got}, torch {want}"


@pytest.mark.parametrize(
    "text",
    [
        "m.nn.CrossEntropyLoss(ignore_index=-1)(m.zeros(2, 3), m.full((2, 3), 1 / 3))",  # a negative one is ignored
        "m.nn.RNNCell(3, 4)(m.ones(3), m.ones(4))",
        "m.nn.LSTM(3, 4, batch_first=True)(m.ones(2, 1, 3))",
    ],
)
def test_neighbours_of_the_error_inputs_still_run(text):
    assert _both(text) == (None, None)


@pytest.mark.parametrize("size", ["[2, 2]", "(2, 2)", "m.Size([2, 2])"])
def test_unflatten_keeps_the_size_as_given(size):
    """PyTorch keeps ``unflattened_size`` as it came (a list, a tuple, a Size): the repr shows it."""
    t_mod, v_mod = (eval(f"m.nn.Unflatten(-2, {size})", {"m": m}) for m in (torch, vkml))  # noqa: S307
    assert repr(v_mod) == repr(t_mod).replace("torch.", "vkml.")
    assert tuple(v_mod(vkml.ones(3, 4, 5)).shape) == tuple(t_mod(torch.ones(3, 4, 5)).shape)


@pytest.mark.parametrize(
    "text",
    [
        "m.nn.TransformerEncoderLayer(4, 2, 8, dtype=m.float64)",
        "m.nn.TransformerDecoderLayer(4, 2, 8, dtype=m.float64)",
        "m.nn.Transformer(4, 2, 1, 1, 8, dtype=m.float64)",
        "m.nn.MultiheadAttention(4, 2, kdim=3, vdim=5, dtype=m.float64)",
        "m.nn.LSTM(3, 4, proj_size=2, dtype=m.float64)",
    ],
)
def test_factory_dtype_reaches_every_submodule(text):
    """module_db's test_factory_kwargs: ``dtype=`` reaches the layer norms inside the transformer layers."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's Transformer warns about nested tensors
        t_mod = eval(text, {"m": torch})  # noqa: S307
    v_mod = eval(text, {"m": vkml})  # noqa: S307
    want = [(k, str(v.dtype).split(".")[-1]) for k, v in t_mod.state_dict().items()]
    got = [(k, str(v.dtype).split(".")[-1]) for k, v in v_mod.state_dict().items()]
    assert got == want


@pytest.mark.parametrize(
    "ctor, shape",
    [
        ("LazyLinear(3)", (2, 4)),
        ("LazyConv1d(3, 2)", (1, 2, 5)),
        ("LazyConvTranspose2d(3, 2)", (1, 2, 4, 4)),
        ("LazyBatchNorm1d()", (4, 3)),
        ("LazyInstanceNorm1d(affine=True, track_running_stats=True)", (2, 3, 4)),
    ],
)
def test_lazy_module_moved_before_its_first_call(ctor, shape):
    """module_db's float64 rows: ``.double()`` before the first call gives float64 parameters and
    buffers (PyTorch's UninitializedParameter follows ``.to()``); they were made float32."""
    t_mod = eval("m.nn." + ctor, {"m": torch}).double()  # noqa: S307
    v_mod = eval("m.nn." + ctor, {"m": vkml}).double()  # noqa: S307
    t_out = t_mod(torch.ones(shape, dtype=torch.float64))
    v_out = v_mod(vkml.ones(shape, dtype=vkml.float64))
    assert str(v_out.dtype).split(".")[-1] == str(t_out.dtype).split(".")[-1]
    want = [(k, str(v.dtype).split(".")[-1], tuple(v.shape)) for k, v in t_mod.state_dict().items()]
    got = [(k, str(v.dtype).split(".")[-1], tuple(v.shape)) for k, v in v_mod.state_dict().items()]
    assert got == want


def test_cross_entropy_of_a_number_target_raises_torch_type_error():
    """An input that requires grad and a Python number target: PyTorch's TypeError (the grad_fn
    naming read the number's dtype and raised AttributeError)."""
    want, got = _both("m.nn.CrossEntropyLoss()(m.ones(4, requires_grad=True), 2)")
    assert want is TypeError and got is not None and issubclass(got, want), got
