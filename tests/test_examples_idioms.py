"""Fixes found running pytorch/examples programs (tests/programs/vae.py, dcgan.py,
time_sequence_prediction.py, reinforcement_learning.py, siamese_network.py, mnist_rnn.py) under
vkml: each behaves as PyTorch's does (checked against the torch installed here)."""

from __future__ import annotations

import collections
import operator
import warnings

import numpy as np
import pytest
import torch

import vkml
import vkml.nn as nn
import vkml.nn.functional as F


@pytest.mark.parametrize("op", [operator.mul, operator.add, operator.sub, operator.truediv, operator.lt])
def test_numpy_scalar_on_the_left_defers_to_the_tensor(op):
    """np.float64(0.99) * t gave an ndarray of t's values (numpy's __mul__ read the tensor through
    __array__): the result left autograd and vkml. Tensor's __array_priority__ makes numpy defer."""
    x = vkml.tensor([1.0, 2.0], requires_grad=True)
    got = op(np.float64(0.5), x)
    expected = op(torch.tensor(np.float64(0.5)).item(), torch.tensor([1.0, 2.0]))
    assert isinstance(got, vkml.Tensor) and str(got.dtype) == str(expected.dtype).replace("torch", "vkml")
    np.testing.assert_array_equal(got.numpy(), expected.numpy())
    if got.dtype.is_float:
        got.sum().backward()
        assert x.grad is not None


def test_numpy_array_on_the_left_is_a_type_error():
    """numpy defers to the tensor, whose operators refuse an ndarray, as PyTorch's do."""
    with pytest.raises(TypeError):
        np.ones(2) * vkml.ones(2)


CASES = {
    "numpy float64": [np.float64(1.5)],
    "numpy float64 after a Python float": [2.0, np.float64(1.5)],
    "numpy float16 and int64": [np.int64(1), np.float16(2.0)],
    "numpy float32 and float64": [np.float32(1.5), np.float64(2.0)],
    "numpy int32 and a Python int": [np.int32(1), 2],
    "numpy int32 and a Python float": [np.int32(1), 2.0],
    "numpy uint8": [np.uint8(1), np.uint8(7)],
    "nested, float64 first": [[np.float64(1.0)], [1.0]],
    "float64 tensor and a Python float": "tensor",
    "numpy arrays": [np.array([1.5]), np.array([2.0])],
    "deque of numpy float64": collections.deque([np.float64(1.0), 2.0]),
}


@pytest.mark.parametrize("name", CASES)
def test_tensor_of_a_sequence_infers_the_dtype_as_pytorch(name):
    """tensor([np.float64(x)]) was float32 (numpy's float64 taken for Python floats), [np.uint8(1)]
    raised StopIteration; PyTorch promotes each element's own dtype."""
    data = CASES[name]
    if data == "tensor":
        got, expected = (
            vkml.tensor([vkml.tensor(1.0, dtype=vkml.float64), 2.0]),
            torch.tensor([torch.tensor(1.0).double(), 2.0]),
        )
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # PyTorch's warning that a list of arrays is slow
            got, expected = vkml.tensor(data), torch.tensor(data)
    assert str(got.dtype).removeprefix("vkml.") == str(expected.dtype).removeprefix("torch."), name
    np.testing.assert_array_equal(got.numpy(), expected.numpy())


def test_binary_cross_entropy_refuses_a_target_of_another_dtype():
    p = vkml.tensor([0.3, 0.6])
    for target, name in ((vkml.tensor([0, 1]), "Long"), (vkml.tensor([0.0, 1.0], dtype=vkml.float64), "Double")):
        with pytest.raises(RuntimeError, match=f"binary_cross_entropy.*Found dtype {name} but expected Float"):
            nn.BCELoss()(p, target)
    with pytest.raises(NotImplementedError, match="binary_cross_entropy"):
        F.binary_cross_entropy(vkml.tensor([1]), vkml.tensor([1]))
    # weight is taken in the input's dtype, as PyTorch's
    loss = F.binary_cross_entropy(p, vkml.tensor([0.0, 1.0]), weight=vkml.tensor([1.0, 2.0], dtype=vkml.float64))
    expected = torch.nn.functional.binary_cross_entropy(
        torch.tensor([0.3, 0.6]), torch.tensor([0.0, 1.0]), weight=torch.tensor([1.0, 2.0], dtype=torch.float64)
    )
    assert loss.dtype is vkml.float32 and loss.item() == pytest.approx(expected.item(), rel=1e-6)


