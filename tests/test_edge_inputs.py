"""0-d and empty tensors, out-of-range scalars and indices, wrong argument types: PyTorch's results
and PyTorch's errors, eager and naming the public op, on the CPU and on Vulkan alike."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import vkml
import vkml.nn.functional as F
from vkml.runtime.counters import counters


@pytest.fixture(params=["cpu", "vulkan"])
def dev(request):
    if request.param == "cpu":
        return vkml.device("cpu")
    return request.getfixturevalue("gpu")


def _both(fn, values, dev, dtype=np.float32):
    """fn over a vkml tensor on ``dev`` and over a torch tensor of the same ``values``, as numpy."""
    a = np.asarray(values, dtype)
    got = fn(vkml, vkml.tensor(a, device=dev))
    want = fn(torch, torch.from_numpy(a.copy()))
    return got.numpy(), want.numpy()


def _same(got, want):
    assert got.shape == want.shape and got.dtype == want.dtype, (got, want)
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------------- 0-d and empty tensors


@pytest.mark.parametrize("value", [100.0, -100.0, 0.5, float("inf"), -3.0])
@pytest.mark.parametrize("dim", [0, -1])
def test_zero_dim_softmax_family_and_reductions(value, dim, dev):
    for fn in (
        lambda L, x: L.softmax(x, dim),
        lambda L, x: L.log_softmax(x, dim),
        lambda L, x: L.logsumexp(x, dim),
        lambda L, x: x.mean(dim),
        lambda L, x: x.sum(dim),
        lambda L, x: x.amax(dim),
        lambda L, x: x.argmax(dim),
        lambda L, x: x.max(dim)[0],
        lambda L, x: x.min(dim)[1],
        lambda L, x: x.prod(dim),
        lambda L, x: L.flip(x, (dim,)),
        lambda L, x: x.sum(()),  # PyTorch: an empty tuple of dims reduces every dim
    ):
        _same(*_both(fn, value, dev))


@pytest.mark.parametrize("shape", [(0,), (2, 0), (0, 3)])
def test_empty_softmax_family_and_full_reductions(shape, dev):
    x = np.zeros(shape, np.float32)
    for fn in (
        lambda L, t: L.softmax(t, -1),
        lambda L, t: L.log_softmax(t, 0),
        lambda L, t: L.logsumexp(t, -1),
        lambda L, t: t.sum(()),
        lambda L, t: t.mean(()),
        lambda L, t: t.mean(),
    ):
        _same(*_both(fn, x, dev))


def test_arg_reductions_without_dim_keep_every_dim_as_pytorch(dev):
    x = np.array([[1.0, 5.0, 2.0], [0.0, -1.0, 7.0]], np.float32)
    _same(*_both(lambda L, t: t.argmax(None, keepdim=True), x, dev))
    _same(*_both(lambda L, t: L.argmin(t, keepdim=True), x, dev))


def test_sum_over_an_empty_tuple_reduces_every_dim(dev):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    _same(*_both(lambda L, t: t.sum(()), x, dev))
    _same(*_both(lambda L, t: t.amax([]), x, dev))


@pytest.mark.parametrize("name", ["amax", "amin", "max", "min", "argmax", "argmin"])
def test_empty_reductions_without_identity_raise_pytorchs_errors(name):
    x = vkml.zeros(2, 0)
    no_dim = IndexError if name.startswith("arg") else RuntimeError  # PyTorch's types
    for dim, error, text in ((None, no_dim, "Expected reduction dim to be specified"), (1, IndexError, "dim 1")):
        with pytest.raises(error, match=text):
            getattr(torch, name)(torch.zeros(2, 0), *(() if dim is None else (dim,)))
        with pytest.raises(error, match=f"'{name}': .*{text}"):
            getattr(vkml, name)(x, *(() if dim is None else (dim,)))
    assert x.shape == (2, 0)


# ---------------------------------------------------------------------- dims


@pytest.mark.parametrize(
    "call, op",
    [
        (lambda x: vkml.softmax(x, 5), "softmax"),
        (lambda x: vkml.log_softmax(x, -3), "log_softmax"),
        (lambda x: vkml.logsumexp(x, 2), "logsumexp"),
        (lambda x: x.mean(dim=(0, 5)), "mean"),
        (lambda x: x.max(2), "max"),
        (lambda x: x.argmin(2), "argmin"),
        (lambda x: x.flip((2,)), "flip"),
        (lambda x: x.squeeze(5), "squeeze"),
        (lambda x: x.transpose(0, 2), "transpose"),
    ],
)
def test_dim_out_of_range_is_pytorchs_index_error_naming_the_public_op(call, op):
    x = vkml.ones(2, 3)
    with pytest.raises(IndexError, match=rf"'{op}': Dimension out of range \(expected to be in range of \[-2, 1\]"):
        call(x)


def test_repeated_dims_are_pytorchs_runtime_error():
    x = vkml.ones(2, 3)
    for call, op in (
        (lambda: x.mean(dim=(0, 0)), "mean"),
        (lambda: x.sum((1, -1)), "sum"),
        (lambda: vkml.logsumexp(x, (0, 0)), "logsumexp"),
        (lambda: x.flip((0, 0)), "flip"),
    ):
        with pytest.raises(RuntimeError, match=f"'{op}': dim [01] appears multiple times"):
            call()


def test_dims_take_numpy_integers_and_refuse_other_types(dev):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    _same(*_both(lambda L, t: t.sum(dim=np.int64(1)), x, dev))
    _same(*_both(lambda L, t: L.softmax(t, np.int32(0)), x, dev))
    _same(*_both(lambda L, t: t.amax((np.int64(0), 1)), x, dev))
    t = vkml.tensor(x, device=dev)
    for bad in (0.5, "1", True, (0.5,)):
        with pytest.raises(
            TypeError, match="'sum': argument 'dim' must be an int or a tuple of ints, got ('1'|True|0.5)"
        ):
            t.sum(bad)
    with pytest.raises(TypeError, match="'softmax'"):
        vkml.softmax(t, None)


def test_movement_argument_errors_are_eager_and_clear():
    with pytest.raises(RuntimeError, match="'expand': size -2 at dim 0 is negative"):
        vkml.ones(1).expand(-2)
    with pytest.raises(TypeError, match="zeros_like.*must be a vkml.Tensor, not list"):
        vkml.zeros_like([1, 2])
    with pytest.raises(RuntimeError, match="'permute': duplicate dims"):
        vkml.ones(2, 3).permute(0, 0)
    assert vkml.tensor(3.0).flip(0).item() == 3.0


# ---------------------------------------------------------------------- Python scalars


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_float_scalars_beyond_float32_are_inf_on_every_device(dtype, dev):
    x = [1.0, -2.0, 0.0]
    for fn in (
        lambda L, t: t + 1e40,
        lambda L, t: t * 1e39,
        lambda L, t: t - (-1e40),
        lambda L, t: t == 1e40,
        lambda L, t: t < 1e40,
        lambda L, t: 1e40 / (t + 1),
        lambda L, t: t + 2**63,  # an int that fits 64 bits: float32(2**63), PyTorch's value
        lambda L, t: L.maximum(t, t + 1e40),
        lambda L, t: L.where(t > 0, t, 1e5) if dtype is np.float16 else t + 3.4028235e38,
    ):
        _same(*_both(fn, x, dev, dtype))


def test_ints_that_do_not_wrap_as_in_pytorch(dev):
    # PyTorch wraps an int operand into an integer tensor's dtype: int32 + 2**40 adds 0
    _same(*_both(lambda L, t: t + 2**40, [1, 2], dev, np.int32))
    _same(*_both(lambda L, t: t + 2**63, [1, 2], dev, np.int64))


@pytest.mark.parametrize(
    "call, error, text",
    [
        (lambda: vkml.tensor([1]) + 2**64, OverflowError, "'add': int 18446744073709551616 too big"),
        (lambda: vkml.tensor([1.0]) + 2**200, OverflowError, "'add': int .* too big"),
        (lambda: vkml.tensor([1.0]) / 2**64, OverflowError, "'div'"),
        (lambda: vkml.tensor([1.0]) == -(2**63) - 1, OverflowError, "'eq'"),
        (
            lambda: vkml.tensor([1.0]).clamp(max=1e39),
            RuntimeError,
            "'clamp': value 1e\\+39 .* float32 without overflow",
        ),
        (lambda: vkml.where(vkml.tensor([True]), vkml.tensor([1.0]), 1e39), RuntimeError, "'where'.*float32"),
        (lambda: vkml.ones(1).clamp(max=np.float64(1e39)), RuntimeError, "'clamp'.*float32"),
        (lambda: vkml.where(vkml.tensor([True]), vkml.ones(1), np.float64(-1e39)), RuntimeError, "'where'"),
        (lambda: vkml.tensor([1], dtype=vkml.int32).clamp(min=2**40), RuntimeError, "'clamp'.*int32 without overflow"),
        (lambda: vkml.tensor([1], dtype=vkml.int32) ** 2**40, RuntimeError, "'pow'.*int32 without overflow"),
        (lambda: vkml.tensor([2]) ** -1, RuntimeError, "'pow': Integers to negative integer powers"),
        (lambda: vkml.tensor([1.0], dtype=vkml.float16) ** 1e5, RuntimeError, "'pow'.*float16"),
        (
            lambda: vkml.tensor([2**40], dtype=vkml.int32),
            RuntimeError,
            "1099511627776 cannot be converted to type int32",
        ),
        (lambda: vkml.tensor([1.5, 1e20], dtype=vkml.int64), RuntimeError, "1e\\+20 cannot be converted to type int64"),
        (lambda: vkml.tensor([2**64]), ValueError, "Overflow"),
        (lambda: vkml.tensor([2**63, 1]), ValueError, "Overflow when unpacking long long: 9223372036854775808"),
        (lambda: vkml.tensor([[1.5], [2**63]], dtype=vkml.int64), ValueError, "Overflow"),
        (lambda: vkml.full((2,), 2**70, dtype=vkml.int64), OverflowError, "'full'"),
        (lambda: vkml.full((2,), 2**63), RuntimeError, "'full'.*int64 without overflow"),
        (lambda: vkml.full((2,), 2**40, dtype=vkml.int32), RuntimeError, "'full'.*int32 without overflow"),
        (lambda: vkml.full((2,), 1e40), RuntimeError, "'full'.*float32 without overflow"),
        (lambda: vkml.tensor([1.0]) - vkml.tensor([True]), RuntimeError, "'sub': Subtraction.*bool"),
        (
            lambda: F.cross_entropy(vkml.zeros(2, 3), vkml.tensor([0, 1]), label_smoothing=1.5),
            RuntimeError,
            "'cross_entropy': label_smoothing must be between 0.0 and 1.0",
        ),
        (lambda: F.layer_norm(vkml.tensor(1.0), ()), RuntimeError, "'layer_norm': Expected normalized_shape"),
    ],
)
def test_values_pytorch_refuses_raise_its_errors_at_the_op(call, error, text):
    with pytest.raises(error, match=text):
        call()


def test_tensor_and_full_take_what_pytorch_takes(dev):
    for values, dtype in (([2**63, 1.0], None), ([2**64], vkml.float32), ([-(2**31)], vkml.int32), ([1.9], vkml.int32)):
        torch_dtype = None if dtype is None else getattr(torch, dtype.name)
        _same(vkml.tensor(values, dtype=dtype, device=dev).numpy(), torch.tensor(values, dtype=torch_dtype).numpy())
    _same(vkml.full((2,), np.int64(3), device=dev).numpy(), torch.full((2,), 3).numpy())
    _same(vkml.full((2,), 1.5, dtype=vkml.int32, device=dev).numpy(), torch.full((2,), 1.5, dtype=torch.int32).numpy())


# ---------------------------------------------------------------------- pow's result dtype


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.int64, np.bool_])
@pytest.mark.parametrize("scalar", [2, 2.0, 3, 0.5, True, 0])
def test_pow_result_dtype_is_pytorchs(dtype, scalar, dev):
    values = [True, False] if dtype is np.bool_ else [3, 2]
    if dtype is np.bool_ and type(scalar) is bool:
        return  # PyTorch computes bool ** bool; vkml's pow takes no bool operands (an error, not a value)
    _same(*_both(lambda L, t: t**scalar, values, dev, dtype))
    if dtype is not np.bool_:
        _same(*_both(lambda L, t: scalar**t, values, dev, dtype))


# ---------------------------------------------------------------------- class indices


def test_out_of_range_class_indices_raise_pytorchs_errors_when_read(dev):
    logits = vkml.zeros(2, 3, device=dev)
    for target in ([5, 0], [-1, 0]):
        loss = F.cross_entropy(logits, vkml.tensor(target, device=dev))  # recorded, not checked yet
        with pytest.raises(
            IndexError, match=rf"'cross_entropy' \(called at .*test_edge_inputs.py:\d+\): Target {target[0]} is out"
        ):
            loss.item()
        with pytest.raises(IndexError):
            TF.cross_entropy(torch.zeros(2, 3), torch.tensor(target))
    with pytest.raises(IndexError, match="'embedding' .*: Index 3 is out of bounds"):
        F.embedding(vkml.tensor([0, 3], device=dev), vkml.zeros(3, 2, device=dev)).numpy()
    with pytest.raises(RuntimeError, match="'one_hot' .*: Class values must be smaller than num_classes"):
        F.one_hot(vkml.tensor([3], device=dev), 3).tolist()
    with pytest.raises(RuntimeError, match="'one_hot' .*: Class values must be non-negative"):
        F.one_hot(vkml.tensor([-1], device=dev), 3).tolist()
    with pytest.raises(RuntimeError, match="'one_hot': Class values must be non-negative"):
        F.one_hot(vkml.tensor([-1], device=dev))  # num_classes=-1 reads the indices at the call
    assert logits.numpy().tolist() == [[0.0] * 3] * 2  # the user's tensors are intact


def test_ignore_index_keeps_its_meaning(dev):
    logits = np.array([[1.0, 2.0, 0.5], [0.1, -1.0, 3.0], [2.0, 2.0, 2.0]], np.float32)
    for target, kwargs in (([-100, 2, 0], {}), ([5, 1, 5], {"ignore_index": 5})):
        got = F.cross_entropy(vkml.tensor(logits, device=dev), vkml.tensor(target, device=dev), **kwargs).item()
        want = TF.cross_entropy(torch.from_numpy(logits), torch.tensor(target), **kwargs).item()
        assert got == pytest.approx(want, rel=1e-6)


def test_gradients_of_reductions_over_an_empty_tuple_and_numpy_dims(dev):
    x = np.array([[1.0, 2.0], [3.0, 0.5]], np.float32)
    for fn in (
        lambda L, t: L.logsumexp(t, () if L is vkml else (0, 1)),  # (PyTorch's own () fails: a shape bug)
        lambda L, t: t.amax(()) * t.sum(np.int64(0)).sum(),
        lambda L, t: (L.softmax(t, np.int64(1)) * t).sum(),
    ):
        mine = vkml.tensor(x, device=dev, requires_grad=True)
        fn(vkml, mine).backward()
        theirs = torch.from_numpy(x.copy()).requires_grad_()
        fn(torch, theirs).backward()
        np.testing.assert_allclose(mine.grad.numpy(), theirs.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.int64, np.bool_])
def test_indexing_by_an_integer_or_bool_tensor_is_pytorchs(dtype, dev):
    x = np.arange(24, dtype=np.float32).reshape(4, 3, 2)
    x[1, 0, 0], x[2, 1, 1], x[3, 2, 0] = -0.0, np.nan, -np.inf  # every bit comes back, signs of zero too
    if dtype in (np.float32, np.float16):
        values = x.astype(dtype)
    else:
        values = np.nan_to_num(x, neginf=-7.0).astype(dtype) if dtype is not np.bool_ else np.nan_to_num(x) % 3 == 0
    mask = np.array([[True, False, True], [False] * 3, [True] * 3, [False, True, False]])
    for index in (
        np.array([1, 0, -1, 1]),
        np.array([[0, 3], [2, 2]]),
        np.zeros(0, np.int64),
        np.array([True, False, True, True]),
        mask,
    ):
        got = vkml.tensor(values, device=dev)[vkml.tensor(index, device=dev)].numpy()
        want = torch.from_numpy(values.copy())[torch.from_numpy(index)].numpy()
        assert got.shape == want.shape and got.dtype == want.dtype
        assert np.array_equal(got, want, equal_nan=dtype in (np.float32, np.float16))
        numbers = ~np.isnan(want.astype(np.float32))  # (a NaN's sign is not promised: DESIGN §4)
        assert np.array_equal(np.signbit(got.astype(np.float32))[numbers], np.signbit(want.astype(np.float32))[numbers])
    assert vkml.tensor(values, device=dev)[[2, 0]].shape == (2, 3, 2)
    assert vkml.tensor(values, device=dev)[True].shape == (1, 4, 3, 2)


def test_bad_tensor_indices_raise_at_the_op():
    x = vkml.ones(3, 2)
    with pytest.raises(IndexError, match="'__getitem__': index 3 is out of bounds for dimension 0 with size 3"):
        x[vkml.tensor([0, 3])]
    with pytest.raises(IndexError, match="'__getitem__': index -4 is out of bounds"):
        x[[-4]]
    with pytest.raises(IndexError, match="must be long, int, byte or bool tensors"):
        x[vkml.tensor([0.0])]
    with pytest.raises(IndexError, match="shape of the mask"):
        x[vkml.tensor([True, False])]
    # a tensor index combined with an int is PyTorch's advanced indexing, not an error
    assert x[vkml.tensor([0]), 1].tolist() == torch.ones(3, 2)[torch.tensor([0]), 1].tolist()


def test_indexing_by_a_tensor_is_differentiable():
    x = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
    mine = vkml.tensor(x, requires_grad=True)
    (mine[vkml.tensor([2, 0, 2])] * vkml.tensor([[1.0], [2.0], [3.0]])).sum().backward()
    theirs = torch.from_numpy(x.copy()).requires_grad_()
    (theirs[torch.tensor([2, 0, 2])] * torch.tensor([[1.0], [2.0], [3.0]])).sum().backward()
    np.testing.assert_array_equal(mine.grad.numpy(), theirs.grad.numpy())


def test_arange_and_sizes_take_numpy_integers_and_pytorchs_integer_rules(dev):
    for args, kwargs in (
        ((np.int64(3),), {}),
        ((np.int64(1), np.int64(7), np.int64(2)), {}),
        ((0, 2.5, 1), {"dtype": "int64"}),
        ((-0.5, 3, 1.5), {"dtype": "int64"}),
        ((0.5, 3), {"dtype": "int32"}),
    ):
        dtype = kwargs.get("dtype")
        got = vkml.arange(*args, dtype=dtype and getattr(vkml, dtype), device=dev).numpy()
        _same(got, torch.arange(*args, dtype=dtype and getattr(torch, dtype)).numpy())
    with pytest.raises(ValueError, match="step must be nonzero"):
        vkml.arange(0, 2, 0.5, dtype=vkml.int64)  # the step truncates to 0, as in PyTorch
    with pytest.raises(RuntimeError, match="unsupported range"):
        vkml.arange(0, float("inf"))
    _same(vkml.zeros(np.int64(2), np.int32(3), device=dev).numpy(), torch.zeros(2, 3).numpy())
    with pytest.raises(TypeError, match="sizes must be a tuple of ints"):
        vkml.ones(1.5)
    with pytest.raises(RuntimeError, match="negative dimension"):
        vkml.ones(-1)


def test_class_indices_are_checked_in_the_submission_that_uses_them(dev):
    logits = vkml.tensor(np.array([[1.0, 2.0, 0.5], [0.1, -1.0, 3.0]], np.float32), device=dev, requires_grad=True)
    labels = vkml.tensor([1, 2, 7, 0], device=dev)
    target = labels[1:3]  # a view of loaded data: lazy
    loss = F.cross_entropy(logits, target)  # no submission, no read here
    before = counters["submissions"]
    with pytest.raises(IndexError, match=r"'cross_entropy' \(called at .*test_edge_inputs.py:\d+\): Target 7 is out"):
        loss.item()
    assert counters["submissions"] == before + 1  # the check rode along with the loss
    with pytest.raises(IndexError, match="Target 7"):  # the computed loss is not handed out afterwards
        loss.item()
    with pytest.raises(IndexError, match="Target 7"):  # nor anything computed from it
        (loss * 2).item()
    bad = F.cross_entropy(logits, target)
    bad.backward()  # the gradient is computed without a read: its values are refused when read
    with pytest.raises(IndexError, match="Target 7"):
        logits.grad.numpy()
    assert labels.tolist() == [1, 2, 7, 0] and logits.shape == (2, 3)  # the user's tensors are intact
    rows = F.embedding(labels[2:] - 4, vkml.zeros(3, 2, device=dev))  # [3, -4]: the first bad one is named
    with pytest.raises(
        IndexError, match=r"'embedding' \(called at .*\): index out of range in self: Index 3 is out of bounds"
    ):
        rows.numpy()


def test_a_passed_check_of_loaded_labels_is_not_repeated(dev):
    logits = vkml.tensor(np.array([[1.0, 2.0, 0.5], [0.1, -1.0, 3.0]], np.float32), device=dev)
    labels = vkml.tensor([1, 2], device=dev)
    want = TF.cross_entropy(torch.tensor([[1.0, 2.0, 0.5], [0.1, -1.0, 3.0]]), torch.tensor([1, 2])).item()
    for step in range(3):
        before = dict(counters)
        loss = F.cross_entropy(logits, labels)
        assert loss.item() == pytest.approx(want, rel=1e-6)
        assert counters["submissions"] == before["submissions"] + 1
        if step:  # checked once, in the first step: later steps read the loss alone
            assert counters["bytes_downloaded"] - before["bytes_downloaded"] == 4


def test_eager_mode_checks_class_indices_at_the_op(dev):
    saved = vkml.graph.build._eager_override  # None unless someone called set_eager: VKML_EAGER decides
    vkml.set_eager(True)
    try:
        with pytest.raises(IndexError, match="'cross_entropy' .*: Target 3 is out of bounds"):
            F.cross_entropy(vkml.zeros(2, 3, device=dev), vkml.tensor([0, 3], device=dev))
    finally:
        vkml.graph.build._eager_override = saved


@pytest.mark.parametrize("bad", [False, True])
def test_a_check_is_forgotten_with_the_tensors_it_guards(bad):
    """A check once marked its own nodes, and the mark kept the check alive for ever: every later
    realize of the process walked its graph looking for checks (and kept their buffers)."""
    import gc

    from vkml.schedule import checks

    def step():
        loss = F.cross_entropy(vkml.ones(4, 3), vkml.tensor([0, 5 if bad else 1, 1, 2]))
        try:
            loss.item()
        except IndexError:
            assert bad

    step()
    gc.collect()
    assert not checks.active()
