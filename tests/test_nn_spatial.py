"""Spatial layers of issue 18 against PyTorch: conv3d, transposed convolutions, 3-D and adaptive 1-D/3-D
pools, interpolate and Upsample, pixel and channel shuffles, Fold/Unfold. Forward and every input's
gradient on the CPU backend within float32 tolerance of torch's; Vulkan (lavapipe) bits equal the CPU's."""

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


def _x(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# ---------------------------------------------------------------------- convolution

CONV3D = [
    ("plain", (2, 3, 4, 5, 4), (4, 3, 2, 3, 2), {}),
    (
        "stride pad dilation",
        (1, 2, 7, 6, 5),
        (3, 2, 3, 2, 2),
        {"stride": (2, 1, 2), "padding": (1, 0, 1), "dilation": 2},
    ),
    ("groups same", (2, 4, 4, 5, 3), (6, 2, 3, 3, 2), {"groups": 2, "padding": "same"}),
    ("unbatched", (3, 4, 4, 4), (2, 3, 3, 3, 3), {"padding": 1}),
]


@pytest.mark.parametrize(("what", "xs", "ws", "kwargs"), CONV3D, ids=[c[0] for c in CONV3D])
def test_conv3d_matches_torch(what, xs, ws, kwargs, gpu):
    arrays = [_x(xs), _x(ws, 1), _x(ws[:1], 2)]
    check(
        lambda *t: F.conv3d(*t, **kwargs),
        lambda *t: TF.conv3d(*t, **kwargs),
        arrays,
        gpu if what == "groups same" else None,
    )


TRANSPOSED = [
    ("1d stride pad out_pad", 1, (2, 4, 7), (4, 3, 3), {"stride": 2, "padding": 1, "output_padding": 1}),
    ("1d groups dilation", 1, (2, 4, 5), (4, 2, 3), {"stride": 3, "dilation": 2, "groups": 2, "output_padding": 2}),
    ("2d mixed", 2, (2, 4, 5, 6), (4, 3, 3, 2), {"stride": (2, 1), "padding": (1, 0), "output_padding": (1, 0)}),
    (
        "2d groups dilated",
        2,
        (2, 4, 5, 5),
        (4, 2, 3, 3),
        {"groups": 2, "dilation": 2, "padding": 2, "output_padding": 1},
    ),
    ("2d unbatched", 2, (3, 4, 5), (3, 2, 2, 2), {"stride": 2}),
    ("2d crop past kernel", 2, (1, 2, 6, 6), (2, 3, 3, 3), {"padding": 3}),
    (
        "3d",
        3,
        (1, 2, 3, 4, 3),
        (2, 2, 2, 3, 2),
        {"stride": (2, 1, 2), "padding": (0, 1, 1), "output_padding": (1, 0, 0)},
    ),
]


@pytest.mark.parametrize(("what", "n", "xs", "ws", "kwargs"), TRANSPOSED, ids=[c[0] for c in TRANSPOSED])
def test_conv_transpose_matches_torch(what, n, xs, ws, kwargs, gpu):
    fn, ref = getattr(F, f"conv_transpose{n}d"), getattr(TF, f"conv_transpose{n}d")
    arrays = [_x(xs), _x(ws, 1), _x((ws[1] * kwargs.get("groups", 1),), 2)]
    check(
        lambda *t: fn(*t, **kwargs),
        lambda *t: ref(*t, **kwargs),
        arrays,
        gpu if what in ("1d groups dilation", "3d") else None,
    )


def test_conv_transpose_without_bias_is_the_gradient_of_conv():
    """conv_transpose2d(g, w) is d(conv2d(x, w))/dx applied to g, as its definition says."""
    x, w = _x((2, 3, 7, 6)), _x((4, 3, 3, 2), 1)
    kwargs = {"stride": 2, "padding": 1, "dilation": (1, 2)}
    xt = vkml.tensor(x, requires_grad=True)
    out = F.conv2d(xt, vkml.tensor(w), **kwargs)
    up = _x(tuple(out.shape), 3)
    out.backward(vkml.tensor(up))
    extra = tuple(
        s - t for s, t in zip(x.shape[2:], TF.conv_transpose2d(torch.tensor(up), torch.tensor(w), **kwargs).shape[2:])
    )
    got = F.conv_transpose2d(vkml.tensor(up), vkml.tensor(w), output_padding=extra, **kwargs)
    np.testing.assert_allclose(got.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_conv_transpose_modules_output_size_init_and_repr(n):
    torch.manual_seed(0)
    kwargs = {"stride": 2, "padding": 1, "groups": 2}
    ref = getattr(torch.nn, f"ConvTranspose{n}d")(4, 6, 3, **kwargs)
    layer = getattr(nn, f"ConvTranspose{n}d")(4, 6, 3, **kwargs)
    assert repr(layer) == repr(ref)
    assert layer.weight.shape == tuple(ref.weight.shape) == (4, 3) + (3,) * n
    assert [name for name, _ in layer.named_parameters()] == ["weight", "bias"]
    layer.load_state_dict(dict(ref.state_dict()))
    x = _x((2, 4) + (4,) * n)
    size = [8] * n  # one more than the smallest output, (4 - 1)·2 - 2 + 3 = 7
    want = ref(torch.tensor(x), output_size=size).detach().numpy()
    got = layer(vkml.tensor(x), output_size=size).numpy()
    assert got.shape == want.shape == (2, 6) + (8,) * n
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="valid sizes range from"):
        layer(vkml.tensor(x), output_size=[9] * n)
    # init: kaiming_uniform_(a=sqrt(5)) on (in, out/groups, k...), then the bias uniform in ±1/sqrt(fan_in),
    # fan_in = out/groups · prod(kernel): the same draws
    vkml.manual_seed(1)
    fresh = getattr(nn, f"ConvTranspose{n}d")(4, 6, 3, **kwargs)
    vkml.manual_seed(1)
    w, b = vkml.zeros(4, 3, *(3,) * n), vkml.zeros(6)
    nn.init.kaiming_uniform_(w, a=math.sqrt(5))
    bound = 1 / math.sqrt(3 * 3**n)
    nn.init.uniform_(b, -bound, bound)
    np.testing.assert_array_equal(fresh.weight.numpy(), w.numpy())
    np.testing.assert_array_equal(fresh.bias.numpy(), b.numpy())
    assert 0 < np.abs(w.numpy()).max() <= bound


def test_float16_convolutions_round_as_pytorch():
    g = np.random.default_rng(0)
    x, w = g.standard_normal((2, 3, 5, 4)).astype(np.float16), g.standard_normal((3, 2, 3, 3)).astype(np.float16)
    b = g.standard_normal(2).astype(np.float16)
    # PyTorch's CPU kernel rounds each block to float16 and adds the overlapping blocks in float16 (col2im)
    got = F.conv_transpose2d(vkml.tensor(x), vkml.tensor(w), vkml.tensor(b), stride=2, padding=1)
    want = TF.conv_transpose2d(torch.tensor(x), torch.tensor(w), torch.tensor(b), stride=2, padding=1)
    assert got.dtype is vkml.float16
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    x3, w3 = x.reshape(2, 3, 5, 2, 2), g.standard_normal((2, 3, 2, 2, 2)).astype(np.float16)
    got = F.conv3d(vkml.tensor(x3), vkml.tensor(w3), padding=1)
    want = TF.conv3d(torch.tensor(x3).float(), torch.tensor(w3).float(), padding=1).half()
    assert got.dtype is vkml.float16
    np.testing.assert_allclose(got.numpy().astype(np.float32), want.float().numpy(), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("mode", ["zeros", "reflect", "replicate", "circular"])
def test_conv3d_module_padding_modes_match_torch(mode):
    torch.manual_seed(0)
    ref = torch.nn.Conv3d(2, 4, (3, 2, 2), stride=(1, 2, 1), padding=1, padding_mode=mode)
    layer = nn.Conv3d(2, 4, (3, 2, 2), stride=(1, 2, 1), padding=1, padding_mode=mode)
    assert repr(layer) == repr(ref)
    layer.load_state_dict(dict(ref.state_dict()))
    x = _x((2, 2, 4, 5, 3))
    np.testing.assert_allclose(layer(vkml.tensor(x)).numpy(), ref(torch.tensor(x)).detach().numpy(), atol=1e-5)


# ---------------------------------------------------------------------- pooling

POOL3D = [
    ("kernel only", (2, 2, 4, 6, 4), (2,), {}),
    (
        "stride pad dilation ceil",
        (1, 2, 7, 6, 5),
        ((3, 2, 2),),
        {"stride": 2, "padding": 1, "dilation": (2, 1, 1), "ceil_mode": True},
    ),
    ("unbatched", (2, 5, 5, 5), (3, 2, 1), {}),
]


@pytest.mark.parametrize(("what", "shape", "args", "kwargs"), POOL3D, ids=[c[0] for c in POOL3D])
def test_max_pool3d_matches_torch(what, shape, args, kwargs, gpu):
    x = np.round(_x(shape) * 2) / 2  # ties: the gradient goes to the first maximum, as PyTorch's
    check(
        lambda t: F.max_pool3d(t, *args, return_indices=True, **kwargs),
        lambda t: TF.max_pool3d(t, *args, return_indices=True, **kwargs),
        [x.astype(np.float32)],
        gpu if what == "stride pad dilation ceil" else None,
    )


AVG3D = [
    ("kernel only", (2, 2, 4, 4, 2), (2,), {}),
    ("pad not counted ceil", (1, 1, 5, 4, 3), (2, 2, 1), {"ceil_mode": True, "count_include_pad": False}),
    ("divisor", (2, 4, 3, 4), ((2, 3, 2), 1, (1, 1, 0)), {"divisor_override": 5}),
]


@pytest.mark.parametrize(("what", "shape", "args", "kwargs"), AVG3D, ids=[c[0] for c in AVG3D])
def test_avg_pool3d_matches_torch(what, shape, args, kwargs, gpu):
    check(
        lambda t: F.avg_pool3d(t, *args, **kwargs),
        lambda t: TF.avg_pool3d(t, *args, **kwargs),
        [_x(shape)],
        gpu if what == "pad not counted ceil" else None,
        rtol=1e-6,
        atol=1e-6,
    )


ADAPTIVE = [
    (1, (2, 3, 7), 3),
    (1, (3, 8), (4,)),
    (1, (2, 3, 5), 1),
    (3, (2, 2, 5, 6, 7), (2, 3, 4)),
    (3, (2, 4, 6, 3), (2, None, 3)),
    (3, (1, 2, 4, 4, 4), 2),
]


@pytest.mark.parametrize(("n", "shape", "size"), ADAPTIVE)
def test_adaptive_pools_1d_3d_match_torch(n, shape, size, gpu):
    x = _x(shape)
    device = gpu if (n, size) in ((1, 3), (3, (2, 3, 4))) else None
    avg, ref_avg = getattr(F, f"adaptive_avg_pool{n}d"), getattr(TF, f"adaptive_avg_pool{n}d")
    mx, ref_max = getattr(F, f"adaptive_max_pool{n}d"), getattr(TF, f"adaptive_max_pool{n}d")
    check(lambda t: avg(t, size), lambda t: ref_avg(t, size), [x], device, rtol=1e-6, atol=1e-6)
    check(lambda t: mx(t, size, return_indices=True), lambda t: ref_max(t, size, return_indices=True), [x], device)
    layer, ref = getattr(nn, f"AdaptiveMaxPool{n}d")(size), getattr(torch.nn, f"AdaptiveMaxPool{n}d")(size)
    assert repr(layer) == repr(ref)
    np.testing.assert_array_equal(layer(vkml.tensor(x)).numpy(), ref(torch.tensor(x)).numpy())


def test_pool3d_modules_match_torch():
    x = _x((2, 2, 4, 5, 4))
    for name, args, kwargs in [
        ("MaxPool3d", ((2, 3, 2), 2, 1), {"ceil_mode": True}),
        ("AvgPool3d", ((3, 2, 2), 2, 1), {"count_include_pad": False}),
        ("AdaptiveAvgPool3d", ((2, 3, 1),), {}),
        ("AdaptiveAvgPool1d", (4,), {}),
    ]:
        layer, ref = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
        assert repr(layer) == repr(ref)
        data = x[0, 0] if name.endswith("1d") else x
        np.testing.assert_allclose(
            layer(vkml.tensor(data)).numpy(), ref(torch.tensor(data)).numpy(), rtol=1e-6, atol=1e-6
        )


# ---------------------------------------------------------------------- interpolate

NEAREST = [
    (mode, dims, size, kwargs)
    for mode in ("nearest", "nearest-exact")
    for dims, size in ((1, 5), (2, 5), (3, 4))
    for kwargs in (
        {"size": 3},
        {"size": 11},
        {"scale_factor": 2},
        {"scale_factor": 1.1},  # 5 -> 5: PyTorch's 2-D nearest copies, its 1-D and 3-D ones do not
        {"scale_factor": 2.1},  # 5 -> 10: PyTorch's 2-D nearest takes i // 2
        {"scale_factor": 0.7},
        {"scale_factor": 2.7, "recompute_scale_factor": True},
    )
]


@pytest.mark.parametrize(("mode", "dims", "size", "kwargs"), NEAREST)
def test_nearest_modes_give_torchs_bits(mode, dims, size, kwargs):
    x = _x((2, 3) + (size,) * dims)
    got = F.interpolate(vkml.tensor(x), mode=mode, **kwargs).numpy()
    want = TF.interpolate(torch.tensor(x), mode=mode, **kwargs).numpy()
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("ac", [False, True])
@pytest.mark.parametrize(
    ("size", "kwargs"),
    [
        (4, {"size": 3}),
        (4, {"size": 9}),
        (7, {"scale_factor": 1.7}),
        (7, {"scale_factor": 0.6}),
        (5, {"scale_factor": 2.5, "recompute_scale_factor": True}),
        (61, {"size": 147}),
    ],
)
def test_linear_source_indices_and_weights_are_torchs_bits(size, kwargs, ac):
    """A one-hot input gives each output's two weights exactly (products by 1, an exact zero, one sum):
    PyTorch's bits, its float32 source index (a fused multiply-add) included."""
    eye = np.eye(size, dtype=np.float32).reshape(size, 1, size)
    got = F.interpolate(vkml.tensor(eye), mode="linear", align_corners=ac, **kwargs).numpy()
    want = TF.interpolate(torch.tensor(eye), mode="linear", align_corners=ac, **kwargs).numpy()
    np.testing.assert_array_equal(got, want)


RESAMPLE = [
    ("nearest 1d", (2, 3, 5), {"scale_factor": 2.5, "mode": "nearest"}),
    ("nearest 2d by views", (2, 3, 4, 5), {"size": (8, 7), "mode": "nearest"}),  # rows repeat twice: views
    ("nearest-exact 3d", (1, 2, 3, 4, 5), {"size": (5, 3, 7), "mode": "nearest-exact"}),
    ("linear", (2, 3, 7), {"size": 12, "mode": "linear"}),
    ("bilinear", (2, 2, 5, 6), {"scale_factor": (1.5, 0.7), "mode": "bilinear"}),
    ("bilinear corners", (2, 2, 5, 6), {"size": (9, 4), "mode": "bilinear", "align_corners": True}),
    ("bicubic", (1, 2, 6, 5), {"scale_factor": 1.7, "mode": "bicubic"}),
    ("bicubic corners", (1, 2, 6, 5), {"size": (4, 9), "mode": "bicubic", "align_corners": True}),
    ("trilinear", (1, 2, 3, 4, 5), {"scale_factor": (2, 1.5, 0.8), "mode": "trilinear"}),
    ("area", (2, 3, 7, 5), {"size": (3, 4), "mode": "area"}),
]


@pytest.mark.parametrize(("what", "shape", "kwargs"), RESAMPLE, ids=[c[0] for c in RESAMPLE])
def test_interpolate_forward_and_gradient_match_torch(what, shape, kwargs, gpu):
    check(
        lambda t: F.interpolate(t, **kwargs),
        lambda t: TF.interpolate(t, **kwargs),
        [_x(shape)],
        gpu if what in ("nearest 2d by views", "bicubic", "trilinear") else None,
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"size": 5, "mode": "linear"},  # equal sizes: PyTorch still computes 1·x + 0·x, so inf gives NaN
        {"size": 7, "mode": "linear"},
        {"size": (2, 5), "mode": "bilinear"},
        {"size": (3, 4), "mode": "bicubic", "align_corners": True},
        {"size": (3, 7), "mode": "nearest-exact"},
    ],
)
def test_interpolate_nan_and_inf_as_torch(kwargs):
    x = _x((1, 2, 2, 5) if kwargs["mode"] != "linear" else (1, 2, 5))
    x.reshape(-1)[[1, 3, 6]] = [np.inf, -np.inf, np.nan]
    got = F.interpolate(vkml.tensor(x), **kwargs).numpy()
    want = TF.interpolate(torch.tensor(x), **kwargs).numpy()
    for kind in (np.isnan, np.isposinf, np.isneginf):
        np.testing.assert_array_equal(kind(got), kind(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-5, atol=1e-6)


def test_interpolate_float16_computes_in_float32_and_rounds_once():
    x = _x((1, 2, 5, 6)).astype(np.float16)
    got = F.interpolate(vkml.tensor(x), scale_factor=1.5, mode="bilinear")
    assert got.dtype is vkml.float16
    want = TF.interpolate(torch.tensor(x).float(), scale_factor=1.5, mode="bilinear").half().numpy()
    np.testing.assert_allclose(got.numpy().astype(np.float32), want.astype(np.float32), rtol=1e-3, atol=1e-3)


def test_upsample_modules_match_torch():
    x = _x((2, 3, 4, 5))
    for name, args, kwargs in [
        ("Upsample", (), {"scale_factor": 2}),
        ("Upsample", (), {"size": (3, 7), "mode": "bilinear"}),
        ("Upsample", (), {"scale_factor": (1.5, 2), "mode": "bicubic", "align_corners": True}),
        ("UpsamplingNearest2d", (), {"scale_factor": 3}),
        ("UpsamplingBilinear2d", ((6, 9),), {}),
    ]:
        layer, ref = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
        assert repr(layer) == repr(ref)
        np.testing.assert_allclose(layer(vkml.tensor(x)).numpy(), ref(torch.tensor(x)).numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("upsample", {"scale_factor": 2, "mode": "bicubic"}),
        ("upsample_nearest", {"size": 7}),
        ("upsample_bilinear", {"size": (3, 8)}),
    ],
)
def test_deprecated_upsample_functions_warn_and_match_torch(name, kwargs):
    x = _x((1, 2, 4, 5))
    with pytest.warns(UserWarning, match=f"nn.functional.{name}` is deprecated"):
        got = getattr(F, name)(vkml.tensor(x), **kwargs)
    with pytest.warns(UserWarning, match=f"nn.functional.{name}` is deprecated"):
        want = getattr(TF, name)(torch.tensor(x), **kwargs)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------- shuffles, fold


