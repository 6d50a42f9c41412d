"""Fractional max pooling: PyTorch's windows, values, indices and gradients for the same random samples
(vkml/nn/fractional_pool.py), its argument errors, and the modules."""

import numpy as np
import pytest
import torch

import vkml

CASES = {
    "size": dict(kernel_size=3, output_size=(4, 3)),
    "ratio": dict(kernel_size=(2, 3), output_ratio=(0.5, 0.6)),
    "square": dict(kernel_size=2, output_size=5),
}


def _run(m, case: str, dtype: str):
    rng = np.random.default_rng(1)
    data = rng.standard_normal((2, 3, 9, 8)).astype(np.float32)
    data[0, 1, 2, 3:5] = np.nan  # two NaN in one window: PyTorch's index is the last one
    samples = rng.random((2, 3, 2)).astype(np.float32)
    x = m.tensor(data).to(getattr(m, dtype)).requires_grad_()
    values, indices = m.nn.functional.fractional_max_pool2d(
        x, return_indices=True, _random_samples=m.tensor(samples).to(getattr(m, dtype)), **CASES[case]
    )
    m.where(values.isnan(), 0.0, values).float().sum().backward()
    grad = np.nan_to_num(x.grad.float().numpy())
    return np.nan_to_num(values.detach().float().numpy(), nan=-99).tolist(), indices.numpy().tolist(), grad.tolist()


@pytest.mark.parametrize(("case", "dtype"), [("size", "float32"), ("ratio", "float32"), ("square", "float32")])
def test_fractional_max_pool2d_matches_pytorch(case, dtype):
    assert _run(vkml, case, dtype) == _run(torch, case, dtype)


def test_fractional_max_pool3d_unbatched_and_modules_match_pytorch():
    rng = np.random.default_rng(2)
    vol, s3 = rng.standard_normal((1, 2, 5, 6, 7)).astype(np.float32), rng.random((1, 2, 3)).astype(np.float32)
    plane, s2 = rng.standard_normal((3, 7, 7)).astype(np.float32), rng.random((1, 3, 2)).astype(np.float32)
    got, want = [], []
    for m, out in ((vkml, got), (torch, want)):
        pool3 = m.nn.FractionalMaxPool3d(2, output_size=(3, 4, 3), return_indices=True, _random_samples=m.tensor(s3))
        values, indices = pool3(m.tensor(vol))
        out.append((values.numpy().tolist(), indices.numpy().tolist()))
        pool2 = m.nn.FractionalMaxPool2d(3, output_ratio=0.5, _random_samples=m.tensor(s2))
        out.append((pool2(m.tensor(plane)).numpy().tolist(), repr(pool2)))
        # float16 windows: PyTorch places them with float16 arithmetic
        half = m.nn.functional.fractional_max_pool2d(
            m.tensor(plane).half(), 2, output_size=5, return_indices=True, _random_samples=m.tensor(s2).half()
        )
        out.append(half[1].numpy().tolist())
    assert got == want


@pytest.mark.parametrize(
    "call",
    [
        lambda m, x: m.nn.functional.fractional_max_pool2d(x, 3),
        lambda m, x: m.nn.functional.fractional_max_pool2d(x, 5, output_size=4),
        lambda m, x: m.nn.functional.fractional_max_pool2d(x, 3, output_size=4, _random_samples=m.rand(1, 2, 3)),
        lambda m, x: m.nn.functional.fractional_max_pool2d(
            x, 3, output_size=4, _random_samples=m.rand(1, 2, 2).double()
        ),
        lambda m, x: m.nn.FractionalMaxPool2d(3, output_ratio=1.5),
        lambda m, x: m.nn.FractionalMaxPool2d(3, output_size=2, output_ratio=0.5),
    ],
)
def test_fractional_max_pool_errors_are_pytorchs(call):
    with pytest.raises((ValueError, RuntimeError)) as theirs:
        call(torch, torch.ones(1, 2, 7, 7))
    with pytest.raises(type(theirs.value), match=str(theirs.value)[:30].replace("(", r"\(").replace(")", r"\)")):
        call(vkml, vkml.ones(1, 2, 7, 7))


def test_without_samples_each_plane_draws_its_own():
    x = vkml.arange(2 * 16 * 16, dtype=vkml.float32).reshape(1, 2, 16, 16)
    vkml.manual_seed(0)
    first = vkml.nn.functional.fractional_max_pool2d(x, 2, output_size=5, return_indices=True)[1]
    vkml.manual_seed(0)
    again = vkml.nn.functional.fractional_max_pool2d(x, 2, output_size=5, return_indices=True)[1]
    assert first.tolist() == again.tolist() and first.shape == (1, 2, 5, 5)


def test_fractional_max_pool2d_same_on_vulkan(gpu):
    rng = np.random.default_rng(3)
    data, samples = rng.standard_normal((1, 2, 7, 6)).astype(np.float32), rng.random((1, 2, 2)).astype(np.float32)
    results = []
    for device in ("cpu", gpu):
        x = vkml.tensor(data, device=device, requires_grad=True)
        values, indices = vkml.nn.functional.fractional_max_pool2d(
            x, 2, output_size=(4, 3), return_indices=True, _random_samples=vkml.tensor(samples, device=device)
        )
        values.sum().backward()
        results.append((values.numpy().tolist(), indices.numpy().tolist(), x.grad.numpy().tolist()))
    assert results[0] == results[1]
