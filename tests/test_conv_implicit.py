"""conv2d/conv1d's implicit-GEMM form (vkml/nn/functional_layers.py, ``_conv_implicit``) against the im2col form.

Both sum each output's products in ascending (channel, kernel row, kernel column) from -0.0
(docs/ops/conv2d.md), so ``VKML_CONV_IMPLICIT=0`` (the columns written by a kernel, the product, a
layout kernel) and the default (one product reading the windows of x) give the same bits: forward,
input and weight gradients, on the CPU, on lavapipe's scalar tiles and, forced on the CPU, on the
cooperative-matrix template, whose implicit kernel must also pass spirv-val for an H200-like device.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from optest import assert_same_bits

import vkml
import vkml.nn.functional as F
from vkml import debug
from vkml.codegen import compile_kernel
from vkml.codegen.features import DeviceFeatures
from vkml.ir import types as T
from vkml.ir.core import Instr, Loop, walk
from vkml.kernels import lowering
from vkml.kernels.lowering import _merged_groups
from vkml.kernels.matmul import coopmat, tiled
from vkml.nn import functional_layers
from vkml.schedule import scheduler as schedule

H200 = DeviceFeatures.h200_like()

CASES = [  # (what, x shape, weight shape, bias, arguments); 128 output positions a sample: one product a sample
    ("bias, padding, per sample", (2, 3, 8, 16), (5, 3, 3, 3), True, {"padding": 1}),
    (
        "stride, dilation, long product",
        (2, 2, 9, 8),
        (4, 2, 2, 3),
        False,
        {"stride": (2, 1), "dilation": (1, 2), "padding": (0, 2)},
    ),
    ("conv1d", (3, 4, 5), (2, 4, 3), True, {"padding": 1}),
    ("unbatched, same", (3, 5, 5), (2, 3, 3, 3), True, {"padding": "same"}),
]


@pytest.fixture
def kernels():
    """The names of the kernels run while the test runs."""
    names: list[str] = []
    debug.kernel_listeners.append(lambda kernel: names.append(kernel.name))
    yield names
    debug.kernel_listeners.pop()


def _conv(monkeypatch, kernels, device, implicit: str, case, dtype=np.float32, grads: bool = True):
    """(output, input gradient, weight gradient) of ``case`` in one form, and the forward's kernels."""
    monkeypatch.setenv("VKML_CONV_IMPLICIT", implicit)
    _, xs, ws, bias, kwargs = case
    g = np.random.default_rng(len(xs) + ws[0])
    x, w, b = (
        vkml.tensor(g.standard_normal(s).astype(dtype), device=device, requires_grad=True) for s in (xs, ws, ws[:1])
    )
    conv = F.conv2d if len(ws) == 4 else F.conv1d
    kernels.clear()
    y = conv(x, w, b if bias else None, **kwargs)
    out = y.numpy()
    forward = list(kernels)
    if not grads:
        return [out], forward
    gy = vkml.tensor(g.standard_normal(tuple(y.shape)).astype(dtype), device=device)
    gx, gw = vkml.autograd.grad(y, (x, w), gy)
    return [out, gx.numpy(), gw.numpy()], forward


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_the_implicit_form_gives_the_im2col_bits_on_the_cpu(case, monkeypatch, kernels):
    new, forward = _conv(monkeypatch, kernels, "cpu", "1", case)
    old, old_forward = _conv(monkeypatch, kernels, "cpu", "0", case)
    for got, want, what in zip(new, old, ("output", "input gradient", "weight gradient")):
        assert_same_bits(got, want, f"{case[0]}: {what}")
    # No columns kernel: one product a sample writing (N, O, *out), the bias added at its store, or one long
    # product and a layout kernel where the samples' positions would leave the column tiles part empty.
    # (with one sample, the long product's (O, 1, L) is (1, O, L) already)
    one_kernel = "per sample" in case[0] or len(case[1]) < len(case[2]) or case[1][0] == 1
    assert len(forward) == (1 if one_kernel else 2) and forward[0].startswith("MM"), forward
    assert len(old_forward) > 1 and old_forward[0].startswith("E_"), old_forward  # the columns first


