"""PyTorch-parity gaps of session 19, each checked against PyTorch CPU.

- ``grad_fn`` names and edges of the ~100 most common ops (``type(t.grad_fn).__name__``, ``name()``,
  the names of ``next_functions`` and the ``grad_fn=<...>`` of ``repr(t)``), as programs and tutorials
  print them (``print(loss.grad_fn.next_functions[0][0])``).
- BatchNorm training of a ``.half()``/``.bfloat16()`` model: outputs, gradients and running statistics
  with PyTorch CPU's bits (its kernel's rounding of the saved mean and invstd, and of bfloat16's steps).
- ``torch.tensor(t)`` and ``t.new_tensor(t)`` of a tensor warn as PyTorch does (its wording, the user's line).
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
import torch

import vkml
from vkml.frontend import printing

_RNG = np.random.default_rng(19)
_A = _RNG.standard_normal((3, 4)).astype(np.float32)
_B = _RNG.standard_normal((4, 5)).astype(np.float32)
_V = _RNG.standard_normal(4).astype(np.float32)

# name -> fn(lib, F, x (3, 4), y (4, 5), v (4,)), each leaf requiring grad
GRAD_FN_CASES = {
    "select": lambda L, F, x, y, v: x[0],
    "select_negative": lambda L, F, x, y, v: x[:, -1],
    "select_twice": lambda L, F, x, y, v: x[0, 1],
    "select_after_ellipsis": lambda L, F, x, y, v: x[..., 0],
    "slice": lambda L, F, x, y, v: x[1:],
    "slice_full": lambda L, F, x, y, v: x[:],
    "slice_step": lambda L, F, x, y, v: x[:, ::2],
    "select_then_slice": lambda L, F, x, y, v: x[0, 1:],
    "slice_then_select": lambda L, F, x, y, v: x[1:, 0],
    "none_index": lambda L, F, x, y, v: x[None],
    "select_then_none": lambda L, F, x, y, v: x[0, None],
    "alias_ellipsis": lambda L, F, x, y, v: x[...],
    "alias_full_tuple": lambda L, F, x, y, v: x[:, :],
    "index": lambda L, F, x, y, v: x[L.tensor([0, 2])],
    "bool_mask": lambda L, F, x, y, v: x[x > 0],
    "narrow": lambda L, F, x, y, v: x.narrow(1, 0, 2),
    "unsqueeze": lambda L, F, x, y, v: x.unsqueeze(0),
    "squeeze": lambda L, F, x, y, v: x.unsqueeze(0).squeeze(),
    "squeeze_dim": lambda L, F, x, y, v: x.unsqueeze(0).squeeze(0),
    "expand": lambda L, F, x, y, v: v.expand(3, 4),
    "permute": lambda L, F, x, y, v: x.permute(1, 0),
    "t": lambda L, F, x, y, v: x.t(),
    "T": lambda L, F, x, y, v: x.T,
    "transpose": lambda L, F, x, y, v: x.transpose(0, 1),
    "view": lambda L, F, x, y, v: x.view(12),
    "reshape": lambda L, F, x, y, v: x.reshape(12),
    "flatten": lambda L, F, x, y, v: x.flatten(),
    "contiguous": lambda L, F, x, y, v: x.t().contiguous(),
    "clone": lambda L, F, x, y, v: x.clone(),
    "repeat": lambda L, F, x, y, v: x.repeat(2, 1),
    "cat": lambda L, F, x, y, v: L.cat([x, x]),
    "stack": lambda L, F, x, y, v: L.stack([x, x.detach()], 1),
    "split": lambda L, F, x, y, v: x.split(2, 1)[1],
    "split_sizes": lambda L, F, x, y, v: x.split([1, 3], 1)[0],
    "chunk": lambda L, F, x, y, v: x.chunk(2, 1)[0],
    "unbind": lambda L, F, x, y, v: x.unbind(0)[1],
    "tensor_split": lambda L, F, x, y, v: x.tensor_split(2, 1)[0],
    "gather": lambda L, F, x, y, v: x.gather(1, L.tensor([[0], [1], [2]])),
    "masked_fill": lambda L, F, x, y, v: x.masked_fill(x > 0, 0.0),
    "masked_fill_tensor": lambda L, F, x, y, v: x.masked_fill(x > 0, L.tensor(0.0)),
    "mm": lambda L, F, x, y, v: x.mm(y),
    "matmul": lambda L, F, x, y, v: x @ y,
    "mv": lambda L, F, x, y, v: x @ v,
    "dot": lambda L, F, x, y, v: v @ v,
    "bmm": lambda L, F, x, y, v: L.bmm(x.unsqueeze(0), y.unsqueeze(0)),
    "addmm": lambda L, F, x, y, v: L.addmm(y[0], x, y),
    "linear": lambda L, F, x, y, v: F.linear(x, y.t()),
    "linear_bias": lambda L, F, x, y, v: F.linear(x, y.t(), y[0]),
    "linear_batched": lambda L, F, x, y, v: F.linear(x.unsqueeze(0), y.t(), y[0]),
    "nll_loss": lambda L, F, x, y, v: F.nll_loss(F.log_softmax(x, 1), L.tensor([0, 1, 2])),
    "cross_entropy": lambda L, F, x, y, v: F.cross_entropy(x, L.tensor([0, 1, 2])),
    "log_softmax": lambda L, F, x, y, v: F.log_softmax(x, dim=1),
    "softmax": lambda L, F, x, y, v: F.softmax(x, dim=1),
    "mean": lambda L, F, x, y, v: x.mean(),
    "mean_dim": lambda L, F, x, y, v: x.mean(0),
    "sum": lambda L, F, x, y, v: x.sum(),
    "sum_dim": lambda L, F, x, y, v: x.sum(1),
    "prod_dim": lambda L, F, x, y, v: x.prod(1),
    "add": lambda L, F, x, y, v: x + x,
    "add_scalar": lambda L, F, x, y, v: x + 1,
    "radd_scalar": lambda L, F, x, y, v: 1 + x,
    "sub": lambda L, F, x, y, v: x - x.detach(),
    "rsub_scalar": lambda L, F, x, y, v: 1 - x,
    "mul": lambda L, F, x, y, v: x * x,
    "rmul_scalar": lambda L, F, x, y, v: 2 * x,
    "div": lambda L, F, x, y, v: x / (x + 3),
    "div_scalar": lambda L, F, x, y, v: x / 3,
    "neg": lambda L, F, x, y, v: -x,
    "pow_scalar": lambda L, F, x, y, v: x**2,
    "pow_tensor": lambda L, F, x, y, v: x.abs() ** x,
    "rpow": lambda L, F, x, y, v: 2**x,
    "square": lambda L, F, x, y, v: x.square(),
    "exp": lambda L, F, x, y, v: x.exp(),
    "log": lambda L, F, x, y, v: x.abs().log(),
    "sqrt": lambda L, F, x, y, v: x.abs().sqrt(),
    "sin": lambda L, F, x, y, v: x.sin(),
    "relu": lambda L, F, x, y, v: F.relu(x),
    "sigmoid": lambda L, F, x, y, v: x.sigmoid(),
    "tanh": lambda L, F, x, y, v: x.tanh(),
    "gelu": lambda L, F, x, y, v: F.gelu(x),
    "silu": lambda L, F, x, y, v: F.silu(x),
    "leaky_relu": lambda L, F, x, y, v: F.leaky_relu(x),
    "elu": lambda L, F, x, y, v: F.elu(x),
    "hardtanh": lambda L, F, x, y, v: F.hardtanh(x),
    "softplus": lambda L, F, x, y, v: F.softplus(x),
    "clamp": lambda L, F, x, y, v: x.clamp(-0.5, 0.5),
    "clamp_min_keyword": lambda L, F, x, y, v: x.clamp(min=0),
    "clamp_min": lambda L, F, x, y, v: x.clamp_min(0),
    "clamp_max_tensor": lambda L, F, x, y, v: x.clamp_max(L.tensor(0.0)),
    "clamp_tensors": lambda L, F, x, y, v: L.clamp(x, L.tensor(0.0), L.tensor(1.0)),
    "where": lambda L, F, x, y, v: L.where(x > 0, x, x * 2),
    "max_all": lambda L, F, x, y, v: x.max(),
    "max_dim": lambda L, F, x, y, v: x.max(1)[0],
    "amax": lambda L, F, x, y, v: x.amax(1),
    "cumsum": lambda L, F, x, y, v: x.cumsum(1),
    "roll": lambda L, F, x, y, v: x.roll(1, 0),
    "roll_flat": lambda L, F, x, y, v: x.roll(2),
    "index_select": lambda L, F, x, y, v: x.index_select(1, L.tensor([0, 2])),
    "tril": lambda L, F, x, y, v: x.tril(),
    "triu": lambda L, F, x, y, v: x.triu(1),
    "var": lambda L, F, x, y, v: x.var(),
    "std_dim": lambda L, F, x, y, v: x.std(1),
    "norm": lambda L, F, x, y, v: x.norm(),
    "norm_dim": lambda L, F, x, y, v: x.norm(dim=1),
    "to_double": lambda L, F, x, y, v: x.double(),
    "mse_loss": lambda L, F, x, y, v: F.mse_loss(x, x.detach() * 0),
    "l1_loss": lambda L, F, x, y, v: F.l1_loss(x, x.detach() * 0),
    "bce_with_logits": lambda L, F, x, y, v: F.binary_cross_entropy_with_logits(x, x.detach() * 0),
    "bce": lambda L, F, x, y, v: F.binary_cross_entropy(x.sigmoid(), x.detach() * 0),
    "smooth_l1_loss": lambda L, F, x, y, v: F.smooth_l1_loss(x, x.detach() * 0),
    "layer_norm": lambda L, F, x, y, v: F.layer_norm(x, (4,)),
    "layer_norm_affine": lambda L, F, x, y, v: F.layer_norm(x, (4,), v, v),
    "batch_norm": lambda L, F, x, y, v: F.batch_norm(x, None, None, training=True),
    "batch_norm_affine": lambda L, F, x, y, v: F.batch_norm(x, None, None, v[:4], v[:4], training=True),
    "embedding": lambda L, F, x, y, v: F.embedding(L.tensor([0, 2]), x),
    "conv2d": lambda L, F, x, y, v: F.conv2d(x.view(1, 1, 3, 4), y[:2, :2].contiguous().view(1, 1, 2, 2)),
    "max_pool2d": lambda L, F, x, y, v: F.max_pool2d(x.view(1, 1, 3, 4), 2),
    "avg_pool2d": lambda L, F, x, y, v: F.avg_pool2d(x.view(1, 1, 3, 4), 2),
}


def _grad_fn_names(lib, fn) -> tuple:
    F = lib.nn.functional
    x, y, v = (lib.tensor(a, requires_grad=True) for a in (_A, _B, _V))
    out = fn(lib, F, x, y, v)
    node = out.grad_fn
    edges = tuple(type(n).__name__ if n is not None else None for n, _ in node.next_functions)
    if lib is torch:
        text = repr(out)
        suffix = text[text.rfind("grad_fn=") : -1]
    else:  # repr's suffix without computing the values (tests/test_printing.py checks the whole text)
        (suffix,) = printing._grad_suffixes(out)
    return type(node).__name__, node.name(), edges, suffix


@pytest.mark.parametrize("case", sorted(GRAD_FN_CASES))
def test_grad_fn_names_and_edges_match_pytorch(case):
    fn = GRAD_FN_CASES[case]
    assert _grad_fn_names(vkml, fn) == _grad_fn_names(torch, fn)


def test_repr_ends_with_the_shown_node():
    x = vkml.tensor(_A, requires_grad=True)
    assert repr(x[0]).endswith("grad_fn=<SelectBackward0>)")
    assert repr(1 - x[:, 1:]).endswith("grad_fn=<RsubBackward1>)")


def test_shown_nodes_keep_the_gradients():
    # the names are only shown: backward through the renamed nodes gives PyTorch's gradients
    for case in ("select_then_slice", "stack", "split", "unbind", "rsub_scalar", "clamp", "masked_fill", "mv"):
        grads = []
        for lib in (torch, vkml):
            x, y, v = (lib.tensor(a, requires_grad=True) for a in (_A, _B, _V))
            GRAD_FN_CASES[case](lib, lib.nn.functional, x, y, v).sum().backward()
            grads.append([None if t.grad is None else np.asarray(t.grad.tolist()) for t in (x, y, v)])
        for mine, theirs in zip(grads[1], grads[0], strict=True):
            assert (mine is None) == (theirs is None), case
            if mine is not None:
                np.testing.assert_allclose(mine, theirs, rtol=1e-6, atol=1e-6, err_msg=case)


# ---------------------------------------------------------------------- torch.tensor(a_tensor)


def _copy_construct_warnings(lib, make) -> list[str]:
    source = lib.ones(2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        make(lib, source)
    return [f"{w.category.__name__}: {w.message} ({os.path.basename(w.filename)})" for w in caught]


@pytest.mark.parametrize(
    "make",
    [
        lambda lib, t: lib.tensor(t),
        lambda lib, t: lib.tensor(t, dtype=lib.float64),
        lambda lib, t: t.new_tensor(t),
        lambda lib, t: lib.tensor([t[0], t[1]]),  # a list of tensors: no warning
        lambda lib, t: lib.as_tensor(t),
    ],
)
def test_tensor_of_a_tensor_warns_as_pytorch(make):
    assert _copy_construct_warnings(vkml, make) == _copy_construct_warnings(torch, make)


# ---------------------------------------------------------------------- float16/bfloat16 batch norm training


def _batch_norm_steps(lib, dtype_name: str, shape: tuple, affine: bool, device=None) -> list[np.ndarray]:
    """Two training steps of a ``.half()``/``.bfloat16()`` BatchNorm: outputs, input gradients, the running
    statistics and the parameters' gradients, as float32 arrays."""
    rng = np.random.default_rng(sum(shape) + affine)
    channels = shape[1]
    layer = (
        lib.nn.BatchNorm1d(channels, affine=affine) if len(shape) < 4 else lib.nn.BatchNorm2d(channels, affine=affine)
    )
    with lib.no_grad():
        if affine:
            layer.weight.copy_(lib.tensor(rng.standard_normal(channels).astype(np.float32)))
            layer.bias.copy_(lib.tensor(rng.standard_normal(channels).astype(np.float32)))
        layer.running_mean.copy_(lib.tensor(rng.standard_normal(channels).astype(np.float32)))
        layer.running_var.copy_(lib.tensor((rng.random(channels) + 0.5).astype(np.float32)))
    dtype = getattr(lib, dtype_name)
    layer = layer.to(dtype) if device is None else layer.to(device=device, dtype=dtype)
    results = []
    for _ in range(2):
        x = lib.tensor(rng.standard_normal(shape).astype(np.float32) * 3 + 1).to(dtype)
        grad = lib.tensor(rng.standard_normal(shape).astype(np.float32)).to(dtype)
        if device is not None:
            x, grad = x.to(device), grad.to(device)
        x.requires_grad_()
        out = layer(x)
        out.backward(grad)
        results += [out, x.grad]
    results += [layer.running_mean, layer.running_var]
    if affine:
        results += [layer.weight.grad, layer.bias.grad]
    return [np.asarray(t.detach().float().cpu().tolist(), np.float32) for t in results]


