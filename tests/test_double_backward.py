"""Second derivatives through piecewise ops, pooling, sorting and indexing, against torch.autograd.

A gradient built with ``create_graph=True`` is differentiated again, with respect to the input and
to the upstream gradient (``grad_outputs``): PyTorch's gradient of the gradient is zero almost
everywhere for a mask (relu, max pooling) but connected (zeros, not "unused"), and the gradient
with respect to the upstream gradient is the mask times it.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import vkml
import vkml.nn.functional as VF

CPU = vkml.device("cpu")

# the rules that exist for second derivatives, checked here (tests/test_autograd.py asks)
GRAD_TESTED = {"sort_untake", "zero_link", "window_pick"}

# name -> (input shape, f(namespace, functional, x))
CASES = {
    "relu": ((3, 4), lambda m, F, x: F.relu(x)),
    "leaky_relu": ((3, 4), lambda m, F, x: F.leaky_relu(x, 0.1)),
    "hardtanh": ((3, 4), lambda m, F, x: F.hardtanh(x, -0.5, 0.5)),
    "threshold": ((3, 4), lambda m, F, x: F.threshold(x, 0.1, 2.0)),
    "max_pool2d": ((1, 1, 5, 5), lambda m, F, x: F.max_pool2d(x, 3, 2, 1)),
    "max_pool2d_indices": ((1, 1, 4, 4), lambda m, F, x: F.max_pool2d(x, 2, return_indices=True)[0]),
    "adaptive_max_pool2d": ((1, 1, 5, 5), lambda m, F, x: F.adaptive_max_pool2d(x, 2)),
    "adaptive_max_pool1d": ((1, 2, 7), lambda m, F, x: F.adaptive_max_pool1d(x, 3) * x[..., :3]),
    "adaptive_avg_pool2d": ((1, 1, 3, 3), lambda m, F, x: F.adaptive_avg_pool2d(x * x, 2)),
    "topk": ((3, 4), lambda m, F, x: x.topk(2, dim=1)[0]),
    "gather": ((3, 4), lambda m, F, x: (x * x).gather(1, m.tensor([[0, 1], [2, 2], [3, 0]]))),
    "bilinear": ((1, 1, 3, 3), lambda m, F, x: F.interpolate(x * x, scale_factor=2, mode="bilinear")),
}


def _second(lib, name, xs, vs, ws):
    """(gradient, its gradient by x, by the upstream gradient v) of the case, as numpy (None: unused)."""
    F = VF if lib is vkml else TF
    x = lib.tensor(xs, requires_grad=True)
    y = CASES[name][1](lib, F, x)
    v = lib.tensor(vs[: y.numel()].reshape(tuple(y.shape)), requires_grad=True)
    (g,) = lib.autograd.grad(y, x, v, create_graph=True)
    loss = (g * lib.tensor(ws)).sum() + (g * g).sum()
    grads = lib.autograd.grad(loss, [x, v], allow_unused=True)
    return [None if t is None else t.detach().numpy() for t in (g, *grads)]


# the default suite checks one op per kind of fix; the others run with -m stress
DEFAULT = {"relu", "max_pool2d", "max_pool2d_indices", "topk", "gather", "adaptive_avg_pool2d"}


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=() if n in DEFAULT else pytest.mark.stress) for n in sorted(CASES)]
)
def test_second_derivative_matches_torch(name):
    rng = np.random.default_rng(len(name))
    shape = CASES[name][0]
    xs, vs, ws = rng.standard_normal(shape), rng.standard_normal(64), rng.standard_normal(shape)
    expected = _second(torch, name, xs, vs, ws)
    got = _second(vkml, name, xs, vs, ws)
    for what, e, g in zip(("gradient", "by x", "by grad_outputs"), expected, got):
        assert (g is None) == (e is None), (name, what, g, e)
        if e is not None:
            np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12, err_msg=f"{name}: {what}")


def test_relu_network_hessian_vector_product_by_input():
    """HVP of a ReLU network by its input: the input reaches the gradient only through masks, so
    PyTorch's answer is zeros (vkml said the input was unused)."""
    rng = np.random.default_rng(1)
    w1, w2, xs = rng.standard_normal((5, 3)), rng.standard_normal((1, 5)), rng.standard_normal((4, 3))
    u = rng.standard_normal((4, 3))
    out = []
    for lib, F in ((torch, TF), (vkml, VF)):
        x = lib.tensor(xs, requires_grad=True)
        y = F.linear(F.relu(F.linear(x, lib.tensor(w1))), lib.tensor(w2)).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (h,) = lib.autograd.grad((g * lib.tensor(u)).sum(), x)
        out.append(h.numpy())
    np.testing.assert_array_equal(out[1], out[0])


