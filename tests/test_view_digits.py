"""A view level's index reaches the level below as sums, not through a division (issue 18).

``lowering._digits``: where each stride of a level is a multiple of one row-major stride of the
level below and no digit leaves its range over the level's box, the multi-index below is a sum per
dim (im2col's ``i·step + k·dilation``); elsewhere the linear index is unravelled as before. Both
give the same positions, so the values are PyTorch's on CPU and Vulkan alike.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import vkml
import vkml.nn.functional as F
from vkml.codegen.features import DeviceFeatures
from vkml.graph.view import View
from vkml.ir import builder as B
from vkml.kernels import lowering
from vkml.kernels import tuning as kernels_tuning
from vkml.schedule import scheduler as schedule

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import count_instructions as C  # noqa: E402

RNG = np.random.default_rng(18)


def _cases(lib, x):
    """Views whose levels compose by sums (windows over pads, flips, steps) and ones that must divide."""
    pad = lib.nn.functional.pad
    return [
        pad(x, (1, 2, 2, 1)).unfold(2, 3, 2).unfold(1, 2, 1),  # windows over a padded level, two dims
        pad(x, (2, 1)).flip(2).unfold(2, 3, 1).flip(3),  # negative strides: digits summed, then subtracted
        pad(x, (1, 1))[:, 1:, ::2].unfold(2, 2, 2),  # a sliced padded level under windows
        pad(x, (1, 1)).transpose(1, 2).reshape(4, 2, -1),  # rows that cross the level below: unravelled
        pad(x, (0, 0, 1, 0)).unfold(1, 3, 2).permute(3, 0, 2, 1).reshape(3, 4, -1),  # windows, then a row-major level
    ]


@pytest.mark.parametrize("device", ["cpu", "vulkan"])
def test_views_through_padded_levels_read_as_torch(device, request):
    dev = vkml.device("cpu") if device == "cpu" else request.getfixturevalue("gpu")
    data = RNG.standard_normal((2, 5, 6)).astype(np.float32)
    x = vkml.tensor(data, device=dev).realize()
    for got, want in zip(_cases(vkml, x), _cases(torch, torch.tensor(data))):
        np.testing.assert_array_equal((got * 1.0).numpy(), want.numpy())


def test_digits_are_sums_only_where_no_digit_leaves_its_range():
    with B.KernelBuilder("k", local_size=(1, 1, 1)):
        i, k = B.global_id(0), B.global_id(1)
        # windows of 3 at step 1 over rows of 6: the column digit is i + k, at most 5
        assert lowering._digits(View((4, 3), (1, 1)), (i, k), (2, 6), 0) is not None
        assert lowering._digits(View((4, 3), (1, 1)), (i, k), (2, 6), 1) is None  # shifted by one: it carries
        assert lowering._digits(View((4, 3), (1, 1)), (i, k), (2, 6), None) is None  # an offset parameter
        assert lowering._digits(View((5, 2), (1, 6)), (i, k), (2, 6), 0) is not None
        assert lowering._digits(View((5, 2), (2, 6)), (i, k), (2, 6), 0) is None  # 2·4 leaves a row of 6


def test_conv_columns_kernel_divides_once_per_group(monkeypatch):
    """The im2col kernel unravels its own output position once per vector group (shared by the group's
    elements) and reaches the padded input by sums: no other division or remainder. (The im2col form:
    the weight gradient's columns, and the forward with VKML_CONV_IMPLICIT=0.)"""
    monkeypatch.setenv("VKML_CONV_IMPLICIT", "0")
    shape, out = (2, 8, 6, 8), (8, 3, 3, 2, 6, 8)  # columns (C, kh, kw, N, H', W')
    cpu = vkml.device("cpu")
    tuning = kernels_tuning.tuning_from_features(DeviceFeatures.h200_like())
    kernels_tuning.set_tuning(cpu, tuning)
    try:
        x = vkml.tensor(RNG.standard_normal(shape).astype(np.float32), device=cpu).realize()
        w = vkml.tensor(RNG.standard_normal((4, 8, 3, 3)).astype(np.float32), device=cpu).realize()
        dispatches, _, _ = schedule.lower(schedule.Plan([F.conv2d(x, w, padding=1).node]))
    finally:
        kernels_tuning.set_tuning(cpu, None)
    (columns,) = [d for d in dispatches if d.kernel.name.endswith("x".join(map(str, out)))]
    ops = [i.op for i in C.fast_path(columns.kernel.body)]
    width = tuning.vector
    groups = sum(op == "vstore" for op in ops)
    grouped = out[:-1] + (out[-1] // width,)
    assert groups >= 1 and ops.count("idiv") == ops.count("irem") == groups * (len(grouped) - 1)


def _f16_cases(lib, x):
    pad = lib.nn.functional.pad
    return [x.permute(2, 0, 1), x.transpose(1, 2), pad(x, (1, 3)), pad(x, (2, 1)).unfold(2, 3, 2)]


@pytest.mark.parametrize("device", ["cpu", "vulkan"])
def test_half_views_are_copied_as_stored(device, request):
    """A float16 (bfloat16) view of a float16 (bfloat16) buffer is stored as loaded (no float32 round
    trip): the values are PyTorch's copies', special values, subnormals and -0.0 included."""
    dev = vkml.device("cpu") if device == "cpu" else request.getfixturevalue("gpu")
    bits = RNG.integers(0, 1 << 16, (2, 3, 8), dtype=np.uint16)
    bits[0, 0, :6] = [0x7C01, 0xFE00, 0x8000, 0x0001, 0x7C00, 0x83FF]  # NaNs, -0.0, subnormals, inf (float16)
    bits[1, 0, :5] = [0x7F81, 0xFFC0, 0x8000, 0x0001, 0x7F80]  # NaNs, -0.0, a subnormal, inf (bfloat16)
    for dtype in ("float16", "bfloat16"):
        x = vkml.tensor(bits.view(np.int16), device=dev).view(getattr(vkml, dtype)).realize()
        t = torch.tensor(bits.view(np.int16)).view(getattr(torch, dtype))
        for got, want in zip(_f16_cases(vkml, x), _f16_cases(torch, t)):
            vkml.realize(got)
            got, want = got.view(vkml.int16).numpy(), want.view(torch.int16).numpy()
            nan = np.isnan(torch.tensor(want).view(getattr(torch, dtype)).float().numpy())
            got_nan = np.isnan(torch.tensor(got).view(getattr(torch, dtype)).float().numpy())
            np.testing.assert_array_equal(got_nan, nan)
            np.testing.assert_array_equal(got[~nan], want[~nan])


def test_float16_copy_kernel_does_not_round():
    cpu = vkml.device("cpu")
    kernels_tuning.set_tuning(cpu, kernels_tuning.tuning_from_features(DeviceFeatures.h200_like()))
    try:
        x = vkml.tensor(RNG.standard_normal((4, 32, 64)).astype(np.float16), device=cpu).realize()
        (copy,) = schedule.lower(schedule.Plan([x.transpose(1, 2).node]))[0]
    finally:
        kernels_tuning.set_tuning(cpu, None)
    counts, elements = C.per_element(copy, x.numel())
    # index arithmetic alone: the float32 round trip took ~40 integer instructions an element
    assert counts["conversion"] == 0 and counts["float"] == 0 and counts["int"] / elements < 8


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_conv_copies_its_columns_as_bits(dtype, gpu):
    """conv2d's columns of a 16-bit float input are its bit patterns copied (``_columns_matrix``): the
    forward and both gradients are PyTorch's to half precision, and the same bits on CPU and Vulkan."""
    data = [RNG.standard_normal(s).astype(np.float32) for s in ((2, 3, 6, 7), (4, 3, 3, 2))]
    data[0][0, 0, 0, :2] = [-0.0, 1e-6]  # a signed zero, a float16 subnormal
    results = []
    for dev in (vkml.device("cpu"), gpu):
        x, w = (vkml.tensor(a, device=dev).to(getattr(vkml, dtype)).requires_grad_() for a in data)
        out = F.conv2d(x, w, padding=(1, 2), dilation=(1, 2))
        (out.float() ** 2).sum().backward()
        results.append([t.float().numpy() for t in (out, x.grad, w.grad)])
    tx, tw = (torch.tensor(a).to(getattr(torch, dtype)).float().requires_grad_() for a in data)
    tout = torch.nn.functional.conv2d(tx, tw, padding=(1, 2), dilation=(1, 2))
    (tout**2).sum().backward()
    for got, on_gpu, want in zip(*results, (tout, tx.grad, tw.grad)):
        np.testing.assert_array_equal(got, on_gpu)
        want = want.detach().numpy()
        finite = np.isfinite(want)
        np.testing.assert_array_equal(np.isfinite(got), finite)
        np.testing.assert_allclose(got[finite], want[finite], rtol=0.05, atol=0.05 * np.abs(want[finite]).max())


def test_half_conv_columns_kernel_keeps_float16(monkeypatch):
    """The float16 columns kernel loads and stores float16 bit patterns: no conversion, no float32
    rounding back (the software rounding took ~60 integer instructions an element)."""
    monkeypatch.setenv("VKML_CONV_IMPLICIT", "0")  # the im2col form
    cpu = vkml.device("cpu")
    kernels_tuning.set_tuning(cpu, kernels_tuning.tuning_from_features(DeviceFeatures.h200_like()))
    try:
        x, w = (
            vkml.tensor(RNG.standard_normal(s).astype(np.float16), device=cpu).realize()
            for s in ((2, 8, 6, 8), (4, 8, 3, 3))
        )
        dispatches, _, _ = schedule.lower(schedule.Plan([F.conv2d(x, w, padding=1).node]))
    finally:
        kernels_tuning.set_tuning(cpu, None)
    (columns,) = [d for d in dispatches if d.kernel.name.endswith("8x3x3x2x6x8")]
    counts, elements = C.per_element(columns, 8 * 9 * 2 * 6 * 8)
    assert counts["conversion"] == 0 and counts["int"] / elements < 30