@pytest.mark.parametrize("shape", [(2, 8, 3, 2), (9, 2, 3), (2, 1, 18, 2, 1)])
def test_pixel_shuffles_match_torch(shape, gpu):
    r = 2 if shape[-3] % 4 == 0 else 3
    x = _x(shape)
    (out,), _ = check(lambda t: F.pixel_shuffle(t, r), lambda t: TF.pixel_shuffle(t, r), [x], gpu if r == 3 else None)
    check(lambda t: F.pixel_unshuffle(t, r), lambda t: TF.pixel_unshuffle(t, r), [out], None, rtol=0, atol=0)
    layer, ref = nn.PixelShuffle(r), torch.nn.PixelShuffle(r)
    assert repr(layer) == repr(ref) and repr(nn.PixelUnshuffle(r)) == repr(torch.nn.PixelUnshuffle(r))
    np.testing.assert_array_equal(layer(vkml.tensor(x)).numpy(), ref(torch.tensor(x)).numpy())


def test_channel_shuffle_matches_torch(gpu):
    x = _x((2, 6, 3, 2))
    check(lambda t: F.channel_shuffle(t, 3), lambda t: TF.channel_shuffle(t, 3), [x], gpu, rtol=0, atol=0)
    layer, ref = nn.ChannelShuffle(2), torch.nn.ChannelShuffle(2)
    assert repr(layer) == repr(ref)
    np.testing.assert_array_equal(layer(vkml.tensor(x[:, :, 0])).numpy(), ref(torch.tensor(x[:, :, 0])).numpy())