def _wgan_gp_step(lib, F, seed_arrays):
    """One critic step of WGAN-GP (Gulrajani et al.): Wasserstein loss plus the gradient penalty at
    random interpolates, the penalty's gradient reaching the weights through the ReLU masks and the
    max pooling's picks. Returns the loss and the weights' gradients."""
    w1, b1, w2, real, fake, eps = (lib.tensor(a) for a in seed_arrays)
    w1.requires_grad_(True)
    b1.requires_grad_(True)
    w2.requires_grad_(True)

    def critic(x):
        h = F.leaky_relu(F.conv1d(x, w1, b1, padding=1), 0.2)
        h = F.max_pool1d(h, 2)
        return F.linear(F.relu(h.flatten(1)), w2)

    mixed = (eps * real + (1 - eps) * fake).requires_grad_(True)
    (g,) = lib.autograd.grad(critic(mixed).sum(), mixed, create_graph=True)
    penalty = ((g.flatten(1).norm(2, dim=1) - 1) ** 2).mean()
    loss = critic(fake).mean() - critic(real).mean() + 10 * penalty
    loss.backward()
    return [loss.detach().numpy(), w1.grad.numpy(), b1.grad.numpy(), w2.grad.numpy()]


def test_wgan_gp_gradient_penalty_step_matches_torch():
    rng = np.random.default_rng(7)
    arrays = [
        rng.standard_normal((3, 2, 3)),
        rng.standard_normal(3),
        rng.standard_normal((1, 9)),
        rng.standard_normal((4, 2, 6)),
        rng.standard_normal((4, 2, 6)),
        rng.uniform(size=(4, 1, 1)),
    ]
    expected = _wgan_gp_step(torch, TF, arrays)
    for got, e in zip(_wgan_gp_step(vkml, VF, arrays), expected):
        np.testing.assert_allclose(got, e, rtol=1e-10, atol=1e-12)


def test_gradgradcheck_through_masks():
    x = vkml.tensor([[-0.7, 0.4, 1.3]], dtype=vkml.float64, requires_grad=True)
    assert vkml.autograd.gradgradcheck(lambda t: VF.max_pool1d(VF.relu(t) * t, 2) * t[:, :1], (x,))


def test_second_derivative_on_the_gpu_gives_the_cpu_bits(gpu):
    rng = np.random.default_rng(2)
    xs, vs = rng.standard_normal((1, 2, 6, 6)).astype(np.float32), rng.standard_normal((1, 4)).astype(np.float32)
    out = []
    for dev in (CPU, gpu):
        x = vkml.tensor(xs, device=dev, requires_grad=True)
        y = VF.max_pool2d(VF.relu(x) * x, 2).flatten(1).topk(4, dim=1)[0]
        v = vkml.tensor(vs, device=dev, requires_grad=True)
        (g,) = vkml.autograd.grad(y, x, v, create_graph=True)
        (g * g).sum().backward()
        out.append([x.grad.numpy(), v.grad.numpy()])
    for a, b in zip(*out):
        np.testing.assert_array_equal(a, b)