def _assert_pytorchs_bits(mine: list, theirs: list, dtype_name: str) -> None:
    """Equal, but for a rare element one ``dtype_name`` ulp away: vkml adds the float32 sums (a channel's
    Σdy, Σ(x - mean)·dy) in its own fixed order, PyTorch in its vector lanes and threads, and a last-bit
    difference of a sum flips the rounding of an element about once in a few thousand."""
    ulp = np.float32(2.0**-10 if dtype_name == "float16" else 2.0**-7)
    for i, (a, b) in enumerate(zip(mine, theirs, strict=True)):
        differ = a != b
        assert differ.sum() <= max(1, a.size // 1000), f"result {i}: {differ.sum()} of {a.size} differ"
        scale = np.exp2(np.floor(np.log2(np.maximum(np.abs(b[differ]), np.float32(2.0**-14)))))
        np.testing.assert_array_less(np.abs(a[differ] - b[differ]), ulp * scale * 1.001, err_msg=f"result {i}")


_BATCH_NORM_CASES = [("float16", (8, 3), True), ("bfloat16", (4, 3, 5), True)]
_MORE_BATCH_NORM_CASES = [
    (dtype_name, shape, affine)
    for dtype_name in ("float16", "bfloat16")
    for shape in ((8, 3), (64, 5), (4, 3, 5), (16, 4, 1), (4, 3, 6, 5))
    for affine in (True, False)
    if (dtype_name, shape, affine) not in _BATCH_NORM_CASES
]


@pytest.mark.parametrize(
    ("dtype_name", "shape", "affine"),
    _BATCH_NORM_CASES + [pytest.param(*case, marks=pytest.mark.exhaustive) for case in _MORE_BATCH_NORM_CASES],
)
def test_half_model_batch_norm_training_has_pytorchs_bits(dtype_name, shape, affine):
    mine = _batch_norm_steps(vkml, dtype_name, shape, affine)
    theirs = _batch_norm_steps(torch, dtype_name, shape, affine)
    _assert_pytorchs_bits(mine, theirs, dtype_name)


@pytest.mark.stress  # a compile of each kernel on lavapipe: about 3 s a dtype
@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16"])
def test_half_model_batch_norm_training_same_bits_on_vulkan(gpu, dtype_name):
    shape = (4, 3, 6, 5)
    on_cpu = _batch_norm_steps(vkml, dtype_name, shape, True)
    on_gpu = _batch_norm_steps(vkml, dtype_name, shape, True, device=gpu)
    for i, (a, b) in enumerate(zip(on_gpu, on_cpu, strict=True)):
        np.testing.assert_array_equal(a, b, err_msg=f"result {i}")


# tests/test_autograd.py's inventory of checked rules: the half-precision rules checked in this file
GRAD_TESTED = {"addmv", "narrow_batch_norm", "narrow_cumprod", "narrow_huber"}


# ---------------------------------------------------------------------- float16/bfloat16 cumprod's gradient


@pytest.mark.parametrize(
    ("dtype_name", "zeros"),
    [("float16", 0), ("float16", 3)]
    + [
        pytest.param(*case, marks=pytest.mark.exhaustive) for case in (("float16", 1), ("bfloat16", 0), ("bfloat16", 3))
    ],
)
def test_half_cumprod_gradient_has_pytorchs_bits(dtype_name, zeros):
    # PyTorch's cumprod_backward in the input's dtype: reversed_cumsum(output·g) / input, and its
    # first-zero formula where a slice holds zeros
    rng = np.random.default_rng(zeros)
    values = rng.uniform(0.5, 1.5, (4, 6)).astype(np.float32) * rng.choice([-1, 1], (4, 6))
    values.flat[rng.choice(values.size, zeros, replace=False)] = 0.0
    weights = rng.standard_normal((4, 6)).astype(np.float32)
    grads = []
    for lib in (torch, vkml):
        dtype = getattr(lib, dtype_name)
        x = lib.tensor(values).to(dtype).requires_grad_()
        (lib.cumprod(x, 1) * lib.tensor(weights).to(dtype)).sum().backward()
        grads.append(np.asarray(x.grad.float().tolist(), np.float32))
    np.testing.assert_array_equal(grads[1], grads[0])


# ---------------------------------------------------------------------- float16 torch.gradient


@pytest.mark.parametrize("edge_order", [pytest.param(1, marks=pytest.mark.exhaustive), 2])
def test_half_gradient_has_pytorchs_bits(edge_order):
    # PyTorch's op order: ((x[2:] - x[:-2]) / h) / 2 inside, (-1.5·x0 + 2·x1 - 0.5·x2) / h at an edge
    values = np.random.default_rng(edge_order).standard_normal((6, 7)).astype(np.float32) * 10
    results = []
    for lib in (torch, vkml):
        outs = lib.gradient(lib.tensor(values).half(), spacing=[2.1, 0.3], edge_order=edge_order)
        results.append([np.asarray(t.float().tolist(), np.float32) for t in outs])
    for mine, theirs in zip(results[1], results[0], strict=True):
        np.testing.assert_array_equal(mine, theirs)


# ---------------------------------------------------------------------- ldexp's own backward node


def test_half_ldexp_gradient_has_pytorchs_bits():
    # PyTorch's LdexpBackward0: (grad · result) · ln 2 for the exponent, not pow's backward
    rng = np.random.default_rng(7)
    values, exponents = rng.standard_normal((4, 6)) * 8, rng.standard_normal(6) * 3
    results = []
    for lib in (torch, vkml):
        x = lib.tensor(values.astype(np.float32)).half().requires_grad_()
        e = lib.tensor(exponents.astype(np.float32)).half().requires_grad_()
        out = lib.ldexp(x, e)
        (out * lib.tensor(np.linspace(-1.0, 2.0, 24).reshape(4, 6).astype(np.float32)).half()).sum().backward()
        results.append([type(out.grad_fn).__name__] + [np.asarray(t.float().tolist()) for t in (out, x.grad, e.grad)])
    assert results[1][0] == results[0][0]
    for mine, theirs in zip(results[1][1:], results[0][1:], strict=True):
        np.testing.assert_array_equal(mine, theirs)


def test_half_addmv_gradients_have_pytorchs_bits():
    # PyTorch's AddmvBackward0 scales (matᵀ @ grad) by alpha, where the ops' rules scaled grad first
    rng = np.random.default_rng(11)
    arrays = [rng.standard_normal(shape).astype(np.float32) for shape in ((5,), (5, 10), (10,))]
    results = []
    for lib in (torch, vkml):
        leaves = [lib.tensor(a).half().requires_grad_() for a in arrays]
        out = lib.addmv(*leaves, beta=0.2, alpha=0.6)
        (out * lib.tensor(np.linspace(-1.0, 2.0, 5).astype(np.float32)).half()).sum().backward()
        results.append([type(out.grad_fn).__name__] + [np.asarray(t.grad.float().tolist()) for t in leaves])
    assert results[1][0] == results[0][0]
    for mine, theirs in zip(results[1][1:], results[0][1:], strict=True):
        np.testing.assert_array_equal(mine, theirs)


def test_half_huber_loss_has_pytorchs_bits():
    # PyTorch's huber kernel computes each loss in float32 (delta too) and rounds once
    rng = np.random.default_rng(13)
    a, b = (rng.standard_normal((6, 7)).astype(np.float32) * 6 for _ in range(2))
    results = []
    for lib in (torch, vkml):
        x = lib.tensor(a).half().requires_grad_()
        loss = lib.nn.functional.huber_loss(x, lib.tensor(b).half(), reduction="none", delta=3.3)
        (loss * lib.tensor(np.linspace(-1.0, 2.0, 42).reshape(6, 7).astype(np.float32)).half()).sum().backward()
        results.append([np.asarray(t.float().tolist()) for t in (loss, x.grad)])
    np.testing.assert_array_equal(results[1][0], results[0][0])
    # the gradient: PyTorch's vector lanes' rounding; its scalar tail (a row's last few elements) multiplies
    # by the float32 delta and may differ in the last bit there
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=2.0**-10, atol=0)
