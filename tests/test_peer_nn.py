"""What running tinygrad's layer, optimizer and tensor suites against PyTorch found: each case runs on
torch and on vkml (CPU, and lavapipe where a kernel is concerned) and must give torch's values or error.

Covered: a ``cat`` of more tensors than a kernel may bind (a convolution with a 7x7 kernel is a cat of
49 windows; lavapipe allows 32 storage buffers per kernel), the functional convolutions' errors for
a bad string padding, an optimizer given a parameter twice in one group (updated twice), ragged
nested lists (PyTorch's ValueError), ``Tensor.cauchy_``, index
errors (a float, an int8/int16 tensor: IndexError; ``del t[i]``: TypeError), uint8 masks, and an
``alpha`` (SGD's ``lr``) past the dtype's range (float16 parameters with lr=1e10: RuntimeError), and
the checks of an assigned ``.grad`` (a tensor of the same dtype and size).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import vkml
from vkml.schedule import scheduler

RNG = np.random.default_rng(7)
X = RNG.standard_normal((1, 2, 9, 9)).astype(np.float32)
W7 = RNG.standard_normal((3, 2, 7, 7)).astype(np.float32)
ROWS = RNG.standard_normal((40, 3)).astype(np.float32)


def _slices(m, device):
    x = m.tensor(ROWS, **({} if device is None else {"device": device}))
    return [x[i : i + 1] for i in range(40)]


# (id, fn(m, device)): values that cross kernels of many sources; compared to torch's
WIDE = [
    ("cat_40_slices", lambda m, d: m.cat(_slices(m, d), 0)),
    ("cat_40_slices_dim1", lambda m, d: m.cat([s.t() for s in _slices(m, d)], 1) * 2),
    ("stack_40", lambda m, d: m.stack(_slices(m, d), 2)),
    (
        "conv2d_7x7",
        lambda m, d: m.nn.functional.conv2d(
            m.tensor(X, **({} if d is None else {"device": d})),
            m.tensor(W7, **({} if d is None else {"device": d})),
            padding=2,
        ),
    ),
    ("unfold_6x6", lambda m, d: m.nn.functional.unfold(m.tensor(X, **({} if d is None else {"device": d})), 6)),
]


def _max_bindings(out) -> int:
    recipe = scheduler.compile_recipe(scheduler.Plan([out.node]))
    return max(len(step.buffers or ()) for step in recipe.steps)


@pytest.mark.parametrize("case", WIDE, ids=[c[0] for c in WIDE])
def test_wide_kernels_bind_at_most_32_buffers(case):
    name, fn = case
    out = fn(vkml, None)
    assert _max_bindings(out) <= 32, name
    np.testing.assert_allclose(out.numpy(), fn(torch, None).numpy(), rtol=1e-5, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("case", WIDE[::2], ids=[c[0] for c in WIDE[::2]])
def test_wide_kernels_on_vulkan(case, gpu):
    name, fn = case
    got = fn(vkml, gpu).cpu().numpy()
    np.testing.assert_array_equal(got, fn(vkml, None).numpy(), err_msg=name)  # the CPU's bits
    np.testing.assert_allclose(got, fn(torch, None).numpy(), rtol=1e-5, atol=1e-5, err_msg=name)


def test_cat_of_many_has_torch_gradients():
    grads = []
    for m in (vkml, torch):
        parts = [m.tensor(ROWS[i : i + 1], requires_grad=True) for i in range(20)]
        out = m.cat(parts, 0)
        (out * m.tensor(ROWS[:20])).sum().backward()
        grads.append(np.concatenate([p.grad.numpy() for p in parts]))
    np.testing.assert_array_equal(grads[0], grads[1])


def _sgd_step(m, **options):
    p = m.zeros(2, dtype=m.float16, requires_grad=True)
    p.grad = m.ones(2, dtype=m.float16)
    m.optim.SGD([p], **options).step()


# (id, fn(m)): PyTorch's exception class for each
ERRORS = [
    (
        "conv2d_same_strided",
        lambda m: m.nn.functional.conv2d(m.tensor(X), m.tensor(W7[..., :3, :3]), stride=2, padding="same"),
        RuntimeError,
    ),
    (
        "conv1d_bad_padding_string",
        lambda m: m.nn.functional.conv1d(m.tensor(X[0]), m.tensor(W7[:, :, 0, :3]), padding="full"),
        RuntimeError,
    ),
    ("Conv2d_same_strided", lambda m: m.nn.Conv2d(2, 3, 3, stride=2, padding="same"), ValueError),
    ("Conv2d_bad_padding_string", lambda m: m.nn.Conv2d(2, 3, 3, padding="full"), ValueError),
    ("tensor_ragged", lambda m: m.tensor([[1, 2], [3]]), ValueError),
    ("tensor_ragged_deep", lambda m: m.tensor([[[1.0, 1.0, 1.0], [1.0, 1.0]]]), ValueError),
    ("tensor_scalar_among_lists", lambda m: m.tensor([[1], [1], 1]), TypeError),
    ("index_float", lambda m: m.zeros(3, 3)[0.0], IndexError),
    ("index_float_after_slice", lambda m: m.zeros(3, 3)[:, 1.0], IndexError),
    ("index_object", lambda m: m.zeros(3)[object()], IndexError),
    ("index_int16_tensor", lambda m: m.zeros(3)[m.tensor([1], dtype=m.int16)], IndexError),
    ("index_put_int8_tensor", lambda m: m.zeros(3).__setitem__(m.tensor([1], dtype=m.int8), 1.0), IndexError),
    ("delitem", lambda m: m.zeros(3).__delitem__(0), TypeError),
    ("fill_through_byte_mask", lambda m: m.zeros(3).__setitem__(m.tensor([1, 0, 1], dtype=m.uint8), 1.0), RuntimeError),
    (
        "add_alpha_past_half",
        lambda m: m.zeros(2, dtype=m.float16).add(m.ones(2, dtype=m.float16), alpha=7e4),
        RuntimeError,
    ),
    ("sub_alpha_past_int8", lambda m: m.zeros(2, dtype=m.int8).sub(m.ones(2, dtype=m.int8), alpha=300), RuntimeError),
    ("sgd_lr_past_half", lambda m: _sgd_step(m, lr=1e10), RuntimeError),
    ("sgd_weight_decay_past_half", lambda m: _sgd_step(m, lr=0.1, weight_decay=1e6), RuntimeError),
    ("grad_of_other_size", lambda m: setattr(m.zeros(2, requires_grad=True), "grad", m.zeros(3)), RuntimeError),
    (
        "grad_of_other_dtype",
        lambda m: setattr(m.zeros(2, requires_grad=True), "grad", m.zeros(2).double()),
        RuntimeError,
    ),
    ("grad_not_a_tensor", lambda m: setattr(m.zeros(2, requires_grad=True), "grad", 1.0), TypeError),
    ("cauchy_of_int", lambda m: m.zeros(2, dtype=m.int64).cauchy_(), RuntimeError),
    ("cauchy_zero_sigma", lambda m: m.zeros(2).cauchy_(sigma=0.0), RuntimeError),
]


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_errors_as_torch(case):
    name, fn, cls = case
    with pytest.raises(cls):
        fn(torch)
    with pytest.raises(cls):
        fn(vkml)


def test_uint8_index_is_a_mask_as_torch():
    """PyTorch reads a uint8 index tensor as a mask (and warns that it is deprecated)."""
    got = []
    for m in (vkml, torch):
        x = m.tensor(ROWS[:4])
        mask = m.tensor([1, 0, 1, 1], dtype=m.uint8)
        with warnings.catch_warnings(record=True) as caught:  # PyTorch warns once per process
            warnings.simplefilter("always")
            picked = x[mask]
            x[mask] = m.zeros(3, 3)  # several values: index_put_ (one value is masked_fill_'s error, below)
        if m is vkml:
            assert len(caught) == 2 and all("uint8 is now deprecated" in str(c.message) for c in caught)
        got.append((picked.numpy(), x.numpy()))
    for a, b in zip(got[0], got[1], strict=True):
        np.testing.assert_array_equal(a, b)


def test_ragged_message_as_torch():
    with pytest.raises(ValueError, match=r"expected sequence of length 2 at dim 1 \(got 1\)"):
        vkml.tensor([[1, 2], [3]])


@pytest.mark.parametrize("on_vulkan", [False, True], ids=["cpu", "vulkan"])
def test_cauchy_fills_with_torch_distribution(on_vulkan, request):
    """Quantiles of Cauchy(median=1, sigma=2) over 4000 draws: median 1, quartiles at 1 -+ 2 (torch has the same law)."""
    device = request.getfixturevalue("gpu") if on_vulkan else "cpu"
    x = vkml.zeros(4000, device=device)
    assert x.cauchy_(1.0, 2.0) is x
    q1, median, q3 = np.percentile(x.cpu().numpy(), [25, 50, 75])
    assert abs(median - 1.0) < 0.2 and abs(q1 + 1.0) < 0.3 and abs(q3 - 3.0) < 0.3, (q1, median, q3)
    half = vkml.zeros(3, dtype=vkml.float16, device=device).cauchy_()
    assert half.dtype == vkml.float16 and bool(half.isfinite().all())


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW"])
def test_duplicate_parameter_is_updated_twice(name):
    """PyTorch warns, then steps a parameter listed twice twice (its update loop is in place)."""
    finals = []
    for m in (vkml, torch):
        w = m.tensor(ROWS[:2], requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            opt = getattr(m.optim, name)([w, w], lr=0.1)
        assert any("duplicate parameters" in str(c.message) for c in caught)
        for _ in range(3):
            opt.zero_grad()
            (w * w).sum().backward()
            opt.step()
        finals.append(w.detach().numpy())
    np.testing.assert_allclose(finals[0], finals[1], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", ["bool", "uint8", "int8", "int64", "float16", "bfloat16", "float32", "float64"])
def test_dtype_is_signed_as_torch(name):
    assert getattr(vkml, name).is_signed == getattr(torch, name).is_signed