def test_fold_unfold_modules_match_torch():
    x = _x((2, 3, 6, 5))
    kwargs = {"kernel_size": (2, 3), "dilation": (2, 1), "padding": 1, "stride": (1, 2)}
    unfold, ref_unfold = nn.Unfold(**kwargs), torch.nn.Unfold(**kwargs)
    fold, ref_fold = nn.Fold((6, 5), **kwargs), torch.nn.Fold((6, 5), **kwargs)
    assert repr(unfold) == repr(ref_unfold) and repr(fold) == repr(ref_fold)
    cols = unfold(vkml.tensor(x))
    np.testing.assert_array_equal(cols.numpy(), ref_unfold(torch.tensor(x)).numpy())
    np.testing.assert_allclose(fold(cols).numpy(), ref_fold(torch.tensor(cols.numpy())).numpy(), rtol=1e-6)


# ---------------------------------------------------------------------- sampling grids


def _grid(shape, seed=1):
    grid = _x(shape, seed) * 0.8
    grid.reshape(-1, shape[-1])[:3] = [[1.3, -1.7, 0.2][: shape[-1]], [-1.0, 1.0, 1.0][: shape[-1]], [0.0] * shape[-1]]
    return grid.astype(np.float32)  # beyond the edges, exactly on them, the centre


