"""vkml.fft (vkml/frontend/fft.py, docs/fft.md) against PyTorch: the sample frequencies bit for bit, the
shifts and their gradients, and the transforms' signatures (tests/test_complex.py checks their values)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch

import vkml


@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
def test_frequencies_match_pytorch_bit_for_bit(name):
    for n, d in [(5, 0.3), (4, 1.0), (7, 0.1), (1, 2.0), (0, 1.0), (6, 1 / 3), (3, 0.0)]:
        for dtype in (None, "float64", "float16", "bfloat16"):
            got = getattr(vkml.fft, name)(n, d, dtype=dtype and getattr(vkml, dtype))
            want = getattr(torch.fft, name)(n, d, dtype=dtype and getattr(torch, dtype))
            assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
            # NaN (n * d == 0) compared by NaN-ness; every other value by its bits
            np.testing.assert_array_equal(
                got.float().numpy(), want.float().numpy(), err_msg=f"{name}({n}, {d}) {dtype}"
            )


@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
def test_shifts_match_pytorch_with_gradients(name, gpu):
    x = np.arange(30.0, dtype=np.float32).reshape(2, 3, 5)
    weight = np.linspace(-1.0, 2.0, 30, dtype=np.float32).reshape(2, 3, 5)
    for dim in (None, 0, -1, (1, 2)):
        t = torch.tensor(x, requires_grad=True)
        want = getattr(torch.fft, name)(t, dim)
        (want * torch.tensor(weight)).sum().backward()
        for device in ("cpu", gpu) if dim == (1, 2) and name == "fftshift" else ("cpu",):
            v = vkml.tensor(x, device=device, requires_grad=True)
            got = getattr(vkml.fft, name)(v, dim)
            (got * vkml.tensor(weight, device=device)).sum().backward()
            np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
            np.testing.assert_array_equal(v.grad.numpy(), t.grad.numpy())
    for module in (torch, vkml):
        with pytest.raises(RuntimeError, match="`shifts` required"):
            getattr(module.fft, name)(module.ones(3), ())


def test_transforms_have_pytorchs_names_and_signatures():
    names = [n for n in vkml.fft.__all__ if n not in ("fftfreq", "rfftfreq", "fftshift", "ifftshift")]
    assert sorted(names) == sorted(
        n for n in dir(torch.fft) if n[0] != "_" and "fft" in n and "freq" not in n and "shift" not in n
    )
    for name in names:
        ours = f"{name}{inspect.signature(getattr(vkml.fft, name))} -> Tensor"
        assert (getattr(torch.fft, name).__doc__ or "").split("\n")[1] == ours
