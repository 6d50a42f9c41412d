"""numpy, DLPack and PyTorch interop (``__array__``, ``from_numpy``, ``as_tensor``, ``__dlpack__``,
``from_dlpack``), one-element conversions (``__index__``, ``__bool__``, ...), and
``vkml.testing.assert_close`` against ``torch.testing.assert_close``: on the CPU and on lavapipe."""

from __future__ import annotations

import operator
import re

import numpy as np
import pytest
import torch

import vkml

CPU = vkml.device("cpu")


@pytest.fixture(params=["cpu", "gpu"])
def dev(request, gpu):
    return CPU if request.param == "cpu" else gpu


# ---------------------------------------------------------------------- numpy


def test_asarray_gives_the_values_with_and_without_dtype(dev):
    t = vkml.tensor([[1.5, -2.0], [3.25, 4.0]], device=dev)
    a = np.asarray(t)
    assert a.dtype == np.float32 and a.tolist() == [[1.5, -2.0], [3.25, 4.0]]
    as_int = np.asarray(t, dtype=np.int32)
    assert as_int.dtype == np.int32 and as_int.tolist() == np.asarray(torch.tensor(a), dtype=np.int32).tolist()
    assert np.array(vkml.tensor([True, False], device=dev)).tolist() == [True, False]


def test_asarray_without_a_copy_is_refused_as_numpy_refuses():
    with pytest.raises(ValueError, match="Unable to avoid copy"):
        np.asarray(vkml.ones(2), copy=False)


@pytest.mark.parametrize(
    ("np_dtype", "vk_dtype"),
    [(np.float32, vkml.float32), (np.float16, vkml.float16), (np.int64, vkml.int64), (np.int32, vkml.int32)],
)
def test_from_numpy_keeps_dtype_and_values(np_dtype, vk_dtype):
    a = np.arange(-3, 3).astype(np_dtype).reshape(2, 3)
    t = vkml.from_numpy(a)
    assert t.dtype is vk_dtype and t.shape == (2, 3) and t.device is CPU
    np.testing.assert_array_equal(t.numpy(), torch.from_numpy(a).numpy())


def test_from_numpy_copies_at_call_time_the_stated_divergence():
    a = np.zeros(3, np.float32)
    t = vkml.from_numpy(a)
    a[1] = 5.0  # torch's tensor shares the array and would see 5.0
    assert t.tolist() == [0.0, 0.0, 0.0]
    b = np.arange(6, dtype=np.float32)[::-2]  # negative strides: copied, not refused
    assert vkml.from_numpy(b).tolist() == b.tolist()


def test_from_numpy_errors_match_torch():
    for bad in ([1, 2], 3.0):
        with pytest.raises(TypeError) as theirs:
            torch.from_numpy(bad)
        with pytest.raises(TypeError) as ours:
            vkml.from_numpy(bad)
        assert str(ours.value) == str(theirs.value)
    with pytest.raises(TypeError, match=r"can't convert np.ndarray of type numpy.str_"):
        vkml.from_numpy(np.array(["a"]))


def test_as_tensor_returns_the_same_tensor_when_nothing_changes(dev):
    x = vkml.ones(3, device=dev, requires_grad=True)
    assert vkml.as_tensor(x) is x and vkml.as_tensor(x, dtype=vkml.float32, device=dev) is x
    y = vkml.as_tensor(x, dtype=vkml.float16)
    assert y.dtype is vkml.float16 and y.requires_grad  # converted with autograd kept, as torch
    moved = vkml.as_tensor(np.array([1, 2]), device=dev)
    assert moved.device is dev and moved.dtype is vkml.int64 and moved.tolist() == [1, 2]
    assert vkml.as_tensor([1.5, 2.5]).dtype is vkml.float32
    assert vkml.as_tensor([1, 2], dtype=vkml.float32).tolist() == [1.0, 2.0]


# ---------------------------------------------------------------------- DLPack


def test_dlpack_exports_cpu_tensors_to_numpy_and_torch():
    t = vkml.tensor([[1, 2], [3, 4]], dtype=vkml.int32)
    assert tuple(map(int, t.__dlpack_device__())) == (1, 0)
    assert np.from_dlpack(t).tolist() == [[1, 2], [3, 4]]
    pt = torch.from_dlpack(t)
    assert pt.dtype == torch.int32 and pt.tolist() == [[1, 2], [3, 4]]
    assert torch.from_dlpack(vkml.tensor([True, False])).tolist() == [True, False]