@pytest.mark.parametrize("bad", [1.5, -0.25, float("nan")])
def test_binary_cross_entropy_refuses_an_input_outside_0_1_at_the_read(bad, gpu):
    """It gave NaN; PyTorch raises. The check is computed with the loss and raised when it is read."""
    for device in ("cpu", gpu):
        p = vkml.tensor([0.5, bad], device=device)
        target = vkml.tensor([1.0, 0.0], device=device)
        loss = F.binary_cross_entropy(p, target, reduction="sum")
        with pytest.raises(RuntimeError, match="binary_cross_entropy.*all elements of input should be between 0 and 1"):
            loss.item()
        # the inputs stay readable, and a good call afterwards works
        assert p.numpy()[0] == 0.5
        good = F.binary_cross_entropy(vkml.tensor([0.5, 0.25], device=device), target, reduction="sum")
        assert good.item() == pytest.approx(-np.log(0.5) - np.log(0.75), rel=1e-6)


def test_binary_cross_entropy_keeps_its_gradient_with_the_check():
    p = vkml.tensor([0.25, 0.5], requires_grad=True)
    F.binary_cross_entropy(p, vkml.tensor([1.0, 0.0])).backward()
    tp = torch.tensor([0.25, 0.5], requires_grad=True)
    torch.nn.functional.binary_cross_entropy(tp, torch.tensor([1.0, 0.0])).backward()
    np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("loss", ["nll_loss", "cross_entropy"])
def test_class_targets_must_be_int64_or_uint8(loss):
    """An int32 target was taken; PyTorch's nll_loss and cross_entropy refuse it."""
    scores = vkml.tensor([[-1.0, -2.0], [-0.5, -0.25]])
    with pytest.raises(RuntimeError, match=f"{loss}.*expected target dtype to be Long or Byte, but got Int"):
        getattr(F, loss)(scores, vkml.tensor([1, 0], dtype=vkml.int32))
    for dtype in (vkml.int64, vkml.uint8):
        got = getattr(F, loss)(scores, vkml.tensor([1, 0], dtype=dtype)).item()
        expected = getattr(torch.nn.functional, loss)(torch.tensor(scores.numpy()), torch.tensor([1, 0])).item()
        assert got == pytest.approx(expected, rel=1e-6)


def _warnings(call) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    # the message, and whether it points at the caller's line (in this file), as PyTorch's does
    return [(str(w.message).split("(")[0], w.filename == __file__) for w in caught if w.category is UserWarning]


@pytest.mark.parametrize(
    "call",
    [
        lambda lib, F: lib.tensor([3.0]).std(),
        lambda lib, F: lib.tensor([3.0]).var(),
        lambda lib, F: lib.std_mean(lib.ones(2, 3), 1, correction=3),
        lambda lib, F: lib.tensor([3.0]).std(unbiased=False),
        lambda lib, F: F.smooth_l1_loss(lib.tensor([0.5, 1.0]), lib.tensor([1.0])),
        lambda lib, F: F.huber_loss(lib.tensor([0.5, 1.0]), lib.tensor([1.0])),
        lambda lib, F: F.smooth_l1_loss(lib.tensor([0.5, 1.0]), lib.tensor([1.0, 0.0])),
    ],
    ids=["std", "var", "std_mean", "std_biased", "smooth_l1", "huber", "smooth_l1_same"],
)
def test_warns_where_pytorch_warns(call):
    """std/var over one element (no degrees of freedom) and smooth_l1/huber with a broadcast target
    warned nothing (NaN or a broadcast loss came back silently)."""
    assert _warnings(lambda: call(vkml, F)) == _warnings(lambda: call(torch, torch.nn.functional))


