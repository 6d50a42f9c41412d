"""The gaps that the programs of tests/test_programs_o.py found in vkml, each compared with PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vkml


class _Doubled:
    """A map-style dataset (a plain class, as both libraries accept it)."""

    def __len__(self):
        return 10

    def __getitem__(self, index):
        return np.float32(2 * index)


def _epochs(library, data_module, persistent: bool) -> list[list[float]]:
    library.manual_seed(3)
    generator = library.Generator()
    generator.manual_seed(0)
    loader = data_module.DataLoader(
        _Doubled(), batch_size=3, shuffle=True, num_workers=2, persistent_workers=persistent, generator=generator
    )
    return [[batch.tolist() for batch in loader] for _ in range(3)] + [
        library.randint(0, 1000, (3,), generator=generator).tolist()
    ]


@pytest.mark.filterwarnings("ignore:'pin_memory'")
@pytest.mark.parametrize("persistent", [True, False])
def test_worker_loader_shuffles_each_epoch_as_pytorch_does(persistent):
    """A persistent-worker loader draws no new base seed after its first epoch (PyTorch resets its one
    iterator), so its later epochs' shuffles and the generator's next draws are PyTorch's."""
    expected = _epochs(torch, torch.utils.data, persistent)
    got = _epochs(vkml, vkml.utils.data, persistent)
    assert got == expected


_CONVS = [
    ("conv2d", (2, 4, 8, 8), (6, 4, 3, 3), {"padding": 1}),
    ("conv1d", (2, 4, 30), (6, 4, 5), {"stride": 2}),
    ("conv2d", (2, 4, 8, 8), (6, 2, 3, 3), {"groups": 2}),
    ("conv2d", (2, 4, 8, 8), (6, 4, 3, 3), {"padding": 2, "dilation": 2, "stride": 2}),
]


@pytest.mark.parametrize(("name", "x_shape", "w_shape", "kwargs"), _CONVS, ids=[f"{c[0]}-{c[3]}" for c in _CONVS])
def test_bfloat16_convolution_adds_its_bias_before_rounding(name, x_shape, w_shape, kwargs):
    """PyTorch's CPU bfloat16 convolutions add the bias to the float32 sums and round once (vkml rounded the
    sums, then the sum with the bias: a bf16-autocast CNN differed from its first loss): the same bits. The
    gradients stay the half convolution's (those of the convolution without the bias, bit for bit, but for
    a grouped weight's), which agree with PyTorch's to bfloat16's rounding (their orders differ)."""
    rng = np.random.default_rng(len(x_shape) + w_shape[1])
    x = rng.standard_normal(x_shape).astype(np.float32)
    w = (rng.standard_normal(w_shape) * 0.3).astype(np.float32)
    b = rng.standard_normal(w_shape[0]).astype(np.float32)
    out_shape = getattr(torch.nn.functional, name)(torch.tensor(x), torch.tensor(w), **kwargs).shape
    g = rng.standard_normal(out_shape).astype(np.float32)
    results = []
    for library, with_bias in ((torch, True), (vkml, True), (vkml, False)):
        x_, w_, b_ = (library.tensor(a).to(library.bfloat16).requires_grad_() for a in (x, w, b))
        conv = getattr(library.nn.functional, name)
        out = (
            conv(x_, w_, b_, **kwargs)
            if with_bias
            else conv(x_, w_, None, **kwargs)
            + b_.view(-1, *[1] * (len(out_shape) - (len(x_shape) == len(w_shape)) - 1))
        )
        out.backward(library.tensor(g).to(library.bfloat16))
        results.append([t.float().detach().numpy() for t in (out, x_.grad, w_.grad)])
    (out, gx, gw), (vout, vgx, vgw), (_, separate_gx, separate_gw) = results
    np.testing.assert_array_equal(vout, out)
    np.testing.assert_array_equal(vgx, separate_gx)
    if kwargs.get("groups", 1) == 1:  # grouped: the batch's float32 weight sums rounded once, nearer PyTorch's
        np.testing.assert_array_equal(vgw, separate_gw)
    np.testing.assert_allclose(vgx, gx, rtol=2**-6, atol=0.07)
    np.testing.assert_allclose(vgw, gw, rtol=2**-6, atol=0.07)


@pytest.mark.stress  # a dozen SPIR-V kernels compiled for lavapipe
def test_bfloat16_convolution_with_a_bias_gives_the_cpu_bits_on_vulkan(gpu):
    """The float32 product of bfloat16 operands (casts inside the product's loads), its bias and gradients."""
    rng = np.random.default_rng(7)
    x, w, b = (rng.standard_normal(shape).astype(np.float32) for shape in ((2, 3, 6, 6), (4, 3, 3, 3), (4,)))
    g = rng.standard_normal((2, 4, 6, 6)).astype(np.float32)
    results = []
    for device in ("cpu", gpu):
        x_, w_, b_ = (vkml.tensor(a, device=device).to(vkml.bfloat16).requires_grad_() for a in (x, w, b))
        out = vkml.nn.functional.conv2d(x_, w_, b_, padding=1)
        out.backward(vkml.tensor(g, device=device).to(vkml.bfloat16))
        results.append([t.float().detach().cpu().numpy() for t in (out, x_.grad, w_.grad, b_.grad)])
    expected = torch.nn.functional.conv2d(*(torch.tensor(a).bfloat16() for a in (x, w, b)), padding=1)
    np.testing.assert_array_equal(results[0][0], expected.float().numpy())
    for got, want in zip(results[1], results[0]):
        np.testing.assert_array_equal(got, want)