def test_the_implicit_form_gives_the_im2col_bits_on_vulkan(monkeypatch, kernels, gpu):
    case = CASES[0]
    new, forward = _conv(monkeypatch, kernels, gpu, "1", case)
    old, _ = _conv(monkeypatch, kernels, gpu, "0", case)
    cpu, _ = _conv(monkeypatch, kernels, "cpu", "1", case, grads=False)
    for got, want, what in zip(new, old, ("output", "input gradient", "weight gradient")):
        assert_same_bits(got, want, what)
    assert_same_bits(new[0], cpu[0], "vulkan against cpu")
    assert len(forward) == 1 and forward[0].startswith("MM"), forward  # one product a sample


def _implicit_group(dtype=np.float32, x_shape=(2, 4, 16, 8), w_shape=(16, 4, 3, 3)):
    """The implicit conv's product group (root, matmul node, leaves) for realized operands on the CPU
    (128 output positions a sample: one product a sample, the bias added at its store)."""
    x = vkml.tensor(np.zeros(x_shape, dtype)).realize()
    w = vkml.tensor(np.zeros(w_shape, dtype)).realize()
    b = vkml.tensor(np.zeros(w_shape[:1], dtype)).realize()
    root = F.conv2d(x, w, b, padding=1).node
    plan = schedule.Plan([root])
    (mm,) = plan.chains[id(root)]
    return root, mm, set(plan.roots)


def test_the_cooperative_matrix_form_gives_the_im2col_bits_and_validates(monkeypatch, kernels):
    """Forced on the CPU (its ``cm_mul_add`` adds exact products in ascending k): the bits of the im2col
    form on the same template; the implicit kernel passes spirv-val for an H200-like device."""
    monkeypatch.setattr(coopmat, "applies", lambda features, a, b: a is T.float16 is b)
    schedule.clear_template_cache()
    try:
        case = ("float16", (2, 3, 8, 16), (5, 3, 3, 3), True, {"padding": 1})
        new, forward = _conv(monkeypatch, kernels, "cpu", "1", case, np.float16, grads=False)
        old, old_forward = _conv(monkeypatch, kernels, "cpu", "0", case, np.float16, grads=False)
        assert_same_bits(new[0], old[0], "float16 output")
        assert len(forward) == 1 and forward[0].startswith("MMC"), forward
        assert any(name.startswith("MMC") for name in old_forward), old_forward
        monkeypatch.setenv("VKML_CONV_IMPLICIT", "1")
        root, mm, leaves = _implicit_group(np.float16, (2, 3, 8, 16), (5, 3, 3, 3))  # the kernel run above
        shape = coopmat.shape_for(mm.shape[-2], mm.shape[-1])
        kernel = coopmat.lower_matmul_coopmat(root, mm, leaves, frozenset(), 32, shape).kernels[0].kernel
        compiled = compile_kernel(kernel, H200)  # spirv-val
        assert "OpCooperativeMatrixMulAddKHR" in compiled.asm
        # A staging unit's 4 positions along a row of 16 share the row's digit, its bounds test and address.
        monkeypatch.setattr(coopmat, "Index", lambda shape, lane=None, **given: lowering.Index(shape, **given))
        apart = coopmat.lower_matmul_coopmat(root, mm, leaves, frozenset(), 32, shape).kernels[0].kernel
        assert _loop_size(kernel) < _loop_size(apart), (_loop_size(kernel), _loop_size(apart))
    finally:
        schedule.clear_template_cache()


def _loop_size(kernel) -> int:
    """Instructions in the kernel's K loop."""
    (loop,) = [s for s in walk(kernel.body) if isinstance(s, Loop)]
    return sum(isinstance(s, Instr) for s in walk(loop.body))


