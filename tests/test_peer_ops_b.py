"""PyTorch programs' calls that a sweep of a peer op suite found different on vkml (its second half).

Each row is one call written once for both libraries (``t`` is ``torch`` or ``vkml``): the values,
dtype and shape must match PyTorch's, and so must the gradients of ``out.sum()``; the error rows
must raise PyTorch's exception class. A few rows also run on the Vulkan device, which must give
the CPU backend's bits.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import vkml
import vkml.nn.functional as VF


def _data(shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.uniform(-2, 2, s).astype(np.float32) for s in shapes]


def _F(t):
    return torch.nn.functional if t is torch else VF


# (name, input shapes, call(t, *inputs))
OPS = [
    # pad modes that crop a dim away entirely
    ("reflect crop to empty", [(1, 1, 5, 5)], lambda t, x: _F(t).pad(x, (0, 0, 0, -5), mode="reflect")),
    ("replicate crop to empty", [(1, 1, 5, 5)], lambda t, x: _F(t).pad(x, (1, 0, 0, -5), mode="replicate")),
    # tuples inside an index are index sequences, as lists
    ("tuple index", [(2, 5, 6)], lambda t, x: x[(1, 0, -1), :]),
    ("nested tuple", [(2, 5, 6)], lambda t, x: x[((0,),)]),
    ("doubly nested tuple", [(2, 5, 6)], lambda t, x: x[(((0,),),)]),
    ("tuple beside ints", [(2, 5, 6)], lambda t, x: x[1, (2, 1, 0), None, (4, 0, 1)]),
    ("tuple pair", [(2, 5, 6)], lambda t, x: x[(0, 1), (1, 1)]),
    # a Python list of floats truncates toward zero
    ("float list", [(10,)], lambda t, x: x[[1.9, -1.5, 2]]),
    # PyTorch reads every further ``...`` as skipping the dims already taken
    ("two ellipses", [(4, 3)], lambda t, x: x[..., ...]),
    ("ellipsis int ellipsis", [(2, 3, 4)], lambda t, x: x[..., 0, ...]),
    ("none ellipsis ellipsis", [(4, 3)], lambda t, x: x[None, ..., ...]),
    # windows that tile the input (stride = kernel): one reshape, not a view per tap
    ("global avg_pool2d", [(2, 2, 5, 7)], lambda t, x: _F(t).avg_pool2d(x, kernel_size=(5, 7))),
    ("avg_pool2d crops the rest", [(1, 2, 5, 7)], lambda t, x: _F(t).avg_pool2d(x, 2)),
    ("avg_pool2d ceil", [(1, 1, 5, 7)], lambda t, x: _F(t).avg_pool2d(x, 2, ceil_mode=True, count_include_pad=False)),
    # windows over 64 elements that overlap: summed one dim at a time
    (
        "avg_pool2d large window",
        [(1, 1, 10, 9)],
        lambda t, x: _F(t).avg_pool2d(x, (9, 8), stride=2, padding=4, ceil_mode=True, count_include_pad=False),
    ),
    # uint8 bilinear: PyTorch's fixed-point kernel, bit for bit
    (
        "uint8 bilinear",
        [(1, 3, 9, 11)],
        lambda t, x: _F(t).interpolate((60 * x).relu().type(t.uint8), size=(5, 17), mode="bilinear"),
    ),
    (
        "uint8 bilinear corners",
        [(2, 1, 6, 5)],
        lambda t, x: _F(t).interpolate(
            (60 * x).relu().type(t.uint8), scale_factor=1.7, mode="bilinear", align_corners=True
        ),
    ),
    (
        "max_pool2d values and indices tiled",  # (values + int64 indices is float32: both checked, and the gradient)
        [(1, 2, 6, 7)],
        lambda t, x: sum(_F(t).max_pool2d(x, (3, 2), ceil_mode=True, return_indices=True)),
    ),
]


# rows whose gradient a cheaper row already covers (the CPU backend compiles each of their kernels slowly)
NO_GRAD = {"avg_pool2d large window"}


def _run(t, call, arrays, device=None, grad=True):
    if t is torch:
        inputs = [torch.tensor(a, requires_grad=True) for a in arrays]
    else:
        inputs = [vkml.tensor(a, requires_grad=True, **({"device": device} if device else {})) for a in arrays]
    out = call(t, *inputs)
    grads = None
    if grad and out.dtype in (torch.float32, vkml.float32):
        grads = t.autograd.grad(call(t, *inputs).sum(), inputs)
    return out, grads


@pytest.mark.parametrize("name, shapes, call", OPS, ids=[o[0] for o in OPS])
def test_matches_torch_on_cpu(name, shapes, call):
    arrays = _data(shapes)
    want, want_grads = _run(torch, call, arrays, grad=name not in NO_GRAD)
    got, got_grads = _run(vkml, call, arrays, grad=name not in NO_GRAD)
    assert tuple(got.shape) == tuple(want.shape)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-6, atol=1e-6)
    assert (got_grads is None) == (want_grads is None)
    for g, w in zip(got_grads or (), want_grads or ()):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6, atol=1e-6)


ON_VULKAN = [
    o
    for o in OPS
    if o[0] in ("reflect crop to empty", "tuple beside ints", "two ellipses", "global avg_pool2d", "uint8 bilinear")
]


@pytest.mark.parametrize("name, shapes, call", ON_VULKAN, ids=[o[0] for o in ON_VULKAN])
def test_vulkan_gives_the_cpu_bits(name, shapes, call, gpu):
    arrays = _data(shapes)
    cpu, cpu_grads = _run(vkml, call, arrays)
    dev, dev_grads = _run(vkml, call, arrays, device=gpu)
    np.testing.assert_array_equal(dev.numpy(), cpu.numpy())
    for g, c in zip(dev_grads or (), cpu_grads or ()):
        np.testing.assert_array_equal(g.numpy(), c.numpy())


def test_list_holding_sequences_is_an_index_tuple_with_torch_warning():
    a = np.arange(60, dtype=np.float32).reshape(2, 5, 6)
    with pytest.warns(UserWarning, match="non-tuple sequence"):
        got = vkml.tensor(a)[[[1], [0, 2]]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = torch.tensor(a)[[[1], [0, 2]]]
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    x = vkml.tensor(a)
    with pytest.warns(UserWarning):
        x[[[0], [1]]] = 5.0
    assert x[0, 1].tolist() == [5.0] * 6 and x[1, 1].tolist() == a[1, 1].tolist()


# (name, input shapes, call(t, *inputs)): PyTorch's exception class
ERRORS = [
    ("pad odd length", [(3, 3)], lambda t, x: _F(t).pad(x, (2, 0, 2))),
    ("pad too long", [(3, 3)], lambda t, x: _F(t).pad(x, (0, 0, 0, 0, 1, 0, 3, 0))),
    ("conv2d padding of 3", [(1, 2, 4, 4), (2, 2, 3, 3)], lambda t, x, w: _F(t).conv2d(x, w, padding=(1, 1, 1))),
    ("conv2d stride of 3", [(1, 2, 4, 4), (2, 2, 3, 3)], lambda t, x, w: _F(t).conv2d(x, w, stride=(1, 1, 1))),
    (
        "conv_transpose2d padding of 3",
        [(1, 2, 4, 4), (2, 2, 3, 3)],
        lambda t, x, w: _F(t).conv_transpose2d(x, w, padding=(1, 1, 1)),
    ),
    ("max_pool2d padding of 3", [(1, 1, 6, 6)], lambda t, x: _F(t).max_pool2d(x, 2, padding=(1, 1, 1))),
    ("avg_pool2d padding of 3", [(1, 1, 6, 6)], lambda t, x: _F(t).avg_pool2d(x, 2, padding=(1, 1, 1))),
    ("avg_pool2d kernel of 3", [(1, 1, 6, 6)], lambda t, x: _F(t).avg_pool2d(x, (2, 2, 2))),
    ("clip without bounds", [(3,)], lambda t, x: x.clip(None, None)),
    ("clamp without bounds", [(3,)], lambda t, x: t.clamp(x)),
    ("index after a second ellipsis", [(4, 3)], lambda t, x: x[..., ..., None]),
]


@pytest.mark.parametrize("name, shapes, call", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_like_torch(name, shapes, call):
    arrays = _data(shapes)
    with pytest.raises(Exception) as want:
        call(torch, *[torch.tensor(a) for a in arrays])
    inputs = [vkml.tensor(a) for a in arrays]
    with pytest.raises(want.type):
        call(vkml, *inputs)
    for x, a in zip(inputs, arrays):  # the inputs are intact
        np.testing.assert_array_equal(x.numpy(), a)
