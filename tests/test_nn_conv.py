"""conv1d/conv2d and nn.Conv1d/Conv2d against PyTorch: forward, input and weight gradients; Vulkan = CPU bits."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from layercheck import check

import vkml
import vkml.nn as nn
import vkml.nn.functional as F

TF = torch.nn.functional
pytestmark = pytest.mark.filterwarnings("ignore:Using padding=.same. with even kernel")


def _arrays(x_shape, w_shape, bias: bool, seed: int = 0):
    g = np.random.default_rng(seed)
    arrays = [g.standard_normal(x_shape).astype(np.float32), g.standard_normal(w_shape).astype(np.float32)]
    if bias:
        arrays.append(g.standard_normal(w_shape[0]).astype(np.float32))
    return arrays


CONV2D = [
    ("plain", (2, 3, 6, 5), (4, 3, 3, 3), True, {}),
    ("stride, pad", (2, 3, 7, 6), (4, 3, 3, 2), True, {"stride": (2, 1), "padding": 1}),
    ("dilation", (1, 2, 7, 7), (3, 2, 3, 3), False, {"dilation": 2, "padding": (2, 1)}),
    ("groups", (2, 4, 5, 5), (6, 2, 3, 3), True, {"groups": 2, "stride": 2}),
    ("depthwise same", (2, 4, 6, 5), (8, 1, 3, 2), True, {"groups": 4, "padding": "same"}),
    ("same dilated even kernel", (1, 2, 6, 6), (2, 2, 4, 2), False, {"padding": "same", "dilation": (1, 2)}),
    ("valid 1x1", (3, 5, 4, 4), (2, 5, 1, 1), True, {"padding": "valid"}),
    ("unbatched", (3, 5, 5), (2, 3, 3, 3), True, {"padding": 1}),
]


@pytest.mark.parametrize(("what", "xs", "ws", "bias", "kwargs"), CONV2D, ids=[c[0] for c in CONV2D])
def test_conv2d_matches_torch_and_vulkan_equals_cpu(what, xs, ws, bias, kwargs, gpu):
    arrays = _arrays(xs, ws, bias)
    check(
        lambda *t: F.conv2d(*t, **kwargs),
        lambda *t: TF.conv2d(*t, **kwargs),
        arrays,
        gpu if what in ("groups", "depthwise same", "stride, pad") else None,
    )


@pytest.mark.parametrize("kwargs", [{}, {"stride": 2, "padding": 2, "dilation": 2}, {"groups": 2, "padding": "same"}])
def test_conv1d_matches_torch(kwargs, gpu):
    arrays = _arrays((2, 4, 9), (6, 4 // kwargs.get("groups", 1), 3), True)
    check(lambda *t: F.conv1d(*t, **kwargs), lambda *t: TF.conv1d(*t, **kwargs), arrays, gpu if kwargs else None)


@pytest.mark.parametrize("mode", ["zeros", "reflect", "replicate", "circular"])
def test_conv2d_module_padding_modes_match_torch(mode, gpu):
    torch.manual_seed(0)
    ref = torch.nn.Conv2d(2, 3, (3, 2), padding=(2, 1), padding_mode=mode)
    layer = nn.Conv2d(2, 3, (3, 2), padding=(2, 1), padding_mode=mode)
    layer.load_state_dict(dict(ref.state_dict()))
    w, b = ref.weight.detach().numpy(), ref.bias.detach().numpy()
    x = np.random.default_rng(1).standard_normal((2, 2, 4, 5)).astype(np.float32)
    check(
        lambda xt, wt, bt: nn.functional_layers._conv("conv2d", xt, wt, bt, 1, (2, 1), 1, 1, 2, mode),
        lambda xt, wt, bt: (
            TF.conv2d(TF.pad(xt, (1, 1, 2, 2), mode="constant" if mode == "zeros" else mode), wt, bt)
            if mode != "zeros"
            else TF.conv2d(xt, wt, bt, padding=(2, 1))
        ),
        [x, w, b],
        gpu if mode == "reflect" else None,
    )
    np.testing.assert_allclose(layer(vkml.tensor(x)).numpy(), ref(torch.tensor(x)).detach().numpy(), atol=1e-5)


def test_conv_modules_default_init_and_repr():
    vkml.manual_seed(0)
    conv = nn.Conv2d(4, 6, 3, groups=2)
    assert conv.weight.shape == (6, 2, 3, 3) and conv.bias.shape == (6,)
    bound = 1 / math.sqrt(2 * 9)  # kaiming_uniform_(a=sqrt(5)) gives ±1/sqrt(fan_in), as the bias's
    assert 0 < np.abs(conv.weight.numpy()).max() <= bound and 0 < np.abs(conv.bias.numpy()).max() <= bound
    assert repr(conv) == repr(torch.nn.Conv2d(4, 6, 3, groups=2))
    assert repr(nn.Conv1d(2, 3, 5, stride=2, padding=1, bias=False)) == repr(
        torch.nn.Conv1d(2, 3, 5, stride=2, padding=1, bias=False)
    )
    assert [n for n, _ in nn.Conv1d(2, 3, 5).named_parameters()] == ["weight", "bias"]
    assert nn.Conv2d(1, 1, 2, bias=False).bias is None


ERRORS = [
    (lambda: F.conv2d(vkml.ones(1, 2, 5, 5), vkml.ones(4, 3, 3, 3)), RuntimeError, "to have 3 channels, but got 2"),
    (lambda: F.conv2d(vkml.ones(1, 3, 5, 5), vkml.ones(4, 3, 3, 3), stride=2, padding="same"), RuntimeError, "strided"),
    (lambda: F.conv2d(vkml.ones(1, 3, 2, 2), vkml.ones(4, 3, 3, 3)), RuntimeError, "Kernel size can't be greater"),
    (lambda: F.conv2d(vkml.ones(1, 4, 5, 5), vkml.ones(3, 2, 3, 3), groups=2), RuntimeError, "divisible by 2"),
    (lambda: F.conv2d(vkml.ones(1, 3, 5, 5), vkml.ones(4, 3, 3, 3), padding="foo"), RuntimeError, "Invalid padding"),
    (lambda: F.conv2d(vkml.ones(1, 3, 5, 5), vkml.ones(4, 3, 3, 3), stride=0), RuntimeError, "non-positive stride"),
    (lambda: F.conv2d(vkml.ones(3, 5, 5), vkml.ones(4, 3, 3)), RuntimeError, "4-dimensional weight"),
    (lambda: nn.Conv2d(3, 4, 3, groups=2), ValueError, "in_channels must be divisible by groups"),
    (lambda: nn.Conv2d(2, 4, 3, padding_mode="mirror"), ValueError, "padding_mode must be one of"),
    (lambda: nn.Conv2d(2, 4, 3, stride=2, padding="same"), ValueError, "strided"),
]


@pytest.mark.parametrize(("call", "error", "match"), ERRORS)
def test_conv_errors_match_torch(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_conv2d_bits_fixed_order():
    """The stated order: each output is the ascending (channel, row, column) sum from -0.0, then + bias."""
    g = np.random.default_rng(7)
    x = g.standard_normal((1, 3, 4, 4)).astype(np.float32)
    w = g.standard_normal((2, 3, 2, 2)).astype(np.float32)
    b = g.standard_normal(2).astype(np.float32)
    got = F.conv2d(vkml.tensor(x), vkml.tensor(w), vkml.tensor(b)).numpy()
    want = np.empty((1, 2, 3, 3), np.float32)
    for o in range(2):
        for i in range(3):
            for j in range(3):
                acc = np.float32(-0.0)
                for c in range(3):
                    for di in range(2):
                        for dj in range(2):
                            acc = np.float32(acc + np.float32(x[0, c, i + di, j + dj] * w[o, c, di, dj]))
                want[0, o, i, j] = np.float32(acc + b[o])
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_conv2d_dtype_rules_match_torch():
    with pytest.raises(RuntimeError, match="expected scalar type Half but found Float"):
        F.conv2d(vkml.ones(1, 1, 3, 3, dtype=vkml.float16), vkml.ones(1, 1, 2, 2))
    with pytest.raises(RuntimeError, match=r"Input type \(float32\) and bias type \(float16\) should be the same"):
        F.conv2d(vkml.ones(1, 1, 3, 3), vkml.ones(1, 1, 2, 2), vkml.ones(1, dtype=vkml.float16))
    # float16: products and sums in float32, one rounding (PyTorch's CPU kernel gives the same here)
    g = np.random.default_rng(0)
    x, w = g.standard_normal((2, 3, 6, 6)).astype(np.float16), g.standard_normal((4, 3, 3, 3)).astype(np.float16)
    got = F.conv2d(vkml.tensor(x), vkml.tensor(w), padding=1)
    want = TF.conv2d(torch.tensor(x).float(), torch.tensor(w).float(), padding=1).half().numpy()
    assert got.dtype is vkml.float16
    np.testing.assert_allclose(got.numpy().astype(np.float32), want.astype(np.float32), rtol=1e-3, atol=1e-3)


PADS = [
    ((2, 3, 4), (1, 2), "reflect"),
    ((2, 3, 4), (3, 2), "reflect"),
    ((1, 2, 3, 4), (1, 2, 2, 1), "reflect"),
    ((2, 3, 4), (2, 1, 3, 0), "replicate"),
    ((2, 3, 4), (1, -1), "replicate"),
    ((1, 2, 3, 4), (4, 2, 3, 3), "circular"),
    ((1, 1, 2, 3, 4), (1, 1, 1, 1, 1, 1), "replicate"),
]


@pytest.mark.parametrize(("shape", "pad", "mode"), PADS)
def test_pad_modes_match_torch(shape, pad, mode, gpu):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    # values are copied (exact); gradients add up to four copies' in another order than PyTorch
    check(lambda t: F.pad(t, pad, mode), lambda t: TF.pad(t, pad, mode), [x], gpu if mode == "circular" else None)
    np.testing.assert_array_equal(F.pad(vkml.tensor(x), pad, mode).numpy(), TF.pad(torch.tensor(x), pad, mode).numpy())


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: F.pad(vkml.ones(3), (1, 1), "reflect"), NotImplementedError, "Padding size 2 is not supported"),
        (lambda: F.pad(vkml.ones(1, 3, 3), (3, 1), "reflect"), RuntimeError, "should be less than"),
        (lambda: F.pad(vkml.ones(1, 3, 3), (4, 1), "circular"), RuntimeError, "wrapping around more than once"),
        (lambda: F.pad(vkml.ones(1, 3, 3), (1, 1), "foo"), NotImplementedError, "Unrecognised padding mode foo"),
        (lambda: F.pad(vkml.ones(1, 3, 3), (1, 1), "reflect", 2.0), RuntimeError, "doesn't take in value"),
    ],
)
def test_pad_mode_errors_match_torch(call, error, match):
    with pytest.raises(error, match=match):
        call()


FOLDS = [
    ((2, 3, 5, 6), {"kernel_size": 2}),
    ((1, 2, 7, 6), {"kernel_size": (3, 2), "stride": (2, 1), "padding": 1, "dilation": (1, 2)}),
    ((2, 5, 5), {"kernel_size": 3, "padding": 1}),
]


@pytest.mark.parametrize(("shape", "kwargs"), FOLDS)
def test_unfold_and_fold_match_torch(shape, kwargs, gpu):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    (cols,), _ = check(lambda t: F.unfold(t, **kwargs), lambda t: TF.unfold(t, **kwargs), [x], gpu)
    size = shape[-2:]
    check(lambda t: F.fold(t, size, **kwargs), lambda t: TF.fold(t, size, **kwargs), [cols], gpu, rtol=1e-6, atol=1e-6)


def test_fold_errors_match_torch():
    with pytest.raises(RuntimeError, match=r"divisible by the product of kernel_size, but got input.size\(1\)=7"):
        F.fold(vkml.ones(1, 7, 9), (4, 4), 2)
    with pytest.raises(RuntimeError, match="must be at least one"):
        F.unfold(vkml.ones(1, 1, 2, 2), 3)
    with pytest.raises(RuntimeError, match="Expected 3D or 4D"):
        F.unfold(vkml.ones(4, 4), 2)


def test_conv_default_init_is_pytorchs_recipe():
    """kaiming_uniform_(a=sqrt(5)) on the weight, then the bias uniform in ±1/sqrt(fan_in): the same draws."""
    vkml.manual_seed(4)
    conv = nn.Conv2d(3, 5, (3, 2))
    vkml.manual_seed(4)
    w, b = vkml.zeros(5, 3, 3, 2), vkml.zeros(5)
    nn.init.kaiming_uniform_(w, a=math.sqrt(5))
    nn.init.uniform_(b, -1 / math.sqrt(18), 1 / math.sqrt(18))
    np.testing.assert_array_equal(conv.weight.numpy(), w.numpy())
    np.testing.assert_array_equal(conv.bias.numpy(), b.numpy())


def test_conv_same_padding_with_padding_mode_matches_torch():
    torch.manual_seed(0)
    ref = torch.nn.Conv2d(2, 4, 3, padding="same", padding_mode="reflect", dilation=2)
    layer = nn.Conv2d(2, 4, 3, padding="same", padding_mode="reflect", dilation=2)
    layer.load_state_dict(dict(ref.state_dict()))
    assert repr(layer) == repr(ref)
    x = np.random.default_rng(0).standard_normal((2, 2, 7, 7)).astype(np.float32)
    np.testing.assert_allclose(layer(vkml.tensor(x)).numpy(), ref(torch.tensor(x)).detach().numpy(), atol=1e-5)
    assert repr(nn.Conv1d(2, 4, 3, padding="valid")) == repr(torch.nn.Conv1d(2, 4, 3, padding="valid"))