GRID_SAMPLE = [
    (mode, padding, ac)
    for mode in ("bilinear", "nearest", "bicubic")
    for padding in ("zeros", "border", "reflection")
    for ac in (False, True)
]


@pytest.mark.parametrize(("mode", "padding_mode", "align_corners"), GRID_SAMPLE)
def test_grid_sample_2d_matches_torch(mode, padding_mode, align_corners, gpu):
    kwargs = {"mode": mode, "padding_mode": padding_mode, "align_corners": align_corners}
    check(
        lambda x, g: F.grid_sample(x, g, **kwargs),
        lambda x, g: TF.grid_sample(x, g, **kwargs),
        [_x((2, 3, 5, 6)), _grid((2, 4, 7, 2))],
        gpu if (mode, padding_mode, align_corners) == ("bicubic", "reflection", False) else None,
        grad=[True, mode != "nearest"],  # nearest: PyTorch's grid gradient is zero, vkml's grid gets none
    )


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_3d_matches_torch(padding_mode, gpu):
    kwargs = {"padding_mode": padding_mode, "align_corners": padding_mode == "border"}
    check(
        lambda x, g: F.grid_sample(x, g, **kwargs),
        lambda x, g: TF.grid_sample(x, g, **kwargs),
        [_x((1, 2, 3, 4, 5)), _grid((1, 2, 3, 4, 3))],
        gpu if padding_mode == "zeros" else None,
    )


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("size", [(2, 3, 5, 4), (2, 1, 3, 2, 4)])
def test_affine_grid_matches_torch(size, align_corners, gpu):
    n = len(size) - 2
    check(
        lambda t: F.affine_grid(t, size, align_corners=align_corners),
        lambda t: TF.affine_grid(t, size, align_corners=align_corners),
        [_x((2, n, n + 1))],
        gpu if n == 3 and align_corners else None,
    )