def test_a_vulkan_tensor_reaches_torch_and_numpy_in_one_call(gpu):
    t = vkml.tensor([1.0, 2.0], device=gpu)
    assert tuple(map(int, t.__dlpack_device__())) == (1, 0)  # kDLCPU: the capsule holds a host copy
    assert torch.from_dlpack(t).tolist() == [1.0, 2.0]
    assert torch.as_tensor(t).tolist() == [1.0, 2.0] and torch.tensor(t).dtype == torch.float32
    assert np.from_dlpack(t).tolist() == [1.0, 2.0]
    assert np.from_dlpack(t, device="cpu").tolist() == [1.0, 2.0]
    back = vkml.from_dlpack(torch.from_dlpack(t)).to(gpu)  # and back, on the Vulkan device
    assert back.device is gpu and back.tolist() == [1.0, 2.0]


def test_dlpack_refuses_what_it_cannot_honour():
    with pytest.raises(BufferError, match="copy=False"):
        vkml.ones(2).__dlpack__(copy=False)
    with pytest.raises(RuntimeError, match="require gradient"):
        vkml.ones(2, requires_grad=True).__dlpack__()


def test_from_dlpack_reads_numpy_torch_and_capsules():
    assert vkml.from_dlpack(np.arange(3, dtype=np.float32)).tolist() == [0.0, 1.0, 2.0]
    from_torch = vkml.from_dlpack(torch.tensor([[1, 2]], dtype=torch.int64))
    assert from_torch.dtype is vkml.int64 and from_torch.tolist() == [[1, 2]]
    assert vkml.from_dlpack(torch.tensor([0.5]).__dlpack__()).tolist() == [0.5]
    t = vkml.ones(2)
    assert vkml.from_dlpack(t).tolist() == [1.0, 1.0]
    with pytest.raises(TypeError, match="from_dlpack"):
        vkml.from_dlpack([1, 2])


def test_dlpack_round_trip_keeps_the_bits(dev):
    values = np.array([0.1, -0.0, np.inf, 1e-30, 65504.0], np.float32)
    t = vkml.tensor(values, device=dev)
    back = vkml.from_dlpack(np.from_dlpack(t, device="cpu"))
    assert back.numpy().tobytes() == values.tobytes()


# ---------------------------------------------------------------------- one-element conversions


def test_one_element_conversions(dev):
    assert [10, 20, 30][vkml.tensor(2, device=dev)] == 30
    assert [10, 20][vkml.tensor([True], device=dev)] == 20
    assert int(vkml.tensor([7], device=dev)) == 7 and float(vkml.tensor(2.5, device=dev)) == 2.5
    assert bool(vkml.tensor([0.0], device=dev)) is False
    assert range(10)[vkml.tensor(3) : vkml.tensor(5)] == range(3, 5)


@pytest.mark.parametrize(
    ("call", "shape_values"),
    [
        (bool, [1, 2]),
        (bool, []),
        (float, [1.0, 2.0]),
        (int, [1, 2]),
        (lambda t: [0, 1][t], [1.0]),
        (lambda t: [0, 1][t], [0, 1]),
    ],
)
def test_one_element_conversion_errors_match_torch(call, shape_values):
    with pytest.raises(Exception) as theirs:
        call(torch.tensor(shape_values))
    with pytest.raises(Exception) as ours:
        call(vkml.tensor(shape_values))
    assert type(ours.value) is type(theirs.value) and str(ours.value) == str(theirs.value)


# ---------------------------------------------------------------------- assert_close


def _failures(vk_args, pt_args, **options):
    """(vkml's message, torch's message) of the same failing comparison."""
    with pytest.raises(AssertionError) as ours:
        vkml.testing.assert_close(*vk_args, **options)
    with pytest.raises(AssertionError) as theirs:
        torch.testing.assert_close(*pt_args, **options)
    return str(ours.value), str(theirs.value)


@pytest.mark.parametrize(
    ("actual", "expected", "options"),
    [
        ([1.0, 2.0, 3.0], [1.0, 2.5, 3.0], {}),
        ([[1, 2], [3, 4]], [[1, 2], [3, 5]], {}),
        ([1.0, 2.0], [1.0, 2.5], {"rtol": 0.0, "atol": 0.0}),
        ([1.0, float("nan")], [1.0, float("nan")], {}),
        ([1.0, 2.0], [1.1, 2.0], {"rtol": 0.01, "atol": 0.01}),
        (2.0, 1.0, {}),
        ([True, False], [True, True], {}),
    ],
)
def test_assert_close_message_starts_as_torch_and_lists_mismatches(actual, expected, options):
    ours, theirs = _failures(
        (vkml.tensor(actual), vkml.tensor(expected)), (torch.tensor(actual), torch.tensor(expected)), **options
    )
    assert ours.startswith(theirs)
    listed = ours[len(theirs) :]
    if np.ndim(actual):
        assert re.search(r"Mismatches.*\(index: actual, expected\): \(", listed)