def test_the_scalar_kernel_divides_by_the_output_width_only_before_its_loop(monkeypatch):
    """The B operand (N, C·kh·kw, L) unravels l = (oh, ow) apart from k (``_merged_groups``), so the
    divisions by the output width do not depend on k and are computed once, before the K loop; the
    H200's tiles fuse the multiply-adds of the whole batch's product, as the one long product did."""
    root, mm, leaves = _implicit_group()  # output 16 × 8: no other dim is 8
    config = tiled.choose_config(H200, mm.shape[-2], mm.shape[-1], 36)
    assert config.bk < 36  # a loop over k
    kernel = tiled.lower_matmul(root, mm, leaves, frozenset(), config).kernels[0].kernel
    constants = {s.result: s.attrs[0] for s in walk(kernel.body) if isinstance(s, Instr) and s.op == "const"}
    (loop,) = [s for s in walk(kernel.body) if isinstance(s, Loop)]
    inside = [s for s in walk(loop.body) if isinstance(s, Instr) and s.op in ("idiv", "irem")]
    everywhere = [s for s in walk(kernel.body) if isinstance(s, Instr) and s.op in ("idiv", "irem")]
    assert inside and all(constants.get(s.args[1]) in (3, 9) for s in inside), [
        constants.get(s.args[1]) for s in inside
    ]
    assert any(constants.get(s.args[1]) == 8 for s in everywhere)
    compile_kernel(kernel, H200)  # spirv-val
    # An invocation stages its elements of B a few to one k (tiled._k_sharing): k is divided once for them.
    monkeypatch.setattr(tiled, "K_SHARING", 1)
    apart = tiled.lower_matmul(root, mm, leaves, frozenset(), config).kernels[0].kernel
    (apart_loop,) = [s for s in walk(apart.body) if isinstance(s, Loop)]
    apart_inside = [s for s in walk(apart_loop.body) if isinstance(s, Instr) and s.op in ("idiv", "irem")]
    assert len(inside) < len(apart_inside), (len(inside), len(apart_inside))
    one = tiled.choose_config(H200, 64, 3136, 576)  # one sample's product of ResNet's stage 1
    assert not one.fused and tiled.fused_over_batch(one, H200, 64 * 64 * 3136 * 576).fused  # 64 of them
    assert tiled.fused_over_batch(one, H200, 64 * 3136 * 576) == one


def test_merged_groups_name_the_dims_each_digit_spans():
    from vkml.graph.view import View

    assert _merged_groups(View.contiguous((2, 27, 6)), (2, 3, 3, 3, 2, 3), None) == ((2,), (3, 3, 3), (2, 3))
    assert _merged_groups(View.contiguous((1, 6)), (6,), None) == ((), (6,))
    assert _merged_groups(View.contiguous((6,)), (1, 6, 1), None) == ((1, 6, 1),)
    assert _merged_groups(View.contiguous((4, 3)), (3, 4), None) is None  # not a merge of neighbours
    assert _merged_groups(View((6,), (2,)), (12,), None) is None  # strided: not a reshape


@pytest.mark.parametrize(
    ("x_shape", "w_shape", "groups"), [((2, 4, 5, 5), (0, 4, 3, 3), 1), ((2, 4, 5, 5), (1, 2, 3, 3), 2)]
)
def test_fewer_output_channels_than_groups_is_pytorchs_error(x_shape, w_shape, groups):
    """No output channel at all (the implicit product would return an empty tensor): PyTorch's RuntimeError."""
    import torch

    with pytest.raises(RuntimeError) as want:
        torch.nn.functional.conv2d(torch.zeros(x_shape), torch.zeros(w_shape), groups=groups)
    with pytest.raises(RuntimeError) as got:
        F.conv2d(vkml.zeros(*x_shape), vkml.zeros(*w_shape), groups=groups)
    assert str(want.value) in str(got.value)


@pytest.mark.stress
@pytest.mark.parametrize(
    ("x_shape", "w_shape", "dtype"),
    [((4, 16, 28, 28), (32, 16, 3, 3), np.float32), ((2, 8, 32, 32), (16, 8, 3, 3), np.float16)],
    ids=["long product", "per sample, float16"],
)
def test_larger_convolutions_keep_the_im2col_bits_on_vulkan(x_shape, w_shape, dtype, monkeypatch, kernels, gpu):
    """Several tiles of each side and K-steps (ResNet-like 3×3 layers, scaled down): forward and gradients.
    Where float16 runs on cooperative matrices (the two forms may take different templates, each summing a
    block of k in the device's order) the two agree within the float16 rounding instead."""
    case = ("larger", x_shape, w_shape, True, {"padding": 1})
    new, _ = _conv(monkeypatch, kernels, gpu, "1", case, dtype)
    old, _ = _conv(monkeypatch, kernels, gpu, "0", case, dtype)
    matrices = dtype == np.float16 and coopmat.applies(getattr(gpu, "features", None), T.float16, T.float16)
    for got, want, what in zip(new, old, ("output", "input gradient", "weight gradient")):
        if matrices:
            got, want = got.astype(np.float32), want.astype(np.float32)
            np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2 * np.abs(want).max(), err_msg=what)
        else:
            assert_same_bits(got, want, what)