def test_affine_grid_warns_for_unit_size_with_align_corners_as_torch():
    theta = _x((1, 2, 3))
    with pytest.warns(UserWarning, match="unit-size grids"):
        got = F.affine_grid(vkml.tensor(theta), (1, 1, 1, 3), align_corners=True)
    with pytest.warns(UserWarning, match="unit-size grids"):
        want = TF.affine_grid(torch.tensor(theta), (1, 1, 1, 3), align_corners=True)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)


def test_grid_functions_warn_without_align_corners_and_sample_nan_as_torch():
    x, theta = _x((1, 2, 4, 4)), np.array([[[0.9, 0.1, 0.0], [-0.2, 1.1, 0.1]]], np.float32)
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        grid = F.affine_grid(vkml.tensor(theta), (1, 2, 3, 3))
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        got = F.grid_sample(vkml.tensor(x), grid)
    want = TF.grid_sample(
        torch.tensor(x), TF.affine_grid(torch.tensor(theta), (1, 2, 3, 3), False), align_corners=False
    )
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    nan_grid = np.zeros((1, 1, 2, 2), np.float32)
    nan_grid[0, 0, 0, 0] = np.nan
    for mode in ("bilinear", "nearest", "bicubic"):
        got = F.grid_sample(vkml.tensor(x), vkml.tensor(nan_grid), mode=mode, align_corners=False).numpy()
        want = TF.grid_sample(torch.tensor(x), torch.tensor(nan_grid), mode=mode, align_corners=False).numpy()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))