def test_data_parallel_and_cudnn_queries_of_the_dcgan_example():
    """dcgan's Generator calls nn.parallel.data_parallel(self.main, input, range(ngpu)) and older
    examples wrap models in nn.DataParallel; neither name existed, nor backends.cudnn.is_available."""
    main = nn.Sequential(nn.Tanh())
    x = vkml.tensor([[0.5, -1.0, 2.0]])
    expected = main(x).numpy()
    np.testing.assert_array_equal(nn.parallel.data_parallel(main, x, range(1)).numpy(), expected)
    np.testing.assert_array_equal(nn.parallel.data_parallel(main, (x,), [0], module_kwargs={}).numpy(), expected)
    wrapped = nn.DataParallel(main)
    np.testing.assert_array_equal(wrapped(x).numpy(), expected)
    # state_dict keys gain PyTorch's "module." prefix
    assert list(nn.DataParallel(nn.Linear(3, 2)).state_dict()) == ["module.weight", "module.bias"]
    assert vkml.backends.cudnn.is_available() is False and vkml.backends.cudnn.version() is None


def _lbfgs_trace(lib):
    """time_sequence_prediction's pattern in float64: LBFGS with a closure over .double() parameters."""
    x = lib.tensor([-1.5, 2.0], dtype=lib.float64, requires_grad=True)
    w = lib.tensor([3.0, 0.7], dtype=lib.float64)
    opt = lib.optim.LBFGS([x], lr=1, max_iter=3, history_size=2)
    trace = []

    def closure():
        opt.zero_grad()
        loss = (w * x.exp() - 1.3 * x).sum()
        loss.backward()
        trace.append([loss.item(), *x.tolist()])
        return loss

    opt.step(closure)
    return trace


def test_lbfgs_keeps_float64_scalars_for_float64_parameters():
    """LBFGS rounded its step sizes and curvature scalars to float32 for every dtype (right for
    float32 parameters, whose 0-d tensors PyTorch rounds so); float64 runs drifted from PyTorch's by
    ~1e-9 at the first step."""
    np.testing.assert_allclose(_lbfgs_trace(vkml), _lbfgs_trace(torch), rtol=1e-13)


@pytest.mark.parametrize(
    "call",
    [
        lambda lib, F: F.binary_cross_entropy_with_logits(lib.tensor([0.3, 0.6]), lib.tensor([0, 1])),
        lambda lib, F: F.binary_cross_entropy_with_logits(lib.tensor([0, 1]), lib.tensor([0.3, 0.6])),
        lambda lib, F: F.binary_cross_entropy_with_logits(
            lib.tensor([0.3, 0.6]), lib.tensor([0.0, 1.0]), pos_weight=lib.tensor([2.0], dtype=lib.float64)
        ),
        lambda lib, F: F.binary_cross_entropy_with_logits(
            lib.tensor([0.3, 0.6]), lib.tensor([0.0, 1.0], dtype=lib.float64)
        ),
        lambda lib, F: F.huber_loss(lib.tensor([0.3, 0.6]), lib.tensor([0.0, 1.0], dtype=lib.float64)),
    ],
    ids=["bce_logits_long_target", "bce_logits_long_input", "pos_weight_f64", "target_f64", "huber_target_f64"],
)
def test_loss_dtypes_and_refusals_as_pytorch(call):
    """An integer target or input of binary_cross_entropy_with_logits gave a loss, where PyTorch
    raises; a float64 pos_weight made the loss float64 and huber_loss's float64 target too."""

    def outcome(lib, F):
        try:
            loss = call(lib, F)
        except (RuntimeError, NotImplementedError) as e:
            return type(e).__name__
        return str(loss.dtype).split(".")[-1], loss.item()

    got, expected = outcome(vkml, F), outcome(torch, torch.nn.functional)
    if isinstance(expected, str):
        assert got == expected
    else:
        assert got[0] == expected[0] and got[1] == pytest.approx(expected[1], rel=1e-6)