def test_assert_close_accepts_what_torch_accepts(dev):
    a = vkml.tensor([1.0, float("inf"), 3.0], device=dev)
    vkml.testing.assert_close(a, a * (1 + 1e-7))
    vkml.testing.assert_close(
        vkml.tensor([float("nan")], device=dev), vkml.tensor([float("nan")], device=dev), equal_nan=True
    )
    vkml.testing.assert_close(vkml.tensor([1.0], dtype=vkml.float16), vkml.tensor([1.0009765625], dtype=vkml.float16))
    vkml.testing.assert_close({"w": [a, 1.0]}, {"w": [a, 1.0]})
    vkml.testing.assert_close(vkml.tensor([1, 2]), vkml.tensor([1.0, 2.0]), check_dtype=False)
    vkml.testing.assert_close(a, a.cpu(), check_device=False)


def test_assert_close_checks_and_errors_match_torch(gpu):
    x, px = vkml.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0])
    cases = [
        ((x, vkml.tensor([1.0, 2.0, 3.0])), (px, torch.tensor([1.0, 2.0, 3.0])), "attribute 'shape'"),
        ((x, x.int()), (px, px.int()), "attribute 'dtype'"),
        (([x, x], [x, x + 1]), ([px, px], [px, px + 1]), "item [1]"),
        (({"a": x}, {"a": x + 1}), ({"a": px}, {"a": px + 1}), "item ['a']"),
        (([1.0], [1.0, 2.0]), ([1.0], [1.0, 2.0]), "length of the sequences"),
    ]
    for ours_args, theirs_args, needle in cases:
        ours, theirs = _failures(ours_args, theirs_args)
        assert needle in ours and needle in theirs
    with pytest.raises(AssertionError, match=r"'device' do not match: cpu != vulkan:\d"):
        vkml.testing.assert_close(x, x.to(gpu))
    with pytest.raises(TypeError, match="No comparison pair"):
        vkml.testing.assert_close(x, 1.0)
    with pytest.raises(ValueError, match="'rtol' and 'atol'"):
        vkml.testing.assert_close(x, x, rtol=1e-3)
    with pytest.raises(AssertionError, match="^custom$"):
        vkml.testing.assert_close(x, x + 1, msg="custom")
    with pytest.raises(AssertionError, match="^X: Tensor-likes"):
        vkml.testing.assert_close(x, x + 1, msg=lambda m: "X: " + m)


def test_numpy_force_is_keyword_only_and_gives_torchs_values(dev):
    values = np.array([1.5, -2.0, 3.25], np.float32)
    ours = vkml.tensor(values, device=dev, requires_grad=True)
    theirs = torch.tensor(values, requires_grad=True)
    got, expected = ours.numpy(force=True), theirs.numpy(force=True)
    assert got.dtype == expected.dtype and got.tobytes() == expected.tobytes()
    for tensor in (ours, theirs):  # force is keyword-only in both
        with pytest.raises(TypeError, match="positional argument"):
            tensor.numpy(True)
    with pytest.raises(TypeError) as caught:
        ours.detach().to(vkml.bfloat16).numpy(force=True)
    with pytest.raises(TypeError) as torch_caught:
        theirs.detach().to(torch.bfloat16).numpy(force=True)
    assert str(caught.value).startswith(str(torch_caught.value))


def test_a_numpy_array_right_of_an_operator_is_a_tensor_of_its_dtype():
    # PyTorch's operators take an array on the right (t + a is float64 for a float64 a); its functions,
    # an array on the left and <, > refuse it.
    a = np.array([2.0, 4.0])
    for op in (operator.add, operator.sub, operator.mul, operator.truediv, operator.pow, operator.eq, operator.mod):
        got, want = op(vkml.ones(2) * 3, a), op(torch.ones(2) * 3, a)
        assert isinstance(got, vkml.Tensor) and str(got.dtype)[5:] == str(want.dtype)[6:], op
        assert got.tolist() == want.tolist(), op
    assert isinstance(a == vkml.ones(2), vkml.Tensor)
    with pytest.raises(TypeError):
        a + vkml.ones(2)
    with pytest.raises(TypeError):
        vkml.ones(2) < a  # noqa: B015  (the comparison is what raises)


def test_numpy_ufuncs_on_a_tensor_give_a_tensor_as_pytorch():
    for ufunc in (np.exp, np.abs, lambda x: np.greater(x, 0), lambda x: np.add(x, 1)):
        got, want = ufunc(vkml.tensor([1.0, -2.0])), ufunc(torch.tensor([1.0, -2.0]))
        assert isinstance(got, vkml.Tensor) and str(got.dtype)[5:] == str(want.dtype)[6:]
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
