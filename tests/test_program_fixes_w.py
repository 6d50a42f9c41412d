"""The gap the programs of tests/test_programs_w.py (Aladdin Persson's ML-Collection, bentrevett's notebooks)
found, against PyTorch."""

from __future__ import annotations

import numpy as np
import torch

import vkml


def _unet_up_under_autocast(m):
    """Aladdin's U-Net step under ``autocast``: a Conv2d's float16 output into a ``nn.ConvTranspose2d`` (the
    module's own path, not ``F.conv_transpose2d``), then its gradients."""
    m.manual_seed(0)
    conv = m.nn.Conv2d(3, 4, 3, padding=1)
    up = m.nn.ConvTranspose2d(4, 2, kernel_size=2, stride=2)
    x = m.tensor(np.linspace(-1, 1, 48, dtype=np.float32).reshape(1, 3, 4, 4))
    with m.autocast("cpu", dtype=m.float16):
        h = conv(x)
        y = up(h)
    y.float().square().sum().backward()
    return [str(h.dtype), str(y.dtype), list(y.shape)], y.float().detach().numpy(), up.weight.grad.numpy()


def test_conv_transpose_module_autocasts_as_pytorchs():
    want, got = _unet_up_under_autocast(torch), _unet_up_under_autocast(vkml)
    assert [s.replace("vkml", "torch") if isinstance(s, str) else s for s in got[0]] == want[0]
    np.testing.assert_allclose(got[1], want[1], rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(got[2], want[2], rtol=2e-3, atol=2e-3)