@pytest.mark.parametrize(
    "call",
    [
        lambda x: F.pixel_shuffle(x, 1),
        lambda x: F.pixel_unshuffle(x, 1),
        lambda x: F.channel_shuffle(x, 1),
        lambda x: F.channel_shuffle(x, 4),
        lambda x: F.interpolate(x, size=(2, 2)),
        lambda x: F.interpolate(x[0], size=2, mode="nearest-exact"),
        lambda x: F.unfold(x, 1),
        lambda x: F.fold(x.reshape(1, 4, 4), (2, 2), 1),
        lambda x: nn.Upsample(scale_factor=1)(x),
    ],
)
def test_results_never_share_the_inputs_storage(call):
    """As PyTorch's, these layers return new tensors, also where the arithmetic is only a reshape: an
    in-place op on the result leaves the input alone."""
    x = vkml.arange(16.0).reshape(1, 4, 2, 2).clone()
    before = x.numpy().copy()
    call(x).add_(100.0)
    np.testing.assert_array_equal(x.numpy(), before)


# ---------------------------------------------------------------------- errors

ERRORS = [
    (
        lambda: F.conv_transpose2d(vkml.ones(1, 2, 5, 5), vkml.ones(4, 3, 3, 3)),
        RuntimeError,
        "to have 4 channels, but got 2",
    ),
    (
        lambda: F.conv_transpose2d(vkml.ones(1, 4, 5, 5), vkml.ones(4, 3, 3, 3), stride=2, output_padding=2),
        RuntimeError,
        "output padding must be smaller than either stride or dilation",
    ),
    (
        lambda: F.conv_transpose2d(vkml.ones(1, 4, 5, 5), vkml.ones(4, 3, 3, 3), groups=3),
        RuntimeError,
        "divisible by 3",
    ),
    (
        lambda: F.conv_transpose2d(vkml.ones(1, 4, 5, 5), vkml.ones(4, 3, 3, 3), padding=-1),
        RuntimeError,
        "negative padding",
    ),
    (
        lambda: F.conv_transpose2d(vkml.ones(1, 4, 2, 2), vkml.ones(4, 3, 3, 3), padding=3),
        RuntimeError,
        "Output size is too small",
    ),
    (
        lambda: F.conv_transpose2d(vkml.ones(1, 4, 5, 5), vkml.ones(4, 3, 3, 3), stride=0),
        RuntimeError,
        "non-positive stride",
    ),
    (
        lambda: F.conv_transpose2d(vkml.ones(1, 4, 5, 5), vkml.ones(4, 3, 3, 3), vkml.ones(4)),
        RuntimeError,
        "expected bias to be 1-dimensional with 3 elements",
    ),
    (lambda: F.conv_transpose2d(vkml.ones(4, 5), vkml.ones(4, 3, 3, 3)), RuntimeError, "Expected 3D .unbatched. or 4D"),
    (lambda: nn.ConvTranspose2d(2, 4, 3, padding_mode="reflect"), ValueError, 'Only "zeros" padding mode'),
    (lambda: nn.ConvTranspose2d(2, 4, 3, padding="same"), TypeError, "padding must be an int or a tuple"),
    (
        lambda: nn.ConvTranspose1d(2, 4, 3)(vkml.ones(2, 5), output_size=(1, 2, 3, 4)),
        ValueError,
        "output_size must have 1 or 2",
    ),
    (lambda: F.conv3d(vkml.ones(1, 4, 5, 5), vkml.ones(4, 4, 3, 3, 3)), RuntimeError, "to have 4 channels, but got 1"),
    (lambda: F.max_pool3d(vkml.ones(5, 5, 5), 2), RuntimeError, "4D or 5D"),
    (lambda: F.avg_pool3d(vkml.ones(1, 1, 4, 4, 4), 2, divisor_override=0), RuntimeError, "divisor must be not zero"),
    (lambda: F.adaptive_avg_pool3d(vkml.ones(4, 5, 5), 2), RuntimeError, "Expected 4D or 5D tensor"),
    (lambda: F.adaptive_max_pool1d(vkml.ones(5), 2), RuntimeError, "Expected 2D or 3D tensor"),
    (lambda: F.adaptive_max_pool1d(vkml.ones(1, 5), (2, 3)), RuntimeError, "should contain 1 ints"),
    (lambda: F.adaptive_avg_pool1d(vkml.ones(1, 4), -1), RuntimeError, "greater than or equal to 0"),
    (lambda: F.adaptive_avg_pool1d(vkml.ones(1, 0), 2), RuntimeError, "non-zero size for non-batch dimensions"),
    (
        lambda: F.adaptive_max_pool1d(vkml.ones(1, 4, dtype=vkml.int64), 2),
        NotImplementedError,
        "not implemented for 'Long'",
    ),
    (lambda: F.adaptive_avg_pool3d(vkml.ones(1, 2, 2, 2, dtype=vkml.int32), 1), NotImplementedError, "for 'Int'"),
    (lambda: F.interpolate(vkml.ones(1, 1, 4, 4), size=0), RuntimeError, r"output \(H: 0, W: 0\)"),
    (lambda: F.interpolate(vkml.ones(1, 1, 4, 4), size=(2, 3, 4)), ValueError, "same number of spatial dimensions"),
    (lambda: F.interpolate(vkml.ones(1, 1, 4, 4), size=(2.0, 3)), TypeError, "expected size to be one of int"),
    (lambda: F.interpolate(vkml.ones(1, 1, 4, 4), size=3, mode="foo"), NotImplementedError, r"\(got foo\)"),
    (lambda: F.interpolate(vkml.ones(1, 1, 4, 4), size=3, mode="linear"), NotImplementedError, "needs 3D input"),
    (lambda: F.interpolate(vkml.ones(2, 3), size=3), NotImplementedError, r"\(got 2D\)"),
    (
        lambda: F.interpolate(vkml.ones(1, 2, 3), size=3, mode="bicubic"),
        NotImplementedError,
        r"\(got 3D\) .*\(got bicubic\)",
    ),
    (lambda: F.interpolate(vkml.ones(1, 1, 4, 4), size=3, recompute_scale_factor=True), ValueError, "not meaningful"),
    (lambda: F.interpolate(vkml.ones(1, 1, 4, 4), size=3, align_corners=True), ValueError, "align_corners option"),
    (lambda: F.interpolate(vkml.ones(1, 1, 4, 4), size=3, scale_factor=2), ValueError, "only one of size"),
    (lambda: F.interpolate(vkml.ones(1, 1, 4, 4)), ValueError, "either size or scale_factor"),
    (lambda: F.interpolate(vkml.ones(1, 1, 4, 4), size=3, antialias=True), ValueError, "Anti-alias option"),
    (
        lambda: F.interpolate(vkml.ones(1, 1, 4, 4, dtype=vkml.uint8), size=3, mode="bilinear", antialias=True),
        NotImplementedError,
        "antialias",
    ),
    (lambda: F.pixel_shuffle(vkml.ones(1, 5, 2, 2), 2), RuntimeError, "input.size.-3.=5 is not divisible by 4"),
    (lambda: F.pixel_shuffle(vkml.ones(5, 2), 2), RuntimeError, "at least 3 dimensions"),
    (lambda: F.pixel_shuffle(vkml.ones(1, 4, 2, 2), 0), RuntimeError, "positive upscale_factor"),
    (lambda: F.pixel_unshuffle(vkml.ones(1, 4, 3, 2), 2), RuntimeError, "height to be divisible"),
    (lambda: F.channel_shuffle(vkml.ones(1, 4, 3), 3), RuntimeError, "Got 4 channels and 3 groups"),
    (lambda: F.channel_shuffle(vkml.ones(2, 4), 2), RuntimeError, "> 2 dims"),
    (lambda: nn.ChannelShuffle(0)(vkml.ones(1, 4, 3)), RuntimeError, "must be positive"),
    (lambda: F.grid_sample(vkml.ones(1, 1, 4, 4), vkml.zeros(1, 3, 3, 2), mode="foo"), ValueError, "expected mode"),
    (
        lambda: F.grid_sample(vkml.ones(1, 1, 4, 4), vkml.zeros(1, 3, 3, 2), padding_mode="foo"),
        ValueError,
        "padding_mode",
    ),
    (
        lambda: F.grid_sample(vkml.ones(1, 1, 4, 4), vkml.zeros(1, 3, 3, 3), align_corners=False),
        RuntimeError,
        "size 2 in last",
    ),
    (
        lambda: F.grid_sample(vkml.ones(1, 1, 4, 4), vkml.zeros(2, 3, 3, 2), align_corners=False),
        RuntimeError,
        "same batch size",
    ),
    (
        lambda: F.grid_sample(vkml.ones(1, 1, 3, 4, 4), vkml.zeros(1, 3, 3, 3, 3), mode="bicubic", align_corners=False),
        RuntimeError,
        "bicubic interpolation only supports 4D input",
    ),
    (lambda: F.affine_grid(vkml.ones(2, 3, 3), (2, 1, 4, 5), align_corners=False), ValueError, "shape Nx2x3"),
    (lambda: F.affine_grid(vkml.ones(2, 2, 3), (2, 1, 4), align_corners=False), NotImplementedError, "4D and 5D sizes"),
    (lambda: F.affine_grid(vkml.ones(2, 2, 3), (2, 1, 0, 5), align_corners=False), ValueError, "positive output size"),
]


@pytest.mark.parametrize(("call", "error", "match"), ERRORS)
def test_spatial_errors_match_torch(call, error, match):
    with pytest.raises(error, match=match):
        call()