def test_float16_keeps_the_im2col_form_where_products_take_workgroup_matrices(monkeypatch):
    """The implicit form everywhere but float16 on a VK_NV_cooperative_matrix2 device (the columns'
    product is faster there); VKML_CONV_IMPLICIT=0 turns it off everywhere."""

    def operand(features, dtype):
        return SimpleNamespace(device=SimpleNamespace(features=features), dtype=dtype)

    def implicit(features, dtype):
        return functional_layers._implicit_form(operand(features, dtype), operand(features, dtype))

    h200, lavapipe = DeviceFeatures.h200_like(), DeviceFeatures.lavapipe_like()
    assert (implicit(h200, T.float16), implicit(h200, T.float32), implicit(lavapipe, T.float16)) == (False, True, True)
    assert implicit(None, T.float16)  # the CPU
    monkeypatch.setenv("VKML_CONV_IMPLICIT", "0")
    assert not implicit(h200, T.float32)


def _input_grad_in_the_stated_order(w, gy, pads, dilation):
    """numpy float32: each input element of a stride-1 conv2d adds its O·kh·kw products from -0.0, output channel
    by output channel, the taps in descending row-major order, the padding's zeros as products
    (docs/ops/conv2d.md, Gradient)."""
    (batch, _, out_h, out_w), (out_channels, channels, kh, kw) = gy.shape, w.shape
    height = out_h + dilation[0] * (kh - 1) - pads[0][0] - pads[0][1]
    width = out_w + dilation[1] * (kw - 1) - pads[1][0] - pads[1][1]
    acc = np.full((batch, channels, height, width), -0.0, np.float32)
    rows, cols = np.arange(height)[:, None], np.arange(width)[None, :]
    for o in range(out_channels):
        for i in reversed(range(kh)):
            for j in reversed(range(kw)):
                r, s = rows + pads[0][0] - i * dilation[0], cols + pads[1][0] - j * dilation[1]
                inside = (r >= 0) & (r < out_h) & (s >= 0) & (s < out_w)
                read = gy[:, o][:, np.clip(r, 0, out_h - 1), np.clip(s, 0, out_w - 1)]
                taken = np.where(inside, read, np.float32(0.0))  # the padding's +0.0
                acc = (acc + w[o, :, i, j][None, :, None, None] * taken[:, None]).astype(np.float32)
    return acc


@pytest.mark.parametrize("implicit", ["1", "0"])
def test_the_stride_1_input_gradient_is_one_product_in_the_stated_order(implicit, monkeypatch, kernels, gpu):
    """At stride 1 the input's gradient is a convolution of the output's gradient (the weight flipped, its channels
    swapped): one product, no fold of the columns' gradient, and the order of docs/ops/conv2d.md in both forms,
    on the CPU and (the implicit form's) on Vulkan."""
    monkeypatch.setenv("VKML_CONV_IMPLICIT", implicit)
    g = np.random.default_rng(7)
    x = g.standard_normal((2, 3, 9, 8)).astype(np.float32)
    w = g.standard_normal((4, 3, 3, 2)).astype(np.float32)
    pads, dilation = ((2, 0), (1, 1)), (1, 2)  # asymmetric rows; columns: 'same' for a dilated kernel of 2
    gy = g.standard_normal((2, 4, 9, 8)).astype(np.float32)
    want = _input_grad_in_the_stated_order(w, gy, pads, dilation)
    for device in ("cpu", gpu) if implicit == "1" else ("cpu",):  # the im2col form's kernels: the CPU's
        vx = vkml.tensor(x, device=device, requires_grad=True)
        y = F.conv2d(F.pad(vx, (1, 1, 2, 0)), vkml.tensor(w, device=device), dilation=dilation)
        upstream = vkml.tensor(gy, device=device).realize()
        y.realize()
        kernels.clear()
        (gx,) = vkml.autograd.grad(y, (vx,), upstream)
        assert_same_bits(gx.numpy(), want, f"input gradient on {device}")
        products = [k for k in kernels if k.startswith("MM")]
        assert len(products) == 1 and not any("add_add" in k for k in kernels), kernels
